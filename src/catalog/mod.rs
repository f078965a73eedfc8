//! The catalog: domains, datasets, columns and their tags, and the `CatalogSource` trait that
//! reads them. Sources turn upstream responses into these types only through [`boundary`];
//! effective column tags are merged here (database → table → column, the more specific level
//! wins), because Lake Formation's column query omits inherited tags.
//!
//! This module never writes to a source and never invents a value: a tag that was not read is
//! `not_collected`, a tag the reader may not see is `withheld`.

pub mod aws;
pub mod boundary;
pub mod dir;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::ontology::Ontology;
use boundary::{Clause, LfTagPair, Recorded, SchemaError};

/// A domain name, e.g. `policy`. Its Glue database is `<domain>_curated`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct Domain(pub String);

/// A table name inside a domain, e.g. `customer`.
#[derive(
    Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(transparent)]
pub struct TableName(pub String);

impl fmt::Display for Domain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for TableName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The Glue database that holds a domain's curated tables.
pub fn database_of(domain: &Domain) -> String {
    format!("{}_curated", domain.0)
}

/// Whether a field's value is there, and if not, why not. Set where the decision is made.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum FieldState {
    /// The source has a value; it is in `value`.
    Present,
    /// The source was read and holds no value at any level. Treat as "not classified yet":
    /// ask the data owner, do not assume a default.
    EmptyInSource,
    /// govcat did not read this field (not recorded, or not requested). Read the dataset live
    /// with `get_dataset` before relying on its absence.
    NotCollected,
    /// The value exists or may exist but the reader may not see it (Lake Formation denied the
    /// read, or the caller's scopes do not cover it). Ask for access; never treat as empty.
    Withheld,
}

impl FieldState {
    pub fn as_str(self) -> &'static str {
        match self {
            FieldState::Present => "present",
            FieldState::EmptyInSource => "empty_in_source",
            FieldState::NotCollected => "not_collected",
            FieldState::Withheld => "withheld",
        }
    }
}

/// The level a present tag was assigned at.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum TagLevel {
    Database,
    Table,
    Column,
}

/// One tag key of a column or table: its state, and its value when `present`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub struct TagState {
    pub state: FieldState,
    /// The value; `null` unless `state` is `present`.
    pub value: Option<String>,
    /// Where a present value was assigned (inheritance: database → table → column).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub assigned_at: Option<TagLevel>,
}

impl TagState {
    pub fn present(value: &str, level: TagLevel) -> TagState {
        TagState {
            state: FieldState::Present,
            value: Some(value.to_string()),
            assigned_at: Some(level),
        }
    }

    pub fn absent(state: FieldState) -> TagState {
        TagState {
            state,
            value: None,
            assigned_at: None,
        }
    }

    pub fn value(&self) -> Option<&str> {
        match self.state {
            FieldState::Present => self.value.as_deref(),
            _ => None,
        }
    }
}

/// Tags of a column or table, keyed by tag key (ontology keys first-class, in key order).
pub type Tags = BTreeMap<String, TagState>;

/// What was read of one level's tags.
#[derive(Debug, Clone, PartialEq)]
pub enum LevelTags {
    Read(Vec<LfTagPair>),
    NotCollected,
    Withheld,
}

impl From<Option<Recorded<Vec<LfTagPair>>>> for LevelTags {
    fn from(r: Option<Recorded<Vec<LfTagPair>>>) -> Self {
        match r {
            None => LevelTags::NotCollected,
            Some(Recorded::Ok(p)) => LevelTags::Read(p),
            Some(Recorded::AccessDenied(_)) => LevelTags::Withheld,
        }
    }
}

/// Merges levels from most to least specific. The first level that assigns a key wins; a level
/// that was not read (or was denied) before any assignment makes the key `not_collected`
/// (`withheld`), because a more specific value might be hidden there; a key no read level
/// assigns is `empty_in_source`. Keys in the source but not in the ontology are kept.
pub fn effective_tags(ontology: &Ontology, most_specific_first: &[(TagLevel, &LevelTags)]) -> Tags {
    let mut keys: Vec<String> = ontology.key_names();
    for (_, level) in most_specific_first {
        if let LevelTags::Read(pairs) = level {
            for p in pairs {
                if !keys.contains(&p.key) {
                    keys.push(p.key.clone());
                }
            }
        }
    }
    keys.into_iter()
        .map(|key| {
            let mut state = TagState::absent(FieldState::EmptyInSource);
            for (level_name, level) in most_specific_first {
                match level {
                    LevelTags::Read(pairs) => {
                        if let Some(p) = pairs.iter().find(|p| p.key == key) {
                            state = TagState::present(&p.value, *level_name);
                            break;
                        }
                    }
                    LevelTags::NotCollected => {
                        state = TagState::absent(FieldState::NotCollected);
                        break;
                    }
                    LevelTags::Withheld => {
                        state = TagState::absent(FieldState::Withheld);
                        break;
                    }
                }
            }
            (key, state)
        })
        .collect()
}

