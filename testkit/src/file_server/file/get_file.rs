//! Get File (whole or a range), Get File Properties (`HEAD`) and Get File Metadata
//! (`comp=metadata`: the headers of Get File Properties, no body).

use super::*;

pub(super) fn apply(share: &Share, path: &str, req: &HttpRequest, metadata_only: bool) -> Reply {
    let lease_id = req.header("x-ms-lease-id");
    let m = req.method.as_str();
    let Some(f) = share.files.get(path) else {
        return not_found();
    };
    if let Some(id) = lease_id {
        // Reads accept a lease id; it must match when given.
        if f.lease.active_id().is_some() {
            if let Err(r) = f.lease.check_write(Some(id), "file") {
                return r;
            }
        } else {
            return Reply::error(
                412,
                "LeaseNotPresentWithFileOperation",
                "There is currently no lease on the file.",
            );
        }
    }
    let total = f.data.len() as u64;
    let range = req.header("x-ms-range").or(req.header("range"));
    let mut r;
    if metadata_only {
        r = Reply::new(200);
    } else if m == "GET" && range.is_some() {
        let Some((a, b)) = range.and_then(parse_range) else {
            return Reply::error(400, "InvalidRange", "The range specified is invalid.");
        };
        if a >= total {
            return Reply::error(
                416,
                "InvalidRange",
                "The range specified is invalid for the current size of the resource.",
            )
            .h("content-range", format!("bytes */{total}"));
        }
        let end = b.unwrap_or(total - 1).min(total - 1);
        r = Reply::new(206).h("content-range", format!("bytes {a}-{end}/{total}"));
        r.body = f.data[a as usize..=end as usize].to_vec();
    } else {
        r = Reply::new(200);
        if m == "GET" {
            r.body = f.data.clone();
        } else {
            r = r.h("content-length", total.to_string());
        }
    }
    r = r
        .h("etag", f.node.etag.clone())
        .h("last-modified", f.node.last_modified.clone())
        .h("content-type", f.content_type.clone())
        .h("accept-ranges", "bytes")
        .h("x-ms-type", "File")
        .h("x-ms-server-encrypted", "true");
    r = f.node.smb.headers(r);
    if let Some(c) = &f.copy {
        r = c.headers(r);
    }
    for (k, v) in &f.node.meta {
        r = r.h(&format!("x-ms-meta-{k}"), v.clone());
    }
    for (k, v) in &f.http {
        // A ranged read reports the range's MD5 only when asked; the whole file's
        // stored one comes as `x-ms-content-md5` (Get File, REST reference).
        if k == "content-md5" && r.status == 206 {
            r = r.h("x-ms-content-md5", v.clone());
            continue;
        }
        r = r.h(k, v.clone());
    }
    f.lease.headers(&mut r.headers);
    r
}
