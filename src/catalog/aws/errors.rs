//! Turns an SDK failure into a `CatalogError` that says what failed and what to do next
//! (FIDELITY rule 3: errors, never empty answers). Classification works on a plain
//! [`Failure`] extracted from the SDK error, so it is unit-tested without a network.

use std::error::Error;

use aws_credential_types::provider::error::CredentialsError;
use aws_sdk_glue::config::http::HttpResponse;
use aws_sdk_glue::error::{ProvideErrorMetadata, SdkError};

use crate::catalog::CatalogError;

/// How an SDK call failed, as far as govcat's decisions go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FailureKind {
    /// The request could not be built.
    Construction,
    /// The server's own credentials could not be loaded (none configured, provider failed).
    Credentials,
    /// The per-call deadline passed.
    Timeout,
    /// No response: connection refused, DNS, TLS, reset.
    Dispatch,
    /// A response that could not be read as the service's answer.
    Response,
    /// The service answered with an error.
    Service,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Failure {
    pub kind: FailureKind,
    pub status: Option<u16>,
    pub code: Option<String>,
    pub message: Option<String>,
    /// The SDK's full error chain, for the message.
    pub detail: String,
}

impl Failure {
    pub fn code_is(&self, code: &str) -> bool {
        self.code.as_deref() == Some(code)
    }

    pub fn is_not_found(&self) -> bool {
        self.code_is("EntityNotFoundException")
    }

    pub fn is_access_denied(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some("AccessDenied" | "AccessDeniedException" | "UnauthorizedOperation")
        ) || (self.kind == FailureKind::Service && self.status == Some(403) && self.code.is_none())
    }

    fn is_credential_problem(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some(
                "InvalidClientTokenId"
                    | "UnrecognizedClientException"
                    | "SignatureDoesNotMatch"
                    | "IncompleteSignature"
                    | "MissingAuthenticationToken"
                    | "ExpiredToken"
                    | "ExpiredTokenException"
                    | "InvalidAccessKeyId"
            )
        )
    }

    fn is_throttling(&self) -> bool {
        matches!(
            self.code.as_deref(),
            Some(
                "Throttling"
                    | "ThrottlingException"
                    | "ThrottledException"
                    | "RequestLimitExceeded"
                    | "RequestThrottled"
                    | "RequestThrottledException"
                    | "TooManyRequestsException"
                    | "ProvisionedThroughputExceededException"
                    | "SlowDown"
                    | "PriorRequestNotComplete"
            )
        ) || self.status == Some(429)
    }

    fn is_server_side(&self) -> bool {
        self.status.is_some_and(|s| s >= 500)
            || matches!(
                self.code.as_deref(),
                Some(
                    "InternalServiceException"
                        | "InternalFailure"
                        | "ServiceUnavailable"
                        | "InternalServerError"
                )
            )
    }

    fn what_upstream_said(&self) -> String {
        match (&self.code, &self.message) {
            (Some(c), Some(m)) => format!("{c}: {m}"),
            (Some(c), None) => c.clone(),
            (None, Some(m)) => m.clone(),
            // The SDK's own chain here is a parse error of an HTML page, which says nothing.
            (None, None) => "the response carried no AWS error code".into(),
        }
    }
}

/// The error and its sources, each once, as one line of text.
fn chain(e: &(dyn Error + 'static)) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        let text = err.to_string();
        if !parts.iter().any(|p| p.contains(&text)) {
            parts.push(text);
        }
        next = err.source();
    }
    parts.join(": ")
}

