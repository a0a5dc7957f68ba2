//! The writers' side: `Versioned`, `LockTarget`, `Leasable` and `LockFactory` that forward
//! each call to the served store and hand back its answer — the same value, or the same
//! error kind and `RequestSent`. A connection closed before the reply, or no reply in time,
//! is a lost reply (`Timeout`, `RequestSent::Maybe`). What needs no call (name checks, lease
//! capabilities, snapshots) is the memory adapter's own answer, from a local store that is
//! never written.

use std::time::Duration;

use azstore::leader::LockFactory;
use azstore::lease::{
    BreakPeriod, Leasable, LeaseBroken, LeaseCapabilities, LeaseDuration, LeaseReleased,
    LeaseResult,
};
use azstore::lock::{
    Attempt, Lock, LockClaim, LockOptions, LockStatus, LockTarget, Probe, StatusMany,
    status_each,
};
use azstore::memory::{MemoryJson, MemoryLease, MemoryLockTarget, MemoryLocks, MemoryStore};
use azstore::update::{Current, Versioned};
use azstore::{ETag, Error, ErrorKind, LeaseId, RequestSent, Result};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::time::Instant;

use super::wire::{Call, Owner, Reply, Status, decode, duration_secs};
use crate::backend::Register;
use crate::writer::Reg;

/// The longest a call waits for its reply (the held calls of the nemesis outlast it).
const CALL_TIMEOUT: Duration = Duration::from_millis(1500);

/// The served store at one address.
#[derive(Debug, Clone)]
pub struct Remote {
    addr: String,
    /// Answers what needs no call; never written.
    local: MemoryStore,
}

impl Remote {
    /// The store served at `addr` (`host:port`).
    pub fn new(addr: &str) -> Remote {
        Remote {
            addr: addr.to_string(),
            local: MemoryStore::new(),
        }
    }

    /// The identity of `name` in the served store (turn keys, wake-up keys).
    fn key(&self, name: &str) -> String {
        format!("memory://{}/{name}", self.addr)
    }

    /// One call: its value, or the store's error.
    async fn call(&self, call: Call) -> Result<Value> {
        let mut line = serde_json::to_vec(&call).expect("call as JSON");
        line.push(b'\n');
        let name = serde_json::to_value(&call).expect("call as JSON")["call"].take();
        let what = format!("memory {} at {}", name.as_str().unwrap_or("call"), self.addr);
        match tokio::time::timeout(CALL_TIMEOUT, self.exchange(&line, &what)).await {
            Ok(result) => result,
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!("{what}: no reply within {CALL_TIMEOUT:?}; it may have applied"),
            )),
        }
    }

    async fn exchange(&self, line: &[u8], what: &str) -> Result<Value> {
        let mut sock = TcpStream::connect(&self.addr).await.map_err(|e| {
            Error::new(ErrorKind::Transport, format!("{what}: cannot connect: {e}"))
                .with_sent(RequestSent::No)
        })?;
        let lost = |e: String| {
            Error::new(
                ErrorKind::Timeout,
                format!("{what}: the reply was lost ({e}); it may have applied"),
            )
        };
        sock.write_all(line).await.map_err(|e| lost(e.to_string()))?;
        let mut reply = String::new();
        let n = BufReader::new(sock)
            .read_line(&mut reply)
            .await
            .map_err(|e| lost(e.to_string()))?;
        if n == 0 {
            return Err(lost("connection closed".into()));
        }
        match serde_json::from_str::<Reply>(&reply) {
            Ok(Reply::Ok(v)) => Ok(v),
            Ok(Reply::Err(e)) => Err(e.into_error()),
            Err(e) => Err(Error::new(
                ErrorKind::Service,
                format!("{what}: malformed reply: {e}"),
            )),
        }
    }
}

/// The item `name` of the served store, a `MemoryJson` elsewhere.
pub struct RemoteJson<T> {
    remote: Remote,
    name: String,
    local: MemoryJson<T>,
}

impl<T> RemoteJson<T> {
    /// The item `name` (checked as `MemoryJson::new` checks it).
    pub fn new(remote: Remote, name: &str) -> Result<RemoteJson<T>> {
        let local = MemoryJson::new(remote.local.clone(), name)?;
        Ok(RemoteJson {
            remote,
            name: name.to_string(),
            local,
        })
    }
}

