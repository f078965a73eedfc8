//! What stands between an HTTP request and a handler: authorisation (token → caller, refusals
//! audited as `challenge`), the bound on requests in flight ([`InFlight`], 429), the scope gate
//! in front of rmcp, and the audit of every MCP call made over HTTP. A request that cannot be
//! audited is not answered: it gets a 503.
//!
//! The MCP gate reads the JSON-RPC body itself (at most [`MAX_BODY_BYTES`]) because rmcp
//! answers every request with HTTP 200: a `tools/call` or `resources/read` naming a domain the
//! caller may not read must become an HTTP 403 challenge before rmcp sees it. The tools refuse
//! such domains too; that check stays as the second line of defence.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Value};

use super::common::{error_response, request_too_large, REQUEST_TOO_LARGE, TOO_MANY_REQUESTS};
use super::mcp::{self, AuditSlot};
use super::AppState;
use crate::audit::{AuditOutcome, Call, Transport, TOOLS_CALL};
use crate::auth;
use crate::catalog::{Caller, Domain};
use crate::limits::{MAX_BODY_BYTES, RETRY_AFTER_SECS};
use crate::tools::{self, ToolError};
use tokio::sync::Semaphore;
/// Longest request path copied into an audit line.
const MAX_AUDITED_PATH: usize = 200;

/// The 503 answered instead of a result that could not be audited.
pub fn audit_unavailable(e: &crate::audit::AuditError) -> Response {
    let error = e.to_tool_error();
    (StatusCode::SERVICE_UNAVAILABLE, Json(error.to_json())).into_response()
}

/// Which transport a request path belongs to.
fn transport_of(path: &str) -> Transport {
    if path == "/mcp" || path.starts_with("/mcp/") {
        Transport::Mcp
    } else {
        Transport::Rest
    }
}

/// What a request refused before its body was read asked for: a REST tool call or list by
/// its route, anything else by HTTP method and path.
fn unread_call(method: &Method, path: &str) -> (String, Option<String>) {
    if let Some(name) = path.strip_prefix("/v1/tools/") {
        if *method == Method::POST && !name.is_empty() && !name.contains('/') {
            return (TOOLS_CALL.to_string(), Some(name.to_string()));
        }
    }
    if path == "/v1/tools" && *method == Method::GET {
        return ("tools/list".to_string(), None);
    }
    let path: String = path.chars().take(MAX_AUDITED_PATH).collect();
    (format!("{method} {path}"), None)
}

/// `--auth jwt`: authenticates every request but the public paths; a refusal is audited as
/// `challenge` and answered with its challenge. Without an authenticator (`--auth none`) the
/// request passes and handlers use the server's fallback caller.
pub async fn authorise(
    State(state): State<Arc<AppState>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(authenticator) = state.auth.clone() else {
        return next.run(request).await;
    };
    if auth::is_public_path(request.uri().path()) {
        return next.run(request).await;
    }
    let time = SystemTime::now();
    let started = Instant::now();
    // Nobody is known yet: the line names only where the request came from.
    let mut who = crate::audit::Who::default();
    super::conn::Peer::note(request.extensions(), &mut who);
    match auth::admit(&authenticator, &mut request).await {
        Ok(()) => next.run(request).await,
        Err(refusal) => {
            let path = request.uri().path();
            let (method, tool) = unread_call(request.method(), path);
            let call = Call::challenge(&method, tool.as_deref(), json!({}), refusal.kind())
                .with_refusal(refusal.description(), refusal.reason());
            tracing::info!(path, peer = ?who.peer, reason = refusal.reason(), "request refused: {}", refusal.description());
            match state.audit(time, &who, transport_of(path), call, started) {
                Ok(()) => authenticator.challenge(&refusal),
                Err(e) => audit_unavailable(&e),
            }
        }
    }
}

/// The bound on requests answered at once (`serve --max-concurrent-requests`) and how often
/// it refused one. Only requests that run work take a slot: every request to `/v1/*` and an
/// MCP `POST /mcp`. Health, readiness, metrics, the RFC 9728 metadata and MCP's long-lived
/// `GET /mcp` event streams never do, so a saturated server can still be watched.
#[derive(Debug)]
pub struct InFlight {
    slots: Arc<Semaphore>,
    max: usize,
    refused: AtomicU64,
}

