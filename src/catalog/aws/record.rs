//! `govcat record --source aws`: reads the live catalog and writes it in the `dir` format
//! (same file names as `fixtures/catalog/`), with `provenance.json` saying where and when it
//! was read, so a platform team can reproduce a problem offline and tests get fixtures of known
//! origin. Everything is read (and checked through the parse boundary) before anything is
//! written; the output appears at once, by rename, or not at all.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use aws_config::SdkConfig;
use schemars::JsonSchema;
use serde::Serialize;
use serde_json::{json, Value};

use super::{assemble_dataset, AwsConfig, DomainConfig, DriftReport, Inner, RecordedTable};
use crate::catalog::{database_of, Caller, CatalogError, Domain, TableName};

/// What was read, before anything is written.
pub(super) struct Snapshot {
    domains: Vec<DomainSnapshot>,
    roles: BTreeMap<String, Vec<Value>>,
    drift: DriftReport,
}

struct DomainSnapshot {
    config: DomainConfig,
    database_tags: Value,
    tables: Vec<(TableName, RecordedTable)>,
    columns: usize,
}

/// A role the `dir` format cannot hold (its name is not a safe file name).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct NotRecorded {
    pub role: String,
    pub reason: String,
}

/// What `record` wrote.
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct RecordSummary {
    pub out: String,
    pub recorded_at: String,
    pub domains: usize,
    pub tables: usize,
    pub columns: usize,
    pub roles: Vec<String>,
    pub roles_not_recorded: Vec<NotRecorded>,
    /// Whether any domain account's LF-tag vocabulary differs from the ontology (details in
    /// `provenance.json`).
    pub ontology_drift: bool,
}

/// The `dir` source accepts only these names as folders and files.
fn is_dir_safe(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

pub(super) async fn read_all(inner: &Inner, caller: &Caller) -> Result<Snapshot, CatalogError> {
    let mut domains = Vec::new();
    for d in inner.readable_domains(caller) {
        let domain = Domain(d.name.clone());
        let session = inner.session(caller, d).await?;
        let database_tags = inner.database_tags(caller, d, &session).await?;
        let mut tables = Vec::new();
        let mut columns = 0;
        for table in inner.list_tables(caller, d).await? {
            if !is_dir_safe(&table.0) {
                return Err(CatalogError::UpstreamSchema(crate::catalog::boundary::SchemaError::Invalid {
                    what: format!("aws glue:GetTables on {}", database_of(&domain)),
                    problem: format!("table name '{}' cannot be a folder of the dir format; record refuses rather than leave it out", table.0),
                }));
            }
            let recorded = inner.read_table(caller, d, &session, &table).await?;
            // What the dir source will read back must pass the boundary now, not later.
            let what = format!("aws {}.{}", database_of(&domain), table.0);
            let dataset = assemble_dataset(
                &inner.ontology,
                &domain,
                &table,
                &database_tags,
                &recorded,
                &what,
            )?;
            columns += dataset.columns.len();
            tables.push((table, recorded));
        }
        domains.push(DomainSnapshot {
            config: d.clone(),
            database_tags,
            tables,
            columns,
        });
    }
    let roles = inner.grants_by_role(caller).await?;
    let drift = inner.ontology_drift(caller).await?;
    Ok(Snapshot {
        domains,
        roles,
        drift,
    })
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> CatalogError {
    CatalogError::Io {
        thing: path.display().to_string(),
        problem: e.to_string(),
        next: "check the --out directory is writable and has space".into(),
    }
}

fn write_json(path: &Path, value: &Value) -> Result<(), CatalogError> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| io_error(parent, e))?;
    }
    let text = serde_json::to_string_pretty(value).map_err(|e| io_error(path, e))?;
    std::fs::write(path, text + "\n").map_err(|e| io_error(path, e))
}

/// Refuses an existing non-empty directory: record never mixes two catalogs.
fn check_out(out: &Path) -> Result<(), CatalogError> {
    if !out.exists() {
        return Ok(());
    }
    let empty = out.is_dir()
        && std::fs::read_dir(out)
            .map_err(|e| io_error(out, e))?
            .next()
            .is_none();
    if empty {
        Ok(())
    } else {
        Err(CatalogError::Io {
            thing: format!("--out {}", out.display()),
            problem: "exists and is not an empty directory".into(),
            next: "choose a new directory (record never overwrites or merges catalogs)".into(),
        })
    }
}

