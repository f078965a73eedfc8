//! The command-line options of `govcat serve` and `govcat mcp-stdio`, with their value parsers.

use super::*;

/// How HTTP requests are authorised.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum AuthMode {
    /// No authorisation: every request is the local operator, who may read every domain.
    /// Only allowed on a loopback address.
    None,
    /// Bearer JWTs from one issuer, bound to this server's resource URI (--issuer,
    /// --audience, --jwks-file or --jwks-url); scopes catalog:<domain>:read.
    Jwt,
}

/// How the operational log (stderr; `GOVCAT_LOG` sets its filter, default `info`) is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LogFormat {
    /// One readable line per event.
    Text,
    /// One JSON object per line (for CloudWatch, Loki and the like).
    Json,
}

/// `govcat serve` options.
#[derive(Debug, Clone, clap::Args)]
pub struct ServeArgs {
    /// Address to listen on, IP:PORT (or localhost:PORT). Port 0 picks a free port; the
    /// address actually bound is printed on stdout.
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub listen: String,
    /// Authorisation mode. `none` serves every request as the local operator and therefore
    /// binds to loopback addresses only; `jwt` requires a bearer token on /mcp and /v1/*.
    #[arg(long, value_enum, default_value_t = AuthMode::None)]
    pub auth: AuthMode,
    /// `--auth jwt`: the trusted issuer; a token's `iss` must equal it exactly. Named as the
    /// authorization server in the protected-resource metadata.
    #[arg(long, value_name = "ISS")]
    pub issuer: Option<String>,
    /// `--auth jwt`: this server's resource URI (RFC 8707), e.g. https://catalog.example/mcp;
    /// a token's `aud` must contain it. The metadata URL in challenges is derived from it.
    #[arg(long, value_name = "RESOURCE_URI")]
    pub audience: Option<String>,
    /// `--auth jwt`: the issuer's JWKS as a file (read once at start).
    #[arg(long, value_name = "FILE", conflicts_with = "jwks_url")]
    pub jwks_file: Option<PathBuf>,
    /// `--auth jwt`: the issuer's JWKS URL (https://, or http:// to loopback); refetched when
    /// stale or on an unknown kid.
    #[arg(long, value_name = "URL")]
    pub jwks_url: Option<String>,
    /// Append one JSON line per call to FILE (created if missing, not its directory);
    /// default stdout, after the line naming the bound address.
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// A Host (name or name:port) accepted besides the loopback names localhost, 127.0.0.1
    /// and ::1; repeatable. Browser Origins on these hosts are accepted too; any other Host or
    /// Origin is refused with 403 (DNS-rebinding protection).
    #[arg(long = "allowed-host", value_name = "HOST")]
    pub allowed_hosts: Vec<String>,
    /// Rebuild the snapshot when the ontology or catalog files change (debounced) and swap it
    /// in atomically; requests in flight finish on the snapshot they started with, and a failed
    /// rebuild keeps the old one serving (reported in logs, /metrics and /readyz).
    #[arg(long)]
    pub watch: bool,
    /// Rebuild the snapshot from the source on this cadence (e.g. 15m, 1h, 90s) — for
    /// `--source aws`, whose changes no file watcher sees. `ttlMs` of retrieval answers is
    /// derived from it (it ends before the next rebuild).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub refresh: Option<Duration>,
    /// Requests to /mcp (POST) and /v1/* answered at once; one more is refused at once with
    /// 429 and Retry-After, never queued. /healthz, /readyz and /metrics are not counted.
    #[arg(long, value_name = "N", default_value_t = crate::limits::DEFAULT_MAX_CONCURRENT_REQUESTS,
          value_parser = parse_max_concurrent)]
    pub max_concurrent_requests: usize,
    /// MCP sessions (protocol 2025-11-25 and older) open at once. At the cap a new
    /// `initialize` first closes the least-recently-used idle session of anyone (its client
    /// gets 404 and re-initializes); when every session is busy it is refused with 503 and
    /// Retry-After. The default fits 256 MiB of session state (docs/SCALING.md).
    #[arg(long, value_name = "N", default_value_t = sessions::DEFAULT_MAX_SESSIONS,
          value_parser = parse_session_cap)]
    pub max_sessions: usize,
    /// MCP sessions one principal holds at once: a token's subject under --auth jwt, the
    /// peer's IP address under --auth none. At the cap its own least-recently-used idle
    /// session is closed first; another principal's never is.
    #[arg(long, value_name = "N", default_value_t = sessions::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL,
          value_parser = parse_session_cap)]
    pub max_sessions_per_principal: usize,
    /// Close an MCP session after this long with no request or stream of it open (e.g. 90s,
    /// 5m); its client gets 404 on its next request and re-initializes.
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub session_idle_timeout: Duration,
    /// A file of keys (one per line, at least 32 bytes each, e.g. `openssl rand -hex 32`)
    /// that every replica behind one load balancer shares: a session id is then sealed with
    /// the first key, and any replica holding one of the keys continues a session another
    /// replica opened (no affinity needed). Without it (and without GOVCAT_SESSION_KEY, the
    /// keys themselves, for a secret injected as a variable) a session lives on its replica.
    #[arg(long, value_name = "FILE", env = "GOVCAT_SESSION_KEY_FILE")]
    pub session_key_file: Option<PathBuf>,
    /// Serve the snapshot an indexer publishes (`govcat index --publish`) at s3://BUCKET/PREFIX
    /// or in a directory (a shared volume): fetch the one its CURRENT names into --index
    /// (files already there with the right checksum are not downloaded again), verify it with
    /// the load checks, serve it, and poll for a new one every --follow-interval; a new one is
    /// swapped in atomically, a failure keeps the served one (logs, /readyz `follow`,
    /// /metrics). Not ready until a snapshot is loaded. Not with --watch or --refresh.
    #[arg(long, value_name = "S3_URL_OR_DIR")]
    pub follow: Option<String>,
    /// Seconds between two reads of the published CURRENT (--follow).
    #[arg(long, value_name = "SECONDS", default_value_t = crate::sync::DEFAULT_FOLLOW_INTERVAL_SECONDS,
          value_parser = clap::value_parser!(u64).range(1..))]
    pub follow_interval: u64,
    /// A request's headers must arrive within this (e.g. 10s); a connection kept alive and
    /// waiting for its next request is closed after it too. A slow sender holds a
    /// connection, never a slot of --max-concurrent-requests.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub header_read_timeout: Duration,
    /// A request's whole body must arrive within this, counted from its headers (e.g. 10s);
    /// a later one is answered 408 and its connection closed, which frees its slot.
    #[arg(long, value_name = "DURATION", default_value = "10s", value_parser = parse_duration)]
    pub body_read_timeout: Duration,
    /// TCP connections served at once; one more is answered 503 with Retry-After and closed.
    #[arg(long, value_name = "N", default_value_t = crate::limits::DEFAULT_MAX_CONNECTIONS,
          value_parser = parse_max_concurrent)]
    pub max_connections: usize,
    /// After SIGTERM/SIGINT, /readyz answers 503 "draining" at once while requests are still
    /// served for this many seconds (so a load balancer deregisters the replica: set its
    /// deregistration delay below this); then the listener closes and requests in flight get
    /// 10 more seconds to finish. 0 stops at once.
    #[arg(long, value_name = "SECONDS", default_value_t = crate::limits::DEFAULT_DRAIN_SECONDS)]
    pub drain_seconds: u64,
    /// `--auth jwt`: show /readyz's details (snapshot ids, catalog and store locations, last
    /// errors) to callers without a token too. Without it they see only `ready` and `status`;
    /// a valid bearer token sees the details. (--auth none always shows them: it serves
    /// loopback only.)
    #[arg(long)]
    pub public_probe_details: bool,
    /// A proxy (IP or CIDR, e.g. 10.0.0.0/8 for the load balancer's subnets) whose
    /// X-Forwarded-For is believed: the audit line then names the client it forwarded
    /// (`forwarded_for`) beside the TCP peer. Repeatable; without it the header is ignored.
    #[arg(long = "trusted-proxy", value_name = "CIDR")]
    pub trusted_proxies: Vec<String>,
    /// Keep data values in audited arguments as sent. By default IBANs, card numbers (Luhn),
    /// e-mail addresses, international phone numbers and national identifiers in them become
    /// placeholders such as <IBAN> in the audit line (the tool still receives them).
    #[arg(long)]
    pub audit_verbatim_arguments: bool,
    /// The operational log's format on stderr (the audit log is always JSON lines);
    /// `GOVCAT_LOG` sets its filter, e.g. `info` (default) or `govcat=debug`.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// S3 endpoint for --follow (an S3-compatible store or an emulator); requests then use
    /// path-style addressing. Credentials and region come from the default AWS chain.
    #[arg(long, value_name = "URL", env = "AWS_ENDPOINT_URL")]
    pub s3_endpoint: Option<String>,
}

