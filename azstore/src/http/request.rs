//! A plain request value: method, path, query, headers, body. No I/O.

use crate::body::IntoBody;
use bytes::Bytes;

use crate::conditions::Conditions;
pub(crate) use crate::http::encode::{encode_path, encode_query_value};

/// An HTTP method.
///
/// ```
/// use azstore::http::{Method, Request};
/// let req = Request::new(Method::Merge, "customers(PartitionKey='a',RowKey='b')");
/// assert_eq!(req.method(), Method::Merge);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// GET
    Get,
    /// HEAD
    Head,
    /// PUT
    Put,
    /// POST
    Post,
    /// DELETE
    Delete,
    /// PATCH
    Patch,
    /// MERGE (Table service merge entity)
    Merge,
}

impl Method {
    /// The method name on the wire.
    ///
    /// ```
    /// assert_eq!(azstore::http::Method::Merge.as_str(), "MERGE");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Method::Get => "GET",
            Method::Head => "HEAD",
            Method::Put => "PUT",
            Method::Post => "POST",
            Method::Delete => "DELETE",
            Method::Patch => "PATCH",
            Method::Merge => "MERGE",
        }
    }
}

/// One request to a storage service, relative to the service endpoint.
///
/// ```
/// use azstore::http::{Method, Request};
/// use azstore::Conditions;
/// use azstore::storage::StorageRequest;
/// let req = Request::new(Method::Put, "my-container/a blob")
///     .header("x-ms-blob-type", "BlockBlob")
///     .conditions(&Conditions::if_not_exists())
///     .body(b"hello".to_vec(), "text/plain");
/// assert_eq!(req.path(), "my-container/a%20blob");
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct Request {
    pub(crate) method: Method,
    pub(crate) path: String,
    pub(crate) query: Vec<(String, String)>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Bytes,
    pub(crate) intent: Intent,
    /// The operation's name in traces and metrics; derived from the request when `None`.
    pub(crate) operation: Option<&'static str>,
    /// The most bytes of a success body [`Pipeline::send`](crate::http::Pipeline::send) reads
    /// into memory.
    pub(crate) response_limit: ResponseLimit,
}

/// How much of a success body is read into memory: every response read whole has a cap, so
/// that a misbehaving server or proxy (an endless or huge body) cannot exhaust the client's
/// memory. Streamed bodies ([`Pipeline::send_streaming`](crate::http::Pipeline::send_streaming))
/// hold one chunk at a time and have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ResponseLimit {
    /// At most this many bytes.
    Bytes(u64),
    /// Content the caller asked for whole (Get Blob, Get File into memory): the length the
    /// response declares, which the connection enforces; without a declared length, the
    /// default cap.
    Declared,
}

/// The bytes of [`ResponseLimit::DEFAULT`].
const DEFAULT_RESPONSE_BYTES: u64 = 64 << 20;

impl ResponseLimit {
    /// The cap in bytes for a response that declares `declared` bytes (if it does).
    pub(crate) fn cap(self, declared: Option<u64>) -> u64 {
        match self {
            ResponseLimit::Bytes(n) => n,
            ResponseLimit::Declared => declared.unwrap_or(DEFAULT_RESPONSE_BYTES),
        }
    }

    /// The cap of an operation that declares none: 64 MiB, above any document Azure Storage
    /// or Cosmos DB returns (a 5,000-item listing page with metadata, a 100,000-block list).
    pub(crate) const DEFAULT: ResponseLimit = ResponseLimit::Bytes(DEFAULT_RESPONSE_BYTES);
    /// A Get/Peek Messages batch: 32 messages of at most 64 KiB (base64 in XML) need ~3 MiB.
    pub(crate) const QUEUE_BATCH: u64 = 8 << 20;
    /// A Cosmos DB answer: an item is at most 2 MiB, a query page at most 4 MB.
    #[cfg_attr(not(feature = "cosmos"), allow(dead_code))]
    pub(crate) const COSMOS: u64 = 16 << 20;
    /// A Query Entities page: up to 1,000 entities of up to 1 MiB each, so larger than any
    /// other document; ask for fewer per page (`$top`) when entities are large.
    pub(crate) const TABLE_PAGE: u64 = 256 << 20;
}

