//! The `aws` source against a real AWS emulator (moto server, started per test on a free
//! loopback port, seeded with three domains of the demo catalog by `tests/aws/seed.py`, killed
//! at the end even when a test fails). A recording proxy between the SDK and moto shows what
//! reached the emulator and injects the failures moto cannot produce (throttling, denials,
//! hangs). Outside CI a missing `.venv` skips these tests with a message; under `CI=true` it
//! fails them. Set up the venv with `scripts/setup-python.sh`.

#[path = "server_http/client.rs"]
mod client;
mod common;
#[path = "aws/harness.rs"]
mod harness;

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use govcat::catalog::aws::{session_name, AwsConfig, DomainDrift};
use govcat::catalog::dir::DirSource;
use govcat::catalog::{Caller, CatalogError, CatalogSource, Domain, FieldState, TableName};
use govcat::tools::{self, Context, Outcome};
use harness::{form, seeded_tables, Action, Moto, Proxy};
use serde_json::{json, Value};

const DOMAINS: [&str; 3] = ["claims", "hr", "policy"];

fn caller(subject: &str) -> Caller {
    Caller {
        subject: subject.into(),
        readable: None,
    }
}

fn ctx(source: impl CatalogSource + 'static) -> Context {
    Context::new(harness::ontology(), Box::new(source))
}

fn ok(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok(v) => v,
        other => panic!("expected a result, got {other:?}"),
    }
}

fn err(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Err(e) => e.to_json(),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn get_dataset(ctx: &Context, who: &Caller, domain: &str, table: &str) -> Outcome {
    tools::call(
        ctx,
        who,
        "get_dataset",
        json!({"domain": domain, "table": table}),
    )
}

fn without(mut v: Value, key: &str) -> Value {
    if let Some(o) = v.as_object_mut() {
        o.remove(key);
    }
    v
}

fn assume_role_requests(proxy: &Proxy) -> Vec<Vec<(String, String)>> {
    proxy
        .requests()
        .iter()
        .filter(|r| r.operation() == "AssumeRole")
        .map(|r| form(&r.body))
        .collect()
}

fn field<'a>(form: &'a [(String, String)], key: &str) -> Option<&'a str> {
    form.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

fn govcat() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_govcat"));
    cmd.current_dir(harness::repo());
    cmd
}

fn write_config(dir: &Path, extra: &str) -> std::path::PathBuf {
    let path = dir.join("aws.toml");
    std::fs::write(&path, harness::config_text(extra)).expect("config written");
    path
}

#[test]
fn session_name_and_caller_tag_reach_sts_sanitised_and_cut_at_64_characters() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    let source = harness::source(&proxy.url(), "");
    let subject = format!("Jane Doe <jane.doe@example.com>|{}", "x".repeat(80));

    // moto rejects session names over 64 characters: the read succeeding is part of the proof.
    source
        .get_dataset(
            &caller(&subject),
            &Domain("policy".into()),
            &TableName("customer".into()),
        )
        .expect("read under the assumed role");

    let sts = assume_role_requests(&proxy);
    assert_eq!(sts.len(), 1);
    let expected_name = format!("mcp-Jane_Doe__jane.doe@example.com__{}", "x".repeat(28));
    assert_eq!(expected_name.len(), 64);
    assert_eq!(session_name(&subject), expected_name);
    let f = &sts[0];
    assert_eq!(field(f, "RoleSessionName"), Some(expected_name.as_str()));
    assert_eq!(
        field(f, "RoleArn"),
        Some("arn:aws:iam::210000000001:role/govcat-reader")
    );
    assert_eq!(field(f, "ExternalId"), Some("govcat-demo-external-id"));
    assert_eq!(field(f, "DurationSeconds"), Some("900"));
    assert_eq!(field(f, "Tags.member.1.Key"), Some("caller"));
    assert_eq!(
        field(f, "Tags.member.1.Value"),
        Some(format!("Jane Doe _jane.doe@example.com__{}", "x".repeat(80)).as_str())
    );
    assert_eq!(field(f, "Tags.member.2.Key"), None);
}

/// The other half of the caching test: after the endpoint failed, the next read assumes the
/// role again instead of reusing a session the restarted endpoint may no longer know.
#[test]
fn after_an_unavailable_endpoint_the_next_read_assumes_the_role_again() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    proxy.on(
        "GetTable",
        Some("\"quote\""),
        Action::Respond {
            status: 503,
            headers: vec![],
            body: "<html>Service Unavailable</html>".into(),
        },
    );
    let source = harness::source(&proxy.url(), "max_attempts = 1");
    let read = |table: &str| {
        source.get_dataset(
            &caller("alice"),
            &Domain("policy".into()),
            &TableName(table.into()),
        )
    };
    read("customer").expect("first read");
    assert_eq!(assume_role_requests(&proxy).len(), 1);
    let e = read("quote").expect_err("the endpoint fails for this table");
    assert_eq!(e.kind(), "UpstreamUnavailable");
    assert_eq!(assume_role_requests(&proxy).len(), 1, "no new session yet");
    read("customer").expect("read after the failure");
    assert_eq!(
        assume_role_requests(&proxy).len(),
        2,
        "the session was dropped with the failure and assumed again"
    );
}

