//! `govcat eval tags`: leave-one-out tag suggestion over the catalog's own tagged columns, no
//! labels needed. Each column with a present tag is described by its own name and
//! description, `suggest_tags` runs with that column (or its whole table) excluded from the
//! precedents, and the proposal is compared with the column's real tags — next to two
//! baselines of the same run: the key's most common value, and the tag of the column whose
//! name shares the most words. Also lists precedent conflicts: near-identical columns tagged
//! differently, which is what a governance team wants to fix.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::Progress;
use crate::calibration::{self, Map, Observation, Reliability};
use crate::index::documents::{Document, Kind};
use crate::text::{identifier_words, words};
pub use crate::tools::calibrate::{description_of, value_of};
use crate::tools::{calibrate, Context, ToolError};

/// What a held-out column hides from the precedents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Exclude {
    /// The column itself.
    Column,
    /// Every column of its table (no sibling can give the answer away).
    Table,
}

/// Columns whose descriptions share at least this share of words (Jaccard) count as
/// near-identical when their names are equal.
pub const CONFLICT_MIN_JACCARD: f64 = 0.5;
/// Label of "no answer" in the confusion tables.
pub const NO_ANSWER: &str = "(no answer)";

/// Accuracy figures of one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyReport {
    /// Held-out columns with a present value for this key.
    pub columns: usize,
    /// Share whose proposal equals the real value (no answer counts as wrong).
    #[serde(rename = "accuracy@1")]
    pub accuracy_at_1: f64,
    /// Share that got a proposal at all.
    pub coverage: f64,
    /// Correct proposals / proposals (`null` when none was made).
    pub accuracy_when_answered: Option<f64>,
    /// Columns the suggestion abstained on (no proposal, or one below `min_confidence`).
    pub abstained: usize,
    /// Of those, the ones whose best precedents' value is withheld from the caller (FIDELITY
    /// rule 12: withheld evidence is not absent evidence).
    pub abstained_withheld: usize,
    /// Of those, the ones no precedent carries a value for: nothing comparable to copy from
    /// (an empty search, or precedents without the key). The rest were below `min_confidence`.
    pub abstained_no_precedent: usize,
    /// The better baseline's accuracy on the answered columns only (`null` when none was
    /// answered): what `accuracy_when_answered` is compared with, so that abstaining under
    /// `min_confidence` is not counted as a loss against a baseline that answers everything.
    pub baseline_when_answered: Option<f64>,
    /// Accuracy of always answering the key's most common value among the other columns.
    pub baseline_majority: f64,
    /// Accuracy of the value of the other column whose name shares the most words (majority
    /// among those tied; the most common value when no name shares a word).
    pub baseline_name_overlap: f64,
    /// Ordered keys only (`null` otherwise): wrong proposals less restrictive than the real
    /// value (the costly error) and more restrictive.
    pub understated: Option<usize>,
    pub overstated: Option<usize>,
    /// Real value → proposed value (or `(no answer)`) → columns.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Near-identical columns (same name words, descriptions sharing most words) tagged
/// differently for one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    pub key: String,
    /// The shared name words.
    pub name: String,
    /// Value → the column ids carrying it.
    pub values: BTreeMap<String, Vec<String>>,
}

/// What ran, echoed (rule 11).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagsRequest {
    pub exclude: Exclude,
    pub description_of_a_column: &'static str,
    pub snapshot_id: String,
    pub ontology_version: String,
    pub keys: Vec<String>,
    /// Passed to every suggestion (`--min-confidence`); `null`: every proposal counts.
    pub min_confidence: Option<f64>,
    /// The retrieval parameters the suggestions ran with (defaults plus `--param`).
    pub params: crate::retrieval::Params,
    pub definitions: BTreeMap<&'static str, &'static str>,
}

/// One held-out column's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnOutcome {
    pub id: String,
    pub description: String,
    /// `proposal.confidence` of the suggestion (the snapshot's own map; empty without one).
    pub confidence: BTreeMap<String, f64>,
    /// What each key's precedent proposal rested on (what confidence is computed from).
    pub evidence: BTreeMap<String, crate::calibration::Evidence>,
    /// Whether the column's table is a calibration table (else held out).
    pub calibration_table: bool,
    /// Keys whose value a same-named column contradicts: not fitted on
    /// ([`crate::tools::calibrate::conflicted`]).
    pub conflicted: Vec<String>,
    /// Key → (real, proposed or `null`).
    pub keys: BTreeMap<String, (String, Option<String>)>,
}

