//! The lexical side: a tantivy BM25 index over the documents' words (English stemming,
//! lower-casing, ASCII folding, identifier splitting done before indexing). A run-together or
//! compound word meets its parts through the document's and the query's expansion (glossary,
//! abbreviations, parts split against the catalog's vocabulary: `index::expand_documents`,
//! `Snapshot::expand_query`).
//!
//! Query syntax (stated in the `find_precedents` description): whole stemmed words match;
//! `word*` matches words starting with `word`; `"two words"` matches the phrase.

use std::path::Path;

use serde::{Deserialize, Serialize};
use tantivy::collector::TopDocs;
use tantivy::query::{BooleanQuery, BoostQuery, Occur, PhraseQuery, Query, RegexQuery, TermQuery};
use tantivy::schema::{
    Field, IndexRecordOption, Schema, TextFieldIndexing, TextOptions, FAST, STRING,
};
use tantivy::tokenizer::{
    AsciiFoldingFilter, Language, LowerCaser, RemoveLongFilter, SimpleTokenizer, Stemmer,
    StopWordFilter, TextAnalyzer,
};
use tantivy::{doc, Index, IndexReader, ReloadPolicy, Term};

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
pub fn build(dir: &Path, docs: &[Document]) -> Result<(), IndexError> {
    let (schema, f) = schema();
    let index = Index::create_in_dir(dir, schema).map_err(|e| tantivy_error("tantivy", e))?;
    register(&index);
    let mut writer = index
        .writer_with_num_threads(1, 64_000_000)
        .map_err(|e| tantivy_error("tantivy writer", e))?;
    for (ord, d) in docs.iter().enumerate() {
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

/// A loaded lexical index.
pub struct Lexical {
    reader: IndexReader,
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
        Ok(Lexical { reader, f })
    }
}

thread_local! {
    /// One analyzer per thread: building one (its stop-word set) cost more than analysing a
    /// word, and word splitting analyses every candidate part.
    static ENGLISH: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(words_analyzer());
    static GERMAN: std::cell::RefCell<TextAnalyzer> = std::cell::RefCell::new(german_analyzer());
}

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
    /// first, ties by ordinal.
    pub fn search(
        &self,
        parts: &[QueryPart],
        scopes: Option<&[String]>,
        k: usize,
        boosts: &Boosts,
    ) -> Result<Vec<(u32, f32)>, IndexError> {
        let Some(query) = self.build_query(parts, scopes, boosts) else {
            return Ok(Vec::new());
        };
        let searcher = self.reader.searcher();
        let top = searcher
            .search(&query, &TopDocs::with_limit(k).order_by_score())
            .map_err(|e| tantivy_error("tantivy search", e))?;
        let mut out = Vec::with_capacity(top.len());
        for (score, addr) in top {
            let column = searcher
                .segment_reader(addr.segment_ord)
                .fast_fields()
                .u64("ord")
                .map_err(|e| tantivy_error("tantivy fast field ord", e))?;
            let ord = column.first(addr.doc_id).ok_or_else(|| {
                tantivy_error("tantivy fast field ord", "document without ordinal")
            })?;
            out.push((ord as u32, score));
        }
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        Ok(out)
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
                .reader
                .searcher()
                .doc_freq(&Term::from_field_text(field, token))
                .unwrap_or(0),
            _ => 0,
        }
    }

    /// Number of documents in the index.
    pub fn num_docs(&self) -> u64 {
        self.reader.searcher().num_docs()
    }
}

#[cfg(test)]
mod tests {
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

    #[test]
    fn unclosed_quote_is_read_as_words() {
        assert_eq!(
            parse_query(r#""eu iban"#),
            vec![QueryPart::Word("eu".into()), QueryPart::Word("iban".into())]
        );
    }
}