impl InFlight {
    /// At most `max` requests at once (`max` ≥ 1; clap refuses 0).
    pub fn new(max: usize) -> InFlight {
        let max = max.max(1);
        InFlight {
            slots: Arc::new(Semaphore::new(max)),
            max,
            refused: AtomicU64::new(0),
        }
    }

    pub fn max(&self) -> usize {
        self.max
    }

    /// Requests holding a slot now.
    pub fn current(&self) -> usize {
        self.max - self.slots.available_permits()
    }

    /// Requests refused with 429 since start.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    fn takes_a_slot(method: &Method, path: &str) -> bool {
        path == "/v1" || path.starts_with("/v1/") || (path == "/mcp" && *method == Method::POST)
    }
}

/// The 429 of a request over the bound: `Retry-After` and the error object naming the bound.
pub fn too_many_requests(max: usize) -> Response {
    let error = ToolError::new(
        TOO_MANY_REQUESTS,
        format!("govcat is answering as many requests as --max-concurrent-requests allows ({max}); retry after {RETRY_AFTER_SECS} s, or start govcat with a larger --max-concurrent-requests"),
    )
    .with("limit", "concurrent_requests")
    .with("max", max)
    .with("retry_after_seconds", RETRY_AFTER_SECS);
    let mut resp = (StatusCode::TOO_MANY_REQUESTS, Json(error.to_json())).into_response();
    resp.headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(RETRY_AFTER_SECS));
    resp
}

/// Bounds requests in flight (see [`InFlight`]): a request that finds every slot taken is
/// refused at once with 429 — never queued — and audited like any refusal. Runs after
/// [`authorise`], so an unauthenticated flood is answered 401 without taking slots.
pub async fn limit_in_flight(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if !InFlight::takes_a_slot(request.method(), request.uri().path()) {
        return next.run(request).await;
    }
    // The slot is held until the response is built; rmcp's answers are buffered by
    // `mcp_gate` first, so an MCP call holds its slot until it is complete.
    let Ok(_slot) = state.in_flight.slots.clone().try_acquire_owned() else {
        state.in_flight.refused.fetch_add(1, Ordering::Relaxed);
        let (time, started) = (SystemTime::now(), Instant::now());
        let path = request.uri().path();
        let (method, tool) = unread_call(request.method(), path);
        let call = Call {
            tool,
            ..Call::method(&method, json!({}), AuditOutcome::Error)
        }
        .with_error(TOO_MANY_REQUESTS);
        let who = state.who(request.extensions());
        return match state.audit(time, &who, transport_of(path), call, started) {
            Ok(()) => too_many_requests(state.in_flight.max()),
            Err(e) => audit_unavailable(&e),
        };
    };
    next.run(request).await
}

/// One JSON-RPC request of an MCP POST body.
#[derive(Debug, Clone, PartialEq)]
pub struct RpcRequest {
    pub method: String,
    /// `params` without `_meta`.
    pub params: Value,
}

impl RpcRequest {
    fn tool(&self) -> Option<&str> {
        (self.method == TOOLS_CALL)
            .then(|| self.params.get("name").and_then(Value::as_str))
            .flatten()
    }

    /// The audited arguments: a tool call's `arguments`, otherwise the params.
    fn arguments(&self) -> Value {
        match self.tool() {
            Some(_) => self
                .params
                .get("arguments")
                .cloned()
                .unwrap_or_else(|| json!({})),
            None => self.params.clone(),
        }
    }

