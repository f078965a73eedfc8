//! The leave-one-out behind `proposal.confidence`: for tagged columns of the served snapshot,
//! what `suggest_tags` proposes with the column itself hidden from its precedents, described
//! as `govcat eval tags` describes it (`name: description`). [`fit_snapshot`] turns that into
//! the [`Map`] `govcat index` stores in the snapshot; `govcat eval tags` runs the same loop
//! ([`leave_one_out`]) and fits on part of the tables to report on the rest.

use std::collections::{BTreeMap, HashMap, HashSet};

use super::suggest_tags::{self, Output};
use super::{Caller, Context, ToolError};
use crate::calibration::{self, Evidence, Map, Observation, Rate};
use crate::catalog::{FieldState, TagLevel};
use crate::index::documents::{Document, Kind};
use crate::index::{Progress, Snapshot};

/// Descriptions embedded per forward pass before their suggestions run (the query cache then
/// answers the search's own embedding).
const EMBED_AHEAD: usize = 32;
/// What [`leave_one_out`] hands on per column: the column, the description it was suggested
/// from, the suggestion and its per-key evidence.
pub type Each<'a> = dyn FnMut(&Document, String, Output, BTreeMap<String, Evidence>) + 'a;

/// Columns whose descriptions are embedded (sorted by length, [`EMBED_AHEAD`] per forward
/// pass) before their suggestions run; below the query cache's capacity
/// (`embed::QUERY_CACHE_CAPACITY`), so none is evicted before its search.
const EMBED_WINDOW: usize = 1024;
/// Threads the suggestions of a batch run on, at most.
const WORKERS: usize = 2;

/// The present, in-ontology value of `key` on a document.
pub fn value_of<'a>(ctx: &Context, doc: &'a Document, key: &str) -> Option<&'a str> {
    doc.lf_tags
        .as_ref()?
        .get(key)?
        .value()
        .filter(|v| ctx.ontology.contains(key, v))
}

/// The description a held-out column is suggested from: `name: description`.
pub fn description_of(doc: &Document) -> String {
    let name = doc.column.as_deref().unwrap_or_default();
    let text = match doc.description.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => format!("{name}: {d}"),
        _ => name.to_string(),
    };
    text.chars()
        .take(crate::limits::MAX_DESCRIPTION_CHARS)
        .collect()
}

/// The alternatives a host would pass for a held-out column, written from what it is: its
/// name as it stands (snake_case or camelCase) and in words. Hosts send 0-8 alternatives, so
/// the leave-one-out mixes the shapes: a third of the columns (by a hash of the id) is
/// suggested from the description alone, the rest with these. Repeats of the description or of
/// each other are left out (the tool refuses them).
pub fn host_alternatives(doc: &Document, description: &str) -> Vec<String> {
    let hash = doc
        .id
        .bytes()
        .fold(0u32, |h, b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
    let Some(name) = doc.column.as_deref().filter(|_| hash % 3 != 0) else {
        return Vec::new();
    };
    let words = crate::text::split_identifier(name).replace('_', " ");
    let words = words
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_lowercase();
    let mut out: Vec<String> = Vec::new();
    for a in [name.to_string(), words] {
        let a = a.trim().to_string();
        let folded = a.to_lowercase();
        let fits = (1..=crate::limits::MAX_ALTERNATIVE_CHARS).contains(&a.chars().count());
        if fits
            && folded != description.trim().to_lowercase()
            && !out.iter().any(|b| b.to_lowercase() == folded)
        {
            out.push(a);
        }
    }
    out
}

/// What a held-out column is suggested from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phrasings {
    /// Its description alone: `govcat eval tags`, whose accuracy figures compare run to run.
    DescriptionOnly,
    /// Its description with [`host_alternatives`]: the evidence the shipped confidence map is
    /// fitted on, shaped like the calls hosts make. On the demo's blind-host calls (2026-12-02,
    /// `fixtures/bench/calls/demo`) the map fitted this way had ECE 0.172 and covered 0.213 of
    /// the judged keys at confidence >= 0.9 (precision 1.000), against 0.178 and 0.197 fitted
    /// on descriptions alone. With them the proposals themselves are less often right
    /// (`eval tags` sensitivity 0.745 vs 0.779 when answered: a column's exact name also finds
    /// same-named columns of other meaning), so they shape only the evidence of the fit.
    Host,
}

/// Column documents with a present ontology value for at least one key.
pub fn tagged_columns<'a>(ctx: &Context, docs: &'a [Document]) -> Vec<&'a Document> {
    docs.iter()
        .filter(|d| d.kind == Kind::Column)
        .filter(|d| {
            ctx.ontology
                .keys
                .iter()
                .any(|k| value_of(ctx, d, &k.key.0).is_some())
        })
        .collect()
}

/// Columns of one name [`conflicted`] compares a column with, at most (a lake's `id` has
/// thousands): the first by id, so the answer does not depend on the order of the catalog.
pub const NEAR_DUPLICATES_COMPARED: usize = 256;

/// A column's name words, the key near-duplicates share.
pub fn name_words(doc: &Document) -> String {
    crate::text::name_key(doc.column.as_deref().unwrap_or_default())
}