impl ServeArgs {
    /// The session keys of `--session-key-file`, else of the `GOVCAT_SESSION_KEY` variable.
    pub fn session_keys(&self) -> Result<Option<super::portable::SessionKeys>, String> {
        if let Some(path) = &self.session_key_file {
            return super::portable::SessionKeys::load(path).map(Some);
        }
        match std::env::var("GOVCAT_SESSION_KEY") {
            Ok(text) => super::portable::SessionKeys::from_lines(&text)
                .map(Some)
                .map_err(|problem| format!("GOVCAT_SESSION_KEY {problem}")),
            Err(_) => Ok(None),
        }
    }

    /// The connection bounds these flags set.
    pub fn conn_limits(&self) -> conn::ConnLimits {
        conn::ConnLimits {
            header_read_timeout: self.header_read_timeout,
            body_read_timeout: self.body_read_timeout,
            max_connections: self.max_connections,
            drain: Duration::from_secs(self.drain_seconds),
            ..conn::ConnLimits::default()
        }
    }

    /// Why these flags cannot be served together, if they cannot.
    pub fn conflict(&self) -> Option<String> {
        let other = if self.watch {
            "--watch"
        } else if self.refresh.is_some() {
            "--refresh"
        } else {
            return None;
        };
        self.follow.as_ref()?;
        Some(format!(
            "--follow and {other} cannot be used together: --follow serves the snapshot an indexer publishes, {other} rebuilds a snapshot of this replica's own, whose id no other replica has (cursors would not work across replicas) and which the next poll would replace. Drop {other}, or drop --follow to rebuild locally"
        ))
    }
}

