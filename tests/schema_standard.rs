//! Every schema govcat publishes — each tool's `inputSchema` and `outputSchema` as REST and MCP
//! list them, and the form of an `input_required` ask — is standard JSON Schema 2020-12 that
//! strict clients take as it is: valid against the draft's meta-schema, only the draft's
//! keywords (plus MCP's `x-mcp-header`) and formats, no `type` arrays (single-`type` clients
//! cannot map them). A format the draft does not define is an error here, as it is in ajv's
//! strict mode. Real outputs of every tool fit their output schema under the same validator.
//!
//! Input schemas are also in the form every agent framework's converter takes without losing
//! an argument's meaning (each failure mode measured on a48f8ba has its test below; the
//! frameworks themselves run in `tests/python/frameworks/compat.py`): no `$ref` (strict
//! converters refuse a bare one, Gemini's replaces the description), no boolean
//! `additionalProperties` (Gemini's crashes), `properties` on every object (LangChain's `.args`),
//! a nullable argument's description on the branch Gemini keeps, the tag set as the ontology's
//! closed vocabulary (strict converters empty a free-form map), the bounds the prose states.

mod common;

use govcat::server::mcp;
use govcat::tools::{self, Outcome};
use serde_json::{json, Map, Value};

/// The keywords of the JSON Schema 2020-12 vocabularies (core, applicator, unevaluated,
/// validation, meta-data, format-annotation, content), and MCP's header annotation.
const KEYWORDS: &[&str] = &[
    "$schema",
    "$id",
    "$ref",
    "$anchor",
    "$dynamicRef",
    "$dynamicAnchor",
    "$vocabulary",
    "$comment",
    "$defs",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "dependentSchemas",
    "prefixItems",
    "items",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "type",
    "const",
    "enum",
    "multipleOf",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "maxContains",
    "minContains",
    "maxProperties",
    "minProperties",
    "required",
    "dependentRequired",
    "title",
    "description",
    "default",
    "deprecated",
    "readOnly",
    "writeOnly",
    "examples",
    "format",
    "contentEncoding",
    "contentMediaType",
    "contentSchema",
    // MCP 2026-07-28: routes a `domain` argument into the `Mcp-Param-Domain` header.
    "x-mcp-header",
];

/// The formats JSON Schema 2020-12 defines.
const FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// What is not standard or not portable in `schema`, as `path: problem` lines. Walks schema
/// positions only: names under `properties`/`$defs` and values of `enum`/`const`/`default`/
/// `examples` are data, not keywords.
fn problems(schema: &Value, path: &str, out: &mut Vec<String>) {
    let Value::Object(obj) = schema else {
        if !schema.is_boolean() {
            out.push(format!("{path}: a schema must be an object or a boolean"));
        }
        return;
    };
    for (key, value) in obj {
        let at = format!("{path}/{key}");
        if !KEYWORDS.contains(&key.as_str()) {
            out.push(format!(
                "{at}: '{key}' is not a JSON Schema 2020-12 keyword"
            ));
        }
        match key.as_str() {
            "format" => match value.as_str() {
                Some(f) if FORMATS.contains(&f) => {}
                _ => out.push(format!("{at}: format {value} is not defined by 2020-12")),
            },
            "type" if value.is_array() => out.push(format!(
                "{at}: a type array ({value}) is not portable; use anyOf"
            )),
            "properties" | "patternProperties" | "$defs" | "dependentSchemas" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    problems(sub, &format!("{at}/{name}"), out);
                }
            }
            "allOf" | "anyOf" | "oneOf" | "prefixItems" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    problems(sub, &format!("{at}/{i}"), out);
                }
            }
            "not"
            | "if"
            | "then"
            | "else"
            | "items"
            | "contains"
            | "additionalProperties"
            | "propertyNames"
            | "unevaluatedItems"
            | "unevaluatedProperties"
            | "contentSchema" => problems(value, &at, out),
            _ => {}
        }
    }
}

