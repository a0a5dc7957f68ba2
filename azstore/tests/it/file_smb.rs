//! SMB handles seen from REST: the test server simulates an SMB client's lock on a path
//! (409 `SharingViolation` / `DeletePending`) until told the handle closed.

use testkit as support;
use testkit::file_server;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azstore::file::{FileClient, ShareServiceClient, SmbConflict, SmbRetry, retry_smb_conflicts};
use azstore::{ErrorKind, http::Jitter, http::RetryPolicy};
use bytes::Bytes;
use file_server::{FileServer, SmbLock};

async fn setup(server: &FileServer) -> (String, FileClient) {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("smb"))
        .unwrap();
    share.create().await.unwrap();
    let file = share.file("shared.xlsx").unwrap();
    file.create(4, None).await.unwrap();
    (format!("{}/shared.xlsx", share.name()), file)
}

fn fast() -> SmbRetry {
    SmbRetry::default().policy(
        RetryPolicy::default()
            .max_retries(50)
            .initial_delay(Duration::from_millis(20))
            .max_delay(Duration::from_millis(100))
            .jitter(Jitter::None)
            .max_elapsed(Some(Duration::from_secs(20))),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sharing_violation_is_typed_and_not_retried_by_the_pipeline() {
    let server = FileServer::start().await;
    let (path, file) = setup(&server).await;
    server.lock(&path, SmbLock::SharingViolation);
    let before = server.request_count();
    let err = file
        .put_range(0, Bytes::from_static(b"data"), None)
        .await
        .unwrap_err();
    assert_eq!(
        server.request_count() - before,
        1,
        "409 is an answer, not retried"
    );
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.kind(), ErrorKind::Conflict);
    assert_eq!(err.smb_conflict(), Some(SmbConflict::SharingViolation));
    assert!(err.is_sharing_violation());
    assert!(!err.is_retryable());
    assert!(
        file.download(&Default::default())
            .await
            .unwrap_err()
            .is_sharing_violation()
    );

    server.lock(&path, SmbLock::DeletePending);
    let err = file.delete(None).await.unwrap_err();
    assert_eq!(err.smb_conflict(), Some(SmbConflict::DeletePending));
    server.unlock(&path);
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..],
        b"\0\0\0\0"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_helper_succeeds_once_the_handle_closes() {
    let server = Arc::new(FileServer::start().await);
    let (path, file) = setup(&server).await;
    server.lock(&path, SmbLock::SharingViolation);
    let attempts = AtomicU32::new(0);
    let closer = {
        let server = server.clone();
        let path = path.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            server.unlock(&path);
        })
    };
    let written = retry_smb_conflicts(&fast(), || {
        attempts.fetch_add(1, Ordering::SeqCst);
        file.put_range(0, Bytes::from_static(b"data"), None)
    })
    .await
    .unwrap();
    closer.await.unwrap();
    assert!(attempts.load(Ordering::SeqCst) > 1, "it had to wait");
    let got = file.download(&Default::default()).await.unwrap();
    assert_eq!(&got.body[..], b"data");
    assert_eq!(got.properties.etag, written.etag);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retry_helper_gives_up_and_leaves_other_errors_alone() {
    let server = FileServer::start().await;
    let (path, file) = setup(&server).await;
    server.lock(&path, SmbLock::FileLockConflict);
    let attempts = AtomicU32::new(0);
    let policy = SmbRetry::default().policy(
        RetryPolicy::default()
            .max_retries(3)
            .initial_delay(Duration::from_millis(5))
            .jitter(Jitter::None),
    );
    let whole = azstore::file::TransferOptions::default();
    let err = retry_smb_conflicts(&policy, || {
        attempts.fetch_add(1, Ordering::SeqCst);
        file.download(&whole)
    })
    .await
    .unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 4);
    assert_eq!(err.smb_conflict(), Some(SmbConflict::FileLockConflict));

    // DeletePending is not waited out unless asked for.
    server.lock(&path, SmbLock::DeletePending);
    attempts.store(0, Ordering::SeqCst);
    let err = retry_smb_conflicts(&policy, || {
        attempts.fetch_add(1, Ordering::SeqCst);
        file.download(&whole)
    })
    .await
    .unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
    assert_eq!(err.smb_conflict(), Some(SmbConflict::DeletePending));
    attempts.store(0, Ordering::SeqCst);
    let _ = retry_smb_conflicts(&policy.clone().delete_pending(true), || {
        attempts.fetch_add(1, Ordering::SeqCst);
        file.download(&whole)
    })
    .await
    .unwrap_err();
    assert_eq!(attempts.load(Ordering::SeqCst), 4);

    // Errors that are not SMB conflicts come back at once.
    server.unlock(&path);
    attempts.store(0, Ordering::SeqCst);
    let err = retry_smb_conflicts(&policy, || {
        attempts.fetch_add(1, Ordering::SeqCst);
        async { file.download_range(100..200).await }
    })
    .await
    .unwrap_err();
    assert_eq!(err.status(), Some(416));
    assert_eq!(attempts.load(Ordering::SeqCst), 1);
}
