//! Building a snapshot, as a pipeline: collect the catalog's documents, expand them with the
//! glossary, embed them (reusing the published vectors of unchanged texts), then write the
//! snapshot (dense and lexical indexes) and publish it; `build_calibrated` fits the calibration
//! map between writing and publishing.

use super::*;

/// The embedding step's name, as a progress bar shows it.
pub(super) const EMBEDDING_STEP: &str = "embedding texts of columns and ontology values";

/// Reads the whole catalog and the ontology into documents, in a deterministic order.
pub fn collect_documents(
    ontology: &Ontology,
    source: &dyn CatalogSource,
) -> Result<(Vec<Document>, Counts), IndexError> {
    let caller = Caller::local();
    let mut docs = documents::ontology_documents(ontology);
    let ontology_values = docs.len();
    let domains = source.list_domains(&caller)?;
    let mut tables = 0;
    let mut unreadable_tables = Vec::new();
    for d in &domains {
        let (datasets, unreadable) = read_domain(source, &caller, &d.name)?;
        tables += datasets.len();
        for u in unreadable {
            unreadable_tables.push(crate::catalog::Unreadable {
                table: format!("{}.{}", d.name, u.table),
                reason: u.reason,
            });
        }
        for ds in &datasets {
            docs.extend(documents::column_documents(ds));
        }
    }
    let glossary = ontology.glossary().map_err(|problem| IndexError::Corrupt {
        file: glossary::GLOSSARY_FILE.to_string(),
        problem,
    })?;
    expand_documents(&mut docs, &glossary);
    let counts = Counts {
        documents: docs.len(),
        columns: docs.len() - ontology_values,
        ontology_values,
        domains: domains.len(),
        tables,
        unreadable_tables,
    };
    Ok((docs, counts))
}

/// Documents per `embed_batch` call while building a snapshot.
pub(super) const EMBED_BATCH: usize = 64;

/// The texts the model embeds for a document: `dense_text`, and `dense_table_text` when the
/// column's table has a description. A column means what its table makes it mean ("status" of
/// a claim, "amount" of a payout), but a table's description also pulls every column of the
/// table towards it; the mean of both embeddings keeps the column's own meaning and adds its
/// table's. Measured with the quality bench (held-out queries): dense R@5 0.792 -> 0.823 and
/// nDCG@10 0.700 -> 0.726; hybrid at the same fusion R@5 0.857 -> 0.878, nDCG@10 0.788 -> 0.795.
/// The table text alone gave hybrid R@5 0.882 but lost MRR and put
/// `customer.country_reference.iban_length` first for "contains an EU IBAN".
pub fn embedded_texts(d: &Document) -> impl Iterator<Item = &str> {
    texts_of(&d.dense_text, d.dense_table_text.as_deref())
}

pub(super) fn texts_of<'a>(
    dense_text: &'a str,
    dense_table_text: Option<&'a str>,
) -> impl Iterator<Item = &'a str> {
    std::iter::once(dense_text).chain(dense_table_text)
}

/// How many texts the model embeds for `docs`.
pub(super) fn text_count<'a>(docs: impl IntoIterator<Item = &'a Document>) -> u64 {
    docs.into_iter()
        .map(|d| embedded_texts(d).count() as u64)
        .sum()
}

/// Embeds documents in batches, reporting progress.
pub fn embed_documents(
    embedder: &dyn Embedder,
    docs: &[Document],
    progress: &dyn Progress,
) -> Result<Vectors, IndexError> {
    let all: Vec<usize> = (0..docs.len()).collect();
    let mut data = vec![0f32; docs.len() * embedder.dimension()];
    progress.start(EMBEDDING_STEP, text_count(docs));
    embed_rows(embedder, docs, &all, &mut data, progress)?;
    progress.finish();
    Ok(Vectors::new(embedder.dimension(), data))
}

