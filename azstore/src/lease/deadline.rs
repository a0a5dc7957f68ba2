//! The loss deadline shared by every keep-alive guard ([`LeaseGuard`](super::LeaseGuard),
//! [`MessageGuard`](crate::queue::MessageGuard)).
//!
//! A guard's background task extends something on the service (a lease, a message's
//! invisibility) and moves the deadline forward after each success. The deadline is a reading
//! of the guard's [`Clock`]; whoever looks at the guard — the task, or a caller asking
//! `is_held()` from any task or thread — compares it with `now` and, once it has passed,
//! publishes the loss itself. That matters after a pause (GC, SIGSTOP, a VM freeze, a
//! suspend): on resume the caller may run before the task does, and must not act on the stale
//! "held".
//!
//! The deadline is kept on two clocks: the guard's [`Clock`] (which counts system suspend) and
//! tokio's (which the renew schedule uses, and which tests can pause and advance). The thing
//! counts as lost when *either* says its time is up. In a running program tokio's clock
//! (`CLOCK_MONOTONIC`) never runs ahead of `CLOCK_BOOTTIME`, so the guard's clock decides; under
//! tokio's paused test time, tokio's clock does, consistently with the schedule.
//!
//! Everything happens under one mutex so that a confirmation and an expiry cannot interleave:
//! once expired, a deadline stays expired (a late success of a renew sent before the deadline
//! does not revive it: a caller may already have stopped on the loss).

use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use crate::clock::Clock;

#[derive(Debug)]
pub(crate) struct Deadline {
    clock: Clock,
    times: Mutex<Times>,
}

#[derive(Debug, Clone, Copy)]
struct Times {
    /// Reading of the guard's clock when the last confirmation (acquire, renew, extension)
    /// was sent.
    confirmed_at: Duration,
    /// The same moment on tokio's clock.
    confirmed_tokio: Instant,
    /// How long after that the thing may be lost (`None`: never, an infinite lease).
    window: Option<Duration>,
    /// Set once the loss was published (or the guard ended): no more confirmations.
    closed: bool,
}

impl Times {
    /// Time since the confirmation: the larger of the two clocks' readings.
    fn since(&self, now: Duration, now_tokio: Instant) -> Duration {
        now.saturating_sub(self.confirmed_at)
            .max(now_tokio.saturating_duration_since(self.confirmed_tokio))
    }

    fn expired(&self, now: Duration, now_tokio: Instant) -> bool {
        self.window.is_some_and(|w| self.since(now, now_tokio) >= w)
    }
}

impl Deadline {
    /// A deadline `window` after a confirmation sent at `confirmed_at` (a reading of `clock`)
    /// = `confirmed_tokio`; `None` never expires.
    pub(crate) fn new(
        clock: Clock,
        confirmed_at: Duration,
        confirmed_tokio: Instant,
        window: Option<Duration>,
    ) -> Deadline {
        Deadline {
            clock,
            times: Mutex::new(Times {
                confirmed_at,
                confirmed_tokio,
                window,
                closed: false,
            }),
        }
    }

    fn times(&self) -> std::sync::MutexGuard<'_, Times> {
        self.times
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn clock(&self) -> &Clock {
        &self.clock
    }

    /// The current reading of the guard's clock.
    pub(crate) fn now(&self) -> Duration {
        self.clock.now()
    }

    /// The deadline as a reading of the guard's clock (`None`: never).
    pub(crate) fn until(&self) -> Option<Duration> {
        let t = self.times();
        t.window.map(|w| t.confirmed_at.saturating_add(w))
    }

    /// When the last confirmation was sent, on tokio's clock.
    pub(crate) fn confirmed_tokio(&self) -> Instant {
        self.times().confirmed_tokio
    }

    /// Time left before the deadline (zero once passed; `Duration::MAX` if it never expires).
    pub(crate) fn remaining(&self) -> Duration {
        let t = self.times();
        match t.window {
            Some(w) => w.saturating_sub(t.since(self.clock.now(), Instant::now())),
            None => Duration::MAX,
        }
    }

    /// Time since the last confirmation.
    pub(crate) fn since_confirmed(&self) -> Duration {
        self.times().since(self.clock.now(), Instant::now())
    }

    /// If the deadline has passed and the loss was not published yet, calls
    /// `publish(time since the last confirmation)` under the lock and closes the deadline.
    /// Returns whether the deadline is closed (now or before).
    pub(crate) fn expire_if_due(&self, publish: impl FnOnce(Duration)) -> bool {
        self.close_if_due(&mut self.times(), publish)
    }

