//! Options of Create File and of the parallel transfers.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
#[cfg(doc)]
use crate::file::FileClient;
use crate::file::smb_properties::SmbProperties;
use crate::http_headers::HttpHeaders;
use crate::transfer::{OnChange, Progress};

/// The largest range one Put Range may write: 4 MiB.
pub const MAX_RANGE_SIZE: u64 = 4 * 1024 * 1024;

/// Options of [`FileClient::create_with`]: content type, metadata, the stored HTTP headers
/// and the SMB properties of the new file.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct CreateFileOptions {
    /// `x-ms-content-type` of the file (also settable in `headers`; not both).
    pub content_type: Option<String>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// The other stored HTTP headers (encoding, language, cache control, disposition, MD5).
    pub headers: HttpHeaders,
    /// SMB attributes, times and permission (unset: Azure's defaults for a new file).
    pub smb: SmbProperties,
}

impl CreateFileOptions {
    setters! {
        /// Sets the content type.
        content_type => into content_type;

        /// Sets the metadata.
        metadata => set metadata: BTreeMap<String, String>;

        /// Sets the stored HTTP headers.
        headers => set headers: HttpHeaders;

        /// Sets the SMB properties.
        smb => set smb: SmbProperties;
    }
}

/// Options of the parallel transfers ([`FileClient::upload`], [`FileClient::upload_file`],
/// [`FileClient::upload_reader`], [`FileClient::download`], [`FileClient::download_to_file`],
/// [`FileClient::download_into`], [`FileClient::download_stream`]).
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct TransferOptions {
    /// Bytes per range request (1 byte – 4 MiB; default 4 MiB).
    pub range_size: u64,
    /// Range requests in flight at once (default 4).
    pub max_concurrency: usize,
    /// Content type and metadata for the file an upload creates.
    pub create: CreateFileOptions,
    /// What a download does when the file changes between two ranges (default: fail with
    /// `Conflict`).
    pub on_change: OnChange,
    /// Where progress is reported (none by default).
    pub progress: Option<Progress>,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            range_size: MAX_RANGE_SIZE,
            max_concurrency: 4,
            create: CreateFileOptions::default(),
            on_change: OnChange::Fail,
            progress: None,
        }
    }
}

impl TransferOptions {
    setters! {
        /// Sets the range size.
        range_size => set range_size: u64;

        /// Sets how many range requests run at once.
        max_concurrency => set max_concurrency: usize;
    }

    setters! {
        /// Sets the content type of an uploaded file.
        content_type => into create.content_type;
    }

    setters! {
        /// Sets the behaviour of a download on a concurrent change.
        on_change => set on_change: OnChange;

        /// Sets the options of the file an upload creates.
        create => set create: CreateFileOptions;

        /// Reports progress to `progress`.
        progress => some progress: Progress;
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.range_size == 0 || self.range_size > MAX_RANGE_SIZE {
            return Err(Error::invalid_input(format!(
                "range_size must be 1 byte to 4 MiB (got {})",
                self.range_size
            )));
        }
        if self.max_concurrency == 0 {
            return Err(Error::invalid_input("max_concurrency must be at least 1"));
        }
        Ok(())
    }
}
