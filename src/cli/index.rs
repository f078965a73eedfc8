//! `govcat index [--publish LOCATION --keep N]`: build the snapshot, then (with `--publish`)
//! upload it through [`crate::sync::publish`].

use std::process::ExitCode;

use serde_json::Value;

use super::{Bar, Unit};
use crate::app::{context, load_embedder, print_json, report_error, Options};
use crate::tools::ToolError;

/// `govcat index` options.
#[derive(Debug, Clone, clap::Args)]
pub struct IndexArgs {
    /// After the local snapshot is complete, upload it to s3://BUCKET/PREFIX (or a directory,
    /// e.g. a shared volume): its files under PREFIX/snapshots/<id>/, then PREFIX/CURRENT last,
    /// so a replica (govcat serve --follow) never sees a CURRENT whose snapshot is incomplete.
    #[arg(long, value_name = "S3_URL_OR_DIR")]
    pub publish: Option<String>,
    /// With --publish: published snapshots kept under the prefix (the newest N; the one
    /// CURRENT names is never deleted).
    #[arg(long, value_name = "N", default_value_t = crate::sync::DEFAULT_KEEP,
          value_parser = parse_keep, requires = "publish")]
    pub keep: usize,
    /// S3 endpoint for --publish (an S3-compatible store or an emulator); requests then use
    /// path-style addressing. Credentials and region come from the default AWS chain.
    #[arg(long, value_name = "URL", env = "AWS_ENDPOINT_URL")]
    pub s3_endpoint: Option<String>,
    /// A first build spread over machines: embed only slice I of N of the catalog's texts
    /// (each text's slice is fixed by a hash of it, so every job may read the catalog at its
    /// own time) into --index/slices/slice-I-of-N.vec, upload it with --slices-to, and build
    /// no snapshot. Run one job per I (an AWS Batch array job: "$AWS_BATCH_JOB_ARRAY_INDEX/N";
    /// a Kubernetes indexed Job: "$(JOB_COMPLETION_INDEX)/N"), then merge with --slices-from.
    #[arg(long, value_name = "I/N", value_parser = crate::index::slices::Slice::parse,
          conflicts_with_all = ["publish", "slices_from"])]
    pub slice: Option<crate::index::slices::Slice>,
    /// With --slice: upload the slice file to s3://BUCKET/PREFIX/slices/ (or DIR/slices/).
    #[arg(long, value_name = "S3_URL_OR_DIR", requires = "slice")]
    pub slices_to: Option<String>,
    /// Merge a sliced first build: download every slice file under s3://BUCKET/PREFIX/slices/
    /// (or DIR/slices/) into --index/slices/, check the set is whole (0/N to N-1/N, this
    /// model), then build the snapshot as usual with their vectors: only texts no slice holds
    /// (changed since the slice jobs read the catalog) go through the model. The slice files
    /// are removed from --index once the snapshot is built.
    #[arg(long, value_name = "S3_URL_OR_DIR")]
    pub slices_from: Option<String>,
}

fn parse_keep(s: &str) -> Result<usize, String> {
    match s.parse::<usize>() {
        Ok(n) if n >= 1 => Ok(n),
        _ => Err(format!(
            "'{s}' is not a number of snapshots to keep; give 1 or more (CURRENT's is always kept)"
        )),
    }
}

