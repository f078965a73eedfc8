//! Which parts of a new snapshot's `documents.json` and `vectors.f32` an older snapshot already
//! holds: documents by the hash of their JSON (`documents.rows`), vectors by the embedded
//! texts of both snapshots' documents. A follower copies those parts from its local copy and
//! downloads only the others ([`crate::sync::follow`]); it checks the assembled file against
//! the new manifest's sha256, so a part lent wrongly costs a whole download, never a wrong
//! byte.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt;
use std::fs;
use std::path::Path;

use serde::de::{DeserializeSeed, SeqAccess, Visitor};
use serde::Deserialize;

use super::build::{embedding_key, texts_of};
use sha2::{Digest, Sha256};

use super::documents::Document;
use super::format::{
    read_manifest, Manifest, ModelInfo, DOCUMENTS, DOCUMENT_ROWS, FORMAT_VERSION, VECTORS,
    VECTORS_COMPATIBLE_SINCE,
};

/// The first bytes of `documents.rows`; then 20 bytes a document: its JSON's length (u32,
/// little-endian) and the first 16 bytes of the JSON's sha256.
const ROWS_MAGIC: &[u8; 8] = b"GCROWS01";

/// A stretch of a file being assembled, in order: `len` bytes copied from the local file at
/// `held`, or read from the store where `held` is `None`; then the byte `then` (the separator
/// after a document), which belongs to the stretch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    pub held: Option<u64>,
    pub len: u64,
    pub then: Option<u8>,
}

impl Piece {
    /// Bytes of the new file the piece covers.
    pub fn size(&self) -> u64 {
        self.len + u64::from(self.then.is_some())
    }
}

/// documents.json's bytes (serde_json's compact list, byte for byte) and documents.rows.
pub(super) fn documents_with_rows(docs: &[Document]) -> serde_json::Result<(Vec<u8>, Vec<u8>)> {
    let mut json = vec![b'['];
    let mut rows = Vec::with_capacity(ROWS_MAGIC.len() + docs.len() * 20);
    rows.extend_from_slice(ROWS_MAGIC);
    for (i, d) in docs.iter().enumerate() {
        if i > 0 {
            json.push(b',');
        }
        let start = json.len();
        serde_json::to_writer(&mut json, d)?;
        let bytes = &json[start..];
        rows.extend_from_slice(&(bytes.len() as u32).to_le_bytes());
        rows.extend_from_slice(&Sha256::digest(bytes)[..16]);
    }
    json.push(b']');
    Ok((json, rows))
}

/// The (length, hash) of each document a documents.rows file lists.
fn read_rows(path: &Path) -> Result<Vec<(u32, [u8; 16])>, String> {
    let bytes = fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let body = bytes
        .strip_prefix(ROWS_MAGIC)
        .filter(|b| b.len() % 20 == 0)
        .ok_or_else(|| format!("{}: not a documents.rows file", path.display()))?;
    Ok(body
        .chunks_exact(20)
        .map(|c| {
            let mut hash = [0u8; 16];
            hash.copy_from_slice(&c[4..]);
            (u32::from_le_bytes([c[0], c[1], c[2], c[3]]), hash)
        })
        .collect())
}

/// The pieces of a new snapshot's documents.json (after its opening `[`) given its
/// documents.rows at `new_rows`: each document copied from `old_dir`'s documents.json where
/// that snapshot holds the same JSON, read otherwise. `Err` when `old_dir` has no
/// documents.rows that matches its documents.json, or the new list is empty.
pub fn document_pieces(old_dir: &Path, new_rows: &Path) -> Result<Vec<Piece>, String> {
    let old = read_rows(&old_dir.join(DOCUMENT_ROWS))?;
    let mut by_hash = HashMap::with_capacity(old.len());
    let mut offset = 1u64;
    for &(len, hash) in &old {
        by_hash.entry((len, hash)).or_insert(offset);
        offset += u64::from(len) + 1;
    }
    let expected = offset + u64::from(old.is_empty());
    let documents = old_dir.join(DOCUMENTS);
    let actual = fs::metadata(&documents)
        .map_err(|e| format!("{}: {e}", documents.display()))?
        .len();
    if actual != expected {
        return Err(format!(
            "{}: {actual} bytes, its documents.rows says {expected}",
            documents.display()
        ));
    }
    let new = read_rows(new_rows)?;
    if new.is_empty() {
        return Err("the new snapshot has no documents".into());
    }
    let last = new.len() - 1;
    Ok(new
        .iter()
        .enumerate()
        .map(|(i, &(len, hash))| Piece {
            held: by_hash.get(&(len, hash)).copied(),
            len: u64::from(len),
            then: Some(if i == last { b']' } else { b',' }),
        })
        .collect())
}

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

/// The embedding keys of the documents of a documents.json's bytes, in order.
pub(super) fn keys_in(json: &[u8], model: &ModelInfo) -> serde_json::Result<Vec<[u8; 32]>> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let keys = Keys(model).deserialize(&mut de)?;
    de.end()?;
    Ok(keys)
}

