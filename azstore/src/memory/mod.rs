//! An in-memory backend for tests (cargo feature `testing`): [`MemoryJson`] is
//! [`Versioned`](crate::update::Versioned), [`MemoryLease`] is
//! [`Leasable`](crate::lease::Leasable) and [`MemoryLockTarget`] is
//! [`LockTarget`](crate::lock::LockTarget), with the semantics of the real backends, so that
//! code generic over those traits — your own [`update`](crate::update::update) closures, a
//! [`LeaseGuard`](crate::lease::LeaseGuard), a [`Lock`](crate::lock::Lock), a
//! [`Semaphore`](crate::lock::Semaphore), an [`Election`](crate::leader::Election) or a
//! [`ShardGroup`](crate::leader::ShardGroup) — can be tested without a server. It runs
//! every contract suite the real backends run.
//!
//! What it keeps, per [`MemoryStore`] (cheap to clone; clones share the state):
//!
//! * **Items** (JSON values): an ETag that changes on every write, create-only (`Conflict`
//!   when the item exists), replace and delete only at the ETag given
//!   (`PreconditionFailed` otherwise, `NotFound` when absent), the write id stored with the
//!   value so that `update()` recognises its own writes after a lost reply.
//! * **Leases**: 15–60 s or infinite, acquire (repeating it with the holder's id succeeds),
//!   renew, change, release, break with a period; a lease expires on the store's clock.
//! * **Lock records**: a lease plus a fencing token set in the same step as the acquire, by
//!   the lock module's formula ([`next_fencing_token`](crate::lock::next_fencing_token)) on the
//!   store's clock in milliseconds since the Unix epoch, and the owner.
//!
//! Leases and items are separate records under one name: a write to an item does not check
//! a lease (as with Redis keys).
//!
//! # Time
//! A lease expires when the store's time passes its end. The store's time is the larger of
//! two elapsed times since it was made: its [`Clock`] (default [`Clock::system`]) and tokio's
//! clock. So:
//!
//! * Under `tokio::time::pause()` (`#[tokio::test(start_paused = true)]`),
//!   `tokio::time::advance` moves everything together: the store's leases, the
//!   [`LeaseGuard`](crate::lease::LeaseGuard)'s renew schedule and the lock engine's waits.
//!   A live guard keeps renewing through an advance; a holder that stopped renewing loses
//!   its lease.
//! * A [`ManualClock`](crate::clock::ManualClock) given to the store
//!   ([`MemoryStore::with_clock`]) *and* to the guard
//!   ([`GuardOptions::clock`](crate::lease::GuardOptions::clock)) moves only when advanced:
//!   "the process was paused for 40 s" is one `advance`, after which the store has expired
//!   the lease and the guard's own check already says so — without sleeping.
//!
//! # Faults
//! [`lose_next_reply`](MemoryStore::lose_next_reply) makes the next call of an [`Op`] apply
//! and then fail as a lost response does (`Timeout`,
//! [`RequestSent::Maybe`](crate::RequestSent::Maybe));
//! [`fail_next_call`](MemoryStore::fail_next_call) makes it fail without applying
//! (`Transport`, [`RequestSent::No`](crate::RequestSent::No));
//! [`set_reachable(false)`](MemoryStore::set_reachable) refuses every call until switched
//! back, as a server that is down. [`calls`](MemoryStore::calls) counts the calls that
//! reached the store.
//!
//! ```
//! use azstore::memory::{MemoryStore, Op};
//! use azstore::update::{Change, Decision, UpdatePolicy, update};
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
//! let store = MemoryStore::new();
//! let visits = store.json::<u64>("visits")?;
//! let add_one = |n: Option<&u64>| Decision::Write(n.copied().unwrap_or(0) + 1);
//! update(&visits, &UpdatePolicy::default(), add_one).await?;
//!
//! // The reply of the next replace is lost: the write applied, the caller saw a timeout.
//! store.lose_next_reply(Op::Replace);
//! let outcome = update(&visits, &UpdatePolicy::default(), add_one).await?;
//! assert_eq!(outcome.value, Some(2)); // recognised as applied, not written twice
//! assert_eq!((outcome.change, outcome.recovered_ambiguous), (Change::Replaced, 1));
//! assert_eq!(store.calls(Op::Replace), 1);
//! # Ok(()) }
//! ```
//!
//! A lease that expires while its holder does not renew, on a clock the test moves:
//!
//! ```
//! use std::time::Duration;
//! use azstore::LeaseId;
//! use azstore::clock::ManualClock;
//! use azstore::lease::{Leasable, LeaseDuration};
//! use azstore::memory::MemoryStore;
//!
//! # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
//! let clock = ManualClock::new();
//! let store = MemoryStore::with_clock(clock.clock());
//! let (mine, theirs) = (store.lease("leader")?, store.lease("leader")?);
//! mine.lease_acquire(LeaseDuration::seconds(15)?, &LeaseId::random()).await?;
//! assert!(theirs.lease_acquire(LeaseDuration::seconds(15)?, &LeaseId::random()).await.is_err());
//! clock.advance(Duration::from_secs(16)); // the holder was paused past its lease
//! theirs.lease_acquire(LeaseDuration::seconds(15)?, &LeaseId::random()).await?;
//! # Ok(()) }
//! ```

