//! The service: one axum app serving MCP over Streamable HTTP at `/mcp` (rmcp), a small REST
//! API at `/v1/tools`, `/healthz`, `/readyz` and `/metrics`; and the same MCP server over stdio.
//! Every transport calls tools through the one dispatcher, [`tools::call`], run on the blocking
//! pool because a tool may read files or run the model.
//!
//! This module adapts and never decides: schemas, validation and envelopes belong to `tools`;
//! who the caller is belongs to `auth` (`guard::authorise` puts a [`Caller`] into the request
//! extensions, which is read here). With `--auth jwt` every request but health, metrics and
//! the RFC 9728 metadata needs a bearer token; with `--auth none` every request is the local
//! operator, so the server refuses to listen anywhere but on a loopback address.
//!
//! Every call is audited (see [`crate::audit`]) on every transport; a call whose audit line
//! cannot be written is answered with an error (HTTP 503, or an `isError` result on stdio),
//! never with its result.
//!
//! # Layout
//! The submodules depend down this list, never up it; this file (the shared state, the tool
//! call, the entry points) uses them all, and they use it.
//! - [`portable`]: sealed MCP session ids (`--session-key-file`): what a session carries so
//!   that another replica sharing the key restores it, and the store rmcp restores from.
//! - [`args`]: the options of `govcat serve` and `govcat mcp-stdio`, with their value parsers.
//! - [`hosts`]: the Hosts and Origins the HTTP server answers, and where it may listen.
//! - [`conn`]: the accept loop — read timeouts of headers and bodies, the connection cap, the
//!   drain and grace of a shutdown.
//! - [`common`]: what the HTTP transports share — the HTTP status of an error kind, the error
//!   response with its challenge, the body-size refusal, the tool list's `ttlMs`.
//! - [`metrics`]: the Prometheus counters and gauges and their text rendering.
//! - [`sessions`]: MCP sessions with caps (total, per principal, idle time) in front of rmcp's
//!   session manager; who is evicted at a cap and what a refused `initialize` is answered;
//!   sealing a new session's id and unsealing (restoring) a moved one.
//! - [`stdio`]: stdin and stdout for `mcp-stdio`, the end of stdin held back until every
//!   request read is answered (rmcp alone gives running calls 5 s).
//! - [`mcp`]: the MCP adapter (rmcp) over Streamable HTTP and stdio, and the [`mcp::AuditSlot`]
//!   its handler fills for the gate.
//! - [`guard`]: what stands between a request and a handler — token, bound on requests in
//!   flight, the scope gate in front of rmcp, the audit of MCP calls over HTTP.
//! - [`rest`]: the REST mirror, health, readiness and metrics routes, and the axum app that
//!   nests `/mcp` behind the guard.
//! - [`supply`]: where the served snapshot comes from — loaded at start, rebuilt on
//!   `--refresh`/`--watch`, fetched by `--follow` — each swapped in atomically.

mod args;
pub mod common;
pub mod conn;
pub mod guard;
mod hosts;
pub mod mcp;
pub mod metrics;
pub mod portable;
pub mod rest;
pub mod sessions;
pub mod stdio;
mod supply;

pub use args::*;
pub use hosts::*;
pub use supply::*;

use std::net::{SocketAddr, ToSocketAddrs};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use arc_swap::ArcSwap;
use std::time::{Duration, Instant, SystemTime};

use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use crate::app::{self, report_error, Options};
use crate::audit::{AuditError, AuditEvent, AuditSink, Call, Transport, Who};
use crate::auth::{self, AuthConfig, Authenticator, JwksSource, Principal};
use crate::embed::Embedder;
use crate::index::{self, SnapshotHandle};
use crate::sync::follow::Follow;
use crate::tools::{self, Caller, Context, Outcome, ToolError};
use metrics::{
    AuditGauge, CallOutcome, Gauges, InFlightGauge, Metrics, SessionGauge, SnapshotGauge,
};

/// Environment variable holding the stdio caller's scopes.
pub const SCOPES_ENV: &str = "GOVCAT_SCOPES";

