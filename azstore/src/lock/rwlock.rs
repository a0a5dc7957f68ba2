//! [`RwLock<T>`]: many readers or one writer, fenced, with writer preference — written once
//! over the lock engine, on every backend.
//!
//! The representation: the readers are a [`Semaphore`] of `max_readers` slots
//! (`<name>/readers/<k>`); the writer lock (`<name>/writer`) is the gate; both draw their
//! fencing tokens from one fence lock (`<name>/fence`). A writer takes the gate, then **every**
//! reader slot, then a token; a reader takes one slot, then looks at the gate and backs off
//! (releasing the slot) while a writer holds or waits behind it. Exclusion rests on the slot
//! locks alone (a writer holds every slot a reader could hold); the gate only gives writers
//! preference.

use std::fmt;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

use super::engine::Waiting;
use super::line::{Line, Standing, Turn};
use super::semaphore::{Permit, PermitHolder, first_loss, line_places};
use super::{Held, Lock, LockStatus, LockTarget, Semaphore, WaitRounds};
use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::leader::LockFactory;
use crate::lease::{GuardState, Leasable, LeaseLoss, ReleaseOutcome};

/// A distributed reader-writer lock: any number of readers (up to `max_readers` at once) or
/// one writer; fenced; writer-preferring; on every backend. Cheap to clone.
///
/// * [`read_within`](Self::read_within) gives a [`Permit`] (one reader slot), the same guard as
///   a semaphore's.
/// * [`write_within`](Self::write_within) gives a [`WriteGuard`], which holds the writer lock
///   and every reader slot.
/// * **Writer preference**: once a writer holds the writer lock (it takes it before waiting
///   for the readers to leave), no new reader is admitted; it waits at most for the readers
///   already in. Readers admitted meanwhile back off.
/// * **Fair waiting**: readers wait in the readers' line (`<name>/line/<k>`), writers in the
///   writers' line (`<name>/writer-line/<k>`), each served in the order they arrived (see
///   [`Semaphore`]'s fair waiting): a writer is passed over by no later writer.
/// * **Fencing**: every read and write hold draws its token from one fence lock after it is
///   admitted, so a writer's token is larger than that of every read or write hold granted
///   before it.
///
/// ```no_run
/// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::lock::{LockOptions, RwLock};
/// use azstore::redis::RedisLocks;
///
/// let snapshot = RwLock::new(&RedisLocks::new(redis, LockOptions::default()), "snapshot", 16, "svc")?;
/// if let Some(read) = snapshot.read_within(Duration::from_secs(10)).await? {
///     println!("reading under token {}", read.fencing_token());
///     read.release().await?;
/// }
/// if let Some(write) = snapshot.write_within(Duration::from_secs(60)).await? {
///     println!("rewriting under token {}", write.fencing_token());
///     write.release().await?;
/// }
/// # Ok(()) }
/// ```
///
/// # Cost
///
/// A read hold costs what a permit costs (a slot, the fence); a write hold takes
/// `max_readers + 2` locks (the gate, every slot, the fence) and renews `max_readers + 1`
/// leases while held — keep `max_readers` to what you need.
#[derive(Clone)]
pub struct RwLock<T: LockTarget> {
    readers: Semaphore<T>,
    gate: Lock<T>,
    writers: Line<T>,
}

impl<T: LockTarget> fmt::Debug for RwLock<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RwLock")
            .field("gate", self.gate.target())
            .field("max_readers", &self.readers.slots())
            .finish_non_exhaustive()
    }
}

