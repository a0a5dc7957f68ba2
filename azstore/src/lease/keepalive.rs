//! The keep-alive core shared by [`LeaseGuard`](super::LeaseGuard) and
//! [`MessageGuard`](crate::queue::MessageGuard): one [`GuardOptions`], one schedule
//! ([`Plan`]), one loss deadline ([`Deadline`]) and one loss signal ([`Keeper`]), and the one
//! background loop ([`run`]) that extends something on the service (a lease, a message's
//! invisibility) until told to stop or until it is lost.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::lease::deadline::{CLOCK_POLL, Deadline};
use crate::lease::telemetry;

/// How a keep-alive guard ([`LeaseGuard`](super::LeaseGuard),
/// [`MessageGuard`](crate::queue::MessageGuard)) extends what it holds. The defaults suit
/// almost everyone: extend every third of the duration, give up vouching for a lease one sixth
/// of its duration before it would expire (a message: when its invisibility ends), and retry a
/// transient failure quickly. Deadlines are measured on [`Clock::system`] (which counts
/// through suspend on Linux).
///
/// ```
/// use std::time::Duration;
/// use azstore::lease::GuardOptions;
/// let lease = GuardOptions::default().renew_fraction(0.25);
/// let message = GuardOptions::default()
///     .visibility(Duration::from_secs(60))
///     .renew_every(Duration::from_secs(20));
/// # let _ = (lease, message);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct GuardOptions {
    renew_fraction: f64,
    renew_every: Option<Duration>,
    safety_margin: Option<Duration>,
    retry_delay: Option<Duration>,
    pub(crate) visibility: Duration,
    clock: Clock,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            renew_fraction: 1.0 / 3.0,
            renew_every: None,
            safety_margin: None,
            retry_delay: None,
            visibility: Duration::from_secs(30),
            clock: Clock::system(),
        }
    }
}

/// What a guard keeps alive: the defaults differ a little.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kept {
    /// A lease: margin a sixth of the duration, retries from 250 ms doubling up to the interval.
    Lease,
    /// A message's invisibility: no margin, retries every quarter interval (at least 50 ms).
    Message,
}

impl GuardOptions {
    /// Extend after this fraction of the duration (0 < f < 1; default 1/3), unless
    /// [`renew_every`](Self::renew_every) is set.
    ///
    /// ```
    /// use azstore::lease::GuardOptions;
    /// // Renew a 60 s lease every 15 s instead of every 20 s.
    /// let options = GuardOptions::default().renew_fraction(0.25);
    /// # let _ = options;
    /// ```
    pub fn renew_fraction(mut self, v: f64) -> Self {
        self.renew_fraction = v;
        self
    }

