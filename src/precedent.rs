//! How likely a `find_precedents` entry is a *direct precedent* (the same kind of data as the
//! description, a column whose tags an engineer would copy): `precedent_confidence`, a logistic
//! map from an entry's evidence to the share of such entries that were graded 2 on labelled
//! query sets. Unlike `calibration` (fitted per catalog at index time, on tagged columns), this
//! map is fitted once on every labelled set govcat has — the bundled queries and negatives and
//! the external retrieval sets, each with its blind alternatives — and checked on the sets it was
//! not fitted on (`scripts/fit-precedent.py`, figures in `docs/perf/precedent-confidence.md`).
//!
//! Its evidence is chosen so that alternatives cannot lift a true nothing: the description's
//! own similarity to the entry carries most of the weight, and the best similarity of any
//! phrasing enters only as a second feature whose weight the fit sets.

use serde::Serialize;

/// The features, in the order of [`WEIGHTS`].
pub const FEATURES: [&str; 5] = [
    "description_similarity",
    "best_similarity",
    "phrasings_share",
    "description_lexical",
    "inverse_rank",
];

/// Fitted by `scripts/fit-precedent.py` on the union of the labelled sets (see the module
/// docs); each weight held at or above zero (more evidence never lowers the confidence).
pub const INTERCEPT: f64 = -7.0;
/// Per [`FEATURES`].
pub const WEIGHTS: [f64; 5] = [9.0, 2.0, 1.0, 0.5, 1.0];

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
