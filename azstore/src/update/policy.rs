//! [`UpdatePolicy`]: the limits and backoff of an [`update`], and the running schedule of one
//! call.

use std::time::Duration;

#[cfg(doc)]
use super::update;
use crate::http::{Jitter, RetryPolicy};

/// Limits and backoff of [`update`]: at most `max_attempts` reads + writes, within
/// `max_elapsed`, with a jittered, growing delay between attempts.
///
/// Two delay schedules:
///
/// * **Adaptive, contention-scaled** (the default): a conflict is answered according to how
///   contended the item is. After a conflict `update` reads again at once and counts, in the
///   stored write-id history, the writes that landed since its previous read: one (someone
///   got in first, a *lone* conflict) — it writes again at once, as a plain retry loop
///   would; more — the item is contended, and it steps aside before reading again. A
///   process remembers, per item, the share of its recent conflicts that found the item
///   contended and how long the writes that beat an update took to land (the *window*);
///   under sustained contention it skips the read and steps aside at once.
///
///   Writers in *separate processes* agree on how long to step aside through the item
///   itself: every write stores, after its write ids in the same token, the item's *pace*.
///   Each commit lengthens the pace when its update's retries collided after waiting it
///   (conflicts beyond the first) and shortens it when they did not, so it settles where a
///   commit meets 0.2 colliding retries on average, and an item that calms down loses it.
///   While the token carries a pace, a writer that lost steps aside a uniform half to one
///   and a half of it, however often it lost (up to its eighth step aside; past that each
///   further one doubles, so that a writer the others keep beating backs off rather than
///   spend its attempts within a second) — but no longer than two windows the first
///   time, doubling with each further step aside of the same update. The writes that beat
///   it landed within a window: stepping aside much longer, when the item is busy with
///   fresh arrivals rather than with retries, only lets the updates due meanwhile pile up.
///   A retry cut short this way does not count toward the pace. An update that is part of
///   a backlog — it started right behind another update of this process on the item (a
///   closed loop, or updates due faster than they commit) — waits the whole pace: its
///   latency is the backlog's, which clears fastest when the service's time goes to commits
///   rather than to retries that collide. Its writes say so in the stored token, and a
///   backlog whose newest rival arrived afresh is bounded like the fresh arrivals: else the
///   processes that fell behind an open load would stay the last to commit. Without a pace, a step
///   aside is decorrelated jitter in units of the round trip this `update` observed for one
///   read + write (so the same policy fits Azurite, ~3 ms, and a remote region, ~50 ms):
///   uniform from two round trips ([`scale`](UpdatePolicy::scale)/3) to three times the
///   previous step aside, at most the max delay. Two round trips rather than one keep
///   retries, each costing the client an attempt, from crowding out commits where the
///   client's CPU is the limit (Redis with a process per writer).
///
///   So below saturation a conflicting update costs about what it costs in a plain loop,
///   and at saturation losers step aside and the service's time goes to writers that can
///   commit. Measured (the `update_contention` benchmark, `benches/README.md`, against a
///   plain loop with full-jitter backoff): writers in one process take turns and have a
///   shorter tail than the loop at every load; writers in separate processes, at
///   saturation, have a shorter p99 than the loop and commit 1.4–6.9 times as often on
///   Blob, table and Cosmos DB with a fraction of its wasted writes. Below saturation
///   (10–90 % of its capacity) Blob keeps to the loop's tail or one within the run's
///   spread, and table up to 50 %; at 90 % table's p99 is longer in most runs; Cosmos DB
///   has a p99 about twice the loop's from 50 % and at 90 % commits 89–98 % of the updates
///   due (the loop 98–99.7 %); Redis has a longer tail from 50 %, where the client's CPU
///   is the limit. Lower the scale when the latency of a
///   conflicting update matters more than throughput under contention;
///   [`adaptive(false)`](UpdatePolicy::adaptive)
///   steps aside after every conflict. Writers within one process do not conflict at all:
///   they take turns (see [`take_turns`](UpdatePolicy::take_turns)).
/// * **Fixed** ([`UpdatePolicy::new`] / `From<RetryPolicy>`, or [`fixed`](UpdatePolicy::fixed)):
///   the [`RetryPolicy`] schedule as is — exponential from its initial delay, with its
///   jitter.
///
/// ```
/// use std::time::Duration;
/// use azstore::update::UpdatePolicy;
/// let p = UpdatePolicy::default()
///     .max_attempts(20)
///     .max_elapsed(Duration::from_secs(5))
///     .max_delay(Duration::from_millis(500));
/// assert_eq!(p.retry().retries(), 19);
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
#[must_use]
pub struct UpdatePolicy {
    retry: RetryPolicy,
    /// `Some(s)`: contention-scaled delays with scale `s`.
    scale: Option<f64>,
    max_delay: Duration,
    max_elapsed: Option<Duration>,
    /// Whether concurrent updates of one item in this process take turns.
    turns: bool,
    /// Whether a lone conflict is retried at once (contention gauged from the write ids).
    adaptive: bool,
    /// The colliding retries per commit that an item's pace settles at.
    retry_collisions: f64,
}

