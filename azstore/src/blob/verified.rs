//! Verified ranged reads: Get Blob with `x-ms-range-get-content-md5` or
//! `x-ms-range-get-content-crc64`, the service's checksum of the range compared with the bytes
//! that arrived.

use std::ops::Range;

use crate::blob::client::{BlobClient, Download};
use crate::conditions::Conditions;
use crate::error::{Error, ErrorCode, Result};
use crate::http::Method;
use crate::storage::StorageRequest;
use crate::storage::checksum::{Checksum, crc64_base64, md5_base64};

/// The largest range the service checksums on a read (4 MiB).
pub const MAX_VERIFIED_RANGE: u64 = 4 * 1024 * 1024;

impl BlobClient {
    /// Get Blob of `range` (half-open, at most 4 MiB) with the service's checksum of exactly
    /// those bytes, verified on arrival. A mismatch is an error of kind
    /// [`Integrity`](crate::ErrorKind::Integrity) with code `Md5Mismatch` or `Crc64Mismatch`;
    /// nothing unverified is returned. `Checksum::None` is refused (use `download_range`).
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::Checksum;
    /// let head = blob.download_range_verified(0..4096, Checksum::Crc64).await?;
    /// # let _ = head; Ok(()) }
    /// ```
    pub async fn download_range_verified(
        &self,
        range: Range<u64>,
        checksum: Checksum,
    ) -> Result<Download> {
        self.download_range_verified_if(range, &Conditions::none(), checksum)
            .await
    }

    /// [`BlobClient::download_range_verified`] under conditions (e.g. `if_match` to read a
    /// known version only).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::Checksum;
    /// let etag = blob.get_properties().await?.etag;
    /// let head = blob.download_range_verified_if(0..4096, &Conditions::if_match(&etag), Checksum::Md5).await?;
    /// # let _ = head;
    /// # Ok(()) }
    /// ```
    pub async fn download_range_verified_if(
        &self,
        range: Range<u64>,
        conditions: &Conditions,
        checksum: Checksum,
    ) -> Result<Download> {
        crate::blob::client::check_range_read(&range, conditions)?;
        if range.end - range.start > MAX_VERIFIED_RANGE {
            return Err(Error::invalid_input(
                "the service checksums ranges of at most 4 MiB; read larger blobs in chunks",
            ));
        }
        let (ask, answer, code) = match checksum {
            Checksum::None => {
                return Err(Error::invalid_input(
                    "a verified read needs Checksum::Md5 or Checksum::Crc64",
                ));
            }
            Checksum::Md5 => (
                "x-ms-range-get-content-md5",
                "content-md5",
                ErrorCode::Md5Mismatch,
            ),
            Checksum::Crc64 => (
                "x-ms-range-get-content-crc64",
                "x-ms-content-crc64",
                ErrorCode::Crc64Mismatch,
            ),
        };
        let req = self
            .request(Method::Get)
            .header("x-ms-range", crate::http::range_header(&range))
            .header(ask, "true")
            .conditions(conditions)
            .content_read();
        let resp = self.pipeline.send(req).await?;
        let expected = resp.headers.get(answer).ok_or_else(|| {
            Error::decode(format!(
                "Get Blob was asked for {ask} but the response has no {answer} header"
            ))
        })?;
        let actual = match checksum {
            Checksum::Crc64 => crc64_base64(&resp.body),
            _ => md5_base64(&resp.body),
        };
        if actual != expected.trim() {
            return Err(Error::local_mismatch(
                code,
                format!(
                    "the {} bytes read do not match the service's {answer} (expected {expected}, got {actual})",
                    resp.body.len()
                ),
            ));
        }
        Download::from_response(resp)
    }
}
