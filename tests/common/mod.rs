//! Shared fixtures for integration tests: the demo catalog (`fixtures/catalog`), the shipped
//! ontology, and snapshots of them built once per test binary into a directory under the
//! target's temporary directory.
//!
//! Two snapshots exist: one built with the real all-MiniLM-L6-v2 model (what the product
//! serves; ~45 s to embed the 744 documents, so it is built once and shared) and one built with
//! the deterministic `HashEmbedder` (for plumbing tests that must run without the model).
//!
//! Outside CI a missing model makes [`real`] return `None` after printing a skip notice; under
//! `CI=true` it fails the test instead.

#![allow(dead_code)] // each test binary uses a different subset

pub mod server;

use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant, SystemTime};

use govcat::catalog::dir::DirSource;
use govcat::catalog::{Caller, Domain};
use govcat::embed::{Embedder, HashEmbedder, MiniLm, DEFAULT_MODEL_DIR, MODEL_DIR_ENV};
use govcat::index::{self, Manifest, Snapshot, SnapshotHandle};
use govcat::ontology::Ontology;
use govcat::tools::{self, Context, Outcome, ToolError};
use jsonwebtoken::{Algorithm, EncodingKey, Header};
use serde_json::Value;

/// Every domain of the demo catalog, sorted.
pub const ALL_DOMAINS: [&str; 9] = [
    "analytics",
    "claims",
    "customer",
    "fraud",
    "hr",
    "marketing",
    "payments",
    "policy",
    "risk",
];

/// Prefix of the snapshot directories this module creates (stale ones are removed).
const SNAPSHOT_DIR_PREFIX: &str = "govcat-test-snapshot-";
/// Snapshot directories older than this are leftovers of earlier runs.
const STALE_AFTER: Duration = Duration::from_secs(3600);

/// The repository root.
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

pub fn catalog_dir() -> PathBuf {
    repo().join("fixtures/catalog")
}

pub fn ontology() -> Ontology {
    let path = repo().join("ontology/lf-tags.json");
    Ontology::load(&path).unwrap_or_else(|e| panic!("shipped ontology: {e}"))
}

pub fn demo_source(ontology: &Ontology) -> Box<DirSource> {
    Box::new(
        DirSource::open(&catalog_dir(), ontology.clone())
            .unwrap_or_else(|e| panic!("demo catalog: {e}")),
    )
}

/// `$GOVCAT_MODEL_DIR`, else `models/all-MiniLM-L6-v2` in the repository.
pub fn model_dir() -> PathBuf {
    match std::env::var_os(MODEL_DIR_ENV) {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => repo().join(DEFAULT_MODEL_DIR),
    }
}

fn under_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| v == "true")
}

/// A snapshot of the demo catalog, built once, and what a [`Context`] over it needs.
pub struct Built {
    pub dir: PathBuf,
    pub embedder: Arc<dyn Embedder>,
    pub handle: SnapshotHandle,
    pub manifest: Manifest,
    /// Wall time of the build (embedding and indexing), for the report.
    pub build_time: Duration,
}

impl Built {
    /// A fresh tool context over this snapshot (the demo catalog as the live source).
    pub fn context(&self) -> Context {
        let ontology = ontology();
        let source = demo_source(&ontology);
        Context::new(ontology, source).with_retrieval(self.embedder.clone(), self.handle.clone())
    }

    /// The shared, served snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.handle
            .current()
            .unwrap_or_else(|| panic!("snapshot in {} is not being served", self.dir.display()))
    }

    /// A private copy of the snapshot (its own query counter and search log), loaded from the
    /// same directory: tests that count index queries must not see other tests' searches.
    pub fn private_copy(&self) -> (Context, Arc<Snapshot>) {
        let snapshot = index::load_current(&self.dir, self.embedder.as_ref())
            .unwrap_or_else(|e| panic!("reloading snapshot {}: {e}", self.dir.display()));
        let handle = SnapshotHandle::new();
        handle.swap(snapshot);
        let served = handle
            .current()
            .unwrap_or_else(|| panic!("private copy of {} is not served", self.dir.display()));
        let ontology = ontology();
        let source = demo_source(&ontology);
        let ctx = Context::new(ontology, source).with_retrieval(self.embedder.clone(), handle);
        (ctx, served)
    }

    /// When the snapshot was built (the manifest's `built_at`).
    pub fn built_at(&self) -> SystemTime {
        tools::parse_rfc3339(&self.manifest.built_at).unwrap_or_else(|| {
            panic!(
                "manifest built_at '{}' is not RFC 3339",
                self.manifest.built_at
            )
        })
    }
}

