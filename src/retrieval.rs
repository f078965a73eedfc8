//! Hybrid precedent retrieval over a snapshot, in stages (see [`search`]), for the description
//! and each of the caller's alternatives alike: BM25 and dense candidates within the caller's
//! scope, fused by weighted reciprocal rank, dense-only
//! candidates below the calibrated similarity floor dropped, key columns weighted down unless
//! the description asks for an identifier, a total order `score desc, id asc`; then the
//! phrasings' lists fused into one, and pages addressed by a cursor tied to the snapshot and the
//! whole request. On an empty result: suggestions derived from
//! the caller's own words, never searched.
//!
//! Retrieval only ever returns documents of the snapshot (the closed set); it never
//! generates a value.

mod cursor;
mod params;

pub use cursor::{request_digest, Cursor, CursorError, CURSOR_CHECK_BYTES};
pub use params::{Fusion, Mode, Params, PhrasingFusion, Vote, VoteBy};

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::embed::Embedder;
use crate::index::documents::Kind;
use crate::index::lexical::{parse_query, QueryPart};
use crate::index::{ScopeFilter, Snapshot};

/// Candidates taken from each side before fusion.
pub const CANDIDATES: usize = 100;

/// How an entry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(
    description = "How an entry was found: lexical (by your words), semantic (by meaning, \
similarity at least request.min_similarity) or both."
)]
pub enum MatchType {
    Lexical,
    Semantic,
    Both,
}

/// One fused hit.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    pub ord: u32,
    pub score: f64,
    pub bm25_rank: Option<u32>,
    pub dense_rank: Option<u32>,
    pub similarity: Option<f32>,
    pub match_type: MatchType,
    /// The phrasings that found it (index into [`Query::phrasings`], description 0) and its
    /// rank in each one's own list, in input order; set by [`fuse_phrasings`], empty before.
    pub matched_by: Vec<PhrasingRank>,
}

/// An entry's rank (1-based) in the own list of one phrasing (0 = the description).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PhrasingRank {
    pub phrasing: usize,
    pub rank: u32,
}

/// What to search.
#[derive(Debug, Clone, PartialEq)]
pub struct Query<'a> {
    pub description: &'a str,
    /// The caller's other phrasings (validated: distinct, trimmed), each searched like the
    /// description; empty for none.
    pub alternatives: &'a [String],
    /// Resolved domains (never empty by accident: the caller resolves the default).
    pub domains: &'a [String],
    pub kinds: &'a [Kind],
    pub mode: Mode,
    /// The caller's answer to "is an identifier asked for?" (key columns are then not
    /// weighted down), for every phrasing; `None`: inferred per phrasing
    /// ([`asks_for_identifier_with`]).
    pub identifier: Option<bool>,
}

impl Query<'_> {
    /// The description, then the alternatives in input order: every text searched.
    pub fn phrasings(&self) -> Vec<&str> {
        std::iter::once(self.description)
            .chain(self.alternatives.iter().map(String::as_str))
            .collect()
    }
}

/// Retrieval failures.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    #[error("embedding the description failed: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

/// What one search ran and found: every fused hit in total order, the glossary expansion of
/// every phrasing ([`Snapshot::expand_query`], each phrasing's searched by both sides with it),
/// and whether the description asks for an identifier (the key-column rule of its list). The
/// request echo reads these from here, so it says what ran without computing it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    pub hits: Vec<Hit>,
    /// The description's expansion, then each alternative's terms not already there.
    pub expansion: Vec<String>,
    pub asks_for_identifier: bool,
}

/// One phrasing's expansion and key-column rule, computed once per search.
#[derive(Debug, Clone, PartialEq)]
pub struct Prepared {
    pub expansion: Vec<String>,
    pub asks_for_identifier: bool,
}

