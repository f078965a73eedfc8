//! The eval reports as files: `eval.json` (the structured result, exactly what `--json`
//! prints) and `eval.html`, one self-contained page (inline CSS and SVG, no script, nothing
//! fetched) that a governance reviewer opens without running anything.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::queries::{ModeReport, QueriesReport};
use super::tags::TagsReport;
use crate::tools::ToolError;

/// Misses listed in the page: queries whose first direct precedent is not in this top k.
const MISS_DEPTH: usize = 5;
/// Entries shown per miss.
const MISS_SHOWN: usize = 5;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn page(title: &str, body: &str) -> String {
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{t}</title>\
<style>body{{font-family:sans-serif;max-width:1260px;margin:2em auto;color:#222}}\
table{{border-collapse:collapse;margin:1em 0;font-size:88%}}td,th{{padding:3px 9px;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}}\
td.l,th.l{{text-align:left}}caption{{text-align:left;font-weight:bold;padding:4px 0}}.bad{{color:#b00}}code{{font-size:90%}}.scroll{{overflow-x:auto;max-width:100%}}\
.charts{{display:flex;flex-wrap:wrap;gap:0 1.5em}}figure{{margin:0.5em 0}}\
table.confusion th{{max-width:6.5em;overflow-wrap:anywhere;font-size:85%;font-weight:normal}}</style>\
</head><body><h1>{t}</h1>{body}</body></html>\n",
        t = esc(title)
    )
}

/// Writes `eval.json` and `eval.html` into `dir` (created if missing).
pub fn write(dir: &Path, result: &impl Serialize, html: &str) -> Result<(), ToolError> {
    let io = |path: &Path, e: std::io::Error| {
        ToolError::new(
            "ReportIo",
            format!(
                "cannot write {}: {e}; check that --report names a writable directory",
                path.display()
            ),
        )
    };
    std::fs::create_dir_all(dir).map_err(|e| io(dir, e))?;
    let json = serde_json::to_string_pretty(result).map_err(|e| {
        ToolError::new(
            "ReportIo",
            format!("cannot serialise the report: {e}; report this with the command line"),
        )
    })?;
    let path = dir.join("eval.json");
    std::fs::write(&path, json + "\n").map_err(|e| io(&path, e))?;
    let path = dir.join("eval.html");
    std::fs::write(&path, html).map_err(|e| io(&path, e))
}

const CHART_METRICS: [&str; 7] = [
    "recall@1",
    "recall@5",
    "recall@10",
    "success@5",
    "full_recall@10",
    "mrr",
    "ndcg@10",
];

fn metric(m: &ModeReport, name: &str) -> f64 {
    serde_json::to_value(m)
        .ok()
        .and_then(|v| v[name].as_f64())
        .unwrap_or(0.0)
}

/// A bar chart of one mode's metrics, with the baseline's as grey bars beside them.
fn chart(mode: &str, m: &ModeReport, baseline: Option<&ModeReport>) -> String {
    let (w, h, left, bottom) = (560.0, 220.0, 36.0, 34.0);
    let group = (w - left) / CHART_METRICS.len() as f64;
    let bw = group * 0.38;
    let plot = h - bottom - 10.0;
    let mut svg = format!(
        r#"<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="{mode} metrics" width="{w}" height="{h}" font-size="11"><title>{mode}</title>"#
    );
    for i in 0..=4 {
        let y = h - bottom - plot * f64::from(i) / 4.0;
        let _ = write!(
            svg,
            r##"<line x1="{left}" x2="{w}" y1="{y:.1}" y2="{y:.1}" stroke="#ddd"/><text x="4" y="{:.1}">{:.2}</text>"##,
            y + 4.0,
            f64::from(i) / 4.0
        );
    }
    for (i, name) in CHART_METRICS.iter().enumerate() {
        let x0 = left + group * i as f64 + group * 0.1;
        let mut bar = |x: f64, v: f64, fill: &str, who: &str| {
            let bh = plot * v.clamp(0.0, 1.0);
            let _ = write!(
                svg,
                r#"<rect x="{x:.1}" y="{:.1}" width="{bw:.1}" height="{bh:.1}" fill="{fill}"><title>{who} {name}: {v:.3}</title></rect>"#,
                h - bottom - bh
            );
        };
        bar(x0, metric(m, name), "#4c78a8", mode);
        if let Some(b) = baseline.filter(|_| mode != "baseline") {
            bar(x0 + bw, metric(b, name), "#bbbbbb", "baseline");
        }
        let _ = write!(
            svg,
            r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">{name}</text>"#,
            left + group * (i as f64 + 0.5),
            h - bottom + 16.0
        );
    }
    svg + "</svg>"
}

fn f3(x: f64) -> String {
    format!("{x:.3}")
}

fn opt3(x: Option<f64>) -> String {
    x.map_or("–".to_string(), f3)
}

/// The page of `govcat eval queries`.
pub fn queries_html(r: &QueriesReport) -> String {
    let mut b = String::new();
    let q = &r.request;
    let _ = write!(
        b,
        "<p>Snapshot <code>{}</code> ({} documents, model <code>{}</code>), query file(s) <code>{}</code>, split <b>{}</b>, {} queries ({} negative), {:.1} s.</p>",
        esc(&q.snapshot_id),
        q.documents,
        esc(&q.model),
        esc(&q.files.join(", ")),
        q.split.as_str(),
        r.per_query.len(),
        r.per_query.iter().filter(|p| p.negative).count(),
        r.wall_seconds
    );
    let _ = write!(b, "<p><b>baseline</b>: {}.</p>", esc(q.baseline));
    b += "<table id=\"metrics\"><caption>Metrics by mode</caption><tr><th class=\"l\">mode</th><th>queries</th><th>recall@1</th><th>recall@5</th><th>recall@10</th><th>full recall@10</th><th>success@1</th><th>success@5</th><th>success@10</th><th>MRR</th><th>nDCG@10</th><th>nDCG@10 / baseline</th><th>MRR / baseline</th><th>negatives with a semantic-only entry</th><th>out of vocabulary</th></tr>";
    for (mode, m) in &r.modes {
        let x = &m.metrics;
        let ratio = m.ratio_to_baseline;
        let _ = write!(
            b,
            "<tr><td class=\"l\">{mode}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td{}>{}</td></tr>",
            x.queries,
            f3(x.recall_at_1),
            f3(x.recall_at_5),
            f3(x.recall_at_10),
            f3(x.full_recall_at_10),
            f3(x.success_at_1),
            f3(x.success_at_5),
            f3(x.success_at_10),
            f3(x.mrr),
            f3(x.ndcg_at_10),
            opt3(ratio.and_then(|r| r.ndcg_at_10)),
            opt3(ratio.and_then(|r| r.mrr)),
            opt3(m.negatives_with_semantic_only),
            if x.out_of_vocabulary > 0 { " class=\"bad\"" } else { "" },
            x.out_of_vocabulary
        );
    }
    b += "</table>";
    if !r.by_lang.is_empty() {
        b += "<table id=\"by-lang\"><caption>nDCG@10 / recall@5 by language</caption><tr><th class=\"l\">lang</th>";
        let modes: Vec<&String> = r.modes.keys().collect();
        for m in &modes {
            let _ = write!(b, "<th>{m}</th>");
        }
        b += "</tr>";
        for (lang, per_mode) in &r.by_lang {
            let _ = write!(
                b,
                "<tr><td class=\"l\">{} ({})</td>",
                esc(lang),
                per_mode.values().next().map_or(0, |m| m.queries)
            );
            for m in &modes {
                let cell = per_mode.get(*m).map_or("–".into(), |x| {
                    format!("{} / {}", f3(x.ndcg_at_10), f3(x.recall_at_5))
                });
                let _ = write!(b, "<td>{cell}</td>");
            }
            b += "</tr>";
        }
        b += "</table></div>";
    }
    b += "<h2>Charts</h2><p>Blue: the mode; grey: the baseline of the same run.</p>";
    let base = r.modes.get("baseline");
    for (mode, m) in &r.modes {
        let _ = write!(b, "<h3>{mode}</h3>{}", chart(mode, m, base));
    }
    let focus = if r.modes.contains_key("hybrid") {
        "hybrid"
    } else {
        r.modes.keys().next().map_or("hybrid", String::as_str)
    };
    let misses: Vec<_> = r
        .per_query
        .iter()
        .filter(|p| !p.negative)
        .filter_map(|p| p.modes.get(focus).map(|o| (p, o)))
        .filter(|(_, o)| o.first_direct_rank.is_none_or(|k| k > MISS_DEPTH))
        .collect();
    let _ = write!(
        b,
        "<h2>Misses ({focus})</h2><p>{} of {} queries have no direct precedent in the top {MISS_DEPTH}; listed with the entries that outranked it.</p><table id=\"misses\"><tr><th class=\"l\">query</th><th class=\"l\">text</th><th>first direct rank</th><th class=\"l\">outranked by</th></tr>",
        misses.len(),
        r.per_query.iter().filter(|p| !p.negative).count()
    );
    for (p, o) in misses {
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
            esc(p.id.as_deref().unwrap_or(&p.source)),
            esc(&p.query),
            o.first_direct_rank.map_or("none".into(), |k| k.to_string()),
            o.outranked_by
                .iter()
                .take(MISS_SHOWN)
                .map(|id| format!("<code>{}</code>", esc(id)))
                .collect::<Vec<_>>()
                .join("<br>")
        );
    }
    b += "</table><h2>Definitions</h2><ul>";
    for (k, v) in &q.definitions {
        let _ = write!(b, "<li><b>{}</b>: {}</li>", esc(k), esc(v));
    }
    b += "</ul><p>Full figures and every query: <code>eval.json</code>.</p>";
    page("govcat eval queries", &b)
}

/// Side of one inline SVG chart, in pixels; the plot area leaves [`MARGIN`] for the axes.
const SIDE: f64 = 220.0;
const MARGIN: f64 = 30.0;

/// (x, y) in [0, 1]² → SVG coordinates of the plot area.
fn at(x: f64, y: f64) -> (f64, f64) {
    let span = SIDE - 2.0 * MARGIN;
    (MARGIN + x * span, SIDE - MARGIN - y * span)
}

/// The frame, a light grid with ticks at 0, 0.25, 0.5, 0.75 and 1 on both axes, and the axis
/// labels.
fn axes(b: &mut String, x_label: &str, y_label: &str) {
    let (x0, y0) = at(0.0, 0.0);
    let (x1, y1) = at(1.0, 1.0);
    let _ = write!(
        b,
        "<rect x=\"{x0}\" y=\"{y1}\" width=\"{w}\" height=\"{w}\" fill=\"none\" stroke=\"#999\"/>\
         <text x=\"{xm}\" y=\"{yb}\" font-size=\"10\" text-anchor=\"middle\">{x}</text>\
         <text x=\"8\" y=\"{ym}\" font-size=\"10\" text-anchor=\"middle\" transform=\"rotate(-90 8 {ym})\">{y}</text>",
        w = x1 - x0,
        xm = (x0 + x1) / 2.0,
        yb = y0 + 24.0,
        ym = (y0 + y1) / 2.0,
        x = esc(x_label),
        y = esc(y_label),
    );
    for t in [0.0, 0.25, 0.5, 0.75, 1.0] {
        let (tx, ty) = at(t, t);
        let label = if t == 0.0 || t == 1.0 {
            format!("{t:.0}")
        } else {
            format!("{t}")
        };
        let _ = write!(
            b,
            "<line x1=\"{x0}\" y1=\"{ty}\" x2=\"{x1}\" y2=\"{ty}\" stroke=\"#eee\"/>\
             <text class=\"tick\" x=\"{lx}\" y=\"{ly:.1}\" font-size=\"8\" text-anchor=\"end\">{label}</text>\
             <text class=\"tick\" x=\"{tx}\" y=\"{bx:.1}\" font-size=\"8\" text-anchor=\"middle\">{label}</text>",
            lx = x0 - 3.0,
            ly = ty + 3.0,
            bx = y0 + 10.0,
        );
    }
}

/// The reliability diagram of one key: per confidence bin, its accuracy (a bar, written over
/// with the bin's n; the fainter the bar, the fewer proposals it holds) against the diagonal
/// of perfect calibration.
fn reliability_svg(key: &str, r: &crate::calibration::Reliability) -> String {
    let mut b = format!(
        "<svg class=\"reliability\" data-key=\"{}\" width=\"{SIDE}\" height=\"{SIDE}\" viewBox=\"0 0 {SIDE} {SIDE}\" role=\"img\" aria-label=\"reliability diagram of {}\">",
        esc(key),
        esc(key)
    );
    axes(&mut b, "confidence", "accuracy");
    let (x0, y0) = at(0.0, 0.0);
    let (x1, y1) = at(1.0, 1.0);
    let _ = write!(
        b,
        "<line x1=\"{x0}\" y1=\"{y0}\" x2=\"{x1}\" y2=\"{y1}\" stroke=\"#bbb\" stroke-dasharray=\"3 3\"/>"
    );
    let most = r.bins.iter().map(|bin| bin.n).max().unwrap_or(1).max(1) as f64;
    for bin in &r.bins {
        let Some(acc) = bin.accuracy else { continue };
        let (bx, by) = at(bin.lower, acc);
        let (bx2, _) = at(bin.upper, 0.0);
        // Opacity by the square root of n: a bin of 7 beside one of 317 reads as thin.
        let opacity = 0.15 + 0.7 * (bin.n as f64 / most).sqrt();
        let _ = write!(
            b,
            "<rect class=\"bin\" x=\"{:.1}\" y=\"{by:.1}\" width=\"{:.1}\" height=\"{:.1}\" fill=\"#4a7ab0\" fill-opacity=\"{opacity:.2}\" stroke=\"#4a7ab0\"><title>confidence {:.1}-{:.1}: n {}, mean confidence {}, accuracy {acc:.3}</title></rect>\
             <text class=\"n\" x=\"{:.1}\" y=\"{:.1}\" font-size=\"7\" text-anchor=\"middle\">{}</text>",
            bx + 1.0,
            bx2 - bx - 2.0,
            y0 - by,
            bin.lower,
            bin.upper,
            bin.n,
            bin.mean_confidence.map_or("-".into(), |m| format!("{m:.3}")),
            (bx + bx2) / 2.0,
            by - 2.0,
            bin.n,
        );
    }
    b += "</svg>";
    b
}

/// The precision–coverage curves of one key: calibrated confidence (thick, solid, dark, round
/// marks) and the raw precedent_weight (thin, dotted, light, square marks): told apart in grey
/// print too, with a legend inside the chart.
fn coverage_svg(key: &str, k: &super::tags::KeyCalibration) -> String {
    let mut b = format!(
        "<svg class=\"coverage\" data-key=\"{}\" width=\"{SIDE}\" height=\"{SIDE}\" viewBox=\"0 0 {SIDE} {SIDE}\" role=\"img\" aria-label=\"precision against coverage of {}\">",
        esc(key),
        esc(key)
    );
    axes(&mut b, "coverage", "precision");
    const CALIBRATED: &str = "stroke=\"#1f3f73\" stroke-width=\"2.5\"";
    const RAW: &str = "stroke=\"#d08a3c\" stroke-width=\"1.5\" stroke-dasharray=\"1.5 2.5\"";
    for (curve, style, round) in [
        (&k.curve, CALIBRATED, true),
        (&k.precedent_weight_curve, RAW, false),
    ] {
        let points: Vec<(f64, f64)> = curve.iter().map(|&(_, c, p)| at(c, p)).collect();
        let line: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = write!(
            b,
            "<polyline fill=\"none\" {style} points=\"{}\"/>",
            line.join(" ")
        );
        for (x, y) in points.iter().step_by(4) {
            let _ = if round {
                write!(
                    b,
                    "<circle cx=\"{x:.1}\" cy=\"{y:.1}\" r=\"2.5\" fill=\"#1f3f73\"/>"
                )
            } else {
                write!(b, "<rect x=\"{:.1}\" y=\"{:.1}\" width=\"4\" height=\"4\" fill=\"none\" stroke=\"#d08a3c\"/>", x - 2.0, y - 2.0)
            };
        }
    }
    let (lx, ly) = at(0.05, 0.2);
    let _ = write!(
        b,
        "<g class=\"legend\" font-size=\"8\"><line x1=\"{lx:.1}\" y1=\"{ly:.1}\" x2=\"{:.1}\" y2=\"{ly:.1}\" {CALIBRATED}/><circle cx=\"{:.1}\" cy=\"{ly:.1}\" r=\"2.5\" fill=\"#1f3f73\"/><text x=\"{:.1}\" y=\"{:.1}\">calibrated confidence</text>\
         <line x1=\"{lx:.1}\" y1=\"{:.1}\" x2=\"{:.1}\" y2=\"{:.1}\" {RAW}/><rect x=\"{:.1}\" y=\"{:.1}\" width=\"4\" height=\"4\" fill=\"none\" stroke=\"#d08a3c\"/><text x=\"{:.1}\" y=\"{:.1}\">raw precedent_weight</text></g>",
        lx + 18.0,
        lx + 9.0,
        lx + 22.0,
        ly + 3.0,
        ly + 12.0,
        lx + 18.0,
        ly + 12.0,
        lx + 7.0,
        ly + 10.0,
        lx + 22.0,
        ly + 15.0,
    );
    b += "</svg>";
    b
}

/// The calibration section of `eval tags`: per key the held-out figures, the reliability
/// diagram and the precision–coverage curve.
fn calibration_html(c: &super::tags::CalibrationReport) -> String {
    let mut b = String::new();
    let _ = write!(
        b,
        "<h2>Confidence</h2><p>A map ({}) {}. Coverage: share of the held-out columns with a present value for the key. Reliability diagrams: a bar per confidence bin, its height the share right, the number over it the proposals in the bin (fainter bars hold fewer). Precision–coverage: thick solid line with round marks = calibrated confidence; thin dotted line with square marks = the raw precedent_weight.</p>\
         <table id=\"calibration\"><tr><th class=\"l\">key</th><th>fitted on</th><th>held-out proposals</th><th>ECE</th><th>precision at confidence &ge; 0.9</th><th>coverage at confidence &ge; 0.9</th><th>precedent_weight threshold from the calibration tables: precision / coverage</th><th>coverage at precision 0.90 / 0.95 / 0.99</th><th>precedent_weight: coverage at precision 0.90 / 0.95 / 0.99</th></tr>",
        esc(&c.map.method),
        esc(c.split)
    );
    let three = |m: &BTreeMap<String, f64>| {
        ["0.90", "0.95", "0.99"]
            .iter()
            .map(|p| f3(m.get(*p).copied().unwrap_or(0.0)))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let mut row = |key: &str, k: &super::tags::KeyCalibration| {
        let raw_threshold = format!(
            "{} / {}",
            opt3(k.precedent_weight_at_0_9.precision),
            f3(k.precedent_weight_at_0_9.coverage)
        );
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(key),
            k.fitted_on,
            k.held_out.proposals,
            f3(k.held_out.ece),
            opt3(k.at_min_confidence_0_9.precision),
            f3(k.at_min_confidence_0_9.coverage),
            raw_threshold,
            three(&k.held_out.coverage_at_precision),
            three(&k.precedent_weight_coverage_at_precision)
        );
    };
    for (key, k) in &c.keys {
        row(key, k);
    }
    row("(all keys)", &c.all_keys);
    b += "</table><div class=\"charts\">";
    for (key, k) in &c.keys {
        let _ = write!(
            b,
            "<figure><figcaption>{} <small>(numbers over the bars: proposals per bin)</small></figcaption>{}{}</figure>",
            esc(key),
            reliability_svg(key, &k.held_out),
            coverage_svg(key, k)
        );
    }
    b += "</div>";
    b
}

/// The page of `govcat eval tags`.
pub fn tags_html(r: &TagsReport) -> String {
    let mut b = String::new();
    let q = &r.request;
    let _ = write!(
        b,
        "<p>Snapshot <code>{}</code>, ontology version <code>{}</code>. {} tagged columns held out one at a time ({} untagged not evaluated), excluding the {} from the precedents; each described as <code>{}</code>. {:.1} s.</p>",
        esc(&q.snapshot_id),
        esc(&q.ontology_version),
        r.columns,
        r.untagged_columns,
        match q.exclude {
            super::tags::Exclude::Column => "column itself",
            super::tags::Exclude::Table => "column's whole table",
        },
        esc(q.description_of_a_column),
        r.wall_seconds
    );
    let gated = q.min_confidence.is_some();
    b += "<table id=\"keys\"><caption>Accuracy by key</caption><tr><th class=\"l\">key</th><th>columns</th><th>accuracy@1 (no answer = wrong)</th><th>coverage</th><th>abstained</th><th>accuracy when answered</th><th>best baseline on the answered columns</th><th>baseline: majority</th><th>baseline: name overlap</th></tr>";
    for (key, k) in &r.keys {
        // Under min_confidence abstaining is what was asked: held against the baselines on the
        // answered columns only.
        let (whole_bad, answered_bad) = if gated {
            let bad = k
                .baseline_when_answered
                .is_some_and(|b| k.accuracy_when_answered.unwrap_or(0.0) < b);
            (false, bad)
        } else {
            (
                k.accuracy_at_1 < k.baseline_majority.max(k.baseline_name_overlap),
                false,
            )
        };
        let bad = |b: bool| if b { " class=\"bad\"" } else { "" };
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td>{}</td><td{}>{}</td><td>{}</td><td>{}</td><td{}>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(key),
            k.columns,
            bad(whole_bad),
            f3(k.accuracy_at_1),
            f3(k.coverage),
            k.abstained,
            bad(answered_bad),
            opt3(k.accuracy_when_answered),
            opt3(k.baseline_when_answered),
            f3(k.baseline_majority),
            f3(k.baseline_name_overlap)
        );
    }
    b += "</table>";
    if let Some(m) = q.min_confidence {
        let _ = write!(b, "<p>Run with min_confidence {m}: keys below it abstain; accuracy when answered is held against the best baseline on the same answered columns (red when below).</p>");
    }
    b += &calibration_html(&r.calibration);
    b += "<h2>Confusion</h2>";
    for (key, k) in &r.keys {
        let mut predicted: Vec<&String> = k.confusion.values().flat_map(|m| m.keys()).collect();
        predicted.sort();
        predicted.dedup();
        let _ = write!(
            b,
            "<div class=\"scroll\"><table class=\"confusion\"><caption>{} (rows: real value, columns: proposed)</caption><tr><th class=\"l\"></th>",
            esc(key)
        );
        for p in &predicted {
            let _ = write!(b, "<th>{}</th>", esc(p));
        }
        b += "</tr>";
        for (real, row) in &k.confusion {
            let _ = write!(b, "<tr><td class=\"l\">{}</td>", esc(real));
            for p in &predicted {
                let n = row.get(*p).copied().unwrap_or(0);
                let _ = write!(
                    b,
                    "<td>{}</td>",
                    if n == 0 { String::new() } else { n.to_string() }
                );
            }
            b += "</tr>";
        }
        b += "</table>";
    }
    let _ = write!(
        b,
        "<h2>Precedent conflicts</h2><p>{} groups of near-identical columns (same name words, descriptions sharing at least half their words) carry different values of a key. Each is a precedent that points two ways; resolve them in the catalog.</p><table id=\"conflicts\"><tr><th class=\"l\">key</th><th class=\"l\">column name</th><th class=\"l\">values</th></tr>",
        r.conflicts.len()
    );
    for c in &r.conflicts {
        let values: Vec<String> = c
            .values
            .iter()
            .map(|(v, ids)| {
                format!(
                    "<b>{}</b>: {}",
                    esc(v),
                    ids.iter()
                        .map(|i| format!("<code>{}</code>", esc(i)))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            })
            .collect();
        let _ = write!(
            b,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            esc(&c.key),
            esc(&c.name),
            values.join("<br>")
        );
    }
    b += "</table><h2>Definitions</h2><ul>";
    for (k, v) in &q.definitions {
        let _ = write!(b, "<li><b>{}</b>: {}</li>", esc(k), esc(v));
    }
    b += "</ul><p>Every column's outcome: <code>eval.json</code>.</p>";
    page("govcat eval tags", &b)
}
