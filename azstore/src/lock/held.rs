//! [`Held`]: a held lock — the renewed lease plus the fencing token of this acquisition —
//! one type for every backend (aliases [`HeldBlobLock`](crate::blob::HeldBlobLock), `HeldRedisLock`,
//! `HeldCosmosLock`).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use super::telemetry::Hold;
use super::wake::{release_held, release_on_drop};
use crate::conditions::{Conditions, LeaseId};
use crate::error::Result;
use crate::lease::{GuardState, Leasable, LeaseGuard, LeaseLoss, ReleaseOutcome};

/// A held lock on a `T` lease: the renewed lease plus the fencing token of this acquisition.
/// Release it with [`release`](Self::release); dropping it releases in the background (and
/// wakes waiters in this process either way).
///
/// ```no_run
/// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
/// use std::time::Duration;
/// if let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? {
///     tokio::select! {
///         loss = held.lost() => eprintln!("lost the lock: {loss}"),
///         _ = tokio::time::sleep(Duration::from_secs(5)) => println!("work done"),
///     }
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping a held lock releases it at once (in the background): keep it while the critical section runs"]
pub struct Held<T: Leasable> {
    guard: Option<LeaseGuard<T>>,
    fencing_token: u64,
    wake: Option<Arc<Notify>>,
    /// The span and timer of this hold (ended with the lock).
    _hold: Hold,
}

impl<T: Leasable> fmt::Debug for Held<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Held")
            .field("guard", &self.guard)
            .field("fencing_token", &self.fencing_token)
            .finish()
    }
}

impl<T: Leasable> Held<T> {
    pub(crate) fn new(guard: LeaseGuard<T>, fencing_token: u64, wake: Option<Arc<Notify>>) -> Self {
        Held {
            _hold: Hold::start::<T>(&guard.target().lease_target(), fencing_token),
            guard: Some(guard),
            fencing_token,
            wake,
        }
    }

    fn guard(&self) -> &LeaseGuard<T> {
        // Only `release` and `drop` take the guard out, and both consume the lock.
        self.guard.as_ref().expect("guard present until release")
    }

    /// The fencing token of this acquisition: larger than every earlier holder's, on every
    /// backend (see [Fencing tokens](crate::lock#fencing-tokens)). Pass it
    /// with every write to the resources the lock protects, and have them refuse a token
    /// smaller than the largest they have seen.
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock, out: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::PutOptions;
    /// let put = PutOptions::new(Conditions::none())
    ///     .meta("fence", held.fencing_token().to_string());
    /// out.put("report", &put).await?;
    /// # Ok(()) }
    /// ```
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The lease id (writes to a lock blob itself must carry it; a Redis lock key holds it).
    ///
    /// ```no_run
    /// # fn demo(held: azstore::blob::HeldBlobLock) {
    /// println!("holding lease {}", held.lease_id());
    /// # }
    /// ```
    pub fn lease_id(&self) -> &LeaseId {
        self.guard().lease_id()
    }

    /// `Conditions::lease(lease_id)`, for writes to a lock blob.
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock, lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// // The lock blob accepts writes only with the lease id.
    /// lock.blob().upload("maintenance in progress", &held.conditions()).await?;
    /// # Ok(()) }
    /// ```
    pub fn conditions(&self) -> Conditions {
        self.guard().conditions()
    }

    /// The lease guard that renews the lock's lease.
    ///
    /// ```no_run
    /// # fn demo(held: azstore::blob::HeldBlobLock) {
    /// println!("lease of {:?}, renewed last at {:?}", held.lease().duration(), held.lease().last_renewed());
    /// # }
    /// ```
    pub fn lease(&self) -> &LeaseGuard<T> {
        self.guard()
    }

    /// True while the lock is (certainly) held; decides from the lease's loss deadline as well
    /// as from what the renew task published (see [`LeaseGuard::is_held`]), so it is right
    /// at once after a pause. It cannot cover a pause *between* this check and your write:
    /// for that, pass the [fencing token](Self::fencing_token) to the protected resource (see
    /// [Pauses, clocks and fencing](crate::lock#pauses-clocks-and-fencing)).
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock, jobs: Vec<String>) -> azstore::Result<()> {
    /// for job in jobs {
    ///     if !held.is_held() {
    ///         eprintln!("lock lost: leaving the remaining jobs to the next holder");
    ///         break;
    ///     }
    ///     println!("running {job}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_held(&self) -> bool {
        self.guard().is_held()
    }

    /// `Ok(())` while held, else an error with `lease_lost() == true`; decides like
    /// [`is_held`](Self::is_held).
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock) -> azstore::Result<()> {
    /// held.check()?; // returns the loss as an error once the lock can no longer be vouched for
    /// # Ok(()) }
    /// ```
    pub fn check(&self) -> Result<()> {
        self.guard().check()
    }

    /// The lease state, deciding like [`is_held`](Self::is_held) (see [`LeaseGuard::state`]).
    ///
    /// ```no_run
    /// # fn demo(held: azstore::blob::HeldBlobLock) {
    /// use azstore::lease::GuardState;
    /// match held.state() {
    ///     GuardState::Held => println!("held"),
    ///     GuardState::Lost(why) => eprintln!("lost: {why}"),
    ///     other => eprintln!("{other:?}"),
    /// }
    /// # }
    /// ```
    pub fn state(&self) -> GuardState {
        self.guard().state()
    }

    /// The lease's loss deadline on its clock; see [`LeaseGuard::deadline`].
    ///
    /// ```no_run
    /// # fn demo(held: azstore::blob::HeldBlobLock) {
    /// if let Some(deadline) = held.deadline() {
    ///     let left = deadline.saturating_sub(held.lease().clock().now());
    ///     println!("vouched for another {left:?} unless a renew succeeds");
    /// }
    /// # }
    /// ```
    pub fn deadline(&self) -> Option<Duration> {
        self.guard().deadline()
    }

    /// Completes when the lock is (possibly) lost; see [`LeaseGuard::lost`].
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock) -> azstore::Result<()> {
    /// let work = async { /* the critical section */ };
    /// tokio::select! {
    ///     loss = held.lost() => eprintln!("stopping: {loss}"),
    ///     _ = work => {}
    /// }
    /// held.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        self.guard().lost()
    }

    /// State changes of the lease: a receiver to hand to another task.
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock) {
    /// use azstore::lease::GuardState;
    /// let mut states = held.subscribe();
    /// tokio::spawn(async move {
    ///     let _ = states.wait_for(|s| !matches!(s, GuardState::Held)).await;
    ///     eprintln!("lock no longer held");
    /// });
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.guard().subscribe()
    }

    /// Releases the lock. A lease that already ended is [`ReleaseOutcome::AlreadyGone`].
    ///
    /// ```no_run
    /// # async fn demo(held: azstore::blob::HeldBlobLock) -> azstore::Result<()> {
    /// use azstore::lease::ReleaseOutcome;
    /// if let ReleaseOutcome::AlreadyGone { code } = held.release().await? {
    ///     eprintln!("the lease had ended before the release ({code:?})");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<ReleaseOutcome> {
        let guard = self.guard.take().expect("guard present until release");
        release_held(guard, self.wake.take()).await
    }
}

impl<T: Leasable> Drop for Held<T> {
    fn drop(&mut self) {
        release_on_drop(self.guard.take(), self.wake.take());
    }
}
