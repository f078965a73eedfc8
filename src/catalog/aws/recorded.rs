//! The responses that make up one dataset, in the JSON shape of the `dir` format's files, and
//! their assembly into a [`Dataset`] through the parse boundary. The `aws` source assembles
//! what it just read; `record` writes the same values to disk, where the `dir` source reads them
//! back. Both sources assemble through the same `catalog::assemble`.

use serde_json::Value;

use crate::catalog::boundary::{self, SchemaError};
use crate::catalog::{CatalogError, Dataset, Domain, LevelTags, TableName};
use crate::ontology::Ontology;

/// The responses of one table: `get-table.json`, `lf-table.json`, `lf-columns.json`.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordedTable {
    pub get_table: Value,
    pub lf_table: Value,
    /// Column tags, or the `AccessDeniedException` the reader role got.
    pub lf_columns: Value,
}

/// Builds the dataset from a domain's database tags (`database.lftags.json`) and one table's
/// responses. `what` prefixes error messages (e.g. `aws policy_curated.customer`).
pub fn assemble_dataset(
    ontology: &Ontology,
    domain: &Domain,
    table: &TableName,
    database_tags: &Value,
    recorded: &RecordedTable,
    what: &str,
) -> Result<Dataset, CatalogError> {
    let glue = boundary::parse_get_table(recorded.get_table.clone(), &format!("{what} GetTable"))?;
    if glue.name != table.0 {
        return Err(CatalogError::UpstreamSchema(SchemaError::Invalid {
            what: format!("{what} GetTable"),
            problem: format!(
                "Table.Name '{}' differs from the table asked for '{}'",
                glue.name, table.0
            ),
        }));
    }
    let db_tags = LevelTags::Read(boundary::parse_database_tags(
        database_tags.clone(),
        &format!("{what} GetResourceLFTags(database)"),
    )?);
    let table_tags = LevelTags::Read(boundary::parse_table_tags(
        recorded.lf_table.clone(),
        &format!("{what} GetResourceLFTags(table)"),
    )?);
    let column_tags = boundary::parse_column_tags(
        recorded.lf_columns.clone(),
        &format!("{what} GetResourceLFTags(columns)"),
    )?;
    crate::catalog::assemble(
        ontology,
        domain,
        table,
        glue,
        &db_tags,
        &table_tags,
        Some(column_tags),
        what,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{FieldState, TagLevel, TagState};
    use serde_json::json;
    use std::path::Path;

    fn ontology() -> Ontology {
        Ontology::load(Path::new(crate::ontology::DEFAULT_ONTOLOGY_PATH)).unwrap()
    }

    fn pair(k: &str, v: &str) -> Value {
        json!({"CatalogId": "210000000001", "TagKey": k, "TagValues": [v]})
    }

    fn recorded(lf_columns: Value) -> RecordedTable {
        RecordedTable {
            get_table: json!({"Table": {"Name": "customer", "DatabaseName": "policy_curated",
                "StorageDescriptor": {"Columns": [
                    {"Name": "iban", "Type": "string", "Comment": "IBAN"},
                    {"Name": "segment", "Type": "string"}]},
                "Parameters": {"freshness_sla": "24h"}}}),
            lf_table: json!({"LFTagsOnTable": [pair("subject_type", "customer")]}),
            lf_columns,
        }
    }

    #[test]
    fn tags_inherit_database_then_table_then_column() {
        let db = json!({"LFTagOnDatabase": [pair("residency", "eu")]});
        let cols =
            json!({"LFTagsOnColumns": [{"Name": "iban", "LFTags": [pair("sensitivity", "high")]}]});
        let d = assemble_dataset(
            &ontology(),
            &Domain("policy".into()),
            &TableName("customer".into()),
            &db,
            &recorded(cols),
            "t",
        )
        .unwrap();
        let iban = &d.columns[0].lf_tags;
        assert_eq!(
            iban["sensitivity"],
            TagState::present("high", TagLevel::Column)
        );
        assert_eq!(
            iban["subject_type"],
            TagState::present("customer", TagLevel::Table)
        );
        assert_eq!(
            iban["residency"],
            TagState::present("eu", TagLevel::Database)
        );
        assert_eq!(
            iban["retention"],
            TagState::absent(FieldState::EmptyInSource)
        );
        let segment = &d.columns[1];
        assert_eq!(segment.description_state, FieldState::EmptyInSource);
        assert_eq!(
            segment.lf_tags["sensitivity"],
            TagState::absent(FieldState::EmptyInSource)
        );
        assert_eq!(d.contract.freshness_sla.as_deref(), Some("24h"));
    }

    #[test]
    fn denied_column_tags_are_withheld() {
        let db = json!({"LFTagOnDatabase": [pair("residency", "eu")]});
        let d = assemble_dataset(
            &ontology(),
            &Domain("policy".into()),
            &TableName("customer".into()),
            &db,
            &recorded(json!({"__type": "AccessDeniedException", "Message": "no"})),
            "t",
        )
        .unwrap();
        assert!(d.columns[0]
            .lf_tags
            .values()
            .all(|t| t.state == FieldState::Withheld));
    }

    #[test]
    fn a_column_response_without_its_list_is_an_error_not_untagged_columns() {
        let db = json!({"LFTagOnDatabase": []});
        let err = assemble_dataset(
            &ontology(),
            &Domain("policy".into()),
            &TableName("customer".into()),
            &db,
            &recorded(json!({})),
            "aws policy_curated.customer",
        )
        .unwrap_err();
        assert_eq!(
            err,
            CatalogError::UpstreamSchema(SchemaError::MissingKey {
                what: "aws policy_curated.customer GetResourceLFTags(columns)".into(),
                expected: "lftagsoncolumns".into(),
                present: vec![],
            })
        );
    }
}
