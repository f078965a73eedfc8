//! The audit log: one JSON line per call (REST, MCP over HTTP, MCP over stdio) saying who asked
//! what, through which client, and what came of it — never a credential, never a result's
//! content.
//!
//! A write failure is returned to the caller (and counted), so a transport can refuse to
//! answer instead of answering as if the call had been audited.

use std::fs::OpenOptions;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde::Serialize;
use serde_json::{Map, Value};

use crate::timestamp::format_rfc3339;
use crate::tools::{Outcome, ToolError};

mod mask;
pub use mask::{mask, mask_text, Masked};

/// Which transport a call came through.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Transport {
    /// The REST mirror of the tools (`/v1/tools`).
    Rest,
    /// MCP over Streamable HTTP (`/mcp`).
    Mcp,
    /// MCP over stdio (`govcat mcp-stdio`).
    Stdio,
}

/// What came of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AuditOutcome {
    /// A result with content.
    Ok,
    /// A result whose `entries` list is empty.
    Empty,
    /// An ask for missing arguments (MRTR `input_required`).
    InputRequired,
    /// An error result.
    Error,
    /// Refused for authorisation: a 401/403 challenge, or a tool's `InsufficientScope`.
    Challenge,
}

impl AuditOutcome {
    /// Classifies a tool outcome. A scope refusal is a `challenge` on every transport (over
    /// HTTP it becomes a 403), so the log separates "refused" from "failed".
    pub fn of(outcome: &Outcome) -> AuditOutcome {
        match outcome {
            Outcome::Ok(value) => match value.get("entries").and_then(Value::as_array) {
                Some(entries) if entries.is_empty() => AuditOutcome::Empty,
                _ => AuditOutcome::Ok,
            },
            Outcome::InputRequired(_) => AuditOutcome::InputRequired,
            Outcome::Err(e) if e.kind == "InsufficientScope" => AuditOutcome::Challenge,
            Outcome::Err(_) => AuditOutcome::Error,
        }
    }
}

/// How many results an outcome carries: the length of `entries` for a list, 1 for a
/// single-object result, `None` for an ask or an error.
pub fn result_count(outcome: &Outcome) -> Option<u64> {
    match outcome {
        Outcome::Ok(value) => Some(
            value
                .get("entries")
                .and_then(Value::as_array)
                .map_or(1, |entries| entries.len() as u64),
        ),
        Outcome::InputRequired(_) | Outcome::Err(_) => None,
    }
}

/// The snapshot a tool answered from, when its output names one (`snapshot.id`, or the
/// echo's `request.snapshot_id`).
fn answered_snapshot(outcome: &Outcome) -> Option<String> {
    let Outcome::Ok(value) = outcome else {
        return None;
    };
    value
        .pointer("/snapshot/id")
        .or_else(|| value.pointer("/request/snapshot_id"))
        .and_then(Value::as_str)
        .map(String::from)
}

/// Who made a call. Both `None` when a request was refused before a caller was known.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Who {
    /// The caller's `sub` (`local` / `stdio` for the local transports).
    pub subject: Option<String>,
    /// The token's `client_id` (or `azp`); `None` without a token.
    pub client_id: Option<String>,
    /// The TCP peer (`ip:port`) of an HTTP request; `None` on stdio.
    pub peer: Option<String>,
    /// The client address a trusted proxy (`serve --trusted-proxy`) forwarded in
    /// `X-Forwarded-For`; `None` when the peer is no trusted proxy or sent none.
    pub forwarded_for: Option<String>,
}

