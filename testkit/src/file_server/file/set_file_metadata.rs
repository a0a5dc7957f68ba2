//! Set File Metadata: replaces all of a file's metadata.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path, req, etag, now) = (op.share, op.path, op.req, op.etag, op.now);
    let f = writable_file(&mut share.files, path, req)?;
    f.node.meta = req.meta();
    Ok(f.node.written(200, etag, now))
}
