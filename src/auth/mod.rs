//! Bearer-token authorisation for the HTTP transports: a JWT is turned into a [`Principal`]
//! (the [`Caller`] the tools see, plus client id and scopes), or refused with an RFC 6750
//! challenge that points at this server's RFC 9728 protected-resource metadata.
//!
//! It verifies the signature with a key picked by `kid` from the issuer's JWKS, using the
//! algorithm of that key (RS256 or ES256), never one the token asks for; then `iss` exactly,
//! `exp`/`nbf` with a small leeway, and that `aud` names this server's resource URI (RFC 8707).
//! A token is never logged, stored or forwarded: after the middleware accepts it, the
//! `Authorization` header is removed from the request.

pub mod jwks;
mod middleware;

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use arc_swap::ArcSwap;
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use jsonwebtoken::Algorithm;
use serde_json::{json, Map, Value};

pub use jwks::{JwksError, KeySet};
pub use middleware::{admit, authorization_header, is_public_path, layer};

use crate::catalog::{Caller, Domain};
use crate::timestamp::format_rfc3339;
use crate::tools::ToolError;

/// Default clock-skew allowance for `exp` and `nbf`.
pub const DEFAULT_LEEWAY_SECS: u64 = 30;
/// An unknown `kid` refetches a URL JWKS at most this often (key rotation, not a DoS lever).
pub const DEFAULT_JWKS_REFETCH_MIN_INTERVAL: Duration = Duration::from_secs(60);
/// A URL JWKS older than this is refetched on the next request.
pub const DEFAULT_JWKS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// How long one JWKS fetch may take.
pub const DEFAULT_JWKS_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest bearer token looked at; real access tokens are a few KiB.
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;
/// The algorithms a key may have. Every other `alg` in a token header is refused.
pub const ACCEPTED_ALGORITHMS: &str = "RS256 or ES256";

/// Where the issuer's public keys come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JwksSource {
    /// Read once at start.
    File(PathBuf),
    /// Fetched at start, refetched when stale or on an unknown `kid` (rate-limited).
    Url(String),
}

/// Token validation settings, parsed once from the command line.
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// The trusted issuer; `iss` must equal it exactly.
    pub issuer: String,
    /// This server's resource URI; `aud` must contain it (RFC 8707).
    pub audience: String,
    pub jwks: JwksSource,
    pub leeway_secs: u64,
    /// The URL of this server's RFC 9728 metadata, named in every challenge.
    pub resource_metadata_url: String,
    pub jwks_refetch_min_interval: Duration,
    pub jwks_max_age: Duration,
    pub jwks_timeout: Duration,
    /// The clock `exp`/`nbf` are checked against (fixed in tests).
    pub clock: fn() -> SystemTime,
}

impl AuthConfig {
    /// A configuration with the default leeway, JWKS cadence and the system clock.
    pub fn new(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks: JwksSource,
        resource_metadata_url: impl Into<String>,
    ) -> AuthConfig {
        AuthConfig {
            issuer: issuer.into(),
            audience: audience.into(),
            jwks,
            leeway_secs: DEFAULT_LEEWAY_SECS,
            resource_metadata_url: resource_metadata_url.into(),
            jwks_refetch_min_interval: DEFAULT_JWKS_REFETCH_MIN_INTERVAL,
            jwks_max_age: DEFAULT_JWKS_MAX_AGE,
            jwks_timeout: DEFAULT_JWKS_TIMEOUT,
            clock: SystemTime::now,
        }
    }

    /// This server's RFC 9728 metadata (see [`protected_resource_metadata`]).
    pub fn metadata(&self) -> Value {
        protected_resource_metadata(&self.audience, &[self.issuer.as_str()])
    }
}

