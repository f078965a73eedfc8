//! Crash safety of snapshots, with the real `govcat` binary and the real model (the tests skip
//! with a notice without the model, and fail under `CI=true`):
//! - `kill -9` during `govcat index` leaves `CURRENT` on the previous snapshot, which keeps
//!   answering; the next `govcat index` publishes and removes the crashed build's leftovers;
//! - a truncated or bit-flipped snapshot file is refused at load naming the file and
//!   `govcat index`, by the CLI and by `serve` (`/readyz`);
//! - `serve --watch` keeps serving the previous snapshot when a rebuild fails, and `/readyz`
//!   reports the failure.
//!
//! An unwritable audit log is covered by tests/server_auth.rs
//! (`an_unwritable_audit_log_answers_503_and_is_counted`, /dev/full).

#[path = "server_http/client.rs"]
mod client;
mod common;

use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::copy_dir;
use common::server::{cli_json, Served, BIN};
use serde_json::{json, Value};

const EU_IBAN: &str = "contains an EU IBAN";

/// A copy of the real-model demo snapshot (`CURRENT` + `snapshots/<id>/`) in `tmp/index`, or
/// `None` without the model.
fn good_index(tmp: &Path) -> Option<(PathBuf, String)> {
    let built = common::real()?;
    let index = tmp.join("index");
    copy_dir(&built.dir, &index);
    Some((index, built.manifest.id.clone()))
}

fn current(index: &Path) -> String {
    std::fs::read_to_string(index.join("CURRENT"))
        .expect("CURRENT")
        .trim()
        .to_string()
}