mod errors;
mod lease;
mod lock;
mod versioned;

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use crate::clock::Clock;
use crate::conditions::{ETag, LeaseId};
use crate::error::Result;
use crate::lock::LockOwner;

pub use lease::MemoryLease;
pub use lock::{MemoryLock, MemoryLockTarget, MemoryLocks};
pub use versioned::MemoryJson;

/// An operation of the store, for the fault hooks and [`MemoryStore::calls`].
///
/// ```
/// use azstore::memory::Op;
/// assert!(Op::Any.matches(Op::Replace));
/// assert!(Op::Write.matches(Op::Create) && !Op::Write.matches(Op::Read));
/// assert!(Op::Replace.matches(Op::Replace) && !Op::Replace.matches(Op::Create));
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Op {
    /// Any operation (for the hooks; [`MemoryStore::calls`] counts every call).
    Any,
    /// Any write of an item: replace, create or delete.
    Write,
    /// [`Versioned::read`](crate::update::Versioned::read).
    Read,
    /// [`Versioned::replace`](crate::update::Versioned::replace) (If-Match).
    Replace,
    /// [`Versioned::create`](crate::update::Versioned::create) (create-only).
    Create,
    /// [`Versioned::delete`](crate::update::Versioned::delete) (If-Match).
    Delete,
    /// A lease acquire, or a lock's acquire attempt.
    Acquire,
    /// A lease renew.
    Renew,
    /// A lease change.
    Change,
    /// A lease release (a lock's release too).
    Release,
    /// A lease break (a lock's break too).
    Break,
    /// A lock's status or probe.
    Status,
}

