//! Snapshots: the closed set (ontology values and catalog columns) embedded and indexed once,
//! written to `index/snapshots/<id>/` and published by atomically replacing `index/CURRENT`.
//! A crash mid-build leaves the previous snapshot in use; a snapshot built with another
//! embedding model, or with a file whose checksum does not match its manifest, is refused with
//! the command to run. Loaded snapshots are immutable and shared (`Arc`); [`SnapshotHandle`]
//! swaps them so in-flight requests finish on the snapshot they started with.
//!
//! This module never reads a catalog source at query time and never writes outside `index/`.

pub mod dense;
pub mod documents;
pub mod lexical;
pub mod watch;

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

/// The manifest's file name inside a snapshot directory.
pub const MANIFEST: &str = "manifest.json";
const DOCUMENTS: &str = "documents.json";
const VECTORS: &str = "vectors.f32";
const TANTIVY: &str = "tantivy";
const GLOSSARY: &str = "glossary.tsv";
const ABBREVIATIONS: &str = "abbreviations.tsv";
/// The calibrated-confidence map (`crate::calibration::Map`), when the build fitted one.
pub const CALIBRATION: &str = "calibration.json";
/// Snapshots kept besides the current one (older ones are removed after a publish).
const KEEP_PREVIOUS: usize = 2;

/// A snapshot problem, with what to run next.
#[derive(Debug, thiserror::Error)]
pub enum IndexError {
    #[error("no snapshot in {dir}")]
    NoSnapshot { dir: String },
    #[error("snapshot file {file} is corrupt ({problem})")]
    Corrupt { file: String, problem: String },
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
            IndexError::ModelMismatch { .. } => "SnapshotModelMismatch",
            IndexError::Io { .. } => "IndexIo",
            IndexError::Shrunk { .. } => "SnapshotShrunk",
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

/// The embedding model a snapshot was built with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ModelInfo {
    pub id: String,
    pub dimension: usize,
    pub checksum: String,
}

/// Document and catalog counts of a snapshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Counts {
    pub documents: usize,
    pub columns: usize,
    pub ontology_values: usize,
    pub domains: usize,
    pub tables: usize,
    /// Tables that could not be read and are therefore not in the snapshot.
    pub unreadable_tables: Vec<crate::catalog::Unreadable>,
}

/// Version of the snapshot layout; a snapshot of another version is refused at load.
/// 6: the HNSW graph is dumped with govcat's own `CosineDistance`.
/// 7: a column's vector also embeds its table's description (`Document::dense_table_text`).
pub const FORMAT_VERSION: u32 = 7;

/// `manifest.json`: what a snapshot is and how to check it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub format_version: u32,
    pub id: String,
    pub built_at: String,
    pub source_freshness: SourceFreshness,
    pub model: ModelInfo,
    pub ontology_version: String,
    /// Which catalog the snapshot was built from; absent in snapshots written before govcat
    /// recorded it (see `app::check_snapshot_source` for how those are treated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<SourceIdentity>,
    /// [`Ontology::checksum`] of the ontology it was built from; absent likewise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ontology_checksum: Option<String>,
    pub dense_backend: Backend,
    pub counts: Counts,
    /// sha256 of every file of the snapshot (paths relative to the snapshot directory).
    pub files: BTreeMap<String, String>,
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
}