impl<T: LockTarget> RwLock<T> {
    /// A reader-writer lock named `name`, made by `locks`, admitting up to `max_readers`
    /// readers at once (1 to [`MAX_PERMITS`](super::MAX_PERMITS)); owners labelled `label`.
    /// Validated here; nothing is sent.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::blob::BlobLocks;
    /// use azstore::lock::{LockOptions, RwLock};
    /// let rw = RwLock::new(&BlobLocks::new(container, LockOptions::default()), "catalog", 8, "api")?;
    /// # let _ = rw; Ok(()) }
    /// ```
    pub fn new<F>(locks: &F, name: &str, max_readers: u32, label: &str) -> Result<RwLock<T>>
    where
        F: LockFactory<Lock = Lock<T>>,
    {
        if name.is_empty() {
            return Err(Error::invalid_input(
                "a reader-writer lock needs a non-empty name",
            ));
        }
        if max_readers == 0 || max_readers > super::MAX_PERMITS {
            return Err(Error::invalid_input(format!(
                "a reader-writer lock admits 1 to {} readers, not {max_readers}",
                super::MAX_PERMITS
            )));
        }
        let fence = locks.make(&format!("{name}/fence"), label)?;
        let slots = (0..max_readers)
            .map(|k| locks.make(&format!("{name}/readers/{k}"), label))
            .collect::<Result<Vec<_>>>()?;
        let gate = locks.make(&format!("{name}/writer"), label)?;
        Ok(RwLock {
            readers: Semaphore::from_locks(fence, slots)?.with_line(line_places(
                locks,
                &format!("{name}/line"),
                label,
            )?)?,
            gate,
            writers: Line::new(line_places(locks, &format!("{name}/writer-line"), label)?)?,
        })
    }

    /// The most readers admitted at once.
    ///
    /// ```no_run
    /// # fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) {
    /// println!("{}", rw.max_readers());
    /// # }
    /// ```
    pub fn max_readers(&self) -> u32 {
        self.readers.slots()
    }

    /// Waits at most `wait` for a read hold: `Some` once admitted, `None` when a writer (or
    /// `max_readers` readers) still held it at the end. The wait of
    /// [`Semaphore::acquire_within`]: an unreachable service is an error, never `None`.
    ///
    /// ```no_run
    /// # async fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// if let Some(read) = rw.read_within(Duration::from_secs(5)).await? {
    ///     read.check()?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read_within(&self, wait: Duration) -> Result<Option<Permit<T::Lease>>> {
        self.readers.wait_for(wait, Some(&self.gate)).await
    }

    /// Waits at most `wait` for the write hold: the writer lock first (from then on no new
    /// reader is admitted), then every reader slot as its reader leaves, then the fencing
    /// token. `None` when another writer held the writer lock, or a reader its slot, until
    /// the end; everything taken is released again then. An unreachable service is an error.
    ///
    /// ```no_run
    /// # async fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// match rw.write_within(Duration::from_secs(60)).await? {
    ///     Some(write) => write.release().await.map(drop)?,
    ///     None => eprintln!("readers or another writer held it for a minute"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn write_within(&self, wait: Duration) -> Result<Option<WriteGuard<T::Lease>>> {
        let deadline = Instant::now().checked_add(wait);
        let left = || {
            deadline.map_or(Duration::MAX, |d| {
                d.saturating_duration_since(Instant::now())
            })
        };
        let Some(gate) = self.gate_within(wait).await? else {
            return Ok(None);
        };
        // Every slot at once: the writer waits for the slowest reader, not for their sum.
        let waits = self
            .readers
            .slot_locks()
            .iter()
            .map(|slot| slot.acquire_within(left()));
        let answers = futures_util::future::join_all(waits).await;
        let mut slots = Vec::with_capacity(answers.len());
        let mut outcome: Result<bool> = Ok(true);
        for a in answers {
            match a {
                Ok(Some(h)) => slots.push(h),
                Ok(None) => {
                    if matches!(outcome, Ok(true)) {
                        outcome = Ok(false);
                    }
                }
                Err(e) => {
                    if outcome.is_ok() {
                        outcome = Err(e);
                    }
                }
            }
        }
        let token = match outcome {
            Ok(true) => self.readers.draw_token(deadline).await,
            Ok(false) => Ok(None),
            Err(e) => Err(e),
        };
        let wake = self.readers.wakeup();
        match token {
            Ok(Some(fencing_token)) => Ok(Some(WriteGuard {
                inner: Some((gate, slots)),
                fencing_token,
                wake,
            })),
            other => {
                let _ = release_all(gate, slots, wake).await;
                other.map(|_| None)
            }
        }
    }

    /// Waits at most `wait` for the writer lock, in the writers' line: writers take it in the
    /// order they arrived.
    async fn gate_within(&self, wait: Duration) -> Result<Option<Held<T::Lease>>> {
        let gate = std::slice::from_ref(&self.gate);
        let proposed = [LeaseId::random()];
        let wake = self.gate.wakeup();
        let mut rounds = WaitRounds::new(wait, self.gate.options(), wake.clone());
        let mut waiting = Waiting::default();
        let mut standing = Standing::waiting();
        while rounds.next().await.is_some() {
            match self
                .writers
                .round(
                    rounds.deadline(),
                    gate,
                    &proposed,
                    wake.clone(),
                    None,
                    &mut standing,
                )
                .await
            {
                Turn::Took(held, _) => return Ok(Some(*held)),
                Turn::Cut => {}
                Turn::Busy => waiting.busy(),
                Turn::Failed(e) => waiting.failed(e, "the writer lock")?,
            }
            if standing.near_front(1) {
                rounds.hurry();
            }
        }
        waiting.give_up(wait)
    }

    /// The readers holding slots and the writer lock's status (a writer holding it is
    /// writing or waiting for the readers to leave).
    ///
    /// ```no_run
    /// # async fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
    /// let s = rw.status().await?;
    /// println!("{} readers; writer: {:?}", s.readers.len(), s.writer.owner);
    /// # Ok(()) }
    /// ```
    pub async fn status(&self) -> Result<RwLockStatus> {
        let readers = self.readers.status().await?;
        let writer = self.gate.status().await?;
        let places: Vec<&Lock<T>> = self.writers.places().iter().collect();
        let writers_waiting = Lock::status_many(&places)
            .await?
            .statuses
            .iter()
            .filter(|s| s.locked)
            .count() as u32;
        // A writer holds every slot: those are not readers.
        let writer_holds = writer.locked;
        Ok(RwLockStatus {
            readers: if writer_holds {
                readers
                    .holders
                    .into_iter()
                    .filter(|h| !taken_by_writer(h, &writer))
                    .collect()
            } else {
                readers.holders
            },
            writer,
            fencing_token: readers.fencing_token,
            readers_waiting: readers.waiting,
            writers_waiting,
        })
    }

    /// The writer lock (the gate).
    ///
    /// ```no_run
    /// # fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) {
    /// println!("{:?}", rw.writer_lock().target());
    /// # }
    /// ```
    pub fn writer_lock(&self) -> &Lock<T> {
        &self.gate
    }
}

