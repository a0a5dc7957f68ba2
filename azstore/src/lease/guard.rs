//! [`LeaseGuard`]: a lease renewed from a background task that says when it may be lost.

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Weak};
use std::time::Duration;

use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::lease::deadline::{CLOCK_POLL, Deadline};
use crate::lease::{Leasable, LeaseDuration};

/// How a [`LeaseGuard`] renews. The defaults suit almost everyone: renew every third of the
/// duration, give up vouching for the lease one sixth of the duration before it would expire,
/// and retry a transient renew failure after 250 ms (doubling up to the renew interval).
/// Deadlines are measured on [`Clock::system`] (which counts through suspend on Linux).
#[derive(Debug, Clone, PartialEq)]
#[must_use]
pub struct GuardOptions {
    renew_fraction: f64,
    safety_margin: Option<Duration>,
    retry_delay: Duration,
    clock: Clock,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            renew_fraction: 1.0 / 3.0,
            safety_margin: None,
            retry_delay: Duration::from_millis(250),
            clock: Clock::system(),
        }
    }
}

impl GuardOptions {
    /// Renew after this fraction of the lease duration (0 < f < 1; default 1/3).
    pub fn renew_fraction(mut self, fraction: f64) -> GuardOptions {
        self.renew_fraction = fraction;
        self
    }

    /// Report the lease as lost when no renew has succeeded for the duration minus this
    /// margin (default: one sixth of the duration). The margin absorbs request latency and
    /// clock-rate differences so the holder stops *before* another client can acquire.
    pub fn safety_margin(mut self, margin: Duration) -> GuardOptions {
        self.safety_margin = Some(margin);
        self
    }

    /// First delay before retrying a transient renew failure (default 250 ms; doubles up to
    /// the renew interval, never past the loss deadline).
    pub fn retry_delay(mut self, delay: Duration) -> GuardOptions {
        self.retry_delay = delay;
        self
    }

    /// The clock the loss deadline is measured on (default [`Clock::system`]). Renewals are
    /// still scheduled on tokio's clock, and the guard also reports the loss when tokio's clock
    /// says the window has passed (in a running program the system clock is never behind it;
    /// under tokio's paused test time, tokio's clock moves and this one does not). Pass a
    /// [`ManualClock`](crate::clock::ManualClock)'s clock to make "the deadline passed while
    /// the renew task did not run" happen in a test.
    pub fn clock(mut self, clock: Clock) -> GuardOptions {
        self.clock = clock;
        self
    }

    /// The schedule for a lease of `duration`; `InvalidInput` when the options cannot keep it.
    pub(crate) fn plan(&self, duration: Duration) -> Result<Plan> {
        let f = self.renew_fraction;
        if !(f > 0.0 && f < 1.0) {
            return Err(Error::invalid_input(format!(
                "renew fraction must be between 0 and 1 (got {f})"
            )));
        }
        let interval = duration.mul_f64(f);
        let margin = self.safety_margin.unwrap_or(duration / 6);
        let window = duration.checked_sub(margin).unwrap_or_default();
        if window.is_zero() || interval >= window {
            return Err(Error::invalid_input(format!(
                "renew interval {interval:?} must be shorter than the lease duration {duration:?} \
                 minus the safety margin {margin:?}"
            )));
        }
        if self.retry_delay.is_zero() {
            return Err(Error::invalid_input("retry delay must be positive"));
        }
        Ok(Plan {
            interval,
            window,
            retry_delay: self.retry_delay,
        })
    }
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    interval: Duration,
    /// Time after the last successful renew (as sent) at which the lease counts as lost.
    window: Duration,
    retry_delay: Duration,
}

