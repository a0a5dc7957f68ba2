//! File service: recorded requests -> `ShareServiceClient` / `ShareClient` /
//! `DirectoryClient` / `FileClient`.

use azstore::blob::Checksum;
use azstore::file::SnapshotId;
use azstore::file::{
    CreateFileOptions, FileAttributes, FilePermission, ListItem, ListOptions, SetFileProperties,
    ShareOptions, SmbProperties, SmbTime,
};
use azstore::http_headers::HttpHeaders;
use azstore::{LeaseId, file::DirectoryClient, file::FileClient, file::ShareClient};
use bytes::Bytes;
use testkit::replay::{Interaction, RecordedResponse};

use crate::blob::{check_metadata, check_version};
use crate::compare::{check_listed_metadata, check_next_marker, eq_header, outcome, xml_texts};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;

fn share(cx: &Cx, name: &str) -> Result<ShareClient, String> {
    cx.file.share(name).map_err(|e| e.to_string())
}

fn dir(cx: &Cx, s: &str, path: &str) -> Result<DirectoryClient, String> {
    let sh = share(cx, s)?;
    if path.is_empty() {
        Ok(sh.root())
    } else {
        sh.directory(path).map_err(|e| e.to_string())
    }
}

fn file(cx: &Cx, s: &str, path: &str) -> Result<FileClient, String> {
    share(cx, s)?.file(path).map_err(|e| e.to_string())
}

fn lease(req: &Req) -> Result<Option<LeaseId>, String> {
    req.h("x-ms-lease-id")
        .map(|l| LeaseId::new(l).map_err(|e| e.to_string()))
        .transpose()
}

/// The SMB headers of a recorded request.
const SMB_HEADERS: &[&str] = &[
    "x-ms-file-attributes",
    "x-ms-file-creation-time",
    "x-ms-file-last-write-time",
    "x-ms-file-change-time",
    "x-ms-file-permission",
    "x-ms-file-permission-key",
];

/// The recorded SMB headers as azstore's `SmbProperties` (`Preserve`, `Inherit`, `now` as the
/// keywords they are).
fn smb_of(req: &Req) -> Result<SmbProperties, String> {
    let keyword = |v: &str, k: &str| v.eq_ignore_ascii_case(k);
    let mut smb = SmbProperties::default();
    if let Some(a) = req.h("x-ms-file-attributes") {
        smb = if keyword(a, "preserve") {
            smb.preserve_attributes()
        } else {
            smb.attributes(FileAttributes::parse(a).map_err(|e| e.to_string())?)
        };
    }
    let time = |h: &str| -> Result<Option<SmbTime>, String> {
        Ok(match req.h(h) {
            None => None,
            Some(v) if keyword(v, "preserve") => Some(SmbTime::Preserve),
            Some(v) if keyword(v, "now") => Some(SmbTime::Now),
            Some(v) => Some(SmbTime::At(
                time::OffsetDateTime::parse(v, &time::format_description::well_known::Rfc3339)
                    .map_err(|_| format!("{h}: {v}"))?,
            )),
        })
    };
    if let Some(t) = time("x-ms-file-creation-time")? {
        smb = smb.creation_time(t);
    }
    if let Some(t) = time("x-ms-file-last-write-time")? {
        smb = smb.last_write_time(t);
    }
    if let Some(t) = time("x-ms-file-change-time")? {
        smb = smb.change_time(t);
    }
    match (
        req.h("x-ms-file-permission"),
        req.h("x-ms-file-permission-key"),
    ) {
        (Some(p), _) if keyword(p, "inherit") => smb = smb.permission(FilePermission::Inherit),
        (Some(p), _) if keyword(p, "preserve") => smb = smb.permission(FilePermission::Preserve),
        (Some(p), _) => smb = smb.permission(FilePermission::Sddl(p.to_string())),
        (None, Some(k)) => smb = smb.permission(FilePermission::Key(k.to_string())),
        (None, None) => {}
    }
    Ok(smb)
}

