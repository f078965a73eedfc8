//! Published snapshots: `govcat index --publish` copies a finished snapshot to S3 or a shared
//! directory, `govcat serve --follow` fetches the one published there into the local `--index`,
//! verifies it with the load checks of [`crate::index`] and serves it.
//!
//! The published layout mirrors the local one: `PREFIX/snapshots/<id>/<file>` for every file of
//! the snapshot (the manifest included), and `PREFIX/CURRENT` holding the id, written last so a
//! reader never sees a `CURRENT` whose snapshot is incomplete. Snapshots are never modified
//! once published; `CURRENT` is the only object that changes.
//!
//! # Layout
//! This file holds what the submodules share: [`Location`] (what `--publish` / `--follow`
//! name) and [`SyncError`].
//! - [`s3`]: an S3 prefix as a store (aws-sdk-s3, the default credential chain and region,
//!   path-style addressing under `--s3-endpoint`, multipart above 8 MiB, errors that name the
//!   bucket/key, the S3 error code and the next step — for AccessDenied the IAM action).
//! - [`store`]: a store of published snapshots — an S3 prefix or a directory — and the object
//!   operations both offer (read, download with checksum, upload, list, delete).
//! - [`publish`]: `govcat index --publish` and `--keep`.
//! - [`slices`]: the slice files of a first build spread over machines (`govcat index
//!   --slice I/N --slices-to`, `--slices-from`), under `PREFIX/slices/`.
//! - [`follow`]: `govcat serve --follow`: one sync (fetch, verify, swap), the poll loop and the
//!   status `/readyz` and `/metrics` show.

pub mod follow;
pub mod publish;
pub mod s3;
pub mod slices;
pub mod store;

use std::path::PathBuf;

pub use store::Store;

/// `--keep` default: published snapshots kept under the prefix (CURRENT's always among them).
pub const DEFAULT_KEEP: usize = 3;

/// `--follow-interval` default, in seconds.
pub const DEFAULT_FOLLOW_INTERVAL_SECONDS: u64 = 30;

/// Where snapshots are published: `s3://BUCKET/PREFIX` or a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Location {
    S3 { bucket: String, prefix: String },
    Dir(PathBuf),
}

impl Location {
    /// Parses `s3://BUCKET[/PREFIX]` or a directory path.
    pub fn parse(text: &str) -> Result<Location, String> {
        if let Some(rest) = text.strip_prefix("s3://") {
            let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
            if bucket.is_empty() {
                return Err(format!(
                    "'{text}' names no bucket; write s3://BUCKET/PREFIX, e.g. s3://my-bucket/govcat"
                ));
            }
            return Ok(Location::S3 {
                bucket: bucket.to_string(),
                prefix: prefix.trim_matches('/').to_string(),
            });
        }
        if text.contains("://") {
            return Err(format!(
                "'{text}' is neither s3://BUCKET/PREFIX nor a directory; only S3 and directories are supported"
            ));
        }
        if text.is_empty() {
            return Err("the location is empty; write s3://BUCKET/PREFIX or a directory".into());
        }
        Ok(Location::Dir(PathBuf::from(text)))
    }

    /// The object `key` (relative to the prefix) as a message names it.
    pub fn object(&self, key: &str) -> String {
        match self {
            Location::S3 { bucket, prefix } if prefix.is_empty() => format!("s3://{bucket}/{key}"),
            Location::S3 { bucket, prefix } => format!("s3://{bucket}/{prefix}/{key}"),
            Location::Dir(dir) => dir.join(key).display().to_string(),
        }
    }
}

impl std::fmt::Display for Location {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Location::S3 { bucket, prefix } if prefix.is_empty() => write!(f, "s3://{bucket}"),
            Location::S3 { bucket, prefix } => write!(f, "s3://{bucket}/{prefix}"),
            Location::Dir(dir) => write!(f, "{}", dir.display()),
        }
    }
}

/// A failed publish or sync step: which object, what went wrong, what to do. `reason` is the
/// label of `govcat_follow_errors_total{reason}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{object}: {problem}; {next}")]
pub struct SyncError {
    pub reason: &'static str,
    pub object: String,
    pub problem: String,
    pub next: String,
}

impl SyncError {
    pub fn new(
        reason: &'static str,
        object: impl Into<String>,
        problem: impl Into<String>,
        next: impl Into<String>,
    ) -> SyncError {
        SyncError {
            reason,
            object: object.into(),
            problem: problem.into(),
            next: next.into(),
        }
    }
}

