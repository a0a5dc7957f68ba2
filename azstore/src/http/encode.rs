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

/// Appends the text an XML reference stands for (`&amp;` gives `&`, `&#x41;` gives `A`) to
/// `out`: the reader reports references apart from the text around them. `false` for a
/// reference XML does not predefine (Azure's documents use none) or an invalid character.
pub(crate) fn push_xml_reference(r: &quick_xml::events::BytesRef<'_>, out: &mut String) -> bool {
    match r.resolve_char_ref() {
        Ok(Some(c)) => out.push(c),
        Ok(None) => match quick_xml::escape::resolve_xml_entity(&r.clone().into_inner()) {
            Some(s) => out.push_str(s),
            None => return false,
        },
        Err(_) => return false,
    }
    true
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