/// Embeds the documents `which` (indices into `docs`) into their rows of `data`: each row is
/// the normalised mean of the document's [`embedded_texts`]. Texts are embedded in batches of
/// similar length, since a batch pads to its longest text: on the demo catalog (1,467 texts,
/// release, 2 cores) peak RSS 342 MB instead of 406 MB, at the same 28 s.
/// Progress counts texts.
pub(super) fn embed_rows(
    embedder: &dyn Embedder,
    docs: &[Document],
    which: &[usize],
    data: &mut [f32],
    progress: &dyn Progress,
) -> Result<(), IndexError> {
    let dim = embedder.dimension();
    let mut texts: Vec<(usize, &str)> = which
        .iter()
        .flat_map(|&i| embedded_texts(&docs[i]).map(move |t| (i, t)))
        .collect();
    texts.sort_by_key(|(_, t)| t.len());
    for &i in which {
        data[i * dim..(i + 1) * dim].fill(0.0);
    }
    for chunk in texts.chunks(EMBED_BATCH) {
        let batch: Vec<&str> = chunk.iter().map(|(_, t)| *t).collect();
        let embedded = embedder.embed_batch(&batch)?;
        if embedded.len() != batch.len() || embedded.iter().any(|v| v.len() != dim) {
            return Err(EmbedError::Inference(format!(
                "the model returned {} vectors for {} texts",
                embedded.len(),
                batch.len()
            ))
            .into());
        }
        for ((i, _), v) in chunk.iter().zip(embedded) {
            data[i * dim..(i + 1) * dim]
                .iter_mut()
                .zip(&v)
                .for_each(|(r, x)| *r += x);
        }
        progress.advance(chunk.len() as u64);
    }
    for &i in which {
        if embedded_texts(&docs[i]).count() > 1 {
            crate::embed::l2_normalise(&mut data[i * dim..(i + 1) * dim]);
        }
    }
    Ok(())
}

/// The model a snapshot (or a slice file) records for `embedder`.
pub fn model_info(embedder: &dyn Embedder) -> ModelInfo {
    ModelInfo {
        id: embedder.model_id().to_string(),
        dimension: embedder.dimension(),
        checksum: embedder.checksum().to_string(),
    }
}

/// Fills every document's [`Document::expansion`]: the glossary's English terms for its German
/// words and abbreviations, then the parts of the run-together words of its name split against
/// the documents' own vocabulary ([`crate::text::split_run_together`]). The model reads English:
/// a column's expansion is also appended to the texts it embeds.
pub fn expand_documents(docs: &mut [Document], glossary: &glossary::Glossary) {
    let mut vocabulary: HashMap<String, u64> = HashMap::new();
    for d in docs.iter() {
        let mut tokens = lexical::stemmed(&d.lexical_text);
        tokens.sort();
        tokens.dedup();
        for t in tokens {
            *vocabulary.entry(t).or_default() += 1;
        }
    }
    let freq = |word: &str| match lexical::stemmed(word).as_slice() {
        [token] => vocabulary.get(token).copied().unwrap_or(0),
        _ => 0,
    };
    for d in docs.iter_mut() {
        let mut expansion = glossary.expand(&d.lexical_text);
        let written = crate::text::words(&d.lexical_text);
        let mut name_expansion = glossary.expand(&d.name_text);
        // Identifiers run words together; descriptions are prose, whose words are words
        // (`separate` is not `sepa` + `rate`).
        for e in [&mut expansion, &mut name_expansion] {
            crate::text::push_run_together_parts(
                e,
                &crate::text::words(&d.name_text),
                &written,
                freq,
            );
        }
        d.name_expansion = name_expansion;
        if d.kind == Kind::Column && !expansion.is_empty() {
            let english = expansion.join(" ");
            d.dense_text = format!("{} ({english})", d.dense_text);
            if let Some(t) = &mut d.dense_table_text {
                *t = format!("{t} ({english})");
            }
        }
        d.expansion = expansion;
    }
}

/// Writes a snapshot of `docs`/`vectors` under `index_dir/snapshots/` and publishes it as
/// `CURRENT`. Returns its id. The snapshot is complete and fsynced before `CURRENT` moves.
pub fn write_snapshot(
    index_dir: &Path,
    docs: &[Document],
    vectors: &Vectors,
    counts: Counts,
    source_freshness: SourceFreshness,
    model: ModelInfo,
    ontology_version: &str,
) -> Result<String, IndexError> {
    write_snapshot_with_glossary(
        index_dir,
        docs,
        vectors,
        counts,
        source_freshness,
        model,
        ontology_version,
        None,
        None,
        BuiltFrom::default(),
        None,
        None,
        &Quiet,
    )
}

