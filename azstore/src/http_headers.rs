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

use crate::http::{Headers, Request};

/// HTTP headers stored with a blob or a file. Set Blob Properties and Set File Properties
/// replace all of them: a field left `None` is cleared.
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
    setters! {
        /// Sets `Content-Type`.
        content_type => into content_type;
        /// Sets `Content-Encoding`.
        content_encoding => into content_encoding;
        /// Sets `Content-Language`.
        content_language => into content_language;
        /// Sets `Cache-Control`.
        cache_control => into cache_control;
        /// Sets `Content-Disposition`.
        content_disposition => into content_disposition;
        /// Sets the stored `Content-MD5`.
        content_md5 => into content_md5;
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

    /// Adds the set headers to `req` under the service's names (no name is built per
    /// request: this runs on every Put Blob).
    pub(crate) fn apply(&self, req: Request, names: HeaderNames) -> Request {
        [
            &self.content_type,
            &self.content_encoding,
            &self.content_language,
            &self.cache_control,
            &self.content_disposition,
            &self.content_md5,
        ]
        .into_iter()
        .zip(names.names())
        .fold(req, |req, (value, name)| match value {
            Some(v) => req.header(name, v.clone()),
            None => req,
        })
    }
}

/// Under which names a service stores the headers: `x-ms-blob-content-type` (Set Blob
/// Properties and blob writes) or `x-ms-content-type` (Create File, Set File Properties).
#[derive(Clone, Copy, Debug)]
pub(crate) enum HeaderNames {
    Blob,
    File,
}

impl HeaderNames {
    /// The names in [`HttpHeaders`]' field order.
    fn names(self) -> [&'static str; 6] {
        match self {
            HeaderNames::Blob => [
                "x-ms-blob-content-type",
                "x-ms-blob-content-encoding",
                "x-ms-blob-content-language",
                "x-ms-blob-cache-control",
                "x-ms-blob-content-disposition",
                "x-ms-blob-content-md5",
            ],
            HeaderNames::File => [
                "x-ms-content-type",
                "x-ms-content-encoding",
                "x-ms-content-language",
                "x-ms-cache-control",
                "x-ms-content-disposition",
                "x-ms-content-md5",
            ],
        }
    }
}