/// The SMB properties read back agree with the recorded response headers.
fn check_smb(smb: &SmbProperties, resp: &RecordedResponse) -> Result<(), String> {
    eq_header(
        "file attributes",
        smb.attributes.map(|a| a.to_string()),
        resp,
        "x-ms-file-attributes",
    )?;
    let t = |t: Option<SmbTime>| SmbProperties::time_of(t).map(|t| SmbTime::At(t).to_string());
    eq_header(
        "creation time",
        t(smb.creation_time),
        resp,
        "x-ms-file-creation-time",
    )?;
    eq_header(
        "last-write time",
        t(smb.last_write_time),
        resp,
        "x-ms-file-last-write-time",
    )?;
    eq_header(
        "change time",
        t(smb.change_time),
        resp,
        "x-ms-file-change-time",
    )?;
    let key = match &smb.permission {
        Some(FilePermission::Key(k)) => Some(k.clone()),
        _ => None,
    };
    eq_header("permission key", key, resp, "x-ms-file-permission-key")?;
    eq_header("file id", smb.file_id.clone(), resp, "x-ms-file-id")
}

/// Sets one stored HTTP header.
type SetHeader = fn(HttpHeaders, String) -> HttpHeaders;

/// The stored HTTP headers of Create File / Set File Properties.
const HTTP_HEADERS: [(&str, SetHeader); 6] = [
    ("x-ms-content-type", |h, v| h.content_type(v)),
    ("x-ms-content-encoding", |h, v| h.content_encoding(v)),
    ("x-ms-content-language", |h, v| h.content_language(v)),
    ("x-ms-cache-control", |h, v| h.cache_control(v)),
    ("x-ms-content-disposition", |h, v| h.content_disposition(v)),
    ("x-ms-content-md5", |h, v| h.content_md5(v)),
];

/// The stored MD5 of a read: `x-ms-content-md5` on a ranged read (206), where `Content-MD5`
/// is the range's own when asked for; `Content-MD5` on a whole read and on HEAD.
fn check_stored_md5(h: &HttpHeaders, resp: &RecordedResponse) -> Result<(), String> {
    let want = match resp.header("x-ms-content-md5") {
        Some(v) => Some(v.to_string()),
        None if resp.header("content-range").is_none() => {
            resp.header("content-md5").map(str::to_string)
        }
        None => None,
    };
    if h.content_md5 == want {
        Ok(())
    } else {
        Err(format!(
            "stored MD5 {:?} != recorded {want:?}",
            h.content_md5
        ))
    }
}

fn http_headers_of(req: &Req) -> HttpHeaders {
    HTTP_HEADERS
        .iter()
        .fold(HttpHeaders::default(), |h, (name, set)| match req.h(name) {
            Some(v) => set(h, v.to_string()),
            None => h,
        })
}

fn no_conditions(req: &Req) -> Result<(), String> {
    for h in [
        "if-match",
        "if-none-match",
        "if-modified-since",
        "if-unmodified-since",
    ] {
        if req.h(h).is_some() {
            return Err(format!("{h} on a File request"));
        }
    }
    Ok(())
}

fn check_list(
    items: &[ListItem],
    next: Option<String>,
    resp: &RecordedResponse,
) -> Result<(), String> {
    let got: Vec<String> = items
        .iter()
        .map(|i| match i {
            ListItem::Directory { name } => format!("d:{name}"),
            ListItem::File { name, size } => format!("f:{name}:{size}"),
        })
        .collect();
    let kinds = crate::compare::xml_items(&resp.body, "Entries");
    let mut want = Vec::new();
    let names_d = xml_texts(&resp.body, &["Entries", "Directory", "Name"]);
    let names_f = xml_texts(&resp.body, &["Entries", "File", "Name"]);
    let sizes = xml_texts(
        &resp.body,
        &["Entries", "File", "Properties", "Content-Length"],
    );
    // Entries in document order: walk the flattened <Entries> content.
    let (mut di, mut fi) = (0, 0);
    if let Some(entries) = kinds.first() {
        let mut rest = entries.as_str();
        while let Some(pos) = rest.find('<') {
            rest = &rest[pos..];
            if rest.starts_with("<Directory>") {
                want.push(format!(
                    "d:{}",
                    names_d.get(di).cloned().unwrap_or_default()
                ));
                di += 1;
            } else if rest.starts_with("<File>") {
                want.push(format!(
                    "f:{}:{}",
                    names_f.get(fi).cloned().unwrap_or_default(),
                    sizes.get(fi).cloned().unwrap_or_default()
                ));
                fi += 1;
            }
            rest = &rest[1..];
        }
    }
    if got != want {
        return Err(format!("entries {got:?} != recorded {want:?}"));
    }
    check_next_marker(next.as_deref(), resp)
}