/// Each phrasing of `q` ([`Query::phrasings`]) with its expansion and key-column rule.
pub fn prepare(snapshot: &Snapshot, q: &Query<'_>) -> Vec<Prepared> {
    q.phrasings()
        .into_iter()
        .map(|p| {
            let expansion = snapshot.expand_query(p);
            Prepared {
                asks_for_identifier: q
                    .identifier
                    .unwrap_or_else(|| asks_for_identifier_with(p, &expansion)),
                expansion,
            }
        })
        .collect()
}

/// Runs one search: for the description and for each alternative exactly one lexical and/or
/// one dense query with the caller's unchanged text (plus its expansion, computed once).
///
/// The pipeline, each stage a function over plain data so that one can be swapped and
/// measured alone (`govcat eval queries` fuses the same candidates per mode):
/// 1. [`candidates_all`]: per phrasing, each side's top [`CANDIDATES`] within the caller's
///    scope (all phrasings embedded in one forward pass);
/// 2. [`fuse`]: per phrasing, weighted reciprocal rank, dense-only candidates below the floor
///    dropped;
/// 3. [`rerank`]: per phrasing, key columns weighted down unless it asks for an identifier;
/// 4. [`total_order`]: per phrasing, scores rounded as shown, `score desc, id asc`;
/// 5. [`fuse_phrasings`]: the phrasings' lists into one ([`PhrasingFusion`]), in total order;
///    with the description alone its list as it is.
pub fn search(
    snapshot: &Snapshot,
    embedder: &dyn Embedder,
    params: &Params,
    q: &Query<'_>,
) -> Result<Searched, RetrievalError> {
    let prepared = prepare(snapshot, q);
    let sides = candidates_all(snapshot, embedder, params, q, &prepared)?;
    let lists: Vec<Vec<Hit>> = sides
        .iter()
        .zip(&prepared)
        .map(|((lexical, dense), p)| {
            ranked(snapshot, params, lexical, dense, p.asks_for_identifier)
        })
        .collect();
    let mut expansion: Vec<String> = Vec::new();
    for p in &prepared {
        for t in &p.expansion {
            if !expansion.contains(t) {
                expansion.push(t.clone());
            }
        }
    }
    Ok(Searched {
        hits: fuse_phrasings(snapshot, params, lists),
        expansion,
        asks_for_identifier: prepared[0].asks_for_identifier,
    })
}

/// Stage 5 of [`search`]: the phrasings' own lists (description first, each in total order)
/// fused into one. Each hit's `matched_by` names the phrasings that found it and its rank in
/// each. The description alone keeps its list as it is (scores included). With alternatives
/// the score is the [`PhrasingFusion`] sum, the side ranks and similarity are those of the
/// first phrasing in `matched_by`, and `match_type` says which sides found it in any phrasing.
pub fn fuse_phrasings(snapshot: &Snapshot, params: &Params, lists: Vec<Vec<Hit>>) -> Vec<Hit> {
    let f = params.phrasings;
    fuse_lists(snapshot, lists, f.phrasing_rrf_k, |p| {
        if p == 0 {
            f.description_weight
        } else {
            f.alternative_weight
        }
    })
}

/// Weighted reciprocal-rank fusion of ranked lists, list `p` weighing `weight(p)`, in total
/// order ([`fuse_phrasings`]; `govcat eval`'s baseline_alt with k 60 and equal weights). One
/// list is returned as it is, with `matched_by` set.
pub fn fuse_lists(
    snapshot: &Snapshot,
    mut lists: Vec<Vec<Hit>>,
    k: f64,
    weight: impl Fn(usize) -> f64,
) -> Vec<Hit> {
    if lists.len() == 1 {
        let mut only = lists.pop().unwrap_or_default();
        for (i, h) in only.iter_mut().enumerate() {
            h.matched_by = vec![PhrasingRank {
                phrasing: 0,
                rank: i as u32 + 1,
            }];
        }
        return only;
    }
    let mut fused: HashMap<u32, Hit> = HashMap::new();
    for (p, list) in lists.iter().enumerate() {
        for (i, h) in list.iter().enumerate() {
            let rank = i as u32 + 1;
            let add = weight(p) / (k + f64::from(rank));
            let at = PhrasingRank { phrasing: p, rank };
            match fused.get_mut(&h.ord) {
                Some(f) => {
                    f.score += add;
                    f.matched_by.push(at);
                    f.match_type = match (f.match_type, h.match_type) {
                        (a, b) if a == b => a,
                        _ => MatchType::Both,
                    };
                }
                None => {
                    fused.insert(
                        h.ord,
                        Hit {
                            score: add,
                            matched_by: vec![at],
                            ..h.clone()
                        },
                    );
                }
            }
        }
    }
    let mut hits: Vec<Hit> = fused.into_values().collect();
    total_order(snapshot, &mut hits);
    hits
}

