//! `find_precedents`: which existing columns and ontology values match a description?
//! Hybrid retrieval over the snapshot (closed set only), scoped to the caller, with the
//! FIDELITY envelope: resolved scope echoed, total order, snapshot-bound cursor, and on an
//! empty result `match_type: "none"`, a concrete hint and suggestions that were not searched.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::{CacheScope, Caller, Context, ToolError};
use crate::catalog::{Domain, SourceFreshness, Tags};
use crate::index::documents::Kind;
use crate::index::Snapshot;
use crate::limits::{
    DEFAULT_LIMIT, MAX_ALTERNATIVES, MAX_ALTERNATIVE_CHARS, MAX_DESCRIPTION_CHARS, MAX_DOMAINS,
    MAX_LIMIT,
};
use crate::precedent::EntryEvidence;
use crate::retrieval::{self, Cursor, Hit, MatchType, Mode};

pub const DESCRIPTION: &str = "Finds catalog columns that hold a kind of data, and the \
ontology values that fit it. Alone, it answers where such data is or how existing columns \
are classified; when a column is being added (even if asked as how others are tagged), call \
it and suggest_tags in the same turn. One call per column, also for two of one kind (lat and \
long, old and new VIN: two calls). Pass description (what the column holds) and 3-5 \
alternatives (likely column names, the standard term). Returns entries, best first: columns \
(id column:<domain>.<table>.<column>, lf_tags) and ontology values (id \
ontology:<key>=<value>), each with precedent_confidence (0-1: how likely it holds the same \
kind of data). If no column among the first 10 entries (whatever limit you set) reaches 0.5, tell \
the user the catalog has no such column and these are only the nearest; do not copy their \
tags. Nothing found: match_type none, a hint and suggestions (not yet searched): retry with \
them as alternatives. Later: get_dataset before relying on a column's tags.";

/// The JSON Schema description of `description` (find_precedents; suggest_tags says the same
/// through its own text): the words a host needs while writing it.
pub const QUERY_DESCRIPTION: &str = "What the column holds, in English (1-1000 characters): \
translate a non-English request and pass the user's own term as an alternative. State only \
what is in it: not, without, kein and a leading - exclude nothing and there is no exclude \
option, so leave out what it is not (\"IBAN, not stored in clear\" finds clear IBANs; write \
\"hashed IBAN\"); a - inside a word (non-binary, S-2024-1) splits it. Only word* (prefix) and \
\"quoted words\" (phrase) are operators. Acronyms spelled as English stop words (A, AS, AT, BE, \
BY, IF, IN, IS, IT, NO, ON, OR, TO) match by meaning only: spell them out; other acronyms (HIS, \
LEI) match as words. Name the values it holds, negative ones too (no hit, suspected hit): a \
value is not an exclusion, and its other words still match.";

/// The JSON Schema description of `alternatives` (find_precedents and suggest_tags).
pub const ALTERNATIVES_DESCRIPTION: &str =
    "Up to 8 other phrasings (3-5 is typical), each searched like the description: likely \
column names in snake_case, even when the description holds their words (a phrasing that \
spells a column's name lifts that column), the standard term, English words; for a German word \
with ä, ö or ü, also its ae, oe, ue spelling (Pruefung). The same words in another order or \
form add nothing (payee iban or iban_payee next to payee_iban; date_of_birth next to dob, which \
the glossary expands). Specific beats broad (bank info pulls unrelated columns in). Each 1-200 \
characters; the same text as another or as the description (case ignored) refuses the call; [] \
means none.";

#[derive(Debug, Clone, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct Input {
    /// What the column holds (see [`QUERY_DESCRIPTION`], what the schema says).
    #[schemars(description = QUERY_DESCRIPTION, length(min = 1, max = MAX_DESCRIPTION_CHARS))]
    pub description: String,
    /// Other phrasings of what the column holds, each searched as given (see
    /// [`ALTERNATIVES_DESCRIPTION`], what the schema says).
    #[serde(default)]
    #[schemars(description = ALTERNATIVES_DESCRIPTION, length(max = MAX_ALTERNATIVES), inner(length(min = 1, max = MAX_ALTERNATIVE_CHARS)), extend("uniqueItems" = true))]
    pub alternatives: Option<Vec<String>>,
    /// Domains to search (see the schema's description).
    #[serde(default)]
    #[schemars(description = "Domains to search, at most 64 (list_domains names them); omitted: \
