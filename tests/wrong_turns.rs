//! Issue 25, "No wrong turn", replayed from a fresh checkout's point of view: the real binary,
//! run in a temporary directory laid out as a checkout (`fixtures/catalog`, `ontology/`, no
//! `index/`), every message's advice followed to the letter.
//!
//! 1. A snapshot knows its catalog: `index/` built from another catalog is refused
//!    (`SnapshotSourceMismatch`) by search, suggest and serve, naming both sides and the command
//!    that builds the right snapshot; running it makes the original command succeed.
//! 2. Advice carries its flags: the `govcat index` a NoSnapshot error prints repeats
//!    `--catalog`, `--ontology` and `--index`; run literally it makes the original command
//!    succeed, and the same advice without the flags does not.
//! 3. Hints speak the caller's surface: the CLI names flags that exist (`--mode`, `--kinds`,
//!    `govcat get-dataset` with the flags in effect); REST and MCP name tools and arguments.
//! 4. `--json` is honoured for argument errors: `{"error": "Usage", ...}` on stdout, exit 2.
//!
//! The catalogs are small slices of the demo catalog (two domains as the default catalog, one
//! as the "other" catalog) so each build embeds a few hundred texts. Needs the model
//! (scripts/fetch-model.sh): skipped without it, failed without it under CI=true.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{json, Value};

/// A temporary directory laid out as a fresh checkout.
struct Checkout {
    root: tempfile::TempDir,
}

impl Checkout {
    /// `fixtures/catalog` (policy, analytics), `other/catalog` (claims) and `ontology/`.
    fn new() -> Checkout {
        let root = tempfile::tempdir().expect("tempdir");
        common::slice_catalog(
            &root.path().join("fixtures/catalog"),
            &["policy", "analytics"],
        );
        common::slice_catalog(&root.path().join("other/catalog"), &["claims"]);
        common::copy_dir(
            &common::repo().join("ontology"),
            &root.path().join("ontology"),
        );
        Checkout { root }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.root.path().join(rel)
    }

    /// The canonical path of a folder of the checkout, as a snapshot records it.
    fn canonical(&self, rel: &str) -> String {
        std::fs::canonicalize(self.path(rel))
            .expect("canonical path")
            .display()
            .to_string()
    }

    fn command<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Command {
        let mut cmd = Command::new(common::server::BIN);
        cmd.args(args).current_dir(self.root.path());
        for (key, _) in std::env::vars() {
            if key.starts_with("GOVCAT_") {
                cmd.env_remove(key);
            }
        }
        cmd.env("GOVCAT_MODEL_DIR", common::model_dir())
            .env("GOVCAT_LOG", "warn");
        cmd
    }

    /// Runs `govcat ARGS` in the checkout.
    fn run<S: AsRef<std::ffi::OsStr>>(&self, args: &[S]) -> Output {
        self.command(args).output().expect("the govcat binary runs")
    }

