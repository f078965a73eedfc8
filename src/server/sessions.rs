//! MCP sessions with a bound: rmcp's [`LocalSessionManager`] behind a table that knows each
//! session's principal, when it was last used and whether a request or stream of it is open.
//! A client that opens sessions and never ends them (many hosts never send `DELETE /mcp`)
//! cannot make the server hold more than `--max-sessions` of them, nor one principal more than
//! `--max-sessions-per-principal`; a session idle for `--session-idle-timeout` is closed.
//!
//! At a cap, a new `initialize` first closes the least-recently-used idle session of the same
//! principal (per-principal cap) or of anyone (total cap); that client's next request gets the
//! spec's 404 and it initializes again. Only when every session within the cap is busy is the
//! `initialize` refused: HTTP 503 with `Retry-After` and a JSON-RPC error naming the cap and its
//! flag. Stateless (2026-07-28) requests carry no session and never meet a cap.
//!
//! A session is busy while a POST or DELETE of it is open, from its headers to the end of its
//! answer; an open event stream (`GET /mcp`) marks it used but not busy.
//!
//! It must never close a busy session, and never let one principal's `initialize` close another
//! principal's session through the per-principal cap.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use axum::body::{Body, Bytes};
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures_core::Stream;
use http_body_util::BodyExt;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{
    LocalSessionManager, LocalSessionManagerError,
};
use rmcp::transport::streamable_http_server::session::{
    RestoreOutcome, ServerSseMessage, SessionId, SessionManager, SessionStore,
};
use serde_json::{json, Value};
use tokio_util::sync::CancellationToken;

use super::portable::{Restorable, SessionKeys};
use crate::auth::Principal;
use crate::limits::MAX_BODY_BYTES;

/// The session id header of Streamable HTTP.
pub const SESSION_HEADER: &str = "mcp-session-id";
/// Live sessions at most, by default: the worst case (every session holding its bounded
/// per-session state, [`SESSION_BUDGET_BYTES`]) fits [`SESSIONS_MEMORY_BUDGET_MIB`].
pub const DEFAULT_MAX_SESSIONS: usize = 2048;
/// Live sessions of one principal at most, by default: well below the total, so one principal
/// reaches its own cap (and closes its own sessions) long before it could crowd out others.
pub const DEFAULT_MAX_SESSIONS_PER_PRINCIPAL: usize = 64;
/// A session with no request or stream open for this long is closed (rmcp's default, 5 min).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(300);
/// The memory the default caps are sized for (docs/SCALING.md).
pub const SESSIONS_MEMORY_BUDGET_MIB: usize = 256;
/// What one idle session may hold at most (measured, see docs/SCALING.md): rmcp's worker and
/// service tasks and their channels, the peer's `initialize` parameters, and the resumption
/// cache of at most [`CHANNEL_CAPACITY`] messages per open stream, kept for
/// [`COMPLETED_CACHE_TTL`] after the stream completes.
pub const SESSION_BUDGET_BYTES: usize = 128 * 1024;
/// Messages an rmcp session buffers per stream (and keeps for resumption), rmcp's default.
pub const CHANNEL_CAPACITY: usize = 16;
/// How long rmcp keeps a completed request stream's messages for a late resume. govcat sends
/// a POST's answer whole (the MCP gate holds it until it is audited), so there is nothing
/// partial to resume; a short window keeps a finished call's answer from staying in memory.
pub const COMPLETED_CACHE_TTL: Duration = Duration::from_secs(5);
/// Seconds a client refused at a cap is asked to wait.
pub const CAP_RETRY_AFTER_SECS: u64 = 5;
/// The JSON-RPC error code of a refused `initialize` (implementation-defined server error).
pub const CAP_ERROR_CODE: i64 = -32001;
/// Sessions the server closes before the reaper hands freed memory back to the system.
const TRIM_AFTER_CLOSED: u64 = 64;
/// One log line per eviction reason at its first occurrence, then at most one per this long.
const LOG_EVERY: Duration = Duration::from_secs(60);

