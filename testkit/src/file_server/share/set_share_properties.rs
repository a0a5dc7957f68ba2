//! Set Share Properties: quota, access tier and root squash (`smb.rs`); a lease id, when
//! sent, must be the share's.

use super::*;

pub(super) fn apply(st: &mut State, name: &str, req: &HttpRequest) -> Result<Reply, Reply> {
    let (share, etag, now) = st.write_in(name)?;
    share.lease.tick();
    if req.header("x-ms-lease-id").is_some() {
        share
            .lease
            .check_write(req.header("x-ms-lease-id"), "share")?;
    }
    smb::set_share_properties(share, req)?;
    Ok(share.written(200, etag, now))
}
