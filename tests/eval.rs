//! `govcat eval`: the JSON contract of both commands, labels that name nothing are errors, the
//! held-out column is never its own precedent, and the HTML report holds the metric tables.
//!
//! Real-model tests use the demo snapshot of `tests/common` (skipped without the model outside
//! CI); the CLI tests need `index/` (`govcat index`), as the other CLI tests do.

mod common;

use std::collections::BTreeSet;

use govcat::eval::queries::{self, EvalMode, QueryOptions};
use govcat::eval::tags::{self, Exclude};
use govcat::eval::{report, Quiet, Split};
use govcat::tools::suggest_tags;
use serde_json::Value;

use common::server::{cli_json, retrieval_available};

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default()
}

fn query_file(lines: &[&str]) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(f.path(), lines.join("\n") + "\n").expect("write queries");
    f
}

/// Bundled query q001 with its labels.
const IBAN: &str = r#"{"id": "q001", "query": "contains an EU IBAN", "relevant": {"column:analytics.broker_performance.payout_iban": 2, "column:analytics.customer_360_eu.iban": 2, "column:analytics.customer_360_global_extract.iban": 2, "column:claims.claim_payment.payee_iban": 2, "column:claims.repair_shop.bank_iban": 2, "column:customer.customer_bank_account.iban": 2, "column:hr.payroll_de.payroll_iban": 2, "column:payments.aml_screening_hit.counterparty_iban": 2, "column:payments.broker_commission_payout.payee_iban": 2, "column:payments.claim_payout.payee_iban": 2, "column:payments.premium_collection.payer_iban": 2, "column:payments.sepa_mandate.debtor_iban": 2, "column:policy.customer.iban": 2, "column:policy.premium_billing.debtor_iban": 2, "column:policy.vermittler.payout_iban": 2, "column:risk.credit_score_retail.iban": 2, "column:risk.fraud_case_signals.payee_iban": 2, "column:fraud.entity_link.iban_hash": 1, "column:fraud.fraud_alert.matched_value": 1, "column:hr.payroll_ch.ch_iban": 1, "column:payments.return_debit.iban_masked": 1}}"#;
/// Bundled query q041 with its labels.
const BIRTH: &str = r#"{"id": "q002", "query": "date the customer was born", "relevant": {"column:analytics.customer_360_eu.date_of_birth": 2, "column:analytics.customer_360_global_extract.birth_date": 2, "column:claims.claim_party.birthDate": 2, "column:customer.customer_master.birthdate": 2, "column:marketing.sfmc_subscriber.birthdate": 2, "column:policy.customer.vn_gebdat": 2, "column:risk.credit_score_retail.birth_date": 2, "column:customer.lead.year_of_birth": 1, "column:fraud.his_inquiry.subject_birthdate": 1, "column:fraud.sanctions_screening.screened_dob": 1, "column:hr.employee.birthdate": 1, "column:marketing.lead.geburtsdatum": 1, "column:policy.insured_vehicle.main_driver_birth_year": 1, "column:policy.quote.birth_date": 1}}"#;
const NEGATIVE: &str = r#"{"id": "n003", "query": "satellite orbit inclination", "relevant": {}}"#;

