//! Text embeddings for retrieval: the [`Embedder`] trait, the all-MiniLM-L6-v2 backend
//! ([`MiniLm`], run on the CPU with candle) with its bounded query cache, and a tiny
//! deterministic [`HashEmbedder`] for plumbing tests.
//!
//! This module owns loading and verifying the model files (sha256 of `model.safetensors`),
//! tokenisation, the forward pass, mean pooling and L2 normalisation. It must never download
//! anything at run time: the model is fetched once, ahead of time, by
//! `scripts/fetch-model.sh` into [`default_model_dir`], and a missing or altered model is an
//! [`EmbedError`] that says how to fix it, never a silent fallback or a network call.

use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use candle_core::safetensors::MmapedSafetensors;
use candle_core::{DType, Device, Tensor};
use candle_nn::var_builder::SimpleBackend;
use candle_nn::VarBuilder;
use candle_transformers::models::bert::{BertModel, Config as BertConfig, DTYPE};
use lru::LruCache;
use sha2::{Digest, Sha256};
use tokenizers::{PaddingParams, PaddingStrategy, Tokenizer, TruncationParams};

/// Hugging Face id of the model that [`MiniLm`] runs.
pub const MINILM_MODEL_ID: &str = "sentence-transformers/all-MiniLM-L6-v2";
/// Dimension of the vectors that [`MiniLm`] returns.
pub const MINILM_DIMENSION: usize = 384;
/// sha256 (hex) of the `model.safetensors` that [`MiniLm`] accepts.
pub const MINILM_SHA256: &str = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db";
/// Model directory used when `GOVCAT_MODEL_DIR` is not set (relative to the working directory).
pub const DEFAULT_MODEL_DIR: &str = "models/all-MiniLM-L6-v2";
/// Environment variable that overrides [`DEFAULT_MODEL_DIR`].
pub const MODEL_DIR_ENV: &str = "GOVCAT_MODEL_DIR";
/// Number of query embeddings kept by [`MiniLm`]'s LRU cache.
pub const QUERY_CACHE_CAPACITY: usize = 4096;
/// Texts per forward pass in [`MiniLm::embed_batch`].
pub const BATCH_SIZE: usize = 32;
/// Longest input, in tokens (including `[CLS]` and `[SEP]`); longer texts are truncated.
pub const MAX_TOKENS: usize = 256;

/// Model id reported by [`HashEmbedder`].
pub const HASH_EMBEDDER_MODEL_ID: &str = "govcat/hash-embedder";

/// Name prefix of the threads that run query forward passes ([`QueryLanes`]).
pub const QUERY_THREAD_PREFIX: &str = "govcat-embed";

const CONFIG_FILE: &str = "config.json";
const TOKENIZER_FILE: &str = "tokenizer.json";
const WEIGHTS_FILE: &str = "model.safetensors";

/// What can go wrong while loading a model or embedding text.
///
/// Every message names the thing, the problem and the next step.
#[derive(thiserror::Error, Debug)]
pub enum EmbedError {
    /// The model directory, or one of its required files, does not exist.
    #[error(
        "embedding model not found in {}: it needs config.json, tokenizer.json and \
         model.safetensors; run `scripts/fetch-model.sh` (the README's first command) to fetch \
         it, or set GOVCAT_MODEL_DIR to a directory that holds it",
        .dir.display()
    )]
    ModelMissing { dir: PathBuf },

    /// A model file's sha256 differs from the one this build accepts.
    #[error(
        "checksum mismatch for {}: sha256 is {actual}, expected {expected}; the file is \
         corrupt or a different model: delete {} and rerun `scripts/fetch-model.sh`",
        .file.display(),
        .file.parent().unwrap_or(Path::new(".")).display()
    )]
    ChecksumMismatch {
        file: PathBuf,
        expected: String,
        actual: String,
    },

    /// A model file exists but could not be read or parsed.
    #[error(
        "could not load {}: {reason}; check that it is readable, or delete {} and rerun \
         `scripts/fetch-model.sh`",
        .file.display(),
        .file.parent().unwrap_or(Path::new(".")).display()
    )]
    Load { file: PathBuf, reason: String },

    /// Tokenisation or the forward pass failed on loaded model files.
    #[error(
        "embedding inference failed: {0}; retry with shorter or plain-text input, and if it \
         persists delete the model directory and rerun `scripts/fetch-model.sh`"
    )]
    Inference(String),
}