/// How well confidence fitted on the calibration tables holds on the held-out tables, for one
/// key (or every key together).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyCalibration {
    /// Proposals of calibration tables the map was fitted on.
    pub fitted_on: usize,
    /// The held-out proposals' reliability table, ECE and coverage at 0.90/0.95/0.99 precision
    /// (coverage: share of the held-out columns with a present value for the key).
    pub held_out: Reliability,
    /// The same without the proposals whose column a same-named column contradicts (their own
    /// tag is one of two answers the catalog holds): the population the map is fitted on.
    pub held_out_unconflicted: Reliability,
    /// Precision and coverage of the held-out proposals with confidence ≥ 0.9 (what
    /// `min_confidence 0.9` keeps).
    pub at_min_confidence_0_9: Threshold,
    /// The same coverage at precision, thresholding the raw precedent_weight share instead.
    pub precedent_weight_coverage_at_precision: BTreeMap<String, f64>,
    /// What a threshold on the raw precedent_weight keeps on the held-out tables when it is
    /// chosen as confidence is, on the calibration tables: the lowest share at which the
    /// calibration tables' proposals were 0.9 precise (compare with `at_min_confidence_0_9`).
    pub precedent_weight_at_0_9: RawThreshold,
    /// Precision–coverage curves (threshold, coverage, precision), at most
    /// [`CURVE_POINTS`] points each: calibrated confidence and raw precedent_weight.
    pub curve: Vec<(f64, f64, f64)>,
    pub precedent_weight_curve: Vec<(f64, f64, f64)>,
}

/// Precision (`null` when nothing is kept) and coverage at a threshold.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Threshold {
    pub precision: Option<f64>,
    pub coverage: f64,
}

/// A raw precedent_weight threshold chosen on the calibration tables, and what it keeps on the
/// held-out tables.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RawThreshold {
    /// `null` when no threshold reached precision 0.9 on the calibration tables.
    pub threshold: Option<f64>,
    pub precision: Option<f64>,
    pub coverage: f64,
}

/// Points kept of a precision–coverage curve in the report.
pub const CURVE_POINTS: usize = 50;

/// The honest split of `eval tags`: a map fitted on the calibration tables
/// ([`calibration::is_calibration_table`]), measured on the others.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CalibrationReport {
    pub split: &'static str,
    pub map: Map,
    pub keys: BTreeMap<String, KeyCalibration>,
    /// Every key's held-out proposals together.
    pub all_keys: KeyCalibration,
}

/// The result of `govcat eval tags`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagsReport {
    pub keys: BTreeMap<String, KeyReport>,
    pub conflicts: Vec<Conflict>,
    /// Columns with at least one present tag (the held-out set).
    pub columns: usize,
    /// Columns with no present tag, not evaluated.
    pub untagged_columns: usize,
    pub per_column: Vec<ColumnOutcome>,
    /// Confidence fitted on the calibration tables, reported on the held-out tables.
    pub calibration: CalibrationReport,
    /// The map stored in the served snapshot (fitted by `govcat index` on every checked
    /// column); `null` for a snapshot built without calibration.
    pub snapshot_calibration: Option<Map>,
    pub request: TagsRequest,
    pub wall_seconds: f64,
}

/// At most [`CURVE_POINTS`] points of `curve`, evenly spaced, the last always kept.
fn thin(curve: Vec<(f64, f64, f64)>) -> Vec<(f64, f64, f64)> {
    if curve.len() <= CURVE_POINTS {
        return curve
            .into_iter()
            .map(|(t, c, p)| (round4(t), round4(c), round4(p)))
            .collect();
    }
    let step = curve.len() as f64 / CURVE_POINTS as f64;
    let mut out: Vec<(f64, f64, f64)> = (0..CURVE_POINTS)
        .map(|i| curve[((i as f64 + 1.0) * step) as usize - 1])
        .collect();
    if let (Some(last), Some(end)) = (out.last_mut(), curve.last()) {
        *last = *end;
    }
    out.into_iter()
        .map(|(t, c, p)| (round4(t), round4(c), round4(p)))
        .collect()
}

