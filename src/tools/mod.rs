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
pub mod suggest_tags;

use std::sync::{Arc, OnceLock};
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

/// The static description of a tool, shared by every transport.
#[derive(Debug, Clone, Serialize)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    #[serde(rename = "inputSchema")]
    pub input_schema: Value,
    #[serde(rename = "outputSchema")]
    pub output_schema: Value,
}

/// The one place schemas are generated: JSON Schema 2020-12 that strict and single-`type`
/// clients take as it is.
/// - Only the formats the draft defines: schemars writes OpenAPI-style formats for numbers
///   (`uint32`, `uint`, `int64`, `double`), which validators reject or warn about as unknown;
///   the bound they imply is already there as `minimum: 0` for unsigned integers.
/// - A nullable field (`type: [T, "null"]`) is written `anyOf: [{type: T}, {type: "null"}]`
///   ([`NullableAsAnyOf`]): the same instances, in a form every client can map.
fn schema<T: JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft2020_12()
        .with_transform(schemars::transform::RestrictFormats::default())
        .with_transform(NullableAsAnyOf)
        .into_generator();
    serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null)
}

/// Keywords that describe a schema rather than constrain it: they stay on the outer schema
/// when [`NullableAsAnyOf`] moves the constraints into the non-null branch.
const ANNOTATIONS: [&str; 7] = [
    "title",
    "description",
    "default",
    "examples",
    "deprecated",
    "readOnly",
    "writeOnly",
];

/// Rewrites `{"type": [T, "null"], ...constraints}` as
/// `{"anyOf": [{"type": T, ...constraints}, {"type": "null"}]}`, annotations kept outside.
#[derive(Debug, Clone, Copy)]
pub struct NullableAsAnyOf;

impl schemars::transform::Transform for NullableAsAnyOf {
    fn transform(&mut self, schema: &mut schemars::Schema) {
        schemars::transform::transform_subschemas(self, schema);
        let Some(obj) = schema.as_object_mut() else {
            return;
        };
        let Some(Value::Array(types)) = obj.get("type") else {
            return;
        };
        let null = Value::String("null".into());
        let [first, second] = types.as_slice() else {
            return;
        };
        let non_null = match (first == &null, second == &null) {
            (false, true) => first.clone(),
            (true, false) => second.clone(),
            _ => return,
        };
        let mut branch = Map::new();
        branch.insert("type".into(), non_null);
        let constraints: Vec<String> = obj
            .keys()
            .filter(|k| *k != "type" && !ANNOTATIONS.contains(&k.as_str()))
            .cloned()
            .collect();
        for key in constraints {
            if let Some(v) = obj.remove(&key) {
                branch.insert(key, v);
            }
        }
        obj.remove("type");
        obj.insert(
            "anyOf".into(),
            json!([Value::Object(branch), {"type": "null"}]),
        );
    }
}

/// The published form of an input schema: what every client stack we test converts for its
/// model without losing an argument's meaning (`scripts/test-mcp.sh`, frameworks suite).
/// - `$ref`s are inlined and `$defs` dropped: strict converters (OpenAI Agents) refuse a bare
///   `$ref`, and Gemini's replaces the property's description with the target's. The property's
///   own keywords win over the target's.
/// - No boolean `additionalProperties`: Gemini's converter takes the keyword's value for a
///   schema and crashes on `false`; strict converters close every object themselves. The server
///   still refuses an unknown argument by name (`deny_unknown_fields` on every `Input`).
/// - Every object has `properties` (LangChain's `StructuredTool.args` reads it).
/// - A nullable property's description is on its non-null branch only: Gemini unwraps
///   `anyOf: [X, null]` to `X` and keeps only what `X` says, and every other stack shows the
///   branch as it is (written once, not twice: a blind host counted the copies).
/// - The root's `title` (the Rust type's name, `Input`) is dropped: it tells a model nothing.
pub fn portable_input(mut schema: Value) -> Value {
    let defs = schema
        .as_object_mut()
        .and_then(|root| {
            root.remove("title");
            root.remove("$defs")
        })
        .and_then(|d| d.as_object().cloned())
        .unwrap_or_default();
    portable_node(&mut schema, &defs);
    schema
}

