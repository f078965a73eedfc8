//! The tool list every transport publishes, from one definition: each tool's name, title,
//! description and schemas (generated from its `Input` and `Output` types in the portable form
//! strict clients take), the server instructions rendered in the served ontology's vocabulary,
//! and the output check every answer passes.

use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Map, Value};

use super::{
    check_grant, find_precedents, get_dataset, list_domains, resolve, suggest_tags, ToolError,
};
use crate::ontology::Ontology;

/// The static description of a tool, shared by every transport.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema")]
    pub output_schema: Value,
}

/// The one place schemas are generated: JSON Schema 2020-12 that strict and single-`type`
/// clients take as it is.
/// - Only the formats the draft defines: schemars writes OpenAPI-style formats for numbers
///   (`uint32`, `uint`, `int64`, `double`), which validators reject or warn about as unknown;
///   the bound they imply is already there as `minimum: 0` for unsigned integers.
/// - A nullable field (`type: [T, "null"]`) is written `anyOf: [{type: T}, {type: "null"}]`
///   ([`NullableAsAnyOf`]): the same instances, in a form every client can map.
fn schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(schemars::transform::RestrictFormats::default())
        .with_transform(NullableAsAnyOf)
        .into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null)
}

/// Keywords that describe a schema rather than constrain it: they stay on the outer schema
/// when [`NullableAsAnyOf`] moves the constraints into the non-null branch.
const ANNOTATIONS: [&str; 7] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Rewrites `{"type": [T, "null"], ...constraints}` as
/// `{"anyOf": [{"type": T, ...constraints}, {"type": "null"}]}`, annotations kept outside.
#[derive(Debug, Clone, Copy)]
pub struct NullableAsAnyOf;

impl schemars::transform::Transform for NullableAsAnyOf {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let Some(Value::Array(types)) = obj.get("type") else {
            return;
        };
        let null = Value::String("null".into());
        let [first, second] = types.as_slice() else {
            return;
        };
        let non_null = match (first == &null, second == &null) {
            (false, true) => first.clone(),
            (true, false) => second.clone(),
            _ => return,
        };
        let mut branch = Map::new();
        branch.insert("type".into(), non_null);
        let constraints: Vec<String> = obj
            .keys()
            .filter(|k| *k != "type" && !ANNOTATIONS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in constraints {
            if let Some(v) = obj.remove(&key) {
                branch.insert(key, v);
            }
        }
        obj.remove("type");
        obj.insert(
            "anyOf".into(),
            json!([Value::Object(branch), {"type": "null"}]),
        );
    }
}

/// The published form of an input schema: what every client stack we test converts for its
/// model without losing an argument's meaning (`scripts/test-mcp.sh`, frameworks suite).
/// - `$ref`s are inlined and `$defs` dropped: strict converters (OpenAI Agents) refuse a bare
///   `$ref`, and Gemini's replaces the property's description with the target's. The property's
///   own keywords win over the target's.
/// - No boolean `additionalProperties`: Gemini's converter takes the keyword's value for a
///   schema and crashes on `false`; strict converters close every object themselves. The server
///   still refuses an unknown argument by name (`deny_unknown_fields` on every `Input`).
/// - Every object has `properties` (LangChain's `StructuredTool.args` reads it).
/// - A nullable property's description is on its non-null branch only: Gemini unwraps
///   `anyOf: [X, null]` to `X` and keeps only what `X` says, and every other stack shows the
///   branch as it is (written once, not twice: a blind host counted the copies).
/// - The root's `title` (the Rust type's name, `Input`) is dropped: it tells a model nothing.
pub fn portable_input(mut schema: Value) -> Value {
    let defs = schema
        .as_object_mut()
        .and_then(|root| {
            root.remove("title");
            root.remove("$defs")
        })
        .and_then(|d| d.as_object().cloned())
        .unwrap_or_default();
    portable_node(&mut schema, &defs);
    schema
}

