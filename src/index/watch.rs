//! Live snapshots: watch the ontology and catalog files (notify), debounce bursts of changes,
//! and run the rebuild (the server's `rebuilder` swaps the new snapshot, ontology and source
//! in, or records why it could not).

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};

/// Keeps the watcher alive; dropping it stops watching.
pub struct WatchGuard {
    _watcher: notify::RecommendedWatcher,
}

/// Starts watching `paths`. After changes settle for `debounce`, `rebuild` runs on a
/// background thread.
pub fn spawn<F>(paths: &[PathBuf], debounce: Duration, rebuild: F) -> Result<WatchGuard, String>
where
    F: Fn() + Send + 'static,
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
                rebuild();
            }
        })
        .map_err(|e| format!("cannot start the rebuild thread: {e}"))?;
    Ok(WatchGuard { _watcher: watcher })
}
