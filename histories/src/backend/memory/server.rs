//! The store served from the campaign process: each call runs the memory adapter's own
//! method on one connection of the store (`MemoryJson`, `MemoryLockTarget` made by
//! `MemoryLocks`, `MemoryLease`) at the store's time — the campaign's clock, as a server's.
//! A call whose reply the store's fault hook lost (`RequestSent::Maybe`) has applied, and
//! the connection closes without an answer: the writer's client cannot tell whether it did.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use azstore::leader::LockFactory;
use azstore::lease::Leasable;
use azstore::lock::{Attempt, LockClaim, LockOptions, LockTarget, Probe};
use azstore::memory::{MemoryLockTarget, MemoryLocks, MemoryStore};
use azstore::update::Versioned;
use azstore::{ETag, Error, ErrorKind, LeaseId, RequestSent, Result};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::wire::{Call, Reply, Status, WireError, duration, encode, period};

/// One connection of the store as a listener serves it: its fault hooks are the ones the
/// nemesis sets, and clearing them starts a fresh connection (no hook left pending).
pub struct Conn {
    base: MemoryStore,
    current: Mutex<MemoryStore>,
    /// Calls arriving before this wait until then (a network that holds requests).
    held_until: Mutex<Option<Instant>>,
}

fn locked<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Conn {
    /// A new connection to `store`'s data.
    pub fn new(store: &MemoryStore) -> Arc<Conn> {
        Arc::new(Conn {
            base: store.clone(),
            current: Mutex::new(store.connection()),
            held_until: Mutex::new(None),
        })
    }

    /// The connection the calls go through now (its fault hooks are the nemesis's).
    pub fn store(&self) -> MemoryStore {
        locked(&self.current).clone()
    }

    /// Holds the calls that arrive for `ms` ms (they apply afterwards).
    pub fn hold(&self, ms: u64) {
        *locked(&self.held_until) = Some(Instant::now() + Duration::from_millis(ms));
    }

    /// Ends every fault: no call held, no hook pending, reachable.
    pub fn clear(&self) {
        *locked(&self.held_until) = None;
        *locked(&self.current) = self.base.connection();
    }

    async fn wait_while_held(&self) {
        loop {
            let until = *locked(&self.held_until);
            match until {
                Some(t) if Instant::now() < t => tokio::time::sleep_until(t).await,
                _ => return,
            }
        }
    }
}

/// Serves `conn` on 127.0.0.1 (a free port): its address and the listener's task.
pub async fn serve(conn: Arc<Conn>) -> (SocketAddr, JoinHandle<()>) {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("memory server port");
    let addr = listener.local_addr().expect("memory server address");
    let task = tokio::spawn(async move {
        loop {
            if let Ok((sock, _)) = listener.accept().await {
                tokio::spawn(answer(sock, conn.clone()));
            }
        }
    });
    (addr, task)
}

/// Reads one call, runs it, writes its reply (none when the store lost it).
async fn answer(sock: TcpStream, conn: Arc<Conn>) {
    let (r, mut w) = sock.into_split();
    let mut line = String::new();
    if BufReader::new(r).read_line(&mut line).await.unwrap_or(0) == 0 {
        return;
    }
    let result = match serde_json::from_str::<Call>(&line) {
        Ok(call) => {
            conn.wait_while_held().await;
            run(&conn.store(), call).await
        }
        Err(e) => Err(Error::new(
            ErrorKind::Service,
            format!("malformed memory call: {e}"),
        )),
    };
    let reply = match result {
        Ok(v) => Reply::Ok(v),
        // Applied, or may have: the answer is lost on the way, the connection just closes.
        Err(e) if e.request_sent() == RequestSent::Maybe => return,
        Err(e) => Reply::Err(WireError::from_error(&e)),
    };
    let mut bytes = serde_json::to_vec(&reply).expect("reply as JSON");
    bytes.push(b'\n');
    let _ = w.write_all(&bytes).await;
}

/// The lock `name` as the memory adapter's lock factory names it.
fn target(store: &MemoryStore, name: &str) -> Result<MemoryLockTarget> {
    let lock = MemoryLocks::new(store.clone(), LockOptions::default()).make(name, "served")?;
    Ok(lock.target().clone())
}

