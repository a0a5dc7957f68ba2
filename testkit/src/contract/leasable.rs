//! The contract of [`Leasable`] + [`LeaseGuard`]: one generic function per guarantee, called
//! once per backend (blob, container, share, file, Redis key, Cosmos DB item) from azstore's
//! `tests/it/contract_lease.rs`.
//!
//! Every function takes two clients of the same resource: `target`, which the guard holds,
//! and `other`, another party. Each respects [`Leasable::lease_capabilities`]: a guarantee
//! that needs renewable fixed-duration leases says so and fails on a target without them
//! (the test file does not call it for a file, whose leases are infinite only); the others
//! use a 15 s lease where the target has fixed durations and an infinite one where not.
//! Failures are `Err(what went wrong)`.

use std::time::{Duration, Instant};

use azstore::lease::{BreakPeriod, Leasable, LeaseDuration, LeaseGuard, LeaseLoss, ReleaseOutcome};
use azstore::{ErrorKind, LeaseId};

/// The fixed lease duration the guarantees use (the shortest the services allow).
pub const LEASE: Duration = Duration::from_secs(15);

fn duration_for<L: Leasable>(target: &L) -> LeaseDuration {
    if target.lease_capabilities().fixed_duration {
        LeaseDuration::seconds(LEASE.as_secs()).expect("15 s is a valid lease duration")
    } else {
        LeaseDuration::Infinite
    }
}

/// Acquires `target` under a guard, for the duration `other` can hold too.
async fn guard_on<L: Leasable>(target: L, other: &L) -> Result<LeaseGuard<L>, String> {
    LeaseGuard::acquire(target, duration_for(other))
        .await
        .map_err(|e| format!("acquire: {e}"))
}

fn needs_renewal<L: Leasable>(target: &L) -> Result<(), String> {
    let caps = target.lease_capabilities();
    if caps.renew && caps.fixed_duration {
        Ok(())
    } else {
        Err(format!(
            "{} has no renewable fixed-duration leases ({caps:?}): this guarantee does not apply",
            target.lease_target()
        ))
    }
}

/// `other` tries once to acquire; `Ok(Some(id))` if it got the lease, `Ok(None)` if the
/// service said someone holds it, `Err` on anything else.
async fn try_acquire<L: Leasable>(other: &L) -> Result<Option<LeaseId>, String> {
    let id = LeaseId::random();
    match other.lease_acquire(duration_for(other), &id).await {
        Ok(r) => Ok(Some(r.lease_id)),
        Err(e) if e.kind() == ErrorKind::LeaseHeld => Ok(None),
        Err(e) => Err(format!("another party's acquire failed: {e}")),
    }
}

