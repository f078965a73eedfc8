//! `resolve_lf_tag`: the ontology's `resolve()` as a tool. Unknown keys and values are errors
//! with the allowed set; a set with missing keys is an `input_required` ask, not an answer.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use serde_json::{json, Map, Value};

use super::{CacheScope, Context, InputRequired, ToolError};
use crate::ontology::{Ontology, Resolution};

pub const DESCRIPTION: &str = "Checks a tag set against the governance ontology with the \
same resolve() the pipelines use. Call it last, with the full set you and the user chose. Pass \
tags: one value per key, spelled exactly as the tags schema's enums (list_domains with \
include_ontology true lists them too). Returns the resolved set with the ontology version. An \
unknown key or value is an error listing the allowed ones: pick one. A key left out or null is \
asked for with its allowed values (input_required): ask the user, then call again with the \
full set.";

/// What the schema says of `tags` until [`input_schema`] renders it from the loaded ontology
/// ([`tags_description`]): the generated schema carries it, the published one never does.
pub const TAGS_DESCRIPTION: &str = "One value per ontology key.";

/// What the published schema says of `tags`, its example taken from the loaded ontology (its
/// first two keys, each with its first value), so that it holds for any catalog's vocabulary.
pub fn tags_description(ontology: &Ontology) -> String {
    let example: Map<String, Value> = ontology
        .keys
        .iter()
        .filter_map(|k| Some((k.key.0.clone(), json!(k.values.first()?.value.0))))
        .take(2)
        .collect();
    format!(
        "One value per ontology key, e.g. {}; a key omitted or null is not chosen yet (the \
         answer asks for it).",
        Value::Object(example)
    )
}

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// The tag set (see [`TAGS_DESCRIPTION`], what the schema says). A key given as null is a key
    /// not chosen yet (what a strict client sends for it), asked for like a missing one; keys and
    /// values outside the ontology are refused with the allowed set, so the schema published for
    /// `tags` is the ontology's own ([`input_schema`]).
    #[schemars(description = TAGS_DESCRIPTION)]
    pub tags: BTreeMap<String, Option<String>>,
}

/// resolve_lf_tag's published input schema: `generated` with `tags` as the ontology's closed
/// vocabulary, one property per key (its description, its values as an enum, or null for a key
/// not chosen yet), so that a strict client can send every key and a model can spell every
/// value before its first call.
pub fn input_schema(ontology: &Ontology, mut generated: Value) -> Value {
    let properties: Map<String, Value> = ontology
        .keys
        .iter()
        .map(|k| {
            let values: Vec<&str> = k.values.iter().map(|v| v.value.0.as_str()).collect();
            let description = k.description.clone();
            let schema = json!({
                "anyOf": [
                    {"type": "string", "enum": values, "description": description},
                    {"type": "null"}
                ]
            });
            (k.key.0.clone(), schema)
        })
        .collect();
    if let Some(tags) = generated.pointer_mut("/properties/tags") {
        let description = tags_description(ontology);
        *tags = json!({"description": description, "type": "object", "properties": properties});
    }
    generated
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
    let pairs: Vec<(String, String)> = input
        .tags
        .into_iter()
        .filter_map(|(k, v)| Some((k, v?)))
        .collect();
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A catalog with another vocabulary than the demo's (two keys).
    const SAAS: &str = r#"{"version": "2", "owner": "gov", "description": "SaaS tags",
        "keys": [
            {"key": "data_class", "description": "What kind of data.", "values": [
                {"value": "pii", "description": "Personal.", "implies": "masking"},
                {"value": "public", "description": "Open.", "implies": "none"}]},
            {"key": "region", "description": "Where it is stored.", "values": [
                {"value": "eu_west_1", "description": "Ireland.", "implies": "EU"}]}
        ]}"#;

    #[test]
    fn the_tag_schema_is_the_loaded_ontologys_keys_with_their_values() {
        let ontology = Ontology::parse(SAAS, std::path::Path::new("saas.json")).unwrap();
        let schema = input_schema(&ontology, super::super::spec::input_schema::<Input>());
        let tags = &schema["properties"]["tags"];
        assert_eq!(tags["type"], "object");
        assert_eq!(
            tags["description"],
            "One value per ontology key, e.g. {\"data_class\":\"pii\",\"region\":\"eu_west_1\"}; \
             a key omitted or null is not chosen yet (the answer asks for it)."
        );
        assert_eq!(
            tags["properties"],
            json!({
                "data_class": {"anyOf": [
                    {"type": "string", "enum": ["pii", "public"], "description": "What kind of data."},
                    {"type": "null"}]},
                "region": {"anyOf": [
                    {"type": "string", "enum": ["eu_west_1"], "description": "Where it is stored."},
                    {"type": "null"}]}
            })
        );
        assert_eq!(schema["required"], json!(["tags"]));
    }
}
