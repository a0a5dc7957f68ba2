//! Delete Directory: 409 `DirectoryNotEmpty` while anything is in it.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, path) = (op.share, op.path);
    existing(share, path)?;
    let child = format!("{path}/");
    if share.dirs.keys().any(|k| k.starts_with(&child))
        || share.files.keys().any(|k| k.starts_with(&child))
    {
        return Err(Reply::error(
            409,
            "DirectoryNotEmpty",
            "The specified directory is not empty.",
        ));
    }
    share.dirs.remove(path);
    Ok(Reply::new(202))
}
