//! The dense side: nearest neighbours of a query embedding among the documents' embeddings
//! (all L2-normalised, so cosine similarity is a dot product).
//!
//! Two backends, chosen by size at build time: an exact scan, which is faster and exact for
//! small catalogs (the demo's ~750 documents scan in microseconds), and an HNSW graph for
//! large ones (built by hnsw_rs, stored and searched compactly: [`super::graph`]). The exact scan
//! reads the snapshot's vectors memory-mapped ([`Vectors::map`]); a served graph walks coded
//! rows in memory and scores its final candidates from the f32 file ([`super::codes`]).
//! `EXACT_MAX_DOCS` is where the scale bench measured the crossover; see `docs/PERFORMANCE.md`.

use std::borrow::Cow;
use std::path::Path;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::hnsw::Hnsw;

use super::codes::{Codes, RowFile};
use super::graph::{Graph, PatchCounts};
use super::IndexError;

/// Up to this many documents the exact scan serves queries; above it, HNSW. Release scale
/// bench of 2026-11-30 with the vectorised [`dot`]: at 10k documents the exact scan takes
/// 0.76 ms p50 against HNSW's 1.22 ms, at 100k 7.1 ms against 1.8 ms; the scan grows
/// linearly, so they cross near 20k.
pub const EXACT_MAX_DOCS: usize = 20_000;
/// Below this share of allowed documents a filtered query scans exactly (HNSW's filtered
/// search loses recall when most of the graph is filtered out).
const HNSW_MIN_ALLOWED_SHARE: f64 = 0.10;
/// The graph's file in a snapshot (format: [`Graph`]).
pub const GRAPH_FILE: &str = "dense.graph";
pub const HNSW_EF_SEARCH: usize = 128;

/// How an HNSW graph is built: `m` neighbours a point keeps per layer (2 `m` on the bottom
/// layer) and `ef_construction` candidates searched per insertion. Build time grows with both.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GraphParams {
    pub m: usize,
    pub ef_construction: usize,
}

impl GraphParams {
    /// What `govcat index` builds. Chosen from the scale bench's sweep (`--phase hnsw-sweep`,
    /// 100k columns, 200 real-model queries, release, 2 cores; docs/perf/large-lake.md): among
    /// the settings that build 100k columns in about two minutes, the one with the best recall.
    /// 32 x 100: 111 s, recall@10 0.996 at `ef_search` 128, the worst query 0.8 (24 x 100:
    /// 116 s, 0.992; 16 x 100: 103 s, 0.981 with one query at 0.1; 24 x 200, shipped before:
    /// 255 s, 0.999).
    pub const SHIPPED: GraphParams = GraphParams {
        m: 32,
        ef_construction: 100,
    };
}

/// Which backend a snapshot uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    Exact,
    Hnsw,
}

pub fn choose_backend(n: usize) -> Backend {
    if n <= EXACT_MAX_DOCS {
        Backend::Exact
    } else {
        Backend::Hnsw
    }
}

/// Flattened row-major vectors.
pub struct Vectors {
    pub dim: usize,
    pub data: Floats,
}

/// The floats of [`Vectors`]: owned while a snapshot is built, memory-mapped from its
/// `vectors.f32` when one is served. A mapped file costs the heap nothing: its pages sit in the
/// page cache, are read on first touch (a replica starts without reading every vector) and are
/// shared by every process that maps the same snapshot.
pub enum Floats {
    Owned(Vec<f32>),
    Mapped(memmap2::Mmap),
}

impl std::ops::Deref for Floats {
    type Target = [f32];

    fn deref(&self) -> &[f32] {
        match self {
            Floats::Owned(v) => v,
            // `Vectors::map` only maps a file whose bytes cast (aligned, whole floats).
            Floats::Mapped(m) => bytemuck::cast_slice(m),
        }
    }
}

impl From<Vec<f32>> for Floats {
    fn from(v: Vec<f32>) -> Floats {
        Floats::Owned(v)
    }
}

