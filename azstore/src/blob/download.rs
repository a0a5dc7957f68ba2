//! Ranged and consistent chunked reads.
//!
//! A large blob is read as several ranged GETs. Between two of them another writer may replace
//! the blob; naively concatenating the ranges would then return a *torn* file (the start of
//! one version, the end of another). azstore pins the ETag of the first response and sends it
//! as `If-Match` with every later range, so a concurrent change is detected by the service
//! (412) and surfaces as [`ErrorKind::PreconditionFailed`](crate::ErrorKind::PreconditionFailed)
//! — or, for [`BlobClient::download_chunked`] with [`OnChange::Restart`], the read starts
//! over on the new version. Mixed content is never returned.

use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt, stream};

use crate::blob::client::{BlobClient, Download};
use crate::blob::list::ResultStream;
use crate::blob::models::BlobProperties;
use crate::conditions::{Conditions, ETag};
use crate::error::{Error, ErrorCode, Result};
use crate::http::{Method, Response};

/// Default chunk size of chunked reads (4 MiB).
pub const DEFAULT_CHUNK: u64 = 4 * 1024 * 1024;

/// What a chunked read does when the blob changes between two ranges.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnChange {
    /// Fail with `PreconditionFailed` (412 `ConditionNotMet`).
    #[default]
    Fail,
    /// Start over on the new version, at most this many times, then fail.
    Restart {
        /// How many restarts are allowed.
        max_restarts: u32,
    },
}

/// Options of [`BlobClient::download_chunked`].
#[derive(Debug, Clone)]
#[must_use]
pub struct DownloadOptions {
    /// Conditions for the first request (e.g. `if_match` to read a known version only).
    pub conditions: Conditions,
    /// Bytes per ranged GET.
    pub chunk_size: u64,
    /// Behaviour on a concurrent change.
    pub on_change: OnChange,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            conditions: Conditions::none(),
            chunk_size: DEFAULT_CHUNK,
            on_change: OnChange::Fail,
        }
    }
}

impl DownloadOptions {
    /// Sets the chunk size.
    pub fn chunk_size(mut self, bytes: u64) -> Self {
        self.chunk_size = bytes;
        self
    }

    /// Sets the behaviour on a concurrent change.
    pub fn on_change(mut self, on_change: OnChange) -> Self {
        self.on_change = on_change;
        self
    }

    /// Sets the conditions of the first request.
    pub fn conditions(mut self, conditions: Conditions) -> Self {
        self.conditions = conditions;
        self
    }
}

/// A blob being read chunk by chunk: a `Stream` of `Result<Bytes>`, holding at most one
/// chunk in memory. Every chunk after the first is requested with `If-Match` on the ETag in
/// [`BlobStream::properties`]; if the blob changes meanwhile, the stream yields a
/// `PreconditionFailed` error and ends.
pub struct BlobStream {
    properties: BlobProperties,
    inner: ResultStream<Bytes>,
}

impl std::fmt::Debug for BlobStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BlobStream")
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

impl BlobStream {
    /// Properties of the version being read (its ETag is the one pinned).
    pub fn properties(&self) -> &BlobProperties {
        &self.properties
    }

    /// Reads the rest of the stream into one buffer.
    pub async fn collect(mut self) -> Result<Bytes> {
        let mut out = BytesMut::new();
        while let Some(chunk) = self.inner.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out.freeze())
    }
}

impl Stream for BlobStream {
    type Item = Result<Bytes>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        self.inner.as_mut().poll_next(cx)
    }
}

/// The conditions of every range after the first: the pinned ETag and the caller's lease.
fn pinned(etag: &ETag, caller: &Conditions) -> Conditions {
    let mut c = Conditions::if_match(etag);
    c.lease_id = caller.lease_id.clone();
    c
}

fn changed(e: Error, etag: &ETag) -> Error {
    if e.is_precondition_failed() {
        e.context(format!(
            "the blob changed during a chunked read (pinned ETag {etag})"
        ))
    } else {
        e
    }
}

impl BlobClient {
    async fn get_range(&self, range: Range<u64>, conditions: &Conditions) -> Result<Response> {
        self.pipeline
            .send(
                self.request(Method::Get)
                    .header(
                        "x-ms-range",
                        format!("bytes={}-{}", range.start, range.end - 1),
                    )
                    .conditions(conditions),
            )
            .await
    }

