//! `govcat serve` over real loopback HTTP: the binary is started on a free port and driven
//! with a plain HTTP/1.1 client. Covers the REST mirror of the tools (same output as the CLI),
//! the error-kind → status mapping, `input_required` as 422, `/readyz`, `/metrics`, Host and
//! Origin refusal, the loopback-only rule of `--auth none` and graceful shutdown.
//!
//! Tests that need the embedding model (a served snapshot) are skipped with a message when the
//! model is absent, and fail under `CI=true`, like tests/embed_real_model.rs.

#[path = "server_http/client.rs"]
mod client;
mod common;

use std::path::Path;
use std::process::{Command, ExitStatus};
use std::time::{Duration, Instant};

use client::{request, Response};
use common::server::{retrieval_available, Served as Server, BIN};
use common::{copy_dir, watching_copies};
use serde_json::{json, Value};

const REPO: &str = env!("CARGO_MANIFEST_DIR");

impl Server {
    fn get(&self, path: &str) -> Response {
        request(self.addr, "GET", path, &[], None).expect("GET")
    }

    fn post(&self, path: &str, body: &str) -> Response {
        request(self.addr, "POST", path, &[], Some(body.as_bytes())).expect("POST")
    }

    fn call(&self, tool: &str, args: Value) -> Response {
        self.post(&format!("/v1/tools/{tool}"), &args.to_string())
    }

    /// SIGTERM, then wait (at most 15 s) for the exit status.
    fn stop(mut self) -> (ExitStatus, Duration) {
        let started = Instant::now();
        let sent = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(sent.success());
        loop {
            if let Some(status) = self.child.try_wait().expect("wait") {
                return (status, started.elapsed());
            }
            assert!(
                started.elapsed() < Duration::from_secs(15),
                "govcat serve did not stop within 15 s of SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn cli_json(args: &[&str]) -> Value {
    let out = Command::new(BIN)
        .current_dir(REPO)
        .arg("--json")
        .args(args)
        .output()
        .expect("run govcat");
    serde_json::from_slice(&out.stdout).expect("CLI --json output")
}

/// A server without the model: the exact tools work, retrieval is off (and /readyz says so).
fn exact_only_server(tmp: &tempfile::TempDir) -> Server {
    let no_model = tmp.path().to_str().expect("utf-8 temp path");
    Server::start(&[], &[("GOVCAT_MODEL_DIR", no_model)])
}

#[test]
fn a_rest_tool_call_answers_exactly_what_the_cli_answers() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let resp = server.call(
        "get_dataset",
        json!({"domain": "policy", "table": "customer"}),
    );
    assert_eq!(resp.status, 200);
    assert_eq!(resp.header("content-type"), Some("application/json"));
    assert_eq!(
        resp.json(),
        cli_json(&["get-dataset", "policy", "customer"])
    );

    let resp = server.call("list_domains", json!({}));
    assert_eq!(resp.status, 200);
    assert_eq!(resp.json(), cli_json(&["list-domains"]));
    // An empty body means "no arguments".
    assert_eq!(
        server.post("/v1/tools/list_domains", "").json(),
        resp.json()
    );
}

#[test]
fn the_tool_list_is_the_shared_specs_with_cache_hints() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let resp = server.get("/v1/tools");
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.json(),
        json!({
            "tools": serde_json::to_value(govcat::tools::specs()).unwrap(),
            "ttlMs": 300000,
            "cacheScope": "public",
        })
    );
}

