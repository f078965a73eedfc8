//! `check_grant_expression`: would this role's LF-tag grant expression reach this dataset?
//! Exact evaluation against each column's effective tags: AND across a grant's clauses, OR
//! within a clause's values, OR across the role's grants in the domain's catalog. Tags the
//! reader cannot see make a column `undetermined`, never reached or denied by guess.
//! There is no per-user grant listing here, by design.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::advice::Step;
use super::{CacheScope, Caller, Context, ToolError};
use crate::catalog::boundary::Clause;
use crate::catalog::{Column, Domain, FieldState, TableName, TagState};

pub const DESCRIPTION: &str = "Says whether a role's Lake Formation LF-tag grants reach a \
dataset's columns. Call it when someone asks whether a role can read a dataset or which of its \
columns it reaches. Pass role, domain and table as the catalog names them. A column is reached \
when every clause of one of the role's grants holds (AND across keys, OR within a key's \
values) on its effective tags. Returns verdict: reaches (some column reached), does_not_reach \
(every column denied) or undetermined (none reached, some not evaluable because their tags are \
withheld or not collected; reaches is then null): tell the user which, and never report \
undetermined as denied. Also, in dataset order, the reached columns, the denied ones with the \
failing clause of each grant and the tag found (or that the role has no grant in the domain), \
and the undetermined ones with their keys. An unknown role or dataset is an error listing the \
known names. It never says which users hold a role.";

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Role name as listed in the catalog's roles, e.g. `risk-actuary`.
    pub role: String,
    pub domain: Domain,
    pub table: TableName,
}

/// One clause that did not hold, with the tag the column carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FailedClause {
    pub grant: usize,
    pub key: String,
    pub allowed: Vec<String>,
    pub found: TagState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Denied {
    pub column: String,
    /// Why, in words: the failing clause of each grant, or that the role holds no LF-tag grant
    /// in the domain's catalog. Never empty.
    pub reason: String,
    pub failed: Vec<FailedClause>,
}

