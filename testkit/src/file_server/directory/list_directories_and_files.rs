//! List Directories and Files: direct children, sorted by name, with `prefix`, `marker` and
//! `maxresults` paging and the extended info of `include=` / `x-ms-file-extended-info`.

use super::*;

pub(super) fn apply(op: Op) -> Result<Reply, Reply> {
    let (share, share_name, path, req) = (&*op.share, op.share_name, op.path, op.req);
    if !path.is_empty() && !share.dirs.contains_key(path) {
        return Err(not_found());
    }
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = match req.q("maxresults") {
        None => 5000,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=5000).contains(&n) => n,
            _ => {
                return Err(Reply::error(
                    400,
                    "OutOfRangeQueryParameterValue",
                    "maxresults must be 1-5000.",
                ));
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
            return Err(Reply::error(
                400,
                "InvalidQueryParameterValue",
                "include must name Timestamps, ETag, Attributes or PermissionKey.",
            ));
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
    Ok(Reply::new(200).xml(x))
}