fn portable_node(node: &mut Value, defs: &Map<String, Value>) {
    let Some(obj) = node.as_object_mut() else {
        return;
    };
    if let Some(Value::String(reference)) = obj.remove("$ref") {
        let target = reference
            .strip_prefix("#/$defs/")
            .and_then(|name| defs.get(name))
            .and_then(Value::as_object);
        for (k, v) in target.into_iter().flatten() {
            obj.entry(k.clone()).or_insert_with(|| v.clone());
        }
    }
    if obj
        .get("additionalProperties")
        .is_some_and(Value::is_boolean)
    {
        obj.remove("additionalProperties");
    }
    if obj.get("type") == Some(&json!("object")) {
        obj.entry("properties").or_insert_with(|| json!({}));
    }
    if let Some(Value::Object(props)) = obj.get_mut("properties") {
        for prop in props.values_mut() {
            portable_node(prop, defs);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(sub) = obj.get_mut(key) {
            portable_node(sub, defs);
        }
    }
    let nullable = obj
        .get("anyOf")
        .and_then(Value::as_array)
        .is_some_and(|branches| branches.len() == 2 && branches.contains(&json!({"type": "null"})));
    let description = if nullable {
        obj.remove("description")
    } else {
        None
    };
    if let Some(Value::Array(branches)) = obj.get_mut("anyOf") {
        for branch in branches.iter_mut() {
            portable_node(branch, defs);
            if let (Some(d), Some(b)) = (&description, branch.as_object_mut()) {
                if b.get("type") != Some(&json!("null")) {
                    b.insert("description".into(), d.clone());
                }
            }
        }
    }
}

/// A tool's published input schema: generated from its `Input` type, in the portable form.
fn input_schema<T: JsonSchema>() -> Value {
    portable_input(schema::<T>())
}

/// A validator for one of govcat's schemas under JSON Schema 2020-12 that checks formats and
/// refuses a schema with a format the draft does not define (what strict clients do).
pub fn strict_validator(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(true)
        .should_ignore_unknown_formats(false)
        .build(schema)
        .map_err(|e| e.to_string())
}

/// The ontology the tool list speaks until a [`Context`] names one: the shipped file (the
/// default `--ontology`), compiled in like the built-in abbreviations.
const BUILT_IN_ONTOLOGY: &str = include_str!("../../ontology/lf-tags.json");

/// The tool list of the ontology last published, the instructions that go with it, and that
/// ontology's vocabulary.
struct Published {
    vocabulary: String,
    specs: &'static [ToolSpec],
    instructions: &'static str,
}

static PUBLISHED: std::sync::RwLock<Option<Published>> = std::sync::RwLock::new(None);

/// Makes `ontology` the one the tool list speaks (resolve_lf_tag's tag schema: one property per
/// key, its values as an enum) and returns that list. A list is built once per vocabulary and
/// kept for the life of the process, so `&'static` handles stay valid across a rebuild that
/// changes the ontology (a few tens of KB per governance edit).
pub fn publish_ontology(ontology: &Ontology) -> &'static [ToolSpec] {
    let vocabulary = serde_json::to_string(&ontology.keys).unwrap_or_default();
    let mut published = PUBLISHED.write().unwrap_or_else(|e| e.into_inner());
    if let Some(p) = published.as_ref().filter(|p| p.vocabulary == vocabulary) {
        return p.specs;
    }
    let specs: &'static [ToolSpec] = Box::leak(build_specs(ontology).into_boxed_slice());
    let instructions: &'static str = Box::leak(render_instructions(ontology).into_boxed_str());
    *published = Some(Published {
        vocabulary,
        specs,
        instructions,
    });
    specs
}

/// All tools, in a fixed order, as the ontology last published speaks them.
pub fn specs() -> &'static [ToolSpec] {
    if let Some(p) = PUBLISHED.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.specs;
    }
    publish_built_in();
    specs()
}

/// What a host reads before the tool list (MCP's `instructions`), in the vocabulary of the
/// ontology last published: the order of the tools, the ontology's keys and values and where a
/// host without resource support reads them, how search text is read, and the list keywords
/// (`ttlMs`, `cacheScope`, `x-mcp-header`) that are not tool arguments.
pub fn instructions() -> &'static str {
    if let Some(p) = PUBLISHED.read().unwrap_or_else(|e| e.into_inner()).as_ref() {
        return p.instructions;
    }
    publish_built_in();
    instructions()
}

