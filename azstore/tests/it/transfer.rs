//! The transfer engine against real servers (Azurite for Blob, the local File server for File):
//! every download mode returns exactly one version even with ranges in parallel while a writer
//! replaces the object, progress adds up to the total, uploads from files and readers keep at
//! most `max_concurrency` blocks in memory, and stream read-ahead is bounded.

use testkit as support;
use testkit::blob as blob_support;

use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use azstore::blob::{BlockListType, DownloadOptions, OnChange, UploadOptions};
use azstore::file::{ShareClient, ShareServiceClient, TransferOptions};
use azstore::transfer::{Progress, TransferProgress};
use azstore::{Conditions, ErrorCode, ErrorKind, blob::BlobClient};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use testkit::file_server::FileServer;
use tokio::io::{AsyncRead, ReadBuf};

/// Records every report; checks that `bytes` never decreases within one run.
fn recorder() -> (Progress, Arc<Mutex<Vec<TransferProgress>>>) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    let p = Progress::callback(move |p| s.lock().unwrap().push(p));
    (p, seen)
}

fn assert_progress(seen: &[TransferProgress], total: u64, reports_at_least: usize) {
    let last = seen.last().expect("progress was reported");
    assert_eq!(last.bytes, total, "{seen:?}");
    assert_eq!(last.total, Some(total));
    assert!(seen.len() >= reports_at_least, "{} reports", seen.len());
    for w in seen.windows(2) {
        assert!(w[1].bytes >= w[0].bytes, "progress went back: {seen:?}");
    }
}

