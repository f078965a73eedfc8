//! The `govcat` command line: parses arguments once into plain values, builds the tool
//! [`Context`] (through [`crate::app`], as the server does), calls tools through the same
//! dispatcher as every other transport and prints either the tool's structured output exactly
//! (`--json`) or a readable rendering.
//!
//! Exit status: 0 success, 1 error (under `--json` the error object is on stdout),
//! 3 input required (the tag set is incomplete).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use serde_json::{json, Value};

use crate::app::{context, load_embedder, open_aws, print_json, report_error, Options, SourceKind};
use crate::ontology::{parse_pairs, Ontology};
use crate::tools::{self, Caller, Context, Outcome, ToolError};

mod eval;
mod index;
mod progress;
mod render;
pub use index::IndexArgs;

use crate::index::Unit;
use eval::run_eval;
use progress::Bar;
use render::render;

#[derive(Debug, Clone, Parser)]
#[command(
    name = "govcat",
    version,
    about = "Governed data catalog for AI assistants: answers retrieved from the catalog, never invented"
)]
pub struct Cli {
    #[command(flatten)]
    pub options: Options,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Clone, Subcommand)]
pub enum Command {
    // [commands] — new subcommands go below this line, one variant each.
    /// Record the live catalog (--source aws) in the dir format, with provenance.json.
    Record {
        /// Output directory; must not exist or be empty.
        #[arg(long)]
        out: PathBuf,
    },
    /// Build a snapshot (ontology values + every column, embedded and indexed) and publish it.
    Index(IndexArgs),
    /// Find precedent columns and ontology values for a description (find_precedents).
    Search {
        /// What the column holds, e.g. "contains an EU IBAN".
        query: String,
        /// Another phrasing, searched as given like the description (repeatable, at most 8):
        /// a likely column name (payee_iban), the standard term, English words.
        #[arg(long = "alt", value_name = "TEXT")]
        alternatives: Vec<String>,
        /// A filter: search only these domains (repeatable); default every domain you may
        /// read. (suggest's --domain is different: the domain of the table the new column
        /// goes into.)
        #[arg(long = "domain")]
        domains: Vec<String>,
        /// Restrict to kinds (repeatable or comma-separated): column, ontology_value; default
        /// both.
        #[arg(long = "kind", visible_alias = "kinds", value_delimiter = ',', value_parser = ["column", "ontology_value"])]
        kinds: Vec<String>,
        /// Page size (1-50).
        #[arg(long, default_value_t = 10)]
        limit: usize,
        /// next_cursor of a previous page.
        #[arg(long)]
        cursor: Option<String>,
        /// Which sides search: hybrid (words and meaning, fused), bm25 (words) or dense
        /// (meaning).
        #[arg(long, value_enum, default_value_t = crate::retrieval::Mode::Hybrid)]
        mode: crate::retrieval::Mode,
        /// Whether the column looked for is likely named with a key ending (id, key, no, nr:
        /// customer_id, plate_no): false ranks such columns lower (score x0.7), true does not
        /// (and changes nothing else); omitted: inferred from the words, as
        /// request.identifier_from says.
        #[arg(long, value_name = "true|false")]
        identifier: Option<bool>,
    },
    /// Suggest tags from precedent, with evidence (suggest_tags).
    Suggest {
        /// What the new column holds, e.g. "IBAN of the customer".
        query: String,
        /// Another phrasing of what the new column holds, searched as given (repeatable, at
        /// most 8): its likely name, the standard term, English words.
        #[arg(long = "alt", value_name = "TEXT")]
        alternatives: Vec<String>,
        /// Do not propose a key whose confidence (how often proposals with the same evidence
        /// were right on this catalog) is below this share, e.g. 0.9; it is listed as
        /// abstained with both numbers.
        #[arg(long, value_name = "SHARE", allow_negative_numbers = true, value_parser = share)]
        min_confidence: Option<f64>,
        /// The domain of the table the new column goes into (the target, unlike search's
        /// --domain filter); alone: a new, unnamed table of that domain (inherits its
        /// database's tags).
        #[arg(long)]
        domain: Option<String>,
        /// The table the new column goes into (without --domain: the one domain that has it),
        /// existing (its columns' tags count as siblings) or new (treated as a new table of the
        /// domain).
        #[arg(long)]
        table: Option<String>,
        /// Whether the column looked for is likely named with a key ending (id, key, no, nr:
        /// customer_id, plate_no): false ranks such columns lower (score x0.7), true does not
        /// (and changes nothing else); omitted: inferred from the words, as
        /// request.identifier_from says.
        #[arg(long, value_name = "true|false")]
        identifier: Option<bool>,
    },
    /// Serve MCP (Streamable HTTP at /mcp), the REST API (/v1/tools), /healthz, /readyz and
    /// /metrics until SIGINT/SIGTERM.
    Serve(Box<crate::server::ServeArgs>),
    /// Serve MCP over stdio. The caller's scopes come from GOVCAT_SCOPES (space-separated
    /// catalog:<domain>:read); unset means every domain, set but empty means none.
    McpStdio(crate::server::StdioArgs),
    /// List the domains with owner and dataset/column counts.
    ListDomains {
        /// Also list the ontology: every tag key with its allowed values.
        #[arg(long)]
        include_ontology: bool,
        /// Also list the glossary: the abbreviations and German words searches expand.
        #[arg(long)]
        include_glossary: bool,
    },
    /// Read one dataset live: metadata, contract, columns with four-state tags.
    GetDataset {
        /// The dataset's domain (`govcat list-domains` lists them), e.g. policy.
        domain: String,
        /// The table in that domain, e.g. customer.
        table: String,
    },
    /// Validate a tag set against the ontology: govcat resolve sensitivity=high residency=eu ...
    Resolve {
        /// KEY=VALUE pairs.
        #[arg(required = true, value_parser = key_value)]
        tags: Vec<String>,
    },
    /// Evaluate a role's LF-tag grant expression against a dataset's columns.
    CheckGrant {
        /// The role whose grant is evaluated, e.g. global-analytics-reader.
        role: String,
        /// The dataset's domain, e.g. analytics.
        domain: String,
        /// The table in that domain, e.g. customer_360_global_extract.
        table: String,
    },
    /// Measure retrieval and tag-suggestion quality on this catalog, next to a textbook
    /// baseline of the same run (see README, "Measuring quality on your own catalog").
    Eval {
        #[command(subcommand)]
        what: EvalCommand,
    },
}

