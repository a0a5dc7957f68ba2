//! Rename File / Directory, List / Force Close Handles and Put Range From URL.

use super::*;

// ---------------------------------------------------------------------------------------------
// Rename File / Rename Directory

/// The source path (below the share) of `x-ms-file-rename-source`, a URL of the same share.
pub(super) fn rename_source(share_name: &str, v: &str) -> Option<String> {
    let path = match v.split_once("://") {
        Some((_, rest)) => &rest[rest.find('/')?..],
        None => v,
    };
    let path = path.split('?').next()?;
    let prefix = format!("/{ACCOUNT}/{share_name}/");
    let rest = path
        .strip_prefix(&prefix)
        .or_else(|| path.strip_prefix(&format!("/{share_name}/")))?;
    Some(
        rest.split('/')
            .map(pct_decode)
            .collect::<Vec<_>>()
            .join("/"),
    )
}

pub(super) fn rename(
    share: &mut Share,
    share_name: &str,
    dest: &str,
    is_dir: bool,
    req: &HttpRequest,
    etag: String,
    now: String,
) -> Reply {
    let Some(src) = req
        .header("x-ms-file-rename-source")
        .and_then(|v| rename_source(share_name, v))
    else {
        return Reply::error(
            400,
            "InvalidHeaderValue",
            "x-ms-file-rename-source must name a file or directory of this share.",
        );
    };
    let replace = req
        .header("x-ms-file-rename-replace-if-exists")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let exists = |share: &Share, p: &str| share.files.contains_key(p) || share.dirs.contains_key(p);
    let source_is_dir = share.dirs.contains_key(&src);
    if !share.files.contains_key(&src) && !source_is_dir || source_is_dir != is_dir {
        return Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        );
    }
    if let Some(r) = parent_missing(share, dest) {
        return r;
    }
    if let Some(f) = share.files.get_mut(&src) {
        f.lease.tick();
        if let Err(r) = f
            .lease
            .check_write(req.header("x-ms-source-lease-id"), "file")
        {
            return r;
        }
    }
    if exists(share, dest) {
        if !replace || share.dirs.contains_key(dest) {
            return Reply::error(
                409,
                "ResourceAlreadyExists",
                "The specified resource already exists.",
            );
        }
        if let Some(f) = share.files.get_mut(dest) {
            f.lease.tick();
            if let Err(r) = f
                .lease
                .check_write(req.header("x-ms-destination-lease-id"), "file")
            {
                return r;
            }
        }
    }
    // SMB properties given with the rename (attributes, times, permission or key) apply to
    // the renamed file or directory (REST reference, Rename File / Rename Directory).
    let current = if is_dir {
        share.dirs.get(&src).map(|d| d.smb.clone())
    } else {
        share.files.get(&src).map(|f| f.node.smb.clone())
    };
    let Some(mut smb) = current else {
        return Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        );
    };
    if let Err(r) = smb.set(req, is_dir, &mut share.ext) {
        return r;
    }
    // Metadata (`x-ms-meta-*`, replacing the source's when any is given) and, for a file, the
    // content type (`x-ms-content-type`) given with the rename apply to the renamed entry
    // (REST reference, Rename File / Rename Directory).
    let meta = req.meta();
    let content_type = req.header("x-ms-content-type").map(str::to_string);
    if is_dir && content_type.is_some() {
        return Reply::error(
            400,
            "UnsupportedHeader",
            "x-ms-content-type applies to Rename File only.",
        );
    }
    if is_dir {
        let child = format!("{src}/");
        let moved_dirs: Vec<String> = share
            .dirs
            .keys()
            .filter(|k| **k == src || k.starts_with(&child))
            .cloned()
            .collect();
        for k in moved_dirs {
            let node = share.dirs.remove(&k).expect("listed");
            share
                .dirs
                .insert(format!("{dest}{}", &k[src.len()..]), node);
        }
        let moved_files: Vec<String> = share
            .files
            .keys()
            .filter(|k| k.starts_with(&child))
            .cloned()
            .collect();
        for k in moved_files {
            let node = share.files.remove(&k).expect("listed");
            share
                .files
                .insert(format!("{dest}{}", &k[src.len()..]), node);
        }
        if let Some(d) = share.dirs.get_mut(dest) {
            d.etag = etag.clone();
            d.last_modified = now.clone();
            d.smb = smb.clone();
            if !meta.is_empty() {
                d.meta = meta;
            }
        }
    } else {
        let mut f = share.files.remove(&src).expect("checked");
        f.node.etag = etag.clone();
        f.node.last_modified = now.clone();
        f.node.smb = smb.clone();
        if !meta.is_empty() {
            f.node.meta = meta;
        }
        if let Some(ct) = content_type {
            f.content_type = ct;
        }
        share.files.insert(dest.to_string(), f);
    }
    smb.headers(
        Reply::new(200)
            .h("etag", etag)
            .h("last-modified", now)
            .h("x-ms-request-server-encrypted", "true"),
    )
}

// ---------------------------------------------------------------------------------------------
// List Handles / Force Close Handles: every simulated SMB lock is one open handle.

