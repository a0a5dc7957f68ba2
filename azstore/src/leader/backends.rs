//! The lock backends an election and a shard group run on: [`BlobLock`], `RedisLock` (feature
//! `redis`) and `CosmosLock` (feature `cosmos`), and how each one's status reads as a [`Seen`].
//!
//! Every backend already creates its lock record without overwriting (Blob: `If-None-Match: *`
//! on the lock blob, then the lease; Cosmos DB: create, then `If-Match` replaces; Redis:
//! `SET NX` in a script) and changes it only as the holder (the lease id, or `If-Match` on the
//! item's `_etag`): the election and the shard group add no write of their own.

use std::future::Future;
use std::time::Duration;

use crate::blob::ContainerClient;
use crate::error::{Error, Result};
use crate::lease::keepalive::Kept;
use crate::lease::{Leasable, LeaseDuration};
use crate::lock::{BlobLock, Held, LockOptions, LockOwner};

pub(crate) mod sealed {
    pub trait Sealed {}
}

/// What one status read of a lock says, the same for every backend.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Seen {
    /// Whether the record names a live holder now (as far as the service can tell: a Cosmos DB
    /// holder that stopped renewing is still named until someone takes over).
    pub held: bool,
    /// The latest acquisition's fencing token.
    pub epoch: Option<u64>,
    /// The latest holder (who may have released it since: see `held`).
    pub owner: Option<LockOwner>,
    /// A version that every renewal changes, when the backend has no server-side expiry
    /// (Cosmos DB's `_etag`): an observer that sees it unchanged for a whole lease duration
    /// counts the holder as gone.
    pub version: Option<String>,
}

/// The renew schedule of a lock's lease, from its options.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Timing {
    /// The lease duration (`None`: infinite).
    pub lease: Option<Duration>,
    /// Time between renewals.
    pub renew: Duration,
    /// Time after the last renewal (as sent) at which the holder reports the loss: the lease
    /// minus the safety margin.
    pub window: Duration,
}

/// A lock an [`Election`](super::Election) campaigns on. Implemented by
/// [`BlobLock`], `RedisLock` and `CosmosLock`; not implementable outside azstore.
pub trait Campaign: sealed::Sealed + Clone + Send + Sync + 'static {
    /// What the held lock's guard renews.
    type Lease: Leasable;

    /// One acquire attempt.
    fn campaign_try(&self) -> impl Future<Output = Result<Option<Held<Self::Lease>>>> + Send;

    /// Waits at most `wait` for the lock.
    fn campaign_within(
        &self,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<Held<Self::Lease>>>> + Send;

    /// One status read.
    fn campaign_status(&self) -> impl Future<Output = Result<Seen>> + Send;

    /// The renew schedule of the lock's lease.
    fn timing(&self) -> Result<Timing>;

    /// The label recorded with the owner identity, if any.
    fn label(&self) -> Option<&str>;
}

/// Makes the locks of a [`ShardGroup`](super::ShardGroup): one per shard and per member
/// slot, all with the same options and the joining worker's label. Implemented by
/// [`BlobLocks`], `RedisLocks` and `CosmosLocks`.
pub trait LockFactory: sealed::Sealed + Clone + Send + Sync + 'static {
    /// The lock type made.
    type Lock: Campaign;

    /// The lock named `name` (a `/`-separated path), labelled `label`.
    fn make(&self, name: &str, label: &str) -> Result<Self::Lock>;
}

fn timing_of(options: &LockOptions) -> Result<Timing> {
    match options.duration {
        LeaseDuration::Infinite => Ok(Timing {
            lease: None,
            renew: Duration::ZERO,
            window: Duration::ZERO,
        }),
        LeaseDuration::Fixed(_) => {
            let lease = options.duration.as_duration().unwrap_or_default();
            let plan = options.guard.plan(lease, Kept::Lease)?;
            Ok(Timing {
                lease: Some(lease),
                renew: plan.interval,
                window: plan.window,
            })
        }
    }
}

impl sealed::Sealed for BlobLock {}

impl Campaign for BlobLock {
    type Lease = crate::blob::BlobClient;

    fn campaign_try(&self) -> impl Future<Output = Result<Option<Held<Self::Lease>>>> + Send {
        BlobLock::try_acquire(self)
    }

