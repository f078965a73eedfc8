//! `govcat serve --follow LOCATION`: a replica serving the snapshot an indexer published.
//!
//! One [`Follow::poll`] reads `CURRENT`; when it names an id other than the one served, it
//! reads that snapshot's manifest, refuses another format or model before downloading
//! anything, downloads into the local `--index`'s `snapshots/<id>/` every file not already
//! there with the manifest's sha256 (checked as it arrives; documents.json and vectors.f32
//! assembled from what the served snapshot holds plus ranged reads of the rest, see
//! [`Follow::assemble`]), runs the same load checks as
//! `index::load` plus the catalog/ontology check of the server, points the local `CURRENT` at
//! it and hands it to the snapshot handle's atomic swap. Any failure leaves the served
//! snapshot as it is and is recorded: a log line naming the object and the problem,
//! `last_error` in `/readyz`, `govcat_follow_errors_total{reason}`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Component, Path};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use serde_json::{json, Value};

use super::{reason, Store, SyncError, REASONS};
use crate::embed::{sha256_file, Embedder};
use crate::index::{self, Manifest, Snapshot, SnapshotHandle, MANIFEST};
use crate::timestamp::format_rfc3339;

/// A replica's follower: the store, the cadence and what happened so far.
pub struct Follow {
    store: Store,
    interval: Duration,
    state: Mutex<State>,
    /// Bytes of new snapshots' documents and vectors copied from local ones instead of
    /// downloaded.
    reused_bytes: AtomicU64,
}

#[derive(Debug, Default)]
struct State {
    current_id: Option<String>,
    remote_id: Option<String>,
    last_checked_at: Option<SystemTime>,
    last_error: Option<String>,
    /// When `CURRENT` was first seen naming an id other than the served one.
    behind_since: Option<SystemTime>,
    swaps: u64,
    errors: BTreeMap<&'static str, u64>,
    /// The served snapshot's files whose copy in the store differs from the manifest.
    store_error: Option<String>,
}

/// The follower's state at one moment, for `/metrics`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FollowStatus {
    pub source: String,
    pub current_id: Option<String>,
    pub remote_id: Option<String>,
    pub last_checked_at: Option<String>,
    pub last_error: Option<String>,
    /// See [`reason::STORE_ALTERED`]: which store copies differ, and how.
    pub store_error: Option<String>,
    pub lag_seconds: Option<f64>,
    pub swaps: u64,
    /// Every reason of [`REASONS`] with its count (zeros included).
    pub errors: Vec<(&'static str, u64)>,
    pub downloaded_bytes: u64,
    pub downloaded_objects: u64,
    /// Bytes of documents and vectors copied from the local snapshot instead of downloaded.
    pub reused_bytes: u64,
    pub interval_seconds: u64,
}

/// What the follower checks a snapshot against besides the load checks (the server's
/// catalog and ontology), as a message with its next step.
pub type Check<'a> = &'a dyn Fn(&Manifest) -> Result<(), String>;

impl Follow {
    pub fn new(store: Store, interval: Duration) -> Follow {
        Follow {
            store,
            interval,
            state: Mutex::new(State::default()),
            reused_bytes: AtomicU64::new(0),
        }
    }

