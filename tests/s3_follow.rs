//! Publishing snapshots and replicas that follow them, with real components: the `govcat`
//! binary as indexer (`index --publish`) and as replicas (`serve --follow`), and the moto
//! server (started per test on a free loopback port, as in `tests/aws_moto.rs`) as S3. Faults
//! are made in the store itself (a file deleted or altered, CURRENT naming an id that does not
//! exist, moto stopped) or by the recording proxy of `tests/aws/harness.rs` (AccessDenied);
//! each is paired with the healthy case, and each time the replica keeps serving the old
//! snapshot, `/readyz` says why, and it recovers by itself when the fault is gone.
//!
//! The indexer serves one domain of the demo catalog (hr: `govcat index` also fits the
//! calibration map, whose cost grows with the tagged columns) and starts from a copy of the
//! repository's `index/` (built by `govcat index`), so every vector is reused; a changed
//! catalog re-embeds only the changed column. Outside CI a missing `.venv`, model or `index/`
//! skips these tests with a message; under `CI=true` it fails them.

#[path = "server_http/client.rs"]
mod client;
mod common;
#[path = "s3/fixture.rs"]
mod fixture;
#[path = "aws/harness.rs"]
mod harness;

use std::process::Command;
use std::time::{Duration, Instant};

use common::server::{Served, BIN};
use fixture::*;
use harness::{Action, Proxy};
use serde_json::{json, Value};

#[test]
fn two_replicas_converge_share_cursors_and_swap_under_load_without_errors() {
    let Some(f) = fixture("two_replicas_converge") else {
        return;
    };
    let first = f.publish(&[]);
    assert_eq!(
        f.get("CURRENT")
            .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
        Some(first.clone())
    );
    let a = f.replica("a", &f.location(), &f.moto.url());
    let b = f.replica("b", &f.location(), &f.moto.url());
    for r in [&a, &b] {
        let ready = serving(r, &first);
        assert_eq!(
            (
                &ready["follow"]["source"],
                &ready["follow"]["last_error"],
                &ready["follow"]["lag_seconds"]
            ),
            (&json!(f.location()), &Value::Null, &json!(0))
        );
    }

    // A cursor from A works on B: one snapshot id everywhere.
    let (status, page1) = search(
        a.addr,
        json!({"description": "IBAN of the customer", "limit": 2}),
    );
    assert_eq!(status, 200, "{page1}");
    let cursor = page1["next_cursor"]
        .as_str()
        .expect("a next page")
        .to_string();
    let (status_b, page2_b) = search(
        b.addr,
        json!({"description": "IBAN of the customer", "limit": 2, "cursor": cursor}),
    );
    let (_, page2_a) = search(
        a.addr,
        json!({"description": "IBAN of the customer", "limit": 2, "cursor": cursor}),
    );
    assert_eq!(status_b, 200, "{page2_b}");
    assert_eq!(common::ids(&page2_b), common::ids(&page2_a));
    assert_ne!(common::ids(&page2_b), common::ids(&page1));

    // A second publish of a changed catalog while a load loop runs against both replicas.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loaders: Vec<_> = [a.addr, a.addr, b.addr, b.addr]
        .into_iter()
        .map(|addr| {
            let stop = stop.clone();
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                    let (status, body) = search(addr, json!({"description": QUERY, "limit": 3}));
                    answers.push((status, body));
                }
                answers
            })
        })
        .collect();
    change_catalog(&f.catalog);
    let second = f.publish(&[]);
    // CURRENT was the publish's last write.
    let published_at = Instant::now();
    assert_ne!(second, first);
    serving(&a, &second);
    serving(&b, &second);
    let converged = published_at.elapsed();
    // Some answers after both swapped.
    std::thread::sleep(Duration::from_millis(500));
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let answers: Vec<(u16, Value)> = loaders
        .into_iter()
        .flat_map(|t| t.join().expect("load thread"))
        .collect();
    eprintln!(
        "publish of {second} to both replicas serving it: {converged:?} (interval {INTERVAL} s); {} answers under load",
        answers.len()
    );
    assert!(
        converged < Duration::from_secs(2 * INTERVAL) + SYNC_ALLOWANCE,
        "both replicas took {converged:?} to serve the new snapshot"
    );
    let errors: Vec<&(u16, Value)> = answers.iter().filter(|(s, _)| *s != 200).collect();
    assert!(
        errors.is_empty(),
        "{} errors, e.g. {:?}",
        errors.len(),
        errors.first()
    );
    let mut by_snapshot: std::collections::BTreeMap<String, Vec<Vec<String>>> = Default::default();
    for (_, body) in &answers {
        let id = body["snapshot"]["id"]
            .as_str()
            .expect("snapshot id")
            .to_string();
        by_snapshot.entry(id).or_default().push(common::ids(body));
    }
    let ids: Vec<&String> = by_snapshot.keys().collect();
    assert!(
        ids.iter().all(|id| **id == first || **id == second),
        "answers from {ids:?}, expected only {first} and {second}"
    );
    for (id, lists) in &by_snapshot {
        assert!(
            lists.iter().all(|l| l == &lists[0]),
            "answers from {id} differ from each other"
        );
    }
    let new = &by_snapshot
        .get(&second)
        .expect("answers from the new snapshot")[0];
    assert_eq!(new.first().map(String::as_str), Some(CHANGED), "{new:?}");
    if let Some(old) = by_snapshot.get(&first) {
        assert!(!old[0].contains(&CHANGED.to_string()), "{old:?}");
    }
    for r in [&a, &b] {
        assert_eq!(
            metric(&metrics(r.addr), "govcat_follow_swaps_total"),
            Some(2.0)
        );
    }
}

