//! The lock contract suite (`testkit::contract::lock`), run once per backend against the real
//! servers: blob (Azurite), Redis (redis-server, feature `redis`) and Cosmos DB (the local
//! Cosmos DB server, feature `cosmos`). Each backend is one `testkit::contract_lock!` line
//! (tests `contract_lock_<guarantee>_<backend>`) naming its fixtures, which the leader and
//! semaphore suites share. A deliberately broken adapter (one whose attempts swallow errors
//! into "busy") is shown to fail the suite.

use std::time::Duration;

use azstore::lock::{Lock, LockOptions};
use testkit::contract::lock as contract;
use testkit::fault::{Fault, FaultProxy, Rule};

/// A local port nothing listens on (bound, then closed): connections are refused.
pub(crate) fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Locks on `name` made by `lock` in `place`, which is reached through `proxy`, and what kills
/// the proxy: open connections are reset from then on, new ones refused.
fn dying_through<P, L>(
    proxy: FaultProxy,
    place: P,
    name: &str,
    o: LockOptions,
    lock: fn(&P, &str, LockOptions) -> L,
) -> (impl Fn() -> L + use<P, L>, impl FnOnce() + use<P, L>) {
    let name = name.to_string();
    (
        move || lock(&place, &name, o.clone()),
        move || {
            proxy.inject(Rule::new(Fault::ResetBeforeForward).always());
            drop(proxy);
        },
    )
}

pub(crate) mod blob {
    use super::*;
    use azstore::blob::{BlobLock, BlobLocks, BlobServiceClient, ContainerClient};
    use azstore::http::{ClientOptions, RetryPolicy};
    use azstore::{Conditions, Service, StorageAccount};

    /// A container of its own (created by the first lock).
    pub fn fresh() -> ContainerClient {
        BlobServiceClient::new(&testkit::account())
            .unwrap()
            .container(&testkit::unique("contractlock"))
            .unwrap()
    }

    fn quick() -> ClientOptions {
        ClientOptions::default()
            .timeout(Duration::from_millis(800))
            .total_timeout(Duration::from_secs(2))
    }

    pub fn lock(c: &ContainerClient, name: &str, o: LockOptions) -> BlobLock {
        BlobLock::with_options(c.clone(), name, o).unwrap()
    }

    pub fn locks(c: &ContainerClient, o: LockOptions) -> BlobLocks {
        BlobLocks::new(c.clone(), o)
    }

    pub async fn delete(c: &ContainerClient, name: &str) {
        c.blob(name)
            .unwrap()
            .delete(&Conditions::none())
            .await
            .unwrap();
    }

    /// A container whose service refuses connections; its client does not retry, so every
    /// attempt fails at once and the wait loop alone decides what the wait answers.
    pub fn unreachable_container() -> ContainerClient {
        let account = StorageAccount::development()
            .with_endpoint(
                Service::Blob,
                &format!(
                    "http://127.0.0.1:{}/{}",
                    closed_port(),
                    azstore::DEV_ACCOUNT
                ),
            )
            .unwrap();
        BlobServiceClient::with_options(&account, quick().retry(RetryPolicy::none()))
            .unwrap()
            .container("locks")
            .unwrap()
    }

    pub fn unreachable(o: LockOptions) -> BlobLock {
        lock(&unreachable_container(), "lock", o)
    }

    pub fn unreachable_locks(o: LockOptions) -> BlobLocks {
        BlobLocks::new(unreachable_container(), o)
    }

    /// Locks on `name` through a fault proxy, and what kills the proxy: open connections are
    /// reset from then on, new ones refused.
    pub async fn dying(
        c: &ContainerClient,
        name: &str,
        o: LockOptions,
    ) -> (impl Fn() -> BlobLock, impl FnOnce()) {
        let account = testkit::account();
        let proxy = FaultProxy::start(&account, Service::Blob).await;
        let via = BlobServiceClient::with_options(&proxy.account(&account), quick())
            .unwrap()
            .container(c.name())
            .unwrap();
        super::dying_through(proxy, via, name, o, lock)
    }
}

testkit::contract_lock!(
    blob,
    place = blob::fresh(),
    lock = blob::lock,
    delete = blob::delete,
    unreachable = blob::unreachable,
    dying = blob::dying
);

/// The suite catches a broken adapter: one whose attempts and probes swallow errors into
/// "busy" answers `Ok(None)` for an unreachable service, and the guarantee fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "unreachable service: the wait must end with an error")]
async fn contract_lock_broken_adapter_fails_the_unreachable_service_guarantee() {
    contract::wait_on_an_unreachable_service_is_an_error(|| {
        let target = blob::unreachable(contract::opts()).target().clone();
        Lock::from_target(contract::SwallowsErrors(target), contract::opts()).unwrap()
    })
    .await;
}

#[cfg(feature = "redis")]
pub(crate) mod redis {
    use super::*;
    use azstore::redis::{RedisClient, RedisConfig, RedisLock, RedisLocks};
    use testkit::redis::{RedisProxy, redis_url};

    pub fn client_at(url: &str) -> RedisClient {
        RedisClient::new(RedisConfig::from_url(url).unwrap()).unwrap()
    }

    /// A key prefix of its own on the test server.
    pub fn fresh() -> (RedisClient, String) {
        let prefix = format!("azstore-test:{}", testkit::unique("contractlock"));
        (client_at(&redis_url()), prefix)
    }

    pub fn lock((c, prefix): &(RedisClient, String), name: &str, o: LockOptions) -> RedisLock {
        RedisLock::with_options(c.clone(), &format!("{prefix}/{name}"), o).unwrap()
    }

