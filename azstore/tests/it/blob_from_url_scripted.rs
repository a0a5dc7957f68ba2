//! Operations Azurite does not implement or does not evaluate, tested for the request azstore
//! sends and the parsing of the service's answers against a scripted server: Put Blob From URL
//! and Put Page From URL (Azurite answers 501), the append-position condition of Seal and the
//! tags condition of Set Blob Tier (Azurite ignores both), the 202 of a rehydrating Set Blob
//! Tier, encryption scopes and Copy Blob's rehydrate/seal options. Error answers are shaped as
//! Azure sends them (XML body with a BOM and `x-ms-error-code`).

use testkit::scripted::{Received, Reply, Scripted};

use azstore::blob::{
    AccessTier, CopyOptions, CopySource, CopyTags, PageWriteOptions, PutFromUrlOptions, PutOptions,
    RehydratePriority, SetTierOptions, SourceAuthorization, TierChange, crc64_base64,
};
use azstore::{Conditions, ETag, ErrorCode, ErrorKind, blob::BlobClient, blob::BlobServiceClient};

const SOURCE: &str =
    "https://src.blob.core.windows.net/c/source.bin?sv=2025-11-05&sr=b&sp=r&sig=SECRETSIG%3D";

fn created(extra: &[(&str, &str)]) -> Reply {
    let mut h = vec![
        ("etag", "\"0x8DA707C178DC7C6\""),
        ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
    ];
    h.extend_from_slice(extra);
    Reply::with(201, &h, b"")
}

async fn blob(server: &Scripted) -> BlobClient {
    // The scripted server is plain HTTP on loopback: a copy source's bearer token goes there
    // only when the caller allows bearer tokens over HTTP to loopback (as for an emulator).
    let options = azstore::http::ClientOptions::default().transport(
        azstore::http::TransportOptions::default().allow_bearer_over_http_to_loopback(true),
    );
    BlobServiceClient::with_options(&server.account(), options)
        .unwrap()
        .container("scripted")
        .unwrap()
        .blob("dst")
        .unwrap()
}

fn only(server: &Scripted, i: usize) -> Received {
    server.requests()[i].clone()
}