    /// Get Blob of the byte range `range` (half-open). The returned properties describe the
    /// whole blob (its `content_length` is the total size). Accepts every condition.
    pub async fn download_range_if(
        &self,
        range: Range<u64>,
        conditions: &Conditions,
    ) -> Result<Download> {
        crate::blob::client::check_read(conditions, "Get Blob")?;
        if range.start >= range.end {
            return Err(Error::invalid_input("download range must not be empty"));
        }
        let resp = self.get_range(range, conditions).await?;
        Ok(Download {
            properties: BlobProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }

    /// The first chunk: ranged, falling back to a plain GET for an empty blob (a range on an
    /// empty blob is answered with 416).
    async fn first_chunk(
        &self,
        chunk: u64,
        conditions: &Conditions,
    ) -> Result<(BlobProperties, Bytes)> {
        match self.get_range(0..chunk, conditions).await {
            Ok(resp) => Ok((BlobProperties::from_headers(&resp.headers)?, resp.body)),
            Err(e)
                if e.status() == Some(416) || e.error_code() == Some(&ErrorCode::InvalidRange) =>
            {
                let d = self.download_if(conditions).await?;
                Ok((d.properties, d.body))
            }
            Err(e) => Err(e),
        }
    }

    /// Streams the blob in chunks of `chunk_size` bytes, one ranged GET each, pinning the
    /// first response's ETag with `If-Match` on every later range. The first chunk is read
    /// before this returns (so the properties are known); memory use is one chunk.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::BlobClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let mut s = blob.download_stream(1 << 20).await?;
    /// let mut n = 0;
    /// while let Some(chunk) = s.try_next().await? {
    ///     n += chunk.len(); // a concurrent overwrite ends the stream with PreconditionFailed
    /// }
    /// # let _ = n; Ok(()) }
    /// ```
    pub async fn download_stream_if(
        &self,
        conditions: &Conditions,
        chunk_size: u64,
    ) -> Result<BlobStream> {
        crate::blob::client::check_read(conditions, "Get Blob")?;
        if chunk_size == 0 {
            return Err(Error::invalid_input("chunk size must not be 0"));
        }
        let (properties, first) = self.first_chunk(chunk_size, conditions).await?;
        let total = properties.content_length;
        let later = pinned(&properties.etag, conditions);
        let etag = properties.etag.clone();
        let this = self.clone();
        let offset = first.len() as u64;
        let state = (Some(first), offset);
        let inner = stream::try_unfold(state, move |(first, offset)| {
            let this = this.clone();
            let later = later.clone();
            let etag = etag.clone();
            async move {
                if let Some(first) = first {
                    if first.is_empty() && total > 0 {
                        return Err(Error::decode("ranged GET returned no data"));
                    }
                    if !first.is_empty() {
                        return Ok(Some((first, (None, offset))));
                    }
                }
                if offset >= total {
                    return Ok(None);
                }
                let end = total.min(offset.saturating_add(chunk_size));
                let resp = this
                    .get_range(offset..end, &later)
                    .await
                    .map_err(|e| changed(e, &etag))?;
                let got = resp.body.len() as u64;
                if got == 0 || got > end - offset {
                    return Err(Error::decode(format!(
                        "ranged GET of {} bytes returned {got}",
                        end - offset
                    )));
                }
                Ok(Some((resp.body, (None, offset + got))))
            }
        })
        .boxed();
        Ok(BlobStream { properties, inner })
    }

    /// Downloads the blob into the file `path` chunk by chunk (memory: one chunk), pinning
    /// the first ETag like [`BlobClient::download_stream`]. The data goes to `path` plus a
    /// `.partial` suffix first and is renamed into place only when complete, so `path` never
    /// holds a torn or partial copy. With [`OnChange::Restart`] a concurrent change starts the
    /// download over on the new version. Returns the properties of the version written.
    pub async fn download_to_file(
        &self,
        path: impl AsRef<std::path::Path>,
        options: &DownloadOptions,
    ) -> Result<BlobProperties> {
        use tokio::io::AsyncWriteExt;
        let path = path.as_ref();
        let mut partial = path.as_os_str().to_owned();
        partial.push(".partial");
        let partial = std::path::PathBuf::from(partial);
        let io = |e: std::io::Error| {
            Error::new(
                crate::error::ErrorKind::Service,
                "writing the download failed",
            )
            .with_source(e)
            .with_sent(crate::error::RequestSent::Yes)
        };
        let mut restarts = 0;
        let result = loop {
            let attempt = async {
                let mut file = tokio::fs::File::create(&partial).await.map_err(io)?;
                let mut s = self
                    .download_stream_if(&options.conditions, options.chunk_size)
                    .await?;
                while let Some(chunk) = s.next().await {
                    file.write_all(&chunk?).await.map_err(io)?;
                }
                file.flush().await.map_err(io)?;
                Ok::<_, Error>(s.properties)
            };
            match attempt.await {
                Err(e) if e.is_precondition_failed() => match options.on_change {
                    OnChange::Restart { max_restarts } if restarts < max_restarts => {
                        restarts += 1;
                        tracing::debug!(restarts, "blob changed during download; restarting");
                    }
                    _ => break Err(e),
                },
                other => break other,
            }
        };
        match result {
            Ok(p) => {
                tokio::fs::rename(&partial, path).await.map_err(io)?;
                Ok(p)
            }
            Err(e) => {
                let _ = tokio::fs::remove_file(&partial).await;
                Err(e)
            }
        }
    }

    /// Reads the whole blob with ranged GETs of `options.chunk_size`, pinning the first
    /// ETag; on a concurrent change it fails or restarts as `options.on_change` says. The
    /// result is always one consistent version.
    pub async fn download_chunked(&self, options: &DownloadOptions) -> Result<Download> {
        let mut restarts = 0;
        loop {
            let s = self
                .download_stream_if(&options.conditions, options.chunk_size)
                .await?;
            let properties = s.properties.clone();
            match s.collect().await {
                Ok(body) => return Ok(Download { body, properties }),
                Err(e) if e.is_precondition_failed() => match options.on_change {
                    OnChange::Restart { max_restarts } if restarts < max_restarts => {
                        restarts += 1;
                        tracing::debug!(restarts, "blob changed during chunked read; restarting");
                    }
                    _ => return Err(e),
                },
                Err(e) => return Err(e),
            }
        }
    }
}
