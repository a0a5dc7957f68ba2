//! The `Versioned` contract (`testkit::contract::versioned`) on every backend: each guarantee
//! once per backend, named `contract_versioned_<guarantee>_<backend>`. Backends: blob
//! (`BlobJson` on Azurite), table entity (`VersionedEntity` on Azurite), Redis key
//! (`RedisJson` on redis-server, feature `redis`), Cosmos DB item (`CosmosItem` on the local
//! Cosmos DB server, feature `cosmos`), each one `testkit::contract_versioned!` line. Every
//! item value is made by a factory that builds a new client each time, as a user would per
//! task or process.

use testkit as support;

use azstore::StorageAccount;
use azstore::blob::BlobJson;
use azstore::blob::BlobServiceClient;
use azstore::table::{TableServiceClient, VersionedEntity};
use azstore::{Service, update::Versioned};
use serde::{Deserialize, Serialize};
use testkit::contract::versioned::{self as contract, Counter, HttpWrites};
use testkit::fault::FaultProxy;

// ---------------------------------------------------------------------------------------------
// Blob.

fn blob_at(account: &StorageAccount, container: &str) -> BlobJson<u64> {
    BlobJson::new(
        BlobServiceClient::new(account)
            .unwrap()
            .container(container)
            .unwrap()
            .blob("counter")
            .unwrap(),
    )
}

async fn blob_container() -> (StorageAccount, String) {
    let c = support::blob::container("contract").await;
    (support::account(), c.name().to_string())
}

fn blob_item((account, c): &(StorageAccount, String)) -> BlobJson<u64> {
    blob_at(account, c)
}

/// The counter blob through a fault proxy, the same blob reached directly, and the proxy.
async fn blob_faults() -> (BlobJson<u64>, BlobJson<u64>, HttpWrites) {
    let (account, c) = blob_container().await;
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let proxied = proxy.account(&account);
    // Put Blob is both the create (If-None-Match: *) and the replace (If-Match).
    let faults = HttpWrites {
        proxy,
        replace: ("PUT", "/counter"),
        create: ("PUT", "/counter"),
    };
    (
        blob_at(&proxied, &c),
        blob_at(&support::account(), &c),
        faults,
    )
}

testkit::contract_versioned!(
    blob,
    place = blob_container().await,
    item = blob_item,
    counter = Counter::PLAIN,
    snapshots = true,
    faults = blob_faults().await
);

/// A deliberately broken adapter fails the suite: a `BlobJson` whose `identity()` is fresh on
/// every call never takes turns, and the one-process guarantee reports its wasted writes.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_one_process_wastes_no_write_fails_without_a_turn_key() {
    let (account, c) = blob_container().await;
    let result = contract::one_process_wastes_no_write(
        || contract::FreshKeyEachCall(blob_at(&account, &c)),
        Counter::PLAIN,
    )
    .await;
    let err = result.expect_err("an adapter without a stable turn key must fail the guarantee");
    assert!(err.contains("refused as conflicts"), "{err}");
}

/// The turn key names the stored item, not the client value: two clients of one blob share
/// it, other blobs and entities have their own.
#[test]
fn contract_versioned_keys_name_the_item() {
    let account = support::account();
    let a = blob_at(&account, "cont1");
    let b = blob_at(&account, "cont1");
    let other = blob_at(&account, "cont2");
    assert_eq!(a.identity(), b.identity());
    assert_ne!(a.identity(), other.identity());
    let table = support::table::service().table("turnkeys").unwrap();
    let e1: VersionedEntity<u64> = table.versioned("p", "r").unwrap();
    let e1b: VersionedEntity<u64> = support::table::service()
        .table("turnkeys")
        .unwrap()
        .versioned("p", "r")
        .unwrap();
    let e2: VersionedEntity<u64> = table.versioned("p", "r2").unwrap();
    assert_eq!(e1.identity(), e1b.identity());
    assert_ne!(e1.identity(), e2.identity());
}

// ---------------------------------------------------------------------------------------------
// Table entity.

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct TableCount {
    partition_key: String,
    row_key: String,
    count: i64,
}

