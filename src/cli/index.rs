//! `govcat index [--publish LOCATION --keep N]`: build the snapshot, then (with `--publish`)
//! upload it through [`crate::sync::publish`].

use std::process::ExitCode;

use serde_json::Value;

use super::{progress_bar, Bar};
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
    type Built = (
        crate::index::Manifest,
        crate::index::EmbedReport,
        Option<crate::sync::publish::PublishReport>,
    );
    let calibration_seconds = std::cell::Cell::new(0.0);
    let result = (|| -> Result<Built, ToolError> {
        // The location is checked before the (long) build, so a typo fails at once.
        let store = match &args.publish {
            Some(text) => {
                let location = crate::sync::Location::parse(text)
                    .map_err(|why| ToolError::new("PublishFailed", format!("--publish: {why}")))?;
                Some(
                    crate::sync::Store::open(&location, args.s3_endpoint.as_deref())
                        .map_err(publish_error)?,
                )
            }
            None => None,
        };
        let ctx = context(options)?;
        let embedder = load_embedder()?;
        let bar = progress_bar();
        if options.json {
            bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
        }
        let bar = Bar(bar);
        let fresh = || context(options);
        let calibrate = crate::app::calibrator(&fresh, embedder.clone(), &bar);
        let calibrate = |dir: &std::path::Path, max_columns: usize| {
            let started = std::time::Instant::now();
            let map = calibrate(dir, max_columns);
            calibration_seconds.set(started.elapsed().as_secs_f64());
            map
        };
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
        let published = match &store {
            Some(store) => Some(
                crate::sync::publish::publish(
                    &options.index,
                    &manifest.id,
                    store,
                    args.keep,
                    &upload_bar(options.json),
                )
                .map_err(publish_error)?,
            ),
            None => None,
        };
        Ok((manifest, embedded, published))
    })();
    match result {
        Ok((m, embedded, published)) => {
            if options.json {
                let mut v = serde_json::to_value(&m).unwrap_or(Value::Null);
                if let (Some(obj), Some(p)) = (v.as_object_mut(), &published) {
                    obj.insert(
                        "published".into(),
                        serde_json::to_value(p).unwrap_or(Value::Null),
                    );
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

/// A failed publish: the object, the problem and the next step. The local snapshot is built
/// and stays the reuse base of the next run.
fn publish_error(e: crate::sync::SyncError) -> ToolError {
    ToolError::new(
        "PublishFailed",
        format!("publishing failed: {e} (the local snapshot is built; running the same command again reuses its vectors)"),
    )
    .with("object", e.object.clone())
    .with("reason", e.reason)
}

/// The upload's progress bar on stderr, in bytes (drawn only on a terminal, never under
/// `--json`).
fn upload_bar(json: bool) -> Bar {
    let bar = indicatif::ProgressBar::new(0).with_style(
        indicatif::ProgressStyle::with_template(
            "{msg} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
        )
        .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
        .progress_chars("=> "),
    );
    if json {
        bar.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    Bar(bar)
}
