//! The `govcat` binary's contract (issue 2): exit status, and under `--json` the tool's
//! structured output or error object on stdout, exactly. Runs the built binary from the repo
//! root on the embedded demo catalog (`fixtures/catalog`, recorded 2026-11-29) and the shipped
//! ontology (`ontology/lf-tags.json`).

mod common;

use std::path::Path;
use std::process::{Command, Output};

use serde_json::{json, Value};

use govcat::ontology::{Ontology, OntologyError, DEFAULT_ONTOLOGY_PATH};
use govcat::tools::{self, Caller, Context, Outcome};

/// Runs `govcat ARGS` from the repository root, with no GOVCAT_* setting inherited.
fn govcat(args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_govcat"));
    cmd.args(args).current_dir(env!("CARGO_MANIFEST_DIR"));
    for (key, _) in std::env::vars() {
        if key.starts_with("GOVCAT_") {
            cmd.env_remove(key);
        }
    }
    cmd.output().expect("the govcat binary runs")
}

fn stdout_json(out: &Output) -> Value {
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "stdout is not JSON ({e}): {}\nstderr: {}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

fn ontology() -> Ontology {
    Ontology::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join(DEFAULT_ONTOLOGY_PATH))
        .expect("the shipped ontology loads")
}

fn allowed_values(ontology: &Ontology, key: &str) -> Vec<String> {
    ontology
        .key(key)
        .unwrap_or_else(|| panic!("ontology has key {key}"))
        .values
        .iter()
        .map(|v| v.value.0.clone())
        .collect()
}

fn provenance_counts() -> Value {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/catalog/provenance.json");
    let text = std::fs::read_to_string(path).expect("provenance.json");
    let provenance: Value = serde_json::from_str(&text).expect("provenance.json is JSON");
    provenance["counts"].clone()
}

const FULL_SET: [&str; 5] = [
    "sensitivity=high",
    "residency=eu",
    "subject_type=customer",
    "retention=10y",
    "lawful_basis=contract",
];

#[test]
fn resolve_unknown_value_exits_non_zero_with_the_allowed_values() {
    let out = govcat(&["resolve", "--json", "sensitivity=hgh"]);
    assert_eq!(out.status.code(), Some(1));
    let allowed = allowed_values(&ontology(), "sensitivity");
    assert!(allowed.contains(&"high".to_string()), "{allowed:?}");
    assert_eq!(
        stdout_json(&out),
        json!({
            "error": "UnknownTagValue",
            "message": format!(
                "unknown value 'hgh' for tag key 'sensitivity'; allowed values: {}",
                allowed.join(", ")
            ),
            "key": "sensitivity",
            "value": "hgh",
            "allowed": allowed,
        })
    );
}

#[test]
fn resolve_unknown_key_exits_non_zero_with_the_allowed_keys() {
    let out = govcat(&["resolve", "--json", "sensitivty=high"]);
    assert_eq!(out.status.code(), Some(1));
    let keys = ontology().key_names();
    assert_eq!(
        stdout_json(&out),
        json!({
            "error": "UnknownTagKey",
            "message": format!("unknown tag key 'sensitivty'; allowed keys: {}", keys.join(", ")),
            "key": "sensitivty",
            "allowed": keys,
        })
    );
}

#[test]
fn resolve_full_valid_set_exits_zero_with_the_set() {
    let mut args = vec!["resolve", "--json"];
    args.extend(FULL_SET);
    let out = govcat(&args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        stdout_json(&out),
        json!({
            "resolved": {
                "lawful_basis": "contract",
                "residency": "eu",
                "retention": "10y",
                "sensitivity": "high",
                "subject_type": "customer",
            },
            "ontology_version": ontology().version,
            "ttlMs": 30000,
            "cacheScope": "public",
        })
    );
}

#[test]
fn resolve_incomplete_set_exits_3_with_input_required_listing_missing_keys() {
    let out = govcat(&["resolve", "--json", "sensitivity=high", "residency=eu"]);
    assert_eq!(out.status.code(), Some(3));
    let ontology = ontology();
    let missing: Vec<Value> = ["subject_type", "retention", "lawful_basis"]
        .iter()
        .map(|key| {
            json!({
                "key": key,
                "description": ontology.key(key).expect("key").description,
                "allowed": allowed_values(&ontology, key),
            })
        })
        .collect();
    // No entries, hint or echo: an ask is not an empty answer (rule 9).
    assert_eq!(
        stdout_json(&out),
        json!({"input_required": {
            "message": "the tag set lacks subject_type, retention, lawful_basis; give one value for each",
            "missing": missing,
        }})
    );
}

