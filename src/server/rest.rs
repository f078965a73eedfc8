//! The HTTP surface around MCP: the REST mirror of the tools, health, readiness and metrics,
//! and the axum app that nests rmcp's Streamable HTTP service at `/mcp`.
//!
//! REST contract (one definition per tool, the same schemas and envelopes as MCP):
//! - `GET /v1/tools` → `{"tools": [{name, title, description, inputSchema, outputSchema}],
//!   "ttlMs", "cacheScope": "public"}`.
//! - `POST /v1/tools/{name}`, body = the arguments object (empty body = `{}`):
//!   - `200` with the tool's structured output;
//!   - `422` with `{"input_required": {"message", "missing": [{key, description, allowed}]}}`
//!     when the tool asks for missing arguments — not 200, because an ask is not an answer
//!     (FIDELITY rule 9), and not 400, because the arguments given were valid;
//!   - an error object `{"error": kind, "message", ...}` with the status of [`status_for`]; a
//!     scope refusal is a 403 with the `insufficient_scope` challenge naming every scope needed;
//!     an argument over its bound (`LimitExceeded`, see [`crate::limits`]) is a 422, a body over
//!     [`MAX_BODY_BYTES`] a 413, and a request over `--max-concurrent-requests` a 429 with
//!     `Retry-After` ([`guard::limit_in_flight`]).
//! - `GET /.well-known/oauth-protected-resource` (and `.../mcp`): RFC 9728 metadata under
//!   `--auth jwt`, 404 under `--auth none`.
//!
//! Every route checks `Host` and `Origin` against the server's [`HostPolicy`](super::HostPolicy).
//! Under `--auth jwt`, `/mcp` and `/v1/*` need a bearer token ([`guard::authorise`]); every
//! tool call is audited, and one that cannot be audited is answered 503.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::extract::{MatchedPath, Path, Request, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::{call_tool, gauges, guard, mcp, readiness, AppState};
use crate::audit::{AuditOutcome, Call, Transport};
use crate::limits::MAX_BODY_BYTES;
use crate::tools::{self, Outcome, ToolError};

/// `ttlMs` of the tool list: the list is fixed for the lifetime of the process.
pub const TOOL_LIST_TTL_MS: u64 = 300_000;
/// The error kind of a request body over [`MAX_BODY_BYTES`] (HTTP 413).
pub const REQUEST_TOO_LARGE: &str = "RequestTooLarge";
/// The error kind of a request refused because too many are in flight (HTTP 429).
pub const TOO_MANY_REQUESTS: &str = "TooManyRequests";

/// The HTTP status of a tool error kind.
///
/// Caller mistakes are 4xx (bad arguments 400, no or bad token 401, outside the caller's
/// scopes 403, not in this catalog 404, body too large 413, an argument over its bound 422,
/// too many requests in flight 429). Upstream trouble is 502 when the upstream answered
/// wrongly (unexpected shape, refused the server's own role) and 503 when it or a serving
/// prerequisite (model, snapshot) is unavailable. Anything else is the server's fault, 500:
/// a kind not listed here is 500, so add new kinds when a tool gains them.
pub fn status_for(kind: &str) -> StatusCode {
    match kind {
        "InvalidArguments"
        | "UnknownTagKey"
        | "UnknownTagValue"
        | "ConflictingTagValues"
        | "InvalidCursor" => StatusCode::BAD_REQUEST,
        "MissingToken" | "InvalidToken" => StatusCode::UNAUTHORIZED,
        "InsufficientScope" => StatusCode::FORBIDDEN,
        "UnknownTool" | "DomainNotFound" | "DatasetNotFound" | "RoleNotFound" => {
            StatusCode::NOT_FOUND
        }
        REQUEST_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
        tools::LIMIT_EXCEEDED => StatusCode::UNPROCESSABLE_ENTITY,
        TOO_MANY_REQUESTS => StatusCode::TOO_MANY_REQUESTS,
        "UpstreamSchemaError"
        | "UpstreamRejected"
        | "UpstreamDatabaseMissing"
        | "UpstreamAccessDenied"
        | "TagOutsideOntology" => StatusCode::BAD_GATEWAY,
        "SourceUnavailable"
        | "UpstreamUnavailable"
        | "EmbedderUnavailable"
        | "NoSnapshot"
        | crate::audit::AUDIT_UNAVAILABLE => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The whole app: `/mcp`, the REST API, the protected-resource metadata, health and metrics.
pub fn app(state: Arc<AppState>, cancel: CancellationToken) -> Router {
    let rest = Router::new()
        .route("/v1/tools", get(list_tools))
        .route("/v1/tools/{name}", post(post_tool))
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics))
        .route(PRM_PATH, get(protected_resource_metadata))
        .route(&format!("{PRM_PATH}/mcp"), get(protected_resource_metadata))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard_hosts))
        .fallback(not_found);
    // rmcp checks Host and Origin itself with the same policy (see mcp::service).
    let mcp = Router::new()
        .nest_service("/mcp", mcp::service(state.clone(), cancel))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::mcp_gate,
        ));
    Router::new()
        .merge(mcp)
        .merge(rest)
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::limit_in_flight,
        ))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::authorise,
        ))
        .layer(middleware::from_fn_with_state(state.clone(), record_http))
        .with_state(state)
}

