//! Put Range From URL: the service copies a range of another file (or blob) into this file.
//!
//! ```no_run
//! # async fn f(src: azstore::file::FileClient, dst: azstore::file::FileClient, sas_url: String) -> azstore::Result<()> {
//! use azstore::blob::CopySource;
//! let source = CopySource::url(sas_url)?.range(0..4096);
//! dst.put_range_from_url(0, &source, None).await?;
//! # Ok(()) }
//! ```

use crate::blob::CopySource;
use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::FileClient;
use crate::file::models::FileWrite;
use crate::http::Method;

/// Largest range of one Put Range From URL (4 MiB).
const MAX_RANGE: u64 = 4 * 1024 * 1024;

impl FileClient {
    /// Put Range From URL: writes the source's range (`CopySource::range`, at most 4 MiB) to
    /// this file at `offset`. The source is read with its SAS or with
    /// `CopySource::bearer`; `CopySource::content_crc64` makes the service check what it read
    /// (400 `Crc64Mismatch`). Source ETag conditions and a source MD5 are refused: the File
    /// service has neither here. Last writer wins; a leased file needs the lease id.
    pub async fn put_range_from_url(
        &self,
        offset: u64,
        source: &CopySource,
        lease: Option<&LeaseId>,
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
            .header_opt("x-ms-lease-id", lease.map(|l| l.as_str().to_string()));
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }
}
