//! Proof tests for the catalog model and the exact tools (issue 2; FIDELITY rules 6, 8, 12, 13,
//! 14). Every test goes through `govcat::tools::call`, the one dispatcher the CLI, REST and MCP
//! use, and asserts structured fields with exact equality.
//!
//! Catalogs are copies of demo tables (`fixtures/catalog`, recorded 2026-11-29 by
//! `fixtures/catalog-src/build.py`) in a temporary directory, mutated one file at a time, so
//! each test shows what one upstream change does to the answer.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde_json::{json, Map, Value};

use govcat::catalog::boundary::{canonical_key, SchemaError};
use govcat::catalog::dir::DirSource;
use govcat::catalog::CatalogError;
use govcat::ontology::{Ontology, DEFAULT_ONTOLOGY_PATH};
use govcat::tools::{self, Caller, Context, Outcome, ToolError};

const DEMO: &str = "fixtures/catalog";

// ---------------------------------------------------------------------------------------------
// Shared fixtures
// ---------------------------------------------------------------------------------------------

fn ontology() -> Ontology {
    Ontology::load(Path::new(DEFAULT_ONTOLOGY_PATH)).expect("the shipped ontology loads")
}

fn context_for(root: &Path) -> Context {
    let ontology = ontology();
    let source = DirSource::open(root, ontology.clone()).expect("catalog directory opens");
    Context::new(ontology, Box::new(source))
}

fn demo() -> Context {
    context_for(Path::new(DEMO))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("create directory");
    for entry in std::fs::read_dir(from).expect("read fixture directory") {
        let entry = entry.expect("fixture directory entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).expect("copy fixture file");
        }
    }
}

/// A catalog in the `dir` format holding copies of some demo tables, their domains' files,
/// the demo roles and `provenance.json`.
struct Catalog {
    dir: tempfile::TempDir,
}

impl Catalog {
    fn copy_of(tables: &[(&str, &str)]) -> Catalog {
        let dir = tempfile::tempdir().expect("tempdir");
        let demo = Path::new(DEMO);
        for (domain, table) in tables {
            let from = demo.join("domains").join(domain);
            let to = dir.path().join("domains").join(domain);
            std::fs::create_dir_all(to.join("tables")).expect("create tables/");
            for file in ["domain.json", "database.lftags.json"] {
                std::fs::copy(from.join(file), to.join(file)).expect("copy domain file");
            }
            copy_dir(
                &from.join("tables").join(table),
                &to.join("tables").join(table),
            );
        }
        copy_dir(&demo.join("roles"), &dir.path().join("roles"));
        std::fs::copy(
            demo.join("provenance.json"),
            dir.path().join("provenance.json"),
        )
        .expect("copy provenance.json");
        Catalog { dir }
    }

    /// One table of the policy domain: `policy.customer` (13 columns, `iban` among them).
    fn policy_customer() -> Catalog {
        Catalog::copy_of(&[("policy", "customer")])
    }

    fn root(&self) -> &Path {
        self.dir.path()
    }

    fn domain_file(&self, domain: &str, file: &str) -> PathBuf {
        self.root().join("domains").join(domain).join(file)
    }

    fn table_file(&self, domain: &str, table: &str, file: &str) -> PathBuf {
        self.root()
            .join("domains")
            .join(domain)
            .join("tables")
            .join(table)
            .join(file)
    }

    fn context(&self) -> Context {
        context_for(self.root())
    }
}

fn read(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("read catalog file");
    serde_json::from_str(&text).expect("catalog file is JSON")
}

fn write(path: &Path, value: &Value) {
    let text = serde_json::to_string_pretty(value).expect("serialise");
    std::fs::write(path, text).expect("write catalog file");
}

fn edit(path: &Path, change: impl FnOnce(&mut Value)) {
    let mut value = read(path);
    change(&mut value);
    write(path, &value);
}

/// Renames one key of the object at `pointer`, keeping its position.
fn rename_key(value: &mut Value, pointer: &str, from: &str, to: &str) {
    let object = value
        .pointer_mut(pointer)
        .and_then(Value::as_object_mut)
        .unwrap_or_else(|| panic!("no object at {pointer}"));
    assert!(object.contains_key(from), "no key {from} at {pointer}");
    let renamed: Map<String, Value> = std::mem::take(object)
        .into_iter()
        .map(|(k, v)| {
            if k == from {
                (to.to_string(), v)
            } else {
                (k, v)
            }
        })
        .collect();
    *object = renamed;
}

fn call(ctx: &Context, tool: &str, args: Value) -> Outcome {
    tools::call(ctx, &Caller::local(), tool, args)
}

fn ok(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Ok(v) => v,
        other => panic!("expected a result, got {other:?}"),
    }
}

fn err(outcome: Outcome) -> Value {
    match outcome {
        Outcome::Err(e) => e.to_json(),
        other => panic!("expected an error, got {other:?}"),
    }
}

fn get_dataset(ctx: &Context, domain: &str, table: &str) -> Outcome {
    call(
        ctx,
        "get_dataset",
        json!({"domain": domain, "table": table}),
    )
}

fn column<'a>(dataset: &'a Value, name: &str) -> &'a Value {
    dataset["columns"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["name"] == name))
        .unwrap_or_else(|| panic!("no column {name}"))
}

fn column_names(dataset: &Value) -> Vec<String> {
    dataset["columns"]
        .as_array()
        .expect("columns is a list")
        .iter()
        .map(|c| c["name"].as_str().expect("column name").to_string())
        .collect()
}

fn present(value: &str, level: &str) -> Value {
    json!({"state": "present", "value": value, "assigned_at": level})
}

fn absent(state: &str) -> Value {
    json!({"state": state, "value": null})
}

/// All five ontology keys in one state (what a column looks like when its own level was not
/// read or was denied).
fn all_keys(state: &str) -> Value {
    json!({
        "lawful_basis": absent(state),
        "residency": absent(state),
        "retention": absent(state),
        "sensitivity": absent(state),
        "subject_type": absent(state),
    })
}

/// The error object a schema problem in one recorded file becomes.
fn schema_error(e: SchemaError) -> Value {
    ToolError::from(CatalogError::UpstreamSchema(e)).to_json()
}