const TABLE_COUNT: Counter<TableCount> = Counter {
    value: |n| TableCount {
        partition_key: "c".into(),
        row_key: "n".into(),
        count: n as i64,
    },
    count: |c| c.count as u64,
};

fn entity_at(account: &StorageAccount, table: &str) -> VersionedEntity<TableCount> {
    TableServiceClient::new(account)
        .unwrap()
        .table(table)
        .unwrap()
        .versioned("c", "n")
        .unwrap()
}

async fn fresh_table() -> (StorageAccount, String) {
    let t = support::table::fresh_table("contract").await;
    (support::account(), t.name().to_string())
}

fn table_item((account, t): &(StorageAccount, String)) -> VersionedEntity<TableCount> {
    entity_at(account, t)
}

/// The counter entity through a fault proxy, the same entity reached directly, and the proxy.
async fn table_faults() -> (
    VersionedEntity<TableCount>,
    VersionedEntity<TableCount>,
    HttpWrites,
) {
    let (account, t) = fresh_table().await;
    let proxy = FaultProxy::start(&account, Service::Table).await;
    let proxied = proxy.account(&account);
    // Update Entity (PUT, If-Match) replaces; Insert Entity (POST to the table) creates.
    let faults = HttpWrites {
        proxy,
        replace: ("PUT", "RowKey="),
        create: ("POST", ""),
    };
    (
        entity_at(&proxied, &t),
        entity_at(&support::account(), &t),
        faults,
    )
}

// No snapshots: a read returns the entity's Timestamp, which the service sets.
testkit::contract_versioned!(
    table,
    place = fresh_table().await,
    item = table_item,
    counter = TABLE_COUNT,
    snapshots = false,
    faults = table_faults().await
);

// ---------------------------------------------------------------------------------------------
// Redis key.

#[cfg(feature = "redis")]
mod redis_backend {
    use azstore::redis::{RedisClient, RedisConfig, RedisJson};
    use testkit::redis::{RedisProxy, redis_url};

    pub fn key() -> String {
        format!("azstore-test:{}", testkit::unique("contract"))
    }

    pub fn json_at(url: &str, key: &str) -> RedisJson<u64> {
        RedisClient::new(RedisConfig::from_url(url).unwrap())
            .unwrap()
            .json(key)
            .unwrap()
    }

    pub fn json(key: &str) -> RedisJson<u64> {
        json_at(&redis_url(), key)
    }

    /// The JSON of a fresh key through a proxy, the same key reached directly, and the
    /// proxy.
    pub async fn faults() -> (RedisJson<u64>, RedisJson<u64>, RedisProxy) {
        let k = key();
        let proxy = RedisProxy::start(&redis_url()).await;
        (json_at(&proxy.url(), &k), json(&k), proxy)
    }
}

#[cfg(feature = "redis")]
testkit::contract_versioned!(
    redis,
    place = redis_backend::key(),
    item = redis_backend::json,
    counter = Counter::PLAIN,
    snapshots = true,
    faults = redis_backend::faults().await
);

// ---------------------------------------------------------------------------------------------
// Cosmos DB item.

#[cfg(feature = "cosmos")]
pub(crate) mod cosmos_backend {
    use azstore::cosmos::{CosmosClient, CosmosContainer, CosmosItem, CosmosKey, EMULATOR_KEY};
    use serde::{Deserialize, Serialize};
    use testkit::contract::versioned::Counter;
    use testkit::fault::FaultProxy;

    pub fn endpoint() -> String {
        std::env::var("AZSTORE_COSMOS_ENDPOINT").unwrap_or_else(|_| {
            panic!(
                "AZSTORE_COSMOS_ENDPOINT is not set: run the tests through `scripts/cosmos run \
                 -- cargo test -p azstore --features cosmos --test it contract_`"
            )
        })
    }

