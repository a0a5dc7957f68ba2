//! Create Directory: SMB properties from the request (Azure's defaults otherwise) and
//! metadata; 409 when anything exists at the path, 404 without the parent.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path, req) = (op.share, op.path, op.req);
    if path.is_empty() || share.dirs.contains_key(path) || share.files.contains_key(path) {
        return Err(Reply::error(
            409,
            "ResourceAlreadyExists",
            "The specified resource already exists.",
        ));
    }
    if let Some(r) = parent_missing(share, path) {
        return Err(r);
    }
    let smb = smb::Smb::create(req, true, &mut share.ext)?;
    let r = smb.headers(
        Reply::new(201)
            .h("etag", op.etag.clone())
            .h("last-modified", op.now.clone())
            .h("x-ms-request-server-encrypted", "true"),
    );
    share.dirs.insert(
        path.to_string(),
        Node {
            meta: req.meta(),
            etag: op.etag,
            last_modified: op.now,
            smb,
        },
    );
    Ok(r)
}
