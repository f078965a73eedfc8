//! govcat: a governed data catalog for AI assistants. It answers questions *about* datasets
//! (who owns claims? how are IBAN columns classified? would this role reach that table?) from
//! the catalog — a closed set of entries and a 21-value tag ontology — never from a model's
//! memory and never from the rows themselves.
//!
//! # Layout
//! Dependencies point down this list.
//! - [`ontology`]: the LF-tag vocabulary (5 keys, 21 values), its loader and `resolve()`.
//! - [`catalog`]: domains, datasets, columns and their four-state tags; the parse boundary
//!   (`catalog::boundary`) every source goes through, and the `dir` source (`catalog::dir`).
//! - [`embed`]: the `Embedder` trait and the all-MiniLM-L6-v2 backend (candle), plus a small
//!   deterministic embedder for plumbing tests.
//! - [`tools`]: each tool defined once — schemas, handler, envelope (`ttlMs`, `cacheScope`) —
//!   and one dispatcher (`tools::call`) shared by every transport.
//! - [`cli`]: the `govcat` command line, a thin adapter over `tools`.

/// Default snapshot directory, relative to the working directory.
pub const DEFAULT_INDEX_DIR: &str = "index";

pub mod catalog;
pub mod cli;
pub mod embed;
pub mod ontology;
pub mod tools;