fn temp_dir() -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(support::unique("xfer"));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_blob_download_mode_returns_the_bytes_in_parallel_ranges() {
    let c = blob_support::container("modes").await;
    let b = c.blob("m.bin").unwrap();
    let data = blob_support::pattern(1024 * 1024 + 123, 21);
    let w = b.upload(data.clone(), &Conditions::none()).await.unwrap();
    let chunk = 64 * 1024;
    let ranges = data.len().div_ceil(chunk);
    let opts = |p: Progress| {
        DownloadOptions::default()
            .chunk_size(chunk as u64)
            .max_concurrency(8)
            .progress(p)
    };

    let (p, seen) = recorder();
    let d = b.download_chunked(&opts(p)).await.unwrap();
    assert!(d.body[..] == data[..]);
    assert_eq!(d.properties.etag, w.etag);
    assert_eq!(d.properties.content_length, data.len() as u64);
    assert_progress(&seen.lock().unwrap(), data.len() as u64, ranges);

    let dir = temp_dir();
    let path = dir.join("m.bin");
    let (p, rx) = Progress::channel();
    let props = b.download_to_file(&path, &opts(p)).await.unwrap();
    assert_eq!(props.etag, w.etag);
    assert!(std::fs::read(&path).unwrap() == data);
    assert_eq!(crate::partial_files(&dir), Vec::<String>::new());
    assert_eq!(rx.borrow().bytes, data.len() as u64);
    assert_eq!(rx.borrow().fraction(), Some(1.0));

    let mut buf = vec![0xffu8; data.len() + 10];
    let (p, seen) = recorder();
    let props = b.download_into(&mut buf, &opts(p)).await.unwrap();
    assert_eq!(props.content_length, data.len() as u64);
    assert!(buf[..data.len()] == data[..]);
    assert!(
        buf[data.len()..].iter().all(|&x| x == 0xff),
        "nothing written past the blob"
    );
    assert_progress(&seen.lock().unwrap(), data.len() as u64, ranges);
    let mut small = vec![0u8; data.len() - 1];
    let e = b
        .download_into(&mut small, &DownloadOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");

    let (p, seen) = recorder();
    let s = b.download_stream_with(&opts(p)).await.unwrap();
    assert_eq!(s.properties().etag, w.etag);
    let chunks: Vec<Bytes> = s.try_collect().await.unwrap();
    assert_eq!(chunks.len(), ranges, "in order, one chunk per range");
    assert!(chunks.iter().all(|c| c.len() <= chunk));
    assert!(chunks.concat() == data);
    assert_progress(&seen.lock().unwrap(), data.len() as u64, ranges);

    // An empty blob in every mode.
    let e = c.blob("empty").unwrap();
    e.upload(Bytes::new(), &Conditions::none()).await.unwrap();
    assert!(
        e.download_chunked(&opts(Progress::callback(|_| {})))
            .await
            .unwrap()
            .body
            .is_empty()
    );
    let p = e
        .download_to_file(dir.join("empty"), &DownloadOptions::default())
        .await
        .unwrap();
    assert_eq!(p.content_length, 0);
    assert_eq!(std::fs::metadata(dir.join("empty")).unwrap().len(), 0);
    let s = e
        .download_stream_with(&DownloadOptions::default())
        .await
        .unwrap();
    assert!(s.collect().await.unwrap().is_empty());

    // Bad options are refused before anything is sent.
    for bad in [
        DownloadOptions::default().chunk_size(0),
        DownloadOptions::default().max_concurrency(0),
    ] {
        let e = c
            .blob("never")
            .unwrap()
            .download_chunked(&bad)
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

/// A writer replaces the blob over and over while parallel downloads run: each mode either
/// refuses (OnChange::Fail: PreconditionFailed, no file left behind) or restarts until it
/// has read one version whole — never a mix of two.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn parallel_downloads_under_concurrent_writes_return_one_version() {
    let c = blob_support::container("pwrites").await;
    let b = c.blob("v").unwrap();
    let (versions, writer) =
        blob_support::rewritten_over_time(&b, 6, 256 * 1024, 30, Duration::from_millis(40)).await;
    let one_version = |got: &[u8]| versions.iter().any(|v| v[..] == got[..]);
    let dir = temp_dir();
    let file = dir.join("v.bin");
    let fail = DownloadOptions::default()
        .chunk_size(4096)
        .max_concurrency(6);
    let restart = fail
        .clone()
        .on_change(OnChange::Restart { max_restarts: 1000 });
    let (mut refused, mut rounds) = (0, 0);
    while !writer.is_finished() {
        rounds += 1;
        match b.download_chunked(&fail).await {
            Ok(d) => assert!(one_version(&d.body), "torn read returned"),
            Err(e) => {
                assert!(e.is_precondition_failed(), "{e}");
                assert_eq!(e.error_code(), Some(&ErrorCode::ConditionNotMet));
                refused += 1;
            }
        }
        match b.download_to_file(&file, &fail).await {
            Ok(_) => assert!(one_version(&std::fs::read(&file).unwrap())),
            Err(e) => assert!(e.is_precondition_failed(), "{e}"),
        }
        assert_eq!(
            crate::partial_files(&dir),
            Vec::<String>::new(),
            "no partial file left"
        );

        let d = b.download_chunked(&restart).await.unwrap();
        assert!(one_version(&d.body), "torn read returned");
        let (p, seen) = recorder();
        let props = b
            .download_to_file(&file, &restart.clone().progress(p))
            .await
            .unwrap();
        let on_disk = std::fs::read(&file).unwrap();
        assert!(one_version(&on_disk), "torn file written");
        assert_eq!(props.content_length, on_disk.len() as u64);
        // A restart starts the count over; the last report is the version written.
        assert_eq!(
            seen.lock().unwrap().last().unwrap().bytes,
            props.content_length
        );
        let mut buf = vec![0u8; 256 * 1024];
        b.download_into(&mut buf, &restart).await.unwrap();
        assert!(one_version(&buf), "torn buffer");
        match b.download_stream_with(&fail).await {
            Ok(s) => match s.try_collect::<Vec<Bytes>>().await {
                Ok(chunks) => assert!(one_version(&chunks.concat())),
                Err(e) => assert!(e.is_precondition_failed(), "{e}"),
            },
            Err(e) => panic!("{e}"),
        }
    }
    writer.await.unwrap();
    println!("{rounds} rounds, {refused} refused in fail mode");
    std::fs::remove_dir_all(&dir).unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

/// A reader that counts what it gave and records the largest lead of "read" over
/// "acknowledged by the service" (the bytes the upload holds in memory at most).
struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
    done: Arc<AtomicU64>,
    max_lead: Arc<AtomicU64>,
}

impl<R: AsyncRead + Unpin> AsyncRead for Counting<R> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        let n = (buf.filled().len() - before) as u64;
        let read = self.read.fetch_add(n, Ordering::SeqCst) + n;
        let lead = read - self.done.load(Ordering::SeqCst).min(read);
        self.max_lead.fetch_max(lead, Ordering::SeqCst);
        r
    }
}

