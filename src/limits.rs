//! Every bound on what a caller may send, in one place: argument sizes of the retrieval tools,
//! the request body, and requests in flight. A value over a bound is refused with an error
//! naming the bound (`limit`), its `max` and, when known, what was sent (`got`) — never
//! silently truncated. The README's "Limits" section lists the same values.
//!
//! This module holds numbers only; `tools` enforces the argument bounds and `server` the
//! transport ones.

/// Longest accepted `description` of `find_precedents` / `suggest_tags`, in characters.
pub const MAX_DESCRIPTION_CHARS: usize = 1000;
/// Most `alternatives` of `find_precedents` / `suggest_tags` (other phrasings of the
/// description, each searched as given).
pub const MAX_ALTERNATIVES: usize = 8;
/// Longest accepted alternative, in characters after trimming.
pub const MAX_ALTERNATIVE_CHARS: usize = 200;
/// Largest `limit` (page size) of `find_precedents`; more entries come by `next_cursor`.
pub const MAX_LIMIT: usize = 50;
/// Page size of `find_precedents` when `limit` is omitted.
pub const DEFAULT_LIMIT: usize = 10;
/// Most entries in the `domains` list of `find_precedents`.
pub const MAX_DOMAINS: usize = 64;
/// Longest prompt argument that names something (a domain, table or role), in characters; a
/// prompt's `description` argument has [`MAX_DESCRIPTION_CHARS`].
pub const MAX_PROMPT_NAME_CHARS: usize = 256;
/// Largest request body of a REST tool call or an MCP POST, in bytes (1 MiB).
pub const MAX_BODY_BYTES: usize = 1 << 20;
/// Default of `serve --max-concurrent-requests`: requests to `/mcp` and `/v1/*` answered at
/// once; one more is refused with 429.
pub const DEFAULT_MAX_CONCURRENT_REQUESTS: usize = 64;
/// The `Retry-After` of a 429, in seconds.
pub const RETRY_AFTER_SECS: u64 = 1;
/// Default of `serve --header-read-timeout`: a request's headers must arrive within it, and a
/// kept-alive connection waiting for its next request is closed after it (hyper runs the one
/// timer for both). A slow sender holds a connection for at most this long, never a slot.
pub const DEFAULT_HEADER_READ_TIMEOUT_SECS: u64 = 10;
/// Default of `serve --body-read-timeout`: a request's whole body must arrive within it,
/// counted from the end of its headers; a later body is answered 408 and its connection
/// closed, which frees the slot it held (`--max-concurrent-requests`).
pub const DEFAULT_BODY_READ_TIMEOUT_SECS: u64 = 10;
/// Default of `serve --max-connections`: TCP connections served at once; one more is answered
/// 503 with `Retry-After` and closed.
pub const DEFAULT_MAX_CONNECTIONS: usize = 1024;
/// Default of `serve --drain-seconds`: after SIGTERM `/readyz` answers 503 `draining` and
/// requests are still served this long, so a load balancer deregisters the replica before
/// its listener closes (set the balancer's deregistration delay below it).
pub const DEFAULT_DRAIN_SECONDS: u64 = 15;
/// How long shutdown waits for requests in flight once the drain is over.
pub const SHUTDOWN_GRACE_SECS: u64 = 10;
