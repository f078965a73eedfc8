//! The tools: each defined once here — input type, output type, JSON schemas, description,
//! handler and result envelope — and exposed through thin adapters (CLI today; REST and MCP
//! later). This module knows nothing of HTTP or MCP. Every output is validated against its own
//! `outputSchema` on the way out; a violation is an internal error, never a silently wrong answer.
//!
//! Outcomes are disjoint (FIDELITY rule 9): a result, an `input_required` ask, or an error.

pub mod advice;
pub mod calibrate;
pub mod check_grant;
pub mod find_precedents;
pub mod get_dataset;
pub mod list_domains;
pub mod resolve;
mod spec;
pub mod suggest_tags;

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

pub use crate::catalog::Caller;
use crate::catalog::{CatalogError, CatalogSource, Domain, SourceFreshness};
use crate::embed::Embedder;
use crate::index::{Snapshot, SnapshotHandle};
use crate::ontology::{MissingKey, Ontology, OntologyError};
pub use advice::{Step, Surface};
pub use spec::{
    instructions, portable_input, publish_ontology, spec, specs, strict_validator, validate_output,
    NullableAsAnyOf, ToolSpec,
};
// Tool outputs and the tests read timestamps through `tools`; the helpers live at the bottom.
pub use crate::timestamp::{format_rfc3339, parse_rfc3339};

/// Shortest `ttlMs` we hand out when the source's cadence is unknown (rule 8).
pub const TTL_FLOOR: Duration = Duration::from_secs(30);
/// Longest `ttlMs` we hand out even when the next refresh is far away.
pub const TTL_CAP: Duration = Duration::from_secs(15 * 60);

/// Whether a cached answer may be shared between callers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum CacheScope {
    /// Same answer for every caller.
    Public,
    /// The answer depends on the caller's authorisation.
    Private,
}

/// `ttlMs` from freshness: up to the next expected refresh (capped), `0` only when measured
/// overdue, [`TTL_FLOOR`] when the cadence is unknown.
pub fn ttl_ms(now: SystemTime, last_refresh: Option<SystemTime>, every: Option<Duration>) -> u64 {
    match (last_refresh, every) {
        (Some(last), Some(every)) => {
            let next = last + every;
            match next.duration_since(now) {
                Ok(left) => left.min(TTL_CAP).as_millis() as u64,
                Err(_) => 0,
            }
        }
        _ => TTL_FLOOR.as_millis() as u64,
    }
}

/// Everything a tool needs, built once at start and shared.
pub struct Context {
    pub ontology: Ontology,
    pub source: Box<dyn CatalogSource>,
    pub clock: fn() -> SystemTime,
    /// The embedding model (retrieval tools only).
    pub embedder: Option<Arc<dyn Embedder>>,
    /// The served snapshot (retrieval tools only).
    pub snapshots: Option<SnapshotHandle>,
    /// Fusion weights and similarity floor.
    pub retrieval: crate::retrieval::Params,
    /// How often snapshots are rebuilt on a schedule (`--refresh`), when they are.
    pub snapshot_refresh_every: Option<Duration>,
    /// The source's own tag vocabulary compared with `ontology` (aws: ListLFTags), as read by
    /// the server at start and after each rebuild; shown in `/readyz`. `None` elsewhere.
    pub ontology_drift: Option<serde_json::Value>,
    /// Who reads this context's messages: how next steps are worded ([`advice`]).
    pub surface: Surface,
    /// The published location a replica follows (`serve --follow`): its snapshots come from
    /// there, so the next step for a missing one is to publish again, not to index here.
    pub follows: Option<String>,
}

impl Context {
    /// The context of `ontology` and `source`. Its ontology becomes the one the published tool
    /// list speaks ([`publish_ontology`]): resolve_lf_tag's schema names its keys and values.
    pub fn new(ontology: Ontology, source: Box<dyn CatalogSource>) -> Context {
        publish_ontology(&ontology);
        Context {
            ontology,
            source,
            clock: SystemTime::now,
            embedder: None,
            snapshots: None,
            retrieval: crate::retrieval::Params::default(),
            snapshot_refresh_every: None,
            ontology_drift: None,
            surface: Surface::default(),
            follows: None,
        }
    }

