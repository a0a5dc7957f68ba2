//! Copy File (always completes at once here: `x-ms-copy-status: success`) and Abort Copy File
//! (which therefore finds no pending copy: 409 `NoPendingCopyOperation`).

use super::smb::Smb;
use super::{
    ACCOUNT, FileNode, HttpRequest, Lease, Node, Reply, State, http_now, pct_decode, writable_file,
};

/// The last copy into a file, reported by its property reads.
#[derive(Clone)]
pub(super) struct CopyInfo {
    pub id: String,
    pub source: String,
    pub progress: String,
    pub completion: String,
}

impl CopyInfo {
    pub fn headers(&self, r: Reply) -> Reply {
        r.h("x-ms-copy-id", self.id.clone())
            .h("x-ms-copy-status", "success")
            .h("x-ms-copy-source", self.source.clone())
            .h("x-ms-copy-progress", self.progress.clone())
            .h("x-ms-copy-completion-time", self.completion.clone())
    }
}

/// (share, path) of a copy source URL on this server.
fn source_of(url: &str) -> Option<(String, String)> {
    let after_scheme = url.split_once("://")?.1;
    let path = &after_scheme[after_scheme.find('/')?..];
    let path = path.split('?').next()?;
    let rest = path.strip_prefix(&format!("/{ACCOUNT}/"))?;
    let (share, file) = rest.split_once('/')?;
    Some((pct_decode(share), pct_decode(file)))
}

fn cannot_verify() -> Reply {
    Reply::error(
        404,
        "CannotVerifyCopySource",
        "The specified resource does not exist.",
    )
}

/// Copy File into `share_name/path`.
pub(super) fn copy_file(st: &mut State, share_name: &str, path: &str, req: &HttpRequest) -> Reply {
    let etag = st.next_etag();
    let now = http_now();
    let Some((src_share, src_path)) = req.header("x-ms-copy-source").and_then(source_of) else {
        return cannot_verify();
    };
    let Some(src) = st
        .shares
        .get(&src_share)
        .and_then(|s| s.files.get(&src_path))
    else {
        return cannot_verify();
    };
    let (data, ranges, content_type, http) = (
        src.data.clone(),
        src.ranges.clone(),
        src.content_type.clone(),
        src.http.clone(),
    );
    let (src_meta, src_smb) = (src.node.meta.clone(), src.node.smb.clone());
    let Some(share) = st.shares.get_mut(share_name) else {
        return super::not_found_share();
    };
    if share.dirs.contains_key(path) {
        return Reply::error(
            409,
            "ResourceTypeMismatch",
            "The specified resource type does not match.",
        );
    }
    if let Some(r) = super::parent_missing(share, path) {
        return r;
    }
    let lease = match share.files.get_mut(path) {
        Some(f) => {
            f.lease.tick();
            if let Err(r) = f.lease.check_write(req.header("x-ms-lease-id"), "file") {
                return r;
            }
            let ignore = req
                .header("x-ms-file-copy-ignore-readonly")
                .is_some_and(|v| v.eq_ignore_ascii_case("true"));
            if f.node.smb.read_only() && !ignore {
                return Reply::error(
                    409,
                    "ReadOnlyAttribute",
                    "The specified resource is read-only and cannot be modified at this time.",
                );
            }
            f.lease.clone()
        }
        None => Lease::Available,
    };
    let smb = match Smb::for_copy(req, &src_smb, &mut share.ext) {
        Ok(s) => s,
        Err(r) => return r,
    };
    let meta = if req.meta().is_empty() {
        src_meta
    } else {
        req.meta()
    };
    let id = uuid::Uuid::new_v4().to_string();
    let size = data.len();
    share.files.insert(
        path.to_string(),
        FileNode {
            node: Node {
                meta,
                etag: etag.clone(),
                last_modified: now.clone(),
                smb,
            },
            data,
            ranges,
            content_type,
            http,
            lease,
            copy: Some(CopyInfo {
                id: id.clone(),
                source: req.header("x-ms-copy-source").unwrap_or("").to_string(),
                progress: format!("{size}/{size}"),
                completion: now.clone(),
            }),
        },
    );
    Reply::new(202)
        .h("etag", etag)
        .h("last-modified", now)
        .h("x-ms-copy-id", id)
        .h("x-ms-copy-status", "success")
}

/// Abort Copy File.
pub(super) fn abort_copy(st: &mut State, share_name: &str, path: &str, req: &HttpRequest) -> Reply {
    if req
        .header("x-ms-copy-action")
        .is_none_or(|a| !a.eq_ignore_ascii_case("abort"))
    {
        return Reply::error(
            400,
            "MissingRequiredHeader",
            "x-ms-copy-action: abort is required.",
        );
    }
    let Some(share) = st.shares.get_mut(share_name) else {
        return super::not_found_share();
    };
    let f = match writable_file(&mut share.files, path, req) {
        Ok(f) => f,
        Err(r) => return r,
    };
    match &f.copy {
        Some(c) if Some(c.id.as_str()) != req.q("copyid") => Reply::error(
            409,
            "CopyIdMismatch",
            "The specified copy ID did not match the copy ID for the pending copy operation.",
        ),
        _ => Reply::error(
            409,
            "NoPendingCopyOperation",
            "There is currently no pending copy operation.",
        ),
    }
}