/// `serve`'s session bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionLimits {
    pub max_sessions: usize,
    pub max_per_principal: usize,
    pub idle_timeout: Duration,
}

impl Default for SessionLimits {
    fn default() -> SessionLimits {
        SessionLimits {
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_principal: DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
        }
    }
}

/// Why a session was closed by the server rather than by its client.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Eviction {
    IdleTimeout,
    PrincipalCap,
    TotalCap,
}

impl Eviction {
    pub const ALL: [Eviction; 3] = [
        Eviction::IdleTimeout,
        Eviction::PrincipalCap,
        Eviction::TotalCap,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Eviction::IdleTimeout => "idle_timeout",
            Eviction::PrincipalCap => "principal_cap",
            Eviction::TotalCap => "total_cap",
        }
    }
}

/// A cap that refused an `initialize` because every session within it was busy.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CapReached {
    pub cap: &'static str,
    pub flag: &'static str,
    pub limit: usize,
}

#[derive(Debug)]
struct Entry {
    principal: String,
    last_used: Instant,
    /// Requests and streams of the session open now.
    busy: usize,
}

#[derive(Debug, Default)]
struct Table {
    live: HashMap<SessionId, Entry>,
    /// `initialize` requests admitted whose session is not registered yet, by principal.
    pending: HashMap<String, usize>,
    pending_total: usize,
}

impl Table {
    fn held_by(&self, principal: &str) -> usize {
        self.live
            .values()
            .filter(|e| e.principal == principal)
            .count()
            + self.pending.get(principal).copied().unwrap_or(0)
    }

    fn held(&self) -> usize {
        self.live.len() + self.pending_total
    }

    /// The least-recently-used idle session, of `principal` when given.
    fn lru_idle(&self, principal: Option<&str>) -> Option<SessionId> {
        self.live
            .iter()
            .filter(|(_, e)| e.busy == 0 && principal.is_none_or(|p| e.principal == p))
            .min_by_key(|(id, e)| (e.last_used, id.to_string()))
            .map(|(id, _)| id.clone())
    }

    fn unreserve(&mut self, principal: &str) {
        if let Some(n) = self.pending.get_mut(principal) {
            *n -= 1;
            if *n == 0 {
                self.pending.remove(principal);
            }
            self.pending_total -= 1;
        }
    }
}

/// The bounded session manager (see the module docs); shared as `Arc<Sessions>` by rmcp, the
/// middleware in front of it and the idle reaper.
#[derive(Debug)]
pub struct Sessions {
    inner: LocalSessionManager,
    limits: SessionLimits,
    table: Mutex<Table>,
    evicted: [AtomicU64; 3],
    refused: AtomicU64,
    last_logged: Mutex<[Option<Instant>; 3]>,
    /// `--session-key-file`: sessions sealed into their ids, restorable on any replica
    /// ([`super::portable`]).
    keys: Option<SessionKeys>,
    restorable: Arc<Restorable>,
    restored: AtomicU64,
}

impl Sessions {
    pub fn new(limits: SessionLimits) -> Sessions {
        let mut inner = LocalSessionManager::default();
        // The reaper below closes idle sessions (and counts them); rmcp's own timer would close
        // a session that holds an open event stream but sends nothing.
        inner.session_config.keep_alive = None;
        inner.session_config.channel_capacity = CHANNEL_CAPACITY;
        inner.session_config.completed_cache_ttl = COMPLETED_CACHE_TTL;
        Sessions {
            inner,
            limits,
            table: Mutex::new(Table::default()),
            evicted: Default::default(),
            refused: AtomicU64::new(0),
            last_logged: Mutex::new([None; 3]),
            keys: None,
            restorable: Arc::default(),
            restored: AtomicU64::new(0),
        }
    }

    /// Seals sessions into their ids with `keys`, so that any replica holding one of them can
    /// restore a session another replica opened.
    pub fn with_keys(mut self, keys: SessionKeys) -> Sessions {
        self.keys = Some(keys);
        self
    }

    /// The store rmcp restores sealed sessions from; `None` without keys.
    pub fn store(&self) -> Option<Arc<dyn SessionStore>> {
        self.keys
            .as_ref()
            .map(|_| self.restorable.clone() as Arc<dyn SessionStore>)
    }

