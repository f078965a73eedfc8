//! The token attack matrix, driven over real loopback HTTP through `auth::layer`: each forged,
//! misdirected or stale token gets its exact status and `WWW-Authenticate` challenge, and only
//! valid tokens reach the handler. Keys (RSA 2048, P-256) are generated here; the JWKS is a
//! file in a tempdir, or served over loopback HTTP for the rotation tests.

mod common;

use std::collections::BTreeSet;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use axum::extract::{Query, State};
use axum::http::{header, HeaderMap};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::{Extension, Json, Router};
use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use common::{patched, sign_jwt};
use jsonwebtoken::{Algorithm, EncodingKey};
use rsa::Generate;
use serde_json::{json, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use govcat::auth::{
    self, AuthConfig, AuthConfigError, AuthError, Authenticator, JwksError, JwksSource, Principal,
};
use govcat::catalog::{Caller, Domain};
use govcat::tools::ToolError;

const ISSUER: &str = "https://idp.example.test";
const AUDIENCE: &str = "https://govcat.example.test/mcp";
const RM_URL: &str = "https://govcat.example.test/.well-known/oauth-protected-resource/mcp";
/// 2026-11-30T00:53:20Z, the fixed "now" of every test.
const NOW: u64 = 1_796_000_000;

fn fixed_clock() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
}

// ---------------------------------------------------------------- keys and tokens

struct Keys {
    rsa_pkcs1: Vec<u8>,
    rsa_spki: Vec<u8>,
    rsa_n: String,
    rsa_e: String,
    ec_pkcs8: Vec<u8>,
    ec_x: String,
    ec_y: String,
    /// A second P-256 key, never published: signs forgeries.
    other_ec_pkcs8: Vec<u8>,
}

fn p256_key() -> (Vec<u8>, String, String) {
    use p256::pkcs8::EncodePrivateKey;
    let secret = p256::SecretKey::generate();
    let pkcs8 = secret.to_pkcs8_der().expect("pkcs8").as_bytes().to_vec();
    let point = secret.public_key().to_sec1_bytes();
    assert_eq!(point.len(), 65, "uncompressed P-256 point");
    (pkcs8, B64.encode(&point[1..33]), B64.encode(&point[33..65]))
}

/// RSA 2048 generation takes a moment, so the keys are made once per test binary.
fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::pkcs8::EncodePublicKey;
        use rsa::traits::PublicKeyParts;
        let rsa = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA 2048");
        let (ec_pkcs8, ec_x, ec_y) = p256_key();
        let (other_ec_pkcs8, _, _) = p256_key();
        Keys {
            rsa_pkcs1: rsa.to_pkcs1_der().expect("pkcs1").as_bytes().to_vec(),
            rsa_spki: rsa
                .to_public_key()
                .to_public_key_der()
                .expect("spki")
                .as_bytes()
                .to_vec(),
            rsa_n: B64.encode(rsa.n_bytes()),
            rsa_e: B64.encode(rsa.e_bytes()),
            ec_pkcs8,
            ec_x,
            ec_y,
            other_ec_pkcs8,
        }
    })
}

fn rsa_jwk(kid: &str) -> Value {
    let k = keys();
    json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": k.rsa_n, "e": k.rsa_e})
}

fn ec_jwk(kid: &str) -> Value {
    let k = keys();
    json!({"kty": "EC", "kid": kid, "use": "sig", "crv": "P-256", "x": k.ec_x, "y": k.ec_y})
}

/// The published key set: `rsa-1` (RS256) and `ec-1` (ES256).
fn jwks() -> Value {
    json!({"keys": [rsa_jwk("rsa-1"), ec_jwk("ec-1")]})
}

/// Valid claims for `alice`, patched: a `null` in `patch` removes the claim.
fn claims(patch: Value) -> Value {
    let c = json!({
        "iss": ISSUER,
        "aud": AUDIENCE,
        "sub": "alice",
        "iat": NOW - 60,
        "exp": NOW + 600,
        "scope": "catalog:fraud:read openid",
        "client_id": "ide-plugin",
    });
    patched(c, &patch)
}

