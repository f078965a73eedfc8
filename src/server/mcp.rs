//! The MCP adapter (rmcp): tools from `tools::specs()`, the ontology resource, the dataset
//! resource template, completion of `domain` and `table`, served over Streamable HTTP (nested at
//! `/mcp` by `rest::app`) and over stdio.
//!
//! Mapping, one rule each:
//! - a tool result is `structuredContent` plus a text block with the same JSON;
//! - a tool failure is a result with `isError: true` and the error object as its text block
//!   (no `structuredContent`: that must fit the `outputSchema`) — never a protocol error (only
//!   an unknown tool name is one, as the MCP spec asks);
//! - an `input_required` ask is, on protocol 2026-07-28, an MRTR `InputRequiredResult` with one
//!   form elicitation (an `enum` per missing key); the retry's answers are merged into the
//!   `tags` argument. Older protocols cannot carry the ask, so it becomes a tool error listing
//!   the missing keys and their allowed values.
//!
//! Every call is put on record (see `crate::audit`): over HTTP the handler leaves what it saw in
//! the request's [`AuditSlot`] and `guard::mcp_gate` writes the line when the answer is complete;
//! over stdio the handler writes it, and a call it cannot write is answered as an error.
//!
//! Lists carry honest cache hints: the tool list, the template list and the prompt list are
//! fixed for the life of the process (public, [`TOOL_LIST_TTL_MS`]), and so is a rendered prompt
//! (its text depends only on its arguments); the ontology is public with the short floor;
//! datasets are private with the source's `ttlMs`. rmcp's `GetPromptResult` has no fields for
//! the hints, so they are added to the serialised `prompts/get` answer
//! ([`add_prompt_cache_hints`]).
//!
//! `DELETE /mcp` ends a session: 204 when it was open, 404 when it was not ([`end_session`];
//! rmcp alone answers 202 to both, which the official clients log as a failure). Sessions are
//! bounded in number, per principal and in idle time (`super::sessions`).

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Instant, SystemTime};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    CompleteRequestParams, CompleteResult, CompletionInfo, CustomResult, ElicitRequest,
    ElicitRequestParams, ElicitationSchema, GetPromptRequestParams, GetPromptResponse,
    GetPromptResult, Implementation, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, JsonObject, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, Prompt, PromptArgument,
    PromptMessage, ProtocolVersion, ReadResourceRequestParams, ReadResourceResponse,
    ReadResourceResult, Reference, Resource, ResourceContents, ResourceTemplate,
    ServerCapabilities, ServerConfig, ServerResult, Tool, ToolAnnotations,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, Service, ServiceExt};
use serde_json::{json, Map, Value};
use tokio_util::sync::CancellationToken;

use super::common::TOOL_LIST_TTL_MS;
use super::sessions::Sessions;
use super::{call_tool, AppState, ServerError};
use crate::audit::{AuditError, AuditOutcome, Call, Transport, Who};
use crate::catalog::{CatalogError, Domain};
use crate::limits::MAX_BODY_BYTES;
use crate::ontology::OntologyError;
use crate::prompts::{self, PromptError};
use crate::tools::{self, Caller, InputRequired, Outcome, ToolError, TTL_FLOOR};

/// The ontology as a fixed resource.
pub const ONTOLOGY_URI: &str = "govcat://ontology/lf-tags";
/// One dataset (a live `get_dataset` read) as a resource template.
pub const DATASET_TEMPLATE: &str = "govcat://domain/{domain}/dataset/{table}";
/// The key of the one input request an `input_required` ask carries.
pub const ASK_KEY: &str = "missing_tags";
/// The tool argument the answers to an ask are merged into.
pub const ASK_ARGUMENT: &str = "tags";
/// The header a load balancer may route on (`Mcp-Param-Domain`), set on `domain` arguments.
pub const DOMAIN_HEADER: &str = "Domain";
/// The template arguments completion answers for.
pub const COMPLETABLE: [&str; 2] = ["domain", "table"];
/// Most completion values returned at once (the MCP limit).
pub const MAX_COMPLETIONS: usize = CompletionInfo::MAX_VALUES;

const INSTRUCTIONS: &str = "govcat answers questions about the datasets of a governed catalog \
(owners, schemas, column classifications, LF-tag grants) from the catalog itself, never from \
memory and never from the rows. Tag values come from a closed ontology (resource \
govcat://ontology/lf-tags). Before acting on a classification, read the dataset live with \
get_dataset.";

/// Where the MCP handler leaves what it observed of a call (tool, arguments, outcome), for
/// the gate to write once the response is complete. Shared through the request extensions,
/// which rmcp hands to the handler inside `http::request::Parts`.
#[derive(Debug, Clone, Default)]
pub struct AuditSlot(Arc<Mutex<Option<Call>>>);

impl AuditSlot {
    pub fn fill(&self, call: Call) {
        let mut slot = self.0.lock().unwrap_or_else(|p| p.into_inner());
        *slot = Some(call);
    }

    pub(super) fn take(&self) -> Option<Call> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).take()
    }
}

/// The MCP server of one `AppState`; cheap to clone (one per HTTP request or session).
#[derive(Clone)]
pub struct GovcatMcp {
    state: Arc<AppState>,
}

impl GovcatMcp {
    pub fn new(state: Arc<AppState>) -> GovcatMcp {
        GovcatMcp { state }
    }