/// The effective tags of the database level alone (what a new table inherits), its values
/// checked against the ontology like [`assemble`] checks them.
pub fn database_level_tags(
    ontology: &Ontology,
    db_tags: &LevelTags,
    what: &str,
) -> Result<Tags, CatalogError> {
    check_in_ontology(ontology, db_tags, what)?;
    Ok(effective_tags(ontology, &[(TagLevel::Database, db_tags)]))
}

/// Refuses a read level carrying a value outside the ontology for one of its keys: the closed
/// set reaches no caller.
fn check_in_ontology(
    ontology: &Ontology,
    level: &LevelTags,
    what: &str,
) -> Result<(), CatalogError> {
    let LevelTags::Read(pairs) = level else {
        return Ok(());
    };
    match pairs
        .iter()
        .find(|p| ontology.key(&p.key).is_some() && !ontology.contains(&p.key, &p.value))
    {
        None => Ok(()),
        Some(p) => Err(CatalogError::TagOutsideOntology {
            what: what.to_string(),
            key: p.key.clone(),
            value: p.value.clone(),
            allowed: ontology
                .key(&p.key)
                .map(|k| k.values.iter().map(|v| v.value.0.clone()).collect())
                .unwrap_or_default(),
        }),
    }
}

/// Who is asking, and which domains they may read. Resolved once per request by the transport
/// (auth); sources use the subject to name upstream sessions (aws), never a credential.
#[derive(Debug, Clone, PartialEq)]
pub struct Caller {
    pub subject: String,
    /// `None`: every domain (local use without authorisation).
    pub readable: Option<BTreeSet<Domain>>,
}

impl Caller {
    /// The local operator (CLI, `--auth none`): may read every domain.
    pub fn local() -> Caller {
        Caller {
            subject: "local".into(),
            readable: None,
        }
    }

    pub fn may_read(&self, domain: &Domain) -> bool {
        self.readable.as_ref().is_none_or(|r| r.contains(domain))
    }

    /// The scope a caller needs for a domain.
    pub fn scope_for(domain: &Domain) -> String {
        format!("catalog:{}:read", domain.0)
    }
}

/// Builds a dataset from its parsed upstream parts: the one assembly both sources use.
/// Refuses column tags for a column Glue does not list (a typo must not silently drop a tag)
/// and tag values outside the ontology (the closed set reaches no caller).
#[allow(clippy::too_many_arguments)]
pub fn assemble(
    ontology: &Ontology,
    domain: &Domain,
    table: &TableName,
    glue: boundary::GlueTable,
    db_tags: &LevelTags,
    table_tags: &LevelTags,
    column_tags: Option<Recorded<boundary::ColumnTags>>,
    what: &str,
) -> Result<Dataset, CatalogError> {
    if let Some(Recorded::Ok(list)) = &column_tags {
        for (name, _) in list {
            if !glue.columns.iter().any(|c| &c.name == name) {
                return Err(CatalogError::UpstreamSchema(SchemaError::Invalid {
                    what: what.to_string(),
                    problem: format!(
                        "LFTagsOnColumns names column '{name}' which GetTable does not list (columns: {})",
                        glue.columns.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
                    ),
                }));
            }
        }
    }
    let levels: Vec<&LevelTags> = vec![db_tags, table_tags];
    let mut own_levels: Vec<LevelTags> = Vec::new();
    if let Some(Recorded::Ok(list)) = &column_tags {
        own_levels.extend(list.iter().map(|(_, t)| LevelTags::Read(t.clone())));
    }
    for level in levels.into_iter().chain(own_levels.iter()) {
        check_in_ontology(ontology, level, what)?;
    }
    let contract = Contract {
        freshness_sla: glue
            .parameters
            .get("freshness_sla")
            .and_then(serde_json::Value::as_str)
            .map(str::to_string),
        table_tags: effective_tags(
            ontology,
            &[(TagLevel::Table, table_tags), (TagLevel::Database, db_tags)],
        ),
    };
    let columns = glue
        .columns
        .iter()
        .map(|c| {
            let own: LevelTags = match &column_tags {
                None => LevelTags::NotCollected,
                Some(Recorded::AccessDenied(_)) => LevelTags::Withheld,
                // Lake Formation lists only columns that carry tags of their own: a column it
                // does not list was read and has none at this level.
                Some(Recorded::Ok(list)) => LevelTags::Read(
                    list.iter()
                        .find(|(name, _)| name == &c.name)
                        .map(|(_, tags)| tags.clone())
                        .unwrap_or_default(),
                ),
            };
            Column {
                name: c.name.clone(),
                data_type: c.data_type.clone(),
                description: c.comment.clone(),
                description_state: if c.comment.is_some() {
                    FieldState::Present
                } else {
                    FieldState::EmptyInSource
                },
                is_partition_key: c.is_partition_key,
                lf_tags: effective_tags(
                    ontology,
                    &[
                        (TagLevel::Column, &own),
                        (TagLevel::Table, table_tags),
                        (TagLevel::Database, db_tags),
                    ],
                ),
            }
        })
        .collect();
    Ok(Dataset {
        metadata: DatasetMetadata {
            name: table.clone(),
            domain: domain.clone(),
            database: glue.database,
            owner: glue.owner,
            description: glue.description,
            updated_at: glue.update_time,
        },
        contract,
        columns,
    })
}