    /// Adds the embedder and snapshot handle the retrieval tools need.
    pub fn with_retrieval(
        mut self,
        embedder: Arc<dyn Embedder>,
        snapshots: SnapshotHandle,
    ) -> Context {
        self.embedder = Some(embedder);
        self.snapshots = Some(snapshots);
        self
    }

    /// This context with `fresh`'s ontology and source and everything else kept: what a
    /// rebuild after an ontology or catalog change serves from then on.
    pub fn with_catalog_of(&self, fresh: Context) -> Context {
        Context {
            ontology: fresh.ontology,
            source: fresh.source,
            clock: self.clock,
            embedder: self.embedder.clone(),
            snapshots: self.snapshots.clone(),
            retrieval: self.retrieval,
            snapshot_refresh_every: self.snapshot_refresh_every,
            ontology_drift: fresh.ontology_drift,
            surface: self.surface.clone(),
            follows: self.follows.clone(),
        }
    }

    /// The served snapshot and the embedder, or an error saying what to run.
    pub fn retrieval_parts(&self) -> Result<(Arc<Snapshot>, Arc<dyn Embedder>), ToolError> {
        let embedder = self.embedder.clone().ok_or_else(|| {
            ToolError::new(
                "EmbedderUnavailable",
                "this govcat was started without the embedding model; start it with the model present (scripts/fetch-model.sh)",
            )
        })?;
        Ok((self.snapshot()?, embedder))
    }

    /// The served snapshot, for answers that read it without searching (no model needed).
    pub fn snapshot(&self) -> Result<Arc<Snapshot>, ToolError> {
        self.snapshots
            .as_ref()
            .and_then(|h| h.current())
            .ok_or_else(|| {
                ToolError::new("NoSnapshot", "no snapshot is loaded").next(match &self.follows {
                    Some(location) => Step::Publish {
                        location: location.clone(),
                    },
                    None => Step::Index {
                        why: "and restart govcat, or wait for the running rebuild".into(),
                    },
                })
            })
    }

    /// `ttlMs` for answers read from a snapshot: until the next scheduled rebuild, else the floor.
    pub fn snapshot_ttl_ms(&self, snapshot: &Snapshot) -> u64 {
        ttl_ms(
            (self.clock)(),
            parse_rfc3339(&snapshot.manifest.built_at),
            self.snapshot_refresh_every,
        )
    }

    /// `ttlMs` for answers read from the catalog source.
    pub fn source_ttl_ms(&self) -> u64 {
        let f: SourceFreshness = self.source.freshness();
        let last = f.recorded_at.as_deref().and_then(parse_rfc3339);
        ttl_ms(
            (self.clock)(),
            last,
            f.refresh_every_secs.map(Duration::from_secs),
        )
    }

    /// Refuses a domain the caller may not read, naming the scope needed.
    pub fn require_domain(&self, caller: &Caller, domain: &Domain) -> Result<(), ToolError> {
        if caller.may_read(domain) {
            Ok(())
        } else {
            Err(ToolError::insufficient_scope(vec![Caller::scope_for(
                domain,
            )]))
        }
    }
}

/// Serialises an `f32` score to 3 decimal places as the answer shows it: an `f32` written as
/// JSON's double prints its binary noise (0.5809999704360962 for 0.581). Only the answer is
/// rounded; ranking and every figure computed from the value use it as computed.
pub fn shown_to_3_places<S: serde::Serializer>(x: &Option<f32>, s: S) -> Result<S::Ok, S::Error> {
    match x {
        Some(v) => s.serialize_some(&((f64::from(*v) * 1000.0).round() / 1000.0)),
        None => s.serialize_none(),
    }
}

