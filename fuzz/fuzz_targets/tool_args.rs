//! Tool arguments: arbitrary JSON through `tools::call`, the one dispatcher every transport
//! uses, over the demo catalog and a real (hash-embedded) snapshot. Every tool must answer a
//! result, an `input_required` ask or an error — never panic, and never an internal error or
//! an output that violates its own schema.
//!
//! Input: first byte picks the tool (and whether the caller is restricted), the rest is the
//! JSON arguments (not JSON: passed as a JSON string, which must be refused).
#![no_main]

mod common;

use govcat::tools::{self, Outcome};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

const TOOLS: [&str; 7] = [
    "find_precedents",
    "suggest_tags",
    "list_domains",
    "get_dataset",
    "resolve_lf_tag",
    "check_grant_expression",
    "no_such_tool",
];

fuzz_target!(|data: &[u8]| {
    let Some((&selector, rest)) = data.split_first() else {
        return;
    };
    let tool = TOOLS[usize::from(selector & 0x7f) % TOOLS.len()];
    let caller = common::caller(selector & 0x80 != 0);
    let args = match serde_json::from_slice::<Value>(rest) {
        Ok(v) => v,
        Err(_) => Value::String(String::from_utf8_lossy(rest).into_owned()),
    };
    let ctx = common::context();
    if let Outcome::Err(e) = tools::call(ctx, &caller, tool, args.clone()) {
        assert!(
            !common::INTERNAL_KINDS.contains(&e.kind.as_str()),
            "{tool}({args}) failed internally: {e}"
        );
    }
});
