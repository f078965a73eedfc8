//! `list_domains`: which domains exist and who owns them. Exact; only domains the caller may
//! read. Counts exclude tables that could not be read and say how many (rule 14).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CacheScope, Caller, Context, ToolError};
use crate::catalog::{read_domain, Domain, Unreadable};

pub const DESCRIPTION: &str = "List the catalog's domains that you may read, with owner, description, \
account id and dataset/column counts. Exact read of the catalog source, ordered by name (sort_key \
\"name asc\"). Counts exclude tables that could not be read; such an entry carries `counts_excluded` \
with the number and the reason. Domains outside your scopes are not listed; ask for \
catalog:<domain>:read to see one.";

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {}

/// What the counts of an entry leave out.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CountsExcluded {
    /// Tables left out of `dataset_count` and `column_count` because they could not be read.
    pub tables: usize,
    pub unreadable: Vec<Unreadable>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Entry {
    pub name: Domain,
    pub owner: String,
    pub description: String,
    pub account_id: String,
    pub dataset_count: usize,
    pub column_count: usize,
    /// Present only when something was excluded from the counts.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts_excluded: Option<CountsExcluded>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub entries: Vec<Entry>,
    pub sort_key: String,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

pub fn run(ctx: &Context, caller: &Caller, _input: Input) -> Result<Output, ToolError> {
    let mut entries = Vec::new();
    for d in ctx.source.list_domains(caller)? {
        if !caller.may_read(&d.name) {
            continue;
        }
        let (datasets, unreadable) = read_domain(ctx.source.as_ref(), caller, &d.name)?;
        entries.push(Entry {
            dataset_count: datasets.len(),
            column_count: datasets.iter().map(|ds| ds.columns.len()).sum(),
            counts_excluded: (!unreadable.is_empty()).then_some(CountsExcluded {
                tables: unreadable.len(),
                unreadable,
            }),
            name: d.name,
            owner: d.owner,
            description: d.description,
            account_id: d.account_id,
        });
    }
    entries.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Output {
        entries,
        sort_key: "name asc".into(),
        ttl_ms: ctx.source_ttl_ms(),
        cache_scope: CacheScope::Private,
    })
}