/// What was called and what came of it: everything of an event but who, when, how and how
/// long. Transports build one where the outcome is known and hand it to whoever writes.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// `tools/call` for a tool call on any transport; otherwise the MCP method
    /// (`resources/read`, `tools/list`, `initialize`, ...) or, for a request refused before
    /// its body was read, the HTTP method and path (`POST /mcp`).
    pub method: String,
    /// The tool name of a `tools/call`.
    pub tool: Option<String>,
    /// The arguments as sent (redacted when the event is built).
    pub arguments: Value,
    pub outcome: AuditOutcome,
    /// The error kind (`DatasetNotFound`, `InvalidToken`, ...) for `error` and `challenge`.
    pub error: Option<String>,
    pub result_count: Option<u64>,
    pub snapshot_id: Option<String>,
    /// Why a request was refused, as its challenge told the client (`error_description`).
    pub reason: Option<String>,
    /// The refusal's bounded reason word (`expired`, `bad_signature`, ...), for the metric.
    pub fault: Option<&'static str>,
}

/// The method of a tool call, on every transport.
pub const TOOLS_CALL: &str = "tools/call";

impl Call {
    /// A tool call through the dispatcher. `served_snapshot` is the snapshot being served at
    /// the time; a result that names the snapshot it was answered from takes precedence.
    pub fn tool(
        name: &str,
        arguments: &Value,
        outcome: &Outcome,
        served_snapshot: Option<&str>,
    ) -> Call {
        Call {
            method: TOOLS_CALL.to_string(),
            tool: Some(name.to_string()),
            arguments: arguments.clone(),
            outcome: AuditOutcome::of(outcome),
            error: match outcome {
                Outcome::Err(e) => Some(e.kind.clone()),
                _ => None,
            },
            result_count: result_count(outcome),
            snapshot_id: answered_snapshot(outcome).or_else(|| served_snapshot.map(String::from)),
            reason: None,
            fault: None,
        }
    }

    /// A call that is not a tool call (a list, a read, a protocol method).
    pub fn method(method: &str, arguments: Value, outcome: AuditOutcome) -> Call {
        Call {
            method: method.to_string(),
            tool: None,
            arguments,
            outcome,
            error: None,
            result_count: None,
            snapshot_id: None,
            reason: None,
            fault: None,
        }
    }

    /// A request refused with a 401/403 challenge (`error_kind`: `MissingToken`,
    /// `InvalidToken`, `InsufficientScope`).
    pub fn challenge(method: &str, tool: Option<&str>, arguments: Value, error_kind: &str) -> Call {
        Call {
            method: method.to_string(),
            tool: tool.map(String::from),
            arguments,
            outcome: AuditOutcome::Challenge,
            error: Some(error_kind.to_string()),
            result_count: None,
            snapshot_id: None,
            reason: None,
            fault: None,
        }
    }

    /// The refusal's reason (the challenge's `error_description`) and its bounded word.
    pub fn with_refusal(mut self, reason: String, fault: &'static str) -> Call {
        self.reason = Some(reason);
        self.fault = Some(fault);
        self
    }

    pub fn with_error(mut self, kind: impl Into<String>) -> Call {
        self.error = Some(kind.into());
        self
    }

    pub fn with_count(mut self, count: u64) -> Call {
        self.result_count = Some(count);
        self
    }

    pub fn with_snapshot(mut self, snapshot_id: Option<String>) -> Call {
        self.snapshot_id = snapshot_id;
        self
    }
}

/// Whether the data values in audited arguments are masked (the default) or kept as sent
/// (`serve --audit-verbatim-arguments`, for a deployment whose log must hold them).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ArgumentValues {
    #[default]
    Masked,
    Verbatim,
}

