//! The `aws` source: Glue, Lake Formation and STS through the AWS SDK, one reader role per
//! domain account. Each SDK response is turned into the JSON of the `dir` format's recorded
//! files (`convert`) and then goes through the same parse boundary and dataset assembly as the
//! `dir` source (`recorded`), so both sources answer alike and `record` can write what it read.
//!
//! It calls `sts:AssumeRole` and Get/List operations only; it never writes upstream. An upstream
//! failure is an error with a next step, never an empty answer (FIDELITY rule 3). The caller's
//! credentials never reach this module: only the caller's subject does, as the STS session name
//! and a session tag. Domain scopes are checked by the tools before any read.

pub mod config;
mod convert;
pub mod drift;
pub(crate) mod errors;
mod paginate;
pub mod record;
mod recorded;

use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::{BehaviorVersion, ConfigLoader, SdkConfig};
use aws_sdk_lakeformation::types::{
    DatabaseResource, Resource, TableResource, TableWithColumnsResource,
};
use serde_json::{json, Value};

use super::boundary::{self, SchemaError};
use super::{
    AwsDomainIdentity, Caller, CatalogError, CatalogSource, Dataset, Domain, DomainInfo, LevelTags,
    RoleGrants, SourceFreshness, SourceIdentity, TableName, Tags,
};
use crate::ontology::Ontology;
pub use config::{AwsConfig, DomainConfig};
pub use drift::{DomainDrift, DriftReport};
use errors::{Call, Limits};
pub use recorded::{assemble_dataset, RecordedTable};

/// Lifetime of the reader-role sessions govcat asks STS for.
pub const SESSION_SECONDS: i32 = 900;
/// Cached credentials are renewed this long before they expire.
pub const RENEW_BEFORE_EXPIRY: Duration = Duration::from_secs(60);
/// The session tag that carries the caller's subject.
pub const CALLER_TAG_KEY: &str = "caller";

/// `mcp-<subject>` with every character outside `[\w+=,.@-]` replaced by `_`, cut at 64
/// characters (STS's limit).
pub fn session_name(subject: &str) -> String {
    let sanitised: String = subject
        .chars()
        .map(|c| if config::is_iam_name_char(c) { c } else { '_' })
        .collect();
    format!("mcp-{sanitised}").chars().take(64).collect()
}

/// The caller's subject as a session-tag value: characters outside what STS allows in tag
/// values (`[\p{L}\p{Z}\p{N}_.:/=+\-@]`) replaced by `_`, cut at 256 characters; `-` if empty.
pub fn caller_tag_value(subject: &str) -> String {
    let v: String = subject
        .chars()
        .map(|c| {
            if c.is_alphanumeric() || c == ' ' || "_.:/=+-@".contains(c) {
                c
            } else {
                '_'
            }
        })
        .take(256)
        .collect();
    if v.is_empty() {
        "-".into()
    } else {
        v
    }
}

/// Temporary credentials of one (domain, caller) pair, as ready-made clients.
#[derive(Clone)]
struct Session {
    role_arn: String,
    glue: aws_sdk_glue::Client,
    lf: aws_sdk_lakeformation::Client,
    renew_at: SystemTime,
}

/// Cached sessions, keyed by (domain, caller subject).
type SessionCache = HashMap<(String, String), Session>;

/// Everything the async side needs; shared with the tasks spawned on the runtime.
struct Inner {
    config: AwsConfig,
    sdk: SdkConfig,
    sts: aws_sdk_sts::Client,
    ontology: Ontology,
    limits: Limits,
    sessions: Mutex<SessionCache>,
}

/// The `aws` catalog source. Synchronous to its callers: it owns a small tokio runtime and
/// waits for its own tasks, so it works from plain threads, `spawn_blocking` threads and
/// the CLI alike.
pub struct AwsSource {
    runtime: Option<tokio::runtime::Runtime>,
    inner: Arc<Inner>,
}

impl Drop for AwsSource {
    fn drop(&mut self) {
        // Dropping a runtime blocks, which panics inside another runtime's async context.
        if let Some(rt) = self.runtime.take() {
            rt.shutdown_background();
        }
    }
}

fn internal(thing: &str, problem: impl std::fmt::Display) -> CatalogError {
    CatalogError::Io {
        thing: thing.to_string(),
        problem: problem.to_string(),
        next: "report this to the govcat maintainers".into(),
    }
}

