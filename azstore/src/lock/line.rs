//! The waiting line of a [`Semaphore`](super::Semaphore) and of an
//! [`RwLock`](super::RwLock)'s writers: fair waiting written once over the lock engine.
//!
//! The line is [`LINE_PLACES`] **place locks** (`<name>/line/<k>`). A waiter that finds no
//! slot it may take takes a free place (a lock like any other: its lease is renewed while it
//! waits, and ends with the waiter's process); the place's fencing token — the backend's clock
//! in milliseconds when it was taken, see [`next_fencing_token`](super::next_fencing_token) —
//! is its number in the line. Each round, a waiter reads the places and the slots in one bulk
//! status read ([`LockTarget::status_many`]) and may try a slot only if fewer waiters stand
//! before it than slots are free; a newcomer without a place stands behind everybody. So a
//! waiter with a place is passed over by at most N − 1 later arrivals (the first k in line share
//! k permits freed at once), except by one that read the line before the place was taken (an
//! arrival within one look and one acquire of it) or, on Blob and Cosmos DB, whose clock runs
//! behind by more than the time between their arrivals.

use std::sync::Arc;

use tokio::sync::Notify;
use tokio::time::Instant;

use std::time::Duration;

use super::engine::by_deadline;
use super::owner::is_closed;
use super::{Held, Liveness, Lock, LockStatus, LockTarget};
use crate::conditions::LeaseId;
use crate::error::{Error, Result};

/// The places in a semaphore's (or an RwLock's writers') waiting line: up to this many waiters
/// wait in the order they arrived; more wait unordered behind them until a place frees.
pub const LINE_PLACES: u32 = 16;

/// A waiting line: its place locks.
#[derive(Clone)]
pub(crate) struct Line<T: LockTarget> {
    places: Arc<[Lock<T>]>,
}

/// The place a waiter holds in a [`Line`].
pub(crate) struct Place<L: crate::lease::Leasable> {
    held: Held<L>,
    index: usize,
}

impl<L: crate::lease::Leasable> Place<L> {
    fn key(&self) -> (u64, usize) {
        (self.held.fencing_token(), self.index)
    }
}

/// What one look at the line and the slots found.
pub(crate) struct Look {
    /// The slots seen free, by index.
    pub(crate) free: Vec<usize>,
    /// The waiters standing before this one (all of them when it has no place).
    pub(crate) before: usize,
    /// The places seen free, by index.
    open: Vec<usize>,
    /// The largest fencing token among the places seen held (the newest arrival in line).
    newest: Option<u64>,
    /// The statuses of the extra locks asked for (an RwLock's gate), in order.
    pub(crate) extra: Vec<LockStatus>,
}

impl Look {
    /// Whether this waiter may try a free slot now: fewer waiters stand before it than slots
    /// are free.
    pub(crate) fn my_turn(&self) -> bool {
        self.before < self.free.len()
    }
}

impl<T: LockTarget> Line<T> {
    /// A line of the given place locks (at least one).
    pub(crate) fn new(places: Vec<Lock<T>>) -> Result<Line<T>> {
        if places.is_empty() {
            return Err(Error::invalid_input(
                "a waiting line needs at least one place",
            ));
        }
        Ok(Line {
            places: places.into(),
        })
    }

    /// The place locks.
    pub(crate) fn places(&self) -> &[Lock<T>] {
        &self.places
    }

    /// One bulk status read of the places, `slots` and `extra`: the free slots and how many
    /// waiters stand before this one. A place found no longer ours (its lease ended while
    /// this process was frozen, or it was broken) is dropped: the waiter stands behind
    /// everybody again.
    pub(crate) async fn look(
        &self,
        slots: &[Lock<T>],
        extra: &[&Lock<T>],
        standing: &mut Standing<T::Lease>,
    ) -> Result<Look> {
        let all: Vec<&Lock<T>> = self
            .places
            .iter()
            .chain(slots.iter())
            .chain(extra.iter().copied())
            .collect();
        let read = Lock::status_many(&all).await?;
        standing
            .live_places
            .resize_with(self.places.len(), Liveness::default);
        standing
            .live_rest
            .resize_with(slots.len() + extra.len(), Liveness::default);
        let lives = standing
            .live_places
            .iter_mut()
            .chain(standing.live_rest.iter_mut());
        // Held means held by a live holder: on a backend whose contenders decide expiry
        // (Cosmos DB), a record unchanged for a lease duration counts as free, as an acquire
        // attempt would find it. A slot closed by `set_permits` is never free.
        let mut statuses =
            read.statuses
                .into_iter()
                .zip(all.iter().zip(lives))
                .map(|(mut s, (lock, l))| {
                    let lease = lock
                        .options()
                        .duration
                        .as_duration()
                        .unwrap_or(Duration::MAX);
                    if !is_closed(&s) && !l.alive_status(&s, lease) {
                        s.locked = false;
                    }
                    s
                });
        let places: Vec<LockStatus> = statuses.by_ref().take(self.places.len()).collect();
        let free = statuses
            .by_ref()
            .take(slots.len())
            .enumerate()
            .filter(|(_, s)| !s.locked)
            .map(|(k, _)| k)
            .collect();
        let extra = statuses.collect();
        if let Some(p) = standing.place.as_ref() {
            let mine = &places[p.index];
            if !(mine.locked && mine.fencing_token == Some(p.held.fencing_token())) {
                standing.place = None;
            }
        }
        let mine = standing.place.as_ref().map(Place::key);
        let before = places
            .iter()
            .enumerate()
            .filter(|(k, s)| {
                s.locked && mine.is_none_or(|m| (s.fencing_token.unwrap_or(0), *k) < m)
            })
            .count();
        let open: Vec<usize> = places
            .iter()
            .enumerate()
            .filter(|(_, s)| !s.locked)
            .map(|(k, _)| k)
            .collect();
        let newest = places
            .iter()
            .filter(|s| s.locked)
            .filter_map(|s| s.fencing_token)
            .max();
        Ok(Look {
            free,
            before,
            open,
            newest,
            extra,
        })
    }

