//! The textbook method every eval figure is compared with, built inside the same run from the
//! same snapshot documents: BM25 (tantivy's defaults k1 1.2, b 0.75; the `en_stem` analyzer:
//! lower-casing and the Porter2 English stemmer) over each document's name words and
//! description, all-MiniLM-L6-v2 exact cosine over the same text with no floor, and
//! reciprocal-rank fusion with k = 60 and equal weights. No glossary, no abbreviations or word
//! splitting, no boosts, no key-column rule: what a reviewer would build in an afternoon.

use std::collections::HashMap;

use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, Occur, Query, TermQuery};
use tantivy::schema::{IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST};
use tantivy::{doc, Index, IndexReader, Term};

use crate::embed::Embedder;
use crate::index::dense::{exact_top_k, Vectors};
use crate::index::Snapshot;
use crate::retrieval::{Hit, MatchType};
use crate::tools::ToolError;

/// Candidates per side, as in the product's retrieval.
pub const CANDIDATES: usize = crate::retrieval::CANDIDATES;
/// The reciprocal-rank constant of the textbook fusion (Cormack et al. 2009).
pub const RRF_K: f64 = 60.0;
/// Texts per embedding batch.
const BATCH: usize = 32;

/// The baseline's own indexes over a snapshot's documents (same ordinals).
pub struct Baseline {
    index: Index,
    reader: IndexReader,
    text: tantivy::schema::Field,
    vectors: Vectors,
}

fn failed(what: &str, e: impl std::fmt::Display) -> ToolError {
    ToolError::new(
        "EvalFailed",
        format!("building the baseline's {what} failed: {e}; retry, and if it persists report it with the command line"),
    )
}

/// The text both baseline sides see: a document's name words and description
/// (`Document::lexical_text`).
pub fn text(doc: &crate::index::documents::Document) -> &str {
    &doc.lexical_text
}

impl Baseline {
    /// Indexes and embeds every document of `snapshot`; `progress` is told of each batch.
    pub fn build(
        snapshot: &Snapshot,
        embedder: &dyn Embedder,
        progress: &dyn Fn(u64),
    ) -> Result<Baseline, ToolError> {
        let mut b = Schema::builder();
        // tantivy's `en_stem`: simple tokenizer, lower-casing, Porter2 English stemming.
        let words = TextOptions::default().set_indexing_options(
            TextFieldIndexing::default()
                .set_tokenizer("en_stem")
                .set_index_option(IndexRecordOption::WithFreqs),
        );
        let text_field = b.add_text_field("text", words);
        let ord_field = b.add_u64_field("ord", FAST);
        let index = Index::create_in_ram(b.build());
        let mut writer = index
            .writer_with_num_threads(1, 50_000_000)
            .map_err(|e| failed("BM25 index", e))?;
        for (ord, d) in snapshot.docs.iter().enumerate() {
            writer
                .add_document(doc!(text_field => text(d), ord_field => ord as u64))
                .map_err(|e| failed("BM25 index", e))?;
        }
        writer.commit().map_err(|e| failed("BM25 index", e))?;
        let reader = index.reader().map_err(|e| failed("BM25 index", e))?;
        let mut data = Vec::with_capacity(snapshot.docs.len() * embedder.dimension());
        for chunk in snapshot.docs.chunks(BATCH) {
            let texts: Vec<&str> = chunk.iter().map(text).collect();
            for v in embedder
                .embed_batch(&texts)
                .map_err(|e| failed("embeddings", e))?
            {
                data.extend(v);
            }
            progress(chunk.len() as u64);
        }
        Ok(Baseline {
            index,
            reader,
            text: text_field,
            vectors: Vectors::new(embedder.dimension(), data),
        })
    }

    /// BM25 candidates: every analysed word of `query` as an optional term, best first, ties
    /// by ordinal.
    pub fn bm25(&self, query: &str) -> Result<Vec<(u32, f32)>, ToolError> {
        let mut analyzer = self
            .index
            .tokenizer_for_field(self.text)
            .map_err(|e| failed("BM25 query", e))?;
        let mut stream = analyzer.token_stream(query);
        let mut clauses: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        while let Some(token) = stream.next() {
            let term = Term::from_field_text(self.text, &token.text);
            clauses.push((
                Occur::Should,
                Box::new(TermQuery::new(term, IndexRecordOption::WithFreqs)),
            ));
        }
        if clauses.is_empty() {
            return Ok(Vec::new());
        }
        let searcher = self.reader.searcher();
        let top = searcher
            .search(
                &BooleanQuery::new(clauses),
                &TopDocs::with_limit(CANDIDATES).order_by_score(),
            )
            .map_err(|e| failed("BM25 query", e))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, address) in top {
            let segment = searcher.segment_reader(address.segment_ord);
            let ords = segment
                .fast_fields()
                .u64("ord")
                .map_err(|e| failed("BM25 query", e))?;
            let ord = ords
                .first(address.doc_id)
                .ok_or_else(|| failed("BM25 query", "a document without ordinal"))?;
            out.push((ord as u32, score));
        }
        out.sort_by(crate::index::best_first);
        Ok(out)
    }

    /// Dense candidates: exact cosine of the plain query embedding, no floor.
    pub fn dense(
        &self,
        embedder: &dyn Embedder,
        query: &str,
    ) -> Result<Vec<(u32, f32)>, ToolError> {
        let v = embedder
            .embed_query(query)
            .map_err(|e| failed("query embedding", e))?;
        Ok(exact_top_k(&self.vectors, &v, CANDIDATES, &|_| true))
    }

    /// The baseline ranking of `query`: RRF (k = 60, equal weights) of both sides, ties by id;
    /// each hit says which side found it (`bm25_rank`, `dense_rank`).
    pub fn rank(
        &self,
        snapshot: &Snapshot,
        embedder: &dyn Embedder,
        query: &str,
    ) -> Result<Vec<Hit>, ToolError> {
        let mut hits: HashMap<u32, Hit> = HashMap::new();
        let sides = [self.bm25(query)?, self.dense(embedder, query)?];
        for (side, candidates) in sides.iter().enumerate() {
            for (rank, (ord, similarity)) in candidates.iter().enumerate() {
                let r = rank as u32 + 1;
                let h = hits.entry(*ord).or_insert(Hit {
                    ord: *ord,
                    score: 0.0,
                    bm25_rank: None,
                    dense_rank: None,
                    similarity: None,
                    match_type: MatchType::Semantic,
                    matched_by: Vec::new(),
                });
                h.score += 1.0 / (RRF_K + f64::from(r));
                if side == 0 {
                    h.bm25_rank = Some(r);
                    h.match_type = MatchType::Lexical;
                } else {
                    h.dense_rank = Some(r);
                    h.similarity = Some(*similarity);
                    if h.bm25_rank.is_some() {
                        h.match_type = MatchType::Both;
                    }
                }
            }
        }
        let mut ranked: Vec<Hit> = hits.into_values().collect();
        ranked.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| snapshot.doc(a.ord).id.cmp(&snapshot.doc(b.ord).id))
        });
        Ok(ranked)
    }
}
