//! Directory operations and List Directories and Files.

use super::*;

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
    let (share, share_name, path, req) = (op.share, op.share_name, op.path, op.req);
    let (etag, now) = (op.etag, op.now);
    let parent_exists = |share: &Share, p: &str| match p.rsplit_once('/') {
        None => true,
        Some((parent, _)) => share.dirs.contains_key(parent),
    };
    let not_found = || {
        Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        )
    };
    let reply = match (m, comp) {
        ("PUT", None) => {
            if path.is_empty() || share.dirs.contains_key(path) || share.files.contains_key(path) {
                return Err(Reply::error(
                    409,
                    "ResourceAlreadyExists",
                    "The specified resource already exists.",
                ));
            }
            if !parent_exists(share, path) {
                return Err(Reply::error(
                    404,
                    "ParentNotFound",
                    "The specified parent path does not exist.",
                ));
            }
            let smb = smb::Smb::create(req, true, &mut share.ext)?;
            let r = smb.headers(
                Reply::new(201)
                    .h("etag", etag.clone())
                    .h("last-modified", now.clone())
                    .h("x-ms-request-server-encrypted", "true"),
            );
            share.dirs.insert(
                path.to_string(),
                Node {
                    meta: req.meta(),
                    etag,
                    last_modified: now,
                    smb,
                },
            );
            r
        }
        ("PUT", Some("properties")) => {
            let Some(d) = share.dirs.get_mut(path) else {
                return Err(not_found());
            };
            d.smb.set(req, true, &mut share.ext)?;
            let r = d
                .written(200, etag, now)
                .h("x-ms-request-server-encrypted", "true");
            d.smb.headers(r)
        }
        ("GET" | "HEAD", None | Some("metadata")) => {
            let (meta, etag, lm, smb) = if path.is_empty() {
                (
                    &BTreeMap::new(),
                    share.etag.clone(),
                    share.last_modified.clone(),
                    None,
                )
            } else {
                match share.dirs.get(path) {
                    Some(d) => (
                        &d.meta,
                        d.etag.clone(),
                        d.last_modified.clone(),
                        Some(&d.smb),
                    ),
                    None => return Err(not_found()),
                }
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
            r
        }
        ("PUT", Some("metadata")) => match share.dirs.get_mut(path) {
            Some(d) => {
                d.meta = req.meta();
                d.written(200, etag, now)
            }
            None => not_found(),
        },
        ("DELETE", None) => {
            if !share.dirs.contains_key(path) {
                return Err(not_found());
            }
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
            Reply::new(202)
        }
        ("GET", Some("list")) => {
            if !path.is_empty() && !share.dirs.contains_key(path) {
                return Err(not_found());
            }
            list(share, share_name, path, req)
        }
        ("PUT", Some("rename")) => rename(share, share_name, path, true, req, etag, now),
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this directory operation.",
        ),
    };
    Ok(reply)
}

pub(super) fn list(share: &Share, share_name: &str, path: &str, req: &HttpRequest) -> Reply {
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = match req.q("maxresults") {
        None => 5000,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=5000).contains(&n) => n,
            _ => {
                return Reply::error(
                    400,
                    "OutOfRangeQueryParameterValue",
                    "maxresults must be 1-5000.",
                );
            }
        },
    };
    let base = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    // include=Timestamps,Etag,Attributes,PermissionKey and x-ms-file-extended-info: true
    // (REST reference, List Directories and Files, 2020-04-08 and later).
    let include: Vec<String> = req
        .q("include")
        .map(|v| {
            v.split(',')
                .map(|i| i.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    for i in &include {
        if !["timestamps", "etag", "attributes", "permissionkey"].contains(&i.as_str()) {
            return Reply::error(
                400,
                "InvalidQueryParameterValue",
                "include must name Timestamps, ETag, Attributes or PermissionKey.",
            );
        }
    }
    let extended = req
        .header("x-ms-file-extended-info")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let wants = |what: &str| include.iter().any(|i| i == what);
    // Direct children, sorted by name: (name, is_dir, size, node).
    let mut items: Vec<(String, bool, u64, &Node)> = Vec::new();
    for (k, d) in &share.dirs {
        if let Some(n) = k.strip_prefix(&base) {
            if !n.contains('/') {
                items.push((n.to_string(), true, 0, d));
            }
        }
    }
    for (k, f) in &share.files {
        if let Some(n) = k.strip_prefix(&base) {
            if !n.contains('/') {
                items.push((n.to_string(), false, f.data.len() as u64, &f.node));
            }
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let selected: Vec<&(String, bool, u64, &Node)> = items
        .iter()
        .filter(|(n, ..)| n.starts_with(prefix) && n.as_str() >= marker)
        .collect();
    let page = &selected[..selected.len().min(max)];
    let next = selected
        .get(max)
        .map(|(n, ..)| n.clone())
        .unwrap_or_default();
    let mut x = String::from("\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?>");
    x.push_str(&format!(
        "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1/{ACCOUNT}/\" ShareName=\"{}\" DirectoryPath=\"{}\">",
        xml_escape(share_name),
        xml_escape(path)
    ));
    if !prefix.is_empty() {
        x.push_str(&format!("<Prefix>{}</Prefix>", xml_escape(prefix)));
    }
    if !marker.is_empty() {
        x.push_str(&format!("<Marker>{}</Marker>", xml_escape(marker)));
    }
    if req.q("maxresults").is_some() {
        x.push_str(&format!("<MaxResults>{max}</MaxResults>"));
    }
    x.push_str("<Entries>");
    for (name, is_dir, size, node) in page {
        let tag = if *is_dir { "Directory" } else { "File" };
        x.push_str(&format!("<{tag}><Name>{}</Name>", xml_escape(name)));
        if extended {
            x.push_str("<FileId>13835128424026341376</FileId>");
        }
        x.push_str("<Properties>");
        if !*is_dir {
            x.push_str(&format!("<Content-Length>{size}</Content-Length>"));
        }
        if wants("timestamps") {
            x.push_str(&format!(
                "<CreationTime>{}</CreationTime><LastAccessTime>{}</LastAccessTime><LastWriteTime>{}</LastWriteTime><ChangeTime>{}</ChangeTime><Last-Modified>{}</Last-Modified>",
                node.smb.creation, node.smb.last_write, node.smb.last_write, node.smb.change, node.last_modified
            ));
        }
        if wants("etag") {
            x.push_str(&format!("<Etag>{}</Etag>", xml_escape(&node.etag)));
        }
        x.push_str("</Properties>");
        if wants("attributes") {
            x.push_str(&format!(
                "<Attributes>{}</Attributes>",
                node.smb.attributes.replace('|', " | ")
            ));
        }
        if wants("permissionkey") {
            x.push_str(&format!(
                "<PermissionKey>{}</PermissionKey>",
                xml_escape(&node.smb.permission_key)
            ));
        }
        x.push_str(&format!("</{tag}>"));
    }
    x.push_str("</Entries>");
    x.push_str(&format!("<NextMarker>{}</NextMarker>", xml_escape(&next)));
    x.push_str("</EnumerationResults>");
    Reply::new(200).xml(x)
}
