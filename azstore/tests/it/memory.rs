//! The in-memory backend (`azstore::memory`, feature `testing`) in the contract suites: the
//! fixtures its one line per suite names (in `contract_*.rs` and `leader.rs`), and
//! deliberately broken in-memory adapters that the suites must catch.

use azstore::lock::LockOptions;
use azstore::memory::{MemoryJson, MemoryLease, MemoryLock, MemoryLocks, MemoryStore, Op};
use testkit::contract::versioned::{LoseReply, Write};

/// A fresh store (each test its own).
pub fn store() -> MemoryStore {
    MemoryStore::new()
}

/// The counter of the versioned suite.
pub fn json(store: &MemoryStore) -> MemoryJson<u64> {
    store.json("counter").unwrap()
}

/// The store's own hooks, in the versioned suite's words.
pub struct Writes(pub MemoryStore);

fn op(write: Write) -> Op {
    match write {
        Write::Replace => Op::Replace,
        Write::Create => Op::Create,
    }
}

impl LoseReply for Writes {
    fn lose_next(&self, write: Write) {
        self.0.lose_next_reply(op(write));
    }

    fn sent(&self, write: Write) -> usize {
        self.0.calls(op(write))
    }
}

/// The counter through a connection with a lost reply to come, the same counter through
/// another connection, and the hooks of the first.
pub fn faults() -> (MemoryJson<u64>, MemoryJson<u64>, Writes) {
    let store = store();
    let direct = store.connection();
    (json(&store), json(&direct), Writes(store))
}

/// Two clients of one lease (the guard's and another party's).
pub fn leases() -> (MemoryLease, MemoryLease) {
    let store = store();
    (store.lease("held").unwrap(), store.lease("held").unwrap())
}

pub fn lock(store: &MemoryStore, name: &str, o: LockOptions) -> MemoryLock {
    MemoryLock::with_options(store.clone(), name, o).unwrap()
}

pub fn locks(store: &MemoryStore, o: LockOptions) -> MemoryLocks {
    MemoryLocks::new(store.clone(), o)
}

/// What a time to live does to the lock record.
pub async fn delete(store: &MemoryStore, name: &str) {
    store.remove(name);
}

fn down() -> MemoryStore {
    let store = store();
    store.set_reachable(false);
    store
}

pub fn unreachable(o: LockOptions) -> MemoryLock {
    lock(&down(), "lock", o)
}

pub fn unreachable_locks(o: LockOptions) -> MemoryLocks {
    locks(&down(), o)
}

/// Locks on `name` through a connection of their own, and what cuts it.
pub async fn dying(
    store: &MemoryStore,
    name: &str,
    o: LockOptions,
) -> (impl Fn() -> MemoryLock, impl FnOnce()) {
    let via = store.connection();
    let cut = via.clone();
    let name = name.to_string();
    (
        move || lock(&via, &name, o.clone()),
        move || cut.set_reachable(false),
    )
}

mod broken {
    //! In-memory adapters with one rule broken each: the suites must fail on them.

    use azstore::LeaseId;
    use azstore::lease::{BreakPeriod, LeaseBroken};
    use azstore::lock::{Attempt, Lock, LockClaim, LockStatus, LockTarget, Probe};
    use azstore::memory::MemoryLockTarget;
    use azstore::update::{Current, Versioned};
    use azstore::{ETag, Result};
    use testkit::contract::versioned::Counter;

    use super::*;

    /// A counter whose replace drops the If-Match check: it writes at whatever ETag the item
    /// has now, so a writer that lost a race overwrites the winner.
    struct IgnoresIfMatch(MemoryJson<u64>);

    impl Versioned for IgnoresIfMatch {
        type Value = u64;

        async fn read(&self) -> Result<Option<Current<u64>>> {
            self.0.read().await
        }

        async fn replace(&self, value: &u64, _stale: &ETag, write_id: &str) -> Result<ETag> {
            let now = self.0.read().await?.map(|c| c.etag);
            tokio::task::yield_now().await;
            let etag = now.unwrap_or_else(|| ETag::new("\"absent\""));
            self.0.replace(value, &etag, write_id).await
        }

        async fn create(&self, value: &u64, write_id: &str) -> Result<ETag> {
            self.0.create(value, write_id).await
        }

        async fn delete(&self, etag: &ETag) -> Result<()> {
            self.0.delete(etag).await
        }

        fn stores_write_ids(&self) -> bool {
            true
        }

        fn identity(&self) -> String {
            self.0.identity()
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn contract_versioned_broken_memory_adapter_without_if_match_loses_updates() {
        let store = store();
        let err = testkit::contract::versioned::separate_writers_lose_no_update(
            || IgnoresIfMatch(json(&store)),
            Counter::PLAIN,
        )
        .await
        .expect_err("a replace without If-Match must lose updates");
        // Two writers both "increment" 39 to 40: one increment is lost.
        assert!(
            err.contains("reported written twice") || err.contains("increments: stored"),
            "{err}"
        );
    }

    /// A lock target whose attempt ignores the holder's lease: it breaks whatever lease is
    /// there and takes the lock — a lock that never waits for expiry.
    #[derive(Debug, Clone)]
    struct IgnoresHolder(MemoryLockTarget);

    impl LockTarget for IgnoresHolder {
        type Lease = <MemoryLockTarget as LockTarget>::Lease;

        fn identity(&self) -> String {
            self.0.identity()
        }

        async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<Self::Lease>> {
            match self.0.try_lock(claim).await? {
                Attempt::Busy => {
                    let _ = self.0.break_lease(Some(BreakPeriod::immediate())).await;
                    self.0.try_lock(claim).await
                }
                acquired => Ok(acquired),
            }
        }

        async fn probe(&self) -> Result<Probe> {
            Ok(Probe::Free)
        }

        async fn status(&self) -> Result<LockStatus> {
            self.0.status().await
        }

        async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
            self.0.break_lease(period).await
        }

        async fn abandon(&self, proposed: &LeaseId) {
            self.0.abandon(proposed).await
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    #[should_panic(expected = "mutual exclusion")]
    async fn contract_lock_broken_memory_adapter_that_ignores_the_holder_fails_mutual_exclusion() {
        let store = store();
        testkit::contract::lock::mutual_exclusion(testkit::contract::lock::alternating(|o| {
            let target = lock(&store, "lock", o.clone()).target().clone();
            Lock::from_target(IgnoresHolder(target), o).unwrap()
        }))
        .await;
    }

    /// The semaphore suite catches a permit that ignores loss on the in-memory backend too.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[should_panic(expected = "loss before expiry: the holder must notice the broken permit")]
    async fn contract_semaphore_broken_memory_permit_that_ignores_loss_fails_loss_before_expiry() {
        use azstore::lock::Semaphore;
        use testkit::contract::semaphore::{self as contract, opts};
        let store = store();
        let make = || {
            let lock = |n: &str| {
                let target = lock(&store, n, opts().local_wakeup(false)).target().clone();
                Lock::from_target(contract::IgnoresLoss(target), opts().local_wakeup(false))
                    .unwrap()
            };
            Semaphore::from_locks(
                lock("sem/fence"),
                (0..2).map(|k| lock(&format!("sem/permits/{k}"))).collect(),
            )
            .unwrap()
        };
        contract::loss_before_expiry(make, 2).await;
    }
}