/// `eval queries --modes` default: every mode, written as it is typed (comma-separated).
pub const EVAL_MODES_DEFAULT: &str = "bm25,dense,hybrid,baseline";

#[derive(Debug, Clone, Subcommand)]
pub enum EvalCommand {
    /// Labelled queries (JSON lines: {"query", "relevant": {id: grade} | [id, ...]}, optional
    /// "id", "lang", "negative") → recall, success, MRR, nDCG@10 per mode.
    Queries {
        /// Query files; their queries are evaluated together.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Modes to measure, comma-separated. When query lines carry "alternatives", hybrid
        /// and baseline are also reported as hybrid_alt and baseline_alt (with them).
        #[arg(long, value_enum, value_delimiter = ',', default_value = EVAL_MODES_DEFAULT)]
        modes: Vec<crate::eval::queries::EvalMode>,
        /// Which queries take part (by id: calibration = digits divisible by 3).
        #[arg(long, value_enum, default_value_t = crate::eval::Split::All)]
        split: crate::eval::Split,
        /// Also write eval.json and a self-contained eval.html into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Override one retrieval parameter for this run (repeatable), e.g. `rrf_k=60`,
        /// `dense_weight=1`, `min_similarity=0.35`, `key_weight=1`; echoed in request.params.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// Leave-one-out over the catalog's tagged columns: suggest_tags from the other columns
    /// vs. the real tags, per key, with two baselines and the precedent conflicts.
    Tags {
        /// What a held-out column hides from the precedents.
        #[arg(long, value_enum, default_value_t = crate::eval::tags::Exclude::Column)]
        exclude: crate::eval::tags::Exclude,
        /// Also write eval.json and a self-contained eval.html into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Override one retrieval parameter for this run (repeatable), as for `eval queries`;
        /// echoed in request.params.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
        /// Pass min_confidence to every suggestion (keys below it count as not answered),
        /// with the snapshot's own calibration; omit for every proposal.
        #[arg(long, value_name = "SHARE", allow_negative_numbers = true, value_parser = share)]
        min_confidence: Option<f64>,
    },
    /// The conversation as a bench: replays a blind host's calls (JSON lines {"id", "calls":
    /// [{"tool", "arguments"}]}) through the real tools and judges them against labels (JSON
    /// lines {"id", "request", "relevant": {id: grade}, "negative"}).
    Calls {
        /// The host's calls.
        calls: PathBuf,
        /// The labels of the same requests.
        labels: PathBuf,
        /// Also write eval.json and a self-contained eval.html into this directory.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Override one retrieval or vote parameter for this run (repeatable), as for `eval
        /// tags`.
        #[arg(long = "param", value_name = "NAME=VALUE")]
        params: Vec<String>,
    },
    /// Every find_precedents entry of labelled query files (with their alternatives) with its
    /// grade and evidence, one JSON line each: what scripts/fit-precedent.py fits
    /// precedent_confidence on.
    Precedents {
        /// Labelled query files, as for `eval queries`.
        #[arg(required = true)]
        files: Vec<PathBuf>,
        /// Where to write the rows (JSON lines).
        #[arg(long)]
        rows: PathBuf,
    },
}

/// `govcat record --source aws --out DIR`: the live catalog written in the `dir` format.
fn run_record(options: &Options, out: &std::path::Path) -> ExitCode {
    if options.source != SourceKind::Aws {
        return report_error(
            options,
            &ToolError::new(
                "InvalidArguments",
                "record reads a live catalog: pass --source aws --aws-config FILE (a dir catalog is already recorded; copy it instead)",
            ),
        );
    }
    let result = Ontology::load(&options.ontology)
        .map_err(ToolError::from)
        .and_then(|ontology| open_aws(options, &ontology))
        .and_then(|source| {
            let now = crate::timestamp::format_rfc3339(std::time::SystemTime::now());
            Ok(source.record(&Caller::local(), out, &now)?)
        });
    match result {
        Ok(summary) => {
            if options.json {
                print_json(&serde_json::to_value(&summary).unwrap_or(Value::Null));
            } else {
                println!(
                    "recorded {} domain(s), {} table(s), {} column(s), {} role(s) into {}{}",
                    summary.domains,
                    summary.tables,
                    summary.columns,
                    summary.roles.len(),
                    summary.out,
                    if summary.ontology_drift {
                        " (LF-tag vocabulary drift: see provenance.json)"
                    } else {
                        ""
                    }
                );
            }
            ExitCode::SUCCESS
        }
        Err(e) => report_error(options, &e),
    }
}

/// Exit status of an argument error (clap's convention, kept under `--json`).
pub const USAGE_EXIT: u8 = 2;

/// Parses the process arguments and runs the CLI. An argument error is clap's text on stderr,
/// or under `--json` `{"error": "Usage", "message", "usage"}` on stdout; both exit 2.
pub fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match Cli::try_parse_from(&args) {
        Ok(cli) => match usage_problem(&cli) {
            Some(e) => usage_error(&e, wants_json(&args)),
            None => {
                if !matches!(cli.command, Command::Serve(_) | Command::McpStdio(_)) {
                    quiet_on_closed_pipe();
                }
                run(cli)
            }
        },
        Err(e) => usage_error(&e, wants_json(&args)),
    }
}

