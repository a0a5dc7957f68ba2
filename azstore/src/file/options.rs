//! Options of Create File and of the parallel transfers.

use std::collections::BTreeMap;

use crate::error::{Error, Result};
#[cfg(doc)]
use crate::file::FileClient;
use crate::file::http_headers::FileHttpHeaders;
use crate::file::smb_properties::SmbProperties;
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
    pub headers: FileHttpHeaders,
    /// SMB attributes, times and permission (unset: Azure's defaults for a new file).
    pub smb: SmbProperties,
}

impl CreateFileOptions {
    /// Sets the content type.
    pub fn content_type(mut self, ct: impl Into<String>) -> Self {
        self.content_type = Some(ct.into());
        self
    }

    /// Sets the metadata.
    pub fn metadata(mut self, metadata: BTreeMap<String, String>) -> Self {
        self.metadata = metadata;
        self
    }

    /// Sets the stored HTTP headers.
    pub fn headers(mut self, headers: FileHttpHeaders) -> Self {
        self.headers = headers;
        self
    }

    /// Sets the SMB properties.
    pub fn smb(mut self, smb: SmbProperties) -> Self {
        self.smb = smb;
        self
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
    pub parallelism: usize,
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
            parallelism: 4,
            create: CreateFileOptions::default(),
            on_change: OnChange::Fail,
            progress: None,
        }
    }
}

impl TransferOptions {
    /// Sets the range size.
    pub fn range_size(mut self, n: u64) -> TransferOptions {
        self.range_size = n;
        self
    }

    /// Sets the parallelism.
    pub fn parallelism(mut self, n: usize) -> TransferOptions {
        self.parallelism = n;
        self
    }

    /// Sets the content type of an uploaded file.
    pub fn content_type(mut self, ct: impl Into<String>) -> TransferOptions {
        self.create.content_type = Some(ct.into());
        self
    }

    /// Sets the behaviour of a download on a concurrent change.
    pub fn on_change(mut self, on_change: OnChange) -> TransferOptions {
        self.on_change = on_change;
        self
    }

    /// Sets the options of the file an upload creates.
    pub fn create(mut self, create: CreateFileOptions) -> TransferOptions {
        self.create = create;
        self
    }

    /// Reports progress to `progress`.
    pub fn progress(mut self, progress: Progress) -> TransferOptions {
        self.progress = Some(progress);
        self
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.range_size == 0 || self.range_size > MAX_RANGE_SIZE {
            return Err(Error::invalid_input(format!(
                "range_size must be 1 byte to 4 MiB (got {})",
                self.range_size
            )));
        }
        if self.parallelism == 0 {
            return Err(Error::invalid_input("parallelism must be at least 1"));
        }
        Ok(())
    }
}