    /// Sessions this replica restored from a sealed id another replica (or it, before a
    /// restart) issued.
    pub fn restored(&self) -> u64 {
        self.restored.load(Ordering::Relaxed)
    }

    pub fn limits(&self) -> SessionLimits {
        self.limits
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Live sessions now (registered ones; an `initialize` in flight is not yet one).
    pub fn live(&self) -> usize {
        self.lock().live.len()
    }

    pub fn evicted(&self, reason: Eviction) -> u64 {
        self.evicted[reason as usize].load(Ordering::Relaxed)
    }

    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// What `/readyz` shows of the sessions.
    pub fn readiness(&self) -> Value {
        let table = self.lock();
        let mut principals: HashMap<&str, usize> = HashMap::new();
        for e in table.live.values() {
            *principals.entry(&e.principal).or_default() += 1;
        }
        json!({
            "live": table.live.len(),
            "busy": table.live.values().filter(|e| e.busy > 0).count(),
            "principals": principals.len(),
            "max_sessions": self.limits.max_sessions,
            "max_sessions_per_principal": self.limits.max_per_principal,
            "idle_timeout_seconds": self.limits.idle_timeout.as_secs(),
            "evicted": Eviction::ALL.iter().map(|r| (r.as_str().to_string(), json!(self.evicted(*r)))).collect::<serde_json::Map<_, _>>(),
            "refused": self.refused(),
            "portable": self.keys.is_some(),
            "restored": self.restored(),
        })
    }

    /// Makes room for one more session of `principal`: closes the least-recently-used idle
    /// sessions a cap needs closed, or refuses when every session within the cap is busy. On
    /// `Ok` a place is reserved until [`Sessions::register`] or [`Sessions::release`].
    async fn admit(&self, principal: &str) -> Result<(), CapReached> {
        let mut to_close = Vec::new();
        let outcome = {
            let mut table = self.lock();
            let mut outcome = Ok(());
            while table.held_by(principal) >= self.limits.max_per_principal {
                match table.lru_idle(Some(principal)) {
                    Some(id) => {
                        table.live.remove(&id);
                        to_close.push((id, Eviction::PrincipalCap));
                    }
                    None => {
                        outcome = Err(CapReached {
                            cap: "sessions per principal",
                            flag: "--max-sessions-per-principal",
                            limit: self.limits.max_per_principal,
                        });
                        break;
                    }
                }
            }
            while outcome.is_ok() && table.held() >= self.limits.max_sessions {
                match table.lru_idle(None) {
                    Some(id) => {
                        table.live.remove(&id);
                        to_close.push((id, Eviction::TotalCap));
                    }
                    None => {
                        outcome = Err(CapReached {
                            cap: "sessions",
                            flag: "--max-sessions",
                            limit: self.limits.max_sessions,
                        });
                    }
                }
            }
            if outcome.is_ok() {
                *table.pending.entry(principal.to_string()).or_default() += 1;
                table.pending_total += 1;
            }
            outcome
        };
        for (id, reason) in to_close {
            self.evict(&id, reason).await;
        }
        if outcome.is_err() {
            self.refused.fetch_add(1, Ordering::Relaxed);
        }
        outcome
    }

    /// Turns `principal`'s reservation into the session rmcp opened or restored for it; `false`
    /// when it registered none: a session whose worker already ended (a failed initialize), or
    /// one a concurrent request registered first (kept as it is).
    async fn register(&self, principal: &str, id: SessionId) -> bool {
        let open = self.inner.has_session(&id).await.unwrap_or(false);
        let mut table = self.lock();
        table.unreserve(principal);
        if !open || table.live.contains_key(&id) {
            return false;
        }
        table.live.insert(
            id,
            Entry {
                principal: principal.to_string(),
                last_used: Instant::now(),
                busy: 0,
            },
        );
        true
    }

    /// Gives back `principal`'s reservation of an `initialize` that opened no session.
    fn release(&self, principal: &str) {
        self.lock().unreserve(principal);
    }

    /// Marks a session busy while the returned guard lives; `None` for a session not open.
    fn enter(self: &Arc<Self>, id: &SessionId) -> Option<Busy> {
        let mut table = self.lock();
        let entry = table.live.get_mut(id)?;
        entry.busy += 1;
        entry.last_used = Instant::now();
        Some(Busy {
            sessions: self.clone(),
            id: id.clone(),
        })
    }

    /// Marks a session used now, without holding it busy.
    fn touch(&self, id: &SessionId) {
        if let Some(entry) = self.lock().live.get_mut(id) {
            entry.last_used = Instant::now();
        }
    }

    fn leave(&self, id: &SessionId) {
        if let Some(entry) = self.lock().live.get_mut(id) {
            entry.busy = entry.busy.saturating_sub(1);
            entry.last_used = Instant::now();
        }
    }

    /// Closes the sessions idle for longer than the idle timeout; returns how many.
    pub async fn reap_idle(&self) -> usize {
        let expired: Vec<SessionId> = {
            let mut table = self.lock();
            let now = Instant::now();
            let ids: Vec<SessionId> = table
                .live
                .iter()
                .filter(|(_, e)| {
                    e.busy == 0 && now.duration_since(e.last_used) >= self.limits.idle_timeout
                })
                .map(|(id, _)| id.clone())
                .collect();
            for id in &ids {
                table.live.remove(id);
            }
            ids
        };
        for id in &expired {
            self.evict(id, Eviction::IdleTimeout).await;
        }
        expired.len()
    }

    /// Closes the idle sessions every so often until `cancel`.
    pub fn start_reaper(self: &Arc<Self>, cancel: CancellationToken) {
        let sessions = self.clone();
        let every = (self.limits.idle_timeout / 4)
            .clamp(Duration::from_millis(100), Duration::from_secs(15));
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            let mut trimmed_at = 0;
            loop {
                tokio::select! {
                    _ = tick.tick() => {}
                    () = cancel.cancelled() => return,
                }
                sessions.reap_idle().await;
                let closed: u64 = Eviction::ALL.iter().map(|r| sessions.evicted(*r)).sum();
                if closed >= trimmed_at + TRIM_AFTER_CLOSED {
                    trimmed_at = closed;
                    let _ = tokio::task::spawn_blocking(return_freed_memory).await;
                }
            }
        });
    }

    /// Closes a session already taken out of the table, counts it and logs it (rate-limited).
    async fn evict(&self, id: &SessionId, reason: Eviction) {
        if let Err(e) = self.inner.close_session(id).await {
            tracing::warn!(session = %id, error = %e, "closing an evicted MCP session failed");
        }
        let n = self.evicted[reason as usize].fetch_add(1, Ordering::Relaxed) + 1;
        let mut logged = self.last_logged.lock().unwrap_or_else(|p| p.into_inner());
        let last = &mut logged[reason as usize];
        if last.is_none_or(|t| t.elapsed() >= LOG_EVERY) {
            *last = Some(Instant::now());
            tracing::warn!(
                reason = reason.as_str(),
                evicted_total = n,
                max_sessions = self.limits.max_sessions,
                max_sessions_per_principal = self.limits.max_per_principal,
                idle_timeout_seconds = self.limits.idle_timeout.as_secs(),
                "closed an MCP session its client left open; the client gets 404 and re-initializes (logged at most once a minute per reason)"
            );
        }
    }
}

