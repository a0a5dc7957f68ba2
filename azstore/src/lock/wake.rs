//! The process-wide wake-up registry: a release by a holder in this process wakes a local
//! waiter for the same lock at once (waiters elsewhere poll), on every backend.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use crate::error::Result;
use crate::lease::{Leasable, LeaseGuard, ReleaseOutcome};
use crate::lock::LockOptions;

/// The process-wide wake-up of the lock named `key` (a URL-like name unique to the lock).
pub(crate) fn wakeup_for(key: String) -> Arc<Notify> {
    static MAP: OnceLock<Mutex<HashMap<String, Weak<Notify>>>> = OnceLock::new();
    let mut map = MAP
        .get_or_init(Mutex::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    if let Some(n) = map.get(&key).and_then(Weak::upgrade) {
        return n;
    }
    map.retain(|_, w| w.strong_count() > 0);
    let n = Arc::new(Notify::new());
    map.insert(key, Arc::downgrade(&n));
    n
}

/// Releases a held lock's lease: the shared end of `release()` and of the `Drop` of every held
/// lock. Wakes local waiters afterwards.
pub(crate) async fn release_held<T: Leasable>(
    guard: LeaseGuard<T>,
    wake: Option<Arc<Notify>>,
) -> Result<ReleaseOutcome> {
    let outcome = guard.release().await;
    if let Some(w) = wake {
        w.notify_one();
    }
    outcome
}

/// The `Drop` of a held lock: release in the background when a runtime is there, else let the
/// guard's own drop stop renewing (the lease then expires on the service).
pub(crate) fn release_on_drop<T: Leasable>(
    guard: Option<LeaseGuard<T>>,
    wake: Option<Arc<Notify>>,
) {
    let Some(guard) = guard else {
        return;
    };
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => {
            handle.spawn(async move {
                let _ = release_held(guard, wake).await;
            });
        }
        Err(_) => drop(guard),
    }
}

/// A waiter's sleep between polls: a random time between the options'
/// `poll_min` and a ceiling that doubles from `poll_min` to `poll_max`, cut short by a local
/// release.
pub(crate) struct PollSleep {
    min: Duration,
    max: Duration,
    ceiling: Duration,
}

impl PollSleep {
    pub(crate) fn new(options: &LockOptions) -> PollSleep {
        PollSleep {
            min: options.poll_min,
            max: options.poll_max,
            ceiling: options.poll_min,
        }
    }

    /// Sleeps until the next poll, never past `deadline`; `true` when woken by a release in
    /// this process (through `wake`).
    pub(crate) async fn sleep(&mut self, deadline: Option<Instant>, wake: Option<&Notify>) -> bool {
        let delay = {
            let lo = self.min.as_secs_f64();
            let hi = self.ceiling.as_secs_f64();
            Duration::from_secs_f64(if hi > lo {
                rand::random_range(lo..=hi)
            } else {
                lo
            })
        };
        self.ceiling = (self.ceiling * 2).min(self.max);
        let now = Instant::now();
        let until = match deadline {
            Some(d) => (now + delay).min(d),
            None => now + delay,
        };
        match wake {
            Some(w) => {
                tokio::select! {
                    _ = tokio::time::sleep_until(until) => false,
                    _ = w.notified() => true,
                }
            }
            None => {
                tokio::time::sleep_until(until).await;
                false
            }
        }
    }
}

/// How a round of a wait loop starts (see [`WaitRounds::next`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum RoundStart {
    /// The first round, at once.
    First,
    /// After a local release woke the waiter: the lock was just freed.
    Woken,
    /// After a poll sleep ran out.
    Slept,
}

/// The rounds of a lock's wait loop until its deadline: the first at once, each later one
/// after a [`PollSleep`] cut short by a local release. The one pacing of
/// [`Lock::acquire_within`](crate::lock::Lock::acquire_within) and a semaphore's wait.
pub(crate) struct WaitRounds {
    deadline: Option<Instant>,
    wake: Option<Arc<Notify>>,
    poll: PollSleep,
    first: bool,
}

impl WaitRounds {
    /// Rounds for a wait of `wait` from now (no deadline when it overflows the clock).
    pub(crate) fn new(wait: Duration, options: &LockOptions, wake: Option<Arc<Notify>>) -> Self {
        WaitRounds {
            deadline: Instant::now().checked_add(wait),
            wake,
            poll: PollSleep::new(options),
            first: true,
        }
    }

    /// The wait's deadline (`None`: none).
    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The next sleep is the shortest poll interval again (a waiter at the front of a line).
    pub(crate) fn hurry(&mut self) {
        self.poll.ceiling = self.poll.min;
    }

    fn passed(&self) -> bool {
        self.deadline.is_some_and(|d| Instant::now() >= d)
    }

    /// Waits for the next round; `None` once the deadline has passed (the wait ends).
    pub(crate) async fn next(&mut self) -> Option<RoundStart> {
        if std::mem::take(&mut self.first) {
            return Some(RoundStart::First);
        }
        if self.passed() {
            return None;
        }
        if self.poll.sleep(self.deadline, self.wake.as_deref()).await {
            Some(RoundStart::Woken)
        } else if self.passed() {
            None
        } else {
            Some(RoundStart::Slept)
        }
    }
}