    pub fn interval(&self) -> Duration {
        self.interval
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn status(&self) -> FollowStatus {
        let st = self.lock();
        let now = SystemTime::now();
        let lag_seconds = match (&st.behind_since, &st.remote_id) {
            (Some(t), _) => Some(now.duration_since(*t).unwrap_or_default().as_secs_f64()),
            (None, Some(_)) => Some(0.0),
            (None, None) => None,
        };
        let (downloaded_bytes, downloaded_objects) = self.store.downloaded();
        FollowStatus {
            source: self.store.location().to_string(),
            current_id: st.current_id.clone(),
            remote_id: st.remote_id.clone(),
            last_checked_at: st.last_checked_at.map(format_rfc3339),
            last_error: st.last_error.clone(),
            store_error: st.store_error.clone(),
            lag_seconds,
            swaps: st.swaps,
            errors: REASONS
                .iter()
                .map(|r| (*r, st.errors.get(r).copied().unwrap_or(0)))
                .collect(),
            downloaded_bytes,
            downloaded_objects,
            reused_bytes: self.reused_bytes.load(Ordering::Relaxed),
            interval_seconds: self.interval.as_secs(),
        }
    }

    /// The `follow` object of `/readyz`.
    pub fn readiness(&self) -> Value {
        let s = self.status();
        json!({
            "source": s.source,
            "current_id": s.current_id,
            "last_checked_at": s.last_checked_at,
            "last_error": s.last_error,
            "store_error": s.store_error,
            "lag_seconds": s.lag_seconds.map(|l| l.floor() as u64),
            "remote_id": s.remote_id,
            "interval_seconds": s.interval_seconds,
            "swaps": s.swaps,
            "errors": s.errors.iter().filter(|(_, n)| *n > 0).map(|(r, n)| (r.to_string(), json!(n))).collect::<serde_json::Map<_, _>>(),
            "downloaded_bytes": s.downloaded_bytes,
            "downloaded_objects": s.downloaded_objects,
            "reused_bytes": s.reused_bytes,
        })
    }

    /// One poll: syncs and, on a new snapshot, swaps it into `handle`. Failures keep the
    /// served snapshot and are recorded. A replica that has never loaded a snapshot and cannot
    /// reach the store falls back to the local `CURRENT` if it loads (and says so).
    pub fn poll(
        &self,
        index_dir: &Path,
        embedder: &dyn Embedder,
        check: Check<'_>,
        handle: &SnapshotHandle,
    ) {
        let served = handle.status().snapshot_id;
        let result = self.sync(index_dir, embedder, check, served.as_deref());
        // Built before the status lock is taken (about 1 s at 1M columns).
        if let Ok(Some(snapshot)) = &result {
            snapshot.warm();
        }
        let now = SystemTime::now();
        let mut st = self.lock();
        st.last_checked_at = Some(now);
        match result {
            Ok(Some(snapshot)) => {
                let id = snapshot.manifest.id.clone();
                tracing::info!(snapshot = %id, source = %self.store.location(), "followed snapshot swapped in");
                handle.swap(snapshot);
                st.current_id = Some(id);
                st.swaps += 1;
                st.behind_since = None;
                st.last_error = None;
            }
            Ok(None) => {
                st.current_id = served;
                st.behind_since = None;
                st.last_error = None;
            }
            Err(e) => {
                *st.errors.entry(e.reason).or_default() += 1;
                // Whatever failed, this replica cannot show it serves what is published: the
                // lag runs from the first failed poll (a `CURRENT` that names no snapshot
                // included) until a poll succeeds.
                st.behind_since.get_or_insert(now);
                match &served {
                    Some(id) => {
                        tracing::error!(object = %e.object, reason = e.reason, error = %e, "following {} failed; snapshot {id} stays served", self.store.location())
                    }
                    None => {
                        tracing::error!(object = %e.object, reason = e.reason, error = %e, "following {} failed; no snapshot is served until a poll succeeds", self.store.location())
                    }
                }
                st.last_error = Some(e.to_string());
                if served.is_none() {
                    handle.record_load_failure(&e.to_string());
                    drop(st);
                    self.fall_back_to_local(index_dir, embedder, check, handle);
                }
            }
        }
    }

    /// Serves the local `CURRENT` when nothing is served and the store failed.
    fn fall_back_to_local(
        &self,
        index_dir: &Path,
        embedder: &dyn Embedder,
        check: Check<'_>,
        handle: &SnapshotHandle,
    ) {
        let Ok(snapshot) = index::load_current(index_dir, embedder) else {
            return;
        };
        if check(&snapshot.manifest).is_err() {
            return;
        }
        let id = snapshot.manifest.id.clone();
        tracing::warn!(snapshot = %id, source = %self.store.location(), "serving the local snapshot until the published one can be fetched");
        handle.serve(snapshot);
        let mut st = self.lock();
        st.current_id = Some(id.clone());
        if st.remote_id.as_deref().is_some_and(|r| r != id) {
            st.behind_since.get_or_insert(SystemTime::now());
        }
    }

    /// The S3 error code of an absent object, as messages name it (nothing for a directory).
    fn no_such_key(&self) -> &'static str {
        match self.store.location() {
            super::Location::S3 { .. } => " (NoSuchKey)",
            super::Location::Dir(_) => "",
        }
    }

