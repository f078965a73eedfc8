//! `govcat eval tags`: leave-one-out tag suggestion over the catalog's own tagged columns, no
//! labels needed. Each column with a present tag is described by its own name and
//! description, `suggest_tags` runs with that column (or its whole table) excluded from the
//! precedents, and the proposal is compared with the column's real tags — next to two
//! baselines of the same run: the key's most common value, and the tag of the column whose
//! name shares the most words. Also lists precedent conflicts: near-identical columns tagged
//! differently, which is what a governance team wants to fix.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde::Serialize;

use super::Progress;
use crate::index::documents::{Document, Kind};
use crate::text::{split_identifier, words};
use crate::tools::{suggest_tags, Caller, Context, ToolError};

/// What a held-out column hides from the precedents.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "snake_case")]
pub enum Exclude {
    /// The column itself.
    Column,
    /// Every column of its table (no sibling can give the answer away).
    Table,
}

/// Columns whose descriptions share at least this share of words (Jaccard) count as
/// near-identical when their names are equal.
pub const CONFLICT_MIN_JACCARD: f64 = 0.5;
/// Label of "no answer" in the confusion tables.
pub const NO_ANSWER: &str = "(no answer)";

/// Accuracy figures of one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KeyReport {
    /// Held-out columns with a present value for this key.
    pub columns: usize,
    /// Share whose proposal equals the real value (no answer counts as wrong).
    #[serde(rename = "accuracy@1")]
    pub accuracy_at_1: f64,
    /// Share that got a proposal at all.
    pub coverage: f64,
    /// Correct proposals / proposals (`null` when none was made).
    pub accuracy_when_answered: Option<f64>,
    /// Accuracy of always answering the key's most common value among the other columns.
    pub baseline_majority: f64,
    /// Accuracy of the value of the other column whose name shares the most words (majority
    /// among those tied; the most common value when no name shares a word).
    pub baseline_name_overlap: f64,
    /// Real value → proposed value (or `(no answer)`) → columns.
    pub confusion: BTreeMap<String, BTreeMap<String, usize>>,
}

/// Near-identical columns (same name words, descriptions sharing most words) tagged
/// differently for one key.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Conflict {
    pub key: String,
    /// The shared name words.
    pub name: String,
    /// Value → the column ids carrying it.
    pub values: BTreeMap<String, Vec<String>>,
}

/// What ran, echoed (rule 11).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagsRequest {
    pub exclude: Exclude,
    pub description_of_a_column: &'static str,
    pub snapshot_id: String,
    pub ontology_version: String,
    pub keys: Vec<String>,
    /// The retrieval parameters the suggestions ran with (defaults plus `--param`).
    pub params: crate::retrieval::Params,
    pub definitions: BTreeMap<&'static str, &'static str>,
}

/// One held-out column's outcome.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ColumnOutcome {
    pub id: String,
    pub description: String,
    /// Key → (real, proposed or `null`).
    pub keys: BTreeMap<String, (String, Option<String>)>,
}

/// The result of `govcat eval tags`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TagsReport {
    pub keys: BTreeMap<String, KeyReport>,
    pub conflicts: Vec<Conflict>,
    /// Columns with at least one present tag (the held-out set).
    pub columns: usize,
    /// Columns with no present tag, not evaluated.
    pub untagged_columns: usize,
    pub per_column: Vec<ColumnOutcome>,
    pub request: TagsRequest,
    pub wall_seconds: f64,
}

fn round4(x: f64) -> f64 {
    (x * 10_000.0).round() / 10_000.0
}

fn share(n: usize, of: usize) -> f64 {
    if of == 0 {
        0.0
    } else {
        round4(n as f64 / of as f64)
    }
}

/// The present, in-ontology value of `key` on a document.
fn value_of<'a>(ctx: &Context, doc: &'a Document, key: &str) -> Option<&'a str> {
    doc.lf_tags
        .as_ref()?
        .get(key)?
        .value()
        .filter(|v| ctx.ontology.contains(key, v))
}

/// The words of a column name: `customerBirthDate` → {birth, customer, date}.
fn name_words(doc: &Document) -> BTreeSet<String> {
    words(&split_identifier(doc.column.as_deref().unwrap_or_default()))
        .into_iter()
        .collect()
}

/// The most common value of `counts`, ties by value name; `None` when empty.
fn majority(counts: &BTreeMap<&str, usize>) -> Option<String> {
    counts
        .iter()
        .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
        .map(|(v, _)| v.to_string())
}

