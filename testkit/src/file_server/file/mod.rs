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

pub(super) fn file_op(op: Op, m: &str, comp: Option<&str>) -> Result<Reply, Reply> {
    if let Some(f) = op.share.files.get_mut(op.path) {
        f.lease.tick();
    }
    let (share, path, req) = (&mut *op.share, op.path, op.req);
    match (m, comp) {
        ("PUT", None) => create_file::apply(op),
        ("GET" | "HEAD", None) => Ok(get_file::apply(share, path, req, false)),
        ("GET" | "HEAD", Some("metadata")) => Ok(get_file::apply(share, path, req, true)),
        ("PUT", Some("range")) if req.header("x-ms-copy-source").is_some() => Ok(
            put_range_from_url(share, op.share_name, path, req, op.etag, op.now),
        ),
        ("PUT", Some("range")) => put_range::apply(op),
        ("PUT", Some("properties")) => set_file_properties::apply(op),
        ("PUT", Some("metadata")) => set_file_metadata::apply(op),
        ("DELETE", None) => Ok(delete_file::apply(share, path, req)),
        ("PUT", Some("lease")) => Ok(lease_file::apply(share, path, req)),
        ("PUT", Some("rename")) => Ok(rename(
            share,
            op.share_name,
            path,
            false,
            req,
            op.etag,
            op.now,
        )),
        ("GET", Some("rangelist")) => Ok(list_ranges::apply(share, path, req)),
        _ => Err(Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this file operation.",
        )),
    }
}

/// 400 when a transactional `Content-MD5` / `x-ms-content-crc64` does not match the body.
fn transactional_check(req: &HttpRequest) -> Result<(), Reply> {
    if let Some(want) = req.header("content-md5") {
        if want != azstore::blob::md5_base64(&req.body) {
            return Err(Reply::error(
                400,
                "Md5Mismatch",
                "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
            ));
        }
    }
    if let Some(want) = req.header("x-ms-content-crc64") {
        if want != azstore::blob::crc64_base64(&req.body) {
            return Err(Reply::error(
                400,
                "Crc64Mismatch",
                "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.",
            ));
        }
    }
    Ok(())
}

/// 400 `OutOfRangeInput` for a file larger than [`MAX_TEST_FILE`]: not an Azure limit, the
/// test server keeps files in memory.
fn fits_in_memory(size: u64) -> Result<(), Reply> {
    if size > MAX_TEST_FILE {
        return Err(Reply::error(
            400,
            "OutOfRangeInput",
            "The test server keeps files in memory: at most 1 GiB.",
        ));
    }
    Ok(())
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