/// Why the authoriser could not be built.
#[derive(Debug, thiserror::Error)]
pub enum AuthConfigError {
    #[error("the {what} is empty; pass --{flag} with the {meaning}")]
    Missing {
        what: &'static str,
        flag: &'static str,
        meaning: &'static str,
    },
    #[error(transparent)]
    Jwks(#[from] JwksError),
}

/// An authenticated caller: who (`caller.subject`), what they may read (`caller.readable`,
/// from the `catalog:<domain>:read` scopes), through which client, with which scopes.
#[derive(Debug, Clone, PartialEq)]
pub struct Principal {
    pub caller: Caller,
    /// `client_id` (RFC 9068), else `azp`.
    pub client_id: Option<String>,
    /// Every scope the token carries, catalog or not.
    pub scopes: BTreeSet<String>,
}

/// A refused request. The challenge it produces never contains the token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AuthError {
    /// No bearer credentials at all (or another scheme): 401 without an error code.
    MissingToken,
    /// A bearer token that does not pass validation: 401 `invalid_token`.
    InvalidToken {
        reason: &'static str,
        description: String,
    },
    /// A valid caller asking for what its scopes do not cover: 403 `insufficient_scope`.
    InsufficientScope { required: Vec<String> },
}

impl AuthError {
    fn invalid(reason: &'static str, description: impl Into<String>) -> AuthError {
        AuthError::InvalidToken {
            reason,
            description: description.into(),
        }
    }

    /// A bounded word for why a request was refused, for `govcat_auth_failures_total{reason}`
    /// and the audit line: `missing_token`, `insufficient_scope`, or the token's fault
    /// (`malformed`, `too_large`, `algorithm`, `unknown_kid`, `bad_signature`, `issuer`,
    /// `audience`, `expired`, `not_yet_valid`, `claims`).
    pub fn reason(&self) -> &'static str {
        match self {
            AuthError::MissingToken => "missing_token",
            AuthError::InvalidToken { reason, .. } => reason,
            AuthError::InsufficientScope { .. } => "insufficient_scope",
        }
    }

    /// What the challenge tells the client (its `error_description`), for the audit line.
    pub fn description(&self) -> String {
        match self {
            AuthError::MissingToken => "no bearer token was sent".into(),
            AuthError::InvalidToken { description, .. } => description.clone(),
            AuthError::InsufficientScope { required } => {
                format!("the token lacks the scope {}", required.join(" "))
            }
        }
    }

    /// `error` in JSON bodies and audit lines.
    pub fn kind(&self) -> &'static str {
        match self {
            AuthError::MissingToken => "MissingToken",
            AuthError::InvalidToken { .. } => "InvalidToken",
            AuthError::InsufficientScope { .. } => "InsufficientScope",
        }
    }

    pub fn status(&self) -> StatusCode {
        match self {
            AuthError::MissingToken | AuthError::InvalidToken { .. } => StatusCode::UNAUTHORIZED,
            AuthError::InsufficientScope { .. } => StatusCode::FORBIDDEN,
        }
    }

    /// The `WWW-Authenticate` value (RFC 6750 §3, RFC 9728 §5.1).
    pub fn www_authenticate(&self, resource_metadata_url: &str) -> String {
        let rm = quotable(resource_metadata_url);
        match self {
            AuthError::MissingToken => format!("Bearer resource_metadata=\"{rm}\""),
            AuthError::InvalidToken { description, .. } => format!(
                "Bearer error=\"invalid_token\", error_description=\"{}\", resource_metadata=\"{rm}\"",
                quotable(description)
            ),
            AuthError::InsufficientScope { required } => format!(
                "Bearer error=\"insufficient_scope\", scope=\"{}\", resource_metadata=\"{rm}\"",
                quotable(&required.join(" "))
            ),
        }
    }

    /// The JSON body sent with the challenge: `{"error", "message", "resource_metadata", ...}`.
    pub fn to_json(&self, resource_metadata_url: &str) -> Value {
        let mut body = match self {
            AuthError::MissingToken => json!({
                "error": self.kind(),
                "message": format!("this endpoint needs a bearer token (Authorization: Bearer <token>); the protected-resource metadata at {resource_metadata_url} names the authorization server to get one from"),
            }),
            AuthError::InvalidToken { description, .. } => json!({
                "error": self.kind(),
                "message": format!("the bearer token was refused: {description}; get a new access token for this resource from the authorization server named at {resource_metadata_url}"),
            }),
            AuthError::InsufficientScope { required } => {
                ToolError::insufficient_scope(required.clone()).to_json()
            }
        };
        if let Some(map) = body.as_object_mut() {
            map.insert(
                "resource_metadata".into(),
                Value::String(resource_metadata_url.to_string()),
            );
        }
        body
    }

    /// Status, `WWW-Authenticate` and JSON body, ready to send.
    pub fn to_response(&self, resource_metadata_url: &str) -> Response {
        self.respond(self.to_json(resource_metadata_url), resource_metadata_url)
    }

    /// Status and `WWW-Authenticate` with `body`.
    fn respond(&self, body: Value, resource_metadata_url: &str) -> Response {
        let mut response = (self.status(), axum::Json(body)).into_response();
        if let Ok(value) = HeaderValue::from_str(&self.www_authenticate(resource_metadata_url)) {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, value);
        }
        response
    }

    /// The 403 challenge for a tool's `InsufficientScope` error. `None` when the error is not
    /// a scope refusal, or names no scope: a 403 with an empty scope list would tell the
    /// caller nothing, so that is left to the server as an internal error.
    pub fn from_tool_error(error: &ToolError) -> Option<AuthError> {
        if error.kind != "InsufficientScope" {
            return None;
        }
        let scopes = error.details.get("required_scopes")?.as_array()?;
        let mut required: Vec<String> = Vec::new();
        for scope in scopes {
            let scope = scope.as_str()?.to_string();
            if !required.contains(&scope) {
                required.push(scope);
            }
        }
        if required.is_empty() {
            None
        } else {
            Some(AuthError::InsufficientScope { required })
        }
    }
}

