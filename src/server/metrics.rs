//! Request metrics in the Prometheus text format (version 0.0.4), kept in memory: HTTP requests
//! by route and status, tool calls by transport, tool and outcome, and latency histograms for
//! both. A small hand-written registry: a handful of label sets, one mutex, no exporter crate.
//!
//! It never records an argument value or a caller identity: labels are route templates, tool
//! names from the fixed tool list, and outcome kinds.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::time::Duration;

/// Upper bounds (seconds) of the latency histogram buckets; `+Inf` is implicit.
pub const LATENCY_BUCKETS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How a tool call ended, as a metric label.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum CallOutcome {
    Ok,
    InputRequired,
    Error,
}

impl CallOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            CallOutcome::Ok => "ok",
            CallOutcome::InputRequired => "input_required",
            CallOutcome::Error => "error",
        }
    }
}

#[derive(Debug, Clone, Default)]
struct Histogram {
    /// Count per bucket of `LATENCY_BUCKETS` (not cumulative), plus one for `+Inf`.
    buckets: [u64; LATENCY_BUCKETS.len() + 1],
    sum: f64,
    count: u64,
}

impl Histogram {
    fn observe(&mut self, seconds: f64) {
        let i = LATENCY_BUCKETS
            .iter()
            .position(|le| seconds <= *le)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[i] += 1;
        self.sum += seconds;
        self.count += 1;
    }

    fn render(&self, out: &mut String, name: &str, labels: &str) {
        let mut cumulative = 0;
        for (i, le) in LATENCY_BUCKETS.iter().enumerate() {
            cumulative += self.buckets[i];
            let _ = writeln!(out, "{name}_bucket{{{labels},le=\"{le}\"}} {cumulative}");
        }
        cumulative += self.buckets[LATENCY_BUCKETS.len()];
        let _ = writeln!(out, "{name}_bucket{{{labels},le=\"+Inf\"}} {cumulative}");
        let _ = writeln!(out, "{name}_sum{{{labels}}} {}", self.sum);
        let _ = writeln!(out, "{name}_count{{{labels}}} {}", self.count);
    }
}

#[derive(Debug, Default)]
struct Inner {
    /// (route, status) -> count.
    http_requests: BTreeMap<(String, u16), u64>,
    /// route -> latency.
    http_latency: BTreeMap<String, Histogram>,
    /// (transport, tool, outcome, error kind or "") -> count.
    tool_calls: BTreeMap<(&'static str, String, CallOutcome, String), u64>,
    /// (transport, tool) -> latency.
    tool_latency: BTreeMap<(&'static str, String), Histogram>,
    /// reason (a bounded word, see `AuthError::reason`) -> refused requests.
    auth_failures: BTreeMap<&'static str, u64>,
}

/// The process-wide metrics registry of one server.
#[derive(Debug, Default)]
pub struct Metrics {
    inner: Mutex<Inner>,
}

/// Values the server reads from its context at scrape time (see `server::gauges`).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Gauges {
    /// Seconds since the process started serving.
    pub uptime_seconds: f64,
    /// Whether `/readyz` answers ready.
    pub ready: bool,
    /// The served snapshot; `None` when the context has no retrieval.
    pub snapshot: Option<SnapshotGauge>,
    /// The audit sink's counters.
    pub audit: Option<AuditGauge>,
    /// Requests in flight and refusals of `--max-concurrent-requests`.
    pub in_flight: Option<InFlightGauge>,
    /// MCP sessions: live, caps, evictions by reason and refusals.
    pub sessions: Option<SessionGauge>,
    /// `--follow`: swaps, errors by reason, lag and downloads.
    pub follow: Option<crate::sync::follow::FollowStatus>,
}

/// MCP sessions open now, their caps, sessions the server closed (by reason) and `initialize`
/// requests refused at a cap, since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionGauge {
    pub live: usize,
    pub max: usize,
    pub max_per_principal: usize,
    pub evicted: Vec<(&'static str, u64)>,
    pub refused: u64,
}

/// Requests holding a slot of `--max-concurrent-requests`, the bound, and 429s since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct InFlightGauge {
    pub current: usize,
    pub max: usize,
    pub refused: u64,
}

/// Audit lines written and refused since start.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct AuditGauge {
    pub written: u64,
    /// Events that could not be written; each of their calls was answered with an error.
    pub failures: u64,
}

