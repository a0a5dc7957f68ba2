//! Leases: pessimistic concurrency for blobs, containers, shares and files.
//!
//! A lease gives one holder exclusive write (and delete) access. Durations are 15–60 seconds or
//! infinite; [`LeaseDuration`] and [`BreakPeriod`] cannot hold any other value, so a bad
//! duration is refused before a request is sent.
//!
//! * The five lease operations (acquire, renew, change, release, break) are methods of
//!   [`BlobClient`](crate::blob::BlobClient) (`acquire_lease`, …),
//!   [`ContainerClient`](crate::blob::ContainerClient), [`ShareClient`](crate::file::ShareClient)
//!   and [`FileClient`](crate::file::FileClient) (each service's in its own folder), returning
//!   the same typed results.
//! * [`Leasable`] is the one contract for "something that can be leased", capability
//!   differences included ([`LeaseCapabilities`]: file leases are infinite only and cannot be
//!   renewed), so that one [`LeaseGuard`] serves blobs, containers, shares, files (and Redis
//!   keys): `LeaseGuard<ShareClient>` renews a share lease, `LeaseGuard<FileClient>` holds a
//!   file lease and releases it when dropped.
//! * [`LeaseGuard`] holds a lease and renews it from a background task, and tells you — through
//!   [`LeaseGuard::lost`] or a [`watch`](tokio::sync::watch) channel — the moment it can no
//!   longer be sure it still holds it.
//!
//! ```no_run
//! # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::Conditions;
//! use azstore::lease::{LeaseDuration, LeaseGuard};
//!
//! let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await?;
//! // Writes carry the lease id; a stale holder's writes are refused by Azure itself.
//! blob.upload("mine", &Conditions::lease(guard.lease_id())).await?;
//! guard.release().await?;
//! # Ok(()) }
//! ```
//!
//! # Pauses, clocks and fencing
//!
//! A lease is the *service's* promise, for a time. The holder's belief that it still holds it
//! goes stale whenever the holder stops running while the time runs on: a GC pause, SIGSTOP, a
//! debugger, a VM freeze or migration, a laptop suspend. What [`LeaseGuard`] does about it:
//!
//! * **The deadline counts pauses and suspend.** The guard reports the loss when no renew has
//!   succeeded for the duration minus a safety margin (a sixth by default), counted from when
//!   the last successful renew was *sent*. That time is measured on
//!   [`Clock::system`](crate::clock::Clock::system): `CLOCK_BOOTTIME` on Linux, which keeps
//!   counting while the machine is suspended, so a suspend cannot stretch the lease.
//! * **The check decides, not only the renew task.** [`is_held`](LeaseGuard::is_held),
//!   [`check`](LeaseGuard::check) and [`state`](LeaseGuard::state) (and the same methods of
//!   [`HeldBlobLock`](crate::blob::HeldBlobLock), and
//!   [`MessageGuard::is_lost`](crate::queue::MessageGuard::is_lost)) compare the clock with the
//!   deadline themselves, from any task or thread, and publish the loss when it has passed, so
//!   [`lost`](LeaseGuard::lost) and [`subscribe`](LeaseGuard::subscribe) wake at once. After a
//!   pause, the first check already answers "lost": it does not wait for the background task
//!   to be scheduled.
//! * **What that guarantees:** when `is_held()` returns `true`, the last successful renew was
//!   sent less than the duration minus the margin ago, so the service (which starts counting
//!   when it *receives* the renew) cannot have expired the lease yet, and nobody else can hold
//!   it. After a loss the guard never says "held" again.
//!
//! **What no local check can close: the window between the check and the write.** A process
//! can be paused just after `is_held()` returned `true` and resume — and write — after the
//! lease expired and someone else acquired it. Only the *receiver* of the write can refuse it.
//! Two ways to make it do so:
//!
//! 1. **Write with the lease id** when the write goes to the leased resource itself: the
//!    service refuses it (412 `LeaseIdMismatchWithBlobOperation` when someone else holds it,
//!    `LeaseNotPresentWithBlobOperation` when it expired) once the lease is not this holder's.
//!
//!    ```no_run
//!    # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//!    use azstore::lease::{LeaseDuration, LeaseGuard};
//!    let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await?;
//!    // Even if this process is paused here for a minute, a stale write cannot land:
//!    match blob.upload("new contents", &guard.conditions()).await {
//!        Err(e) if e.is_lease_error() => eprintln!("not the holder any more: {e}"),
//!        other => { other?; }
//!    }
//!    guard.release().await?;
//!    # Ok(()) }
//!    ```
//!
//! 2. **Check a fencing token** when the protected data lives elsewhere:
//!    [`BlobLock`](crate::blob::BlobLock) hands each holder a token larger than every earlier
//!    holder's ([`HeldBlobLock::fencing_token`](crate::blob::HeldBlobLock::fencing_token)); the
//!    resource remembers the largest token it accepted and refuses smaller ones. Here the
//!    resource is a blob that keeps the token in its metadata and is written with If-Match,
//!    so the check and the write are one atomic step on the service:
//!
//!    ```no_run
//!    # async fn demo(lock: azstore::blob::BlobLock, report: azstore::blob::BlobClient) -> azstore::Result<()> {
//!    use std::time::Duration;
//!    use azstore::Conditions;
//!    use azstore::blob::PutOptions;
//!
//!    /// Writes `body` unless a holder with a larger token has written already.
//!    async fn write_fenced(report: &azstore::blob::BlobClient, token: u64, body: &'static str)
//!        -> azstore::Result<bool> {
//!        let props = report.get_properties().await?;
//!        let seen: u64 = props.metadata.get("fence").and_then(|v| v.parse().ok()).unwrap_or(0);
//!        if token < seen {
//!            return Ok(false); // a newer holder wrote: this one was paused past its lease
//!        }
//!        // If-Match: nobody may have written between the read and this write.
//!        let put = PutOptions::new(Conditions::if_match(&props.etag))
//!            .meta("fence", token.to_string());
//!        report.put(body, &put).await?;
//!        Ok(true)
//!    }
//!
//!    if let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? {
//!        if !write_fenced(&report, held.fencing_token(), "tonight's numbers").await? {
//!            eprintln!("fenced off: a newer holder exists");
//!        }
//!        held.release().await?;
//!    }
//!    # Ok(()) }
//!    ```
//!
//! `azlock` adds a sentinel process for the command it runs (see `azlock --help`); the
//! command still needs the fencing token (`AZLOCK_FENCING_TOKEN`) for the same window.

