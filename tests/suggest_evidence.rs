//! What `suggest_tags` shows of the search its vote used, and the `identifier` argument both
//! search tools take (issue 43, parts 1 and 6). Through `tools::call`, the dispatcher every
//! transport shares, on the deterministic `HashEmbedder` snapshot: the pairs below depend on
//! the plumbing, not on the model's ranking.
//!
//! Run: `cargo test --test suggest_evidence`.

mod common;

use govcat::catalog::Caller;
use serde_json::{json, Value};

use common::call_ok;

fn call(tool: &str, args: Value) -> Value {
    call_ok(&common::hashed().context(), &Caller::local(), tool, args)
}

/// For the same description and alternatives, suggest_tags' precedents are find_precedents'
/// column entries: the same ids in the same order with the same precedent_confidence and
/// matched_by.
#[test]
fn suggest_tags_precedents_are_find_precedents_column_entries() {
    for args in [
        json!({"description": "IBAN of the customer"}),
        json!({"description": "Schadennummer", "alternatives": ["claim_number", "claim id"]}),
    ] {
        let mut find_args = args.clone();
        find_args["kinds"] = json!(["column"]);
        let found = call("find_precedents", find_args);
        let suggested = call("suggest_tags", args.clone());
        let from_find: Vec<Value> = found["entries"]
            .as_array()
            .expect("entries")
            .iter()
            .enumerate()
            .map(|(i, e)| {
                json!({"id": e["id"], "rank": i + 1, "precedent_confidence": e["precedent_confidence"],
                       "matched_by": e["matched_by"]})
            })
            .collect();
        let from_suggest: Vec<Value> = suggested["precedent_entries"]
            .as_array()
            .expect("precedent_entries")
            .iter()
            .map(|e| {
                json!({"id": e["id"], "rank": e["rank"], "precedent_confidence": e["precedent_confidence"],
                       "matched_by": e["matched_by"]})
            })
            .collect();
        assert_eq!(from_suggest, from_find, "{args}");
        assert_eq!(from_suggest.len(), 10, "{args}");
        let ids: Vec<&Value> = from_find.iter().map(|e| &e["id"]).collect();
        let listed: Vec<&Value> = suggested["precedents"]
            .as_array()
            .expect("precedents")
            .iter()
            .collect();
        assert_eq!(listed, ids, "{args}");
    }
}

/// Pair: "number of sick days" is a count, so without `identifier` key columns are weighted
/// down; `identifier: true` leaves them as they rank, and the echo says which applied.
#[test]
fn a_count_weights_key_columns_down_unless_the_caller_says_an_identifier_is_asked_for() {
    let inferred = call(
        "find_precedents",
        json!({"description": "number of sick days"}),
    );
    assert_eq!(inferred["request"]["identifier"], json!(false));
    assert_eq!(inferred["request"]["identifier_from"], json!("inferred"));
    assert_eq!(inferred["request"]["key_column_weight"], json!(0.7));
    let told = call(
        "find_precedents",
        json!({"description": "number of sick days", "identifier": true}),
    );
    assert_eq!(told["request"]["identifier"], json!(true));
    assert_eq!(told["request"]["identifier_from"], json!("argument"));
    assert_eq!(told["request"]["key_column_weight"], json!(1.0));
    // And the other way round: a record number the caller says is not an identifier.
    let not = call(
        "find_precedents",
        json!({"description": "policy number", "identifier": false}),
    );
    assert_eq!(not["request"]["identifier"], json!(false));
    assert_eq!(not["request"]["key_column_weight"], json!(0.7));
    // suggest_tags passes it on to its search.
    let suggested = call(
        "suggest_tags",
        json!({"description": "number of sick days", "identifier": true}),
    );
    assert_eq!(suggested["request"]["identifier"], json!(true));
    assert_eq!(suggested["request"]["identifier_from"], json!("argument"));
}

/// Pair: the four `steuer_id` columns of the demo agree on sensitivity (high) and not on
/// lawful_basis (customer.customer_master's is `contract`, the other three `legal_obligation`),
/// so a phrasing naming one is evidence for the first key only. What the caller may not read, or
/// the column under test, is not a copy.
#[test]
fn a_named_columns_copies_agree_only_on_the_keys_they_carry_one_value_of() {
    use govcat::index::documents::Document;
    use govcat::tools::calibrate::copies_agree;
    let ctx = common::hashed().context();
    let (snapshot, _) = ctx.retrieval_parts().expect("snapshot");
    assert_eq!(snapshot.columns_named("steuerId").len(), 4);
    let all = snapshot.domains.clone();
    let without_customer: Vec<String> = all.iter().filter(|d| *d != "customer").cloned().collect();
    let none = |_: &Document| false;
    let under_test = |d: &Document| d.id == "column:customer.customer_master.steuer_id";
    let agree = |key: &str, readable: &[String], exclude: &dyn Fn(&Document) -> bool| {
        copies_agree(&ctx, &snapshot, "steuer_id", key, readable, exclude)
    };
    assert!(agree("sensitivity", &all, &none));
    assert!(!agree("lawful_basis", &all, &none));
    assert!(agree("lawful_basis", &without_customer, &none));
    assert!(agree("lawful_basis", &all, &under_test));
}
