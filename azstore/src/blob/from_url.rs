//! Writes whose data the service reads from another URL: Put Blob From URL, Put Block From
//! URL and Put Page From URL. The source is a [`CopySource`]: its URL (with a SAS when the
//! source is not public), optionally a bearer token for it (`x-ms-copy-source-authorization`),
//! conditions on the source (`x-ms-source-if-*`), a byte range and a checksum the source
//! range must have. Conditions on the destination are the usual [`Conditions`].
//!
//! ```no_run
//! # async fn f(src: azstore::blob::BlobClient, dst: azstore::blob::BlobClient, etag: azstore::ETag) -> azstore::Result<()> {
//! use azstore::blob::{CopySource, PutFromUrlOptions};
//! use azstore::Conditions;
//! let expiry = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(600);
//! // Copy exactly the version we read, and only if the destination does not exist yet.
//! let source = CopySource::url(src.sas_url("r", expiry)?)?.conditions(Conditions::if_match(&etag));
//! dst.put_blob_from_url(&source, &PutFromUrlOptions::new(Conditions::if_not_exists()))
//!     .await?;
//! # Ok(()) }
//! ```

use crate::blob::block::BlockId;
use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::limits::check_aligned;
use crate::blob::page::{PageWriteOptions, PageWriteResult};
use crate::blob::write_options::{BlobWriteOptions, WriteKind, write_builders};
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::StorageRequest;
use crate::storage::copy_source::{CopySource, SourceUse};

/// `x-ms-copy-source-tag-option`: where the destination's index tags come from.
///
/// ```no_run
/// # async fn demo(dest: azstore::blob::BlobClient, source: azstore::blob::CopySource) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{CopyTags, PutFromUrlOptions};
/// let options = PutFromUrlOptions::new(Conditions::none()).tags_from(CopyTags::Copy);
/// dest.put_blob_from_url(&source, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CopyTags {
    /// The tags given in the write options (`x-ms-tags`), or none (`REPLACE`, the default).
    Replace,
    /// The source's tags (`COPY`); the write options must then carry no tags.
    Copy,
}

impl CopyTags {
    pub(crate) fn header_value(self) -> &'static str {
        match self {
            CopyTags::Replace => "REPLACE",
            CopyTags::Copy => "COPY",
        }
    }
}

/// Options of [`BlobClient::put_blob_from_url`].
///
/// ```no_run
/// # async fn demo(dest: azstore::blob::BlobClient, source: azstore::blob::CopySource) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::PutFromUrlOptions;
/// let options = PutFromUrlOptions::new(Conditions::if_not_exists()).copy_source_properties(false).content_type("text/csv");
/// dest.put_blob_from_url(&source, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct PutFromUrlOptions {
    /// Conditions on the destination (this blob).
    pub conditions: Conditions,
    /// Headers, metadata, tier, tags and encryption scope of the new blob.
    pub write: BlobWriteOptions,
    /// Whether the source's HTTP headers are copied (`x-ms-copy-source-blob-properties`; the
    /// service's default is yes). Headers given in `write` override them.
    pub copy_source_properties: Option<bool>,
    /// Where the index tags come from.
    pub tags: Option<CopyTags>,
}

impl PutFromUrlOptions {
    /// Options for a write under `conditions` — the one choice every write that replaces a
    /// blob makes visibly (there is no `Default`):
    ///
    /// * [`Conditions::if_match(&etag)`](Conditions::if_match): replace only the version you
    ///   read (412 `ConditionNotMet` otherwise);
    /// * [`Conditions::if_not_exists()`](Conditions::if_not_exists): create only (409
    ///   `BlobAlreadyExists` when it exists);
    /// * [`Conditions::none()`](Conditions::none): last writer wins.
    pub fn new(conditions: Conditions) -> PutFromUrlOptions {
        PutFromUrlOptions {
            conditions,
            write: Default::default(),
            copy_source_properties: None,
            tags: None,
        }
    }

    /// Replaces the destination conditions chosen in [`new`](Self::new) (source conditions go
    /// in the [`CopySource`]).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::PutFromUrlOptions;
    /// let options = PutFromUrlOptions::new(Conditions::none()).conditions(Conditions::if_not_exists());
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Whether the source's HTTP headers (content type, encoding, ...) are copied to the
    /// new blob (`x-ms-copy-source-blob-properties`). Default: not sent, and the
    /// service copies them. Headers given in the write options override them.
    pub fn copy_source_properties(mut self, v: bool) -> Self {
        self.copy_source_properties = Some(v);
        self
    }

    /// Where the new blob's index tags come from: [`CopyTags::Replace`] (the tags in the
    /// write options, or none) or [`CopyTags::Copy`] (the source's). Default: not sent,
    /// which the service treats as `Replace`.
    pub fn tags_from(mut self, v: CopyTags) -> Self {
        self.tags = Some(v);
        self
    }
}

write_builders!(PutFromUrlOptions);

