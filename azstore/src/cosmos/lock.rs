//! [`CosmosLock`]: the lock engine ([`Lock`]) on a Cosmos DB lock item — the Cosmos DB
//! backend's [`LockTarget`].

use super::lease::{Acquired, BREAKING, CosmosLease, OwnerDoc};
use super::{CosmosContainer, PartitionKey};
use crate::conditions::LeaseId;
use crate::error::Result;
use crate::lease::{BreakPeriod, Leasable, LeaseBroken};
use crate::lock::{Attempt, Held, Lock, LockClaim, LockOptions, LockStatus, LockTarget, Probe};

/// A distributed lock on a Cosmos DB lock item, with a fencing token: the lock engine over
/// [`CosmosLockTarget`]. Cheap to clone. Everything but construction is [`Lock`]'s.
///
/// Holding the lock means holding a [`CosmosLease`] on the item, renewed by a
/// [`LeaseGuard`](crate::lease::LeaseGuard); a holder that stops renewing is taken over by a
/// waiter after the [takeover rule](CosmosLease#the-takeover-rule) (the item unchanged for a
/// whole lease duration on the waiter's own clock). The item keeps a **fencing token** that
/// every acquisition advances to `max(previous + 1, the acquirer's wall clock in ms)` in the
/// same `If-Match` write that makes it the holder (see
/// [Fencing tokens](crate::lock#fencing-tokens)). The lock never deletes the item; one created
/// afresh (the first time, or after its time to live — a day by default — collected an
/// abandoned one) starts at the creator's clock.
///
/// ```no_run
/// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::cosmos::{CosmosLock, PartitionKey};
///
/// let lock = CosmosLock::new(container, "nightly", PartitionKey::from("nightly"))?;
/// let Some(held) = lock.acquire_within(Duration::from_secs(60)).await? else {
///     println!("busy: {:?}", lock.status().await?.owner);
///     return Ok(());
/// };
/// let token = held.fencing_token();
/// tokio::select! {
///     loss = held.lost() => eprintln!("lock lost, stopping: {loss}"),
///     _ = async { /* the critical section, passing `token` along */ } => {}
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
pub type CosmosLock = Lock<CosmosLockTarget>;

/// The Cosmos DB backend of the lock engine: one lock item holding the holder's lease id, its
/// lease duration, the fencing token and the owner. It has no probe cheaper than an attempt
/// (an attempt that finds the lock held starts, or continues, watching the item for the
/// takeover rule). Use it through [`CosmosLock`].
#[derive(Debug, Clone)]
pub struct CosmosLockTarget {
    lease: CosmosLease,
}

impl CosmosLockTarget {
    /// The target for the lock item `id` in `partition_key` (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// let target = azstore::cosmos::CosmosLockTarget::new(container, "reindex", "reindex")?;
    /// assert_eq!(target.lease().id(), "reindex");
    /// # Ok(()) }
    /// ```
    pub fn new(
        container: CosmosContainer,
        id: &str,
        partition_key: impl Into<PartitionKey>,
    ) -> Result<CosmosLockTarget> {
        Ok(CosmosLockTarget {
            lease: CosmosLease::new(container, id, partition_key.into())?,
        })
    }

    /// The lease on the lock item.
    ///
    /// ```no_run
    /// # fn demo(target: azstore::cosmos::CosmosLockTarget) {
    /// println!("{:?}", target.lease().partition_key());
    /// # }
    /// ```
    pub fn lease(&self) -> &CosmosLease {
        &self.lease
    }
}

impl LockTarget for CosmosLockTarget {
    type Lease = CosmosLease;

    fn wake_key(&self) -> String {
        let c = &self.lease;
        format!(
            "cosmos:{}/{}/{}",
            c.container_key(),
            c.partition_key().as_json(),
            c.id()
        )
    }

    async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<CosmosLease>> {
        let owner = OwnerDoc::from_owner(&claim.owner);
        let sent_at = tokio::time::Instant::now();
        match self
            .lease
            .try_acquire(claim.duration, &claim.proposed, Some(owner))
            .await?
        {
            Acquired::Busy => Ok(Attempt::Busy),
            Acquired::Yes(fencing_token) => Ok(Attempt::Acquired {
                lease: self.lease.clone(),
                fencing_token,
                sent_at,
            }),
        }
    }

    async fn probe(&self) -> Result<Probe> {
        Ok(Probe::Unknown)
    }

    async fn status(&self) -> Result<LockStatus> {
        let Some((etag, doc)) = self.lease.read_doc().await? else {
            return Ok(LockStatus::default());
        };
        self.lease.observe(&etag, &doc);
        Ok(LockStatus::new(
            true,
            doc.holder.is_some(),
            doc.holder.as_deref() == Some(BREAKING),
            Some(doc.fence),
            doc.owner.as_ref().map(OwnerDoc::to_owner),
            None,
        )
        .with_version(etag.as_str()))
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.lease.lease_break(period).await
    }