fn plan_service(req: &Req) -> Result<Plan, String> {
    if (req.method, req.comp()) != ("GET", "list") {
        return Err(format!(
            "share service operation {} comp={}",
            req.method,
            req.comp()
        ));
    }
    req.only(&[])?;
    let mut options = azstore::file::ListSharesOptions::default();
    for (k, v) in &req.q {
        match k.as_str() {
            "comp" | "marker" => {}
            "prefix" => options = options.prefix(v.clone()),
            "maxresults" => options = options.max_results(v.parse().map_err(|_| "maxresults")?),
            "include" => {
                for part in v.split(',') {
                    match part {
                        "metadata" => options = options.with_metadata(),
                        "snapshots" => options = options.with_snapshots(),
                        "deleted" => options = options.with_deleted(),
                        other => return Err(format!("List Shares include={other}")),
                    }
                }
            }
            other => return Err(format!("List Shares parameter {other}={v}")),
        }
    }
    let marker = req.query("marker").map(str::to_string);
    Ok(one(move |cx, it| async move {
        let got = cx.file.list_shares_page(&options, marker.as_deref()).await;
        let resp = &it.response;
        if let Some(page) = outcome(got, resp)? {
            let names: Vec<String> = page.shares.iter().map(|s| s.name.clone()).collect();
            let want = xml_texts(&resp.body, &["Shares", "Share", "Name"]);
            if names != want {
                return Err(format!("names {names:?} != recorded {want:?}"));
            }
            let etags: Vec<String> = page
                .shares
                .iter()
                .map(|s| {
                    s.etag
                        .as_ref()
                        .map(|e| e.as_str().to_string())
                        .unwrap_or_default()
                })
                .collect();
            let want: Vec<String> =
                xml_texts(&resp.body, &["Shares", "Share", "Properties", "Etag"])
                    .into_iter()
                    .map(|e| format!("\"{}\"", e.trim_matches('"')))
                    .collect();
            if etags != want {
                return Err(format!("ETags {etags:?} != recorded {want:?}"));
            }
            if options.include_metadata {
                check_listed_metadata(page.shares.iter().map(|s| &s.metadata), resp, "Share")?;
            }
            check_next_marker(page.next_marker.as_deref(), resp)?;
        }
        Ok(())
    }))
}

