//! The HNSW graph a large snapshot serves, stored compactly and searched by govcat's own code.
//!
//! hnsw_rs builds the graph (parallel insertion, its neighbour selection); its in-memory form
//! keeps every neighbour as a reference-counted pointer to a point object, which the scale bench
//! measured at roughly 4.5 KB a column at 100k columns, with the vectors copied a second time
//! (docs/PERFORMANCE.md, "Memory a column costs"). Searching needs only the neighbour lists,
//! so after the build they are extracted into flat `u32` arrays (at most 2 `m` neighbours a
//! point on the bottom layer, `m` above: 4 bytes each) and the vectors are read from the
//! snapshot's own `vectors.f32`. The search is the one of the HNSW paper (Malkov & Yashunin,
//! algorithms 2 and 5): a greedy descent through the upper layers, then a beam of `ef`
//! candidates on the bottom one.
//!
//! File `dense.graph`, little-endian `u32` words: the magic `GRAPH_MAGIC`, the point count, the
//! layer count, the entry point; then per layer its node count, its nodes (ordinals, ascending;
//! omitted for the bottom layer, which holds every point), `node count + 1` offsets into its
//! targets, and the targets (neighbour ordinals).

use std::cmp::Ordering as CmpOrdering;
use std::collections::BinaryHeap;

use super::dense::{dot, Vectors};
use super::IndexError;

mod patch;
pub use patch::PatchCounts;

/// "GVG1".
const GRAPH_MAGIC: u32 = u32::from_le_bytes(*b"GVG1");

/// One layer: the neighbour lists of its nodes.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Layer {
    /// The ordinals on this layer, ascending; `None` on the bottom layer (every ordinal).
    nodes: Option<Vec<u32>>,
    /// Neighbours of the layer's i-th node: `targets[offsets[i]..offsets[i + 1]]`.
    offsets: Vec<u32>,
    targets: Vec<u32>,
}

impl Layer {
    fn neighbours(&self, ordinal: u32) -> &[u32] {
        let slot = match &self.nodes {
            None => Some(ordinal as usize),
            Some(nodes) => nodes.binary_search(&ordinal).ok(),
        };
        match slot {
            Some(i) if i + 1 < self.offsets.len() => {
                &self.targets[self.offsets[i] as usize..self.offsets[i + 1] as usize]
            }
            _ => &[],
        }
    }
}

/// A searchable HNSW graph over the ordinals `0..points`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Graph {
    points: u32,
    entry: u32,
    /// Bottom layer first.
    layers: Vec<Layer>,
}

/// A similarity ordered for the heaps (total order; ties by ordinal).
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Scored(pub(super) f32, pub(super) u32);

impl Eq for Scored {}

impl PartialOrd for Scored {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}

impl Ord for Scored {
    fn cmp(&self, other: &Self) -> CmpOrdering {
        self.0
            .total_cmp(&other.0)
            .then_with(|| other.1.cmp(&self.1))
    }
}

/// Points seen by one walk: a bit each.
pub(super) struct Visited(Vec<u64>);

impl Visited {
    pub(super) fn new(points: usize) -> Visited {
        Visited(vec![0; points.div_ceil(64)])
    }

    /// Marks `i` seen; whether it was not before.
    pub(super) fn first(&mut self, i: u32) -> bool {
        let (word, bit) = (i as usize / 64, 1u64 << (i % 64));
        let fresh = self.0[word] & bit == 0;
        self.0[word] |= bit;
        fresh
    }
}

/// The greedy walk of an upper layer: from `entry` to a neighbour more similar to the query
/// for as long as there is one; the point where it stops.
pub(super) fn greedy<'g>(
    neighbours: impl Fn(u32) -> &'g [u32],
    sim: impl Fn(u32) -> f32,
    mut entry: Scored,
) -> Scored {
    loop {
        let best = neighbours(entry.1)
            .iter()
            .map(|&nb| Scored(sim(nb), nb))
            .max()
            .filter(|s| *s > entry);
        match best {
            Some(s) => entry = s,
            None => return entry,
        }
    }
}

