//! `govcat eval calls`: the conversation as a bench. A blind host (a model that saw only
//! `tools/list` and engineers' requests) wrote the calls it would make first; they are replayed
//! here exactly as written through the real tools (`tools::call`, as every transport does) and
//! judged against labels a different writer made from the catalog. The tool texts are part of
//! what this measures. Also `govcat eval precedents`: the evidence of every `find_precedents`
//! entry of a labelled query file, with its grade, for the fit of `precedent_confidence`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::queries::{self, Labelled, Metrics};
use crate::calibration::{self, Reliability};
use crate::index::documents::Document;
use crate::ontology::Ontology;
use crate::tools::{self, find_precedents, Caller, Context, Outcome, ToolError};

/// A `precedent_confidence` at or above this counts as "a precedent was found".
pub const PRECEDENT_THRESHOLD: f64 = 0.5;
/// A tag proposal's confidence at or above this is one a host may act on without asking.
pub const CONFIDENT: f64 = 0.9;
/// The confidence from which an understated proposal counts in `understated_at_0_5`: even odds
/// or better, the bar an understated sensitivity is held to (none at or above it).
pub const UNDERSTATED_AT: f64 = 0.5;

/// One host call as written.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Call {
    pub tool: String,
    pub arguments: Value,
}

#[derive(Debug, Clone, serde::Deserialize)]
struct CallsLine {
    id: String,
    calls: Vec<Call>,
}

#[derive(Debug, Clone, serde::Deserialize)]
struct LabelLine {
    id: String,
    request: String,
    #[serde(default)]
    relevant: BTreeMap<String, u8>,
    #[serde(default)]
    negative: bool,
}

fn read_lines<T: serde::de::DeserializeOwned>(
    path: &Path,
    shape: &str,
) -> Result<Vec<T>, ToolError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ToolError::new(
            "InvalidCallsFile",
            format!("cannot read {}: {e}; check the path", path.display()),
        )
    })?;
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| {
                ToolError::new(
                    "InvalidCallsFile",
                    format!(
                        "{}:{}: {e}; each line must be a JSON object {shape}",
                        path.display(),
                        i + 1
                    ),
                )
            })
        })
        .collect()
}

/// Per key, the tag proposals of the first `suggest_tags` call of each request.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct KeyOutcome {
    /// Requests whose grade-2 precedents carry a present value for the key (the truth: their
    /// majority value, ties left out).
    pub judged: usize,
    /// Proposals from precedents (basis precedent_majority): right and wrong.
    pub right: usize,
    pub wrong: usize,
    /// Proposals inherited from the target's table or database, counted apart.
    pub inherited_right: usize,
    pub inherited_wrong: usize,
    /// No proposal (abstained, also below min_confidence).
    pub abstained: usize,
    /// Ordered keys only: wrong proposals less / more restrictive than the truth.
    pub understated: usize,
    pub overstated: usize,
    /// Understated proposals with confidence >= 0.9.
    pub understated_confident: usize,
    /// Understated proposals with confidence >= 0.5: sure enough to be taken without a second
    /// look (issue 43 asks for none on sensitivity).
    pub understated_at_0_5: usize,
    /// (right + inherited_right) / judged.
    pub accuracy: f64,
}

/// What one set's replay measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CallsReport {
    pub calls_file: String,
    pub labels_file: String,
    pub requests: usize,
    pub negative_requests: usize,
    /// First find_precedents call of each positive request: the retrieval metrics.
    pub find_precedents: Metrics,
    /// Positive requests with a find_precedents call.
    pub find_precedents_requests: usize,
    /// Each of those requests and the 1-based rank of its first relevant entry (`None`: none in
    /// the answer), in request order: `find_precedents.mrr` is the mean of 1 / rank over those
    /// within the first 10.
    pub find_precedents_ranks: Vec<FirstRelevant>,
    /// Negative requests whose first find_precedents answer has an entry with
    /// precedent_confidence >= 0.5 (of `negative_with_find_precedents`).
    pub negative_with_precedent: usize,
    pub negative_with_find_precedents: usize,
    /// Positive requests whose first direct precedent in the answer has precedent_confidence
    /// >= 0.5, of those whose answer holds a direct precedent.
    pub positive_first_direct_confident: usize,
    pub positive_first_direct_found: usize,
    /// First suggest_tags call of each request, per key.
    pub suggest_tags: BTreeMap<String, KeyOutcome>,
    /// Positive requests with a suggest_tags call answered.
    pub suggest_tags_requests: usize,
    /// Keys right / keys judged, every key together (inherited included).
    pub all_keys_accuracy: f64,
    /// Precedent-based proposals: confidence against right, binned.
    pub reliability: Reliability,
    /// Precision of the proposals with confidence >= 0.9, and their share of the judged keys.
    pub precision_at_confident: Option<f64>,
    pub coverage_at_confident: f64,
    /// Precedent proposals with confidence >= 0.9 on negative requests (must be 0).
    pub confident_on_negative: usize,
    /// Inherited proposals (the target's own tags) with confidence >= 0.9 on negative requests.
    pub inherited_confident_on_negative: usize,
    /// Every call replayed, and those answered with an error, by tool and error kind.
    pub calls: usize,
    pub errors: BTreeMap<String, usize>,
    /// Errors because the target table is new (DatasetNotFound from suggest_tags): must be 0.
    pub new_table_errors: usize,
    /// Requests without a call of the tool, by tool.
    pub missing_calls: BTreeMap<String, usize>,
    /// Every judged key that was not proposed right, in request order: what to read first when a
    /// figure moves.
    pub misses: Vec<Judged>,
    /// Every judged key, right or not, in request order: what two call files are compared on
    /// request by request (the requests both answered with suggest_tags), since hosts differ in
    /// which requests they call suggest_tags for.
    pub judged: Vec<Judged>,
}