/// A `--min-confidence` share: a number from 0 to 1, else a usage error (exit 2) saying so.
fn share(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(x) if (0.0..=1.0).contains(&x) => Ok(x),
        Ok(x) => Err(format!(
            "{x} is outside 0 to 1; give a share such as 0.9 (keeps proposals that were right \
             about 9 times in 10), or leave the flag out"
        )),
        Err(_) => Err(format!(
            "'{text}' is not a number; give a share from 0 to 1 such as 0.9"
        )),
    }
}

/// A `resolve` argument: `KEY=VALUE`, else a usage error (exit 2) saying so.
fn key_value(text: &str) -> Result<String, String> {
    crate::ontology::parse_pairs(&[text.to_string()]).map(|_| text.to_string())
}

/// A command line tool whose reader went away (`govcat index | head -1`) stops quietly, as
/// `ls` or `grep` do: the default SIGPIPE action, which Rust's runtime replaces with "ignore"
/// (so that `println!` panics with "Broken pipe"). Not for the servers: a client closing its
/// connection must never end them.
fn quiet_on_closed_pipe() {
    // SAFETY: called on the main thread before any other thread exists; it only restores the
    // default disposition of one signal.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// A combination of flags clap accepts but govcat cannot run, as clap's usage error of the
/// subcommand (so it reads and exits like one).
pub fn usage_problem(cli: &Cli) -> Option<clap::Error> {
    use clap::CommandFactory;
    let Command::Serve(args) = &cli.command else {
        return None;
    };
    let why = args.conflict()?;
    let mut command = Cli::command();
    command.build();
    let serve = command.find_subcommand_mut("serve")?;
    Some(serve.error(clap::error::ErrorKind::ArgumentConflict, why))
}

/// Whether `--json` is among the arguments (before a `--`), for an error clap raised before
/// the options were parsed.
pub fn wants_json(args: &[std::ffi::OsString]) -> bool {
    args.iter()
        .skip(1)
        .take_while(|a| a.as_os_str() != "--")
        .any(|a| a.as_os_str() == "--json")
}

/// The JSON form of an argument error: clap's message and tips as `message` (with the `--help`
/// to read), the usage line as `usage`. `None` for `--help` and `--version`, which are not
/// errors.
pub fn usage_json(e: &clap::Error) -> Option<Value> {
    use clap::error::ErrorKind;
    if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
        return None;
    }
    let text = e.render().to_string();
    let mut problem = Vec::new();
    let mut usage = String::new();
    for line in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(u) = line.strip_prefix("Usage: ") {
            usage = u.to_string();
        } else if line.starts_with("For more information") {
        } else {
            problem.push(line.strip_prefix("error: ").unwrap_or(line).to_string());
        }
    }
    let command: Vec<&str> = usage
        .split_whitespace()
        .take_while(|w| !w.starts_with('[') && !w.starts_with('<'))
        .collect();
    let command = if command.is_empty() {
        "govcat".to_string()
    } else {
        command.join(" ")
    };
    Some(json!({
        "error": "Usage",
        "message": format!("{}; run `{command} --help` for the arguments", join_lines(&problem)),
        "usage": usage,
    }))
}

