//! Load with faults (not a test): a bounded loopback load of mixed, authenticated traffic
//! against `govcat serve --auth jwt` while something goes wrong underneath, with every answer
//! checked against a value known before the load started.
//!
//! Traffic: `find_precedents` with repeated descriptions (the labelled query set; expected:
//! the first entry of a reference call) and with new ones (a counter appended to a description
//! whose reference matched lexically: a cache miss and one model inference each; expected: the
//! description echoed and a non-empty list),
//! `get_dataset policy.customer` (expected: the reference's columns, `iban` tagged
//! `sensitivity=high`) and `resolve_lf_tag` of a valid set (expected: the reference
//! resolution). Half the workers speak REST (`POST /v1/tools/{name}`), half MCP (Streamable
//! HTTP, one session each); every request carries an RS256 bearer token from a key generated
//! here and served to govcat as `--jwks-file`.
//!
//! Scenarios (`--scenario`):
//! - `swap`: the demo catalog (`--source dir`) with `serve --refresh 10s`: the snapshot is
//!   rebuilt from the catalog and swapped in every 10 s (plus the rebuild's duration).
//! - `aws`: three demo domains in the AWS emulator (moto, seeded by `tests/aws/seed.py`), served
//!   with `--source aws --refresh 10s`; at `--outage-at` seconds moto is killed, and
//!   `--outage-secs` later restarted and reseeded. A request that overlaps the window from the
//!   kill to the end of the reseed is counted as "during the outage".
//!
//! Goal: no 5xx, no I/O error and no wrong answer outside the outage; during it only tool
//! errors that say what to do next, never an empty list.
//!
//! Reported (`target/bench/load_faults.json`, one entry per scenario): requests/s, p50/p99
//! overall and per operation and transport, errors by kind (with phase and a sample message),
//! wrong answers by kind, the server's RSS (VmRSS from /proc, every second), snapshot swaps
//! and rebuild failures seen on /readyz, and a 10-s timeline.
//!
//! Run:   cargo bench --profile dev --bench load_faults -- --scenario swap
//!        cargo bench --profile dev --bench load_faults -- --scenario aws
//! Options: --seconds 300 --concurrency 32 --refresh 10s --outage-at 120 --outage-secs 60
//! --slow-clients 10 (beside the load, clients whose request bodies never arrive: each holds a
//! slot until `--body-read-timeout` answers it 408, then starts again)
//! (`--refresh off`: steady load without swaps, for the memory curve of issue 32's point 5)
//! `GOVCAT_BIN=path` runs a private copy of the server binary (advisable when the target
//! directory is shared: a concurrent build would replace it mid-run).

#[path = "../tests/server_http/client.rs"]
mod client;
#[path = "../tests/aws/harness.rs"]
mod harness;
mod support;

use std::collections::{BTreeMap, HashMap};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use base64::engine::general_purpose::URL_SAFE_NO_PAD as B64;
use base64::Engine;
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::{json, Value};
use support::{copy_dir, descriptions, govcat_bin, percentile, spawn_server, stop_server, REPO};

const ISSUER: &str = "https://idp.govcat.bench";
const AUDIENCE: &str = "https://govcat.bench/mcp";
const KID: &str = "bench-rsa-1";
const MCP_PROTOCOL: &str = "2025-11-25";
const WARMUP: Duration = Duration::from_secs(2);
/// Distinct repeated descriptions (each has a reference answer).
const REPEATED: usize = 40;
/// Words in an error message that name a next step (the project's error style).
const NEXT_STEP_WORDS: [&str; 9] = [
    "run ", "retry", "check ", "try ", "restart", "wait", "set ", "use ", "ask ",
];

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scenario {
    Swap,
    Aws,
}

struct Options {
    scenario: Scenario,
    seconds: u64,
    concurrency: usize,
    refresh: String,
    outage_at: u64,
    outage_secs: u64,
    /// Clients that hold a connection with a body that never arrives (issue 46).
    slow_clients: usize,
}

fn options() -> Options {
    let mut o = Options {
        scenario: Scenario::Swap,
        seconds: 300,
        concurrency: 32,
        refresh: "10s".into(),
        outage_at: 120,
        outage_secs: 60,
        slow_clients: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| {
            args.next()
                .unwrap_or_else(|| panic!("{name} needs a value"))
        };
        let number = |name: &str, v: String| -> u64 {
            v.parse()
                .unwrap_or_else(|_| panic!("{name}: a whole number"))
        };
        match a.as_str() {
            "--scenario" => {
                o.scenario = match value("--scenario").as_str() {
                    "swap" => Scenario::Swap,
                    "aws" => Scenario::Aws,
                    other => panic!("--scenario {other}: swap or aws"),
                }
            }
            "--seconds" => o.seconds = number("--seconds", value("--seconds")),
            "--concurrency" => {
                o.concurrency = number("--concurrency", value("--concurrency")) as usize
            }
            "--refresh" => o.refresh = value("--refresh"),
            "--outage-at" => o.outage_at = number("--outage-at", value("--outage-at")),
            "--outage-secs" => o.outage_secs = number("--outage-secs", value("--outage-secs")),
            "--slow-clients" => {
                o.slow_clients = number("--slow-clients", value("--slow-clients")) as usize
            }
            "--bench" => {}
            other => panic!("unknown option {other}; see the header of benches/load_faults.rs"),
        }
    }
    o
}

// ---------------------------------------------------------------- tokens

/// An RS256 signing key and the JWKS that publishes it.
struct Issuer {
    key: EncodingKey,
    jwks: Value,
}