impl Snapshot {
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
        let written = crate::text::words(&crate::text::split_identifier(description));
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

fn walk_files(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) -> Result<(), IndexError> {
    for entry in fs::read_dir(dir).map_err(|e| io_err(dir, e))? {
        let path = entry.map_err(|e| io_err(dir, e))?.path();
        if path.is_dir() {
            walk_files(root, &path, out)?;
        } else if path.file_name().and_then(|n| n.to_str()) != Some(MANIFEST) {
            out.push(
                path.strip_prefix(root)
                    .map_err(|e| io_err(&path, e))?
                    .to_path_buf(),
            );
        }
    }
    Ok(())
}

fn checksums(dir: &Path) -> Result<BTreeMap<String, String>, IndexError> {
    let mut files = Vec::new();
    walk_files(dir, dir, &mut files)?;
    let mut out = BTreeMap::new();
    for rel in files {
        let sum = sha256_file(&dir.join(&rel)).map_err(|e| io_err(&dir.join(&rel), e))?;
        out.insert(rel.to_string_lossy().replace('\\', "/"), sum);
    }
    Ok(out)
}

fn fsync_dir(dir: &Path) {
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut f = fs::File::create(path).map_err(|e| io_err(path, e))?;
    f.write_all(bytes).map_err(|e| io_err(path, e))?;
    f.sync_all().map_err(|e| io_err(path, e))
}

/// Progress of a long step — embedding a snapshot, the steps of `govcat eval` (a progress bar
/// on the CLI, nothing in tests).
pub trait Progress {
    /// A step named `what` of `total` units begins.
    fn start(&self, what: &str, total: u64);
    fn advance(&self, n: u64);
    fn finish(&self);
}

/// The embedding step's name, as a progress bar shows it.
const EMBEDDING_STEP: &str = "embedding texts of columns and ontology values";

/// No progress output.
pub struct Quiet;
impl Progress for Quiet {
    fn start(&self, _: &str, _: u64) {}
    fn advance(&self, _: u64) {}
    fn finish(&self) {}
}

/// Reads the whole catalog and the ontology into documents, in a deterministic order.
pub fn collect_documents(
    ontology: &Ontology,
    source: &dyn CatalogSource,
) -> Result<(Vec<Document>, Counts), IndexError> {
    let caller = Caller::local();
    let mut docs = documents::ontology_documents(ontology);
    let ontology_values = docs.len();
    let domains = source.list_domains(&caller)?;
    let mut tables = 0;
    let mut unreadable_tables = Vec::new();
    for d in &domains {
        let (datasets, unreadable) = read_domain(source, &caller, &d.name)?;
        tables += datasets.len();
        for u in unreadable {
            unreadable_tables.push(crate::catalog::Unreadable {
                table: format!("{}.{}", d.name, u.table),
                reason: u.reason,
            });
        }
        for ds in &datasets {
            docs.extend(documents::column_documents(ds));
        }
    }
    let glossary = ontology.glossary().map_err(|problem| IndexError::Corrupt {
        file: glossary::GLOSSARY_FILE.to_string(),
        problem,
    })?;
    expand_documents(&mut docs, &glossary);
    let counts = Counts {
        documents: docs.len(),
        columns: docs.len() - ontology_values,
        ontology_values,
        domains: domains.len(),
        tables,
        unreadable_tables,
    };
    Ok((docs, counts))
}

/// Documents per `embed_batch` call while building a snapshot.
const EMBED_BATCH: usize = 64;

/// The texts the model embeds for a document: `dense_text`, and `dense_table_text` when the
/// column's table has a description. A column means what its table makes it mean ("status" of
/// a claim, "amount" of a payout), but a table's description also pulls every column of the
/// table towards it; the mean of both embeddings keeps the column's own meaning and adds its
/// table's. Measured with the quality bench (held-out queries): dense R@5 0.792 -> 0.823 and
/// nDCG@10 0.700 -> 0.726; hybrid at the same fusion R@5 0.857 -> 0.878, nDCG@10 0.788 -> 0.795.
/// The table text alone gave hybrid R@5 0.882 but lost MRR and put
/// `customer.country_reference.iban_length` first for "contains an EU IBAN".
pub fn embedded_texts(d: &Document) -> impl Iterator<Item = &str> {
    texts_of(&d.dense_text, d.dense_table_text.as_deref())
}

fn texts_of<'a>(
    dense_text: &'a str,
    dense_table_text: Option<&'a str>,
) -> impl Iterator<Item = &'a str> {
    std::iter::once(dense_text).chain(dense_table_text)
}

/// How many texts the model embeds for `docs`.
fn text_count<'a>(docs: impl IntoIterator<Item = &'a Document>) -> u64 {
    docs.into_iter()
        .map(|d| embedded_texts(d).count() as u64)
        .sum()
}

/// Embeds documents in batches, reporting progress.
pub fn embed_documents(
    embedder: &dyn Embedder,
    docs: &[Document],
    progress: &dyn Progress,
) -> Result<Vectors, IndexError> {
    let all: Vec<usize> = (0..docs.len()).collect();
    let mut data = vec![0f32; docs.len() * embedder.dimension()];
    progress.start(EMBEDDING_STEP, text_count(docs));
    embed_rows(embedder, docs, &all, &mut data, progress)?;
    progress.finish();
    Ok(Vectors {
        dim: embedder.dimension(),
        data,
    })
}

