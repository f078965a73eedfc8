//! Which Hosts and Origins the HTTP server answers (DNS-rebinding and cross-origin protection)
//! and where it may listen.

use super::*;

/// The Hosts (and Origins on them) the HTTP server answers; everything else is refused.
#[derive(Debug, Clone, PartialEq)]
pub struct HostPolicy {
    /// `host` or `host:port`, lower case; IPv6 without brackets.
    entries: Vec<(String, Option<u16>)>,
}

/// The loopback names every server accepts.
pub const LOOPBACK_HOSTS: [&str; 3] = ["localhost", "127.0.0.1", "::1"];

impl HostPolicy {
    /// Loopback names plus `extra` (each `host` or `host:port`).
    pub fn loopback_plus(extra: &[String]) -> Result<HostPolicy, ServerError> {
        let mut entries = Vec::new();
        for h in LOOPBACK_HOSTS
            .iter()
            .map(|s| s.to_string())
            .chain(extra.iter().cloned())
        {
            let parsed = parse_host_entry(&h)
                .ok_or_else(|| ServerError::BadAllowedHost { host: h.clone() })?;
            if !entries.contains(&parsed) {
                entries.push(parsed);
            }
        }
        Ok(HostPolicy { entries })
    }

    /// For rmcp's Host check.
    pub fn rmcp_hosts(&self) -> Vec<String> {
        self.entries
            .iter()
            .map(|(h, port)| {
                let h = if h.contains(':') {
                    format!("[{h}]")
                } else {
                    h.clone()
                };
                match port {
                    Some(p) => format!("{h}:{p}"),
                    None => h,
                }
            })
            .collect()
    }

    /// For rmcp's Origin check: `http` and `https` on every allowed host (any port unless the
    /// entry names one).
    pub fn rmcp_origins(&self) -> Vec<String> {
        self.entries
            .iter()
            .flat_map(|(h, port)| {
                let host = if h.contains(':') {
                    format!("[{h}]")
                } else {
                    h.clone()
                };
                let port = port.map_or_else(|| "*".to_string(), |p| p.to_string());
                ["http", "https"].map(|scheme| format!("{scheme}://{host}:{port}"))
            })
            .collect()
    }

    fn allows(&self, host: &str, port: Option<u16>) -> bool {
        let host = host.trim_start_matches('[').trim_end_matches(']');
        self.entries.iter().any(|(h, p)| {
            h.eq_ignore_ascii_case(host)
                && match p {
                    Some(p) => port == Some(*p),
                    None => true,
                }
        })
    }

    /// Checks the `Host` and `Origin` headers; `Err` carries the refusal message.
    pub fn check(&self, headers: &axum::http::HeaderMap) -> Result<(), String> {
        use axum::http::header::{HOST, ORIGIN};
        let host = headers
            .get(HOST)
            .and_then(|v| v.to_str().ok())
            .ok_or("the request has no readable Host header")?;
        let authority: axum::http::uri::Authority = host
            .parse()
            .map_err(|_| format!("Host '{host}' is not a host[:port]"))?;
        if !self.allows(authority.host(), authority.port_u16()) {
            return Err(format!(
                "Host '{host}' is not served here (DNS-rebinding protection); use one of {} or start govcat with --allowed-host",
                self.rmcp_hosts().join(", ")
            ));
        }
        if let Some(origin) = headers.get(ORIGIN) {
            let origin = origin
                .to_str()
                .map_err(|_| "the Origin header is not readable text".to_string())?;
            let uri: axum::http::Uri = origin
                .parse()
                .map_err(|_| format!("Origin '{origin}' is not scheme://host[:port]"))?;
            let default_port = match uri.scheme_str() {
                Some("http") => 80,
                Some("https") => 443,
                _ => return Err(format!("Origin '{origin}' is not an http(s) origin")),
            };
            let ok = uri
                .authority()
                .is_some_and(|a| self.allows(a.host(), Some(a.port_u16().unwrap_or(default_port))));
            if !ok {
                return Err(format!(
                    "Origin '{origin}' is not allowed (cross-origin protection); start govcat with --allowed-host for that host"
                ));
            }
        }
        Ok(())
    }
}

pub(super) fn parse_host_entry(s: &str) -> Option<(String, Option<u16>)> {
    let s = s.trim().to_ascii_lowercase();
    if s.is_empty() || s.contains('/') {
        return None;
    }
    if let Ok(ip) = s.parse::<std::net::Ipv6Addr>() {
        return Some((ip.to_string(), None));
    }
    let authority: axum::http::uri::Authority = s.parse().ok()?;
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']')
        .to_string();
    Some((host, authority.port_u16()))
}

/// Resolves `--listen` and refuses a non-loopback address under `--auth none`.
pub fn resolve_listen(listen: &str, auth: AuthMode) -> Result<SocketAddr, ServerError> {
    let addrs: Vec<SocketAddr> = listen
        .to_socket_addrs()
        .map_err(|e| ServerError::BadListen {
            listen: listen.into(),
            problem: e.to_string(),
        })?
        .collect();
    let first = *addrs.first().ok_or_else(|| ServerError::BadListen {
        listen: listen.into(),
        problem: "resolves to no address".into(),
    })?;
    match auth {
        AuthMode::None => {
            if let Some(addr) = addrs.iter().find(|a| !a.ip().is_loopback()) {
                return Err(ServerError::NotLoopback {
                    listen: listen.into(),
                    addr: *addr,
                });
            }
        }
        AuthMode::Jwt => {}
    }
    Ok(first)
}
