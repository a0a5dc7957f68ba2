//! A blob on Azurite: `BlobJson` (register), `BlobLock` (lock) and `BlobLocks` (shards), in the
//! history's container, reached through a fault proxy in front of Azurite's Blob service.

use azstore::Service;
use azstore::blob::{BlobLock, BlobLocks, ContainerClient};
use azstore::lock::LockOptions;
use azstore::blob::BlobJson;
use azstore::{ETag, Result};
use futures_util::future::{BoxFuture, LocalBoxFuture};

use super::{Backend, Family, Faults, HttpFaults, Prepared, Register, Site};
use crate::writer::{LockRun, Reg, RegisterRun, FactoryRun, container_client, via_proxies};

/// A blob on Azurite.
pub struct Blob;

impl Backend for Blob {
    fn name(&self) -> &'static str {
        "blob"
    }

    fn prepare<'a>(&'a self, _: &'a str, family: Family) -> BoxFuture<'a, Box<dyn Prepared>> {
        // The lock reads the blob's properties (HEAD); `update()` sends GET and PUT.
        let methods: &[&str] = match family {
            Family::Register => &["", "GET", "PUT"],
            _ => &["", "GET", "PUT", "HEAD"],
        };
        Box::pin(async move {
            let faults = HttpFaults::start(&testkit::account(), Service::Blob, methods).await;
            Box::new(Proxied(faults)) as Box<dyn Prepared>
        })
    }

    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(BlobJson::<Reg>::new(
            container(site).blob("register").expect("blob name"),
        ))
    }

    fn lock<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: LockRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(BlobLock::with_options(container(site), "lock", opts).expect("lock"))
    }

    fn locks<'a>(&'a self, site: Site<'a>, opts: LockOptions, run: FactoryRun<'a>) -> LocalBoxFuture<'a, ()> {
        run.with(BlobLocks::new(container(site), opts))
    }
}

/// The history's container, through the proxy on the port in `site.address` ("": directly).
fn container(site: Site<'_>) -> ContainerClient {
    let account = testkit::account();
    let account = match site.address.parse::<u16>() {
        Ok(port) => via_proxies(&account, &[(Service::Blob, port)]),
        Err(_) => account,
    };
    container_client(&account, site.resource)
}

/// The proxy of one history: the writers are given its port.
struct Proxied(HttpFaults);

impl Prepared for Proxied {
    fn address(&self) -> String {
        self.0.port().to_string()
    }
    fn direct(&self) -> String {
        String::new()
    }
    fn faults(&self) -> Vec<&dyn Faults> {
        vec![&self.0]
    }
}

impl Register for BlobJson<Reg> {
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
