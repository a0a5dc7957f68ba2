//! The standard HTTP headers stored with a file, on Create File and Set File Properties.
//!
//! ```no_run
//! # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::FileHttpHeaders;
//! let h = FileHttpHeaders::default()
//!     .content_type("text/csv")
//!     .cache_control("no-cache")
//!     .content_disposition("attachment; filename=report.csv");
//! file.set_http_headers(&h, None).await?; // replaces all of them
//! # Ok(()) }
//! ```

use crate::conditions::LeaseId;
use crate::error::Result;
use crate::file::client::FileClient;
use crate::file::models::{FileProperties, FileWrite};
use crate::http::{Method, Request};

/// HTTP headers stored with a file (`x-ms-content-type`, `x-ms-content-encoding`,
/// `x-ms-content-language`, `x-ms-cache-control`, `x-ms-content-disposition`,
/// `x-ms-content-md5`). Set File Properties replaces all of them: a field left `None` is
/// cleared.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
pub struct FileHttpHeaders {
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
    /// `Content-MD5` (base64 of the 16-byte digest), stored as given.
    pub content_md5: Option<String>,
}

impl FileHttpHeaders {
    /// Sets `Content-Type`.
    pub fn content_type(mut self, v: impl Into<String>) -> Self {
        self.content_type = Some(v.into());
        self
    }

    /// Sets `Content-Encoding`.
    pub fn content_encoding(mut self, v: impl Into<String>) -> Self {
        self.content_encoding = Some(v.into());
        self
    }

    /// Sets `Content-Language`.
    pub fn content_language(mut self, v: impl Into<String>) -> Self {
        self.content_language = Some(v.into());
        self
    }

    /// Sets `Cache-Control`.
    pub fn cache_control(mut self, v: impl Into<String>) -> Self {
        self.cache_control = Some(v.into());
        self
    }

    /// Sets `Content-Disposition`.
    pub fn content_disposition(mut self, v: impl Into<String>) -> Self {
        self.content_disposition = Some(v.into());
        self
    }

    /// Sets the stored `Content-MD5`.
    pub fn content_md5(mut self, v: impl Into<String>) -> Self {
        self.content_md5 = Some(v.into());
        self
    }

    /// The headers of a file as read by Get File Properties (to change one, keep the rest).
    pub fn from_properties(p: &FileProperties) -> FileHttpHeaders {
        FileHttpHeaders {
            content_type: p.content_type.clone(),
            content_encoding: p.content_encoding.clone(),
            content_language: p.content_language.clone(),
            cache_control: p.cache_control.clone(),
            content_disposition: p.content_disposition.clone(),
            content_md5: p.content_md5.clone(),
        }
    }

    pub(crate) fn apply(&self, req: Request) -> Request {
        req.header_opt("x-ms-content-type", self.content_type.clone())
            .header_opt("x-ms-content-encoding", self.content_encoding.clone())
            .header_opt("x-ms-content-language", self.content_language.clone())
            .header_opt("x-ms-cache-control", self.cache_control.clone())
            .header_opt("x-ms-content-disposition", self.content_disposition.clone())
            .header_opt("x-ms-content-md5", self.content_md5.clone())
    }
}

impl FileClient {
    /// Set File Properties: replaces the file's HTTP headers (all of them; see
    /// [`FileHttpHeaders`]). Last writer wins; a leased file needs the lease id.
    pub async fn set_http_headers(
        &self,
        headers: &FileHttpHeaders,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = headers.apply(self.request(Method::Put).query("comp", "properties"));
        let req = match lease {
            Some(l) => req.header("x-ms-lease-id", l.as_str()),
            None => req,
        };
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }
}