/// Turns text into fixed-size, L2-normalised vectors (cosine similarity = dot product).
pub trait Embedder: Send + Sync {
    /// Identifies the model, e.g. `sentence-transformers/all-MiniLM-L6-v2`.
    fn model_id(&self) -> &str;
    /// Length of every returned vector.
    fn dimension(&self) -> usize;
    /// Identifies the exact weights (an index built with one checksum is stale under another).
    fn checksum(&self) -> &str;
    /// Embeds `texts`, returning one vector per text in the same order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError>;
    /// Embeds one query. Implementations may cache.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        self.embed_batch(&[text])?.pop().ok_or_else(|| {
            EmbedError::Inference("the model returned no vector for one text".into())
        })
    }
    /// Embeds several queries (one search's phrasings), in input order. Implementations may
    /// cache, and embed what is not cached in one forward pass.
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        texts.iter().map(|t| self.embed_query(t)).collect()
    }
    /// Query-cache (hits, misses), for backends that cache; `None` otherwise.
    fn cache_stats(&self) -> Option<(u64, u64)> {
        None
    }
}

/// The model directory: `$GOVCAT_MODEL_DIR` if set and non-empty, else [`DEFAULT_MODEL_DIR`].
pub fn default_model_dir() -> PathBuf {
    model_dir_from(std::env::var_os(MODEL_DIR_ENV))
}

fn model_dir_from(env: Option<std::ffi::OsString>) -> PathBuf {
    match env {
        Some(dir) if !dir.is_empty() => PathBuf::from(dir),
        _ => PathBuf::from(DEFAULT_MODEL_DIR),
    }
}

/// Streams `path` through sha256 and returns the lowercase hex digest.
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut file = File::open(path)?;
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = match file.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        hasher.update(&buf[..n]);
    }
    Ok(to_hex(&hasher.finalize()))
}

fn to_hex(bytes: &[u8]) -> String {
    use fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        // Writing to a String cannot fail.
        let _ = write!(s, "{b:02x}");
    }
    s
}

/// Scales `v` to unit L2 norm in place (a zero vector stays zero).
pub(crate) fn l2_normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 1e-12 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

/// Bounded LRU cache of query embeddings with hit/miss counters.
struct QueryCache {
    entries: Mutex<LruCache<String, Vec<f32>>>,
    hits: AtomicU64,
    misses: AtomicU64,
}