fn value_of<T: Serialize>(v: &T) -> Result<Value> {
    serde_json::to_value(v)
        .map_err(|e| Error::invalid_input(format!("value cannot be serialized to JSON: {e}")))
}

fn etag(v: Value) -> Result<ETag> {
    Ok(ETag::new(decode::<String>(v)?))
}

impl<T> Versioned for RemoteJson<T>
where
    T: Serialize + DeserializeOwned + Send + Sync,
{
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        let got = self
            .remote
            .call(Call::Read {
                item: self.name.clone(),
            })
            .await?;
        #[derive(serde::Deserialize)]
        struct Item {
            value: Value,
            etag: String,
            write_id: Option<String>,
        }
        decode::<Option<Item>>(got)?
            .map(|i| {
                Ok(Current {
                    value: decode(i.value)?,
                    etag: ETag::new(i.etag),
                    write_id: i.write_id,
                })
            })
            .transpose()
    }

    async fn replace(&self, value: &T, etag_: &ETag, write_id: &str) -> Result<ETag> {
        let call = Call::Replace {
            item: self.name.clone(),
            value: value_of(value)?,
            etag: etag_.as_str().to_string(),
            write_id: write_id.to_string(),
        };
        etag(self.remote.call(call).await?)
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        let call = Call::Create {
            item: self.name.clone(),
            value: value_of(value)?,
            write_id: write_id.to_string(),
        };
        etag(self.remote.call(call).await?)
    }

    async fn delete(&self, etag_: &ETag) -> Result<()> {
        let call = Call::Delete {
            item: self.name.clone(),
            etag: etag_.as_str().to_string(),
        };
        self.remote.call(call).await.map(drop)
    }

    fn stores_write_ids(&self) -> bool {
        self.local.stores_write_ids()
    }

    fn identity(&self) -> String {
        self.remote.key(&self.name)
    }

    fn snapshot(&self, value: &T) -> Option<Vec<u8>> {
        self.local.snapshot(value)
    }

    fn restore(&self, snapshot: &[u8]) -> Option<T> {
        self.local.restore(snapshot)
    }
}

impl Register for RemoteJson<Reg> {
    fn make(&self, reg: Reg) -> Reg {
        reg
    }
    fn get(&self, v: &Reg) -> Reg {
        v.clone()
    }
    async fn overwrite_value(&self, value: &Reg) -> Result<ETag> {
        let call = Call::Overwrite {
            item: self.name.clone(),
            value: value_of(value)?,
        };
        etag(self.remote.call(call).await?)
    }
}

/// The lease `name` of the served store, a `MemoryLease` elsewhere.
#[derive(Debug, Clone)]
pub struct RemoteLease {
    remote: Remote,
    local: MemoryLease,
}

impl RemoteLease {
    fn name(&self) -> String {
        self.local.name().to_string()
    }

    async fn lease_id(&self, call: Call) -> Result<LeaseResult> {
        let id = LeaseId::new(decode::<String>(self.remote.call(call).await?)?)?;
        Ok(LeaseResult::new(id, None))
    }
}

impl Leasable for RemoteLease {
    fn lease_target(&self) -> String {
        self.local.lease_target()
    }

    fn lease_capabilities(&self) -> LeaseCapabilities {
        self.local.lease_capabilities()
    }

    async fn lease_acquire(&self, d: LeaseDuration, proposed: &LeaseId) -> Result<LeaseResult> {
        self.lease_id(Call::Acquire {
            lease: self.name(),
            duration: duration_secs(d),
            proposed: proposed.as_str().to_string(),
        })
        .await
    }

    async fn lease_renew(&self, id: &LeaseId) -> Result<LeaseResult> {
        self.lease_id(Call::Renew {
            lease: self.name(),
            id: id.as_str().to_string(),
        })
        .await
    }

    async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
        self.lease_id(Call::Change {
            lease: self.name(),
            id: id.as_str().to_string(),
            proposed: proposed.as_str().to_string(),
        })
        .await
    }

    async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
        let call = Call::Release {
            lease: self.name(),
            id: id.as_str().to_string(),
        };
        self.remote.call(call).await?;
        Ok(LeaseReleased::new(None))
    }

    async fn lease_break(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        let call = Call::Break {
            lease: self.name(),
            period: period.map(BreakPeriod::as_secs),
        };
        Ok(LeaseBroken::new(decode(self.remote.call(call).await?)?, None))
    }
}

