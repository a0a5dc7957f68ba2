//! A Cosmos DB item on the local Cosmos DB server (`scripts/cosmos run`): `CosmosItem`
//! (register), `CosmosLock` (lock) and `CosmosLocks` (shards) in the container `items` of the
//! history's database, reached through a fault proxy in front of the server.

use azstore::cosmos::{
    CosmosClient, CosmosContainer, CosmosItem, CosmosKey, CosmosLock, CosmosLocks, EMULATOR_KEY,
    PartitionKey,
};
use azstore::lock::LockOptions;
use azstore::{ETag, Result};
use futures_util::future::{BoxFuture, LocalBoxFuture};

use super::{Backend, Family, Faults, HttpFaults, Prepared, Register, Site};
use crate::writer::{LockRun, Reg, RegisterRun, FactoryRun, client_options};

/// A Cosmos DB item on the local Cosmos DB server.
pub struct Cosmos;

impl Backend for Cosmos {
    fn name(&self) -> &'static str {
        "cosmos"
    }

    fn prepare<'a>(&'a self, resource: &'a str, _: Family) -> BoxFuture<'a, Box<dyn Prepared>> {
        Box::pin(async move {
            let endpoint = endpoint();
            let c = container(&endpoint, resource);
            let db = c.client().database(resource).expect("database name");
            db.create_if_not_exists().await.expect("create database");
            c.create_if_not_exists().await.expect("create container");
            let hostport = endpoint.trim_start_matches("http://").trim_end_matches('/');
            let faults =
                HttpFaults::to_host(hostport, &["", "GET", "PUT", "POST", "DELETE"]).await;
            Box::new(Proxied(faults, c)) as Box<dyn Prepared>
        })
    }

    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()> {
        let item = container(site.address, site.resource)
            .item::<Reg>("register", PartitionKey::from("register"))
            .expect("item id");
        run.with(item)
    }

    fn lock<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: LockRun<'a>) -> LocalBoxFuture<'a, ()> {
        let c = container(site.address, site.resource);
        run.with(CosmosLock::with_options(c, "lock", "lock", opts).expect("lock"))
    }

    fn locks<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: FactoryRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(CosmosLocks::new(container(site.address, site.resource), opts))
    }

    /// 1 s: the local Cosmos DB server answers a group's reads more slowly.
    fn shard_interval_ms(&self) -> u64 {
        1000
    }
}

/// The local Cosmos DB server's endpoint (`scripts/cosmos run` exports it).
fn endpoint() -> String {
    std::env::var("AZSTORE_COSMOS_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_COSMOS_ENDPOINT is not set: run the campaigns through `scripts/cosmos run --` \
             (scripts/campaign and scripts/test do)"
        )
    })
}

/// The container `items` (partition key `/pk`) of database `resource` at `endpoint`.
fn container(endpoint: &str, resource: &str) -> CosmosContainer {
    CosmosClient::with_options(
        endpoint,
        CosmosKey::new(EMULATOR_KEY).expect("key"),
        client_options(),
    )
    .expect("cosmos client")
    .database(resource)
    .expect("database name")
    .container("items", "/pk")
    .expect("container name")
}

/// The proxy of one history (the writers are given its endpoint) and the container whose
/// database goes at the end.
struct Proxied(HttpFaults, CosmosContainer);

impl Prepared for Proxied {
    fn address(&self) -> String {
        format!("http://127.0.0.1:{}", self.0.port())
    }
    fn direct(&self) -> String {
        endpoint()
    }
    fn faults(&self) -> Vec<&dyn Faults> {
        vec![&self.0]
    }
    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {
            if let Ok(db) = self.1.client().database(self.1.database_id()) {
                let _ = db.delete_if_exists().await;
            }
        })
    }
}

impl Register for CosmosItem<Reg> {
    fn make(&self, reg: Reg) -> Reg {
        reg
    }
    fn get(&self, v: &Reg) -> Reg {
        v.clone()
    }
    async fn overwrite_value(&self, value: &Reg) -> Result<ETag> {
        self.overwrite(value).await
    }
}