/// Why the server could not start.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("--listen {listen}: {problem}; give IP:PORT, e.g. 127.0.0.1:8080")]
    BadListen { listen: String, problem: String },
    #[error("--listen {listen} resolves to {addr}, which is not a loopback address; --auth none serves every request as the local operator, so it binds only to 127.0.0.1, ::1 or localhost")]
    NotLoopback { listen: String, addr: SocketAddr },
    #[error("cannot listen on {addr}: {problem}; pick another port (0 picks a free one) or stop the process using it")]
    Bind { addr: SocketAddr, problem: String },
    #[error("{SCOPES_ENV}: '{token}' is not a scope; give space-separated scopes of the form catalog:<domain>:read, or unset {SCOPES_ENV} to read every domain")]
    BadScope { token: String },
    #[error("--allowed-host '{host}' is not a host name or host:port; give e.g. catalog.internal or catalog.internal:8443")]
    BadAllowedHost { host: String },
    #[error("--auth jwt needs {flag} ({meaning}); pass it, or serve with --auth none on a loopback address")]
    AuthFlagMissing {
        flag: &'static str,
        meaning: &'static str,
    },
    #[error("{flag} applies only to --auth jwt; add --auth jwt, or drop {flag} (with --auth none no token is checked)")]
    AuthFlagWithoutJwt { flag: &'static str },
    #[error("--auth jwt: {0}")]
    Auth(#[from] auth::AuthConfigError),
    #[error(transparent)]
    Audit(#[from] AuditError),
    /// `--follow` cannot start (its location, store or flags); the message has the next step.
    #[error("--follow: {0}")]
    Follow(String),
    #[error("{what}: {problem}; {next}")]
    Runtime {
        what: String,
        problem: String,
        next: String,
    },
}

impl ServerError {
    fn runtime(what: &str, problem: impl std::fmt::Display, next: &str) -> ServerError {
        ServerError::Runtime {
            what: what.into(),
            problem: problem.to_string(),
            next: next.into(),
        }
    }
}

/// Everything a request handler needs; one per server, shared as `Arc<AppState>`.
pub struct AppState {
    context: SharedContext,
    /// Why retrieval (the model and the snapshot) is not part of the context, if it is not.
    pub retrieval_unavailable: Option<String>,
    /// The caller of a request that carries no [`Caller`] extension (set by the auth mode).
    pub fallback_caller: Caller,
    pub hosts: HostPolicy,
    pub metrics: Metrics,
    pub started: Instant,
    /// `--auth jwt`: the token validator; `None` under `--auth none` and on stdio.
    pub auth: Option<Arc<Authenticator>>,
    /// `--auth jwt`: the RFC 9728 metadata served at `/.well-known/oauth-protected-resource`.
    pub resource_metadata: Option<serde_json::Value>,
    pub audit: AuditSink,
    /// The bound on requests in flight (`--max-concurrent-requests`).
    pub in_flight: guard::InFlight,
    /// MCP sessions and their caps (`--max-sessions`, `--max-sessions-per-principal`,
    /// `--session-idle-timeout`).
    pub sessions: Arc<sessions::Sessions>,
    /// `--follow`: the follower whose status `/readyz` and `/metrics` show.
    pub follow: Option<Arc<Follow>>,
    /// Read timeouts, connection cap, drain and grace (`serve` flags).
    pub conn_limits: conn::ConnLimits,
    /// Set on SIGTERM/SIGINT: `/readyz` answers 503 `draining` from then on.
    pub draining: std::sync::atomic::AtomicBool,
    /// `--public-probe-details`: `/readyz` shows its details to callers without a token.
    pub public_probe_details: bool,
    /// `--trusted-proxy`: whose `X-Forwarded-For` the audit line believes.
    pub trusted_proxies: conn::TrustedProxies,
}

impl AppState {
    pub fn new(
        context: Context,
        fallback_caller: Caller,
        hosts: HostPolicy,
        audit: AuditSink,
    ) -> AppState {
        AppState {
            context: Arc::new(ArcSwap::from_pointee(context)),
            retrieval_unavailable: None,
            fallback_caller,
            hosts,
            metrics: Metrics::default(),
            started: Instant::now(),
            auth: None,
            resource_metadata: None,
            audit,
            in_flight: guard::InFlight::new(crate::limits::DEFAULT_MAX_CONCURRENT_REQUESTS),
            sessions: Arc::new(sessions::Sessions::new(sessions::SessionLimits::default())),
            follow: None,
            conn_limits: conn::ConnLimits::default(),
            draining: std::sync::atomic::AtomicBool::new(false),
            public_probe_details: false,
            trusted_proxies: conn::TrustedProxies::default(),
        }
    }

    /// Bounds MCP sessions by `limits` (see [`sessions`]).
    pub fn with_session_limits(self, limits: sessions::SessionLimits) -> AppState {
        self.with_sessions(sessions::Sessions::new(limits))
    }

    /// Serves MCP sessions from `sessions` (its bounds, and its keys if sessions are sealed).
    pub fn with_sessions(mut self, sessions: sessions::Sessions) -> AppState {
        self.sessions = Arc::new(sessions);
        self
    }

    /// Answers at most `max` requests to `/mcp` and `/v1/*` at once (see [`guard::InFlight`]).
    pub fn with_max_concurrent_requests(mut self, max: usize) -> AppState {
        self.in_flight = guard::InFlight::new(max);
        self
    }

    /// Turns on token validation and the RFC 9728 metadata.
    pub fn with_auth(mut self, authenticator: Arc<Authenticator>) -> AppState {
        self.resource_metadata = Some(authenticator.config().metadata());
        self.auth = Some(authenticator);
        self
    }

    /// The URL of this server's RFC 9728 metadata (`--auth jwt` only).
    pub fn resource_metadata_url(&self) -> Option<&str> {
        self.auth
            .as_ref()
            .map(|a| a.config().resource_metadata_url.as_str())
    }

    /// Who made a request, for the audit line: the token's principal, else the caller; and
    /// where it came from ([`conn::Peer`]).
    pub fn who(&self, extensions: &axum::http::Extensions) -> Who {
        let mut who = match extensions.get::<Principal>() {
            Some(p) => Who {
                subject: Some(p.caller.subject.clone()),
                client_id: p.client_id.clone(),
                ..Who::default()
            },
            None => Who {
                subject: Some(self.caller_from(extensions).subject),
                ..Who::default()
            },
        };
        conn::Peer::note(extensions, &mut who);
        who
    }

    /// Writes one audit line for a call that started at `started` (arrived at `time`).
    pub fn audit(
        &self,
        time: SystemTime,
        who: &Who,
        transport: Transport,
        call: Call,
        started: Instant,
    ) -> Result<(), AuditError> {
        // Every line names a snapshot when one is served: the one the answer came from, else
        // the one being served.
        let call = match call.snapshot_id {
            Some(_) => call,
            None => call.with_snapshot(self.served_snapshot()),
        };
        if call.outcome == crate::audit::AuditOutcome::Challenge {
            self.metrics.record_auth_failure(challenge_reason(&call));
        }
        let values = self.audit.argument_values();
        let event = AuditEvent::new(time, who, transport, call, started.elapsed(), values);
        self.audit.record(&event).inspect_err(|e| {
            tracing::error!(error = %e, "audit event not written; the call is answered 503 / isError");
        })
    }

    /// The id of the snapshot being served, if any.
    pub fn served_snapshot(&self) -> Option<String> {
        self.context()
            .snapshots
            .as_ref()
            .and_then(|h| h.status().snapshot_id)
    }

    /// The context a request runs on. A rebuild swaps in a new one (a new ontology and source)
    /// and snapshots swap inside it (`Context::snapshots`); a request keeps the `Arc`s it
    /// took, so a swap never changes data under a request in flight.
    pub fn context(&self) -> Arc<Context> {
        self.context.load_full()
    }

    /// The cell `--watch` and `--refresh` swap a rebuilt context into.
    pub fn shared_context(&self) -> SharedContext {
        self.context.clone()
    }

    /// The caller of a request: the one the auth layer put into the extensions, else the
    /// fallback of the auth mode.
    pub fn caller_from(&self, extensions: &axum::http::Extensions) -> Caller {
        extensions
            .get::<Caller>()
            .cloned()
            .unwrap_or_else(|| self.fallback_caller.clone())
    }
}

/// The bounded reason of a challenge, for `govcat_auth_failures_total{reason}`: the token's
/// fault when the refusal named one, else from the error kind.
fn challenge_reason(call: &Call) -> &'static str {
    match call.error.as_deref() {
        Some("MissingToken") => "missing_token",
        Some("InsufficientScope") => "insufficient_scope",
        _ => call.fault.unwrap_or("invalid_token"),
    }
}

/// Calls a tool through the shared dispatcher on the blocking pool and records the metrics.
pub async fn call_tool(
    state: &AppState,
    transport: &'static str,
    caller: Caller,
    name: &str,
    args: Value,
) -> Outcome {
    let started = Instant::now();
    let ctx = state.context();
    let tool = name.to_string();
    let outcome =
        match tokio::task::spawn_blocking(move || tools::call(&ctx, &caller, &tool, args)).await {
            Ok(outcome) => outcome,
            Err(e) => Outcome::Err(ToolError::new(
                "InternalError",
                format!(
                    "tool '{name}' stopped before answering ({e}); nothing was returned; retry, and report it to the govcat maintainers if it repeats"
                ),
            )),
        };
    // Only names from the tool list become label values, so a client cannot grow the registry.
    let label = if tools::spec(name).is_some() {
        name
    } else {
        "(unknown)"
    };
    let (kind, error_kind) = match &outcome {
        Outcome::Ok(_) => (CallOutcome::Ok, None),
        Outcome::InputRequired(_) => (CallOutcome::InputRequired, None),
        Outcome::Err(e) => (CallOutcome::Error, Some(e.kind.as_str())),
    };
    state
        .metrics
        .record_tool(transport, label, kind, error_kind, started.elapsed());
    outcome
}

/// The values `/metrics` reads from the context at scrape time: readiness and the served
/// snapshot's id, age and swap counters.
pub fn gauges(state: &AppState) -> Gauges {
    let ctx = state.context();
    let snapshot = ctx.snapshots.as_ref().map(|handle| {
        let st = handle.status();
        SnapshotGauge {
            loaded: st.loaded,
            id: st.snapshot_id.clone(),
            age_seconds: snapshot_age_seconds(&ctx, st.built_at.as_deref()),
            swaps: st.swaps,
            rebuilds_ok: st.rebuilds_ok,
            rebuilds_failed: st.rebuilds_failed,
        }
    });
    Gauges {
        uptime_seconds: state.started.elapsed().as_secs_f64(),
        ready: readiness(state).0,
        snapshot,
        audit: Some(AuditGauge {
            written: state.audit.written(),
            failures: state.audit.failures(),
        }),
        in_flight: Some(InFlightGauge {
            current: state.in_flight.current(),
            max: state.in_flight.max(),
            refused: state.in_flight.refused(),
        }),
        sessions: Some(SessionGauge {
            live: state.sessions.live(),
            max: state.sessions.limits().max_sessions,
            max_per_principal: state.sessions.limits().max_per_principal,
            evicted: sessions::Eviction::ALL
                .iter()
                .map(|r| (r.as_str(), state.sessions.evicted(*r)))
                .collect(),
            refused: state.sessions.refused(),
        }),
        follow: state.follow.as_ref().map(|f| f.status()),
    }
}

fn snapshot_age_seconds(ctx: &Context, built_at: Option<&str>) -> Option<f64> {
    let built = crate::timestamp::parse_rfc3339(built_at?)?;
    Some(
        (ctx.clock)()
            .duration_since(built)
            .unwrap_or_default()
            .as_secs_f64(),
    )
}

/// Whether the server is ready — the context is built and retrieval has a snapshot loaded —
/// with the details `/readyz` shows (what is missing and what to run).
pub fn readiness(state: &AppState) -> (bool, Value) {
    let ctx = state.context();
    let snapshot = ctx.snapshots.as_ref().map(|handle| {
        let st = handle.status();
        json!({
            "loaded": st.loaded,
            "id": st.snapshot_id,
            "built_at": st.built_at,
            "age_seconds": snapshot_age_seconds(&ctx, st.built_at.as_deref()).map(|a| a.floor() as u64),
            "swaps": st.swaps,
            "rebuilds_ok": st.rebuilds_ok,
            "rebuilds_failed": st.rebuilds_failed,
            "last_error": st.last_error,
        })
    });
    let draining = state.draining.load(std::sync::atomic::Ordering::Relaxed);
    let ready = !draining
        && state.retrieval_unavailable.is_none()
        && ctx
            .snapshots
            .as_ref()
            .is_none_or(|handle| handle.status().loaded);
    (
        ready,
        json!({
            "ready": ready,
            "status": readiness_status(ready, draining),
            "context": {
                "ontology_version": ctx.ontology.version,
                "source": ctx.source.freshness(),
            },
            "retrieval_unavailable": state.retrieval_unavailable,
            "ontology_drift": ctx.ontology_drift,
            "refresh_every_seconds": ctx.snapshot_refresh_every.map(|d| d.as_secs()),
            "snapshot": snapshot,
            "mcp_sessions": state.sessions.readiness(),
            "follow": state.follow.as_ref().map(|f| f.readiness()),
            "uptime_seconds": state.started.elapsed().as_secs(),
        }),
    )
}

/// The one word `/readyz` always shows: `ready`, `draining` (shutting down; finishing what is
/// in flight) or `not_ready` (the details say why).
pub fn readiness_status(ready: bool, draining: bool) -> &'static str {
    match (ready, draining) {
        (_, true) => "draining",
        (true, false) => "ready",
        (false, false) => "not_ready",
    }
}