/// Lines of a message as one: `; ` between them, a space after a line ending in `:`.
fn join_lines(lines: &[String]) -> String {
    let mut out = String::new();
    for line in lines {
        if !out.is_empty() {
            out += if out.ends_with(':') { " " } else { "; " };
        }
        out += line;
    }
    out
}

fn usage_error(e: &clap::Error, json: bool) -> ExitCode {
    match usage_json(e) {
        Some(v) if json => {
            print_json(&v);
            ExitCode::from(USAGE_EXIT)
        }
        _ => e.exit(),
    }
}

/// Runs the CLI and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    let (tool, args) = match &cli.command {
        // [dispatch] — commands that are not a single tool call return from here.
        Command::Record { out } => return run_record(&cli.options, out),
        Command::Index(args) => return index::run_index(&cli.options, args),
        Command::Eval { what } => return run_eval(&cli.options, what),
        Command::Search {
            query,
            alternatives,
            domains,
            kinds,
            limit,
            cursor,
            mode,
            identifier,
        } => {
            let mut args = json!({"description": query, "limit": limit, "mode": mode});
            if !alternatives.is_empty() {
                args["alternatives"] = json!(alternatives);
            }
            if !domains.is_empty() {
                args["domains"] = json!(domains);
            }
            if !kinds.is_empty() {
                args["kinds"] = json!(kinds);
            }
            if let Some(c) = cursor {
                args["cursor"] = json!(c);
            }
            if let Some(i) = identifier {
                args["identifier"] = json!(i);
            }
            return run_tool(&cli.options, true, "find_precedents", args);
        }
        Command::Suggest {
            query,
            alternatives,
            min_confidence,
            domain,
            table,
            identifier,
        } => {
            let mut args = json!({ "description": query });
            if !alternatives.is_empty() {
                args["alternatives"] = json!(alternatives);
            }
            if let Some(m) = min_confidence {
                args["min_confidence"] = json!(m);
            }
            if let Some(d) = domain {
                args["domain"] = json!(d);
            }
            if let Some(t) = table {
                args["table"] = json!(t);
            }
            if let Some(i) = identifier {
                args["identifier"] = json!(i);
            }
            return run_tool(&cli.options, true, "suggest_tags", args);
        }
        Command::Serve(args) => return crate::server::run_serve(&cli.options, args),
        Command::McpStdio(args) => return crate::server::run_mcp_stdio(&cli.options, args),
        Command::ListDomains {
            include_ontology,
            include_glossary,
        } => {
            let mut args = serde_json::Map::new();
            if *include_ontology {
                args.insert("include_ontology".into(), json!(true));
            }
            if *include_glossary {
                args.insert("include_glossary".into(), json!(true));
            }
            // The glossary is the served snapshot's: load it (and the model) only then.
            let args = serde_json::Value::Object(args);
            return run_tool(&cli.options, *include_glossary, "list_domains", &args);
        }
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
                            return report_error(&cli.options, &e);
                        }
                    }
                }
                ("resolve_lf_tag", json!({ "tags": map }))
            }
            Err(problem) => {
                return report_error(&cli.options, &ToolError::new("InvalidArguments", problem))
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
    run_tool(&cli.options, false, tool, &args)
}

