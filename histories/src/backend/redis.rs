//! A Redis key on redis-server: `RedisJson` (register), `RedisLock` (lock) and `RedisLocks`
//! (shards), reached through testkit's Redis proxy, which loses replies and stalls.

use std::time::Duration;

use azstore::lock::LockOptions;
use azstore::redis::{RedisClient, RedisConfig, RedisJson, RedisLock, RedisLocks};
use azstore::update::{Current, Versioned};
use azstore::{ETag, Result};
use futures_util::future::{BoxFuture, LocalBoxFuture};
use testkit::redis::RedisProxy;

use super::{Backend, Family, Faults, Prepared, Register, Site};
use crate::rng::Rng;
use crate::writer::{LockRun, Reg, RegisterRun, FactoryRun};

/// A Redis key on redis-server.
pub struct Redis;

impl Backend for Redis {
    fn name(&self) -> &'static str {
        "redis"
    }

    fn prepare<'a>(&'a self, _: &'a str, _: Family) -> BoxFuture<'a, Box<dyn Prepared>> {
        Box::pin(async {
            let proxy = RedisProxy::start(&testkit::redis::redis_url()).await;
            Box::new(Proxied(proxy)) as Box<dyn Prepared>
        })
    }

    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(RedisRegister(
            client(site.address).json::<Reg>(site.resource).expect("key"),
        ))
    }

    fn lock<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: LockRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(RedisLock::with_options(client(site.address), site.resource, opts).expect("lock"))
    }

    fn locks<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: FactoryRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(RedisLocks::new(client(site.address), opts))
    }
}

/// A client of the server at `url`, with short timeouts (stalls outlast them).
fn client(url: &str) -> RedisClient {
    RedisClient::new(
        RedisConfig::from_url(url)
            .expect("redis url")
            .connect_timeout(Duration::from_millis(1500))
            .operation_timeout(Duration::from_millis(1500)),
    )
    .expect("redis client")
}

/// The proxy of one history: the writers are given its URL.
struct Proxied(RedisProxy);

impl Prepared for Proxied {
    fn address(&self) -> String {
        self.0.url()
    }
    fn direct(&self) -> String {
        testkit::redis::redis_url()
    }
    fn faults(&self) -> Vec<&dyn Faults> {
        vec![self]
    }
}

impl Faults for Proxied {
    /// The reply to the next SET, GET or EVAL lost (70 %), or the connection stalled for
    /// 200–2500 ms.
    fn inject<'a>(&'a self, rng: &'a mut Rng) -> BoxFuture<'a, String> {
        Box::pin(async move {
            if rng.chance(70) {
                let cmd = ["SET", "GET", "EVAL"][rng.below(3) as usize];
                self.0.lose_next_reply_to(cmd);
                format!("redis: lose the reply to the next {cmd}")
            } else {
                let ms = rng.between(200, 2500);
                self.0.stall(true);
                tokio::time::sleep(Duration::from_millis(ms)).await;
                self.0.stall(false);
                format!("redis: stalled {ms} ms")
            }
        })
    }

    fn clear(&self) {
        self.0.stall(false);
    }
}

/// `RedisJson<Reg>` as a register.
struct RedisRegister(RedisJson<Reg>);

impl Versioned for RedisRegister {
    type Value = Reg;
    async fn read(&self) -> Result<Option<Current<Reg>>> {
        self.0.read().await
    }
    async fn replace(&self, value: &Reg, etag: &ETag, write_id: &str) -> Result<ETag> {
        self.0.replace(value, etag, write_id).await
    }
    async fn create(&self, value: &Reg, write_id: &str) -> Result<ETag> {
        self.0.create(value, write_id).await
    }
    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.0.delete(etag).await
    }
    fn identity(&self) -> String {
        Versioned::identity(&self.0)
    }
    fn stores_write_ids(&self) -> bool {
        self.0.stores_write_ids()
    }
}

impl Register for RedisRegister {
    fn make(&self, reg: Reg) -> Reg {
        reg
    }
    fn get(&self, v: &Reg) -> Reg {
        v.clone()
    }
    async fn overwrite_value(&self, value: &Reg) -> Result<ETag> {
        self.0.overwrite(value).await
    }
}