fn publish_built_in() {
    match Ontology::parse(
        BUILT_IN_ONTOLOGY,
        std::path::Path::new("ontology/lf-tags.json"),
    ) {
        Ok(ontology) => {
            publish_ontology(&ontology);
        }
        Err(e) => panic!("the built-in ontology does not parse: {e}"),
    }
}

/// The instructions text of `ontology` (see [`instructions`]). Ranking internals stay out:
/// `docs/search.md` holds them.
fn render_instructions(ontology: &Ontology) -> String {
    let vocabulary: Vec<String> = ontology
        .keys
        .iter()
        .map(|k| {
            let values: Vec<&str> = k.values.iter().map(|v| v.value.0.as_str()).collect();
            format!("{} ({})", k.key.0, values.join(", "))
        })
        .collect();
    let ordered: Vec<&str> = ontology
        .keys
        .iter()
        .filter(|k| k.ordered)
        .map(|k| k.key.0.as_str())
        .collect();
    let order = match ordered.as_slice() {
        [] => String::new(),
        keys => format!(
            " The values of {} are listed from least to most strict (a conflict leans to the \
             stricter).",
            keys.join(" and ")
        ),
    };
    format!(
        "govcat answers questions about the datasets of a governed catalog (owners, schemas, \
         column classifications, LF-tag grants) from the catalog itself, never from memory and \
         never from the rows. To tag a new column: find_precedents and suggest_tags with the same \
         description, alternatives and identifier, in the same turn (suggest_tags runs that search \
         itself, over columns only; find_precedents also shows ontology values), the user decides, \
         then resolve_lf_tag; read a dataset live with get_dataset before acting on its tags. A question \
         of where such data is or how existing columns are classified needs find_precedents alone. One search \
         per kind of data (lat and long, or start and end time, share one). identifier, when \
         given, applies to every phrasing. alternatives: 3-5 is typical, at most 8. A domain the catalog lacks is \
         an error listing the domains you may read (list_domains names them too); suggest_tags \
         instead answers from precedents only and says so in target_note. Tag values come from a closed ontology: {}.{} \
         Read it from the resource govcat://ontology/lf-tags or, without resource support, with \
         list_domains include_ontology true. When no value of a key fits the data, say so and \
         let the user decide; never invent one. An optional argument sent as null is the same \
         as omitted. Search text: no word excludes (not, without, kein, a \
         leading -); word* is a prefix, \"quoted words\" a phrase; \
         identifiers split at _ and camelCase; German words and common column abbreviations \
         (cust, addr, dob, txn, nr) are expanded for you, as request.glossary_terms shows \
         (list_domains include_glossary true lists them all); \
         acronyms that are English stop words (IT, AS, OR, IS, AT, IN, ON, NO, AM, DO) match by \
         meaning only, so spell them out. ttlMs and cacheScope on a list or an answer: how many milliseconds it may be \
         reused, and whether it may be shared between users (public) or not (private). \
         x-mcp-header on domain: the client also sends it as an HTTP header for routing, which is \
         why domain there is a plain string: omit it rather than send null.",
        vocabulary.join("; "),
        order
    )
}

fn build_specs(ontology: &Ontology) -> Vec<ToolSpec> {
    vec![
        ToolSpec {
            name: "find_precedents",
            title: "Find precedent columns and ontology values",
            description: find_precedents::DESCRIPTION,
            input_schema: input_schema::<find_precedents::Input>(),
            output_schema: schema::<find_precedents::Output>(),
        },
        ToolSpec {
            name: "suggest_tags",
            title: "Suggest tags from precedent, with evidence",
            description: suggest_tags::DESCRIPTION,
            input_schema: input_schema::<suggest_tags::Input>(),
            output_schema: schema::<suggest_tags::Output>(),
        },
        ToolSpec {
            name: "list_domains",
            title: "List catalog domains",
            description: list_domains::DESCRIPTION,
            input_schema: input_schema::<list_domains::Input>(),
            output_schema: schema::<list_domains::Output>(),
        },
        ToolSpec {
            name: "get_dataset",
            title: "Read one dataset live",
            description: get_dataset::DESCRIPTION,
            input_schema: input_schema::<get_dataset::Input>(),
            output_schema: schema::<get_dataset::Output>(),
        },
        ToolSpec {
            name: "resolve_lf_tag",
            title: "Validate a tag set against the ontology",
            description: resolve::DESCRIPTION,
            input_schema: resolve::input_schema(ontology, input_schema::<resolve::Input>()),
            output_schema: schema::<resolve::Output>(),
        },
        ToolSpec {
            name: "check_grant_expression",
            title: "Evaluate a role's LF-tag grant on a dataset",
            description: check_grant::DESCRIPTION,
            input_schema: input_schema::<check_grant::Input>(),
            output_schema: schema::<check_grant::Output>(),
        },
    ]
}

