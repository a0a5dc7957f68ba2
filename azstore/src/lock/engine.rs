//! [`Lock<T>`]: the lock engine, written once over a [`LockTarget`] — one attempt, the one
//! wait loop, status and break.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::target::{Attempt, LockClaim, LockTarget, Probe, StatusMany};
use crate::conditions::LeaseId;
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::lease::{BreakPeriod, LeaseBroken, LeaseGuard};
use crate::lock::{Held, LockOptions, LockOwner, LockStatus, RoundStart, WaitRounds, wakeup_for};

/// A distributed lock with a fencing token, on any backend: holding it means holding a lease
/// on the backend's lock record, renewed by a [`LeaseGuard`]; each acquisition gets a fencing
/// token larger than every earlier holder's. Cheap to clone.
///
/// Built through a backend: [`BlobLock`](crate::blob::BlobLock) (`Lock<BlobLockTarget>`),
/// `RedisLock` and `CosmosLock` (features `redis`, `cosmos`), or
/// [`Lock::from_target`] for a [`LockTarget`] of your own. Every method means the same on
/// every backend (see the [module documentation](crate::lock)).
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::blob::BlobLock;
///
/// let lock = BlobLock::new(account.container("locks")?, "jobs/reindex")?;
/// if let Some(held) = lock.acquire_within(Duration::from_secs(60)).await? {
///     println!("running the reindex under fencing token {}", held.fencing_token());
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Lock<T: LockTarget> {
    target: T,
    options: LockOptions,
}

