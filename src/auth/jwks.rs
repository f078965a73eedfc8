//! JSON Web Key Sets: the issuer's public keys, parsed into verifying keys indexed by `kid`, and
//! fetched over HTTP(S) when the set lives at a URL. The algorithm of every key is decided
//! here, from the key itself (RSA → RS256, EC P-256 → ES256), never from a token.
//!
//! Only RS256 and ES256 signing keys with a `kid` are kept; every other key is skipped with a
//! reason, so a refused set says what it held.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use axum::body::Bytes;
use axum::http::{header, Request, StatusCode, Uri};
use base64::Engine;
use http_body_util::{BodyExt, Empty, Limited};
use hyper_rustls::{HttpsConnector, HttpsConnectorBuilder};
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

/// Largest JWKS document accepted (a real one is a few KiB).
pub const MAX_JWKS_BYTES: usize = 1024 * 1024;
/// Smallest RSA modulus accepted, in bytes (2048 bits).
const MIN_RSA_MODULUS_BYTES: usize = 256;

/// Why a key set could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum JwksError {
    #[error("cannot read the JWKS file {path}: {source}; check the path given to --jwks-file")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("the JWKS from {origin} is not JSON ({reason}); point govcat at the issuer's JWKS document (its `jwks_uri`)")]
    NotJson { origin: String, reason: String },
    #[error("the JWKS from {origin} has no `keys` array (top-level keys present: [{}]); point govcat at the issuer's JWKS document (its `jwks_uri`)", present.join(", "))]
    NoKeysArray {
        origin: String,
        present: Vec<String>,
    },
    #[error("the JWKS from {origin} holds two keys with kid {kid}; a kid must name one key: ask the issuer's operators to fix the key set")]
    DuplicateKid { origin: String, kid: String },
    #[error("the JWKS from {origin} holds no RS256 or ES256 signing key with a kid (skipped: {}); govcat verifies only those", skipped.join("; "))]
    NoUsableKeys {
        origin: String,
        skipped: Vec<String>,
    },
    #[error("the JWKS URL {url} cannot be used: {reason}; use an https:// URL (http:// only to a loopback address, for local testing)")]
    BadUrl { url: String, reason: String },
    #[error("fetching the JWKS from {url} failed: {reason}; check that the issuer is reachable from this host")]
    Fetch { url: String, reason: String },
}

/// One public key, with the only algorithm it may verify.
#[derive(Clone)]
pub struct VerifyingKey {
    pub kid: String,
    pub alg: Algorithm,
    pub key: DecodingKey,
}

impl std::fmt::Debug for VerifyingKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VerifyingKey")
            .field("kid", &self.kid)
            .field("alg", &self.alg)
            .finish_non_exhaustive()
    }
}

/// The usable keys of one JWKS document, by `kid`.
#[derive(Debug, Clone)]
pub struct KeySet {
    keys: BTreeMap<String, VerifyingKey>,
    /// Keys that were not loaded, each with the reason (`"kid enc-1: use is enc, not sig"`).
    pub skipped: Vec<String>,
}

impl KeySet {
    /// Parses a JWKS document. `origin` names where it came from, for error messages.
    pub fn parse(text: &str, origin: &str) -> Result<KeySet, JwksError> {
        let doc: Value = serde_json::from_str(text).map_err(|e| JwksError::NotJson {
            origin: origin.to_string(),
            reason: e.to_string(),
        })?;
        let keys = match doc.get("keys").and_then(Value::as_array) {
            Some(keys) => keys,
            None => {
                return Err(JwksError::NoKeysArray {
                    origin: origin.to_string(),
                    present: doc
                        .as_object()
                        .map(|o| o.keys().cloned().collect())
                        .unwrap_or_default(),
                })
            }
        };
        let mut set = KeySet {
            keys: BTreeMap::new(),
            skipped: Vec::new(),
        };
        for (i, jwk) in keys.iter().enumerate() {
            match parse_jwk(jwk) {
                Ok(key) => {
                    if set.keys.contains_key(&key.kid) {
                        return Err(JwksError::DuplicateKid {
                            origin: origin.to_string(),
                            kid: key.kid,
                        });
                    }
                    set.keys.insert(key.kid.clone(), key);
                }
                Err(reason) => {
                    let name = match jwk.get("kid").and_then(Value::as_str) {
                        Some(kid) => format!("kid {kid}"),
                        None => format!("key #{i}"),
                    };
                    set.skipped.push(format!("{name}: {reason}"));
                }
            }
        }
        if set.keys.is_empty() {
            return Err(JwksError::NoUsableKeys {
                origin: origin.to_string(),
                skipped: set.skipped,
            });
        }
        Ok(set)
    }

    /// Reads and parses a JWKS file.
    pub fn from_file(path: &std::path::Path) -> Result<KeySet, JwksError> {
        let text = std::fs::read_to_string(path).map_err(|source| JwksError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        KeySet::parse(&text, &path.display().to_string())
    }

    pub fn get(&self, kid: &str) -> Option<&VerifyingKey> {
        self.keys.get(kid)
    }

    /// The loaded key ids, sorted.
    pub fn kids(&self) -> Vec<&str> {
        self.keys.keys().map(String::as_str).collect()
    }
}

fn field<'a>(jwk: &'a Value, name: &str) -> Result<&'a str, String> {
    jwk.get(name)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("no string member {name}"))
}

fn decoded_len(b64: &str, name: &str) -> Result<usize, String> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(b64)
        .map(|b| b.len())
        .map_err(|e| format!("{name} is not base64url ({e})"))
}