/// The state of the snapshot handle.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SnapshotGauge {
    pub loaded: bool,
    pub id: Option<String>,
    /// Seconds since the served snapshot was built.
    pub age_seconds: Option<f64>,
    pub swaps: u64,
    pub rebuilds_ok: u64,
    pub rebuilds_failed: u64,
}

impl Metrics {
    pub fn record_http(&self, route: &str, status: u16, elapsed: Duration) {
        let mut m = self.lock();
        *m.http_requests
            .entry((route.to_string(), status))
            .or_default() += 1;
        m.http_latency
            .entry(route.to_string())
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// Records one tool call. `error_kind` is the `error` field of a failed call.
    pub fn record_tool(
        &self,
        transport: &'static str,
        tool: &str,
        outcome: CallOutcome,
        error_kind: Option<&str>,
        elapsed: Duration,
    ) {
        let mut m = self.lock();
        *m.tool_calls
            .entry((
                transport,
                tool.to_string(),
                outcome,
                error_kind.unwrap_or("").to_string(),
            ))
            .or_default() += 1;
        m.tool_latency
            .entry((transport, tool.to_string()))
            .or_default()
            .observe(elapsed.as_secs_f64());
    }

    /// Records one request refused with a 401/403 challenge, by its bounded reason.
    pub fn record_auth_failure(&self, reason: &'static str) {
        *self.lock().auth_failures.entry(reason).or_default() += 1;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves counters that are still valid numbers.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The Prometheus text exposition of everything recorded, plus the gauges.
    pub fn render(&self, gauges: &Gauges) -> String {
        let m = self.lock();
        let mut out = String::new();
        out += "# HELP govcat_http_requests_total HTTP requests answered, by route template and status.\n";
        out += "# TYPE govcat_http_requests_total counter\n";
        for ((route, status), n) in &m.http_requests {
            let _ = writeln!(
                out,
                "govcat_http_requests_total{{route=\"{}\",status=\"{status}\"}} {n}",
                escape(route)
            );
        }
        out +=
            "# HELP govcat_http_request_duration_seconds HTTP request latency by route template.\n";
        out += "# TYPE govcat_http_request_duration_seconds histogram\n";
        for (route, h) in &m.http_latency {
            h.render(
                &mut out,
                "govcat_http_request_duration_seconds",
                &format!("route=\"{}\"", escape(route)),
            );
        }
        out += "# HELP govcat_tool_calls_total Tool calls by transport (rest, mcp), tool and outcome (ok, input_required, error); error_kind is the error object's kind.\n";
        out += "# TYPE govcat_tool_calls_total counter\n";
        for ((transport, tool, outcome, kind), n) in &m.tool_calls {
            let _ = writeln!(
                out,
                "govcat_tool_calls_total{{transport=\"{transport}\",tool=\"{}\",outcome=\"{}\",error_kind=\"{}\"}} {n}",
                escape(tool),
                outcome.as_str(),
                escape(kind)
            );
        }
        out += "# HELP govcat_tool_call_duration_seconds Tool call latency (dispatcher only, no transport) by transport and tool.\n";
        out += "# TYPE govcat_tool_call_duration_seconds histogram\n";
        for ((transport, tool), h) in &m.tool_latency {
            h.render(
                &mut out,
                "govcat_tool_call_duration_seconds",
                &format!("transport=\"{transport}\",tool=\"{}\"", escape(tool)),
            );
        }
        out += "# HELP govcat_auth_failures_total Requests refused with a 401/403 challenge, by reason (missing_token, insufficient_scope, or the token's fault: malformed, too_large, algorithm, unknown_kid, bad_signature, issuer, audience, expired, not_yet_valid, claims).\n";
        out += "# TYPE govcat_auth_failures_total counter\n";
        for (reason, n) in &m.auth_failures {
            let _ = writeln!(out, "govcat_auth_failures_total{{reason=\"{reason}\"}} {n}");
        }
        out += "# HELP govcat_uptime_seconds Seconds since the server started serving.\n";
        out += "# TYPE govcat_uptime_seconds gauge\n";
        let _ = writeln!(out, "govcat_uptime_seconds {}", gauges.uptime_seconds);
        out += "# HELP govcat_ready 1 when /readyz answers ready, else 0.\n";
        out += "# TYPE govcat_ready gauge\n";
        let _ = writeln!(out, "govcat_ready {}", u8::from(gauges.ready));
        if let Some(audit) = &gauges.audit {
            out += "# HELP govcat_audit_events_total Audit lines written since start.\n";
            out += "# TYPE govcat_audit_events_total counter\n";
            let _ = writeln!(out, "govcat_audit_events_total {}", audit.written);
            out += "# HELP govcat_audit_failures_total Audit lines that could not be written; each such call was answered 503 (HTTP) or isError (stdio), not with its result.\n";
            out += "# TYPE govcat_audit_failures_total counter\n";
            let _ = writeln!(out, "govcat_audit_failures_total {}", audit.failures);
        }
        if let Some(f) = &gauges.in_flight {
            out += "# HELP govcat_http_in_flight Requests to /mcp and /v1/* being answered now.\n";
            out += "# TYPE govcat_http_in_flight gauge\n";
            let _ = writeln!(out, "govcat_http_in_flight {}", f.current);
            out += "# HELP govcat_http_in_flight_max The bound on requests answered at once (--max-concurrent-requests).\n";
            out += "# TYPE govcat_http_in_flight_max gauge\n";
            let _ = writeln!(out, "govcat_http_in_flight_max {}", f.max);
            out += "# HELP govcat_http_refused_total Requests refused with 429 because --max-concurrent-requests were in flight.\n";
            out += "# TYPE govcat_http_refused_total counter\n";
            let _ = writeln!(out, "govcat_http_refused_total {}", f.refused);
        }
        if let Some(s) = &gauges.sessions {
            out += "# HELP govcat_mcp_sessions MCP sessions open now.\n";
            out += "# TYPE govcat_mcp_sessions gauge\n";
            let _ = writeln!(out, "govcat_mcp_sessions {}", s.live);
            out += "# HELP govcat_mcp_sessions_max The cap on MCP sessions (--max-sessions).\n";
            out += "# TYPE govcat_mcp_sessions_max gauge\n";
            let _ = writeln!(out, "govcat_mcp_sessions_max {}", s.max);
            out += "# HELP govcat_mcp_sessions_per_principal_max The cap on one principal's MCP sessions (--max-sessions-per-principal).\n";
            out += "# TYPE govcat_mcp_sessions_per_principal_max gauge\n";
            let _ = writeln!(
                out,
                "govcat_mcp_sessions_per_principal_max {}",
                s.max_per_principal
            );
            out += "# HELP govcat_mcp_sessions_evicted_total MCP sessions the server closed, by reason (idle_timeout, principal_cap, total_cap).\n";
            out += "# TYPE govcat_mcp_sessions_evicted_total counter\n";
            for (reason, n) in &s.evicted {
                let _ = writeln!(
                    out,
                    "govcat_mcp_sessions_evicted_total{{reason=\"{reason}\"}} {n}"
                );
            }
            out += "# HELP govcat_mcp_sessions_refused_total MCP initialize requests refused with 503 because every session within a cap was busy.\n";
            out += "# TYPE govcat_mcp_sessions_refused_total counter\n";
            let _ = writeln!(out, "govcat_mcp_sessions_refused_total {}", s.refused);
        }
        if let Some(snap) = &gauges.snapshot {
            out += "# HELP govcat_snapshot_loaded 1 when a snapshot is served, else 0.\n";
            out += "# TYPE govcat_snapshot_loaded gauge\n";
            let _ = writeln!(out, "govcat_snapshot_loaded {}", u8::from(snap.loaded));
            if let Some(id) = &snap.id {
                out += "# HELP govcat_snapshot_info The served snapshot (its id as a label).\n";
                out += "# TYPE govcat_snapshot_info gauge\n";
                let _ = writeln!(out, "govcat_snapshot_info{{id=\"{}\"}} 1", escape(id));
            }
            if let Some(age) = snap.age_seconds {
                out += "# HELP govcat_snapshot_age_seconds Seconds since the served snapshot was built.\n";
                out += "# TYPE govcat_snapshot_age_seconds gauge\n";
                let _ = writeln!(out, "govcat_snapshot_age_seconds {age}");
            }
            out += "# HELP govcat_snapshot_swaps_total Snapshots swapped in since start.\n";
            out += "# TYPE govcat_snapshot_swaps_total counter\n";
            let _ = writeln!(out, "govcat_snapshot_swaps_total {}", snap.swaps);
            out +=
                "# HELP govcat_snapshot_rebuilds_total Snapshot rebuilds (--watch) by outcome.\n";
            out += "# TYPE govcat_snapshot_rebuilds_total counter\n";
            let _ = writeln!(
                out,
                "govcat_snapshot_rebuilds_total{{outcome=\"ok\"}} {}",
                snap.rebuilds_ok
            );
            let _ = writeln!(
                out,
                "govcat_snapshot_rebuilds_total{{outcome=\"failed\"}} {}",
                snap.rebuilds_failed
            );
        }
        if let Some(f) = &gauges.follow {
            render_follow(&mut out, f);
        }
        out
    }
}

/// The `--follow` metrics (the served snapshot's age is `govcat_snapshot_age_seconds`).
fn render_follow(out: &mut String, f: &crate::sync::follow::FollowStatus) {
    *out += "# HELP govcat_follow_swaps_total Snapshots fetched from --follow and swapped in since start.\n";
    *out += "# TYPE govcat_follow_swaps_total counter\n";
    let _ = writeln!(out, "govcat_follow_swaps_total {}", f.swaps);
    *out += "# HELP govcat_follow_errors_total Failed polls of --follow by reason; the served snapshot stayed.\n";
    *out += "# TYPE govcat_follow_errors_total counter\n";
    for (reason, n) in &f.errors {
        let _ = writeln!(out, "govcat_follow_errors_total{{reason=\"{reason}\"}} {n}");
    }
    if let Some(lag) = f.lag_seconds {
        *out += "# HELP govcat_follow_lag_seconds Seconds since the replica last served what the published CURRENT names: since CURRENT first named another snapshot or a poll first failed (0 when in step).\n";
        *out += "# TYPE govcat_follow_lag_seconds gauge\n";
        let _ = writeln!(out, "govcat_follow_lag_seconds {lag}");
    }
    *out += "# HELP govcat_follow_downloaded_bytes_total Bytes read from the --follow store since start.\n";
    *out += "# TYPE govcat_follow_downloaded_bytes_total counter\n";
    let _ = writeln!(
        out,
        "govcat_follow_downloaded_bytes_total {}",
        f.downloaded_bytes
    );
    *out += "# HELP govcat_follow_downloaded_objects_total Objects read from the --follow store since start.\n";
    *out += "# TYPE govcat_follow_downloaded_objects_total counter\n";
    let _ = writeln!(
        out,
        "govcat_follow_downloaded_objects_total {}",
        f.downloaded_objects
    );
    *out += "# HELP govcat_follow_reused_bytes_total Bytes of new snapshots' documents (same JSON) and vectors (same embedded texts) copied from the local snapshot instead of downloaded.\n";
    *out += "# TYPE govcat_follow_reused_bytes_total counter\n";
    let _ = writeln!(out, "govcat_follow_reused_bytes_total {}", f.reused_bytes);
}

/// Escapes a label value (backslash, double quote, newline).
fn escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
        text.lines().find(|l| l.starts_with(prefix))
    }