/// Removes snapshot directories earlier runs of the test binaries left behind.
fn remove_stale_snapshot_dirs(parent: &Path) {
    let Ok(entries) = std::fs::read_dir(parent) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().to_string();
        let old = entry
            .metadata()
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > STALE_AFTER);
        if name.starts_with(SNAPSHOT_DIR_PREFIX) && old {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

fn build_with(embedder: Arc<dyn Embedder>) -> Built {
    let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    remove_stale_snapshot_dirs(&parent);
    // Kept after the test binary exits (statics are never dropped); removed by a later run.
    let dir = tempfile::Builder::new()
        .prefix(SNAPSHOT_DIR_PREFIX)
        .tempdir_in(&parent)
        .unwrap_or_else(|e| panic!("temporary snapshot dir in {}: {e}", parent.display()))
        .keep();
    let ontology = ontology();
    let source = demo_source(&ontology);
    let started = Instant::now();
    let manifest = index::build(
        &dir,
        &ontology,
        source.as_ref(),
        embedder.as_ref(),
        &index::Quiet,
    )
    .unwrap_or_else(|e| panic!("building the demo snapshot in {}: {e}", dir.display()));
    let build_time = started.elapsed();
    let snapshot = index::load_current(&dir, embedder.as_ref())
        .unwrap_or_else(|e| panic!("loading the demo snapshot from {}: {e}", dir.display()));
    let handle = SnapshotHandle::new();
    handle.swap(snapshot);
    Built {
        dir,
        embedder,
        handle,
        manifest,
        build_time,
    }
}

/// The demo catalog embedded with the real model, or `None` (after saying why) when the model
/// is missing outside CI.
pub fn real() -> Option<&'static Built> {
    static REAL: OnceLock<Option<Built>> = OnceLock::new();
    REAL.get_or_init(|| {
        let dir = model_dir();
        if !dir.join("model.safetensors").is_file() && !under_ci() {
            // Straight to stderr so the harness does not swallow it: a skip must be visible.
            let _ = writeln!(
                std::io::stderr(),
                "SKIPPED real-model tests: no embedding model in {}; run scripts/fetch-model.sh \
                 to enable them (under CI=true a missing model fails them)",
                dir.display()
            );
            return None;
        }
        let model = MiniLm::load(&dir).unwrap_or_else(|e| panic!("{e}"));
        let built = build_with(Arc::new(model));
        let _ = writeln!(
            std::io::stderr(),
            "built the real-model demo snapshot {} ({} documents) in {:.1} s",
            built.manifest.id,
            built.manifest.counts.documents,
            built.build_time.as_secs_f64()
        );
        Some(built)
    })
    .as_ref()
}

/// [`real`]'s snapshot rebuilt with its calibration map (what `govcat index` publishes): every
/// vector is reused, only the leave-one-out runs (~40 s in a debug build). `None` as [`real`].
pub fn calibrated() -> Option<&'static Built> {
    static CALIBRATED: OnceLock<Option<Built>> = OnceLock::new();
    CALIBRATED
        .get_or_init(|| {
            let real = real()?;
            let parent = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
            let dir = tempfile::Builder::new()
                .prefix(SNAPSHOT_DIR_PREFIX)
                .tempdir_in(&parent)
                .unwrap_or_else(|e| panic!("temporary snapshot dir in {}: {e}", parent.display()))
                .keep();
            copy_dir(&real.dir, &dir);
            let ontology = ontology();
            let source = demo_source(&ontology);
            let fresh = || -> Result<Context, ToolError> {
                let ontology = self::ontology();
                let source = demo_source(&ontology);
                Ok(Context::new(ontology, source))
            };
            let calibrate = govcat::app::calibrator(&fresh, real.embedder.clone(), &index::Quiet);
            let started = Instant::now();
            let (manifest, _) = index::build_calibrated(
                &dir,
                &ontology,
                source.as_ref(),
                real.embedder.as_ref(),
                &index::Quiet,
                false,
                Some(&calibrate),
            )
            .unwrap_or_else(|e| panic!("calibrating the demo snapshot in {}: {e}", dir.display()));
            let build_time = started.elapsed();
            let snapshot = index::load_current(&dir, real.embedder.as_ref())
                .unwrap_or_else(|e| panic!("loading {}: {e}", dir.display()));
            let handle = SnapshotHandle::new();
            handle.swap(snapshot);
            Some(Built {
                dir,
                embedder: real.embedder.clone(),
                handle,
                manifest,
                build_time,
            })
        })
        .as_ref()
}

/// The demo catalog embedded with the deterministic `HashEmbedder` (no model needed).
pub fn hashed() -> &'static Built {
    static HASHED: OnceLock<Built> = OnceLock::new();
    HASHED.get_or_init(|| build_with(Arc::new(HashEmbedder::new(384))))
}

/// A caller who may read exactly `domains`.
pub fn caller_reading(subject: &str, domains: &[&str]) -> Caller {
    Caller {
        subject: subject.to_string(),
        readable: Some(
            domains
                .iter()
                .map(|d| Domain((*d).to_string()))
                .collect::<BTreeSet<_>>(),
        ),
    }
}

/// Calls a tool and returns its result, failing the test on any other outcome.
pub fn call_ok(ctx: &Context, caller: &Caller, tool: &str, args: Value) -> Value {
    match tools::call(ctx, caller, tool, args.clone()) {
        Outcome::Ok(v) => v,
        Outcome::InputRequired(ask) => panic!("{tool}({args}) asked for input: {ask:?}"),
        Outcome::Err(e) => panic!("{tool}({args}) failed: {e}"),
    }
}

