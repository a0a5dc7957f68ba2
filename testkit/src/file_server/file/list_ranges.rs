//! List Ranges: the written ranges of a file, within `x-ms-range` when given.

use super::*;

pub(super) fn apply(share: &Share, path: &str, req: &HttpRequest) -> Reply {
    let Some(f) = share.files.get(path) else {
        return not_found();
    };
    let total = f.data.len() as u64;
    let (lo, hi) = match req
        .header("x-ms-range")
        .or(req.header("range"))
        .map(parse_range)
    {
        None => (0, total),
        Some(Some((a, b))) => (a, b.map(|b| b + 1).unwrap_or(total).min(total)),
        Some(None) => {
            return Reply::error(400, "InvalidRange", "The range specified is invalid.");
        }
    };
    let mut x = String::from("\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Ranges>");
    for &(a, b) in &f.ranges {
        let (a, b) = (a.max(lo), b.min(hi));
        if a < b {
            x.push_str(&format!(
                "<Range><Start>{a}</Start><End>{}</End></Range>",
                b - 1
            ));
        }
    }
    x.push_str("</Ranges>");
    Reply::new(200)
        .h("etag", f.node.etag.clone())
        .h("last-modified", f.node.last_modified.clone())
        .h("x-ms-content-length", total.to_string())
        .xml(x)
}
