//! [`Semaphore<T>`]: at most N holders, each with a fenced [`Permit`], written once over the
//! lock engine, so every backend of [`LockTarget`] has it with no code of its own.
//!
//! The representation: N **slot locks** (`<name>/permits/<k>`), each a full lock of the
//! backend (its lease, its loss-before-expiry guard), and one **fence lock** (`<name>/fence`)
//! that is held for a moment by every acquisition to draw the permit's fencing token. A
//! permit is one held slot; since each slot admits one holder, at most N permits are held.
//! The permit's token is the token of the fence lock's acquisition that followed taking the
//! slot, so permit tokens strictly increase in the order permits are granted (see
//! [`Permit::fencing_token`]).

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::engine::{Waiting, by_deadline};
use super::line::{LINE_PLACES, Line, Standing, Turn};
use super::owner::{CLOSED_SLOT_LABEL, is_closed};
use super::{
    Attempt, Held, Lock, LockClaim, LockOptions, LockOwner, LockStatus, LockTarget, PollSleep,
    WaitRounds, wakeup_for,
};
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, Result};
use crate::leader::LockFactory;
use crate::lease::{
    BreakPeriod, GuardState, Leasable, LeaseBroken, LeaseDuration, LeaseGuard, LeaseLoss,
    ReleaseOutcome,
};

/// The most slots a [`Semaphore`] (or an [`RwLock`](super::RwLock)'s readers) may have.
pub const MAX_PERMITS: u32 = 1024;

/// A distributed semaphore: at most N holders at once, each with a [`Permit`] that renews its
/// lease, reports its loss before the lease can expire, releases on drop and carries a fencing
/// token larger than every earlier permit's. Written once over [`LockTarget`], so it works on
/// every backend (Blob, Redis, Cosmos DB, a target of your own); cheap to clone.
///
/// Built from a lock factory — `azstore::blob::BlobLocks`, `azstore::redis::RedisLocks`,
/// `azstore::cosmos::CosmosLocks` — whose [`LockOptions`] (lease duration, renewals, polling)
/// every slot uses:
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::blob::BlobLocks;
/// use azstore::lock::{LockOptions, Semaphore};
///
/// // At most 4 concurrent exports across the fleet.
/// let exports = Semaphore::new(&BlobLocks::new(container, LockOptions::default()), "exports", 4, "exporter")?;
/// if let Some(permit) = exports.acquire_within(Duration::from_secs(60)).await? {
///     let token = permit.fencing_token();
///     tokio::select! {
///         loss = permit.lost() => eprintln!("permit lost, stopping: {loss}"),
///         _ = async { /* the export, passing `token` along */ } => {}
///     }
///     permit.release().await?;
/// }
/// # Ok(()) }
/// ```
///
/// # Records and cost
///
/// Slot `k` is the lock named `<name>/permits/<k>`, the fence the lock `<name>/fence` and
/// place `k` of the waiting line the lock `<name>/line/<k>` (on Cosmos DB, the factory turns
/// `/` into `:`). Each round a waiter reads the line and the slots in one bulk status read and
/// tries a free slot only in its turn; otherwise it holds a place in the line. It sleeps the
/// slots' [poll interval](LockOptions::poll_interval) between rounds (the shortest near the
/// front of the line) and is woken by a release in this process. An acquisition that finds a
/// free slot costs the read, the slot's acquire and an acquire and a release of the fence
/// lock; a holder renews one lease (every third of its duration).
///
/// # Fair waiting
///
/// Waiters take permits in the order they took their places in the line: a waiter is passed
/// over by at most N − 1 later arrivals, only when several permits free at once; a holder that
/// asks again goes to the end of the line. What is not ordered (arrivals within one round trip
/// of each other, more than [`LINE_PLACES`] waiters, clocks of different hosts) and the price
/// in throughput are in docs/locks.md; [`unordered`](Self::unordered) drops the line.
///
/// # Changing N
///
/// N is the number of slots a handle was built with minus the slots closed by
/// [`set_permits`](Self::set_permits). Lowering N closes the slots at and above the new N:
/// each is taken, once its holder has left, with a lease nobody renews and that never
/// expires, so it is never granted again (the slots drain; their holders are not cut off —
/// use [`break_permit`](Self::break_permit) for that). Raising it again reopens closed slots
/// below the new N. Handles built with more slots than any administrator closed would use
/// the extra slots: build every handle with the same (largest) N and change N only through
/// `set_permits`.
#[derive(Clone)]
pub struct Semaphore<T: LockTarget> {
    fence: Lock<T>,
    slots: Arc<[Lock<T>]>,
    line: Option<Line<T>>,
    options: LockOptions,
    identity: String,
}

