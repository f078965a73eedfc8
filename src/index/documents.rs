//! The closed set a snapshot holds: one document per ontology value and one per catalog
//! column, with the text each side of the index sees. Ids are stable names:
//! `column:<domain>.<table>.<column>` and `ontology:<key>=<value>`.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::Arc;

use schemars::JsonSchema;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::catalog::{Dataset, Tags};
use crate::ontology::Ontology;
use crate::text::split_identifier;

/// What a document stands for.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    Column,
    OntologyValue,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Column, Kind::OntologyValue];

    pub fn as_str(self) -> &'static str {
        match self {
            Kind::Column => "column",
            Kind::OntologyValue => "ontology_value",
        }
    }
}

/// One entry of the closed set.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Document {
    pub id: String,
    pub kind: Kind,
    /// Column documents: the domain, table, column and type.
    pub domain: Option<String>,
    pub table: Option<String>,
    pub column: Option<String>,
    #[serde(rename = "type")]
    pub data_type: Option<String>,
    /// Ontology documents: the key and value.
    pub key: Option<String>,
    pub value: Option<String>,
    pub description: Option<String>,
    /// Column documents: effective tags as read when the snapshot was built. In a loaded
    /// snapshot, columns with equal tags share one copy ([`sharing_tags`]).
    #[serde(default, with = "shared_tags")]
    pub lf_tags: Option<Arc<Tags>>,
    /// Text for the lexical index's name field (the identifier's words).
    pub name_text: String,
    /// Text for the lexical index's main field (name words and description).
    pub lexical_text: String,
    // Build-only texts. They are written into the snapshot's `documents.json` (for people, for
    // the next build's vector reuse) and indexed into tantivy and the vectors, but a loaded
    // snapshot does not read them back: serving never looks at them (docs/perf/large-lake.md).
    // In a loaded snapshot they are empty.
    /// Text for the lexical index's context field (table and domain words). Build-only.
    #[serde(skip_deserializing)]
    pub context_text: String,
    /// Text the embedding model sees. Build-only.
    #[serde(skip_deserializing)]
    pub dense_text: String,
    /// Column documents whose table has a description: `dense_text` with the table's first
    /// sentence as context. The document's vector is the normalised mean of both embeddings
    /// (see `index::embedded_texts`). Build-only.
    #[serde(skip_deserializing, skip_serializing_if = "Option::is_none")]
    pub dense_table_text: Option<String>,
    /// Words the document is also found by (lexical `gloss` field): English terms of its
    /// German words and abbreviations, and the parts of its run-together words. Filled when
    /// the snapshot is built (`index::expand_documents`). Build-only.
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub expansion: Vec<String>,
    /// The part of [`Document::expansion`] that comes from the name alone (English terms of a
    /// German or abbreviated name, the parts of a run-together name): indexed in the `name`
    /// field too, so `birth date` meets `geburtsdatum` as it meets `birth_date`. Build-only.
    #[serde(skip_deserializing, skip_serializing_if = "Vec::is_empty")]
    pub name_expansion: Vec<String>,
}

thread_local! {
    /// The tags parsed so far by the [`sharing_tags`] parse running on this thread.
    static SEEN_TAGS: RefCell<Option<HashSet<Arc<Tags>>>> = const { RefCell::new(None) };
}

/// Runs `parse` so that the documents it deserialises on this thread hold one shared copy of
/// each distinct tag map. A catalog's columns carry few distinct combinations of five keys,
/// and a map with its strings takes ~630 bytes (the heap profile of docs/perf/large-lake.md):
/// at 1M columns most of a gigabyte held as a few thousand copies.
pub fn sharing_tags<T>(parse: impl FnOnce() -> T) -> T {
    struct Reset;
    impl Drop for Reset {
        fn drop(&mut self) {
            SEEN_TAGS.with(|seen| seen.borrow_mut().take());
        }
    }
    SEEN_TAGS.with(|seen| *seen.borrow_mut() = Some(HashSet::new()));
    let _reset = Reset;
    parse()
}

/// `lf_tags` as plain JSON tags; shared while [`sharing_tags`] runs.
mod shared_tags {
    use super::*;