impl AwsSource {
    /// Opens the source from the domain map; the server's own identity, the endpoint and
    /// profiles come from the SDK's standard sources (environment, profile files, instance role).
    pub fn open(config_path: &Path, ontology: Ontology) -> Result<AwsSource, CatalogError> {
        let config = AwsConfig::load(config_path)?;
        Self::with_loader(
            config,
            ontology,
            aws_config::defaults(BehaviorVersion::latest()),
        )
    }

    /// Opens the source with an explicit SDK config loader (endpoint, credentials): for tests
    /// and embedders. Region, retries and deadlines from `config` are applied on top.
    pub fn with_loader(
        config: AwsConfig,
        ontology: Ontology,
        loader: ConfigLoader,
    ) -> Result<AwsSource, CatalogError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("govcat-aws")
            .enable_all()
            .build()
            .map_err(|e| internal("the aws source's runtime", format!("cannot start: {e}")))?;
        let loader = loader
            .region(aws_sdk_sts::config::Region::new(config.region.clone()))
            .retry_config(
                RetryConfig::standard()
                    .with_max_attempts(config.max_attempts)
                    .with_initial_backoff(Duration::from_millis(config.initial_backoff_ms)),
            )
            .timeout_config(
                TimeoutConfig::builder()
                    .operation_timeout(config.call_timeout())
                    .connect_timeout(Duration::from_millis(config.connect_timeout_ms))
                    .build(),
            );
        let sdk = wait(&runtime, loader.load())?;
        let limits = Limits {
            max_attempts: config.max_attempts,
            call_timeout_ms: config.call_timeout_ms,
            endpoint: sdk
                .endpoint_url()
                .map(str::to_string)
                .unwrap_or_else(|| format!("the AWS endpoints of region {}", config.region)),
        };
        let inner = Inner {
            sts: aws_sdk_sts::Client::new(&sdk),
            sdk,
            config,
            ontology,
            limits,
            sessions: Mutex::new(HashMap::new()),
        };
        Ok(AwsSource {
            runtime: Some(runtime),
            inner: Arc::new(inner),
        })
    }

    pub fn config(&self) -> &AwsConfig {
        &self.inner.config
    }

    /// Runs one async read on the source's runtime and waits for it.
    fn block<T, F>(&self, f: impl FnOnce(Arc<Inner>) -> F) -> Result<T, CatalogError>
    where
        F: Future<Output = Result<T, CatalogError>> + Send + 'static,
        T: Send + 'static,
    {
        let rt = self
            .runtime
            .as_ref()
            .ok_or_else(|| internal("the aws source", "is shut down"))?;
        wait(rt, f(self.inner.clone()))?
    }

    /// Compares each readable domain account's LF-tag vocabulary (`ListLFTags`) with the
    /// ontology, logs every domain that drifts, and returns the report (for `/readyz`).
    pub fn ontology_drift(&self, caller: &Caller) -> Result<DriftReport, CatalogError> {
        let caller = caller.clone();
        let report = self.block(move |inner| async move { inner.ontology_drift(&caller).await })?;
        for d in report.domains.iter().filter(|d| !d.is_clean()) {
            tracing::warn!(
                domain = %d.domain,
                account_id = %d.account_id,
                keys_only_in_account = ?d.keys_only_in_account,
                keys_only_in_ontology = ?d.keys_only_in_ontology,
                values_only_in_account = ?d.values_only_in_account,
                values_only_in_ontology = ?d.values_only_in_ontology,
                "LF-tag vocabulary of the domain account differs from the ontology"
            );
        }
        Ok(report)
    }

    /// Reads the whole catalog the caller may read and writes it in the `dir` format.
    pub fn record(
        &self,
        caller: &Caller,
        out: &Path,
        recorded_at: &str,
    ) -> Result<record::RecordSummary, CatalogError> {
        let caller = caller.clone();
        let snapshot =
            self.block(move |inner| async move { record::read_all(&inner, &caller).await })?;
        record::write(
            &self.inner.config,
            &self.inner.sdk,
            &snapshot,
            out,
            recorded_at,
        )
    }
}

