//! Conformance with API version 2025-11-05 where azstore and the service used to disagree:
//! the stored MD5 on ranged reads, directory handle calls without `restype`, stored access
//! policy times with sub-second precision, and service properties carried through whole.
//! Against Azurite and the local File service where they show the behaviour, against
//! `testkit::scripted` (answers built from the REST reference) where they do not.

use azstore::blob::{Checksum, DownloadOptions, PutOptions};
use azstore::file::{ShareClient, ShareServiceClient};
use azstore::http_headers::HttpHeaders;
use testkit::blob as blob_support;
use testkit::file_server::FileServer;

async fn share(server: &FileServer, prefix: &str) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&testkit::unique(prefix))
        .unwrap();
    share.create().await.unwrap();
    share
}

#[tokio::test]
async fn a_ranged_blob_read_keeps_the_stored_md5_apart_from_the_ranges() {
    let c = blob_support::container("rangemd5").await;
    let b = c.blob("data.bin").unwrap();
    let data = blob_support::pattern(10_000, 3);
    let stored = azstore::blob::md5_base64(&data);
    let headers = HttpHeaders::default()
        .content_type("application/x-test")
        .content_md5(stored.clone());
    b.put(
        data.clone(),
        &PutOptions::new(azstore::Conditions::none()).http_headers(headers.clone()),
    )
    .await
    .unwrap();

    let whole = b.download().await.unwrap();
    assert_eq!(
        whole.properties.http_headers.content_md5,
        Some(stored.clone())
    );
    assert_eq!(whole.properties.range_content_md5, None);

    // A 206 carries the blob's stored MD5 in x-ms-blob-content-md5, not Content-MD5.
    let part = b.download_range(100..600).await.unwrap();
    assert_eq!(
        part.properties.http_headers.content_md5,
        Some(stored.clone())
    );
    assert_eq!(part.properties.range_content_md5, None, "not asked for");

    // Asked for, the range's own MD5 stays apart from the stored one.
    let verified = b
        .download_range_verified(100..600, Checksum::Md5)
        .await
        .unwrap();
    assert_eq!(
        verified.properties.http_headers.content_md5,
        Some(stored.clone())
    );
    assert_eq!(
        verified.properties.range_content_md5,
        Some(azstore::blob::md5_base64(&data[100..600]))
    );

    // A parallel download reads ranges only.
    let mut buf = vec![0u8; data.len()];
    let props = b
        .download_into(
            &mut buf,
            &DownloadOptions::default()
                .chunk_size(1024)
                .max_concurrency(3),
        )
        .await
        .unwrap();
    assert_eq!(buf, data);
    assert_eq!(props.http_headers.content_md5, Some(stored.clone()));

    // Writing those headers back (to change one) keeps the stored MD5.
    let mut changed = part.properties.http_headers.clone();
    changed.cache_control = Some("no-cache".into());
    b.set_http_headers(&changed, &azstore::Conditions::none())
        .await
        .unwrap();
    let after = b.get_properties().await.unwrap();
    assert_eq!(after.http_headers.content_md5, Some(stored));
    assert_eq!(
        after.http_headers.cache_control.as_deref(),
        Some("no-cache")
    );
}

#[tokio::test]
async fn a_ranged_file_read_keeps_the_stored_md5() {
    let server = FileServer::start().await;
    let share = share(&server, "rangemd5").await;
    let file = share.file("a.bin").unwrap();
    let data = blob_support::pattern(4096, 5);
    let stored = azstore::blob::md5_base64(&data);
    file.create(data.len() as u64, None).await.unwrap();
    file.put_range(0, data.clone(), None).await.unwrap();
    file.set_http_headers(&HttpHeaders::default().content_md5(stored.clone()), None)
        .await
        .unwrap();

    let part = file.download_range(10..100).await.unwrap();
    assert_eq!(&part.body[..], &data[10..100]);
    assert_eq!(
        part.properties.http_headers.content_md5,
        Some(stored.clone())
    );
    assert_eq!(part.properties.range_content_md5, None, "not asked for");

    // A parallel download reads ranges only.
    let whole = file
        .download(
            &azstore::file::TransferOptions::default()
                .range_size(1024)
                .max_concurrency(3),
        )
        .await
        .unwrap();
    assert_eq!(&whole.body[..], &data[..]);
    assert_eq!(
        whole.properties.http_headers.content_md5,
        Some(stored.clone())
    );

    let mut changed = part.properties.http_headers.clone();
    changed.content_type = Some("text/plain".into());
    file.set_http_headers(&changed, None).await.unwrap();
    let after = file.get_properties().await.unwrap();
    assert_eq!(after.http_headers.content_md5, Some(stored));
    assert_eq!(
        after.http_headers.content_type.as_deref(),
        Some("text/plain")
    );
}

