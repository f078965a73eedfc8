//! An S3 prefix as a snapshot store. The SDK config comes from the same default chain as the
//! `aws` source (environment, profile files, instance or task role; region from
//! `AWS_REGION` / the profile); `--s3-endpoint` (or `AWS_ENDPOINT_URL`) points it at an
//! S3-compatible store or an emulator and switches to path-style addressing. Credentials are
//! never part of a message: errors carry the bucket/key, the S3 error code and the next step.

use std::io::{Read, Write};
use std::path::Path;
use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_sdk_s3::config::http::HttpResponse;
use aws_sdk_s3::config::RequestChecksumCalculation;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::{CompletedMultipartUpload, CompletedPart};
use base64::Engine as _;
use sha2::{Digest, Sha256};

use super::{reason, Location, SyncError};
use crate::catalog::aws::errors::{failure, FailureKind};

/// Files above this size are uploaded in parts of this size (the AWS CLI's default threshold
/// and chunk size).
pub const MULTIPART_CHUNK: usize = 8 * 1024 * 1024;

/// Attempts per S3 call (the SDK's standard retry with backoff).
const MAX_ATTEMPTS: u32 = 3;

/// An S3 bucket and prefix, with a client and the runtime its calls run on.
pub struct S3Store {
    bucket: String,
    prefix: String,
    location: Location,
    /// Where requests go, for messages: the endpoint given, or "S3 in region R".
    endpoint: String,
    client: aws_sdk_s3::Client,
    runtime: tokio::runtime::Runtime,
}

/// Ranged GETs a follower keeps in flight at once when it reads parts of a file.
pub const RANGE_REQUESTS_IN_FLIGHT: usize = 8;

/// What an S3 call was doing, for the error message.
#[derive(Clone, Copy)]
enum Op {
    Get,
    Put,
    List,
    Delete,
}

impl Op {
    fn action(self) -> &'static str {
        match self {
            Op::Get => "s3:GetObject",
            Op::Put => "s3:PutObject",
            Op::List => "s3:ListBucket",
            Op::Delete => "s3:DeleteObject",
        }
    }
}

impl S3Store {
    /// A store for `s3://bucket/prefix`; `endpoint` overrides where requests go (path-style).
    pub fn open(bucket: &str, prefix: &str, endpoint: Option<&str>) -> Result<S3Store, SyncError> {
        Self::with_loader(
            bucket,
            prefix,
            endpoint,
            aws_config::defaults(BehaviorVersion::latest()),
        )
    }