#[test]
fn a_published_snapshot_with_a_missing_file_keeps_the_old_one_until_the_file_arrives() {
    let Some(f) = fixture("missing_file") else {
        return;
    };
    let first = f.publish(&[]);
    let r = f.replica("r", &f.location(), &f.moto.url());
    let healthy = serving(&r, &first);
    assert_eq!(healthy["follow"]["last_error"], Value::Null);

    let second = f.build_changed();
    f.upload(&second, Some("vectors.f32"), None);
    let broken = failing(&r, &["vectors.f32", &second, "does not exist (NoSuchKey"]);
    assert_eq!(
        (
            &broken["snapshot"]["id"],
            &broken["follow"]["current_id"],
            &broken["follow"]["remote_id"],
            &broken["ready"]
        ),
        (&json!(first), &json!(first), &json!(second), &json!(true))
    );
    answers_from(&r, &first);
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"missing_object\"}"
        ) >= Some(1.0)
    );

    f.upload(&second, None, None);
    let recovered = serving(&r, &second);
    assert_eq!(recovered["follow"]["last_error"], Value::Null);
    answers_from(&r, &second);
}

#[test]
fn a_published_snapshot_with_an_altered_file_is_refused_until_it_is_published_intact() {
    let Some(f) = fixture("altered_file") else {
        return;
    };
    let first = f.publish(&[]);
    let r = f.replica("r", &f.location(), &f.moto.url());
    serving(&r, &first);

    let second = f.build_changed();
    // A file the replica downloads whole (documents.json and vectors.f32 are mostly copied
    // from the served snapshot; their pair is in the test of a damaged local copy).
    f.upload(&second, None, Some("tantivy/meta.json"));
    let broken = failing(
        &r,
        &["tantivy/meta.json", "sha256", "differs from the manifest"],
    );
    assert_eq!(broken["snapshot"]["id"], json!(first));
    answers_from(&r, &first);
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"checksum_mismatch\"}"
        ) >= Some(1.0)
    );

    f.upload(&second, None, None);
    serving(&r, &second);
    answers_from(&r, &second);
}

#[test]
fn a_current_naming_a_snapshot_that_does_not_exist_keeps_the_old_one() {
    let Some(f) = fixture("current_missing_id") else {
        return;
    };
    let first = f.publish(&[]);
    let r = f.replica("r", &f.location(), &f.moto.url());
    serving(&r, &first);

    let ghost = "20990101T000000Z-deadbeef";
    f.put("CURRENT", format!("{ghost}\n").into_bytes());
    let broken = failing(&r, &[ghost, "manifest does not exist (NoSuchKey)"]);
    assert_eq!(
        (&broken["snapshot"]["id"], &broken["follow"]["remote_id"]),
        (&json!(first), &json!(ghost))
    );
    assert!(broken["follow"]["lag_seconds"].as_u64().is_some());
    answers_from(&r, &first);

    f.put("CURRENT", format!("{first}\n").into_bytes());
    let recovered = wait_for("last_error cleared", DEADLINE, || {
        let (_, v) = readyz(r.addr);
        (v["follow"]["last_error"].is_null() && v["follow"]["remote_id"] == json!(first))
            .then_some(v)
    });
    assert_eq!(
        (
            &recovered["snapshot"]["id"],
            &recovered["follow"]["lag_seconds"]
        ),
        (&json!(first), &json!(0))
    );
}

#[test]
fn s3_going_away_mid_poll_keeps_the_old_snapshot_and_recovers_when_it_is_back() {
    let Some(mut f) = fixture("moto_stopped") else {
        return;
    };
    let first = f.publish(&[]);
    let r = f.replica("r", &f.location(), &f.moto.url());
    serving(&r, &first);

    f.moto.stop();
    let broken = failing(&r, &["no answer from", "CURRENT"]);
    assert_eq!(broken["snapshot"]["id"], json!(first));
    answers_from(&r, &first);
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"unreachable\"}"
        ) >= Some(1.0)
    );

    // While S3 is away: a replica restarted on its own --index serves the local snapshot
    // (and says why it could not check); a fresh one has nothing to serve and is not ready.
    drop(r);
    let restarted = f.replica("r", &f.location(), &f.moto.url());
    let local = serving(&restarted, &first);
    assert!(
        local["follow"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer from")),
        "{local}"
    );
    let fresh = f.replica("fresh", &f.location(), &f.moto.url());
    let (status, waiting) = wait_for("the fresh replica's first poll", DEADLINE, || {
        let (status, v) = readyz(fresh.addr);
        v["follow"]["last_error"].is_string().then_some((status, v))
    });
    assert_eq!(
        (status, &waiting["ready"], &waiting["snapshot"]["loaded"]),
        (503, &json!(false), &json!(false)),
        "{waiting}"
    );
    assert!(
        waiting["snapshot"]["last_error"]
            .as_str()
            .is_some_and(|e| e.contains("no answer from")),
        "{waiting}"
    );

    // moto comes back empty: the bucket and the snapshot are published again.
    f.moto.restart();
    f.create_bucket();
    f.upload(&first, None, None);
    for r in [&restarted, &fresh] {
        wait_for("last_error cleared", DEADLINE, || {
            let (status, v) = readyz(r.addr);
            (status == 200 && v["follow"]["last_error"].is_null()).then_some(())
        });
        answers_from(r, &first);
    }
}