#[test]
fn tool_errors_map_to_statuses_with_the_error_object() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);

    let resp = server.call("get_dataset", json!({"domain": "policy", "table": "nope"}));
    assert_eq!(resp.status, 404);
    let body = resp.json();
    assert_eq!(body["error"], "DatasetNotFound");
    assert_eq!(
        (&body["domain"], &body["table"]),
        (&json!("policy"), &json!("nope"))
    );
    assert_eq!(
        body["tables"],
        json!([
            "customer",
            "health_declaration",
            "insured_vehicle",
            "policy",
            "premium_billing",
            "quote",
            "ref_sparte",
            "vermittler"
        ])
    );

    let resp = server.call("get_dataset", json!({"domain": "atlantis", "table": "x"}));
    assert_eq!(
        (resp.status, resp.json()["error"].clone()),
        (404, json!("DomainNotFound"))
    );

    let resp = server.call("drop_table", json!({}));
    assert_eq!(
        (resp.status, resp.json()["error"].clone()),
        (404, json!("UnknownTool"))
    );

    let resp = server.call(
        "get_dataset",
        json!({"domain": "policy", "table": "customer", "rows": true}),
    );
    assert_eq!(
        (resp.status, resp.json()["error"].clone()),
        (400, json!("InvalidArguments"))
    );

    let resp = server.post("/v1/tools/get_dataset", "{not json");
    assert_eq!(resp.status, 400);
    assert_eq!(
        resp.json(),
        json!({
            "error": "InvalidArguments",
            "message": "the request body is not JSON (key must be a string at line 1 column 2); send the arguments of 'get_dataset' as a JSON object, see GET /v1/tools for its inputSchema"
        })
    );

    let resp = server.call(
        "resolve_lf_tag",
        json!({"tags": {"sensitivity": "high", "residency": "mars", "subject_type": "customer", "retention": "1y", "lawful_basis": "consent"}}),
    );
    assert_eq!(resp.status, 400);
    let body = resp.json();
    assert_eq!(body["error"], "UnknownTagValue");
    assert_eq!(body["allowed"], json!(["eu", "ch", "us", "global"]));

    let resp = server.get("/v2/nothing");
    assert_eq!(
        (resp.status, resp.json()["error"].clone()),
        (404, json!("NotFound"))
    );
}

#[test]
fn an_incomplete_tag_set_is_422_input_required_and_nothing_else() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let resp = server.call(
        "resolve_lf_tag",
        json!({"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer"}}),
    );
    assert_eq!(resp.status, 422);
    assert_eq!(
        resp.json(),
        json!({
            "input_required": {
                "message": "the tag set lacks retention, lawful_basis; give one value for each",
                "missing": [
                    {
                        "key": "retention",
                        "description": cli_json(&["resolve", "sensitivity=high", "residency=eu", "subject_type=customer"])["input_required"]["missing"][0]["description"],
                        "allowed": ["30d", "1y", "7y", "10y"]
                    },
                    {
                        "key": "lawful_basis",
                        "description": cli_json(&["resolve", "sensitivity=high", "residency=eu", "subject_type=customer"])["input_required"]["missing"][1]["description"],
                        "allowed": ["contract", "consent", "legal_obligation", "legitimate_interest"]
                    }
                ]
            }
        })
    );
}

#[test]
fn readyz_is_503_and_says_why_when_the_model_is_missing() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let resp = server.get("/readyz");
    assert_eq!(resp.status, 503);
    let body = resp.json();
    assert_eq!(body["ready"], false);
    assert_eq!(body["snapshot"], Value::Null);
    let expected = govcat::embed::MiniLm::load(tmp.path())
        .unwrap_err()
        .to_string();
    assert_eq!(body["retrieval_unavailable"], json!(expected));
    // The exact tools still answer, and retrieval answers with an error, not an empty list.
    assert_eq!(server.call("list_domains", json!({})).status, 200);
    let resp = server.call(
        "find_precedents",
        json!({"description": "contains an EU IBAN"}),
    );
    assert_eq!(resp.status, 503);
    assert_eq!(resp.json()["error"], "EmbedderUnavailable");
    assert!(resp.json().get("entries").is_none());
    assert_eq!(server.get("/healthz").json(), json!({"status": "ok"}));
}

#[test]
fn readyz_is_503_until_a_snapshot_loads() {
    if !retrieval_available("readyz_is_503_until_a_snapshot_loads") {
        return;
    }
    let empty_index = tempfile::tempdir().unwrap();
    let dir = empty_index.path().to_str().unwrap();
    let server = Server::start(&["--index", dir], &[]);
    let resp = server.get("/readyz");
    assert_eq!(resp.status, 503);
    let snapshot = &resp.json()["snapshot"];
    assert_eq!(snapshot["loaded"], false);
    assert_eq!(snapshot["id"], Value::Null);
    // Nothing was rebuilt: a snapshot that did not load at start is no failed rebuild.
    assert_eq!(
        (&snapshot["rebuilds_ok"], &snapshot["rebuilds_failed"]),
        (&json!(0), &json!(0))
    );
    // The next step names the command with the flags in effect (`--index`).
    assert_eq!(
        snapshot["last_error"],
        json!(format!(
            "no snapshot in {dir}; run `govcat index --index {dir}` to build one"
        ))
    );
}