/// Where a request's first relevant entry stood in its first find_precedents answer.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FirstRelevant {
    pub id: String,
    pub rank: Option<usize>,
}

/// One judged key of one request: what the first suggest_tags call proposed, against the truth.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Judged {
    pub id: String,
    pub key: String,
    /// The proposed value; `None`: the key abstained.
    pub proposed: Option<String>,
    /// The majority value of the request's direct precedents.
    pub truth: String,
    pub confidence: Option<f64>,
    pub basis: Option<String>,
    pub right: bool,
    /// What the confidence map weighed for the key (the first suggest_tags call's arguments,
    /// run again with its evidence); absent when the key had no precedent proposal.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub evidence: Option<calibration::Evidence>,
}

/// The majority present value of `key` among `columns` (ties and none → `None`).
fn majority(
    docs: &BTreeMap<&str, &Document>,
    ontology: &Ontology,
    columns: &[&String],
    key: &str,
) -> Option<String> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for id in columns {
        let Some(doc) = docs.get(id.as_str()) else {
            continue;
        };
        let value = doc
            .lf_tags
            .as_ref()
            .and_then(|t| t.get(key))
            .and_then(|t| t.value())
            .filter(|v| ontology.contains(key, v));
        if let Some(v) = value {
            *counts.entry(v).or_default() += 1;
        }
    }
    let top = counts.values().copied().max()?;
    let mut best = counts.iter().filter(|(_, c)| **c == top);
    let (value, _) = best.next()?;
    best.next().is_none().then(|| value.to_string())
}

