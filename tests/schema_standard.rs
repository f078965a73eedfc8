//! Every schema govcat publishes — each tool's `inputSchema` and `outputSchema` as REST and MCP
//! list them, and the form of an `input_required` ask — is standard JSON Schema 2020-12 that
//! strict clients take as it is: valid against the draft's meta-schema, only the draft's
//! keywords (plus MCP's `x-mcp-header`) and formats, no `type` arrays (single-`type` clients
//! cannot map them). A format the draft does not define is an error here, as it is in ajv's
//! strict mode. Real outputs of every tool fit their output schema under the same validator.

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
    assert_eq!(
        find.input_schema["properties"]["limit"],
        json!({
            "description": find.input_schema["properties"]["limit"]["description"],
            "default": null,
            "anyOf": [
                {"type": "integer", "minimum": 1, "maximum": 50},
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
