//! The `Leasable` + `LeaseGuard` contract (`testkit::contract::leasable`) on every backend:
//! each guarantee once per backend, named `contract_lease_<guarantee>_<backend>`. Backends:
//! blob and container (Azurite), share and file (testkit's local File service, started in
//! the test), Redis key (redis-server, feature `redis`), Cosmos DB item (the local Cosmos DB
//! server, feature `cosmos`). Each guarantee gets two clients of one resource: the guard's
//! and another party's.
//!
//! A file's leases are infinite only and cannot be renewed (`LeaseCapabilities::
//! INFINITE_ONLY`), so the renewal and loss guarantees are not called for a file; a share's
//! leases have fixed durations and renew like a blob's.

use testkit as support;

use azstore::Conditions;
use azstore::blob::{BlobClient, BlobServiceClient, ContainerClient};
use azstore::file::{FileClient, ShareClient, ShareServiceClient};
use bytes::Bytes;
use testkit::contract::leasable as contract;
use testkit::file_server::FileServer;

// ---------------------------------------------------------------------------------------------
// Blob and container.

fn container_client(name: &str) -> ContainerClient {
    BlobServiceClient::new(&support::account())
        .unwrap()
        .container(name)
        .unwrap()
}

/// Two clients of one existing blob.
async fn blobs() -> (BlobClient, BlobClient) {
    let c = support::blob::container("leasecontract").await;
    let blob = c.blob("held").unwrap();
    blob.upload("0", &Conditions::none()).await.unwrap();
    let other = container_client(c.name()).blob("held").unwrap();
    (blob, other)
}

/// Two clients of one existing container.
async fn containers() -> (ContainerClient, ContainerClient) {
    let c = support::blob::container("leasecontract").await;
    let other = container_client(c.name());
    (c, other)
}

testkit::contract_lease!(blob, blobs().await);
testkit::contract_lease!(container, containers().await);

/// A deliberately broken adapter fails the suite: a blob whose renew and release succeed
/// without sending anything loses its lease to another party after 15 s, and a dropped
/// guard leaves the lease held.
#[tokio::test]
async fn contract_lease_guarantees_fail_on_a_silent_adapter_blob() {
    let (a, b) = blobs().await;
    let err = contract::guard_releases_on_drop(
        contract::SilentNoop(a.clone()),
        contract::SilentNoop(b.clone()),
    )
    .await
    .expect_err("a release that sends nothing must fail the guarantee");
    assert!(err.contains("could not acquire"), "{err}");
    let (a, b) = blobs().await;
    let err = contract::guard_renews_past_several_periods(
        contract::SilentNoop(a),
        contract::SilentNoop(b),
    )
    .await
    .expect_err("a renew that sends nothing must fail the guarantee");
    assert!(err.contains("did not renew"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Share and file (the local File service).

/// Two clients of one existing share, and two of one file in it.
async fn shares(server: &FileServer) -> ((ShareClient, ShareClient), (FileClient, FileClient)) {
    let name = support::unique("leasecontract");
    let share_at = || {
        ShareServiceClient::new(&server.account())
            .unwrap()
            .share(&name)
            .unwrap()
    };
    let share = share_at();
    share.create().await.unwrap();
    let file = share.file("held.txt").unwrap();
    file.create(5, None).await.unwrap();
    file.put_range(0, Bytes::from_static(b"hello"), None)
        .await
        .unwrap();
    let other_file = share_at().file("held.txt").unwrap();
    ((share, share_at()), (file, other_file))
}

/// Two clients of one share on a local File service started for the test (kept running).
async fn share_pair() -> (ShareClient, ShareClient, FileServer) {
    let server = FileServer::start().await;
    let ((a, b), _) = shares(&server).await;
    (a, b, server)
}

/// Two clients of one file on a local File service started for the test (kept running).
async fn file_pair() -> (FileClient, FileClient, FileServer) {
    let server = FileServer::start().await;
    let (_, (a, b)) = shares(&server).await;
    (a, b, server)
}

testkit::contract_lease!(share, share_pair().await);
testkit::contract_lease!(file, file_pair().await, infinite_only);

/// The renewal guarantees say so when a target cannot renew, instead of passing vacuously.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_lease_renewal_guarantees_refuse_an_infinite_only_target_file() {
    let server = FileServer::start().await;
    let (_, (a, b)) = shares(&server).await;
    let err = contract::guard_renews_past_several_periods(a.clone(), b.clone())
        .await
        .unwrap_err();
    assert!(err.contains("does not apply"), "{err}");
    let err = contract::guard_reports_loss_before_expiry(a, b)
        .await
        .unwrap_err();
    assert!(err.contains("does not apply"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Redis key.

#[cfg(feature = "redis")]
fn redis_leases() -> (azstore::redis::RedisLease, azstore::redis::RedisLease) {
    use azstore::redis::{RedisClient, RedisConfig};
    let key = format!("azstore-test:{}", support::unique("leasecontract"));
    let client =
        || RedisClient::new(RedisConfig::from_url(&support::redis::redis_url()).unwrap()).unwrap();
    (client().lease(&key).unwrap(), client().lease(&key).unwrap())
}

#[cfg(feature = "redis")]
testkit::contract_lease!(redis, redis_leases());

// ---------------------------------------------------------------------------------------------
// Cosmos DB item.

#[cfg(feature = "cosmos")]
async fn cosmos_leases() -> (azstore::cosmos::CosmosLease, azstore::cosmos::CosmosLease) {
    use crate::contract_versioned::cosmos_backend::{container_at, endpoint, fresh};
    let db = fresh("leasecontract").await;
    let lease = || container_at(&endpoint(), &db).lease("held", "k").unwrap();
    (lease(), lease())
}

#[cfg(feature = "cosmos")]
testkit::contract_lease!(cosmos, cosmos_leases().await);

#[cfg(feature = "testing")]
testkit::contract_lease!(memory, crate::memory::leases());
