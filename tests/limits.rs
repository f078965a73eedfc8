//! Input limits (see `govcat::limits` and the README's "Limits"): every bound is a pair — the
//! value at the bound is answered, one more is refused with the exact error kind, status and
//! structured fields — on the tool dispatcher, over REST (422 / 413 / 429) and over MCP
//! (`isError` results). Nothing is silently truncated.
//!
//! The dispatcher tests use the deterministic-embedder snapshot; the HTTP refusals run on a
//! server without the model (bounds are checked before retrieval is needed); the one HTTP test
//! that needs answers at the bounds uses the real model and skips without it (fails under CI).

#[path = "server_http/client.rs"]
mod client;
mod common;
#[path = "server_http/mcp_session.rs"]
mod mcp_session;

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use client::{request, Response};
use common::server::{Served, MCP_HEADERS};
use common::{call_err, call_ok};
use govcat::limits::{MAX_BODY_BYTES, MAX_DESCRIPTION_CHARS, MAX_DOMAINS, MAX_LIMIT};
use govcat::tools::{self, Caller, Context};
use mcp_session::{initialize, mcp_request, mcp_session};
use serde_json::{json, Value};

const EU_IBAN: &str = "contains an EU IBAN";

/// A description of exactly `n` characters of `c` (no surrounding whitespace).
fn description_of(n: usize, c: char) -> String {
    std::iter::repeat_n(c, n).collect()
}

fn description_error(got: usize) -> Value {
    json!({
        "error": "LimitExceeded",
        "message": format!("description has {got} characters; at most 1000 are accepted — shorten it to what the column holds"),
        "limit": "description",
        "max": 1000,
        "got": got,
    })
}

fn limit_error(got: usize) -> Value {
    json!({
        "error": "LimitExceeded",
        "message": format!("limit {got} is more than the largest page of 50 entries; ask for at most 50 and pass next_cursor for the next page"),
        "limit": "limit",
        "max": 50,
        "got": got,
    })
}

fn domains_error(got: usize) -> Value {
    json!({
        "error": "LimitExceeded",
        "message": format!("domains names {got} domains; at most 64 are accepted — omit it to search every domain you may read"),
        "limit": "domains",
        "max": 64,
        "got": got,
    })
}

fn body_error(what: &str) -> Value {
    json!({
        "error": "RequestTooLarge",
        "message": format!("the request body is larger than 1048576 bytes; send {what} in at most 1048576 bytes"),
        "limit": "request_body",
        "max": 1048576,
    })
}

fn concurrency_error(max: usize) -> Value {
    json!({
        "error": "TooManyRequests",
        "message": format!("govcat is answering as many requests as --max-concurrent-requests allows ({max}); retry after 1 s, or start govcat with a larger --max-concurrent-requests"),
        "limit": "concurrent_requests",
        "max": max,
        "retry_after_seconds": 1,
    })
}

/// `n` copies of the domain `policy` (duplicates are searched once, so any count is valid).
fn policy_times(n: usize) -> Vec<&'static str> {
    vec!["policy"; n]
}

// ------------------------------------------------------------------ the dispatcher

#[test]
fn the_bounds_are_the_documented_numbers() {
    assert_eq!(
        (
            MAX_DESCRIPTION_CHARS,
            MAX_LIMIT,
            MAX_DOMAINS,
            MAX_BODY_BYTES,
            govcat::limits::DEFAULT_MAX_CONCURRENT_REQUESTS
        ),
        (1000, 50, 64, 1_048_576, 64)
    );
}

#[test]
fn a_description_of_1000_characters_is_searched_and_1001_is_limit_exceeded() {
    let ctx = common::hashed().context();
    for c in ['x', 'ä'] {
        let at = description_of(MAX_DESCRIPTION_CHARS, c);
        let result = call_ok(
            &ctx,
            &Caller::local(),
            "find_precedents",
            json!({ "description": at }),
        );
        assert_eq!(result["request"]["description"], json!(at), "{c}");
        let over = description_of(MAX_DESCRIPTION_CHARS + 1, c);
        let e = call_err(
            &ctx,
            &Caller::local(),
            "find_precedents",
            json!({ "description": over }),
        );
        assert_eq!(e.to_json(), description_error(1001), "{c}");
    }
}