/// Hands the allocator's free memory back to the system. glibc keeps what closed sessions
/// held (measured: 1,151 sessions closed by the idle timeout, RSS 265 MiB before and after;
/// 204 MiB after `malloc_trim(0)`), so without this the high-water mark would stay forever.
fn return_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers; it only walks the allocator's own free lists,
    // under the allocator's locks, and is safe to call from any thread.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// A session's open request or stream; the session counts as busy until it is dropped.
struct Busy {
    sessions: Arc<Sessions>,
    id: SessionId,
}

impl Drop for Busy {
    fn drop(&mut self) {
        self.sessions.leave(&self.id);
    }
}

impl SessionManager for Sessions {
    type Error = LocalSessionManagerError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        self.inner.create_session().await
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        self.inner.initialize_session(id, message).await
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        self.inner.has_session(id).await
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        self.lock().live.remove(id);
        self.inner.close_session(id).await
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_stream(id, message).await
    }

    async fn accept_message(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<(), Self::Error> {
        self.inner.accept_message(id, message).await
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.create_standalone_stream(id).await
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        self.inner.resume(id, last_event_id).await
    }

    async fn restore_session(
        &self,
        id: SessionId,
    ) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        self.inner.restore_session(id).await
    }
}

/// The `Mcp-Session-Id` of a request or response, if it carries a readable one.
pub fn session_of(headers: &axum::http::HeaderMap) -> Option<&str> {
    headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok())
}