pub(super) fn write(
    config: &AwsConfig,
    sdk: &SdkConfig,
    snapshot: &Snapshot,
    out: &Path,
    recorded_at: &str,
) -> Result<RecordSummary, CatalogError> {
    check_out(out)?;
    let file_name = out
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .ok_or_else(|| io_error(out, "has no directory name"))?;
    let staging: PathBuf =
        out.with_file_name(format!(".{file_name}.partial-{}", std::process::id()));
    if staging.exists() {
        std::fs::remove_dir_all(&staging).map_err(|e| io_error(&staging, e))?;
    }
    let result = write_into(config, sdk, snapshot, &staging, recorded_at);
    let summary = match result {
        Ok(s) => s,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if out.exists() {
        std::fs::remove_dir(out).map_err(|e| io_error(out, e))?;
    }
    std::fs::rename(&staging, out).map_err(|e| io_error(out, e))?;
    Ok(RecordSummary {
        out: out.display().to_string(),
        ..summary
    })
}

fn write_into(
    config: &AwsConfig,
    sdk: &SdkConfig,
    snapshot: &Snapshot,
    dir: &Path,
    recorded_at: &str,
) -> Result<RecordSummary, CatalogError> {
    let (mut tables, mut columns) = (0, 0);
    for d in &snapshot.domains {
        let base = dir.join("domains").join(&d.config.name);
        write_json(
            &base.join("domain.json"),
            &json!({"Name": d.config.name, "AccountId": d.config.account_id,
                    "Owner": d.config.owner, "Description": d.config.description}),
        )?;
        write_json(&base.join("database.lftags.json"), &d.database_tags)?;
        std::fs::create_dir_all(base.join("tables")).map_err(|e| io_error(&base, e))?;
        for (name, t) in &d.tables {
            let tdir = base.join("tables").join(&name.0);
            write_json(&tdir.join("get-table.json"), &t.get_table)?;
            write_json(&tdir.join("lf-table.json"), &t.lf_table)?;
            write_json(&tdir.join("lf-columns.json"), &t.lf_columns)?;
        }
        tables += d.tables.len();
        columns += d.columns;
    }
    let mut roles = Vec::new();
    let mut roles_not_recorded = Vec::new();
    std::fs::create_dir_all(dir.join("roles")).map_err(|e| io_error(dir, e))?;
    for (role, entries) in &snapshot.roles {
        if is_dir_safe(role) {
            write_json(
                &dir.join("roles").join(format!("{role}.json")),
                &json!({ "PrincipalResourcePermissions": entries }),
            )?;
            roles.push(role.clone());
        } else {
            roles_not_recorded.push(NotRecorded {
                role: role.clone(),
                reason: "the name has characters the dir format does not allow in file names"
                    .into(),
            });
        }
    }
    let accounts: BTreeMap<&str, &str> = snapshot
        .domains
        .iter()
        .map(|d| (d.config.name.as_str(), d.config.account_id.as_str()))
        .collect();
    write_json(
        &dir.join("provenance.json"),
        &json!({
            "source": "aws",
            "how": format!(
                "recorded by `govcat record --source aws`: Glue GetTables/GetTable and Lake Formation \
                 GetResourceLFTags (database, table, columns; ShowAssignedLFTags), ListPermissions and \
                 ListLFTags, read through role '{}' in each domain account; files in the shape of the \
                 AWS responses (AWS CLI JSON output)",
                config.role_name
            ),
            "recorded_at": recorded_at,
            "region": config.region,
            "endpoint": sdk.endpoint_url(),
            "accounts": accounts,
            "counts": {"domains": snapshot.domains.len(), "tables": tables, "columns": columns},
            "roles": roles,
            "roles_not_recorded": roles_not_recorded,
            "ontology_drift": snapshot.drift,
        }),
    )?;
    Ok(RecordSummary {
        out: dir.display().to_string(),
        recorded_at: recorded_at.to_string(),
        domains: snapshot.domains.len(),
        tables,
        columns,
        roles,
        roles_not_recorded,
        ontology_drift: snapshot.drift.has_drift(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_existing_non_empty_out_directory_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("x"), "1").unwrap();
        let err = check_out(dir.path()).unwrap_err();
        assert_eq!(
            err,
            CatalogError::Io {
                thing: format!("--out {}", dir.path().display()),
                problem: "exists and is not an empty directory".into(),
                next: "choose a new directory (record never overwrites or merges catalogs)".into(),
            }
        );
        assert_eq!(check_out(&dir.path().join("new")), Ok(()));
    }
}
