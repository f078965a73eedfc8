//! A first build spread over machines: `govcat index --slice I/N` embeds slice I of the
//! catalog's documents into one slice file; a later build (`govcat index --slices-from`)
//! reads every slice file in `--index`/[`SLICES_DIR`] as a source of vectors beside the
//! published snapshot and embeds only the texts no slice holds.
//!
//! A document belongs to slice `key mod N`, its key being the [`embedding_key`] of the model
//! and the exact texts it embeds. So every slice job may read the catalog at its own time: a
//! text lands in one slice whatever else the catalog holds, and a vector is found again only
//! for the very text it was embedded from (a text changed since is embedded by the merge).
//!
//! A slice file is `GCSLICE1`, a little-endian `u32` header length, the JSON [`SliceHeader`],
//! then per vector its 32-byte key and `dimension` little-endian `f32`, then the sha256 of
//! everything before it.

use std::io::{BufReader, BufWriter, Read};

use super::build::{embed_rows, embedding_key, model_info, EMBEDDING_STEP};
use super::*;

/// Where slice files are read from and written to, under `--index`.
pub const SLICES_DIR: &str = "slices";
const MAGIC: &[u8; 8] = b"GCSLICE1";
/// Largest header a reader accepts: the JSON is a few hundred bytes.
const MAX_HEADER: u32 = 1 << 16;
/// Most slices of one build: beyond this each slice is too small to pay for its catalog read.
pub const MAX_SLICES: usize = 4096;

/// Slice `index` of `of` (`I/N` on the command line, `0 <= I < N`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Slice {
    pub index: usize,
    pub of: usize,
}

impl Slice {
    /// Parses `I/N`.
    pub fn parse(text: &str) -> Result<Slice, String> {
        let usage = "write I/N with 0 <= I < N, e.g. 3/16 for the fourth of 16 slices \
                     (in an AWS Batch array job: \"$AWS_BATCH_JOB_ARRAY_INDEX/16\"; in a \
                     Kubernetes indexed Job: \"$(JOB_COMPLETION_INDEX)/16\")";
        let (i, n) = text
            .split_once('/')
            .ok_or_else(|| format!("'{text}' is not a slice; {usage}"))?;
        let (Ok(index), Ok(of)) = (i.trim().parse::<usize>(), n.trim().parse::<usize>()) else {
            return Err(format!("'{text}' is not a slice; {usage}"));
        };
        if of == 0 || index >= of || of > MAX_SLICES {
            return Err(format!(
                "'{text}' is not a slice of 1 to {MAX_SLICES}; {usage}"
            ));
        }
        Ok(Slice { index, of })
    }

    /// The slice's file name, e.g. `slice-0003-of-0016.vec`.
    pub fn file_name(&self) -> String {
        format!("slice-{:04}-of-{:04}.vec", self.index, self.of)
    }

    /// Whether the document of `key` belongs to this slice.
    fn holds(&self, key: &[u8; 32]) -> bool {
        let head = u64::from_le_bytes(key[..8].try_into().unwrap_or_default());
        head % self.of as u64 == self.index as u64
    }
}

impl std::fmt::Display for Slice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.index, self.of)
    }
}

/// What a slice file says of itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceHeader {
    pub slice: Slice,
    pub model: ModelInfo,
    pub vectors: usize,
    /// The catalog the slice job read (for the merge's report).
    pub source: SourceIdentity,
    pub built_at: String,
}

/// What `govcat index --slice` did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SliceReport {
    pub slice: Slice,
    /// Documents of the whole catalog (ontology values included), and of this slice.
    pub documents: usize,
    pub in_slice: usize,
    /// Distinct vectors written (documents with the same texts share one).
    pub vectors: usize,
    pub texts_embedded: u64,
    pub file: String,
    pub bytes: u64,
}