    async fn abandon(&self, proposed: &LeaseId) {
        let _ = self.lease.lease_release(proposed).await;
    }
}

impl Lock<CosmosLockTarget> {
    /// A lock on the lock item `id` in `partition_key`, with default [`LockOptions`]
    /// (validated here; nothing is sent). The item is created on first acquire.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use azstore::cosmos::{CosmosLock, PartitionKey};
    /// let lock = CosmosLock::new(container, "reindex", PartitionKey::from("reindex"))?;
    /// assert_eq!(lock.id(), "reindex");
    /// # Ok(()) }
    /// ```
    pub fn new(
        container: CosmosContainer,
        id: &str,
        partition_key: impl Into<PartitionKey>,
    ) -> Result<CosmosLock> {
        CosmosLock::with_options(container, id, partition_key, LockOptions::default())
    }

    /// A lock with custom options (validated here, before any request).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use azstore::cosmos::{CosmosLock, PartitionKey};
    /// use azstore::lease::LeaseDuration;
    /// use azstore::lock::LockOptions;
    /// let options = LockOptions::default().duration(LeaseDuration::seconds(15)?).label("reindex");
    /// let lock = CosmosLock::with_options(container, "reindex", PartitionKey::from("reindex"), options)?;
    /// # let _ = lock;
    /// # Ok(()) }
    /// ```
    pub fn with_options(
        container: CosmosContainer,
        id: &str,
        partition_key: impl Into<PartitionKey>,
        options: LockOptions,
    ) -> Result<CosmosLock> {
        Lock::from_target(
            CosmosLockTarget::new(container, id, partition_key)?,
            options,
        )
    }

    /// The lock item's time to live (see [`CosmosLease::with_item_ttl`]).
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// let lock = lock.with_item_ttl(Some(7 * 86_400))?; // keep the item (and its fencing token) a week
    /// # let _ = lock;
    /// # Ok(()) }
    /// ```
    pub fn with_item_ttl(self, seconds: Option<i64>) -> Result<CosmosLock> {
        let lease = self.target().lease.clone().with_item_ttl(seconds)?;
        Lock::from_target(CosmosLockTarget { lease }, self.options().clone())
    }

    /// The lock item id.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// println!("lock item {}", lock.id());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        self.target().lease.id()
    }

    /// The lease on the lock item.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// println!("lock item {} in {:?}", lock.lease().id(), lock.lease().partition_key());
    /// # Ok(()) }
    /// ```
    pub fn lease(&self) -> &CosmosLease {
        &self.target().lease
    }
}

/// What [`CosmosLock::status`](Lock::status) reports: the one [`LockStatus`].
#[deprecated(note = "the lock status is one type on every backend: use azstore::lock::LockStatus")]
pub type CosmosLockStatus = LockStatus;

/// A held [`CosmosLock`]: the renewed lease plus the fencing token of this acquisition.
/// Release it with [`release`](Held::release); dropping it releases in the background.
///
/// ```no_run
/// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::cosmos::HeldCosmosLock;
/// let held: Option<HeldCosmosLock> = lock.acquire_within(Duration::from_secs(5)).await?;
/// if let Some(held) = held {
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
pub type HeldCosmosLock = Held<CosmosLease>;

/// Makes [`CosmosLock`]s in one container for a [`ShardGroup`](crate::leader::ShardGroup):
/// the lock named `group/shards/7` is the item `group:shards:7` (Cosmos DB ids cannot hold
/// `/`) in a partition of its own name.
///
/// ```no_run
/// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
/// use azstore::cosmos::CosmosLocks;
/// use azstore::leader::{ShardGroup, ShardOptions};
/// let locks = CosmosLocks::new(container, azstore::lock::LockOptions::default());
/// let group = ShardGroup::with_count(locks, "ingest", 32, ShardOptions::default())?;
/// # let _ = group; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CosmosLocks {
    container: CosmosContainer,
    options: LockOptions,
}

impl CosmosLocks {
    /// Locks in `container` with `options` (the label is replaced by each worker's id).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) {
    /// let locks = azstore::cosmos::CosmosLocks::new(container, azstore::lock::LockOptions::default());
    /// # let _ = locks;
    /// # }
    /// ```
    pub fn new(container: CosmosContainer, options: LockOptions) -> CosmosLocks {
        CosmosLocks { container, options }
    }
}

impl crate::leader::LockFactory for CosmosLocks {
    type Lock = CosmosLock;

    fn make(&self, name: &str, label: &str) -> Result<CosmosLock> {
        let id = name.replace('/', ":");
        CosmosLock::with_options(
            self.container.clone(),
            &id,
            id.as_str(),
            self.options.clone().label(label),
        )
    }
}
