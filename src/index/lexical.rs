//! The lexical side: a tantivy BM25 index over the documents' words (English stemming,
//! lower-casing, ASCII folding, identifier splitting done before indexing). A run-together or
//! compound word meets its parts through the document's and the query's expansion (glossary,
//! abbreviations, parts split against the catalog's vocabulary: `index::expand_documents`,
//! `Snapshot::expand_query`).
//!
//! Query syntax (stated in the `find_precedents` description): whole stemmed words match;
//! `word*` matches words starting with `word`; `"two words"` matches the phrase.

use std::any::Any;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering as AtomicOrdering};
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};
use tantivy::collector::{Collector, SegmentCollector, TopDocs};
use tantivy::query::{
    BooleanQuery, BoostQuery, EnableScoring, Occur, PhraseQuery, Query, RegexQuery, TermQuery,
    Weight,
};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{doc, DocAddress, Index, ReloadPolicy, Searcher, SegmentReader, Term};

use super::documents::{Document, Kind};
use super::IndexError;
use crate::text::{fold, words};

const WORDS: &str = "govcat_words";
const WORDS_DE: &str = "govcat_words_de";
/// Longest query word sequence tried as a whole column name.
const NAME_KEY_MAX_WORDS: usize = 3;

/// Weights of the lexical query's clauses relative to a whole-word match on the document's
/// text. Query-time only (the index does not depend on them), so `govcat eval --param` can
/// measure each one; they travel in [`crate::retrieval::Params`].
///
/// Each was put through the test of issue 15 (2026-12-01): set to 0, every set measured with
/// `govcat eval` (hybrid nDCG@10, calibration/held-out splits; `eval tags` accuracy@1); a weight
/// stays when it helps at least two catalogs. Figures are "with vs without". A character
/// trigram clause (weight 0.25) failed the test and was removed: without it every figure of
/// gdc-cptac, mimic-omop held-out and both tag sets was identical, bundled held-out 0.8010 vs
/// 0.8006 (mimic-omop calibration 0.347 vs 0.362, better without).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Boosts {
    /// A match on the column (or ontology key/value) name: identifiers are the most specific
    /// words a document has. gdc-cptac calibration 0.665 vs 0.659, held-out 0.636 vs 0.628;
    /// bundled held-out 0.803 vs 0.800; demo sensitivity 0.767 vs 0.757.
    pub name_boost: f32,
    /// A match on the table/domain context field. Bundled held-out 0.801 vs 0.798; gdc-cptac
    /// held-out 0.639 vs 0.636; demo retention 0.686 vs 0.682 (mimic-omop calibration 0.347 vs
    /// 0.358: worse with it).
    pub context_boost: f32,
    /// A match on the German-stemmed field. Bundled calibration 0.788 vs 0.782, held-out 0.803
    /// vs 0.798; gdc-cptac held-out 0.636 vs 0.631; demo lawful_basis 0.593 vs 0.587
    /// (mimic-omop held-out 0.369 vs 0.399: worse with it).
    pub german_boost: f32,
    /// A query word sequence that is a column's whole name (`iban` before `iban length`).
    /// Bundled calibration 0.792 vs 0.791; demo lawful_basis 0.591 vs 0.586; fides-saas
    /// sensitivity 0.881 vs 0.876 (fides data_category 0.875 vs 0.876, demo retention 0.686 vs
    /// 0.691: mixed).
    pub name_key_boost: f32,
    /// A match on a document's [`Document::expansion`] (its German words and abbreviations in
    /// English, its run-together name's parts). Bundled calibration 0.792 vs 0.790; demo
    /// lawful_basis 0.591 vs 0.587; no change on gdc-cptac or fides-saas. Only the demo catalog
    /// has German words, so only it can show this clause's effect; kept for German columns.
    pub gloss_boost: f32,
    /// An expansion term of the query, relative to the caller's own words. Bundled held-out
    /// 0.801 vs 0.786; gdc-cptac held-out 0.6393 vs 0.6390; fides data_category 0.875 vs
    /// 0.874; demo retention 0.686 vs 0.682.
    pub expansion_boost: f32,
}

