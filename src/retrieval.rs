//! Hybrid precedent retrieval over a snapshot, in stages (see [`search`]): BM25 and dense
//! candidates within the caller's scope, fused by weighted reciprocal rank, dense-only
//! candidates below the calibrated similarity floor dropped, key columns weighted down unless
//! the description asks for an identifier, a total order `score desc, id asc`, and pages addressed by a
//! cursor tied to the snapshot and the request. On an empty result: suggestions derived from
//! the caller's own words, never searched.
//!
//! Retrieval only ever returns documents of the snapshot (the closed set); it never
//! generates a value.

use std::collections::HashMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::embed::Embedder;
use crate::index::documents::Kind;
use crate::index::lexical::{parse_query, Boosts, QueryPart};
use crate::index::{ScopeFilter, Snapshot};

/// Candidates taken from each side before fusion.
pub const CANDIDATES: usize = 100;

/// Which sides run.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
pub enum Mode {
    Hybrid,
    Bm25,
    Dense,
}

/// How the two sides' candidates are combined.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Fusion {
    /// Weighted reciprocal rank: w / (k + rank) per side.
    Rrf,
    /// Weighted sum of BM25 divided by the query's best BM25 and of cosine similarity.
    WeightedSum,
}

/// Fusion and floor parameters (calibrated on the calibration split of the query set).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Params {
    pub fusion: Fusion,
    /// Reciprocal-rank constant.
    pub rrf_k: f64,
    pub lexical_weight: f64,
    pub dense_weight: f64,
    /// Dense-only candidates below this cosine similarity are not matches.
    pub min_similarity: f32,
    /// Factor on the fused score of a key column (see [`is_key_column`]) when the description
    /// does not ask for an identifier (see [`asks_for_identifier`]); 1.0 leaves scores alone.
    pub key_weight: f64,
    /// The lexical side's clause weights.
    #[serde(flatten)]
    pub boosts: Boosts,
}

impl Params {
    /// `self` with `NAME=VALUE` overrides (`rrf_k=60`, `fusion=weighted_sum`); an unknown
    /// name or a value of the wrong kind is refused with the names there are.
    pub fn with_overrides(self, overrides: &[String]) -> Result<Params, String> {
        let mut v = serde_json::to_value(self).map_err(|e| e.to_string())?;
        let names: Vec<String> = v
            .as_object()
            .map(|o| o.keys().cloned().collect())
            .unwrap_or_default();
        for o in overrides {
            let (name, value) = o.split_once('=').ok_or_else(|| {
                format!(
                    "--param {o}: expected NAME=VALUE with NAME one of {}",
                    names.join(", ")
                )
            })?;
            if !names.iter().any(|n| n == name) {
                return Err(format!(
                    "--param {o}: no parameter {name}; the parameters are {}",
                    names.join(", ")
                ));
            }
            let value = serde_json::from_str(value)
                .unwrap_or_else(|_| serde_json::Value::String(value.to_string()));
            v[name] = value;
        }
        serde_json::from_value(v).map_err(|e| {
            format!(
                "--param {}: {e}; give a number (or fusion=rrf|weighted_sum)",
                overrides.join(" ")
            )
        })
    }

    /// The factor on a key column's score for a description that does (`true`) or does not
    /// ask for an identifier.
    pub fn key_weight_for(&self, asks_for_identifier: bool) -> f64 {
        if asks_for_identifier {
            1.0
        } else {
            self.key_weight
        }
    }
}

impl Default for Params {
    /// `rrf_k` and `dense_weight` were fitted on the union of the calibration splits of the
    /// bundled set and the external sets gdc-cptac and mimic-omop (`govcat eval queries
    /// --split calibration --param ...`, a 4 x 4 grid, 2026-12-01): mean hybrid nDCG@10 0.600
    /// at k 3 / weight 1.5 against 0.585 at the earlier 5 / 2.0 (chosen on the bundled set
    /// alone). Held out: gdc-cptac 0.616 -> 0.636, bundled 0.800 -> 0.803, mimic-omop 0.380 ->
    /// 0.369 (20 queries). The floor and the key-column weight were left as calibrated on the
    /// bundled set: key weight 1.0 instead of 0.7 changed gdc-cptac's calibration figures
    /// nothing and mimic-omop's nDCG nothing (all 29 queries; its recall@5 fell 0.483 -> 0.448).
    fn default() -> Self {
        Params {
            fusion: Fusion::Rrf,
            rrf_k: 3.0,
            lexical_weight: 1.0,
            dense_weight: 1.5,
            min_similarity: 0.40,
            key_weight: 0.7,
            boosts: Boosts::default(),
        }
    }
}