use std::future::Future;
use std::time::Duration;

use time::OffsetDateTime;

use crate::conditions::{ETag, LeaseId};
use crate::error::{Error, Result};

pub(crate) mod deadline;
mod guard;
pub(crate) mod keepalive;
mod telemetry;

pub use guard::{LeaseGuard, ReleaseOutcome};
pub use keepalive::{GuardOptions, GuardState, LeaseLoss};

/// How long a lease lasts: 15–60 seconds, or infinite.
///
/// No other value can be built: a fixed duration holds a [`LeaseSeconds`], which only
/// [`LeaseDuration::seconds`] / [`LeaseSeconds::new`] make, after checking the range.
///
/// ```
/// use azstore::lease::{LeaseDuration, LeaseSeconds};
/// let d = LeaseDuration::seconds(30)?;
/// assert_eq!(d, LeaseDuration::Fixed(LeaseSeconds::new(30)?));
/// assert!(LeaseDuration::seconds(61).is_err());
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LeaseDuration {
    /// Expires this many seconds (15–60) after acquire or the last renew.
    Fixed(LeaseSeconds),
    /// Never expires; must be released or broken.
    Infinite,
}

/// A fixed lease duration in whole seconds, always within 15–60 (what the service accepts).
///
/// ```
/// use azstore::lease::LeaseSeconds;
/// let s = LeaseSeconds::try_from(20)?;
/// assert_eq!(s.get(), 20);
/// assert!(LeaseSeconds::MIN <= s && s <= LeaseSeconds::MAX);
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct LeaseSeconds(u8);

impl LeaseSeconds {
    /// The shortest fixed lease: 15 s.
    pub const MIN: LeaseSeconds = LeaseSeconds(15);
    /// The longest fixed lease: 60 s.
    pub const MAX: LeaseSeconds = LeaseSeconds(60);

