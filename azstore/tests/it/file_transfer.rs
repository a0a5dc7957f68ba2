//! Shares, directories and files against the in-process File test server
//! (`testkit::file_server`): ranged parallel round trips (keeping the stored MD5), Put Range
//! From URL, listing with paging and extended info, properties and metadata, and input refused
//! before sending.

use testkit as support;
use testkit::blob as blob_support;
use testkit::file_server;

use std::collections::BTreeMap;

use azstore::ErrorKind;
use azstore::file::{ListItem, ListOptions, ShareClient, ShareServiceClient, TransferOptions};
use azstore::http_headers::HttpHeaders;
use bytes::Bytes;
use file_server::FileServer;
use futures_util::TryStreamExt;

async fn share(server: &FileServer) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("share"))
        .unwrap();
    share.create().await.unwrap();
    share
}

fn pattern(len: usize) -> Bytes {
    // Position-dependent bytes, so a range written at the wrong offset is detected.
    (0..len)
        .map(|i| (i as u64).wrapping_mul(2_654_435_761).rotate_right(13) as u8)
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn twenty_mib_round_trip_in_ranges() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    share.directory("data").unwrap().create().await.unwrap();
    let file = share.file("data/big.bin").unwrap();
    let data = pattern(20 * 1024 * 1024 + 123);
    let options = TransferOptions::default().max_concurrency(4);

    let before = server.request_count();
    let written = file.upload(data.clone(), &options, None).await.unwrap();
    // Create + ceil(size / 4 MiB) = 6 ranges + one HEAD for the final version.
    assert_eq!(server.request_count() - before, 1 + 6 + 1);
    assert_eq!(
        server.file_content(share.name(), "data/big.bin").as_deref(),
        Some(&data[..])
    );

    let down = file.download(&options).await.unwrap();
    assert_eq!(down.body.len(), data.len());
    assert!(down.body == data, "downloaded content differs");
    assert_eq!(down.properties.etag, written.etag);
    assert_eq!(down.properties.content_length, data.len() as u64);

    // Smaller ranges than the maximum, different max_concurrency: same bytes.
    let small = TransferOptions::default()
        .range_size(3 * 1024 * 1024 + 7)
        .max_concurrency(2);
    assert!(file.download(&small).await.unwrap().body == data);

    // Streaming get of a middle range.
    let range = 5 * 1024 * 1024..9 * 1024 * 1024 + 5;
    let stream = file.download_range_stream(range.clone()).await.unwrap();
    assert_eq!(stream.properties.content_length, data.len() as u64);
    let chunks: Vec<Bytes> = stream.body.try_collect().await.unwrap();
    let streamed: Vec<u8> = chunks.concat();
    assert!(streamed == data[range.start as usize..range.end as usize]);

    // The whole file is one written range.
    let ranges = file.list_ranges(None).await.unwrap();
    assert_eq!(ranges.ranges, vec![0..data.len() as u64]);
    assert_eq!(ranges.file_size, Some(data.len() as u64));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ranges_update_clear_and_resize() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("sparse.bin").unwrap();
    let created = file.create(10_000, None).await.unwrap();
    assert_eq!(file.get_properties().await.unwrap().content_length, 10_000);
    assert!(file.list_ranges(None).await.unwrap().ranges.is_empty());

    let w = file
        .put_range(1000, Bytes::from_static(b"hello"), None)
        .await
        .unwrap();
    assert_ne!(w.etag, created.etag, "a write changes the ETag");
    file.put_range(5000, pattern(3000), None).await.unwrap();
    assert_eq!(
        file.list_ranges(None).await.unwrap().ranges,
        vec![1000..1005, 5000..8000]
    );
    assert_eq!(
        file.list_ranges(Some(6000..9000)).await.unwrap().ranges,
        vec![6000..8000]
    );
    let part = file.download_range(998..1007).await.unwrap();
    assert_eq!(&part.body[..], b"\0\0hello\0\0");
    assert_eq!(part.properties.content_length, 10_000);

    file.clear_range(5000..6000, None).await.unwrap();
    assert_eq!(
        file.list_ranges(None).await.unwrap().ranges,
        vec![1000..1005, 6000..8000]
    );
    let whole = file.download(&Default::default()).await.unwrap();
    assert_eq!(whole.body.len(), 10_000);
    assert!(whole.body[5000..6000].iter().all(|b| *b == 0));

    file.set_properties(Some(1003), Some("text/plain"), None)
        .await
        .unwrap();
    let p = file.get_properties().await.unwrap();
    assert_eq!(p.content_length, 1003);
    assert_eq!(p.http_headers.content_type.as_deref(), Some("text/plain"));
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[1000..],
        b"hel"
    );

    // Writing past the end is the service's 416, not a panic or a silent extension.
    let err = file
        .put_range(1000, Bytes::from_static(b"toolong"), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(416));

    let meta = BTreeMap::from([("owner".to_string(), "team-a".to_string())]);
    file.set_metadata(&meta, None).await.unwrap();
    assert_eq!(file.get_properties().await.unwrap().metadata, meta);

    file.delete(None).await.unwrap();
    assert!(!file.exists().await.unwrap());

    // Empty files round-trip without range requests (a range on an empty file is a 416).
    let empty = share.file("empty").unwrap();
    empty
        .upload(Bytes::new(), &TransferOptions::default(), None)
        .await
        .unwrap();
    let down = empty.download(&TransferOptions::default()).await.unwrap();
    assert!(down.body.is_empty());
    assert_eq!(down.properties.content_length, 0);
    assert!(
        file.download(&Default::default())
            .await
            .unwrap_err()
            .is_not_found()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_with_paging() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let dir = share.directory("inbox").unwrap();
    dir.create().await.unwrap();
    for d in ["d1", "d2"] {
        dir.directory(d).unwrap().create().await.unwrap();
    }
    for (i, f) in ["a.txt", "b.txt", "c.txt", "skip.log"].iter().enumerate() {
        let file = dir.file(f).unwrap();
        file.upload(pattern(i + 1), &TransferOptions::default(), None)
            .await
            .unwrap();
    }
    // A file in a subdirectory is not a direct child.
    share
        .file("inbox/d1/deep.txt")
        .unwrap()
        .create(1, None)
        .await
        .unwrap();

    let mut pages = Vec::new();
    let mut options = ListOptions::default().max_results(2);
    loop {
        let page = dir.list(&options).await.unwrap();
        assert!(page.items.len() <= 2);
        pages.push(page.items.clone());
        match page.next_marker {
            Some(m) => options = options.marker(m),
            None => break,
        }
    }
    assert_eq!(pages.len(), 3, "{pages:?}");
    let all: Vec<ListItem> = pages.concat();
    assert_eq!(
        all,
        vec![
            ListItem::File {
                name: "a.txt".into(),
                size: 1
            },
            ListItem::File {
                name: "b.txt".into(),
                size: 2
            },
            ListItem::File {
                name: "c.txt".into(),
                size: 3
            },
            ListItem::Directory { name: "d1".into() },
            ListItem::Directory { name: "d2".into() },
            ListItem::File {
                name: "skip.log".into(),
                size: 4
            },
        ]
    );
    assert_eq!(dir.list_all(None).await.unwrap(), all);
    let txt: Vec<String> = dir
        .list_all(Some("b"))
        .await
        .unwrap()
        .iter()
        .map(|i| i.name().to_string())
        .collect();
    assert_eq!(txt, vec!["b.txt"]);
    let root: Vec<String> = share
        .root()
        .list_all(None)
        .await
        .unwrap()
        .iter()
        .map(|i| i.name().to_string())
        .collect();
    assert_eq!(root, vec!["inbox"]);

    // A directory with content cannot be deleted.
    let err = dir.delete().await.unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(
        err.error_code().map(|c| c.as_str()),
        Some("DirectoryNotEmpty")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shares_and_directories() {
    let server = FileServer::start().await;
    let service = ShareServiceClient::new(&server.account()).unwrap();
    let share = service.share(&support::unique("share")).unwrap();
    let meta = BTreeMap::from([("k".to_string(), "v".to_string())]);
    share
        .create_with(
            &azstore::file::ShareOptions::default()
                .metadata(meta.clone())
                .quota_gib(5),
        )
        .await
        .unwrap();
    assert!(!share.create_if_not_exists().await.unwrap());
    let p = share.get_properties().await.unwrap();
    assert_eq!(p.metadata, meta);
    assert_eq!(p.quota_gib, Some(5));
    let meta2 = BTreeMap::from([("k".to_string(), "w".to_string())]);
    let w = share.set_metadata(&meta2).await.unwrap();
    let p2 = share.get_properties().await.unwrap();
    assert_eq!(p2.metadata, meta2);
    assert_eq!(p2.etag, w.etag);
    assert_ne!(p2.etag, p.etag);

    let dir = share.directory("a").unwrap();
    assert!(dir.create_if_not_exists().await.unwrap());
    assert!(!dir.create_if_not_exists().await.unwrap());
    let err = share.directory("x/y").unwrap().create().await.unwrap_err();
    assert!(err.is_not_found());
    assert_eq!(err.error_code().map(|c| c.as_str()), Some("ParentNotFound"));
    dir.set_metadata(&meta).await.unwrap();
    assert_eq!(dir.get_properties().await.unwrap().metadata, meta);
    dir.delete().await.unwrap();
    assert!(dir.get_properties().await.unwrap_err().is_not_found());

    share.delete(None).await.unwrap();
    assert!(share.get_properties().await.unwrap_err().is_not_found());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_is_refused_before_sending() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("f.bin").unwrap();
    file.create(8 * 1024 * 1024, None).await.unwrap();
    let before = server.request_count();

    // A range over 4 MiB: refused by put_range (upload splits it instead).
    let big = Bytes::from(vec![1u8; 4 * 1024 * 1024 + 1]);
    let err = file.put_range(0, big.clone(), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.message().contains("4 MiB"), "{err}");
    let err = file.put_range(0, Bytes::new(), None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    for bad in [0, 4 * 1024 * 1024 + 1] {
        let err = file
            .upload(
                big.clone(),
                &TransferOptions::default().range_size(bad),
                None,
            )
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
    }
    let err = file.clear_range(10..10, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = share
        .root()
        .list(&ListOptions::default().max_results(0))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.request_count(), before, "nothing was sent");

    // Names.
    let service = ShareServiceClient::new(&server.account()).unwrap();
    for bad in ["ab", "Upper", "a--b", "-a-"] {
        assert_eq!(
            service.share(bad).unwrap_err().kind(),
            ErrorKind::InvalidInput
        );
    }
    for bad in ["", "a/", "a//b", "a:b", "x/..", "tail.", "a\u{7}"] {
        assert_eq!(
            share.file(bad).unwrap_err().kind(),
            ErrorKind::InvalidInput,
            "{bad:?}"
        );
    }
    assert_eq!(
        share.root().file("a/b").unwrap_err().kind(),
        ErrorKind::InvalidInput,
        "one component only"
    );
    assert_eq!(
        share.root().delete().await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );

    // The upload helper splits what put_range refuses.
    file.upload(big.clone(), &TransferOptions::default(), None)
        .await
        .unwrap();
    assert_eq!(
        server.file_content(share.name(), "f.bin").as_deref(),
        Some(&big[..])
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wrong_key_is_an_auth_error() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let wrong = azstore::StorageAccount::new("devstoreaccount1", "d3Jvbmcga2V5")
        .unwrap()
        .with_endpoint(azstore::Service::File, &server.endpoint())
        .unwrap();
    let other = ShareServiceClient::new(&wrong)
        .unwrap()
        .share(share.name())
        .unwrap();
    let err = other.get_properties().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert_eq!(err.status(), Some(403));
    // An emulator account without a File endpoint: a clear error, not a panic.
    let ports = azstore::EmulatorPorts {
        file: None,
        ..Default::default()
    };
    let dev = azstore::StorageAccount::emulator("127.0.0.1", ports).unwrap();
    assert_eq!(
        ShareServiceClient::new(&dev).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_responses_are_errors_not_panics() {
    use support::scripted::{Reply, Scripted};
    let server = Scripted::start(vec![
        // A listing that is not XML.
        Reply::with(
            200,
            &[("content-type", "application/xml")],
            b"<EnumerationResults><Entries><File>",
        ),
        // File properties without an ETag.
        Reply::with(200, &[("content-length", "5")], b""),
        // A download whose range body is shorter than asked.
        Reply::with(
            206,
            &[("etag", "\"1\""), ("content-range", "bytes 0-9/10")],
            b"abc",
        ),
    ])
    .await;
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share("any")
        .unwrap();
    let err = share
        .root()
        .list(&ListOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    let file = share.file("f").unwrap();
    let err = file.get_properties().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    assert!(err.message().contains("etag"), "{err}");
    let err = file
        .download(&TransferOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn download_refuses_a_file_changed_mid_way() {
    // Scripted answers: the first range comes from version "1", the second from version "2"
    // (someone wrote in between; the File service has no If-Match to prevent that).
    use support::scripted::{Reply, Scripted};
    let server = Scripted::start(vec![
        Reply::with(
            206,
            &[("etag", "\"1\""), ("content-range", "bytes 0-1/3")],
            b"ol",
        ),
        Reply::with(
            206,
            &[("etag", "\"2\""), ("content-range", "bytes 2-2/3")],
            b"w",
        ),
    ])
    .await;
    let file = ShareServiceClient::new(&server.account())
        .unwrap()
        .share("any")
        .unwrap()
        .file("f")
        .unwrap();
    let err = file
        .download(&TransferOptions::default().range_size(2))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.message().contains("changed"), "{err}");
    let sent = server.requests();
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[0].header("x-ms-range"), Some("bytes=0-1"));
    assert_eq!(sent[1].header("x-ms-range"), Some("bytes=2-2"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_being_deleted_is_typed() {
    let server = FileServer::start().await;
    server.set_share_delete_delay(std::time::Duration::from_millis(400));
    let share = share(&server).await;
    share.delete(None).await.unwrap();
    let err = share.create().await.unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert!(err.is_share_being_deleted(), "{err}");
    // Not mistaken for "already exists".
    assert!(
        share
            .create_if_not_exists()
            .await
            .unwrap_err()
            .is_share_being_deleted()
    );
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert!(share.create_if_not_exists().await.unwrap());
}

#[tokio::test]
async fn a_ranged_file_read_keeps_the_stored_md5() {
    let server = FileServer::start().await;
    let share = server.fresh_share("rangemd5").await;
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
    let share = server.fresh_share("rangeurl").await;
    let src = share.file("src.bin").unwrap();
    let data = blob_support::pattern(2048, 9);
    src.create(2048, None).await.unwrap();
    src.put_range(0, data.clone(), None).await.unwrap();
    let dst = share.file("dst.bin").unwrap();
    let written = SmbTime::At(time::macros::datetime!(2019-07-11 21:40:12.9953010 UTC));
    dst.create_with(
        &CreateFileOptions::default()
            .smb(SmbProperties::default().last_write_time(written))
            .size(1024),
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

/// List Directories and Files with extended info (`include=Timestamps,Etag,Attributes,
/// PermissionKey`, `x-ms-file-extended-info: true`), against the local File service, which
/// answers as the REST reference shapes it.
#[tokio::test]
async fn directory_listing_with_extended_info() {
    use azstore::file::{CreateFileOptions, FileAttributes, ListOptions, SmbProperties, SmbTime};
    let server = FileServer::start().await;
    let share = server.fresh_share("extinfo").await;
    let root = share.root();
    share.directory("sub").unwrap().create().await.unwrap();
    let written = time::macros::datetime!(2019-07-11 21:40:12.9953010 UTC);
    let file = share.file("a.txt").unwrap();
    file.create_with(
        &CreateFileOptions::default()
            .smb(
                SmbProperties::default()
                    .attributes(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
                    .last_write_time(SmbTime::At(written)),
            )
            .size(5),
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