impl Default for Boosts {
    fn default() -> Self {
        Boosts {
            name_boost: 1.0,
            context_boost: 0.1,
            german_boost: 0.5,
            name_key_boost: 1.0,
            gloss_boost: 0.5,
            expansion_boost: 0.5,
        }
    }
}

fn words_analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(48))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter);
    match StopWordFilter::new(Language::English) {
        Some(stop) => builder
            .filter(stop)
            .filter(Stemmer::new(Language::English))
            .build(),
        None => builder.filter(Stemmer::new(Language::English)).build(),
    }
}

fn german_analyzer() -> TextAnalyzer {
    let builder = TextAnalyzer::builder(SimpleTokenizer::default())
        .filter(RemoveLongFilter::limit(48))
        .filter(LowerCaser)
        .filter(AsciiFoldingFilter);
    match StopWordFilter::new(Language::German) {
        Some(stop) => builder
            .filter(stop)
            .filter(Stemmer::new(Language::German))
            .build(),
        None => builder.filter(Stemmer::new(Language::German)).build(),
    }
}

#[derive(Clone, Copy)]
struct Fields {
    ord: Field,
    scope: Field,
    name: Field,
    text: Field,
    text_de: Field,
    context: Field,
    /// English glossary terms of the document's German words (document-side expansion).
    gloss: Field,
    /// The whole identifier as one term (`iban`, `payee iban`): a query naming exactly this
    /// column name outranks a column whose name merely contains the word (`iban length`).
    name_key: Field,
}

fn schema() -> (Schema, Fields) {
    let mut b = Schema::builder();
    let words = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(WORDS)
            .set_index_option(IndexRecordOption::WithFreqsAndPositions),
    );
    let words_de = TextOptions::default().set_indexing_options(
        TextFieldIndexing::default()
            .set_tokenizer(WORDS_DE)
            .set_index_option(IndexRecordOption::WithFreqs),
    );
    let fields = Fields {
        ord: b.add_u64_field("ord", FAST),
        scope: b.add_text_field("scope", STRING),
        name: b.add_text_field("name", words.clone()),
        text: b.add_text_field("text", words.clone()),
        text_de: b.add_text_field("text_de", words_de),
        context: b.add_text_field("context", words.clone()),
        gloss: b.add_text_field("gloss", words),
        name_key: b.add_text_field("name_key", STRING),
    };
    (b.build(), fields)
}

fn register(index: &Index) {
    index.tokenizers().register(WORDS, words_analyzer());
    index.tokenizers().register(WORDS_DE, german_analyzer());
}

/// The exact-name term of an identifier's words: folded, single spaces.
fn name_key(name_words: &str) -> String {
    words(name_words).join(" ")
}

/// The scope term of a document: `domain:<name>` for columns, `ontology` for values.
pub fn scope_term(doc: &Document) -> String {
    match (doc.kind, &doc.domain) {
        (Kind::Column, Some(d)) => format!("domain:{d}"),
        _ => "ontology".to_string(),
    }
}

fn tantivy_error(what: &str, e: impl std::fmt::Display) -> IndexError {
    IndexError::Corrupt {
        file: what.to_string(),
        problem: e.to_string(),
    }
}

/// Writes the lexical index of `docs` into `dir` (which must exist and be empty). A document's
/// [`Document::expansion`] (English terms of its German words and abbreviations, parts of its
/// run-together words) goes into its `gloss` field, so an English query meets a German column
/// name or description (and a German query's expansion meets it too).
///
/// A catalog of more than [`SEGMENT_DOCS`] documents is written in equal segments of at most
/// that many; a smaller one as tantivy writes it (one segment).
pub fn build(dir: &Path, docs: &[Document]) -> Result<(), IndexError> {
    let segments = docs.len().div_ceil(SEGMENT_DOCS);
    let per_segment = (segments > 1).then(|| docs.len().div_ceil(segments));
    build_in_segments(dir, docs, per_segment)
}

/// Most documents a lexical segment holds. A search's segments are the units the two threads
/// of a hybrid search share (the dense side takes what the lexical thread has not begun), so a
/// large catalog's segments are equal and small enough to share: at 1M, 8 segments of 125,000.
pub const SEGMENT_DOCS: usize = 131_072;