#[test]
fn suggest_tags_has_the_same_description_bound() {
    let ctx = common::hashed().context();
    let at = description_of(MAX_DESCRIPTION_CHARS, 'x');
    let result = call_ok(
        &ctx,
        &Caller::local(),
        "suggest_tags",
        json!({ "description": at }),
    );
    assert_eq!(result["request"]["description"], json!(at));
    let e = call_err(
        &ctx,
        &Caller::local(),
        "suggest_tags",
        json!({ "description": description_of(1001, 'x') }),
    );
    assert_eq!(e.to_json(), description_error(1001));
}

#[test]
fn limit_50_is_one_page_of_50_and_51_is_limit_exceeded() {
    let ctx = common::hashed().context();
    let result = call_ok(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({"description": EU_IBAN, "limit": 50}),
    );
    assert_eq!(result["request"]["limit"], json!(50));
    let total = result["total"].as_u64().expect("total") as usize;
    assert_eq!(common::ids(&result).len(), total.min(50));
    let e = call_err(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({"description": EU_IBAN, "limit": 51}),
    );
    assert_eq!(e.to_json(), limit_error(51));
}

#[test]
fn sixty_four_domains_are_searched_and_65_are_limit_exceeded() {
    let ctx = common::hashed().context();
    let result = call_ok(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({"description": EU_IBAN, "domains": policy_times(64)}),
    );
    assert_eq!(result["request"]["domains"], json!(["policy"]));
    let e = call_err(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({"description": EU_IBAN, "domains": policy_times(65)}),
    );
    assert_eq!(e.to_json(), domains_error(65));
}

/// The bounds are checked before the model or a snapshot is needed: the refusal is the same
/// on a server that has neither, and a call within the bounds gets the retrieval error.
#[test]
fn bounds_are_checked_before_retrieval_is_needed() {
    let ontology = common::ontology();
    let ctx = Context::new(ontology.clone(), common::demo_source(&ontology));
    let e = call_err(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({ "description": description_of(1001, 'x') }),
    );
    assert_eq!(e.to_json(), description_error(1001));
    let e = call_err(
        &ctx,
        &Caller::local(),
        "find_precedents",
        json!({ "description": description_of(1000, 'x') }),
    );
    assert_eq!(e.kind, "EmbedderUnavailable");
}

/// The schema of an optional property's value: the non-null branch of its
/// `anyOf [{...}, {"type": "null"}]`.
fn when_given(property: &Value) -> &Value {
    assert_eq!(property["anyOf"][1], json!({"type": "null"}), "{property}");
    &property["anyOf"][0]
}

#[test]
fn input_schemas_advertise_the_bounds() {
    let find = &tools::spec("find_precedents")
        .expect("find_precedents")
        .input_schema;
    assert_eq!(
        find["properties"]["description"]["maxLength"],
        json!(MAX_DESCRIPTION_CHARS)
    );
    let limit = when_given(&find["properties"]["limit"]);
    assert_eq!(
        (&limit["minimum"], &limit["maximum"]),
        (&json!(1), &json!(MAX_LIMIT))
    );
    assert_eq!(
        when_given(&find["properties"]["domains"])["maxItems"],
        json!(MAX_DOMAINS)
    );
    let suggest = &tools::spec("suggest_tags")
        .expect("suggest_tags")
        .input_schema;
    assert_eq!(
        suggest["properties"]["description"]["maxLength"],
        json!(MAX_DESCRIPTION_CHARS)
    );
}

// ------------------------------------------------------------------ over HTTP

/// A server without the model (exact tools only): enough for every refusal.
fn exact_only(tmp: &tempfile::TempDir, args: &[&str]) -> Served {
    let no_model = tmp.path().to_str().expect("utf-8 temp path");
    Served::start(args, &[("GOVCAT_MODEL_DIR", no_model)])
}