impl std::fmt::Display for AuthError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            AuthError::MissingToken => f.write_str("no bearer token"),
            AuthError::InvalidToken { description, .. } => {
                write!(f, "invalid token: {description}")
            }
            AuthError::InsufficientScope { required } => {
                write!(f, "insufficient scope: needs {}", required.join(" "))
            }
        }
    }
}

impl std::error::Error for AuthError {}

/// The 403 response for a tool's `InsufficientScope` error (see [`AuthError::from_tool_error`]).
pub fn scope_challenge(error: &ToolError, resource_metadata_url: &str) -> Option<Response> {
    let challenge = AuthError::from_tool_error(error)?;
    // The tool's own message: its way out depends on the request (leave `domains` out of a
    // search; list the readable domains otherwise).
    let mut body = error.to_json();
    if let Some(map) = body.as_object_mut() {
        map.insert(
            "resource_metadata".into(),
            Value::String(resource_metadata_url.to_string()),
        );
    }
    Some(challenge.respond(body, resource_metadata_url))
}

/// Makes text safe inside an RFC 7230 quoted-string (and RFC 6750's narrower
/// `error_description` set): `"` and `\` become `'`, anything outside printable ASCII
/// becomes `?`, at most 300 characters. Token claims can hold anything, headers cannot.
fn quotable(text: &str) -> String {
    text.chars()
        .take(300)
        .map(|c| match c {
            '"' | '\\' => '\'',
            ' '..='~' => c,
            _ => '?',
        })
        .collect()
}

/// The form of every scope govcat checks, as the protected-resource metadata names it.
pub const SCOPE_PATTERN: &str = "catalog:{domain}:read";

