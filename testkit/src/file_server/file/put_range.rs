//! Put Range: `x-ms-write: update` writes the body at `x-ms-range` (at most 4 MiB, with an
//! optional transactional checksum), `clear` zeroes the range. From a URL: `rename_handles.rs`.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path, req, etag, now) = (op.share, op.path, op.req, op.etag, op.now);
    let f = writable_file(&mut share.files, path, req)?;
    let Some((a, Some(b))) = req
        .header("x-ms-range")
        .or(req.header("range"))
        .and_then(parse_range)
    else {
        return Err(Reply::error(
            400,
            "InvalidRange",
            "x-ms-range must be bytes=start-end.",
        ));
    };
    let len = b - a + 1;
    let write = req.header("x-ms-write").unwrap_or("").to_ascii_lowercase();
    if b >= f.data.len() as u64 {
        return Err(Reply::error(
            416,
            "InvalidRange",
            "The range specified is invalid for the current size of the resource.",
        ));
    }
    match write.as_str() {
        "update" => {
            if len > MAX_RANGE {
                return Err(Reply::error(
                    413,
                    "RequestBodyTooLarge",
                    "The request body is too large and exceeds the maximum permissible limit (4 MiB).",
                ));
            }
            if req.body.len() as u64 != len {
                return Err(Reply::error(
                    400,
                    "InvalidHeaderValue",
                    "Content-Length does not match the size of x-ms-range.",
                ));
            }
            transactional_check(req)?;
            f.data[a as usize..=b as usize].copy_from_slice(&req.body);
            add_range(&mut f.ranges, a, b + 1);
        }
        "clear" => {
            if !req.body.is_empty() {
                return Err(Reply::error(
                    400,
                    "InvalidHeaderValue",
                    "Content-Length must be 0 for x-ms-write: clear.",
                ));
            }
            f.data[a as usize..=b as usize].fill(0);
            remove_range(&mut f.ranges, a, b + 1);
        }
        _ => {
            return Err(Reply::error(
                400,
                "InvalidHeaderValue",
                "x-ms-write must be update or clear.",
            ));
        }
    }
    let mut r = f
        .node
        .written(201, etag, now)
        .h("x-ms-request-server-encrypted", "true")
        .h("x-ms-file-last-write-time", iso_now());
    if write == "update" {
        r = r.h("content-md5", azstore::blob::md5_base64(&req.body));
    }
    Ok(r)
}