/// Spawns `f` on `rt` and waits on a channel: unlike `Runtime::block_on`, this never panics
/// when the calling thread is itself inside a runtime.
fn wait<F>(rt: &tokio::runtime::Runtime, f: F) -> Result<F::Output, CatalogError>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    rt.spawn(async move {
        let _ = tx.send(f.await);
    });
    rx.recv().map_err(|_| {
        internal(
            "an aws source task",
            "ended without an answer (it panicked)",
        )
    })
}

impl Inner {
    fn domain(&self, domain: &Domain) -> Result<&DomainConfig, CatalogError> {
        self.config
            .domain(&domain.0)
            .ok_or_else(|| CatalogError::DomainNotFound {
                domain: domain.0.clone(),
                available: self.config.domains.len(),
            })
    }

    fn call(&self, domain: &DomainConfig, role_arn: &str, operation: String) -> Call {
        Call {
            domain: domain.name.clone(),
            operation,
            role_arn: role_arn.to_string(),
            assume_role: false,
        }
    }

    /// Credentials for (domain, caller), from the cache or from `sts:AssumeRole` under the
    /// server's own identity.
    async fn session(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
    ) -> Result<Session, CatalogError> {
        let key = (domain.name.clone(), caller.subject.clone());
        let now = SystemTime::now();
        if let Some(s) = self.lock_sessions()?.get(&key) {
            if s.renew_at > now {
                return Ok(s.clone());
            }
        }
        let role_arn = self.config.role_arn(domain);
        let call = Call {
            domain: domain.name.clone(),
            operation: format!("sts:AssumeRole into {role_arn}"),
            role_arn: role_arn.clone(),
            assume_role: true,
        };
        let tag = aws_sdk_sts::types::Tag::builder()
            .key(CALLER_TAG_KEY)
            .value(caller_tag_value(&caller.subject))
            .build()
            .map_err(|e| internal("the caller session tag", e))?;
        let out = self
            .sts
            .assume_role()
            .role_arn(&role_arn)
            .role_session_name(session_name(&caller.subject))
            .external_id(&self.config.external_id)
            .duration_seconds(SESSION_SECONDS)
            .tags(tag)
            .send()
            .await
            .map_err(|e| errors::classify(&errors::failure(&e), &call, &self.limits))?;
        let creds = out.credentials.ok_or_else(|| {
            CatalogError::UpstreamSchema(SchemaError::MissingKey {
                what: call.operation.clone(),
                expected: "credentials".into(),
                present: vec![],
            })
        })?;
        let expires = SystemTime::try_from(creds.expiration).map_err(|e| {
            CatalogError::UpstreamSchema(SchemaError::Invalid {
                what: call.operation.clone(),
                problem: format!("Credentials.Expiration is not a time: {e}"),
            })
        })?;
        let credentials = aws_sdk_glue::config::Credentials::new(
            creds.access_key_id,
            creds.secret_access_key,
            Some(creds.session_token),
            Some(expires),
            "govcat-assume-role",
        );
        let session = Session {
            glue: aws_sdk_glue::Client::from_conf(
                aws_sdk_glue::config::Builder::from(&self.sdk)
                    .credentials_provider(credentials.clone())
                    .build(),
            ),
            lf: aws_sdk_lakeformation::Client::from_conf(
                aws_sdk_lakeformation::config::Builder::from(&self.sdk)
                    .credentials_provider(credentials)
                    .build(),
            ),
            role_arn,
            renew_at: expires
                .checked_sub(RENEW_BEFORE_EXPIRY)
                .unwrap_or(SystemTime::UNIX_EPOCH),
        };
        let mut sessions = self.lock_sessions()?;
        sessions.retain(|_, s| s.renew_at > now);
        sessions.insert(key, session.clone());
        Ok(session)
    }

