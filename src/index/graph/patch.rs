//! A rebuilt snapshot's graph made from the published one instead of from nothing.
//!
//! When few columns changed, most points of the new snapshot carry the very vector a point of
//! the published snapshot carried (the build reuses vectors by text, `PreviousEmbeddings`), so
//! their neighbour lists still hold: they are copied, renumbered, with removed points dropped.
//! New and changed points, and kept points that lost more than half of their bottom-layer
//! neighbours, are then inserted one at a time the way the HNSW paper inserts (algorithm 1:
//! greedy descent to the point's layer, a beam of `ef_construction` candidates on each layer
//! below, neighbours chosen by the paper's heuristic, algorithm 4, and lists over their cap
//! pruned by the same heuristic). [`Graph::probe_recall`] then measures the result against the
//! exact scan; the build keeps the patched graph only above a floor and builds a fresh one
//! otherwise (`dense::write_graph`).

use super::{beam, greedy, Graph, Scored, Visited};
use crate::index::dense::{dot, exact_top_k, GraphParams, Vectors, PATCH_STEP};
use crate::index::Progress;

/// What [`Graph::patched`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PatchCounts {
    /// Points whose neighbour lists were copied from the published graph.
    pub kept: usize,
    /// Points inserted: new or changed ones, and kept ones re-linked.
    pub inserted: usize,
    /// Points of the published graph that are not in the new one.
    pub removed: usize,
}

/// Top layer a point inserted by a patch is given: the paper's `floor(-ln(u) * mL)` with
/// `mL = 1 / ln(m)`, `u` drawn from the point's ordinal (the same input gives the same graph).
fn level_of(ordinal: u32, m: usize) -> usize {
    // splitmix64
    let mut z = (ordinal as u64).wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    let u = ((z >> 11) as f64 + 0.5) / (1u64 << 53) as f64;
    ((-u.ln()) / (m.max(2) as f64).ln()).floor().min(15.0) as usize
}

/// Neighbour lists being edited: `lists[point][layer]`, a point's layers from the bottom.
struct Editing<'v> {
    vectors: &'v Vectors,
    lists: Vec<Vec<Vec<u32>>>,
    entry: u32,
    params: GraphParams,
}

impl Editing<'_> {
    fn top(&self) -> usize {
        self.lists[self.entry as usize].len() - 1
    }

    fn cap(&self, layer: usize) -> usize {
        if layer == 0 {
            2 * self.params.m
        } else {
            self.params.m
        }
    }

    fn sim(&self, a: u32, b: u32) -> f32 {
        dot(self.vectors.row(a as usize), self.vectors.row(b as usize))
    }

    /// The paper's neighbour heuristic: from `candidates` (best first, similarity to the point
    /// they are chosen for), each one that is more similar to that point than to every one
    /// already chosen, up to `cap`.
    fn diverse(&self, candidates: &[Scored], cap: usize) -> Vec<u32> {
        let mut chosen: Vec<u32> = Vec::with_capacity(cap);
        for c in candidates {
            if chosen.len() == cap {
                break;
            }
            if chosen.iter().all(|&r| self.sim(c.1, r) < c.0) {
                chosen.push(c.1);
            }
        }
        chosen
    }

    fn insert(&mut self, p: u32, level: usize) {
        let points = self.lists.len();
        let vectors = self.vectors;
        let query = vectors.row(p as usize);
        let sim = |i: u32| dot(vectors.row(i as usize), query);
        let top = self.top();
        let mut entries = vec![Scored(sim(self.entry), self.entry)];
        for layer in (level + 1..=top).rev() {
            let lists = &self.lists;
            entries = vec![greedy(
                |i| lists[i as usize].get(layer).map_or(&[][..], Vec::as_slice),
                sim,
                entries[0],
            )];
        }
        // A kept point linked again keeps what is left of its lists (other points' lists still
        // name it, so a walk may pass through it before this insertion reaches it).
        if self.lists[p as usize].len() <= level {
            self.lists[p as usize].resize(level + 1, Vec::new());
        }
        for layer in (0..=level.min(top)).rev() {
            let lists = &self.lists;
            let near = beam(
                |i| lists[i as usize].get(layer).map_or(&[][..], Vec::as_slice),
                sim,
                &entries,
                self.params.ef_construction,
                &mut Visited::new(points),
                |_| {},
            );
            let near: Vec<Scored> = near.into_iter().filter(|s| s.1 != p).collect();
            let cap = self.cap(layer);
            let mut chosen = self.diverse(&near, cap);
            for &e in &chosen {
                let Some(list) = self.lists[e as usize].get_mut(layer) else {
                    continue;
                };
                list.push(p);
                if list.len() > cap {
                    self.prune(e, layer, cap);
                }
            }
            let left = std::mem::take(&mut self.lists[p as usize][layer]);
            let extra: Vec<u32> = left
                .into_iter()
                .filter(|x| *x != p && !chosen.contains(x))
                .collect();
            chosen.extend(extra);
            self.lists[p as usize][layer] = chosen;
            if self.lists[p as usize][layer].len() > cap {
                self.prune(p, layer, cap);
            }
            entries = near;
        }
        if level > top {
            self.entry = p;
        }
    }

    /// Shrinks `e`'s list on `layer` to `cap` with the heuristic.
    fn prune(&mut self, e: u32, layer: usize, cap: usize) {
        let mut scored: Vec<Scored> = self.lists[e as usize][layer]
            .iter()
            .map(|&x| Scored(self.sim(e, x), x))
            .collect();
        scored.sort_by(|a, b| b.cmp(a));
        self.lists[e as usize][layer] = self.diverse(&scored, cap);
    }
}