fn counting(data: Vec<u8>) -> (Counting<std::io::Cursor<Vec<u8>>>, Progress, Arc<AtomicU64>) {
    let (read, done, max_lead) = (Arc::default(), Arc::new(AtomicU64::new(0)), Arc::default());
    let d = done.clone();
    let progress = Progress::callback(move |p| d.store(p.bytes, Ordering::SeqCst));
    let reader = Counting {
        inner: std::io::Cursor::new(data),
        read,
        done,
        max_lead: Arc::clone(&max_lead),
    };
    (reader, progress, max_lead)
}

async fn committed_blocks(b: &BlobClient) -> usize {
    b.get_block_list(BlockListType::Committed)
        .await
        .unwrap()
        .committed
        .len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blob_uploads_from_files_and_readers_keep_memory_bounded() {
    let c = blob_support::container("upsrc").await;
    let dir = temp_dir();
    let data = blob_support::pattern(5 * 1024 * 1024 + 7, 40);
    let bs = 256 * 1024;
    let conc = 3;

    // From a reader: never more than `max_concurrency` blocks read ahead of the service.
    let b = c.blob("reader.bin").unwrap();
    let (reader, progress, max_lead) = counting(data.clone());
    let opts = UploadOptions::new(Conditions::if_not_exists())
        .block_size(bs)
        .max_concurrency(conc)
        .progress(progress);
    let w = b.upload_reader(reader, &opts).await.unwrap();
    let lead = max_lead.load(Ordering::SeqCst);
    assert!(
        lead <= (conc * bs) as u64,
        "read {lead} bytes ahead of the service; the bound is {}",
        conc * bs
    );
    assert_eq!(committed_blocks(&b).await, data.len().div_ceil(bs));
    let got = b.download().await.unwrap();
    assert_eq!(got.properties.etag, w.etag);
    assert!(got.body[..] == data[..]);
    // The caller's condition is on the commit: create-only refuses now.
    let (reader, progress, _) = counting(data.clone());
    let e = b
        .upload_reader(reader, &opts.clone().progress(progress))
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::BlobAlreadyExists), "{e}");

    // From a file, with progress, and If-Match on the commit.
    let path = dir.join("src.bin");
    std::fs::write(&path, &data).unwrap();
    let (p, seen) = recorder();
    let opts = UploadOptions::new(Conditions::if_match(&w.etag))
        .block_size(bs)
        .max_concurrency(conc)
        .single_put_limit(1024 * 1024)
        .progress(p);
    let w2 = b.upload_file(&path, &opts).await.unwrap();
    assert_ne!(w2.etag, w.etag);
    assert_progress(
        &seen.lock().unwrap(),
        data.len() as u64,
        data.len().div_ceil(bs),
    );
    assert!(b.download().await.unwrap().body[..] == data[..]);
    // Stale If-Match (pre-check off so the blocks are staged): refused at the commit, and
    // the content stays as it was.
    let mut stale = opts.clone();
    stale.precheck = false;
    stale.progress = None;
    let e = b.upload_file(&path, &stale).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert_eq!(b.get_properties().await.unwrap().etag, w2.etag);

    // Small sources are one Put Blob (no blocks).
    let small = c.blob("small").unwrap();
    small
        .upload_reader(&b"abc"[..], &UploadOptions::new(Conditions::none()))
        .await
        .unwrap();
    assert_eq!(committed_blocks(&small).await, 0);
    let small_path = dir.join("small.bin");
    std::fs::write(&small_path, b"hello").unwrap();
    let (p, rx) = Progress::channel();
    small
        .upload_file(
            &small_path,
            &UploadOptions::new(Conditions::none()).progress(p),
        )
        .await
        .unwrap();
    assert_eq!(&small.download().await.unwrap().body[..], b"hello");
    assert_eq!(rx.borrow().total, Some(5));
    assert_eq!(rx.borrow().bytes, 5);
    assert_eq!(committed_blocks(&small).await, 0);
    // Nothing is sent for a missing file.
    let e = small
        .upload_file(dir.join("missing"), &UploadOptions::new(Conditions::none()))
        .await
        .unwrap_err();
    assert_eq!(e.request_sent(), azstore::RequestSent::No, "{e}");

    // upload_stream: pieces of a block or more are sliced, smaller ones gathered.
    let s = c.blob("stream").unwrap();
    let pieces: Vec<azstore::Result<Bytes>> = data
        .chunks(bs + 1000)
        .map(|p| Ok(Bytes::copy_from_slice(p)))
        .collect();
    let (p, seen) = recorder();
    s.upload_stream(
        futures_util::stream::iter(pieces),
        &UploadOptions::new(Conditions::none())
            .block_size(bs)
            .max_concurrency(conc)
            .progress(p),
    )
    .await
    .unwrap();
    assert_eq!(committed_blocks(&s).await, data.len().div_ceil(bs));
    assert!(s.download().await.unwrap().body[..] == data[..]);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen.first().unwrap().total,
        None,
        "length unknown at the start"
    );
    assert_progress(&seen, data.len() as u64, data.len().div_ceil(bs));
    std::fs::remove_dir_all(&dir).unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

