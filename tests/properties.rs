//! Property tests (issue 7, item 2) for `find_precedents` through the tool layer, over the demo
//! catalog's snapshot built with the deterministic `HashEmbedder` (`tests/common`), so they run
//! in seconds without the model:
//!
//! - every entry exists in the snapshot (the closed set) and every tag value is in the
//!   ontology, for arbitrary descriptions (catalog words, German words, random unicode) and
//!   limits, for the local operator and a caller who may read two domains;
//! - following `next_cursor` to the end yields disjoint pages whose concatenation equals the
//!   same search paged at the largest limit, in the same order, and `total` counts them;
//! - a cursor decodes to the value it encodes, and a mutated cursor is refused with
//!   `InvalidCursor` — never a panic, never a shifted page;
//! - `suggest_tags` proposes or abstains (with a reason) on every ontology key, never both or
//!   neither, and carries the search's hint exactly when no precedent matched.
//!
//! Run: `cargo test --test properties` (`PROPTEST_CASES=N` overrides every case count).

mod common;

use std::collections::{BTreeSet, HashMap};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine;

use govcat::catalog::{Caller, FieldState};
use govcat::limits::{MAX_DESCRIPTION_CHARS, MAX_LIMIT};
use govcat::retrieval::Cursor;
use govcat::tools::{self, Context, Outcome};
use proptest::prelude::*;
use proptest::sample::Index;
use serde_json::{json, Value};

use common::{call_ok, caller_reading, ids};

/// Words of the demo catalog's column names and descriptions.
const CATALOG_WORDS: &[&str] = &[
    "iban",
    "customer",
    "address",
    "birth",
    "date",
    "email",
    "phone",
    "claim",
    "policy",
    "premium",
    "salary",
    "account",
    "fraud",
    "score",
    "consent",
    "tax",
    "country",
    "name",
    "payment",
    "amount",
    "employee",
    "risk",
    "EU",
    "contains an EU IBAN",
    "\"date of birth\"",
    "cust*",
];

/// German words, some of them in the glossary, some compounds.
const GERMAN_WORDS: &[&str] = &[
    "Geburtsdatum",
    "Kontonummer",
    "Versicherungsnehmer",
    "Schaden",
    "Gehalt",
    "Anschrift",
    "Steuernummer",
    "Bankverbindung",
    "Kündigung",
    "Prämie",
    "Quellensteuer",
    "Straße",
];

/// The two domains a restricted caller may read.
const RESTRICTED_TO: [&str; 2] = ["claims", "fraud"];

fn word() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => prop::sample::select(CATALOG_WORDS).prop_map(str::to_string),
        2 => prop::sample::select(GERMAN_WORDS).prop_map(str::to_string),
        1 => "\\PC{1,12}",
    ]
}

/// Descriptions: a few words, or random unicode (possibly only spaces, which must be refused).
fn description() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => prop::collection::vec(word(), 1..4).prop_map(|w| w.join(" ")),
        1 => "\\PC{1,40}",
        1 => "[ \t\n]{0,3}",
    ]
}

/// Descriptions that usually match something, for paging.
fn matching_description() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            3 => prop::sample::select(CATALOG_WORDS).prop_map(str::to_string),
            1 => prop::sample::select(GERMAN_WORDS).prop_map(str::to_string),
        ],
        1..3,
    )
    .prop_map(|w| w.join(" "))
}

fn mode() -> impl Strategy<Value = Option<&'static str>> {
    prop::option::of(prop::sample::select(&["hybrid", "bm25", "dense"][..]))
}

fn caller(restricted: bool) -> Caller {
    if restricted {
        caller_reading("restricted", &RESTRICTED_TO)
    } else {
        Caller::local()
    }
}

fn find_args(description: &str, limit: usize, mode: Option<&str>) -> Value {
    let mut args = json!({"description": description, "limit": limit});
    if let Some(mode) = mode {
        args["mode"] = json!(mode);
    }
    args
}

/// Every page of a search from the first, following `next_cursor`.
fn all_pages(ctx: &Context, caller: &Caller, args: &Value) -> Vec<Value> {
    let mut pages = vec![call_ok(ctx, caller, "find_precedents", args.clone())];
    while let Some(cursor) = pages.last().and_then(|p| p["next_cursor"].as_str()) {
        assert!(pages.len() <= 500, "paging did not end: {args}");
        let mut next = args.clone();
        next["cursor"] = json!(cursor);
        pages.push(call_ok(ctx, caller, "find_precedents", next));
    }
    pages
}

/// Applies one edit to a cursor's text: replace, insert or delete a character, truncate, swap
/// two neighbours, or (ops 5-8) change one digit of the offset inside the encoded JSON.
fn mutate(cursor: &str, op: u8, at: Index, c: char) -> String {
    if op % 9 >= 5 {
        return alter_offset(cursor, u8::try_from(u32::from(c) % 9).unwrap_or(0) + 1);
    }
    let mut chars: Vec<char> = cursor.chars().collect();
    let i = at.index(chars.len());
    match op % 9 {
        0 => chars[i] = c,
        1 => chars.insert(i, c),
        2 => {
            chars.remove(i);
        }
        3 => chars.truncate(i),
        _ => {
            let j = (i + 1) % chars.len();
            chars.swap(i, j);
        }
    }
    chars.into_iter().collect()
}