fn missing_key(path: &Path, expected: &str, present: &[&str]) -> Value {
    schema_error(SchemaError::MissingKey {
        what: path.display().to_string(),
        expected: expected.into(),
        present: present.iter().map(|s| s.to_string()).collect(),
    })
}

const CUSTOMER_COLUMNS: [&str; 13] = [
    "customer_id",
    "anrede",
    "first_name",
    "last_name",
    "vn_gebdat",
    "postal_address",
    "email",
    "phoneMobile",
    "iban",
    "bic",
    "steuer_id",
    "customer_segment",
    "created_at",
];

/// `policy.customer.iban` as recorded: sensitivity on the column, residency on the database,
/// the rest on the table.
fn iban_tags_as_recorded() -> Value {
    json!({
        "lawful_basis": present("contract", "table"),
        "residency": present("eu", "database"),
        "retention": present("10y", "table"),
        "sensitivity": present("high", "column"),
        "subject_type": present("customer", "table"),
    })
}

fn customer_table_tags_as_recorded() -> Value {
    json!({
        "lawful_basis": present("contract", "table"),
        "residency": present("eu", "database"),
        "retention": present("10y", "table"),
        "sensitivity": absent("empty_in_source"),
        "subject_type": present("customer", "table"),
    })
}

// ---------------------------------------------------------------------------------------------
// Rule 6: confirm response structure before counting
// ---------------------------------------------------------------------------------------------

#[test]
fn unmodified_recorded_table_reads_with_all_its_columns_and_tags() {
    let catalog = Catalog::policy_customer();
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(column_names(&out), CUSTOMER_COLUMNS);
    assert_eq!(column(&out, "iban")["lf_tags"], iban_tags_as_recorded());
    assert_eq!(
        out["contract"],
        json!({"freshness_sla": "24h", "table_tags": customer_table_tags_as_recorded()})
    );
    assert_eq!(
        out["metadata"],
        json!({
            "name": "customer",
            "domain": "policy",
            "database": "policy_curated",
            "owner": "Team Bestand",
            "description": "One row per policyholder (Versicherungsnehmer) known to the PAS partner module, current state only (SCD1), loaded from the nightly PAS extract. Private and corporate customers share the table; corporates have no birth date.",
            "updated_at": "2026-11-26T23:20:00+00:00",
        })
    );
}

#[test]
fn renamed_lf_tags_on_columns_is_an_upstream_schema_error_naming_the_present_keys() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    edit(&path, |v| {
        rename_key(v, "", "LFTagsOnColumns", "LFTagsOnColumnz")
    });
    let out = err(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(
        out,
        json!({
            "error": "UpstreamSchemaError",
            "message": format!(
                "upstream response {}: expected key 'lftagsoncolumns' is missing; keys present: [lftagsoncolumnz]; the source changed shape: fix or re-record the file (docs/catalog-format.md), or report the response to the govcat maintainers",
                path.display()
            ),
        })
    );
}

/// Every key the code touches, renamed one at a time: an error naming the expected key and the
/// keys that are present, never an empty column list or an untagged column.
#[test]
fn every_renamed_upstream_key_is_an_error_not_an_omission() {
    struct Case {
        file: &'static str,
        pointer: &'static str,
        from: &'static str,
        to: &'static str,
        expected: &'static str,
    }
    let cases = [
        Case {
            file: "get-table.json",
            pointer: "",
            from: "Table",
            to: "Tabel",
            expected: "table",
        },
        Case {
            file: "get-table.json",
            pointer: "/Table",
            from: "StorageDescriptor",
            to: "Storage",
            expected: "storagedescriptor",
        },
        Case {
            file: "get-table.json",
            pointer: "/Table/StorageDescriptor",
            from: "Columns",
            to: "Cols",
            expected: "columns",
        },
        Case {
            file: "get-table.json",
            pointer: "/Table/StorageDescriptor/Columns/8",
            from: "Name",
            to: "ColumnName",
            expected: "name",
        },
        Case {
            file: "get-table.json",
            pointer: "/Table/StorageDescriptor/Columns/8",
            from: "Type",
            to: "DataType",
            expected: "type",
        },
        Case {
            file: "lf-table.json",
            pointer: "",
            from: "LFTagsOnTable",
            to: "LFTagsOnTabel",
            expected: "lftagsontable",
        },
        Case {
            file: "lf-columns.json",
            pointer: "/LFTagsOnColumns/8",
            from: "LFTags",
            to: "Tags",
            expected: "lftags",
        },
        Case {
            file: "lf-columns.json",
            pointer: "/LFTagsOnColumns/8/LFTags/0",
            from: "TagValues",
            to: "TagValue",
            expected: "tagvalues",
        },
        Case {
            file: "lf-columns.json",
            pointer: "/LFTagsOnColumns/8/LFTags/0",
            from: "TagKey",
            to: "Key",
            expected: "tagkey",
        },
        Case {
            file: "database.lftags.json",
            pointer: "",
            from: "LFTagOnDatabase",
            to: "LFTagsOnDatabase",
            expected: "lftagondatabase",
        },
    ];
    for case in cases {
        let catalog = Catalog::policy_customer();
        let path = if case.file == "database.lftags.json" {
            catalog.domain_file("policy", case.file)
        } else {
            catalog.table_file("policy", "customer", case.file)
        };
        edit(&path, |v| rename_key(v, case.pointer, case.from, case.to));
        let keys_present: Vec<String> = read(&path)
            .pointer(case.pointer)
            .and_then(Value::as_object)
            .expect("edited object")
            .keys()
            .map(|k| canonical_key(k))
            .collect();
        let keys_present: Vec<&str> = keys_present.iter().map(String::as_str).collect();
        assert_eq!(
            err(get_dataset(&catalog.context(), "policy", "customer")),
            missing_key(&path, case.expected, &keys_present),
            "{} renamed to {} in {}",
            case.from,
            case.to,
            case.file
        );
    }
}