/// Embeds the documents `which` (indices into `docs`) into their rows of `data`: each row is
/// the normalised mean of the document's [`embedded_texts`]. Texts are embedded in batches of
/// similar length, since a batch pads to its longest text: on the demo catalog (1,467 texts,
/// release, 2 cores) peak RSS 342 MB instead of 406 MB, at the same 28 s.
/// Progress counts texts.
fn embed_rows(
    embedder: &dyn Embedder,
    docs: &[Document],
    which: &[usize],
    data: &mut [f32],
    progress: &dyn Progress,
) -> Result<(), IndexError> {
    let dim = embedder.dimension();
    let mut texts: Vec<(usize, &str)> = which
        .iter()
        .flat_map(|&i| embedded_texts(&docs[i]).map(move |t| (i, t)))
        .collect();
    texts.sort_by_key(|(_, t)| t.len());
    for &i in which {
        data[i * dim..(i + 1) * dim].fill(0.0);
    }
    for chunk in texts.chunks(EMBED_BATCH) {
        let batch: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
        let embedded = embedder.embed_batch(&batch)?;
        if embedded.len() != batch.len() || embedded.iter().any(|v| v.len() != dim) {
            return Err(EmbedError::Inference(format!(
                "the model returned {} vectors for {} texts",
                embedded.len(),
                batch.len()
            ))
            .into());
        }
        for ((i, _), v) in chunk.iter().zip(embedded) {
            data[i * dim..(i + 1) * dim]
                .iter_mut()
                .zip(&v)
                .for_each(|(r, x)| *r += x);
        }
        progress.advance(chunk.len() as u64);
    }
    for &i in which {
        if embedded_texts(&docs[i]).count() > 1 {
            crate::embed::l2_normalise(&mut data[i * dim..(i + 1) * dim]);
        }
    }
    Ok(())
}

fn model_info(embedder: &dyn Embedder) -> ModelInfo {
    ModelInfo {
        id: embedder.model_id().to_string(),
        dimension: embedder.dimension(),
        checksum: embedder.checksum().to_string(),
    }
}

/// Fills every document's [`Document::expansion`]: the glossary's English terms for its German
/// words and abbreviations, then the parts of the run-together words of its name split against
/// the documents' own vocabulary ([`crate::text::split_run_together`]). The model reads English:
/// a column's expansion is also appended to the texts it embeds.
pub fn expand_documents(docs: &mut [Document], glossary: &glossary::Glossary) {
    let mut vocabulary: HashMap<String, u64> = HashMap::new();
    for d in docs.iter() {
        let mut tokens = lexical::stemmed(&d.lexical_text);
        tokens.sort();
        tokens.dedup();
        for t in tokens {
            *vocabulary.entry(t).or_default() += 1;
        }
    }
    let freq = |word: &str| match lexical::stemmed(word).as_slice() {
        [token] => vocabulary.get(token).copied().unwrap_or(0),
        _ => 0,
    };
    for d in docs.iter_mut() {
        let mut expansion = glossary.expand(&d.lexical_text);
        let written = crate::text::words(&d.lexical_text);
        let mut name_expansion = glossary.expand(&d.name_text);
        // Identifiers run words together; descriptions are prose, whose words are words
        // (`separate` is not `sepa` + `rate`).
        for e in [&mut expansion, &mut name_expansion] {
            crate::text::push_run_together_parts(
                e,
                &crate::text::words(&d.name_text),
                &written,
                freq,
            );
        }
        d.name_expansion = name_expansion;
        if d.kind == Kind::Column && !expansion.is_empty() {
            let english = expansion.join(" ");
            d.dense_text = format!("{} ({english})", d.dense_text);
            if let Some(t) = &mut d.dense_table_text {
                *t = format!("{t} ({english})");
            }
        }
        d.expansion = expansion;
    }
}

/// Writes a snapshot of `docs`/`vectors` under `index_dir/snapshots/` and publishes it as
/// `CURRENT`. Returns its id. The snapshot is complete and fsynced before `CURRENT` moves.
pub fn write_snapshot(
    index_dir: &Path,
    docs: &[Document],
    vectors: &Vectors,
    counts: Counts,
    source_freshness: SourceFreshness,
    model: ModelInfo,
    ontology_version: &str,
) -> Result<String, IndexError> {
    write_snapshot_with_glossary(
        index_dir,
        docs,
        vectors,
        counts,
        source_freshness,
        model,
        ontology_version,
        None,
        None,
        BuiltFrom::default(),
        None,
    )
}

/// Fits the calibration map of a snapshot that is complete but not yet published: given its
/// staging directory (loadable with [`load`]), returns the map to store as [`CALIBRATION`].
/// The index layer cannot run `suggest_tags`; `app::calibrator` supplies this.
pub type Calibrate<'a> = dyn Fn(&Path) -> Result<crate::calibration::Map, IndexError> + 'a;