impl Vectors {
    pub fn new(dim: usize, data: Vec<f32>) -> Vectors {
        Vectors {
            dim,
            data: data.into(),
        }
    }

    pub fn len(&self) -> usize {
        self.data.len().checked_div(self.dim).unwrap_or(0)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn row(&self, i: usize) -> &[f32] {
        &self.data[i * self.dim..(i + 1) * self.dim]
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        self.data.iter().flat_map(|f| f.to_le_bytes()).collect()
    }

    pub fn from_bytes(bytes: &[u8], dim: usize, file: &str) -> Result<Vectors, IndexError> {
        whole_vectors(bytes.len(), dim, file)?;
        let mut data = vec![0f32; bytes.len() / 4];
        floats_from_le(bytes, &mut data);
        Ok(Vectors::new(dim, data))
    }

    /// The vectors of a snapshot file, memory-mapped where the file's little-endian floats are
    /// this machine's (read into the heap elsewhere, and when empty).
    pub fn map(path: &Path, dim: usize) -> Result<Vectors, IndexError> {
        let file = path.display().to_string();
        let io = |e: std::io::Error| IndexError::Io {
            path: file.clone(),
            problem: e.to_string(),
        };
        let f = std::fs::File::open(path).map_err(io)?;
        let len = f.metadata().map_err(io)?.len() as usize;
        whole_vectors(len, dim, &file)?;
        if len == 0 || cfg!(target_endian = "big") {
            return Vectors::from_bytes(&std::fs::read(path).map_err(io)?, dim, &file);
        }
        // SAFETY: a published snapshot's files are never written again (a snapshot is written
        // under a staging name and renamed whole; garbage collection unlinks, which leaves a
        // mapping intact). Truncating the file in place while served would fault the reader.
        let map = unsafe { memmap2::Mmap::map(&f) }.map_err(io)?;
        if bytemuck::try_cast_slice::<u8, f32>(&map).is_err() {
            return Vectors::from_bytes(&map, dim, &file);
        }
        Ok(Vectors {
            dim,
            data: Floats::Mapped(map),
        })
    }

    /// Whether the floats are served from the file rather than the heap.
    pub fn is_mapped(&self) -> bool {
        matches!(self.data, Floats::Mapped(_))
    }
}

pub(super) fn whole_vectors(bytes: usize, dim: usize, file: &str) -> Result<(), IndexError> {
    if dim == 0 || !bytes.is_multiple_of(4 * dim) {
        return Err(IndexError::Corrupt {
            file: file.to_string(),
            problem: format!(
                "{bytes} bytes is not a whole number of {dim}-dimensional f32 vectors"
            ),
        });
    }
    Ok(())
}

/// Partial sums kept by [`dot`].
pub(super) const DOT_LANES: usize = 16;

/// Decodes little-endian f32s (the snapshot's byte order) into `out`, one per 4 bytes.
pub fn floats_from_le(bytes: &[u8], out: &mut [f32]) {
    for (x, b) in out.iter_mut().zip(bytes.chunks_exact(4)) {
        *x = f32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    }
}

/// Dot product of two equally long vectors. A single running sum cannot be vectorised
/// (float addition is not associative, so the compiler must keep the order); sixteen
/// independent partial sums can, with the baseline instruction set and no `unsafe`. Measured
/// in the scale bench: the exact scan and the HNSW search both spend most of their time here.
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    debug_assert_eq!(a.len(), b.len());
    let mut acc = [0f32; DOT_LANES];
    let (xs, ys) = (a.chunks_exact(DOT_LANES), b.chunks_exact(DOT_LANES));
    let tail: f32 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in xs.zip(ys) {
        for i in 0..DOT_LANES {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// The HNSW distance between L2-normalised vectors: `1 - cosine`, never negative. Replaces
/// anndists' `DistDot`, whose scalar path is a single running sum and which asserts
/// `dot <= 1`: a query equal to a document's text can round to `1.0000001` and panic there.
#[derive(Debug, Default, Clone, Copy)]
pub struct CosineDistance;

impl Distance<f32> for CosineDistance {
    fn eval(&self, va: &[f32], vb: &[f32]) -> f32 {
        (1.0 - dot(va, vb)).max(0.0)
    }
}

/// Exact top-k by dot product over the allowed rows; ties by ordinal.
pub fn exact_top_k(
    vectors: &Vectors,
    query: &[f32],
    k: usize,
    allowed: &dyn Fn(u32) -> bool,
) -> Vec<(u32, f32)> {
    top_k_by(vectors.len(), k, allowed, |i| {
        dot(vectors.row(i as usize), query)
    })
}

/// The `k` best of the allowed ordinals `0..n` by `sim`, best first; ties by ordinal.
fn top_k_by(
    n: usize,
    k: usize,
    allowed: &dyn Fn(u32) -> bool,
    sim: impl Fn(u32) -> f32,
) -> Vec<(u32, f32)> {
    let mut scored: Vec<(u32, f32)> = (0..n as u32)
        .filter(|&i| allowed(i))
        .map(|i| (i, sim(i)))
        .collect();
    if scored.len() > k {
        scored.select_nth_unstable_by(k, super::best_first);
        scored.truncate(k);
    }
    scored.sort_by(super::best_first);
    scored
}

/// Builds an HNSW graph over `vectors` with the shipped parameters and writes it into `dir`.
pub fn build_hnsw(dir: &Path, vectors: &Vectors) -> Result<(), IndexError> {
    build_hnsw_with(dir, vectors, GraphParams::SHIPPED, &super::Quiet).map(drop)
}

/// What the graph build's progress bar says.
pub const GRAPH_STEP: &str = "building the HNSW graph over the vectors";

/// Builds an HNSW graph over `vectors` (inserted in parallel on every core, a hundredth at a
/// time for the progress bar) and writes it into `dir` as [`GRAPH_FILE`].
pub fn build_hnsw_with(
    dir: &Path,
    vectors: &Vectors,
    params: GraphParams,
    progress: &dyn super::Progress,
) -> Result<Graph, IndexError> {
    let hnsw: Hnsw<f32, CosineDistance> = Hnsw::new(
        params.m,
        vectors.len(),
        16,
        params.ef_construction,
        CosineDistance,
    );
    let rows: Vec<(&[f32], usize)> = (0..vectors.len()).map(|i| (vectors.row(i), i)).collect();
    progress.start(GRAPH_STEP, rows.len() as u64);
    for chunk in rows.chunks(rows.len().div_ceil(100).max(1)) {
        hnsw.parallel_insert_slice(&chunk.to_vec());
        progress.advance(chunk.len() as u64);
    }
    progress.finish();
    let graph = Graph::from_hnsw(&hnsw, vectors.len());
    drop(hnsw);
    save_graph(dir, &graph)?;
    Ok(graph)
}

fn save_graph(dir: &Path, graph: &Graph) -> Result<(), IndexError> {
    let path = dir.join(GRAPH_FILE);
    std::fs::write(&path, graph.to_bytes()).map_err(|e| IndexError::Io {
        path: path.display().to_string(),
        problem: format!("cannot write the HNSW graph: {e}"),
    })
}

/// The published snapshot's graph, and which of its points the new snapshot's points are:
/// `old_of_new[i]` is the published point whose vector point `i` carries unchanged.
pub struct GraphSeed<'a> {
    pub snapshot: &'a str,
    pub graph: &'a Graph,
    pub old_of_new: &'a [Option<u32>],
}

/// Share of a snapshot's points a patch may insert; above it a graph is built from nothing
/// (one insertion at a time on one core against hnsw_rs's parallel build).
pub const PATCH_MAX_INSERTED: f64 = 0.10;
/// Probe recall@10 a patched graph must reach to be kept (the fresh build's target, issue 32).
pub const PATCH_MIN_RECALL: f64 = 0.98;
/// Indexed vectors used as probe queries for a graph's recall (see [`Graph::probe_recall`]).
pub const RECALL_PROBES: usize = 200;
/// What the graph patch's progress bar says.
pub const PATCH_STEP: &str = "patching the published HNSW graph";

/// How a snapshot's graph was made (`graph` in its manifest).
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct GraphBuild {
    /// `built` (from nothing) or `patched` (from the published snapshot's graph).
    pub method: GraphMethod,
    /// The snapshot whose graph was patched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patched_from: Option<String>,
    /// With `patched`: points kept, inserted and removed ([`PatchCounts`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<PatchCounts>,
    /// Recall@10 of the written graph at `ef_search` [`HNSW_EF_SEARCH`] against the exact
    /// scan, over [`RECALL_PROBES`] of its own vectors as queries.
    pub probe_recall: f64,
    /// Why the published graph was not patched, when it could have been.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub not_patched: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum GraphMethod {
    Built,
    Patched,
}

/// Writes the graph of a snapshot whose vectors are `vectors` into `dir`: patched from `seed`
/// when at most [`PATCH_MAX_INSERTED`] of the points need inserting and the patched graph's
/// probe recall is at least [`PATCH_MIN_RECALL`], built from nothing otherwise.
pub fn write_graph(
    dir: &Path,
    vectors: &Vectors,
    seed: Option<GraphSeed>,
    progress: &dyn super::Progress,
) -> Result<GraphBuild, IndexError> {
    let recall = |g: &Graph| {
        let r = g.probe_recall(vectors, RECALL_PROBES, 10, HNSW_EF_SEARCH);
        (r * 1e4).round() / 1e4
    };
    let mut not_patched = None;
    if let Some(seed) = seed {
        let n = seed.old_of_new.len();
        let reused = seed.old_of_new.iter().filter(|o| o.is_some()).count();
        let new = n - reused;
        if new as f64 > PATCH_MAX_INSERTED * n as f64 {
            not_patched = Some(format!(
                "{new} of {n} points are new or changed (more than {}%)",
                PATCH_MAX_INSERTED * 100.0
            ));
        } else {
            let patched =
                seed.graph
                    .patched(seed.old_of_new, vectors, GraphParams::SHIPPED, progress);
            match patched {
                None => not_patched = Some("no point of the published graph is kept".into()),
                Some((graph, counts)) => {
                    let probe_recall = recall(&graph);
                    if probe_recall >= PATCH_MIN_RECALL {
                        save_graph(dir, &graph)?;
                        return Ok(GraphBuild {
                            method: GraphMethod::Patched,
                            patched_from: Some(seed.snapshot.to_string()),
                            patch: Some(counts),
                            probe_recall,
                            not_patched: None,
                        });
                    }
                    not_patched = Some(format!(
                        "the patched graph's probe recall@10 was {probe_recall}, below {PATCH_MIN_RECALL}"
                    ));
                }
            }
        }
        if let Some(reason) = &not_patched {
            tracing::info!(%reason, "building the HNSW graph from nothing");
        }
    }
    let graph = build_hnsw_with(dir, vectors, GraphParams::SHIPPED, progress)?;
    Ok(GraphBuild {
        method: GraphMethod::Built,
        patched_from: None,
        patch: None,
        probe_recall: recall(&graph),
        not_patched,
    })
}

/// A loaded dense index.
pub struct Dense {
    rows: Rows,
    graph: Option<Graph>,
}

/// What a search reads the documents' vectors from.
enum Rows {
    /// The f32 vectors (the exact backend's mapped file; an f32 graph search in benches).
    Full(Vectors),
    /// A served HNSW snapshot: coded rows in memory for the walk, the f32 rows read from the
    /// file for the final candidates ([`super::codes`]).
    Coded { codes: Codes, file: RowFile },
}

impl Dense {
    pub fn exact(vectors: Vectors) -> Dense {
        Dense {
            rows: Rows::Full(vectors),
            graph: None,
        }
    }

    /// The graph [`build_hnsw`] wrote into `dir`, searched over the f32 `vectors` (the form
    /// before coded rows: the scale bench compares the two).
    pub fn with_hnsw(vectors: Vectors, dir: &Path) -> Result<Dense, IndexError> {
        let graph = read_graph(dir, vectors.len())?;
        Ok(Dense {
            rows: Rows::Full(vectors),
            graph: Some(graph),
        })
    }

    /// How a replica serves an HNSW snapshot: the graph in `dir`, walked over `codes` (those
    /// of `vectors_file`, [`Codes::read`]), the final candidates scored from that file's f32
    /// rows.
    pub fn with_hnsw_coded(
        codes: Codes,
        vectors_file: &Path,
        dir: &Path,
    ) -> Result<Dense, IndexError> {
        let graph = read_graph(dir, codes.len())?;
        let file = RowFile::open(vectors_file, codes.dim(), codes.len())?;
        Ok(Dense {
            rows: Rows::Coded { codes, file },
            graph: Some(graph),
        })
    }

    /// The HNSW graph, when this index has one (for benches: [`Graph::search`] with any `ef`).
    pub fn graph(&self) -> Option<&Graph> {
        self.graph.as_ref()
    }

    pub fn backend(&self) -> Backend {
        if self.graph.is_some() {
            Backend::Hnsw
        } else {
            Backend::Exact
        }
    }

    /// How many documents have a vector.
    pub fn len(&self) -> usize {
        match &self.rows {
            Rows::Full(v) => v.len(),
            Rows::Coded { file, .. } => file.len(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether the graph walks coded rows (a served HNSW snapshot).
    pub fn is_coded(&self) -> bool {
        matches!(self.rows, Rows::Coded { .. })
    }

    /// Document `i`'s f32 vector.
    pub fn row(&self, i: u32) -> Result<Cow<'_, [f32]>, IndexError> {
        match &self.rows {
            Rows::Full(v) => Ok(Cow::Borrowed(v.row(i as usize))),
            Rows::Coded { file, .. } => {
                let mut row = vec![0f32; file.dim()];
                file.read_row(i, &mut row)?;
                Ok(Cow::Owned(row))
            }
        }
    }

    /// Bytes the search holds in the heap: the graph's neighbour lists and the coded rows
    /// (mapped f32 vectors are page cache, not counted).
    pub fn heap_bytes(&self) -> usize {
        let codes = match &self.rows {
            Rows::Coded { codes, .. } => codes.heap_bytes(),
            Rows::Full(_) => 0,
        };
        codes + self.graph.as_ref().map_or(0, Graph::heap_bytes)
    }

    /// Top `k` (ordinal, cosine similarity), best first, among allowed documents.
    /// `allowed_count` is how many documents `allowed` admits (to pick the strategy: below
    /// [`HNSW_MIN_ALLOWED_SHARE`] of the documents a scan, else the graph). With coded rows
    /// the walk or scan keeps `max(k, HNSW_EF_SEARCH)` candidates, which are then scored
    /// exactly from their f32 rows: the similarities returned are always the f32 ones.
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        allowed: &dyn Fn(u32) -> bool,
        allowed_count: usize,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        let graph = self
            .graph
            .as_ref()
            .filter(|_| (allowed_count as f64) >= HNSW_MIN_ALLOWED_SHARE * self.len() as f64);
        match (&self.rows, graph) {
            (Rows::Full(v), Some(g)) => Ok(g.search(v, query, k, HNSW_EF_SEARCH, allowed)),
            (Rows::Full(v), None) => Ok(exact_top_k(v, query, k, allowed)),
            (Rows::Coded { codes, file }, graph) => {
                if k == 0 {
                    return Ok(Vec::new());
                }
                let pool = k.max(HNSW_EF_SEARCH);
                let coded = codes.query(query);
                let sim = |i: u32| codes.sim(i, &coded);
                let candidates = match graph {
                    Some(g) => g.nearest(sim, pool, HNSW_EF_SEARCH, allowed),
                    None => top_k_by(codes.len(), pool, allowed, sim),
                };
                file.rescore(candidates, query, k)
            }
        }
    }
}

fn read_graph(dir: &Path, points: usize) -> Result<Graph, IndexError> {
    let path = dir.join(GRAPH_FILE);
    let file = path.display().to_string();
    let bytes = std::fs::read(&path).map_err(|e| IndexError::Io {
        path: file.clone(),
        problem: e.to_string(),
    })?;
    let graph = Graph::from_bytes(&bytes, &file)?;
    if graph.points() != points {
        return Err(IndexError::Corrupt {
            file,
            problem: format!("a graph of {} points for {points} vectors", graph.points()),
        });
    }
    Ok(graph)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unit(v: &[f32]) -> Vec<f32> {
        let n = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / n).collect()
    }

    #[test]
    fn exact_scan_orders_by_similarity_then_ordinal() {
        let rows = [
            unit(&[1.0, 0.0]),
            unit(&[0.0, 1.0]),
            unit(&[1.0, 0.0]),
            unit(&[1.0, 1.0]),
        ];
        let vectors = Vectors::new(2, rows.concat());
        let got = exact_top_k(&vectors, &unit(&[1.0, 0.0]), 3, &|_| true);
        let ids: Vec<u32> = got.iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, vec![0, 2, 3]);
        let filtered = exact_top_k(&vectors, &unit(&[1.0, 0.0]), 3, &|i| i != 0);
        assert_eq!(filtered[0].0, 2);
    }

    #[test]
    fn dot_matches_the_plain_sum_at_every_length() {
        for len in [0usize, 1, 15, 16, 17, 384, 390] {
            let a: Vec<f32> = (0..len).map(|i| (i as f32 * 0.37).sin()).collect();
            let b: Vec<f32> = (0..len).map(|i| (i as f32 * 0.11).cos()).collect();
            let plain: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(x * y)).sum();
            assert!((f64::from(dot(&a, &b)) - plain).abs() < 1e-4, "len {len}");
        }
    }