/// What a store says of one object without sending it: its size and, where the store keeps
/// it, its sha256 (hex). A directory re-reads the file for its sha256; S3 reports the checksum
/// it kept from the upload (single-part objects only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectStat {
    pub size: u64,
    pub sha256: Option<String>,
    /// Uploaded in parts (S3): no whole-file checksum can be kept for it.
    pub multipart: bool,
}

impl ObjectStat {
    /// Why this copy is not the file of `size` bytes with sha256 `expected`, if it is not.
    pub fn differs_from(&self, size: u64, expected: &str) -> Option<String> {
        if self.size != size {
            return Some(format!(
                "{} bytes where the manifest's file has {size}",
                self.size
            ));
        }
        match &self.sha256 {
            Some(sum) if !sum.eq_ignore_ascii_case(expected) => {
                Some(format!("sha256 {sum} where the manifest says {expected}"))
            }
            _ => None,
        }
    }
}

/// Every `reason` a [`SyncError`] carries, for the metric's label values.
pub const REASONS: [&str; 12] = [
    reason::MISSING,
    reason::CHECKSUM,
    reason::MANIFEST,
    reason::INCOMPATIBLE,
    reason::SOURCE_MISMATCH,
    reason::UNREACHABLE,
    reason::THROTTLED,
    reason::ACCESS_DENIED,
    reason::CREDENTIALS,
    reason::STORE,
    reason::LOCAL_IO,
    reason::STORE_ALTERED,
];

/// The reasons of [`SyncError`].
pub mod reason {
    /// An object (`CURRENT`, the manifest, a snapshot file) does not exist.
    pub const MISSING: &str = "missing_object";
    /// A downloaded file's sha256 differs from the manifest.
    pub const CHECKSUM: &str = "checksum_mismatch";
    /// `CURRENT` or the manifest cannot be read as one, or the snapshot fails a load check.
    pub const MANIFEST: &str = "invalid_snapshot";
    /// Another snapshot format or embedding model.
    pub const INCOMPATIBLE: &str = "incompatible";
    /// Built from another catalog or ontology than this replica's.
    pub const SOURCE_MISMATCH: &str = "source_mismatch";
    /// No answer (connection refused, DNS, timeout) or a 5xx.
    pub const UNREACHABLE: &str = "unreachable";
    /// SlowDown / 429 / 503 throttling.
    pub const THROTTLED: &str = "throttled";
    pub const ACCESS_DENIED: &str = "access_denied";
    /// The server's own AWS credentials are missing or invalid.
    pub const CREDENTIALS: &str = "credentials";
    /// Any other error answer of the store.
    pub const STORE: &str = "store_error";
    /// Writing the local `--index` failed.
    pub const LOCAL_IO: &str = "local_io";
    /// The store's copy of a file differs from the manifest although this replica's own copy
    /// (assembled from its rows, or already present) matches: it keeps serving, but a replica
    /// that downloads the file whole will refuse the snapshot.
    pub const STORE_ALTERED: &str = "store_altered";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn s3_urls_and_directories_parse_and_name_their_objects() {
        let s3 = Location::parse("s3://bucket/team/govcat/").expect("s3");
        assert_eq!(
            s3,
            Location::S3 {
                bucket: "bucket".into(),
                prefix: "team/govcat".into()
            }
        );
        assert_eq!(s3.object("CURRENT"), "s3://bucket/team/govcat/CURRENT");
        let bare = Location::parse("s3://bucket").expect("bucket only");
        assert_eq!(bare.object("CURRENT"), "s3://bucket/CURRENT");
        assert_eq!(bare.to_string(), "s3://bucket");
        let dir = Location::parse("/shared/index").expect("dir");
        assert_eq!(dir, Location::Dir(PathBuf::from("/shared/index")));
        assert_eq!(dir.object("CURRENT"), "/shared/index/CURRENT");
    }

    #[test]
    fn a_location_without_bucket_or_with_another_scheme_is_refused_with_the_form_to_write() {
        assert_eq!(
            Location::parse("s3:///prefix"),
            Err("'s3:///prefix' names no bucket; write s3://BUCKET/PREFIX, e.g. s3://my-bucket/govcat".into())
        );
        assert_eq!(
            Location::parse("gs://bucket/p"),
            Err("'gs://bucket/p' is neither s3://BUCKET/PREFIX nor a directory; only S3 and directories are supported".into())
        );
    }
}
