//! Request and response comparison rules (see `../shared/azure-recordings/README.md`,
//! "Using them in conformance tests").

use std::collections::BTreeMap;

use azstore::{Error, ErrorKind};
use percent_encoding::percent_decode_str;
use testkit::replay::{CapturedRequest, RecordedRequest, RecordedResponse};

/// Percent-decodes, treating `+` as a space in query strings.
fn decode(s: &str, plus_is_space: bool) -> String {
    let s = if plus_is_space {
        s.replace('+', " ")
    } else {
        s.to_string()
    };
    percent_decode_str(&s).decode_utf8_lossy().into_owned()
}

/// Decoded query pairs, sorted, without `timeout`.
pub fn query_pairs(raw: &str) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = raw
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| {
            let (k, v) = p.split_once('=').unwrap_or((p, ""));
            (decode(k, true), decode(v, true))
        })
        .filter(|(k, _)| !k.eq_ignore_ascii_case("timeout"))
        // An empty `$select` selects every property, as no `$select` does.
        .filter(|(k, v)| !(k == "$select" && v.is_empty()))
        .map(|(k, v)| {
            // `include` is a set: `snapshots,metadata` asks for the same as `metadata,snapshots`.
            if k == "include" {
                let mut parts: Vec<&str> = v.split(',').collect();
                parts.sort_unstable();
                let joined = parts.join(",");
                (k, joined)
            } else {
                (k, v)
            }
        })
        .collect();
    v.sort();
    v
}

/// The semantic headers compared when the recording carries them (lower-case names), beside
/// [`MUST_NOT_ADD`] and [`BLOB_HTTP_HEADERS`].
const SEMANTIC: &[&str] = &[
    "x-ms-lease-action",
    "x-ms-lease-duration",
    "x-ms-lease-break-period",
    "x-ms-proposed-lease-id",
    "x-ms-range",
    "x-ms-blob-type",
    "x-ms-type",
    "x-ms-content-length",
    "x-ms-blob-content-length",
    "x-ms-write",
    "x-ms-page-write",
    "x-ms-source-range",
    "x-ms-copy-source",
    "x-ms-blob-public-access",
    "x-ms-share-quota",
    "prefer",
    "content-type",
    "x-ms-proposed-lease-id",
    "x-ms-source-content-md5",
    "x-ms-requires-sync",
    "x-ms-copy-action",
    "x-ms-blob-sequence-number",
    "x-ms-sequence-number-action",
    "x-ms-access-tier",
    "x-ms-popreceipt",
    // File: stored HTTP headers, transactional MD5 (and every `x-ms-file-*` header, see
    // `is_semantic`).
    "x-ms-content-type",
    "x-ms-content-encoding",
    "x-ms-content-language",
    "x-ms-cache-control",
    "x-ms-content-disposition",
    "x-ms-content-md5",
    "content-md5",
];

/// Semantic headers that azstore must also not add when the recording does not have them:
/// sending a condition or lease id the recorded client did not send changes what the request
/// means.
const MUST_NOT_ADD: &[&str] = &[
    "if-match",
    "if-none-match",
    "if-modified-since",
    "if-unmodified-since",
    "x-ms-lease-id",
    "x-ms-delete-snapshots",
    "x-ms-blob-condition-appendpos",
    "x-ms-blob-condition-maxsize",
    "x-ms-source-if-match",
    "x-ms-source-if-none-match",
    "x-ms-source-if-modified-since",
    "x-ms-source-if-unmodified-since",
];

/// The HTTP headers Set Blob Properties stores (semantic too).
pub const BLOB_HTTP_HEADERS: &[&str] = &[
    "x-ms-blob-content-disposition",
    "x-ms-blob-content-language",
    "x-ms-blob-content-type",
    "x-ms-blob-content-md5",
    "x-ms-blob-cache-control",
    "x-ms-blob-content-encoding",
];

fn is_date_header(name: &str) -> bool {
    name.ends_with("modified-since")
}