/// Calls a tool and returns its error, failing the test on any other outcome.
pub fn call_err(ctx: &Context, caller: &Caller, tool: &str, args: Value) -> ToolError {
    match tools::call(ctx, caller, tool, args.clone()) {
        Outcome::Err(e) => e,
        Outcome::Ok(v) => panic!("{tool}({args}) succeeded but should fail: {v}"),
        Outcome::InputRequired(ask) => panic!("{tool}({args}) asked for input: {ask:?}"),
    }
}

/// The entry ids of a `find_precedents` result, in order.
pub fn ids(result: &Value) -> Vec<String> {
    result["entries"]
        .as_array()
        .unwrap_or_else(|| panic!("result has no entries array: {result}"))
        .iter()
        .map(|e| {
            e["id"]
                .as_str()
                .unwrap_or_else(|| panic!("entry without a string id: {e}"))
                .to_string()
        })
        .collect()
}

/// Copies a directory tree (e.g. the demo catalog, so a test can change it).
pub fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let entry = entry.expect("directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target)
                .unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        }
    }
}

/// A catalog folder holding `domains` of the demo catalog (and its roles and provenance): a
/// build of a few hundred texts instead of the whole demo's 744.
pub fn slice_catalog(to: &Path, domains: &[&str]) {
    let demo = catalog_dir();
    copy_dir(&demo.join("roles"), &to.join("roles"));
    std::fs::copy(demo.join("provenance.json"), to.join("provenance.json")).expect("provenance");
    for d in domains {
        copy_dir(&demo.join("domains").join(d), &to.join("domains").join(d));
    }
}

/// Whether the embedding model is there for a test that runs the binary on it; says why when it
/// is not, and fails under `CI=true`.
pub fn model_available(test: &str) -> bool {
    if model_dir().join("model.safetensors").is_file() {
        return true;
    }
    assert!(
        !under_ci(),
        "{test}: the model is missing under CI; run scripts/fetch-model.sh"
    );
    let _ = writeln!(
        std::io::stderr(),
        "SKIPPED {test}: needs the model (scripts/fetch-model.sh)"
    );
    false
}

/// A server watching its own copies of the demo catalog and ontology (with its glossary and
/// abbreviations), serving `index`: `--catalog DIR --ontology FILE --index DIR --watch` under
/// `dir`, and the ontology's path. A snapshot records the catalog folder it was built from, so
/// `index` (a copy of a snapshot of the originals) is first rebuilt for the copies with
/// `govcat index`; every text is unchanged, so every vector is reused and nothing is embedded.
pub fn watching_copies(dir: &Path, index: &Path) -> (server::Served, PathBuf) {
    let (catalog, ontology) = (dir.join("catalog"), dir.join("lf-tags.json"));
    copy_dir(&catalog_dir(), &catalog);
    for file in ["lf-tags.json", "glossary-de-en.tsv", "abbreviations.tsv"] {
        let to = dir.join(file);
        std::fs::copy(repo().join("ontology").join(file), &to)
            .unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    }
    let arg = |p: &Path| p.to_str().expect("utf-8 temp path").to_string();
    let flags = [
        "--catalog".to_string(),
        arg(&catalog),
        "--ontology".to_string(),
        arg(&ontology),
        "--index".to_string(),
        arg(index),
    ];
    let (code, manifest) = server::cli_json(
        &std::iter::once("index")
            .chain(flags.iter().map(String::as_str))
            .collect::<Vec<_>>(),
        &[],
    );
    assert_eq!(code, Some(0), "govcat index for the copies: {manifest}");
    let args: Vec<&str> = flags
        .iter()
        .map(String::as_str)
        .chain(["--watch"])
        .collect();
    (server::Served::start(&args, &[]), ontology)
}

/// JWT claims `base` with `patch` applied: a `null` in `patch` removes the claim.
pub fn patched(mut base: Value, patch: &Value) -> Value {
    if let (Some(claims), Some(patch)) = (base.as_object_mut(), patch.as_object()) {
        for (k, v) in patch {
            if v.is_null() {
                claims.remove(k);
            } else {
                claims.insert(k.clone(), v.clone());
            }
        }
    }
    base
}

/// A compact JWT of `claims` signed with `key` under `alg`, its header naming `kid`.
pub fn sign_jwt(alg: Algorithm, kid: &str, claims: &Value, key: &EncodingKey) -> String {
    let mut header = Header::new(alg);
    header.kid = Some(kid.to_string());
    jsonwebtoken::encode(&header, claims, key).expect("encode")
}

/// The error object of an MCP tool result that failed: `isError: true`, no
/// `structuredContent` (that must fit the tool's `outputSchema`), the object as the JSON text
/// of the first content block. Panics with the result otherwise.
pub fn mcp_tool_error(result: &Value) -> Value {
    assert_eq!(
        result["isError"],
        Value::Bool(true),
        "not an error: {result}"
    );
    assert_eq!(
        result.get("structuredContent"),
        None,
        "an error result carries structuredContent: {result}"
    );
    let text = result["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("error result without a text block: {result}"));
    serde_json::from_str(text).unwrap_or_else(|e| panic!("error text is not JSON ({e}): {text}"))
}