impl Graph {
    /// Each point's top layer.
    fn levels(&self) -> Vec<u8> {
        let mut levels = vec![0u8; self.points as usize];
        for (number, layer) in self.layers.iter().enumerate().skip(1) {
            for &i in layer.nodes.iter().flatten() {
                levels[i as usize] = number as u8;
            }
        }
        levels
    }

    /// The graph over `vectors` made from this one: `old_of_new[i]` is the point of this graph
    /// whose vector point `i` carries unchanged (`None` for a new or changed point; no point of
    /// this graph named twice). `None` when no point is kept (nothing to patch from). Progress
    /// counts insertions.
    pub fn patched(
        &self,
        old_of_new: &[Option<u32>],
        vectors: &Vectors,
        params: GraphParams,
        progress: &dyn Progress,
    ) -> Option<(Graph, PatchCounts)> {
        let n = old_of_new.len();
        if vectors.len() != n {
            return None;
        }
        let mut new_of_old = vec![u32::MAX; self.points as usize];
        for (i, old) in old_of_new.iter().enumerate() {
            if let Some(o) = old.filter(|&o| o < self.points) {
                new_of_old[o as usize] = i as u32;
            }
        }
        let old_levels = self.levels();
        let mut lists: Vec<Vec<Vec<u32>>> = vec![Vec::new(); n];
        let mut relink = Vec::new();
        let mut kept = 0;
        for (i, old) in old_of_new.iter().enumerate() {
            let Some(o) = old.filter(|&o| new_of_old[o as usize] == i as u32) else {
                relink.push((i as u32, level_of(i as u32, params.m)));
                continue;
            };
            let level = old_levels[o as usize] as usize;
            lists[i] = (0..=level)
                .map(|layer| {
                    // hnsw_rs leaves a few upper-layer links to points below that layer.
                    self.layers[layer]
                        .neighbours(o)
                        .iter()
                        .filter(|&&t| old_levels[t as usize] as usize >= layer)
                        .map(|&t| new_of_old[t as usize])
                        .filter(|&t| t != u32::MAX)
                        .collect()
                })
                .collect();
            let before = self.layers[0].neighbours(o).len();
            if 2 * lists[i][0].len() < before {
                // Lost more than half of its bottom-layer neighbours: linked again.
                relink.push((i as u32, level));
            } else {
                kept += 1;
            }
        }
        let entry = match new_of_old.get(self.entry as usize) {
            Some(&e) if e != u32::MAX && !lists[e as usize].is_empty() => e,
            _ => (0..n)
                .filter(|&i| !lists[i].is_empty())
                .max_by_key(|&i| (lists[i].len(), std::cmp::Reverse(i)))? as u32,
        };
        let mut editing = Editing {
            vectors,
            lists,
            entry,
            params,
        };
        progress.start(PATCH_STEP, relink.len() as u64);
        for &(p, level) in &relink {
            editing.insert(p, level);
            progress.advance(1);
        }
        progress.finish();
        let levels: Vec<u8> = editing.lists.iter().map(|l| (l.len() - 1) as u8).collect();
        let mut lists = editing.lists;
        let mut graph = Graph::from_lists(&levels, |i, layer| {
            std::mem::take(&mut lists[i as usize][layer])
        });
        graph.entry = editing.entry;
        let counts = PatchCounts {
            kept,
            inserted: relink.len(),
            removed: new_of_old.iter().filter(|&&i| i == u32::MAX).count(),
        };
        Some((graph, counts))
    }