async fn share(server: &FileServer) -> ShareClient {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("xfer"))
        .unwrap();
    share.create().await.unwrap();
    share
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_transfers_share_the_engine() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let dir = temp_dir();
    let data = blob_support::pattern(3 * 1024 * 1024 + 99, 50);
    let range = 128 * 1024u64;
    let ranges = (data.len() as u64).div_ceil(range) as usize;
    let opts = TransferOptions::default()
        .range_size(range)
        .max_concurrency(4);

    // Upload from a file path, with progress.
    let path = dir.join("src.bin");
    std::fs::write(&path, &data).unwrap();
    let f = share.file("a.bin").unwrap();
    let (p, seen) = recorder();
    let w = f
        .upload_file(&path, &opts.clone().progress(p), None)
        .await
        .unwrap();
    assert_progress(&seen.lock().unwrap(), data.len() as u64, ranges);
    assert_eq!(
        server.file_content(share.name(), "a.bin").as_deref(),
        Some(&data[..])
    );

    // Every download mode.
    let target = dir.join("a.bin");
    let (p, seen) = recorder();
    let props = f
        .download_to_file(&target, &opts.clone().progress(p))
        .await
        .unwrap();
    assert_eq!(props.etag, w.etag);
    assert!(std::fs::read(&target).unwrap() == data);
    assert_progress(&seen.lock().unwrap(), data.len() as u64, ranges);
    let mut buf = vec![0u8; data.len()];
    f.download_into(&mut buf, &opts).await.unwrap();
    assert!(buf == data);
    assert!(f.download(&opts).await.unwrap().body[..] == data[..]);
    let s = f.download_stream(&opts).await.unwrap();
    let chunks: Vec<Bytes> = s.body.try_collect().await.unwrap();
    assert_eq!(chunks.len(), ranges);
    assert!(chunks.concat() == data);

    // Upload from a reader of a known length; a reader that ends early or runs long is an
    // error.
    let g = share.file("b.bin").unwrap();
    let (reader, progress, max_lead) = counting(data.clone());
    g.upload_reader(
        reader,
        data.len() as u64,
        &opts.clone().progress(progress),
        None,
    )
    .await
    .unwrap();
    assert!(max_lead.load(Ordering::SeqCst) <= 4 * range);
    assert_eq!(
        server.file_content(share.name(), "b.bin").as_deref(),
        Some(&data[..])
    );
    let e = g
        .upload_reader(&data[..1000], 2000, &opts, None)
        .await
        .unwrap_err();
    assert!(e.message().contains("ended after 1000"), "{e}");
    let e = g
        .upload_reader(&data[..3000], 2000, &opts, None)
        .await
        .unwrap_err();
    assert!(e.message().contains("more than"), "{e}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// The ordered stream reads ahead exactly `max_concurrency` ranges: it neither waits for the
/// consumer range by range nor runs ahead without bound.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stream_read_ahead_is_bounded() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let data = blob_support::pattern(40 * 16 * 1024, 60);
    let f = share.file("s.bin").unwrap();
    f.upload(Bytes::from(data.clone()), &TransferOptions::default(), None)
        .await
        .unwrap();
    let max_concurrency = 3;
    let opts = TransferOptions::default()
        .range_size(16 * 1024)
        .max_concurrency(max_concurrency);
    let before = server.request_count();
    let mut s = f.download_stream(&opts).await.unwrap();
    assert_eq!(server.request_count() - before, 1, "the first range only");
    let first = s.body.next().await.unwrap().unwrap();
    let second = s.body.next().await.unwrap().unwrap();
    // The consumer holds two ranges and reads nothing more for a while.
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(
        server.request_count() - before,
        1 + max_concurrency as u64,
        "read ahead: the ranges in the queue, no more"
    );
    let rest: Vec<Bytes> = s.body.try_collect().await.unwrap();
    let all = [vec![first, second], rest].concat().concat();
    assert!(all == data);
    assert_eq!(server.request_count() - before, 40);
}

