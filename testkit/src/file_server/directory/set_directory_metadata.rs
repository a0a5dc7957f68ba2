//! Set Directory Metadata: replaces all of a directory's metadata.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let d = existing(op.share, op.path)?;
    d.meta = op.req.meta();
    Ok(d.written(200, op.etag, op.now))
}
