//! How likely a `find_precedents` entry is a *direct precedent* (the same kind of data as the
//! description, a column whose tags an engineer would copy): `precedent_confidence`, a logistic
//! map from an entry's evidence to the share of such entries that were graded 2 on labelled
//! query sets. Unlike `calibration` (fitted per catalog at index time, on tagged columns), this
//! map is fitted once on every labelled set govcat has — the bundled queries and negatives and
//! the external retrieval sets, each with its blind alternatives — and checked on the sets it was
//! not fitted on (`scripts/fit-precedent.py`, figures in `docs/perf/conversation.md`).
//!
//! The sets it is fitted on carry the blind alternatives of their queries, negatives included,
//! so what alternatives do to the evidence of a true nothing is part of the fit: with the fitted
//! weights no bundled negative (with its four alternatives) has an entry at 0.5 or more.

use serde::Serialize;

/// The features, in the order of [`WEIGHTS`].
pub const FEATURES: [&str; 5] = [
    "description_similarity",
    "best_similarity",
    "phrasings_share",
    "description_lexical",
    "inverse_rank",
];

/// Fitted by `scripts/fit-precedent.py` (2026-12-02) on the union of the labelled sets — the
/// bundled queries and negatives (4,165 entries), gdc-cptac (1,660) and mimic-omop (290), each
/// query with its blind alternatives, `kinds` and `limit` as a host sends them — each weight held
/// at or above zero. Fitted on the other two sets and measured on the third (leave one set
/// out): ECE 0.045 / 0.047 / 0.087; negatives with an entry >= 0.5: 0 of 28 (bundled); first
/// direct precedent >= 0.5: 0.826 / 0.854 / 0.600. The fit puts no weight on the description's
/// own words (`description_lexical`) and most on the best similarity of any phrasing and the
/// rank: five features, four of them used. `docs/perf/conversation.md` has the runs.
pub const INTERCEPT: f64 = -9.2636;
/// Per [`FEATURES`].
pub const WEIGHTS: [f64; 5] = [1.7830, 6.6361, 1.6355, 0.0, 3.8770];

/// The evidence of one entry.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EntryEvidence {
    /// Cosine similarity of the description (with its glossary expansion) to the entry.
    pub description_similarity: f64,
    /// The best cosine similarity of any phrasing (description or alternative) to the entry.
    pub best_similarity: f64,
    /// The share of the phrasings whose own list holds the entry (0–1).
    pub phrasings_share: f64,
    /// Whether the description's own words found it (BM25).
    pub description_lexical: bool,
    /// Its 1-based position in the fused list.
    pub rank: usize,
}

impl EntryEvidence {
    pub fn features(&self) -> [f64; 5] {
        [
            self.description_similarity.clamp(0.0, 1.0),
            self.best_similarity.clamp(0.0, 1.0),
            self.phrasings_share.clamp(0.0, 1.0),
            f64::from(u8::from(self.description_lexical)),
            1.0 / self.rank.max(1) as f64,
        ]
    }

    /// `precedent_confidence`, 0–1, rounded to 3 places.
    pub fn confidence(&self) -> f64 {
        let z = INTERCEPT
            + WEIGHTS
                .iter()
                .zip(self.features())
                .map(|(w, x)| w * x)
                .sum::<f64>();
        ((1.0 / (1.0 + (-z).exp())) * 1000.0).round() / 1000.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn evidence(description_similarity: f64, best_similarity: f64) -> EntryEvidence {
        EntryEvidence {
            description_similarity,
            best_similarity,
            phrasings_share: 0.2,
            description_lexical: false,
            rank: 1,
        }
    }

    #[test]
    fn more_similar_to_the_description_is_never_less_confident() {
        let low = evidence(0.30, 0.45).confidence();
        let high = evidence(0.60, 0.60).confidence();
        assert!(low < high, "{low} < {high}");
    }

    #[test]
    fn an_alternative_that_matches_better_lifts_less_than_the_description_would() {
        let by_alternative = evidence(0.30, 0.60).confidence();
        let by_description = evidence(0.60, 0.60).confidence();
        assert!(by_alternative < by_description);
    }
}