#[test]
fn access_denied_names_the_iam_action_and_recovers_when_it_is_granted() {
    let Some(f) = fixture("access_denied") else {
        return;
    };
    let first = f.publish(&[]);
    let proxy = Proxy::start(f.moto.addr);
    let r = f.replica("r", &f.location(), &proxy.url());
    serving(&r, &first);

    let second = f.build_changed();
    f.upload(&second, None, None);
    proxy.on(
        &format!("{BUCKET}/{PREFIX}/snapshots/{second}/{}", "manifest.json"),
        None,
        Action::Respond {
            status: 403,
            headers: vec![("Content-Type".into(), "application/xml".into())],
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".into(),
        },
    );
    let broken = failing(
        &r,
        &[
            "AccessDenied",
            "s3:GetObject",
            &format!("arn:aws:s3:::{BUCKET}/{PREFIX}/snapshots/{second}/manifest.json"),
        ],
    );
    assert_eq!(broken["snapshot"]["id"], json!(first));
    let text = broken.to_string();
    assert!(
        !text.contains("govcat-server-secret") && !text.contains("AKIDGOVCATSERVER"),
        "{text}"
    );
    answers_from(&r, &first);
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"access_denied\"}"
        ) >= Some(1.0)
    );

    proxy.clear();
    serving(&r, &second);
}

#[test]
fn throttling_keeps_the_old_snapshot_and_says_so_until_s3_answers_again() {
    let Some(f) = fixture("throttled") else {
        return;
    };
    let first = f.publish(&[]);
    let proxy = Proxy::start(f.moto.addr);
    let r = f.replica("r", &f.location(), &proxy.url());
    let healthy = serving(&r, &first);
    assert_eq!(healthy["follow"]["last_error"], Value::Null);

    proxy.on(
        &format!("{BUCKET}/{PREFIX}/CURRENT"),
        None,
        Action::Respond {
            status: 503,
            headers: vec![("Content-Type".into(), "application/xml".into())],
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>".into(),
        },
    );
    let broken = failing(
        &r,
        &[
            "SlowDown",
            "throttled",
            &format!("s3://{BUCKET}/{PREFIX}/CURRENT"),
        ],
    );
    assert_eq!(broken["snapshot"]["id"], json!(first));
    answers_from(&r, &first);
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"throttled\"}"
        ) >= Some(1.0)
    );

    proxy.clear();
    wait_for("last_error cleared", DEADLINE, || {
        let (_, v) = readyz(r.addr);
        v["follow"]["last_error"].is_null().then_some(())
    });
}

#[test]
fn a_snapshot_of_another_model_is_refused_before_its_files_are_downloaded() {
    let Some(f) = fixture("other_model") else {
        return;
    };
    let first = f.publish(&[]);
    let r = f.replica("r", &f.location(), &f.moto.url());
    serving(&r, &first);
    let before = metric(&metrics(r.addr), "govcat_follow_downloaded_bytes_total").expect("bytes");

    let second = f.build_changed();
    f.upload_files(&second, None, None);
    let path = f
        .indexer
        .join("snapshots")
        .join(&second)
        .join("manifest.json");
    let mut manifest: Value =
        serde_json::from_slice(&std::fs::read(&path).expect("manifest")).expect("json");
    manifest["model"]["id"] = json!("another-model");
    f.put(
        &format!("snapshots/{second}/manifest.json"),
        serde_json::to_vec(&manifest).expect("json"),
    );
    f.put("CURRENT", format!("{second}\n").into_bytes());
    let broken = failing(
        &r,
        &[
            "another-model",
            "embedding model",
            "same govcat version and model",
        ],
    );
    assert_eq!(broken["snapshot"]["id"], json!(first));
    assert!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"incompatible\"}"
        ) >= Some(1.0)
    );
    let vectors = std::fs::metadata(
        f.indexer
            .join("snapshots")
            .join(&second)
            .join("vectors.f32"),
    )
    .expect("vectors")
    .len() as f64;
    let after = metric(&metrics(r.addr), "govcat_follow_downloaded_bytes_total").expect("bytes");
    assert!(
        after - before < vectors,
        "{} bytes downloaded for a refused snapshot whose vectors alone are {vectors}",
        after - before
    );

    f.upload(&second, None, None);
    serving(&r, &second);
}