/// Every published schema, named: the shared specs (REST), MCP's tool list, an ask's form.
fn published_schemas() -> Vec<(String, Value)> {
    let mut out = Vec::new();
    for s in tools::specs() {
        out.push((format!("{} inputSchema", s.name), s.input_schema.clone()));
        out.push((format!("{} outputSchema", s.name), s.output_schema.clone()));
    }
    for t in mcp::mcp_tools() {
        out.push((
            format!("{} MCP inputSchema", t.name),
            Value::Object(t.input_schema.as_ref().clone()),
        ));
        let output = t
            .output_schema
            .as_ref()
            .expect("every tool has an outputSchema");
        out.push((
            format!("{} MCP outputSchema", t.name),
            Value::Object(output.as_ref().clone()),
        ));
    }
    let ctx = common::hashed().context();
    let ask = match tools::call(
        &ctx,
        &common::caller_reading("t", &[]),
        "resolve_lf_tag",
        json!({"tags": {"sensitivity": "high"}}),
    ) {
        Outcome::InputRequired(ask) => ask,
        other => panic!("an incomplete tag set did not ask: {other:?}"),
    };
    let ask = serde_json::to_value(mcp::ask_result(&ask).expect("ask result")).unwrap();
    out.push((
        "input_required requestedSchema".into(),
        ask["inputRequests"][mcp::ASK_KEY]["params"]["requestedSchema"].clone(),
    ));
    out
}

#[test]
fn every_published_schema_is_standard_portable_json_schema_2020_12() {
    let schemas = published_schemas();
    assert_eq!(schemas.len(), 4 * tools::specs().len() + 1);
    for (name, schema) in &schemas {
        if let Err(e) = jsonschema::draft202012::meta::validate(schema) {
            panic!("{name} is not valid against the 2020-12 meta-schema: {e}");
        }
        if let Err(e) = tools::strict_validator(schema) {
            panic!("{name} is refused by a strict 2020-12 validator: {e}");
        }
        let mut found = Vec::new();
        problems(schema, "#", &mut found);
        assert_eq!(found, Vec::<String>::new(), "{name}");
    }
}

#[test]
fn unsigned_integers_are_bounded_by_minimum_zero_not_by_a_custom_format() {
    let find = tools::spec("find_precedents").unwrap();
    let description = &find.input_schema["properties"]["limit"]["anyOf"][0]["description"];
    assert_eq!(description, "Page size 1-50, default 10.");
    assert_eq!(
        find.input_schema["properties"]["limit"],
        json!({
            "default": null,
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": 50, "description": description},
                {"type": "null"}
            ]
        })
    );
    assert_eq!(
        find.output_schema["properties"]["ttlMs"],
        json!({"type": "integer", "minimum": 0})
    );
}

#[test]
fn the_checks_refuse_custom_formats_and_type_arrays() {
    // The other half: what schemars writes without the transforms is caught.
    let raw = json!({
        "type": "object",
        "properties": {
            "bm25_rank": {"type": ["integer", "null"], "format": "uint32", "minimum": 0}
        }
    });
    assert!(tools::strict_validator(&raw).is_err());
    let mut found = Vec::new();
    problems(&raw, "#", &mut found);
    found.sort();
    assert_eq!(
        found,
        vec![
            "#/properties/bm25_rank/format: format \"uint32\" is not defined by 2020-12".to_string(),
            "#/properties/bm25_rank/type: a type array ([\"integer\",\"null\"]) is not portable; use anyOf".to_string(),
        ]
    );
    let mut found = Vec::new();
    problems(&json!({"nullable": true}), "#", &mut found);
    assert_eq!(
        found,
        vec!["#/nullable: 'nullable' is not a JSON Schema 2020-12 keyword".to_string()]
    );
}

/// One call per tool that answers with its output (not an error or an ask).
fn examples() -> Vec<(&'static str, Value)> {
    vec![
        (
            "find_precedents",
            json!({"description": "contains an EU IBAN", "limit": 5}),
        ),
        ("find_precedents", json!({"description": "qwzxv flurbish"})),
        (
            "suggest_tags",
            json!({"description": "contains an EU IBAN", "domain": "analytics", "table": "customer_360_global_extract"}),
        ),
        ("list_domains", json!({})),
        (
            "get_dataset",
            json!({"domain": "policy", "table": "customer"}),
        ),
        (
            "resolve_lf_tag",
            json!({"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer", "retention": "10y", "lawful_basis": "contract"}}),
        ),
        (
            "check_grant_expression",
            json!({"role": "global-analytics-reader", "domain": "analytics", "table": "customer_360_global_extract"}),
        ),
    ]
}

