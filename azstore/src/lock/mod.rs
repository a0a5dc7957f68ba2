//! The distributed lock with a fencing token: ONE engine, [`Lock<T>`], over a small backend
//! trait, [`LockTarget`]; each backend is an adapter.
//!
//! | backend | lock | lock record | held type |
//! |---|---|---|---|
//! | blob | [`BlobLock`] = `Lock<BlobLockTarget>` | an empty blob; its lease; token and owner in metadata | [`HeldLock`] |
//! | Redis (feature `redis`) | `RedisLock` = `Lock<RedisLockTarget>` | the lease key, `{key}:fence`, `{key}:owner` | `HeldRedisLock` |
//! | Cosmos DB (feature `cosmos`) | `CosmosLock` = `Lock<CosmosLockTarget>` | one lock item (holder, token, owner) | `HeldCosmosLock` |
//!
//! Every backend gets the same methods with the same meaning —
//! [`try_acquire`](Lock::try_acquire), [`acquire_within`](Lock::acquire_within) (the one wait
//! loop: transient failures ridden out until the deadline, every request cut off at it, an
//! unreachable service reported as an error, never as `None`), [`status`](Lock::status) (one
//! [`LockStatus`]), [`break_lock`](Lock::break_lock) — and one held type, [`Held`], whose
//! [`fencing_token`](Held::fencing_token) has one meaning everywhere. A backend plugs in by
//! implementing [`LockTarget`]: one atomic try-acquire with a proposed lease id, a cheap
//! probe (or "unknown"), the status, a break, and the release of an abandoned attempt. The
//! engine knows no backend; the contract suite in `testkit::contract::lock` checks every
//! backend against the same guarantees.
//!
//! ```no_run
//! # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
//! use std::time::Duration;
//! use azstore::lock::BlobLock;
//!
//! let lock = BlobLock::new(container, "locks/nightly")?;
//! let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? else {
//!     println!("busy: {:?}", lock.status().await?.owner);
//!     return Ok(());
//! };
//! let token = held.fencing_token();
//! tokio::select! {
//!     loss = held.lost() => eprintln!("lock lost, stopping: {loss}"),
//!     _ = async { /* the critical section, passing `token` along */ } => {}
//! }
//! held.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Fencing tokens
//!
//! Pass the token to the resources you protect and have them refuse tokens smaller than the
//! largest they have seen: that stops a holder that was paused (GC, SIGSTOP, a VM migration)
//! past its lease from doing damage when it wakes up. Every backend computes it the same way
//! ([`next_fencing_token`]), in the step that takes the lock:
//!
//! > **token = max(previous + 1, clock in ms)**
//!
//! where `previous` is the token kept in the lock record, and the clock is the service's where
//! the backend can read it in the same atomic step (Redis: `TIME` inside the acquire script)
//! and otherwise the acquirer's wall clock (blob, Cosmos DB). Why tokens strictly increase
//! across holders:
//!
//! * **While the record lives**, each acquisition reads the previous token and writes a larger
//!   one in the same step that makes it the holder (the blob's metadata under the new lease,
//!   the Redis script, the Cosmos DB `If-Match` write): `previous + 1` at least, whatever the
//!   clocks say.
//! * **After the record was deleted** (by hand, or collected by its time to live) there is no
//!   `previous`: the token is the creator's clock. Every earlier token was written at some
//!   moment `w` and is at most the writer's clock then (or the counter, which only passes the
//!   clock by one per acquisition within the same millisecond). The new token is larger
//!   unless the creator's clock is behind by more than the time since the record was last
//!   written. A record collected by a time to live was untouched for at least that long — and
//!   the time to live is at least the lease duration (a Cosmos DB lock item: a day by
//!   default) — so only a clock that is wrong by more than that breaks the order. Redis reads
//!   one clock (the server's) for every token.
//!
//! The first token on a fresh lock is therefore a clock value (about 1.8 × 10¹²), not 1.
//!
//! # Pauses, clocks and fencing
//!
//! [`HeldLock::is_held`], [`check`](HeldLock::check) and [`state`](HeldLock::state) decide
//! from the lease's loss deadline, measured on a clock that counts pauses and system suspend,
//! and publish the loss themselves: a holder resumed after a pause past its lease learns at its
//! very first check that it no longer holds the lock, even before the renew task runs. What
//! no check can cover is a pause *between* the check and the write; there the fencing token
//! (checked by the protected resource) or a write carrying the lease id closes the window.
//! Both are shown, with the details, in
//! [the lease module's section](crate::lease#pauses-clocks-and-fencing).

use std::time::Duration;

use crate::error::{Error, Result};
use crate::lease::GuardOptions;
use crate::lease::LeaseDuration;
use crate::lease::keepalive::Kept;

mod engine;
mod held;
mod owner;
mod target;
mod telemetry;
mod wake;

pub use engine::Lock;
pub use held::Held;
pub use owner::{LockOwner, LockStatus};
pub(crate) use owner::{hostname, parse_rfc3339, validate_label};
pub(crate) use target::wall_clock_ms;
pub use target::{Attempt, LockClaim, LockTarget, Probe, next_fencing_token};
pub(crate) use wake::{PollSleep, wakeup_for};