#[test]
fn keep_2_after_three_publishes_leaves_the_newest_two_and_the_default_keeps_three() {
    let Some(f) = fixture("keep") else {
        return;
    };
    let ids: Vec<String> = (0..3).map(|_| f.publish(&["--keep", "3"])).collect();
    assert_eq!(f.published_ids(), ids, "--keep 3 keeps all three");
    let fourth = f.publish(&["--keep", "2"]);
    assert_eq!(f.published_ids(), vec![ids[2].clone(), fourth.clone()]);
    assert_eq!(
        f.get("CURRENT")
            .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
        Some(fourth)
    );
}

#[test]
fn a_shared_directory_is_followed_the_same_way_with_its_fault_pair() {
    let Some(f) = fixture("directory") else {
        return;
    };
    let shared = f.tmp.path().join("shared");
    let location = shared.to_str().expect("utf-8").to_string();
    let v = f.index(&["--publish", &location]);
    let first = v["id"].as_str().expect("id").to_string();
    // Every published file is readable by a replica running as another user (tantivy writes
    // its .managed.json 0600 locally).
    let mut modes = std::collections::BTreeSet::new();
    let mut dirs = vec![shared.clone()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("read_dir").flatten() {
            let meta = entry.metadata().expect("metadata");
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                use std::os::unix::fs::PermissionsExt;
                modes.insert(meta.permissions().mode() & 0o777);
            }
        }
    }
    assert_eq!(modes, std::collections::BTreeSet::from([0o644]));
    assert_eq!(
        std::fs::read_to_string(shared.join("CURRENT"))
            .expect("CURRENT")
            .trim(),
        first
    );
    let a = f.replica("a", &location, &f.moto.url());
    let b = f.replica("b", &location, &f.moto.url());
    serving(&a, &first);
    serving(&b, &first);

    // A snapshot whose vectors never arrived on the shared volume.
    let second = f.build_changed();
    let from = f.indexer.join("snapshots").join(&second);
    let to = shared.join("snapshots").join(&second);
    common::copy_dir(&from, &to);
    std::fs::remove_file(to.join("vectors.f32")).expect("remove");
    std::fs::write(shared.join("CURRENT"), format!("{second}\n")).expect("CURRENT");
    for r in [&a, &b] {
        let broken = failing(r, &["vectors.f32", "does not exist"]);
        assert_eq!(broken["snapshot"]["id"], json!(first));
        let said = broken["follow"]["last_error"].as_str().expect("last_error");
        assert!(!said.contains("(does not exist)"), "{said}");
        answers_from(r, &first);
    }
    std::fs::copy(from.join("vectors.f32"), to.join("vectors.f32")).expect("copy");
    // Once the file is there, the rows of unchanged texts are copied from the served snapshot
    // and the changed one is read from the shared file.
    let (row, _, held) = rows_in_common(&f.indexer.join("snapshots").join(&first), &from);
    let held_documents = documents_in_common(&f.indexer.join("snapshots").join(&first), &from);
    for r in [&a, &b] {
        assert_eq!(
            serving(r, &second)["follow"]["reused_bytes"],
            json!(held * row + held_documents)
        );
    }

    // A replica with nothing to serve, following a folder whose CURRENT names no snapshot:
    // its lag grows from the first failed poll (an alert fires), and a retrieval call is told
    // the replica's next step (publish again), not an indexer's.
    let garbled = f.tmp.path().join("garbled");
    std::fs::create_dir_all(&garbled).expect("mkdir");
    std::fs::write(garbled.join("CURRENT"), "not a snapshot id\n").expect("CURRENT");
    let garbled_at = garbled.to_str().expect("utf-8").to_string();
    let c = f.replica("c", &garbled_at, &f.moto.url());
    let lagging = wait_for("lag_seconds above 0", DEADLINE, || {
        let (status, r) = readyz(c.addr);
        (status == 503 && r["follow"]["lag_seconds"].as_u64().is_some_and(|l| l >= 1)).then_some(r)
    });
    assert_eq!(lagging["snapshot"]["loaded"], json!(false), "{lagging}");
    let (status, body) = search(c.addr, json!({"description": QUERY, "limit": 3}));
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"], json!("NoSnapshot"));
    assert_eq!(
        body["message"],
        json!(format!("no snapshot is loaded; this server is a replica of {garbled_at}: ask the operator to publish a snapshot again (`govcat index --publish {garbled_at}` where the indexer runs); the replica takes it up at its next poll, and /readyz `follow.last_error` says what failed"))
    );
    // The other half: publishing again, as advised, is what the replica takes up.
    let v = f.index(&["--publish", &garbled_at]);
    let id = v["id"].as_str().expect("id").to_string();
    let ready = serving(&c, &id);
    assert_eq!(ready["follow"]["lag_seconds"], json!(0), "{ready}");
    answers_from(&c, &id);
    // CURRENT removed: nothing is published there now, and /readyz no longer names the id
    // it named (it keeps serving that snapshot).
    assert_eq!(ready["follow"]["remote_id"], json!(id));
    std::fs::remove_file(garbled.join("CURRENT")).expect("remove CURRENT");
    let gone = failing(&c, &["CURRENT", "does not exist"]);
    assert_eq!(
        (&gone["follow"]["remote_id"], &gone["snapshot"]["id"]),
        (&Value::Null, &json!(id))
    );
}

