//! The served store answers as the store: a lost reply is applied and ambiguous, a failed
//! call is neither, every refusal keeps its kind, and a lock's token and lease go both ways.

use azstore::lease::{Leasable, LeaseDuration};
use azstore::lock::{Attempt, Lock, LockClaim, LockOptions, LockOwner, LockTarget};
use azstore::memory::{MemoryStore, Op};
use azstore::update::Versioned;
use azstore::{ErrorKind, LeaseId, RequestSent};

use super::client::{Remote, RemoteJson, RemoteLockTarget};
use super::server::{self, Conn};

#[tokio::test]
async fn a_lost_reply_applied_and_a_failed_call_did_not_and_refusals_keep_their_kind() {
    let store = MemoryStore::new();
    let conn = Conn::new(&store);
    let (addr, task) = server::serve(conn.clone()).await;
    let item = RemoteJson::<u64>::new(Remote::new(&addr.to_string()), "n").unwrap();

    conn.store().fail_next_call(Op::Create);
    let e = item.create(&1, "w1").await.unwrap_err();
    assert_eq!((e.kind(), e.request_sent()), (ErrorKind::Transport, RequestSent::No));
    assert!(item.read().await.unwrap().is_none(), "a failed call applies nothing");

    conn.store().lose_next_reply(Op::Create);
    let e = item.create(&1, "w1").await.unwrap_err();
    assert_eq!((e.kind(), e.request_sent()), (ErrorKind::Timeout, RequestSent::Maybe));
    assert!(e.message().contains("connection closed"), "no answer came: {e}");
    let now = item.read().await.unwrap().expect("a lost reply's call applied");
    assert_eq!((now.value, now.write_id.as_deref()), (1, Some("w1")));

    let e = item.create(&2, "w2").await.unwrap_err();
    assert_eq!((e.kind(), e.request_sent()), (ErrorKind::AlreadyExists, RequestSent::Yes));
    let stale = azstore::ETag::new("\"stale\"");
    let e = item.replace(&2, &stale, "w2").await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::PreconditionFailed);
    let etag = item.replace(&2, &now.etag, "w2").await.unwrap();
    assert_ne!(etag, now.etag);

    conn.store().set_reachable(false);
    let e = item.read().await.unwrap_err();
    assert_eq!((e.kind(), e.request_sent()), (ErrorKind::Transport, RequestSent::No));
    conn.clear();
    assert_eq!(item.read().await.unwrap().map(|c| c.value), Some(2));
    task.abort();
}

#[tokio::test]
async fn a_lock_taken_through_the_server_is_the_stores_and_its_token_grows() {
    let store = MemoryStore::new();
    let (addr, task) = server::serve(Conn::new(&store)).await;
    let target = RemoteLockTarget::new(Remote::new(&addr.to_string()), "jobs").unwrap();
    let options = LockOptions::default().duration(LeaseDuration::seconds(15).unwrap());
    let lock = Lock::from_target(target, options).unwrap();
    let held = lock.try_acquire().await.unwrap().expect("free");
    assert!(store.lease("jobs").unwrap().holder().is_some(), "held in the store");
    assert!(store.lock("jobs").unwrap().try_acquire().await.unwrap().is_none());
    let status = lock.status().await.unwrap();
    assert_eq!(status.fencing_token, Some(held.fencing_token()));
    assert!(status.is_locked());
    let first = held.fencing_token();
    held.release().await.unwrap();
    assert_eq!(store.lease("jobs").unwrap().holder(), None);
    let next = lock.try_acquire().await.unwrap().expect("free again");
    assert!(next.fencing_token() > first);
    // A claim of its own: busy while held, then its lease, renewed by its id alone (the
    // store's refusal, as the store gave it).
    let target = lock.target();
    let claim = LockClaim::new(
        LeaseId::random(),
        LeaseDuration::seconds(15).unwrap(),
        LockOwner::new("h", None, None, None),
    );
    assert!(matches!(target.try_lock(&claim).await.unwrap(), Attempt::Busy));
    next.release().await.unwrap();
    let Attempt::Acquired { lease, .. } = target.try_lock(&claim).await.unwrap() else {
        panic!("free after the release");
    };
    lease.lease_renew(&claim.proposed).await.unwrap();
    let e = lease.lease_renew(&LeaseId::random()).await.unwrap_err();
    assert!(e.lease_lost(), "{e}");
    lease.lease_release(&claim.proposed).await.unwrap();
    assert_eq!(store.lease("jobs").unwrap().holder(), None);
    task.abort();
}