fn header_values_equal(name: &str, recorded: &str, sent: &str) -> bool {
    if recorded == sent {
        return true;
    }
    if is_date_header(name) {
        let a = azstore_time(recorded);
        let b = azstore_time(sent);
        return a.is_some() && a == b;
    }
    if name == "x-ms-copy-source" {
        // The recording keeps the SAS `sig` redacted; compare the URL without it.
        return strip_sig(recorded) == strip_sig(sent);
    }
    if name == "content-type" {
        let media = |v: &str| {
            v.split(';')
                .next()
                .unwrap_or_default()
                .trim()
                .to_ascii_lowercase()
        };
        return media(recorded) == media(sent);
    }
    if name == "x-ms-range" {
        return recorded.trim() == sent.trim();
    }
    if name.starts_with("x-ms-file-") {
        // Keywords and attribute names are case-insensitive (`Inherit` / `inherit`).
        return recorded.eq_ignore_ascii_case(sent);
    }
    if name == "x-ms-requires-sync" {
        // A boolean: Python sends `True`, azstore `true`.
        return recorded.eq_ignore_ascii_case(sent);
    }
    false
}

fn strip_sig(url: &str) -> String {
    let (base, q) = url.split_once('?').unwrap_or((url, ""));
    let mut pairs = query_pairs(q);
    pairs.retain(|(k, _)| k != "sig");
    format!("{}?{:?}", decode(base, false), pairs)
}

/// Parses an HTTP date.
pub fn azstore_time(s: &str) -> Option<time::OffsetDateTime> {
    time::OffsetDateTime::parse(s.trim(), &time::format_description::well_known::Rfc2822).ok()
}

/// Parameters a recorded request may leave out because the service's documented default
/// is what azstore sends explicitly: (method, parameter, default value).
const DEFAULT_QUERY: &[(&str, &str, &str)] = &[
    // Get Messages: "numofmessages ... If not specified, a single message is retrieved";
    // "visibilitytimeout ... default 30 seconds".
    ("GET", "numofmessages", "1"),
    ("GET", "visibilitytimeout", "30"),
];

/// Compares what azstore sent with what the recorded client sent. `Err` lists every
/// difference.
pub fn compare_request(rec: &RecordedRequest, got: &CapturedRequest) -> Result<(), String> {
    let mut diffs = Vec::new();
    if !rec.method.eq_ignore_ascii_case(&got.method) {
        diffs.push(format!("method {} != recorded {}", got.method, rec.method));
    }
    let rec_path = decode(rec.raw_path(), false);
    let got_path = decode(&got.path, false);
    if rec_path.trim_end_matches('/') != got_path.trim_end_matches('/') {
        diffs.push(format!("path {got_path:?} != recorded {rec_path:?}"));
    }
    let rq = query_pairs(rec.raw_query());
    let mut gq = query_pairs(&got.query);
    // A parameter azstore sends with the service default value, that the recording leaves
    // out, means the same.
    gq.retain(|(k, v)| {
        let defaulted = DEFAULT_QUERY
            .iter()
            .any(|(m, n, d)| rec.method == *m && k == n && v == d);
        // azstore's List Queues always asks for metadata (a read of more data, nothing else).
        let more_data = rec.method == "GET"
            && k == "include"
            && v == "metadata"
            && rq.iter().any(|(rk, rv)| rk == "comp" && rv == "list");
        !((defaulted || more_data) && !rq.iter().any(|(rk, _)| rk == k))
    });
    if rq != gq {
        diffs.push(format!("query {gq:?} != recorded {rq:?}"));
    }
    // Every File SMB / copy header (`x-ms-file-attributes`, `-creation-time`, `-permission`,
    // `-permission-key`, ...) is semantic too.
    let file_headers: Vec<String> = rec
        .headers
        .iter()
        .chain(got.headers.iter())
        .map(|(k, _)| k.to_ascii_lowercase())
        .filter(|k| k.starts_with("x-ms-file-"))
        .collect();
    let names = MUST_NOT_ADD
        .iter()
        .chain(SEMANTIC)
        .chain(BLOB_HTTP_HEADERS)
        .copied()
        .chain(file_headers.iter().map(String::as_str));
    let mut seen = std::collections::BTreeSet::new();
    for name in names {
        if !seen.insert(name) {
            continue;
        }
        let r = rec.header(name);
        let mut g = got.header(name);
        if name == "x-ms-range" && g.is_none() {
            g = got.header("range");
        }
        match (r, g) {
            (Some(r), Some(g)) if header_values_equal(name, r, g) => {}
            (Some(r), g) => diffs.push(format!("header {name}: {g:?} != recorded {r:?}")),
            (None, Some(g)) if MUST_NOT_ADD.contains(&name) => {
                diffs.push(format!("header {name}: sent {g:?}, recorded none"))
            }
            _ => {}
        }
    }
    // Metadata: the same set of x-ms-meta-* pairs (names are case-insensitive).
    let meta = |hs: Vec<(String, String)>| -> BTreeMap<String, String> {
        hs.into_iter()
            .filter(|(k, _)| k.to_ascii_lowercase().starts_with("x-ms-meta-"))
            .map(|(k, v)| (k.to_ascii_lowercase(), v))
            .collect()
    };
    let rm = meta(rec.headers.clone());
    let gm = meta(got.headers.clone());
    if rm != gm {
        diffs.push(format!("metadata {gm:?} != recorded {rm:?}"));
    }
    if let Err(e) = compare_body(rec, got) {
        diffs.push(e);
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(diffs.join("; "))
    }
}