    /// [`S3Store::open`] with an explicit SDK config loader (credentials): for tests and
    /// embedders. Retries and deadlines are applied on top.
    pub fn with_loader(
        bucket: &str,
        prefix: &str,
        endpoint: Option<&str>,
        loader: aws_config::ConfigLoader,
    ) -> Result<S3Store, SyncError> {
        let location = Location::S3 {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
        };
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| {
                SyncError::new(
                    reason::LOCAL_IO,
                    location.to_string(),
                    format!("cannot start the S3 client's runtime: {e}"),
                    "check the process may create threads",
                )
            })?;
        let mut loader = loader
            .retry_config(RetryConfig::standard().with_max_attempts(MAX_ATTEMPTS))
            .timeout_config(
                TimeoutConfig::builder()
                    .connect_timeout(Duration::from_secs(3))
                    .read_timeout(Duration::from_secs(30))
                    .build(),
            );
        if let Some(url) = endpoint {
            loader = loader.endpoint_url(url);
        }
        let sdk = runtime.block_on(loader.load());
        let mut config = aws_sdk_s3::config::Builder::from(&sdk)
            // Plain Content-Length bodies: what every S3-compatible store accepts.
            .request_checksum_calculation(RequestChecksumCalculation::WhenRequired);
        let region = match (sdk.region(), endpoint) {
            (Some(r), _) => r.to_string(),
            // S3-compatible stores and emulators take any region; us-east-1 is their convention.
            (None, Some(_)) => {
                config = config.region(aws_sdk_s3::config::Region::new("us-east-1"));
                "us-east-1".to_string()
            }
            (None, None) => {
                return Err(SyncError::new(
                    reason::CREDENTIALS,
                    location.to_string(),
                    "no AWS region is configured",
                    "set AWS_REGION to the bucket's region (or region in the AWS profile)",
                ))
            }
        };
        if endpoint.is_some() {
            config = config.force_path_style(true);
        }
        let client = aws_sdk_s3::Client::from_conf(config.build());
        Ok(S3Store {
            bucket: bucket.to_string(),
            prefix: prefix.to_string(),
            location,
            endpoint: endpoint
                .map(str::to_string)
                .unwrap_or_else(|| format!("S3 in region {region}")),
            client,
            runtime,
        })
    }

    pub fn location(&self) -> &Location {
        &self.location
    }

    fn key(&self, rel: &str) -> String {
        if self.prefix.is_empty() {
            rel.to_string()
        } else {
            format!("{}/{rel}", self.prefix)
        }
    }

    /// Turns an SDK error of `op` on `rel` into a [`SyncError`].
    fn error<E>(&self, op: Op, rel: &str, e: &SdkError<E, HttpResponse>) -> SyncError
    where
        E: ProvideErrorMetadata + std::error::Error + 'static,
    {
        let f = failure(e);
        let object = self.location.object(rel);
        let code = f.code.clone().unwrap_or_else(|| match f.status {
            Some(s) => format!("HTTP {s}"),
            None => "no response".into(),
        });
        let arn = match op {
            Op::List => format!("arn:aws:s3:::{}", self.bucket),
            _ => format!("arn:aws:s3:::{}/{}", self.bucket, self.key(rel)),
        };
        let retry = "the follower retries at its next poll; a publish can be run again as is";
        match f.kind {
            FailureKind::Credentials => SyncError::new(
                reason::CREDENTIALS,
                object,
                "the server's own AWS credentials could not be loaded",
                "check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance/task role",
            ),
            FailureKind::Timeout | FailureKind::Dispatch => SyncError::new(
                reason::UNREACHABLE,
                object,
                format!("no answer from {} ({})", self.endpoint, f.detail),
                format!(
                    "check that {} is reachable (--s3-endpoint / AWS_ENDPOINT_URL, network, proxy); {retry}",
                    self.endpoint
                ),
            ),
            _ if f.is_access_denied() => SyncError::new(
                reason::ACCESS_DENIED,
                object,
                format!(
                    "{code}: the identity govcat runs as may not {} here{}",
                    op.action(),
                    if matches!(op, Op::Get) {
                        " (without s3:ListBucket S3 also answers AccessDenied for a key that does not exist)"
                    } else {
                        ""
                    }
                ),
                format!(
                    "grant {} on {arn} to that identity (docs/SCALING.md lists the policy of the indexer and of a replica)",
                    op.action()
                ),
            ),
            _ if matches!(
                f.code.as_deref(),
                Some(
                    "InvalidAccessKeyId"
                        | "SignatureDoesNotMatch"
                        | "ExpiredToken"
                        | "TokenRefreshRequired"
                        | "InvalidToken"
                )
            ) =>
            {
                SyncError::new(
                    reason::CREDENTIALS,
                    object,
                    format!("{code}: S3 refused the server's own credentials"),
                    "check AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE or the instance/task role: they are invalid or expired",
                )
            }
            _ if f.code.as_deref() == Some("NoSuchBucket") => SyncError::new(
                reason::MISSING,
                object,
                format!("NoSuchBucket: bucket {} does not exist", self.bucket),
                "create the bucket, or correct the bucket in --publish / --follow",
            ),
            _ if matches!(f.code.as_deref(), Some("NoSuchKey" | "NotFound"))
                || f.status == Some(404) =>
            {
                SyncError::new(
                    reason::MISSING,
                    object,
                    format!("{code}: the object does not exist"),
                    "publish a snapshot there with govcat index --publish",
                )
            }
            _ if matches!(
                f.code.as_deref(),
                Some("SlowDown" | "Throttling" | "ThrottlingException" | "RequestLimitExceeded")
            ) || matches!(f.status, Some(429 | 503)) =>
            {
                SyncError::new(
                    reason::THROTTLED,
                    object,
                    format!("{code}: S3 throttled the request"),
                    retry,
                )
            }
            _ if f.status.is_some_and(|s| s >= 500) => SyncError::new(
                reason::UNREACHABLE,
                object,
                format!("{code}: {} answered with a server error", self.endpoint),
                retry,
            ),
            _ => SyncError::new(
                reason::STORE,
                object,
                format!(
                    "{code}: {}",
                    f.message.clone().unwrap_or_else(|| f.detail.clone())
                ),
                format!("check {} and the bucket's settings; {retry}", self.endpoint),
            ),
        }
    }

    /// The object's bytes, or `None` when it does not exist.
    pub fn get(&self, rel: &str) -> Result<Option<Vec<u8>>, SyncError> {
        let key = self.key(rel);
        self.runtime.block_on(async {
            let out = match self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(&key)
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) if e.as_service_error().is_some_and(|s| s.is_no_such_key()) => {
                    return Ok(None)
                }
                Err(e) => return Err(self.error(Op::Get, rel, &e)),
            };
            let bytes = out.body.collect().await.map_err(|e| {
                SyncError::new(
                    reason::UNREACHABLE,
                    self.location.object(rel),
                    format!("the download broke off ({e})"),
                    "the follower retries at its next poll",
                )
            })?;
            Ok(Some(bytes.into_bytes().to_vec()))
        })
    }

    /// Downloads the object to `dest`; returns its size and sha256 (hex).
    pub fn download(&self, rel: &str, dest: &Path) -> Result<(u64, String), SyncError> {
        let key = self.key(rel);
        self.runtime.block_on(async {
            let mut out = self
                .client
                .get_object()
                .bucket(&self.bucket)
                .key(&key)
                .send()
                .await
                .map_err(|e| self.error(Op::Get, rel, &e))?;
            let mut file = std::fs::File::create(dest).map_err(|e| local(dest, e))?;
            let mut hasher = Sha256::new();
            let mut size = 0u64;
            while let Some(chunk) = out.body.next().await {
                let chunk = chunk.map_err(|e| {
                    SyncError::new(
                        reason::UNREACHABLE,
                        self.location.object(rel),
                        format!("the download broke off after {size} bytes ({e})"),
                        "the follower retries at its next poll",
                    )
                })?;
                hasher.update(&chunk);
                size += chunk.len() as u64;
                file.write_all(&chunk).map_err(|e| local(dest, e))?;
            }
            file.sync_all().map_err(|e| local(dest, e))?;
            Ok((size, hex(&hasher.finalize())))
        })
    }

    /// Reads the byte ranges `ranges` (start, end exclusive) of the object, handing each to
    /// `sink` in order; [`RANGE_REQUESTS_IN_FLIGHT`] ranged GETs run at once. Returns the bytes
    /// read.
    pub fn get_ranges(
        &self,
        rel: &str,
        ranges: &[(u64, u64)],
        sink: &mut dyn FnMut(&[u8]) -> Result<(), SyncError>,
    ) -> Result<u64, SyncError> {
        let key = self.key(rel);
        self.runtime.block_on(async {
            let mut total = 0u64;
            for group in ranges.chunks(RANGE_REQUESTS_IN_FLIGHT) {
                let mut set = tokio::task::JoinSet::new();
                for (i, &(start, end)) in group.iter().enumerate() {
                    let request = self
                        .client
                        .get_object()
                        .bucket(&self.bucket)
                        .key(&key)
                        .range(format!("bytes={start}-{}", end.saturating_sub(1)));
                    set.spawn(async move {
                        let got = match request.send().await {
                            Ok(out) => out
                                .body
                                .collect()
                                .await
                                .map(|b| b.into_bytes().to_vec())
                                .map_err(|e| Err(e.to_string())),
                            Err(e) => Err(Ok(e)),
                        };
                        (i, got)
                    });
                }
                let mut parts: Vec<Vec<u8>> = vec![Vec::new(); group.len()];
                while let Some(joined) = set.join_next().await {
                    let (i, got) = joined.map_err(|e| {
                        SyncError::new(
                            reason::LOCAL_IO,
                            self.location.object(rel),
                            format!("a ranged read stopped ({e})"),
                            "the follower retries at its next poll",
                        )
                    })?;
                    parts[i] = got.map_err(|e| match e {
                        Ok(sdk) => self.error(Op::Get, rel, &sdk),
                        Err(body) => SyncError::new(
                            reason::UNREACHABLE,
                            self.location.object(rel),
                            format!("a ranged read broke off ({body})"),
                            "the follower retries at its next poll",
                        ),
                    })?;
                }
                for (bytes, &(start, end)) in parts.iter().zip(group) {
                    if bytes.len() as u64 != end - start {
                        return Err(SyncError::new(
                            reason::UNREACHABLE,
                            self.location.object(rel),
                            format!("bytes {start}..{end} came back as {} bytes", bytes.len()),
                            "the follower retries at its next poll",
                        ));
                    }
                    sink(bytes)?;
                    total += bytes.len() as u64;
                }
            }
            Ok(total)
        })
    }

    /// Writes `bytes` to the object, with its sha256 as `x-amz-checksum-sha256`: S3 checks
    /// the body against it on arrival and keeps it, so a later copy can be checked by
    /// [`S3Store::stat`] without downloading it.
    pub fn put(&self, rel: &str, bytes: Vec<u8>) -> Result<(), SyncError> {
        let key = self.key(rel);
        let checksum = base64::engine::general_purpose::STANDARD.encode(Sha256::digest(&bytes));
        self.runtime.block_on(async {
            self.client
                .put_object()
                .bucket(&self.bucket)
                .key(&key)
                .checksum_sha256(checksum)
                .body(ByteStream::from(bytes))
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error(Op::Put, rel, &e))
        })
    }

    /// Uploads the file at `path` to the object, in parts of [`MULTIPART_CHUNK`] above that
    /// size; `progress` is told the bytes sent as they go.
    pub fn upload(&self, rel: &str, path: &Path, progress: &dyn Fn(u64)) -> Result<(), SyncError> {
        let size = std::fs::metadata(path).map_err(|e| local(path, e))?.len();
        if size <= MULTIPART_CHUNK as u64 {
            let bytes = std::fs::read(path).map_err(|e| local(path, e))?;
            self.put(rel, bytes)?;
            progress(size);
            return Ok(());
        }
        let key = self.key(rel);
        self.runtime.block_on(async {
            let started = self
                .client
                .create_multipart_upload()
                .bucket(&self.bucket)
                .key(&key)
                .send()
                .await
                .map_err(|e| self.error(Op::Put, rel, &e))?;
            let upload_id = started.upload_id().unwrap_or_default().to_string();
            let parts = self
                .upload_parts(rel, &key, &upload_id, path, progress)
                .await;
            let parts = match parts {
                Ok(parts) => parts,
                Err(e) => {
                    // Best effort: the parts of an unfinished upload are billed until aborted.
                    let _ = self
                        .client
                        .abort_multipart_upload()
                        .bucket(&self.bucket)
                        .key(&key)
                        .upload_id(&upload_id)
                        .send()
                        .await;
                    return Err(e);
                }
            };
            self.client
                .complete_multipart_upload()
                .bucket(&self.bucket)
                .key(&key)
                .upload_id(&upload_id)
                .multipart_upload(
                    CompletedMultipartUpload::builder()
                        .set_parts(Some(parts))
                        .build(),
                )
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error(Op::Put, rel, &e))
        })
    }

    async fn upload_parts(
        &self,
        rel: &str,
        key: &str,
        upload_id: &str,
        path: &Path,
        progress: &dyn Fn(u64),
    ) -> Result<Vec<CompletedPart>, SyncError> {
        let mut file = std::fs::File::open(path).map_err(|e| local(path, e))?;
        let mut parts = Vec::new();
        for number in 1.. {
            let mut chunk = Vec::with_capacity(MULTIPART_CHUNK);
            (&mut file)
                .take(MULTIPART_CHUNK as u64)
                .read_to_end(&mut chunk)
                .map_err(|e| local(path, e))?;
            if chunk.is_empty() {
                break;
            }
            let n = chunk.len() as u64;
            let out = self
                .client
                .upload_part()
                .bucket(&self.bucket)
                .key(key)
                .upload_id(upload_id)
                .part_number(number)
                .body(ByteStream::from(chunk))
                .send()
                .await
                .map_err(|e| self.error(Op::Put, rel, &e))?;
            parts.push(
                CompletedPart::builder()
                    .set_e_tag(out.e_tag().map(str::to_string))
                    .part_number(number)
                    .build(),
            );
            progress(n);
        }
        Ok(parts)
    }

    /// Every page of a listing under `rel` (a "folder", ending in `/`): with `folders`, the
    /// names of the folders directly under it, else the full keys of every object below it.
    async fn list(&self, rel: &str, folders: bool) -> Result<Vec<String>, SyncError> {
        let under = self.key(rel);
        let mut found = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let out = self
                .client
                .list_objects_v2()
                .bucket(&self.bucket)
                .prefix(&under)
                .set_delimiter(folders.then(|| "/".to_string()))
                .set_continuation_token(token.clone())
                .send()
                .await
                .map_err(|e| self.error(Op::List, rel, &e))?;
            if folders {
                found.extend(out.common_prefixes().iter().filter_map(|p| {
                    p.prefix()
                        .and_then(|p| p.strip_prefix(&under))
                        .map(|p| p.trim_end_matches('/').to_string())
                }));
            } else {
                found.extend(
                    out.contents()
                        .iter()
                        .filter_map(|o| o.key().map(str::to_string)),
                );
            }
            token = out.next_continuation_token().map(str::to_string);
            if token.is_none() {
                return Ok(found);
            }
        }
    }

    /// The ids under `PREFIX/snapshots/`.
    pub fn list_ids(&self) -> Result<Vec<String>, SyncError> {
        self.runtime.block_on(self.list("snapshots/", true))
    }

    /// The names of the objects directly under `PREFIX/<dir>/`.
    pub fn list_files(&self, dir: &str) -> Result<Vec<String>, SyncError> {
        let rel = format!("{dir}/");
        let under = self.key(&rel);
        let keys = self.runtime.block_on(self.list(&rel, false))?;
        Ok(keys
            .iter()
            .filter_map(|k| k.strip_prefix(&under))
            .filter(|name| !name.contains('/'))
            .map(str::to_string)
            .collect())
    }

    /// The object's size and, when S3 keeps a whole-object sha256 for it (a single-part
    /// upload with `x-amz-checksum-sha256`), that sha256 in hex; `None` when it does not exist.
    pub fn stat(&self, rel: &str) -> Result<Option<super::ObjectStat>, SyncError> {
        use base64::Engine as _;
        let key = self.key(rel);
        self.runtime.block_on(async {
            let out = match self
                .client
                .head_object()
                .bucket(&self.bucket)
                .key(&key)
                .checksum_mode(aws_sdk_s3::types::ChecksumMode::Enabled)
                .send()
                .await
            {
                Ok(out) => out,
                Err(e) if e.as_service_error().is_some_and(|s| s.is_not_found()) => {
                    return Ok(None)
                }
                Err(e) => return Err(self.error(Op::Get, rel, &e)),
            };
            // A multipart object's checksum is one of its parts' ("...-N"): not the file's.
            let sha256 = out
                .checksum_sha256()
                .filter(|c| !c.contains('-'))
                .and_then(|c| base64::engine::general_purpose::STANDARD.decode(c).ok())
                .map(|raw| hex(&raw));
            Ok(Some(super::ObjectStat {
                size: out.content_length().unwrap_or(0).max(0) as u64,
                sha256,
                multipart: out.e_tag().is_some_and(|t| t.contains('-')),
            }))
        })
    }

    /// Deletes the one object `rel`.
    pub fn delete(&self, rel: &str) -> Result<(), SyncError> {
        let key = self.key(rel);
        self.runtime.block_on(async {
            self.client
                .delete_object()
                .bucket(&self.bucket)
                .key(&key)
                .send()
                .await
                .map(|_| ())
                .map_err(|e| self.error(Op::Delete, rel, &e))
        })
    }

    /// Deletes every object under `PREFIX/snapshots/<id>/`; returns how many.
    pub fn delete_snapshot(&self, id: &str) -> Result<usize, SyncError> {
        let rel = format!("snapshots/{id}/");
        self.runtime.block_on(async {
            let keys = self.list(&rel, false).await?;
            for key in &keys {
                let shown = key.strip_prefix(&self.prefix).unwrap_or(key);
                self.client
                    .delete_object()
                    .bucket(&self.bucket)
                    .key(key)
                    .send()
                    .await
                    .map_err(|e| self.error(Op::Delete, shown.trim_start_matches('/'), &e))?;
            }
            Ok(keys.len())
        })
    }
}

fn local(path: &Path, e: impl std::fmt::Display) -> SyncError {
    SyncError::new(
        reason::LOCAL_IO,
        path.display().to_string(),
        e.to_string(),
        "check the directory exists, is writable and has space (--index)",
    )
}

/// Lower-case hex of `bytes`.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
