//! The domain map of the `aws` source: a TOML file read once at start into a plain struct.
//! It names where each domain lives (account, owner, description) and how govcat reads it
//! (region, reader role name, external id, retry and deadline limits). It holds no secret:
//! the server's own credentials come from the SDK's standard sources.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

use serde::Deserialize;

use crate::catalog::CatalogError;

/// Default number of attempts per AWS call (the first try included).
pub const DEFAULT_MAX_ATTEMPTS: u32 = 3;
/// Default deadline of one AWS call, all its attempts and backoff included.
pub const DEFAULT_CALL_TIMEOUT_MS: u64 = 10_000;
/// Default deadline for opening a connection.
pub const DEFAULT_CONNECT_TIMEOUT_MS: u64 = 3_000;
/// Default first backoff between attempts (doubles with jitter, as the SDK's standard mode).
pub const DEFAULT_INITIAL_BACKOFF_MS: u64 = 200;

/// One domain: its Glue database is `<name>_curated` in `account_id`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainConfig {
    pub name: String,
    pub account_id: String,
    pub owner: String,
    pub description: String,
}

/// The whole file. `[[domain]]` tables become `domains`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsConfig {
    /// AWS region of every domain account, e.g. `eu-central-1`.
    pub region: String,
    /// Name of the reader role in each domain account (`arn:aws:iam::<account>:role/<role_name>`).
    pub role_name: String,
    /// The external id the reader roles' trust policies require.
    pub external_id: String,
    #[serde(default = "default_max_attempts")]
    pub max_attempts: u32,
    #[serde(default = "default_call_timeout_ms")]
    pub call_timeout_ms: u64,
    #[serde(default = "default_connect_timeout_ms")]
    pub connect_timeout_ms: u64,
    #[serde(default = "default_initial_backoff_ms")]
    pub initial_backoff_ms: u64,
    #[serde(rename = "domain")]
    pub domains: Vec<DomainConfig>,
}

fn default_max_attempts() -> u32 {
    DEFAULT_MAX_ATTEMPTS
}
fn default_call_timeout_ms() -> u64 {
    DEFAULT_CALL_TIMEOUT_MS
}
fn default_connect_timeout_ms() -> u64 {
    DEFAULT_CONNECT_TIMEOUT_MS
}
fn default_initial_backoff_ms() -> u64 {
    DEFAULT_INITIAL_BACKOFF_MS
}

/// Characters IAM allows in a role name and STS in a session name: `[\w+=,.@-]`.
pub(crate) fn is_iam_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '_' | '+' | '=' | ',' | '.' | '@' | '-')
}

/// Domain names become Glue database names and folder names of `record`: keep them plain.
fn is_domain_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

impl AwsConfig {
    /// Reads and checks the file; every problem names the file, the field and the fix.
    pub fn load(path: &Path) -> Result<AwsConfig, CatalogError> {
        let text = std::fs::read_to_string(path).map_err(|e| CatalogError::Io {
            thing: format!("aws config {}", path.display()),
            problem: format!("cannot be read ({e})"),
            next: "pass --aws-config with the domain map (TOML: region, role_name, external_id, [[domain]] tables)".into(),
        })?;
        Self::parse(&text, path)
    }

    pub fn parse(text: &str, path: &Path) -> Result<AwsConfig, CatalogError> {
        let config: AwsConfig = toml::from_str(text).map_err(|e| CatalogError::Io {
            thing: format!("aws config {}", path.display()),
            problem: format!("is not a valid domain map: {}", e.to_string().trim_end()),
            next: "fix the file: top-level region, role_name, external_id, and one [[domain]] table per domain with name, account_id, owner, description".into(),
        })?;
        config.check(path)?;
        Ok(config)
    }