// The blob lock lives with its backend (`crate::blob`); these names stay here for code written
// against `azstore::lock::BlobLock`.
#[doc(no_inline)]
pub use crate::blob::{
    BlobLock, HeldLock, META_ACQUIRED_AT, META_FENCING_TOKEN, META_OWNER_HOST, META_OWNER_LABEL,
    META_OWNER_PID,
};

/// Options of a [`Lock`] on any backend.
///
/// Start from [`LockOptions::default()`] (30 s leases renewed every 10 s, waiters polling
/// every 50–800 ms, no label) and change what you need; the options are validated when the
/// lock is built, before any request.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::lease::LeaseDuration;
/// use azstore::lock::{BlobLock, LockOptions};
///
/// let options = LockOptions::default()
///     .duration(LeaseDuration::seconds(15)?) // a crashed holder blocks others at most 15 s
///     .label("nightly-report")
///     .poll_interval(Duration::from_millis(100), Duration::from_secs(2));
/// let lock = BlobLock::with_options(container, "locks/nightly", options)?;
/// # let _ = lock; Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
#[must_use]
pub struct LockOptions {
    pub(crate) duration: LeaseDuration,
    pub(crate) label: Option<String>,
    pub(crate) guard: GuardOptions,
    pub(crate) poll_min: Duration,
    pub(crate) poll_max: Duration,
    pub(crate) local_wakeup: bool,
}

impl Default for LockOptions {
    /// 30 s leases renewed every 10 s; waiters poll every 50–800 ms (jittered, backing off).
    fn default() -> Self {
        LockOptions {
            duration: LeaseDuration::Fixed(const { crate::lease::LeaseSeconds::known(30) }),
            label: None,
            guard: GuardOptions::default(),
            poll_min: Duration::from_millis(50),
            poll_max: Duration::from_millis(800),
            local_wakeup: true,
        }
    }
}

impl LockOptions {
    setters! {
        /// The lease duration (default 30 s). A holder that stops renewing (crash, pause) keeps
        /// the lock at most this long. An infinite lease is never renewed and never expires: a
        /// crashed holder then blocks everyone until someone breaks the lease.
        ///
        /// ```
        /// use azstore::lease::LeaseDuration;
        /// let options = azstore::lock::LockOptions::default().duration(LeaseDuration::seconds(60)?);
        /// # let _ = options; Ok::<(), azstore::Error>(())
        /// ```
        duration => set duration: LeaseDuration;
        /// A label recorded with the owner identity (printable ASCII, at most 256 characters;
        /// checked when the lock is built). Default: none; the host name and process id are
        /// recorded either way. [`Lock::status`] reports it as [`LockOwner::label`].
        ///
        /// ```
        /// let options = azstore::lock::LockOptions::default().label("billing-export");
        /// # let _ = options;
        /// ```
        label => into label;
        /// How the held lock's lease is renewed (default [`GuardOptions::default()`]: every
        /// third of the duration, loss reported a sixth of the duration before the lease can
        /// expire).
        ///
        /// ```
        /// use std::time::Duration;
        /// use azstore::lease::GuardOptions;
        /// use azstore::lock::LockOptions;
        /// // Renew every 5 s instead of every 10 s (for the default 30 s lease).
        /// let options = LockOptions::default()
        ///     .guard(GuardOptions::default().renew_every(Duration::from_secs(5)));
        /// # let _ = options;
        /// ```
        guard => set guard: GuardOptions;
    }

    /// Waiters sleep a random time between `min` and a ceiling that doubles from `min` to
    /// `max` between polls (defaults 50 ms and 800 ms). With 8 contenders that keeps the
    /// waiters' traffic under ~40 requests/s while the next holder still takes over within
    /// tens of milliseconds of a release (see `benches/lock_handoff.rs`). `min` must be
    /// positive and `max` at least `min` (checked when the lock is built).
    ///
    /// ```
    /// use std::time::Duration;
    /// // Fewer requests from a long-waiting batch job: poll every 1–10 s.
    /// let options = azstore::lock::LockOptions::default()
    ///     .poll_interval(Duration::from_secs(1), Duration::from_secs(10));
    /// # let _ = options;
    /// ```
    pub fn poll_interval(mut self, min: Duration, max: Duration) -> LockOptions {
        self.poll_min = min;
        self.poll_max = max;
        self
    }

    setters! {
        /// Whether waiters in this process are woken the moment a holder in this process releases
        /// the same lock (default true). Waiters in other processes always rely on polling.
        ///
        /// ```
        /// // Make local waiters poll like remote ones (e.g. to measure the hand-off).
        /// let options = azstore::lock::LockOptions::default().local_wakeup(false);
        /// # let _ = options;
        /// ```
        local_wakeup => set local_wakeup: bool;
    }

    pub(crate) fn validate(&self) -> Result<()> {
        if let Some(label) = &self.label {
            validate_label(label)?;
        }
        if self.poll_min.is_zero() || self.poll_max < self.poll_min {
            return Err(Error::invalid_input(
                "poll interval: min must be positive and max at least min",
            ));
        }
        if let Some(d) = self.duration.as_duration() {
            self.guard.plan(d, Kept::Lease)?;
        }
        Ok(())
    }
}
