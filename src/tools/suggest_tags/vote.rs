//! How suggest_tags' precedents vote on one key: the tally of their values and weights
//! ([`Tally`], each weight from [`vote_weights`] under `retrieval::Vote`), and for an ordered key
//! the lean to the stricter value ([`lean_strict`]) and the conflict it reports ([`conflict_of`]).
//! The figures behind the rule: `docs/perf/vote.md`.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::super::find_precedents;
use super::super::Context;
use crate::calibration::Evidence;
use crate::catalog::{FieldState, TagLevel, Tags};

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

#[derive(Default)]
pub(super) struct Tally {
    pub(super) values: BTreeMap<String, Vec<String>>,
    /// Vote weight per value (see [`crate::retrieval::Vote`]).
    pub(super) weights: BTreeMap<String, f64>,
    /// Per value, the best match among the columns carrying it.
    pub(super) best: BTreeMap<String, BestMatch>,
    pub(super) excluded: Excluded,
    /// The precedents whose value of the key is withheld from the caller, with their weight.
    pub(super) withheld: Vec<(String, f64)>,
    /// The values carried by counted precedents that a phrasing names word for word and whose
    /// copies agree ([`Vote::name_match`]).
    pub(super) named: std::collections::BTreeSet<String>,
}

/// The best similarity, score and precedent_confidence among the columns carrying a value,
/// each taken on its own (they may come from different columns).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub(super) struct BestMatch {
    pub(super) similarity: f64,
    pub(super) score: f64,
    pub(super) precedent_confidence: f64,
}

/// One column's part in a tally: its id, tags, vote weight and how well it matched.
pub(super) struct Vote<'a> {
    pub(super) column: &'a str,
    pub(super) tags: &'a Tags,
    pub(super) weight: f64,
    pub(super) similarity: f64,
    pub(super) score: f64,
    pub(super) precedent_confidence: f64,
    /// A phrasing names the column word for word, and its copies agree on the key
    /// ([`crate::tools::calibrate::copies_agree`]).
    pub(super) name_match: bool,
}

