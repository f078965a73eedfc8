//! What govcat makes of the access tokens real identity providers issue (docs/AUTH.md): for
//! Microsoft Entra ID (v2.0 and v1.0 tokens), Okta (custom authorization server), Keycloak and
//! Amazon Cognito, a token with that issuer's claim layout (claim names, value shapes, `iss`
//! form, the key set's shape) is signed with a test RSA key and handed to
//! `Authenticator::authenticate`; the principal (subject, client id, readable domains, scopes)
//! or the refusal is compared whole.
//!
//! The claim values are made up; the layouts follow each IdP's token reference (Entra: access
//! token claims reference; Okta: custom authorization server access tokens; Keycloak: a realm
//! access token with an audience mapper; Cognito: the user pool access token).

mod common;

use std::collections::BTreeSet;
use std::sync::OnceLock;
use std::time::{Duration, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use common::sign_jwt;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{json, Value};

use govcat::auth::{self, AuthConfig, AuthError, Authenticator, JwksSource, Principal};
use govcat::catalog::{Caller, Domain};

/// The resource URI govcat serves as (`--audience`).
const RESOURCE: &str = "https://catalog.example/mcp";
/// 2026-11-30T00:53:20Z, the fixed "now" of every test.
const NOW: u64 = 1_796_000_000;

fn fixed_clock() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(NOW)
}

// ---------------------------------------------------------------- key, key sets, tokens

struct Key {
    pkcs1: Vec<u8>,
    n: String,
    e: String,
}

/// One RSA 2048 key (every one of these IdPs signs access tokens with RS256), made once.
fn key() -> &'static Key {
    static KEY: OnceLock<Key> = OnceLock::new();
    KEY.get_or_init(|| {
        use rsa::pkcs1::EncodeRsaPrivateKey;
        use rsa::traits::PublicKeyParts;
        let rsa = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA 2048");
        Key {
            pkcs1: rsa.to_pkcs1_der().expect("pkcs1").as_bytes().to_vec(),
            n: B64.encode(rsa.n_bytes()),
            e: B64.encode(rsa.e_bytes()),
        }
    })
}

fn rs256(kid: &str, claims: &Value) -> String {
    sign_jwt(
        Algorithm::RS256,
        kid,
        claims,
        &EncodingKey::from_rsa_der(&key().pkcs1),
    )
}

/// An authenticator for one issuer and audience, its key set `jwks` in a file.
async fn authenticator(
    issuer: &str,
    audience: &str,
    jwks: Value,
) -> (tempfile::TempDir, Authenticator) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("jwks.json");
    std::fs::write(&path, jwks.to_string()).expect("write jwks");
    let mut cfg = AuthConfig::new(
        issuer,
        audience,
        JwksSource::File(path),
        auth::resource_metadata_url(audience),
    );
    cfg.clock = fixed_clock;
    let auth = Authenticator::new(cfg).await.expect("authenticator");
    (dir, auth)
}

async fn authenticate(auth: &Authenticator, token: &str) -> Result<Principal, AuthError> {
    auth.authenticate(Some(&format!("Bearer {token}"))).await
}

fn principal(
    subject: &str,
    client_id: Option<&str>,
    domains: &[&str],
    scopes: &[&str],
) -> Principal {
    Principal {
        caller: Caller {
            subject: subject.to_string(),
            readable: Some(domains.iter().map(|d| Domain(d.to_string())).collect()),
        },
        client_id: client_id.map(String::from),
        scopes: scopes
            .iter()
            .map(|s| s.to_string())
            .collect::<BTreeSet<_>>(),
    }
}

fn invalid(reason: &'static str, description: &str) -> AuthError {
    AuthError::InvalidToken {
        reason,
        description: description.to_string(),
    }
}

// ---------------------------------------------------------------- Microsoft Entra ID

