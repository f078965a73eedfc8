//! The LF-tag vocabulary: five keys, twenty-one values, owned by governance in
//! `ontology/lf-tags.json`. This module loads it (refusing a malformed file with the position of
//! the problem) and implements `resolve()`, the one validation of a tag set that pipelines and
//! tools share. It never guesses: an unknown key or value is an error carrying the allowed set,
//! and a set with missing keys is `Incomplete`, a distinct outcome that asks for each one.
//!
//! The German→English [`glossary`] beside the ontology file is loaded and checked with it, so a
//! broken glossary is refused when the ontology is loaded; `index` turns it into query expansion.

pub mod glossary;

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Default location of the ontology file, relative to the working directory.
pub const DEFAULT_ONTOLOGY_PATH: &str = "ontology/lf-tags.json";

/// A tag key of the ontology, e.g. `sensitivity`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct TagKey(pub String);

/// A tag value, e.g. `high`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct TagValue(pub String);

impl fmt::Display for TagKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for TagValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// One permitted value with what it means and what it implies.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct ValueSpec {
    pub value: TagValue,
    pub description: String,
    pub implies: String,
}

/// One key with its closed list of values.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct KeySpec {
    pub key: TagKey,
    pub description: String,
    /// Whether `values` run from least to most restrictive (`sensitivity`, `retention`): then a
    /// proposal below the true value is *understated* and one above *overstated*, and `govcat
    /// eval` reports the two apart.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ordered: bool,
    pub values: Vec<ValueSpec>,
}

impl KeySpec {
    /// Position of `value` among this key's values, in file order.
    pub fn position(&self, value: &str) -> Option<usize> {
        self.values.iter().position(|v| v.value.0 == value)
    }
}

/// The whole vocabulary as stored in `ontology/lf-tags.json`.
#[derive(Debug, Clone, Serialize, Deserialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Ontology {
    pub version: String,
    pub owner: String,
    pub description: String,
    pub keys: Vec<KeySpec>,
    /// The German→English glossary beside the ontology file (`glossary-de-en.tsv`), verbatim,
    /// when there is one; snapshots carry it for query expansion.
    #[serde(skip)]
    #[schemars(skip)]
    pub glossary_text: Option<String>,
    /// The abbreviation lexicon beside the ontology file (`abbreviations.tsv`) or the built-in
    /// one, verbatim; `None` only for an ontology parsed from text.
    #[serde(skip)]
    #[schemars(skip)]
    pub abbreviations_text: Option<String>,
}

/// Why an ontology file or a tag set was refused.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum OntologyError {
    #[error("ontology file {path}: cannot be read ({reason}); check the path given with --ontology (default {DEFAULT_ONTOLOGY_PATH})")]
    Unreadable { path: PathBuf, reason: String },
    #[error("ontology file {path}: malformed at line {line}, column {column}: {problem}; fix the file (governance owns it) and restart")]
    Malformed {
        path: PathBuf,
        line: usize,
        column: usize,
        problem: String,
    },
    #[error("ontology file {path}: {problem}; fix the file (governance owns it) and restart")]
    Invalid { path: PathBuf, problem: String },
    #[error("unknown tag key '{key}'; allowed keys: {}", allowed.join(", "))]
    UnknownTagKey { key: String, allowed: Vec<String> },
    #[error("unknown value '{value}' for tag key '{key}'; allowed values: {}", allowed.join(", "))]
    UnknownTagValue {
        key: String,
        value: String,
        allowed: Vec<String>,
    },
    #[error("tag key '{key}' is given twice ({}); give exactly one value per key", values.join(", "))]
    ConflictingValues { key: String, values: Vec<String> },
}

impl OntologyError {
    /// The machine-readable kind, used as `error` in JSON error objects.
    pub fn kind(&self) -> &'static str {
        match self {
            OntologyError::Unreadable { .. } => "OntologyUnreadable",
            OntologyError::Malformed { .. } => "OntologyMalformed",
            OntologyError::Invalid { .. } => "OntologyInvalid",
            OntologyError::UnknownTagKey { .. } => "UnknownTagKey",
            OntologyError::UnknownTagValue { .. } => "UnknownTagValue",
            OntologyError::ConflictingValues { .. } => "ConflictingTagValues",
        }
    }
}

/// A key the caller did not give, with the values it may take.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MissingKey {
    pub key: TagKey,
    pub description: String,
    pub allowed: Vec<TagValue>,
}

/// The outcome of a successful `resolve()`: either a complete set, or what is still missing.
#[derive(Debug, Clone, PartialEq)]
pub enum Resolution {
    /// Every key of the ontology has exactly one permitted value.
    Complete(BTreeMap<TagKey, TagValue>),
    /// The given pairs are valid, but these keys are missing. Exposed as MCP `input_required`.
    Incomplete {
        given: BTreeMap<TagKey, TagValue>,
        missing: Vec<MissingKey>,
    },
}