/// Where RFC 9728 puts the metadata of a resource on this host.
pub const PRM_PATH: &str = "/.well-known/oauth-protected-resource";

async fn protected_resource_metadata(State(state): State<Arc<AppState>>) -> Response {
    match &state.resource_metadata {
        Some(metadata) => Json(metadata.clone()).into_response(),
        None => (
            StatusCode::NOT_FOUND,
            Json(json!({
                "error": "NotFound",
                "message": "this server runs with --auth none: no token is checked, so there is no protected-resource metadata; start it with --auth jwt to require tokens",
            })),
        )
            .into_response(),
    }
}

async fn record_http(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let started = Instant::now();
    let route = req
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(unmatched)".to_string(), |p| p.as_str().to_string());
    let resp = next.run(req).await;
    state
        .metrics
        .record_http(&route, resp.status().as_u16(), started.elapsed());
    resp
}

async fn guard_hosts(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    match state.hosts.check(req.headers()) {
        Ok(()) => next.run(req).await,
        Err(message) => (
            StatusCode::FORBIDDEN,
            Json(json!({"error": "ForbiddenHost", "message": message})),
        )
            .into_response(),
    }
}

async fn list_tools(State(state): State<Arc<AppState>>, req: Request) -> Response {
    let (time, started) = (SystemTime::now(), Instant::now());
    let who = state.who(req.extensions());
    let count = tools::specs().len() as u64;
    let call = Call::method("tools/list", json!({}), AuditOutcome::Ok).with_count(count);
    if let Err(e) = state.audit(time, &who, Transport::Rest, call, started) {
        return guard::audit_unavailable(&e);
    }
    Json(json!({
        "tools": tools::specs(),
        "ttlMs": TOOL_LIST_TTL_MS,
        "cacheScope": tools::CacheScope::Public,
    }))
    .into_response()
}

async fn post_tool(
    State(state): State<Arc<AppState>>,
    Path(name): Path<String>,
    req: Request,
) -> Response {
    let (time, started) = (SystemTime::now(), Instant::now());
    let (parts, body) = req.into_parts();
    let caller = state.caller_from(&parts.extensions);
    let who = state.who(&parts.extensions);
    let parsed = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Err(e) if guard::is_length_limit(&e) => Err(request_too_large(&format!(
            "the arguments of '{name}'"
        ))),
        Err(e) => Err(ToolError::new(
            "InvalidArguments",
            format!("the request body could not be read ({e}); send the arguments as a JSON object of at most {MAX_BODY_BYTES} bytes"),
        )),
        Ok(bytes) if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Value::Null),
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes).map_err(|e| {
            ToolError::new(
                "InvalidArguments",
                format!("the request body is not JSON ({e}); send the arguments of '{name}' as a JSON object, see GET /v1/tools for its inputSchema"),
            )
        }),
    };
    let (args, outcome) = match parsed {
        Ok(args) => {
            let outcome = call_tool(&state, "rest", caller, &name, args.clone()).await;
            (args, outcome)
        }
        Err(e) => (json!({}), Outcome::Err(e)),
    };
    // An empty body means "no arguments", recorded as such.
    let args = if args.is_null() { json!({}) } else { args };
    let call = Call::tool(&name, &args, &outcome, state.served_snapshot().as_deref());
    if let Err(e) = state.audit(time, &who, Transport::Rest, call, started) {
        return guard::audit_unavailable(&e);
    }
    match outcome {
        Outcome::Ok(value) => (StatusCode::OK, Json(value)).into_response(),
        Outcome::InputRequired(ask) => (
            StatusCode::UNPROCESSABLE_ENTITY,
            Json(json!({ "input_required": ask })),
        )
            .into_response(),
        Outcome::Err(e) => error_response(&e, state.resource_metadata_url()),
    }
}