#[test]
fn list_domains_lists_every_demo_domain_with_counts_matching_the_provenance() {
    let out = govcat(&["list-domains", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let entries = v["entries"].as_array().expect("entries is a list");
    assert!(entries.len() >= 8, "{} domains", entries.len());
    let names: Vec<&str> = entries
        .iter()
        .map(|e| e["name"].as_str().expect("name"))
        .collect();
    let mut sorted = names.clone();
    sorted.sort();
    assert_eq!(names, sorted, "ordered by name");
    for required in ["policy", "claims", "fraud"] {
        assert!(names.contains(&required), "{required} in {names:?}");
    }
    for e in entries {
        let keys: Vec<&str> = e
            .as_object()
            .expect("entry")
            .keys()
            .map(String::as_str)
            .collect();
        // A clean catalog carries no counts_excluded note (rule 14).
        assert_eq!(
            keys,
            [
                "name",
                "owner",
                "description",
                "account_id",
                "dataset_count",
                "column_count"
            ],
            "{e}"
        );
        for text in ["owner", "description"] {
            assert!(
                !e[text].as_str().expect("text").trim().is_empty(),
                "{}: empty {text}",
                e["name"]
            );
        }
    }
    let sum = |field: &str| -> u64 {
        entries
            .iter()
            .map(|e| e[field].as_u64().expect(field))
            .sum()
    };
    assert!(
        sum("column_count") >= 600,
        "{} columns",
        sum("column_count")
    );
    let counts = provenance_counts();
    assert_eq!(json!(entries.len()), counts["domains"]);
    assert_eq!(json!(sum("dataset_count")), counts["tables"]);
    assert_eq!(json!(sum("column_count")), counts["columns"]);
    assert_eq!(v["sort_key"], "name asc");
    assert_eq!(v["cacheScope"], "private");
    assert_eq!(v["ttlMs"], 30000);
}

#[test]
fn list_domains_readable_output_is_an_aligned_table_of_the_json() {
    let json_out = stdout_json(&govcat(&["list-domains", "--json"]));
    let out = govcat(&["list-domains"]);
    assert_eq!(out.status.code(), Some(0));
    let mut expected = format!(
        "{:<12} {:>8} {:>8}  {}\n",
        "DOMAIN", "DATASETS", "COLUMNS", "OWNER"
    );
    for e in json_out["entries"].as_array().expect("entries") {
        expected += &format!(
            "{:<12} {:>8} {:>8}  {}\n",
            e["name"].as_str().expect("name"),
            e["dataset_count"].as_u64().expect("count"),
            e["column_count"].as_u64().expect("count"),
            e["owner"].as_str().expect("owner"),
        );
    }
    assert_eq!(String::from_utf8_lossy(&out.stdout), expected);
}

#[test]
fn get_dataset_policy_customer_shows_iban_high_and_eu() {
    let out = govcat(&["get-dataset", "--json", "policy", "customer"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v = stdout_json(&out);
    let iban = v["columns"]
        .as_array()
        .expect("columns")
        .iter()
        .find(|c| c["name"] == "iban")
        .expect("iban column");
    assert_eq!(
        iban["lf_tags"]["sensitivity"],
        json!({"state": "present", "value": "high", "assigned_at": "column"})
    );
    assert_eq!(
        iban["lf_tags"]["residency"],
        json!({"state": "present", "value": "eu", "assigned_at": "database"})
    );
    assert_eq!(
        iban["lf_tags"]["subject_type"],
        json!({"state": "present", "value": "customer", "assigned_at": "table"})
    );
    assert_eq!(iban["type"], "string");
}

/// `--json` prints the tool's structured output exactly: the same value the dispatcher gives
/// every other transport.
#[test]
fn get_dataset_json_is_the_tool_output_exactly() {
    let out = govcat(&["get-dataset", "--json", "policy", "customer"]);
    assert_eq!(out.status.code(), Some(0));
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ontology = ontology();
    let source =
        govcat::catalog::dir::DirSource::open(&root.join("fixtures/catalog"), ontology.clone())
            .expect("demo catalog");
    let ctx = Context::new(ontology, Box::new(source));
    let Outcome::Ok(mut expected) = tools::call(
        &ctx,
        &Caller::local(),
        "get_dataset",
        json!({"domain": "policy", "table": "customer"}),
    ) else {
        panic!("get_dataset on the demo catalog failed");
    };
    // The binary was given the default relative path; this process an absolute one.
    expected["source"]["location"] = json!("fixtures/catalog");
    assert_eq!(stdout_json(&out), expected);
}

#[test]
fn get_dataset_unknown_table_exits_non_zero_listing_the_tables() {
    let out = govcat(&["get-dataset", "--json", "policy", "nope"]);
    assert_eq!(out.status.code(), Some(1));
    let tables = [
        "customer",
        "health_declaration",
        "insured_vehicle",
        "policy",
        "premium_billing",
        "quote",
        "ref_sparte",
        "vermittler",
    ];
    assert_eq!(
        stdout_json(&out),
        json!({
            "error": "DatasetNotFound",
            "message": format!(
                "dataset 'policy.nope' is not in this catalog; the domain's tables: {}; run `govcat get-dataset policy TABLE` with TABLE one of the domain's tables",
                tables.join(", ")
            ),
            "domain": "policy",
            "table": "nope",
            "tables": tables,
        })
    );
}

#[test]
fn get_dataset_unknown_domain_exits_non_zero_saying_how_to_list_domains() {
    let out = govcat(&["get-dataset", "--json", "polcy", "customer"]);
    assert_eq!(out.status.code(), Some(1));
    let domains = provenance_counts()["domains"].clone();
    assert_eq!(
        stdout_json(&out),
        json!({
            "error": "DomainNotFound",
            "message": format!(
                "domain 'polcy' is not in this catalog ({domains} available); run `govcat list-domains` to see the domains"
            ),
            "domain": "polcy",
        })
    );
}

/// A syntax error at line 3, column 16 (the second string where a `,` belongs).
const MALFORMED_ONTOLOGY: &str =
    "{\n  \"version\": \"1\",\n  \"owner\": \"g\" \"description\": \"d\",\n  \"keys\": []\n}\n";

fn malformed_message(path: &Path) -> String {
    let problem = serde_json::from_str::<Ontology>(MALFORMED_ONTOLOGY)
        .expect_err("malformed")
        .to_string();
    OntologyError::Malformed {
        path: path.to_path_buf(),
        line: 3,
        column: 16,
        problem,
    }
    .to_string()
}

#[test]
fn malformed_ontology_is_refused_naming_file_line_and_column() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("lf-tags.json");
    std::fs::write(&path, MALFORMED_ONTOLOGY).expect("write");
    let path_arg = path.to_str().expect("utf-8 path");

    let out = govcat(&["--ontology", path_arg, "list-domains", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout_json(&out),
        json!({"error": "OntologyMalformed", "message": malformed_message(&path)})
    );

    let out = govcat(&["--ontology", path_arg, "resolve", "sensitivity=high"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        format!("govcat: {}\n", malformed_message(&path))
    );
}

#[test]
fn missing_catalog_directory_is_refused_with_the_next_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path_arg = dir.path().to_str().expect("utf-8 path");
    let out = govcat(&["--catalog", path_arg, "list-domains", "--json"]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        stdout_json(&out),
        json!({
            "error": "SourceUnavailable",
            "message": format!(
                "catalog directory {}: has no domains/ folder; pass --catalog with a directory in the format of docs/catalog-format.md (default fixtures/catalog)",
                dir.path().display()
            ),
        })
    );
}

/// `govcat … | head -1` (issue 31, point 5): a closed pipe ends the command quietly (SIGPIPE,
/// status 141 in the shell, nothing on stderr), never a "Broken pipe" panic with status 101.
/// The pair: the same command into a reader that takes everything succeeds.
#[test]
fn a_closed_pipe_ends_the_command_quietly_and_an_open_one_succeeds() {
    let bin = env!("CARGO_BIN_EXE_govcat");
    let run = |reader: &str| {
        Command::new("bash")
            .arg("-c")
            .arg(format!(
                "set -o pipefail; {bin} get-dataset policy customer --json | {reader}"
            ))
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .expect("bash runs")
    };
    // A reader that closes at once (long before govcat has read the catalog and writes): the
    // writer meets a closed pipe.
    let closed = run("true");
    assert_eq!(closed.status.code(), Some(141), "{closed:?}");
    assert_eq!(String::from_utf8_lossy(&closed.stderr), "");
    let open = run("cat > /dev/null");
    assert_eq!(open.status.code(), Some(0), "{open:?}");
}

/// Bad argument values are usage errors, exit 2 as the README defines (issue 31, point 4):
/// a share outside 0 to 1 (also a negative one, without clap's "use -- -0" hint) and a resolve
/// argument that is not KEY=VALUE. The pair: valid values of the same flags are accepted.
#[test]
fn bad_argument_values_exit_2_and_say_what_to_give() {
    for args in [
        &["suggest", "iban", "--min-confidence", "2"][..],
        &["suggest", "iban", "--min-confidence", "-0.1"][..],
        &["resolve", "sensitivity"][..],
        &["search", "claim number", "--identifier", "yes"][..],
        &["suggest", "claim number", "--identifier", "1"][..],
    ] {
        let out = govcat(&[args, &["--json"]].concat());
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
        let v = stdout_json(&out);
        assert_eq!(v["error"], "Usage", "{args:?}: {v}");
        let message = v["message"].as_str().unwrap_or_default();
        assert!(!message.contains("-- -0"), "{message}");
        assert!(
            message.contains("outside 0 to 1")
                || message.contains("is not KEY=VALUE")
                || message.contains("[possible values: true, false]"),
            "{message}"
        );
    }
    let out = govcat(&["resolve", "sensitivity=high", "--json"]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
}

#[test]
fn a_publish_location_that_takes_no_write_fails_before_anything_is_built() {
    let tmp = tempfile::tempdir().unwrap();
    let index = tmp.path().join("idx");
    let blocked = tmp.path().join("a-file");
    std::fs::write(&blocked, "not a directory").unwrap();
    let under_a_file = blocked.join("published");
    let started = std::time::Instant::now();
    let out = govcat(&[
        "--json",
        "--index",
        index.to_str().unwrap(),
        "index",
        "--publish",
        under_a_file.to_str().unwrap(),
    ]);
    let v = stdout_json(&out);
    assert_eq!(
        (out.status.code(), &v["error"], &v["reason"]),
        (Some(1), &json!("PublishFailed"), &json!("local_io")),
        "{v}"
    );
    let message = v["message"].as_str().unwrap();
    assert!(
        message.starts_with("publishing failed before anything was built: ")
            && !message.contains("is built"),
        "{message}"
    );
    assert!(!index.join("snapshots").exists(), "a snapshot was built");
    // Without a region the S3 location fails the same way, at once, and says the same.
    let home = tmp.path().join("home");
    std::fs::create_dir_all(&home).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_govcat"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args([
            "--json",
            "--index",
            index.to_str().unwrap(),
            "index",
            "--publish",
            "s3://my-bucket/govcat",
        ])
        .env_clear()
        .env("HOME", &home)
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .output()
        .unwrap();
    let v = stdout_json(&out);
    assert_eq!(
        (&v["error"], &v["reason"]),
        (&json!("PublishFailed"), &json!("credentials")),
        "{v}"
    );
    assert!(
        v["message"]
            .as_str()
            .unwrap()
            .starts_with("publishing failed before anything was built: "),
        "{v}"
    );
    assert!(!index.join("snapshots").exists());
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "took {:?}",
        started.elapsed()
    );
}

/// A build whose stderr is a log (CI, the ECS indexer task) shows its progress as plain lines:
/// each step says what it has to do when it begins and what it did when it ends. Under `--json`
/// stderr holds none of them.
#[test]
fn a_build_logged_to_a_file_shows_its_steps_as_lines_and_none_under_json() {
    if !common::model_available("cli_contract::a_build_logged_to_a_file") {
        return;
    }
    // One domain of the demo catalog: a build of a few hundred texts.
    let tmp = tempfile::tempdir().unwrap();
    let catalog = tmp.path().join("catalog");
    common::slice_catalog(&catalog, &["claims"]);
    let index = tmp.path().join("index");
    let args = |json: bool| {
        let mut a = vec![
            "--catalog",
            catalog.to_str().unwrap(),
            "--index",
            index.to_str().unwrap(),
        ];
        if json {
            a.push("--json");
        }
        a.push("index");
        a.into_iter().map(String::from).collect::<Vec<_>>()
    };
    let run = |json: bool| {
        let args = args(json);
        let out = govcat(&args.iter().map(String::as_str).collect::<Vec<_>>());
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let step = "govcat: embedding texts of columns and ontology values: ";
    let logged = run(false);
    let lines: Vec<&str> = logged
        .lines()
        .filter_map(|l| l.strip_prefix(step))
        .collect();
    let (first, last) = (lines[0], lines[lines.len() - 1]);
    let todo = first.strip_suffix(" to do").expect(first);
    assert!(todo.parse::<u64>().unwrap() > 0, "{logged}");
    assert!(last.starts_with(&format!("{todo} done in ")), "{logged}");
    assert!(
        logged.contains("govcat: suggesting tags, one column held out at a time: "),
        "{logged}"
    );

    let quiet = run(true);
    assert!(
        !quiet
            .lines()
            .any(|l| l.contains(" to do") || l.contains(" done in ")),
        "{quiet}"
    );
}
