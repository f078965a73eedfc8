//! The parse boundary: the one place where upstream JSON (Glue `GetTable`, Lake Formation
//! `GetResourceLFTags` / `ListPermissions`, govcat's domain file) becomes typed records.
//! Every reader — the `dir` source today, the `aws` source later — goes through it.
//!
//! Two steps, always in this order: key spelling is normalised (`TagKey`, `tagKey`, `tag_key`
//! and `tagkey` are one key; two keys of one object that collide after normalisation are an
//! error), then the structure the code touches is confirmed. A missing key raises
//! [`SchemaError`] naming the keys that *are* present. There are no silent `unwrap_or_default`
//! fallbacks on this path: an absent list is an error, never an empty list.

use serde_json::{Map, Value};

/// Objects whose keys are data (user-defined), not schema: their keys are kept verbatim.
const VERBATIM_MAPS: &[&str] = &["parameters"];

/// A structural problem in an upstream response.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum SchemaError {
    #[error("{what}: expected key '{expected}' is missing; keys present: [{}]", present.join(", "))]
    MissingKey {
        what: String,
        expected: String,
        present: Vec<String>,
    },
    #[error("{what}: key '{key}' should be {expected} but is {found}")]
    WrongType {
        what: String,
        key: String,
        expected: &'static str,
        found: &'static str,
    },
    #[error("{what}: keys {} collide after spelling normalisation; the response is ambiguous", keys.join(" and "))]
    KeyCollision { what: String, keys: Vec<String> },
    #[error("{what}: {problem}")]
    Invalid { what: String, problem: String },
}

/// Canonical spelling of a key: lower case without `_` or `-`.
pub fn canonical_key(key: &str) -> String {
    key.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

/// Rewrites every object key of `value` to its canonical spelling (recursively), refusing
/// collisions. Keys of data maps such as Glue `Parameters` are kept as they are.
pub fn normalise(value: Value, what: &str) -> Result<Value, SchemaError> {
    match value {
        Value::Object(map) => {
            let mut out = Map::new();
            let mut origin: std::collections::BTreeMap<String, String> = Default::default();
            for (key, inner) in map {
                let canon = canonical_key(&key);
                if let Some(first) = origin.get(&canon) {
                    return Err(SchemaError::KeyCollision {
                        what: what.to_string(),
                        keys: vec![first.clone(), key],
                    });
                }
                let inner = if VERBATIM_MAPS.contains(&canon.as_str()) {
                    inner
                } else {
                    normalise(inner, what)?
                };
                origin.insert(canon.clone(), key);
                out.insert(canon, inner);
            }
            Ok(Value::Object(out))
        }
        Value::Array(items) => items
            .into_iter()
            .map(|v| normalise(v, what))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array),
        other => Ok(other),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// A normalised JSON object with checked accessors. `what` names the response in errors.
#[derive(Debug, Clone, Copy)]
pub struct Obj<'a> {
    map: &'a Map<String, Value>,
    what: &'a str,
}

impl<'a> Obj<'a> {
    /// Confirms that `value` is an object.
    pub fn new(value: &'a Value, what: &'a str) -> Result<Obj<'a>, SchemaError> {
        match value {
            Value::Object(map) => Ok(Obj { map, what }),
            other => Err(SchemaError::Invalid {
                what: what.to_string(),
                problem: format!("expected an object, found {}", type_name(other)),
            }),
        }
    }

    /// The keys present, for error messages.
    pub fn present(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    pub fn has(&self, key: &str) -> bool {
        self.map.contains_key(&canonical_key(key))
    }

    fn missing(&self, key: &str) -> SchemaError {
        SchemaError::MissingKey {
            what: self.what.to_string(),
            expected: canonical_key(key),
            present: self.present(),
        }
    }

    fn wrong(&self, key: &str, expected: &'static str, found: &Value) -> SchemaError {
        SchemaError::WrongType {
            what: self.what.to_string(),
            key: canonical_key(key),
            expected,
            found: type_name(found),
        }
    }

    /// A value that must be there.
    pub fn req(&self, key: &str) -> Result<&'a Value, SchemaError> {
        self.map
            .get(&canonical_key(key))
            .ok_or_else(|| self.missing(key))
    }

    /// A value that may legitimately be absent (documented as optional by the upstream API).
    /// Absent and `null` both read as `None`.
    pub fn opt(&self, key: &str) -> Option<&'a Value> {
        self.map.get(&canonical_key(key)).filter(|v| !v.is_null())
    }

    pub fn req_str(&self, key: &str) -> Result<&'a str, SchemaError> {
        let v = self.req(key)?;
        v.as_str().ok_or_else(|| self.wrong(key, "a string", v))
    }

    pub fn opt_str(&self, key: &str) -> Result<Option<&'a str>, SchemaError> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_str()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a string", v)),
        }
    }

    pub fn req_list(&self, key: &str) -> Result<&'a Vec<Value>, SchemaError> {
        let v = self.req(key)?;
        v.as_array().ok_or_else(|| self.wrong(key, "a list", v))
    }

    pub fn opt_list(&self, key: &str) -> Result<Option<&'a Vec<Value>>, SchemaError> {
        match self.opt(key) {
            None => Ok(None),
            Some(v) => v
                .as_array()
                .map(Some)
                .ok_or_else(|| self.wrong(key, "a list", v)),
        }
    }

    pub fn req_obj(&self, key: &str) -> Result<Obj<'a>, SchemaError> {
        let v = self.req(key)?;
        match v {
            Value::Object(map) => Ok(Obj {
                map,
                what: self.what,
            }),
            other => Err(self.wrong(key, "an object", other)),
        }
    }

    pub fn opt_obj(&self, key: &str) -> Result<Option<Obj<'a>>, SchemaError> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::Object(map)) => Ok(Some(Obj {
                map,
                what: self.what,
            })),
            Some(other) => Err(self.wrong(key, "an object", other)),
        }
    }

    /// A string-or-number timestamp (the AWS CLI writes ISO 8601, SDK dumps epoch seconds).
    pub fn opt_time(&self, key: &str) -> Result<Option<String>, SchemaError> {
        match self.opt(key) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(Value::Number(n)) => Ok(Some(n.to_string())),
            Some(other) => Err(self.wrong(key, "a timestamp", other)),
        }
    }
}

