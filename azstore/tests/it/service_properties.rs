//! Service properties and statistics: Blob and Queue properties round trips against Azurite,
//! invalid properties refused before sending, a read-modify-write that sends back what it read
//! (scripted: Azurite drops elements it does not know), and Get Service Stats of the secondary
//! location.

use azstore::service_properties::{CorsRule, Logging, Metrics, RetentionPolicy, ServiceProperties};
use azstore::{ErrorKind, file::ShareServiceClient, queue::QueueServiceClient};
use testkit as support;
use testkit::blob as blob_support;
use testkit::file_server::FileServer;

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
