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
use crate::catalog::{CatalogError, Dataset, Domain, FieldState, TableName, TagLevel, Tags};
use crate::index::documents::Kind;
use crate::ontology::Resolution;

pub const DESCRIPTION: &str = "Proposes a tag value per key for one column from how \
comparable columns (precedents) are tagged. Call it when someone adds a column or asks \
which tags one should get; one call per column. Pass the description, alternatives and \
identifier you pass to find_precedents (it runs that search, kinds [column]; send both at \
once) and, if known, domain and table of the table the column goes into. \
precedent_entries shows its 10 precedents; each votes with its score squared. Returns per key candidates and proposal: tags, basis, confidence per key (share right \
on this catalog), conflicts (precedents of an ordered key disagree: the stricter \
value unless clearly outweighed), unmeasured (confidence 0: unknown) and abstained (reason, next \
step). Next: show the user each value with its confidence and precedents; the user decides every \
key below 0.9 and every conflict; check the set with resolve_lf_tag; read the target with \
get_dataset before tagging.";

/// What the schema says of `min_confidence`.
pub const MIN_CONFIDENCE_DESCRIPTION: &str = "0-1: a key whose confidence is below it moves to \
proposal.abstained (0.9 keeps proposals right about 9 in 10). Omit to see every proposal.";

/// Below this best `precedent_confidence` among the precedents, none of them is the same kind
/// of data (the threshold find_precedents' description gives hosts): a precedent proposal's
/// confidence is then 0 and `proposal.unmeasured` says why. Measured 2026-12-02: without it,
/// 4 of the 30 bundled negatives got a key at confidence >= 0.5 (Oechsle degrees of grape must:
/// lawful_basis 0.96 from `claims.claim.closed_date`, precedent_confidence 0.32).
pub const NO_PRECEDENT_BELOW: f64 = 0.5;

/// Precedent columns taken into account.
pub const PRECEDENTS: usize = 10;

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(extend("dependentRequired" = {"table": ["domain"]}))]
pub struct Input {
    /// What the new column holds (see [`QUERY_DESCRIPTION`], what the schema says).
    #[schemars(description = QUERY_DESCRIPTION, length(min = 1, max = crate::limits::MAX_DESCRIPTION_CHARS))]
    pub description: String,
    /// Other phrasings of what the new column holds, passed to the precedent search (see
    /// [`find_precedents::ALTERNATIVES_DESCRIPTION`], what the schema says).
    #[serde(default)]
    #[schemars(description = find_precedents::ALTERNATIVES_DESCRIPTION, length(max = crate::limits::MAX_ALTERNATIVES), inner(length(min = 1, max = crate::limits::MAX_ALTERNATIVE_CHARS)), extend("uniqueItems" = true))]
    pub alternatives: Option<Vec<String>>,
    /// Keys whose confidence is below this are not proposed (see
    /// [`MIN_CONFIDENCE_DESCRIPTION`], what the schema says).
    #[serde(default)]
    #[schemars(description = MIN_CONFIDENCE_DESCRIPTION, range(min = 0.0, max = 1.0))]
    pub min_confidence: Option<f64>,
    /// The domain the new column goes into (see [`DOMAIN_DESCRIPTION`]).
    #[serde(default)]
    #[schemars(description = DOMAIN_DESCRIPTION)]
    pub domain: Option<Domain>,
    /// The table the new column goes into (see [`TABLE_DESCRIPTION`]).
    #[serde(default)]
    #[schemars(description = TABLE_DESCRIPTION)]
    pub table: Option<TableName>,
    /// Passed to the precedent search (see [`find_precedents::IDENTIFIER_DESCRIPTION`]).
    #[serde(default)]
    #[schemars(description = "As find_precedents' identifier.")]
    pub identifier: Option<bool>,
}

/// What the schema says of `description`.
pub const QUERY_DESCRIPTION: &str =
    "What the column holds (1-1000 characters), as passed to find_precedents.";