/// List Handles and Force Close Handles on a directory are `<share>/<dir>?comp=...` with no
/// `restype` (REST reference, 2025-11-05); `x-ms-recursive` is sent only when true (false is
/// the service's default). The local File service accepts either form, so the request line
/// is checked on a scripted server.
#[tokio::test]
async fn directory_handle_calls_send_no_restype() {
    use azstore::file::HandleSelector;
    use testkit::scripted::{Reply, Scripted};
    let list = Reply::with(
        200,
        &[("content-type", "application/xml")],
        b"<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><HandleList /><NextMarker /></EnumerationResults>",
    );
    let closed = Reply::with(
        200,
        &[
            ("x-ms-number-of-handles-closed", "2"),
            ("x-ms-number-of-handles-failed", "0"),
        ],
        b"",
    );
    let server = Scripted::start(vec![list.clone(), list, closed.clone(), closed]).await;
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share("handles")
        .unwrap();
    let dir = share.directory("a/b").unwrap();
    dir.list_handles(false, None).await.unwrap();
    dir.list_handles(true, None).await.unwrap();
    let n = dir
        .force_close_handles(&HandleSelector::All, false)
        .await
        .unwrap();
    assert_eq!(n.closed, 2);
    share
        .root()
        .force_close_handles(&HandleSelector::All, true)
        .await
        .unwrap();
    let got = server.requests();
    let lines: Vec<(String, String, Option<String>)> = got
        .iter()
        .map(|r| {
            (
                r.method.clone(),
                r.target.clone(),
                r.header("x-ms-recursive").map(str::to_string),
            )
        })
        .collect();
    assert_eq!(
        lines,
        vec![
            (
                "GET".into(),
                "/devstoreaccount1/handles/a/b?comp=listhandles".into(),
                None
            ),
            (
                "GET".into(),
                "/devstoreaccount1/handles/a/b?comp=listhandles".into(),
                Some("true".into())
            ),
            (
                "PUT".into(),
                "/devstoreaccount1/handles/a/b?comp=forceclosehandles".into(),
                None
            ),
            (
                "PUT".into(),
                "/devstoreaccount1/handles?comp=forceclosehandles".into(),
                Some("true".into())
            ),
        ]
    );
}

/// Set ACL keeps the caller's sub-second start and expiry (the service keeps 7 fractional
/// digits and returns them from Get ACL). Azurite keeps milliseconds (it stores JavaScript
/// dates), so the times here have millisecond fractions; the 100 ns digits Azure keeps are
/// pinned in `access_policy`'s unit tests.
#[tokio::test]
async fn stored_access_policy_times_keep_their_fraction() {
    use azstore::access_policy::SignedIdentifier;
    use azstore::blob::ContainerAcl;
    let start = time::macros::datetime!(2026-01-02 03:04:05.250 UTC);
    let expiry = time::macros::datetime!(2026-01-03 03:04:05.999 UTC);
    let policy = SignedIdentifier::new("p1", "r").start(start).expiry(expiry);

    let c = blob_support::container("aclfrac").await;
    c.set_access_policy(
        &ContainerAcl::new(vec![policy.clone()]),
        &azstore::Conditions::none(),
    )
    .await
    .unwrap();
    let got = c
        .get_access_policy_if(&azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(got.acl.identifiers, vec![policy.clone()], "container");

    let q = testkit::queue::fresh_queue("aclfrac").await;
    q.set_access_policy(std::slice::from_ref(&policy))
        .await
        .unwrap();
    assert_eq!(
        q.get_access_policy().await.unwrap(),
        vec![policy.clone()],
        "queue"
    );

    let t = testkit::table::fresh_table("aclfrac").await;
    t.set_access_policy(std::slice::from_ref(&policy))
        .await
        .unwrap();
    assert_eq!(t.get_access_policy().await.unwrap(), vec![policy], "table");
}

/// A read-modify-write of service properties sends back what it read: `AllowPermanentDelete`
/// (2025-11-05 schema) and elements of a later version azstore does not model. Azurite drops
/// elements it does not know, so the answer is scripted from the REST reference.
#[tokio::test]
async fn service_properties_read_modify_write_keeps_what_it_read() {
    use azstore::blob::BlobServiceClient;
    use azstore::service_properties::RetentionPolicy;
    use testkit::scripted::{Reply, Scripted};
    let read = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><StorageServiceProperties><Logging><Version>1.0</Version><Delete>false</Delete><Read>false</Read><Write>false</Write><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></Logging><HourMetrics><Version>1.0</Version><Enabled>true</Enabled><IncludeAPIs>true</IncludeAPIs><RetentionPolicy><Enabled>true</Enabled><Days>7</Days></RetentionPolicy></HourMetrics><MinuteMetrics><Version>1.0</Version><Enabled>false</Enabled><RetentionPolicy><Enabled>false</Enabled></RetentionPolicy></MinuteMetrics><Cors /><DeleteRetentionPolicy><Enabled>true</Enabled><Days>7</Days><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy><StaticWebsite><Enabled>true</Enabled><IndexDocument>index.html</IndexDocument><DefaultIndexDocumentPath>/app/index.html</DefaultIndexDocumentPath></StaticWebsite><FutureSetting><Mode>strict</Mode></FutureSetting></StorageServiceProperties>";
    let server = Scripted::start(vec![
        Reply::with(200, &[("content-type", "application/xml")], read.as_bytes()),
        Reply::status(202),
    ])
    .await;
    let blobs = BlobServiceClient::new(&server.account()).unwrap();
    let mut props = blobs.get_service_properties().await.unwrap();
    assert_eq!(
        props.delete_retention_policy,
        Some(RetentionPolicy::days(7).allow_permanent_delete(true))
    );
    assert_eq!(
        props
            .static_website
            .as_ref()
            .unwrap()
            .default_index_document_path
            .as_deref(),
        Some("/app/index.html")
    );
    // Change one setting, send the rest back.
    props.minute_metrics.as_mut().unwrap().enabled = false;
    props.logging.as_mut().unwrap().read = true;
    blobs.set_service_properties(&props).await.unwrap();
    let put = server.requests().pop().unwrap();
    assert_eq!(put.method, "PUT");
    let body = String::from_utf8(put.body).unwrap();
    for kept in [
        "<Read>true</Read>",
        "<Days>7</Days><AllowPermanentDelete>true</AllowPermanentDelete></DeleteRetentionPolicy>",
        "<DefaultIndexDocumentPath>/app/index.html</DefaultIndexDocumentPath>",
        "<FutureSetting><Mode>strict</Mode></FutureSetting></StorageServiceProperties>",
    ] {
        assert!(body.contains(kept), "{kept} missing from {body}");
    }
}

/// The account of the running emulators with every endpoint moved to its `-secondary` path
/// (Azurite serves an account's secondary location as `/<account>-secondary`).
fn secondary_account() -> azstore::StorageAccount {
    let account = testkit::account().secondary().unwrap();
    assert_eq!(
        account
            .endpoint(azstore::Service::Blob)
            .unwrap()
            .path_prefix(),
        "/devstoreaccount1-secondary"
    );
    account
}

#[tokio::test]
async fn service_stats_of_the_secondary_location() {
    use azstore::service_properties::GeoReplicationStatus;
    let account = secondary_account();
    let before = time::OffsetDateTime::now_utc() - time::Duration::minutes(5);
    let stats = [
        azstore::blob::BlobServiceClient::new(&account)
            .unwrap()
            .get_service_stats()
            .await
            .unwrap(),
        azstore::queue::QueueServiceClient::new(&account)
            .unwrap()
            .get_service_stats()
            .await
            .unwrap(),
        azstore::table::TableServiceClient::new(&account)
            .unwrap()
            .get_service_stats()
            .await
            .unwrap(),
    ];
    for s in stats {
        // Azurite always answers `live` with the request time; Azure's last sync time lags
        // behind the primary by minutes.
        assert_eq!(s.status, GeoReplicationStatus::Live);
        assert!(s.last_sync_time.unwrap() > before, "{s:?}");
    }
    // The primary refuses it (400 InvalidQueryParameterValue on Azure and Azurite).
    let e = testkit::blob::service()
        .get_service_stats()
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400), "{e}");
}

