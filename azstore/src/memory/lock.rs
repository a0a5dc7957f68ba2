//! [`MemoryLock`]: the lock engine ([`Lock`]) on a [`MemoryStore`] — the in-memory
//! [`LockTarget`].

use tokio::time::Instant;

use super::lease::{acquire, break_lease, release};
use super::{Fence, LeaseState, MemoryLease, MemoryStore, Op, validate_name};
use crate::conditions::LeaseId;
use crate::error::Result;
use crate::lease::{BreakPeriod, LeaseBroken};
use crate::lock::{
    Attempt, Lock, LockClaim, LockOptions, LockStatus, LockTarget, Probe, next_fencing_token,
};

/// A distributed lock with a fencing token, in memory: the lock engine over
/// [`MemoryLockTarget`]. Everything but construction is [`Lock`]'s, so code written against
/// `Lock<T>` (or [`Campaign`](crate::leader::Campaign), or a
/// [`LockFactory`](crate::leader::LockFactory) through [`MemoryLocks`]) runs on it as on a
/// blob or a Redis key.
///
/// ```
/// use std::time::Duration;
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
/// let store = azstore::memory::MemoryStore::new();
/// let lock = store.lock("nightly")?;
/// let held = lock.try_acquire().await?.expect("free");
/// assert!(store.lock("nightly")?.try_acquire().await?.is_none(), "held");
/// let first = held.fencing_token();
/// held.release().await?;
/// let next = lock.acquire_within(Duration::from_secs(1)).await?.expect("free again");
/// assert!(next.fencing_token() > first);
/// # next.release().await?; Ok(()) }
/// ```
pub type MemoryLock = Lock<MemoryLockTarget>;

/// The in-memory backend of the lock engine: the lease named like the lock, and beside it
/// the lock record (the last fencing token and its owner). Taking the lease and setting the
/// token, `max(previous + 1, the store's clock in ms)`, are one atomic step; the record
/// stays when the lease ends, so tokens grow across holders, and after
/// [`MemoryStore::remove`] deleted it the clock carries on. Use it through [`MemoryLock`].
#[derive(Debug, Clone)]
pub struct MemoryLockTarget {
    lease: MemoryLease,
}

impl MemoryLockTarget {
    /// The target `name` of `store` (validated here). The lease duration is each claim's
    /// ([`LockOptions::duration`]), and the store remembers it for renewals.
    ///
    /// ```
    /// use azstore::memory::{MemoryLockTarget, MemoryStore};
    /// # fn main() -> azstore::Result<()> {
    /// let target = MemoryLockTarget::new(MemoryStore::new(), "jobs")?;
    /// assert_eq!(target.lease().name(), "jobs");
    /// # Ok(()) }
    /// ```
    pub fn new(store: MemoryStore, name: &str) -> Result<MemoryLockTarget> {
        validate_name(name)?;
        Ok(MemoryLockTarget {
            lease: MemoryLease::new(store, name)?,
        })
    }

    /// The lease on the lock's name.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let lock = azstore::memory::MemoryStore::new().lock("jobs")?;
    /// assert_eq!(lock.target().lease().holder(), None);
    /// # Ok(()) }
    /// ```
    pub fn lease(&self) -> &MemoryLease {
        &self.lease
    }

    fn store(&self) -> &MemoryStore {
        &self.lease.store
    }

    fn name(&self) -> &str {
        &self.lease.name
    }
}

impl LockTarget for MemoryLockTarget {
    type Lease = MemoryLease;

    fn identity(&self) -> String {
        self.store().key_of(self.name())
    }

    async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<MemoryLease>> {
        let sent_at = Instant::now();
        let name = self.name();
        let clock_ms = self.store().clock_ms();
        let token = self
            .store()
            .call(Op::Acquire, |s, now| {
                match acquire(s, name, claim.duration, &claim.proposed, now) {
                    // Ours already (a repeated attempt): the token it got.
                    Ok(false) => Ok(s.fences.get(name).map(|f| f.token)),
                    Ok(true) => {
                        let token =
                            next_fencing_token(s.fences.get(name).map(|f| f.token), clock_ms);
                        let owner = claim.owner.clone();
                        s.fences.insert(name.to_string(), Fence { token, owner });
                        Ok(Some(token))
                    }
                    Err(_) => Ok(None),
                }
            })
            .await?;
        Ok(match token {
            Some(fencing_token) => Attempt::Acquired {
                lease: self.lease.clone(),
                fencing_token,
                sent_at,
            },
            None => Attempt::Busy,
        })
    }