impl Ontology {
    /// Loads and checks the ontology file. A malformed file is refused with its position.
    pub fn load(path: &Path) -> Result<Ontology, OntologyError> {
        let text = std::fs::read_to_string(path).map_err(|e| OntologyError::Unreadable {
            path: path.to_path_buf(),
            reason: e.to_string(),
        })?;
        let mut ontology = Self::parse(&text, path)?;
        ontology.glossary_text = glossary::Glossary::load_beside(path)
            .map_err(|problem| OntologyError::Invalid {
                path: path.to_path_buf(),
                problem,
            })?
            .map(|(_, text)| text);
        ontology.abbreviations_text = Some(
            glossary::Glossary::abbreviations_beside(path).map_err(|problem| {
                OntologyError::Invalid {
                    path: path.to_path_buf(),
                    problem,
                }
            })?,
        );
        Ok(ontology)
    }

    /// sha256 of what a snapshot is built from: the vocabulary (as parsed, so formatting does
    /// not count), the glossary and the abbreviation lexicon. Recorded in the manifest; the
    /// same checksum is the same ontology wherever its file lies.
    pub fn checksum(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut h = Sha256::new();
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(&serde_json::to_vec(self).unwrap_or_default());
        for text in [&self.glossary_text, &self.abbreviations_text] {
            match text {
                Some(t) => part(t.as_bytes()),
                None => part(b"\0none"),
            }
        }
        format!("{:x}", h.finalize())
    }

    /// The query expansion of this ontology: its glossary and abbreviation lexicon.
    pub fn glossary(&self) -> Result<glossary::Glossary, String> {
        glossary::Glossary::from_texts(
            self.glossary_text.as_deref(),
            self.abbreviations_text.as_deref(),
        )
    }

    /// Parses ontology text; `path` is only used in error messages.
    pub fn parse(text: &str, path: &Path) -> Result<Ontology, OntologyError> {
        let ontology: Ontology =
            serde_json::from_str(text).map_err(|e| OntologyError::Malformed {
                path: path.to_path_buf(),
                line: e.line(),
                column: e.column(),
                problem: e.to_string(),
            })?;
        ontology.check(path)?;
        Ok(ontology)
    }

    fn check(&self, path: &Path) -> Result<(), OntologyError> {
        let invalid = |problem: String| OntologyError::Invalid {
            path: path.to_path_buf(),
            problem,
        };
        if self.version.trim().is_empty() {
            return Err(invalid("`version` is empty".into()));
        }
        if self.keys.is_empty() {
            return Err(invalid("`keys` is empty".into()));
        }
        let mut seen = std::collections::BTreeSet::new();
        for key in &self.keys {
            if !is_identifier(&key.key.0) {
                return Err(invalid(format!(
                    "key '{}' must be lower-case letters, digits and '_'",
                    key.key
                )));
            }
            if !seen.insert(&key.key) {
                return Err(invalid(format!("key '{}' is defined twice", key.key)));
            }
            if key.values.is_empty() {
                return Err(invalid(format!("key '{}' has no values", key.key)));
            }
            let mut values = std::collections::BTreeSet::new();
            for v in &key.values {
                if !is_identifier(&v.value.0) {
                    return Err(invalid(format!(
                        "value '{}' of key '{}' must be lower-case letters, digits and '_'",
                        v.value, key.key
                    )));
                }
                if !values.insert(&v.value) {
                    return Err(invalid(format!(
                        "value '{}' of key '{}' is defined twice",
                        v.value, key.key
                    )));
                }
            }
        }
        Ok(())
    }

    /// The keys in file order.
    pub fn key_names(&self) -> Vec<String> {
        self.keys.iter().map(|k| k.key.0.clone()).collect()
    }

    /// The spec of one key.
    pub fn key(&self, key: &str) -> Option<&KeySpec> {
        self.keys.iter().find(|k| k.key.0 == key)
    }

    /// Position of `value` among the values of `key` when the key is ordered (least
    /// restrictive first); `None` for an unordered key or a value it lacks.
    pub fn order_of(&self, key: &str, value: &str) -> Option<usize> {
        self.key(key).filter(|k| k.ordered)?.position(value)
    }

    /// Whether `value` is a permitted value of `key`.
    pub fn contains(&self, key: &str, value: &str) -> bool {
        self.key(key)
            .is_some_and(|k| k.values.iter().any(|v| v.value.0 == value))
    }

    /// Number of values over all keys.
    pub fn value_count(&self) -> usize {
        self.keys.iter().map(|k| k.values.len()).sum()
    }