impl QueryCache {
    fn new(capacity: NonZeroUsize) -> Self {
        Self {
            entries: Mutex::new(LruCache::new(capacity)),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, LruCache<String, Vec<f32>>> {
        // A panic while holding the lock cannot leave the cache inconsistent; keep using it.
        self.entries
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    fn get(&self, text: &str) -> Option<Vec<f32>> {
        let found = self.lock().get(text).cloned();
        let counter = if found.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    fn put(&self, text: &str, vector: Vec<f32>) {
        self.lock().put(text.to_owned(), vector);
    }

    fn stats(&self) -> (u64, u64) {
        (
            self.hits.load(Ordering::Relaxed),
            self.misses.load(Ordering::Relaxed),
        )
    }
}

/// sentence-transformers/all-MiniLM-L6-v2 on the CPU: BERT forward pass, mean pooling over
/// the attention mask, L2 normalisation; 384 dimensions.
pub struct MiniLm {
    dir: PathBuf,
    model: BertModel,
    tokenizer: Tokenizer,
    checksum: String,
    cache: QueryCache,
    lanes: QueryLanes,
}

/// A fixed set of threads, one per core, on which query forward passes run.
///
/// gemm keeps a scratch buffer (~2 MiB, the L2 slab) in a thread-local of every thread that
/// runs one of its kernels, for the thread's life. The server calls tools on tokio's blocking
/// threads, whose number follows the calls in flight (up to
/// [`crate::limits::DEFAULT_MAX_CONCURRENT_REQUESTS`] by default), so a forward pass there left
/// ~2 MiB behind on each of them: 58.7 MiB at peak over 28 threads in a 10-minute heap profile
/// (docs/perf/large-lake.md). Here at most [`QueryLanes::threads`] threads ever hold one, and on
/// 2 cores running more passes at once than cores only made each slower.
struct QueryLanes {
    threads: usize,
    pool: OnceLock<Option<rayon::ThreadPool>>,
}

impl QueryLanes {
    /// Lanes for `threads` threads (at least 1), started on first use.
    fn new(threads: usize) -> Self {
        Self {
            threads: threads.max(1),
            pool: OnceLock::new(),
        }
    }

    /// One lane per core the process may use.
    fn per_core() -> Self {
        Self::new(std::thread::available_parallelism().map_or(1, NonZeroUsize::get))
    }

    /// Runs `f` on one of the lanes, blocking the caller until it returns. Should the threads
    /// fail to start (the process is out of threads), `f` runs on the caller's thread: slower
    /// memory hygiene, never a lost query.
    fn run<R: Send>(&self, f: impl FnOnce() -> R + Send) -> R {
        let pool = self.pool.get_or_init(|| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(self.threads)
                .thread_name(|i| format!("{QUERY_THREAD_PREFIX}-{i}"))
                .build()
                .map_err(|e| tracing::warn!(error = %e, "query embedding threads did not start; embedding on the callers' threads"))
                .ok()
        });
        match pool {
            Some(pool) => pool.install(f),
            None => f(),
        }
    }
}

impl fmt::Debug for MiniLm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MiniLm")
            .field("dir", &self.dir)
            .field("checksum", &self.checksum)
            .field("cache_stats", &self.cache.stats())
            .finish_non_exhaustive()
    }
}

impl MiniLm {
    /// Loads the model from [`default_model_dir`].
    pub fn load_default() -> Result<Self, EmbedError> {
        Self::load(default_model_dir())
    }

    /// Loads the model from `dir`, which must hold `config.json`, `tokenizer.json` and a
    /// `model.safetensors` whose sha256 is [`MINILM_SHA256`]. Reads local files only.
    pub fn load(dir: impl AsRef<Path>) -> Result<Self, EmbedError> {
        let dir = dir.as_ref().to_path_buf();
        let config_path = dir.join(CONFIG_FILE);
        let tokenizer_path = dir.join(TOKENIZER_FILE);
        let weights_path = dir.join(WEIGHTS_FILE);
        if ![&config_path, &tokenizer_path, &weights_path]
            .iter()
            .all(|p| p.is_file())
        {
            return Err(EmbedError::ModelMissing { dir });
        }

        let actual = sha256_file(&weights_path).map_err(|e| EmbedError::Load {
            file: weights_path.clone(),
            reason: format!("reading it for its checksum failed: {e}"),
        })?;
        if actual != MINILM_SHA256 {
            return Err(EmbedError::ChecksumMismatch {
                file: weights_path,
                expected: MINILM_SHA256.to_owned(),
                actual,
            });
        }

        let config_text = std::fs::read_to_string(&config_path).map_err(|e| EmbedError::Load {
            file: config_path.clone(),
            reason: e.to_string(),
        })?;
        let config: BertConfig =
            serde_json::from_str(&config_text).map_err(|e| EmbedError::Load {
                file: config_path.clone(),
                reason: format!("not a BERT config: {e}"),
            })?;
        if config.hidden_size != MINILM_DIMENSION {
            return Err(EmbedError::Load {
                file: config_path,
                reason: format!(
                    "hidden_size is {}, expected {MINILM_DIMENSION} for all-MiniLM-L6-v2",
                    config.hidden_size
                ),
            });
        }

        let weights_err = |e: candle_core::Error| EmbedError::Load {
            file: weights_path.clone(),
            reason: e.to_string(),
        };
        // SAFETY: the file is memory-mapped read-only and its checksum was just verified. The
        // hazard of a mapping, the file changing underneath it, is confined to this call:
        // candle copies every tensor into its own CPU storage while loading and the mapping is
        // dropped before `load` returns; scripts/fetch-model.sh replaces the directory by
        // rename, never in place. This is `VarBuilder::from_mmaped_safetensors` plus the
        // re-layout done by `ColumnMajorLinearWeights`.
        let weights = unsafe { MmapedSafetensors::new(&weights_path) }.map_err(weights_err)?;
        let vb = VarBuilder::from_backend(
            Box::new(ColumnMajorLinearWeights(weights)),
            DTYPE,
            Device::Cpu,
        );
        let model = BertModel::load(vb, &config).map_err(weights_err)?;

        let tokenizer = load_tokenizer(&tokenizer_path)?;

        let capacity = NonZeroUsize::new(QUERY_CACHE_CAPACITY).unwrap_or(NonZeroUsize::MIN);
        Ok(Self {
            dir,
            model,
            tokenizer,
            checksum: actual,
            cache: QueryCache::new(capacity),
            lanes: QueryLanes::per_core(),
        })
    }

