//! The Azure Storage parts of a request: [`Conditions`] as Storage spells them (the HTTP
//! conditions, `x-ms-if-tags`, `x-ms-lease-id`, and the `x-ms-source-*` form for a copy's
//! source) and user metadata as `x-ms-meta-*` headers.

use crate::conditions::Conditions;
use crate::error::{Error, Result};
use crate::http::Request;

/// The Azure Storage parts of a [`Request`] of your own: conditions and metadata as Blob,
/// File, Queue and Table spell them. Every azstore Storage client builds its requests with it.
///
/// ```
/// use std::collections::BTreeMap;
/// use azstore::http::{Intent, Method, Request};
/// use azstore::storage::StorageRequest;
/// use azstore::{Conditions, LeaseId};
/// let lease = LeaseId::random();
/// let meta = BTreeMap::from([("owner".to_string(), "team-a".to_string())]);
/// let req = Request::new(Method::Put, "c/b")
///     .conditions(&Conditions::if_not_exists().with_lease(&lease))
///     .metadata(&meta);
/// assert_eq!(req.header_value("if-none-match"), Some("*"));
/// assert_eq!(req.header_value("x-ms-lease-id"), Some(lease.as_str()));
/// assert_eq!(req.header_value("x-ms-meta-owner"), Some("team-a"));
/// assert_eq!(req.declared_intent(), Intent::ConditionalWrite);
/// ```
pub trait StorageRequest {
    /// Adds the headers of `conditions` (`If-Match`, `If-None-Match`, `If-Modified-Since`,
    /// `If-Unmodified-Since`, `x-ms-if-tags`, `x-ms-lease-id`). An idempotent write they guard
    /// (an ETag or create-only condition) becomes an
    /// [`Intent::ConditionalWrite`](crate::http::Intent::ConditionalWrite).
    fn conditions(self, conditions: &Conditions) -> Request;

    /// Adds `x-ms-meta-*` headers.
    fn metadata<'a>(self, meta: impl IntoIterator<Item = (&'a String, &'a String)>) -> Request;
}

impl StorageRequest for Request {
    fn conditions(self, conditions: &Conditions) -> Request {
        let mut req = self.guarded_by(conditions);
        for (k, v) in headers(conditions) {
            req = req.header(k, v);
        }
        req
    }

    fn metadata<'a>(self, meta: impl IntoIterator<Item = (&'a String, &'a String)>) -> Request {
        let mut req = self;
        for (k, v) in meta {
            req = req.header(&format!("x-ms-meta-{k}"), v.clone());
        }
        req
    }
}

/// The conditions on a copy's source, for the Storage backends.
pub(crate) trait SourceConditions: Sized {
    /// Adds `conditions` as the `x-ms-source-*` headers of a copy's source (refused when they
    /// carry a lease id, which has no source form).
    fn source_conditions(self, conditions: &Conditions) -> Result<Request>;
}

impl SourceConditions for Request {
    fn source_conditions(self, conditions: &Conditions) -> Result<Request> {
        let mut req = self;
        for (k, v) in source_headers(conditions)? {
            req = req.header(k, v);
        }
        Ok(req)
    }
}

/// The headers `c` produces.
fn headers(c: &Conditions) -> Vec<(&'static str, String)> {
    let mut h = headers_named(c, TARGET_HEADERS);
    if let Some(l) = &c.lease_id {
        h.push(("x-ms-lease-id", l.as_str().to_string()));
    }
    h
}

/// The same conditions as `x-ms-source-*` headers, for the source of a copy.
fn source_headers(c: &Conditions) -> Result<Vec<(&'static str, String)>> {
    if c.lease_id.is_some() {
        return Err(Error::invalid_input(
            "copy source conditions cannot carry a lease id",
        ));
    }
    Ok(headers_named(c, SOURCE_HEADERS))
}

/// The ETag, date and tag conditions under the given header names.
fn headers_named(c: &Conditions, names: [&'static str; 5]) -> Vec<(&'static str, String)> {
    let [
        if_match,
        if_none_match,
        if_modified_since,
        if_unmodified_since,
        if_tags,
    ] = names;
    let mut h = Vec::new();
    if let Some(m) = &c.if_match {
        h.push((if_match, m.header_value().to_string()));
    }
    if let Some(m) = &c.if_none_match {
        h.push((if_none_match, m.header_value().to_string()));
    }
    if let Some(t) = c.if_modified_since {
        h.push((if_modified_since, crate::time_fmt::http_date(t)));
    }
    if let Some(t) = c.if_unmodified_since {
        h.push((if_unmodified_since, crate::time_fmt::http_date(t)));
    }
    if let Some(t) = &c.if_tags {
        h.push((if_tags, t.clone()));
    }
    h
}

/// If-Match, If-None-Match, If-Modified-Since, If-Unmodified-Since and tags of the target.
const TARGET_HEADERS: [&str; 5] = [
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
    "x-ms-if-tags",
];

/// The same conditions on the source of a copy.
const SOURCE_HEADERS: [&str; 5] = [
    "x-ms-source-if-match",
    "x-ms-source-if-none-match",
    "x-ms-source-if-modified-since",
    "x-ms-source-if-unmodified-since",
    "x-ms-source-if-tags",
];

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::{ETag, LeaseId};

    #[test]
    fn headers_of_conditions() {
        let e = ETag::new("\"0x1\"");
        let l = LeaseId::random();
        let c = Conditions::if_match(&e).with_lease(&l);
        let h = headers(&c);
        assert!(h.contains(&("if-match", "\"0x1\"".to_string())));
        assert!(h.contains(&("x-ms-lease-id", l.as_str().to_string())));
        assert!(headers(&Conditions::none()).is_empty());
        let src = source_headers(&Conditions::if_match(&e).and_if_tags("a = 'b'")).unwrap();
        assert_eq!(
            src,
            [
                ("x-ms-source-if-match", "\"0x1\"".to_string()),
                ("x-ms-source-if-tags", "a = 'b'".to_string())
            ]
        );
        assert!(source_headers(&c).is_err(), "a lease id has no source form");
    }
}