/// The answer in one word: `reaches` (a column is reached), `does_not_reach` (every column is
/// denied), `undetermined` (none is reached and some cannot be evaluated: their tags are
/// withheld or not collected).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum GrantVerdict {
    Reaches,
    DoesNotReach,
    Undetermined,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Undetermined {
    pub column: String,
    /// Keys whose state (withheld / not_collected) prevents evaluation.
    pub keys: Vec<String>,
    pub state: FieldState,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Grant {
    pub catalog_id: String,
    pub resource_type: String,
    pub expression: Vec<Clause>,
    pub permissions: Vec<String>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub role: String,
    pub domain: Domain,
    pub table: TableName,
    pub verdict: GrantVerdict,
    /// `true` when a column is reached, `false` when every column is denied, `null` when the
    /// verdict is undetermined.
    pub reaches: Option<bool>,
    /// The role's LF-tag grants in this domain's catalog, numbered from 0 in `failed[].grant`.
    pub grants: Vec<Grant>,
    pub reached: Vec<String>,
    pub denied: Vec<Denied>,
    pub undetermined: Vec<Undetermined>,
    /// Grants on named resources (not LF-tag policies), which this tool does not evaluate.
    pub named_resource_grants_not_evaluated: usize,
    pub sort_key: String,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

/// What one column's evaluation found. Public for the fuzz targets only.
#[doc(hidden)]
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Reached,
    Denied(Vec<FailedClause>),
    Undetermined(Vec<String>, FieldState),
}

/// Evaluates a role's grants against one column. Public for the fuzz targets only.
#[doc(hidden)]
pub fn evaluate(column: &Column, grants: &[Grant]) -> Verdict {
    let mut failed = Vec::new();
    let mut unknown: Option<(Vec<String>, FieldState)> = None;
    for (i, grant) in grants.iter().enumerate() {
        let mut grant_failed = false;
        let mut grant_unknown = Vec::new();
        let mut unknown_state = FieldState::NotCollected;
        for clause in &grant.expression {
            let found = column
                .lf_tags
                .get(&clause.key)
                .cloned()
                .unwrap_or(TagState::absent(FieldState::EmptyInSource));
            match found.state {
                FieldState::Present | FieldState::EmptyInSource => {
                    let ok = found
                        .value()
                        .is_some_and(|v| clause.values.iter().any(|a| a == v));
                    if !ok {
                        grant_failed = true;
                        failed.push(FailedClause {
                            grant: i,
                            key: clause.key.clone(),
                            allowed: clause.values.clone(),
                            found,
                        });
                    }
                }
                state => {
                    unknown_state = state;
                    grant_unknown.push(clause.key.clone());
                }
            }
        }
        if !grant_failed && grant_unknown.is_empty() {
            return Verdict::Reached;
        }
        if !grant_failed && unknown.is_none() {
            unknown = Some((grant_unknown, unknown_state));
        }
    }
    match unknown {
        Some((keys, state)) => Verdict::Undetermined(keys, state),
        None => Verdict::Denied(failed),
    }
}

pub fn run(ctx: &Context, caller: &Caller, input: Input) -> Result<Output, ToolError> {
    ctx.require_domain(caller, &input.domain)?;
    let role = ctx.source.role_grants(caller, &input.role)?;
    let domains = ctx.source.list_domains(caller)?;
    let readable: Vec<String> = domains
        .iter()
        .filter(|d| caller.may_read(&d.name))
        .map(|d| d.name.0.clone())
        .collect();
    let domain = domains
        .into_iter()
        .find(|d| d.name == input.domain)
        .ok_or_else(|| {
            ToolError::new(
                "DomainNotFound",
                format!(
                    "domain '{}' is not in this catalog; the domains you may read: {}",
                    input.domain,
                    readable.join(", ")
                ),
            )
            .with("domain", &input.domain)
            .with("domains", &readable)
            .next(Step::ListDomains)
        })?;
    let dataset = ctx
        .source
        .get_dataset(caller, &input.domain, &input.table)?;
    let grants: Vec<Grant> = role
        .grants
        .iter()
        .filter(|g| g.catalog_id == domain.account_id)
        .map(|g| Grant {
            catalog_id: g.catalog_id.clone(),
            resource_type: g.resource_type.clone(),
            expression: g.expression.clone(),
            permissions: g.permissions.clone(),
        })
        .collect();
    let mut reached = Vec::new();
    let mut denied = Vec::new();
    let mut undetermined = Vec::new();
    for column in &dataset.columns {
        match evaluate(column, &grants) {
            Verdict::Reached => reached.push(column.name.clone()),
            Verdict::Denied(failed) => denied.push(Denied {
                column: column.name.clone(),
                reason: denial_reason(&failed, &role.role, &domain),
                failed,
            }),
            Verdict::Undetermined(keys, state) => undetermined.push(Undetermined {
                column: column.name.clone(),
                keys,
                state,
            }),
        }
    }
    let verdict = if !reached.is_empty() {
        GrantVerdict::Reaches
    } else if !undetermined.is_empty() {
        GrantVerdict::Undetermined
    } else {
        GrantVerdict::DoesNotReach
    };
    Ok(Output {
        role: role.role,
        domain: input.domain,
        table: input.table,
        verdict,
        reaches: match verdict {
            GrantVerdict::Reaches => Some(true),
            GrantVerdict::DoesNotReach => Some(false),
            GrantVerdict::Undetermined => None,
        },
        grants,
        reached,
        denied,
        undetermined,
        named_resource_grants_not_evaluated: role.named_resource_grants,
        sort_key: "dataset column order".into(),
        ttl_ms: ctx.source_ttl_ms(),
        cache_scope: CacheScope::Private,
    })
}

/// A denied column's reason in words: each failing clause, or no grant at all.
fn denial_reason(
    failed: &[FailedClause],
    role: &str,
    domain: &crate::catalog::DomainInfo,
) -> String {
    if failed.is_empty() {
        return format!(
            "role {role} holds no LF-tag grant in domain {}'s catalog (account {})",
            domain.name, domain.account_id
        );
    }
    failed
        .iter()
        .map(|f| {
            let found = match f.found.value() {
                Some(v) => format!("is {v}"),
                None => format!("is {}", f.found.state.as_str()),
            };
            format!(
                "grant {}: {} {found}, the grant allows {}",
                f.grant,
                f.key,
                f.allowed.join(", ")
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}
