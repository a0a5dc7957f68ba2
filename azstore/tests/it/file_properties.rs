//! SMB properties, Set File / Share Properties, share permissions, Copy File and List Shares
//! options, share snapshots and metadata reads, against the local File service
//! (testkit::file_server).

use std::collections::BTreeMap;

use azstore::blob::{Checksum, CopyStatus};
use azstore::file::{
    CopyFileOptions, CreateFileOptions, FileAttributes, FilePermission, ListSharesOptions,
    SetFileProperties, ShareClient, ShareOptions, ShareServiceClient, SmbProperties, SmbTime,
};
use azstore::http_headers::HttpHeaders;
use azstore::{ErrorCode, ErrorKind};
use bytes::Bytes;
use testkit as support;
use testkit::file_server::FileServer;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

const SDDL: &str = "O:BAG:SYD:(A;;FA;;;BA)(A;;0x1200a9;;;WD)";

async fn share(server: &FileServer) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&testkit::unique("props"))
        .unwrap();
    share.create().await.unwrap();
    share
}

fn at(s: &str) -> SmbTime {
    SmbTime::At(OffsetDateTime::parse(s, &Rfc3339).unwrap())
}

#[tokio::test]
async fn smb_properties_are_set_on_create_and_preserved_or_changed_on_set() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("a.txt").unwrap();
    let created = at("2019-07-11T21:40:12.9953010Z");
    let smb = SmbProperties::default()
        .attributes(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
        .creation_time(created)
        .last_write_time(created)
        .permission(FilePermission::Sddl(SDDL.into()));
    file.create_with(&CreateFileOptions::default().smb(smb).size(8))
        .await
        .unwrap();
    let p = file.get_properties().await.unwrap().smb;
    assert_eq!(
        p.attributes,
        Some(FileAttributes::READ_ONLY | FileAttributes::ARCHIVE)
    );
    assert_eq!(p.creation_time, Some(created));
    assert_eq!(p.last_write_time, Some(created));
    let Some(FilePermission::Key(key)) = p.permission.clone() else {
        panic!("no permission key in {p:?}");
    };
    assert_eq!(share.get_permission(&key).await.unwrap(), SDDL);

    // Set with only a new last-write time: everything else is preserved, the change time moves.
    let later = at("2020-01-02T03:04:05.0000001Z");
    file.set_smb_properties(&SmbProperties::default().last_write_time(later), None)
        .await
        .unwrap();
    let q = file.get_properties().await.unwrap().smb;
    assert_eq!(q.last_write_time, Some(later));
    assert_eq!(q.creation_time, Some(created));
    assert_eq!(q.attributes, p.attributes);
    assert_eq!(q.permission, p.permission);
    assert_ne!(q.change_time, p.change_time);

    // Default create: Azure's defaults (Archive, times now, inherited permission).
    let plain = share.file("b.txt").unwrap();
    plain.create(1, None).await.unwrap();
    let d = plain.get_properties().await.unwrap().smb;
    assert_eq!(d.attributes, Some(FileAttributes::ARCHIVE));
    assert!(SmbProperties::time_of(d.creation_time).is_some());
    assert_ne!(d.permission, p.permission);
}

#[tokio::test]
async fn directory_smb_properties_on_create_and_set() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let dir = share.directory("d").unwrap();
    let created = at("2019-07-15T18:59:07.5365640Z");
    dir.create_with(
        &azstore::file::CreateDirectoryOptions::default().smb(
            SmbProperties::default()
                .attributes(FileAttributes::HIDDEN)
                .creation_time(created)
                .clone(),
        ),
    )
    .await
    .unwrap();
    let p = dir.get_properties().await.unwrap().smb;
    assert_eq!(
        p.attributes,
        Some(FileAttributes::HIDDEN | FileAttributes::DIRECTORY)
    );
    assert_eq!(p.creation_time, Some(created));
    dir.set_properties(&SmbProperties::default().preserve_attributes())
        .await
        .unwrap();
    let q = dir.get_properties().await.unwrap().smb;
    assert_eq!(q.attributes, p.attributes);
    assert_eq!(q.creation_time, Some(created));
    dir.set_properties(&SmbProperties::default().attributes(FileAttributes::NONE))
        .await
        .unwrap();
    let r = dir.get_properties().await.unwrap().smb;
    assert_eq!(r.attributes, Some(FileAttributes::DIRECTORY));
}

#[tokio::test]
async fn invalid_smb_input_is_refused_before_sending() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("x").unwrap();
    let before = server.request_count();
    let preserve =
        CreateFileOptions::default().smb(SmbProperties::default().creation_time(SmbTime::Preserve));
    let err = file
        .create_with(&preserve.clone().size(1))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let huge = SmbProperties::default().permission(FilePermission::Sddl("O:".repeat(5000)));
    let err = file.set_smb_properties(&huge, None).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = share.create_permission("").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = share
        .set_properties(&ShareOptions::default().quota_gib(0), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = share
        .set_properties(&ShareOptions::default().enabled_protocols("NFS"), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.request_count(), before, "nothing was sent");
}

