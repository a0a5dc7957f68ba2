//! [`ShardGroup`] and [`ShardWorker`]: N shards spread over M workers, each shard one lock.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt;
use tokio::sync::{mpsc, oneshot, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

use super::backends::{Campaign, LockFactory, check_timing};
use super::balance::{shares, spread};
use super::election::{Liveness, identity_of};
use super::shard_options::{ShardEvent, ShardOptions};
use crate::error::{Error, Result};
use crate::lock::Held;

/// A named group of shards over a lock backend: [`join`](Self::join) it to become a worker.
///
/// Each shard is one lock, `<group>/shards/<name>`; each worker holds one member slot lock,
/// `<group>/members/<k>`, so that every worker can count the workers M. Every
/// [interval](ShardOptions::interval) a worker reads the slots and the shards (one bulk
/// status read) and moves toward its fair share: ⌊N/M⌋ or ⌈N/M⌉ shards (the ⌈N/M⌉ go to the
/// workers already holding most, then by identity, so a balanced group stays still):
/// - below its share, it claims up to its share at once among the free shards: never owned,
///   released by a member above its share, or whose owner left the group, died or holds
///   nothing live (once its lease ended); a shard that a live member *below* its own share
///   let go (a lost renewal, say) is a **steal**, and it takes at most one of those per
///   interval — no steal storms;
/// - above its share, it **releases** its whole surplus in one interval (cooperatively:
///   nobody breaks another's lease);
/// - [`leave`](ShardWorker::leave) (or drop) releases every shard at once; a crashed worker's
///   shards are claimed after its lease.
///
/// A group is balanced again within 3 intervals of the last graceful change (a join or a
/// leave) and within the lease + 3 intervals of a crash.
///
/// **Request rate per worker**: ⌈(N + slots) / page⌉ bulk reads per interval (a page is 5,000
/// locks on Blob, 2,000 on Redis, 1,000 on Cosmos DB; a backend without a bulk read reads
/// each lock), plus the acquires and releases of changes, plus the renewals of what it holds
/// ((owned + 1) per renew interval, a third of the lease by default).
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::BlobLocks;
/// use azstore::leader::{ShardEvent, ShardGroup, ShardOptions};
/// use azstore::lease::LeaseDuration;
/// use azstore::lock::LockOptions;
///
/// let locks = BlobLocks::new(container, LockOptions::default().duration(LeaseDuration::seconds(15)?));
/// let group = ShardGroup::with_count(locks, "ingest", 32, ShardOptions::default())?;
/// let mut worker = group.join("worker-1")?;
/// while let Some(event) = worker.recv().await {
///     match event {
///         ShardEvent::Acquired { shard, epoch } => println!("own {shard} in epoch {epoch}"),
///         ShardEvent::Lost { shard } => println!("stop {shard}"),
///         _ => {}
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ShardGroup<F: LockFactory> {
    factory: F,
    group: String,
    shards: Arc<Vec<String>>,
    options: ShardOptions,
}

impl<F: LockFactory> ShardGroup<F> {
    /// A group named `group` over the given shard names (unique, non-empty, without `/`).
    /// Checked here, before any request, with the lock options' timing (a fixed lease, two
    /// renewals before the loss, a safety margin of at least 1 s).
    ///
    /// ```no_run
    /// # fn demo(locks: azstore::blob::BlobLocks) -> azstore::Result<()> {
    /// use azstore::leader::{ShardGroup, ShardOptions};
    /// let group = ShardGroup::new(locks, "tenants", ["alpha", "beta", "gamma"], ShardOptions::default())?;
    /// # let _ = group; Ok(()) }
    /// ```
    pub fn new<S: Into<String>>(
        factory: F,
        group: &str,
        shards: impl IntoIterator<Item = S>,
        options: ShardOptions,
    ) -> Result<ShardGroup<F>> {
        let shards: Vec<String> = shards.into_iter().map(Into::into).collect();
        if group.is_empty() {
            return Err(Error::invalid_input("a shard group name must not be empty"));
        }
        if shards.is_empty() {
            return Err(Error::invalid_input(
                "a shard group needs at least one shard",
            ));
        }
        let unique: BTreeSet<&String> = shards.iter().collect();
        if unique.len() != shards.len() {
            return Err(Error::invalid_input("shard names must be unique"));
        }
        if shards.iter().any(|s| s.is_empty() || s.contains('/')) {
            return Err(Error::invalid_input(
                "shard names must be non-empty and contain no '/'",
            ));
        }
        if options.interval < Duration::from_millis(100) {
            return Err(Error::invalid_input(format!(
                "the shard interval {:?} is under 100 ms: set ShardOptions::interval",
                options.interval
            )));
        }
        if !(1..=1024).contains(&options.member_slots) {
            return Err(Error::invalid_input(
                "ShardOptions::member_slots must be 1-1024",
            ));
        }
        // Build one lock to check the names and the timing.
        let probe = factory.make(&format!("{group}/shards/{}", shards[0]), "probe")?;
        check_timing(&probe.timing()?)?;
        Ok(ShardGroup {
            factory,
            group: group.to_string(),
            shards: Arc::new(shards),
            options,
        })
    }

    /// A group of `count` shards named `0`, `1`, … `count - 1`.
    ///
    /// ```no_run
    /// # fn demo(locks: azstore::blob::BlobLocks) -> azstore::Result<()> {
    /// let group = azstore::leader::ShardGroup::with_count(locks, "partitions", 32, Default::default())?;
    /// assert_eq!(group.shards().len(), 32);
    /// # Ok(()) }
    /// ```
    pub fn with_count(
        factory: F,
        group: &str,
        count: usize,
        options: ShardOptions,
    ) -> Result<ShardGroup<F>> {
        ShardGroup::new(factory, group, (0..count).map(|i| i.to_string()), options)
    }

    /// The shard names.
    ///
    /// ```no_run
    /// # fn demo(group: azstore::leader::ShardGroup<azstore::blob::BlobLocks>) {
    /// println!("{} shards", group.shards().len());
    /// # }
    /// ```
    pub fn shards(&self) -> &[String] {
        &self.shards
    }

    /// Joins the group as worker `worker` (its identity: unique in the group, printable ASCII)
    /// and starts balancing in the background. Events arrive on [`ShardWorker::recv`].
    ///
    /// ```no_run
    /// # async fn demo(group: azstore::leader::ShardGroup<azstore::blob::BlobLocks>) -> azstore::Result<()> {
    /// let worker = group.join("worker-7")?;
    /// // ... run it ...
    /// worker.leave().await; // hands every shard over at once
    /// # Ok(()) }
    /// ```
    pub fn join(&self, worker: &str) -> Result<ShardWorker> {
        if worker.is_empty() {
            return Err(Error::invalid_input("a worker id must not be empty"));
        }
        let lock = |name: String| self.factory.make(&name, worker);
        let shards = self
            .shards
            .iter()
            .map(|s| Ok((s.clone(), lock(format!("{}/shards/{s}", self.group))?)))
            .collect::<Result<Vec<_>>>()?;
        let slots = (0..self.options.member_slots)
            .map(|k| lock(format!("{}/members/{k}", self.group)))
            .collect::<Result<Vec<_>>>()?;
        let lease = check_timing(&shards[0].1.timing()?)?;
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let (owned_tx, owned_rx) = watch::channel(BTreeMap::new());
        let (stop_tx, stop_rx) = oneshot::channel();
        let (loss_tx, loss_rx) = mpsc::unbounded_channel();
        let requests = Arc::new(AtomicU64::new(0));
        let state = Worker {
            me: worker.to_string(),
            interval: self.options.interval,
            lease,
            shards,
            slots,
            slot: None,
            held: BTreeMap::new(),
            slot_live: HashMap::new(),
            shard_live: HashMap::new(),
            events: events_tx,
            owned: owned_tx,
            loss_tx,
            requests: requests.clone(),
        };
        let task = tokio::spawn(state.run(stop_rx, loss_rx));
        Ok(ShardWorker {
            identity: worker.to_string(),
            events: events_rx,
            owned: owned_rx,
            stop: Some(stop_tx),
            task: Some(task),
            requests,
            started: Instant::now(),
        })
    }
}

/// A member of a [`ShardGroup`]: receives [`ShardEvent`]s while a background task balances.
/// [`leave`](Self::leave) hands its shards over at once; dropping it does the same in the
/// background.
///
/// ```no_run
/// # async fn demo(mut worker: azstore::leader::ShardWorker) {
/// println!("{} owns {:?}", worker.identity(), worker.owned().keys().collect::<Vec<_>>());
/// # }
/// ```
#[derive(Debug)]
#[must_use = "dropping a ShardWorker leaves the group"]
pub struct ShardWorker {
    identity: String,
    events: mpsc::UnboundedReceiver<Sent>,
    owned: watch::Receiver<BTreeMap<String, u64>>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    requests: Arc<AtomicU64>,
    started: Instant,
}

impl ShardWorker {
    /// The next event; `None` once the worker stopped.
    ///
    /// ```no_run
    /// # async fn demo(mut worker: azstore::leader::ShardWorker) {
    /// if let Some(event) = worker.recv().await { println!("{event:?}"); }
    /// # }
    /// ```
    pub async fn recv(&mut self) -> Option<ShardEvent> {
        // Dropping `taken` tells the balancing task that a `Lost` reached the caller: a
        // shard given up is released only then.
        let Sent { event, taken } = self.events.recv().await?;
        drop(taken);
        Some(event)
    }

    /// The worker's identity.
    ///
    /// ```no_run
    /// # fn demo(worker: azstore::leader::ShardWorker) {
    /// println!("{}", worker.identity());
    /// # }
    /// ```
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The shards owned now, with their epochs.
    ///
    /// ```no_run
    /// # fn demo(worker: azstore::leader::ShardWorker) {
    /// for (shard, epoch) in worker.owned() { println!("{shard}: epoch {epoch}"); }
    /// # }
    /// ```
    pub fn owned(&self) -> BTreeMap<String, u64> {
        self.owned.borrow().clone()
    }

    /// A receiver of the owned shards (with epochs), updated on every change.
    ///
    /// ```no_run
    /// # async fn demo(worker: azstore::leader::ShardWorker) {
    /// let mut owned = worker.subscribe();
    /// while owned.changed().await.is_ok() { println!("now {} shards", owned.borrow().len()); }
    /// # }
    /// ```
    pub fn subscribe(&self) -> watch::Receiver<BTreeMap<String, u64>> {
        self.owned.clone()
    }

    /// Requests the worker sent itself (status reads, acquires, releases; not the renewals,
    /// which its guards send: (owned + 1) per renew interval) and the time since it joined.
    ///
    /// ```no_run
    /// # fn demo(worker: azstore::leader::ShardWorker) {
    /// let (n, elapsed) = worker.requests();
    /// println!("{:.1} requests/s", n as f64 / elapsed.as_secs_f64());
    /// # }
    /// ```
    pub fn requests(&self) -> (u64, Duration) {
        (
            self.requests.load(Ordering::Relaxed),
            self.started.elapsed(),
        )
    }

    /// Leaves the group: releases every shard (and the member slot) at once, and waits for
    /// that. The caller stops acting on its shards before it calls this (their
    /// [`ShardEvent::Lost`] events are not delivered); use [`stop`](Self::stop) and
    /// [`recv`](Self::recv) to hear each loss before its release.
    ///
    /// ```no_run
    /// # async fn demo(worker: azstore::leader::ShardWorker) {
    /// worker.leave().await;
    /// # }
    /// ```
    pub async fn leave(mut self) {
        // Nobody receives the `Lost` events now: the releases need not wait for them.
        self.events.close();
        while self.events.try_recv().is_ok() {}
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }

    /// Starts leaving without waiting: the [`ShardEvent::Lost`] of every shard follow on
    /// [`recv`](Self::recv), which returns `None` once everything is released.
    ///
    /// ```no_run
    /// # async fn demo(mut worker: azstore::leader::ShardWorker) {
    /// worker.stop();
    /// while let Some(event) = worker.recv().await {
    ///     println!("{event:?}"); // the Lost events, each returned before its release
    /// }
    /// # }
    /// ```
    pub fn stop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

impl Drop for ShardWorker {
    fn drop(&mut self) {
        // The task sees the stop and releases everything in the background.
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// One held shard: the lock and the task that reports its loss.
struct Owned<T: crate::lease::Leasable> {
    held: Held<T>,
    watcher: JoinHandle<()>,
    /// Whether its [`ShardEvent::Lost`] was sent (by the watcher, on a lost lease, or by the
    /// balancing task): whoever sets it sends the one event.
    told: Arc<AtomicBool>,
}

impl<T: crate::lease::Leasable> Owned<T> {
    /// Sends the shard's [`ShardEvent::Lost`] unless it was sent already.
    fn tell_lost(
        &self,
        events: &mpsc::UnboundedSender<Sent>,
        shard: &str,
    ) -> Option<oneshot::Receiver<()>> {
        tell_lost_once(&self.told, events, shard)
    }
}

/// An event on its way to [`ShardWorker::recv`]; for a `Lost`, `taken` is dropped once `recv`
/// returned it (or once nobody can: the worker was dropped).
#[derive(Debug)]
struct Sent {
    event: ShardEvent,
    taken: Option<oneshot::Sender<()>>,
}

/// Sends `shard`'s [`ShardEvent::Lost`] unless `told` says it was sent already; the answer
/// resolves once [`ShardWorker::recv`] returned it (or nobody can).
fn tell_lost_once(
    told: &AtomicBool,
    events: &mpsc::UnboundedSender<Sent>,
    shard: &str,
) -> Option<oneshot::Receiver<()>> {
    if told.swap(true, Ordering::SeqCst) {
        return None;
    }
    let (taken, when_taken) = oneshot::channel();
    let event = ShardEvent::Lost {
        shard: shard.to_string(),
    };
    let _ = events.send(Sent {
        event,
        taken: Some(taken),
    });
    Some(when_taken)
}

/// Waits until the worker's caller took every `Lost` in `told` from
/// [`ShardWorker::recv`], at most `bound`: a shard given up is released only once its owner
/// knows (a caller that does not call `recv` delays the releases by `bound`).
async fn until_taken(told: Vec<oneshot::Receiver<()>>, bound: Duration) {
    let all = futures_util::future::join_all(told);
    let _ = tokio::time::timeout(bound, all).await;
}

type LeaseOf<F> = <F as Campaign>::Lease;

/// The balancing task's state.
struct Worker<C: Campaign> {
    me: String,
    interval: Duration,
    lease: Duration,
    shards: Vec<(String, C)>,
    slots: Vec<C>,
    slot: Option<Held<LeaseOf<C>>>,
    held: BTreeMap<String, Owned<LeaseOf<C>>>,
    slot_live: HashMap<usize, Liveness>,
    shard_live: HashMap<usize, Liveness>,
    events: mpsc::UnboundedSender<Sent>,
    owned: watch::Sender<BTreeMap<String, u64>>,
    loss_tx: mpsc::UnboundedSender<(String, u64)>,
    requests: Arc<AtomicU64>,
}

/// What one round of reads found about a shard.
struct ShardView {
    /// The live owner's identity.
    owner: Option<String>,
    /// The latest owner's identity, live or not.
    last: Option<String>,
}

impl<C: Campaign> Worker<C> {
    async fn run(
        mut self,
        mut stop: oneshot::Receiver<()>,
        mut losses: mpsc::UnboundedReceiver<(String, u64)>,
    ) {
        let mut next = Instant::now();
        loop {
            tokio::select! {
                _ = &mut stop => break,
                Some((shard, epoch)) = losses.recv() => {
                    if self.held.get(&shard).is_some_and(|o| o.held.fencing_token() == epoch) {
                        if let Some(o) = self.held.remove(&shard) {
                            let _ = o.tell_lost(&self.events, &shard);
                        }
                        self.publish();
                    }
                }
                _ = tokio::time::sleep_until(next) => {
                    let started = Instant::now();
                    if let Err(e) = self.tick().await {
                        tracing::debug!(error = %e, worker = %self.me, "shard balancing round failed");
                    }
                    next = self.next_round(started);
                }
            }
        }
        // Leaving: stop acting first (each `Lost` taken by the caller), then release
        // everything at once.
        let told = self
            .held
            .iter()
            .filter_map(|(shard, o)| o.tell_lost(&self.events, shard))
            .collect();
        until_taken(told, self.interval).await;
        let releases = std::mem::take(&mut self.held).into_values().map(|o| {
            o.watcher.abort();
            o.held.release()
        });
        futures_util::future::join_all(releases).await;
        self.publish();
        if let Some(slot) = self.slot.take() {
            let _ = slot.release().await;
        }
    }

    /// When the next round starts: one interval after the start of the round that `started`
    /// (so a slow round does not stretch the interval; at least a quarter interval after it
    /// ended), or sooner when a silent holder (a record whose version has not changed, the
    /// Cosmos DB takeover rule) counts as gone before then — so its shards are taken a lease
    /// after its last renewal was seen, not up to an interval later.
    fn next_round(&self, started: Instant) -> Instant {
        let now = Instant::now();
        let every = (started + self.interval).max(now + self.interval / 4);
        self.slot_live
            .values()
            .chain(self.shard_live.values())
            .filter_map(|l| l.deadline(self.lease))
            // Just past the deadline, so that the round finds it passed.
            .map(|d| d + Duration::from_millis(10))
            .filter(|d| *d > now)
            .fold(every, Instant::min)
    }

    fn count(&self, n: u64) {
        self.requests.fetch_add(n, Ordering::Relaxed);
    }

    fn publish(&self) {
        let now: BTreeMap<String, u64> = self
            .held
            .iter()
            .map(|(s, o)| (s.clone(), o.held.fencing_token()))
            .collect();
        self.owned.send_if_modified(|cur| {
            let changed = *cur != now;
            *cur = now;
            changed
        });
    }

    async fn tick(&mut self) -> Result<()> {
        // 1. Read every member slot and every shard in one bulk status read (one listing or
        //    query per page where the backend has one; one read per lock otherwise).
        if self.slot.as_ref().is_some_and(|h| !h.is_held()) {
            self.slot = None;
        }
        let locks: Vec<&C> = self
            .slots
            .iter()
            .chain(self.shards.iter().map(|(_, l)| l))
            .collect();
        let (mut seen, requests) = C::campaign_status_many(&locks).await?;
        self.count(requests);
        if seen.len() != locks.len() {
            return Err(Error::new(
                crate::error::ErrorKind::Service,
                format!(
                    "a bulk status read of {} locks answered {}",
                    locks.len(),
                    seen.len()
                ),
            ));
        }
        let shard_seen = seen.split_off(self.slots.len());
        // 2. Membership: count the live members, and hold a slot (trying those that look free,
        //    starting at a place of our own so that joiners do not all try the same one).
        let mut members = BTreeSet::new();
        let mut free_slots = Vec::new();
        for (k, seen) in seen.into_iter().enumerate() {
            let alive = self
                .slot_live
                .entry(k)
                .or_default()
                .alive(&seen, self.lease);
            match &seen.owner {
                Some(o) if alive => {
                    members.insert(identity_of(o));
                }
                _ => free_slots.push(k),
            }
        }
        if self.slot.is_none() {
            let start = spread(&self.me, free_slots.len());
            for k in free_slots.iter().cycle().skip(start).take(free_slots.len()) {
                self.count(1);
                if let Some(h) = self.slots[*k].campaign_try().await? {
                    self.slot = Some(h);
                    break;
                }
            }
            // Every slot taken: wait for one. Just taken: claim from the next round on, so
            // that workers starting together count one another before taking shares.
            return Ok(());
        }
        members.insert(self.me.clone());
        // 3. Who owns what.
        let mut views = Vec::with_capacity(shard_seen.len());
        for (i, seen) in shard_seen.into_iter().enumerate() {
            let alive = self
                .shard_live
                .entry(i)
                .or_default()
                .alive(&seen, self.lease);
            let last = seen.owner.as_ref().map(identity_of);
            views.push(ShardView {
                owner: if alive { last.clone() } else { None },
                last,
            });
        }
        // 4. Fair shares: ⌈N/M⌉ to the N mod M members holding most (then by identity).
        let n = self.shards.len();
        let mut load: BTreeMap<&str, usize> = members.iter().map(|w| (w.as_str(), 0)).collect();
        for (i, v) in views.iter().enumerate() {
            if self.held.contains_key(&self.shards[i].0) {
                continue;
            }
            if let Some(o) = &v.owner
                && o != &self.me
                && let Some(c) = load.get_mut(o.as_str())
            {
                *c += 1;
            }
        }
        load.insert(self.me.as_str(), self.held.len());
        let targets = shares(n, &load);
        let my_target = targets.get(self.me.as_str()).copied().unwrap_or(0);
        let below = targets
            .iter()
            .filter(|(w, t)| **w != self.me.as_str() && load.get(*w).copied().unwrap_or(0) < **t)
            .count();
        let mine = self.held.len();
        if mine > my_target && below > 0 {
            // 5. Above the share: release the whole surplus now (cooperatively: nobody breaks
            //    another's lease), each released once the caller took its `Lost`.
            let give: Vec<String> = self
                .held
                .keys()
                .rev()
                .take(mine - my_target)
                .cloned()
                .collect();
            let mut releases = Vec::with_capacity(give.len());
            let mut told = Vec::with_capacity(give.len());
            for shard in give {
                if let Some(o) = self.held.remove(&shard) {
                    told.extend(o.tell_lost(&self.events, &shard));
                    o.watcher.abort();
                    releases.push(o.held);
                }
            }
            self.publish();
            until_taken(told, self.interval).await;
            self.count(releases.len() as u64);
            futures_util::stream::iter(releases)
                .map(|h| async move {
                    let _ = h.release().await;
                })
                .buffer_unordered(CONCURRENT_CHANGES)
                .collect::<Vec<()>>()
                .await;
        } else if mine < my_target {
            // 6. Below the share: claim up to the share at once among free shards (never
            //    owned, released as surplus, or whose owner left the group or died), at most
            //    one per interval that a live member below its own share let go — a steal.
            let want = my_target - mine;
            let mut free = Vec::new();
            let mut steals = Vec::new();
            let start = spread(&self.me, n);
            for i in (start..n).chain(0..start) {
                let v = &views[i];
                if self.held.contains_key(&self.shards[i].0) {
                    continue;
                }
                match (&v.owner, &v.last) {
                    // Its owner left the group: try (its lease may have ended).
                    (Some(o), _) if !members.contains(o) => free.push(i),
                    (Some(_), _) => {}
                    (None, Some(l)) if l != &self.me && members.contains(l) => {
                        let (has, owed) = (
                            load.get(l.as_str()).copied().unwrap_or(0),
                            targets.get(l.as_str()).copied().unwrap_or(0),
                        );
                        // Released as surplus, or by a member holding nothing live (a
                        // crashed worker whose member slot has not run out yet).
                        if has >= owed || has == 0 {
                            free.push(i);
                        } else {
                            steals.push(i);
                        }
                    }
                    (None, _) => free.push(i),
                }
            }
            let got = self.claim(&free, want).await?;
            if got < want {
                self.claim(&steals, 1).await?;
            }
        }
        Ok(())
    }

    /// Tries the shards `candidates` (indexes, in order), [`CONCURRENT_CHANGES`] at a time,
    /// until `want` are held or none is left; sends `Acquired` for each. The number taken.
    /// The first failure ends the claiming after the batch it was in (what that batch took
    /// is kept).
    async fn claim(&mut self, candidates: &[usize], want: usize) -> Result<usize> {
        let mut got = 0usize;
        let mut rest = candidates;
        while got < want && !rest.is_empty() {
            let take = (want - got).min(CONCURRENT_CHANGES).min(rest.len());
            let (batch, after) = rest.split_at(take);
            rest = after;
            self.count(batch.len() as u64);
            let tries = futures_util::future::join_all(batch.iter().map(|&i| {
                let lock = self.shards[i].1.clone();
                async move { (i, lock.campaign_try().await) }
            }))
            .await;
            let mut failure = None;
            for (i, r) in tries {
                match r {
                    Ok(Some(held)) => {
                        self.adopt(i, held);
                        got += 1;
                    }
                    Ok(None) => {}
                    Err(e) => {
                        failure.get_or_insert(e);
                    }
                }
            }
            if let Some(e) = failure {
                self.publish();
                return Err(e);
            }
        }
        self.publish();
        Ok(got)
    }

    /// Takes on shard `i`, just acquired: sends `Acquired` and watches for its loss.
    fn adopt(&mut self, i: usize, held: Held<LeaseOf<C>>) {
        let shard = self.shards[i].0.clone();
        let epoch = held.fencing_token();
        let _ = self.events.send(Sent {
            event: ShardEvent::Acquired {
                shard: shard.clone(),
                epoch,
            },
            taken: None,
        });
        let lost = held.lost();
        let tx = self.loss_tx.clone();
        let name = shard.clone();
        let told = Arc::new(AtomicBool::new(false));
        let (events, told_here) = (self.events.clone(), told.clone());
        // The loss is told at once, even while a balancing round is under way (a round slowed
        // by a failing service can take longer than the safety margin); the balancing task
        // forgets the shard when it next looks.
        let watcher = tokio::spawn(async move {
            let _ = lost.await;
            // A lost lease is not released: nothing waits for the event to be taken.
            let _ = tell_lost_once(&told_here, &events, &name);
            let _ = tx.send((name, epoch));
        });
        self.held.insert(
            shard,
            Owned {
                held,
                watcher,
                told,
            },
        );
    }
}

/// How many acquires (or releases) a worker sends at once while it moves toward its share.
const CONCURRENT_CHANGES: usize = 16;