/// A stable handle id for the lock on `path` (FNV-1a, as a decimal number like Azure's ids).
pub(super) fn handle_id(path: &str) -> String {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in path.bytes() {
        h ^= b as u64;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    (h >> 1).to_string()
}

pub(super) fn handles_op(st: &mut State, full: &str, req: &HttpRequest) -> Reply {
    let recursive = req
        .header("x-ms-recursive")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let below = format!("{full}/");
    let mut hit: Vec<String> = st
        .locks
        .keys()
        .filter(|k| *k == full || (recursive && k.starts_with(&below)))
        .cloned()
        .collect();
    hit.sort();
    match req.method.as_str() {
        "GET" => {
            let mut x = String::from(
                "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><HandleList>",
            );
            for p in &hit {
                let rel = p.split_once('/').map(|(_, r)| r).unwrap_or("");
                x.push_str(&format!(
                    "<Handle><HandleId>{}</HandleId><Path>{}</Path><FileId>0</FileId><ParentId>0</ParentId><SessionId>9223371991856271229</SessionId><ClientIp>10.0.0.4:49730</ClientIp><ClientName>testkit-smb</ClientName><OpenTime>{}</OpenTime><LastReconnectTime /><AccessRightList><AccessRight>Read</AccessRight><AccessRight>Write</AccessRight></AccessRightList></Handle>",
                    handle_id(p),
                    xml_escape(rel),
                    http_now()
                ));
            }
            x.push_str("</HandleList><NextMarker /></EnumerationResults>");
            Reply::new(200).xml(x)
        }
        "PUT" => {
            let Some(which) = req.header("x-ms-handle-id") else {
                return Reply::error(400, "MissingRequiredHeader", "x-ms-handle-id is required.");
            };
            let mut closed = 0;
            for p in hit {
                if which == "*" || which == handle_id(&p) {
                    st.locks.remove(&p);
                    closed += 1;
                }
            }
            Reply::new(200)
                .h("x-ms-number-of-handles-closed", closed.to_string())
                .h("x-ms-number-of-handles-failed", "0")
        }
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "Handles are listed with GET and closed with PUT.",
        ),
    }
}

// ---------------------------------------------------------------------------------------------
// Put Range From URL, for sources in the same share (this server does not fetch other URLs and
// does not check the source's SAS or bearer token).

pub(super) fn put_range_from_url(
    share: &mut Share,
    share_name: &str,
    path: &str,
    req: &HttpRequest,
    etag: String,
    now: String,
) -> Reply {
    let cannot_verify = |status| {
        Reply::error(
            status,
            "CannotVerifyCopySource",
            "The specified resource does not exist.",
        )
    };
    let Some(src) = req
        .header("x-ms-copy-source")
        .and_then(|v| rename_source(share_name, v))
    else {
        return cannot_verify(404);
    };
    let (Some((sa, Some(sb))), Some((a, Some(b)))) = (
        req.header("x-ms-source-range").and_then(parse_range),
        req.header("x-ms-range").and_then(parse_range),
    ) else {
        return Reply::error(
            400,
            "InvalidRange",
            "x-ms-range and x-ms-source-range must be bytes=start-end.",
        );
    };
    if sb - sa != b - a || b - a + 1 > MAX_RANGE {
        return Reply::error(
            400,
            "InvalidRange",
            "The source and destination ranges must be equal and at most 4 MiB.",
        );
    }
    if !req.body.is_empty() {
        return Reply::error(400, "InvalidHeaderValue", "Content-Length must be 0.");
    }
    let Some(source) = share.files.get(&src) else {
        return cannot_verify(404);
    };
    if sb >= source.data.len() as u64 {
        return Reply::error(
            416,
            "InvalidRange",
            "The source range is invalid for the source's size.",
        );
    }
    let bytes = source.data[sa as usize..=sb as usize].to_vec();
    let crc = azstore::blob::crc64_base64(&bytes);
    if let Some(want) = req.header("x-ms-source-content-crc64") {
        if want != crc {
            return Reply::error(
                400,
                "Crc64Mismatch",
                "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.",
            );
        }
    }
    // Source CRC-64 conditions (REST reference: x-ms-source-if-match-crc64 /
    // x-ms-source-if-none-match-crc64 on the source range); a failed one is a 412 as for the
    // other source conditions.
    let source_failed = match (
        req.header("x-ms-source-if-match-crc64"),
        req.header("x-ms-source-if-none-match-crc64"),
    ) {
        (Some(want), _) if want != crc => true,
        (_, Some(not)) if not == crc => true,
        _ => false,
    };
    if source_failed {
        return Reply::error(
            412,
            "CannotVerifyCopySource",
            "The condition specified using HTTP conditional header(s) is not met.",
        );
    }
    // x-ms-file-last-write-time: now (the default) or preserve.
    let preserve = match req.header("x-ms-file-last-write-time") {
        None => false,
        Some(v) if v.eq_ignore_ascii_case("now") => false,
        Some(v) if v.eq_ignore_ascii_case("preserve") => true,
        Some(_) => {
            return Reply::error(
                400,
                "InvalidHeaderValue",
                "x-ms-file-last-write-time must be now or preserve.",
            );
        }
    };
    let f = match writable_file(&mut share.files, path, req) {
        Ok(f) => f,
        Err(r) => return r,
    };
    if b >= f.data.len() as u64 {
        return Reply::error(
            416,
            "InvalidRange",
            "The range specified is invalid for the current size of the resource.",
        );
    }
    f.data[a as usize..=b as usize].copy_from_slice(&bytes);
    add_range(&mut f.ranges, a, b + 1);
    f.node.etag = etag.clone();
    f.node.last_modified = now.clone();
    if !preserve {
        f.node.smb.last_write = super::smb::iso_now7();
    }
    Reply::new(201)
        .h("x-ms-file-last-write-time", f.node.smb.last_write.clone())
        .h("etag", etag)
        .h("last-modified", now)
        .h("x-ms-content-crc64", crc)
        .h("x-ms-request-server-encrypted", "true")
}
