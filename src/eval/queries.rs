//! `govcat eval queries`: a labelled query file against a snapshot, for every retrieval mode
//! and the textbook [`baseline`](super::baseline) of the same run. The metric definitions
//! live here once; `benches/quality.rs` and `scripts/perf-report.sh` use them too.

use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;

use super::baseline::Baseline;
use super::{is_calibration, Progress, Split};
use crate::embed::Embedder;
use crate::index::documents::Kind;
use crate::index::Snapshot;
use crate::ontology::Ontology;
use crate::retrieval::{self, Hit, MatchType, Params, PhrasingRank};
use crate::tools::find_precedents::{check_alternatives, MatchedBy};
use crate::tools::ToolError;

/// Entries of a ranking the metrics look at.
pub const DEPTH: usize = 10;
/// Entries named per query as having outranked its first direct precedent.
const OUTRANKED_SHOWN: usize = 10;

/// One labelled query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Labelled {
    /// `id` of the line, if it has one.
    pub id: Option<String>,
    /// Where it came from: `FILE:LINE`.
    pub source: String,
    pub query: String,
    pub lang: Option<String>,
    /// The caller's other phrasings (`"alternatives"`, validated as `find_precedents` does);
    /// empty when the line has none.
    pub alternatives: Vec<String>,
    /// Entry id → grade (a list in the file means grade 1 for each).
    pub relevant: BTreeMap<String, u8>,
    /// A query about something the catalog does not hold (`negative: true` or no relevant
    /// ids): not in the metrics, counted for the semantic-only share.
    pub negative: bool,
}

impl Labelled {
    /// The ids of the highest grade this query has: its direct precedents.
    pub fn direct(&self) -> Vec<&String> {
        let top = self.relevant.values().copied().max().unwrap_or(0);
        self.relevant
            .iter()
            .filter(|(_, g)| **g == top && top > 0)
            .map(|(id, _)| id)
            .collect()
    }
}

fn bad_line(source: &str, problem: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        "InvalidQueryFile",
        format!("{source}: {problem}; each line must be a JSON object {{\"query\": str, \"relevant\": {{id: grade}} or [id, ...]}} with optional \"id\", \"lang\", \"negative\", \"alternatives\" [str, ...]; other fields are ignored (see README, \"Measuring quality on your own catalog\")"),
    )
    .with("line", source)
}

/// Parses one line of a query file.
fn parse_line(source: &str, line: &str) -> Result<Labelled, ToolError> {
    let v: Value = serde_json::from_str(line).map_err(|e| bad_line(source, e))?;
    let obj = v
        .as_object()
        .ok_or_else(|| bad_line(source, "not a JSON object"))?;
    // Other fields (a converter's annotations) are ignored; `relevant` must be there, so a
    // misspelt one is an error and not a silent negative.
    if !obj.contains_key("relevant") && obj.get("negative") != Some(&Value::Bool(true)) {
        return Err(bad_line(
            source,
            "\"relevant\" is missing; list the ids that answer the query (an empty {} or \"negative\": true for a query the catalog cannot answer)",
        ));
    }
    let query = obj
        .get("query")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|q| !q.is_empty())
        .ok_or_else(|| bad_line(source, "\"query\" is missing, not a string or empty"))?
        .to_string();
    let id = match obj.get("id") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(_) => return Err(bad_line(source, "\"id\" must be a string or a number")),
    };
    let lang = match obj.get("lang") {
        None => None,
        Some(Value::String(s)) => Some(s.clone()),
        Some(_) => return Err(bad_line(source, "\"lang\" must be a string")),
    };
    let alternatives = match obj.get("alternatives") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(a)) => {
            let texts: Vec<String> = a
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| bad_line(source, "\"alternatives\" must be a list of strings"))?;
            check_alternatives(&query, Some(&texts)).map_err(|e| bad_line(source, e.message))?
        }
        Some(_) => {
            return Err(bad_line(
                source,
                "\"alternatives\" must be a list of strings",
            ))
        }
    };
    let mut relevant = BTreeMap::new();
    match obj.get("relevant") {
        Some(Value::Object(m)) => {
            for (k, g) in m {
                let grade = g.as_u64().filter(|g| (1..=10).contains(g)).ok_or_else(|| {
                    bad_line(source, format!("grade of {k} must be an integer 1-10"))
                })?;
                relevant.insert(k.clone(), grade as u8);
            }
        }
        Some(Value::Array(a)) => {
            for x in a {
                let k = x
                    .as_str()
                    .ok_or_else(|| bad_line(source, "\"relevant\" as a list holds id strings"))?;
                relevant.insert(k.to_string(), 1);
            }
        }
        None => {}
        Some(_) => {
            return Err(bad_line(
                source,
                "\"relevant\" must be an object {id: grade} or a list of ids",
            ))
        }
    }
    let negative = match obj.get("negative") {
        None => relevant.is_empty(),
        Some(Value::Bool(true)) if relevant.is_empty() => true,
        Some(Value::Bool(true)) => {
            return Err(bad_line(
                source,
                "\"negative\": true but \"relevant\" lists ids; a negative query has none",
            ))
        }
        Some(Value::Bool(false)) if relevant.is_empty() => {
            return Err(bad_line(
                source,
                "\"relevant\" is empty; list the ids that answer the query, or mark it \"negative\": true",
            ))
        }
        Some(Value::Bool(false)) => false,
        Some(_) => return Err(bad_line(source, "\"negative\" must be true or false")),
    };
    Ok(Labelled {
        id,
        source: source.to_string(),
        query,
        lang,
        alternatives,
        relevant,
        negative,
    })
}

