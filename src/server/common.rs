//! What the HTTP transports share: the HTTP status of every tool error kind, the error response
//! (with the `insufficient_scope` challenge), the refusal of a body over [`MAX_BODY_BYTES`],
//! and the tool list's cache hint. It sits below `mcp`, `guard` and `rest` and uses none of
//! them, so the three form a line; it decides nothing a tool decides.

use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::Value;

use crate::limits::MAX_BODY_BYTES;
use crate::tools::{self, ToolError};

/// `ttlMs` of the tool list: the list is fixed for the lifetime of the process.
pub const TOOL_LIST_TTL_MS: u64 = 300_000;
/// The error kind of a request body over [`MAX_BODY_BYTES`] (HTTP 413).
pub const REQUEST_TOO_LARGE: &str = "RequestTooLarge";
/// The error kind of a request refused because too many are in flight (HTTP 429).
pub const TOO_MANY_REQUESTS: &str = "TooManyRequests";

/// The HTTP status of a tool error kind.
///
/// Caller mistakes are 4xx (bad arguments 400, no or bad token 401, outside the caller's
/// scopes 403, not in this catalog 404, body too large 413, an argument over its bound 422,
/// too many requests in flight 429). Upstream trouble is 502 when the upstream answered
/// wrongly (unexpected shape, refused the server's own role) and 503 when it or a serving
/// prerequisite (model, snapshot) is unavailable. Anything else is the server's fault, 500:
/// a kind not listed here is 500, so add new kinds when a tool gains them.
pub fn status_for(kind: &str) -> StatusCode {
    match kind {
        "InvalidArguments"
        | "UnknownTagKey"
        | "UnknownTagValue"
        | "ConflictingTagValues"
        | "InvalidCursor" => StatusCode::BAD_REQUEST,
        "MissingToken" | "InvalidToken" => StatusCode::UNAUTHORIZED,
        "InsufficientScope" => StatusCode::FORBIDDEN,
        "UnknownTool" | "DomainNotFound" | "DatasetNotFound" | "RoleNotFound" => {
            StatusCode::NOT_FOUND
        }
        REQUEST_TOO_LARGE => StatusCode::PAYLOAD_TOO_LARGE,
        tools::LIMIT_EXCEEDED => StatusCode::UNPROCESSABLE_ENTITY,
        TOO_MANY_REQUESTS => StatusCode::TOO_MANY_REQUESTS,
        "UpstreamSchemaError"
        | "UpstreamRejected"
        | "UpstreamDatabaseMissing"
        | "UpstreamAccessDenied"
        | "TagOutsideOntology" => StatusCode::BAD_GATEWAY,
        "SourceUnavailable"
        | "UpstreamUnavailable"
        | "EmbedderUnavailable"
        | "NoSnapshot"
        | "NotCalibrated"
        | "SnapshotSourceMismatch"
        | crate::audit::AUDIT_UNAVAILABLE => StatusCode::SERVICE_UNAVAILABLE,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// The refusal of a request body over [`MAX_BODY_BYTES`] (HTTP 413); `what` names what the
/// body should carry.
pub fn request_too_large(what: &str) -> ToolError {
    ToolError::new(
        REQUEST_TOO_LARGE,
        format!("the request body is larger than {MAX_BODY_BYTES} bytes; send {what} in at most {MAX_BODY_BYTES} bytes"),
    )
    .with("limit", "request_body")
    .with("max", MAX_BODY_BYTES)
}

/// The error object with its status. A scope refusal is the 403 `insufficient_scope`
/// challenge naming every scope the request needs, with `resource_metadata` when the server
/// validates tokens (`metadata_url`).
pub fn error_response(e: &ToolError, metadata_url: Option<&str>) -> Response {
    if let Some(challenge) = metadata_url.and_then(|url| crate::auth::scope_challenge(e, url)) {
        return challenge;
    }
    let status = status_for(&e.kind);
    let mut resp = (status, Json(e.to_json())).into_response();
    if status == StatusCode::FORBIDDEN {
        let scopes: Vec<&str> = e
            .details
            .get("required_scopes")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let challenge = format!(
            "Bearer error=\"insufficient_scope\", scope=\"{}\"",
            scopes.join(" ")
        );
        if let Ok(v) = HeaderValue::from_str(&challenge) {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
        }
    }
    resp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_kinds_map_to_statuses() {
        let cases = [
            ("InvalidArguments", 400),
            ("InvalidCursor", 400),
            ("MissingToken", 401),
            ("InvalidToken", 401),
            ("UpstreamRejected", 502),
            ("UpstreamDatabaseMissing", 502),
            ("UpstreamAccessDenied", 502),
            ("UpstreamUnavailable", 503),
            ("EmbedderUnavailable", 503),
            ("NoSnapshot", 503),
            ("RetrievalFailed", 500),
            ("UnknownTagKey", 400),
            ("UnknownTagValue", 400),
            ("ConflictingTagValues", 400),
            ("InsufficientScope", 403),
            ("UnknownTool", 404),
            ("DomainNotFound", 404),
            ("DatasetNotFound", 404),
            ("RoleNotFound", 404),
            ("UpstreamSchemaError", 502),
            ("SourceUnavailable", 503),
            ("OutputSchemaViolation", 500),
            ("InternalError", 500),
            ("AuditUnavailable", 503),
            ("RequestTooLarge", 413),
            ("LimitExceeded", 422),
            ("TooManyRequests", 429),
        ];
        for (kind, status) in cases {
            assert_eq!(status_for(kind).as_u16(), status, "{kind}");
        }
    }

    #[test]
    fn a_403_names_every_required_scope_in_one_challenge() {
        let e = ToolError::insufficient_scope(vec![
            "catalog:claims:read".into(),
            "catalog:policy:read".into(),
        ]);
        let resp = error_response(&e, None);
        assert_eq!(resp.status(), StatusCode::FORBIDDEN);
        assert_eq!(
            resp.headers()[header::WWW_AUTHENTICATE],
            "Bearer error=\"insufficient_scope\", scope=\"catalog:claims:read catalog:policy:read\""
        );
    }
}