#[tokio::test]
async fn a_read_open_at_the_end_returns_the_tail() {
    use azstore::blob::{AppendOptions, CreateOptions};
    let c = blob_support::container("tail").await;
    let log = c.blob("log").unwrap();
    log.create_append_blob(&CreateOptions::new(azstore::Conditions::none()))
        .await
        .unwrap();
    log.append_block(b"hello ".to_vec(), &AppendOptions::default())
        .await
        .unwrap();
    let none = azstore::Conditions::none();
    let first = log.download_from(0, &none).await.unwrap();
    assert_eq!(&first.body[..], b"hello ");
    log.append_block(b"world".to_vec(), &AppendOptions::default())
        .await
        .unwrap();
    let tail = log.download_from(6, &none).await.unwrap();
    assert_eq!(&tail.body[..], b"world");
    assert_eq!(tail.properties.content_length, 11);
    // Pinned to a version: a changed blob is a 412, not a silently different tail.
    let stale = azstore::Conditions::if_match(&first.properties.etag);
    let e = log.download_from(6, &stale).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    // At the end Azure answers 416 InvalidRange; Azurite answers an empty body.
    let at_end = log.download_from(11, &none).await;
    assert!(at_end.is_err() || at_end.unwrap().body.is_empty());

    let server = FileServer::start().await;
    let share = share(&server, "tail").await;
    let file = share.file("f").unwrap();
    file.create(10, None).await.unwrap();
    file.put_range(0, b"0123456789".to_vec(), None)
        .await
        .unwrap();
    let tail = file.download_from(7).await.unwrap();
    assert_eq!(&tail.body[..], b"789");
    assert_eq!(tail.properties.content_length, 10);
    assert_eq!(
        file.download_from(10).await.unwrap_err().status(),
        Some(416)
    );
}

