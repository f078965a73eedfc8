//! `suggest_tags`: how are comparable columns tagged, per ontology key, with evidence? From
//! the precedents (snapshot) and, when a target dataset is named, its sibling columns read
//! live. Every value shown is an ontology value; the proposal runs through `resolve()`; the
//! decision stays with the caller.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::find_precedents::{self, RequestEcho};
use super::{CacheScope, Caller, Context, ToolError};
use crate::calibration::Evidence;
use crate::catalog::{Domain, FieldState, TableName, TagLevel, Tags};
use crate::index::documents::Kind;
use crate::ontology::Resolution;

pub const DESCRIPTION: &str = "Suggest LF-tags for a new column from precedent: runs \
find_precedents over columns for your description (and your alternatives, each searched as \
given, as find_precedents does) and counts, per ontology key, how the matched \
columns are tagged (values with the column ids that carry them and their share). With domain and \
table, also reads that dataset live and counts its sibling columns' tags, and names the value a \
new column there would inherit (table or database tag). Only ontology values appear. Shares \
exclude withheld, not-collected and untagged columns and say how many were excluded. The proposal \
(inherited value, else the value with the largest precedent_weight: each precedent weighs its \
find_precedents score squared, so the best matches decide) is checked with resolve_lf_tag; a key without a \
proposal says why in proposal.abstained. proposal.confidence gives, per proposed key, how often \
proposals with this evidence were right on this catalog (measured when the snapshot was built, \
by hiding each tagged column and suggesting its tags): state it to the user, and ask them about \
every key below 0.9 instead of tagging it yourself. Pass min_confidence (e.g. 0.9) to move keys \
below it to proposal.abstained. You decide — validate with get_dataset before tagging.";

/// What the schema says of `min_confidence`.
pub const MIN_CONFIDENCE_DESCRIPTION: &str = "Optional, 0 to 1: a key whose confidence (the \
measured share of right proposals with the same evidence on this catalog) is below this is not \
proposed; it moves to proposal.abstained with both numbers. 0.9 keeps proposals that were right \
about 9 times in 10. Omit to see every proposal with its confidence.";

/// Precedent columns taken into account.
pub const PRECEDENTS: usize = 10;
/// A precedent's vote weighs its find_precedents score to this power: the best-matching
/// precedents decide, and a tail of weak matches cannot outvote them. Leave-one-out with
/// `govcat eval tags` (2026-12-01), accuracy@1 with exponent 0 (a flat count, as before) / 1 / 2:
/// demo sensitivity 0.728 / 0.748 / 0.767, retention 0.673 / 0.686 / 0.691; fides-saas
/// data_category 0.867 / 0.871 / 0.873, sensitivity 0.871 / 0.874 / 0.875 (1/rank weights and
/// the top match alone were worse on both), with the fusion of that day (rrf_k 5, dense weight
/// 2.0). Chosen on those full sets: there is no held-out part.
pub const PRECEDENT_WEIGHT_EXPONENT: i32 = 2;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// What the new column holds (1-1000 characters).
    #[schemars(length(max = crate::limits::MAX_DESCRIPTION_CHARS))]
    pub description: String,
    /// Other phrasings of what the new column holds, passed to the precedent search (see
    /// [`find_precedents::ALTERNATIVES_DESCRIPTION`], what the schema says).
    #[serde(default)]
    #[schemars(description = find_precedents::ALTERNATIVES_DESCRIPTION, length(max = crate::limits::MAX_ALTERNATIVES), inner(length(max = crate::limits::MAX_ALTERNATIVE_CHARS)))]
    pub alternatives: Option<Vec<String>>,
    /// Keys whose confidence is below this are not proposed (see
    /// [`MIN_CONFIDENCE_DESCRIPTION`], what the schema says).
    #[serde(default)]
    #[schemars(description = MIN_CONFIDENCE_DESCRIPTION, range(min = 0.0, max = 1.0))]
    pub min_confidence: Option<f64>,
    /// Target dataset's domain (with table).
    #[serde(default)]
    pub domain: Option<Domain>,
    /// Target dataset's table (with domain).
    #[serde(default)]
    pub table: Option<TableName>,
}

/// Columns supporting one value, and their share among the columns counted for the key.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Support {
    pub columns: Vec<String>,
    pub share: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Candidate {
    pub value: String,
    pub precedents: Support,
    /// The value's share of the precedents' match weight (each precedent weighs its
    /// find_precedents score squared, so the best matches decide); what the proposal follows.
    pub precedent_weight: f64,
    pub siblings: Option<Support>,
}

