//! The semaphore and reader-writer lock contract suite (`testkit::contract::semaphore`), run
//! once per backend against the real servers: blob (Azurite), Redis (redis-server, feature
//! `redis`) and Cosmos DB (the local Cosmos DB server, feature `cosmos`). Each backend is one
//! `testkit::contract_semaphore!` line (tests `<backend>::contract_semaphore_<guarantee>`)
//! with the lock suite's fixtures: a fresh place for locks, a lock factory there, and one
//! whose service refuses connections. A deliberately broken adapter (a permit that ignores
//! loss) is shown to fail the suite.

use crate::contract_lock::blob as blob_backend;
#[cfg(feature = "cosmos")]
use crate::contract_lock::cosmos as cosmos_backend;
#[cfg(feature = "redis")]
use crate::contract_lock::redis as redis_backend;

testkit::contract_semaphore!(
    blob,
    place = blob_backend::fresh(),
    locks = blob_backend::locks,
    unreachable = blob_backend::unreachable_locks
);

#[cfg(feature = "redis")]
testkit::contract_semaphore!(
    redis,
    place = redis_backend::fresh(),
    locks = redis_backend::locks,
    unreachable = redis_backend::unreachable_locks
);

#[cfg(feature = "cosmos")]
testkit::contract_semaphore!(
    cosmos,
    place = cosmos_backend::fresh().await,
    locks = cosmos_backend::locks,
    unreachable = cosmos_backend::unreachable_locks
);

/// The suite catches a permit that ignores loss: its renewals "succeed" after the slot was
/// broken, so the holder never reports the loss (on Redis, whose break leaves the lease's
/// rest to run).
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "loss before expiry: the holder must notice the broken permit")]
async fn contract_semaphore_broken_permit_that_ignores_loss_fails_loss_before_expiry() {
    use azstore::lock::{Lock, Semaphore};
    use azstore::redis::RedisLock;
    use testkit::contract::semaphore::{self as contract, opts};
    let (client, _) = redis_backend::fresh();
    let name = format!("azstore-test:{}", testkit::unique("sem"));
    let make = || {
        let lock = |n: &str| {
            let l = RedisLock::with_options(client.clone(), n, opts().local_wakeup(false)).unwrap();
            Lock::from_target(
                contract::IgnoresLoss(l.target().clone()),
                opts().local_wakeup(false),
            )
            .unwrap()
        };
        Semaphore::from_locks(
            lock(&format!("{name}/fence")),
            (0..2)
                .map(|k| lock(&format!("{name}/permits/{k}")))
                .collect(),
        )
        .unwrap()
    };
    contract::loss_before_expiry(make, 2).await;
}

#[cfg(feature = "testing")]
testkit::contract_semaphore!(
    memory,
    place = crate::memory::store(),
    locks = crate::memory::locks,
    unreachable = crate::memory::unreachable_locks
);