const ENTRA_TENANT: &str = "72f988bf-86f1-41af-91ab-2d7cd011db47";
/// v2.0 tokens: `https://login.microsoftonline.com/{tenant}/v2.0`.
const ENTRA_V2_ISSUER: &str =
    "https://login.microsoftonline.com/72f988bf-86f1-41af-91ab-2d7cd011db47/v2.0";
/// v1.0 tokens: `https://sts.windows.net/{tenant}/` (with the trailing slash).
const ENTRA_V1_ISSUER: &str = "https://sts.windows.net/72f988bf-86f1-41af-91ab-2d7cd011db47/";
/// The application (client) ID of govcat's API registration: the `aud` of every v2.0 token.
const ENTRA_API_CLIENT_ID: &str = "6e74172b-be56-4843-9ff4-e66a39bb12e3";
/// The application (client) ID of the MCP host's registration: `azp` (v2.0), `appid` (v1.0).
const ENTRA_HOST_CLIENT_ID: &str = "d3590ed6-52b3-4102-aeff-aad2292ab01c";
const ENTRA_KID: &str = "nOo3ZDrODXEK1jKWhXslHR_KXEg";

/// Entra's keys (`https://login.microsoftonline.com/{tenant}/discovery/v2.0/keys`) carry no
/// `alg`; govcat takes RS256 from `kty: RSA`. (`x5c` is left out: it would need a certificate.)
fn entra_jwks() -> Value {
    let k = key();
    json!({"keys": [{
        "kty": "RSA", "use": "sig", "kid": ENTRA_KID, "x5t": ENTRA_KID,
        "n": k.n, "e": k.e,
        "issuer": "https://login.microsoftonline.com/{tenantid}/v2.0",
    }]})
}

/// A v2.0 delegated (user) token: `scp` is one space-separated string of the scope values
/// exposed by the API registration, without the App ID URI prefix the client asked with.
fn entra_v2_user_token() -> Value {
    json!({
        "aud": ENTRA_API_CLIENT_ID,
        "iss": ENTRA_V2_ISSUER,
        "iat": NOW - 300,
        "nbf": NOW - 300,
        "exp": NOW + 3600,
        "aio": "AWQAm/8YAAAAx3Hq3Tn5cFqG0lFtm2pWz1qTzU5oJ8g4R4p0h0S9bC1dEa9i0z7tUw==",
        "azp": ENTRA_HOST_CLIENT_ID,
        "azpacr": "0",
        "name": "Alice Moreau",
        "oid": "00000000-0000-0000-66f3-3332eca7ea81",
        "preferred_username": "alice@contoso.example",
        "rh": "0.ARoAv4j5cvGGr0GRqy180BHbR2s...",
        "scp": "catalog:claims:read catalog:policy:read",
        "sub": "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
        "tid": ENTRA_TENANT,
        "uti": "fqiBqXLPj0eQa82S-IYFAA",
        "ver": "2.0",
    })
}

#[tokio::test]
async fn entra_v2_delegated_token_reads_the_domains_of_its_scp() {
    let (_dir, auth) = authenticator(ENTRA_V2_ISSUER, ENTRA_API_CLIENT_ID, entra_jwks()).await;
    let token = rs256(ENTRA_KID, &entra_v2_user_token());
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "AAAAAAAAAAAAAAAAAAAAAIkzqFVrSaSaFHy782bbtaQ",
            Some(ENTRA_HOST_CLIENT_ID),
            &["claims", "policy"],
            &["catalog:claims:read", "catalog:policy:read"],
        ))
    );
}