fn compare_body(rec: &RecordedRequest, got: &CapturedRequest) -> Result<(), String> {
    let r = rec.body.as_deref().unwrap_or_default();
    let g = &got.body[..];
    if r == g {
        return Ok(());
    }
    let ct = rec
        .header("content-type")
        .or(got.header("content-type"))
        .unwrap_or_default()
        .to_ascii_lowercase();
    let looks_xml = |b: &[u8]| {
        let s = String::from_utf8_lossy(b);
        s.trim_start_matches('\u{feff}')
            .trim_start()
            .starts_with('<')
    };
    if ct.starts_with("multipart/") {
        return compare_multipart(r, g);
    }
    if ct.contains("json") || (r.first() == Some(&b'{') && g.first() == Some(&b'{')) {
        let a: Result<serde_json::Value, _> = serde_json::from_slice(r);
        let b: Result<serde_json::Value, _> = serde_json::from_slice(g);
        return match (a, b) {
            (Ok(a), Ok(b)) if json_equal(&a, &b) => Ok(()),
            (Ok(a), Ok(b)) => Err(format!("JSON body {b} != recorded {a}")),
            _ => Err("body is not JSON".into()),
        };
    }
    // Set ACL without policies: no body and an empty `<SignedIdentifiers/>` both remove every
    // policy.
    let empty_doc = |b: &[u8]| xml_canonical(b).is_ok_and(|c| c.len() == 2);
    if (r.is_empty() && looks_xml(g) && empty_doc(g))
        || (g.is_empty() && looks_xml(r) && empty_doc(r))
    {
        return Ok(());
    }
    if looks_xml(r) && looks_xml(g) {
        let a = xml_canonical(r)?;
        let b = xml_canonical(g)?;
        return if a == b {
            Ok(())
        } else {
            Err(format!("XML body {b:?} != recorded {a:?}"))
        };
    }
    if r.is_empty() && g.is_empty() {
        return Ok(());
    }
    Err(format!(
        "body differs: sent {} bytes, recorded {} bytes",
        g.len(),
        r.len()
    ))
}

