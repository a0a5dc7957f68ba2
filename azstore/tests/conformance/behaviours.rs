//! The real-service behaviours that differ from Azurite or from a naive reading of the docs,
//! each checked against the recording that proves it. Every check serves the named
//! recording's responses and asserts what azstore makes of them; `run_all` reports each by
//! name.

use std::sync::Arc;
use std::time::Duration;

use azstore::blob::{BlobListItem, DownloadOptions, ListOptions};
use azstore::lease::BreakPeriod;
use azstore::table::{Entity, Query};
use azstore::{Conditions, ETag, ErrorCode, ErrorKind, LeaseId};
use testkit::replay::{CapturedRequest, Recording, ReplayServer, corpus_dir};

use crate::cx::Cx;

type Check = Result<(), String>;

macro_rules! ensure {
    ($cond:expr, $($msg:tt)+) => {
        if !$cond {
            return Err(format!($($msg)+));
        }
    };
}

/// Serves the responses `from..to` of the recording `name` to a fresh set of clients.
async fn serve(
    name: &str,
    from: usize,
    to: usize,
) -> Result<(Recording, ReplayServer, Arc<Cx>), String> {
    let rec = Recording::load(&corpus_dir(), name).map_err(|e| e.to_string())?;
    let responses = rec.interactions[from..to]
        .iter()
        .map(|i| i.response.clone())
        .collect();
    let server = ReplayServer::start(responses)
        .await
        .map_err(|e| e.to_string())?;
    let cx = Arc::new(Cx::new(&server.url()));
    Ok((rec, server, cx))
}

fn kind_code(e: &azstore::Error) -> (ErrorKind, Option<u16>, Option<String>) {
    (
        e.kind(),
        e.status(),
        e.error_code().map(|c| c.as_str().to_string()),
    )
}

/// XML bodies begin with a UTF-8 byte-order mark, and the listing still parses.
async fn xml_bom() -> Check {
    let name = "blob/test_container.test_list_containers_with_prefix.yaml";
    let (rec, _server, cx) = serve(name, 1, 2).await?;
    ensure!(
        rec.interactions[1]
            .response
            .body
            .starts_with(b"\xEF\xBB\xBF"),
        "recorded body has no BOM"
    );
    let page = cx
        .blob
        .list_containers_page(&ListOptions::default().prefix("containerd3041389"), None)
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        page.items.len() == 1 && page.items[0].name == "containerd3041389",
        "{:?}",
        page.items
    );
    Ok(())
}

/// A read with a failed `If-Modified-Since` answers 304 with `x-ms-error-code:
/// ConditionNotMet`: typed as `NotModified`, not as a success or a 412.
async fn not_modified_304() -> Check {
    let name =
        "blob/test_blob_access_conditions.test_get_blob_properties_with_if_modified_fail.yaml";
    let (_rec, _server, cx) = serve(name, 2, 3).await?;
    let since = crate::compare::azstore_time("Thu, 09 May 2019 00:56:37 GMT").ok_or("date")?;
    let blob = cx
        .blob
        .container("utcontainer713f1e44")
        .and_then(|c| c.blob("blob1"))
        .map_err(|e| e.to_string())?;
    let err = blob
        .get_properties_if(&Conditions::if_modified_since(since))
        .await
        .err()
        .ok_or("a 304 was read as success")?;
    ensure!(
        kind_code(&err)
            == (
                ErrorKind::NotModified,
                Some(304),
                Some("ConditionNotMet".into())
            ),
        "{err:?}"
    );
    ensure!(
        err.is_not_modified() && !err.is_precondition_failed(),
        "{err:?}"
    );
    Ok(())
}

/// Table errors carry their code only in the `odata.error` body (no `x-ms-error-code`).
async fn table_error_code_in_body() -> Check {
    let name = "table/test_table.test_create_table_with_already_existing_table_fail_on_exist.yaml";
    let (rec, _server, cx) = serve(name, 1, 2).await?;
    ensure!(
        rec.interactions[1]
            .response
            .header("x-ms-error-code")
            .is_none(),
        "recording has the header"
    );
    let err = cx
        .table
        .table(&table_name(&rec, 1)?)
        .map_err(|e| e.to_string())?
        .create()
        .await
        .err()
        .ok_or("409 read as success")?;
    ensure!(
        err.kind() == ErrorKind::AlreadyExists
            && err.error_code() == Some(&ErrorCode::TableAlreadyExists),
        "{err:?}"
    );
    Ok(())
}

fn table_name(rec: &Recording, i: usize) -> Result<String, String> {
    let body = rec.interactions[i].request.body.clone().unwrap_or_default();
    let v: serde_json::Value = serde_json::from_slice(&body).map_err(|e| e.to_string())?;
    v.get("TableName")
        .and_then(|n| n.as_str())
        .map(str::to_string)
        .ok_or_else(|| "no TableName".into())
}