/// Who a session belongs to for the per-principal cap: the token's subject under `--auth jwt`,
/// else the peer's IP address (every connection of one host is one principal).
pub(super) fn principal_of(request: &Request) -> String {
    if let Some(p) = request.extensions().get::<Principal>() {
        return format!("sub:{}", p.caller.subject);
    }
    match request.extensions().get::<ConnectInfo<SocketAddr>>() {
        Some(ConnectInfo(addr)) => format!("peer:{}", addr.ip()),
        None => "peer:unknown".to_string(),
    }
}

/// In front of the MCP gate: keeps a session busy while a POST or DELETE of it is open (from
/// its headers to the end of its answer), so the caps never close a session mid-request. An
/// event stream (`GET /mcp`) only marks the session used: a host that keeps one open for
/// every session it forgot would otherwise hold them all forever.
pub async fn mark_busy(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    let Some(id) = session_of(request.headers()).map(SessionId::from) else {
        return next.run(request).await;
    };
    if request.method() == Method::GET {
        sessions.touch(&id);
        return next.run(request).await;
    }
    let busy = sessions.enter(&id);
    let response = next.run(request).await;
    match busy {
        Some(busy) => hold_until_sent(response, busy),
        None => response,
    }
}

/// Behind the MCP gate (which has bounded and read the body, and audits the answer): admits
/// an `initialize` within the caps, or refuses it with 503, and registers the session rmcp
/// opened for it.
pub async fn admit_sessions(
    State(sessions): State<Arc<Sessions>>,
    request: Request,
    next: Next,
) -> Response {
    if request.method() != Method::POST || request.headers().contains_key(SESSION_HEADER) {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_BODY_BYTES).await else {
        return StatusCode::BAD_REQUEST.into_response();
    };
    let request = Request::from_parts(parts, Body::from(bytes.clone()));
    let Some(init) = initialize_of(&bytes) else {
        return next.run(request).await;
    };
    let principal = principal_of(&request);
    if let Err(cap) = sessions.admit(&principal).await {
        return refused(&cap, init["id"].clone());
    }
    let mut response = next.run(request).await;
    let Some(id) = session_of(response.headers()).map(str::to_string) else {
        sessions.release(&principal);
        return response;
    };
    sessions
        .register(&principal, SessionId::from(id.as_str()))
        .await;
    let sealed = sessions.keys.as_ref().and_then(|keys| {
        keys.seal(&id, &principal, &init["params"], SystemTime::now())
            .and_then(|sealed| HeaderValue::from_str(&sealed).ok())
    });
    match sealed {
        Some(sealed) => {
            response.headers_mut().insert(SESSION_HEADER, sealed);
        }
        None if sessions.keys.is_some() => tracing::warn!(
            session = %id,
            "this session's initialize parameters are too large to seal into its id; it stays on this replica"
        ),
        None => {}
    }
    response
}

/// The `initialize` request in a POST body, if it holds one.
fn initialize_of(body: &Bytes) -> Option<Value> {
    let is_initialize = |m: &Value| m["method"] == "initialize" && m.get("id").is_some();
    match serde_json::from_slice::<Value>(body).ok()? {
        Value::Array(batch) => batch.into_iter().find(is_initialize),
        m if is_initialize(&m) => Some(m),
        _ => None,
    }
}

