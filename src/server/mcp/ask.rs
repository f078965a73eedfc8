//! An `input_required` ask in MCP: on protocol 2026-07-28 an MRTR `InputRequiredResult` with
//! one form elicitation (an `enum` per missing key), whose answers a retry carries and
//! [`merge_answers`] puts into the `tags` argument; on older protocols a tool error listing the
//! missing keys and their allowed values ([`ask_as_error`]).

use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitationSchema, InputRequest, InputRequests,
    InputRequiredResult, InputResponses,
};
use rmcp::ErrorData as McpError;
use serde_json::{json, Map, Value};

use super::{ASK_ARGUMENT, ASK_KEY};
use crate::ontology::OntologyError;
use crate::tools::{InputRequired, ToolError};

/// The MRTR form of an ask: one form elicitation with an `enum` of allowed values per key.
pub fn ask_result(ask: &InputRequired) -> Result<InputRequiredResult, McpError> {
    let mut properties = Map::new();
    for m in &ask.missing {
        properties.insert(
            m.key.0.clone(),
            json!({
                "type": "string",
                "title": m.key.0,
                "description": m.description,
                "enum": m.allowed,
            }),
        );
    }
    let required: Vec<&str> = ask.missing.iter().map(|m| m.key.0.as_str()).collect();
    let schema: ElicitationSchema = serde_json::from_value(json!({
        "type": "object",
        "properties": properties,
        "required": required,
    }))
    .map_err(|e| {
        McpError::internal_error(
            format!("the input request for {required:?} could not be built ({e}); report this to the govcat maintainers"),
            None,
        )
    })?;
    let request = InputRequest::Elicitation(ElicitRequest::new(
        ElicitRequestParams::FormElicitationParams {
            meta: None,
            message: ask.message.clone(),
            requested_schema: schema,
        },
    ));
    Ok(InputRequiredResult::from_input_requests(
        InputRequests::from([(ASK_KEY.to_string(), request)]),
    ))
}

/// The ask as a tool error, for clients whose protocol cannot carry `input_required`.
pub fn ask_as_error(ask: &InputRequired, protocol: &str) -> ToolError {
    ToolError::new(
        "InputRequired",
        format!(
            "{}; protocol {protocol} cannot carry an input request, so call again with every key set to one of its allowed values (listed in `missing`)",
            ask.message
        ),
    )
    .with("missing", &ask.missing)
}

/// What the client answered to an ask.
#[derive(Debug, PartialEq)]
pub enum Answer {
    /// The answers were merged into the arguments.
    Accepted,
    /// The client declined or cancelled (`action`).
    Refused(String),
}

/// Merges the answers of a retry into `args.tags`. A key answered with a value other than the
/// one already given is a conflict, not an override.
pub fn merge_answers(
    args: &mut Map<String, Value>,
    responses: &InputResponses,
) -> Result<Answer, ToolError> {
    let response = responses.get(ASK_KEY).ok_or_else(|| {
        ToolError::new(
            "InvalidArguments",
            format!(
                "the retry carries no answer under '{ASK_KEY}' (it has: {}); answer the input request, or call again with every tag key set",
                responses.keys().cloned().collect::<Vec<_>>().join(", ")
            ),
        )
    })?;
    let action = response
        .get("action")
        .and_then(Value::as_str)
        .unwrap_or("(none)");
    if action != "accept" {
        return Ok(Answer::Refused(action.to_string()));
    }
    let content = response
        .get("content")
        .and_then(Value::as_object)
        .ok_or_else(|| {
            ToolError::new(
                "InvalidArguments",
                "the accepted answer has no `content` object; answer each missing key with one of its allowed values",
            )
        })?;
    let tags = args
        .entry(ASK_ARGUMENT)
        .or_insert_with(|| Value::Object(Map::new()));
    let Value::Object(tags) = tags else {
        return Err(ToolError::new(
            "InvalidArguments",
            format!(
                "argument '{ASK_ARGUMENT}' is not an object; give it as {{\"key\": \"value\"}}"
            ),
        ));
    };
    for (key, value) in content {
        let Some(value) = value.as_str() else {
            return Err(ToolError::new(
                "InvalidArguments",
                format!("the answer for '{key}' is {value}, not a string; answer with one of the key's allowed values"),
            )
            .with("key", key));
        };
        match tags.get(key).and_then(Value::as_str) {
            Some(given) if given != value => {
                return Err(OntologyError::ConflictingValues {
                    key: key.clone(),
                    values: vec![given.to_string(), value.to_string()],
                }
                .into())
            }
            _ => {
                tags.insert(key.clone(), Value::String(value.to_string()));
            }
        }
    }
    Ok(Answer::Accepted)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ontology::{MissingKey, TagKey, TagValue};

    fn ask() -> InputRequired {
        InputRequired {
            message: "the tag set lacks residency; give one value for each".into(),
            missing: vec![MissingKey {
                key: TagKey("residency".into()),
                description: "where the data is stored".into(),
                allowed: ["eu", "ch"].map(|v| TagValue(v.into())).to_vec(),
            }],
        }
    }

    #[test]
    fn an_ask_becomes_one_form_elicitation_with_an_enum_per_missing_key() {
        let result = serde_json::to_value(ask_result(&ask()).unwrap()).unwrap();
        assert_eq!(
            result,
            json!({
                "resultType": "input_required",
                "inputRequests": {
                    "missing_tags": {
                        "method": "elicitation/create",
                        "params": {
                            "mode": "form",
                            "message": "the tag set lacks residency; give one value for each",
                            "requestedSchema": {
                                "type": "object",
                                "properties": {
                                    "residency": {
                                        "type": "string",
                                        "title": "residency",
                                        "description": "where the data is stored",
                                        "enum": ["eu", "ch"]
                                    }
                                },
                                "required": ["residency"]
                            }
                        }
                    }
                }
            })
        );
    }

    #[test]
    fn accepted_answers_fill_the_tags_and_a_different_value_is_a_conflict() {
        let mut args = Map::new();
        args.insert("tags".into(), json!({"sensitivity": "high"}));
        let answers = InputResponses::from([(
            ASK_KEY.to_string(),
            json!({"action": "accept", "content": {"residency": "eu"}}),
        )]);
        assert_eq!(merge_answers(&mut args, &answers), Ok(Answer::Accepted));
        assert_eq!(
            args["tags"],
            json!({"sensitivity": "high", "residency": "eu"})
        );

        let conflicting = InputResponses::from([(
            ASK_KEY.to_string(),
            json!({"action": "accept", "content": {"sensitivity": "public"}}),
        )]);
        let e = merge_answers(&mut args, &conflicting).unwrap_err();
        assert_eq!(e.kind, "ConflictingTagValues");
        assert_eq!(e.details["values"], json!(["high", "public"]));

        let declined = InputResponses::from([(ASK_KEY.to_string(), json!({"action": "decline"}))]);
        assert_eq!(
            merge_answers(&mut args, &declined),
            Ok(Answer::Refused("decline".into()))
        );
    }
}