    #[test]
    fn histogram_buckets_are_cumulative_and_count_every_observation() {
        let m = Metrics::default();
        m.record_http("/v1/tools/{name}", 200, Duration::from_micros(300));
        m.record_http("/v1/tools/{name}", 200, Duration::from_millis(3));
        m.record_http("/v1/tools/{name}", 404, Duration::from_secs(20));
        let text = m.render(&Gauges::default());
        let name = "govcat_http_request_duration_seconds_bucket{route=\"/v1/tools/{name}\"";
        assert_eq!(
            line(&text, &format!("{name},le=\"0.0005\"}}")),
            Some(&*format!("{name},le=\"0.0005\"}} 1"))
        );
        assert_eq!(
            line(&text, &format!("{name},le=\"0.005\"}}")),
            Some(&*format!("{name},le=\"0.005\"}} 2"))
        );
        assert_eq!(
            line(&text, &format!("{name},le=\"10\"}}")),
            Some(&*format!("{name},le=\"10\"}} 2"))
        );
        assert_eq!(
            line(&text, &format!("{name},le=\"+Inf\"}}")),
            Some(&*format!("{name},le=\"+Inf\"}} 3"))
        );
        assert_eq!(
            line(
                &text,
                "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"404\"}"
            ),
            Some("govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"404\"} 1")
        );
    }

