//! The source of a write whose data the service reads from another URL ([`CopySource`]), and
//! the bearer token the service presents to it ([`SourceAuthorization`]): one model for Blob's
//! Put Blob / Block / Page From URL and File's Put Range From URL.

use std::fmt;
use std::ops::Range;

use crate::conditions::Conditions;
use crate::error::{Error, Result};
use crate::http::Request;
use crate::storage::SourceConditions;

/// Refuses a copy source that is not an `http(s)` URL (before any request is sent).
pub(crate) fn validate_source_url(url: &str) -> Result<()> {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return Err(Error::invalid_input("copy source must be an http(s) URL"));
    }
    if url.contains(|c: char| c.is_control() || c == ' ') {
        return Err(Error::invalid_input(
            "copy source URL must be percent-encoded (no spaces or control characters)",
        ));
    }
    Ok(())
}

/// Refuses an MD5 and a CRC-64 on one source: the service checks what it reads against one.
pub(crate) fn check_source_checksum(md5: Option<&str>, crc64: Option<&str>) -> Result<()> {
    if md5.is_some() && crc64.is_some() {
        return Err(Error::invalid_input(
            "give the source an MD5 or a CRC-64, not both",
        ));
    }
    Ok(())
}

/// Adds the checksum the service checks what it reads from the source against
/// (`x-ms-source-content-md5`, `x-ms-source-content-crc64`; base64).
pub(crate) fn source_checksum(req: Request, md5: Option<&str>, crc64: Option<&str>) -> Request {
    req.header_opt("x-ms-source-content-md5", md5)
        .header_opt("x-ms-source-content-crc64", crc64)
}

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
    Append,
}

/// The most Append Block From URL appends in one request.
const MAX_APPEND_FROM_URL: u64 = 4 * 1024 * 1024;

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
    /// A source URL: public, or carrying a SAS (see [`BlobClient::sas_url`](crate::blob::BlobClient::sas_url)), or to be read
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
            SourceUse::Append => "Append Block From URL",
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
                if what == SourceUse::Append && r.end - r.start > MAX_APPEND_FROM_URL {
                    return Err(Error::invalid_input(
                        "Append Block From URL appends at most 4 MiB",
                    ));
                }
                req = req.header("x-ms-source-range", crate::http::range_header(r));
            }
            (None, _) => {}
        }
        let (md5, crc64) = (self.content_md5.as_deref(), self.content_crc64.as_deref());
        check_source_checksum(md5, crc64)?;
        let req = req
            .source_conditions(&self.conditions)?
            .header("x-ms-copy-source", self.url.clone())
            .header_opt(
                "x-ms-copy-source-authorization",
                self.authorization
                    .as_ref()
                    .map(|a| a.header_value().to_string()),
            );
        Ok(source_checksum(req, md5, crc64))
    }
}