    fn check(&self, path: &Path) -> Result<(), CatalogError> {
        let invalid = |field: &str, problem: String| CatalogError::Io {
            thing: format!("aws config {}", path.display()),
            problem: format!("{field} {problem}"),
            next: "fix the file and restart".into(),
        };
        if self.region.trim().is_empty() {
            return Err(invalid(
                "region",
                "is empty; set the AWS region of the domain accounts, e.g. eu-central-1".into(),
            ));
        }
        if self.role_name.is_empty()
            || self.role_name.len() > 64
            || !self.role_name.chars().all(is_iam_name_char)
        {
            return Err(invalid(
                "role_name",
                format!(
                    "'{}' is not an IAM role name (1-64 characters of [A-Za-z0-9_+=,.@-])",
                    self.role_name
                ),
            ));
        }
        let ext_ok = (2..=1224).contains(&self.external_id.len())
            && self
                .external_id
                .chars()
                .all(|c| is_iam_name_char(c) || c == ':' || c == '/');
        if !ext_ok {
            return Err(invalid(
                "external_id",
                "must be 2-1224 characters of [A-Za-z0-9_+=,.@:/-], as STS requires".into(),
            ));
        }
        if self.max_attempts == 0 {
            return Err(invalid(
                "max_attempts",
                "is 0; use 1 or more (1 means no retry)".into(),
            ));
        }
        if self.call_timeout_ms == 0 || self.connect_timeout_ms == 0 {
            return Err(invalid(
                "call_timeout_ms / connect_timeout_ms",
                "must be positive".into(),
            ));
        }
        if self.domains.is_empty() {
            return Err(invalid(
                "[[domain]]",
                "tables are missing; add one per domain".into(),
            ));
        }
        let mut seen = BTreeSet::new();
        for d in &self.domains {
            if !is_domain_name(&d.name) {
                return Err(invalid(
                    "domain name",
                    format!(
                        "'{}' must be lower-case letters, digits, '_' or '-'",
                        d.name
                    ),
                ));
            }
            if !seen.insert(d.name.as_str()) {
                return Err(invalid(
                    "domain name",
                    format!("'{}' appears twice", d.name),
                ));
            }
            if d.account_id.len() != 12 || !d.account_id.chars().all(|c| c.is_ascii_digit()) {
                return Err(invalid(
                    &format!("account_id of domain '{}'", d.name),
                    format!("'{}' is not a 12-digit AWS account id", d.account_id),
                ));
            }
        }
        Ok(())
    }

    pub fn domain(&self, name: &str) -> Option<&DomainConfig> {
        self.domains.iter().find(|d| d.name == name)
    }

    /// The reader role of a domain account.
    pub fn role_arn(&self, domain: &DomainConfig) -> String {
        format!("arn:aws:iam::{}:role/{}", domain.account_id, self.role_name)
    }

    pub fn call_timeout(&self) -> Duration {
        Duration::from_millis(self.call_timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
region = "eu-central-1"
role_name = "govcat-reader"
external_id = "govcat-demo"

[[domain]]
name = "policy"
account_id = "210000000001"
owner = "Team Bestand"
description = "Policy administration"
"#;

    fn parse(text: &str) -> Result<AwsConfig, CatalogError> {
        AwsConfig::parse(text, Path::new("t.toml"))
    }

    #[test]
    fn a_minimal_file_gets_the_default_limits() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.max_attempts, DEFAULT_MAX_ATTEMPTS);
        assert_eq!(c.call_timeout_ms, DEFAULT_CALL_TIMEOUT_MS);
        assert_eq!(
            c.role_arn(&c.domains[0]),
            "arn:aws:iam::210000000001:role/govcat-reader"
        );
    }

    #[test]
    fn a_bad_account_id_is_refused_naming_the_domain() {
        let text = GOOD.replace("210000000001", "2100");
        assert_eq!(
            parse(&text).unwrap_err(),
            CatalogError::Io {
                thing: "aws config t.toml".into(),
                problem: "account_id of domain 'policy' '2100' is not a 12-digit AWS account id"
                    .into(),
                next: "fix the file and restart".into(),
            }
        );
    }

    #[test]
    fn unknown_keys_are_refused() {
        let text = GOOD.replace("role_name", "role_name_template");
        let err = parse(&text).unwrap_err();
        assert_eq!(err.kind(), "SourceUnavailable");
        assert!(
            matches!(err, CatalogError::Io { ref problem, .. } if problem.contains("role_name_template"))
        );
    }

    #[test]
    fn zero_attempts_and_a_one_character_external_id_are_refused() {
        assert!(parse(&format!("max_attempts = 0\n{GOOD}")).is_err());
        assert!(parse(&GOOD.replace("govcat-demo", "x")).is_err());
    }
}