/// Stages 2–4 of [`search`] over one query's candidates.
pub fn ranked(
    snapshot: &Snapshot,
    params: &Params,
    lexical: &[(u32, f32)],
    dense: &[(u32, f32)],
    asks_for_identifier: bool,
) -> Vec<Hit> {
    let mut hits = fuse(params, lexical, dense);
    rerank(snapshot, params, asks_for_identifier, &mut hits);
    total_order(snapshot, &mut hits);
    hits
}

/// Last words of a column name that make it a key: `customer_no`, `claimId`, `vertrag_nr`.
/// Not "number": `phone_number` and `account_number` hold the attribute itself (and adding it
/// changed nothing on the calibration split).
const KEY_NAME_ENDINGS: [&str; 4] = ["id", "key", "no", "nr"];
/// Words of a description that ask for an identifier, besides German compounds ending in
/// `nummer`/`nr` (`Kundennummer`, `vsnr`) and words starting with `identif`. "who" asks for
/// one too: the person who did something is stored as a key (`underwriter_id`, `reviewed_by`).
const IDENTIFIER_WORDS: [&str; 15] = [
    "id", "ids", "no", "nr", "number", "numbers", "key", "keys", "nummer", "kennung", "who",
    "whom", "whose", "wer", "wem",
];

/// A column named after what it identifies (`customer_no`, `claim_id`): it matches every
/// description that names that thing ("date the customer was born"), in both BM25 (the name)
/// and the embedding, and crowds out the columns that hold the asked-for attribute.
pub fn is_key_column(doc: &crate::index::documents::Document) -> bool {
    // Runs for every hit of every search: no allocation.
    doc.kind == Kind::Column
        && doc
            .name_text
            .rsplit(|c: char| !c.is_alphanumeric())
            .find(|w| !w.is_empty())
            .is_some_and(|w| KEY_NAME_ENDINGS.iter().any(|k| w.eq_ignore_ascii_case(k)))
}

/// Whether `description` (or its glossary expansion) asks for an identifier, so that key
/// columns are what it looks for.
pub fn asks_for_identifier(snapshot: &Snapshot, description: &str) -> bool {
    asks_for_identifier_with(description, &snapshot.expand_query(description))
}

/// [`asks_for_identifier`] with the description's expansion already at hand.
/// A count ("number of claims", "Anzahl der Schäden") is not an identifier: there, `number`
/// (in the text or in its glossary expansion) is not counted.
pub fn asks_for_identifier_with(description: &str, expansion: &[String]) -> bool {
    // "no" written as a word names a record after its noun ("claim no", "policy no. of the
    // payer") and is a negation or a value before another word ("no hit", "no-claims bonus",
    // "yes/no flag"); joined to a name ("claim_no", "claimNo") it is always a key ending.
    let mut marked: Vec<(String, bool)> = Vec::new();
    for token in description.split(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-')) {
        let lower = token.to_lowercase();
        let standalone = lower == "no" || lower.starts_with("no-");
        for (i, w) in crate::text::words(&crate::text::split_identifier(token))
            .into_iter()
            .enumerate()
        {
            marked.push((w, standalone && i == 0));
        }
    }
    let count = marked.windows(2).any(|w| {
        let (first, second) = (w[0].0.as_str(), w[1].0.as_str());
        matches!(first, "number" | "numbers" | "count") && second == "of"
            || first == "how" && second == "many"
    }) || marked.iter().any(|(w, _)| w == "anzahl");
    let in_text = marked.iter().enumerate().map(|(i, (w, standalone))| {
        let before_a_word = marked.get(i + 1).is_some_and(|(next, _)| {
            !crate::index::lexical::ENGLISH_STOP_WORDS.contains(&next.as_str())
        });
        (w, *standalone && w == "no" && before_a_word)
    });
    in_text
        .chain(expansion.iter().map(|w| (w, false)))
        .any(|(w, negation)| {
            let counted = count && matches!(w.as_str(), "number" | "numbers" | "count");
            !counted
                && !negation
                && (IDENTIFIER_WORDS.contains(&w.as_str())
                    || w.ends_with("nummer")
                    || (w.ends_with("nr") && w.len() > 2)
                    || w.starts_with("identif"))
        })
}