    /// Fetches and verifies the snapshot `CURRENT` names; `None` when it is `served`.
    pub fn sync(
        &self,
        index_dir: &Path,
        embedder: &dyn Embedder,
        check: Check<'_>,
        served: Option<&str>,
    ) -> Result<Option<Snapshot>, SyncError> {
        let location = self.store.location().to_string();
        let again = format!("publish it again (govcat index --publish {location})");
        let current = self.store.get("CURRENT")?;
        if current.is_none() {
            // Nothing is published now: the last id read is not what the store names.
            self.lock().remote_id = None;
        }
        let text = current.ok_or_else(|| {
            SyncError::new(
                reason::MISSING,
                self.store.object("CURRENT"),
                format!(
                    "does not exist{}: nothing is published there yet",
                    self.no_such_key()
                ),
                format!("run the indexer (govcat index --publish {location}), or correct --follow"),
            )
        })?;
        let text = String::from_utf8_lossy(&text);
        let id = index::parse_snapshot_id(&text).ok_or_else(|| {
            SyncError::new(
                reason::MANIFEST,
                self.store.object("CURRENT"),
                format!("'{}' is not a snapshot id", text.trim()),
                format!("run the indexer again (govcat index --publish {location})"),
            )
        })?;
        {
            let mut st = self.lock();
            st.remote_id = Some(id.clone());
            if served != Some(id.as_str()) {
                st.behind_since.get_or_insert(SystemTime::now());
            }
        }
        if served == Some(id.as_str()) {
            return Ok(None);
        }
        let manifest_key = format!("snapshots/{id}/{MANIFEST}");
        let manifest_object = self.store.object(&manifest_key);
        let manifest_bytes = self.store.get(&manifest_key)?.ok_or_else(|| {
            SyncError::new(
                reason::MISSING,
                manifest_object.clone(),
                format!(
                    "CURRENT names snapshot {id}, but its manifest does not exist{}",
                    self.no_such_key()
                ),
                format!("the snapshot was never published completely or was deleted; {again}"),
            )
        })?;
        let manifest: Manifest = serde_json::from_slice(&manifest_bytes).map_err(|e| {
            SyncError::new(
                reason::MANIFEST,
                manifest_object.clone(),
                format!("not a snapshot manifest ({e})"),
                again.clone(),
            )
        })?;
        if manifest.id != id {
            return Err(SyncError::new(
                reason::MANIFEST,
                manifest_object,
                format!("the manifest is of snapshot {}, not {id}", manifest.id),
                again,
            ));
        }
        index::check_compatible(&manifest, embedder, &manifest_object).map_err(|e| {
            SyncError::new(
                reason::INCOMPATIBLE,
                manifest_object.clone(),
                e.to_string(),
                "run the replica with the same govcat version and model as the indexer",
            )
        })?;
        check(&manifest).map_err(|problem| {
            SyncError::new(
                reason::SOURCE_MISMATCH,
                manifest_object.clone(),
                problem,
                "start the replica with the indexer's --source/--catalog and --ontology (or publish a snapshot of this replica's catalog there); the served snapshot stays meanwhile",
            )
        })?;
        let dir = index_dir.join("snapshots").join(&id);
        fs::create_dir_all(&dir).map_err(|e| super::store::local(&dir, e))?;
        // documents.rows, then documents.json, then vectors.f32: what a local snapshot
        // already holds of each is found by the one before.
        let mut files: Vec<(&String, &String)> = manifest.files.iter().collect();
        files.sort_by_key(|(file, _)| {
            [index::DOCUMENT_ROWS, index::DOCUMENTS, index::VECTORS]
                .iter()
                .position(|f| f == file)
                .unwrap_or(3)
        });
        let local_snapshot = served
            .map(|s| index_dir.join("snapshots").join(s))
            .filter(|d| *d != dir && d.is_dir());
        // Files this replica did not download whole: its own copy matches the manifest, but the
        // store's may not (a new replica downloads that one).
        let mut not_downloaded: Vec<(String, &String)> = Vec::new();
        for (file, expected) in files {
            if !is_plain_relative(file) {
                return Err(SyncError::new(
                    reason::MANIFEST,
                    manifest_object,
                    format!("it lists the file '{file}', which leaves the snapshot directory"),
                    again,
                ));
            }
            let local = dir.join(file);
            let present = local.is_file()
                && sha256_file(&local).is_ok_and(|sum| sum.eq_ignore_ascii_case(expected));
            if present {
                not_downloaded.push((file.clone(), expected));
                continue;
            }
            if let Some(parent) = local.parent() {
                fs::create_dir_all(parent).map_err(|e| super::store::local(parent, e))?;
            }
            let part = local.with_file_name(format!(
                ".{}.part",
                local.file_name().unwrap_or_default().to_string_lossy()
            ));
            let key = format!("snapshots/{id}/{file}");
            let plan = match (file.as_str(), &local_snapshot) {
                (index::VECTORS, Some(old)) => Some(
                    index::vector_pieces(old, &dir.join(index::DOCUMENTS), &manifest.model)
                        .map(|p| (old.join(index::VECTORS), &b""[..], p)),
                ),
                (index::DOCUMENTS, Some(old))
                    if manifest.files.contains_key(index::DOCUMENT_ROWS) =>
                {
                    Some(
                        index::document_pieces(old, &dir.join(index::DOCUMENT_ROWS))
                            .map(|p| (old.join(index::DOCUMENTS), &b"["[..], p)),
                    )
                }
                _ => None,
            };
            if let Some(plan) = plan {
                let assembled = plan
                    .map_err(|e| format!("the served snapshot lends nothing ({e})"))
                    .and_then(|(from, prefix, pieces)| {
                        self.assemble(&from, prefix, &pieces, &key, &part, expected)
                    });
                match assembled {
                    Ok(()) => {
                        fs::rename(&part, &local).map_err(|e| super::store::local(&local, e))?;
                        not_downloaded.push((file.clone(), expected));
                        continue;
                    }
                    Err(why) => {
                        let _ = fs::remove_file(&part);
                        tracing::warn!(object = %self.store.object(&key), "downloading it whole: {why}");
                    }
                }
            }
            let got = self.store.download(&key, &part).map_err(|e| {
                let _ = fs::remove_file(&part);
                if e.reason == reason::MISSING {
                    SyncError::new(
                        reason::MISSING,
                        e.object,
                        format!(
                            "listed in the manifest of snapshot {id} but does not exist{}",
                            // S3 names its code ("NoSuchKey: ..."); a directory has none.
                            match self.store.location() {
                                super::Location::S3 { .. } => format!(
                                    " ({})",
                                    e.problem.split(':').next().unwrap_or_default()
                                ),
                                super::Location::Dir(_) => String::new(),
                            }
                        ),
                        format!("the published snapshot is incomplete; {again}"),
                    )
                } else {
                    e
                }
            })?;
            if !got.eq_ignore_ascii_case(expected) {
                let _ = fs::remove_file(&part);
                return Err(SyncError::new(
                    reason::CHECKSUM,
                    self.store.object(&key),
                    format!("sha256 {got} differs from the manifest's {expected}"),
                    format!("the published file was altered or truncated; {again}"),
                ));
            }
            fs::rename(&part, &local).map_err(|e| super::store::local(&local, e))?;
        }
        remove_unlisted(&dir, &dir, &manifest)?;
        let store_error = self.store_copies_differ(&id, &dir, &not_downloaded);
        let manifest_path = dir.join(MANIFEST);
        fs::write(&manifest_path, &manifest_bytes)
            .map_err(|e| super::store::local(&manifest_path, e))?;
        let snapshot = index::load(&dir, embedder).map_err(|e| {
            SyncError::new(
                reason::MANIFEST,
                self.store.object(&format!("snapshots/{id}/")),
                format!("downloaded, but it does not load: {e}"),
                again.clone(),
            )
        })?;
        index::set_current(index_dir, &id).map_err(|e| {
            SyncError::new(
                reason::LOCAL_IO,
                index_dir.join("CURRENT").display().to_string(),
                e.to_string(),
                "check --index is writable",
            )
        })?;
        let mut st = self.lock();
        if let Some(problem) = &store_error {
            *st.errors.entry(reason::STORE_ALTERED).or_default() += 1;
            tracing::error!(snapshot = %id, source = %location, "{problem}");
        }
        st.store_error = store_error;
        Ok(Some(snapshot))
    }