pub(crate) fn check_tags_mode(tags: Option<CopyTags>, write: &BlobWriteOptions) -> Result<()> {
    if tags == Some(CopyTags::Copy) && write.tags.is_some() {
        return Err(Error::invalid_input(
            "tags copied from the source (CopyTags::Copy) cannot be combined with explicit tags",
        ));
    }
    Ok(())
}

impl BlobClient {
    /// Put Blob From URL: replaces this block blob with the content of `source` (up to
    /// 5000 MiB), synchronously. Destination conditions go in `options.conditions`, source
    /// conditions in the [`CopySource`] (including `x-ms-source-if-tags`).
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::Conditions;
    /// use azstore::blob::{CopySource, PutFromUrlOptions};
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(600))?;
    /// let options = PutFromUrlOptions::new(Conditions::if_not_exists()).content_type("image/png");
    /// dest.put_blob_from_url(&CopySource::url(url)?, &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_blob_from_url(
        &self,
        source: &CopySource,
        options: &PutFromUrlOptions,
    ) -> Result<WriteResult> {
        options
            .conditions
            .check(Allowed::ALL, "Put Blob From URL")?;
        check_tags_mode(options.tags, &options.write)?;
        let req = self
            .write_request(Method::Put, "Put Blob From URL")?
            .header("x-ms-blob-type", "BlockBlob")
            .conditions(&options.conditions)
            .header_opt(
                "x-ms-copy-source-blob-properties",
                options.copy_source_properties.map(|b| b.to_string()),
            )
            .header_opt(
                "x-ms-copy-source-tag-option",
                options.tags.map(CopyTags::header_value),
            );
        let req = options.write.apply(req, WriteKind::PutBlobFromUrl)?;
        let req = source.apply(req, SourceUse::Blob)?;
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }

    /// Put Block From URL: stages block `id` from `source` (optionally a range of it, at most
    /// 4000 MiB). Accepts only a lease id on the destination; does not change the ETag.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{BlockId, BlockRef, CommitOptions, CopySource};
    /// // Assemble the destination from the first and last MiB of a large source.
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(600))?;
    /// let size = source.get_properties().await?.content_length;
    /// let ids = [BlockId::numbered("join", 0)?, BlockId::numbered("join", 1)?];
    /// dest.put_block_from_url(&ids[0], &CopySource::url(url.clone())?.range(0..1 << 20), &Conditions::none()).await?;
    /// dest.put_block_from_url(&ids[1], &CopySource::url(url)?.range(size - (1 << 20)..size), &Conditions::none()).await?;
    /// let blocks: Vec<BlockRef> = ids.into_iter().map(BlockRef::Uncommitted).collect();
    /// dest.put_block_list(&blocks, &CommitOptions::new(Conditions::none())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_block_from_url(
        &self,
        id: &BlockId,
        source: &CopySource,
        conditions: &Conditions,
    ) -> Result<()> {
        conditions.check(Allowed::LEASE_ONLY, "Put Block From URL")?;
        if let Some(r) = &source.range {
            if r.end.saturating_sub(r.start) > crate::blob::MAX_BLOCK_SIZE {
                return Err(Error::invalid_input("a block must be 1 byte to 4000 MiB"));
            }
        }
        let req = self
            .write_request(Method::Put, "Put Block From URL")?
            .query("comp", "block")
            .query("blockid", id.as_str())
            .conditions(conditions);
        let req = source.apply(req, SourceUse::Block)?;
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Put Page From URL: writes the source range (512-byte aligned, at most 4 MiB) to this
    /// page blob at `offset`, under the destination conditions and sequence-number conditions
    /// of `options`.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{CopySource, PageWriteOptions};
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(600))?;
    /// // Copy the source's first 4 MiB into the destination page blob at the same offset.
    /// let from = CopySource::url(url)?.range(0..4 << 20);
    /// dest.put_pages_from_url(0, &from, &PageWriteOptions::default().conditions(Conditions::none())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_pages_from_url(
        &self,
        offset: u64,
        source: &CopySource,
        options: &PageWriteOptions,
    ) -> Result<PageWriteResult> {
        options
            .conditions
            .check(Allowed::ALL, "Put Page From URL")?;
        if options.checksum != crate::blob::Checksum::None {
            return Err(Error::invalid_input(
                "Put Page From URL sends no body; check the source with CopySource::content_md5 or content_crc64",
            ));
        }
        let Some(r) = source.range.clone() else {
            return Err(Error::invalid_input(
                "Put Page From URL needs a source range",
            ));
        };
        let len = r.end.saturating_sub(r.start);
        check_aligned("offset", offset)?;
        check_aligned("source offset", r.start)?;
        check_aligned("length", len)?;
        if len == 0 || len > crate::blob::MAX_PUT_PAGE {
            return Err(Error::invalid_input(
                "Put Page From URL writes 512 bytes to 4 MiB",
            ));
        }
        let req = self.put_page_request("Put Page From URL", "update", offset, len)?;
        let req = options.apply(req)?;
        let req = source.apply(req, SourceUse::Page)?;
        let resp = self.pipeline.send(req).await?;
        PageWriteResult::from_response(&resp)
    }
}
