//! File operations, one file each: the operation reads what it needs from the request and
//! applies itself to the share; [`file_op`] only picks the operation.

use super::*;

mod create_file;
mod delete_file;
mod get_file;
mod lease_file;
mod list_ranges;
mod put_range;
mod set_file_metadata;
mod set_file_properties;

pub(super) fn file_op(
    st: &mut State,
    share_name: &str,
    path: &str,
    m: &str,
    comp: Option<&str>,
    req: &HttpRequest,
) -> Reply {
    let (share, etag, now) = match st.write_in(share_name) {
        Ok(x) => x,
        Err(r) => return r,
    };
    if let Some(f) = share.files.get_mut(path) {
        f.lease.tick();
    }
    match (m, comp) {
        ("PUT", None) => create_file::apply(share, path, req, etag, now),
        ("GET" | "HEAD", None) => get_file::apply(share, path, req, false),
        ("GET" | "HEAD", Some("metadata")) => get_file::apply(share, path, req, true),
        ("PUT", Some("range")) if req.header("x-ms-copy-source").is_some() => {
            put_range_from_url(share, share_name, path, req, etag, now)
        }
        ("PUT", Some("range")) => put_range::apply(share, path, req, etag, now),
        ("PUT", Some("properties")) => set_file_properties::apply(share, path, req, etag, now),
        ("PUT", Some("metadata")) => set_file_metadata::apply(share, path, req, etag, now),
        ("DELETE", None) => delete_file::apply(share, path, req),
        ("PUT", Some("lease")) => lease_file::apply(share, path, req),
        ("PUT", Some("rename")) => rename(share, share_name, path, false, req, etag, now),
        ("GET", Some("rangelist")) => list_ranges::apply(share, path, req),
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this file operation.",
        ),
    }
}

fn not_found() -> Reply {
    Reply::error(
        404,
        "ResourceNotFound",
        "The specified resource does not exist.",
    )
}
/// A transactional `Content-MD5` / `x-ms-content-crc64` that does not match the body.
fn transactional_mismatch(req: &HttpRequest) -> Option<Reply> {
    if let Some(want) = req.header("content-md5") {
        if want != azstore::blob::md5_base64(&req.body) {
            return Some(Reply::error(
                400,
                "Md5Mismatch",
                "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
            ));
        }
    }
    if let Some(want) = req.header("x-ms-content-crc64") {
        if want != azstore::blob::crc64_base64(&req.body) {
            return Some(Reply::error(
                400,
                "Crc64Mismatch",
                "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.",
            ));
        }
    }
    None
}

/// The file at `path` for a write: 404 when it does not exist, 412 when its lease refuses
/// the request's lease id.
pub(super) fn writable_file<'a>(
    files: &'a mut BTreeMap<String, FileNode>,
    path: &str,
    req: &HttpRequest,
) -> Result<&'a mut FileNode, Reply> {
    let Some(f) = files.get_mut(path) else {
        return Err(not_found());
    };
    f.lease.tick();
    f.lease.check_write(req.header("x-ms-lease-id"), "file")?;
    Ok(f)
}
