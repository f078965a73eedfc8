//! The `govcat` command line: parses arguments once into plain values, builds the tool
//! [`Context`], calls tools through the same dispatcher as every other transport and prints
//! either the tool's structured output exactly (`--json`) or a readable rendering.
//!
//! Exit status: 0 success, 1 error (under `--json` the error object is on stdout),
//! 3 input required (the tag set is incomplete).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{json, Value};

use crate::catalog::dir::{DirSource, DEFAULT_CATALOG_DIR};
use crate::ontology::{parse_pairs, Ontology, DEFAULT_ONTOLOGY_PATH};
use crate::tools::{self, Caller, Context, Outcome, ToolError};

#[derive(Debug, Parser)]
#[command(
    name = "govcat",
    version,
    about = "Governed data catalog for AI assistants: answers retrieved from the catalog, never invented"
)]
pub struct Cli {
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
    #[command(subcommand)]
    pub command: Command,
}

/// Catalog source kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum SourceKind {
    Dir,
    Aws,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    // [commands] — new subcommands go below this line, one variant each.
    /// List the domains with owner and dataset/column counts.
    ListDomains,
    /// Read one dataset live: metadata, contract, columns with four-state tags.
    GetDataset { domain: String, table: String },
    /// Validate a tag set against the ontology: govcat resolve sensitivity=high residency=eu ...
    Resolve {
        /// KEY=VALUE pairs.
        #[arg(required = true)]
        tags: Vec<String>,
    },
    /// Evaluate a role's LF-tag grant expression against a dataset's columns.
    CheckGrant {
        role: String,
        domain: String,
        table: String,
    },
}

/// Opens the configured catalog source.
pub fn open_source(
    cli: &Cli,
    ontology: &Ontology,
) -> Result<Box<dyn crate::catalog::CatalogSource>, ToolError> {
    match cli.source {
        SourceKind::Dir => Ok(Box::new(DirSource::open(&cli.catalog, ontology.clone())?)),
        SourceKind::Aws => Err(ToolError::new(
            "SourceUnavailable",
            "the aws source is not part of this build yet; use --source dir",
        )),
    }
}

/// Loads the ontology and opens the source: what every catalog-reading command needs.
pub fn context(cli: &Cli) -> Result<Context, ToolError> {
    let ontology = Ontology::load(&cli.ontology)?;
    let source = open_source(cli, &ontology)?;
    Ok(Context::new(ontology, source))
}

/// Runs the CLI and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let (tool, args) = match &cli.command {
        // [dispatch] — commands that are not a single tool call return from here.
        Command::ListDomains => ("list_domains", json!({})),
        Command::GetDataset { domain, table } => {
            ("get_dataset", json!({"domain": domain, "table": table}))
        }
        Command::Resolve { tags } => match parse_pairs(tags) {
            Ok(pairs) => {
                let mut map = serde_json::Map::new();
                for (k, v) in pairs {
                    if let Some(previous) = map.insert(k.clone(), Value::String(v.clone())) {
                        if previous != Value::String(v.clone()) {
                            let e = ToolError::from(
                                crate::ontology::OntologyError::ConflictingValues {
                                    key: k,
                                    values: vec![
                                        previous.as_str().unwrap_or_default().to_string(),
                                        v,
                                    ],
                                },
                            );
                            return report_error(&cli, &e);
                        }
                    }
                }
                ("resolve_lf_tag", json!({ "tags": map }))
            }
            Err(problem) => {
                return report_error(&cli, &ToolError::new("InvalidArguments", problem))
            }
        },
        Command::CheckGrant {
            role,
            domain,
            table,
        } => (
            "check_grant_expression",
            json!({"role": role, "domain": domain, "table": table}),
        ),
    };
    let ctx = match context(&cli) {
        Ok(ctx) => ctx,
        Err(e) => return report_error(&cli, &e),
    };
    match tools::call(&ctx, &Caller::local(), tool, args) {
        Outcome::Ok(value) => {
            if cli.json {
                print_json(&value);
            } else {
                print!("{}", render(tool, &value));
            }
            ExitCode::SUCCESS
        }
        Outcome::InputRequired(ask) => {
            if cli.json {
                print_json(&json!({ "input_required": ask }));
            } else {
                println!("input required: {}", ask.message);
                for m in &ask.missing {
                    let allowed: Vec<&str> = m.allowed.iter().map(|v| v.0.as_str()).collect();
                    println!("  {:<14} one of: {}", m.key.0, allowed.join(", "));
                }
            }
            ExitCode::from(3)
        }
        Outcome::Err(e) => report_error(&cli, &e),
    }
}