/// What a snapshot records of the catalog and ontology it was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltFrom {
    pub source: Option<SourceIdentity>,
    pub ontology_checksum: Option<String>,
}

/// [`write_snapshot`] that also stores the query-expansion glossary and abbreviation lexicon
/// in the snapshot.
#[allow(clippy::too_many_arguments)]
pub fn write_snapshot_with_glossary(
    index_dir: &Path,
    docs: &[Document],
    vectors: &Vectors,
    counts: Counts,
    source_freshness: SourceFreshness,
    model: ModelInfo,
    ontology_version: &str,
    glossary_text: Option<&str>,
    abbreviations_text: Option<&str>,
    built_from: BuiltFrom,
    calibrate: Option<&Calibrate>,
) -> Result<String, IndexError> {
    let snapshots = index_dir.join("snapshots");
    fs::create_dir_all(&snapshots).map_err(|e| io_err(&snapshots, e))?;
    let now = SystemTime::now();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let id = format!(
        "{}-{:08x}",
        format_rfc3339(now).replace([':', '-'], ""),
        nanos ^ std::process::id()
    );
    let staging = snapshots.join(format!(".staging-{id}"));
    fs::create_dir_all(staging.join(TANTIVY)).map_err(|e| io_err(&staging, e))?;

    let doc_bytes = serde_json::to_vec(docs).map_err(|e| io_err(&staging, e))?;
    write_file(&staging.join(DOCUMENTS), &doc_bytes)?;
    write_file(&staging.join(VECTORS), &vectors.to_bytes())?;
    // Refuse a malformed glossary before publishing it.
    glossary::Glossary::from_texts(glossary_text, abbreviations_text).map_err(|problem| {
        IndexError::Corrupt {
            file: "glossary".to_string(),
            problem,
        }
    })?;
    if let Some(text) = glossary_text {
        write_file(&staging.join(GLOSSARY), text.as_bytes())?;
    }
    if let Some(text) = abbreviations_text {
        write_file(&staging.join(ABBREVIATIONS), text.as_bytes())?;
    }
    lexical::build(&staging.join(TANTIVY), docs)?;
    let dense_backend = dense::choose_backend(docs.len());
    if dense_backend == Backend::Hnsw {
        dense::build_hnsw(&staging, vectors)?;
    }
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        id: id.clone(),
        built_at: format_rfc3339(now),
        source_freshness,
        model,
        ontology_version: ontology_version.to_string(),
        source: built_from.source,
        ontology_checksum: built_from.ontology_checksum,
        dense_backend,
        counts,
        files: checksums(&staging)?,
    };
    let mut manifest = manifest;
    let manifest_bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| io_err(&staging, e))?;
    write_file(&staging.join(MANIFEST), &manifest_bytes)?;
    if let Some(calibrate) = calibrate {
        let map = calibrate(&staging)?;
        let bytes = serde_json::to_vec_pretty(&map).map_err(|e| io_err(&staging, e))?;
        write_file(&staging.join(CALIBRATION), &bytes)?;
        manifest.files = checksums(&staging)?;
        let manifest_bytes =
            serde_json::to_vec_pretty(&manifest).map_err(|e| io_err(&staging, e))?;
        write_file(&staging.join(MANIFEST), &manifest_bytes)?;
    }
    fsync_dir(&staging);

    let final_dir = snapshots.join(&id);
    fs::rename(&staging, &final_dir).map_err(|e| io_err(&final_dir, e))?;
    fsync_dir(&snapshots);
    set_current(index_dir, &id)?;
    Ok(id)
}

/// Points `index_dir/CURRENT` at the complete snapshot `snapshots/<id>/` (written to a
/// temporary file, then renamed over `CURRENT`) and removes leftovers and old snapshots.
pub fn set_current(index_dir: &Path, id: &str) -> Result<(), IndexError> {
    let tmp = index_dir.join(format!(".CURRENT.{id}"));
    write_file(&tmp, format!("{id}\n").as_bytes())?;
    fs::rename(&tmp, index_dir.join("CURRENT"))
        .map_err(|e| io_err(&index_dir.join("CURRENT"), e))?;
    fsync_dir(index_dir);
    prune(index_dir, &index_dir.join("snapshots"), id);
    Ok(())
}

