//! `resolve_lf_tag`: the ontology's `resolve()` as a tool. Unknown keys and values are errors
//! with the allowed set; a set with missing keys is an `input_required` ask, not an answer.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CacheScope, Context, InputRequired, ToolError};
use crate::ontology::Resolution;

pub const DESCRIPTION: &str =
    "Call this last, with the full tag set you and the user chose, to check it against the \
governance ontology (5 keys, 21 values; resource govcat://ontology/lf-tags) with the same \
resolve() the pipelines use. Pass tags: {key: value} for every key (sensitivity, residency, \
subject_type, retention, lawful_basis), lower case, exactly as the ontology spells them. A \
complete valid set comes back with the ontology version. An unknown key or value is an error \
listing the allowed keys or values: pick one of them. A set that lacks keys asks for each \
missing key with its allowed values (input_required): ask the user and call again with the full \
set.";

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Tag key to value, e.g. {"sensitivity": "high", "residency": "eu"}.
    pub tags: BTreeMap<String, String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    /// The validated set, one value per ontology key.
    pub resolved: BTreeMap<String, String>,
    pub ontology_version: String,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

pub enum Resolved {
    Complete(Output),
    Ask(InputRequired),
}

pub fn run(ctx: &Context, input: Input) -> Result<Resolved, ToolError> {
    let pairs: Vec<(String, String)> = input.tags.into_iter().collect();
    match ctx.ontology.resolve(&pairs)? {
        Resolution::Complete(set) => Ok(Resolved::Complete(Output {
            resolved: set.into_iter().map(|(k, v)| (k.0, v.0)).collect(),
            ontology_version: ctx.ontology.version.clone(),
            ttl_ms: super::TTL_FLOOR.as_millis() as u64,
            cache_scope: CacheScope::Public,
        })),
        Resolution::Incomplete { missing, .. } => Ok(Resolved::Ask(InputRequired {
            message: format!(
                "the tag set lacks {}; give one value for each",
                missing
                    .iter()
                    .map(|m| m.key.0.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            missing,
        })),
    }
}