/// File has no If-Match: a write between two ranges shows as a new ETag on a range, which
/// fails with Conflict or restarts the download on the new content.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_download_restarts_on_change() {
    let server = FileServer::start().await;
    let share = share(&server).await;
    let f = share.file("c.bin").unwrap();
    let size = 512 * 1024;
    f.upload(
        Bytes::from(vec![255u8; size]),
        &TransferOptions::default(),
        None,
    )
    .await
    .unwrap();
    // Each write replaces the whole content with one byte value (one Put Range), so a torn
    // read shows as a body with two values.
    let writer = {
        let f = f.clone();
        tokio::spawn(async move {
            for i in 0..20u8 {
                tokio::time::sleep(Duration::from_millis(15)).await;
                f.put_range(0, Bytes::from(vec![i; size]), None)
                    .await
                    .unwrap();
            }
        })
    };
    let fail = TransferOptions::default()
        .range_size(4096)
        .max_concurrency(4);
    let restart = fail
        .clone()
        .on_change(OnChange::Restart { max_restarts: 1000 });
    let (mut conflicts, mut ok) = (0, 0);
    while !writer.is_finished() {
        match f.download(&fail).await {
            Ok(d) => {
                ok += 1;
                assert!(d.body.iter().all(|&b| b == d.body[0]), "torn read");
            }
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Conflict, "{e}");
                conflicts += 1;
            }
        }
        let d = f.download(&restart).await.unwrap();
        assert_eq!(d.body.len(), size);
        assert!(d.body.iter().all(|&b| b == d.body[0]), "torn read");
    }
    writer.await.unwrap();
    println!("file downloads under writes: {ok} whole, {conflicts} conflicts");
}

#[tokio::test]
async fn a_read_open_at_the_end_returns_the_tail() {
    use azstore::blob::{AppendOptions, CreateOptions};
    let c = blob_support::container("tail").await;
    let log = c.blob("log").unwrap();
    log.create_append_blob(&CreateOptions::new(azstore::Conditions::none()))
        .await
        .unwrap();
    log.append_block(b"hello ".to_vec(), &AppendOptions::default())
        .await
        .unwrap();
    let none = azstore::Conditions::none();
    let first = log.download_from(0, &none).await.unwrap();
    assert_eq!(&first.body[..], b"hello ");
    log.append_block(b"world".to_vec(), &AppendOptions::default())
        .await
        .unwrap();
    let tail = log.download_from(6, &none).await.unwrap();
    assert_eq!(&tail.body[..], b"world");
    assert_eq!(tail.properties.content_length, 11);
    // Pinned to a version: a changed blob is a 412, not a silently different tail.
    let stale = azstore::Conditions::if_match(&first.properties.etag);
    let e = log.download_from(6, &stale).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    // At the end Azure answers 416 InvalidRange; Azurite answers an empty body.
    let at_end = log.download_from(11, &none).await;
    assert!(at_end.is_err() || at_end.unwrap().body.is_empty());

    let server = FileServer::start().await;
    let share = server.fresh_share("tail").await;
    let file = share.file("f").unwrap();
    file.create(10, None).await.unwrap();
    file.put_range(0, b"0123456789".to_vec(), None)
        .await
        .unwrap();
    let tail = file.download_from(7).await.unwrap();
    assert_eq!(&tail.body[..], b"789");
    assert_eq!(tail.properties.content_length, 10);
    assert_eq!(
        file.download_from(10).await.unwrap_err().status(),
        Some(416)
    );
}