/// Reads a query file (JSON lines; blank lines skipped).
pub fn read_queries(path: &Path) -> Result<Vec<Labelled>, ToolError> {
    let text = std::fs::read_to_string(path).map_err(|e| {
        ToolError::new(
            "InvalidQueryFile",
            format!(
                "cannot read query file {}: {e}; check the path",
                path.display()
            ),
        )
    })?;
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        out.push(parse_line(&format!("{}:{}", path.display(), i + 1), line)?);
    }
    if out.is_empty() {
        return Err(ToolError::new(
            "InvalidQueryFile",
            format!(
                "query file {} holds no query; one JSON object a line is expected",
                path.display()
            ),
        ));
    }
    Ok(out)
}

/// Quality figures of one ranking over a set of queries. Every share is rounded to 4 places.
#[derive(Debug, Default, Clone, Copy, PartialEq, Serialize)]
pub struct Metrics {
    pub queries: usize,
    /// Direct precedents (the query's top grade) in the top k / min(k, their number).
    #[serde(rename = "recall@1")]
    pub recall_at_1: f64,
    #[serde(rename = "recall@5")]
    pub recall_at_5: f64,
    #[serde(rename = "recall@10")]
    pub recall_at_10: f64,
    /// Relevant ids of every grade in the top 10 / their number.
    #[serde(rename = "full_recall@10")]
    pub full_recall_at_10: f64,
    /// Share of queries with a direct precedent in the top k.
    #[serde(rename = "success@1")]
    pub success_at_1: f64,
    #[serde(rename = "success@5")]
    pub success_at_5: f64,
    #[serde(rename = "success@10")]
    pub success_at_10: f64,
    /// Mean of 1 / rank of the first relevant id of any grade (0 when none in the top 10).
    pub mrr: f64,
    /// Graded gain 2^g - 1, log2 discount, ideal ordering of the query's grades.
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: f64,
    /// Returned entries (top 10) that are not snapshot documents or carry a tag value outside
    /// the ontology. Must be 0.
    pub out_of_vocabulary: usize,
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

/// The 1-based rank of the first entry of `ids` that `q` grades relevant (any grade): the
/// reciprocal rank of [`metrics`] and `eval calls`' per-request ranks.
pub fn first_relevant(ids: &[String], q: &Labelled) -> Option<usize> {
    ids.iter()
        .position(|id| q.relevant.contains_key(id))
        .map(|i| i + 1)
}

/// Metrics of `ranked` (entry ids, best first; only the first [`DEPTH`] are read) against the
/// labels, query by query in the same order. Negative queries must not be passed.
pub fn metrics(ranked: &[Vec<String>], labelled: &[&Labelled]) -> Metrics {
    let mut m = Metrics {
        queries: labelled.len(),
        ..Default::default()
    };
    for (ids, q) in ranked.iter().zip(labelled) {
        let ids = &ids[..ids.len().min(DEPTH)];
        let direct = q.direct();
        let found = |k: usize| ids.iter().take(k).filter(|id| direct.contains(id)).count();
        let recall = |k: usize| found(k) as f64 / direct.len().min(k).max(1) as f64;
        m.recall_at_1 += recall(1);
        m.recall_at_5 += recall(5);
        m.recall_at_10 += recall(10);
        m.success_at_1 += f64::from(found(1) > 0);
        m.success_at_5 += f64::from(found(5) > 0);
        m.success_at_10 += f64::from(found(10) > 0);
        m.full_recall_at_10 += ids.iter().filter(|id| q.relevant.contains_key(*id)).count() as f64
            / q.relevant.len().max(1) as f64;
        if let Some(rank) = first_relevant(ids, q) {
            m.mrr += 1.0 / rank as f64;
        }
        let gain = |g: u8| 2f64.powi(i32::from(g)) - 1.0;
        let discount = |i: usize| (i as f64 + 2.0).log2();
        let dcg: f64 = ids
            .iter()
            .enumerate()
            .map(|(i, id)| gain(*q.relevant.get(id).unwrap_or(&0)) / discount(i))
            .sum();
        let mut grades: Vec<u8> = q.relevant.values().copied().collect();
        grades.sort_by(|a, b| b.cmp(a));
        let idcg: f64 = grades
            .iter()
            .take(DEPTH)
            .enumerate()
            .map(|(i, g)| gain(*g) / discount(i))
            .sum();
        m.ndcg_at_10 += if idcg > 0.0 { dcg / idcg } else { 0.0 };
    }
    let n = labelled.len().max(1) as f64;
    for v in [
        &mut m.recall_at_1,
        &mut m.recall_at_5,
        &mut m.recall_at_10,
        &mut m.full_recall_at_10,
        &mut m.success_at_1,
        &mut m.success_at_5,
        &mut m.success_at_10,
        &mut m.mrr,
        &mut m.ndcg_at_10,
    ] {
        *v = round4(*v / n);
    }
    m
}

/// A ranking method under evaluation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum EvalMode {
    Bm25,
    Dense,
    Hybrid,
    Baseline,
    /// The product with the query line's alternatives (`find_precedents` with `alternatives`).
    #[value(name = "hybrid_alt", alias = "hybrid-alt")]
    HybridAlt,
    /// The baseline run once per phrasing, fused by RRF k 60 with equal weights.
    #[value(name = "baseline_alt", alias = "baseline-alt")]
    BaselineAlt,
}