fn post(addr: SocketAddr, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Response {
    request(addr, "POST", path, headers, Some(body)).unwrap_or_else(|e| panic!("POST {path}: {e}"))
}

fn get(addr: SocketAddr, path: &str) -> Response {
    request(addr, "GET", path, &[], None).unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn rest_call(addr: SocketAddr, tool: &str, args: &Value) -> Response {
    post(
        addr,
        &format!("/v1/tools/{tool}"),
        &[("Content-Type", "application/json")],
        args.to_string().as_bytes(),
    )
}

/// `tools/call` in a session; returns the JSON-RPC `result`.
fn mcp_tool(addr: SocketAddr, session: &str, id: u64, tool: &str, args: &Value) -> Value {
    let params = json!({"name": tool, "arguments": args});
    mcp_request(addr, session, id, "tools/call", &params)["result"].clone()
}

fn over_the_bounds() -> [(Value, Value); 3] {
    [
        (
            json!({ "description": description_of(1001, 'x') }),
            description_error(1001),
        ),
        (
            json!({"description": EU_IBAN, "limit": 51}),
            limit_error(51),
        ),
        (
            json!({"description": EU_IBAN, "domains": policy_times(65)}),
            domains_error(65),
        ),
    ]
}

#[test]
fn rest_refuses_each_argument_over_its_bound_with_422_naming_it() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only(&tmp, &[]);
    for (args, error) in over_the_bounds() {
        let resp = rest_call(server.addr, "find_precedents", &args);
        assert_eq!((resp.status, resp.json()), (422, error));
    }
}

#[test]
fn mcp_refuses_each_argument_over_its_bound_with_an_is_error_result() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only(&tmp, &[]);
    let session = mcp_session(server.addr);
    for (id, (args, error)) in (1..).zip(over_the_bounds()) {
        let result = mcp_tool(server.addr, &session, id, "find_precedents", &args);
        assert_eq!(common::mcp_tool_error(&result), error);
    }
}

/// `json` padded with trailing spaces (still the same JSON) to exactly `len` bytes.
fn padded(json: &Value, len: usize) -> Vec<u8> {
    let mut body = json.to_string().into_bytes();
    assert!(body.len() <= len);
    body.resize(len, b' ');
    body
}

#[test]
fn a_body_of_one_mebibyte_is_read_and_one_byte_more_is_413() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only(&tmp, &[]);
    let args = json!({"domain": "policy", "table": "customer"});
    let path = "/v1/tools/get_dataset";
    let headers = [("Content-Type", "application/json")];

    let at = post(server.addr, path, &headers, &padded(&args, MAX_BODY_BYTES));
    assert_eq!(at.status, 200, "{}", at.text());
    assert_eq!(at.json()["metadata"]["name"], json!("customer"));
    let over = post(
        server.addr,
        path,
        &headers,
        &padded(&args, MAX_BODY_BYTES + 1),
    );
    assert_eq!(
        (over.status, over.json()),
        (413, body_error("the arguments of 'get_dataset'"))
    );

    let at = post(
        server.addr,
        "/mcp",
        MCP_HEADERS,
        &padded(&initialize(1), MAX_BODY_BYTES),
    );
    assert_eq!(at.status, 200, "{}", at.text());
    assert_eq!(
        at.rpc_messages()[0]["result"]["serverInfo"]["name"],
        json!("govcat")
    );
    let over = post(
        server.addr,
        "/mcp",
        MCP_HEADERS,
        &padded(&initialize(2), MAX_BODY_BYTES + 1),
    );
    assert_eq!(
        (over.status, over.json()),
        (413, body_error("one JSON-RPC message"))
    );
}

/// The line of a Prometheus exposition that starts with `prefix`.
fn metric(text: &str, prefix: &str) -> Option<String> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .map(String::from)
}