fn rs256(kid: &str, claims: &Value) -> String {
    sign_jwt(
        Algorithm::RS256,
        kid,
        claims,
        &EncodingKey::from_rsa_der(&keys().rsa_pkcs1),
    )
}

fn es256(kid: &str, claims: &Value) -> String {
    sign_jwt(
        Algorithm::ES256,
        kid,
        claims,
        &EncodingKey::from_ec_der(&keys().ec_pkcs8),
    )
}

/// A compact JWS with any header and an arbitrary signature segment.
fn raw_token(header: &Value, claims: &Value, signature: &str) -> String {
    format!(
        "{}.{}.{signature}",
        B64.encode(header.to_string()),
        B64.encode(claims.to_string())
    )
}

fn bearer(token: &str) -> String {
    format!("Bearer {token}")
}

fn invalid(description: &str) -> String {
    format!(
        "Bearer error=\"invalid_token\", error_description=\"{description}\", resource_metadata=\"{RM_URL}\""
    )
}

fn missing() -> String {
    format!("Bearer resource_metadata=\"{RM_URL}\"")
}

// ---------------------------------------------------------------- server and client

fn config(jwks: JwksSource) -> AuthConfig {
    let mut cfg = AuthConfig::new(ISSUER, AUDIENCE, jwks, RM_URL);
    cfg.clock = fixed_clock;
    cfg
}

struct Fixture {
    _dir: tempfile::TempDir,
    addr: SocketAddr,
}

async fn file_authenticator() -> (tempfile::TempDir, Arc<Authenticator>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks().to_string()).expect("write jwks");
    let auth = Authenticator::new(config(JwksSource::File(path)))
        .await
        .expect("authenticator");
    (dir, Arc::new(auth))
}

/// What the protected handler saw: proof that a request got through, and as whom.
async fn probe(
    Extension(principal): Extension<Principal>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Json<Value> {
    let readable: Vec<String> = caller
        .readable
        .iter()
        .flatten()
        .map(|d| d.0.clone())
        .collect();
    Json(json!({
        "subject": caller.subject,
        "readable": readable,
        "client_id": principal.client_id,
        "scopes": principal.scopes,
        "same_caller": principal.caller == caller,
        "authorization_header_seen": headers.contains_key(header::AUTHORIZATION),
    }))
}

/// Stands in for a tool that reads the named domains: refuses, through the tool layer's
/// own error, every domain the caller's scopes do not cover.
async fn read_domains(
    Extension(caller): Extension<Caller>,
    Query(q): Query<std::collections::HashMap<String, String>>,
) -> Response {
    let wanted = q.get("domains").cloned().unwrap_or_default();
    let missing: Vec<String> = wanted
        .split(',')
        .map(|d| Domain(d.to_string()))
        .filter(|d| !caller.may_read(d))
        .map(|d| Caller::scope_for(&d))
        .collect();
    if missing.is_empty() {
        return Json(json!({"read": wanted})).into_response();
    }
    let refusal = ToolError::insufficient_search_scope(missing);
    match auth::scope_challenge(&refusal, RM_URL) {
        Some(challenge) => challenge,
        None => Json(refusal.to_json()).into_response(),
    }
}

async fn serve(auth: Arc<Authenticator>) -> SocketAddr {
    let metadata = auth.config().metadata();
    let app = Router::new()
        .route("/probe", get(probe))
        .route("/read", get(read_domains))
        .route("/healthz", get(|| async { "ok" }))
        .route(
            "/.well-known/oauth-protected-resource/mcp",
            get(move || async move { Json(metadata) }),
        )
        .layer(axum::middleware::from_fn_with_state(auth, auth::layer));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("local addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    addr
}

async fn fixture() -> Fixture {
    let (dir, auth) = file_authenticator().await;
    let addr = serve(auth).await;
    Fixture { _dir: dir, addr }
}

#[derive(Debug)]
struct Reply {
    status: u16,
    www_authenticate: Option<String>,
    body: Value,
}

/// One HTTP/1.1 GET written by hand on a fresh connection.
async fn get_raw(addr: SocketAddr, path: &str, authorization: Option<&str>) -> Reply {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let auth_line = authorization
        .map(|a| format!("Authorization: {a}\r\n"))
        .unwrap_or_default();
    let request =
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n{auth_line}Connection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).await.expect("read");
    let text = String::from_utf8(raw).expect("utf-8 response");
    let (head, body) = text.split_once("\r\n\r\n").expect("head and body");
    let mut lines = head.lines();
    let status: u16 = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|s| s.parse().ok())
        .expect("status line");
    let mut www_authenticate = None;
    for line in lines {
        let (name, value) = line.split_once(':').expect("header line");
        assert!(
            !name.eq_ignore_ascii_case("transfer-encoding"),
            "this client reads only length-delimited bodies"
        );
        if name.eq_ignore_ascii_case("www-authenticate") {
            assert!(www_authenticate.is_none(), "one challenge header");
            www_authenticate = Some(value.trim().to_string());
        }
    }
    let body = serde_json::from_str(body).unwrap_or(Value::String(body.to_string()));
    Reply {
        status,
        www_authenticate,
        body,
    }
}