/// Outermost on `/mcp`, with `--session-key-file`: a request that carries a sealed session id
/// ([`super::portable`]) goes on with rmcp's own id inside it; when this replica does not hold
/// that session, it is restored from the id under the same caps as an `initialize`. A sealed
/// id that does not open (another key, altered, expired, another principal's) is answered 404
/// like any unknown session, and the client initializes again.
pub async fn unseal(
    State(sessions): State<Arc<Sessions>>,
    mut request: Request,
    next: Next,
) -> Response {
    let Some(keys) = &sessions.keys else {
        return next.run(request).await;
    };
    // rmcp's own ids (UUIDs) hold no '.', a sealed one (a JWT) two.
    let Some(id) = session_of(request.headers()).filter(|id| id.contains('.')) else {
        return next.run(request).await;
    };
    let principal = principal_of(&request);
    let sealed = match keys.open(id, SystemTime::now()) {
        Some(sealed) if sealed.sub == principal => sealed,
        _ => return session_not_found(),
    };
    let Ok(inner_id) = HeaderValue::from_str(&sealed.sid) else {
        return session_not_found();
    };
    request.headers_mut().insert(SESSION_HEADER, inner_id);
    let sid = SessionId::from(sealed.sid.as_str());
    // DELETE ends a session where it is held; there is nothing to restore it for.
    let held = sessions.inner.has_session(&sid).await.unwrap_or(false);
    if held || request.method() == Method::DELETE {
        return next.run(request).await;
    }
    if let Err(cap) = sessions.admit(&principal).await {
        return refused(&cap, Value::Null);
    }
    sessions.restorable.offer(&sealed.sid, sealed.init);
    let response = next.run(request).await;
    sessions.restorable.withdraw(&sealed.sid);
    if sessions.register(&principal, sid).await {
        sessions.restored.fetch_add(1, Ordering::Relaxed);
    }
    response
}

/// The answer to a sealed session id that does not open: the spec's 404 for an unknown
/// session, whose client initializes again.
fn session_not_found() -> Response {
    let body = json!({
        "error": "SessionNotFound",
        "message": "this MCP session id is not valid on this server (signed with a key this server does not hold, altered, expired, or opened under another identity); start a new session with initialize",
    });
    (StatusCode::NOT_FOUND, Json(body)).into_response()
}

/// The answer to an `initialize` refused at a cap.
fn refused(cap: &CapReached, id: Value) -> Response {
    let message = format!(
        "every one of the {limit} MCP {cap} this server allows ({flag}) is busy, so no new session can be opened now; retry in {CAP_RETRY_AFTER_SECS} s, end the sessions you no longer use with DELETE /mcp, or ask the operator to raise {flag}",
        limit = cap.limit,
        cap = cap.cap,
        flag = cap.flag,
    );
    let body = json!({
        "jsonrpc": "2.0",
        "id": id,
        "error": {
            "code": CAP_ERROR_CODE,
            "message": message,
            "data": {
                "error": "SessionLimit",
                "cap": cap.cap,
                "flag": cap.flag,
                "limit": cap.limit,
                "retry_after_seconds": CAP_RETRY_AFTER_SECS,
            },
        },
    });
    let mut response = (StatusCode::SERVICE_UNAVAILABLE, Json(body)).into_response();
    response
        .headers_mut()
        .insert(header::RETRY_AFTER, HeaderValue::from(CAP_RETRY_AFTER_SECS));
    response
}

