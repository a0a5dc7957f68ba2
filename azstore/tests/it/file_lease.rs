//! File and share leases against the in-process File test server.

use testkit as support;
use testkit::file_server;

use std::time::Duration;

use azstore::file::{FileClient, ShareClient, ShareServiceClient};
use azstore::lease::{BreakPeriod, LeaseDuration, LeaseGuard};
use azstore::{ErrorCode, ErrorKind, LeaseId};
use bytes::Bytes;
use file_server::FileServer;

async fn setup(server: &FileServer) -> (ShareClient, FileClient) {
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("lease"))
        .unwrap();
    share.create().await.unwrap();
    let file = share.file("report.txt").unwrap();
    file.create(11, None).await.unwrap();
    file.put_range(0, Bytes::from_static(b"hello world"), None)
        .await
        .unwrap();
    (share, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_lease_guards_writes() {
    let server = FileServer::start().await;
    let (share, file) = setup(&server).await;

    let lease = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    let p = file.get_properties().await.unwrap();
    assert!(p.lease.is_locked());
    assert_eq!(
        p.lease.duration,
        Some(azstore::blob::LeaseDurationType::Infinite)
    );

    // Another writer (no lease id): 412, and the content is untouched.
    let err = file
        .put_range(0, Bytes::from_static(b"HELLO"), None)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.kind(), ErrorKind::LeaseHeld);
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseIdMissing));
    assert!(err.is_file_lease_refusal());
    // A writer with a stale or foreign id: 412 too.
    let err = file
        .put_range(0, Bytes::from_static(b"HELLO"), Some(&LeaseId::random()))
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithFileOperation)
    );
    assert!(err.lease_lost());
    // Metadata, resize, re-create and delete are writes as well.
    let meta = std::collections::BTreeMap::new();
    assert!(
        file.set_metadata(&meta, None)
            .await
            .unwrap_err()
            .is_file_lease_refusal()
    );
    assert!(
        file.set_properties(Some(1), None, None)
            .await
            .unwrap_err()
            .is_file_lease_refusal()
    );
    assert!(
        file.create(1, None)
            .await
            .unwrap_err()
            .is_file_lease_refusal()
    );
    assert!(file.delete(None).await.unwrap_err().is_file_lease_refusal());
    assert_eq!(
        server.file_content(share.name(), "report.txt").as_deref(),
        Some(&b"hello world"[..])
    );
    // Reads stay open to everyone.
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..],
        b"hello world"
    );

    // The holder writes.
    file.put_range(0, Bytes::from_static(b"HELLO"), Some(lease.lease_id()))
        .await
        .unwrap();
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..],
        b"HELLO world"
    );

    // Someone else cannot acquire it.
    let err = file
        .acquire_lease(LeaseDuration::Infinite, None)
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseAlreadyPresent));

    // Break (immediate for files): the old id no longer writes, anyone can acquire again.
    let old = lease.forget().await;
    file.break_lease().await.unwrap();
    let err = file
        .put_range(0, Bytes::from_static(b"x"), Some(&old))
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseNotPresentWithFileOperation)
    );
    file.put_range(0, Bytes::from_static(b"h"), None)
        .await
        .unwrap();
    let again = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    assert_ne!(again.lease_id(), &old);
    assert!(file.get_properties().await.unwrap().lease.is_locked());
    again.release().await.unwrap();
    assert!(!file.get_properties().await.unwrap().lease.is_locked());
    file.delete(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn change_proposed_id_and_release_on_drop() {
    let server = FileServer::start().await;
    let (_share, file) = setup(&server).await;
    let mine = LeaseId::random();
    let lease = file
        .acquire_lease(LeaseDuration::Infinite, Some(&mine))
        .await
        .unwrap();
    let mut lease = LeaseGuard::adopt(
        file.clone(),
        lease.lease_id,
        LeaseDuration::Infinite,
        tokio::time::Instant::now(),
        Default::default(),
    )
    .unwrap();
    assert_eq!(lease.lease_id(), &mine);
    let next = LeaseId::random();
    lease.change(&next).await.unwrap();
    assert_eq!(lease.lease_id(), &next);
    let err = file
        .put_range(0, Bytes::from_static(b"x"), Some(&mine))
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithFileOperation)
    );
    file.put_range(0, Bytes::from_static(b"x"), Some(&next))
        .await
        .unwrap();

    // Dropping the guard releases the lease in the background.
    drop(lease);
    let mut released = false;
    for _ in 0..50 {
        if !file.get_properties().await.unwrap().lease.is_locked() {
            released = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(released, "the dropped guard did not release the lease");
    file.put_range(0, Bytes::from_static(b"y"), None)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_lease_must_be_infinite() {
    let server = FileServer::start().await;
    let (_share, file) = setup(&server).await;
    let before = server.request_count();
    let err = file
        .acquire_lease(LeaseDuration::seconds(30).unwrap(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.message().contains("infinite"), "{err}");
    assert_eq!(server.request_count(), before, "nothing was sent");
    // Out-of-range durations cannot even be built.
    assert_eq!(
        LeaseDuration::seconds(10).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn share_lease_renew_change_break() {
    let server = FileServer::start().await;
    let (share, _file) = setup(&server).await;

    let id = share
        .acquire_lease(LeaseDuration::seconds(15).unwrap(), None)
        .await
        .unwrap()
        .lease_id;
    let p = share.get_properties().await.unwrap();
    assert!(p.lease.is_locked());
    assert_eq!(
        p.lease.duration,
        Some(azstore::blob::LeaseDurationType::Fixed)
    );
    share.renew_lease(&id).await.unwrap();
    let err = share.renew_lease(&LeaseId::random()).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost);
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithLeaseOperation)
    );

    // The lease guards deleting the share.
    let err = share.delete(None).await.unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.kind(), ErrorKind::LeaseHeld);
    let err = share.delete(Some(&LeaseId::random())).await.unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithShareOperation)
    );
    assert!(share.get_properties().await.is_ok());

    let id2 = share
        .change_lease(&id, &LeaseId::random())
        .await
        .unwrap()
        .lease_id;
    assert_ne!(id2, id);
    assert!(share.renew_lease(&id).await.is_err());
    share.renew_lease(&id2).await.unwrap();

    // Break with a period: breaking, not yet acquirable.
    let left = share
        .break_lease(Some(BreakPeriod::seconds(10).unwrap()))
        .await
        .unwrap()
        .remaining;
    assert_eq!(left, Duration::from_secs(10));
    let err = share
        .acquire_lease(LeaseDuration::Infinite, None)
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIsBreakingAndCannotBeAcquired)
    );
    let err = share.renew_lease(&id2).await.unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIsBrokenAndCannotBeRenewed)
    );
    // Releasing a breaking lease frees it at once; an infinite lease then breaks immediately.
    share.release_lease(&id2).await.unwrap();
    let inf = share
        .acquire_lease(LeaseDuration::Infinite, None)
        .await
        .unwrap()
        .lease_id;
    assert_eq!(
        share.break_lease(None).await.unwrap().remaining,
        Duration::ZERO
    );
    assert!(!share.get_properties().await.unwrap().lease.is_locked());
    assert!(share.renew_lease(&inf).await.is_err());
    share.delete(None).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_lease_guard_acquires_and_releases() {
    let server = FileServer::start().await;
    let (_share, file) = setup(&server).await;
    // A fixed duration is refused before anything is sent: file leases are infinite only.
    let before = server.request_count();
    let err = LeaseGuard::acquire(file.clone(), LeaseDuration::seconds(15).unwrap())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(err.message().contains("infinite"), "{err}");
    assert_eq!(server.request_count(), before, "nothing was sent");

    let guard = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    assert!(guard.is_held());
    assert_eq!(
        guard.deadline(),
        None,
        "an infinite lease has no loss deadline"
    );
    assert!(file.get_properties().await.unwrap().lease.is_locked());
    let err = file
        .put_range(0, Bytes::from_static(b"x"), None)
        .await
        .unwrap_err();
    assert!(err.is_file_lease_refusal());
    file.put_range(0, Bytes::from_static(b"x"), Some(guard.lease_id()))
        .await
        .unwrap();
    assert_eq!(
        guard.release().await.unwrap(),
        azstore::lease::ReleaseOutcome::Released
    );
    assert!(!file.get_properties().await.unwrap().lease.is_locked());
    file.put_range(0, Bytes::from_static(b"y"), None)
        .await
        .unwrap();
}