/// What the schema says of `domain`. A plain string in MCP (the routing header needs one), so
/// it says how to leave it out.
pub const DOMAIN_DESCRIPTION: &str = "Domain of the table the column goes into (list_domains \
names them). Alone: a new, unnamed table of the domain, its database's tags inherited. Omit \
domain and table to use precedents only (no siblings, nothing inherited).";
/// What the schema says of `table`.
pub const TABLE_DESCRIPTION: &str = "Table the column goes into; needs domain. An existing \
table adds its columns' tags (siblings) and its inherited tags; a name the domain lacks is a \
new table (target_exists false; did_you_mean lists close names).";

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
#[schemars(description = "Columns left out of the shares of one key, by reason.")]
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
    /// Per key whose confidence is 0 because nothing this far from its precedents was checked
    /// on this catalog (its best precedent is less similar than the calibration's support
    /// floor): 0 there means "not measured", not "measured as a miss". Decide such a key with the
    /// user.
    pub unmeasured: BTreeMap<String, String>,
    /// Per ordered key (`ordered: true`, e.g. sensitivity) whose voting precedents carry more
    /// than one value: each value with its precedents and weight, and why the proposed one was
    /// chosen. The stricter value is proposed unless the less strict one clearly outweighs it.
    pub conflicts: BTreeMap<String, Conflict>,
    /// What the confidences were measured on; `null` for a snapshot built without
    /// calibration (rebuild it with `govcat index`).
    #[schemars(
        description = "What the confidences were measured on; null when the served \
snapshot was built without calibration (the operator's rebuild of the snapshot adds it)."
    )]
    pub calibration: Option<CalibrationInfo>,
}

/// Precedents of one ordered key that disagree, and how the proposal was chosen.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Conflict {
    /// Every value the voting precedents carry, strictest first.
    pub values: Vec<ConflictValue>,
    pub proposed: String,
    /// Why `proposed`, in words.
    pub reason: String,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ConflictValue {
    pub value: String,
    pub precedents: Vec<String>,
    /// The value's share of the voting precedents' weight.
    pub weight: f64,
}