/// [`build`], committing a segment every `docs_per_segment` documents and merging none of
/// them (`None`: one commit, tantivy merging as it likes).
fn build_in_segments(
    dir: &Path,
    docs: &[Document],
    docs_per_segment: Option<usize>,
) -> Result<(), IndexError> {
    let (schema, f) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(|e| tantivy_error("tantivy", e))?;
    register(&index);
    let mut writer = index
        .writer_with_num_threads(1, 64_000_000)
        .map_err(|e| tantivy_error("tantivy writer", e))?;
    if docs_per_segment.is_some() {
        writer.set_merge_policy(Box::new(tantivy::indexer::NoMergePolicy));
    }
    for (ord, d) in docs.iter().enumerate() {
        if docs_per_segment.is_some_and(|n| ord > 0 && ord % n == 0) {
            writer
                .commit()
                .map_err(|e| tantivy_error("tantivy commit", e))?;
        }
        writer
            .add_document(doc!(
                f.ord => ord as u64,
                f.scope => scope_term(d),
                f.name => if d.name_expansion.is_empty() {
                    d.name_text.clone()
                } else {
                    format!("{} {}", d.name_text, d.name_expansion.join(" "))
                },
                f.text => d.lexical_text.clone(),
                f.text_de => d.lexical_text.clone(),
                f.context => d.context_text.clone(),
                f.gloss => d.expansion.join(" "),
                f.name_key => name_key(&d.name_text),
            ))
            .map_err(|e| tantivy_error("tantivy writer", e))?;
    }
    writer
        .commit()
        .map_err(|e| tantivy_error("tantivy commit", e))?;
    writer
        .wait_merging_threads()
        .map_err(|e| tantivy_error("tantivy merge", e))?;
    Ok(())
}

/// (ordinal, BM25 score) pairs, best first.
pub type Hits = Vec<(u32, f32)>;

/// A loaded lexical index.
pub struct Lexical {
    /// The index as opened (a snapshot never changes): every search and count reads it, so
    /// the segments [`Lexical::segments`] counts are those [`Lexical::prepare`] searches.
    searcher: Searcher,
    f: Fields,
}

/// Words that describe the act of describing a column ("contains", "column", "field"), not
/// its content. Dropped from free-text query words (phrases keep them): otherwise every
/// description that happens to say "contains" competes with the real match.
pub const QUERY_BOILERPLATE: &[&str] = &[
    "contain",
    "contains",
    "containing",
    "column",
    "columns",
    "field",
    "fields",
    "holds",
    "hold",
    "stores",
    "store",
    "stored",
    "value",
    "values",
    "data",
    "new",
    "which",
    "what",
    "tag",
    "tags",
    "copy",
    "should",
    "i",
    "we",
    "our",
    "my",
    "adding",
    "add",
    "where",
    "find",
];

/// One parsed part of a query.
#[derive(Debug, Clone, PartialEq)]
pub enum QueryPart {
    Word(String),
    /// An English term from the glossary for a German word of the query (lower weight).
    Expansion(String),
    Prefix(String),
    Phrase(Vec<String>),
}

/// Splits a description into words, `prefix*` and `"quoted phrases"`.
pub fn parse_query(description: &str) -> Vec<QueryPart> {
    let mut parts = Vec::new();
    let mut rest = description;
    while let Some(open) = rest.find('"') {
        parts.extend(plain_parts(&rest[..open]));
        let after = &rest[open + 1..];
        match after.find('"') {
            Some(close) => {
                let words: Vec<String> = crate::text::words(&after[..close]);
                if !words.is_empty() {
                    parts.push(QueryPart::Phrase(words));
                }
                rest = &after[close + 1..];
            }
            None => {
                rest = after;
            }
        }
    }
    parts.extend(plain_parts(rest));
    parts
}

fn plain_parts(text: &str) -> Vec<QueryPart> {
    text.split_whitespace()
        .flat_map(|token| {
            let prefix = token.ends_with('*');
            let ws: Vec<String> = crate::text::words(&crate::text::split_identifier(token))
                .into_iter()
                .filter(|w| !QUERY_BOILERPLATE.contains(&w.as_str()))
                .collect();
            let n = ws.len();
            ws.into_iter().enumerate().map(move |(i, w)| {
                if prefix && i + 1 == n {
                    QueryPart::Prefix(w)
                } else {
                    QueryPart::Word(w)
                }
            })
        })
        .collect()
}

