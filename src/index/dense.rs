//! The dense side: nearest neighbours of a query embedding among the documents' embeddings
//! (all L2-normalised, so cosine similarity is a dot product).
//!
//! Two backends, chosen by size at build time: an exact scan, which is faster and exact for
//! small catalogs (the demo's ~750 documents scan in microseconds), and an HNSW graph
//! (hnsw_rs), dumped into the snapshot and reloaded, for large ones. `EXACT_MAX_DOCS` is where
//! the scale bench measured the crossover; see `docs/PERFORMANCE.md`.

use std::path::Path;

use hnsw_rs::anndists::dist::Distance;
use hnsw_rs::api::AnnT;
use hnsw_rs::hnsw::Hnsw;
use hnsw_rs::hnswio::HnswIo;

use super::IndexError;

/// Up to this many documents the exact scan serves queries; above it, HNSW. Release scale
/// bench of 2026-11-30 with the vectorised [`dot`]: at 10k documents the exact scan takes
/// 0.76 ms p50 against HNSW's 1.22 ms, at 100k 7.1 ms against 1.8 ms; the scan grows
/// linearly, so they cross near 20k.
pub const EXACT_MAX_DOCS: usize = 20_000;
/// Below this share of allowed documents a filtered query scans exactly (HNSW's filtered
/// search loses recall when most of the graph is filtered out).
const HNSW_MIN_ALLOWED_SHARE: f64 = 0.10;
const HNSW_BASENAME: &str = "dense";
const HNSW_M: usize = 24;
const HNSW_EF_CONSTRUCTION: usize = 200;
const HNSW_EF_SEARCH: usize = 128;

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
    pub data: Vec<f32>,
}

impl Vectors {
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
        if dim == 0 || !bytes.len().is_multiple_of(4 * dim) {
            return Err(IndexError::Corrupt {
                file: file.to_string(),
                problem: format!(
                    "{} bytes is not a whole number of {dim}-dimensional f32 vectors",
                    bytes.len()
                ),
            });
        }
        let data = bytes
            .chunks_exact(4)
            .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        Ok(Vectors { dim, data })
    }
}

/// Partial sums kept by [`dot`].
const DOT_LANES: usize = 16;

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
    let mut scored: Vec<(u32, f32)> = (0..vectors.len() as u32)
        .filter(|&i| allowed(i))
        .map(|i| (i, dot(vectors.row(i as usize), query)))
        .collect();
    let cmp = |a: &(u32, f32), b: &(u32, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if scored.len() > k {
        scored.select_nth_unstable_by(k, cmp);
        scored.truncate(k);
    }
    scored.sort_by(cmp);
    scored
}

/// Builds an HNSW graph over `vectors` and dumps it into `dir`.
pub fn build_hnsw(dir: &Path, vectors: &Vectors) -> Result<(), IndexError> {
    let hnsw: Hnsw<f32, CosineDistance> = Hnsw::new(
        HNSW_M,
        vectors.len(),
        16,
        HNSW_EF_CONSTRUCTION,
        CosineDistance,
    );
    let rows: Vec<(&[f32], usize)> = (0..vectors.len()).map(|i| (vectors.row(i), i)).collect();
    hnsw.parallel_insert_slice(&rows);
    let written = hnsw
        .file_dump(dir, HNSW_BASENAME)
        .map_err(|e| IndexError::Io {
            path: dir.display().to_string(),
            problem: format!("cannot write the HNSW graph: {e}"),
        })?;
    if written != HNSW_BASENAME {
        return Err(IndexError::Io {
            path: dir.display().to_string(),
            problem: format!("HNSW graph was written as '{written}', expected '{HNSW_BASENAME}'"),
        });
    }
    Ok(())
}

/// A loaded dense index.
pub struct Dense {
    pub vectors: Vectors,
    hnsw: Option<Hnsw<'static, f32, CosineDistance>>,
}

impl Dense {
    pub fn exact(vectors: Vectors) -> Dense {
        Dense {
            vectors,
            hnsw: None,
        }
    }

