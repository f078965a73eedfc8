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
pub const FEATURES: [&str; 8] = [
    "description_similarity",
    "best_similarity",
    "phrasings_share",
    "description_lexical",
    "inverse_rank",
    "type_share",
    "name_match",
    "head_match",
];

/// How many of the search's first column hits [`type_shares`] looks at.
pub const TYPE_SHARE_HITS: usize = 10;

/// The kind of value a column type holds, as far as a description can ask for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeClass {
    Number,
    Flag,
    Time,
    Text,
}

/// The class of a catalog column type (`bigint`, `decimal(12,2)`, `timestamp`, `varchar(40)`,
/// `array<string>`): numbers, flags and times by name, everything else text.
pub fn type_class(data_type: &str) -> TypeClass {
    let t = data_type.trim().to_ascii_lowercase();
    let head = t
        .split(|c: char| !c.is_ascii_alphanumeric())
        .next()
        .unwrap_or("");
    match head {
        "tinyint" | "smallint" | "int" | "integer" | "bigint" | "long" | "short" | "float"
        | "double" | "real" | "decimal" | "numeric" | "number" => TypeClass::Number,
        "boolean" | "bool" => TypeClass::Flag,
        "date" | "timestamp" | "time" | "datetime" | "timestamptz" => TypeClass::Time,
        _ => TypeClass::Text,
    }
}

/// For a search's fused list (column types in rank order, `None` for an ontology value): the
/// share of its first [`TYPE_SHARE_HITS`] column hits that have each hit's class. What the
/// columns that match a description best mostly are is what the description asks for: an
/// integer "expected IBAN length" among string IBANs gets a low share. No word list: the
/// catalog's own columns are the evidence.
pub fn type_shares(types: &[Option<&str>]) -> impl Fn(Option<&str>) -> f64 + use<> {
    let classes: Vec<TypeClass> = types
        .iter()
        .flatten()
        .take(TYPE_SHARE_HITS)
        .map(|t| type_class(t))
        .collect();
    move |data_type: Option<&str>| match data_type {
        // An ontology value has no type: it shares nothing with the columns.
        None => 0.0,
        Some(t) => {
            let class = type_class(t);
            classes.iter().filter(|c| **c == class).count() as f64 / classes.len().max(1) as f64
        }
    }
}

/// Fitted by `scripts/fit-precedent.py` (2026-12-05) on the union of the labelled sets — the
/// bundled queries and negatives (4,165 entries), gdc-cptac (1,660) and mimic-omop (290), each
/// query with its blind alternatives, `kinds` and `limit` as a host sends them — each weight held
/// at or above zero. `name_match` (issue 43 part 4) separates direct precedents better on every
/// set: AUC 0.930 -> 0.949 / 0.900 -> 0.915 / 0.818 -> 0.854 (bundled / gdc-cptac / mimic-omop).
/// Leave one set out, before -> after: ECE 0.045 -> 0.042 / 0.047 -> 0.033 / 0.087 -> 0.144
/// (mimic-omop repeats `person_id`-like names in every table: 19 of its 65 name matches are
/// direct); first direct precedent >= 0.5: 0.823 -> 0.777 / 0.854 -> 0.841 / 0.600 -> 0.850;
/// negatives with an entry >= 0.5: 0 of 28 both. On the blind hosts' calls (12 runs, 4 sets)
/// the first direct precedent reaches 0.5 in 244 of 261 requests (223 before) and negatives
/// with an entry >= 0.5 fall from 2 to 1. `type_share` was measured and left at 0: every form
/// of it (share, >= 0.5, > 0.2, > 0, square root) made the bundled set's leave-one-out worse
/// (first direct >= 0.5 0.823 -> 0.71-0.78), so the rows keep it for the next fit only.
/// `head_match` (the name's last word is a phrasing's word: `iban` in `payee_iban`, not
/// `length` in `iban_length`) likewise (2026-12-05, same rows): held-out AUC 0.941 -> 0.942 /
/// 0.905 -> 0.914 / 0.855 -> 0.851, but ECE 0.042 -> 0.050 / 0.033 -> 0.041 / 0.144 -> 0.155 and
/// bundled first direct >= 0.5 0.777 -> 0.682; weight 0.
/// `docs/perf/conversation.md` has the runs.
pub const INTERCEPT: f64 = -8.2497;
/// Per [`FEATURES`].
pub const WEIGHTS: [f64; 8] = [2.2792, 4.4890, 1.2346, 0.0, 3.6679, 0.0, 2.3459, 0.0];

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
    /// The share of the search's first column hits whose type is of this entry's class
    /// ([`type_shares`]); 0 for an ontology value.
    pub type_share: f64,
    /// Whether a phrasing is the column's name, word for word (`payee_iban`, `payee iban`,
    /// `payeeIban` all match `payee_iban`).
    pub name_match: bool,
    /// Whether the last word of the column's name (its head: `iban` in `payee_iban`, `length`
    /// in `iban_length`) is a word of some phrasing.
    pub head_match: bool,
}

impl EntryEvidence {
    pub fn features(&self) -> [f64; 8] {
        [
            self.description_similarity.clamp(0.0, 1.0),
            self.best_similarity.clamp(0.0, 1.0),
            self.phrasings_share.clamp(0.0, 1.0),
            f64::from(u8::from(self.description_lexical)),
            1.0 / self.rank.max(1) as f64,
            self.type_share.clamp(0.0, 1.0),
            f64::from(u8::from(self.name_match)),
            f64::from(u8::from(self.head_match)),
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
            type_share: 1.0,
            name_match: false,
            head_match: false,
        }
    }

    #[test]
    fn more_similar_to_the_description_is_never_less_confident() {
        let low = evidence(0.30, 0.45).confidence();
        let high = evidence(0.60, 0.60).confidence();
        assert!(low < high, "{low} < {high}");
    }

    #[test]
    fn a_phrasing_that_spells_the_columns_name_lifts_it_and_the_same_evidence_without_does_not() {
        let spelled = EntryEvidence {
            name_match: true,
            ..evidence(0.45, 0.55)
        };
        let unspelled = evidence(0.45, 0.55);
        assert!(spelled.confidence() > unspelled.confidence() + 0.2);
        assert!(!unspelled.name_match);
    }

    #[test]
    fn a_number_among_text_columns_gets_a_small_type_share_and_a_text_column_a_large_one() {
        let share = type_shares(&[Some("string"), Some("varchar(34)"), Some("int"), None]);
        assert_eq!(share(Some("string")), 2.0 / 3.0);
        assert_eq!(share(Some("bigint")), 1.0 / 3.0);
        assert_eq!(share(Some("timestamp")), 0.0);
        assert_eq!(share(None), 0.0);
    }

    #[test]
    fn an_alternative_that_matches_better_lifts_less_than_the_description_would() {
        let by_alternative = evidence(0.30, 0.60).confidence();
        let by_description = evidence(0.60, 0.60).confidence();
        assert!(by_alternative < by_description);
    }
}