/// The beam search of one layer (the HNSW paper's algorithm 2) from `entries`: expands the best
/// unexpanded candidate until the `ef` nearest found so far are all better than it. Every point
/// scored is passed to `seen` (the entries too); returns the `ef` nearest, best first.
pub(super) fn beam<'g>(
    neighbours: impl Fn(u32) -> &'g [u32],
    sim: impl Fn(u32) -> f32,
    entries: &[Scored],
    ef: usize,
    visited: &mut Visited,
    mut seen: impl FnMut(Scored),
) -> Vec<Scored> {
    let mut candidates = BinaryHeap::new();
    let mut nearest = BinaryHeap::new();
    for &e in entries {
        if visited.first(e.1) {
            candidates.push(e);
            nearest.push(std::cmp::Reverse(e));
            seen(e);
        }
    }
    while nearest.len() > ef {
        nearest.pop();
    }
    while let Some(current) = candidates.pop() {
        let worst = nearest.peek().map(|r: &std::cmp::Reverse<Scored>| r.0);
        if nearest.len() >= ef && worst.is_some_and(|w| current < w) {
            break;
        }
        for &nb in neighbours(current.1) {
            if !visited.first(nb) {
                continue;
            }
            let s = Scored(sim(nb), nb);
            let worst = nearest.peek().map(|r| r.0);
            if nearest.len() < ef || worst.is_some_and(|w| s > w) {
                candidates.push(s);
                nearest.push(std::cmp::Reverse(s));
                if nearest.len() > ef {
                    nearest.pop();
                }
            }
            seen(s);
        }
    }
    let mut out: Vec<Scored> = nearest.into_iter().map(|r| r.0).collect();
    out.sort_by(|a, b| b.cmp(a));
    out
}

impl Graph {
    /// The graph from each point's neighbour lists: `levels[i]` is point i's top layer and
    /// `neighbours(i, layer)` its neighbours there.
    pub fn from_lists(levels: &[u8], mut neighbours: impl FnMut(u32, usize) -> Vec<u32>) -> Graph {
        let top = levels.iter().copied().max().unwrap_or(0) as usize;
        let entry = levels.iter().position(|&l| l as usize == top).unwrap_or(0) as u32;
        let layers = (0..=top)
            .map(|layer| {
                let members: Vec<u32> = (0..levels.len() as u32)
                    .filter(|&i| levels[i as usize] as usize >= layer)
                    .collect();
                let mut offsets = Vec::with_capacity(members.len() + 1);
                let mut targets = Vec::new();
                offsets.push(0);
                for &i in &members {
                    targets.extend(neighbours(i, layer));
                    offsets.push(targets.len() as u32);
                }
                Layer {
                    nodes: (layer > 0).then_some(members),
                    offsets,
                    targets,
                }
            })
            .collect();
        Graph {
            points: levels.len() as u32,
            entry,
            layers,
        }
    }

    /// Extracts the neighbour lists of a graph hnsw_rs built with data ids `0..n`.
    pub fn from_hnsw<D>(hnsw: &hnsw_rs::hnsw::Hnsw<f32, D>, n: usize) -> Graph
    where
        D: hnsw_rs::anndists::dist::Distance<f32> + Send + Sync,
    {
        let mut levels = vec![0u8; n];
        let mut lists: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
        for point in hnsw.get_point_indexation() {
            let ordinal = point.get_origin_id();
            if ordinal >= n {
                continue;
            }
            let level = point.get_point_id().0;
            levels[ordinal] = level;
            lists[ordinal] = point
                .get_neighborhood_id()
                .into_iter()
                .take(level as usize + 1)
                .map(|layer| layer.into_iter().map(|nb| nb.d_id as u32).collect())
                .collect();
        }
        // Each (point, layer) list is asked for once: moved out, not copied.
        Graph::from_lists(&levels, |i, layer| {
            lists[i as usize]
                .get_mut(layer)
                .map(std::mem::take)
                .unwrap_or_default()
        })
    }

    pub fn points(&self) -> usize {
        self.points as usize
    }

    /// The top layer's number (0 when every point is on the bottom layer only).
    pub fn top_layer(&self) -> usize {
        self.layers.len().saturating_sub(1)
    }

