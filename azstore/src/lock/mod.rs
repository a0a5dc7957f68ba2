//! [`BlobLock`]: a distributed lock on a blob lease, with a fencing token and owner identity.
//!
//! The lock is a (normally empty) blob; holding the lock means holding its lease, kept alive by
//! a [`LeaseGuard`]. Every acquisition increments a counter in the blob's metadata — the
//! **fencing token** — written with the lease id, so it only ever grows, and each holder gets a
//! larger one than every holder before it. Pass it to the resources you protect and have them
//! refuse tokens smaller than the largest they have seen: that stops a holder that was paused
//! (GC, SIGSTOP, a VM migration) past its lease from doing damage when it wakes up.
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

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use time::OffsetDateTime;
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::blob::{BlobClient, ContainerClient, LeaseState};
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, ErrorCode, ErrorKind, RequestSent, Result};
use crate::lease::keepalive::Kept;
use crate::lease::{BreakPeriod, GuardOptions, LeaseBroken, LeaseDuration, LeaseGuard};

mod held;
mod owner;
mod wake;

pub use held::Held;
pub(crate) use owner::hostname;
use owner::validate_label;
pub use owner::{LockOwner, LockStatus};
#[cfg(any(feature = "redis", feature = "cosmos"))]
pub(crate) use wake::poll_until_acquired;
pub(crate) use wake::{PollSleep, wakeup_for};

/// A held [`BlobLock`]: the renewed lease of the lock blob plus the fencing token of this
/// acquisition. Release it with [`release`](Held::release); dropping it releases in the
/// background.
///
/// While it is held, a background task renews the lease (every 10 s for the default 30 s
/// lease); [`is_held`](Held::is_held), [`check`](Held::check) and [`lost`](Held::lost) tell
/// you the moment that can no longer be vouched for.
///
/// ```no_run
/// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::lock::HeldLock;
///
/// let held: HeldLock = match lock.acquire_within(Duration::from_secs(10)).await? {
///     Some(held) => held,
///     None => return Ok(()), // someone else held it for the whole 10 s
/// };
/// for batch in 0..3 {
///     held.check()?; // stop at once if the lease can no longer be vouched for
///     println!("batch {batch} under token {}", held.fencing_token());
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
pub type HeldLock = Held<BlobClient>;

/// Metadata key of the fencing token.
pub const META_FENCING_TOKEN: &str = "fencing_token";
/// Metadata key of the holder's host name.
pub const META_OWNER_HOST: &str = "owner_host";
/// Metadata key of the holder's process id.
pub const META_OWNER_PID: &str = "owner_pid";
/// Metadata key of the holder's label.
pub const META_OWNER_LABEL: &str = "owner_label";
/// Metadata key of the acquisition time (RFC 3339, UTC).
pub const META_ACQUIRED_AT: &str = "acquired_at";

/// Options of a [`BlobLock`] (and of a Redis lock).
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
        /// recorded either way. [`BlobLock::status`] reports it as [`LockOwner::label`].
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

/// A distributed lock on the lease of one blob. Cheap to clone.
///
/// Holding the lock means holding the blob's lease; each acquisition gets a fencing token
/// larger than every earlier holder's (see the [module documentation](self)).
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::lock::BlobLock;
///
/// let lock = BlobLock::new(account.container("locks")?, "jobs/reindex")?;
/// if let Some(held) = lock.acquire_within(Duration::from_secs(60)).await? {
///     println!("running the reindex as holder #{}", held.fencing_token());
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobLock {
    container: ContainerClient,
    blob: BlobClient,
    options: LockOptions,
}

impl BlobLock {
    /// A lock on the blob `name` in `container`, with default options. The name is validated
    /// here (no request is sent); the container and the blob are created on first acquire.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let lock = azstore::lock::BlobLock::new(container, "locks/nightly")?;
    /// assert_eq!(lock.blob().name(), "locks/nightly");
    /// # Ok(()) }
    /// ```
    pub fn new(container: ContainerClient, name: &str) -> Result<BlobLock> {
        BlobLock::with_options(container, name, LockOptions::default())
    }

