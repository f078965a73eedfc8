//! The catalog parse boundary: arbitrary JSON through every `catalog::boundary` parser (Glue
//! `GetTable`, Lake Formation tags on database / table / columns, the domain file), and — when
//! the input is an object holding all parts of one dataset — through `catalog::assemble`, the
//! one assembly both sources use. The ontology parser gets the raw text. Errors are fine;
//! panics are not, and an assembled dataset never carries a tag value outside the ontology.
//!
//! Input: one JSON document. `{"table": GetTable, "database": tags, "lf_table": tags,
//! "lf_columns": column tags}` exercises assembly; any other document the single parsers.
#![no_main]

mod common;

use std::sync::OnceLock;

use govcat::catalog::boundary::{self, Recorded};
use govcat::catalog::{assemble, Domain, FieldState, LevelTags, TableName};
use govcat::ontology::Ontology;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fn ontology() -> &'static Ontology {
    static ONTOLOGY: OnceLock<Ontology> = OnceLock::new();
    ONTOLOGY.get_or_init(common::ontology)
}

fn level(
    v: Option<&Value>,
    parse: fn(Value, &str) -> Result<Vec<boundary::LfTagPair>, boundary::SchemaError>,
) -> Option<LevelTags> {
    match v {
        None => Some(LevelTags::NotCollected),
        Some(v) => parse(v.clone(), "fuzz level").ok().map(LevelTags::Read),
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = Ontology::parse(text, std::path::Path::new("fuzz.json"));
    }
    let Ok(raw) = serde_json::from_slice::<Value>(data) else {
        return;
    };
    let _ = boundary::normalise(raw.clone(), "fuzz");
    let _ = boundary::parse_get_table(raw.clone(), "fuzz");
    let _ = boundary::parse_database_tags(raw.clone(), "fuzz");
    let _ = boundary::parse_table_tags(raw.clone(), "fuzz");
    let _ = boundary::parse_column_tags(raw.clone(), "fuzz");
    let _ = boundary::parse_domain(raw.clone(), "fuzz");
    let _ = boundary::parse_permissions(raw.clone(), "fuzz");

    let Some(parts) = raw.as_object() else {
        return;
    };
    let Some(Ok(glue)) = parts
        .get("table")
        .map(|t| boundary::parse_get_table(t.clone(), "fuzz table"))
    else {
        return;
    };
    let Some(db) = level(parts.get("database"), boundary::parse_database_tags) else {
        return;
    };
    let Some(table_tags) = level(parts.get("lf_table"), boundary::parse_table_tags) else {
        return;
    };
    let column_tags: Option<Recorded<boundary::ColumnTags>> = match parts.get("lf_columns") {
        None => None,
        Some(v) => match boundary::parse_column_tags(v.clone(), "fuzz columns") {
            Ok(c) => Some(c),
            Err(_) => return,
        },
    };
    let ontology = ontology();
    let Ok(dataset) = assemble(
        ontology,
        &Domain("fuzz".into()),
        &TableName(glue.name.clone()),
        glue.clone(),
        &db,
        &table_tags,
        column_tags,
        "fuzz dataset",
    ) else {
        return;
    };
    assert_eq!(dataset.columns.len(), glue.columns.len());
    for column in &dataset.columns {
        for key in ontology.key_names() {
            assert!(column.lf_tags.contains_key(&key), "key {key} missing");
        }
        for (key, tag) in &column.lf_tags {
            match (tag.state, tag.value()) {
                (FieldState::Present, Some(v)) => assert!(
                    ontology.key(key).is_none() || ontology.contains(key, v),
                    "{key}={v} outside the ontology"
                ),
                (FieldState::Present, None) => panic!("present tag {key} without a value"),
                (_, Some(v)) => panic!("absent tag {key} with value {v}"),
                (_, None) => {}
            }
        }
    }
});
