//! `govcat eval calls` counts exactly what it replayed (issue 30, part 5): a small calls file
//! and its labels, replayed through the tools on the deterministic `HashEmbedder` snapshot. The
//! counts that do not depend on ranking are asserted exactly; those that do are asserted to add
//! up.
//!
//! Run: `cargo test --test eval_calls`.

mod common;

use govcat::eval::calls;
use serde_json::json;

const CALLS: &str = r#"{"id": "t1", "calls": [{"tool": "find_precedents", "arguments": {"description": "IBAN of the customer", "alternatives": ["iban"]}}, {"tool": "suggest_tags", "arguments": {"description": "IBAN of the customer", "alternatives": ["iban"], "domain": "policy", "table": "customer_bank_2027"}}]}
{"id": "t2", "calls": [{"tool": "find_precedents", "arguments": {"description": "soil moisture of a smart-home sensor"}}, {"tool": "suggest_tags", "arguments": {"description": "soil moisture of a smart-home sensor", "table": "lead"}}]}
{"id": "t3", "calls": [{"tool": "suggest_tags", "arguments": {"description": "policyholder's date of birth", "domain": "policy"}}, {"tool": "get_dataset", "arguments": {"domain": "policy", "table": "customer_bank_2027"}}]}
"#;

const LABELS: &str = r#"{"id": "t1", "request": "new table policy.customer_bank_2027 gets the customer's IBAN: tags?", "relevant": {"column:policy.customer.iban": 2, "column:policy.customer.bic": 1}, "negative": false}
{"id": "t2", "request": "a column for the soil moisture of a smart-home sensor", "relevant": {}, "negative": true}
{"id": "t3", "request": "Geburtsdatum des VN in einer neuen policy-Tabelle", "relevant": {"column:policy.customer.vn_gebdat": 2}, "negative": false}
"#;

/// Replays `calls` against `labels`, each written to a file, on the hashed demo snapshot.
fn replay(calls: &str, labels: &str) -> Result<calls::CallsReport, govcat::tools::ToolError> {
    let tmp = tempfile::tempdir().expect("tmp");
    let (calls_file, labels_file) = (
        tmp.path().join("calls.jsonl"),
        tmp.path().join("labels.jsonl"),
    );
    std::fs::write(&calls_file, calls).expect("calls");
    std::fs::write(&labels_file, labels).expect("labels");
    calls::run(&common::hashed().context(), &calls_file, &labels_file)
}

#[test]
fn a_replay_counts_requests_calls_errors_and_judged_keys_exactly() {
    let r = replay(CALLS, LABELS).expect("replay");
    assert_eq!((r.requests, r.negative_requests, r.calls), (3, 1, 6));
    // t2's suggest_tags names without its domain a table two domains have (customer.lead and
    // marketing.lead); t3's get_dataset a table that is not there. New tables in suggest_tags (t1, t3) are answered, never an error.
    assert_eq!(
        serde_json::to_value(&r.errors).expect("json"),
        json!({"get_dataset: DatasetNotFound": 1, "suggest_tags: InvalidArguments": 1})
    );
    assert_eq!(r.new_table_errors, 0);
    assert_eq!(
        serde_json::to_value(&r.missing_calls).expect("json"),
        json!({"find_precedents": 1})
    );
    assert_eq!(r.find_precedents_requests, 1);
    // The one searched positive request, and the reciprocal of its rank is the MRR.
    assert_eq!(r.find_precedents_ranks.len(), 1);
    let rank = r.find_precedents_ranks[0]
        .rank
        .expect("a relevant entry is in the answer");
    assert!(rank <= 10);
    assert_eq!(
        r.find_precedents.mrr,
        (10_000.0 / rank as f64).round() / 10_000.0
    );
    assert_eq!(r.negative_with_find_precedents, 1);
    assert_eq!(r.suggest_tags_requests, 2);
    // Every key of policy.customer's iban and vn_gebdat is present: 5 keys judged per request.
    for (key, k) in &r.suggest_tags {
        assert_eq!(k.judged, 2, "{key}");
        assert_eq!(
            k.right + k.wrong + k.inherited_right + k.inherited_wrong + k.abstained,
            k.judged,
            "{key}: {k:?}"
        );
    }
    // Residency: both targets are new tables of policy, whose database sets eu.
    assert_eq!(r.suggest_tags["residency"].inherited_right, 2);
    // The misses are exactly the judged keys not counted right: none for residency, one per
    // wrong or abstained key elsewhere, each naming a value other than the truth.
    for (key, k) in &r.suggest_tags {
        let misses: Vec<&calls::Judged> = r.misses.iter().filter(|m| &m.key == key).collect();
        assert_eq!(
            misses.len(),
            k.wrong + k.inherited_wrong + k.abstained,
            "{key}"
        );
        assert!(misses
            .iter()
            .all(|m| m.proposed.as_deref() != Some(m.truth.as_str())));
        assert!(misses.iter().all(|m| m.id == "t1" || m.id == "t3"));
        // An understated proposal at >= 0.9 is also one at >= 0.5.
        assert!(
            k.understated_confident <= k.understated_at_0_5,
            "{key}: {k:?}"
        );
        assert!(k.understated_at_0_5 <= k.understated, "{key}: {k:?}");
    }
    assert!(r.misses.iter().all(|m| m.key != "residency"));
    // judged lists every judged key once, right or not; misses are exactly its wrong ones.
    let judged: usize = r.suggest_tags.values().map(|k| k.judged).sum();
    assert_eq!(r.judged.len(), judged);
    let wrong: Vec<&calls::Judged> = r.judged.iter().filter(|j| !j.right).collect();
    assert_eq!(wrong, r.misses.iter().collect::<Vec<_>>());
    assert!(r
        .judged
        .iter()
        .all(|j| j.right == (j.proposed.as_deref() == Some(j.truth.as_str()))));
    // A key proposed from precedents carries the evidence its confidence was read from (the
    // precedents it counted, the proposed value's share of them); an inherited key, whose
    // confidence is the inherited rate, may carry the evidence of the precedent vote beside it.
    for j in &r.judged {
        if j.basis
            .as_deref()
            .is_some_and(|b| b.starts_with("precedent"))
        {
            let e = j
                .evidence
                .unwrap_or_else(|| panic!("{j:?} has no evidence"));
            assert!(e.counted >= 1 && e.share > 0.0 && e.share <= 1.0, "{j:?}");
        }
    }
    assert!(r.judged.iter().any(|j| j.evidence.is_some()));
}

#[test]
fn a_call_line_without_a_label_is_an_error_naming_it() {
    let e = replay(CALLS, LABELS.lines().next().expect("a line")).unwrap_err();
    assert_eq!(e.kind, "InvalidCallsFile");
    assert!(e.message.starts_with("request 't2' of "), "{}", e.message);
}
