//! The in-memory backend's own rules: what the contract suites do not pin down (the hooks,
//! the clock, lease details). The suites themselves run from `tests/it/contract_*.rs`.

use std::time::Duration;

use super::*;
use crate::ErrorKind;
use crate::RequestSent;
use crate::clock::ManualClock;
use crate::lease::{BreakPeriod, GuardOptions, Leasable, LeaseDuration, LeaseGuard};
use crate::update::{Change, Decision, UpdatePolicy, Versioned, update};

fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}

fn fifteen() -> LeaseDuration {
    LeaseDuration::seconds(15).unwrap()
}

#[tokio::test]
async fn etags_change_on_every_write_and_conditions_are_checked() {
    let store = MemoryStore::new();
    let doc = store.json::<u64>("doc").unwrap();
    let e1 = doc.create(&1, "0000000000000001").await.unwrap();
    let err = doc.create(&9, "0000000000000002").await.unwrap_err();
    assert!(err.is_conflict(), "{err:?}");
    let e2 = doc.replace(&2, &e1, "0000000000000003").await.unwrap();
    assert_ne!(e1, e2);
    let err = doc.replace(&3, &e1, "0000000000000004").await.unwrap_err();
    assert!(err.is_precondition_failed(), "{err:?}");
    let err = doc.delete(&e1).await.unwrap_err();
    assert!(err.is_precondition_failed(), "{err:?}");
    let cur = doc.read().await.unwrap().unwrap();
    assert_eq!(
        (cur.value, cur.etag.clone(), cur.write_id.as_deref()),
        (2, e2.clone(), Some("0000000000000003"))
    );
    doc.delete(&e2).await.unwrap();
    assert!(doc.read().await.unwrap().is_none());
    let err = doc.replace(&3, &e2, "0000000000000005").await.unwrap_err();
    assert!(err.is_not_found(), "{err:?}");
    // A value of another type is an error, not a panic.
    store
        .json::<String>("doc")
        .unwrap()
        .create(&"x".into(), "0000000000000006")
        .await
        .unwrap();
    assert_eq!(doc.read().await.unwrap_err().kind(), ErrorKind::Service);
}

#[tokio::test]
async fn a_lost_reply_applied_and_a_failed_call_did_not() {
    let store = MemoryStore::new();
    let doc = store.json::<u64>("doc").unwrap();
    store.lose_next_reply(Op::Create);
    let err = doc.create(&1, "0000000000000001").await.unwrap_err();
    assert_eq!(
        (err.kind(), err.request_sent()),
        (ErrorKind::Timeout, RequestSent::Maybe)
    );
    assert_eq!(doc.read().await.unwrap().unwrap().value, 1, "applied");
    store.fail_next_call(Op::Write);
    let etag = doc.read().await.unwrap().unwrap().etag;
    let err = doc
        .replace(&2, &etag, "0000000000000002")
        .await
        .unwrap_err();
    assert_eq!(
        (err.kind(), err.request_sent()),
        (ErrorKind::Transport, RequestSent::No)
    );
    assert!(err.is_retryable());
    assert_eq!(doc.read().await.unwrap().unwrap().value, 1, "not applied");
    assert_eq!((store.calls(Op::Create), store.calls(Op::Replace)), (1, 0));
    // update() hands a failed call back (a client's own retries sit below it; nothing
    // applied) and recognises a lost reply as applied.
    let add_one = |n: Option<&u64>| Decision::Write(n.copied().unwrap_or(0) + 1);
    store.fail_next_call(Op::Replace);
    let err = update(&doc, &UpdatePolicy::default(), add_one)
        .await
        .unwrap_err();
    assert_eq!(err.request_sent(), RequestSent::No);
    assert_eq!(doc.read().await.unwrap().unwrap().value, 1);
    store.lose_next_reply(Op::Replace);
    let out = update(&doc, &UpdatePolicy::default(), add_one)
        .await
        .unwrap();
    assert_eq!((out.value, out.change), (Some(2), Change::Replaced));
    assert_eq!(out.recovered_ambiguous, 1);
    assert_eq!(doc.read().await.unwrap().unwrap().value, 2);
    // Unreachable: everything refused until switched back.
    store.set_reachable(false);
    assert_eq!(doc.read().await.unwrap_err().kind(), ErrorKind::Transport);
    store.set_reachable(true);
    assert!(doc.read().await.is_ok());
}

