//! The closed set a snapshot holds: one document per ontology value and one per catalog
//! column, with the text each side of the index sees. Ids are stable names:
//! `column:<domain>.<table>.<column>` and `ontology:<key>=<value>`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::text::split_identifier;
use crate::catalog::{Dataset, Tags};
use crate::ontology::Ontology;

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
    /// Column documents: effective tags as read when the snapshot was built.
    pub lf_tags: Option<Tags>,
    /// Text for the lexical index's name field (the identifier's words).
    pub name_text: String,
    /// Text for the lexical index's main field (name words and description).
    pub lexical_text: String,
    /// Text for the lexical index's context field (table and domain words).
    pub context_text: String,
    /// Text the embedding model sees.
    pub dense_text: String,
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
                lf_tags: Some(c.lf_tags.clone()),
                name_text: name_words.clone(),
                lexical_text: format!("{name_words} {description}"),
                context_text: format!("{table_words} {domain}"),
                dense_text: format!("{name_words}: {description} (table {table_words}, {domain})"),
            }
        })
        .collect()
}