#[test]
fn temporary_credentials_are_cached_per_domain_and_caller() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    let source = harness::source(&proxy.url(), "");
    let read = |who: &str, domain: &str, table: &str| {
        source
            .get_dataset(
                &caller(who),
                &Domain(domain.into()),
                &TableName(table.into()),
            )
            .expect("read");
    };
    read("alice", "policy", "customer");
    read("alice", "policy", "quote");
    assert_eq!(
        assume_role_requests(&proxy).len(),
        1,
        "same domain and caller: cached"
    );
    read("alice", "claims", "claim");
    assert_eq!(
        assume_role_requests(&proxy).len(),
        2,
        "another domain: its own role"
    );
    read("bob", "policy", "customer");
    let sessions: Vec<String> = assume_role_requests(&proxy)
        .iter()
        .map(|f| field(f, "RoleSessionName").unwrap_or("-").to_string())
        .collect();
    assert_eq!(sessions, vec!["mcp-alice", "mcp-alice", "mcp-bob"]);
}

#[test]
fn the_callers_bearer_token_never_reaches_the_emulator() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    // A bearer token as the HTTP transport receives it; the auth layer turns it into a Caller
    // (subject + scopes) and only that Caller travels further.
    let signature = "TOKEN-MARKER-9f2c41d7e0b8";
    let payload = "eyJzdWIiOiJhbGljZUBleGFtcGxlLmNvbSIsImF1ZCI6Imdvdm5hdCJ9";
    let token = format!("eyJhbGciOiJSUzI1NiJ9.{payload}.{signature}");
    let who = Caller {
        subject: "alice@example.com".into(),
        readable: Some(BTreeSet::from([
            Domain("claims".into()),
            Domain("policy".into()),
        ])),
    };
    let ctx = ctx(harness::source(&proxy.url(), ""));
    ok(get_dataset(&ctx, &who, "policy", "customer"));
    ok(tools::call(&ctx, &who, "list_domains", json!({})));
    ok(tools::call(
        &ctx,
        &who,
        "check_grant_expression",
        json!({"role": "claims-analyst", "domain": "claims", "table": "claim"}),
    ));

    let requests = proxy.requests();
    assert!(requests.len() > 10, "the reads went through the proxy");
    // Positive control: the caller's subject does reach STS, as the session name.
    let names: BTreeSet<String> = assume_role_requests(&proxy)
        .iter()
        .filter_map(|f| field(f, "RoleSessionName").map(str::to_string))
        .collect();
    assert_eq!(names, BTreeSet::from(["mcp-alice@example.com".to_string()]));
    for r in &requests {
        let raw = r.raw();
        let decoded: String = form(&r.body)
            .into_iter()
            .map(|(k, v)| format!("{k}={v}\n"))
            .collect();
        for secret in [token.as_str(), signature, payload] {
            assert!(!raw.contains(secret), "token part in request {}", r.head);
            assert!(
                !decoded.contains(secret),
                "token part in request {}",
                r.head
            );
        }
        assert!(
            !r.header("authorization")
                .unwrap_or("")
                .to_lowercase()
                .starts_with("bearer"),
            "a bearer authorization header reached the emulator"
        );
    }
}

