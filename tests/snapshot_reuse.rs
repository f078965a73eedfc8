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
            reused: 0,
            from_slices: 0
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
            reused: documents,
            from_slices: 0
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

    describe_iban_anew(&catalog);

    let (second, report) = build(&catalog, &index_dir, &embedder);
    assert_eq!(
        report,
        EmbedReport {
            embedded: 1,
            reused: first.counts.documents - 1,
            from_slices: 0
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
            reused: first.counts.documents - columns,
            from_slices: 0
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

/// Gives `policy.customer.iban` a new description (one that mentions "SEPA direct debit").
fn describe_iban_anew(catalog: &Path) {
    edit_policy_customer(catalog, |table| {
        let iban = table["StorageDescriptor"]["Columns"]
            .as_array_mut()
            .expect("columns")
            .iter_mut()
            .find(|c| c["Name"] == "iban")
            .expect("policy.customer.iban");
        iban["Comment"] = "IBAN of the policyholder's premium account (SEPA direct debit).".into();
    });
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

// A first build spread over machines (`govcat index --slice I/N`, `--slices-from`): slice jobs
// embed disjoint parts of the catalog into slice files; the merge reads them and embeds nothing
// they hold.

const SLICES: usize = 3;

/// Runs the `SLICES` slice jobs of `catalog`, each in an index directory of its own (as
/// separate machines would), and copies their files into `merge_index/slices/`. Returns the
/// reports and the texts each job embedded.
fn run_slice_jobs(
    catalog: &Path,
    merge_index: &Path,
    work: &Path,
) -> Vec<(index::slices::SliceReport, Vec<String>)> {
    let ontology = common::ontology();
    let source = DirSource::open(catalog, ontology.clone()).expect("catalog copy opens");
    let into = merge_index.join(index::slices::SLICES_DIR);
    std::fs::create_dir_all(&into).expect("slices dir");
    (0..SLICES)
        .map(|i| {
            let embedder = Recording {
                inner: HashEmbedder::new(64),
                texts: Mutex::new(Vec::new()),
            };
            let job_index = work.join(format!("job-{i}"));
            let slice = index::slices::Slice {
                index: i,
                of: SLICES,
            };
            let report = index::slices::embed_slice(
                &job_index, &ontology, &source, &embedder, slice, &Quiet,
            )
            .expect("slice job");
            assert_eq!(
                std::fs::read_dir(&job_index)
                    .expect("job index")
                    .flatten()
                    .map(|e| e.file_name().to_string_lossy().to_string())
                    .collect::<Vec<_>>(),
                vec!["slices".to_string()],
                "a slice job builds no snapshot"
            );
            std::fs::copy(&report.file, into.join(slice.file_name())).expect("copy slice");
            (report, embedder.take())
        })
        .collect()
}

fn sorted(mut v: Vec<String>) -> Vec<String> {
    v.sort();
    v
}

#[test]
fn a_build_sliced_three_ways_embeds_each_text_once_and_the_merge_equals_a_single_build() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder,
    } = workspace();
    let single_index = _work.path().join("single");
    let (single, _) = build(&catalog, &single_index, &embedder);
    let single_texts = embedder.take();

    let jobs = run_slice_jobs(&catalog, &index_dir, _work.path());
    let documents = single.counts.documents;
    assert_eq!(
        jobs.iter().map(|(r, _)| r.in_slice).sum::<usize>(),
        documents,
        "every document is in exactly one slice"
    );
    assert!(
        jobs.iter()
            .all(|(r, _)| r.in_slice > 0 && r.documents == documents),
        "{:?}",
        jobs.iter().map(|(r, _)| r.in_slice).collect::<Vec<_>>()
    );
    // Together the jobs embedded what one build embeds, each distinct text once.
    let mut sliced: Vec<String> = jobs.iter().flat_map(|(_, t)| t.clone()).collect();
    sliced.sort();
    let mut distinct = sorted(single_texts.clone());
    distinct.dedup();
    let mut sliced_distinct = sliced.clone();
    sliced_distinct.dedup();
    assert_eq!(sliced_distinct, distinct);

    let model = index::model_info(&embedder);
    let headers =
        index::slices::check_slice_set(&index_dir.join(index::slices::SLICES_DIR), &model)
            .expect("a whole set");
    assert_eq!(
        headers.iter().map(|h| h.slice.index).collect::<Vec<_>>(),
        vec![0, 1, 2]
    );

    let (merged, report) = build(&catalog, &index_dir, &embedder);
    assert_eq!(
        report,
        EmbedReport {
            embedded: 0,
            reused: 0,
            from_slices: documents
        }
    );
    assert_eq!(embedder.take(), Vec::<String>::new());
    assert!(
        vectors_of(&index_dir, &merged) == vectors_of(&single_index, &single),
        "the merged snapshot's vectors differ from a single build's"
    );
}

#[test]
fn a_merge_missing_a_slice_is_refused_by_name_and_a_build_with_it_embeds_exactly_its_texts() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder,
    } = workspace();
    let jobs = run_slice_jobs(&catalog, &index_dir, _work.path());
    let slices = index_dir.join(index::slices::SLICES_DIR);
    let lost = index::slices::Slice {
        index: 1,
        of: SLICES,
    };
    std::fs::remove_file(slices.join(lost.file_name())).expect("remove slice 1");

    let model = index::model_info(&embedder);
    let e = index::slices::check_slice_set(&slices, &model).expect_err("slice 1 is missing");
    assert_eq!(e.kind(), "SliceUnusable");
    assert_eq!(
        e.to_string(),
        format!(
            "{}: slices 1/3 of 3 are missing; run the slice job for each (govcat index --slice 1/3 --slices-to LOCATION), then merge again",
            slices.display()
        )
    );

    // Built anyway (the files copied by hand), the missing slice's texts go through the model.
    let (_, report) = build(&catalog, &index_dir, &embedder);
    let (missing, texts) = &jobs[1];
    assert_eq!(
        report,
        EmbedReport {
            embedded: missing.in_slice,
            reused: 0,
            from_slices: jobs[0].0.in_slice + jobs[2].0.in_slice
        }
    );
    assert_eq!(sorted(embedder.take()), sorted(texts.clone()));
}

