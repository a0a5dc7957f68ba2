//! [`CosmosLock`]: the lock engine ([`Lock`]) on a Cosmos DB lock item — the Cosmos DB
//! backend's [`LockTarget`].

use std::collections::HashMap;

use super::lease::{Acquired, BREAKING, CosmosLease, LockDoc, OwnerDoc};
use super::{CosmosContainer, PartitionKey};
use crate::conditions::{ETag, LeaseId};
use crate::error::Result;
use crate::lease::{BreakPeriod, Leasable, LeaseBroken};
use crate::lock::{
    Attempt, Held, Lock, LockClaim, LockOptions, LockStatus, LockTarget, Probe, StatusMany,
    common_prefix, status_each,
};

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

/// Lock items per page of [`CosmosLockTarget::status_many`]'s query.
pub const BULK_STATUS_ITEMS: u32 = 1_000;

impl CosmosLockTarget {
    /// The status a read of `doc` (with `etag`) gives, recorded as an observation of the
    /// holder for the takeover rule.
    fn observed(&self, etag: &ETag, doc: &LockDoc) -> LockStatus {
        self.lease.observe(etag, doc);
        LockStatus::new(
            true,
            doc.holder.is_some(),
            doc.holder.as_deref() == Some(BREAKING),
            Some(doc.fence),
            doc.owner.as_ref().map(OwnerDoc::to_owner),
            None,
        )
        .with_version(etag.as_str())
    }
}

impl LockTarget for CosmosLockTarget {
    type Lease = CosmosLease;

    fn identity(&self) -> String {
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
        Ok(self.observed(&etag, &doc))
    }

    /// One query over the container (`STARTSWITH(c.id, <the ids' common prefix>)`, across
    /// partitions, [`BULK_STATUS_ITEMS`] per page) instead of a point read per lock. Each item
    /// found counts as an observation of its `_etag` for the takeover rule exactly as a
    /// [`status`](LockTarget::status) read does, on this process's clock, so a holder still
    /// counts as gone only after its item kept one `_etag` for a whole lease duration. Falls
    /// back to point reads for fewer than 3 locks or locks in different containers.
    async fn status_many(targets: &[&Self]) -> Result<StatusMany> {
        let Some(first) = targets.first() else {
            return Ok(StatusMany::default());
        };
        let here = first.lease.container_key();
        if targets.len() < 3 || targets.iter().any(|t| t.lease.container_key() != here) {
            return status_each(targets).await;
        }
        let container = first.lease.container();
        let ids: Vec<&str> = targets.iter().map(|t| t.lease.id()).collect();
        let mut by_id: HashMap<&str, Vec<usize>> = HashMap::with_capacity(ids.len());
        for (i, id) in ids.iter().enumerate() {
            by_id.entry(id).or_default().push(i);
        }
        let params = serde_json::json!([{ "name": "@prefix", "value": common_prefix(&ids) }]);
        let mut statuses = vec![LockStatus::default(); targets.len()];
        let mut continuation: Option<String> = None;
        let mut requests = 0u64;
        loop {
            requests += 1;
            let (items, next) = match container
                .query_page(
                    "SELECT * FROM c WHERE STARTSWITH(c.id, @prefix)",
                    params.clone(),
                    BULK_STATUS_ITEMS,
                    continuation.as_deref(),
                )
                .await
            {
                Ok(page) => page,
                // No container (or database) yet: no lock item either.
                Err(e) if e.is_not_found() => break,
                Err(e) => return Err(e.context("reading the status of many Cosmos DB locks")),
            };
            for item in items {
                let Some(at) = item
                    .get("id")
                    .and_then(|v| v.as_str())
                    .and_then(|id| by_id.get(id))
                else {
                    continue;
                };
                let pk = container.partition_of(&item).cloned();
                let same: Vec<usize> = at
                    .iter()
                    .copied()
                    .filter(|&i| pk.as_ref() == Some(targets[i].lease.partition_key().as_json()))
                    .collect();
                let Some(&i) = same.first() else {
                    continue;
                };
                let (etag, doc) = targets[i].lease.doc_from_query(item)?;
                for j in same {
                    statuses[j] = targets[j].observed(&etag, &doc);
                }
            }
            continuation = next;
            if continuation.is_none() {
                break;
            }
        }
        Ok(StatusMany::new(statuses, requests))
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