#[test]
fn aws_answers_equal_the_demo_catalogs_for_every_seeded_table() {
    let Some(moto) = Moto::start() else { return };
    let summary = moto.seed();
    let aws = ctx(harness::source(&moto.url(), ""));
    let dir = ctx(DirSource::open(
        &harness::repo().join("fixtures/catalog"),
        harness::ontology(),
    )
    .expect("demo catalog"));
    let me = caller("tester");
    let mut compared = 0;
    for domain in DOMAINS {
        let authored: Vec<&str> = summary["domains"][domain]["column_tags_from_authoring_source"]
            .as_array()
            .expect("seed summary")
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for table in seeded_tables(&summary, domain) {
            let a = ok(get_dataset(&aws, &me, domain, &table));
            let d = ok(get_dataset(&dir, &me, domain, &table));
            assert_eq!(a["contract"], d["contract"], "{domain}.{table} contract");
            // moto keeps its own timestamps; everything else of the metadata is the same.
            assert_eq!(
                without(a["metadata"].clone(), "updated_at"),
                without(d["metadata"].clone(), "updated_at"),
                "{domain}.{table} metadata"
            );
            if authored.contains(&table.as_str()) {
                // Recorded as denied in the demo catalog (withheld); moto cannot deny, so the
                // emulator holds the authored tags and the aws source reads them.
                let names = |v: &Value| -> Vec<Value> {
                    v["columns"]
                        .as_array()
                        .expect("columns")
                        .iter()
                        .map(|c| c["name"].clone())
                        .collect()
                };
                assert_eq!(names(&a), names(&d));
                assert_eq!(
                    d["columns"][0]["lf_tags"]["sensitivity"]["state"],
                    "withheld"
                );
                assert_eq!(
                    a["columns"][0]["lf_tags"]["sensitivity"]["state"],
                    "present"
                );
            } else {
                assert_eq!(a["columns"], d["columns"], "{domain}.{table} columns");
            }
            compared += 1;
        }
    }
    assert_eq!(compared, 21);

    // Inheritance spelled out on one column: database -> table -> column, most specific wins.
    let customer = ok(get_dataset(&aws, &me, "policy", "customer"));
    let iban = customer["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .find(|c| c["name"] == "iban")
        .expect("iban column")
        .clone();
    assert_eq!(
        iban["lf_tags"],
        json!({
            "lawful_basis": {"state": "present", "value": "contract", "assigned_at": "table"},
            "residency": {"state": "present", "value": "eu", "assigned_at": "database"},
            "retention": {"state": "present", "value": "10y", "assigned_at": "table"},
            "sensitivity": {"state": "present", "value": "high", "assigned_at": "column"},
            "subject_type": {"state": "present", "value": "customer", "assigned_at": "table"}
        })
    );
    assert_eq!(
        customer["contract"]["table_tags"]["sensitivity"],
        json!({"state": "empty_in_source", "value": null})
    );
}

#[test]
fn ontology_drift_is_reported_for_the_drifting_account_only() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let source = harness::source(&moto.url(), "");
    let report = source
        .ontology_drift(&caller("tester"))
        .expect("drift report");
    assert!(report.has_drift());
    let clean = |domain: &str, account: &str| DomainDrift {
        domain: Domain(domain.into()),
        account_id: account.into(),
        keys_only_in_account: vec![],
        keys_only_in_ontology: vec![],
        values_only_in_account: Default::default(),
        values_only_in_ontology: Default::default(),
    };
    assert_eq!(
        report.domains,
        vec![
            DomainDrift {
                keys_only_in_account: vec!["cost_center".into()],
                values_only_in_account: [(
                    "sensitivity".to_string(),
                    vec!["restricted".to_string()]
                )]
                .into(),
                values_only_in_ontology: [
                    ("residency".to_string(), vec!["us".to_string()]),
                    (
                        "retention".to_string(),
                        vec!["1y".to_string(), "30d".to_string()]
                    ),
                ]
                .into(),
                ..clean("claims", "210000000002")
            },
            clean("hr", "210000000006"),
            clean("policy", "210000000001"),
        ]
    );
    // A caller who may read only policy gets only policy's account compared.
    let policy_only = Caller {
        subject: "p".into(),
        readable: Some(BTreeSet::from([Domain("policy".into())])),
    };
    let report = source.ontology_drift(&policy_only).expect("drift report");
    assert_eq!(report.domains, vec![clean("policy", "210000000001")]);
}

/// `/readyz` compares the account's LF-tags with the ontology being served: after governance
/// adds the account's extra value to the watched ontology file and the rebuild swaps it in,
/// the drift report is read again against the new ontology instead of keeping the one of the
/// start.
#[test]
fn readyz_drift_is_read_again_against_the_ontology_a_watch_rebuild_swapped_in() {
    if !common::server::retrieval_available(
        "readyz_drift_is_read_again_against_the_ontology_a_watch_rebuild_swapped_in",
    ) {
        return;
    }
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = write_config(tmp.path(), "");
    let ontology = tmp.path().join("lf-tags.json");
    std::fs::copy(harness::repo().join("ontology/lf-tags.json"), &ontology).expect("copy");
    let index = tmp.path().join("index");
    let url = moto.url();
    let server = common::server::Served::start(
        &[
            "--source",
            "aws",
            "--aws-config",
            config.to_str().expect("utf-8"),
            "--ontology",
            ontology.to_str().expect("utf-8"),
            "--index",
            index.to_str().expect("utf-8"),
            "--watch",
        ],
        &[
            ("AWS_ENDPOINT_URL", url.as_str()),
            ("AWS_ACCESS_KEY_ID", "AKIDGOVCATSERVER"),
            ("AWS_SECRET_ACCESS_KEY", "govcat-server-secret"),
            ("AWS_REGION", "eu-central-1"),
            ("AWS_EC2_METADATA_DISABLED", "true"),
        ],
    );
    let readyz = || {
        let resp = client::request(server.addr, "GET", "/readyz", &[], None).expect("readyz");
        (resp.status, resp.json())
    };
    let claims = |ready: &Value| ready["ontology_drift"]["domains"][0].clone();
    // No snapshot in the fresh index yet: not ready, but the drift is already reported.
    let (status, before) = readyz();
    assert_eq!(status, 503);
    assert_eq!(claims(&before)["domain"], "claims");
    assert_eq!(
        claims(&before)["values_only_in_account"],
        json!({"sensitivity": ["restricted"]})
    );

    let mut doc: Value =
        serde_json::from_slice(&std::fs::read(&ontology).expect("read")).expect("json");
    doc["version"] = json!("2026-11-30.2");
    doc["keys"]
        .as_array_mut()
        .expect("keys")
        .iter_mut()
        .find(|k| k["key"] == "sensitivity")
        .expect("sensitivity")["values"]
        .as_array_mut()
        .expect("values")
        .push(json!({
            "value": "restricted",
            "description": "Access restricted to named people by the data owner.",
            "implies": "Named people only; no role grants."
        }));
    std::fs::write(&ontology, serde_json::to_vec_pretty(&doc).expect("json")).expect("write");

    let deadline = Instant::now() + Duration::from_secs(180);
    let (status, after) = loop {
        let (status, ready) = readyz();
        if ready["snapshot"]["swaps"] == json!(1) || Instant::now() > deadline {
            break (status, ready);
        }
        std::thread::sleep(Duration::from_millis(250));
    };
    assert_eq!(
        (
            status,
            after["snapshot"]["swaps"].clone(),
            after["ontology_drift"]["ontology_version"].clone()
        ),
        (200, json!(1), json!("2026-11-30.2")),
        "no rebuild against the new ontology within 180 s: {after}"
    );
    assert_eq!(claims(&after)["domain"], "claims");
    assert_eq!(claims(&after)["values_only_in_account"], json!({}));
    assert_eq!(
        claims(&after)["keys_only_in_account"],
        claims(&before)["keys_only_in_account"]
    );
}