    /// The directory the model was loaded from.
    pub fn model_dir(&self) -> &Path {
        &self.dir
    }

    /// `(hits, misses)` of the query cache used by [`Embedder::embed_query`].
    pub fn cache_stats(&self) -> (u64, u64) {
        self.cache.stats()
    }

    /// One forward pass over at most [`BATCH_SIZE`] texts.
    fn embed_chunk(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let infer = |e: candle_core::Error| EmbedError::Inference(e.to_string());
        let encodings = self
            .tokenizer
            .encode_batch_fast(texts.to_vec(), true)
            .map_err(|e| EmbedError::Inference(format!("tokenisation failed: {e}")))?;
        let n = encodings.len();
        let len = encodings.first().map_or(0, |e| e.len());
        if n != texts.len() || len == 0 {
            return Err(EmbedError::Inference(format!(
                "the tokenizer returned {n} encodings of length {len} for {} texts",
                texts.len()
            )));
        }
        let mut ids = Vec::with_capacity(n * len);
        let mut type_ids = Vec::with_capacity(n * len);
        let mut mask = Vec::with_capacity(n * len);
        for enc in &encodings {
            if enc.len() != len {
                return Err(EmbedError::Inference(
                    "the tokenizer did not pad the batch to one length".into(),
                ));
            }
            ids.extend_from_slice(enc.get_ids());
            type_ids.extend_from_slice(enc.get_type_ids());
            mask.extend_from_slice(enc.get_attention_mask());
        }
        let device = &self.model.device;
        let ids = Tensor::from_vec(ids, (n, len), device).map_err(infer)?;
        let type_ids = Tensor::from_vec(type_ids, (n, len), device).map_err(infer)?;
        let mask = Tensor::from_vec(mask, (n, len), device).map_err(infer)?;

        // (n, len, 384)
        let hidden = self
            .model
            .forward(&ids, &type_ids, Some(&mask))
            .map_err(infer)?;
        // Mean pooling over the real (unpadded) tokens.
        let mask = mask
            .to_dtype(DType::F32)
            .map_err(infer)?
            .unsqueeze(2)
            .map_err(infer)?;
        let summed = hidden
            .broadcast_mul(&mask)
            .map_err(infer)?
            .sum(1)
            .map_err(infer)?;
        let counts = mask
            .sum(1)
            .map_err(infer)?
            .clamp(1e-9f32, f32::MAX)
            .map_err(infer)?;
        let pooled = summed.broadcast_div(&counts).map_err(infer)?;
        let mut vectors = pooled.to_vec2::<f32>().map_err(infer)?;
        for v in &mut vectors {
            l2_normalise(v);
        }
        Ok(vectors)
    }
}

/// Serves the safetensors tensors to candle, storing every linear layer's `(out, in)` weight
/// column-major. candle's `Linear` multiplies by `weight.t()`, which is then contiguous and
/// takes gemm's fast path: about 2.5x faster for one short query, ~10% for large batches.
/// Values are unchanged; only the memory layout differs.
struct ColumnMajorLinearWeights(MmapedSafetensors);

impl ColumnMajorLinearWeights {
    fn relayout(name: &str, tensor: Tensor) -> candle_core::Result<Tensor> {
        // Rank-2 tensors outside the embeddings are the linear layers' weights; embedding
        // tables are looked up by row and must stay row-major.
        if tensor.rank() == 2 && name.ends_with(".weight") && !name.contains("embeddings") {
            tensor.t()?.contiguous()?.t()
        } else {
            Ok(tensor)
        }
    }
}

impl SimpleBackend for ColumnMajorLinearWeights {
    fn get(
        &self,
        s: candle_core::Shape,
        name: &str,
        h: candle_nn::Init,
        dtype: DType,
        dev: &Device,
    ) -> candle_core::Result<Tensor> {
        let tensor = SimpleBackend::get(&self.0, s, name, h, dtype, dev)?;
        Self::relayout(name, tensor)
    }

