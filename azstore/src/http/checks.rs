//! Checks at the edges of the pipeline: request headers that cannot be sent (refused before
//! anything goes out), `Retry-After` hints, bounded reads of error bodies, and the shape of
//! a success body an operation is about to decode.

use std::time::Duration;

use bytes::{Bytes, BytesMut};

use crate::error::{Error, Result};
use crate::http::request::Request;
use crate::http::response::Headers;

/// How much of an error body is read (Azure's are well under 1 KiB). The rest is never read:
/// the connection is closed instead of being drained.
pub(crate) const ERROR_BODY_LIMIT: usize = 64 * 1024;

/// Headers whose value is an ETag condition: an empty one is ignored by the service, which
/// silently turns a conditional request into an unconditional one. (A backend's edge checks
/// its own condition headers: [`Edge::check`](crate::http::edge::Edge::check).)
const ETAG_CONDITIONS: [&str; 2] = ["if-match", "if-none-match"];

/// Refuses a request whose headers cannot be sent as they are: a name that is not an HTTP
/// token, a value with CR, LF, NUL or another control character, an empty or blank ETag
/// condition. The error is `InvalidInput` with `RequestSent::No`, and names the header,
/// never its value (a value may be a secret).
pub(crate) fn validate_request(req: &Request) -> Result<()> {
    validate_path(&req.path)?;
    for (name, value) in &req.headers {
        validate_header(name, value)?;
    }
    Ok(())
}

/// The checks of [`validate_request`] for one header (also for the headers of a table batch's
/// sub-requests, which travel inside the body). `name` is lower-case.
pub(crate) fn validate_header(name: &str, value: &str) -> Result<()> {
    {
        if !value.is_ascii() {
            // HTTP/1.1 header values are ASCII; bytes above it reach the service as whatever
            // it decodes them as (Azure Storage refuses or mangles them).
            return Err(Error::invalid_input(format!(
                "the value of header {} has a non-ASCII character: encode it first (e.g. \
                 percent-encode a metadata value and decode it when reading)",
                printable(name)
            )));
        }
        if http::HeaderName::from_bytes(name.as_bytes()).is_err() {
            return Err(Error::invalid_input(format!(
                "header name {} is not a valid HTTP header name",
                printable(name)
            )));
        }
        if http::HeaderValue::from_str(value).is_err() {
            return Err(Error::invalid_input(format!(
                "the value of header {name} contains a character that cannot be sent in an \
                 HTTP header (CR, LF, NUL or another control character)"
            )));
        }
        if ETAG_CONDITIONS.contains(&name) && value.trim().is_empty() {
            return Err(Error::invalid_input(format!(
                "{name}: an empty ETag cannot be sent (the service would ignore the condition \
                 and the request would be unconditional)"
            )));
        }
    }
    Ok(())
}

/// Refuses a request path that a URL would normalise into another one: a `.` or `..`
/// segment, also percent-encoded (`%2e`), which the URL would resolve against the segments
/// before it (`container/../other/blob` is `other/blob`). Every caller value that becomes a
/// path segment is checked where it is named (blob names, message ids, Cosmos DB ids, file
/// paths); this is the pipeline's own check, for any path that reaches it.
fn validate_path(path: &str) -> Result<()> {
    // A dot segment is at most 6 characters (`%2e%2e`): longer ones are never decoded.
    let is_dot_segment = |s: &str| {
        s.len() <= 6
            && matches!(
                s.to_ascii_lowercase().replace("%2e", ".").as_str(),
                "." | ".."
            )
    };
    for segment in path.split('/') {
        if is_dot_segment(segment) {
            return Err(Error::invalid_input(format!(
                "the request path has a {} segment, which the URL would resolve into another \
                 resource's path: refused before sending",
                printable(segment)
            )));
        }
    }
    Ok(())
}

/// A header name or path segment for an error message: escaped and cut to 64 characters.
fn printable(s: &str) -> String {
    crate::redact::quoted(s, 64)
}