/// What an operation does to the resource, declared on its [`Request`]: the pipeline decides
/// from this alone whether a request whose outcome is unknown (a timeout, a dropped
/// connection, a lost response) may be sent again.
///
/// | intent | repeated after an ambiguous failure? |
/// |---|---|
/// | [`Read`](Intent::Read) | yes |
/// | [`IdempotentWrite`](Intent::IdempotentWrite) | yes: applying it twice leaves the same state |
/// | [`ConditionalWrite`](Intent::ConditionalWrite) | no: if the first try applied, the repeat meets our own write as a 412 / 409 and turns a success into a false conflict |
/// | [`NonIdempotent`](Intent::NonIdempotent) | no: applying it twice does it twice |
///
/// A failure before anything was sent (the connection could not be established) and a
/// transient status (408, 429, 500, 502, 503, 504) are retried whatever the intent.
///
/// ```
/// use azstore::http::{Intent, Method, Request};
/// // A POST that is safe to repeat (e.g. an idempotent batch query): say so.
/// let req = Request::new(Method::Post, "reports").intent(Intent::IdempotentWrite);
/// assert_eq!(req.declared_intent(), Intent::IdempotentWrite);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Intent {
    /// Reads only (Get Blob, List, Get Properties, a HEAD).
    Read,
    /// A write that leaves the same state when applied twice (an unconditional Put Blob, Set
    /// Metadata, Delete without an ETag).
    IdempotentWrite,
    /// A write guarded by an ETag (`If-Match: <etag>`) or create-only (`If-None-Match: *`)
    /// condition.
    ConditionalWrite,
    /// A write that does something again when applied twice (Append Block, Put Message,
    /// Insert Entity, a dequeue).
    NonIdempotent,
}

impl Intent {
    /// The intent of a write sent with `conditions`: [`ConditionalWrite`](Intent::ConditionalWrite)
    /// when they hold an ETag (`If-Match` other than `*`) or create-only (`If-None-Match: *`)
    /// condition, else [`IdempotentWrite`](Intent::IdempotentWrite).
    ///
    /// ```
    /// use azstore::{Conditions, ETag};
    /// use azstore::http::Intent;
    /// assert_eq!(Intent::write(&Conditions::if_match(&ETag::new("\"0x1\""))), Intent::ConditionalWrite);
    /// assert_eq!(Intent::write(&Conditions::if_not_exists()), Intent::ConditionalWrite);
    /// assert_eq!(Intent::write(&Conditions::none()), Intent::IdempotentWrite);
    /// ```
    pub fn write(conditions: &Conditions) -> Intent {
        let etag_match = conditions
            .if_match
            .as_ref()
            .is_some_and(|m| m.header_value().trim() != "*");
        let create_only = conditions
            .if_none_match
            .as_ref()
            .is_some_and(|m| m.header_value().trim() == "*");
        if etag_match || create_only {
            Intent::ConditionalWrite
        } else {
            Intent::IdempotentWrite
        }
    }

    /// The default of a method: GET and HEAD read, PUT and DELETE are idempotent writes,
    /// POST, PATCH and MERGE are not idempotent.
    fn of(method: Method) -> Intent {
        match method {
            Method::Get | Method::Head => Intent::Read,
            Method::Put | Method::Delete => Intent::IdempotentWrite,
            Method::Post | Method::Patch | Method::Merge => Intent::NonIdempotent,
        }
    }

    /// Whether a request of this intent may be sent again when the first attempt may have
    /// been applied.
    pub(crate) fn repeatable_after_ambiguous_failure(self) -> bool {
        matches!(self, Intent::Read | Intent::IdempotentWrite)
    }
}