impl<T: LockTarget> fmt::Debug for Semaphore<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Semaphore")
            .field("fence", &self.fence.target())
            .field("permits", &self.slots.len())
            .finish_non_exhaustive()
    }
}

/// One round over the slots.
enum Round<L: Leasable> {
    /// A permit.
    Got(Box<Permit<L>>),
    /// Every slot answered "held" (or the gate of an [`RwLock`](super::RwLock) was held).
    Busy,
    /// A slot, the gate or the fence could not be asked.
    Failed(Error),
    /// Cut off at the deadline before any answer.
    Cut,
}

impl<T: LockTarget> Semaphore<T> {
    /// A semaphore of `permits` slots named `name`, made by `locks` (each slot's owner
    /// labelled `label`). Validated here; nothing is sent. `permits` is 1 to
    /// [`MAX_PERMITS`].
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lock::{LockOptions, Semaphore};
    /// use azstore::redis::RedisLocks;
    /// let gpus = Semaphore::new(&RedisLocks::new(redis, LockOptions::default()), "gpu-jobs", 8, "trainer")?;
    /// # let _ = gpus; Ok(()) }
    /// ```
    pub fn new<F>(locks: &F, name: &str, permits: u32, label: &str) -> Result<Semaphore<T>>
    where
        F: LockFactory<Lock = Lock<T>>,
    {
        check_permits(permits)?;
        check_name(name)?;
        let fence = locks.make(&format!("{name}/fence"), label)?;
        let slots = (0..permits)
            .map(|k| locks.make(&format!("{name}/permits/{k}"), label))
            .collect::<Result<Vec<_>>>()?;
        Semaphore::from_locks(fence, slots)?.with_line(line_places(
            locks,
            &format!("{name}/line"),
            label,
        )?)
    }

    /// A semaphore over locks of your own naming: one slot per lock in `slots`, and `fence`
    /// drawing the permits' fencing tokens (a lock used for nothing else). The slots' options
    /// (the first slot's poll interval and local wake-up) drive the wait.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::lock::{Semaphore};
    /// use azstore::blob::{BlobLock};
    /// let slots = (0..3)
    ///     .map(|k| BlobLock::new(container.clone(), &format!("pool/slot-{k}")))
    ///     .collect::<azstore::Result<Vec<_>>>()?;
    /// let pool = Semaphore::from_locks(BlobLock::new(container, "pool/fence")?, slots)?;
    /// # let _ = pool; Ok(()) }
    /// ```
    pub fn from_locks(fence: Lock<T>, slots: Vec<Lock<T>>) -> Result<Semaphore<T>> {
        check_permits(u32::try_from(slots.len()).unwrap_or(u32::MAX))?;
        let options = slots[0].options().clone();
        // The fence is held for a few requests: its waiters look again soon.
        let fence = Lock::from_target(
            fence.target().clone(),
            fence
                .options()
                .clone()
                .poll_interval(Duration::from_millis(5), Duration::from_millis(100)),
        )?;
        // Releases wake the semaphore's waiters (below), not each slot's.
        let slots = slots
            .into_iter()
            .map(|s| {
                let o = s.options().clone().local_wakeup(false);
                Lock::from_target(s.target().clone(), o)
            })
            .collect::<Result<Vec<_>>>()?;
        let identity = format!("{}#permits", fence.target().identity());
        Ok(Semaphore {
            fence,
            slots: slots.into(),
            line: None,
            options,
            identity,
        })
    }

