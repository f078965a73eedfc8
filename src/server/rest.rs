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
//!   - an error object `{"error": kind, "message", ...}` with the status of [`status_for`](super::common::status_for); a
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
use axum::http::{header, HeaderMap, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::{error_response, request_too_large, TOOL_LIST_TTL_MS};
use super::{call_tool, conn, gauges, guard, mcp, readiness, AppState};
use crate::audit::{AuditOutcome, Call, Transport, TOOLS_CALL};
use crate::limits::MAX_BODY_BYTES;
use crate::tools::{self, Outcome, ToolError};

/// The whole app: `/mcp`, the REST API, the protected-resource metadata, health and metrics.
pub fn app(state: Arc<AppState>, cancel: CancellationToken) -> Router {
    let rest = Router::new()
        .route("/v1/tools", get(list_tools))
        .route(
            "/v1/tools/{name}",
            post(post_tool).fallback(tool_method_not_allowed),
        )
        .route(PRM_PATH, get(protected_resource_metadata))
        .route(&format!("{PRM_PATH}/mcp"), get(protected_resource_metadata))
        .route_layer(middleware::from_fn_with_state(state.clone(), guard_hosts))
        .fallback(not_found);
    // Probes answer whatever the Host: a load balancer's health check names the target's
    // private IP, a kubelet the pod IP, Prometheus the task IP — none of which an
    // --allowed-host list can know. They carry no caller's data and change nothing, which is
    // what DNS-rebinding protection guards; /mcp and /v1/* keep it.
    let probes = Router::new()
        .route("/healthz", get(healthz))
        .route("/readyz", get(readyz))
        .route("/metrics", get(metrics));
    // rmcp checks Host and Origin itself with the same policy (see mcp::service).
    let mcp = Router::new()
        .nest_service("/mcp", mcp::service(state.clone(), cancel))
        .layer(middleware::from_fn_with_state(
            state.clone(),
            guard::mcp_gate,
        ))
        .layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            super::sessions::mark_busy,
        ))
        .layer(middleware::from_fn_with_state(
            state.sessions.clone(),
            super::sessions::unseal,
        ));
    Router::new()
        .merge(mcp)
        .merge(probes)
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
        .layer(middleware::from_fn_with_state(
            state.clone(),
            super::conn::arrival,
        ))
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
        Err(e) if conn::is_body_timeout(&e) => {
            let call = Call {
                tool: Some(name.clone()),
                ..Call::method(TOOLS_CALL, json!({}), AuditOutcome::Error)
            }
            .with_error(conn::BODY_TIMEOUT);
            if let Err(e) = state.audit(time, &who, Transport::Rest, call, started) {
                return guard::audit_unavailable(&e);
            }
            let limit = state.conn_limits.body_read_timeout;
            return conn::body_timeout_response(limit, &format!("POST /v1/tools/{name}"));
        }
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

async fn healthz() -> Json<Value> {
    Json(json!({"status": "ok"}))
}

/// `/readyz`: 200 when ready, else 503, with `{"ready", "status"}` for anyone; the details
/// (snapshot ids, the catalog and store locations, the last errors) only for the operator's way
/// in: `--auth none` (loopback only), a valid bearer token, or `--public-probe-details`.
async fn readyz(State(state): State<Arc<AppState>>, headers: HeaderMap) -> Response {
    let (ready, details) = readiness(&state);
    let status = if ready {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    if shows_probe_details(&state, &headers).await {
        return (status, Json(details)).into_response();
    }
    let brief = json!({"ready": ready, "status": details["status"]});
    (status, Json(brief)).into_response()
}

/// Whether a probe request may see the details (see [`readyz`]).
async fn shows_probe_details(state: &AppState, headers: &HeaderMap) -> bool {
    let Some(authenticator) = &state.auth else {
        return true;
    };
    if state.public_probe_details {
        return true;
    }
    match crate::auth::authorization_header(headers) {
        Ok(Some(value)) => authenticator.authenticate(Some(value)).await.is_ok(),
        _ => false,
    }
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

/// Another method than POST on a tool's route: 405 with `Allow: POST` and an error body that
/// says how to call it.
async fn tool_method_not_allowed(req: Request) -> Response {
    let path = req.uri().path().to_string();
    (
        StatusCode::METHOD_NOT_ALLOWED,
        [(header::ALLOW, "POST")],
        Json(json!({
            "error": "MethodNotAllowed",
            "message": format!(
                "{} {path}: a tool is called with POST and its arguments as a JSON object body, e.g. curl -X POST -H 'Content-Type: application/json' -d '{{}}' http://HOST{path}; GET /v1/tools lists the tools and their inputSchema",
                req.method()
            ),
        })),
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
