//! BlobLock against Azurite: creation races, fencing tokens, owner identity, waiting, mutual
//! exclusion of 8 contending tasks, loss on break (immediate, and the default that waits out
//! the lease), and bad input refused before sending.

use testkit as support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use azstore::blob::LeaseState;
use azstore::lease::{BreakPeriod, LeaseDuration, LeaseLoss, ReleaseOutcome};
use azstore::lock::{BlobLock, LockOptions};
use azstore::{Conditions, ErrorCode, ErrorKind, blob::BlobServiceClient, blob::ContainerClient};
use support::scripted::{Reply, Scripted};

fn fresh_container(prefix: &str) -> ContainerClient {
    BlobServiceClient::new(&support::account())
        .unwrap()
        .container(&support::unique(prefix))
        .unwrap()
}

fn opts() -> LockOptions {
    LockOptions::default().duration(LeaseDuration::seconds(15).unwrap())
}

#[tokio::test]
async fn creates_what_is_missing_and_increments_the_fencing_token() {
    let c = fresh_container("lockfence");
    // Neither the container nor the blob exists yet.
    let lock =
        BlobLock::with_options(c.clone(), "locks/nightly", opts().label("nightly job")).unwrap();
    let status = lock.status().await.unwrap();
    assert!(!status.exists);
    assert!(!status.is_locked());

    let mut tokens = Vec::new();
    for _ in 0..3 {
        let held = lock.try_acquire().await.unwrap().expect("free lock");
        tokens.push(held.fencing_token());
        let status = lock.status().await.unwrap();
        assert!(status.is_locked());
        assert_eq!(status.lease_state, Some(LeaseState::Leased));
        assert_eq!(status.fencing_token, Some(held.fencing_token()));
        let owner = status.owner.unwrap();
        assert_eq!(owner.pid, Some(std::process::id()));
        assert_eq!(owner.label.as_deref(), Some("nightly job"));
        assert!(!owner.host.is_empty());
        assert!(owner.acquired_at.is_some());
        // A second acquirer is turned away while it is held.
        let other = BlobLock::with_options(c.clone(), "locks/nightly", opts()).unwrap();
        assert!(other.try_acquire().await.unwrap().is_none());
        assert_eq!(held.release().await.unwrap(), ReleaseOutcome::Released);
    }
    assert_eq!(tokens, vec![1, 2, 3]);
    let status = lock.status().await.unwrap();
    assert!(!status.is_locked());
    assert_eq!(status.fencing_token, Some(3));
}

#[tokio::test]
async fn concurrent_first_acquires_tolerate_the_creation_races() {
    let c = fresh_container("lockrace");
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let lock = BlobLock::with_options(c.clone(), "race", opts()).unwrap();
        tasks.push(tokio::spawn(async move { lock.try_acquire().await }));
    }
    let mut held = Vec::new();
    for t in tasks {
        if let Some(h) = t
            .await
            .unwrap()
            .expect("no creation race may surface as an error")
        {
            held.push(h);
        }
    }
    assert_eq!(held.len(), 1, "exactly one winner");
    assert_eq!(held[0].fencing_token(), 1);
}

#[tokio::test]
async fn acquire_times_out_and_then_waits_for_a_release() {
    let c = fresh_container("lockwait");
    let lock = BlobLock::with_options(c.clone(), "l", opts()).unwrap();
    let held = lock.try_acquire().await.unwrap().unwrap();

    let waiter = BlobLock::with_options(c.clone(), "l", opts().local_wakeup(false)).unwrap();
    let t = Instant::now();
    assert!(
        waiter
            .acquire_within(Duration::from_millis(800))
            .await
            .unwrap()
            .is_none()
    );
    let waited = t.elapsed();
    assert!(waited >= Duration::from_millis(800), "{waited:?}");
    assert!(waited < Duration::from_secs(3), "{waited:?}");

    let w = tokio::spawn(async move { waiter.acquire_within(Duration::from_secs(20)).await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    let released_at = Instant::now();
    held.release().await.unwrap();
    let next = w.await.unwrap().unwrap().expect("acquired after release");
    // Polling (no local wake-up) picks the release up within the 800 ms poll ceiling.
    assert!(released_at.elapsed() < Duration::from_secs(2));
    assert_eq!(next.fencing_token(), 2);
}

/// (enter, exit, fencing token, task).
type Section = (Instant, Instant, u64, usize);

/// 8 tasks x 3 rounds; every critical section records its enter and exit. No two sections
/// overlap, every task gets the lock every round, and fencing tokens grow in entry order.
async fn mutual_exclusion(local_wakeup: bool) {
    let c = fresh_container("lockmx");
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let lock =
            BlobLock::with_options(c.clone(), "mx", opts().local_wakeup(local_wakeup)).unwrap();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                let held = lock
                    .acquire_within(Duration::from_secs(60))
                    .await
                    .unwrap()
                    .expect("every contender eventually gets the lock");
                let enter = Instant::now();
                tokio::time::sleep(Duration::from_millis(20)).await;
                held.check().unwrap();
                let exit = Instant::now();
                log.lock()
                    .unwrap()
                    .push((enter, exit, held.fencing_token(), i));
                held.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let mut log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 24);
    log.sort_by_key(|e| e.0);
    for pair in log.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "critical sections overlap: {pair:?}"
        );
        assert!(pair[1].2 > pair[0].2, "fencing tokens must grow: {pair:?}");
    }
    for i in 0..8 {
        assert_eq!(log.iter().filter(|e| e.3 == i).count(), 3, "task {i}");
    }
}

