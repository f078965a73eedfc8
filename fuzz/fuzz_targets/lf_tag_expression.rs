//! LF-tag policy expressions: a Lake Formation `ListPermissions` document through the parse
//! boundary (`parse_permissions`), then every grant it yields evaluated (`check_grant::evaluate`)
//! against the columns of demo datasets (present, withheld and not-collected tags). Oracles:
//! a column carrying, for every clause, a value that clause allows is reached; a column with
//! a withheld key named by every grant is never reached or denied by guess.
#![no_main]

mod common;

use std::sync::OnceLock;

use govcat::catalog::boundary::parse_permissions;
use govcat::catalog::{CatalogSource, Column, FieldState, TagLevel, TagState};
use govcat::tools::check_grant::{evaluate, Grant, Verdict};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// Columns of a few demo datasets, read once through the dir source.
fn columns() -> &'static [Column] {
    static COLUMNS: OnceLock<Vec<Column>> = OnceLock::new();
    COLUMNS.get_or_init(|| {
        let ontology = common::ontology();
        let source = common::demo_source(&ontology);
        let caller = common::caller(false);
        let mut out = Vec::new();
        for domain in source.list_domains(&caller).expect("demo domains") {
            let tables = source
                .list_tables(&caller, &domain.name)
                .expect("demo tables");
            for table in tables.iter().take(2) {
                let dataset = source
                    .get_dataset(&caller, &domain.name, table)
                    .expect("demo dataset");
                out.extend(dataset.columns);
            }
        }
        out
    })
}

fn column_with(tags: impl IntoIterator<Item = (String, TagState)>) -> Column {
    Column {
        name: "oracle".into(),
        data_type: "string".into(),
        description: None,
        description_state: FieldState::EmptyInSource,
        is_partition_key: false,
        lf_tags: tags.into_iter().collect(),
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let Ok((parsed, _named)) = parse_permissions(raw, "fuzz input") else {
        return;
    };
    let grants: Vec<Grant> = parsed
        .into_iter()
        .map(|g| Grant {
            catalog_id: g.catalog_id,
            resource_type: g.resource_type,
            expression: g.expression,
            permissions: g.permissions,
        })
        .collect();
    for column in columns() {
        let _ = evaluate(column, &grants);
    }
    // A column that satisfies the first grant (first allowed value of each clause; for a key
    // named twice, the later clause's value) is reached iff that assignment satisfies every
    // clause of that grant.
    if let Some(first) = grants.first() {
        if first.expression.iter().all(|c| !c.values.is_empty()) {
            let mut tags = std::collections::BTreeMap::new();
            for c in &first.expression {
                tags.insert(
                    c.key.clone(),
                    TagState::present(&c.values[0], TagLevel::Column),
                );
            }
            let satisfied = first.expression.iter().all(|c| {
                tags.get(&c.key)
                    .and_then(|t: &TagState| t.value())
                    .is_some_and(|v| c.values.iter().any(|a| a == v))
            });
            let verdict = evaluate(&column_with(tags), &grants);
            if satisfied {
                assert_eq!(verdict, Verdict::Reached, "{grants:?}");
            }
        }
        // Every key of every grant withheld: nothing can be decided.
        let withheld = grants
            .iter()
            .flat_map(|g| g.expression.iter().map(|c| c.key.clone()))
            .map(|k| (k, TagState::absent(FieldState::Withheld)));
        match evaluate(&column_with(withheld), &grants) {
            Verdict::Undetermined(_, FieldState::Withheld) => {}
            other => panic!("withheld tags decided {other:?} for {grants:?}"),
        }
    }
});