#[tokio::test]
async fn share_permissions_by_key() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let key = share.create_permission(SDDL).await.unwrap();
    assert_eq!(share.get_permission(&key).await.unwrap(), SDDL);
    assert_eq!(share.create_permission(SDDL).await.unwrap(), key);
    let err = share.get_permission("123*456").await.unwrap_err();
    assert_eq!(err.status(), Some(404));

    let file = share.file("f").unwrap();
    let by_key = SmbProperties::default().permission(FilePermission::Key(key.clone()));
    file.create_with(&CreateFileOptions::default().smb(by_key).size(1))
        .await
        .unwrap();
    assert_eq!(
        file.get_properties().await.unwrap().smb.permission,
        Some(FilePermission::Key(key))
    );
    let unknown = SmbProperties::default().permission(FilePermission::Key("1*2".into()));
    let err = file.set_smb_properties(&unknown, None).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
}

#[tokio::test]
async fn set_share_properties_and_create_options() {
    let server = FileServer::start().await;
    let service = ShareServiceClient::new(&server.account()).unwrap();
    let share = service.share(&testkit::unique("tier")).unwrap();
    share
        .create_with(
            &ShareOptions::default()
                .quota_gib(5)
                .access_tier("Hot")
                .enabled_protocols("SMB"),
        )
        .await
        .unwrap();
    let p = share.get_properties().await.unwrap();
    assert_eq!(
        (p.quota_gib, p.access_tier.as_deref()),
        (Some(5), Some("Hot"))
    );
    assert_eq!(p.enabled_protocols.as_deref(), Some("SMB"));
    let w = share
        .set_properties(
            &ShareOptions::default().quota_gib(1).access_tier("Cool"),
            None,
        )
        .await
        .unwrap();
    let q = share.get_properties().await.unwrap();
    assert_eq!(
        (q.quota_gib, q.access_tier.as_deref()),
        (Some(1), Some("Cool"))
    );
    assert_eq!(q.etag, w.etag);
    assert_ne!(q.etag, p.etag);
}

#[tokio::test]
async fn set_file_properties_resizes_and_replaces_headers() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("r.bin").unwrap();
    file.create(1024, None).await.unwrap();
    file.put_range_with(0, Bytes::from(vec![7u8; 1024]), Checksum::Md5, None)
        .await
        .unwrap();
    let headers = HttpHeaders::default()
        .content_type("text/plain")
        .content_language("spanish")
        .content_disposition("inline");
    file.set_properties_with(&SetFileProperties::default().headers(headers), None)
        .await
        .unwrap();
    file.resize(5, None).await.unwrap();
    let p = file.get_properties().await.unwrap();
    assert_eq!(p.content_length, 5);
    assert_eq!(p.http_headers.content_language.as_deref(), Some("spanish"));
    assert_eq!(
        p.http_headers.content_disposition.as_deref(),
        Some("inline")
    );
    assert_eq!(p.http_headers.content_type.as_deref(), Some("text/plain"));
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..],
        &[7u8; 5]
    );
}

#[tokio::test]
async fn put_range_with_a_checksum_is_verified_by_the_service() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let file = share.file("c.bin").unwrap();
    file.create(512, None).await.unwrap();
    for checksum in [Checksum::Md5, Checksum::Crc64] {
        file.put_range_with(0, Bytes::from(vec![1u8; 512]), checksum, None)
            .await
            .unwrap();
    }
    // A wrong checksum (as a corrupted body would produce) is the typed integrity error.
    let req = azstore::http::Request::new(
        azstore::http::Method::Put,
        &format!("{}/c.bin", share.name()),
    )
    .query("comp", "range")
    .header("x-ms-range", "bytes=0-2")
    .header("x-ms-write", "update")
    .header("content-md5", azstore::blob::md5_base64(b"abd"))
    .body(Bytes::from_static(b"abc"), "application/octet-stream");
    let err = file.pipeline().send(req).await.unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::Md5Mismatch));
    assert_eq!(err.kind(), ErrorKind::Integrity);
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..3],
        &[1u8; 3]
    );
}