/// The delay the service asks for: `retry-after-ms` (milliseconds), else `Retry-After`
/// (seconds, or an HTTP date). `None` when absent or unreadable. (A backend's edge may read
/// its own header first: [`Edge::retry_after`](crate::http::edge::Edge::retry_after).)
pub(crate) fn retry_after(headers: &Headers) -> Option<Duration> {
    if let Some(ms) = headers
        .get("retry-after-ms")
        .and_then(|v| v.trim().parse::<u64>().ok())
    {
        return Some(Duration::from_millis(ms));
    }
    let v = headers.get("retry-after")?.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = crate::time_fmt::parse_http_date(v)?;
    let now = time::OffsetDateTime::now_utc();
    Some(Duration::try_from(at - now).unwrap_or(Duration::ZERO))
}

/// Reads at most `limit` bytes of a response body. Returns what was read and whether the body
/// had more (the rest is left unread; dropping the response closes the connection).
pub(crate) async fn read_capped(
    resp: &mut reqwest::Response,
    limit: usize,
) -> std::result::Result<(Bytes, bool), reqwest::Error> {
    let mut out = BytesMut::new();
    while let Some(chunk) = resp.chunk().await? {
        let room = limit - out.len();
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            return Ok((out.freeze(), true));
        }
        out.extend_from_slice(&chunk);
        if out.len() == limit {
            // Exactly at the limit: more may follow, and it is not read.
            return Ok((out.freeze(), true));
        }
    }
    Ok((out.freeze(), false))
}

/// `bytes` for a message: in MiB or KiB when it is a whole number of them.
pub(crate) fn describe_bytes(bytes: u64) -> String {
    if bytes >= 1 << 20 && bytes % (1 << 20) == 0 {
        format!("{} MiB", bytes >> 20)
    } else if bytes >= 1 << 10 && bytes % (1 << 10) == 0 {
        format!("{} KiB", bytes >> 10)
    } else {
        format!("{bytes} bytes")
    }
}

/// Deserializes an XML success body (a leading BOM is accepted), turning any failure into a
/// decode error naming `operation`.
pub(crate) fn from_xml<T: serde::de::DeserializeOwned>(body: &[u8], operation: &str) -> Result<T> {
    let text = std::str::from_utf8(body)
        .map_err(|_| Error::decode(format!("{operation} response is not UTF-8")))?;
    quick_xml::de::from_str(text.trim_start_matches('\u{feff}'))
        .map_err(|e| Error::decode(format!("{operation} response is malformed: {e}")))
}

/// Checks that an XML success body is a document whose root element is `root` (a captive
/// portal's HTML page or a misrouted endpoint's answer is an error, never an empty result).
/// `operation` names the operation in the error.
pub(crate) fn expect_xml_root(body: &[u8], root: &str, operation: &str) -> Result<()> {
    use quick_xml::events::Event;
    let text = std::str::from_utf8(body)
        .map_err(|_| Error::decode(format!("{operation} response is not UTF-8")))?;
    let text = text.trim_start_matches('\u{feff}');
    let mut reader = quick_xml::Reader::from_str(text);
    loop {
        let found = match reader.read_event() {
            Ok(Event::Start(e)) | Ok(Event::Empty(e)) => e.local_name().as_ref().to_owned(),
            Ok(Event::Decl(_) | Event::PI(_) | Event::Comment(_) | Event::DocType(_)) => continue,
            Ok(Event::Text(t)) if t.as_ref().bytes().all(|b| b.is_ascii_whitespace()) => continue,
            Ok(Event::Eof) => {
                return Err(Error::decode(format!(
                    "{operation} response is empty (expected an XML <{root}> document)"
                )));
            }
            Ok(_) | Err(_) => {
                return Err(Error::decode(format!(
                    "{operation} response is not an XML document (expected <{root}>)"
                )));
            }
        };
        if found == root {
            return Ok(());
        }
        return Err(Error::decode(format!(
            "{operation} response is not what the operation returns: its root element is \
             <{}>, expected <{root}> (an HTML page or a proxy's answer instead of the service's?)",
            printable_bare(&found)
        )));
    }
}