#[test]
fn real_outputs_of_every_tool_fit_their_output_schema_under_the_strict_validator() {
    let ctx = common::hashed().context();
    let caller = govcat::catalog::Caller::local();
    let mut tried = Map::new();
    for (tool, args) in examples() {
        let output = common::call_ok(&ctx, &caller, tool, args.clone());
        let schema = &tools::spec(tool).unwrap().output_schema;
        let validator = tools::strict_validator(schema).unwrap();
        let errors: Vec<String> = validator
            .iter_errors(&output)
            .map(|e| format!("{}: {e}", e.instance_path))
            .collect();
        assert_eq!(errors, Vec::<String>::new(), "{tool}({args})");
        tried.insert(tool.to_string(), Value::Bool(true));
    }
    assert_eq!(tried.len(), tools::specs().len(), "every tool is tried");
}

// ------------------------------------------------------------------ what every framework takes

/// Every published input schema: the shared specs (REST, CLI) and MCP's tool list.
fn input_schemas() -> Vec<(String, Value)> {
    let mut out: Vec<(String, Value)> = tools::specs()
        .iter()
        .map(|s| (format!("{} inputSchema", s.name), s.input_schema.clone()))
        .collect();
    for t in mcp::mcp_tools() {
        out.push((
            format!("{} MCP inputSchema", t.name),
            Value::Object(t.input_schema.as_ref().clone()),
        ));
    }
    out
}

/// Every schema object under `schema` (itself included) with its JSON pointer.
fn nodes<'a>(schema: &'a Value, at: String, out: &mut Vec<(String, &'a Value)>) {
    let Value::Object(obj) = schema else { return };
    out.push((at.clone(), schema));
    for (key, value) in obj {
        match key.as_str() {
            "properties" | "$defs" => {
                for (name, sub) in value.as_object().into_iter().flatten() {
                    nodes(sub, format!("{at}/{key}/{name}"), out);
                }
            }
            "anyOf" | "oneOf" | "allOf" => {
                for (i, sub) in value.as_array().into_iter().flatten().enumerate() {
                    nodes(sub, format!("{at}/{key}/{i}"), out);
                }
            }
            "items" | "additionalProperties" => nodes(value, format!("{at}/{key}"), out),
            _ => {}
        }
    }
}

fn every_node(check: impl Fn(&str, &Value) -> Option<String>) -> Vec<String> {
    let mut found = Vec::new();
    for (name, schema) in input_schemas() {
        let mut all = Vec::new();
        nodes(&schema, "#".into(), &mut all);
        found.extend(
            all.into_iter()
                .filter_map(|(at, node)| check(&at, node).map(|p| format!("{name} {at}: {p}"))),
        );
    }
    found
}

/// The non-null branch of `anyOf: [X, {"type": "null"}]`, if `prop` is that.
fn non_null(prop: &Value) -> Option<&Value> {
    let branches = prop.get("anyOf")?.as_array()?;
    let null = json!({"type": "null"});
    (branches.len() == 2 && branches.contains(&null))
        .then(|| branches.iter().find(|b| **b != null))
        .flatten()
}

/// OpenAI Agents' strict conversion: "a reference whose target was not validated for strict
/// mode" (find_precedents, suggest_tags, check_grant_expression on a48f8ba); Gemini's: the
/// target's description replaces the argument's (mode became "Which sides run.").
#[test]
fn no_input_schema_holds_a_reference() {
    let found = every_node(|_, node| {
        ["$ref", "$defs", "definitions"]
            .iter()
            .find(|k| node.get(**k).is_some())
            .map(|k| format!("'{k}' (inline it)"))
    });
    assert_eq!(found, Vec::<String>::new());
}

/// google-genai's `mcp_to_gemini_tool` takes `additionalProperties` for a schema:
/// `AttributeError: 'bool' object has no attribute 'items'` on every tool of a48f8ba. The server
/// refuses unknown arguments by name instead (`every_tool_refuses_an_unknown_argument_by_name`
/// in `tools`, and over each transport below).
#[test]
fn no_input_schema_holds_a_boolean_additional_properties() {
    let found = every_node(|_, node| {
        node.get("additionalProperties")
            .filter(|v| v.is_boolean())
            .map(|v| format!("additionalProperties: {v}"))
    });
    assert_eq!(found, Vec::<String>::new());
}