/// The cursor with the first digit of its offset increased by `by` (mod 10), re-encoded:
/// what an assistant that copies a cursor imperfectly could send.
fn alter_offset(cursor: &str, by: u8) -> String {
    let Ok(mut bytes) = URL_SAFE_NO_PAD.decode(cursor) else {
        return cursor.to_string();
    };
    let marker = b"\"offset\":";
    if let Some(at) = bytes.windows(marker.len()).position(|w| w == marker) {
        let digit = &mut bytes[at + marker.len()];
        *digit = b'0' + (*digit - b'0' + by) % 10;
    }
    URL_SAFE_NO_PAD.encode(bytes)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_entry_is_in_the_snapshot_and_every_tag_value_in_the_ontology(
        description in description(),
        limit in 0usize..=60,
        mode in mode(),
        restricted in any::<bool>(),
    ) {
        let built = common::hashed();
        let ctx = built.context();
        let snapshot = built.snapshot();
        let caller = caller(restricted);
        let docs: HashMap<&str, &govcat::index::documents::Document> =
            snapshot.docs.iter().map(|d| (d.id.as_str(), d)).collect();
        let args = find_args(&description, limit, mode);
        let over_a_bound = description.chars().count() > MAX_DESCRIPTION_CHARS || limit > MAX_LIMIT;
        let valid = !over_a_bound && !description.trim().is_empty() && limit >= 1;
        let result = match tools::call(&ctx, &caller, "find_precedents", args.clone()) {
            Outcome::Ok(v) => v,
            Outcome::Err(e) => {
                prop_assert!(!valid, "{args} failed: {e}");
                // Bounds are checked first (src/limits.rs), then what is merely malformed.
                let expected = if over_a_bound { "LimitExceeded" } else { "InvalidArguments" };
                prop_assert_eq!(e.kind.as_str(), expected, "{}", args);
                return Ok(());
            }
            Outcome::InputRequired(ask) => {
                return Err(TestCaseError::fail(format!("{args} asked for input: {ask:?}")));
            }
        };
        prop_assert!(valid, "{} was accepted", args);
        let entries = result["entries"].as_array().cloned().unwrap_or_default();
        prop_assert!(entries.len() <= limit);
        for e in &entries {
            let id = e["id"].as_str().unwrap_or_default();
            let doc = docs.get(id);
            prop_assert!(doc.is_some(), "entry {} is not in the snapshot", id);
            let doc = doc.unwrap();
            prop_assert_eq!(e["kind"].as_str(), Some(doc.kind.as_str()));
            if let Some(domain) = e["domain"].as_str() {
                prop_assert!(
                    !restricted || RESTRICTED_TO.contains(&domain),
                    "restricted caller got {}", id
                );
            }
            if let (Some(key), Some(value)) = (e["key"].as_str(), e["value"].as_str()) {
                prop_assert!(ctx.ontology.contains(key, value), "{}={} in {}", key, value, id);
            }
            if let Some(tags) = e["lf_tags"].as_object() {
                for (key, tag) in tags {
                    prop_assert!(ctx.ontology.key(key).is_some(), "key {} of {}", key, id);
                    let state: FieldState = serde_json::from_value(tag["state"].clone())
                        .map_err(|err| TestCaseError::fail(format!("{id}: {err}")))?;
                    match tag["value"].as_str() {
                        Some(value) => {
                            prop_assert_eq!(state, FieldState::Present);
                            prop_assert!(
                                ctx.ontology.contains(key, value),
                                "{}={} of {} is outside the ontology", key, value, id
                            );
                        }
                        None => prop_assert_ne!(state, FieldState::Present),
                    }
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    #[test]
    fn pages_are_disjoint_and_their_union_is_the_whole_search_in_order(
        description in matching_description(),
        page_size in 1usize..=12,
        mode in mode(),
        restricted in any::<bool>(),
    ) {
        let built = common::hashed();
        let ctx = built.context();
        let caller = caller(restricted);
        let reference_pages = all_pages(&ctx, &caller, &find_args(&description, 50, mode));
        let reference: Vec<String> = reference_pages.iter().flat_map(ids).collect();
        let total = reference_pages[0]["total"].as_u64().unwrap_or(0) as usize;
        prop_assert_eq!(reference.len(), total);

        let pages = all_pages(&ctx, &caller, &find_args(&description, page_size, mode));
        let mut seen = BTreeSet::new();
        for (n, page) in pages.iter().enumerate() {
            prop_assert_eq!(page["total"].as_u64(), Some(total as u64));
            let page_ids = ids(page);
            let full = n + 1 < pages.len();
            prop_assert!(!full || page_ids.len() == page_size, "short page {} of {}", n, pages.len());
            for id in page_ids {
                prop_assert!(seen.insert(id.clone()), "{} on two pages", id);
            }
        }
        let paged: Vec<String> = pages.iter().flat_map(ids).collect();
        prop_assert_eq!(paged, reference);
    }

    #[test]
    fn a_mutated_cursor_is_refused_never_a_shifted_page(
        description in matching_description(),
        page_size in 1usize..=5,
        op in any::<u8>(),
        at in any::<Index>(),
        c in prop_oneof![
            4 => prop::sample::select(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
                    .chars()
                    .collect::<Vec<_>>(),
            ),
            1 => any::<char>(),
        ],
    ) {
        let built = common::hashed();
        let ctx = built.context();
        let caller = Caller::local();
        let args = find_args(&description, page_size, None);
        let first = call_ok(&ctx, &caller, "find_precedents", args.clone());
        let Some(cursor) = first["next_cursor"].as_str() else {
            return Ok(()); // a single page: nothing to page with
        };
        let mut next = args.clone();
        next["cursor"] = json!(cursor);
        let expected = ids(&call_ok(&ctx, &caller, "find_precedents", next.clone()));

        let mutated = mutate(cursor, op, at, c);
        next["cursor"] = json!(mutated);
        match tools::call(&ctx, &caller, "find_precedents", next) {
            Outcome::Err(e) => prop_assert_eq!(e.kind.as_str(), "InvalidCursor", "{}", e),
            Outcome::Ok(page) => {
                // Accepted only when it still says exactly what the original said.
                prop_assert_eq!(Cursor::decode(&mutated), Cursor::decode(cursor));
                prop_assert_eq!(ids(&page), expected, "{} became {}", cursor, mutated);
            }
            Outcome::InputRequired(ask) => {
                return Err(TestCaseError::fail(format!("asked for input: {ask:?}")));
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn a_cursor_decodes_to_what_it_encodes(
        snapshot in "\\PC{0,40}",
        offset in any::<usize>(),
        request in "[0-9a-f]{16}|\\PC{0,20}",
    ) {
        let cursor = Cursor { snapshot, offset, request };
        prop_assert_eq!(Cursor::decode(&cursor.encode()), Ok(cursor));
    }

    #[test]
    fn a_cursor_past_the_end_answers_an_empty_page_never_a_panic(
        offset in prop_oneof![0usize..400, (usize::MAX - 100)..=usize::MAX, any::<usize>()],
        limit in 1usize..=50,
    ) {
        let built = common::hashed();
        let ctx = built.context();
        let caller = Caller::local();
        let args = find_args("contains an EU IBAN", 1, None);
        let first = call_ok(&ctx, &caller, "find_precedents", args.clone());
        let own = Cursor::decode(first["next_cursor"].as_str().unwrap_or_default())
            .map_err(|e| TestCaseError::fail(format!("own cursor: {e}")))?;
        let total = first["total"].as_u64().unwrap_or(0) as usize;
        let forged = Cursor { offset, ..own };
        let page = call_ok(
            &ctx,
            &caller,
            "find_precedents",
            json!({"description": "contains an EU IBAN", "limit": limit, "cursor": forged.encode()}),
        );
        let n = ids(&page).len();
        prop_assert_eq!(n, total.saturating_sub(offset).min(limit));
        prop_assert_eq!(page["next_cursor"].is_string(), offset.saturating_add(limit) < total);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// `suggest_tags` never drops a key silently: each ontology key is either proposed (from
    /// an ontology value) or abstained with a reason, never both; the hint comes exactly when
    /// no precedent matched.
    #[test]
    fn every_key_is_proposed_or_abstained_with_a_reason(
        description in description(),
        restricted in any::<bool>(),
    ) {
        // A blank description is an InvalidArguments error (tests/retrieval_fidelity.rs).
        prop_assume!(!description.trim().is_empty());
        let built = common::hashed();
        let ctx = built.context();
        let result = call_ok(&ctx, &caller(restricted), "suggest_tags", json!({"description": description}));
        let proposed = result["proposal"]["tags"].as_object().cloned().unwrap_or_default();
        let abstained = result["proposal"]["abstained"].as_object().cloned().unwrap_or_default();
        for key in ctx.ontology.key_names() {
            prop_assert!(
                proposed.contains_key(&key) != abstained.contains_key(&key),
                "{key}: proposed {:?}, abstained {:?}", proposed.get(&key), abstained.get(&key)
            );
            if let Some(value) = proposed.get(&key) {
                prop_assert!(ctx.ontology.contains(&key, value.as_str().unwrap_or_default()));
            }
            if let Some(why) = abstained.get(&key) {
                prop_assert!(!why.as_str().unwrap_or_default().is_empty());
            }
        }
        prop_assert_eq!(proposed.len() + abstained.len(), ctx.ontology.key_names().len());
        let matched = result["precedents"].as_array().is_some_and(|p| !p.is_empty());
        prop_assert_eq!(result["hint"].is_string(), !matched);
    }
}