/// Sends the head of a REST call whose 2-byte body has not arrived: the request holds its slot
/// while the handler waits for the body. Returns once `/metrics` shows it in flight.
fn hold_a_slot(addr: SocketAddr) -> TcpStream {
    let mut held = TcpStream::connect(addr).expect("connect");
    write!(
        held,
        "POST /v1/tools/list_domains HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n"
    )
    .expect("send the head");
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let text = get(addr, "/metrics").text();
        if metric(&text, "govcat_http_in_flight ").as_deref() == Some("govcat_http_in_flight 1") {
            return held;
        }
        assert!(
            Instant::now() < deadline,
            "the held request never showed as in flight: {:?}",
            metric(&text, "govcat_http_in_flight ")
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn one_request_over_max_concurrent_requests_is_429_with_retry_after_and_the_next_is_answered() {
    let tmp = tempfile::tempdir().unwrap();
    let audit = tmp.path().join("audit.jsonl");
    let server = exact_only(
        &tmp,
        &[
            "--max-concurrent-requests",
            "1",
            "--audit-log",
            audit.to_str().unwrap(),
        ],
    );
    let addr = server.addr;
    let mut held = hold_a_slot(addr);

    let refused = rest_call(addr, "list_domains", &json!({}));
    assert_eq!(
        (
            refused.status,
            refused.header("retry-after"),
            refused.json()
        ),
        (429, Some("1"), concurrency_error(1))
    );
    let refused = post(
        addr,
        "/mcp",
        MCP_HEADERS,
        initialize(1).to_string().as_bytes(),
    );
    assert_eq!(
        (
            refused.status,
            refused.header("retry-after"),
            refused.json()
        ),
        (429, Some("1"), concurrency_error(1))
    );
    // Health and readiness never wait behind the bound (readiness is 503 here: no model).
    assert_eq!(
        (get(addr, "/healthz").status, get(addr, "/readyz").status),
        (200, 503)
    );

    held.write_all(b"{}").expect("send the body");
    let mut status_line = String::new();
    BufReader::new(&held)
        .read_line(&mut status_line)
        .expect("read the held answer");
    assert_eq!(status_line.trim_end(), "HTTP/1.1 200 OK");

    let later = rest_call(addr, "list_domains", &json!({}));
    assert_eq!(later.status, 200, "{}", later.text());

    let metrics = get(addr, "/metrics").text();
    assert_eq!(
        [
            "govcat_http_in_flight ",
            "govcat_http_in_flight_max ",
            "govcat_http_refused_total ",
            "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"429\"}",
        ]
        .map(|p| metric(&metrics, p)),
        [
            Some("govcat_http_in_flight 0".to_string()),
            Some("govcat_http_in_flight_max 1".to_string()),
            Some("govcat_http_refused_total 2".to_string()),
            Some(
                "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"429\"} 1"
                    .to_string()
            ),
        ]
    );

    // Each refusal is on record, like any refused request.
    let lines: Vec<Value> = std::fs::read_to_string(&audit)
        .expect("audit log")
        .lines()
        .map(|l| serde_json::from_str(l).expect("audit line"))
        .filter(|l: &Value| l["error"] == json!("TooManyRequests"))
        .map(|l| {
            json!({"transport": l["transport"], "method": l["method"], "tool": l["tool"],
                   "outcome": l["outcome"]})
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            json!({"transport": "rest", "method": "tools/call", "tool": "list_domains", "outcome": "error"}),
            json!({"transport": "mcp", "method": "POST /mcp", "tool": null, "outcome": "error"}),
        ]
    );
}

#[test]
fn max_concurrent_requests_must_be_at_least_one() {
    let out = std::process::Command::new(common::server::BIN)
        .args([
            "serve",
            "--listen",
            "127.0.0.1:0",
            "--max-concurrent-requests",
            "0",
        ])
        .output()
        .expect("run govcat serve");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'0' is not a number of requests; give a whole number of at least 1, e.g. 64"),
        "{err}"
    );
}

/// Answers at the bounds over both transports, from a real-model snapshot.
#[test]
fn at_the_bounds_rest_and_mcp_answer_with_results() {
    let Some(built) = common::real() else {
        return;
    };
    let index = built.dir.to_str().expect("utf-8 index path");
    let server = Served::start(&["--index", index], &[]);
    let at_bounds = [
        json!({ "description": description_of(1000, 'x') }),
        json!({"description": EU_IBAN, "limit": 50}),
        json!({"description": EU_IBAN, "domains": policy_times(64)}),
    ];
    let session = mcp_session(server.addr);
    for (id, args) in (1..).zip(at_bounds) {
        let resp = rest_call(server.addr, "find_precedents", &args);
        assert_eq!(resp.status, 200, "{args}: {}", resp.text());
        let rest = resp.json();
        let mcp = mcp_tool(server.addr, &session, id, "find_precedents", &args);
        assert_eq!(mcp["isError"], json!(false), "{args}: {mcp}");
        assert_eq!(mcp["structuredContent"], rest, "{args}");
    }
}
