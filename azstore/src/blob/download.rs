//! Ranged and consistent chunked reads.
//!
//! A large blob is read as several ranged GETs. Between two of them another writer may replace
//! the blob; naively concatenating the ranges would then return a *torn* file (the start of
//! one version, the end of another). azstore pins the ETag of the first response and sends it
//! as `If-Match` with every later range, so a concurrent change is detected by the service
//! (412) and surfaces as [`ErrorKind::PreconditionFailed`](crate::ErrorKind::PreconditionFailed)
//! — or, for [`BlobClient::download_chunked`] with [`OnChange::Restart`], the read starts
//! over on the new version. Mixed content is never returned. The ranges are fetched in
//! parallel by the transfer engine ([`crate::transfer`]).

use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};

use crate::blob::client::{BlobClient, Download};
use crate::blob::list::ResultStream;
use crate::blob::models::BlobProperties;
use crate::conditions::Conditions;
use crate::error::Result;
use crate::http::Method;
use crate::storage::StorageRequest;
pub use crate::transfer::OnChange;
use crate::transfer::Progress;

/// Default chunk size of chunked reads (8 MiB).
pub const DEFAULT_CHUNK: u64 = 8 * 1024 * 1024;

/// Default number of ranges in flight of a parallel download (4).
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Options of the chunked and parallel downloads ([`BlobClient::download_chunked`],
/// [`BlobClient::download_to_file`], [`BlobClient::download_into`],
/// [`BlobClient::download_stream_with`]).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::DownloadOptions;
/// let options = DownloadOptions::default().chunk_size(16 << 20).max_concurrency(8);
/// let whole = blob.download_chunked(&options).await?;
/// # let _ = whole; Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct DownloadOptions {
    /// Conditions for the first request (e.g. `if_match` to read a known version only).
    pub conditions: Conditions,
    /// Bytes per ranged GET (default 8 MiB).
    pub chunk_size: u64,
    /// Ranged GETs in flight at once (default 4). Memory of file and stream downloads is
    /// about `max_concurrency × chunk_size`.
    pub max_concurrency: usize,
    /// Behaviour on a concurrent change.
    pub on_change: OnChange,
    /// Where progress is reported (none by default).
    pub progress: Option<Progress>,
}

impl Default for DownloadOptions {
    fn default() -> Self {
        DownloadOptions {
            conditions: Conditions::none(),
            chunk_size: DEFAULT_CHUNK,
            max_concurrency: DEFAULT_CONCURRENCY,
            on_change: OnChange::Fail,
            progress: None,
        }
    }
}

impl DownloadOptions {
    /// Bytes per ranged GET (default 8 MiB). Memory of file and stream downloads is
    /// about `max_concurrency × chunk_size`.
    ///
    /// ```
    /// let options = azstore::blob::DownloadOptions::default().chunk_size(4 << 20);
    /// assert_eq!(options.chunk_size, 4 << 20);
    /// ```
    pub fn chunk_size(mut self, v: u64) -> Self {
        self.chunk_size = v;
        self
    }

    /// Ranged GETs in flight at once (default 4).
    ///
    /// ```
    /// let options = azstore::blob::DownloadOptions::default().max_concurrency(8);
    /// # let _ = options;
    /// ```
    pub fn max_concurrency(mut self, v: usize) -> Self {
        self.max_concurrency = v;
        self
    }

    /// What the download does when the blob changes between two ranges (default
    /// [`OnChange::Fail`]: a `PreconditionFailed` error, never a mix of two versions).
    ///
    /// ```
    /// use azstore::blob::{DownloadOptions, OnChange};
    /// let options = DownloadOptions::default().on_change(OnChange::Restart { max_restarts: 3 });
    /// # let _ = options;
    /// ```
    pub fn on_change(mut self, v: OnChange) -> Self {
        self.on_change = v;
        self
    }

    /// Conditions of the first request, e.g. `if_match` to read only a known version
    /// (default [`Conditions::none()`]); the later ranges are always pinned to the
    /// version the first one read.
    ///
    /// ```no_run
    /// # fn demo(etag: azstore::ETag) {
    /// use azstore::Conditions;
    /// use azstore::blob::DownloadOptions;
    /// let options = DownloadOptions::default().conditions(Conditions::if_match(&etag));
    /// # let _ = options; }
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Reports progress to `progress` (default: no reports).
    ///
    /// ```
    /// use azstore::blob::DownloadOptions;
    /// use azstore::transfer::Progress;
    /// let options = DownloadOptions::default()
    ///     .progress(Progress::callback(|p| eprintln!("{} bytes", p.bytes)));
    /// # let _ = options;
    /// ```
    pub fn progress(mut self, v: Progress) -> Self {
        self.progress = Some(v);
        self
    }
}