/// Leases on a share snapshot (Lease Share with `sharesnapshot=`, REST reference), against
/// the local File service: the snapshot's lease is its own, independent of the share's, and
/// guards deleting the snapshot.
#[tokio::test]
async fn a_share_snapshot_has_a_lease_of_its_own() {
    use azstore::blob::LeaseState;
    use azstore::lease::LeaseDuration;
    let server = FileServer::start().await;
    let share = server.fresh_share("snaplease").await;
    let snap = share.create_snapshot(&Default::default()).await.unwrap();
    let id = &snap.snapshot;
    let lease = share
        .acquire_snapshot_lease(id, LeaseDuration::Infinite, None)
        .await
        .unwrap();
    let p = share.snapshot_properties(id).await.unwrap();
    assert_eq!(p.lease.state, Some(LeaseState::Leased));
    // The share itself stays unleased.
    assert_ne!(
        share.get_properties().await.unwrap().lease.state,
        Some(LeaseState::Leased)
    );
    // A second acquire is refused; so is deleting the snapshot without the lease.
    let e = share
        .acquire_snapshot_lease(id, LeaseDuration::Infinite, None)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(409), "{e}");
    let e = share.delete_snapshot(id).await.unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    share
        .release_snapshot_lease(id, &lease.lease_id)
        .await
        .unwrap();
    assert_eq!(
        share.snapshot_properties(id).await.unwrap().lease.state,
        Some(LeaseState::Available)
    );
    share.delete_snapshot(id).await.unwrap();
    // A bad snapshot id is refused before sending.
    let e = share
        .acquire_snapshot_lease(
            &azstore::file::SnapshotId::new("not a snapshot"),
            LeaseDuration::Infinite,
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
}
