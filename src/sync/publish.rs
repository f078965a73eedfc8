//! `govcat index --publish LOCATION [--keep N]`: after the local snapshot is complete, every
//! file of `snapshots/<id>/` goes to `LOCATION/snapshots/<id>/` (the manifest last), then
//! `LOCATION/CURRENT` is written, then published snapshots beyond the newest N are deleted —
//! never the one `CURRENT` names.

use std::path::Path;

use serde::Serialize;

use super::{reason, Store, SyncError};
use crate::index::{self, Progress, MANIFEST};

/// What a publish did, for the CLI's output.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PublishReport {
    /// Where it went (`s3://bucket/prefix` or the directory).
    pub location: String,
    pub id: String,
    /// Files uploaded (the manifest included) and their bytes.
    pub files: usize,
    pub bytes: u64,
    /// Published snapshots left under the location, oldest first (CURRENT's among them).
    pub kept: Vec<String>,
    /// Published snapshots deleted by `--keep`.
    pub deleted: Vec<String>,
}

/// Publishes the local snapshot `id` of `index_dir` to `store` and keeps the newest `keep`.
pub fn publish(
    index_dir: &Path,
    id: &str,
    store: &Store,
    keep: usize,
    progress: &dyn Progress,
) -> Result<PublishReport, SyncError> {
    let dir = index_dir.join("snapshots").join(id);
    let manifest = index::read_manifest(&dir).map_err(|e| {
        SyncError::new(
            reason::MANIFEST,
            dir.join(MANIFEST).display().to_string(),
            e.to_string(),
            "build the snapshot again with govcat index",
        )
    })?;
    let mut files: Vec<&str> = manifest.files.keys().map(String::as_str).collect();
    // The manifest last: a snapshot directory with a manifest is complete.
    files.push(MANIFEST);
    let mut total = 0u64;
    for f in &files {
        total += std::fs::metadata(dir.join(f))
            .map_err(|e| super::store::local(&dir.join(f), e))?
            .len();
    }
    progress.start(
        &format!("uploading snapshot {id} to {}", store.location()),
        total,
    );
    for f in &files {
        store.upload(&format!("snapshots/{id}/{f}"), &dir.join(f), &|n| {
            progress.advance(n)
        })?;
    }
    progress.finish();
    verify_uploaded(store, id, &dir, &manifest, &files)?;
    store.put("CURRENT", format!("{id}\n").as_bytes())?;
    let deleted = prune(store, id, keep).map_err(|e| SyncError {
        problem: format!(
            "snapshot {id} is published and CURRENT names it, but --keep {keep} could not remove an older one: {}",
            e.problem
        ),
        ..e
    })?;
    Ok(PublishReport {
        location: store.location().to_string(),
        id: id.to_string(),
        files: files.len(),
        bytes: total,
        kept: store.list_ids()?,
        deleted,
    })
}

/// Checks every uploaded file against what was sent before `CURRENT` may name the snapshot:
/// its size, and its sha256 where the store keeps one (every file of a directory; S3's
/// checksum of each single-part upload).
fn verify_uploaded(
    store: &Store,
    id: &str,
    dir: &Path,
    manifest: &index::Manifest,
    files: &[&str],
) -> Result<(), SyncError> {
    for f in files {
        let local = dir.join(f);
        let size = std::fs::metadata(&local)
            .map_err(|e| super::store::local(&local, e))?
            .len();
        let expected = match manifest.files.get(*f) {
            Some(sum) => sum.clone(),
            None => {
                crate::embed::sha256_file(&local).map_err(|e| super::store::local(&local, e))?
            }
        };
        let rel = format!("snapshots/{id}/{f}");
        let stat = store.stat(&rel)?;
        let problem = match stat {
            None => Some("it is not there after its upload".to_string()),
            Some(stat) => stat.differs_from(size, &expected),
        };
        if let Some(problem) = problem {
            return Err(SyncError::new(
                reason::CHECKSUM,
                store.object(&rel),
                format!("read back after the upload, {problem}; CURRENT was not written, so replicas keep what they serve"),
                "run the same command again; if it repeats, something else writes to that location",
            ));
        }
    }
    Ok(())
}

/// Deletes published snapshots beyond the newest `keep` (ids sort by build time), never the
/// one `CURRENT` names now (read again: another indexer may have published since).
fn prune(store: &Store, published: &str, keep: usize) -> Result<Vec<String>, SyncError> {
    let current = store
        .get("CURRENT")?
        .and_then(|b| index::parse_snapshot_id(&String::from_utf8_lossy(&b)));
    let ids = store.list_ids()?;
    let newest: Vec<&String> = ids.iter().rev().take(keep).collect();
    let mut deleted = Vec::new();
    for id in &ids {
        let protected =
            newest.contains(&id) || id == published || current.as_deref() == Some(id.as_str());
        if !protected {
            store.delete_snapshot(id)?;
            deleted.push(id.clone());
        }
    }
    Ok(deleted)
}
