//! Set File Metadata: replaces all of a file's metadata.

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
    f.node.meta = req.meta();
    f.node.etag = etag.clone();
    f.node.last_modified = now.clone();
    Reply::new(200).h("etag", etag).h("last-modified", now)
}