    /// This semaphore with a waiting line of the given place locks (locks used for nothing
    /// else; [`new`](Self::new) makes [`LINE_PLACES`] of them, `<name>/line/<k>`): waiters then
    /// take permits in the order they arrived (see [`acquire_within`](Self::acquire_within)).
    /// Without a line — a semaphore built by [`from_locks`](Self::from_locks) alone — waiting
    /// is unordered.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::blob::BlobLock;
    /// use azstore::lock::Semaphore;
    /// let lock = |name: String| BlobLock::new(container.clone(), &name);
    /// let slots = (0..3).map(|k| lock(format!("pool/slot-{k}"))).collect::<azstore::Result<Vec<_>>>()?;
    /// let places = (0..8).map(|k| lock(format!("pool/line-{k}"))).collect::<azstore::Result<Vec<_>>>()?;
    /// let pool = Semaphore::from_locks(lock("pool/fence".into())?, slots)?.with_line(places)?;
    /// # let _ = pool; Ok(()) }
    /// ```
    pub fn with_line(mut self, places: Vec<Lock<T>>) -> Result<Semaphore<T>> {
        self.line = Some(Line::new(places)?);
        Ok(self)
    }

    /// This semaphore without its waiting line: waiters take a free permit whenever they see
    /// one, in no order. More holds per second under contention (the benchmark in
    /// docs/locks.md: 71–82 % of the ideal instead of 59–68 %), but a waiter can be passed over
    /// by any number of later arrivals. Use it when throughput matters more than waiting in
    /// turn; every handle onto one semaphore should choose alike.
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lock::{LockOptions, Semaphore};
    /// use azstore::redis::RedisLocks;
    /// let crawl = Semaphore::new(&RedisLocks::new(redis, LockOptions::default()), "crawl", 32, "crawler")?.unordered();
    /// # let _ = crawl; Ok(()) }
    /// ```
    pub fn unordered(mut self) -> Semaphore<T> {
        self.line = None;
        self
    }

    /// The number of slots of this handle (closed ones included).
    ///
    /// ```no_run
    /// # fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) {
    /// println!("{} slots", s.slots());
    /// # }
    /// ```
    pub fn slots(&self) -> u32 {
        self.slots.len() as u32
    }

    /// The fence lock, whose tokens the permits carry.
    ///
    /// ```no_run
    /// # fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) {
    /// println!("fence: {:?}", s.fence().target());
    /// # }
    /// ```
    pub fn fence(&self) -> &Lock<T> {
        &self.fence
    }

    pub(crate) fn slot_locks(&self) -> &[Lock<T>] {
        &self.slots
    }

    pub(crate) fn wakeup(&self) -> Option<Arc<Notify>> {
        self.options
            .local_wakeup
            .then(|| wakeup_for(self.identity.clone()))
    }