/// An app-only token (client credentials): no `scp`; application permissions arrive in
/// `roles`, which govcat does not read. It authenticates and reads nothing.
#[tokio::test]
async fn entra_v2_app_only_roles_token_reads_no_domain() {
    let (_dir, auth) = authenticator(ENTRA_V2_ISSUER, ENTRA_API_CLIENT_ID, entra_jwks()).await;
    let claims = json!({
        "aud": ENTRA_API_CLIENT_ID,
        "iss": ENTRA_V2_ISSUER,
        "iat": NOW - 300,
        "nbf": NOW - 300,
        "exp": NOW + 3600,
        "aio": "E2ZgYJj9rW7xsw9Jvv3fBwA=",
        "azp": ENTRA_HOST_CLIENT_ID,
        "azpacr": "1",
        "idtyp": "app",
        "oid": "9b5a8c2e-4f1d-4a7b-8e3c-2d6f0a1b9c47",
        "rh": "0.ARoAv4j5cvGGr0GRqy180BHbR2s...",
        "roles": ["catalog:claims:read", "catalog:policy:read"],
        "sub": "9b5a8c2e-4f1d-4a7b-8e3c-2d6f0a1b9c47",
        "tid": ENTRA_TENANT,
        "uti": "kJ8Qh6vP8kqf3l8w1yJcAA",
        "ver": "2.0",
    });
    let token = rs256(ENTRA_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "9b5a8c2e-4f1d-4a7b-8e3c-2d6f0a1b9c47",
            Some(ENTRA_HOST_CLIENT_ID),
            &[],
            &[],
        ))
    );
}

/// The same delegated token against `--audience https://catalog.example/mcp`: a v2.0 token's
/// `aud` is always the API's client id, so it is refused.
#[tokio::test]
async fn entra_v2_token_is_refused_by_a_uri_audience() {
    let (_dir, auth) = authenticator(ENTRA_V2_ISSUER, RESOURCE, entra_jwks()).await;
    let token = rs256(ENTRA_KID, &entra_v2_user_token());
    assert_eq!(
        authenticate(&auth, &token).await,
        Err(invalid(
            "audience",
            "audience 6e74172b-be56-4843-9ff4-e66a39bb12e3 does not include this resource https://catalog.example/mcp"
        ))
    );
}

/// With `--audience <client id>` the metadata URL govcat derives from it (and names in every
/// challenge) is not a URL, and the RFC 9728 `resource` is the GUID: what docs/AUTH.md warns of.
#[test]
fn entra_v2_guid_audience_gives_no_usable_metadata_url() {
    assert_eq!(
        auth::resource_metadata_url(ENTRA_API_CLIENT_ID),
        "6e74172b-be56-4843-9ff4-e66a39bb12e3/.well-known/oauth-protected-resource"
    );
    assert_eq!(
        auth::protected_resource_metadata(ENTRA_API_CLIENT_ID, &[ENTRA_V2_ISSUER])["resource"],
        json!(ENTRA_API_CLIENT_ID)
    );
}

/// A v1.0 token (the API registration's `accessTokenAcceptedVersion` null or 1), requested with
/// the App ID URI `https://catalog.example/mcp`: `aud` is that URI, the client is in `appid`,
/// which govcat does not read, so the principal has no client id.
#[tokio::test]
async fn entra_v1_token_with_an_app_id_uri_audience_reads_its_scp() {
    let (_dir, auth) = authenticator(ENTRA_V1_ISSUER, RESOURCE, entra_jwks()).await;
    let claims = json!({
        "aud": RESOURCE,
        "iss": ENTRA_V1_ISSUER,
        "iat": NOW - 300,
        "nbf": NOW - 300,
        "exp": NOW + 3600,
        "acr": "1",
        "aio": "AVQAq/8YAAAA...",
        "amr": ["pwd", "mfa"],
        "appid": ENTRA_HOST_CLIENT_ID,
        "appidacr": "0",
        "family_name": "Moreau",
        "given_name": "Alice",
        "ipaddr": "203.0.113.7",
        "name": "Alice Moreau",
        "oid": "00000000-0000-0000-66f3-3332eca7ea81",
        "rh": "0.ARoAv4j5cvGGr0GRqy180BHbR2s...",
        "scp": "catalog:claims:read",
        "sub": "l3_roISQU222bULS9yi2k0XpqpOiMz5H3ZACo1GeXA",
        "tid": ENTRA_TENANT,
        "unique_name": "alice@contoso.example",
        "upn": "alice@contoso.example",
        "uti": "fqiBqXLPj0eQa82S-IYFAA",
        "ver": "1.0",
    });
    let token = rs256(ENTRA_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "l3_roISQU222bULS9yi2k0XpqpOiMz5H3ZACo1GeXA",
            None,
            &["claims"],
            &["catalog:claims:read"],
        ))
    );
}