/// Parses `--max-sessions` and `--max-sessions-per-principal`: a whole number of at least 1.
pub(super) fn parse_session_cap(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of sessions; give a whole number of at least 1, e.g. {}",
            sessions::DEFAULT_MAX_SESSIONS_PER_PRINCIPAL
        )),
    }
}

/// Parses `90s`, `15m`, `1h` (a number and a unit).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let (num, unit) = s.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| format!("'{s}' is not a duration; write e.g. 90s, 15m or 1h"))?;
    let secs = match unit {
        "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => {
            return Err(format!(
                "'{s}' has no unit s, m or h; write e.g. 90s, 15m or 1h"
            ))
        }
    };
    if secs == 0 {
        return Err(format!(
            "'{s}' is no time at all; give a duration longer than 0s, e.g. 10s"
        ));
    }
    Ok(Duration::from_secs(secs))
}

/// Parses `--max-concurrent-requests`: a whole number of at least 1.
pub(super) fn parse_max_concurrent(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of requests; give a whole number of at least 1, e.g. {}",
            crate::limits::DEFAULT_MAX_CONCURRENT_REQUESTS
        )),
    }
}

/// `govcat mcp-stdio` options.
#[derive(Debug, Clone, clap::Args)]
pub struct StdioArgs {
    /// Append one JSON line per call to FILE (created if missing, not its directory);
    /// default stderr (stdout carries the protocol).
    #[arg(long, value_name = "FILE")]
    pub audit_log: Option<PathBuf>,
    /// Keep data values in audited arguments as sent (see `govcat serve --help`).
    #[arg(long)]
    pub audit_verbatim_arguments: bool,
    /// The operational log's format on stderr; `GOVCAT_LOG` sets its filter.
    #[arg(long, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
}