impl Lexical {
    pub fn open(dir: &Path) -> Result<Lexical, IndexError> {
        let index = Index::open_in_dir(dir).map_err(|e| tantivy_error("tantivy", e))?;
        register(&index);
        // Fields come from the index's own schema: an index written by another govcat
        // version is refused here, not misread.
        let (expected, _) = schema();
        if index.schema() != expected {
            return Err(tantivy_error(
                &dir.display().to_string(),
                "the lexical index was written with another schema (another govcat version)",
            ));
        }
        let (_, f) = schema();
        let reader = index
            .reader_builder()
            .reload_policy(ReloadPolicy::Manual)
            .try_into()
            .map_err(|e| tantivy_error("tantivy reader", e))?;
        Ok(Lexical {
            searcher: reader.searcher(),
            f,
        })
    }
}

thread_local! {
    /// One analyzer per thread: building one (its stop-word set) cost more than analysing a
    /// word, and word splitting analyses every candidate part.
    static ENGLISH: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(words_analyzer());
    static GERMAN: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(german_analyzer());
}

/// The English stop words the main field drops (tantivy's `StopWordFilter` for English, the
/// Lucene list), as the server instructions name them to hosts: an acronym spelled like one
/// (IT, OR) is found by meaning only. A test holds the analyzer to this list.
pub const ENGLISH_STOP_WORDS: [&str; 33] = [
    "a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in", "into", "is", "it",
    "no", "not", "of", "on", "or", "such", "that", "the", "their", "then", "there", "these",
    "they", "this", "to", "was", "will", "with",
];

/// The English-stemmed tokens of `text`, as the main field holds them (stop words dropped).
pub fn stemmed(text: &str) -> Vec<String> {
    analyse_with(&ENGLISH, text)
}

fn analyse_with(
    analyzer: &'static std::thread::LocalKey<std::cell::RefCell<TextAnalyzer>>,
    text: &str,
) -> Vec<String> {
    analyzer.with_borrow_mut(|analyzer| {
        let mut stream = analyzer.token_stream(text);
        let mut out = Vec::new();
        while stream.advance() {
            out.push(stream.token().text.clone());
        }
        out
    })
}

impl Lexical {
    fn word_query(&self, field: Field, token: &str) -> Box<dyn Query> {
        Box::new(TermQuery::new(
            Term::from_field_text(field, token),
            IndexRecordOption::WithFreqs,
        ))
    }