/// One audit line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AuditEvent {
    /// RFC 3339, UTC, milliseconds: when the request arrived.
    pub time: String,
    /// The caller's `sub`; `null` when the request was refused before a caller was known.
    pub subject: Option<String>,
    pub client_id: Option<String>,
    /// See [`Who::peer`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// See [`Who::forwarded_for`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub forwarded_for: Option<String>,
    pub transport: Transport,
    /// See [`Call::method`].
    pub method: String,
    /// The tool of a `tools/call`; `null` otherwise.
    pub tool: Option<String>,
    /// The arguments with every credential-like key removed (see [`redact`]).
    pub arguments: Value,
    /// Paths of the keys removed from `arguments`, e.g. `["headers.Authorization"]`.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub redacted: Vec<String>,
    /// Strings of `arguments` whose data values became placeholders, with their kinds, e.g.
    /// `["description: IBAN"]` (see [`mask`]); empty when the sink keeps values verbatim.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub masked: Vec<String>,
    pub outcome: AuditOutcome,
    /// The error kind for `error` and `challenge`.
    pub error: Option<String>,
    /// See [`Call::reason`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// See [`Call::fault`].
    #[serde(skip_serializing_if = "Option::is_none")]
    pub fault: Option<&'static str>,
    pub result_count: Option<u64>,
    /// The snapshot the answer came from, else the one served when the call was made; `null`
    /// when none is loaded.
    pub snapshot_id: Option<String>,
    /// From the request's arrival to its answer (HTTP: the whole response).
    pub latency_ms: u64,
}

impl AuditEvent {
    /// The event of one call; the arguments are redacted here, and their data values masked
    /// (see [`mask`]) unless the sink keeps them ([`ArgumentValues::Verbatim`]).
    pub fn new(
        time: SystemTime,
        who: &Who,
        transport: Transport,
        call: Call,
        latency: Duration,
        values: ArgumentValues,
    ) -> AuditEvent {
        let (arguments, redacted) = redact(&call.arguments);
        let (arguments, masked) = match values {
            ArgumentValues::Masked => mask(&arguments),
            ArgumentValues::Verbatim => (arguments, Vec::new()),
        };
        AuditEvent {
            time: rfc3339_millis(time),
            subject: who.subject.clone(),
            client_id: who.client_id.clone(),
            peer: who.peer.clone(),
            forwarded_for: who.forwarded_for.clone(),
            transport,
            method: call.method,
            tool: call.tool,
            arguments,
            redacted,
            masked,
            outcome: call.outcome,
            error: call.error,
            reason: call.reason,
            fault: call.fault,
            result_count: call.result_count,
            snapshot_id: call.snapshot_id,
            latency_ms: u64::try_from(latency.as_millis()).unwrap_or(u64::MAX),
        }
    }
}

/// `YYYY-MM-DDTHH:MM:SS.mmmZ`.
pub fn rfc3339_millis(t: SystemTime) -> String {
    let seconds = format_rfc3339(t);
    let millis = t
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_millis())
        .unwrap_or(0);
    match seconds.strip_suffix('Z') {
        Some(base) => format!("{base}.{millis:03}Z"),
        None => seconds,
    }
}

/// Whether a key names a credential: compared lowercase with `-` and `_` removed, it
/// contains one of these words (so `Authorization`, `access_token`, `X-Api-Key`,
/// `client_secret`, `Password` all match).
fn is_credential_key(key: &str) -> bool {
    const WORDS: [&str; 9] = [
        "authorization",
        "token",
        "password",
        "passwd",
        "secret",
        "apikey",
        "cookie",
        "credential",
        "privatekey",
    ];
    let folded: String = key
        .chars()
        .filter(|c| *c != '-' && *c != '_')
        .flat_map(char::to_lowercase)
        .collect();
    WORDS.iter().any(|w| folded.contains(w))
}

/// Removes every credential-like key (see `is_credential_key`) at any depth, and returns
/// the paths of what it removed, so the log shows that something was withheld.
pub fn redact(arguments: &Value) -> (Value, Vec<String>) {
    fn walk(value: &Value, path: &str, removed: &mut Vec<String>) -> Value {
        match value {
            Value::Object(map) => {
                let mut kept = Map::new();
                for (k, v) in map {
                    let here = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    if is_credential_key(k) {
                        removed.push(here);
                    } else {
                        kept.insert(k.clone(), walk(v, &here, removed));
                    }
                }
                Value::Object(kept)
            }
            Value::Array(items) => Value::Array(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| walk(v, &format!("{path}[{i}]"), removed))
                    .collect(),
            ),
            other => other.clone(),
        }
    }
    let mut removed = Vec::new();
    let value = walk(arguments, "", &mut removed);
    (value, removed)
}