#[test]
fn renamed_key_in_the_role_file_is_an_error_not_a_role_without_grants() {
    let catalog = Catalog::copy_of(&[("analytics", "customer_360_eu")]);
    let path = catalog
        .root()
        .join("roles")
        .join("eu-analytics-reader.json");
    edit(&path, |v| {
        rename_key(
            v,
            "/PrincipalResourcePermissions/0/Resource/LFTagPolicy",
            "Expression",
            "Expresion",
        )
    });
    let out = err(call(
        &catalog.context(),
        "check_grant_expression",
        json!({"role": "eu-analytics-reader", "domain": "analytics", "table": "customer_360_eu"}),
    ));
    assert_eq!(
        out,
        missing_key(
            &path,
            "expression",
            &["catalogid", "resourcetype", "expresion"]
        )
    );
}

// ---------------------------------------------------------------------------------------------
// Rule 13: field names are part of the contract, spelling included
// ---------------------------------------------------------------------------------------------

/// `LFTagsOnColumns` → `lf_tags_on_columns`, `TagKey` → `tag_key`.
fn snake(key: &str) -> String {
    let chars: Vec<char> = key.chars().collect();
    let mut out = String::new();
    for (i, c) in chars.iter().enumerate() {
        if c.is_ascii_uppercase() && i > 0 {
            let prev = chars[i - 1];
            let next_lower = chars.get(i + 1).is_some_and(|n| n.is_ascii_lowercase());
            if prev.is_ascii_lowercase() || (prev.is_ascii_uppercase() && next_lower) {
                out.push('_');
            }
        }
        out.push(c.to_ascii_lowercase());
    }
    out
}

/// `LFTagsOnColumns` → `lfTagsOnColumns`, `TagKey` → `tagKey`.
fn camel(key: &str) -> String {
    let mut out = String::new();
    for (i, part) in snake(key).split('_').enumerate() {
        if i == 0 {
            out.push_str(part);
        } else {
            let mut cs = part.chars();
            if let Some(first) = cs.next() {
                out.push(first.to_ascii_uppercase());
                out.extend(cs);
            }
        }
    }
    out
}

/// A way to spell a key.
type Spelling = dyn Fn(&str) -> String;

/// Respells every key of `value` (Glue `Parameters` keep theirs: they are data, not schema).
fn respell(value: &Value, spell: &Spelling) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let inner = if k == "Parameters" {
                        v.clone()
                    } else {
                        respell(v, spell)
                    };
                    (spell(k), inner)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| respell(v, spell)).collect()),
        other => other.clone(),
    }
}

#[test]
fn spellings_are_what_the_helpers_say() {
    assert_eq!(snake("LFTagsOnColumns"), "lf_tags_on_columns");
    assert_eq!(camel("LFTagsOnColumns"), "lfTagsOnColumns");
    assert_eq!(snake("TagKey"), "tag_key");
    assert_eq!(camel("TagKey"), "tagKey");
    assert_eq!(
        snake("DataLakePrincipalIdentifier"),
        "data_lake_principal_identifier"
    );
}

#[test]
fn tag_key_spelled_three_ways_gives_identical_datasets() {
    let catalog = Catalog::policy_customer();
    let ctx = catalog.context();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    let original = read(&path);
    let expected = ok(get_dataset(&ctx, "policy", "customer"));
    assert_eq!(
        column(&expected, "iban")["lf_tags"],
        iban_tags_as_recorded()
    );
    for spelling in ["TagKey", "tagKey", "tag_key"] {
        let respelled = respell(&original, &|k: &str| {
            if k == "TagKey" {
                spelling.to_string()
            } else {
                k.to_string()
            }
        });
        write(&path, &respelled);
        assert_eq!(
            ok(get_dataset(&ctx, "policy", "customer")),
            expected,
            "TagKey spelled {spelling}"
        );
    }
}

#[test]
fn whole_catalog_respelled_snake_or_camel_gives_identical_answers() {
    let catalog = Catalog::copy_of(&[("analytics", "customer_360_global_extract")]);
    let ctx = catalog.context();
    let args = json!({"role": "global-analytics-reader", "domain": "analytics", "table": "customer_360_global_extract"});
    let dataset = ok(get_dataset(
        &ctx,
        "analytics",
        "customer_360_global_extract",
    ));
    let grant = ok(call(&ctx, "check_grant_expression", args.clone()));
    let domains = ok(call(&ctx, "list_domains", json!({})));
    let files = [
        catalog.domain_file("analytics", "domain.json"),
        catalog.domain_file("analytics", "database.lftags.json"),
        catalog.table_file("analytics", "customer_360_global_extract", "get-table.json"),
        catalog.table_file("analytics", "customer_360_global_extract", "lf-table.json"),
        catalog.table_file(
            "analytics",
            "customer_360_global_extract",
            "lf-columns.json",
        ),
        catalog
            .root()
            .join("roles")
            .join("global-analytics-reader.json"),
    ];
    let originals: Vec<Value> = files.iter().map(|f| read(f)).collect();
    let spellings: [(&str, &Spelling); 3] = [
        ("snake_case", &snake),
        ("camelCase", &camel),
        ("lowercase", &|k: &str| k.to_lowercase()),
    ];
    for (name, spell) in spellings {
        for (file, original) in files.iter().zip(&originals) {
            write(file, &respell(original, spell));
        }
        assert_eq!(
            ok(get_dataset(
                &ctx,
                "analytics",
                "customer_360_global_extract"
            )),
            dataset,
            "{name}"
        );
        assert_eq!(
            ok(call(&ctx, "check_grant_expression", args.clone())),
            grant,
            "{name}"
        );
        assert_eq!(ok(call(&ctx, "list_domains", json!({}))), domains, "{name}");
    }
}

#[test]
fn tag_key_and_tag_key_in_one_object_collide() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    std::fs::write(
        &path,
        r#"{"LFTagsOnColumns": [{"Name": "iban", "LFTags": [
            {"CatalogId": "210000000001", "TagKey": "sensitivity", "tag_key": "residency", "TagValues": ["high"]}
        ]}]}"#,
    )
    .expect("write");
    let out = err(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(
        out,
        json!({
            "error": "UpstreamSchemaError",
            "message": format!(
                "upstream response {}: keys TagKey and tag_key collide after spelling normalisation; the response is ambiguous; the source changed shape: fix or re-record the file (docs/catalog-format.md), or report the response to the govcat maintainers",
                path.display()
            ),
        })
    );
}

