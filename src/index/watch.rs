//! Live snapshots: watch the ontology and catalog files (notify), debounce bursts of changes,
//! rebuild, and swap the new snapshot in. A failed rebuild keeps the old snapshot serving and
//! is recorded in the handle's status (logs, metrics and `/readyz` read it from there).

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

use super::{Snapshot, SnapshotHandle};

/// Keeps the watcher alive; dropping it stops watching.
pub struct WatchGuard {
    _watcher: notify::RecommendedWatcher,
}

/// Starts watching `paths`. After changes settle for `debounce`, `rebuild` runs on a
/// background thread and its snapshot is swapped into `handle`.
pub fn spawn<F>(
    paths: &[PathBuf],
    debounce: Duration,
    handle: SnapshotHandle,
    rebuild: F,
) -> Result<WatchGuard, String>
where
    F: Fn() -> Result<Snapshot, String> + Send + 'static,
{
    let (tx, rx) = mpsc::channel::<()>();
    let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
        if let Ok(e) = event {
            if !matches!(e.kind, notify::EventKind::Access(_)) {
                let _ = tx.send(());
            }
        }
    })
    .map_err(|e| format!("cannot start the file watcher: {e}"))?;
    for p in paths {
        let mode = if p.is_dir() {
            RecursiveMode::Recursive
        } else {
            RecursiveMode::NonRecursive
        };
        watcher
            .watch(p, mode)
            .map_err(|e| format!("cannot watch {}: {e}; check the path exists", p.display()))?;
    }
    std::thread::Builder::new()
        .name("govcat-watch".into())
        .spawn(move || {
            while rx.recv().is_ok() {
                // Debounce: wait until no event arrived for `debounce`.
                while rx.recv_timeout(debounce).is_ok() {}
                match rebuild() {
                    Ok(snapshot) => {
                        tracing::info!(snapshot = %snapshot.manifest.id, "rebuilt snapshot after a source change; swapped in");
                        handle.record_rebuild_ok();
                        handle.swap(snapshot);
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "snapshot rebuild failed; the previous snapshot keeps serving");
                        handle.record_failure(&e);
                    }
                }
            }
        })
        .map_err(|e| format!("cannot start the rebuild thread: {e}"))?;
    Ok(WatchGuard { _watcher: watcher })
}