    /// Asks the store for the size (and sha256 where it keeps one) of each file this replica
    /// has without downloading it; why some differ from the manifest, if any do.
    fn store_copies_differ(
        &self,
        id: &str,
        dir: &Path,
        files: &[(String, &String)],
    ) -> Option<String> {
        // A publisher that keeps checksums (the manifest has one) gives one to every
        // single-part file: a file without it was written by something else.
        let checksummed = self
            .store
            .stat(&format!("snapshots/{id}/{MANIFEST}"))
            .ok()
            .flatten()
            .is_some_and(|m| m.sha256.is_some());
        let mut differ = Vec::new();
        for (file, expected) in files {
            let key = format!("snapshots/{id}/{file}");
            let size = fs::metadata(dir.join(file)).map(|m| m.len()).unwrap_or(0);
            let problem = match self.store.stat(&key) {
                Ok(Some(stat)) if checksummed && !stat.multipart && stat.sha256.is_none() => {
                    Some("it has no sha256 checksum, which govcat's publish gives every single-part file: it was written again by something else".to_string())
                }
                Ok(Some(stat)) => stat.differs_from(size, expected),
                Ok(None) => Some("it does not exist".to_string()),
                // The store could not be asked: nothing is known to differ.
                Err(e) => {
                    tracing::warn!(object = %e.object, error = %e, "could not check the store's copy");
                    None
                }
            };
            if let Some(problem) = problem {
                differ.push(format!("{} ({problem})", self.store.object(&key)));
            }
        }
        (!differ.is_empty()).then(|| {
            format!(
                "the store's copy differs from snapshot {id}'s manifest: {}; this replica serves its own verified copy, but a replica that downloads these files will refuse the snapshot; publish it again (govcat index --publish {})",
                differ.join(", "),
                self.store.location()
            )
        })
    }
}

