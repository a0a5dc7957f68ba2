//! Set File Properties: SMB properties, a resize (`x-ms-content-length`) and the HTTP
//! properties.

use super::*;

pub(super) fn apply(
    share: &mut Share,
    path: &str,
    req: &HttpRequest,
    etag: String,
    now: String,
) -> Reply {
    let f = match writable_file(&mut share.files, path, req) {
        Ok(f) => f,
        Err(r) => return r,
    };
    let mut smb = f.node.smb.clone();
    if let Err(r) = smb.set(req, false, &mut share.ext) {
        return r;
    }
    f.node.smb = smb;
    if let Some(size) = req.header("x-ms-content-length") {
        let Ok(size) = size.parse::<u64>() else {
            return Reply::error(400, "InvalidHeaderValue", "x-ms-content-length is invalid.");
        };
        if size > MAX_TEST_FILE {
            return Reply::error(
                400,
                "OutOfRangeInput",
                "The test server keeps files in memory: at most 1 GiB.",
            );
        }
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
    f.node.etag = etag.clone();
    f.node.last_modified = now.clone();
    f.node
        .smb
        .headers(Reply::new(200).h("etag", etag).h("last-modified", now))
}