    /// The caller: from the HTTP request's extensions (set by auth), else the fallback caller
    /// of the server (`--auth none`: local; stdio: `GOVCAT_SCOPES`).
    fn caller(&self, ctx: &RequestContext<RoleServer>) -> Caller {
        match ctx.extensions.get::<axum::http::request::Parts>() {
            Some(parts) => self.state.caller_from(&parts.extensions),
            None => self.state.fallback_caller.clone(),
        }
    }

    /// Puts a call on record: over HTTP into the gate's slot (written when the answer is
    /// complete), over stdio written now. `Err` means the call is not on record and must not
    /// be answered with its result.
    fn record(
        &self,
        ctx: &RequestContext<RoleServer>,
        call: Call,
        time: SystemTime,
        started: Instant,
    ) -> Result<(), AuditError> {
        let parts = ctx.extensions.get::<axum::http::request::Parts>();
        if let Some(slot) = parts.and_then(|p| p.extensions.get::<AuditSlot>()) {
            slot.fill(call);
            return Ok(());
        }
        let (who, transport) = match parts {
            Some(p) => (self.state.who(&p.extensions), Transport::Mcp),
            None => (
                Who {
                    subject: Some(self.state.fallback_caller.subject.clone()),
                    client_id: None,
                },
                Transport::Stdio,
            ),
        };
        self.state.audit(time, &who, transport, call, started)
    }

    /// Records a call that is not a tool call; a failure becomes the protocol error answered.
    fn record_method(
        &self,
        ctx: &RequestContext<RoleServer>,
        call: Call,
        time: SystemTime,
        started: Instant,
    ) -> Result<(), McpError> {
        self.record(ctx, call, time, started)
            .map_err(|e| unaudited(&e))
    }
}

/// The protocol error of a call that could not be audited.
fn unaudited(e: &AuditError) -> McpError {
    let error = e.to_tool_error();
    McpError::internal_error(error.message.clone(), Some(error.to_json()))
}

/// The service for `/mcp`: rmcp's Streamable HTTP service — Host and Origin validation on (the
/// server's [`HostPolicy`](super::HostPolicy)), sessions for 2025-era clients, stateless
/// 2026-07-28 — behind [`end_session`] and [`prompt_cache_hints`].
pub fn service(state: Arc<AppState>, cancel: CancellationToken) -> Router {
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(state.hosts.rmcp_hosts())
        .with_allowed_origins(state.hosts.rmcp_origins())
        .enforce_origin_validation()
        .with_cancellation_token(cancel);
    let sessions = state.sessions.clone();
    let rmcp = StreamableHttpService::new(
        move || Ok(GovcatMcp::new(state.clone())),
        sessions.clone(),
        config,
    );
    Router::new()
        .fallback_service(rmcp)
        .layer(middleware::from_fn(prompt_cache_hints))
        .layer(middleware::from_fn_with_state(
            sessions.clone(),
            end_session,
        ))
        .layer(middleware::from_fn_with_state(
            sessions,
            super::sessions::admit_sessions,
        ))
}

pub use super::sessions::SESSION_HEADER;
/// The error kind of a `DELETE /mcp` for a session that is not open.
pub const SESSION_NOT_FOUND: &str = "SessionNotFound";

/// `DELETE /mcp` as the official clients expect it: 204 when the session was open (rmcp closes
/// it and answers 202), 404 when it was not. rmcp still sees every request first, so its Host,
/// Origin and protocol-version checks answer before this mapping does.
pub async fn end_session(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let session = super::sessions::session_of(request.headers()).map(str::to_string);
    let (true, Some(session)) = (request.method() == Method::DELETE, session) else {
        return next.run(request).await;
    };
    let was_open = sessions
        .has_session(&session.as_str().into())
        .await
        .unwrap_or(false);
    let response = next.run(request).await;
    if response.status() != StatusCode::ACCEPTED {
        return response;
    }
    if was_open {
        return StatusCode::NO_CONTENT.into_response();
    }
    let error = ToolError::new(
        SESSION_NOT_FOUND,
        format!("MCP session '{session}' is not open on this server (it was closed, expired, or began in another server process); start a new session with initialize"),
    )
    .with("session", &session);
    (StatusCode::NOT_FOUND, Json(error.to_json())).into_response()
}

/// Adds the cache hints of a rendered prompt to a `prompts/get` result: fixed for the life of
/// the process and the same for every caller. rmcp's `GetPromptResult` has no fields for them,
/// so both transports add them to the serialised answer: HTTP in [`prompt_cache_hints`], stdio
/// in [`Stdio`].
pub fn add_prompt_cache_hints(result: &mut Map<String, Value>) {
    result.insert("ttlMs".into(), json!(TOOL_LIST_TTL_MS));
    result.insert("cacheScope".into(), json!(tools::CacheScope::Public));
}

/// The ids of the `prompts/get` requests in an MCP POST body (one message or a batch).
fn prompt_get_ids(body: &[u8]) -> Vec<Value> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch,
        Ok(message) => vec![message],
        Err(_) => Vec::new(),
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("prompts/get"))
        .filter_map(|m| m.get("id").cloned())
        .collect()
}

/// `message` with the prompt cache hints added, when it is the result of one of `ids`.
fn hinted(mut message: Value, ids: &[Value]) -> Value {
    let answers = message.get("id").is_some_and(|id| ids.contains(id));
    if let (true, Some(Value::Object(result))) = (answers, message.get_mut("result")) {
        if result.contains_key("messages") {
            add_prompt_cache_hints(result);
        }
    }
    message
}

