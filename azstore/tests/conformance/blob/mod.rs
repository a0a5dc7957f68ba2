//! Blob service: recorded requests -> `BlobServiceClient` / `ContainerClient` / `BlobClient`.

use std::collections::BTreeMap;

use azstore::blob::{BlobListItem, ListInclude, ListOptions};
use azstore::lease::{LeaseDuration, LeaseResult};
use azstore::{ETag, blob::BlobClient, blob::ContainerClient};
use testkit::replay::{Interaction, RecordedResponse};

use crate::compare::{
    check_listed_metadata, check_next_marker, eq_date, eq_header, outcome, xml_texts,
};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;

pub(super) fn container(cx: &Cx, name: &str) -> Result<ContainerClient, String> {
    cx.blob.container(name).map_err(|e| e.to_string())
}

pub(super) fn blob_of(cx: &Cx, c: &str, b: &str) -> Result<BlobClient, String> {
    container(cx, c)?.blob(b).map_err(|e| e.to_string())
}

pub fn check_etag(got: Option<&ETag>, resp: &RecordedResponse) -> Result<(), String> {
    eq_header("ETag", got.map(|e| e.as_str().to_string()), resp, "etag")
}

pub fn check_version(
    etag: Option<&ETag>,
    last_modified: Option<time::OffsetDateTime>,
    resp: &RecordedResponse,
) -> Result<(), String> {
    check_etag(etag, resp)?;
    eq_date("Last-Modified", last_modified, resp, "last-modified")
}

/// The lease id a lease operation answered, and the resource's version beside it.
pub(crate) fn check_lease_result(r: &LeaseResult, resp: &RecordedResponse) -> Result<(), String> {
    eq_header(
        "lease id",
        Some(r.lease_id.as_str().into()),
        resp,
        "x-ms-lease-id",
    )?;
    check_version(r.etag.as_ref(), r.last_modified, resp)
}

/// The lease state a read reported, as the service spells it in `x-ms-lease-state`.
fn check_lease_state(
    state: Option<azstore::blob::LeaseState>,
    resp: &RecordedResponse,
) -> Result<(), String> {
    eq_header(
        "lease state",
        state.map(|s| format!("{s:?}").to_lowercase()),
        resp,
        "x-ms-lease-state",
    )
}

fn lease_duration(v: Option<&str>) -> Result<LeaseDuration, String> {
    let v = v.ok_or("acquire without x-ms-lease-duration")?;
    let n: i64 = v.parse().map_err(|_| format!("lease duration {v:?}"))?;
    if n < 0 {
        Ok(LeaseDuration::Infinite)
    } else {
        LeaseDuration::seconds(n as u64).map_err(|e| e.to_string())
    }
}

/// Sends the recorded lease operation on a blob or a container.
macro_rules! lease_step {
    ($target:expr, $req:expr) => {{
        let req = &$req;
        req.only(&[
            "x-ms-lease-action",
            "x-ms-lease-duration",
            "x-ms-proposed-lease-id",
            "x-ms-lease-break-period",
        ])?;
        let action = req.h("x-ms-lease-action").unwrap_or_default().to_string();
        let mut conditions = req.conditions()?;
        let id = conditions.lease_id.take();
        let proposed = match req.h("x-ms-proposed-lease-id") {
            Some(p) => Some(azstore::LeaseId::new(p).map_err(|e| e.to_string())?),
            None => None,
        };
        let duration = if action == "acquire" {
            Some(lease_duration(req.h("x-ms-lease-duration"))?)
        } else {
            None
        };
        let period = match req.h("x-ms-lease-break-period") {
            Some(p) => Some(
                azstore::lease::BreakPeriod::seconds(
                    p.parse().map_err(|_| format!("break period {p:?}"))?,
                )
                .map_err(|e| e.to_string())?,
            ),
            None => None,
        };
        let names = $target;
        Ok(one(move |cx, it| async move {
            let target = names(&cx)?;
            let resp = &it.response;
            match action.as_str() {
                "acquire" => {
                    let got = target
                        .acquire_lease(duration.unwrap(), proposed.as_ref(), &conditions)
                        .await;
                    if let Some(r) = outcome(got, resp)? {
                        crate::blob::check_lease_result(&r, resp)?;
                    }
                }
                "renew" | "change" | "release" => {
                    let id = id.ok_or("lease operation without x-ms-lease-id")?;
                    match action.as_str() {
                        "renew" => {
                            if let Some(r) =
                                outcome(target.renew_lease(&id, &conditions).await, resp)?
                            {
                                crate::blob::check_lease_result(&r, resp)?;
                            }
                        }
                        "change" => {
                            let proposed = proposed.ok_or("change without proposed id")?;
                            if let Some(r) = outcome(
                                target.change_lease(&id, &proposed, &conditions).await,
                                resp,
                            )? {
                                crate::blob::check_lease_result(&r, resp)?;
                            }
                        }
                        _ => {
                            if let Some(r) =
                                outcome(target.release_lease(&id, &conditions).await, resp)?
                            {
                                check_version(r.etag.as_ref(), r.last_modified, resp)?;
                            }
                        }
                    }
                }
                "break" => {
                    if let Some(r) = outcome(target.break_lease(period, &conditions).await, resp)? {
                        eq_header(
                            "lease time",
                            Some(r.remaining.as_secs().to_string()),
                            resp,
                            "x-ms-lease-time",
                        )?;
                        check_version(r.etag.as_ref(), r.last_modified, resp)?;
                    }
                }
                other => return Err(format!("lease action {other}")),
            }
            Ok(())
        }))
    }};
}