/// One precedent of the search the vote used (find_precedents' column entries for the same
/// description and alternatives, in its order).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PrecedentEntry {
    pub id: String,
    /// 1-based, in find_precedents' order.
    pub rank: usize,
    pub precedent_confidence: f64,
    pub matched_by: Vec<find_precedents::MatchedBy>,
    /// Whether it voted (every precedent does, unless a vote gate leaves out those below it).
    pub vote: bool,
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
    /// The same precedents with the evidence the vote used: rank, precedent_confidence,
    /// matched_by, and whether each voted.
    pub precedent_entries: Vec<PrecedentEntry>,
    /// Only when no precedent matched: find_precedents' suggestions (derived from your words,
    /// not searched) and hint (what was searched, what to try next).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<String>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// `domain.table` (or `domain` alone for an unnamed new table) of the target; `null` without.
    pub target: Option<String>,
    /// `true`: the target table exists (its siblings were read live); `false`: it is not in the
    /// catalog and was treated as a new table of its domain (no siblings; the database's tags
    /// inherited); `null` without a target.
    pub target_exists: Option<bool>,
    /// In words, how the target was treated (new table, "did you mean …?"); `null` without a
    /// target or for an existing table.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_note: Option<String>,
    /// Existing tables of the domain whose name is close to a target table the catalog lacks.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub did_you_mean: Option<Vec<String>>,
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
    /// Vote weight per value (see [`crate::retrieval::Vote`]).
    weights: BTreeMap<String, f64>,
    /// Per value, the best similarity and the best score among the columns carrying it.
    best: BTreeMap<String, (f64, f64)>,
    excluded: Excluded,
    /// The precedents whose value of the key is withheld from the caller, with their weight.
    withheld: Vec<(String, f64)>,
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
            Some(t) if t.state == FieldState::Withheld => {
                self.excluded.withheld += 1;
                self.withheld.push((vote.column.to_string(), vote.weight));
            }
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

    /// Whether the precedents withheld from the caller weigh at least as much as `value`'s:
    /// had they carried another value, it would have won. Withheld evidence is not absent
    /// evidence (FIDELITY rule 12): the key then abstains rather than rest on the leftovers.
    fn outweighed_by_withheld(&self, value: &str) -> bool {
        let hidden: f64 = self.withheld.iter().map(|(_, w)| w).sum();
        hidden > 0.0 && hidden >= self.weights.get(value).copied().unwrap_or(0.0)
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
        // `argument` names the offending argument in every error; `field` is kept as an alias
        // for readers of the first version of this error.
        .with("argument", "min_confidence")
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
    let target = resolve_target(ctx, caller, input.domain.as_ref(), input.table.as_ref())?;
    let (found, found_evidence) = find_precedents::run_with_evidence(
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
            identifier: input.identifier,
        },
        exclude,
    )?;
    let dataset = match &target {
        Target::Existing(ds) => Some(ds),
        _ => None,
    };
    let mut keys = Vec::new();
    let mut proposal = BTreeMap::new();
    let mut basis = BTreeMap::new();
    let mut abstained = BTreeMap::new();
    let mut confidence = BTreeMap::new();
    let mut evidence = BTreeMap::new();
    let mut unmeasured = BTreeMap::new();
    let best_precedent = found
        .entries
        .iter()
        .map(|e| e.precedent_confidence)
        .fold(0.0, f64::max);
    let rule = ctx.retrieval.vote;
    let weights = vote_weights(&found.entries, &rule);
    let mut conflicts = BTreeMap::new();
    for spec in &ctx.ontology.keys {
        let key = spec.key.0.as_str();
        let mut precedents = Tally::default();
        for ((e, found_by), weight) in found.entries.iter().zip(&found_evidence).zip(&weights) {
            if let (Some(tags), Some(weight)) = (&e.lf_tags, weight) {
                // The description's own similarity, not the best of any phrasing: an
                // alternative that matches an unrelated column's name word must not lift
                // the evidence (the support floor holds with alternatives).
                let vote = Vote {
                    column: &e.id,
                    tags,
                    weight: *weight,
                    similarity: found_by.description_similarity.max(0.0),
                    score: e.score,
                };
                precedents.add(ctx, key, vote);
            }
        }
        let siblings = dataset.map(|ds| {
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
        let target_tags = match &target {
            Target::Existing(ds) => Some(&ds.contract.table_tags),
            Target::New { inherited, .. } => Some(inherited),
            Target::None => None,
        };
        let inherited = target_tags.and_then(|tags| {
            tags.get(key)
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
        let voted: Vec<&Candidate> = candidates
            .iter()
            .filter(|c| !c.precedents.columns.is_empty())
            .collect();
        let leaned = spec
            .ordered
            .then(|| {
                lean_strict(spec, &voted, rule.strict_ratio, &|c: &Candidate| {
                    c.precedents.columns.iter().any(|id| {
                        found
                            .entries
                            .iter()
                            .any(|e| &e.id == id && e.precedent_confidence >= rule.strict_gate)
                    })
                })
            })
            .flatten();
        if let Some(conflict) = spec
            .ordered
            .then(|| conflict_of(spec, &voted, leaned, rule.strict_ratio))
            .flatten()
        {
            conflicts.insert(key.to_string(), conflict);
        }
        // The proposed value first, then the one it is measured against.
        let (top, second) = match leaned {
            Some(strict) => (Some(voted[strict]), voted.first().copied()),
            None => (voted.first().copied(), voted.get(1).copied()),
        };
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
        } else if let Some(top) = top.filter(|t| precedents.outweighed_by_withheld(&t.value)) {
            abstained.insert(
                key.to_string(),
                withheld_abstention(key, &top.value, &precedents.withheld),
            );
        } else if let Some(top) = top {
            proposal.insert(key.to_string(), top.value.clone());
            let how = if leaned.is_some() {
                "precedent_stricter"
            } else {
                "precedent_majority"
            };
            basis.insert(key.to_string(), how.to_string());
            if let Some(map) = &calibration {
                let e = &evidence[key];
                if best_precedent < NO_PRECEDENT_BELOW {
                    confidence.insert(key.to_string(), 0.0);
                    unmeasured.insert(key.to_string(), no_precedent(best_precedent));
                } else {
                    confidence.insert(key.to_string(), round3(map.confidence(key, e)));
                    if map.outside_support(e) {
                        unmeasured.insert(
                            key.to_string(),
                            outside_support(e.similarity, map.similarity_floor),
                        );
                    }
                }
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
            unmeasured,
            conflicts,
            calibration,
        },
        precedents: found.entries.iter().map(|e| e.id.clone()).collect(),
        precedent_entries: found
            .entries
            .iter()
            .zip(&weights)
            .enumerate()
            .map(|(i, (e, w))| PrecedentEntry {
                id: e.id.clone(),
                rank: i + 1,
                precedent_confidence: e.precedent_confidence,
                matched_by: e.matched_by.clone(),
                vote: w.is_some(),
            })
            .collect(),
        suggestions: found.suggestions,
        hint: found.hint,
        target: target.name(),
        target_exists: target.exists(),
        target_note: target.note(),
        did_you_mean: match &target {
            Target::New { similar, .. } if !similar.is_empty() => Some(similar.clone()),
            _ => None,
        },
        decision: "yours: these are counts of existing tags, not a classification; read the target live with get_dataset and validate your choice with resolve_lf_tag".into(),
        request: found.request,
        ttl_ms: found.ttl_ms.min(ctx.source_ttl_ms()),
        cache_scope: CacheScope::Private,
    };
    Ok((out, evidence))
}

/// Where the new column goes, as resolved from `domain` and `table`.
enum Target {
    /// No target named.
    None,
    /// An existing table, read live.
    Existing(Dataset),
    /// A table not in the catalog (or none named): a new table of `domain`, which inherits its
    /// database's tags; `similar` are existing tables with a close name.
    New {
        domain: Domain,
        table: Option<TableName>,
        inherited: Tags,
        similar: Vec<String>,
    },
}

impl Target {
    fn name(&self) -> Option<String> {
        match self {
            Target::None => None,
            Target::Existing(ds) => Some(format!("{}.{}", ds.metadata.domain, ds.metadata.name)),
            Target::New {
                domain,
                table: Some(t),
                ..
            } => Some(format!("{domain}.{t}")),
            Target::New { domain, .. } => Some(domain.0.clone()),
        }
    }

    fn exists(&self) -> Option<bool> {
        match self {
            Target::None => None,
            Target::Existing(_) => Some(true),
            Target::New { .. } => Some(false),
        }
    }

    fn note(&self) -> Option<String> {
        let Target::New {
            domain,
            table,
            inherited,
            similar,
        } = self
        else {
            return None;
        };
        let what = match table {
            Some(t) => format!("table {domain}.{t} is not in the catalog: treated as a new table of domain {domain}"),
            None => format!("no table named: treated as a new table of domain {domain}"),
        };
        // In key order: the tags are a map sorted by key.
        let keys: Vec<String> = inherited
            .iter()
            .filter(|(_, t)| t.state == FieldState::Present)
            .filter_map(|(k, t)| t.value().map(|v| format!("{k}={v}")))
            .collect();
        let inherits = if keys.is_empty() {
            format!(
                "the {} database sets no tag it would inherit",
                crate::catalog::database_of(domain)
            )
        } else {
            format!(
                "it inherits the {} database's tags ({})",
                crate::catalog::database_of(domain),
                keys.join(", ")
            )
        };
        let mean = if similar.is_empty() {
            String::new()
        } else {
            format!(
                "; did you mean {}? If so, call suggest_tags again with that table to count its columns' tags",
                similar
                    .iter()
                    .map(|t| format!("{domain}.{t}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        };
        Some(format!("{what} (no sibling columns; {inherits}){mean}"))
    }
}

/// Existing table names close to `wanted` (normalised Damerau–Levenshtein ≥ 0.75, or one name
/// containing the other), closest first, at most 3.
fn similar_tables(wanted: &str, tables: &[String]) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let mut close: Vec<(f64, &String)> = tables
        .iter()
        .filter_map(|t| {
            let lower = t.to_lowercase();
            let sim = strsim::normalized_damerau_levenshtein(&wanted, &lower);
            let contains = lower.len() >= 4
                && wanted.len() >= 4
                && (lower.contains(&wanted) || wanted.contains(&lower));
            (sim >= 0.75 || contains).then_some((sim, t))
        })
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    close.into_iter().take(3).map(|(_, t)| t.clone()).collect()
}

/// Resolves `domain` and `table`: an existing table is read live; a table the domain does
/// not have (or no table) is a new table of it; an unknown domain is an error listing the
/// domains the caller may read.
fn resolve_target(
    ctx: &Context,
    caller: &Caller,
    domain: Option<&Domain>,
    table: Option<&TableName>,
) -> Result<Target, ToolError> {
    let domain = match (domain, table) {
        (None, None) => return Ok(Target::None),
        (None, Some(t)) => {
            return Err(ToolError::new(
                "InvalidArguments",
                format!(
                "table \"{t}\" needs its domain: pass domain as well (list_domains names them), \
                     or leave both out to count precedents only"
            ),
            )
            .with("argument", "domain"))
        }
        (Some(d), _) => d,
    };
    ctx.require_domain(caller, domain)?;
    let domains: Vec<String> = ctx
        .source
        .list_domains(caller)?
        .into_iter()
        .map(|d| d.name.0)
        .filter(|d| caller.may_read(&Domain(d.clone())))
        .collect();
    if !domains.contains(&domain.0) {
        return Err(ToolError::new(
            "DomainNotFound",
            format!(
                "domain '{domain}' is not in this catalog; the domains you may read: {}; pass one \
                 of them as domain (a new table needs an existing domain)",
                domains.join(", ")
            ),
        )
        .with("domain", &domain.0)
        .with("domains", &domains));
    }
    let similar = match table {
        None => Vec::new(),
        Some(t) => match ctx.source.get_dataset(caller, domain, t) {
            Ok(ds) => return Ok(Target::Existing(ds)),
            Err(CatalogError::DatasetNotFound { tables, .. }) => similar_tables(&t.0, &tables),
            Err(e) => return Err(e.into()),
        },
    };
    Ok(Target::New {
        domain: domain.clone(),
        table: table.cloned(),
        inherited: ctx.source.database_tags(caller, domain)?,
        similar,
    })
}

/// Each precedent's vote weight under `rule`, `None` for one that does not vote (below the
/// gate while another reaches it).
fn vote_weights(
    entries: &[find_precedents::Entry],
    rule: &crate::retrieval::Vote,
) -> Vec<Option<f64>> {
    use crate::retrieval::VoteBy;
    let gated = rule.vote_gate > 0.0
        && entries
            .iter()
            .any(|e| e.precedent_confidence >= rule.vote_gate);
    entries
        .iter()
        .map(|e| {
            if gated && e.precedent_confidence < rule.vote_gate {
                return None;
            }
            let basis = match rule.vote_by {
                // Rounded to 3 places: a floor keeps an entry shown at 0.000 a voter.
                VoteBy::PrecedentConfidence => e.precedent_confidence.max(0.001),
                VoteBy::Score => e.score.max(0.0),
                VoteBy::ScoreTimesConfidence => {
                    e.score.max(0.0) * e.precedent_confidence.max(0.001)
                }
            };
            Some(basis.powf(rule.vote_exponent))
        })
        .collect()
}

/// The position in `ordered` of `value` in its key's order (least strict first).
fn strictness(spec: &crate::ontology::KeySpec, value: &str) -> usize {
    spec.values
        .iter()
        .position(|v| v.value.0 == value)
        .unwrap_or(0)
}

/// For an ordered key: the index in `voted` (largest weight first) of the strictest value
/// whose weight times `ratio` reaches the largest, when that is not the largest itself.
fn lean_strict(
    spec: &crate::ontology::KeySpec,
    voted: &[&Candidate],
    ratio: f64,
    eligible: &dyn Fn(&Candidate) -> bool,
) -> Option<usize> {
    let top = voted.first()?;
    let (i, strict) = voted
        .iter()
        .enumerate()
        .filter(|(_, c)| eligible(c))
        .filter(|(_, c)| {
            c.precedent_weight > 0.0 && c.precedent_weight * ratio >= top.precedent_weight
        })
        .max_by_key(|(_, c)| strictness(spec, &c.value))?;
    (strictness(spec, &strict.value) > strictness(spec, &top.value)).then_some(i)
}

/// The conflict of an ordered key whose voting precedents carry more than one value.
fn conflict_of(
    spec: &crate::ontology::KeySpec,
    voted: &[&Candidate],
    leaned: Option<usize>,
    ratio: f64,
) -> Option<Conflict> {
    let weighed: Vec<&&Candidate> = voted.iter().filter(|c| c.precedent_weight > 0.0).collect();
    if weighed.len() < 2 {
        return None;
    }
    let top = voted[0];
    let proposed = voted[leaned.unwrap_or(0)];
    let reason = match leaned {
        Some(_) => format!(
            "leaned strict: {} (weight {:.2}) is stricter than {} ({:.2}), which does not \
             outweigh it {ratio}-fold",
            proposed.value, proposed.precedent_weight, top.value, top.precedent_weight
        ),
        None => {
            let stricter: Vec<String> = weighed
                .iter()
                .filter(|c| strictness(spec, &c.value) > strictness(spec, &top.value))
                .map(|c| format!("{} ({:.2})", c.value, c.precedent_weight))
                .collect();
            if stricter.is_empty() {
                format!("{} is the strictest value the precedents carry", top.value)
            } else {
                format!(
                    "{} (weight {:.2}) outweighs the stricter {} at least {ratio}-fold",
                    top.value,
                    top.precedent_weight,
                    stricter.join(", ")
                )
            }
        }
    };
    let mut values: Vec<ConflictValue> = weighed
        .iter()
        .map(|c| ConflictValue {
            value: c.value.clone(),
            precedents: c.precedents.columns.clone(),
            weight: c.precedent_weight,
        })
        .collect();
    values.sort_by_key(|v| std::cmp::Reverse(strictness(spec, &v.value)));
    Some(Conflict {
        values,
        proposed: proposed.value.clone(),
        reason,
    })
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
                            "{} {:.2} ({})",
                            c.value,
                            c.precedent_weight,
                            crate::text::count(c.precedents.columns.len(), "column")
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

/// What a confidence of 0 means when no precedent is the same kind of data.
fn no_precedent(best: f64) -> String {
    format!(
        "not measured: no precedent is the same kind of data (the best precedent_confidence is \
         {best:.2}, below {NO_PRECEDENT_BELOW}), so these tags belong to other data; confidence 0 \
         means unknown: decide this key with the user"
    )
}

/// What a confidence of 0 below the support floor means.
fn outside_support(similarity: f64, floor: f64) -> String {
    format!(
        "not measured: the best precedent's similarity {similarity:.2} is below {floor:.2}, and no \
         proposal this far from its precedents was checked on this catalog, so confidence 0 \
         means unknown, not a measured miss; the precedents may well be another kind of data: \
         decide this key with the user"
    )
}

/// Why `key` abstains when the precedents withheld from the caller outweigh `value`'s, naming
/// them and the access that would show their tags.
fn withheld_abstention(key: &str, value: &str, withheld: &[(String, f64)]) -> String {
    let mut ids: Vec<&str> = withheld.iter().map(|(id, _)| id.as_str()).collect();
    let more = ids.len().saturating_sub(5);
    ids.truncate(5);
    let mut domains: Vec<&str> = withheld
        .iter()
        .filter_map(|(id, _)| id.strip_prefix("column:")?.split('.').next())
        .collect();
    domains.sort();
    domains.dedup();
    format!(
        "the best-matching precedents have their {key} withheld from you ({}{}): they weigh more \
         than the precedents behind {value}, so {value} would rest on leftovers; ask the owner of \
         domain {} for read access to these columns' LF-tags (Lake Formation DESCRIBE on the tag \
         {key}), then ask again, or decide {key} yourself and check it with resolve_lf_tag",
        ids.join(", "),
        if more > 0 {
            format!(" and {more} more")
        } else {
            String::new()
        },
        domains.join(", ")
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
                weight: score * score,
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

    /// A column entry of find_precedents with `sensitivity` = `value`.
    fn entry(
        id: &str,
        value: &str,
        precedent_confidence: f64,
        score: f64,
    ) -> find_precedents::Entry {
        find_precedents::Entry {
            id: id.to_string(),
            kind: Kind::Column,
            domain: None,
            table: None,
            column: None,
            data_type: None,
            key: None,
            value: None,
            description: None,
            lf_tags: Some(Tags::from([(
                "sensitivity".to_string(),
                TagState::present(value, TagLevel::Column),
            )])),
            score,
            match_type: crate::retrieval::MatchType::Both,
            bm25_rank: None,
            dense_rank: None,
            similarity: None,
            matched_by: Vec::new(),
            precedent_confidence,
        }
    }

    /// The sensitivity weight shares of `entries` voting under `rule`.
    fn shares(
        entries: &[find_precedents::Entry],
        rule: &crate::retrieval::Vote,
    ) -> Vec<(String, f64)> {
        let ctx = demo_context();
        let mut tally = Tally::default();
        for (e, w) in entries.iter().zip(vote_weights(entries, rule)) {
            if let (Some(tags), Some(weight)) = (&e.lf_tags, w) {
                let vote = Vote {
                    column: &e.id,
                    tags,
                    weight,
                    similarity: 0.5,
                    score: e.score,
                };
                tally.add(&ctx, "sensitivity", vote);
            }
        }
        ["high", "internal"]
            .iter()
            .map(|v| (v.to_string(), tally.weight_share(v)))
            .collect()
    }

    const BY_EVIDENCE: crate::retrieval::Vote = crate::retrieval::Vote {
        vote_by: crate::retrieval::VoteBy::PrecedentConfidence,
        vote_exponent: 2.0,
        vote_gate: 0.5,
        strict_ratio: 2.0,
        strict_gate: 0.5,
    };

    #[test]
    fn one_direct_precedent_outvotes_entries_find_precedents_calls_another_kind() {
        // Ranked first, a payee IBAN (a direct precedent); then four status columns of the same
        // payment table, close in score, that find_precedents calls another kind of data.
        let mut entries = vec![entry("column:p.pay.payee_iban", "high", 0.91, 0.40)];
        for n in 0..4 {
            entries.push(entry(
                &format!("column:p.pay.status_{n}"),
                "internal",
                0.21,
                0.38,
            ));
        }
        assert_eq!(
            shares(&entries, &BY_EVIDENCE),
            vec![("high".to_string(), 1.0), ("internal".to_string(), 0.0)]
        );
        // The fused score squared (the vote before) follows the neighbours.
        let by_score = crate::retrieval::Vote::default();
        assert_eq!(
            shares(&entries, &by_score),
            vec![("high".to_string(), 0.217), ("internal".to_string(), 0.783)]
        );
    }

    #[test]
    fn two_direct_precedents_that_agree_outvote_one_weak_entry() {
        let entries = vec![
            entry("column:a.t.status", "high", 0.3, 0.45),
            entry("column:b.t.iban", "internal", 0.8, 0.40),
            entry("column:c.t.iban", "internal", 0.7, 0.39),
        ];
        assert_eq!(
            shares(&entries, &BY_EVIDENCE),
            vec![("high".to_string(), 0.0), ("internal".to_string(), 1.0)]
        );
        // No entry reaches the gate: every entry votes by its precedent_confidence.
        let weak: Vec<_> = entries
            .iter()
            .map(|e| find_precedents::Entry {
                precedent_confidence: e.precedent_confidence / 2.0,
                ..e.clone()
            })
            .collect();
        assert_eq!(
            shares(&weak, &BY_EVIDENCE),
            vec![("high".to_string(), 0.074), ("internal".to_string(), 0.926)]
        );
    }

    fn candidate(value: &str, columns: &[&str], weight: f64) -> Candidate {
        Candidate {
            value: value.to_string(),
            precedents: Support {
                columns: columns.iter().map(|c| c.to_string()).collect(),
                share: 0.0,
            },
            precedent_weight: weight,
            siblings: None,
        }
    }

    fn sensitivity_spec() -> crate::ontology::KeySpec {
        let ctx = demo_context();
        let spec = ctx
            .ontology
            .keys
            .iter()
            .find(|k| k.key.0 == "sensitivity")
            .expect("key");
        assert!(spec.ordered);
        spec.clone()
    }

    #[test]
    fn an_ordered_key_whose_precedents_split_leans_to_the_stricter_value_and_says_so() {
        let spec = sensitivity_spec();
        let internal = candidate("internal", &["column:a.t.x", "column:b.t.x"], 0.6);
        let confidential = candidate("confidential", &["column:c.t.x"], 0.4);
        let voted = [&internal, &confidential];
        let leaned = lean_strict(&spec, &voted, 2.0, &|_| true);
        assert_eq!(leaned, Some(1));
        let conflict = conflict_of(&spec, &voted, leaned, 2.0).expect("a conflict");
        assert_eq!(conflict.proposed, "confidential");
        assert_eq!(
            conflict.values,
            vec![
                ConflictValue {
                    value: "confidential".into(),
                    precedents: vec!["column:c.t.x".into()],
                    weight: 0.4
                },
                ConflictValue {
                    value: "internal".into(),
                    precedents: vec!["column:a.t.x".into(), "column:b.t.x".into()],
                    weight: 0.6
                },
            ]
        );
        assert_eq!(
            conflict.reason,
            "leaned strict: confidential (weight 0.40) is stricter than internal (0.60), which \
             does not outweigh it 2-fold"
        );
    }

    #[test]
    fn a_stricter_value_with_one_weak_vote_against_many_direct_ones_is_not_proposed() {
        let spec = sensitivity_spec();
        let internal = candidate(
            "internal",
            &["column:a.t.x", "column:b.t.x", "column:c.t.x"],
            0.9,
        );
        let high = candidate("high", &["column:d.t.x"], 0.1);
        let voted = [&internal, &high];
        assert_eq!(lean_strict(&spec, &voted, 2.0, &|_| true), None);
        let conflict = conflict_of(&spec, &voted, None, 2.0).expect("a conflict");
        assert_eq!(conflict.proposed, "internal");
        assert_eq!(
            conflict.reason,
            "internal (weight 0.90) outweighs the stricter high (0.10) at least 2-fold"
        );
        // However little it weighs against, a stricter value none of whose precedents reaches
        // the strict gate (precedent_confidence 0.5) is not leaned to.
        assert_eq!(lean_strict(&spec, &voted, 100.0, &|_| true), Some(1));
        assert_eq!(
            lean_strict(&spec, &voted, 100.0, &|c| c.value != "high"),
            None
        );
        // Agreement is no conflict.
        assert_eq!(conflict_of(&spec, &[&internal], None, 2.0), None);
    }

    #[test]
    fn a_zero_confidence_says_it_is_unknown_not_a_measured_miss() {
        assert_eq!(
            no_precedent(0.32),
            "not measured: no precedent is the same kind of data (the best precedent_confidence \
             is 0.32, below 0.5), so these tags belong to other data; confidence 0 means \
             unknown: decide this key with the user"
        );
        assert_eq!(
            outside_support(0.31, 0.354),
            "not measured: the best precedent's similarity 0.31 is below 0.35, and no proposal \
             this far from its precedents was checked on this catalog, so confidence 0 means \
             unknown, not a measured miss; the precedents may well be another kind of data: \
             decide this key with the user"
        );
    }

    #[test]
    fn withheld_precedents_outweighing_the_proposal_make_the_key_abstain_and_lighter_ones_do_not() {
        let ctx = demo_context();
        let tally_with = |withheld_score: f64| {
            let mut tally = Tally::default();
            let readable = Tags::from([(
                "sensitivity".to_string(),
                TagState::present("internal", TagLevel::Column),
            )]);
            let hidden = Tags::from([(
                "sensitivity".to_string(),
                TagState::absent(FieldState::Withheld),
            )]);
            for (id, tags, score) in [
                ("column:a.t.icd10_code", &hidden, withheld_score),
                ("column:b.t.claim_id", &readable, 0.3),
            ] {
                let vote = Vote {
                    column: id,
                    tags,
                    weight: score * score,
                    similarity: score,
                    score,
                };
                tally.add(&ctx, "sensitivity", vote);
            }
            tally
        };
        assert!(tally_with(0.6).outweighed_by_withheld("internal"));
        assert!(!tally_with(0.2).outweighed_by_withheld("internal"));
        assert!(withheld_abstention("sensitivity", "internal", &tally_with(0.6).withheld)
            .starts_with("the best-matching precedents have their sensitivity withheld from you (column:a.t.icd10_code)"));
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