    /// Builds the query for `parts`, or `None` when no part yields a searchable term.
    fn build_query(
        &self,
        parts: &[QueryPart],
        scopes: Option<&[String]>,
        b: &Boosts,
    ) -> Option<Box<dyn Query>> {
        let mut should: Vec<(Occur, Box<dyn Query>)> = Vec::new();
        for part in parts {
            match part {
                QueryPart::Word(w) => {
                    let tokens = stemmed(w);
                    for token in &tokens {
                        should.push((Occur::Should, self.word_query(self.f.text, token)));
                        should.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(
                                self.word_query(self.f.name, token),
                                b.name_boost,
                            )),
                        ));
                        should.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(
                                self.word_query(self.f.context, token),
                                b.context_boost,
                            )),
                        ));
                        should.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(
                                self.word_query(self.f.gloss, token),
                                b.gloss_boost,
                            )),
                        ));
                    }
                    for token in analyse_with(&GERMAN, w) {
                        should.push((
                            Occur::Should,
                            Box::new(BoostQuery::new(
                                self.word_query(self.f.text_de, &token),
                                b.german_boost,
                            )),
                        ));
                    }
                }
                QueryPart::Expansion(w) => {
                    for token in stemmed(w) {
                        for field in [self.f.text, self.f.name, self.f.gloss] {
                            should.push((
                                Occur::Should,
                                Box::new(BoostQuery::new(
                                    self.word_query(field, &token),
                                    b.expansion_boost,
                                )),
                            ));
                        }
                    }
                }
                QueryPart::Prefix(p) => {
                    let folded: String = fold(p).chars().filter(|c| c.is_alphanumeric()).collect();
                    if folded.is_empty() {
                        continue;
                    }
                    if let Ok(q) = RegexQuery::from_pattern(&format!("{folded}.*"), self.f.text) {
                        should.push((Occur::Should, Box::new(q)));
                    }
                }
                QueryPart::Phrase(words) => {
                    let tokens = stemmed(&words.join(" "));
                    match tokens.len() {
                        0 => {}
                        1 => should.push((Occur::Should, self.word_query(self.f.text, &tokens[0]))),
                        _ => {
                            let terms = tokens
                                .iter()
                                .map(|t| Term::from_field_text(self.f.text, t))
                                .collect();
                            should.push((Occur::Should, Box::new(PhraseQuery::new(terms))));
                        }
                    }
                }
            }
        }
        let plain: Vec<&str> = parts
            .iter()
            .filter_map(|p| match p {
                QueryPart::Word(w) => Some(w.as_str()),
                _ => None,
            })
            .collect();
        for n in 1..=NAME_KEY_MAX_WORDS.min(plain.len()) {
            for window in plain.windows(n) {
                let key = name_key(&window.join(" "));
                if !key.is_empty() {
                    should.push((
                        Occur::Should,
                        Box::new(BoostQuery::new(
                            Box::new(TermQuery::new(
                                Term::from_field_text(self.f.name_key, &key),
                                IndexRecordOption::Basic,
                            )),
                            b.name_key_boost,
                        )),
                    ));
                }
            }
        }
        if should.is_empty() {
            return None;
        }
        let words: Box<dyn Query> = Box::new(BooleanQuery::new(should));
        let Some(scopes) = scopes else {
            return Some(words);
        };
        let scope_filter: Vec<Box<dyn Query>> = scopes
            .iter()
            .map(|s| {
                Box::new(TermQuery::new(
                    Term::from_field_text(self.f.scope, s),
                    IndexRecordOption::Basic,
                )) as Box<dyn Query>
            })
            .collect();
        Some(Box::new(BooleanQuery::new(vec![
            (Occur::Must, words),
            (Occur::Must, Box::new(BooleanQuery::union(scope_filter))),
        ])))
    }

    /// Top `k` documents (ordinal, BM25 score) within `scopes` (`None`: the whole index), best
    /// first, ties by ordinal. One thread; [`Lexical::prepare`] splits the same search by
    /// segment.
    pub fn search(
        &self,
        parts: &[QueryPart],
        scopes: Option<&[String]>,
        k: usize,
        boosts: &Boosts,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        let search = self.prepare(parts, scopes, k, boosts)?;
        let segments = (0..search.segments())
            .map(|s| search.segment(s))
            .collect::<Result<Vec<_>, _>>()?;
        search.merge(segments)
    }

    /// The search of [`Lexical::search`], prepared (query, BM25 weights) to run one segment at
    /// a time, on any thread, then merged: the result is the same list, since this is what
    /// tantivy's own search does segment after segment.
    pub fn prepare(
        &self,
        parts: &[QueryPart],
        scopes: Option<&[String]>,
        k: usize,
        boosts: &Boosts,
    ) -> Result<Prepared, IndexError> {
        let searcher = self.searcher.clone();
        let weight = match self.build_query(parts, scopes, boosts) {
            None => None,
            Some(query) => Some(
                query
                    .weight(EnableScoring::enabled_from_searcher(&searcher))
                    .map_err(|e| tantivy_error("tantivy search", e))?,
            ),
        };
        Ok(Prepared {
            searcher,
            weight,
            k,
        })
    }

    /// Searches each of `queries` as [`Lexical::search`] does (the same lists, in order) on
    /// this thread and a second one, while this thread first runs `beside` (a hybrid search's
    /// dense side): the work is cut into units of one query on one segment, each taken by
    /// whichever thread is free, and a query's BM25 weights are prepared once, by the first
    /// thread to reach it. When no thread can be had (a process limit) all runs here, `beside`
    /// first.
    pub fn search_beside<T>(
        &self,
        queries: &[Vec<QueryPart>],
        scopes: Option<&[String]>,
        k: usize,
        boosts: &Boosts,
        beside: impl FnOnce() -> T,
    ) -> (Result<Vec<Hits>, IndexError>, T) {
        let segments = self.segments();
        let units = queries.len() * segments;
        let plans: Vec<OnceLock<Result<Prepared, IndexError>>> =
            queries.iter().map(|_| OnceLock::new()).collect();
        let next = AtomicUsize::new(0);
        let share = || -> Vec<(usize, Option<SegmentHits>)> {
            std::iter::from_fn(|| {
                let unit = next.fetch_add(1, AtomicOrdering::Relaxed);
                (unit < units).then(|| {
                    let (q, s) = (unit / segments, unit % segments);
                    let plan =
                        plans[q].get_or_init(|| self.prepare(&queries[q], scopes, k, boosts));
                    // A failed preparation or segment is reported once, when merged below.
                    (unit, plan.as_ref().ok().and_then(|p| p.segment(s).ok()))
                })
            })
            .collect()
        };
        let (mut done, besides) = std::thread::scope(|scope| {
            let side = std::thread::Builder::new()
                .name("govcat-lexical".into())
                .spawn_scoped(scope, share)
                .ok();
            let besides = beside();
            let mut done = share();
            if let Some(side) = side {
                done.extend(
                    side.join()
                        .unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
                );
            }
            (done, besides)
        });
        done.sort_by_key(|(unit, _)| *unit);
        let mut done = done.into_iter().map(|(_, hits)| hits);
        let merged = plans
            .into_iter()
            .map(|plan| {
                let Some(plan) = plan.into_inner() else {
                    return Ok(Vec::new()); // no segment: an empty index
                };
                let plan = plan?;
                let mut hits = Vec::with_capacity(segments);
                for s in 0..segments {
                    match done.next().flatten() {
                        Some(h) => hits.push(h),
                        None => hits.push(plan.segment(s)?), // its error, once more
                    }
                }
                plan.merge(hits)
            })
            .collect();
        (merged, besides)
    }

    /// Number of segments of the index: [`Prepared::segment`]'s range.
    pub fn segments(&self) -> usize {
        self.searcher.segment_readers().len()
    }
    /// Number of documents whose text holds `word` (stemmed); 0 for a word that is not one
    /// token (a stop word, several words).
    pub fn word_freq(&self, word: &str) -> u64 {
        self.freq_in(self.f.text, word)
    }

    /// Number of documents whose name (identifier words) holds `word` (stemmed).
    pub fn name_freq(&self, word: &str) -> u64 {
        self.freq_in(self.f.name, word)
    }

    fn freq_in(&self, field: Field, word: &str) -> u64 {
        match stemmed(word).as_slice() {
            [token] => self
                .searcher
                .doc_freq(&Term::from_field_text(field, token))
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// Number of documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.searcher.num_docs()
    }
}