/// The caller of `mcp-stdio`: from `GOVCAT_SCOPES` (space-separated `catalog:<domain>:read`),
/// or every domain when unset; set but empty means no domain. The scopes are read by
/// `auth::local_principal`; a token that is not a catalog read scope is refused here rather
/// than silently granting nothing.
pub fn caller_from_scopes(scopes: Option<&str>) -> Result<Caller, ServerError> {
    let principal = crate::auth::local_principal("stdio", scopes);
    if let Some(token) = principal
        .scopes
        .iter()
        .find(|s| crate::auth::readable_domains(std::iter::once(*s)).is_empty())
    {
        return Err(ServerError::BadScope {
            token: token.clone(),
        });
    }
    Ok(principal.caller)
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_env("GOVCAT_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    // Logs go to stderr: stdout carries the bound address (serve) or the protocol (stdio).
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    let _ = match format {
        LogFormat::Text => builder
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .try_init(),
        LogFormat::Json => builder.json().with_ansi(false).try_init(),
    };
}

fn runtime() -> Result<tokio::runtime::Runtime, ServerError> {
    tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| {
            ServerError::runtime(
                "the async runtime",
                e,
                "check the process may create threads",
            )
        })
}

fn fail(options: &Options, e: &ServerError) -> ExitCode {
    report_error(options, &ToolError::new("ServerError", e.to_string()))
}

