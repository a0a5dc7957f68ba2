//! Rename File / Rename Directory and List / Force Close Handles against the local File
//! service (testkit's FileServer), which simulates an SMB client's open handle as a lock on a
//! path.

use testkit as support;
use testkit::file_server::{FileServer, SmbLock};

use std::time::Duration;

use azstore::file::{HandleSelector, RenameOptions, ShareClient, ShareServiceClient, SmbRetry};
use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::{ErrorCode, ErrorKind, http::Jitter, http::RetryPolicy};
use bytes::Bytes;

async fn share(server: &FileServer) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("ren"))
        .unwrap();
    share.create().await.unwrap();
    share
}

#[tokio::test]
async fn rename_file_moves_it_and_respects_replace_and_leases() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    share.directory("in").unwrap().create().await.unwrap();
    share.directory("out").unwrap().create().await.unwrap();
    let part = share.file("in/report.csv.part").unwrap();
    part.upload(Bytes::from_static(b"a,b\n"), &Default::default(), None)
        .await
        .unwrap();

    let published = part
        .rename("out/report.csv", &RenameOptions::default())
        .await
        .unwrap();
    assert_eq!(published.path(), "out/report.csv");
    assert_eq!(
        &published.download(&Default::default()).await.unwrap().body[..],
        b"a,b\n"
    );
    assert!(!part.exists().await.unwrap());

    // An existing destination is kept unless replacing is asked for.
    let next = share.file("in/next.part").unwrap();
    next.upload(Bytes::from_static(b"c,d\n"), &Default::default(), None)
        .await
        .unwrap();
    let e = next
        .rename("out/report.csv", &RenameOptions::default())
        .await
        .unwrap_err();
    assert!(e.is_conflict(), "{e}");
    assert_eq!(e.error_code(), Some(&ErrorCode::ResourceAlreadyExists));
    assert_eq!(
        &published.download(&Default::default()).await.unwrap().body[..],
        b"a,b\n"
    );

    // A leased destination is replaced only with its lease id.
    let lease = LeaseGuard::acquire(published.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    let replace = RenameOptions::default().replace_if_exists(true);
    let e = next.rename("out/report.csv", &replace).await.unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    next.rename(
        "out/report.csv",
        &replace.clone().destination_lease(lease.lease_id()),
    )
    .await
    .unwrap();
    assert_eq!(
        &published.download(&Default::default()).await.unwrap().body[..],
        b"c,d\n"
    );

    // A missing parent, a missing source; bad input is refused before sending.
    let e = published
        .rename("nowhere/x.csv", &RenameOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::ParentNotFound));
    let e = part
        .rename("out/y.csv", &RenameOptions::default())
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    let before = server.request_count();
    for (dest, opts) in [
        ("out/report.csv", RenameOptions::default()),
        ("out/z.csv", RenameOptions::default().ignore_read_only(true)),
    ] {
        let e = published.rename(dest, &opts).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(server.request_count(), before);
}

