//! The operations added because the recordings of live Azure traffic use them (issue 15):
//! service properties, soft delete, Append Block From URL, share snapshots, List Shares,
//! metadata reads and `exists()` — against Azurite and the local File service. The replay of
//! the recordings themselves is `tests/conformance`.

use testkit as support;
use testkit::blob as blob_support;
use testkit::file_server::FileServer;

use std::collections::BTreeMap;

use azstore::blob::{AppendFromUrlOptions, ListOptions};
use azstore::file::ListSharesOptions;
use azstore::service_properties::{CorsRule, Logging, Metrics, RetentionPolicy, ServiceProperties};
use azstore::{
    Conditions, ErrorKind, file::ShareServiceClient, queue::QueueServiceClient,
    table::TableServiceClient,
};

fn cors() -> Vec<CorsRule> {
    vec![CorsRule {
        allowed_origins: vec!["https://a.example".into(), "https://b.example".into()],
        allowed_methods: vec!["GET".into(), "PUT".into()],
        allowed_headers: vec!["x-ms-meta-*".into()],
        exposed_headers: vec!["x-ms-request-id".into()],
        max_age_in_seconds: 300,
    }]
}

#[tokio::test]
async fn blob_service_properties_round_trip() {
    let blobs = blob_support::service();
    let mut props = blobs.get_service_properties().await.unwrap();
    props.cors = Some(cors());
    props.hour_metrics = Some(Metrics {
        version: "1.0".into(),
        enabled: true,
        include_apis: Some(true),
        retention_policy: RetentionPolicy::days(3),
    });
    blobs.set_service_properties(&props).await.unwrap();
    let got = blobs.get_service_properties().await.unwrap();
    assert_eq!(
        got.cors, props.cors,
        "CORS rules round-trip through the service"
    );
    assert_eq!(got.hour_metrics, props.hour_metrics);
}

#[tokio::test]
async fn queue_service_properties_round_trip() {
    let queues = QueueServiceClient::new(&support::account()).unwrap();
    let mut props = queues.get_service_properties().await.unwrap();
    props.logging = Some(Logging {
        version: "1.0".into(),
        delete: true,
        read: false,
        write: true,
        retention_policy: RetentionPolicy::days(2),
    });
    queues.set_service_properties(&props).await.unwrap();
    let got = queues.get_service_properties().await.unwrap();
    assert_eq!(got.logging, props.logging);
}

#[tokio::test]
async fn invalid_service_properties_are_refused_before_sending() {
    let account = support::account();
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let with = |f: &dyn Fn(&mut ServiceProperties)| {
        let mut p = ServiceProperties::default();
        f(&mut p);
        p
    };
    let bad = [
        with(&|p| {
            p.delete_retention_policy = Some(RetentionPolicy {
                enabled: true,
                days: None,
                allow_permanent_delete: None,
            })
        }),
        with(&|p| p.delete_retention_policy = Some(RetentionPolicy::days(366))),
        with(&|p| p.cors = Some(vec![CorsRule::default()])),
    ];
    for p in &bad {
        let e = blobs.set_service_properties(p).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{p:?}");
        assert_eq!(e.request_sent(), azstore::RequestSent::No);
    }
    // Sections a service does not have.
    let queues = QueueServiceClient::new(&account).unwrap();
    let soft_delete = with(&|p| p.delete_retention_policy = Some(RetentionPolicy::days(1)));
    let e = queues
        .set_service_properties(&soft_delete)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let server = FileServer::start().await;
    let files = ShareServiceClient::new(&server.account()).unwrap();
    let logging = with(&|p| p.logging = Some(Logging::default()));
    let e = files.set_service_properties(&logging).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(
        server.request_count(),
        0,
        "nothing reached the File service"
    );
}

#[tokio::test]
async fn table_exists() {
    let tables = TableServiceClient::new(&support::account()).unwrap();
    let t = tables.table(&support::unique("exists")).unwrap();
    assert!(!t.exists().await.unwrap());
    t.create().await.unwrap();
    assert!(t.exists().await.unwrap());
    t.delete().await.unwrap();
    assert!(!t.exists().await.unwrap());
}

