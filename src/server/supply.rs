//! Where the served snapshot comes from: loaded at start, rebuilt on `--refresh` or `--watch`,
//! or fetched from a published location (`--follow`), each swapped in atomically.

use super::*;

/// The context a server runs on: the catalog context plus, when the model loads, retrieval
/// over the snapshot `--index` points at. A missing model or snapshot does not stop the
/// server: the exact tools keep serving, `/readyz` answers 503 saying what is missing and
/// what to run, and the retrieval tools answer with that error.
pub fn serving_context(options: &Options) -> Result<(AppContext, Option<String>), ToolError> {
    serving_context_with(options, true)
}

/// [`serving_context`]; `load_local` false leaves the snapshot to the follower (`--follow`),
/// which fetches the published one first.
pub(super) fn serving_context_with(
    options: &Options,
    load_local: bool,
) -> Result<(AppContext, Option<String>), ToolError> {
    let mut ctx = app::context(options)?;
    ctx.surface = app::tools_surface(options);
    let embedder = match app::load_embedder() {
        Ok(e) => e,
        Err(e) => {
            tracing::warn!(error = %e.message, "retrieval is off: the embedding model did not load");
            return Ok((
                AppContext {
                    ctx,
                    embedder: None,
                },
                Some(e.message),
            ));
        }
    };
    let handle = SnapshotHandle::new();
    let loaded = if load_local {
        app::load_snapshot(
            options,
            embedder.as_ref(),
            &ctx.ontology,
            ctx.source.as_ref(),
        )
    } else {
        Err(ToolError::new(
            "NoSnapshot",
            "waiting for the first snapshot from --follow",
        ))
    };
    match loaded {
        Ok(snapshot) => handle.serve(snapshot),
        Err(e) if !load_local => handle.record_load_failure(&e.message),
        // A snapshot of another catalog or ontology is refused: serving it would answer for
        // the wrong catalog.
        Err(e) if e.kind == "SnapshotSourceMismatch" => return Err(e),
        Err(e) => {
            let e = e.advised(&app::cli_surface(options));
            tracing::warn!(error = %e.message, "no snapshot is served until one loads");
            handle.record_load_failure(&e.message);
        }
    }
    Ok((
        AppContext {
            ctx: ctx.with_retrieval(embedder.clone(), handle),
            embedder: Some(embedder),
        },
        None,
    ))
}

/// The context requests run on, swapped whole when a rebuild reads a new ontology or source.
pub type SharedContext = Arc<ArcSwap<Context>>;

/// A built context and the embedder it uses (for `--watch` rebuilds).
pub struct AppContext {
    pub ctx: Context,
    pub embedder: Option<Arc<dyn Embedder>>,
}

/// Quiet time after the last file change before `--watch` rebuilds.
pub const WATCH_DEBOUNCE: Duration = Duration::from_millis(500);

/// Rebuilds the snapshot from a fresh read of the ontology and the source, and serves both:
/// the fresh ontology and source go into the shared context, then the snapshot is swapped
/// in. Every tool then answers from the same ontology the snapshot was built from, so a value
/// governance just added is both found by `find_precedents` and accepted by `resolve_lf_tag`.
/// (Between the two swaps a request can meet the new ontology with the old snapshot, whose
/// values the new ontology still holds unless one was removed.) A failed rebuild keeps the
/// previous context and snapshot serving and is recorded (logs, /metrics, /readyz).
pub(super) fn rebuilder(
    options: &Options,
    embedder: Arc<dyn Embedder>,
    shared: SharedContext,
    handle: SnapshotHandle,
    trigger: &'static str,
) -> impl Fn() + Send + 'static {
    let options = options.clone();
    let rebuild = move || -> Result<(index::Snapshot, Context), String> {
        let advised = |e: ToolError| e.advised(&app::cli_surface(&options)).message;
        tracing::info!(trigger, "rebuilding the snapshot");
        let fresh = app::context(&options).map_err(advised)?;
        let again = || app::context(&options);
        let progress = index::Logged::new();
        let calibrate = app::calibrator(&again, embedder.clone(), &progress);
        index::build_calibrated(
            &options.index,
            &fresh.ontology,
            fresh.source.as_ref(),
            embedder.as_ref(),
            &progress,
            true,
            Some(&calibrate),
        )
        .map_err(|e| advised(e.into()))?;
        let snapshot = app::load_snapshot(
            &options,
            embedder.as_ref(),
            &fresh.ontology,
            fresh.source.as_ref(),
        )
        .map_err(advised)?;
        Ok((snapshot, fresh))
    };
    move || match rebuild() {
        Ok((snapshot, mut fresh)) => {
            fresh.ontology_drift = ontology_drift(&fresh);
            tracing::info!(snapshot = %snapshot.manifest.id, ontology_version = %fresh.ontology.version, trigger, "rebuilt snapshot swapped in");
            shared.store(Arc::new(shared.load().with_catalog_of(fresh)));
            handle.record_rebuild_ok();
            handle.serve(snapshot);
        }
        Err(e) => {
            tracing::error!(error = %e, trigger, "snapshot rebuild failed; the previous snapshot keeps serving");
            handle.record_failure(&e);
        }
    }
}

/// The source's own tag vocabulary against the context's ontology (aws: ListLFTags), for
/// `/readyz`; a failed read is logged and shown as the error. `None` for sources without one.
pub(super) fn ontology_drift(ctx: &Context) -> Option<Value> {
    ctx.source
        .ontology_drift(&Caller::local())
        .map(|r| match r {
            Ok(report) => report,
            Err(e) => {
                tracing::warn!(error = %e, "could not compare the source's LF-tags with the ontology");
                json!({"error": e.kind(), "message": e.to_string()})
            }
        })
}