/// A batch answers 202 even when an operation fails; the failed operation's 412 is inside
/// the multipart body. azstore reports that operation's error and index.
async fn batch_202_with_inner_412() -> Check {
    let name = "table/test_table_batch.test_batch_update_if_doesnt_match.yaml";
    let (rec, _server, cx) = serve(name, 1, 2).await?;
    ensure!(
        rec.interactions[1].response.status == 202,
        "recorded status"
    );
    let plan = crate::table::plan(&rec.interactions, 1)?;
    // The planner checks the typed error against the inner answer; run it directly.
    (plan.run)(cx.clone(), rec.interactions[1..2].to_vec()).await?;
    // And state the behaviour outright.
    let results = rec.interactions[1].response.body.clone();
    ensure!(
        String::from_utf8_lossy(&results).contains("HTTP/1.1 412 Precondition Failed"),
        "no inner 412"
    );
    Ok(())
}

/// `x-ms-continuation-NextPartitionKey/NextRowKey` headers continue a query; the last page
/// has none.
async fn table_continuation_headers() -> Check {
    let name = "table/test_table_entity.test_query_entities_with_top_and_next.yaml";
    let (rec, server, cx) = serve(name, 2, 5).await?;
    let table = cx
        .table
        .table("querytable801016e8")
        .map_err(|e| e.to_string())?;
    let q = Query::all().top(2);
    let p1 = table
        .query_page::<Entity>(&q, None)
        .await
        .map_err(|e| e.to_string())?;
    let c1 = p1.next_marker.ok_or("first page lost its continuation")?;
    let p2 = table
        .query_page::<Entity>(&q, Some(&c1))
        .await
        .map_err(|e| e.to_string())?;
    let c2 = p2.next_marker.ok_or("second page lost its continuation")?;
    let p3 = table
        .query_page::<Entity>(&q, Some(&c2))
        .await
        .map_err(|e| e.to_string())?;
    ensure!(p3.next_marker.is_none(), "the last page has a continuation");
    let sent: Vec<CapturedRequest> = server.take_captured();
    for (k, it) in rec.interactions[2..5].iter().enumerate() {
        crate::compare::compare_request(&it.request, &sent[k])?;
    }
    Ok(())
}

/// The last page of an XML listing has an empty `<NextMarker />`, meaning done; a queue
/// marker (`/storagename/listqueue3...`) goes back percent-encoded.
async fn next_marker_empty_and_queue_marker_encoded() -> Check {
    let name = "queue/test_queue.test_list_queues_with_options.yaml";
    let (rec, server, cx) = serve(name, 4, 6).await?;
    let p1 = cx
        .queue
        .list_queues_page(Some("listqueue"), None, Some(3))
        .await
        .map_err(|e| e.to_string())?;
    let marker = p1.next_marker.ok_or("no marker on the first page")?;
    ensure!(marker == "/storagename/listqueue3560410cb", "{marker}");
    let p2 = cx
        .queue
        .list_queues_page(Some("listqueue"), Some(&marker), None)
        .await
        .map_err(|e| e.to_string())?;
    ensure!(
        String::from_utf8_lossy(&rec.interactions[5].response.body).contains("<NextMarker />"),
        "recording"
    );
    ensure!(
        p2.next_marker.is_none(),
        "empty <NextMarker /> read as {:?}",
        p2.next_marker
    );
    let sent = server.take_captured();
    ensure!(
        sent[1]
            .query
            .contains("marker=%2Fstoragename%2Flistqueue3560410cb"),
        "marker sent as {}",
        sent[1].query
    );
    Ok(())
}

/// During a lease's break period the old lease id still works; after it, a write with it
/// fails with 412 `LeaseLost` (typed as a lost lease).
async fn lease_break_period() -> Check {
    let name = "blob/test_common_blob.test_lease_blob_break_period.yaml";
    let (_rec, _server, cx) = serve(name, 2, 5).await?;
    let blob = cx
        .blob
        .container("utcontainera5c01242")
        .and_then(|c| c.blob("bloba5c01242"))
        .map_err(|e| e.to_string())?;
    let id = LeaseId::new("064ad037-8b35-42e9-83e0-dd616cbd63c8").map_err(|e| e.to_string())?;
    let broken = blob
        .break_lease(
            Some(BreakPeriod::seconds(5).map_err(|e| e.to_string())?),
            &Conditions::none(),
        )
        .await
        .map_err(|e| e.to_string())?;
    ensure!(broken.remaining == Duration::from_secs(5), "{broken:?}");
    blob.upload("hello 2", &Conditions::lease(&id))
        .await
        .map_err(|e| format!("write in the break period: {e}"))?;
    let err = blob
        .upload("hello 3", &Conditions::lease(&id))
        .await
        .err()
        .ok_or("write after the break succeeded")?;
    ensure!(
        err.kind() == ErrorKind::LeaseLost && err.error_code() == Some(&ErrorCode::LeaseLost),
        "{err:?}"
    );
    ensure!(
        err.lease_lost(),
        "LeaseLost not reported as a lost lease: {err:?}"
    );
    Ok(())
}

