//! Lease File: the lease actions of `lease.rs` on a file (infinite only).

use super::*;

pub(super) fn apply(share: &mut Share, path: &str, req: &HttpRequest) -> Reply {
    let Some(f) = share.files.get_mut(path) else {
        return not_found();
    };
    let r = lease_op(&mut f.lease, req, true);
    if r.status < 300 {
        r.h("etag", f.node.etag.clone())
            .h("last-modified", f.node.last_modified.clone())
    } else {
        r
    }
}