/// Reads the catalog, embeds the documents of `slice` and writes them to
/// `index_dir/slices/<file>` (under a temporary name first). Nothing is published.
pub fn embed_slice(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    slice: Slice,
    progress: &dyn Progress,
) -> Result<SliceReport, IndexError> {
    let (docs, counts) = super::collect_documents(ontology, source)?;
    let model = model_info(embedder);
    // Only the slice's documents are kept: a job holds 1/N of the catalog's vectors.
    let mut seen = std::collections::HashSet::new();
    let (mut mine, mut keys, mut in_slice) = (Vec::new(), Vec::new(), 0);
    for d in docs {
        let key = embedding_key(&model, super::embedded_texts(&d));
        if slice.holds(&key) {
            in_slice += 1;
            if seen.insert(key) {
                mine.push(d);
                keys.push(key);
            }
        }
    }
    let dim = embedder.dimension();
    let mut data = vec![0f32; mine.len() * dim];
    let texts = super::build::text_count(&mine);
    progress.start(EMBEDDING_STEP, texts);
    let all: Vec<usize> = (0..mine.len()).collect();
    embed_rows(embedder, &mine, &all, &mut data, progress)?;
    progress.finish();

    let dir = index_dir.join(SLICES_DIR);
    fs::create_dir_all(&dir).map_err(|e| io_err(&dir, e))?;
    let path = dir.join(slice.file_name());
    let tmp = dir.join(format!(".{}.tmp-{}", slice.file_name(), std::process::id()));
    let header = SliceHeader {
        slice,
        model,
        vectors: mine.len(),
        source: source.identity(),
        built_at: format_rfc3339(SystemTime::now()),
    };
    let header_bytes = serde_json::to_vec(&header).map_err(|e| io_err(&tmp, e))?;
    let vectors = keys.iter().zip(data.chunks_exact(dim));
    write_slice_file(&tmp, &header_bytes, vectors).map_err(|e| io_err(&tmp, e))?;
    fs::rename(&tmp, &path).map_err(|e| io_err(&path, e))?;
    fsync_dir(&dir);
    let bytes = fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    Ok(SliceReport {
        slice,
        documents: counts.documents,
        in_slice,
        vectors: mine.len(),
        texts_embedded: texts,
        file: path.display().to_string(),
        bytes,
    })
}

/// Writes a slice file: magic, header, the vectors, the checksum; synced before it returns.
fn write_slice_file<'a>(
    path: &Path,
    header: &[u8],
    vectors: impl Iterator<Item = (&'a [u8; 32], &'a [f32])>,
) -> std::io::Result<()> {
    let mut out = Hashing::new(BufWriter::new(fs::File::create(path)?));
    out.write_all(MAGIC)?;
    out.write_all(&(header.len() as u32).to_le_bytes())?;
    out.write_all(header)?;
    for (key, vector) in vectors {
        out.write_all(key)?;
        let bytes: Vec<u8> = vector.iter().flat_map(|x| x.to_le_bytes()).collect();
        out.write_all(&bytes)?;
    }
    let Hashing { mut inner, hasher } = out;
    inner.write_all(&hasher.finalize())?;
    inner.into_inner().map_err(|e| e.into_error())?.sync_all()
}

/// A writer or reader that hashes what passes through it.
struct Hashing<T> {
    inner: T,
    hasher: Sha256,
}

impl<T> Hashing<T> {
    fn new(inner: T) -> Self {
        Hashing {
            inner,
            hasher: Sha256::new(),
        }
    }
}

impl<T: Write> Write for Hashing<T> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

impl<T: Read> Hashing<T> {
    fn read_exact_hashed(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        self.inner.read_exact(buf)?;
        self.hasher.update(&*buf);
        Ok(())
    }
}

/// A slice file that cannot be used, with what to do.
fn unusable(path: &Path, problem: impl Into<String>, slice: Option<Slice>) -> IndexError {
    let next = match slice {
        Some(s) => format!(
            "run the slice job again (govcat index --slice {s} --slices-to LOCATION), or delete the file to embed its texts in this build"
        ),
        None => "delete the file, or run the slice job that writes it again".to_string(),
    };
    IndexError::Slice {
        file: path.display().to_string(),
        problem: problem.into(),
        next,
    }
}

/// Reads a slice file's header; the rest of the file is left for [`fill_from_slices`].
fn read_header(path: &Path) -> Result<(SliceHeader, Hashing<BufReader<fs::File>>), IndexError> {
    let file = fs::File::open(path).map_err(|e| io_err(path, e))?;
    let size = file.metadata().map_err(|e| io_err(path, e))?.len();
    let mut r = Hashing::new(BufReader::new(file));
    let mut magic = [0u8; 8];
    let mut len = [0u8; 4];
    r.read_exact_hashed(&mut magic)
        .and_then(|_| r.read_exact_hashed(&mut len))
        .map_err(|e| unusable(path, format!("no slice header ({e})"), None))?;
    if &magic != MAGIC {
        return Err(unusable(path, "not a govcat slice file", None));
    }
    let len = u32::from_le_bytes(len);
    if len > MAX_HEADER {
        return Err(unusable(path, format!("a header of {len} bytes"), None));
    }
    let mut json = vec![0u8; len as usize];
    r.read_exact_hashed(&mut json)
        .map_err(|e| unusable(path, format!("header cut short ({e})"), None))?;
    let header: SliceHeader = serde_json::from_slice(&json)
        .map_err(|e| unusable(path, format!("header does not parse ({e})"), None))?;
    let expected =
        8 + 4 + len as u64 + header.vectors as u64 * (32 + 4 * header.model.dimension as u64) + 32;
    if size != expected {
        return Err(unusable(
            path,
            format!("{size} bytes where its header promises {expected} (cut short or appended to)"),
            Some(header.slice),
        ));
    }
    Ok((header, r))
}