    /// One round: a permit if a slot is free and no waiter in the line is due it, else `None`
    /// (it takes no place in the line). An unreachable service is an error.
    ///
    /// ```no_run
    /// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// match s.try_acquire().await? {
    ///     Some(permit) => permit.release().await.map(drop)?,
    ///     None => println!("all permits taken; skipping this run"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_acquire(&self) -> Result<Option<Permit<T::Lease>>> {
        let proposed: Vec<LeaseId> = self.slots.iter().map(|_| LeaseId::random()).collect();
        match self
            .round(None, &proposed, None, &mut Standing::trying())
            .await
        {
            Round::Got(p) => Ok(Some(*p)),
            Round::Busy => Ok(None),
            Round::Failed(e) => Err(e),
            Round::Cut => unreachable!("no deadline"),
        }
    }

    /// Waits at most `wait` for a permit: `Some` once one is held, `None` when every slot was
    /// still held at the end. The same wait as [`Lock::acquire_within`]: every request is cut
    /// off at the deadline, transient failures are ridden out until then, and a service that
    /// could not be reached at the end is an **error**, never `None`.
    ///
    /// ```no_run
    /// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// if let Some(permit) = s.acquire_within(Duration::from_secs(30)).await? {
    ///     println!("slot {}, token {}", permit.slot(), permit.fencing_token());
    /// } // dropped: released in the background
    /// # Ok(()) }
    /// ```
    pub async fn acquire_within(&self, wait: Duration) -> Result<Option<Permit<T::Lease>>> {
        let kind = super::telemetry::lock_kind::<T::Lease>();
        super::telemetry::lock_wait(kind, &self.identity, self.wait_for(wait, None)).await
    }

    /// The wait loop of [`acquire_within`](Self::acquire_within); with a `gate` (an
    /// [`RwLock`](super::RwLock)'s writer lock) a round takes no slot while the gate is held.
    pub(crate) async fn wait_for(
        &self,
        wait: Duration,
        gate: Option<&Lock<T>>,
    ) -> Result<Option<Permit<T::Lease>>> {
        let proposed: Vec<LeaseId> = self.slots.iter().map(|_| LeaseId::random()).collect();
        let mut rounds = WaitRounds::new(wait, &self.options, self.wakeup());
        let mut waiting = Waiting::default();
        // The place in the line, once taken, is released when the wait ends (dropped).
        let mut standing = Standing::waiting();
        while rounds.next().await.is_some() {
            match self
                .round(rounds.deadline(), &proposed, gate, &mut standing)
                .await
            {
                Round::Got(p) => return Ok(Some(*p)),
                Round::Cut => {}
                Round::Busy => waiting.busy(),
                Round::Failed(e) => waiting.failed(e, "a permit")?,
            }
            if standing.near_front(self.slots.len()) {
                rounds.hurry();
            }
        }
        waiting.give_up(wait)
    }

    /// One round. With a line: one look at the line, the slots and the gate, then the free
    /// slots if it is this waiter's turn (else a place in the line). Without: the gate (if
    /// any), then every slot once from a random start. On a slot taken, the gate again and
    /// the fence token.
    async fn round(
        &self,
        deadline: Option<Instant>,
        proposed: &[LeaseId],
        gate: Option<&Lock<T>>,
        standing: &mut Standing<T::Lease>,
    ) -> Round<T::Lease> {
        if let Some(line) = &self.line {
            let wake = self.wakeup();
            return match line
                .round(deadline, &self.slots, proposed, wake, gate, standing)
                .await
            {
                Turn::Took(held, k) => self.admit(*held, k, deadline, gate).await,
                Turn::Busy => Round::Busy,
                Turn::Failed(e) => Round::Failed(e),
                Turn::Cut => Round::Cut,
            };
        }
        if let Some(g) = gate {
            match by_deadline(deadline, g.status()).await {
                None => return Round::Cut,
                Some(Err(e)) => return Round::Failed(e),
                Some(Ok(s)) if s.locked => return Round::Busy,
                Some(Ok(_)) => {}
            }
        }
        let n = self.slots.len();
        let start = rand::random_range(0..n);
        let wake = self.wakeup();
        let mut answered = false;
        let mut failed: Option<Error> = None;
        for i in 0..n {
            let k = (start + i) % n;
            let slot = &self.slots[k];
            match slot
                .attempt_waking_by_deadline(deadline, &proposed[k], wake.clone())
                .await
            {
                None => break,
                Some(Ok(None)) => answered = true,
                Some(Err(e)) if e.is_retryable() => {
                    answered = true;
                    failed = Some(e);
                }
                Some(Err(e)) => return Round::Failed(e),
                Some(Ok(Some(held))) => return self.admit(held, k, deadline, gate).await,
            }
        }
        match (failed, answered) {
            (Some(e), _) => Round::Failed(e),
            (None, true) => Round::Busy,
            (None, false) => Round::Cut,
        }
    }

    /// A slot is held: check the gate again (a writer that came in meanwhile wins), then draw
    /// the fencing token. On any failure the slot is released.
    async fn admit(
        &self,
        held: Held<T::Lease>,
        slot: usize,
        deadline: Option<Instant>,
        gate: Option<&Lock<T>>,
    ) -> Round<T::Lease> {
        if let Some(g) = gate {
            let look = by_deadline(deadline, g.status()).await;
            if !matches!(look, Some(Ok(LockStatus { locked: false, .. }))) {
                let _ = held.release().await;
                return match look {
                    None => Round::Cut,
                    Some(Err(e)) => Round::Failed(e),
                    Some(Ok(_)) => Round::Busy,
                };
            }
        }
        match self.draw_token(deadline).await {
            Ok(Some(token)) => Round::Got(Box::new(Permit {
                held,
                slot: slot as u32,
                fencing_token: token,
            })),
            other => {
                let _ = held.release().await;
                match other {
                    Ok(_) => Round::Busy,
                    Err(e) => Round::Failed(e),
                }
            }
        }
    }

    /// The next fencing token of the semaphore: one acquisition of the fence lock (released at
    /// once). `None` when the fence stayed held until the deadline.
    pub(crate) async fn draw_token(&self, deadline: Option<Instant>) -> Result<Option<u64>> {
        let left = deadline.map_or(Duration::MAX, |d| {
            d.saturating_duration_since(Instant::now())
        });
        let Some(fence) = self.fence.acquire_within(left).await? else {
            return Ok(None);
        };
        let token = fence.fencing_token();
        // A failed release leaves the fence to its lease; the token is ours either way.
        let _ = fence.release().await;
        Ok(Some(token))
    }

    /// Who holds permits now: one entry per held slot (owner, label, time left where the
    /// service keeps it), the closed slots, and the latest permit's fencing token. Never takes
    /// a permit.
    ///
    /// ```no_run
    /// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// let status = s.status().await?;
    /// println!("{} of {} permits held, {} waiting", status.holders.len(), status.permits, status.waiting);
    /// for h in &status.holders {
    ///     println!("slot {}: {:?} ({:?} left)", h.slot, h.owner, h.remaining);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<SemaphoreStatus> {
        let reads = futures_util::future::join_all(self.slots.iter().map(|s| s.status())).await;
        let fence = self.fence.status().await?;
        let waiting = match &self.line {
            Some(line) => {
                let places: Vec<&Lock<T>> = line.places().iter().collect();
                let read = Lock::status_many(&places).await?;
                read.statuses.iter().filter(|s| s.locked).count() as u32
            }
            None => 0,
        };
        let mut holders = Vec::new();
        let mut closed = Vec::new();
        for (k, read) in reads.into_iter().enumerate() {
            let s = read?;
            if is_closed(&s) {
                closed.push(k as u32);
            } else if s.locked {
                holders.push(PermitHolder {
                    slot: k as u32,
                    owner: s.owner,
                    remaining: s.remaining,
                    breaking: s.breaking,
                    version: s.version,
                });
            }
        }
        Ok(SemaphoreStatus {
            permits: self.slots() - closed.len() as u32,
            slots: self.slots(),
            holders,
            closed,
            fencing_token: fence.fencing_token,
            waiting,
        })
    }

    /// Breaks the permit in `slot` (administrative), with [`Lock::break_lock`]'s meaning:
    /// `None` lets the holder's lease run out first, so its [`Permit`] reports the loss before
    /// anyone else can take the slot; `Some(period)` frees the slot after `period`. A closed
    /// slot broken this way is open again. A slot beyond this handle's is an `InvalidInput`
    /// error.
    ///
    /// ```no_run
    /// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// for h in s.status().await?.holders {
    ///     let broken = s.break_permit(h.slot, None).await?;
    ///     println!("slot {} free in {:?} at the latest", h.slot, broken.remaining);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn break_permit(
        &self,
        slot: u32,
        period: Option<BreakPeriod>,
    ) -> Result<LeaseBroken> {
        let lock = self.slots.get(slot as usize).ok_or_else(|| {
            Error::invalid_input(format!(
                "slot {slot} is out of range: the semaphore has {} slots",
                self.slots.len()
            ))
        })?;
        lock.break_lock(period).await
    }

    /// Sets the number of permits to `permits` (administrative; at most [`slots`](Self::slots)):
    /// slots at and above it are closed — each taken, once its holder has released it or its
    /// lease ran out, with a lease nobody renews and that never expires — and closed slots
    /// below it are opened again. Waits at most `wait` for holders to drain; `Ok(true)` when
    /// every slot is as asked, `Ok(false)` when some holder still held its slot at the end
    /// (call it again: nobody new is admitted to a slot being closed only once it is closed,
    /// so until then the old N still applies).
    ///
    /// ```no_run
    /// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// // Down from 8 to 2 concurrent jobs, waiting up to 10 minutes for running ones to finish.
    /// if !s.set_permits(2, Duration::from_secs(600)).await? {
    ///     eprintln!("some jobs still run on the closed slots");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn set_permits(&self, permits: u32, wait: Duration) -> Result<bool> {
        if permits > self.slots() {
            return Err(Error::invalid_input(format!(
                "{permits} permits on a semaphore handle of {} slots: build the handle with at \
                 least as many slots",
                self.slots()
            )));
        }
        let deadline = Instant::now().checked_add(wait);
        let n = permits as usize;
        for slot in &self.slots[..n] {
            let s = slot.status().await?;
            if is_closed(&s) {
                slot.break_lock(Some(BreakPeriod::immediate())).await?;
            }
        }
        let closing = futures_util::future::join_all(
            self.slots[n..]
                .iter()
                .map(|slot| close_slot(slot, deadline, &self.options)),
        )
        .await;
        let mut all = true;
        for c in closing {
            all &= c?;
        }
        Ok(all)
    }
}