/// Removes leftovers of crashed builds (staging directories, `.CURRENT.<id>` files written but
/// never renamed) and all but the newest few snapshots.
fn prune(index_dir: &Path, snapshots: &Path, current: &str) {
    if let Ok(entries) = fs::read_dir(index_dir) {
        for e in entries.flatten() {
            if e.file_name().to_string_lossy().starts_with(".CURRENT.") {
                let _ = fs::remove_file(e.path());
            }
        }
    }
    let Ok(entries) = fs::read_dir(snapshots) else {
        return;
    };
    let mut finished: Vec<String> = Vec::new();
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(".staging-") {
            if !name.ends_with(current) {
                let _ = fs::remove_dir_all(e.path());
            }
        } else if name != current {
            finished.push(name);
        }
    }
    finished.sort();
    let excess = finished.len().saturating_sub(KEEP_PREVIOUS);
    for name in finished.into_iter().take(excess) {
        let _ = fs::remove_dir_all(snapshots.join(name));
    }
}

/// Builds a snapshot from the catalog and publishes it. Returns the manifest.
///
/// Embeddings of documents whose embedded text is unchanged since the published snapshot are
/// reused from it (see [`build_reporting`]); only new or changed documents go through the model.
pub fn build(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<Manifest, IndexError> {
    build_reporting(index_dir, ontology, source, embedder, progress).map(|(m, _)| m)
}

/// How a build obtained its document vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EmbedReport {
    /// Documents run through the model (new, changed, or no reusable snapshot).
    pub embedded: usize,
    /// Documents whose vector was copied from the published snapshot.
    pub reused: usize,
}

/// [`build`], also saying how many documents were embedded and how many vectors were reused.
///
/// A rebuild re-reads the whole catalog, but most documents' embedded text (`dense_text`) is
/// what the published snapshot (`CURRENT`) already embedded. Its vectors are reused when the
/// snapshot was built by the same model (id, dimension and weights checksum) in this format and
/// its `documents.json` and `vectors.f32` match their manifest checksums; each vector is keyed
/// by a hash of the model and the exact text. Anything else — no snapshot, another model, a
/// corrupt file — embeds every document, as a first build does.
pub fn build_reporting(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<(Manifest, EmbedReport), IndexError> {
    build_calibrated(index_dir, ontology, source, embedder, progress, false, None)
}

/// Share of the published snapshot's columns an unattended rebuild may lose and still publish.
pub const MAX_UNATTENDED_LOSS: f64 = 0.10;

/// [`build`] for rebuilds nobody watches (`serve --refresh` and `--watch`): a catalog read that
/// has more than [`MAX_UNATTENDED_LOSS`] fewer columns than the published snapshot is not
/// published (`SnapshotShrunk`), because a source that answers partially (an upstream
/// restarting, a permission withdrawn mid-read) looks exactly like that. `govcat index`
/// publishes a smaller catalog deliberately.
pub fn build_unattended(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
) -> Result<Manifest, IndexError> {
    build_calibrated(index_dir, ontology, source, embedder, &Quiet, true, None).map(|(m, _)| m)
}

/// [`build_reporting`] (or, `unattended`, [`build_unattended`]) that also fits the snapshot's
/// calibration map with `calibrate` before publishing it (`govcat index`, `serve --refresh`).
pub fn build_calibrated(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
    unattended: bool,
    calibrate: Option<&Calibrate>,
) -> Result<(Manifest, EmbedReport), IndexError> {
    let (docs, counts) = collect_documents(ontology, source)?;
    if unattended {
        refuse_shrunk(index_dir, &counts)?;
    }
    let model = model_info(embedder);
    let previous = match PreviousEmbeddings::load(index_dir, &model) {
        Ok(previous) => previous,
        Err(reason) => {
            tracing::info!(%reason, "embedding every document: no reusable snapshot vectors");
            None
        }
    };
    let (vectors, report) = embed_documents_reusing(embedder, &docs, previous.as_ref(), progress)?;
    tracing::info!(
        embedded = report.embedded,
        reused = report.reused,
        "snapshot document vectors"
    );
    let id = write_snapshot_with_glossary(
        index_dir,
        &docs,
        &vectors,
        counts,
        source.freshness(),
        model,
        &ontology.version,
        ontology.glossary_text.as_deref(),
        ontology.abbreviations_text.as_deref(),
        BuiltFrom {
            source: Some(source.identity()),
            ontology_checksum: Some(ontology.checksum()),
        },
        calibrate,
    )?;
    Ok((
        read_manifest(&index_dir.join("snapshots").join(id))?,
        report,
    ))
}

/// The key of one document vector: the model (id, dimension, weights) and the exact texts it
/// embeds, each length-prefixed so no two lists of texts share a key.
fn embedding_key<'a>(model: &ModelInfo, texts: impl Iterator<Item = &'a str>) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(model.id.as_bytes());
    part(model.dimension.to_string().as_bytes());
    part(model.checksum.as_bytes());
    texts.for_each(|t| part(t.as_bytes()));
    h.finalize().into()
}