    /// [`expire_if_due`](Self::expire_if_due) on times already locked.
    fn close_if_due(&self, t: &mut Times, publish: impl FnOnce(Duration)) -> bool {
        if t.closed {
            return true;
        }
        let (now, now_tokio) = (self.clock.now(), Instant::now());
        if t.expired(now, now_tokio) {
            t.closed = true;
            publish(t.since(now, now_tokio));
            return true;
        }
        false
    }

    /// Closes the deadline for another reason (a refusal, the end of the guard), calling
    /// `publish` under the lock unless it was already closed.
    pub(crate) fn close(&self, publish: impl FnOnce()) {
        let mut t = self.times();
        if !t.closed {
            t.closed = true;
            publish();
        }
    }

    /// Records a confirmation sent at `sent_at` / `sent_tokio` that holds for `window`, unless
    /// the deadline already passed (then the loss is published with `publish`, exactly as
    /// [`expire_if_due`](Self::expire_if_due) would) or was closed. Returns whether it was
    /// recorded.
    pub(crate) fn confirm(
        &self,
        sent_at: Duration,
        sent_tokio: Instant,
        window: Duration,
        publish: impl FnOnce(Duration),
    ) -> bool {
        let mut t = self.times();
        if self.close_if_due(&mut t, publish) {
            return false;
        }
        t.confirmed_at = sent_at;
        t.confirmed_tokio = sent_tokio;
        t.window = Some(window);
        true
    }
}

/// How long a keep-alive task sleeps at most before looking at the clock again, so that time
/// that passed while the machine was suspended (which tokio's clock does not count) is noticed
/// within this long after the wake-up even by `lost()` waiters.
pub(crate) const CLOCK_POLL: Duration = Duration::from_secs(1);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::ManualClock;

    const fn secs(n: u64) -> Duration {
        Duration::from_secs(n)
    }

    #[tokio::test]
    async fn expires_once_and_stays_expired() {
        let m = ManualClock::new();
        let d = Deadline::new(m.clock(), Duration::ZERO, Instant::now(), Some(secs(10)));
        let mut published = Vec::new();
        assert!(!d.expire_if_due(|s| published.push(s)));
        m.advance(secs(4));
        assert!(d.remaining() <= secs(6));
        assert!(d.confirm(secs(4), Instant::now(), secs(10), |_| unreachable!()));
        assert_eq!(d.until(), Some(secs(14)));
        m.advance(secs(10));
        assert!(d.expire_if_due(|s| published.push(s)));
        assert!(d.expire_if_due(|s| published.push(s)));
        assert_eq!(published, vec![secs(10)]);
        // A late confirmation does not revive it.
        assert!(!d.confirm(secs(13), Instant::now(), secs(30), |_| unreachable!()));
        assert_eq!(d.remaining(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_confirmation_after_the_deadline_publishes_the_loss() {
        let m = ManualClock::new();
        let d = Deadline::new(m.clock(), Duration::ZERO, Instant::now(), Some(secs(10)));
        m.advance(secs(11));
        let mut published = None;
        assert!(!d.confirm(secs(9), Instant::now(), secs(10), |s| published = Some(s)));
        assert_eq!(published, Some(secs(11)));
        let mut again = false;
        d.close(|| again = true);
        assert!(!again);
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_time_counts_too() {
        // The guard's clock stands still; tokio's (paused, advanced) says the time is up.
        let m = ManualClock::new();
        let d = Deadline::new(m.clock(), Duration::ZERO, Instant::now(), Some(secs(10)));
        tokio::time::advance(secs(9)).await;
        assert_eq!(d.remaining(), secs(1));
        assert!(!d.expire_if_due(|_| unreachable!()));
        tokio::time::advance(secs(1)).await;
        let mut published = None;
        assert!(d.expire_if_due(|s| published = Some(s)));
        assert_eq!(published, Some(secs(10)));
    }

    #[tokio::test]
    async fn an_infinite_deadline_never_expires() {
        let m = ManualClock::new();
        let d = Deadline::new(m.clock(), Duration::ZERO, Instant::now(), None);
        m.advance(Duration::MAX);
        assert!(!d.expire_if_due(|_| unreachable!()));
        assert_eq!(d.remaining(), Duration::MAX);
        assert_eq!(d.until(), None);
    }
}
