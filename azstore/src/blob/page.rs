//! Page blobs: create, Put Page (write or clear 512-byte aligned ranges), Get Page Ranges.

use std::ops::Range;

use bytes::Bytes;
use time::OffsetDateTime;

use crate::blob::append::CreateOptions;
use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::names::validate_metadata;
use crate::blob::xml;
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::{Error, Result};
use crate::http::Method;

/// Page size: page blob sizes, offsets and lengths are multiples of this.
pub const PAGE_SIZE: u64 = 512;
/// Largest Put Page body (4 MiB).
pub const MAX_PUT_PAGE: u64 = 4 * 1024 * 1024;

/// What Get Page Ranges returns.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PageRanges {
    /// Written ranges, as half-open byte ranges.
    pub ranges: Vec<Range<u64>>,
    /// Cleared ranges (only reported by diff queries; usually empty).
    pub clear_ranges: Vec<Range<u64>>,
    /// The blob's ETag.
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The blob's size.
    pub blob_content_length: Option<u64>,
}

fn check_aligned(what: &str, v: u64) -> Result<()> {
    if v % PAGE_SIZE != 0 {
        return Err(Error::invalid_input(format!(
            "page blob {what} must be a multiple of 512 bytes (got {v})"
        )));
    }
    Ok(())
}

impl BlobClient {
    /// Put Blob of a page blob of `size` bytes (a multiple of 512), all zeros.
    pub async fn create_page_blob(
        &self,
        size: u64,
        options: &CreateOptions,
    ) -> Result<WriteResult> {
        options.conditions.check(Allowed::ALL, "Put Blob (page)")?;
        check_aligned("size", size)?;
        validate_metadata(&options.metadata)?;
        let resp = self
            .pipeline
            .send(
                self.request(Method::Put)
                    .header("x-ms-blob-type", "PageBlob")
                    .header("x-ms-blob-content-length", size.to_string())
                    .header_opt("x-ms-blob-content-type", options.content_type.clone())
                    .conditions(&options.conditions)
                    .metadata(&options.metadata),
            )
            .await?;
        WriteResult::from_response(&resp)
    }

    /// Put Page (update): writes `body` at `offset`. Offset and length must be multiples of
    /// 512 and the body at most 4 MiB (checked before sending). Changes the ETag.
    pub async fn put_pages(
        &self,
        offset: u64,
        body: impl Into<Bytes>,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(Allowed::ALL, "Put Page")?;
        let body = body.into();
        let len = body.len() as u64;
        check_aligned("offset", offset)?;
        check_aligned("write length", len)?;
        if len == 0 || len > MAX_PUT_PAGE {
            return Err(Error::invalid_input("Put Page writes 512 bytes to 4 MiB"));
        }
        let resp = self
            .pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "page")
                    .header("x-ms-page-write", "update")
                    .header(
                        "x-ms-range",
                        format!("bytes={}-{}", offset, offset + len - 1),
                    )
                    .conditions(conditions)
                    .body(body, "application/octet-stream"),
            )
            .await?;
        WriteResult::from_response(&resp)
    }

    /// Put Page (clear): zeroes `len` bytes at `offset` (both multiples of 512).
    pub async fn clear_pages(
        &self,
        offset: u64,
        len: u64,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(Allowed::ALL, "Put Page (clear)")?;
        check_aligned("offset", offset)?;
        check_aligned("clear length", len)?;
        if len == 0 {
            return Err(Error::invalid_input("clear length must not be 0"));
        }
        let resp = self
            .pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "page")
                    .header("x-ms-page-write", "clear")
                    .header(
                        "x-ms-range",
                        format!("bytes={}-{}", offset, offset + len - 1),
                    )
                    .conditions(conditions),
            )
            .await?;
        WriteResult::from_response(&resp)
    }

    /// Get Page Ranges: the written ranges of a page blob. Accepts every condition.
    pub async fn get_page_ranges_if(&self, conditions: &Conditions) -> Result<PageRanges> {
        crate::blob::client::check_read(conditions, "Get Page Ranges")?;
        let resp = self
            .pipeline
            .send(
                self.request(Method::Get)
                    .query("comp", "pagelist")
                    .conditions(conditions),
            )
            .await?;
        let raw: xml::RawPageList = xml::parse(&resp.body, "Get Page Ranges")?;
        let mut ranges = Vec::new();
        let mut clear_ranges = Vec::new();
        for item in raw.items {
            let (list, r) = match item {
                xml::RawPageEntry::PageRange(r) => (&mut ranges, r),
                xml::RawPageEntry::ClearRange(r) => (&mut clear_ranges, r),
                xml::RawPageEntry::Unknown => continue,
            };
            if r.end < r.start {
                return Err(Error::decode("Get Page Ranges returned an inverted range"));
            }
            list.push(r.start..r.end + 1);
        }
        Ok(PageRanges {
            ranges,
            clear_ranges,
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            blob_content_length: resp.headers.parse("x-ms-blob-content-length")?,
        })
    }
}
