//! Pages of one search: a [`Cursor`] tied to the served snapshot and to the whole request
//! ([`request_digest`]), checked so an altered or replayed cursor is refused with what to do.

use base64::Engine;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Query;

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
    #[error("the cursor belongs to a different request (description, alternatives, domains, kinds or mode changed); repeat the search without a cursor")]
    OtherRequest,
}

/// Bytes of the SHA-256 check at the end of an encoded cursor.
pub const CURSOR_CHECK_BYTES: usize = 4;

pub(super) fn cursor_check(json: &[u8]) -> [u8; CURSOR_CHECK_BYTES] {
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
    let mut canonical = serde_json::json!({
        "description": q.description,
        "domains": q.domains,
        "kinds": q.kinds.iter().map(|k| k.as_str()).collect::<Vec<_>>(),
        "mode": q.mode,
        "min_similarity": min_similarity,
    });
    // Bound to the whole request; without alternatives the digest is what it always was.
    if !q.alternatives.is_empty() {
        canonical["alternatives"] = serde_json::json!(q.alternatives);
    }
    if let Some(identifier) = q.identifier {
        canonical["identifier"] = serde_json::json!(identifier);
    }
    let digest = Sha256::digest(canonical.to_string().as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}