fn portable_node(node: &mut Value, defs: &Map<String, Value>) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if let Some(Value::String(reference)) = obj.remove("$ref") {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| defs.get(name))
            .and_then(Value::as_object);
        for (k, v) in target.into_iter().flatten() {
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if obj
        .get("additionalProperties")
        .is_some_and(Value::is_boolean)
    {
        obj.remove("additionalProperties");
    }
    if obj.get("type") == Some(&json!("object")) {
        obj.entry("properties").or_insert_with(|| json!({}));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for prop in props.values_mut() {
            portable_node(prop, defs);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            portable_node(sub, defs);
        }
    }
    let nullable = obj
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| branches.len() == 2 && branches.contains(&json!({"type": "null"})));
    let description = if nullable {
        obj.remove("description")
    } else {
        None
    };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            portable_node(branch, defs);
            if let (Some(d), Some(b)) = (&description, branch.as_object_mut()) {
                if b.get("type") != Some(&json!("null")) {
                    b.insert("description".into(), d.clone());
                }
            }
        }
    }
}

/// A tool's published input schema: generated from its `Input` type, in the portable form.
pub(crate) fn input_schema<T: JsonSchema>() -> Value {
    portable_input(schema::<T>())
}

/// A validator for one of govcat's schemas under JSON Schema 2020-12 that checks formats and
/// refuses a schema with a format the draft does not define (what strict clients do).
pub fn strict_validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// The ontology the tool list speaks until a [`Context`] names one: the shipped file (the
/// default `--ontology`), compiled in like the built-in abbreviations.
const BUILT_IN_ONTOLOGY: &str = include_str!("../../ontology/lf-tags.json");

/// The tool list of the ontology last published, the instructions that go with it, and that
/// ontology's vocabulary.
struct Published {
    vocabulary: String,
    specs: &'static [ToolSpec],
    instructions: &'static str,
}

static PUBLISHED: std::sync::RwLock<Option<Published>> = std::sync::RwLock::new(None);

/// Makes `ontology` the one the tool list speaks (resolve_lf_tag's tag schema: one property per
/// key, its values as an enum) and returns that list. A list is built once per vocabulary and
/// kept for the life of the process, so `&'static` handles stay valid across a rebuild that
/// changes the ontology (a few tens of KB per governance edit).
pub fn publish_ontology(ontology: &Ontology) -> &'static [ToolSpec] {
    let vocabulary = serde_json::to_string(&ontology.keys).unwrap_or_default();
    let mut published = PUBLISHED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = published.as_ref().filter(|p| p.vocabulary == vocabulary) {
        return p.specs;
    }
    let specs: &'static [ToolSpec] = Box::leak(build_specs(ontology).into_boxed_slice());
    let instructions: &'static str = Box::leak(render_instructions(ontology).into_boxed_str());
    *published = Some(Published {
        vocabulary,
        specs,
        instructions,
    });
    specs
}

/// All tools, in a fixed order, as the ontology last published speaks them.
pub fn specs() -> &'static [ToolSpec] {
    if let Some(p) = PUBLISHED.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.specs;
    }
    publish_built_in();
    specs()
}

/// What a host reads before the tool list (MCP's `instructions`), in the vocabulary of the
/// ontology last published: the order of the tools, the ontology's keys and values and where a
/// host without resource support reads them, how search text is read, and the list keywords
/// (`ttlMs`, `cacheScope`, `x-mcp-header`) that are not tool arguments.
pub fn instructions() -> &'static str {
    if let Some(p) = PUBLISHED.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.instructions;
    }
    publish_built_in();
    instructions()
}

fn publish_built_in() {
    match Ontology::parse(
        BUILT_IN_ONTOLOGY,
        std::path::Path::new("ontology/lf-tags.json"),
    ) {
        Ok(ontology) => {
            publish_ontology(&ontology);
        }
        Err(e) => panic!("the built-in ontology does not parse: {e}"),
    }
}