/// The slice files in `dir`, sorted by name (none when it does not exist).
pub fn slice_files(dir: &Path) -> Result<Vec<PathBuf>, IndexError> {
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_err(dir, e)),
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("slice-") && n.ends_with(".vec"))
        })
        .collect();
    files.sort();
    Ok(files)
}

/// Checks that `dir` holds one whole set of slices (`0/N` .. `N-1/N`, one model) of the
/// running `model`; returns their headers. A merge calls this before its build, so a missing
/// slice is named before hours of local embedding are spent on its texts.
pub fn check_slice_set(dir: &Path, model: &ModelInfo) -> Result<Vec<SliceHeader>, IndexError> {
    let files = slice_files(dir)?;
    if files.is_empty() {
        return Err(IndexError::Slice {
            file: dir.display().to_string(),
            problem: "holds no slice files (slice-I-of-N.vec)".into(),
            next: "run the slice jobs first (govcat index --slice I/N --slices-to LOCATION, one per I), then merge from that LOCATION".into(),
        });
    }
    let mut headers = Vec::new();
    for path in &files {
        let (header, _) = read_header(path)?;
        if &header.model != model {
            return Err(IndexError::Slice {
                file: path.display().to_string(),
                problem: format!(
                    "embedded with model {} ({}), this govcat runs {} ({})",
                    header.model.id, header.model.checksum, model.id, model.checksum
                ),
                next: "run every slice job with the same govcat and model as the merge".into(),
            });
        }
        headers.push(header);
    }
    let of = headers[0].slice.of;
    if let Some(h) = headers.iter().find(|h| h.slice.of != of) {
        return Err(IndexError::Slice {
            file: dir.display().to_string(),
            problem: format!(
                "holds slices of {of} and of {} (two runs mixed)",
                h.slice.of
            ),
            next: "delete the older run's slice files (from the store's slices/ or --index/slices/), keeping one set of slice-I-of-N.vec".into(),
        });
    }
    let missing: Vec<String> = (0..of)
        .filter(|i| !headers.iter().any(|h| h.slice.index == *i))
        .map(|i| format!("{i}/{of}"))
        .collect();
    if !missing.is_empty() {
        return Err(IndexError::Slice {
            file: dir.display().to_string(),
            problem: format!("slices {} of {of} are missing", missing.join(", ")),
            next: format!(
                "run the slice job for each (govcat index --slice {} --slices-to LOCATION), then merge again",
                missing[0]
            ),
        });
    }
    Ok(headers)
}

/// Copies into `data` the vector of every document of `missing` that a slice file in `dir`
/// holds, and removes those documents from `missing`. Each file is read once, streamed, and
/// its checksum checked before the build goes on. Returns how many documents were filled.
pub(super) fn fill_from_slices(
    dir: &Path,
    model: &ModelInfo,
    docs: &[Document],
    missing: &mut Vec<usize>,
    data: &mut [f32],
) -> Result<usize, IndexError> {
    let files = slice_files(dir)?;
    if files.is_empty() || missing.is_empty() {
        return Ok(0);
    }
    let dim = model.dimension;
    let mut wanted: HashMap<[u8; 32], Vec<usize>> = HashMap::new();
    for &i in missing.iter() {
        wanted
            .entry(embedding_key(model, super::embedded_texts(&docs[i])))
            .or_default()
            .push(i);
    }
    let mut filled = vec![false; docs.len()];
    let mut key = [0u8; 32];
    let mut vector = vec![0u8; dim * 4];
    for path in &files {
        let (header, mut r) = read_header(path)?;
        if &header.model != model {
            tracing::info!(file = %path.display(), "slice of another model: not used");
            continue;
        }
        for _ in 0..header.vectors {
            r.read_exact_hashed(&mut key)
                .and_then(|_| r.read_exact_hashed(&mut vector))
                .map_err(|e| unusable(path, format!("cut short ({e})"), Some(header.slice)))?;
            if let Some(rows) = wanted.get(&key) {
                for &i in rows {
                    super::dense::floats_from_le(&vector, &mut data[i * dim..(i + 1) * dim]);
                    filled[i] = true;
                }
            }
        }
        let mut sum = [0u8; 32];
        r.inner
            .read_exact(&mut sum)
            .map_err(|e| unusable(path, format!("no checksum ({e})"), Some(header.slice)))?;
        if r.hasher.finalize()[..] != sum {
            return Err(unusable(
                path,
                "its checksum does not match its contents (altered or broken in transfer)",
                Some(header.slice),
            ));
        }
    }
    let before = missing.len();
    missing.retain(|&i| !filled[i]);
    Ok(before - missing.len())
}
