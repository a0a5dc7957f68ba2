//! Snapshot Share, and Get Properties, Lease and Delete of one snapshot (`sharesnapshot=`);
//! Delete Share's `x-ms-delete-snapshots`.

use super::*;

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