/// What the dense side embeds for one phrasing: the text as given, with its expansion (the
/// glossary's English terms) in parentheses when it has one.
pub fn dense_query_text(text: &str, expansion: &[String]) -> String {
    if expansion.is_empty() {
        text.to_string()
    } else {
        format!("{} ({})", text, expansion.join(" "))
    }
}

/// (ordinal, score) pairs of one side, best first.
pub type Candidates = Vec<(u32, f32)>;

/// The raw candidates of each side of each phrasing of `q` ([`Query::phrasings`]): (ordinal,
/// BM25 score) and (ordinal, cosine similarity), best first, within the query's scope, in
/// phrasing order. `prepared` is [`prepare`]'s: each phrasing is searched alongside its
/// expansion by both sides. Work shared by the phrasings is done once: the scope filter, and
/// the embedding of every phrasing in one forward pass ([`Embedder::embed_queries`]).
pub fn candidates_all(
    snapshot: &Snapshot,
    embedder: &dyn Embedder,
    params: &Params,
    q: &Query<'_>,
    prepared: &[Prepared],
) -> Result<Vec<(Candidates, Candidates)>, RetrievalError> {
    let phrasings = q.phrasings();
    for p in &phrasings {
        snapshot.record_query(p);
    }
    let mut scopes: Vec<String> = Vec::new();
    if q.kinds.contains(&Kind::Column) {
        scopes.extend(q.domains.iter().map(|d| format!("domain:{d}")));
    }
    if q.kinds.contains(&Kind::OntologyValue) {
        scopes.push("ontology".to_string());
    }
    if scopes.is_empty() {
        return Ok(vec![(Vec::new(), Vec::new()); phrasings.len()]);
    }
    let scope = snapshot.scope_filter(&scopes);
    let filter = (!matches!(scope, ScopeFilter::All)).then_some(scopes.as_slice());
    let parts = |i: usize| -> Vec<QueryPart> {
        let mut parts = parse_query(phrasings[i]);
        parts.extend(
            prepared[i]
                .expansion
                .iter()
                .cloned()
                .map(QueryPart::Expansion),
        );
        parts
    };
    let lexical = || -> Result<Vec<Candidates>, RetrievalError> {
        (0..phrasings.len())
            .map(|i| {
                snapshot.count_query();
                Ok(snapshot
                    .lexical
                    .search(&parts(i), filter, CANDIDATES, &params.boosts)?)
            })
            .collect()
    };
    let dense = || -> Result<Vec<Candidates>, RetrievalError> {
        let texts: Vec<String> = phrasings
            .iter()
            .zip(prepared)
            .map(|(text, p)| dense_query_text(text, &p.expansion))
            .collect();
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let vectors = embedder.embed_queries(&refs)?;
        let allowed = |ord: u32| scope.allows(ord);
        let in_scope = scope.count(snapshot.docs.len());
        vectors
            .iter()
            .map(|vector| {
                snapshot.count_query();
                Ok(snapshot
                    .dense
                    .search(vector, CANDIDATES, &allowed, in_scope)?)
            })
            .collect()
    };
    let none = || vec![Vec::new(); phrasings.len()];
    match q.mode {
        Mode::Bm25 => Ok(lexical()?.into_iter().zip(none()).collect()),
        Mode::Dense => Ok(none().into_iter().zip(dense()?).collect()),
        // The two sides are independent: the lexical searches run on a second thread while
        // this one embeds the phrasings and searches the dense index, then this one takes the
        // lexical units (a phrasing on one index segment) the other has not begun. With a
        // cached embedding the dense side is done first and lexical is most of the time (one
        // phrasing at 1M columns: ~6 ms of BM25 against 1.7 ms of HNSW), so both cores then
        // share it; with a fresh one the lexical thread is done before the model is. When no
        // thread can be had (a process limit), the sides run one after the other.
        Mode::Hybrid => {
            let queries: Vec<Vec<QueryPart>> = (0..phrasings.len()).map(parts).collect();
            for _ in &queries {
                snapshot.count_query();
            }
            let (lexical, dense) =
                snapshot
                    .lexical
                    .search_beside(&queries, filter, CANDIDATES, &params.boosts, dense);
            Ok(lexical?.into_iter().zip(dense?).collect())
        }
    }
}

