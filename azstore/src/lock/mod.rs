#![doc = include_str!("README.md")]
//!
//! The engine knows no backend: each backend implements [`LockTarget`] in its own folder, beside
//! its lock type (`azstore::blob::BlobLock`, `azstore::redis::RedisLock`,
//! `azstore::cosmos::CosmosLock`).

use std::time::Duration;

use crate::error::{Error, Result};
use crate::lease::GuardOptions;
use crate::lease::LeaseDuration;
use crate::lease::keepalive::Kept;

mod engine;
mod held;
mod line;
mod owner;
mod rwlock;
mod semaphore;
mod target;
mod telemetry;
mod wake;

pub use engine::Lock;
pub use held::Held;
pub use line::LINE_PLACES;
pub use owner::CLOSED_SLOT_LABEL;
pub(crate) use owner::Liveness;
pub use owner::{LockOwner, LockStatus};
pub(crate) use owner::{hostname, parse_rfc3339, validate_label};
pub use rwlock::{RwLock, RwLockStatus, WriteGuard};
pub use semaphore::{MAX_PERMITS, Permit, PermitHolder, Semaphore, SemaphoreStatus};
pub use target::{
    Attempt, LockClaim, LockTarget, Probe, StatusMany, next_fencing_token, status_each,
};
pub(crate) use target::{common_prefix, wall_clock_ms};
pub(crate) use wake::{PollSleep, RoundStart, WaitRounds, wakeup_for};

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
/// use azstore::lock::{LockOptions};
/// use azstore::blob::{BlobLock};
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
    /// The lease duration (default 30 s). A holder that stops renewing (crash, pause) keeps
    /// the lock at most this long. An infinite lease is never renewed and never expires: a
    /// crashed holder then blocks everyone until someone breaks the lease.
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// let options = azstore::lock::LockOptions::default().duration(LeaseDuration::seconds(60)?);
    /// # let _ = options; Ok::<(), azstore::Error>(())
    /// ```
    pub fn duration(mut self, v: LeaseDuration) -> Self {
        self.duration = v;
        self
    }

    /// A label recorded with the owner identity (printable ASCII, at most 256 characters;
    /// checked when the lock is built). Default: none; the host name and process id are
    /// recorded either way. [`Lock::status`] reports it as [`LockOwner::label`].
    ///
    /// ```
    /// let options = azstore::lock::LockOptions::default().label("billing-export");
    /// # let _ = options;
    /// ```
    pub fn label(mut self, v: impl Into<String>) -> Self {
        self.label = Some(v.into());
        self
    }

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
    pub fn guard(mut self, v: GuardOptions) -> Self {
        self.guard = v;
        self
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

    /// Whether waiters in this process are woken the moment a holder in this process releases
    /// the same lock (default true). Waiters in other processes always rely on polling.
    ///
    /// ```
    /// // Make local waiters poll like remote ones (e.g. to measure the hand-off).
    /// let options = azstore::lock::LockOptions::default().local_wakeup(false);
    /// # let _ = options;
    /// ```
    pub fn local_wakeup(mut self, v: bool) -> Self {
        self.local_wakeup = v;
        self
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