impl Op {
    /// Whether a hook or count for `self` applies to an operation `op`.
    ///
    /// ```
    /// assert!(azstore::memory::Op::Write.matches(azstore::memory::Op::Delete));
    /// ```
    pub fn matches(self, op: Op) -> bool {
        self == op
            || self == Op::Any
            || (self == Op::Write && matches!(op, Op::Replace | Op::Create | Op::Delete))
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fault {
    LoseReply,
    Fail,
}

/// One stored item.
#[derive(Debug, Clone)]
struct Entry {
    json: Vec<u8>,
    etag: ETag,
    write_id: Option<String>,
}

/// One lease, its times readings of the store's time.
#[derive(Debug, Clone)]
struct LeaseRec {
    id: LeaseId,
    /// `None`: infinite.
    duration: Option<Duration>,
    /// `None`: never (infinite).
    expires_at: Option<Duration>,
    /// Set by a break with a period: the lease ends then; renew and acquire are refused
    /// meanwhile, the holder's id still releases.
    breaking_until: Option<Duration>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum LeaseState {
    Free,
    Held,
    Breaking,
}

impl LeaseRec {
    fn state(&self, now: Duration) -> LeaseState {
        match (self.breaking_until, self.expires_at) {
            (Some(b), _) if now >= b => LeaseState::Free,
            (Some(_), _) => LeaseState::Breaking,
            (None, Some(e)) if now >= e => LeaseState::Free,
            _ => LeaseState::Held,
        }
    }

    /// Time left: until the break ends, or the lease expires (`None`: infinite).
    fn remaining(&self, now: Duration) -> Option<Duration> {
        self.breaking_until
            .or(self.expires_at)
            .map(|end| end.saturating_sub(now))
    }
}

/// The lock record beside a lease: the last fencing token and the owner that took it.
#[derive(Debug, Clone)]
struct Fence {
    token: u64,
    owner: LockOwner,
}

#[derive(Default)]
struct State {
    items: HashMap<String, Entry>,
    leases: HashMap<String, LeaseRec>,
    fences: HashMap<String, Fence>,
    etags: u64,
}

/// What one connection to the store has: its fault hooks and its count of calls.
#[derive(Default)]
struct Link {
    faults: Vec<(Op, Fault)>,
    unreachable: bool,
    calls: Vec<Op>,
}

impl State {
    fn next_etag(&mut self) -> ETag {
        self.etags += 1;
        ETag::new(format!("\"0x{:016X}\"", self.etags))
    }

    /// Stores `json` as the item `name`, written by `write_id`, under a new ETag (returned).
    fn write_item(&mut self, name: &str, json: Vec<u8>, write_id: &str) -> ETag {
        let etag = self.next_etag();
        let entry = Entry {
            json,
            etag: etag.clone(),
            write_id: Some(write_id.to_string()),
        };
        self.items.insert(name.to_string(), entry);
        etag
    }

    /// The lease on `name` if it is in force (held or breaking) at `now`.
    fn live_lease(&self, name: &str, now: Duration) -> Option<(&LeaseRec, LeaseState)> {
        self.leases
            .get(name)
            .map(|l| (l, l.state(now)))
            .filter(|(_, s)| *s != LeaseState::Free)
    }
}

/// The stored data and the store's time, shared by every connection.
struct Data {
    id: u64,
    clock: Clock,
    clock_origin: Duration,
    tokio_origin: tokio::time::Instant,
    wall_origin_ms: u64,
    state: Mutex<State>,
}

struct Inner {
    data: Arc<Data>,
    link: Mutex<Link>,
}

/// The in-memory store: items, leases and lock records under names, a clock and fault hooks
/// (see the [module documentation](self)). Cheap to clone; clones share everything, the
/// fault hooks included. [`connection`](Self::connection) is another connection to the same
/// data with fault hooks of its own (another process's, say).
///
/// ```
/// # fn main() -> azstore::Result<()> {
/// let store = azstore::memory::MemoryStore::new();
/// let counter = store.json::<u64>("counter")?;
/// let lease = store.lease("leader")?;
/// let lock = store.lock("nightly")?;
/// # let _ = (counter, lease, lock); Ok(()) }
/// ```
#[derive(Clone)]
pub struct MemoryStore {
    inner: Arc<Inner>,
}

impl fmt::Debug for MemoryStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryStore")
            .field("id", &self.inner.data.id)
            .field("clock", &self.inner.data.clock)
            .finish_non_exhaustive()
    }
}

impl Default for MemoryStore {
    fn default() -> Self {
        MemoryStore::new()
    }
}

impl MemoryStore {
    /// An empty store on the system clock (and tokio's: see [Time](self#time)).
    ///
    /// ```
    /// let store = azstore::memory::MemoryStore::new();
    /// assert_eq!(store.calls(azstore::memory::Op::Any), 0);
    /// ```
    pub fn new() -> MemoryStore {
        MemoryStore::with_clock(Clock::system())
    }