impl EvalMode {
    pub const ALL: [EvalMode; 4] = [
        EvalMode::Bm25,
        EvalMode::Dense,
        EvalMode::Hybrid,
        EvalMode::Baseline,
    ];

    /// The modes that search the query line's alternatives.
    pub const WITH_ALTERNATIVES: [EvalMode; 2] = [EvalMode::HybridAlt, EvalMode::BaselineAlt];

    /// The product's retrieval mode this is (of the description alone); `None` otherwise.
    pub fn product_mode(self) -> Option<retrieval::Mode> {
        match self {
            EvalMode::Bm25 => Some(retrieval::Mode::Bm25),
            EvalMode::Dense => Some(retrieval::Mode::Dense),
            EvalMode::Hybrid => Some(retrieval::Mode::Hybrid),
            EvalMode::Baseline | EvalMode::HybridAlt | EvalMode::BaselineAlt => None,
        }
    }

    /// The mode of the description alone this one adds the alternatives to.
    pub fn without_alternatives(self) -> EvalMode {
        match self {
            EvalMode::HybridAlt => EvalMode::Hybrid,
            EvalMode::BaselineAlt => EvalMode::Baseline,
            other => other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EvalMode::Bm25 => "bm25",
            EvalMode::Dense => "dense",
            EvalMode::Hybrid => "hybrid",
            EvalMode::Baseline => "baseline",
            EvalMode::HybridAlt => "hybrid_alt",
            EvalMode::BaselineAlt => "baseline_alt",
        }
    }
}

/// One phrasing's candidates: its lexical and dense sides and whether it asks for an
/// identifier (the key-column rule).
pub type PhrasingCandidates = (Vec<(u32, f32)>, Vec<(u32, f32)>, bool);

/// The product's candidates of one query, retrieved once and fused per mode: the
/// description's sides, and each alternative's.
pub struct Raw {
    pub lexical: Vec<(u32, f32)>,
    pub dense: Vec<(u32, f32)>,
    pub asks_for_identifier: bool,
    /// Per alternative: its lexical and dense candidates and its key-column rule.
    pub alternatives: Vec<PhrasingCandidates>,
}

impl Raw {
    /// Retrieves both sides over every domain and both kinds, exactly as `find_precedents`
    /// does for a caller who may read everything.
    pub fn retrieve(
        snapshot: &Snapshot,
        embedder: &dyn Embedder,
        params: &Params,
        description: &str,
    ) -> Result<Raw, ToolError> {
        Raw::retrieve_with(snapshot, embedder, params, description, &[])
    }