/// An MCP answer body (JSON, or the `data:` lines of SSE) with the prompt cache hints added to
/// the results of `ids`; other messages and lines are kept as they are.
pub fn with_prompt_cache_hints(body: &[u8], ids: &[Value]) -> Vec<u8> {
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        let out = match message {
            Value::Array(batch) => {
                Value::Array(batch.into_iter().map(|m| hinted(m, ids)).collect())
            }
            message => hinted(message, ids),
        };
        return serde_json::to_vec(&out).unwrap_or_else(|_| body.to_vec());
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return body.to_vec();
    };
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let parsed = line
            .strip_prefix("data:")
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok());
        match parsed {
            Some(message) => {
                let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
                out.push_str("data: ");
                out.push_str(&hinted(message, ids).to_string());
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// In front of rmcp: adds the cache hints to `prompts/get` answers (see
/// [`add_prompt_cache_hints`]). Other requests pass untouched and unbuffered.
pub async fn prompt_cache_hints(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // `guard::mcp_gate` has read and bounded the body already; this is a copy in memory.
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let error = super::common::request_too_large("one JSON-RPC message");
            return (StatusCode::PAYLOAD_TOO_LARGE, Json(error.to_json())).into_response();
        }
    };
    let ids = prompt_get_ids(&bytes);
    let response = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    if ids.is_empty() {
        return response;
    }
    let (mut head, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            let error = ToolError::new(
                "ResponseFailed",
                format!("the MCP answer could not be produced ({e}); retry the request"),
            );
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(error.to_json())).into_response();
        }
    };
    head.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(
        head,
        axum::body::Body::from(with_prompt_cache_hints(&body, &ids)),
    )
}

/// [`GovcatMcp`] as it is served over stdio: every request goes to the handler; the
/// `prompts/get` answer gains its cache hints (see [`add_prompt_cache_hints`]).
#[derive(Clone)]
pub struct Stdio(pub GovcatMcp);

impl Service<RoleServer> for Stdio {
    async fn handle_request(
        &self,
        request: ClientRequest,
        context: RequestContext<RoleServer>,
    ) -> Result<ServerResult, McpError> {
        let is_get_prompt = matches!(request, ClientRequest::GetPromptRequest(_));
        match Service::handle_request(&self.0, request, context).await? {
            ServerResult::GetPromptResult(result) if is_get_prompt => {
                let mut value = serde_json::to_value(&result).map_err(|e| {
                    McpError::internal_error(
                        format!("the prompt could not be serialised ({e}); report this to the govcat maintainers"),
                        None,
                    )
                })?;
                if let Some(object) = value.as_object_mut() {
                    add_prompt_cache_hints(object);
                }
                Ok(ServerResult::CustomResult(CustomResult::new(value)))
            }
            other => Ok(other),
        }
    }

    async fn handle_notification(
        &self,
        notification: rmcp::model::ClientNotification,
        context: NotificationContext<RoleServer>,
    ) -> Result<(), McpError> {
        Service::handle_notification(&self.0, notification, context).await
    }

    fn get_info(&self) -> ServerConfig {
        ServerHandler::get_info(&self.0)
    }

    fn supported_protocol_versions(&self) -> std::borrow::Cow<'static, [ProtocolVersion]> {
        ServerHandler::supported_protocol_versions(&self.0)
    }
}

/// Serves MCP on stdin/stdout until the client closes the stream.
pub async fn serve_stdio(state: Arc<AppState>) -> Result<(), ServerError> {
    let running = Stdio(GovcatMcp::new(state))
        .serve(rmcp::transport::stdio())
        .await
        .map_err(|e| {
            ServerError::runtime(
                "mcp-stdio",
                e,
                "start govcat mcp-stdio from an MCP client, which speaks first",
            )
        })?;
    running
        .waiting()
        .await
        .map_err(|e| ServerError::runtime("mcp-stdio", e, "restart the MCP client"))?;
    Ok(())
}

/// The MCP form of a tool's input schema: the shared schema with `domain` marked
/// `x-mcp-header: Domain`. The header rule needs a plain `string` property, so a `$ref` to a
/// string definition is inlined and an optional domain (`anyOf [string, null]`) becomes a
/// string that may be omitted (an omitted domain sends no header).
pub fn mcp_input_schema(schema: &Value) -> JsonObject {
    let mut obj = schema.as_object().cloned().unwrap_or_default();
    let defs = obj
        .get("$defs")
        .or_else(|| obj.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        if let Some(Value::Object(domain)) = props.get("domain") {
            if let Some(mut plain) = as_string_schema(domain, &defs) {
                plain.insert("x-mcp-header".into(), Value::String(DOMAIN_HEADER.into()));
                props.insert("domain".into(), Value::Object(plain));
            }
        }
    }
    obj
}

