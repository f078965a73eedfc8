//! Where suggest_tags' new column goes: `domain` and `table` resolved against the catalog (an
//! existing table read live, a new table of an existing domain, a table placed in the one
//! domain that has it, or none), and how the answer words it.

use std::collections::BTreeSet;

use super::super::{Caller, Context, ToolError};
use crate::catalog::{CatalogError, Dataset, Domain, FieldState, TableName, Tags};
use crate::index::documents::Kind;

/// Where the new column goes, as resolved from `domain` and `table`.
pub(super) enum Target {
    /// No target named.
    None,
    /// An existing table, read live.
    Existing(Dataset),
    /// A table not in the catalog (or none named): a new table of `domain`, which inherits its
    /// database's tags; `similar` are existing tables with a close name.
    New {
        domain: Domain,
        table: Option<TableName>,
        inherited: Tags,
        similar: Vec<String>,
    },
}

impl Target {
    pub(super) fn name(&self) -> Option<String> {
        match self {
            Target::None => None,
            Target::Existing(ds) => Some(format!("{}.{}", ds.metadata.domain, ds.metadata.name)),
            Target::New {
                domain,
                table: Some(t),
                ..
            } => Some(format!("{domain}.{t}")),
            Target::New { domain, .. } => Some(domain.0.clone()),
        }
    }

    pub(super) fn exists(&self) -> Option<bool> {
        match self {
            Target::None => None,
            Target::Existing(_) => Some(true),
            Target::New { .. } => Some(false),
        }
    }

    pub(super) fn note(&self) -> Option<String> {
        let Target::New {
            domain,
            table,
            inherited,
            similar,
        } = self
        else {
            return None;
        };
        let what = match table {
            Some(t) => format!("table {domain}.{t} is not in the catalog: treated as a new table of domain {domain}"),
            None => format!("no table named: treated as a new table of domain {domain}"),
        };
        // In key order: the tags are a map sorted by key.
        let keys: Vec<String> = inherited
            .iter()
            .filter(|(_, t)| t.state == FieldState::Present)
            .filter_map(|(k, t)| t.value().map(|v| format!("{k}={v}")))
            .collect();
        let inherits = if keys.is_empty() {
            format!(
                "the {} database sets no tag it would inherit",
                crate::catalog::database_of(domain)
            )
        } else {
            format!(
                "it inherits the {} database's tags ({})",
                crate::catalog::database_of(domain),
                keys.join(", ")
            )
        };
        let mean = if similar.is_empty() {
            String::new()
        } else {
            format!(
                "; did you mean {}? If so, call suggest_tags again with that table to count its columns' tags",
                similar
                    .iter()
                    .map(|t| format!("{domain}.{t}"))
                    .collect::<Vec<_>>()
                    .join(" or ")
            )
        };
        Some(format!("{what} (no sibling columns; {inherits}){mean}"))
    }
}

/// The names among `names` (a domain's tables, or the readable domains) close to `wanted`
/// (normalised Damerau–Levenshtein ≥ 0.75, or one name containing the other), closest first, at
/// most 3.
fn close_names(wanted: &str, names: &[String]) -> Vec<String> {
    let wanted = wanted.to_lowercase();
    let mut close: Vec<(f64, &String)> = names
        .iter()
        .filter_map(|t| {
            let lower = t.to_lowercase();
            let sim = strsim::normalized_damerau_levenshtein(&wanted, &lower);
            let contains = lower.len() >= 4
                && wanted.len() >= 4
                && (lower.contains(&wanted) || wanted.contains(&lower));
            (sim >= 0.75 || contains).then_some((sim, t))
        })
        .collect();
    close.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    close.into_iter().take(3).map(|(_, t)| t.clone()).collect()
}

/// Resolves `domain` and `table`: an existing table is read live; a table the domain does
/// not have (or no table) is a new table of it; a domain the catalog lacks leaves precedents
/// only, with a note naming close domains. A table without its domain is placed in the one
/// readable domain the snapshot has it in (the second value says so); in none, the answer uses
/// precedents only and says so; in several, an error lists them.
pub(super) fn resolve_target(
    ctx: &Context,
    caller: &Caller,
    domain: Option<&Domain>,
    table: Option<&TableName>,
) -> Result<(Target, Option<String>), ToolError> {
    let (domain, placed) = match (domain, table) {
        (None, None) => return Ok((Target::None, None)),
        (Some(d), _) => (d.clone(), None),
        (None, Some(t)) => {
            let snapshot = ctx.snapshot()?;
            let holding = domains_with_table(&snapshot, caller, &t.0);
            match holding.as_slice() {
                [] => {
                    let note = format!(
                        "no domain you may read has a table {t}: proposed from precedents only \
                         (no siblings, nothing inherited); for a new table, call again with the \
                         domain it goes into (list_domains names them)"
                    );
                    return Ok((Target::None, Some(note)));
                }
                [only] => (
                    Domain(only.clone()),
                    Some(format!(
                        "domain {only} taken from the table's name: the one domain you may read \
                         that has a table {t}"
                    )),
                ),
                several => {
                    return Err(ToolError::new(
                        "InvalidArguments",
                        format!(
                            "table {t} is in {} domains you may read ({}): pass the one the \
                             column goes into as domain",
                            several.len(),
                            several.join(", ")
                        ),
                    )
                    .with("argument", "domain")
                    .with("domains", several));
                }
            }
        }
    };
    let domain = &domain;
    ctx.require_domain(caller, domain)?;
    let domains: Vec<String> = ctx
        .source
        .list_domains(caller)?
        .into_iter()
        .map(|d| d.name.0)
        .filter(|d| caller.may_read(&Domain(d.clone())))
        .collect();
    if !domains.contains(&domain.0) {
        // The precedents do not depend on the target: answer from them rather than lose them,
        // and say what the domain would have added.
        let close = close_names(&domain.0, &domains);
        let next = if close.is_empty() {
            "list_domains names the domains you may read".to_string()
        } else {
            format!("did you mean {}?", close.join(" or "))
        };
        let note = format!(
            "domain {domain} is not in this catalog: proposed from precedents only (no siblings, \
             nothing inherited); to place the column, call again with an existing domain \
             ({next})"
        );
        return Ok((Target::None, Some(note)));
    }
    let similar = match table {
        None => Vec::new(),
        Some(t) => match ctx.source.get_dataset(caller, domain, t) {
            Ok(ds) => return Ok((Target::Existing(ds), placed)),
            Err(CatalogError::DatasetNotFound { tables, .. }) => close_names(&t.0, &tables),
            Err(e) => return Err(e.into()),
        },
    };
    let target = Target::New {
        domain: domain.clone(),
        table: table.cloned(),
        inherited: ctx.source.database_tags(caller, domain)?,
        similar,
    };
    Ok((target, placed))
}

/// The domains `caller` may read whose snapshot has a table named `table` (case as the catalog
/// spells it), sorted: one pass over the snapshot's documents, only for a table named without
/// its domain.
fn domains_with_table(
    snapshot: &crate::index::Snapshot,
    caller: &Caller,
    table: &str,
) -> Vec<String> {
    let holding: BTreeSet<&str> = snapshot
        .docs
        .iter()
        .filter(|d| d.kind == Kind::Column && d.table.as_deref() == Some(table))
        .filter_map(|d| d.domain.as_deref())
        .collect();
    holding
        .into_iter()
        .map(|d| Domain(d.to_string()))
        .filter(|d| caller.may_read(d))
        .map(|d| d.0)
        .collect()
}
