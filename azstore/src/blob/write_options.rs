//! The options every blob write shares: HTTP headers, metadata, access tier, index tags and
//! encryption scope — one type, [`BlobWriteOptions`], carried by [`PutOptions`],
//! [`UploadOptions`], [`CommitOptions`], [`CreateOptions`], [`CopyOptions`] and
//! [`PutFromUrlOptions`], each of which also gets the same builder methods.
//!
//! ```no_run
//! # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::blob::{AccessTier, PutOptions};
//! use azstore::Conditions;
//! let opts = PutOptions::new(Conditions::if_not_exists())
//!     .content_type("text/html")
//!     .cache_control("max-age=3600")
//!     .meta("author", "ada")
//!     .tag("status", "draft")
//!     .tier(AccessTier::Cool);
//! blob.put("<h1>hi</h1>", &opts).await?;
//! # Ok(()) }
//! ```
//!
//! [`PutOptions`]: crate::blob::PutOptions
//! [`UploadOptions`]: crate::blob::UploadOptions
//! [`CommitOptions`]: crate::blob::CommitOptions
//! [`CreateOptions`]: crate::blob::CreateOptions
//! [`CopyOptions`]: crate::blob::CopyOptions
//! [`PutFromUrlOptions`]: crate::blob::PutFromUrlOptions

use std::collections::BTreeMap;

use crate::blob::tags::{Tags, validate_tags};
use crate::error::{Error, Result};
use crate::http::Request;
use crate::http::request::encode_query_value;
use crate::http_headers::HttpHeaders;
use crate::names::validate_metadata;
use crate::storage::StorageRequest;
use crate::storage::http_headers::HeaderNames;

/// An access tier (`x-ms-access-tier`). Block blobs take the standard tiers, page blobs on
/// premium accounts the `P*` tiers; azstore refuses the wrong kind before sending.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::{AccessTier, PutOptions};
/// blob.put("cold data", &PutOptions::new(azstore::Conditions::none()).tier(AccessTier::Cold)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AccessTier {
    /// Frequently accessed data.
    Hot,
    /// Infrequently accessed data (30 days minimum).
    Cool,
    /// Rarely accessed data (90 days minimum).
    Cold,
    /// Offline; must be rehydrated before it can be read.
    Archive,
    /// A premium page blob tier: `P4`, `P6`, `P10`, … `P80` (the number is validated).
    Premium(u16),
}

const PREMIUM: [u16; 11] = [4, 6, 10, 15, 20, 30, 40, 50, 60, 70, 80];

impl AccessTier {
    /// The header value.
    ///
    /// ```
    /// use azstore::blob::AccessTier;
    /// assert_eq!(AccessTier::Cool.as_str(), "Cool");
    /// assert_eq!(AccessTier::Premium(10).as_str(), "P10");
    /// ```
    pub fn as_str(&self) -> std::borrow::Cow<'static, str> {
        match self {
            AccessTier::Hot => "Hot".into(),
            AccessTier::Cool => "Cool".into(),
            AccessTier::Cold => "Cold".into(),
            AccessTier::Archive => "Archive".into(),
            AccessTier::Premium(n) => format!("P{n}").into(),
        }
    }

    /// Parses a tier as the service spells it (`Hot`, `Cool`, `Cold`, `Archive`, `P10`, …).
    ///
    /// ```
    /// use azstore::blob::AccessTier;
    /// assert_eq!(AccessTier::parse("Archive"), Some(AccessTier::Archive));
    /// assert_eq!(AccessTier::parse("P30"), Some(AccessTier::Premium(30)));
    /// ```
    pub fn parse(s: &str) -> Option<AccessTier> {
        match s {
            "Hot" => Some(AccessTier::Hot),
            "Cool" => Some(AccessTier::Cool),
            "Cold" => Some(AccessTier::Cold),
            "Archive" => Some(AccessTier::Archive),
            p => {
                let n: u16 = p.strip_prefix('P')?.parse().ok()?;
                PREMIUM.contains(&n).then_some(AccessTier::Premium(n))
            }
        }
    }

    /// Whether this is a premium page-blob tier.
    ///
    /// ```
    /// use azstore::blob::AccessTier;
    /// assert!(AccessTier::Premium(4).is_premium());
    /// assert!(!AccessTier::Hot.is_premium());
    /// ```
    pub fn is_premium(&self) -> bool {
        matches!(self, AccessTier::Premium(_))
    }

    pub(crate) fn validate(&self) -> Result<()> {
        match self {
            AccessTier::Premium(n) if !PREMIUM.contains(n) => Err(Error::invalid_input(format!(
                "P{n} is not a premium page blob tier (P4, P6, P10, P15, P20, P30, P40, P50, P60, P70, P80)"
            ))),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for AccessTier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.as_str())
    }
}