/// LangChain's `StructuredTool.args`: `KeyError: 'properties'` for list_domains on a48f8ba; an
/// object without properties is also one a strict converter refuses or closes to `{}`.
#[test]
fn every_object_of_an_input_schema_declares_its_properties() {
    let found = every_node(|_, node| {
        (node.get("type") == Some(&json!("object"))).then_some(())?;
        match node.get("properties").and_then(Value::as_object) {
            None => Some("an object without properties".into()),
            Some(p) if p.is_empty() => Some("an object with no property at all".into()),
            Some(_) => None,
        }
    });
    assert_eq!(found, Vec::<String>::new());
}

/// Gemini unwraps `anyOf: [X, null]` to X and keeps only what X says, and it drops the
/// camelCase bounds (maxLength, maxItems, minLength): each nullable argument's description is on
/// X, and every such bound of an argument is stated in the words Gemini keeps.
#[test]
fn what_gemini_keeps_of_each_argument_says_what_it_is_and_its_bounds() {
    let mut found = Vec::new();
    for (name, schema) in input_schemas() {
        let mut all = Vec::new();
        nodes(&schema, "#".into(), &mut all);
        for (at, prop) in all {
            if !at.contains("/properties/") || at.contains("/anyOf/") {
                continue;
            }
            let kept = match non_null(prop) {
                Some(branch) => {
                    if prop.get("description").is_some() || branch.get("description").is_none() {
                        found.push(format!(
                            "{name} {at}: the description belongs on the non-null branch, once"
                        ));
                    }
                    branch
                }
                None => prop,
            };
            let words = kept["description"].as_str().unwrap_or("");
            for (node, bound) in [
                (kept, "maxLength"),
                (kept, "maxItems"),
                (kept, "minItems"),
                (&kept["items"], "maxLength"),
            ] {
                if let Some(v) = node.get(bound) {
                    if !words.contains(&v.to_string()) {
                        found.push(format!(
                            "{name} {at}: {bound} {v} is not stated in the description"
                        ));
                    }
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

/// Strict converters (OpenAI Agents: "an object that permits undeclared properties"; LangChain
/// and pydantic-ai rewrite it to `{"type": "object", "additionalProperties": false}`, so a strict
/// model can only send `{}`) and a model that cannot read the ontology resource: the tag set is
/// the served ontology's closed vocabulary, one property per key, its values as an enum.
#[test]
fn the_tag_set_schema_is_the_served_ontologys_closed_vocabulary() {
    let ontology = common::ontology();
    let want: Map<String, Value> = ontology
        .keys
        .iter()
        .map(|k| {
            let values: Vec<&str> = k.values.iter().map(|v| v.value.0.as_str()).collect();
            (k.key.0.clone(), json!(values))
        })
        .collect();
    for (name, schema) in input_schemas() {
        if !name.starts_with("resolve_lf_tag") {
            continue;
        }
        let tags = &schema["properties"]["tags"];
        assert_eq!(tags["type"], "object", "{name}");
        let got: Map<String, Value> = tags["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name}: tags has no properties: {tags}"))
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    non_null(v).expect("a key may be null")["enum"].clone(),
                )
            })
            .collect();
        assert_eq!(got, want, "{name}");
    }
}

/// What the prose says of the arguments is in the schema too.
#[test]
fn the_bounds_the_descriptions_state_are_in_the_schemas() {
    for tool in ["find_precedents", "suggest_tags"] {
        let props = &tools::spec(tool).unwrap().input_schema["properties"];
        assert_eq!(props["description"]["minLength"], 1, "{tool}");
        let alternatives = non_null(&props["alternatives"]).unwrap();
        assert_eq!(alternatives["items"]["minLength"], 1, "{tool}");
        assert_eq!(alternatives["uniqueItems"], true, "{tool}");
    }
    let find = &tools::spec("find_precedents").unwrap().input_schema["properties"];
    for list in ["domains", "kinds"] {
        assert_eq!(
            non_null(&find[list]).unwrap()["uniqueItems"],
            true,
            "{list}"
        );
    }
    // A table alone is accepted (the server places it in the one domain that has it).
    let suggest = &tools::spec("suggest_tags").unwrap().input_schema;
    assert_eq!(suggest.get("dependentRequired"), None);
    let validator = tools::strict_validator(suggest).unwrap();
    assert!(validator.is_valid(&json!({"description": "x", "table": "customer"})));
    assert!(!validator.is_valid(&json!({"description": "", "table": "customer"})));
}

/// What a strict model sends (every property, the optional ones as null) answers like the
/// call that leaves them out: OpenAI Agents' and LangChain's strict conversions make every
/// property required.
#[test]
fn a_strict_clients_call_with_every_optional_argument_null_answers() {
    let ctx = common::hashed().context();
    let caller = govcat::catalog::Caller::local();
    for (tool, given) in examples() {
        let schema = &tools::spec(tool).unwrap().input_schema;
        let mut args = given.as_object().cloned().unwrap_or_default();
        for (name, prop) in schema["properties"].as_object().unwrap() {
            if !args.contains_key(name) {
                assert!(non_null(prop).is_some(), "{tool}.{name} cannot be null");
                args.insert(name.clone(), Value::Null);
            }
        }
        let args = Value::Object(args);
        assert!(
            tools::strict_validator(schema).unwrap().is_valid(&args),
            "{tool}({args})"
        );
        common::call_ok(&ctx, &caller, tool, args);
    }
}

/// A strict model sends every key of the tag set; a key it has no value for comes as null and
/// is asked for, like a missing one.
#[test]
fn a_tag_key_sent_as_null_is_asked_for() {
    let ctx = common::hashed().context();
    let args = json!({"tags": {"sensitivity": "high", "residency": null, "subject_type": "customer",
                               "retention": "10y", "lawful_basis": null}});
    match tools::call(
        &ctx,
        &govcat::catalog::Caller::local(),
        "resolve_lf_tag",
        args,
    ) {
        Outcome::InputRequired(ask) => {
            let keys: Vec<&str> = ask.missing.iter().map(|m| m.key.0.as_str()).collect();
            assert_eq!(keys, ["residency", "lawful_basis"]);
        }
        other => panic!("a tag set with null keys did not ask for them: {other:?}"),
    }
}

/// A host without resource support reads the ontology's values from list_domains.
#[test]
fn list_domains_returns_the_ontology_when_asked() {
    let ctx = common::hashed().context();
    let caller = govcat::catalog::Caller::local();
    let plain = common::call_ok(&ctx, &caller, "list_domains", json!({}));
    assert_eq!(plain.get("ontology"), None);
    let with = common::call_ok(
        &ctx,
        &caller,
        "list_domains",
        json!({"include_ontology": true}),
    );
    let keys: Vec<(&str, usize)> = with["ontology"]
        .as_array()
        .unwrap()
        .iter()
        .map(|k| {
            (
                k["key"].as_str().unwrap(),
                k["values"].as_array().unwrap().len(),
            )
        })
        .collect();
    assert_eq!(
        keys,
        [
            ("sensitivity", 4),
            ("residency", 4),
            ("subject_type", 5),
            ("retention", 4),
            ("lawful_basis", 4)
        ]
    );
}

/// Hosts asked which abbreviations and German words a search expands: list_domains lists the
/// served snapshot's glossary when asked (every abbreviation line of the shipped file), and the
/// answer fits list_domains' output schema; without the flag it carries none.
#[test]
fn list_domains_returns_the_glossary_when_asked_and_only_then() {
    let ctx = common::hashed().context();
    let caller = govcat::catalog::Caller::local();
    let plain = common::call_ok(&ctx, &caller, "list_domains", json!({}));
    assert_eq!(plain.get("glossary"), None);
    let with = common::call_ok(
        &ctx,
        &caller,
        "list_domains",
        json!({"include_glossary": true}),
    );
    let glossary = &with["glossary"];
    assert_eq!(glossary["abbreviations"]["dob"], "date of birth");
    assert_eq!(glossary["german"]["geburtsdatum"], "birth date dob");
    let shipped = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("ontology/abbreviations.tsv"),
    )
    .unwrap();
    let lines = shipped
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.trim_start().starts_with('#'))
        .count();
    assert_eq!(glossary["abbreviations"].as_object().unwrap().len(), lines);
    let spec = tools::spec("list_domains").unwrap();
    let validator = tools::strict_validator(&spec.output_schema).unwrap();
    assert!(validator.is_valid(&with), "{with}");
}