/// RFC 9728 protected-resource metadata: `resource`, `authorization_servers`,
/// `bearer_methods_supported: ["header"]` (tokens in query strings or bodies are not read) and
/// `scope_pattern` ([`SCOPE_PATTERN`]). `scopes_supported` is left out (RFC 9728 makes it
/// optional): one scope per domain would hand every unauthenticated caller the list of the
/// company's domains. A client learns the exact scope it needs from the 403
/// `insufficient_scope` challenge and steps up.
pub fn protected_resource_metadata(resource: &str, authorization_servers: &[&str]) -> Value {
    json!({
        "resource": resource,
        "authorization_servers": authorization_servers,
        "bearer_methods_supported": ["header"],
        "scope_pattern": SCOPE_PATTERN,
    })
}

/// Where RFC 9728 §3.1 puts the metadata of a resource: the well-known segment goes between
/// the host and the path, `https://h/mcp` → `https://h/.well-known/oauth-protected-resource/mcp`.
pub fn resource_metadata_url(resource: &str) -> String {
    const SEGMENT: &str = "/.well-known/oauth-protected-resource";
    let after_scheme = resource.find("://").map(|i| i + 3).unwrap_or(0);
    match resource[after_scheme..].find('/') {
        Some(i) => {
            let (origin, path) = resource.split_at(after_scheme + i);
            let path = path.trim_end_matches('/');
            format!("{origin}{SEGMENT}{path}")
        }
        None => format!("{resource}{SEGMENT}"),
    }
}

/// The domains a set of scopes lets a caller read: `catalog:<domain>:read` only.
pub fn readable_domains<'a>(scopes: impl IntoIterator<Item = &'a String>) -> BTreeSet<Domain> {
    scopes
        .into_iter()
        .filter_map(|s| {
            let domain = s.strip_prefix("catalog:")?.strip_suffix(":read")?;
            let valid = !domain.is_empty()
                && domain
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
            valid.then(|| Domain(domain.to_string()))
        })
        .collect()
}

/// The principal of a local transport (stdio, `--auth none`), where no token exists: the
/// scopes come from the environment (`GOVCAT_SCOPES`, space-separated). `None` means the
/// local operator, who may read every domain.
pub fn local_principal(subject: &str, scope: Option<&str>) -> Principal {
    match scope {
        None => Principal {
            caller: Caller {
                subject: subject.to_string(),
                readable: None,
            },
            client_id: None,
            scopes: BTreeSet::new(),
        },
        Some(scope) => {
            let scopes: BTreeSet<String> = scope.split_whitespace().map(String::from).collect();
            Principal {
                caller: Caller {
                    subject: subject.to_string(),
                    readable: Some(readable_domains(&scopes)),
                },
                client_id: None,
                scopes,
            }
        }
    }
}

/// Validates bearer tokens against one issuer, one audience and the issuer's key set.
pub struct Authenticator {
    config: AuthConfig,
    keys: ArcSwap<Loaded>,
    fetcher: Option<jwks::Fetcher>,
    /// When the last JWKS fetch was attempted; held while fetching, so one request fetches.
    refresh: tokio::sync::Mutex<Instant>,
    fetches: AtomicU64,
}

struct Loaded {
    keys: KeySet,
    fetched_at: Instant,
}

impl Authenticator {
    /// Loads the key set (reads the file, or fetches the URL once); fails when no usable key
    /// is found, so a misconfigured server does not start.
    pub async fn new(config: AuthConfig) -> Result<Authenticator, AuthConfigError> {
        for (value, what, flag, meaning) in [
            (
                &config.issuer,
                "issuer",
                "issuer",
                "authorization server's issuer identifier",
            ),
            (
                &config.audience,
                "audience",
                "audience",
                "resource URI of this server",
            ),
            (
                &config.resource_metadata_url,
                "resource metadata URL",
                "audience",
                "resource URI of this server (the metadata URL is derived from it)",
            ),
        ] {
            if value.trim().is_empty() {
                return Err(AuthConfigError::Missing {
                    what,
                    flag,
                    meaning,
                });
            }
        }
        let (keys, fetcher) = match &config.jwks {
            JwksSource::File(path) => (KeySet::from_file(path)?, None),
            JwksSource::Url(url) => {
                let fetcher = jwks::Fetcher::new(url, config.jwks_timeout)?;
                (fetcher.fetch().await?, Some(fetcher))
            }
        };
        let fetches = u64::from(fetcher.is_some());
        let now = Instant::now();
        Ok(Authenticator {
            config,
            keys: ArcSwap::from_pointee(Loaded {
                keys,
                fetched_at: now,
            }),
            fetcher,
            refresh: tokio::sync::Mutex::new(now),
            fetches: AtomicU64::new(fetches),
        })
    }