#[tokio::test]
async fn leases_follow_the_blob_rules() {
    let store = MemoryStore::new();
    let (a, b) = (store.lease("l").unwrap(), store.lease("l").unwrap());
    let (ia, ib) = (LeaseId::random(), LeaseId::random());
    a.lease_acquire(fifteen(), &ia).await.unwrap();
    a.lease_acquire(fifteen(), &ia)
        .await
        .expect("repeated by the holder");
    let held = b.lease_acquire(fifteen(), &ib).await.unwrap_err();
    assert_eq!(held.kind(), crate::ErrorKind::LeaseHeld);
    assert!(b.lease_renew(&ib).await.unwrap_err().lease_lost());
    assert!(b.lease_release(&ib).await.unwrap_err().lease_lost());
    // Change keeps the lease under the new id.
    a.lease_change(&ia, &ib).await.unwrap();
    assert_eq!(a.holder(), Some(ib.clone()));
    assert!(a.lease_renew(&ia).await.unwrap_err().lease_lost());
    // A break with a period: held until it ends, renew refused, release still works.
    let broken = b
        .lease_break(Some(BreakPeriod::seconds(10).unwrap()))
        .await
        .unwrap();
    assert_eq!(broken.remaining, secs(10));
    assert!(a.lease_renew(&ib).await.unwrap_err().lease_lost());
    assert!(b.lease_acquire(fifteen(), &ia).await.is_err(), "breaking");
    a.lease_release(&ib).await.unwrap();
    b.lease_acquire(LeaseDuration::Infinite, &ia).await.unwrap();
    // An infinite lease breaks at once by default.
    assert_eq!(a.lease_break(None).await.unwrap().remaining, Duration::ZERO);
    assert!(
        a.lease_break(None).await.unwrap_err().lease_lost(),
        "no lease left"
    );
}

#[tokio::test]
async fn a_manual_clock_expires_leases_and_the_guard_sees_it() {
    let manual = ManualClock::new();
    let store = MemoryStore::with_clock(manual.clock());
    let other = store.lease("l").unwrap();
    let guard = LeaseGuard::acquire_with(
        store.lease("l").unwrap(),
        fifteen(),
        GuardOptions::default().clock(manual.clock()),
    )
    .await
    .unwrap();
    assert!(
        other
            .lease_acquire(fifteen(), &LeaseId::random())
            .await
            .is_err()
    );
    // "The holder was paused for 16 s": the store expired the lease, the guard knows.
    manual.advance(secs(16));
    assert!(!guard.is_held());
    let taken = other
        .lease_acquire(fifteen(), &LeaseId::random())
        .await
        .unwrap();
    assert_ne!(Some(taken.lease_id), Some(guard.lease_id().clone()));
}

#[tokio::test(start_paused = true)]
async fn under_paused_tokio_time_a_guard_renews_and_an_abandoned_lease_expires() {
    let store = MemoryStore::new();
    let other = store.lease("l").unwrap();
    let guard = LeaseGuard::acquire(store.lease("l").unwrap(), fifteen())
        .await
        .unwrap();
    tokio::time::sleep(secs(120)).await; // auto-advanced: the guard renews every 5 s
    assert!(
        guard.is_held() && guard.check().is_ok(),
        "{:?}",
        guard.state()
    );
    assert!(
        other
            .lease_acquire(fifteen(), &LeaseId::random())
            .await
            .is_err()
    );
    std::mem::forget(guard); // a crashed holder: no renew, no release
    tokio::time::advance(secs(16)).await;
    other
        .lease_acquire(fifteen(), &LeaseId::random())
        .await
        .unwrap();
}

#[tokio::test(start_paused = true)]
async fn fencing_tokens_follow_the_lock_formula() {
    let store = MemoryStore::new();
    let lock = store.lock("nightly").unwrap();
    let first = lock.try_acquire().await.unwrap().unwrap();
    let t1 = first.fencing_token();
    assert!(
        t1 >= crate::lock::wall_clock_ms() - 60_000,
        "a clock value: {t1}"
    );
    let status = lock.status().await.unwrap();
    assert!(status.is_locked() && status.fencing_token == Some(t1));
    first.release().await.unwrap();
    let t2 = lock.try_acquire().await.unwrap().unwrap();
    assert_eq!(
        t2.fencing_token(),
        t1 + 1,
        "within the same ms: previous + 1"
    );
    t2.release().await.unwrap();
    tokio::time::advance(secs(5)).await;
    store.remove("nightly");
    assert!(!lock.status().await.unwrap().exists);
    let t3 = lock.try_acquire().await.unwrap().unwrap();
    assert!(t3.fencing_token() >= t1 + 5000, "the clock after a delete");
    t3.release().await.unwrap();
}
