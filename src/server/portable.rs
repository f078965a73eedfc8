//! MCP sessions that survive a move between replicas (`--session-key-file`).
//!
//! A 2025-era client holds a session id, and rmcp keeps the session in the memory of the
//! replica that answered `initialize`; behind a load balancer that cannot route on
//! `Mcp-Session-Id` (an ALB cannot), the client's next request may reach another replica.
//! With a key shared by the replicas, the id a client receives is a *sealed* session: an HS256
//! JWT that carries rmcp's own session id, the principal that opened it and the client's
//! `initialize` parameters, signed with the first key of the file. A replica that receives a
//! sealed id it does not hold checks the signature against every key of the file, the expiry
//! and that the request's principal is the one sealed in, and restores the session from what
//! the id carries (rmcp replays the handshake); the client never notices the move.
//!
//! Nothing is shared between replicas but the key: no store, no affinity. A restored session
//! is admitted under the same caps as a new one (`sessions`), so `--max-sessions` and
//! `--max-sessions-per-principal` still bound what a replica holds. A sealed id that fails any
//! check is answered like an unknown session: 404, and the client initializes again.
//!
//! What a sealed id does not carry: the session's open streams (a `GET /mcp` stream ends when
//! its replica goes; the client reopens it) and `DELETE` (it ends the session on the replica
//! that answers; the id stays restorable until it expires, [`SEALED_SESSION_LIFETIME`]).

use std::collections::HashMap;
use std::path::Path;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, EncodingKey, Header, Validation};
use rmcp::model::InitializeRequestParams;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// How long a sealed session id may be restored after its `initialize`. A host keeps one
/// session per server for as long as it runs; a day covers a working day's conversation, and
/// a client whose id is older re-initializes once (404).
pub const SEALED_SESSION_LIFETIME: Duration = Duration::from_secs(24 * 3600);
/// Bytes of key material a line of `--session-key-file` must hold at least (HS256's own
/// block-sized strength, RFC 7518 §3.2).
pub const MIN_SESSION_KEY_BYTES: usize = 32;
/// A sealed id longer than this is not issued (the session stays on its replica): proxies
/// commonly cap one header at 8 KiB, and a client's `initialize` parameters are a few hundred
/// bytes unless it sends something unusual (icons as data URLs).
pub const MAX_SEALED_ID_BYTES: usize = 4096;
/// Clock difference between replicas tolerated when checking a sealed id's expiry.
const CLOCK_LEEWAY_SECS: u64 = 60;

/// The keys replicas share: the first seals, every one opens (so a key can be rotated by
/// adding the new one first, rolling the replicas, and removing the old one a lifetime later).
pub struct SessionKeys {
    keys: Vec<Vec<u8>>,
}

impl std::fmt::Debug for SessionKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SessionKeys({} keys)", self.keys.len())
    }
}

/// What a sealed session id carries.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sealed {
    /// rmcp's session id on the replica that answered `initialize`.
    pub sid: String,
    /// Who opened it (see `sessions::principal_of`).
    pub sub: String,
    /// The client's `initialize` parameters, replayed when the session is restored.
    pub init: Value,
    pub iat: u64,
    pub exp: u64,
}

impl SessionKeys {
    /// Reads the keys, one per non-empty line; each line's bytes are the key.
    pub fn load(path: &Path) -> Result<SessionKeys, String> {
        let text = std::fs::read_to_string(path).map_err(|e| {
            format!(
                "--session-key-file {} cannot be read ({e}); give a file of one key per line, e.g. made with `openssl rand -hex 32 > FILE`",
                path.display()
            )
        })?;
        SessionKeys::from_lines(&text)
            .map_err(|problem| format!("--session-key-file {}: {problem}", path.display()))
    }

    /// The keys of a key file's text.
    pub fn from_lines(text: &str) -> Result<SessionKeys, String> {
        let keys: Vec<Vec<u8>> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .map(|l| l.as_bytes().to_vec())
            .collect();
        if keys.is_empty() {
            return Err("holds no key; write one key per line, e.g. `openssl rand -hex 32`".into());
        }
        if let Some(n) = keys.iter().position(|k| k.len() < MIN_SESSION_KEY_BYTES) {
            return Err(format!(
                "key on line {} has {} bytes, fewer than the {MIN_SESSION_KEY_BYTES} HS256 needs; make one with `openssl rand -hex 32`",
                n + 1,
                keys[n].len()
            ));
        }
        Ok(SessionKeys { keys })
    }