/// How an entry was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
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
}

/// What to search.
#[derive(Debug, Clone, PartialEq)]
pub struct Query<'a> {
    pub description: &'a str,
    /// Resolved domains (never empty by accident: the caller resolves the default).
    pub domains: &'a [String],
    pub kinds: &'a [Kind],
    pub mode: Mode,
}

/// Retrieval failures.
#[derive(Debug, thiserror::Error)]
pub enum RetrievalError {
    #[error("embedding the description failed: {0}")]
    Embed(#[from] crate::embed::EmbedError),
    #[error(transparent)]
    Index(#[from] crate::index::IndexError),
}

/// What one search ran and found: every fused hit in total order, the description's expansion
/// ([`Snapshot::expand_query`]) both sides searched with, and whether the description asks for
/// an identifier (the key-column rule). The request echo reads the latter two from here, so it
/// says what ran without computing it again.
#[derive(Debug, Clone, PartialEq)]
pub struct Searched {
    pub hits: Vec<Hit>,
    pub expansion: Vec<String>,
    pub asks_for_identifier: bool,
}

/// Runs one search: exactly one lexical and/or one dense query with the caller's unchanged
/// description (plus its expansion, computed once).
///
/// The pipeline, each stage a function over plain data so that one can be swapped and
/// measured alone (`govcat eval queries` fuses the same candidates per mode):
/// 1. [`candidates`]: each side's top [`CANDIDATES`] within the caller's scope;
/// 2. [`fuse`]: weighted reciprocal rank, dense-only candidates below the floor dropped;
/// 3. [`rerank`]: key columns weighted down unless the description asks for an identifier;
/// 4. [`total_order`]: scores rounded as shown, `score desc, id asc`.
pub fn search(
    snapshot: &Snapshot,
    embedder: &dyn Embedder,
    params: &Params,
    q: &Query<'_>,
) -> Result<Searched, RetrievalError> {
    let expansion = snapshot.expand_query(q.description);
    let (lexical, dense) = candidates(snapshot, embedder, params, q, &expansion)?;
    let asks = asks_for_identifier_with(q.description, &expansion);
    Ok(Searched {
        hits: ranked(snapshot, params, &lexical, &dense, asks),
        expansion,
        asks_for_identifier: asks,
    })
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
pub fn asks_for_identifier_with(description: &str, expansion: &[String]) -> bool {
    let split = crate::text::split_identifier(description);
    let words = crate::text::words(&split);
    words.iter().chain(expansion).any(|w| {
        IDENTIFIER_WORDS.contains(&w.as_str())
            || w.ends_with("nummer")
            || (w.ends_with("nr") && w.len() > 2)
            || w.starts_with("identif")
    })
}

/// (ordinal, score) pairs of one side, best first.
pub type Candidates = Vec<(u32, f32)>;

/// The raw candidates of each side: (ordinal, BM25 score) and (ordinal, cosine similarity),
/// best first, within the query's scope. `expansion` is the description's
/// [`Snapshot::expand_query`], searched alongside its words by both sides.
pub fn candidates(
    snapshot: &Snapshot,
    embedder: &dyn Embedder,
    params: &Params,
    q: &Query<'_>,
    expansion: &[String],
) -> Result<(Candidates, Candidates), RetrievalError> {
    snapshot.record_query(q.description);
    let mut scopes: Vec<String> = Vec::new();
    if q.kinds.contains(&Kind::Column) {
        scopes.extend(q.domains.iter().map(|d| format!("domain:{d}")));
    }
    if q.kinds.contains(&Kind::OntologyValue) {
        scopes.push("ontology".to_string());
    }
    if scopes.is_empty() {
        return Ok((Vec::new(), Vec::new()));
    }
    let scope = snapshot.scope_filter(&scopes);
    let lexical = || -> Result<Candidates, RetrievalError> {
        snapshot.count_query();
        let mut parts = parse_query(q.description);
        parts.extend(expansion.iter().cloned().map(QueryPart::Expansion));
        let filter = (!matches!(scope, ScopeFilter::All)).then_some(scopes.as_slice());
        Ok(snapshot
            .lexical
            .search(&parts, filter, CANDIDATES, &params.boosts)?)
    };
    let dense = || -> Result<Candidates, RetrievalError> {
        snapshot.count_query();
        let vector = if expansion.is_empty() {
            embedder.embed_query(q.description)?
        } else {
            embedder.embed_query(&format!("{} ({})", q.description, expansion.join(" ")))?
        };
        let allowed = |ord: u32| scope.allows(ord);
        Ok(snapshot.dense.search(
            &vector,
            CANDIDATES,
            &allowed,
            scope.count(snapshot.docs.len()),
        ))
    };
    match q.mode {
        Mode::Bm25 => Ok((lexical()?, Vec::new())),
        Mode::Dense => Ok((Vec::new(), dense()?)),
        // The two sides are independent: the lexical search runs on a second thread while
        // this one embeds the query and searches the dense index. When no thread can be had
        // (a process limit), the sides run one after the other.
        Mode::Hybrid => std::thread::scope(|s| {
            let lexical = &lexical;
            let Ok(side) = std::thread::Builder::new()
                .name("govcat-lexical".into())
                .spawn_scoped(s, lexical)
            else {
                return Ok((lexical()?, dense()?));
            };
            let dense = dense();
            let lexical = side
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok((lexical?, dense?))
        }),
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

/// A page position tied to a snapshot and a request. Encoded as URL-safe base64 of its JSON
/// followed by the first [`CURSOR_CHECK_BYTES`] bytes of that JSON's SHA-256, so a cursor that
/// was altered in transit (an assistant copying it imperfectly) is refused instead of silently
/// addressing another page. The check is not a signature: the offset is no secret, and a
/// cursor made by hand can only page the caller's own search.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Cursor {
    pub snapshot: String,
    pub offset: usize,
    pub request: String,
}

/// Why a cursor was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CursorError {
    #[error(
        "the cursor is not one govcat issued (it does not decode); start again without a cursor"
    )]
    Malformed,
    #[error("the cursor was altered after govcat issued it (its check does not match); pass next_cursor exactly as it was returned, or start again without a cursor")]
    Altered,
    #[error("the cursor belongs to snapshot {cursor} but snapshot {current} is being served; repeat the search without a cursor to page the current snapshot")]
    OtherSnapshot { cursor: String, current: String },
    #[error("the cursor belongs to a different request (description, domains, kinds or mode changed); repeat the search without a cursor")]
    OtherRequest,
}

/// Bytes of the SHA-256 check at the end of an encoded cursor.
pub const CURSOR_CHECK_BYTES: usize = 4;

fn cursor_check(json: &[u8]) -> [u8; CURSOR_CHECK_BYTES] {
    let digest = Sha256::digest(json);
    let mut check = [0u8; CURSOR_CHECK_BYTES];
    check.copy_from_slice(&digest[..CURSOR_CHECK_BYTES]);
    check
}

impl Cursor {
    pub fn encode(&self) -> String {
        let mut bytes = serde_json::to_vec(self).unwrap_or_default();
        let check = cursor_check(&bytes);
        bytes.extend_from_slice(&check);
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
    }

