//! The lock contract suite (`testkit::contract::lock`), run once per backend against the real
//! servers: blob (Azurite), Redis (redis-server, feature `redis`) and Cosmos DB (the local
//! Cosmos DB server, feature `cosmos`). Each test is `contract_lock_<guarantee>_<backend>`;
//! a new backend is one more set of calls. A deliberately broken adapter (one whose attempts
//! swallow errors into "busy") is shown to fail the suite.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use azstore::lease::LeaseDuration;
use azstore::lock::{Lock, LockOptions, LockTarget};
use testkit::contract::lock as contract;

/// The options every contract test uses: 15 s leases (the shortest a blob lease can be).
fn opts() -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).unwrap())
        .label("contract")
}

/// Alternates contenders between the in-process wake-up and polling only (what separate
/// processes get), so mutual exclusion is checked under both.
fn alternating<T: LockTarget>(make: impl Fn(LockOptions) -> Lock<T>) -> impl Fn() -> Lock<T> {
    let n = Arc::new(AtomicUsize::new(0));
    move || make(opts().local_wakeup(n.fetch_add(1, Ordering::Relaxed) % 2 == 0))
}

/// A local port nothing listens on (bound, then closed): connections are refused.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

mod blob {
    use super::*;
    use azstore::blob::BlobLock;
    use azstore::blob::{BlobLockTarget, BlobServiceClient, ContainerClient};
    use azstore::http::{ClientOptions, RetryPolicy};
    use azstore::{Conditions, Service, StorageAccount};
    use testkit::fault::{Fault, FaultProxy, Rule};