// ---------------------------------------------------------------- Okta

/// A custom authorization server: `https://{okta domain}/oauth2/{authorization server id}`.
const OKTA_ISSUER: &str = "https://insurer.okta.com/oauth2/aus8x2k1p0WmQmY7e5d7";
const OKTA_KID: &str = "K3hGf8m0l1sW2Xq0YJp6dD9Vb4Hn1cT7rE5uA2iO8wQ";
const OKTA_CLIENT_ID: &str = "0oa8x2m7n4HkTqXbW5d7";

/// `https://{okta domain}/oauth2/{id}/v1/keys`: RS256 keys with `alg`.
fn okta_jwks() -> Value {
    let k = key();
    json!({"keys": [{"kty": "RSA", "alg": "RS256", "kid": OKTA_KID, "use": "sig", "e": k.e, "n": k.n}]})
}

/// `scp` is a JSON array; the client is in `cid` and the user in `uid`, neither read by govcat
/// (it names the client from `client_id` or `azp`), so the principal has no client id.
#[tokio::test]
async fn okta_token_reads_the_domains_of_its_scp_array() {
    let (_dir, auth) = authenticator(OKTA_ISSUER, RESOURCE, okta_jwks()).await;
    let claims = json!({
        "ver": 1,
        "jti": "AT.u5O7dRk2m1PqJ0aY5sVb8tX3nHc9wEz6LfGi4Ko1Qr",
        "iss": OKTA_ISSUER,
        "aud": RESOURCE,
        "iat": NOW - 300,
        "exp": NOW + 3600,
        "cid": OKTA_CLIENT_ID,
        "uid": "00u8x2n3z5QwErTyU5d7",
        "scp": ["openid", "catalog:claims:read", "catalog:fraud:read"],
        "auth_time": NOW - 400,
        "sub": "alice@insurer.example",
    });
    let token = rs256(OKTA_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "alice@insurer.example",
            None,
            &["claims", "fraud"],
            &["catalog:claims:read", "catalog:fraud:read", "openid"],
        ))
    );
}

/// A client-credentials token: `sub` is the client id, no `uid`.
#[tokio::test]
async fn okta_client_credentials_token_is_its_client() {
    let (_dir, auth) = authenticator(OKTA_ISSUER, RESOURCE, okta_jwks()).await;
    let claims = json!({
        "ver": 1,
        "jti": "AT.p2Y9cWq4Lx7Rb1Nd6Ke0Tz3Hs8Gv5Jm2Fa9Uo4Ci7",
        "iss": OKTA_ISSUER,
        "aud": RESOURCE,
        "iat": NOW - 300,
        "exp": NOW + 3600,
        "cid": OKTA_CLIENT_ID,
        "scp": ["catalog:analytics:read"],
        "sub": OKTA_CLIENT_ID,
    });
    let token = rs256(OKTA_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            OKTA_CLIENT_ID,
            None,
            &["analytics"],
            &["catalog:analytics:read"],
        ))
    );
}

// ---------------------------------------------------------------- Keycloak

/// `https://{host}/realms/{realm}` (Keycloak 17 and later; older ones add `/auth`).
const KEYCLOAK_ISSUER: &str = "https://sso.insurer.example/realms/insurer";
const KEYCLOAK_KID: &str = "pQ3xL0cM7e2Zt9vYwB4sR1nJ6uH8kF5dA0gT3iE7oWc";

