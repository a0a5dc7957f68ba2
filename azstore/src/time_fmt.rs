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
    let s = s.trim();
    fast_http_date(s.as_bytes()).or_else(|| {
        time::PrimitiveDateTime::parse(s, HTTP)
            .ok()
            .map(|p| p.assume_utc())
    })
}

/// The fixed layout every service sends (`Sun, 22 Nov 2026 00:13:20 GMT`), read byte by byte:
/// a few dozen instructions where the general format parser takes thousands (every response
/// carries `Last-Modified`). Anything else falls back to the general parser.
fn fast_http_date(b: &[u8]) -> Option<OffsetDateTime> {
    if b.len() != 29 || &b[3..5] != b", " || &b[25..] != b" GMT" {
        return None;
    }
    let num = |r: std::ops::Range<usize>| -> Option<u32> {
        b[r].iter().try_fold(0u32, |n, &d| {
            d.is_ascii_digit().then(|| n * 10 + u32::from(d - b'0'))
        })
    };
    if b[7] != b' ' || b[11] != b' ' || b[16] != b' ' || b[19] != b':' || b[22] != b':' {
        return None;
    }
    use time::Month::*;
    let month = match &b[8..11] {
        b"Jan" => January,
        b"Feb" => February,
        b"Mar" => March,
        b"Apr" => April,
        b"May" => May,
        b"Jun" => June,
        b"Jul" => July,
        b"Aug" => August,
        b"Sep" => September,
        b"Oct" => October,
        b"Nov" => November,
        b"Dec" => December,
        _ => return None,
    };
    let date = time::Date::from_calendar_date(num(12..16)? as i32, month, num(5..7)? as u8).ok()?;
    let t =
        time::Time::from_hms(num(17..19)? as u8, num(20..22)? as u8, num(23..25)? as u8).ok()?;
    Some(time::PrimitiveDateTime::new(date, t).assume_utc())
}

/// Parses an ISO 8601 / RFC 3339 timestamp (Table and list bodies); `None` on anything else.
pub(crate) fn parse_iso8601(s: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(s.trim(), &Rfc3339).ok()
}

/// `2019-07-11T21:40:12.9953010Z`: UTC, seven fractional digits (the form of Table's
/// `Edm.DateTime` and of the File service's SMB times).
pub(crate) fn iso8601_7(t: OffsetDateTime) -> String {
    let t = t.to_offset(time::UtcOffset::UTC);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:07}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second(),
        t.nanosecond() / 100
    )
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
        // The fast path and the general parser agree, and odd input still parses or fails
        // the same way.
        for d in [
            "Sun, 22 Nov 2026 00:13:20 GMT",
            "Thu, 29 Feb 2024 23:59:59 GMT",
            "Thu, 01 Jan 1970 00:00:00 GMT",
        ] {
            let slow = time::PrimitiveDateTime::parse(d, HTTP)
                .unwrap()
                .assume_utc();
            assert_eq!(fast_http_date(d.as_bytes()), Some(slow), "{d}");
        }
        assert_eq!(fast_http_date(b"Sun, 31 Feb 2026 00:13:20 GMT"), None);
        assert_eq!(fast_http_date(b"Sun, 22 Foo 2026 00:13:20 GMT"), None);
        assert_eq!(parse_http_date("Sun, 22 Nov 2026 0x:13:20 GMT"), None);
        assert_eq!(parse_http_date("yesterday"), None);
        assert!((OffsetDateTime::now_utc() - now).whole_seconds().abs() <= 1);
        assert_eq!(
            parse_iso8601("2026-11-22T00:13:20.1234567Z").map(|t| t.second()),
            Some(20)
        );
    }
}