/// Weighted reciprocal-rank fusion (or a weighted score sum, `params.fusion`); dense-only
/// candidates below `params.min_similarity` are dropped. Unordered.
pub fn fuse(params: &Params, lexical: &[(u32, f32)], dense: &[(u32, f32)]) -> Vec<Hit> {
    let mut hits: HashMap<u32, Hit> = HashMap::new();
    let best_bm25 = lexical
        .first()
        .map_or(1.0, |(_, s)| f64::from(*s).max(1e-9));
    let side_score = |weight: f64, rank: u32, raw: f64| match params.fusion {
        Fusion::Rrf => weight / (params.rrf_k + f64::from(rank)),
        Fusion::WeightedSum => weight * raw,
    };
    for (rank, (ord, bm25)) in lexical.iter().enumerate() {
        let r = rank as u32 + 1;
        hits.insert(
            *ord,
            Hit {
                ord: *ord,
                score: side_score(params.lexical_weight, r, f64::from(*bm25) / best_bm25),
                bm25_rank: Some(r),
                dense_rank: None,
                similarity: None,
                match_type: MatchType::Lexical,
                matched_by: Vec::new(),
            },
        );
    }
    for (rank, (ord, sim)) in dense.iter().enumerate() {
        let r = rank as u32 + 1;
        let add = side_score(params.dense_weight, r, f64::from(*sim));
        match hits.get_mut(ord) {
            Some(h) => {
                h.score += add;
                h.dense_rank = Some(r);
                h.similarity = Some(*sim);
                h.match_type = MatchType::Both;
            }
            None if *sim >= params.min_similarity => {
                hits.insert(
                    *ord,
                    Hit {
                        ord: *ord,
                        score: add,
                        bm25_rank: None,
                        dense_rank: Some(r),
                        similarity: Some(*sim),
                        match_type: MatchType::Semantic,
                        matched_by: Vec::new(),
                    },
                );
            }
            None => {}
        }
    }
    hits.into_values().collect()
}

/// Key columns' scores times `params.key_weight` unless the description
/// `asks_for_identifier`.
pub fn rerank(snapshot: &Snapshot, params: &Params, asks_for_identifier: bool, hits: &mut [Hit]) {
    let key_weight = params.key_weight_for(asks_for_identifier);
    for h in hits.iter_mut() {
        if is_key_column(snapshot.doc(h.ord)) {
            h.score *= key_weight;
        }
    }
}

/// Rounds every score as shown (6 decimals: float noise such as 1/6 vs 2/12 must not beat the
/// id tie-break) and sorts `score desc, id asc`.
pub fn total_order(snapshot: &Snapshot, hits: &mut [Hit]) {
    for h in hits.iter_mut() {
        h.score = (h.score * 1e6).round() / 1e6;
    }
    hits.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| snapshot.doc(a.ord).id.cmp(&snapshot.doc(b.ord).id))
    });
}

