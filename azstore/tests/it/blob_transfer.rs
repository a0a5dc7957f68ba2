//! Large transfers: ranged and chunked reads that never return a torn file, and uploads of
//! any size staged in blocks with the caller's condition on the commit.

use testkit as support;
use testkit::blob as blob_support;

use std::time::Duration;

use azstore::blob::{BlockListType, DownloadOptions, OnChange, UploadOptions};
use azstore::{Conditions, ErrorCode, ErrorKind};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};

#[tokio::test]
async fn ranged_get_returns_the_part_and_the_total_size() {
    let c = blob_support::container("range").await;
    let b = c.blob("r").unwrap();
    let data = blob_support::pattern(10_000, 1);
    let w = b.upload(data.clone(), &Conditions::none()).await.unwrap();
    let d = b
        .download_range_if(1000..1500, &Conditions::if_match(&w.etag))
        .await
        .unwrap();
    assert_eq!(&d.body[..], &data[1000..1500]);
    assert_eq!(d.properties.content_length, 10_000);
    assert_eq!(d.properties.etag, w.etag);
    assert_eq!(
        b.download_range(5..5).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // Empty blobs stream as one empty body.
    let e = c.blob("empty").unwrap();
    e.upload(Bytes::new(), &Conditions::none()).await.unwrap();
    let s = e.download_stream(1024).await.unwrap();
    assert_eq!(s.properties().content_length, 0);
    assert!(s.collect().await.unwrap().is_empty());
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn chunked_stream_reads_every_byte_once() {
    let c = blob_support::container("stream").await;
    let b = c.blob("s").unwrap();
    let data = blob_support::pattern(100_003, 2);
    b.upload(data.clone(), &Conditions::none()).await.unwrap();
    let s = b.download_stream(8192).await.unwrap();
    let chunks: Vec<Bytes> = s.try_collect().await.unwrap();
    assert_eq!(chunks.len(), 100_003usize.div_ceil(8192));
    assert!(
        chunks.iter().all(|c| c.len() <= 8192),
        "memory bounded by the chunk size"
    );
    assert_eq!(chunks.concat(), data);
    c.delete(&Conditions::none()).await.unwrap();
}

/// A writer replaces the blob between two ranges of a chunked download: the stream fails with
/// PreconditionFailed instead of returning the start of one version and the end of another.
#[tokio::test]
async fn torn_read_is_refused() {
    let c = blob_support::container("torn").await;
    let b = c.blob("t").unwrap();
    let old = blob_support::pattern(3 * 4096, 3);
    let new = blob_support::pattern(3 * 4096, 4);
    b.upload(old.clone(), &Conditions::none()).await.unwrap();

    let mut s = b.download_stream(4096).await.unwrap();
    let first = s.next().await.unwrap().unwrap();
    assert_eq!(&first[..], &old[..4096]);

    // Another writer replaces the blob mid-download.
    b.upload(new.clone(), &Conditions::none()).await.unwrap();

    let err = s.next().await.unwrap().unwrap_err();
    assert_eq!(err.kind(), ErrorKind::PreconditionFailed, "{err}");
    assert_eq!(err.error_code(), Some(&ErrorCode::ConditionNotMet));
    assert!(
        err.message().contains("changed during a chunked read"),
        "{err}"
    );
    assert!(s.next().await.is_none(), "the stream ends after the error");

    // A fresh chunked read sees only the new version.
    let d = b
        .download_chunked(&DownloadOptions::default().chunk_size(4096))
        .await
        .unwrap();
    assert_eq!(&d.body[..], &new[..]);
    c.delete(&Conditions::none()).await.unwrap();
}

/// Under a writer replacing the blob continuously, a chunked read either fails (OnChange::Fail)
/// or restarts (OnChange::Restart) — and whatever it returns is exactly one version.
#[tokio::test]
async fn chunked_read_under_concurrent_writes_returns_one_version() {
    let c = blob_support::container("restart").await;
    let b = c.blob("r").unwrap();
    let (versions, writer) =
        blob_support::rewritten_over_time(&b, 4, 64 * 1024, 10, Duration::from_millis(15)).await;
    let dir = std::env::temp_dir().join(support::unique("dl"));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("blob.bin");
    let mut failures = 0;
    let mut reads = 0;
    while !writer.is_finished() {
        let opts = DownloadOptions::default().chunk_size(2048);
        match b.download_chunked(&opts).await {
            Ok(d) => {
                reads += 1;
                assert!(
                    versions.iter().any(|v| v[..] == d.body[..]),
                    "torn read returned"
                );
            }
            Err(e) => {
                assert!(e.is_precondition_failed(), "{e}");
                failures += 1;
            }
        }
        let restart = DownloadOptions::default()
            .chunk_size(2048)
            .on_change(OnChange::Restart { max_restarts: 100 });
        let d = b.download_chunked(&restart).await.unwrap();
        assert!(
            versions.iter().any(|v| v[..] == d.body[..]),
            "torn read returned"
        );
        // The same to a file: memory bounded by the chunk, restarted on change, renamed into
        // place only when complete.
        let p = b.download_to_file(&file, &restart).await.unwrap();
        let on_disk = std::fs::read(&file).unwrap();
        assert!(
            versions.iter().any(|v| v[..] == on_disk[..]),
            "torn file written"
        );
        assert_eq!(p.content_length, on_disk.len() as u64);
        assert_eq!(crate::partial_files(&dir), Vec::<String>::new());
    }
    writer.await.unwrap();
    println!("fail-mode reads: {reads} complete, {failures} refused");
    // Fail mode to a file: a change leaves no file behind at all.
    let stale =
        DownloadOptions::default().conditions(Conditions::if_match(&azstore::ETag::new("\"0x1\"")));
    let e = b
        .download_to_file(dir.join("never.bin"), &stale)
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert!(!dir.join("never.bin").exists());
    assert_eq!(crate::partial_files(&dir), Vec::<String>::new());
    std::fs::remove_dir_all(&dir).unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn upload_64_mib_in_blocks_with_if_match_on_the_commit() {
    let c = blob_support::container("big").await;
    let b = c.blob("big.bin").unwrap();
    let v1 = b
        .upload("small original", &Conditions::none())
        .await
        .unwrap();
    let data = Bytes::from(blob_support::pattern(64 * 1024 * 1024, 5));

    let opts = UploadOptions::new(Conditions::if_match(&v1.etag))
        .block_size(8 * 1024 * 1024)
        .max_concurrency(4);
    let w = b.upload_with(data.clone(), &opts).await.unwrap();
    assert_ne!(w.etag, v1.etag);
    let blocks = b.get_block_list(BlockListType::Committed).await.unwrap();
    assert_eq!(blocks.committed.len(), 8, "staged in 8 MiB blocks");
    let got = b
        .download_chunked(&DownloadOptions::default().chunk_size(16 * 1024 * 1024))
        .await
        .unwrap();
    assert_eq!(got.properties.etag, w.etag);
    assert!(got.body == data, "64 MiB round trip");

    // Stale ETag: refused at the commit (pre-check off, so the blocks are staged first), and
    // the content committed above stays intact.
    let other = Bytes::from(blob_support::pattern(40 * 1024 * 1024, 6));
    let mut stale = UploadOptions::new(Conditions::if_match(&v1.etag))
        .block_size(8 * 1024 * 1024)
        .max_concurrency(4);
    stale.precheck = false;
    let e = b.upload_with(other.clone(), &stale).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert_eq!(e.error_code(), Some(&ErrorCode::ConditionNotMet));
    // With the pre-check on, the stale upload is refused before any block is sent.
    stale.precheck = true;
    let e = b.upload_with(other, &stale).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");

    let p = b.get_properties().await.unwrap();
    assert_eq!(p.etag, w.etag, "old content intact");
    assert_eq!(p.content_length, data.len() as u64);
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn upload_stream_and_create_only() {
    let c = blob_support::container("ustream").await;
    let b = c.blob("s").unwrap();
    let data = blob_support::pattern(300_000, 7);
    // Arrives in odd-sized pieces; staged in 64 KiB blocks.
    let pieces = || {
        futures_util::stream::iter(
            data.chunks(7777)
                .map(|p| Ok(Bytes::copy_from_slice(p)))
                .collect::<Vec<azstore::Result<Bytes>>>(),
        )
    };
    let opts = UploadOptions::new(Conditions::if_not_exists())
        .block_size(64 * 1024)
        .single_put_limit(100_000)
        .max_concurrency(2);
    b.upload_stream(pieces(), &opts).await.unwrap();
    let list = b.get_block_list(BlockListType::Committed).await.unwrap();
    assert_eq!(list.committed.len(), 300_000usize.div_ceil(64 * 1024));
    assert_eq!(&b.download().await.unwrap().body[..], &data[..]);
    // Create-only on the commit: the blob exists now.
    let e = b.upload_stream(pieces(), &opts).await.unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::BlobAlreadyExists), "{e}");
    // A short stream is one Put Blob.
    let small = c.blob("small").unwrap();
    small
        .upload_stream(
            futures_util::stream::iter(vec![
                Ok(Bytes::from_static(b"ab")),
                Ok(Bytes::from_static(b"c")),
            ]),
            &UploadOptions::new(Conditions::none()),
        )
        .await
        .unwrap();
    assert_eq!(&small.download().await.unwrap().body[..], b"abc");
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn plain_upload_stages_large_bodies_and_keeps_the_condition() {
    let c = blob_support::container("auto").await;
    let b = c.blob("auto.bin").unwrap();
    let data = Bytes::from(blob_support::pattern(40 * 1024 * 1024, 8));
    b.upload(data.clone(), &Conditions::if_not_exists())
        .await
        .unwrap();
    let blocks = b.get_block_list(BlockListType::Committed).await.unwrap();
    assert_eq!(
        blocks.committed.len(),
        5,
        "40 MiB above the 32 MiB single-put limit"
    );
    let e = b
        .upload(data, &Conditions::if_not_exists())
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::BlobAlreadyExists), "{e}");
    c.delete(&Conditions::none()).await.unwrap();
}