/// Replays `calls_file` against `labels_file` on `ctx` (its snapshot and source).
pub fn run(ctx: &Context, calls_file: &Path, labels_file: &Path) -> Result<CallsReport, ToolError> {
    let calls: Vec<CallsLine> = read_lines(
        calls_file,
        "{\"id\", \"calls\": [{\"tool\", \"arguments\"}]}",
    )?;
    let labels: Vec<LabelLine> = read_lines(
        labels_file,
        "{\"id\", \"request\", \"relevant\": {id: grade}, \"negative\"}",
    )?;
    let by_id: BTreeMap<&str, &LabelLine> = labels.iter().map(|l| (l.id.as_str(), l)).collect();
    let (snapshot, _) = ctx.retrieval_parts()?;
    let docs: BTreeMap<&str, &Document> =
        snapshot.docs.iter().map(|d| (d.id.as_str(), d)).collect();
    let caller = Caller::local();
    let mut r = CallsReport {
        calls_file: calls_file.display().to_string(),
        labels_file: labels_file.display().to_string(),
        requests: 0,
        negative_requests: 0,
        find_precedents: Metrics::default(),
        find_precedents_requests: 0,
        find_precedents_ranks: Vec::new(),
        negative_with_precedent: 0,
        negative_with_find_precedents: 0,
        positive_first_direct_confident: 0,
        positive_first_direct_found: 0,
        suggest_tags: BTreeMap::new(),
        suggest_tags_requests: 0,
        all_keys_accuracy: 0.0,
        reliability: calibration::reliability(&[], 0),
        precision_at_confident: None,
        coverage_at_confident: 0.0,
        confident_on_negative: 0,
        inherited_confident_on_negative: 0,
        calls: 0,
        errors: BTreeMap::new(),
        new_table_errors: 0,
        missing_calls: BTreeMap::new(),
        misses: Vec::new(),
        judged: Vec::new(),
    };
    let mut ranked: Vec<Vec<String>> = Vec::new();
    let mut labelled: Vec<Labelled> = Vec::new();
    let mut scored: Vec<(f64, bool)> = Vec::new();
    for line in &calls {
        let label = by_id.get(line.id.as_str()).ok_or_else(|| {
            ToolError::new(
                "InvalidCallsFile",
                format!(
                    "request '{}' of {} has no label in {}; every calls line needs a label line with the same id",
                    line.id,
                    calls_file.display(),
                    labels_file.display()
                ),
            )
        })?;
        let negative = label.negative || label.relevant.is_empty();
        r.requests += 1;
        r.negative_requests += usize::from(negative);
        let mut first: BTreeMap<&str, (Value, &Value)> = BTreeMap::new();
        for call in &line.calls {
            r.calls += 1;
            match tools::call(ctx, &caller, &call.tool, call.arguments.clone()) {
                Outcome::Ok(v) => {
                    first
                        .entry(call.tool.as_str())
                        .or_insert((v, &call.arguments));
                }
                Outcome::InputRequired(_) => {}
                Outcome::Err(e) => {
                    *r.errors
                        .entry(format!("{}: {}", call.tool, e.kind))
                        .or_default() += 1;
                    if call.tool == "suggest_tags" && e.kind == "DatasetNotFound" {
                        r.new_table_errors += 1;
                    }
                }
            }
        }
        for tool in ["find_precedents", "suggest_tags"] {
            if !line.calls.iter().any(|c| c.tool == tool) {
                *r.missing_calls.entry(tool.to_string()).or_default() += 1;
            }
        }
        let labelled_line = Labelled {
            id: Some(line.id.clone()),
            source: format!("{}:{}", labels_file.display(), line.id),
            query: label.request.clone(),
            lang: None,
            alternatives: Vec::new(),
            relevant: label.relevant.clone(),
            negative,
        };
        if let Some((found, _)) = first.get("find_precedents") {
            let entries = found["entries"].as_array().cloned().unwrap_or_default();
            let confident = |e: &Value| {
                e["precedent_confidence"].as_f64().unwrap_or(0.0) >= PRECEDENT_THRESHOLD
            };
            if negative {
                r.negative_with_find_precedents += 1;
                r.negative_with_precedent += usize::from(entries.iter().any(confident));
            } else {
                let direct = labelled_line.direct();
                if let Some(e) = entries
                    .iter()
                    .find(|e| direct.iter().any(|d| e["id"].as_str() == Some(d.as_str())))
                {
                    r.positive_first_direct_found += 1;
                    r.positive_first_direct_confident += usize::from(confident(e));
                }
                ranked.push(
                    entries
                        .iter()
                        .filter_map(|e| e["id"].as_str().map(str::to_string))
                        .collect(),
                );
                labelled.push(labelled_line.clone());
            }
        }
        let Some((suggested, arguments)) = first.get("suggest_tags") else {
            continue;
        };
        let proposal = &suggested["proposal"];
        if negative {
            // An inherited value is the target's own tag, right whatever the column holds:
            // counted apart from the proposals that rest on precedents.
            for (key, c) in proposal["confidence"].as_object().into_iter().flatten() {
                if c.as_f64().unwrap_or(0.0) >= CONFIDENT {
                    if proposal["basis"][key].as_str() == Some("inherited") {
                        r.inherited_confident_on_negative += 1;
                    } else {
                        r.confident_on_negative += 1;
                    }
                }
            }
            continue;
        }
        r.suggest_tags_requests += 1;
        // The call succeeded above, so its arguments parse and it runs again the same way.
        let evidence = serde_json::from_value::<tools::suggest_tags::Input>((*arguments).clone())
            .ok()
            .and_then(|input| {
                tools::suggest_tags::run_with_evidence(ctx, &caller, input, &|_| false).ok()
            })
            .map(|(_, evidence)| evidence)
            .unwrap_or_default();
        let direct = labelled_line.direct();
        for spec in &ctx.ontology.keys {
            let key = spec.key.0.as_str();
            let k = r.suggest_tags.entry(key.to_string()).or_default();
            let Some(truth) = majority(&docs, &ctx.ontology, &direct, key) else {
                continue;
            };
            k.judged += 1;
            let confidence = proposal["confidence"][key].as_f64();
            let proposed = proposal["tags"][key].as_str();
            let basis = proposal["basis"][key].as_str();
            let judged = Judged {
                id: line.id.clone(),
                key: key.to_string(),
                proposed: proposed.map(str::to_string),
                truth: truth.clone(),
                confidence,
                basis: basis.map(str::to_string),
                right: proposed == Some(truth.as_str()),
                evidence: evidence.get(key).copied(),
            };
            if !judged.right {
                r.misses.push(judged.clone());
            }
            r.judged.push(judged);
            let Some(value) = proposed else {
                k.abstained += 1;
                continue;
            };
            let right = value == truth;
            if basis == Some("inherited") {
                if right {
                    k.inherited_right += 1
                } else {
                    k.inherited_wrong += 1
                }
            } else {
                if right {
                    k.right += 1
                } else {
                    k.wrong += 1
                }
                if let Some(c) = confidence {
                    scored.push((c, right));
                }
            }
            if let (Some(p), Some(t)) = (
                ctx.ontology.order_of(key, value),
                ctx.ontology.order_of(key, &truth),
            ) {
                if p < t {
                    k.understated += 1;
                    k.understated_confident += usize::from(confidence.unwrap_or(0.0) >= CONFIDENT);
                    k.understated_at_0_5 +=
                        usize::from(confidence.unwrap_or(0.0) >= UNDERSTATED_AT);
                } else if p > t {
                    k.overstated += 1;
                }
            }
        }
    }
    let positives: Vec<&Labelled> = labelled.iter().collect();
    r.find_precedents_requests = positives.len();
    r.find_precedents = queries::metrics(&ranked, &positives);
    r.find_precedents_ranks = positives
        .iter()
        .zip(&ranked)
        .map(|(q, ids)| FirstRelevant {
            id: q.id.clone().unwrap_or_default(),
            rank: queries::first_relevant(ids, q),
        })
        .collect();
    let (mut right, mut judged) = (0, 0);
    for k in r.suggest_tags.values_mut() {
        k.accuracy = round4((k.right + k.inherited_right) as f64 / k.judged.max(1) as f64);
        right += k.right + k.inherited_right;
        judged += k.judged;
    }
    r.all_keys_accuracy = round4(right as f64 / judged.max(1) as f64);
    r.reliability = calibration::reliability(&scored, judged);
    let confident: Vec<bool> = scored
        .iter()
        .filter(|(c, _)| *c >= CONFIDENT)
        .map(|(_, ok)| *ok)
        .collect();
    r.precision_at_confident = (!confident.is_empty()).then(|| {
        round4(confident.iter().filter(|ok| **ok).count() as f64 / confident.len() as f64)
    });
    r.coverage_at_confident = round4(confident.len() as f64 / judged.max(1) as f64);
    Ok(r)
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The text summary of a replay.
pub fn summary(r: &CallsReport) -> String {
    let m = &r.find_precedents;
    let mut out = format!(
        "{} requests ({} negative), {} calls, {} answered with an error ({} because the target table is new)\n",
        r.requests,
        r.negative_requests,
        r.calls,
        r.errors.values().sum::<usize>(),
        r.new_table_errors
    );
    let _ = writeln!(
        out,
        "find_precedents (first call, {} positive requests): success@5 {:.3}, MRR {:.3}, nDCG@10 {:.3}; first direct precedent with precedent_confidence >= 0.5: {}/{}; negative requests answered with such an entry: {}/{}",
        r.find_precedents_requests,
        m.success_at_5,
        m.mrr,
        m.ndcg_at_10,
        r.positive_first_direct_confident,
        r.positive_first_direct_found,
        r.negative_with_precedent,
        r.negative_with_find_precedents
    );
    if r.suggest_tags.values().all(|k| k.judged == 0) {
        let _ = writeln!(
            out,
            "suggest_tags (first call, {} positive requests): no grade-2 precedent carries a tag (an untagged catalog): nothing to judge",
            r.suggest_tags_requests
        );
        return errors(out, r);
    }
    let _ = writeln!(
        out,
        "suggest_tags (first call, {} positive requests): all keys right {:.3}; confidence ECE {:.3}; at confidence >= 0.9 precision {} coverage {:.3}; precedent proposals >= 0.9 on negative requests: {} (inherited: {})",
        r.suggest_tags_requests,
        r.all_keys_accuracy,
        r.reliability.ece,
        r.precision_at_confident.map_or("-".into(), |p| format!("{p:.3}")),
        r.coverage_at_confident,
        r.confident_on_negative,
        r.inherited_confident_on_negative
    );
    let _ = writeln!(
        out,
        "  {:<14} {:>6} {:>6} {:>6} {:>10} {:>10} {:>9} {:>11} {:>10} {:>10} {:>9}",
        "KEY",
        "JUDGED",
        "RIGHT",
        "WRONG",
        "INHERITED",
        "ABSTAINED",
        "ACCURACY",
        "UNDERSTATED",
        "(>= 0.5)",
        "(>= 0.9)",
        "OVERSTATED"
    );
    for (key, k) in &r.suggest_tags {
        let _ = writeln!(
            out,
            "  {:<14} {:>6} {:>6} {:>6} {:>10} {:>10} {:>9.3} {:>11} {:>10} {:>10} {:>9}",
            key,
            k.judged,
            k.right,
            k.wrong,
            format!(
                "{}/{}",
                k.inherited_right,
                k.inherited_right + k.inherited_wrong
            ),
            k.abstained,
            k.accuracy,
            k.understated,
            k.understated_at_0_5,
            k.understated_confident,
            k.overstated
        );
    }
    out += "  INHERITED: right/all proposals inherited from the target's table or database (counted apart); UNDERSTATED/OVERSTATED: wrong proposals of an ordered key less/more restrictive than the truth\n";
    for m in &r.misses {
        let proposed = match (&m.proposed, &m.basis, m.confidence) {
            (Some(v), Some(b), Some(c)) => format!("{v} ({b}, confidence {c:.3})"),
            (Some(v), Some(b), None) => format!("{v} ({b})"),
            (Some(v), None, _) => v.clone(),
            (None, ..) => "abstained".to_string(),
        };
        let _ = writeln!(
            out,
            "  miss {} {}: {proposed}, direct precedents {}",
            m.id, m.key, m.truth
        );
    }
    errors(out, r)
}

fn errors(mut out: String, r: &CallsReport) -> String {
    for (what, n) in &r.errors {
        let _ = writeln!(out, "  error {what}: {n}");
    }
    out
}

/// The page of `govcat eval calls`.
pub fn html(r: &CallsReport) -> String {
    let mut body = format!(
        "<p>Calls <code>{}</code> replayed as written against labels <code>{}</code>: {} requests ({} negative), {} calls.</p><pre>{}</pre>",
        esc(&r.calls_file),
        esc(&r.labels_file),
        r.requests,
        r.negative_requests,
        r.calls,
        esc(&summary(r))
    );
    body += "<table><caption>Reliability of proposal.confidence (precedent proposals)</caption><tr><th>bin</th><th>n</th><th>mean confidence</th><th>share right</th></tr>";
    for b in &r.reliability.bins {
        let _ = write!(
            body,
            "<tr><td>{:.1}–{:.1}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            b.lower,
            b.upper,
            b.n,
            b.mean_confidence.map_or("–".into(), |x| format!("{x:.3}")),
            b.accuracy.map_or("–".into(), |x| format!("{x:.3}"))
        );
    }
    body += "</table>";
    format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>govcat eval calls</title><style>body{{font-family:sans-serif;max-width:1260px;margin:2em auto}}table{{border-collapse:collapse}}td,th{{padding:3px 9px;border-bottom:1px solid #ddd;text-align:right}}pre{{white-space:pre-wrap}}</style></head><body><h1>govcat eval calls</h1>{body}</body></html>\n"
    )
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// One entry of `govcat eval precedents`: the query's file and id, the entry, its grade and
/// its evidence (what `scripts/fit-precedent.py` fits `precedent_confidence` on).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EvidenceRow {
    pub set: String,
    pub query: String,
    pub negative: bool,
    pub id: String,
    pub grade: u8,
    pub evidence: crate::precedent::EntryEvidence,
    pub precedent_confidence: f64,
}

/// Runs find_precedents (with each query's alternatives) for every query of `files` and
/// returns every entry's evidence with its grade.
pub fn evidence_rows(ctx: &Context, files: &[PathBuf]) -> Result<Vec<EvidenceRow>, ToolError> {
    let mut rows = Vec::new();
    for file in files {
        for q in queries::read_queries(file)? {
            let input = find_precedents::Input {
                description: q.query.clone(),
                alternatives: (!q.alternatives.is_empty()).then(|| q.alternatives.clone()),
                domains: None,
                kinds: None,
                limit: Some(queries::DEPTH),
                cursor: None,
                mode: None,
                identifier: None,
            };
            let (out, evidence) =
                find_precedents::run_with_evidence(ctx, &Caller::local(), input, &|_| false)?;
            for (e, ev) in out.entries.iter().zip(evidence) {
                rows.push(EvidenceRow {
                    set: file.display().to_string(),
                    query: q.id.clone().unwrap_or_else(|| q.source.clone()),
                    negative: q.negative,
                    id: e.id.clone(),
                    grade: q.relevant.get(&e.id).copied().unwrap_or(0),
                    evidence: ev,
                    precedent_confidence: e.precedent_confidence,
                });
            }
        }
    }
    Ok(rows)
}