/// The vectors of the published snapshot, by [`embedding_key`].
struct PreviousEmbeddings {
    vectors: Vectors,
    rows: std::collections::HashMap<[u8; 32], usize>,
    model: ModelInfo,
}

impl PreviousEmbeddings {
    /// `Ok(None)` when nothing is published; `Err` says why published vectors are not reusable.
    fn load(index_dir: &Path, model: &ModelInfo) -> Result<Option<PreviousEmbeddings>, String> {
        /// Only the embedded texts of a stored document (other fields may change shape).
        #[derive(Deserialize)]
        struct DenseText {
            dense_text: String,
            #[serde(default)]
            dense_table_text: Option<String>,
        }
        if !index_dir.join("CURRENT").exists() {
            return Ok(None);
        }
        let dir = index_dir
            .join("snapshots")
            .join(current_id(index_dir).map_err(|e| e.to_string())?);
        let manifest = read_manifest(&dir).map_err(|e| e.to_string())?;
        if manifest.format_version != FORMAT_VERSION {
            return Err(format!("snapshot format {}", manifest.format_version));
        }
        if &manifest.model != model {
            return Err(format!("built with model {}", manifest.model.id));
        }
        let verified = |name: &str| -> Result<Vec<u8>, String> {
            let path = dir.join(name);
            let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let sum = format!("{:x}", Sha256::digest(&bytes));
            match manifest.files.get(name) {
                Some(expected) if *expected == sum => Ok(bytes),
                _ => Err(format!("{} does not match its manifest", path.display())),
            }
        };
        let docs: Vec<DenseText> =
            serde_json::from_slice(&verified(DOCUMENTS)?).map_err(|e| e.to_string())?;
        let vectors = Vectors::from_bytes(&verified(VECTORS)?, model.dimension, VECTORS)
            .map_err(|e| e.to_string())?;
        if vectors.len() != docs.len() {
            return Err(format!(
                "{} vectors for {} documents",
                vectors.len(),
                docs.len()
            ));
        }
        let rows = docs
            .iter()
            .enumerate()
            .map(|(row, d)| {
                let texts = texts_of(&d.dense_text, d.dense_table_text.as_deref());
                (embedding_key(model, texts), row)
            })
            .collect();
        Ok(Some(PreviousEmbeddings {
            vectors,
            rows,
            model: model.clone(),
        }))
    }

    fn get(&self, d: &Document) -> Option<&[f32]> {
        self.rows
            .get(&embedding_key(&self.model, embedded_texts(d)))
            .map(|&row| self.vectors.row(row))
    }
}

/// [`embed_documents`] that copies the vectors `previous` holds for unchanged texts and embeds
/// only the rest (in batches). Progress counts texts; reused ones advance at once.
fn embed_documents_reusing(
    embedder: &dyn Embedder,
    docs: &[Document],
    previous: Option<&PreviousEmbeddings>,
    progress: &dyn Progress,
) -> Result<(Vectors, EmbedReport), IndexError> {
    let Some(previous) = previous else {
        let vectors = embed_documents(embedder, docs, progress)?;
        let report = EmbedReport {
            embedded: docs.len(),
            reused: 0,
        };
        return Ok((vectors, report));
    };
    let dim = embedder.dimension();
    let mut data = vec![0f32; docs.len() * dim];
    let mut missing = Vec::new();
    for (i, d) in docs.iter().enumerate() {
        match previous.get(d) {
            Some(v) => data[i * dim..(i + 1) * dim].copy_from_slice(v),
            None => missing.push(i),
        }
    }
    let report = EmbedReport {
        embedded: missing.len(),
        reused: docs.len() - missing.len(),
    };
    let total = text_count(docs);
    progress.start(EMBEDDING_STEP, total);
    progress.advance(total - text_count(missing.iter().map(|&i| &docs[i])));
    embed_rows(embedder, docs, &missing, &mut data, progress)?;
    progress.finish();
    Ok((Vectors { dim, data }, report))
}