/// The refusal of a request body over [`MAX_BODY_BYTES`] (HTTP 413); `what` names what the
/// body should carry.
pub fn request_too_large(what: &str) -> ToolError {
    ToolError::new(
        REQUEST_TOO_LARGE,
        format!("the request body is larger than {MAX_BODY_BYTES} bytes; send {what} in at most {MAX_BODY_BYTES} bytes"),
    )
    .with("limit", "request_body")
    .with("max", MAX_BODY_BYTES)
}

/// The error object with its status. A scope refusal is the 403 `insufficient_scope`
/// challenge naming every scope the request needs, with `resource_metadata` when the server
/// validates tokens (`metadata_url`).
pub fn error_response(e: &ToolError, metadata_url: Option<&str>) -> Response {
    if let Some(challenge) = metadata_url.and_then(|url| crate::auth::scope_challenge(e, url)) {
        return challenge;
    }
    let status = status_for(&e.kind);
    let mut resp = (status, Json(e.to_json())).into_response();
    if status == StatusCode::FORBIDDEN {
        let scopes: Vec<&str> = e
            .details
            .get("required_scopes")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\"",
            scopes.join(" ")
        );
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    resp
}

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

async fn readyz(State(state): State<Arc<AppState>>) -> Response {
    let (ready, details) = readiness(&state);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (status, Json(details)).into_response()
}

async fn metrics(State(state): State<Arc<AppState>>) -> Response {
    let body = state.metrics.render(&gauges(&state));
    (
        [(
            header::CONTENT_TYPE,
            "text/plain; version=0.0.4; charset=utf-8",
        )],
        body,
    )
        .into_response()
}

async fn not_found(req: Request) -> Response {
    (
        StatusCode::NOT_FOUND,
        Json(json!({
            "error": "NotFound",
            "message": format!(
                "no route for {} {}; the API is GET /v1/tools, POST /v1/tools/{{name}}, /mcp (MCP Streamable HTTP), GET /healthz, /readyz, /metrics, /.well-known/oauth-protected-resource",
                req.method(),
                req.uri().path()
            ),
        })),
    )
        .into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_map_to_statuses() {
        let cases = [
            ("InvalidArguments", 400),
            ("InvalidCursor", 400),
            ("MissingToken", 401),
            ("InvalidToken", 401),
            ("UpstreamRejected", 502),
            ("UpstreamDatabaseMissing", 502),
            ("UpstreamAccessDenied", 502),
            ("UpstreamUnavailable", 503),
            ("EmbedderUnavailable", 503),
            ("NoSnapshot", 503),
            ("RetrievalFailed", 500),
            ("UnknownTagKey", 400),
            ("UnknownTagValue", 400),
            ("ConflictingTagValues", 400),
            ("InsufficientScope", 403),
            ("UnknownTool", 404),
            ("DomainNotFound", 404),
            ("DatasetNotFound", 404),
            ("RoleNotFound", 404),
            ("UpstreamSchemaError", 502),
            ("SourceUnavailable", 503),
            ("OutputSchemaViolation", 500),
            ("InternalError", 500),
            ("AuditUnavailable", 503),
            ("RequestTooLarge", 413),
            ("LimitExceeded", 422),
            ("TooManyRequests", 429),
        ];
        for (kind, status) in cases {
            assert_eq!(status_for(kind).as_u16(), status, "{kind}");
        }
    }

    #[test]
    fn a_403_names_every_required_scope_in_one_challenge() {
        let e = ToolError::insufficient_scope(vec![
            "catalog:claims:read".into(),
            "catalog:policy:read".into(),
        ]);
        let resp = error_response(&e, None);
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            resp.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"insufficient_scope\", scope=\"catalog:claims:read catalog:policy:read\""
        );
    }
}