    pub fn decode(s: &str) -> Result<Cursor, CursorError> {
        let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(s.trim())
            .map_err(|_| CursorError::Malformed)?;
        let split = bytes
            .len()
            .checked_sub(CURSOR_CHECK_BYTES)
            .ok_or(CursorError::Malformed)?;
        let (json, check) = bytes.split_at(split);
        if check != cursor_check(json) {
            return Err(CursorError::Altered);
        }
        serde_json::from_slice(json).map_err(|_| CursorError::Malformed)
    }

    /// Checks the cursor against the served snapshot and this request.
    pub fn check(&self, snapshot: &str, request: &str) -> Result<(), CursorError> {
        if self.snapshot != snapshot {
            return Err(CursorError::OtherSnapshot {
                cursor: self.snapshot.clone(),
                current: snapshot.to_string(),
            });
        }
        if self.request != request {
            return Err(CursorError::OtherRequest);
        }
        Ok(())
    }
}

/// A short digest identifying what a request searched (so a cursor cannot be replayed on
/// another description or a wider scope).
pub fn request_digest(q: &Query<'_>, min_similarity: f32) -> String {
    let canonical = serde_json::json!({
        "description": q.description,
        "domains": q.domains,
        "kinds": q.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "mode": q.mode,
        "min_similarity": min_similarity,
    });
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
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
    use super::*;
    use crate::index::documents::Document;
    use crate::text::split_identifier;

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
    fn short_words_yield_no_suggestions() {
        assert!(suggestions("eu id").is_empty());
    }
}