    fn get_unchecked(&self, name: &str, dtype: DType, dev: &Device) -> candle_core::Result<Tensor> {
        let tensor = SimpleBackend::get_unchecked(&self.0, name, dtype, dev)?;
        Self::relayout(name, tensor)
    }

    fn contains_tensor(&self, name: &str) -> bool {
        SimpleBackend::contains_tensor(&self.0, name)
    }
}

fn load_tokenizer(path: &Path) -> Result<Tokenizer, EmbedError> {
    let load_err = |reason: String| EmbedError::Load {
        file: path.to_path_buf(),
        reason,
    };
    let mut tokenizer =
        Tokenizer::from_file(path).map_err(|e| load_err(format!("not a tokenizer: {e}")))?;
    // The shipped tokenizer.json pads every input to a fixed 128 tokens, which makes short
    // queries 4-5x slower: pad each batch to its longest member instead.
    let padding = match tokenizer.get_padding() {
        Some(p) => PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..p.clone()
        },
        None => PaddingParams {
            strategy: PaddingStrategy::BatchLongest,
            ..PaddingParams::default()
        },
    };
    tokenizer.with_padding(Some(padding));
    let truncation = TruncationParams {
        max_length: MAX_TOKENS,
        ..tokenizer.get_truncation().cloned().unwrap_or_default()
    };
    tokenizer
        .with_truncation(Some(truncation))
        .map_err(|e| load_err(format!("cannot truncate to {MAX_TOKENS} tokens: {e}")))?;
    Ok(tokenizer)
}

impl Embedder for MiniLm {
    fn cache_stats(&self) -> Option<(u64, u64)> {
        Some(MiniLm::cache_stats(self))
    }
    fn model_id(&self) -> &str {
        MINILM_MODEL_ID
    }

    fn dimension(&self) -> usize {
        MINILM_DIMENSION
    }

    fn checksum(&self) -> &str {
        &self.checksum
    }

    /// Embeds in forward passes of [`BATCH_SIZE`] texts, grouping texts of similar length
    /// to keep padding small; the result is in input order.
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut order: Vec<usize> = (0..texts.len()).collect();
        order.sort_by_key(|&i| texts[i].len());
        let mut out: Vec<Vec<f32>> = vec![Vec::new(); texts.len()];
        for chunk in order.chunks(BATCH_SIZE) {
            let batch: Vec<&str> = chunk.iter().map(|&i| texts[i]).collect();
            for (&i, v) in chunk.iter().zip(self.embed_chunk(&batch)?) {
                out[i] = v;
            }
        }
        Ok(out)
    }

    /// Embeds one query through the LRU cache ([`QUERY_CACHE_CAPACITY`] entries); a miss runs
    /// its forward pass on the query lanes.
    fn embed_query(&self, text: &str) -> Result<Vec<f32>, EmbedError> {
        if let Some(v) = self.cache.get(text) {
            return Ok(v);
        }
        let v = self
            .lanes
            .run(|| self.embed_chunk(&[text]))?
            .pop()
            .ok_or_else(|| {
                EmbedError::Inference("the model returned no vector for one text".into())
            })?;
        self.cache.put(text, v.clone());
        Ok(v)
    }

    /// Each text from the LRU cache, the others in one forward pass on the query lanes (then
    /// cached).
    fn embed_queries(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut out: Vec<Option<Vec<f32>>> = texts.iter().map(|t| self.cache.get(t)).collect();
        let missing: Vec<usize> = (0..texts.len()).filter(|&i| out[i].is_none()).collect();
        if !missing.is_empty() {
            let batch: Vec<&str> = missing.iter().map(|&i| texts[i]).collect();
            let vectors = self.lanes.run(|| self.embed_chunk(&batch))?;
            if vectors.len() != batch.len() {
                return Err(EmbedError::Inference(format!(
                    "the model returned {} vectors for {} texts",
                    vectors.len(),
                    batch.len()
                )));
            }
            for (&i, v) in missing.iter().zip(vectors) {
                self.cache.put(texts[i], v.clone());
                out[i] = Some(v);
            }
        }
        Ok(out.into_iter().flatten().collect())
    }
}