/// The [`LINE_PLACES`] place locks `<prefix>/<k>` of a waiting line made by `locks`.
pub(crate) fn line_places<F, T>(locks: &F, prefix: &str, label: &str) -> Result<Vec<Lock<T>>>
where
    T: LockTarget,
    F: LockFactory<Lock = Lock<T>>,
{
    (0..LINE_PLACES)
        .map(|k| locks.make(&format!("{prefix}/{k}"), label))
        .collect()
}

fn check_permits(permits: u32) -> Result<()> {
    if permits == 0 || permits > MAX_PERMITS {
        return Err(Error::invalid_input(format!(
            "a semaphore has 1 to {MAX_PERMITS} permits, not {permits}"
        )));
    }
    Ok(())
}

fn check_name(name: &str) -> Result<()> {
    if name.is_empty() {
        return Err(Error::invalid_input("a semaphore needs a non-empty name"));
    }
    Ok(())
}

/// Closes one slot: takes it with an infinite lease that is never renewed (nor released),
/// waiting for its holder until `deadline`. `Ok(false)` when it was still held then.
async fn close_slot<T: LockTarget>(
    slot: &Lock<T>,
    deadline: Option<Instant>,
    options: &LockOptions,
) -> Result<bool> {
    let proposed = LeaseId::random();
    let claim = LockClaim::new(
        proposed.clone(),
        LeaseDuration::Infinite,
        LockOwner::here(Some(CLOSED_SLOT_LABEL.to_string())),
    );
    let mut poll = PollSleep::new(options);
    loop {
        match by_deadline(deadline, slot.status()).await {
            None => return Ok(false),
            Some(Ok(s)) if is_closed(&s) => return Ok(true),
            Some(Ok(_)) => {}
            Some(Err(e)) if e.is_retryable() => {}
            Some(Err(e)) => return Err(e),
        }
        match by_deadline(deadline, slot.target().try_lock(&claim)).await {
            // The lease is not adopted by a guard: nobody renews or releases it.
            Some(Ok(Attempt::Acquired { .. })) => return Ok(true),
            Some(Ok(Attempt::Busy)) => {}
            Some(Err(e)) if e.is_retryable() => {}
            Some(Err(e)) => return Err(e),
            None => {
                let target = slot.target().clone();
                tokio::spawn(async move { target.abandon(&proposed).await });
                return Ok(false);
            }
        }
        if deadline.is_some_and(|d| Instant::now() >= d) {
            return Ok(false);
        }
        poll.sleep(deadline, None).await;
    }
}

