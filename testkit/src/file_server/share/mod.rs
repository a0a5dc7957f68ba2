//! Share operations, one file each (as `file/` and `directory/`), and List Shares.

use super::*;

mod create_share;
mod delete_share;
mod get_share_properties;
mod lease_share;
mod list_shares;
mod set_share_metadata;
mod set_share_properties;
mod snapshots;

pub(super) use list_shares::list_shares;

pub(super) fn not_found_share() -> Reply {
    Reply::error(404, "ShareNotFound", "The specified share does not exist.")
}

pub(super) fn share_op(
    st: &mut State,
    name: &str,
    m: &str,
    comp: Option<&str>,
    req: &HttpRequest,
) -> Reply {
    if let Some(r) = snapshots::share_snapshot_op(st, name, m, req) {
        return r;
    }
    let done = match (m, comp) {
        ("PUT", None) => create_share::apply(st, name, req),
        ("GET" | "HEAD", None | Some("metadata")) => get_share_properties::apply(st, name),
        ("PUT", Some("properties")) => set_share_properties::apply(st, name, req),
        ("PUT" | "GET", Some("filepermission")) => st
            .shares
            .get_mut(name)
            .map(|share| smb::permission_op(share, m, req))
            .ok_or_else(not_found_share),
        ("PUT", Some("metadata")) => set_share_metadata::apply(st, name, req),
        ("DELETE", None) => delete_share::apply(st, name, req),
        ("PUT", Some("lease")) => lease_share::apply(st, name, req),
        _ => Err(Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this share operation.",
        )),
    };
    done.unwrap_or_else(|refused| refused)
}

/// The share `name`: 404 `ShareNotFound` without it.
fn existing<'a>(st: &'a mut State, name: &str) -> Result<&'a mut Share, Reply> {
    st.shares.get_mut(name).ok_or_else(not_found_share)
}
