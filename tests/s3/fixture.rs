//! The fixture of `tests/s3_follow.rs`: a moto server per test with a bucket, a test S3
//! client, the indexer's copies of the demo catalog, ontology and `index/`, replicas, and
//! polling helpers for `/readyz` and `/metrics`.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::client;
use super::common;
use super::common::server::{Served, BIN};
use super::harness::Moto;
use serde_json::{json, Value};

/// The demo catalog's domain the tests' catalog keeps (the one [`CHANGED`] is in).
pub const KEPT_DOMAIN: &str = "hr";
pub const BUCKET: &str = "govcat-snapshots";
pub const PREFIX: &str = "prod";
/// `--follow-interval` of the replicas, in seconds.
pub const INTERVAL: u64 = 1;
/// How long a condition may take to hold: startup of a debug replica (model load) plus a few
/// polls.
pub const DEADLINE: Duration = Duration::from_secs(60);
/// What a sync may take besides waiting for the poll: download, checksums and load of the
/// demo snapshot by a debug build on a busy 2-core machine.
pub const SYNC_ALLOWANCE: Duration = Duration::from_secs(4);
/// A description whose answer changes when [`change_catalog`] has run.
pub const QUERY: &str = "zebra migration ledger reference";
/// The column [`change_catalog`] rewrites.
pub const CHANGED: &str = "column:hr.absence.absence_id";

/// The moto server, a test S3 client, and the indexer's catalog, ontology and `index/`.
pub struct Fixture {
    pub moto: Moto,
    pub tmp: tempfile::TempDir,
    pub catalog: PathBuf,
    pub ontology: PathBuf,
    pub indexer: PathBuf,
    pub rt: tokio::runtime::Runtime,
    pub s3: aws_sdk_s3::Client,
}

pub fn fixture(test: &str) -> Option<Fixture> {
    if !common::server::retrieval_available(test) {
        return None;
    }
    let moto = Moto::start()?;
    let tmp = tempfile::tempdir().expect("tempdir");
    let (catalog, ontology) = (tmp.path().join("catalog"), tmp.path().join("lf-tags.json"));
    common::copy_dir(&common::catalog_dir(), &catalog);
    // One domain: `govcat index` fits the calibration map over every tagged column, which
    // takes over a minute for the whole demo catalog in a debug build and ~10 s for hr.
    for entry in std::fs::read_dir(catalog.join("domains"))
        .expect("domains")
        .flatten()
    {
        if entry.file_name() != KEPT_DOMAIN {
            std::fs::remove_dir_all(entry.path()).expect("remove a domain");
        }
    }
    for file in ["lf-tags.json", "glossary-de-en.tsv", "abbreviations.tsv"] {
        std::fs::copy(
            common::repo().join("ontology").join(file),
            tmp.path().join(file),
        )
        .expect("copy the ontology");
    }
    // The repository's published snapshot only: the indexer reuses its vectors.
    let indexer = tmp.path().join("indexer");
    let current = std::fs::read_to_string(common::repo().join("index/CURRENT")).expect("CURRENT");
    let current = current.trim();
    common::copy_dir(
        &common::repo().join("index/snapshots").join(current),
        &indexer.join("snapshots").join(current),
    );
    std::fs::write(indexer.join("CURRENT"), format!("{current}\n")).expect("CURRENT");
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let config = rt.block_on(
        aws_config::defaults(aws_config::BehaviorVersion::latest())
            .endpoint_url(moto.url())
            .region(aws_sdk_s3::config::Region::new("eu-central-1"))
            .credentials_provider(aws_sdk_s3::config::Credentials::new(
                "AKIDTEST",
                "test-secret",
                None,
                None,
                "tests",
            ))
            .load(),
    );
    let s3 = aws_sdk_s3::Client::from_conf(
        aws_sdk_s3::config::Builder::from(&config)
            .force_path_style(true)
            .build(),
    );
    let f = Fixture {
        moto,
        tmp,
        catalog,
        ontology,
        indexer,
        rt,
        s3,
    };
    f.create_bucket();
    Some(f)
}

