//! Snapshots: the closed set (ontology values and catalog columns) embedded and indexed once,
//! written to `index/snapshots/<id>/` and published by atomically replacing `index/CURRENT`.
//! A crash mid-build leaves the previous snapshot in use; a snapshot built with another
//! embedding model, or with a file whose checksum does not match its manifest, is refused with
//! the command to run. Loaded snapshots are immutable and shared (`Arc`); [`SnapshotHandle`]
//! swaps them so in-flight requests finish on the snapshot they started with.
//!
//! This module never reads a catalog source at query time and never writes outside `index/`.

mod build;
pub mod codes;
pub mod dense;
pub mod documents;
mod format;
pub mod graph;
pub mod lexical;
mod progress;
mod reuse;
pub mod slices;
pub mod watch;

pub use build::*;
pub use format::*;
pub use progress::{Logged, Progress, Quiet, StepLines, Unit};
pub use reuse::{document_pieces, vector_pieces, Piece};

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::SystemTime;

use arc_swap::ArcSwapOption;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::catalog::{read_domain, Caller, CatalogSource, SourceFreshness, SourceIdentity};
use crate::embed::{sha256_file, EmbedError, Embedder};
use crate::ontology::{glossary, Ontology};
use crate::timestamp::format_rfc3339;
use dense::{Backend, Dense, Vectors};
use documents::{Document, Kind};

/// A snapshot problem, with what to run next.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("no snapshot in {dir}")]
    NoSnapshot { dir: String },
    #[error("snapshot file {file} is corrupt ({problem})")]
    Corrupt { file: String, problem: String },
    #[error("snapshot {file} is in snapshot format {found}, written by {} govcat; this govcat reads format {reads}", if found < reads { "an older" } else { "a newer" })]
    FormatMismatch {
        file: String,
        found: u32,
        reads: u32,
    },
    #[error("snapshot {id} was built with embedding model {built} but this govcat runs {running}")]
    ModelMismatch {
        id: String,
        built: String,
        running: String,
    },
    #[error("{path}: {problem}; check the directory exists and is writable (--index)")]
    Io { path: String, problem: String },
    #[error("the catalog now reads {columns} columns but the published snapshot {published} has {published_columns} (more than {}% fewer); not published, the previous snapshot keeps serving. Check that the source answers completely", MAX_UNATTENDED_LOSS * 100.0)]
    Shrunk {
        published: String,
        published_columns: usize,
        columns: usize,
    },
    #[error("{file}: {problem}; {next}")]
    Slice {
        file: String,
        problem: String,
        next: String,
    },
    #[error("calibrating tag confidence on the new snapshot failed: {0}; nothing was published, the previous snapshot is unchanged")]
    Calibration(String),
    #[error("reading the catalog for the snapshot failed: {0}")]
    Catalog(#[from] crate::catalog::CatalogError),
    #[error(transparent)]
    Embed(#[from] EmbedError),
}

impl IndexError {
    pub fn kind(&self) -> &'static str {
        match self {
            IndexError::NoSnapshot { .. } => "NoSnapshot",
            IndexError::Corrupt { .. } => "SnapshotCorrupt",
            IndexError::FormatMismatch { .. } => "SnapshotFormatMismatch",
            IndexError::ModelMismatch { .. } => "SnapshotModelMismatch",
            IndexError::Io { .. } => "IndexIo",
            IndexError::Shrunk { .. } => "SnapshotShrunk",
            IndexError::Slice { .. } => "SliceUnusable",
            IndexError::Calibration(_) => "CalibrationFailed",
            IndexError::Catalog(e) => e.kind(),
            IndexError::Embed(_) => "EmbedderUnavailable",
        }
    }
}

fn io_err(path: &Path, e: impl std::fmt::Display) -> IndexError {
    IndexError::Io {
        path: path.display().to_string(),
        problem: e.to_string(),
    }
}