#[test]
fn follow_with_watch_or_refresh_is_a_usage_error_that_says_why() {
    for other in [&["--watch"][..], &["--refresh", "15m"][..]] {
        let out = Command::new(BIN)
            .args(["--json", "serve", "--follow", "s3://b/p"])
            .args(other)
            .output()
            .expect("run govcat");
        let v: Value = serde_json::from_slice(&out.stdout).expect("json");
        assert_eq!(
            (out.status.code(), &v["error"]),
            (Some(2), &json!("Usage")),
            "{v}"
        );
        let message = v["message"].as_str().expect("message");
        assert!(
            message.contains(&format!(
                "--follow and {} cannot be used together",
                other[0]
            )) && message.contains("cursors would not work across replicas"),
            "{message}"
        );
    }
    // A directory followed into itself would prune the published snapshots.
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().to_str().expect("utf-8");
    let out = Command::new(BIN)
        .args(["--json", "--index", path, "serve", "--follow", path])
        .output()
        .expect("run govcat");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(
        v["message"]
            .as_str()
            .expect("message")
            .contains("is also the --index of this replica"),
        "{v}"
    );
    // The healthy side: --follow alone parses (and fails later, on the bucket, not as usage).
    let out = Command::new(BIN)
        .args(["--json", "serve", "--follow", "not-a-scheme://x"])
        .output()
        .expect("run govcat");
    let v: Value = serde_json::from_slice(&out.stdout).expect("json");
    assert_eq!(out.status.code(), Some(1), "{v}");
    assert!(
        v["message"]
            .as_str()
            .expect("message")
            .contains("neither s3://BUCKET/PREFIX nor a directory"),
        "{v}"
    );
}

#[test]
fn a_restart_with_the_files_present_downloads_only_current_and_the_manifest() {
    let Some(f) = fixture("restart") else {
        return;
    };
    let first = f.publish(&[]);
    let manifest_len = f
        .get(&format!("snapshots/{first}/manifest.json"))
        .expect("manifest")
        .len() as f64;
    let current_len = format!("{first}\n").len() as f64;
    let fresh = f.replica("r", &f.location(), &f.moto.url());
    serving(&fresh, &first);
    let text = metrics(fresh.addr);
    let fresh_files = files_of(&f.indexer.join("snapshots").join(&first)).len() as f64;
    assert!(
        metric(&text, "govcat_follow_downloaded_objects_total") >= Some(fresh_files + 1.0),
        "a fresh replica downloads every file and CURRENT: {text}"
    );
    drop(fresh);

    let restarted = f.replica("r", &f.location(), &f.moto.url());
    let ready = serving(&restarted, &first);
    // At least one more poll after the one that loaded it: it reads CURRENT only.
    let checked = ready["follow"]["last_checked_at"].clone();
    wait_for("another poll", DEADLINE, || {
        let (_, v) = readyz(restarted.addr);
        (v["follow"]["last_checked_at"] != checked).then_some(())
    });
    let text = metrics(restarted.addr);
    let objects = metric(&text, "govcat_follow_downloaded_objects_total").expect("objects");
    let bytes = metric(&text, "govcat_follow_downloaded_bytes_total").expect("bytes");
    assert!(objects >= 3.0, "{text}");
    assert_eq!(
        bytes,
        manifest_len + (objects - 1.0) * current_len,
        "{text}"
    );
}