/// Deterministic, model-free embedder for plumbing tests: lowercase word unigrams and
/// character trigrams hashed (FNV-1a) into `dim` buckets, L2-normalised. Texts that share
/// words or spellings get similar vectors; it knows nothing of meaning.
#[derive(Debug, Clone)]
pub struct HashEmbedder {
    dim: usize,
    checksum: String,
}

impl HashEmbedder {
    /// An embedder producing `dim`-dimensional vectors.
    ///
    /// # Panics
    /// If `dim` is 0.
    pub fn new(dim: usize) -> Self {
        assert!(dim > 0, "HashEmbedder::new: dim must be at least 1");
        let checksum = to_hex(&Sha256::digest(
            format!("{HASH_EMBEDDER_MODEL_ID}:v1:dim={dim}").as_bytes(),
        ));
        Self { dim, checksum }
    }

    fn embed_one(&self, text: &str) -> Vec<f32> {
        let mut v = vec![0f32; self.dim];
        let mut add = |feature: &[u8], weight: f32| {
            // u64 -> usize bucket: the modulo keeps it below `dim`.
            let bucket = (fnv1a(feature) % self.dim as u64) as usize;
            v[bucket] += weight;
        };
        let lower = text.to_lowercase();
        let mut any = false;
        for word in lower
            .split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
        {
            any = true;
            add(format!("w:{word}").as_bytes(), 1.0);
            let chars: Vec<char> = format!(" {word} ").chars().collect();
            for tri in chars.windows(3) {
                let tri: String = tri.iter().collect();
                add(format!("c:{tri}").as_bytes(), 0.5);
            }
        }
        if !any {
            // Keep the unit-norm contract for empty or punctuation-only text.
            add(b"e:", 1.0);
        }
        l2_normalise(&mut v);
        v
    }
}

fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

impl Embedder for HashEmbedder {
    fn model_id(&self) -> &str {
        HASH_EMBEDDER_MODEL_ID
    }

    fn dimension(&self) -> usize {
        self.dim
    }