/// JSON equality as data: numbers compare by value, and an `@odata.type` of `Edm.String`
/// (the default type) equals none.
fn json_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value;
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            // As the service reads an entity: a null property is no property, and a type
            // annotation that names the type JSON already implies (Edm.String for a string,
            // Edm.Double for a fractional number, Edm.Int32 for an integer, Edm.Boolean) adds
            // nothing.
            let strip = |m: &serde_json::Map<String, Value>| -> BTreeMap<String, Value> {
                let implied = |k: &str, ty: &str| match m.get(k.trim_end_matches("@odata.type")) {
                    Some(Value::String(_)) => ty == "Edm.String",
                    Some(Value::Number(n)) if n.is_f64() => ty == "Edm.Double",
                    Some(Value::Number(_)) => ty == "Edm.Int32",
                    Some(Value::Bool(_)) => ty == "Edm.Boolean",
                    Some(Value::Null) | None => true,
                    _ => false,
                };
                // `Timestamp` is set by the service; a value sent with a write is ignored.
                m.iter()
                    .filter(|(k, _)| !k.starts_with("Timestamp"))
                    .filter(|(k, v)| {
                        !(v.is_null()
                            || k.ends_with("@odata.type")
                                && v.as_str().is_some_and(|ty| implied(k, ty)))
                    })
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect()
            };
            let (x, y) = (strip(x), strip(y));
            let is_date = |k: &str| {
                x.get(&format!("{k}@odata.type")).and_then(Value::as_str) == Some("Edm.DateTime")
            };
            let same_instant = |v: &Value, w: &Value| {
                let t = |v: &Value| {
                    v.as_str().and_then(|s| {
                        time::OffsetDateTime::parse(
                            s,
                            &time::format_description::well_known::Rfc3339,
                        )
                        .ok()
                    })
                };
                t(v).is_some() && t(v) == t(w)
            };
            x.len() == y.len()
                && x.iter().all(|(k, v)| {
                    y.get(k)
                        .is_some_and(|w| json_equal(v, w) || (is_date(k) && same_instant(v, w)))
                })
        }
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(v, w)| json_equal(v, w))
        }
        _ => a == b,
    }
}

/// A canonical form of an XML document: elements with their attributes and trimmed text,
/// without the declaration, comments or whitespace between elements.
pub fn xml_canonical(bytes: &[u8]) -> Result<Vec<String>, String> {
    use quick_xml::events::Event;
    let text = String::from_utf8_lossy(bytes);
    let text = text.trim_start_matches('\u{feff}');
    let mut reader = quick_xml::Reader::from_str(text);
    let mut out = Vec::new();
    // Text arrives in pieces: the reader reports each reference (`&amp;`, `&#13;`) apart from
    // the text around it. The pieces are joined before the text is compared.
    let mut text = String::new();
    let flush = |text: &mut String, out: &mut Vec<String>| {
        if !text.trim().is_empty() {
            out.push(canonical_text(text.trim()));
        }
        text.clear();
    };
    loop {
        match reader.read_event() {
            Ok(Event::Text(t)) => text.push_str(&t.into_inner()),
            Ok(Event::GeneralRef(r)) => match r.resolve_char_ref() {
                Ok(Some(c)) => text.push(c),
                _ => match quick_xml::escape::resolve_xml_entity(&r.clone().into_inner()) {
                    Some(s) => text.push_str(s),
                    None => return Err(format!("unknown reference &{};", r.into_inner())),
                },
            },
            Ok(Event::CData(t)) => {
                flush(&mut text, &mut out);
                out.push(t.into_inner().into_owned());
            }
            Ok(Event::Start(e)) => {
                flush(&mut text, &mut out);
                out.push(start_token(&e));
            }
            Ok(Event::Empty(e)) => {
                flush(&mut text, &mut out);
                out.push(start_token(&e));
                out.push("</>".into());
            }
            Ok(Event::End(_)) => {
                flush(&mut text, &mut out);
                out.push("</>".into());
            }
            Ok(Event::Eof) => break,
            Ok(_) => {}
            Err(e) => return Err(format!("XML body does not parse: {e}")),
        }
    }
    Ok(out)
}

