//! The process-wide wake-up registry: a release by a holder in this process wakes a local
//! waiter for the same lock at once (waiters elsewhere poll), for blob and Redis locks alike.

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
/// lock (blob or Redis). Wakes local waiters afterwards.
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

/// A waiter's sleep between polls (blob and Redis locks): a random time between the options'
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

/// The wait of a lock that has no cheaper status read than an acquire attempt (Redis, Cosmos
/// DB): `attempt` at once, then after each [`PollSleep`] until `wait` has passed (`None`).
/// Transient failures are ridden out; any other error ends the wait. `kind` names the lock in
/// the debug log.
#[cfg(any(feature = "redis", feature = "cosmos"))]
pub(crate) async fn poll_until_acquired<H, F, Fut>(
    wait: Duration,
    options: &LockOptions,
    wake: Option<Arc<Notify>>,
    kind: &'static str,
    attempt: F,
) -> Result<Option<H>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<H>>>,
{
    let waited = poll_loop(wait, options, wake, kind, attempt);
    crate::telemetry::engines::lock_wait(kind, "", waited).await
}

/// The loop of [`poll_until_acquired`] (which runs it inside its span).
#[cfg(any(feature = "redis", feature = "cosmos"))]
async fn poll_loop<H, F, Fut>(
    wait: Duration,
    options: &LockOptions,
    wake: Option<Arc<Notify>>,
    kind: &'static str,
    mut attempt: F,
) -> Result<Option<H>>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<H>>>,
{
    let deadline = Instant::now().checked_add(wait);
    if let Some(held) = attempt().await? {
        return Ok(Some(held));
    }
    let mut poll = PollSleep::new(options);
    loop {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(None);
        }
        poll.sleep(deadline, wake.as_deref()).await;
        match attempt().await {
            Ok(Some(held)) => return Ok(Some(held)),
            Ok(None) => {}
            Err(e) if e.is_retryable() => {
                tracing::debug!(error = %e, lock = kind, "transient failure while waiting for a lock");
            }
            Err(e) => return Err(e),
        }
    }
}