mod object;
use object::plan_blob;

pub fn plan(its: &[Interaction], i: usize) -> Result<Plan, String> {
    let it = &its[i];
    let req = Req::new(it);
    match req.segs.len() {
        0 => plan_service(&req),
        1 if req.rest_after_first().is_empty() => plan_container(&req),
        _ => plan_blob(&req),
    }
}

fn plan_service(req: &Req) -> Result<Plan, String> {
    match (req.method, req.comp(), req.restype()) {
        ("GET", "list", "") => {
            req.only(&[])?;
            let mut options = ListOptions::default();
            for (k, v) in &req.q {
                match k.as_str() {
                    "comp" | "marker" => {}
                    "prefix" => options = options.prefix(v.clone()),
                    "maxresults" => {
                        options = options.max_results(v.parse().map_err(|_| "maxresults")?)
                    }
                    "include" if v == "metadata" => options = options.with_metadata(),
                    other => return Err(format!("List Containers parameter {other}={v}")),
                }
            }
            let marker = req.query("marker").map(str::to_string);
            Ok(one(move |cx, it| async move {
                let got = cx
                    .blob
                    .list_containers_page(&options, marker.as_deref())
                    .await;
                let resp = &it.response;
                if let Some(page) = outcome(got, resp)? {
                    let names: Vec<String> = page.items.iter().map(|c| c.name.clone()).collect();
                    let want = xml_texts(&resp.body, &["Containers", "Container", "Name"]);
                    if names != want {
                        return Err(format!("names {names:?} != recorded {want:?}"));
                    }
                    check_listed_etags(
                        page.items.iter().map(|c| c.etag.clone()).collect(),
                        &resp.body,
                        &["Containers", "Container", "Properties", "Etag"],
                    )?;
                    if options
                        .include
                        .contains(&azstore::blob::ListInclude::Metadata)
                    {
                        check_listed_metadata(
                            page.items.iter().map(|c| &c.metadata),
                            resp,
                            "Container",
                        )?;
                    }
                    check_next_marker(page.next_marker.as_deref(), resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "properties", "service") => {
            req.only(&[])?;
            let props = azstore::service_properties::ServiceProperties::from_xml(&req.body())
                .map_err(|e| e.to_string())?;
            Ok(one(move |cx, it| async move {
                let got = cx.blob.set_service_properties(&props).await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET", "properties", "service") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = cx.blob.get_service_properties().await;
                if let Some(p) = outcome(got, &it.response)? {
                    let want =
                        azstore::service_properties::ServiceProperties::from_xml(&it.response.body)
                            .map_err(|e| e.to_string())?;
                    if p != want {
                        return Err(format!("{p:?} != recorded {want:?}"));
                    }
                }
                Ok(())
            }))
        }
        (m, c, r) => Err(format!("service operation {m} comp={c} restype={r}")),
    }
}

/// A listed ETag must equal the header ETag of the same version: quoted.
fn check_listed_etags(got: Vec<Option<ETag>>, body: &[u8], path: &[&str]) -> Result<(), String> {
    let want: Vec<Option<String>> = xml_texts(body, path)
        .into_iter()
        .map(|e| Some(format!("\"{}\"", e.trim_matches('"'))))
        .collect();
    // Blobs with uncommitted blocks only (include=uncommittedblobs) have no ETag: compare the
    // ETags that are there, in order.
    let got: Vec<Option<String>> = got
        .into_iter()
        .flatten()
        .map(|e| Some(e.as_str().to_string()))
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "listed ETags {got:?} != recorded (quoted) {want:?}"
        ))
    }
}

fn plan_container(req: &Req) -> Result<Plan, String> {
    let name = req.segs[0].clone();
    if req.restype() != "container" {
        return Err(format!("{} /{name} without restype=container", req.method));
    }
    let conditions = req.conditions()?;
    match (req.method, req.comp()) {
        ("PUT", "") => {
            req.only(&["x-ms-blob-public-access"])?;
            let mut options = azstore::blob::CreateContainerOptions::default();
            for (k, v) in req.metadata() {
                options = options.metadata(k, v);
            }
            options = options.public_access(match req.h("x-ms-blob-public-access") {
                None => azstore::blob::PublicAccess::None,
                Some("blob") => azstore::blob::PublicAccess::Blob,
                Some("container") => azstore::blob::PublicAccess::Container,
                Some(o) => return Err(format!("x-ms-blob-public-access: {o}")),
            });
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.create_with(&options).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("DELETE", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.delete(&conditions).await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET" | "HEAD", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.get_properties_if(&conditions).await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    check_metadata(&p.metadata, resp)?;
                    check_lease_state(p.lease_state, resp)?;
                }
                Ok(())
            }))
        }
        ("GET", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.get_metadata_if(&conditions).await;
                let resp = &it.response;
                // Get Container Metadata answers (metadata, ETag), like every get_metadata; the
                // recorded Last-Modified is not part of that answer.
                if let Some((metadata, etag)) = outcome(got, resp)? {
                    check_etag(Some(&etag), resp)?;
                    check_metadata(&metadata, resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "metadata") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?
                    .set_metadata(&meta, &conditions)
                    .await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "acl") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?
                    .get_access_policy_if(&conditions)
                    .await;
                let resp = &it.response;
                if let Some(a) = outcome(got, resp)? {
                    check_version(Some(&a.etag), a.last_modified, resp)?;
                    let ids: Vec<String> = a.acl.identifiers.iter().map(|s| s.id.clone()).collect();
                    let want =
                        xml_texts(&resp.body, &["SignedIdentifiers", "SignedIdentifier", "Id"]);
                    if ids != want {
                        return Err(format!("identifiers {ids:?} != recorded {want:?}"));
                    }
                    let perms: Vec<String> = a
                        .acl
                        .identifiers
                        .iter()
                        .map(|s| s.permission.clone().unwrap_or_default())
                        .collect();
                    let want = xml_texts(
                        &resp.body,
                        &[
                            "SignedIdentifiers",
                            "SignedIdentifier",
                            "AccessPolicy",
                            "Permission",
                        ],
                    );
                    if !want.is_empty() && perms != want {
                        return Err(format!("permissions {perms:?} != recorded {want:?}"));
                    }
                    eq_header(
                        "public access",
                        crate::acl::public_access_header(a.acl.public_access).map(str::to_string),
                        resp,
                        "x-ms-blob-public-access",
                    )?;
                }
                Ok(())
            }))
        }
        ("PUT", "acl") => {
            req.only(&["x-ms-blob-public-access"])?;
            let acl = crate::acl::container_acl_from(req)?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?
                    .set_access_policy(&acl, &conditions)
                    .await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "lease") => {
            let n = name.clone();
            lease_step!(move |cx: &Cx| container(cx, &n), req)
        }
        ("GET", "list") => {
            req.only(&[])?;
            let mut options = ListOptions::default();
            let mut deleted = false;
            for (k, v) in &req.q {
                match k.as_str() {
                    "comp" | "restype" | "marker" => {}
                    "prefix" => options = options.prefix(v.clone()),
                    "delimiter" => options = options.delimiter(v.clone()),
                    "maxresults" => {
                        options = options.max_results(v.parse().map_err(|_| "maxresults")?)
                    }
                    "include" => {
                        for inc in v.split(',') {
                            match inc {
                                "metadata" => options = options.with_metadata(),
                                "snapshots" => options = options.with_snapshots(),
                                "deleted" => deleted = true,
                                "copy" => options = options.including(ListInclude::Copy),
                                "uncommittedblobs" => {
                                    options = options.including(ListInclude::UncommittedBlobs)
                                }
                                other => {
                                    return Err(format!(
                                        "List Blobs include={other} (pending issue 20)"
                                    ));
                                }
                            }
                        }
                    }
                    other => return Err(format!("List Blobs parameter {other}={v}")),
                }
            }
            if deleted {
                options = options.with_deleted();
            }
            let marker = req.query("marker").map(str::to_string);
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?
                    .list_blobs_page(&options, marker.as_deref())
                    .await;
                let resp = &it.response;
                if let Some(page) = outcome(got, resp)? {
                    let names: Vec<String> =
                        page.items.iter().map(|b| b.name().to_string()).collect();
                    let want = xml_texts(&resp.body, &["Blobs", "*", "Name"]);
                    if names != want {
                        return Err(format!("names {names:?} != recorded {want:?}"));
                    }
                    let blobs: Vec<_> = page
                        .items
                        .iter()
                        .filter_map(|b| match b {
                            BlobListItem::Blob(b) => Some(b),
                            _ => None,
                        })
                        .collect();
                    check_listed_etags(
                        blobs.iter().map(|b| b.etag.clone()).collect(),
                        &resp.body,
                        &["Blobs", "Blob", "Properties", "Etag"],
                    )?;
                    let snaps: Vec<String> =
                        blobs.iter().filter_map(|b| b.snapshot.clone()).collect();
                    let want = xml_texts(&resp.body, &["Blobs", "Blob", "Snapshot"]);
                    if snaps != want {
                        return Err(format!("snapshots {snaps:?} != recorded {want:?}"));
                    }
                    let dels: Vec<bool> = blobs.iter().map(|b| b.deleted).collect();
                    let want: Vec<bool> = crate::compare::xml_items(&resp.body, "Blob")
                        .iter()
                        .map(|b| b.contains("<Deleted>true</>"))
                        .collect();
                    if dels != want {
                        return Err(format!("deleted flags {dels:?} != recorded {want:?}"));
                    }
                    if options
                        .include
                        .contains(&azstore::blob::ListInclude::Metadata)
                    {
                        check_listed_metadata(blobs.iter().map(|b| &b.metadata), resp, "Blob")?;
                    }
                    check_next_marker(page.next_marker.as_deref(), resp)?;
                }
                Ok(())
            }))
        }
        (m, c) => Err(format!("container operation {m} comp={c}")),
    }
}