    /// A lock with custom options (validated here, before any request).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::lock::{BlobLock, LockOptions};
    /// let options = LockOptions::default().label("deploy");
    /// let lock = BlobLock::with_options(container, "locks/deploy", options)?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn with_options(
        container: ContainerClient,
        name: &str,
        options: LockOptions,
    ) -> Result<BlobLock> {
        let blob = container.blob(name)?;
        options.validate()?;
        Ok(BlobLock {
            container,
            blob,
            options,
        })
    }

    /// The lock blob (an empty blob whose metadata holds the fencing token and owner).
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::lock::BlobLock) {
    /// println!("lock blob: {}", lock.blob().url());
    /// # }
    /// ```
    pub fn blob(&self) -> &BlobClient {
        &self.blob
    }

    /// The options the lock was built with.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::lock::BlobLock) {
    /// println!("{:?}", lock.options());
    /// # }
    /// ```
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// One attempt: the held lock, or `None` when someone else holds it (or it is breaking).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
    /// match lock.try_acquire().await? {
    ///     Some(held) => {
    ///         println!("got it, token {}", held.fencing_token());
    ///         held.release().await?;
    ///     }
    ///     None => println!("busy; skipping this run"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<HeldLock>> {
        self.try_acquire_as(&LeaseId::random()).await
    }

    /// One attempt proposing `proposed` as the lease id. Reusing one id across the attempts of
    /// one wait makes a retry safe: if an earlier attempt's response was lost but it did
    /// acquire, the next attempt with the same id succeeds instead of conflicting.
    async fn try_acquire_as(&self, proposed: &LeaseId) -> Result<Option<HeldLock>> {
        let mut created = false;
        loop {
            let sent_at = Instant::now();
            match self
                .blob
                .acquire_lease(self.options.duration, Some(proposed), &Conditions::none())
                .await
            {
                Ok(lease) => return self.fence(lease.lease_id, sent_at).await.map(Some),
                Err(e) if e.is_not_found() && !created => {
                    self.create_lock_blob(&e).await?;
                    created = true;
                }
                Err(e)
                    if matches!(
                        e.error_code(),
                        Some(
                            ErrorCode::LeaseAlreadyPresent
                                | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
                        )
                    ) =>
                {
                    return Ok(None);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Waits at most `wait` for the lock: `Some` once held, `None` when someone else still
    /// held it at the end. `wait` is how long to wait, not the lease duration (that is
    /// [`LockOptions::duration`], 30 s by default).
    ///
    /// Waiting reads the lease state (a cheap HEAD) and only tries to acquire when the lease
    /// is free, sleeping a jittered, backing-off interval in between, so waiters do not flood
    /// the service with 409s. A release by a holder in this process wakes a waiter at once.
    ///
    /// **Returns by `wait`**: every request is cut off at the deadline, whatever the
    /// client's own time budget. Transient failures (connection resets, timeouts, 5xx) are
    /// ridden out until then — on the first attempt as on the later ones; if the service
    /// could not be reached at the end, the last such failure is returned as an error rather
    /// than `None` (which would claim someone else holds the lock). An acquire cut off at
    /// the deadline may have taken the lease: it is released again in the background, so no
    /// orphaned lease blocks the next holder. A zero `wait` gives up at once; use
    /// [`try_acquire`](Self::try_acquire) for a single attempt.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
    /// use std::time::Duration;
    ///
    /// // Wait up to 2 minutes for the lock (its lease lasts LockOptions::duration).
    /// match lock.acquire_within(Duration::from_secs(120)).await? {
    ///     Some(held) => {
    ///         println!("fencing token {}", held.fencing_token());
    ///         held.release().await?;
    ///     }
    ///     None => println!("still busy after 2 minutes"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn acquire_within(&self, wait: Duration) -> Result<Option<HeldLock>> {
        crate::telemetry::engines::lock_wait("blob", self.blob.name(), self.wait_for(wait)).await
    }

    /// The wait of [`acquire_within`](Self::acquire_within).
    async fn wait_for(&self, wait: Duration) -> Result<Option<HeldLock>> {
        let deadline = Instant::now().checked_add(wait);
        let proposed = LeaseId::random();
        let wake = self.options.local_wakeup.then(|| wakeup(&self.blob));
        let mut poll = PollSleep::new(&self.options);
        // Why the lock is not ours yet: `None` while someone else holds it, or the last
        // transient failure.
        let mut failure: Option<Error> = None;
        let mut first = true;
        loop {
            if !first {
                let now = Instant::now();
                if deadline.is_some_and(|d| now >= d) {
                    return match failure {
                        None => Ok(None),
                        Some(e) => Err(e),
                    };
                }
                let woken = poll.sleep(deadline, wake.as_deref()).await;
                if !woken && deadline.is_some_and(|d| Instant::now() >= d) {
                    continue;
                }
                // Woken by a local release: the lease was just freed, try at once.
                let state = if woken {
                    Ok(None)
                } else {
                    by_deadline(deadline, wait, async {
                        self.blob.get_properties().await.map(|p| p.lease_state)
                    })
                    .await
                };
                match state {
                    Ok(Some(LeaseState::Leased | LeaseState::Breaking)) => {
                        failure = None;
                        continue;
                    }
                    Ok(_) => {}
                    Err(e) if e.is_not_found() => {}
                    Err(e) if e.is_retryable() => {
                        failure = Some(e);
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            first = false;
            match self.acquire_by_deadline(deadline, wait, &proposed).await {
                Ok(Some(held)) => return Ok(Some(held)),
                Ok(None) => failure = None,
                // Keep waiting through transient failures; the deadline still holds.
                Err(e) if e.is_retryable() => {
                    tracing::debug!(error = %e, "transient failure while waiting for a lock");
                    failure = Some(e);
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// One acquire attempt (with the fencing write), cut off at `deadline`. An attempt cut
    /// off may have taken the lease with `proposed`: that lease is released in the background.
    async fn acquire_by_deadline(
        &self,
        deadline: Option<Instant>,
        wait: Duration,
        proposed: &LeaseId,
    ) -> Result<Option<HeldLock>> {
        let Some(d) = deadline else {
            return self.try_acquire_as(proposed).await;
        };
        match tokio::time::timeout_at(d, self.try_acquire_as(proposed)).await {
            Ok(r) => r,
            Err(_) => {
                let blob = self.blob.clone();
                let id = proposed.clone();
                tokio::spawn(async move {
                    // Refused (409/412) when the cut-off acquire never took the lease.
                    let _ = blob.release_lease(&id, &Conditions::none()).await;
                });
                Err(deadline_error(wait))
            }
        }
    }

    /// Who holds (or last held) the lock, the lease state and the fencing token. One HEAD
    /// request; it never takes the lock.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
    /// let status = lock.status().await?;
    /// if status.is_locked() {
    ///     if let Some(owner) = &status.owner {
    ///         println!("held by {owner} (token {:?})", status.fencing_token);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<LockStatus> {
        match self.blob.get_properties().await {
            Ok(p) => LockStatus::from_metadata(p.lease_state, &p.metadata),
            Err(e) if e.is_not_found() => Ok(LockStatus {
                exists: false,
                lease_state: None,
                fencing_token: None,
                owner: None,
            }),
            Err(e) => Err(e),
        }
    }

    /// Breaks the lock's lease (administrative). `None` — the safe choice — lets the rest of
    /// the holder's lease run out first: the holder's guard reports the loss at its next renew
    /// (within a third of the lease duration with the default [`GuardOptions`]), before anyone
    /// else can acquire. `Some(period)` frees the lock after `period` (or when the lease would
    /// have expired, if that is sooner): a shorter period can free it before the holder
    /// notices, and both then act as holders until it does — only the
    /// [fencing token](Held::fencing_token) keeps them apart. An infinite lease breaks at
    /// once either way. [`LeaseBroken::remaining`] says when the lock is free.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
    /// let broken = lock.break_lock(None).await?;
    /// println!("free in {:?} at the latest", broken.remaining);
    /// # Ok(()) }
    /// ```
    pub async fn break_lock(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.blob.break_lease(period, &Conditions::none()).await
    }

    async fn create_lock_blob(&self, cause: &Error) -> Result<()> {
        if cause.error_code() == Some(&ErrorCode::ContainerNotFound) {
            self.container.create_if_not_exists().await?;
        }
        match self.blob.upload("", &Conditions::if_not_exists()).await {
            Ok(_) => Ok(()),
            // Someone created it first (409), and may already lease it (412 LeaseIdMissing).
            Err(e) if e.is_conflict() || e.is_lease_error() => Ok(()),
            Err(e) if e.error_code() == Some(&ErrorCode::ContainerNotFound) => {
                self.container.create_if_not_exists().await?;
                match self.blob.upload("", &Conditions::if_not_exists()).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_conflict() || e.is_lease_error() => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Increments the fencing token and records the owner, with the lease id; then hands the
    /// lease to a guard. On failure the lease is released.
    async fn fence(&self, id: LeaseId, sent_at: Instant) -> Result<HeldLock> {
        let result = async {
            let props = self.blob.get_properties_if(&Conditions::lease(&id)).await?;
            let previous = match props.metadata.get(META_FENCING_TOKEN) {
                None => 0,
                Some(v) => v.trim().parse::<u64>().map_err(|_| {
                    Error::decode(format!(
                        "lock blob {} has a malformed {META_FENCING_TOKEN} metadata value",
                        self.blob.name()
                    ))
                })?,
            };
            let token = previous
                .checked_add(1)
                .ok_or_else(|| Error::decode("fencing token overflow"))?;
            let mut meta = BTreeMap::new();
            meta.insert(META_FENCING_TOKEN.to_string(), token.to_string());
            meta.insert(META_OWNER_HOST.to_string(), hostname());
            meta.insert(META_OWNER_PID.to_string(), std::process::id().to_string());
            if let Some(label) = &self.options.label {
                meta.insert(META_OWNER_LABEL.to_string(), label.clone());
            }
            let now = OffsetDateTime::now_utc()
                .format(&time::format_description::well_known::Rfc3339)
                .unwrap_or_default();
            meta.insert(META_ACQUIRED_AT.to_string(), now);
            self.blob
                .set_metadata(&meta, &Conditions::lease(&id).and_if_match(&props.etag))
                .await?;
            Ok::<u64, Error>(token)
        }
        .await;
        let token = match result {
            Ok(t) => t,
            Err(e) => {
                let _ = self.blob.release_lease(&id, &Conditions::none()).await;
                return Err(e);
            }
        };
        let guard = LeaseGuard::adopt(
            self.blob.clone(),
            id,
            self.options.duration,
            sent_at,
            self.options.guard.clone(),
        )?;
        let wake = self.options.local_wakeup.then(|| wakeup(&self.blob));
        Ok(Held::new(guard, token, wake))
    }
}

/// `fut`, cut off at `deadline` (a `Timeout` error then).
async fn by_deadline<T>(
    deadline: Option<Instant>,
    wait: Duration,
    fut: impl Future<Output = Result<T>>,
) -> Result<T> {
    match deadline {
        None => fut.await,
        Some(d) => tokio::time::timeout_at(d, fut)
            .await
            .unwrap_or_else(|_| Err(deadline_error(wait))),
    }
}

fn deadline_error(wait: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("the lock's storage did not answer within the lock wait of {wait:?}"),
    )
    .with_sent(RequestSent::Maybe)
}

/// A process-wide wake-up per lock blob, so that a release wakes a local waiter at once.
fn wakeup(blob: &BlobClient) -> Arc<Notify> {
    wakeup_for(blob.url())
}