    /// The domains this request names explicitly: a tool's `domain` / `domains` arguments
    /// (when the tool declares them), a dataset URI's domain, a completion's `domain` context.
    pub fn requested_domains(&self) -> Vec<Domain> {
        let mut out = Vec::new();
        match self.method.as_str() {
            TOOLS_CALL => {
                let Some(spec) = self.tool().and_then(tools::spec) else {
                    return out;
                };
                let declared = |name: &str| {
                    spec.input_schema
                        .pointer(&format!("/properties/{name}"))
                        .is_some()
                };
                let args = self.params.get("arguments");
                if declared("domain") {
                    if let Some(d) = args.and_then(|a| a.get("domain")).and_then(Value::as_str) {
                        out.push(Domain(d.to_string()));
                    }
                }
                if declared("domains") {
                    if let Some(list) = args
                        .and_then(|a| a.get("domains"))
                        .and_then(Value::as_array)
                    {
                        out.extend(
                            list.iter()
                                .filter_map(Value::as_str)
                                .map(|d| Domain(d.to_string())),
                        );
                    }
                }
            }
            "resources/read" => {
                if let Some((domain, _)) = self
                    .params
                    .get("uri")
                    .and_then(Value::as_str)
                    .and_then(mcp::parse_dataset_uri)
                {
                    out.push(Domain(domain));
                }
            }
            "completion/complete" => {
                if let Some(d) = self
                    .params
                    .pointer("/context/arguments/domain")
                    .and_then(Value::as_str)
                {
                    out.push(Domain(d.to_string()));
                }
            }
            _ => {}
        }
        out
    }
}

/// The JSON-RPC requests (messages with an `id` and a `method`) of a body: one message or a
/// batch. Notifications, responses and bodies that are not JSON yield none.
pub fn jsonrpc_requests(body: &[u8]) -> Vec<RpcRequest> {
    let parse = |m: &Value| -> Option<RpcRequest> {
        let m = m.as_object()?;
        m.get("id")?;
        let method = m.get("method")?.as_str()?.to_string();
        let mut params = m.get("params").cloned().unwrap_or_else(|| json!({}));
        if let Some(p) = params.as_object_mut() {
            p.remove("_meta");
        }
        Some(RpcRequest { method, params })
    };
    match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch.iter().filter_map(parse).collect(),
        Ok(message) => parse(&message).into_iter().collect(),
        Err(_) => Vec::new(),
    }
}

/// A POST body refused before rmcp sees it, answered as JSON-RPC says: HTTP 400 with the
/// error object (`id` as sent, or null when it cannot be read).
#[derive(Debug, Clone, PartialEq)]
pub struct EnvelopeRefusal {
    pub id: Value,
    pub code: i64,
    /// The audit line's error kind.
    pub kind: &'static str,
    pub message: String,
}

impl IntoResponse for EnvelopeRefusal {
    fn into_response(self) -> Response {
        let body = json!({
            "jsonrpc": "2.0",
            "id": self.id,
            "error": {"code": self.code, "message": self.message, "data": {"error": self.kind}},
        });
        (StatusCode::BAD_REQUEST, Json(body)).into_response()
    }
}