    /// [`Raw::retrieve`] of the description and `alternatives`, in one search as
    /// `find_precedents` runs it with them.
    pub fn retrieve_with(
        snapshot: &Snapshot,
        embedder: &dyn Embedder,
        params: &Params,
        description: &str,
        alternatives: &[String],
    ) -> Result<Raw, ToolError> {
        let kinds = Kind::ALL;
        let query = retrieval::Query {
            description,
            alternatives,
            domains: &snapshot.domains,
            kinds: &kinds,
            mode: retrieval::Mode::Hybrid,
            identifier: None,
        };
        let prepared = retrieval::prepare(snapshot, &query);
        let sides = retrieval::candidates_all(snapshot, embedder, params, &query, &prepared)
            .map_err(|e| {
                ToolError::new("RetrievalFailed", format!("{e}; retry")).next(
                    crate::tools::Step::Index {
                        why: "to rebuild the snapshot if the error persists".into(),
                    },
                )
            })?;
        let mut each = sides
            .into_iter()
            .zip(&prepared)
            .map(|((l, d), p)| (l, d, p.asks_for_identifier));
        let (lexical, dense, asks_for_identifier) =
            each.next()
                .unwrap_or((Vec::new(), Vec::new(), prepared[0].asks_for_identifier));
        Ok(Raw {
            lexical,
            dense,
            asks_for_identifier,
            alternatives: each.collect(),
        })
    }

    /// The fused ranking of `mode`, the same as `find_precedents` with that mode (the
    /// description alone).
    pub fn fused(&self, snapshot: &Snapshot, params: &Params, mode: retrieval::Mode) -> Vec<Hit> {
        let none: &[(u32, f32)] = &[];
        let (l, d) = match mode {
            retrieval::Mode::Bm25 => (self.lexical.as_slice(), none),
            retrieval::Mode::Dense => (none, self.dense.as_slice()),
            retrieval::Mode::Hybrid => (self.lexical.as_slice(), self.dense.as_slice()),
        };
        retrieval::ranked(snapshot, params, l, d, self.asks_for_identifier)
    }

    /// The hybrid ranking with the alternatives, the same as `find_precedents` with them: each
    /// phrasing's own list, fused by [`retrieval::fuse_phrasings`].
    pub fn fused_with_alternatives(&self, snapshot: &Snapshot, params: &Params) -> Vec<Hit> {
        let mut lists = vec![self.fused(snapshot, params, retrieval::Mode::Hybrid)];
        for (l, d, asks) in &self.alternatives {
            lists.push(retrieval::ranked(snapshot, params, l, d, *asks));
        }
        retrieval::fuse_phrasings(snapshot, params, lists)
    }
}

/// One ranked answer: ordinals best first, and which of them only the dense side found.
struct Answer {
    ords: Vec<u32>,
    semantic_only: bool,
    /// Per entry, the phrasings that found it (modes with alternatives; empty otherwise).
    matched_by: Vec<Vec<PhrasingRank>>,
}

/// What `eval queries` was asked.
#[derive(Debug, Clone, PartialEq)]
pub struct QueryOptions {
    pub files: Vec<PathBuf>,
    pub modes: Vec<EvalMode>,
    pub split: Split,
}

/// nDCG@10 and MRR of a mode divided by the baseline's of the same run.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratio {
    #[serde(rename = "ndcg@10")]
    pub ndcg_at_10: Option<f64>,
    pub mrr: Option<f64>,
}

/// Figures of one mode.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModeReport {
    #[serde(flatten)]
    pub metrics: Metrics,
    /// Negative queries evaluated.
    pub negatives: usize,
    /// Share of negative queries whose answer holds an entry only the dense side found
    /// (`null` without negatives).
    pub negatives_with_semantic_only: Option<f64>,
    /// `null` when the baseline did not run.
    pub ratio_to_baseline: Option<Ratio>,
}

/// One mode's answer to one query.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueryOutcome {
    /// Rank (1-based) of the first direct precedent in the whole answer; `null` if absent.
    pub first_direct_rank: Option<usize>,
    /// Entries ranked above the first direct precedent (the top 10 when there is none), at
    /// most 10.
    pub outranked_by: Vec<String>,
    /// Negative queries: whether the answer holds a semantic-only entry.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub semantic_only: Option<bool>,
    /// Modes with alternatives: the phrasings that found the first direct precedent, each with
    /// its rank in that phrasing's own list (empty when none is in the answer).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub first_direct_found_by: Option<Vec<MatchedBy>>,
}

#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PerQuery {
    pub id: Option<String>,
    pub source: String,
    pub query: String,
    pub lang: Option<String>,
    /// The line's alternatives, as searched by the modes with alternatives.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub alternatives: Vec<String>,
    pub negative: bool,
    pub direct: usize,
    pub relevant: usize,
    pub modes: BTreeMap<String, QueryOutcome>,
}