/// The lock `name` of the served store, a `MemoryLockTarget` elsewhere.
#[derive(Debug, Clone)]
pub struct RemoteLockTarget {
    lease: RemoteLease,
}

impl RemoteLockTarget {
    /// The lock `name` (checked as `MemoryLockTarget::new` checks it).
    pub fn new(remote: Remote, name: &str) -> Result<RemoteLockTarget> {
        let local = MemoryLockTarget::new(remote.local.clone(), name)?
            .lease()
            .clone();
        Ok(RemoteLockTarget {
            lease: RemoteLease { remote, local },
        })
    }

    fn remote(&self) -> &Remote {
        &self.lease.remote
    }

    fn name(&self) -> String {
        self.lease.name()
    }
}

impl LockTarget for RemoteLockTarget {
    type Lease = RemoteLease;

    fn identity(&self) -> String {
        self.remote().key(&self.name())
    }

    async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<RemoteLease>> {
        let sent_at = Instant::now();
        let call = Call::TryLock {
            lock: self.name(),
            proposed: claim.proposed.as_str().to_string(),
            duration: duration_secs(claim.duration),
            owner: Owner::from(&claim.owner),
        };
        Ok(match decode::<Option<u64>>(self.remote().call(call).await?)? {
            Some(fencing_token) => Attempt::Acquired {
                lease: self.lease.clone(),
                fencing_token,
                sent_at,
            },
            None => Attempt::Busy,
        })
    }

    async fn probe(&self) -> Result<Probe> {
        let got = self.remote().call(Call::Probe { lock: self.name() }).await?;
        Ok(match decode::<String>(got)?.as_str() {
            "free" => Probe::Free,
            "busy" => Probe::Busy,
            _ => Probe::Unknown,
        })
    }

    async fn status(&self) -> Result<LockStatus> {
        let got = self.remote().call(Call::Status { lock: self.name() }).await?;
        Ok(decode::<Status>(got)?.into())
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        let call = Call::BreakLock {
            lock: self.name(),
            period: period.map(BreakPeriod::as_secs),
        };
        Ok(LeaseBroken::new(decode(self.remote().call(call).await?)?, None))
    }

    async fn abandon(&self, proposed: &LeaseId) {
        let call = Call::Abandon {
            lock: self.name(),
            proposed: proposed.as_str().to_string(),
        };
        let _ = self.remote().call(call).await;
    }

    /// One call for all the locks of one served store (`MemoryLockTarget::status_many` runs
    /// there); one status call each otherwise.
    async fn status_many(targets: &[&Self]) -> Result<StatusMany> {
        let Some(first) = targets.first() else {
            return Ok(StatusMany::default());
        };
        if targets.iter().any(|t| t.remote().addr != first.remote().addr) {
            return status_each(targets).await;
        }
        let call = Call::StatusMany {
            locks: targets.iter().map(|t| t.name()).collect(),
        };
        #[derive(serde::Deserialize)]
        struct Read {
            statuses: Vec<Status>,
            requests: u64,
        }
        let read: Read = decode(first.remote().call(call).await?)?;
        Ok(StatusMany::new(
            read.statuses.into_iter().map(LockStatus::from).collect(),
            read.requests,
        ))
    }
}

/// The served store's locks, a `MemoryLocks` elsewhere.
#[derive(Debug, Clone)]
pub struct RemoteLocks {
    remote: Remote,
    options: LockOptions,
}

impl RemoteLocks {
    /// Locks in the store at `remote`, made with `options`.
    pub fn new(remote: Remote, options: LockOptions) -> RemoteLocks {
        RemoteLocks { remote, options }
    }
}

impl LockFactory for RemoteLocks {
    type Lock = Lock<RemoteLockTarget>;

    /// The lock `MemoryLocks` makes for `name` and `label` (its checks, its name, its
    /// options), on the served store.
    fn make(&self, name: &str, label: &str) -> Result<Lock<RemoteLockTarget>> {
        let local = MemoryLocks::new(self.remote.local.clone(), self.options.clone());
        let made = local.make(name, label)?;
        let target = RemoteLockTarget::new(self.remote.clone(), made.target().lease().name())?;
        Lock::from_target(target, made.options().clone())
    }
}