    fn campaign_within(
        &self,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<Held<Self::Lease>>>> + Send {
        BlobLock::acquire_within(self, wait)
    }

    async fn campaign_status(&self) -> Result<Seen> {
        let s = BlobLock::status(self).await?;
        Ok(Seen {
            held: s.is_locked(),
            epoch: s.fencing_token,
            owner: s.owner,
            version: None,
        })
    }

    fn timing(&self) -> Result<Timing> {
        timing_of(self.options())
    }

    fn label(&self) -> Option<&str> {
        self.options().label.as_deref()
    }
}

/// Makes [`BlobLock`]s in one container: the lock named `group/shards/7` is the blob of that
/// name.
///
/// ```no_run
/// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::leader::{BlobLocks, ShardGroup, ShardOptions};
/// use azstore::lock::LockOptions;
/// let group = ShardGroup::with_count(
///     BlobLocks::new(container, LockOptions::default()),
///     "ingest",
///     32,
///     ShardOptions::default(),
/// )?;
/// # let _ = group; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobLocks {
    container: ContainerClient,
    options: LockOptions,
}

impl BlobLocks {
    /// Locks in `container` with `options` (the label is replaced by each worker's id).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) {
    /// let locks = azstore::leader::BlobLocks::new(container, azstore::lock::LockOptions::default());
    /// # let _ = locks;
    /// # }
    /// ```
    pub fn new(container: ContainerClient, options: LockOptions) -> BlobLocks {
        BlobLocks { container, options }
    }
}

impl sealed::Sealed for BlobLocks {}

impl LockFactory for BlobLocks {
    type Lock = BlobLock;

    fn make(&self, name: &str, label: &str) -> Result<BlobLock> {
        BlobLock::with_options(
            self.container.clone(),
            name,
            self.options.clone().label(label),
        )
    }
}

#[cfg(feature = "redis")]
mod redis_backend {
    use super::*;
    use crate::redis::{RedisClient, RedisLease, RedisLock};

    impl sealed::Sealed for RedisLock {}

    impl Campaign for RedisLock {
        type Lease = RedisLease;

        fn campaign_try(&self) -> impl Future<Output = Result<Option<Held<RedisLease>>>> + Send {
            RedisLock::try_acquire(self)
        }

        fn campaign_within(
            &self,
            wait: Duration,
        ) -> impl Future<Output = Result<Option<Held<RedisLease>>>> + Send {
            RedisLock::acquire_within(self, wait)
        }

        async fn campaign_status(&self) -> Result<Seen> {
            let s = RedisLock::status(self).await?;
            Ok(Seen {
                held: s.locked,
                epoch: s.fencing_token,
                owner: s.owner,
                version: None,
            })
        }

        fn timing(&self) -> Result<Timing> {
            timing_of(self.options())
        }

        fn label(&self) -> Option<&str> {
            self.options().label.as_deref()
        }
    }

    /// Makes `RedisLock`s on one Redis: the lock named `group/shards/7` is that key (with
    /// its `{…}:fence` and `{…}:owner` companions).
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::leader::{RedisLocks, ShardGroup, ShardOptions};
    /// let locks = RedisLocks::new(redis, azstore::lock::LockOptions::default());
    /// let group = ShardGroup::with_count(locks, "ingest", 32, ShardOptions::default())?;
    /// # let _ = group; Ok(()) }
    /// ```
    #[derive(Debug, Clone)]
    pub struct RedisLocks {
        client: RedisClient,
        options: LockOptions,
    }

    impl RedisLocks {
        /// Locks on `client` with `options` (the label is replaced by each worker's id).
        ///
        /// ```no_run
        /// # fn demo(redis: azstore::redis::RedisClient) {
        /// let locks = azstore::leader::RedisLocks::new(redis, azstore::lock::LockOptions::default());
        /// # let _ = locks;
        /// # }
        /// ```
        pub fn new(client: RedisClient, options: LockOptions) -> RedisLocks {
            RedisLocks { client, options }
        }
    }

    impl sealed::Sealed for RedisLocks {}

    impl LockFactory for RedisLocks {
        type Lock = RedisLock;

        fn make(&self, name: &str, label: &str) -> Result<RedisLock> {
            RedisLock::with_options(self.client.clone(), name, self.options.clone().label(label))
        }
    }
}
#[cfg(feature = "redis")]
pub use redis_backend::RedisLocks;