    /// An empty store whose leases expire on `clock` (or tokio's clock, whichever has run
    /// further since now): pass a [`ManualClock`](crate::clock::ManualClock)'s clock to expire
    /// leases by advancing it.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::clock::ManualClock;
    /// let manual = ManualClock::new();
    /// let store = azstore::memory::MemoryStore::with_clock(manual.clock());
    /// manual.advance(Duration::from_secs(30));
    /// assert!(store.now() >= Duration::from_secs(30));
    /// ```
    pub fn with_clock(clock: Clock) -> MemoryStore {
        static IDS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        MemoryStore {
            inner: Arc::new(Inner {
                data: Arc::new(Data {
                    id: IDS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
                    clock_origin: clock.now(),
                    clock,
                    tokio_origin: tokio::time::Instant::now(),
                    wall_origin_ms: crate::lock::wall_clock_ms(),
                    state: Mutex::new(State::default()),
                }),
                link: Mutex::new(Link::default()),
            }),
        }
    }

    /// Another connection to the same data: what one writes the other reads, but its fault
    /// hooks, its reachability and its [`calls`](Self::calls) are its own — a second process,
    /// or a path through a proxy that a test can cut while the first stays up.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
    /// use azstore::update::Versioned;
    /// let store = azstore::memory::MemoryStore::new();
    /// let other = store.connection();
    /// other.set_reachable(false);
    /// store.json::<u64>("n")?.create(&1, "0000000000000001").await?; // this one is up
    /// assert!(other.json::<u64>("n")?.read().await.is_err());
    /// other.set_reachable(true);
    /// assert_eq!(other.json::<u64>("n")?.read().await?.map(|c| c.value), Some(1));
    /// # Ok(()) }
    /// ```
    pub fn connection(&self) -> MemoryStore {
        MemoryStore {
            inner: Arc::new(Inner {
                data: self.inner.data.clone(),
                link: Mutex::new(Link::default()),
            }),
        }
    }

    /// The clock the store was made with.
    ///
    /// ```
    /// let store = azstore::memory::MemoryStore::new();
    /// assert!(!store.clock().is_manual());
    /// ```
    pub fn clock(&self) -> &Clock {
        &self.inner.data.clock
    }

    /// The store's time: how long since it was made, the larger of its clock's and tokio's
    /// readings. Leases expire by it.
    ///
    /// ```
    /// let store = azstore::memory::MemoryStore::new();
    /// let t = store.now();
    /// assert!(store.now() >= t);
    /// ```
    pub fn now(&self) -> Duration {
        let data = &self.inner.data;
        let by_clock = data.clock.now().saturating_sub(data.clock_origin);
        let by_tokio = tokio::time::Instant::now().saturating_duration_since(data.tokio_origin);
        by_clock.max(by_tokio)
    }

    /// The store's time in milliseconds since the Unix epoch (the wall clock when the store
    /// was made, plus [`now`](Self::now)): the clock of its fencing tokens.
    fn clock_ms(&self) -> u64 {
        self.inner
            .data
            .wall_origin_ms
            .saturating_add(self.now().as_millis() as u64)
    }

    /// A JSON value named `name`, for [`update`](crate::update::update).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let store = azstore::memory::MemoryStore::new();
    /// let doc = store.json::<Vec<String>>("names")?;
    /// assert!(store.json::<u64>("").is_err());
    /// # let _ = doc; Ok(()) }
    /// ```
    pub fn json<T>(&self, name: &str) -> Result<MemoryJson<T>> {
        MemoryJson::new(self.clone(), name)
    }

    /// A lease named `name`, for [`LeaseGuard`](crate::lease::LeaseGuard).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let lease = azstore::memory::MemoryStore::new().lease("leader")?;
    /// # let _ = lease; Ok(()) }
    /// ```
    pub fn lease(&self, name: &str) -> Result<MemoryLease> {
        MemoryLease::new(self.clone(), name)
    }

    /// A lock named `name` with default [`LockOptions`](crate::lock::LockOptions).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let lock = azstore::memory::MemoryStore::new().lock("nightly")?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn lock(&self, name: &str) -> Result<MemoryLock> {
        MemoryLock::new(self.clone(), name)
    }