    fn fresh() -> ContainerClient {
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

    fn lock_at(account: &StorageAccount, container: &str) -> BlobLock {
        let c = BlobServiceClient::with_options(account, quick())
            .unwrap()
            .container(container)
            .unwrap();
        BlobLock::with_options(c, "lock", opts()).unwrap()
    }

    /// A lock whose service refuses connections; its client does not retry, so every
    /// attempt fails at once and the wait loop alone decides what the wait answers.
    fn unreachable() -> BlobLock {
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
        let c = BlobServiceClient::with_options(&account, quick().retry(RetryPolicy::none()))
            .unwrap()
            .container("locks")
            .unwrap();
        BlobLock::with_options(c, "lock", opts()).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn contract_lock_mutual_exclusion_blob() {
        let c = fresh();
        contract::mutual_exclusion(alternating(move |o| {
            BlobLock::with_options(c.clone(), "lock", o).unwrap()
        }))
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_fencing_tokens_increase_blob() {
        let c = fresh();
        let blob = c.blob("lock").unwrap();
        contract::fencing_tokens_increase(
            || BlobLock::with_options(c.clone(), "lock", opts()).unwrap(),
            || async { blob.delete(&Conditions::none()).await.unwrap() },
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_none_lets_the_holder_notice_first_blob() {
        let c = fresh();
        contract::break_none_lets_the_holder_notice_first(|| {
            BlobLock::with_options(c.clone(), "lock", opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_zero_frees_at_once_blob() {
        let c = fresh();
        contract::break_zero_frees_at_once(|| {
            BlobLock::with_options(c.clone(), "lock", opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_many_matches_status_blob() {
        let c = fresh();
        contract::status_many_matches_status(|name| {
            BlobLock::with_options(c.clone(), name, opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_after_release_blob() {
        let c = fresh();
        contract::status_after_release(|| {
            BlobLock::with_options(c.clone(), "lock", opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_held_lock_is_none_blob() {
        let c = fresh();
        contract::wait_on_a_held_lock_is_none_by_the_deadline(|| {
            BlobLock::with_options(c.clone(), "lock", opts().local_wakeup(false)).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_an_unreachable_service_is_an_error_blob() {
        contract::wait_on_an_unreachable_service_is_an_error(unreachable).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_dying_service_is_an_error_blob() {
        let account = testkit::account();
        let c = fresh();
        let proxy = FaultProxy::start(&account, Service::Blob).await;
        let via = proxy.account(&account);
        let name = c.name().to_string();
        contract::wait_on_a_dying_service_is_an_error(
            || BlobLock::with_options(c.clone(), "lock", opts()).unwrap(),
            || lock_at(&via, &name),
            move || {
                // Open connections are reset from now on, new ones refused.
                proxy.inject(Rule::new(Fault::ResetBeforeForward).always());
                drop(proxy);
            },
        )
        .await;
    }

    /// The suite catches a broken adapter: one whose attempts and probes swallow errors into
    /// "busy" answers `Ok(None)` for an unreachable service, and the guarantee fails.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[should_panic(expected = "unreachable service: the wait must end with an error")]
    async fn contract_lock_broken_adapter_fails_the_unreachable_service_guarantee() {
        contract::wait_on_an_unreachable_service_is_an_error(|| {
            let target: BlobLockTarget = unreachable().target().clone();
            Lock::from_target(contract::SwallowsErrors(target), opts()).unwrap()
        })
        .await;
    }
}

#[cfg(feature = "redis")]
mod redis {
    use super::*;
    use azstore::lock::LockOptions;
    use azstore::redis::{RedisClient, RedisConfig, RedisLock};
    use testkit::redis::{RedisProxy, redis_url};

    fn client_at(url: &str) -> RedisClient {
        RedisClient::new(RedisConfig::from_url(url).unwrap()).unwrap()
    }

    fn key() -> String {
        format!("azstore-test:{}", testkit::unique("contractlock"))
    }

    fn lock(k: &str, o: LockOptions) -> RedisLock {
        RedisLock::with_options(client_at(&redis_url()), k, o).unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn contract_lock_mutual_exclusion_redis() {
        let k = key();
        contract::mutual_exclusion(alternating(move |o| lock(&k, o))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_fencing_tokens_increase_redis() {
        let k = key();
        let l = lock(&k, opts());
        let keys = [
            l.key().to_string(),
            l.fence_key().to_string(),
            format!("{{{k}}}:owner"),
        ];
        contract::fencing_tokens_increase(
            || lock(&k, opts()),
            || async {
                // The whole lock record goes, as when the keys are evicted or expire.
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
            },
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_none_lets_the_holder_notice_first_redis() {
        let k = key();
        contract::break_none_lets_the_holder_notice_first(|| lock(&k, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_zero_frees_at_once_redis() {
        let k = key();
        contract::break_zero_frees_at_once(|| lock(&k, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_many_matches_status_redis() {
        let k = key();
        contract::status_many_matches_status(|name| lock(&format!("{k}/{name}"), opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_after_release_redis() {
        let k = key();
        contract::status_after_release(|| lock(&k, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_held_lock_is_none_redis() {
        let k = key();
        contract::wait_on_a_held_lock_is_none_by_the_deadline(|| {
            lock(&k, opts().local_wakeup(false))
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_an_unreachable_service_is_an_error_redis() {
        let url = format!("redis://127.0.0.1:{}", closed_port());
        contract::wait_on_an_unreachable_service_is_an_error(|| {
            RedisLock::with_options(client_at(&url), "azstore-test:unreachable", opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_dying_service_is_an_error_redis() {
        let k = key();
        let proxy = RedisProxy::start(&redis_url()).await;
        let via = proxy.url();
        contract::wait_on_a_dying_service_is_an_error(
            || lock(&k, opts()),
            || RedisLock::with_options(client_at(&via), &k, opts()).unwrap(),
            move || proxy.kill(),
        )
        .await;
    }
}

#[cfg(feature = "cosmos")]
mod cosmos {
    use super::*;
    use azstore::cosmos::{CosmosClient, CosmosContainer, CosmosKey, CosmosLock, EMULATOR_KEY};
    use azstore::http::ClientOptions;
    use testkit::fault::{Fault, Rule};

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
    async fn fresh() -> CosmosContainer {
        let db = client_at(&endpoint())
            .database(&testkit::unique("contractlock"))
            .unwrap();
        db.create_if_not_exists().await.unwrap();
        let c = db.container("items", "/pk").unwrap();
        c.create_if_not_exists().await.unwrap();
        c
    }

    fn lock(c: &CosmosContainer, o: LockOptions) -> CosmosLock {
        CosmosLock::with_options(c.clone(), "lock", "lock", o).unwrap()
    }

    /// `c` seen through a client at `endpoint`.
    fn same_container_at(endpoint: &str, c: &CosmosContainer) -> CosmosContainer {
        client_at(endpoint)
            .database(c.database_id())
            .unwrap()
            .container(c.id(), "/pk")
            .unwrap()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn contract_lock_mutual_exclusion_cosmos() {
        let c = fresh().await;
        contract::mutual_exclusion(alternating(move |o| lock(&c, o))).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_fencing_tokens_increase_cosmos() {
        let c = fresh().await;
        let item = c.item::<serde_json::Value>("lock", "lock").unwrap();
        contract::fencing_tokens_increase(
            || lock(&c, opts()),
            || async {
                // What the item's time to live does to an abandoned lock item.
                assert!(item.delete_if_exists().await.unwrap());
            },
        )
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_none_lets_the_holder_notice_first_cosmos() {
        let c = fresh().await;
        contract::break_none_lets_the_holder_notice_first(|| lock(&c, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_break_zero_frees_at_once_cosmos() {
        let c = fresh().await;
        contract::break_zero_frees_at_once(|| lock(&c, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_many_matches_status_cosmos() {
        let c = fresh().await;
        contract::status_many_matches_status(|name| {
            let id = name.replace('/', ":");
            CosmosLock::with_options(c.clone(), &id, id.as_str(), opts()).unwrap()
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_status_after_release_cosmos() {
        let c = fresh().await;
        contract::status_after_release(|| lock(&c, opts())).await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_held_lock_is_none_cosmos() {
        let c = fresh().await;
        contract::wait_on_a_held_lock_is_none_by_the_deadline(|| {
            lock(&c, opts().local_wakeup(false))
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_an_unreachable_service_is_an_error_cosmos() {
        let closed = format!("http://127.0.0.1:{}", closed_port());
        contract::wait_on_an_unreachable_service_is_an_error(|| {
            let c = client_at(&closed)
                .database("db")
                .unwrap()
                .container("items", "/pk")
                .unwrap();
            lock(&c, opts())
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn contract_lock_wait_on_a_dying_service_is_an_error_cosmos() {
        let c = fresh().await;
        let (proxy, proxied) = crate::contract_versioned::cosmos_backend::proxy().await;
        let via = same_container_at(&proxied, &c);
        contract::wait_on_a_dying_service_is_an_error(
            || lock(&c, opts()),
            || lock(&via, opts()),
            move || {
                // Open connections are reset from now on, new ones refused.
                proxy.inject(Rule::new(Fault::ResetBeforeForward).always());
                drop(proxy);
            },
        )
        .await;
    }
}