/// `https://{host}/realms/{realm}/protocol/openid-connect/certs`: the realm's RS256 signing
/// key and its RSA-OAEP encryption key (`use: enc`), which govcat skips.
fn keycloak_jwks() -> Value {
    let k = key();
    json!({"keys": [
        {"kid": KEYCLOAK_KID, "kty": "RSA", "alg": "RS256", "use": "sig", "n": k.n, "e": k.e},
        {"kid": "Yt6mN2bV8cX1zL4kJ7hG0fD3sA9qW5eR2tY8uI1oP6a", "kty": "RSA", "alg": "RSA-OAEP",
         "use": "enc", "n": k.n, "e": k.e},
    ]})
}

/// A realm access token: `scope` is a space-separated string, the client is `azp`; `aud`
/// names the resource only when an audience mapper adds it (here next to `account`, which
/// Keycloak adds for the account console's roles).
fn keycloak_token(aud: Value) -> Value {
    json!({
        "exp": NOW + 300,
        "iat": NOW - 60,
        "auth_time": NOW - 120,
        "jti": "onrtac:4f0c9d3e-7b2a-4e61-9a85-3c1d2e4f5a6b",
        "iss": KEYCLOAK_ISSUER,
        "aud": aud,
        "sub": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
        "typ": "Bearer",
        "azp": "claude-desktop",
        "sid": "8d2e6f1a-3b4c-4d5e-9f6a-7b8c9d0e1f2a",
        "acr": "1",
        "allowed-origins": ["http://localhost:6274"],
        "realm_access": {"roles": ["offline_access", "uma_authorization", "default-roles-insurer"]},
        "resource_access": {"account": {"roles": ["manage-account", "view-profile"]}},
        "scope": "openid profile email catalog:claims:read catalog:policy:read",
        "email_verified": true,
        "name": "Alice Moreau",
        "preferred_username": "alice",
        "given_name": "Alice",
        "family_name": "Moreau",
        "email": "alice@insurer.example",
    })
}

#[tokio::test]
async fn keycloak_token_with_the_audience_mapper_reads_its_scope() {
    let (_dir, auth) = authenticator(KEYCLOAK_ISSUER, RESOURCE, keycloak_jwks()).await;
    let token = rs256(KEYCLOAK_KID, &keycloak_token(json!([RESOURCE, "account"])));
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "f47ac10b-58cc-4372-a567-0e02b2c3d479",
            Some("claude-desktop"),
            &["claims", "policy"],
            &[
                "catalog:claims:read",
                "catalog:policy:read",
                "email",
                "openid",
                "profile"
            ],
        ))
    );
}

#[tokio::test]
async fn keycloak_token_without_the_audience_mapper_is_refused() {
    let (_dir, auth) = authenticator(KEYCLOAK_ISSUER, RESOURCE, keycloak_jwks()).await;
    let token = rs256(KEYCLOAK_KID, &keycloak_token(json!("account")));
    assert_eq!(
        authenticate(&auth, &token).await,
        Err(invalid(
            "audience",
            "audience account does not include this resource https://catalog.example/mcp"
        ))
    );
}

// ---------------------------------------------------------------- Amazon Cognito

/// `https://cognito-idp.{region}.amazonaws.com/{user pool id}`.
const COGNITO_ISSUER: &str = "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Xk3Pq9LmZ";
const COGNITO_KID: &str = "Wm9rQ3lOa2xKb3pQb2lGV2JkR1hqYlN0a0U9";
const COGNITO_CLIENT_ID: &str = "5hq2f1q7b8k3m0c9d6e4a2g1t";

/// `https://cognito-idp.{region}.amazonaws.com/{user pool id}/.well-known/jwks.json`.
fn cognito_jwks() -> Value {
    let k = key();
    json!({"keys": [{"alg": "RS256", "e": k.e, "kid": COGNITO_KID, "kty": "RSA", "n": k.n, "use": "sig"}]})
}