/// Why a [`LeaseGuard`] no longer vouches for its lease.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseLoss {
    /// The service refused a renew: the lease was broken, released, changed, or expired and
    /// taken by someone else.
    Refused {
        /// HTTP status of the refusal, when the service answered.
        status: Option<u16>,
        /// The service error code (e.g. `LeaseIsBrokenAndCannotBeRenewed`).
        code: Option<ErrorCode>,
        /// The message.
        message: String,
    },
    /// No renew succeeded for too long (the service unreachable, or this process was paused):
    /// the lease may have expired and been taken by now.
    Unconfirmed {
        /// Time since the last renew that succeeded (measured from when it was sent).
        since_last_renew: Duration,
    },
}

impl LeaseLoss {
    /// This loss as an [`Error`] of kind [`ErrorKind::Lease`] and code
    /// [`ErrorCode::LeaseLost`], so `err.lease_lost()` is true.
    pub fn to_error(&self) -> Error {
        Error::new(ErrorKind::Lease, self.to_string()).with_code(ErrorCode::LeaseLost)
    }

    fn refused(e: &Error) -> LeaseLoss {
        LeaseLoss::Refused {
            status: e.status(),
            code: e.error_code().cloned(),
            message: e.message().to_string(),
        }
    }
}

impl fmt::Display for LeaseLoss {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LeaseLoss::Refused {
                status,
                code,
                message,
            } => {
                write!(f, "lease renew refused")?;
                match (status, code) {
                    (Some(s), Some(c)) => write!(f, " ({s} {c})")?,
                    (Some(s), None) => write!(f, " ({s})")?,
                    (None, Some(c)) => write!(f, " ({c})")?,
                    (None, None) => {}
                }
                write!(f, ": {message}")
            }
            LeaseLoss::Unconfirmed { since_last_renew } => write!(
                f,
                "no lease renew succeeded for {:.1} s; the lease may have expired",
                since_last_renew.as_secs_f64()
            ),
        }
    }
}

/// What a [`LeaseGuard`] knows about its lease, as published on its watch channel.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardState {
    /// Held and renewed on schedule.
    Held,
    /// Possibly or certainly lost; stop acting as the holder.
    Lost(LeaseLoss),
    /// Released (or the guard dropped).
    Released,
}

/// The result of [`LeaseGuard::release`].
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
/// when a write carrying its lease id is refused.
///
/// ```no_run
/// # async fn demo(blob: azstore::BlobClient) -> azstore::Result<()> {
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await?;
/// tokio::select! {
///     loss = guard.lost() => eprintln!("stopping: {loss}"),
///     _ = async { /* long work, writing with guard.conditions() */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
pub struct LeaseGuard<T: Leasable> {
    target: T,
    lease_id: LeaseId,
    duration: LeaseDuration,
    /// Written by the renew task (Held → Lost), by any caller that finds the deadline passed
    /// (Held → Lost) and by release/drop (→ Released). Lost and Released are final.
    state_tx: Arc<watch::Sender<GuardState>>,
    state_rx: watch::Receiver<GuardState>,
    /// The loss deadline, moved forward by the renew task after each successful renew (never
    /// expires for an infinite lease).
    deadline: Arc<Deadline>,
    /// Dropping or sending stops the renew task.
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    done: bool,
}

impl<T: Leasable> fmt::Debug for LeaseGuard<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LeaseGuard")
            .field("target", &self.target.lease_target())
            .field("lease_id", &self.lease_id)
            .field("duration", &self.duration)
            .field("state", &*self.state_rx.borrow())
            .finish()
    }
}

impl<T: Leasable> LeaseGuard<T> {
    /// Acquires a lease on `target` and starts renewing it, with default [`GuardOptions`].
    pub async fn acquire(target: T, duration: LeaseDuration) -> Result<LeaseGuard<T>> {
        LeaseGuard::acquire_with(target, duration, GuardOptions::default()).await
    }

    /// Acquires a lease on `target` and starts renewing it. Invalid options are refused before
    /// anything is sent. Fails like the acquire itself (e.g. 409 `LeaseAlreadyPresent`).
    pub async fn acquire_with(
        target: T,
        duration: LeaseDuration,
        options: GuardOptions,
    ) -> Result<LeaseGuard<T>> {
        check_renewable(&target, duration, &options)?;
        let proposed = LeaseId::random();
        let sent_at = Instant::now();
        let lease = target.lease_acquire(duration, &proposed).await?;
        LeaseGuard::adopt(target, lease.lease_id, duration, sent_at, options)
    }

