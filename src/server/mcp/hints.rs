//! Cache hints on `prompts/get` answers. A rendered prompt is fixed for the life of the process
//! and the same for every caller, but rmcp's `GetPromptResult` has no fields for the hints, so
//! both transports add them to the serialised answer: HTTP in the [`prompt_cache_hints`]
//! middleware, stdio in [`super::Stdio`].

use axum::extract::Request;
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::{json, Map, Value};

use crate::limits::MAX_BODY_BYTES;
use crate::server::common::TOOL_LIST_TTL_MS;
use crate::tools::{self, ToolError};

/// Adds the cache hints of a rendered prompt to a `prompts/get` result: fixed for the life of
/// the process and the same for every caller. rmcp's `GetPromptResult` has no fields for them,
/// so both transports add them to the serialised answer: HTTP in [`prompt_cache_hints`], stdio
/// in [`Stdio`].
pub fn add_prompt_cache_hints(result: &mut Map<String, Value>) {
    result.insert("ttlMs".into(), json!(TOOL_LIST_TTL_MS));
    result.insert("cacheScope".into(), json!(tools::CacheScope::Public));
}

/// The ids of the `prompts/get` requests in an MCP POST body (one message or a batch).
fn prompt_get_ids(body: &[u8]) -> Vec<Value> {
    let messages = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Array(batch)) => batch,
        Ok(message) => vec![message],
        Err(_) => Vec::new(),
    };
    messages
        .into_iter()
        .filter(|m| m.get("method").and_then(Value::as_str) == Some("prompts/get"))
        .filter_map(|m| m.get("id").cloned())
        .collect()
}

/// `message` with the prompt cache hints added, when it is the result of one of `ids`.
fn hinted(mut message: Value, ids: &[Value]) -> Value {
    let answers = message.get("id").is_some_and(|id| ids.contains(id));
    if let (true, Some(Value::Object(result))) = (answers, message.get_mut("result")) {
        if result.contains_key("messages") {
            add_prompt_cache_hints(result);
        }
    }
    message
}

/// An MCP answer body (JSON, or the `data:` lines of SSE) with the prompt cache hints added to
/// the results of `ids`; other messages and lines are kept as they are.
pub fn with_prompt_cache_hints(body: &[u8], ids: &[Value]) -> Vec<u8> {
    if let Ok(message) = serde_json::from_slice::<Value>(body) {
        let out = match message {
            Value::Array(batch) => {
                Value::Array(batch.into_iter().map(|m| hinted(m, ids)).collect())
            }
            message => hinted(message, ids),
        };
        return serde_json::to_vec(&out).unwrap_or_else(|_| body.to_vec());
    }
    let Ok(text) = std::str::from_utf8(body) else {
        return body.to_vec();
    };
    let mut out = String::with_capacity(text.len() + 64);
    for line in text.split_inclusive('\n') {
        let parsed = line
            .strip_prefix("data:")
            .and_then(|d| serde_json::from_str::<Value>(d.trim()).ok());
        match parsed {
            Some(message) => {
                let ending = &line[line.trim_end_matches(['\r', '\n']).len()..];
                out.push_str("data: ");
                out.push_str(&hinted(message, ids).to_string());
                out.push_str(ending);
            }
            None => out.push_str(line),
        }
    }
    out.into_bytes()
}

/// In front of rmcp: adds the cache hints to `prompts/get` answers (see
/// [`add_prompt_cache_hints`]). Other requests pass untouched and unbuffered.
pub async fn prompt_cache_hints(request: Request, next: Next) -> Response {
    if request.method() != Method::POST {
        return next.run(request).await;
    }
    let (parts, body) = request.into_parts();
    // `guard::mcp_gate` has read and bounded the body already; this is a copy in memory.
    let bytes = match axum::body::to_bytes(body, MAX_BODY_BYTES).await {
        Ok(b) => b,
        Err(_) => {
            let error = crate::server::common::request_too_large("one JSON-RPC message");
            return (StatusCode::PAYLOAD_TOO_LARGE, Json(error.to_json())).into_response();
        }
    };
    let ids = prompt_get_ids(&bytes);
    let response = next
        .run(Request::from_parts(parts, axum::body::Body::from(bytes)))
        .await;
    if ids.is_empty() {
        return response;
    }
    let (mut head, body) = response.into_parts();
    let body = match axum::body::to_bytes(body, usize::MAX).await {
        Ok(b) => b,
        Err(e) => {
            let error = ToolError::new(
                "ResponseFailed",
                format!("the MCP answer could not be produced ({e}); retry the request"),
            );
            return (StatusCode::INTERNAL_SERVER_ERROR, Json(error.to_json())).into_response();
        }
    };
    head.headers.remove(axum::http::header::CONTENT_LENGTH);
    Response::from_parts(
        head,
        axum::body::Body::from(with_prompt_cache_hints(&body, &ids)),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_answers_gain_cache_hints_and_nothing_else_changes() {
        let ids = prompt_get_ids(
            br#"[{"jsonrpc":"2.0","id":4,"method":"prompts/get","params":{}},
                 {"jsonrpc":"2.0","id":5,"method":"tools/list"}]"#,
        );
        assert_eq!(ids, vec![json!(4)]);
        let prompt = json!({"jsonrpc": "2.0", "id": 4, "result": {"messages": []}});
        let other = json!({"jsonrpc": "2.0", "id": 5, "result": {"tools": []}});
        let hinted_prompt = json!({"jsonrpc": "2.0", "id": 4,
            "result": {"messages": [], "ttlMs": 300000, "cacheScope": "public"}});
        // A JSON body (one message or a batch).
        let body = serde_json::to_vec(&json!([prompt, other])).unwrap();
        let out: Value = serde_json::from_slice(&with_prompt_cache_hints(&body, &ids)).unwrap();
        assert_eq!(out, json!([hinted_prompt, other]));
        // SSE: the priming event and other lines are kept byte for byte.
        let sse = format!("data: \nid: 0/0\nretry: 3000\n\ndata: {prompt}\nid: 0/1\n\n");
        let out = String::from_utf8(with_prompt_cache_hints(sse.as_bytes(), &ids)).unwrap();
        assert_eq!(
            out,
            format!("data: \nid: 0/0\nretry: 3000\n\ndata: {hinted_prompt}\nid: 0/1\n\n")
        );
        // An error answer to a prompts/get has no result to hint.
        let error = json!({"jsonrpc": "2.0", "id": 4, "error": {"code": -32602, "message": "m"}});
        let body = serde_json::to_vec(&error).unwrap();
        let out: Value = serde_json::from_slice(&with_prompt_cache_hints(&body, &ids)).unwrap();
        assert_eq!(out, error);
    }
}