    /// Bytes the neighbour lists take in memory.
    pub fn heap_bytes(&self) -> usize {
        self.layers
            .iter()
            .map(|l| 4 * (l.offsets.len() + l.targets.len() + l.nodes.as_ref().map_or(0, Vec::len)))
            .sum()
    }

    /// The `k` most similar allowed points to `query` (cosine of unit vectors), best first,
    /// ties by ordinal; `ef` candidates are kept on the bottom layer (at least `k`).
    /// Points that `allowed` refuses are walked through but never returned.
    pub fn search(
        &self,
        vectors: &Vectors,
        query: &[f32],
        k: usize,
        ef: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if vectors.len() < self.points as usize {
            return Vec::new();
        }
        self.nearest(|i| dot(vectors.row(i as usize), query), k, ef, allowed)
    }

    /// [`Graph::search`] with any similarity of a point to the query (`sim`): the served
    /// search walks with coded rows ([`super::codes::Codes`]) and scores the result again.
    pub fn nearest(
        &self,
        sim: impl Fn(u32) -> f32,
        k: usize,
        ef: usize,
        allowed: &dyn Fn(u32) -> bool,
    ) -> Vec<(u32, f32)> {
        if self.points == 0 || k == 0 {
            return Vec::new();
        }
        let mut entry = Scored(sim(self.entry), self.entry);
        for layer in self.layers.iter().skip(1).rev() {
            entry = greedy(|i| layer.neighbours(i), &sim, entry);
        }
        let bottom = &self.layers[0];
        let mut visited = Visited::new(self.points as usize);
        let mut found: BinaryHeap<std::cmp::Reverse<Scored>> = BinaryHeap::new();
        let ef = ef.max(k);
        beam(
            |i| bottom.neighbours(i),
            &sim,
            &[entry],
            ef,
            &mut visited,
            |s| {
                if allowed(s.1) {
                    found.push(std::cmp::Reverse(s));
                    if found.len() > ef {
                        found.pop();
                    }
                }
            },
        );
        let mut out: Vec<(u32, f32)> = found.into_iter().map(|r| (r.0 .1, r.0 .0)).collect();
        out.sort_by(super::best_first);
        out.truncate(k);
        out
    }

    pub fn to_bytes(&self) -> Vec<u8> {
        let mut words = vec![
            GRAPH_MAGIC,
            self.points,
            self.layers.len() as u32,
            self.entry,
        ];
        for layer in &self.layers {
            words.push((layer.offsets.len() - 1) as u32);
            if let Some(nodes) = &layer.nodes {
                words.extend(nodes);
            }
            words.extend(&layer.offsets);
            words.extend(&layer.targets);
        }
        words.iter().flat_map(|w| w.to_le_bytes()).collect()
    }