/// What in a POST body is not one JSON-RPC message MCP accepts: not JSON (-32700), a batch or
/// not an object (-32600), a `tools/call` whose `arguments` is not an object (-32602).
pub fn envelope_refusal(body: &[u8]) -> Option<EnvelopeRefusal> {
    let refusal = |id: Value, code, kind, message: String| EnvelopeRefusal {
        id,
        code,
        kind,
        message,
    };
    let message = match serde_json::from_slice::<Value>(body) {
        Err(e) => {
            return Some(refusal(
                Value::Null,
                -32700,
                "ParseError",
                format!("the body is not JSON ({e}); send one JSON-RPC 2.0 message as a JSON object"),
            ))
        }
        Ok(Value::Array(_)) => {
            return Some(refusal(
                Value::Null,
                -32600,
                "InvalidRequest",
                "a JSON array (a JSON-RPC batch) is not accepted: MCP sends one message per POST since protocol 2025-06-18; send each message in a POST of its own".into(),
            ))
        }
        Ok(Value::Object(m)) => m,
        Ok(other) => {
            return Some(refusal(
                Value::Null,
                -32600,
                "InvalidRequest",
                format!("the body is a JSON {}, not a JSON-RPC message; send one JSON object with jsonrpc, id, method and params", json_type(&other)),
            ))
        }
    };
    let id = message.get("id").cloned().unwrap_or(Value::Null);
    let is_call = message.get("method").and_then(Value::as_str) == Some(TOOLS_CALL);
    match message.get("params").and_then(|p| p.get("arguments")) {
        Some(args) if is_call && !args.is_object() => Some(refusal(
            id,
            -32602,
            "InvalidParams",
            format!("params.arguments of tools/call is a JSON {}; send the tool's arguments as a JSON object keyed by name, as its inputSchema in tools/list says", json_type(args)),
        )),
        _ => None,
    }
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The scopes `caller` lacks for `domains`, each once, in order of first mention.
pub fn missing_scopes(caller: &Caller, domains: &[Domain]) -> Vec<String> {
    let mut missing: Vec<String> = Vec::new();
    for d in domains.iter().filter(|d| !caller.may_read(d)) {
        let scope = Caller::scope_for(d);
        if !missing.contains(&scope) {
            missing.push(scope);
        }
    }
    missing
}

/// Whether a body-read error is the size limit.
pub(super) fn is_length_limit(e: &(dyn std::error::Error + 'static)) -> bool {
    let mut current: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(err) = current {
        if err.is::<http_body_util::LengthLimitError>() {
            return true;
        }
        current = err.source();
    }
    false
}

/// The outcome of an MCP request the handler did not record (a protocol method rmcp answers
/// itself, or a request rmcp refused): from the HTTP status and the JSON-RPC answer.
fn observed_call(request: &RpcRequest, status: StatusCode, body: &[u8]) -> Call {
    let error = if status.is_success() {
        jsonrpc_error(body)
    } else {
        Some(format!("HTTP {}", status.as_u16()))
    };
    let outcome = match error {
        Some(_) => AuditOutcome::Error,
        None => AuditOutcome::Ok,
    };
    Call {
        tool: request.tool().map(String::from),
        error,
        ..Call::method(&request.method, request.arguments(), outcome)
    }
}

/// The error of a JSON-RPC answer, as a kind: the error object's `data.error` when govcat put
/// one there, else `JsonRpcError <code>`. Reads a JSON body or the `data:` lines of SSE.
/// Public for the fuzz targets only.
#[doc(hidden)]
pub fn jsonrpc_error(body: &[u8]) -> Option<String> {
    let text = std::str::from_utf8(body).ok()?;
    let messages: Vec<Value> = match serde_json::from_str::<Value>(text) {
        Ok(v) => vec![v],
        Err(_) => text
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    messages.iter().find_map(|m| {
        let error = m.get("error")?;
        Some(
            error
                .pointer("/data/error")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| {
                    format!(
                        "JsonRpcError {}",
                        error.get("code").and_then(Value::as_i64).unwrap_or(0)
                    )
                }),
        )
    })
}

/// In front of rmcp at `/mcp`: bounds the body, refuses domains outside the caller's scopes
/// with a 403 challenge, and audits each JSON-RPC request once its response is complete.
pub async fn mcp_gate(
    State(state): State<Arc<AppState>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let time = SystemTime::now();
    let started = Instant::now();
    let (mut parts, body) = request.into_parts();
    let who = state.who(&parts.extensions);
    let bytes: Bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(e) => {
            let inner = e.into_inner();
            if super::conn::is_body_timeout(inner.as_ref()) {
                let call = Call::method("POST /mcp", json!({}), AuditOutcome::Error)
                    .with_error(super::conn::BODY_TIMEOUT);
                if let Err(e) = state.audit(time, &who, Transport::Mcp, call, started) {
                    return audit_unavailable(&e);
                }
                let limit = state.conn_limits.body_read_timeout;
                return super::conn::body_timeout_response(limit, "POST /mcp");
            }
            let error = if is_length_limit(inner.as_ref()) {
                request_too_large("one JSON-RPC message")
            } else {
                ToolError::new(
                    "InvalidRequest",
                    format!("the MCP request body could not be read ({inner}); send it again"),
                )
            };
            let call = Call::method("POST /mcp", json!({}), AuditOutcome::Error)
                .with_error(error.kind.as_str());
            if let Err(e) = state.audit(time, &who, Transport::Mcp, call, started) {
                return audit_unavailable(&e);
            }
            let status = match error.kind.as_str() {
                REQUEST_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
                _ => StatusCode::BAD_REQUEST,
            };
            return (status, Json(error.to_json())).into_response();
        }
    };
    if let Some(refusal) = envelope_refusal(&bytes) {
        let call =
            Call::method("POST /mcp", json!({}), AuditOutcome::Error).with_error(refusal.kind);
        if let Err(e) = state.audit(time, &who, Transport::Mcp, call, started) {
            return audit_unavailable(&e);
        }
        return refusal.into_response();
    }
    let requests = jsonrpc_requests(&bytes);
    let Some(first) = requests.first().cloned() else {
        // A notification, a response or a body rmcp will refuse: not a call.
        return next
            .run(Request::from_parts(parts, Body::from(bytes)))
            .await;
    };
    let caller = state.caller_from(&parts.extensions);
    for r in &requests {
        let missing = missing_scopes(&caller, &r.requested_domains());
        if missing.is_empty() {
            continue;
        }
        let call = Call::challenge(&r.method, r.tool(), r.arguments(), "InsufficientScope")
            .with_refusal(
                format!("the token lacks the scope {}", missing.join(" ")),
                "insufficient_scope",
            );
        if let Err(e) = state.audit(time, &who, Transport::Mcp, call, started) {
            return audit_unavailable(&e);
        }
        let refusal = if r.tool() == Some("find_precedents") {
            ToolError::insufficient_search_scope(missing)
        } else {
            ToolError::insufficient_scope(missing)
        };
        return error_response(&refusal, state.resource_metadata_url());
    }
    let slot = AuditSlot::default();
    parts.extensions.insert(slot.clone());
    let response = next
        .run(Request::from_parts(parts, Body::from(bytes)))
        .await;
    let (head, body) = response.into_parts();
    // rmcp streams an answer as SSE with status 200 sent first; holding the body until the
    // call is on record is what lets an unaudited call become a 503 instead.
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            let call = Call::method(&first.method, first.arguments(), AuditOutcome::Error)
                .with_error("ResponseFailed");
            if let Err(ae) = state.audit(time, &who, Transport::Mcp, call, started) {
                return audit_unavailable(&ae);
            }
            let error = ToolError::new(
                "ResponseFailed",
                format!("the MCP answer could not be produced ({e}); retry the request"),
            );
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(error.to_json())).into_response();
        }
    };
    let call = slot
        .take()
        .unwrap_or_else(|| observed_call(&first, head.status, &body));
    match state.audit(time, &who, Transport::Mcp, call, started) {
        Ok(()) => Response::from_parts(head, Body::from(body)),
        Err(e) => audit_unavailable(&e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn fraud_only() -> Caller {
        Caller {
            subject: "bob".into(),
            readable: Some(BTreeSet::from([Domain("fraud".into())])),
        }
    }

    fn one(body: Value) -> RpcRequest {
        let requests = jsonrpc_requests(body.to_string().as_bytes());
        assert_eq!(requests.len(), 1, "{body}");
        requests[0].clone()
    }

    #[test]
    fn explicit_domains_are_found_where_each_method_names_them() {
        let call = one(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "find_precedents", "arguments": {"description": "x", "domains": ["claims", "fraud", "policy"]}, "_meta": {"k": 1}}}));
        assert_eq!(
            call.requested_domains(),
            vec![
                Domain("claims".into()),
                Domain("fraud".into()),
                Domain("policy".into())
            ]
        );
        assert_eq!(
            missing_scopes(&fraud_only(), &call.requested_domains()),
            vec!["catalog:claims:read", "catalog:policy:read"]
        );
        let call = one(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
            "params": {"name": "get_dataset", "arguments": {"domain": "claims", "table": "claim"}}}));
        assert_eq!(call.requested_domains(), vec![Domain("claims".into())]);
        let call = one(
            json!({"jsonrpc": "2.0", "id": 3, "method": "resources/read",
            "params": {"uri": "govcat://domain/claims/dataset/claim"}}),
        );
        assert_eq!(call.requested_domains(), vec![Domain("claims".into())]);
        let call = one(
            json!({"jsonrpc": "2.0", "id": 4, "method": "completion/complete",
            "params": {"ref": {"type": "ref/resource", "uri": mcp::DATASET_TEMPLATE},
                       "argument": {"name": "table", "value": ""},
                       "context": {"arguments": {"domain": "claims"}}}}),
        );
        assert_eq!(call.requested_domains(), vec![Domain("claims".into())]);
    }

    #[test]
    fn arguments_a_tool_does_not_declare_and_unknown_tools_name_no_domain() {
        // resolve_lf_tag has no domain argument: its own schema check refuses it.
        let call = one(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "resolve_lf_tag", "arguments": {"domain": "claims"}}}));
        assert_eq!(call.requested_domains(), Vec::<Domain>::new());
        let call = one(json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": {"name": "no_such_tool", "arguments": {"domain": "claims"}}}));
        assert_eq!(call.requested_domains(), Vec::<Domain>::new());
        let call = one(
            json!({"jsonrpc": "2.0", "id": 1, "method": "resources/read",
            "params": {"uri": "govcat://ontology/lf-tags"}}),
        );
        assert_eq!(call.requested_domains(), Vec::<Domain>::new());
    }

    #[test]
    fn notifications_responses_and_garbage_are_not_requests() {
        assert_eq!(
            jsonrpc_requests(br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            vec![]
        );
        assert_eq!(
            jsonrpc_requests(br#"{"jsonrpc":"2.0","id":1,"result":{}}"#),
            vec![]
        );
        assert_eq!(jsonrpc_requests(b"not json"), vec![]);
        let batch = jsonrpc_requests(
            br#"[{"jsonrpc":"2.0","id":1,"method":"tools/list"},{"jsonrpc":"2.0","method":"x"}]"#,
        );
        assert_eq!(
            batch,
            vec![RpcRequest {
                method: "tools/list".into(),
                params: json!({})
            }]
        );
    }

    #[test]
    fn an_unrecorded_call_takes_its_outcome_from_the_answer() {
        let list = one(json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}));
        let ok = observed_call(
            &list,
            StatusCode::OK,
            b"data: {\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n\n",
        );
        assert_eq!((ok.outcome, ok.error), (AuditOutcome::Ok, None));
        let unknown = one(
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "nope", "arguments": {"a": 1}}}),
        );
        let err = observed_call(
            &unknown,
            StatusCode::OK,
            br#"{"jsonrpc":"2.0","id":1,"error":{"code":-32602,"message":"m","data":{"error":"UnknownTool"}}}"#,
        );
        assert_eq!(
            (
                err.method.as_str(),
                err.tool.as_deref(),
                err.arguments,
                err.outcome,
                err.error.as_deref()
            ),
            (
                "tools/call",
                Some("nope"),
                json!({"a": 1}),
                AuditOutcome::Error,
                Some("UnknownTool")
            )
        );
        let refused = observed_call(
            &list,
            StatusCode::NOT_FOUND,
            b"Not Found: Session not found",
        );
        assert_eq!(
            (refused.outcome, refused.error.as_deref()),
            (AuditOutcome::Error, Some("HTTP 404"))
        );
    }

    #[test]
    fn bodies_that_are_no_single_message_are_refused_as_json_rpc_says() {
        let code = |body: &str| envelope_refusal(body.as_bytes()).map(|r| (r.id, r.code));
        assert_eq!(
            code("{\"jsonrpc\": \"2.0\", \"id\": 1,"),
            Some((Value::Null, -32700))
        );
        assert_eq!(
            code(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#),
            Some((Value::Null, -32600))
        );
        assert_eq!(code("42"), Some((Value::Null, -32600)));
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_domains","arguments":["a"]}}"#
            ),
            Some((json!(7), -32602))
        );
        // Well-formed messages, notifications and other methods' params pass to rmcp.
        assert_eq!(
            code(
                r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"list_domains","arguments":{}}}"#
            ),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            None
        );
        assert_eq!(
            code(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            None
        );
    }

    #[test]
    fn requests_refused_unread_are_named_by_route() {
        assert_eq!(
            unread_call(&Method::POST, "/v1/tools/get_dataset"),
            ("tools/call".to_string(), Some("get_dataset".to_string()))
        );
        assert_eq!(
            unread_call(&Method::GET, "/v1/tools"),
            ("tools/list".to_string(), None)
        );
        assert_eq!(
            unread_call(&Method::POST, "/mcp"),
            ("POST /mcp".to_string(), None)
        );
        assert_eq!(transport_of("/mcp"), Transport::Mcp);
        assert_eq!(transport_of("/v1/tools/x"), Transport::Rest);
    }
}