    pub fn locks((c, _): &(RedisClient, String), o: LockOptions) -> RedisLocks {
        RedisLocks::new(c.clone(), o)
    }

    /// The whole lock record goes, as when the keys are evicted or expire.
    pub async fn delete(place: &(RedisClient, String), name: &str) {
        let l = lock(place, name, contract::opts());
        let keys = [
            l.key().to_string(),
            l.fence_key().to_string(),
            format!("{{{}}}:owner", l.key()),
        ];
        let mut con = ::redis::Client::open(redis_url())
            .unwrap()
            .get_multiplexed_async_connection()
            .await
            .unwrap();
        let _: i64 = ::redis::cmd("DEL")
            .arg(&keys[..])
            .query_async(&mut con)
            .await
            .unwrap();
    }

    pub fn unreachable_client() -> RedisClient {
        client_at(&format!("redis://127.0.0.1:{}", closed_port()))
    }

    pub fn unreachable(o: LockOptions) -> RedisLock {
        RedisLock::with_options(unreachable_client(), "azstore-test:unreachable", o).unwrap()
    }

    pub fn unreachable_locks(o: LockOptions) -> RedisLocks {
        RedisLocks::new(unreachable_client(), o)
    }

    pub async fn dying(
        (_, prefix): &(RedisClient, String),
        name: &str,
        o: LockOptions,
    ) -> (impl Fn() -> RedisLock, impl FnOnce()) {
        let proxy = RedisProxy::start(&redis_url()).await;
        let place = (client_at(&proxy.url()), prefix.clone());
        let name = name.to_string();
        (move || lock(&place, &name, o.clone()), move || proxy.kill())
    }
}

#[cfg(feature = "redis")]
testkit::contract_lock!(
    redis,
    place = redis::fresh(),
    lock = redis::lock,
    delete = redis::delete,
    unreachable = redis::unreachable,
    dying = redis::dying
);

#[cfg(feature = "cosmos")]
pub(crate) mod cosmos {
    use super::*;
    use azstore::cosmos::{
        CosmosClient, CosmosContainer, CosmosKey, CosmosLock, CosmosLocks, EMULATOR_KEY,
    };
    use azstore::http::ClientOptions;

    fn endpoint() -> String {
        std::env::var("AZSTORE_COSMOS_ENDPOINT").unwrap_or_else(|_| {
            panic!(
                "AZSTORE_COSMOS_ENDPOINT is not set: run the tests through `scripts/cosmos run -- \
                 cargo test -p azstore --all-features --test it contract_lock`"
            )
        })
    }

    fn client_at(endpoint: &str) -> CosmosClient {
        CosmosClient::with_options(
            endpoint,
            CosmosKey::new(EMULATOR_KEY).unwrap(),
            ClientOptions::default()
                .timeout(Duration::from_millis(800))
                .total_timeout(Duration::from_secs(2)),
        )
        .unwrap()
    }

    /// A container in a database of its own (partition key path `/pk`).
    pub async fn fresh() -> CosmosContainer {
        let db = client_at(&endpoint())
            .database(&testkit::unique("contractlock"))
            .unwrap();
        db.create_if_not_exists().await.unwrap();
        let c = db.container("items", "/pk").unwrap();
        c.create_if_not_exists().await.unwrap();
        c
    }

    /// The lock item `name` (an item id has no `/`), in its own partition.
    pub fn lock(c: &CosmosContainer, name: &str, o: LockOptions) -> CosmosLock {
        let id = name.replace('/', ":");
        CosmosLock::with_options(c.clone(), &id, id.as_str(), o).unwrap()
    }

    pub fn locks(c: &CosmosContainer, o: LockOptions) -> CosmosLocks {
        CosmosLocks::new(c.clone(), o)
    }

    /// What the item's time to live does to an abandoned lock item.
    pub async fn delete(c: &CosmosContainer, name: &str) {
        let id = name.replace('/', ":");
        let item = c.item::<serde_json::Value>(&id, id.as_str()).unwrap();
        assert!(item.delete_if_exists().await.unwrap());
    }

    pub fn unreachable_container() -> CosmosContainer {
        client_at(&format!("http://127.0.0.1:{}", closed_port()))
            .database("db")
            .unwrap()
            .container("items", "/pk")
            .unwrap()
    }

    pub fn unreachable(o: LockOptions) -> CosmosLock {
        lock(&unreachable_container(), "lock", o)
    }

    pub fn unreachable_locks(o: LockOptions) -> CosmosLocks {
        CosmosLocks::new(unreachable_container(), o)
    }

    pub async fn dying(
        c: &CosmosContainer,
        name: &str,
        o: LockOptions,
    ) -> (impl Fn() -> CosmosLock, impl FnOnce()) {
        let (proxy, proxied) = crate::contract_versioned::cosmos_backend::proxy().await;
        let via = client_at(&proxied)
            .database(c.database_id())
            .unwrap()
            .container(c.id(), "/pk")
            .unwrap();
        super::dying_through(proxy, via, name, o, lock)
    }
}

#[cfg(feature = "cosmos")]
testkit::contract_lock!(
    cosmos,
    place = cosmos::fresh().await,
    lock = cosmos::lock,
    delete = cosmos::delete,
    unreachable = cosmos::unreachable,
    dying = cosmos::dying
);

#[cfg(feature = "testing")]
testkit::contract_lock!(
    memory,
    place = crate::memory::store(),
    lock = crate::memory::lock,
    delete = crate::memory::delete,
    unreachable = crate::memory::unreachable,
    dying = crate::memory::dying
);
