//! The standard HTTP headers stored with a blob or a file: one type for both services, each
//! service writing them under its own header names (`x-ms-blob-content-type` for Set Blob
//! Properties and blob writes, `x-ms-content-type` for Create File and Set File Properties).
//!
//! ```
//! use azstore::http_headers::HttpHeaders;
//! let h = HttpHeaders::default()
//!     .content_type("text/csv")
//!     .cache_control("no-cache")
//!     .content_disposition("attachment; filename=report.csv");
//! assert_eq!(h.content_type.as_deref(), Some("text/csv"));
//! ```

use crate::http::Headers;

/// HTTP headers stored with a blob or a file. Set Blob Properties and Set File Properties
/// replace all of them: a field left `None` is cleared.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::http_headers::HttpHeaders;
/// // Keep what is stored, change one header (Set Blob Properties replaces all of them).
/// let props = blob.get_properties().await?;
/// let headers = HttpHeaders { cache_control: Some("max-age=3600".into()), ..props.http_headers };
/// blob.set_http_headers(&headers, &Conditions::if_match(&props.etag)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct HttpHeaders {
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Content-Encoding`.
    pub content_encoding: Option<String>,
    /// `Content-Language`.
    pub content_language: Option<String>,
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// The stored `Content-MD5` (base64 of the 16-byte digest), kept as given: not a check of
    /// the bytes sent (see `Checksum` for that).
    pub content_md5: Option<String>,
}

/// The headers' names as responses carry them.
const NAMES: [&str; 6] = [
    "content-type",
    "content-encoding",
    "content-language",
    "cache-control",
    "content-disposition",
    "content-md5",
];

impl HttpHeaders {
    /// The `Content-Type` stored and served with every read (default: none; a blob
    /// written without one is served as `application/octet-stream`).
    ///
    /// ```
    /// let h = azstore::http_headers::HttpHeaders::default().content_type("application/json");
    /// assert_eq!(h.content_type.as_deref(), Some("application/json"));
    /// ```
    pub fn content_type(mut self, v: impl Into<String>) -> Self {
        self.content_type = Some(v.into());
        self
    }

    /// The `Content-Encoding` served with every read, e.g. `gzip` for content stored
    /// compressed (default: none). azstore does not compress or decompress.
    ///
    /// ```
    /// let h = azstore::http_headers::HttpHeaders::default().content_encoding("gzip");
    /// assert_eq!(h.content_encoding.as_deref(), Some("gzip"));
    /// ```
    pub fn content_encoding(mut self, v: impl Into<String>) -> Self {
        self.content_encoding = Some(v.into());
        self
    }

    /// The `Content-Language` served with every read, e.g. `en-GB` (default: none).
    ///
    /// ```
    /// let h = azstore::http_headers::HttpHeaders::default().content_language("de-CH");
    /// assert_eq!(h.content_language.as_deref(), Some("de-CH"));
    /// ```
    pub fn content_language(mut self, v: impl Into<String>) -> Self {
        self.content_language = Some(v.into());
        self
    }

    /// The `Cache-Control` served with every read, for browsers and CDNs (default: none).
    ///
    /// ```
    /// let h = azstore::http_headers::HttpHeaders::default().cache_control("public, max-age=86400");
    /// assert!(h.cache_control.is_some());
    /// ```
    pub fn cache_control(mut self, v: impl Into<String>) -> Self {
        self.cache_control = Some(v.into());
        self
    }

    /// The `Content-Disposition` served with every read, e.g. to make browsers download
    /// under a file name (default: none).
    ///
    /// ```
    /// let h = azstore::http_headers::HttpHeaders::default()
    ///     .content_disposition("attachment; filename=\"report.csv\"");
    /// assert!(h.content_disposition.is_some());
    /// ```
    pub fn content_disposition(mut self, v: impl Into<String>) -> Self {
        self.content_disposition = Some(v.into());
        self
    }

    /// The `Content-MD5` stored with the content (base64 of the 16-byte digest), kept as
    /// given and served back to readers; it does not check the bytes sent (a transactional
    /// checksum does). Default: none, or what the service computed for a single-request
    /// upload.
    ///
    /// ```
    /// // MD5 of the empty string.
    /// let h = azstore::http_headers::HttpHeaders::default().content_md5("1B2M2Y8AsgTpgAmY7PhCfg==");
    /// assert!(h.content_md5.is_some());
    /// ```
    pub fn content_md5(mut self, v: impl Into<String>) -> Self {
        self.content_md5 = Some(v.into());
        self
    }

    /// The headers of a response (Get Blob/File Properties, Get Blob/File): absent ones are
    /// `None`.
    pub(crate) fn from_headers(h: &Headers) -> HttpHeaders {
        let mut out = HttpHeaders::default();
        for name in NAMES {
            if let Some(v) = h.get(name) {
                out.take_first(name, v);
            }
        }
        out
    }

    /// Stores the response header `name` (lower case) in its field unless that field is set
    /// already (the first value wins, as `Headers::get` does). `false` when `name` is not one
    /// of these headers.
    pub(crate) fn take_first(&mut self, name: &str, value: &str) -> bool {
        let field = match name {
            "content-type" => &mut self.content_type,
            "content-encoding" => &mut self.content_encoding,
            "content-language" => &mut self.content_language,
            "cache-control" => &mut self.cache_control,
            "content-disposition" => &mut self.content_disposition,
            "content-md5" => &mut self.content_md5,
            _ => return false,
        };
        if field.is_none() {
            *field = Some(value.to_string());
        }
        true
    }
}