    pub fn config(&self) -> &AuthConfig {
        &self.config
    }

    /// How many times the JWKS URL has been fetched (0 for a file).
    pub fn jwks_fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The key ids currently loaded.
    pub fn kids(&self) -> Vec<String> {
        self.keys
            .load()
            .keys
            .kids()
            .into_iter()
            .map(String::from)
            .collect()
    }

    /// The challenge response for a refusal, naming this server's metadata URL.
    pub fn challenge(&self, error: &AuthError) -> Response {
        error.to_response(&self.config.resource_metadata_url)
    }

    /// Turns the `Authorization` header value into a principal, or refuses it.
    pub async fn authenticate(
        &self,
        authorization_header: Option<&str>,
    ) -> Result<Principal, AuthError> {
        let token = bearer_token(authorization_header)?;
        let (signed, signature) = match token.rsplit_once('.') {
            Some(parts) => parts,
            None => return Err(malformed()),
        };
        let (header_b64, payload_b64) = signed.split_once('.').ok_or_else(malformed)?;
        if payload_b64.contains('.') {
            return Err(malformed());
        }
        let header = decode_json_segment(header_b64, "header")?;
        let alg = match header.get("alg").and_then(Value::as_str) {
            Some("RS256") => Algorithm::RS256,
            Some("ES256") => Algorithm::ES256,
            Some(other) => {
                return Err(AuthError::invalid("algorithm", format!(
                    "algorithm {other} is not accepted; tokens must be signed with {ACCEPTED_ALGORITHMS}"
                )))
            }
            None => return Err(AuthError::invalid("malformed", "the token header has no alg")),
        };
        if header.get("crit").is_some() {
            return Err(AuthError::invalid(
                "malformed",
                "the token header has a crit parameter, which this server does not support",
            ));
        }
        let kid = header.get("kid").and_then(Value::as_str).ok_or_else(|| {
            AuthError::invalid(
                "malformed",
                "the token header has no kid; keys are selected by kid",
            )
        })?;
        let key = self.key_for(kid).await.ok_or_else(|| {
            AuthError::invalid(
                "unknown_kid",
                format!("no key with kid {kid} in the issuer's key set"),
            )
        })?;
        if key.alg != alg {
            return Err(AuthError::invalid(
                "algorithm",
                format!(
                    "the token says {} but key {kid} is an {} key",
                    alg_name(alg),
                    alg_name(key.alg)
                ),
            ));
        }
        let verified =
            jsonwebtoken::crypto::verify(signature, signed.as_bytes(), &key.key, key.alg)
                .unwrap_or(false);
        if !verified {
            return Err(AuthError::invalid(
                "bad_signature",
                format!("the signature does not verify with key {kid}"),
            ));
        }
        let claims = decode_json_segment(payload_b64, "payload")?;
        self.check_claims(&claims)
    }

