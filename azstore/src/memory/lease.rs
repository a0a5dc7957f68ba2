//! [`MemoryLease`]: a lease in a [`MemoryStore`], [`Leasable`] for `LeaseGuard`.

use std::time::Duration;

use super::{LeaseRec, LeaseState, MemoryStore, Op, State, errors, validate_name};
use crate::conditions::LeaseId;
use crate::error::Result;
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseDuration, LeaseReleased, LeaseResult};

/// A lease named in a [`MemoryStore`], with a blob lease's rules: 15–60 s or infinite,
/// acquire (repeating it with the holder's id succeeds and restarts the time), renew,
/// change, release, break with a period. It expires on the store's time (see
/// [Time](super#time)). Cheap to clone; every clone addresses the same lease.
///
/// Refusals: acquiring a lease someone else holds (or that is being broken) is
/// `LeaseAlreadyPresent`; renew, change or release with another id is a lost lease
/// (`err.lease_lost()`), as is any of them after the lease expired, was released or broken;
/// renewing a lease that is being broken is refused.
///
/// ```
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
/// let store = azstore::memory::MemoryStore::new();
/// let guard = LeaseGuard::acquire(store.lease("leader")?, LeaseDuration::seconds(15)?).await?;
/// assert!(guard.is_held());
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct MemoryLease {
    pub(super) store: MemoryStore,
    pub(super) name: String,
}

impl MemoryLease {
    /// The lease `name` of `store` (validated here: 1 to 1024 bytes).
    ///
    /// ```
    /// use azstore::memory::{MemoryLease, MemoryStore};
    /// # fn main() -> azstore::Result<()> {
    /// let lease = MemoryLease::new(MemoryStore::new(), "leader")?;
    /// assert_eq!(lease.name(), "leader");
    /// # Ok(()) }
    /// ```
    pub fn new(store: MemoryStore, name: &str) -> Result<MemoryLease> {
        validate_name(name)?;
        Ok(MemoryLease {
            store,
            name: name.to_string(),
        })
    }

    /// The lease's name.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// assert_eq!(azstore::memory::MemoryStore::new().lease("l")?.name(), "l");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The id holding the lease now (held or being broken), if any.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
    /// let lease = azstore::memory::MemoryStore::new().lease("l")?;
    /// assert_eq!(lease.holder(), None);
    /// # Ok(()) }
    /// ```
    pub fn holder(&self) -> Option<LeaseId> {
        let now = self.store.now();
        self.store
            .state()
            .live_lease(&self.name, now)
            .map(|(l, _)| l.id.clone())
    }
}

/// Takes the lease `name` for `proposed`: `Ok(true)` when it was free, `Ok(false)` when
/// `proposed` already held it (its time restarts), the lease-held error otherwise.
pub(super) fn acquire(
    s: &mut State,
    name: &str,
    duration: LeaseDuration,
    proposed: &LeaseId,
    now: Duration,
) -> Result<bool> {
    let fresh = match s.live_lease(name, now) {
        None => true,
        Some((l, LeaseState::Held)) if &l.id == proposed => false,
        Some(_) => return Err(errors::lease_held(name)),
    };
    let d = duration.as_duration();
    s.leases.insert(
        name.to_string(),
        LeaseRec {
            id: proposed.clone(),
            duration: d,
            expires_at: d.map(|d| now + d),
            breaking_until: None,
        },
    );
    Ok(fresh)
}

/// The lease `name` held by `id` (held or breaking), or the refusal of `what`.
fn ours<'s>(
    s: &'s mut State,
    name: &str,
    id: &LeaseId,
    now: Duration,
    what: &str,
) -> Result<&'s mut LeaseRec> {
    match s.live_lease(name, now) {
        None => Err(errors::lease_not_present(name, what)),
        Some((l, _)) if &l.id != id => Err(errors::lease_lost(name, what)),
        Some(_) => Ok(s.leases.get_mut(name).expect("live lease")),
    }
}

/// Releases the lease `name` held by `id`.
pub(super) fn release(s: &mut State, name: &str, id: &LeaseId, now: Duration) -> Result<()> {
    ours(s, name, id, now, "release")?;
    s.leases.remove(name);
    Ok(())
}

/// Breaks the lease `name` (see [`Leasable::lease_break`]); the time left.
pub(super) fn break_lease(
    s: &mut State,
    name: &str,
    period: Option<BreakPeriod>,
    now: Duration,
) -> Result<Duration> {
    let Some((l, _)) = s.live_lease(name, now) else {
        return Err(errors::lease_not_present(name, "break"));
    };
    let rest = l.remaining(now);
    let wanted = match period {
        Some(p) => Duration::from_secs(p.as_secs().into()),
        // The rest of a fixed lease; at once for an infinite one.
        None => rest.unwrap_or(Duration::ZERO),
    };
    let left = rest.map_or(wanted, |r| r.min(wanted));
    if left.is_zero() {
        s.leases.remove(name);
    } else if let Some(l) = s.leases.get_mut(name) {
        l.breaking_until = Some(now + left);
    }
    Ok(left)
}

// Every lease capability (the default): fixed durations, renewals and break periods, like a
// blob's.
impl Leasable for MemoryLease {
    fn lease_target(&self) -> String {
        format!("memory lease {}", self.name)
    }

    async fn lease_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
    ) -> Result<LeaseResult> {
        let name = &self.name;
        self.store
            .call(Op::Acquire, |s, now| {
                acquire(s, name, duration, proposed, now)
            })
            .await?;
        Ok(LeaseResult::new(proposed.clone(), None))
    }

    async fn lease_renew(&self, id: &LeaseId) -> Result<LeaseResult> {
        let name = &self.name;
        self.store
            .call(Op::Renew, |s, now| {
                let l = ours(s, name, id, now, "renew")?;
                if l.breaking_until.is_some() {
                    return Err(errors::lease_breaking(name));
                }
                l.expires_at = l.duration.map(|d| now + d);
                Ok(())
            })
            .await?;
        Ok(LeaseResult::new(id.clone(), None))
    }

    async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
        let name = &self.name;
        self.store
            .call(Op::Change, |s, now| {
                ours(s, name, id, now, "change")?.id = proposed.clone();
                Ok(())
            })
            .await?;
        Ok(LeaseResult::new(proposed.clone(), None))
    }

    async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
        let name = &self.name;
        self.store
            .call(Op::Release, |s, now| release(s, name, id, now))
            .await?;
        Ok(LeaseReleased::new(None))
    }

    async fn lease_break(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        let name = &self.name;
        let left = self
            .store
            .call(Op::Break, |s, now| break_lease(s, name, period, now))
            .await?;
        Ok(LeaseBroken::new(left, None))
    }
}