// ---------------------------------------------------------------- the matrix

struct Case {
    name: &'static str,
    authorization: Option<String>,
    status: u16,
    challenge: Option<String>,
    /// The subject the handler sees (only for accepted tokens).
    subject: Option<&'static str>,
}

fn refused(name: &'static str, authorization: Option<String>, challenge: String) -> Case {
    Case {
        name,
        authorization,
        status: 401,
        challenge: Some(challenge),
        subject: None,
    }
}

fn accepted(name: &'static str, token: String) -> Case {
    Case {
        name,
        authorization: Some(bearer(&token)),
        status: 200,
        challenge: None,
        subject: Some("alice"),
    }
}

fn matrix() -> Vec<Case> {
    let k = keys();
    let valid = rs256("rsa-1", &claims(json!({})));
    let tampered = {
        let parts: Vec<&str> = valid.split('.').collect();
        let widened = claims(json!({"scope": "catalog:fraud:read catalog:claims:read"}));
        format!(
            "{}.{}.{}",
            parts[0],
            B64.encode(widened.to_string()),
            parts[2]
        )
    };
    let hs256_with_rsa_public_key = sign_jwt(
        Algorithm::HS256,
        "rsa-1",
        &claims(json!({})),
        &EncodingKey::from_secret(&k.rsa_spki).expect("hmac key"),
    );
    let es256_header_on_rsa_kid = sign_jwt(
        Algorithm::ES256,
        "rsa-1",
        &claims(json!({})),
        &EncodingKey::from_ec_der(&k.ec_pkcs8),
    );
    let forged_with_unpublished_key = sign_jwt(
        Algorithm::ES256,
        "ec-1",
        &claims(json!({})),
        &EncodingKey::from_ec_der(&k.other_ec_pkcs8),
    );
    vec![
        refused("missing Authorization header", None, missing()),
        refused(
            "another scheme (Basic)",
            Some("Basic YWxpY2U6cHc=".into()),
            missing(),
        ),
        refused(
            "malformed (not a JWS)",
            Some(bearer("not-a-jwt")),
            invalid("the token is not a JWS compact serialization (three base64url segments)"),
        ),
        refused(
            "alg none, empty signature",
            Some(bearer(&raw_token(
                &json!({"alg": "none", "typ": "JWT"}),
                &claims(json!({})),
                "",
            ))),
            invalid("algorithm none is not accepted; tokens must be signed with RS256 or ES256"),
        ),
        refused(
            "HS256 signed with the RSA public key as HMAC secret",
            Some(bearer(&hs256_with_rsa_public_key)),
            invalid("algorithm HS256 is not accepted; tokens must be signed with RS256 or ES256"),
        ),
        refused(
            "ES256 header naming the RSA key's kid",
            Some(bearer(&es256_header_on_rsa_kid)),
            invalid("the token says ES256 but key rsa-1 is an RS256 key"),
        ),
        refused(
            "wrong aud",
            Some(bearer(&rs256(
                "rsa-1",
                &claims(json!({"aud": "https://evil.example.test/"})),
            ))),
            invalid("audience https://evil.example.test/ does not include this resource https://govcat.example.test/mcp"),
        ),
        refused(
            "token for another resource (same issuer)",
            Some(bearer(&rs256(
                "rsa-1",
                &claims(json!({"aud": ["https://govcat.example.test/other", "https://billing.example.test/api"]})),
            ))),
            invalid("audience https://govcat.example.test/other https://billing.example.test/api does not include this resource https://govcat.example.test/mcp"),
        ),
        refused(
            "no aud",
            Some(bearer(&rs256("rsa-1", &claims(json!({"aud": null}))))),
            invalid("the token has no aud claim"),
        ),
        refused(
            "wrong iss",
            Some(bearer(&rs256(
                "rsa-1",
                &claims(json!({"iss": "https://evil-idp.example.test"})),
            ))),
            invalid("issuer https://evil-idp.example.test is not the trusted issuer https://idp.example.test"),
        ),
        refused(
            "expired (1 h ago)",
            Some(bearer(&rs256("rsa-1", &claims(json!({"exp": NOW - 3600}))))),
            invalid("the token expired at 2026-11-29T23:53:20Z (now 2026-11-30T00:53:20Z, leeway 30 s)"),
        ),
        refused(
            "no exp",
            Some(bearer(&rs256("rsa-1", &claims(json!({"exp": null}))))),
            invalid("the token has no exp claim"),
        ),
        refused(
            "nbf 1 h in the future",
            Some(bearer(&rs256("rsa-1", &claims(json!({"nbf": NOW + 3600}))))),
            invalid("the token is not valid before 2026-11-30T01:53:20Z (now 2026-11-30T00:53:20Z, leeway 30 s)"),
        ),
        refused(
            "tampered payload (scope widened)",
            Some(bearer(&tampered)),
            invalid("the signature does not verify with key rsa-1"),
        ),
        refused(
            "ES256 signed by an unpublished key under a published kid",
            Some(bearer(&forged_with_unpublished_key)),
            invalid("the signature does not verify with key ec-1"),
        ),
        refused(
            "unknown kid",
            Some(bearer(&rs256("rsa-rotated", &claims(json!({}))))),
            invalid("no key with kid rsa-rotated in the issuer's key set"),
        ),
        accepted("valid RS256", valid),
        accepted("valid ES256", es256("ec-1", &claims(json!({})))),
        accepted(
            "valid, aud array containing this resource",
            rs256(
                "rsa-1",
                &claims(json!({"aud": ["https://billing.example.test/api", AUDIENCE]})),
            ),
        ),
        accepted(
            "expired 10 s ago (inside the 30 s leeway)",
            rs256("rsa-1", &claims(json!({"exp": NOW - 10}))),
        ),
    ]
}