/// List Containers with `include=deleted,system` (REST reference, 2025-11-05). Azurite
/// ignores both values (it has no container soft delete and no system containers), so the
/// answer is scripted as Azure shapes it.
#[tokio::test]
async fn list_containers_includes_deleted_and_system_containers() {
    use azstore::blob::{BlobServiceClient, ListInclude, ListOptions};
    use testkit::scripted::{Reply, Scripted};
    let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"https://a.blob.core.windows.net/\"><Containers>\
<Container><Name>$logs</Name><Properties><Last-Modified>Wed, 19 Jan 2022 22:28:43 GMT</Last-Modified><Etag>\"0x8D9DB9C8B1C3E5A\"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><DefaultEncryptionScope>$account-encryption-key</DefaultEncryptionScope><DenyEncryptionScopeOverride>false</DenyEncryptionScopeOverride><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties></Container>\
<Container><Name>reports</Name><Deleted>true</Deleted><Version>01D60F8BB59A4652</Version><Properties><Last-Modified>Wed, 19 Jan 2022 22:28:43 GMT</Last-Modified><Etag>\"0x8D9DB9C8B1C3E5B\"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>expired</LeaseState><PublicAccess>blob</PublicAccess><DefaultEncryptionScope>scope1</DefaultEncryptionScope><DenyEncryptionScopeOverride>true</DenyEncryptionScopeOverride><DeletedTime>Thu, 20 Jan 2022 08:00:00 GMT</DeletedTime><RemainingRetentionDays>6</RemainingRetentionDays></Properties></Container>\
</Containers><NextMarker /></EnumerationResults>";
    let server = Scripted::start(vec![Reply::with(
        200,
        &[("content-type", "application/xml")],
        body.as_bytes(),
    )])
    .await;
    let service = BlobServiceClient::new(&server.account()).unwrap();
    let options = ListOptions::default()
        .with_metadata()
        .with_deleted()
        .including(ListInclude::System);
    let page = service.list_containers_page(&options, None).await.unwrap();
    let target = &server.requests()[0].target;
    assert!(
        target.ends_with("?comp=list&include=metadata%2Cdeleted%2Csystem")
            || target.ends_with("?comp=list&include=metadata,deleted,system"),
        "{target}"
    );
    assert_eq!(page.items.len(), 2);
    let logs = &page.items[0];
    assert_eq!(logs.name, "$logs");
    assert!(!logs.deleted && logs.version.is_none());
    assert_eq!(
        logs.default_encryption_scope.as_deref(),
        Some("$account-encryption-key")
    );
    let gone = &page.items[1];
    assert!(gone.deleted);
    assert_eq!(gone.version.as_deref(), Some("01D60F8BB59A4652"));
    assert_eq!(gone.remaining_retention_days, Some(6));
    assert_eq!(gone.deleted_time.unwrap().unix_timestamp(), 1_642_665_600);
    assert_eq!(gone.default_encryption_scope.as_deref(), Some("scope1"));
    assert_eq!(gone.deny_encryption_scope_override, Some(true));
    assert_eq!(gone.public_access.as_deref(), Some("blob"));
    // Values for List Blobs only are refused before sending.
    let e = service
        .list_containers_page(&ListOptions::default().including(ListInclude::Tags), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 1);
}

const SOURCE_URL: &str =
    "https://src.blob.core.windows.net/c/source.bin?sv=2025-11-05&sr=b&sp=r&sig=SECRETSIG%3D";

fn azure_error(status: u16, code: &str) -> testkit::scripted::Reply {
    let body = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>scripted\nRequestId:1</Message></Error>"
    );
    testkit::scripted::Reply::with(
        status,
        &[
            ("x-ms-error-code", code),
            ("content-type", "application/xml"),
        ],
        body.as_bytes(),
    )
}

/// `x-ms-source-content-crc64` on Put Blob From URL (which azstore used to refuse), Copy Blob
/// From URL and Append Block From URL, as the REST reference defines them; a mismatch is the
/// service's 400 `Crc64Mismatch`. Azurite answers 501 to Put Blob From URL and does not check
/// a source CRC-64 on the other two, so the answers are scripted.
#[tokio::test]
async fn crc64_source_checks_on_the_from_url_writes() {
    use azstore::blob::{
        AppendFromUrlOptions, BlobServiceClient, CopyOptions, CopySource, PutFromUrlOptions,
        crc64_base64,
    };
    use testkit::scripted::{Reply, Scripted};
    let created = Reply::with(
        201,
        &[
            ("etag", "\"0x8DA707C178DC7C6\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
        ],
        b"",
    );
    let copied = Reply::with(
        202,
        &[
            ("etag", "\"0x8DA707C178DC7C7\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:30 GMT"),
            ("x-ms-copy-id", "c0a8e4a6-0000-0000-0000-000000000000"),
            ("x-ms-copy-status", "success"),
        ],
        b"",
    );
    let appended = Reply::with(
        201,
        &[
            ("etag", "\"0x8DA707C178DC7C8\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:31 GMT"),
            ("x-ms-blob-append-offset", "0"),
            ("x-ms-blob-committed-block-count", "1"),
        ],
        b"",
    );
    let server = Scripted::start(vec![
        created,
        azure_error(400, "Crc64Mismatch"),
        copied,
        appended,
    ])
    .await;
    let blob = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("scripted")
        .unwrap()
        .blob("dst")
        .unwrap();
    let crc = crc64_base64(b"source bytes");
    let source = CopySource::url(SOURCE_URL)
        .unwrap()
        .content_crc64(crc.clone());
    blob.put_blob_from_url(
        &source,
        &PutFromUrlOptions::new(azstore::Conditions::none()),
    )
    .await
    .unwrap();
    let e = blob
        .put_blob_from_url(
            &source,
            &PutFromUrlOptions::new(azstore::Conditions::none()),
        )
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&azstore::ErrorCode::Crc64Mismatch));
    blob.copy_from_url(
        SOURCE_URL,
        &CopyOptions::new(azstore::Conditions::none()).source_content_crc64(crc.clone()),
    )
    .await
    .unwrap();
    blob.append_block_from_url(
        SOURCE_URL,
        &AppendFromUrlOptions::default().source_content_crc64(crc.clone()),
    )
    .await
    .unwrap();
    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    for r in &sent {
        assert_eq!(r.header("x-ms-source-content-crc64"), Some(crc.as_str()));
        assert_eq!(r.header("x-ms-source-content-md5"), None);
    }
    assert_eq!(sent[2].header("x-ms-requires-sync"), Some("true"));
    assert!(sent[3].target.ends_with("?comp=appendblock"));
    // An MD5 and a CRC-64 together are refused before sending; so is a CRC-64 on the
    // asynchronous Copy Blob (the service checks the source only on a synchronous copy).
    let both = CopyOptions::new(azstore::Conditions::none())
        .source_content_md5(azstore::blob::md5_base64(b"x"))
        .source_content_crc64(crc.clone());
    assert!(blob.copy_from_url(SOURCE_URL, &both).await.is_err());
    let both = AppendFromUrlOptions::default()
        .source_content_md5(azstore::blob::md5_base64(b"x"))
        .source_content_crc64(crc.clone());
    assert!(blob.append_block_from_url(SOURCE_URL, &both).await.is_err());
    let e = blob
        .start_copy_from_url(
            SOURCE_URL,
            &CopyOptions::new(azstore::Conditions::none()).source_content_crc64(crc),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 4);
}

