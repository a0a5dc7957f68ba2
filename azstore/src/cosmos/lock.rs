//! [`CosmosLock`]: a distributed lock on a Cosmos DB lock item, with a fencing token — the
//! shape of [`BlobLock`](crate::lock::BlobLock) and [`RedisLock`](crate::redis::RedisLock).

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::lease::{Acquired, CosmosLease, OwnerDoc};
use super::{CosmosContainer, PartitionKey};
use crate::conditions::{ETag, LeaseId};
use crate::error::Result;
use crate::lease::{Leasable, LeaseBroken, LeaseGuard};
use crate::lock::{Held, LockOptions, LockOwner, poll_until_acquired};

/// A distributed lock on a Cosmos DB lock item, with a fencing token. Cheap to clone.
///
/// Holding the lock means holding a [`CosmosLease`] on the item, renewed by a
/// [`LeaseGuard`]; a holder that stops renewing is taken over by a waiter after the
/// [takeover rule](CosmosLease#the-takeover-rule) (the item unchanged for a whole lease
/// duration on the waiter's own clock). The item keeps a **fencing token** that every
/// acquisition advances in the same `If-Match` write that makes it the holder, so every
/// holder gets a larger token than all holders before it — after releases, takeovers and
/// breaks alike. The item is never deleted by the lock (that would lose the token); a lock
/// item created afresh (the first time, or after its time to live collected an abandoned
/// one) starts its token at the wall clock in milliseconds, so tokens keep increasing as long
/// as the hosts' clocks are not off by more than the item's time to live (a day by default).
///
/// ```no_run
/// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::cosmos::PartitionKey;
///
/// let lock = container.lock("nightly", PartitionKey::from("nightly"))?;
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
#[derive(Debug, Clone)]
pub struct CosmosLock {
    lease: CosmosLease,
    options: LockOptions,
}

impl CosmosLock {
    pub(crate) fn new(
        container: CosmosContainer,
        id: &str,
        pk: PartitionKey,
    ) -> Result<CosmosLock> {
        CosmosLock::with_options(container, id, pk, LockOptions::default())
    }