/// `prop` as an inline `{"type": "string", ...}` schema, if it admits only strings (and null).
fn as_string_schema(prop: &JsonObject, defs: &JsonObject) -> Option<JsonObject> {
    let mut out = prop.clone();
    if out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    if let Some(reference) = out.remove("$ref") {
        let name = reference.as_str()?.rsplit('/').next()?;
        for (k, v) in defs.get(name)?.as_object()? {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if let Some(Value::Array(alternatives)) = out.remove("anyOf") {
        let mut non_null = alternatives
            .iter()
            .filter(|a| a.get("type") != Some(&Value::String("null".into())));
        let only = non_null.next()?.as_object()?;
        if non_null.next().is_some() {
            return None;
        }
        for (k, v) in as_string_schema(only, defs)? {
            out.entry(k).or_insert(v);
        }
    }
    (out.get("type").and_then(Value::as_str) == Some("string")).then_some(out)
}

/// Every tool as MCP lists it, built once from `tools::specs()`.
pub fn mcp_tools() -> &'static [Tool] {
    static TOOLS: OnceLock<Vec<Tool>> = OnceLock::new();
    TOOLS.get_or_init(|| {
        tools::specs()
            .iter()
            .map(|s| {
                let output = s.output_schema.as_object().cloned().unwrap_or_default();
                Tool::new(s.name, s.description, mcp_input_schema(&s.input_schema))
                    .with_title(s.title)
                    .with_raw_output_schema(Arc::new(output))
                    .with_annotations(
                        ToolAnnotations::with_title(s.title)
                            .read_only(true)
                            .destructive(false)
                            .idempotent(true)
                            .open_world(false),
                    )
            })
            .collect()
    })
}

/// Every prompt as MCP lists it, built once from `prompts::PROMPTS`.
pub fn mcp_prompts() -> &'static [Prompt] {
    static PROMPTS: OnceLock<Vec<Prompt>> = OnceLock::new();
    PROMPTS.get_or_init(|| {
        prompts::PROMPTS
            .iter()
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|a| {
                        PromptArgument::new(a.name)
                            .with_description(a.description)
                            .with_required(a.required)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
            })
            .collect()
    })
}

/// A rendered prompt as MCP messages.
pub fn prompt_result(rendered: prompts::Rendered) -> GetPromptResult {
    let messages = rendered
        .messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                prompts::Role::User => rmcp::model::Role::User,
                prompts::Role::Assistant => rmcp::model::Role::Assistant,
            };
            PromptMessage::new_text(role, m.text)
        })
        .collect();
    GetPromptResult::new(messages).with_description(rendered.description)
}

/// A prompt that cannot be rendered: invalid params, the error object as data.
fn prompt_error(e: PromptError) -> McpError {
    let error = ToolError::from(e);
    McpError::invalid_params(error.message.clone(), Some(error.to_json()))
}

fn is_2026_or_later(ctx: &RequestContext<RoleServer>) -> bool {
    ctx.protocol_version()
        .is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str())
}

/// A tool failure: `isError` with the error object as the text block, and no
/// `structuredContent` — strict clients (MCP Inspector) check `structuredContent` against the
/// tool's `outputSchema` even on an error, and an error object is not the tool's output.
fn tool_error(e: &ToolError) -> CallToolResult {
    CallToolResult::error(vec![rmcp::model::ContentBlock::text(
        e.to_json().to_string(),
    )])
}

/// The MRTR form of an ask: one form elicitation with an `enum` of allowed values per key.
pub fn ask_result(ask: &InputRequired) -> Result<InputRequiredResult, McpError> {
    let mut properties = Map::new();
    for m in &ask.missing {
        properties.insert(
            m.key.0.clone(),
            json!({
                "type": "string",
                "title": m.key.0,
                "description": m.description,
                "enum": m.allowed,
            }),
        );
    }
    let required: Vec<&str> = ask.missing.iter().map(|m| m.key.0.as_str()).collect();
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": properties,
        "required": required,
    }))
    .map_err(|e| {
        McpError::internal_error(
            format!("the input request for {required:?} could not be built ({e}); report this to the govcat maintainers"),
            None,
        )
    })?;
    let request = InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: ask.message.clone(),
            requested_schema: schema,
        },
    ));
    Ok(InputRequiredResult::from_input_requests(
        InputRequests::from([(ASK_KEY.to_string(), request)]),
    ))
}

/// The ask as a tool error, for clients whose protocol cannot carry `input_required`.
pub fn ask_as_error(ask: &InputRequired, protocol: &str) -> ToolError {
    ToolError::new(
        "InputRequired",
        format!(
            "{}; protocol {protocol} cannot carry an input request, so call again with every key set to one of its allowed values (listed in `missing`)",
            ask.message
        ),
    )
    .with("missing", &ask.missing)
}

/// What the client answered to an ask.
#[derive(Debug, PartialEq)]
pub enum Answer {
    /// The answers were merged into the arguments.
    Accepted,
    /// The client declined or cancelled (`action`).
    Refused(String),
}