/// What [`Semaphore::status`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SemaphoreStatus {
    /// The number of permits: the slots minus the closed ones.
    pub permits: u32,
    /// The slots of the handle that read the status.
    pub slots: u32,
    /// One entry per held slot.
    pub holders: Vec<PermitHolder>,
    /// The slots closed by [`Semaphore::set_permits`].
    pub closed: Vec<u32>,
    /// The fencing token of the latest permit (the fence lock's latest token).
    pub fencing_token: Option<u64>,
    /// The waiters holding a place in the line (0 for a semaphore without a line).
    pub waiting: u32,
}

/// One holder in a [`SemaphoreStatus`].
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PermitHolder {
    /// The slot.
    pub slot: u32,
    /// Who took it (host, pid, label, when).
    pub owner: Option<LockOwner>,
    /// Time left on the slot's lease where the service keeps it (Redis); `None` elsewhere.
    pub remaining: Option<Duration>,
    /// Whether the slot is being broken.
    pub breaking: bool,
    /// What every renewal changes, where contenders time leases (Cosmos DB `_etag`).
    pub version: Option<String>,
}

/// A permit of a [`Semaphore`] (or a read hold of an [`RwLock`](super::RwLock)): the renewed
/// lease of one slot plus a fencing token. Release it with [`release`](Self::release);
/// dropping it releases in the background (and wakes waiters in this process either way).
///
/// ```no_run
/// # async fn demo(s: azstore::lock::Semaphore<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
/// use std::time::Duration;
/// if let Some(permit) = s.acquire_within(Duration::from_secs(30)).await? {
///     tokio::select! {
///         loss = permit.lost() => eprintln!("lost the permit: {loss}"),
///         _ = tokio::time::sleep(Duration::from_secs(5)) => println!("work done"),
///     }
///     permit.release().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping a permit releases it at once (in the background): keep it while the work runs"]
pub struct Permit<L: Leasable> {
    held: Held<L>,
    slot: u32,
    fencing_token: u64,
}