/// A lexical search ready to run segment by segment ([`Lexical::prepare`]).
pub struct Prepared {
    searcher: Searcher,
    /// `None` when the query has no searchable term: every segment finds nothing.
    weight: Option<Box<dyn Weight>>,
    k: usize,
}

/// The best `k` hits of one segment, as tantivy's collector left them (its type is private to
/// tantivy, hence the box); [`Prepared::merge`] takes them.
pub struct SegmentHits(Box<dyn Any + Send>);

/// The collector of every lexical search: top `k` by BM25, ties by document address.
fn top(k: usize) -> impl Collector<Fruit = Vec<(f32, DocAddress)>> {
    TopDocs::with_limit(k).order_by_score()
}

fn collect_segment<C: Collector>(
    collector: &C,
    weight: &dyn Weight,
    s: usize,
    reader: &SegmentReader,
) -> tantivy::Result<SegmentHits> {
    let fruit = collector.collect_segment(weight, s as u32, reader)?;
    Ok(SegmentHits(Box::new(fruit)))
}

fn merge_segments<C: Collector>(
    collector: &C,
    segments: Vec<SegmentHits>,
) -> Result<C::Fruit, IndexError> {
    let fruits = segments
        .into_iter()
        .map(|s| {
            s.0.downcast::<<C::Child as SegmentCollector>::Fruit>()
                .map(|f| *f)
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(|_| tantivy_error("tantivy search", "segment hits of another search"))?;
    collector
        .merge_fruits(fruits)
        .map_err(|e| tantivy_error("tantivy search", e))
}

impl Prepared {
    /// Number of segments (each one call of [`Prepared::segment`]).
    pub fn segments(&self) -> usize {
        self.searcher.segment_readers().len()
    }

    /// The best hits of segment `s`.
    pub fn segment(&self, s: usize) -> Result<SegmentHits, IndexError> {
        let (Some(weight), Some(reader)) = (&self.weight, self.searcher.segment_readers().get(s))
        else {
            return Ok(SegmentHits(Box::new(())));
        };
        collect_segment(&top(self.k), weight.as_ref(), s, reader)
            .map_err(|e| tantivy_error("tantivy search", e))
    }

    /// The segments' hits merged: top `k` (ordinal, BM25 score), best first, ties by ordinal.
    pub fn merge(&self, segments: Vec<SegmentHits>) -> Result<Vec<(u32, f32)>, IndexError> {
        if self.weight.is_none() {
            return Ok(Vec::new());
        }
        let top = merge_segments(&top(self.k), segments)?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = self
                .searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("ord")
                .map_err(|e| tantivy_error("tantivy fast field ord", e))?;
            let ord = column.first(addr.doc_id).ok_or_else(|| {
                tantivy_error("tantivy fast field ord", "document without ordinal")
            })?;
            out.push((ord as u32, score));
        }
        out.sort_by(crate::index::best_first);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {

    /// The list the instructions give hosts is the one the analyzer drops, and a word outside
    /// it (an acronym such as HR or US) is kept.
    #[test]
    fn the_stop_words_named_to_hosts_are_the_ones_the_main_field_drops() {
        for word in ENGLISH_STOP_WORDS {
            assert_eq!(stemmed(word), Vec::<String>::new(), "{word}");
        }
        for word in ["us", "hr", "am", "do", "his"] {
            assert_eq!(stemmed(word).len(), 1, "{word}");
        }
    }

    use super::*;

    #[test]
    fn query_parts_cover_words_prefixes_and_phrases() {
        assert_eq!(
            parse_query(r#"iban* "date of birth" claimHandler"#),
            vec![
                QueryPart::Prefix("iban".into()),
                QueryPart::Phrase(vec!["date".into(), "of".into(), "birth".into()]),
                QueryPart::Word("claim".into()),
                QueryPart::Word("handler".into()),
            ]
        );
    }

    fn column(ord: usize, name: &str, text: &str) -> Document {
        let mut d = Document::bare(&format!("d.t.c{ord}"), Kind::Column);
        d.domain = Some("d".into());
        d.name_text = name.into();
        d.lexical_text = format!("{name} {text}");
        d.context_text = "payments".into();
        d
    }

    fn catalog() -> Vec<Document> {
        let names = ["iban", "payee iban", "iban length", "birth date", "account"];
        let texts = ["bank account", "number", "of the payee", "customer", "date"];
        (0..40)
            .map(|i| column(i, names[i % 5], texts[(i / 5) % 5]))
            .collect()
    }

    fn open(docs: &[Document], per_segment: Option<usize>) -> (tempfile::TempDir, Lexical) {
        let dir = tempfile::tempdir().expect("temp dir");
        build_in_segments(dir.path(), docs, per_segment).expect("build");
        let lexical = Lexical::open(dir.path()).expect("open");
        (dir, lexical)
    }

    /// What tantivy's own `Searcher::search` gives for `parts` (the reference).
    fn tantivy_search(lexical: &Lexical, parts: &[QueryPart], k: usize) -> Vec<(u32, f32)> {
        let query = lexical
            .build_query(parts, None, &Boosts::default())
            .expect("a query");
        let searcher = &lexical.searcher;
        let top = searcher
            .search(&query, &TopDocs::with_limit(k).order_by_score())
            .expect("search");
        let mut out: Vec<(u32, f32)> = top
            .into_iter()
            .map(|(score, addr)| {
                let ords = searcher
                    .segment_reader(addr.segment_ord)
                    .fast_fields()
                    .u64("ord")
                    .expect("ord");
                (ords.first(addr.doc_id).expect("ord") as u32, score)
            })
            .collect();
        out.sort_by(crate::index::best_first);
        out
    }

    /// The search split by segment gives exactly what tantivy's own search gives, in any order
    /// the segments are searched, and what a one-segment index finds (BM25's statistics are
    /// the whole index's; a score may differ in its last bit, since a segment without one of
    /// the query's terms adds the others in another order); its pair: leaving a segment out
    /// loses exactly that segment's hits.
    #[test]
    fn a_search_split_by_segment_equals_tantivys_own_search() {
        let docs = catalog();
        let (_one_dir, one) = open(&docs, None);
        let (_many_dir, many) = open(&docs, Some(7));
        assert_eq!(one.segments(), 1);
        assert_eq!(many.segments(), 6);
        let b = Boosts::default();
        for query in [
            "iban",
            "payee account number",
            "birth* \"bank account\"",
            "date",
        ] {
            let parts = parse_query(query);
            let expected = tantivy_search(&many, &parts, 100);
            assert!(!expected.is_empty(), "{query}");
            assert_eq!(
                many.search(&parts, None, 100, &b).expect("search"),
                expected
            );
            // Segments searched last to first, as two threads may finish them.
            let prepared = many.prepare(&parts, None, 100, &b).expect("prepare");
            let mut hits: Vec<(usize, SegmentHits)> = (0..prepared.segments())
                .rev()
                .map(|s| (s, prepared.segment(s).expect("segment")))
                .collect();
            hits.sort_by_key(|(s, _)| *s);
            let merged = prepared
                .merge(hits.into_iter().map(|(_, h)| h).collect())
                .expect("merge");
            assert_eq!(merged, expected, "{query}");
            // The one-segment index: the same documents, each with the same score to 1e-5.
            let alone = one.search(&parts, None, 100, &b).expect("search");
            let by_ord = |hits: &[(u32, f32)]| {
                let mut h = hits.to_vec();
                h.sort_by_key(|(ord, _)| *ord);
                h
            };
            let (alone, merged) = (by_ord(&alone), by_ord(&merged));
            assert_eq!(
                alone.iter().map(|h| h.0).collect::<Vec<_>>(),
                merged.iter().map(|h| h.0).collect::<Vec<_>>(),
                "{query}"
            );
            assert!(
                alone
                    .iter()
                    .zip(&merged)
                    .all(|(a, m)| (a.1 - m.1).abs() < 1e-5),
                "{query}"
            );
            // The pair: without its first segment the search misses exactly that segment's
            // hits (which documents a segment holds is tantivy's business, so ask it).
            let segment = |s: usize| prepared.segment(s).expect("segment");
            let first = prepared.merge(vec![segment(0)]).expect("merge");
            let rest = prepared
                .merge((1..prepared.segments()).map(segment).collect())
                .expect("merge");
            assert!(!first.is_empty() && !rest.is_empty(), "{query}");
            assert_eq!(first.len() + rest.len(), expected.len(), "{query}");
            assert!(first.iter().all(|h| !rest.contains(h)), "{query}");
        }
    }

    /// Several queries searched on two threads in units of one query on one segment: each
    /// query's list is the one [`Lexical::search`] gives, in query order, and the work beside
    /// ran once. The queries differ, so a unit credited to the wrong query could not pass.
    #[test]
    fn queries_searched_beside_other_work_are_each_their_own_in_order() {
        let docs = catalog();
        let (_dir, many) = open(&docs, Some(7));
        let b = Boosts::default();
        let queries: Vec<Vec<QueryPart>> = ["iban", "birth date", "payee account", "number"]
            .iter()
            .map(|q| parse_query(q))
            .collect();
        let alone: Vec<Vec<(u32, f32)>> = queries
            .iter()
            .map(|q| many.search(q, None, 100, &b).expect("search"))
            .collect();
        let mut ran = 0;
        let (shared, beside) = many.search_beside(&queries, None, 100, &b, || {
            ran += 1;
            "dense"
        });
        assert_eq!(shared.expect("search"), alone);
        assert_eq!((ran, beside), (1, "dense"));
        assert!(alone.windows(2).all(|w| w[0] != w[1]));
    }

    #[test]
    fn unclosed_quote_is_read_as_words() {
        assert_eq!(
            parse_query(r#""eu iban"#),
            vec![QueryPart::Word("eu".into()), QueryPart::Word("iban".into())]
        );
    }
}