    fn lock_sessions(&self) -> Result<std::sync::MutexGuard<'_, SessionCache>, CatalogError> {
        self.sessions
            .lock()
            .map_err(|_| internal("the aws session cache", "is poisoned by an earlier panic"))
    }

    /// A read was refused with credential problems, or the endpoint failed (unreachable, 5xx,
    /// throttled past the retries): drop the cached session so the next call assumes the role
    /// again. After an outage a session is not trusted blindly: an endpoint that restarted may
    /// no longer know it (seen with the emulator: stale keys read an empty default account).
    fn forget_session(&self, caller: &Caller, domain: &DomainConfig) {
        if let Ok(mut s) = self.sessions.lock() {
            s.remove(&(domain.name.clone(), caller.subject.clone()));
        }
    }

    fn read_error<E>(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
        call: &Call,
        e: &aws_sdk_glue::error::SdkError<E, aws_sdk_glue::config::http::HttpResponse>,
    ) -> CatalogError
    where
        E: aws_sdk_glue::error::ProvideErrorMetadata + std::error::Error + 'static,
    {
        let f = errors::failure(e);
        let err = errors::classify(&f, call, &self.limits);
        if matches!(
            err,
            CatalogError::UpstreamAccessDenied { .. }
                | CatalogError::UpstreamNoCredentials { .. }
                | CatalogError::UpstreamUnavailable { .. }
        ) {
            self.forget_session(caller, domain);
        }
        err
    }

    async fn list_tables(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
    ) -> Result<Vec<TableName>, CatalogError> {
        let s = self.session(caller, domain).await?;
        let database = super::database_of(&Domain(domain.name.clone()));
        let call = self.call(domain, &s.role_arn, format!("glue:GetTables on {database}"));
        let names = paginate::collect_pages(&call.operation, |token| {
            let (s, call, database) = (&s, &call, &database);
            async move {
                let out = s
                    .glue
                    .get_tables()
                    .database_name(database)
                    .set_next_token(token)
                    .send()
                    .await
                    .map_err(|e| {
                        if errors::failure(&e).is_not_found() {
                            database_missing(domain, call, database)
                        } else {
                            self.read_error(caller, domain, call, &e)
                        }
                    })?;
                let list = out.table_list.ok_or_else(|| {
                    CatalogError::UpstreamSchema(SchemaError::MissingKey {
                        what: call.operation.clone(),
                        expected: "tablelist".into(),
                        present: vec![],
                    })
                })?;
                Ok((
                    list.into_iter().map(|t| TableName(t.name)).collect(),
                    out.next_token,
                ))
            }
        })
        .await?;
        let mut names = names;
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn database_tags(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
        s: &Session,
    ) -> Result<Value, CatalogError> {
        let database = super::database_of(&Domain(domain.name.clone()));
        let call = self.call(
            domain,
            &s.role_arn,
            format!("lakeformation:GetResourceLFTags on database {database}"),
        );
        let out =
            s.lf.get_resource_lf_tags()
                .resource(
                    Resource::builder()
                        .database(
                            DatabaseResource::builder()
                                .name(&database)
                                .build()
                                .map_err(|e| internal(&call.operation, e))?,
                        )
                        .build(),
                )
                .show_assigned_lf_tags(true)
                .send()
                .await
                .map_err(|e| {
                    if errors::failure(&e).is_not_found() {
                        database_missing(domain, &call, &database)
                    } else {
                        self.read_error(caller, domain, &call, &e)
                    }
                })?;
        Ok(convert::resource_lf_tags(&out))
    }

    /// The three responses of one table, in the `dir` format's shape.
    async fn read_table(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
        s: &Session,
        table: &TableName,
    ) -> Result<RecordedTable, CatalogError> {
        let database = super::database_of(&Domain(domain.name.clone()));
        let qualified = format!("{database}.{}", table.0);
        let not_found = || async {
            let tables = self.list_tables(caller, domain).await?;
            Err::<RecordedTable, _>(CatalogError::DatasetNotFound {
                domain: domain.name.clone(),
                table: table.0.clone(),
                tables: tables.into_iter().map(|t| t.0).collect(),
            })
        };
        let get_call = self.call(domain, &s.role_arn, format!("glue:GetTable on {qualified}"));
        let table_call = self.call(
            domain,
            &s.role_arn,
            format!("lakeformation:GetResourceLFTags on table {qualified}"),
        );
        let table_resource = TableResource::builder()
            .database_name(&database)
            .name(&table.0)
            .build()
            .map_err(|e| internal(&table_call.operation, e))?;
        let (got, tags) = tokio::join!(
            s.glue
                .get_table()
                .database_name(&database)
                .name(&table.0)
                .send(),
            s.lf.get_resource_lf_tags()
                .resource(Resource::builder().table(table_resource).build())
                .show_assigned_lf_tags(true)
                .send(),
        );
        let got = match got {
            Ok(out) => out,
            Err(e) if errors::failure(&e).is_not_found() => return not_found().await,
            Err(e) => return Err(self.read_error(caller, domain, &get_call, &e)),
        };
        let tags = match tags {
            Ok(out) => out,
            Err(e) if errors::failure(&e).is_not_found() => return not_found().await,
            Err(e) => return Err(self.read_error(caller, domain, &table_call, &e)),
        };
        let get_table = convert::get_table(&got);
        let column_names: Vec<String> = got
            .table
            .iter()
            .flat_map(|t| {
                let sd = t
                    .storage_descriptor
                    .iter()
                    .flat_map(|sd| sd.columns.iter().flatten());
                sd.chain(t.partition_keys.iter().flatten())
            })
            .map(|c| c.name.clone())
            .collect();
        let lf_columns = if column_names.is_empty() {
            // Lake Formation requires at least one column name; a table without columns has
            // no column tags to ask for (and the boundary still confirms the Glue response).
            json!({"LFTagsOnColumns": []})
        } else {
            let call = self.call(
                domain,
                &s.role_arn,
                format!("lakeformation:GetResourceLFTags on the columns of {qualified}"),
            );
            let resource = TableWithColumnsResource::builder()
                .database_name(&database)
                .name(&table.0)
                .set_column_names(Some(column_names))
                .build()
                .map_err(|e| internal(&call.operation, e))?;
            match s
                .lf
                .get_resource_lf_tags()
                .resource(Resource::builder().table_with_columns(resource).build())
                .show_assigned_lf_tags(true)
                .send()
                .await
            {
                Ok(out) => convert::resource_lf_tags(&out),
                Err(e) => {
                    let f = errors::failure(&e);
                    if f.is_not_found() {
                        return not_found().await;
                    }
                    if f.is_access_denied() {
                        // The reader role may not see these tags: recorded as the denial, which
                        // the boundary reads as `withheld` (never as untagged columns).
                        convert::access_denied(f.message.as_deref().unwrap_or("access denied"))
                    } else {
                        return Err(self.read_error(caller, domain, &call, &e));
                    }
                }
            }
        };
        Ok(RecordedTable {
            get_table,
            lf_table: convert::resource_lf_tags(&tags),
            lf_columns,
        })
    }

    async fn get_dataset(
        &self,
        caller: &Caller,
        domain: &Domain,
        table: &TableName,
    ) -> Result<Dataset, CatalogError> {
        let d = self.domain(domain)?;
        let s = self.session(caller, d).await?;
        let (db_tags, recorded) = tokio::try_join!(
            self.database_tags(caller, d, &s),
            self.read_table(caller, d, &s, table)
        )?;
        let what = format!("aws {}.{}", super::database_of(domain), table.0);
        assemble_dataset(&self.ontology, domain, table, &db_tags, &recorded, &what)
    }

    /// Every `ListPermissions` entry of one domain account, converted.
    async fn permissions(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
    ) -> Result<Vec<Value>, CatalogError> {
        let s = self.session(caller, domain).await?;
        let call = self.call(
            domain,
            &s.role_arn,
            format!(
                "lakeformation:ListPermissions in account {}",
                domain.account_id
            ),
        );
        paginate::collect_pages(&call.operation, |token| {
            let (s, call) = (&s, &call);
            async move {
                let out =
                    s.lf.list_permissions()
                        .set_next_token(token)
                        .send()
                        .await
                        .map_err(|e| self.read_error(caller, domain, call, &e))?;
                let list = out.principal_resource_permissions.ok_or_else(|| {
                    CatalogError::UpstreamSchema(SchemaError::MissingKey {
                        what: call.operation.clone(),
                        expected: "principalresourcepermissions".into(),
                        present: vec![],
                    })
                })?;
                Ok((
                    list.iter().map(convert::permission).collect(),
                    out.next_token,
                ))
            }
        })
        .await
    }

    /// Permission entries of every domain the caller may read, grouped by role name.
    async fn grants_by_role(
        &self,
        caller: &Caller,
    ) -> Result<BTreeMap<String, Vec<Value>>, CatalogError> {
        let mut by_role: BTreeMap<String, Vec<Value>> = BTreeMap::new();
        for d in self.readable_domains(caller) {
            for entry in self.permissions(caller, d).await? {
                if let Some(role) = convert::role_name_of(&entry) {
                    by_role.entry(role.to_string()).or_default().push(entry);
                }
            }
        }
        Ok(by_role)
    }

    fn readable_domains<'a>(
        &'a self,
        caller: &'a Caller,
    ) -> impl Iterator<Item = &'a DomainConfig> + 'a {
        let mut domains: Vec<&DomainConfig> = self
            .config
            .domains
            .iter()
            .filter(|d| caller.may_read(&Domain(d.name.clone())))
            .collect();
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        domains.into_iter()
    }

    async fn vocabulary(
        &self,
        caller: &Caller,
        domain: &DomainConfig,
    ) -> Result<Value, CatalogError> {
        let s = self.session(caller, domain).await?;
        let call = self.call(
            domain,
            &s.role_arn,
            format!("lakeformation:ListLFTags in account {}", domain.account_id),
        );
        let tags = paginate::collect_pages(&call.operation, |token| {
            let (s, call) = (&s, &call);
            async move {
                let out =
                    s.lf.list_lf_tags()
                        .set_next_token(token)
                        .send()
                        .await
                        .map_err(|e| self.read_error(caller, domain, call, &e))?;
                let list = out.lf_tags.as_ref().ok_or_else(|| {
                    CatalogError::UpstreamSchema(SchemaError::MissingKey {
                        what: call.operation.clone(),
                        expected: "lftags".into(),
                        present: vec![],
                    })
                })?;
                Ok((list.iter().map(convert::tag_pair).collect(), out.next_token))
            }
        })
        .await?;
        Ok(json!({ "LFTags": tags }))
    }

    async fn ontology_drift(&self, caller: &Caller) -> Result<DriftReport, CatalogError> {
        let mut domains = Vec::new();
        for d in self.readable_domains(caller) {
            let raw = self.vocabulary(caller, d).await?;
            let what = format!("aws ListLFTags of account {}", d.account_id);
            let vocabulary = drift::parse_vocabulary(raw, &what)?;
            domains.push(drift::compare(
                &self.ontology,
                &Domain(d.name.clone()),
                &d.account_id,
                &vocabulary,
            ));
        }
        Ok(DriftReport {
            ontology_version: self.ontology.version.clone(),
            domains,
        })
    }
}