every domain you may read. Precedents of a claims column may sit in payments: do not narrow to \
the target's domain.", length(max = MAX_DOMAINS), extend("uniqueItems" = true))]
    pub domains: Option<Vec<Domain>>,
    /// column: catalog columns; ontology_value: the ontology's tag values. Omitted: both.
    #[serde(default)]
    #[schemars(extend("uniqueItems" = true))]
    pub kinds: Option<Vec<Kind>>,
    /// Page size 1-50, default 10.
    #[serde(default)]
    #[schemars(range(min = 1, max = MAX_LIMIT))]
    pub limit: Option<usize>,
    /// next_cursor of the previous page; the other arguments unchanged.
    #[serde(default)]
    pub cursor: Option<String>,
    /// Leave out: hybrid (words and meaning). bm25: words only; dense: meaning only (to compare).
    #[serde(default)]
    pub mode: Option<Mode>,
    /// Whether an identifier is asked for (see [`IDENTIFIER_DESCRIPTION`], what the schema
    /// says); omitted: inferred per phrasing.
    #[serde(default)]
    #[schemars(description = IDENTIFIER_DESCRIPTION)]
    pub identifier: Option<bool>,
}

/// What the schema says of `identifier`.
pub const IDENTIFIER_DESCRIPTION: &str = "About names, not meaning. false: columns whose \
name ends in id, key, no or nr (customer_id, plate_no, mobile_nr) score x0.7; names ending in \
number, code, ref or token never do. true: none does, and nothing else changes; so when such a \
name is likely (an ID, a printed number, who did it) or you are unsure, true; false for what is \
not so named (amounts, dates, flags). Given, it applies to every phrasing; omitted, each phrasing is inferred alone: true if a word is id, nr, key, \
kennung, who, wer, number (claim number: claim_no) or no after its noun (claim no), or ends in \
nummer; not for counts (number of, Anzahl).";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Entry {
    pub id: String,
    pub kind: Kind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub table: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub column: Option<String>,
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub data_type: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub key: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    pub description: Option<String>,
    /// Column entries: effective tags as of the snapshot (validate live with get_dataset).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lf_tags: Option<Tags>,
    pub score: f64,
    pub match_type: MatchType,
    pub bm25_rank: Option<u32>,
    pub dense_rank: Option<u32>,
    /// Cosine similarity to the description, when the dense side found the entry. With
    /// alternatives, `bm25_rank`, `dense_rank` and `similarity` are those of the first phrasing
    /// in `matched_by`. Shown to 3 places (the search uses the value as computed).
    #[serde(serialize_with = "super::shown_to_3_places")]
    pub similarity: Option<f32>,
    /// The phrasings that found this entry, in input order (description first), each with the
    /// entry's rank in that phrasing's own hybrid (or bm25/dense) list.
    pub matched_by: Vec<MatchedBy>,
    /// How often an entry with this evidence was a direct precedent (the same kind of data)
    /// on labelled catalogs, 0-1 (fitted in the `precedent` module). When no column among the
    /// first 10 reaches 0.5, the catalog holds no column of this kind: these are the nearest
    /// entries, not precedents.
    #[schemars(
        description = "How often an entry with this evidence was a direct precedent (the \
same kind of data) on labelled catalogs, 0-1. When no column among the first 10 entries reaches 0.5, \
the catalog holds no column of this kind: these are the nearest entries, not precedents."
    )]
    pub precedent_confidence: f64,
}

/// One phrasing that found an entry, and the entry's rank (1-based) in that phrasing's own list.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct MatchedBy {
    pub phrasing: String,
    pub rank: u32,
}