    #[test]
    fn cosine_distance_is_zero_not_negative_when_rounding_exceeds_one() {
        let v = [1.000_000_1f32];
        assert!(dot(&v, &v) > 1.0);
        assert_eq!(CosineDistance.eval(&v, &v), 0.0);
        assert_eq!(CosineDistance.eval(&[1.0, 0.0], &[0.0, 1.0]), 1.0);
    }

    #[test]
    fn vectors_round_trip_through_bytes_and_refuse_ragged_files() {
        let v = Vectors::new(3, vec![0.5, -1.0, 2.0, 3.0, 4.0, 5.0]);
        let back = Vectors::from_bytes(&v.to_bytes(), 3, "vectors.f32").unwrap();
        assert_eq!(*back.data, *v.data);
        assert!(Vectors::from_bytes(&[0u8; 10], 3, "vectors.f32").is_err());
    }

    #[test]
    fn a_vectors_file_is_mapped_and_reads_as_written_and_a_ragged_one_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let v = Vectors::new(3, vec![0.5, -1.0, 2.0, 3.0, 4.0, 5.0]);
        let path = dir.path().join("vectors.f32");
        std::fs::write(&path, v.to_bytes()).unwrap();
        let mapped = Vectors::map(&path, 3).unwrap();
        assert!(mapped.is_mapped());
        assert_eq!(mapped.len(), 2);
        assert_eq!(mapped.row(1), &[3.0, 4.0, 5.0]);
        std::fs::write(&path, [0u8; 10]).unwrap();
        match Vectors::map(&path, 3) {
            Err(IndexError::Corrupt { file, problem }) => {
                assert_eq!(file, path.display().to_string());
                assert_eq!(
                    problem,
                    "10 bytes is not a whole number of 3-dimensional f32 vectors"
                );
            }
            Err(other) => panic!("expected Corrupt, got {other}"),
            Ok(_) => panic!("a ragged file was mapped"),
        }
        std::fs::write(&path, []).unwrap();
        assert_eq!(Vectors::map(&path, 3).unwrap().len(), 0);
    }

    #[test]
    fn hnsw_finds_the_exact_neighbours_on_a_small_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        for i in 0..500u32 {
            let a = i as f32 * 0.0125;
            data.extend(unit(&[a.cos(), a.sin(), 0.1 * (i % 7) as f32]));
        }
        let vectors = Vectors::new(3, data);
        build_hnsw(dir.path(), &vectors).unwrap();
        let copy = Vectors::new(3, vectors.data.to_vec());
        let dense = Dense::with_hnsw(copy, dir.path()).unwrap();
        let q = unit(&[1.0, 0.2, 0.0]);
        let exact: Vec<u32> = exact_top_k(&vectors, &q, 10, &|_| true)
            .iter()
            .map(|x| x.0)
            .collect();
        let approx: Vec<u32> = dense
            .search(&q, 10, &|_| true, 500)
            .unwrap()
            .iter()
            .map(|x| x.0)
            .collect();
        let overlap = approx.iter().filter(|i| exact.contains(i)).count();
        assert!(overlap >= 9, "overlap {overlap}: {approx:?} vs {exact:?}");
    }

    /// `n` unit vectors of `dim` pseudo-random components (a fixed sequence).
    fn spread(n: usize, dim: usize) -> Vectors {
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut data = Vec::with_capacity(n * dim);
        for _ in 0..n {
            let row: Vec<f32> = (0..dim)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 - 0.5
                })
                .collect();
            data.extend(unit(&row));
        }
        Vectors::new(dim, data)
    }

    #[test]
    fn a_served_graph_walks_coded_rows_and_returns_the_exact_f32_similarities() {
        let dir = tempfile::tempdir().unwrap();
        let vectors = spread(3000, 48);
        std::fs::write(dir.path().join("vectors.f32"), vectors.to_bytes()).unwrap();
        build_hnsw(dir.path(), &vectors).unwrap();
        let file = dir.path().join("vectors.f32");
        let codes = Codes::read(&file, 48).unwrap();
        let served = Dense::with_hnsw_coded(codes, &file, dir.path()).unwrap();
        assert!(served.is_coded());
        assert_eq!(served.len(), 3000);
        assert_eq!(
            served.heap_bytes(),
            3000 * 48 + 3000 * 4 + served.graph().unwrap().heap_bytes()
        );
        assert_eq!(&*served.row(17).unwrap(), vectors.row(17));
        let codes = Codes::of(&vectors);
        let mut recall = 0;
        for probe in 0..20 {
            let q = vectors.row(probe * 97 + 5).to_vec();
            let got = served.search(&q, 10, &|_| true, 3000).unwrap();
            let exact = exact_top_k(&vectors, &q, 10, &|_| true);
            // Every similarity returned is the f32 dot product, not the coded one.
            for &(i, sim) in &got {
                assert_eq!(sim, dot(vectors.row(i as usize), &q));
            }
            recall += got
                .iter()
                .filter(|h| exact.iter().any(|e| e.0 == h.0))
                .count();
            // The pair: the coded similarity alone is not the f32 one.
            let coded = codes.query(&q);
            assert!(got.iter().any(|&(i, sim)| codes.sim(i, &coded) != sim));
            // A filtered query below the graph's share scans the coded rows and rescores:
            // exactly the exact scan's answer here.
            let few = |i: u32| i % 20 == 3;
            assert_eq!(
                served.search(&q, 10, &few, 150).unwrap(),
                exact_top_k(&vectors, &q, 10, &few)
            );
        }
        assert!(recall >= 196, "recall@10 over 20 probes: {recall} of 200");
        assert!(served
            .search(vectors.row(0), 0, &|_| true, 3000)
            .unwrap()
            .is_empty());
    }
}
