//! The `dir` source: a catalog recorded as Glue and Lake Formation responses on disk (the
//! embedded default is `fixtures/catalog/`; the format is documented in
//! `docs/catalog-format.md`). Every file goes through the parse boundary. A file that is absent
//! means "not recorded" (`not_collected`), never "empty".

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::boundary;
use super::{
    Caller, CatalogError, CatalogSource, Dataset, Domain, DomainInfo, LevelTags, RoleGrants,
    SourceFreshness, SourceIdentity, TableName, Tags,
};
use crate::ontology::Ontology;

/// Default location of the demo catalog, relative to the working directory.
pub const DEFAULT_CATALOG_DIR: &str = "fixtures/catalog";

/// A folder's canonical path as text (the path as given when it cannot be resolved).
pub fn canonical_path(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

pub struct DirSource {
    root: PathBuf,
    ontology: Ontology,
}

impl DirSource {
    /// Opens a catalog directory; fails if it does not look like one.
    pub fn open(root: &Path, ontology: Ontology) -> Result<DirSource, CatalogError> {
        if !root.is_dir() {
            return Err(CatalogError::Io {
                thing: format!("catalog directory {}", root.display()),
                problem: if root.exists() {
                    "is not a directory".into()
                } else {
                    "does not exist".into()
                },
                next: format!(
                    "pass --catalog with an existing directory in the format of docs/catalog-format.md (default {DEFAULT_CATALOG_DIR})"
                ),
            });
        }
        let domains = root.join("domains");
        if !domains.is_dir() {
            return Err(CatalogError::Io {
                thing: format!("catalog directory {}", root.display()),
                problem: "has no domains/ folder".into(),
                next: format!(
                    "pass --catalog with a directory in the format of docs/catalog-format.md (default {DEFAULT_CATALOG_DIR})"
                ),
            });
        }
        Ok(DirSource {
            root: root.to_path_buf(),
            ontology,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    fn domain_dir(&self, domain: &Domain) -> PathBuf {
        self.root.join("domains").join(&domain.0)
    }

    fn table_dir(&self, domain: &Domain, table: &TableName) -> PathBuf {
        self.domain_dir(domain).join("tables").join(&table.0)
    }

    fn check_domain(&self, domain: &Domain) -> Result<(), CatalogError> {
        if is_safe_name(&domain.0) && self.domain_dir(domain).join("domain.json").is_file() {
            return Ok(());
        }
        Err(CatalogError::DomainNotFound {
            domain: domain.0.clone(),
            available: self.domain_names()?.len(),
        })
    }

    fn domain_names(&self) -> Result<Vec<String>, CatalogError> {
        subdirs(&self.root.join("domains"))
    }

    fn database_tags(&self, domain: &Domain) -> Result<LevelTags, CatalogError> {
        let path = self.domain_dir(domain).join("database.lftags.json");
        Ok(match read_json_opt(&path)? {
            None => LevelTags::NotCollected,
            Some(v) => LevelTags::Read(boundary::parse_database_tags(v, &describe(&path))?),
        })
    }
}

/// Names used as path components must not escape the catalog directory.
fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
}

fn describe(path: &Path) -> String {
    path.display().to_string()
}

fn io_error(path: &Path, e: impl std::fmt::Display) -> CatalogError {
    CatalogError::Io {
        thing: describe(path),
        problem: e.to_string(),
        next: "check the file exists and is readable, or re-record the catalog".into(),
    }
}

fn read_json(path: &Path) -> Result<Value, CatalogError> {
    let text = std::fs::read_to_string(path).map_err(|e| io_error(path, e))?;
    serde_json::from_str(&text).map_err(|e| {
        CatalogError::UpstreamSchema(boundary::SchemaError::Invalid {
            what: describe(path),
            problem: format!(
                "not valid JSON at line {}, column {}: {e}",
                e.line(),
                e.column()
            ),
        })
    })
}

fn read_json_opt(path: &Path) -> Result<Option<Value>, CatalogError> {
    if path.exists() {
        read_json(path).map(Some)
    } else {
        Ok(None)
    }
}

/// Names of all sub-folders, sorted (hidden ones excepted).
fn subdirs_all(dir: &Path) -> Result<Vec<String>, CatalogError> {
    let mut names = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(|e| io_error(dir, e))? {
        let entry = entry.map_err(|e| io_error(dir, e))?;
        if entry.path().is_dir() {
            let name = entry.file_name().to_string_lossy().to_string();
            if !name.starts_with('.') {
                names.push(name);
            }
        }
    }
    names.sort();
    Ok(names)
}

/// Sub-folders whose names are valid catalog names (domains), sorted.
fn subdirs(dir: &Path) -> Result<Vec<String>, CatalogError> {
    Ok(subdirs_all(dir)?
        .into_iter()
        .filter(|name| is_safe_name(name))
        .collect())
}

impl CatalogSource for DirSource {
    fn identity(&self) -> SourceIdentity {
        SourceIdentity::Dir {
            path: canonical_path(&self.root),
        }
    }

    fn freshness(&self) -> SourceFreshness {
        let provenance = read_json_opt(&self.root.join("provenance.json"))
            .ok()
            .flatten();
        let recorded_at = provenance
            .as_ref()
            .and_then(|p| p.get("recorded_at"))
            .and_then(Value::as_str)
            .map(str::to_string);
        SourceFreshness {
            kind: "dir".into(),
            location: describe(&self.root),
            recorded_at,
            refresh_every_secs: None,
        }
    }

    fn list_domains(&self, _caller: &Caller) -> Result<Vec<DomainInfo>, CatalogError> {
        let mut out = Vec::new();
        for name in self.domain_names()? {
            let path = self.root.join("domains").join(&name).join("domain.json");
            let record = boundary::parse_domain(read_json(&path)?, &describe(&path))?;
            if record.name != name {
                return Err(CatalogError::UpstreamSchema(
                    boundary::SchemaError::Invalid {
                        what: describe(&path),
                        problem: format!("Name '{}' differs from its folder '{name}'", record.name),
                    },
                ));
            }
            out.push(DomainInfo {
                name: Domain(record.name),
                owner: record.owner,
                description: record.description,
                account_id: record.account_id,
            });
        }
        Ok(out)
    }

    fn list_tables(
        &self,
        _caller: &Caller,
        domain: &Domain,
    ) -> Result<Vec<TableName>, CatalogError> {
        self.check_domain(domain)?;
        let dir = self.domain_dir(domain).join("tables");
        if !dir.is_dir() {
            return Err(io_error(&dir, "the domain has no tables/ folder"));
        }
        // Every folder is listed, also ones with invalid names: reading them fails with a
        // reason, so counts declare them instead of dropping them (rule 14).
        Ok(subdirs_all(&dir)?.into_iter().map(TableName).collect())
    }

    fn get_dataset(
        &self,
        caller: &Caller,
        domain: &Domain,
        table: &TableName,
    ) -> Result<Dataset, CatalogError> {
        self.check_domain(domain)?;
        let dir = self.table_dir(domain, table);
        let get_table = dir.join("get-table.json");
        if !is_safe_name(&table.0)
            && subdirs_all(&self.domain_dir(domain).join("tables"))?.contains(&table.0)
        {
            return Err(CatalogError::Io {
                thing: format!("table folder {}", dir.display()),
                problem: "is not a valid table name (letters, digits, '_' and '-' only)".into(),
                next: "rename the folder to the Glue table name".into(),
            });
        }
        if !is_safe_name(&table.0) || !get_table.is_file() {
            return Err(CatalogError::DatasetNotFound {
                domain: domain.0.clone(),
                table: table.0.clone(),
                tables: self
                    .list_tables(caller, domain)?
                    .into_iter()
                    .map(|t| t.0)
                    .collect(),
            });
        }
        let glue = boundary::parse_get_table(read_json(&get_table)?, &describe(&get_table))?;
        if glue.name != table.0 {
            return Err(CatalogError::UpstreamSchema(
                boundary::SchemaError::Invalid {
                    what: describe(&get_table),
                    problem: format!(
                        "Table.Name '{}' differs from its folder '{}'",
                        glue.name, table.0
                    ),
                },
            ));
        }
        let db_tags = self.database_tags(domain)?;
        let table_path = dir.join("lf-table.json");
        let table_tags = match read_json_opt(&table_path)? {
            None => LevelTags::NotCollected,
            Some(v) => LevelTags::Read(boundary::parse_table_tags(v, &describe(&table_path))?),
        };
        let columns_path = dir.join("lf-columns.json");
        let column_tags = match read_json_opt(&columns_path)? {
            None => None,
            Some(v) => Some(boundary::parse_column_tags(v, &describe(&columns_path))?),
        };

        super::assemble(
            &self.ontology,
            domain,
            table,
            glue,
            &db_tags,
            &table_tags,
            column_tags,
            &describe(&dir),
        )
    }

    fn database_tags(&self, _caller: &Caller, domain: &Domain) -> Result<Tags, CatalogError> {
        self.check_domain(domain)?;
        let level = DirSource::database_tags(self, domain)?;
        let path = self.domain_dir(domain).join("database.lftags.json");
        super::database_level_tags(&self.ontology, &level, &describe(&path))
    }

    fn list_roles(&self, _caller: &Caller) -> Result<Vec<String>, CatalogError> {
        let dir = self.root.join("roles");
        let mut roles = Vec::new();
        if !dir.is_dir() {
            return Ok(roles);
        }
        for entry in std::fs::read_dir(&dir).map_err(|e| io_error(&dir, e))? {
            let entry = entry.map_err(|e| io_error(&dir, e))?;
            if let Some(stem) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".json"))
            {
                if is_safe_name(stem) {
                    roles.push(stem.to_string());
                }
            }
        }
        roles.sort();
        Ok(roles)
    }

    fn role_grants(&self, caller: &Caller, role: &str) -> Result<RoleGrants, CatalogError> {
        let path = self.root.join("roles").join(format!("{role}.json"));
        if !is_safe_name(role) || !path.is_file() {
            return Err(CatalogError::RoleNotFound {
                role: role.to_string(),
                roles: self.list_roles(caller)?,
            });
        }
        let (grants, named_resource_grants) =
            boundary::parse_permissions(read_json(&path)?, &describe(&path))?;
        Ok(RoleGrants {
            role: role.to_string(),
            grants,
            named_resource_grants,
        })
    }
}
