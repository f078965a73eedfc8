//! Ontology drift: the LF-tag vocabulary an account defines (`ListLFTags`) against the ontology
//! file governance owns. A key or value on one side only is drift: tags the ontology cannot
//! resolve, or ontology values no column can carry yet. Reported, never corrected.

use std::collections::{BTreeMap, BTreeSet};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::catalog::boundary::{normalise, Obj, SchemaError};
use crate::catalog::Domain;
use crate::ontology::Ontology;

/// One account's vocabulary against the ontology. Values of a key that exists on one side only
/// are not repeated under `values_only_in_*`: the key entry covers them.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DomainDrift {
    pub domain: Domain,
    pub account_id: String,
    pub keys_only_in_account: Vec<String>,
    pub keys_only_in_ontology: Vec<String>,
    pub values_only_in_account: BTreeMap<String, Vec<String>>,
    pub values_only_in_ontology: BTreeMap<String, Vec<String>>,
}

impl DomainDrift {
    pub fn is_clean(&self) -> bool {
        self.keys_only_in_account.is_empty()
            && self.keys_only_in_ontology.is_empty()
            && self.values_only_in_account.is_empty()
            && self.values_only_in_ontology.is_empty()
    }
}

/// Drift of every domain read, in domain order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct DriftReport {
    pub ontology_version: String,
    pub domains: Vec<DomainDrift>,
}

impl DriftReport {
    pub fn has_drift(&self) -> bool {
        self.domains.iter().any(|d| !d.is_clean())
    }
}

/// Parses a (merged) `ListLFTags` response `{"LFTags": [{"TagKey", "TagValues": [...]}]}`
/// through the boundary's normalisation and checked accessors.
pub fn parse_vocabulary(
    raw: Value,
    what: &str,
) -> Result<BTreeMap<String, BTreeSet<String>>, SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    let mut vocabulary: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for entry in root.req_list("LFTags")? {
        let entry = Obj::new(entry, what)?;
        let key = entry.req_str("TagKey")?.to_string();
        let values = entry
            .req_list("TagValues")?
            .iter()
            .map(|v| {
                v.as_str()
                    .map(str::to_string)
                    .ok_or_else(|| SchemaError::Invalid {
                        what: what.to_string(),
                        problem: format!("a value of LF-tag '{key}' is not a string"),
                    })
            })
            .collect::<Result<BTreeSet<_>, _>>()?;
        if vocabulary.insert(key.clone(), values).is_some() {
            return Err(SchemaError::Invalid {
                what: what.to_string(),
                problem: format!("LF-tag '{key}' is listed twice"),
            });
        }
    }
    Ok(vocabulary)
}

/// Compares one account's vocabulary with the ontology.
pub fn compare(
    ontology: &Ontology,
    domain: &Domain,
    account_id: &str,
    account: &BTreeMap<String, BTreeSet<String>>,
) -> DomainDrift {
    let ours: BTreeMap<String, BTreeSet<String>> = ontology
        .keys
        .iter()
        .map(|k| {
            (
                k.key.0.clone(),
                k.values.iter().map(|v| v.value.0.clone()).collect(),
            )
        })
        .collect();
    let mut drift = DomainDrift {
        domain: domain.clone(),
        account_id: account_id.to_string(),
        keys_only_in_account: account
            .keys()
            .filter(|k| !ours.contains_key(*k))
            .cloned()
            .collect(),
        keys_only_in_ontology: ours
            .keys()
            .filter(|k| !account.contains_key(*k))
            .cloned()
            .collect(),
        values_only_in_account: BTreeMap::new(),
        values_only_in_ontology: BTreeMap::new(),
    };
    for (key, theirs) in account {
        let Some(mine) = ours.get(key) else { continue };
        let extra: Vec<String> = theirs.difference(mine).cloned().collect();
        if !extra.is_empty() {
            drift.values_only_in_account.insert(key.clone(), extra);
        }
        let missing: Vec<String> = mine.difference(theirs).cloned().collect();
        if !missing.is_empty() {
            drift.values_only_in_ontology.insert(key.clone(), missing);
        }
    }
    drift
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::path::Path;

    fn ontology() -> Ontology {
        Ontology::load(Path::new(crate::ontology::DEFAULT_ONTOLOGY_PATH)).unwrap()
    }

    fn vocabulary_of(o: &Ontology) -> Value {
        json!({"LFTags": o.keys.iter().map(|k| json!({
            "CatalogId": "1", "TagKey": k.key.0,
            "TagValues": k.values.iter().map(|v| v.value.0.clone()).collect::<Vec<_>>()
        })).collect::<Vec<_>>()})
    }

    #[test]
    fn an_account_that_defines_exactly_the_ontology_has_no_drift() {
        let o = ontology();
        let v = parse_vocabulary(vocabulary_of(&o), "t").unwrap();
        assert!(compare(&o, &Domain("policy".into()), "1", &v).is_clean());
    }

    #[test]
    fn keys_and_values_on_one_side_only_are_reported() {
        let o = ontology();
        let mut raw = vocabulary_of(&o);
        let tags = raw["LFTags"].as_array_mut().unwrap();
        tags.retain(|t| t["TagKey"] != "lawful_basis");
        tags[0]["TagValues"] = json!(["public", "internal", "confidential", "restricted"]);
        tags.push(json!({"TagKey": "cost_center", "TagValues": ["cc-1"]}));
        let v = parse_vocabulary(raw, "t").unwrap();
        let d = compare(&o, &Domain("claims".into()), "210000000002", &v);
        assert_eq!(
            d,
            DomainDrift {
                domain: Domain("claims".into()),
                account_id: "210000000002".into(),
                keys_only_in_account: vec!["cost_center".into()],
                keys_only_in_ontology: vec!["lawful_basis".into()],
                values_only_in_account: [(
                    "sensitivity".to_string(),
                    vec!["restricted".to_string()]
                )]
                .into(),
                values_only_in_ontology: [("sensitivity".to_string(), vec!["high".to_string()])]
                    .into(),
            }
        );
    }

    #[test]
    fn a_renamed_list_is_an_error() {
        assert!(matches!(
            parse_vocabulary(json!({"Tags": []}), "t"),
            Err(SchemaError::MissingKey { .. })
        ));
    }
}