/// `govcat index`: builds and publishes a snapshot (and, with `--publish`, uploads it);
/// prints its manifest under `--json` (with a `published` object after `--publish`).
pub(super) fn run_index(options: &Options, args: &IndexArgs) -> ExitCode {
    if let Some(slice) = args.slice {
        return run_slice(options, args, slice);
    }
    type Built = (
        crate::index::Manifest,
        crate::index::EmbedReport,
        Option<crate::sync::publish::PublishReport>,
    );
    let calibration_seconds = std::cell::Cell::new(0.0);
    let result = (|| -> Result<Built, ToolError> {
        // The location is checked before the (long) build — parsed, opened and written to
        // once — so a typo, a missing region or missing credentials fail at once.
        let store = args
            .publish
            .as_deref()
            .map(|text| open_store("--publish", text, args))
            .transpose()?;
        if let Some(store) = &store {
            store
                .probe_write()
                .map_err(|e| publish_error(e, Stage::BeforeBuild))?;
        }
        let slices_store = args
            .slices_from
            .as_deref()
            .map(|text| open_store("--slices-from", text, args))
            .transpose()?;
        let ctx = context(options)?;
        let redirected = crate::app::redirected_index(options, &ctx.source.identity());
        let options = &match redirected {
            Some(own) => {
                eprintln!(
                    "govcat: {} holds a snapshot of another catalog, which every command without these flags reads; building into {} instead (read it with --index {})",
                    options.index.display(),
                    own.display(),
                    own.display()
                );
                Options {
                    index: own,
                    ..options.clone()
                }
            }
            None => options.clone(),
        };
        let embedder = load_embedder()?;
        let bar = build_bar(options.json);
        let fresh = || context(options);
        let calibrate = crate::app::calibrator(&fresh, embedder.clone(), &bar);
        let calibrate = |dir: &std::path::Path, max_columns: usize| {
            let started = std::time::Instant::now();
            let map = calibrate(dir, max_columns);
            calibration_seconds.set(started.elapsed().as_secs_f64());
            map
        };
        let slices_dir = options.index.join(crate::index::slices::SLICES_DIR);
        if let Some(slices_store) = &slices_store {
            // The local slice files are a copy of the store's: a set of another run must not mix in.
            if slices_dir.exists() {
                std::fs::remove_dir_all(&slices_dir)
                    .map_err(|e| crate::index::IndexError::Io {
                        path: slices_dir.display().to_string(),
                        problem: e.to_string(),
                    })
                    .map_err(ToolError::from)?;
            }
            let got = crate::sync::slices::download_all(slices_store, &slices_dir, &bar)
                .map_err(|e| sync_error("SliceTransferFailed", e))?;
            crate::index::slices::check_slice_set(
                &slices_dir,
                &crate::index::model_info(embedder.as_ref()),
            )
            .map_err(ToolError::from)?;
            tracing::info!(files = got.files, bytes = got.bytes, from = %got.location, "slice files downloaded");
        }
        let (manifest, embedded) = crate::index::build_calibrated(
            &options.index,
            &ctx.ontology,
            ctx.source.as_ref(),
            embedder.as_ref(),
            &bar,
            false,
            Some(&calibrate),
        )
        .map_err(ToolError::from)?;
        if args.slices_from.is_some() {
            // Their vectors are in the snapshot now; the next build reuses them from there.
            let _ = std::fs::remove_dir_all(&slices_dir);
        }
        let published = match &store {
            Some(store) => Some(
                crate::sync::publish::publish(
                    &options.index,
                    &manifest.id,
                    store,
                    args.keep,
                    &upload_bar(options.json),
                )
                .map_err(|e| publish_error(e, Stage::Built(&manifest.id, &options.index)))?,
            ),
            None => None,
        };
        Ok((manifest, embedded, published))
    })();
    match result {
        Ok((m, embedded, published)) => {
            if options.json {
                let mut v = serde_json::to_value(&m).unwrap_or(Value::Null);
                if let Some(obj) = v.as_object_mut() {
                    obj.insert(
                        "embedding".into(),
                        serde_json::to_value(embedded).unwrap_or(Value::Null),
                    );
                    if let Some(p) = &published {
                        obj.insert(
                            "published".into(),
                            serde_json::to_value(p).unwrap_or(Value::Null),
                        );
                    }
                }
                print_json(&v);
            } else {
                println!(
                    "snapshot {} published in {}: {} documents ({} columns in {} tables of {} domains, {} ontology values), dense index {:?}",
                    m.id,
                    options.index.display(),
                    m.counts.documents,
                    m.counts.columns,
                    m.counts.tables,
                    m.counts.domains,
                    m.counts.ontology_values,
                    m.dense_backend
                );
                println!(
                    "  embedded {} documents; reused {} vectors of unchanged texts from the previous snapshot",
                    embedded.embedded, embedded.reused
                );
                if embedded.from_slices > 0 || args.slices_from.is_some() {
                    println!(
                        "  read {} vectors from slice files (texts changed since the slice jobs ran were embedded here)",
                        embedded.from_slices
                    );
                }
                if let Some(g) = &m.graph {
                    match (&g.patched_from, &g.patch) {
                        (Some(from), Some(p)) => println!(
                            "  HNSW graph patched from snapshot {from}: {} points kept, {} inserted, {} removed; probe recall@10 {}",
                            p.kept, p.inserted, p.removed, g.probe_recall
                        ),
                        _ => println!(
                            "  HNSW graph built{}; probe recall@10 {}",
                            g.not_patched
                                .as_deref()
                                .map(|r| format!(" from nothing ({r})"))
                                .unwrap_or_default(),
                            g.probe_recall
                        ),
                    }
                }
                for u in &m.counts.unreadable_tables {
                    println!("  not indexed: {} ({})", u.table, u.reason);
                }
                let path = options
                    .index
                    .join("snapshots")
                    .join(&m.id)
                    .join(crate::index::CALIBRATION);
                let map: Option<crate::calibration::Map> = std::fs::read(&path)
                    .ok()
                    .and_then(|b| serde_json::from_slice(&b).ok());
                if let Some(map) = map {
                    println!("  calibrated in {:.1} s", calibration_seconds.get());
                    for line in map.summary() {
                        println!("  {line}");
                    }
                }
                if let Some(p) = &published {
                    println!(
                        "  published to {}: {} files, {} bytes, CURRENT = {}; kept {} (deleted {})",
                        p.location,
                        p.files,
                        p.bytes,
                        p.id,
                        p.kept.join(", "),
                        if p.deleted.is_empty() {
                            "none".to_string()
                        } else {
                            p.deleted.join(", ")
                        }
                    );
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => report_error(options, &e),
    }
}

/// The store a location flag names (checked before any long step, so a typo fails at once).
fn open_store(flag: &str, text: &str, args: &IndexArgs) -> Result<crate::sync::Store, ToolError> {
    let kind = if flag == "--publish" {
        "PublishFailed"
    } else {
        "SliceTransferFailed"
    };
    let location = crate::sync::Location::parse(text)
        .map_err(|why| ToolError::new(kind, format!("{flag}: {why}")))?;
    crate::sync::Store::open(&location, args.s3_endpoint.as_deref())
        .map_err(|e| sync_error(kind, e))
}

/// A failed transfer of slice files: the object, the problem and the next step.
fn sync_error(kind: &str, e: crate::sync::SyncError) -> ToolError {
    if kind == "PublishFailed" {
        return publish_error(e, Stage::BeforeBuild);
    }
    ToolError::new(kind, e.to_string())
        .with("object", e.object.clone())
        .with("reason", e.reason)
}

/// `govcat index --slice I/N [--slices-to LOCATION]`: embeds one slice into a slice file
/// (and uploads it); builds no snapshot.
fn run_slice(options: &Options, args: &IndexArgs, slice: crate::index::slices::Slice) -> ExitCode {
    let result = (|| -> Result<(crate::index::slices::SliceReport, Option<String>), ToolError> {
        let store = args
            .slices_to
            .as_deref()
            .map(|text| open_store("--slices-to", text, args))
            .transpose()?;
        if let Some(store) = &store {
            store
                .probe_write()
                .map_err(|e| sync_error("SliceTransferFailed", e))?;
        }
        let ctx = context(options)?;
        let embedder = load_embedder()?;
        let bar = build_bar(options.json);
        let report = crate::index::slices::embed_slice(
            &options.index,
            &ctx.ontology,
            ctx.source.as_ref(),
            embedder.as_ref(),
            slice,
            &bar,
        )
        .map_err(ToolError::from)?;
        let uploaded = match &store {
            Some(store) => {
                let bar = upload_bar(options.json);
                crate::index::Progress::start(&bar, "uploading the slice file", report.bytes);
                let object =
                    crate::sync::slices::upload(store, std::path::Path::new(&report.file), &|n| {
                        crate::index::Progress::advance(&bar, n)
                    })
                    .map_err(|e| sync_error("SliceTransferFailed", e))?;
                crate::index::Progress::finish(&bar);
                Some(object)
            }
            None => None,
        };
        Ok((report, uploaded))
    })();
    match result {
        Ok((r, uploaded)) => {
            if options.json {
                let mut v = serde_json::to_value(&r).unwrap_or(Value::Null);
                if let Some(obj) = v.as_object_mut() {
                    obj.insert(
                        "uploaded".into(),
                        serde_json::to_value(&uploaded).unwrap_or(Value::Null),
                    );
                }
                print_json(&v);
            } else {
                println!(
                    "slice {} written to {}: {} of the catalog's {} documents, {} distinct vectors, {} bytes",
                    r.slice, r.file, r.in_slice, r.documents, r.vectors, r.bytes
                );
                match uploaded.as_deref() {
                    Some(object) => println!("  uploaded to {object}; when every slice is there, merge with govcat index --slices-from LOCATION"),
                    None => println!("  not uploaded (no --slices-to); copy it to the merge's --index/slices/, or merge with --slices-from"),
                }
            }
            ExitCode::SUCCESS
        }
        Err(e) => report_error(options, &e),
    }
}

/// How far a failed `--publish` had come, for its message.
enum Stage<'a> {
    /// The location failed its check before the build: nothing was built or uploaded.
    BeforeBuild,
    /// The snapshot (id, --index) is built locally; the upload failed.
    Built(&'a str, &'a std::path::Path),
}

/// A failed publish: the object, the problem, what was built and the next step.
fn publish_error(e: crate::sync::SyncError, stage: Stage<'_>) -> ToolError {
    let message = match stage {
        Stage::BeforeBuild => format!(
            "publishing failed before anything was built: {e} (the location is checked first; nothing was embedded or uploaded, and CURRENT there is unchanged)"
        ),
        Stage::Built(id, index) => format!(
            "publishing failed: {e} (snapshot {id} is built in {} and was not made CURRENT at the location; running the same command again reuses its vectors)",
            index.display()
        ),
    };
    ToolError::new("PublishFailed", message)
        .with("object", e.object.clone())
        .with("reason", e.reason)
}

/// The build's progress on stderr (nothing under `--json`).
fn build_bar(json: bool) -> Bar {
    Bar::new(Unit::Items, json)
}

/// The upload's progress on stderr, in bytes (nothing under `--json`).
fn upload_bar(json: bool) -> Bar {
    Bar::new(Unit::Bytes, json)
}