#[test]
fn tables_roles_and_grants_come_from_glue_and_lake_formation() {
    let Some(moto) = Moto::start() else { return };
    let summary = moto.seed();
    let aws_source = harness::source(&moto.url(), "");
    let me = caller("tester");
    for domain in DOMAINS {
        let tables: Vec<String> = aws_source
            .list_tables(&me, &Domain(domain.into()))
            .expect("GetTables")
            .into_iter()
            .map(|t| t.0)
            .collect();
        assert_eq!(tables, seeded_tables(&summary, domain), "{domain}");
    }
    // Only IAM roles are roles: the seeded grant to user/etl-loader is not listed.
    assert_eq!(
        aws_source.list_roles(&me).expect("ListPermissions"),
        vec![
            "claims-analyst",
            "fraud-investigator",
            "hr-payroll",
            "policy-underwriter",
            "risk-actuary"
        ]
    );
    let grants = aws_source
        .role_grants(&me, "fraud-investigator")
        .expect("grants");
    assert_eq!(
        grants.grants.len(),
        1,
        "only the claims grant is in a seeded account"
    );
    assert_eq!(grants.named_resource_grants, 0);
    assert_eq!(
        aws_source.role_grants(&me, "nobody").unwrap_err(),
        CatalogError::RoleNotFound {
            role: "nobody".into(),
            roles: vec![
                "claims-analyst".into(),
                "fraud-investigator".into(),
                "hr-payroll".into(),
                "policy-underwriter".into(),
                "risk-actuary".into()
            ],
        }
    );

    let aws = ctx(aws_source);
    let dir = ctx(DirSource::open(
        &harness::repo().join("fixtures/catalog"),
        harness::ontology(),
    )
    .expect("demo catalog"));
    for (role, domain, table) in [
        ("claims-analyst", "claims", "claim"),
        ("fraud-investigator", "claims", "claim_party"),
        ("risk-actuary", "policy", "customer"),
        ("hr-payroll", "hr", "payroll_ch"),
    ] {
        let args = json!({"role": role, "domain": domain, "table": table});
        let a = ok(tools::call(
            &aws,
            &me,
            "check_grant_expression",
            args.clone(),
        ));
        let d = ok(tools::call(&dir, &me, "check_grant_expression", args));
        assert_eq!(a, d, "{role} on {domain}.{table}");
    }
}

#[test]
fn a_table_or_domain_not_in_the_catalog_is_not_found_never_empty() {
    let Some(moto) = Moto::start() else { return };
    let summary = moto.seed();
    let source = harness::source(&moto.url(), "");
    let me = caller("tester");
    assert_eq!(
        source
            .get_dataset(
                &me,
                &Domain("policy".into()),
                &TableName("no_such_table".into())
            )
            .unwrap_err(),
        CatalogError::DatasetNotFound {
            domain: "policy".into(),
            table: "no_such_table".into(),
            tables: seeded_tables(&summary, "policy"),
        }
    );
    assert_eq!(
        source
            .list_tables(&me, &Domain("finance".into()))
            .unwrap_err(),
        CatalogError::DomainNotFound {
            domain: "finance".into(),
            available: 3
        }
    );
}