/// An element name for an error message (escaped, at most 40 characters).
fn printable_bare(s: &str) -> String {
    s.chars().take(40).flat_map(char::escape_debug).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    #[test]
    fn dot_segments_in_a_path_are_refused() {
        for bad in [
            "c/../other/b",
            "c/./b",
            "..",
            "c/%2e%2E/b",
            "c/.%2e",
            "c/%2E",
            "c/b/..",
        ] {
            let mut req = Request::new(Method::Get, "");
            req.path = bad.to_string();
            let e = validate_request(&req).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{bad}");
            assert_eq!(e.request_sent(), crate::RequestSent::No, "{bad}");
        }
        for ok in ["c/a..b", "c/...", "c/.env", "c/%2e%2e%2e", "c/b.", ""] {
            let mut req = Request::new(Method::Get, "");
            req.path = ok.to_string();
            assert!(validate_request(&req).is_ok(), "{ok}");
        }
    }

    #[test]
    fn headers_that_cannot_be_sent_are_refused_by_name() {
        let ok = Request::new(Method::Put, "c/b")
            .header("x-note", "  two   spaces  ")
            .header("if-match", "\"0x1\"");
        assert!(validate_request(&ok).is_ok());
        for (name, value) in [
            ("x-note", "line\r\nx-injected: 1"),
            ("x-note", "nul\0"),
            ("content-type", "text/plain\n"),
            ("x-lease", "\u{7f}"),
        ] {
            let err = validate_request(&Request::new(Method::Put, "c/b").header(name, value))
                .unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::InvalidInput);
            assert_eq!(err.request_sent(), crate::RequestSent::No);
            assert!(err.message().contains(name), "{err}");
            assert!(!err.message().contains(value), "{err}");
        }
        for name in ETAG_CONDITIONS {
            for blank in ["", "  ", "\t"] {
                let err = validate_request(&Request::new(Method::Put, "c/b").header(name, blank))
                    .unwrap_err();
                assert!(err.message().contains("empty ETag"), "{err}");
            }
        }
        let err = validate_request(&Request::new(Method::Put, "c/b").header("x-note b", "v"))
            .unwrap_err();
        assert!(err.message().contains("x-note b"), "{err}");
    }

    #[test]
    fn retry_after_forms() {
        let h = |k: &str, v: &str| Headers::from_pairs(vec![(k.to_string(), v.to_string())]);
        assert_eq!(
            retry_after(&h("retry-after", "3600")),
            Some(Duration::from_secs(3600))
        );
        assert_eq!(
            retry_after(&h("retry-after-ms", "250")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            retry_after(&h("retry-after", "Thu, 01 Jan 1970 00:00:00 GMT")),
            Some(Duration::ZERO)
        );
        let later = time::OffsetDateTime::now_utc() + time::Duration::seconds(90);
        let d = retry_after(&h("retry-after", &crate::time_fmt::http_date(later))).unwrap();
        assert!(
            d > Duration::from_secs(80) && d <= Duration::from_secs(90),
            "{d:?}"
        );
        assert_eq!(retry_after(&h("retry-after", "soon")), None);
        assert_eq!(retry_after(&Headers::default()), None);
    }

    #[test]
    fn xml_roots() {
        let list = b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<EnumerationResults ServiceEndpoint=\"x\"><Blobs /></EnumerationResults>";
        assert!(expect_xml_root(list, "EnumerationResults", "List Blobs").is_ok());
        assert!(expect_xml_root(b"<SignedIdentifiers />", "SignedIdentifiers", "ACL").is_ok());
        let html = b"<!DOCTYPE html>\n<html><body>Sign in</body></html>";
        let err = expect_xml_root(html, "EnumerationResults", "List Blobs").unwrap_err();
        assert!(err.message().starts_with("List Blobs"), "{err}");
        assert!(err.message().contains("<html>"), "{err}");
        for junk in [&b""[..], b"   ", b"hello", b"\xff\xfe", b"{\"value\":[]}"] {
            let err = expect_xml_root(junk, "QueueMessagesList", "Get Messages").unwrap_err();
            assert_eq!(err.kind(), crate::ErrorKind::Service);
            assert!(err.message().starts_with("Get Messages"), "{err}");
        }
    }
}
