//! Snapshots and versions are read-only: a `BlobClient` addressed at `snapshot=` or
//! `versionid=` refuses every write with `InvalidInput` before sending, and neither the base
//! blob nor the snapshot changes (Azurite). What the service allows there (reads, Delete,
//! Set Blob Tier, Set Blob Tags on a version) is tested in blob_versions_service.rs.

use std::collections::BTreeMap;

use azstore::blob::{
    AppendOptions, BlobClient, BlockId, BlockRef, CommitOptions, CopyOptions, CopySource,
    CreateOptions, DeleteSnapshots, PageWriteOptions, PutFromUrlOptions, PutOptions,
    SequenceNumberAction, Tags, UploadOptions, VersionId,
};
use azstore::http_headers::HttpHeaders;
use azstore::{Conditions, Error, ErrorKind, RequestSent};
use testkit::blob as blob_support;

fn refused(what: &str, r: Result<impl std::fmt::Debug, Error>) {
    let e = r.expect_err(&format!("{what} was accepted on a snapshot or version"));
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
    assert_eq!(e.request_sent(), RequestSent::No, "{what}: {e}");
    assert!(e.message().contains("read-only"), "{what}: {e}");
}

/// Every write azstore has, on `b` (a snapshot or version client).
async fn every_write_is_refused(b: &BlobClient, source_url: &str) {
    let none = Conditions::none();
    let id = BlockId::numbered("u", 0).unwrap();
    let source = CopySource::url(source_url).unwrap();
    refused("upload", b.upload("x", &none).await);
    let big = vec![0u8; 64];
    let small_blocks = UploadOptions::new(Conditions::none())
        .block_size(16)
        .single_put_limit(16);
    refused("upload_with", b.upload_with(big, &small_blocks).await);
    refused(
        "put",
        b.put("x", &PutOptions::new(Conditions::none())).await,
    );
    refused("put_block", b.put_block(&id, "x", &none).await);
    refused(
        "put_block_list",
        b.put_block_list(
            &[BlockRef::Latest(id.clone())],
            &CommitOptions::new(Conditions::none()),
        )
        .await,
    );
    refused(
        "put_block_from_url",
        b.put_block_from_url(&id, &source, &none).await,
    );
    refused(
        "put_blob_from_url",
        b.put_blob_from_url(&source, &PutFromUrlOptions::new(Conditions::none()))
            .await,
    );
    refused(
        "create_append_blob",
        b.create_append_blob(&CreateOptions::new(Conditions::none()))
            .await,
    );
    refused(
        "append_block",
        b.append_block("x", &AppendOptions::default()).await,
    );
    refused("seal", b.seal(&none, None).await);
    refused(
        "create_page_blob",
        b.create_page_blob(512, &CreateOptions::new(Conditions::none()))
            .await,
    );
    refused("put_pages", b.put_pages(0, vec![0u8; 512], &none).await);
    refused("clear_pages", b.clear_pages(0, 512, &none).await);
    refused(
        "put_pages_from_url",
        b.put_pages_from_url(
            0,
            &source.clone().range(0..512),
            &PageWriteOptions::default(),
        )
        .await,
    );
    refused("resize", b.resize(1024, &none).await);
    refused(
        "set_sequence_number",
        b.set_sequence_number(SequenceNumberAction::Increment, &none)
            .await,
    );
    refused(
        "set_http_headers",
        b.set_http_headers(&HttpHeaders::default().content_type("text/plain"), &none)
            .await,
    );
    let mut md = BTreeMap::new();
    md.insert("k".to_string(), "v".to_string());
    refused("set_metadata", b.set_metadata(&md, &none).await);
    refused("snapshot", b.snapshot(&none).await);
    refused(
        "start_copy_from_url",
        b.start_copy_from_url(source_url, &CopyOptions::new(Conditions::none()))
            .await,
    );
    refused(
        "copy_from_url",
        b.copy_from_url(source_url, &CopyOptions::new(Conditions::none()))
            .await,
    );
    refused("abort_copy", b.abort_copy("copy-id", &none).await);
    refused("undelete", b.undelete().await);
    refused(
        "delete_with(Include)",
        b.delete_with(DeleteSnapshots::Include, &none).await,
    );
    // A snapshot or version cannot be leased (Lease Blob takes neither parameter).
    refused(
        "acquire_lease",
        b.acquire_lease(azstore::lease::LeaseDuration::Infinite, None, &none)
            .await,
    );
}

#[tokio::test]
async fn snapshot_and_version_clients_refuse_writes_and_nothing_changes() {
    let c = blob_support::container("readonly").await;
    let b = c.blob("doc").unwrap();
    b.upload("original", &Conditions::none()).await.unwrap();
    let snap = b.snapshot(&Conditions::none()).await.unwrap();
    let base_before = b.get_properties().await.unwrap();
    let frozen = b.at_snapshot(&snap.snapshot);
    let snap_before = frozen.get_properties().await.unwrap();
    let source = c.blob("src").unwrap();
    source
        .upload(vec![7u8; 512], &Conditions::none())
        .await
        .unwrap();
    let source_url = source.url();

    every_write_is_refused(&frozen, &source_url).await;
    // A snapshot's tags cannot be set (the service takes no snapshot= there).
    refused(
        "set_tags on a snapshot",
        frozen.set_tags(&Tags::new(), &Conditions::none()).await,
    );
    // Versions: refused before sending, whatever the id (Azurite has no versioning; no request
    // goes out, so the id need not exist).
    let version = b.at_version(&VersionId::new("2026-11-22T00:00:00.0000000Z".to_string()));
    every_write_is_refused(&version, &source_url).await;

    // Nothing changed: same ETags, same content, still one snapshot.
    let base_after = b.get_properties().await.unwrap();
    assert_eq!(base_after.etag, base_before.etag);
    assert_eq!(&b.download().await.unwrap().body[..], b"original");
    let snap_after = frozen.get_properties().await.unwrap();
    assert_eq!(snap_after.etag, snap_before.etag);
    assert_eq!(&frozen.download().await.unwrap().body[..], b"original");
    assert!(b.get_metadata().await.unwrap().0.is_empty());

    // Reads and Delete still act on the snapshot.
    frozen.delete(&Conditions::none()).await.unwrap();
    assert!(frozen.download().await.unwrap_err().is_not_found());
    assert!(b.exists().await.unwrap());
}