/// Put Range From URL with CRC-64 conditions on the source range and a preserved last-write
/// time, against the local File service (which implements both as the REST reference
/// defines them).
#[tokio::test]
async fn put_range_from_url_crc64_conditions_and_last_write_time() {
    use azstore::blob::{CopySource, crc64_base64};
    use azstore::file::{
        CreateFileOptions, LastWriteTime, RangeFromUrlOptions, SmbProperties, SmbTime,
    };
    let server = FileServer::start().await;
    let share = share(&server, "rangeurl").await;
    let src = share.file("src.bin").unwrap();
    let data = blob_support::pattern(2048, 9);
    src.create(2048, None).await.unwrap();
    src.put_range(0, data.clone(), None).await.unwrap();
    let dst = share.file("dst.bin").unwrap();
    let written = SmbTime::At(time::macros::datetime!(2019-07-11 21:40:12.9953010 UTC));
    dst.create_with(
        1024,
        &CreateFileOptions::default().smb(SmbProperties::default().last_write_time(written)),
        None,
    )
    .await
    .unwrap();
    let source = CopySource::url(src.url()).unwrap().range(100..600);
    let crc = crc64_base64(&data[100..600]);

    // Conditions that do not hold: 412, nothing written.
    for options in [
        RangeFromUrlOptions::default().source_if_match_crc64(crc64_base64(b"other")),
        RangeFromUrlOptions::default().source_if_none_match_crc64(crc.clone()),
    ] {
        let e = dst
            .put_range_from_url_with(0, &source, &options)
            .await
            .unwrap_err();
        assert_eq!(e.status(), Some(412), "{e}");
    }
    assert!(dst.list_ranges(None).await.unwrap().ranges.is_empty());

    // Holding, with the last-write time preserved.
    let options = RangeFromUrlOptions::default()
        .source_if_match_crc64(crc.clone())
        .source_if_none_match_crc64(crc64_base64(b"other"))
        .last_write_time(LastWriteTime::Preserve);
    dst.put_range_from_url_with(0, &source, &options)
        .await
        .unwrap();
    assert_eq!(
        &dst.download_range(0..500).await.unwrap().body[..],
        &data[100..600]
    );
    let p = dst.get_properties().await.unwrap();
    assert_eq!(p.smb.last_write_time, Some(written));

    // Now (the default): the last-write time moves.
    dst.put_range_from_url_with(
        0,
        &source,
        &RangeFromUrlOptions::default().last_write_time(LastWriteTime::Now),
    )
    .await
    .unwrap();
    let p = dst.get_properties().await.unwrap();
    assert_ne!(p.smb.last_write_time, Some(written));
}

