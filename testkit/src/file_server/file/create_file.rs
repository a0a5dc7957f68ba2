//! Create File: `PUT` with `x-ms-type: file` and `x-ms-content-length`; the content is
//! zeros until written.

use super::*;

pub(super) fn apply(
    share: &mut Share,
    path: &str,
    req: &HttpRequest,
    etag: String,
    now: String,
) -> Reply {
    let lease_id = req.header("x-ms-lease-id");
    if req
        .header("x-ms-type")
        .is_none_or(|t| !t.eq_ignore_ascii_case("file"))
    {
        return Reply::error(400, "MissingRequiredHeader", "x-ms-type: file is required.");
    }
    let Some(size) = req
        .header("x-ms-content-length")
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return Reply::error(
            400,
            "MissingRequiredHeader",
            "x-ms-content-length is required.",
        );
    };
    if size > 4 * 1024 * 1024 * 1024 * 1024 {
        return Reply::error(400, "OutOfRangeInput", "The file size exceeds 4 TiB.");
    }
    if size > MAX_TEST_FILE {
        // Not an Azure limit: the test server keeps files in memory.
        return Reply::error(
            400,
            "OutOfRangeInput",
            "The test server keeps files in memory: at most 1 GiB.",
        );
    }
    if share.dirs.contains_key(path) {
        return Reply::error(
            409,
            "ResourceTypeMismatch",
            "The specified resource type does not match.",
        );
    }
    if let Some(r) = parent_missing(share, path) {
        return r;
    }
    let lease = match share.files.get(path) {
        Some(f) => {
            if let Err(r) = f.lease.check_write(lease_id, "file") {
                return r;
            }
            f.lease.clone()
        }
        None => {
            if lease_id.is_some() {
                return Reply::error(
                    412,
                    "LeaseNotPresentWithFileOperation",
                    "There is currently no lease on the file.",
                );
            }
            Lease::Available
        }
    };
    let smb = match smb::Smb::create(req, false, &mut share.ext) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let smb_reply = smb.headers(Reply::new(201));
    share.files.insert(
        path.to_string(),
        FileNode {
            node: Node {
                meta: req.meta(),
                etag: etag.clone(),
                last_modified: now.clone(),
                smb,
            },
            data: vec![0; size as usize],
            ranges: Vec::new(),
            content_type: req
                .header("x-ms-content-type")
                .unwrap_or("application/octet-stream")
                .to_string(),
            http: file_http_headers(req),
            lease,
            copy: None,
        },
    );
    let mut r = smb_reply
        .h("etag", etag)
        .h("last-modified", now)
        .h("x-ms-request-server-encrypted", "true");
    r.status = 201;
    r
}