    /// The sealed id of rmcp session `sid`, opened by `principal` with `init` (the
    /// `initialize` request's params); `None` if it would exceed [`MAX_SEALED_ID_BYTES`].
    pub fn seal(
        &self,
        sid: &str,
        principal: &str,
        init: &Value,
        now: SystemTime,
    ) -> Option<String> {
        let iat = unix_secs(now);
        let claims = Sealed {
            sid: sid.to_string(),
            sub: principal.to_string(),
            init: init.clone(),
            iat,
            exp: iat + SEALED_SESSION_LIFETIME.as_secs(),
        };
        let key = EncodingKey::from_secret(&self.keys[0]).ok()?;
        let token = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &claims, &key).ok()?;
        (token.len() <= MAX_SEALED_ID_BYTES).then_some(token)
    }

    /// What a sealed id carries, if one of the keys signed it, it has not expired and its
    /// `initialize` parameters are readable.
    pub fn open(&self, id: &str, now: SystemTime) -> Option<Sealed> {
        if id.len() > MAX_SEALED_ID_BYTES || id.split('.').count() != 3 {
            return None;
        }
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_aud = false;
        // Expiry is checked below against `now`, so that tests can move the clock.
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["exp"]);
        let sealed = self.keys.iter().find_map(|key| {
            let key = DecodingKey::from_secret(key).ok()?;
            jsonwebtoken::decode::<Sealed>(id, &key, &validation).ok()
        })?;
        let sealed = sealed.claims;
        let now = unix_secs(now);
        if now > sealed.exp + CLOCK_LEEWAY_SECS || sealed.iat > now + CLOCK_LEEWAY_SECS {
            return None;
        }
        serde_json::from_value::<InitializeRequestParams>(sealed.init.clone()).ok()?;
        Some(sealed)
    }
}

fn unix_secs(t: SystemTime) -> u64 {
    t.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The session store rmcp restores from: the `initialize` parameters of sealed ids whose
/// request is being answered now, put here by the middleware that opened them and taken by
/// rmcp's restore. Holds at most one entry per request in flight (each is removed when its
/// request ends, restored or not), so it needs no cap of its own.
#[derive(Debug, Default)]
pub struct Restorable {
    pending: Mutex<HashMap<String, Value>>,
}

impl Restorable {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Value>> {
        self.pending.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Offers `sid`'s `initialize` parameters to rmcp's restore for the request now arriving.
    pub fn offer(&self, sid: &str, init: Value) {
        self.lock().insert(sid.to_string(), init);
    }

    /// Withdraws an offer its request did not take.
    pub fn withdraw(&self, sid: &str) {
        self.lock().remove(sid);
    }
}

#[async_trait::async_trait]
impl SessionStore for Restorable {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let Some(init) = self.lock().remove(session_id) else {
            return Ok(None);
        };
        Ok(serde_json::from_value::<InitializeRequestParams>(init)
            .ok()
            .map(SessionState::new))
    }

    /// The state travels in the sealed id, not here.
    async fn store(&self, _: &str, _: &SessionState) -> Result<(), SessionStoreError> {
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.withdraw(session_id);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const KEY_A: &str = "0123456789abcdef0123456789abcdef-a";
    const KEY_B: &str = "0123456789abcdef0123456789abcdef-b";

    fn init() -> Value {
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}},
               "clientInfo": {"name": "host", "version": "1"}})
    }

    fn at(secs: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn a_sealed_id_opens_with_any_key_of_the_file_and_carries_what_was_sealed() {
        let old = SessionKeys::from_lines(KEY_A).unwrap();
        let rotated = SessionKeys::from_lines(&format!("{KEY_B}\n\n{KEY_A}\n")).unwrap();
        let id = old.seal("uuid-1", "sub:alice", &init(), at(1_000)).unwrap();
        let sealed = rotated.open(&id, at(1_100)).unwrap();
        assert_eq!(sealed.sid, "uuid-1");
        assert_eq!(sealed.sub, "sub:alice");
        assert_eq!(sealed.init, init());
        assert_eq!(sealed.exp, 1_000 + SEALED_SESSION_LIFETIME.as_secs());
    }

    #[test]
    fn a_sealed_id_of_another_key_altered_or_expired_does_not_open() {
        let a = SessionKeys::from_lines(KEY_A).unwrap();
        let b = SessionKeys::from_lines(KEY_B).unwrap();
        let id = a.seal("uuid-1", "sub:alice", &init(), at(1_000)).unwrap();
        assert!(a.open(&id, at(1_000)).is_some());
        assert!(b.open(&id, at(1_000)).is_none());
        let mut altered = id.clone();
        altered.insert(id.len() - 2, 'x');
        assert!(a.open(&altered, at(1_000)).is_none());
        let late = 1_000 + SEALED_SESSION_LIFETIME.as_secs() + CLOCK_LEEWAY_SECS + 1;
        assert!(a.open(&id, at(late)).is_none());
        assert!(a.open("3f1c2a7e-uuid-of-rmcp", at(1_000)).is_none());
    }

    #[test]
    fn a_key_file_with_a_short_key_or_none_is_refused_by_line() {
        assert_eq!(
            SessionKeys::from_lines(&format!("{KEY_A}\nshort")).unwrap_err(),
            "key on line 2 has 5 bytes, fewer than the 32 HS256 needs; make one with `openssl rand -hex 32`"
        );
        assert!(SessionKeys::from_lines(" \n").is_err());
    }

    #[test]
    fn initialize_parameters_too_large_for_a_header_are_not_sealed() {
        let keys = SessionKeys::from_lines(KEY_A).unwrap();
        let big = json!({"protocolVersion": "2025-11-25", "capabilities": {},
                         "clientInfo": {"name": "x".repeat(MAX_SEALED_ID_BYTES), "version": "1"}});
        assert_eq!(keys.seal("uuid-1", "sub:a", &big, at(1_000)), None);
    }
}