    fn check_claims(&self, claims: &Map<String, Value>) -> Result<Principal, AuthError> {
        let cfg = &self.config;
        match claims.get("iss").and_then(Value::as_str) {
            Some(iss) if iss == cfg.issuer => {}
            Some(iss) => {
                return Err(AuthError::invalid(
                    "issuer",
                    format!("issuer {iss} is not the trusted issuer {}", cfg.issuer),
                ))
            }
            None => return Err(AuthError::invalid("issuer", "the token has no iss claim")),
        }
        let audiences: Vec<&str> = match claims.get("aud") {
            Some(Value::String(a)) => vec![a.as_str()],
            Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
            Some(_) => {
                return Err(AuthError::invalid(
                    "audience",
                    "the aud claim is neither a string nor an array of strings",
                ))
            }
            None => return Err(AuthError::invalid("audience", "the token has no aud claim")),
        };
        if !audiences.contains(&cfg.audience.as_str()) {
            return Err(AuthError::invalid(
                "audience",
                format!(
                    "audience {} does not include this resource {}",
                    audiences.join(" "),
                    cfg.audience
                ),
            ));
        }
        let now = (cfg.clock)()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map(|d| d.as_secs_f64())
            .unwrap_or(0.0);
        let leeway = cfg.leeway_secs as f64;
        let exp = numeric_date(claims, "exp")?
            .ok_or_else(|| AuthError::invalid("claims", "the token has no exp claim"))?;
        if now > exp + leeway {
            return Err(AuthError::invalid(
                "expired",
                format!(
                    "the token expired at {} (now {}, leeway {} s)",
                    rfc3339(exp),
                    rfc3339(now),
                    cfg.leeway_secs
                ),
            ));
        }
        if let Some(nbf) = numeric_date(claims, "nbf")? {
            if now + leeway < nbf {
                return Err(AuthError::invalid(
                    "not_yet_valid",
                    format!(
                        "the token is not valid before {} (now {}, leeway {} s)",
                        rfc3339(nbf),
                        rfc3339(now),
                        cfg.leeway_secs
                    ),
                ));
            }
        }
        let subject = match claims.get("sub").and_then(Value::as_str) {
            Some(sub) if !sub.is_empty() => sub.to_string(),
            _ => return Err(AuthError::invalid("claims", "the token has no sub claim")),
        };
        let scopes = scopes_of(claims)?;
        let client_id = ["client_id", "azp"]
            .iter()
            .find_map(|k| claims.get(*k).and_then(Value::as_str))
            .map(String::from);
        Ok(Principal {
            caller: Caller {
                subject,
                readable: Some(readable_domains(&scopes)),
            },
            client_id,
            scopes,
        })
    }

    /// The key for `kid`. A URL key set is refetched first when it is stale or does not
    /// know the kid (rotation), at most once per `jwks_refetch_min_interval`.
    async fn key_for(&self, kid: &str) -> Option<jwks::VerifyingKey> {
        let fetcher = match &self.fetcher {
            Some(fetcher) => fetcher,
            None => return self.keys.load().keys.get(kid).cloned(),
        };
        let needs_refresh = |loaded: &Loaded| {
            loaded.keys.get(kid).is_none()
                || loaded.fetched_at.elapsed() >= self.config.jwks_max_age
        };
        if !needs_refresh(&self.keys.load()) {
            return self.keys.load().keys.get(kid).cloned();
        }
        let mut last_attempt = self.refresh.lock().await;
        // Another request may have refreshed the set while this one waited for the lock.
        if needs_refresh(&self.keys.load())
            && last_attempt.elapsed() >= self.config.jwks_refetch_min_interval
        {
            *last_attempt = Instant::now();
            self.fetches.fetch_add(1, Ordering::Relaxed);
            match fetcher.fetch().await {
                Ok(keys) => self.keys.store(Arc::new(Loaded {
                    keys,
                    fetched_at: Instant::now(),
                })),
                // The previous keys keep serving; the next attempt comes after the interval.
                Err(e) => tracing::warn!(error = %e, "JWKS refresh failed"),
            }
        }
        drop(last_attempt);
        self.keys.load().keys.get(kid).cloned()
    }
}