    /// `secs` if it is within 15–60, else `InvalidInput`.
    ///
    /// ```
    /// use azstore::lease::LeaseSeconds;
    /// assert_eq!(LeaseSeconds::new(45)?.get(), 45);
    /// assert_eq!(LeaseSeconds::new(5).unwrap_err().kind(), azstore::ErrorKind::InvalidInput);
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(secs: u64) -> Result<LeaseSeconds> {
        if (15..=60).contains(&secs) {
            Ok(LeaseSeconds(secs as u8))
        } else {
            Err(Error::invalid_input(format!(
                "lease duration must be 15-60 seconds or infinite (got {secs} s)"
            )))
        }
    }

    /// The seconds.
    ///
    /// ```
    /// assert_eq!(azstore::lease::LeaseSeconds::MAX.get(), 60);
    /// ```
    pub fn get(self) -> u8 {
        self.0
    }

    /// For constants known to be in range; use in a `const { }` block so that a value out of
    /// range fails the build, not a run.
    pub(crate) const fn known(secs: u8) -> LeaseSeconds {
        assert!(15 <= secs && secs <= 60, "lease duration out of range");
        LeaseSeconds(secs)
    }
}

impl TryFrom<u64> for LeaseSeconds {
    type Error = Error;

    fn try_from(secs: u64) -> Result<LeaseSeconds> {
        LeaseSeconds::new(secs)
    }
}

impl LeaseDuration {
    /// A fixed duration; `InvalidInput` outside 15–60 s.
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// assert!(LeaseDuration::seconds(30).is_ok());
    /// assert!(LeaseDuration::seconds(10).is_err());
    /// ```
    pub fn seconds(secs: u64) -> Result<LeaseDuration> {
        LeaseSeconds::new(secs).map(LeaseDuration::Fixed)
    }

    /// The `x-ms-lease-duration` header value (`-1` for infinite).
    ///
    /// ```
    /// use azstore::lease::LeaseDuration;
    /// assert_eq!(LeaseDuration::seconds(15)?.header_value(), "15");
    /// assert_eq!(LeaseDuration::Infinite.header_value(), "-1");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn header_value(self) -> String {
        match self {
            LeaseDuration::Fixed(s) => s.get().to_string(),
            LeaseDuration::Infinite => "-1".to_string(),
        }
    }

    /// The duration, or `None` when infinite.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::lease::LeaseDuration;
    /// assert_eq!(LeaseDuration::seconds(30)?.as_duration(), Some(Duration::from_secs(30)));
    /// assert_eq!(LeaseDuration::Infinite.as_duration(), None);
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn as_duration(self) -> Option<Duration> {
        match self {
            LeaseDuration::Fixed(s) => Some(Duration::from_secs(s.get().into())),
            LeaseDuration::Infinite => None,
        }
    }
}

/// How long a break waits before the lease ends: 0–60 seconds. During the period the holder
/// keeps the lease (and its writes still succeed) but cannot renew it; afterwards anyone may
/// acquire.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::lease::BreakPeriod;
/// // Give the holder 10 s to notice and finish its current write.
/// let broken = blob.break_lease(Some(BreakPeriod::seconds(10)?), &Conditions::none()).await?;
/// println!("lease ends in {:?}", broken.remaining);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct BreakPeriod(u8);

impl BreakPeriod {
    /// A break period; `InvalidInput` above 60 s.
    ///
    /// ```
    /// use azstore::lease::BreakPeriod;
    /// assert_eq!(BreakPeriod::seconds(60)?.as_secs(), 60);
    /// assert!(BreakPeriod::seconds(61).is_err());
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn seconds(secs: u64) -> Result<BreakPeriod> {
        if secs <= 60 {
            Ok(BreakPeriod(secs as u8))
        } else {
            Err(Error::invalid_input(format!(
                "break period must be 0-60 seconds (got {secs} s)"
            )))
        }
    }

    /// Break at once: the lease ends now and anyone may acquire, while the old holder learns
    /// of it only at its next renew or write.
    ///
    /// ```
    /// use azstore::lease::BreakPeriod;
    /// assert_eq!(BreakPeriod::immediate().as_secs(), 0);
    /// ```
    pub fn immediate() -> BreakPeriod {
        BreakPeriod(0)
    }