/// What a blob write stores besides the content. Every field is optional; what an operation
/// cannot take is refused with [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput)
/// before anything is sent (for example HTTP headers on Copy Blob, which copies the source's,
/// or an access tier on an append blob).
///
/// ```
/// use azstore::Conditions;
/// use azstore::blob::{AccessTier, BlobWriteOptions, PutOptions};
/// let mut shared = BlobWriteOptions::default();
/// shared.tier = Some(AccessTier::Cool);
/// shared.metadata.insert("source".into(), "import".into());
/// let put = PutOptions::new(Conditions::if_not_exists()).write_options(shared);
/// # let _ = put;
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub struct BlobWriteOptions {
    /// Standard HTTP headers stored with the blob (`x-ms-blob-content-*`,
    /// `x-ms-blob-cache-control`); `content_md5` is the *stored* MD5, not a transfer check
    /// (see [`Checksum`](crate::blob::Checksum) for that).
    pub headers: HttpHeaders,
    /// User metadata (`x-ms-meta-*`), replacing any existing metadata.
    pub metadata: BTreeMap<String, String>,
    /// Access tier (`x-ms-access-tier`).
    pub tier: Option<AccessTier>,
    /// Index tags (`x-ms-tags`), replacing any existing tags. `None` leaves tags out of the
    /// request (a new blob has none); `Some(empty)` is sent as no tags.
    pub tags: Option<Tags>,
    /// Encryption scope (`x-ms-encryption-scope`) the service encrypts the data with.
    pub encryption_scope: Option<String>,
}

/// The write operations that take [`BlobWriteOptions`], for checking what each accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WriteKind {
    PutBlob,
    PutBlockList,
    CreateAppend,
    CreatePage,
    CopyBlob,
    CopyFromUrl,
    PutBlobFromUrl,
}

impl WriteKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            WriteKind::PutBlob => "Put Blob",
            WriteKind::PutBlockList => "Put Block List",
            WriteKind::CreateAppend => "Put Blob (append)",
            WriteKind::CreatePage => "Put Blob (page)",
            WriteKind::CopyBlob => "Copy Blob",
            WriteKind::CopyFromUrl => "Copy Blob From URL",
            WriteKind::PutBlobFromUrl => "Put Blob From URL",
        }
    }
}

/// Encodes tags as `x-ms-tags` wants them: a URL query string, `k1=v1&k2=v2`.
pub(crate) fn tags_header(tags: &Tags) -> String {
    let mut s = String::new();
    for (k, v) in tags {
        if !s.is_empty() {
            s.push('&');
        }
        s.push_str(&encode_query_value(k));
        s.push('=');
        s.push_str(&encode_query_value(v));
    }
    s
}

