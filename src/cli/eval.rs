//! `govcat eval queries|tags|calls|precedents`: runs an evaluation through the same retrieval
//! context as the tools and prints its report (the structured JSON under `--json`, the tables
//! below otherwise).

use std::path::PathBuf;
use std::process::ExitCode;

use serde_json::{json, Value};

use super::{retrieval_context, Bar, EvalCommand, Unit};
use crate::app::{print_json, report_error, Options};
use crate::tools::ToolError;

/// `govcat eval queries|tags`: prints the structured report under `--json`, a summary
/// otherwise; `--report DIR` also writes eval.json and eval.html.
pub(super) fn run_eval(options: &Options, what: &EvalCommand) -> ExitCode {
    use crate::eval::{queries, report, tags};
    let bar = Bar::new(Unit::Items, false);
    let result = (|| -> Result<(Value, String, Option<PathBuf>), ToolError> {
        let mut ctx = retrieval_context(options)?;
        match what {
            EvalCommand::Queries {
                files,
                modes,
                split,
                report: dir,
                params,
            } => {
                let (snapshot, embedder) = ctx.retrieval_parts()?;
                let params = crate::retrieval::Params::with_overrides(ctx.retrieval, params)
                    .map_err(|problem| ToolError::new("InvalidArguments", problem))?;
                let options = queries::QueryOptions {
                    files: files.clone(),
                    modes: modes.clone(),
                    split: *split,
                };
                let r = queries::run(
                    &snapshot,
                    embedder.as_ref(),
                    &ctx.ontology,
                    &params,
                    &options,
                    &bar,
                )?;
                let mut summary = format!(
                    "{:<12} {:>9} {:>9} {:>9} {:>7} {:>8} {:>7} {:>10} {:>9} {:>9} {:>13}\n{:<12} {:>9} {:>9} {:>9} {:>7} {:>8} {:>7} {:>10} {:>9} {:>9} {:>13}\n",
                    "mode", "labelled", "recall", "success", "MRR", "nDCG", "out of", "nDCG", "MRR", "negative", "negatives: a",
                    "", "queries", "@5", "@5", "", "@10", "vocab.", "/baseline", "/baseline", "queries", "dense-only hit",
                );
                let base = r.modes.get("baseline").map(|b| b.metrics);
                let mut marked = false;
                for (mode, m) in &r.modes {
                    let ratio = |x: Option<f64>| x.map_or("-".to_string(), |x| below(x, Some(1.0)));
                    let x = &m.metrics;
                    let against = |f: fn(&queries::Metrics) -> f64| {
                        let v = f(x);
                        below(v, base.as_ref().filter(|_| mode != "baseline").map(f))
                    };
                    let row = format!(
                        "{:<12} {:>9} {:>9} {:>9} {:>7} {:>8} {:>7} {:>10} {:>9} {:>9} {:>13}\n",
                        mode,
                        x.queries,
                        against(|m| m.recall_at_5),
                        against(|m| m.success_at_5),
                        against(|m| m.mrr),
                        against(|m| m.ndcg_at_10),
                        x.out_of_vocabulary,
                        ratio(m.ratio_to_baseline.and_then(|r| r.ndcg_at_10)),
                        ratio(m.ratio_to_baseline.and_then(|r| r.mrr)),
                        m.negatives,
                        m.negatives_with_semantic_only
                            .map_or("-".to_string(), |x| format!("{x:.3}")),
                    );
                    marked |= row.contains('!');
                    summary += &row;
                }
                let labelled = r.modes.values().next().map_or(0, |m| m.metrics.queries);
                let negatives = r.modes.values().next().map_or(0, |m| m.negatives);
                summary += &format!(
                    "{} queries ({labelled} labelled, {negatives} negative: about something the catalog does not hold; the metrics are of the labelled ones), split {}\nnegatives: a dense-only hit = the share of negative queries whose answer holds an entry only the dense side found (an answer to a question the catalog cannot answer; lower is better)\n",
                    labelled + negatives,
                    r.request.split.as_str(),
                );
                if marked {
                    summary += "! below the baseline of the same run\n";
                }
                summary += &format!("{:.1} s\n", r.wall_seconds);
                if let Some(dir) = dir {
                    report::write(dir, &r, &report::queries_html(&r))?;
                }
                Ok((
                    serde_json::to_value(&r).unwrap_or(Value::Null),
                    summary,
                    dir.clone(),
                ))
            }
            EvalCommand::Tags {
                exclude,
                report: dir,
                params,
                min_confidence,
            } => {
                ctx.retrieval = crate::retrieval::Params::with_overrides(ctx.retrieval, params)
                    .map_err(|problem| ToolError::new("InvalidArguments", problem))?;
                let r = tags::run_with(&ctx, *exclude, *min_confidence, &bar)?;
                let mut summary = tags_summary(&r);
                summary += &calibration_summary(&r.calibration);
                match &r.snapshot_calibration {
                    Some(map) => {
                        summary += "the snapshot's own map (govcat index, fitted on every checked column):\n";
                        for line in map.summary() {
                            summary += &format!("  {line}\n");
                        }
                    }
                    None => summary += "the snapshot carries no calibration: suggest_tags reports no confidence (rebuild it with govcat index)\n",
                }
                summary += &format!(
                    "{} precedent conflicts; {} columns in {:.1} s\n",
                    r.conflicts.len(),
                    r.columns,
                    r.wall_seconds
                );
                if let Some(dir) = dir {
                    report::write(dir, &r, &report::tags_html(&r))?;
                }
                Ok((
                    serde_json::to_value(&r).unwrap_or(Value::Null),
                    summary,
                    dir.clone(),
                ))
            }
            EvalCommand::Calls {
                calls,
                labels,
                report: dir,
                params,
            } => {
                ctx.retrieval = crate::retrieval::Params::with_overrides(ctx.retrieval, params)
                    .map_err(|problem| ToolError::new("InvalidArguments", problem))?;
                let r = crate::eval::calls::run(&ctx, calls, labels)?;
                if let Some(dir) = dir {
                    report::write(dir, &r, &crate::eval::calls::html(&r))?;
                }
                Ok((
                    serde_json::to_value(&r).unwrap_or(Value::Null),
                    crate::eval::calls::summary(&r),
                    dir.clone(),
                ))
            }
            EvalCommand::Precedents { files, rows } => {
                let found = crate::eval::calls::evidence_rows(&ctx, files)?;
                let mut text = String::new();
                for row in &found {
                    text += &serde_json::to_string(row).unwrap_or_default();
                    text.push('\n');
                }
                std::fs::write(rows, text).map_err(|e| {
                    ToolError::new(
                        "ReportIo",
                        format!(
                            "cannot write {}: {e}; check that --rows names a writable file",
                            rows.display()
                        ),
                    )
                })?;
                Ok((
                    json!({"rows": found.len(), "file": rows.display().to_string()}),
                    format!("{} entries written to {}\n", found.len(), rows.display()),
                    None,
                ))
            }
        }
    })();
    match result {
        Ok((value, summary, dir)) => {
            if options.json {
                print_json(&value);
            } else {
                print!("{summary}");
                if let Some(dir) = dir {
                    println!("wrote {} and eval.html", dir.join("eval.json").display());
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => report_error(options, &e),
    }
}

/// A figure to 3 places, marked `!` when it is below `baseline`.
fn below(value: f64, baseline: Option<f64>) -> String {
    match baseline {
        Some(b) if value < b => format!("{value:.3}!"),
        _ => format!("{value:.3} "),
    }
}

/// The accuracy table of `govcat eval tags`, headed in words. Without `--min-confidence`,
/// right@1 (no answer counts as wrong) is held against the better baseline; with it, abstaining
/// is what was asked for, so the answered columns' share right is held against the baselines on
/// those same columns, and the abstentions are counted apart.
fn tags_summary(r: &crate::eval::tags::TagsReport) -> String {
    let gated = r.request.min_confidence.is_some();
    let mut out = format!(
        "{:<16} {:>7} {:>9} {:>9} {:>9} {:>10} {:>11} {:>10} {:>10} {:>11}\n{:<16} {:>7} {:>9} {:>9} {:>9} {:>10} {:>11} {:>10} {:>10} {:>11}\n",
        "key", "columns", "right", "answered", "abstained", "right when", "baseline on", "baseline:", "baseline:", "under/over",
        "", "checked", "(of all)", "(share)", "", "answered", "answered", "majority", "name words", "stated",
    );
    let mut marked = false;
    for (key, k) in &r.keys {
        let (right, when) = if gated {
            let when = below(
                k.accuracy_when_answered.unwrap_or(0.0),
                k.baseline_when_answered,
            );
            (format!("{:.3} ", k.accuracy_at_1), when)
        } else {
            let best = k.baseline_majority.max(k.baseline_name_overlap);
            let when = k
                .accuracy_when_answered
                .map_or("-".to_string(), |x| format!("{x:.3} "));
            (below(k.accuracy_at_1, Some(best)), when)
        };
        marked |= right.ends_with('!') || when.ends_with('!');
        out += &format!(
            "{:<16} {:>7} {:>9} {:>9.3} {:>9} {:>10} {:>11} {:>10.3} {:>10.3} {:>11}\n",
            key,
            k.columns,
            right,
            k.coverage,
            k.abstained,
            when,
            k.baseline_when_answered
                .map_or("-".to_string(), |x| format!("{x:.3}")),
            k.baseline_majority,
            k.baseline_name_overlap,
            match (k.understated, k.overstated) {
                (Some(u), Some(o)) => format!("{u}/{o}"),
                _ => "-".to_string(),
            }
        );
    }
    if marked {
        out += if gated {
            "! right when answered is below the better baseline on the same answered columns\n"
        } else {
            "! right (no answer counts as wrong) is below the better baseline (majority value, or the value of the column whose name shares the most words)\n"
        };
    }
    if let Some(m) = r.request.min_confidence {
        out += &format!("abstained: no proposal, or one below --min-confidence {m}; they are not counted against the baselines\n");
    }
    let why: Vec<String> = r
        .keys
        .iter()
        .filter(|(_, k)| k.abstained_withheld + k.abstained_no_precedent > 0)
        .map(|(key, k)| {
            format!(
                "{key} {}/{}",
                k.abstained_withheld, k.abstained_no_precedent
            )
        })
        .collect();
    if !why.is_empty() {
        out += &format!(
            "abstained for want of evidence (best precedents withheld from you / no precedent with a value): {}\n",
            why.join(", ")
        );
    }
    out
}

/// The calibration table of `govcat eval tags`: per key, held-out proposals, ECE, what
/// confidence ≥ 0.9 keeps, and coverage at 0.90 / 0.95 precision next to the raw
/// precedent_weight's.
fn calibration_summary(c: &crate::eval::tags::CalibrationReport) -> String {
    let mut out = format!(
        "confidence, {}:\n{:<16} {:>8} {:>6} {:>12} {:>14} {:>20} {:>18}\n{:<16} {:>8} {:>6} {:>12} {:>14} {:>20} {:>18}\n",
        c.split,
        "key",
        "held-out",
        "calib.",
        "confidence",
        "≥ 0.9:",
        "raw share ≥ 0.9:",
        "kept at 90 % right:",
        "",
        "proposals",
        "error",
        "≥ 0.9: right",
        "share kept",
        "right / kept",
        "confidence / raw",
    );
    let mut row = |key: &str, k: &crate::eval::tags::KeyCalibration| {
        out += &format!(
            "{:<16} {:>8} {:>6.3} {:>12} {:>14.3} {:>20} {:>12.3}/{:.3}\n",
            key,
            k.held_out.proposals,
            k.held_out.ece,
            k.at_min_confidence_0_9
                .precision
                .map_or("-".to_string(), |p| format!("{p:.3}")),
            k.at_min_confidence_0_9.coverage,
            format!(
                "{}/{:.3}",
                k.precedent_weight_at_0_9
                    .precision
                    .map_or("-".to_string(), |p| format!("{p:.3}")),
                k.precedent_weight_at_0_9.coverage
            ),
            k.held_out
                .coverage_at_precision
                .get("0.90")
                .copied()
                .unwrap_or(0.0),
            k.precedent_weight_coverage_at_precision
                .get("0.90")
                .copied()
                .unwrap_or(0.0)
        );
    };
    for (key, k) in &c.keys {
        row(key, k);
    }
    row("(all keys)", &c.all_keys);
    out += "calib. error: expected calibration error (0 = each confidence is the share right); raw share: precedent_weight before calibration\n";
    out
}