#[tokio::test]
async fn token_attack_matrix_over_loopback_http() {
    let fx = fixture().await;
    let mut table = vec![format!("{:<58} | {:>6} | challenge", "case", "status")];
    let mut failures = Vec::new();
    for case in matrix() {
        let reply = get_raw(fx.addr, "/probe", case.authorization.as_deref()).await;
        let seen = reply.body.get("subject").and_then(Value::as_str);
        table.push(format!(
            "{:<58} | {:>6} | {}",
            case.name,
            reply.status,
            reply.www_authenticate.as_deref().unwrap_or("-")
        ));
        // What the caller got back; for accepted tokens also that the handler saw no token.
        let got = (
            reply.status,
            reply.www_authenticate.clone(),
            seen.map(String::from),
            reply.body.get("error").cloned(),
            reply.body.get("authorization_header_seen").cloned(),
            reply.body.get("same_caller").cloned(),
        );
        let want_kind = match &case.challenge {
            None => None,
            Some(c) if c.contains("error=\"invalid_token\"") => Some(json!("InvalidToken")),
            Some(_) => Some(json!("MissingToken")),
        };
        let want = (
            case.status,
            case.challenge.clone(),
            case.subject.map(String::from),
            want_kind,
            case.subject.map(|_| json!(false)),
            case.subject.map(|_| json!(true)),
        );
        if got != want {
            failures.push(format!("{}:\n  got  {got:?}\n  want {want:?}", case.name));
        }
    }
    println!("{}", table.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn refusal_body_names_the_problem_and_the_next_step() {
    let fx = fixture().await;
    let token = rs256(
        "rsa-1",
        &claims(json!({"iss": "https://evil-idp.example.test"})),
    );
    let reply = get_raw(fx.addr, "/probe", Some(&bearer(&token))).await;
    assert_eq!(
        reply.body,
        json!({
            "error": "InvalidToken",
            "message": format!("the bearer token was refused: issuer https://evil-idp.example.test is not the trusted issuer https://idp.example.test; get a new access token for this resource from the authorization server named at {RM_URL}"),
            "resource_metadata": RM_URL,
        })
    );
    let reply = get_raw(fx.addr, "/probe", None).await;
    assert_eq!(
        reply.body,
        json!({
            "error": "MissingToken",
            "message": format!("this endpoint needs a bearer token (Authorization: Bearer <token>); the protected-resource metadata at {RM_URL} names the authorization server to get one from"),
            "resource_metadata": RM_URL,
        })
    );
}

#[tokio::test]
async fn probes_and_metadata_need_no_token_and_the_metadata_is_rfc_9728() {
    let fx = fixture().await;
    let health = get_raw(fx.addr, "/healthz", None).await;
    assert_eq!((health.status, health.body), (200, json!("ok")));
    let meta = get_raw(fx.addr, "/.well-known/oauth-protected-resource/mcp", None).await;
    assert_eq!(meta.status, 200);
    assert_eq!(
        meta.body,
        json!({
            "resource": AUDIENCE,
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "scope_pattern": "catalog:{domain}:read",
        })
    );
    assert_eq!(
        auth::resource_metadata_url(AUDIENCE),
        RM_URL,
        "the metadata URL derived from the resource is the one the challenges name"
    );
}

#[tokio::test]
async fn two_authorization_headers_are_refused_not_guessed() {
    let fx = fixture().await;
    let valid = rs256("rsa-1", &claims(json!({})));
    let mut stream = tokio::net::TcpStream::connect(fx.addr)
        .await
        .expect("connect");
    let request = format!(
        "GET /probe HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {valid}\r\nAuthorization: Bearer {valid}\r\nConnection: close\r\n\r\n"
    );
    stream.write_all(request.as_bytes()).await.expect("write");
    let mut raw = String::new();
    stream.read_to_string(&mut raw).await.expect("read");
    assert!(raw.starts_with("HTTP/1.1 401 "), "{raw}");
    let expected = format!(
        "www-authenticate: {}",
        invalid("the request has more than one Authorization header")
    );
    assert!(
        raw.lines().any(|l| l == expected),
        "no line {expected:?} in {raw}"
    );
}

// ---------------------------------------------------------------- scopes

#[tokio::test]
async fn scope_string_and_scp_array_both_yield_the_domain_set() {
    let fx = fixture().await;
    let from_scope = rs256(
        "rsa-1",
        &claims(json!({"scope": "openid catalog:fraud:read catalog:claims:write"})),
    );
    let reply = get_raw(fx.addr, "/probe", Some(&bearer(&from_scope))).await;
    assert_eq!(reply.body["readable"], json!(["fraud"]));
    assert_eq!(reply.body["client_id"], json!("ide-plugin"));
    assert_eq!(
        reply.body["scopes"],
        json!(["catalog:claims:write", "catalog:fraud:read", "openid"])
    );

    let from_scp = es256(
        "ec-1",
        &claims(json!({
            "scope": null, "client_id": null, "azp": "desktop-app",
            "scp": ["catalog:claims:read", "catalog:fraud:read", "profile"],
        })),
    );
    let reply = get_raw(fx.addr, "/probe", Some(&bearer(&from_scp))).await;
    assert_eq!(reply.body["readable"], json!(["claims", "fraud"]));
    assert_eq!(reply.body["client_id"], json!("desktop-app"));

    let no_scopes = rs256("rsa-1", &claims(json!({"scope": null})));
    let reply = get_raw(fx.addr, "/probe", Some(&bearer(&no_scopes))).await;
    assert_eq!(reply.status, 200);
    assert_eq!(
        reply.body["readable"],
        json!([]),
        "a token without catalog scopes reads nothing, never everything"
    );
}

#[tokio::test]
async fn out_of_scope_domains_get_one_403_naming_every_missing_scope() {
    let fx = fixture().await;
    let fraud_only = bearer(&rs256("rsa-1", &claims(json!({}))));

    let ok = get_raw(fx.addr, "/read?domains=fraud", Some(&fraud_only)).await;
    assert_eq!((ok.status, ok.body), (200, json!({"read": "fraud"})));

    let refused = get_raw(
        fx.addr,
        "/read?domains=claims,fraud,policy",
        Some(&fraud_only),
    )
    .await;
    assert_eq!(refused.status, 403);
    assert_eq!(
        refused.www_authenticate.as_deref(),
        Some(format!("Bearer error=\"insufficient_scope\", scope=\"catalog:claims:read catalog:policy:read\", resource_metadata=\"{RM_URL}\"").as_str())
    );
    assert_eq!(
        refused.body,
        json!({
            "error": "InsufficientScope",
            "message": "this request needs the scope(s) catalog:claims:read catalog:policy:read (a domain outside your scopes may not exist at all: without its scope neither is told); ask your administrator for them, or leave `domains` out to search every domain you may read",
            "required_scopes": ["catalog:claims:read", "catalog:policy:read"],
            "resource_metadata": RM_URL,
        })
    );
}

// ---------------------------------------------------------------- key sets

fn jwks_file(doc: &Value) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, doc.to_string()).expect("write");
    (dir, path)
}