/// Encryption scopes (REST reference, 2025-11-05): a container's default scope with
/// deny-override on Create Container and read back from Get Container Properties;
/// `x-ms-encryption-scope` on Set Blob Metadata and Append Block. Azurite has no encryption
/// scopes (it ignores the headers), so the answers are scripted.
#[tokio::test]
async fn encryption_scope_on_container_create_metadata_and_append() {
    use azstore::blob::{
        AppendOptions, BlobServiceClient, CreateContainerOptions, SetMetadataOptions,
    };
    use testkit::scripted::{Reply, Scripted};
    let version = [
        ("etag", "\"0x8DA707C178DC7C6\""),
        ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
    ];
    let server = Scripted::start(vec![
        Reply::with(201, &version, b""),
        Reply::with(
            200,
            &[
                version[0],
                version[1],
                ("x-ms-default-encryption-scope", "scope1"),
                ("x-ms-deny-encryption-scope-override", "true"),
            ],
            b"",
        ),
        Reply::with(
            200,
            &[version[0], version[1], ("x-ms-encryption-scope", "scope1")],
            b"",
        ),
        Reply::with(
            201,
            &[
                version[0],
                version[1],
                ("x-ms-blob-append-offset", "0"),
                ("x-ms-blob-committed-block-count", "1"),
                ("x-ms-encryption-scope", "scope1"),
            ],
            b"",
        ),
    ])
    .await;
    let container = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("scoped")
        .unwrap();
    container
        .create_with(
            &CreateContainerOptions::default()
                .default_encryption_scope("scope1")
                .deny_encryption_scope_override(),
        )
        .await
        .unwrap();
    let p = container.get_properties().await.unwrap();
    assert_eq!(p.default_encryption_scope.as_deref(), Some("scope1"));
    assert_eq!(p.deny_encryption_scope_override, Some(true));
    let blob = container.blob("log").unwrap();
    let meta = [("k".to_string(), "v".to_string())].into();
    blob.set_metadata_with(
        &meta,
        &SetMetadataOptions::default().encryption_scope("scope1"),
    )
    .await
    .unwrap();
    blob.append_block(
        b"line\n".to_vec(),
        &AppendOptions::default().encryption_scope("scope1"),
    )
    .await
    .unwrap();
    let sent = server.requests();
    assert_eq!(
        sent[0].header("x-ms-default-encryption-scope"),
        Some("scope1")
    );
    assert_eq!(
        sent[0].header("x-ms-deny-encryption-scope-override"),
        Some("true")
    );
    assert!(
        sent[2].target.ends_with("?comp=metadata"),
        "{}",
        sent[2].target
    );
    assert_eq!(sent[2].header("x-ms-encryption-scope"), Some("scope1"));
    assert_eq!(sent[2].header("x-ms-meta-k"), Some("v"));
    assert!(sent[3].target.ends_with("?comp=appendblock"));
    assert_eq!(sent[3].header("x-ms-encryption-scope"), Some("scope1"));
    // Deny-override without a default scope, and an empty scope, are refused before sending.
    let e = container
        .create_with(&CreateContainerOptions::default().deny_encryption_scope_override())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    let e = blob
        .append_block(
            b"x".to_vec(),
            &AppendOptions::default().encryption_scope(""),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 4);
}