pub fn plan(its: &[Interaction], i: usize) -> Result<Plan, String> {
    let req = Req::new(&its[i]);
    no_conditions(&req)?;
    let segs = req.segs.clone();
    if segs.is_empty() {
        return plan_service(&req);
    }
    let s = segs[0].clone();
    let path = segs[1..].join("/");
    match (req.method, req.restype(), req.comp()) {
        ("PUT", "share", "") => {
            req.only(&["x-ms-share-quota"])?;
            let meta = req.metadata();
            let quota = match req.h("x-ms-share-quota") {
                Some(q) => Some(q.parse::<u32>().map_err(|_| "quota")?),
                None => None,
            };
            Ok(one(move |cx, it| async move {
                let mut options = azstore::file::ShareOptions::default().metadata(meta);
                options.quota_gib = quota;
                let got = share(&cx, &s)?.create_with(&options).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("DELETE", "share", "") => {
            req.only(&["x-ms-delete-snapshots"])?;
            let snapshot = req.query("sharesnapshot").map(str::to_string);
            let include = match req.h("x-ms-delete-snapshots") {
                None => false,
                Some("include") => true,
                Some(o) => return Err(format!("x-ms-delete-snapshots: {o}")),
            };
            let l = lease(&req)?;
            Ok(one(move |cx, it| async move {
                let sh = share(&cx, &s)?;
                let got = match (&snapshot, include) {
                    (Some(snap), _) => sh.delete_snapshot(&SnapshotId::new(snap.as_str())).await,
                    (None, true) => sh.delete_with_snapshots().await,
                    (None, false) => sh.delete(l.as_ref()).await,
                };
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("GET" | "HEAD", "share", "") => {
            req.only(&[])?;
            let snapshot = req.query("sharesnapshot").map(str::to_string);
            Ok(one(move |cx, it| async move {
                let sh = share(&cx, &s)?;
                let got = match &snapshot {
                    Some(snap) => {
                        sh.snapshot_properties(&SnapshotId::new(snap.as_str()))
                            .await
                    }
                    None => sh.get_properties().await,
                };
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    check_metadata(&p.metadata, resp)?;
                    eq_header(
                        "quota",
                        p.quota_gib.map(|q| q.to_string()),
                        resp,
                        "x-ms-share-quota",
                    )?;
                }
                Ok(())
            }))
        }
        ("GET", "share", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = share(&cx, &s)?.get_metadata().await;
                if let Some((meta, etag)) = outcome(got, &it.response)? {
                    crate::blob::check_etag(Some(&etag), &it.response)?;
                    check_metadata(&meta, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "share", "metadata") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = share(&cx, &s)?.set_metadata(&meta).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "share", "properties") => {
            req.only(&["x-ms-share-quota", "x-ms-access-tier", "x-ms-root-squash"])?;
            let mut options = ShareOptions::default();
            if let Some(q) = req.h("x-ms-share-quota") {
                options = options.quota_gib(q.parse().map_err(|_| "quota")?);
            }
            if let Some(t) = req.h("x-ms-access-tier") {
                options = options.access_tier(t);
            }
            if let Some(r) = req.h("x-ms-root-squash") {
                options = options.root_squash(r);
            }
            let l = lease(&req)?;
            Ok(one(move |cx, it| async move {
                let got = share(&cx, &s)?.set_properties(&options, l.as_ref()).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "share", "snapshot") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = share(&cx, &s)?.create_snapshot(&meta).await;
                let resp = &it.response;
                if let Some(snap) = outcome(got, resp)? {
                    check_version(Some(&snap.etag), snap.last_modified, resp)?;
                    eq_header(
                        "snapshot",
                        Some(snap.snapshot.to_string()),
                        resp,
                        "x-ms-snapshot",
                    )?;
                }
                Ok(())
            }))
        }
        ("GET", "directory" | "share", "list") => {
            req.only(&[])?;
            let mut options = ListOptions::default();
            for (k, v) in &req.q {
                match k.as_str() {
                    "restype" | "comp" => {}
                    "prefix" => options = options.prefix(v.clone()),
                    "marker" => options = options.marker(v.clone()),
                    "maxresults" => {
                        options = options.max_results(v.parse().map_err(|_| "maxresults")?)
                    }
                    other => return Err(format!("List Directories and Files parameter {other}")),
                }
            }
            Ok(one(move |cx, it| async move {
                let got = dir(&cx, &s, &path)?.list(&options).await;
                if let Some(page) = outcome(got, &it.response)? {
                    check_list(&page.items, page.next_marker, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "directory", "") => {
            req.only(SMB_HEADERS)?;
            let meta = req.metadata();
            let smb = smb_of(&req)?;
            Ok(one(move |cx, it| async move {
                let options = azstore::file::CreateDirectoryOptions::default()
                    .metadata(meta)
                    .smb(smb);
                let got = dir(&cx, &s, &path)?.create_with(&options).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("DELETE", "directory", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                outcome(dir(&cx, &s, &path)?.delete().await, &it.response)?;
                Ok(())
            }))
        }
        ("GET" | "HEAD", "directory", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = dir(&cx, &s, &path)?.get_properties().await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    check_metadata(&p.metadata, resp)?;
                    check_smb(&p.smb, resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "directory", "properties") => {
            req.only(SMB_HEADERS)?;
            let smb = smb_of(&req)?;
            Ok(one(move |cx, it| async move {
                let got = dir(&cx, &s, &path)?.set_properties(&smb).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "directory", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = dir(&cx, &s, &path)?.get_metadata().await;
                if let Some((meta, etag)) = outcome(got, &it.response)? {
                    crate::blob::check_etag(Some(&etag), &it.response)?;
                    check_metadata(&meta, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "directory", "metadata") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = dir(&cx, &s, &path)?.set_metadata(&meta).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "", "") => {
            let mut known = vec!["x-ms-type", "x-ms-content-length"];
            known.extend_from_slice(SMB_HEADERS);
            known.extend_from_slice(&HTTP_HEADERS.map(|(h, _)| h));
            req.only(&known)?;
            let size: u64 = req
                .h("x-ms-content-length")
                .and_then(|v| v.parse().ok())
                .ok_or("Create File without x-ms-content-length")?;
            let mut options = CreateFileOptions::default()
                .size(size)
                .metadata(req.metadata())
                .headers(http_headers_of(&req))
                .smb(smb_of(&req)?);
            options.lease = lease(&req)?;
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?.create_with(&options).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "", "range") => {
            req.only(&["x-ms-range", "x-ms-write", "content-md5"])?;
            let checksum = if req.h("content-md5").is_some() {
                Checksum::Md5
            } else {
                Checksum::None
            };
            let range = req.range()?.ok_or("Put Range without a range")?;
            let write = req.h("x-ms-write").unwrap_or_default().to_string();
            let body = Bytes::from(req.body());
            let l = lease(&req)?;
            Ok(one(move |cx, it| async move {
                let f = file(&cx, &s, &path)?;
                let got = match write.as_str() {
                    "update" => {
                        f.put_range_with(range.start, body, checksum, l.as_ref())
                            .await
                    }
                    "clear" => f.clear_range(range, l.as_ref()).await,
                    other => return Err(format!("x-ms-write {other}")),
                };
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "", "") => {
            req.only(&["x-ms-range"])?;
            let range = req.range()?;
            Ok(one(move |cx, it| async move {
                let f = file(&cx, &s, &path)?;
                let got = match range {
                    Some(r) => f.download_range(r).await,
                    None => f.download(&azstore::file::TransferOptions::default()).await,
                };
                let resp = &it.response;
                if let Some(d) = outcome(got, resp)? {
                    if d.body[..] != resp.body[..] {
                        return Err(format!(
                            "content: {} bytes != recorded {}",
                            d.body.len(),
                            resp.body.len()
                        ));
                    }
                    check_version(Some(&d.properties.etag), d.properties.last_modified, resp)?;
                    check_metadata(&d.properties.metadata, resp)?;
                    check_stored_md5(&d.properties.http_headers, resp)?;
                }
                Ok(())
            }))
        }
        ("HEAD", "", "") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?.get_properties().await;
                let resp = &it.response;
                if let Some(p) = outcome(got, resp)? {
                    check_version(Some(&p.etag), p.last_modified, resp)?;
                    check_metadata(&p.metadata, resp)?;
                    eq_header(
                        "content length",
                        Some(p.content_length.to_string()),
                        resp,
                        "content-length",
                    )?;
                    check_smb(&p.smb, resp)?;
                    check_stored_md5(&p.http_headers, resp)?;
                    for (got, header) in [
                        (&p.http_headers.content_disposition, "content-disposition"),
                        (&p.http_headers.content_language, "content-language"),
                    ] {
                        eq_header(header, got.clone(), resp, header)?;
                    }
                }
                Ok(())
            }))
        }
        ("DELETE", "", "") => {
            req.only(&[])?;
            let l = lease(&req)?;
            Ok(one(move |cx, it| async move {
                outcome(file(&cx, &s, &path)?.delete(l.as_ref()).await, &it.response)?;
                Ok(())
            }))
        }
        ("GET", "", "metadata") => {
            req.only(&[])?;
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?.get_metadata().await;
                if let Some((meta, etag)) = outcome(got, &it.response)? {
                    crate::blob::check_etag(Some(&etag), &it.response)?;
                    check_metadata(&meta, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "", "metadata") => {
            req.only(&[])?;
            let meta = req.metadata();
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?.set_metadata(&meta, None).await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("PUT", "", "properties") => {
            let mut known = vec!["x-ms-content-length"];
            known.extend_from_slice(SMB_HEADERS);
            known.extend_from_slice(&HTTP_HEADERS.map(|(h, _)| h));
            req.only(&known)?;
            let mut change = SetFileProperties::default().smb(smb_of(&req)?);
            if let Some(n) = req.h("x-ms-content-length") {
                change = change.size(n.parse().map_err(|_| "x-ms-content-length")?);
            }
            if HTTP_HEADERS.iter().any(|(h, _)| req.h(h).is_some()) {
                change = change.headers(http_headers_of(&req));
            }
            let l = lease(&req)?;
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?
                    .set_properties_with(&change, l.as_ref())
                    .await;
                if let Some(w) = outcome(got, &it.response)? {
                    check_version(Some(&w.etag), w.last_modified, &it.response)?;
                }
                Ok(())
            }))
        }
        ("GET", "", "rangelist") => {
            req.only(&["x-ms-range"])?;
            let range = req.range()?;
            Ok(one(move |cx, it| async move {
                let got = file(&cx, &s, &path)?.list_ranges(range).await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    let got: Vec<String> = r
                        .ranges
                        .iter()
                        .map(|r| format!("{}-{}", r.start, r.end - 1))
                        .collect();
                    let starts = xml_texts(&resp.body, &["Ranges", "Range", "Start"]);
                    let ends = xml_texts(&resp.body, &["Ranges", "Range", "End"]);
                    let want: Vec<String> = starts
                        .iter()
                        .zip(&ends)
                        .map(|(a, b)| format!("{a}-{b}"))
                        .collect();
                    if got != want {
                        return Err(format!("ranges {got:?} != recorded {want:?}"));
                    }
                }
                Ok(())
            }))
        }
        (m, r, c) => Err(format!(
            "file operation {m} restype={r} comp={c} (headers {:?})",
            req.unexpected_headers(&[])
        )),
    }
}