/// A date or date-time is compared as the instant it names (`2011-10-11` is
/// `2011-10-11T00:00:00Z`); other text as is.
fn canonical_text(t: &str) -> String {
    use time::format_description::well_known::Rfc3339;
    // Booleans in any case (`True` from Python, `true` from azstore) mean the same.
    if t.eq_ignore_ascii_case("true") || t.eq_ignore_ascii_case("false") {
        return t.to_ascii_lowercase();
    }
    if let Ok(d) = time::OffsetDateTime::parse(t, &Rfc3339) {
        return format!("instant {}", d.unix_timestamp_nanos());
    }
    let fmt = time::macros::format_description!("[year]-[month]-[day]");
    if let Ok(d) = time::Date::parse(t, &fmt) {
        return format!(
            "instant {}",
            d.midnight().assume_utc().unix_timestamp_nanos()
        );
    }
    t.to_string()
}

fn start_token(e: &quick_xml::events::BytesStart<'_>) -> String {
    let mut attrs: Vec<String> = e
        .attributes()
        .flatten()
        .map(|a| {
            format!(
                "{}={}",
                a.key.as_ref(),
                a.normalized_value(quick_xml::XmlVersion::Implicit1_0)
                    .unwrap_or_default()
            )
        })
        .collect();
    attrs.sort();
    format!("<{} {}>", e.name().as_ref(), attrs.join(" "))
}

/// Table batches: compare each operation's request line, its JSON body and its
/// `If-Match`, ignoring boundaries and line ends.
fn compare_multipart(r: &[u8], g: &[u8]) -> Result<(), String> {
    let a = batch_parts(&String::from_utf8_lossy(r));
    let b = batch_parts(&String::from_utf8_lossy(g));
    if a.len() != b.len() {
        return Err(format!(
            "batch has {} operations, recorded {}",
            b.len(),
            a.len()
        ));
    }
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        if x.0 != y.0 {
            return Err(format!("batch op {i}: {:?} != recorded {:?}", y.0, x.0));
        }
        if x.1 != y.1 {
            return Err(format!(
                "batch op {i}: If-Match {:?} != recorded {:?}",
                y.1, x.1
            ));
        }
        match (&x.2, &y.2) {
            (Some(p), Some(q)) if json_equal(p, q) => {}
            (None, None) => {}
            (p, q) => return Err(format!("batch op {i}: body {q:?} != recorded {p:?}")),
        }
    }
    Ok(())
}

type BatchPart = (String, Option<String>, Option<serde_json::Value>);

fn batch_parts(body: &str) -> Vec<BatchPart> {
    let body = body.replace("\r\n", "\n");
    let mut out = Vec::new();
    let lines: Vec<&str> = body.lines().collect();
    let mut i = 0;
    while i < lines.len() {
        let l = lines[i];
        let Some((method, rest)) = l.split_once(' ') else {
            i += 1;
            continue;
        };
        if !["GET", "POST", "PUT", "MERGE", "DELETE", "PATCH"].contains(&method)
            || !rest.ends_with("HTTP/1.1")
        {
            i += 1;
            continue;
        }
        // Request line: method and the decoded path after the host.
        let url = rest.trim_end_matches("HTTP/1.1").trim();
        let path = url
            .split_once("://")
            .map(|(_, r)| r.find('/').map_or("", |j| &r[j..]))
            .unwrap_or(url);
        let line = format!("{method} {}", decode(path, false));
        i += 1;
        let if_match = part_if_match(&lines, &mut i);
        let mut json = None;
        if i < lines.len() && lines[i].trim_start().starts_with('{') {
            json = serde_json::from_str(lines[i].trim()).ok();
            i += 1;
        }
        out.push((line, if_match, json));
    }
    out
}