impl Tally {
    pub(super) fn add(&mut self, ctx: &Context, key: &str, vote: Vote) {
        match vote.tags.get(key) {
            Some(t) if t.state == FieldState::Present => match t.value() {
                Some(v) if ctx.ontology.contains(key, v) => {
                    self.values
                        .entry(v.to_string())
                        .or_default()
                        .push(vote.column.to_string());
                    *self.weights.entry(v.to_string()).or_default() += vote.weight;
                    let best = self.best.entry(v.to_string()).or_default();
                    best.similarity = best.similarity.max(vote.similarity);
                    best.score = best.score.max(vote.score);
                    best.precedent_confidence =
                        best.precedent_confidence.max(vote.precedent_confidence);
                    if vote.name_match {
                        self.named.insert(v.to_string());
                    }
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
    pub(super) fn raw_share(&self, value: &str) -> f64 {
        let total: f64 = self.weights.values().sum();
        if total <= 0.0 {
            return 0.0;
        }
        self.weights.get(value).copied().unwrap_or(0.0) / total
    }

    /// `value`'s share of the match weight, rounded to 3 places.
    pub(super) fn weight_share(&self, value: &str) -> f64 {
        (self.raw_share(value) * 1000.0).round() / 1000.0
    }

    /// Whether the precedents withheld from the caller weigh at least as much as `value`'s:
    /// had they carried another value, it would have won. Withheld evidence is not absent
    /// evidence (FIDELITY rule 12): the key then abstains rather than rest on the leftovers.
    pub(super) fn outweighed_by_withheld(&self, value: &str) -> bool {
        let hidden: f64 = self.withheld.iter().map(|(_, w)| w).sum();
        hidden > 0.0 && hidden >= self.weights.get(value).copied().unwrap_or(0.0)
    }

    pub(super) fn counted(&self) -> usize {
        self.values.values().map(Vec::len).sum()
    }

    pub(super) fn support(&self, value: &str) -> Support {
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
    pub(super) fn evidence(&self, winner: &str, runner_up: Option<&str>) -> Evidence {
        let best = self.best.get(winner).copied().unwrap_or_default();
        Evidence {
            share: self.raw_share(winner),
            runner_up: runner_up.map_or(0.0, |r| self.raw_share(r)),
            similarity: best.similarity,
            score: best.score,
            counted: self.counted(),
            precedent_confidence: best.precedent_confidence,
            name_match: f64::from(u8::from(
                self.named.len() == 1 && self.named.contains(winner),
            )),
        }
    }
}

/// Each precedent's vote weight on `key` under `rule`, `None` for one that does not vote: below
/// `vote_gate` while another reaches it, or below `column_gate` while another reaches it and
/// carries the key's value at column level (a tag set on that very kind of column, not one it
/// inherits from its table).
pub(super) fn vote_weights(
    ctx: &Context,
    key: &str,
    entries: &[find_precedents::Entry],
    rule: &crate::retrieval::Vote,
) -> Vec<Option<f64>> {
    use crate::retrieval::VoteBy;
    let reached = |gate: f64, carries: &dyn Fn(&find_precedents::Entry) -> bool| {
        gate > 0.0
            && entries
                .iter()
                .any(|e| e.precedent_confidence >= gate && carries(e))
    };
    let gated = reached(rule.vote_gate, &|_| true);
    let column_gated = reached(rule.column_gate, &|e| {
        e.lf_tags
            .as_ref()
            .and_then(|t| t.get(key))
            .is_some_and(|t| {
                t.assigned_at == Some(TagLevel::Column)
                    && t.value().is_some_and(|v| ctx.ontology.contains(key, v))
            })
    });
    entries
        .iter()
        .map(|e| {
            if gated && e.precedent_confidence < rule.vote_gate
                || column_gated && e.precedent_confidence < rule.column_gate
            {
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

/// How strict `value` is among `spec`'s values (least strict 0).
fn rank(spec: &crate::ontology::KeySpec, value: &str) -> usize {
    spec.position(value).unwrap_or(0)
}

/// For an ordered key: the index in `voted` (largest weight first) of the strictest value
/// whose weight times `ratio` reaches the largest, when that is not the largest itself.
pub(super) fn lean_strict(
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
        .max_by_key(|(_, c)| rank(spec, &c.value))?;
    (rank(spec, &strict.value) > rank(spec, &top.value)).then_some(i)
}

/// The conflict of an ordered key whose voting precedents carry more than one value. Its reason
/// names why a stricter value was not leaned to: outweighed `ratio`-fold, or not `eligible`
/// (none of its precedents reaches precedent_confidence `gate`), as [`lean_strict`] decided.
pub(super) fn conflict_of(
    spec: &crate::ontology::KeySpec,
    voted: &[&Candidate],
    leaned: Option<usize>,
    ratio: f64,
    (eligible, gate): (&dyn Fn(&Candidate) -> bool, f64),
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
            let listed = |direct: bool| -> Vec<String> {
                weighed
                    .iter()
                    .filter(|c| rank(spec, &c.value) > rank(spec, &top.value))
                    .filter(|c| eligible(c) == direct)
                    .map(|c| format!("{} ({:.2})", c.value, c.precedent_weight))
                    .collect()
            };
            let (outweighed, undirect) = (listed(true), listed(false));
            let mut parts = Vec::new();
            if !outweighed.is_empty() {
                parts.push(format!(
                    "{} (weight {:.2}) outweighs the stricter {} at least {ratio}-fold",
                    top.value,
                    top.precedent_weight,
                    outweighed.join(", ")
                ));
            }
            if !undirect.is_empty() {
                let lead = if parts.is_empty() {
                    format!("{} (weight {:.2}) stays: ", top.value, top.precedent_weight)
                } else {
                    String::new()
                };
                parts.push(format!(
                    "{lead}no precedent of the stricter {} reaches precedent_confidence {gate}",
                    undirect.join(", ")
                ));
            }
            if parts.is_empty() {
                format!("{} is the strictest value the precedents carry", top.value)
            } else {
                parts.join("; ")
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
    values.sort_by_key(|v| std::cmp::Reverse(rank(spec, &v.value)));
    Some(Conflict {
        values,
        proposed: proposed.value.clone(),
        reason,
    })
}

#[cfg(test)]
mod tests {
    use super::super::tests::demo_context;
    use super::*;
    use crate::catalog::TagState;
    use crate::index::documents::Kind;

    /// Pair: the evidence that a phrasing names a precedent counts only while every named
    /// precedent carries the proposed value.
    #[test]
    fn a_named_precedent_is_evidence_only_while_every_named_one_carries_the_winner() {
        let ctx = demo_context();
        let vote = |tally: &mut Tally, id: &str, value: &str, named: bool| {
            let tags = Tags::from([(
                "sensitivity".to_string(),
                TagState::present(value, TagLevel::Column),
            )]);
            tally.add(
                &ctx,
                "sensitivity",
                Vote {
                    column: id,
                    tags: &tags,
                    weight: 0.5,
                    similarity: 0.5,
                    score: 0.5,
                    precedent_confidence: 0.5,
                    name_match: named,
                },
            );
        };
        let mut tally = Tally::default();
        vote(&mut tally, "column:a.t.steuer_id", "high", true);
        vote(&mut tally, "column:b.t.tax_note", "internal", false);
        assert_eq!(tally.evidence("high", Some("internal")).name_match, 1.0);
        assert_eq!(tally.evidence("internal", Some("high")).name_match, 0.0);

        vote(&mut tally, "column:c.t.steuer_id", "internal", true);
        assert_eq!(tally.evidence("high", Some("internal")).name_match, 0.0);
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
                precedent_confidence: score,
                name_match: false,
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

    /// A column entry of find_precedents with `sensitivity` = `value` set on the column.
    fn entry(
        id: &str,
        value: &str,
        precedent_confidence: f64,
        score: f64,
    ) -> find_precedents::Entry {
        entry_at(id, value, TagLevel::Column, precedent_confidence, score)
    }

    /// [`entry`] with its `sensitivity` assigned at `level`.
    fn entry_at(
        id: &str,
        value: &str,
        level: TagLevel,
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
                TagState::present(value, level),
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
        for (e, w) in entries
            .iter()
            .zip(vote_weights(&ctx, "sensitivity", entries, rule))
        {
            if let (Some(tags), Some(weight)) = (&e.lf_tags, w) {
                let vote = Vote {
                    column: &e.id,
                    tags,
                    weight,
                    similarity: 0.5,
                    score: e.score,
                    precedent_confidence: e.precedent_confidence,
                    name_match: false,
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
        column_gate: 0.0,
    };

    /// Ranked first, a payee IBAN (a direct precedent at `direct`, its sensitivity set at
    /// `level`); then four status columns of the same payment table, close in score, that
    /// find_precedents calls another kind of data.
    fn iban_and_four_statuses(direct: f64, level: TagLevel) -> Vec<find_precedents::Entry> {
        let mut entries = vec![entry_at(
            "column:p.pay.payee_iban",
            "high",
            level,
            direct,
            0.40,
        )];
        for n in 0..4 {
            entries.push(entry(
                &format!("column:p.pay.status_{n}"),
                "internal",
                0.21,
                0.38,
            ));
        }
        entries
    }

    #[test]
    fn one_direct_precedent_outvotes_entries_find_precedents_calls_another_kind() {
        let entries = iban_and_four_statuses(0.91, TagLevel::Column);
        let follows_it = vec![("high".to_string(), 1.0), ("internal".to_string(), 0.0)];
        assert_eq!(shares(&entries, &BY_EVIDENCE), follows_it);
        // The shipped vote: a precedent at >= column_gate tags this key on the column itself,
        // so it alone votes.
        assert_eq!(
            shares(&entries, &crate::retrieval::Vote::default()),
            follows_it
        );
    }

    #[test]
    fn a_direct_precedent_whose_tag_comes_from_its_table_votes_with_its_neighbours() {
        // The same IBAN, its sensitivity inherited from its table: a statement about that table,
        // so every entry votes with its fused score squared and the four neighbours outweigh it.
        let entries = iban_and_four_statuses(0.91, TagLevel::Table);
        let by_score = vec![("high".to_string(), 0.217), ("internal".to_string(), 0.783)];
        assert_eq!(
            shares(&entries, &crate::retrieval::Vote::default()),
            by_score
        );
        // And so they do when it is tagged on the column but below column_gate.
        let below = iban_and_four_statuses(0.89, TagLevel::Column);
        assert_eq!(shares(&below, &crate::retrieval::Vote::default()), by_score);
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
        let conflict =
            conflict_of(&spec, &voted, leaned, 2.0, (&|_| true, 0.5)).expect("a conflict");
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
        let conflict = conflict_of(&spec, &voted, None, 2.0, (&|_| true, 0.5)).expect("a conflict");
        assert_eq!(conflict.proposed, "internal");
        assert_eq!(
            conflict.reason,
            "internal (weight 0.90) outweighs the stricter high (0.10) at least 2-fold"
        );
        // However little it weighs against, a stricter value none of whose precedents reaches
        // the strict gate (precedent_confidence 0.5) is not leaned to, and the reason says so
        // rather than claim an outweighing that did not decide.
        let undirect = |c: &Candidate| c.value != "high";
        assert_eq!(lean_strict(&spec, &voted, 100.0, &|_| true), Some(1));
        assert_eq!(lean_strict(&spec, &voted, 100.0, &undirect), None);
        assert_eq!(
            conflict_of(&spec, &voted, None, 100.0, (&undirect, 0.5))
                .expect("a conflict")
                .reason,
            "internal (weight 0.90) stays: no precedent of the stricter high (0.10) reaches \
             precedent_confidence 0.5"
        );
        // Agreement is no conflict.
        assert_eq!(
            conflict_of(&spec, &[&internal], None, 2.0, (&|_| true, 0.5)),
            None
        );
    }
}