impl BlobWriteOptions {
    /// Checks these options for `kind` and adds their headers to `req`.
    pub(crate) fn apply(&self, mut req: Request, kind: WriteKind) -> Result<Request> {
        let op = kind.name();
        validate_metadata(&self.metadata)?;
        if self.headers != HttpHeaders::default()
            && matches!(kind, WriteKind::CopyBlob | WriteKind::CopyFromUrl)
        {
            return Err(Error::invalid_input(format!(
                "{op} copies the source's HTTP headers and takes none; set them afterwards \
                 with set_http_headers, or use put_blob_from_url"
            )));
        }
        if let Some(tier) = &self.tier {
            tier.validate()?;
            let refused = match kind {
                WriteKind::CreateAppend => Some("append blobs have no access tier"),
                WriteKind::CreatePage if !tier.is_premium() => {
                    Some("page blobs take only premium tiers (P4-P80)")
                }
                WriteKind::PutBlob | WriteKind::PutBlockList | WriteKind::PutBlobFromUrl
                    if tier.is_premium() =>
                {
                    Some("block blobs take Hot, Cool, Cold or Archive")
                }
                _ => None,
            };
            if let Some(why) = refused {
                return Err(Error::invalid_input(format!(
                    "{op} with access tier {tier}: {why}"
                )));
            }
            req = req.header("x-ms-access-tier", tier.as_str());
        }
        if let Some(tags) = &self.tags {
            validate_tags(tags)?;
            req = req.header("x-ms-tags", tags_header(tags));
        }
        let req = scope_header(req, self.encryption_scope.as_deref())?;
        Ok(self
            .headers
            .apply(req.metadata(&self.metadata), HeaderNames::Blob))
    }
}

/// Adds the encryption scope a write names (`x-ms-encryption-scope`), refusing a name the
/// service could not take.
pub(crate) fn scope_header(req: Request, scope: Option<&str>) -> Result<Request> {
    match scope {
        Some(scope) => {
            check_scope(scope)?;
            Ok(req.header("x-ms-encryption-scope", scope.to_string()))
        }
        None => Ok(req),
    }
}

/// Refuses an encryption scope name the service could not take (empty, control characters).
pub(crate) fn check_scope(scope: &str) -> Result<()> {
    if scope.is_empty() || scope.contains(|c: char| c.is_control()) {
        return Err(Error::invalid_input(
            "encryption scope must be a non-empty name",
        ));
    }
    Ok(())
}

