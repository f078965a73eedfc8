//! Retrieval quality bench: recall, MRR and nDCG@10 for bm25, dense and hybrid on the labelled
//! query set (`fixtures/bench/queries.jsonl`), the out-of-vocabulary rate (must be 0), and the
//! calibration of fusion weights and the similarity floor on a calibration split, reported on
//! the held-out rest. Writes `target/bench/quality.json` and `target/bench/quality.html`.
//!
//! Run: `cargo bench --bench quality` (builds a fresh snapshot of the demo catalog with the
//! real model under `target/bench/quality-index/`; set `GOVCAT_BENCH_REUSE=1` to reuse it).

use std::collections::HashMap;
use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use govcat::catalog::dir::DirSource;
use govcat::embed::{Embedder, MiniLm};
use govcat::eval::queries::{metrics, out_of_vocabulary, read_queries, Labelled, Metrics, Raw};
use govcat::index::{self, Snapshot};
use govcat::ontology::Ontology;
use govcat::retrieval::{Fusion, Mode, Params};
use serde_json::json;

/// Similarity floors and key-column weights the calibration grid tries.
const FLOORS: [f32; 7] = [0.25, 0.30, 0.35, 0.40, 0.45, 0.50, 0.55];
const KEY_WEIGHTS: [f64; 4] = [1.0, 0.85, 0.7, 0.5];

fn raw(snapshot: &Snapshot, embedder: &dyn Embedder, q: &str) -> Raw {
    Raw::retrieve(snapshot, embedder, &Params::default(), q).expect("retrieval")
}

fn evaluate(ranked: &[Vec<String>], labelled: &[&Labelled]) -> Metrics {
    metrics(ranked, labelled)
}

fn ranked(snapshot: &Snapshot, raws: &[&Raw], params: &Params, mode: Mode) -> Vec<Vec<String>> {
    raws.iter()
        .map(|r| {
            r.fused(snapshot, params, mode)
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
            r.fused(snapshot, params, Mode::Hybrid)
                .iter()
                .any(|h| h.bm25_rank.is_none())
        })
        .count() as f64
        / n
}

fn is_calibration(q: &Labelled) -> bool {
    q.id.as_deref().is_some_and(govcat::eval::is_calibration)
}