/// One Lake Formation `LFTagPair`: a key with the value assigned to a resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LfTagPair {
    pub key: String,
    pub value: String,
}

/// One Glue column from `StorageDescriptor.Columns` or `PartitionKeys`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlueColumn {
    pub name: String,
    pub data_type: String,
    pub comment: Option<String>,
    pub is_partition_key: bool,
}

/// The parts of a Glue `GetTable` response that govcat uses.
#[derive(Debug, Clone, PartialEq)]
pub struct GlueTable {
    pub name: String,
    pub database: String,
    pub owner: Option<String>,
    pub description: Option<String>,
    pub update_time: Option<String>,
    pub parameters: Map<String, Value>,
    pub columns: Vec<GlueColumn>,
}

/// Parses a `GetTable` response (`{"Table": {...}}`).
pub fn parse_get_table(raw: Value, what: &str) -> Result<GlueTable, SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    let table = root.req_obj("Table")?;
    let sd = table.req_obj("StorageDescriptor")?;
    let mut columns = Vec::new();
    for (list, is_partition_key) in [
        (Some(sd.req_list("Columns")?), false),
        (table.opt_list("PartitionKeys")?, true),
    ] {
        for c in list.into_iter().flatten() {
            let c = Obj::new(c, what)?;
            columns.push(GlueColumn {
                name: c.req_str("Name")?.to_string(),
                data_type: c.req_str("Type")?.to_string(),
                comment: c.opt_str("Comment")?.map(str::to_string),
                is_partition_key,
            });
        }
    }
    let parameters = match table.opt_obj("Parameters")? {
        Some(p) => p.map.clone(),
        None => Map::new(),
    };
    Ok(GlueTable {
        name: table.req_str("Name")?.to_string(),
        database: table.req_str("DatabaseName")?.to_string(),
        owner: table.opt_str("Owner")?.map(str::to_string),
        description: table.opt_str("Description")?.map(str::to_string),
        update_time: table.opt_time("UpdateTime")?,
        parameters,
        columns,
    })
}

fn parse_pairs(list: &[Value], what: &str) -> Result<Vec<LfTagPair>, SchemaError> {
    list.iter()
        .map(|p| {
            let p = Obj::new(p, what)?;
            let key = p.req_str("TagKey")?.to_string();
            let values = p.req_list("TagValues")?;
            let value = match values.as_slice() {
                [Value::String(v)] => v.clone(),
                other => {
                    return Err(SchemaError::Invalid {
                        what: what.to_string(),
                        problem: format!(
                            "tag key '{key}' must carry exactly one string value on a resource, found {}",
                            Value::Array(other.to_vec())
                        ),
                    })
                }
            };
            Ok(LfTagPair { key, value })
        })
        .collect()
}

