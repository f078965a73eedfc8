//! MCP sessions under clients that never end them, over real loopback HTTP against the real
//! binary: the caps of `serve` (`--max-sessions`, `--max-sessions-per-principal`,
//! `--session-idle-timeout`) bound what a churning client makes the server hold, well-behaved
//! sessions keep working beside it, one principal cannot evict another's sessions, an evicted
//! client gets 404 and re-initializes, and a long-lived session stays flat in memory.
//!
//! Only exact tools are called (`resolve_lf_tag`), so no model or snapshot is needed.

#[path = "server_http/client.rs"]
mod client;
mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use client::{request, Response};
use common::server::{Served, MCP_HEADERS, MCP_PROTOCOL};
use common::sign_jwt;
use jsonwebtoken::{Algorithm, EncodingKey};
use serde_json::{json, Value};

/// What one idle session may hold at most (`govcat::server::sessions::SESSION_BUDGET_BYTES`).
const SESSION_BUDGET_BYTES: u64 = govcat::server::sessions::SESSION_BUDGET_BYTES as u64;

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": MCP_PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "govcat-session-test", "version": "1"}}})
}

fn resolve_call(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": {
        "name": "resolve_lf_tag", "arguments": {"tags": {
            "sensitivity": "high", "residency": "eu", "subject_type": "customer",
            "retention": "10y", "lawful_basis": "contract"}}}})
}

/// One POST to /mcp, in `session` when given, with `bearer` when given.
fn post(served: &Served, session: Option<&str>, bearer: Option<&str>, body: &Value) -> Response {
    let auth = bearer.map(|t| format!("Bearer {t}"));
    let mut headers = MCP_HEADERS.to_vec();
    if let Some(s) = session {
        headers.push(("Mcp-Session-Id", s));
        headers.push(("MCP-Protocol-Version", MCP_PROTOCOL));
    }
    if let Some(a) = &auth {
        headers.push(("Authorization", a));
    }
    request(
        served.addr,
        "POST",
        "/mcp",
        &headers,
        Some(body.to_string().as_bytes()),
    )
    .unwrap_or_else(|e| panic!("POST /mcp: {e}"))
}

/// Opens a session (initialize + initialized); `Err` carries the refused answer.
fn open(served: &Served, bearer: Option<&str>) -> Result<String, Response> {
    let init = post(served, None, bearer, &initialize());
    if init.status != 200 {
        return Err(init);
    }
    let id = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {:?}", init.headers))
        .to_string();
    let ack = post(
        served,
        Some(&id),
        bearer,
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(ack.status, 202, "initialized: {}", ack.text());
    Ok(id)
}

/// Whether a `resolve_lf_tag` call in `session` answered a valid resolution.
fn call_ok(served: &Served, session: &str, bearer: Option<&str>, id: u64) -> Result<(), String> {
    let r = post(served, Some(session), bearer, &resolve_call(id));
    if r.status != 200 {
        return Err(format!("HTTP {}: {}", r.status, r.text()));
    }
    let answer = r
        .rpc_messages()
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .ok_or_else(|| format!("no answer with id {id}: {}", r.text()))?;
    match answer["result"]["structuredContent"]["resolved"]["sensitivity"].as_str() {
        Some("high") => Ok(()),
        _ => Err(format!("not the resolution of the valid set: {answer}")),
    }
}

fn rss_bytes(served: &Served) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{}/status", served.child.id()))
        .expect("read /proc/<pid>/status");
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next())
        .and_then(|v| v.parse().ok())
        .expect("VmRSS in /proc/<pid>/status");
    kb * 1024
}

/// One sample of a `/metrics` counter or gauge (no labels, or the exact label set given).
fn metric(served: &Served, name: &str) -> u64 {
    let text = request(served.addr, "GET", "/metrics", &[], None)
        .expect("GET /metrics")
        .text();
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.strip_prefix(' ')))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {name} in /metrics:\n{text}")) as u64
}

/// Sessions with a request or stream open, from `/readyz`.
fn busy_sessions(served: &Served) -> u64 {
    let ready = request(served.addr, "GET", "/readyz", &[], None).expect("GET /readyz");
    ready.json()["mcp_sessions"]["busy"]
        .as_u64()
        .unwrap_or_else(|| panic!("no mcp_sessions.busy in /readyz: {}", ready.text()))
}

fn evicted(served: &Served, reason: &str) -> u64 {
    metric(
        served,
        &format!("govcat_mcp_sessions_evicted_total{{reason=\"{reason}\"}}"),
    )
}

const MIB: u64 = 1024 * 1024;

