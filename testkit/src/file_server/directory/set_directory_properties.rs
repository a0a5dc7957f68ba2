//! Set Directory Properties: the SMB properties (`preserve` keeps one).

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let Some(d) = op.share.dirs.get_mut(op.path) else {
        return Err(not_found());
    };
    d.smb.set(op.req, true, &mut op.share.ext)?;
    let r = d
        .written(200, op.etag, op.now)
        .h("x-ms-request-server-encrypted", "true");
    Ok(d.smb.headers(r))
}
