//! Put Range From URL: the service copies a range of another file (or blob) into this file.
//!
//! ```no_run
//! # async fn f(src: azstore::file::FileClient, dst: azstore::file::FileClient, sas_url: String) -> azstore::Result<()> {
//! use azstore::blob::CopySource;
//! let source = CopySource::url(sas_url)?.range(0..4096);
//! dst.put_range_from_url(0, &source, None).await?;
//! # Ok(()) }
//! ```

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::FileClient;
use crate::file::models::FileWrite;
use crate::http::Method;
use crate::storage::copy_source::CopySource;

/// Largest range of one Put Range From URL (4 MiB).
const MAX_RANGE: u64 = 4 * 1024 * 1024;

/// `x-ms-file-last-write-time` of a range write: what becomes of the file's SMB last-write
/// time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LastWriteTime {
    /// Set to the time of the write (`now`, the service's default).
    Now,
    /// Left as it was (`preserve`).
    Preserve,
}

impl LastWriteTime {
    fn header_value(self) -> &'static str {
        match self {
            LastWriteTime::Now => "now",
            LastWriteTime::Preserve => "preserve",
        }
    }
}

/// Options of [`FileClient::put_range_from_url_with`].
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct RangeFromUrlOptions {
    /// The file's lease id, when it is leased.
    pub lease: Option<LeaseId>,
    /// Write only if the source range has this CRC-64 (base64, see
    /// [`crc64_base64`](crate::blob::crc64_base64)): `x-ms-source-if-match-crc64`; 412
    /// otherwise.
    pub source_if_match_crc64: Option<String>,
    /// Write only if the source range does not have this CRC-64:
    /// `x-ms-source-if-none-match-crc64`; 412 otherwise.
    pub source_if_none_match_crc64: Option<String>,
    /// What becomes of the file's last-write time (`x-ms-file-last-write-time`); `None`
    /// sends nothing (the service sets it to now).
    pub last_write_time: Option<LastWriteTime>,
}

impl RangeFromUrlOptions {
    /// The lease id of the destination file, required when it is leased (default: none).
    pub fn lease(mut self, v: LeaseId) -> Self {
        self.lease = Some(v);
        self
    }

    /// Writes only if the source range has this CRC-64.
    pub fn source_if_match_crc64(mut self, v: impl Into<String>) -> Self {
        self.source_if_match_crc64 = Some(v.into());
        self
    }

    /// Writes only if the source range does not have this CRC-64.
    pub fn source_if_none_match_crc64(mut self, v: impl Into<String>) -> Self {
        self.source_if_none_match_crc64 = Some(v.into());
        self
    }

    /// What becomes of the file's last-write time (`x-ms-file-last-write-time`). Default:
    /// not sent, so the service sets it to now.
    pub fn last_write_time(mut self, v: LastWriteTime) -> Self {
        self.last_write_time = Some(v);
        self
    }
}

impl FileClient {
    /// Put Range From URL: writes the source's range (`CopySource::range`, at most 4 MiB) to
    /// this file at `offset`. The source is read with its SAS or with
    /// `CopySource::bearer`; `CopySource::content_crc64` makes the service check what it read
    /// (400 `Crc64Mismatch`). Source ETag conditions and a source MD5 are refused: the File
    /// service has neither here. Last writer wins; a leased file needs the lease id. See
    /// [`FileClient::put_range_from_url_with`] for CRC-64 source conditions and the
    /// last-write time.
    pub async fn put_range_from_url(
        &self,
        offset: u64,
        source: &CopySource,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let options = RangeFromUrlOptions {
            lease: lease.cloned(),
            ..RangeFromUrlOptions::default()
        };
        self.put_range_from_url_with(offset, source, &options).await
    }

    /// [`FileClient::put_range_from_url`] with options: CRC-64 conditions on the source range
    /// (`x-ms-source-if-match-crc64` / `-none-match-crc64`) and what becomes of the file's
    /// last-write time.
    ///
    /// ```no_run
    /// # async fn f(dst: azstore::file::FileClient, sas_url: String, crc: String) -> azstore::Result<()> {
    /// use azstore::blob::CopySource;
    /// use azstore::file::{LastWriteTime, RangeFromUrlOptions};
    /// let source = CopySource::url(sas_url)?.range(0..4096);
    /// let options = RangeFromUrlOptions::default()
    ///     .source_if_match_crc64(crc)
    ///     .last_write_time(LastWriteTime::Preserve);
    /// dst.put_range_from_url_with(0, &source, &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_range_from_url_with(
        &self,
        offset: u64,
        source: &CopySource,
        options: &RangeFromUrlOptions,
    ) -> Result<FileWrite> {
        source.check_for_file_range()?;
        let Some(r) = &source.range else {
            return Err(Error::invalid_input(
                "Put Range From URL needs a source range",
            ));
        };
        let len = r.end.saturating_sub(r.start);
        if len == 0 || len > MAX_RANGE {
            return Err(Error::invalid_input(
                "Put Range From URL copies 1 byte to 4 MiB",
            ));
        }
        let req = self
            .request(Method::Put)
            .query("comp", "range")
            .header("x-ms-write", "update")
            .header(
                "x-ms-range",
                crate::http::range_header(&(offset..offset + len)),
            )
            .header("x-ms-source-range", crate::http::range_header(r))
            .header("x-ms-copy-source", source.url.clone())
            .header_opt(
                "x-ms-copy-source-authorization",
                source
                    .authorization
                    .as_ref()
                    .map(|a| a.header_value().to_string()),
            )
            .header_opt("x-ms-source-content-crc64", source.content_crc64.clone())
            .header_opt(
                "x-ms-source-if-match-crc64",
                options.source_if_match_crc64.clone(),
            )
            .header_opt(
                "x-ms-source-if-none-match-crc64",
                options.source_if_none_match_crc64.clone(),
            )
            .header_opt(
                "x-ms-file-last-write-time",
                options.last_write_time.map(LastWriteTime::header_value),
            )
            .header_opt(
                "x-ms-lease-id",
                options.lease.as_ref().map(|l| l.as_str().to_string()),
            );
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }
}
