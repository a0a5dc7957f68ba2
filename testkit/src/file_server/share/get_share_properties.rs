//! Get Share Properties and Get Share Metadata (the same headers).

use super::*;

pub(super) fn apply(st: &mut State, name: &str) -> Result<Reply, Reply> {
    let share = existing(st, name)?;
    share.lease.tick();
    let mut r = Reply::new(200)
        .h("etag", share.etag.clone())
        .h("last-modified", share.last_modified.clone())
        .h("x-ms-share-quota", share.quota.to_string());
    for (k, v) in &share.meta {
        r = r.h(&format!("x-ms-meta-{k}"), v.clone());
    }
    share.lease.headers(&mut r.headers);
    Ok(smb::share_ext_reply(&share.ext, r))
}