    /// The seconds.
    ///
    /// ```
    /// assert_eq!(azstore::lease::BreakPeriod::seconds(5)?.as_secs(), 5);
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn as_secs(self) -> u8 {
        self.0
    }
}

/// What acquire, renew and change return.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::lease::LeaseDuration;
/// let lease = blob.acquire_lease(LeaseDuration::seconds(30)?, None, &Conditions::none()).await?;
/// println!("lease {} on version {:?}", lease.lease_id, lease.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeaseResult {
    /// The lease id now in force.
    pub lease_id: LeaseId,
    /// The resource's ETag (lease operations do not change it).
    pub etag: Option<ETag>,
    /// The resource's Last-Modified (lease operations do not change it).
    pub last_modified: Option<OffsetDateTime>,
}

impl LeaseResult {
    /// Builds a result; for implementors of [`Leasable`] outside azstore.
    ///
    /// ```
    /// use azstore::LeaseId;
    /// use azstore::lease::LeaseResult;
    /// let id = LeaseId::random();
    /// let result = LeaseResult::new(id.clone(), None);
    /// assert_eq!(result.lease_id, id);
    /// ```
    pub fn new(lease_id: LeaseId, etag: Option<ETag>) -> LeaseResult {
        LeaseResult {
            lease_id,
            etag,
            last_modified: None,
        }
    }
}

/// What release returns.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
/// let released = blob.release_lease(&id, &azstore::Conditions::none()).await?;
/// println!("released; blob still at {:?}", released.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeaseReleased {
    /// The resource's ETag.
    pub etag: Option<ETag>,
    /// The resource's Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

impl LeaseReleased {
    /// Builds a result; for implementors of [`Leasable`] outside azstore.
    ///
    /// ```
    /// use azstore::ETag;
    /// let released = azstore::lease::LeaseReleased::new(Some(ETag::new("\"0x8D\"")));
    /// assert!(released.etag.is_some());
    /// ```
    pub fn new(etag: Option<ETag>) -> LeaseReleased {
        LeaseReleased {
            etag,
            last_modified: None,
        }
    }
}

/// What break returns.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let broken = blob.break_lease(None, &azstore::Conditions::none()).await?;
/// if broken.remaining.is_zero() {
///     println!("free now");
/// } else {
///     println!("free in {:?}", broken.remaining);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LeaseBroken {
    /// Time left until the lease is broken (`x-ms-lease-time`; zero when broken at once).
    pub remaining: Duration,
    /// The resource's ETag.
    pub etag: Option<ETag>,
    /// The resource's Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

impl LeaseBroken {
    /// Builds a result; for implementors of [`Leasable`] outside azstore.
    ///
    /// ```
    /// use std::time::Duration;
    /// let broken = azstore::lease::LeaseBroken::new(Duration::from_secs(12), None);
    /// assert_eq!(broken.remaining.as_secs(), 12);
    /// ```
    pub fn new(remaining: Duration, etag: Option<ETag>) -> LeaseBroken {
        LeaseBroken {
            remaining,
            etag,
            last_modified: None,
        }
    }
}

/// What a resource's leases can do: the differences between services, as part of the
/// [`Leasable`] contract. Blobs, containers and shares can do everything; file leases are
/// infinite only, cannot be renewed, and break at once.
///
/// ```
/// use azstore::lease::{LeaseCapabilities, LeaseDuration};
/// let file = LeaseCapabilities::INFINITE_ONLY;
/// assert!(file.check("file a.txt", LeaseDuration::Infinite).is_ok());
/// assert!(file.check("file a.txt", LeaseDuration::seconds(15)?).is_err());
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct LeaseCapabilities {
    /// Fixed 15–60 s leases can be acquired (else infinite only).
    pub fixed_duration: bool,
    /// A lease can be renewed.
    pub renew: bool,
    /// A break can wait for a period (else it breaks at once).
    pub break_period: bool,
}

impl LeaseCapabilities {
    /// Everything: fixed and infinite leases, renew, a break period (blobs, containers, shares).
    pub const ALL: LeaseCapabilities = LeaseCapabilities {
        fixed_duration: true,
        renew: true,
        break_period: true,
    };