/// Every float an answer shows is short: similarity to 3 places (an `f32` written as a JSON
/// double used to show 0.5809999704360962), scores to 6 (the total order `score desc, id asc`
/// must hold for the numbers shown), confidences and shares to 3.
#[test]
fn answers_show_floats_without_binary_noise() {
    fn floats(v: &Value, at: String, out: &mut Vec<(String, f64)>) {
        match v {
            Value::Number(n) if !n.is_i64() && !n.is_u64() => out.push((at, n.as_f64().unwrap())),
            Value::Array(a) => a
                .iter()
                .enumerate()
                .for_each(|(i, x)| floats(x, format!("{at}/{i}"), out)),
            Value::Object(o) => o
                .iter()
                .for_each(|(k, x)| floats(x, format!("{at}/{k}"), out)),
            _ => {}
        }
    }
    let ctx = common::hashed().context();
    let caller = govcat::catalog::Caller::local();
    let mut similarities = 0;
    for (tool, args) in examples() {
        let mut found = Vec::new();
        floats(
            &common::call_ok(&ctx, &caller, tool, args),
            String::new(),
            &mut found,
        );
        for (at, x) in found {
            let places = if at.ends_with("/score") { 6 } else { 3 };
            let scale = 10f64.powi(places);
            assert_eq!(
                (x * scale).round() / scale,
                x,
                "{tool} {at}: {x} has more than {places} places"
            );
            similarities += usize::from(at.ends_with("/similarity"));
        }
    }
    assert!(similarities > 0, "no similarity was shown");
}