/// A domain with its owner.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DomainInfo {
    pub name: Domain,
    pub owner: String,
    pub description: String,
    pub account_id: String,
}

/// Who owns a dataset and where it lives.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct DatasetMetadata {
    pub name: TableName,
    pub domain: Domain,
    pub database: String,
    /// Glue table owner; `null` when Glue holds none.
    pub owner: Option<String>,
    pub description: Option<String>,
    pub updated_at: Option<String>,
}

/// What the dataset promises: freshness and table-level tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Contract {
    /// The table parameter `freshness_sla` (e.g. `24h`); `null` when the table declares none.
    pub freshness_sla: Option<String>,
    /// Effective table-level tags (database → table).
    pub table_tags: Tags,
}

/// A column with its effective tags.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Column {
    pub name: String,
    #[serde(rename = "type")]
    pub data_type: String,
    /// The Glue column comment; `null` when Glue holds none (`description_state` says so).
    pub description: Option<String>,
    pub description_state: FieldState,
    pub is_partition_key: bool,
    pub lf_tags: Tags,
}

/// One dataset as read from the source.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Dataset {
    pub metadata: DatasetMetadata,
    pub contract: Contract,
    pub columns: Vec<Column>,
}

/// An LF-tag grant of a role.
#[derive(Debug, Clone, PartialEq)]
pub struct RoleGrants {
    pub role: String,
    pub grants: Vec<boundary::TagPolicyGrant>,
    /// Grants on named resources, which `check_grant_expression` does not evaluate.
    pub named_resource_grants: usize,
}

impl RoleGrants {
    /// The tag-policy expressions of this role in one catalog (account).
    pub fn expressions_in(&self, catalog_id: &str) -> Vec<&Vec<Clause>> {
        self.grants
            .iter()
            .filter(|g| g.catalog_id == catalog_id)
            .map(|g| &g.expression)
            .collect()
    }
}

/// How fresh the source is, as far as govcat knows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SourceFreshness {
    /// `dir` or `aws`.
    pub kind: String,
    /// Where the catalog was read from.
    pub location: String,
    /// When the source data was recorded or last read (RFC 3339), when known.
    pub recorded_at: Option<String>,
    /// How often the source is expected to change (seconds), when known.
    pub refresh_every_secs: Option<u64>,
}

/// Which catalog a source is, as a snapshot records it (`manifest.json`, `source`): the same
/// identity with other contents is the same catalog grown stale; another identity is another
/// catalog, and a snapshot of it answers for the wrong one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum SourceIdentity {
    /// A `dir` catalog: its folder's canonical path.
    Dir { path: String },
    /// An `aws` catalog: the region and every domain with its account id, sorted by name.
    Aws {
        region: String,
        domains: Vec<AwsDomainIdentity>,
    },
}

/// One domain of an `aws` source's identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AwsDomainIdentity {
    pub name: String,
    pub account_id: String,
}

impl std::fmt::Display for SourceIdentity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceIdentity::Dir { path } => write!(f, "{path}"),
            SourceIdentity::Aws { region, domains } => {
                let list: Vec<String> = domains
                    .iter()
                    .map(|d| format!("{}@{}", d.name, d.account_id))
                    .collect();
                write!(f, "aws {region} [{}]", list.join(", "))
            }
        }
    }
}

