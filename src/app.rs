//! The wiring every entry point shares: the global options (where the catalog, the ontology and
//! the snapshots are, which source, `--json`), the tool [`Context`] built from them, the
//! embedding model, and how an error reaches the user. `cli` parses the options and `server`
//! runs on them; both use this module, which knows neither.
//!
//! Exit status of a failure: 1 (under `--json` the error object is on stdout).

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use serde_json::Value;

use crate::catalog::aws::AwsSource;
use crate::catalog::dir::{DirSource, DEFAULT_CATALOG_DIR};
use crate::catalog::CatalogSource;
use crate::embed::{Embedder, MiniLm};
use crate::ontology::{Ontology, DEFAULT_ONTOLOGY_PATH};
use crate::tools::{Context, ToolError};

/// The options every command takes (global on the command line).
#[derive(Debug, Clone, clap::Args)]
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

/// Loads the ontology and opens the source: what every catalog-reading command needs.
pub fn context(options: &Options) -> Result<Context, ToolError> {
    let ontology = Ontology::load(&options.ontology)?;
    let source = open_source(options, &ontology)?;
    Ok(Context::new(ontology, source))
}

/// Loads the embedding model (from `GOVCAT_MODEL_DIR` or `models/all-MiniLM-L6-v2`).
pub fn load_embedder() -> Result<Arc<dyn Embedder>, ToolError> {
    MiniLm::load_default()
        .map(|m| Arc::new(m) as Arc<dyn Embedder>)
        .map_err(|e| ToolError::new("EmbedderUnavailable", e.to_string()))
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
    if options.json {
        print_json(&e.to_json());
    } else {
        eprintln!("govcat: {}", e.message);
    }
    ExitCode::FAILURE
}