    #[test]
    fn tool_calls_are_counted_by_outcome_and_error_kind() {
        let m = Metrics::default();
        let t = Duration::from_millis(1);
        m.record_tool("mcp", "get_dataset", CallOutcome::Ok, None, t);
        m.record_tool("mcp", "get_dataset", CallOutcome::Ok, None, t);
        m.record_tool(
            "mcp",
            "get_dataset",
            CallOutcome::Error,
            Some("DatasetNotFound"),
            t,
        );
        m.record_tool(
            "rest",
            "resolve_lf_tag",
            CallOutcome::InputRequired,
            None,
            t,
        );
        let text = m.render(&Gauges {
            audit: Some(AuditGauge {
                written: 7,
                failures: 2,
            }),
            uptime_seconds: 1.5,
            ready: true,
            snapshot: Some(SnapshotGauge {
                loaded: true,
                id: Some("20261129T194938Z-2aa17beb".into()),
                age_seconds: Some(60.0),
                swaps: 2,
                rebuilds_ok: 1,
                rebuilds_failed: 1,
            }),
            in_flight: Some(InFlightGauge {
                current: 3,
                max: 64,
                refused: 5,
            }),
            sessions: Some(SessionGauge {
                live: 12,
                max: 2048,
                max_per_principal: 64,
                evicted: vec![("idle_timeout", 4), ("principal_cap", 9), ("total_cap", 0)],
                refused: 1,
            }),
            follow: Some(crate::sync::follow::FollowStatus {
                swaps: 3,
                errors: vec![("missing_object", 2), ("access_denied", 0)],
                lag_seconds: Some(4.5),
                downloaded_bytes: 2048,
                downloaded_objects: 5,
                reused_bytes: 1536,
                ..Default::default()
            }),
        });
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("govcat_follow"))
                .collect::<Vec<_>>(),
            vec![
                "govcat_follow_swaps_total 3",
                "govcat_follow_errors_total{reason=\"missing_object\"} 2",
                "govcat_follow_errors_total{reason=\"access_denied\"} 0",
                "govcat_follow_lag_seconds 4.5",
                "govcat_follow_downloaded_bytes_total 2048",
                "govcat_follow_downloaded_objects_total 5",
                "govcat_follow_reused_bytes_total 1536",
            ]
        );
        assert_eq!(
            text.lines()
                .filter(|l| l.starts_with("govcat_mcp_sessions"))
                .collect::<Vec<_>>(),
            vec![
                "govcat_mcp_sessions 12",
                "govcat_mcp_sessions_max 2048",
                "govcat_mcp_sessions_per_principal_max 64",
                "govcat_mcp_sessions_evicted_total{reason=\"idle_timeout\"} 4",
                "govcat_mcp_sessions_evicted_total{reason=\"principal_cap\"} 9",
                "govcat_mcp_sessions_evicted_total{reason=\"total_cap\"} 0",
                "govcat_mcp_sessions_refused_total 1",
            ]
        );
        let calls: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("govcat_tool_calls_total{"))
            .collect();
        assert_eq!(
            calls,
            vec![
                "govcat_tool_calls_total{transport=\"mcp\",tool=\"get_dataset\",outcome=\"ok\",error_kind=\"\"} 2",
                "govcat_tool_calls_total{transport=\"mcp\",tool=\"get_dataset\",outcome=\"error\",error_kind=\"DatasetNotFound\"} 1",
                "govcat_tool_calls_total{transport=\"rest\",tool=\"resolve_lf_tag\",outcome=\"input_required\",error_kind=\"\"} 1",
            ]
        );
        assert_eq!(line(&text, "govcat_ready "), Some("govcat_ready 1"));
        assert_eq!(
            line(&text, "govcat_audit_failures_total "),
            Some("govcat_audit_failures_total 2")
        );
        assert_eq!(
            line(&text, "govcat_audit_events_total "),
            Some("govcat_audit_events_total 7")
        );
        assert_eq!(
            line(&text, "govcat_uptime_seconds "),
            Some("govcat_uptime_seconds 1.5")
        );
        assert_eq!(
            line(&text, "govcat_http_in_flight "),
            Some("govcat_http_in_flight 3")
        );
        assert_eq!(
            line(&text, "govcat_http_in_flight_max "),
            Some("govcat_http_in_flight_max 64")
        );
        assert_eq!(
            line(&text, "govcat_http_refused_total "),
            Some("govcat_http_refused_total 5")
        );
    }

    #[test]
    fn label_values_are_escaped() {
        assert_eq!(escape("a\"b\\c\nd"), "a\\\"b\\\\c\\nd");
    }
}