/// Builds the context (with the model and the current snapshot when `retrieval` is set) and
/// runs one tool, printing its outcome.
fn run_tool<A: std::borrow::Borrow<Value>>(
    options: &Options,
    retrieval: bool,
    tool: &str,
    args: A,
) -> ExitCode {
    let built = if retrieval {
        retrieval_context(options)
    } else {
        context(options)
    };
    let ctx = match built {
        Ok(ctx) => ctx,
        Err(e) => return report_error(options, &e),
    };
    match tools::call(&ctx, &Caller::local(), tool, args.borrow().clone()) {
        Outcome::Ok(value) => {
            if options.json {
                print_json(&value);
            } else {
                use std::io::Write;
                let _ = write!(std::io::stdout().lock(), "{}", render(tool, &value));
            }
            ExitCode::SUCCESS
        }
        Outcome::InputRequired(ask) => {
            if options.json {
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
        Outcome::Err(e) => report_error(options, &e),
    }
}

/// [`context`] plus the embedding model and the snapshot `--index` points at, checked to be of
/// the catalog and ontology in use.
pub fn retrieval_context(options: &Options) -> Result<Context, ToolError> {
    let ctx = context(options)?;
    let embedder = load_embedder()?;
    let handle = crate::index::SnapshotHandle::new();
    let snapshot = crate::app::load_snapshot(
        options,
        embedder.as_ref(),
        &ctx.ontology,
        ctx.source.as_ref(),
    )?;
    handle.swap(snapshot);
    Ok(ctx.with_retrieval(embedder, handle))
}