impl Fixture {
    pub fn create_bucket(&self) {
        self.rt
            .block_on(
                self.s3
                    .create_bucket()
                    .bucket(BUCKET)
                    .create_bucket_configuration(
                        aws_sdk_s3::types::CreateBucketConfiguration::builder()
                            .location_constraint(
                                aws_sdk_s3::types::BucketLocationConstraint::EuCentral1,
                            )
                            .build(),
                    )
                    .send(),
            )
            .expect("create the bucket");
    }

    pub fn location(&self) -> String {
        format!("s3://{BUCKET}/{PREFIX}")
    }

    /// Environment of a child talking to `endpoint` (no credentials of the machine involved).
    pub fn env(endpoint: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", endpoint.to_string()),
            ("AWS_ACCESS_KEY_ID", "AKIDGOVCATSERVER".into()),
            ("AWS_SECRET_ACCESS_KEY", "govcat-server-secret".into()),
            ("AWS_REGION", "eu-central-1".into()),
            ("AWS_EC2_METADATA_DISABLED", "true".into()),
            ("AWS_CONFIG_FILE", "/nonexistent".into()),
            ("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent".into()),
        ]
    }

    /// `--catalog C --ontology O --index DIR`.
    pub fn flags(&self, index: &Path) -> Vec<String> {
        let p = |p: &Path| p.to_str().expect("utf-8 path").to_string();
        vec![
            "--catalog".into(),
            p(&self.catalog),
            "--ontology".into(),
            p(&self.ontology),
            "--index".into(),
            p(index),
        ]
    }

    /// `govcat --json index <extra>` for the indexer; its JSON output.
    pub fn index(&self, extra: &[&str]) -> Value {
        let out = Command::new(BIN)
            .arg("--json")
            .args(self.flags(&self.indexer))
            .arg("index")
            .args(extra)
            .envs(Self::env(&self.moto.url()))
            .output()
            .expect("run govcat index");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "govcat index printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert_eq!(out.status.code(), Some(0), "govcat index {extra:?}: {v}");
        v
    }

    /// `govcat --json index <extra>` with `--index index` against moto; exit code and JSON.
    pub fn index_in(&self, index: &Path, extra: &[&str]) -> (Option<i32>, Value) {
        let out = Command::new(BIN)
            .arg("--json")
            .args(self.flags(index))
            .arg("index")
            .args(extra)
            .envs(Self::env(&self.moto.url()))
            .output()
            .expect("run govcat index");
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "govcat index {extra:?} printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), v)
    }

    /// `govcat --json index --publish LOCATION` through `endpoint`; exit code and JSON.
    pub fn publish_via(&self, endpoint: &str) -> (Option<i32>, Value) {
        let out = Command::new(BIN)
            .arg("--json")
            .args(self.flags(&self.indexer))
            .args(["index", "--publish", &self.location()])
            .envs(Self::env(endpoint))
            .output()
            .expect("run govcat index");
        let v = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "govcat index printed no JSON ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        (out.status.code(), v)
    }

    /// Builds and publishes a snapshot; its id.
    pub fn publish(&self, extra: &[&str]) -> String {
        let location = self.location();
        let args: Vec<&str> = ["--publish", location.as_str()]
            .into_iter()
            .chain(extra.iter().copied())
            .collect();
        let v = self.index(&args);
        assert_eq!(v["published"]["id"], v["id"], "{v}");
        v["id"].as_str().expect("id").to_string()
    }

    /// A replica following `location` through `endpoint`, with its own `--index`.
    pub fn replica(&self, name: &str, location: &str, endpoint: &str) -> Served {
        let index = self.tmp.path().join(name);
        let mut args = self.flags(&index);
        args.extend([
            "--follow".to_string(),
            location.to_string(),
            "--follow-interval".to_string(),
            INTERVAL.to_string(),
        ]);
        let env = Self::env(endpoint);
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        Served::start(&args, &env)
    }

    pub fn key(rel: &str) -> String {
        format!("{PREFIX}/{rel}")
    }

    pub fn put(&self, rel: &str, bytes: Vec<u8>) {
        self.rt
            .block_on(
                self.s3
                    .put_object()
                    .bucket(BUCKET)
                    .key(Self::key(rel))
                    .body(bytes.into())
                    .send(),
            )
            .unwrap_or_else(|e| panic!("put {rel}: {e:?}"));
    }

    pub fn get(&self, rel: &str) -> Option<Vec<u8>> {
        let out = self.rt.block_on(
            self.s3
                .get_object()
                .bucket(BUCKET)
                .key(Self::key(rel))
                .send(),
        );
        let out = out.ok()?;
        Some(
            self.rt
                .block_on(out.body.collect())
                .expect("body")
                .into_bytes()
                .to_vec(),
        )
    }

    /// The ids under `PREFIX/snapshots/`.
    pub fn published_ids(&self) -> Vec<String> {
        let out = self
            .rt
            .block_on(
                self.s3
                    .list_objects_v2()
                    .bucket(BUCKET)
                    .prefix(Self::key("snapshots/"))
                    .send(),
            )
            .expect("list");
        let mut ids: Vec<String> = out
            .contents()
            .iter()
            .filter_map(|o| o.key())
            .filter_map(|k| k.split('/').nth(2).map(str::to_string))
            .collect();
        ids.sort();
        ids.dedup();
        ids
    }

    /// Uploads the indexer's local snapshot `id` file by file (the manifest included), but
    /// not `skip`, and with `alter`'s bytes changed; then `CURRENT`. What a publish does,
    /// with the fault the test wants.
    pub fn upload(&self, id: &str, skip: Option<&str>, alter: Option<&str>) {
        self.upload_files(id, skip, alter);
        self.put("CURRENT", format!("{id}\n").into_bytes());
    }

    /// [`Fixture::upload`] without writing `CURRENT`.
    pub fn upload_files(&self, id: &str, skip: Option<&str>, alter: Option<&str>) {
        let dir = self.indexer.join("snapshots").join(id);
        for rel in files_of(&dir) {
            if Some(rel.as_str()) == skip {
                continue;
            }
            let mut bytes = std::fs::read(dir.join(&rel)).expect("snapshot file");
            if Some(rel.as_str()) == alter {
                bytes[0] ^= 0x20;
            }
            self.put(&format!("snapshots/{id}/{rel}"), bytes);
        }
    }

    /// Builds a snapshot of the changed catalog locally (not published); its id.
    pub fn build_changed(&self) -> String {
        change_catalog(&self.catalog);
        self.index(&[])["id"].as_str().expect("id").to_string()
    }
}