fn issuer() -> Issuer {
    use rsa::pkcs1::EncodeRsaPrivateKey;
    use rsa::traits::PublicKeyParts;
    let key = rsa::PrivateKey::new(&mut getrandom::SysRng, 2048).expect("RSA 2048");
    let jwks = json!({"keys": [{
        "kty": "RSA", "kid": KID, "use": "sig", "alg": "RS256",
        "n": B64.encode(key.n_bytes()), "e": B64.encode(key.e_bytes()),
    }]});
    let der = key.to_pkcs1_der().expect("pkcs1");
    Issuer {
        key: EncodingKey::from_rsa_der(der.as_bytes()),
        jwks,
    }
}

impl Issuer {
    /// A token for `subject` reading `domains`, valid for two hours.
    fn token(&self, subject: &str, domains: &[String]) -> String {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock after 1970")
            .as_secs();
        let scope: Vec<String> = domains
            .iter()
            .map(|d| format!("catalog:{d}:read"))
            .collect();
        let claims = json!({
            "iss": ISSUER, "aud": AUDIENCE, "sub": subject, "iat": now - 10,
            "exp": now + 7200, "scope": scope.join(" "), "client_id": "load-faults-bench",
        });
        let mut header = Header::new(Algorithm::RS256);
        header.kid = Some(KID.to_string());
        jsonwebtoken::encode(&header, &claims, &self.key).expect("sign token")
    }
}

// ---------------------------------------------------------------- the system under test

struct Setup {
    work: PathBuf,
    global: Vec<String>,
    domains: Vec<String>,
    env: Vec<(String, String)>,
    moto: Option<harness::Moto>,
}

fn index(setup: &Setup) -> f64 {
    let started = Instant::now();
    let mut cmd = Command::new(govcat_bin());
    cmd.current_dir(REPO)
        .args(&setup.global)
        .arg("index")
        .stdout(Stdio::null());
    for (k, v) in &setup.env {
        cmd.env(k, v);
    }
    let status = cmd.status().expect("run govcat index");
    assert!(status.success(), "govcat index failed (model fetched?)");
    started.elapsed().as_secs_f64()
}

fn prepare(scenario: Scenario) -> Setup {
    let work = Path::new(REPO).join(match scenario {
        Scenario::Swap => "target/bench/faults-swap-work",
        Scenario::Aws => "target/bench/faults-aws-work",
    });
    let _ = std::fs::remove_dir_all(&work);
    std::fs::create_dir_all(&work).expect("work dir");
    let index_dir = work.join("index").display().to_string();
    match scenario {
        Scenario::Swap => {
            let catalog = work.join("catalog");
            copy_dir(&Path::new(REPO).join("fixtures/catalog"), &catalog);
            let mut domains: Vec<String> = std::fs::read_dir(catalog.join("domains"))
                .expect("domains")
                .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().to_string()))
                .collect();
            domains.sort();
            Setup {
                global: vec![
                    "--catalog".into(),
                    catalog.display().to_string(),
                    "--index".into(),
                    index_dir,
                ],
                work,
                domains,
                env: Vec::new(),
                moto: None,
            }
        }
        Scenario::Aws => {
            let moto = harness::Moto::start().expect("moto (scripts/setup-python.sh)");
            moto.seed();
            let config = work.join("aws.toml");
            std::fs::write(&config, harness::config_text("")).expect("aws config");
            let env = vec![
                ("AWS_ENDPOINT_URL".into(), moto.url()),
                ("AWS_ACCESS_KEY_ID".into(), "AKIDGOVCATSERVER".into()),
                (
                    "AWS_SECRET_ACCESS_KEY".into(),
                    "govcat-server-secret".into(),
                ),
                ("AWS_REGION".into(), "eu-central-1".into()),
                ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
            ];
            Setup {
                global: vec![
                    "--source".into(),
                    "aws".into(),
                    "--aws-config".into(),
                    config.display().to_string(),
                    "--index".into(),
                    index_dir,
                ],
                work,
                domains: ["claims", "hr", "policy"].map(String::from).to_vec(),
                env,
                moto: Some(moto),
            }
        }
    }
}

// ---------------------------------------------------------------- clients

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Op {
    FindRepeated,
    FindNew,
    GetDataset,
    Resolve,
}

impl Op {
    fn name(self) -> &'static str {
        match self {
            Op::FindRepeated => "find_precedents (repeated description)",
            Op::FindNew => "find_precedents (new description)",
            Op::GetDataset => "get_dataset",
            Op::Resolve => "resolve_lf_tag",
        }
    }
    fn tool(self) -> &'static str {
        match self {
            Op::FindRepeated | Op::FindNew => "find_precedents",
            Op::GetDataset => "get_dataset",
            Op::Resolve => "resolve_lf_tag",
        }
    }
}

/// The traffic mix, cycled by request number: 7 repeated and 2 new descriptions, 6 live
/// dataset reads and 5 tag resolutions per 20 requests.
const MIX: [Op; 20] = {
    use Op::*;
    [
        FindRepeated,
        GetDataset,
        Resolve,
        FindRepeated,
        GetDataset,
        FindNew,
        Resolve,
        FindRepeated,
        GetDataset,
        Resolve,
        FindRepeated,
        GetDataset,
        FindRepeated,
        Resolve,
        FindNew,
        GetDataset,
        FindRepeated,
        Resolve,
        GetDataset,
        FindRepeated,
    ]
};

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Debug)]
enum Transport {
    Rest,
    Mcp,
}