impl<T: LockTarget> Lock<T> {
    /// A lock over `target` with `options` (validated here, before any request).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::blob::BlobLockTarget;
    /// use azstore::lock::{Lock, LockOptions};
    /// let target = BlobLockTarget::new(container, "locks/nightly")?;
    /// let lock = Lock::from_target(target, LockOptions::default())?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn from_target(target: T, options: LockOptions) -> Result<Lock<T>> {
        options.validate()?;
        Ok(Lock { target, options })
    }

    /// The backend target.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::blob::BlobLock) {
    /// println!("{:?}", lock.target());
    /// # }
    /// ```
    pub fn target(&self) -> &T {
        &self.target
    }

    /// The options the lock was built with.
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::blob::BlobLock) {
    /// println!("{:?}", lock.options());
    /// # }
    /// ```
    pub fn options(&self) -> &LockOptions {
        &self.options
    }

    /// One attempt: the held lock, or `None` when someone else holds it (or it is breaking).
    /// An unreachable service is an error.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// match lock.try_acquire().await? {
    ///     Some(held) => {
    ///         println!("got it, token {}", held.fencing_token());
    ///         held.release().await?;
    ///     }
    ///     None => println!("busy; skipping this run"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Held<T::Lease>>> {
        self.attempt(&LeaseId::random()).await
    }

    /// One attempt proposing `proposed` as the lease id. Reusing one id across the attempts of
    /// one wait makes a retry safe: if an earlier attempt's response was lost but it did
    /// acquire, the next attempt with the same id succeeds instead of conflicting.
    async fn attempt(&self, proposed: &LeaseId) -> Result<Option<Held<T::Lease>>> {
        self.attempt_waking(proposed, self.wakeup()).await
    }

    /// [`attempt`](Self::attempt), with the held lock waking `wake` on release instead of
    /// this lock's own wake-up (a semaphore's slots wake the semaphore's waiters).
    pub(crate) async fn attempt_waking(
        &self,
        proposed: &LeaseId,
        wake: Option<Arc<Notify>>,
    ) -> Result<Option<Held<T::Lease>>> {
        let claim = LockClaim::new(
            proposed.clone(),
            self.options.duration,
            LockOwner::here(self.options.label.clone()),
        );
        match self.target.try_lock(&claim).await? {
            Attempt::Busy => Ok(None),
            Attempt::Acquired {
                lease,
                fencing_token,
                sent_at,
            } => {
                let guard = match LeaseGuard::adopt(
                    lease,
                    proposed.clone(),
                    self.options.duration,
                    sent_at,
                    self.options.guard.clone(),
                ) {
                    Ok(g) => g,
                    Err(e) => {
                        self.target.abandon(proposed).await;
                        return Err(e);
                    }
                };
                Ok(Some(Held::new(guard, fencing_token, wake)))
            }
        }
    }

    /// This lock's process-wide wake-up, when its options ask for one.
    pub(crate) fn wakeup(&self) -> Option<Arc<Notify>> {
        self.options
            .local_wakeup
            .then(|| wakeup_for(self.target.identity()))
    }

    /// Waits at most `wait` for the lock: `Some` once held, `None` when someone else still
    /// held it at the end. `wait` is how long to wait, not the lease duration (that is
    /// [`LockOptions::duration`], 30 s by default).
    ///
    /// Between attempts the waiter takes the backend's cheap look where it has one (a HEAD of
    /// the lock blob) and attempts only when the lock looks free, sleeping a jittered,
    /// backing-off interval ([`LockOptions::poll_interval`]) in between, so waiters do not
    /// flood the service. A release by a holder in this process wakes a waiter at once. One
    /// id is proposed across the attempts of one wait, so a repeated attempt whose reply was
    /// lost does not lock itself out.
    ///
    /// **Returns by `wait`**, the same on every backend: every request is cut off at the
    /// deadline, whatever the client's own time budget. Transient failures (connection
    /// resets, refusals, timeouts, 5xx) are ridden out until then — on the first attempt as on
    /// the later ones; if the service could not be reached at the end, the last such failure
    /// is returned as an **error** rather than `None` (which would claim someone else holds
    /// the lock). A request still in flight at the deadline answers nothing: the wait ends with
    /// what the last answer said (`None` after "held", the failure after a failure), and with
    /// a `Timeout` error when no request was answered at all (a stalled service). An acquire
    /// cut off at the deadline may have taken the lock: it is released again in the
    /// background, so no orphaned lease blocks the next holder. A zero `wait` gives up at
    /// once; use [`try_acquire`](Self::try_acquire) for a single attempt.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
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
    pub async fn acquire_within(&self, wait: Duration) -> Result<Option<Held<T::Lease>>> {
        let kind = super::telemetry::lock_kind::<T::Lease>();
        let name = self.target.identity();
        super::telemetry::lock_wait(kind, &name, self.wait_for(wait)).await
    }

    /// The one wait loop of [`acquire_within`](Self::acquire_within) (which runs it inside its
    /// span).
    async fn wait_for(&self, wait: Duration) -> Result<Option<Held<T::Lease>>> {
        let proposed = LeaseId::random();
        let mut rounds = WaitRounds::new(wait, &self.options, self.wakeup());
        let mut waiting = Waiting::default();
        loop {
            match rounds.next().await {
                None => return waiting.give_up(wait),
                // Woken by a local release: the lock was just freed, attempt at once.
                Some(RoundStart::First | RoundStart::Woken) => {}
                Some(RoundStart::Slept) => {
                    match by_deadline(rounds.deadline(), self.target.probe()).await {
                        // Cut off at the deadline: no answer.
                        None => continue,
                        Some(Ok(Probe::Busy)) => {
                            waiting.busy();
                            continue;
                        }
                        Some(Ok(_)) => {}
                        Some(Err(e)) => {
                            waiting.failed(e, "a lock")?;
                            continue;
                        }
                    }
                }
            }
            match self.attempt_by_deadline(rounds.deadline(), &proposed).await {
                None => {}
                Some(Ok(Some(held))) => return Ok(Some(held)),
                Some(Ok(None)) => waiting.busy(),
                // Keep waiting through transient failures; the deadline still holds.
                Some(Err(e)) => waiting.failed(e, "a lock")?,
            }
        }
    }

    /// One attempt, cut off at `deadline` (`None` then). An attempt cut off may have taken
    /// the lock with `proposed`: it is abandoned (released) in the background.
    async fn attempt_by_deadline(
        &self,
        deadline: Option<Instant>,
        proposed: &LeaseId,
    ) -> Option<Result<Option<Held<T::Lease>>>> {
        self.attempt_waking_by_deadline(deadline, proposed, self.wakeup())
            .await
    }

    /// [`attempt_by_deadline`](Self::attempt_by_deadline) with the wake-up of
    /// [`attempt_waking`](Self::attempt_waking).
    pub(crate) async fn attempt_waking_by_deadline(
        &self,
        deadline: Option<Instant>,
        proposed: &LeaseId,
        wake: Option<Arc<Notify>>,
    ) -> Option<Result<Option<Held<T::Lease>>>> {
        let answer = by_deadline(deadline, self.attempt_waking(proposed, wake)).await;
        if answer.is_none() {
            let target = self.target.clone();
            let id = proposed.clone();
            tokio::spawn(async move { target.abandon(&id).await });
        }
        answer
    }

    /// Who holds (or last held) the lock, whether it is locked or breaking, and the fencing
    /// token. It never takes the lock.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// let status = lock.status().await?;
    /// if status.is_locked() {
    ///     if let Some(owner) = &status.owner {
    ///         println!("held by {owner} (token {:?})", status.fencing_token);
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<LockStatus> {
        self.target.status().await
    }

    /// The status of many locks in one bulk read where the backend has one
    /// ([`LockTarget::status_many`]: one List Blobs per 5,000 lock blobs, one Redis round trip
    /// per 2,000 keys, one Cosmos DB query per 1,000 items), else one [`status`](Self::status)
    /// per lock; one [`LockStatus`] per lock, in order, and the requests sent.
    ///
    /// ```no_run
    /// # async fn demo(locks: Vec<azstore::blob::BlobLock>) -> azstore::Result<()> {
    /// use azstore::lock::Lock;
    /// let read = Lock::status_many(&locks.iter().collect::<Vec<_>>()).await?;
    /// for (lock, status) in locks.iter().zip(&read.statuses) {
    ///     println!("{}: locked {}", lock.blob().name(), status.is_locked());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status_many(locks: &[&Lock<T>]) -> Result<StatusMany> {
        let targets: Vec<&T> = locks.iter().map(|l| &l.target).collect();
        T::status_many(&targets).await
    }

    /// Breaks the lock (administrative); the same meaning on every backend:
    ///
    /// * `None` — the safe choice — lets the rest of the holder's lease run out first: the
    ///   holder's next renew is refused, so its guard reports the loss (within a third of the
    ///   lease duration with the default [`GuardOptions`](crate::lease::GuardOptions)) before
    ///   anyone else can acquire. An infinite lease breaks at once.
    /// * `Some(period)` frees the lock after `period` (or when the lease would have expired,
    ///   if that is sooner); `Some(BreakPeriod::immediate())` frees it at once. A period
    ///   shorter than the holder's renew interval can free it before the holder notices, and
    ///   both then act as holders until it does — only the
    ///   [fencing token](Held::fencing_token) keeps them apart.
    ///
    /// [`LeaseBroken::remaining`] says when the lock is free at the latest. The fencing token
    /// is kept: the next holder's is larger. On Cosmos DB, whose leases are timed by the
    /// contenders' clocks, a break with a period leaves the item "breaking" and contenders
    /// take it over once they saw it unchanged for the period (the lease duration for `None`).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// let broken = lock.break_lock(None).await?;
    /// println!("free in {:?} at the latest", broken.remaining);
    /// # Ok(()) }
    /// ```
    pub async fn break_lock(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.target.break_lease(period).await
    }
}

