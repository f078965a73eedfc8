//! Retrieval quality bench: recall, MRR and nDCG@10 for bm25, dense and hybrid on the labelled
//! query set (`fixtures/bench/queries.jsonl`), the out-of-vocabulary rate (must be 0), and the
//! calibration of fusion weights and the similarity floor on a calibration split, reported on
//! the held-out rest. Writes `target/bench/quality.json` and `target/bench/quality.html`.
//!
//! Run: `cargo bench --bench quality` (builds a fresh snapshot of the demo catalog with the
//! real model under `target/bench/quality-index/`; set `GOVCAT_BENCH_REUSE=1` to reuse it).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use govcat::catalog::dir::DirSource;
use govcat::embed::{Embedder, MiniLm};
use govcat::index::documents::Kind;
use govcat::index::{self, Snapshot};
use govcat::ontology::Ontology;
use govcat::retrieval::{asks_for_identifier, candidates, fuse, Fusion, Hit, Mode, Params};
use serde::Deserialize;
use serde_json::json;

#[derive(Deserialize)]
struct Labelled {
    id: String,
    query: String,
    lang: String,
    relevant: BTreeMap<String, u8>,
}

fn read_jsonl(path: &Path) -> Vec<Labelled> {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l).unwrap_or_else(|e| panic!("{}:{}: {e}", path.display(), i + 1))
        })
        .collect()
}

/// Similarity floors and key-column weights the calibration grid tries.
const FLOORS: [f32; 7] = [0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55];
const KEY_WEIGHTS: [f64; 4] = [1.0, 0.85, 0.7, 0.5];

/// Raw candidates of one query, computed once and fused many times.
struct Raw {
    lexical: Vec<(u32, f32)>,
    dense: Vec<(u32, f32)>,
    asks_for_identifier: bool,
}

impl Raw {
    /// Both sides fused with `params`.
    fn fused(&self, snapshot: &Snapshot, params: &Params) -> Vec<Hit> {
        fuse(
            snapshot,
            params,
            &self.lexical,
            &self.dense,
            self.asks_for_identifier,
        )
    }
}

fn raw(snapshot: &Snapshot, embedder: &dyn Embedder, q: &str) -> Raw {
    let kinds = [Kind::Column, Kind::OntologyValue];
    let query = govcat::retrieval::Query {
        description: q,
        domains: &snapshot.domains,
        kinds: &kinds,
        mode: Mode::Hybrid,
    };
    let (lexical, dense) = candidates(snapshot, embedder, &query).expect("retrieval");
    Raw {
        lexical,
        dense,
        asks_for_identifier: asks_for_identifier(snapshot, q),
    }
}

#[derive(Default, Clone, Copy, serde::Serialize)]
struct Metrics {
    queries: usize,
    /// Share of direct precedents (grade 2) in the top k, denominator min(k, #grade 2).
    recall_at_1: f64,
    recall_at_5: f64,
    recall_at_10: f64,
    /// Share of queries with at least one direct precedent in the top k.
    hit_at_1: f64,
    hit_at_5: f64,
    /// Share of all relevant ids (grade 1 and 2) in the top 10.
    full_recall_at_10: f64,
    mrr: f64,
    ndcg_at_10: f64,
}

