//! `get_dataset`: schema, owner, contract and column tags of one dataset, read live from the
//! source (never from a snapshot), so an assistant can validate what retrieval suggested.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CacheScope, Caller, Context, ToolError};
use crate::catalog::{Column, Contract, DatasetMetadata, Domain, SourceFreshness, TableName};

pub const DESCRIPTION: &str = "Reads one existing table live from the catalog source (the \
search tools answer from a snapshot that can be stale). Call it before anyone acts on a tag. \
Pass domain and table as list_domains or a column id (column:<domain>.<table>.<column>) names \
them. Returns metadata (owner, database, description), the contract (freshness SLA, \
table-level LF-tags) and every column in source order with type, description and effective \
LF-tags (database, then table, then column; the most specific wins). Each tag is {state, \
value}: present (value set), empty_in_source (no value at any level), not_collected (not read) \
or withheld (hidden from you: ask the domain owner for access); only present has a value. A \
table not in the catalog is an error (DatasetNotFound) listing the domain's tables; for a table \
someone is creating, call suggest_tags with its domain and table.";

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Domain name, e.g. `policy`.
    pub domain: Domain,
    /// Table name inside the domain, e.g. `customer`.
    pub table: TableName,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub metadata: DatasetMetadata,
    pub contract: Contract,
    pub columns: Vec<Column>,
    pub source: SourceFreshness,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

pub fn run(ctx: &Context, caller: &Caller, input: Input) -> Result<Output, ToolError> {
    ctx.require_domain(caller, &input.domain)?;
    let dataset = ctx
        .source
        .get_dataset(caller, &input.domain, &input.table)?;
    Ok(Output {
        metadata: dataset.metadata,
        contract: dataset.contract,
        columns: dataset.columns,
        source: ctx.source.freshness(),
        ttl_ms: ctx.source_ttl_ms(),
        cache_scope: CacheScope::Private,
    })
}