impl Request {
    /// A request for `path` (unencoded; `/` separates segments; empty for the service root).
    /// Its [`Intent`] defaults from the method: GET and HEAD read, PUT and DELETE are
    /// idempotent writes (conditional ones once [`conditions`](crate::storage::StorageRequest::conditions) guard them),
    /// POST, PATCH and MERGE are not idempotent; [`intent`](Self::intent) declares another.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let read = Request::new(Method::Get, "reports/q4.json");
    /// assert_eq!(read.declared_intent(), Intent::Read);
    /// assert_eq!(Request::new(Method::Post, "q/messages").declared_intent(), Intent::NonIdempotent);
    /// ```
    pub fn new(method: Method, path: &str) -> Request {
        Request {
            method,
            path: encode_path(path),
            query: Vec::new(),
            headers: Vec::new(),
            body: Bytes::new(),
            intent: Intent::of(method),
            operation: None,
            response_limit: ResponseLimit::DEFAULT,
        }
    }

    /// Names the operation in traces and metrics (span `otel.name` `azstore.<service>.<name>`,
    /// label `azstore.operation`; see docs/observability.md). Without it the pipeline derives
    /// a name from the method, `restype`, `comp` and lease action (e.g. `put_lease_renew`).
    ///
    /// ```
    /// use azstore::http::{Method, Request};
    /// let req = Request::new(Method::Get, "reports").operation("list_reports");
    /// # let _ = req;
    /// ```
    pub fn operation(mut self, name: &'static str) -> Request {
        self.operation = Some(name);
        self
    }

    /// Adds a query parameter (unencoded).
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let list = Request::new(Method::Get, "reports").query("restype", "container").query("comp", "list");
    /// # let _ = list;
    /// ```
    pub fn query(mut self, name: &str, value: impl Into<String>) -> Request {
        self.query.push((name.to_string(), value.into()));
        self
    }