fn bar_chart(rows: &[(&str, Metrics)]) -> String {
    let metrics = ["recall@1", "recall@5", "recall@10", "mrr", "ndcg@10"];
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

    let queries = read_queries(&root.join("fixtures/bench/queries.jsonl")).expect("queries");
    let negatives = read_queries(&root.join("fixtures/bench/negatives.jsonl")).expect("negatives");
    let known: HashMap<&str, ()> = snapshot.docs.iter().map(|d| (d.id.as_str(), ())).collect();
    for q in &queries {
        for id in q.relevant.keys() {
            assert!(
                known.contains_key(id.as_str()),
                "{}: {id} is not in the snapshot",
                q.source
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
                "calibration": is_calibration(q), "relevant": q.relevant,
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
            .filter(|(q, _)| is_calibration(q) == cal)
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
                        ..Params::default()
                    };
                    let m = evaluate(&ranked(&snapshot, &cal_r, &p, Mode::Hybrid), &cal_q);
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
            "held_out": evaluate(&ranked(&snapshot, &held_r, &p, Mode::Hybrid), &held_q)}),
            );
        }
    }
    let (_, tuned, cal_metrics, tuned_neg) = best.expect("grid is not empty");
    let shipped = Params::default();

    let mut report_rows = Vec::new();
    let mut by_mode = serde_json::Map::new();
    for (label, side) in [
        ("bm25", Mode::Bm25),
        ("dense", Mode::Dense),
        ("hybrid", Mode::Hybrid),
    ] {
        let all_q: Vec<&Labelled> = queries.iter().collect();
        let all_r: Vec<&Raw> = raws.iter().collect();
        let all = evaluate(&ranked(&snapshot, &all_r, &shipped, side), &all_q);
        let held = evaluate(&ranked(&snapshot, &held_r, &shipped, side), &held_q);
        let de_q: Vec<&Labelled> = queries
            .iter()
            .filter(|q| q.lang.as_deref() == Some("de"))
            .collect();
        let de_r: Vec<&Raw> = queries
            .iter()
            .zip(&raws)
            .filter(|(q, _)| q.lang.as_deref() == Some("de"))
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
    let returned: usize = raws
        .iter()
        .map(|r| r.fused(&snapshot, &shipped, Mode::Hybrid).len().min(10))
        .sum();
    let oov: usize = raws
        .iter()
        .map(|r| {
            let ords: Vec<u32> = r
                .fused(&snapshot, &shipped, Mode::Hybrid)
                .iter()
                .map(|h| h.ord)
                .collect();
            out_of_vocabulary(&snapshot, &ontology, &ords)
        })
        .sum();
    if std::env::var("GOVCAT_BENCH_FAILURES").is_ok_and(|v| v == "1") {
        for (q, r) in queries.iter().zip(&raws) {
            let top: Vec<String> = r
                .fused(&snapshot, &shipped, Mode::Hybrid)
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
                    "MISS {} [{:?}] {:?}\n   got  {:?}\n   want {:?}",
                    q.source, q.lang, q.query, top, want
                );
            }
        }
    }
    let iban_top = raws[0]
        .fused(&snapshot, &shipped, Mode::Hybrid)
        .first()
        .map(|h| snapshot.doc(h.ord).id.clone());

    let report = json!({
        "snapshot": snapshot.manifest.id,
        "model": snapshot.manifest.model.id,
        "documents": snapshot.docs.len(),
        "queries": {"all": queries.len(), "calibration": cal_q.len(), "held_out": held_q.len(),
                     "german": queries.iter().filter(|q| q.lang.as_deref() == Some("de")).count(), "negatives": negatives.len()},
        "definitions": {
            "recall@k": "direct precedents (grade 2) in the top k / min(k, number of direct precedents)",
            "success@k": "share of queries with a direct precedent in the top k",
            "full_recall@10": "all relevant ids (grade 1 and 2) in the top 10 / number of relevant ids",
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
            "best_params_on_held_out": evaluate(&ranked(&snapshot, &held_r, &tuned, Mode::Hybrid), &held_q),
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
                m.recall_at_1, m.recall_at_5, m.recall_at_10, m.success_at_5, m.mrr, m.ndcg_at_10
            )
        })
        .collect();
    let html = format!(
        "<!doctype html><html><head><meta charset=\"utf-8\"><title>govcat retrieval quality</title>\
<style>body{{font-family:sans-serif;max-width:900px;margin:2em auto}}td,th{{padding:4px 10px;text-align:right}}td:first-child{{text-align:left}}</style></head><body>\
<h1>govcat retrieval quality</h1><p>Snapshot {} ({} documents, model {}). {} labelled queries ({} German); metrics below on the {} held-out queries \
(fusion weights and similarity floor were tuned on the other {}). Out-of-vocabulary entries: {} of {} returned.</p>\
<table><tr><th>mode</th><th>recall@1</th><th>recall@5</th><th>recall@10</th><th>success@5</th><th>MRR</th><th>nDCG@10</th></tr>{table}</table>\
<p>recall@k: direct precedents (grade 2) found in the top k, divided by min(k, number of direct precedents). success@5: queries with a direct precedent in the top 5.</p>\
{}<p>Full figures: quality.json. Reproduce: <code>cargo bench --bench quality</code>.</p></body></html>",
        snapshot.manifest.id,
        snapshot.docs.len(),
        snapshot.manifest.model.id,
        queries.len(),
        queries.iter().filter(|q| q.lang.as_deref() == Some("de")).count(),
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