    /// A lock with custom options (validated here, before any request). A break period in
    /// the options' guard is not used: Cosmos DB locks break at once.
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
        options.validate()?;
        Ok(CosmosLock {
            lease: CosmosLease::new(container, id, partition_key.into())?,
            options,
        })
    }

    /// The lock item's time to live (see [`CosmosLease::with_item_ttl`]).
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// let lock = lock.with_item_ttl(Some(7 * 86_400))?; // keep the item (and its fencing token) a week
    /// # let _ = lock;
    /// # Ok(()) }
    /// ```
    pub fn with_item_ttl(mut self, seconds: Option<i64>) -> Result<CosmosLock> {
        self.lease = self.lease.with_item_ttl(seconds)?;
        Ok(self)
    }

    /// The lock item id.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// println!("lock item {}", lock.id());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        self.lease.id()
    }

    /// The options.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// println!("{:?}", lock.options());
    /// # Ok(()) }
    /// ```
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// The lease (e.g. to break it by hand).
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// println!("lock item {} in {:?}", lock.lease().id(), lock.lease().partition_key());
    /// # Ok(()) }
    /// ```
    pub fn lease(&self) -> &CosmosLease {
        &self.lease
    }

    /// One attempt: the held lock, or `None` when someone else holds it. An attempt that
    /// finds the lock held starts (or continues) watching the item for the takeover rule, so
    /// repeated attempts on the same `CosmosLock` (or a clone) take over an abandoned lock.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// match lock.try_acquire().await? {
    ///     Some(held) => {
    ///         println!("token {}", held.fencing_token());
    ///         held.release().await?;
    ///     }
    ///     None => println!("busy"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<HeldCosmosLock>> {
        self.try_acquire_as(&LeaseId::random()).await
    }

    async fn try_acquire_as(&self, proposed: &LeaseId) -> Result<Option<HeldCosmosLock>> {
        let duration = self.options.duration;
        let owner = OwnerDoc::here(self.options.label.clone());
        let sent_at = Instant::now();
        match self
            .lease
            .try_acquire(duration, proposed, Some(owner))
            .await?
        {
            Acquired::Busy => Ok(None),
            Acquired::Yes(token) => {
                let guard = LeaseGuard::adopt(
                    self.lease.clone(),
                    proposed.clone(),
                    duration,
                    sent_at,
                    self.options.guard.clone(),
                )?;
                let wake = self.options.local_wakeup.then(|| self.wakeup());
                Ok(Some(Held::new(guard, token, wake)))
            }
        }
    }

    fn wakeup(&self) -> Arc<Notify> {
        let c = &self.lease;
        crate::lock::wakeup_for(format!(
            "cosmos:{}/{}/{}",
            c.container_key(),
            c.partition_key().as_json(),
            c.id()
        ))
    }

    /// Waits at most `wait` for the lock; `None` when it could not be had in time. `wait` is
    /// how long to wait, not the lease duration (that is [`LockOptions::duration`]).
    ///
    /// Waiters poll after a jittered, backing-off sleep ([`LockOptions::poll_interval`]); a
    /// release by a holder in this process wakes a local waiter at once. A holder that stopped
    /// renewing is taken over after the lease duration (plus a poll) of unchanged lock item.
    /// One id is proposed across the attempts of one wait, so a repeated attempt whose first
    /// reply was lost does not lock itself out.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// if let Some(held) = lock.acquire_within(Duration::from_secs(60)).await? {
    ///     // ... the critical section, passing held.fencing_token() along ...
    ///     held.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_within(&self, wait: Duration) -> Result<Option<HeldCosmosLock>> {
        let proposed = LeaseId::random();
        let wake = self.options.local_wakeup.then(|| self.wakeup());
        poll_until_acquired(wait, &self.options, wake, "cosmos", || {
            self.try_acquire_as(&proposed)
        })
        .await
    }

    /// Who holds (or last held) the lock and the latest fencing token.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// let s = lock.status().await?;
    /// println!("locked: {}, owner {:?}, token {:?}", s.locked, s.owner, s.fencing_token);
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<CosmosLockStatus> {
        let Some((etag, doc)) = self.lease.read_doc().await? else {
            return Ok(CosmosLockStatus {
                locked: false,
                fencing_token: None,
                owner: None,
                lease_duration: None,
                etag: None,
            });
        };
        Ok(CosmosLockStatus {
            locked: doc.holder.is_some(),
            fencing_token: Some(doc.fence),
            owner: doc.owner.as_ref().map(OwnerDoc::to_owner),
            lease_duration: u64::try_from(doc.duration_ms)
                .ok()
                .map(Duration::from_millis),
            etag: Some(etag),
        })
    }

    /// Breaks the lock at once (administrative): the item is left without a holder, keeping
    /// its fencing token. The holder's guard reports the loss at its next renew.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
    /// lock.break_lock().await?; // the holder is known dead: free the lock now
    /// # Ok(()) }
    /// ```
    pub async fn break_lock(&self) -> Result<LeaseBroken> {
        self.lease.lease_break(None).await
    }
}

/// What [`CosmosLock::status`] reports.
///
/// ```no_run
/// # async fn demo(lock: azstore::cosmos::CosmosLock) -> azstore::Result<()> {
/// let s = lock.status().await?;
/// if s.locked {
///     println!("held by {:?} (lease {:?}, token {:?})", s.owner, s.lease_duration, s.fencing_token);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct CosmosLockStatus {
    /// Whether the lock item names a holder (who may have stopped renewing: a waiter takes
    /// over after the lease duration of unchanged item).
    pub locked: bool,
    /// The fencing token of the latest acquisition.
    pub fencing_token: Option<u64>,
    /// The latest holder (who may have released it since: see `locked`).
    pub owner: Option<LockOwner>,
    /// The latest holder's lease duration (`None`: infinite, or no item).
    pub lease_duration: Option<Duration>,
    /// The lock item's `_etag`.
    pub etag: Option<ETag>,
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
