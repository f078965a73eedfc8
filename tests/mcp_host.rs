//! What an MCP host meets in its first minute, on the wire: `DELETE /mcp` ends a session as the
//! official clients expect (204 for an open session, 404 for one that is not), and the
//! `prompts/get` answer carries `ttlMs` and `cacheScope` over HTTP and stdio (rmcp's result type
//! has no fields for them, and the SDKs drop fields they do not know, so only the wire shows
//! them). Servers run without the embedding model: nothing here searches.

#[path = "server_http/client.rs"]
mod client;
mod common;
#[path = "server_http/mcp_session.rs"]
mod mcp_session;

use common::server::{Served, StdioServer};
use mcp_session::{end_session, mcp_request, mcp_session};
use serde_json::{json, Value};

fn exact_only_server(tmp: &tempfile::TempDir) -> Served {
    let no_model = tmp.path().to_str().expect("utf-8 temp path");
    Served::start(&[], &[("GOVCAT_MODEL_DIR", no_model)])
}

#[test]
fn deleting_an_open_session_is_204_and_a_session_that_is_not_open_404() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let session = mcp_session(server.addr);
    let ended = end_session(server.addr, &session);
    assert_eq!(
        (ended.status, ended.body.len()),
        (204, 0),
        "{}",
        ended.text()
    );
    let again = end_session(server.addr, &session);
    assert_eq!(again.status, 404);
    assert_eq!(
        again.json(),
        json!({
            "error": "SessionNotFound",
            "message": format!("MCP session '{session}' is not open on this server (it was closed, expired, or began in another server process); start a new session with initialize"),
            "session": session,
        })
    );
    let never = end_session(server.addr, "no-such-session");
    assert_eq!(never.status, 404);
    assert_eq!(never.json()["session"], "no-such-session");
    // Another open session is not touched by either.
    let other = mcp_session(server.addr);
    let listed = mcp_request(server.addr, &other, 1, "prompts/list", &json!({}));
    assert_eq!(listed["result"]["prompts"][0]["name"], "tag-new-column");
    assert_eq!(end_session(server.addr, &other).status, 204);
}

fn tag_new_column() -> Value {
    json!({"name": "tag-new-column", "arguments": {"description": "contains an EU IBAN"}})
}

#[test]
fn prompt_answers_carry_cache_hints_over_http_and_stdio() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let session = mcp_session(server.addr);
    let listed = mcp_request(server.addr, &session, 1, "prompts/list", &json!({}));
    assert_eq!(
        (&listed["result"]["ttlMs"], &listed["result"]["cacheScope"]),
        (&json!(300000), &json!("public"))
    );
    let over_http = mcp_request(server.addr, &session, 2, "prompts/get", &tag_new_column());
    let result = &over_http["result"];
    assert_eq!(
        (&result["ttlMs"], &result["cacheScope"]),
        (&json!(300000), &json!("public")),
        "{over_http}"
    );
    assert_eq!(result["messages"].as_array().map(Vec::len), Some(3));

    let mut stdio = StdioServer::start(&tmp.path().join("audit.jsonl"), "");
    let over_stdio = stdio.call(1, "prompts/get", tag_new_column());
    assert_eq!(over_stdio["result"], over_http["result"]);
    let listed_stdio = stdio.call(2, "prompts/list", json!({}));
    assert_eq!(listed_stdio["result"], listed["result"]);
}

#[test]
fn a_prompt_error_is_invalid_params_naming_the_arguments_and_carries_no_hints() {
    let tmp = tempfile::tempdir().unwrap();
    let server = exact_only_server(&tmp);
    let session = mcp_session(server.addr);
    let missing = mcp_request(
        server.addr,
        &session,
        1,
        "prompts/get",
        &json!({"name": "review-grant", "arguments": {"role": "global-analytics-reader"}}),
    );
    assert_eq!(missing.get("result"), None);
    assert_eq!(missing["error"]["code"], -32602);
    let data = &missing["error"]["data"];
    assert_eq!(
        (&data["error"], &data["prompt"], &data["argument"]),
        (
            &json!("MissingPromptArgument"),
            &json!("review-grant"),
            &json!("domain")
        )
    );
    let names: Vec<&str> = data["arguments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["role", "domain", "table"]);
}