fn evaluate(ranked: &[Vec<String>], labelled: &[&Labelled]) -> Metrics {
    let mut m = Metrics {
        queries: labelled.len(),
        ..Default::default()
    };
    for (ids, q) in ranked.iter().zip(labelled) {
        let direct: Vec<&String> = q
            .relevant
            .iter()
            .filter(|(_, g)| **g == 2)
            .map(|(id, _)| id)
            .collect();
        let recall = |k: usize| {
            let found = ids.iter().take(k).filter(|id| direct.contains(id)).count();
            found as f64 / direct.len().min(k).max(1) as f64
        };
        m.recall_at_1 += recall(1);
        m.recall_at_5 += recall(5);
        m.recall_at_10 += recall(10);
        m.hit_at_1 += f64::from(ids.iter().take(1).any(|id| direct.contains(&id)));
        m.hit_at_5 += f64::from(ids.iter().take(5).any(|id| direct.contains(&id)));
        let all_rel = q.relevant.len().max(1);
        m.full_recall_at_10 += ids
            .iter()
            .take(10)
            .filter(|id| q.relevant.contains_key(*id))
            .count() as f64
            / all_rel as f64;
        if let Some(pos) = ids.iter().position(|id| q.relevant.contains_key(id)) {
            m.mrr += 1.0 / (pos as f64 + 1.0);
        }
        let dcg: f64 = ids
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, id)| {
                let g = f64::from(*q.relevant.get(id).unwrap_or(&0));
                (2f64.powf(g) - 1.0) / (i as f64 + 2.0).log2()
            })
            .sum();
        let mut grades: Vec<u8> = q.relevant.values().copied().collect();
        grades.sort_by(|a, b| b.cmp(a));
        let idcg: f64 = grades
            .iter()
            .take(10)
            .enumerate()
            .map(|(i, g)| (2f64.powf(f64::from(*g)) - 1.0) / (i as f64 + 2.0).log2())
            .sum();
        m.ndcg_at_10 += if idcg > 0.0 { dcg / idcg } else { 0.0 };
    }
    let n = labelled.len().max(1) as f64;
    for v in [
        &mut m.recall_at_1,
        &mut m.recall_at_5,
        &mut m.recall_at_10,
        &mut m.hit_at_1,
        &mut m.hit_at_5,
        &mut m.full_recall_at_10,
        &mut m.mrr,
        &mut m.ndcg_at_10,
    ] {
        *v = (*v / n * 10_000.0).round() / 10_000.0;
    }
    m
}

#[derive(Clone, Copy, PartialEq)]
enum Side {
    Bm25,
    Dense,
    Hybrid,
}

fn ranked(snapshot: &Snapshot, raws: &[&Raw], params: &Params, side: Side) -> Vec<Vec<String>> {
    raws.iter()
        .map(|r| {
            let empty: Vec<(u32, f32)> = Vec::new();
            let (l, d) = match side {
                Side::Bm25 => (&r.lexical, &empty),
                Side::Dense => (&empty, &r.dense),
                Side::Hybrid => (&r.lexical, &r.dense),
            };
            fuse(snapshot, params, l, d, r.asks_for_identifier)
                .iter()
                .take(10)
                .map(|h| snapshot.doc(h.ord).id.clone())
                .collect()
        })
        .collect()
}

/// Share of negative queries that return at least one semantic-only entry.
fn negative_semantic_rate(snapshot: &Snapshot, raws: &[Raw], params: &Params) -> f64 {
    let n = raws.len().max(1) as f64;
    raws.iter()
        .filter(|r| {
            r.fused(snapshot, params)
                .iter()
                .any(|h| h.bm25_rank.is_none())
        })
        .count() as f64
        / n
}

fn is_calibration(id: &str) -> bool {
    id.trim_start_matches(|c: char| !c.is_ascii_digit())
        .parse::<u32>()
        .map(|n| n % 3 == 0)
        .unwrap_or(false)
}

fn bar_chart(rows: &[(&str, Metrics)]) -> String {
    let metrics = [
        "recall_at_1",
        "recall_at_5",
        "recall_at_10",
        "mrr",
        "ndcg_at_10",
    ];
    let colors = ["#8da0cb", "#fc8d62", "#66c2a5"];
    let (w, h, left, bottom) = (760.0, 320.0, 50.0, 40.0);
    let group = (w - left) / metrics.len() as f64;
    let bw = group / (rows.len() as f64 + 1.0);
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{}" font-family="sans-serif" font-size="12">"#,
        h + 30.0
    );
    for i in 0..=10 {
        let y = h - bottom - (h - bottom - 10.0) * f64::from(i) / 10.0;
        svg += &format!(
            r##"<line x1="{left}" x2="{w}" y1="{y}" y2="{y}" stroke="#ddd"/><text x="5" y="{}">{:.1}</text>"##,
            y + 4.0,
            f64::from(i) / 10.0
        );
    }
    for (mi, name) in metrics.iter().enumerate() {
        for (ri, (_, m)) in rows.iter().enumerate() {
            let v = serde_json::to_value(m)
                .ok()
                .and_then(|j| j[name].as_f64())
                .unwrap_or(0.0);
            let bh = (h - bottom - 10.0) * v;
            let x = left + group * mi as f64 + bw * (ri as f64 + 0.5);
            svg += &format!(
                r#"<rect x="{x:.1}" y="{:.1}" width="{:.1}" height="{bh:.1}" fill="{}"><title>{} {name}: {v:.3}</title></rect>"#,
                h - bottom - bh,
                bw * 0.9,
                colors[ri % 3],
                rows[ri].0
            );
        }
        svg += &format!(
            r#"<text x="{:.1}" y="{}" text-anchor="middle">{name}</text>"#,
            left + group * (mi as f64 + 0.5),
            h - bottom + 18.0
        );
    }
    for (ri, (label, _)) in rows.iter().enumerate() {
        svg += &format!(
            r#"<rect x="{}" y="{}" width="12" height="12" fill="{}"/><text x="{}" y="{}">{label}</text>"#,
            left + 120.0 * ri as f64,
            h + 8.0,
            colors[ri % 3],
            left + 16.0 + 120.0 * ri as f64,
            h + 18.0
        );
    }
    svg + "</svg>"
}