#[test]
fn a_configured_domain_whose_database_is_missing_is_its_own_error_and_present_it_reads() {
    let Some(moto) = Moto::start() else { return };
    let summary = moto.seed();
    let me = caller("tester");
    let policy = Domain("policy".into());
    // Present: the domain map's account has `policy_curated`.
    let present = harness::source(&moto.url(), "");
    assert_eq!(
        present.list_tables(&me, &policy).expect("policy reads"),
        seeded_tables(&summary, "policy")
            .into_iter()
            .map(TableName)
            .collect::<Vec<_>>()
    );
    // Missing: `policy` is still in the domain map, but its account (changed here) has no
    // `policy_curated`.
    let text = harness::config_text("").replace("210000000001", "210000000099");
    let config = AwsConfig::parse(&text, Path::new("tests/aws/domains.toml")).expect("parses");
    let source = harness::source_with(&moto.url(), config);
    let e = source.list_tables(&me, &policy).unwrap_err();
    assert_eq!(
        e,
        CatalogError::UpstreamDatabaseMissing {
            domain: "policy".into(),
            database: "policy_curated".into(),
            account_id: "210000000099".into(),
            operation: "glue:GetTables on policy_curated".into(),
        }
    );
    assert_eq!(
        e.to_string(),
        "glue:GetTables on policy_curated for domain 'policy' failed: account 210000000099 has no Glue database 'policy_curated', which the domain is configured to read; create the database in that account, or correct domain 'policy' (account_id) in the aws domain map"
    );
    let tool_error = tools::ToolError::from(e);
    assert_eq!(tool_error.kind, "UpstreamDatabaseMissing");
    assert_eq!(
        tool_error.to_json(),
        json!({
            "error": "UpstreamDatabaseMissing",
            "message": tool_error.message,
            "domain": "policy",
            "database": "policy_curated",
            "account_id": "210000000099",
        })
    );
    // (`get_dataset` is not checked here: moto answers Lake Formation's database-tags read for
    // a missing database with a bare HTTP 500, where AWS answers EntityNotFoundException.)
    // The unchanged domains of the same source still read.
    assert!(!source
        .list_tables(&me, &Domain("claims".into()))
        .expect("claims reads")
        .is_empty());
}

#[test]
fn record_output_read_by_the_dir_source_answers_like_the_aws_source() {
    let Some(moto) = Moto::start() else { return };
    let summary = moto.seed();
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = write_config(tmp.path(), "");
    let out = tmp.path().join("recorded");
    let mut cmd = govcat();
    harness::aws_env(&mut cmd, &moto.url());
    let run = cmd
        .args(["--source", "aws", "--aws-config"])
        .arg(&config)
        .args(["--json", "record", "--out"])
        .arg(&out)
        .output()
        .expect("govcat record runs");
    assert!(
        run.status.success(),
        "record failed: {}",
        String::from_utf8_lossy(&run.stdout)
    );
    let printed: Value = serde_json::from_slice(&run.stdout).expect("JSON summary");
    assert_eq!(printed["domains"], 3);
    assert_eq!(printed["tables"], 21);
    assert_eq!(printed["ontology_drift"], true);

    let provenance: Value = serde_json::from_str(
        &std::fs::read_to_string(out.join("provenance.json")).expect("provenance"),
    )
    .expect("JSON");
    assert_eq!(provenance["source"], "aws");
    assert_eq!(provenance["region"], "eu-central-1");
    assert_eq!(provenance["endpoint"], moto.url());
    assert_eq!(
        provenance["accounts"],
        json!({"claims": "210000000002", "hr": "210000000006", "policy": "210000000001"})
    );
    assert_eq!(
        provenance["counts"],
        json!({"domains": 3, "tables": 21, "columns": printed["columns"]})
    );
    assert_eq!(provenance["recorded_at"], printed["recorded_at"]);
    assert!(tools::parse_rfc3339(provenance["recorded_at"].as_str().unwrap_or("")).is_some());
    assert_eq!(
        provenance["roles"],
        json!([
            "claims-analyst",
            "fraud-investigator",
            "hr-payroll",
            "policy-underwriter",
            "risk-actuary"
        ])
    );

    let aws = ctx(harness::source(&moto.url(), ""));
    let dir = ctx(DirSource::open(&out, harness::ontology()).expect("recorded catalog opens"));
    let me = caller("tester");
    for domain in DOMAINS {
        for table in seeded_tables(&summary, domain) {
            let a = ok(get_dataset(&aws, &me, domain, &table));
            let d = ok(get_dataset(&dir, &me, domain, &table));
            assert_eq!(
                without(a, "source"),
                without(d, "source"),
                "{domain}.{table}"
            );
        }
    }
    assert_eq!(
        ok(tools::call(&aws, &me, "list_domains", json!({}))),
        ok(tools::call(&dir, &me, "list_domains", json!({})))
    );
    let args =
        json!({"role": "policy-underwriter", "domain": "policy", "table": "health_declaration"});
    assert_eq!(
        ok(tools::call(
            &aws,
            &me,
            "check_grant_expression",
            args.clone()
        )),
        ok(tools::call(&dir, &me, "check_grant_expression", args))
    );

    // A second record into the same directory is refused, not merged.
    let mut again = govcat();
    harness::aws_env(&mut again, &moto.url());
    let run = again
        .args(["--source", "aws", "--aws-config"])
        .arg(&config)
        .args(["--json", "record", "--out"])
        .arg(&out)
        .output()
        .expect("govcat record runs");
    assert_eq!(run.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&run.stdout).expect("error object");
    assert_eq!(e["error"], "SourceUnavailable");
}