    pub fn serialize<S: Serializer>(tags: &Option<Arc<Tags>>, s: S) -> Result<S::Ok, S::Error> {
        tags.as_deref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Arc<Tags>>, D::Error> {
        let Some(tags) = Option::<Tags>::deserialize(d)? else {
            return Ok(None);
        };
        Ok(Some(SEEN_TAGS.with(
            |seen| match seen.borrow_mut().as_mut() {
                None => Arc::new(tags),
                Some(seen) => match seen.get(&tags) {
                    Some(shared) => shared.clone(),
                    None => {
                        let shared = Arc::new(tags);
                        seen.insert(shared.clone());
                        shared
                    }
                },
            },
        )))
    }
}

#[cfg(test)]
impl Document {
    /// A document with only `id` and `kind`, every text empty: for unit tests to fill in.
    pub(crate) fn bare(id: &str, kind: Kind) -> Document {
        Document {
            id: id.to_string(),
            kind,
            domain: None,
            table: None,
            column: None,
            data_type: None,
            key: None,
            value: None,
            description: None,
            lf_tags: None,
            name_text: String::new(),
            lexical_text: String::new(),
            context_text: String::new(),
            dense_text: String::new(),
            dense_table_text: None,
            expansion: Vec::new(),
            name_expansion: Vec::new(),
        }
    }
}

/// Ontology value documents, in ontology order.
pub fn ontology_documents(ontology: &Ontology) -> Vec<Document> {
    let mut docs = Vec::new();
    for key in &ontology.keys {
        for v in &key.values {
            let key_words = split_identifier(&key.key.0);
            let text = format!(
                "{key_words} {}: {} {} {}",
                v.value, v.description, v.implies, key.description
            );
            docs.push(Document {
                id: format!("ontology:{}={}", key.key, v.value),
                kind: Kind::OntologyValue,
                domain: None,
                table: None,
                column: None,
                data_type: None,
                key: Some(key.key.0.clone()),
                value: Some(v.value.0.clone()),
                description: Some(v.description.clone()),
                lf_tags: None,
                name_text: format!("{key_words} {}", v.value),
                lexical_text: text.clone(),
                context_text: format!("tag ontology {key_words}"),
                dense_text: format!("{key_words} {}: {} {}", v.value, v.description, v.implies),
                dense_table_text: None,
                expansion: Vec::new(),
                name_expansion: Vec::new(),
            });
        }
    }
    docs
}

/// Column documents of one dataset, in column order.
pub fn column_documents(dataset: &Dataset) -> Vec<Document> {
    let domain = &dataset.metadata.domain.0;
    let table = &dataset.metadata.name.0;
    let table_words = split_identifier(table);
    let table_about = dataset
        .metadata
        .description
        .as_deref()
        .map(first_sentence)
        .filter(|s| !s.is_empty());
    dataset
        .columns
        .iter()
        .map(|c| {
            let name_words = split_identifier(&c.name);
            let description = c.description.clone().unwrap_or_default();
            Document {
                id: format!("column:{domain}.{table}.{}", c.name),
                kind: Kind::Column,
                domain: Some(domain.clone()),
                table: Some(table.clone()),
                column: Some(c.name.clone()),
                data_type: Some(c.data_type.clone()),
                key: None,
                value: None,
                description: c.description.clone(),
                lf_tags: Some(Arc::new(c.lf_tags.clone())),
                name_text: name_words.clone(),
                lexical_text: format!("{name_words} {description}"),
                context_text: format!("{table_words} {domain} {}", table_about.unwrap_or_default()),
                dense_text: format!("{name_words}: {description} (table {table_words}, {domain})"),
                dense_table_text: table_about.map(|about| {
                    format!("{name_words}: {description} (table {table_words}: {about}; {domain})")
                }),
                expansion: Vec::new(),
                name_expansion: Vec::new(),
            }
        })
        .collect()
}

/// The first sentence of `text`: up to the first `. ` that a capital letter or digit follows
/// ("e.g. 'P00412873'" does not end one), trimmed; all of `text` when no sentence ends.
pub fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let end = text.match_indices(". ").find_map(|(i, _)| {
        text[i + 2..]
            .chars()
            .next()
            .filter(|c| c.is_uppercase() || c.is_ascii_digit())
            .map(|_| i + 1)
    });
    end.map_or(text, |e| &text[..e])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{TagLevel, TagState};

    #[test]
    fn equal_tags_parsed_in_one_sharing_parse_are_one_copy_and_write_back_unchanged() {
        let tagged = |id: &str, value: &str| {
            let mut d = Document::bare(id, Kind::Column);
            let tags: Tags = [(
                "sensitivity".to_string(),
                TagState::present(value, TagLevel::Column),
            )]
            .into_iter()
            .collect();
            d.lf_tags = Some(Arc::new(tags));
            d
        };
        let docs = vec![
            tagged("column:a.t.x", "pii"),
            tagged("column:a.t.y", "pii"),
            tagged("column:a.t.z", "public"),
            Document::bare("ontology:k=v", Kind::OntologyValue),
        ];
        let json = serde_json::to_string(&docs).unwrap();
        let shared: Vec<Document> = sharing_tags(|| serde_json::from_str(&json)).unwrap();
        let tags = |d: &Document| d.lf_tags.clone().unwrap();
        assert!(Arc::ptr_eq(&tags(&shared[0]), &tags(&shared[1])));
        assert!(!Arc::ptr_eq(&tags(&shared[0]), &tags(&shared[2])));
        assert_eq!(shared[3].lf_tags, None);
        assert_eq!(serde_json::to_string(&shared).unwrap(), json);
        // The pair: outside a sharing parse, each document has its own copy.
        let own: Vec<Document> = serde_json::from_str(&json).unwrap();
        assert!(!Arc::ptr_eq(&tags(&own[0]), &tags(&own[1])));
        assert_eq!(own[0].lf_tags, shared[0].lf_tags);
        // Nothing is kept for the next parse.
        SEEN_TAGS.with(|seen| assert!(seen.borrow().is_none()));
    }

    #[test]
    fn first_sentence_ends_at_a_full_stop_before_a_capital_not_at_an_abbreviation() {
        assert_eq!(
            first_sentence(" One row per policyholder, e.g. a private customer. Corporates have no birth date."),
            "One row per policyholder, e.g. a private customer."
        );
        assert_eq!(
            first_sentence("Daily snapshot. 2026 onwards."),
            "Daily snapshot."
        );
        assert_eq!(first_sentence("No full stop here"), "No full stop here");
        assert_eq!(first_sentence("Ends with one."), "Ends with one.");
        assert_eq!(first_sentence("   "), "");
    }
}
