//! Set File Properties: SMB properties, a resize (`x-ms-content-length`) and the HTTP
//! properties.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path, req, etag, now) = (op.share, op.path, op.req, op.etag, op.now);
    let f = writable_file(&mut share.files, path, req)?;
    let mut smb = f.node.smb.clone();
    smb.set(req, false, &mut share.ext)?;
    f.node.smb = smb;
    if let Some(size) = req.header("x-ms-content-length") {
        let Ok(size) = size.parse::<u64>() else {
            return Err(Reply::error(
                400,
                "InvalidHeaderValue",
                "x-ms-content-length is invalid.",
            ));
        };
        fits_in_memory(size)?;
        f.data.resize(size as usize, 0);
        remove_range(&mut f.ranges, size, u64::MAX);
    }
    // Setting any HTTP property replaces all of them, as on Azure (absent ones are
    // cleared). A call that sets none (a plain resize) keeps them: this server's
    // simplification, which azstore's own resize relies on.
    let http = file_http_headers(req);
    let sets_http = !http.is_empty() || req.header("x-ms-content-type").is_some();
    if sets_http {
        f.content_type = req
            .header("x-ms-content-type")
            .unwrap_or("application/octet-stream")
            .to_string();
        f.http = http;
    }
    let r = f.node.written(200, etag, now);
    Ok(f.node.smb.headers(r))
}