/// Why an event was not written.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    #[error("cannot open the audit log {path}: {source}; check that its directory exists and is writable, or pass another --audit-log")]
    Open {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("writing to the audit log {target} failed ({source}); free space or fix the log's permissions, then retry")]
    Write {
        target: String,
        source: std::io::Error,
    },
    #[error("an audit event could not be serialised: {0}; report this to the govcat maintainers")]
    Serialize(String),
}

/// The error kind a transport answers with when a call could not be audited.
pub const AUDIT_UNAVAILABLE: &str = "AuditUnavailable";

impl AuditError {
    /// The error object a transport answers with instead of the call's result: a call that
    /// is not on record is not answered.
    pub fn to_tool_error(&self) -> ToolError {
        ToolError::new(
            AUDIT_UNAVAILABLE,
            format!("the audit log is unwritable, so this request was not answered: {self}"),
        )
    }
}

/// Where audit lines go: a file (appended) or a standard stream. One line per event,
/// flushed before `record` returns.
pub struct AuditSink {
    target: String,
    writer: Mutex<Box<dyn Write + Send>>,
    failures: AtomicU64,
    written: AtomicU64,
    values: ArgumentValues,
}

impl AuditSink {
    /// Appends to `path`, creating the file (not its directory).
    pub fn file(path: &Path) -> Result<AuditSink, AuditError> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|source| AuditError::Open {
                path: path.to_path_buf(),
                source,
            })?;
        Ok(AuditSink::writer(
            path.display().to_string(),
            Box::new(file),
        ))
    }

    /// Standard output. Not for `mcp-stdio`, whose stdout is the protocol: use [`stderr`].
    ///
    /// [`stderr`]: AuditSink::stderr
    pub fn stdout() -> AuditSink {
        AuditSink::writer("stdout".into(), Box::new(std::io::stdout()))
    }

    pub fn stderr() -> AuditSink {
        AuditSink::writer("stderr".into(), Box::new(std::io::stderr()))
    }

    /// Any writer; `target` names it in error messages.
    pub fn writer(target: String, writer: Box<dyn Write + Send>) -> AuditSink {
        AuditSink {
            target,
            writer: Mutex::new(writer),
            failures: AtomicU64::new(0),
            written: AtomicU64::new(0),
            values: ArgumentValues::default(),
        }
    }

    /// Keeps or masks the data values of the arguments it records.
    pub fn with_argument_values(mut self, values: ArgumentValues) -> AuditSink {
        self.values = values;
        self
    }

    /// Whether this sink's events mask data values.
    pub fn argument_values(&self) -> ArgumentValues {
        self.values
    }

    /// Writes one JSON line and flushes it. An error means the event is not on record.
    pub fn record(&self, event: &AuditEvent) -> Result<(), AuditError> {
        let mut line = serde_json::to_vec(event).map_err(|e| {
            self.failures.fetch_add(1, Ordering::Relaxed);
            AuditError::Serialize(e.to_string())
        })?;
        line.push(b'\n');
        let result = match self.writer.lock() {
            Ok(mut w) => w.write_all(&line).and_then(|()| w.flush()),
            Err(_) => Err(std::io::Error::other(
                "an earlier write panicked while holding the log",
            )),
        };
        match result {
            Ok(()) => {
                self.written.fetch_add(1, Ordering::Relaxed);
                Ok(())
            }
            Err(source) => {
                self.failures.fetch_add(1, Ordering::Relaxed);
                Err(AuditError::Write {
                    target: self.target.clone(),
                    source,
                })
            }
        }
    }

    /// Where the lines go: a path, `stdout` or `stderr`.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// Events that could not be written since start.
    pub fn failures(&self) -> u64 {
        self.failures.load(Ordering::Relaxed)
    }

    /// Events written since start.
    pub fn written(&self) -> u64 {
        self.written.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::InputRequired;
    use serde_json::json;

    const T0: Duration = Duration::from_millis(1_796_000_000_123);

    #[test]
    fn credentials_are_removed_at_any_depth_and_named() {
        let args = json!({
            "domain": "claims",
            "Authorization": "Bearer abc",
            "nested": {"access_token": "x", "keep": 1, "list": [{"X-Api-Key": "k", "n": 2}]},
            "client_secret": "s",
            "PASSWORD": "p",
            "description": "contains a token-like word in a value, which stays",
        });
        let (kept, removed) = redact(&args);
        assert_eq!(
            kept,
            json!({
                "domain": "claims",
                "nested": {"keep": 1, "list": [{"n": 2}]},
                "description": "contains a token-like word in a value, which stays",
            })
        );
        assert_eq!(
            removed,
            vec![
                "Authorization",
                "nested.access_token",
                "nested.list[0].X-Api-Key",
                "client_secret",
                "PASSWORD"
            ]
        );
    }

    #[test]
    fn outcomes_are_classified_and_counted() {
        let cases = [
            (
                Outcome::Ok(json!({"entries": []})),
                AuditOutcome::Empty,
                Some(0),
            ),
            (
                Outcome::Ok(json!({"entries": [1, 2]})),
                AuditOutcome::Ok,
                Some(2),
            ),
            (
                Outcome::Ok(json!({"metadata": {}})),
                AuditOutcome::Ok,
                Some(1),
            ),
            (
                Outcome::InputRequired(InputRequired {
                    message: "m".into(),
                    missing: vec![],
                }),
                AuditOutcome::InputRequired,
                None,
            ),
            (
                Outcome::Err(ToolError::new("DatasetNotFound", "m")),
                AuditOutcome::Error,
                None,
            ),
            (
                Outcome::Err(ToolError::insufficient_scope(vec![
                    "catalog:claims:read".into()
                ])),
                AuditOutcome::Challenge,
                None,
            ),
        ];
        for (outcome, class, count) in cases {
            assert_eq!(AuditOutcome::of(&outcome), class, "{outcome:?}");
            assert_eq!(result_count(&outcome), count, "{outcome:?}");
        }
    }

    #[test]
    fn an_event_is_one_json_line_with_every_field() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("audit.jsonl");
        let sink = AuditSink::file(&path).expect("open");
        let who = Who {
            subject: Some("alice".into()),
            client_id: Some("ide".into()),
            peer: Some("127.0.0.1:50000".into()),
            forwarded_for: None,
        };
        let call = Call::tool(
            "get_dataset",
            &json!({"domain": "claims", "table": "claim", "token": "t"}),
            &Outcome::Err(ToolError::new("DatasetNotFound", "m")),
            Some("snap-1"),
        );
        let event = AuditEvent::new(
            SystemTime::UNIX_EPOCH + T0,
            &who,
            Transport::Mcp,
            call,
            Duration::from_micros(2_700),
            ArgumentValues::Masked,
        );
        sink.record(&event).expect("record");
        sink.record(&event).expect("record");
        let text = std::fs::read_to_string(&path).expect("read");
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let line: Value = serde_json::from_str(lines[0]).expect("json");
        assert_eq!(
            line,
            json!({
                "time": "2026-11-30T00:53:20.123Z",
                "subject": "alice",
                "client_id": "ide",
                "peer": "127.0.0.1:50000",
                "transport": "mcp",
                "method": "tools/call",
                "tool": "get_dataset",
                "arguments": {"domain": "claims", "table": "claim"},
                "redacted": ["token"],
                "outcome": "error",
                "error": "DatasetNotFound",
                "result_count": null,
                "snapshot_id": "snap-1",
                "latency_ms": 2,
            })
        );
        assert_eq!((sink.written(), sink.failures()), (2, 0));
    }

    #[test]
    fn the_snapshot_a_result_names_wins_over_the_served_one() {
        let found = Outcome::Ok(json!({"entries": [], "snapshot": {"id": "snap-answered"}}));
        let call = Call::tool("find_precedents", &json!({}), &found, Some("snap-served"));
        assert_eq!(call.snapshot_id.as_deref(), Some("snap-answered"));
        assert_eq!(call.outcome, AuditOutcome::Empty);
        let echoed = Outcome::Ok(json!({"keys": [], "request": {"snapshot_id": "snap-echo"}}));
        let call = Call::tool("suggest_tags", &json!({}), &echoed, Some("snap-served"));
        assert_eq!(call.snapshot_id.as_deref(), Some("snap-echo"));
        let live = Outcome::Ok(json!({"metadata": {}}));
        let call = Call::tool("get_dataset", &json!({}), &live, Some("snap-served"));
        assert_eq!(call.snapshot_id.as_deref(), Some("snap-served"));
        let call = Call::tool("get_dataset", &json!({}), &live, None);
        assert_eq!(call.snapshot_id, None);
    }

    #[test]
    fn a_challenge_before_any_caller_is_known_names_nobody() {
        let event = AuditEvent::new(
            SystemTime::UNIX_EPOCH + T0,
            &Who::default(),
            Transport::Rest,
            Call::challenge(TOOLS_CALL, Some("get_dataset"), json!({}), "MissingToken"),
            Duration::from_millis(1),
            ArgumentValues::Masked,
        );
        assert_eq!(
            serde_json::to_value(&event).expect("json"),
            json!({
                "time": "2026-11-30T00:53:20.123Z",
                "subject": null,
                "client_id": null,
                "transport": "rest",
                "method": "tools/call",
                "tool": "get_dataset",
                "arguments": {},
                "outcome": "challenge",
                "error": "MissingToken",
                "result_count": null,
                "snapshot_id": null,
                "latency_ms": 1,
            })
        );
    }

    #[test]
    fn a_pasted_iban_is_masked_in_the_line_and_kept_only_when_the_sink_keeps_values() {
        let args =
            json!({"description": "Kontonummer DE89 3704 0044 0532 0130 00 Erika Mustermann"});
        let call = Call::method(TOOLS_CALL, args.clone(), AuditOutcome::Ok);
        let event = |values| {
            AuditEvent::new(
                SystemTime::UNIX_EPOCH + T0,
                &Who::default(),
                Transport::Rest,
                call.clone(),
                Duration::ZERO,
                values,
            )
        };
        let masked = event(ArgumentValues::Masked);
        assert_eq!(
            (masked.arguments, masked.masked),
            (
                json!({"description": "Kontonummer <IBAN> Erika Mustermann"}),
                vec!["description: IBAN".to_string()]
            )
        );
        let verbatim = event(ArgumentValues::Verbatim);
        assert_eq!((verbatim.arguments, verbatim.masked), (args, vec![]));
    }

    #[test]
    fn a_log_in_a_missing_directory_is_refused_at_open() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("no-such-dir").join("audit.jsonl");
        match AuditSink::file(&path) {
            Err(AuditError::Open { path: p, .. }) => assert_eq!(p, path),
            Err(e) => panic!("wrong error: {e}"),
            Ok(_) => panic!("opened a log in a missing directory"),
        }
    }

    #[test]
    fn a_failed_write_is_an_error_and_is_counted() {
        // /dev/full accepts the open and fails every write with ENOSPC.
        let sink = AuditSink::file(Path::new("/dev/full")).expect("open /dev/full");
        let event = AuditEvent::new(
            SystemTime::UNIX_EPOCH + T0,
            &Who::default(),
            Transport::Mcp,
            Call::challenge("POST /mcp", None, json!({}), "InvalidToken"),
            Duration::ZERO,
            ArgumentValues::Masked,
        );
        match sink.record(&event) {
            Err(AuditError::Write { target, source }) => {
                assert_eq!(target, "/dev/full");
                assert_eq!(source.raw_os_error(), Some(28)); // ENOSPC
            }
            other => panic!("expected a write error, got {other:?}"),
        }
        assert_eq!((sink.written(), sink.failures()), (0, 1));
    }
}