fn malformed() -> AuthError {
    AuthError::invalid(
        "malformed",
        "the token is not a JWS compact serialization (three base64url segments)",
    )
}

fn alg_name(alg: Algorithm) -> &'static str {
    match alg {
        Algorithm::RS256 => "RS256",
        Algorithm::ES256 => "ES256",
        _ => "unsupported",
    }
}

/// The token in `Authorization: Bearer <token>`. Another scheme counts as no token
/// (RFC 6750 §3.1: no error code when no bearer credentials were sent).
fn bearer_token(authorization_header: Option<&str>) -> Result<&str, AuthError> {
    let value = authorization_header.ok_or(AuthError::MissingToken)?.trim();
    let (scheme, rest) = value.split_once(' ').unwrap_or((value, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::MissingToken);
    }
    let token = rest.trim();
    if token.is_empty() {
        return Err(AuthError::invalid(
            "malformed",
            "the Bearer credentials are empty",
        ));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Err(AuthError::invalid(
            "too_large",
            format!("the token is longer than {MAX_TOKEN_BYTES} bytes"),
        ));
    }
    Ok(token)
}

fn decode_json_segment(segment: &str, name: &str) -> Result<Map<String, Value>, AuthError> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(segment)
        .map_err(|_| {
            AuthError::invalid("malformed", format!("the token {name} is not base64url"))
        })?;
    match serde_json::from_slice::<Value>(&bytes) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(AuthError::invalid(
            "malformed",
            format!("the token {name} is not a JSON object"),
        )),
    }
}

fn numeric_date(claims: &Map<String, Value>, name: &str) -> Result<Option<f64>, AuthError> {
    match claims.get(name) {
        None => Ok(None),
        Some(v) => v.as_f64().map(Some).ok_or_else(|| {
            AuthError::invalid(
                "claims",
                format!("the {name} claim is not a number of seconds"),
            )
        }),
    }
}