#[test]
fn readyz_is_200_with_the_served_snapshot() {
    if !retrieval_available("readyz_is_200_with_the_served_snapshot") {
        return;
    }
    let server = Server::start(&[], &[]);
    let resp = server.get("/readyz");
    assert_eq!(resp.status, 200);
    let body = resp.json();
    let current = std::fs::read_to_string(Path::new(REPO).join("index/CURRENT")).unwrap();
    assert_eq!(body["ready"], true);
    assert_eq!(body["retrieval_unavailable"], Value::Null);
    assert_eq!(body["snapshot"]["loaded"], true);
    assert_eq!(body["snapshot"]["id"], json!(current.trim()));
    let metrics = server.get("/metrics").text();
    assert!(metrics
        .lines()
        .any(|l| l == format!("govcat_snapshot_info{{id=\"{}\"}} 1", current.trim())));
    assert!(metrics.lines().any(|l| l == "govcat_snapshot_loaded 1"));
    assert!(metrics.lines().any(|l| l == "govcat_ready 1"));
}

#[test]
fn metrics_count_requests_by_route_tool_and_outcome() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    server.call(
        "get_dataset",
        json!({"domain": "policy", "table": "customer"}),
    );
    server.call(
        "get_dataset",
        json!({"domain": "policy", "table": "customer"}),
    );
    server.call("get_dataset", json!({"domain": "policy", "table": "nope"}));
    server.call("resolve_lf_tag", json!({"tags": {"sensitivity": "high"}}));
    server.call("no_such_tool", json!({}));
    let resp = server.get("/metrics");
    assert_eq!(resp.status, 200);
    assert_eq!(
        resp.header("content-type"),
        Some("text/plain; version=0.0.4; charset=utf-8")
    );
    let text = resp.text();
    let lines: Vec<&str> = text.lines().collect();
    for expected in [
        "govcat_tool_calls_total{transport=\"rest\",tool=\"get_dataset\",outcome=\"ok\",error_kind=\"\"} 2",
        "govcat_tool_calls_total{transport=\"rest\",tool=\"get_dataset\",outcome=\"error\",error_kind=\"DatasetNotFound\"} 1",
        "govcat_tool_calls_total{transport=\"rest\",tool=\"resolve_lf_tag\",outcome=\"input_required\",error_kind=\"\"} 1",
        "govcat_tool_calls_total{transport=\"rest\",tool=\"(unknown)\",outcome=\"error\",error_kind=\"UnknownTool\"} 1",
        "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"200\"} 2",
        "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"404\"} 2",
        "govcat_http_requests_total{route=\"/v1/tools/{name}\",status=\"422\"} 1",
        "govcat_tool_call_duration_seconds_count{transport=\"rest\",tool=\"get_dataset\"} 3",
        "govcat_http_request_duration_seconds_count{route=\"/v1/tools/{name}\"} 5",
        "govcat_ready 0",
    ] {
        assert!(lines.contains(&expected), "missing line {expected}\n{text}");
    }
    // Argument values never become label values.
    assert!(!text.contains("no_such_tool"));
}

#[test]
fn foreign_hosts_and_origins_are_refused_on_rest_and_mcp() {
    let tmp = tempfile::tempdir().unwrap();
    let no_model = tmp.path().to_str().unwrap();
    let server = Server::start(
        &["--allowed-host", "catalog.internal"],
        &[("GOVCAT_MODEL_DIR", no_model)],
    );
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}})
    .to_string();
    let mcp_headers = |extra: &[(&'static str, &'static str)]| {
        let mut h = vec![
            ("Content-Type", "application/json"),
            ("Accept", "application/json, text/event-stream"),
        ];
        h.extend_from_slice(extra);
        h
    };
    let at = |method: &str, path: &str, headers: &[(&str, &str)], body: Option<&str>| {
        request(server.addr, method, path, headers, body.map(str::as_bytes))
            .expect("request")
            .status
    };
    // Foreign Host: refused on REST and MCP. The probes answer any Host (a load balancer's
    // health check names the target's private IP; tests/server_hardening.rs has that pair).
    assert_eq!(
        at("GET", "/healthz", &[("Host", "evil.example")], None),
        200
    );
    assert_eq!(
        at("GET", "/v1/tools", &[("Host", "evil.example:80")], None),
        403
    );
    assert_eq!(
        at(
            "POST",
            "/mcp",
            &mcp_headers(&[("Host", "evil.example")]),
            Some(&init)
        ),
        403
    );
    let body = request(
        server.addr,
        "GET",
        "/v1/tools",
        &[("Host", "evil.example")],
        None,
    )
    .unwrap()
    .json();
    assert_eq!(body["error"], "ForbiddenHost");
    // Foreign Origin with a good Host: refused too.
    assert_eq!(
        at(
            "GET",
            "/v1/tools",
            &[("Origin", "https://evil.example")],
            None
        ),
        403
    );
    assert_eq!(
        at(
            "POST",
            "/mcp",
            &mcp_headers(&[("Origin", "https://evil.example")]),
            Some(&init)
        ),
        403
    );
    // Loopback and the configured host are served, with or without a matching Origin.
    assert_eq!(
        at(
            "GET",
            "/v1/tools",
            &[("Origin", "http://localhost:3000")],
            None
        ),
        200
    );
    assert_eq!(
        at(
            "GET",
            "/healthz",
            &[("Host", "catalog.internal:8080")],
            None
        ),
        200
    );
    assert_eq!(
        at(
            "POST",
            "/mcp",
            &mcp_headers(&[("Origin", "http://localhost:3000")]),
            Some(&init)
        ),
        200
    );
}

