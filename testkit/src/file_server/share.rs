//! Share operations: create, properties, metadata, ACL, permissions, delete, snapshots and
//! List Shares.

use super::*;

pub(super) fn not_found_share() -> Reply {
    Reply::error(404, "ShareNotFound", "The specified share does not exist.")
}

/// List Shares (prefix, marker, maxresults, include=metadata), as Azure answers it.
pub(super) fn list_shares(st: &State, req: &HttpRequest) -> Reply {
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = req
        .q("maxresults")
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=5000).contains(n))
        .unwrap_or(5000);
    let with_meta = req.q("include").is_some_and(|i| i.contains("metadata"));
    let names: Vec<&String> = st
        .shares
        .keys()
        .filter(|n| n.starts_with(prefix) && n.as_str() >= marker)
        .collect();
    let mut body = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"http://127.0.0.1/{ACCOUNT}\"><Prefix>{}</Prefix><Shares>",
        xml_escape(prefix)
    );
    let with_snapshots = req.q("include").is_some_and(|i| i.contains("snapshots"));
    for name in names.iter().take(max) {
        let sh = &st.shares[*name];
        if with_snapshots {
            // Snapshots come before their share, oldest first, as on Azure.
            let own = st
                .snapshots
                .range(((*name).clone(), String::new())..)
                .take_while(|((s, _), _)| s == *name);
            for ((_, id), p) in own {
                body.push_str(&format!(
                    "<Share><Name>{}</Name><Snapshot>{id}</Snapshot><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota></Properties></Share>",
                    xml_escape(name),
                    p.last_modified,
                    p.etag,
                    p.quota
                ));
            }
        }
        body.push_str(&format!(
            "<Share><Name>{}</Name><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota><AccessTier>{}</AccessTier></Properties>",
            xml_escape(name),
            sh.last_modified,
            sh.etag,
            sh.quota,
            sh.ext.access_tier
        ));
        if with_meta {
            body.push_str("<Metadata>");
            for (k, v) in &sh.meta {
                body.push_str(&format!("<{k}>{}</{k}>", xml_escape(v)));
            }
            body.push_str("</Metadata>");
        }
        body.push_str("</Share>");
    }
    body.push_str("</Shares>");
    match names.get(max) {
        Some(next) => body.push_str(&format!("<NextMarker>{}</NextMarker>", xml_escape(next))),
        None => body.push_str("<NextMarker />"),
    }
    body.push_str("</EnumerationResults>");
    let mut r = Reply::new(200).h("content-type", "application/xml");
    r.body = body.into_bytes();
    r
}

/// Snapshot Share and the operations on one snapshot (`sharesnapshot=`).
pub(super) fn share_snapshot_op(
    st: &mut State,
    name: &str,
    m: &str,
    req: &HttpRequest,
) -> Option<Reply> {
    let snapshot = req.q("sharesnapshot").map(str::to_string);
    let comp = req.q("comp");
    let not_found = || {
        Reply::error(
            404,
            "ShareSnapshotNotFound",
            "The specified share snapshot does not exist.",
        )
    };
    match (m, comp, snapshot) {
        ("PUT", Some("snapshot"), None) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get(name) else {
                return Some(not_found_share());
            };
            let meta = if req.meta().is_empty() {
                share.meta.clone()
            } else {
                req.meta()
            };
            let (quota, last_modified) = (share.quota, share.last_modified.clone());
            let id = format!(
                "2026-11-22T00:00:{:02}.{:07}Z",
                st.counter / 10_000_000 % 60,
                st.counter % 10_000_000
            );
            st.snapshots.insert(
                (name.to_string(), id.clone()),
                SnapshotProps {
                    meta,
                    etag: etag.clone(),
                    last_modified: last_modified.clone(),
                    quota,
                    lease: Lease::Available,
                },
            );
            Some(
                Reply::new(201)
                    .h("x-ms-snapshot", id)
                    .h("etag", etag)
                    .h("last-modified", last_modified),
            )
        }
        ("GET" | "HEAD", None | Some("metadata"), Some(id)) => {
            let Some(p) = st.snapshots.get_mut(&(name.to_string(), id)) else {
                return Some(not_found());
            };
            p.lease.tick();
            let mut r = Reply::new(200)
                .h("etag", p.etag.clone())
                .h("last-modified", p.last_modified.clone())
                .h("x-ms-share-quota", p.quota.to_string());
            for (k, v) in &p.meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            p.lease.headers(&mut r.headers);
            Some(r)
        }
        ("PUT", Some("lease"), Some(id)) => {
            let Some(p) = st.snapshots.get_mut(&(name.to_string(), id)) else {
                return Some(not_found());
            };
            let r = lease_op(&mut p.lease, req, false);
            Some(if r.status < 300 {
                r.h("etag", p.etag.clone())
                    .h("last-modified", p.last_modified.clone())
            } else {
                r
            })
        }
        ("DELETE", None, Some(id)) => {
            let key = (name.to_string(), id);
            let Some(p) = st.snapshots.get_mut(&key) else {
                return Some(not_found());
            };
            // A leased snapshot is deleted only with its lease id.
            p.lease.tick();
            if let Err(r) = p.lease.check_write(req.header("x-ms-lease-id"), "share") {
                return Some(r);
            }
            st.snapshots.remove(&key);
            Some(Reply::new(202))
        }
        ("DELETE", None, None) => {
            let has = st.snapshots.keys().any(|(s, _)| s == name);
            let include = req.header("x-ms-delete-snapshots") == Some("include");
            if has && !include && st.shares.contains_key(name) {
                return Some(Reply::error(
                    409,
                    "ShareHasSnapshots",
                    "The share has snapshots and the operation requires no snapshots.",
                ));
            }
            if include {
                st.snapshots.retain(|(s, _), _| s != name);
            }
            None
        }
        _ => None,
    }
}