#[test]
fn emulator_stopped_mid_run_is_a_tool_error_with_a_next_step() {
    let Some(mut moto) = Moto::start() else {
        return;
    };
    moto.seed();
    let ctx = ctx(harness::source(
        &moto.url(),
        "max_attempts = 1\ncall_timeout_ms = 3000",
    ));
    let me = caller("tester");
    ok(get_dataset(&ctx, &me, "policy", "customer"));
    moto.stop();

    let started = Instant::now();
    let calls = [
        ("get_dataset", json!({"domain": "policy", "table": "quote"})),
        ("list_domains", json!({})),
        (
            "check_grant_expression",
            json!({"role": "risk-actuary", "domain": "policy", "table": "customer"}),
        ),
    ];
    for (tool, args) in calls {
        let e = err(tools::call(&ctx, &me, tool, args));
        assert_eq!(e["error"], "UpstreamUnavailable", "{tool}: {e}");
        let message = e["message"].as_str().expect("message");
        let next = format!(
            "retry later (govcat made 1 attempt within a 3000 ms deadline); if it persists, check that {} is reachable and healthy",
            moto.url()
        );
        assert!(message.ends_with(&next), "{tool}: {message}");
        // Domains are read in name order, so list_domains and check_grant fail on claims first.
        assert!(
            message.contains("' failed: could not reach"),
            "{tool}: {message}"
        );
        assert_eq!(e.get("entries"), None);
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "errors come fast, not after hanging"
    );
}

#[test]
fn cli_get_dataset_with_the_emulator_down_exits_nonzero_with_an_error_object() {
    // No emulator at all: the port is free and nothing listens.
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = write_config(tmp.path(), "max_attempts = 1");
    let nothing_listens = format!("http://127.0.0.1:{}", harness::free_port());
    let mut cmd = govcat();
    harness::aws_env(&mut cmd, &nothing_listens);
    let run = cmd
        .args(["--source", "aws", "--aws-config"])
        .arg(&config)
        .args(["--json", "get-dataset", "policy", "customer"])
        .output()
        .expect("govcat runs");
    assert_eq!(run.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&run.stdout).expect("an error object on stdout");
    assert_eq!(e["error"], "UpstreamUnavailable");
    // An error object, never an empty result.
    assert_eq!(e.get("columns"), None);
    assert_eq!(e.get("entries"), None);
    let message = e["message"].as_str().expect("message");
    assert!(
        message.starts_with(
            "sts:AssumeRole into arn:aws:iam::210000000001:role/govcat-reader for domain 'policy' failed: could not reach"
        ),
        "{message}"
    );
    assert!(message.contains("retry later"), "{message}");
}

#[test]
fn cli_without_server_credentials_says_so_instead_of_blaming_the_network() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let config = write_config(tmp.path(), "max_attempts = 1");
    let mut cmd = govcat();
    harness::aws_env(
        &mut cmd,
        &format!("http://127.0.0.1:{}", harness::free_port()),
    );
    let run = cmd
        .env_remove("AWS_ACCESS_KEY_ID")
        .env_remove("AWS_SECRET_ACCESS_KEY")
        .env("HOME", tmp.path())
        .args(["--source", "aws", "--aws-config"])
        .arg(&config)
        .args(["--json", "get-dataset", "policy", "customer"])
        .output()
        .expect("govcat runs");
    assert_eq!(run.status.code(), Some(1));
    let e: Value = serde_json::from_slice(&run.stdout).expect("an error object on stdout");
    assert_eq!(e["error"], "UpstreamAccessDenied");
    let message = e["message"].as_str().expect("message");
    assert!(
        message.starts_with(
            "sts:AssumeRole into arn:aws:iam::210000000001:role/govcat-reader for domain 'policy' was not sent: govcat has no usable AWS credentials ("
        ),
        "{message}"
    );
    assert!(
        message.ends_with("; give govcat AWS credentials of its own (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance or task role): they are missing, invalid or expired"),
        "{message}"
    );
}

fn glue_error(code: &str, message: &str) -> Action {
    Action::Respond {
        status: 400,
        headers: vec![("Content-Type".into(), "application/x-amz-json-1.1".into())],
        body: json!({"__type": code, "message": message}).to_string(),
    }
}