/// A replica following a refresh in which one column changed copies the vectors of every
/// unchanged text and every unchanged document from the snapshot it serves and reads only the
/// new ones from S3 (ranged GETs). The pair: a replica whose local copy of a reused vector row
/// was altered assembles a vectors file whose sha256 differs from the manifest's, so it
/// downloads that file whole instead. Both end with the published files byte for byte and no
/// error.
#[test]
fn a_refresh_of_one_column_reads_only_its_new_parts_and_a_damaged_local_copy_the_whole_file() {
    let Some(f) = fixture("vectors_reused") else {
        return;
    };
    let first = f.publish(&[]);
    let intact = f.replica("intact", &f.location(), &f.moto.url());
    let damaged = f.replica("damaged", &f.location(), &f.moto.url());
    for r in [&intact, &damaged] {
        assert_eq!(serving(r, &first)["follow"]["reused_bytes"], json!(0));
    }
    let second = f.build_changed();
    let published = f.indexer.join("snapshots").join(&second);
    let (row, rows, held) = rows_in_common(&f.indexer.join("snapshots").join(&first), &published);
    assert!(
        held > 0 && held < rows,
        "the changed column's vectors are new, the others held: {held} of {rows}"
    );
    let held_documents = documents_in_common(&f.indexer.join("snapshots").join(&first), &published);
    // The damaged replica's copy of the row the new snapshot's first row is copied from: its
    // vectors are downloaded whole, its documents still copied.
    let new_vectors = std::fs::read(published.join("vectors.f32")).expect("vectors");
    let local = f
        .tmp
        .path()
        .join("damaged/snapshots")
        .join(&first)
        .join("vectors.f32");
    let mut old_vectors = std::fs::read(&local).expect("local vectors");
    let source = old_vectors
        .chunks(row)
        .position(|r| r == &new_vectors[..row])
        .expect("the first row is held");
    old_vectors[source * row] ^= 0x20;
    {
        use std::io::{Seek, SeekFrom, Write};
        let mut file = std::fs::OpenOptions::new()
            .write(true)
            .open(&local)
            .expect("open");
        file.seek(SeekFrom::Start((source * row) as u64))
            .expect("seek");
        file.write_all(&old_vectors[source * row..source * row + 1])
            .expect("alter a byte");
    }
    f.upload(&second, None, None);

    for (r, name, reused) in [
        (&intact, "intact", (held * row + held_documents) as u64),
        (&damaged, "damaged", held_documents as u64),
    ] {
        let ready = serving(r, &second);
        assert_eq!(
            (
                &ready["follow"]["reused_bytes"],
                &ready["follow"]["last_error"]
            ),
            (&json!(reused), &Value::Null),
            "{name}: {ready}"
        );
        assert_eq!(
            metric(&metrics(r.addr), "govcat_follow_reused_bytes_total"),
            Some(reused as f64)
        );
        let served = std::fs::read(
            f.tmp
                .path()
                .join(name)
                .join("snapshots")
                .join(&second)
                .join("vectors.f32"),
        )
        .expect("served vectors");
        assert!(
            served == new_vectors,
            "{name}: the served vectors differ from the published"
        );
        let documents = |dir: &std::path::Path| {
            std::fs::read(dir.join("documents.json")).expect("documents.json")
        };
        assert!(
            documents(&f.tmp.path().join(name).join("snapshots").join(&second))
                == documents(&published),
            "{name}: the served documents differ from the published"
        );
        answers_from(r, &second);
    }
}

#[test]
fn a_publish_denied_by_s3_names_the_iam_action_and_leaves_current_alone() {
    let Some(f) = fixture("publish_denied") else {
        return;
    };
    let proxy = Proxy::start(f.moto.addr);
    // The location is proved writable before the build: a denied probe fails at once and
    // says nothing was built.
    let snapshots_before = std::fs::read_dir(f.indexer.join("snapshots")).map_or(0, |d| d.count());
    proxy.on(
        &format!("{BUCKET}/{PREFIX}/.govcat-probe-*"),
        None,
        Action::Respond {
            status: 403,
            headers: vec![("Content-Type".into(), "application/xml".into())],
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".into(),
        },
    );
    let (code, early) = f.publish_via(&proxy.url());
    assert_eq!(
        (code, &early["error"], &early["reason"]),
        (Some(1), &json!("PublishFailed"), &json!("access_denied")),
        "{early}"
    );
    let message = early["message"].as_str().expect("message");
    assert!(
        message.starts_with("publishing failed before anything was built: ")
            && message.contains("nothing was embedded or uploaded"),
        "{message}"
    );
    assert_eq!(
        std::fs::read_dir(f.indexer.join("snapshots")).map_or(0, |d| d.count()),
        snapshots_before,
        "no snapshot built after a failed probe"
    );
    proxy.clear();
    proxy.on(
        &format!("{BUCKET}/{PREFIX}/snapshots/*"),
        None,
        Action::Respond {
            status: 403,
            headers: vec![("Content-Type".into(), "application/xml".into())],
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".into(),
        },
    );
    let (code, denied) = f.publish_via(&proxy.url());
    assert_eq!(
        (code, &denied["error"], &denied["reason"]),
        (Some(1), &json!("PublishFailed"), &json!("access_denied")),
        "{denied}"
    );
    let message = denied["message"].as_str().expect("message");
    assert!(
        message.contains("AccessDenied")
            && message
                .contains("grant s3:PutObject on arn:aws:s3:::govcat-snapshots/prod/snapshots/"),
        "{message}"
    );
    assert!(!message.contains("govcat-server-secret"), "{message}");
    assert_eq!(
        f.get("CURRENT"),
        None,
        "no CURRENT before the snapshot is complete"
    );

    // Listing denied: the snapshot and CURRENT are published, pruning says what it lacks.
    proxy.clear();
    proxy.on(
        &format!("{BUCKET}/"),
        None,
        Action::Respond {
            status: 403,
            headers: vec![("Content-Type".into(), "application/xml".into())],
            body: "<?xml version=\"1.0\" encoding=\"UTF-8\"?><Error><Code>AccessDenied</Code><Message>Access Denied</Message></Error>".into(),
        },
    );
    let (code, unpruned) = f.publish_via(&proxy.url());
    let message = unpruned["message"].as_str().expect("message");
    let current = f
        .get("CURRENT")
        .map(|b| String::from_utf8_lossy(&b).trim().to_string())
        .expect("CURRENT written");
    assert_eq!(
        (code, &unpruned["reason"]),
        (Some(1), &json!("access_denied")),
        "{unpruned}"
    );
    assert!(
        message.contains(&format!(
            "snapshot {current} is published and CURRENT names it"
        )) && message.contains(&format!("grant s3:ListBucket on arn:aws:s3:::{BUCKET} ")),
        "{message}"
    );

    // Granted (the proxy forwards again): the same command publishes.
    proxy.clear();
    let (code, published) = f.publish_via(&f.moto.url());
    assert_eq!(code, Some(0), "{published}");
    assert_eq!(
        f.get("CURRENT")
            .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
        published["id"].as_str().map(str::to_string)
    );
}

