//! The axum middleware in front of every route but health, metrics and `/.well-known/*`:
//! it authenticates the request, hands the [`Principal`] and its [`Caller`] to the handler
//! through request extensions and drops the `Authorization` header, or answers the challenge.

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{header, HeaderMap};
use axum::middleware::Next;
use axum::response::Response;

use super::{AuthError, Authenticator, Principal};
use crate::catalog::Caller;

/// Paths answered without a token: probes, metrics and the discovery documents a client
/// needs before it has one.
pub fn is_public_path(path: &str) -> bool {
    matches!(path, "/healthz" | "/readyz" | "/metrics") || path.starts_with("/.well-known/")
}

/// The one `Authorization` header value. Two of them, or one that is not visible ASCII,
/// is an invalid token rather than a guess at which one was meant.
pub fn authorization_header(headers: &HeaderMap) -> Result<Option<&str>, AuthError> {
    let mut values = headers.get_all(header::AUTHORIZATION).iter();
    let first = match values.next() {
        None => return Ok(None),
        Some(v) => v,
    };
    if values.next().is_some() {
        return Err(AuthError::InvalidToken {
            reason: "malformed",
            description: "the request has more than one Authorization header".into(),
        });
    }
    first
        .to_str()
        .map(Some)
        .map_err(|_| AuthError::InvalidToken {
            reason: "malformed",
            description: "the Authorization header is not visible ASCII".into(),
        })
}

/// Authenticates one request: on success the request carries `Extension<Principal>` and
/// `Extension<Caller>` and no longer carries the `Authorization` header; on failure it is left
/// as it was and the refusal says which challenge to answer with.
pub async fn admit(auth: &Authenticator, request: &mut Request) -> Result<(), AuthError> {
    let principal = match authorization_header(request.headers()) {
        Ok(value) => auth.authenticate(value).await?,
        Err(e) => return Err(e),
    };
    request.headers_mut().remove(header::AUTHORIZATION);
    let caller: Caller = principal.caller.clone();
    request.extensions_mut().insert(caller);
    request.extensions_mut().insert::<Principal>(principal);
    Ok(())
}

/// `axum::middleware::from_fn_with_state(authenticator, auth::layer)`.
///
/// On success the request carries `Extension<Principal>` and `Extension<Caller>`; on failure
/// the response is the challenge (401/403, `WWW-Authenticate`, JSON body). The server uses
/// [`admit`] directly, to audit refusals.
pub async fn layer(
    State(auth): State<Arc<Authenticator>>,
    mut request: Request,
    next: Next,
) -> Response {
    if is_public_path(request.uri().path()) {
        return next.run(request).await;
    }
    match admit(&auth, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(e) => {
            tracing::debug!(path = request.uri().path(), refusal = %e, "request refused");
            auth.challenge(&e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_probes_metrics_and_well_known_are_public() {
        for path in [
            "/healthz",
            "/readyz",
            "/metrics",
            "/.well-known/oauth-protected-resource",
            "/.well-known/oauth-protected-resource/mcp",
        ] {
            assert!(is_public_path(path), "{path}");
        }
        for path in [
            "/mcp",
            "/",
            "/healthz/x",
            "/metricsx",
            "/.well-known",
            "/api/tools",
        ] {
            assert!(!is_public_path(path), "{path}");
        }
    }
}
