//! What only the blob lock does, against Azurite: it creates the container and the blob,
//! tolerates the creation races, records the owner in metadata, refuses the old holder's
//! writes to the lock blob after a break, lets a holder's release end a break, and refuses bad
//! input before sending. What every lock guarantees is checked by the lock contract suite
//! (`contract_lock.rs`).

use testkit as support;

use std::time::{Duration, Instant};

use azstore::blob::BlobLock;
use azstore::blob::LeaseState;
use azstore::lease::{BreakPeriod, LeaseDuration, LeaseLoss, ReleaseOutcome};
use azstore::lock::LockOptions;
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
async fn creates_what_is_missing_and_records_token_and_owner_in_metadata() {
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
        assert!(status.is_locked() && !status.breaking);
        // The metadata holds what status reports, readable without azstore's lock.
        let props = lock.blob().get_properties().await.unwrap();
        assert_eq!(props.lease_state, Some(LeaseState::Leased));
        assert_eq!(
            props.metadata.get(azstore::blob::META_FENCING_TOKEN),
            Some(&held.fencing_token().to_string())
        );
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
    assert!(tokens.windows(2).all(|w| w[1] > w[0]), "{tokens:?}");
    let status = lock.status().await.unwrap();
    assert!(!status.is_locked());
    assert_eq!(status.fencing_token, tokens.last().copied());
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
    // The first token of a fresh lock is the clock in ms.
    assert!(held[0].fencing_token() > 1_700_000_000_000);
}

#[tokio::test]
async fn after_a_break_the_old_holders_writes_to_the_lock_blob_are_refused() {
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
    assert!(next.fencing_token() > held.fencing_token());
    // The old holder's write to the lock blob carries its lease id and is refused.
    let err = lock
        .blob()
        .upload("", &Conditions::lease(&stale))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
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
async fn a_holders_release_ends_the_default_break_at_once() {
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
    assert!(lock.status().await.unwrap().breaking);
    // The holder's release (what azlock does after stopping its command) frees it at once.
    let held_token = held.fencing_token();
    held.release().await.unwrap();
    let next = lock.try_acquire().await.unwrap().expect("released");
    assert!(next.fencing_token() > held_token);
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
