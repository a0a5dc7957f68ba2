//! Transactional checksums and verified reads. Writes with `Checksum::Md5` / `Checksum::Crc64`
//! go to Azurite, which recomputes both and refuses a mismatch, so a wrong CRC-64 in azstore
//! would fail here (the unit tests in `blob::checksum` pin the CRC-64 to values the real
//! service returned). Azurite refuses `x-ms-range-get-content-crc64` (its strict mode lists
//! it as unsupported), so the CRC-64 verified read is tested against a scripted server that
//! answers with a response recorded from Azure.

use testkit::blob as blob_support;
use testkit::scripted::{Reply, Scripted};

use azstore::blob::DownloadOptions;
use azstore::blob::{
    AppendOptions, BlockId, BlockOptions, BlockRef, Checksum, CommitOptions, CreateOptions,
    PageWriteOptions, PutOptions, UploadOptions,
};
use azstore::http::{Method, Request};
use azstore::http_headers::HttpHeaders;
use azstore::{Conditions, ErrorCode, ErrorKind, blob::BlobServiceClient};

#[tokio::test]
async fn every_data_write_accepts_md5_and_crc64() {
    let c = blob_support::container("intwrite").await;
    for checksum in [Checksum::Md5, Checksum::Crc64] {
        let data = blob_support::pattern(2048, 7);

        let b = c.blob(&format!("put-{checksum:?}")).unwrap();
        b.put(
            data.clone(),
            &PutOptions::new(Conditions::none()).checksum(checksum),
        )
        .await
        .unwrap();
        assert_eq!(&b.download().await.unwrap().body[..], &data[..]);

        let staged = c.blob(&format!("staged-{checksum:?}")).unwrap();
        let opts = UploadOptions::new(Conditions::none())
            .single_put_limit(0)
            .block_size(500)
            .checksum(checksum);
        staged.upload_with(data.clone(), &opts).await.unwrap();
        assert_eq!(&staged.download().await.unwrap().body[..], &data[..]);

        let block = c.blob(&format!("block-{checksum:?}")).unwrap();
        let id = BlockId::new("one").unwrap();
        block
            .put_block_with(
                &id,
                data.clone(),
                &BlockOptions::default().checksum(checksum),
            )
            .await
            .unwrap();
        block
            .put_block_list(
                &[BlockRef::Latest(id)],
                &CommitOptions::new(Conditions::none()),
            )
            .await
            .unwrap();

        let log = c.blob(&format!("append-{checksum:?}")).unwrap();
        log.create_append_blob(&CreateOptions::new(Conditions::none()))
            .await
            .unwrap();
        log.append_block(data.clone(), &AppendOptions::at(0).checksum(checksum))
            .await
            .unwrap();
        assert_eq!(&log.download().await.unwrap().body[..], &data[..]);

        let disk = c.blob(&format!("page-{checksum:?}")).unwrap();
        disk.create_page_blob(4096, &CreateOptions::new(Conditions::none()))
            .await
            .unwrap();
        disk.put_pages_with(
            512,
            data.clone(),
            &PageWriteOptions::default().checksum(checksum),
        )
        .await
        .unwrap();
        let got = disk.download_range(512..2560).await.unwrap();
        assert_eq!(&got.body[..], &data[..]);
    }
}

#[tokio::test]
async fn a_checksum_the_service_does_not_match_is_a_typed_integrity_error() {
    let c = blob_support::container("intbad").await;
    let blob = c.blob("b").unwrap();
    let path = format!("{}/b", c.name());
    for (header, value, code) in [
        (
            "content-md5",
            azstore::blob::md5_base64(b"other"),
            ErrorCode::Md5Mismatch,
        ),
        (
            "x-ms-content-crc64",
            azstore::blob::crc64_base64(b"other"),
            ErrorCode::Crc64Mismatch,
        ),
    ] {
        let req = Request::new(Method::Put, &path)
            .header("x-ms-blob-type", "BlockBlob")
            .header(header, value)
            .body(&b"payload"[..], "application/octet-stream");
        let e = blob.pipeline().send(req).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
        assert!(e.is_integrity_mismatch());
        assert_eq!(e.error_code(), Some(&code));
        assert_eq!(e.status(), Some(400));
    }
    assert!(
        !blob.exists().await.unwrap(),
        "a refused write stores nothing"
    );
}

#[tokio::test]
async fn verified_ranged_read_with_md5_against_azurite() {
    let c = blob_support::container("intread").await;
    let b = c.blob("data").unwrap();
    let data = blob_support::pattern(10_000, 9);
    b.upload(data.clone(), &Conditions::none()).await.unwrap();
    let d = b
        .download_range_verified(1000..5000, Checksum::Md5)
        .await
        .unwrap();
    assert_eq!(&d.body[..], &data[1000..5000]);
    assert_eq!(d.properties.content_length, 10_000);
    // Bad input never reaches the service.
    for (range, checksum) in [
        (0..(4 << 20) + 1, Checksum::Md5),
        (5..5, Checksum::Md5),
        (0..10, Checksum::None),
    ] {
        let e = b
            .download_range_verified(range, checksum)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
}

/// Headers of a ranged Get Blob as Azure answered it for the 11 bytes "Hello World" (the
/// CRC-64 and MD5 values are the ones Azure returned for that content).
fn hello_reply(body: &[u8], crc64: &str, md5: &str) -> Reply {
    Reply::with(
        206,
        &[
            ("etag", "\"0x8DA707C178DC7C6\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
            ("content-range", "bytes 0-10/11"),
            ("x-ms-blob-type", "BlockBlob"),
            ("x-ms-content-crc64", crc64),
            ("content-md5", md5),
        ],
        body,
    )
}

#[tokio::test]
async fn verified_ranged_read_with_crc64_detects_corruption_scripted() {
    let server = Scripted::start(vec![
        hello_reply(b"Hello World", "YeJLfssylmU=", "sQqNsWTgdUEFt6mb5y4/5Q=="),
        hello_reply(b"Hello Werld", "YeJLfssylmU=", "sQqNsWTgdUEFt6mb5y4/5Q=="),
        hello_reply(b"Hello Werld", "YeJLfssylmU=", "sQqNsWTgdUEFt6mb5y4/5Q=="),
        Reply::with(
            206,
            &[("etag", "\"0x1\""), ("content-range", "bytes 0-10/11")],
            b"Hello World",
        ),
    ])
    .await;
    let blob = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("scripted")
        .unwrap()
        .blob("b")
        .unwrap();
    let ok = blob
        .download_range_verified(0..11, Checksum::Crc64)
        .await
        .unwrap();
    assert_eq!(&ok.body[..], b"Hello World");
    let sent = &server.requests()[0];
    assert_eq!(sent.header("x-ms-range"), Some("bytes=0-10"));
    assert_eq!(sent.header("x-ms-range-get-content-crc64"), Some("true"));

    for (checksum, code) in [
        (Checksum::Crc64, ErrorCode::Crc64Mismatch),
        (Checksum::Md5, ErrorCode::Md5Mismatch),
    ] {
        let e = blob
            .download_range_verified(0..11, checksum)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
        assert_eq!(e.error_code(), Some(&code));
    }
    assert_eq!(
        server.requests()[2].header("x-ms-range-get-content-md5"),
        Some("true")
    );
    // Asked for a checksum, answered without one: an error, never unverified data.
    let e = blob
        .download_range_verified(0..11, Checksum::Crc64)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Service);
    assert!(e.message().contains("x-ms-content-crc64"), "{e}");
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