/// Adds the [`BlobWriteOptions`] builder methods to an options type with a `write` field.
macro_rules! write_builders {
    ($($ty:ty),* $(,)?) => {$(
        impl $ty {
            /// Replaces all write options at once (headers, metadata, tier, tags,
            /// encryption scope), e.g. to reuse one [`BlobWriteOptions`](crate::blob::BlobWriteOptions)
            /// for several writes. Default: [`BlobWriteOptions::default()`](crate::blob::BlobWriteOptions),
            /// which stores no headers, no metadata, no tags, and leaves tier and scope to the
            /// account's defaults.
            ///
            /// ```
            /// use azstore::blob::*;
            /// let shared = BlobWriteOptions::default();
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).write_options(shared.clone());")]
            /// assert_eq!(options.write, shared);
            /// ```
            pub fn write_options(mut self, v: $crate::blob::BlobWriteOptions) -> Self {
                self.write = v;
                self
            }

            /// The HTTP headers stored with the blob and served with every read, all at
            /// once (default: none stored; the service then serves
            /// `application/octet-stream`). Replaces what the setters below set.
            ///
            /// ```
            /// use azstore::blob::*;
            /// use azstore::http_headers::HttpHeaders;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).http_headers(HttpHeaders::default().content_type(\"text/csv\"));")]
            /// assert_eq!(options.write.headers.content_type.as_deref(), Some("text/csv"));
            /// ```
            pub fn http_headers(mut self, v: $crate::http_headers::HttpHeaders) -> Self {
                self.write.headers = v;
                self
            }

            /// The `Content-Type` stored with the blob and served with every read
            /// (default: none; served as `application/octet-stream`).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).content_type(\"application/json\");")]
            /// assert_eq!(options.write.headers.content_type.as_deref(), Some("application/json"));
            /// ```
            pub fn content_type(mut self, v: impl Into<String>) -> Self {
                self.write.headers.content_type = Some(v.into());
                self
            }

            /// The `Content-Encoding` stored and served with every read, e.g. `gzip` for
            /// content you compressed (default: none; azstore does not compress).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).content_encoding(\"gzip\");")]
            /// assert_eq!(options.write.headers.content_encoding.as_deref(), Some("gzip"));
            /// ```
            pub fn content_encoding(mut self, v: impl Into<String>) -> Self {
                self.write.headers.content_encoding = Some(v.into());
                self
            }

            /// The `Content-Language` stored and served with every read (default: none).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).content_language(\"fr-CA\");")]
            /// assert_eq!(options.write.headers.content_language.as_deref(), Some("fr-CA"));
            /// ```
            pub fn content_language(mut self, v: impl Into<String>) -> Self {
                self.write.headers.content_language = Some(v.into());
                self
            }

            /// The `Cache-Control` stored and served with every read, for browsers and CDNs
            /// (default: none).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).cache_control(\"public, max-age=3600\");")]
            /// assert!(options.write.headers.cache_control.is_some());
            /// ```
            pub fn cache_control(mut self, v: impl Into<String>) -> Self {
                self.write.headers.cache_control = Some(v.into());
                self
            }

            /// The `Content-Disposition` stored and served with every read, e.g.
            /// `attachment; filename="a.csv"` (default: none).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).content_disposition(\"attachment; filename=a.csv\");")]
            /// assert!(options.write.headers.content_disposition.is_some());
            /// ```
            pub fn content_disposition(mut self, v: impl Into<String>) -> Self {
                self.write.headers.content_disposition = Some(v.into());
                self
            }

            /// The `Content-MD5` stored with the blob (base64 of the 16-byte digest), kept as
            /// given and served back to readers. It is not checked against the bytes sent
            /// (a transactional checksum is). Default: none (a single Put Blob then stores
            /// the MD5 the service computes).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).stored_content_md5(md5_base64(b\"hello\"));")]
            /// assert_eq!(options.write.headers.content_md5.as_deref(), Some("XUFAKrxLKna5cZ2REBfFkg=="));
            /// ```
            pub fn stored_content_md5(mut self, v: impl Into<String>) -> Self {
                self.write.headers.content_md5 = Some(v.into());
                self
            }

            /// Adds a metadata pair (`x-ms-meta-<key>`). The blob's metadata becomes
            /// exactly the pairs given (default: none given, so a put or commit leaves the
            /// blob without metadata, and a copy takes the source's).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).meta(\"owner\", \"team-a\").meta(\"source\", \"import\");")]
            /// assert_eq!(options.write.metadata.len(), 2);
            /// ```
            pub fn meta(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
                self.write.metadata.insert(key.into(), value.into());
                self
            }

            /// The access tier of the new content (Hot, Cool, Cold, Archive for block blobs;
            /// P4–P80 for premium page blobs; checked before sending). Default: the
            /// account's default tier.
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).tier(AccessTier::Cool);")]
            /// assert_eq!(options.write.tier, Some(AccessTier::Cool));
            /// ```
            pub fn tier(mut self, v: $crate::blob::AccessTier) -> Self {
                self.write.tier = Some(v);
                self
            }

            /// The encryption scope that encrypts the content (it must exist in the
            /// account). Default: the container's default scope, else the account's
            /// encryption.
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).encryption_scope(\"customer-keys\");")]
            /// assert_eq!(options.write.encryption_scope.as_deref(), Some("customer-keys"));
            /// ```
            pub fn encryption_scope(mut self, v: impl Into<String>) -> Self {
                self.write.encryption_scope = Some(v.into());
                self
            }
            /// Adds an index tag (`x-ms-tags`); the blob's tags become exactly the ones given.
            /// Default: none sent (a new blob has no tags).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", stringify!($ty), "::new(azstore::Conditions::none()).tag(\"project\", \"apollo\");")]
            /// assert_eq!(options.write.tags.as_ref().and_then(|t| t.get("project")).map(String::as_str), Some("apollo"));
            /// ```
            pub fn tag(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
                self.write
                    .tags
                    .get_or_insert_with(Default::default)
                    .insert(key.into(), value.into());
                self
            }
        }
    )*};
}
pub(crate) use write_builders;