impl Default for UpdatePolicy {
    /// 100 attempts within 60 s; adaptive, contention-scaled delays (scale 6) of at most 1 s.
    fn default() -> Self {
        let max_delay = Duration::from_secs(1);
        let max_elapsed = Some(Duration::from_secs(60));
        UpdatePolicy {
            retry: RetryPolicy::default()
                .max_retries(99)
                .initial_delay(Duration::from_millis(5))
                .max_delay(max_delay)
                .multiplier(2.0)
                .jitter(Jitter::Full)
                .max_elapsed(max_elapsed),
            scale: Some(6.0),
            max_delay,
            max_elapsed,
            turns: true,
            adaptive: true,
            retry_collisions: DEFAULT_RETRY_COLLISIONS,
        }
    }
}

impl From<RetryPolicy> for UpdatePolicy {
    fn from(retry: RetryPolicy) -> UpdatePolicy {
        UpdatePolicy::new(retry)
    }
}

impl UpdatePolicy {
    /// A fixed-schedule policy from a [`RetryPolicy`]: its retries are the retries after the
    /// first attempt, its delays are used as they are.
    ///
    /// ```
    /// use azstore::http::RetryPolicy;
    /// use azstore::update::UpdatePolicy;
    /// let policy = UpdatePolicy::new(RetryPolicy::default());
    /// # let _ = policy;
    /// ```
    pub fn new(retry: RetryPolicy) -> UpdatePolicy {
        UpdatePolicy {
            retry,
            scale: None,
            max_delay: Duration::MAX,
            max_elapsed: None,
            turns: true,
            adaptive: false,
            retry_collisions: DEFAULT_RETRY_COLLISIONS,
        }
    }

    /// At most `n` attempts (at least 1; default 100). An attempt is one read and, unless the
    /// closure decides otherwise, one write.
    ///
    /// ```
    /// // Fail fast in an interactive request: at most 5 reads.
    /// let policy = azstore::update::UpdatePolicy::default().max_attempts(5);
    /// # let _ = policy;
    /// ```
    pub fn max_attempts(mut self, n: u32) -> UpdatePolicy {
        self.retry = self.retry.max_retries(n.max(1) - 1);
        self
    }

    /// Give up once this much time has passed (default 60 s), checked between attempts.
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = azstore::update::UpdatePolicy::default().max_elapsed(Duration::from_secs(5));
    /// # let _ = policy;
    /// ```
    pub fn max_elapsed(mut self, d: Duration) -> UpdatePolicy {
        self.retry = self.retry.max_elapsed(Some(d));
        self.max_elapsed = Some(d);
        self
    }

    /// The largest delay between attempts (default 1 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let policy = azstore::update::UpdatePolicy::default().max_delay(Duration::from_millis(200));
    /// # let _ = policy;
    /// ```
    pub fn max_delay(mut self, d: Duration) -> UpdatePolicy {
        self.retry = self.retry.max_delay(d);
        self.max_delay = d;
        self
    }

    /// Contention-scaled delays, in units of the observed read + write round trip (values
    /// below 0.1 are raised to 0.1; default 6). Adaptive, on an item without a pace: every
    /// step aside lasts at least `scale`/3 round trips. Not adaptive: at least `scale`
    /// round trips.
    ///
    /// ```
    /// // Lower latency for a conflicting update, at some cost in throughput under contention.
    /// let policy = azstore::update::UpdatePolicy::default().scale(2.0);
    /// # let _ = policy;
    /// ```
    pub fn scale(mut self, scale: f64) -> UpdatePolicy {
        self.scale = Some(if scale.is_finite() {
            scale.max(0.1)
        } else {
            2.0
        });
        self
    }