#[tokio::test]
async fn eight_tasks_are_mutually_exclusive_polling_only() {
    mutual_exclusion(false).await;
}

#[tokio::test]
async fn eight_tasks_are_mutually_exclusive_with_local_wakeup() {
    mutual_exclusion(true).await;
}

#[tokio::test]
async fn a_broken_lock_is_reported_lost_and_its_fenced_writes_refused() {
    let c = fresh_container("lockbrk");
    let lock = BlobLock::with_options(c.clone(), "l", opts()).unwrap();
    let held = lock.try_acquire().await.unwrap().unwrap();
    let stale = held.lease_id().clone();
    let b = lock
        .break_lock(Some(BreakPeriod::immediate()))
        .await
        .unwrap();
    assert_eq!(b.remaining, Duration::ZERO);
    let loss = tokio::time::timeout(Duration::from_secs(7), held.lost())
        .await
        .expect("loss within one renew interval");
    assert!(matches!(loss, LeaseLoss::Refused { .. }), "{loss:?}");
    let next = lock
        .try_acquire()
        .await
        .unwrap()
        .expect("broken lock is free");
    assert_eq!(next.fencing_token(), held.fencing_token() + 1);
    // The old holder's write to the lock blob carries its lease id and is refused.
    let err = lock
        .blob()
        .upload("", &Conditions::lease(&stale))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Lease, "{err}");
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithBlobOperation)
    );
    assert!(matches!(
        held.release().await.unwrap(),
        ReleaseOutcome::AlreadyGone { .. }
    ));
    assert!(next.is_held());
}

#[tokio::test]
async fn the_default_break_lets_the_holder_notice_before_anyone_else_can_acquire() {
    let c = fresh_container("lockbrkdef");
    let lock = BlobLock::with_options(c.clone(), "l", opts()).unwrap();
    let held = lock.try_acquire().await.unwrap().unwrap();
    let broke = Instant::now();
    let b = lock.break_lock(None).await.unwrap();
    // The rest of the 15 s lease (renewed every 5 s): longer than the holder needs to notice.
    assert!(b.remaining >= Duration::from_secs(9), "{b:?}");
    let loss = tokio::time::timeout(Duration::from_secs(7), held.lost())
        .await
        .expect("loss within one renew interval");
    let noticed = broke.elapsed();
    assert!(matches!(loss, LeaseLoss::Refused { .. }), "{loss:?}");
    // When the holder learns of the loss, nobody else has the lock yet.
    assert!(noticed < b.remaining, "{noticed:?} {b:?}");
    assert!(
        lock.try_acquire().await.unwrap().is_none(),
        "still breaking"
    );
    assert_eq!(
        lock.status().await.unwrap().lease_state,
        Some(LeaseState::Breaking)
    );
    // The holder's release (what azlock does after stopping its command) frees it at once.
    held.release().await.unwrap();
    let next = lock.try_acquire().await.unwrap().expect("released");
    assert_eq!(next.fencing_token(), 2);
    next.release().await.unwrap();
}

#[tokio::test]
async fn bad_input_is_refused_before_sending() {
    let server = Scripted::start(vec![Reply::status(500)]).await;
    let c = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("locks")
        .unwrap();
    for name in ["", "locks/", "ends.with.dot.", "bad\u{1}char"] {
        let err = BlobLock::new(c.clone(), name).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{name:?}");
    }
    let err = BlobLock::with_options(c.clone(), "l", LockOptions::default().label("two\nlines"))
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = BlobLock::with_options(
        c.clone(),
        "l",
        LockOptions::default().poll_interval(Duration::from_millis(500), Duration::from_millis(10)),
    )
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert!(LeaseDuration::seconds(14).is_err());
    assert!(LeaseDuration::seconds(61).is_err());
    assert!(BreakPeriod::seconds(61).is_err());
    assert_eq!(server.count(), 0);
}