    /// Extend at this fixed interval instead (must be shorter than the duration minus the
    /// safety margin).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::lease::GuardOptions::default().renew_every(Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    pub fn renew_every(mut self, v: Duration) -> Self {
        self.renew_every = Some(v);
        self
    }

    /// Report the loss when no extension has succeeded for the duration minus this margin
    /// (default: a sixth of a lease's duration; zero for a message). The margin absorbs
    /// request latency and clock-rate differences so the holder stops *before* another client
    /// can take over.
    ///
    /// ```
    /// use std::time::Duration;
    /// // Report a 30 s lease lost 10 s early (instead of 5 s) on a slow network.
    /// let options = azstore::lease::GuardOptions::default().safety_margin(Duration::from_secs(10));
    /// # let _ = options;
    /// ```
    pub fn safety_margin(mut self, v: Duration) -> Self {
        self.safety_margin = Some(v);
        self
    }

    /// First delay before retrying a transient failure (default 250 ms for a lease, doubling up
    /// to the renew interval; a quarter of the interval, at least 50 ms, for a message). Never
    /// retried past the loss deadline.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::lease::GuardOptions::default().retry_delay(Duration::from_millis(100));
    /// # let _ = options;
    /// ```
    pub fn retry_delay(mut self, v: Duration) -> Self {
        self.retry_delay = Some(v);
        self
    }

    /// The visibility timeout each extension of a [`MessageGuard`](crate::queue::MessageGuard)
    /// sets (1 s – 7 days; default 30 s). A [`LeaseGuard`](super::LeaseGuard) takes its
    /// duration from the lease instead.
    ///
    /// ```
    /// use std::time::Duration;
    /// let for_messages = azstore::lease::GuardOptions::default().visibility(Duration::from_secs(120));
    /// # let _ = for_messages;
    /// ```
    pub fn visibility(mut self, v: Duration) -> Self {
        self.visibility = v;
        self
    }

    /// The clock the loss deadline is measured on (default [`Clock::system`]). Extensions are
    /// still scheduled on tokio's clock, and the guard also reports the loss when tokio's clock
    /// says the window has passed (in a running program the system clock is never behind it;
    /// under tokio's paused test time, tokio's clock moves and this one does not). Pass a
    /// [`ManualClock`](crate::clock::ManualClock)'s clock to make "the deadline passed while
    /// the task did not run" happen in a test.
    ///
    /// ```
    /// use azstore::clock::ManualClock;
    /// use azstore::lease::GuardOptions;
    /// let manual = ManualClock::new();
    /// let options = GuardOptions::default().clock(manual.clock());
    /// # let _ = options;
    /// ```
    pub fn clock(mut self, v: Clock) -> Self {
        self.clock = v;
        self
    }

    pub(crate) fn clock_ref(&self) -> &Clock {
        &self.clock
    }

    /// The schedule for keeping `kept` alive for `duration` at a time; `InvalidInput` when the
    /// options cannot keep it.
    pub(crate) fn plan(&self, duration: Duration, kept: Kept) -> Result<Plan> {
        let f = self.renew_fraction;
        if !(f > 0.0 && f < 1.0) {
            return Err(Error::invalid_input(format!(
                "renew fraction must be between 0 and 1 (got {f})"
            )));
        }
        let interval = self.renew_every.unwrap_or_else(|| duration.mul_f64(f));
        let margin = self.safety_margin.unwrap_or(match kept {
            Kept::Lease => duration / 6,
            Kept::Message => Duration::ZERO,
        });
        let window = duration.checked_sub(margin).unwrap_or_default();
        if window.is_zero() || interval.is_zero() || interval >= window {
            return Err(Error::invalid_input(format!(
                "the renew interval {interval:?} must be shorter than the duration {duration:?} \
                 minus the safety margin {margin:?}"
            )));
        }
        let default_retry = match kept {
            Kept::Lease => Duration::from_millis(250),
            Kept::Message => (interval / 4).max(Duration::from_millis(50)),
        };
        let retry_delay = self.retry_delay.unwrap_or(default_retry);
        if retry_delay.is_zero() {
            return Err(Error::invalid_input("retry delay must be positive"));
        }
        let retry_cap = match (kept, self.retry_delay) {
            (Kept::Message, None) => retry_delay,
            _ => interval,
        };
        Ok(Plan {
            interval,
            window,
            retry_delay,
            retry_cap,
        })
    }
}

/// A guard's schedule, from [`GuardOptions::plan`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct Plan {
    /// Time between extensions.
    pub(crate) interval: Duration,
    /// Time after the last successful extension (as sent) at which the thing counts as lost.
    pub(crate) window: Duration,
    retry_delay: Duration,
    retry_cap: Duration,
}

/// Why a guard no longer vouches for what it holds (a lease, or a queue message).
///
/// ```no_run
/// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
/// use azstore::lease::LeaseLoss;
/// match guard.lost().await {
///     LeaseLoss::Refused { code, .. } => eprintln!("the service refused the renew: {code:?}"),
///     LeaseLoss::Unconfirmed { since_last_renew } => {
///         eprintln!("no renew confirmed for {since_last_renew:?}: paused or cut off")
///     }
///     other => eprintln!("{other}"),
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseLoss {
    /// The service refused an extension: the lease was broken, released, changed, or expired
    /// and taken by someone else (the message was received by another consumer or deleted).
    Refused {
        /// HTTP status of the refusal, when the service answered.
        status: Option<u16>,
        /// The service error code (e.g. `LeaseIsBrokenAndCannotBeRenewed`).
        code: Option<ErrorCode>,
        /// The service's message, as sent.
        message: String,
        /// The service's `x-ms-request-id` of the refusal, for support requests.
        request_id: Option<String>,
    },
    /// No extension succeeded for too long (the service unreachable, or this process was
    /// paused): the lease may have expired and been taken by now.
    Unconfirmed {
        /// Time since the last extension that succeeded (measured from when it was sent).
        since_last_renew: Duration,
    },
}