    /// Recall@`k` of this graph's search (at `ef`) against the exact scan, with `probes` of the
    /// indexed vectors themselves as queries (evenly spaced ordinals). A hit is any returned
    /// point at least as similar as the exact `k`-th, so tied vectors do not count as misses.
    pub fn probe_recall(&self, vectors: &Vectors, probes: usize, k: usize, ef: usize) -> f64 {
        let n = self.points as usize;
        if n == 0 || probes == 0 || k == 0 {
            return 1.0;
        }
        let step = n.div_ceil(probes).max(1);
        let (mut hits, mut wanted) = (0usize, 0usize);
        for probe in (0..n).step_by(step) {
            let query = vectors.row(probe);
            let exact = exact_top_k(vectors, query, k, &|_| true);
            let Some(&(_, kth)) = exact.last() else {
                continue;
            };
            wanted += exact.len();
            hits += self
                .search(vectors, query, k, ef, &|_| true)
                .iter()
                .filter(|(_, s)| *s >= kth)
                .count();
        }
        if wanted == 0 {
            1.0
        } else {
            hits as f64 / wanted as f64
        }
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::index::dense::{build_hnsw_with, write_graph, GraphBuild, GraphMethod, GraphSeed};
    use crate::index::Quiet;

    /// `n` unit vectors of 16 dimensions, a deterministic function of `seed`.
    fn unit_vectors(n: usize, seed: u64) -> Vec<Vec<f32>> {
        let mut state = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        let mut next = || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
        };
        (0..n)
            .map(|_| {
                let mut v: Vec<f32> = (0..16).map(|_| next()).collect();
                crate::embed::l2_normalise(&mut v);
                v
            })
            .collect()
    }

    fn vectors(rows: &[Vec<f32>]) -> Vectors {
        Vectors::new(16, rows.concat())
    }

    /// The published graph over 3,000 vectors, and a new snapshot's rows: every tenth of the
    /// first 300 removed, 20 changed (new vectors at their place), 25 appended.
    pub(super) fn refresh() -> (Graph, Vec<Vec<f32>>, Vec<Option<u32>>) {
        let old = unit_vectors(3000, 1);
        let dir = tempfile::tempdir().expect("tempdir");
        let graph = build_hnsw_with(dir.path(), &vectors(&old), GraphParams::SHIPPED, &Quiet)
            .expect("graph");
        let changed = unit_vectors(20, 2);
        let mut rows = Vec::new();
        let mut old_of_new = Vec::new();
        for (o, v) in old.iter().enumerate() {
            if o < 300 && o % 10 == 0 {
                continue;
            }
            if (1000..1020).contains(&o) {
                rows.push(changed[o - 1000].clone());
                old_of_new.push(None);
            } else {
                rows.push(v.clone());
                old_of_new.push(Some(o as u32));
            }
        }
        rows.extend(unit_vectors(25, 3));
        old_of_new.extend(std::iter::repeat_n(None, 25));
        (graph, rows, old_of_new)
    }

    #[test]
    fn a_patched_graph_keeps_the_unchanged_points_lists_and_finds_the_inserted_ones() {
        let (published, rows, old_of_new) = refresh();
        let new = vectors(&rows);
        let (graph, counts) = published
            .patched(&old_of_new, &new, GraphParams::SHIPPED, &Quiet)
            .expect("patched");
        assert_eq!(graph.points(), rows.len());
        assert_eq!(counts.removed, 30 + 20);
        assert_eq!(counts.kept + counts.inserted, rows.len());
        assert!(counts.inserted >= 45, "{counts:?}");
        // Every inserted point is found by its own vector.
        for (i, old) in old_of_new.iter().enumerate() {
            if old.is_none() {
                let top = graph.search(&new, &rows[i], 1, 128, &|_| true);
                assert_eq!(top.first().map(|h| h.0), Some(i as u32), "point {i}");
            }
        }
        let recall = graph.probe_recall(&new, 200, 10, 128);
        assert!(recall >= 0.98, "probe recall {recall}");
        // A kept point's bottom-layer list is the published one, renumbered, minus removed
        // points, plus points inserted next to it.
        let o = 2000u32;
        let i = old_of_new.iter().position(|&x| x == Some(o)).expect("kept") as u32;
        let renumbered: Vec<u32> = published.layers[0]
            .neighbours(o)
            .iter()
            .filter_map(|&t| old_of_new.iter().position(|&x| x == Some(t)))
            .map(|t| t as u32)
            .collect();
        let now = graph.layers[0].neighbours(i);
        assert!(
            renumbered.iter().all(|t| now.contains(t)) || now.len() == 2 * GraphParams::SHIPPED.m,
            "kept list {now:?} lost {renumbered:?}"
        );
    }