    fn checksum(&self) -> &str {
        &self.checksum
    }

    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        Ok(texts.iter().map(|t| self.embed_one(t)).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dot(a: &[f32], b: &[f32]) -> f32 {
        a.iter().zip(b).map(|(x, y)| x * y).sum()
    }

    fn norm(v: &[f32]) -> f32 {
        dot(v, v).sqrt()
    }

    /// The names of the threads `lanes` ran the calls of 24 concurrent callers on.
    fn lane_threads_of_24_callers(lanes: &QueryLanes) -> std::collections::BTreeSet<String> {
        let names = Mutex::new(std::collections::BTreeSet::new());
        std::thread::scope(|s| {
            for _ in 0..24 {
                s.spawn(|| {
                    let name = lanes.run(|| {
                        std::thread::sleep(std::time::Duration::from_millis(2));
                        std::thread::current().name().unwrap_or("").to_owned()
                    });
                    names.lock().expect("names").insert(name);
                });
            }
        });
        names.into_inner().expect("names")
    }

    #[test]
    fn query_lanes_run_every_call_on_their_own_threads() {
        let names = lane_threads_of_24_callers(&QueryLanes::new(2));
        assert!(!names.is_empty() && names.len() <= 2, "{names:?}");
        for name in &names {
            assert!(name.starts_with("govcat-embed-"), "{name}");
        }
    }

    #[test]
    fn one_query_lane_is_one_thread_for_every_caller() {
        let names = lane_threads_of_24_callers(&QueryLanes::new(1));
        assert_eq!(names, ["govcat-embed-0".to_owned()].into());
        // A lane count of 0 still makes one lane rather than no thread at all.
        assert_eq!(QueryLanes::new(0).threads, 1);
    }

    #[test]
    fn hash_embedder_is_deterministic() {
        let e = HashEmbedder::new(64);
        let a = e.embed_query("Customer IBAN").expect("embed");
        let b = HashEmbedder::new(64)
            .embed_query("Customer IBAN")
            .expect("embed");
        assert_eq!(a, b);
        let batch = e
            .embed_batch(&["Customer IBAN", "date of birth"])
            .expect("embed");
        assert_eq!(batch[0], a);
        assert_ne!(batch[0], batch[1]);
    }

    #[test]
    fn hash_embedder_is_normalised_with_the_right_dimension() {
        for dim in [1, 7, 384] {
            let e = HashEmbedder::new(dim);
            assert_eq!(e.dimension(), dim);
            for text in [
                "",
                "!!!",
                "Date of birth",
                "Ünïcödé straße",
                "a b c d e f g",
            ] {
                let v = e.embed_query(text).expect("embed");
                assert_eq!(v.len(), dim, "{text:?}");
                assert!(
                    (norm(&v) - 1.0).abs() < 1e-5,
                    "{text:?} has norm {}",
                    norm(&v)
                );
            }
        }
    }

    #[test]
    fn hash_embedder_identity_and_similarity() {
        let e = HashEmbedder::new(256);
        assert_eq!(e.model_id(), "govcat/hash-embedder");
        assert_eq!(e.checksum(), HashEmbedder::new(256).checksum());
        assert_ne!(e.checksum(), HashEmbedder::new(128).checksum());
        assert_eq!(e.checksum().len(), 64);
        // Case-insensitive, and shared words make vectors closer.
        let q = e.embed_query("IBAN account").expect("embed");
        assert_eq!(q, e.embed_query("iban ACCOUNT").expect("embed"));
        let near = e.embed_query("IBAN of the account holder").expect("embed");
        let far = e.embed_query("postcode of branch").expect("embed");
        assert!(dot(&q, &near) > dot(&q, &far));
        assert!(e.embed_batch(&[]).expect("embed").is_empty());
    }

    #[test]
    fn missing_model_error_names_dir_and_fix() {
        let dir = std::env::temp_dir().join("govcat-embed-test-no-such-model-dir");
        let err = MiniLm::load(&dir).expect_err("no model there");
        assert!(matches!(err, EmbedError::ModelMissing { .. }), "{err:?}");
        let msg = err.to_string();
        assert!(msg.contains(&dir.display().to_string()), "{msg}");
        assert!(msg.contains("scripts/fetch-model.sh"), "{msg}");
    }

    #[test]
    fn checksum_mismatch_error_names_file_and_fix() {
        let dir = tempfile::tempdir().expect("create temp dir");
        for f in [CONFIG_FILE, TOKENIZER_FILE, WEIGHTS_FILE] {
            std::fs::write(dir.path().join(f), b"not a model").expect("write temp file");
        }
        let err = MiniLm::load(dir.path()).expect_err("bad weights");
        let EmbedError::ChecksumMismatch { ref actual, .. } = err else {
            panic!("expected ChecksumMismatch, got {err:?}");
        };
        assert_eq!(actual, &to_hex(&Sha256::digest(b"not a model")));
        let msg = err.to_string();
        assert!(
            msg.contains(WEIGHTS_FILE) && msg.contains(MINILM_SHA256),
            "{msg}"
        );
        assert!(
            msg.contains("delete") && msg.contains("scripts/fetch-model.sh"),
            "{msg}"
        );
    }

    #[test]
    fn model_dir_env_override() {
        assert_eq!(model_dir_from(None), PathBuf::from(DEFAULT_MODEL_DIR));
        assert_eq!(
            model_dir_from(Some("".into())),
            PathBuf::from(DEFAULT_MODEL_DIR)
        );
        assert_eq!(model_dir_from(Some("/x/y".into())), PathBuf::from("/x/y"));
    }

    #[test]
    fn l2_normalise_keeps_zero_vector() {
        let mut z = vec![0.0f32; 3];
        l2_normalise(&mut z);
        assert_eq!(z, vec![0.0; 3]);
        let mut v = vec![3.0f32, 4.0];
        l2_normalise(&mut v);
        assert!((v[0] - 0.6).abs() < 1e-6 && (v[1] - 0.8).abs() < 1e-6);
    }
}
