//! Create Share: quota (100 TiB by default), metadata and the share properties of
//! `smb.rs`; 409 while a share of that name exists or is still being deleted.

use super::*;

pub(super) fn apply(st: &mut State, name: &str, req: &HttpRequest) -> Result<Reply, Reply> {
    let now = http_now();
    if st
        .deleting
        .get(name)
        .is_some_and(|until| *until > Instant::now())
    {
        return Err(Reply::error(
            409,
            "ShareBeingDeleted",
            "The specified share is being deleted. Try operation later.",
        ));
    }
    if st.shares.contains_key(name) {
        return Err(Reply::error(
            409,
            "ShareAlreadyExists",
            "The specified share already exists.",
        ));
    }
    let etag = st.next_etag();
    let quota = req
        .header("x-ms-share-quota")
        .and_then(|q| q.parse().ok())
        .unwrap_or(102_400);
    let mut ext = smb::ShareExt::default();
    smb::share_ext_headers(&mut ext, req, true)?;
    st.shares.insert(
        name.to_string(),
        Share {
            meta: req.meta(),
            etag: etag.clone(),
            last_modified: now.clone(),
            quota,
            lease: Lease::Available,
            dirs: BTreeMap::new(),
            files: BTreeMap::new(),
            ext,
        },
    );
    Ok(Reply::new(201).h("etag", etag).h("last-modified", now))
}