#[cfg(feature = "cosmos")]
mod cosmos_backend {
    use super::*;
    use crate::cosmos::{CosmosContainer, CosmosLease, CosmosLock};

    impl sealed::Sealed for CosmosLock {}

    impl Campaign for CosmosLock {
        type Lease = CosmosLease;

        fn campaign_try(&self) -> impl Future<Output = Result<Option<Held<CosmosLease>>>> + Send {
            CosmosLock::try_acquire(self)
        }

        fn campaign_within(
            &self,
            wait: Duration,
        ) -> impl Future<Output = Result<Option<Held<CosmosLease>>>> + Send {
            CosmosLock::acquire_within(self, wait)
        }

        async fn campaign_status(&self) -> Result<Seen> {
            let s = CosmosLock::status(self).await?;
            Ok(Seen {
                held: s.locked,
                epoch: s.fencing_token,
                owner: s.owner,
                // No server-side expiry: renewals change the `_etag`, which observers watch.
                version: s.etag.map(|e| e.as_str().to_string()),
            })
        }

        fn timing(&self) -> Result<Timing> {
            timing_of(self.options())
        }

        fn label(&self) -> Option<&str> {
            self.options().label.as_deref()
        }
    }

    /// Makes `CosmosLock`s in one container: the lock named `group/shards/7` is the item
    /// `group:shards:7` (Cosmos DB ids cannot hold `/`) in a partition of its own name.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use azstore::leader::{CosmosLocks, ShardGroup, ShardOptions};
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
        /// let locks = azstore::leader::CosmosLocks::new(container, azstore::lock::LockOptions::default());
        /// # let _ = locks;
        /// # }
        /// ```
        pub fn new(container: CosmosContainer, options: LockOptions) -> CosmosLocks {
            CosmosLocks { container, options }
        }
    }

    impl sealed::Sealed for CosmosLocks {}

    impl LockFactory for CosmosLocks {
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
}
#[cfg(feature = "cosmos")]
pub use cosmos_backend::CosmosLocks;

/// `InvalidInput` unless `timing` suits an election or a shard group: a fixed lease, at least
/// two renewals before the loss is reported, and a safety margin of at least 1 s.
pub(crate) fn check_timing(timing: &Timing) -> Result<Duration> {
    let Some(lease) = timing.lease else {
        return Err(Error::invalid_input(
            "an infinite lease never fails over: set LockOptions::duration to a fixed \
             LeaseDuration::seconds(15..=60)",
        ));
    };
    let margin = lease.saturating_sub(timing.window);
    if margin < Duration::from_secs(1) {
        return Err(Error::invalid_input(format!(
            "the safety margin {margin:?} (lease {lease:?} minus the loss window {:?}) is under \
             1 s: a leader could still act after another took over; set \
             GuardOptions::safety_margin to at least 1 s",
            timing.window
        )));
    }
    if timing.renew * 2 > timing.window {
        return Err(Error::invalid_input(format!(
            "the renew interval {:?} leaves room for only one renewal within the loss window \
             {:?}, so one failed request loses the leadership; set GuardOptions::renew_every to \
             at most {:?}",
            timing.renew,
            timing.window,
            timing.window / 2
        )));
    }
    Ok(lease)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lease::GuardOptions;

    fn timing(o: LockOptions) -> Result<Duration> {
        check_timing(&timing_of(&o)?)
    }

    #[test]
    fn election_timing_is_checked_with_errors_that_say_what_to_change() {
        let secs = Duration::from_secs;
        let base = LockOptions::default().duration(LeaseDuration::seconds(15).unwrap());
        assert_eq!(timing(base.clone()).unwrap(), secs(15));
        let e = timing(LockOptions::default().duration(LeaseDuration::Infinite)).unwrap_err();
        assert!(e.to_string().contains("LockOptions::duration"), "{e}");
        let e = timing(
            base.clone()
                .guard(GuardOptions::default().safety_margin(Duration::from_millis(500))),
        )
        .unwrap_err();
        assert!(e.to_string().contains("safety_margin"), "{e}");
        let e = timing(
            base.clone()
                .guard(GuardOptions::default().renew_every(secs(7))),
        )
        .unwrap_err();
        assert!(e.to_string().contains("renew_every"), "{e}");
        // The lock's own check: the renew interval must be under the window.
        assert!(timing(base.guard(GuardOptions::default().renew_every(secs(14)))).is_err());
    }
}