    /// Deletes everything stored under `name` — item, lease and lock record — as a time to
    /// live collecting it would. Not a fault hook: it is not counted and never fails.
    ///
    /// ```
    /// let store = azstore::memory::MemoryStore::new();
    /// store.remove("nightly");
    /// ```
    pub fn remove(&self, name: &str) {
        let mut s = self.state();
        s.items.remove(name);
        s.leases.remove(name);
        s.fences.remove(name);
    }

    /// The next call of `op` applies, and its caller gets the error of a lost response
    /// (`Timeout`, [`RequestSent::Maybe`](crate::RequestSent::Maybe)).
    ///
    /// ```
    /// use azstore::memory::{MemoryStore, Op};
    /// let store = MemoryStore::new();
    /// store.lose_next_reply(Op::Create);
    /// ```
    pub fn lose_next_reply(&self, op: Op) {
        self.link().faults.push((op, Fault::LoseReply));
    }

    /// The next call of `op` fails before it reaches the store (`Transport`,
    /// [`RequestSent::No`](crate::RequestSent::No)): nothing is applied.
    ///
    /// ```
    /// use azstore::memory::{MemoryStore, Op};
    /// let store = MemoryStore::new();
    /// store.fail_next_call(Op::Renew);
    /// ```
    pub fn fail_next_call(&self, op: Op) {
        self.link().faults.push((op, Fault::Fail));
    }

    /// `false`: every call through this connection (and its clones) is refused
    /// (`Transport`, nothing applied) until set back to `true`, as by a server that is down;
    /// other [`connection`](Self::connection)s are not affected.
    ///
    /// ```
    /// let store = azstore::memory::MemoryStore::new();
    /// store.set_reachable(false);
    /// store.set_reachable(true);
    /// ```
    pub fn set_reachable(&self, reachable: bool) {
        self.link().unreachable = !reachable;
    }

    /// How many calls of `op` through this connection reached the store (applied, refused or
    /// with their reply lost; not those failed by a hook or while unreachable).
    ///
    /// ```
    /// use azstore::memory::{MemoryStore, Op};
    /// assert_eq!(MemoryStore::new().calls(Op::Write), 0);
    /// ```
    pub fn calls(&self, op: Op) -> usize {
        self.link().calls.iter().filter(|c| op.matches(**c)).count()
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner
            .data
            .state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn link(&self) -> MutexGuard<'_, Link> {
        self.inner
            .link
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Runs one operation atomically at the store's time, through the fault hooks. Yields
    /// first, so that concurrent callers interleave between calls as they would over a
    /// network.
    async fn call<R>(
        &self,
        op: Op,
        f: impl FnOnce(&mut State, Duration) -> Result<R>,
    ) -> Result<R> {
        tokio::task::yield_now().await;
        let fault = {
            let mut link = self.link();
            if link.unreachable {
                return Err(errors::unreachable(op));
            }
            let fault = link
                .faults
                .iter()
                .position(|(o, _)| o.matches(op))
                .map(|i| link.faults.remove(i).1);
            if fault == Some(Fault::Fail) {
                return Err(errors::failed_call(op));
            }
            link.calls.push(op);
            fault
        };
        let now = self.now();
        let result = f(&mut self.state(), now);
        match fault {
            Some(Fault::LoseReply) => Err(errors::lost_reply(op)),
            _ => result,
        }
    }

    /// The identity of `name` in this store (for turn keys and wake-up keys).
    fn key_of(&self, name: &str) -> String {
        format!("memory://{}/{name}", self.inner.data.id)
    }
}

/// Checks a name: non-empty, at most 1 KiB.
fn validate_name(name: &str) -> Result<()> {
    if name.is_empty() || name.len() > 1024 {
        return Err(errors::invalid_input(format!(
            "a memory item name must be 1 to 1024 bytes (got {} bytes)",
            name.len()
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests;

// docs/testing.md's examples, compiled and run by `cargo test --doc --features testing`.
#[cfg(doctest)]
#[doc = include_str!("../../../docs/testing.md")]
struct TestingExamples;