#[tokio::test]
async fn a_key_set_without_usable_keys_is_refused_at_start_with_reasons() {
    let mut hs_declared_rsa = rsa_jwk("rsa-hs");
    hs_declared_rsa["alg"] = json!("HS256");
    let doc = json!({"keys": [
        {"kty": "oct", "kid": "hmac-1", "k": "c2VjcmV0"},
        hs_declared_rsa,
        {"kty": "EC", "kid": "p384", "crv": "P-384", "x": "AA", "y": "AA"},
        {"kty": "RSA", "kid": "enc-1", "use": "enc", "n": keys().rsa_n, "e": keys().rsa_e},
        {"kty": "RSA", "n": keys().rsa_n, "e": keys().rsa_e},
    ]});
    let (_dir, path) = jwks_file(&doc);
    let err = match Authenticator::new(config(JwksSource::File(path.clone()))).await {
        Err(e) => e,
        Ok(_) => panic!("a key set without RS256/ES256 keys was accepted"),
    };
    assert_eq!(
        err.to_string(),
        format!(
            "the JWKS from {} holds no RS256 or ES256 signing key with a kid (skipped: kid hmac-1: key type oct is not RSA or EC; kid rsa-hs: alg HS256 is not accepted (this key could only verify RS256); kid p384: curve P-384 is not P-256; kid enc-1: use is \"enc\", not \"sig\"; key #4: no string member kid); govcat verifies only those",
            path.display()
        )
    );
}