pub fn check_metadata(
    got: &BTreeMap<String, String>,
    resp: &RecordedResponse,
) -> Result<(), String> {
    let want: BTreeMap<String, String> = resp
        .headers
        .iter()
        .filter_map(|(k, v)| {
            k.to_ascii_lowercase()
                .strip_prefix("x-ms-meta-")
                .map(|n| (n.to_string(), v.clone()))
        })
        .collect();
    let got: BTreeMap<String, String> = got
        .iter()
        .map(|(k, v)| (k.to_ascii_lowercase(), v.clone()))
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!("metadata {got:?} != recorded {want:?}"))
    }
}

pub(super) fn check_properties(
    p: &azstore::blob::BlobProperties,
    resp: &RecordedResponse,
) -> Result<(), String> {
    check_version(Some(&p.etag), p.last_modified, resp)?;
    check_metadata(&p.metadata, resp)?;
    let total = match resp
        .header("content-range")
        .and_then(|r| r.rsplit_once('/'))
    {
        Some((_, t)) => t.parse::<u64>().ok(),
        None => resp.header("content-length").and_then(|l| l.parse().ok()),
    };
    if let Some(total) = total {
        if p.content_length != total {
            return Err(format!(
                "content length {} != recorded {total}",
                p.content_length
            ));
        }
    }
    eq_header(
        "blob type",
        p.blob_type.map(|t| t.as_str().to_string()),
        resp,
        "x-ms-blob-type",
    )?;
    check_lease_state(p.lease_state, resp)?;
    eq_header(
        "lease status",
        p.lease_status.map(|s| format!("{s:?}").to_lowercase()),
        resp,
        "x-ms-lease-status",
    )?;
    eq_header(
        "lease duration",
        p.lease_duration.map(|s| format!("{s:?}").to_lowercase()),
        resp,
        "x-ms-lease-duration",
    )?;
    eq_header(
        "content type",
        p.http_headers.content_type.clone(),
        resp,
        "content-type",
    )?;
    eq_header(
        "content language",
        p.http_headers.content_language.clone(),
        resp,
        "content-language",
    )?;
    eq_header(
        "content disposition",
        p.http_headers.content_disposition.clone(),
        resp,
        "content-disposition",
    )?;
    // The stored MD5: `x-ms-blob-content-md5` on a ranged read (206), where `Content-MD5`
    // is the range's own when asked for; `Content-MD5` on a whole read and on HEAD.
    let stored_md5 = match resp.header("x-ms-blob-content-md5") {
        Some(v) => Some(v.to_string()),
        None if resp.header("content-range").is_none() => {
            resp.header("content-md5").map(str::to_string)
        }
        None => None,
    };
    if p.http_headers.content_md5 != stored_md5 {
        return Err(format!(
            "stored MD5 {:?} != recorded {stored_md5:?}",
            p.http_headers.content_md5
        ));
    }
    eq_header(
        "copy status",
        p.copy_status.clone(),
        resp,
        "x-ms-copy-status",
    )?;
    Ok(())
}