impl CatalogSource for AwsSource {
    fn identity(&self) -> SourceIdentity {
        let c = &self.inner.config;
        let mut domains: Vec<AwsDomainIdentity> = c
            .domains
            .iter()
            .map(|d| AwsDomainIdentity {
                name: d.name.clone(),
                account_id: d.account_id.clone(),
            })
            .collect();
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        SourceIdentity::Aws {
            region: c.region.clone(),
            domains,
        }
    }

    fn ontology_drift(&self, caller: &Caller) -> Option<Result<serde_json::Value, CatalogError>> {
        Some(
            AwsSource::ontology_drift(self, caller)
                .map(|r| serde_json::to_value(r).unwrap_or(serde_json::Value::Null)),
        )
    }

    fn freshness(&self) -> SourceFreshness {
        let c = &self.inner.config;
        let mut accounts: Vec<&str> = c.domains.iter().map(|d| d.account_id.as_str()).collect();
        accounts.sort();
        accounts.dedup();
        SourceFreshness {
            kind: "aws".into(),
            location: format!(
                "Glue and Lake Formation in {} (accounts {}) via role {}",
                c.region,
                accounts.join(", "),
                c.role_name
            ),
            // Every answer is read live; there is no recording time or refresh cadence.
            recorded_at: None,
            refresh_every_secs: None,
        }
    }

