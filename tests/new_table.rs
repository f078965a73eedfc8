//! `suggest_tags` for a column of a table that is not in the catalog yet (issue 30, part 1):
//! the flagship case, "I am adding a column to a new table". Pairs against an existing table,
//! `domain` alone, an unknown domain, a near-miss name and a table without its domain (placed
//! in the one domain that has it). The
//! tools are called through `tools::call`, the dispatcher REST, MCP and the CLI share; the
//! deterministic `HashEmbedder` snapshot is enough (nothing here depends on ranking).
//!
//! Run: `cargo test --test new_table`.

mod common;

use govcat::catalog::Caller;
use serde_json::{json, Value};

use common::{call_err, call_ok};

fn suggest(args: Value) -> Value {
    call_ok(
        &common::hashed().context(),
        &Caller::local(),
        "suggest_tags",
        args,
    )
}

fn key<'a>(result: &'a Value, name: &str) -> &'a Value {
    result["keys"]
        .as_array()
        .and_then(|keys| keys.iter().find(|k| k["key"] == name))
        .unwrap_or_else(|| panic!("no key {name} in {result}"))
}

#[test]
fn a_new_table_inherits_its_databases_tags_and_says_it_was_treated_as_new() {
    let result = suggest(json!({"description": "glass damage amount in euro",
                                "domain": "fraud", "table": "glass_damage_signals"}));
    assert_eq!(result["target"], "fraud.glass_damage_signals");
    assert_eq!(result["target_exists"], false);
    assert_eq!(
        result["target_note"],
        "table fraud.glass_damage_signals is not in the catalog: treated as a new table of \
         domain fraud (no sibling columns; it inherits the fraud_curated database's tags \
         (lawful_basis=legitimate_interest, residency=eu))"
    );
    assert_eq!(result.get("did_you_mean"), None);
    // The fraud database sets residency and lawful_basis: both inherited from it.
    for (name, value) in [("residency", "eu"), ("lawful_basis", "legitimate_interest")] {
        assert_eq!(
            key(&result, name)["inherited_in_target"],
            json!({"value": value, "assigned_at": "database"})
        );
        assert_eq!(result["proposal"]["tags"][name], value);
        assert_eq!(result["proposal"]["basis"][name], "inherited");
    }
    // The database sets no sensitivity: nothing inherited, and no sibling counts anywhere.
    assert_eq!(
        key(&result, "sensitivity")["inherited_in_target"],
        Value::Null
    );
    for k in result["keys"].as_array().into_iter().flatten() {
        assert_eq!(k["excluded_siblings"], Value::Null, "{k}");
        for c in k["candidates"].as_array().into_iter().flatten() {
            assert_eq!(c["siblings"], Value::Null, "{c}");
        }
    }
}

#[test]
fn an_existing_table_still_counts_its_siblings_and_says_it_exists() {
    let result = suggest(json!({"description": "IBAN of the customer",
                                "domain": "analytics", "table": "customer_360_global_extract"}));
    assert_eq!(result["target"], "analytics.customer_360_global_extract");
    assert_eq!(result["target_exists"], true);
    assert_eq!(result.get("target_note"), None);
    assert_eq!(
        key(&result, "residency")["inherited_in_target"],
        json!({"value": "global", "assigned_at": "table"})
    );
    assert_ne!(key(&result, "residency")["excluded_siblings"], Value::Null);
}

#[test]
fn a_domain_alone_is_a_new_unnamed_table_of_it_and_no_target_is_none() {
    let result = suggest(json!({"description": "glass damage amount", "domain": "claims"}));
    assert_eq!(result["target"], "claims");
    assert_eq!(result["target_exists"], false);
    assert_eq!(
        result["target_note"],
        "no table named: treated as a new table of domain claims (no sibling columns; it \
         inherits the claims_curated database's tags (residency=eu))"
    );
    assert_eq!(result["proposal"]["basis"]["residency"], "inherited");

    let without = suggest(json!({"description": "glass damage amount"}));
    assert_eq!(without["target"], Value::Null);
    assert_eq!(without["target_exists"], Value::Null);
    assert_eq!(without.get("target_note"), None);
    assert_eq!(
        key(&without, "residency")["inherited_in_target"],
        Value::Null
    );
}

