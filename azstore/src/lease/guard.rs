//! [`LeaseGuard`]: a lease renewed from a background task that says when it may be lost.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::lease::deadline::Deadline;
use crate::lease::keepalive::{
    self, Extend, Extended, GuardOptions, GuardState, Keeper, Kept, LeaseLoss, Plan,
};
use crate::lease::{Leasable, LeaseDuration};

/// The result of [`LeaseGuard::release`].
///
/// ```no_run
/// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
/// use azstore::lease::ReleaseOutcome;
/// if let ReleaseOutcome::AlreadyGone { code } = guard.release().await? {
///     eprintln!("the lease had already ended ({code:?}): someone else may have written since");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReleaseOutcome {
    /// The service released the lease.
    Released,
    /// The lease had already ended (expired and taken, broken, or the resource is gone); there
    /// was nothing left to release. Not an error: the caller's work is done either way.
    AlreadyGone {
        /// The service's code for the refusal, when it gave one.
        code: Option<ErrorCode>,
    },
}

/// A held lease, renewed from a background tokio task.
///
/// * Renews every `duration × renew_fraction` (default a third).
/// * Measures the time since the last **successful** renew, counted from when that renew was
///   *sent* (the service restarts the lease when it receives it, which is never earlier), on a
///   clock that keeps counting through pauses and system suspend ([`Clock::system`]).
/// * Signals loss — [`lost`](Self::lost), [`subscribe`](Self::subscribe),
///   [`check`](Self::check) — as soon as a renew is refused (409/412 lease codes, 404), or when
///   that time reaches the duration minus a safety margin, i.e. *before* another client can
///   acquire. Transient failures are retried quickly inside that window.
/// * [`is_held`](Self::is_held), [`check`](Self::check) and [`state`](Self::state) compare the
///   clock with that deadline themselves (from any task or thread) and publish the loss when it
///   has passed: after a pause the very first check says "lost", without waiting for the renew
///   task to run. See [Pauses, clocks and fencing](crate::lease#pauses-clocks-and-fencing) for
///   what that guarantees and the window it cannot close.
/// * [`release`](Self::release) releases explicitly; dropping the guard stops the task and
///   releases in the background (best effort).
///
/// Infinite leases need no renewing; their guard runs no task and can only learn of a break
/// when a write carrying its lease id is refused. That is how a `LeaseGuard<FileClient>` holds
/// a file lease (infinite only: [`Leasable::lease_capabilities`] refuses any other duration
/// before anything is sent), while a `LeaseGuard<ShareClient>` renews a fixed share lease like
/// a blob's.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await?;
/// tokio::select! {
///     loss = guard.lost() => eprintln!("stopping: {loss}"),
///     _ = async { /* long work, writing with guard.conditions() */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
///
/// The guard must be kept: a guard that is not bound to a variable is dropped at once, which
/// releases the lease it just acquired, so the compiler warns about it (denied here):
///
/// ```compile_fail
/// #![deny(unused_must_use)]
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// LeaseGuard::acquire(blob, LeaseDuration::seconds(15)?).await?; // released at once
/// # Ok(()) }
/// ```
#[must_use = "dropping a LeaseGuard releases the lease at once (in the background); keep it while you need the lease"]
pub struct LeaseGuard<T: Leasable> {
    target: T,
    lease_id: LeaseId,
    duration: LeaseDuration,
    /// The loss deadline (moved forward by the renew task after each successful renew; never
    /// expires for an infinite lease) and the published state: Held → Lost by the renew task
    /// or any caller that finds the deadline passed, → Released by release/drop.
    keeper: Arc<Keeper>,
    /// The renew schedule (`None`: infinite, nothing to renew).
    plan: Option<Plan>,
    /// Sending `true` (or dropping) stops the renew task.
    stop: Option<watch::Sender<bool>>,
    task: Option<JoinHandle<()>>,
    done: bool,
}

impl<T: Leasable> fmt::Debug for LeaseGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseGuard")
            .field("target", &self.target.lease_target())
            .field("lease_id", &self.lease_id)
            .field("duration", &self.duration)
            .field("state", &self.keeper.state())
            .finish()
    }
}