    async fn probe(&self) -> Result<Probe> {
        let name = self.name();
        self.store()
            .call(Op::Status, |s, now| {
                Ok(match s.live_lease(name, now) {
                    None => Probe::Free,
                    Some(_) => Probe::Busy,
                })
            })
            .await
    }

    async fn status(&self) -> Result<LockStatus> {
        let name = self.name();
        self.store()
            .call(Op::Status, |s, now| {
                let live = s.live_lease(name, now);
                let fence = s.fences.get(name);
                Ok(LockStatus::new(
                    live.is_some() || fence.is_some(),
                    live.is_some(),
                    live.is_some_and(|(_, st)| st == LeaseState::Breaking),
                    fence.map(|f| f.token),
                    fence.map(|f| f.owner.clone()),
                    live.and_then(|(l, _)| l.remaining(now)),
                ))
            })
            .await
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        let name = self.name();
        let left = self
            .store()
            .call(Op::Break, |s, now| break_lease(s, name, period, now))
            .await?;
        Ok(LeaseBroken::new(left, None))
    }

    async fn abandon(&self, proposed: &LeaseId) {
        let name = self.name();
        let _ = self
            .store()
            .call(Op::Release, |s, now| release(s, name, proposed, now))
            .await;
    }
}

impl Lock<MemoryLockTarget> {
    /// A lock named `name` in `store` with default [`LockOptions`].
    ///
    /// ```
    /// use azstore::memory::{MemoryLock, MemoryStore};
    /// # fn main() -> azstore::Result<()> {
    /// let lock = MemoryLock::new(MemoryStore::new(), "jobs")?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn new(store: MemoryStore, name: &str) -> Result<MemoryLock> {
        MemoryLock::with_options(store, name, LockOptions::default())
    }

    /// A lock with custom options (validated here).
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// use azstore::lock::LockOptions;
    /// use azstore::memory::{MemoryLock, MemoryStore};
    /// # fn main() -> azstore::Result<()> {
    /// let options = LockOptions::default().duration(LeaseDuration::seconds(15)?).label("worker-1");
    /// let lock = MemoryLock::with_options(MemoryStore::new(), "jobs", options)?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn with_options(
        store: MemoryStore,
        name: &str,
        options: LockOptions,
    ) -> Result<MemoryLock> {
        let target = MemoryLockTarget::new(store, name)?;
        Lock::from_target(target, options)
    }
}

/// Makes [`MemoryLock`]s in one store for a [`ShardGroup`](crate::leader::ShardGroup) or a
/// [`Semaphore`](crate::lock::Semaphore): the lock named `group/shards/7` is that name.
///
/// ```
/// use azstore::leader::{ShardGroup, ShardOptions};
/// use azstore::memory::{MemoryLocks, MemoryStore};
/// # fn main() -> azstore::Result<()> {
/// let locks = MemoryLocks::new(MemoryStore::new(), azstore::lock::LockOptions::default());
/// let group = ShardGroup::with_count(locks, "ingest", 8, ShardOptions::default())?;
/// # let _ = group; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MemoryLocks {
    store: MemoryStore,
    options: LockOptions,
}

impl MemoryLocks {
    /// Locks in `store` with `options` (the label is replaced by each worker's id).
    ///
    /// ```
    /// let locks = azstore::memory::MemoryLocks::new(
    ///     azstore::memory::MemoryStore::new(),
    ///     azstore::lock::LockOptions::default(),
    /// );
    /// # let _ = locks;
    /// ```
    pub fn new(store: MemoryStore, options: LockOptions) -> MemoryLocks {
        MemoryLocks { store, options }
    }
}

impl crate::leader::LockFactory for MemoryLocks {
    type Lock = MemoryLock;

    fn make(&self, name: &str, label: &str) -> Result<MemoryLock> {
        MemoryLock::with_options(self.store.clone(), name, self.options.clone().label(label))
    }
}