    /// Infinite leases only, no renew, immediate break (files).
    pub const INFINITE_ONLY: LeaseCapabilities = LeaseCapabilities {
        fixed_duration: false,
        renew: false,
        break_period: false,
    };

    /// `InvalidInput` when a lease of `duration` cannot be had on `target` (its name, for the
    /// message).
    ///
    /// ```
    /// use azstore::lease::{LeaseCapabilities, LeaseDuration};
    /// assert!(LeaseCapabilities::ALL.check("blob a", LeaseDuration::seconds(15)?).is_ok());
    /// let err = LeaseCapabilities::INFINITE_ONLY.check("file b", LeaseDuration::seconds(15)?);
    /// assert_eq!(err.unwrap_err().kind(), azstore::ErrorKind::InvalidInput);
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn check(self, target: &str, duration: LeaseDuration) -> Result<()> {
        if duration != LeaseDuration::Infinite && !self.fixed_duration {
            return Err(Error::invalid_input(format!(
                "{target} supports only infinite leases (got {duration:?}); use LeaseDuration::Infinite"
            )));
        }
        Ok(())
    }

    /// `InvalidInput` when `period` cannot be asked of a break on `target` (an immediate break
    /// is always possible).
    ///
    /// ```
    /// use azstore::lease::{BreakPeriod, LeaseCapabilities};
    /// let file = LeaseCapabilities::INFINITE_ONLY;
    /// assert!(file.check_break("file b", Some(BreakPeriod::immediate())).is_ok());
    /// assert!(file.check_break("file b", Some(BreakPeriod::seconds(10)?)).is_err());
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn check_break(self, target: &str, period: Option<BreakPeriod>) -> Result<()> {
        match period {
            Some(p) if p.as_secs() > 0 && !self.break_period => Err(Error::invalid_input(format!(
                "{target} leases break at once; a break period cannot be given"
            ))),
            _ => Ok(()),
        }
    }
}