    /// Fixed schedule: exponential from `initial_delay` with `jitter`, not scaled by the
    /// observed round trip (deterministic with [`Jitter::None`], e.g. in tests).
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::http::Jitter;
    /// let policy = azstore::update::UpdatePolicy::default()
    ///     .fixed(Duration::from_millis(20), Jitter::Full);
    /// # let _ = policy;
    /// ```
    pub fn fixed(mut self, initial_delay: Duration, jitter: Jitter) -> UpdatePolicy {
        self.retry = self.retry.initial_delay(initial_delay).jitter(jitter);
        self.scale = None;
        self
    }

    /// Whether concurrent updates of one item made in this process take turns (the default:
    /// see [In one process](crate::update#in-one-process)). `false`: every update goes ahead on its
    /// own, as if each ran in a process of its own — e.g. to exercise conflicts with several
    /// writers in one test.
    ///
    /// ```
    /// use azstore::update::UpdatePolicy;
    /// let p = UpdatePolicy::default().take_turns(false);
    /// assert!(!p.takes_turns());
    /// assert!(UpdatePolicy::default().takes_turns());
    /// ```
    pub fn take_turns(mut self, turns: bool) -> UpdatePolicy {
        self.turns = turns;
        self
    }

    /// Whether concurrent updates of one item in this process take turns (see
    /// [`take_turns`](UpdatePolicy::take_turns)).
    #[must_use]
    pub fn takes_turns(&self) -> bool {
        self.turns
    }

    /// Whether a conflict is answered according to the contention the item shows (the
    /// default for contention-scaled delays; fixed schedules ignore it). After a conflict
    /// `update` reads again at once and counts, in the stored write-id history, the writes
    /// that landed since its previous read. One write (someone got in first: a lone
    /// conflict) — it writes again at once, as a plain retry loop would, so an item written
    /// now and then costs a conflicting update one more round trip, not a backoff. More than
    /// one (the item is contended) — it steps aside for the contention-scaled delay, then
    /// reads again. A conflict whose history cannot tell (the item stores no write ids, or a
    /// writer that bypasses `update` reset them) is retried at once but counts as contended
    /// in what the process remembers, so an item written mostly that way soon gets the backoff.
    /// The process remembers, per item ([`Versioned::identity`](super::Versioned::identity)), the share
    /// of its recent conflicts that found the item contended (forgotten after 10 s without
    /// one): a conflict is answered with a read at once only with the chance that the item
    /// is not contended.
    ///
    /// `false`: every conflict waits the contention-scaled delay before the next read (the
    /// policy of azstore 0.2).
    ///
    /// ```
    /// use azstore::update::UpdatePolicy;
    /// assert!(UpdatePolicy::default().is_adaptive());
    /// assert!(!UpdatePolicy::default().adaptive(false).is_adaptive());
    /// ```
    pub fn adaptive(mut self, adaptive: bool) -> UpdatePolicy {
        self.adaptive = adaptive;
        self
    }

    /// Whether conflicts are answered according to the contention (see
    /// [`adaptive`](UpdatePolicy::adaptive)).
    #[must_use]
    pub fn is_adaptive(&self) -> bool {
        self.adaptive && self.scale.is_some()
    }

    /// The colliding retries per commit at which an item's pace settles (default 0.2; kept
    /// within 0.02–2, and the default for a value that is not a number). Adaptive policies
    /// only. Each commit lengthens the pace shared through the item when its update's retries
    /// collided after waiting it, and shortens it when they did not (see [`UpdatePolicy`]).
    ///
    /// Lower it for writers that run flat out — a batch job that updates one item as fast as
    /// it can — to waste fewer writes (and the service's time) there: the pace grows longer.
    /// Do not lower it where updates arrive as they are due (requests of a web service):
    /// under an open load near the item's capacity, the longer pace makes the updates that
    /// lost wait longer, and they fall behind the load. Measured (the `update_contention`
    /// benchmark, `benches/README.md`; 16 writer processes in closed loops, two interleaved
    /// runs): 0.1 instead of 0.2 cuts wasted writes per commit from 0.52–0.53 to 0.29–0.31
    /// on a table entity, from 0.60–0.73 to 0.36–0.48 on a blob and from 0.43–0.45 to
    /// 0.23–0.24 on a Cosmos DB item, with as many commits/s or more; but under an open load
    /// at 90 % of a plain loop's capacity on the Cosmos DB item it committed 808–814 of the
    /// 941–1,050 updates/s due, where 0.2 committed 942–972 of 984–1,020.
    /// Every writer of an item should use the same value: the pace follows each commit's.
    ///
    /// ```
    /// // A batch job that updates one counter as fast as it can.
    /// let policy = azstore::update::UpdatePolicy::default().retry_collisions(0.1);
    /// assert_eq!(policy.retry_collisions_target(), 0.1);
    /// ```
    pub fn retry_collisions(mut self, per_commit: f64) -> UpdatePolicy {
        self.retry_collisions = if per_commit.is_finite() {
            per_commit.clamp(0.02, 2.0)
        } else {
            DEFAULT_RETRY_COLLISIONS
        };
        self
    }

