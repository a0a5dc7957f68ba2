//! Blob operations (everything addressed at a blob): recorded requests -> `BlobClient`.

use azstore::blob::{
    AppendOptions, BlockId, BlockListType, BlockOptions, BlockRef, Checksum, CommitOptions,
    CopyOptions, CopySource, CreateOptions, DeleteSnapshots, PageRangeOptions, PageWriteOptions,
    PutOptions, SnapshotId,
};
use azstore::{Conditions, blob::BlobClient};

use super::{blob_of, check_etag, check_metadata, check_properties, check_version, lease_duration};
use crate::compare::{eq_header, outcome, xml_texts};
use crate::cx::{Cx, Plan, one};
use crate::req::Req;
use testkit::replay::RecordedResponse;

pub(super) fn plan_blob(req: &Req) -> Result<Plan, String> {
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
    let snap = req.query("snapshot").map(SnapshotId::new);
    if snap.is_some()
        && !matches!(
            (req.method, req.comp()),
            ("GET", "") | ("HEAD", "") | ("DELETE", "") | ("GET", "metadata")
        )
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
            let mut options =
                CopyOptions::new(conditions).source_conditions(req.source_conditions()?);
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
                    req.only(&["x-ms-blob-type", "content-md5"])?;
                    let mut options = PutOptions::new(conditions).checksum(md5(req));
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
                    let mut options = CreateOptions::new(conditions);
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
                    let mut options = CreateOptions::new(conditions);
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
            Ok(one(move |cx, it| async move {
                let blob = at(blob_of(&cx, &c, &b)?, &snap);
                let got = match range {
                    Some(r) => blob.download_range_if(r, &conditions).await,
                    None => blob.download_if(&conditions).await,
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
                let got = at(blob_of(&cx, &c, &b)?, &snap)
                    .get_properties_if(&conditions)
                    .await;
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
                let got = at(blob_of(&cx, &c, &b)?, &snap)
                    .get_metadata_if(&conditions)
                    .await;
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
            req.only(
                &[
                    crate::compare::BLOB_HTTP_HEADERS,
                    &["x-ms-blob-content-length"],
                ]
                .concat(),
            )?;
            if let Some(size) = num(req.h("x-ms-blob-content-length"))? {
                req.only(&["x-ms-blob-content-length"])?;
                return Ok(one(move |cx, it| async move {
                    let got = blob_of(&cx, &c, &b)?.resize(size, &conditions).await;
                    if let Some(w) = outcome(got, &it.response)? {
                        check_version(Some(&w.etag), w.last_modified, &it.response)?;
                    }
                    Ok(())
                }));
            }
            let mut headers = azstore::http_headers::HttpHeaders::default();
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
            headers.content_md5 = req.h("x-ms-blob-content-md5").map(str::to_string);
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
            req.only(&["content-md5"])?;
            let id = BlockId::from_base64(req.query("blockid").ok_or("no blockid")?.to_string())
                .map_err(|e| e.to_string())?;
            let options = BlockOptions::default()
                .conditions(conditions)
                .checksum(md5(req));
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .put_block_with(&id, body, &options)
                    .await;
                outcome(got, &it.response)?;
                Ok(())
            }))
        }
        ("PUT", "blocklist") => {
            req.only(&[])?;
            let blocks = crate::acl::block_refs(&body)?;
            let mut options = CommitOptions::new(conditions);
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
                "x-ms-source-content-md5",
            ])?;
            let mut source = azstore::blob::CopySource::url(req.h("x-ms-copy-source").unwrap())
                .map_err(|e| format!("recorded copy source: {e}"))?
                .conditions(req.source_conditions()?);
            if let Some(r) = req.h("x-ms-source-range") {
                source = source.range(crate::req::parse_range(r)?);
            }
            if let Some(md5) = req.h("x-ms-source-content-md5") {
                source = source.content_md5(md5);
            }
            let mut options = azstore::blob::AppendOptions::default();
            options.conditions = conditions;
            options.append_position = num(req.h("x-ms-blob-condition-appendpos"))?;
            options.max_size = num(req.h("x-ms-blob-condition-maxsize"))?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?
                    .append_block_from_url(&source, &options)
                    .await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    check_appended(&r, resp)?;
                }
                Ok(())
            }))
        }
        ("PUT", "appendblock") => {
            req.only(&[
                "x-ms-blob-condition-appendpos",
                "x-ms-blob-condition-maxsize",
                "content-md5",
            ])?;
            let mut options = AppendOptions::default()
                .conditions(conditions)
                .checksum(md5(req));
            options.append_position = num(req.h("x-ms-blob-condition-appendpos"))?;
            options.max_size = num(req.h("x-ms-blob-condition-maxsize"))?;
            Ok(one(move |cx, it| async move {
                let got = blob_of(&cx, &c, &b)?.append_block(body, &options).await;
                let resp = &it.response;
                if let Some(r) = outcome(got, resp)? {
                    check_appended(&r, resp)?;
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
            if let Some(source) = req.h("x-ms-copy-source") {
                return put_page_from_url(req, c, b, source, conditions);
            }
            req.only(&["x-ms-page-write", "x-ms-range", "content-md5"])?;
            let range = req.range()?.ok_or("Put Page without a range")?;
            let write = req.h("x-ms-page-write").unwrap_or_default().to_string();
            let mut options = PageWriteOptions::default().checksum(md5(req));
            options.conditions = conditions.clone();
            Ok(one(move |cx, it| async move {
                let blob = blob_of(&cx, &c, &b)?;
                let got = match write.as_str() {
                    "update" => blob.put_pages_with(range.start, body, &options).await,
                    "clear" => {
                        blob.clear_pages_with(range.start, range.end - range.start, &options)
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
            let mut options = PageRangeOptions::default().conditions(conditions);
            if let Some(prev) = req.query("prevsnapshot") {
                options = options.since_snapshot(&SnapshotId::new(prev));
            }
            Ok(one(move |cx, it| async move {
                let got = at(blob_of(&cx, &c, &b)?, &snap)
                    .get_page_ranges_with(&options)
                    .await;
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

/// An append's new version and the offset the block landed at.
fn check_appended(r: &azstore::blob::AppendResult, resp: &RecordedResponse) -> Result<(), String> {
    check_version(Some(&r.etag), r.last_modified, resp)?;
    eq_header(
        "append offset",
        Some(r.append_offset.to_string()),
        resp,
        "x-ms-blob-append-offset",
    )
}

fn num(v: Option<&str>) -> Result<Option<u64>, String> {
    v.map(|s| s.parse().map_err(|_| format!("number {s:?}")))
        .transpose()
}

#[allow(dead_code)]
fn unused(_: BlockRef) {}

/// The client for the blob, or for its snapshot when the request names one.
fn at(blob: BlobClient, snapshot: &Option<SnapshotId>) -> BlobClient {
    match snapshot {
        Some(s) => blob.at_snapshot(s),
        None => blob,
    }
}

/// A transactional MD5 when the recorded request carried one (azstore computes it from the
/// body; the compared `content-md5` header checks it equals the recorded value).
fn md5(req: &Req) -> Checksum {
    if req.h("content-md5").is_some() {
        Checksum::Md5
    } else {
        Checksum::None
    }
}

/// Put Page From URL: the source range, the destination range and the source conditions.
fn put_page_from_url(
    req: &Req,
    c: String,
    b: String,
    source: &str,
    conditions: Conditions,
) -> Result<Plan, String> {
    req.only(&[
        "x-ms-copy-source",
        "x-ms-source-range",
        "x-ms-range",
        "x-ms-page-write",
        "x-ms-source-if-match",
        "x-ms-source-if-none-match",
        "x-ms-source-if-modified-since",
        "x-ms-source-if-unmodified-since",
    ])?;
    let range = req.range()?.ok_or("Put Page From URL without a range")?;
    let source_range = crate::req::parse_range(
        req.h("x-ms-source-range")
            .ok_or("Put Page From URL without a source range")?,
    )?;
    let source = CopySource::url(source)
        .map_err(|e| e.to_string())?
        .range(source_range)
        .conditions(req.source_conditions()?);
    let options = PageWriteOptions::default().conditions(conditions);
    Ok(one(move |cx, it| async move {
        let got = blob_of(&cx, &c, &b)?
            .put_pages_from_url(range.start, &source, &options)
            .await;
        if let Some(w) = outcome(got, &it.response)? {
            check_version(Some(&w.etag), w.last_modified, &it.response)?;
        }
        Ok(())
    }))
}