/// The (column id, key) pairs of `columns` whose own value of the key is contradicted by a
/// column of the same name words among `tagged` (the same kind of column, as its copies in
/// staging and curated tables are): the catalog holds two answers for it, so the column's own
/// tag is not a truth a proposal can be checked against. The confidence map is fitted without
/// them (issue 43 part 5): with them it learned a ceiling that host calls, judged on the
/// majority tag of their direct precedents, do not have. Names alone, not names and similar
/// descriptions (`eval tags`' conflict report): with descriptions sharing half their words the
/// demo left out 3 of its 2,974 checked keys and the map did not move; by name, 362 (45 % of
/// them proposed right, against 76 % of the rest). `docs/perf/conversation.md` has the runs.
pub fn conflicted(
    ctx: &Context,
    columns: &[&Document],
    tagged: &[&Document],
) -> HashSet<(String, String)> {
    let mut by_name: HashMap<String, Vec<&Document>> = HashMap::new();
    for d in tagged {
        by_name.entry(name_words(d)).or_default().push(d);
    }
    for members in by_name.values_mut() {
        members.sort_by(|a, b| a.id.cmp(&b.id));
        members.truncate(NEAR_DUPLICATES_COMPARED);
    }
    let mut out = HashSet::new();
    for doc in columns {
        let Some(members) = by_name.get(&name_words(doc)) else {
            continue;
        };
        for other in members.iter().filter(|o| o.id != doc.id) {
            for spec in &ctx.ontology.keys {
                let key = spec.key.0.as_str();
                if let (Some(a), Some(b)) = (value_of(ctx, doc, key), value_of(ctx, other, key)) {
                    if a != b {
                        out.insert((doc.id.clone(), key.to_string()));
                    }
                }
            }
        }
    }
    out
}

/// Whether the columns named `column` that the caller may read (its copies in other tables,
/// [`Snapshot::columns_named`], in `readable` domains, `exclude` left out) carry one value of
/// `key`, not two: the serve-time form of [`conflicted`]. The map is fitted without conflicted
/// keys, so the evidence that a phrasing names a precedent ([`Evidence::name_match`]) counts only
/// where the copies agree; where they do not, the catalog holds two answers for that kind of
/// column. The first [`NEAR_DUPLICATES_COMPARED`] copies by id are compared.
pub fn copies_agree(
    ctx: &Context,
    snapshot: &Snapshot,
    column: &str,
    key: &str,
    readable: &[String],
    exclude: &dyn Fn(&Document) -> bool,
) -> bool {
    let mut values = snapshot
        .columns_named(column)
        .iter()
        .map(|&ord| snapshot.doc(ord))
        .filter(|d| {
            !exclude(d)
                && d.domain
                    .as_deref()
                    .is_some_and(|dm| readable.iter().any(|r| r == dm))
        })
        .take(NEAR_DUPLICATES_COMPARED)
        .filter_map(|d| value_of(ctx, d, key));
    let first = values.next();
    values.all(|v| Some(v) == first)
}