impl Transport {
    fn name(self) -> &'static str {
        match self {
            Transport::Rest => "REST",
            Transport::Mcp => "MCP",
        }
    }
}

/// Why a call did not produce a tool result.
struct Failure {
    /// e.g. `HTTP 503 SourceUnavailable`, `MCP tool error UpstreamUnavailable`, `I/O ...`.
    kind: String,
    message: String,
    server_error: bool,
}

/// One worker's connection: REST, or an MCP session on one keep-alive connection.
struct Client {
    addr: SocketAddr,
    transport: Transport,
    bearer: String,
    conn: Option<client::Conn>,
    session: Option<String>,
    next_id: u64,
}

fn io_failure(e: std::io::Error) -> Failure {
    Failure {
        kind: format!("I/O {:?}", e.kind()),
        message: e.to_string(),
        server_error: true,
    }
}

impl Client {
    fn new(addr: SocketAddr, transport: Transport, token: &str) -> Client {
        Client {
            addr,
            transport,
            bearer: format!("Bearer {token}"),
            conn: None,
            session: None,
            next_id: 1,
        }
    }

    fn post(
        &mut self,
        path: &str,
        extra: &[(&str, &str)],
        body: &Value,
    ) -> Result<client::Response, Failure> {
        if self.conn.is_none() {
            self.conn = Some(client::Conn::connect(self.addr).map_err(io_failure)?);
        }
        let mut headers = vec![
            ("Content-Type", "application/json"),
            ("Authorization", self.bearer.as_str()),
        ];
        headers.extend_from_slice(extra);
        let text = body.to_string();
        let conn = self.conn.as_mut().expect("connected");
        conn.request("POST", path, &headers, Some(text.as_bytes()))
            .map_err(|e| {
                // A broken connection is not reused; the next call reconnects.
                self.conn = None;
                io_failure(e)
            })
    }

    fn mcp_open(&mut self) -> Result<(), Failure> {
        let accept = [("Accept", "application/json, text/event-stream")];
        let init = self.post(
            "/mcp",
            &accept,
            &json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
                "protocolVersion": MCP_PROTOCOL, "capabilities": {},
                "clientInfo": {"name": "load-faults-bench", "version": "1"}}}),
        )?;
        let session = init.header("mcp-session-id").map(String::from);
        let Some(session) = session.filter(|_| init.status == 200) else {
            return Err(Failure {
                kind: format!("MCP initialize HTTP {}", init.status),
                message: init.text(),
                server_error: init.status >= 500,
            });
        };
        let headers = [
            accept[0],
            ("Mcp-Session-Id", session.as_str()),
            ("MCP-Protocol-Version", MCP_PROTOCOL),
        ];
        let ack = self.post(
            "/mcp",
            &headers,
            &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        )?;
        if ack.status != 202 {
            return Err(Failure {
                kind: format!("MCP initialized HTTP {}", ack.status),
                message: ack.text(),
                server_error: ack.status >= 500,
            });
        }
        self.session = Some(session);
        Ok(())
    }

    /// Calls `tool`; `Ok` is the tool's structured result.
    fn call(&mut self, tool: &str, args: &Value) -> Result<Value, Failure> {
        match self.transport {
            Transport::Rest => {
                let r = self.post(&format!("/v1/tools/{tool}"), &[], args)?;
                let body: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
                if r.status == 200 {
                    return Ok(body);
                }
                Err(Failure {
                    kind: format!(
                        "HTTP {} {}",
                        r.status,
                        body["error"].as_str().unwrap_or("(no error kind)")
                    ),
                    message: body["message"]
                        .as_str()
                        .map(String::from)
                        .unwrap_or_else(|| r.text()),
                    server_error: r.status >= 500,
                })
            }
            Transport::Mcp => {
                if self.session.is_none() || self.conn.is_none() {
                    self.session = None;
                    self.mcp_open()?;
                }
                let id = self.next_id;
                self.next_id += 1;
                let session = self.session.clone().expect("session");
                let headers = [
                    ("Accept", "application/json, text/event-stream"),
                    ("Mcp-Session-Id", session.as_str()),
                    ("MCP-Protocol-Version", MCP_PROTOCOL),
                ];
                let r = self.post(
                    "/mcp",
                    &headers,
                    &json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                            "params": {"name": tool, "arguments": args}}),
                )?;
                if r.status != 200 {
                    if r.status == 404 {
                        self.session = None; // session gone: open a new one next time
                    }
                    return Err(Failure {
                        kind: format!("MCP HTTP {}", r.status),
                        message: r.text(),
                        server_error: r.status >= 500,
                    });
                }
                let answer = r
                    .rpc_messages()
                    .into_iter()
                    .find(|m| m["id"] == json!(id))
                    .ok_or_else(|| Failure {
                        kind: "MCP no answer".into(),
                        message: r.text(),
                        server_error: true,
                    })?;
                if !answer["error"].is_null() {
                    return Err(Failure {
                        kind: format!("MCP JSON-RPC error {}", answer["error"]["code"]),
                        message: answer["error"]["message"].to_string(),
                        server_error: true,
                    });
                }
                let result = &answer["result"];
                if result["isError"] == json!(true) {
                    // A tool error is the error object as JSON text (no structuredContent).
                    let content: Value = result["content"][0]["text"]
                        .as_str()
                        .and_then(|t| serde_json::from_str(t).ok())
                        .unwrap_or(Value::Null);
                    return Err(Failure {
                        kind: format!(
                            "MCP tool error {}",
                            content["error"].as_str().unwrap_or("(no error kind)")
                        ),
                        message: content["message"].as_str().unwrap_or_default().to_string(),
                        server_error: false,
                    });
                }
                Ok(result["structuredContent"].clone())
            }
        }
    }
}

