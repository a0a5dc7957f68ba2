//! [`LockTarget`]: what a backend gives the lock engine — one try-acquire, a cheap probe,
//! the status, a break and the release of an abandoned attempt — and the one fencing formula
//! every backend uses ([`next_fencing_token`]).

use std::fmt;
use std::future::Future;

use time::OffsetDateTime;
use tokio::time::Instant;

use crate::conditions::LeaseId;
use crate::error::Result;
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseDuration};
use crate::lock::{LockOwner, LockStatus};

/// What one acquire attempt asks of a [`LockTarget`]: take the lock for `proposed`, for
/// `duration`, recording `owner`. Built by [`Lock`](super::Lock); one `proposed` id is reused
/// across the attempts of one wait, so an attempt repeated after a lost reply finds the lock
/// already its own.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LockClaim {
    /// The lease id to take the lock with.
    pub proposed: LeaseId,
    /// The lease duration.
    pub duration: LeaseDuration,
    /// Who takes it (host, pid, label, now).
    pub owner: LockOwner,
}

impl LockClaim {
    /// A claim; for tests of [`LockTarget`] implementations.
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// use azstore::lock::{LockClaim, LockOwner};
    /// let claim = LockClaim::new(azstore::LeaseId::random(), LeaseDuration::Infinite, LockOwner::new("h", None, None, None));
    /// assert_eq!(claim.duration, LeaseDuration::Infinite);
    /// ```
    pub fn new(proposed: LeaseId, duration: LeaseDuration, owner: LockOwner) -> LockClaim {
        LockClaim {
            proposed,
            duration,
            owner,
        }
    }
}

/// The answer of one [`LockTarget::try_lock`].
pub enum Attempt<L> {
    /// Ours: the lease to keep renewed (adopted by a [`LeaseGuard`](crate::lease::LeaseGuard)
    /// under the claim's id), the fencing token of this acquisition, and when the acquiring
    /// request was sent (the lease's time counts from there).
    Acquired {
        /// The lease to renew.
        lease: L,
        /// The fencing token (see [`next_fencing_token`]).
        fencing_token: u64,
        /// When the request that took the lease was sent.
        sent_at: Instant,
    },
    /// Someone else holds the lock (or it is being broken).
    Busy,
}

impl<L> fmt::Debug for Attempt<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Attempt::Acquired { fencing_token, .. } => f
                .debug_struct("Acquired")
                .field("fencing_token", fencing_token)
                .finish_non_exhaustive(),
            Attempt::Busy => f.write_str("Busy"),
        }
    }
}

/// What a cheap look at the lock says, before an acquire attempt is spent on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Probe {
    /// Free (or absent): attempt now.
    Free,
    /// Held or breaking: do not attempt; sleep and look again.
    Busy,
    /// The backend has no look cheaper than an attempt: attempt now.
    Unknown,
}