/// Fits the calibration map of a snapshot that is complete but not yet published: given its
/// staging directory (loadable with [`load`]), returns the map to store as [`CALIBRATION`].
/// The index layer cannot run `suggest_tags`; `app::calibrator` supplies this.
/// Its second argument is the most tagged columns to check (a deterministic sample above).
pub type Calibrate<'a> = dyn Fn(&Path, usize) -> Result<crate::calibration::Map, IndexError> + 'a;

/// What a snapshot records of the catalog and ontology it was built from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BuiltFrom {
    pub source: Option<SourceIdentity>,
    pub ontology_checksum: Option<String>,
}

/// [`write_snapshot`] that also stores the query-expansion glossary and abbreviation lexicon
/// in the snapshot.
#[allow(clippy::too_many_arguments)]
pub fn write_snapshot_with_glossary(
    index_dir: &Path,
    docs: &[Document],
    vectors: &Vectors,
    counts: Counts,
    source_freshness: SourceFreshness,
    model: ModelInfo,
    ontology_version: &str,
    glossary_text: Option<&str>,
    abbreviations_text: Option<&str>,
    built_from: BuiltFrom,
    calibrate: Option<(&Calibrate, usize)>,
    graph_seed: Option<dense::GraphSeed>,
    progress: &dyn Progress,
) -> Result<String, IndexError> {
    let snapshots = index_dir.join("snapshots");
    fs::create_dir_all(&snapshots).map_err(|e| io_err(&snapshots, e))?;
    let now = SystemTime::now();
    let nanos = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let id = format!(
        "{}-{:08x}",
        format_rfc3339(now).replace([':', '-'], ""),
        nanos ^ std::process::id()
    );
    let staging = snapshots.join(format!(".staging-{id}"));
    fs::create_dir_all(staging.join(TANTIVY)).map_err(|e| io_err(&staging, e))?;

    let (doc_bytes, rows) =
        super::reuse::documents_with_rows(docs).map_err(|e| io_err(&staging, e))?;
    write_file(&staging.join(DOCUMENTS), &doc_bytes)?;
    write_file(&staging.join(DOCUMENT_ROWS), &rows)?;
    write_file(&staging.join(VECTORS), &vectors.to_bytes())?;
    // Refuse a malformed glossary before publishing it.
    glossary::Glossary::from_texts(glossary_text, abbreviations_text).map_err(|problem| {
        IndexError::Corrupt {
            file: "glossary".to_string(),
            problem,
        }
    })?;
    if let Some(text) = glossary_text {
        write_file(&staging.join(GLOSSARY), text.as_bytes())?;
    }
    if let Some(text) = abbreviations_text {
        write_file(&staging.join(ABBREVIATIONS), text.as_bytes())?;
    }
    lexical::build(&staging.join(TANTIVY), docs)?;
    let dense_backend = dense::choose_backend(docs.len());
    let graph = if dense_backend == Backend::Hnsw {
        Some(dense::write_graph(&staging, vectors, graph_seed, progress)?)
    } else {
        None
    };
    let manifest = Manifest {
        format_version: FORMAT_VERSION,
        id: id.clone(),
        built_at: format_rfc3339(now),
        source_freshness,
        model,
        ontology_version: ontology_version.to_string(),
        source: built_from.source,
        ontology_checksum: built_from.ontology_checksum,
        dense_backend,
        graph,
        counts,
        files: checksums(&staging)?,
    };
    let mut manifest = manifest;
    let manifest_bytes = serde_json::to_vec_pretty(&manifest).map_err(|e| io_err(&staging, e))?;
    write_file(&staging.join(MANIFEST), &manifest_bytes)?;
    if let Some((calibrate, max_columns)) = calibrate {
        let map = calibrate(&staging, max_columns)?;
        let bytes = serde_json::to_vec_pretty(&map).map_err(|e| io_err(&staging, e))?;
        write_file(&staging.join(CALIBRATION), &bytes)?;
        manifest.files = checksums(&staging)?;
        let manifest_bytes =
            serde_json::to_vec_pretty(&manifest).map_err(|e| io_err(&staging, e))?;
        write_file(&staging.join(MANIFEST), &manifest_bytes)?;
    }
    fsync_dir(&staging);

    let final_dir = snapshots.join(&id);
    fs::rename(&staging, &final_dir).map_err(|e| io_err(&final_dir, e))?;
    fsync_dir(&snapshots);
    set_current(index_dir, &id)?;
    Ok(id)
}