#[test]
fn a_column_changed_after_the_slice_jobs_is_embedded_by_the_merge_and_nothing_else() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder,
    } = workspace();
    let jobs = run_slice_jobs(&catalog, &index_dir, _work.path());
    let documents = jobs[0].0.documents;
    describe_iban_anew(&catalog);
    let (_, report) = build(&catalog, &index_dir, &embedder);
    assert_eq!(
        report,
        EmbedReport {
            embedded: 1,
            reused: 0,
            from_slices: documents - 1
        }
    );
    let embedded = embedder.take();
    assert_eq!(embedded.len(), 2);
    assert!(
        embedded.iter().all(|t| t.contains("SEPA direct debit")),
        "{embedded:?}"
    );
}

#[test]
fn an_altered_or_cut_slice_file_fails_the_build_by_name_and_an_intact_one_builds() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder,
    } = workspace();
    run_slice_jobs(&catalog, &index_dir, _work.path());
    let path = index_dir.join(index::slices::SLICES_DIR).join(
        index::slices::Slice {
            index: 2,
            of: SLICES,
        }
        .file_name(),
    );
    let intact = std::fs::read(&path).expect("slice file");
    let ontology = common::ontology();
    let source = DirSource::open(&catalog, ontology.clone()).expect("catalog copy opens");
    let attempt = || index::build_reporting(&index_dir, &ontology, &source, &embedder, &Quiet);

    let mut altered = intact.clone();
    let middle = altered.len() / 2;
    altered[middle] ^= 0x40;
    std::fs::write(&path, &altered).expect("alter");
    let e = attempt().expect_err("an altered slice");
    assert_eq!(e.kind(), "SliceUnusable");
    assert_eq!(
        e.to_string(),
        format!("{}: its checksum does not match its contents (altered or broken in transfer); run the slice job again (govcat index --slice 2/3 --slices-to LOCATION), or delete the file to embed its texts in this build", path.display())
    );
    assert!(index::current_id(&index_dir).is_err(), "nothing published");

    std::fs::write(&path, &intact[..intact.len() - 100]).expect("cut");
    let e = attempt().expect_err("a cut slice");
    assert_eq!(e.kind(), "SliceUnusable");
    assert!(
        e.to_string().contains(&format!(
            "{} bytes where its header promises {} (cut short or appended to)",
            intact.len() - 100,
            intact.len()
        )),
        "{e}"
    );

    std::fs::write(&path, &intact).expect("restore");
    let (_, report) = attempt().expect("the intact set builds");
    assert_eq!(report.embedded, 0);
}

#[test]
fn slices_of_another_model_are_refused_by_the_merge_check() {
    let Workspace {
        _work,
        catalog,
        index_dir,
        embedder: _,
    } = workspace();
    run_slice_jobs(&catalog, &index_dir, _work.path());
    let other = HashEmbedder::new(32);
    let e = index::slices::check_slice_set(
        &index_dir.join(index::slices::SLICES_DIR),
        &index::model_info(&other),
    )
    .expect_err("another model");
    assert_eq!(e.kind(), "SliceUnusable");
    assert!(
        e.to_string()
            .contains("run every slice job with the same govcat and model as the merge"),
        "{e}"
    );
}

#[test]
fn a_slice_is_i_of_n_with_i_below_n() {
    use index::slices::Slice;
    assert_eq!(Slice::parse("3/16"), Ok(Slice { index: 3, of: 16 }));
    assert_eq!(Slice::parse("0/1"), Ok(Slice { index: 0, of: 1 }));
    for bad in ["16/16", "3", "a/4", "1/0", "-1/4", "0/5000"] {
        let e = Slice::parse(bad).expect_err(bad);
        assert!(e.contains("write I/N with 0 <= I < N"), "{bad}: {e}");
    }
}