    /// Takes one of the places `look` saw free (in a random order), cut off at `deadline`.
    /// `Ok(None)` when each was taken by someone else meanwhile (the line is full): the waiter
    /// waits without a place, behind everybody in line, and tries again next round.
    ///
    /// A waiter stands behind every place it saw held. The token is the backend's clock in
    /// milliseconds, so a place taken in the same millisecond as the newest one it saw draws
    /// the same token, and the tie would order the two by place number instead: such a place
    /// is given back at once and taken again next round, in a later millisecond.
    pub(crate) async fn join(
        &self,
        deadline: Option<Instant>,
        look: &Look,
    ) -> Result<Option<Place<T::Lease>>> {
        let mut open = look.open.clone();
        shuffle(&mut open);
        for index in open {
            let proposed = LeaseId::random();
            let wake: Option<Arc<Notify>> = None;
            match self.places[index]
                .attempt_waking_by_deadline(deadline, &proposed, wake)
                .await
            {
                None => return Ok(None),
                Some(Ok(Some(held))) if look.newest == Some(held.fencing_token()) => {
                    let _ = held.release().await;
                    return Ok(None);
                }
                Some(Ok(Some(held))) => return Ok(Some(Place { held, index })),
                Some(Ok(None)) => {}
                Some(Err(e)) => return Err(e),
            }
        }
        Ok(None)
    }
}

/// Shuffles `v` in place (Fisher–Yates).
pub(crate) fn shuffle<X>(v: &mut [X]) {
    for i in (1..v.len()).rev() {
        v.swap(i, rand::random_range(0..=i));
    }
}

/// The answer of one [`Line::round`].
pub(crate) enum Turn<L: crate::lease::Leasable> {
    /// A slot is held: its index and the held lock.
    Took(Box<Held<L>>, usize),
    /// Not this waiter's turn, every free slot was taken meanwhile, or the gate was held.
    Busy,
    /// The line, a slot or a place could not be asked.
    Failed(Error),
    /// Cut off at the deadline before any answer.
    Cut,
}

/// A waiter's standing in a [`Line`] across the rounds of one wait.
pub(crate) struct Standing<L: crate::lease::Leasable> {
    /// Its place, once taken.
    pub(crate) place: Option<Place<L>>,
    /// The waiters that stood before it at the last look.
    pub(crate) before: usize,
    /// Whether it takes a place when it is not its turn (a wait: yes; a single try: no).
    pub(crate) joins: bool,
    /// What its looks saw of each place, for the takeover rule.
    live_places: Vec<Liveness>,
    /// What its looks saw of each slot and the gate, for the takeover rule.
    live_rest: Vec<Liveness>,
}

impl<L: crate::lease::Leasable> Standing<L> {
    /// The standing of a wait (it joins the line).
    pub(crate) fn waiting() -> Self {
        Standing {
            place: None,
            before: usize::MAX,
            joins: true,
            live_places: Vec::new(),
            live_rest: Vec::new(),
        }
    }

    /// The standing of a single try (it never joins).
    pub(crate) fn trying() -> Self {
        Standing {
            joins: false,
            ..Standing::waiting()
        }
    }

    /// Whether the waiter holds a place near the front (fewer than `slots` waiters before it):
    /// it then polls at the fastest interval, so a freed slot does not wait for its poll.
    pub(crate) fn near_front(&self, slots: usize) -> bool {
        self.place.is_some() && self.before < slots
    }
}

impl<T: LockTarget> Line<T> {
    /// One round of a waiter in this line: one look at the places, `slots` and `gate`; if it is
    /// the waiter's turn and the gate is not held, the free slots in a random order (each
    /// acquired waking `wake` on release); else, for a waiter without a place, a place.
    pub(crate) async fn round(
        &self,
        deadline: Option<Instant>,
        slots: &[Lock<T>],
        proposed: &[LeaseId],
        wake: Option<Arc<Notify>>,
        gate: Option<&Lock<T>>,
        standing: &mut Standing<T::Lease>,
    ) -> Turn<T::Lease> {
        let extra: Vec<&Lock<T>> = gate.into_iter().collect();
        let look = match by_deadline(deadline, self.look(slots, &extra, standing)).await {
            None => return Turn::Cut,
            Some(Err(e)) => return Turn::Failed(e),
            Some(Ok(l)) => l,
        };
        standing.before = look.before;
        let gate_held = look.extra.first().is_some_and(|s| s.locked);
        let mut failed: Option<Error> = None;
        if !gate_held && look.my_turn() {
            let mut free = look.free.clone();
            shuffle(&mut free);
            for k in free {
                match slots[k]
                    .attempt_waking_by_deadline(deadline, &proposed[k], wake.clone())
                    .await
                {
                    None => return Turn::Cut,
                    Some(Ok(Some(held))) => return Turn::Took(Box::new(held), k),
                    Some(Ok(None)) => {}
                    Some(Err(e)) if e.is_retryable() => failed = Some(e),
                    Some(Err(e)) => return Turn::Failed(e),
                }
            }
        }
        if standing.joins && standing.place.is_none() {
            match self.join(deadline, &look).await {
                Ok(p) => standing.place = p,
                Err(e) if e.is_retryable() => failed = Some(e),
                Err(e) => return Turn::Failed(e),
            }
        }
        match failed {
            Some(e) => Turn::Failed(e),
            None => Turn::Busy,
        }
    }
}