pub fn print_json(value: &Value) {
    println!(
        "{}",
        serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
    );
}

pub fn report_error(cli: &Cli, e: &ToolError) -> ExitCode {
    if cli.json {
        print_json(&e.to_json());
    } else {
        eprintln!("govcat: {}", e.message);
    }
    ExitCode::FAILURE
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or("-")
}

fn tag_text(tag: &Value) -> String {
    match tag["state"].as_str() {
        Some("present") => s(&tag["value"]).to_string(),
        Some(state) => format!("({state})"),
        None => "?".into(),
    }
}

/// A readable rendering of a tool's output. The JSON output is the contract; this is for people.
fn render(tool: &str, v: &Value) -> String {
    let mut out = String::new();
    let empty = Vec::new();
    let list = |key: &str| v[key].as_array().unwrap_or(&empty).clone();
    match tool {
        "list_domains" => {
            out += &format!(
                "{:<12} {:>8} {:>8}  {}\n",
                "DOMAIN", "DATASETS", "COLUMNS", "OWNER"
            );
            for e in list("entries") {
                out += &format!(
                    "{:<12} {:>8} {:>8}  {}\n",
                    s(&e["name"]),
                    e["dataset_count"],
                    e["column_count"],
                    s(&e["owner"])
                );
                if let Some(x) = e.get("counts_excluded") {
                    out += &format!(
                        "{:<12} counts exclude {} unreadable table(s)\n",
                        "", x["tables"]
                    );
                }
            }
        }
        "get_dataset" => {
            let m = &v["metadata"];
            out += &format!(
                "{}.{} (database {})\nowner: {}\n{}\nfreshness SLA: {}\n",
                s(&m["domain"]),
                s(&m["name"]),
                s(&m["database"]),
                s(&m["owner"]),
                s(&m["description"]),
                s(&v["contract"]["freshness_sla"])
            );
            let keys: Vec<String> = v["contract"]["table_tags"]
                .as_object()
                .map(|o| o.keys().cloned().collect())
                .unwrap_or_default();
            out += &format!("\n{:<24} {:<18}", "COLUMN", "TYPE");
            for k in &keys {
                out += &format!(" {:<16}", k.to_uppercase());
            }
            out += "\n";
            for c in list("columns") {
                out += &format!("{:<24} {:<18}", s(&c["name"]), s(&c["type"]));
                for k in &keys {
                    out += &format!(" {:<16}", tag_text(&c["lf_tags"][k]));
                }
                out += "\n";
            }
        }
        "resolve_lf_tag" => {
            out += &format!("valid (ontology {}):\n", s(&v["ontology_version"]));
            if let Some(o) = v["resolved"].as_object() {
                for (k, val) in o {
                    out += &format!("  {k:<14} {}\n", s(val));
                }
            }
        }
        "check_grant_expression" => {
            out += &format!(
                "role {} on {}.{}: {}\n",
                s(&v["role"]),
                s(&v["domain"]),
                s(&v["table"]),
                if v["reaches"].as_bool() == Some(true) {
                    "reaches"
                } else {
                    "does not reach"
                }
            );
            for r in list("reached") {
                out += &format!("  reached       {}\n", s(&r));
            }
            for d in list("denied") {
                let why: Vec<String> = d["failed"]
                    .as_array()
                    .unwrap_or(&empty)
                    .iter()
                    .map(|f| {
                        format!(
                            "{} not in {} (found {})",
                            s(&f["key"]),
                            f["allowed"],
                            tag_text(&f["found"])
                        )
                    })
                    .collect();
                out += &format!("  denied        {}: {}\n", s(&d["column"]), why.join("; "));
            }
            for u in list("undetermined") {
                out += &format!(
                    "  undetermined  {}: {} {}\n",
                    s(&u["column"]),
                    u["keys"],
                    s(&u["state"])
                );
            }
        }
        _ => out += &format!("{v:#}\n"),
    }
    out
}
