//! The cursor decoder: arbitrary text through `Cursor::decode` (a decoded cursor re-encodes
//! and decodes to itself), and cursors that name the served snapshot and request with an
//! arbitrary offset through `find_precedents` — a cursor is refused or addresses a page of
//! the search, never a panic.
//!
//! Input: first byte picks the mode; then either cursor text, or 8 bytes of offset and 1 byte
//! of limit.
#![no_main]

mod common;

use govcat::retrieval::Cursor;
use govcat::tools::{self, Outcome};
use libfuzzer_sys::fuzz_target;
use serde_json::{json, Value};

const DESCRIPTION: &str = "contains an EU IBAN";

/// The digest `find_precedents` binds its cursors to, read off a first page.
fn first_page_cursor() -> &'static Cursor {
    static CURSOR: std::sync::OnceLock<Cursor> = std::sync::OnceLock::new();
    CURSOR.get_or_init(|| {
        let ctx = common::context();
        let args = json!({"description": DESCRIPTION, "limit": 1});
        let Outcome::Ok(page) = tools::call(ctx, &common::caller(false), "find_precedents", args)
        else {
            panic!("first page of '{DESCRIPTION}' failed");
        };
        let next = page["next_cursor"].as_str().expect("a next_cursor");
        Cursor::decode(next).expect("own cursor decodes")
    })
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 1 == 0 {
        let text = String::from_utf8_lossy(rest);
        if let Ok(cursor) = Cursor::decode(&text) {
            assert_eq!(Cursor::decode(&cursor.encode()), Ok(cursor));
        }
        return;
    }
    if rest.len() < 9 {
        return;
    }
    let offset = u64::from_le_bytes(rest[..8].try_into().unwrap_or_default());
    let limit = u64::from(rest[8] % 52);
    let own = first_page_cursor();
    let cursor = Cursor {
        offset: usize::try_from(offset).unwrap_or(usize::MAX),
        ..own.clone()
    };
    let args = json!({"description": DESCRIPTION, "limit": limit, "cursor": cursor.encode()});
    match tools::call(
        common::context(),
        &common::caller(false),
        "find_precedents",
        args,
    ) {
        Outcome::Ok(page) => {
            let total = page["total"].as_u64().unwrap_or(0) as usize;
            let n = page["entries"].as_array().map_or(0, Vec::len);
            assert_eq!(n, total.saturating_sub(cursor.offset).min(limit as usize));
            if let Some(next) = page.get("next_cursor").and_then(Value::as_str) {
                let next = Cursor::decode(next).expect("next cursor decodes");
                assert_eq!(next.offset, cursor.offset + n);
            }
        }
        Outcome::InputRequired(ask) => panic!("find_precedents asked {ask:?}"),
        Outcome::Err(e) => assert_eq!(e.kind, "InvalidArguments", "{e}"),
    }
});