#[test]
fn throttling_is_retried_with_backoff_then_reported_as_unavailable() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    proxy.on(
        "GetTable",
        None,
        glue_error("ThrottlingException", "Rate exceeded"),
    );
    let source = harness::source(&proxy.url(), "max_attempts = 2\ninitial_backoff_ms = 50");
    let e = source
        .get_dataset(
            &caller("t"),
            &Domain("policy".into()),
            &TableName("customer".into()),
        )
        .unwrap_err();
    assert_eq!(
        e,
        CatalogError::UpstreamUnavailable {
            domain: "policy".into(),
            operation: "glue:GetTable on policy_curated.customer".into(),
            problem: "throttled by AWS (ThrottlingException: Rate exceeded)".into(),
            next: format!(
                "retry later (govcat made up to 2 attempts with backoff within a 10000 ms deadline); if it persists, check that {} is reachable and healthy",
                proxy.url()
            ),
        }
    );
    assert_eq!(proxy.count("GetTable"), 2, "one retry");
}

#[test]
fn a_5xx_is_unavailable_not_an_empty_answer() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    proxy.on(
        "GetTables",
        None,
        Action::Respond {
            status: 503,
            headers: vec![],
            body: "<html>Service Unavailable</html>".into(),
        },
    );
    let source = harness::source(&proxy.url(), "max_attempts = 1");
    let e = source
        .list_tables(&caller("t"), &Domain("hr".into()))
        .unwrap_err();
    assert_eq!(e.kind(), "UpstreamUnavailable");
    assert_eq!(
        e.to_string(),
        format!(
            "glue:GetTables on hr_curated for domain 'hr' failed: HTTP 503 from {0} (the response carried no AWS error code); retry later (govcat made 1 attempt within a 10000 ms deadline); if it persists, check that {0} is reachable and healthy",
            proxy.url()
        )
    );
}

#[test]
fn denied_assume_role_names_the_role_the_domain_the_trust_policy_and_the_external_id() {
    let Some(moto) = Moto::start() else { return };
    let proxy = Proxy::start(moto.addr);
    proxy.on(
        "AssumeRole",
        None,
        Action::Respond {
            status: 403,
            headers: vec![("Content-Type".into(), "text/xml".into())],
            body: "<ErrorResponse xmlns=\"https://sts.amazonaws.com/doc/2011-06-15/\"><Error><Type>Sender</Type>\
                   <Code>AccessDenied</Code><Message>User is not authorized to perform: sts:AssumeRole</Message>\
                   </Error><RequestId>r-1</RequestId></ErrorResponse>"
                .into(),
        },
    );
    let source = harness::source(&proxy.url(), "max_attempts = 1");
    let e = source
        .get_dataset(
            &caller("t"),
            &Domain("claims".into()),
            &TableName("claim".into()),
        )
        .unwrap_err();
    assert_eq!(
        e,
        CatalogError::UpstreamAccessDenied {
            domain: "claims".into(),
            principal: "govcat's own AWS identity".into(),
            operation: "sts:AssumeRole into arn:aws:iam::210000000002:role/govcat-reader".into(),
            problem: "AccessDenied: User is not authorized to perform: sts:AssumeRole".into(),
            next: "check the trust policy of arn:aws:iam::210000000002:role/govcat-reader: it must let govcat's own AWS identity assume the role, and its sts:ExternalId condition must equal external_id in the govcat AWS config".into(),
        }
    );
}

#[test]
fn denied_reads_name_the_role_and_denied_column_tags_are_withheld() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    let lf_denied = |message: &str| Action::Respond {
        status: 403,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("x-amzn-ErrorType".into(), "AccessDeniedException".into()),
        ],
        body: json!({"Message": message}).to_string(),
    };
    proxy.on(
        "GetResourceLFTags",
        Some("TableWithColumns"),
        lf_denied("Insufficient Lake Formation permission(s) on columns"),
    );
    proxy.on(
        "GetTable",
        Some("\"Name\":\"quote\""),
        glue_error("AccessDeniedException", "no glue:GetTable"),
    );
    let source = harness::source(&proxy.url(), "max_attempts = 1");
    let me = caller("t");

    let d = source
        .get_dataset(&me, &Domain("policy".into()), &TableName("customer".into()))
        .expect("column denial is an answer: withheld");
    for c in &d.columns {
        assert!(
            c.lf_tags.values().all(|t| t.state == FieldState::Withheld),
            "{}",
            c.name
        );
    }
    assert_eq!(
        d.contract.table_tags["subject_type"].value.as_deref(),
        Some("customer")
    );

    let e = source
        .get_dataset(&me, &Domain("policy".into()), &TableName("quote".into()))
        .unwrap_err();
    let CatalogError::UpstreamAccessDenied {
        principal,
        domain,
        operation,
        ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(principal, "arn:aws:iam::210000000001:role/govcat-reader");
    assert_eq!(domain, "policy");
    assert_eq!(operation, "glue:GetTable on policy_curated.quote");
}