/// The error kind of an argument over one of the bounds of [`crate::limits`].
pub const LIMIT_EXCEEDED: &str = "LimitExceeded";

/// A tool failure: a kind (`error`), a message with a next step, and structured details.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError {
    pub kind: String,
    pub message: String,
    /// Boxed, so that a `Result<_, ToolError>` stays small with [`ToolError::next`] beside it.
    pub details: Box<Map<String, Value>>,
    /// The next step, not yet in `message`: [`ToolError::advised`] words it for the surface
    /// the error reaches and appends it.
    pub next: Option<Box<Step>>,
}

impl ToolError {
    pub fn new(kind: &str, message: impl Into<String>) -> ToolError {
        ToolError {
            kind: kind.to_string(),
            message: message.into(),
            details: Box::default(),
            next: None,
        }
    }

    /// Sets the next step (worded later, for the surface the error reaches).
    pub fn next(mut self, step: Step) -> ToolError {
        self.next = Some(Box::new(step));
        self
    }

    /// The error as `surface` reads it: the next step worded for it and appended to the
    /// message (`problem; step`). An error already advised is returned as it is.
    pub fn advised(mut self, surface: &Surface) -> ToolError {
        if let Some(step) = self.next.take() {
            self.message = format!("{}; {}", self.message, step.render(surface));
        }
        self
    }

    pub fn with(mut self, key: &str, value: impl Serialize) -> ToolError {
        self.details.insert(
            key.to_string(),
            serde_json::to_value(value).unwrap_or(Value::Null),
        );
        self
    }

    /// A domain outside the caller's scopes, named by a request that must read that domain
    /// (`get_dataset`, `suggest_tags`, `check_grant_expression`, a resource).
    pub fn insufficient_scope(scopes: Vec<String>) -> ToolError {
        Self::scope_refusal(
            scopes,
            "call the tool `list_domains` to see the domains you may read",
        )
    }

    /// [`ToolError::insufficient_scope`] for a search narrowed to domains (`find_precedents`
    /// `domains`), which can leave them out.
    pub fn insufficient_search_scope(scopes: Vec<String>) -> ToolError {
        Self::scope_refusal(
            scopes,
            "leave `domains` out to search every domain you may read",
        )
    }

    fn scope_refusal(scopes: Vec<String>, instead: &str) -> ToolError {
        ToolError::new(
            "InsufficientScope",
            format!(
                "this request needs the scope(s) {} (a domain outside your scopes may not exist at all: without its scope neither is told); ask your administrator for them, or {instead}",
                scopes.join(" ")
            ),
        )
        .with("required_scopes", scopes)
    }

    /// An argument over its bound (see [`crate::limits`]): kind [`LIMIT_EXCEEDED`] with the
    /// bound's name (`limit`), its `max` and what was sent (`got`).
    pub fn limit_exceeded(
        limit: &str,
        max: usize,
        got: usize,
        message: impl Into<String>,
    ) -> ToolError {
        ToolError::new(LIMIT_EXCEEDED, message)
            .with("limit", limit)
            .with("max", max)
            .with("got", got)
    }

    /// `{"error": kind, "message": ..., details...}`.
    pub fn to_json(&self) -> Value {
        let mut m = Map::new();
        m.insert("error".into(), Value::String(self.kind.clone()));
        m.insert("message".into(), Value::String(self.message.clone()));
        for (k, v) in self.details.iter() {
            m.insert(k.clone(), v.clone());
        }
        Value::Object(m)
    }
}

impl std::fmt::Display for ToolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.kind, self.message)
    }
}

