#![allow(dead_code)] // each test binary uses a different subset

//! A 2025-11-25 MCP session over the plain HTTP client of `client.rs`: open one
//! (`initialize`, then `notifications/initialized`), send requests in it, end it with `DELETE`.
//! For tests that need to see the wire (status codes, headers, fields no SDK keeps).

use std::net::SocketAddr;

use serde_json::{json, Value};

use super::client::{request, Response};
use super::common::server::{MCP_HEADERS, MCP_PROTOCOL};

fn post(addr: SocketAddr, headers: &[(&str, &str)], body: &Value) -> Response {
    request(
        addr,
        "POST",
        "/mcp",
        headers,
        Some(body.to_string().as_bytes()),
    )
    .unwrap_or_else(|e| panic!("POST /mcp: {e}"))
}

/// The `initialize` request with `id`.
pub fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": MCP_PROTOCOL, "capabilities": {},
        "clientInfo": {"name": "govcat-test", "version": "1"}}})
}

/// Opens an MCP session (initialize, then `notifications/initialized`); returns its id.
pub fn mcp_session(addr: SocketAddr) -> String {
    let init = post(addr, MCP_HEADERS, &initialize(0));
    assert_eq!(init.status, 200, "initialize: {}", init.text());
    let session = init
        .header("mcp-session-id")
        .unwrap_or_else(|| panic!("no Mcp-Session-Id: {:?}", init.headers))
        .to_string();
    let ack = post(
        addr,
        &in_session(&session),
        &json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    );
    assert_eq!(ack.status, 202, "initialized: {}", ack.text());
    session
}

/// The headers of a request in `session`.
fn in_session(session: &str) -> Vec<(&str, &str)> {
    let mut headers = MCP_HEADERS.to_vec();
    headers.push(("Mcp-Session-Id", session));
    headers.push(("MCP-Protocol-Version", MCP_PROTOCOL));
    headers
}

/// One request in `session`; returns the JSON-RPC answer with `id` (`result` or `error`).
pub fn mcp_request(
    addr: SocketAddr,
    session: &str,
    id: u64,
    method: &str,
    params: &Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    let resp = post(addr, &in_session(session), &body);
    assert_eq!(resp.status, 200, "{method}: {}", resp.text());
    resp.rpc_messages()
        .into_iter()
        .find(|m| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer with id {id} in {}", resp.text()))
}

/// `DELETE /mcp` for `session`.
pub fn end_session(addr: SocketAddr, session: &str) -> Response {
    let headers = [
        ("Mcp-Session-Id", session),
        ("MCP-Protocol-Version", MCP_PROTOCOL),
    ];
    request(addr, "DELETE", "/mcp", &headers, None).unwrap_or_else(|e| panic!("DELETE /mcp: {e}"))
}