/// `fut`, cut off at `deadline` (`None` then).
pub(crate) async fn by_deadline<R>(
    deadline: Option<Instant>,
    fut: impl Future<Output = R>,
) -> Option<R> {
    match deadline {
        None => Some(fut.await),
        Some(d) => tokio::time::timeout_at(d, fut).await.ok(),
    }
}

/// What a wait loop has heard so far, and how it ends at its deadline.
#[derive(Default)]
pub(crate) struct Waiting {
    /// The last answered request's transient failure (`None`: it said someone holds it). A
    /// request cut off at the deadline answers nothing and leaves it as it was.
    failure: Option<Error>,
    /// Whether any request was answered.
    answered: bool,
}

impl Waiting {
    /// Someone else holds it.
    pub(crate) fn busy(&mut self) {
        self.answered = true;
        self.failure = None;
    }

    /// A request failed: a transient failure is kept (the wait goes on), any other ends it.
    pub(crate) fn failed(&mut self, e: Error, waiting_for: &str) -> Result<()> {
        if !e.is_retryable() {
            return Err(e);
        }
        tracing::debug!(error = %e, "transient failure while waiting for {waiting_for}");
        self.answered = true;
        self.failure = Some(e);
        Ok(())
    }

    /// The end of a wait of `wait` at its deadline: the last transient failure, `None` when
    /// the last answer was "held", the deadline error when nothing was answered at all.
    pub(crate) fn give_up<H>(self, wait: Duration) -> Result<Option<H>> {
        match self.failure {
            Some(e) => Err(e),
            None if self.answered => Ok(None),
            None => Err(deadline_error(wait)),
        }
    }
}