/// One JWK → a verifying key, or the reason it is not one govcat accepts.
fn parse_jwk(jwk: &Value) -> Result<VerifyingKey, String> {
    let kid = field(jwk, "kid")?.to_string();
    if let Some(usage) = jwk.get("use") {
        if usage.as_str() != Some("sig") {
            return Err(format!("use is {usage}, not \"sig\""));
        }
    }
    let declared = jwk
        .get("alg")
        .map(|a| a.as_str().unwrap_or("(not a string)"));
    let (alg, key) = match field(jwk, "kty")? {
        "RSA" => {
            let (n, e) = (field(jwk, "n")?, field(jwk, "e")?);
            let bits = decoded_len(n, "n")?;
            if bits < MIN_RSA_MODULUS_BYTES {
                return Err(format!("RSA modulus is {} bits, fewer than 2048", bits * 8));
            }
            if decoded_len(e, "e")? == 0 {
                return Err("RSA exponent is empty".into());
            }
            let key = DecodingKey::from_rsa_components(n, e)
                .map_err(|e| format!("RSA key rejected ({e})"))?;
            (Algorithm::RS256, key)
        }
        "EC" => {
            let crv = field(jwk, "crv")?;
            if crv != "P-256" {
                return Err(format!("curve {crv} is not P-256"));
            }
            let (x, y) = (field(jwk, "x")?, field(jwk, "y")?);
            if decoded_len(x, "x")? != 32 || decoded_len(y, "y")? != 32 {
                return Err("P-256 coordinates must be 32 bytes each".into());
            }
            let key = DecodingKey::from_ec_components(x, y)
                .map_err(|e| format!("EC key rejected ({e})"))?;
            (Algorithm::ES256, key)
        }
        other => return Err(format!("key type {other} is not RSA or EC")),
    };
    if let Some(declared) = declared {
        let expected = if alg == Algorithm::RS256 {
            "RS256"
        } else {
            "ES256"
        };
        if declared != expected {
            return Err(format!(
                "alg {declared} is not accepted (this key could only verify {expected})"
            ));
        }
    }
    Ok(VerifyingKey { kid, alg, key })
}

enum HttpClient {
    Plain(Client<HttpConnector, Empty<Bytes>>),
    Tls(Client<HttpsConnector<HttpConnector>, Empty<Bytes>>),
}

/// Fetches a JWKS document from one URL: HTTP/1.1, a timeout, a size limit, status 200 only.
pub struct Fetcher {
    url: String,
    uri: Uri,
    timeout: Duration,
    client: HttpClient,
}

impl Fetcher {
    /// Checks the URL: `https://`, or `http://` to a loopback host (a JWKS over plain HTTP
    /// from elsewhere could be swapped in transit, and with it every key).
    pub fn new(url: &str, timeout: Duration) -> Result<Fetcher, JwksError> {
        let bad = |reason: &str| JwksError::BadUrl {
            url: url.to_string(),
            reason: reason.to_string(),
        };
        let uri: Uri = url.parse().map_err(|_| bad("it is not a valid URL"))?;
        let host = uri.host().ok_or_else(|| bad("it names no host"))?;
        let client = match uri.scheme_str() {
            Some("https") => {
                let provider = rustls::crypto::aws_lc_rs::default_provider();
                let connector = HttpsConnectorBuilder::new()
                    .with_provider_and_native_roots(provider)
                    .map_err(|e| bad(&format!("no TLS root certificates could be loaded ({e})")))?
                    .https_only()
                    .enable_http1()
                    .build();
                HttpClient::Tls(Client::builder(TokioExecutor::new()).build(connector))
            }
            Some("http") => {
                let loopback = matches!(host, "localhost" | "[::1]" | "::1")
                    || host
                        .parse::<std::net::Ipv4Addr>()
                        .is_ok_and(|ip| ip.is_loopback());
                if !loopback {
                    return Err(bad("plain http:// is accepted only for a loopback host"));
                }
                HttpClient::Plain(Client::builder(TokioExecutor::new()).build_http())
            }
            _ => return Err(bad("the scheme is neither https nor http")),
        };
        Ok(Fetcher {
            url: url.to_string(),
            uri,
            timeout,
            client,
        })
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// GETs and parses the key set.
    pub async fn fetch(&self) -> Result<KeySet, JwksError> {
        let text = tokio::time::timeout(self.timeout, self.get())
            .await
            .map_err(|_| self.fail(format!("no answer within {} s", self.timeout.as_secs())))??;
        KeySet::parse(&text, &self.url)
    }

    fn fail(&self, reason: String) -> JwksError {
        JwksError::Fetch {
            url: self.url.clone(),
            reason,
        }
    }

    async fn get(&self) -> Result<String, JwksError> {
        let request = Request::get(self.uri.clone())
            .header(header::ACCEPT, "application/json")
            .header(
                header::USER_AGENT,
                concat!("govcat/", env!("CARGO_PKG_VERSION")),
            )
            .body(Empty::<Bytes>::new())
            .map_err(|e| self.fail(format!("the request could not be built ({e})")))?;
        let response = match &self.client {
            HttpClient::Plain(c) => c.request(request).await,
            HttpClient::Tls(c) => c.request(request).await,
        }
        .map_err(|e| self.fail(format!("{e}")))?;
        let status = response.status();
        if status != StatusCode::OK {
            return Err(self.fail(format!("the server answered HTTP {status}, not 200")));
        }
        let body = Limited::new(response.into_body(), MAX_JWKS_BYTES)
            .collect()
            .await
            .map_err(|e| {
                self.fail(format!(
                    "reading the body failed or exceeded {MAX_JWKS_BYTES} bytes ({e})"
                ))
            })?
            .to_bytes();
        String::from_utf8(body.to_vec()).map_err(|_| self.fail("the body is not UTF-8".into()))
    }
}