fn rfc3339(secs: f64) -> String {
    let secs = if secs.is_finite() && secs > 0.0 {
        secs as u64
    } else {
        0
    };
    format_rfc3339(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Scopes from `scope` (space-separated string) and `scp` (string or array), united: both
/// were signed by the issuer.
fn scopes_of(claims: &Map<String, Value>) -> Result<BTreeSet<String>, AuthError> {
    let mut scopes = BTreeSet::new();
    match claims.get("scope") {
        None => {}
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(String::from)),
        Some(_) => {
            return Err(AuthError::invalid(
                "claims",
                "the scope claim is not a space-separated string",
            ))
        }
    }
    match claims.get("scp") {
        None => {}
        Some(Value::String(s)) => scopes.extend(s.split_whitespace().map(String::from)),
        Some(Value::Array(list)) => {
            for item in list {
                let s = item.as_str().ok_or_else(|| {
                    AuthError::invalid("claims", "the scp claim holds something other than strings")
                })?;
                scopes.extend(s.split_whitespace().map(String::from));
            }
        }
        Some(_) => {
            return Err(AuthError::invalid(
                "claims",
                "the scp claim is neither a string nor an array of strings",
            ))
        }
    }
    Ok(scopes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scopes(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn only_catalog_read_scopes_grant_domains() {
        let got = readable_domains(&scopes(&[
            "openid",
            "catalog:claims:read",
            "catalog:fraud:write",
            "catalog::read",
            "catalog:a b:read",
            "catalog:policy_v2:read",
        ]));
        let want: BTreeSet<Domain> = [Domain("claims".into()), Domain("policy_v2".into())]
            .into_iter()
            .collect();
        assert_eq!(got, want);
    }

    fn object(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn local_scopes_narrow_and_no_scopes_mean_the_operator() {
        let p = local_principal("ci", Some("catalog:fraud:read  openid"));
        assert_eq!(
            p.caller.readable,
            Some([Domain("fraud".into())].into_iter().collect())
        );
        assert_eq!(p.scopes, scopes(&["catalog:fraud:read", "openid"]));
        let p = local_principal("ci", Some(""));
        assert_eq!(p.caller.readable, Some(BTreeSet::new()));
        assert_eq!(local_principal("me", None).caller.readable, None);
    }

    #[test]
    fn scope_and_scp_are_united() {
        let claims = object(json!({"scope": "a b", "scp": ["c", "d e"]}));
        assert_eq!(scopes_of(&claims), Ok(scopes(&["a", "b", "c", "d", "e"])));
        let claims = object(json!({"scp": "x y"}));
        assert_eq!(scopes_of(&claims), Ok(scopes(&["x", "y"])));
        let claims = object(json!({"scope": ["x"]}));
        assert_eq!(
            scopes_of(&claims),
            Err(AuthError::invalid(
                "claims",
                "the scope claim is not a space-separated string"
            ))
        );
    }

    #[test]
    fn bearer_scheme_is_case_insensitive_and_other_schemes_are_no_token() {
        assert_eq!(bearer_token(Some("bearer abc")), Ok("abc"));
        assert_eq!(bearer_token(Some("Bearer   abc ")), Ok("abc"));
        assert_eq!(
            bearer_token(Some("Basic dXNlcjpwdw==")),
            Err(AuthError::MissingToken)
        );
        assert_eq!(bearer_token(None), Err(AuthError::MissingToken));
        assert_eq!(
            bearer_token(Some("Bearer")),
            Err(AuthError::invalid(
                "malformed",
                "the Bearer credentials are empty"
            ))
        );
    }

    #[test]
    fn challenge_text_cannot_break_out_of_its_quotes() {
        let e = AuthError::invalid("malformed", "issuer \"x\"\r\nSet-Cookie: a\\b é");
        assert_eq!(
            e.www_authenticate("https://h/.well-known/oauth-protected-resource"),
            "Bearer error=\"invalid_token\", error_description=\"issuer 'x'??Set-Cookie: a'b ?\", resource_metadata=\"https://h/.well-known/oauth-protected-resource\""
        );
    }

    #[test]
    fn metadata_url_puts_the_well_known_segment_before_the_path() {
        assert_eq!(
            resource_metadata_url("https://govcat.example/mcp"),
            "https://govcat.example/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(
            resource_metadata_url("https://govcat.example/"),
            "https://govcat.example/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            resource_metadata_url("http://127.0.0.1:8080"),
            "http://127.0.0.1:8080/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn metadata_names_the_scope_pattern_and_no_domain() {
        assert_eq!(
            protected_resource_metadata("https://g/mcp", &["https://idp"]),
            json!({
                "resource": "https://g/mcp",
                "authorization_servers": ["https://idp"],
                "bearer_methods_supported": ["header"],
                "scope_pattern": "catalog:{domain}:read",
            })
        );
    }

    #[test]
    fn a_tool_scope_refusal_becomes_one_403_naming_every_scope() {
        let err = ToolError::insufficient_scope(vec![
            "catalog:claims:read".into(),
            "catalog:policy:read".into(),
            "catalog:claims:read".into(),
        ]);
        let auth = AuthError::from_tool_error(&err);
        assert_eq!(
            auth,
            Some(AuthError::InsufficientScope {
                required: vec!["catalog:claims:read".into(), "catalog:policy:read".into()]
            })
        );
        let auth = auth.unwrap_or(AuthError::MissingToken);
        assert_eq!(auth.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            auth.www_authenticate("https://g/rm"),
            "Bearer error=\"insufficient_scope\", scope=\"catalog:claims:read catalog:policy:read\", resource_metadata=\"https://g/rm\""
        );
        assert_eq!(
            AuthError::from_tool_error(&ToolError::insufficient_scope(vec![])),
            None
        );
        assert_eq!(
            AuthError::from_tool_error(&ToolError::new("DatasetNotFound", "x")),
            None
        );
    }
}
