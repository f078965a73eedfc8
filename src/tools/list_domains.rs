//! `list_domains`: which domains exist and who owns them. Exact; only domains the caller may
//! read. Counts exclude tables that could not be read and say how many (rule 14).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CacheScope, Caller, Context, ToolError};
use crate::catalog::{read_domain, Domain, Unreadable};

pub const DESCRIPTION: &str = "Lists the catalog's domains you may read, by name, each with \
owner, description, account id and dataset and column counts. Call it to learn the names to \
pass as domain or domains to the other tools, or who owns a domain. Counts leave out tables \
that could not be read (counts_excluded says how many and why). A domain outside your scopes \
is not listed (catalog:<domain>:read grants it); when your scopes grant none, entries is empty \
and note says so. With include_ontology true it also returns the ontology: every tag key with \
its allowed values, for hosts that cannot read resources; with include_glossary true, the \
abbreviations and German words searches expand. Next: find_precedents or get_dataset in a \
domain.";

/// What the schema says of `include_ontology`.
pub const INCLUDE_ONTOLOGY_DESCRIPTION: &str =
    "true: also return ontology, every tag key with its allowed values. Default false.";

#[derive(Debug, Clone, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// Whether the answer also lists the ontology (see [`INCLUDE_ONTOLOGY_DESCRIPTION`]).
    #[schemars(description = INCLUDE_ONTOLOGY_DESCRIPTION)]
    #[serde(default)]
    pub include_ontology: Option<bool>,
    /// Whether the answer also lists the glossary (see [`INCLUDE_GLOSSARY_DESCRIPTION`]).
    #[schemars(description = INCLUDE_GLOSSARY_DESCRIPTION)]
    #[serde(default)]
    pub include_glossary: Option<bool>,
}

/// What the schema says of `include_glossary`.
pub const INCLUDE_GLOSSARY_DESCRIPTION: &str = "true: also return glossary, each abbreviation \
(dob) and German word (folded: hohe for Höhe) searches expand, with its English words. \
Default false.";

/// What find_precedents and suggest_tags expand a search with, before any search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct GlossaryTerms {
    /// Abbreviation → English words (`dob` → `date of birth`).
    pub abbreviations: std::collections::BTreeMap<String, String>,
    /// German word, folded as the search folds it → English terms (`geburtsdatum` →
    /// `birth date`).
    pub german: std::collections::BTreeMap<String, String>,
}

/// One tag key and its allowed values, in the ontology's order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct KeyValues {
    pub key: String,
    pub description: String,
    pub values: Vec<String>,
}

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
    /// Only when `entries` is empty because your scopes grant none of the catalog's domains:
    /// says so, with the scopes that would (an empty list here is never an empty catalog).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Only with include_ontology: the tag keys and their allowed values.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ontology: Option<Vec<KeyValues>>,
    /// Only with include_glossary: the served snapshot's abbreviations and German words.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub glossary: Option<GlossaryTerms>,
    pub sort_key: String,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

pub fn run(ctx: &Context, caller: &Caller, input: Input) -> Result<Output, ToolError> {
    let mut entries = Vec::new();
    let mut hidden = Vec::new();
    for d in ctx.source.list_domains(caller)? {
        if !caller.may_read(&d.name) {
            hidden.push(Caller::scope_for(&d.name));
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
    let note = (entries.is_empty() && !hidden.is_empty()).then(|| {
        format!(
            "the catalog has {} domains and your scopes grant none of them, so none is listed; \
             any of the scopes {} grants one (over stdio: unset GOVCAT_SCOPES to read every \
             domain, or list the scopes in it; over HTTP: ask your administrator for a token with them)",
            hidden.len(),
            hidden.join(" ")
        )
    });
    let ontology = input.include_ontology.unwrap_or(false).then(|| {
        ctx.ontology
            .keys
            .iter()
            .map(|k| KeyValues {
                key: k.key.0.clone(),
                description: k.description.clone(),
                values: k.values.iter().map(|v| v.value.0.clone()).collect(),
            })
            .collect()
    });
    let glossary = match input.include_glossary {
        Some(true) => {
            let snapshot = ctx.snapshot()?;
            Some(GlossaryTerms {
                abbreviations: snapshot.glossary.abbreviation_terms(),
                german: snapshot.glossary.german_terms(),
            })
        }
        _ => None,
    };
    Ok(Output {
        entries,
        note,
        ontology,
        glossary,
        sort_key: "name asc".into(),
        ttl_ms: ctx.source_ttl_ms(),
        cache_scope: CacheScope::Private,
    })
}