impl<T: Leasable> LeaseGuard<T> {
    /// Acquires a lease on `target` and starts renewing it, with default [`GuardOptions`]
    /// (renew every third of the duration; loss reported a sixth of the duration before the
    /// lease could expire). `duration` is the lease's length, not a wait: a lease held by
    /// someone else fails at once with [`ErrorKind::LeaseHeld`] (409 `LeaseAlreadyPresent` on
    /// Azure Storage).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::ErrorKind;
    /// use azstore::lease::{LeaseDuration, LeaseGuard};
    /// let guard = match LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await {
    ///     Ok(guard) => guard,
    ///     // Leased by someone else.
    ///     Err(e) if e.kind() == ErrorKind::LeaseHeld => return Ok(()),
    ///     Err(e) => return Err(e),
    /// };
    /// blob.upload("exclusive write", &guard.conditions()).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire(target: T, duration: LeaseDuration) -> Result<LeaseGuard<T>> {
        LeaseGuard::acquire_with(target, duration, GuardOptions::default()).await
    }

    /// Acquires a lease on `target` and starts renewing it. Invalid options, and a duration the
    /// target's leases cannot have (a fixed one on a file), are refused before anything is
    /// sent. Fails like the acquire itself (e.g. 409 `LeaseAlreadyPresent`).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::lease::{GuardOptions, LeaseDuration, LeaseGuard};
    /// // Renew a 60 s container lease every 10 s; report a loss 20 s before it could expire.
    /// let options = GuardOptions::default()
    ///     .renew_every(Duration::from_secs(10))
    ///     .safety_margin(Duration::from_secs(20));
    /// let guard = LeaseGuard::acquire_with(container, LeaseDuration::seconds(60)?, options).await?;
    /// # guard.release().await?; Ok(()) }
    /// ```
    pub async fn acquire_with(
        target: T,
        duration: LeaseDuration,
        options: GuardOptions,
    ) -> Result<LeaseGuard<T>> {
        plan(&target, duration, &options)?;
        let proposed = LeaseId::random();
        let sent_at = Instant::now();
        let lease = target.lease_acquire(duration, &proposed).await?;
        LeaseGuard::adopt(target, lease.lease_id, duration, sent_at, options)
    }

    /// Takes over a lease acquired elsewhere. `acquired_at` must be no later than when the
    /// acquire (or last renew) was *sent*; the loss deadline is counted from it.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::{GuardOptions, LeaseDuration, LeaseGuard};
    /// let duration = LeaseDuration::seconds(30)?;
    /// let sent_at = tokio::time::Instant::now(); // before the request is sent
    /// let lease = blob.acquire_lease(duration, None, &Conditions::none()).await?;
    /// let guard = LeaseGuard::adopt(blob, lease.lease_id, duration, sent_at, GuardOptions::default())?;
    /// # guard.release().await?; Ok(()) }
    /// ```
    pub fn adopt(
        target: T,
        lease_id: LeaseId,
        duration: LeaseDuration,
        acquired_at: Instant,
        options: GuardOptions,
    ) -> Result<LeaseGuard<T>> {
        let plan = plan(&target, duration, &options)?;
        // `acquired_at` on the guard's clock: as long before its `now` as it is before tokio's.
        let clock = options.clock_ref().clone();
        let acquired_clock = clock
            .now()
            .saturating_sub(Instant::now().saturating_duration_since(acquired_at));
        let window = plan.map(|p| p.window);
        let deadline = Deadline::new(clock, acquired_clock, acquired_at, window);
        let mut guard = LeaseGuard {
            keeper: Keeper::new(target.lease_target(), deadline, duration.as_duration()),
            target,
            lease_id,
            duration,
            plan,
            stop: None,
            task: None,
            done: false,
        };
        guard.start_task();
        Ok(guard)
    }

    /// Starts the renew task (for a fixed lease), the first renew an interval after the last.
    fn start_task(&mut self) {
        let Some(plan) = self.plan else {
            return;
        };
        let (stop_tx, stop_rx) = watch::channel(false);
        let first = self.keeper.deadline().confirmed_tokio() + plan.interval;
        let keeper = self.keeper.clone();
        let mut renew = Renew {
            target: self.target.clone(),
            id: self.lease_id.clone(),
        };
        self.task = Some(tokio::spawn(async move {
            keepalive::run(keeper, plan, first, stop_rx, &mut renew).await;
        }));
        self.stop = Some(stop_tx);
    }

    /// The lease id. Send it with writes ([`conditions`](Self::conditions)) so that the
    /// service refuses them once the lease is no longer this holder's.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// println!("holding lease {} on {}", guard.lease_id(), guard.target().name());
    /// # }
    /// ```
    pub fn lease_id(&self) -> &LeaseId {
        &self.lease_id
    }

    /// `Conditions::lease(lease_id)`, for writes to the leased resource.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// // Refused with 412 once the lease is not this holder's, however long this process paused.
    /// guard.target().upload("v2", &guard.conditions()).await?;
    /// # Ok(()) }
    /// ```
    pub fn conditions(&self) -> Conditions {
        Conditions::lease(&self.lease_id)
    }

    /// The leased resource.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// let current = guard.target().download().await?;
    /// # let _ = current; Ok(()) }
    /// ```
    pub fn target(&self) -> &T {
        &self.target
    }

    /// The lease duration.
    ///
    /// ```no_run
    /// # fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// println!("{:?} lease", guard.duration().as_duration());
    /// # }
    /// ```
    pub fn duration(&self) -> LeaseDuration {
        self.duration
    }

    /// When the last successful renew (or the acquire) was sent, on tokio's clock.
    ///
    /// ```no_run
    /// # fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// println!("last renewed {:?} ago", guard.last_renewed().elapsed());
    /// # }
    /// ```
    pub fn last_renewed(&self) -> Instant {
        self.keeper.deadline().confirmed_tokio()
    }

    /// The loss deadline as a reading of the guard's [`clock`](Self::clock): the moment the
    /// guard reports the lease lost unless a renew succeeds first (the last successful renew,
    /// as sent, plus the duration minus the safety margin). `None` for an infinite lease. A
    /// reading of [`Clock::system`] on Linux is comparable across processes (`azlock` hands
    /// it to its sentinel process).
    ///
    /// ```no_run
    /// # fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// if let Some(deadline) = guard.deadline() {
    ///     println!("vouched for another {:?}", deadline.saturating_sub(guard.clock().now()));
    /// }
    /// # }
    /// ```
    pub fn deadline(&self) -> Option<Duration> {
        self.keeper.deadline().until()
    }

    /// The clock the loss deadline is measured on ([`Clock::system`] unless
    /// [`GuardOptions::clock`] chose another).
    ///
    /// ```no_run
    /// # fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// assert!(!guard.clock().is_manual());
    /// # }
    /// ```
    pub fn clock(&self) -> &Clock {
        self.keeper.deadline().clock()
    }

    /// The current state, deciding from the deadline as well: past it, the loss is published
    /// (so [`lost`](Self::lost) and [`subscribe`](Self::subscribe) wake) and returned.
    ///
    /// ```no_run
    /// # fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// use azstore::lease::GuardState;
    /// if let GuardState::Lost(why) = guard.state() {
    ///     eprintln!("lease lost: {why}");
    /// }
    /// # }
    /// ```
    pub fn state(&self) -> GuardState {
        self.keeper.state()
    }

    /// True while the guard still vouches for the lease: no renew was refused and the last
    /// successful one was sent less than the duration minus the safety margin ago, on a clock
    /// that counts pauses and suspend. Checks the deadline itself, so it is right even when
    /// the renew task has not run yet after a pause (and publishes the loss then).
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>, items: Vec<u32>) {
    /// for item in items {
    ///     if !guard.is_held() {
    ///         break; // someone else may hold the lease by now
    ///     }
    ///     println!("processing {item}");
    /// }
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        matches!(self.keeper.state(), GuardState::Held)
    }

    /// `Ok(())` while held (see [`is_held`](Self::is_held)); otherwise an error with
    /// `lease_lost() == true` explaining why.
    ///
    /// ```no_run
    /// # fn step(guard: &azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// guard.check()?; // the loss, as an error, once the lease can no longer be vouched for
    /// # Ok(()) }
    /// ```
    pub fn check(&self) -> Result<()> {
        match self.keeper.state() {
            GuardState::Held => Ok(()),
            GuardState::Lost(loss) => Err(loss.to_error()),
            GuardState::Released => Err(Error::new(ErrorKind::LeaseLost, "the lease was released")),
        }
    }

    /// A receiver of state changes, to `select!` on or hand to other tasks. The renew task
    /// publishes a loss at the deadline (and, after a system suspend, within a second of the
    /// wake-up); any [`is_held`](Self::is_held)/[`check`](Self::check)/[`state`](Self::state)
    /// that finds the deadline passed publishes it at once.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// use azstore::lease::GuardState;
    /// let mut states = guard.subscribe();
    /// tokio::spawn(async move {
    ///     if states.wait_for(|s| matches!(s, GuardState::Lost(_))).await.is_ok() {
    ///         eprintln!("lease lost: cancel the uploads");
    ///     }
    /// });
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.keeper.subscribe()
    }

    /// Completes when the lease is (possibly) lost, with the reason. It does not borrow the
    /// guard, so it can be spawned or selected on while the guard is used. Each time it is
    /// polled it also checks the deadline itself. If the guard is released or dropped first,
    /// it never completes.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// let lost = guard.lost();
    /// tokio::select! {
    ///     loss = lost => eprintln!("stopping: {loss}"),
    ///     _ = async { /* work */ } => {}
    /// }
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        self.keeper.lost()
    }

    /// Changes the lease id into `proposed` (the service's change operation) and keeps
    /// renewing under the new id. The loss deadline is not moved: a change does not renew.
    /// On error the guard keeps the old id (and keeps renewing it).
    ///
    /// ```no_run
    /// # async fn demo(mut guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// use azstore::LeaseId;
    /// let handed_over = LeaseId::random();
    /// guard.change(&handed_over).await?;
    /// assert_eq!(guard.lease_id(), &handed_over);
    /// # Ok(()) }
    /// ```
    pub async fn change(&mut self, proposed: &LeaseId) -> Result<()> {
        self.stop_task().await;
        let changed = self.target.lease_change(&self.lease_id, proposed).await;
        if let Ok(lease) = &changed {
            self.lease_id = lease.lease_id.clone();
        }
        self.start_task();
        changed.map(drop)
    }

    /// Stops renewing and releases the lease. A lease that already ended (expired and taken,
    /// broken, resource deleted) gives [`ReleaseOutcome::AlreadyGone`], not an error; errors
    /// are left for failures to reach the service.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// use azstore::lease::ReleaseOutcome;
    /// match guard.release().await? {
    ///     ReleaseOutcome::Released => {}
    ///     ReleaseOutcome::AlreadyGone { code } => eprintln!("lease had already ended: {code:?}"),
    ///     _ => {}
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<ReleaseOutcome> {
        self.stop_task().await;
        self.done = true;
        let result = self.target.lease_release(&self.lease_id).await;
        self.keeper.release();
        match result {
            Ok(_) => Ok(ReleaseOutcome::Released),
            Err(e) if e.is_lease_error() || e.is_not_found() => Ok(ReleaseOutcome::AlreadyGone {
                code: e.error_code().cloned(),
            }),
            Err(e) => Err(e),
        }
    }

    /// Stops renewing without releasing: the lease runs out on its own (or stays, if
    /// infinite). Returns the lease id, e.g. to hand the lease to another process.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
    /// let id = guard.forget().await;
    /// println!("AZURE_LEASE_ID={id}"); // for a child process that renews it itself
    /// # }
    /// ```
    pub async fn forget(mut self) -> LeaseId {
        self.stop_task().await;
        self.done = true;
        self.keeper.release();
        self.lease_id.clone()
    }

    async fn stop_task(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(true);
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

impl<T: Leasable> Drop for LeaseGuard<T> {
    fn drop(&mut self) {
        if self.done {
            return;
        }
        self.stop.take();
        if let Some(task) = self.task.take() {
            task.abort();
        }
        self.keeper.release();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let target = self.target.clone();
            let id = self.lease_id.clone();
            handle.spawn(async move {
                if let Err(e) = target.lease_release(&id).await {
                    tracing::debug!(target = %target.lease_target(), error = %e,
                        "best-effort lease release on drop failed");
                }
            });
        } else {
            tracing::warn!(target = %self.target.lease_target(),
                "lease guard dropped outside a Tokio runtime: the lease is not released");
        }
    }
}

/// The renew schedule of a lease of `duration` on `target` (`None`: infinite, no renewing);
/// `InvalidInput` when the target's leases cannot have that duration or the options cannot
/// keep it.
fn plan<T: Leasable>(
    target: &T,
    duration: LeaseDuration,
    options: &GuardOptions,
) -> Result<Option<Plan>> {
    let caps = target.lease_capabilities();
    caps.check(&target.lease_target(), duration)?;
    let Some(d) = duration.as_duration() else {
        return Ok(None);
    };
    if !caps.renew {
        return Err(Error::invalid_input(format!(
            "{}: leases cannot be renewed, so only an infinite lease can be guarded",
            target.lease_target()
        )));
    }
    options.plan(d, Kept::Lease).map(Some)
}

/// A lease's renew, as the keep-alive core repeats it.
struct Renew<T> {
    target: T,
    id: LeaseId,
}

impl<T: Leasable> Extend for Renew<T> {
    const INTERRUPTIBLE: bool = true;

    async fn extend(&mut self) -> Extended {
        match self.target.lease_renew(&self.id).await {
            Ok(_) => Extended::Done,
            Err(e) if e.is_retryable() => Extended::Transient(e),
            Err(e) => Extended::Refused(e),
        }
    }
}