// ---------------------------------------------------------------- expected answers

struct Expected {
    /// Description and the id of its first entry in the reference call.
    repeated: Vec<(String, String)>,
    /// Repeated descriptions whose first entry matched the words (lexical or both): new
    /// descriptions are these plus a counter, so a non-empty answer is known in advance. (A
    /// semantic-only match sits near the similarity floor, and an appended number can move it
    /// below: "hsntsn" finds policy.insured_vehicle.hsn_tsn, "hsntsn 19114" honestly nothing.)
    lexical_bases: Vec<String>,
    dataset_columns: Vec<String>,
    iban_tags: Value,
    resolved: Value,
}

fn resolve_args() -> Value {
    json!({"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer",
                    "retention": "10y", "lawful_basis": "contract"}})
}

fn dataset_args() -> Value {
    json!({"domain": "policy", "table": "customer"})
}

fn column_names(result: &Value) -> Vec<String> {
    result["columns"]
        .as_array()
        .map(|cs| {
            cs.iter()
                .filter_map(|c| c["name"].as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn iban_tags(result: &Value) -> Value {
    result["columns"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == "iban"))
        .map(|c| c["lf_tags"].clone())
        .unwrap_or(Value::Null)
}

fn first_id(result: &Value) -> Option<String> {
    result["entries"][0]["id"].as_str().map(String::from)
}

/// Reference answers, taken over REST before the load (this also warms the query cache for
/// the repeated descriptions, as production traffic would).
fn expected(addr: SocketAddr, token: &str) -> Expected {
    let mut c = Client::new(addr, Transport::Rest, token);
    let mut repeated = Vec::new();
    let mut lexical_bases = Vec::new();
    for d in descriptions() {
        if repeated.len() == REPEATED {
            break;
        }
        let r = c
            .call("find_precedents", &json!({"description": d, "limit": 10}))
            .unwrap_or_else(|f| panic!("reference find_precedents({d}): {} {}", f.kind, f.message));
        if let Some(id) = first_id(&r) {
            if r["entries"][0]["match_type"] != "semantic" {
                lexical_bases.push(d.clone());
            }
            repeated.push((d, id));
        }
    }
    assert_eq!(
        repeated.len(),
        REPEATED,
        "too few descriptions with an answer"
    );
    let ds = c
        .call("get_dataset", &dataset_args())
        .unwrap_or_else(|f| panic!("reference get_dataset: {} {}", f.kind, f.message));
    let iban = iban_tags(&ds);
    assert_eq!(
        iban["sensitivity"]["value"], "high",
        "policy.customer.iban is tagged sensitivity=high: {iban}"
    );
    let resolved = c
        .call("resolve_lf_tag", &resolve_args())
        .unwrap_or_else(|f| panic!("reference resolve_lf_tag: {} {}", f.kind, f.message));
    assert!(
        !lexical_bases.is_empty(),
        "no description with a lexical first entry"
    );
    Expected {
        repeated,
        lexical_bases,
        dataset_columns: column_names(&ds),
        iban_tags: iban,
        resolved: resolved["resolved"].clone(),
    }
}

/// Arguments of request `i` for `op`.
fn arguments(op: Op, i: u64, expected: &Expected) -> Value {
    let (d, _) = &expected.repeated[(i as usize / MIX.len()) % expected.repeated.len()];
    match op {
        Op::FindRepeated => json!({"description": d, "limit": 10}),
        Op::FindNew => {
            let base =
                &expected.lexical_bases[(i as usize / MIX.len()) % expected.lexical_bases.len()];
            json!({"description": format!("{base} {i}"), "limit": 10})
        }
        Op::GetDataset => dataset_args(),
        Op::Resolve => resolve_args(),
    }
}

/// What is wrong with a successful answer, if anything: the kind (`empty list: ...` or
/// `wrong: ...`) and what was seen.
fn check(
    op: Op,
    args: &Value,
    result: &Value,
    expected: &Expected,
) -> Option<(&'static str, String)> {
    let snapshot = result["snapshot"]["id"].as_str().unwrap_or("-");
    match op {
        Op::FindRepeated | Op::FindNew => {
            if result["request"]["description"] != args["description"] {
                let seen = format!(
                    "asked {}, echoed {}",
                    args["description"], result["request"]["description"]
                );
                return Some(("wrong: description echo differs from the request", seen));
            }
            let Some(first) = first_id(result) else {
                return Some((
                    "empty list: find_precedents",
                    format!("snapshot {snapshot}: {}", args["description"]),
                ));
            };
            if op == Op::FindRepeated {
                let d = args["description"].as_str().unwrap_or_default();
                let want = expected
                    .repeated
                    .iter()
                    .find(|(r, _)| r == d)
                    .map(|(_, id)| id);
                if want != Some(&first) {
                    let seen = format!(
                        "snapshot {snapshot}: {d:?} first entry {first}, reference {}",
                        want.map(String::as_str).unwrap_or("-")
                    );
                    return Some(("wrong: first entry differs from the reference", seen));
                }
            }
            None
        }
        Op::GetDataset => {
            let names = column_names(result);
            if names.is_empty() {
                Some(("empty list: get_dataset columns", result.to_string()))
            } else if names != expected.dataset_columns {
                Some((
                    "wrong: get_dataset columns differ from the reference",
                    format!("{names:?}"),
                ))
            } else if iban_tags(result) != expected.iban_tags {
                Some((
                    "wrong: get_dataset iban tags differ from the reference",
                    iban_tags(result).to_string(),
                ))
            } else {
                None
            }
        }
        Op::Resolve => (result["resolved"] != expected.resolved).then(|| {
            (
                "wrong: resolve_lf_tag result differs from the reference",
                result.to_string(),
            )
        }),
    }
}

// ---------------------------------------------------------------- the load

/// Where a request falls relative to the emulator outage: it overlaps the window from the
/// kill to the end of the reseed, or ended before it, or started after it.
const BEFORE: u8 = 0;
const OUTAGE: u8 = 1;
const AFTER: u8 = 2;
const NO_OUTAGE: u8 = 3;

fn phase_name(p: u8) -> &'static str {
    match p {
        BEFORE => "before_outage",
        OUTAGE => "during_outage",
        AFTER => "after_outage",
        _ => "no_outage_in_this_scenario",
    }
}

/// Not yet happened (an outage bound in [`Shared`]).
const NOT_YET: u64 = u64::MAX;

/// The phase of a request that ran from `start_ms` to `end_ms` (ms since the start), decided
/// when it completes: the kill (`from`) and the end of the reseed (`to`) are `NOT_YET` until
/// they happen, so a request still running at either moment overlaps the outage.
fn phase_of(start_ms: u64, end_ms: u64, from: u64, to: u64) -> u8 {
    if end_ms < from {
        BEFORE
    } else if to != NOT_YET && start_ms > to {
        AFTER
    } else {
        OUTAGE
    }
}

struct Sample {
    t_ms: u32,
    latency_us: u32,
    op: Op,
    transport: Transport,
    /// 0: correct answer; else 1 + index into the worker's outcome kinds.
    outcome: u32,
}

/// Distinct messages kept per outcome kind and phase (per worker).
const MESSAGES_PER_KIND: usize = 3;

#[derive(Default)]
struct WorkerLog {
    samples: Vec<Sample>,
    /// Outcome kinds: kind, phase, distinct sample messages, whether it is a server error.
    kinds: Vec<(String, u8, Vec<String>, bool)>,
    index: HashMap<(String, u8), u32>,
}

/// A message with its digits blanked, so ports, counters and ids do not make it distinct.
fn shape(message: &str) -> String {
    message
        .chars()
        .map(|c| if c.is_ascii_digit() { '#' } else { c })
        .collect()
}

impl WorkerLog {
    fn intern(&mut self, kind: String, phase: u8, message: String, server_error: bool) -> u32 {
        let message: String = message.chars().take(600).collect();
        let key = (kind, phase);
        if let Some(&i) = self.index.get(&key) {
            let messages = &mut self.kinds[i as usize].2;
            if messages.len() < MESSAGES_PER_KIND
                && !messages.iter().any(|m| shape(m) == shape(&message))
            {
                messages.push(message);
            }
            return i + 1;
        }
        let i = self.kinds.len() as u32;
        self.index.insert(key.clone(), i);
        self.kinds.push((key.0, phase, vec![message], server_error));
        i + 1
    }
}

struct Shared {
    addr: SocketAddr,
    expected: Expected,
    counter: AtomicU64,
    /// Whether this scenario has an outage at all.
    outage_planned: bool,
    /// ms since `t0` of the kill and of the end of the reseed, or `NOT_YET`.
    outage_from_ms: AtomicU64,
    outage_to_ms: AtomicU64,
    t0: Instant,
    record_from: Instant,
    until: Instant,
}

fn worker(shared: Arc<Shared>, transport: Transport, token: String) -> WorkerLog {
    let mut log = WorkerLog::default();
    let mut c = Client::new(shared.addr, transport, &token);
    while Instant::now() < shared.until {
        let i = shared.counter.fetch_add(1, Ordering::Relaxed);
        let op = MIX[(i as usize) % MIX.len()];
        let args = arguments(op, i, &shared.expected);
        let started = Instant::now();
        let result = c.call(op.tool(), &args);
        let took = started.elapsed();
        if started < shared.record_from {
            continue;
        }
        let start_ms = started.duration_since(shared.t0).as_millis() as u64;
        let phase = if shared.outage_planned {
            phase_of(
                start_ms,
                shared.t0.elapsed().as_millis() as u64,
                shared.outage_from_ms.load(Ordering::SeqCst),
                shared.outage_to_ms.load(Ordering::SeqCst),
            )
        } else {
            NO_OUTAGE
        };
        let outcome = match result {
            Ok(v) => match check(op, &args, &v, &shared.expected) {
                None => 0,
                Some((what, seen)) => {
                    log.intern(format!("{what} ({})", transport.name()), phase, seen, false)
                }
            },
            Err(f) => log.intern(
                format!("{} ({}, {})", f.kind, op.tool(), transport.name()),
                phase,
                f.message,
                f.server_error,
            ),
        };
        log.samples.push(Sample {
            t_ms: start_ms as u32,
            latency_us: took.as_micros().min(u32::MAX as u128) as u32,
            op,
            transport,
            outcome,
        });
    }
    log
}

// ---------------------------------------------------------------- observation

fn vm_rss_mib(pid: u32) -> Option<f64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let kib: f64 = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()?;
    Some(kib / 1024.0)
}

#[derive(Default)]
struct Observed {
    rss: Vec<(f64, f64)>,
    swaps: Vec<(f64, String)>,
    readyz: Vec<(f64, Value)>,
}

/// Samples the server's RSS and `/readyz` once a second until `stop`.
fn observe(
    pid: u32,
    addr: SocketAddr,
    token: String,
    t0: Instant,
    stop: Arc<AtomicBool>,
) -> Observed {
    // /readyz shows its details to a valid token only.
    let bearer = format!("Bearer {token}");
    let mut seen = Observed::default();
    let mut last_id: Option<String> = None;
    let mut last_failed = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let t = t0.elapsed().as_secs_f64();
        if let Some(rss) = vm_rss_mib(pid) {
            seen.rss.push((round(t, 1), round(rss, 1)));
        }
        if let Ok(r) = client::request(addr, "GET", "/readyz", &[("Authorization", &bearer)], None)
        {
            let v: Value = serde_json::from_slice(&r.body).unwrap_or(Value::Null);
            let snap = &v["snapshot"];
            let id = snap["id"].as_str().map(String::from);
            if id.is_some() && id != last_id {
                if last_id.is_some() {
                    seen.swaps
                        .push((round(t, 1), id.clone().unwrap_or_default()));
                }
                last_id = id;
            }
            let failed = snap["rebuilds_failed"].as_u64().unwrap_or(0);
            if failed != last_failed {
                seen.readyz.push((
                    round(t, 1),
                    json!({"rebuilds_failed": failed, "last_error": snap["last_error"],
                           "ready": v["ready"]}),
                ));
                last_failed = failed;
            }
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    seen
}

/// What one slow client did.
#[derive(Default)]
struct SlowLog {
    stalled: u64,
    answered_408: u64,
    /// How long each stalled request held its connection until the server closed it, in µs.
    held_us: Vec<u64>,
}

/// Opens a connection, sends an authenticated POST's headers announcing 1000 body bytes and
/// 7 of them, and waits until the server answers or closes it; again until the load ends.
fn slow_client(shared: &Shared, token: &str) -> SlowLog {
    use std::io::{Read, Write};
    let mut log = SlowLog::default();
    while Instant::now() < shared.until {
        let Ok(mut stream) = std::net::TcpStream::connect(shared.addr) else {
            std::thread::sleep(Duration::from_millis(100));
            continue;
        };
        let _ = stream.set_read_timeout(Some(Duration::from_secs(120)));
        let head = format!(
            "POST /v1/tools/list_domains HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{{\"dom\":",
            shared.addr
        );
        let started = Instant::now();
        if stream.write_all(head.as_bytes()).is_err() {
            continue;
        }
        log.stalled += 1;
        let mut answer = Vec::new();
        let _ = stream.read_to_end(&mut answer);
        log.held_us.push(started.elapsed().as_micros() as u64);
        if answer.starts_with(b"HTTP/1.1 408") {
            log.answered_408 += 1;
        }
    }
    log
}

fn round(x: f64, places: i32) -> f64 {
    let f = 10f64.powi(places);
    (x * f).round() / f
}

// ---------------------------------------------------------------- report

fn latency_summary(mut us: Vec<u64>, seconds: f64) -> Value {
    us.sort_unstable();
    json!({
        "requests": us.len(),
        "requests_per_second": round(us.len() as f64 / seconds, 1),
        "p50_ms": percentile(&us, 50.0),
        "p90_ms": percentile(&us, 90.0),
        "p99_ms": percentile(&us, 99.0),
        "max_ms": percentile(&us, 100.0),
    })
}

fn has_next_step(message: &str) -> bool {
    let lower = message.to_lowercase();
    NEXT_STEP_WORDS.iter().any(|w| lower.contains(w))
}

#[allow(clippy::too_many_arguments)]
fn report(
    opts: &Options,
    logs: Vec<WorkerLog>,
    observed: Observed,
    outage: Option<Value>,
    seconds: f64,
    build_s: f64,
    rebuild_s: f64,
    audit_bytes: u64,
) -> Value {
    let mut all = Vec::new();
    let mut by_op: BTreeMap<(Op, Transport), Vec<u64>> = BTreeMap::new();
    // (kind, phase) -> (count, sample messages, server error)
    let mut outcomes: BTreeMap<(String, u8), (u64, Vec<String>, bool)> = BTreeMap::new();
    let mut buckets: BTreeMap<u32, (Vec<u64>, u64, u64)> = BTreeMap::new();
    let (mut ok, mut failed) = (0u64, 0u64);
    for log in &logs {
        for s in &log.samples {
            all.push(s.latency_us as u64);
            by_op
                .entry((s.op, s.transport))
                .or_default()
                .push(s.latency_us as u64);
            let b = buckets.entry(s.t_ms / 10_000).or_default();
            b.0.push(s.latency_us as u64);
            if s.outcome == 0 {
                ok += 1;
                continue;
            }
            failed += 1;
            b.1 += 1;
            let (kind, phase, messages, server_error) = &log.kinds[s.outcome as usize - 1];
            if kind.starts_with("wrong") || kind.starts_with("empty") {
                b.2 += 1;
            }
            let e = outcomes
                .entry((kind.clone(), *phase))
                .or_insert_with(|| (0, Vec::new(), *server_error));
            e.0 += 1;
            for m in messages {
                if e.1.len() < MESSAGES_PER_KIND && !e.1.iter().any(|x| shape(x) == shape(m)) {
                    e.1.push(m.clone());
                }
            }
        }
    }
    let outside = |p: u8| p != OUTAGE;
    let count = |f: &dyn Fn(&str, bool, u8) -> bool| -> u64 {
        outcomes
            .iter()
            .filter(|((k, p), (_, _, se))| f(k, *se, *p))
            .map(|(_, (n, _, _))| n)
            .sum()
    };
    let goals = json!({
        "server_errors_outside_outage": count(&|_, se, p| se && outside(p)),
        "wrong_answers_outside_outage": count(&|k, _, p| k.starts_with("wrong") && outside(p)),
        "empty_lists_outside_outage": count(&|k, _, p| k.starts_with("empty") && outside(p)),
        "other_errors_outside_outage": count(&|k, se, p| !se && !k.starts_with("wrong") && !k.starts_with("empty") && outside(p)),
        "empty_lists_during_outage": count(&|k, _, p| k.starts_with("empty") && p == OUTAGE),
        "wrong_answers_during_outage": count(&|k, _, p| k.starts_with("wrong") && p == OUTAGE),
        "errors_without_next_step_during_outage": outcomes.iter()
            .filter(|((k, p), (_, m, _))| *p == OUTAGE && !k.starts_with("wrong") && !k.starts_with("empty") && !m.iter().all(|m| has_next_step(m)))
            .map(|(_, (n, _, _))| n).sum::<u64>(),
    });
    let errors: Vec<Value> = outcomes
        .iter()
        .map(|((kind, phase), (n, messages, se))| {
            json!({"kind": kind, "phase": phase_name(*phase), "count": n, "server_error": se,
                   "names_next_step": messages.iter().all(|m| has_next_step(m)),
                   "sample_messages": messages})
        })
        .collect();
    let per_op: Vec<Value> = by_op
        .into_iter()
        .map(|((op, tr), us)| {
            let mut v = latency_summary(us, seconds);
            v["operation"] = json!(op.name());
            v["transport"] = json!(tr.name());
            v
        })
        .collect();
    let timeline: Vec<Value> = buckets
        .into_iter()
        .map(|(b, (us, errors, wrong))| {
            let mut v = latency_summary(us, 10.0);
            v["t_start_s"] = json!(b * 10);
            v["errors"] = json!(errors);
            v["wrong_or_empty"] = json!(wrong);
            v
        })
        .collect();
    let rss: Vec<f64> = observed.rss.iter().map(|(_, r)| *r).collect();
    let rss_min = rss.iter().cloned().fold(f64::INFINITY, f64::min);
    let rss_max = rss.iter().cloned().fold(0.0, f64::max);
    let mut overall = latency_summary(all, seconds);
    overall["correct"] = json!(ok);
    overall["not_correct"] = json!(failed);
    json!({
        "scenario": match opts.scenario { Scenario::Swap => "swap", Scenario::Aws => "aws" },
        "measured_at": support_now(),
        "profile": support::profile(),
        "server_binary": govcat_bin().display().to_string(),
        "machine": support::machine(),
        "seconds": round(seconds, 1),
        "concurrency": opts.concurrency,
        "refresh": opts.refresh,
        "mix_per_20_requests": {"find_precedents repeated": 7, "find_precedents new": 2,
                                "get_dataset": 6, "resolve_lf_tag": 5},
        "transports": "half the workers REST, half MCP (one session each); RS256 bearer tokens",
        "initial_index_build_s": round(build_s, 2),
        "rebuild_unchanged_s": round(rebuild_s, 2),
        "goals": goals,
        "overall": overall,
        "per_operation": per_op,
        "errors_by_kind": errors,
        "outage": outage,
        "snapshot_swaps": observed.swaps.len(),
        "swap_times_s": observed.swaps.iter().map(|(t, _)| *t).collect::<Vec<_>>(),
        "rebuild_failures": observed.readyz.iter().map(|(t, v)| json!({"t_s": t, "readyz": v})).collect::<Vec<_>>(),
        "rss_mib": {"min": rss_min, "max": rss_max, "first": rss.first(), "last": rss.last(),
                    "samples_every_s": 1, "samples": observed.rss},
        "audit_log_bytes": audit_bytes,
        "timeline_10s": timeline,
    })
}

fn support_now() -> String {
    let out = Command::new("date")
        .args(["-u", "+%Y-%m-%dT%H:%M:%SZ"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string());
    out.unwrap_or_default()
}

fn main() {
    // `cargo bench` passes --bench; `cargo test --all-targets` runs this binary without it.
    if !std::env::args().any(|a| a == "--bench") {
        eprintln!(
            "load_faults: a bench, not a test; run it with `cargo bench --bench load_faults`"
        );
        return;
    }
    let opts = options();
    let mut setup = prepare(opts.scenario);
    let build_s = index(&setup);
    // A second build with nothing changed: what every scheduled rebuild costs.
    let rebuild_s = index(&setup);
    eprintln!("indexed in {build_s:.1} s; unchanged rebuild {rebuild_s:.2} s");

    let issuer = issuer();
    let jwks = setup.work.join("jwks.json");
    std::fs::write(&jwks, issuer.jwks.to_string()).expect("write jwks");
    let audit = setup.work.join("audit.jsonl");
    let mut cmd = Command::new(govcat_bin());
    cmd.current_dir(REPO)
        .args(&setup.global)
        .args(["serve", "--listen", "127.0.0.1:0", "--auth", "jwt"])
        .args(["--issuer", ISSUER, "--audience", AUDIENCE])
        .arg("--jwks-file")
        .arg(&jwks)
        .arg("--audit-log")
        .arg(&audit)
        .args(
            Some(["--refresh", opts.refresh.as_str()])
                .filter(|_| opts.refresh != "off")
                .into_iter()
                .flatten(),
        )
        .env("GOVCAT_LOG", "warn")
        .stderr(std::fs::File::create(setup.work.join("server.log")).expect("server log"));
    for (k, v) in &setup.env {
        cmd.env(k, v);
    }
    let (child, addr) = spawn_server(&mut cmd);
    let pid = child.id();

    let expected = expected(addr, &issuer.token("reference", &setup.domains));
    let t0 = Instant::now();
    let shared = Arc::new(Shared {
        addr,
        expected,
        counter: AtomicU64::new(0),
        outage_planned: setup.moto.is_some(),
        outage_from_ms: AtomicU64::new(NOT_YET),
        outage_to_ms: AtomicU64::new(NOT_YET),
        t0,
        record_from: t0 + WARMUP,
        until: t0 + WARMUP + Duration::from_secs(opts.seconds),
    });
    let stop = Arc::new(AtomicBool::new(false));
    let observer = {
        let stop = stop.clone();
        let token = issuer.token("observer", &setup.domains);
        std::thread::spawn(move || observe(pid, addr, token, t0, stop))
    };
    let slow: Vec<_> = (0..opts.slow_clients)
        .map(|w| {
            let shared = shared.clone();
            let token = issuer.token(&format!("slow-{w}"), &setup.domains);
            std::thread::spawn(move || slow_client(&shared, &token))
        })
        .collect();
    let workers: Vec<_> = (0..opts.concurrency)
        .map(|w| {
            let shared = shared.clone();
            let transport = if w % 2 == 0 {
                Transport::Rest
            } else {
                Transport::Mcp
            };
            let token = issuer.token(&format!("worker-{w}"), &setup.domains);
            std::thread::spawn(move || worker(shared, transport, token))
        })
        .collect();

    let outage = setup.moto.as_mut().map(|moto| {
        let at = shared.record_from + Duration::from_secs(opts.outage_at);
        std::thread::sleep(at.saturating_duration_since(Instant::now()));
        let since = |i: Instant| round(i.duration_since(t0).as_secs_f64(), 1);
        let ms = |i: Instant| i.duration_since(t0).as_millis() as u64;
        let killed = Instant::now();
        // Marked before the kill: a request completing from now on may have met it.
        shared.outage_from_ms.store(ms(killed), Ordering::SeqCst);
        moto.stop();
        std::thread::sleep(Duration::from_secs(opts.outage_secs));
        let restarting = Instant::now();
        moto.restart();
        let restarted = Instant::now();
        moto.seed();
        let reseeded = Instant::now();
        shared.outage_to_ms.store(ms(reseeded), Ordering::SeqCst);
        eprintln!(
            "moto killed at {} s, restarted at {} s, reseeded at {} s",
            since(killed),
            since(restarted),
            since(reseeded)
        );
        json!({"killed_at_s": since(killed), "restart_started_at_s": since(restarting),
               "restarted_at_s": since(restarted), "reseeded_at_s": since(reseeded),
               "outage_window": "a request is during the outage when it overlaps [kill, end of reseed]"})
    });

    let logs: Vec<WorkerLog> = workers
        .into_iter()
        .map(|w| w.join().expect("worker"))
        .collect();
    let slow: Vec<SlowLog> = slow
        .into_iter()
        .map(|w| w.join().expect("slow client"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    let observed = observer.join().expect("observer");
    stop_server(child);
    let audit_bytes = std::fs::metadata(&audit).map(|m| m.len()).unwrap_or(0);
    let _ = std::fs::remove_file(&audit);

    let mut result = report(
        &opts,
        logs,
        observed,
        outage,
        opts.seconds as f64,
        build_s,
        rebuild_s,
        audit_bytes,
    );
    let mut held: Vec<u64> = slow
        .iter()
        .flat_map(|s| s.held_us.iter().copied())
        .collect();
    held.sort_unstable();
    result["slow_clients"] = json!({
        "clients": opts.slow_clients,
        "what": "each opens a connection, sends an authenticated POST's headers announcing 1000 body bytes and 7 of them, then stalls until the server closes it, and starts again",
        "stalled_requests": slow.iter().map(|s| s.stalled).sum::<u64>(),
        "answered_408": slow.iter().map(|s| s.answered_408).sum::<u64>(),
        "held_ms_p50": percentile(&held, 50.0),
        "held_ms_max": held.last().map(|us| *us as f64 / 1000.0),
    });
    if opts.slow_clients > 0 {
        result["scenario"] = json!(format!(
            "{}_slow{}",
            result["scenario"].as_str().unwrap_or(""),
            opts.slow_clients
        ));
    }
    println!(
        "{}",
        serde_json::to_string_pretty(&json!({
            "scenario": result["scenario"], "slow_clients": result["slow_clients"], "goals": result["goals"], "overall": result["overall"],
            "errors_by_kind": result["errors_by_kind"], "snapshot_swaps": result["snapshot_swaps"],
            "rss_mib_min": result["rss_mib"]["min"], "rss_mib_max": result["rss_mib"]["max"],
        }))
        .expect("json")
    );
    let out = Path::new(REPO).join("target/bench/load_faults.json");
    let mut file: Value = std::fs::read(&out)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|v: &Value| v["scenarios"].is_object())
        .unwrap_or_else(|| json!({"bench": "load_faults", "scenarios": {}}));
    let name = result["scenario"].as_str().unwrap_or("unknown").to_string();
    file["scenarios"][name] = result;
    std::fs::write(&out, serde_json::to_string_pretty(&file).expect("json")).expect("write report");
    println!("wrote {}", out.display());
}