    #[test]
    fn points_that_lost_most_neighbours_are_linked_again_and_stay_findable() {
        // 2,900 points around one direction, 100 around another; 90 of the 100 are removed,
        // so the 10 left lose most of their neighbours (which were each other's cluster).
        let around = |centre: usize, n: usize, seed: u64| -> Vec<Vec<f32>> {
            unit_vectors(n, seed)
                .into_iter()
                .map(|mut v| {
                    v.iter_mut().for_each(|x| *x *= 0.3);
                    v[centre] += 1.0;
                    crate::embed::l2_normalise(&mut v);
                    v
                })
                .collect()
        };
        let mut old = around(0, 2900, 4);
        old.extend(around(1, 100, 5));
        let dir = tempfile::tempdir().expect("tempdir");
        let published = build_hnsw_with(dir.path(), &vectors(&old), GraphParams::SHIPPED, &Quiet)
            .expect("graph");
        let old_of_new: Vec<Option<u32>> = (0..2910u32)
            .map(|i| Some(if i < 2900 { i } else { i + 90 }))
            .collect();
        let rows: Vec<Vec<f32>> = old_of_new
            .iter()
            .map(|o| old[o.expect("kept") as usize].clone())
            .collect();
        let new = vectors(&rows);
        let (graph, counts) = published
            .patched(&old_of_new, &new, GraphParams::SHIPPED, &Quiet)
            .expect("patched");
        assert_eq!(counts.removed, 90);
        assert_eq!(counts.kept + counts.inserted, 2910);
        assert!(counts.inserted >= 10, "{counts:?}");
        for i in 2900..2910u32 {
            let top = graph.search(&new, &rows[i as usize], 1, 128, &|_| true);
            assert_eq!(top.first().map(|h| h.0), Some(i), "point {i}");
        }
        assert!(graph.probe_recall(&new, 200, 10, 128) >= 0.98);
    }

    #[test]
    fn nothing_kept_is_no_patch_and_too_many_new_points_build_a_fresh_graph() {
        let (published, rows, _) = refresh();
        let new = vectors(&rows);
        let none = vec![None; rows.len()];
        assert!(published
            .patched(&none, &new, GraphParams::SHIPPED, &Quiet)
            .is_none());

        let dir = tempfile::tempdir().expect("tempdir");
        let seed = GraphSeed {
            snapshot: "s1",
            graph: &published,
            old_of_new: &none,
        };
        let built = write_graph(dir.path(), &new, Some(seed), &Quiet).expect("graph");
        assert_eq!(built.method, GraphMethod::Built);
        assert_eq!(
            built.not_patched.as_deref(),
            Some("2995 of 2995 points are new or changed (more than 10%)")
        );
        assert!(built.probe_recall >= 0.98, "{built:?}");
    }

    #[test]
    fn a_small_refresh_writes_the_patched_graph_and_says_so() {
        let (published, rows, old_of_new) = refresh();
        let new = vectors(&rows);
        let dir = tempfile::tempdir().expect("tempdir");
        let seed = GraphSeed {
            snapshot: "s1",
            graph: &published,
            old_of_new: &old_of_new,
        };
        let written = write_graph(dir.path(), &new, Some(seed), &Quiet).expect("graph");
        let GraphBuild {
            method,
            patched_from,
            patch,
            probe_recall,
            not_patched,
        } = written;
        assert_eq!(method, GraphMethod::Patched);
        assert_eq!(patched_from.as_deref(), Some("s1"));
        assert_eq!(patch.map(|p| p.removed), Some(50));
        assert_eq!(not_patched, None);
        assert!(probe_recall >= 0.98);
        let bytes = std::fs::read(dir.path().join(crate::index::dense::GRAPH_FILE)).expect("file");
        let read = Graph::from_bytes(&bytes, "dense.graph").expect("reads");
        assert_eq!(read.points(), rows.len());
        assert_eq!(read.probe_recall(&new, 200, 10, 128), probe_recall);
    }
}