/// Runs `suggest_tags` for each of `columns` with the precedents `hidden(column, other)` names
/// left out, and hands each outcome (with its per-key evidence) to `each`, in input order.
/// The descriptions of [`EMBED_WINDOW`] columns are embedded first, sorted by length and
/// [`EMBED_AHEAD`] per forward pass (a pass pads to its longest text); the suggestions then run
/// [`EMBED_AHEAD`] × [`WORKERS`] at a time on that many threads.
pub fn leave_one_out(
    ctx: &Context,
    columns: &[&Document],
    hidden: &(dyn Fn(&Document, &Document) -> bool + Sync),
    phrasings: Phrasings,
    min_confidence: Option<f64>,
    progress: &dyn Progress,
    each: &mut Each,
) -> Result<(), ToolError> {
    let (snapshot, embedder) = ctx.retrieval_parts()?;
    progress.start(
        "suggesting tags, one column held out at a time",
        columns.len() as u64,
    );
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get().min(WORKERS));
    for window in columns.chunks(EMBED_WINDOW) {
        // A forward pass pads to its longest text: embed the window's descriptions sorted by
        // length, then run the suggestions in input order (the query cache answers them).
        let descriptions: Vec<String> = window.iter().map(|d| description_of(d)).collect();
        let mut texts: Vec<String> = descriptions
            .iter()
            .map(|d| {
                let d = d.trim();
                crate::retrieval::dense_query_text(d, &snapshot.expand_query(d))
            })
            .collect();
        texts.sort_by_key(String::len);
        for batch in texts.chunks(EMBED_AHEAD) {
            let refs: Vec<&str> = batch.iter().map(String::as_str).collect();
            embedder
                .embed_queries(&refs)
                .map_err(|e| ToolError::new("EmbedderUnavailable", e.to_string()))?;
        }
        let batch = EMBED_AHEAD * workers;
        for (chunk, descriptions) in window.chunks(batch).zip(descriptions.chunks(batch)) {
            let suggest = |doc: &Document, description: &str| {
                let alternatives = match phrasings {
                    Phrasings::Host => host_alternatives(doc, description),
                    Phrasings::DescriptionOnly => Vec::new(),
                };
                let input = suggest_tags::Input {
                    description: description.to_string(),
                    alternatives: (!alternatives.is_empty()).then_some(alternatives),
                    min_confidence,
                    domain: None,
                    table: None,
                    identifier: None,
                };
                suggest_tags::run_with_evidence(ctx, &Caller::local(), input, &|other| {
                    hidden(doc, other)
                })
            };
            let share = chunk.len().div_ceil(workers);
            let outcomes: Vec<Result<_, ToolError>> = std::thread::scope(|scope| {
                let handles: Vec<_> = chunk
                    .chunks(share)
                    .zip(descriptions.chunks(share))
                    .map(|(docs, texts)| {
                        scope.spawn(move || {
                            docs.iter()
                                .zip(texts)
                                .map(|(doc, text)| suggest(doc, text))
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .flat_map(|h| {
                        h.join()
                            .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                    })
                    .collect()
            });
            for ((doc, description), outcome) in chunk.iter().zip(descriptions).zip(outcomes) {
                let (out, evidence) = outcome?;
                each(doc, description.clone(), out, evidence);
                progress.advance(1);
            }
        }
    }
    progress.finish();
    Ok(())
}

/// The checked proposals of one column: every key with a real value and a precedent
/// proposal (the value with the most precedent weight, before any `min_confidence`).
pub fn observations(
    ctx: &Context,
    doc: &Document,
    out: &Output,
    evidence: &BTreeMap<String, Evidence>,
) -> Vec<Observation> {
    out.keys
        .iter()
        .filter_map(|k| {
            let real = value_of(ctx, doc, &k.key)?;
            let top = k
                .candidates
                .iter()
                .find(|c| !c.precedents.columns.is_empty())?;
            Some(Observation {
                key: k.key.clone(),
                evidence: *evidence.get(&k.key)?,
                correct: top.value == real,
            })
        })
        .collect()
}

/// Per key, how often a table's (or database's) inherited value is the column's own: a table
/// carries an inherited value when one of its columns reports its value as assigned at table
/// or database level; every column of that table with a present value counts, those that
/// override it with another value as wrong.
pub fn inherited_rates(ctx: &Context, docs: &[Document]) -> BTreeMap<String, Rate> {
    let mut tables: BTreeMap<(&str, &str), Vec<&Document>> = BTreeMap::new();
    for d in docs.iter().filter(|d| d.kind == Kind::Column) {
        if let (Some(dom), Some(t)) = (d.domain.as_deref(), d.table.as_deref()) {
            tables.entry((dom, t)).or_default().push(d);
        }
    }
    let mut rates = BTreeMap::new();
    for spec in &ctx.ontology.keys {
        let key = spec.key.0.as_str();
        let mut rate = Rate {
            columns: 0,
            right: 0,
        };
        for columns in tables.values() {
            let inherited = columns.iter().find_map(|c| {
                let t = c.lf_tags.as_ref()?.get(key)?;
                let above = matches!(t.assigned_at, Some(TagLevel::Table | TagLevel::Database));
                (above && t.state == FieldState::Present)
                    .then(|| value_of(ctx, c, key))
                    .flatten()
            });
            let Some(inherited) = inherited else {
                continue;
            };
            for c in columns {
                if let Some(v) = value_of(ctx, c, key) {
                    rate.columns += 1;
                    rate.right += usize::from(v == inherited);
                }
            }
        }
        if rate.columns > 0 {
            rates.insert(key.to_string(), rate);
        }
    }
    rates
}

/// The map `govcat index` stores: the leave-one-out (each column hidden alone) over the
/// snapshot's tagged columns, all of them up to [`calibration::MAX_COLUMNS`], above that a
/// per-domain sample, fitted on all of them but the keys a near-duplicate contradicts
/// ([`conflicted`]).
pub fn fit_snapshot(
    ctx: &Context,
    max_columns: usize,
    progress: &dyn Progress,
) -> Result<Map, ToolError> {
    let (snapshot, _) = ctx.retrieval_parts()?;
    let tagged = tagged_columns(ctx, &snapshot.docs);
    let items: Vec<(&str, &str)> = tagged
        .iter()
        .map(|d| (d.domain.as_deref().unwrap_or_default(), d.id.as_str()))
        .collect();
    let (chosen, sampled) = calibration::sample(&items, max_columns);
    let columns: Vec<&Document> = chosen.iter().map(|&i| tagged[i]).collect();
    let conflicted = conflicted(ctx, &columns, &tagged);
    let mut observations = Vec::new();
    leave_one_out(
        ctx,
        &columns,
        &|held, other| other.id == held.id,
        Phrasings::Host,
        None,
        progress,
        &mut |doc, _, out, evidence| {
            observations.extend(
                self::observations(ctx, doc, &out, &evidence)
                    .into_iter()
                    .filter(|o| !conflicted.contains(&(doc.id.clone(), o.key.clone()))),
            )
        },
    )?;
    Ok(calibration::fit(
        &observations,
        columns.len(),
        sampled,
        inherited_rates(ctx, &snapshot.docs),
    ))
}
