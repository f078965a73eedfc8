//! How a large snapshot's vectors are served: one byte a dimension in memory for the HNSW walk,
//! the f32 rows read from `vectors.f32` only for the candidates the walk ends with.
//!
//! The walk scores a few thousand rows a query at 1M columns, at random. Over the mapped f32
//! file that made every replica hold the whole file in its resident pages within seconds of
//! traffic (each fault maps its neighbours: 1.5 GB at 1M, docs/PERFORMANCE.md "A replica
//! under load"). Here the walk reads [`Codes`] instead (384 bytes a column and a scale, in the
//! heap) and the final candidates, at most `max(k, ef)` of them, are scored again exactly from
//! their f32 rows, read by positional reads ([`RowFile`]): the page cache serves them, but they
//! are not mapped into the process. The similarities a search returns are therefore the exact
//! f32 dot products, as before; only which candidates reach the rescoring can differ.

use std::fs::File;
use std::io::Read;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::dense::{floats_from_le, Vectors, DOT_LANES};
use super::IndexError;

/// Rows of signed bytes with one scale each: row i's vector is about `scale * codes`.
/// A row's scale is its largest absolute component over 127 (symmetric, per row), so every
/// component is within half a scale step of the original. Each row is stored as its scale's
/// four bytes, then its `dim` codes: one walk step reads one place in memory (the scales in
/// an array of their own cost a second cache miss a row).
pub struct Codes {
    dim: usize,
    rows: Vec<u8>,
}

/// Bytes of a row's scale ahead of its codes.
const SCALE_BYTES: usize = 4;

/// Rows read at a time while a file is quantised.
const READ_ROWS: usize = 4096;

impl Codes {
    fn with_capacity(dim: usize, rows: usize) -> Codes {
        Codes {
            dim,
            rows: Vec::with_capacity(rows * (SCALE_BYTES + dim)),
        }
    }

    fn push(&mut self, row: &[f32]) {
        let max = row.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = max / 127.0;
        let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        self.rows.extend(scale.to_ne_bytes());
        self.rows.extend(
            row.iter()
                .map(|&x| round_to_int(x * inverse, 127) as i8 as u8),
        );
    }

    fn stride(&self) -> usize {
        SCALE_BYTES + self.dim
    }

    /// Row `i`'s scale and codes.
    fn row(&self, i: usize) -> (f32, &[i8]) {
        let row = &self.rows[i * self.stride()..(i + 1) * self.stride()];
        let (scale, codes) = row.split_at(SCALE_BYTES);
        let scale = f32::from_ne_bytes([scale[0], scale[1], scale[2], scale[3]]);
        (scale, bytemuck::cast_slice(codes))
    }

    pub fn of(vectors: &Vectors) -> Codes {
        let mut codes = Codes::with_capacity(vectors.dim, vectors.len());
        for i in 0..vectors.len() {
            codes.push(vectors.row(i));
        }
        codes
    }

    /// The codes of a snapshot's `vectors.f32` (rows of `dim` little-endian floats), read in
    /// blocks by plain reads: the file is never mapped, so its pages stay out of the process's
    /// resident memory.
    pub fn read(path: &Path, dim: usize) -> Result<Codes, IndexError> {
        let io = |e: std::io::Error| IndexError::Io {
            path: path.display().to_string(),
            problem: e.to_string(),
        };
        let mut file = File::open(path).map_err(io)?;
        let bytes = file.metadata().map_err(io)?.len() as usize;
        super::dense::whole_vectors(bytes, dim, &path.display().to_string())?;
        let rows = bytes / (4 * dim);
        let mut codes = Codes::with_capacity(dim, rows);
        let mut bytes = vec![0u8; READ_ROWS * dim * 4];
        let mut row = vec![0f32; dim];
        let mut left = rows;
        while left > 0 {
            let take = left.min(READ_ROWS);
            let block = &mut bytes[..take * dim * 4];
            file.read_exact(block).map_err(io)?;
            for chunk in block.chunks_exact(dim * 4) {
                floats_from_le(chunk, &mut row);
                codes.push(&row);
            }
            left -= take;
        }
        Ok(codes)
    }