#[test]
fn eval_queries_prints_every_contract_field_for_every_mode() {
    if !retrieval_available("eval_queries_prints_every_contract_field_for_every_mode") {
        return;
    }
    let f = query_file(&[IBAN, BIRTH, NEGATIVE]);
    let path = f.path().to_str().expect("utf-8 path");
    let (code, out) = cli_json(&["eval", "queries", path], &[]);
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(
        keys(&out["modes"]),
        ["baseline", "bm25", "dense", "hybrid"]
            .map(String::from)
            .into(),
    );
    let expected: BTreeSet<String> = [
        "queries",
        "recall@1",
        "recall@5",
        "recall@10",
        "full_recall@10",
        "success@1",
        "success@5",
        "success@10",
        "mrr",
        "ndcg@10",
        "out_of_vocabulary",
        "negatives",
        "negatives_with_semantic_only",
        "ratio_to_baseline",
    ]
    .map(String::from)
    .into();
    for mode in ["baseline", "bm25", "dense", "hybrid"] {
        let m = &out["modes"][mode];
        assert_eq!(keys(m), expected, "{mode}");
        assert_eq!(
            m["queries"], 2,
            "{mode}: the negative is not a metric query"
        );
        assert_eq!(m["negatives"], 1);
        assert_eq!(m["out_of_vocabulary"], 0);
    }
    assert_eq!(out["modes"]["baseline"]["ratio_to_baseline"]["mrr"], 1.0);
    assert_eq!(
        out["modes"]["hybrid"]["success@1"], 1.0,
        "both first entries are direct precedents"
    );
    let per_query = out["per_query"].as_array().expect("per_query");
    assert_eq!(per_query.len(), 3);
    assert_eq!(per_query[0]["modes"]["hybrid"]["first_direct_rank"], 1);
    assert_eq!(
        per_query[0]["modes"]["hybrid"]["outranked_by"],
        Value::Array(vec![])
    );
    assert_eq!(per_query[2]["negative"], true);
}

#[test]
fn a_label_naming_no_entry_is_an_error_not_a_miss() {
    if !retrieval_available("a_label_naming_no_entry_is_an_error_not_a_miss") {
        return;
    }
    let typo = r#"{"id": "q004", "query": "contains an EU IBAN", "relevant": {"column:policy.customer.ibna": 2}}"#;
    let f = query_file(&[IBAN, typo]);
    let path = f.path().to_str().expect("utf-8 path");
    let (code, out) = cli_json(&["eval", "queries", path, "--modes", "bm25"], &[]);
    assert_eq!(code, Some(1));
    assert_eq!(out["error"], "UnknownRelevantId");
    assert_eq!(
        out["unknown"],
        serde_json::json!([format!("{path}:2 column:policy.customer.ibna")])
    );
    // The same file without the typo evaluates.
    let fixed = query_file(&[IBAN]);
    let (code, out) = cli_json(
        &[
            "eval",
            "queries",
            fixed.path().to_str().unwrap(),
            "--modes",
            "bm25",
        ],
        &[],
    );
    assert_eq!(code, Some(0), "{out}");
    assert_eq!(out["modes"]["bm25"]["queries"], 1);
}

#[test]
fn the_held_out_column_is_never_its_own_precedent() {
    let Some(built) = common::real() else { return };
    let ctx = built.context();
    let snapshot = built.snapshot();
    let id = "column:policy.customer.iban";
    let doc = snapshot
        .docs
        .iter()
        .find(|d| d.id == id)
        .expect("demo column");
    let input = || suggest_tags::Input {
        description: tags::description_of(doc),
        alternatives: None,
        min_confidence: None,
        domain: None,
        table: None,
        identifier: None,
    };
    let caller = govcat::catalog::Caller::local();
    let open = suggest_tags::run(&ctx, &caller, input()).expect("suggest");
    assert_eq!(open.precedents.first().map(String::as_str), Some(id));
    let held = suggest_tags::run_excluding(&ctx, &caller, input(), &|d| d.id == id)
        .expect("suggest excluding");
    assert!(
        !held.precedents.iter().any(|p| p == id),
        "{:?}",
        held.precedents
    );
    assert_eq!(held.precedents.len(), open.precedents.len());
    // Removing the first precedent moves every other one up by one place.
    let n = open.precedents.len();
    assert_eq!(held.precedents[..n - 1], open.precedents[1..]);
    // Excluding the table leaves no column of policy.customer.
    let table = suggest_tags::run_excluding(&ctx, &caller, input(), &|d| {
        d.domain.as_deref() == Some("policy") && d.table.as_deref() == Some("customer")
    })
    .expect("suggest excluding the table");
    assert!(!table
        .precedents
        .iter()
        .any(|p| p.starts_with("column:policy.customer.")));
}