    /// Takes over a lease acquired elsewhere. `acquired_at` must be no later than when the
    /// acquire (or last renew) was *sent*; the loss deadline is counted from it.
    pub fn adopt(
        target: T,
        lease_id: LeaseId,
        duration: LeaseDuration,
        acquired_at: Instant,
        options: GuardOptions,
    ) -> Result<LeaseGuard<T>> {
        check_renewable(&target, duration, &options)?;
        let (state_tx, state_rx) = watch::channel(GuardState::Held);
        let state_tx = Arc::new(state_tx);
        // `acquired_at` on the guard's clock: as long before its `now` as it is before tokio's.
        let clock = options.clock.clone();
        let clock_now = clock.now();
        let acquired_clock =
            clock_now.saturating_sub(Instant::now().saturating_duration_since(acquired_at));
        let window = match duration.as_duration() {
            Some(d) => Some(options.plan(d)?.window),
            None => None,
        };
        let deadline = Arc::new(Deadline::new(clock, acquired_clock, acquired_at, window));
        let mut guard = LeaseGuard {
            target,
            lease_id,
            duration,
            state_tx,
            state_rx,
            deadline,
            stop: None,
            task: None,
            done: false,
        };
        if let Some(d) = duration.as_duration() {
            let plan = options.plan(d)?;
            let (stop_tx, stop_rx) = oneshot::channel();
            let task = tokio::spawn(renew_loop(
                guard.target.clone(),
                guard.lease_id.clone(),
                plan,
                guard.state_tx.clone(),
                guard.deadline.clone(),
                stop_rx,
            ));
            guard.stop = Some(stop_tx);
            guard.task = Some(task);
        }
        Ok(guard)
    }

    /// The lease id. Send it with writes ([`conditions`](Self::conditions)) so that the
    /// service refuses them once the lease is no longer this holder's.
    pub fn lease_id(&self) -> &LeaseId {
        &self.lease_id
    }

    /// `Conditions::lease(lease_id)`, for writes to the leased resource.
    pub fn conditions(&self) -> Conditions {
        Conditions::lease(&self.lease_id)
    }

    /// The leased resource.
    pub fn target(&self) -> &T {
        &self.target
    }

    /// The lease duration.
    pub fn duration(&self) -> LeaseDuration {
        self.duration
    }

    /// When the last successful renew (or the acquire) was sent.
    pub fn last_renewed(&self) -> Instant {
        self.deadline.confirmed_tokio()
    }

    /// The loss deadline as a reading of the guard's [`clock`](Self::clock): the moment the
    /// guard reports the lease lost unless a renew succeeds first (the last successful renew,
    /// as sent, plus the duration minus the safety margin). `None` for an infinite lease. A
    /// reading of [`Clock::system`] on Linux is comparable across processes (`azlock` hands
    /// it to its sentinel process).
    pub fn deadline(&self) -> Option<Duration> {
        self.deadline.until()
    }

    /// The clock the loss deadline is measured on.
    pub fn clock(&self) -> &Clock {
        self.deadline.clock()
    }

    /// The current state, deciding from the deadline as well: past it, the loss is published
    /// (so [`lost`](Self::lost) and [`subscribe`](Self::subscribe) wake) and returned.
    pub fn state(&self) -> GuardState {
        self.refresh();
        self.state_rx.borrow().clone()
    }

    /// True while the guard still vouches for the lease: no renew was refused and the last
    /// successful one was sent less than the duration minus the safety margin ago, on a clock
    /// that counts pauses and suspend. Checks the deadline itself, so it is right even when
    /// the renew task has not run yet after a pause (and publishes the loss then).
    pub fn is_held(&self) -> bool {
        self.refresh();
        matches!(*self.state_rx.borrow(), GuardState::Held)
    }

