//! Leader election and shard ownership (`azstore::leader`) on every lock backend: the
//! leader contract suite (`testkit::contract::leader`), one `testkit::contract_leader!` line
//! per backend (Blob on Azurite, Redis on redis-server, Cosmos DB on the local Cosmos DB
//! server when the `cosmos` feature is on) with the lock suite's fixtures, and the checks of
//! the options.

use std::time::Duration;

use azstore::blob::BlobLock;
use azstore::blob::{BlobLocks, BlobServiceClient};
use azstore::leader::{Election, ElectionOptions, ShardGroup, ShardOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use testkit::contract::leader::lock_options;

use crate::contract_lock::blob as blob_backend;
#[cfg(feature = "cosmos")]
use crate::contract_lock::cosmos as cosmos_backend;
#[cfg(feature = "redis")]
use crate::contract_lock::redis as redis_backend;

fn blob_container() -> azstore::blob::ContainerClient {
    BlobServiceClient::new(&testkit::account())
        .unwrap()
        .container(&testkit::unique("leader"))
        .unwrap()
}

testkit::contract_leader!(
    blob,
    place = blob_backend::fresh(),
    lock = blob_backend::lock,
    locks = blob_backend::locks
);

#[cfg(feature = "redis")]
testkit::contract_leader!(
    redis,
    place = redis_backend::fresh(),
    lock = redis_backend::lock,
    locks = redis_backend::locks
);

#[cfg(feature = "cosmos")]
testkit::contract_leader!(
    cosmos,
    place = cosmos_backend::fresh().await,
    lock = cosmos_backend::lock,
    locks = cosmos_backend::locks
);

#[test]
fn leader_options_are_checked_before_any_request() {
    let c = blob_container();
    let lock = |o: LockOptions| BlobLock::with_options(c.clone(), "l", o).unwrap();
    let e = Election::new(
        lock(LockOptions::default().duration(LeaseDuration::Infinite)),
        ElectionOptions::default(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    let e = Election::new(
        lock(lock_options("x")),
        ElectionOptions::default().observe_every(Duration::from_secs(20)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("observe_every"), "{e}");
    let locks = BlobLocks::new(c.clone(), lock_options("x"));
    for bad in [
        ShardGroup::new(
            locks.clone(),
            "g",
            Vec::<String>::new(),
            ShardOptions::default(),
        ),
        ShardGroup::new(locks.clone(), "g", ["a", "a"], ShardOptions::default()),
        ShardGroup::new(locks.clone(), "g", ["a/b"], ShardOptions::default()),
        ShardGroup::with_count(
            locks.clone(),
            "g",
            4,
            ShardOptions::default().interval(Duration::from_millis(10)),
        ),
        ShardGroup::with_count(
            locks.clone(),
            "g",
            4,
            ShardOptions::default().member_slots(0),
        ),
    ] {
        assert_eq!(bad.unwrap_err().kind(), azstore::ErrorKind::InvalidInput);
    }
}

#[cfg(feature = "testing")]
testkit::contract_leader!(
    memory,
    place = crate::memory::store(),
    lock = crate::memory::lock,
    locks = crate::memory::locks
);