#[test]
fn eval_tags_reports_every_key_with_both_baselines_and_an_html_page() {
    let Some(built) = common::real() else { return };
    let ctx = built.context();
    let r = tags::run(&ctx, Exclude::Column, &Quiet).expect("eval tags");
    let ontology_keys: BTreeSet<String> =
        ctx.ontology.keys.iter().map(|k| k.key.0.clone()).collect();
    assert_eq!(
        r.keys.keys().cloned().collect::<BTreeSet<_>>(),
        ontology_keys
    );
    let v = serde_json::to_value(&r).expect("json");
    for (key, k) in v["keys"].as_object().expect("keys") {
        assert_eq!(
            keys(k),
            [
                "columns",
                "accuracy@1",
                "coverage",
                "accuracy_when_answered",
                "abstained",
                "abstained_withheld",
                "abstained_no_precedent",
                "baseline_when_answered",
                "baseline_majority",
                "baseline_name_overlap",
                "understated",
                "overstated",
                "confusion"
            ]
            .map(String::from)
            .into(),
            "{key}"
        );
        let confused: u64 = k["confusion"]
            .as_object()
            .unwrap()
            .values()
            .flat_map(|row| row.as_object().unwrap().values())
            .map(|n| n.as_u64().unwrap())
            .sum();
        assert_eq!(
            Some(confused),
            k["columns"].as_u64(),
            "{key}: every column in the confusion table"
        );
        // Abstentions are the confusion table's "(no answer)" column, counted apart.
        let no_answer: u64 = k["confusion"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|row| row.get(tags::NO_ANSWER).and_then(Value::as_u64))
            .sum();
        assert_eq!(k["abstained"].as_u64(), Some(no_answer), "{key}");
        // Without min_confidence every abstention is for want of evidence, of one cause.
        assert_eq!(
            k["abstained_withheld"]
                .as_u64()
                .zip(k["abstained_no_precedent"].as_u64())
                .map(|(w, n)| w + n),
            Some(no_answer),
            "{key}"
        );
        // An ordered key's wrong answers are each understated or overstated; others say null.
        let wrong: u64 = k["confusion"]
            .as_object()
            .unwrap()
            .iter()
            .flat_map(|(real, row)| {
                row.as_object()
                    .unwrap()
                    .iter()
                    .filter(move |(p, _)| *p != real && p.as_str() != tags::NO_ANSWER)
                    .map(|(_, n)| n.as_u64().unwrap())
            })
            .sum();
        let ordered = ctx
            .ontology
            .keys
            .iter()
            .any(|s| &s.key.0 == key && s.ordered);
        match (k["understated"].as_u64(), k["overstated"].as_u64()) {
            (Some(u), Some(o)) => {
                assert!(ordered, "{key}");
                assert_eq!(u + o, wrong, "{key}");
            }
            _ => {
                assert!(!ordered, "{key}");
                assert_eq!(
                    (&k["understated"], &k["overstated"]),
                    (&Value::Null, &Value::Null)
                );
            }
        }
    }
    assert_eq!(r.columns + r.untagged_columns, 723);
    // The demo denies some tables' column tags: a column whose best precedents are there
    // abstains for that, and says so apart from the ones with nothing to copy.
    assert!(r.keys.values().any(|k| k.abstained_withheld > 0));
    assert_eq!(v["request"]["exclude"], "column");
    // The honest split: every checked proposal is either fitted on or measured on, and the
    // held-out count is that of the per-column outcomes of held-out tables.
    for key in &ontology_keys {
        let c = &v["calibration"]["keys"][key];
        assert_eq!(
            keys(c),
            [
                "fitted_on",
                "held_out",
                "held_out_unconflicted",
                "at_min_confidence_0_9",
                "precedent_weight_coverage_at_precision",
                "precedent_weight_at_0_9",
                "curve",
                "precedent_weight_curve"
            ]
            .map(String::from)
            .into(),
            "{key}"
        );
        // `conflicted`: a same-named column holds another value, so the map is not fitted on it.
        let checked = |held_out: bool, unconflicted: bool| {
            r.per_column
                .iter()
                .filter(|c| c.calibration_table != held_out)
                .filter(|c| c.evidence.contains_key(key) && c.keys.contains_key(key))
                .filter(|c| !unconflicted || !c.conflicted.contains(key))
                .count() as u64
        };
        assert_eq!(
            c["held_out"]["proposals"].as_u64(),
            Some(checked(true, false)),
            "{key}"
        );
        assert_eq!(
            c["held_out_unconflicted"]["proposals"].as_u64(),
            Some(checked(true, true)),
            "{key}"
        );
        assert_eq!(c["fitted_on"].as_u64(), Some(checked(false, true)), "{key}");
        assert!(
            checked(false, true) < checked(false, false),
            "{key}: some are left out"
        );
        let binned: u64 = c["held_out"]["bins"]
            .as_array()
            .expect("bins")
            .iter()
            .map(|b| b["n"].as_u64().expect("n"))
            .sum();
        assert_eq!(Some(binned), c["held_out"]["proposals"].as_u64(), "{key}");
        assert_eq!(c["held_out"]["bins"].as_array().map(Vec::len), Some(10));
    }
    // This snapshot was built without calibration: its own map is absent, and so are the
    // confidences of the suggestions.
    assert_eq!(v["snapshot_calibration"], Value::Null);
    assert!(r.per_column.iter().all(|c| c.confidence.is_empty()));
    let html = report::tags_html(&r);
    assert!(html.contains("<table id=\"calibration\">"));
    for key in &ontology_keys {
        for chart in ["reliability", "coverage"] {
            assert!(
                html.contains(&format!("<svg class=\"{chart}\" data-key=\"{key}\"")),
                "{chart} chart of {key}"
            );
        }
    }
    assert!(html.contains("<table id=\"keys\">"));
    assert!(html.contains("<table id=\"conflicts\">"));
    // A reviewer reads each bin's n over its bar, and every chart has its ticks.
    let bins = html.matches("<rect class=\"bin\"").count();
    assert!(bins > 0);
    assert_eq!(html.matches("<text class=\"n\"").count(), bins);
    assert_eq!(
        html.matches("<text class=\"tick\"").count(),
        2 * 5 * 2 * ontology_keys.len(),
        "five ticks on both axes of both charts of every key"
    );
    assert_eq!(
        html.matches("<g class=\"legend\"").count(),
        ontology_keys.len()
    );
    for key in &ontology_keys {
        assert!(
            html.contains(&format!("<tr><td class=\"l\">{key}</td>")),
            "{key} row"
        );
    }
}

#[test]
fn the_queries_page_holds_a_metric_row_per_mode() {
    let Some(built) = common::real() else { return };
    let ctx = built.context();
    let snapshot = built.snapshot();
    let f = query_file(&[IBAN, BIRTH]);
    let options = QueryOptions {
        files: vec![f.path().to_path_buf()],
        modes: vec![EvalMode::Hybrid, EvalMode::Bm25],
        split: Split::All,
    };
    let r = queries::run(
        &snapshot,
        built.embedder.as_ref(),
        &ctx.ontology,
        &ctx.retrieval,
        &options,
        &Quiet,
    )
    .expect("eval");
    let html = report::queries_html(&r);
    assert!(html.contains("<table id=\"metrics\">"));
    assert!(html.contains("<tr><td class=\"l\">bm25</td>"));
    assert!(html.contains("<tr><td class=\"l\">hybrid</td>"));
    assert!(
        !html.contains("<tr><td class=\"l\">baseline</td>"),
        "baseline did not run"
    );
}