/// `other` acquires within `within` (polling), then releases.
async fn acquires_within<L: Leasable>(other: &L, within: Duration) -> Result<Duration, String> {
    let started = Instant::now();
    loop {
        if let Some(id) = try_acquire(other).await? {
            let took = started.elapsed();
            other
                .lease_release(&id)
                .await
                .map_err(|e| format!("another party's release failed: {e}"))?;
            return Ok(took);
        }
        if started.elapsed() > within {
            return Err(format!(
                "another party could not acquire {} within {within:?}",
                other.lease_target()
            ));
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// **A held lease excludes others, and its release frees it at once**: while the guard
/// holds the lease another party's acquire is refused (`LeaseAlreadyPresent`); after
/// `release()` (reported `Released`) the other party acquires at its first try.
pub async fn held_lease_excludes_others<L: Leasable>(target: L, other: L) -> Result<(), String> {
    let guard = guard_on(target, &other).await?;
    if try_acquire(&other).await?.is_some() {
        return Err("another party acquired a lease the guard holds".into());
    }
    match guard.release().await {
        Ok(ReleaseOutcome::Released) => {}
        other => return Err(format!("release of a held lease: {other:?}")),
    }
    match try_acquire(&other).await? {
        Some(id) => other
            .lease_release(&id)
            .await
            .map(|_| ())
            .map_err(|e| format!("another party's release failed: {e}")),
        None => Err("the released lease was still held".into()),
    }
}

/// How many lease periods [`guard_renews_past_several_periods`] holds the lease.
pub const PERIODS: u32 = 3;

/// **The guard renews past several lease periods**: a 15 s lease held for [`PERIODS`]
/// periods and a bit is still held (its last renewal recent), another party still cannot
/// acquire it, and `release()` frees it. Needs renewable fixed-duration leases.
pub async fn guard_renews_past_several_periods<L: Leasable>(
    target: L,
    other: L,
) -> Result<(), String> {
    needs_renewal(&target)?;
    let guard = guard_on(target, &other).await?;
    tokio::time::sleep(LEASE * PERIODS + Duration::from_secs(2)).await;
    if !guard.is_held() || guard.check().is_err() {
        return Err(format!(
            "the guard lost its lease while renewing: {:?}",
            guard.state()
        ));
    }
    let since = guard.last_renewed().elapsed();
    if since > LEASE / 2 {
        return Err(format!("no renewal for {since:?}"));
    }
    if try_acquire(&other).await?.is_some() {
        return Err(format!(
            "another party acquired the lease after {PERIODS} periods: the guard did not renew it"
        ));
    }
    match guard.release().await {
        Ok(ReleaseOutcome::Released) => {}
        other => return Err(format!("release after renewing: {other:?}")),
    }
    acquires_within(&other, Duration::from_secs(2))
        .await
        .map(|_| ())
}

/// **The guard reports loss before the lease could expire when it is broken**: another
/// party breaks the lease (at once); the guard reports [`LeaseLoss::Refused`] within one
/// renew interval plus slack — well before the 15 s the lease would have run — and
/// `check()` fails with a lease-lost error. The other party can then acquire, and
/// releasing the lost guard is `AlreadyGone`, not an error. Needs renewable leases.
pub async fn guard_reports_loss_before_expiry<L: Leasable>(
    target: L,
    other: L,
) -> Result<(), String> {
    needs_renewal(&target)?;
    let guard = guard_on(target, &other).await?;
    let broke_at = Instant::now();
    other
        .lease_break(Some(BreakPeriod::immediate()))
        .await
        .map_err(|e| format!("another party's break failed: {e}"))?;
    // The default guard renews every third of the lease (5 s).
    let within = LEASE / 3 + Duration::from_secs(3);
    let loss = tokio::time::timeout(within, guard.lost())
        .await
        .map_err(|_| format!("no loss reported within {within:?} of the break"))?;
    let after = broke_at.elapsed();
    if after >= LEASE {
        return Err(format!("loss reported only after {after:?}"));
    }
    if !matches!(loss, LeaseLoss::Refused { .. }) {
        return Err(format!("a broken lease should be a refusal, got {loss:?}"));
    }
    match guard.check() {
        Err(e) if e.lease_lost() => {}
        other => return Err(format!("check() after the loss: {other:?}")),
    }
    let Some(id) = try_acquire(&other).await? else {
        return Err("the broken lease could not be acquired by another party".into());
    };
    let released = guard.release().await;
    other
        .lease_release(&id)
        .await
        .map_err(|e| format!("another party's release failed: {e}"))?;
    match released {
        Ok(ReleaseOutcome::AlreadyGone { .. }) => Ok(()),
        other => Err(format!("release of a lost lease: {other:?}")),
    }
}

/// **Dropping the guard releases the lease**: right after the drop, another party acquires
/// within 2 s (the release runs in the background; without it a 15 s lease would block
/// for 15 s, an infinite one for ever).
pub async fn guard_releases_on_drop<L: Leasable>(target: L, other: L) -> Result<(), String> {
    let guard = guard_on(target, &other).await?;
    drop(guard);
    acquires_within(&other, Duration::from_secs(2))
        .await
        .map(|_| ())
}

/// A deliberately broken adapter: `L` whose renew and release answer success without
/// sending anything. [`guard_renews_past_several_periods`] and [`guard_releases_on_drop`]
/// must fail on it.
#[derive(Clone)]
pub struct SilentNoop<L>(pub L);

impl<L: Leasable> Leasable for SilentNoop<L> {
    fn lease_target(&self) -> String {
        format!("broken {}", self.0.lease_target())
    }

    fn lease_capabilities(&self) -> azstore::lease::LeaseCapabilities {
        self.0.lease_capabilities()
    }

    async fn lease_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
    ) -> azstore::Result<azstore::lease::LeaseResult> {
        self.0.lease_acquire(duration, proposed).await
    }

    async fn lease_renew(&self, id: &LeaseId) -> azstore::Result<azstore::lease::LeaseResult> {
        Ok(azstore::lease::LeaseResult::new(id.clone(), None))
    }

    async fn lease_change(
        &self,
        id: &LeaseId,
        proposed: &LeaseId,
    ) -> azstore::Result<azstore::lease::LeaseResult> {
        self.0.lease_change(id, proposed).await
    }

    async fn lease_release(&self, _: &LeaseId) -> azstore::Result<azstore::lease::LeaseReleased> {
        Ok(azstore::lease::LeaseReleased::new(None))
    }

    async fn lease_break(
        &self,
        period: Option<BreakPeriod>,
    ) -> azstore::Result<azstore::lease::LeaseBroken> {
        self.0.lease_break(period).await
    }
}
