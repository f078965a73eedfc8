//! The wiring every entry point shares: the global options (where the catalog, the ontology and
//! the snapshots are, which source, `--json`), the tool [`Context`] built from them, the
//! embedding model, and how an error reaches the user. `cli` parses the options and `server`
//! runs on them; both use this module, which knows neither.
//!
//! Exit status of a failure: 1 (under `--json` the error object is on stdout).

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use crate::catalog::aws::AwsSource;
use crate::catalog::dir::{DirSource, DEFAULT_CATALOG_DIR};
use crate::catalog::{CatalogSource, SourceIdentity};
use crate::embed::{Embedder, MiniLm};
use crate::index::{Manifest, Snapshot};
use crate::ontology::{Ontology, DEFAULT_ONTOLOGY_PATH};
use crate::tools::advice::{shell_quote, Step, Surface};
use crate::tools::{Context, ToolError};

/// The options every command takes (global on the command line; listed under their own
/// heading in every `--help`, apart from the command's own).
#[derive(Debug, Clone, clap::Args)]
#[command(next_help_heading = "Global options")]
pub struct Options {
    /// Catalog directory in the `dir` format (docs/catalog-format.md).
    #[arg(long, global = true, env = "GOVCAT_CATALOG", default_value = DEFAULT_CATALOG_DIR)]
    pub catalog: PathBuf,
    /// Ontology file (the LF-tag vocabulary).
    #[arg(long, global = true, env = "GOVCAT_ONTOLOGY", default_value = DEFAULT_ONTOLOGY_PATH)]
    pub ontology: PathBuf,
    /// Snapshot directory (`index/snapshots/<id>/` and `index/CURRENT`).
    #[arg(long, global = true, env = "GOVCAT_INDEX", default_value = crate::DEFAULT_INDEX_DIR)]
    pub index: PathBuf,
    /// Where the catalog is read from: `dir` (recorded responses under --catalog) or `aws`.
    #[arg(long, global = true, value_enum, default_value_t = SourceKind::Dir)]
    pub source: SourceKind,
    /// Domain map for `--source aws` (TOML: region, role_name, external_id, [[domain]]).
    #[arg(long, global = true, env = "GOVCAT_AWS_CONFIG")]
    pub aws_config: Option<PathBuf>,
    /// Print the tool's structured output exactly, as JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

/// Catalog source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceKind {
    Dir,
    Aws,
}

/// Opens the configured catalog source.
pub fn open_source(
    options: &Options,
    ontology: &Ontology,
) -> Result<Box<dyn CatalogSource>, ToolError> {
    match options.source {
        SourceKind::Dir => Ok(Box::new(DirSource::open(
            &options.catalog,
            ontology.clone(),
        )?)),
        SourceKind::Aws => Ok(Box::new(open_aws(options, ontology)?)),
    }
}

/// Opens the `aws` source from `--aws-config`.
pub fn open_aws(options: &Options, ontology: &Ontology) -> Result<AwsSource, ToolError> {
    let path = options.aws_config.as_ref().ok_or_else(|| {
        ToolError::new(
            "SourceUnavailable",
            "--source aws needs --aws-config FILE (TOML: region, role_name, external_id and one [[domain]] table per domain); pass it or set GOVCAT_AWS_CONFIG",
        )
    })?;
    Ok(AwsSource::open(path, ontology.clone())?)
}

/// Loads the ontology and opens the source: what every catalog-reading command needs. Its
/// messages are worded for the command line, with the flags in effect.
pub fn context(options: &Options) -> Result<Context, ToolError> {
    let ontology = Ontology::load(&options.ontology)?;
    let source = open_source(options, &ontology)?;
    let mut ctx = Context::new(ontology, source);
    ctx.surface = cli_surface(options);
    Ok(ctx)
}

/// Whether two paths name the same place (resolved when both exist, else compared as
/// written, `./` and doubled separators aside).
fn same_path(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a.components().eq(b.components()),
    }
}

/// Whether the catalog in effect is the default one (`--source dir` at the default folder).
fn default_source(options: &Options) -> bool {
    options.source == SourceKind::Dir && same_path(&options.catalog, Path::new(DEFAULT_CATALOG_DIR))
}

/// Whether the ontology in effect is the default file.
fn default_ontology(options: &Options) -> bool {
    same_path(&options.ontology, Path::new(DEFAULT_ONTOLOGY_PATH))
}

/// The global flags in effect that a command must repeat to act on the same catalog, ontology
/// and snapshots (those not at their default), quoted for a shell: what every next step that
/// names a command carries ([`crate::tools::advice::command`]).
pub fn flags_in_effect(options: &Options) -> Vec<String> {
    let mut flags = Vec::new();
    let mut flag = |name: &str, value: &Path| {
        flags.push(name.to_string());
        flags.push(shell_quote(&value.display().to_string()));
    };
    if options.source == SourceKind::Dir && !default_source(options) {
        flag("--catalog", &options.catalog);
    }
    if !default_ontology(options) {
        flag("--ontology", &options.ontology);
    }
    if !same_path(&options.index, Path::new(crate::DEFAULT_INDEX_DIR)) {
        flag("--index", &options.index);
    }
    if options.source == SourceKind::Aws {
        flag("--source", Path::new("aws"));
        if let Some(config) = &options.aws_config {
            flag("--aws-config", config);
        }
    }
    flags
}

