//! What an election and a shard group need of a lock: any [`Lock<T>`] of the one lock engine
//! (Blob, Redis, Cosmos DB, or a target of your own), whose [`LockStatus`] reads as a [`Seen`];
//! a shard group also needs a [`LockFactory`] to name one lock per shard and per member slot
//! (each backend module has one: `azstore::blob::BlobLocks`, `azstore::redis::RedisLocks`,
//! `azstore::cosmos::CosmosLocks`).
//!
//! Every backend already creates its lock record without overwriting (Blob: `If-None-Match: *`
//! on the lock blob, then the lease; Cosmos DB: create, then `If-Match` replaces; Redis:
//! `SET NX` in a script) and changes it only as the holder (the lease id, or `If-Match` on the
//! item's `_etag`): the election and the shard group add no write of their own.

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, Result};
use crate::lease::keepalive::Kept;
use crate::lease::{Leasable, LeaseDuration};
use crate::lock::{Held, Lock, LockOptions, LockOwner, LockStatus, LockTarget};

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

/// A lock an [`Election`](super::Election) campaigns on: every [`Lock<T>`] (the Blob, Redis
/// and Cosmos DB locks alike); not implementable outside azstore.
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

    /// The status of many locks, in one bulk read where the backend has one
    /// ([`LockTarget::status_many`]): one [`Seen`] per lock, in order, and the requests sent.
    fn campaign_status_many(
        locks: &[&Self],
    ) -> impl Future<Output = Result<(Vec<Seen>, u64)>> + Send;

    /// The renew schedule of the lock's lease.
    fn timing(&self) -> Result<Timing>;

    /// The label recorded with the owner identity, if any.
    fn label(&self) -> Option<&str>;
}

/// Makes the locks of a [`ShardGroup`](super::ShardGroup): one per shard and per member
/// slot, all with the same options and the joining worker's label. Each backend has one
/// (`azstore::blob::BlobLocks`, `azstore::redis::RedisLocks`, `azstore::cosmos::CosmosLocks`);
/// a lock target of your own needs one too.
pub trait LockFactory: Clone + Send + Sync + 'static {
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

impl<T: LockTarget> sealed::Sealed for Lock<T> {}

impl<T: LockTarget> Campaign for Lock<T> {
    type Lease = T::Lease;

    fn campaign_try(&self) -> impl Future<Output = Result<Option<Held<T::Lease>>>> + Send {
        Lock::try_acquire(self)
    }

    fn campaign_within(
        &self,
        wait: Duration,
    ) -> impl Future<Output = Result<Option<Held<T::Lease>>>> + Send {
        Lock::acquire_within(self, wait)
    }

    async fn campaign_status(&self) -> Result<Seen> {
        Ok(Seen::from(Lock::status(self).await?))
    }

    async fn campaign_status_many(locks: &[&Self]) -> Result<(Vec<Seen>, u64)> {
        let read = Lock::status_many(locks).await?;
        Ok((
            read.statuses.into_iter().map(Seen::from).collect(),
            read.requests,
        ))
    }

    fn timing(&self) -> Result<Timing> {
        timing_of(self.options())
    }

    fn label(&self) -> Option<&str> {
        self.options().label.as_deref()
    }
}

impl From<LockStatus> for Seen {
    fn from(s: LockStatus) -> Seen {
        Seen {
            held: s.locked,
            epoch: s.fencing_token,
            owner: s.owner,
            // Where contenders decide expiry (Cosmos DB), renewals change the version, which
            // observers watch; elsewhere the service's word is final.
            version: s.version,
        }
    }
}

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