impl From<OntologyError> for ToolError {
    fn from(e: OntologyError) -> Self {
        let base = ToolError::new(e.kind(), e.to_string());
        match e {
            OntologyError::UnknownTagKey { key, allowed } => {
                base.with("key", key).with("allowed", allowed)
            }
            OntologyError::UnknownTagValue {
                key,
                value,
                allowed,
            } => base
                .with("key", key)
                .with("value", value)
                .with("allowed", allowed),
            OntologyError::ConflictingValues { key, values } => {
                base.with("key", key).with("values", values)
            }
            _ => base,
        }
    }
}

impl From<CatalogError> for ToolError {
    fn from(e: CatalogError) -> Self {
        let base = ToolError::new(e.kind(), e.to_string());
        match e {
            CatalogError::DomainNotFound { domain, .. } => {
                base.with("domain", domain).next(Step::ListDomains)
            }
            CatalogError::DatasetNotFound {
                domain,
                table,
                tables,
            } => base
                .with("domain", domain.clone())
                .with("table", table)
                .with("tables", tables)
                .next(Step::GetDataset { domain }),
            CatalogError::RoleNotFound { role, roles } => {
                base.with("role", role).with("roles", roles)
            }
            CatalogError::UpstreamDatabaseMissing {
                domain,
                database,
                account_id,
                ..
            } => base
                .with("domain", domain)
                .with("database", database)
                .with("account_id", account_id),
            _ => base,
        }
    }
}

impl From<crate::index::IndexError> for ToolError {
    fn from(e: crate::index::IndexError) -> Self {
        use crate::index::IndexError as E;
        let base = ToolError::new(e.kind(), e.to_string());
        let why = match &e {
            E::NoSnapshot { .. } => "to build one",
            E::Corrupt { .. } => "to rebuild the snapshot",
            E::FormatMismatch { .. } => {
                "to rebuild it in this govcat's format (a build reuses the vectors of a format-7 or later snapshot)"
            }
            E::ModelMismatch { .. } => "to rebuild it with the running model",
            E::Shrunk { .. } => "to publish the smaller catalog deliberately",
            _ => return base,
        };
        base.next(Step::Index { why: why.into() })
    }
}

/// An MRTR-style ask for missing arguments. Carries no `entries`, `hint` or echo (rule 9).
#[derive(Debug, Clone, PartialEq, Serialize, JsonSchema)]
pub struct InputRequired {
    pub message: String,
    pub missing: Vec<MissingKey>,
}

/// The three disjoint outcomes of a tool call.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Ok(Value),
    InputRequired(InputRequired),
    Err(ToolError),
}

fn parse_args<T: for<'de> Deserialize<'de>>(name: &str, args: Value) -> Result<T, ToolError> {
    let args = if args.is_null() { json!({}) } else { args };
    // serde would read an array as positional fields; the contract is an object by name.
    if !args.is_object() {
        let got = if args.is_array() {
            "an array"
        } else {
            "not an object"
        };
        return Err(ToolError::new(
            "InvalidArguments",
            format!("the arguments of '{name}' are {got}; send them as one JSON object keyed by argument name, as its inputSchema says"),
        ));
    }
    check_catalog_names(name, &args)?;
    serde_json::from_value(args).map_err(|e| {
        ToolError::new(
            "InvalidArguments",
            format!("arguments of '{name}' do not match its inputSchema: {e}; see the tool's inputSchema"),
        )
    })
}

/// Longest Glue database or table name.
const MAX_GLUE_NAME_CHARS: usize = 255;

