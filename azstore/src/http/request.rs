//! A plain request value: method, path, query, headers, body. No I/O.

use bytes::Bytes;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

use crate::conditions::Conditions;

/// Characters left as they are in a query value: RFC 3986 unreserved.
const QUERY: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');
/// In paths `/` separates segments and stays as it is.
const PATH: &AsciiSet = &QUERY.remove(b'/');

/// Percent-encodes a resource path (container/blob name): everything but unreserved
/// characters and `/`.
pub fn encode_path(s: &str) -> String {
    utf8_percent_encode(s, PATH).to_string()
}

/// Percent-encodes a query value: everything but unreserved characters.
pub fn encode_query_value(s: &str) -> String {
    utf8_percent_encode(s, QUERY).to_string()
}

/// An HTTP method.
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
    pub(crate) idempotent: bool,
}

impl Request {
    /// A request for `path` (unencoded; `/` separates segments; empty for the service root).
    /// GET, HEAD, PUT and DELETE count as idempotent; POST and PATCH do not.
    pub fn new(method: Method, path: &str) -> Request {
        Request {
            method,
            path: encode_path(path),
            query: Vec::new(),
            headers: Vec::new(),
            body: Bytes::new(),
            idempotent: matches!(
                method,
                Method::Get | Method::Head | Method::Put | Method::Delete
            ),
        }
    }

    /// Adds a query parameter (unencoded).
    pub fn query(mut self, name: &str, value: impl Into<String>) -> Request {
        self.query.push((name.to_string(), value.into()));
        self
    }

    /// Adds a header; the name is lower-cased. A later header of the same name replaces it.
    pub fn header(mut self, name: &str, value: impl Into<String>) -> Request {
        let name = name.to_ascii_lowercase();
        self.headers.retain(|(k, _)| *k != name);
        self.headers.push((name, value.into()));
        self
    }

    /// Adds a header only when `value` is `Some`.
    pub fn header_opt(self, name: &str, value: Option<impl Into<String>>) -> Request {
        match value {
            Some(v) => self.header(name, v),
            None => self,
        }
    }

    /// Adds the headers of `conditions`.
    pub fn conditions(mut self, conditions: &Conditions) -> Request {
        for (k, v) in conditions.headers() {
            self = self.header(k, v);
        }
        self
    }

    /// Adds `x-ms-meta-*` headers.
    pub fn metadata<'a>(
        mut self,
        meta: impl IntoIterator<Item = (&'a String, &'a String)>,
    ) -> Request {
        for (k, v) in meta {
            self = self.header(&format!("x-ms-meta-{k}"), v.clone());
        }
        self
    }

    /// Sets the body and its content type.
    pub fn body(mut self, body: impl Into<Bytes>, content_type: &str) -> Request {
        self.body = body.into();
        self.header("content-type", content_type)
    }

    /// Marks the request as not safe to repeat after a timeout (append block, put message).
    pub fn non_idempotent(mut self) -> Request {
        self.idempotent = false;
        self
    }

    /// The method.
    pub fn method(&self) -> Method {
        self.method
    }

    /// The encoded path relative to the endpoint.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The value of a header (lower-case name).
    pub fn header_value(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The body.
    pub fn body_bytes(&self) -> &Bytes {
        &self.body
    }

    /// Whether sending this request again is safe when the first attempt may have been applied.
    /// A conditional write (`If-Match: <etag>` or `If-None-Match: *`) is not: if the first
    /// attempt applied, the repeat fails with 412/409 against our own write and turns a success
    /// into a false conflict. Such a failure is returned as `RequestSent::Maybe` instead, for
    /// the caller (e.g. `update`, which recognises its own write) to resolve.
    pub(crate) fn repeatable_after_ambiguous_failure(&self) -> bool {
        if !self.idempotent {
            return false;
        }
        if matches!(self.method, Method::Get | Method::Head) {
            return true;
        }
        let conditional_match = self
            .header_value("if-match")
            .is_some_and(|v| v.trim() != "*");
        let create_only = self
            .header_value("if-none-match")
            .is_some_and(|v| v.trim() == "*");
        !(conditional_match || create_only)
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
    fn encoding() {
        assert_eq!(encode_path("a b/c#d?e%f/ü"), "a%20b/c%23d%3Fe%25f/%C3%BC");
        assert_eq!(encode_query_value("a b&c=d/e"), "a%20b%26c%3Dd%2Fe");
        let r = Request::new(Method::Get, "c")
            .query("restype", "container")
            .query("prefix", "x y");
        assert_eq!(r.query_string(&[]), "restype=container&prefix=x%20y");
        assert!(!Request::new(Method::Post, "q").idempotent);
        let put = Request::new(Method::Put, "c/b");
        assert!(put.repeatable_after_ambiguous_failure());
        assert!(
            !put.clone()
                .header("if-match", "\"0x1\"")
                .repeatable_after_ambiguous_failure()
        );
        assert!(
            put.clone()
                .header("if-match", "*")
                .repeatable_after_ambiguous_failure()
        );
        assert!(
            !put.header("if-none-match", "*")
                .repeatable_after_ambiguous_failure()
        );
        assert!(
            Request::new(Method::Get, "c/b")
                .header("if-match", "\"0x1\"")
                .repeatable_after_ambiguous_failure()
        );
    }
}