/// A resource that can be leased: a blob, a container, a share, a file (each implemented in its
/// service's folder) or a Redis key. [`LeaseGuard`] is generic over it. What the resource's
/// leases cannot do is said by [`lease_capabilities`](Self::lease_capabilities): the guard
/// refuses a fixed duration on a file before anything is sent, and never renews an infinite
/// lease.
///
/// The methods return `Send` futures so that a guard can renew from a spawned task. Errors
/// follow azstore's conventions: a refusal is [`ErrorKind::LeaseHeld`](crate::ErrorKind::LeaseHeld)
/// (someone else holds it) or [`ErrorKind::LeaseLost`](crate::ErrorKind::LeaseLost) (the id
/// named is no longer the lease's), the service's own code kept in
/// [`Error::error_code`](crate::Error::error_code); [`Error::is_retryable`] tells transient
/// failures apart.
///
/// Code generic over `Leasable` works on every kind of lease:
///
/// ```no_run
/// use azstore::lease::{Leasable, LeaseDuration, LeaseGuard};
///
/// /// Runs `work` while holding a lease on `target`, whatever it is.
/// async fn exclusively<T: Leasable>(target: T, work: impl Future<Output = ()>) -> azstore::Result<()> {
///     let guard = LeaseGuard::acquire(target, LeaseDuration::seconds(30)?).await?;
///     tokio::select! {
///         loss = guard.lost() => eprintln!("{}: {loss}", guard.target().lease_target()),
///         _ = work => {}
///     }
///     guard.release().await?;
///     Ok(())
/// }
/// # async fn demo(blob: azstore::blob::BlobClient, share: azstore::file::ShareClient) -> azstore::Result<()> {
/// exclusively(blob, async { /* ... */ }).await?;
/// exclusively(share, async { /* ... */ }).await?;
/// # Ok(()) }
/// ```
pub trait Leasable: Clone + Send + Sync + 'static {
    /// A short human-readable name of the resource, for messages (e.g. `blob locks/nightly`).
    ///
    /// ```no_run
    /// # fn demo(blob: azstore::blob::BlobClient) {
    /// use azstore::lease::Leasable;
    /// println!("leasing {}", blob.lease_target());
    /// # }
    /// ```
    fn lease_target(&self) -> String;

    /// What this resource's leases can do. Default [`LeaseCapabilities::ALL`], the answer of
    /// blobs, containers, shares, Redis, Cosmos DB and the in-memory backend; files override
    /// it with [`LeaseCapabilities::INFINITE_ONLY`]. The guard renews, and refuses durations,
    /// by this answer, so a backend whose leases cannot do all of it must override it: the
    /// leasable contract suite (`testkit::contract::leasable`) picks the durations and the
    /// renewal guarantees it runs by this answer, and fails a backend that claims too much.
    ///
    /// ```no_run
    /// # fn demo(file: azstore::file::FileClient) {
    /// use azstore::lease::{Leasable, LeaseCapabilities};
    /// assert_eq!(file.lease_capabilities(), LeaseCapabilities::INFINITE_ONLY);
    /// # }
    /// ```
    fn lease_capabilities(&self) -> LeaseCapabilities {
        LeaseCapabilities::ALL
    }

    /// Acquires a lease for `duration` with the proposed id `proposed`. Proposing the id makes
    /// a retried acquire safe: a repeat with the same id succeeds instead of conflicting.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::LeaseId;
    /// use azstore::lease::{Leasable, LeaseDuration};
    /// let proposed = LeaseId::random();
    /// let lease = blob.lease_acquire(LeaseDuration::seconds(15)?, &proposed).await?;
    /// assert_eq!(lease.lease_id, proposed);
    /// # Ok(()) }
    /// ```
    fn lease_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
    ) -> impl Future<Output = Result<LeaseResult>> + Send;

    /// Renews the lease `id`, restarting its duration. [`LeaseGuard`] calls this on its
    /// schedule; call it yourself only for a lease you manage by hand.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::lease::Leasable;
    /// blob.lease_renew(&id).await?;
    /// # Ok(()) }
    /// ```
    fn lease_renew(&self, id: &LeaseId) -> impl Future<Output = Result<LeaseResult>> + Send;

    /// Changes the lease id `id` into `proposed` (e.g. to hand a lease to another process
    /// that knows `proposed`). The duration is not restarted.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::LeaseId;
    /// use azstore::lease::Leasable;
    /// let next = LeaseId::random();
    /// let lease = blob.lease_change(&id, &next).await?;
    /// assert_eq!(lease.lease_id, next);
    /// # Ok(()) }
    /// ```
    fn lease_change(
        &self,
        id: &LeaseId,
        proposed: &LeaseId,
    ) -> impl Future<Output = Result<LeaseResult>> + Send;

    /// Releases the lease `id`, so that anyone may acquire at once.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::lease::Leasable;
    /// blob.lease_release(&id).await?;
    /// # Ok(()) }
    /// ```
    fn lease_release(&self, id: &LeaseId) -> impl Future<Output = Result<LeaseReleased>> + Send;

    /// Breaks whatever lease is active, after `period` (None: the service default, which is
    /// the rest of a fixed lease and at once for an infinite one).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::lease::{BreakPeriod, Leasable};
    /// let broken = blob.lease_break(Some(BreakPeriod::immediate())).await?;
    /// assert!(broken.remaining.is_zero());
    /// # Ok(()) }
    /// ```
    fn lease_break(
        &self,
        period: Option<BreakPeriod>,
    ) -> impl Future<Output = Result<LeaseBroken>> + Send;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds() {
        assert!(LeaseDuration::seconds(14).is_err());
        assert!(LeaseDuration::seconds(61).is_err());
        assert!(LeaseSeconds::try_from(61).is_err());
        assert!(LeaseSeconds::new(u64::MAX).is_err());
        assert_eq!(LeaseSeconds::MIN.get(), 15);
        assert_eq!(LeaseSeconds::MAX.get(), 60);
        assert_eq!(LeaseDuration::seconds(15).unwrap().header_value(), "15");
        assert_eq!(LeaseDuration::Infinite.header_value(), "-1");
        assert!(BreakPeriod::seconds(61).is_err());
        assert_eq!(BreakPeriod::seconds(60).unwrap().as_secs(), 60);
    }
}