/// Builds a snapshot from the catalog and publishes it. Returns the manifest.
///
/// Embeddings of documents whose embedded text is unchanged since the published snapshot are
/// reused from it (see [`build_reporting`]); only new or changed documents go through the model.
pub fn build(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<Manifest, IndexError> {
    build_reporting(index_dir, ontology, source, embedder, progress).map(|(m, _)| m)
}

/// How a build obtained its document vectors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct EmbedReport {
    /// Documents run through the model (new, changed, or no reusable snapshot).
    pub embedded: usize,
    /// Documents whose vector was copied from the published snapshot.
    pub reused: usize,
    /// Documents whose vector was read from a slice file (`--index`/slices/, written by
    /// `govcat index --slice`).
    pub from_slices: usize,
}

/// [`build`], also saying how many documents were embedded and how many vectors were reused.
///
/// A rebuild re-reads the whole catalog, but most documents' embedded text (`dense_text`) is
/// what the published snapshot (`CURRENT`) already embedded. Its vectors are reused when the
/// snapshot was built by the same model (id, dimension and weights checksum) in this format and
/// its `documents.json` and `vectors.f32` match their manifest checksums; each vector is keyed
/// by a hash of the model and the exact text. Anything else — no snapshot, another model, a
/// corrupt file — embeds every document, as a first build does.
pub fn build_reporting(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
) -> Result<(Manifest, EmbedReport), IndexError> {
    build_calibrated(index_dir, ontology, source, embedder, progress, false, None)
}

/// Share of the published snapshot's columns an unattended rebuild may lose and still publish.
pub const MAX_UNATTENDED_LOSS: f64 = 0.10;

/// [`build`] for rebuilds nobody watches (`serve --refresh` and `--watch`): a catalog read that
/// has more than [`MAX_UNATTENDED_LOSS`] fewer columns than the published snapshot is not
/// published (`SnapshotShrunk`), because a source that answers partially (an upstream
/// restarting, a permission withdrawn mid-read) looks exactly like that. `govcat index`
/// publishes a smaller catalog deliberately.
pub fn build_unattended(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
) -> Result<Manifest, IndexError> {
    build_calibrated(index_dir, ontology, source, embedder, &Quiet, true, None).map(|(m, _)| m)
}

/// [`build_reporting`] (or, `unattended`, [`build_unattended`]) that also fits the snapshot's
/// calibration map with `calibrate` before publishing it (`govcat index`, `serve --refresh`).
pub fn build_calibrated(
    index_dir: &Path,
    ontology: &Ontology,
    source: &dyn CatalogSource,
    embedder: &dyn Embedder,
    progress: &dyn Progress,
    unattended: bool,
    calibrate: Option<&Calibrate>,
) -> Result<(Manifest, EmbedReport), IndexError> {
    let (docs, counts) = collect_documents(ontology, source)?;
    if unattended {
        refuse_shrunk(index_dir, &counts)?;
    }
    let provenance = Provenance {
        freshness: source.freshness(),
        ontology_version: &ontology.version,
        glossary_text: ontology.glossary_text.as_deref(),
        abbreviations_text: ontology.abbreviations_text.as_deref(),
        built_from: BuiltFrom {
            source: Some(source.identity()),
            ontology_checksum: Some(ontology.checksum()),
        },
    };
    publish_documents(
        index_dir, &docs, counts, embedder, provenance, calibrate, progress,
    )
}

/// What a snapshot records of where its documents came from.
pub struct Provenance<'a> {
    pub freshness: SourceFreshness,
    pub ontology_version: &'a str,
    pub glossary_text: Option<&'a str>,
    pub abbreviations_text: Option<&'a str>,
    pub built_from: BuiltFrom,
}