#[tokio::test]
async fn put_blob_from_url_sends_source_and_destination_options() {
    let server = Scripted::start(vec![
        created(&[("content-md5", "sQqNsWTgdUEFt6mb5y4/5Q==")]),
        Reply::azure_error(412, "SourceConditionNotMet"),
        Reply::azure_error(409, "BlobAlreadyExists"),
    ])
    .await;
    let b = blob(&server).await;
    let src_etag = ETag::new("\"0x8DA707C177D20AF\"");
    let token = "eyJ0eXAiOiJKV1QiLCJhbGciOiJSUzI1NiJ9.secret-token";
    let source = CopySource::url(SOURCE)
        .unwrap()
        .bearer(SourceAuthorization::bearer(token).unwrap())
        .conditions(Conditions::if_match(&src_etag).and_if_tags("\"ready\" = 'yes'"));
    // Neither the SAS signature nor the token appear in Debug output.
    let shown = format!("{source:?}");
    assert!(
        !shown.contains("SECRETSIG") && !shown.contains("secret-token"),
        "{shown}"
    );

    let opts = PutFromUrlOptions::new(Conditions::if_not_exists())
        .copy_source_properties(false)
        .tags_from(CopyTags::Replace)
        .content_type("application/json")
        .tag("copied", "yes")
        .tier(AccessTier::Cool)
        .encryption_scope("scope-1");
    let w = b.put_blob_from_url(&source, &opts).await.unwrap();
    assert_eq!(w.etag.as_str(), "\"0x8DA707C178DC7C6\"");
    let r = only(&server, 0);
    assert_eq!(r.method, "PUT");
    assert!(
        r.target.starts_with("/devstoreaccount1/scripted/dst"),
        "{}",
        r.target
    );
    assert!(!r.target.contains("comp="), "{}", r.target);
    for (h, v) in [
        ("x-ms-blob-type", "BlockBlob"),
        ("x-ms-copy-source", SOURCE),
        (
            "x-ms-copy-source-authorization",
            &format!("Bearer {token}")[..],
        ),
        ("x-ms-source-if-match", "\"0x8DA707C177D20AF\""),
        ("x-ms-source-if-tags", "\"ready\" = 'yes'"),
        ("if-none-match", "*"),
        ("x-ms-copy-source-blob-properties", "false"),
        ("x-ms-copy-source-tag-option", "REPLACE"),
        ("x-ms-blob-content-type", "application/json"),
        ("x-ms-tags", "copied=yes"),
        ("x-ms-access-tier", "Cool"),
        ("x-ms-encryption-scope", "scope-1"),
        ("content-length", "0"),
    ] {
        assert_eq!(r.header(h), Some(v), "{h}");
    }

    let e = b.put_blob_from_url(&source, &opts).await.unwrap_err();
    assert!(e.is_precondition_failed());
    assert_eq!(e.error_code(), Some(&ErrorCode::SourceConditionNotMet));
    assert!(!format!("{e:?}").contains("secret-token"));
    let e = b.put_blob_from_url(&source, &opts).await.unwrap_err();
    assert!(e.is_conflict());
    assert_eq!(e.error_code(), Some(&ErrorCode::BlobAlreadyExists));

    // Refused before sending: a range (Put Blob From URL copies the whole source), explicit
    // tags with the COPY mode.
    let before = server.count();
    let ranged = CopySource::url(SOURCE).unwrap().range(0..10);
    for (s, o) in [
        (&ranged, PutFromUrlOptions::new(Conditions::none())),
        (
            &source,
            PutFromUrlOptions::new(Conditions::none())
                .tags_from(CopyTags::Copy)
                .tag("a", "b"),
        ),
    ] {
        let e = b.put_blob_from_url(s, &o).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(server.count(), before);
}

#[tokio::test]
async fn put_pages_from_url_sends_ranges_and_sequence_conditions() {
    let server = Scripted::start(vec![
        created(&[("x-ms-blob-sequence-number", "7")]),
        Reply::azure_error(412, "SequenceNumberConditionNotMet"),
    ])
    .await;
    let b = blob(&server).await;
    let crc = crc64_base64(&[b'a'; 1024]);
    let source = CopySource::url(SOURCE)
        .unwrap()
        .range(1024..2048)
        .content_crc64(crc.clone())
        .conditions(Conditions::if_none_match(&ETag::new("\"0x1\"")));
    let opts = PageWriteOptions::default()
        .conditions(Conditions::if_tags("\"disk\" = 'a'"))
        .if_sequence_number_eq(7)
        .if_sequence_number_le(9);
    let w = b.put_pages_from_url(512, &source, &opts).await.unwrap();
    assert_eq!(w.sequence_number, Some(7));
    let r = only(&server, 0);
    assert!(r.target.contains("comp=page"), "{}", r.target);
    for (h, v) in [
        ("x-ms-page-write", "update"),
        ("x-ms-range", "bytes=512-1535"),
        ("x-ms-source-range", "bytes=1024-2047"),
        ("x-ms-source-content-crc64", &crc[..]),
        ("x-ms-source-if-none-match", "\"0x1\""),
        ("x-ms-if-tags", "\"disk\" = 'a'"),
        ("x-ms-if-sequence-number-eq", "7"),
        ("x-ms-if-sequence-number-le", "9"),
        ("content-length", "0"),
    ] {
        assert_eq!(r.header(h), Some(v), "{h}");
    }
    assert_eq!(r.header("x-ms-if-sequence-number-lt"), None);
    let e = b.put_pages_from_url(512, &source, &opts).await.unwrap_err();
    assert!(e.is_precondition_failed());
    assert_eq!(
        e.error_code(),
        Some(&ErrorCode::SequenceNumberConditionNotMet)
    );

    // Refused before sending: unaligned offsets or lengths, no range, a body checksum.
    let before = server.count();
    let unaligned = CopySource::url(SOURCE).unwrap().range(0..100);
    let no_range = CopySource::url(SOURCE).unwrap();
    for (offset, s, o) in [
        (100, &source, PageWriteOptions::default()),
        (0, &unaligned, PageWriteOptions::default()),
        (0, &no_range, PageWriteOptions::default()),
        (
            0,
            &source,
            PageWriteOptions::default().checksum(azstore::blob::Checksum::Md5),
        ),
    ] {
        let e = b.put_pages_from_url(offset, s, &o).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    assert_eq!(server.count(), before);
}

#[tokio::test]
async fn seal_sends_the_append_position_condition() {
    let server = Scripted::start(vec![
        Reply::with(
            200,
            &[("etag", "\"0x2\""), ("x-ms-blob-sealed", "true")],
            b"",
        ),
        Reply::azure_error(412, "AppendPositionConditionNotMet"),
    ])
    .await;
    let b = blob(&server).await;
    b.seal(&Conditions::none(), Some(4096)).await.unwrap();
    let r = only(&server, 0);
    assert!(r.target.contains("comp=seal"), "{}", r.target);
    assert_eq!(r.header("x-ms-blob-condition-appendpos"), Some("4096"));
    let e = b.seal(&Conditions::none(), Some(1)).await.unwrap_err();
    assert!(e.is_precondition_failed());
    assert_eq!(
        e.error_code(),
        Some(&ErrorCode::AppendPositionConditionNotMet)
    );
    let e = b
        .seal(&Conditions::if_tags("\"a\" = 'b'"), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn set_tier_tags_condition_and_rehydration() {
    let server = Scripted::start(vec![
        Reply::azure_error(412, "ConditionNotMet"),
        Reply::with(202, &[], b""),
    ])
    .await;
    let b = blob(&server).await;
    let e = b
        .set_tier(
            AccessTier::Cool,
            &SetTierOptions::default().conditions(Conditions::if_tags("\"t\" = '2'")),
        )
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed());
    let r = only(&server, 0);
    assert!(r.target.contains("comp=tier"), "{}", r.target);
    assert_eq!(r.header("x-ms-if-tags"), Some("\"t\" = '2'"));
    assert_eq!(r.header("x-ms-access-tier"), Some("Cool"));
    let change = b
        .set_tier(
            AccessTier::Hot,
            &SetTierOptions::default().rehydrate_priority(RehydratePriority::High),
        )
        .await
        .unwrap();
    assert_eq!(change, TierChange::Pending);
    assert_eq!(
        only(&server, 1).header("x-ms-rehydrate-priority"),
        Some("High")
    );
}

#[tokio::test]
async fn encryption_scope_and_copy_blob_options_reach_the_wire() {
    let server = Scripted::start(vec![
        created(&[("x-ms-encryption-scope", "scope-1")]),
        Reply::with(
            202,
            &[
                ("etag", "\"0x3\""),
                ("x-ms-copy-id", "c0a1b2c3-0000-0000-0000-000000000000"),
                ("x-ms-copy-status", "pending"),
            ],
            b"",
        ),
    ])
    .await;
    let b = blob(&server).await;
    b.put(
        "x",
        &PutOptions::new(Conditions::none()).encryption_scope("scope-1"),
    )
    .await
    .unwrap();
    assert_eq!(
        only(&server, 0).header("x-ms-encryption-scope"),
        Some("scope-1")
    );
    let r = b
        .start_copy_from_url(
            SOURCE,
            &CopyOptions::new(Conditions::none())
                .seal()
                .rehydrate_priority(RehydratePriority::Standard)
                .tier(AccessTier::Hot),
        )
        .await
        .unwrap();
    assert_eq!(r.status, azstore::blob::CopyStatus::Pending);
    let sent = only(&server, 1);
    assert_eq!(sent.header("x-ms-seal-blob"), Some("true"));
    assert_eq!(sent.header("x-ms-rehydrate-priority"), Some("Standard"));
    assert_eq!(sent.header("x-ms-access-tier"), Some("Hot"));
    assert_eq!(sent.header("x-ms-requires-sync"), None);
}

/// `x-ms-source-content-crc64` on Put Blob From URL (which azstore used to refuse), Copy Blob
/// From URL and Append Block From URL, as the REST reference defines them; a mismatch is the
/// service's 400 `Crc64Mismatch`. Azurite answers 501 to Put Blob From URL and does not check
/// a source CRC-64 on the other two, so the answers are scripted.
#[tokio::test]
async fn crc64_source_checks_on_the_from_url_writes() {
    use azstore::blob::{
        AppendOptions, BlobServiceClient, CopyOptions, CopySource, PutFromUrlOptions, crc64_base64,
    };
    use testkit::scripted::{Reply, Scripted};
    let created = Reply::with(
        201,
        &[
            ("etag", "\"0x8DA707C178DC7C6\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
        ],
        b"",
    );
    let copied = Reply::with(
        202,
        &[
            ("etag", "\"0x8DA707C178DC7C7\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:30 GMT"),
            ("x-ms-copy-id", "c0a8e4a6-0000-0000-0000-000000000000"),
            ("x-ms-copy-status", "success"),
        ],
        b"",
    );
    let appended = Reply::with(
        201,
        &[
            ("etag", "\"0x8DA707C178DC7C8\""),
            ("last-modified", "Thu, 28 Jul 2022 09:32:31 GMT"),
            ("x-ms-blob-append-offset", "0"),
            ("x-ms-blob-committed-block-count", "1"),
        ],
        b"",
    );
    let server = Scripted::start(vec![
        created,
        Reply::azure_error(400, "Crc64Mismatch"),
        copied,
        appended,
    ])
    .await;
    let blob = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("scripted")
        .unwrap()
        .blob("dst")
        .unwrap();
    let crc = crc64_base64(b"source bytes");
    let source = CopySource::url(SOURCE).unwrap().content_crc64(crc.clone());
    blob.put_blob_from_url(
        &source,
        &PutFromUrlOptions::new(azstore::Conditions::none()),
    )
    .await
    .unwrap();
    let e = blob
        .put_blob_from_url(
            &source,
            &PutFromUrlOptions::new(azstore::Conditions::none()),
        )
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&azstore::ErrorCode::Crc64Mismatch));
    blob.copy_from_url(
        SOURCE,
        &CopyOptions::new(azstore::Conditions::none()).source_content_crc64(crc.clone()),
    )
    .await
    .unwrap();
    blob.append_block_from_url(&source, &AppendOptions::default())
        .await
        .unwrap();
    let sent = server.requests();
    assert_eq!(sent.len(), 4);
    for r in &sent {
        assert_eq!(r.header("x-ms-source-content-crc64"), Some(crc.as_str()));
        assert_eq!(r.header("x-ms-source-content-md5"), None);
    }
    assert_eq!(sent[2].header("x-ms-requires-sync"), Some("true"));
    assert!(sent[3].target.ends_with("?comp=appendblock"));
    // An MD5 and a CRC-64 together are refused before sending; so is a CRC-64 on the
    // asynchronous Copy Blob (the service checks the source only on a synchronous copy).
    let both = CopyOptions::new(azstore::Conditions::none())
        .source_content_md5(azstore::blob::md5_base64(b"x"))
        .source_content_crc64(crc.clone());
    assert!(blob.copy_from_url(SOURCE, &both).await.is_err());
    let both = source.clone().content_md5(azstore::blob::md5_base64(b"x"));
    assert!(
        blob.append_block_from_url(&both, &AppendOptions::default())
            .await
            .is_err()
    );
    let e = blob
        .start_copy_from_url(
            SOURCE,
            &CopyOptions::new(azstore::Conditions::none()).source_content_crc64(crc),
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 4);
}

/// Incremental Copy Blob (`comp=incrementalcopy`, REST reference): Azurite answers 501, so
/// the service's 202 and its error for a source that is not a snapshot are scripted.
#[tokio::test]
async fn incremental_copy_of_a_page_blob_snapshot() {
    use azstore::blob::{BlobServiceClient, CopyStatus};
    use testkit::scripted::{Reply, Scripted};
    let source = format!("{SOURCE}&snapshot=2026-11-25T07%3A00%3A00.1234567Z");
    let server = Scripted::start(vec![
        Reply::with(
            202,
            &[
                ("etag", "\"0x8DA707C178DC7C6\""),
                ("last-modified", "Thu, 28 Jul 2022 09:32:29 GMT"),
                ("x-ms-copy-id", "8e2a8f3e-0000-0000-0000-000000000001"),
                ("x-ms-copy-status", "pending"),
            ],
            b"",
        ),
        Reply::azure_error(409, "IncrementalCopyBlobMismatch"),
    ])
    .await;
    let backup = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("backups")
        .unwrap()
        .blob("disk")
        .unwrap();
    let etag = azstore::ETag::new("\"0x8DA707C178DC7C5\"");
    let copy = backup
        .start_incremental_copy(&source, &azstore::Conditions::if_match(&etag))
        .await
        .unwrap();
    assert_eq!(copy.status, CopyStatus::Pending);
    assert_eq!(copy.copy_id, "8e2a8f3e-0000-0000-0000-000000000001");
    let e = backup
        .start_incremental_copy(&source, &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409));
    let sent = server.requests();
    assert_eq!(sent[0].method, "PUT");
    assert!(
        sent[0]
            .target
            .ends_with("/backups/disk?comp=incrementalcopy"),
        "{}",
        sent[0].target
    );
    assert_eq!(sent[0].header("x-ms-copy-source"), Some(source.as_str()));
    assert_eq!(sent[0].header("if-match"), Some("\"0x8DA707C178DC7C5\""));
    // Refused before sending: a source that is not a snapshot, a lease id.
    let e = backup
        .start_incremental_copy(SOURCE, &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    let leased = azstore::Conditions::lease(
        &azstore::LeaseId::new("7b1f3a2e-0000-0000-0000-000000000000").unwrap(),
    );
    let e = backup
        .start_incremental_copy(&source, &leased)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 2);
}