/// The embedder and snapshot handle a rebuild needs, or what `flag` lacks.
pub(super) fn rebuild_parts(
    state: &AppState,
    flag: &'static str,
) -> Result<(Arc<dyn Embedder>, SnapshotHandle), ServerError> {
    let ctx = state.context();
    match (ctx.embedder.clone(), ctx.snapshots.clone()) {
        (Some(embedder), Some(handle)) => Ok((embedder, handle)),
        _ => Err(ServerError::runtime(
            flag,
            format!(
                "rebuilding snapshots needs the embedding model, which did not load ({})",
                state.retrieval_unavailable.as_deref().unwrap_or("no model")
            ),
            &format!("run scripts/fetch-model.sh, or serve without {flag}"),
        )),
    }
}

/// Starts `--refresh`: rebuilds every `every` (see [`rebuilder`]).
pub(super) fn start_refresh(
    options: &Options,
    state: &AppState,
    every: Duration,
) -> Result<(), ServerError> {
    let (embedder, handle) = rebuild_parts(state, "--refresh")?;
    let rebuild = rebuilder(
        options,
        embedder,
        state.shared_context(),
        handle,
        "schedule",
    );
    std::thread::Builder::new()
        .name("govcat-refresh".into())
        .spawn(move || loop {
            std::thread::sleep(every);
            rebuild();
        })
        .map(|_| ())
        .map_err(|e| ServerError::runtime("--refresh", e, "restart govcat serve"))
}

/// Starts `--watch`: rebuilds when the ontology or catalog changes (see `index::watch` and
/// [`rebuilder`]).
pub(super) fn start_watch(
    options: &Options,
    state: &AppState,
) -> Result<index::watch::WatchGuard, ServerError> {
    let (embedder, handle) = rebuild_parts(state, "--watch")?;
    let rebuild = rebuilder(
        options,
        embedder,
        state.shared_context(),
        handle,
        "file change",
    );
    index::watch::spawn(
        &[options.ontology.clone(), options.catalog.clone()],
        WATCH_DEBOUNCE,
        rebuild,
    )
    .map_err(|e| {
        ServerError::runtime(
            "--watch",
            e,
            "check --ontology and --catalog exist, or serve without --watch",
        )
    })
}

/// The follower of `--follow`, or `None` without it.
pub(super) fn open_follow(
    options: &Options,
    args: &ServeArgs,
) -> Result<Option<Arc<Follow>>, ServerError> {
    let Some(text) = &args.follow else {
        return Ok(None);
    };
    if let Some(why) = args.conflict() {
        return Err(ServerError::Follow(why));
    }
    let location = crate::sync::Location::parse(text).map_err(ServerError::Follow)?;
    if let crate::sync::Location::Dir(dir) = &location {
        let same = match (dir.canonicalize(), options.index.canonicalize()) {
            (Ok(a), Ok(b)) => a == b,
            _ => dir == &options.index,
        };
        if same {
            return Err(ServerError::Follow(format!(
                "{} is also the --index of this replica; the replica downloads into its own --index and prunes old snapshots there, so give it another one (e.g. --index /var/lib/govcat/index)",
                dir.display()
            )));
        }
    }
    let store = crate::sync::Store::open(&location, args.s3_endpoint.as_deref())
        .map_err(|e| ServerError::Follow(e.to_string()))?;
    Ok(Some(Arc::new(Follow::new(
        store,
        Duration::from_secs(args.follow_interval),
    ))))
}

/// Starts `--follow`: a poll now, then one every interval (see [`Follow::poll`]), on a thread
/// of its own; swaps go through the snapshot handle as `--watch` rebuilds do.
pub(super) fn start_follow(
    options: &Options,
    state: &AppState,
    follow: Arc<Follow>,
) -> Result<(), ServerError> {
    let (embedder, handle) = rebuild_parts(state, "--follow")?;
    let shared = state.shared_context();
    let options = options.clone();
    std::thread::Builder::new()
        .name("govcat-follow".into())
        .spawn(move || loop {
            let ctx = shared.load_full();
            let check = |manifest: &index::Manifest| {
                app::check_snapshot_source(&options, manifest, &ctx.ontology, ctx.source.as_ref())
                    .map_err(|e| published_mismatch(manifest, &e))
            };
            follow.poll(&options.index, embedder.as_ref(), &check, &handle);
            drop(ctx);
            std::thread::sleep(follow.interval());
        })
        .map(|_| ())
        .map_err(|e| ServerError::runtime("--follow", e, "restart govcat serve"))
}

/// Why a published snapshot is not of this replica's catalog or ontology, in the replica's
/// terms: the advice of a local index (rebuild `--index`) is the one step a replica must not
/// take, so only the problem is kept; the follower adds the replica's own next step.
fn published_mismatch(manifest: &index::Manifest, e: &crate::tools::ToolError) -> String {
    let named = |key: &str| {
        e.details
            .get(key)
            .and_then(|v| serde_json::from_value::<crate::catalog::SourceIdentity>(v.clone()).ok())
            .map(|s| s.to_string())
    };
    match (named("snapshot_source"), named("source")) {
        (Some(built), Some(reads)) if built != reads => format!(
            "the published snapshot {} is of the catalog {built}, but this replica serves {reads}",
            manifest.id
        ),
        _ => format!(
            "the published snapshot {} was not built from this replica's catalog and ontology ({})",
            manifest.id, e.message
        ),
    }
}
