//! The request and reply of one operation, and the wire formats they share.

use super::*;

pub(super) struct HttpRequest {
    pub(super) method: String,
    /// Raw (still percent-encoded) path.
    pub(super) raw_path: String,
    /// Decoded query pairs.
    pub(super) query: Vec<(String, String)>,
    /// Lower-case names.
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl HttpRequest {
    pub(super) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub(super) fn meta(&self) -> BTreeMap<String, String> {
        self.headers
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("x-ms-meta-").map(|n| (n.into(), v.clone())))
            .collect()
    }
}

pub(super) struct Reply {
    pub(super) status: u16,
    pub(super) headers: Vec<(String, String)>,
    pub(super) body: Vec<u8>,
}

impl Reply {
    pub(super) fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    pub(super) fn h(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.to_string(), v.into()));
        self
    }

    pub(super) fn error(status: u16, code: &str, message: &str) -> Reply {
        let body = format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{}\nRequestId:00000000-0000-0000-0000-000000000000\nTime:{}</Message></Error>",
            xml_escape(message),
            "2026-11-22T00:00:00.0000000Z"
        );
        Reply {
            status,
            headers: vec![
                ("x-ms-error-code".into(), code.into()),
                ("content-type".into(), "application/xml".into()),
            ],
            body: body.into_bytes(),
        }
    }

    pub(super) fn xml(mut self, body: String) -> Reply {
        self.headers
            .push(("content-type".into(), "application/xml".into()));
        self.body = body.into_bytes();
        self
    }
}

pub(super) fn plain(status: u16, text: &'static str) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    r
}

pub(super) fn pct_decode(s: &str) -> String {
    let s = s.replace('+', "%20");
    percent_encoding::percent_decode_str(&s)
        .decode_utf8_lossy()
        .into_owned()
}

pub(super) fn http_now() -> String {
    let f = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::now_utc()
        .format(f)
        .unwrap_or_default()
}

pub(super) fn iso_now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

pub(super) fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Parses `bytes=a-b` (or `bytes=a-`), end inclusive.
pub(super) fn parse_range(v: &str) -> Option<(u64, Option<u64>)> {
    let r = v.trim().strip_prefix("bytes=")?;
    let (a, b) = r.split_once('-')?;
    let a = a.trim().parse().ok()?;
    let b = if b.trim().is_empty() {
        None
    } else {
        Some(b.trim().parse().ok()?)
    };
    if let Some(b) = b {
        if b < a {
            return None;
        }
    }
    Some((a, b))
}

pub(super) fn add_range(ranges: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    remove_range(ranges, s, e);
    ranges.push((s, e));
    ranges.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    *ranges = merged;
}

pub(super) fn remove_range(ranges: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let mut out = Vec::new();
    for &(a, b) in ranges.iter() {
        if b <= s || a >= e {
            out.push((a, b));
            continue;
        }
        if a < s {
            out.push((a, s));
        }
        if b > e {
            out.push((e, b));
        }
    }
    *ranges = out;
}
