//! A rebuild embeds only what changed: vectors of documents whose embedded text is unchanged
//! since the published snapshot are reused from it (`index::build_reporting`), so scheduled
//! rebuilds cost a catalog read and an index write, not a pass of the model over every column.
//! Built over a private copy of the demo catalog with a deterministic embedder that records
//! every text it is given.

mod common;

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use govcat::catalog::dir::DirSource;
use govcat::embed::{EmbedError, Embedder, HashEmbedder};
use govcat::index::{self, EmbedReport, Manifest, Quiet};

struct Recording {
    inner: HashEmbedder,
    texts: Mutex<Vec<String>>,
}

impl Embedder for Recording {
    fn model_id(&self) -> &str {
        self.inner.model_id()
    }
    fn dimension(&self) -> usize {
        self.inner.dimension()
    }
    fn checksum(&self) -> &str {
        self.inner.checksum()
    }
    fn embed_batch(&self, texts: &[&str]) -> Result<Vec<Vec<f32>>, EmbedError> {
        let mut seen = self.texts.lock().unwrap_or_else(|p| p.into_inner());
        seen.extend(texts.iter().map(|t| t.to_string()));
        self.inner.embed_batch(texts)
    }
}

impl Recording {
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.texts.lock().unwrap_or_else(|p| p.into_inner()))
    }
}

fn build(catalog: &Path, index_dir: &Path, embedder: &Recording) -> (Manifest, EmbedReport) {
    let ontology = common::ontology();
    let source = DirSource::open(catalog, ontology.clone()).expect("catalog copy opens");
    index::build_reporting(index_dir, &ontology, &source, embedder, &Quiet).expect("build")
}

/// [`build`] as `serve --refresh`/`--watch` run it.
fn build_unattended(
    catalog: &Path,
    index_dir: &Path,
    embedder: &Recording,
) -> Result<Manifest, index::IndexError> {
    let ontology = common::ontology();
    let source = DirSource::open(catalog, ontology.clone()).expect("catalog copy opens");
    index::build_unattended(index_dir, &ontology, &source, embedder)
}

fn vectors_of(index_dir: &Path, manifest: &Manifest) -> Vec<u8> {
    std::fs::read(
        index_dir
            .join("snapshots")
            .join(&manifest.id)
            .join("vectors.f32"),
    )
    .expect("vectors.f32")
}

/// A private copy of the demo catalog, an empty index directory and a fresh recording embedder.
struct Workspace {
    _work: tempfile::TempDir,
    catalog: PathBuf,
    index_dir: PathBuf,
    embedder: Recording,
}

fn workspace() -> Workspace {
    let work = tempfile::tempdir().expect("tempdir");
    let (catalog, index_dir) = (work.path().join("catalog"), work.path().join("index"));
    common::copy_dir(&common::catalog_dir(), &catalog);
    Workspace {
        _work: work,
        catalog,
        index_dir,
        embedder: Recording {
            inner: HashEmbedder::new(64),
            texts: Mutex::new(Vec::new()),
        },
    }
}

/// A workspace whose catalog is built and published once, and that build's manifest; the
/// embedder's record of the build is cleared.
fn built_workspace() -> (Workspace, Manifest) {
    let ws = workspace();
    let (first, _) = build(&ws.catalog, &ws.index_dir, &ws.embedder);
    ws.embedder.take();
    (ws, first)
}

fn documents_of(index_dir: &Path, manifest: &Manifest) -> Vec<serde_json::Value> {
    let path = index_dir
        .join("snapshots")
        .join(&manifest.id)
        .join("documents.json");
    serde_json::from_slice(&std::fs::read(path).expect("documents.json")).expect("json")
}

#[test]
fn rebuilding_an_unchanged_catalog_embeds_nothing_and_keeps_every_vector() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder,
    } = workspace();

    let (first, report) = build(&catalog, &index_dir, &embedder);
    let documents = first.counts.documents;
    assert_eq!(
        report,
        EmbedReport {
            embedded: documents,
            reused: 0
        }
    );
    // One text per document, and a second for each column whose table has a description.
    let with_table = documents_of(&index_dir, &first)
        .iter()
        .filter(|d| d["dense_table_text"].is_string())
        .count();
    assert_eq!(with_table, 723, "every demo table has a description");
    assert_eq!(embedder.take().len(), documents + with_table);

    let (second, report) = build(&catalog, &index_dir, &embedder);
    assert_ne!(second.id, first.id, "a new snapshot was published");
    assert_eq!(
        report,
        EmbedReport {
            embedded: 0,
            reused: documents
        }
    );
    assert!(embedder.take().is_empty(), "the model saw no text");
    assert_eq!(
        vectors_of(&index_dir, &second),
        vectors_of(&index_dir, &first)
    );
}

#[test]
fn a_changed_column_description_re_embeds_exactly_that_column() {
    let (
        Workspace {
            _work,
            catalog,
            index_dir,
            embedder,
        },
        first,
    ) = built_workspace();

    edit_policy_customer(&catalog, |table| {
        let iban = table["StorageDescriptor"]["Columns"]
            .as_array_mut()
            .expect("columns")
            .iter_mut()
            .find(|c| c["Name"] == "iban")
            .expect("policy.customer.iban");
        iban["Comment"] = "IBAN of the policyholder's premium account (SEPA direct debit).".into();
    });

    let (second, report) = build(&catalog, &index_dir, &embedder);
    assert_eq!(
        report,
        EmbedReport {
            embedded: 1,
            reused: first.counts.documents - 1
        }
    );
    // The column's own text and its text with the table's description.
    let embedded = embedder.take();
    assert_eq!(embedded.len(), 2);
    assert!(
        embedded.iter().all(|t| t.contains("SEPA direct debit")),
        "{embedded:?}"
    );

    assert_vectors_changed_exactly(&index_dir, &first, &second, |d| {
        d["id"] == "column:policy.customer.iban"
    });
}