/// A backend of the lock engine: [`Lock<T>`](super::Lock) is written once over it. Blob,
/// Redis and Cosmos DB implement it (`BlobLockTarget`, `RedisLockTarget`,
/// `CosmosLockTarget`); every method is required, so an adapter cannot compile without
/// saying what each one does on its service.
///
/// The contract (checked for every backend by the lock contract suite in `testkit`):
/// * [`try_lock`](Self::try_lock) is one atomic acquire: at most one claim holds the lock at
///   a time; repeating it with the id that holds the lock succeeds again with the same token;
///   it answers [`Attempt::Busy`] only when someone else holds it, and an **error** — never
///   `Busy` — when the service could not be asked.
/// * fencing tokens follow [`next_fencing_token`], so they strictly increase across holders,
///   also after the lock record was deleted or collected.
/// * [`break_lease`](Self::break_lease) means what [`Lock::break_lock`](super::Lock::break_lock)
///   documents.
pub trait LockTarget: Clone + fmt::Debug + Send + Sync + 'static {
    /// The lease a holder keeps renewed.
    type Lease: Leasable;

    /// A name unique to this lock (e.g. its URL), for the process-wide wake-up: a release by a
    /// holder in this process wakes local waiters for the same identity at once (the name
    /// [`Versioned::identity`](crate::update::Versioned::identity) gives an item).
    fn identity(&self) -> String;

    /// One acquire attempt for `claim` (see the trait's contract). Cut off at the wait's
    /// deadline by the engine: it must tolerate being dropped at any await point.
    fn try_lock(
        &self,
        claim: &LockClaim,
    ) -> impl Future<Output = Result<Attempt<Self::Lease>>> + Send;

    /// A cheap look at the lock between attempts ([`Probe::Unknown`] when there is none).
    fn probe(&self) -> impl Future<Output = Result<Probe>> + Send;

    /// The lock's status; never takes the lock.
    fn status(&self) -> impl Future<Output = Result<LockStatus>> + Send;

    /// Breaks the lock; see [`Lock::break_lock`](super::Lock::break_lock) for what `period`
    /// means.
    fn break_lease(
        &self,
        period: Option<BreakPeriod>,
    ) -> impl Future<Output = Result<LeaseBroken>> + Send;

    /// Releases the lock if an attempt cut off at the deadline took it with `proposed` (run in
    /// the background; a refusal because it never took it is fine and ignored).
    fn abandon(&self, proposed: &LeaseId) -> impl Future<Output = ()> + Send;

    /// The status of many locks at once, one [`LockStatus`] per target in `targets`' order,
    /// each the same answer [`status`](Self::status) would give (and, where contenders decide
    /// expiry, recorded as the same observation). Optional: the default reads each lock
    /// ([`status_each`]). A backend that can list its lock records overrides it with a
    /// bulk read — Blob: one List Blobs per 5,000 locks; Redis: one pipelined round trip per
    /// 2,000 locks; Cosmos DB: one query per 1,000 lock items. A shard group reads its shards
    /// and member slots through it every interval.
    ///
    /// ```no_run
    /// # async fn demo(a: azstore::blob::BlobLock, b: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// use azstore::lock::LockTarget;
    /// let read = azstore::blob::BlobLockTarget::status_many(&[a.target(), b.target()]).await?;
    /// println!("{} locked, {} requests", read.statuses.iter().filter(|s| s.is_locked()).count(), read.requests);
    /// # Ok(()) }
    /// ```
    fn status_many(targets: &[&Self]) -> impl Future<Output = Result<StatusMany>> + Send {
        status_each(targets)
    }
}

/// What [`LockTarget::status_many`] read: one status per target, in order, and the number of
/// requests it took.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct StatusMany {
    /// One status per target, in the order asked.
    pub statuses: Vec<LockStatus>,
    /// The requests (or round trips) sent.
    pub requests: u64,
}

impl StatusMany {
    /// A bulk read's result; for [`LockTarget`] implementations outside azstore.
    ///
    /// ```
    /// let read = azstore::lock::StatusMany::new(vec![azstore::lock::LockStatus::default()], 1);
    /// assert_eq!(read.statuses.len(), 1);
    /// ```
    pub fn new(statuses: Vec<LockStatus>, requests: u64) -> StatusMany {
        StatusMany { statuses, requests }
    }
}

/// [`LockTarget::status_many`] by one [`status`](LockTarget::status) read per target, all at
/// once: the default, and the fall-back of backends whose bulk read does not apply (targets in
/// different containers or servers, or too few to be worth a listing).
///
/// ```no_run
/// # async fn demo(a: azstore::blob::BlobLock, b: azstore::blob::BlobLock) -> azstore::Result<()> {
/// let read = azstore::lock::status_each(&[a.target(), b.target()]).await?;
/// assert_eq!(read.requests, 2);
/// # Ok(()) }
/// ```
pub async fn status_each<T: LockTarget>(targets: &[&T]) -> Result<StatusMany> {
    let reads = futures_util::future::join_all(targets.iter().map(|t| t.status())).await;
    let requests = reads.len() as u64;
    Ok(StatusMany {
        statuses: reads.into_iter().collect::<Result<_>>()?,
        requests,
    })
}