/// Runs `call` with the memory adapter's method.
async fn run(store: &MemoryStore, call: Call) -> Result<Value> {
    match call {
        Call::Read { item } => {
            let current = store.json::<Value>(&item)?.read().await?;
            Ok(current.map_or(Value::Null, |c| {
                json!({"value": c.value, "etag": c.etag.as_str(), "write_id": c.write_id})
            }))
        }
        Call::Create {
            item,
            value,
            write_id,
        } => {
            let etag = store.json::<Value>(&item)?.create(&value, &write_id).await?;
            Ok(json!(etag.as_str()))
        }
        Call::Replace {
            item,
            value,
            etag,
            write_id,
        } => {
            let json = store.json::<Value>(&item)?;
            let etag = json.replace(&value, &ETag::new(etag), &write_id).await?;
            Ok(json!(etag.as_str()))
        }
        Call::Delete { item, etag } => {
            store.json::<Value>(&item)?.delete(&ETag::new(etag)).await?;
            Ok(Value::Null)
        }
        Call::Overwrite { item, value } => overwrite(store, &item, &value).await,
        Call::TryLock {
            lock,
            proposed,
            duration: secs,
            owner,
        } => {
            let claim = LockClaim::new(LeaseId::new(proposed)?, duration(secs)?, owner.into());
            Ok(match target(store, &lock)?.try_lock(&claim).await? {
                Attempt::Acquired { fencing_token, .. } => json!(fencing_token),
                Attempt::Busy => Value::Null,
            })
        }
        Call::Probe { lock } => Ok(json!(match target(store, &lock)?.probe().await? {
            Probe::Free => "free",
            Probe::Busy => "busy",
            _ => "unknown",
        })),
        Call::Status { lock } => {
            let status = target(store, &lock)?.status().await?;
            Ok(encode(&Status::from(&status)))
        }
        Call::StatusMany { locks } => {
            let targets = locks
                .iter()
                .map(|l| target(store, l))
                .collect::<Result<Vec<_>>>()?;
            let refs: Vec<&MemoryLockTarget> = targets.iter().collect();
            let read = MemoryLockTarget::status_many(&refs).await?;
            let statuses: Vec<Status> = read.statuses.iter().map(Status::from).collect();
            Ok(json!({"statuses": statuses, "requests": read.requests}))
        }
        Call::BreakLock { lock, period: p } => {
            let broken = target(store, &lock)?.break_lease(period(p)?).await?;
            Ok(encode(&broken.remaining))
        }
        Call::Abandon { lock, proposed } => {
            target(store, &lock)?
                .abandon(&LeaseId::new(proposed)?)
                .await;
            Ok(Value::Null)
        }
        Call::Acquire {
            lease,
            duration: secs,
            proposed,
        } => {
            let id = LeaseId::new(proposed)?;
            let got = store.lease(&lease)?.lease_acquire(duration(secs)?, &id).await?;
            Ok(json!(got.lease_id.as_str()))
        }
        Call::Renew { lease, id } => {
            let got = store.lease(&lease)?.lease_renew(&LeaseId::new(id)?).await?;
            Ok(json!(got.lease_id.as_str()))
        }
        Call::Change {
            lease,
            id,
            proposed,
        } => {
            let (id, proposed) = (LeaseId::new(id)?, LeaseId::new(proposed)?);
            let got = store.lease(&lease)?.lease_change(&id, &proposed).await?;
            Ok(json!(got.lease_id.as_str()))
        }
        Call::Release { lease, id } => {
            store.lease(&lease)?.lease_release(&LeaseId::new(id)?).await?;
            Ok(Value::Null)
        }
        Call::Break { lease, period: p } => {
            let broken = store.lease(&lease)?.lease_break(period(p)?).await?;
            Ok(encode(&broken.remaining))
        }
    }
}

/// The broken register's write: whatever the item holds, replaced at the ETag just read
/// (created when absent), until one write applies — no condition of the writer's.
async fn overwrite(store: &MemoryStore, item: &str, value: &Value) -> Result<Value> {
    let json = store.json::<Value>(item)?;
    loop {
        let written = match json.read().await? {
            None => json.create(value, "overwrite").await,
            Some(c) => json.replace(value, &c.etag, "overwrite").await,
        };
        match written {
            Ok(etag) => return Ok(json!(etag.as_str())),
            Err(e) if e.is_precondition_failed() || e.is_conflict() || e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
}