/// The token validation settings of `--auth jwt`, or `None` under `--auth none`, where the
/// jwt flags are refused (so no one believes a token is checked when none is).
pub fn auth_config(args: &ServeArgs) -> Result<Option<AuthConfig>, ServerError> {
    let given = [
        ("--issuer", args.issuer.is_some()),
        ("--audience", args.audience.is_some()),
        ("--jwks-file", args.jwks_file.is_some()),
        ("--jwks-url", args.jwks_url.is_some()),
    ];
    match args.auth {
        AuthMode::None => match given.iter().find(|(_, set)| *set) {
            Some((flag, _)) => Err(ServerError::AuthFlagWithoutJwt { flag }),
            None => Ok(None),
        },
        AuthMode::Jwt => {
            let issuer = args.issuer.clone().ok_or(ServerError::AuthFlagMissing {
                flag: "--issuer",
                meaning: "the authorization server's issuer identifier, the `iss` of its tokens",
            })?;
            let audience = args.audience.clone().ok_or(ServerError::AuthFlagMissing {
                flag: "--audience",
                meaning: "this server's resource URI, e.g. https://catalog.example/mcp",
            })?;
            let jwks = match (&args.jwks_file, &args.jwks_url) {
                (Some(file), _) => JwksSource::File(file.clone()),
                (None, Some(url)) => JwksSource::Url(url.clone()),
                (None, None) => {
                    return Err(ServerError::AuthFlagMissing {
                        flag: "--jwks-file FILE or --jwks-url URL",
                        meaning: "the issuer's public keys",
                    })
                }
            };
            let metadata_url = auth::resource_metadata_url(&audience);
            Ok(Some(AuthConfig::new(issuer, audience, jwks, metadata_url)))
        }
    }
}

