//! The knobs of retrieval and of suggest_tags' vote ([`Params`]), each default named once with
//! the figure that chose it; `--param NAME=VALUE` overrides them in `govcat eval`.

use serde::{Deserialize, Serialize};

use crate::index::lexical::Boosts;

/// Which sides run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Hybrid,
    Bm25,
    Dense,
}

/// How the two sides' candidates are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Weighted reciprocal rank: w / (k + rank) per side.
    Rrf,
    /// Weighted sum of BM25 divided by the query's best BM25 and of cosine similarity.
    WeightedSum,
}

/// Fusion and floor parameters (calibrated on the calibration split of the query set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub fusion: Fusion,
    /// Reciprocal-rank constant.
    pub rrf_k: f64,
    pub lexical_weight: f64,
    pub dense_weight: f64,
    /// Dense-only candidates below this cosine similarity are not matches.
    pub min_similarity: f32,
    /// Factor on the fused score of a key column (see [`is_key_column`]) when the description
    /// does not ask for an identifier (see [`asks_for_identifier`]); 1.0 leaves scores alone.
    pub key_weight: f64,
    /// The lexical side's clause weights.
    #[serde(flatten)]
    pub boosts: Boosts,
    /// How the lists of the caller's phrasings (description + alternatives) are fused.
    #[serde(flatten)]
    pub phrasings: PhrasingFusion,
    /// How suggest_tags' precedents vote.
    #[serde(flatten)]
    pub vote: Vote,
}

/// How `suggest_tags`' precedents vote on each key (`tools::suggest_tags`): kept with the
/// search's tunables so that `govcat eval tags|calls --param` reaches them too.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Vote {
    /// What a precedent's vote weighs: its `precedent_confidence` (how likely it is a direct
    /// precedent) or its fused `score` (a rank artefact; the vote before 2026-12-05).
    pub vote_by: VoteBy,
    /// The vote is that value to this power.
    pub vote_exponent: f64,
    /// When any precedent reaches this precedent_confidence, only those that reach it vote
    /// (an entry find_precedents calls another kind of data cannot outvote a precedent);
    /// 0 lets every precedent vote.
    pub vote_gate: f64,
    /// Ordered keys (`ordered: true`): of the values the voting precedents carry, the strictest
    /// whose weight times this reaches the largest weight is proposed; 1 proposes the largest.
    pub strict_ratio: f64,
    /// A stricter value is proposed only when one of its precedents reaches this
    /// precedent_confidence (0: any precedent).
    pub strict_gate: f64,
    /// When a precedent of at least this precedent_confidence carries the key's value at column
    /// level (a statement about that kind of column, not about the table it sits in), only
    /// precedents that reach it vote on the key; 0 turns it off.
    #[serde(default)]
    pub column_gate: f64,
}

/// What a precedent's vote weighs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VoteBy {
    PrecedentConfidence,
    Score,
    /// The product of the two.
    ScoreTimesConfidence,
}

impl Default for Vote {
    /// Measured on every labelled set at once (`scripts/fit-vote.sh`, release, 2026-12-05;
    /// `docs/perf/vote.md`): `eval tags` leave-one-out on demo and fides-saas, `eval calls` on
    /// both blind hosts' calls of demo and fides-saas.
    /// - `vote_by score`, `vote_exponent 2`, no `vote_gate`: the best matches decide and a tail of
    ///   weak ones cannot outvote them (2026-12-01, leave-one-out accuracy@1 with exponent 0 / 1 /
    ///   2: demo sensitivity 0.728 / 0.748 / 0.767, fides-saas data_category 0.867 / 0.871 /
    ///   0.873). On 2026-12-05 every vote that weighs
    ///   precedent_confidence (alone or times the score, exponent 1, 2 or 4, with or without the
    ///   0.5 gate) lost on the union: demo leave-one-out sensitivity 0.745 -> 0.675-0.714, fides-saas
    ///   data_category 0.874 -> 0.828-0.858, demo calls all keys 0.916 -> 0.848-0.916; it won only
    ///   on one fides-saas host file (0.759 -> 0.862).
    /// - `strict_ratio 2` with `strict_gate 0.5` (the precedent threshold of find_precedents):
    ///   demo calls sensitivity 0.842 -> 0.921 and 0.868 -> 0.921 with no understated value left
    ///   (4 and 3 before); leave-one-out sensitivity 0.745 -> 0.752 (understated 58 -> 46),
    ///   retention 0.656 -> 0.651 (understated 70 -> 62). Ratio 1.5 kept 3 and 2 understated
    ///   calls; 3 changed nothing more; without the gate (any precedent may lean) ratio 2 cost the
    ///   leave-one-out sensitivity 0.745 -> 0.714.
    /// - `strict_ratio 3` (2026-12-05, fourth session, all 29 demo and 19 fides-saas calls files):
    ///   demo calls sensitivity 0.928 -> 0.934 (mean), understated 14 -> 2, most of them d002 (a
    ///   direct precedent's confidential outweighed 2.2-fold by six internal keys find_precedents
    ///   calls another kind); leave-one-out sensitivity 0.752 -> 0.750 and retention 0.660 ->
    ///   0.658 (one column each, both overstated), still above a48f8ba's 0.745 and 0.656; 4 the
    ///   same as 3.
    /// - `column_gate 0.9` (2026-12-05, fifth session; every calls file, 29 demo and 19
    ///   fides-saas, and both leave-one-outs, one run): a close precedent's own column-level tag
    ///   decides over its neighbours'. Calls all keys / sensitivity, means: demo 0.921 / 0.935 ->
    ///   0.924 / 0.945, fides-saas 0.776 / 0.817 -> 0.894 / 0.937; leave-one-out demo
    ///   sensitivity 0.750 -> 0.745, fides-saas data_category 0.874 -> 0.869 and sensitivity
    ///   0.881 -> 0.877, lost on columns a same-named column contradicts (fides-saas 0.644 ->
    ///   0.589; the rest 0.914 -> 0.916). 0.8: demo calls sensitivity 0.939, fides-saas 0.930;
    ///   0.7: 28 understated demo sensitivities; 0.95: fides-saas 0.908. The confidence's evidence
    ///   stays the whole neighbourhood's vote (fides-saas precision at >= 0.9 0.934 -> 1.000).
    fn default() -> Self {
        Vote {
            vote_by: VoteBy::Score,
            vote_exponent: 2.0,
            vote_gate: 0.0,
            strict_ratio: 3.0,
            strict_gate: 0.5,
            column_gate: 0.9,
        }
    }
}

