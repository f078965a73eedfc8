//! SDK responses → JSON in the shape of the recorded files of the `dir` format (the AWS CLI's
//! JSON output: PascalCase keys). Faithful, not forgiving: an `Option` the SDK left empty
//! becomes an absent key, never an empty list, so the parse boundary sees exactly what the
//! service sent and refuses what is missing (FIDELITY rule 6). No key is renamed or invented.

use std::collections::{BTreeMap, HashMap};

use aws_sdk_glue::primitives::{DateTime, DateTimeFormat};
use aws_sdk_glue::types as glue;
use aws_sdk_lakeformation::types as lf;
use serde_json::{json, Map, Value};

fn put(m: &mut Map<String, Value>, key: &str, value: Option<Value>) {
    if let Some(v) = value {
        m.insert(key.to_string(), v);
    }
}

fn text(s: &Option<String>) -> Option<Value> {
    s.as_ref().map(|s| Value::String(s.clone()))
}

/// RFC 3339 as the CLI writes it; epoch seconds if the SDK cannot format the value (the
/// boundary reads both).
fn time(t: &Option<DateTime>) -> Option<Value> {
    t.as_ref().map(|t| match t.fmt(DateTimeFormat::DateTime) {
        Ok(s) => Value::String(s),
        Err(_) => Value::from(t.secs()),
    })
}

/// Data maps (Glue `Parameters`) in key order, so recorded files are deterministic.
fn string_map(m: &Option<HashMap<String, String>>) -> Option<Value> {
    m.as_ref().map(|m| {
        let sorted: BTreeMap<&String, &String> = m.iter().collect();
        Value::Object(
            sorted
                .into_iter()
                .map(|(k, v)| (k.clone(), Value::String(v.clone())))
                .collect(),
        )
    })
}