/// Whether the slot `h` is one the writer holding the gate took (same process and label,
/// taken after the gate).
fn taken_by_writer(h: &PermitHolder, writer: &LockStatus) -> bool {
    match (&h.owner, &writer.owner) {
        (Some(r), Some(w)) => {
            r.host == w.host
                && r.pid == w.pid
                && r.label == w.label
                && r.acquired_at
                    .zip(w.acquired_at)
                    .is_some_and(|(r, w)| r >= w)
        }
        _ => false,
    }
}

/// Releases the slots, then the gate; wakes the readers waiting in this process.
async fn release_all<L: Leasable>(
    gate: Held<L>,
    slots: Vec<Held<L>>,
    wake: Option<Arc<Notify>>,
) -> Result<ReleaseOutcome> {
    let released = futures_util::future::join_all(slots.into_iter().map(Held::release)).await;
    let gate = gate.release().await;
    if let Some(w) = wake {
        w.notify_waiters();
        w.notify_one();
    }
    for r in released {
        r?;
    }
    gate
}

/// What [`RwLock::status`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RwLockStatus {
    /// The readers holding slots.
    pub readers: Vec<PermitHolder>,
    /// The writer lock: `locked` while a writer writes or waits for the readers to leave.
    pub writer: LockStatus,
    /// The latest read or write hold's fencing token.
    pub fencing_token: Option<u64>,
    /// The readers waiting in the readers' line.
    pub readers_waiting: u32,
    /// The writers waiting in the writers' line (a writer holding the writer lock while it
    /// waits for readers to leave is not among them: see `writer`).
    pub writers_waiting: u32,
}

