//! Append Block From URL: appends a range of another blob, read by the service.

use std::ops::Range;

use crate::blob::append::{AppendOptions, AppendResult};
use crate::blob::client::BlobClient;
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::SourceConditions;

/// Options of Append Block From URL.
///
/// ```no_run
/// # async fn demo(log: azstore::blob::BlobClient, source_url: String) -> azstore::Result<()> {
/// use azstore::blob::{AppendFromUrlOptions, AppendOptions};
/// let end = log.get_properties().await?.content_length;
/// let options = AppendFromUrlOptions::default().append(AppendOptions::at(end)).source_range(0..1024);
/// log.append_block_from_url(&source_url, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct AppendFromUrlOptions {
    /// Conditions on this (destination) blob, its append position and maximum size.
    pub append: AppendOptions,
    /// Conditions on the source blob, sent as `x-ms-source-if-*` (no lease id, no tags).
    pub source_conditions: Conditions,
    /// The byte range of the source to append (half-open); `None` appends the whole source.
    pub source_range: Option<Range<u64>>,
    /// The base64 MD5 the source bytes must have (`x-ms-source-content-md5`); the service
    /// answers 400 `Md5Mismatch` otherwise.
    pub source_content_md5: Option<String>,
    /// The base64 CRC-64 the source bytes must have (`x-ms-source-content-crc64`, see
    /// [`crc64_base64`](crate::blob::crc64_base64)); the service answers 400
    /// `Crc64Mismatch` otherwise. Not with an MD5.
    pub source_content_crc64: Option<String>,
}

impl AppendFromUrlOptions {
    /// The conditions on this (destination) blob, its required append position and
    /// maximum size, as for Append Block. Default: none of them.
    ///
    /// ```
    /// use azstore::blob::{AppendFromUrlOptions, AppendOptions};
    /// // Append only if this blob is exactly 4096 bytes long (a retry cannot append twice).
    /// let options = AppendFromUrlOptions::default().append(AppendOptions::at(4096));
    /// # let _ = options;
    /// ```
    pub fn append(mut self, v: AppendOptions) -> Self {
        self.append = v;
        self
    }

    /// Conditions on the source blob, sent as `x-ms-source-if-*` (an ETag or date; no
    /// lease id, no tags). Default [`Conditions::none()`]: whatever version the service
    /// reads.
    ///
    /// ```no_run
    /// # fn demo(source_etag: azstore::ETag) {
    /// use azstore::Conditions;
    /// use azstore::blob::AppendFromUrlOptions;
    /// let options = AppendFromUrlOptions::default().source_conditions(Conditions::if_match(&source_etag));
    /// # let _ = options; }
    /// ```
    pub fn source_conditions(mut self, v: Conditions) -> Self {
        self.source_conditions = v;
        self
    }

    /// Appends only this half-open byte range of the source.
    pub fn source_range(mut self, v: Range<u64>) -> Self {
        self.source_range = Some(v);
        self
    }

    /// The base64 MD5 the source bytes must have.
    pub fn source_content_md5(mut self, v: impl Into<String>) -> Self {
        self.source_content_md5 = Some(v.into());
        self
    }

    /// The base64 CRC-64 the source bytes must have.
    pub fn source_content_crc64(mut self, v: impl Into<String>) -> Self {
        self.source_content_crc64 = Some(v.into());
        self
    }
}

impl BlobClient {
    /// Append Block From URL: the service reads `source_url` (which must be readable with
    /// this account's credential or carry a SAS) and appends it — or
    /// [`AppendFromUrlOptions::source_range`] of it — to this append blob (at most 4 MiB).
    /// A failed source condition is answered with error code `CannotVerifyCopySource`:
    /// status 412 for `If-Match`, 304 ([`ErrorKind::NotModified`](crate::ErrorKind)) for
    /// `If-None-Match` and `If-Modified-Since` (as live Azure answered in the recordings). A
    /// failed destination condition gives the usual 412 `ConditionNotMet`,
    /// `AppendPositionConditionNotMet` or `MaxBlobSizeConditionNotMet`. Not idempotent, like
    /// [`BlobClient::append_block`].
    pub async fn append_block_from_url(
        &self,
        source_url: &str,
        options: &AppendFromUrlOptions,
    ) -> Result<AppendResult> {
        options
            .append
            .conditions
            .check(Allowed::ALL, "Append Block From URL")?;
        if options.source_conditions.lease_id.is_some()
            || options.source_conditions.if_tags.is_some()
        {
            return Err(Error::invalid_input(
                "Append Block From URL takes no lease id or tags condition on the source",
            ));
        }
        crate::blob::limits::validate_source_url(source_url)?;
        if options.source_content_md5.is_some() && options.source_content_crc64.is_some() {
            return Err(Error::invalid_input(
                "give the source an MD5 or a CRC-64, not both",
            ));
        }
        let range = match &options.source_range {
            Some(r) if r.start >= r.end => {
                return Err(Error::invalid_input("source range must not be empty"));
            }
            Some(r) if r.end - r.start > 4 * 1024 * 1024 => {
                return Err(Error::invalid_input(
                    "Append Block From URL appends at most 4 MiB",
                ));
            }
            Some(r) => Some(crate::http::range_header(r)),
            None => None,
        };
        let req = self
            .write_request(Method::Put, "Append Block From URL")?
            .query("comp", "appendblock")
            .header("x-ms-copy-source", source_url)
            .header_opt("x-ms-source-range", range)
            .header_opt(
                "x-ms-source-content-md5",
                options.source_content_md5.clone(),
            )
            .header_opt(
                "x-ms-source-content-crc64",
                options.source_content_crc64.clone(),
            );
        let req = options
            .append
            .apply(req)?
            .source_conditions(&options.source_conditions)?;
        let resp = self.pipeline.send(req).await?;
        AppendResult::from_response(&resp, "Append Block From URL")
    }
}
