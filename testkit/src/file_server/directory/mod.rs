//! Directory operations, one file each (as `file/`): the operation reads what it needs from
//! the request and applies itself to the share; [`dir_op`] only picks the operation.

use super::*;

mod create_directory;
mod delete_directory;
mod get_directory_properties;
mod list_directories_and_files;
mod set_directory_metadata;
mod set_directory_properties;

/// 404 `ParentNotFound` unless the directory holding `path` exists.
pub(super) fn parent_missing(share: &Share, path: &str) -> Option<Reply> {
    let (parent, _) = path.rsplit_once('/')?;
    (!share.dirs.contains_key(parent)).then(|| {
        Reply::error(
            404,
            "ParentNotFound",
            "The specified parent path does not exist.",
        )
    })
}

pub(super) fn dir_op(op: Op, m: &str, comp: Option<&str>) -> Result<Reply, Reply> {
    match (m, comp) {
        ("PUT", None) => create_directory::apply(op),
        ("PUT", Some("properties")) => set_directory_properties::apply(op),
        ("GET" | "HEAD", None | Some("metadata")) => get_directory_properties::apply(op),
        ("PUT", Some("metadata")) => set_directory_metadata::apply(op),
        ("DELETE", None) => delete_directory::apply(op),
        ("GET", Some("list")) => list_directories_and_files::apply(op),
        ("PUT", Some("rename")) => Ok(rename(
            op.share,
            op.share_name,
            op.path,
            true,
            op.req,
            op.etag,
            op.now,
        )),
        _ => Err(Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this directory operation.",
        )),
    }
}

/// The directory at `path`: 404 when it does not exist.
fn existing<'a>(share: &'a mut Share, path: &str) -> Result<&'a mut Node, Reply> {
    share.dirs.get_mut(path).ok_or_else(not_found)
}