#[test]
fn two_spellings_of_the_column_list_collide() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    std::fs::write(
        &path,
        r#"{"LFTagsOnColumns": [], "lf_tags_on_columns": [{"Name": "iban", "LFTags": []}]}"#,
    )
    .expect("write");
    assert_eq!(
        err(get_dataset(&catalog.context(), "policy", "customer")),
        schema_error(SchemaError::KeyCollision {
            what: path.display().to_string(),
            keys: vec!["LFTagsOnColumns".into(), "lf_tags_on_columns".into()],
        })
    );
}

#[test]
fn a_tag_pair_with_no_key_under_any_spelling_is_an_error_not_a_default() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    edit(&path, |v| {
        let pair = v
            .pointer_mut("/LFTagsOnColumns/8/LFTags/0")
            .and_then(Value::as_object_mut)
            .expect("iban's pair");
        pair.remove("TagKey");
    });
    assert_eq!(
        err(get_dataset(&catalog.context(), "policy", "customer")),
        missing_key(&path, "tagkey", &["catalogid", "tagvalues"])
    );
}

/// Lake Formation lists only columns that carry tags of their own, so a Glue column the column
/// response does not list was read and has no tag at the column level: it inherits.
#[test]
fn a_column_without_own_tags_inherits_and_unassigned_keys_are_empty_in_source() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    edit(&path, |v| {
        let list = v["LFTagsOnColumns"].as_array_mut().expect("list");
        list.retain(|c| c["Name"] != "iban");
    });
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    let expected = json!({
        "lawful_basis": present("contract", "table"),
        "residency": present("eu", "database"),
        "retention": present("10y", "table"),
        "sensitivity": absent("empty_in_source"),
        "subject_type": present("customer", "table"),
    });
    assert_eq!(column(&out, "iban")["lf_tags"], expected);
    // Listed with an empty tag list: the same answer.
    edit(&path, |v| {
        v["LFTagsOnColumns"]
            .as_array_mut()
            .expect("list")
            .push(json!({"Name": "iban", "LFTags": []}));
    });
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(column(&out, "iban")["lf_tags"], expected);
}

/// A column tag recorded for a column Glue does not have (here a typo, `ibna`) must not vanish:
/// today the tag is dropped and `iban` silently reads `sensitivity: empty_in_source`.
/// Suggested fix: in `DirSource::get_dataset` and `aws::recorded::assemble_dataset` (better: one
/// shared function in `catalog`), refuse an `LFTagsOnColumns` entry whose `Name` is not a Glue
/// column: `SchemaError::Invalid { what, problem: "LFTagsOnColumns names column 'ibna' which
/// GetTable does not list (columns: ...)" }`.
#[test]
fn a_column_tag_for_a_column_glue_does_not_have_is_an_error() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    edit(&path, |v| v["LFTagsOnColumns"][8]["Name"] = json!("ibna"));
    let out = err(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(out["error"], "UpstreamSchemaError");
}

// ---------------------------------------------------------------------------------------------
// Rule 12: absence has three values (four with present)
// ---------------------------------------------------------------------------------------------

#[test]
fn absent_column_tag_file_makes_every_column_tag_not_collected_not_empty() {
    let catalog = Catalog::policy_customer();
    std::fs::remove_file(catalog.table_file("policy", "customer", "lf-columns.json"))
        .expect("remove");
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(column_names(&out), CUSTOMER_COLUMNS);
    for c in out["columns"].as_array().expect("columns") {
        assert_eq!(
            c["lf_tags"],
            all_keys("not_collected"),
            "column {}",
            c["name"]
        );
    }
    // The table level was read: the contract keeps its tags.
    assert_eq!(
        out["contract"]["table_tags"],
        customer_table_tags_as_recorded()
    );
}

#[test]
fn recorded_access_denied_makes_every_column_tag_withheld() {
    let catalog = Catalog::policy_customer();
    write(
        &catalog.table_file("policy", "customer", "lf-columns.json"),
        &json!({"__type": "AccessDeniedException", "Message": "no DESCRIBE on policy_curated.customer columns"}),
    );
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(column_names(&out), CUSTOMER_COLUMNS);
    for c in out["columns"].as_array().expect("columns") {
        assert_eq!(c["lf_tags"], all_keys("withheld"), "column {}", c["name"]);
    }
    assert_eq!(
        out["contract"]["table_tags"],
        customer_table_tags_as_recorded()
    );
}

#[test]
fn a_recorded_error_other_than_access_denied_is_refused() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    write(
        &path,
        &json!({"__type": "ThrottlingException", "Message": "Rate exceeded"}),
    );
    assert_eq!(
        err(get_dataset(&catalog.context(), "policy", "customer")),
        schema_error(SchemaError::Invalid {
            what: path.display().to_string(),
            problem: "recorded error 'ThrottlingException' is not an outcome govcat can represent; re-record the table".into(),
        })
    );
}

#[test]
fn absent_table_tag_file_makes_keys_the_column_does_not_assign_not_collected() {
    let catalog = Catalog::policy_customer();
    std::fs::remove_file(catalog.table_file("policy", "customer", "lf-table.json"))
        .expect("remove");
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(
        column(&out, "iban")["lf_tags"],
        json!({
            "lawful_basis": absent("not_collected"),
            "residency": absent("not_collected"),
            "retention": absent("not_collected"),
            "sensitivity": present("high", "column"),
            "subject_type": absent("not_collected"),
        })
    );
    assert_eq!(
        column(&out, "steuer_id")["lf_tags"],
        json!({
            "lawful_basis": present("legal_obligation", "column"),
            "residency": absent("not_collected"),
            "retention": absent("not_collected"),
            "sensitivity": present("high", "column"),
            "subject_type": absent("not_collected"),
        })
    );
    assert_eq!(out["contract"]["table_tags"], all_keys("not_collected"));
}