pub(crate) fn deadline_error(wait: Duration) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("the lock's storage did not answer within the lock wait of {wait:?}"),
    )
    .with_sent(RequestSent::Maybe)
}

/// The wait loop's decisions, on a scripted target (no service: the loop's logic alone, on
/// tokio's paused clock). What every real backend does is checked by the lock contract suite.
#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;
    use crate::lease::{LeaseDuration, LeaseReleased, LeaseResult};

    /// A lease the scripted target never hands out.
    #[derive(Debug, Clone)]
    struct NoLease;

    impl crate::lease::Leasable for NoLease {
        fn lease_target(&self) -> String {
            "nothing".into()
        }
        async fn lease_acquire(&self, _: LeaseDuration, _: &LeaseId) -> Result<LeaseResult> {
            Err(Error::invalid_input("not leasable"))
        }
        async fn lease_renew(&self, _: &LeaseId) -> Result<LeaseResult> {
            Err(Error::invalid_input("not leasable"))
        }
        async fn lease_change(&self, _: &LeaseId, _: &LeaseId) -> Result<LeaseResult> {
            Err(Error::invalid_input("not leasable"))
        }
        async fn lease_release(&self, _: &LeaseId) -> Result<LeaseReleased> {
            Err(Error::invalid_input("not leasable"))
        }
        async fn lease_break(&self, _: Option<BreakPeriod>) -> Result<LeaseBroken> {
            Err(Error::invalid_input("not leasable"))
        }
    }

    #[derive(Debug, Clone, Copy)]
    enum Step {
        Busy,
        /// A transient failure (connection refused).
        Fail,
        /// A failure no retry helps.
        Fatal,
        /// No answer, ever.
        Hang,
    }

    /// Attempts follow `attempts` (the last step repeats); the probe hangs when `probe_hangs`,
    /// else answers "unknown".
    #[derive(Debug, Clone)]
    struct Scripted {
        attempts: Arc<Mutex<Vec<Step>>>,
        probe_hangs: bool,
        tried: Arc<AtomicUsize>,
        abandoned: Arc<AtomicUsize>,
    }

    fn scripted(steps: &[Step], probe_hangs: bool) -> Lock<Scripted> {
        let target = Scripted {
            attempts: Arc::new(Mutex::new(steps.iter().rev().copied().collect())),
            probe_hangs,
            tried: Arc::default(),
            abandoned: Arc::default(),
        };
        Lock::from_target(target, LockOptions::default().local_wakeup(false)).unwrap()
    }

    async fn answer(step: Step) -> Result<Probe> {
        match step {
            Step::Busy => Ok(Probe::Busy),
            Step::Fail => Err(Error::new(ErrorKind::Transport, "connection refused")),
            Step::Fatal => Err(Error::new(ErrorKind::Auth, "403")),
            Step::Hang => std::future::pending().await,
        }
    }

    impl LockTarget for Scripted {
        type Lease = NoLease;

        fn identity(&self) -> String {
            "scripted".into()
        }

        async fn try_lock(&self, _: &LockClaim) -> Result<Attempt<NoLease>> {
            self.tried.fetch_add(1, Ordering::SeqCst);
            let step = {
                let mut steps = self.attempts.lock().unwrap();
                if steps.len() > 1 {
                    steps.pop().unwrap()
                } else {
                    steps[0]
                }
            };
            answer(step).await.map(|_| Attempt::Busy)
        }

        async fn probe(&self) -> Result<Probe> {
            if self.probe_hangs {
                std::future::pending::<()>().await;
            }
            Ok(Probe::Unknown)
        }

        async fn status(&self) -> Result<LockStatus> {
            Ok(LockStatus::default())
        }

        async fn break_lease(&self, _: Option<BreakPeriod>) -> Result<LeaseBroken> {
            Ok(LeaseBroken::new(Duration::ZERO, None))
        }

        async fn abandon(&self, _: &LeaseId) {
            self.abandoned.fetch_add(1, Ordering::SeqCst);
        }
    }

    const WAIT: Duration = Duration::from_secs(5);

    async fn wait(lock: &Lock<Scripted>) -> (Result<bool>, Duration) {
        let started = Instant::now();
        let got = lock.acquire_within(WAIT).await.map(|h| h.is_some());
        (got, started.elapsed())
    }

    #[tokio::test(start_paused = true)]
    async fn held_all_along_is_none_even_when_the_last_look_is_cut_off() {
        let lock = scripted(&[Step::Busy], true);
        let (got, took) = wait(&lock).await;
        assert!(matches!(got, Ok(false)), "{got:?}");
        assert_eq!(took, WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn unreachable_all_along_is_the_last_failure_by_the_deadline() {
        let lock = scripted(&[Step::Fail], false);
        let (got, took) = wait(&lock).await;
        assert_eq!(got.unwrap_err().kind(), ErrorKind::Transport);
        assert_eq!(took, WAIT);
        assert!(
            lock.target().tried.load(Ordering::SeqCst) > 3,
            "failures, the first included, are ridden out"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn busy_then_unreachable_is_an_error_not_none() {
        let lock = scripted(&[Step::Busy, Step::Busy, Step::Fail], false);
        let (got, _) = wait(&lock).await;
        assert_eq!(got.unwrap_err().kind(), ErrorKind::Transport);
    }

    #[tokio::test(start_paused = true)]
    async fn a_first_failure_then_busy_is_none() {
        let lock = scripted(&[Step::Fail, Step::Busy], false);
        let (got, took) = wait(&lock).await;
        assert!(matches!(got, Ok(false)), "{got:?}");
        assert_eq!(took, WAIT);
    }

    #[tokio::test(start_paused = true)]
    async fn no_answer_at_all_is_a_timeout_at_the_deadline_and_the_attempt_is_abandoned() {
        let lock = scripted(&[Step::Hang], false);
        let (got, took) = wait(&lock).await;
        assert_eq!(got.unwrap_err().kind(), ErrorKind::Timeout);
        assert_eq!(took, WAIT);
        tokio::task::yield_now().await;
        assert_eq!(lock.target().abandoned.load(Ordering::SeqCst), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_fatal_error_ends_the_wait_at_once() {
        let lock = scripted(&[Step::Busy, Step::Fatal], false);
        let (got, took) = wait(&lock).await;
        assert_eq!(got.unwrap_err().kind(), ErrorKind::Auth);
        assert!(took < WAIT, "{took:?}");
    }
}