#[tokio::test]
async fn rename_file_needs_the_source_lease() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let f = share.file("leased.bin").unwrap();
    f.create(3, None).await.unwrap();
    let lease = LeaseGuard::acquire(f.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    let e = f
        .rename("moved.bin", &RenameOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    assert!(f.exists().await.unwrap());
    let moved = f
        .rename(
            "moved.bin",
            &RenameOptions::default().source_lease(lease.lease_id()),
        )
        .await
        .unwrap();
    assert!(moved.exists().await.unwrap());
    assert!(!f.exists().await.unwrap());
}

#[tokio::test]
async fn rename_directory_moves_its_tree() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let d = share.directory("2026").unwrap();
    d.create().await.unwrap();
    d.directory("q4").unwrap().create().await.unwrap();
    d.directory("q4")
        .unwrap()
        .file("a.txt")
        .unwrap()
        .upload(Bytes::from_static(b"A"), &Default::default(), None)
        .await
        .unwrap();
    let archived = d
        .rename("archive-2026", &RenameOptions::default())
        .await
        .unwrap();
    assert_eq!(
        &archived
            .directory("q4")
            .unwrap()
            .file("a.txt")
            .unwrap()
            .download(&Default::default())
            .await
            .unwrap()
            .body[..],
        b"A"
    );
    assert!(d.get_properties().await.unwrap_err().is_not_found());
    let e = share
        .root()
        .rename("x", &RenameOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn force_closing_handles_ends_a_lasting_sharing_violation() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    share.directory("docs").unwrap().create().await.unwrap();
    let f = share.file("docs/book.xlsx").unwrap();
    f.create(4, None).await.unwrap();
    let other = share.file("docs/other.xlsx").unwrap();
    other.create(4, None).await.unwrap();
    server.lock(
        &format!("{}/docs/book.xlsx", share.name()),
        SmbLock::SharingViolation,
    );
    server.lock(
        &format!("{}/docs/other.xlsx", share.name()),
        SmbLock::FileLockConflict,
    );

    // The conflict does not clear by waiting; the exhausted retry says what to do.
    let quick = SmbRetry::default().policy(
        RetryPolicy::default()
            .max_retries(2)
            .initial_delay(Duration::from_millis(10))
            .jitter(Jitter::None),
    );
    let e = azstore::file::retry_smb_conflicts(&quick, || {
        f.put_range(0, Bytes::from_static(b"data"), None)
    })
    .await
    .unwrap_err();
    assert!(e.is_sharing_violation(), "{e}");
    assert!(e.message().contains("force_close_handles"), "{e}");

    let listed = f.list_handles(None).await.unwrap();
    assert_eq!(listed.handles.len(), 1);
    assert_eq!(listed.handles[0].path, "docs/book.xlsx");
    assert_eq!(listed.next_marker, None);
    let all_below = share
        .directory("docs")
        .unwrap()
        .list_handles(true, None)
        .await
        .unwrap();
    assert_eq!(all_below.handles.len(), 2);
    assert!(
        share
            .directory("docs")
            .unwrap()
            .list_handles(false, None)
            .await
            .unwrap()
            .handles
            .is_empty()
    );

    // Close exactly that handle: the file is writable again, the other stays locked.
    let closed = f
        .force_close_handles(&HandleSelector::Id(listed.handles[0].id.clone()))
        .await
        .unwrap();
    assert_eq!((closed.closed, closed.failed), (1, 0));
    f.put_range(0, Bytes::from_static(b"data"), None)
        .await
        .unwrap();
    assert_eq!(
        other
            .put_range(0, Bytes::from_static(b"data"), None)
            .await
            .unwrap_err()
            .error_code(),
        Some(&ErrorCode::FileLockConflict)
    );
    let closed = share
        .directory("docs")
        .unwrap()
        .force_close_handles(&HandleSelector::All, true)
        .await
        .unwrap();
    assert_eq!(closed.closed, 1);
    other
        .put_range(0, Bytes::from_static(b"data"), None)
        .await
        .unwrap();
    let e = f
        .force_close_handles(&HandleSelector::Id(String::new()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn http_headers_on_create_file_and_set_file_properties() {
    use azstore::file::CreateFileOptions;
    use azstore::http_headers::HttpHeaders;
    let server = FileServer::start().await;
    let share = share(&server).await;
    let f = share.file("page.html").unwrap();
    let created = HttpHeaders::default()
        .content_type("text/html")
        .content_encoding("identity")
        .content_language("fr")
        .cache_control("max-age=60")
        .content_disposition("inline")
        .content_md5(azstore::blob::md5_base64(b"<p>"));
    let opts = CreateFileOptions::default().headers(created.clone());
    f.create_with(&opts.clone().size(3)).await.unwrap();
    let p = f.get_properties().await.unwrap();
    assert_eq!(p.http_headers.clone(), created);

    // Set File Properties replaces all of them.
    let replaced = HttpHeaders::default()
        .content_type("text/plain")
        .cache_control("no-store");
    let before = p.etag.clone();
    let w = f.set_http_headers(&replaced, None).await.unwrap();
    assert_ne!(w.etag, before);
    let p = f.get_properties().await.unwrap();
    assert_eq!(p.http_headers.clone(), replaced);

    // A leased file needs the lease id; content type given twice is refused before sending.
    let lease = LeaseGuard::acquire(f.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    let e = f.set_http_headers(&created, None).await.unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    f.set_http_headers(&created, Some(lease.lease_id()))
        .await
        .unwrap();
    let twice = CreateFileOptions::default()
        .content_type("a/b")
        .headers(HttpHeaders::default().content_type("c/d"));
    let e = share
        .file("other")
        .unwrap()
        .create_with(&twice.clone().size(1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn put_range_from_url_copies_a_range_of_another_file() {
    use azstore::blob::{CopySource, crc64_base64};
    let server = FileServer::start().await;
    let share = share(&server).await;
    let src = share.file("src.bin").unwrap();
    let data: Vec<u8> = (0..4096u32).map(|i| (i % 251) as u8).collect();
    src.upload(Bytes::from(data.clone()), &Default::default(), None)
        .await
        .unwrap();
    let dst = share.file("dst.bin").unwrap();
    dst.create(2048, None).await.unwrap();

    let source = CopySource::url(src.url())
        .unwrap()
        .range(1000..2000)
        .content_crc64(crc64_base64(&data[1000..2000]));
    let before = dst.get_properties().await.unwrap().etag;
    let w = dst.put_range_from_url(512, &source, None).await.unwrap();
    assert_ne!(w.etag, before);
    let got = dst.download_range(512..1512).await.unwrap().body;
    assert_eq!(&got[..], &data[1000..2000]);
    assert_eq!(dst.list_ranges(None).await.unwrap().ranges, vec![512..1512]);

    // The service checks the CRC-64 of what it read.
    let wrong = CopySource::url(src.url())
        .unwrap()
        .range(0..10)
        .content_crc64(crc64_base64(b"not these"));
    let e = dst.put_range_from_url(0, &wrong, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Integrity, "{e}");
    assert_eq!(e.error_code(), Some(&ErrorCode::Crc64Mismatch));

    // A leased destination needs the lease id.
    let lease = LeaseGuard::acquire(dst.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    let plain = CopySource::url(src.url()).unwrap().range(0..512);
    let e = dst.put_range_from_url(0, &plain, None).await.unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    dst.put_range_from_url(0, &plain, Some(lease.lease_id()))
        .await
        .unwrap();

    // Refused before sending: ETag conditions, a source MD5, no range, more than 4 MiB.
    let count = server.request_count();
    let etag = dst.get_properties().await.unwrap().etag;
    let after_props = server.request_count();
    assert_eq!(after_props, count + 1);
    for bad in [
        plain
            .clone()
            .conditions(azstore::Conditions::if_match(&etag)),
        plain.clone().content_md5(azstore::blob::md5_base64(b"x")),
        CopySource::url(src.url()).unwrap(),
        CopySource::url(src.url()).unwrap().range(0..(4 << 20) + 1),
    ] {
        let e = dst
            .put_range_from_url(0, &bad, Some(lease.lease_id()))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(server.request_count(), after_props);
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