/// The embedding keys of the documents in `path` (a snapshot's documents.json), in order.
fn keys(path: &Path, model: &ModelInfo) -> Result<Vec<[u8; 32]>, String> {
    let problem = |e: &dyn fmt::Display| format!("{}: {e}", path.display());
    let file = fs::File::open(path).map_err(|e| problem(&e))?;
    // SAFETY: a snapshot's files are written under a staging name and renamed whole, never
    // written in place; the mapping is dropped before this function returns.
    let map = unsafe { memmap2::Mmap::map(&file) }.map_err(|e| problem(&e))?;
    keys_in(&map, model).map_err(|e| problem(&e))
}

/// Whether a snapshot of `manifest` can lend vectors to a build or follower using `model`:
/// `Err` names the format or model that keeps it from doing so.
pub(super) fn lends_vectors(manifest: &Manifest, model: &ModelInfo) -> Result<(), String> {
    if !(VECTORS_COMPATIBLE_SINCE..=FORMAT_VERSION).contains(&manifest.format_version) {
        return Err(format!("snapshot format {}", manifest.format_version));
    }
    if &manifest.model != model {
        return Err(format!("built with model {}", manifest.model.id));
    }
    Ok(())
}

/// For each document of `new_documents` (the documents.json of a snapshot built with `model`),
/// the row of `old_dir`'s vectors.f32 that holds the vector of the same embedded texts, if
/// any. `Err` says why `old_dir` cannot lend rows: another model or an older format, files
/// that do not read, or a vectors file of another length than its documents.
fn rows_held(
    old_dir: &Path,
    new_documents: &Path,
    model: &ModelInfo,
) -> Result<Vec<Option<u32>>, String> {
    lends_vectors(&read_manifest(old_dir).map_err(|e| e.to_string())?, model)?;
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

/// The pieces of a new snapshot's vectors.f32: [`rows_held`] as rows of `dimension` floats.
pub fn vector_pieces(
    old_dir: &Path,
    new_documents: &Path,
    model: &ModelInfo,
) -> Result<Vec<Piece>, String> {
    let row = (model.dimension * 4) as u64;
    Ok(rows_held(old_dir, new_documents, model)?
        .into_iter()
        .map(|held| Piece {
            held: held.map(|r| u64::from(r) * row),
            len: row,
            then: None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::index::documents::Kind;

    fn doc(id: &str, text: &str) -> Document {
        let mut d = Document::bare(id, Kind::OntologyValue);
        d.dense_text = text.to_string();
        d
    }

    #[test]
    fn documents_json_is_serde_jsons_list_byte_for_byte_and_rows_measure_each_document() {
        let docs = vec![doc("a", "Personal data"), doc("b", "Quote \"x\" and ü")];
        let (json, rows) = documents_with_rows(&docs).expect("serialise");
        assert_eq!(json, serde_json::to_vec(&docs).expect("serialise"));
        let first = serde_json::to_vec(&docs[0]).expect("serialise");
        assert_eq!(rows.len(), 8 + 2 * 20);
        assert_eq!(&rows[8..12], &(first.len() as u32).to_le_bytes());
        assert_eq!(&rows[12..28], &Sha256::digest(&first)[..16]);
        let (json, rows) = documents_with_rows(&[]).expect("serialise");
        assert_eq!(
            (json.as_slice(), rows.as_slice()),
            (&b"[]"[..], &ROWS_MAGIC[..])
        );
    }

    #[test]
    fn a_document_whose_json_the_old_snapshot_holds_is_copied_from_its_offset_and_others_are_read()
    {
        let old = tempfile::tempdir().expect("tempdir");
        let (a, b, c) = (doc("a", "one"), doc("b", "two"), doc("c", "three"));
        let (json, rows) = documents_with_rows(&[a.clone(), b.clone(), c]).expect("serialise");
        fs::write(old.path().join(DOCUMENTS), &json).expect("write");
        fs::write(old.path().join(DOCUMENT_ROWS), &rows).expect("write");
        let changed = doc("c", "three, revised");
        let (_, new_rows) =
            documents_with_rows(&[b.clone(), changed.clone(), a.clone()]).expect("serialise");
        let new = old.path().join("new.rows");
        fs::write(&new, &new_rows).expect("write");
        let len = |d: &Document| serde_json::to_vec(d).expect("json").len() as u64;
        let b_at = 1 + len(&a) + 1;
        assert_eq!(
            document_pieces(old.path(), &new).expect("pieces"),
            vec![
                Piece {
                    held: Some(b_at),
                    len: len(&b),
                    then: Some(b',')
                },
                Piece {
                    held: None,
                    len: len(&changed),
                    then: Some(b',')
                },
                Piece {
                    held: Some(1),
                    len: len(&a),
                    then: Some(b']')
                },
            ]
        );
        // The pair: an old documents.json its documents.rows does not describe lends nothing.
        fs::write(old.path().join(DOCUMENTS), &json[1..]).expect("write");
        assert!(document_pieces(old.path(), &new)
            .expect_err("a mismatched old file")
            .contains("its documents.rows says"));
    }
}
