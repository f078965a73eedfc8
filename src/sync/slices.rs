//! The slice files of a first build spread over machines ([`crate::index::slices`]) in a
//! store: each slice job uploads its file to `PREFIX/slices/` (`govcat index --slice I/N
//! --slices-to LOCATION`); the merge downloads them all into `--index/slices/`
//! (`--slices-from LOCATION`) before its build.

use std::fs;
use std::path::Path;

use super::store::local;
use super::{reason, Store, SyncError};
use crate::index::slices::SLICES_DIR;

/// Uploads the slice file at `path` to `slices/<its name>`; returns the object it wrote.
pub fn upload(store: &Store, path: &Path, progress: &dyn Fn(u64)) -> Result<String, SyncError> {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().to_string())
        .unwrap_or_default();
    let rel = format!("{SLICES_DIR}/{name}");
    store.upload(&rel, path, progress)?;
    Ok(store.object(&rel))
}

/// What a merge downloaded.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Downloaded {
    pub location: String,
    pub files: usize,
    pub bytes: u64,
}

/// Downloads every slice file under `slices/` into `dest` (each under a temporary name,
/// renamed once complete); `progress` counts files. None there is a [`reason::MISSING`] error.
pub fn download_all(
    store: &Store,
    dest: &Path,
    progress: &dyn crate::index::Progress,
) -> Result<Downloaded, SyncError> {
    let names: Vec<String> = store
        .list_files(SLICES_DIR)?
        .into_iter()
        .filter(|n| n.starts_with("slice-") && n.ends_with(".vec"))
        .collect();
    if names.is_empty() {
        return Err(SyncError::new(
            reason::MISSING,
            store.object(&format!("{SLICES_DIR}/")),
            "holds no slice files (slice-I-of-N.vec)",
            format!(
                "run the slice jobs first (govcat index --slice I/N --slices-to {}, one per I)",
                store.location()
            ),
        ));
    }
    fs::create_dir_all(dest).map_err(|e| local(dest, e))?;
    let before = store.downloaded().0;
    progress.start("downloading slice files", names.len() as u64);
    for name in &names {
        let tmp = dest.join(format!(".{name}.tmp-{}", std::process::id()));
        store.download(&format!("{SLICES_DIR}/{name}"), &tmp)?;
        let to = dest.join(name);
        fs::rename(&tmp, &to).map_err(|e| local(&to, e))?;
        progress.advance(1);
    }
    progress.finish();
    Ok(Downloaded {
        location: store.location().to_string(),
        files: names.len(),
        bytes: store.downloaded().0 - before,
    })
}