/// The best dense similarity among the allowed documents, for the empty-result hint.
pub fn best_similarity(dense: &[(u32, f32)]) -> Option<(u32, f32)> {
    dense.first().copied()
}

/// [`suggestions`] of each phrasing (description first), each suggestion once, none that is a
/// phrasing itself (case-insensitive): what an empty result offers. Never searched.
pub fn suggestions_for(phrasings: &[&str]) -> Vec<String> {
    let searched: Vec<String> = phrasings.iter().map(|p| p.trim().to_lowercase()).collect();
    let mut out: Vec<String> = Vec::new();
    for p in phrasings {
        for s in suggestions(p) {
            if !out.contains(&s) && !searched.contains(&s) {
                out.push(s);
            }
        }
    }
    out
}

/// Suggestions derived from the caller's own words (never searched): for each word of four
/// or more letters, compound parts split at a German linking `s`, then `*` prefixes from
/// longest to shortest; parts shorter than four characters are dropped; broadest last.
pub fn suggestions(description: &str) -> Vec<String> {
    let mut specific: Vec<String> = Vec::new();
    let mut broad: Vec<(usize, String)> = Vec::new();
    let words: Vec<String> = crate::text::words(description)
        .into_iter()
        .filter(|w| w.chars().count() >= 4)
        .filter(|w| !crate::index::lexical::QUERY_BOILERPLATE.contains(&w.as_str()))
        .collect();
    if words.len() > 1 {
        for w in &words {
            specific.push(w.clone());
        }
    }
    for w in &words {
        let chars: Vec<char> = w.chars().collect();
        let n = chars.len();
        // Compound parts at an 's': a linking 's' after -ung/-heit/-keit/-ion/-tät/-schaft
        // (Versicherungs|nehmer) is dropped, otherwise it starts the next part (Quellen|steuer).
        for i in 4..n.saturating_sub(4) {
            if chars[i] == 's' {
                let left: String = chars[..i].iter().collect();
                let linking = ["ung", "heit", "keit", "ion", "tat", "schaft"]
                    .iter()
                    .any(|e| left.ends_with(e));
                let right: String = if linking {
                    chars[i + 1..].iter().collect()
                } else {
                    chars[i..].iter().collect()
                };
                if left.chars().count() >= 4 && right.chars().count() >= 4 {
                    specific.push(left);
                    specific.push(right);
                }
            }
        }
        // Prefixes: three quarters, then half of the word.
        for len in [n * 3 / 4, n / 2] {
            if len >= 4 && len < n {
                let p: String = chars[..len].iter().collect();
                broad.push((len, format!("{p}*")));
            }
        }
    }
    broad.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let mut out: Vec<String> = Vec::new();
    for s in specific
        .into_iter()
        .chain(broad.into_iter().map(|(_, s)| s))
    {
        if !out.contains(&s) && s.trim_end_matches('*') != description.trim().to_lowercase() {
            out.push(s);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::cursor::cursor_check;
    use super::*;
    use crate::index::documents::Document;
    use crate::text::split_identifier;
    use base64::Engine;

    fn named(kind: Kind, name: &str) -> Document {
        Document {
            column: Some(name.to_string()),
            name_text: split_identifier(name),
            ..Document::bare(name, kind)
        }
    }

    #[test]
    fn key_columns_are_named_after_what_they_identify() {
        let names = [
            "customer_no",
            "claimId",
            "vertrag_nr",
            "subscriberKey",
            "phone_number",
            "iban",
            "reviewed_by",
            "identity",
            "kd_nr",
        ];
        let keys: Vec<bool> = names
            .iter()
            .map(|n| is_key_column(&named(Kind::Column, n)))
            .collect();
        assert_eq!(
            keys,
            [true, true, true, true, false, false, false, false, true]
        );
        assert!(!is_key_column(&named(Kind::OntologyValue, "ontology id")));
    }

    #[test]
    fn cursor_round_trips_and_is_checked() {
        let c = Cursor {
            snapshot: "s1".into(),
            offset: 20,
            request: "abcd".into(),
        };
        let back = Cursor::decode(&c.encode()).unwrap();
        assert_eq!(back, c);
        assert_eq!(back.check("s1", "abcd"), Ok(()));
        assert!(matches!(
            back.check("s2", "abcd"),
            Err(CursorError::OtherSnapshot { .. })
        ));
        assert_eq!(back.check("s1", "zzzz"), Err(CursorError::OtherRequest));
        assert_eq!(Cursor::decode("not a cursor!"), Err(CursorError::Malformed));
    }

    /// Found by tests/properties.rs: one changed character could turn offset 20 into 28 and
    /// the cursor still decoded, silently addressing another page.
    #[test]
    fn an_altered_cursor_is_refused_not_read_as_another_page() {
        let c = Cursor {
            snapshot: "s1".into(),
            offset: 20,
            request: "abcd".into(),
        };
        let json = serde_json::to_vec(&c).unwrap();
        let altered_json = String::from_utf8(json.clone())
            .unwrap()
            .replace("20", "28")
            .into_bytes();
        let mut altered = altered_json.clone();
        altered.extend_from_slice(&cursor_check(&json));
        let altered = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(altered);
        assert_eq!(Cursor::decode(&altered), Err(CursorError::Altered));
        // Too short to carry a check, and a bare JSON cursor without one.
        assert_eq!(Cursor::decode("AAA"), Err(CursorError::Malformed));
        let bare = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(&altered_json);
        assert!(Cursor::decode(&bare).is_err());
    }

    #[test]
    fn suggestions_come_from_the_term_with_the_broadest_last() {
        let s = suggestions("Quellensteuerverordnung");
        assert_eq!(
            s,
            vec![
                "quellen".to_string(),
                "steuerverordnung".to_string(),
                "quellensteuervero*".to_string(),
                "quellensteu*".to_string(),
            ]
        );
        assert!(s
            .iter()
            .all(|x| x.trim_end_matches('*').chars().count() >= 4));
    }

    #[test]
    fn the_description_weighs_at_least_as_much_as_each_alternative() {
        let f = Params::default().phrasings;
        assert!(f.description_weight >= f.alternative_weight, "{f:?}");
        assert!(
            f.alternative_weight > 0.0 && f.phrasing_rrf_k > 0.0,
            "{f:?}"
        );
    }

    /// Pair: a count ("number of", "Anzahl", also through the glossary's "number") does not
    /// ask for an identifier; a number that names a record does.
    #[test]
    fn a_count_is_not_an_identifier_and_a_record_number_is() {
        for count in [
            "number of sick days",
            "Anzahl Krankheitstage",
            "how many claims",
        ] {
            let expansion = vec!["number".to_string()];
            assert!(!asks_for_identifier_with(count, &expansion), "{count}");
        }
        for id in ["policy number", "customer_no", "Kundennummer", "claim id"] {
            assert!(asks_for_identifier_with(id, &[]), "{id}");
        }
    }

    /// Pair: "no" after its noun names a record ("claim no", "policy no. of the payer"); "no"
    /// before another word is a negation or a value ("no hit", "no-claims bonus", "yes/no flag").
    #[test]
    fn no_after_its_noun_asks_for_an_identifier_and_no_before_a_word_does_not() {
        for id in [
            "claim no",
            "policy no. of the payer",
            "Policy No",
            "claim_no: S-year claim reference",
            "claimNo printed on letters",
        ] {
            assert!(asks_for_identifier_with(id, &[]), "{id}");
        }
        for value in [
            "sanctions screening result: no hit, suspected hit or confirmed hit",
            "no-claims bonus class",
            "yes/no flag whether the letter came back",
        ] {
            assert!(!asks_for_identifier_with(value, &[]), "{value}");
        }
    }

    #[test]
    fn short_words_yield_no_suggestions() {
        assert!(suggestions("eu id").is_empty());
    }
}
