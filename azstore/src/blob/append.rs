//! Append blobs: create, and Append Block with the append-position and max-size conditions.

use crate::body::IntoBody;
use time::OffsetDateTime;

use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::create::{CreateOptions, EmptyBlob};
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::{Error, Result};
use crate::http::{Method, Request, Response};
use crate::storage::StorageRequest;

/// Conditions of Append Block.
///
/// ```no_run
/// # async fn demo(log: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::AppendOptions;
/// let len = log.get_properties().await?.content_length;
/// // Append at the end we saw, and never past 1 GiB.
/// let options = AppendOptions::at(len).max_size(1 << 30);
/// log.append_block("2026-11-25T07:00Z started\n", &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct AppendOptions {
    /// The usual conditions (ETag, dates, tags, lease).
    pub conditions: Conditions,
    /// `x-ms-blob-condition-appendpos`: append only if the blob is exactly this long
    /// (412 `AppendPositionConditionNotMet` otherwise) — makes a retried append safe.
    pub append_position: Option<u64>,
    /// `x-ms-blob-condition-maxsize`: refuse (412 `MaxBlobSizeConditionNotMet`) if the blob
    /// would grow beyond this many bytes.
    pub max_size: Option<u64>,
    /// Transactional checksum of the block, checked by the service.
    pub checksum: crate::blob::Checksum,
    /// The encryption scope the block is written with (`x-ms-encryption-scope`; must be the
    /// blob's).
    pub encryption_scope: Option<String>,
}

impl AppendOptions {
    /// Append only at `offset`: the block is refused (412 `AppendPositionConditionNotMet`)
    /// unless the blob is exactly `offset` bytes long, so a retried append cannot apply twice.
    ///
    /// ```
    /// let options = azstore::blob::AppendOptions::at(4096);
    /// assert_eq!(options.append_position, Some(4096));
    /// ```
    pub fn at(offset: u64) -> AppendOptions {
        AppendOptions {
            append_position: Some(offset),
            ..AppendOptions::default()
        }
    }

    /// Refuses the append (412 `MaxBlobSizeConditionNotMet`) if the blob would grow beyond
    /// this many bytes. Default: no limit but the service's.
    ///
    /// ```
    /// let options = azstore::blob::AppendOptions::default().max_size(64 << 20);
    /// assert_eq!(options.max_size, Some(64 << 20));
    /// ```
    pub fn max_size(mut self, v: u64) -> Self {
        self.max_size = Some(v);
        self
    }

    /// The usual conditions of the append (ETag, dates, tags, lease id); default
    /// [`Conditions::none()`]. Keeps what [`at`](Self::at) and
    /// [`max_size`](Self::max_size) set.
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::AppendOptions;
    /// let lease = LeaseId::random();
    /// let options = AppendOptions::at(1024).conditions(Conditions::lease(&lease));
    /// assert_eq!(options.append_position, Some(1024));
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Adds the conditions, the append-position and max-size conditions and the encryption
    /// scope to an Append Block request, and marks it not idempotent.
    pub(crate) fn apply(&self, req: Request) -> Result<Request> {
        let req = crate::blob::write_options::scope_header(req, self.encryption_scope.as_deref())?;
        Ok(req
            .conditions(&self.conditions)
            .header_opt(
                "x-ms-blob-condition-appendpos",
                self.append_position.map(|p| p.to_string()),
            )
            .header_opt(
                "x-ms-blob-condition-maxsize",
                self.max_size.map(|p| p.to_string()),
            )
            .intent(crate::http::Intent::NonIdempotent))
    }
}

crate::blob::write_options::existing_scope_builder!(AppendOptions, "AppendOptions::at(1024)");
crate::blob::write_options::checksum_builder!(
    AppendOptions,
    "AppendOptions::at(1024).conditions(Conditions::none())"
);

/// What Append Block returns.
///
/// ```no_run
/// # async fn demo(log: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::AppendOptions;
/// let written = log.append_block("event\n", &AppendOptions::default()).await?;
/// println!("written at offset {}, version {}", written.append_offset, written.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AppendResult {
    /// The new ETag.
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// Where this block was written.
    pub append_offset: u64,
    /// Number of committed blocks now.
    pub committed_block_count: Option<u64>,
}

impl AppendResult {
    /// Reads the answer of Append Block (`operation` names it in the error when the append
    /// offset is missing).
    pub(crate) fn from_response(resp: &Response, operation: &str) -> Result<AppendResult> {
        Ok(AppendResult {
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            append_offset: resp
                .headers
                .parse("x-ms-blob-append-offset")?
                .ok_or_else(|| {
                    Error::decode(format!(
                        "{operation} response lacks x-ms-blob-append-offset"
                    ))
                })?,
            committed_block_count: resp.headers.parse("x-ms-blob-committed-block-count")?,
        })
    }
}

/// Largest Append Block body (100 MiB).
pub const MAX_APPEND_BLOCK: usize = 100 * 1024 * 1024;

impl BlobClient {
    /// Put Blob of an empty append blob (replacing anything there, unless conditioned).
    ///
    /// ```no_run
    /// # async fn demo(log: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::CreateOptions;
    /// log.create_append_blob(&CreateOptions::new(Conditions::if_not_exists())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_append_blob(&self, options: &CreateOptions) -> Result<WriteResult> {
        self.create_empty(EmptyBlob::Append, options).await
    }

    /// Append Block. Not idempotent: a timed-out attempt is not retried (it may have been
    /// applied); use [`AppendOptions::at`] to make a retry of your own safe.
    ///
    /// ```no_run
    /// # async fn demo(log: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::AppendOptions;
    /// let end = log.get_properties().await?.content_length;
    /// match log.append_block("line\n", &AppendOptions::at(end)).await {
    ///     // Someone appended first (or our earlier attempt applied): re-read the end and decide.
    ///     Err(e) if e.is_precondition_failed() => println!("the log moved on"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn append_block(
        &self,
        body: impl IntoBody,
        options: &AppendOptions,
    ) -> Result<AppendResult> {
        options.conditions.check(Allowed::ALL, "Append Block")?;
        let body = body.into_body();
        if body.is_empty() || body.len() > MAX_APPEND_BLOCK {
            return Err(Error::invalid_input(
                "an appended block must be 1 byte to 100 MiB",
            ));
        }
        let req = self
            .write_request(Method::Put, "Append Block")?
            .query("comp", "appendblock");
        let req = options.apply(req)?;
        let req = options.checksum.body(req, body, "application/octet-stream");
        let resp = self.pipeline.send(req).await?;
        AppendResult::from_response(&resp, "Append Block")
    }
}