/// A failure to read the catalog. Every message names the thing, the problem, the next step.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum CatalogError {
    #[error("domain '{domain}' is not in this catalog ({available} available)")]
    DomainNotFound { domain: String, available: usize },
    #[error("dataset '{domain}.{table}' is not in this catalog; the domain's tables: {}", tables.join(", "))]
    DatasetNotFound {
        domain: String,
        table: String,
        tables: Vec<String>,
    },
    #[error("role '{role}' is not in this catalog; known roles: {}", roles.join(", "))]
    RoleNotFound { role: String, roles: Vec<String> },
    #[error("{what}: tag {key}={value} is not in the ontology (allowed for {key}: {}); fix the tag in the source or ask governance to add the value to ontology/lf-tags.json", allowed.join(", "))]
    TagOutsideOntology {
        what: String,
        key: String,
        value: String,
        allowed: Vec<String>,
    },
    #[error("upstream response {0}; the source changed shape: fix or re-record the file (docs/catalog-format.md), or report the response to the govcat maintainers")]
    UpstreamSchema(#[from] SchemaError),
    #[error("{thing}: {problem}; {next}")]
    Io {
        thing: String,
        problem: String,
        next: String,
    },
    /// Throttling, timeouts, 5xx, connection failures: worth retrying later.
    #[error("{operation} for domain '{domain}' failed: {problem}; {next}")]
    UpstreamUnavailable {
        domain: String,
        operation: String,
        problem: String,
        next: String,
    },
    /// AWS refused the identity (`principal`: a reader role ARN or govcat's own AWS identity).
    #[error("{operation} for domain '{domain}' was denied to {principal}: {problem}; {next}")]
    UpstreamAccessDenied {
        domain: String,
        principal: String,
        operation: String,
        problem: String,
        next: String,
    },
    /// No request was sent: govcat's own AWS credentials could not be loaded. Not "denied":
    /// AWS never saw the call. Its kind is `UpstreamAccessDenied`, like a refusal.
    #[error("{operation} for domain '{domain}' was not sent: {problem}; {next}")]
    UpstreamNoCredentials {
        domain: String,
        operation: String,
        problem: String,
        next: String,
    },
    /// A configured domain whose Glue database the account does not have. Not
    /// `DomainNotFound`: the domain is in govcat's domain map (`govcat list-domains` lists it);
    /// what is missing is upstream, and retrying will not bring it back.
    #[error("{operation} for domain '{domain}' failed: account {account_id} has no Glue database '{database}', which the domain is configured to read; create the database in that account, or correct domain '{domain}' (account_id) in the aws domain map")]
    UpstreamDatabaseMissing {
        domain: String,
        database: String,
        account_id: String,
        operation: String,
    },
    /// AWS refused the request itself; retrying will not help.
    #[error("{operation} for domain '{domain}' was rejected: {problem}; {next}")]
    UpstreamRejected {
        domain: String,
        operation: String,
        problem: String,
        next: String,
    },
}

impl CatalogError {
    /// Whether the source could not be reached or refused us (as opposed to one bad table).
    pub fn is_upstream_failure(&self) -> bool {
        matches!(self.kind(), "UpstreamUnavailable" | "UpstreamAccessDenied")
    }

    pub fn kind(&self) -> &'static str {
        match self {
            CatalogError::DomainNotFound { .. } => "DomainNotFound",
            CatalogError::DatasetNotFound { .. } => "DatasetNotFound",
            CatalogError::RoleNotFound { .. } => "RoleNotFound",
            CatalogError::UpstreamSchema(_) => "UpstreamSchemaError",
            CatalogError::TagOutsideOntology { .. } => "TagOutsideOntology",
            CatalogError::Io { .. } => "SourceUnavailable",
            CatalogError::UpstreamUnavailable { .. } => "UpstreamUnavailable",
            CatalogError::UpstreamAccessDenied { .. }
            | CatalogError::UpstreamNoCredentials { .. } => "UpstreamAccessDenied",
            CatalogError::UpstreamDatabaseMissing { .. } => "UpstreamDatabaseMissing",
            CatalogError::UpstreamRejected { .. } => "UpstreamRejected",
        }
    }
}

/// A table that could not be read while enumerating, with the reason (for counts, rule 14).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "A table that could not be read, and why; left out of the counts.")]
pub struct Unreadable {
    pub table: String,
    pub reason: String,
}

