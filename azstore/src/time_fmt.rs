//! Date formats on the wire: RFC 1123 for HTTP headers, ISO 8601 in bodies.

use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use time::macros::format_description;

const HTTP: &[time::format_description::BorrowedFormatItem<'static>] = format_description!(
    "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
);

/// `Sun, 22 Nov 2026 00:13:20 GMT` for now. Formatted at most once per second per thread:
/// every request carries it.
pub(crate) fn http_date_now() -> String {
    use std::cell::RefCell;
    thread_local! {
        static LAST: RefCell<(i64, String)> = const { RefCell::new((i64::MIN, String::new())) };
    }
    let now = OffsetDateTime::now_utc();
    let second = now.unix_timestamp();
    LAST.with(|last| {
        let mut last = last.borrow_mut();
        if last.0 != second {
            *last = (second, http_date(now));
        }
        last.1.clone()
    })
}

/// `Sun, 22 Nov 2026 00:13:20 GMT`.
pub(crate) fn http_date(t: OffsetDateTime) -> String {
    t.to_offset(time::UtcOffset::UTC)
        .format(HTTP)
        .unwrap_or_else(|_| "Thu, 01 Jan 1970 00:00:00 GMT".to_string())
}

/// Parses an RFC 1123 date; `None` on anything else.
pub(crate) fn parse_http_date(s: &str) -> Option<OffsetDateTime> {
    time::PrimitiveDateTime::parse(s.trim(), HTTP)
        .ok()
        .map(|p| p.assume_utc())
}

/// Parses an ISO 8601 / RFC 3339 timestamp (Table and list bodies); `None` on anything else.
pub(crate) fn parse_iso8601(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s.trim(), &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn round_trip() {
        let t = datetime!(2026-11-22 00:13:20 UTC);
        assert_eq!(http_date(t), "Sun, 22 Nov 2026 00:13:20 GMT");
        assert_eq!(parse_http_date("Sun, 22 Nov 2026 00:13:20 GMT"), Some(t));
        assert_eq!(parse_http_date("garbage"), None);
        let now = parse_http_date(&http_date_now()).unwrap();
        assert!((OffsetDateTime::now_utc() - now).whole_seconds().abs() <= 1);
        assert_eq!(
            parse_iso8601("2026-11-22T00:13:20.1234567Z").map(|t| t.second()),
            Some(20)
        );
    }
}