/// Whether the domains came from the caller or from their authorisation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScopeSource {
    Caller,
    AuthorizedAll,
}

/// What actually ran (rule 11). No credentials.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[schemars(
    description = "What actually ran: the request as it was searched, with the \
snapshot and the settings in effect. No credentials."
)]
pub struct RequestEcho {
    pub description: String,
    /// Your alternatives exactly as searched (trimmed), in input order; empty when none.
    pub alternatives: Vec<String>,
    pub domains: Vec<String>,
    pub scope_source: ScopeSource,
    pub kinds: Vec<Kind>,
    pub limit: usize,
    pub cursor: Option<String>,
    pub mode: Mode,
    pub snapshot_id: String,
    /// The similarity a semantic match must reach: the server's calibrated floor, not an input.
    pub min_similarity: f64,
    /// English terms added for German words and abbreviations of the description and of each
    /// alternative, and the parts of their run-together words (each searched alongside the
    /// words of its own phrasing, at lower weight); empty when none.
    pub glossary_terms: Vec<String>,
    /// Factor applied to the scores of key columns (`customer_no`, `claimId`): 1.0 when the
    /// description asks for an identifier, below 1.0 otherwise.
    pub key_column_weight: f64,
    /// How the phrasings' lists are fused (used only with alternatives).
    pub params: retrieval::PhrasingFusion,
    /// Whether the description's list took an identifier as asked for (key columns not
    /// weighted down), and whether that came from your `identifier` or was inferred.
    pub identifier: bool,
    pub identifier_from: IdentifierFrom,
}

