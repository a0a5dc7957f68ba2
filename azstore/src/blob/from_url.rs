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

use std::fmt;
use std::ops::Range;

use crate::blob::block::BlockId;
use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::limits::{check_aligned, validate_source_url};
use crate::blob::page::{PageWriteOptions, PageWriteResult};
use crate::blob::write_options::{BlobWriteOptions, WriteKind, write_builders};
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::http::{Method, Request};

/// A bearer token the service presents to the source (`x-ms-copy-source-authorization`).
/// A secret: `Debug` shows only that it is set.
///
/// ```
/// use azstore::blob::SourceAuthorization;
/// let auth = SourceAuthorization::bearer("eyJ0eXAiOiJKV1Qi")?;
/// assert!(!format!("{auth:?}").contains("eyJ0"));
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone)]
pub struct SourceAuthorization(String);

impl SourceAuthorization {
    /// An OAuth bearer token (an Entra ID access token for `https://storage.azure.com/`).
    ///
    /// ```
    /// use azstore::blob::SourceAuthorization;
    /// assert!(SourceAuthorization::bearer("").is_err());
    /// assert!(SourceAuthorization::bearer("a b").is_err());
    /// ```
    pub fn bearer(token: impl AsRef<str>) -> Result<SourceAuthorization> {
        let token = token.as_ref().trim();
        if token.is_empty() || token.contains(|c: char| c.is_control() || c == ' ') {
            return Err(Error::invalid_input(
                "a source bearer token must be non-empty, without spaces or control characters",
            ));
        }
        Ok(SourceAuthorization(format!("Bearer {token}")))
    }

    pub(crate) fn header_value(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for SourceAuthorization {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SourceAuthorization(Bearer <redacted>)")
    }
}

/// Which from-URL operation a [`CopySource`] is used for (each accepts a different subset).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SourceUse {
    Blob,
    Block,
    Page,
}

/// The source of a from-URL write. Its `Debug` output hides a SAS signature in the URL and the
/// bearer token.
///
/// ```no_run
/// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::Conditions;
/// use azstore::blob::{CopySource, PutFromUrlOptions};
/// let props = source.get_properties().await?;
/// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(600))?;
/// // Copy exactly the version we looked at.
/// let from = CopySource::url(url)?.conditions(Conditions::if_match(&props.etag));
/// dest.put_blob_from_url(&from, &PutFromUrlOptions::new(Conditions::none())).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
#[must_use]
pub struct CopySource {
    pub(crate) url: String,
    pub(crate) authorization: Option<SourceAuthorization>,
    conditions: Conditions,
    pub(crate) range: Option<Range<u64>>,
    content_md5: Option<String>,
    pub(crate) content_crc64: Option<String>,
}

impl fmt::Debug for CopySource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CopySource")
            .field("url", &crate::redact::redact(&self.url))
            .field("authorization", &self.authorization)
            .field("conditions", &self.conditions)
            .field("range", &self.range)
            .field("content_md5", &self.content_md5)
            .field("content_crc64", &self.content_crc64)
            .finish()
    }
}