    fn list_domains(&self, _caller: &Caller) -> Result<Vec<DomainInfo>, CatalogError> {
        let mut domains: Vec<DomainInfo> = self
            .inner
            .config
            .domains
            .iter()
            .map(|d| DomainInfo {
                name: Domain(d.name.clone()),
                owner: d.owner.clone(),
                description: d.description.clone(),
                account_id: d.account_id.clone(),
            })
            .collect();
        domains.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(domains)
    }

    fn list_tables(
        &self,
        caller: &Caller,
        domain: &Domain,
    ) -> Result<Vec<TableName>, CatalogError> {
        let (caller, domain) = (caller.clone(), domain.clone());
        self.block(move |inner| async move {
            let d = inner.domain(&domain)?.clone();
            inner.list_tables(&caller, &d).await
        })
    }

    fn get_dataset(
        &self,
        caller: &Caller,
        domain: &Domain,
        table: &TableName,
    ) -> Result<Dataset, CatalogError> {
        let (caller, domain, table) = (caller.clone(), domain.clone(), table.clone());
        self.block(move |inner| async move { inner.get_dataset(&caller, &domain, &table).await })
    }

    fn database_tags(&self, caller: &Caller, domain: &Domain) -> Result<Tags, CatalogError> {
        let (caller, domain) = (caller.clone(), domain.clone());
        self.block(move |inner| async move {
            let d = inner.domain(&domain)?.clone();
            let s = inner.session(&caller, &d).await?;
            let raw = inner.database_tags(&caller, &d, &s).await?;
            let what = format!(
                "aws {} GetResourceLFTags(database)",
                super::database_of(&domain)
            );
            let pairs = boundary::parse_database_tags(raw, &what)?;
            super::database_level_tags(&inner.ontology, &LevelTags::Read(pairs), &what)
        })
    }