/// Keeps `busy` alive until the response body has been sent or dropped.
fn hold_until_sent(response: Response, busy: Busy) -> Response {
    let (parts, body) = response.into_parts();
    let body = body.map_frame(move |frame| {
        let _ = &busy;
        frame
    });
    Response::from_parts(parts, Body::new(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(total: usize, per: usize) -> SessionLimits {
        SessionLimits {
            max_sessions: total,
            max_per_principal: per,
            idle_timeout: Duration::from_secs(300),
        }
    }

    /// A session of `principal` in the table only (no rmcp worker behind it).
    fn put(s: &Sessions, id: &str, principal: &str, age_ms: u64, busy: usize) {
        s.lock().live.insert(
            SessionId::from(id),
            Entry {
                principal: principal.into(),
                last_used: Instant::now() - Duration::from_millis(age_ms),
                busy,
            },
        );
    }

    fn ids(s: &Sessions) -> Vec<String> {
        let mut v: Vec<String> = s.lock().live.keys().map(|k| k.to_string()).collect();
        v.sort();
        v
    }

    #[tokio::test]
    async fn the_principal_cap_closes_that_principals_least_recently_used_idle_session() {
        let s = Sessions::new(limits(100, 2));
        put(&s, "a-old", "a", 2_000, 0);
        put(&s, "a-new", "a", 1_000, 0);
        put(&s, "b-oldest", "b", 9_000, 0);
        assert_eq!(s.admit("a").await, Ok(()));
        assert_eq!(ids(&s), vec!["a-new", "b-oldest"]);
        assert_eq!(s.evicted(Eviction::PrincipalCap), 1);
        assert_eq!(s.evicted(Eviction::TotalCap), 0);
    }

    #[tokio::test]
    async fn below_every_cap_nothing_is_closed() {
        let s = Sessions::new(limits(100, 3));
        put(&s, "a-old", "a", 2_000, 0);
        put(&s, "a-new", "a", 1_000, 0);
        assert_eq!(s.admit("a").await, Ok(()));
        assert_eq!(ids(&s), vec!["a-new", "a-old"]);
        assert_eq!(s.evicted(Eviction::PrincipalCap), 0);
    }

    #[tokio::test]
    async fn a_principal_whose_sessions_are_all_busy_is_refused_and_others_untouched() {
        let s = Sessions::new(limits(100, 1));
        put(&s, "a-busy", "a", 5_000, 1);
        put(&s, "b-idle", "b", 9_000, 0);
        assert_eq!(
            s.admit("a").await,
            Err(CapReached {
                cap: "sessions per principal",
                flag: "--max-sessions-per-principal",
                limit: 1
            })
        );
        assert_eq!(ids(&s), vec!["a-busy", "b-idle"]);
        assert_eq!(s.refused(), 1);
    }

    #[tokio::test]
    async fn the_total_cap_closes_the_least_recently_used_idle_session_of_anyone() {
        let s = Sessions::new(limits(2, 10));
        put(&s, "a-busy", "a", 9_000, 1);
        put(&s, "b-idle", "b", 1_000, 0);
        assert_eq!(s.admit("c").await, Ok(()));
        assert_eq!(ids(&s), vec!["a-busy"]);
        assert_eq!(s.evicted(Eviction::TotalCap), 1);
        // The reservation counts against the cap until it is registered or released.
        assert_eq!(
            s.admit("d").await,
            Err(CapReached {
                cap: "sessions",
                flag: "--max-sessions",
                limit: 2
            })
        );
        s.release("c");
        assert_eq!(s.admit("d").await, Ok(()));
    }

    #[tokio::test]
    async fn only_sessions_idle_past_the_timeout_are_reaped() {
        let mut l = limits(100, 100);
        l.idle_timeout = Duration::from_millis(500);
        let s = Sessions::new(l);
        put(&s, "stale", "a", 2_000, 0);
        put(&s, "stale-but-busy", "a", 2_000, 1);
        put(&s, "fresh", "a", 10, 0);
        assert_eq!(s.reap_idle().await, 1);
        assert_eq!(ids(&s), vec!["fresh", "stale-but-busy"]);
        assert_eq!(s.evicted(Eviction::IdleTimeout), 1);
    }

    #[test]
    fn a_refusal_is_a_503_with_retry_after_naming_the_cap_and_flag() {
        let cap = CapReached {
            cap: "sessions per principal",
            flag: "--max-sessions-per-principal",
            limit: 64,
        };
        let r = refused(&cap, json!(0));
        assert_eq!(r.status(), StatusCode::SERVICE_UNAVAILABLE);
        assert_eq!(r.headers()[header::RETRY_AFTER], "5");
    }
}