/// Columns left out of the shares of one key, by reason (rule 14).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Excluded {
    pub withheld: usize,
    pub not_collected: usize,
    pub empty_in_source: usize,
    /// Values outside the ontology found in the source (drift), never suggested.
    pub outside_ontology: usize,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Inherited {
    pub value: String,
    pub assigned_at: TagLevel,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeySuggestion {
    pub key: String,
    /// Ordered by precedent weight desc, then precedent share desc, then sibling share desc,
    /// then value.
    pub candidates: Vec<Candidate>,
    pub excluded_precedents: Excluded,
    pub excluded_siblings: Option<Excluded>,
    /// The value a new column in the target dataset inherits for this key, if any.
    pub inherited_in_target: Option<Inherited>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Proposal {
    pub tags: BTreeMap<String, String>,
    /// Per key: `inherited` (target table/database tag) or `precedent_majority` (the value
    /// with the largest precedent weight).
    pub basis: BTreeMap<String, String>,
    /// `complete`, or `incomplete` with the keys still to decide.
    pub resolution: String,
    pub missing_keys: Vec<String>,
    /// Per key without a proposal: why it abstains (no precedent matched the description,
    /// none of the matched precedents carries an ontology value for that key, or its
    /// confidence is below `min_confidence`) and what to do.
    pub abstained: BTreeMap<String, String>,
    /// Per key that had a proposal before any `min_confidence` (so also keys it moved to
    /// `abstained`): the share of proposals with the same evidence that were right on this
    /// catalog, 0–1. Empty when the snapshot carries no calibration (see `calibration`).
    pub confidence: BTreeMap<String, f64>,
    /// What the confidences were measured on; `null` for a snapshot built without
    /// calibration (rebuild it with `govcat index`).
    pub calibration: Option<CalibrationInfo>,
}

/// What `proposal.confidence` was measured on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CalibrationInfo {
    /// Tagged columns of the snapshot whose tags were suggested with the column hidden.
    pub columns: usize,
    /// Whether only part of the tagged columns was checked (above 5,000: the same share of
    /// each domain).
    pub sampled: bool,
    pub method: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub keys: Vec<KeySuggestion>,
    pub proposal: Proposal,
    /// The precedent column ids considered, best first.
    pub precedents: Vec<String>,
    /// Only when no precedent matched: find_precedents' suggestions (derived from your words,
    /// not searched) and hint (what was searched, what to try next).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub target: Option<String>,
    pub decision: String,
    pub request: RequestEcho,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

#[derive(Default)]
struct Tally {
    values: BTreeMap<String, Vec<String>>,
    /// Match weight per value (see [`PRECEDENT_WEIGHT_EXPONENT`]).
    weights: BTreeMap<String, f64>,
    /// Per value, the best similarity and the best score among the columns carrying it.
    best: BTreeMap<String, (f64, f64)>,
    excluded: Excluded,
}

/// One column's part in a tally: its id, tags, vote weight and how well it matched.
struct Vote<'a> {
    column: &'a str,
    tags: &'a Tags,
    weight: f64,
    similarity: f64,
    score: f64,
}

impl Tally {
    fn add(&mut self, ctx: &Context, key: &str, vote: Vote) {
        match vote.tags.get(key) {
            Some(t) if t.state == FieldState::Present => match t.value() {
                Some(v) if ctx.ontology.contains(key, v) => {
                    self.values
                        .entry(v.to_string())
                        .or_default()
                        .push(vote.column.to_string());
                    *self.weights.entry(v.to_string()).or_default() += vote.weight;
                    let best = self.best.entry(v.to_string()).or_insert((0.0, 0.0));
                    best.0 = best.0.max(vote.similarity);
                    best.1 = best.1.max(vote.score);
                }
                _ => self.excluded.outside_ontology += 1,
            },
            Some(t) if t.state == FieldState::Withheld => self.excluded.withheld += 1,
            Some(t) if t.state == FieldState::NotCollected => self.excluded.not_collected += 1,
            _ => self.excluded.empty_in_source += 1,
        }
    }

    /// `value`'s share of the match weight.
    fn raw_share(&self, value: &str) -> f64 {
        let total: f64 = self.weights.values().sum();
        if total <= 0.0 {
            return 0.0;
        }
        self.weights.get(value).copied().unwrap_or(0.0) / total
    }

    /// `value`'s share of the match weight, rounded to 3 places.
    fn weight_share(&self, value: &str) -> f64 {
        (self.raw_share(value) * 1000.0).round() / 1000.0
    }

    fn counted(&self) -> usize {
        self.values.values().map(Vec::len).sum()
    }

    fn support(&self, value: &str) -> Support {
        let columns = self.values.get(value).cloned().unwrap_or_default();
        let counted = self.counted();
        let share = if counted == 0 {
            0.0
        } else {
            ((columns.len() as f64 / counted as f64) * 1000.0).round() / 1000.0
        };
        Support { columns, share }
    }

    /// The evidence of proposing `winner` over `runner_up` from these precedents.
    fn evidence(&self, winner: &str, runner_up: Option<&str>) -> Evidence {
        let (similarity, score) = self.best.get(winner).copied().unwrap_or((0.0, 0.0));
        Evidence {
            share: self.raw_share(winner),
            runner_up: runner_up.map_or(0.0, |r| self.raw_share(r)),
            similarity,
            score,
            counted: self.counted(),
        }
    }
}

pub fn run(ctx: &Context, caller: &Caller, input: Input) -> Result<Output, ToolError> {
    run_excluding(ctx, caller, input, &|_| false)
}

/// [`run`] with the precedents `exclude` names left out (see
/// [`find_precedents::run_excluding`]): `govcat eval tags` hides the column under test.
pub fn run_excluding(
    ctx: &Context,
    caller: &Caller,
    input: Input,
    exclude: &dyn Fn(&crate::index::documents::Document) -> bool,
) -> Result<Output, ToolError> {
    run_with_evidence(ctx, caller, input, exclude).map(|(out, _)| out)
}

/// `min_confidence` checked: a number from 0 to 1.
fn check_min_confidence(min: Option<f64>) -> Result<(), ToolError> {
    match min {
        Some(m) if !(0.0..=1.0).contains(&m) => Err(ToolError::new(
            "InvalidArguments",
            format!(
                "min_confidence is {m}, outside 0 to 1: give a share such as 0.9 (keeps \
                 proposals that were right about 9 times in 10 on this catalog), or omit it"
            ),
        )
        .with("field", "min_confidence")),
        _ => Ok(()),
    }
}

/// [`run_excluding`], also returning the evidence of every key's precedent proposal (before
/// any `min_confidence`): what `tools::calibrate` fits the confidence map on.
pub fn run_with_evidence(
    ctx: &Context,
    caller: &Caller,
    input: Input,
    exclude: &dyn Fn(&crate::index::documents::Document) -> bool,
) -> Result<(Output, BTreeMap<String, Evidence>), ToolError> {
    check_min_confidence(input.min_confidence)?;
    let calibration = ctx.retrieval_parts()?.0.calibration.clone();
    if input.min_confidence.is_some() && calibration.is_none() {
        return Err(ToolError::new(
            "NotCalibrated",
            "min_confidence needs the confidence measured when the snapshot is built, and the \
             served snapshot was built without it; omit min_confidence, or rebuild the snapshot",
        )
        .next(super::Step::Index {
            why: "to measure each key's confidence on this catalog".into(),
        }));
    }
    let target = match (&input.domain, &input.table) {
        (Some(d), Some(t)) => Some((d.clone(), t.clone())),
        (None, None) => None,
        _ => {
            return Err(ToolError::new(
                "InvalidArguments",
                "domain and table go together: name both to include the target dataset's siblings, or neither",
            ))
        }
    };
    let found = find_precedents::run_excluding(
        ctx,
        caller,
        find_precedents::Input {
            description: input.description.clone(),
            alternatives: input.alternatives.clone(),
            domains: None,
            kinds: Some(vec![Kind::Column]),
            limit: Some(PRECEDENTS),
            cursor: None,
            mode: None,
        },
        exclude,
    )?;
    let dataset = match &target {
        Some((d, t)) => {
            ctx.require_domain(caller, d)?;
            Some(ctx.source.get_dataset(caller, d, t)?)
        }
        None => None,
    };
    let mut keys = Vec::new();
    let mut proposal = BTreeMap::new();
    let mut basis = BTreeMap::new();
    let mut abstained = BTreeMap::new();
    let mut confidence = BTreeMap::new();
    let mut evidence = BTreeMap::new();
    for spec in &ctx.ontology.keys {
        let key = spec.key.0.as_str();
        let mut precedents = Tally::default();
        for e in &found.entries {
            if let Some(tags) = &e.lf_tags {
                let vote = Vote {
                    column: &e.id,
                    tags,
                    weight: e.score.max(0.0).powi(PRECEDENT_WEIGHT_EXPONENT),
                    similarity: e.similarity.map_or(0.0, f64::from),
                    score: e.score,
                };
                precedents.add(ctx, key, vote);
            }
        }
        let siblings = dataset.as_ref().map(|ds| {
            let mut t = Tally::default();
            for c in &ds.columns {
                let id = format!(
                    "column:{}.{}.{}",
                    ds.metadata.domain, ds.metadata.name, c.name
                );
                let vote = Vote {
                    column: &id,
                    tags: &c.lf_tags,
                    weight: 1.0,
                    similarity: 0.0,
                    score: 0.0,
                };
                t.add(ctx, key, vote);
            }
            t
        });
        let inherited = dataset.as_ref().and_then(|ds| {
            ds.contract
                .table_tags
                .get(key)
                .and_then(|t| match (t.value(), t.assigned_at) {
                    (Some(v), Some(level)) if ctx.ontology.contains(key, v) => Some(Inherited {
                        value: v.to_string(),
                        assigned_at: level,
                    }),
                    _ => None,
                })
        });
        let mut values: Vec<String> = precedents.values.keys().cloned().collect();
        if let Some(s) = &siblings {
            values.extend(s.values.keys().cloned());
        }
        if let Some(i) = &inherited {
            values.push(i.value.clone());
        }
        values.sort();
        values.dedup();
        let mut candidates: Vec<Candidate> = values
            .iter()
            .map(|v| Candidate {
                value: v.clone(),
                precedents: precedents.support(v),
                precedent_weight: precedents.weight_share(v),
                siblings: siblings.as_ref().map(|s| s.support(v)),
            })
            .collect();
        candidates.sort_by(|a, b| {
            b.precedent_weight
                .total_cmp(&a.precedent_weight)
                .then_with(|| b.precedents.share.total_cmp(&a.precedents.share))
                .then_with(|| {
                    let sa = a.siblings.as_ref().map_or(0.0, |s| s.share);
                    let sb = b.siblings.as_ref().map_or(0.0, |s| s.share);
                    sb.total_cmp(&sa)
                })
                .then_with(|| a.value.cmp(&b.value))
        });
        let mut voted = candidates
            .iter()
            .filter(|c| !c.precedents.columns.is_empty());
        let (top, second) = (voted.next(), voted.next());
        if let Some(top) = top {
            let e = precedents.evidence(&top.value, second.map(|c| c.value.as_str()));
            evidence.insert(key.to_string(), e);
        }
        if let Some(i) = &inherited {
            proposal.insert(key.to_string(), i.value.clone());
            basis.insert(key.to_string(), "inherited".to_string());
            if let Some(map) = &calibration {
                // Not measured on this catalog (no inherited value anywhere): no confidence.
                confidence.insert(key.to_string(), round3(map.inherited(key).unwrap_or(0.0)));
            }
        } else if let Some(top) = top {
            proposal.insert(key.to_string(), top.value.clone());
            basis.insert(key.to_string(), "precedent_majority".to_string());
            if let Some(map) = &calibration {
                confidence.insert(key.to_string(), round3(map.confidence(key, &evidence[key])));
            }
        } else {
            abstained.insert(
                key.to_string(),
                abstention(key, found.entries.len(), &precedents.excluded),
            );
        }
        keys.push(KeySuggestion {
            key: key.to_string(),
            candidates,
            excluded_precedents: precedents.excluded,
            excluded_siblings: siblings.map(|s| s.excluded),
            inherited_in_target: inherited,
        });
    }
    if let Some(min) = input.min_confidence {
        for (key, c) in &confidence {
            if *c < min {
                let value = proposal.remove(key).unwrap_or_default();
                let how = basis.remove(key).unwrap_or_default();
                let suggestion = keys.iter().find(|k| &k.key == key);
                abstained.insert(
                    key.clone(),
                    below_threshold(key, *c, min, &value, &how, suggestion),
                );
            }
        }
    }
    let pairs: Vec<(String, String)> = proposal
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let (resolution, missing_keys) = match ctx.ontology.resolve(&pairs)? {
        Resolution::Complete(_) => ("complete".to_string(), Vec::new()),
        Resolution::Incomplete { missing, .. } => (
            "incomplete".to_string(),
            missing.into_iter().map(|m| m.key.0).collect(),
        ),
    };
    let calibration = calibration.map(|m| CalibrationInfo {
        columns: m.columns,
        sampled: m.sampled,
        method: m.method,
    });
    let out = Output {
        keys,
        proposal: Proposal {
            tags: proposal,
            basis,
            resolution,
            missing_keys,
            abstained,
            confidence,
            calibration,
        },
        precedents: found.entries.iter().map(|e| e.id.clone()).collect(),
        suggestions: found.suggestions,
        hint: found.hint,
        target: target.map(|(d, t)| format!("{d}.{t}")),
        decision: "yours: these are counts of existing tags, not a classification; read the target live with get_dataset and validate your choice with resolve_lf_tag".into(),
        request: found.request,
        ttl_ms: found.ttl_ms.min(ctx.source_ttl_ms()),
        cache_scope: CacheScope::Private,
    };
    Ok((out, evidence))
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Why a key whose confidence `c` is below `min` is not proposed, with what it would have been.
fn below_threshold(
    key: &str,
    c: f64,
    min: f64,
    value: &str,
    basis: &str,
    suggestion: Option<&KeySuggestion>,
) -> String {
    let evidence = if basis == "inherited" {
        format!("the target dataset would give it {value} (inherited)")
    } else {
        let precedents: Vec<String> = suggestion
            .map(|s| {
                s.candidates
                    .iter()
                    .filter(|c| !c.precedents.columns.is_empty())
                    .map(|c| {
                        format!(
                            "{} {:.2} ({} columns)",
                            c.value,
                            c.precedent_weight,
                            c.precedents.columns.len()
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        format!("precedents: {}", precedents.join(", "))
    };
    format!(
        "confidence {c:.2} is below min_confidence {min:.2}: decide {key} yourself (ask the \
         user) and check it with resolve_lf_tag; {evidence}"
    )
}

/// Why `key` gets no proposal from `matched` precedents (with the exclusions counted for it),
/// and what to do next.
fn abstention(key: &str, matched: usize, excluded: &Excluded) -> String {
    if matched == 0 {
        return "no catalog column matches this description, so there is no precedent (see hint)"
            .to_string();
    }
    format!(
        "none of the {matched} matched precedents carries a {key} value of the ontology \
         ({} withheld, {} not collected, {} untagged, {} outside the ontology); choose {key} \
         yourself and check it with resolve_lf_tag",
        excluded.withheld,
        excluded.not_collected,
        excluded.empty_in_source,
        excluded.outside_ontology
    )
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::catalog::dir::DirSource;
    use crate::catalog::TagState;
    use crate::ontology::Ontology;

    fn demo_context() -> Context {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let ontology = Ontology::load(&root.join("ontology/lf-tags.json")).expect("ontology");
        let source =
            DirSource::open(&root.join("fixtures/catalog"), ontology.clone()).expect("catalog");
        Context::new(ontology, Box::new(source))
    }

    #[test]
    fn two_close_matches_outweigh_a_tail_of_weak_ones_that_outnumbers_them() {
        let ctx = demo_context();
        let mut tally = Tally::default();
        // (column, sensitivity, find_precedents score): two good matches, three weak ones.
        for (id, value, score) in [
            ("column:a.t.iban", "high", 0.6),
            ("column:b.t.iban", "high", 0.5),
            ("column:c.t.note", "internal", 0.2),
            ("column:d.t.note", "internal", 0.2),
            ("column:e.t.note", "internal", 0.2),
        ] {
            let tags = Tags::from([(
                "sensitivity".to_string(),
                TagState::present(value, TagLevel::Column),
            )]);
            let vote = Vote {
                column: id,
                tags: &tags,
                weight: f64::powi(score, PRECEDENT_WEIGHT_EXPONENT),
                similarity: score,
                score,
            };
            tally.add(&ctx, "sensitivity", vote);
        }
        // A flat count would follow the tail; the match weight follows the close matches.
        assert_eq!(tally.support("internal").share, 0.6);
        assert_eq!(tally.support("high").share, 0.4);
        assert_eq!(tally.weight_share("high"), 0.836);
        assert_eq!(tally.weight_share("internal"), 0.164);
        // The evidence of proposing high over internal: its unrounded share and its best match.
        let e = tally.evidence("high", Some("internal"));
        assert_eq!((e.similarity, e.score, e.counted), (0.6, 0.6, 5));
        assert!((e.share - 0.61 / 0.73).abs() < 1e-12);
        assert!((e.runner_up - 0.12 / 0.73).abs() < 1e-12);
    }

    #[test]
    fn an_abstention_counts_what_the_matched_precedents_lacked() {
        let excluded = Excluded {
            withheld: 2,
            not_collected: 1,
            empty_in_source: 4,
            outside_ontology: 0,
        };
        assert_eq!(
            abstention("sensitivity", 7, &excluded),
            "none of the 7 matched precedents carries a sensitivity value of the ontology (2 \
             withheld, 1 not collected, 4 untagged, 0 outside the ontology); choose sensitivity \
             yourself and check it with resolve_lf_tag"
        );
    }
}