    /// The colliding retries per commit at which an item's pace settles (see
    /// [`retry_collisions`](UpdatePolicy::retry_collisions)).
    #[must_use]
    pub fn retry_collisions_target(&self) -> f64 {
        self.retry_collisions
    }

    /// The underlying attempt/elapsed limits (and, for a fixed policy, the schedule).
    ///
    /// ```
    /// let policy = azstore::update::UpdatePolicy::default().max_attempts(10);
    /// assert_eq!(policy.retry().retries(), 9);
    /// ```
    pub fn retry(&self) -> &RetryPolicy {
        &self.retry
    }
}

/// An update's first step aside on a paced item lasts at most this many times the time the
/// writes that beat it took to land, doubling with each further one (see
/// [`Pacer::scaled_delay`]).
const WINDOWS: u32 = 2;

/// The conflicts beyond its first that a commit meets, on average, where the item's pace
/// settles, unless the policy says otherwise (see [`UpdatePolicy::retry_collisions`] and
/// [`Pacer::pace_after`]).
const DEFAULT_RETRY_COLLISIONS: f64 = 0.2;
/// How far one commit moves the pace: by `2^(GAIN · (its conflicts beyond the first −
/// the policy's retry collisions))`, those conflicts counted up to [`MOST_COUNTED`].
const GAIN: f64 = 0.125;
/// Conflicts beyond the first counted toward the pace per commit (one unlucky writer does
/// not set everyone's pace).
const MOST_COUNTED: u32 = 3;
/// Steps aside of one update at the item's pace before each further one doubles (see
/// [`Pacer::losing_streak`]).
const LOSING_STREAK: u32 = 8;

/// One running delay schedule of an [`update`] call.
pub(super) struct Pacer<'a> {
    policy: &'a UpdatePolicy,
    backoff: crate::http::Backoff,
    /// Smoothed duration of one read + write.
    round_trip: Option<Duration>,
    previous: Duration,
    /// Steps aside so far.
    steps: u32,
    /// Whether the last step aside was cut short of the item's pace (see
    /// [`Pacer::scaled_delay`]).
    capped: bool,
    /// This update's conflicts that count toward the item's pace (see [`Pacer::conflicted`]).
    counted: u32,
    /// Whether this update is part of a backlog (see [`Pacer::backlogged`]).
    backlogged: bool,
    /// Whether the item's newest write, as this update last read it, came from an update that
    /// arrived afresh rather than from a backlog (see [`Pacer::newest_write_fresh`]).
    fresh_newest: bool,
}