impl LeaseLoss {
    /// This loss as an [`Error`] of kind [`ErrorKind::LeaseLost`], so `err.lease_lost()` is
    /// true.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::lease::LeaseLoss;
    /// let loss = LeaseLoss::Unconfirmed { since_last_renew: Duration::from_secs(26) };
    /// assert!(loss.to_error().lease_lost());
    /// ```
    pub fn to_error(&self) -> Error {
        Error::new(ErrorKind::LeaseLost, self.to_string())
    }

    fn refused(e: &Error) -> LeaseLoss {
        LeaseLoss::Refused {
            status: e.status(),
            code: e.error_code().cloned(),
            message: e.message().to_string(),
            request_id: e.request_id().map(str::to_string),
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
                request_id,
            } => {
                write!(f, "lease renew refused")?;
                match (status, code) {
                    (Some(s), Some(c)) => write!(f, " ({s} {c})")?,
                    (Some(s), None) => write!(f, " ({s})")?,
                    (None, Some(c)) => write!(f, " ({c})")?,
                    (None, None) => {}
                }
                // One line, like every `Error`: no "\nRequestId:…\nTime:…" tail.
                f.write_str(": ")?;
                crate::error::write_one_line(f, message, request_id.as_deref())
            }
            LeaseLoss::Unconfirmed { since_last_renew } => write!(
                f,
                "no lease renew succeeded for {:.1} s; the lease may have expired",
                since_last_renew.as_secs_f64()
            ),
        }
    }
}

/// What a guard knows about what it holds, as published on its watch channel.
///
/// ```no_run
/// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) {
/// use azstore::lease::GuardState;
/// let mut states = guard.subscribe();
/// while states.changed().await.is_ok() {
///     match &*states.borrow() {
///         GuardState::Held => {}
///         GuardState::Lost(why) => { eprintln!("lost: {why}"); break; }
///         _ => break, // released
///     }
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GuardState {
    /// Held and extended on schedule.
    Held,
    /// Possibly or certainly lost; stop acting as the holder.
    Lost(LeaseLoss),
    /// Released (or the guard dropped).
    Released,
}

/// The loss signal of one guard: its deadline and its published state. Shared by the guard,
/// its task and every signal handed out. `Held` → `Lost` happens once, under the deadline's
/// lock, by whoever sees the deadline pass (or the refusal); `Lost` is final.
#[derive(Debug)]
pub(crate) struct Keeper {
    /// What is kept alive, for log lines (`blob c/b`, `message 42`).
    name: String,
    /// How long one confirmation keeps it (a lease's duration, a message's visibility), for
    /// the time left reported with a loss.
    lasts: Option<Duration>,
    deadline: Deadline,
    state: watch::Sender<GuardState>,
}

impl Keeper {
    pub(crate) fn new(name: String, deadline: Deadline, lasts: Option<Duration>) -> Arc<Keeper> {
        Arc::new(Keeper {
            name,
            lasts,
            deadline,
            state: watch::Sender::new(GuardState::Held),
        })
    }

    pub(crate) fn deadline(&self) -> &Deadline {
        &self.deadline
    }

    /// Publishes `loss`, `since` after the last confirmation, unless the state already left
    /// `Held` (Lost and Released are final).
    fn publish(&self, loss: LeaseLoss, since: Duration) {
        let published = self.state.send_if_modified(|s| {
            if matches!(s, GuardState::Held) {
                *s = GuardState::Lost(loss.clone());
                true
            } else {
                false
            }
        });
        if published {
            let reason = match loss {
                LeaseLoss::Refused { .. } => "refused",
                LeaseLoss::Unconfirmed { .. } => "unconfirmed",
            };
            telemetry::lost(&self.name, reason, &loss, since, self.lasts);
        }
    }

    fn unconfirmed(&self, since: Duration) {
        self.publish(
            LeaseLoss::Unconfirmed {
                since_last_renew: since,
            },
            since,
        );
    }