/// A column's vector also embeds its table's description: changing the description re-embeds
/// exactly that table's columns (the first sentence is what the model sees), and nothing else.
#[test]
fn a_changed_table_description_re_embeds_exactly_that_tables_columns() {
    let (
        Workspace {
            _work,
            catalog,
            index_dir,
            embedder,
        },
        first,
    ) = built_workspace();

    let mut columns = 0;
    edit_policy_customer(&catalog, |table| {
        columns = table["StorageDescriptor"]["Columns"]
            .as_array()
            .expect("columns")
            .len();
        table["Description"] =
            "Policyholders of the motor and household lines. Loaded nightly.".into();
    });

    let (second, report) = build(&catalog, &index_dir, &embedder);
    assert_eq!(
        report,
        EmbedReport {
            embedded: columns,
            reused: first.counts.documents - columns
        }
    );
    let embedded = embedder.take();
    assert_eq!(embedded.len(), 2 * columns);
    assert_eq!(
        embedded
            .iter()
            .filter(|t| t.contains("Policyholders of the motor and household lines."))
            .count(),
        columns,
        "{embedded:?}"
    );
    assert!(
        !embedded.iter().any(|t| t.contains("Loaded nightly")),
        "only the first sentence is embedded: {embedded:?}"
    );
    let changed = assert_vectors_changed_exactly(&index_dir, &first, &second, |d| {
        d["table"] == "customer" && d["domain"] == "policy"
    });
    assert_eq!(changed, columns);
}

/// Rewrites the recorded Glue table `policy.customer` through `edit` (given its `Table`).
fn edit_policy_customer(catalog: &Path, edit: impl FnOnce(&mut serde_json::Value)) {
    let path = catalog.join("domains/policy/tables/customer/get-table.json");
    let mut get_table: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("json");
    edit(&mut get_table["Table"]);
    std::fs::write(&path, serde_json::to_vec_pretty(&get_table).expect("json")).expect("write");
}

/// Asserts that between the snapshots `first` and `second` exactly the vectors of the
/// documents `changed` picks differ; returns how many those are.
fn assert_vectors_changed_exactly(
    index_dir: &Path,
    first: &Manifest,
    second: &Manifest,
    changed: impl Fn(&serde_json::Value) -> bool,
) -> usize {
    let docs = documents_of(index_dir, second);
    let (before, after) = (vectors_of(index_dir, first), vectors_of(index_dir, second));
    let row = 64 * 4;
    for (i, d) in docs.iter().enumerate() {
        let same = before[i * row..(i + 1) * row] == after[i * row..(i + 1) * row];
        assert_eq!(same, !changed(d), "row {i} ({})", d["id"]);
    }
    docs.iter().filter(|d| changed(d)).count()
}

fn current(index_dir: &Path) -> String {
    index::current_id(index_dir).expect("CURRENT names a snapshot")
}

/// An unattended rebuild (`serve --refresh`/`--watch`) whose catalog read lost more than 10 %
/// of the published columns is a source that answered partially until shown otherwise: not
/// published. `govcat index` (attended) publishes the same smaller catalog.
#[test]
fn an_unattended_rebuild_that_lost_two_domains_is_not_published_and_an_attended_one_is() {
    let (
        Workspace {
            _work,
            catalog,
            index_dir,
            embedder,
        },
        first,
    ) = built_workspace();
    for domain in ["hr", "marketing"] {
        std::fs::remove_dir_all(catalog.join("domains").join(domain)).expect("remove domain");
    }

    let refused = build_unattended(&catalog, &index_dir, &embedder)
        .expect_err("a catalog two domains smaller is refused");
    assert_eq!(refused.kind(), "SnapshotShrunk");
    assert_eq!(
        current(&index_dir),
        first.id,
        "CURRENT still names the first snapshot"
    );

    let (attended, _) = build(&catalog, &index_dir, &embedder);
    match refused {
        index::IndexError::Shrunk {
            published,
            published_columns,
            columns,
        } => {
            assert_eq!(
                (published, published_columns, columns),
                (
                    first.id.clone(),
                    first.counts.columns,
                    attended.counts.columns
                )
            );
        }
        other => panic!("expected Shrunk, got {other}"),
    }
    assert!(attended.counts.columns < first.counts.columns * 9 / 10);
    assert_eq!(current(&index_dir), attended.id);
}

#[test]
fn an_unattended_rebuild_that_lost_one_table_is_published() {
    let (
        Workspace {
            _work,
            catalog,
            index_dir,
            embedder,
        },
        first,
    ) = built_workspace();
    std::fs::remove_dir_all(catalog.join("domains/policy/tables/quote")).expect("remove table");

    let rebuilt =
        build_unattended(&catalog, &index_dir, &embedder).expect("one table fewer is published");
    assert_eq!(current(&index_dir), rebuilt.id);
    assert_eq!(
        (rebuilt.counts.tables, first.counts.tables),
        (first.counts.tables - 1, 72)
    );
}