/// Merges the answers of a retry into `args.tags`. A key answered with a value other than the
/// one already given is a conflict, not an override.
pub fn merge_answers(
    args: &mut Map<String, Value>,
    responses: &InputResponses,
) -> Result<Answer, ToolError> {
    let response = responses.get(ASK_KEY).ok_or_else(|| {
        ToolError::new(
            "InvalidArguments",
            format!(
                "the retry carries no answer under '{ASK_KEY}' (it has: {}); answer the input request, or call again with every tag key set",
                responses.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    let action = response
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("(none)");
    if action != "accept" {
        return Ok(Answer::Refused(action.to_string()));
    }
    let content = response
        .get("content")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ToolError::new(
                "InvalidArguments",
                "the accepted answer has no `content` object; answer each missing key with one of its allowed values",
            )
        })?;
    let tags = args
        .entry(ASK_ARGUMENT)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tags) = tags else {
        return Err(ToolError::new(
            "InvalidArguments",
            format!(
                "argument '{ASK_ARGUMENT}' is not an object; give it as {{\"key\": \"value\"}}"
            ),
        ));
    };
    for (key, value) in content {
        let Some(value) = value.as_str() else {
            return Err(ToolError::new(
                "InvalidArguments",
                format!("the answer for '{key}' is {value}, not a string; answer with one of the key's allowed values"),
            )
            .with("key", key));
        };
        match tags.get(key).and_then(Value::as_str) {
            Some(given) if given != value => {
                return Err(OntologyError::ConflictingValues {
                    key: key.clone(),
                    values: vec![given.to_string(), value.to_string()],
                }
                .into())
            }
            _ => {
                tags.insert(key.clone(), Value::String(value.to_string()));
            }
        }
    }
    Ok(Answer::Accepted)
}

/// A dataset URI's domain and table, if `uri` is one.
pub fn parse_dataset_uri(uri: &str) -> Option<(String, String)> {
    let rest = uri.strip_prefix("govcat://domain/")?;
    let (domain, table) = rest.split_once("/dataset/")?;
    let ok = |s: &str| !s.is_empty() && !s.contains('/');
    (ok(domain) && ok(table)).then(|| (domain.to_string(), table.to_string()))
}

fn read_error(uri: &str, e: &ToolError) -> McpError {
    let data = Some(e.to_json());
    let message = format!("{uri}: {}", e.message);
    match e.kind.as_str() {
        "DomainNotFound" | "DatasetNotFound" => McpError::resource_not_found(message, data),
        "InvalidArguments" | "InsufficientScope" => McpError::invalid_params(message, data),
        _ => McpError::internal_error(message, data),
    }
}

/// Completion values for one template argument, from the source, scoped to the caller.
fn completion_values(
    state: &AppState,
    caller: &Caller,
    argument: &str,
    domain_hint: Option<&str>,
) -> Result<Vec<String>, ToolError> {
    let ctx = state.context();
    let readable_domains = || -> Result<Vec<Domain>, ToolError> {
        Ok(ctx
            .source
            .list_domains(caller)?
            .into_iter()
            .map(|d| d.name)
            .filter(|d| caller.may_read(d))
            .collect())
    };
    match argument {
        "domain" => Ok(readable_domains()?.into_iter().map(|d| d.0).collect()),
        "role" => Ok(ctx.source.list_roles(caller)?),
        "table" => {
            let domains = match domain_hint {
                Some(d) => vec![Domain(d.to_string())],
                None => readable_domains()?,
            };
            let mut tables = BTreeSet::new();
            for d in domains.iter().filter(|d| caller.may_read(d)) {
                match ctx.source.list_tables(caller, d) {
                    Ok(ts) => tables.extend(ts.into_iter().map(|t| t.0)),
                    // A domain typed so far that is not in the catalog completes to nothing.
                    Err(CatalogError::DomainNotFound { .. }) => {}
                    Err(e) => return Err(e.into()),
                }
            }
            Ok(tables.into_iter().collect())
        }
        other => Err(ToolError::new(
            "InvalidArguments",
            format!("'{other}' has no completion values; complete one of {COMPLETABLE:?} (or a prompt's role)"),
        )),
    }
}

/// Keeps the values starting with `prefix` (case-insensitive), sorted, at most
/// [`MAX_COMPLETIONS`].
pub fn completion_info(mut values: Vec<String>, prefix: &str) -> CompletionInfo {
    let prefix = prefix.to_lowercase();
    values.retain(|v| v.to_lowercase().starts_with(&prefix));
    values.sort();
    values.dedup();
    let total = values.len();
    values.truncate(MAX_COMPLETIONS);
    let mut info = CompletionInfo::default();
    info.values = values;
    info.total = Some(u32::try_from(total).unwrap_or(u32::MAX));
    info.has_more = Some(total > MAX_COMPLETIONS);
    info
}

impl ServerHandler for GovcatMcp {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_resources()
                .enable_prompts()
                .enable_completions()
                .build(),
        );
        info.server_info = Implementation::new("govcat", env!("CARGO_PKG_VERSION"));
        info.instructions = Some(INSTRUCTIONS.into());
        info
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        mcp_tools().iter().find(|t| t.name == name).cloned()
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let call = Call::method("tools/list", json!({}), AuditOutcome::Ok)
            .with_count(mcp_tools().len() as u64);
        self.record_method(&ctx, call, time, started)?;
        Ok(ListToolsResult::with_all_items(mcp_tools().to_vec())
            .with_ttl_ms(TOOL_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let name = request.name.to_string();
        let mut args = request.arguments.unwrap_or_default();
        if tools::spec(&name).is_none() {
            let known: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
            let unknown = ToolError::new(
                "UnknownTool",
                format!("unknown tool '{name}'; tools: {}", known.join(", ")),
            )
            .with("tool", &name)
            .with("tools", &known);
            let outcome = Outcome::Err(unknown.clone());
            let call = Call::tool(&name, &Value::Object(args), &outcome, None);
            self.record_method(&ctx, call, time, started)?;
            // The MCP spec makes an unknown tool a protocol error, not a tool result.
            return Err(McpError::invalid_params(
                unknown.message.clone(),
                Some(unknown.to_json()),
            ));
        }
        let caller = self.caller(&ctx);
        let mut refused = None;
        let merged = match &request.input_responses {
            Some(responses) => match merge_answers(&mut args, responses) {
                Ok(Answer::Accepted) => Ok(()),
                Ok(Answer::Refused(action)) => {
                    refused = Some(action);
                    Ok(())
                }
                Err(e) => Err(e),
            },
            None => Ok(()),
        };
        let args = Value::Object(args);
        let outcome = match merged {
            Ok(()) => call_tool(&self.state, "mcp", caller, &name, args.clone()).await,
            Err(e) => Outcome::Err(e),
        };
        // A declined ask ends the call with an error, which is what goes on record.
        let outcome = match (outcome, refused) {
            (Outcome::InputRequired(ask), Some(action)) => Outcome::Err(
                ToolError::new(
                    "InputDeclined",
                    format!(
                        "the input request was answered with '{action}', so {}; call again with every key set",
                        ask.message
                    ),
                )
                .with("missing", &ask.missing),
            ),
            (outcome, _) => outcome,
        };
        let served = self.state.served_snapshot();
        let call = Call::tool(&name, &args, &outcome, served.as_deref());
        if let Err(e) = self.record(&ctx, call, time, started) {
            return Ok(tool_error(&e.to_tool_error()).into());
        }
        Ok(match outcome {
            Outcome::Ok(value) => CallToolResult::structured(value).into(),
            Outcome::Err(e) => tool_error(&e).into(),
            Outcome::InputRequired(ask) if is_2026_or_later(&ctx) => ask_result(&ask)?.into(),
            Outcome::InputRequired(ask) => {
                let protocol = ctx
                    .protocol_version()
                    .map_or_else(|| "(unknown)".to_string(), |v| v.as_str().to_string());
                tool_error(&ask_as_error(&ask, &protocol)).into()
            }
        })
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let call = Call::method("resources/list", json!({}), AuditOutcome::Ok).with_count(1);
        self.record_method(&ctx, call, time, started)?;
        let ontology = Resource::new(ONTOLOGY_URI, "lf-tags")
            .with_title("LF-tag ontology")
            .with_description(
                "The closed tag vocabulary (5 keys, 21 values) with what each value means and implies; owned by governance.",
            )
            .with_mime_type("application/json");
        // The list itself never changes while the process runs; the ontology's content is
        // re-read at each `resources/read`.
        Ok(ListResourcesResult::with_all_items(vec![ontology])
            .with_ttl_ms(TOOL_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_resource_templates(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListResourceTemplatesResult, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let call =
            Call::method("resources/templates/list", json!({}), AuditOutcome::Ok).with_count(1);
        self.record_method(&ctx, call, time, started)?;
        let template = ResourceTemplate::new(DATASET_TEMPLATE, "dataset")
            .with_title("Dataset (live read)")
            .with_description(
                "One dataset read live from the catalog source: the get_dataset output (metadata, contract, columns with four-state LF-tags). Complete `domain`, then `table`.",
            )
            .with_mime_type("application/json");
        Ok(ListResourceTemplatesResult::with_all_items(vec![template])
            .with_ttl_ms(TOOL_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn list_prompts(
        &self,
        _request: Option<PaginatedRequestParams>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ListPromptsResult, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let call = Call::method("prompts/list", json!({}), AuditOutcome::Ok)
            .with_count(mcp_prompts().len() as u64);
        self.record_method(&ctx, call, time, started)?;
        Ok(ListPromptsResult::with_all_items(mcp_prompts().to_vec())
            .with_ttl_ms(TOOL_LIST_TTL_MS)
            .with_cache_scope(CacheScope::Public))
    }

    async fn get_prompt(
        &self,
        request: GetPromptRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<GetPromptResponse, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let arguments = request.arguments.unwrap_or_default();
        let audited = json!({"name": request.name, "arguments": arguments});
        let got = |outcome: AuditOutcome| Call::method("prompts/get", audited.clone(), outcome);
        match prompts::render(&request.name, &arguments) {
            Ok(rendered) => {
                let count = rendered.messages.len() as u64;
                self.record_method(&ctx, got(AuditOutcome::Ok).with_count(count), time, started)?;
                Ok(prompt_result(rendered).into())
            }
            Err(e) => {
                self.record_method(
                    &ctx,
                    got(AuditOutcome::Error).with_error(e.kind()),
                    time,
                    started,
                )?;
                Err(prompt_error(e))
            }
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let uri = request.uri;
        let read =
            |outcome: AuditOutcome| Call::method("resources/read", json!({"uri": uri}), outcome);
        if uri == ONTOLOGY_URI {
            let context = self.state.context();
            let text = match serde_json::to_string_pretty(&context.ontology) {
                Ok(text) => text,
                Err(e) => {
                    self.record_method(
                        &ctx,
                        read(AuditOutcome::Error).with_error("InternalError"),
                        time,
                        started,
                    )?;
                    return Err(McpError::internal_error(format!("{uri}: the ontology could not be serialised ({e}); report this to the govcat maintainers"), None));
                }
            };
            self.record_method(&ctx, read(AuditOutcome::Ok).with_count(1), time, started)?;
            return Ok(ReadResourceResult::new(vec![
                ResourceContents::text(text, &uri).with_mime_type("application/json")
            ])
            .with_ttl_ms(TTL_FLOOR.as_millis() as u64)
            .with_cache_scope(CacheScope::Public)
            .into());
        }
        let Some((domain, table)) = parse_dataset_uri(&uri) else {
            self.record_method(
                &ctx,
                read(AuditOutcome::Error).with_error("UnknownResource"),
                time,
                started,
            )?;
            return Err(McpError::resource_not_found(
                format!("no resource '{uri}'; resources are {ONTOLOGY_URI} and {DATASET_TEMPLATE}"),
                Some(json!({"error": "UnknownResource", "uri": uri})),
            ));
        };
        let caller = self.caller(&ctx);
        let args = json!({"domain": domain, "table": table});
        let outcome = call_tool(&self.state, "mcp", caller, "get_dataset", args.clone()).await;
        let served = self.state.served_snapshot();
        // A dataset read is a get_dataset call on record as what it was asked as.
        let call = Call {
            method: "resources/read".into(),
            tool: None,
            arguments: json!({"uri": uri}),
            ..Call::tool("get_dataset", &args, &outcome, served.as_deref())
        };
        self.record_method(&ctx, call, time, started)?;
        match outcome {
            Outcome::Ok(value) => {
                let ttl = value.get("ttlMs").and_then(Value::as_u64).unwrap_or(0);
                Ok(ReadResourceResult::new(vec![ResourceContents::text(
                    value.to_string(),
                    &uri,
                )
                .with_mime_type("application/json")])
                .with_ttl_ms(ttl)
                .with_cache_scope(CacheScope::Private)
                .into())
            }
            Outcome::Err(e) => Err(read_error(&uri, &e)),
            Outcome::InputRequired(ask) => Err(McpError::internal_error(
                format!("{uri}: reading a dataset asked for input ({}); report this to the govcat maintainers", ask.message),
                None,
            )),
        }
    }

    async fn complete(
        &self,
        request: CompleteRequestParams,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CompleteResult, McpError> {
        let (time, started) = (SystemTime::now(), Instant::now());
        let arguments = serde_json::to_value(&request).unwrap_or_else(|_| json!({}));
        let completed =
            |outcome: AuditOutcome| Call::method("completion/complete", arguments.clone(), outcome);
        // The dataset template's arguments and the prompts' completable ones have values;
        // anything else (another template, another argument) completes to nothing rather than
        // failing the request.
        let argument_name = request.argument.name.as_str();
        let completable = match &request.r#ref {
            Reference::Resource(r) => {
                r.uri == DATASET_TEMPLATE && COMPLETABLE.contains(&argument_name)
            }
            Reference::Prompt(p) => prompts::spec(&p.name)
                .and_then(|spec| spec.argument(argument_name))
                .is_some_and(|a| a.completable),
            _ => false,
        };
        if !completable {
            self.record_method(
                &ctx,
                completed(AuditOutcome::Empty).with_count(0),
                time,
                started,
            )?;
            return Ok(CompleteResult::new(completion_info(Vec::new(), "")));
        }
        let caller = self.caller(&ctx);
        let argument = request.argument.name.clone();
        let prefix = request.argument.value.clone();
        let domain_hint = request
            .context
            .as_ref()
            .and_then(|c| c.get_argument("domain"))
            .cloned();
        let state = self.state.clone();
        let values = tokio::task::spawn_blocking(move || {
            completion_values(&state, &caller, &argument, domain_hint.as_deref())
        })
        .await
        .map_err(|e| ToolError::new("InternalError", format!("completion stopped ({e}); retry")))
        .and_then(|v| v);
        match values {
            Ok(values) => {
                let info = completion_info(values, &prefix);
                let outcome = if info.values.is_empty() {
                    AuditOutcome::Empty
                } else {
                    AuditOutcome::Ok
                };
                let count = info.values.len() as u64;
                self.record_method(&ctx, completed(outcome).with_count(count), time, started)?;
                Ok(CompleteResult::new(info))
            }
            Err(e) => {
                self.record_method(
                    &ctx,
                    completed(AuditOutcome::Error).with_error(e.kind.clone()),
                    time,
                    started,
                )?;
                if e.kind == "InvalidArguments" {
                    Err(McpError::invalid_params(
                        e.message.clone(),
                        Some(e.to_json()),
                    ))
                } else {
                    Err(McpError::internal_error(
                        e.message.clone(),
                        Some(e.to_json()),
                    ))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ontology::{MissingKey, TagKey, TagValue};

    #[test]
    fn domain_arguments_carry_the_routing_header_and_nothing_else_does() {
        for tool in mcp_tools() {
            let Some(props) = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (name, prop) in props {
                if name == "domain" {
                    assert_eq!(prop["type"], "string", "{}", tool.name);
                    assert_eq!(prop["x-mcp-header"], "Domain", "{}", tool.name);
                } else {
                    assert_eq!(prop.get("x-mcp-header"), None, "{}.{name}", tool.name);
                }
            }
        }
        let get_dataset = mcp_tools()
            .iter()
            .find(|t| t.name == "get_dataset")
            .unwrap();
        assert_eq!(
            Value::Object(
                get_dataset.input_schema["properties"]["domain"]
                    .as_object()
                    .unwrap()
                    .clone()
            ),
            json!({
                "description": "Domain name, e.g. `policy`.",
                "type": "string",
                "x-mcp-header": "Domain"
            })
        );
    }

    #[test]
    fn an_optional_domain_becomes_an_omittable_string() {
        let schema = json!({
            "type": "object",
            "properties": {
                "domain": {"description": "Target domain.", "anyOf": [{"$ref": "#/$defs/Domain"}, {"type": "null"}], "default": null},
                "domains": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Domain"}}
            },
            "$defs": {"Domain": {"description": "A domain name.", "type": "string"}}
        });
        let out = mcp_input_schema(&schema);
        assert_eq!(
            out["properties"]["domain"],
            json!({"description": "Target domain.", "type": "string", "x-mcp-header": "Domain"})
        );
        assert_eq!(
            out["properties"]["domains"],
            schema["properties"]["domains"]
        );
    }

    fn ask() -> InputRequired {
        InputRequired {
            message: "the tag set lacks residency; give one value for each".into(),
            missing: vec![MissingKey {
                key: TagKey("residency".into()),
                description: "where the data is stored".into(),
                allowed: ["eu", "ch"].map(|v| TagValue(v.into())).to_vec(),
            }],
        }
    }

    #[test]
    fn an_ask_becomes_one_form_elicitation_with_an_enum_per_missing_key() {
        let result = serde_json::to_value(ask_result(&ask()).unwrap()).unwrap();
        assert_eq!(
            result,
            json!({
                "resultType": "input_required",
                "inputRequests": {
                    "missing_tags": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "the tag set lacks residency; give one value for each",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "residency": {
                                        "type": "string",
                                        "title": "residency",
                                        "description": "where the data is stored",
                                        "enum": ["eu", "ch"]
                                    }
                                },
                                "required": ["residency"]
                            }
                        }
                    }
                }
            })
        );
    }

    #[test]
    fn accepted_answers_fill_the_tags_and_a_different_value_is_a_conflict() {
        let mut args = Map::new();
        args.insert("tags".into(), json!({"sensitivity": "high"}));
        let answers = InputResponses::from([(
            ASK_KEY.to_string(),
            json!({"action": "accept", "content": {"residency": "eu"}}),
        )]);
        assert_eq!(merge_answers(&mut args, &answers), Ok(Answer::Accepted));
        assert_eq!(
            args["tags"],
            json!({"sensitivity": "high", "residency": "eu"})
        );

        let conflicting = InputResponses::from([(
            ASK_KEY.to_string(),
            json!({"action": "accept", "content": {"sensitivity": "public"}}),
        )]);
        let e = merge_answers(&mut args, &conflicting).unwrap_err();
        assert_eq!(e.kind, "ConflictingTagValues");
        assert_eq!(e.details["values"], json!(["high", "public"]));

        let declined = InputResponses::from([(ASK_KEY.to_string(), json!({"action": "decline"}))]);
        assert_eq!(
            merge_answers(&mut args, &declined),
            Ok(Answer::Refused("decline".into()))
        );
    }

    #[test]
    fn prompt_answers_gain_cache_hints_and_nothing_else_changes() {
        let ids = prompt_get_ids(
            br#"[{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}},
                 {"jsonrpc":"2.0","id":5,"method":"tools/list"}]"#,
        );
        assert_eq!(ids, vec![json!(4)]);
        let prompt = json!({"jsonrpc": "2.0", "id": 4, "result": {"messages": []}});
        let other = json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": []}});
        let hinted_prompt = json!({"jsonrpc": "2.0", "id": 4,
            "result": {"messages": [], "ttlMs": 300000, "cacheScope": "public"}});
        // A JSON body (one message or a batch).
        let body = serde_json::to_vec(&json!([prompt, other])).unwrap();
        let out: Value = serde_json::from_slice(&with_prompt_cache_hints(&body, &ids)).unwrap();
        assert_eq!(out, json!([hinted_prompt, other]));
        // SSE: the priming event and other lines are kept byte for byte.
        let sse = format!("data: \nid: 0/0\nretry: 3000\n\ndata: {prompt}\nid: 0/1\n\n");
        let out = String::from_utf8(with_prompt_cache_hints(sse.as_bytes(), &ids)).unwrap();
        assert_eq!(
            out,
            format!("data: \nid: 0/0\nretry: 3000\n\ndata: {hinted_prompt}\nid: 0/1\n\n")
        );
        // An error answer to a prompts/get has no result to hint.
        let error = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "m"}});
        let body = serde_json::to_vec(&error).unwrap();
        let out: Value = serde_json::from_slice(&with_prompt_cache_hints(&body, &ids)).unwrap();
        assert_eq!(out, error);
    }

    #[test]
    fn dataset_uris_parse_and_others_do_not() {
        assert_eq!(
            parse_dataset_uri("govcat://domain/policy/dataset/customer"),
            Some(("policy".into(), "customer".into()))
        );
        assert_eq!(parse_dataset_uri("govcat://domain/policy/dataset/"), None);
        assert_eq!(parse_dataset_uri("govcat://domain/a/b/dataset/c"), None);
        assert_eq!(parse_dataset_uri(ONTOLOGY_URI), None);
    }

    #[test]
    fn completion_filters_by_prefix_sorts_and_caps() {
        let info = completion_info(
            vec!["policy".into(), "payments".into(), "claims".into()],
            "P",
        );
        assert_eq!(info.values, vec!["payments", "policy"]);
        assert_eq!(info.total, Some(2));
        assert_eq!(info.has_more, Some(false));
        let many: Vec<String> = (0..150).map(|i| format!("t{i:03}")).collect();
        let info = completion_info(many, "t");
        assert_eq!(info.values.len(), 100);
        assert_eq!(info.total, Some(150));
        assert_eq!(info.has_more, Some(true));
    }
}
