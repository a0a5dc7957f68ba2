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
    /// Clock reading when the last confirmation (acquire, renew, extension) was sent.
    confirmed_at: Duration,
    /// The same moment on tokio's clock (for `last_renewed()` and scheduling).
    confirmed_tokio: Instant,
    /// Clock reading at which the thing may be lost unless confirmed again.
    until: Duration,
    /// Set once the loss was published (or the guard ended): no more confirmations.
    closed: bool,
}

impl Deadline {
    /// A deadline `until` (a reading of `clock`), last confirmed at `confirmed_at`.
    pub(crate) fn new(
        clock: Clock,
        confirmed_at: Duration,
        confirmed_tokio: Instant,
        until: Duration,
    ) -> Deadline {
        Deadline {
            clock,
            times: Mutex::new(Times {
                confirmed_at,
                confirmed_tokio,
                until,
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

    /// The current reading of the clock.
    pub(crate) fn now(&self) -> Duration {
        self.clock.now()
    }

    /// The deadline (a clock reading).
    pub(crate) fn until(&self) -> Duration {
        self.times().until
    }

    /// When the last confirmation was sent, on tokio's clock.
    pub(crate) fn confirmed_tokio(&self) -> Instant {
        self.times().confirmed_tokio
    }

    /// Time left before the deadline (zero once passed).
    pub(crate) fn remaining(&self) -> Duration {
        self.times().until.saturating_sub(self.clock.now())
    }

    /// If the deadline has passed and the loss was not published yet, calls
    /// `publish(time since the last confirmation)` under the lock and closes the deadline.
    /// Returns whether the deadline is closed (now or before).
    pub(crate) fn expire_if_due(&self, publish: impl FnOnce(Duration)) -> bool {
        let mut t = self.times();
        if t.closed {
            return true;
        }
        let now = self.clock.now();
        if now >= t.until {
            t.closed = true;
            publish(now.saturating_sub(t.confirmed_at));
            return true;
        }
        false
    }

    /// Closes the deadline for another reason (a refusal, a release), calling `publish` under
    /// the lock unless it was already closed.
    pub(crate) fn close(&self, publish: impl FnOnce()) {
        let mut t = self.times();
        if !t.closed {
            t.closed = true;
            publish();
        }
    }

    /// Records a confirmation sent at `sent_at` / `sent_tokio` that holds until `until`, unless
    /// the deadline already passed (then the loss is published with `publish`, exactly as
    /// [`expire_if_due`](Self::expire_if_due) would). Returns whether it was recorded.
    pub(crate) fn confirm(
        &self,
        sent_at: Duration,
        sent_tokio: Instant,
        until: Duration,
        publish: impl FnOnce(Duration),
    ) -> bool {
        let mut t = self.times();
        if t.closed {
            return false;
        }
        let now = self.clock.now();
        if now >= t.until {
            t.closed = true;
            publish(now.saturating_sub(t.confirmed_at));
            return false;
        }
        t.confirmed_at = sent_at;
        t.confirmed_tokio = sent_tokio;
        t.until = until;
        true
    }

    /// Time since the last confirmation.
    pub(crate) fn since_confirmed(&self) -> Duration {
        self.clock.now().saturating_sub(self.times().confirmed_at)
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

    #[tokio::test]
    async fn expires_once_and_stays_expired() {
        let m = ManualClock::new();
        let d = Deadline::new(
            m.clock(),
            Duration::ZERO,
            Instant::now(),
            Duration::from_secs(10),
        );
        let mut published = Vec::new();
        assert!(!d.expire_if_due(|s| published.push(s)));
        m.advance(Duration::from_secs(4));
        assert_eq!(d.remaining(), Duration::from_secs(6));
        assert!(d.confirm(
            Duration::from_secs(4),
            Instant::now(),
            Duration::from_secs(14),
            |_| unreachable!()
        ));
        m.advance(Duration::from_secs(10));
        assert!(d.expire_if_due(|s| published.push(s)));
        assert!(d.expire_if_due(|s| published.push(s)));
        assert_eq!(published, vec![Duration::from_secs(10)]);
        // A late confirmation does not revive it.
        assert!(!d.confirm(
            Duration::from_secs(13),
            Instant::now(),
            Duration::from_secs(30),
            |_| unreachable!()
        ));
        assert_eq!(d.remaining(), Duration::ZERO);
    }

    #[tokio::test]
    async fn a_confirmation_after_the_deadline_publishes_the_loss() {
        let m = ManualClock::new();
        let d = Deadline::new(
            m.clock(),
            Duration::ZERO,
            Instant::now(),
            Duration::from_secs(10),
        );
        m.advance(Duration::from_secs(11));
        let mut published = None;
        assert!(!d.confirm(
            Duration::from_secs(9),
            Instant::now(),
            Duration::from_secs(19),
            |s| published = Some(s)
        ));
        assert_eq!(published, Some(Duration::from_secs(11)));
        let mut again = false;
        d.close(|| again = true);
        assert!(!again);
    }
}
