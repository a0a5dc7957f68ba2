//! One `BlobWriteOptions` on every blob write: HTTP headers, metadata, index tags (`x-ms-tags`),
//! access tier and encryption scope, on Put Blob, staged uploads (Put Block List), append and
//! page blob creation and Copy Blob — checked against Azurite by reading the blob back.

use testkit::blob as blob_support;

use azstore::blob::{
    AccessTier, CommitOptions, CopyOptions, CreateOptions, PutOptions, Tags, UploadOptions,
};
use azstore::http_headers::HttpHeaders;
use azstore::{Conditions, ErrorKind, blob::BlobClient};

fn expected_headers() -> HttpHeaders {
    HttpHeaders::default()
        .content_type("text/html; charset=utf-8")
        .cache_control("max-age=3600")
        .content_encoding("identity")
        .content_language("de-CH")
        .content_disposition("attachment; filename=\"a.html\"")
}

async fn assert_stored(b: &BlobClient, tags: &[(&str, &str)], tier: Option<AccessTier>) {
    let p = b.get_properties().await.unwrap();
    let mut h = p.http_headers.clone();
    h.content_md5 = None; // the service may store an MD5 of its own
    assert_eq!(h, expected_headers(), "{}", b.name());
    assert_eq!(p.metadata.get("author").map(String::as_str), Some("ada"));
    let want: Tags = tags
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    assert_eq!(b.get_tags().await.unwrap(), want);
    assert_eq!(p.tag_count, Some(want.len() as u64));
    if let Some(t) = tier {
        assert_eq!(p.access_tier, Some(t));
    }
}

#[tokio::test]
async fn put_blob_stores_headers_metadata_tags_and_tier() {
    let c = blob_support::container("wopput").await;
    let b = c.blob("page.html").unwrap();
    let opts = PutOptions::new(Conditions::if_not_exists())
        .http_headers(expected_headers())
        .meta("author", "ada")
        .tag("status", "draft")
        .tag("team name", "a/b+c")
        .tier(AccessTier::Cool);
    b.put("<h1>hi</h1>", &opts).await.unwrap();
    assert_stored(
        &b,
        &[("status", "draft"), ("team name", "a/b+c")],
        Some(AccessTier::Cool),
    )
    .await;
    // The tags written with the blob are usable as a condition at once.
    b.set_metadata(
        &[("author".to_string(), "ada".to_string())].into(),
        &Conditions::if_tags("\"status\" = 'draft'"),
    )
    .await
    .unwrap();
    let e = b
        .put(
            "x",
            &PutOptions::new(Conditions::if_tags("\"status\" = 'done'")),
        )
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
}

#[tokio::test]
async fn staged_upload_commits_the_write_options() {
    let c = blob_support::container("wopstage").await;
    let b = c.blob("big.html").unwrap();
    let body = blob_support::pattern(300_000, 3);
    let opts = UploadOptions::new(Conditions::if_not_exists())
        .single_put_limit(0)
        .block_size(100_000)
        .http_headers(expected_headers())
        .meta("author", "ada")
        .tag("stage", "staged")
        .tier(AccessTier::Cool);
    b.upload_with(body.clone(), &opts).await.unwrap();
    assert_stored(&b, &[("stage", "staged")], Some(AccessTier::Cool)).await;
    let d = b.download().await.unwrap();
    assert_eq!(&d.body[..], &body[..]);

    // Put Block List directly, with the builder methods of CommitOptions.
    let id = azstore::blob::BlockId::new("b0").unwrap();
    b.put_block(&id, "replaced", &Conditions::none())
        .await
        .unwrap();
    let commit = CommitOptions::new(Conditions::if_match(&d.properties.etag))
        .http_headers(expected_headers())
        .meta("author", "ada")
        .tag("stage", "committed");
    b.put_block_list(&[azstore::blob::BlockRef::Latest(id)], &commit)
        .await
        .unwrap();
    assert_stored(&b, &[("stage", "committed")], None).await;
}

#[tokio::test]
async fn append_and_page_blobs_take_the_same_options() {
    let c = blob_support::container("wopkinds").await;
    let opts = CreateOptions::new(Conditions::if_not_exists())
        .http_headers(expected_headers())
        .meta("author", "ada")
        .tag("kind", "log");
    let a = c.blob("log").unwrap();
    a.create_append_blob(&opts).await.unwrap();
    assert_stored(&a, &[("kind", "log")], None).await;
    let p = c.blob("disk").unwrap();
    p.create_page_blob(4096, &opts).await.unwrap();
    assert_stored(&p, &[("kind", "log")], None).await;

    // What an operation cannot take is refused before sending: nothing is created.
    let none = c.blob("never").unwrap();
    let e = none
        .create_append_blob(&CreateOptions::new(Conditions::none()).tier(AccessTier::Hot))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = none
        .create_page_blob(
            512,
            &CreateOptions::new(Conditions::none()).tier(AccessTier::Cool),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    for refused in [
        PutOptions::new(Conditions::none()).tier(AccessTier::Premium(10)),
        PutOptions::new(Conditions::none()).tag("bad;key", "v"),
    ] {
        let e = none.put("x", &refused).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }
    assert!(!none.exists().await.unwrap());
}

#[tokio::test]
async fn copy_sets_tags_tier_and_metadata_but_refuses_headers() {
    let c = blob_support::container("wopcopy").await;
    let src = c.blob("src").unwrap();
    src.put(
        "source",
        &PutOptions::new(Conditions::none())
            .http_headers(expected_headers())
            .meta("author", "ada"),
    )
    .await
    .unwrap();
    let dst = c.blob("dst").unwrap();
    let opts = CopyOptions::new(Conditions::if_not_exists())
        .source_conditions(Conditions::none())
        .meta("author", "ada")
        .tag("copied", "yes")
        .tier(AccessTier::Cool);
    let r = dst.start_copy_from_url(&src.url(), &opts).await.unwrap();
    dst.wait_for_copy(&r.copy_id, std::time::Duration::from_millis(50))
        .await
        .unwrap();
    // The copy carries the source's HTTP headers and the tags and tier asked for.
    assert_stored(&dst, &[("copied", "yes")], Some(AccessTier::Cool)).await;

    let e = dst
        .start_copy_from_url(
            &src.url(),
            &CopyOptions::new(Conditions::none()).content_type("text/plain"),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.message().contains("set_http_headers"), "{e}");
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