/// `domain`, `table` and each of `domains` must be names Glue could hold: 1 to 255
/// characters, no control characters (Glue's single-line string pattern). Anything else names
/// nothing in any catalog, so it is refused by name instead of being read as a new table.
fn check_catalog_names(tool: &str, args: &Value) -> Result<(), ToolError> {
    let mut names: Vec<(&str, &str)> = Vec::new();
    for key in ["domain", "table"] {
        if let Some(v) = args.get(key).and_then(Value::as_str) {
            names.push((key, v));
        }
    }
    if let Some(list) = args.get("domains").and_then(Value::as_array) {
        names.extend(
            list.iter()
                .filter_map(Value::as_str)
                .map(|v| ("domains", v)),
        );
    }
    for (key, value) in names {
        let chars = value.chars().count();
        let problem = if chars == 0 {
            Some("is empty".to_string())
        } else if chars > MAX_GLUE_NAME_CHARS {
            Some(format!(
                "has {chars} characters, more than the {MAX_GLUE_NAME_CHARS} a Glue name may have"
            ))
        } else {
            value
                .chars()
                .find(|c| c.is_control() && *c != '\t')
                .map(|c| {
                    format!(
                        "holds the control character U+{:04X}, which no Glue name may hold",
                        c as u32
                    )
                })
        };
        if let Some(problem) = problem {
            let shown: String = value
                .chars()
                .take(60)
                .flat_map(char::escape_debug)
                .collect();
            return Err(ToolError::new(
                "InvalidArguments",
                format!("'{key}' of '{tool}' (\"{shown}\") {problem}; give the domain or table name as the catalog spells it (list_domains lists the domains you may read)"),
            )
            .with("argument", key.to_string()));
        }
    }
    Ok(())
}

fn to_outcome<T: Serialize>(name: &str, result: Result<T, ToolError>) -> Outcome {
    match result.and_then(|out| {
        serde_json::to_value(out).map_err(|e| ToolError::new("InternalError", e.to_string()))
    }) {
        Ok(value) => match validate_output(name, &value) {
            Ok(()) => Outcome::Ok(value),
            Err(e) => Outcome::Err(e),
        },
        Err(e) => Outcome::Err(e),
    }
}

/// Calls a tool by name with JSON arguments: the one dispatcher every transport uses. An
/// error's next step is worded for the context's [`Surface`].
pub fn call(ctx: &Context, caller: &Caller, name: &str, args: Value) -> Outcome {
    match dispatch(ctx, caller, name, args) {
        Outcome::Err(e) => Outcome::Err(e.advised(&ctx.surface)),
        other => other,
    }
}

