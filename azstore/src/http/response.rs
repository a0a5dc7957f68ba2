//! Responses: header access and the success check. How a refusal reads is each backend's
//! edge's (`http/edge.rs`).

use bytes::Bytes;
use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};

/// Response headers (names are case-insensitive; ask with lower-case names). Values that
/// are not UTF-8 are treated as absent.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// let path = format!("{}/{}", blob.container_name(), blob.name());
/// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
/// println!("{:?} {:?}", resp.headers.etag(), resp.headers.get("content-type"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
pub struct Headers(http::HeaderMap);

fn utf8(v: &http::HeaderValue) -> Option<&str> {
    std::str::from_utf8(v.as_bytes()).ok()
}

impl Headers {
    /// Headers from name/value pairs; pairs that are not valid HTTP headers are dropped.
    pub(crate) fn from_pairs(pairs: Vec<(String, String)>) -> Headers {
        let mut map = http::HeaderMap::with_capacity(pairs.len());
        for (k, v) in pairs {
            if let (Ok(k), Ok(v)) = (
                http::HeaderName::from_bytes(k.as_bytes()),
                http::HeaderValue::from_str(&v),
            ) {
                map.append(k, v);
            }
        }
        Headers(map)
    }

    pub(crate) fn from_map(map: http::HeaderMap) -> Headers {
        Headers(map)
    }

    /// The first value of `name` (lower-case).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.get("x-ms-blob-type"));
    /// # Ok(()) }
    /// ```
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.get(name).and_then(utf8)
    }

    /// The value of `name`, or a decode error saying it is missing.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let kind = resp.headers.require("x-ms-blob-type")?;
    /// # let _ = kind;
    /// # Ok(()) }
    /// ```
    pub fn require(&self, name: &str) -> Result<&str> {
        self.get(name)
            .ok_or_else(|| Error::decode(format!("response is missing the {name} header")))
    }

    /// Parses `name` with `FromStr`, `None` when absent, an error when malformed.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let size: Option<u64> = resp.headers.parse("content-length")?;
    /// # let _ = size;
    /// # Ok(()) }
    /// ```
    pub fn parse<T: std::str::FromStr>(&self, name: &str) -> Result<Option<T>> {
        match self.get(name) {
            None => Ok(None),
            Some(v) => v
                .trim()
                .parse()
                .map(Some)
                .map_err(|_| Error::decode(format!("response header {name} is malformed"))),
        }
    }

    /// `ETag` (a blank one counts as absent).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.etag());
    /// # Ok(()) }
    /// ```
    pub fn etag(&self) -> Option<ETag> {
        self.get("etag")
            .filter(|v| !v.trim().is_empty())
            .map(ETag::new)
    }

    /// `ETag`, required (a blank one is a decode error).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// let etag = resp.headers.require_etag()?;
    /// # let _ = etag;
    /// # Ok(()) }
    /// ```
    pub fn require_etag(&self) -> Result<ETag> {
        self.etag()
            .ok_or_else(|| Error::decode("response is missing the etag header"))
    }

    /// `Last-Modified`.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.last_modified());
    /// # Ok(()) }
    /// ```
    pub fn last_modified(&self) -> Option<OffsetDateTime> {
        self.get("last-modified")
            .and_then(crate::time_fmt::parse_http_date)
    }

    /// An RFC 1123 date header.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.date("x-ms-creation-time"));
    /// # Ok(()) }
    /// ```
    pub fn date(&self, name: &str) -> Option<OffsetDateTime> {
        self.get(name).and_then(crate::time_fmt::parse_http_date)
    }

    /// Iterates all headers with UTF-8 values.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// for (name, value) in resp.headers.iter() {
    ///     println!("{name}: {value}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0
            .iter()
            .filter_map(|(k, v)| utf8(v).map(|v| (k.as_str(), v)))
    }
}

/// A successful (2xx) response with its body read.
///
/// ```no_run
/// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// // Get Queue Service Stats: an operation azstore does not wrap.
/// let req = Request::new(Method::Get, "").query("restype", "service").query("comp", "stats");
/// let resp = queues.pipeline().send(req).await?;
/// println!("{} {}", resp.status, String::from_utf8_lossy(&resp.body));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Response {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Headers,
    /// Body.
    pub body: Bytes,
}