    /// Roles with grants in the accounts of the domains the caller may read.
    fn list_roles(&self, caller: &Caller) -> Result<Vec<String>, CatalogError> {
        let caller = caller.clone();
        self.block(move |inner| async move {
            Ok(inner.grants_by_role(&caller).await?.into_keys().collect())
        })
    }

    fn role_grants(&self, caller: &Caller, role: &str) -> Result<RoleGrants, CatalogError> {
        let (caller, role) = (caller.clone(), role.to_string());
        self.block(move |inner| async move {
            let mut by_role = inner.grants_by_role(&caller).await?;
            let roles: Vec<String> = by_role.keys().cloned().collect();
            let Some(entries) = by_role.remove(&role) else {
                return Err(CatalogError::RoleNotFound { role, roles });
            };
            let (grants, named_resource_grants) = boundary::parse_permissions(
                json!({ "PrincipalResourcePermissions": entries }),
                &format!("aws ListPermissions of role {role}"),
            )?;
            Ok(RoleGrants {
                role,
                grants,
                named_resource_grants,
            })
        })
    }
}

/// A configured domain whose Glue database the account does not have: its own error, not
/// `DomainNotFound` (see [`CatalogError::UpstreamDatabaseMissing`]).
fn database_missing(domain: &DomainConfig, call: &Call, database: &str) -> CatalogError {
    CatalogError::UpstreamDatabaseMissing {
        domain: domain.name.clone(),
        database: database.to_string(),
        account_id: domain.account_id.clone(),
        operation: call.operation.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn session_name_keeps_allowed_characters_and_replaces_the_rest() {
        assert_eq!(
            session_name("jane.doe@example.com"),
            "mcp-jane.doe@example.com"
        );
        assert_eq!(session_name("Jane Doe|auth0/42"), "mcp-Jane_Doe_auth0_42");
        assert_eq!(session_name("zoë"), "mcp-zo_");
        assert_eq!(session_name(""), "mcp-");
    }

    #[test]
    fn session_name_is_cut_at_64_characters() {
        let long = "a".repeat(100);
        let name = session_name(&long);
        assert_eq!(name.len(), 64);
        assert_eq!(name, format!("mcp-{}", "a".repeat(60)));
    }

    #[test]
    fn caller_tag_value_keeps_letters_and_spaces_and_is_never_empty() {
        assert_eq!(
            caller_tag_value("Zoë O'Brien <z@x.io>"),
            "Zoë O_Brien _z@x.io_"
        );
        assert_eq!(caller_tag_value(""), "-");
        assert_eq!(caller_tag_value(&"x".repeat(300)).chars().count(), 256);
    }

    #[test]
    fn the_source_can_be_dropped_inside_an_async_context() {
        let config = AwsConfig::parse(
            "region = \"eu-central-1\"\nrole_name = \"r\"\nexternal_id = \"ext\"\n[[domain]]\nname = \"p\"\naccount_id = \"210000000001\"\nowner = \"o\"\ndescription = \"d\"\n",
            Path::new("t.toml"),
        )
        .unwrap();
        let ontology = Ontology::load(Path::new(crate::ontology::DEFAULT_ONTOLOGY_PATH)).unwrap();
        let source = AwsSource::with_loader(
            config,
            ontology,
            aws_config::defaults(BehaviorVersion::latest())
                .endpoint_url("http://127.0.0.1:9")
                .credentials_provider(aws_sdk_glue::config::Credentials::new(
                    "AKID", "secret", None, None, "test",
                )),
        )
        .unwrap();
        let rt = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        rt.block_on(async move { drop(source) });
    }
}