#[test]
fn absent_database_tag_file_makes_only_database_inherited_keys_not_collected() {
    let catalog = Catalog::policy_customer();
    std::fs::remove_file(catalog.domain_file("policy", "database.lftags.json")).expect("remove");
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(
        column(&out, "iban")["lf_tags"],
        json!({
            "lawful_basis": present("contract", "table"),
            "residency": absent("not_collected"),
            "retention": present("10y", "table"),
            "sensitivity": present("high", "column"),
            "subject_type": present("customer", "table"),
        })
    );
}

/// Column overrides table overrides database; `assigned_at` says which level won; a key no
/// level assigns is `empty_in_source`.
#[test]
fn inheritance_column_over_table_over_database_with_assigned_at() {
    let catalog = Catalog::policy_customer();
    let pair =
        |k: &str, v: &str| json!({"CatalogId": "210000000001", "TagKey": k, "TagValues": [v]});
    write(
        &catalog.domain_file("policy", "database.lftags.json"),
        &json!({"LFTagOnDatabase": [pair("residency", "eu"), pair("sensitivity", "internal"), pair("retention", "7y")]}),
    );
    write(
        &catalog.table_file("policy", "customer", "lf-table.json"),
        &json!({"LFTagsOnTable": [pair("residency", "global"), pair("retention", "10y")]}),
    );
    write(
        &catalog.table_file("policy", "customer", "lf-columns.json"),
        &json!({"LFTagsOnColumns": [
            {"Name": "iban", "LFTags": [pair("sensitivity", "high"), pair("retention", "1y")]}
        ]}),
    );
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    assert_eq!(
        column(&out, "iban")["lf_tags"],
        json!({
            "lawful_basis": absent("empty_in_source"),
            "residency": present("global", "table"),
            "retention": present("1y", "column"),
            "sensitivity": present("high", "column"),
            "subject_type": absent("empty_in_source"),
        })
    );
    assert_eq!(
        column(&out, "bic")["lf_tags"],
        json!({
            "lawful_basis": absent("empty_in_source"),
            "residency": present("global", "table"),
            "retention": present("10y", "table"),
            "sensitivity": present("internal", "database"),
            "subject_type": absent("empty_in_source"),
        })
    );
    assert_eq!(
        out["contract"]["table_tags"],
        json!({
            "lawful_basis": absent("empty_in_source"),
            "residency": present("global", "table"),
            "retention": present("10y", "table"),
            "sensitivity": present("internal", "database"),
            "subject_type": absent("empty_in_source"),
        })
    );
}

#[test]
fn a_column_without_a_glue_comment_has_description_empty_in_source() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "get-table.json");
    edit(&path, |v| {
        v.pointer_mut("/Table/StorageDescriptor/Columns/8")
            .and_then(Value::as_object_mut)
            .expect("iban")
            .remove("Comment");
    });
    let out = ok(get_dataset(&catalog.context(), "policy", "customer"));
    let iban = column(&out, "iban");
    assert_eq!(iban["description"], Value::Null);
    assert_eq!(iban["description_state"], "empty_in_source");
    assert_eq!(column(&out, "bic")["description_state"], "present");
}

// ---------------------------------------------------------------------------------------------
// Rule 14: counts declare what they exclude
// ---------------------------------------------------------------------------------------------

fn domain_entry(catalog: &Catalog, domain: &str, datasets: usize, columns: usize) -> Value {
    let d = read(&catalog.domain_file(domain, "domain.json"));
    json!({
        "name": domain,
        "owner": d["Owner"],
        "description": d["Description"],
        "account_id": d["AccountId"],
        "dataset_count": datasets,
        "column_count": columns,
    })
}

fn list_domains(ctx: &Context) -> Value {
    ok(call(ctx, "list_domains", json!({})))
}

fn envelope(entries: Vec<Value>) -> Value {
    json!({"entries": entries, "sort_key": "name asc", "ttlMs": 30000, "cacheScope": "private"})
}

fn two_domain_catalog() -> Catalog {
    // policy.customer 13 columns, policy.quote 10, claims.claim 15.
    Catalog::copy_of(&[
        ("policy", "customer"),
        ("policy", "quote"),
        ("claims", "claim"),
    ])
}

#[test]
fn clean_catalog_counts_carry_no_exclusion_note() {
    let catalog = two_domain_catalog();
    let out = list_domains(&catalog.context());
    assert_eq!(
        out,
        envelope(vec![
            domain_entry(&catalog, "claims", 1, 15),
            domain_entry(&catalog, "policy", 2, 23),
        ])
    );
    for entry in out["entries"].as_array().expect("entries") {
        assert!(entry.get("counts_excluded").is_none(), "{entry}");
    }
}

#[test]
fn unreadable_table_is_excluded_from_counts_and_declared() {
    let catalog = two_domain_catalog();
    let path = catalog.table_file("policy", "quote", "get-table.json");
    let corrupt = "{\"Table\": {\"Name\": \"quote\",";
    std::fs::write(&path, corrupt).expect("write");
    let json_error = serde_json::from_str::<Value>(corrupt).expect_err("corrupt");
    let reason = CatalogError::UpstreamSchema(SchemaError::Invalid {
        what: path.display().to_string(),
        problem: format!(
            "not valid JSON at line {}, column {}: {json_error}",
            json_error.line(),
            json_error.column()
        ),
    })
    .to_string();
    let mut policy = domain_entry(&catalog, "policy", 1, 13);
    policy["counts_excluded"] =
        json!({"tables": 1, "unreadable": [{"table": "quote", "reason": reason}]});
    assert_eq!(
        list_domains(&catalog.context()),
        envelope(vec![domain_entry(&catalog, "claims", 1, 15), policy])
    );
}