    /// Loads the HNSW graph dumped by [`build_hnsw`]. The loader borrows its reader for the
    /// graph's lifetime, so the reader is leaked: one small allocation per load of a large
    /// snapshot (loads happen at start and on swaps, not per request).
    pub fn with_hnsw(vectors: Vectors, dir: &Path) -> Result<Dense, IndexError> {
        let io: &'static mut HnswIo = Box::leak(Box::new(HnswIo::new(dir, HNSW_BASENAME)));
        let hnsw = io
            .load_hnsw::<f32, CosineDistance>()
            .map_err(|e| IndexError::Corrupt {
                file: dir
                    .join(format!("{HNSW_BASENAME}.hnsw.graph"))
                    .display()
                    .to_string(),
                problem: format!("cannot load the HNSW graph: {e}"),
            })?;
        Ok(Dense {
            vectors,
            hnsw: Some(hnsw),
        })
    }

    pub fn backend(&self) -> Backend {
        if self.hnsw.is_some() {
            Backend::Hnsw
        } else {
            Backend::Exact
        }
    }

    /// Top `k` (ordinal, cosine similarity), best first, among allowed documents.
    /// `allowed_count` is how many documents `allowed` admits (to pick the strategy).
    pub fn search(
        &self,
        query: &[f32],
        k: usize,
        allowed: &dyn Fn(u32) -> bool,
        allowed_count: usize,
    ) -> Vec<(u32, f32)> {
        match &self.hnsw {
            Some(hnsw)
                if (allowed_count as f64) >= HNSW_MIN_ALLOWED_SHARE * self.vectors.len() as f64 =>
            {
                let filter = |id: &usize| allowed(*id as u32);
                let everything = allowed_count == self.vectors.len();
                let found = if everything {
                    hnsw.search(query, k, HNSW_EF_SEARCH.max(k))
                } else {
                    hnsw.search_filter(query, k, HNSW_EF_SEARCH.max(k), Some(&filter))
                };
                let mut out: Vec<(u32, f32)> = found
                    .into_iter()
                    .map(|n| (n.d_id as u32, 1.0 - n.distance))
                    .collect();
                out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
                out
            }
            _ => exact_top_k(&self.vectors, query, k, allowed),
        }
    }
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
        let vectors = Vectors {
            dim: 2,
            data: rows.concat(),
        };
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
        let v = Vectors {
            dim: 3,
            data: vec![0.5, -1.0, 2.0, 3.0, 4.0, 5.0],
        };
        let back = Vectors::from_bytes(&v.to_bytes(), 3, "vectors.f32").unwrap();
        assert_eq!(back.data, v.data);
        assert!(Vectors::from_bytes(&[0u8; 10], 3, "vectors.f32").is_err());
    }

    #[test]
    fn hnsw_finds_the_exact_neighbours_on_a_small_set() {
        let dir = tempfile::tempdir().unwrap();
        let mut data = Vec::new();
        for i in 0..500u32 {
            let a = i as f32 * 0.0125;
            data.extend(unit(&[a.cos(), a.sin(), 0.1 * (i % 7) as f32]));
        }
        let vectors = Vectors { dim: 3, data };
        build_hnsw(dir.path(), &vectors).unwrap();
        let copy = Vectors {
            dim: 3,
            data: vectors.data.clone(),
        };
        let dense = Dense::with_hnsw(copy, dir.path()).unwrap();
        let q = unit(&[1.0, 0.2, 0.0]);
        let exact: Vec<u32> = exact_top_k(&vectors, &q, 10, &|_| true)
            .iter()
            .map(|x| x.0)
            .collect();
        let approx: Vec<u32> = dense
            .search(&q, 10, &|_| true, 500)
            .iter()
            .map(|x| x.0)
            .collect();
        let overlap = approx.iter().filter(|i| exact.contains(i)).count();
        assert!(overlap >= 9, "overlap {overlap}: {approx:?} vs {exact:?}");
    }
}
