//! The standard HTTP headers stored with a blob or a file ([`HttpHeaders`]) as each Storage
//! service spells them on a write: `x-ms-blob-content-type` for Set Blob Properties and blob
//! writes, `x-ms-content-type` for Create File and Set File Properties.

use crate::http::Request;
use crate::http_headers::HttpHeaders;

impl HttpHeaders {
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