/// The part of a build after the catalog is read: embeds `docs` (reusing the published
/// snapshot's vectors of unchanged texts), indexes them (patching the published HNSW graph when
/// few points changed, `dense::write_graph`), calibrates and publishes the snapshot.
pub fn publish_documents(
    index_dir: &Path,
    docs: &[Document],
    counts: Counts,
    embedder: &dyn Embedder,
    provenance: Provenance,
    calibrate: Option<&Calibrate>,
    progress: &dyn Progress,
) -> Result<(Manifest, EmbedReport), IndexError> {
    let model = model_info(embedder);
    let previous = match PreviousEmbeddings::load(index_dir, &model) {
        Ok(previous) => previous,
        Err(reason) => {
            tracing::info!(%reason, "embedding every document: no reusable snapshot vectors");
            None
        }
    };
    let slices = index_dir.join(super::slices::SLICES_DIR);
    let (vectors, report, old_of_new) =
        embed_documents_reusing(embedder, docs, previous.as_ref(), &slices, progress)?;
    let graph_seed = previous.as_ref().and_then(|p| {
        p.graph.as_ref().map(|graph| dense::GraphSeed {
            snapshot: &p.snapshot,
            graph,
            old_of_new: &old_of_new,
        })
    });
    tracing::info!(
        embedded = report.embedded,
        reused = report.reused,
        from_slices = report.from_slices,
        "snapshot document vectors"
    );
    // A catalog that moved little (documents embedded anew plus published ones gone) is
    // recalibrated on a smaller sample.
    let moved_little = previous.as_ref().is_some_and(|p| {
        let kept = old_of_new.iter().filter(|o| o.is_some()).count();
        let gone = p.vectors.len().saturating_sub(kept);
        (report.embedded + gone) as f64 <= dense::PATCH_MAX_INSERTED * docs.len() as f64
    });
    let max_columns = if moved_little {
        crate::calibration::REFRESH_MAX_COLUMNS
    } else {
        crate::calibration::MAX_COLUMNS
    };
    let id = write_snapshot_with_glossary(
        index_dir,
        docs,
        &vectors,
        counts,
        provenance.freshness,
        model,
        provenance.ontology_version,
        provenance.glossary_text,
        provenance.abbreviations_text,
        provenance.built_from,
        calibrate.map(|c| (c, max_columns)),
        graph_seed,
        progress,
    )?;
    Ok((
        read_manifest(&index_dir.join("snapshots").join(id))?,
        report,
    ))
}

/// The key of one document vector: the model (id, dimension, weights) and the exact texts it
/// embeds, each length-prefixed so no two lists of texts share a key.
pub(super) fn embedding_key<'a>(
    model: &ModelInfo,
    texts: impl Iterator<Item = &'a str>,
) -> [u8; 32] {
    let mut h = Sha256::new();
    let mut part = |bytes: &[u8]| {
        h.update((bytes.len() as u64).to_le_bytes());
        h.update(bytes);
    };
    part(model.id.as_bytes());
    part(model.dimension.to_string().as_bytes());
    part(model.checksum.as_bytes());
    texts.for_each(|t| part(t.as_bytes()));
    h.finalize().into()
}

/// The vectors of the published snapshot, by [`embedding_key`].
pub(super) struct PreviousEmbeddings {
    vectors: Vectors,
    rows: std::collections::HashMap<[u8; 32], usize>,
    model: ModelInfo,
    /// The published snapshot's id, and its HNSW graph when it has one that reads.
    snapshot: String,
    graph: Option<graph::Graph>,
}

