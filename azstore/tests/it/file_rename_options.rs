//! Rename File / Rename Directory with the metadata and content type the renamed entry gets,
//! and the spelling of the extended listing's `include` values, against the local File
//! service (testkit's FileServer) and a scripted server that records the request.

use testkit as support;
use testkit::file_server::FileServer;
use testkit::scripted::{Reply, Scripted};

use std::collections::BTreeMap;

use azstore::ErrorKind;
use azstore::file::{ListOptions, RenameOptions, ShareClient, ShareServiceClient};
use bytes::Bytes;

async fn share(server: &FileServer) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("renopt"))
        .unwrap();
    share.create().await.unwrap();
    share
}

fn meta(k: &str, v: &str) -> BTreeMap<String, String> {
    BTreeMap::from([(k.to_string(), v.to_string())])
}

#[tokio::test]
async fn rename_sets_metadata_and_content_type_or_keeps_them() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let part = share.file("report.csv.part").unwrap();
    part.upload(Bytes::from_static(b"a,b\n"), &Default::default(), None)
        .await
        .unwrap();
    part.set_metadata(&meta("state", "staged"), None)
        .await
        .unwrap();

    let published = part
        .rename(
            "report.csv",
            &RenameOptions::default()
                .metadata(meta("state", "published"))
                .content_type("text/csv"),
        )
        .await
        .unwrap();
    let p = published.get_properties().await.unwrap();
    assert_eq!(p.metadata, meta("state", "published"));
    assert_eq!(p.http_headers.content_type.as_deref(), Some("text/csv"));

    // Without them, the file keeps its own.
    let kept = published
        .rename("final.csv", &RenameOptions::default())
        .await
        .unwrap();
    let k = kept.get_properties().await.unwrap();
    assert_eq!(k.metadata, meta("state", "published"));
    assert_eq!(k.http_headers.content_type.as_deref(), Some("text/csv"));

    // A directory takes metadata; a content type is refused before sending.
    let dir = share.directory("incoming").unwrap();
    dir.create().await.unwrap();
    let moved = dir
        .rename(
            "archive",
            &RenameOptions::default().metadata(meta("year", "2026")),
        )
        .await
        .unwrap();
    assert_eq!(
        moved.get_properties().await.unwrap().metadata,
        meta("year", "2026")
    );
    let e = moved
        .rename("x", &RenameOptions::default().content_type("text/plain"))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    // Bad metadata names are refused before sending too.
    let e = kept
        .rename(
            "y.csv",
            &RenameOptions::default().metadata(meta("bad name", "v")),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(share.file("y.csv").unwrap().get_properties().await.is_err());
}

/// The service documents the listing's include values as `Timestamps`, `Etag`, `Attributes`,
/// `PermissionKey` (REST reference, List Directories and Files).
#[tokio::test]
async fn the_extended_listing_asks_for_etag_as_the_service_spells_it() {
    let server = Scripted::start(vec![Reply::status(400)]).await;
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share("listing")
        .unwrap();
    let _ = share
        .root()
        .list(&ListOptions::default().extended_info())
        .await
        .unwrap_err();
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    let target = sent[0].target.replace("%2C", ",").replace("%2c", ",");
    assert!(
        target.contains("include=Timestamps,Etag,Attributes,PermissionKey"),
        "{target}"
    );
}

/// Rename File / Rename Directory with SMB properties (`x-ms-file-attributes`, times,
/// permission key; REST reference), against the local File service.
#[tokio::test]
async fn rename_sets_smb_properties() {
    use azstore::file::{FileAttributes, FilePermission, RenameOptions, SmbProperties, SmbTime};
    let server = FileServer::start().await;
    let share = server.fresh_share("renamesmb").await;
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