/// What a churn run saw.
struct Run {
    opened: u64,
    refused: u64,
    good_calls: u64,
    good_errors: Vec<String>,
    max_live: u64,
    rss_before: u64,
    rss_max: u64,
}

/// `churners` threads open `churn` sessions in all (initialize, one call, never DELETE) while
/// `good` well-behaved sessions call continuously; a sampler reads `govcat_mcp_sessions` and
/// VmRSS every 100 ms.
fn run(served: &Served, churn: u64, churners: usize, good: usize) -> Run {
    let served = Arc::new(served);
    // Warm-up: the well-behaved sessions and a few hundred calls before the baseline is read.
    let sessions: Vec<String> = (0..good)
        .map(|_| open(&served, None).expect("open a well-behaved session"))
        .collect();
    for (i, s) in sessions.iter().enumerate() {
        for n in 0..200 {
            call_ok(&served, s, None, (i * 1000 + n) as u64).expect("warm-up call");
        }
    }
    let rss_before = rss_bytes(&served);
    let done = AtomicBool::new(false);
    let opened = AtomicU64::new(0);
    let refused = AtomicU64::new(0);
    let good_calls = AtomicU64::new(0);
    let good_errors = Mutex::new(Vec::new());
    let max_live = AtomicU64::new(0);
    let rss_max = AtomicU64::new(rss_before);
    std::thread::scope(|scope| {
        for _ in 0..churners {
            scope.spawn(|| loop {
                let n = opened.fetch_add(1, Ordering::SeqCst);
                if n >= churn {
                    opened.fetch_sub(1, Ordering::SeqCst);
                    return;
                }
                match open(&served, None) {
                    Ok(s) => call_ok(&served, &s, None, 1).expect("the churner's one call"),
                    Err(r) => {
                        assert_eq!(r.status, 503, "a refused initialize: {}", r.text());
                        refused.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        for s in &sessions {
            let (done, good_calls, good_errors) = (&done, &good_calls, &good_errors);
            let served = &served;
            scope.spawn(move || {
                let mut id = 10_000;
                while !done.load(Ordering::SeqCst) {
                    id += 1;
                    good_calls.fetch_add(1, Ordering::SeqCst);
                    if let Err(e) = call_ok(served, s, None, id) {
                        good_errors.lock().unwrap().push(e);
                    }
                }
            });
        }
        scope.spawn(|| {
            while !done.load(Ordering::SeqCst) {
                max_live.fetch_max(metric(&served, "govcat_mcp_sessions"), Ordering::SeqCst);
                rss_max.fetch_max(rss_bytes(&served), Ordering::SeqCst);
                std::thread::sleep(Duration::from_millis(100));
            }
        });
        // The churners end by themselves; then stop the rest.
        while opened.load(Ordering::SeqCst) < churn {
            std::thread::sleep(Duration::from_millis(50));
        }
        std::thread::sleep(Duration::from_millis(300));
        done.store(true, Ordering::SeqCst);
    });
    Run {
        opened: opened.into_inner(),
        refused: refused.into_inner(),
        good_calls: good_calls.into_inner(),
        good_errors: good_errors.into_inner().unwrap(),
        max_live: max_live.into_inner(),
        rss_before,
        rss_max: rss_max.into_inner(),
    }
}

const CAP: u64 = 256;

#[test]
fn a_client_that_never_ends_its_sessions_is_held_to_the_cap_and_others_keep_working() {
    let cap = CAP.to_string();
    let served = Served::start(
        &["--max-sessions", &cap, "--max-sessions-per-principal", &cap],
        &[],
    );
    let churn = 20_000;
    let r = run(&served, churn, 3, 2);
    // The bound: every session the cap lets live holding its whole budget, plus 64 MiB for
    // what the allocator keeps of freed sessions (glibc's arenas; measured ~20 MiB here) and
    // for the sampler's own requests. Without the cap the same churn held ~85 KB × 20,000
    // ≈ 1.6 GiB.
    let bound = r.rss_before + CAP * SESSION_BUDGET_BYTES + 64 * MIB;
    eprintln!(
        "churn {churn}: RSS {} -> max {} MiB (bound {} MiB), live max {}, well-behaved calls {}",
        r.rss_before / MIB,
        r.rss_max / MIB,
        bound / MIB,
        r.max_live,
        r.good_calls
    );
    assert_eq!(r.opened, churn);
    assert_eq!(r.refused, 0, "idle sessions are evicted, never refused");
    assert_eq!(r.good_errors, Vec::<String>::new());
    assert!(r.good_calls > 100, "the well-behaved sessions made calls");
    assert!(
        r.max_live <= CAP,
        "live sessions {} > cap {CAP}",
        r.max_live
    );
    assert!(
        r.rss_max <= bound,
        "RSS {} MiB > bound {} MiB",
        r.rss_max / MIB,
        bound / MIB
    );
    // Every session opened is either still open or was closed to make room. Under --auth none
    // every loopback client is one principal (the peer address), so its own cap is the one met.
    let live = metric(&served, "govcat_mcp_sessions");
    assert_eq!(evicted(&served, "principal_cap") + live, churn + 2);
    assert_eq!(live, CAP);
    assert_eq!(evicted(&served, "total_cap"), 0);
}

#[test]
fn without_churn_no_session_is_evicted() {
    let cap = CAP.to_string();
    let served = Served::start(
        &["--max-sessions", &cap, "--max-sessions-per-principal", &cap],
        &[],
    );
    let r = run(&served, 0, 1, 2);
    assert_eq!(r.good_errors, Vec::<String>::new());
    assert_eq!(r.max_live, 2);
    for reason in ["idle_timeout", "principal_cap", "total_cap"] {
        assert_eq!(evicted(&served, reason), 0, "{reason}");
    }
    assert_eq!(metric(&served, "govcat_mcp_sessions_refused_total"), 0);
}

#[test]
fn an_evicted_client_gets_404_and_succeeds_after_initializing_again() {
    let served = Served::start(
        &["--max-sessions", "2", "--max-sessions-per-principal", "2"],
        &[],
    );
    let first = open(&served, None).expect("first");
    let second = open(&served, None).expect("second");
    call_ok(&served, &second, None, 1).expect("second is used after first");
    // A third closes the least recently used idle one: the first.
    let third = open(&served, None).expect("third");
    let gone = post(&served, Some(&first), None, &resolve_call(2));
    assert_eq!(gone.status, 404, "{}", gone.text());
    assert_eq!(call_ok(&served, &second, None, 3), Ok(()));
    assert_eq!(call_ok(&served, &third, None, 4), Ok(()));
    assert_eq!(evicted(&served, "principal_cap"), 1);
    // Its client initializes again (closing the next idle one) and carries on.
    let again = open(&served, None).expect("re-initialize");
    assert_eq!(call_ok(&served, &again, None, 5), Ok(()));
}

#[test]
fn an_initialize_is_refused_with_503_only_when_every_session_within_the_cap_is_busy() {
    use std::io::{Read, Write};
    let served = Served::start(
        &["--max-sessions", "1", "--max-sessions-per-principal", "1"],
        &[],
    );
    let session = open(&served, None).expect("one session");
    // A request of the session is in flight (its body is still arriving): the session is busy.
    let body = resolve_call(7).to_string();
    let (head, tail) = body.split_at(body.len() / 2);
    let mut slow = std::net::TcpStream::connect(served.addr).expect("connect");
    write!(
        slow,
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: {session}\r\nMCP-Protocol-Version: {MCP_PROTOCOL}\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{head}",
        body.len()
    )
    .expect("send half a request");
    slow.flush().expect("flush");
    let until = Instant::now() + Duration::from_secs(10);
    while busy_sessions(&served) == 0 {
        assert!(
            Instant::now() < until,
            "the request in flight did not mark its session busy"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let refused = post(&served, None, None, &initialize());
    assert_eq!(refused.status, 503, "{}", refused.text());
    assert_eq!(refused.header("retry-after"), Some("5"));
    let error = &refused.json()["error"];
    assert_eq!(error["code"], json!(-32001));
    assert_eq!(
        error["data"],
        json!({"error": "SessionLimit", "cap": "sessions per principal",
               "flag": "--max-sessions-per-principal", "limit": 1, "retry_after_seconds": 5})
    );
    assert_eq!(metric(&served, "govcat_mcp_sessions_refused_total"), 1);
    // The request completes, so the session is idle again and the next initialize replaces it.
    slow.write_all(tail.as_bytes()).expect("send the rest");
    let mut answer = String::new();
    slow.read_to_string(&mut answer).expect("read the answer");
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let next = open(&served, None).expect("initialize once the request is answered");
    assert_eq!(call_ok(&served, &next, None, 1), Ok(()));
    assert_eq!(evicted(&served, "principal_cap"), 1);
    assert_eq!(
        post(&served, Some(&session), None, &resolve_call(8)).status,
        404
    );
}

#[test]
fn sessions_idle_past_the_timeout_are_closed_and_busy_ones_are_not() {
    let served = Served::start(&["--session-idle-timeout", "2s"], &[]);
    let idle = open(&served, None).expect("idle");
    let active = open(&served, None).expect("active");
    let until = Instant::now() + Duration::from_secs(4);
    let mut n = 0;
    while Instant::now() < until {
        n += 1;
        assert_eq!(call_ok(&served, &active, None, n), Ok(()));
        std::thread::sleep(Duration::from_millis(200));
    }
    assert_eq!(
        post(&served, Some(&idle), None, &resolve_call(1)).status,
        404
    );
    assert_eq!(call_ok(&served, &active, None, n + 1), Ok(()));
    assert_eq!(evicted(&served, "idle_timeout"), 1);
    assert_eq!(metric(&served, "govcat_mcp_sessions"), 1);
}

#[test]
fn a_long_lived_session_stays_flat_in_memory() {
    let served = Served::start(&[], &[]);
    let session = open(&served, None).expect("session");
    let calls: u64 = 50_000;
    let warm_up = 5_000;
    let mut after_warm_up = 0;
    for id in 1..=calls {
        call_ok(&served, &session, None, id).unwrap_or_else(|e| panic!("call {id}: {e}"));
        if id == warm_up {
            after_warm_up = rss_bytes(&served);
        }
    }
    let end = rss_bytes(&served);
    // Tolerance 8 MiB: the allocator's arenas and the metrics' latency histograms settle
    // during warm-up; a per-call leak of even 200 bytes would add 9 MiB over 45,000 calls.
    eprintln!(
        "long-lived session: RSS after {warm_up} calls {} KiB, after {calls} {} KiB",
        after_warm_up / 1024,
        end / 1024
    );
    assert!(
        end <= after_warm_up + 8 * MIB,
        "RSS grew {} KiB over {} calls",
        (end - after_warm_up) / 1024,
        calls - warm_up
    );
    assert_eq!(metric(&served, "govcat_mcp_sessions"), 1);
}

// ---------------------------------------------------------------- per principal, JWT

const ISSUER: &str = "https://idp.govcat.sessions";
const AUDIENCE: &str = "https://govcat.sessions/mcp";
const KID: &str = "ec-1";

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_secs()
}

/// An issuer's key and JWKS for `--auth jwt` servers: tokens for any subject, and the flags
/// that make a server trust them.
struct Issuer {
    dir: tempfile::TempDir,
    key: EncodingKey,
}

impl Issuer {
    fn new() -> Issuer {
        use p256::pkcs8::EncodePrivateKey;
        use rsa::Generate;
        let secret = p256::SecretKey::generate();
        let pkcs8 = secret.to_pkcs8_der().expect("pkcs8");
        let point = secret.public_key().to_sec1_bytes();
        let jwks = json!({"keys": [{"kty": "EC", "crv": "P-256", "kid": KID, "use": "sig",
            "alg": "ES256", "x": B64.encode(&point[1..33]), "y": B64.encode(&point[33..65])}]});
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join("jwks.json"), jwks.to_string()).expect("write jwks");
        Issuer {
            dir,
            key: EncodingKey::from_ec_der(pkcs8.as_bytes()),
        }
    }

    fn token(&self, sub: &str) -> String {
        let now = unix_now();
        let claims = json!({"iss": ISSUER, "aud": AUDIENCE, "sub": sub, "iat": now - 10,
            "exp": now + 3600, "scope": "catalog:policy:read"});
        sign_jwt(Algorithm::ES256, KID, &claims, &self.key)
    }

    /// `serve --auth jwt` trusting this issuer, plus `extra` flags.
    fn serve(&self, extra: &[&str]) -> Served {
        let jwks = self.dir.path().join("jwks.json");
        let audit = self
            .dir
            .path()
            .join(format!("audit-{}.jsonl", unix_now_nanos()));
        let mut args = vec![
            "--auth",
            "jwt",
            "--issuer",
            ISSUER,
            "--audience",
            AUDIENCE,
            "--jwks-file",
            jwks.to_str().expect("utf-8"),
            "--audit-log",
            audit.to_str().expect("utf-8"),
        ];
        args.extend_from_slice(extra);
        Served::start(&args, &[])
    }
}

fn unix_now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .expect("clock after 1970")
        .as_nanos()
}

#[test]
fn one_principal_churning_cannot_evict_another_principals_sessions() {
    let issuer = Issuer::new();
    let served = issuer.serve(&[
        "--max-sessions",
        "100",
        "--max-sessions-per-principal",
        "10",
    ]);
    let (alice, bob) = (issuer.token("alice"), issuer.token("bob"));
    let bobs: Vec<String> = (0..5)
        .map(|_| open(&served, Some(&bob)).expect("bob's session"))
        .collect();
    for n in 0..500 {
        let s = open(&served, Some(&alice)).expect("alice's churn is never refused");
        call_ok(&served, &s, Some(&alice), n).expect("alice's call");
    }
    // Bob's sessions sat idle through all of it and are still open.
    for (i, s) in bobs.iter().enumerate() {
        assert_eq!(
            call_ok(&served, s, Some(&bob), i as u64),
            Ok(()),
            "bob's session {i}"
        );
    }
    assert_eq!(evicted(&served, "principal_cap"), 490);
    assert_eq!(evicted(&served, "total_cap"), 0);
    assert_eq!(metric(&served, "govcat_mcp_sessions"), 15);
}

// ---------------------------------------------------------------- sessions across replicas

/// A key file that replicas share (`--session-key-file`), in `dir`.
fn key_file(dir: &std::path::Path, name: &str, key: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, format!("{key}\n")).expect("write key file");
    path.to_str().expect("utf-8").to_string()
}

/// `mcp_sessions.<field>` of a replica's `/readyz`.
fn sessions_field(served: &Served, field: &str) -> Value {
    let ready = request(served.addr, "GET", "/readyz", &[], None).expect("GET /readyz");
    ready.json()["mcp_sessions"][field].clone()
}

#[test]
fn a_session_opened_on_one_replica_goes_on_on_another_that_shares_the_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = key_file(dir.path(), "k", "7d1c0f3e9a5b42c6a8e1d0f97b3c5e2a-shared");
    let a = Served::start(&["--session-key-file", &shared], &[]);
    let b = Served::start(&["--session-key-file", &shared], &[]);
    let session = open(&a, None).expect("initialize on A");
    assert_eq!(session.matches('.').count(), 2, "a sealed id: {session}");
    // The client's requests alternate between the replicas, as behind a balancer without
    // affinity: every call is answered, and B restored the session once.
    for n in 1..=6 {
        let replica = if n % 2 == 1 { &b } else { &a };
        assert_eq!(call_ok(replica, &session, None, n), Ok(()), "call {n}");
    }
    assert_eq!(sessions_field(&b, "restored"), json!(1));
    assert_eq!(sessions_field(&a, "restored"), json!(0));
    assert_eq!(sessions_field(&b, "live"), json!(1));
    // The move keeps the caps: B counts the restored session like one it opened.
    assert_eq!(metric(&b, "govcat_mcp_sessions"), 1);
}

#[test]
fn a_replica_without_the_key_or_with_another_answers_the_moved_session_404() {
    let dir = tempfile::tempdir().expect("tempdir");
    let one = key_file(dir.path(), "one", "7d1c0f3e9a5b42c6a8e1d0f97b3c5e2a-one");
    let other = key_file(
        dir.path(),
        "other",
        "7d1c0f3e9a5b42c6a8e1d0f97b3c5e2a-other",
    );
    let a = Served::start(&["--session-key-file", &one], &[]);
    let other_key = Served::start(&["--session-key-file", &other], &[]);
    let no_key = Served::start(&[], &[]);
    let session = open(&a, None).expect("initialize on A");
    for (name, replica) in [("another key", &other_key), ("no key", &no_key)] {
        let r = post(replica, Some(&session), None, &resolve_call(1));
        assert_eq!(r.status, 404, "{name}: {}", r.text());
    }
    // An altered id does not open even where the key is held.
    let altered = format!("{}x", session);
    assert_eq!(post(&a, Some(&altered), None, &resolve_call(2)).status, 404);
    assert_eq!(call_ok(&a, &session, None, 3), Ok(()));
}

#[test]
fn a_sealed_session_moves_only_with_the_principal_that_opened_it() {
    let issuer = Issuer::new();
    let shared = key_file(
        issuer.dir.path(),
        "k",
        "7d1c0f3e9a5b42c6a8e1d0f97b3c5e2a-shared",
    );
    let a = issuer.serve(&["--session-key-file", &shared]);
    let b = issuer.serve(&["--session-key-file", &shared]);
    let (alice, bob) = (issuer.token("alice"), issuer.token("bob"));
    let session = open(&a, Some(&alice)).expect("alice's session on A");
    let r = post(&b, Some(&session), Some(&bob), &resolve_call(1));
    assert_eq!(r.status, 404, "bob with alice's session id: {}", r.text());
    assert_eq!(call_ok(&b, &session, Some(&alice), 2), Ok(()));
}
