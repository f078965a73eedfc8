//! Which rows of a new snapshot's `vectors.f32` an older snapshot already holds, found by the
//! embedded texts of both snapshots' documents: a follower copies those rows from its local
//! copy and downloads only the others ([`crate::sync::follow`]). The caller checks the
//! assembled file against the new manifest's sha256, so a row lent wrongly costs a whole
//! download, never a wrong vector.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::Path;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::Deserialize;

use super::build::{embedding_key, texts_of};
use super::format::{
    read_manifest, ModelInfo, DOCUMENTS, FORMAT_VERSION, VECTORS, VECTORS_COMPATIBLE_SINCE,
};

/// Only the embedded texts of a stored document (other fields may change shape).
#[derive(Deserialize)]
struct DenseText<'a> {
    #[serde(borrow)]
    dense_text: Cow<'a, str>,
    #[serde(default, borrow)]
    dense_table_text: Option<Cow<'a, str>>,
}

/// Reads a documents.json array into the embedding key of each document, one document at a
/// time (a million documents cost 32 MB of keys, not their texts).
struct Keys<'m>(&'m ModelInfo);

impl<'de> DeserializeSeed<'de> for Keys<'_> {
    type Value = Vec<[u8; 32]>;

    fn deserialize<D: serde::Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Keys<'_> {
    type Value = Vec<[u8; 32]>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of documents")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let mut keys = Vec::with_capacity(seq.size_hint().unwrap_or(0));
        while let Some(d) = seq.next_element::<DenseText>()? {
            keys.push(embedding_key(
                self.0,
                texts_of(&d.dense_text, d.dense_table_text.as_deref()),
            ));
        }
        Ok(keys)
    }
}

/// The embedding keys of the documents in `path` (a snapshot's documents.json), in order.
fn keys(path: &Path, model: &ModelInfo) -> Result<Vec<[u8; 32]>, String> {
    let problem = |e: &dyn fmt::Display| format!("{}: {e}", path.display());
    let file = fs::File::open(path).map_err(|e| problem(&e))?;
    // SAFETY: a snapshot's files are written under a staging name and renamed whole, never
    // written in place; the mapping is dropped before this function returns.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| problem(&e))?;
    let mut de = serde_json::Deserializer::from_slice(&map);
    let keys = Keys(model).deserialize(&mut de).map_err(|e| problem(&e))?;
    de.end().map_err(|e| problem(&e))?;
    Ok(keys)
}

/// For each document of `new_documents` (the documents.json of a snapshot built with `model`),
/// the row of `old_dir`'s vectors.f32 that holds the vector of the same embedded texts, if
/// any. `Err` says why `old_dir` cannot lend rows: another model or an older format, files
/// that do not read, or a vectors file of another length than its documents.
pub fn rows_held(
    old_dir: &Path,
    new_documents: &Path,
    model: &ModelInfo,
) -> Result<Vec<Option<u32>>, String> {
    let old = read_manifest(old_dir).map_err(|e| e.to_string())?;
    if !(VECTORS_COMPATIBLE_SINCE..=FORMAT_VERSION).contains(&old.format_version) {
        return Err(format!("snapshot format {}", old.format_version));
    }
    if &old.model != model {
        return Err(format!("built with model {}", old.model.id));
    }
    let old_keys = keys(&old_dir.join(DOCUMENTS), model)?;
    let vectors = old_dir.join(VECTORS);
    let len = fs::metadata(&vectors)
        .map_err(|e| format!("{}: {e}", vectors.display()))?
        .len();
    if len != (old_keys.len() * model.dimension * 4) as u64 {
        return Err(format!(
            "{}: {len} bytes for {} documents",
            vectors.display(),
            old_keys.len()
        ));
    }
    let by_key: HashMap<[u8; 32], u32> = old_keys
        .into_iter()
        .enumerate()
        .map(|(row, key)| (key, row as u32))
        .collect();
    Ok(keys(new_documents, model)?
        .iter()
        .map(|key| by_key.get(key).copied())
        .collect())
}