/// Parses the `LFTagOnDatabase` list of a `GetResourceLFTags` response for a database.
pub fn parse_database_tags(raw: Value, what: &str) -> Result<Vec<LfTagPair>, SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    parse_pairs(root.req_list("LFTagOnDatabase")?, what)
}

/// Parses the `LFTagsOnTable` list of a `GetResourceLFTags` response for a table.
pub fn parse_table_tags(raw: Value, what: &str) -> Result<Vec<LfTagPair>, SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    parse_pairs(root.req_list("LFTagsOnTable")?, what)
}

/// Column tags of a `GetResourceLFTags` response for a table with columns: the column's own
/// tags only (Lake Formation does not return inherited ones here).
pub type ColumnTags = Vec<(String, Vec<LfTagPair>)>;

/// What a recorded call answered: the response, or the service error it raised.
#[derive(Debug, Clone, PartialEq)]
pub enum Recorded<T> {
    Ok(T),
    /// `AccessDeniedException`: the reader role may not see these tags.
    AccessDenied(String),
}

/// Parses a recorded error response (`{"__type": "...", "Message": "..."}`), if it is one.
/// Only `AccessDeniedException` is an expected outcome; any other error type is refused.
fn recorded_error(value: &Value, what: &str) -> Result<Option<String>, SchemaError> {
    let root = Obj::new(value, what)?;
    match root.opt_str("__type")? {
        None => Ok(None),
        Some(t) if t.ends_with("AccessDeniedException") => {
            Ok(Some(root.opt_str("Message")?.unwrap_or(t).to_string()))
        }
        Some(t) => Err(SchemaError::Invalid {
            what: what.to_string(),
            problem: format!(
                "recorded error '{t}' is not an outcome govcat can represent; re-record the table"
            ),
        }),
    }
}

pub fn parse_column_tags(raw: Value, what: &str) -> Result<Recorded<ColumnTags>, SchemaError> {
    let value = normalise(raw, what)?;
    if let Some(message) = recorded_error(&value, what)? {
        return Ok(Recorded::AccessDenied(message));
    }
    let root = Obj::new(&value, what)?;
    root.req_list("LFTagsOnColumns")?
        .iter()
        .map(|c| {
            let c = Obj::new(c, what)?;
            let name = c.req_str("Name")?.to_string();
            let tags = parse_pairs(c.req_list("LFTags")?, what)?;
            Ok((name, tags))
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Recorded::Ok)
}

/// The domain file govcat keeps next to the recorded responses (no AWS API holds it).
#[derive(Debug, Clone, PartialEq)]
pub struct DomainRecord {
    pub name: String,
    pub account_id: String,
    pub owner: String,
    pub description: String,
}

pub fn parse_domain(raw: Value, what: &str) -> Result<DomainRecord, SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    Ok(DomainRecord {
        name: root.req_str("Name")?.to_string(),
        account_id: root.req_str("AccountId")?.to_string(),
        owner: root.req_str("Owner")?.to_string(),
        description: root.req_str("Description")?.to_string(),
    })
}

/// One clause of an LF-tag policy expression: the key must carry one of `values`.
#[derive(
    Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema,
)]
pub struct Clause {
    pub key: String,
    pub values: Vec<String>,
}

/// An LF-tag policy grant of a role in one catalog (account).
#[derive(Debug, Clone, PartialEq)]
pub struct TagPolicyGrant {
    pub principal: String,
    pub catalog_id: String,
    pub resource_type: String,
    pub expression: Vec<Clause>,
    pub permissions: Vec<String>,
}