    pub fn len(&self) -> usize {
        self.rows.len() / self.stride()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    /// `query` in the form [`Codes::sim`] scores rows against: 16-bit integers with one
    /// scale (its largest absolute component over `i16::MAX`), so the dot product with a row
    /// is an integer multiply-add, which the baseline instruction set does eight lanes at a
    /// time (converting the row's bytes to floats instead measured 1.4× the f32 walk's time).
    pub fn query(&self, query: &[f32]) -> CodedQuery {
        let max = query.iter().fold(0f32, |m, x| m.max(x.abs()));
        let scale = max / f32::from(i16::MAX);
        let inverse = if scale > 0.0 { 1.0 / scale } else { 0.0 };
        CodedQuery {
            values: query
                .iter()
                .map(|&x| round_to_int(x * inverse, 32767) as i16)
                .collect(),
            scale,
        }
    }

    /// About the dot product of row `i` with the query `q` was made from.
    pub fn sim(&self, i: u32, q: &CodedQuery) -> f32 {
        let (scale, code) = self.row(i as usize);
        // Per lane at most dim / 16 products of |127 * 32767|: no overflow below 8,000
        // dimensions.
        let mut acc = [0i32; DOT_LANES];
        let (cs, qs) = (
            code.chunks_exact(DOT_LANES),
            q.values.chunks_exact(DOT_LANES),
        );
        let tail: i64 = cs
            .remainder()
            .iter()
            .zip(qs.remainder())
            .map(|(&c, &v)| i64::from(c) * i64::from(v))
            .sum();
        for (c, v) in cs.zip(qs) {
            for l in 0..DOT_LANES {
                acc[l] += i32::from(c[l]) * i32::from(v[l]);
            }
        }
        let sum = acc.iter().map(|&a| i64::from(a)).sum::<i64>() + tail;
        scale * q.scale * sum as f32
    }

    /// Bytes the codes and scales take in memory.
    pub fn heap_bytes(&self) -> usize {
        self.rows.len()
    }
}

/// `x` rounded half away from zero and clamped to `±limit`. `f32::round` is a library call
/// on the baseline instruction set; a truncating conversion vectorises (quantising 1M rows
/// took 4.2 s with `round`).
fn round_to_int(x: f32, limit: i32) -> i32 {
    ((x + 0.5f32.copysign(x)) as i32).clamp(-limit, limit)
}

/// A query scaled to 16-bit integers ([`Codes::query`]).
pub struct CodedQuery {
    values: Vec<i16>,
    scale: f32,
}

/// A snapshot's `vectors.f32`, read a row at a time by positional reads.
pub struct RowFile {
    file: File,
    path: String,
    dim: usize,
    rows: usize,
}

impl RowFile {
    pub fn open(path: &Path, dim: usize, rows: usize) -> Result<RowFile, IndexError> {
        let file = File::open(path).map_err(|e| IndexError::Io {
            path: path.display().to_string(),
            problem: e.to_string(),
        })?;
        Ok(RowFile {
            file,
            path: path.display().to_string(),
            dim,
            rows,
        })
    }

    pub fn len(&self) -> usize {
        self.rows
    }

    pub fn dim(&self) -> usize {
        self.dim
    }

    pub fn is_empty(&self) -> bool {
        self.rows == 0
    }

    /// Row `i`'s floats into `out` (`dim` long).
    pub fn read_row(&self, i: u32, out: &mut [f32]) -> Result<(), IndexError> {
        self.read_row_via(i, &mut vec![0u8; self.dim * 4], out)
    }

    /// [`RowFile::read_row`] through `bytes` (`dim * 4` long), which a caller reading many
    /// rows allocates once.
    fn read_row_via(&self, i: u32, bytes: &mut [u8], out: &mut [f32]) -> Result<(), IndexError> {
        self.file
            .read_exact_at(bytes, i as u64 * (self.dim * 4) as u64)
            .map_err(|e| IndexError::Io {
                path: self.path.clone(),
                problem: format!("reading vector row {i}: {e}"),
            })?;
        floats_from_le(bytes, out);
        Ok(())
    }