#[tokio::test]
async fn a_jwks_url_over_plain_http_to_another_host_is_refused() {
    let err = Authenticator::new(config(JwksSource::Url(
        "http://idp.example.test/jwks".into(),
    )))
    .await;
    match err {
        Err(AuthConfigError::Jwks(JwksError::BadUrl { url, reason })) => {
            assert_eq!(url, "http://idp.example.test/jwks");
            assert_eq!(reason, "plain http:// is accepted only for a loopback host");
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("plain http to a remote host was accepted"),
    }
}

/// A JWKS endpoint on loopback whose document can be swapped, counting its requests.
struct JwksServer {
    url: String,
    doc: Arc<Mutex<Value>>,
    hits: Arc<AtomicU64>,
}

async fn jwks_server(initial: Value) -> JwksServer {
    #[derive(Clone)]
    struct S {
        doc: Arc<Mutex<Value>>,
        hits: Arc<AtomicU64>,
    }
    async fn handler(State(s): State<S>) -> Json<Value> {
        s.hits.fetch_add(1, Ordering::SeqCst);
        let doc = s.doc.lock().map(|d| d.clone()).unwrap_or(Value::Null);
        Json(doc)
    }
    let state = S {
        doc: Arc::new(Mutex::new(initial)),
        hits: Arc::new(AtomicU64::new(0)),
    };
    let app = Router::new()
        .route("/jwks", get(handler))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    tokio::spawn(async move { axum::serve(listener, app).await });
    JwksServer {
        url: format!("http://{addr}/jwks"),
        doc: state.doc,
        hits: state.hits,
    }
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_unknown_kids_do_not_hammer_the_issuer() {
    let server = jwks_server(jwks()).await;
    let mut cfg = config(JwksSource::Url(server.url.clone()));
    cfg.jwks_refetch_min_interval = Duration::ZERO;
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);
    assert_eq!(auth.kids(), vec!["ec-1", "rsa-1"]);

    // Known kid: served from the cache.
    let p = auth
        .authenticate(Some(&bearer(&rs256("rsa-1", &claims(json!({}))))))
        .await
        .expect("valid");
    assert_eq!(p.caller.subject, "alice");
    assert_eq!(server.hits.load(Ordering::SeqCst), 1);

    // The issuer rotates to rsa-2: the first token with the new kid triggers one refetch.
    if let Ok(mut doc) = server.doc.lock() {
        *doc = json!({"keys": [rsa_jwk("rsa-2"), ec_jwk("ec-1")]});
    }
    let p = auth
        .authenticate(Some(&bearer(&rs256("rsa-2", &claims(json!({}))))))
        .await
        .expect("rotated key accepted");
    assert_eq!(p.caller.subject, "alice");
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
    assert_eq!(auth.kids(), vec!["ec-1", "rsa-2"]);

    // The retired kid is now unknown: refused after one more (allowed) refetch.
    let err = auth
        .authenticate(Some(&bearer(&rs256("rsa-1", &claims(json!({}))))))
        .await;
    assert_eq!(
        err,
        Err(AuthError::InvalidToken {
            reason: "unknown_kid",
            description: "no key with kid rsa-1 in the issuer's key set".into()
        })
    );
    assert_eq!(
        (server.hits.load(Ordering::SeqCst), auth.jwks_fetches()),
        (3, 3)
    );
}

#[tokio::test]
async fn unknown_kids_within_the_refetch_interval_are_refused_without_a_fetch() {
    let server = jwks_server(jwks()).await;
    let mut cfg = config(JwksSource::Url(server.url.clone()));
    cfg.jwks_refetch_min_interval = Duration::from_secs(3600);
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    if let Ok(mut doc) = server.doc.lock() {
        *doc = json!({"keys": [rsa_jwk("rsa-2")]});
    }
    for kid in ["rsa-2", "ghost-1", "ghost-2"] {
        let err = auth
            .authenticate(Some(&bearer(&rs256(kid, &claims(json!({}))))))
            .await;
        assert_eq!(
            err,
            Err(AuthError::InvalidToken {
                reason: "unknown_kid",
                description: format!("no key with kid {kid} in the issuer's key set")
            })
        );
    }
    assert_eq!(
        server.hits.load(Ordering::SeqCst),
        1,
        "only the start-up fetch"
    );
}

#[tokio::test]
async fn a_failed_refetch_keeps_the_previous_keys() {
    let server = jwks_server(jwks()).await;
    let mut cfg = config(JwksSource::Url(server.url.clone()));
    cfg.jwks_refetch_min_interval = Duration::ZERO;
    cfg.jwks_max_age = Duration::ZERO; // every request refreshes
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    if let Ok(mut doc) = server.doc.lock() {
        *doc = json!({"not_keys": []});
    }
    let p = auth
        .authenticate(Some(&bearer(&es256("ec-1", &claims(json!({}))))))
        .await
        .expect("old keys still serve");
    assert_eq!(
        p.caller.readable,
        Some(BTreeSet::from([Domain("fraud".into())]))
    );
    assert_eq!(server.hits.load(Ordering::SeqCst), 2);
    assert_eq!(auth.kids(), vec!["ec-1", "rsa-1"]);
}