fn argument_values(verbatim: bool) -> crate::audit::ArgumentValues {
    if verbatim {
        crate::audit::ArgumentValues::Verbatim
    } else {
        crate::audit::ArgumentValues::Masked
    }
}

/// The audit sink: `--audit-log FILE`, else `default`.
fn open_audit(
    path: Option<&std::path::Path>,
    default: fn() -> AuditSink,
) -> Result<AuditSink, ServerError> {
    match path {
        Some(p) => Ok(AuditSink::file(p)?),
        None => Ok(default()),
    }
}

/// `govcat serve`.
pub fn run_serve(options: &Options, args: &ServeArgs) -> ExitCode {
    init_logging(args.log_format);
    let addr = match resolve_listen(&args.listen, args.auth) {
        Ok(a) => a,
        Err(e) => return fail(options, &e),
    };
    let hosts = match HostPolicy::loopback_plus(&args.allowed_hosts) {
        Ok(h) => h,
        Err(e) => return fail(options, &e),
    };
    let auth_config = match auth_config(args) {
        Ok(c) => c,
        Err(e) => return fail(options, &e),
    };
    let audit = match open_audit(args.audit_log.as_deref(), AuditSink::stdout) {
        Ok(a) => a.with_argument_values(argument_values(args.audit_verbatim_arguments)),
        Err(e) => return fail(options, &e),
    };
    let follow = match open_follow(options, args) {
        Ok(f) => f,
        Err(e) => return fail(options, &e),
    };
    let (mut app, unavailable) = match serving_context_with(options, follow.is_none()) {
        Ok(built) => built,
        Err(e) => return report_error(options, &e),
    };
    app.ctx.snapshot_refresh_every = args.refresh;
    app.ctx.follows = args.follow.clone();
    app.ctx.ontology_drift = ontology_drift(&app.ctx);
    // Under --auth jwt every request carries its own caller; the fallback is never used.
    let mut sessions = sessions::Sessions::new(sessions::SessionLimits {
        max_sessions: args.max_sessions,
        max_per_principal: args.max_sessions_per_principal.min(args.max_sessions),
        idle_timeout: args.session_idle_timeout,
    });
    match args.session_keys() {
        Ok(Some(keys)) => sessions = sessions.with_keys(keys),
        Ok(None) => {}
        Err(problem) => {
            return fail(
                options,
                &ServerError::runtime("--session-key-file", problem, "fix the key and start again"),
            )
        }
    }
    let mut state = AppState::new(app.ctx, Caller::local(), hosts, audit)
        .with_max_concurrent_requests(args.max_concurrent_requests)
        .with_sessions(sessions);
    state.conn_limits = args.conn_limits();
    state.public_probe_details = args.public_probe_details;
    state.trusted_proxies = match conn::TrustedProxies::parse(&args.trusted_proxies) {
        Ok(p) => p,
        Err(problem) => {
            return fail(
                options,
                &ServerError::runtime("--trusted-proxy", problem, "fix the flag and start again"),
            )
        }
    };
    state.retrieval_unavailable = unavailable;
    if let Some(follow) = follow {
        if let Err(e) = start_follow(options, &state, follow.clone()) {
            return fail(options, &e);
        }
        state.follow = Some(follow);
    }
    if let Some(every) = args.refresh {
        if let Err(e) = start_refresh(options, &state, every) {
            return fail(options, &e);
        }
    }
    let _watch = if args.watch {
        match start_watch(options, &state) {
            Ok(guard) => Some(guard),
            Err(e) => return fail(options, &e),
        }
    } else {
        None
    };
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(options, &e),
    };
    if let Some(config) = auth_config {
        let authenticator = match rt.block_on(Authenticator::new(config)) {
            Ok(a) => Arc::new(a),
            Err(e) => return fail(options, &ServerError::Auth(e)),
        };
        state = state.with_auth(authenticator);
    }
    let state = Arc::new(state);
    let result = rt.block_on(async {
        let listener =
            tokio::net::TcpListener::bind(addr)
                .await
                .map_err(|e| ServerError::Bind {
                    addr,
                    problem: e.to_string(),
                })?;
        serve(listener, state, shutdown_signal()).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(options, &e),
    }
}