/// What ran, echoed (rule 11).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueriesRequest {
    pub files: Vec<String>,
    pub split: Split,
    pub modes: Vec<EvalMode>,
    pub snapshot_id: String,
    pub model: String,
    pub documents: usize,
    pub params: Params,
    pub baseline: &'static str,
    pub definitions: BTreeMap<&'static str, &'static str>,
}

/// The result of `govcat eval queries`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QueriesReport {
    pub modes: BTreeMap<String, ModeReport>,
    /// Queries per language (metrics of the hybrid mode), when the file names languages.
    pub by_lang: BTreeMap<String, BTreeMap<String, Metrics>>,
    pub per_query: Vec<PerQuery>,
    pub request: QueriesRequest,
    /// `"contains an EU IBAN"` style sanity: the first query's top hybrid entry.
    pub wall_seconds: f64,
}

pub const BASELINE_DEFINITION: &str = "BM25 over name words and description (tantivy en_stem: lower-case, Porter2; k1 1.2, b 0.75; no glossary, abbreviations, word splitting or boosts) + all-MiniLM-L6-v2 exact cosine over the same text (no floor), reciprocal-rank fusion k=60 with equal weights, top 100 of each side";

fn definitions() -> BTreeMap<&'static str, &'static str> {
    BTreeMap::from([
        ("recall@k", "direct precedents (ids of the query's top grade) in the top k / min(k, number of direct precedents)"),
        ("full_recall@10", "relevant ids of every grade in the top 10 / number of relevant ids"),
        ("success@k", "share of queries with a direct precedent in the top k"),
        ("mrr", "mean of 1 / rank of the first relevant id of any grade in the top 10"),
        ("ndcg@10", "graded gain 2^g - 1, log2 discount, ideal = the query's grades sorted"),
        ("out_of_vocabulary", "returned entries (top 10) that are not snapshot documents or carry a tag value outside the ontology; must be 0"),
        ("negatives_with_semantic_only", "share of negative queries whose answer (all pages) holds an entry found only by the dense side"),
        ("split", "calibration: queries whose id's digits are divisible by 3; held-out: the rest"),
        ("hybrid_alt", "the product (hybrid) with the query line's alternatives: each phrasing's own list fused as request.params.phrasing_rrf_k / description_weight / alternative_weight say; a line without alternatives is searched by its description alone"),
        ("baseline_alt", "the baseline run once per phrasing (description and alternatives), the lists fused by reciprocal rank k=60 with equal weights"),
        ("first_direct_found_by", "modes with alternatives: the phrasings that found the first direct precedent, with its rank in each one's own list"),
    ])
}

/// Entries among the first [`DEPTH`] of `ords` that are not snapshot documents or carry a
/// present tag value outside the ontology.
pub fn out_of_vocabulary(snapshot: &Snapshot, ontology: &Ontology, ords: &[u32]) -> usize {
    ords.iter()
        .take(DEPTH)
        .filter(|&&o| {
            let Some(d) = snapshot.docs.get(o as usize) else {
                return true;
            };
            d.lf_tags.as_ref().is_some_and(|tags| {
                tags.iter()
                    .any(|(k, t)| t.value().is_some_and(|v| !ontology.contains(k, v)))
            })
        })
        .count()
}

/// Checks every relevant id against the snapshot, so a label that names nothing is an error
/// and never a silent miss.
fn check_ids(snapshot: &Snapshot, queries: &[Labelled]) -> Result<(), ToolError> {
    let known: HashSet<&str> = snapshot.docs.iter().map(|d| d.id.as_str()).collect();
    let unknown: Vec<String> = queries
        .iter()
        .flat_map(|q| {
            q.relevant
                .keys()
                .filter(|id| !known.contains(id.as_str()))
                .map(move |id| format!("{} {id}", q.source))
        })
        .collect();
    if unknown.is_empty() {
        return Ok(());
    }
    Err(ToolError::new(
        "UnknownRelevantId",
        format!(
            "{} relevant id(s) are not entries of snapshot {} (first: {}); ids are column:<domain>.<table>.<column> or ontology:<key>=<value> as find_precedents returns them. Check that --catalog names the catalog the labels were written for, or fix the labels",
            unknown.len(),
            snapshot.manifest.id,
            unknown.iter().take(5).cloned().collect::<Vec<_>>().join("; ")
        ),
    )
    .with("unknown", unknown)
    .next(crate::tools::Step::Index {
        why: "to rebuild the snapshot if the catalog changed since it was built".into(),
    }))
}