    /// Runs `govcat ARGS` and asserts it succeeded.
    fn ok<S: AsRef<std::ffi::OsStr> + std::fmt::Debug>(&self, args: &[S]) -> Output {
        let out = self.run(args);
        assert_eq!(
            out.status.code(),
            Some(0),
            "govcat {args:?} failed: stdout {} stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs a command exactly as an error message printed it (`govcat …` between backticks).
    fn follow(&self, advised: &str) -> Output {
        let words: Vec<&str> = advised.split_whitespace().collect();
        assert_eq!(words.first(), Some(&"govcat"), "{advised}");
        self.ok(&words[1..])
    }
}

fn json_of(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {} / stderr {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The domains of a search answer's entries, in answer order.
fn domains_of(found: &Value) -> Vec<&str> {
    found["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|x| x["domain"].as_str())
        .collect()
}

/// The commands a message advises (the text between backticks that starts with `govcat `).
fn advised_commands(message: &str) -> Vec<String> {
    message
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|c| c.starts_with("govcat "))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_snapshot_of_another_catalog_is_refused_and_the_advised_index_fixes_it() {
    if !common::model_available("wrong_turns::item_1") {
        return;
    }
    let c = Checkout::new();
    // The wrong turn of the issue: indexing another catalog into the default index/.
    c.ok(&["--catalog", "other/catalog", "index"]);
    let other = c.canonical("other/catalog");

    let search = ["--json", "search", "contains an EU IBAN"];
    let out = c.run(&search);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "SnapshotSourceMismatch");
    assert_eq!(
        e["message"],
        format!(
            "index/ holds a snapshot of {other}, but this command reads fixtures/catalog (the default); run `govcat index` to rebuild it for fixtures/catalog (the default), or pass `--catalog {other}` to use the snapshot as it is"
        )
    );
    assert_eq!(e["snapshot_source"], json!({"kind": "dir", "path": other}));
    assert_eq!(
        e["source"],
        json!({"kind": "dir", "path": c.canonical("fixtures/catalog")})
    );

    // suggest reads the snapshot and the live catalog: refused the same way, not mixed.
    let suggest = [
        "--json",
        "suggest",
        "IBAN",
        "--domain",
        "analytics",
        "--table",
        "customer_360_global_extract",
    ];
    let out = c.run(&suggest);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["message"], e["message"]);

    // serve refuses to start on it rather than answer for the wrong catalog.
    let out = c.run(&["--json", "serve", "--listen", "127.0.0.1:0"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(json_of(&out)["message"], e["message"]);

    // The second way out the message names works as printed: the snapshot as it is.
    let out = c.ok(&[
        "--catalog",
        other.as_str(),
        "--json",
        "search",
        "claim amount",
    ]);
    let found = json_of(&out);
    assert!(found["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .any(|x| x["domain"] == "claims"));

    // The first way out, followed literally: the original commands then succeed.
    let advised = advised_commands(e["message"].as_str().expect("message"));
    assert_eq!(advised, vec!["govcat index".to_string()]);
    c.follow(&advised[0]);
    let found = json_of(&c.ok(&search));
    let domains = domains_of(&found);
    assert!(!domains.is_empty(), "{found}");
    assert!(
        domains.iter().all(|d| ["policy", "analytics"].contains(d)),
        "{domains:?}"
    );
    c.ok(&suggest);

    // Indexing another catalog now leaves that index/ alone: it builds into an index of its
    // own and says so (issue 45).
    let before = std::fs::read_to_string(c.path("index/CURRENT")).expect("CURRENT");
    let out = c.ok(&["--catalog", "other/catalog", "index"]);
    assert_eq!(
        std::fs::read_to_string(c.path("index/CURRENT")).expect("CURRENT"),
        before
    );
    assert!(c.path("index/catalogs/other/CURRENT").is_file());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "govcat: index holds a snapshot of another catalog, which every command without these flags reads; building into index/catalogs/other instead (read it with --index index/catalogs/other)"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    c.ok(&search);

    // The mirror image (issue 31): the default index/ holds the default catalog and a command
    // reads another. Rebuilding index/ for it would break every plain command, so the advice
    // is an index of its own; followed literally, both catalogs then answer.
    let default = c.canonical("fixtures/catalog");
    let elsewhere = [
        "--catalog",
        "other/catalog",
        "--json",
        "search",
        "claim amount",
    ];
    let out = c.run(&elsewhere);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "SnapshotSourceMismatch");
    let own = "govcat index --catalog other/catalog --index index/catalogs/other";
    assert_eq!(
        e["message"],
        format!(
            "index/ holds a snapshot of {default}, but this command reads other/catalog; run `{own}` to build one for other/catalog in an index of its own (rebuilding index/ would replace the snapshot the commands without these flags read), then repeat this command with `--index index/catalogs/other`"
        )
    );
    assert_eq!(
        advised_commands(e["message"].as_str().expect("message")),
        vec![own.to_string()]
    );
    c.follow(own);
    let mut repeated = elsewhere.to_vec();
    repeated.extend(["--index", "index/catalogs/other"]);
    let found = json_of(&c.ok(&repeated));
    let domains = domains_of(&found);
    assert!(
        !domains.is_empty() && domains.iter().all(|d| *d == "claims"),
        "{found}"
    );
    // The default index was left alone: the plain command answers as before.
    c.ok(&search);

    // A changed catalog at the same path is staleness, not a mismatch.
    let table = c.path("fixtures/catalog/domains/policy/tables/customer/get-table.json");
    let text = std::fs::read_to_string(&table).expect("get-table.json");
    std::fs::write(
        &table,
        text.replacen("\"Description\"", "\"Description\" ", 1),
    )
    .expect("touch the catalog");
    c.ok(&search);

    // A snapshot written before sources were recorded: accepted for the default catalog,
    // refused for another (it cannot show it is of that one).
    let id = std::fs::read_to_string(c.path("index/CURRENT")).expect("CURRENT");
    let manifest_path = c.path(&format!("index/snapshots/{}/manifest.json", id.trim()));
    let mut manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(&manifest_path).expect("manifest"))
            .expect("manifest JSON");
    let fields = manifest.as_object_mut().expect("manifest object");
    assert!(fields.remove("source").is_some());
    assert!(fields.remove("ontology_checksum").is_some());
    std::fs::write(&manifest_path, manifest.to_string()).expect("write manifest");
    c.ok(&search);
    let out = c.run(&["--catalog", "other/catalog", "--json", "search", "claim"]);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "SnapshotSourceMismatch");
    assert_eq!(
        e["message"],
        format!(
            "index/ holds snapshot {}, written before govcat recorded which catalog a snapshot is of, so it cannot show it is of other/catalog, which this command reads; run `govcat index --catalog other/catalog --index index/catalogs/other` to build one for other/catalog in an index of its own (rebuilding index/ would replace the snapshot the commands without these flags read), then repeat this command with `--index index/catalogs/other`",
            id.trim()
        )
    );
}

#[test]
fn the_advised_index_carries_the_flags_in_effect_and_works_only_with_them() {
    if !common::model_available("wrong_turns::item_2") {
        return;
    }
    let c = Checkout::new();
    // Another ontology: the shipped one with another description (so another checksum).
    common::copy_dir(&c.path("ontology"), &c.path("ont2"));
    let file = c.path("ont2/lf-tags.json");
    let mut ontology: Value =
        serde_json::from_str(&std::fs::read_to_string(&file).expect("ontology")).expect("JSON");
    ontology["description"] = json!("the shipped vocabulary, as a second file");
    std::fs::write(&file, ontology.to_string()).expect("write ontology");

    let eval = [
        "--catalog",
        "other/catalog",
        "--ontology",
        "ont2/lf-tags.json",
        "--index",
        "idx2",
        "--json",
        "eval",
        "tags",
    ];
    let out = c.run(&eval);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "NoSnapshot");
    let advice = "govcat index --catalog other/catalog --ontology ont2/lf-tags.json --index idx2";
    assert_eq!(
        e["message"],
        format!("no snapshot in idx2; run `{advice}` to build one")
    );
    assert_eq!(
        advised_commands(e["message"].as_str().expect("message")),
        vec![advice.to_string()]
    );

    // The other half: the same advice without the flags builds the demo catalog into index/,
    // and the original command still fails.
    c.follow("govcat index");
    assert_eq!(json_of(&c.run(&eval))["error"], "NoSnapshot");

    // Followed literally, it makes the original command succeed.
    c.follow(advice);
    let report = json_of(&c.ok(&eval));
    assert!(
        report["keys"].as_object().is_some_and(|k| !k.is_empty()),
        "{report}"
    );

    // The same snapshot with the default ontology: another ontology, refused, and the advised
    // command (flags in effect, without --ontology) is again the one that fixes it.
    let search = [
        "--catalog",
        "other/catalog",
        "--index",
        "idx2",
        "--json",
        "search",
        "claim amount",
    ];
    let out = c.run(&search);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "SnapshotSourceMismatch");
    let message = e["message"].as_str().expect("message");
    assert!(
        message.starts_with("idx2/ holds a snapshot built with ontology version "),
        "{message}"
    );
    let advised = advised_commands(message);
    assert_eq!(
        advised,
        vec!["govcat index --catalog other/catalog --index idx2".to_string()]
    );
    c.follow(&advised[0]);
    c.ok(&search);
}

#[test]
fn hints_name_the_flags_of_the_cli_and_the_tools_of_rest_and_mcp() {
    if !common::model_available("wrong_turns::item_3") {
        return;
    }
    let c = Checkout::new();
    c.ok(&["index"]);

    // The CLI's no-match hint names flags `govcat search` has, and only what was narrowed.
    let out = c.ok(&[
        "--json", "search", "qqzzxv", "--mode", "bm25", "--kinds", "column",
    ]);
    let hint = json_of(&out)["hint"].as_str().expect("hint").to_string();
    assert!(
        hint.ends_with("Next: try one of the suggestions (derived from your words, not searched), other or fewer words, `--mode hybrid`, or fewer `--kinds` restrictions (or none: both kinds)."),
        "{hint}"
    );
    let out = c.ok(&["--json", "search", "qqzzxv"]);
    let hint = json_of(&out)["hint"].as_str().expect("hint").to_string();
    assert!(
        hint.ends_with("Next: try one of the suggestions (derived from your words, not searched), or other or fewer words."),
        "{hint}"
    );

    // The tools' `identifier` is a flag of both commands: "claim number" is inferred as asking
    // for one, and --identifier false overrides that; without the flag it stays inferred.
    for command in ["search", "suggest"] {
        for (flag, applied, from) in [
            (Some("false"), false, "argument"),
            (Some("true"), true, "argument"),
            (None, true, "inferred"),
        ] {
            let mut args = vec!["--json", command, "claim number"];
            args.extend(flag.map(|f| ["--identifier", f]).into_iter().flatten());
            let request = json_of(&c.ok(&args))["request"].clone();
            assert_eq!(request["identifier"], applied, "{args:?}: {request}");
            assert_eq!(request["identifier_from"], from, "{args:?}: {request}");
        }
    }

    // check-grant on a domain the catalog lacks: the readable domains, and a step that runs as
    // printed and lists them.
    let out = c.run(&[
        "--catalog",
        "other/catalog",
        "--json",
        "check-grant",
        "claims-analyst",
        "claimz",
        "claim",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    assert_eq!(e["error"], "DomainNotFound");
    assert_eq!(
        e["message"],
        "domain 'claimz' is not in this catalog; the domains you may read: claims; run `govcat list-domains --catalog other/catalog` to see the domains"
    );
    assert_eq!(e["domains"], json!(["claims"]));
    let advised = advised_commands(e["message"].as_str().expect("message"));
    assert_eq!(advised, vec!["govcat list-domains --catalog other/catalog"]);
    let listed = String::from_utf8_lossy(&c.follow(&advised[0]).stdout).to_string();
    assert!(listed.contains("claims"), "{listed}");

    // A CLI error names the CLI command with the flags in effect; it runs as printed once
    // TABLE is one of the tables the message lists.
    let out = c.run(&[
        "--catalog",
        "other/catalog",
        "--json",
        "get-dataset",
        "claims",
        "nope",
    ]);
    assert_eq!(out.status.code(), Some(1));
    let e = json_of(&out);
    let tables: Vec<String> = e["tables"]
        .as_array()
        .expect("tables")
        .iter()
        .map(|t| t.as_str().expect("table").to_string())
        .collect();
    assert_eq!(
        e["message"],
        format!(
            "dataset 'claims.nope' is not in this catalog; the domain's tables: {}; run `govcat get-dataset claims TABLE --catalog other/catalog` with TABLE one of the domain's tables",
            tables.join(", ")
        )
    );
    let advised = advised_commands(e["message"].as_str().expect("message"));
    c.follow(&advised[0].replace("TABLE", &tables[0]));
    let out = c.run(&["--json", "list-domains", "--catalog", "other/catalog"]);
    assert_eq!(out.status.code(), Some(0));
    let e = json_of(&c.run(&[
        "--catalog",
        "other/catalog",
        "--json",
        "get-dataset",
        "claimz",
        "claim",
    ]));
    assert_eq!(e["error"], "DomainNotFound", "{e}");
    assert_eq!(
        e["message"],
        "domain 'claimz' is not in this catalog (1 available); run `govcat list-domains --catalog other/catalog` to see the domains"
    );

    // REST names the tool and its arguments, and a GET on a tool says to POST.
    let mut serve = c
        .command(&["serve", "--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn govcat serve");
    let mut reader = BufReader::new(serve.stdout.take().expect("stdout"));
    let mut line = String::new();
    reader.read_line(&mut line).expect("serve's first line");
    std::thread::spawn(move || std::io::copy(&mut reader, &mut std::io::sink()));
    let addr = line
        .strip_prefix("govcat: serving MCP at http://")
        .and_then(|rest| rest.split('/').next())
        .unwrap_or_else(|| panic!("govcat serve did not start: {line:?}"))
        .to_string();
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/tools/get_dataset",
        r#"{"domain": "policy", "table": "nope"}"#,
    );
    assert_eq!(status, 404);
    assert_eq!(
        body,
        json!({
            "error": "DatasetNotFound",
            "message": format!("dataset 'policy.nope' is not in this catalog; the domain's tables: {}; call the tool `get_dataset` with `domain` \"policy\" and `table` one of the domain's tables", POLICY_TABLES.join(", ")),
            "domain": "policy",
            "table": "nope",
            "tables": POLICY_TABLES,
        })
    );
    let (status, body) = http(&addr, "POST", "/v1/tools/list_domains", "");
    assert_eq!(status, 200, "{body}");
    let (status, body) = http(
        &addr,
        "POST",
        "/v1/tools/find_precedents",
        r#"{"description": "qqzzxv"}"#,
    );
    assert_eq!(status, 200);
    assert!(
        body["hint"].as_str().is_some_and(|h| h.ends_with(
            "Next: try one of `suggestions` (derived from your words, not searched), or other or fewer words."
        )),
        "{body}"
    );
    let (status, body) = http(&addr, "GET", "/v1/tools/find_precedents", "");
    assert_eq!(status, 405);
    assert_eq!(body["error"], "MethodNotAllowed");
    assert!(
        body["message"].as_str().is_some_and(
            |m| m.starts_with("GET /v1/tools/find_precedents: a tool is called with POST")
        ),
        "{body}"
    );
    let _ = serve.kill();
    let _ = serve.wait();

    // MCP (stdio) words the same error for a tool caller.
    let mut stdio = c
        .command(&["mcp-stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn govcat mcp-stdio");
    let mut stdin = stdio.stdin.take().expect("stdin");
    let mut stdout = BufReader::new(stdio.stdout.take().expect("stdout"));
    let mut call = |id: u64, method: &str, params: Value| -> Value {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        writeln!(stdin, "{message}").expect("write");
        stdin.flush().expect("flush");
        loop {
            let mut line = String::new();
            assert!(
                stdout.read_line(&mut line).expect("read") > 0,
                "stdio closed"
            );
            let reply: Value = serde_json::from_str(&line).expect("JSON-RPC");
            if reply["id"] == json!(id) {
                return reply;
            }
        }
    };
    let init = call(
        0,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {},
               "clientInfo": {"name": "wrong-turns", "version": "1"}}),
    );
    assert!(init.get("result").is_some(), "{init}");
    let reply = call(
        1,
        "tools/call",
        json!({"name": "get_dataset", "arguments": {"domain": "polcy", "table": "customer"}}),
    );
    let text = reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"));
    let e: Value = serde_json::from_str(text).expect("error JSON");
    assert_eq!(
        e["message"],
        "domain 'polcy' is not in this catalog (2 available); call the tool `list_domains` to see the domains"
    );
    let _ = stdio.kill();
    let _ = stdio.wait();
}

/// The tables of the demo catalog's `policy` domain.
const POLICY_TABLES: [&str; 8] = [
    "customer",
    "health_declaration",
    "insured_vehicle",
    "policy",
    "premium_billing",
    "quote",
    "ref_sparte",
    "vermittler",
];

/// One HTTP/1.1 request; the status and the JSON body.
fn http(addr: &str, method: &str, path: &str, body: &str) -> (u16, Value) {
    let mut s = std::net::TcpStream::connect(addr).expect("connect");
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
    .expect("send");
    let mut text = String::new();
    s.read_to_string(&mut text).expect("read");
    let (head, body) = text.split_once("\r\n\r\n").expect("HTTP response");
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status");
    (
        status,
        serde_json::from_str(body).unwrap_or_else(|e| panic!("body {body:?}: {e}")),
    )
}

#[test]
fn an_argument_error_under_json_is_a_usage_object_on_stdout_with_exit_2() {
    let c = Checkout::new();
    let out = c.run(&["--json", "search", "IBAN", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        out.stderr.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        json_of(&out),
        json!({
            "error": "Usage",
            "message": "unexpected argument '--frobnicate' found; tip: to pass '--frobnicate' as a value, use '-- --frobnicate'; run `govcat search --help` for the arguments",
            "usage": "govcat search <QUERY>",
        })
    );
    // The other side: without --json, clap's text on stderr and nothing on stdout, exit 2.
    let out = c.run(&["search", "IBAN", "--frobnicate"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr)
        .starts_with("error: unexpected argument '--frobnicate' found"));
    // --help is not an error, under --json or not.
    let out = c.run(&["--json", "search", "--help"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("--kinds"));
}

#[test]
fn the_modes_default_shown_comma_separated_is_every_mode() {
    use clap::Parser;
    let cli =
        govcat::cli::Cli::try_parse_from(["govcat", "eval", "queries", "q.jsonl"]).expect("parses");
    match cli.command {
        govcat::cli::Command::Eval {
            what: govcat::cli::EvalCommand::Queries { modes, .. },
        } => assert_eq!(modes, govcat::eval::queries::EvalMode::ALL.to_vec()),
        other => panic!("parsed as {other:?}"),
    }
}

#[test]
fn a_missing_catalog_folder_and_a_current_naming_a_missing_snapshot_say_so() {
    let c = Checkout::new();
    let out = c.run(&["--catalog", "no/such/catalog", "--json", "list-domains"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_of(&out),
        json!({
            "error": "SourceUnavailable",
            "message": "catalog directory no/such/catalog: does not exist; pass --catalog with an existing directory in the format of docs/catalog-format.md (default fixtures/catalog)",
        })
    );

    std::fs::create_dir_all(c.path("idx/snapshots")).expect("mkdir");
    std::fs::write(c.path("idx/CURRENT"), "20261201T000000Z-deadbeef\n").expect("CURRENT");
    let out = c.run(&["--index", "idx", "--json", "search", "IBAN"]);
    if !common::model_available("wrong_turns::missing_snapshot") {
        return;
    }
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        json_of(&out),
        json!({
            "error": "SnapshotCorrupt",
            "message": "snapshot file idx/CURRENT is corrupt (it names snapshot 20261201T000000Z-deadbeef, which is not in idx/snapshots); run `govcat index --index idx` to rebuild the snapshot",
        })
    );
}

#[test]
fn get_dataset_keeps_its_columns_aligned_past_a_long_type_and_json_keeps_it_whole() {
    let c = Checkout::new();
    let text =
        String::from_utf8(c.ok(&["get-dataset", "policy", "customer"]).stdout).expect("utf-8");
    let rows: Vec<&str> = text
        .lines()
        .skip_while(|l| !l.starts_with("COLUMN"))
        .take_while(|l| !l.is_empty() && !l.starts_with('('))
        .collect();
    let width = rows[0].chars().count();
    assert!(rows.len() > 5, "{text}");
    for row in &rows {
        assert_eq!(row.chars().count(), width, "{row:?}");
    }
    let long = rows
        .iter()
        .find(|r| r.starts_with("postal_address "))
        .expect("postal_address row");
    assert_eq!(long.chars().nth(24 + 18), Some('…'), "{long:?}");
    assert!(
        text.ends_with("(… shortened to keep the columns aligned; --json has every field whole)\n")
    );
    let whole = json_of(&c.ok(&["--json", "get-dataset", "policy", "customer"]));
    let column = whole["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .find(|col| col["name"] == "postal_address")
        .expect("postal_address");
    assert!(
        column["type"].as_str().expect("type").chars().count() > 18,
        "{column}"
    );
}