/// The write hold of an [`RwLock`]: the writer lock plus every reader slot, all renewed, and
/// a fencing token above every earlier read and write hold's. Lost when any of its leases is
/// lost. Release it with [`release`](Self::release); dropping it releases in the background.
///
/// ```no_run
/// # async fn demo(rw: azstore::lock::RwLock<azstore::blob::BlobLockTarget>) -> azstore::Result<()> {
/// use std::time::Duration;
/// if let Some(write) = rw.write_within(Duration::from_secs(30)).await? {
///     tokio::select! {
///         loss = write.lost() => eprintln!("lost the write hold: {loss}"),
///         _ = async { /* the write, passing write.fencing_token() along */ } => {}
///     }
///     write.release().await?;
/// }
/// # Ok(()) }
/// ```
#[must_use = "dropping a write hold releases it at once (in the background): keep it while the write runs"]
pub struct WriteGuard<L: Leasable> {
    inner: Option<(Held<L>, Vec<Held<L>>)>,
    fencing_token: u64,
    wake: Option<Arc<Notify>>,
}

impl<L: Leasable> fmt::Debug for WriteGuard<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WriteGuard")
            .field("fencing_token", &self.fencing_token)
            .field("leases", &self.holds().len())
            .finish()
    }
}

impl<L: Leasable> WriteGuard<L> {
    fn holds(&self) -> Vec<&Held<L>> {
        let (gate, slots) = self.inner.as_ref().expect("present until release");
        std::iter::once(gate).chain(slots.iter()).collect()
    }

    /// The fencing token: larger than every read and write hold's granted before this one.
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// println!("{}", w.fencing_token());
    /// # }
    /// ```
    pub fn fencing_token(&self) -> u64 {
        self.fencing_token
    }

    /// The writer lock's lease id.
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// println!("{}", w.lease_id());
    /// # }
    /// ```
    pub fn lease_id(&self) -> &crate::conditions::LeaseId {
        self.inner
            .as_ref()
            .expect("present until release")
            .0
            .lease_id()
    }

    /// The earliest loss deadline of the hold's leases; see [`Held::deadline`].
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// println!("{:?}", w.deadline());
    /// # }
    /// ```
    pub fn deadline(&self) -> Option<Duration> {
        self.holds().iter().filter_map(|h| h.deadline()).min()
    }

    /// True while every lease of the hold is (certainly) held; see [`Held::is_held`].
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// if !w.is_held() { eprintln!("write hold lost"); }
    /// # }
    /// ```
    pub fn is_held(&self) -> bool {
        self.holds().iter().all(|h| h.is_held())
    }

    /// `Ok(())` while held, else the first loss as an error (`lease_lost() == true`).
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// w.check()?;
    /// # Ok(()) }
    /// ```
    pub fn check(&self) -> Result<()> {
        self.holds().iter().try_for_each(|h| h.check())
    }

    /// The first lease state that is not [`GuardState::Held`], else `Held`.
    ///
    /// ```no_run
    /// # fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// println!("{:?}", w.state());
    /// # }
    /// ```
    pub fn state(&self) -> GuardState {
        self.holds()
            .iter()
            .map(|h| h.state())
            .find(|s| !matches!(s, GuardState::Held))
            .unwrap_or(GuardState::Held)
    }

    /// Completes when any lease of the hold is (possibly) lost, before it can expire on the
    /// service.
    ///
    /// ```no_run
    /// # async fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) {
    /// eprintln!("stopping: {}", w.lost().await);
    /// # }
    /// ```
    pub fn lost(&self) -> impl Future<Output = LeaseLoss> + Send + 'static {
        first_loss(&self.holds())
    }

    /// Releases the hold: the reader slots, then the writer lock; wakes waiting readers in
    /// this process. The writer lock's outcome is returned.
    ///
    /// ```no_run
    /// # async fn demo(w: azstore::lock::WriteGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// w.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn release(mut self) -> Result<ReleaseOutcome> {
        let (gate, slots) = self.inner.take().expect("present until release");
        release_all(gate, slots, self.wake.take()).await
    }
}

impl<L: Leasable> Drop for WriteGuard<L> {
    fn drop(&mut self) {
        let Some((gate, slots)) = self.inner.take() else {
            return;
        };
        let wake = self.wake.take();
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(async move {
                    let _ = release_all(gate, slots, wake).await;
                });
            }
            Err(_) => drop((gate, slots)),
        }
    }
}