#[tokio::test]
async fn copy_file_with_its_options_and_abort() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let src = share.file("src.txt").unwrap();
    let created = at("2018-01-01T00:00:00.0000000Z");
    let smb = SmbProperties::default()
        .attributes(FileAttributes::HIDDEN)
        .creation_time(created)
        .permission(FilePermission::Sddl(SDDL.into()));
    let meta = BTreeMap::from([("origin".to_string(), "src".to_string())]);
    src.create_with(
        &CreateFileOptions::default()
            .smb(smb)
            .metadata(meta.clone())
            .size(5),
    )
    .await
    .unwrap();
    src.put_range(0, Bytes::from_static(b"hello"), None)
        .await
        .unwrap();
    let src_smb = src.get_properties().await.unwrap().smb;

    let dst = share.file("dst.txt").unwrap();
    let options = CopyFileOptions::default()
        .permission_from_source()
        .attributes_from_source()
        .times_from_source();
    let copy = dst.start_copy(&src.url(), &options).await.unwrap();
    assert_eq!(copy.status, CopyStatus::Success);
    let p = dst.get_properties().await.unwrap();
    assert_eq!(
        &dst.download(&Default::default()).await.unwrap().body[..],
        b"hello"
    );
    assert_eq!(p.metadata, meta, "the source's metadata is copied");
    assert_eq!(p.smb.attributes, src_smb.attributes);
    assert_eq!(p.smb.creation_time, Some(created));
    assert_eq!(p.smb.permission, src_smb.permission);
    let info = p.copy.expect("copy status in the properties");
    assert_eq!(
        (info.id.as_str(), info.status),
        (copy.id.as_str(), CopyStatus::Success)
    );
    assert_eq!(info.progress.as_deref(), Some("5/5"));

    // Nothing pending to abort.
    let err = dst.abort_copy(&copy.id, None).await.unwrap_err();
    assert_eq!(
        err.error_code().map(|c| c.as_str().to_string()).as_deref(),
        Some("NoPendingCopyOperation")
    );

    // A read-only destination needs ignore_read_only.
    dst.set_smb_properties(
        &SmbProperties::default().attributes(FileAttributes::READ_ONLY),
        None,
    )
    .await
    .unwrap();
    let err = dst
        .start_copy(&src.url(), &CopyFileOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    dst.start_copy(
        &src.url(),
        &CopyFileOptions::default()
            .ignore_read_only(true)
            .set_archive(true),
    )
    .await
    .unwrap();
    let p = dst.get_properties().await.unwrap().smb;
    assert_eq!(p.attributes, Some(FileAttributes::ARCHIVE));

    // Conflicting options and a bad source are refused before sending.
    let before = server.request_count();
    let both = CopyFileOptions::default()
        .attributes_from_source()
        .smb(SmbProperties::default().attributes(FileAttributes::NONE));
    assert_eq!(
        dst.start_copy(&src.url(), &both).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        dst.start_copy("not a url", &CopyFileOptions::default())
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(server.request_count(), before);
}

#[tokio::test]
async fn list_shares_with_snapshots_and_tier() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let snap = share.create_snapshot(&BTreeMap::new()).await.unwrap();
    let service = ShareServiceClient::new(&server.account()).unwrap();
    let plain = service
        .list_shares_page(&ListSharesOptions::default().prefix(share.name()), None)
        .await
        .unwrap();
    assert_eq!(plain.shares.len(), 1);
    let all = service
        .list_shares_page(
            &ListSharesOptions::default()
                .prefix(share.name())
                .with_snapshots()
                .with_metadata()
                .with_deleted(),
            None,
        )
        .await
        .unwrap();
    let snapshots: Vec<Option<&str>> = all.shares.iter().map(|s| s.snapshot.as_deref()).collect();
    assert_eq!(snapshots, vec![Some(snap.snapshot.as_str()), None]);
    assert_eq!(
        all.shares[1].access_tier.as_deref(),
        Some("TransactionOptimized")
    );
    assert!(all.shares.iter().all(|s| !s.deleted));
}

#[tokio::test]
async fn directory_listing_streams_across_pages() {
    use futures_util::TryStreamExt;
    let server = FileServer::start().await;
    let share = share(&server).await;
    for i in 0..7 {
        share
            .file(&format!("f{i}"))
            .unwrap()
            .create(i, None)
            .await
            .unwrap();
    }
    share.directory("sub").unwrap().create().await.unwrap();
    let before = server.request_count();
    let names: Vec<String> = share
        .root()
        .list_stream(azstore::file::ListOptions::default().max_results(3))
        .map_ok(|i| i.name().to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(names, ["f0", "f1", "f2", "f3", "f4", "f5", "f6", "sub"]);
    assert_eq!(
        server.request_count() - before,
        3,
        "three pages of at most 3"
    );
}

#[tokio::test]
async fn share_snapshots_list_shares_metadata_and_directory_exists() {
    let server = FileServer::start().await;
    let files = ShareServiceClient::new(&server.account()).unwrap();
    let name = support::unique("snap");
    let share = files.share(&name).unwrap();
    let meta = BTreeMap::from([("kind".to_string(), "original".to_string())]);
    share
        .create_with(
            &azstore::file::ShareOptions::default()
                .metadata(meta.clone())
                .quota_gib(7),
        )
        .await
        .unwrap();

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