/// A blob being read chunk by chunk: a `Stream` of `Result<Bytes>`, holding at most one
/// chunk in memory. Every chunk after the first is requested with `If-Match` on the ETag in
/// [`BlobStream::properties`]; if the blob changes meanwhile, the stream yields a
/// `PreconditionFailed` error and ends.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// let mut stream = blob.download_stream(8 << 20).await?;
/// let size = stream.properties().content_length;
/// let mut read = 0;
/// while let Some(chunk) = stream.try_next().await? {
///     read += chunk.len() as u64;
///     eprint!("\r{read} / {size}");
/// }
/// # Ok(()) }
/// ```
pub struct BlobStream {
    pub(crate) properties: BlobProperties,
    pub(crate) inner: ResultStream<Bytes>,
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
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let stream = blob.download_stream(4 << 20).await?;
    /// println!("reading version {} ({} bytes)", stream.properties().etag, stream.properties().content_length);
    /// # Ok(()) }
    /// ```
    pub fn properties(&self) -> &BlobProperties {
        &self.properties
    }

    /// Reads the rest of the stream into one buffer.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let all = blob.download_stream(4 << 20).await?.collect().await?;
    /// println!("{} bytes", all.len());
    /// # Ok(()) }
    /// ```
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

impl BlobClient {
    /// Get Blob of the byte range `range` (half-open). The returned properties describe the
    /// whole blob (its `content_length` is the total size). Accepts every condition.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let first = blob.download_range(0..1024).await?;
    /// // The next range only from the same version (412 if it changed meanwhile).
    /// let next = blob.download_range_if(1024..2048, &Conditions::if_match(&first.properties.etag)).await?;
    /// # let _ = next;
    /// # Ok(()) }
    /// ```
    pub async fn download_range_if(
        &self,
        range: Range<u64>,
        conditions: &Conditions,
    ) -> Result<Download> {
        crate::blob::client::check_range_read(&range, conditions)?;
        let resp = self
            .pipeline
            .send(
                self.request(Method::Get)
                    .header("x-ms-range", crate::http::range_header(&range))
                    .conditions(conditions)
                    .content_read(),
            )
            .await?;
        Download::from_response(resp)
    }

    /// Get Blob from byte `start` to the end, whatever the size is then (`x-ms-range:
    /// bytes=start-`): one request for the tail of a growing append blob or log, without a
    /// Get Blob Properties first. The properties describe the whole blob. A `start` at or
    /// past the end (also 0 on an empty blob) is answered 416 `InvalidRange`. Accepts every
    /// condition.
    ///
    /// ```no_run
    /// # async fn f(log: azstore::blob::BlobClient, seen: u64) -> azstore::Result<()> {
    /// let tail = log.download_from(seen, &azstore::Conditions::none()).await?;
    /// println!("{} new bytes of {}", tail.body.len(), tail.properties.content_length);
    /// # Ok(()) }
    /// ```
    pub async fn download_from(&self, start: u64, conditions: &Conditions) -> Result<Download> {
        crate::blob::client::check_read(conditions, "Get Blob")?;
        let resp = self
            .pipeline
            .send(
                self.request(Method::Get)
                    .header("x-ms-range", crate::http::range_from_header(start))
                    .conditions(conditions)
                    .content_read(),
            )
            .await?;
        Download::from_response(resp)
    }

    /// Get Blob of the whole blob (`None`), of `start..end`, or from `start` on (`end`
    /// `None`), under `conditions`, whose body is read as it arrives: the properties (of the
    /// whole blob) and the response to stream. One request; for `BlobStore`'s gets.
    #[cfg(feature = "object_store")]
    pub(crate) async fn get_streaming(
        &self,
        range: Option<(u64, Option<u64>)>,
        conditions: &Conditions,
    ) -> Result<(BlobProperties, crate::http::StreamingResponse)> {
        let mut req = self.request(Method::Get);
        match range {
            None => crate::blob::client::check_read(conditions, "Get Blob")?,
            Some((start, Some(end))) => {
                crate::blob::client::check_range_read(&(start..end), conditions)?;
                req = req.header("x-ms-range", crate::http::range_header(&(start..end)));
            }
            Some((start, None)) => {
                crate::blob::client::check_read(conditions, "Get Blob")?;
                req = req.header("x-ms-range", crate::http::range_from_header(start));
            }
        }
        let resp = self
            .pipeline
            .send_streaming(req.conditions(conditions))
            .await?;
        Ok((BlobProperties::from_headers(&resp.headers)?, resp))
    }

    /// Streams the blob in chunks of `chunk_size` bytes, one ranged GET each, pinning the
    /// first response's ETag with `If-Match` on every later range. The first chunk is read
    /// before this returns (so the properties are known); the next chunk is read ahead while
    /// the caller consumes one (memory: about two chunks). See
    /// [`BlobClient::download_stream_with`] for parallel read-ahead.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
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
        let options = DownloadOptions::default()
            .conditions(conditions.clone())
            .chunk_size(chunk_size)
            .max_concurrency(1);
        self.download_stream_with(&options).await
    }
}