#[test]
fn a_near_miss_table_name_is_new_and_names_the_close_existing_table() {
    let result = suggest(json!({"description": "IBAN of the customer",
                                "domain": "analytics", "table": "customer_360_global"}));
    assert_eq!(result["target_exists"], false);
    assert_eq!(
        result["did_you_mean"],
        json!(["customer_360_global_extract"])
    );
    let note = result["target_note"].as_str().unwrap_or_default();
    assert!(
        note.ends_with(
            "; did you mean analytics.customer_360_global_extract? If so, call suggest_tags \
             again with that table to count its columns' tags"
        ),
        "{note}"
    );
    // get_dataset keeps its 404 for a table that is not there.
    let e = call_err(
        &common::hashed().context(),
        &Caller::local(),
        "get_dataset",
        json!({"domain": "analytics", "table": "customer_360_global"}),
    );
    assert_eq!(e.kind, "DatasetNotFound");
}

#[test]
fn a_domain_the_catalog_lacks_answers_from_precedents_and_names_the_close_domains() {
    let unknown = suggest(
        json!({"description": "glass damage amount", "domain": "claim",
                                 "table": "x"}),
    );
    let precedents_only = suggest(json!({"description": "glass damage amount"}));
    assert_eq!(unknown["target"], Value::Null);
    assert_eq!(unknown["target_exists"], Value::Null);
    assert_eq!(
        unknown["target_note"],
        "domain claim is not in this catalog: proposed from precedents only (no siblings, \
         nothing inherited); to place the column, call again with an existing domain (did you \
         mean claims?)"
    );
    assert_eq!(unknown["proposal"], precedents_only["proposal"]);
    assert_eq!(precedents_only.get("target_note"), None);
    let far = suggest(json!({"description": "glass damage amount", "domain": "glass"}));
    assert!(far["target_note"]
        .as_str()
        .unwrap_or_default()
        .ends_with("(list_domains names the domains you may read)"));
}

/// A table named without its domain: placed in the one readable domain that has it (and the
/// answer equals the call that names the domain, but for the note that says where it came
/// from); in none, precedents only with a note; in several, an error listing them — unless the
/// caller may read only one of them.
#[test]
fn a_table_without_its_domain_is_placed_in_the_one_domain_that_has_it_and_only_then() {
    let ctx = common::hashed().context();
    let placed = suggest(json!({"description": "IBAN of the payee", "table": "claim_payment"}));
    let named = suggest(
        json!({"description": "IBAN of the payee", "domain": "claims",
                               "table": "claim_payment"}),
    );
    assert_eq!(placed["target"], "claims.claim_payment");
    assert_eq!(placed["target_exists"], true);
    assert_eq!(
        placed["target_note"],
        "domain claims taken from the table's name: the one domain you may read that has a \
         table claim_payment"
    );
    assert_eq!(named["target_note"], Value::Null);
    assert_eq!(placed["keys"], named["keys"]);
    assert_eq!(placed["proposal"], named["proposal"]);

    let unplaced = suggest(json!({"description": "IBAN of the payee", "table": "glass_damage"}));
    let precedents_only = suggest(json!({"description": "IBAN of the payee"}));
    assert_eq!(unplaced["target"], Value::Null);
    assert_eq!(unplaced["target_exists"], Value::Null);
    assert_eq!(
        unplaced["target_note"],
        "no domain you may read has a table glass_damage: proposed from precedents only (no \
         siblings, nothing inherited); for a new table, call again with the domain it goes into \
         (list_domains names them)"
    );
    assert_eq!(unplaced["proposal"], precedents_only["proposal"]);

    let e = call_err(
        &ctx,
        &Caller::local(),
        "suggest_tags",
        json!({"description": "lead source", "table": "lead"}),
    );
    assert_eq!(e.kind, "InvalidArguments");
    let json = e.to_json();
    assert_eq!(json["argument"], "domain");
    assert_eq!(json["domains"], json!(["customer", "marketing"]));
    let one = call_ok(
        &ctx,
        &common::caller_reading("marketer", &["marketing"]),
        "suggest_tags",
        json!({"description": "lead source", "table": "lead"}),
    );
    assert_eq!(one["target"], "marketing.lead");
}