/// A ranged read of an empty blob answers 416 (`bytes */0`); a chunked download falls back
/// to a plain read and returns the empty content.
async fn range_416_on_empty_blob() -> Check {
    let name = "blob/test_append_blob.test_append_blob_from_0_bytes.yaml";
    let (_rec, _server, cx) = serve(name, 1, 3).await?;
    let blob = cx
        .blob
        .container("utcontainerb59f1281")
        .and_then(|c| c.blob("blobb59f1281"))
        .map_err(|e| e.to_string())?;
    let d = blob
        .download_chunked(&DownloadOptions::default())
        .await
        .map_err(|e| format!("empty blob: {e}"))?;
    ensure!(
        d.body.is_empty() && d.properties.content_length == 0,
        "{d:?}"
    );
    Ok(())
}

/// Append Block with a malformed (unquoted) If-Match answered 400 `OutOfRangeInput` where
/// a precondition failure would be 412: typed as a service error, never as "someone else
/// changed it".
async fn append_block_400() -> Check {
    let name = "blob/test_blob_access_conditions.test_append_block_with_if_match_fail.yaml";
    let (_rec, _server, cx) = serve(name, 2, 3).await?;
    let blob = cx
        .blob
        .container("utcontainer513e1a08")
        .and_then(|c| c.blob("blob1"))
        .map_err(|e| e.to_string())?;
    let options = azstore::blob::AppendOptions::default()
        .conditions(Conditions::if_match(&ETag::new("0x111111111111111")));
    let err = blob
        .append_block("block 0", &options)
        .await
        .err()
        .ok_or("400 read as success")?;
    ensure!(
        kind_code(&err)
            == (
                ErrorKind::Service,
                Some(400),
                Some("OutOfRangeInput".into())
            ),
        "{err:?}"
    );
    ensure!(
        !err.is_precondition_failed(),
        "400 typed as a precondition failure"
    );
    Ok(())
}

/// A listed ETag equals the header ETag of the same version (Azure lists it unquoted).
async fn listed_etag_equals_header_etag() -> Check {
    let name = "blob/test_container.test_list_blobs_with_include_snapshots.yaml";
    let (rec, _server, cx) = serve(name, 4, 5).await?;
    let header = ETag::new(
        rec.interactions[2]
            .response
            .header("etag")
            .ok_or("no ETag")?,
    );
    ensure!(
        String::from_utf8_lossy(&rec.interactions[4].response.body).contains("<Etag>0x"),
        "recording lists a quoted ETag"
    );
    let page = cx
        .blob
        .container("container4ef015fd")
        .map_err(|e| e.to_string())?
        .list_blobs_page(&ListOptions::default().with_snapshots(), None)
        .await
        .map_err(|e| e.to_string())?;
    let listed = page
        .items
        .iter()
        .find_map(|i| match i {
            BlobListItem::Blob(b) if b.name == "blob2" => b.etag.clone(),
            _ => None,
        })
        .ok_or("blob2 not listed")?;
    ensure!(listed == header, "listed {listed:?} != header {header:?}");
    Ok(())
}

/// Runs every behaviour check; returns the failures.
pub async fn run_all() -> Vec<String> {
    type Pending = std::pin::Pin<Box<dyn std::future::Future<Output = Check>>>;
    let checks: Vec<(&str, Pending)> = vec![
        ("XML bodies start with a BOM", Box::pin(xml_bom())),
        ("304 ConditionNotMet on reads", Box::pin(not_modified_304())),
        (
            "table error code only in the odata.error body",
            Box::pin(table_error_code_in_body()),
        ),
        (
            "table batch 202 with an inner 412",
            Box::pin(batch_202_with_inner_412()),
        ),
        (
            "x-ms-continuation-Next* headers",
            Box::pin(table_continuation_headers()),
        ),
        (
            "empty <NextMarker />; queue marker percent-encoded",
            Box::pin(next_marker_empty_and_queue_marker_encoded()),
        ),
        (
            "old lease id works during the break period",
            Box::pin(lease_break_period()),
        ),
        (
            "416 on a ranged read of an empty blob",
            Box::pin(range_416_on_empty_blob()),
        ),
        (
            "Append Block 400 where Put Blob answers 412",
            Box::pin(append_block_400()),
        ),
        (
            "listed ETag equals the header ETag",
            Box::pin(listed_etag_equals_header_etag()),
        ),
    ];
    let mut failures = Vec::new();
    for (what, check) in checks {
        match tokio::time::timeout(Duration::from_secs(20), check).await {
            Ok(Ok(())) => println!("behaviour ok: {what}"),
            Ok(Err(e)) => failures.push(format!("behaviour FAILED: {what}: {e}")),
            Err(_) => failures.push(format!("behaviour FAILED: {what}: timed out")),
        }
    }
    failures
}