/// The fusion of the phrasings' own hybrid lists into one (stage 5 of [`search`]): weighted
/// reciprocal rank, `weight / (phrasing_rrf_k + rank in that phrasing's list)` summed over the
/// phrasings that found an entry. Runs only when the caller passed alternatives; the
/// description alone keeps its own list and scores. Echoed in `request.params`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize, schemars::JsonSchema)]
#[schemars(
    description = "How the phrasings' lists were fused into one, with alternatives only: \
weighted reciprocal rank, weight / (phrasing_rrf_k + rank in that phrasing's list), summed over \
the phrasings that found an entry."
)]
pub struct PhrasingFusion {
    /// Reciprocal-rank constant of the fusion across phrasings.
    pub phrasing_rrf_k: f64,
    /// Weight of the description's list; never below `alternative_weight`.
    pub description_weight: f64,
    /// Weight of each alternative's list.
    pub alternative_weight: f64,
}

impl Default for PhrasingFusion {
    /// Fitted once on the union of the calibration splits with blind-written alternatives
    /// (`scripts/fit-alternatives.sh`, release, 2026-12-02; the grid is
    /// `fixtures/bench/alternatives/fit-2026-12-02.tsv`): the bundled set (queries + negatives),
    /// gdc-cptac and mimic-omop (both files each). Objective: hybrid_alt nDCG@10 averaged over
    /// the three catalogs. k 10 with equal weights 0.747, **k 10 weight 0.75: 0.746** (bundled
    /// 0.885, gdc-cptac 0.814, mimic-omop 0.539), k 60 weight 0.5 0.747, the day before's k 20
    /// weight 0.5 (fitted on the bundled set alone) 0.743, plain RRF (k 60, equal) 0.741: flat
    /// within 0.01, the phrasings matter, their fusion hardly. Of the two best, 0.75: with equal
    /// weights a description's rank 1 and 2 against an alternative's 2 and 1 tie, and the id
    /// decides (for "contains an EU IBAN" with the alternative "iban",
    /// `customer.customer_bank_account.iban` would go before the description's first,
    /// `policy.customer.iban`); the description weighing more decides it for the caller's
    /// own description.
    fn default() -> Self {
        PhrasingFusion {
            phrasing_rrf_k: 10.0,
            description_weight: 1.0,
            alternative_weight: 0.75,
        }
    }
}

impl Params {
    /// `self` with `NAME=VALUE` overrides (`rrf_k=60`, `fusion=weighted_sum`); an unknown
    /// name or a value of the wrong kind is refused with the names there are.
    pub fn with_overrides(self, overrides: &[String]) -> Result<Params, String> {
        let mut v = serde_json::to_value(self).map_err(|e| e.to_string())?;
        let names: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        for o in overrides {
            let (name, value) = o.split_once('=').ok_or_else(|| {
                format!(
                    "--param {o}: expected NAME=VALUE with NAME one of {}",
                    names.join(", ")
                )
            })?;
            if !names.iter().any(|n| n == name) {
                return Err(format!(
                    "--param {o}: no parameter {name}; the parameters are {}",
                    names.join(", ")
                ));
            }
            let value = serde_json::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
            v[name] = value;
        }
        serde_json::from_value(v).map_err(|e| {
            format!(
                "--param {}: {e}; give a number (or fusion=rrf|weighted_sum, vote_by=precedent_confidence|score|score_times_confidence)",
                overrides.join(" ")
            )
        })
    }

    /// The factor on a key column's score for a description that does (`true`) or does not
    /// ask for an identifier.
    pub fn key_weight_for(&self, asks_for_identifier: bool) -> f64 {
        if asks_for_identifier {
            1.0
        } else {
            self.key_weight
        }
    }
}

impl Default for Params {
    /// `rrf_k` and `dense_weight` were fitted on the union of the calibration splits of the
    /// bundled set and the external sets gdc-cptac and mimic-omop (`govcat eval queries
    /// --split calibration --param ...`, a 4 x 4 grid, 2026-12-01): mean hybrid nDCG@10 0.600
    /// at k 3 / weight 1.5 against 0.585 at the earlier 5 / 2.0 (chosen on the bundled set
    /// alone). Held out: gdc-cptac 0.616 -> 0.636, bundled 0.800 -> 0.803, mimic-omop 0.380 ->
    /// 0.369 (20 queries). The floor and the key-column weight were left as calibrated on the
    /// bundled set: key weight 1.0 instead of 0.7 changed gdc-cptac's calibration figures
    /// nothing and mimic-omop's nDCG nothing (all 29 queries; its recall@5 fell 0.483 -> 0.448).
    fn default() -> Self {
        Params {
            fusion: Fusion::Rrf,
            rrf_k: 3.0,
            lexical_weight: 1.0,
            dense_weight: 1.5,
            min_similarity: 0.40,
            key_weight: 0.7,
            boosts: Boosts::default(),
            phrasings: PhrasingFusion::default(),
            vote: Vote::default(),
        }
    }
}