/// The `If-Match` among the headers of one part of a batch body that start at `lines[*i]`;
/// leaves `*i` past the blank line that ends them.
pub fn part_if_match(lines: &[&str], i: &mut usize) -> Option<String> {
    let mut if_match = None;
    while *i < lines.len() && !lines[*i].is_empty() {
        if let Some((k, v)) = lines[*i].split_once(':') {
            if k.trim().eq_ignore_ascii_case("if-match") {
                if_match = Some(v.trim().to_string());
            }
        }
        *i += 1;
    }
    *i += 1;
    if_match
}

/// The error code the service gave: `x-ms-error-code`, else the XML `<Code>`, else the
/// JSON `odata.error.code`.
pub fn recorded_error_code(resp: &RecordedResponse) -> Option<String> {
    if let Some(c) = resp.header("x-ms-error-code") {
        return Some(c.to_string());
    }
    let text = String::from_utf8_lossy(&resp.body);
    let text = text.trim_start_matches('\u{feff}');
    if let Some(start) = text.find("<Code>") {
        let rest = &text[start + 6..];
        return rest.find("</Code>").map(|end| rest[..end].to_string());
    }
    let v: serde_json::Value = serde_json::from_str(text).ok()?;
    v.get("odata.error")?
        .get("code")?
        .as_str()
        .map(str::to_string)
}

/// The `ErrorKind` the service's answer means.
pub fn expected_kind(status: u16, code: Option<&str>) -> ErrorKind {
    let lease = code.is_some_and(|c| c.starts_with("Lease"));
    // A lease this request named that is no longer its own, as opposed to a lease someone
    // else holds.
    let lost = code.is_some_and(|c| {
        c.starts_with("LeaseIdMismatchWith")
            || c.starts_with("LeaseNotPresentWith")
            || matches!(
                c,
                "LeaseLost"
                    | "LeaseIsBrokenAndCannotBeRenewed"
                    | "LeaseIsBreakingAndCannotBeChanged"
                    | "LeaseAlreadyBroken"
            )
    });
    let container_gone = matches!(
        code,
        Some(
            "ContainerNotFound"
                | "TableNotFound"
                | "QueueNotFound"
                | "ShareNotFound"
                | "ParentNotFound"
        )
    );
    match status {
        304 => ErrorKind::NotModified,
        409 | 412 if lost => ErrorKind::LeaseLost,
        409 | 412 if lease => ErrorKind::LeaseHeld,
        412 => ErrorKind::PreconditionFailed,
        409 if code.is_some_and(|c| c.ends_with("AlreadyExists")) => ErrorKind::AlreadyExists,
        409 => ErrorKind::Conflict,
        404 if container_gone => ErrorKind::ContainerNotFound,
        404 => ErrorKind::NotFound,
        401 | 403 => ErrorKind::Auth,
        400 if matches!(code, Some("Md5Mismatch" | "Crc64Mismatch")) => ErrorKind::Integrity,
        _ => ErrorKind::Service,
    }
}

/// Checks that `err` is the error the recorded response means.
pub fn check_error(err: &Error, resp: &RecordedResponse) -> Result<(), String> {
    let code = recorded_error_code(resp);
    let want = expected_kind(resp.status, code.as_deref());
    let mut diffs = Vec::new();
    if err.status() != Some(resp.status) {
        diffs.push(format!(
            "status {:?} != recorded {}",
            err.status(),
            resp.status
        ));
    }
    if err.kind() != want {
        diffs.push(format!("kind {:?} != {want:?}", err.kind()));
    }
    let got = err.error_code().map(|c| c.as_str().to_string());
    if got != code {
        diffs.push(format!("error code {got:?} != recorded {code:?}"));
    }
    if diffs.is_empty() {
        Ok(())
    } else {
        Err(format!("{} (error: {err})", diffs.join("; ")))
    }
}

/// Whether the recorded answer is a failure.
pub fn is_failure(resp: &RecordedResponse) -> bool {
    resp.status >= 300
}