/// One checked proposal of the leave-one-out.
struct Checked {
    calibration_table: bool,
    /// A same-named column holds another value of the key ([`calibrate::conflicted`]).
    conflicted: bool,
    observation: Observation,
}

/// Fits a map on the calibration tables' unconflicted proposals of `checked` (as `govcat
/// index` fits the served one) and measures it on the rest.
fn calibration_report(
    checked: &[Checked],
    keys: &[String],
    held_out_columns: &dyn Fn(&str) -> usize,
) -> CalibrationReport {
    let fit_on: Vec<Observation> = checked
        .iter()
        .filter(|c| c.calibration_table && !c.conflicted)
        .map(|c| c.observation.clone())
        .collect();
    let map = calibration::fit(&fit_on, fit_on.len(), false, BTreeMap::new());
    let measure = |key: Option<&str>| {
        let held_checked: Vec<&Checked> = checked
            .iter()
            .filter(|c| !c.calibration_table && key.is_none_or(|k| c.observation.key == k))
            .collect();
        let held: Vec<&Observation> = held_checked.iter().map(|c| &c.observation).collect();
        let columns = match key {
            Some(k) => held_out_columns(k),
            None => keys.iter().map(|k| held_out_columns(k)).sum(),
        };
        let scored: Vec<(f64, bool)> = held
            .iter()
            .map(|o| (map.confidence(&o.key, &o.evidence), o.correct))
            .collect();
        let unconflicted: Vec<(f64, bool)> = held_checked
            .iter()
            .filter(|c| !c.conflicted)
            .map(|c| {
                let o = &c.observation;
                (map.confidence(&o.key, &o.evidence), o.correct)
            })
            .collect();
        let conflicted_proposals = held.len() - unconflicted.len();
        let raw: Vec<(f64, bool)> = held.iter().map(|o| (o.evidence.share, o.correct)).collect();
        let (precision, coverage) = calibration::at_threshold(&scored, columns, 0.9);
        KeyCalibration {
            fitted_on: fit_on
                .iter()
                .filter(|o| key.is_none_or(|k| o.key == k))
                .count(),
            held_out: calibration::reliability(&scored, columns),
            held_out_unconflicted: calibration::reliability(
                &unconflicted,
                columns.saturating_sub(conflicted_proposals),
            ),
            at_min_confidence_0_9: Threshold {
                precision,
                coverage,
            },
            precedent_weight_coverage_at_precision: calibration::PRECISIONS
                .iter()
                .map(|&p| {
                    (
                        format!("{p:.2}"),
                        calibration::coverage_at(&raw, columns, p),
                    )
                })
                .collect(),
            precedent_weight_at_0_9: {
                let fitted_raw: Vec<(f64, bool)> = fit_on
                    .iter()
                    .filter(|o| key.is_none_or(|k| o.key == k))
                    .map(|o| (o.evidence.share, o.correct))
                    .collect();
                let threshold = calibration::curve(&fitted_raw, fitted_raw.len())
                    .into_iter()
                    .filter(|&(_, _, p)| p >= 0.9)
                    .max_by(|a, b| a.1.total_cmp(&b.1))
                    .map(|(t, _, _)| t);
                let (precision, coverage) =
                    threshold.map_or((None, 0.0), |t| calibration::at_threshold(&raw, columns, t));
                RawThreshold {
                    threshold: threshold.map(round4),
                    precision,
                    coverage,
                }
            },
            curve: thin(calibration::curve(&scored, columns)),
            precedent_weight_curve: thin(calibration::curve(&raw, columns)),
        }
    };
    CalibrationReport {
        split: "fitted on the tables whose sha256(\"domain.table\") starts with an even byte, measured on the others",
        keys: keys.iter().map(|k| (k.clone(), measure(Some(k)))).collect(),
        all_keys: measure(None),
        map,
    }
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        round4(n as f64 / of as f64)
    }
}

/// The words of a column name: `customerBirthDate` → {birth, customer, date}.
fn name_words(doc: &Document) -> BTreeSet<String> {
    identifier_words(doc.column.as_deref().unwrap_or_default())
        .into_iter()
        .collect()
}

