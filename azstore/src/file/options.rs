//! Options of Create File and of the parallel transfers.

use std::collections::BTreeMap;

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
#[cfg(doc)]
use crate::file::FileClient;
use crate::file::smb_properties::SmbProperties;
use crate::http_headers::HttpHeaders;
use crate::transfer::{OnChange, Progress};

/// The largest range one Put Range may write: 4 MiB.
pub const MAX_RANGE_SIZE: u64 = 4 * 1024 * 1024;

/// Options of [`FileClient::create_with`]: the size, the lease id a leased file needs, the
/// content type, metadata, the stored HTTP headers and the SMB properties of the new file.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::CreateFileOptions;
/// let options = CreateFileOptions::default().size(1024).content_type("text/csv");
/// file.create_with(&options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct CreateFileOptions {
    /// The new file's size in bytes (all zero). Default: 0.
    pub size: u64,
    /// The lease id, when the file being replaced is leased. Default: none.
    pub lease: Option<LeaseId>,
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
    /// The new file's size in bytes; every byte reads as zero until written. Default: 0.
    ///
    /// ```
    /// let options = azstore::file::CreateFileOptions::default().size(4096);
    /// assert_eq!(options.size, 4096);
    /// ```
    pub fn size(mut self, v: u64) -> Self {
        self.size = v;
        self
    }

    /// The lease id of the file being replaced, when it is leased (a leased file refuses a
    /// Create File without it). Default: none.
    ///
    /// ```
    /// let lease = azstore::LeaseId::random();
    /// let options = azstore::file::CreateFileOptions::default().lease(&lease);
    /// assert_eq!(options.lease, Some(lease));
    /// ```
    pub fn lease(mut self, id: &LeaseId) -> Self {
        self.lease = Some(id.clone());
        self
    }

    /// The file's `Content-Type`, served with every read (`x-ms-content-type`; also
    /// settable in [`headers`](Self::headers), not both). Default: none.
    ///
    /// ```
    /// let options = azstore::file::CreateFileOptions::default().content_type("text/csv");
    /// # let _ = options;
    /// ```
    pub fn content_type(mut self, v: impl Into<String>) -> Self {
        self.content_type = Some(v.into());
        self
    }

    /// The file's metadata (validated before sending). Default: none.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let meta = BTreeMap::from([("source".to_string(), "scanner-3".to_string())]);
    /// let options = azstore::file::CreateFileOptions::default().metadata(meta);
    /// # let _ = options;
    /// ```
    pub fn metadata(mut self, v: BTreeMap<String, String>) -> Self {
        self.metadata = v;
        self
    }

    /// The HTTP headers stored with the file and served with every read (encoding,
    /// language, cache control, disposition, MD5). Default: none.
    ///
    /// ```
    /// use azstore::http_headers::HttpHeaders;
    /// let options = azstore::file::CreateFileOptions::default()
    ///     .headers(HttpHeaders::default().cache_control("no-cache"));
    /// # let _ = options;
    /// ```
    pub fn headers(mut self, v: HttpHeaders) -> Self {
        self.headers = v;
        self
    }

    /// The SMB attributes, times and permission of the new file. Default: Azure's for a
    /// new file (no attributes, times `now`, permission inherited from the directory).
    ///
    /// ```
    /// use azstore::file::{FileAttributes, SmbProperties};
    /// let options = azstore::file::CreateFileOptions::default()
    ///     .smb(SmbProperties::default().attributes(FileAttributes::HIDDEN));
    /// # let _ = options;
    /// ```
    pub fn smb(mut self, v: SmbProperties) -> Self {
        self.smb = v;
        self
    }
}

/// Options of [`DirectoryClient::create_with`](crate::file::DirectoryClient::create_with): the
/// metadata and the SMB properties of the new directory.
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// use std::collections::BTreeMap;
/// use azstore::file::CreateDirectoryOptions;
/// let metadata = BTreeMap::from([("project".to_string(), "apollo".to_string())]);
/// dir.create_with(&CreateDirectoryOptions::default().metadata(metadata)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct CreateDirectoryOptions {
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// SMB attributes, times and permission (unset: Azure's defaults for a new directory).
    pub smb: SmbProperties,
}

