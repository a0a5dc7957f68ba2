//! [`Held`]: a held lock — the renewed lease plus the fencing token of this acquisition —
//! one type for blob locks ([`HeldLock`](super::HeldLock)) and Redis locks
//! (`HeldRedisLock`).

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};

use crate::conditions::{Conditions, LeaseId};
use crate::error::Result;
use crate::lease::{GuardState, Leasable, LeaseGuard, LeaseLoss, ReleaseOutcome};
use crate::lock::wake::{release_held, release_on_drop};

/// A held lock on a `T` lease: the renewed lease plus the fencing token of this acquisition.
/// Release it with [`release`](Self::release); dropping it releases in the background (and
/// wakes waiters in this process either way).
pub struct Held<T: Leasable> {
    guard: Option<LeaseGuard<T>>,
    fencing_token: u64,
    wake: Option<Arc<Notify>>,
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
            guard: Some(guard),
            fencing_token,
            wake,
        }
    }

    fn guard(&self) -> &LeaseGuard<T> {
        // Only `release` and `drop` take the guard out, and both consume the lock.
        self.guard.as_ref().expect("guard present until release")
    }

    /// The fencing token of this acquisition: larger than every earlier holder's.
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The lease id (writes to a lock blob itself must carry it; a Redis lock key holds it).
    pub fn lease_id(&self) -> &LeaseId {
        self.guard().lease_id()
    }

    /// `Conditions::lease(lease_id)`, for writes to a lock blob.
    pub fn conditions(&self) -> Conditions {
        self.guard().conditions()
    }

    /// The lease guard.
    pub fn lease(&self) -> &LeaseGuard<T> {
        self.guard()
    }

    /// True while the lock is (certainly) held; decides from the lease's loss deadline as well
    /// as from what the renew task published (see [`LeaseGuard::is_held`]), so it is right
    /// at once after a pause. It cannot cover a pause *between* this check and your write:
    /// for that, pass the [fencing token](Self::fencing_token) to the protected resource (see
    /// [Pauses, clocks and fencing](crate::lock#pauses-clocks-and-fencing)).
    pub fn is_held(&self) -> bool {
        self.guard().is_held()
    }

    /// `Ok(())` while held, else an error with `lease_lost() == true`; decides like
    /// [`is_held`](Self::is_held).
    pub fn check(&self) -> Result<()> {
        self.guard().check()
    }

    /// The lease state, deciding like [`is_held`](Self::is_held) (see [`LeaseGuard::state`]).
    pub fn state(&self) -> GuardState {
        self.guard().state()
    }

    /// The lease's loss deadline on its clock; see [`LeaseGuard::deadline`].
    pub fn deadline(&self) -> Option<Duration> {
        self.guard().deadline()
    }

    /// Completes when the lock is (possibly) lost; see [`LeaseGuard::lost`].
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        self.guard().lost()
    }

    /// State changes of the lease.
    pub fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.guard().subscribe()
    }

    /// Releases the lock. A lease that already ended is [`ReleaseOutcome::AlreadyGone`].
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