/// The fencing token of a new acquisition: `max(previous + 1, clock_ms)`, where `previous` is
/// the token kept in the lock record (`None` when the record does not exist) and `clock_ms` is
/// a clock in milliseconds since the Unix epoch — the service's where the backend reads it in
/// the same atomic step (Redis `TIME`), else the acquirer's wall clock (blob, Cosmos DB). Why
/// this strictly increases across holders is explained in the
/// [module documentation](crate::lock#fencing-tokens).
///
/// ```
/// use azstore::lock::next_fencing_token;
/// // A fresh record starts at the clock.
/// assert_eq!(next_fencing_token(None, 1_795_728_181_025), 1_795_728_181_025);
/// // While it lives, every holder gets at least one more than the last...
/// assert_eq!(next_fencing_token(Some(1_795_728_181_025), 1_795_728_181_000), 1_795_728_181_026);
/// // ...and the clock when that is larger.
/// assert_eq!(next_fencing_token(Some(7), 1_795_728_181_025), 1_795_728_181_025);
/// ```
pub fn next_fencing_token(previous: Option<u64>, clock_ms: u64) -> u64 {
    let after = previous.map_or(1, |p| p.saturating_add(1));
    after.max(clock_ms)
}

/// The longest prefix every name shares (cut at a character boundary): what a bulk status
/// read lists or queries.
pub(crate) fn common_prefix(names: &[&str]) -> String {
    let Some(first) = names.first() else {
        return String::new();
    };
    let mut end = first.len();
    for n in &names[1..] {
        end = first
            .char_indices()
            .zip(n.chars())
            .find(|((_, a), b)| a != b)
            .map_or(end.min(n.len()), |((i, _), _)| i.min(end));
        if end == 0 {
            break;
        }
    }
    while !first.is_char_boundary(end) {
        end -= 1;
    }
    first[..end].to_string()
}

/// This host's wall clock in milliseconds since the Unix epoch (for [`next_fencing_token`]).
pub(crate) fn wall_clock_ms() -> u64 {
    let ms = OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    u64::try_from(ms).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn common_prefix_of_lock_names() {
        assert_eq!(
            common_prefix(&["g/shards/0", "g/shards/10", "g/members/3"]),
            "g/"
        );
        assert_eq!(common_prefix(&["g/shards/1", "g/shards/10"]), "g/shards/1");
        assert_eq!(common_prefix(&["a", "b"]), "");
        assert_eq!(common_prefix(&["gü/1", "gü/2"]), "gü/");
        assert_eq!(common_prefix(&["xü", "xö"]), "x");
        assert_eq!(common_prefix(&["only"]), "only");
        assert_eq!(common_prefix(&[]), "");
    }

    #[test]
    fn fencing_tokens_grow_while_the_record_lives_and_after_it_is_recreated() {
        // While the record lives: previous + 1, even when the clock stands still or steps back.
        let mut token = next_fencing_token(None, 1_000);
        assert_eq!(token, 1_000);
        for clock in [1_000, 900, 0, 1_000] {
            let next = next_fencing_token(Some(token), clock);
            assert_eq!(next, token + 1);
            token = next;
        }
        // The clock overtakes the counter: the clock.
        assert_eq!(next_fencing_token(Some(token), 5_000), 5_000);
        // Deleted and created again: the next token is the creator's clock, larger than every
        // earlier token as long as that clock is not behind by more than the time since the
        // record was last written (here: last token 1_004, written at 1_004; recreated at 9_000).
        assert!(next_fencing_token(None, 9_000) > token);
        // A creator whose clock is behind by more than that breaks the order: the documented
        // limit of the scheme.
        assert!(next_fencing_token(None, 500) < token);
        // No clock at all (0) still counts from the record, and never overflows.
        assert_eq!(next_fencing_token(Some(41), 0), 42);
        assert_eq!(next_fencing_token(None, 0), 1);
        assert_eq!(next_fencing_token(Some(u64::MAX), 0), u64::MAX);
        assert!(wall_clock_ms() > 1_700_000_000_000);
    }
}