// Append Block From URL against a server: Azurite 3.37 answers 501 APINotImplemented, so it
// is proven only by the replay of live Azure traffic (tests/conformance, the eleven
// test_append_blob.test_append_block_from_url_* recordings: success, source and destination
// conditions, append position and maximum size).

#[tokio::test]
async fn append_block_from_url_refuses_bad_input_before_sending() {
    let c = blob_support::container("appurlbad").await;
    let dst = c.blob("d").unwrap();
    let bad_range = AppendFromUrlOptions::default().source_range(5..5);
    let e = dst
        .append_block_from_url("https://x.example/c/b", &bad_range)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // The same URL rules as every other From URL operation: http(s), percent-encoded.
    for url in ["ftp://x/c/b", "https://x.example/c/a b"] {
        let e = dst
            .append_block_from_url(url, &AppendFromUrlOptions::default())
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{url}");
    }
}

#[tokio::test]
async fn list_blobs_with_deleted_sends_include_deleted() {
    // Azurite does not implement soft delete, but it accepts include=deleted and lists the
    // live blobs unmarked; the real service's answer (with <Deleted>true</Deleted>) is
    // checked against test_common_blob.test_soft_delete_with_leased_blob in the conformance
    // suite.
    let c = blob_support::container("listdel").await;
    c.blob("live")
        .unwrap()
        .upload("x", &Conditions::none())
        .await
        .unwrap();
    let page = c
        .list_blobs_page(&ListOptions::default().with_deleted(), None)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    match &page.items[0] {
        azstore::blob::BlobListItem::Blob(b) => assert!(!b.deleted),
        other => panic!("{other:?}"),
    }
    // include=system is List Containers' only.
    let e = c
        .list_blobs_page(
            &ListOptions::default().including(azstore::blob::ListInclude::System),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn share_snapshots_list_shares_metadata_and_directory_exists() {
    let server = FileServer::start().await;
    let files = ShareServiceClient::new(&server.account()).unwrap();
    let name = support::unique("snap");
    let share = files.share(&name).unwrap();
    let meta = BTreeMap::from([("kind".to_string(), "original".to_string())]);
    share.create_with(&meta, Some(7)).await.unwrap();

    let snap = share.create_snapshot(&BTreeMap::new()).await.unwrap();
    let props = share.snapshot_properties(&snap.snapshot).await.unwrap();
    assert_eq!(props.etag, snap.etag);
    assert_eq!(props.quota_gib, Some(7));
    assert_eq!(
        props.metadata, meta,
        "a snapshot keeps the share's metadata"
    );

    // A share with snapshots cannot be deleted alone.
    let e = share.delete(None).await.unwrap_err();
    assert_eq!(e.status(), Some(409), "{e:?}");
    share.delete_snapshot(&snap.snapshot).await.unwrap();
    let e = share.snapshot_properties(&snap.snapshot).await.unwrap_err();
    assert!(e.is_not_found(), "{e:?}");
    share.create_snapshot(&BTreeMap::new()).await.unwrap();

    let (m, etag) = share.get_metadata().await.unwrap();
    assert_eq!(m, meta);
    assert_eq!(etag, share.get_properties().await.unwrap().etag);

    let dir = share.directory("d1").unwrap();
    assert!(!dir.exists().await.unwrap());
    dir.create().await.unwrap();
    assert!(dir.exists().await.unwrap());
    let (m, _) = dir.get_metadata().await.unwrap();
    assert!(m.is_empty());
    let f = share.file("d1/f").unwrap();
    f.create(3, None).await.unwrap();
    let fm = BTreeMap::from([("a".to_string(), "1".to_string())]);
    f.set_metadata(&fm, None).await.unwrap();
    assert_eq!(f.get_metadata().await.unwrap().0, fm);

    let page = files
        .list_shares_page(
            &ListSharesOptions::default()
                .prefix(name.clone())
                .with_metadata(),
            None,
        )
        .await
        .unwrap();
    assert_eq!(page.shares.len(), 1);
    assert_eq!(page.shares[0].name, name);
    assert_eq!(page.shares[0].metadata, meta);
    assert!(page.next_marker.is_none());

    share.delete_with_snapshots().await.unwrap();
    assert!(share.get_properties().await.unwrap_err().is_not_found());
}