impl PreviousEmbeddings {
    /// `Ok(None)` when nothing is published; `Err` says why published vectors are not reusable.
    pub(super) fn load(
        index_dir: &Path,
        model: &ModelInfo,
    ) -> Result<Option<PreviousEmbeddings>, String> {
        if !index_dir.join("CURRENT").exists() {
            return Ok(None);
        }
        let dir = index_dir
            .join("snapshots")
            .join(current_id(index_dir).map_err(|e| e.to_string())?);
        let manifest = read_manifest(&dir).map_err(|e| e.to_string())?;
        super::reuse::lends_vectors(&manifest, model)?;
        let verified = |name: &str| -> Result<Vec<u8>, String> {
            let path = dir.join(name);
            let bytes = fs::read(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            let sum = format!("{:x}", Sha256::digest(&bytes));
            match manifest.files.get(name) {
                Some(expected) if *expected == sum => Ok(bytes),
                _ => Err(format!("{} does not match its manifest", path.display())),
            }
        };
        let keys =
            super::reuse::keys_in(&verified(DOCUMENTS)?, model).map_err(|e| e.to_string())?;
        let vectors = Vectors::from_bytes(&verified(VECTORS)?, model.dimension, VECTORS)
            .map_err(|e| e.to_string())?;
        if vectors.len() != keys.len() {
            return Err(format!(
                "{} vectors for {} documents",
                vectors.len(),
                keys.len()
            ));
        }
        let rows = keys
            .into_iter()
            .enumerate()
            .map(|(row, key)| (key, row))
            .collect();
        // A graph that does not read only costs the patch: the build makes a fresh one.
        let graph = (manifest.dense_backend == Backend::Hnsw)
            .then(|| verified(dense::GRAPH_FILE).ok())
            .flatten()
            .and_then(|bytes| graph::Graph::from_bytes(&bytes, dense::GRAPH_FILE).ok())
            .filter(|g| g.points() == vectors.len());
        Ok(Some(PreviousEmbeddings {
            vectors,
            rows,
            model: model.clone(),
            snapshot: manifest.id,
            graph,
        }))
    }

    /// The published row holding `d`'s vector.
    fn row(&self, d: &Document) -> Option<usize> {
        self.rows
            .get(&embedding_key(&self.model, embedded_texts(d)))
            .copied()
    }
}

/// [`embed_documents`] that copies the vectors `previous` holds for unchanged texts, then those
/// the slice files in `slices` hold ([`super::slices`]), and embeds only the rest (in batches).
/// Progress counts texts; reused ones advance at once. Also returns, per document, the
/// published row its vector was copied from (each row given to one document only, for the
/// graph patch).
pub(super) fn embed_documents_reusing(
    embedder: &dyn Embedder,
    docs: &[Document],
    previous: Option<&PreviousEmbeddings>,
    slices: &Path,
    progress: &dyn Progress,
) -> Result<(Vectors, EmbedReport, Vec<Option<u32>>), IndexError> {
    let dim = embedder.dimension();
    let mut data = vec![0f32; docs.len() * dim];
    let mut missing = Vec::new();
    let mut old_of_new = vec![None; docs.len()];
    let mut claimed = vec![false; previous.map_or(0, |p| p.vectors.len())];
    for (i, d) in docs.iter().enumerate() {
        match previous.and_then(|p| p.row(d).map(|row| (p, row))) {
            Some((p, row)) => {
                data[i * dim..(i + 1) * dim].copy_from_slice(p.vectors.row(row));
                if !std::mem::replace(&mut claimed[row], true) {
                    old_of_new[i] = Some(row as u32);
                }
            }
            None => missing.push(i),
        }
    }
    let reused = docs.len() - missing.len();
    let from_slices = super::slices::fill_from_slices(
        slices,
        &model_info(embedder),
        docs,
        &mut missing,
        &mut data,
    )?;
    let report = EmbedReport {
        embedded: missing.len(),
        reused,
        from_slices,
    };
    let total = text_count(docs);
    progress.start(EMBEDDING_STEP, total);
    progress.advance(total - text_count(missing.iter().map(|&i| &docs[i])));
    embed_rows(embedder, docs, &missing, &mut data, progress)?;
    progress.finish();
    Ok((Vectors::new(dim, data), report, old_of_new))
}

/// `SnapshotShrunk` when `counts` has more than [`MAX_UNATTENDED_LOSS`] fewer columns than the
/// published snapshot (none published, or unreadable: nothing to compare, no refusal).
pub(super) fn refuse_shrunk(index_dir: &Path, counts: &Counts) -> Result<(), IndexError> {
    let Ok(id) = current_id(index_dir) else {
        return Ok(());
    };
    let Ok(published) = read_manifest(&index_dir.join("snapshots").join(&id)) else {
        return Ok(());
    };
    let floor = published.counts.columns as f64 * (1.0 - MAX_UNATTENDED_LOSS);
    if (counts.columns as f64) < floor {
        return Err(IndexError::Shrunk {
            published: id,
            published_columns: published.counts.columns,
            columns: counts.columns,
        });
    }
    Ok(())
}
