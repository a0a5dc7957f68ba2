//! Create File: `PUT` with `x-ms-type: file` and `x-ms-content-length`; the content is
//! zeros until written.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path, req, etag, now) = (op.share, op.path, op.req, op.etag, op.now);
    let lease_id = req.header("x-ms-lease-id");
    if req
        .header("x-ms-type")
        .is_none_or(|t| !t.eq_ignore_ascii_case("file"))
    {
        return Err(Reply::error(
            400,
            "MissingRequiredHeader",
            "x-ms-type: file is required.",
        ));
    }
    let Some(size) = req
        .header("x-ms-content-length")
        .and_then(|v| v.parse::<u64>().ok())
    else {
        return Err(Reply::error(
            400,
            "MissingRequiredHeader",
            "x-ms-content-length is required.",
        ));
    };
    if size > 4 * 1024 * 1024 * 1024 * 1024 {
        return Err(Reply::error(
            400,
            "OutOfRangeInput",
            "The file size exceeds 4 TiB.",
        ));
    }
    fits_in_memory(size)?;
    if share.dirs.contains_key(path) {
        return Err(Reply::error(
            409,
            "ResourceTypeMismatch",
            "The specified resource type does not match.",
        ));
    }
    if let Some(r) = parent_missing(share, path) {
        return Err(r);
    }
    let lease = match share.files.get(path) {
        Some(f) => {
            f.lease.check_write(lease_id, "file")?;
            f.lease.clone()
        }
        None => {
            if lease_id.is_some() {
                return Err(Reply::error(
                    412,
                    "LeaseNotPresentWithFileOperation",
                    "There is currently no lease on the file.",
                ));
            }
            Lease::Available
        }
    };
    let smb = smb::Smb::create(req, false, &mut share.ext)?;
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
    Ok(r)
}
