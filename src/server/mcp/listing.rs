//! What MCP lists: every tool (its input schema in the MCP form, with the routing header on
//! `domain`) and every prompt, built once from the shared specs, and a rendered prompt as MCP
//! messages.

use std::sync::{Arc, OnceLock, RwLock};

use rmcp::model::{
    GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Tool, ToolAnnotations,
};
use serde_json::Value;

use super::DOMAIN_HEADER;
use crate::prompts;
use crate::tools;

/// The MCP form of a tool's input schema: the shared schema with `domain` marked
/// `x-mcp-header: Domain`. The header rule needs a plain `string` property, so a `$ref` to a
/// string definition is inlined and an optional domain (`anyOf [string, null]`) becomes a
/// string that may be omitted (an omitted domain sends no header).
pub fn mcp_input_schema(schema: &Value) -> JsonObject {
    let mut obj = schema.as_object().cloned().unwrap_or_default();
    let defs = obj
        .get("$defs")
        .or_else(|| obj.get("definitions"))
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        if let Some(Value::Object(domain)) = props.get("domain") {
            if let Some(mut plain) = as_string_schema(domain, &defs) {
                plain.insert("x-mcp-header".into(), Value::String(DOMAIN_HEADER.into()));
                props.insert("domain".into(), Value::Object(plain));
            }
        }
    }
    obj
}

/// `prop` as an inline `{"type": "string", ...}` schema, if it admits only strings (and null).
fn as_string_schema(prop: &JsonObject, defs: &JsonObject) -> Option<JsonObject> {
    let mut out = prop.clone();
    if out.get("default") == Some(&Value::Null) {
        out.remove("default");
    }
    if let Some(reference) = out.remove("$ref") {
        let name = reference.as_str()?.rsplit('/').next()?;
        for (k, v) in defs.get(name)?.as_object()? {
            out.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if let Some(Value::Array(alternatives)) = out.remove("anyOf") {
        let mut non_null = alternatives
            .iter()
            .filter(|a| a.get("type") != Some(&Value::String("null".into())));
        let only = non_null.next()?.as_object()?;
        if non_null.next().is_some() {
            return None;
        }
        for (k, v) in as_string_schema(only, defs)? {
            out.entry(k).or_insert(v);
        }
    }
    (out.get("type").and_then(Value::as_str) == Some("string")).then_some(out)
}

/// Every tool as MCP lists it, built once per published tool list (`tools::specs()`, which
/// follows the served ontology) and kept like it for the life of the process.
pub fn mcp_tools() -> &'static [Tool] {
    static TOOLS: RwLock<Option<(usize, &'static [Tool])>> = RwLock::new(None);
    let specs = tools::specs();
    let key = specs.as_ptr() as usize;
    if let Some((built_from, tools)) = *TOOLS.read().unwrap_or_else(|e| e.into_inner()) {
        if built_from == key {
            return tools;
        }
    }
    let mut cached = TOOLS.write().unwrap_or_else(|e| e.into_inner());
    if let Some((built_from, tools)) = *cached {
        if built_from == key {
            return tools;
        }
    }
    let tools: &'static [Tool] = Box::leak(
        specs
            .iter()
            .map(|s| {
                let output = s.output_schema.as_object().cloned().unwrap_or_default();
                Tool::new(s.name, s.description, mcp_input_schema(&s.input_schema))
                    .with_title(s.title)
                    .with_raw_output_schema(Arc::new(output))
                    .with_annotations(
                        ToolAnnotations::with_title(s.title)
                            .read_only(true)
                            .destructive(false)
                            .idempotent(true)
                            .open_world(false),
                    )
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    *cached = Some((key, tools));
    tools
}

/// Every prompt as MCP lists it, built once from `prompts::PROMPTS`.
pub fn mcp_prompts() -> &'static [Prompt] {
    static PROMPTS: OnceLock<Vec<Prompt>> = OnceLock::new();
    PROMPTS.get_or_init(|| {
        prompts::PROMPTS
            .iter()
            .map(|p| {
                let arguments = p
                    .arguments
                    .iter()
                    .map(|a| {
                        PromptArgument::new(a.name)
                            .with_description(a.description)
                            .with_required(a.required)
                    })
                    .collect();
                Prompt::new(p.name, Some(p.description), Some(arguments)).with_title(p.title)
            })
            .collect()
    })
}

/// A rendered prompt as MCP messages.
pub fn prompt_result(rendered: prompts::Rendered) -> GetPromptResult {
    let messages = rendered
        .messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                prompts::Role::User => rmcp::model::Role::User,
                prompts::Role::Assistant => rmcp::model::Role::Assistant,
            };
            PromptMessage::new_text(role, m.text)
        })
        .collect();
    GetPromptResult::new(messages).with_description(rendered.description)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn domain_arguments_carry_the_routing_header_and_nothing_else_does() {
        for tool in mcp_tools() {
            let Some(props) = tool
                .input_schema
                .get("properties")
                .and_then(Value::as_object)
            else {
                continue;
            };
            for (name, prop) in props {
                if name == "domain" {
                    assert_eq!(prop["type"], "string", "{}", tool.name);
                    assert_eq!(prop["x-mcp-header"], "Domain", "{}", tool.name);
                } else {
                    assert_eq!(prop.get("x-mcp-header"), None, "{}.{name}", tool.name);
                }
            }
        }
        let get_dataset = mcp_tools()
            .iter()
            .find(|t| t.name == "get_dataset")
            .unwrap();
        assert_eq!(
            Value::Object(
                get_dataset.input_schema["properties"]["domain"]
                    .as_object()
                    .unwrap()
                    .clone()
            ),
            json!({
                "description": "Domain name, e.g. `policy`.",
                "type": "string",
                "x-mcp-header": "Domain"
            })
        );
    }

    #[test]
    fn an_optional_domain_becomes_an_omittable_string() {
        let schema = json!({
            "type": "object",
            "properties": {
                "domain": {"description": "Target domain.", "anyOf": [{"$ref": "#/$defs/Domain"}, {"type": "null"}], "default": null},
                "domains": {"type": ["array", "null"], "items": {"$ref": "#/$defs/Domain"}}
            },
            "$defs": {"Domain": {"description": "A domain name.", "type": "string"}}
        });
        let out = mcp_input_schema(&schema);
        assert_eq!(
            out["properties"]["domain"],
            json!({"description": "Target domain.", "type": "string", "x-mcp-header": "Domain"})
        );
        assert_eq!(
            out["properties"]["domains"],
            schema["properties"]["domains"]
        );
    }
}