/// The description a held-out column is suggested from: `name: description`.
pub fn description_of(doc: &Document) -> String {
    let name = doc.column.as_deref().unwrap_or_default();
    match doc.description.as_deref().map(str::trim) {
        Some(d) if !d.is_empty() => format!("{name}: {d}"),
        _ => name.to_string(),
    }
}

fn hidden(exclude: Exclude, held: &Document, other: &Document) -> bool {
    match exclude {
        Exclude::Column => other.id == held.id,
        Exclude::Table => other.domain == held.domain && other.table == held.table,
    }
}

/// Runs the leave-one-out evaluation on the context's snapshot.
pub fn run(
    ctx: &Context,
    exclude: Exclude,
    progress: &dyn Progress,
) -> Result<TagsReport, ToolError> {
    let started = std::time::Instant::now();
    let (snapshot, _) = ctx.retrieval_parts()?;
    let keys: Vec<String> = ctx.ontology.keys.iter().map(|k| k.key.0.clone()).collect();
    let columns: Vec<&Document> = snapshot
        .docs
        .iter()
        .filter(|d| d.kind == Kind::Column)
        .collect();
    let held: Vec<&Document> = columns
        .iter()
        .copied()
        .filter(|d| keys.iter().any(|k| value_of(ctx, d, k).is_some()))
        .collect();
    if held.is_empty() {
        return Err(ToolError::new(
            "NothingToEvaluate",
            format!(
                "no column of snapshot {} carries a present tag of ontology {} (keys {}), so no suggestion can be checked; tag some columns, or check --ontology matches the catalog",
                snapshot.manifest.id,
                ctx.ontology.version,
                keys.join(", ")
            ),
        )
        .next(crate::tools::Step::Index {
            why: "to rebuild the snapshot if the catalog changed since it was built".into(),
        }));
    }
    let names: Vec<BTreeSet<String>> = columns.iter().map(|d| name_words(d)).collect();
    let caller = Caller::local();
    #[derive(Default)]
    struct Tally {
        columns: usize,
        correct: usize,
        answered: usize,
        majority: usize,
        overlap: usize,
        confusion: BTreeMap<String, BTreeMap<String, usize>>,
    }
    let mut tallies: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut per_column = Vec::with_capacity(held.len());
    progress.start(
        "suggesting tags, one column held out at a time",
        held.len() as u64,
    );
    for doc in &held {
        let description = description_of(doc);
        let input = suggest_tags::Input {
            description: description
                .chars()
                .take(crate::limits::MAX_DESCRIPTION_CHARS)
                .collect(),
            alternatives: None,
            domain: None,
            table: None,
        };
        let out =
            suggest_tags::run_excluding(ctx, &caller, input, &|other| hidden(exclude, doc, other))?;
        let mine = name_words(doc);
        let mut outcome = BTreeMap::new();
        for key in &keys {
            let Some(real) = value_of(ctx, doc, key) else {
                continue;
            };
            let proposed = out.proposal.tags.get(key.as_str()).cloned();
            // Both baselines see the same columns the suggestion may see.
            let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
            let mut best = 0usize;
            let mut best_counts: BTreeMap<&str, usize> = BTreeMap::new();
            for (other, other_names) in columns.iter().zip(&names) {
                if hidden(exclude, doc, other) {
                    continue;
                }
                let Some(v) = value_of(ctx, other, key) else {
                    continue;
                };
                *counts.entry(v).or_default() += 1;
                let shared = mine.intersection(other_names).count();
                if shared > best {
                    best = shared;
                    best_counts.clear();
                }
                if shared == best && shared > 0 {
                    *best_counts.entry(v).or_default() += 1;
                }
            }
            let majority_value = majority(&counts);
            let overlap_value = if best > 0 {
                majority(&best_counts)
            } else {
                majority_value.clone()
            };
            let t = tallies.entry(key.as_str()).or_default();
            t.columns += 1;
            t.correct += usize::from(proposed.as_deref() == Some(real));
            t.answered += usize::from(proposed.is_some());
            t.majority += usize::from(majority_value.as_deref() == Some(real));
            t.overlap += usize::from(overlap_value.as_deref() == Some(real));
            *t.confusion
                .entry(real.to_string())
                .or_default()
                .entry(proposed.clone().unwrap_or_else(|| NO_ANSWER.to_string()))
                .or_default() += 1;
            outcome.insert(key.clone(), (real.to_string(), proposed));
        }
        per_column.push(ColumnOutcome {
            id: doc.id.clone(),
            description,
            keys: outcome,
        });
        progress.advance(1);
    }
    progress.finish();
    let report_keys = tallies
        .into_iter()
        .map(|(key, t)| {
            (
                key.to_string(),
                KeyReport {
                    columns: t.columns,
                    accuracy_at_1: share(t.correct, t.columns),
                    coverage: share(t.answered, t.columns),
                    accuracy_when_answered: (t.answered > 0).then(|| share(t.correct, t.answered)),
                    baseline_majority: share(t.majority, t.columns),
                    baseline_name_overlap: share(t.overlap, t.columns),
                    confusion: t.confusion,
                },
            )
        })
        .collect();
    Ok(TagsReport {
        keys: report_keys,
        conflicts: conflicts(ctx, &columns, &keys),
        columns: held.len(),
        untagged_columns: columns.len() - held.len(),
        per_column,
        request: TagsRequest {
            exclude,
            description_of_a_column: "<column name>: <column description>",
            snapshot_id: snapshot.manifest.id.clone(),
            ontology_version: ctx.ontology.version.clone(),
            keys,
            params: ctx.retrieval,
            definitions: BTreeMap::from([
                ("accuracy@1", "held-out columns whose suggest_tags proposal equals the real value / held-out columns with a present value for the key"),
                ("coverage", "held-out columns that got a proposal for the key / held-out columns with a present value"),
                ("accuracy_when_answered", "correct proposals / proposals"),
                ("baseline_majority", "accuracy of always proposing the key's most common value among the columns the suggestion may see"),
                ("baseline_name_overlap", "accuracy of proposing the value of the visible column whose name shares the most words (majority among ties; the most common value when none shares a word)"),
                ("conflicts", "columns with the same name words whose descriptions share at least half their words (Jaccard >= 0.5), tagged with different values of a key"),
            ]),
        },
        wall_seconds: (started.elapsed().as_secs_f64() * 10.0).round() / 10.0,
    })
}