impl CreateDirectoryOptions {
    /// The directory's user metadata. Default: none.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let m = BTreeMap::from([("k".to_string(), "v".to_string())]);
    /// let options = azstore::file::CreateDirectoryOptions::default().metadata(m.clone());
    /// assert_eq!(options.metadata, m);
    /// ```
    pub fn metadata(mut self, v: BTreeMap<String, String>) -> Self {
        self.metadata = v;
        self
    }

    /// The SMB attributes, times and permission of the new directory. Default: Azure's for a
    /// new directory (attributes `Directory`, times `now`, permission inherited).
    ///
    /// ```
    /// use azstore::file::{FileAttributes, SmbProperties};
    /// let smb = SmbProperties::default().attributes(FileAttributes::DIRECTORY | FileAttributes::HIDDEN);
    /// let options = azstore::file::CreateDirectoryOptions::default().smb(smb.clone());
    /// assert_eq!(options.smb, smb);
    /// ```
    pub fn smb(mut self, v: SmbProperties) -> Self {
        self.smb = v;
        self
    }
}

/// Options of the parallel transfers ([`FileClient::upload`], [`FileClient::upload_file`],
/// [`FileClient::upload_reader`], [`FileClient::download`], [`FileClient::download_to_file`],
/// [`FileClient::download_into`], [`FileClient::download_stream`]).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::TransferOptions;
/// let options = TransferOptions::default().max_concurrency(8).content_type("application/zip");
/// file.upload_file("/tmp/backup.zip", &options, None).await?;
/// # Ok(()) }
/// ```
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
    /// Bytes per range request (1 byte – 4 MiB, checked before sending; default 4 MiB).
    ///
    /// ```
    /// let options = azstore::file::TransferOptions::default().range_size(1 << 20);
    /// assert_eq!(options.range_size, 1 << 20);
    /// ```
    pub fn range_size(mut self, v: u64) -> Self {
        self.range_size = v;
        self
    }

    /// Range requests in flight at once (default 4). Memory in flight is about
    /// `max_concurrency × range_size`.
    ///
    /// ```
    /// let options = azstore::file::TransferOptions::default().max_concurrency(8);
    /// # let _ = options;
    /// ```
    pub fn max_concurrency(mut self, v: usize) -> Self {
        self.max_concurrency = v;
        self
    }

    /// The `Content-Type` of the file an upload creates (default: none). Shorthand for
    /// the same field of [`create`](Self::create).
    ///
    /// ```
    /// let options = azstore::file::TransferOptions::default().content_type("video/mp4");
    /// # let _ = options;
    /// ```
    pub fn content_type(mut self, v: impl Into<String>) -> Self {
        self.create.content_type = Some(v.into());
        self
    }

    /// What a download does when the file changes between two ranges (default
    /// [`OnChange::Fail`]: a `Conflict` error, never a mix of two versions).
    ///
    /// ```
    /// use azstore::file::TransferOptions;
    /// use azstore::transfer::OnChange;
    /// let options = TransferOptions::default().on_change(OnChange::Restart { max_restarts: 2 });
    /// # let _ = options;
    /// ```
    pub fn on_change(mut self, v: OnChange) -> Self {
        self.on_change = v;
        self
    }

    /// Content type, metadata, headers and SMB properties of the file an upload creates
    /// (default [`CreateFileOptions::default()`]).
    ///
    /// ```
    /// use azstore::file::{CreateFileOptions, TransferOptions};
    /// let options = TransferOptions::default()
    ///     .create(CreateFileOptions::default().content_type("application/pdf"));
    /// # let _ = options;
    /// ```
    pub fn create(mut self, v: CreateFileOptions) -> Self {
        self.create = v;
        self
    }

    /// Reports progress to `progress` (default: no reports).
    ///
    /// ```
    /// use azstore::file::TransferOptions;
    /// use azstore::transfer::Progress;
    /// let options = TransferOptions::default()
    ///     .progress(Progress::callback(|p| eprintln!("{} of {:?}", p.bytes, p.total)));
    /// # let _ = options;
    /// ```
    pub fn progress(mut self, v: Progress) -> Self {
        self.progress = Some(v);
        self
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
