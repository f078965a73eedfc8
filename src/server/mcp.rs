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
use std::sync::{Arc, Mutex};
use std::time::{Instant, SystemTime};

use axum::extract::{Request, State};
use axum::http::{Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::{Json, Router};
use rmcp::model::{
    CacheScope, CallToolRequestParams, CallToolResponse, CallToolResult, ClientRequest,
    CompleteRequestParams, CompleteResult, CompletionInfo, CustomResult, GetPromptRequestParams,
    GetPromptResponse, Implementation, ListPromptsResult, ListResourceTemplatesResult,
    ListResourcesResult, ListToolsResult, PaginatedRequestParams, ProtocolVersion,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, Reference, Resource,
    ResourceContents, ResourceTemplate, ServerCapabilities, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::transport::streamable_http_server::session::SessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData as McpError, RoleServer, ServerHandler, Service, ServiceExt};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::common::TOOL_LIST_TTL_MS;
use super::sessions::Sessions;
use super::{call_tool, AppState, ServerError};
use crate::audit::{AuditError, AuditOutcome, Call, Transport, Who};
use crate::catalog::{CatalogError, Domain};
use crate::prompts::{self, PromptError};
use crate::tools::{self, Caller, Outcome, ToolError, TTL_FLOOR};

mod ask;
mod hints;
mod listing;
pub use ask::{ask_as_error, ask_result, merge_answers, Answer};
pub use hints::{add_prompt_cache_hints, prompt_cache_hints, with_prompt_cache_hints};
pub use listing::{mcp_input_schema, mcp_prompts, mcp_tools, prompt_result};

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
                    ..Who::default()
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
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(state.hosts.rmcp_hosts())
        .with_allowed_origins(state.hosts.rmcp_origins())
        .enforce_origin_validation()
        .with_cancellation_token(cancel);
    // Sealed sessions (--session-key-file) are restored from what their id carries.
    config.session_store = state.sessions.store();
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

/// Serves MCP on stdin/stdout until the client closes the stream and every request read has
/// been answered ([`super::stdio`]).
pub async fn serve_stdio(state: Arc<AppState>) -> Result<(), ServerError> {
    let (stdin, stdout) = rmcp::transport::stdio();
    let running = Stdio(GovcatMcp::new(state))
        .serve(super::stdio::transport(
            stdin,
            stdout,
            super::stdio::QUIET_CAP,
        ))
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
        info.instructions = Some(tools::instructions().into());
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
