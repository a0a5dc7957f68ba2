//! Blob service: recorded requests -> `BlobServiceClient` / `ContainerClient` / `BlobClient`.

use std::collections::BTreeMap;

use azstore::blob::{
    AppendOptions, BlobListItem, BlockId, BlockListType, BlockRef, CommitOptions, CopyOptions,
    CreateOptions, DeleteSnapshots, ListOptions, PutOptions, SnapshotId,
};
use azstore::lease::{BreakPeriod, LeaseDuration};
use azstore::{BlobClient, ContainerClient, ETag, LeaseId};
use testkit::replay::{Interaction, RecordedResponse};

use crate::compare::{eq_date, eq_header, outcome, xml_texts};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;

fn container(cx: &Cx, name: &str) -> Result<ContainerClient, String> {
    cx.blob.container(name).map_err(|e| e.to_string())
}

fn blob_of(cx: &Cx, c: &str, b: &str) -> Result<BlobClient, String> {
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
            Some(p) => Some(LeaseId::new(p).map_err(|e| e.to_string())?),
            None => None,
        };
        let duration = if action == "acquire" {
            Some(lease_duration(req.h("x-ms-lease-duration"))?)
        } else {
            None
        };
        let period = match req.h("x-ms-lease-break-period") {
            Some(p) => Some(
                BreakPeriod::seconds(p.parse().map_err(|_| format!("break period {p:?}"))?)
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
                        eq_header(
                            "lease id",
                            Some(r.lease_id.as_str().into()),
                            resp,
                            "x-ms-lease-id",
                        )?;
                        check_version(r.etag.as_ref(), r.last_modified, resp)?;
                    }
                }
                "renew" | "change" | "release" => {
                    let id = id.ok_or("lease operation without x-ms-lease-id")?;
                    match action.as_str() {
                        "renew" => {
                            if let Some(r) =
                                outcome(target.renew_lease(&id, &conditions).await, resp)?
                            {
                                eq_header(
                                    "lease id",
                                    Some(r.lease_id.as_str().into()),
                                    resp,
                                    "x-ms-lease-id",
                                )?;
                                check_version(r.etag.as_ref(), r.last_modified, resp)?;
                            }
                        }
                        "change" => {
                            let proposed = proposed.ok_or("change without proposed id")?;
                            if let Some(r) = outcome(
                                target.change_lease(&id, &proposed, &conditions).await,
                                resp,
                            )? {
                                eq_header(
                                    "lease id",
                                    Some(r.lease_id.as_str().into()),
                                    resp,
                                    "x-ms-lease-id",
                                )?;
                                check_version(r.etag.as_ref(), r.last_modified, resp)?;
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
                    if options.include_metadata {
                        check_listed_metadata(
                            page.items.iter().map(|c| c.metadata.clone()).collect(),
                            &resp.body,
                            "Container",
                        )?;
                    }
                    check_marker(page.next_marker, &resp.body)?;
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

fn check_marker(got: Option<String>, body: &[u8]) -> Result<(), String> {
    let want = xml_texts(body, &["NextMarker"])
        .into_iter()
        .next()
        .filter(|m| !m.is_empty());
    if got == want {
        Ok(())
    } else {
        Err(format!("next marker {got:?} != recorded {want:?}"))
    }
}

/// A listed ETag must equal the header ETag of the same version: quoted.
fn check_listed_etags(got: Vec<Option<ETag>>, body: &[u8], path: &[&str]) -> Result<(), String> {
    let want: Vec<Option<String>> = xml_texts(body, path)
        .into_iter()
        .map(|e| Some(format!("\"{}\"", e.trim_matches('"'))))
        .collect();
    let got: Vec<Option<String>> = got
        .into_iter()
        .map(|e| e.map(|e| e.as_str().to_string()))
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!(
            "listed ETags {got:?} != recorded (quoted) {want:?}"
        ))
    }
}

fn check_listed_metadata(
    got: Vec<BTreeMap<String, String>>,
    body: &[u8],
    item: &str,
) -> Result<(), String> {
    let want = crate::compare::xml_metadata(body, item);
    let got: Vec<BTreeMap<String, String>> = got
        .into_iter()
        .map(|m| {
            m.into_iter()
                .map(|(k, v)| (k.to_ascii_lowercase(), v))
                .collect()
        })
        .collect();
    if got == want {
        Ok(())
    } else {
        Err(format!("listed metadata {got:?} != recorded {want:?}"))
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
            req.only(&[])?;
            if !req.metadata().is_empty() {
                return Err("Create Container with metadata (pending issue 20)".into());
            }
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.create().await;
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
                    eq_header(
                        "lease state",
                        p.lease_state.map(|s| format!("{s:?}").to_lowercase()),
                        resp,
                        "x-ms-lease-state",
                    )?;
                }
                Ok(())
            }))
        }
        ("GET", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = container(&cx, &name)?.get_metadata_if(&conditions).await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    check_metadata(&p.metadata, resp)?;
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
                let got = container(&cx, &name)?.get_acl_if(&conditions).await;
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
                let got = container(&cx, &name)?.set_acl(&acl, &conditions).await;
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
                    if options.include_metadata {
                        check_listed_metadata(
                            blobs.iter().map(|b| b.metadata.clone()).collect(),
                            &resp.body,
                            "Blob",
                        )?;
                    }
                    check_marker(page.next_marker, &resp.body)?;
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

fn check_properties(
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
    eq_header(
        "lease state",
        p.lease_state.map(|s| format!("{s:?}").to_lowercase()),
        resp,
        "x-ms-lease-state",
    )?;
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
    eq_header("content type", p.content_type.clone(), resp, "content-type")?;
    eq_header(
        "content language",
        p.content_language.clone(),
        resp,
        "content-language",
    )?;
    eq_header(
        "content disposition",
        p.content_disposition.clone(),
        resp,
        "content-disposition",
    )?;
    eq_header(
        "copy status",
        p.copy_status.clone(),
        resp,
        "x-ms-copy-status",
    )?;
    Ok(())
}

fn plan_blob(req: &Req) -> Result<Plan, String> {
    let c = req.segs[0].clone();
    let b = req.rest_after_first();
    if b.ends_with('.') || b.ends_with('/') {
        return Err(format!(
            "blob name {b:?}: azstore refuses names ending with '.' or '/' before sending \
             (Azure's naming guide advises against them; the service accepted it)"
        ));
    }
    let conditions = req.conditions()?;
    let body = req.body();
    if req.query("snapshot").is_some()
        && !matches!((req.method, req.comp()), ("GET", "") | ("DELETE", ""))
    {
        return Err(format!(
            "{} comp={} of a snapshot (pending issue 20)",
            req.method,
            req.comp()
        ));
    }
    match (req.method, req.comp()) {
        ("PUT", "") if req.h("x-ms-copy-source").is_some() => {
            req.only(&["x-ms-copy-source", "x-ms-requires-sync"])?;
            let source = req.h("x-ms-copy-source").unwrap().to_string();
            let sync = req.h("x-ms-requires-sync").is_some();
            let mut options = CopyOptions::new(req.source_conditions()?, conditions);
            options.write.metadata = req.metadata();
            Ok(one(move |cx, it| async move {
                let blob = blob_of(&cx, &c, &b)?;
                let got = if sync {
                    blob.copy_from_url(&source, &options).await
                } else {
                    blob.start_copy_from_url(&source, &options).await
                };
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    check_version(Some(&r.etag), r.last_modified, resp)?;
                    eq_header("copy id", Some(r.copy_id.clone()), resp, "x-ms-copy-id")?;
                }
                Ok(())
            }))
        }
        ("PUT", "") => {
            let kind = req
                .h("x-ms-blob-type")
                .ok_or("Put Blob without x-ms-blob-type")?
                .to_string();
            let meta = req.metadata();
            match kind.as_str() {
                "BlockBlob" => {
                    req.only(&["x-ms-blob-type"])?;
                    let mut options = PutOptions::conditions(conditions);
                    options.write.metadata = meta;
                    Ok(one(move |cx, it| async move {
                        let got = blob_of(&cx, &c, &b)?.put(body, &options).await;
                        if let Some(w) = outcome(got, &it.response)? {
                            check_version(Some(&w.etag), w.last_modified, &it.response)?;
                        }
                        Ok(())
                    }))
                }
                "AppendBlob" => {
                    req.only(&["x-ms-blob-type"])?;
                    let mut options = CreateOptions::conditions(conditions);
                    options.write.metadata = meta;
                    Ok(one(move |cx, it| async move {
                        let got = blob_of(&cx, &c, &b)?.create_append_blob(&options).await;
                        if let Some(w) = outcome(got, &it.response)? {
                            check_version(Some(&w.etag), w.last_modified, &it.response)?;
                        }
                        Ok(())
                    }))
                }
                "PageBlob" => {
                    req.only(&["x-ms-blob-type", "x-ms-blob-content-length"])?;
                    let size: u64 = req
                        .h("x-ms-blob-content-length")
                        .and_then(|s| s.parse().ok())
                        .ok_or("page blob without x-ms-blob-content-length")?;
                    let mut options = CreateOptions::conditions(conditions);
                    options.write.metadata = meta;
                    Ok(one(move |cx, it| async move {
                        let got = blob_of(&cx, &c, &b)?.create_page_blob(size, &options).await;
                        if let Some(w) = outcome(got, &it.response)? {
                            check_version(Some(&w.etag), w.last_modified, &it.response)?;
                        }
                        Ok(())
                    }))
                }
                other => Err(format!("blob type {other}")),
            }
        }
        ("GET", "") => {
            req.only(&["x-ms-range"])?;
            let range = req.range()?;
            let snapshot = req.query("snapshot").map(SnapshotId::new);
            if snapshot.is_some() && (range.is_some() || !conditions.is_unconditional()) {
                return Err("ranged or conditional read of a snapshot (pending issue 20)".into());
            }
            Ok(one(move |cx, it| async move {
                let blob = blob_of(&cx, &c, &b)?;
                let got = match (&snapshot, range) {
                    (Some(s), _) => blob.download_snapshot(s).await,
                    (None, Some(r)) => blob.download_range_if(r, &conditions).await,
                    (None, None) => blob.download_if(&conditions).await,
                };
                let resp = &it.response;
                if let Some(d) = outcome(got, resp)? {
                    if d.body[..] != resp.body[..] {
                        return Err(format!(
                            "content: {} bytes != recorded {} bytes",
                            d.body.len(),
                            resp.body.len()
                        ));
                    }
                    check_properties(&d.properties, resp)?;
                }
                Ok(())
            }))
        }
        ("HEAD", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.get_properties_if(&conditions).await;
                if let Some(p) = outcome(got, &it.response)? {
                    check_properties(&p, &it.response)?;
                }
                Ok(())
            }))
        }
        ("DELETE", "") => {
            req.only(&["x-ms-delete-snapshots"])?;
            let snapshot = req.query("snapshot").map(SnapshotId::new);
            let which = match req.h("x-ms-delete-snapshots") {
                None => DeleteSnapshots::Fail,
                Some("include") => DeleteSnapshots::Include,
                Some("only") => DeleteSnapshots::Only,
                Some(o) => return Err(format!("x-ms-delete-snapshots: {o}")),
            };
            if snapshot.is_some() && !conditions.is_unconditional() {
                return Err("conditional delete of a snapshot (pending issue 20)".into());
            }
            Ok(one(move |cx, it| async move {
                let blob = blob_of(&cx, &c, &b)?;
                let got = match &snapshot {
                    Some(s) => blob.delete_snapshot(s).await,
                    None => blob.delete_with(which, &conditions).await,
                };
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("PUT", "undelete") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.undelete().await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.get_metadata_if(&conditions).await;
                let resp = &it.response;
                if let Some((meta, etag)) = outcome(got, resp)? {
                    check_etag(Some(&etag), resp)?;
                    check_metadata(&meta, resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "metadata") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.set_metadata(&meta, &conditions).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "properties") => {
            req.only(&[
                "x-ms-blob-content-disposition",
                "x-ms-blob-content-language",
                "x-ms-blob-content-type",
                "x-ms-blob-content-md5",
                "x-ms-blob-cache-control",
                "x-ms-blob-content-encoding",
            ])?;
            if req.h("x-ms-blob-content-md5").is_some() {
                return Err("Set Blob Properties with Content-MD5 (pending issue 20)".into());
            }
            let mut headers = azstore::blob::BlobHttpHeaders::default();
            if let Some(v) = req.h("x-ms-blob-content-type") {
                headers = headers.content_type(v);
            }
            if let Some(v) = req.h("x-ms-blob-content-language") {
                headers = headers.content_language(v);
            }
            if let Some(v) = req.h("x-ms-blob-content-disposition") {
                headers = headers.content_disposition(v);
            }
            if let Some(v) = req.h("x-ms-blob-cache-control") {
                headers = headers.cache_control(v);
            }
            if let Some(v) = req.h("x-ms-blob-content-encoding") {
                headers = headers.content_encoding(v);
            }
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .set_http_headers(&headers, &conditions)
                    .await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "snapshot") => {
            req.only(&[])?;
            if !req.metadata().is_empty() {
                return Err("Snapshot Blob with metadata (pending issue 20)".into());
            }
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.snapshot(&conditions).await;
                let resp = &it.response;
                if let Some(s) = outcome(got, resp)? {
                    check_version(Some(&s.etag), s.last_modified, resp)?;
                    eq_header(
                        "snapshot",
                        Some(s.snapshot.as_str().to_string()),
                        resp,
                        "x-ms-snapshot",
                    )?;
                }
                Ok(())
            }))
        }
        ("PUT", "lease") => {
            let (c2, b2) = (c.clone(), b.clone());
            lease_step!(move |cx: &Cx| blob_of(cx, &c2, &b2), req)
        }
        ("PUT", "block") => {
            req.only(&[])?;
            let id = BlockId::from_base64(req.query("blockid").ok_or("no blockid")?.to_string())
                .map_err(|e| e.to_string())?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .put_block(&id, body, &conditions)
                    .await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("PUT", "blocklist") => {
            req.only(&[])?;
            let blocks = crate::acl::block_refs(&body)?;
            let mut options = CommitOptions {
                conditions,
                ..CommitOptions::default()
            };
            options.write.metadata = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .put_block_list(&blocks, &options)
                    .await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "blocklist") => {
            req.only(&[])?;
            let which = match req.query("blocklisttype") {
                Some("committed") => BlockListType::Committed,
                Some("uncommitted") => BlockListType::Uncommitted,
                Some("all") => BlockListType::All,
                other => return Err(format!("blocklisttype {other:?}")),
            };
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .get_block_list_if(which, &conditions)
                    .await;
                let resp = &it.response;
                if let Some(l) = outcome(got, resp)? {
                    let ids: Vec<String> = l
                        .committed
                        .iter()
                        .map(|b| b.id.as_str().to_string())
                        .collect();
                    let want = xml_texts(
                        &resp.body,
                        &["BlockList", "CommittedBlocks", "Block", "Name"],
                    );
                    if ids != want {
                        return Err(format!("committed {ids:?} != recorded {want:?}"));
                    }
                    let ids: Vec<String> = l
                        .uncommitted
                        .iter()
                        .map(|b| b.id.as_str().to_string())
                        .collect();
                    let want = xml_texts(
                        &resp.body,
                        &["BlockList", "UncommittedBlocks", "Block", "Name"],
                    );
                    if ids != want {
                        return Err(format!("uncommitted {ids:?} != recorded {want:?}"));
                    }
                    check_etag(l.etag.as_ref(), resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "appendblock") if req.h("x-ms-copy-source").is_some() => {
            req.only(&[
                "x-ms-copy-source",
                "x-ms-source-range",
                "x-ms-source-if-match",
                "x-ms-source-if-none-match",
                "x-ms-source-if-modified-since",
                "x-ms-source-if-unmodified-since",
                "x-ms-blob-condition-appendpos",
                "x-ms-blob-condition-maxsize",
            ])?;
            let source = req.h("x-ms-copy-source").unwrap().to_string();
            let source_range = match req.h("x-ms-source-range") {
                Some(r) => Some(crate::req::parse_range(r)?),
                None => None,
            };
            let mut options = azstore::blob::AppendFromUrlOptions::default();
            options.append.conditions = conditions;
            options.append.append_position = num(req.h("x-ms-blob-condition-appendpos"))?;
            options.append.max_size = num(req.h("x-ms-blob-condition-maxsize"))?;
            options.source_conditions = req.source_conditions()?;
            options.source_range = source_range;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .append_block_from_url(&source, &options)
                    .await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    check_version(Some(&r.etag), r.last_modified, resp)?;
                    eq_header(
                        "append offset",
                        Some(r.append_offset.to_string()),
                        resp,
                        "x-ms-blob-append-offset",
                    )?;
                }
                Ok(())
            }))
        }
        ("PUT", "appendblock") => {
            req.only(&[
                "x-ms-blob-condition-appendpos",
                "x-ms-blob-condition-maxsize",
            ])?;
            let options = AppendOptions {
                conditions,
                append_position: num(req.h("x-ms-blob-condition-appendpos"))?,
                max_size: num(req.h("x-ms-blob-condition-maxsize"))?,
                checksum: azstore::blob::Checksum::None,
            };
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.append_block(body, &options).await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    check_version(Some(&r.etag), r.last_modified, resp)?;
                    eq_header(
                        "append offset",
                        Some(r.append_offset.to_string()),
                        resp,
                        "x-ms-blob-append-offset",
                    )?;
                    eq_header(
                        "committed block count",
                        r.committed_block_count.map(|n| n.to_string()),
                        resp,
                        "x-ms-blob-committed-block-count",
                    )?;
                }
                Ok(())
            }))
        }
        ("PUT", "page") => {
            if req.h("x-ms-copy-source").is_some() {
                return Err("Put Page From URL (pending issue 20)".into());
            }
            req.only(&["x-ms-page-write", "x-ms-range"])?;
            let range = req.range()?.ok_or("Put Page without a range")?;
            let write = req.h("x-ms-page-write").unwrap_or_default().to_string();
            Ok(one(move |cx, it| async move {
                let blob = blob_of(&cx, &c, &b)?;
                let got = match write.as_str() {
                    "update" => blob.put_pages(range.start, body, &conditions).await,
                    "clear" => {
                        blob.clear_pages(range.start, range.end - range.start, &conditions)
                            .await
                    }
                    other => return Err(format!("x-ms-page-write {other}")),
                };
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "pagelist") => {
            req.only(&[])?;
            if req.query("prevsnapshot").is_some() {
                return Err("Get Page Ranges diff (pending issue 20)".into());
            }
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.get_page_ranges_if(&conditions).await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    let got: Vec<String> = p
                        .ranges
                        .iter()
                        .map(|r| format!("{}-{}", r.start, r.end - 1))
                        .collect();
                    let starts = xml_texts(&resp.body, &["PageList", "PageRange", "Start"]);
                    let ends = xml_texts(&resp.body, &["PageList", "PageRange", "End"]);
                    let want: Vec<String> = starts
                        .iter()
                        .zip(&ends)
                        .map(|(s, e)| format!("{s}-{e}"))
                        .collect();
                    if got != want {
                        return Err(format!("page ranges {got:?} != recorded {want:?}"));
                    }
                }
                Ok(())
            }))
        }
        ("PUT", "copy") => {
            req.only(&["x-ms-copy-action"])?;
            let id = req
                .query("copyid")
                .ok_or("abort without copyid")?
                .to_string();
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.abort_copy(&id, &conditions).await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        (m, comp) => Err(format!("blob operation {m} comp={comp}")),
    }
}

fn num(v: Option<&str>) -> Result<Option<u64>, String> {
    v.map(|s| s.parse().map_err(|_| format!("number {s:?}")))
        .transpose()
}

#[allow(dead_code)]
fn unused(_: BlockRef) {}
