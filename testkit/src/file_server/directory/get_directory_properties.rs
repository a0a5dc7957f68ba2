//! Get Directory Properties and Get Directory Metadata (the same headers); the share's root
//! directory answers with the share's version and no SMB properties of its own.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path) = (op.share, op.path);
    let (meta, etag, lm, smb) = if path.is_empty() {
        (
            &BTreeMap::new(),
            share.etag.clone(),
            share.last_modified.clone(),
            None,
        )
    } else {
        let d = existing(share, path)?;
        (
            &d.meta,
            d.etag.clone(),
            d.last_modified.clone(),
            Some(&d.smb),
        )
    };
    let mut r = Reply::new(200)
        .h("etag", etag)
        .h("last-modified", lm)
        .h("x-ms-server-encrypted", "true");
    r = match smb {
        Some(smb) => smb.headers(r),
        None => r.h("x-ms-file-attributes", "Directory"),
    };
    for (k, v) in meta {
        r = r.h(&format!("x-ms-meta-{k}"), v.clone());
    }
    Ok(r)
}