    /// Validates a tag set: unknown keys and values are errors carrying the allowed set; a
    /// set that lacks keys is [`Resolution::Incomplete`]. Pairs are given as the caller wrote
    /// them; nothing is corrected or guessed.
    pub fn resolve(&self, pairs: &[(String, String)]) -> Result<Resolution, OntologyError> {
        let mut given: BTreeMap<TagKey, TagValue> = BTreeMap::new();
        for (key, value) in pairs {
            let spec = self.key(key).ok_or_else(|| OntologyError::UnknownTagKey {
                key: key.clone(),
                allowed: self.key_names(),
            })?;
            if !spec.values.iter().any(|v| &v.value.0 == value) {
                return Err(OntologyError::UnknownTagValue {
                    key: key.clone(),
                    value: value.clone(),
                    allowed: spec.values.iter().map(|v| v.value.0.clone()).collect(),
                });
            }
            if let Some(previous) = given.get(&TagKey(key.clone())) {
                if &previous.0 != value {
                    return Err(OntologyError::ConflictingValues {
                        key: key.clone(),
                        values: vec![previous.0.clone(), value.clone()],
                    });
                }
            }
            given.insert(TagKey(key.clone()), TagValue(value.clone()));
        }
        let missing: Vec<MissingKey> = self
            .keys
            .iter()
            .filter(|k| !given.contains_key(&k.key))
            .map(|k| MissingKey {
                key: k.key.clone(),
                description: k.description.clone(),
                allowed: k.values.iter().map(|v| v.value.clone()).collect(),
            })
            .collect();
        if missing.is_empty() {
            Ok(Resolution::Complete(given))
        } else {
            Ok(Resolution::Incomplete { given, missing })
        }
    }
}

fn is_identifier(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
}

/// Parses `KEY=VALUE` arguments as given on the command line.
pub fn parse_pairs(args: &[String]) -> Result<Vec<(String, String)>, String> {
    args.iter()
        .map(|a| {
            a.split_once('=')
                .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                .ok_or_else(|| format!("'{a}' is not KEY=VALUE; write e.g. sensitivity=high"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ontology() -> Ontology {
        Ontology::load(Path::new(DEFAULT_ONTOLOGY_PATH)).expect("shipped ontology loads")
    }

    fn pairs(p: &[(&str, &str)]) -> Vec<(String, String)> {
        p.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn shipped_ontology_has_five_keys_and_twenty_one_values() {
        let o = ontology();
        assert_eq!(
            o.key_names(),
            vec![
                "sensitivity",
                "residency",
                "subject_type",
                "retention",
                "lawful_basis"
            ]
        );
        assert_eq!(o.value_count(), 21);
    }

    #[test]
    fn unknown_value_carries_the_allowed_values_of_its_key() {
        let err = ontology()
            .resolve(&pairs(&[("sensitivity", "hgh")]))
            .unwrap_err();
        assert_eq!(
            err,
            OntologyError::UnknownTagValue {
                key: "sensitivity".into(),
                value: "hgh".into(),
                allowed: vec![
                    "public".into(),
                    "internal".into(),
                    "confidential".into(),
                    "high".into()
                ],
            }
        );
    }

    #[test]
    fn unknown_key_carries_the_allowed_keys() {
        let err = ontology()
            .resolve(&pairs(&[("sensitvity", "high")]))
            .unwrap_err();
        assert_eq!(err.kind(), "UnknownTagKey");
        match err {
            OntologyError::UnknownTagKey { key, allowed } => {
                assert_eq!(key, "sensitvity");
                assert_eq!(allowed.len(), 5);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn missing_keys_are_an_incomplete_outcome_not_an_error() {
        let r = ontology()
            .resolve(&pairs(&[("sensitivity", "high"), ("residency", "eu")]))
            .unwrap();
        match r {
            Resolution::Incomplete { given, missing } => {
                assert_eq!(given.len(), 2);
                let keys: Vec<&str> = missing.iter().map(|m| m.key.0.as_str()).collect();
                assert_eq!(keys, vec!["subject_type", "retention", "lawful_basis"]);
                assert_eq!(
                    missing[1].allowed,
                    vec![
                        TagValue("30d".into()),
                        TagValue("1y".into()),
                        TagValue("7y".into()),
                        TagValue("10y".into())
                    ]
                );
            }
            other => panic!("expected incomplete, got {other:?}"),
        }
    }

    #[test]
    fn a_full_valid_set_resolves_complete() {
        let r = ontology()
            .resolve(&pairs(&[
                ("sensitivity", "high"),
                ("residency", "eu"),
                ("subject_type", "customer"),
                ("retention", "10y"),
                ("lawful_basis", "contract"),
            ]))
            .unwrap();
        assert!(matches!(r, Resolution::Complete(ref m) if m.len() == 5));
    }

    #[test]
    fn two_different_values_for_one_key_are_refused() {
        let err = ontology()
            .resolve(&pairs(&[("residency", "eu"), ("residency", "global")]))
            .unwrap_err();
        assert_eq!(err.kind(), "ConflictingTagValues");
    }

    #[test]
    fn malformed_file_is_refused_with_its_position() {
        let err = Ontology::parse(
            "{\n  \"version\": \"1\",\n  \"keys\": [,]\n}",
            Path::new("x.json"),
        )
        .unwrap_err();
        match err {
            OntologyError::Malformed { line, column, .. } => {
                assert_eq!((line, column), (3, 12));
            }
            other => panic!("expected malformed, got {other:?}"),
        }
    }

    #[test]
    fn duplicate_value_in_file_is_refused() {
        let text = r#"{"version":"1","owner":"o","description":"d","keys":[{"key":"a","description":"d",
            "values":[{"value":"x","description":"d","implies":"i"},{"value":"x","description":"d","implies":"i"}]}]}"#;
        let err = Ontology::parse(text, Path::new("x.json")).unwrap_err();
        assert_eq!(err.kind(), "OntologyInvalid");
    }
}