/// Ranged reads of one file at most: 128 rounds of [`super::s3::RANGE_REQUESTS_IN_FLIGHT`]
/// GETs, a few seconds of S3's first-byte latency. Scattered changes beyond that are read with
/// the held rows between them (see [`merge_closest`]).
const MAX_RANGED_READS: usize = 1024;

/// Merges the ranges separated by the smallest gaps until at most `max` remain (the bytes of a
/// merged gap are read rather than copied).
fn merge_closest(ranges: &mut Vec<(u64, u64)>, max: usize) {
    if ranges.len() <= max {
        return;
    }
    let mut gaps: Vec<(u64, usize)> = ranges
        .windows(2)
        .enumerate()
        .map(|(i, w)| (w[1].0 - w[0].1, i))
        .collect();
    gaps.sort_unstable();
    let mut closed = vec![false; ranges.len()];
    for &(_, i) in &gaps[..ranges.len() - max.max(1)] {
        closed[i] = true;
    }
    let mut merged: Vec<(u64, u64)> = Vec::with_capacity(max);
    let mut extend = false;
    for (i, &(start, end)) in ranges.iter().enumerate() {
        match merged.last_mut() {
            Some(last) if extend => last.1 = end,
            _ => merged.push((start, end)),
        }
        extend = closed[i];
    }
    *ranges = merged;
}

impl Follow {
    /// Writes `part` as `prefix` followed by `pieces` (see [`index::Piece`]): held pieces
    /// copied from the local file `old`, the others read from `key` by ranged reads, and
    /// checks it against the manifest's sha256 `expected`. `Err` says why the file should be
    /// downloaded whole instead (nothing held, a read that failed, a sha256 that differs).
    fn assemble(
        &self,
        old: &Path,
        prefix: &[u8],
        pieces: &[index::Piece],
        key: &str,
        part: &Path,
        expected: &str,
    ) -> Result<(), String> {
        use sha2::{Digest, Sha256};

        // Where each piece starts in the new file; runs of pieces not held, as byte ranges.
        let mut starts = Vec::with_capacity(pieces.len() + 1);
        let mut at = prefix.len() as u64;
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        for p in pieces {
            starts.push(at);
            let end = at + p.size();
            match (p.held, ranges.last_mut()) {
                (Some(_), _) => {}
                (None, Some(last)) if last.1 == at => last.1 = end,
                (None, _) => ranges.push((at, end)),
            }
            at = end;
        }
        starts.push(at);
        let whole = at - prefix.len() as u64;
        merge_closest(&mut ranges, MAX_RANGED_READS);
        let fetched: u64 = ranges.iter().map(|(a, b)| b - a).sum();
        if fetched == whole {
            return Err(format!("none of its {} parts is held", pieces.len()));
        }
        let source = fs::File::open(old).map_err(|e| format!("{}: {e}", old.display()))?;
        // SAFETY: a snapshot's files are renamed into place whole and never written again.
        let held = unsafe { memmap2::Mmap::map(&source) }
            .map_err(|e| format!("{}: {e}", old.display()))?;
        let out = fs::File::create(part).map_err(|e| format!("{}: {e}", part.display()))?;
        let mut assembly = Assembly {
            out: std::io::BufWriter::with_capacity(1 << 20, out),
            hasher: Sha256::new(),
            held: &held,
            pieces,
            next: 0,
            copied: 0,
        };
        let written = |e: std::io::Error| format!("{}: {e}", part.display());
        assembly.write(prefix).map_err(written)?;
        let mut range = 0usize;
        self.store
            .get_ranges(key, &ranges, &mut |bytes| {
                let (start, end) = ranges[range];
                range += 1;
                // Ranges start and end where pieces do.
                let first = starts.partition_point(|&s| s < start);
                let after = starts.partition_point(|&s| s < end);
                assembly
                    .copy_held(first)
                    .and_then(|()| assembly.write(bytes))
                    .map(|()| assembly.next = after)
                    .map_err(|e| {
                        SyncError::new(
                            reason::LOCAL_IO,
                            part.display().to_string(),
                            e.to_string(),
                            "check --index is writable and has space",
                        )
                    })
            })
            .map_err(|e| e.to_string())?;
        assembly.copy_held(pieces.len()).map_err(written)?;
        let Assembly {
            out,
            hasher,
            copied,
            ..
        } = assembly;
        out.into_inner()
            .map_err(|e| e.into_error())
            .and_then(|f| f.sync_all())
            .map_err(written)?;
        let got = format!("{:x}", hasher.finalize());
        if !got.eq_ignore_ascii_case(expected) {
            return Err(format!(
                "assembled with {} it has sha256 {got}, not the manifest's {expected}",
                old.display()
            ));
        }
        self.reused_bytes.fetch_add(copied, Ordering::Relaxed);
        tracing::info!(
            object = %self.store.object(key),
            reused_bytes = copied,
            fetched_bytes = fetched,
            ranged_reads = ranges.len(),
            "unchanged parts copied from {}", old.display()
        );
        Ok(())
    }
}