/// The command line as a surface: next steps are `govcat` commands with [`flags_in_effect`].
pub fn cli_surface(options: &Options) -> Surface {
    Surface::Cli {
        flags: flags_in_effect(options),
    }
}

/// MCP and REST as a surface: next steps name tools; the operator's commands carry the flags
/// the server runs with.
pub fn tools_surface(options: &Options) -> Surface {
    Surface::Tools {
        flags: flags_in_effect(options),
    }
}

/// The snapshot `--index` publishes, loaded and checked against the catalog and ontology in
/// use ([`check_snapshot_source`]): what every snapshot-reading command, `serve` at start and
/// each `--watch`/`--refresh` swap use.
pub fn load_snapshot(
    options: &Options,
    embedder: &dyn Embedder,
    ontology: &Ontology,
    source: &dyn CatalogSource,
) -> Result<Snapshot, ToolError> {
    let snapshot = crate::index::load_current(&options.index, embedder)?;
    check_snapshot_source(options, &snapshot.manifest, ontology, source)?;
    Ok(snapshot)
}

/// `index/` as a message names it.
fn index_dir_text(options: &Options) -> String {
    let text = options.index.display().to_string();
    if text.ends_with('/') {
        text
    } else {
        format!("{text}/")
    }
}

/// The catalog in use as a message names it: the folder as given (and "(the default)").
fn source_text(options: &Options, identity: &SourceIdentity) -> String {
    match identity {
        SourceIdentity::Dir { .. } if default_source(options) => {
            format!("{} (the default)", options.catalog.display())
        }
        SourceIdentity::Dir { .. } => options.catalog.display().to_string(),
        SourceIdentity::Aws { .. } => identity.to_string(),
    }
}

/// Whether a rebuild for the catalog and ontology in effect belongs in an index of its own:
/// the default `index/` with a catalog or ontology other than the default. Rebuilding
/// `index/` there would replace the snapshot every command without those flags reads.
fn needs_own_index(options: &Options) -> bool {
    same_path(&options.index, Path::new(crate::DEFAULT_INDEX_DIR))
        && !(default_source(options) && default_ontology(options))
}

/// Where `govcat index` builds for the catalog in effect: `index/catalogs/<name>` instead of
/// the default `index/` when that holds a snapshot of another catalog (the default's, as a
/// rule) — rebuilding there would replace what every command without these flags reads.
/// `None`: build in `--index` as given.
pub fn redirected_index(options: &Options, using: &SourceIdentity) -> Option<PathBuf> {
    if !needs_own_index(options) {
        return None;
    }
    let id = crate::index::current_id(&options.index).ok()?;
    let manifest = crate::index::read_manifest(&options.index.join("snapshots").join(id)).ok()?;
    match &manifest.source {
        Some(built) if built != using => Some(own_index_dir(options)),
        _ => None,
    }
}

/// The index a catalog other than the default gets: `index/catalogs/<name>`, the name from the
/// catalog folder (its parent's when the folder is called `catalog`), else from the ontology
/// file's folder; `aws` for the AWS source.
fn own_index_dir(options: &Options) -> PathBuf {
    let name_of = |p: &Path| {
        let p = std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
        let last = p.file_name().map(|n| n.to_string_lossy().to_string());
        match last.as_deref() {
            Some("catalog") | Some("ontology.json") | None => p
                .parent()
                .and_then(|q| q.file_name())
                .map(|n| n.to_string_lossy().to_string())
                .unwrap_or_else(|| "other".into()),
            Some(n) => n.trim_end_matches(".json").to_string(),
        }
    };
    let name = if options.source == SourceKind::Aws {
        "aws".to_string()
    } else if !default_source(options) {
        name_of(&options.catalog)
    } else {
        name_of(&options.ontology)
    };
    let name: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "-_.".contains(c) {
                c
            } else {
                '-'
            }
        })
        .collect();
    options.index.join("catalogs").join(name)
}

/// The step that builds the right snapshot (`target`: "for <catalog>", "with <ontology>"): in
/// an index of its own where [`needs_own_index`], else a rebuild of `--index`.
fn own_index_step(options: &Options, target: String) -> Step {
    if needs_own_index(options) {
        Step::SeparateIndex {
            index: shell_quote(&own_index_dir(options).display().to_string()),
            why: format!("to build one {target}"),
        }
    } else {
        Step::Index {
            why: format!("to rebuild it {target}"),
        }
    }
}