/// Where a search's identifier setting came from: your `identifier`, or inferred from the words.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IdentifierFrom {
    Argument,
    Inferred,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct SnapshotInfo {
    pub id: String,
    pub built_at: String,
    pub source_freshness: SourceFreshness,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Output {
    pub entries: Vec<Entry>,
    /// `none` only when `entries` is empty.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub match_type: Option<String>,
    /// Only when empty: derived from your words, not searched.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub suggestions: Option<Vec<String>>,
    /// Only when empty: what was searched and what to try next.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    pub sort_key: String,
    pub request: RequestEcho,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Entries of this search over all pages.
    pub total: usize,
    pub snapshot: SnapshotInfo,
    #[serde(rename = "ttlMs")]
    pub ttl_ms: u64,
    #[serde(rename = "cacheScope")]
    pub cache_scope: CacheScope,
}

/// Resolves the domains to search: the caller's explicit list (each must exist and be
/// readable), or every snapshot domain the caller may read.
pub fn resolve_domains(
    snapshot: &Snapshot,
    caller: &Caller,
    requested: Option<&[Domain]>,
) -> Result<(Vec<String>, ScopeSource), ToolError> {
    match requested {
        None => Ok((
            snapshot
                .domains
                .iter()
                .filter(|d| caller.may_read(&Domain((*d).clone())))
                .cloned()
                .collect(),
            ScopeSource::AuthorizedAll,
        )),
        Some([]) => Err(ToolError::new(
            "InvalidArguments",
            "domains is an empty list; omit it to search every domain you may read, or name at least one",
        )),
        Some(list) => {
            let mut out: Vec<String> = Vec::new();
            let mut missing_scopes = Vec::new();
            for d in list {
                if !snapshot.domains.contains(&d.0) {
                    return Err(ToolError::new(
                        "DomainNotFound",
                        format!(
                            "domain '{}' is not in this catalog's snapshot; known domains: {}",
                            d.0,
                            snapshot
                                .domains
                                .iter()
                                .filter(|x| caller.may_read(&Domain((*x).clone())))
                                .cloned()
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                    )
                    .with("domain", &d.0));
                }
                if !caller.may_read(d) {
                    missing_scopes.push(Caller::scope_for(d));
                }
                if !out.contains(&d.0) {
                    out.push(d.0.clone());
                }
            }
            if !missing_scopes.is_empty() {
                return Err(ToolError::insufficient_search_scope(missing_scopes));
            }
            out.sort();
            Ok((out, ScopeSource::Caller))
        }
    }
}

fn entry(snapshot: &Snapshot, phrasings: &[&str], hit: &Hit) -> Entry {
    let d = snapshot.doc(hit.ord);
    Entry {
        id: d.id.clone(),
        kind: d.kind,
        domain: d.domain.clone(),
        table: d.table.clone(),
        column: d.column.clone(),
        data_type: d.data_type.clone(),
        key: d.key.clone(),
        value: d.value.clone(),
        description: d.description.clone(),
        lf_tags: d.lf_tags.as_deref().cloned(),
        score: (hit.score * 1e6).round() / 1e6,
        match_type: hit.match_type,
        bm25_rank: hit.bm25_rank,
        dense_rank: hit.dense_rank,
        similarity: hit.similarity.map(|s| (s * 1e4).round() / 1e4),
        matched_by: hit
            .matched_by
            .iter()
            .map(|m| MatchedBy {
                phrasing: phrasings[m.phrasing].to_string(),
                rank: m.rank,
            })
            .collect(),
        precedent_confidence: 0.0,
    }
}

/// A column document's type (empty when the catalog gave none); `None` for an ontology value.
fn column_type(doc: &crate::index::documents::Document) -> Option<&str> {
    (doc.kind == Kind::Column).then(|| doc.data_type.as_deref().unwrap_or(""))
}

/// The evidence of each hit of a page (`rank` from `offset`): the description's and every
/// phrasing's cosine similarity to it, computed from the phrasings' query embeddings (the
/// search's own, answered by the query cache) and the snapshot's vectors.
fn page_evidence(
    snapshot: &Snapshot,
    embedder: &dyn crate::embed::Embedder,
    phrasings: &[&str],
    hits: &[&Hit],
    offset: usize,
    type_share: &dyn Fn(Option<&str>) -> f64,
) -> Result<Vec<EntryEvidence>, ToolError> {
    let texts: Vec<String> = phrasings
        .iter()
        .map(|p| retrieval::dense_query_text(p, &snapshot.expand_query(p)))
        .collect();
    let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
    let vectors = embedder
        .embed_queries(&refs)
        .map_err(|e| ToolError::new("EmbedderUnavailable", format!("{e}; retry")))?;
    let phrasing_words: Vec<Vec<String>> = phrasings
        .iter()
        .map(|p| crate::text::identifier_words(p))
        .collect();
    hits.iter()
        .enumerate()
        .map(|(i, h)| {
            let row = snapshot.dense.row(h.ord)?;
            let name = snapshot
                .doc(h.ord)
                .column
                .as_deref()
                .map(crate::text::identifier_words);
            let sims: Vec<f64> = vectors
                .iter()
                .map(|v| f64::from(crate::index::dense::dot(v, &row)))
                .collect();
            Ok(EntryEvidence {
                description_similarity: sims[0],
                best_similarity: sims.iter().copied().fold(f64::MIN, f64::max),
                phrasings_share: h.matched_by.len() as f64 / phrasings.len() as f64,
                description_lexical: h.bm25_rank.is_some()
                    && h.matched_by.first().is_some_and(|m| m.phrasing == 0),
                rank: offset + i + 1,
                type_share: type_share(column_type(snapshot.doc(h.ord))),
                name_match: name.as_ref().is_some_and(|n| phrasing_words.contains(n)),
                head_match: name
                    .as_ref()
                    .and_then(|n| n.last())
                    .is_some_and(|head| phrasing_words.iter().any(|p| p.contains(head))),
            })
        })
        .collect()
}

/// Refuses an argument over its bound in [`crate::limits`] — before any snapshot or model is
/// needed, so the refusal is the same whatever the server has loaded.
pub fn check_limits(input: &Input) -> Result<(), ToolError> {
    let chars = input.description.chars().count();
    if chars > MAX_DESCRIPTION_CHARS {
        return Err(ToolError::limit_exceeded(
            "description",
            MAX_DESCRIPTION_CHARS,
            chars,
            format!("description has {chars} characters; at most {MAX_DESCRIPTION_CHARS} are accepted — shorten it to what the column holds"),
        ));
    }
    if let Some(limit) = input.limit.filter(|l| *l > MAX_LIMIT) {
        return Err(ToolError::limit_exceeded(
            "limit",
            MAX_LIMIT,
            limit,
            format!("limit {limit} is more than the largest page of {MAX_LIMIT} entries; ask for at most {MAX_LIMIT} and pass next_cursor for the next page"),
        ));
    }
    if let Some(count) = input
        .domains
        .as_ref()
        .map(Vec::len)
        .filter(|n| *n > MAX_DOMAINS)
    {
        return Err(ToolError::limit_exceeded(
            "domains",
            MAX_DOMAINS,
            count,
            format!("domains names {count} domains; at most {MAX_DOMAINS} are accepted — omit it to search every domain you may read"),
        ));
    }
    Ok(())
}

/// The caller's alternatives, trimmed, exactly as they will be searched; `None` and `[]` are
/// none. Refused with `InvalidArguments` naming the item and the limit: more than
/// [`MAX_ALTERNATIVES`], an item empty after trimming or over [`MAX_ALTERNATIVE_CHARS`], or one
/// that repeats the description or an earlier item (case-insensitive). The one check of this
/// argument: `suggest_tags` passes its alternatives here through [`run_excluding`].
pub fn check_alternatives(
    description: &str,
    alternatives: Option<&[String]>,
) -> Result<Vec<String>, ToolError> {
    let given = alternatives.unwrap_or_default();
    let refuse = |index: Option<usize>, message: String| {
        let e = ToolError::new("InvalidArguments", message)
            .with("argument", "alternatives")
            .with("max_items", MAX_ALTERNATIVES)
            .with("max_chars", MAX_ALTERNATIVE_CHARS);
        match index {
            Some(i) => e.with("item", i).with("value", &given[i]),
            None => e.with("got", given.len()),
        }
    };
    if given.len() > MAX_ALTERNATIVES {
        return Err(refuse(
            None,
            format!(
                "alternatives has {} phrasings; at most {MAX_ALTERNATIVES} are accepted — keep the {MAX_ALTERNATIVES} most likely (column names, the standard term, English words)",
                given.len()
            ),
        ));
    }
    let description = description.trim().to_lowercase();
    let mut out: Vec<String> = Vec::with_capacity(given.len());
    for (i, raw) in given.iter().enumerate() {
        let a = raw.trim();
        let chars = a.chars().count();
        if chars == 0 {
            return Err(refuse(
                Some(i),
                format!("alternatives[{i}] is empty after trimming; each alternative is 1-{MAX_ALTERNATIVE_CHARS} characters — drop it or write a phrasing"),
            ));
        }
        if chars > MAX_ALTERNATIVE_CHARS {
            return Err(refuse(
                Some(i),
                format!("alternatives[{i}] has {chars} characters; each alternative is at most {MAX_ALTERNATIVE_CHARS} — shorten it to a column name or a short phrase"),
            ));
        }
        let folded = a.to_lowercase();
        if folded == description {
            return Err(refuse(
                Some(i),
                format!("alternatives[{i}] (\"{a}\") repeats the description (case-insensitive); the description is searched anyway — drop it or give another phrasing"),
            ));
        }
        if let Some(j) = out.iter().position(|b| b.to_lowercase() == folded) {
            return Err(refuse(
                Some(i),
                format!("alternatives[{i}] (\"{a}\") repeats alternatives[{j}] (case-insensitive); each phrasing is searched once — drop one of them"),
            ));
        }
        out.push(a.to_string());
    }
    Ok(out)
}

/// Validates the input and runs the search.
pub fn run(ctx: &Context, caller: &Caller, input: Input) -> Result<Output, ToolError> {
    run_excluding(ctx, caller, input, &|_| false)
}

/// [`run`] with the documents `exclude` names left out of the answer before paging: an
/// internal hook for `govcat eval tags` (a column must not be its own precedent), never
/// reachable from a tool call.
pub fn run_excluding(
    ctx: &Context,
    caller: &Caller,
    input: Input,
    exclude: &dyn Fn(&crate::index::documents::Document) -> bool,
) -> Result<Output, ToolError> {
    run_with_evidence(ctx, caller, input, exclude).map(|(out, _)| out)
}

/// [`run_excluding`], also returning each entry's evidence (what `precedent_confidence` is
/// computed from): `govcat eval precedents` writes it out for the fit.
pub fn run_with_evidence(
    ctx: &Context,
    caller: &Caller,
    input: Input,
    exclude: &dyn Fn(&crate::index::documents::Document) -> bool,
) -> Result<(Output, Vec<EntryEvidence>), ToolError> {
    check_limits(&input)?;
    let alternatives = check_alternatives(&input.description, input.alternatives.as_deref())?;
    let (snapshot, embedder) = ctx.retrieval_parts()?;
    let description = input.description.trim().to_string();
    if description.is_empty() {
        return Err(ToolError::new(
            "InvalidArguments",
            "description is empty; describe what the column holds, e.g. \"contains an EU IBAN\"",
        ));
    }
    let limit = input.limit.unwrap_or(DEFAULT_LIMIT);
    if limit == 0 {
        return Err(ToolError::new(
            "InvalidArguments",
            format!(
                "limit 0 asks for no entries; give 1-{MAX_LIMIT}, or omit it for {DEFAULT_LIMIT}"
            ),
        ));
    }
    let kinds: Vec<Kind> = match &input.kinds {
        None => Kind::ALL.to_vec(),
        Some(k) if k.is_empty() => return Err(ToolError::new(
            "InvalidArguments",
            "kinds is an empty list; omit it for both kinds or name column and/or ontology_value",
        )),
        Some(k) => {
            let mut k = k.clone();
            k.sort();
            k.dedup();
            k
        }
    };
    let mode = input.mode.unwrap_or(Mode::Hybrid);
    let (domains, scope_source) = resolve_domains(&snapshot, caller, input.domains.as_deref())?;
    if domains.is_empty() && kinds.contains(&Kind::Column) {
        // A caller who may read no domain asked for columns: that is an authorisation
        // answer, not an empty result (rule 3).
        let scopes: Vec<String> = snapshot
            .domains
            .iter()
            .map(|d| Caller::scope_for(&Domain(d.clone())))
            .collect();
        return Err(ToolError::new(
            "InsufficientScope",
            format!(
                "you may read no domain of this catalog, so no column can be searched; any one of the scopes {} grants a domain — ask your administrator, or search kinds [ontology_value] only",
                scopes.join(" ")
            ),
        )
        .with("required_scopes", scopes)
        .with("any_of", true));
    }
    let params = ctx.retrieval;
    let query = retrieval::Query {
        description: &description,
        alternatives: &alternatives,
        domains: &domains,
        kinds: &kinds,
        mode,
        identifier: input.identifier,
    };
    let digest = retrieval::request_digest(&query, params.min_similarity);
    let offset = match &input.cursor {
        None => 0,
        Some(c) => {
            let cursor =
                Cursor::decode(c).map_err(|e| ToolError::new("InvalidCursor", e.to_string()))?;
            cursor
                .check(&snapshot.manifest.id, &digest)
                .map_err(|e| ToolError::new("InvalidCursor", e.to_string()))?;
            cursor.offset
        }
    };
    let searched =
        retrieval::search(&snapshot, embedder.as_ref(), &params, &query).map_err(|e| {
            ToolError::new("RetrievalFailed", format!("{e}; retry")).next(
                crate::tools::Step::Index {
                    why: "to rebuild the snapshot if the error persists".into(),
                },
            )
        })?;
    let phrasings = query.phrasings();
    let mut hits = searched.hits;
    hits.retain(|h| !exclude(snapshot.doc(h.ord)));
    let total = hits.len();
    let page_hits: Vec<&Hit> = hits.iter().skip(offset).take(limit).collect();
    let column_types: Vec<Option<&str>> = hits
        .iter()
        .map(|h| column_type(snapshot.doc(h.ord)))
        .filter(Option::is_some)
        .take(crate::precedent::TYPE_SHARE_HITS)
        .collect();
    let type_share = crate::precedent::type_shares(&column_types);
    let evidence = page_evidence(
        &snapshot,
        embedder.as_ref(),
        &phrasings,
        &page_hits,
        offset,
        &type_share,
    )?;
    let page: Vec<Entry> = page_hits
        .iter()
        .zip(&evidence)
        .map(|(h, e)| Entry {
            precedent_confidence: e.confidence(),
            ..entry(&snapshot, &phrasings, h)
        })
        .collect();
    // Saturating: the offset comes from the caller's cursor and may be anything (a cursor near
    // `usize::MAX` overflowed here; found by tests/properties.rs).
    let end = offset.saturating_add(limit);
    let next_cursor = (end < total).then(|| {
        Cursor {
            snapshot: snapshot.manifest.id.clone(),
            offset: end,
            request: digest.clone(),
        }
        .encode()
    });
    let request = RequestEcho {
        description: description.clone(),
        alternatives: alternatives.clone(),
        domains: domains.clone(),
        scope_source,
        kinds: kinds.clone(),
        limit,
        cursor: input.cursor.clone(),
        mode,
        snapshot_id: snapshot.manifest.id.clone(),
        min_similarity: (f64::from(params.min_similarity) * 1000.0).round() / 1000.0,
        glossary_terms: searched.expansion,
        key_column_weight: params.key_weight_for(searched.asks_for_identifier),
        params: params.phrasings,
        identifier: searched.asks_for_identifier,
        identifier_from: match input.identifier {
            Some(_) => IdentifierFrom::Argument,
            None => IdentifierFrom::Inferred,
        },
    };
    let empty = page.is_empty();
    let hint = empty.then(|| {
        let sides = match mode {
            Mode::Hybrid => "whole stemmed words (with their glossary terms and parts), word* prefixes, quoted phrases, and semantic neighbours",
            Mode::Bm25 => "whole stemmed words (with their glossary terms and parts), word* prefixes and quoted phrases",
            Mode::Dense => "semantic neighbours",
        };
        let past_end = if offset > 0 && total > 0 {
            format!(" The search has {total} entries; the cursor's offset {offset} is past them.")
        } else {
            String::new()
        };
        let searched_texts = phrasings
            .iter()
            .map(|p| format!("\"{p}\""))
            .collect::<Vec<_>>()
            .join(" or ");
        format!(
            "No {} in domains [{}] of snapshot {} matched {} by {} (semantic matches need similarity >= {}).{} {}",
            kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>().join(" or "),
            domains.join(", "),
            snapshot.manifest.id,
            searched_texts,
            sides,
            params.min_similarity,
            past_end,
            crate::tools::advice::widen_search(
                &ctx.surface,
                mode == Mode::Hybrid,
                input.kinds.is_some(),
                input.domains.is_some()
            )
        )
    });
    let out = Output {
        match_type: empty.then(|| "none".to_string()),
        suggestions: empty.then(|| retrieval::suggestions_for(&phrasings)),
        hint,
        entries: page,
        sort_key: "score desc, id asc".into(),
        request,
        next_cursor,
        total,
        snapshot: SnapshotInfo {
            id: snapshot.manifest.id.clone(),
            built_at: snapshot.manifest.built_at.clone(),
            source_freshness: snapshot.manifest.source_freshness.clone(),
        },
        ttl_ms: ctx.snapshot_ttl_ms(&snapshot),
        cache_scope: CacheScope::Private,
    };
    Ok((out, evidence))
}