/// Every file under `dir`, relative, with `/`.
pub fn files_of(dir: &Path) -> Vec<String> {
    fn walk(root: &Path, dir: &Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).expect("read_dir").flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push(
                    p.strip_prefix(root)
                        .expect("under root")
                        .to_string_lossy()
                        .replace('\\', "/"),
                );
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// Rewrites the comment of [`CHANGED`] so that it answers [`QUERY`].
pub fn change_catalog(catalog: &Path) {
    let path = catalog.join("domains/hr/tables/absence/get-table.json");
    let mut table: Value =
        serde_json::from_str(&std::fs::read_to_string(&path).expect("get-table.json"))
            .expect("json");
    let columns = table["Table"]["StorageDescriptor"]["Columns"]
        .as_array_mut()
        .expect("columns");
    let column = columns
        .iter_mut()
        .find(|c| c["Name"] == "absence_id")
        .expect("absence_id");
    column["Comment"] = json!("Zebra migration ledger reference of the absence request.");
    std::fs::write(&path, serde_json::to_vec_pretty(&table).expect("json")).expect("write");
}

pub fn readyz(addr: std::net::SocketAddr) -> (u16, Value) {
    match client::request(addr, "GET", "/readyz", &[], None) {
        Ok(r) => (r.status, r.json()),
        Err(e) => (0, json!({"error": e.to_string()})),
    }
}

pub fn metrics(addr: std::net::SocketAddr) -> String {
    client::request(addr, "GET", "/metrics", &[], None)
        .expect("metrics")
        .text()
}

/// The value of a metric line `name` (with its labels), if present.
pub fn metric(text: &str, name: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
}

/// Polls `f` until it returns `Some`, at most `deadline`; panics with `what` and the last
/// `/readyz` otherwise.
pub fn wait_for<T>(what: &str, deadline: Duration, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(
            start.elapsed() < deadline,
            "{what}: not within {deadline:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits until the replica serves `id`; its `/readyz`.
pub fn serving(replica: &Served, id: &str) -> Value {
    wait_for(&format!("replica serving {id}"), DEADLINE, || {
        let (status, r) = readyz(replica.addr);
        (status == 200
            && r["follow"]["current_id"] == json!(id)
            && r["snapshot"]["id"] == json!(id))
        .then_some(r)
    })
}

/// Waits until the replica's `/readyz` follow.last_error contains every one of `words`.
pub fn failing(replica: &Served, words: &[&str]) -> Value {
    wait_for(&format!("last_error naming {words:?}"), DEADLINE, || {
        let (_, r) = readyz(replica.addr);
        let e = r["follow"]["last_error"].as_str()?.to_string();
        words.iter().all(|w| e.contains(w)).then_some(r)
    })
}

/// `find_precedents` over REST; status and body.
pub fn search(addr: std::net::SocketAddr, args: Value) -> (u16, Value) {
    let r = client::request(
        addr,
        "POST",
        "/v1/tools/find_precedents",
        &[("Content-Type", "application/json")],
        Some(args.to_string().as_bytes()),
    )
    .expect("find_precedents");
    (r.status, r.json())
}

/// The replica answers from `id`.
pub fn answers_from(replica: &Served, id: &str) {
    let (status, body) = search(replica.addr, json!({"description": QUERY, "limit": 3}));
    assert_eq!(
        (status, &body["snapshot"]["id"]),
        (200, &json!(id)),
        "{body}"
    );
}

/// The rows (bytes, as the manifest's model dimension gives them) of snapshot `new`'s
/// vectors.f32 and how many of them the vectors of snapshot `old` hold byte for byte: what a
/// replica serving `old` can copy instead of downloading.
pub fn rows_in_common(old: &Path, new: &Path) -> (usize, usize, usize) {
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(new.join("manifest.json")).expect("manifest"))
            .expect("manifest json");
    let row = manifest["model"]["dimension"].as_u64().expect("dimension") as usize * 4;
    let old = std::fs::read(old.join("vectors.f32")).expect("old vectors");
    let new = std::fs::read(new.join("vectors.f32")).expect("new vectors");
    let held: std::collections::HashSet<&[u8]> = old.chunks(row).collect();
    let rows = new.len() / row;
    (
        row,
        rows,
        new.chunks(row).filter(|r| held.contains(r)).count(),
    )
}

/// The bytes of the documents of snapshot `new`'s documents.json whose JSON the documents.json
/// of snapshot `old` holds byte for byte (a document's JSON as serde_json writes the parsed
/// value again: checked to give the file back).
pub fn documents_in_common(old: &Path, new: &Path) -> usize {
    let split = |dir: &Path| -> Vec<Vec<u8>> {
        let bytes = std::fs::read(dir.join("documents.json")).expect("documents.json");
        let docs: Vec<Value> = serde_json::from_slice(&bytes).expect("json");
        let parts: Vec<Vec<u8>> = docs
            .iter()
            .map(|d| serde_json::to_vec(d).expect("json"))
            .collect();
        let mut again = b"[".to_vec();
        again.extend(parts.join(&b","[..]));
        again.push(b']');
        assert!(again == bytes, "documents.json of {} splits", dir.display());
        parts
    };
    let held: std::collections::HashSet<Vec<u8>> = split(old).into_iter().collect();
    split(new)
        .iter()
        .filter(|d| held.contains(*d))
        .map(|d| d.len())
        .sum()
}
