//! Percent-encoding of resource paths and query values. A leaf: no other azstore module.

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};

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
pub(crate) fn encode_path(s: &str) -> String {
    utf8_percent_encode(s, PATH).to_string()
}

/// The `x-ms-range` (or `x-ms-source-range`) value of `range`, which must not be empty.
pub(crate) fn range_header(range: &std::ops::Range<u64>) -> String {
    format!("bytes={}-{}", range.start, range.end - 1)
}

/// `bytes=start-`: from `start` to the end, whatever the size is.
pub(crate) fn range_from_header(start: u64) -> String {
    format!("bytes={start}-")
}

/// Percent-encodes a query value: everything but unreserved characters.
pub(crate) fn encode_query_value(s: &str) -> String {
    utf8_percent_encode(s, QUERY).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encoding() {
        assert_eq!(encode_path("a b/c#d?e%f/ü"), "a%20b/c%23d%3Fe%25f/%C3%BC");
        assert_eq!(encode_query_value("a b&c=d/e"), "a%20b%26c%3Dd%2Fe");
        assert_eq!(range_header(&(4..8)), "bytes=4-7");
    }
}