/// Runs the evaluation.
pub fn run(
    snapshot: &Snapshot,
    embedder: &dyn Embedder,
    ontology: &Ontology,
    params: &Params,
    options: &QueryOptions,
    progress: &dyn Progress,
) -> Result<QueriesReport, ToolError> {
    let started = std::time::Instant::now();
    let mut queries = Vec::new();
    for f in &options.files {
        queries.extend(read_queries(f)?);
    }
    if options.split != Split::All {
        if let Some(q) = queries.iter().find(|q| q.id.is_none()) {
            return Err(ToolError::new(
                "InvalidArguments",
                format!(
                    "--split {} needs an id on every query, and {} has none; add ids or use --split all",
                    options.split.as_str(),
                    q.source
                ),
            ));
        }
        queries.retain(|q| {
            let cal = q.id.as_deref().is_some_and(is_calibration);
            cal == (options.split == Split::Calibration)
        });
    }
    check_ids(snapshot, &queries)?;
    let with_alternatives = queries.iter().any(|q| !q.alternatives.is_empty());
    let modes: Vec<EvalMode> = {
        let mut m = options.modes.clone();
        if with_alternatives {
            // Each mode that has a version with alternatives is reported with it too.
            for alt in EvalMode::WITH_ALTERNATIVES {
                if m.contains(&alt.without_alternatives()) {
                    m.push(alt);
                }
            }
        } else if let Some(alt) = m.iter().find(|m| EvalMode::WITH_ALTERNATIVES.contains(m)) {
            return Err(ToolError::new(
                "InvalidArguments",
                format!(
                    "--modes {} searches each query's \"alternatives\", and no query of {} has any; add \"alternatives\": [...] to the query lines, or leave {} out of --modes",
                    alt.as_str(),
                    options.files.iter().map(|f| f.display().to_string()).collect::<Vec<_>>().join(", "),
                    alt.as_str()
                ),
            ));
        }
        m.sort();
        m.dedup();
        m
    };
    let baseline = if modes.contains(&EvalMode::Baseline) || modes.contains(&EvalMode::BaselineAlt)
    {
        progress.start("baseline: embedding documents", snapshot.docs.len() as u64);
        let b = Baseline::build(snapshot, embedder, &|n| progress.advance(n))?;
        progress.finish();
        Some(b)
    } else {
        None
    };
    progress.start("retrieving queries", queries.len() as u64);
    let mut answers: Vec<BTreeMap<EvalMode, Answer>> = Vec::with_capacity(queries.len());
    for q in &queries {
        let raw = Raw::retrieve_with(snapshot, embedder, params, &q.query, &q.alternatives)?;
        let mut per_mode = BTreeMap::new();
        for &mode in &modes {
            let hits = match (mode, mode.product_mode(), &baseline) {
                (_, Some(product), _) => raw.fused(snapshot, params, product),
                (EvalMode::HybridAlt, _, _) => raw.fused_with_alternatives(snapshot, params),
                (EvalMode::BaselineAlt, _, Some(b)) => {
                    let mut lists = vec![b.rank(snapshot, embedder, &q.query)?];
                    for a in &q.alternatives {
                        lists.push(b.rank(snapshot, embedder, a)?);
                    }
                    retrieval::fuse_lists(snapshot, lists, super::baseline::RRF_K, |_| 1.0)
                }
                (_, _, Some(b)) => b.rank(snapshot, embedder, &q.query)?,
                (_, _, None) => unreachable!("the baseline is built whenever its mode runs"),
            };
            let alt = EvalMode::WITH_ALTERNATIVES.contains(&mode);
            let answer = Answer {
                semantic_only: hits.iter().any(|h| h.match_type == MatchType::Semantic),
                ords: hits.iter().map(|h| h.ord).collect(),
                matched_by: if alt {
                    hits.iter().map(|h| h.matched_by.clone()).collect()
                } else {
                    Vec::new()
                },
            };
            per_mode.insert(mode, answer);
        }
        answers.push(per_mode);
        progress.advance(1);
    }
    progress.finish();

    let id_of = |o: &u32| snapshot.doc(*o).id.clone();
    let positives: Vec<usize> = (0..queries.len())
        .filter(|&i| !queries[i].negative)
        .collect();
    let negatives: Vec<usize> = (0..queries.len())
        .filter(|&i| queries[i].negative)
        .collect();
    let mut mode_metrics: BTreeMap<EvalMode, (Metrics, Option<f64>)> = BTreeMap::new();
    let mut by_lang: BTreeMap<String, BTreeMap<String, Metrics>> = BTreeMap::new();
    for &mode in &modes {
        let ranked: Vec<Vec<String>> = positives
            .iter()
            .map(|&i| {
                answers[i][&mode]
                    .ords
                    .iter()
                    .take(DEPTH)
                    .map(id_of)
                    .collect()
            })
            .collect();
        let labelled: Vec<&Labelled> = positives.iter().map(|&i| &queries[i]).collect();
        let mut m = metrics(&ranked, &labelled);
        m.out_of_vocabulary = positives
            .iter()
            .chain(&negatives)
            .map(|&i| out_of_vocabulary(snapshot, ontology, &answers[i][&mode].ords))
            .sum();
        let neg = (!negatives.is_empty()).then(|| {
            round4(
                negatives
                    .iter()
                    .filter(|&&i| answers[i][&mode].semantic_only)
                    .count() as f64
                    / negatives.len() as f64,
            )
        });
        let langs: HashSet<&str> = labelled.iter().filter_map(|q| q.lang.as_deref()).collect();
        if langs.len() > 1 {
            for lang in langs {
                let (r, l): (Vec<Vec<String>>, Vec<&Labelled>) = ranked
                    .iter()
                    .zip(&labelled)
                    .filter(|(_, q)| q.lang.as_deref() == Some(lang))
                    .map(|(r, q)| (r.clone(), *q))
                    .unzip();
                by_lang
                    .entry(lang.to_string())
                    .or_default()
                    .insert(mode.as_str().to_string(), metrics(&r, &l));
            }
        }
        mode_metrics.insert(mode, (m, neg));
    }
    let base = mode_metrics.get(&EvalMode::Baseline).map(|(m, _)| *m);
    let ratio = |x: f64, b: f64| (b > 0.0).then(|| (x / b * 1000.0).round() / 1000.0);
    let modes_out: BTreeMap<String, ModeReport> = mode_metrics
        .iter()
        .map(|(mode, (m, neg))| {
            (
                mode.as_str().to_string(),
                ModeReport {
                    metrics: *m,
                    negatives: negatives.len(),
                    negatives_with_semantic_only: *neg,
                    ratio_to_baseline: base.map(|b| Ratio {
                        ndcg_at_10: ratio(m.ndcg_at_10, b.ndcg_at_10),
                        mrr: ratio(m.mrr, b.mrr),
                    }),
                },
            )
        })
        .collect();
    let per_query = queries
        .iter()
        .zip(&answers)
        .map(|(q, per_mode)| {
            let direct = q.direct();
            PerQuery {
                id: q.id.clone(),
                source: q.source.clone(),
                query: q.query.clone(),
                lang: q.lang.clone(),
                alternatives: q.alternatives.clone(),
                negative: q.negative,
                direct: direct.len(),
                relevant: q.relevant.len(),
                modes: per_mode
                    .iter()
                    .map(|(mode, a)| {
                        let first = a
                            .ords
                            .iter()
                            .position(|o| direct.contains(&&snapshot.doc(*o).id));
                        let above = first.unwrap_or(DEPTH).min(OUTRANKED_SHOWN);
                        (
                            mode.as_str().to_string(),
                            QueryOutcome {
                                first_direct_rank: first.map(|p| p + 1),
                                outranked_by: a.ords.iter().take(above).map(id_of).collect(),
                                semantic_only: q.negative.then_some(a.semantic_only),
                                first_direct_found_by: (!a.matched_by.is_empty()
                                    || EvalMode::WITH_ALTERNATIVES.contains(mode))
                                .then(|| {
                                    let phrasings: Vec<&str> = std::iter::once(q.query.as_str())
                                        .chain(q.alternatives.iter().map(String::as_str))
                                        .collect();
                                    first
                                        .and_then(|p| a.matched_by.get(p))
                                        .map(|m| {
                                            m.iter()
                                                .map(|r| MatchedBy {
                                                    phrasing: phrasings[r.phrasing].to_string(),
                                                    rank: r.rank,
                                                })
                                                .collect()
                                        })
                                        .unwrap_or_default()
                                }),
                            },
                        )
                    })
                    .collect(),
            }
        })
        .collect();
    Ok(QueriesReport {
        modes: modes_out,
        by_lang,
        per_query,
        request: QueriesRequest {
            files: options
                .files
                .iter()
                .map(|f| f.display().to_string())
                .collect(),
            split: options.split,
            modes,
            snapshot_id: snapshot.manifest.id.clone(),
            model: snapshot.manifest.model.id.clone(),
            documents: snapshot.docs.len(),
            params: *params,
            baseline: BASELINE_DEFINITION,
            definitions: definitions(),
        },
        wall_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn modes_are_named_on_the_command_line_as_in_the_report() {
        use clap::ValueEnum;
        for mode in [EvalMode::HybridAlt, EvalMode::BaselineAlt, EvalMode::Hybrid] {
            let reported = serde_json::to_value(mode).unwrap();
            let name = reported.as_str().unwrap();
            assert_eq!(EvalMode::from_str(name, false), Ok(mode));
        }
        // The kebab-case spelling clap would have chosen still parses.
        assert_eq!(
            EvalMode::from_str("hybrid-alt", false),
            Ok(EvalMode::HybridAlt)
        );
    }

    use super::*;

    fn labelled(relevant: &[(&str, u8)]) -> Labelled {
        Labelled {
            id: Some("q001".into()),
            source: "t:1".into(),
            query: "q".into(),
            lang: None,
            alternatives: Vec::new(),
            relevant: relevant.iter().map(|(k, g)| (k.to_string(), *g)).collect(),
            negative: false,
        }
    }

    #[test]
    fn metrics_follow_their_definitions_on_a_hand_computed_ranking() {
        let q = labelled(&[("a", 2), ("b", 2), ("c", 1)]);
        // a direct precedent at rank 2, a grade-1 id at rank 1, the other direct one absent.
        let ranked = vec![vec!["c".to_string(), "a".into(), "x".into()]];
        let m = metrics(&ranked, &[&q]);
        assert_eq!(m.recall_at_1, 0.0);
        assert_eq!(m.recall_at_5, 0.5);
        assert_eq!(m.success_at_1, 0.0);
        assert_eq!(m.success_at_5, 1.0);
        assert_eq!(m.full_recall_at_10, round4(2.0 / 3.0));
        assert_eq!(m.mrr, 1.0);
        let dcg = 1.0 / 2f64.log2() + 3.0 / 3f64.log2();
        let idcg = 3.0 / 2f64.log2() + 3.0 / 3f64.log2() + 1.0 / 4f64.log2();
        assert_eq!(m.ndcg_at_10, round4(dcg / idcg));
    }

    #[test]
    fn a_list_of_ids_makes_every_id_a_direct_precedent() {
        let q = parse_line(
            "f:1",
            r#"{"query": "x", "relevant": ["column:a.b.c", "column:a.b.d"]}"#,
        )
        .unwrap();
        assert_eq!(q.direct().len(), 2);
        assert!(!q.negative);
        let n = parse_line("f:2", r#"{"query": "x", "relevant": {}}"#).unwrap();
        assert!(n.negative);
    }

    #[test]
    fn alternatives_of_a_line_are_read_trimmed_and_checked_as_the_tool_checks_them() {
        let q = parse_line(
            "f:3",
            r#"{"query": "contains an EU IBAN", "alternatives": [" iban ", "payee_iban"], "relevant": ["a"]}"#,
        )
        .unwrap();
        assert_eq!(
            q.alternatives,
            vec!["iban".to_string(), "payee_iban".into()]
        );
        let none = parse_line("f:4", r#"{"query": "x", "relevant": ["a"]}"#).unwrap();
        assert!(none.alternatives.is_empty());
        let e = parse_line(
            "f:5",
            r#"{"query": "iban", "alternatives": ["IBAN"], "relevant": ["a"]}"#,
        )
        .unwrap_err();
        assert_eq!(e.kind, "InvalidQueryFile");
        assert!(
            e.message.starts_with(
                "f:5: alternatives[0] (\"IBAN\") repeats the description (case-insensitive)"
            ),
            "{}",
            e.message
        );
        let e = parse_line(
            "f:6",
            r#"{"query": "x", "alternatives": "iban", "relevant": ["a"]}"#,
        )
        .unwrap_err();
        assert!(e
            .message
            .starts_with("f:6: \"alternatives\" must be a list of strings"));
    }

    #[test]
    fn bad_lines_are_refused_with_the_line_named() {
        for (line, problem) in [
            (
                r#"{"query": "", "relevant": ["a"]}"#,
                "\"query\" is missing",
            ),
            (r#"{"query": "x", "relevant": {"a": 0}}"#, "grade of a"),
            (
                r#"{"query": "x", "relevnt": ["a"]}"#,
                "\"relevant\" is missing",
            ),
            (
                r#"{"query": "x", "negative": true, "relevant": ["a"]}"#,
                "\"negative\": true",
            ),
            ("not json", "f:7:"),
        ] {
            let e = parse_line("f:7", line).unwrap_err();
            assert_eq!(e.kind, "InvalidQueryFile");
            assert!(e.message.starts_with("f:7: "), "{}", e.message);
            assert!(e.message.contains(problem), "{} lacks {problem}", e.message);
        }
    }
}