/// A loaded, immutable snapshot.
pub struct Snapshot {
    pub manifest: Manifest,
    pub docs: Vec<Document>,
    /// The domains with at least one column in the snapshot, sorted.
    pub domains: Vec<String>,
    /// Each document's scope term, computed once at load for the per-query scope filter.
    pub scopes: Scopes,
    pub lexical: lexical::Lexical,
    pub dense: Dense,
    /// German→English and abbreviation query expansion (empty when the snapshot carries no
    /// glossary); see [`Snapshot::expand_query`].
    pub glossary: glossary::Glossary,
    /// Index queries run against this snapshot (lexical or dense), for tests and metrics.
    pub queries_run: AtomicU64,
    /// The most recent searched terms (bounded), so tests can prove what was searched.
    pub searched: Mutex<std::collections::VecDeque<String>>,
    /// How often tag proposals with given evidence were right on this catalog
    /// ([`CALIBRATION`]); `None` for a snapshot built without calibration.
    pub calibration: Option<crate::calibration::Map>,
    /// Column ordinals by [`crate::text::name_key`], in id order; built on first use
    /// ([`Snapshot::columns_named`]).
    names: std::sync::OnceLock<std::collections::HashMap<String, Vec<u32>>>,
}

impl Snapshot {
    /// The columns named like `column` (the same [`crate::text::name_key`]: its copies in
    /// other tables), in id order. The map is built on the first call, one pass over the
    /// documents.
    pub fn columns_named(&self, column: &str) -> &[u32] {
        self.names
            .get_or_init(|| {
                let mut by: std::collections::HashMap<String, Vec<u32>> = Default::default();
                for (i, d) in self.docs.iter().enumerate() {
                    if let (Kind::Column, Some(name)) = (d.kind, d.column.as_deref()) {
                        by.entry(crate::text::name_key(name))
                            .or_default()
                            .push(i as u32);
                    }
                }
                for ords in by.values_mut() {
                    ords.sort_by(|a, b| self.docs[*a as usize].id.cmp(&self.docs[*b as usize].id));
                }
                by
            })
            .get(&crate::text::name_key(column))
            .map_or(&[], Vec::as_slice)
    }

    /// Builds the name map ([`Snapshot::columns_named`]) now rather than on the first
    /// suggest_tags: one pass over the documents, about 1 s at 1M columns, paid before the
    /// snapshot serves instead of by a caller.
    pub fn warm(&self) {
        self.columns_named("");
    }

    pub fn count_query(&self) {
        self.queries_run.fetch_add(1, Ordering::Relaxed);
    }

    /// The words a description is also searched with (echoed as `glossary_terms`): the
    /// glossary's English terms for its German words and abbreviations, then, for a word no
    /// document holds (`seriesnumber`) or one of a column name (`birthdate`), the two parts that
    /// the documents use as words more often than the whole, each once and none the caller
    /// wrote.
    pub fn expand_query(&self, description: &str) -> Vec<String> {
        let mut out = self.glossary.expand(description);
        let written = crate::text::identifier_words(description);
        // Words no document holds, and words of column names (identifiers run words
        // together: `birthdate` also asks for `birth_date`); a prose word the catalog knows is
        // searched as written (`separate` is not `sepa` + `rate`).
        let splittable =
            |w: &&String| self.lexical.word_freq(w) == 0 || self.lexical.name_freq(w) > 0;
        crate::text::push_run_together_parts(
            &mut out,
            written.iter().filter(splittable),
            &written,
            |p| self.lexical.word_freq(p),
        );
        out
    }

    /// Records a searched term (one per search, whatever sides run).
    pub fn record_query(&self, term: &str) {
        let mut log = self.searched.lock().unwrap_or_else(|p| p.into_inner());
        if log.len() == 64 {
            log.pop_front();
        }
        log.push_back(term.to_string());
    }

    /// The searched terms, oldest first.
    pub fn searched_terms(&self) -> Vec<String> {
        let log = self.searched.lock().unwrap_or_else(|p| p.into_inner());
        log.iter().cloned().collect()
    }

