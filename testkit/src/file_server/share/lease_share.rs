//! Lease Share: the lease actions of `lease.rs` on a share (15–60 s or infinite).

use super::*;

pub(super) fn apply(st: &mut State, name: &str, req: &HttpRequest) -> Result<Reply, Reply> {
    let share = existing(st, name)?;
    let r = lease_op(&mut share.lease, req, false);
    Ok(if r.status < 300 {
        r.h("etag", share.etag.clone())
            .h("last-modified", share.last_modified.clone())
    } else {
        r
    })
}