/// `Ok(Some(v))` when both succeeded, `Ok(None)` when both failed the same way, `Err`
/// otherwise.
pub fn outcome<T: std::fmt::Debug>(
    got: azstore::Result<T>,
    resp: &RecordedResponse,
) -> Result<Option<T>, String> {
    match (got, is_failure(resp)) {
        (Ok(v), false) => Ok(Some(v)),
        (Err(e), true) => check_error(&e, resp).map(|()| None),
        (Ok(v), true) => Err(format!(
            "succeeded with {v:?}, but the service answered {}",
            resp.status
        )),
        (Err(e), false) => Err(format!(
            "failed ({e}), but the service answered {}",
            resp.status
        )),
    }
}

/// Compares an optional typed value with a recorded header.
pub fn eq_header(
    what: &str,
    got: Option<String>,
    resp: &RecordedResponse,
    header: &str,
) -> Result<(), String> {
    let want = resp.header(header).map(str::to_string);
    if got == want {
        Ok(())
    } else {
        Err(format!("{what} {got:?} != recorded {header} {want:?}"))
    }
}

/// Compares a typed time with a recorded HTTP-date header.
pub fn eq_date(
    what: &str,
    got: Option<time::OffsetDateTime>,
    resp: &RecordedResponse,
    header: &str,
) -> Result<(), String> {
    let want = resp.header(header).and_then(azstore_time);
    if got == want {
        Ok(())
    } else {
        Err(format!("{what} {got:?} != recorded {header} {want:?}"))
    }
}

fn xml_events(body: &[u8]) -> Vec<XmlEv> {
    use quick_xml::events::Event;
    let text = String::from_utf8_lossy(body);
    let text = text.trim_start_matches('\u{feff}').to_string();
    let mut reader = quick_xml::Reader::from_str(&text);
    let mut out = Vec::new();
    loop {
        match reader.read_event() {
            Ok(Event::Start(e)) => out.push(XmlEv::Start(e.name().as_ref().to_owned())),
            Ok(Event::Empty(e)) => {
                out.push(XmlEv::Start(e.name().as_ref().to_owned()));
                out.push(XmlEv::End);
            }
            Ok(Event::End(_)) => out.push(XmlEv::End),
            // The reader reports each reference (`&amp;`) apart from the text around it: the
            // pieces are joined into one text event.
            Ok(Event::Text(t)) => push_text(&mut out, &t.into_inner()),
            Ok(Event::GeneralRef(r)) => {
                let resolved = match r.resolve_char_ref() {
                    Ok(Some(c)) => c.to_string(),
                    _ => quick_xml::escape::resolve_xml_entity(&r.into_inner())
                        .unwrap_or_default()
                        .to_string(),
                };
                push_text(&mut out, &resolved);
            }
            Ok(Event::CData(t)) => push_text(&mut out, &t.into_inner()),
            Ok(Event::Eof) | Err(_) => break,
            Ok(_) => {}
        }
    }
    out
}

fn push_text(out: &mut Vec<XmlEv>, piece: &str) {
    match out.last_mut() {
        Some(XmlEv::Text(t)) => t.push_str(piece),
        _ => out.push(XmlEv::Text(piece.to_string())),
    }
}

enum XmlEv {
    Start(String),
    End,
    Text(String),
}

fn ends_with_path(stack: &[String], path: &[&str]) -> bool {
    stack.len() >= path.len()
        && stack[stack.len() - path.len()..]
            .iter()
            .zip(path)
            .all(|(s, p)| *p == "*" || s == p)
}

/// The text of every element whose ancestry ends with `path` (`*` matches any name), in
/// document order; an empty element gives "".
pub fn xml_texts(body: &[u8], path: &[&str]) -> Vec<String> {
    let mut stack: Vec<String> = Vec::new();
    let mut texts: Vec<String> = Vec::new();
    let mut out = Vec::new();
    for ev in xml_events(body) {
        match ev {
            XmlEv::Start(n) => {
                stack.push(n);
                texts.push(String::new());
            }
            XmlEv::Text(t) => {
                if let Some(last) = texts.last_mut() {
                    last.push_str(&t);
                }
            }
            XmlEv::End => {
                if ends_with_path(&stack, path) {
                    out.push(texts.last().cloned().unwrap_or_default());
                }
                stack.pop();
                texts.pop();
            }
        }
    }
    out
}