/// `SnapshotShrunk` when `counts` has more than [`MAX_UNATTENDED_LOSS`] fewer columns than the
/// published snapshot (none published, or unreadable: nothing to compare, no refusal).
fn refuse_shrunk(index_dir: &Path, counts: &Counts) -> Result<(), IndexError> {
    let Ok(id) = current_id(index_dir) else {
        return Ok(());
    };
    let Ok(published) = read_manifest(&index_dir.join("snapshots").join(&id)) else {
        return Ok(());
    };
    let floor = published.counts.columns as f64 * (1.0 - MAX_UNATTENDED_LOSS);
    if (counts.columns as f64) < floor {
        return Err(IndexError::Shrunk {
            published: id,
            published_columns: published.counts.columns,
            columns: counts.columns,
        });
    }
    Ok(())
}

/// Reads `dir/manifest.json`.
pub fn read_manifest(dir: &Path) -> Result<Manifest, IndexError> {
    let path = dir.join(MANIFEST);
    let bytes = fs::read(&path).map_err(|e| IndexError::Corrupt {
        file: path.display().to_string(),
        problem: e.to_string(),
    })?;
    serde_json::from_slice(&bytes).map_err(|e| IndexError::Corrupt {
        file: path.display().to_string(),
        problem: e.to_string(),
    })
}

/// The id `CURRENT` points at.
pub fn current_id(index_dir: &Path) -> Result<String, IndexError> {
    let path = index_dir.join("CURRENT");
    let text = fs::read_to_string(&path).map_err(|_| IndexError::NoSnapshot {
        dir: index_dir.display().to_string(),
    })?;
    parse_snapshot_id(&text).ok_or_else(|| IndexError::Corrupt {
        file: path.display().to_string(),
        problem: format!("'{}' is not a snapshot id", text.trim()),
    })
}

/// The snapshot id a `CURRENT` file holds, if it is one (letters, digits and `-` only, so it
/// is safe as a path component and an object key).
pub fn parse_snapshot_id(text: &str) -> Option<String> {
    let id = text.trim();
    let safe = !id.is_empty() && id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-');
    safe.then(|| id.to_string())
}

/// Loads the snapshot `CURRENT` names, verifying model and checksums.
pub fn load_current(index_dir: &Path, embedder: &dyn Embedder) -> Result<Snapshot, IndexError> {
    let id = current_id(index_dir)?;
    let dir = index_dir.join("snapshots").join(&id);
    if !dir.is_dir() {
        return Err(IndexError::Corrupt {
            file: index_dir.join("CURRENT").display().to_string(),
            problem: format!(
                "it names snapshot {id}, which is not in {}",
                index_dir.join("snapshots").display()
            ),
        });
    }
    load(&dir, embedder)
}

/// Loads one snapshot directory, verifying model and checksums.
pub fn load(dir: &Path, embedder: &dyn Embedder) -> Result<Snapshot, IndexError> {
    let manifest = read_manifest(dir)?;
    check_compatible(
        &manifest,
        embedder,
        &dir.join(MANIFEST).display().to_string(),
    )?;
    load_checked(dir, manifest)
}

/// Refuses a manifest of another snapshot format or embedding model than this govcat's
/// (`file` names the manifest in the message).
pub fn check_compatible(
    manifest: &Manifest,
    embedder: &dyn Embedder,
    file: &str,
) -> Result<(), IndexError> {
    if manifest.format_version != FORMAT_VERSION {
        return Err(IndexError::Corrupt {
            file: file.to_string(),
            problem: format!(
                "snapshot format {} is not the format {FORMAT_VERSION} this govcat reads",
                manifest.format_version
            ),
        });
    }
    let running = model_info(embedder);
    if manifest.model != running {
        return Err(IndexError::ModelMismatch {
            id: manifest.id.clone(),
            built: format!(
                "{} ({} dims, sha256 {})",
                manifest.model.id, manifest.model.dimension, manifest.model.checksum
            ),
            running: format!(
                "{} ({} dims, sha256 {})",
                running.id, running.dimension, running.checksum
            ),
        });
    }
    Ok(())
}

