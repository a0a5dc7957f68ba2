//! `azstore::memory` — `MemoryJson` (register), `MemoryLockTarget` (lock) and `MemoryLocks`
//! (shards, semaphore, reader-writer lock) — in one `MemoryStore` per history, served from
//! the campaign process on 127.0.0.1 (`server.rs`): the writers, processes of their own,
//! reach it through a client that forwards each call (`client.rs`). Every call runs the memory
//! adapter's own method at the store's time, the campaign's clock, so a writer that is frozen
//! or killed loses its leases as it would on a server. The nemesis injects the store's own
//! fault hooks: a lost reply (applied, then no answer), a failed call (not applied), the
//! store unreachable for a while; and it holds calls in the network for a while (they apply
//! late, after the writer may have given up on them).

mod client;
mod server;
#[cfg(test)]
mod tests;
mod wire;

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use azstore::lock::{Lock, LockOptions};
use azstore::memory::{MemoryStore, Op};
use futures_util::future::{BoxFuture, LocalBoxFuture};
use tokio::task::JoinHandle;

use super::{Backend, Family, Faults, Prepared, Site};
use crate::rng::Rng;
use crate::writer::{FactoryRun, LockRun, Reg, RegisterRun};
use client::{Remote, RemoteJson, RemoteLockTarget, RemoteLocks};
use server::Conn;

/// An `azstore::memory` store served from the campaign process.
pub struct Memory;

impl Backend for Memory {
    fn name(&self) -> &'static str {
        "memory"
    }

    fn prepare<'a>(&'a self, _: &'a str, family: Family) -> BoxFuture<'a, Box<dyn Prepared>> {
        Box::pin(async move {
            let store = MemoryStore::new();
            let faulty = Conn::new(&store);
            let (address, writers) = server::serve(faulty.clone()).await;
            let (direct, campaign) = server::serve(Conn::new(&store)).await;
            let ops: &[Op] = match family {
                Family::Register => &[Op::Any, Op::Write, Op::Read, Op::Replace, Op::Create],
                _ => &[Op::Any, Op::Acquire, Op::Renew, Op::Release, Op::Status],
            };
            Box::new(Served {
                faulty,
                address,
                direct,
                tasks: [writers, campaign],
                ops,
            }) as Box<dyn Prepared>
        })
    }

    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()> {
        let remote = Remote::new(site.address);
        run.with(RemoteJson::<Reg>::new(remote, "register").expect("item name"))
    }

    fn lock<'a>(
        &'a self,
        site: Site<'a>,
        opts: LockOptions,
        run: LockRun<'a>,
    ) -> LocalBoxFuture<'a, ()> {
        let target = RemoteLockTarget::new(Remote::new(site.address), "lock").expect("lock name");
        run.with(Lock::from_target(target, opts).expect("lock"))
    }

    fn locks<'a>(
        &'a self,
        site: Site<'a>,
        opts: LockOptions,
        run: FactoryRun<'a>,
    ) -> LocalBoxFuture<'a, ()> {
        run.with(RemoteLocks::new(Remote::new(site.address), opts))
    }
}

/// The store of one history, served twice: to the writers through the fault hooks of one
/// connection, and to the campaign's final read through another that has none.
struct Served {
    faulty: Arc<Conn>,
    address: SocketAddr,
    direct: SocketAddr,
    tasks: [JoinHandle<()>; 2],
    /// The operations the faults aim at.
    ops: &'static [Op],
}

impl Prepared for Served {
    fn address(&self) -> String {
        self.address.to_string()
    }

    fn direct(&self) -> String {
        self.direct.to_string()
    }

    fn faults(&self) -> Vec<&dyn Faults> {
        vec![self]
    }

    fn cleanup(&self) -> BoxFuture<'_, ()> {
        for t in &self.tasks {
            t.abort();
        }
        Box::pin(async {})
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Faults for Served {
    /// The store's hooks on the writers' connection: the reply to the next call of an
    /// operation lost after it applied (40 %), the next call failed unapplied (25 %), the
    /// store unreachable for 200–2500 ms (20 %); or every call held 200–2500 ms before it
    /// applies (15 %: the writers' calls time out after 1.5 s and may apply later).
    fn inject<'a>(&'a self, rng: &'a mut Rng) -> BoxFuture<'a, String> {
        Box::pin(async move {
            let op = self.ops[rng.below(self.ops.len() as u64) as usize];
            let store = self.faulty.store();
            match rng.below(100) {
                0..40 => {
                    store.lose_next_reply(op);
                    format!("memory: lose the reply to the next {op:?}")
                }
                40..65 => {
                    store.fail_next_call(op);
                    format!("memory: fail the next {op:?}")
                }
                65..85 => {
                    let ms = rng.between(200, 2500);
                    store.set_reachable(false);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    store.set_reachable(true);
                    format!("memory: unreachable for {ms} ms")
                }
                _ => {
                    let ms = rng.between(200, 2500);
                    self.faulty.hold(ms);
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    format!("memory: calls held {ms} ms")
                }
            }
        })
    }

    fn clear(&self) {
        self.faulty.clear();
    }
}