fn column(c: &glue::Column) -> Value {
    let mut m = Map::new();
    m.insert("Name".into(), Value::String(c.name.clone()));
    put(&mut m, "Type", text(&c.r#type));
    put(&mut m, "Comment", text(&c.comment));
    Value::Object(m)
}

fn columns(list: &Option<Vec<glue::Column>>) -> Option<Value> {
    list.as_ref()
        .map(|cs| Value::Array(cs.iter().map(column).collect()))
}

fn storage_descriptor(sd: &glue::StorageDescriptor) -> Value {
    let mut m = Map::new();
    put(&mut m, "Columns", columns(&sd.columns));
    put(&mut m, "Location", text(&sd.location));
    put(&mut m, "InputFormat", text(&sd.input_format));
    put(&mut m, "OutputFormat", text(&sd.output_format));
    put(
        &mut m,
        "SerdeInfo",
        sd.serde_info.as_ref().map(|s| {
            let mut sm = Map::new();
            put(&mut sm, "Name", text(&s.name));
            put(
                &mut sm,
                "SerializationLibrary",
                text(&s.serialization_library),
            );
            Value::Object(sm)
        }),
    );
    Value::Object(m)
}

/// A Glue `Table`, with the fields govcat reads or that identify the table.
pub(crate) fn table(t: &glue::Table) -> Value {
    let mut m = Map::new();
    m.insert("Name".into(), Value::String(t.name.clone()));
    put(&mut m, "DatabaseName", text(&t.database_name));
    put(&mut m, "Description", text(&t.description));
    put(&mut m, "Owner", text(&t.owner));
    put(&mut m, "CreateTime", time(&t.create_time));
    put(&mut m, "UpdateTime", time(&t.update_time));
    put(
        &mut m,
        "StorageDescriptor",
        t.storage_descriptor.as_ref().map(storage_descriptor),
    );
    put(&mut m, "PartitionKeys", columns(&t.partition_keys));
    put(&mut m, "TableType", text(&t.table_type));
    put(&mut m, "Parameters", string_map(&t.parameters));
    put(&mut m, "CatalogId", text(&t.catalog_id));
    put(&mut m, "VersionId", text(&t.version_id));
    Value::Object(m)
}

/// A `GetTable` response: `{"Table": {...}}` (no `Table` key when the SDK got none).
pub(crate) fn get_table(out: &aws_sdk_glue::operation::get_table::GetTableOutput) -> Value {
    let mut m = Map::new();
    put(&mut m, "Table", out.table.as_ref().map(table));
    Value::Object(m)
}

/// One `LFTagPair` (a resource's tag, or a vocabulary entry of `ListLFTags`).
pub(crate) fn tag_pair(p: &lf::LfTagPair) -> Value {
    let mut m = Map::new();
    put(&mut m, "CatalogId", text(&p.catalog_id));
    m.insert("TagKey".into(), Value::String(p.tag_key.clone()));
    m.insert("TagValues".into(), json!(p.tag_values));
    Value::Object(m)
}

fn tag_pairs(list: &Option<Vec<lf::LfTagPair>>) -> Option<Value> {
    list.as_ref()
        .map(|ps| Value::Array(ps.iter().map(tag_pair).collect()))
}

/// A `GetResourceLFTags` response, whichever resource was asked about.
pub(crate) fn resource_lf_tags(
    out: &aws_sdk_lakeformation::operation::get_resource_lf_tags::GetResourceLfTagsOutput,
) -> Value {
    let mut m = Map::new();
    put(
        &mut m,
        "LFTagOnDatabase",
        tag_pairs(&out.lf_tag_on_database),
    );
    put(&mut m, "LFTagsOnTable", tag_pairs(&out.lf_tags_on_table));
    put(
        &mut m,
        "LFTagsOnColumns",
        out.lf_tags_on_columns.as_ref().map(|cs| {
            Value::Array(
                cs.iter()
                    .map(|c| {
                        let mut cm = Map::new();
                        put(&mut cm, "Name", text(&c.name));
                        put(&mut cm, "LFTags", tag_pairs(&c.lf_tags));
                        Value::Object(cm)
                    })
                    .collect(),
            )
        }),
    );
    Value::Object(m)
}

/// The error a recorded file holds when Lake Formation denied the read (the `dir` format's
/// representation of `withheld`, read back by `boundary::parse_column_tags`).
pub(crate) fn access_denied(message: &str) -> Value {
    json!({"__type": "AccessDeniedException", "Message": message})
}

fn resource(r: &lf::Resource) -> Value {
    let mut m = Map::new();
    if let Some(p) = &r.lf_tag_policy {
        if p.expression.is_empty() && p.expression_name.is_some() {
            // A policy that references a saved LF-tag expression carries no inline clauses.
            // Written as an empty `Expression`, it would read as "matches everything"; as a
            // grant on the named expression it is counted as not evaluated instead.
            let mut e = Map::new();
            put(&mut e, "CatalogId", text(&p.catalog_id));
            put(&mut e, "Name", text(&p.expression_name));
            m.insert("LFTagExpression".into(), Value::Object(e));
        } else {
            let mut pm = Map::new();
            put(&mut pm, "CatalogId", text(&p.catalog_id));
            pm.insert(
                "ResourceType".into(),
                Value::String(p.resource_type.as_str().to_string()),
            );
            pm.insert(
                "Expression".into(),
                Value::Array(
                    p.expression
                        .iter()
                        .map(|c| json!({"TagKey": c.tag_key, "TagValues": c.tag_values}))
                        .collect(),
                ),
            );
            m.insert("LFTagPolicy".into(), Value::Object(pm));
        }
    }
    if let Some(c) = &r.catalog {
        let mut cm = Map::new();
        put(&mut cm, "Id", text(&c.id));
        m.insert("Catalog".into(), Value::Object(cm));
    }
    if let Some(d) = &r.database {
        let mut dm = Map::new();
        put(&mut dm, "CatalogId", text(&d.catalog_id));
        dm.insert("Name".into(), Value::String(d.name.clone()));
        m.insert("Database".into(), Value::Object(dm));
    }
    if let Some(t) = &r.table {
        let mut tm = Map::new();
        put(&mut tm, "CatalogId", text(&t.catalog_id));
        tm.insert(
            "DatabaseName".into(),
            Value::String(t.database_name.clone()),
        );
        put(&mut tm, "Name", text(&t.name));
        put(
            &mut tm,
            "TableWildcard",
            t.table_wildcard.as_ref().map(|_| json!({})),
        );
        m.insert("Table".into(), Value::Object(tm));
    }
    if let Some(t) = &r.table_with_columns {
        let mut tm = Map::new();
        put(&mut tm, "CatalogId", text(&t.catalog_id));
        tm.insert(
            "DatabaseName".into(),
            Value::String(t.database_name.clone()),
        );
        tm.insert("Name".into(), Value::String(t.name.clone()));
        put(
            &mut tm,
            "ColumnNames",
            t.column_names.as_ref().map(|c| json!(c)),
        );
        m.insert("TableWithColumns".into(), Value::Object(tm));
    }
    if let Some(d) = &r.data_location {
        let mut dm = Map::new();
        put(&mut dm, "CatalogId", text(&d.catalog_id));
        dm.insert("ResourceArn".into(), Value::String(d.resource_arn.clone()));
        m.insert("DataLocation".into(), Value::Object(dm));
    }
    if let Some(d) = &r.data_cells_filter {
        let mut dm = Map::new();
        put(&mut dm, "TableCatalogId", text(&d.table_catalog_id));
        put(&mut dm, "DatabaseName", text(&d.database_name));
        put(&mut dm, "TableName", text(&d.table_name));
        put(&mut dm, "Name", text(&d.name));
        m.insert("DataCellsFilter".into(), Value::Object(dm));
    }
    if let Some(t) = &r.lf_tag {
        let mut tm = Map::new();
        put(&mut tm, "CatalogId", text(&t.catalog_id));
        tm.insert("TagKey".into(), Value::String(t.tag_key.clone()));
        tm.insert("TagValues".into(), json!(t.tag_values));
        m.insert("LFTag".into(), Value::Object(tm));
    }
    if let Some(e) = &r.lf_tag_expression {
        let mut em = Map::new();
        put(&mut em, "CatalogId", text(&e.catalog_id));
        em.insert("Name".into(), Value::String(e.name.clone()));
        m.insert("LFTagExpression".into(), Value::Object(em));
    }
    Value::Object(m)
}

/// One `PrincipalResourcePermissions` entry of a `ListPermissions` response.
pub(crate) fn permission(p: &lf::PrincipalResourcePermissions) -> Value {
    let mut m = Map::new();
    put(
        &mut m,
        "Principal",
        p.principal.as_ref().map(|pr| {
            let mut pm = Map::new();
            put(
                &mut pm,
                "DataLakePrincipalIdentifier",
                text(&pr.data_lake_principal_identifier),
            );
            Value::Object(pm)
        }),
    );
    put(&mut m, "Resource", p.resource.as_ref().map(resource));
    let perms = |list: &Option<Vec<lf::Permission>>| {
        list.as_ref().map(|ps| {
            Value::Array(
                ps.iter()
                    .map(|p| Value::String(p.as_str().to_string()))
                    .collect(),
            )
        })
    };
    put(&mut m, "Permissions", perms(&p.permissions));
    put(
        &mut m,
        "PermissionsWithGrantOption",
        perms(&p.permissions_with_grant_option),
    );
    Value::Object(m)
}

/// The principal of a converted permission entry, if it is an IAM role: its name.
pub(crate) fn role_name_of(entry: &Value) -> Option<&str> {
    let arn = entry
        .get("Principal")?
        .get("DataLakePrincipalIdentifier")?
        .as_str()?;
    let rest = arn.strip_prefix("arn:")?;
    let (_, resource) = rest.split_once(":iam::")?;
    let path = resource.split_once(":role/")?.1;
    path.rsplit('/').next().filter(|n| !n.is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_sdk_lists_stay_absent_keys() {
        let out = aws_sdk_lakeformation::operation::get_resource_lf_tags::GetResourceLfTagsOutput::builder()
            .build();
        assert_eq!(resource_lf_tags(&out), json!({}));
    }

    #[test]
    fn glue_table_keeps_columns_types_and_comments() {
        let col = glue::Column::builder()
            .name("iban")
            .r#type("string")
            .comment("IBAN")
            .build()
            .unwrap();
        let t = glue::Table::builder()
            .name("customer")
            .database_name("policy_curated")
            .storage_descriptor(glue::StorageDescriptor::builder().columns(col).build())
            .parameters("freshness_sla", "24h")
            .parameters("classification", "parquet")
            .build()
            .unwrap();
        assert_eq!(
            table(&t),
            json!({"Name": "customer", "DatabaseName": "policy_curated",
                   "StorageDescriptor": {"Columns": [{"Name": "iban", "Type": "string", "Comment": "IBAN"}]},
                   "Parameters": {"classification": "parquet", "freshness_sla": "24h"}})
        );
        // Parameters in key order, whatever the HashMap's order.
        assert_eq!(
            serde_json::to_string(&table(&t)["Parameters"]).unwrap(),
            r#"{"classification":"parquet","freshness_sla":"24h"}"#
        );
    }

    #[test]
    fn a_policy_on_a_named_expression_is_not_an_empty_expression() {
        let p = lf::PrincipalResourcePermissions::builder()
            .principal(
                lf::DataLakePrincipal::builder()
                    .data_lake_principal_identifier("arn:aws:iam::210000000000:role/analyst")
                    .build(),
            )
            .resource(
                lf::Resource::builder()
                    .lf_tag_policy(
                        lf::LfTagPolicyResource::builder()
                            .resource_type(lf::ResourceType::Table)
                            .expression_name("pii-free")
                            .set_expression(Some(vec![]))
                            .build()
                            .unwrap(),
                    )
                    .build(),
            )
            .permissions(lf::Permission::Select)
            .build();
        let v = permission(&p);
        assert_eq!(
            v["Resource"],
            json!({"LFTagExpression": {"Name": "pii-free"}})
        );
        assert_eq!(role_name_of(&v), Some("analyst"));
    }

    #[test]
    fn role_names_come_only_from_role_arns() {
        let entry = |id: &str| json!({"Principal": {"DataLakePrincipalIdentifier": id}});
        assert_eq!(
            role_name_of(&entry("arn:aws:iam::210000000000:role/team/claims-analyst")),
            Some("claims-analyst")
        );
        assert_eq!(
            role_name_of(&entry("arn:aws:iam::210000000000:user/bob")),
            None
        );
        assert_eq!(role_name_of(&entry("IAM_ALLOWED_PRINCIPALS")), None);
    }
}
