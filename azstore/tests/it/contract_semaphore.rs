//! The semaphore and reader-writer lock contract suite (`testkit::contract::semaphore`), run
//! once per backend against the real servers: blob (Azurite), Redis (redis-server, feature
//! `redis`) and Cosmos DB (the local Cosmos DB server, feature `cosmos`). Each backend is one
//! `semaphore_contract!` line naming how to reach a fresh place for locks, a lock factory
//! there, and one whose service refuses connections. A deliberately broken adapter (a permit
//! that ignores loss) is shown to fail the suite.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use azstore::lease::LeaseDuration;
use azstore::lock::{LockOptions, RwLock, Semaphore};
use testkit::contract::semaphore as contract;

/// 15 s leases (the shortest a blob lease can be), renewed every 5 s.
fn opts() -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).unwrap())
        .label("contract")
}

/// A local port nothing listens on (bound, then closed): connections are refused.
fn closed_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

const N: u32 = 3;

/// The suite on one backend: `$place` (async) is a fresh place for locks, `$locks(&place,
/// options)` a lock factory there, `$unreachable(options)` a factory whose service refuses
/// connections.
macro_rules! semaphore_contract {
    ($backend:ident, $place:expr, $locks:expr, $unreachable:expr) => {
        mod $backend {
            use super::*;

            fn name() -> String {
                format!("azstore-test:{}", testkit::unique("sem"))
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn contract_semaphore_at_most_n_holders() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                // Contenders alternate between the in-process wake-up and polling only.
                let k = Arc::new(AtomicUsize::new(0));
                contract::at_most_n_holders(
                    || {
                        if k.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                            Semaphore::new(&a, &name, N, "contract").unwrap()
                        } else {
                            Semaphore::new(&b, &name, N, "contract").unwrap()
                        }
                    },
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_fencing_tokens_increase_across_slots() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::fencing_tokens_increase_across_slots(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_loss_before_expiry() {
                let place = $place;
                let locks = $locks(&place, opts().local_wakeup(false));
                let name = name();
                contract::loss_before_expiry(
                    || Semaphore::new(&locks, &name, 2, "contract").unwrap(),
                    2,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_release_on_drop() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                contract::release_on_drop(
                    || Semaphore::new(&a, &name, N, "contract").unwrap(),
                    || Semaphore::new(&b, &name, N, "contract").unwrap(),
                    N as usize,
                    "contract",
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_wait_on_a_full_semaphore_is_none() {
                let place = $place;
                let locks = $locks(&place, opts().local_wakeup(false));
                let name = name();
                contract::wait_on_a_full_semaphore_is_none(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_wait_on_an_unreachable_service_is_an_error() {
                let locks = $unreachable(opts());
                contract::wait_on_an_unreachable_service_is_an_error(
                    || Semaphore::new(&locks, "sem", N, "contract").unwrap(),
                    || RwLock::new(&locks, "rw", 4, "contract").unwrap(),
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_set_permits_drains_and_reopens() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::set_permits_drains_and_reopens(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn contract_rwlock_exclusion() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                let k = Arc::new(AtomicUsize::new(0));
                contract::rwlock_exclusion(|| {
                    if k.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                        RwLock::new(&a, &name, 4, "contract").unwrap()
                    } else {
                        RwLock::new(&b, &name, 4, "contract").unwrap()
                    }
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_rwlock_writer_preference() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::rwlock_writer_preference(|| {
                    RwLock::new(&locks, &name, 4, "contract").unwrap()
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_rwlock_write_loss() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::rwlock_write_loss(|| RwLock::new(&locks, &name, 2, "contract").unwrap())
                    .await;
            }
        }
    };
}

mod blob_backend {
    use super::*;
    use azstore::blob::{BlobLocks, BlobServiceClient, ContainerClient};
    use azstore::http::{ClientOptions, RetryPolicy};
    use azstore::{Service, StorageAccount};

    pub fn fresh() -> ContainerClient {
        BlobServiceClient::new(&testkit::account())
            .unwrap()
            .container(&testkit::unique("contractsem"))
            .unwrap()
    }

    pub fn locks(c: &ContainerClient, o: LockOptions) -> BlobLocks {
        BlobLocks::new(c.clone(), o)
    }

    /// Locks whose service refuses connections; the client does not retry.
    pub fn unreachable(o: LockOptions) -> BlobLocks {
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
        let options = ClientOptions::default()
            .timeout(Duration::from_millis(800))
            .total_timeout(Duration::from_secs(2))
            .retry(RetryPolicy::none());
        let c = BlobServiceClient::with_options(&account, options)
            .unwrap()
            .container("locks")
            .unwrap();
        BlobLocks::new(c, o)
    }
}

semaphore_contract!(
    blob,
    blob_backend::fresh(),
    blob_backend::locks,
    blob_backend::unreachable
);

#[cfg(feature = "redis")]
mod redis_backend {
    use super::*;
    use azstore::redis::{RedisClient, RedisConfig, RedisLocks};
    use testkit::redis::redis_url;

    pub fn client_at(url: &str) -> RedisClient {
        RedisClient::new(RedisConfig::from_url(url).unwrap()).unwrap()
    }

    pub fn locks(c: &RedisClient, o: LockOptions) -> RedisLocks {
        RedisLocks::new(c.clone(), o)
    }

    pub fn unreachable(o: LockOptions) -> RedisLocks {
        RedisLocks::new(
            client_at(&format!("redis://127.0.0.1:{}", closed_port())),
            o,
        )
    }

    pub fn fresh() -> RedisClient {
        client_at(&redis_url())
    }
}

#[cfg(feature = "redis")]
semaphore_contract!(
    redis,
    redis_backend::fresh(),
    redis_backend::locks,
    redis_backend::unreachable
);

#[cfg(feature = "cosmos")]
mod cosmos_backend {
    use super::*;
    use azstore::cosmos::{CosmosClient, CosmosContainer, CosmosKey, CosmosLocks, EMULATOR_KEY};
    use azstore::http::ClientOptions;

    fn endpoint() -> String {
        std::env::var("AZSTORE_COSMOS_ENDPOINT").unwrap_or_else(|_| {
            panic!(
                "AZSTORE_COSMOS_ENDPOINT is not set: run the tests through `scripts/cosmos run -- \
                 cargo test -p azstore --all-features --test it contract_semaphore`"
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
            .database(&testkit::unique("contractsem"))
            .unwrap();
        db.create_if_not_exists().await.unwrap();
        let c = db.container("items", "/pk").unwrap();
        c.create_if_not_exists().await.unwrap();
        c
    }

    pub fn locks(c: &CosmosContainer, o: LockOptions) -> CosmosLocks {
        CosmosLocks::new(c.clone(), o)
    }

    pub fn unreachable(o: LockOptions) -> CosmosLocks {
        let c = client_at(&format!("http://127.0.0.1:{}", closed_port()))
            .database("db")
            .unwrap()
            .container("items", "/pk")
            .unwrap();
        CosmosLocks::new(c, o)
    }
}

#[cfg(feature = "cosmos")]
semaphore_contract!(
    cosmos,
    cosmos_backend::fresh().await,
    cosmos_backend::locks,
    cosmos_backend::unreachable
);

/// The suite catches a permit that ignores loss: its renewals "succeed" after the slot was
/// broken, so the holder never reports the loss (on Redis, whose break leaves the lease's
/// rest to run).
#[cfg(feature = "redis")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[should_panic(expected = "loss before expiry: the holder must notice the broken permit")]
async fn contract_semaphore_broken_permit_that_ignores_loss_fails_loss_before_expiry() {
    use azstore::lock::Lock;
    use azstore::redis::RedisLock;
    let client = redis_backend::fresh();
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