#[tokio::test]
async fn a_page_blob_created_with_an_initial_sequence_number() {
    use azstore::blob::{CreateOptions, PageWriteOptions};
    let c = blob_support::container("pageseq").await;
    let disk = c.blob("disk").unwrap();
    let w = disk
        .create_page_blob(
            1024,
            &CreateOptions::new(azstore::Conditions::none()).sequence_number(7),
        )
        .await
        .unwrap();
    let p = disk.get_properties().await.unwrap();
    assert_eq!(p.sequence_number, Some(7));
    assert_eq!(p.etag, w.etag);
    // A writer fenced on the sequence number sees it from the start.
    let fenced = PageWriteOptions::default().if_sequence_number_eq(6);
    let e = disk
        .put_pages_with(0, vec![1u8; 512], &fenced)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    disk.put_pages_with(
        0,
        vec![1u8; 512],
        &PageWriteOptions::default().if_sequence_number_eq(7),
    )
    .await
    .unwrap();
    // Refused before sending: an append blob has none; above 2^63 - 1.
    let log = c.blob("log").unwrap();
    let e = log
        .create_append_blob(&CreateOptions::new(azstore::Conditions::none()).sequence_number(1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    let e = disk
        .create_page_blob(
            512,
            &CreateOptions::new(azstore::Conditions::none()).sequence_number(u64::MAX),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert!(!log.exists().await.unwrap());
}

/// Incremental Copy Blob (`comp=incrementalcopy`, REST reference): Azurite answers 501, so
/// the service's 202 and its error for a source that is not a snapshot are scripted.
#[tokio::test]
async fn incremental_copy_of_a_page_blob_snapshot() {
    use azstore::blob::{BlobServiceClient, CopyStatus};
    use testkit::scripted::{Reply, Scripted};
    let source = format!("{SOURCE_URL}&snapshot=2026-11-25T07%3A00%3A00.1234567Z");
    let server = Scripted::start(vec![
        Reply::with(
            202,
            &[
                ("etag", "\"0x8DA707C178DC7C6\""),
                ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
                ("x-ms-copy-id", "8e2a8f3e-0000-0000-0000-000000000001"),
                ("x-ms-copy-status", "pending"),
            ],
            b"",
        ),
        azure_error(409, "IncrementalCopyBlobMismatch"),
    ])
    .await;
    let backup = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("backups")
        .unwrap()
        .blob("disk")
        .unwrap();
    let etag = azstore::ETag::new("\"0x8DA707C178DC7C5\"");
    let copy = backup
        .start_incremental_copy(&source, &azstore::Conditions::if_match(&etag))
        .await
        .unwrap();
    assert_eq!(copy.status, CopyStatus::Pending);
    assert_eq!(copy.copy_id, "8e2a8f3e-0000-0000-0000-000000000001");
    let e = backup
        .start_incremental_copy(&source, &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409));
    let sent = server.requests();
    assert_eq!(sent[0].method, "PUT");
    assert!(
        sent[0]
            .target
            .ends_with("/backups/disk?comp=incrementalcopy"),
        "{}",
        sent[0].target
    );
    assert_eq!(sent[0].header("x-ms-copy-source"), Some(source.as_str()));
    assert_eq!(sent[0].header("if-match"), Some("\"0x8DA707C178DC7C5\""));
    // Refused before sending: a source that is not a snapshot, a lease id.
    let e = backup
        .start_incremental_copy(SOURCE_URL, &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    let leased = azstore::Conditions::lease(
        &azstore::LeaseId::new("7b1f3a2e-0000-0000-0000-000000000000").unwrap(),
    );
    let e = backup
        .start_incremental_copy(&source, &leased)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 2);
}

/// Immutability policy and legal hold (REST reference: `comp=immutabilityPolicies`,
/// `comp=legalhold`): Azurite answers 501 to all three, so the answers are scripted,
/// including the 409 Azure gives for deleting a locked policy.
#[tokio::test]
async fn immutability_policy_and_legal_hold() {
    use azstore::blob::{BlobServiceClient, ImmutabilityPolicy, ImmutabilityPolicyMode};
    use testkit::scripted::{Reply, Scripted};
    let until = "Fri, 25 Dec 2026 00:00:00 GMT";
    let server = Scripted::start(vec![
        Reply::with(
            200,
            &[
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "unlocked"),
            ],
            b"",
        ),
        Reply::with(
            200,
            &[
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "locked"),
            ],
            b"",
        ),
        Reply::with(200, &[("x-ms-legal-hold", "true")], b""),
        Reply::with(
            200,
            &[
                ("etag", "\"0x8DA707C178DC7C6\""),
                ("content-length", "3"),
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "locked"),
                ("x-ms-legal-hold", "true"),
            ],
            b"",
        ),
        azure_error(409, "ImmutabilityPolicyDeleteOnLockedPolicy"),
    ])
    .await;
    let blob = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("worm")
        .unwrap()
        .blob("ledger")
        .unwrap();
    let expiry = time::macros::datetime!(2026-12-25 00:00:00 UTC);
    let policy = ImmutabilityPolicy::new(expiry, ImmutabilityPolicyMode::Unlocked);
    let since = time::macros::datetime!(2026-11-01 00:00:00 UTC);
    let held = blob
        .set_immutability_policy(
            &policy,
            &azstore::Conditions {
                if_unmodified_since: Some(since),
                ..azstore::Conditions::none()
            },
        )
        .await
        .unwrap();
    assert_eq!(held, policy);
    let locked = blob
        .set_immutability_policy(&policy.locked(), &azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(locked.mode, ImmutabilityPolicyMode::Locked);
    assert!(blob.set_legal_hold(true).await.unwrap());
    let p = blob.get_properties().await.unwrap();
    assert_eq!(p.immutability_policy, Some(policy.locked()));
    assert_eq!(p.legal_hold, Some(true));
    let e = blob.delete_immutability_policy().await.unwrap_err();
    assert_eq!(e.status(), Some(409));

    let sent = server.requests();
    assert!(
        sent[0]
            .target
            .ends_with("/worm/ledger?comp=immutabilityPolicies")
    );
    assert_eq!(sent[0].method, "PUT");
    assert_eq!(
        sent[0].header("x-ms-immutability-policy-until-date"),
        Some(until)
    );
    assert_eq!(
        sent[0].header("x-ms-immutability-policy-mode"),
        Some("Unlocked")
    );
    assert_eq!(
        sent[0].header("if-unmodified-since"),
        Some("Sun, 01 Nov 2026 00:00:00 GMT")
    );
    assert_eq!(
        sent[1].header("x-ms-immutability-policy-mode"),
        Some("Locked")
    );
    assert!(sent[2].target.ends_with("?comp=legalhold"));
    assert_eq!(sent[2].header("x-ms-legal-hold"), Some("true"));
    assert_eq!(sent[4].method, "DELETE");
    assert!(sent[4].target.ends_with("?comp=immutabilityPolicies"));
    // Only If-Unmodified-Since is accepted.
    let etag = azstore::ETag::new("\"1\"");
    let e = blob
        .set_immutability_policy(&policy, &azstore::Conditions::if_match(&etag))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 5);
}