    /// `candidates` scored again with their exact f32 rows (read in file order); the best `k`,
    /// ties by ordinal.
    pub fn rescore(
        &self,
        mut candidates: Vec<(u32, f32)>,
        query: &[f32],
        k: usize,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        candidates.sort_unstable_by_key(|c| c.0);
        let (mut bytes, mut row) = (vec![0u8; self.dim * 4], vec![0f32; self.dim]);
        for c in &mut candidates {
            self.read_row_via(c.0, &mut bytes, &mut row)?;
            c.1 = super::dense::dot(&row, query);
        }
        candidates.sort_by(super::best_first);
        candidates.truncate(k);
        Ok(candidates)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::dense::dot;

    fn rows() -> Vectors {
        let dim = 40;
        let data: Vec<f32> = (0..7 * dim)
            .map(|i| ((i as f32) * 0.731).sin() * if i % 11 == 0 { 3.0 } else { 0.5 })
            .collect();
        Vectors::new(dim, data)
    }

    #[test]
    fn a_coded_row_scores_within_half_a_step_a_component_of_the_exact_dot() {
        let v = rows();
        let codes = Codes::of(&v);
        let q: Vec<f32> = (0..v.dim).map(|i| (i as f32 * 0.3).cos()).collect();
        let coded = codes.query(&q);
        let q_abs: f32 = q.iter().map(|x| x.abs()).sum();
        for i in 0..v.len() {
            let exact = dot(v.row(i), &q);
            let row_abs: f32 = v.row(i).iter().map(|x| x.abs()).sum();
            // Half a step of the row's scale on every component, and of the query's.
            let bound = codes.row(i).0 / 2.0 * q_abs + coded.scale / 2.0 * row_abs + 1e-4;
            let got = codes.sim(i as u32, &coded);
            assert!((got - exact).abs() <= bound, "row {i}: {got} vs {exact}");
        }
        let zero = Codes::of(&Vectors::new(2, vec![0.0, 0.0]));
        assert_eq!(zero.sim(0, &zero.query(&[1.0, 1.0])), 0.0);
        assert_eq!(codes.sim(0, &codes.query(&vec![0.0; v.dim])), 0.0);
    }

    #[test]
    fn codes_read_from_a_file_equal_codes_of_the_same_rows_and_rows_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("vectors.f32");
        let v = rows();
        std::fs::write(&path, v.to_bytes()).unwrap();
        let read = Codes::read(&path, v.dim).unwrap();
        let of = Codes::of(&v);
        assert_eq!(read.rows, of.rows);
        assert_eq!(read.len(), v.len());
        assert_eq!(of.row(3).1.len(), v.dim);
        let file = RowFile::open(&path, v.dim, v.len()).unwrap();
        let mut row = vec![0f32; v.dim];
        file.read_row(5, &mut row).unwrap();
        assert_eq!(row, v.row(5));
        let q = v.row(2).to_vec();
        let rescored = file
            .rescore(vec![(6, 9.0), (2, 0.0), (4, 1.0)], &q, 2)
            .unwrap();
        let mut want: Vec<(u32, f32)> = [6u32, 2, 4]
            .iter()
            .map(|&i| (i, dot(v.row(i as usize), &q)))
            .collect();
        want.sort_by(crate::index::best_first);
        want.truncate(2);
        assert_eq!(rescored, want);
        assert_eq!(rescored[0].0, 2);
        match file.read_row(7, &mut row) {
            Err(IndexError::Io { path: p, problem }) => {
                assert_eq!(p, path.display().to_string());
                assert!(problem.starts_with("reading vector row 7: "), "{problem}");
            }
            other => panic!("expected Io, got {other:?}"),
        }
        match Codes::read(&path, v.dim + 1) {
            Err(IndexError::Corrupt { problem, .. }) => assert_eq!(
                problem,
                "1120 bytes is not a whole number of 41-dimensional f32 vectors"
            ),
            other => panic!("a ragged file read as codes: {:?}", other.map(|c| c.len())),
        }
    }
}