    /// A fault proxy in front of the Cosmos DB server, and the endpoint through it.
    pub async fn proxy() -> (FaultProxy, String) {
        let ep = endpoint();
        let hostport = ep
            .trim_start_matches("http://")
            .trim_end_matches('/')
            .to_string();
        let proxy = FaultProxy::to_host(&hostport).await;
        let proxied = format!("http://127.0.0.1:{}", proxy.port());
        (proxy, proxied)
    }

    pub fn client_at(endpoint: &str) -> CosmosClient {
        CosmosClient::new(endpoint, CosmosKey::new(EMULATOR_KEY).unwrap()).unwrap()
    }

    /// A container (partition key path `/pk`) in a database of its own; returns its
    /// database id.
    pub async fn fresh(prefix: &str) -> String {
        let db = client_at(&endpoint())
            .database(&testkit::unique(prefix))
            .unwrap();
        assert!(db.create_if_not_exists().await.unwrap());
        let c = db.container("items", "/pk").unwrap();
        assert!(c.create_if_not_exists().await.unwrap());
        db.id().to_string()
    }

    pub fn container_at(endpoint: &str, db: &str) -> CosmosContainer {
        client_at(endpoint)
            .database(db)
            .unwrap()
            .container("items", "/pk")
            .unwrap()
    }

    #[derive(Debug, Clone, Serialize, Deserialize)]
    pub struct Count {
        pub n: u64,
    }

    pub const COUNT: Counter<Count> = Counter {
        value: |n| Count { n },
        count: |c| c.n,
    };

    /// The counter item through a client of its own.
    pub fn item_at(endpoint: &str, db: &str) -> CosmosItem<Count> {
        container_at(endpoint, db).item("counter", "k").unwrap()
    }

    pub fn item(db: &str) -> CosmosItem<Count> {
        item_at(&endpoint(), db)
    }
}

#[cfg(feature = "cosmos")]
/// The counter item through a fault proxy, the same item reached directly, and the proxy.
async fn cosmos_faults() -> (
    azstore::cosmos::CosmosItem<cosmos_backend::Count>,
    azstore::cosmos::CosmosItem<cosmos_backend::Count>,
    HttpWrites,
) {
    let db = cosmos_backend::fresh("contract").await;
    let (proxy, proxied) = cosmos_backend::proxy().await;
    // Replace Document is a PUT on the item; Create Document a POST to the collection's docs.
    let faults = HttpWrites {
        proxy,
        replace: ("PUT", "/docs/counter"),
        create: ("POST", "/docs"),
    };
    (
        cosmos_backend::item_at(&proxied, &db),
        cosmos_backend::item(&db),
        faults,
    )
}

#[cfg(feature = "cosmos")]
testkit::contract_versioned!(
    cosmos,
    place = cosmos_backend::fresh("contract").await,
    item = cosmos_backend::item,
    counter = cosmos_backend::COUNT,
    snapshots = true,
    faults = cosmos_faults().await
);

/// The one-process Cosmos DB case measured both ways: 8 tasks × 50 updates of one item
/// with turns (the default) and without (what `update()` did before a Cosmos DB item had a
/// turn key: `take_turns(false)` is that code path). Prints both; asserts 0 wasted writes
/// with turns and no lost update either way.
#[cfg(feature = "cosmos")]
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_one_process_cosmos_measured() {
    use cosmos_backend::*;
    for turns in [false, true] {
        let db = fresh("measure").await;
        let tally = contract::increments(
            || item(&db),
            COUNT,
            8,
            50,
            contract::policy().take_turns(turns),
        )
        .await
        .unwrap();
        println!(
            "cosmos, one process, 8 tasks x 50 updates, turns {turns}: {} conflicts, {} \
             attempts, stored {}",
            tally.conflicts, tally.attempts, tally.stored
        );
        assert_eq!(tally.stored, 400);
        if turns {
            assert_eq!(tally.conflicts, 0);
        }
    }
}

#[cfg(feature = "testing")]
testkit::contract_versioned!(
    memory,
    place = crate::memory::store(),
    item = crate::memory::json,
    counter = Counter::PLAIN,
    snapshots = true,
    faults = crate::memory::faults()
);