    pub fn doc(&self, ord: u32) -> &Document {
        &self.docs[ord as usize]
    }

    /// Which documents a query limited to the scope terms `allowed` may see.
    pub fn scope_filter(&self, allowed: &[String]) -> ScopeFilter {
        self.scopes.filter(allowed)
    }
}

/// The scope term (`domain:<d>` or `ontology`) of every document, as a small number, so a
/// query's scope filter is a table lookup per document rather than a string per document.
#[derive(Debug, Clone, Default)]
pub struct Scopes {
    /// The distinct scope terms, sorted.
    pub names: Vec<String>,
    /// Per document ordinal, the index of its scope term in `names`.
    pub of: Vec<u32>,
}

impl Scopes {
    pub fn of_docs(docs: &[Document]) -> Scopes {
        let terms: Vec<String> = docs.iter().map(lexical::scope_term).collect();
        let mut names = terms.clone();
        names.sort();
        names.dedup();
        let index: HashMap<&str, u32> = names
            .iter()
            .enumerate()
            .map(|(i, n)| (n.as_str(), i as u32))
            .collect();
        let of = terms.iter().map(|t| index[t.as_str()]).collect();
        Scopes { names, of }
    }

    /// Which documents a query limited to the scope terms `allowed` may see.
    pub fn filter(&self, allowed: &[String]) -> ScopeFilter {
        let permitted: Vec<bool> = self.names.iter().map(|s| allowed.contains(s)).collect();
        if permitted.iter().all(|p| *p) {
            return ScopeFilter::All;
        }
        let mask: Vec<bool> = self.of.iter().map(|s| permitted[*s as usize]).collect();
        let count = mask.iter().filter(|m| **m).count();
        ScopeFilter::Mask { mask, count }
    }
}

/// The documents one query may see.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScopeFilter {
    /// Every document of the snapshot (the caller may read every scope in it).
    All,
    /// Per ordinal, whether the document is visible; `count` of them are.
    Mask { mask: Vec<bool>, count: usize },
}

impl ScopeFilter {
    pub fn allows(&self, ord: u32) -> bool {
        match self {
            ScopeFilter::All => true,
            ScopeFilter::Mask { mask, .. } => mask.get(ord as usize).copied().unwrap_or(false),
        }
    }

    /// Number of visible documents out of `total`.
    pub fn count(&self, total: usize) -> usize {
        match self {
            ScopeFilter::All => total,
            ScopeFilter::Mask { count, .. } => *count,
        }
    }
}

/// Best first, ties by ordinal: the one order every ranked list of the
/// index comes in, so equal scores never reorder between runs or paths.
pub fn best_first(a: &(u32, f32), b: &(u32, f32)) -> std::cmp::Ordering {
    b.1.total_cmp(&a.1).then(a.0.cmp(&b.0))
}

/// Kinds present in a document list (for checks).
pub fn kinds_of(docs: &[Document]) -> Vec<Kind> {
    let mut k: Vec<Kind> = docs.iter().map(|d| d.kind).collect();
    k.sort();
    k.dedup();
    k
}

/// The state of the served snapshot, for `/readyz` and metrics.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct SnapshotStatus {
    pub loaded: bool,
    pub snapshot_id: Option<String>,
    pub built_at: Option<String>,
    pub swaps: u64,
    pub rebuilds_ok: u64,
    pub rebuilds_failed: u64,
    /// The last failed load or rebuild, if it was not followed by a success.
    pub last_error: Option<String>,
}

/// The snapshot currently served; cheap to clone. `current()` hands out an `Arc`, so a request
/// keeps its snapshot even if a swap happens mid-request.
#[derive(Clone, Default)]
pub struct SnapshotHandle {
    current: Arc<ArcSwapOption<Snapshot>>,
    status: Arc<Mutex<SnapshotStatus>>,
}

impl SnapshotHandle {
    pub fn new() -> SnapshotHandle {
        SnapshotHandle::default()
    }

