//! The snapshot on disk: its files and manifest, checksums, publishing (`CURRENT`, pruning
//! old snapshots) and loading with every check (format, model, checksums).

use super::codes::Codes;
use super::*;

/// The manifest's file name inside a snapshot directory.
pub const MANIFEST: &str = "manifest.json";
pub const DOCUMENTS: &str = "documents.json";
pub const VECTORS: &str = "vectors.f32";
/// Per document of documents.json, its JSON's length and a hash ([`super::reuse`]): what a
/// follower needs to copy unchanged documents from its local snapshot. Absent in snapshots
/// written before it existed (the follower then downloads documents.json whole).
pub const DOCUMENT_ROWS: &str = "documents.rows";
pub(super) const TANTIVY: &str = "tantivy";
pub(super) const GLOSSARY: &str = "glossary.tsv";
pub(super) const ABBREVIATIONS: &str = "abbreviations.tsv";
/// The calibrated-confidence map (`crate::calibration::Map`), when the build fitted one.
pub const CALIBRATION: &str = "calibration.json";
/// Snapshots kept besides the current one (older ones are removed after a publish).
pub(super) const KEEP_PREVIOUS: usize = 2;

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
/// 8: the HNSW graph is govcat's compact `dense.graph` (`index::graph`), not hnsw_rs's dump;
///    documents.json and vectors.f32 are unchanged, so a build reuses a format-7 snapshot's
///    vectors (`PreviousEmbeddings`).
/// 9: calibration.json's map weighs a third feature, the best precedent_confidence
///    (`calibration::FEATURES`); documents.json and vectors.f32 are unchanged.
/// 10: calibration.json's map weighs a fourth feature, `name_match`; documents.json and
///    vectors.f32 are unchanged.
pub const FORMAT_VERSION: u32 = 10;
/// Older formats whose `documents.json` and `vectors.f32` read as this one's.
pub(super) const VECTORS_COMPATIBLE_SINCE: u32 = 7;

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
    /// How the HNSW graph was made (`hnsw` backend only; absent before govcat recorded it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub graph: Option<dense::GraphBuild>,
    pub counts: Counts,
    /// sha256 of every file of the snapshot (paths relative to the snapshot directory).
    pub files: BTreeMap<String, String>,
}