    /// If the state says held but the deadline has passed, publishes the loss. Returns whether
    /// the deadline is closed (lost, or ended).
    pub(crate) fn refresh(&self) -> bool {
        if matches!(*self.state.borrow(), GuardState::Held) {
            self.deadline.expire_if_due(|since| self.unconfirmed(since))
        } else {
            true
        }
    }

    /// The state, deciding from the deadline first.
    pub(crate) fn state(&self) -> GuardState {
        self.refresh();
        self.state.borrow().clone()
    }

    /// Whether the loss was published (deciding from the deadline first).
    pub(crate) fn is_lost(&self) -> bool {
        matches!(self.state(), GuardState::Lost(_))
    }

    /// A receiver of state changes (after deciding from the deadline).
    pub(crate) fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.refresh();
        self.state.subscribe()
    }

    /// The guard's work is over: no loss is published after this. The state stays as it is.
    pub(crate) fn close(&self) {
        self.deadline.close(|| {});
    }

    /// Ends the guard: closes the deadline and publishes `Released`.
    pub(crate) fn release(&self) {
        self.close();
        self.state.send_replace(GuardState::Released);
    }

    /// Completes with the loss once it is published; checks the deadline itself each time it
    /// is polled. Never completes if the guard ends first.
    pub(crate) fn lost(self: &Arc<Self>) -> impl Future<Output = LeaseLoss> + Send + 'static {
        let keeper = self.clone();
        let mut rx = self.state.subscribe();
        async move {
            loop {
                keeper.refresh();
                if let GuardState::Lost(loss) = rx.borrow_and_update().clone() {
                    return loss;
                }
                if rx.changed().await.is_err() {
                    std::future::pending::<()>().await;
                }
            }
        }
    }
}

/// What one extension attempt came to.
pub(crate) enum Extended {
    /// It succeeded.
    Done,
    /// It failed and may be retried.
    Transient(Error),
    /// The service refused it for good: the thing is lost.
    Refused(Error),
}

impl Extended {
    /// The outcome's label in traces and metrics (`None`: the attempt ran out of time).
    fn label(outcome: &Option<Extended>) -> &'static str {
        match outcome {
            Some(Extended::Done) => "ok",
            Some(Extended::Transient(_)) => "transient",
            Some(Extended::Refused(_)) => "refused",
            None => "timeout",
        }
    }
}

/// The service call a guard repeats.
pub(crate) trait Extend: Send {
    /// Whether a stop (or the loss deadline) may interrupt an attempt in flight. A lease's
    /// renew may be dropped; a message's extension may not (its answer carries the newest
    /// pop receipt).
    const INTERRUPTIBLE: bool;

    /// One attempt.
    fn extend(&mut self) -> impl Future<Output = Extended> + Send;
}