impl CopySource {
    /// A source URL: public, or carrying a SAS (see [`BlobClient::sas_url`]), or to be read
    /// with [`CopySource::bearer`].
    ///
    /// ```
    /// use azstore::blob::CopySource;
    /// let source = CopySource::url("https://acct.blob.core.windows.net/public/logo.png")?;
    /// assert!(CopySource::url("ftp://example.com/x").is_err());
    /// # let _ = source;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn url(url: impl Into<String>) -> Result<CopySource> {
        let url = url.into();
        validate_source_url(&url)?;
        Ok(CopySource {
            url,
            authorization: None,
            conditions: Conditions::none(),
            range: None,
            content_md5: None,
            content_crc64: None,
        })
    }

    /// Has the service read the source with this bearer token (default: none; the
    /// source is then public or carries a SAS).
    ///
    /// ```
    /// use azstore::blob::{CopySource, SourceAuthorization};
    /// let token = std::env::var("SOURCE_TOKEN").unwrap_or_else(|_| "eyJ0".into());
    /// let source = CopySource::url("https://other.blob.core.windows.net/data/a.bin")?
    ///     .bearer(SourceAuthorization::bearer(token)?);
    /// # let _ = source;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn bearer(mut self, v: SourceAuthorization) -> Self {
        self.authorization = Some(v);
        self
    }

    /// Conditions on the source (`x-ms-source-if-match`, `-none-match`, `-modified-since`,
    /// `-unmodified-since`, and `x-ms-source-if-tags` where the operation accepts it). A
    /// source condition that does not hold fails with 412 `SourceConditionNotMet` (or 304
    /// for `if_none_match`/`if_modified_since`, as the service answers). Default: none.
    ///
    /// ```
    /// use azstore::{Conditions, ETag};
    /// use azstore::blob::CopySource;
    /// let etag = ETag::new("\"0x8DCB1\"");
    /// let source = CopySource::url("https://acct.blob.core.windows.net/c/a.bin")?.conditions(Conditions::if_match(&etag));
    /// # let _ = source;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Reads only this half-open byte range of the source (`x-ms-source-range`). Default:
    /// the whole source.
    ///
    /// ```
    /// let first_mib = azstore::blob::CopySource::url("https://acct.blob.core.windows.net/c/a.bin")?.range(0..1 << 20);
    /// # let _ = first_mib;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn range(mut self, v: Range<u64>) -> Self {
        self.range = Some(v);
        self
    }

    /// The service checks that what it read from the source has this MD5 (base64), failing
    /// with 400 `Md5Mismatch` otherwise (`x-ms-source-content-md5`). Default: not checked.
    ///
    /// ```
    /// use azstore::blob::{CopySource, md5_base64};
    /// let expected = md5_base64(b"the bytes we expect");
    /// let source = CopySource::url("https://acct.blob.core.windows.net/c/a.bin")?.content_md5(expected);
    /// # let _ = source;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn content_md5(mut self, v: impl Into<String>) -> Self {
        self.content_md5 = Some(v.into());
        self
    }

    /// The service checks that what it read from the source has this CRC-64 (base64, see
    /// [`crc64_base64`](crate::blob::crc64_base64)), failing with 400 `Crc64Mismatch`
    /// otherwise (`x-ms-source-content-crc64`). Default: not checked.
    ///
    /// ```
    /// use azstore::blob::{CopySource, crc64_base64};
    /// let source = CopySource::url("https://acct.blob.core.windows.net/c/a.bin")?
    ///     .content_crc64(crc64_base64(b"the bytes we expect"));
    /// # let _ = source;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn content_crc64(mut self, v: impl Into<String>) -> Self {
        self.content_crc64 = Some(v.into());
        self
    }

    /// The source URL (it may contain a SAS signature: treat it as a secret).
    ///
    /// ```
    /// let source = azstore::blob::CopySource::url("https://acct.blob.core.windows.net/c/a.bin")?;
    /// assert_eq!(source.url_str(), "https://acct.blob.core.windows.net/c/a.bin");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn url_str(&self) -> &str {
        &self.url
    }

    /// Refuses what a File service Put Range From URL cannot take (ETag conditions and an MD5
    /// on the source).
    pub(crate) fn check_for_file_range(&self) -> Result<()> {
        if !self.conditions.is_unconditional() {
            return Err(Error::invalid_input(
                "Put Range From URL takes no ETag, date or tags conditions on the source",
            ));
        }
        if self.content_md5.is_some() {
            return Err(Error::invalid_input(
                "Put Range From URL checks the source with a CRC-64 only",
            ));
        }
        Ok(())
    }

    /// Adds the source headers for `what`, refusing what that operation does not accept.
    pub(crate) fn apply(&self, mut req: Request, what: SourceUse) -> Result<Request> {
        let op = match what {
            SourceUse::Blob => "Put Blob From URL",
            SourceUse::Block => "Put Block From URL",
            SourceUse::Page => "Put Page From URL",
        };
        if self.conditions.if_tags.is_some() && what != SourceUse::Blob {
            return Err(Error::invalid_input(format!(
                "{op} does not accept a tags condition on the source"
            )));
        }
        match (&self.range, what) {
            (Some(_), SourceUse::Blob) => {
                return Err(Error::invalid_input(format!(
                    "{op} copies the whole source; use put_block_from_url for a range"
                )));
            }
            (None, SourceUse::Page) => {
                return Err(Error::invalid_input(
                    "Put Page From URL needs a source range",
                ));
            }
            (Some(r), _) => {
                if r.start >= r.end {
                    return Err(Error::invalid_input("source range must not be empty"));
                }
                req = req.header("x-ms-source-range", crate::http::range_header(r));
            }
            (None, _) => {}
        }
        if self.content_md5.is_some() && self.content_crc64.is_some() {
            return Err(Error::invalid_input(
                "give the source an MD5 or a CRC-64, not both",
            ));
        }
        Ok(req
            .source_conditions(&self.conditions)?
            .header("x-ms-copy-source", self.url.clone())
            .header_opt(
                "x-ms-copy-source-authorization",
                self.authorization
                    .as_ref()
                    .map(|a| a.header_value().to_string()),
            )
            .header_opt("x-ms-source-content-md5", self.content_md5.clone())
            .header_opt("x-ms-source-content-crc64", self.content_crc64.clone()))
    }
}

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