/// A user pool access token: the client is `client_id`, there is no `aud`, and a custom scope
/// is `{resource server identifier}/{scope name}`.
fn cognito_access_token() -> Value {
    json!({
        "sub": "a1b2c3d4-0000-4000-8000-1234567890ab",
        "cognito:groups": ["claims-analysts"],
        "iss": COGNITO_ISSUER,
        "version": 2,
        "client_id": COGNITO_CLIENT_ID,
        "origin_jti": "2f4d6b8a-1c3e-4a5b-9d7f-0e2c4a6b8d0f",
        "event_id": "7c9e1a3b-5d7f-4b2c-8e0a-6f1d3b5c7e9a",
        "token_use": "access",
        "scope": "openid https://govcat.example/catalog:claims:read",
        "auth_time": NOW - 120,
        "exp": NOW + 3600,
        "iat": NOW - 120,
        "jti": "0a1b2c3d-4e5f-4061-8293-a4b5c6d7e8f9",
        "username": "alice",
    })
}

#[tokio::test]
async fn cognito_access_token_has_no_aud_and_is_refused() {
    let (_dir, auth) = authenticator(COGNITO_ISSUER, RESOURCE, cognito_jwks()).await;
    let token = rs256(COGNITO_KID, &cognito_access_token());
    let refusal = authenticate(&auth, &token).await;
    assert_eq!(
        refusal,
        Err(invalid("audience", "the token has no aud claim"))
    );
    assert_eq!(
        refusal.err().map(|e| e.www_authenticate(&auth.config().resource_metadata_url)),
        Some(
            "Bearer error=\"invalid_token\", error_description=\"the token has no aud claim\", resource_metadata=\"https://catalog.example/.well-known/oauth-protected-resource/mcp\"".to_string()
        )
    );
}

/// Were `aud` there (Cognito's resource binding), the token would authenticate, but its
/// prefixed scope is not `catalog:<domain>:read`: it reads no domain.
#[tokio::test]
async fn cognito_prefixed_scope_grants_no_domain_even_with_an_aud() {
    let (_dir, auth) = authenticator(COGNITO_ISSUER, RESOURCE, cognito_jwks()).await;
    let mut claims = cognito_access_token();
    claims["aud"] = json!(RESOURCE);
    let token = rs256(COGNITO_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Ok(principal(
            "a1b2c3d4-0000-4000-8000-1234567890ab",
            Some(COGNITO_CLIENT_ID),
            &[],
            &["https://govcat.example/catalog:claims:read", "openid"],
        ))
    );
}

/// A Cognito ID token is no substitute: its `aud` is the app client id (it is for the client,
/// not for this resource), and it has no scopes.
#[tokio::test]
async fn cognito_id_token_is_refused_for_its_audience() {
    let (_dir, auth) = authenticator(COGNITO_ISSUER, RESOURCE, cognito_jwks()).await;
    let claims = json!({
        "at_hash": "L2kq3v9Xz1Qm8rT0bY6wNg",
        "sub": "a1b2c3d4-0000-4000-8000-1234567890ab",
        "cognito:groups": ["claims-analysts"],
        "email_verified": true,
        "iss": COGNITO_ISSUER,
        "cognito:username": "alice",
        "origin_jti": "2f4d6b8a-1c3e-4a5b-9d7f-0e2c4a6b8d0f",
        "aud": COGNITO_CLIENT_ID,
        "event_id": "7c9e1a3b-5d7f-4b2c-8e0a-6f1d3b5c7e9a",
        "token_use": "id",
        "auth_time": NOW - 120,
        "exp": NOW + 3600,
        "iat": NOW - 120,
        "jti": "9f8e7d6c-5b4a-4392-8170-f6e5d4c3b2a1",
        "email": "alice@insurer.example",
    });
    let token = rs256(COGNITO_KID, &claims);
    assert_eq!(
        authenticate(&auth, &token).await,
        Err(invalid(
            "audience",
            "audience 5hq2f1q7b8k3m0c9d6e4a2g1t does not include this resource https://catalog.example/mcp"
        ))
    );
}