/// A host reads the schemas, not govcat's documents or code: no description points at a rule
/// number, a pipeline stage, a module, a rustdoc link or a command it cannot run.
#[test]
fn no_published_description_points_at_what_a_host_cannot_see() {
    let words = [
        "rule ",
        "stage ",
        " module",
        "[`",
        "govcat index",
        "FIDELITY",
        "DESIGN.md",
    ];
    let mut found = Vec::new();
    for (name, schema) in published_schemas() {
        let mut all = Vec::new();
        nodes(&schema, "#".into(), &mut all);
        for (at, node) in all {
            let Some(d) = node.get("description").and_then(Value::as_str) else {
                continue;
            };
            for w in words {
                if d.contains(w) {
                    found.push(format!("{name} {at}: '{w}' in {d:?}"));
                }
            }
        }
    }
    assert_eq!(found, Vec::<String>::new());
}

/// Issue 44: some hosts cut a tool description at 1,024 characters, and the tool list is read
/// in full before the first call. The descriptions plus the input schemas as MCP lists them
/// (compact JSON) stay within what they were on a48f8ba, 13,862 bytes
/// (`docs/perf/answer-size.md`); since each nullable argument's description is written once
/// (12,294 B, was 13,831), within 13,000 (12,826 B on the fifth hosts' answers: the identifier
/// rule, the acronym list, where-is questions, a table placed without its domain).
#[test]
fn tool_texts_fit_the_hosts_that_cut_them_and_the_list_stays_within_its_old_size() {
    let mut bytes = 0;
    for t in mcp::mcp_tools() {
        let description = t.description.as_deref().unwrap_or("");
        let chars = description.chars().count();
        assert!(chars <= 1024, "{}: {chars} characters", t.name);
        let schema = serde_json::to_string(t.input_schema.as_ref()).unwrap();
        bytes += description.len() + schema.len();
    }
    assert!(
        bytes <= 13_862,
        "descriptions + input schemas: {bytes} B (issue 44: no more than at a48f8ba)"
    );
}

/// The server instructions list the served ontology's keys with their values, and
/// resolve_lf_tag's example is taken from it (both rendered: `tools` tests another vocabulary).
#[test]
fn texts_that_name_ontology_keys_speak_the_served_ontology() {
    let ontology = common::ontology();
    let instructions = tools::instructions();
    for k in &ontology.keys {
        assert!(instructions.contains(&k.key.0), "{}", k.key.0);
        for v in &k.values {
            assert!(
                instructions.contains(&v.value.0),
                "{}={}",
                k.key.0,
                v.value.0
            );
        }
    }
    assert!(instructions.contains("include_ontology"));
    let tags = &tools::spec("resolve_lf_tag").unwrap().input_schema["properties"]["tags"];
    let first = &ontology.keys[0];
    assert!(tags["description"].as_str().unwrap().contains(&format!(
        "\"{}\":\"{}\"",
        first.key.0, first.values[0].value.0
    )));
}