#[test]
fn table_with_a_renamed_key_is_excluded_from_counts_not_counted_as_zero_columns() {
    let catalog = two_domain_catalog();
    let path = catalog.table_file("policy", "quote", "get-table.json");
    edit(&path, |v| {
        rename_key(v, "/Table/StorageDescriptor", "Columns", "Cols")
    });
    let mut policy = domain_entry(&catalog, "policy", 1, 13);
    let reason = CatalogError::UpstreamSchema(SchemaError::MissingKey {
        what: path.display().to_string(),
        expected: "columns".into(),
        present: [
            "cols",
            "location",
            "inputformat",
            "outputformat",
            "compressed",
            "numberofbuckets",
            "serdeinfo",
            "storedassubdirectories",
        ]
        .map(String::from)
        .to_vec(),
    })
    .to_string();
    policy["counts_excluded"] =
        json!({"tables": 1, "unreadable": [{"table": "quote", "reason": reason}]});
    assert_eq!(
        list_domains(&catalog.context()),
        envelope(vec![domain_entry(&catalog, "claims", 1, 15), policy])
    );
}

#[test]
fn withheld_column_tags_do_not_remove_a_table_from_the_counts() {
    let catalog = two_domain_catalog();
    write(
        &catalog.table_file("policy", "quote", "lf-columns.json"),
        &json!({"__type": "AccessDeniedException", "Message": "denied"}),
    );
    assert_eq!(
        list_domains(&catalog.context()),
        envelope(vec![
            domain_entry(&catalog, "claims", 1, 15),
            domain_entry(&catalog, "policy", 2, 23),
        ])
    );
}

// ---------------------------------------------------------------------------------------------
// check_grant_expression on the demo catalog
// ---------------------------------------------------------------------------------------------

fn check_grant(ctx: &Context, role: &str, domain: &str, table: &str) -> Outcome {
    call(
        ctx,
        "check_grant_expression",
        json!({"role": role, "domain": domain, "table": table}),
    )
}

fn analytics_grant(residency: &[&str], sensitivity: &[&str]) -> Value {
    json!({
        "catalog_id": "210000000009",
        "resource_type": "TABLE",
        "expression": [
            {"key": "residency", "values": residency},
            {"key": "sensitivity", "values": sensitivity},
        ],
        "permissions": ["SELECT"],
    })
}

#[test]
fn global_reader_reaches_the_global_extract_but_not_its_high_iban() {
    let out = ok(check_grant(
        &demo(),
        "global-analytics-reader",
        "analytics",
        "customer_360_global_extract",
    ));
    let allowed = ["public", "internal", "confidential"];
    assert_eq!(
        out,
        json!({
            "role": "global-analytics-reader",
            "domain": "analytics",
            "table": "customer_360_global_extract",
            "verdict": "reaches",
            "reaches": true,
            "grants": [analytics_grant(&["global"], &allowed)],
            "reached": [
                "customer_id", "full_name", "birth_date", "email", "phone", "postal_code",
                "country_code", "segment_code", "churn_score", "credit_score_band",
                "annual_premium_eur", "marketing_opt_out", "replicated_at"
            ],
            "denied": [{
                "column": "iban",
                "reason": "grant 0: sensitivity is high, the grant allows public, internal, confidential",
                "failed": [{
                    "grant": 0,
                    "key": "sensitivity",
                    "allowed": allowed,
                    "found": present("high", "column"),
                }],
            }],
            "undetermined": [],
            "named_resource_grants_not_evaluated": 0,
            "sort_key": "dataset column order",
            "ttlMs": 30000,
            "cacheScope": "private",
        })
    );
}

#[test]
fn global_reader_is_denied_every_column_of_the_eu_table_with_the_failing_clause() {
    let out = ok(check_grant(
        &demo(),
        "global-analytics-reader",
        "analytics",
        "customer_360_eu",
    ));
    assert_eq!(out["reaches"], false);
    assert_eq!(out["reached"], json!([]));
    assert_eq!(out["undetermined"], json!([]));
    let residency_failed = json!({
        "grant": 0, "key": "residency", "allowed": ["global"], "found": present("eu", "database"),
    });
    let denied = out["denied"].as_array().expect("denied");
    let names: Vec<&str> = denied
        .iter()
        .map(|d| d["column"].as_str().expect("column"))
        .collect();
    assert_eq!(
        names,
        [
            "kd_nr",
            "vorname",
            "nachname",
            "date_of_birth",
            "email_address",
            "phone_number",
            "address",
            "iban",
            "customer_segment",
            "active_contracts",
            "total_premium_eur",
            "open_claims",
            "werbewiderspruch",
            "updated_at"
        ]
    );
    for d in denied {
        if d["column"] == "iban" {
            assert_eq!(
                d["failed"],
                json!([
                    residency_failed,
                    {"grant": 0, "key": "sensitivity", "allowed": ["public", "internal", "confidential"],
                     "found": present("high", "column")},
                ])
            );
        } else {
            assert_eq!(
                d["failed"],
                json!([residency_failed]),
                "column {}",
                d["column"]
            );
        }
    }
}

#[test]
fn eu_reader_reaches_every_column_of_the_eu_table() {
    let out = ok(check_grant(
        &demo(),
        "eu-analytics-reader",
        "analytics",
        "customer_360_eu",
    ));
    assert_eq!(out["reaches"], true);
    assert_eq!(
        out["grants"],
        json!([analytics_grant(
            &["eu"],
            &["public", "internal", "confidential", "high"]
        )])
    );
    assert_eq!(
        out["reached"],
        json!([
            "kd_nr",
            "vorname",
            "nachname",
            "date_of_birth",
            "email_address",
            "phone_number",
            "address",
            "iban",
            "customer_segment",
            "active_contracts",
            "total_premium_eur",
            "open_claims",
            "werbewiderspruch",
            "updated_at"
        ])
    );
    assert_eq!(out["denied"], json!([]));
    assert_eq!(out["undetermined"], json!([]));
}

#[test]
fn withheld_tags_make_columns_undetermined_never_reached_or_denied() {
    let out = ok(check_grant(
        &demo(),
        "eu-analytics-reader",
        "analytics",
        "claims_handler_productivity",
    ));
    let undetermined: Vec<Value> = [
        "personal_nr",
        "employee_name",
        "team_code",
        "week_start",
        "cases_closed",
        "avg_cycle_days",
        "reopen_rate",
        "sick_days",
    ]
    .iter()
    .map(|c| json!({"column": c, "keys": ["residency", "sensitivity"], "state": "withheld"}))
    .collect();
    assert_eq!(out["undetermined"], Value::Array(undetermined));
    assert_eq!(out["reached"], json!([]));
    assert_eq!(out["denied"], json!([]));
    // Nothing reached and nothing evaluable: undetermined, never "does not reach".
    assert_eq!(out["verdict"], "undetermined");
    assert_eq!(out["reaches"], Value::Null);
}