/// Refuses a snapshot built from another catalog or ontology than the ones in use
/// (`SnapshotSourceMismatch`), naming both sides and the command that builds the right one.
/// The same catalog with other contents is staleness (the freshness fields say so), not a
/// mismatch.
///
/// A snapshot written before govcat recorded its source and ontology (no `source`,
/// `ontology_checksum` in the manifest) is accepted for the default catalog and ontology —
/// the only ones such a snapshot can be presumed to hold, and refusing would break every
/// existing `index/` at upgrade — and refused where a catalog or ontology other than the
/// default is in use, because there an unverifiable snapshot is as likely as not the demo
/// catalog's, and answering from it would be silently wrong.
pub fn check_snapshot_source(
    options: &Options,
    manifest: &Manifest,
    ontology: &Ontology,
    source: &dyn CatalogSource,
) -> Result<(), ToolError> {
    let using = source.identity();
    let dir = index_dir_text(options);
    let reads = source_text(options, &using);
    let mismatch = |message: String, step: Step| {
        ToolError::new("SnapshotSourceMismatch", message)
            .with("snapshot", manifest.id.clone())
            .with("snapshot_source", manifest.source.clone())
            .with("source", using.clone())
            .with(
                "snapshot_ontology_checksum",
                manifest.ontology_checksum.clone(),
            )
            .with("ontology_checksum", ontology.checksum())
            .next(step)
    };
    let rebuild = |why: String| own_index_step(options, why);
    match &manifest.source {
        Some(built) if *built != using => {
            let step = match built {
                SourceIdentity::Dir { path } if !needs_own_index(options) => Step::IndexOrPass {
                    why: format!("to rebuild it for {reads}"),
                    instead: vec!["--catalog".into(), shell_quote(path)],
                },
                _ => rebuild(format!("for {reads}")),
            };
            return Err(mismatch(
                format!("{dir} holds a snapshot of {built}, but this command reads {reads}"),
                step,
            ));
        }
        None if !default_source(options) => {
            return Err(mismatch(
                format!("{dir} holds snapshot {}, written before govcat recorded which catalog a snapshot is of, so it cannot show it is of {reads}, which this command reads", manifest.id),
                rebuild(format!("for {reads}")),
            ));
        }
        _ => {}
    }
    let checksum = ontology.checksum();
    let short = |s: &str| s.chars().take(12).collect::<String>();
    let using_ontology = format!(
        "{} (version {}, sha256 {}…)",
        options.ontology.display(),
        ontology.version,
        short(&checksum)
    );
    let why = || rebuild(format!("with {}", options.ontology.display()));
    match &manifest.ontology_checksum {
        Some(built) if *built != checksum => Err(mismatch(
            format!(
                "{dir} holds a snapshot built with ontology version {} (sha256 {}…), but this command reads {using_ontology}",
                manifest.ontology_version,
                short(built)
            ),
            why(),
        )),
        None if !default_ontology(options) => Err(mismatch(
            format!("{dir} holds snapshot {}, written before govcat recorded which ontology a snapshot is built with, so it cannot show it was built with {using_ontology}, which this command reads", manifest.id),
            why(),
        )),
        _ => Ok(()),
    }
}

/// Loads the embedding model (from `GOVCAT_MODEL_DIR` or `models/all-MiniLM-L6-v2`).
pub fn load_embedder() -> Result<Arc<dyn Embedder>, ToolError> {
    MiniLm::load_default()
        .map(|m| Arc::new(m) as Arc<dyn Embedder>)
        .map_err(|e| ToolError::new("EmbedderUnavailable", e.to_string()))
}

/// What `govcat index` and `serve --refresh`/`--watch` give `index::build_calibrated`: loads the
/// staged snapshot into a context from `fresh` (the same catalog and ontology), runs the
/// leave-one-out of `tools::calibrate::fit_snapshot` over it (at most the given number of
/// tagged columns) and returns the map to store.
pub fn calibrator<'a>(
    fresh: &'a dyn Fn() -> Result<Context, ToolError>,
    embedder: Arc<dyn Embedder>,
    progress: &'a dyn crate::index::Progress,
) -> impl Fn(&Path, usize) -> Result<crate::calibration::Map, crate::index::IndexError> + 'a {
    move |dir, max_columns| {
        let failed = |e: ToolError| crate::index::IndexError::Calibration(e.message);
        let snapshot = crate::index::load(dir, embedder.as_ref())?;
        let handle = crate::index::SnapshotHandle::new();
        handle.swap(snapshot);
        let ctx = fresh()
            .map_err(failed)?
            .with_retrieval(embedder.clone(), handle);
        crate::tools::calibrate::fit_snapshot(&ctx, max_columns, progress).map_err(failed)
    }
}

/// Prints JSON on stdout; a closed pipe (`| head`) ends output quietly instead of panicking.
pub fn print_json(value: &Value) {
    use std::io::Write;
    let text = serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string());
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

/// Reports a failure: the error object on stdout under `--json`, else `govcat: <message>` on
/// stderr.
pub fn report_error(options: &Options, e: &ToolError) -> ExitCode {
    let e = &e.clone().advised(&cli_surface(options));
    if options.json {
        print_json(&e.to_json());
    } else {
        eprintln!("govcat: {}", e.message);
    }
    ExitCode::FAILURE
}