impl<'a> Pacer<'a> {
    pub(super) fn new(policy: &'a UpdatePolicy) -> Pacer<'a> {
        Pacer {
            policy,
            backoff: policy.retry.schedule(),
            round_trip: None,
            previous: Duration::ZERO,
            steps: 0,
            capped: false,
            counted: 0,
            backlogged: false,
            fresh_newest: false,
        }
    }

    /// Marks this update as part of a backlog: it started right behind another update of this
    /// process on the item (a closed loop, or updates due faster than they commit). Its
    /// steps aside take the item's whole pace, not bounded by the window: its latency is the
    /// backlog's, which clears fastest when the service's time goes to commits rather than
    /// to retries that collide.
    pub(super) fn backlogged(&mut self) {
        self.backlogged = true;
    }

    /// Whether this update is part of a backlog: its writes say so in the stored token, so
    /// that other writers can tell a backlog from fresh arrivals (see
    /// [`Pacer::newest_write_fresh`]).
    pub(super) fn is_backlogged(&self) -> bool {
        self.backlogged
    }

    /// Records whether the item's newest write, as this update just read it, came from an
    /// update that arrived afresh (its token carries no backlog mark). A backlog that meets
    /// fresh arrivals is not a closed loop: its steps aside are bounded like theirs (see
    /// [`Pacer::window_bound`]).
    pub(super) fn newest_write_fresh(&mut self, fresh: bool) {
        self.fresh_newest = fresh;
    }

    /// Whether a conflict is followed by a read at once, to gauge the contention from the
    /// stored write ids before waiting (contention-scaled policies only).
    pub(super) fn adaptive(&self) -> bool {
        self.policy.is_adaptive()
    }

    /// Counts one more attempt without waiting; `false` when the limits are reached.
    pub(super) fn immediate(&mut self) -> bool {
        if self.backoff.next_delay().is_none() {
            return false;
        }
        self.policy
            .max_elapsed
            .is_none_or(|max| self.backoff.elapsed() < max)
    }

    pub(super) fn observe(&mut self, took: Duration) {
        let took = took.min(self.policy.max_delay);
        self.round_trip = Some(match self.round_trip {
            None => took,
            Some(rt) => rt.mul_f64(0.7) + took.mul_f64(0.3),
        });
    }

    /// The delay before the next attempt, or `None` when the limits are reached. `window` is
    /// what the process remembers of the item, `pace` what its stored token says (see
    /// [`Pacer::scaled_delay`]).
    pub(super) fn next_delay(
        &mut self,
        window: Option<Duration>,
        pace: Option<Duration>,
    ) -> Option<Duration> {
        let fixed = self.backoff.next_delay()?;
        if self.policy.scale.is_none() {
            return Some(fixed);
        }
        self.scaled_delay(window, pace)
    }

    /// Counts a conflict of this update toward the item's pace — unless it followed a step
    /// aside that the window bound cut short of the pace: such a retry did not wait the
    /// pace, so its collision says nothing about whether the pace is long enough, and
    /// counting it would only lengthen a pace nobody waits (see [`Pacer::scaled_delay`]).
    pub(super) fn conflicted(&mut self) {
        if !self.capped {
            self.counted += 1;
        }
    }

    /// The item's pace to store with a write of this update: how long a writer that loses a
    /// race on the item steps aside, agreed across every process through the stored token.
    /// It starts from the pace the read this write is based on carried (`stored`), and moves
    /// by the conflicts this update met before the write that count (see
    /// [`Pacer::conflicted`]). An update's first conflict is its arrival colliding with
    /// another write, which no pacing prevents; each further one is a retry that collided
    /// after waiting the pace, which a longer pace prevents. So every commit moves the pace
    /// by `2^(GAIN · (further conflicts − retry collisions))` (see
    /// [`UpdatePolicy::retry_collisions`]): longer while retries
    /// keep colliding, shorter with every commit whose retry, if any, went through, and gone
    /// (`None`: nothing stored) once it is under a quarter of a round trip. A pace starts at
    /// half a round trip and never exceeds the max delay.
    pub(super) fn pace_after(&self, stored: Option<Duration>) -> Option<Duration> {
        let round_trip = self.round_trip.unwrap_or(Duration::from_millis(5));
        let further = self.counted.saturating_sub(1).min(MOST_COUNTED);
        let excess = f64::from(further) - self.policy.retry_collisions;
        let mut pace = stored.unwrap_or(Duration::ZERO);
        if excess > 0.0 {
            pace = pace.max(round_trip / 2);
        }
        let pace = pace
            .mul_f64((GAIN * excess).exp2())
            .min(self.policy.max_delay);
        (pace >= round_trip / 4).then_some(pace)
    }

    /// The contention-scaled delay, without counting an attempt; `None` when it would end
    /// past the time limit. `window` is how long the writes that beat a recent update took
    /// to land, when the stored write ids counted them; `pace` the item's pace as its stored
    /// token carries it (see [`Pacer::pace_after`]).
    ///
    /// With a pace, a step aside lasts a uniform half to one and a half of it, however often
    /// this update lost — what every writer of the item has found lately settles it, and a
    /// writer that lost several times does not fall further behind the others — up to its
    /// [`LOSING_STREAK`]th step aside (see [`Pacer::losing_streak`]), but no
    /// longer than the window bound: two windows the first time, doubling with each further
    /// step aside of this update. The writes that beat us landed within a window, so a
    /// step aside of about that long lets each of them through once; a longer one, when the
    /// item is busy with fresh arrivals rather than with retries, only makes the updates due
    /// meanwhile pile up. A retry whose step aside was cut short does not count toward the
    /// pace (see [`Pacer::conflicted`]). An update that is part of a backlog is not bounded
    /// while the item's newest write came from a backlog too (see [`Pacer::window_bound`]).
    /// Without a pace, see [`Pacer::local_delay`].
    pub(super) fn scaled_delay(
        &mut self,
        window: Option<Duration>,
        pace: Option<Duration>,
    ) -> Option<Duration> {
        self.steps += 1;
        let delay = match pace {
            Some(pace) => {
                let draw = pace
                    .mul_f64((0.5 + rand::random::<f64>()) * self.losing_streak())
                    .min(self.policy.max_delay);
                let bound = self.window_bound(window);
                self.capped = bound < draw;
                draw.min(bound)
            }
            None => {
                self.capped = false;
                self.local_delay()
            }
        };
        if let Some(max) = self.policy.max_elapsed {
            if self.backoff.elapsed() + delay > max {
                return None;
            }
        }
        self.previous = delay;
        Some(delay)
    }

    /// The longest step aside the writes that beat a recent update allow: `WINDOWS` times the
    /// time they took to land, doubling with each further step aside of this update, and at
    /// least a round trip. Unbounded when no window is known, and for an update that is part
    /// of a backlog (see [`Pacer::backlogged`]) while the item's newest write came from a
    /// backlog too.
    ///
    /// A backlog whose newest rival arrived afresh is bounded like the fresh arrivals: they
    /// retry within the bound, and waiting the whole pace would leave the updates that are
    /// furthest behind the last to commit. Measured (16 processes on a Cosmos DB item at
    /// 90 % of the plain loop's capacity): with every backlog unbounded, the processes that
    /// fell behind stayed behind — 65–99 % of their updates backlogged, against 11–32 %
    /// in the others — and `update()` committed 880–966 of 1,118–1,130 updates/s due.
    fn window_bound(&self, window: Option<Duration>) -> Duration {
        let round_trip = self.round_trip.unwrap_or(Duration::from_millis(5));
        if self.backlogged && !self.fresh_newest {
            return Duration::MAX;
        }
        window.map_or(Duration::MAX, |window| {
            let windows = f64::from(WINDOWS) * self.doubling();
            window.mul_f64(windows).max(round_trip)
        })
    }

    /// `2^(k−LOSING_STREAK)` for this update's `k`-th step aside past its [`LOSING_STREAK`]th,
    /// else 1: a writer that the others keep beating — descheduled between its read and its
    /// write on a busy client, say — backs off further with each loss, rather than spend its
    /// attempts within a second at the item's pace (100 within 1 s, measured with 64
    /// processes on one Redis key).
    fn losing_streak(&self) -> f64 {
        self.doubling_past(LOSING_STREAK)
    }

    /// `2^(k−1)` for this update's `k`-th step aside (at most `2^16`).
    fn doubling(&self) -> f64 {
        self.doubling_past(1)
    }

    /// `2^(k−n)` for this update's `k`-th step aside, 1 up to its `n`th (at most `2^16`).
    fn doubling_past(&self, n: u32) -> f64 {
        f64::from(1u32 << self.steps.saturating_sub(n).min(16))
    }

    /// A step aside when the item carries no pace: decorrelated jitter, uniform in
    /// `[u, 3 · max(u, previous delay)]`, at most the max delay. Adaptive, `u` is `scale`/3
    /// round trips: an item without a pace is contended only now and then, and a retry soon
    /// serves it — but not sooner than the write that beat it can land, and not so soon
    /// that retries, each costing the client an attempt, crowd out the commits of writers
    /// bound by the client's CPU (Redis). Not adaptive (the policy of azstore 0.2), `u` is
    /// `scale` round trips.
    fn local_delay(&self) -> Duration {
        let scale = self.policy.scale.unwrap_or(6.0);
        let round_trip = self.round_trip.unwrap_or(Duration::from_millis(5));
        let max = self.policy.max_delay;
        let units = if self.adaptive() { scale / 3.0 } else { scale };
        let unit = round_trip.mul_f64(units).min(max);
        let high = self.previous.max(unit) * 3;
        unit.saturating_add((high - unit).mul_f64(rand::random::<f64>()))
            .min(max)
    }

    /// Waits for `wait` until the policy's time is up; `None` when it was up first (or is).
    pub(super) async fn within_limit<F: std::future::Future>(&self, wait: F) -> Option<F::Output> {
        match self.policy.max_elapsed {
            None => Some(wait.await),
            Some(max) => {
                let left = max.saturating_sub(self.elapsed());
                tokio::time::timeout(left, wait).await.ok()
            }
        }
    }

    pub(super) fn elapsed(&self) -> Duration {
        self.backoff.elapsed()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn observed(policy: &UpdatePolicy) -> Pacer<'_> {
        let mut pacer = Pacer::new(policy);
        pacer.observe(Duration::from_millis(3));
        pacer
    }

    #[test]
    fn a_losing_streak_at_the_pace_doubles_each_step_past_the_eighth() {
        let policy = UpdatePolicy::default();
        let pace = Some(Duration::from_millis(10));
        for _ in 0..50 {
            let mut pacer = observed(&policy);
            pacer.backlogged();
            for k in 1..=12u32 {
                let d = pacer.scaled_delay(None, pace).unwrap();
                let factor = 1u32 << k.saturating_sub(LOSING_STREAK);
                let (low, high) = (5 * factor, 15 * factor);
                let (low, high) = (
                    Duration::from_millis(low.into()),
                    Duration::from_millis(high.into()),
                );
                assert!(
                    d >= low && d <= high,
                    "step {k}: {d:?} not in {low:?}..{high:?}"
                );
            }
        }
        // Never past the max delay.
        let short = UpdatePolicy::default().max_delay(Duration::from_millis(40));
        let mut pacer = observed(&short);
        pacer.backlogged();
        for _ in 0..20 {
            assert!(pacer.scaled_delay(None, pace).unwrap() <= Duration::from_millis(40));
        }
    }

    #[test]
    fn without_a_pace_a_step_aside_is_decorrelated_jitter_from_two_round_trips() {
        let policy = UpdatePolicy::default();
        let mut longest_first = Duration::ZERO;
        for _ in 0..200 {
            let mut pacer = observed(&policy);
            let mut previous = Duration::from_millis(6);
            for k in 0..5u32 {
                let d = pacer.scaled_delay(None, None).expect("within time");
                // At least scale/3 = 2 round trips of 3 ms, at most 3x the previous step.
                assert!(d >= Duration::from_millis(6), "step {k}: {d:?}");
                assert!(d <= previous * 3, "step {k}: {d:?} > 3 x {previous:?}");
                if k == 0 {
                    longest_first = longest_first.max(d);
                }
                previous = d.max(Duration::from_millis(6));
            }
        }
        assert!(
            longest_first > Duration::from_millis(12),
            "jittered up to 18 ms: {longest_first:?}"
        );
        // Never past the max delay.
        let short = UpdatePolicy::default().max_delay(Duration::from_millis(10));
        let mut pacer = observed(&short);
        for _ in 0..12 {
            assert!(pacer.scaled_delay(None, None).unwrap() <= Duration::from_millis(10));
        }
        // The policy of azstore 0.2 (not adaptive): at least `scale` round trips.
        let fixed = UpdatePolicy::default().adaptive(false);
        let mut pacer = observed(&fixed);
        let first = pacer.scaled_delay(None, None).expect("within time");
        assert!(
            first >= Duration::from_millis(18),
            "scale 6 x 3 ms: {first:?}"
        );
    }

    #[test]
    fn with_a_pace_a_step_aside_lasts_about_the_pace_within_the_window_bound() {
        let policy = UpdatePolicy::default();
        let pace = Some(Duration::from_millis(100));
        for _ in 0..50 {
            // Without a window: half to one and a half of the pace, however many came before.
            let mut pacer = observed(&policy);
            for _ in 0..6 {
                let d = pacer.scaled_delay(None, pace).unwrap();
                assert!(
                    d >= Duration::from_millis(50) && d <= Duration::from_millis(150),
                    "{d:?}"
                );
                assert!(!pacer.capped);
            }
            // The writes that beat us landed within 5 ms: at most 2 windows the first time,
            // doubling with each further step aside, until the pace itself is shorter.
            let mut pacer = observed(&policy);
            for k in 0..6u32 {
                let d = pacer
                    .scaled_delay(Some(Duration::from_millis(5)), pace)
                    .unwrap();
                let bound = Duration::from_millis(10) * (1 << k);
                assert!(d <= bound, "step {k}: {d:?} > {bound:?}");
                if k < 2 {
                    assert_eq!(d, bound, "cut short of the pace");
                    assert!(pacer.capped);
                }
                if k == 5 {
                    // 320 ms: never cut short.
                    assert!(!pacer.capped && d <= Duration::from_millis(150), "{d:?}");
                }
            }
            // Part of a backlog: the whole pace, whatever the window.
            let mut pacer = observed(&policy);
            pacer.backlogged();
            let d = pacer
                .scaled_delay(Some(Duration::from_millis(5)), pace)
                .unwrap();
            assert!(d >= Duration::from_millis(50), "{d:?}");
            assert!(!pacer.capped);
            // A backlog whose newest rival arrived afresh is bounded like the fresh arrivals.
            let mut pacer = observed(&policy);
            pacer.backlogged();
            pacer.newest_write_fresh(true);
            let d = pacer
                .scaled_delay(Some(Duration::from_millis(5)), pace)
                .unwrap();
            assert_eq!(d, Duration::from_millis(10), "two windows");
            assert!(pacer.capped);
            pacer.newest_write_fresh(false);
            let d = pacer
                .scaled_delay(Some(Duration::from_millis(5)), pace)
                .unwrap();
            assert!(d >= Duration::from_millis(50), "{d:?}");
        }
    }

    #[test]
    fn the_pace_settles_where_commits_waste_little() {
        let policy = UpdatePolicy::default();
        let with = |conflicts: u32, stored: Option<Duration>| {
            let mut pacer = Pacer::new(&policy);
            pacer.observe(Duration::from_millis(4));
            for _ in 0..conflicts {
                pacer.conflicted();
            }
            pacer.pace_after(stored)
        };
        // A calm item has no pace, and a lone conflict does not start one.
        assert_eq!(with(0, None), None);
        assert_eq!(with(1, None), None);
        // A retry that collided starts it: half a round trip, times 2^(0.125 · 0.8).
        assert_eq!(with(2, None).map(|p| p.as_micros()), Some(2143));
        // Commits that met several conflicts lengthen it; commits without any shorten it.
        let p = Duration::from_millis(20);
        assert!(with(3, Some(p)).unwrap() > p);
        assert!(with(1, Some(p)).unwrap() < p);
        assert!(with(0, Some(p)).unwrap() < p);
        assert_eq!(
            with(4, Some(p)),
            with(40, Some(p)),
            "at most 3 further conflicts count"
        );
        assert_eq!(
            with(8, Some(Duration::from_secs(30))),
            Some(policy.max_delay),
            "never past the max delay"
        );
        // Without conflicts it fades out: 50 ms to under 1 ms at 2^-0.025 per commit.
        let mut pace = Some(Duration::from_millis(50));
        let mut commits = 0;
        while let Some(p) = pace {
            pace = with(0, Some(p));
            commits += 1;
        }
        assert_eq!(commits, 226);
        // A retry whose step aside was cut short of the pace does not count toward it.
        let mut pacer = observed(&policy);
        pacer.conflicted();
        pacer
            .scaled_delay(Some(Duration::from_millis(1)), Some(p))
            .unwrap();
        assert!(pacer.capped);
        pacer.conflicted();
        pacer.conflicted();
        assert_eq!(pacer.counted, 1);
        assert!(
            pacer.pace_after(Some(p)).unwrap() < p,
            "only the first counted"
        );
        pacer.scaled_delay(None, Some(p)).unwrap();
        pacer.conflicted();
        assert_eq!(pacer.counted, 2);
    }

    #[test]
    fn the_pace_settles_at_the_policys_retry_collisions() {
        // Commits whose retries collide 0.15 times on average: three further conflicts in
        // every 20 commits.
        let settle = |policy: &UpdatePolicy| {
            let mut pace = Some(Duration::from_millis(20));
            for commit in 0..400u32 {
                let mut pacer = Pacer::new(policy);
                pacer.observe(Duration::from_millis(4));
                let further = if commit % 20 == 0 { 3 } else { 0 };
                for _ in 0..=further {
                    pacer.conflicted();
                }
                pace = pacer.pace_after(pace);
            }
            pace.unwrap_or(Duration::ZERO)
        };
        // Over the default 0.2: the pace shortens. Over 0.1: it lengthens.
        let default = UpdatePolicy::default();
        assert!(settle(&default) < Duration::from_millis(20));
        let flat_out = UpdatePolicy::default().retry_collisions(0.1);
        assert!(settle(&flat_out) > Duration::from_millis(20));
        // Kept within 0.02-2; not a number: the default.
        assert_eq!(default.retry_collisions_target(), 0.2);
        let p = UpdatePolicy::default().retry_collisions(0.0);
        assert_eq!(p.retry_collisions_target(), 0.02);
        let p = UpdatePolicy::default().retry_collisions(9.0);
        assert_eq!(p.retry_collisions_target(), 2.0);
        let p = UpdatePolicy::default().retry_collisions(f64::NAN);
        assert_eq!(p.retry_collisions_target(), 0.2);
    }
}