impl<L: Leasable> fmt::Debug for Permit<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Permit")
            .field("slot", &self.slot)
            .field("fencing_token", &self.fencing_token)
            .field("lease", self.held.lease())
            .finish()
    }
}

impl<L: Leasable> Permit<L> {
    /// The fencing token of this permit: larger than the token of every permit of the same
    /// semaphore granted before it (and, for an [`RwLock`](super::RwLock), of every earlier
    /// read and write hold). Each permit's token is the token of one acquisition of the
    /// semaphore's fence lock, drawn after its slot was taken and before the permit is handed
    /// out; the fence lock's tokens strictly increase across its holders (the lock's
    /// guarantee, [Fencing tokens](crate::lock#fencing-tokens)), and a permit granted after
    /// another drew its token after the other's was drawn. Tokens of permits whose
    /// acquisitions overlapped are ordered by when they drew them.
    ///
    /// Several permits are held at once, so a protected resource checks the token per slot:
    /// refuse a write whose token is smaller than the largest seen for the same
    /// [`slot`](Self::slot).
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("slot {} token {}", p.slot(), p.fencing_token());
    /// # }
    /// ```
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The slot this permit holds (0 to N-1).
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("slot {}", p.slot());
    /// # }
    /// ```
    pub fn slot(&self) -> u32 {
        self.slot
    }

    /// The slot lease's id.
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("{}", p.lease_id());
    /// # }
    /// ```
    pub fn lease_id(&self) -> &LeaseId {
        self.held.lease_id()
    }

    /// `Conditions::lease(lease_id)`, for writes to the slot's lock blob.
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// let _ = p.conditions();
    /// # }
    /// ```
    pub fn conditions(&self) -> Conditions {
        self.held.conditions()
    }

    /// The guard renewing the slot's lease.
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("renewed last at {:?}", p.lease().last_renewed());
    /// # }
    /// ```
    pub fn lease(&self) -> &LeaseGuard<L> {
        self.held.lease()
    }

    /// True while the permit is (certainly) held; see [`Held::is_held`].
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// if !p.is_held() { eprintln!("permit lost"); }
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.held.is_held()
    }

    /// `Ok(())` while held, else an error with `lease_lost() == true`; see [`Held::check`].
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// p.check()?;
    /// # Ok(()) }
    /// ```
    pub fn check(&self) -> Result<()> {
        self.held.check()
    }

    /// The lease state; see [`Held::state`].
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("{:?}", p.state());
    /// # }
    /// ```
    pub fn state(&self) -> GuardState {
        self.held.state()
    }

    /// The lease's loss deadline; see [`Held::deadline`].
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// println!("{:?}", p.deadline());
    /// # }
    /// ```
    pub fn deadline(&self) -> Option<Duration> {
        self.held.deadline()
    }

    /// Completes when the permit is (possibly) lost, before its lease can expire on the
    /// service; see [`Held::lost`].
    ///
    /// ```no_run
    /// # async fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// let loss = p.lost().await;
    /// eprintln!("stopping: {loss}");
    /// # }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        self.held.lost()
    }

    /// State changes of the lease; see [`Held::subscribe`].
    ///
    /// ```no_run
    /// # fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) {
    /// let states = p.subscribe();
    /// # let _ = states;
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<GuardState> {
        self.held.subscribe()
    }

    /// Releases the permit (and wakes a waiter in this process).
    ///
    /// ```no_run
    /// # async fn demo(p: azstore::lock::Permit<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// p.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(self) -> Result<ReleaseOutcome> {
        self.held.release().await
    }
}

/// The loss of any of `holds`: what a guard holding several leases reports.
pub(crate) fn first_loss<L: Leasable>(
    holds: &[&Held<L>],
) -> impl Future<Output = LeaseLoss> + Send + 'static + use<L> {
    let losses: Vec<Pin<Box<dyn Future<Output = LeaseLoss> + Send>>> =
        holds.iter().map(|h| Box::pin(h.lost()) as _).collect();
    async move { futures_util::future::select_all(losses).await.0 }
}