/// A file being written from held pieces and fetched ranges, with its sha256.
struct Assembly<'a> {
    out: std::io::BufWriter<fs::File>,
    hasher: sha2::Sha256,
    held: &'a [u8],
    pieces: &'a [index::Piece],
    /// The first piece not written yet.
    next: usize,
    /// Bytes copied from the local file.
    copied: u64,
}

impl Assembly<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        use sha2::Digest;
        use std::io::Write;
        self.hasher.update(bytes);
        self.out.write_all(bytes)
    }

    /// Writes the pieces from `next` up to `until`, all held, from the local file.
    fn copy_held(&mut self, until: usize) -> std::io::Result<()> {
        let held = self.held;
        for i in self.next..until {
            let piece = self.pieces[i];
            let Some(from) = piece.held else {
                return Err(std::io::Error::other(format!(
                    "part {i} is neither held nor fetched"
                )));
            };
            let Some(bytes) = held.get(from as usize..(from + piece.len) as usize) else {
                return Err(std::io::Error::other(format!(
                    "the local file ends before byte {}",
                    from + piece.len
                )));
            };
            self.write(bytes)?;
            if let Some(then) = piece.then {
                self.write(&[then])?;
            }
            self.copied += piece.len;
        }
        self.next = until;
        Ok(())
    }
}

/// A manifest path that stays inside the snapshot directory.
fn is_plain_relative(file: &str) -> bool {
    !file.is_empty()
        && Path::new(file)
            .components()
            .all(|c| matches!(c, Component::Normal(_)))
}

/// Removes files of `dir` the manifest does not list (leftovers of an earlier, different
/// download), which the load check would refuse.
fn remove_unlisted(root: &Path, dir: &Path, manifest: &Manifest) -> Result<(), SyncError> {
    let entries = fs::read_dir(dir).map_err(|e| super::store::local(dir, e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            remove_unlisted(root, &path, manifest)?;
            continue;
        }
        let rel = path
            .strip_prefix(root)
            .map(|p| p.to_string_lossy().replace('\\', "/"))
            .unwrap_or_default();
        if rel != MANIFEST && !manifest.files.contains_key(&rel) {
            fs::remove_file(&path).map_err(|e| super::store::local(&path, e))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::merge_closest;

    #[test]
    fn ranges_beyond_the_cap_merge_across_the_smallest_gaps_and_ranges_within_it_stay() {
        let scattered = vec![(0, 1), (2, 3), (10, 11), (12, 13), (40, 41)];
        let mut capped = scattered.clone();
        merge_closest(&mut capped, 3);
        assert_eq!(capped, vec![(0, 3), (10, 13), (40, 41)]);
        let mut within = scattered.clone();
        merge_closest(&mut within, 5);
        assert_eq!(within, scattered);
        let mut one = scattered;
        merge_closest(&mut one, 1);
        assert_eq!(one, vec![(0, 41)]);
    }
}