#[test]
fn files_above_the_multipart_threshold_are_uploaded_in_parts_and_read_back_intact() {
    let Some(f) = fixture("multipart") else {
        return;
    };
    let location = govcat::sync::Location::parse(&f.location()).expect("location");
    let loader = aws_config::defaults(aws_config::BehaviorVersion::latest())
        .region(aws_sdk_s3::config::Region::new("eu-central-1"))
        .credentials_provider(aws_sdk_s3::config::Credentials::new(
            "AKIDTEST",
            "test-secret",
            None,
            None,
            "tests",
        ));
    let store =
        govcat::sync::Store::with_loader(&location, Some(&f.moto.url()), loader).expect("store");
    let chunk = govcat::sync::s3::MULTIPART_CHUNK;
    for (name, size, parts) in [
        ("big.bin", 2 * chunk + 12345, Some(3)),
        ("small.bin", 1000, None),
    ] {
        let path = f.tmp.path().join(name);
        let bytes: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &bytes).expect("write");
        let sent = std::sync::atomic::AtomicU64::new(0);
        store
            .upload(name, &path, &|n| {
                sent.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
            })
            .expect("upload");
        assert_eq!(
            sent.into_inner(),
            size as u64,
            "progress counts every byte of {name}"
        );
        let head =
            f.rt.block_on(
                f.s3.head_object()
                    .bucket(BUCKET)
                    .key(Fixture::key(name))
                    .send(),
            )
            .expect("head");
        let etag = head
            .e_tag()
            .unwrap_or_default()
            .trim_matches('"')
            .to_string();
        assert_eq!(
            etag.split_once('-')
                .map(|(_, n)| n.parse::<usize>().expect("part count")),
            parts,
            "{name}: ETag {etag}"
        );
        assert_eq!(
            f.get(name).as_deref(),
            Some(&bytes[..]),
            "{name} reads back intact"
        );
    }
}

/// A first build spread over three slice jobs (each its own empty `--index`, as separate
/// machines), exchanged through S3, merged by a fourth that embeds nothing and publishes; a
/// replica serves it. Paired with the merge refused while a slice is missing in the store.
#[test]
fn a_first_build_sliced_over_three_jobs_through_s3_merges_without_embedding_and_is_served() {
    let Some(f) = fixture("sliced_build") else {
        return;
    };
    let run = format!("{}/first-build", f.location());
    let job = |i: usize| {
        let (code, v) = f.index_in(
            &f.tmp.path().join(format!("job-{i}")),
            &["--slice", &format!("{i}/3"), "--slices-to", &run],
        );
        assert_eq!(code, Some(0), "{v}");
        assert_eq!(
            v["uploaded"],
            json!(format!("{run}/slices/slice-{i:04}-of-0003.vec")),
            "{v}"
        );
        v
    };
    let jobs: Vec<Value> = (0..3).map(job).collect();
    let documents = jobs[0]["documents"].as_u64().expect("documents");
    assert_eq!(
        jobs.iter()
            .map(|v| v["in_slice"].as_u64().expect("in_slice"))
            .sum::<u64>(),
        documents
    );

    // Slice 1 lost in the store: the merge names it and publishes nothing.
    let lost = format!("{PREFIX}/first-build/slices/slice-0001-of-0003.vec");
    let slice1 = f
        .get("first-build/slices/slice-0001-of-0003.vec")
        .expect("slice 1");
    f.rt.block_on(f.s3.delete_object().bucket(BUCKET).key(&lost).send())
        .expect("delete slice 1");
    let merge_index = f.tmp.path().join("merge");
    let merge = || {
        f.index_in(
            &merge_index,
            &["--slices-from", &run, "--publish", &f.location()],
        )
    };
    let (code, refused) = merge();
    assert_eq!(
        (code, &refused["error"]),
        (Some(1), &json!("SliceUnusable")),
        "{refused}"
    );
    assert!(
        refused["message"]
            .as_str()
            .is_some_and(|m| m.contains("slices 1/3 of 3 are missing")
                && m.contains("govcat index --slice 1/3 --slices-to LOCATION")),
        "{refused}"
    );
    assert_eq!(f.get("CURRENT"), None, "nothing published");

    // The slice back: the merge embeds nothing, publishes, and leaves no slice files behind.
    f.put("first-build/slices/slice-0001-of-0003.vec", slice1);
    let (code, merged) = merge();
    assert_eq!(code, Some(0), "{merged}");
    assert_eq!(
        merged["embedding"],
        json!({"embedded": 0, "reused": 0, "from_slices": documents}),
        "{merged}"
    );
    assert_eq!(merged["counts"]["documents"], json!(documents));
    let id = merged["id"].as_str().expect("id").to_string();
    assert_eq!(
        f.get("CURRENT")
            .map(|b| String::from_utf8_lossy(&b).trim().to_string()),
        Some(id.clone())
    );
    assert!(!merge_index.join("slices").exists());

    let replica = f.replica("a", &f.location(), &f.moto.url());
    serving(&replica, &id);
    let (status, found) = search(
        replica.addr,
        json!({"description": "IBAN of the employee's salary account", "limit": 3}),
    );
    assert_eq!(status, 200, "{found}");
    assert_eq!(found["snapshot"]["id"], json!(id));
    assert!(!common::ids(&found).is_empty(), "{found}");
}