#[test]
fn auth_none_refuses_to_listen_beyond_loopback() {
    let out = Command::new(BIN)
        .current_dir(REPO)
        .args(["serve", "--listen", "0.0.0.0:0"])
        .output()
        .expect("run govcat serve");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr).trim_end(),
        "govcat: --listen 0.0.0.0:0 resolves to 0.0.0.0:0, which is not a loopback address; --auth none serves every request as the local operator, so it binds only to 127.0.0.1, ::1 or localhost"
    );
}

#[test]
fn sigterm_stops_the_server_cleanly() {
    let tmp = tempfile::tempdir().unwrap();
    let no_model = tmp.path().to_str().expect("utf-8 temp path");
    // No drain: the shutdown itself is what is measured (the drain has its own test).
    let server = Server::start(&["--drain-seconds", "0"], &[("GOVCAT_MODEL_DIR", no_model)]);
    assert_eq!(server.get("/healthz").status, 200);
    // An idle keep-alive connection must not hold the shutdown open.
    let mut idle = client::Conn::connect(server.addr).unwrap();
    assert_eq!(
        idle.request("GET", "/healthz", &[], None).unwrap().status,
        200
    );
    let (status, took) = server.stop();
    assert_eq!(status.code(), Some(0));
    assert!(took < Duration::from_secs(8), "shutdown took {took:?}");
}