pub(super) fn walk_files(
    root: &Path,
    dir: &Path,
    out: &mut Vec<PathBuf>,
) -> Result<(), IndexError> {
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

pub(super) fn checksums(dir: &Path) -> Result<BTreeMap<String, String>, IndexError> {
    let mut files = Vec::new();
    walk_files(dir, dir, &mut files)?;
    let mut out = BTreeMap::new();
    for rel in files {
        let sum = sha256_file(&dir.join(&rel)).map_err(|e| io_err(&dir.join(&rel), e))?;
        out.insert(rel.to_string_lossy().replace('\\', "/"), sum);
    }
    Ok(out)
}

pub(super) fn fsync_dir(dir: &Path) {
    if let Ok(f) = fs::File::open(dir) {
        let _ = f.sync_all();
    }
}

pub(super) fn write_file(path: &Path, bytes: &[u8]) -> Result<(), IndexError> {
    let mut f = fs::File::create(path).map_err(|e| io_err(path, e))?;
    f.write_all(bytes).map_err(|e| io_err(path, e))?;
    f.sync_all().map_err(|e| io_err(path, e))
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
pub(super) fn prune(index_dir: &Path, snapshots: &Path, current: &str) {
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
        return Err(IndexError::FormatMismatch {
            file: file.to_string(),
            found: manifest.format_version,
            reads: FORMAT_VERSION,
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

/// The documents of `documents.json`, parsed from a read-only mapping of the file (no heap copy
/// of its bytes) into a list sized for the manifest's count (no regrowth: at 1M columns the
/// list is ~0.4 GB, and growing it by doubling copied and zeroed twice that).
fn read_documents(path: &Path, expected: usize) -> Result<Vec<Document>, IndexError> {
    let file = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let len = file.metadata().map_err(|e| io_err(path, e))?.len();
    let corrupt = |problem: String| IndexError::Corrupt {
        file: path.display().to_string(),
        problem,
    };
    // SAFETY: a published snapshot's files are never written again (see `Vectors::map`); the
    // mapping lives only for this parse, and the checksum verified beside it refuses a file
    // that is not the one the manifest lists.
    let bytes: &[u8] = &match len {
        0 => return Err(corrupt("empty".into())),
        _ => unsafe { memmap2::Mmap::map(&file) }.map_err(|e| io_err(path, e))?,
    };
    // A document takes more than 16 bytes of JSON, so a manifest count above that is not
    // believed for the reservation (the parse then counts for itself).
    let capacity = expected.min(bytes.len() / 16);
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let docs = documents::sharing_tags(|| {
        serde::de::DeserializeSeed::deserialize(SizedList::<Document>::new(capacity), &mut de)
            .and_then(|docs| de.end().map(|()| docs))
    })
    .map_err(|e| corrupt(e.to_string()))?;
    Ok(docs)
}

/// A JSON array deserialised into a `Vec` reserved for `capacity` elements up front.
struct SizedList<T> {
    capacity: usize,
    element: std::marker::PhantomData<T>,
}

impl<T> SizedList<T> {
    fn new(capacity: usize) -> Self {
        Self {
            capacity,
            element: std::marker::PhantomData,
        }
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::DeserializeSeed<'de> for SizedList<T> {
    type Value = Vec<T>;
    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Vec<T>, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de, T: serde::Deserialize<'de>> serde::de::Visitor<'de> for SizedList<T> {
    type Value = Vec<T>;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a list of documents")
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        let mut out = Vec::with_capacity(self.capacity);
        while let Some(item) = seq.next_element()? {
            out.push(item);
        }
        Ok(out)
    }
}

/// What a scoped thread returned; its panic goes on in this thread.
fn joined<T>(thread: std::thread::ScopedJoinHandle<'_, T>) -> T {
    thread
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

pub(super) fn load_checked(dir: &Path, manifest: Manifest) -> Result<Snapshot, IndexError> {
    // The checksums (every byte of the snapshot) are computed on a second thread while this one
    // parses the documents: at 1M columns 2.5 GB hashed beside 0.9 GB of JSON parsed; a graph's
    // coded rows are read from the vectors on a third. A checksum that differs is reported
    // before anything the parse found.
    let vec_path = dir.join(VECTORS);
    let dim = manifest.model.dimension;
    let (actual, docs, codes) = std::thread::scope(|s| {
        let sums = s.spawn(|| checksums(dir));
        let codes = (manifest.dense_backend == Backend::Hnsw)
            .then(|| s.spawn(|| Codes::read(&vec_path, dim)));
        let docs = read_documents(&dir.join(DOCUMENTS), manifest.counts.documents);
        (joined(sums), docs, codes.map(joined))
    });
    let actual = actual?;
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
    let docs = docs?;
    let vectors = match codes {
        Some(codes) => Err(codes?),
        None => Ok(Vectors::map(&vec_path, dim)?),
    };
    let count = vectors.as_ref().map_or_else(Codes::len, Vectors::len);
    if count != docs.len() {
        return Err(IndexError::Corrupt {
            file: vec_path.display().to_string(),
            problem: format!("{count} vectors for {} documents", docs.len()),
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
    // A graph walks coded rows; the exact scan reads the mapped vectors.
    let dense = match vectors {
        Ok(vectors) => Dense::exact(vectors),
        Err(codes) => Dense::with_hnsw_coded(codes, &vec_path, dir)?,
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
        names: Default::default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(dir: &Path, text: &[u8]) -> std::path::PathBuf {
        let path = dir.join(DOCUMENTS);
        fs::write(&path, text).expect("write documents.json");
        path
    }

    #[test]
    fn documents_parse_whatever_count_the_manifest_claims() {
        let dir = tempfile::tempdir().expect("tempdir");
        let docs = vec![
            Document::bare("column:a.t.iban", documents::Kind::Column),
            Document::bare("column:a.t.bic", documents::Kind::Column),
        ];
        let path = written(dir.path(), &serde_json::to_vec(&docs).expect("json"));
        for claimed in [0, 2, 1_000_000_000] {
            let read = read_documents(&path, claimed).expect("parse");
            let ids: Vec<&str> = read.iter().map(|d| d.id.as_str()).collect();
            assert_eq!(
                ids,
                ["column:a.t.iban", "column:a.t.bic"],
                "claimed {claimed}"
            );
        }
    }

    #[test]
    fn empty_or_trailing_bytes_are_a_corrupt_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        for (text, problem) in [
            (&b""[..], "empty"),
            (&b"[] []"[..], "trailing characters at line 1 column 4"),
        ] {
            let path = written(dir.path(), text);
            match read_documents(&path, 0) {
                Err(IndexError::Corrupt { file, problem: p }) => {
                    assert_eq!((file, p.as_str()), (path.display().to_string(), problem))
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }
}