/// List Directories and Files with extended info (`include=Timestamps,Etag,Attributes,
/// PermissionKey`, `x-ms-file-extended-info: true`), against the local File service, which
/// answers as the REST reference shapes it.
#[tokio::test]
async fn directory_listing_with_extended_info() {
    use azstore::file::{CreateFileOptions, FileAttributes, ListOptions, SmbProperties, SmbTime};
    let server = FileServer::start().await;
    let share = share(&server, "extinfo").await;
    let root = share.root();
    share.directory("sub").unwrap().create().await.unwrap();
    let written = time::macros::datetime!(2019-07-11 21:40:12.9953010 UTC);
    let file = share.file("a.txt").unwrap();
    file.create_with(
        5,
        &CreateFileOptions::default().smb(
            SmbProperties::default()
                .attributes(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
                .last_write_time(SmbTime::At(written)),
        ),
        None,
    )
    .await
    .unwrap();
    let props = file.get_properties().await.unwrap();

    let plain = root.list(&ListOptions::default()).await.unwrap();
    assert_eq!(plain.entries.len(), 2);
    assert!(
        plain
            .entries
            .iter()
            .all(|e| e.etag.is_none() && e.attributes.is_none())
    );

    let page = root
        .list(&ListOptions::default().extended_info())
        .await
        .unwrap();
    assert_eq!(page.items.len(), 2);
    let a = page.entries.iter().find(|e| e.name == "a.txt").unwrap();
    assert!(!a.is_directory);
    assert_eq!(a.size, Some(5));
    assert_eq!(a.etag.as_ref(), Some(&props.etag));
    assert_eq!(a.last_write_time, Some(written));
    assert_eq!(
        a.attributes,
        Some(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
    );
    let Some(azstore::file::FilePermission::Key(key)) = props.smb.permission.clone() else {
        panic!("no permission key in {props:?}");
    };
    assert_eq!(a.permission_key.as_deref(), Some(key.as_str()));
    assert!(a.file_id.is_some() && a.creation_time.is_some() && a.change_time.is_some());
    let sub = page.entries.iter().find(|e| e.name == "sub").unwrap();
    assert!(sub.is_directory && sub.size.is_none());
    assert_eq!(sub.attributes, Some(FileAttributes::DIRECTORY));
}

/// Rename File / Rename Directory with SMB properties (`x-ms-file-attributes`, times,
/// permission key; REST reference), against the local File service.
#[tokio::test]
async fn rename_sets_smb_properties() {
    use azstore::file::{FileAttributes, FilePermission, RenameOptions, SmbProperties, SmbTime};
    let server = FileServer::start().await;
    let share = share(&server, "renamesmb").await;
    let sddl = "O:BAG:SYD:(A;;FA;;;BA)(A;;0x1200a9;;;WD)";
    let key = share.create_permission(sddl).await.unwrap();
    let file = share.file("draft.txt").unwrap();
    file.create(3, None).await.unwrap();
    let before = file.get_properties().await.unwrap().smb;
    let written = time::macros::datetime!(2020-01-02 03:04:05.0000001 UTC);
    let smb = SmbProperties::default()
        .attributes(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
        .last_write_time(SmbTime::At(written))
        .permission(FilePermission::Key(key.clone()));
    let done = file
        .rename("final.txt", &RenameOptions::default().smb(smb))
        .await
        .unwrap();
    let after = done.get_properties().await.unwrap().smb;
    assert_eq!(
        after.attributes,
        Some(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
    );
    assert_eq!(after.last_write_time, Some(SmbTime::At(written)));
    assert_eq!(after.permission, Some(FilePermission::Key(key)));
    assert_eq!(after.creation_time, before.creation_time, "not given: kept");

    let dir = share.directory("staging").unwrap();
    dir.create().await.unwrap();
    let hidden =
        SmbProperties::default().attributes(FileAttributes::DIRECTORY | FileAttributes::HIDDEN);
    let moved = dir
        .rename("archive", &RenameOptions::default().smb(hidden))
        .await
        .unwrap();
    let p = moved.get_properties().await.unwrap().smb;
    assert_eq!(
        p.attributes,
        Some(FileAttributes::DIRECTORY | FileAttributes::HIDDEN)
    );
    // An empty SDDL is refused before sending.
    let e = done
        .rename(
            "again.txt",
            &RenameOptions::default()
                .smb(SmbProperties::default().permission(FilePermission::Sddl(String::new()))),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
}

/// Leases on a share snapshot (Lease Share with `sharesnapshot=`, REST reference), against
/// the local File service: the snapshot's lease is its own, independent of the share's, and
/// guards deleting the snapshot.
#[tokio::test]
async fn a_share_snapshot_has_a_lease_of_its_own() {
    use azstore::blob::LeaseState;
    use azstore::lease::LeaseDuration;
    let server = FileServer::start().await;
    let share = share(&server, "snaplease").await;
    let snap = share.create_snapshot(&Default::default()).await.unwrap();
    let id = &snap.snapshot;
    let lease = share
        .acquire_snapshot_lease(id, LeaseDuration::Infinite, None)
        .await
        .unwrap();
    let p = share.snapshot_properties(id).await.unwrap();
    assert_eq!(p.lease.state, Some(LeaseState::Leased));
    // The share itself stays unleased.
    assert_ne!(
        share.get_properties().await.unwrap().lease.state,
        Some(LeaseState::Leased)
    );
    // A second acquire is refused; so is deleting the snapshot without the lease.
    let e = share
        .acquire_snapshot_lease(id, LeaseDuration::Infinite, None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409), "{e}");
    let e = share.delete_snapshot(id).await.unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    share
        .release_snapshot_lease(id, &lease.lease_id)
        .await
        .unwrap();
    assert_eq!(
        share.snapshot_properties(id).await.unwrap().lease.state,
        Some(LeaseState::Available)
    );
    share.delete_snapshot(id).await.unwrap();
    // A bad snapshot id is refused before sending.
    let e = share
        .acquire_snapshot_lease(
            &azstore::file::SnapshotId::new("not a snapshot"),
            LeaseDuration::Infinite,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
}