fn dispatch(ctx: &Context, caller: &Caller, name: &str, args: Value) -> Outcome {
    match name {
        "find_precedents" => match parse_args::<find_precedents::Input>(name, args) {
            Ok(input) => to_outcome(name, find_precedents::run(ctx, caller, input)),
            Err(e) => Outcome::Err(e),
        },
        "suggest_tags" => match parse_args::<suggest_tags::Input>(name, args) {
            Ok(input) => to_outcome(name, suggest_tags::run(ctx, caller, input)),
            Err(e) => Outcome::Err(e),
        },
        "list_domains" => match parse_args::<list_domains::Input>(name, args) {
            Ok(input) => to_outcome(name, list_domains::run(ctx, caller, input)),
            Err(e) => Outcome::Err(e),
        },
        "get_dataset" => match parse_args::<get_dataset::Input>(name, args) {
            Ok(input) => to_outcome(name, get_dataset::run(ctx, caller, input)),
            Err(e) => Outcome::Err(e),
        },
        "resolve_lf_tag" => match parse_args::<resolve::Input>(name, args) {
            Ok(input) => match resolve::run(ctx, input) {
                Ok(resolve::Resolved::Complete(out)) => to_outcome(name, Ok(out)),
                Ok(resolve::Resolved::Ask(ask)) => Outcome::InputRequired(ask),
                Err(e) => Outcome::Err(e),
            },
            Err(e) => Outcome::Err(e),
        },
        "check_grant_expression" => match parse_args::<check_grant::Input>(name, args) {
            Ok(input) => to_outcome(name, check_grant::run(ctx, caller, input)),
            Err(e) => Outcome::Err(e),
        },
        other => Outcome::Err(
            ToolError::new(
                "UnknownTool",
                format!(
                    "no tool named '{other}'; available: {}",
                    specs()
                        .iter()
                        .map(|s| s.name)
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
            .with("tool", other),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    #[test]
    fn a_snapshot_of_another_format_names_the_rebuild_that_reuses_its_vectors() {
        let e = ToolError::from(crate::index::IndexError::FormatMismatch {
            file: "index/snapshots/s/manifest.json".into(),
            found: 7,
            reads: 8,
        });
        assert_eq!(e.kind, "SnapshotFormatMismatch");
        assert_eq!(
            e.message,
            "snapshot index/snapshots/s/manifest.json is in snapshot format 7, written by an older \
             govcat; this govcat reads format 8"
        );
        assert_eq!(
            e.next.as_deref(),
            Some(&Step::Index {
                why: "to rebuild it in this govcat's format (a build reuses the vectors of a \
                      format-7 or later snapshot)"
                    .into()
            })
        );
    }

    #[test]
    fn ttl_ends_before_the_next_refresh_on_a_fixed_clock() {
        let last = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let now = last + Duration::from_secs(600);
        // Refresh every 15 min, 10 min elapsed: 5 min left.
        assert_eq!(
            ttl_ms(now, Some(last), Some(Duration::from_secs(900))),
            300_000
        );
        // Far-away refresh is capped.
        assert_eq!(
            ttl_ms(now, Some(last), Some(24 * HOUR)),
            TTL_CAP.as_millis() as u64
        );
    }

    #[test]
    fn ttl_without_freshness_is_the_floor_and_zero_only_when_overdue() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        assert_eq!(ttl_ms(now, None, None), 30_000);
        assert_eq!(ttl_ms(now, Some(now), None), 30_000);
        let last = now - 2 * HOUR;
        assert_eq!(ttl_ms(now, Some(last), Some(HOUR)), 0);
    }

    /// The published form says nothing of other properties (Gemini's converter crashes on a
    /// boolean `additionalProperties`), so the refusal is the server's: by name, for every tool.
    #[test]
    fn every_tool_refuses_an_unknown_argument_by_name() {
        fn refused<T: for<'de> Deserialize<'de>>(name: &str, args: Value) -> String {
            match parse_args::<T>(name, args) {
                Ok(_) => panic!("{name} took an unknown argument"),
                Err(e) => {
                    assert_eq!(e.kind, "InvalidArguments", "{name}");
                    e.message
                }
            }
        }
        let colour = |mut args: Value| {
            args["colour"] = json!("red");
            args
        };
        let messages = [
            refused::<find_precedents::Input>(
                "find_precedents",
                colour(json!({"description": "x"})),
            ),
            refused::<suggest_tags::Input>("suggest_tags", colour(json!({"description": "x"}))),
            refused::<list_domains::Input>("list_domains", colour(json!({}))),
            refused::<get_dataset::Input>(
                "get_dataset",
                colour(json!({"domain": "d", "table": "t"})),
            ),
            refused::<resolve::Input>("resolve_lf_tag", colour(json!({"tags": {}}))),
            refused::<check_grant::Input>(
                "check_grant_expression",
                colour(json!({"role": "r", "domain": "d", "table": "t"})),
            ),
        ];
        for m in messages {
            assert!(m.contains("unknown field `colour`"), "{m}");
        }
        for s in specs() {
            assert_eq!(s.input_schema["type"], "object", "tool {}", s.name);
            assert_eq!(s.output_schema["type"], "object", "tool {}", s.name);
        }
    }

    #[test]
    fn an_f32_is_shown_to_3_places_without_its_binary_noise() {
        #[derive(Serialize)]
        struct Shown(#[serde(serialize_with = "shown_to_3_places")] Option<f32>);
        assert_eq!(f64::from(0.581f32).to_string(), "0.5809999704360962");
        assert_eq!(serde_json::to_string(&Shown(Some(0.581))).unwrap(), "0.581");
        assert_eq!(
            serde_json::to_string(&Shown(Some(0.5553))).unwrap(),
            "0.555"
        );
        assert_eq!(serde_json::to_string(&Shown(None)).unwrap(), "null");
    }
}