/// A catalog source: `dir` (recorded responses) or, later, `aws`. Read-only by construction:
/// the trait has no method that writes.
pub trait CatalogSource: Send + Sync {
    fn freshness(&self) -> SourceFreshness;
    /// Which catalog this is (recorded in snapshots, compared before one is used).
    fn identity(&self) -> SourceIdentity;
    /// All domains, ordered by name.
    fn list_domains(&self, caller: &Caller) -> Result<Vec<DomainInfo>, CatalogError>;
    /// The table names of one domain, ordered.
    fn list_tables(&self, caller: &Caller, domain: &Domain)
        -> Result<Vec<TableName>, CatalogError>;
    /// One dataset, read now (never from a snapshot).
    fn get_dataset(
        &self,
        caller: &Caller,
        domain: &Domain,
        table: &TableName,
    ) -> Result<Dataset, CatalogError>;
    /// The tags a new table of `domain` would inherit: its database's tags, four-state, each
    /// present one `assigned_at: database` (Lake Formation applies a database's tags to a table
    /// created in it). Read now, like [`CatalogSource::get_dataset`].
    fn database_tags(&self, caller: &Caller, domain: &Domain) -> Result<Tags, CatalogError>;
    /// The known roles, ordered.
    fn list_roles(&self, caller: &Caller) -> Result<Vec<String>, CatalogError>;
    fn role_grants(&self, caller: &Caller, role: &str) -> Result<RoleGrants, CatalogError>;
    /// Tag keys and values on one side only (the source's tag vocabulary vs the ontology),
    /// for sources that have a vocabulary of their own; `None` when there is none to compare.
    fn ontology_drift(&self, _caller: &Caller) -> Option<Result<serde_json::Value, CatalogError>> {
        None
    }
}

/// Reads every dataset of a domain; tables that fail are returned separately, never dropped.
pub fn read_domain(
    source: &dyn CatalogSource,
    caller: &Caller,
    domain: &Domain,
) -> Result<(Vec<Dataset>, Vec<Unreadable>), CatalogError> {
    let mut ok = Vec::new();
    let mut failed = Vec::new();
    for table in source.list_tables(caller, domain)? {
        match source.get_dataset(caller, domain, &table) {
            Ok(d) => ok.push(d),
            // The source itself failing is an error of the whole read, never a table to skip.
            Err(e) if e.is_upstream_failure() => return Err(e),
            Err(e) => failed.push(Unreadable {
                table: table.0,
                reason: e.to_string(),
            }),
        }
    }
    Ok((ok, failed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn pair(k: &str, v: &str) -> LfTagPair {
        LfTagPair {
            key: k.into(),
            value: v.into(),
        }
    }

    fn ontology() -> Ontology {
        Ontology::load(Path::new(crate::ontology::DEFAULT_ONTOLOGY_PATH)).unwrap()
    }

    #[test]
    fn column_overrides_table_overrides_database() {
        let db = LevelTags::Read(vec![
            pair("residency", "eu"),
            pair("sensitivity", "internal"),
        ]);
        let table = LevelTags::Read(vec![pair("residency", "global")]);
        let column = LevelTags::Read(vec![pair("sensitivity", "high")]);
        let tags = effective_tags(
            &ontology(),
            &[
                (TagLevel::Column, &column),
                (TagLevel::Table, &table),
                (TagLevel::Database, &db),
            ],
        );
        assert_eq!(
            tags["sensitivity"],
            TagState::present("high", TagLevel::Column)
        );
        assert_eq!(
            tags["residency"],
            TagState::present("global", TagLevel::Table)
        );
        assert_eq!(
            tags["retention"],
            TagState::absent(FieldState::EmptyInSource)
        );
    }

    #[test]
    fn unread_column_level_makes_unassigned_keys_not_collected_not_empty() {
        let db = LevelTags::Read(vec![pair("residency", "eu")]);
        let table = LevelTags::Read(vec![]);
        let tags = effective_tags(
            &ontology(),
            &[
                (TagLevel::Column, &LevelTags::NotCollected),
                (TagLevel::Table, &table),
                (TagLevel::Database, &db),
            ],
        );
        assert_eq!(
            tags["residency"],
            TagState::absent(FieldState::NotCollected)
        );
        assert_eq!(
            tags["sensitivity"],
            TagState::absent(FieldState::NotCollected)
        );
    }

    #[test]
    fn denied_column_level_is_withheld() {
        let db = LevelTags::Read(vec![pair("residency", "eu")]);
        let tags = effective_tags(
            &ontology(),
            &[
                (TagLevel::Column, &LevelTags::Withheld),
                (TagLevel::Database, &db),
            ],
        );
        assert!(tags.values().all(|t| t.state == FieldState::Withheld));
    }
}