/// The keep-alive loop: extends on `plan`'s schedule from `first`, confirms each success on
/// the keeper's deadline, publishes the loss on a refusal or when the deadline passes. Ends
/// when `stop` turns true (or its sender is gone), or after the loss was published (by the
/// loop or by a caller that saw the deadline pass).
///
/// Extensions are scheduled on tokio's clock; the deadline is a reading of the guard's clock
/// (which counts suspend). The loop wakes at the next extension, at the deadline, and at least
/// every [`CLOCK_POLL`], so time spent suspended is noticed soon after the wake-up.
pub(crate) async fn run<E: Extend>(
    keeper: Arc<Keeper>,
    plan: Plan,
    first: Instant,
    mut stop: watch::Receiver<bool>,
    extender: &mut E,
) {
    let deadline = keeper.deadline();
    let unconfirmed = |since: Duration| keeper.unconfirmed(since);
    let mut next = first;
    let mut retry_delay = plan.retry_delay;
    loop {
        if *stop.borrow() {
            return;
        }
        let wake = next.min(Instant::now() + deadline.remaining().min(CLOCK_POLL));
        tokio::select! {
            biased;
            _ = stop.wait_for(|s| *s) => return,
            _ = tokio::time::sleep_until(wake) => {}
        }
        // Past the safe window (e.g. this process was paused) report the loss without even
        // trying: Azure would refuse a renew once someone else leased or modified the blob,
        // but Azurite accepts renewing an expired lease even after the blob was modified, so
        // "the renew succeeded" would not prove that nobody else held it meanwhile (and a
        // message may have been received by another consumer).
        if deadline.expire_if_due(unconfirmed) {
            return;
        }
        if Instant::now() < next {
            continue;
        }
        let sent_at = deadline.now();
        let sent_tokio = Instant::now();
        let outcome = if E::INTERRUPTIBLE {
            let budget = deadline.remaining();
            tokio::select! {
                biased;
                _ = stop.wait_for(|s| *s) => return,
                r = tokio::time::timeout(budget, extender.extend()) => r.ok(),
            }
        } else {
            Some(extender.extend().await)
        };
        telemetry::renewed(
            &keeper.name,
            sent_tokio.elapsed(),
            Extended::label(&outcome),
        );
        match outcome {
            Some(Extended::Done) => {
                // Not recorded if the deadline passed meanwhile: a caller may already have
                // stopped on the loss, which stays final.
                if !deadline.confirm(sent_at, sent_tokio, plan.window, unconfirmed) {
                    return;
                }
                next = sent_tokio + plan.interval;
                retry_delay = plan.retry_delay;
                tracing::trace!(target = %keeper.name, "extended");
            }
            Some(Extended::Transient(e)) => {
                tracing::debug!(target = %keeper.name, error = %e, ?retry_delay,
                    "transient keep-alive failure, retrying");
                next = Instant::now() + retry_delay;
                retry_delay = (retry_delay * 2).min(plan.retry_cap);
            }
            Some(Extended::Refused(e)) => {
                let loss = LeaseLoss::refused(&e);
                let since = deadline.since_confirmed();
                deadline.close(|| keeper.publish(loss, since));
                return;
            }
            None => {
                // The attempt took the whole remaining window (on tokio's clock).
                let since = deadline.since_confirmed();
                if !deadline.expire_if_due(unconfirmed) {
                    deadline.close(|| unconfirmed(since));
                }
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[test]
    fn a_refusal_reads_like_every_other_error() {
        // Azurite's (and Azure's) message, with its RequestId/Time tail.
        let e = Error::from_response(
            409,
            Some(ErrorCode::LeaseIsBrokenAndCannotBeRenewed),
            "The lease ID matched, but the lease has been broken explicitly and cannot be \
             renewed.\nRequestId:7d62c1c0\nTime:2026-11-25T06:49:25.335Z"
                .into(),
            Some("7d62c1c0".into()),
        );
        let shown = LeaseLoss::refused(&e).to_string();
        assert_eq!(
            shown,
            "lease renew refused (409 LeaseIsBrokenAndCannotBeRenewed): The lease ID matched, \
             but the lease has been broken explicitly and cannot be renewed. [request id 7d62c1c0]"
        );
        assert!(
            e.to_string().ends_with("renewed. [request id 7d62c1c0]"),
            "{e}"
        );
        let loss = LeaseLoss::refused(&e).to_error();
        assert!(
            loss.lease_lost() && !loss.to_string().contains('\n'),
            "{loss}"
        );
    }

    #[test]
    fn plans() {
        let lease = GuardOptions::default().plan(secs(15), Kept::Lease).unwrap();
        assert_eq!(lease.interval, secs(5));
        assert_eq!(lease.window, Duration::from_millis(12_500));
        assert_eq!(lease.retry_cap, secs(5));
        let msg = GuardOptions::default()
            .plan(secs(3), Kept::Message)
            .unwrap();
        assert_eq!(msg.interval, secs(1));
        assert_eq!(msg.window, secs(3));
        assert_eq!(msg.retry_delay, Duration::from_millis(250));
        assert_eq!(msg.retry_cap, msg.retry_delay);
        let every = GuardOptions::default().renew_every(secs(2));
        assert!(every.plan(secs(2), Kept::Message).is_err());
        assert_eq!(every.plan(secs(30), Kept::Lease).unwrap().interval, secs(2));
        for bad in [
            GuardOptions::default().renew_fraction(0.0),
            GuardOptions::default().renew_fraction(f64::NAN),
            GuardOptions::default().safety_margin(secs(10)),
            GuardOptions::default().retry_delay(Duration::ZERO),
        ] {
            assert!(bad.plan(secs(15), Kept::Lease).is_err(), "{bad:?}");
        }
    }
}