fn load_checked(dir: &Path, manifest: Manifest) -> Result<Snapshot, IndexError> {
    let actual = checksums(dir)?;
    for (file, expected) in &manifest.files {
        match actual.get(file) {
            Some(sum) if sum == expected => {}
            Some(_) => {
                return Err(IndexError::Corrupt {
                    file: dir.join(file).display().to_string(),
                    problem: "sha256 differs from the manifest".into(),
                })
            }
            None => {
                return Err(IndexError::Corrupt {
                    file: dir.join(file).display().to_string(),
                    problem: "missing".into(),
                })
            }
        }
    }
    if let Some(extra) = actual.keys().find(|f| !manifest.files.contains_key(*f)) {
        return Err(IndexError::Corrupt {
            file: dir.join(extra).display().to_string(),
            problem: "not listed in the manifest".into(),
        });
    }
    let doc_path = dir.join(DOCUMENTS);
    let docs: Vec<Document> = serde_json::from_slice(
        &fs::read(&doc_path).map_err(|e| io_err(&doc_path, e))?,
    )
    .map_err(|e| IndexError::Corrupt {
        file: doc_path.display().to_string(),
        problem: e.to_string(),
    })?;
    let vec_path = dir.join(VECTORS);
    let vectors = Vectors::from_bytes(
        &fs::read(&vec_path).map_err(|e| io_err(&vec_path, e))?,
        manifest.model.dimension,
        &vec_path.display().to_string(),
    )?;
    if vectors.len() != docs.len() {
        return Err(IndexError::Corrupt {
            file: vec_path.display().to_string(),
            problem: format!("{} vectors for {} documents", vectors.len(), docs.len()),
        });
    }
    let lexical = lexical::Lexical::open(&dir.join(TANTIVY))?;
    if lexical.num_docs() != docs.len() as u64 {
        return Err(IndexError::Corrupt {
            file: dir.join(TANTIVY).display().to_string(),
            problem: format!(
                "{} indexed documents for {} documents",
                lexical.num_docs(),
                docs.len()
            ),
        });
    }
    let dense = match manifest.dense_backend {
        Backend::Exact => Dense::exact(vectors),
        Backend::Hnsw => Dense::with_hnsw(vectors, dir)?,
    };
    let read_optional = |name: &str| -> Result<Option<String>, IndexError> {
        let path = dir.join(name);
        if !path.exists() {
            return Ok(None);
        }
        fs::read_to_string(&path)
            .map(Some)
            .map_err(|e| io_err(&path, e))
    };
    let glossary = glossary::Glossary::from_texts(
        read_optional(GLOSSARY)?.as_deref(),
        read_optional(ABBREVIATIONS)?.as_deref(),
    )
    .map_err(|problem| IndexError::Corrupt {
        file: dir.display().to_string(),
        problem,
    })?;
    let calibration = match read_optional(CALIBRATION)? {
        Some(text) => Some(
            serde_json::from_str(&text).map_err(|e| IndexError::Corrupt {
                file: dir.join(CALIBRATION).display().to_string(),
                problem: format!("not a calibration map: {e}"),
            })?,
        ),
        None => None,
    };
    let mut domains: Vec<String> = docs.iter().filter_map(|d| d.domain.clone()).collect();
    domains.sort();
    domains.dedup();
    let scopes = Scopes::of_docs(&docs);
    Ok(Snapshot {
        manifest,
        domains,
        scopes,
        docs,
        lexical,
        dense,
        glossary,
        queries_run: AtomicU64::new(0),
        searched: Mutex::new(Default::default()),
        calibration,
    })
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

    fn publish(dir: &Path, docs: &[Document], vectors: &Vectors, model: &ModelInfo) {
        let counts = Counts {
            documents: docs.len(),
            columns: 0,
            ontology_values: docs.len(),
            domains: 0,
            tables: 0,
            unreadable_tables: Vec::new(),
        };
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
        let (second, report) =
            embed_documents_reusing(&embedder, &docs, Some(&previous), &Quiet).expect("embed");

        assert_eq!(
            *embedder.texts.lock().unwrap(),
            vec![docs[3].dense_text.clone()]
        );
        assert_eq!(
            report,
            EmbedReport {
                embedded: 1,
                reused: docs.len() - 1
            }
        );
        for i in (0..docs.len()).filter(|&i| i != 3) {
            assert_eq!(second.row(i), first.row(i), "row {i} copied unchanged");
        }
        assert_ne!(second.row(3), first.row(3));
    }

    #[test]
    fn vectors_of_another_model_or_a_corrupt_file_are_not_reused() {
        let index = tempfile::tempdir().expect("tempdir");
        let embedder = HashEmbedder::new(32);
        let docs = ontology_docs();
        let vectors = embed_documents(&embedder, &docs, &Quiet).expect("embed");
        publish(index.path(), &docs, &vectors, &model_info(&embedder));

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
