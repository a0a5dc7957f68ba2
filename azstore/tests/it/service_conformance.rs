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
        &PutOptions::default().http_headers(headers.clone()),
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
    file.put_range(0, data.clone().into(), None).await.unwrap();
    file.set_http_headers(&HttpHeaders::default().content_md5(stored.clone()), None)
        .await
        .unwrap();

    let part = file.get_range(10..100).await.unwrap();
    assert_eq!(&part.body[..], &data[10..100]);
    assert_eq!(
        part.properties.http_headers.content_md5,
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