/// Adds the `checksum` builder method to the options of a write that sends data (Put Blob,
/// Put Block, Append Block, Put Page): an options type with a `checksum` field, given with
/// how an example builds it.
macro_rules! checksum_builder {
    ($ty:ty, $example:literal) => {
        impl $ty {
            /// The transactional checksum azstore computes over the data the request sends
            /// (the body, block or pages) and sends with it, so that the service refuses (400
            /// `Md5Mismatch` / `Crc64Mismatch`) bytes damaged on the way. Default
            /// [`Checksum::None`](crate::blob::Checksum::None): TLS alone protects the
            /// transfer.
            ///
            /// ```
            /// use azstore::Conditions;
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", $example, ".checksum(Checksum::Crc64);")]
            /// assert_eq!(options.checksum, Checksum::Crc64);
            /// ```
            pub fn checksum(mut self, v: $crate::blob::Checksum) -> Self {
                self.checksum = v;
                self
            }
        }
    };
}
pub(crate) use checksum_builder;

/// Adds the `encryption_scope` builder method to the options of a write to an existing blob
/// (Append Block, Set Blob Metadata): an options type with an `encryption_scope` field, given
/// with how an example builds it.
macro_rules! existing_scope_builder {
    ($ty:ty, $example:literal) => {
        impl $ty {
            /// The blob's encryption scope (`x-ms-encryption-scope`), which a write must name
            /// when the blob was written in a scope other than the account's default (default:
            /// none sent).
            ///
            /// ```
            /// use azstore::blob::*;
            #[doc = concat!("let options = ", $example, ".encryption_scope(\"customer-keys\");")]
            /// assert_eq!(options.encryption_scope.as_deref(), Some("customer-keys"));
            /// ```
            pub fn encryption_scope(mut self, v: impl Into<String>) -> Self {
                self.encryption_scope = Some(v.into());
                self
            }
        }
    };
}
pub(crate) use existing_scope_builder;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    #[test]
    fn headers_and_refusals() {
        let w = BlobWriteOptions {
            headers: HttpHeaders::default().cache_control("no-cache"),
            tier: Some(AccessTier::Cool),
            tags: Some(Tags::from([
                ("a b".into(), "x/y".into()),
                ("k".into(), "".into()),
            ])),
            encryption_scope: Some("scope1".into()),
            ..BlobWriteOptions::default()
        };
        let r = w
            .apply(Request::new(Method::Put, "c/b"), WriteKind::PutBlob)
            .unwrap();
        assert_eq!(r.header_value("x-ms-blob-cache-control"), Some("no-cache"));
        assert_eq!(r.header_value("x-ms-access-tier"), Some("Cool"));
        assert_eq!(r.header_value("x-ms-tags"), Some("a%20b=x%2Fy&k="));
        assert_eq!(r.header_value("x-ms-encryption-scope"), Some("scope1"));
        // Copy Blob takes no HTTP headers; append blobs no tier; page blobs only P tiers.
        assert!(
            w.apply(Request::new(Method::Put, "c/b"), WriteKind::CopyBlob)
                .is_err()
        );
        for (tier, kind, ok) in [
            (AccessTier::Hot, WriteKind::CreateAppend, false),
            (AccessTier::Hot, WriteKind::CreatePage, false),
            (AccessTier::Premium(10), WriteKind::CreatePage, true),
            (AccessTier::Premium(11), WriteKind::CreatePage, false),
            (AccessTier::Premium(10), WriteKind::PutBlob, false),
        ] {
            let w = BlobWriteOptions {
                tier: Some(tier.clone()),
                ..Default::default()
            };
            let r = w.apply(Request::new(Method::Put, "c/b"), kind);
            assert_eq!(r.is_ok(), ok, "{tier:?} on {kind:?}");
        }
        assert_eq!(AccessTier::parse("P30"), Some(AccessTier::Premium(30)));
        assert_eq!(AccessTier::parse("Archive"), Some(AccessTier::Archive));
        assert_eq!(AccessTier::parse("P31"), None);
    }
}