/// For each element named `item`, its content flattened to `<A>text</A>` tokens.
pub fn xml_items(body: &[u8], item: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut depth_in: Option<usize> = None;
    let mut depth = 0usize;
    let mut cur = String::new();
    for ev in xml_events(body) {
        match ev {
            XmlEv::Start(n) => {
                depth += 1;
                if depth_in.is_none() && n == item {
                    depth_in = Some(depth);
                    cur.clear();
                } else if depth_in.is_some() {
                    cur.push_str(&format!("<{n}>"));
                }
            }
            XmlEv::Text(t) => {
                if depth_in.is_some() {
                    cur.push_str(t.trim());
                }
            }
            XmlEv::End => {
                if depth_in == Some(depth) {
                    out.push(std::mem::take(&mut cur));
                    depth_in = None;
                } else if depth_in.is_some() {
                    cur.push_str("</>");
                }
                depth -= 1;
            }
        }
    }
    out
}

/// The metadata of each listed item (names compared lower-case) against the recorded
/// `<Metadata>` of each `<item>`, in order.
pub fn check_listed_metadata<'a>(
    listed: impl Iterator<Item = &'a BTreeMap<String, String>>,
    resp: &RecordedResponse,
    item: &str,
) -> Result<(), String> {
    let metas = xml_metadata(&resp.body, item);
    let got: Vec<BTreeMap<String, String>> = listed
        .map(|m| {
            m.iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
                .collect()
        })
        .collect();
    if got != metas {
        return Err(format!("metadata {got:?} != recorded {metas:?}"));
    }
    Ok(())
}

/// A listing page's continuation marker against the recorded `<NextMarker>` (empty is none).
pub fn check_next_marker(got: Option<&str>, resp: &RecordedResponse) -> Result<(), String> {
    let want = xml_texts(&resp.body, &["NextMarker"])
        .into_iter()
        .next()
        .filter(|m| !m.is_empty());
    if got != want.as_deref() {
        return Err(format!("next marker {got:?} != recorded {want:?}"));
    }
    Ok(())
}

/// For each element named `item`, its `<Metadata>` pairs (names lower-cased).
pub fn xml_metadata(body: &[u8], item: &str) -> Vec<BTreeMap<String, String>> {
    let mut out = Vec::new();
    let mut stack: Vec<String> = Vec::new();
    let mut text = String::new();
    for ev in xml_events(body) {
        match ev {
            XmlEv::Start(n) => {
                if n == item {
                    out.push(BTreeMap::new());
                }
                stack.push(n);
                text.clear();
            }
            XmlEv::Text(t) => text.push_str(&t),
            XmlEv::End => {
                let l = stack.len();
                if l >= 3 && stack[l - 2] == "Metadata" && stack[l - 3] == item {
                    if let Some(m) = out.last_mut() {
                        m.insert(stack[l - 1].to_ascii_lowercase(), text.clone());
                    }
                }
                stack.pop();
                text.clear();
            }
        }
    }
    out
}

/// The (name, text) of each child of the root element.
pub fn xml_children(body: &[u8]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut cur: Option<(String, String)> = None;
    for ev in xml_events(body) {
        match ev {
            XmlEv::Start(n) => {
                depth += 1;
                if depth == 2 {
                    cur = Some((n, String::new()));
                }
            }
            XmlEv::Text(t) => {
                if let Some((_, s)) = cur.as_mut() {
                    s.push_str(&t);
                }
            }
            XmlEv::End => {
                if depth == 2 {
                    out.extend(cur.take());
                }
                depth -= 1;
            }
        }
    }
    out
}