#[test]
fn a_role_without_a_grant_in_the_domain_is_denied_every_column_saying_so() {
    let out = ok(check_grant(
        &demo(),
        "global-analytics-reader",
        "policy",
        "customer",
    ));
    assert_eq!(out["verdict"], "does_not_reach");
    assert_eq!(out["reaches"], false);
    assert_eq!(out["grants"], json!([]));
    let denied = out["denied"].as_array().expect("denied");
    assert!(!denied.is_empty());
    for d in denied {
        assert_eq!(
            d["reason"],
            "role global-analytics-reader holds no LF-tag grant in domain policy's catalog (account 210000000001)"
        );
        assert_eq!(d["failed"], json!([]));
    }
}

#[test]
fn unknown_role_is_an_error_listing_the_roles() {
    let out = err(check_grant(
        &demo(),
        "nobody",
        "analytics",
        "customer_360_eu",
    ));
    let roles = [
        "claims-analyst",
        "eu-analytics-reader",
        "fraud-investigator",
        "global-analytics-reader",
        "hr-payroll",
        "marketing-analyst",
        "payments-operations",
        "policy-underwriter",
        "risk-actuary",
    ];
    assert_eq!(
        out,
        json!({
            "error": "RoleNotFound",
            "message": format!("role 'nobody' is not in this catalog; known roles: {}", roles.join(", ")),
            "role": "nobody",
            "roles": roles,
        })
    );
}

#[test]
fn an_empty_grant_expression_is_refused_not_read_as_match_everything() {
    let catalog = Catalog::copy_of(&[("analytics", "customer_360_eu")]);
    let path = catalog
        .root()
        .join("roles")
        .join("eu-analytics-reader.json");
    edit(&path, |v| {
        v["PrincipalResourcePermissions"][0]["Resource"]["LFTagPolicy"]["Expression"] = json!([])
    });
    assert_eq!(
        err(check_grant(&catalog.context(), "eu-analytics-reader", "analytics", "customer_360_eu")),
        schema_error(SchemaError::Invalid {
            what: path.display().to_string(),
            problem: "an LF-tag policy with an empty Expression (a named expression) cannot be evaluated; re-record with the expression resolved".into(),
        })
    );
}

#[test]
fn a_grant_on_a_named_resource_is_counted_as_not_evaluated() {
    let catalog = Catalog::copy_of(&[("analytics", "customer_360_eu")]);
    let path = catalog
        .root()
        .join("roles")
        .join("eu-analytics-reader.json");
    edit(&path, |v| {
        v["PrincipalResourcePermissions"]
            .as_array_mut()
            .expect("list")
            .push(json!({
                "Principal": {"DataLakePrincipalIdentifier": "arn:aws:iam::210000000000:role/eu-analytics-reader"},
                "Resource": {"Table": {"CatalogId": "210000000009", "DatabaseName": "analytics_curated", "Name": "dim_date"}},
                "Permissions": ["SELECT"],
                "PermissionsWithGrantOption": [],
            }))
    });
    let out = ok(check_grant(
        &catalog.context(),
        "eu-analytics-reader",
        "analytics",
        "customer_360_eu",
    ));
    assert_eq!(out["named_resource_grants_not_evaluated"], 1);
    assert_eq!(out["reaches"], true);
}

// ---------------------------------------------------------------------------------------------
// Rule 8: ttlMs and cacheScope
// ---------------------------------------------------------------------------------------------

fn far_future() -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(4_000_000_000)
}

#[test]
fn caller_dependent_answers_are_private_and_the_ontology_answer_is_public() {
    let ctx = demo();
    let cases = [
        ("list_domains", json!({}), "private"),
        (
            "get_dataset",
            json!({"domain": "policy", "table": "customer"}),
            "private",
        ),
        (
            "check_grant_expression",
            json!({"role": "eu-analytics-reader", "domain": "analytics", "table": "customer_360_eu"}),
            "private",
        ),
        (
            "resolve_lf_tag",
            json!({"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer",
                            "retention": "10y", "lawful_basis": "contract"}}),
            "public",
        ),
    ];
    for (tool, args, scope) in cases {
        let out = ok(call(&ctx, tool, args));
        assert_eq!(out["cacheScope"], scope, "{tool}");
        // The dir source declares no refresh cadence: the rule-8 floor.
        assert_eq!(out["ttlMs"], 30000, "{tool}");
    }
}

#[test]
fn dir_source_without_cadence_gets_the_floor_never_zero_whatever_the_clock() {
    let catalog = Catalog::policy_customer();
    let mut ctx = catalog.context();
    ctx.clock = far_future;
    let out = ok(get_dataset(&ctx, "policy", "customer"));
    assert_eq!(out["ttlMs"], 30000);
    assert_eq!(
        out["source"],
        json!({
            "kind": "dir",
            "location": catalog.root().display().to_string(),
            "recorded_at": "2026-11-29T00:00:00Z",
            "refresh_every_secs": null,
        })
    );
    std::fs::remove_file(catalog.root().join("provenance.json")).expect("remove");
    let out = ok(get_dataset(&ctx, "policy", "customer"));
    assert_eq!(out["ttlMs"], 30000);
    assert_eq!(out["source"]["recorded_at"], Value::Null);
    assert_eq!(ok(call(&ctx, "list_domains", json!({})))["ttlMs"], 30000);
}

// ---------------------------------------------------------------------------------------------
// Output schemas
// ---------------------------------------------------------------------------------------------