pub(super) fn share_op(
    st: &mut State,
    name: &str,
    m: &str,
    comp: Option<&str>,
    req: &HttpRequest,
) -> Reply {
    let now = http_now();
    if let Some(r) = share_snapshot_op(st, name, m, req) {
        return r;
    }
    match (m, comp) {
        ("PUT", None) => {
            if st
                .deleting
                .get(name)
                .is_some_and(|until| *until > Instant::now())
            {
                return Reply::error(
                    409,
                    "ShareBeingDeleted",
                    "The specified share is being deleted. Try operation later.",
                );
            }
            if st.shares.contains_key(name) {
                return Reply::error(
                    409,
                    "ShareAlreadyExists",
                    "The specified share already exists.",
                );
            }
            let etag = st.next_etag();
            let quota = req
                .header("x-ms-share-quota")
                .and_then(|q| q.parse().ok())
                .unwrap_or(102_400);
            let mut ext = smb::ShareExt::default();
            if let Err(r) = smb::share_ext_headers(&mut ext, req, true) {
                return r;
            }
            st.shares.insert(
                name.to_string(),
                Share {
                    meta: req.meta(),
                    etag: etag.clone(),
                    last_modified: now.clone(),
                    quota,
                    lease: Lease::Available,
                    dirs: BTreeMap::new(),
                    files: BTreeMap::new(),
                    ext,
                },
            );
            Reply::new(201).h("etag", etag).h("last-modified", now)
        }
        ("GET" | "HEAD", None | Some("metadata")) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            let mut r = Reply::new(200)
                .h("etag", share.etag.clone())
                .h("last-modified", share.last_modified.clone())
                .h("x-ms-share-quota", share.quota.to_string());
            for (k, v) in &share.meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            share.lease.headers(&mut r.headers);
            smb::share_ext_reply(&share.ext, r)
        }
        ("PUT", Some("properties")) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            if req.header("x-ms-lease-id").is_some() {
                if let Err(r) = share
                    .lease
                    .check_write(req.header("x-ms-lease-id"), "share")
                {
                    return r;
                }
            }
            if let Err(r) = smb::set_share_properties(share, req) {
                return r;
            }
            share.etag = etag.clone();
            share.last_modified = now.clone();
            Reply::new(200).h("etag", etag).h("last-modified", now)
        }
        ("PUT" | "GET", Some("filepermission")) => match st.shares.get_mut(name) {
            Some(share) => smb::permission_op(share, m, req),
            None => not_found_share(),
        },
        ("PUT", Some("metadata")) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.meta = req.meta();
            share.etag = etag.clone();
            share.last_modified = now.clone();
            Reply::new(200).h("etag", etag).h("last-modified", now)
        }
        ("DELETE", None) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            if let Err(r) = share
                .lease
                .check_write(req.header("x-ms-lease-id"), "share")
            {
                return r;
            }
            st.shares.remove(name);
            if !st.delete_delay.is_zero() {
                let until = Instant::now() + st.delete_delay;
                st.deleting.insert(name.to_string(), until);
            }
            Reply::new(202)
        }
        ("PUT", Some("lease")) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            let r = lease_op(&mut share.lease, req, false);
            if r.status < 300 {
                r.h("etag", share.etag.clone())
                    .h("last-modified", share.last_modified.clone())
            } else {
                r
            }
        }
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this share operation.",
        ),
    }
}
