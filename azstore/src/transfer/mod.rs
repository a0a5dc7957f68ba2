//! One transfer engine for Blob and File: parallel ranged downloads and parallel block
//! uploads with bounded memory and progress reporting.
//!
//! **Downloads** ([`BlobClient::download_to_file`], [`BlobClient::download_chunked`],
//! [`BlobClient::download_into`], [`BlobClient::download_stream_with`] and the
//! [`FileClient`] equivalents) read the object in ranges of `chunk_size` bytes,
//! `max_concurrency` at a time. Every range is pinned to the ETag of the first response
//! (Blob: `If-Match`; File, whose REST API has no `If-Match`: the ETag of every range response
//! is compared), so the result is always exactly one version of the object: a change
//! mid-download fails or starts over, as [`OnChange`] says. Memory: about
//! `max_concurrency × chunk_size` for files and streams; the buffer modes write straight into
//! the destination.
//!
//! **Uploads** ([`BlobClient::upload_file`], [`BlobClient::upload_reader`],
//! [`BlobClient::upload_stream`], [`BlobClient::upload_with`], and [`FileClient::upload_file`],
//! [`FileClient::upload_reader`], [`FileClient::upload`]) read each block once into its own
//! buffer and send `max_concurrency` blocks at a time; the next block is read only when a slot
//! is free, so memory stays at about `max_concurrency × block_size` whatever the size. A blob
//! upload commits with one Put Block List carrying the caller's conditions.
//!
//! **Progress**: put a [`Progress`] (a callback or a `watch` channel) into the options.
//!
//! ```no_run
//! # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::blob::{DownloadOptions, OnChange};
//! use azstore::transfer::Progress;
//! let (progress, rx) = Progress::channel();
//! let options = DownloadOptions::default()
//!     .max_concurrency(8)
//!     .on_change(OnChange::Restart { max_restarts: 3 })
//!     .progress(progress);
//! let props = blob.download_to_file("/tmp/big.bin", &options).await?;
//! assert_eq!(rx.borrow().bytes, props.content_length);
//! # Ok(()) }
//! ```
//!
//! [`BlobClient::download_to_file`]: crate::blob::BlobClient::download_to_file
//! [`BlobClient::download_chunked`]: crate::blob::BlobClient::download_chunked
//! [`BlobClient::download_into`]: crate::blob::BlobClient::download_into
//! [`BlobClient::download_stream_with`]: crate::blob::BlobClient::download_stream_with
//! [`BlobClient::upload_file`]: crate::blob::BlobClient::upload_file
//! [`BlobClient::upload_reader`]: crate::blob::BlobClient::upload_reader
//! [`BlobClient::upload_stream`]: crate::blob::BlobClient::upload_stream
//! [`BlobClient::upload_with`]: crate::blob::BlobClient::upload_with
//! [`FileClient`]: crate::file::FileClient
//! [`FileClient::upload_file`]: crate::file::FileClient::upload_file
//! [`FileClient::upload_reader`]: crate::file::FileClient::upload_reader
//! [`FileClient::upload`]: crate::file::FileClient::upload
//! [`OnChange`]: crate::blob::OnChange

pub(crate) mod download;
mod memory;
mod pool;
pub(crate) mod progress;
mod stream;
mod to_file;
pub(crate) mod upload;

pub(crate) use memory::{into_slice, to_vec};
pub use progress::{Progress, TransferProgress};
pub(crate) use stream::to_stream;
pub(crate) use to_file::to_file;

/// What a chunked read does when the object (blob or file) changes between two ranges.
///
/// ```
/// use azstore::blob::{DownloadOptions, OnChange};
/// // A log blob that is rewritten now and then: start over (at most twice) rather than fail.
/// let options = DownloadOptions::default().on_change(OnChange::Restart { max_restarts: 2 });
/// # let _ = options;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum OnChange {
    /// Fail with `PreconditionFailed` (412 `ConditionNotMet`; for files: `Conflict`).
    #[default]
    Fail,
    /// Start over on the new version, at most this many times, then fail.
    Restart {
        /// How many restarts are allowed.
        max_restarts: u32,
    },
}