    /// Reads a graph written by [`Graph::to_bytes`]; `file` names it in errors.
    pub fn from_bytes(bytes: &[u8], file: &str) -> Result<Graph, IndexError> {
        let corrupt = |problem: String| IndexError::Corrupt {
            file: file.to_string(),
            problem,
        };
        if !bytes.len().is_multiple_of(4) {
            return Err(corrupt(format!(
                "{} bytes is not a whole number of u32 words",
                bytes.len()
            )));
        }
        let words: Vec<u32> = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
            .collect();
        let mut at = 0usize;
        let mut take = |n: usize| -> Result<&[u32], IndexError> {
            let slice = words.get(at..at.saturating_add(n)).ok_or_else(|| {
                corrupt(format!(
                    "truncated: {} words where at least {} are needed",
                    words.len(),
                    at.saturating_add(n)
                ))
            })?;
            at += n;
            Ok(slice)
        };
        let head = take(4)?.to_vec();
        if head[0] != GRAPH_MAGIC {
            return Err(corrupt("not a govcat graph (wrong magic)".into()));
        }
        let (points, layer_count, entry) = (head[1], head[2] as usize, head[3]);
        if layer_count == 0 || (points > 0 && entry >= points) {
            return Err(corrupt(format!(
                "{layer_count} layers, entry {entry} of {points} points"
            )));
        }
        let mut layers = Vec::with_capacity(layer_count);
        for layer in 0..layer_count {
            let count = take(1)?[0] as usize;
            if layer == 0 && count != points as usize {
                return Err(corrupt(format!(
                    "the bottom layer has {count} nodes for {points} points"
                )));
            }
            let nodes = (layer > 0)
                .then(|| take(count).map(<[u32]>::to_vec))
                .transpose()?;
            let offsets = take(count + 1)?.to_vec();
            let edges = *offsets.last().unwrap_or(&0) as usize;
            let targets = take(edges)?.to_vec();
            let ordered = offsets.windows(2).all(|w| w[0] <= w[1]) && offsets[0] == 0;
            let in_range = targets
                .iter()
                .chain(nodes.iter().flatten())
                .all(|&t| t < points);
            if !ordered || !in_range {
                return Err(corrupt(format!(
                    "layer {layer} has offsets out of order or a neighbour beyond {points} points"
                )));
            }
            layers.push(Layer {
                nodes,
                offsets,
                targets,
            });
        }
        if at != words.len() {
            return Err(corrupt(format!(
                "{} words follow the last layer",
                words.len() - at
            )));
        }
        Ok(Graph {
            points,
            entry,
            layers,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A ring of `n` points on the unit circle, each linked to its two neighbours on the
    /// bottom layer, and every fourth point on layer 1, linked to the next fourth point.
    fn ring(n: u32) -> (Graph, Vectors) {
        let mut data = Vec::new();
        for i in 0..n {
            let a = std::f32::consts::TAU * i as f32 / n as f32;
            data.extend([a.cos(), a.sin()]);
        }
        let levels: Vec<u8> = (0..n).map(|i| u8::from(i % 4 == 0)).collect();
        let graph = Graph::from_lists(&levels, |i, layer| match layer {
            0 => vec![(i + n - 1) % n, (i + 1) % n],
            _ => vec![(i + n - 4) % n, (i + 4) % n],
        });
        (graph, Vectors::new(2, data))
    }

    #[test]
    fn the_search_walks_the_layers_to_the_nearest_points_and_skips_refused_ones() {
        let (graph, vectors) = ring(64);
        assert_eq!(graph.top_layer(), 1);
        let a = std::f32::consts::TAU * 37.2 / 64.0;
        let query = [a.cos(), a.sin()];
        let ids: Vec<u32> = graph
            .search(&vectors, &query, 3, 8, &|_| true)
            .iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(ids, vec![37, 38, 36]);
        let odd: Vec<u32> = graph
            .search(&vectors, &query, 3, 8, &|i| i % 2 == 1)
            .iter()
            .map(|h| h.0)
            .collect();
        assert_eq!(odd, vec![37, 39, 35]);
        assert!(graph.search(&vectors, &query, 3, 8, &|_| false).is_empty());
    }

    #[test]
    fn a_graph_reads_back_as_written_and_a_damaged_file_is_refused() {
        let (graph, _) = ring(16);
        let bytes = graph.to_bytes();
        assert_eq!(Graph::from_bytes(&bytes, "dense.graph").unwrap(), graph);
        let problem = |bytes: &[u8]| match Graph::from_bytes(bytes, "dense.graph") {
            Err(IndexError::Corrupt { file, problem }) => {
                assert_eq!(file, "dense.graph");
                problem
            }
            other => panic!("expected Corrupt, got {other:?}"),
        };
        assert_eq!(
            problem(&bytes[..bytes.len() - 4]),
            "truncated: 71 words where at least 72 are needed"
        );
        assert_eq!(
            problem(&bytes[..6]),
            "6 bytes is not a whole number of u32 words"
        );
        let mut wrong = bytes.clone();
        wrong[0] = b'X';
        assert_eq!(problem(&wrong), "not a govcat graph (wrong magic)");
        let mut beyond = bytes.clone();
        let last = beyond.len() - 4;
        beyond[last..].copy_from_slice(&99u32.to_le_bytes());
        assert_eq!(
            problem(&beyond),
            "layer 1 has offsets out of order or a neighbour beyond 16 points"
        );
    }
}