/// The instructions text of `ontology` (see [`instructions`]). Ranking internals stay out:
/// `docs/search.md` holds them.
fn render_instructions(ontology: &Ontology) -> String {
    let vocabulary: Vec<String> = ontology
        .keys
        .iter()
        .map(|k| {
            let values: Vec<&str> = k.values.iter().map(|v| v.value.0.as_str()).collect();
            format!("{} ({})", k.key.0, values.join(", "))
        })
        .collect();
    let ordered: Vec<&str> = ontology
        .keys
        .iter()
        .filter(|k| k.ordered)
        .map(|k| k.key.0.as_str())
        .collect();
    let order = match ordered.as_slice() {
        [] => String::new(),
        keys => format!(
            " The values of {} are listed from least to most strict (a conflict leans to the \
             stricter).",
            keys.join(" and ")
        ),
    };
    format!(
        "govcat answers questions about the datasets of a governed catalog (owners, schemas, \
         column classifications, LF-tag grants) from the catalog itself, never from memory and \
         never from the rows. To tag a column being added (also when the request asks how other \
         columns are tagged): describe it in English (the user's own term as an alternative); \
         find_precedents and suggest_tags with the same description, \
         alternatives and identifier, in the same turn (suggest_tags runs that search itself, over \
         columns only; find_precedents also shows ontology values); the user decides; then \
         resolve_lf_tag, and get_dataset on an existing target before its tags are written \
         (not in the first turn: suggest_tags already reads the target and says whether it \
         exists; a new table has nothing to read). suggest_tags proposes every key: answer the \
         one asked and show the rest. A column is being added when the request's data is to be \
         stored (we add, we log, a new field, künftig erfassen); a question of where such data \
         already is or how existing columns are classified, with nothing to store, needs \
         find_precedents alone (suggest_tags adds nothing there). One search per column the \
         request adds, listed ones too (dish, price, pickup time: three), also for two of one \
         kind (lat and long, old and new VIN: two searches, each with its own suggest_tags); a \
         column only mentioned, not asked about, waits. identifier, when given, applies to every \
         phrasing; omitted, each phrasing infers its own. alternatives: 3-5 is typical, at most 8. find_precedents' domains: one the \
         catalog lacks is an error listing the domains you may read (list_domains names them \
         too). suggest_tags' domain and table set the target (precedents come from every \
         domain you may read): as the request names them, or table alone; a domain the catalog \
         lacks gives precedents only, said in target_note. Tag values come \
         from a closed ontology: {}.{} That list is complete; what each value \
         means is in the resource govcat://ontology/lf-tags or, without resource support, in \
         list_domains include_ontology true (not needed in the first turn). When no value of a \
         key fits the data, say so and let the user decide; never invent one. An optional \
         argument sent as null is the same as omitted (except suggest_tags' domain: omit it). \
         Search text: no word excludes (not, without, kein, a leading -); word* is a prefix, \
         \"quoted words\" a phrase; words split at _, - and camelCase; German words, common \
         column abbreviations (cust, addr, dob, txn, nr) and run-together words whose parts the \
         catalog uses are expanded for you, as request.glossary_terms shows (list_domains \
         include_glossary true lists the words and abbreviations); ä, ö, ü fold to a, o, u, so for a \
         German word with one also pass its ae, oe, ue spelling, as column names write it \
         (Prüfung: Pruefung). These English stop words are left \
         out of the word match, so they and acronyms spelled like them match by meaning only \
         (spell those out): {} (the whole list; other acronyms, such as HIS or LEI, match as \
         words). That changes nothing else: a name ending in _no is still a key column, and no \
         after its noun (claim no) still asks for an identifier. ttlMs and cacheScope on a list or \
         an answer: how many milliseconds it may be reused, and whether it may be shared between \
         users (public) or not (private). x-mcp-header on domain: the client also sends it as an \
         HTTP header for routing, which is why domain there is a plain string.",
        vocabulary.join("; "),
        order,
        crate::index::lexical::ENGLISH_STOP_WORDS.join(", ")
    )
}

fn build_specs(ontology: &Ontology) -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "find_precedents",
            title: "Find precedent columns and ontology values",
            description: find_precedents::DESCRIPTION,
            input_schema: input_schema::<find_precedents::Input>(),
            output_schema: schema::<find_precedents::Output>(),
        },
        ToolSpec {
            name: "suggest_tags",
            title: "Suggest tags from precedent, with evidence",
            description: suggest_tags::DESCRIPTION,
            input_schema: input_schema::<suggest_tags::Input>(),
            output_schema: schema::<suggest_tags::Output>(),
        },
        ToolSpec {
            name: "list_domains",
            title: "List catalog domains",
            description: list_domains::DESCRIPTION,
            input_schema: input_schema::<list_domains::Input>(),
            output_schema: schema::<list_domains::Output>(),
        },
        ToolSpec {
            name: "get_dataset",
            title: "Read one dataset live",
            description: get_dataset::DESCRIPTION,
            input_schema: input_schema::<get_dataset::Input>(),
            output_schema: schema::<get_dataset::Output>(),
        },
        ToolSpec {
            name: "resolve_lf_tag",
            title: "Validate a tag set against the ontology",
            description: resolve::DESCRIPTION,
            input_schema: resolve::input_schema(ontology, input_schema::<resolve::Input>()),
            output_schema: schema::<resolve::Output>(),
        },
        ToolSpec {
            name: "check_grant_expression",
            title: "Evaluate a role's LF-tag grant on a dataset",
            description: check_grant::DESCRIPTION,
            input_schema: input_schema::<check_grant::Input>(),
            output_schema: schema::<check_grant::Output>(),
        },
    ]
}

pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    specs().iter().find(|s| s.name == name)
}

fn validator(name: &str) -> Option<&'static jsonschema::Validator> {
    static VALIDATORS: OnceLock<Vec<(&'static str, jsonschema::Validator)>> = OnceLock::new();
    VALIDATORS
        .get_or_init(|| {
            specs()
                .iter()
                .filter_map(|s| strict_validator(&s.output_schema).ok().map(|v| (s.name, v)))
                .collect()
        })
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// Checks a tool's output against its `outputSchema`.
pub fn validate_output(name: &str, output: &Value) -> Result<(), ToolError> {
    let v = validator(name).ok_or_else(|| {
        ToolError::new(
            "InternalError",
            format!("tool '{name}' has no compiled output schema; report this to the govcat maintainers"),
        )
    })?;
    match v.iter_errors(output).next() {
        None => Ok(()),
        Some(e) => Err(ToolError::new(
            "OutputSchemaViolation",
            format!(
                "tool '{name}' produced output that violates its schema at {}: {e}; the answer was withheld; report this to the govcat maintainers",
                e.instance_path
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_portable_form_inlines_references_and_keeps_the_propertys_own_words() {
        let generated = json!({
            "type": "object",
            "additionalProperties": false,
            "title": "Input",
            "properties": {
                "mode": {"description": "hybrid, bm25 or dense.", "anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "default": null},
                "domains": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Domain"}}, {"type": "null"}]},
                "nothing": {"type": "object", "additionalProperties": false}
            },
            "$defs": {
                "Mode": {"description": "Which sides run.", "type": "string", "enum": ["hybrid", "bm25", "dense"]},
                "Domain": {"description": "A domain name.", "type": "string"}
            }
        });
        assert_eq!(
            portable_input(generated),
            json!({
                "type": "object",
                "properties": {
                    "mode": {"anyOf": [
                        {"description": "hybrid, bm25 or dense.", "type": "string", "enum": ["hybrid", "bm25", "dense"]},
                        {"type": "null"}
                    ], "default": null},
                    "domains": {"anyOf": [
                        {"type": "array", "items": {"description": "A domain name.", "type": "string"}},
                        {"type": "null"}
                    ]},
                    "nothing": {"type": "object", "properties": {}}
                }
            })
        );
    }

    /// The instructions speak the vocabulary they are rendered from, not the demo's.
    #[test]
    fn the_instructions_list_the_loaded_ontologys_keys_and_values() {
        let saas = r#"{"version": "2", "owner": "gov", "description": "SaaS tags", "keys": [
            {"key": "data_class", "description": "What kind of data.", "values": [
                {"value": "pii", "description": "Personal.", "implies": "masking"},
                {"value": "public", "description": "Open.", "implies": "none"}]}]}"#;
        let ontology = Ontology::parse(saas, std::path::Path::new("saas.json")).unwrap();
        let text = render_instructions(&ontology);
        assert!(
            text.contains("closed ontology: data_class (pii, public)."),
            "{text}"
        );
        assert!(!text.contains("sensitivity"), "{text}");
        assert!(
            text.contains("list_domains include_ontology true"),
            "{text}"
        );
    }

    /// Rule 4: no description explains away an empty result.
    #[test]
    fn no_tool_description_explains_away_an_empty_result() {
        let banned = [
            "usually means",
            "probably",
            "likely means",
            "may not exist",
            "might not exist",
            "try a different",
            "no results means",
            "empty means",
            "does not exist",
            "typo",
            "wrong",
        ];
        for s in specs() {
            let d = s.description.to_lowercase();
            for phrase in banned {
                assert!(
                    !d.contains(phrase),
                    "tool {} description contains '{phrase}'",
                    s.name
                );
            }
        }
    }
}