/// Parses a `ListPermissions` response, keeping the LF-tag policy grants; grants on named
/// resources are counted and returned separately so a caller can say they were not evaluated.
pub fn parse_permissions(
    raw: Value,
    what: &str,
) -> Result<(Vec<TagPolicyGrant>, usize), SchemaError> {
    let value = normalise(raw, what)?;
    let root = Obj::new(&value, what)?;
    let mut grants = Vec::new();
    let mut other = 0;
    for entry in root.req_list("PrincipalResourcePermissions")? {
        let entry = Obj::new(entry, what)?;
        let principal = entry
            .req_obj("Principal")?
            .req_str("DataLakePrincipalIdentifier")?
            .to_string();
        let resource = entry.req_obj("Resource")?;
        let Some(policy) = resource.opt_obj("LFTagPolicy")? else {
            other += 1;
            continue;
        };
        let clauses = policy.req_list("Expression")?;
        if clauses.is_empty() {
            return Err(SchemaError::Invalid {
                what: what.to_string(),
                problem: "an LF-tag policy with an empty Expression (a named expression) cannot be evaluated; re-record with the expression resolved".into(),
            });
        }
        let expression = clauses
            .iter()
            .map(|c| {
                let c = Obj::new(c, what)?;
                let values = c
                    .req_list("TagValues")?
                    .iter()
                    .map(|v| {
                        v.as_str().map(str::to_string).ok_or(SchemaError::Invalid {
                            what: what.to_string(),
                            problem: "TagValues must be strings".into(),
                        })
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Clause {
                    key: c.req_str("TagKey")?.to_string(),
                    values,
                })
            })
            .collect::<Result<Vec<_>, SchemaError>>()?;
        let permissions = entry
            .req_list("Permissions")?
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect();
        grants.push(TagPolicyGrant {
            principal,
            catalog_id: policy.req_str("CatalogId")?.to_string(),
            resource_type: policy.req_str("ResourceType")?.to_string(),
            expression,
            permissions,
        });
    }
    Ok((grants, other))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn column_tags_response(key_spelling: &str) -> Value {
        json!({"LFTagsOnColumns": [
            {"Name": "iban", "LFTags": [{"CatalogId": "1", key_spelling: "sensitivity", "TagValues": ["high"]}]}
        ]})
    }

    #[test]
    fn three_key_spellings_give_the_same_result() {
        let expected = parse_column_tags(column_tags_response("TagKey"), "t").unwrap();
        for spelling in ["tagKey", "tag_key", "tagkey"] {
            assert_eq!(
                parse_column_tags(column_tags_response(spelling), "t").unwrap(),
                expected,
                "spelling {spelling}"
            );
        }
        assert_eq!(
            expected,
            Recorded::Ok(vec![(
                "iban".to_string(),
                vec![LfTagPair {
                    key: "sensitivity".into(),
                    value: "high".into()
                }]
            )])
        );
    }

    #[test]
    fn colliding_spellings_are_an_error() {
        let raw = json!({"LFTagsOnColumns": [
            {"Name": "iban", "LFTags": [{"TagKey": "sensitivity", "tag_key": "residency", "TagValues": ["high"]}]}
        ]});
        let err = parse_column_tags(raw, "t").unwrap_err();
        assert_eq!(
            err,
            SchemaError::KeyCollision {
                what: "t".into(),
                keys: vec!["TagKey".into(), "tag_key".into()]
            }
        );
    }

    #[test]
    fn renamed_upstream_key_is_an_error_naming_present_keys_not_an_empty_list() {
        let raw = json!({"LFTagsOnColumnz": []});
        let err = parse_column_tags(raw, "columns of policy.customer").unwrap_err();
        assert_eq!(
            err,
            SchemaError::MissingKey {
                what: "columns of policy.customer".into(),
                expected: "lftagsoncolumns".into(),
                present: vec!["lftagsoncolumnz".into()]
            }
        );
    }

    #[test]
    fn present_but_empty_column_list_is_an_empty_list() {
        let raw = json!({"LFTagsOnColumns": []});
        assert_eq!(parse_column_tags(raw, "t").unwrap(), Recorded::Ok(vec![]));
    }

    #[test]
    fn glue_table_without_columns_list_is_an_error() {
        let raw =
            json!({"Table": {"Name": "t", "DatabaseName": "d", "StorageDescriptor": {"Cols": []}}});
        let err = parse_get_table(raw, "t").unwrap_err();
        assert!(
            matches!(err, SchemaError::MissingKey { ref expected, .. } if expected == "columns")
        );
    }

    #[test]
    fn parameters_keep_their_own_spelling() {
        let raw = json!({"Table": {"Name": "t", "DatabaseName": "d",
            "Parameters": {"freshness_sla": "24h", "FreshnessSla": "1h"},
            "StorageDescriptor": {"Columns": []}}});
        let t = parse_get_table(raw, "t").unwrap();
        assert_eq!(t.parameters.get("freshness_sla"), Some(&json!("24h")));
    }

    #[test]
    fn access_denied_is_recorded_not_empty() {
        let raw = json!({"__type": "AccessDeniedException", "Message": "no DESCRIBE"});
        assert_eq!(
            parse_column_tags(raw, "t").unwrap(),
            Recorded::AccessDenied("no DESCRIBE".into())
        );
    }

    #[test]
    fn multi_valued_resource_tag_is_refused() {
        let raw =
            json!({"LFTagsOnTable": [{"TagKey": "residency", "TagValues": ["eu", "global"]}]});
        assert!(matches!(
            parse_table_tags(raw, "t").unwrap_err(),
            SchemaError::Invalid { .. }
        ));
    }
}
