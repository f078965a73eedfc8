//! JSON-RPC parsing in front of rmcp: the MCP scope gate's body reader (`jsonrpc_requests`,
//! the domains each request names, the scopes a caller lacks), the dataset-URI parser, the
//! reader of JSON-RPC answers for the audit line, and rmcp's own message type, over arbitrary
//! bytes. Nothing may panic; a request the gate finds must name only domains it can see.
#![no_main]

mod common;

use govcat::server::{guard, mcp};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let restricted = common::caller(true);
    let local = common::caller(false);
    for request in guard::jsonrpc_requests(data) {
        let domains = request.requested_domains();
        let missing = guard::missing_scopes(&restricted, &domains);
        assert!(missing.len() <= domains.len());
        assert!(guard::missing_scopes(&local, &domains).is_empty());
        assert!(request.params.get("_meta").is_none());
    }
    let _ = guard::jsonrpc_error(data);
    if let Ok(text) = std::str::from_utf8(data) {
        if let Some((domain, table)) = mcp::parse_dataset_uri(text) {
            assert!(!domain.is_empty() && !table.is_empty(), "{text}");
        }
    }
    let _ = serde_json::from_slice::<rmcp::model::ClientJsonRpcMessage>(data);
});