/// Serves the app on `listener` until `shutdown` completes, then drains and stops (see
/// [`conn`]). Prints the bound MCP URL on stdout once listening.
pub async fn serve(
    listener: tokio::net::TcpListener,
    state: Arc<AppState>,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> Result<(), ServerError> {
    let local = listener
        .local_addr()
        .map_err(|e| ServerError::runtime("the listener", e, "restart govcat serve"))?;
    let cancel = CancellationToken::new();
    state.sessions.start_reaper(cancel.clone());
    let limits = state.conn_limits;
    let app = rest::app(state.clone(), cancel.clone());
    println!(
        "govcat: serving MCP at http://{local}/mcp (REST /v1/tools, /healthz, /readyz, /metrics)"
    );
    tracing::info!(%local, "listening");
    let on_drain = move || {
        state
            .draining
            .store(true, std::sync::atomic::Ordering::Relaxed);
    };
    conn::serve(listener, app, limits, shutdown, on_drain, cancel).await;
    Ok(())
}

/// Completes on SIGINT or SIGTERM.
pub async fn shutdown_signal() {
    let ctrl_c = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let term = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut s) => {
                s.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    #[cfg(not(unix))]
    let term = std::future::pending::<()>();
    tokio::select! {
        () = ctrl_c => {},
        () = term => {},
    }
}

/// `govcat mcp-stdio`.
pub fn run_mcp_stdio(options: &Options, args: &StdioArgs) -> ExitCode {
    init_logging(args.log_format);
    let scopes = std::env::var(SCOPES_ENV).ok();
    let caller = match caller_from_scopes(scopes.as_deref()) {
        Ok(c) => c,
        Err(e) => return fail(options, &e),
    };
    if scopes.as_deref().is_some_and(|s| s.trim().is_empty()) {
        tracing::warn!(
            "{SCOPES_ENV} is set but empty: this stdio caller may read no domain (list_domains lists none, find_precedents refuses columns); unset {SCOPES_ENV} to read every domain, or list scopes such as catalog:policy:read"
        );
    }
    let audit = match open_audit(args.audit_log.as_deref(), AuditSink::stderr) {
        Ok(a) => a.with_argument_values(argument_values(args.audit_verbatim_arguments)),
        Err(e) => return fail(options, &e),
    };
    let (app, unavailable) = match serving_context(options) {
        Ok(built) => built,
        Err(e) => return report_error(options, &e),
    };
    // stdio has no Host header; the policy is unused there.
    let hosts = match HostPolicy::loopback_plus(&[]) {
        Ok(h) => h,
        Err(e) => return fail(options, &e),
    };
    let mut state = AppState::new(app.ctx, caller, hosts, audit);
    state.retrieval_unavailable = unavailable;
    let state = Arc::new(state);
    let rt = match runtime() {
        Ok(rt) => rt,
        Err(e) => return fail(options, &e),
    };
    match rt.block_on(mcp::serve_stdio(state)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => fail(options, &e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::Domain;
    use std::collections::BTreeSet;

    #[test]
    fn auth_none_refuses_a_non_loopback_listen_address() {
        let e = resolve_listen("0.0.0.0:8080", AuthMode::None).unwrap_err();
        assert_eq!(
            e.to_string(),
            "--listen 0.0.0.0:8080 resolves to 0.0.0.0:8080, which is not a loopback address; --auth none serves every request as the local operator, so it binds only to 127.0.0.1, ::1 or localhost"
        );
        assert_eq!(
            resolve_listen("127.0.0.1:0", AuthMode::None).unwrap(),
            "127.0.0.1:0".parse::<SocketAddr>().unwrap()
        );
        assert!(resolve_listen("[::1]:9", AuthMode::None).is_ok());
        assert!(matches!(
            resolve_listen("nonsense", AuthMode::None),
            Err(ServerError::BadListen { .. })
        ));
    }

    #[test]
    fn stdio_scopes_parse_into_readable_domains() {
        assert_eq!(
            caller_from_scopes(None).unwrap(),
            Caller {
                subject: "stdio".into(),
                readable: None
            }
        );
        let c = caller_from_scopes(Some("catalog:policy:read  catalog:claims:read")).unwrap();
        assert_eq!(
            c.readable,
            Some(BTreeSet::from([
                Domain("claims".into()),
                Domain("policy".into())
            ]))
        );
        assert_eq!(
            caller_from_scopes(Some("")).unwrap().readable,
            Some(BTreeSet::new())
        );
        assert_eq!(
            caller_from_scopes(Some("catalog:policy:write"))
                .unwrap_err()
                .to_string(),
            "GOVCAT_SCOPES: 'catalog:policy:write' is not a scope; give space-separated scopes of the form catalog:<domain>:read, or unset GOVCAT_SCOPES to read every domain"
        );
    }

    fn headers(pairs: &[(&'static str, &str)]) -> axum::http::HeaderMap {
        let mut h = axum::http::HeaderMap::new();
        for (k, v) in pairs {
            h.insert(*k, v.parse().unwrap());
        }
        h
    }

    #[test]
    fn host_policy_accepts_loopback_and_configured_hosts_only() {
        let p = HostPolicy::loopback_plus(&["Catalog.Internal:8443".into()]).unwrap();
        assert_eq!(p.check(&headers(&[("host", "127.0.0.1:8080")])), Ok(()));
        assert_eq!(p.check(&headers(&[("host", "[::1]:8080")])), Ok(()));
        assert_eq!(p.check(&headers(&[("host", "localhost")])), Ok(()));
        assert_eq!(
            p.check(&headers(&[("host", "catalog.internal:8443")])),
            Ok(())
        );
        assert!(p
            .check(&headers(&[("host", "catalog.internal:9000")]))
            .is_err());
        assert_eq!(
            p.check(&headers(&[("host", "evil.example")])),
            Err("Host 'evil.example' is not served here (DNS-rebinding protection); use one of localhost, 127.0.0.1, [::1], catalog.internal:8443 or start govcat with --allowed-host".into())
        );
        assert_eq!(
            p.check(&headers(&[
                ("host", "localhost:8080"),
                ("origin", "http://localhost:3000")
            ])),
            Ok(())
        );
        assert_eq!(
            p.check(&headers(&[
                ("host", "localhost:8080"),
                ("origin", "https://evil.example")
            ])),
            Err("Origin 'https://evil.example' is not allowed (cross-origin protection); start govcat with --allowed-host for that host".into())
        );
        assert!(p
            .check(&headers(&[("host", "localhost"), ("origin", "null")]))
            .is_err());
    }

    #[test]
    fn rmcp_gets_the_same_hosts_and_origins() {
        let p = HostPolicy::loopback_plus(&["catalog.internal:8443".into()]).unwrap();
        assert_eq!(
            p.rmcp_hosts(),
            vec!["localhost", "127.0.0.1", "[::1]", "catalog.internal:8443"]
        );
        assert_eq!(
            p.rmcp_origins(),
            vec![
                "http://localhost:*",
                "https://localhost:*",
                "http://127.0.0.1:*",
                "https://127.0.0.1:*",
                "http://[::1]:*",
                "https://[::1]:*",
                "http://catalog.internal:8443",
                "https://catalog.internal:8443"
            ]
        );
        assert!(matches!(
            HostPolicy::loopback_plus(&["http://x/".into()]),
            Err(ServerError::BadAllowedHost { .. })
        ));
    }
}