fn jaccard(a: &BTreeSet<String>, b: &BTreeSet<String>) -> f64 {
    let union = a.union(b).count();
    if union == 0 {
        1.0
    } else {
        a.intersection(b).count() as f64 / union as f64
    }
}

/// Groups of near-identical columns (equal name words, descriptions with Jaccard ≥
/// [`CONFLICT_MIN_JACCARD`], linked transitively) whose present values of a key differ.
/// Ordered by group size desc, then key, then name.
fn conflicts(ctx: &Context, columns: &[&Document], keys: &[String]) -> Vec<Conflict> {
    let mut by_name: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, d) in columns.iter().enumerate() {
        let name = words(&split_identifier(d.column.as_deref().unwrap_or_default())).join(" ");
        by_name.entry(name).or_default().push(i);
    }
    let described: Vec<BTreeSet<String>> = columns
        .iter()
        .map(|d| {
            words(d.description.as_deref().unwrap_or_default())
                .into_iter()
                .collect()
        })
        .collect();
    let mut out = Vec::new();
    for (name, members) in by_name {
        if members.len() < 2 {
            continue;
        }
        // Union-find over the members linked by similar descriptions.
        let mut parent: Vec<usize> = (0..members.len()).collect();
        fn root(p: &mut [usize], mut i: usize) -> usize {
            while p[i] != i {
                p[i] = p[p[i]];
                i = p[i];
            }
            i
        }
        for a in 0..members.len() {
            for b in a + 1..members.len() {
                if jaccard(&described[members[a]], &described[members[b]]) >= CONFLICT_MIN_JACCARD {
                    let (ra, rb) = (root(&mut parent, a), root(&mut parent, b));
                    parent[ra] = rb;
                }
            }
        }
        let mut groups: BTreeMap<usize, Vec<usize>> = BTreeMap::new();
        for (a, &member) in members.iter().enumerate() {
            let r = root(&mut parent, a);
            groups.entry(r).or_default().push(member);
        }
        for group in groups.values().filter(|g| g.len() > 1) {
            for key in keys {
                let mut values: BTreeMap<String, Vec<String>> = BTreeMap::new();
                for &i in group {
                    if let Some(v) = value_of(ctx, columns[i], key) {
                        values
                            .entry(v.to_string())
                            .or_default()
                            .push(columns[i].id.clone());
                    }
                }
                if values.len() > 1 {
                    for ids in values.values_mut() {
                        ids.sort();
                    }
                    out.push(Conflict {
                        key: key.clone(),
                        name: name.clone(),
                        values,
                    });
                }
            }
        }
    }
    let size = |c: &Conflict| c.values.values().map(Vec::len).sum::<usize>();
    out.sort_by(|a, b| {
        size(b)
            .cmp(&size(a))
            .then_with(|| a.key.cmp(&b.key))
            .then_with(|| a.name.cmp(&b.name))
            .then_with(|| a.values.cmp(&b.values))
    });
    out
}