#[test]
fn a_call_that_never_answers_ends_at_the_deadline() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let proxy = Proxy::start(moto.addr);
    proxy.on("GetTables", None, Action::Hang);
    let source = harness::source(&proxy.url(), "max_attempts = 1\ncall_timeout_ms = 800");
    let started = Instant::now();
    let e = source
        .list_tables(&caller("t"), &Domain("policy".into()))
        .unwrap_err();
    let elapsed = started.elapsed();
    assert!(elapsed < Duration::from_secs(5), "took {elapsed:?}");
    let CatalogError::UpstreamUnavailable {
        problem, operation, ..
    } = &e
    else {
        panic!("{e:?}")
    };
    assert_eq!(operation, "glue:GetTables on policy_curated");
    assert!(
        problem.starts_with("no answer within the 800 ms deadline"),
        "{problem}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_from_spawn_blocking_threads_and_drops_inside_a_runtime() {
    let Some(moto) = Moto::start() else { return };
    moto.seed();
    let source = std::sync::Arc::new(harness::source(&moto.url(), ""));
    let s = source.clone();
    let d = tokio::task::spawn_blocking(move || {
        s.get_dataset(
            &caller("server"),
            &Domain("hr".into()),
            &TableName("employee".into()),
        )
    })
    .await
    .expect("blocking task")
    .expect("read");
    assert_eq!(d.metadata.database, "hr_curated");
    drop(source); // the last handle, dropped on a runtime worker: must not panic
}

/// Only `sts:AssumeRole` and Get/List/Search operations appear in the aws source: every SDK
/// operation name (from the SDK crates' `src/operation/` folders) called in
/// `src/catalog/aws*` is checked.
#[test]
fn only_get_list_search_and_assume_role_calls_exist_in_the_aws_source() {
    let operations = sdk_operations();
    assert!(operations.contains("create_table") && operations.contains("get_table"));
    let mut files = vec![harness::repo().join("src/catalog/aws.rs")];
    let dir = harness::repo().join("src/catalog/aws");
    for entry in std::fs::read_dir(&dir).expect("src/catalog/aws/") {
        let path = entry.expect("entry").path();
        if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
    let mut called = BTreeSet::new();
    for file in &files {
        let text = std::fs::read_to_string(file).expect("source file");
        for op in operations_called(&text, &operations) {
            called.insert(op);
        }
    }
    assert_eq!(
        called,
        [
            "assume_role",
            "get_resource_lf_tags",
            "get_table",
            "get_tables",
            "list_lf_tags",
            "list_permissions"
        ]
        .into_iter()
        .map(String::from)
        .collect::<BTreeSet<_>>()
    );
    assert_eq!(forbidden(&called), Vec::<String>::new());
    // The check itself can fail.
    let sample = "s.glue.create_table().send(); s.lf.get_resource_lf_tags()";
    assert_eq!(
        forbidden(&operations_called(sample, &operations)),
        vec!["create_table".to_string()]
    );
}

fn forbidden(called: &BTreeSet<String>) -> Vec<String> {
    called
        .iter()
        .filter(|op| {
            op.as_str() != "assume_role"
                && !["get_", "list_", "search_"]
                    .iter()
                    .any(|p| op.starts_with(p))
        })
        .cloned()
        .collect()
}

/// Every `.name(` whose name is an SDK operation.
fn operations_called(text: &str, operations: &BTreeSet<String>) -> BTreeSet<String> {
    let mut found = BTreeSet::new();
    for (i, _) in text.match_indices('.') {
        let rest = &text[i + 1..];
        let name: String = rest
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
            .collect();
        if !name.is_empty() && rest[name.len()..].starts_with('(') && operations.contains(&name) {
            found.insert(name);
        }
    }
    found
}

/// Operation names of aws-sdk-glue, -lakeformation and -sts, from `cargo metadata`.
fn sdk_operations() -> BTreeSet<String> {
    // Offline metadata must be limited to this platform: other platforms' crates are not
    // downloaded.
    let rustc = Command::new(std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into()))
        .arg("-vV")
        .output()
        .expect("rustc -vV runs");
    let host = String::from_utf8_lossy(&rustc.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("rustc names its host");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(harness::repo())
        .args([
            "metadata",
            "--format-version",
            "1",
            "--offline",
            "--filter-platform",
            &host,
        ])
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "cargo metadata: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut operations = BTreeSet::new();
    for crate_name in ["aws-sdk-glue", "aws-sdk-lakeformation", "aws-sdk-sts"] {
        let manifests: BTreeSet<&str> = meta["packages"]
            .as_array()
            .expect("packages")
            .iter()
            .filter(|p| p["name"] == crate_name)
            .filter_map(|p| p["manifest_path"].as_str())
            .collect();
        assert_eq!(manifests.len(), 1, "{crate_name} resolved once");
        for manifest in manifests {
            let ops = Path::new(manifest).with_file_name("src").join("operation");
            let before = operations.len();
            for entry in std::fs::read_dir(&ops).expect("the SDK's src/operation/") {
                let path = entry.expect("entry").path();
                if path.is_dir() {
                    if let Some(name) = path.file_name().and_then(|n| n.to_str()) {
                        operations.insert(name.to_string());
                    }
                }
            }
            assert!(operations.len() > before + 5, "{crate_name} has operations");
        }
    }
    operations
}