/// A snapshot whose `documents.json` in the store is altered in place (a trailing newline
/// another hand added) after the rest was published: the running replica assembles its own
/// copy from its rows, which matches the manifest, so it serves it, and says the store
/// differs; a new replica, which downloads the file whole, refuses the snapshot.
fn altered_in_place_is_reported(f: &Fixture, location: &str, first: &str, alter: impl Fn(&str)) {
    let r = f.replica("r", location, &f.moto.url());
    let first = serving(&r, first);
    assert_eq!(first["follow"]["store_error"], Value::Null, "{first}");
    let second = f.build_changed();
    alter(&second);
    let ready = wait_for("store_error reported", DEADLINE, || {
        let (status, v) = readyz(r.addr);
        (status == 200
            && v["snapshot"]["id"] == json!(second)
            && v["follow"]["store_error"].is_string())
        .then_some(v)
    });
    let said = ready["follow"]["store_error"]
        .as_str()
        .expect("store_error");
    assert!(
        said.contains(&format!("snapshots/{second}/documents.json"))
            && said.contains("bytes where the manifest's file has")
            && said.contains("a replica that downloads these files will refuse the snapshot"),
        "{said}"
    );
    assert_eq!(ready["follow"]["last_error"], Value::Null);
    answers_from(&r, &second);
    assert_eq!(
        metric(
            &metrics(r.addr),
            "govcat_follow_errors_total{reason=\"store_altered\"}"
        ),
        Some(1.0)
    );
    let fresh = f.replica("fresh", location, &f.moto.url());
    failing(
        &fresh,
        &["documents.json", "sha256", "differs from the manifest"],
    );
}

#[test]
fn a_store_file_altered_in_place_is_reported_by_a_running_replica_on_s3() {
    let Some(f) = fixture("altered_in_place_s3") else {
        return;
    };
    let first = f.index(&[])["id"].as_str().expect("id").to_string();
    f.upload(&first, None, None);
    let location = f.location();
    altered_in_place_is_reported(&f, &location, &first, |second| {
        f.upload_files(second, None, None);
        let path = f
            .indexer
            .join("snapshots")
            .join(second)
            .join("documents.json");
        let mut bytes = std::fs::read(path).expect("documents.json");
        bytes.push(b'\n');
        f.put(&format!("snapshots/{second}/documents.json"), bytes);
        f.put("CURRENT", format!("{second}\n").into_bytes());
    });
}

#[test]
fn a_store_file_altered_in_place_is_reported_by_a_running_replica_on_a_shared_directory() {
    let Some(f) = fixture("altered_in_place_dir") else {
        return;
    };
    let shared = f.tmp.path().join("shared");
    let location = shared.to_str().expect("utf-8").to_string();
    let first = f.index(&["--publish", &location])["id"]
        .as_str()
        .expect("id")
        .to_string();
    altered_in_place_is_reported(&f, &location, &first, |second| {
        let from = f.indexer.join("snapshots").join(second);
        let to = shared.join("snapshots").join(second);
        common::copy_dir(&from, &to);
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(to.join("documents.json"))
            .expect("open documents.json");
        std::io::Write::write_all(&mut file, b"\n").expect("append");
        std::fs::write(shared.join("CURRENT"), format!("{second}\n")).expect("CURRENT");
    });
}

#[test]
fn a_replica_of_another_catalog_is_told_its_own_step_not_an_indexers() {
    let Some(f) = fixture("catalog_mismatch") else {
        return;
    };
    let shared = f.tmp.path().join("shared");
    let location = shared.to_str().expect("utf-8").to_string();
    let published = f.index(&["--publish", &location])["id"]
        .as_str()
        .expect("id")
        .to_string();
    // This replica serves the repository's demo catalog, not the fixture's copy.
    let demo = common::catalog_dir();
    let index = f.tmp.path().join("other-replica");
    let (demo, index) = (demo.to_str().unwrap(), index.to_str().unwrap());
    let r = Served::start(
        &[
            "--catalog",
            demo,
            "--index",
            index,
            "--follow",
            &location,
            "--follow-interval",
            "1",
        ],
        &[],
    );
    let refused = failing(&r, &["is of the catalog"]);
    assert_eq!(
        refused["follow"]["last_error"],
        json!(format!(
            "{}: the published snapshot {published} is of the catalog {}, but this replica serves {demo}; start the replica with the indexer's --source/--catalog and --ontology (or publish a snapshot of this replica's catalog there); the served snapshot stays meanwhile",
            shared.join("snapshots").join(&published).join("manifest.json").display(),
            std::fs::canonicalize(&f.catalog).unwrap().display()
        ))
    );
}
