//! A store of published snapshots: an S3 prefix ([`super::s3`]) or a directory (a shared
//! volume). Keys are relative to the prefix: `CURRENT`, `snapshots/<id>/<file>`. Every write
//! to a directory goes to a temporary name first and is renamed into place, so a reader of a
//! shared folder never sees half a file.

use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::s3::S3Store;
use super::{reason, Location, ObjectStat, SyncError};
use crate::embed::sha256_file;

/// An S3 prefix or a directory, with counters of what was downloaded from it.
pub struct Store {
    backend: Backend,
    location: Location,
    downloaded_bytes: AtomicU64,
    downloaded_objects: AtomicU64,
}

enum Backend {
    S3(Box<S3Store>),
    Dir(PathBuf),
}

impl Store {
    /// Opens `location`; `s3_endpoint` applies to S3 only. S3 credentials and region come
    /// from the default chain.
    pub fn open(location: &Location, s3_endpoint: Option<&str>) -> Result<Store, SyncError> {
        Self::with_loader(
            location,
            s3_endpoint,
            aws_config::defaults(aws_config::BehaviorVersion::latest()),
        )
    }

    /// [`Store::open`] with an explicit SDK config loader for S3 (tests, embedders).
    pub fn with_loader(
        location: &Location,
        s3_endpoint: Option<&str>,
        loader: aws_config::ConfigLoader,
    ) -> Result<Store, SyncError> {
        let backend = match location {
            Location::S3 { bucket, prefix } => Backend::S3(Box::new(S3Store::with_loader(
                bucket,
                prefix,
                s3_endpoint,
                loader,
            )?)),
            Location::Dir(dir) => Backend::Dir(dir.clone()),
        };
        Ok(Store {
            backend,
            location: location.clone(),
            downloaded_bytes: AtomicU64::new(0),
            downloaded_objects: AtomicU64::new(0),
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    /// The object `rel` as a message names it.
    pub fn object(&self, rel: &str) -> String {
        self.location.object(rel)
    }

    /// Bytes and objects read from the store since it was opened.
    pub fn downloaded(&self) -> (u64, u64) {
        (
            self.downloaded_bytes.load(Ordering::Relaxed),
            self.downloaded_objects.load(Ordering::Relaxed),
        )
    }

    fn count(&self, bytes: u64) {
        self.downloaded_bytes.fetch_add(bytes, Ordering::Relaxed);
        self.downloaded_objects.fetch_add(1, Ordering::Relaxed);
    }

    /// A small object's bytes (`CURRENT`, a manifest), or `None` when it does not exist.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, SyncError> {
        let bytes = match &self.backend {
            Backend::S3(s3) => s3.get(rel)?,
            Backend::Dir(dir) => match fs::read(dir.join(rel)) {
                Ok(b) => Some(b),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(dir_error(&dir.join(rel), e)),
            },
        };
        if let Some(b) = &bytes {
            self.count(b.len() as u64);
        }
        Ok(bytes)
    }

    /// Downloads `rel` to `dest` (replacing it); returns its sha256 (hex). A missing object is
    /// a [`reason::MISSING`] error.
    pub fn download(&self, rel: &str, dest: &Path) -> Result<String, SyncError> {
        let (size, sum) = match &self.backend {
            Backend::S3(s3) => s3.download(rel, dest)?,
            Backend::Dir(dir) => {
                let from = dir.join(rel);
                let size = fs::copy(&from, dest).map_err(|e| dir_error(&from, e))?;
                let sum = sha256_file(dest).map_err(|e| local(dest, e))?;
                (size, sum)
            }
        };
        self.count(size);
        Ok(sum)
    }

    /// Reads the byte ranges `ranges` (start, end exclusive) of `rel`, handing each to `sink`
    /// in order; counts the bytes read and one object.
    pub fn get_ranges(
        &self,
        rel: &str,
        ranges: &[(u64, u64)],
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SyncError>,
    ) -> Result<u64, SyncError> {
        let total = match &self.backend {
            Backend::S3(s3) => s3.get_ranges(rel, ranges, sink)?,
            Backend::Dir(dir) => {
                use std::io::{Read, Seek, SeekFrom};
                let from = dir.join(rel);
                let mut file = fs::File::open(&from).map_err(|e| dir_error(&from, e))?;
                let mut buf = Vec::new();
                let mut total = 0u64;
                for &(start, end) in ranges {
                    buf.resize((end - start) as usize, 0);
                    file.seek(SeekFrom::Start(start))
                        .and_then(|_| file.read_exact(&mut buf))
                        .map_err(|e| dir_error(&from, e))?;
                    sink(&buf)?;
                    total += buf.len() as u64;
                }
                total
            }
        };
        self.count(total);
        Ok(total)
    }

    /// Writes a small object (`CURRENT`).
    pub fn put(&self, rel: &str, bytes: &[u8]) -> Result<(), SyncError> {
        match &self.backend {
            Backend::S3(s3) => s3.put(rel, bytes.to_vec()),
            Backend::Dir(dir) => {
                let to = dir.join(rel);
                let tmp = temp_name(&to);
                write_synced(&tmp, bytes)?;
                fs::rename(&tmp, &to).map_err(|e| local(&to, e))
            }
        }
    }

    /// The size (and sha256 where known) of `rel`, or `None` when it does not exist.
    pub fn stat(&self, rel: &str) -> Result<Option<ObjectStat>, SyncError> {
        match &self.backend {
            Backend::S3(s3) => s3.stat(rel),
            Backend::Dir(dir) => {
                let path = dir.join(rel);
                match fs::metadata(&path) {
                    Ok(meta) => Ok(Some(ObjectStat {
                        size: meta.len(),
                        sha256: Some(sha256_file(&path).map_err(|e| dir_error(&path, e))?),
                        multipart: false,
                    })),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                    Err(e) => Err(dir_error(&path, e)),
                }
            }
        }
    }

    /// Proves the location takes writes before anything long runs: writes a small probe
    /// object (`.govcat-probe-<pid>`) and deletes it. On S3 that checks the region, the
    /// credentials, the bucket and `s3:PutObject` / `s3:DeleteObject`; on a directory that it
    /// exists (it is created) and is writable.
    pub fn probe_write(&self) -> Result<(), SyncError> {
        let rel = format!(".govcat-probe-{}", std::process::id());
        match &self.backend {
            Backend::S3(s3) => {
                s3.put(&rel, b"govcat publish probe\n".to_vec())?;
                s3.delete(&rel)
            }
            Backend::Dir(dir) => {
                fs::create_dir_all(dir).map_err(|e| local(dir, e))?;
                let path = dir.join(&rel);
                write_synced(&path, b"govcat publish probe\n")?;
                fs::remove_file(&path).map_err(|e| local(&path, e))
            }
        }
    }

    /// Uploads the file at `path` to `rel`; `progress` is told the bytes as they go.
    pub fn upload(&self, rel: &str, path: &Path, progress: &dyn Fn(u64)) -> Result<(), SyncError> {
        match &self.backend {
            Backend::S3(s3) => s3.upload(rel, path, progress),
            Backend::Dir(dir) => {
                let to = dir.join(rel);
                if let Some(parent) = to.parent() {
                    fs::create_dir_all(parent).map_err(|e| local(parent, e))?;
                }
                let tmp = temp_name(&to);
                let size = fs::copy(path, &tmp).map_err(|e| local(&tmp, e))?;
                // fs::copy keeps the source's mode (tantivy writes .managed.json 0600); a
                // replica on a shared volume may run as another user.
                set_world_readable(&tmp)?;
                fs::File::open(&tmp)
                    .and_then(|f| f.sync_all())
                    .map_err(|e| local(&tmp, e))?;
                fs::rename(&tmp, &to).map_err(|e| local(&to, e))?;
                progress(size);
                Ok(())
            }
        }
    }

    /// The ids of the published snapshots (directories under `snapshots/`).
    pub fn list_ids(&self) -> Result<Vec<String>, SyncError> {
        let mut ids = match &self.backend {
            Backend::S3(s3) => s3.list_ids()?,
            Backend::Dir(dir) => {
                let under = dir.join("snapshots");
                match fs::read_dir(&under) {
                    Ok(entries) => entries
                        .flatten()
                        .filter(|e| e.path().is_dir())
                        .map(|e| e.file_name().to_string_lossy().to_string())
                        .filter(|n| !n.starts_with('.'))
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(dir_error(&under, e)),
                }
            }
        };
        ids.sort();
        Ok(ids)
    }

    /// The names of the files directly under `dir` (relative to the prefix), sorted; none
    /// when it does not exist.
    pub fn list_files(&self, dir: &str) -> Result<Vec<String>, SyncError> {
        let mut names = match &self.backend {
            Backend::S3(s3) => s3.list_files(dir)?,
            Backend::Dir(root) => {
                let under = root.join(dir);
                match fs::read_dir(&under) {
                    Ok(entries) => entries
                        .flatten()
                        .filter(|e| e.path().is_file())
                        .map(|e| e.file_name().to_string_lossy().to_string())
                        .filter(|n| !n.starts_with('.'))
                        .collect(),
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
                    Err(e) => return Err(dir_error(&under, e)),
                }
            }
        };
        names.sort();
        Ok(names)
    }

    /// Deletes the published snapshot `id`.
    pub fn delete_snapshot(&self, id: &str) -> Result<(), SyncError> {
        match &self.backend {
            Backend::S3(s3) => s3.delete_snapshot(id).map(|_| ()),
            Backend::Dir(dir) => {
                let path = dir.join("snapshots").join(id);
                fs::remove_dir_all(&path).map_err(|e| local(&path, e))
            }
        }
    }
}

/// `path` with a temporary name beside it (`.name.tmp-<pid>`).
fn temp_name(path: &Path) -> PathBuf {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}", std::process::id()))
}

fn write_synced(path: &Path, bytes: &[u8]) -> Result<(), SyncError> {
    let mut f = fs::File::create(path).map_err(|e| local(path, e))?;
    f.write_all(bytes).map_err(|e| local(path, e))?;
    set_world_readable(path)?;
    f.sync_all().map_err(|e| local(path, e))
}

/// Mode 0644 whatever the umask: every published file is readable by the replicas' user.
fn set_world_readable(path: &Path) -> Result<(), SyncError> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        fs::set_permissions(path, fs::Permissions::from_mode(0o644)).map_err(|e| local(path, e))?;
    }
    Ok(())
}

/// A failed read of the shared directory.
fn dir_error(path: &Path, e: std::io::Error) -> SyncError {
    match e.kind() {
        std::io::ErrorKind::NotFound => SyncError::new(
            reason::MISSING,
            path.display().to_string(),
            "does not exist",
            "publish a snapshot there with govcat index --publish, or check the path in --follow",
        ),
        std::io::ErrorKind::PermissionDenied => SyncError::new(
            reason::ACCESS_DENIED,
            path.display().to_string(),
            "permission denied",
            "let the user govcat runs as read it (the shared volume's mount and permissions)",
        ),
        _ => SyncError::new(
            reason::UNREACHABLE,
            path.display().to_string(),
            e.to_string(),
            "check the shared volume is mounted; the follower retries at its next poll",
        ),
    }
}

/// A failed write of a local file (or of the directory published to).
pub fn local(path: &Path, e: impl std::fmt::Display) -> SyncError {
    SyncError::new(
        reason::LOCAL_IO,
        path.display().to_string(),
        e.to_string(),
        "check the directory exists, is writable and has space",
    )
}