/// A valid output of every tool: the four exact tools on the demo catalog, the two retrieval
/// tools on a snapshot of one table built with the deterministic embedder.
fn outputs_of_every_tool() -> Vec<(&'static str, Value)> {
    let ctx = demo();
    let mut outputs = vec![
        ("list_domains", ok(call(&ctx, "list_domains", json!({})))),
        ("get_dataset", ok(get_dataset(&ctx, "policy", "customer"))),
        (
            "resolve_lf_tag",
            ok(call(
                &ctx,
                "resolve_lf_tag",
                json!({"tags": {"sensitivity": "high", "residency": "eu", "subject_type": "customer",
                                "retention": "10y", "lawful_basis": "contract"}}),
            )),
        ),
        (
            "check_grant_expression",
            ok(check_grant(
                &ctx,
                "global-analytics-reader",
                "analytics",
                "customer_360_global_extract",
            )),
        ),
    ];
    let catalog = Catalog::policy_customer();
    let index = tempfile::tempdir().expect("tempdir");
    let embedder = govcat::embed::HashEmbedder::new(64);
    let ctx = catalog.context();
    govcat::index::build(
        index.path(),
        &ctx.ontology,
        ctx.source.as_ref(),
        &embedder,
        &govcat::index::Quiet,
    )
    .expect("snapshot builds");
    let handle = govcat::index::SnapshotHandle::new();
    handle.swap(govcat::index::load_current(index.path(), &embedder).expect("snapshot loads"));
    let ctx = ctx.with_retrieval(Arc::new(embedder), handle);
    let found = ok(call(
        &ctx,
        "find_precedents",
        json!({"description": "iban"}),
    ));
    let ids: Vec<&Value> = found["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .map(|e| &e["id"])
        .collect();
    assert!(
        ids.contains(&&json!("column:policy.customer.iban")),
        "find_precedents over policy.customer finds iban: {ids:?}"
    );
    outputs.push(("find_precedents", found));
    outputs.push((
        "suggest_tags",
        ok(call(
            &ctx,
            "suggest_tags",
            json!({"description": "IBAN of the premium account", "domain": "policy", "table": "customer"}),
        )),
    ));
    outputs
}

#[test]
fn every_output_schema_accepts_the_tools_output_and_refuses_a_broken_one() {
    let outputs = outputs_of_every_tool();
    let names: Vec<&str> = outputs.iter().map(|(n, _)| *n).collect();
    let specs: Vec<&str> = tools::specs().iter().map(|s| s.name).collect();
    assert_eq!(
        {
            let mut n = names.clone();
            n.sort();
            n
        },
        {
            let mut s = specs.clone();
            s.sort();
            s
        },
        "one output per tool"
    );
    for (tool, output) in &outputs {
        assert_eq!(tools::validate_output(tool, output), Ok(()), "{tool}");
        // Without its ttlMs.
        let mut broken = output.clone();
        broken.as_object_mut().expect("object").remove("ttlMs");
        assert_eq!(
            tools::validate_output(tool, &broken).map_err(|e| e.kind),
            Err("OutputSchemaViolation".to_string()),
            "{tool} without ttlMs"
        );
        // A cacheScope outside public/private.
        let mut broken = output.clone();
        broken["cacheScope"] = json!("shared");
        assert_eq!(
            tools::validate_output(tool, &broken).map_err(|e| e.kind),
            Err("OutputSchemaViolation".to_string()),
            "{tool} with cacheScope shared"
        );
    }
}

#[test]
fn a_tag_state_outside_the_four_states_fails_validation() {
    let mut out = ok(get_dataset(&demo(), "policy", "customer"));
    out["columns"][8]["lf_tags"]["sensitivity"] = json!({"state": "unknown", "value": null});
    assert_eq!(
        tools::validate_output("get_dataset", &out).map_err(|e| e.kind),
        Err("OutputSchemaViolation".to_string())
    );
    let mut out = ok(call(&demo(), "list_domains", json!({})));
    out["entries"][0]["column_count"] = json!("many");
    assert_eq!(
        tools::validate_output("list_domains", &out).map_err(|e| e.kind),
        Err("OutputSchemaViolation".to_string())
    );
}

#[test]
fn a_dataset_not_in_the_catalog_is_an_error_listing_the_tables() {
    let catalog = two_domain_catalog();
    assert_eq!(
        err(get_dataset(&catalog.context(), "policy", "custmer")),
        json!({
            "error": "DatasetNotFound",
            "message": "dataset 'policy.custmer' is not in this catalog; the domain's tables: customer, quote; call the tool `get_dataset` with `domain` \"policy\" and `table` one of the domain's tables",
            "domain": "policy",
            "table": "custmer",
            "tables": ["customer", "quote"],
        })
    );
}

/// A tag value outside the ontology (`hgh`) is served today as `present` with that value, so a
/// hand-written typo reaches assistants as a tag no pipeline accepts. Suggested fix: check
/// values against the ontology where tags are merged (`catalog::effective_tags` has the
/// ontology) and refuse the dataset with the key, the value, the file and the allowed values.
#[test]
fn a_recorded_tag_value_outside_the_ontology_is_refused() {
    let catalog = Catalog::policy_customer();
    let path = catalog.table_file("policy", "customer", "lf-columns.json");
    edit(&path, |v| {
        v["LFTagsOnColumns"][8]["LFTags"][0]["TagValues"] = json!(["hgh"])
    });
    let outcome = get_dataset(&catalog.context(), "policy", "customer");
    assert!(matches!(outcome, Outcome::Err(_)), "{outcome:?}");
}

/// A table folder whose name the `dir` source does not accept (here `quote.v2`) is skipped
/// silently: not listed, not counted, no `counts_excluded`. Suggested fix: `dir::subdirs` returns
/// the rejected names and `list_tables`/`list_domains` declare them as unreadable (rule 14).
#[test]
fn a_table_folder_with_an_unsupported_name_is_declared_not_dropped() {
    let catalog = two_domain_catalog();
    let tables = catalog.root().join("domains/policy/tables");
    std::fs::rename(tables.join("quote"), tables.join("quote.v2")).expect("rename");
    let out = list_domains(&catalog.context());
    let policy = &out["entries"][1];
    assert_eq!(policy["name"], "policy");
    assert_eq!(policy["counts_excluded"]["tables"], 1);
    assert_eq!(
        policy["counts_excluded"]["unreadable"][0]["table"],
        "quote.v2"
    );
}