    pub fn current(&self) -> Option<Arc<Snapshot>> {
        self.current.load_full()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, SnapshotStatus> {
        self.status.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Serves `snapshot` from now on, after building what its first requests would otherwise
    /// wait for ([`Snapshot::warm`]): the server's path. A one-shot command uses [`Self::swap`].
    pub fn serve(&self, snapshot: Snapshot) {
        snapshot.warm();
        self.swap(snapshot);
    }

    /// Serves `snapshot` from now on.
    pub fn swap(&self, snapshot: Snapshot) {
        let mut st = self.lock();
        st.loaded = true;
        st.snapshot_id = Some(snapshot.manifest.id.clone());
        st.built_at = Some(snapshot.manifest.built_at.clone());
        st.swaps += 1;
        st.last_error = None;
        self.current.store(Some(Arc::new(snapshot)));
    }

    /// Records a failed rebuild; the previous snapshot keeps serving.
    pub fn record_failure(&self, error: &str) {
        let mut st = self.lock();
        st.rebuilds_failed += 1;
        st.last_error = Some(error.to_string());
    }

    /// Records that the snapshot published at start did not load: the error, not a failed
    /// rebuild (nothing was rebuilt).
    pub fn record_load_failure(&self, error: &str) {
        self.lock().last_error = Some(error.to_string());
    }

    pub fn record_rebuild_ok(&self) {
        self.lock().rebuilds_ok += 1;
    }

    pub fn status(&self) -> SnapshotStatus {
        self.lock().clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(kind: Kind, domain: Option<&str>) -> Document {
        Document {
            domain: domain.map(str::to_string),
            ..Document::bare(&format!("{kind:?}:{domain:?}"), kind)
        }
    }

    fn scopes() -> Scopes {
        Scopes::of_docs(&[
            doc(Kind::Column, Some("fraud")),
            doc(Kind::OntologyValue, None),
            doc(Kind::Column, Some("claims")),
            doc(Kind::Column, Some("fraud")),
        ])
    }

    #[test]
    fn a_caller_who_reads_every_scope_gets_no_mask() {
        let all = ["domain:claims", "domain:fraud", "ontology", "domain:other"].map(String::from);
        assert_eq!(scopes().filter(&all), ScopeFilter::All);
        assert_eq!(ScopeFilter::All.count(4), 4);
    }

    #[test]
    fn a_caller_limited_to_one_domain_sees_exactly_its_documents() {
        let filter = scopes().filter(&["domain:fraud".to_string()]);
        assert_eq!(
            filter,
            ScopeFilter::Mask {
                mask: vec![true, false, false, true],
                count: 2
            }
        );
        assert_eq!(
            (0..5).map(|o| filter.allows(o)).collect::<Vec<_>>(),
            vec![true, false, false, true, false]
        );
        assert_eq!(
            scopes().filter(&[]),
            ScopeFilter::Mask {
                mask: vec![false; 4],
                count: 0
            }
        );
    }

    use crate::embed::HashEmbedder;

    /// Records every text it embeds (a [`HashEmbedder`] underneath).
    struct Counting {
        inner: HashEmbedder,
        texts: Mutex<Vec<String>>,
    }

    impl Embedder for Counting {
        fn model_id(&self) -> &str {
            self.inner.model_id()
        }
        fn dimension(&self) -> usize {
            self.inner.dimension()
        }
        fn checksum(&self) -> &str {
            self.inner.checksum()
        }
        fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
            let mut seen = self.texts.lock().unwrap_or_else(|p| p.into_inner());
            seen.extend(texts.iter().map(|t| t.to_string()));
            self.inner.embed_batch(texts)
        }
    }

    fn ontology_docs() -> Vec<Document> {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("ontology/lf-tags.json");
        documents::ontology_documents(&Ontology::load(&path).expect("shipped ontology"))
    }

    /// Counts of a snapshot of ontology documents only.
    fn ontology_counts(docs: &[Document]) -> Counts {
        Counts {
            documents: docs.len(),
            columns: 0,
            ontology_values: docs.len(),
            domains: 0,
            tables: 0,
            unreadable_tables: Vec::new(),
        }
    }

    fn publish(dir: &Path, docs: &[Document], vectors: &Vectors, model: &ModelInfo) {
        let counts = ontology_counts(docs);
        write_snapshot(
            dir,
            docs,
            vectors,
            counts,
            SourceFreshness {
                kind: "dir".into(),
                location: "test".into(),
                recorded_at: None,
                refresh_every_secs: None,
            },
            model.clone(),
            "test",
        )
        .expect("write snapshot");
    }

    /// An index directory with one published snapshot of the shipped ontology's documents,
    /// embedded by a 32-dimension [`HashEmbedder`]; with the embedder and the documents.
    fn published_ontology() -> (tempfile::TempDir, HashEmbedder, Vec<Document>) {
        let index = tempfile::tempdir().expect("tempdir");
        let embedder = HashEmbedder::new(32);
        let docs = ontology_docs();
        let vectors = embed_documents(&embedder, &docs, &Quiet).expect("embed");
        publish(index.path(), &docs, &vectors, &model_info(&embedder));
        (index, embedder, docs)
    }

    #[test]
    fn a_served_snapshot_has_its_name_map_built_and_a_swapped_one_builds_it_on_first_use() {
        let (index, embedder, _) = published_ontology();
        let loaded = || load_current(index.path(), &embedder).expect("load");
        let served = SnapshotHandle::new();
        served.serve(loaded());
        let swapped = SnapshotHandle::new();
        swapped.swap(loaded());
        let built = |h: &SnapshotHandle| h.current().expect("current").names.get().is_some();
        assert!(built(&served));
        assert!(!built(&swapped));
    }

    #[test]
    fn unchanged_texts_reuse_the_published_vectors_and_changed_ones_are_embedded() {
        let index = tempfile::tempdir().expect("tempdir");
        let embedder = Counting {
            inner: HashEmbedder::new(32),
            texts: Mutex::new(Vec::new()),
        };
        let model = model_info(&embedder);
        let mut docs = ontology_docs();
        let first = embed_documents(&embedder, &docs, &Quiet).expect("embed");
        publish(index.path(), &docs, &first, &model);
        embedder.texts.lock().unwrap().clear();

        docs[3].dense_text.push_str(" (changed)");
        let previous = PreviousEmbeddings::load(index.path(), &model)
            .expect("reusable")
            .expect("published");
        let (second, report, old_of_new) = embed_documents_reusing(
            &embedder,
            &docs,
            Some(&previous),
            &index.path().join(slices::SLICES_DIR),
            &Quiet,
        )
        .expect("embed");

        assert_eq!(
            *embedder.texts.lock().unwrap(),
            vec![docs[3].dense_text.clone()]
        );
        let expected: Vec<Option<u32>> = (0..docs.len() as u32)
            .map(|i| (i != 3).then_some(i))
            .collect();
        assert_eq!(old_of_new, expected);
        assert_eq!(
            report,
            EmbedReport {
                embedded: 1,
                reused: docs.len() - 1,
                from_slices: 0
            }
        );
        for i in (0..docs.len()).filter(|&i| i != 3) {
            assert_eq!(second.row(i), first.row(i), "row {i} copied unchanged");
        }
        assert_ne!(second.row(3), first.row(3));
    }

    #[test]
    fn a_catalog_that_moved_little_is_recalibrated_on_the_smaller_sample_and_one_that_lost_half_is_not(
    ) {
        let (index, embedder, docs) = published_ontology();
        // Records the sample size it is asked for and publishes nothing.
        let asked = Mutex::new(Vec::new());
        let calibrate = |_: &Path, max_columns: usize| {
            asked.lock().unwrap().push(max_columns);
            Err(IndexError::Calibration("recorded".into()))
        };
        let rebuild = |docs: &[Document]| {
            let counts = ontology_counts(docs);
            let provenance = Provenance {
                freshness: SourceFreshness {
                    kind: "dir".into(),
                    location: "test".into(),
                    recorded_at: None,
                    refresh_every_secs: None,
                },
                ontology_version: "test",
                glossary_text: None,
                abbreviations_text: None,
                built_from: BuiltFrom::default(),
            };
            let result = publish_documents(
                index.path(),
                docs,
                counts,
                &embedder,
                provenance,
                Some(&calibrate),
                &Quiet,
            );
            assert_eq!(
                result.err().map(|e| e.to_string()),
                Some(IndexError::Calibration("recorded".into()).to_string())
            );
        };
        let mut one_changed = docs.clone();
        one_changed[0].dense_text.push_str(" (changed)");
        rebuild(&one_changed);
        rebuild(&docs[..docs.len() / 2]);
        assert_eq!(
            *asked.lock().unwrap(),
            vec![
                crate::calibration::REFRESH_MAX_COLUMNS,
                crate::calibration::MAX_COLUMNS
            ]
        );
    }

    #[test]
    fn a_format_7_snapshots_vectors_are_reused_and_an_older_formats_are_not() {
        let (index, embedder, docs) = published_ontology();
        let model = model_info(&embedder);
        let id = current_id(index.path()).expect("current");
        let manifest = index.path().join("snapshots").join(id).join(MANIFEST);
        let with_format = |version: u32| {
            let mut m: serde_json::Value =
                serde_json::from_slice(&fs::read(&manifest).expect("read manifest"))
                    .expect("manifest JSON");
            m["format_version"] = version.into();
            fs::write(&manifest, serde_json::to_vec_pretty(&m).expect("JSON")).expect("write");
        };

        with_format(7);
        let previous = PreviousEmbeddings::load(index.path(), &model)
            .expect("format 7 vectors are reusable")
            .expect("published");
        let (_, report, _) = embed_documents_reusing(
            &embedder,
            &docs,
            Some(&previous),
            &index.path().join(slices::SLICES_DIR),
            &Quiet,
        )
        .expect("embed");
        assert_eq!(
            report,
            EmbedReport {
                embedded: 0,
                reused: docs.len(),
                from_slices: 0
            }
        );

        // A replica of this govcat refuses to serve it and says why (its next step:
        // `tools::tests`).
        let refused = load_current(index.path(), &embedder)
            .err()
            .expect("a format-7 snapshot is not served");
        assert_eq!(refused.kind(), "SnapshotFormatMismatch");
        assert_eq!(
            refused.to_string(),
            format!(
                "snapshot {} is in snapshot format 7, written by an older govcat; this govcat reads format {FORMAT_VERSION}",
                manifest.display()
            )
        );

        with_format(6);
        assert_eq!(
            PreviousEmbeddings::load(index.path(), &model).err(),
            Some("snapshot format 6".to_string())
        );
    }

    #[test]
    fn vectors_of_another_model_or_a_corrupt_file_are_not_reused() {
        let (index, embedder, _) = published_ontology();

        let other = model_info(&HashEmbedder::new(16));
        assert!(PreviousEmbeddings::load(index.path(), &other).is_err());

        let id = current_id(index.path()).expect("current");
        let file = index.path().join("snapshots").join(id).join(VECTORS);
        let mut bytes = fs::read(&file).expect("read vectors");
        bytes[0] ^= 0xff;
        fs::write(&file, bytes).expect("corrupt vectors");
        let err = PreviousEmbeddings::load(index.path(), &model_info(&embedder))
            .err()
            .expect("a corrupt vectors file is refused");
        assert!(err.contains("does not match its manifest"), "{err}");

        let empty = tempfile::tempdir().expect("tempdir");
        assert!(
            PreviousEmbeddings::load(empty.path(), &model_info(&embedder))
                .expect("no snapshot is not an error")
                .is_none()
        );
    }
}