    /// `Ok(())` while held (see [`is_held`](Self::is_held)); otherwise an error with
    /// `lease_lost() == true` explaining why.
    pub fn check(&self) -> Result<()> {
        self.refresh();
        match &*self.state_rx.borrow() {
            GuardState::Held => Ok(()),
            GuardState::Lost(loss) => Err(loss.to_error()),
            GuardState::Released => Err(Error::new(ErrorKind::Lease, "the lease was released")
                .with_code(ErrorCode::LeaseLost)),
        }
    }

    /// A receiver of state changes, to `select!` on or hand to other tasks. The renew task
    /// publishes a loss at the deadline (and, after a system suspend, within a second of the
    /// wake-up); any [`is_held`](Self::is_held)/[`check`](Self::check)/[`state`](Self::state)
    /// that finds the deadline passed publishes it at once.
    pub fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.refresh();
        self.state_rx.clone()
    }

    /// Completes when the lease is (possibly) lost, with the reason. It does not borrow the
    /// guard, so it can be spawned or selected on while the guard is used. Each time it is
    /// polled it also checks the deadline itself. If the guard is released or dropped first,
    /// it never completes.
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        let mut rx = self.state_rx.clone();
        let state = Arc::downgrade(&self.state_tx);
        let deadline = self.deadline.clone();
        let name = self.target.lease_target();
        async move {
            loop {
                if let Some(state) = Weak::upgrade(&state) {
                    refresh(&state, &deadline, || name.clone());
                }
                let current = rx.borrow_and_update().clone();
                if let GuardState::Lost(loss) = current {
                    return loss;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }

    /// Stops renewing and releases the lease. A lease that already ended (expired and taken,
    /// broken, resource deleted) gives [`ReleaseOutcome::AlreadyGone`], not an error; errors
    /// are left for failures to reach the service.
    pub async fn release(mut self) -> Result<ReleaseOutcome> {
        self.stop_task().await;
        self.done = true;
        let result = self.target.lease_release(&self.lease_id).await;
        self.state_tx.send_replace(GuardState::Released);
        match result {
            Ok(_) => Ok(ReleaseOutcome::Released),
            Err(e) if e.kind() == ErrorKind::Lease || e.is_not_found() => {
                Ok(ReleaseOutcome::AlreadyGone {
                    code: e.error_code().cloned(),
                })
            }
            Err(e) => Err(e),
        }
    }

    /// Stops renewing without releasing: the lease runs out on its own (or stays, if
    /// infinite). Returns the lease id, e.g. to hand the lease to another process.
    pub async fn forget(mut self) -> LeaseId {
        self.stop_task().await;
        self.done = true;
        self.state_tx.send_replace(GuardState::Released);
        self.lease_id.clone()
    }

    /// Publishes the loss if the deadline has passed while the state still says held.
    fn refresh(&self) {
        refresh(&self.state_tx, &self.deadline, || {
            self.target.lease_target()
        });
    }

    async fn stop_task(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
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
        self.state_tx.send_replace(GuardState::Released);
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let target = self.target.clone();
            let id = self.lease_id.clone();
            handle.spawn(async move {
                if let Err(e) = target.lease_release(&id).await {
                    tracing::debug!(target = %target.lease_target(), error = %e,
                        "best-effort lease release on drop failed");
                }
            });
        }
    }
}

fn check_renewable<T: Leasable>(
    target: &T,
    duration: LeaseDuration,
    options: &GuardOptions,
) -> Result<()> {
    if let Some(d) = duration.as_duration() {
        if !target.supports_renew() {
            return Err(Error::invalid_input(format!(
                "{} supports only infinite leases",
                target.lease_target()
            )));
        }
        options.plan(d)?;
    }
    Ok(())
}