fn caused_by_credentials(e: &(dyn Error + 'static)) -> bool {
    let mut next: Option<&(dyn Error + 'static)> = Some(e);
    while let Some(err) = next {
        if err.downcast_ref::<CredentialsError>().is_some() {
            return true;
        }
        next = err.source();
    }
    false
}

/// Extracts a [`Failure`] from any of the three SDKs' errors.
pub(crate) fn failure<E>(e: &SdkError<E, HttpResponse>) -> Failure
where
    E: ProvideErrorMetadata + Error + 'static,
{
    let kind = match e {
        _ if caused_by_credentials(e) => FailureKind::Credentials,
        SdkError::ConstructionFailure(_) => FailureKind::Construction,
        SdkError::TimeoutError(_) => FailureKind::Timeout,
        SdkError::DispatchFailure(d) if d.is_timeout() => FailureKind::Timeout,
        SdkError::DispatchFailure(_) => FailureKind::Dispatch,
        SdkError::ResponseError(_) => FailureKind::Response,
        SdkError::ServiceError(_) => FailureKind::Service,
        _ => FailureKind::Response,
    };
    Failure {
        kind,
        status: e.raw_response().map(|r| r.status().as_u16()),
        code: e.code().map(str::to_string),
        message: e.message().map(str::to_string),
        detail: chain(e),
    }
}

/// The call that failed, for the message.
#[derive(Debug, Clone)]
pub(crate) struct Call {
    pub domain: String,
    /// e.g. `glue:GetTable on policy_curated.customer`.
    pub operation: String,
    /// The reader role ARN the call ran under (or, for AssumeRole, the role it asked for).
    pub role_arn: String,
    /// Whether this is the `sts:AssumeRole` step (runs under the server's own identity).
    pub assume_role: bool,
}

/// The limits a failure ran into, for the message.
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub max_attempts: u32,
    pub call_timeout_ms: u64,
    /// Where requests went: the configured endpoint or "the regional AWS endpoint".
    pub endpoint: String,
}

const OWN_CREDENTIALS: &str = "give govcat AWS credentials of its own (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, or the instance or task role): they are missing, invalid or expired";

/// Maps a failure (other than "not found", which the call site turns into
/// `DatasetNotFound` / `DomainNotFound`) to a `CatalogError` with a next step.
pub(crate) fn classify(f: &Failure, call: &Call, limits: &Limits) -> CatalogError {
    let attempts = match limits.max_attempts {
        1 => "1 attempt".to_string(),
        n => format!("up to {n} attempts with backoff"),
    };
    let retry_later = format!(
        "retry later (govcat made {attempts} within a {} ms deadline); if it persists, check that {} is reachable and healthy",
        limits.call_timeout_ms, limits.endpoint
    );
    let unavailable = |problem: String| CatalogError::UpstreamUnavailable {
        domain: call.domain.clone(),
        operation: call.operation.clone(),
        problem,
        next: retry_later.clone(),
    };
    let own_identity = "govcat's own AWS identity".to_string();
    match f.kind {
        FailureKind::Timeout => {
            return unavailable(format!(
                "no answer within the {} ms deadline ({})",
                limits.call_timeout_ms, f.detail
            ))
        }
        FailureKind::Dispatch => {
            return CatalogError::UpstreamUnavailable {
                domain: call.domain.clone(),
                operation: call.operation.clone(),
                problem: format!("could not reach {} ({})", limits.endpoint, f.detail),
                next: format!(
                    "check that {} is reachable from where govcat runs: in a private subnet without internet access that needs a VPC interface endpoint for the service (sts, glue, lakeformation), or a proxy in HTTPS_PROXY; then {retry_later}",
                    limits.endpoint
                ),
            }
        }
        FailureKind::Credentials => {
            return CatalogError::UpstreamNoCredentials {
                domain: call.domain.clone(),
                operation: call.operation.clone(),
                problem: format!("govcat has no usable AWS credentials ({})", short(&f.detail)),
                next: OWN_CREDENTIALS.into(),
            }
        }
        FailureKind::Construction => {
            return CatalogError::UpstreamRejected {
                domain: call.domain.clone(),
                operation: call.operation.clone(),
                problem: format!("the request could not be built ({})", f.detail),
                next: "check govcat's AWS configuration: credentials (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or an instance role), AWS_ENDPOINT_URL and the region".into(),
            }
        }
        FailureKind::Response if f.status.is_none_or(|s| s < 400) => {
            return unavailable(format!("unreadable response ({})", f.detail))
        }
        FailureKind::Response | FailureKind::Service => {}
    }
    if f.is_throttling() {
        return unavailable(format!("throttled by AWS ({})", f.what_upstream_said()));
    }
    if f.is_server_side() {
        let status = f
            .status
            .map(|s| format!("HTTP {s}"))
            .unwrap_or_else(|| "a server error".into());
        return unavailable(format!(
            "{status} from {} ({})",
            limits.endpoint,
            short(&f.what_upstream_said())
        ));
    }
    if f.is_credential_problem() {
        return CatalogError::UpstreamAccessDenied {
            domain: call.domain.clone(),
            principal: if call.assume_role {
                own_identity
            } else {
                call.role_arn.clone()
            },
            operation: call.operation.clone(),
            problem: f.what_upstream_said(),
            next: if call.assume_role {
                OWN_CREDENTIALS.into()
            } else {
                format!("the temporary credentials of {} were refused; retry (govcat assumes the role again), and if it persists check this machine's clock and the role's maximum session duration", call.role_arn)
            },
        };
    }
    if f.is_access_denied() {
        return if call.assume_role {
            CatalogError::UpstreamAccessDenied {
                domain: call.domain.clone(),
                principal: own_identity,
                operation: call.operation.clone(),
                problem: f.what_upstream_said(),
                next: format!(
                    "check the trust policy of {}: it must let govcat's own AWS identity assume the role, and its sts:ExternalId condition must equal external_id in the govcat AWS config",
                    call.role_arn
                ),
            }
        } else {
            CatalogError::UpstreamAccessDenied {
                domain: call.domain.clone(),
                principal: call.role_arn.clone(),
                operation: call.operation.clone(),
                problem: f.what_upstream_said(),
                next: format!(
                    "grant {} read access in domain '{}' (glue:GetTable/GetTables, lakeformation:GetResourceLFTags/ListLFTags/ListPermissions and Lake Formation DESCRIBE on the database, its tables and LF-tags), or check the domain's account_id in the govcat AWS config",
                    call.role_arn, call.domain
                ),
            }
        };
    }
    CatalogError::UpstreamRejected {
        domain: call.domain.clone(),
        operation: call.operation.clone(),
        problem: f.what_upstream_said(),
        next: "this request will not succeed on retry; report the message to the govcat maintainers with the domain and operation".into(),
    }
}

/// Upstream bodies can be whole HTML pages: keep messages readable.
fn short(s: &str) -> String {
    let one_line: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    match one_line.char_indices().nth(200) {
        Some((i, _)) => format!("{}...", &one_line[..i]),
        None => one_line,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(assume_role: bool) -> Call {
        Call {
            domain: "policy".into(),
            operation: "glue:GetTable on policy_curated.customer".into(),
            role_arn: "arn:aws:iam::210000000001:role/govcat-reader".into(),
            assume_role,
        }
    }

    fn limits() -> Limits {
        Limits {
            max_attempts: 3,
            call_timeout_ms: 10_000,
            endpoint: "http://127.0.0.1:9".into(),
        }
    }

    fn service(status: u16, code: Option<&str>, message: Option<&str>) -> Failure {
        Failure {
            kind: FailureKind::Service,
            status: Some(status),
            code: code.map(str::to_string),
            message: message.map(str::to_string),
            detail: "service error".into(),
        }
    }

    const RETRY: &str = "retry later (govcat made up to 3 attempts with backoff within a 10000 ms deadline); if it persists, check that http://127.0.0.1:9 is reachable and healthy";

    #[test]
    fn throttling_is_unavailable_with_retry_later() {
        let e = classify(
            &service(400, Some("ThrottlingException"), Some("Rate exceeded")),
            &call(false),
            &limits(),
        );
        assert_eq!(
            e,
            CatalogError::UpstreamUnavailable {
                domain: "policy".into(),
                operation: "glue:GetTable on policy_curated.customer".into(),
                problem: "throttled by AWS (ThrottlingException: Rate exceeded)".into(),
                next: RETRY.into(),
            }
        );
        assert_eq!(e.kind(), "UpstreamUnavailable");
    }

    #[test]
    fn a_500_without_a_code_is_unavailable_not_rejected() {
        let e = classify(&service(500, None, None), &call(false), &limits());
        assert_eq!(
            e,
            CatalogError::UpstreamUnavailable {
                domain: "policy".into(),
                operation: "glue:GetTable on policy_curated.customer".into(),
                problem:
                    "HTTP 500 from http://127.0.0.1:9 (the response carried no AWS error code)"
                        .into(),
                next: RETRY.into(),
            }
        );
    }

    #[test]
    fn connection_refused_and_timeouts_are_unavailable() {
        for kind in [FailureKind::Dispatch, FailureKind::Timeout] {
            let f = Failure {
                kind,
                status: None,
                code: None,
                message: None,
                detail: "connection refused".into(),
            };
            let e = classify(&f, &call(false), &limits());
            // No answer at all names where the way out may be missing (endpoint, proxy).
            let network = "check that http://127.0.0.1:9 is reachable from where govcat runs: in a private subnet without internet access that needs a VPC interface endpoint for the service (sts, glue, lakeformation), or a proxy in HTTPS_PROXY; then ";
            let want = match kind {
                FailureKind::Dispatch => format!("{network}{RETRY}"),
                _ => RETRY.to_string(),
            };
            assert!(
                matches!(e, CatalogError::UpstreamUnavailable { ref next, .. } if *next == want),
                "{kind:?}: {e:?}"
            );
        }
    }

    #[test]
    fn denied_assume_role_points_at_the_trust_policy_and_external_id() {
        let e = classify(
            &service(
                403,
                Some("AccessDenied"),
                Some("not authorized to perform sts:AssumeRole"),
            ),
            &call(true),
            &limits(),
        );
        assert_eq!(
            e,
            CatalogError::UpstreamAccessDenied {
                domain: "policy".into(),
                principal: "govcat's own AWS identity".into(),
                operation: "glue:GetTable on policy_curated.customer".into(),
                problem: "AccessDenied: not authorized to perform sts:AssumeRole".into(),
                next: "check the trust policy of arn:aws:iam::210000000001:role/govcat-reader: it must let govcat's own AWS identity assume the role, and its sts:ExternalId condition must equal external_id in the govcat AWS config".into(),
            }
        );
    }

    #[test]
    fn denied_read_names_the_role_and_the_domain() {
        let e = classify(
            &service(
                400,
                Some("AccessDeniedException"),
                Some("Insufficient Lake Formation permission(s)"),
            ),
            &call(false),
            &limits(),
        );
        let CatalogError::UpstreamAccessDenied {
            principal, domain, ..
        } = &e
        else {
            panic!("{e:?}")
        };
        assert_eq!(principal, "arn:aws:iam::210000000001:role/govcat-reader");
        assert_eq!(domain, "policy");
        assert_eq!(e.kind(), "UpstreamAccessDenied");
    }

    #[test]
    fn a_validation_error_is_rejected_not_retried() {
        let e = classify(
            &service(400, Some("InvalidInputException"), Some("bad")),
            &call(false),
            &limits(),
        );
        assert_eq!(e.kind(), "UpstreamRejected");
    }

    #[test]
    fn html_error_pages_are_cut_to_one_short_line() {
        let page = format!("<html>\n<title>500</title>\n{}</html>", "x".repeat(500));
        let s = short(&page);
        assert_eq!(s.chars().count(), 203);
        assert!(!s.contains('\n'));
    }
}