fn main() {
    // `cargo test --all-targets` runs bench targets too; measure only under `cargo bench`.
    if !std::env::args().any(|a| a == "--bench") {
        return;
    }
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let out_dir = root.join("target/bench");
    fs::create_dir_all(&out_dir).expect("target/bench");
    let ontology = Ontology::load(&root.join("ontology/lf-tags.json")).expect("ontology");
    let source =
        DirSource::open(&root.join("fixtures/catalog"), ontology.clone()).expect("catalog");
    let embedder = MiniLm::load(root.join("models/all-MiniLM-L6-v2"))
        .expect("model: run scripts/fetch-model.sh");
    let index_dir = out_dir.join("quality-index");
    let reuse = std::env::var("GOVCAT_BENCH_REUSE").is_ok_and(|v| v == "1");
    if !(reuse && index_dir.join("CURRENT").exists()) {
        let t = Instant::now();
        index::build(&index_dir, &ontology, &source, &embedder, &index::Quiet)
            .expect("build snapshot");
        eprintln!("snapshot built in {:.1}s", t.elapsed().as_secs_f64());
    }
    let snapshot = index::load_current(&index_dir, &embedder).expect("load snapshot");

    let queries = read_jsonl(&root.join("fixtures/bench/queries.jsonl"));
    let negatives = read_jsonl(&root.join("fixtures/bench/negatives.jsonl"));
    let known: HashMap<&str, ()> = snapshot.docs.iter().map(|d| (d.id.as_str(), ())).collect();
    for q in &queries {
        for id in q.relevant.keys() {
            assert!(
                known.contains_key(id.as_str()),
                "{}: {id} is not in the snapshot",
                q.id
            );
        }
    }
    let t = Instant::now();
    let raws: Vec<Raw> = queries
        .iter()
        .map(|q| raw(&snapshot, &embedder, &q.query))
        .collect();
    let neg_raws: Vec<Raw> = negatives
        .iter()
        .map(|q| raw(&snapshot, &embedder, &q.query))
        .collect();
    eprintln!(
        "{} queries retrieved in {:.1}s",
        raws.len() + neg_raws.len(),
        t.elapsed().as_secs_f64()
    );

    if let Ok(path) = std::env::var("GOVCAT_BENCH_DUMP") {
        // Raw candidates per query, for analysis outside the bench.
        let side = |c: &[(u32, f32)]| -> Vec<(String, f32)> {
            c.iter()
                .map(|(o, s)| (snapshot.doc(*o).id.clone(), *s))
                .collect()
        };
        let rows: Vec<serde_json::Value> = queries
            .iter()
            .zip(&raws)
            .map(|(q, r)| {
                json!({"id": q.id, "query": q.query, "lang": q.lang,
                "calibration": is_calibration(&q.id), "relevant": q.relevant,
                "lexical": side(&r.lexical), "dense": side(&r.dense)})
            })
            .collect();
        fs::write(&path, serde_json::to_string(&rows).expect("json")).expect("dump");
        eprintln!("wrote {path}");
    }
    let split = |cal: bool| -> (Vec<&Labelled>, Vec<&Raw>) {
        queries
            .iter()
            .zip(&raws)
            .filter(|(q, _)| is_calibration(&q.id) == cal)
            .unzip()
    };
    let (cal_q, cal_r) = split(true);
    let (held_q, held_r) = split(false);

    // Calibrate fusion on the calibration split: nDCG@10, with a penalty for semantic-only
    // entries on the negative queries (the floor's job).
    let mut best: Option<(f64, Params, Metrics, f64)> = None;
    let mut by_fusion = serde_json::Map::new();
    for (fusion, ks) in [
        (Fusion::Rrf, vec![5.0, 10.0, 20.0, 40.0, 60.0]),
        (Fusion::WeightedSum, vec![0.0]),
    ] {
        let mut best_of_fusion: Option<(f64, Params, Metrics)> = None;
        for rrf_k in ks {
            for dense_weight in [0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0] {
                for (floor, key_weight) in FLOORS
                    .iter()
                    .flat_map(|&f| KEY_WEIGHTS.iter().map(move |&k| (f, k)))
                {
                    let p = Params {
                        fusion,
                        rrf_k,
                        lexical_weight: 1.0,
                        dense_weight,
                        min_similarity: floor,
                        key_weight,
                    };
                    let m = evaluate(&ranked(&snapshot, &cal_r, &p, Side::Hybrid), &cal_q);
                    let neg = negative_semantic_rate(&snapshot, &neg_raws, &p);
                    let objective = m.ndcg_at_10 - 0.05 * neg;
                    if best.as_ref().is_none_or(|b| objective > b.0) {
                        best = Some((objective, p, m, neg));
                    }
                    if best_of_fusion.as_ref().is_none_or(|b| objective > b.0) {
                        best_of_fusion = Some((objective, p, m));
                    }
                }
            }
        }
        if let Some((_, p, m)) = best_of_fusion {
            by_fusion.insert(
                format!("{fusion:?}"),
                json!({"params": p, "calibration": m,
            "held_out": evaluate(&ranked(&snapshot, &held_r, &p, Side::Hybrid), &held_q)}),
            );
        }
    }
    let (_, tuned, cal_metrics, tuned_neg) = best.expect("grid is not empty");
    let shipped = Params::default();

    let mut report_rows = Vec::new();
    let mut by_mode = serde_json::Map::new();
    for (label, side) in [
        ("bm25", Side::Bm25),
        ("dense", Side::Dense),
        ("hybrid", Side::Hybrid),
    ] {
        let all_q: Vec<&Labelled> = queries.iter().collect();
        let all_r: Vec<&Raw> = raws.iter().collect();
        let all = evaluate(&ranked(&snapshot, &all_r, &shipped, side), &all_q);
        let held = evaluate(&ranked(&snapshot, &held_r, &shipped, side), &held_q);
        let de_q: Vec<&Labelled> = queries.iter().filter(|q| q.lang == "de").collect();
        let de_r: Vec<&Raw> = queries
            .iter()
            .zip(&raws)
            .filter(|(q, _)| q.lang == "de")
            .map(|(_, r)| r)
            .collect();
        let de = evaluate(&ranked(&snapshot, &de_r, &shipped, side), &de_q);
        by_mode.insert(
            label.to_string(),
            json!({"all": all, "held_out": held, "german": de}),
        );
        report_rows.push((label, held));
    }

    // Out-of-vocabulary: every returned entry must be a snapshot document and every present
    // tag value an ontology value.
    let mut returned = 0usize;
    let mut oov = 0usize;
    for r in &raws {
        for h in r.fused(&snapshot, &shipped).iter().take(10) {
            returned += 1;
            let d = snapshot.doc(h.ord);
            let bad_tag = d.lf_tags.as_ref().is_some_and(|tags| {
                tags.iter()
                    .any(|(k, t)| t.value().is_some_and(|v| !ontology.contains(k, v)))
            });
            if !known.contains_key(d.id.as_str()) || bad_tag {
                oov += 1;
            }
        }
    }
    if std::env::var("GOVCAT_BENCH_FAILURES").is_ok_and(|v| v == "1") {
        for (q, r) in queries.iter().zip(&raws) {
            let top: Vec<String> = r
                .fused(&snapshot, &shipped)
                .iter()
                .take(5)
                .map(|h| snapshot.doc(h.ord).id.clone())
                .collect();
            if !top.iter().any(|id| q.relevant.get(id) == Some(&2)) {
                let want: Vec<&String> = q
                    .relevant
                    .iter()
                    .filter(|(_, g)| **g == 2)
                    .map(|(i, _)| i)
                    .take(3)
                    .collect();
                eprintln!(
                    "MISS {} [{}] {:?}\n   got  {:?}\n   want {:?}",
                    q.id, q.lang, q.query, top, want
                );
            }
        }
    }
    let iban_top = raws[0]
        .fused(&snapshot, &shipped)
        .first()
        .map(|h| snapshot.doc(h.ord).id.clone());

    let report = json!({
        "snapshot": snapshot.manifest.id,
        "model": snapshot.manifest.model.id,
        "documents": snapshot.docs.len(),
        "queries": {"all": queries.len(), "calibration": cal_q.len(), "held_out": held_q.len(),
                     "german": queries.iter().filter(|q| q.lang == "de").count(), "negatives": negatives.len()},
        "definitions": {
            "recall_at_k": "direct precedents (grade 2) in the top k / min(k, number of direct precedents)",
            "hit_at_k": "share of queries with a direct precedent in the top k",
            "full_recall_at_10": "all relevant ids (grade 1 and 2) in the top 10 / number of relevant ids",
            "mrr": "1 / rank of the first relevant id (any grade)",
            "ndcg_at_10": "graded gain 2^g - 1, log2 discount",
        },
        "shipped_params": shipped,
        "metrics_with_shipped_params": by_mode,
        "calibration": {
            "objective": "nDCG@10 on the calibration split (ids divisible by 3) - 0.05 x share of negative queries with a semantic-only entry",
            "best_params": tuned,
            "best_calibration_metrics": cal_metrics,
            "best_negative_semantic_rate": tuned_neg,
            "best_per_fusion": by_fusion,
            "best_params_on_held_out": evaluate(&ranked(&snapshot, &held_r, &tuned, Side::Hybrid), &held_q),
        },
        "negatives_with_semantic_only_entry": negative_semantic_rate(&snapshot, &neg_raws, &shipped),
        "out_of_vocabulary": {"returned_entries": returned, "violations": oov, "rate": oov as f64 / returned.max(1) as f64},
        "contains_an_eu_iban_top1": iban_top,
    });
    let json_path = out_dir.join("quality.json");
    fs::write(
        &json_path,
        serde_json::to_string_pretty(&report).expect("json"),
    )
    .expect("write quality.json");
    let table: String = report_rows
        .iter()
        .map(|(label, m)| {
            format!(
                "<tr><td>{label}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td><td>{:.3}</td></tr>",
                m.recall_at_1, m.recall_at_5, m.recall_at_10, m.hit_at_5, m.mrr, m.ndcg_at_10
            )
        })
        .collect();
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>govcat retrieval quality</title>\
<style>body{{font-family:sans-serif;max-width:900px;margin:2em auto}}td,th{{padding:4px 10px;text-align:right}}td:first-child{{text-align:left}}</style></head><body>\
<h1>govcat retrieval quality</h1><p>Snapshot {} ({} documents, model {}). {} labelled queries ({} German); metrics below on the {} held-out queries \
(fusion weights and similarity floor were tuned on the other {}). Out-of-vocabulary entries: {} of {} returned.</p>\
<table><tr><th>mode</th><th>recall@1</th><th>recall@5</th><th>recall@10</th><th>hit@5</th><th>MRR</th><th>nDCG@10</th></tr>{table}</table>\
<p>recall@k: direct precedents (grade 2) found in the top k, divided by min(k, number of direct precedents). hit@5: queries with a direct precedent in the top 5.</p>\
{}<p>Full figures: quality.json. Reproduce: <code>cargo bench --bench quality</code>.</p></body></html>",
        snapshot.manifest.id,
        snapshot.docs.len(),
        snapshot.manifest.model.id,
        queries.len(),
        queries.iter().filter(|q| q.lang == "de").count(),
        held_q.len(),
        cal_q.len(),
        oov,
        returned,
        bar_chart(&report_rows)
    );
    fs::write(out_dir.join("quality.html"), html).expect("write quality.html");
    println!(
        "{}",
        serde_json::to_string_pretty(&report["metrics_with_shipped_params"]).expect("json")
    );
    println!(
        "calibration: {}",
        serde_json::to_string(&report["calibration"]).expect("json")
    );
    println!(
        "negatives with a semantic-only entry: {}",
        report["negatives_with_semantic_only_entry"]
    );
    println!("out of vocabulary: {}", report["out_of_vocabulary"]);
    println!(
        "\"contains an EU IBAN\" top 1: {}",
        report["contains_an_eu_iban_top1"]
    );
    println!("wrote {} and quality.html", json_path.display());
}
