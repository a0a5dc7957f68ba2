//! Append Block From URL: appends a range of another blob, read by the service.

use crate::blob::append::{AppendOptions, AppendResult};
use crate::blob::client::BlobClient;
use crate::conditions::Allowed;
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::copy_source::{CopySource, SourceUse};

impl BlobClient {
    /// Append Block From URL: the service reads `source` (which must be readable with this
    /// account's credential, carry a SAS or be read with [`CopySource::bearer`]) and appends
    /// it — or [`CopySource::range`] of it, at most 4 MiB — to this append blob, under the
    /// conditions, append position and maximum size of `options`. The source's conditions
    /// ([`CopySource::conditions`]: an ETag or date, no tags) and checksum
    /// ([`CopySource::content_md5`] or [`CopySource::content_crc64`]) travel with the source;
    /// `options.checksum` must stay [`Checksum::None`](crate::blob::Checksum::None), the
    /// request has no body. A failed source condition is answered with error code
    /// `CannotVerifyCopySource`: status 412 for `If-Match`, 304
    /// ([`ErrorKind::NotModified`](crate::ErrorKind)) for `If-None-Match` and
    /// `If-Modified-Since` (as live Azure answered in the recordings). A failed destination
    /// condition gives the usual 412 `ConditionNotMet`, `AppendPositionConditionNotMet` or
    /// `MaxBlobSizeConditionNotMet`. Not idempotent, like [`BlobClient::append_block`].
    ///
    /// ```no_run
    /// # async fn demo(log: azstore::blob::BlobClient, source_url: String) -> azstore::Result<()> {
    /// use azstore::blob::{AppendOptions, CopySource};
    /// let end = log.get_properties().await?.content_length;
    /// let source = CopySource::url(source_url)?.range(0..1024);
    /// log.append_block_from_url(&source, &AppendOptions::at(end)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn append_block_from_url(
        &self,
        source: &CopySource,
        options: &AppendOptions,
    ) -> Result<AppendResult> {
        options
            .conditions
            .check(Allowed::ALL, "Append Block From URL")?;
        if options.checksum != crate::blob::Checksum::None {
            return Err(Error::invalid_input(
                "Append Block From URL sends no body; check the source with CopySource::content_md5 or content_crc64",
            ));
        }
        let req = self.write_request(Method::Put, "Append Block From URL")?;
        let req = source.apply(req.query("comp", "appendblock"), SourceUse::Append)?;
        let resp = self.pipeline.send(options.apply(req)?).await?;
        AppendResult::from_response(&resp, "Append Block From URL")
    }
}