/// The most common value of `counts`, ties by value name; `None` when empty.
fn majority(counts: &BTreeMap<&str, usize>) -> Option<String> {
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(v, _)| v.to_string())
}

fn hidden(exclude: Exclude, held: &Document, other: &Document) -> bool {
    match exclude {
        Exclude::Column => other.id == held.id,
        Exclude::Table => other.domain == held.domain && other.table == held.table,
    }
}

/// Runs the leave-one-out evaluation on the context's snapshot.
pub fn run(
    ctx: &Context,
    exclude: Exclude,
    progress: &dyn Progress,
) -> Result<TagsReport, ToolError> {
    run_with(ctx, exclude, None, progress)
}

/// [`run`] with `min_confidence` passed to every suggestion (keys below it count as not
/// answered, as the caller would see them).
pub fn run_with(
    ctx: &Context,
    exclude: Exclude,
    min_confidence: Option<f64>,
    progress: &dyn Progress,
) -> Result<TagsReport, ToolError> {
    let started = std::time::Instant::now();
    let (snapshot, _) = ctx.retrieval_parts()?;
    let keys: Vec<String> = ctx.ontology.keys.iter().map(|k| k.key.0.clone()).collect();
    let columns: Vec<&Document> = snapshot
        .docs
        .iter()
        .filter(|d| d.kind == Kind::Column)
        .collect();
    let held: Vec<&Document> = columns
        .iter()
        .copied()
        .filter(|d| keys.iter().any(|k| value_of(ctx, d, k).is_some()))
        .collect();
    if held.is_empty() {
        return Err(ToolError::new(
            "NothingToEvaluate",
            format!(
                "no column of snapshot {} carries a present tag of ontology {} (keys {}), so no suggestion can be checked; tag some columns, or check --ontology matches the catalog",
                snapshot.manifest.id,
                ctx.ontology.version,
                keys.join(", ")
            ),
        )
        .next(crate::tools::Step::Index {
            why: "to rebuild the snapshot if the catalog changed since it was built".into(),
        }));
    }
    let names: Vec<BTreeSet<String>> = columns.iter().map(|d| name_words(d)).collect();
    #[derive(Default)]
    struct Tally {
        columns: usize,
        correct: usize,
        answered: usize,
        majority: usize,
        overlap: usize,
        majority_answered: usize,
        overlap_answered: usize,
        understated: usize,
        overstated: usize,
        abstained_withheld: usize,
        abstained_no_precedent: usize,
        confusion: BTreeMap<String, BTreeMap<String, usize>>,
    }
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut per_column = Vec::with_capacity(held.len());
    // Per checked proposal: whether its table is a calibration table, whether a same-named
    // column contradicts the column's value of the key (left out of the fit, as `govcat index` does),
    // and the observation.
    let conflicted = calibrate::conflicted(ctx, &held, &held);
    let mut checked: Vec<Checked> = Vec::new();
    calibrate::leave_one_out(
        ctx,
        &held,
        &|doc, other| hidden(exclude, doc, other),
        calibrate::Phrasings::DescriptionOnly,
        min_confidence,
        progress,
        &mut |doc, description, out, evidence| {
            let mine = name_words(doc);
            let mut outcome = BTreeMap::new();
            for key in &keys {
                let Some(real) = value_of(ctx, doc, key) else {
                    continue;
                };
                let proposed = out.proposal.tags.get(key.as_str()).cloned();
                // Both baselines see the same columns the suggestion may see.
                let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
                let mut best = 0usize;
                let mut best_counts: BTreeMap<&str, usize> = BTreeMap::new();
                for (other, other_names) in columns.iter().zip(&names) {
                    if hidden(exclude, doc, other) {
                        continue;
                    }
                    let Some(v) = value_of(ctx, other, key) else {
                        continue;
                    };
                    *counts.entry(v).or_default() += 1;
                    let shared = mine.intersection(other_names).count();
                    if shared > best {
                        best = shared;
                        best_counts.clear();
                    }
                    if shared == best && shared > 0 {
                        *best_counts.entry(v).or_default() += 1;
                    }
                }
                let majority_value = majority(&counts);
                let overlap_value = if best > 0 {
                    majority(&best_counts)
                } else {
                    majority_value.clone()
                };
                let t = tallies.entry(key.as_str()).or_default();
                t.columns += 1;
                t.correct += usize::from(proposed.as_deref() == Some(real));
                t.answered += usize::from(proposed.is_some());
                if proposed.is_none() && !out.proposal.confidence.contains_key(key.as_str()) {
                    // Not below min_confidence (that keeps its confidence): why no proposal.
                    let withheld = out
                        .keys
                        .iter()
                        .find(|k| &k.key == key)
                        .is_some_and(|k| k.excluded_precedents.withheld > 0);
                    if withheld {
                        t.abstained_withheld += 1;
                    } else {
                        t.abstained_no_precedent += 1;
                    }
                }
                t.majority += usize::from(majority_value.as_deref() == Some(real));
                t.overlap += usize::from(overlap_value.as_deref() == Some(real));
                if let Some((p, r)) = proposed.as_deref().and_then(|p| {
                    Some((
                        ctx.ontology.order_of(key, p)?,
                        ctx.ontology.order_of(key, real)?,
                    ))
                }) {
                    t.understated += usize::from(p < r);
                    t.overstated += usize::from(p > r);
                }
                if proposed.is_some() {
                    t.majority_answered += usize::from(majority_value.as_deref() == Some(real));
                    t.overlap_answered += usize::from(overlap_value.as_deref() == Some(real));
                }
                *t.confusion
                    .entry(real.to_string())
                    .or_default()
                    .entry(proposed.clone().unwrap_or_else(|| NO_ANSWER.to_string()))
                    .or_default() += 1;
                outcome.insert(key.clone(), (real.to_string(), proposed));
            }
            let cal = calibration::is_calibration_table(
                doc.domain.as_deref().unwrap_or_default(),
                doc.table.as_deref().unwrap_or_default(),
            );
            checked.extend(
                calibrate::observations(ctx, doc, &out, &evidence)
                    .into_iter()
                    .map(|o| Checked {
                        calibration_table: cal,
                        conflicted: conflicted.contains(&(doc.id.clone(), o.key.clone())),
                        observation: o,
                    }),
            );
            per_column.push(ColumnOutcome {
                id: doc.id.clone(),
                description,
                confidence: out.proposal.confidence.clone(),
                evidence: evidence.clone(),
                calibration_table: cal,
                conflicted: keys
                    .iter()
                    .filter(|k| conflicted.contains(&(doc.id.clone(), (*k).clone())))
                    .cloned()
                    .collect(),
                keys: outcome,
            });
        },
    )?;
    let held_out_columns = |key: &str| {
        held.iter()
            .filter(|d| {
                !calibration::is_calibration_table(
                    d.domain.as_deref().unwrap_or_default(),
                    d.table.as_deref().unwrap_or_default(),
                ) && value_of(ctx, d, key).is_some()
            })
            .count()
    };
    let calibration_report = calibration_report(&checked, &keys, &held_out_columns);
    let report_keys = tallies
        .into_iter()
        .map(|(key, t)| {
            let ordered = ctx.ontology.key(key).is_some_and(|k| k.ordered);
            (
                key.to_string(),
                KeyReport {
                    columns: t.columns,
                    accuracy_at_1: share(t.correct, t.columns),
                    coverage: share(t.answered, t.columns),
                    accuracy_when_answered: (t.answered > 0).then(|| share(t.correct, t.answered)),
                    abstained: t.columns - t.answered,
                    abstained_withheld: t.abstained_withheld,
                    abstained_no_precedent: t.abstained_no_precedent,
                    baseline_when_answered: (t.answered > 0)
                        .then(|| share(t.majority_answered.max(t.overlap_answered), t.answered)),
                    baseline_majority: share(t.majority, t.columns),
                    baseline_name_overlap: share(t.overlap, t.columns),
                    understated: ordered.then_some(t.understated),
                    overstated: ordered.then_some(t.overstated),
                    confusion: t.confusion,
                },
            )
        })
        .collect();
    Ok(TagsReport {
        keys: report_keys,
        conflicts: conflicts(ctx, &columns, &keys),
        columns: held.len(),
        untagged_columns: columns.len() - held.len(),
        per_column,
        calibration: calibration_report,
        snapshot_calibration: snapshot.calibration.clone(),
        request: TagsRequest {
            exclude,
            description_of_a_column: "<column name>: <column description>",
            snapshot_id: snapshot.manifest.id.clone(),
            ontology_version: ctx.ontology.version.clone(),
            keys,
            min_confidence,
            params: ctx.retrieval,
            definitions: BTreeMap::from([
                ("accuracy@1", "held-out columns whose suggest_tags proposal equals the real value / held-out columns with a present value for the key"),
                ("coverage", "held-out columns that got a proposal for the key / held-out columns with a present value"),
                ("accuracy_when_answered", "correct proposals / proposals"),
                ("abstained", "held-out columns with a present value for the key that got no proposal (none, or below min_confidence)"),
                ("abstained_withheld", "of those, the ones whose best precedents' value of the key is withheld from the caller (they outweigh the readable ones)"),
                ("abstained_no_precedent", "of those, the ones no precedent carries a value for (nothing comparable to copy from)"),
                ("baseline_when_answered", "the better of baseline_majority and baseline_name_overlap, on the answered columns only: compare accuracy_when_answered with it"),
                ("baseline_majority", "accuracy of always proposing the key's most common value among the columns the suggestion may see"),
                ("baseline_name_overlap", "accuracy of proposing the value of the visible column whose name shares the most words (majority among ties; the most common value when none shares a word)"),
                ("confidence", "proposal.confidence: the share of proposals with the same evidence that were right, from a monotone logistic map per key (calibration.map) fitted on the calibration tables' leave-one-out and measured on the held-out tables"),
                ("ece", "expected calibration error over 10 equal-width confidence bins: sum of n_bin/n x |accuracy_bin - mean confidence_bin|"),
                ("coverage_at_precision", "the largest share of held-out columns (with a present value for the key) a confidence threshold keeps while the kept proposals are at least that precise"),
                ("held_out_unconflicted", "the held-out proposals without those whose column a same-named column contradicts (per_column[].conflicted): the population the map is fitted on, as govcat index fits the served map"),
                ("conflicts", "columns with the same name words whose descriptions share at least half their words (Jaccard >= 0.5), tagged with different values of a key"),
            ]),
        },
        wall_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        1.0
    } else {
        a.intersection(b).count() as f64 / union as f64
    }
}

/// Groups of near-identical columns (equal name words, descriptions with Jaccard ≥
/// [`CONFLICT_MIN_JACCARD`], linked transitively) whose present values of a key differ.
/// Ordered by group size desc, then key, then name.
fn conflicts(ctx: &Context, columns: &[&Document], keys: &[String]) -> Vec<Conflict> {
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, d) in columns.iter().enumerate() {
        by_name.entry(calibrate::name_words(d)).or_default().push(i);
    }
    let described: Vec<BTreeSet<String>> = columns
        .iter()
        .map(|d| {
            words(d.description.as_deref().unwrap_or_default())
                .into_iter()
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    for (name, members) in by_name {
        if members.len() < 2 {
            continue;
        }
        // Union-find over the members linked by similar descriptions.
        let mut parent: Vec<usize> = (0..members.len()).collect();
        fn root(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        for a in 0..members.len() {
            for b in a + 1..members.len() {
                if jaccard(&described[members[a]], &described[members[b]]) >= CONFLICT_MIN_JACCARD {
                    let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                    parent[ra] = rb;
                }
            }
        }
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (a, &member) in members.iter().enumerate() {
            let r = root(&mut parent, a);
            groups.entry(r).or_default().push(member);
        }
        for group in groups.values().filter(|g| g.len() > 1) {
            for key in keys {
                let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for &i in group {
                    if let Some(v) = value_of(ctx, columns[i], key) {
                        values
                            .entry(v.to_string())
                            .or_default()
                            .push(columns[i].id.clone());
                    }
                }
                if values.len() > 1 {
                    for ids in values.values_mut() {
                        ids.sort();
                    }
                    out.push(Conflict {
                        key: key.clone(),
                        name: name.clone(),
                        values,
                    });
                }
            }
        }
    }
    let size = |c: &Conflict| c.values.values().map(Vec::len).sum::<usize>();
    out.sort_by(|a, b| {
        size(b)
            .cmp(&size(a))
            .then_with(|| a.key.cmp(&b.key))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.values.cmp(&b.values))
    });
    out
}