    /// Adds a header; the name is lower-cased. A later header of the same name replaces it.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let req = Request::new(Method::Put, "c/b").header("X-Ms-Blob-Type", "BlockBlob");
    /// assert_eq!(req.header_value("x-ms-blob-type"), Some("BlockBlob"));
    /// ```
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(k, _)| *k != name);
        self.headers.push((name, value.into()));
        self
    }

    /// Adds a header only when `value` is `Some`.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let tier: Option<&str> = None;
    /// let req = Request::new(Method::Put, "c/b").header_opt("x-ms-access-tier", tier);
    /// assert_eq!(req.header_value("x-ms-access-tier"), None);
    /// ```
    pub fn header_opt(self, name: &str, value: Option<impl Into<String>>) -> Request {
        match value {
            Some(v) => self.header(name, v),
            None => self,
        }
    }

    /// The intent of an idempotent write guarded by `conditions`: a
    /// [`Intent::ConditionalWrite`] when they hold an ETag or create-only condition (how a
    /// service spells the conditions is its backend's business).
    pub(crate) fn guarded_by(mut self, conditions: &Conditions) -> Request {
        if self.intent == Intent::IdempotentWrite {
            self.intent = Intent::write(conditions);
        }
        self
    }

    /// Sets the body and its `Content-Type` (a request has an empty body until then).
    ///
    /// ```
    /// use azstore::http::{Method, Request};
    /// let req = Request::new(Method::Put, "reports/q4.json")
    ///     .body(r#"{"total": 12}"#, "application/json");
    /// # let _ = req;
    /// ```
    pub fn body(mut self, body: impl IntoBody, content_type: &str) -> Request {
        self.body = body.into_body();
        self.header("content-type", content_type)
    }

    /// Declares what the operation does (see [`Intent`]); it decides whether the request is
    /// sent again after a failure whose outcome is unknown. Replaces the method's default.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// // A PUT that is not safe to repeat (it appends server-side): never resent after a lost reply.
    /// let req = Request::new(Method::Put, "c/log").query("comp", "appendblock").intent(Intent::NonIdempotent);
    /// assert_eq!(req.declared_intent(), Intent::NonIdempotent);
    /// ```
    pub fn intent(mut self, v: Intent) -> Self {
        self.intent = v;
        self
    }

    /// The most bytes of a success body [`Pipeline::send`](crate::http::Pipeline::send) reads
    /// into memory (default 64 MiB, above any document the services return). A larger body is
    /// not read further: the call fails with
    /// [`ErrorKind::ResponseTooLarge`](crate::ErrorKind::ResponseTooLarge), naming the cap.
    /// Content reads (Get Blob, Get File) read the length the response declares instead.
    ///
    /// ```
    /// use azstore::http::{Method, Request};
    /// // A small JSON document: anything above 1 MiB is a misbehaving server.
    /// let req = Request::new(Method::Get, "config/settings.json").response_limit(1 << 20);
    /// # let _ = req;
    /// ```
    pub fn response_limit(mut self, bytes: u64) -> Request {
        self.response_limit = ResponseLimit::Bytes(bytes);
        self
    }

    /// Reads a content body whole (Get Blob, Get File): up to the length it declares.
    pub(crate) fn content_read(mut self) -> Request {
        self.response_limit = ResponseLimit::Declared;
        self
    }

    /// The method.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// assert_eq!(Request::new(Method::Head, "c/b").method(), Method::Head);
    /// ```
    pub fn method(&self) -> Method {
        self.method
    }

    /// The encoded path relative to the endpoint.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// assert_eq!(Request::new(Method::Get, "c/a b.txt").path(), "c/a%20b.txt");
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The value of a header (lower-case name).
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let req = Request::new(Method::Put, "c/b").body("x", "text/plain");
    /// assert_eq!(req.header_value("content-type"), Some("text/plain"));
    /// ```
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// let req = Request::new(Method::Put, "c/b").body("hello", "text/plain");
    /// assert_eq!(&req.body_bytes()[..], b"hello");
    /// ```
    pub fn body_bytes(&self) -> &Bytes {
        &self.body
    }

    /// The declared (or defaulted) intent.
    ///
    /// ```
    /// use azstore::http::{Intent, Method, Request};
    /// assert_eq!(Request::new(Method::Delete, "c/b").declared_intent(), Intent::IdempotentWrite);
    /// ```
    pub fn declared_intent(&self) -> Intent {
        self.intent
    }

    /// The encoded query string (without `?`).
    pub(crate) fn query_string(&self, extra: &[(String, String)]) -> String {
        let mut s = String::new();
        for (k, v) in self.query.iter().chain(extra) {
            if !s.is_empty() {
                s.push('&');
            }
            s.push_str(&encode_query_value(k));
            s.push('=');
            s.push_str(&encode_query_value(v));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_string() {
        let r = Request::new(Method::Get, "c").query("restype", "container");
        let r = r.query("prefix", "x y");
        assert_eq!(r.query_string(&[]), "restype=container&prefix=x%20y");
    }

    #[test]
    fn intent_from_method_conditions_and_declaration() {
        let repeatable = |r: &Request| r.intent.repeatable_after_ambiguous_failure();
        assert!(!repeatable(&Request::new(Method::Post, "q")));
        let put = Request::new(Method::Put, "c/b");
        assert!(repeatable(&put));
        let etag = crate::conditions::ETag::new("\"0x1\"");
        assert!(!repeatable(
            &put.clone().guarded_by(&Conditions::if_match(&etag))
        ));
        let any = Conditions {
            if_match: Some(crate::conditions::MatchCondition::Any),
            ..Conditions::default()
        };
        assert!(repeatable(&put.clone().guarded_by(&any)));
        assert!(!repeatable(
            &put.clone().guarded_by(&Conditions::if_not_exists())
        ));
        assert!(repeatable(&put.clone().guarded_by(&Conditions::none())));
        assert!(repeatable(
            &Request::new(Method::Get, "c/b").guarded_by(&Conditions::if_match(&etag))
        ));
        let append = Request::new(Method::Put, "c/b").intent(Intent::NonIdempotent);
        assert!(!repeatable(&append.guarded_by(&Conditions::none())));
    }
}
