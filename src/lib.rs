//! govcat: a governed data catalog for AI assistants. It answers questions *about* datasets
//! (who owns claims? how are IBAN columns classified? would this role reach that table?) from
//! the catalog — a closed set of entries and a 21-value tag ontology — never from a model's
//! memory and never from the rows themselves.
//!
//! # Layout
//! Dependencies point down this list: a module uses only the modules listed above it
//! (`tests/layers.rs` checks every `crate::` path against this order).
//! - [`limits`]: every bound on what a caller may send (argument sizes, request body, requests
//!   in flight), as named constants; enforced by `tools` and `server`.
//! - [`timestamp`]: the `YYYY-MM-DDTHH:MM:SSZ` timestamps govcat writes and reads back.
//! - [`text`]: word handling shared by the glossary, indexing and querying — identifier
//!   splitting, folding, run-together words split against the catalog's vocabulary.
//! - [`ontology`]: the LF-tag vocabulary (5 keys, 21 values), its loader and `resolve()`, and
//!   the German→English glossary and the abbreviation lexicon loaded beside it
//!   (`ontology::glossary`).
//! - [`calibration`]: calibrated confidence of tag proposals — the evidence a proposal rests
//!   on, the monotone per-key map fitted on the catalog's own leave-one-out (stored in the
//!   snapshot), and the measures `eval tags` reports it with (reliability, ECE, coverage).
//! - [`precedent`]: how likely a `find_precedents` entry is a direct precedent
//!   (`precedent_confidence`): its evidence and the logistic map fitted once on every labelled
//!   query set.
//! - [`catalog`]: domains, datasets, columns and their four-state tags; the parse boundary
//!   (`catalog::boundary`) every source goes through, the `dir` source (`catalog::dir`) and the
//!   `aws` source (`catalog::aws`: Glue, Lake Formation, STS; `govcat record`).
//! - [`embed`]: the `Embedder` trait and the all-MiniLM-L6-v2 backend (candle; a query's
//!   forward pass runs on one of a fixed set of threads, one per core), plus a small
//!   deterministic embedder for plumbing tests.
//! - [`index`]: snapshots — documents (German words and abbreviations also in English, via the
//!   glossary, run-together names also as their parts; a column's vector also embeds its
//!   table's description), the tantivy (BM25, exact column name) and dense (exact scan or HNSW) indexes, the
//!   manifest, embedding reuse across rebuilds, atomic publish (unattended rebuilds refuse a
//!   catalog that shrank), checked load, per-document scope ids, hot swap and the file watcher.
//!   Rooms: `index/build.rs` (collect → expand → embed → write → calibrate → publish),
//!   `index/format.rs` (the files on disk, the manifest, publishing `CURRENT`, loading),
//!   `index/graph.rs` (the served HNSW graph and its search) with `index/graph/patch.rs` (a
//!   rebuild's graph patched from the published one), `index/codes.rs` (what a served graph
//!   walks: one-byte codes of the vectors in memory, the final candidates scored from the f32
//!   rows read from the file), `index/slices.rs` (a first build's
//!   embedding spread over machines: slice files, and the merge reading them),
//!   `index/reuse.rs` (which documents and vector rows of a new snapshot an older one holds,
//!   for the follower), `index/lexical.rs` (the tantivy index; a search can be split by
//!   segment so that a hybrid search's two threads share it).
//! - [`retrieval`]: hybrid search over a snapshot in stages (candidates per side within the
//!   caller's scope, reciprocal-rank fusion with the similarity floor, key columns weighted
//!   down unless an identifier is asked for, total order — per phrasing, the description and
//!   each of the caller's alternatives — then the phrasings' lists fused into one), its
//!   `Params` (every tunable weight, `govcat eval --param`; `retrieval/params.rs`), cursors
//!   (`retrieval/cursor.rs`), suggestions from the caller's words.
//! - [`tools`]: each tool defined once — schemas, handler, envelope (`ttlMs`, `cacheScope`) —
//!   and one dispatcher (`tools::call`) shared by every transport; `tools/spec.rs` is the tool
//!   list published from those definitions (portable schemas, the server instructions in the
//!   served ontology's words, the output check); `tools/suggest_tags/vote.rs`
//!   is how precedents vote on a key (weights, the strict lean of ordered keys, conflicts),
//!   `tools/suggest_tags/target.rs` where the new column goes (domain and table resolved).
//! - [`prompts`]: the prompts a host offers as slash commands (`tag-new-column`,
//!   `review-grant`) — arguments and message text that drive the tools in order; read nothing.
//! - [`auth`]: bearer tokens (JWT, RS256/ES256, JWKS by `kid`) → a `Principal` and its
//!   `Caller`; RFC 6750 challenges, RFC 9728 metadata, the axum middleware.
//! - [`audit`]: one JSON line per call (who and from where, which tool, arguments without
//!   credentials and with data values masked (`audit/mask.rs`: IBAN, card, e-mail, phone,
//!   national ids), outcome, and for a refusal its reason).
//! - [`app`]: the wiring `server` and `cli` share — the global options, the tool `Context`
//!   built from them, the embedding model, and how an error is reported to the user.
//! - [`sync`]: published snapshots — `govcat index --publish` to S3 or a shared directory
//!   (the location proved writable before the build, every file read back before CURRENT is
//!   written last, `--keep`), the slice files of a first build spread over machines
//!   (`--slices-to`, `--slices-from`), and the follower of `govcat serve --follow` (fetch what
//!   CURRENT names, skip files already present, copy the documents and vectors the served
//!   snapshot holds and read the rest by ranged reads, verify, swap; failures keep the served
//!   one; store copies that differ from the manifest are reported as `store_error`).
//! - [`server`]: the axum app (MCP over Streamable HTTP at `/mcp` with bounded sessions, REST
//!   `/v1/tools`, health, metrics, RFC 9728 metadata) behind the token guard, and MCP over
//!   stdio; thin adapters over `tools::call` that audit every call and refuse to answer one
//!   they could not audit. `server/conn.rs` is the accept loop (read timeouts, the connection
//!   cap, the drain on SIGTERM), `server/args.rs` holds the serve flags, `server/hosts.rs` the
//!   Host/Origin policy, `server/portable.rs` sealed session ids (`--session-key-file`) that
//!   any replica sharing the key restores, `server/supply.rs` where the served snapshot comes from (start,
//!   `--refresh`, `--watch`, `--follow`); `server/mod.rs` the app state and the entry points;
//!   `server/mcp.rs` the MCP handler with `mcp/listing.rs` (tool and prompt lists),
//!   `mcp/ask.rs` (`input_required` in MCP) and `mcp/hints.rs` (prompt cache hints).
//! - [`eval`]: quality measured on any catalog (`govcat eval queries|tags`): recall, MRR,
//!   nDCG and leave-one-out tag accuracy, each next to a textbook baseline of the same run;
//!   JSON and a self-contained HTML report. The `quality` bench uses the same code.
//! - [`cli`]: the `govcat` command line, a thin adapter over `tools`; `cli/index.rs` builds and
//!   publishes snapshots, `cli/eval.rs` runs `govcat eval`, `cli/render.rs` prints tool output
//!   for people.

/// Default snapshot directory, relative to the working directory.
pub const DEFAULT_INDEX_DIR: &str = "index";

pub mod app;
pub mod audit;
pub mod auth;
pub mod calibration;
pub mod catalog;
pub mod cli;
pub mod embed;
pub mod eval;
pub mod index;
pub mod limits;
pub mod ontology;
pub mod precedent;
pub mod prompts;
pub mod retrieval;
pub mod server;
pub mod sync;
pub mod text;
pub mod timestamp;
pub mod tools;