pub fn spec(name: &str) -> Option<&'static ToolSpec> {
    specs().iter().find(|s| s.name == name)
}

fn validator(name: &str) -> Option<&'static jsonschema::Validator> {
    static VALIDATORS: OnceLock<Vec<(&'static str, jsonschema::Validator)>> = OnceLock::new();
    VALIDATORS
        .get_or_init(|| {
            specs()
                .iter()
                .filter_map(|s| strict_validator(&s.output_schema).ok().map(|v| (s.name, v)))
                .collect()
        })
        .iter()
        .find(|(n, _)| *n == name)
        .map(|(_, v)| v)
}

/// Checks a tool's output against its `outputSchema`.
pub fn validate_output(name: &str, output: &Value) -> Result<(), ToolError> {
    let v = validator(name).ok_or_else(|| {
        ToolError::new(
            "InternalError",
            format!("tool '{name}' has no compiled output schema; report this to the govcat maintainers"),
        )
    })?;
    match v.iter_errors(output).next() {
        None => Ok(()),
        Some(e) => Err(ToolError::new(
            "OutputSchemaViolation",
            format!(
                "tool '{name}' produced output that violates its schema at {}: {e}; the answer was withheld; report this to the govcat maintainers",
                e.instance_path
            ),
        )),
    }
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
    fn the_portable_form_inlines_references_and_keeps_the_propertys_own_words() {
        let generated = json!({
            "type": "object",
            "additionalProperties": false,
            "title": "Input",
            "properties": {
                "mode": {"description": "hybrid, bm25 or dense.", "anyOf": [{"$ref": "#/$defs/Mode"}, {"type": "null"}], "default": null},
                "domains": {"anyOf": [{"type": "array", "items": {"$ref": "#/$defs/Domain"}}, {"type": "null"}]},
                "nothing": {"type": "object", "additionalProperties": false}
            },
            "$defs": {
                "Mode": {"description": "Which sides run.", "type": "string", "enum": ["hybrid", "bm25", "dense"]},
                "Domain": {"description": "A domain name.", "type": "string"}
            }
        });
        assert_eq!(
            portable_input(generated),
            json!({
                "type": "object",
                "properties": {
                    "mode": {"anyOf": [
                        {"description": "hybrid, bm25 or dense.", "type": "string", "enum": ["hybrid", "bm25", "dense"]},
                        {"type": "null"}
                    ], "default": null},
                    "domains": {"anyOf": [
                        {"type": "array", "items": {"description": "A domain name.", "type": "string"}},
                        {"type": "null"}
                    ]},
                    "nothing": {"type": "object", "properties": {}}
                }
            })
        );
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

    /// The instructions speak the vocabulary they are rendered from, not the demo's.
    #[test]
    fn the_instructions_list_the_loaded_ontologys_keys_and_values() {
        let saas = r#"{"version": "2", "owner": "gov", "description": "SaaS tags", "keys": [
            {"key": "data_class", "description": "What kind of data.", "values": [
                {"value": "pii", "description": "Personal.", "implies": "masking"},
                {"value": "public", "description": "Open.", "implies": "none"}]}]}"#;
        let ontology = Ontology::parse(saas, std::path::Path::new("saas.json")).unwrap();
        let text = render_instructions(&ontology);
        assert!(
            text.contains("closed ontology: data_class (pii, public)."),
            "{text}"
        );
        assert!(!text.contains("sensitivity"), "{text}");
        assert!(
            text.contains("list_domains include_ontology true"),
            "{text}"
        );
    }

    /// Rule 4: no description explains away an empty result.
    #[test]
    fn no_tool_description_explains_away_an_empty_result() {
        let banned = [
            "usually means",
            "probably",
            "likely means",
            "may not exist",
            "might not exist",
            "try a different",
            "no results means",
            "empty means",
            "does not exist",
            "typo",
            "wrong",
        ];
        for s in specs() {
            let d = s.description.to_lowercase();
            for phrase in banned {
                assert!(
                    !d.contains(phrase),
                    "tool {} description contains '{phrase}'",
                    s.name
                );
            }
        }
    }
}