#[test]
fn watch_swaps_in_a_rebuilt_snapshot_while_requests_keep_succeeding() {
    if !retrieval_available("watch_swaps_in_a_rebuilt_snapshot_while_requests_keep_succeeding") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    // Start from the repository's snapshot (built from the same files): one rebuild, not two.
    let index = tmp.path().join("index");
    copy_dir(&Path::new(REPO).join("index"), &index);
    let (server, ontology) = watching_copies(tmp.path(), &index);
    let first = server.get("/readyz").json()["snapshot"].clone();
    assert_eq!(
        (first["loaded"].clone(), first["swaps"].clone()),
        (json!(true), json!(1))
    );

    // Same content, new write: the watcher rebuilds and swaps.
    std::fs::write(&ontology, std::fs::read(&ontology).unwrap()).unwrap();
    let query = json!({"description": "contains an EU IBAN", "limit": 3});
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut calls = 0;
    let snapshot = loop {
        let resp = server.call("find_precedents", query.clone());
        assert_eq!(
            resp.status,
            200,
            "a request failed during the rebuild: {}",
            resp.text()
        );
        calls += 1;
        let snapshot = server.get("/readyz").json()["snapshot"].clone();
        if snapshot["swaps"] == json!(2) || Instant::now() > deadline {
            break snapshot;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert_eq!(
        snapshot["swaps"],
        json!(2),
        "no swap within 120 s: {snapshot}"
    );
    assert_eq!(snapshot["rebuilds_ok"], json!(1));
    assert_eq!(snapshot["rebuilds_failed"], json!(0));
    assert_eq!(snapshot["loaded"], json!(true));
    assert!(
        calls > 1,
        "the rebuild finished before a request ran during it"
    );
    let after = server.call("find_precedents", query);
    assert_eq!(after.status, 200);
    assert_eq!(after.json()["snapshot"]["id"], snapshot["id"]);
    assert_ne!(snapshot["id"], first["id"]);
}

/// A value governance adds to the ontology under `--watch` is served by every tool after the
/// rebuild, not only by the snapshot: `resolve_lf_tag` refuses it before and accepts it after,
/// `find_precedents` finds it, and `/readyz` names the new ontology version.
#[test]
fn watch_serves_an_added_ontology_value_in_every_tool() {
    if !retrieval_available("watch_serves_an_added_ontology_value_in_every_tool") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("index");
    copy_dir(&Path::new(REPO).join("index"), &index);
    let (server, ontology) = watching_copies(tmp.path(), &index);
    let uk_tags = json!({"tags": {"sensitivity": "high", "residency": "uk", "subject_type": "customer", "retention": "1y", "lawful_basis": "consent"}});
    let before = server.call("resolve_lf_tag", uk_tags.clone());
    assert_eq!(
        (before.status, before.json()["error"].clone()),
        (400, json!("UnknownTagValue"))
    );

    let mut doc: Value = serde_json::from_slice(&std::fs::read(&ontology).unwrap()).unwrap();
    doc["version"] = json!("2026-11-30.1");
    let residency = doc["keys"]
        .as_array_mut()
        .unwrap()
        .iter_mut()
        .find(|k| k["key"] == "residency")
        .expect("residency key");
    residency["values"].as_array_mut().unwrap().push(json!({
        "value": "uk",
        "description": "Stored only in United Kingdom regions.",
        "implies": "Replication outside the United Kingdom needs approval."
    }));
    std::fs::write(&ontology, serde_json::to_vec_pretty(&doc).unwrap()).unwrap();

    let deadline = Instant::now() + Duration::from_secs(120);
    let ready = loop {
        let ready = server.get("/readyz").json();
        if ready["snapshot"]["swaps"] == json!(2) || Instant::now() > deadline {
            break ready;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    assert_eq!(
        (
            ready["snapshot"]["swaps"].clone(),
            ready["context"]["ontology_version"].clone()
        ),
        (json!(2), json!("2026-11-30.1")),
        "no swap to the new ontology within 120 s: {ready}"
    );
    let after = server.call("resolve_lf_tag", uk_tags);
    assert_eq!(
        (after.status, after.json()),
        (
            200,
            json!({
                "resolved": {"sensitivity": "high", "residency": "uk", "subject_type": "customer", "retention": "1y", "lawful_basis": "consent"},
                "ontology_version": "2026-11-30.1",
                "ttlMs": 30000,
                "cacheScope": "public"
            })
        )
    );
    let found = server.call(
        "find_precedents",
        json!({"description": "stored only in United Kingdom regions", "kinds": ["ontology_value"], "limit": 1}),
    );
    assert_eq!(found.status, 200, "{}", found.text());
    assert_eq!(
        found.json()["entries"][0]["id"],
        json!("ontology:residency=uk")
    );
}

/// Rule 8 with a scheduled rebuild: `--refresh` bounds `ttlMs` of retrieval answers by the
/// time left until the next rebuild (capped), and `/readyz` names the cadence; without a
/// cadence the answer carries the floor.
#[test]
fn refresh_cadence_bounds_the_ttl_of_retrieval_answers() {
    if !retrieval_available("refresh_cadence_bounds_the_ttl_of_retrieval_answers") {
        return;
    }
    let args = json!({"description": "contains an EU IBAN"});
    let scheduled = Server::start(&["--refresh", "2m"], &[]);
    let resp = scheduled.call("find_precedents", args.clone());
    assert_eq!(resp.status, 200);
    let ttl = resp.json()["ttlMs"].as_u64().expect("ttlMs");
    assert!(
        ttl <= 120_000,
        "ttlMs {ttl} outlives the next rebuild in 2 min"
    );
    assert_eq!(
        scheduled.get("/readyz").json()["refresh_every_seconds"],
        120
    );
    drop(scheduled);

    let unscheduled = Server::start(&[], &[]);
    let resp = unscheduled.call("find_precedents", args);
    assert_eq!(resp.json()["ttlMs"], json!(30_000));
    assert_eq!(
        unscheduled.get("/readyz").json()["refresh_every_seconds"],
        Value::Null
    );
}

#[test]
fn refresh_cadence_is_refused_without_a_unit() {
    let out = Command::new(BIN)
        .current_dir(REPO)
        .args(["serve", "--listen", "127.0.0.1:0", "--refresh", "15"])
        .output()
        .expect("run govcat serve");
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("'15' has no unit s, m or h; write e.g. 90s, 15m or 1h"),
        "{err}"
    );
}