/// Publishes `loss` unless the state already left `Held` (Lost and Released are final).
fn publish_loss(state: &watch::Sender<GuardState>, target: &str, loss: LeaseLoss) {
    let published = state.send_if_modified(|s| {
        if matches!(s, GuardState::Held) {
            *s = GuardState::Lost(loss.clone());
            true
        } else {
            false
        }
    });
    if published {
        tracing::warn!(target = %target, %loss, "lease lost");
    }
}

/// If the state says held but the deadline has passed, publishes the loss (`Unconfirmed`).
fn refresh(
    state: &watch::Sender<GuardState>,
    deadline: &Deadline,
    target: impl FnOnce() -> String,
) {
    let held = matches!(*state.borrow(), GuardState::Held);
    if held {
        deadline.expire_if_due(|since| {
            publish_loss(
                state,
                &target(),
                LeaseLoss::Unconfirmed {
                    since_last_renew: since,
                },
            );
        });
    }
}

/// The renew task. Ends when told to stop (or the guard is dropped), or after publishing a
/// loss (or finding one published by a caller that saw the deadline pass).
///
/// Renewals are scheduled on tokio's clock; the deadline is a reading of the guard's clock
/// (which counts suspend). The task wakes at the next renew, at the deadline, and at least
/// every [`CLOCK_POLL`], so time spent suspended is noticed soon after the wake-up.
async fn renew_loop<T: Leasable>(
    target: T,
    id: LeaseId,
    plan: Plan,
    state: Arc<watch::Sender<GuardState>>,
    deadline: Arc<Deadline>,
    mut stop: oneshot::Receiver<()>,
) {
    let name = target.lease_target();
    let unconfirmed = |since: Duration| {
        publish_loss(
            &state,
            &name,
            LeaseLoss::Unconfirmed {
                since_last_renew: since,
            },
        );
    };
    let mut next = deadline.confirmed_tokio() + plan.interval;
    let mut retry_delay = plan.retry_delay;
    loop {
        let wake = next.min(Instant::now() + deadline.remaining().min(CLOCK_POLL));
        tokio::select! {
            biased;
            _ = &mut stop => return,
            _ = tokio::time::sleep_until(wake) => {}
        }
        // Past the safe window (e.g. this process was paused) we report the loss without even
        // trying to renew: Azure would refuse a renew once someone else leased or modified the
        // blob, but Azurite accepts renewing an expired lease even after the blob was modified,
        // so "the renew succeeded" would not prove that nobody else held the lease meanwhile.
        if deadline.expire_if_due(unconfirmed) {
            return;
        }
        if Instant::now() < next {
            continue;
        }
        let sent_at = deadline.now();
        let sent_tokio = Instant::now();
        let budget = deadline.remaining();
        let outcome = tokio::select! {
            biased;
            _ = &mut stop => return,
            r = tokio::time::timeout(budget, target.lease_renew(&id)) => r,
        };
        match outcome {
            Ok(Ok(_)) => {
                // Not recorded if the deadline passed meanwhile: a caller may already have
                // stopped on the loss, which stays final.
                if !deadline.confirm(sent_at, sent_tokio, plan.window, unconfirmed) {
                    return;
                }
                next = sent_tokio + plan.interval;
                retry_delay = plan.retry_delay;
                tracing::trace!(target = %name, "lease renewed");
            }
            Ok(Err(e)) if e.is_retryable() => {
                tracing::debug!(target = %name, error = %e, ?retry_delay,
                    "transient lease renew failure, retrying");
                next = Instant::now() + retry_delay;
                retry_delay = (retry_delay * 2).min(plan.interval);
            }
            Ok(Err(e)) => {
                let loss = LeaseLoss::refused(&e);
                deadline.close(|| publish_loss(&state, &name, loss));
                return;
            }
            Err(_) => {
                // The renew took the whole remaining window (on tokio's clock).
                let since = deadline.since_confirmed();
                if !deadline.expire_if_due(unconfirmed) {
                    deadline.close(|| unconfirmed(since));
                }
                return;
            }
        }
    }
}