/// The names in `index/snapshots`, sorted.
fn snapshot_entries(index: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(index.join("snapshots"))
        .expect("snapshots dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().to_string())
        .collect();
    names.sort();
    names
}

fn search(index: &Path) -> (Option<i32>, Value) {
    cli_json(
        &["search", EU_IBAN, "--index", index.to_str().unwrap()],
        &[],
    )
}

#[test]
fn kill_9_during_index_keeps_the_previous_snapshot_and_the_next_index_cleans_up() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((index, previous)) = good_index(tmp.path()) else {
        return;
    };
    let mut build = Command::new(BIN)
        .current_dir(common::repo())
        .args(["index", "--index", index.to_str().unwrap()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn govcat index");
    // The build writes into a staging directory after embedding; kill it as soon as that
    // directory exists, i.e. while the new snapshot is half written.
    loop {
        if snapshot_entries(&index)
            .iter()
            .any(|n| n.starts_with(".staging-"))
        {
            build.kill().expect("kill -9 govcat index");
            break;
        }
        if let Some(status) = build.try_wait().expect("wait") {
            panic!("govcat index ended ({status}) before its staging directory was seen");
        }
        std::thread::sleep(Duration::from_millis(1));
    }
    let status = build.wait().expect("wait");
    assert_eq!(status.signal(), Some(9), "{status}");

    assert_eq!(current(&index), previous);
    let leftovers: Vec<String> = snapshot_entries(&index)
        .into_iter()
        .filter(|n| n != &previous)
        .collect();
    assert_eq!(leftovers.len(), 1, "{leftovers:?}");
    assert!(leftovers[0].starts_with(".staging-"), "{leftovers:?}");
    let (code, answer) = search(&index);
    assert_eq!(
        (code, &answer["snapshot"]["id"]),
        (Some(0), &json!(previous)),
        "{answer}"
    );
    // A `.CURRENT.<id>` file is what a kill between writing and renaming it leaves (a window
    // of one rename, too short to hit with a signal); the next publish removes it too.
    std::fs::write(index.join(".CURRENT.20260101T000000Z-00000000"), "x\n").unwrap();

    let (code, manifest) = cli_json(&["index", "--index", index.to_str().unwrap()], &[]);
    assert_eq!(code, Some(0), "{manifest}");
    let next = manifest["id"].as_str().expect("manifest id").to_string();
    assert_ne!(next, previous);
    assert_eq!(current(&index), next);
    let mut expected = vec![previous.clone(), next.clone()];
    expected.sort();
    assert_eq!(snapshot_entries(&index), expected);
    let hidden: Vec<String> = std::fs::read_dir(&index)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .filter(|n| n.starts_with('.'))
        .collect();
    assert_eq!(hidden, Vec::<String>::new());
    let (code, answer) = search(&index);
    assert_eq!(
        (code, &answer["snapshot"]["id"]),
        (Some(0), &json!(next)),
        "{answer}"
    );
}

/// The error for a damaged `file` of the snapshots in `index`: its next step is the
/// `govcat index` that rebuilds them, with that `--index`.
fn corrupt_error(index: &Path, file: &Path, problem: &str) -> Value {
    json!({
        "error": "SnapshotCorrupt",
        "message": format!(
            "snapshot file {} is corrupt ({problem}); run `govcat index --index {}` to rebuild the snapshot",
            file.display(),
            index.display()
        ),
    })
}

/// A way to damage one snapshot file.
type Corruption = fn(&Path);

/// Truncates `file` to half its length.
fn truncate(file: &Path) {
    let bytes = std::fs::read(file).unwrap();
    std::fs::write(file, &bytes[..bytes.len() / 2]).unwrap();
}

/// Flips the lowest bit of the middle byte of `file`.
fn flip_a_bit(file: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 1;
    std::fs::write(file, bytes).unwrap();
}

#[test]
fn a_truncated_or_bit_flipped_snapshot_file_is_refused_naming_it_and_govcat_index() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((good, id)) = good_index(tmp.path()) else {
        return;
    };
    let cases: [(&str, Corruption); 4] = [
        ("documents.json", truncate),
        ("vectors.f32", flip_a_bit),
        ("tantivy/meta.json", flip_a_bit),
        ("manifest.json", truncate),
    ];
    for (i, (file, corrupt)) in cases.into_iter().enumerate() {
        let index = tmp.path().join(format!("corrupt-{i}"));
        copy_dir(&good, &index);
        let path = index.join("snapshots").join(&id).join(file);
        corrupt(&path);
        let (code, error) = search(&index);
        let problem = if file == "manifest.json" {
            // serde's own words for the truncation point, read back from the same parser.
            let text = std::fs::read(&path).unwrap();
            serde_json::from_slice::<Value>(&text)
                .map(|_| String::new())
                .unwrap_or_else(|e| e.to_string())
        } else {
            "sha256 differs from the manifest".to_string()
        };
        assert_eq!(
            (code, error),
            (Some(1), corrupt_error(&index, &path, &problem)),
            "{file}"
        );
    }

    // `serve` starts, refuses the snapshot and says why in /readyz.
    let index = tmp.path().join("corrupt-0");
    let server = Served::start(&["--index", index.to_str().unwrap()], &[]);
    let resp = client::request(server.addr, "GET", "/readyz", &[], None).expect("GET /readyz");
    let snapshot = resp.json()["snapshot"].clone();
    let documents = index.join("snapshots").join(&id).join("documents.json");
    assert_eq!(
        (
            resp.status,
            &snapshot["loaded"],
            &snapshot["id"],
            &snapshot["last_error"]
        ),
        (
            503,
            &json!(false),
            &Value::Null,
            &corrupt_error(&index, &documents, "sha256 differs from the manifest")["message"]
        )
    );
}

#[test]
fn watch_keeps_serving_the_previous_snapshot_when_a_rebuild_fails() {
    let tmp = tempfile::tempdir().unwrap();
    let Some((index, _)) = good_index(tmp.path()) else {
        return;
    };
    let (server, ontology) = common::watching_copies(tmp.path(), &index);
    // The snapshot of the copies watching_copies published.
    let previous = current(&index);
    let readyz = || {
        let resp = client::request(server.addr, "GET", "/readyz", &[], None).expect("readyz");
        (resp.status, resp.json()["snapshot"].clone())
    };
    assert_eq!(readyz().1["id"], json!(previous));

    // A broken ontology: the rebuild cannot even read its inputs.
    std::fs::write(&ontology, "{ not json").unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let (status, snapshot) = loop {
        let (status, snapshot) = readyz();
        if snapshot["rebuilds_failed"] != json!(0) || Instant::now() > deadline {
            break (status, snapshot);
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let last_error = snapshot["last_error"].as_str().unwrap_or_default();
    assert!(
        last_error.contains(ontology.to_str().unwrap()),
        "last_error does not name the ontology file: {snapshot}"
    );
    assert_eq!(
        (
            status,
            &snapshot["loaded"],
            &snapshot["id"],
            &snapshot["swaps"],
            &snapshot["rebuilds_ok"],
            &snapshot["rebuilds_failed"]
        ),
        (
            200,
            &json!(true),
            &json!(previous),
            &json!(1),
            &json!(0),
            &json!(1)
        )
    );
    let resp = client::request(
        server.addr,
        "POST",
        "/v1/tools/find_precedents",
        &[("Content-Type", "application/json")],
        Some(
            json!({"description": EU_IBAN, "limit": 3})
                .to_string()
                .as_bytes(),
        ),
    )
    .expect("find_precedents");
    assert_eq!(resp.status, 200, "{}", resp.text());
    assert_eq!(resp.json()["snapshot"]["id"], json!(previous));
}
