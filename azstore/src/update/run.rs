//! The [`update`] loop (one [`Run`] per call: read, decide, write, classify the failure) and
//! [`create_only`].

use std::time::Duration;

use tokio::time::Instant;
use tracing::Instrument;

use super::ambiguity::{
    Pending, from_backlog, ids, is_create_conflict, is_replace_conflict, new_write_id, not_stored,
    outcome_unknown, pace_in, position_in, recognise, recovered, write_token,
};
use super::gate::{Gate, Handoff};
use super::memory;
use super::policy::Pacer;
use super::telemetry;
use super::{Change, Current, Decision, Outcome, UpdatePolicy, Versioned};
use crate::conditions::ETag;
#[cfg(doc)]
use crate::error::ErrorKind;
use crate::error::{Error, RequestSent, Result};

/// Read-modify-write `resource` until a write sticks.
///
/// `decide` is shown the current value (`None` when the resource does not exist) and returns
/// a [`Decision`]. **It may run several times** — once per attempt, each time with the value
/// as it is then — so it must be free of side effects: compute, don't act.
///
/// Conflicts (412, create-race 409, 404 of a concurrently deleted resource) and ambiguous
/// writes are retried as described in the [module docs](crate::update); every other error is returned
/// unchanged. When the policy's attempts or time run out, the error has kind
/// [`ErrorKind::RetriesExhausted`] and carries the last conflict as its source (and its
/// status and code). A last write of unknown outcome is settled by one more read first: a
/// write that applied is a success, and the error's [`RequestSent`] says whether the write may
/// be stored (`Maybe`) or is not (`Yes`) — see [After an ambiguous
/// failure](crate::update#after-an-ambiguous-failure).
///
/// Time: the policy's `max_elapsed` is checked between attempts, on tokio's clock (so a test
/// with paused time drives it); each read and write is
/// bounded by its client's time budget ([`ClientOptions::total_timeout`]), so a call ends
/// within `max_elapsed` plus at most one read, one write and the settling read.
///
/// # Example
///
/// Reserve a seat in a shared JSON document: several processes may run this at once and
/// none of their reservations is lost. The closure decides from the value it is shown — write,
/// leave alone, or abort with a reason — and may run once per attempt.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use azstore::update::{Change, Decision, UpdatePolicy, update};
/// use azstore::blob::{BlobJson};
///
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// // seat -> guest
/// let seats = BlobJson::<BTreeMap<u32, String>>::new(blob);
/// let result = update(&seats, &UpdatePolicy::default(), |current| {
///     let mut seats = current.cloned().unwrap_or_default();
///     match seats.get(&12) {
///         Some(guest) if guest == "ada" => Decision::NoChange, // already ours
///         Some(_) => Decision::abort("seat 12 is taken"),
///         None => {
///             seats.insert(12, "ada".to_string());
///             Decision::Write(seats)
///         }
///     }
/// })
/// .await;
/// match result {
///     Ok(outcome) if outcome.change == Change::Unchanged => println!("already reserved"),
///     Ok(outcome) => println!("reserved after {} attempt(s)", outcome.attempts),
///     Err(e) if e.kind() == azstore::ErrorKind::Aborted => println!("{}", e.message()),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
///
/// [`ClientOptions::total_timeout`]: crate::http::ClientOptions::total_timeout
pub async fn update<R, F>(
    resource: &R,
    policy: &UpdatePolicy,
    decide: F,
) -> Result<Outcome<R::Value>>
where
    R: Versioned,
    F: FnMut(Option<&R::Value>) -> Decision<R::Value>,
{
    telemetry::update(async {
        let key = resource.identity();
        // An adaptive update that starts right behind the previous one of this process on
        // the item is part of a backlog (see `Pacer::backlogged`).
        let adaptive = policy.is_adaptive();
        let backlogged = adaptive && memory::backlogged(&key);
        let result = update_loop(resource, policy, decide, &key, backlogged).await;
        if adaptive {
            memory::ended(key);
        }
        result
    })
    .await
}

/// The loop of [`update`] (which runs it inside its span).
async fn update_loop<R, F>(
    resource: &R,
    policy: &UpdatePolicy,
    mut decide: F,
    key: &str,
    backlogged: bool,
) -> Result<Outcome<R::Value>>
where
    R: Versioned,
    F: FnMut(Option<&R::Value>) -> Decision<R::Value>,
{
    let mut pacer = Pacer::new(policy);
    if backlogged {
        pacer.backlogged();
    }
    let mut run = Run {
        pacer,
        pending: Vec::new(),
        delete_pending: None,
        attempts: 0,
        conflicts: 0,
        written: None,
    };
    let mut last_error: Option<Error> = None;
    // Attempts on the same item from this process take turns (see "In one process").
    let gate = policy.takes_turns().then(|| Gate::for_key(key));
    let mut turn = None;
    // After a conflict under an adaptive policy: what the read that lost saw, to count the
    // writes that landed since (see `UpdatePolicy::adaptive`).
    let mut probe: Option<Probe> = None;
    loop {
        if let Some(g) = gate.as_ref().filter(|_| turn.is_none()) {
            turn = run.pacer.within_limit(g.turn()).await;
        }
        let attempt_started = Instant::now();
        let span = telemetry::update_attempt(run.attempts + 1);
        let unknown = run.unknown();
        // The state the update before ours in this process wrote, if it handed it over with
        // the turn and it is fresh: it stands for the read (never to settle a write of ours).
        let handed = turn
            .as_mut()
            .and_then(|t| t.take())
            .filter(|_| !unknown)
            .and_then(|h| h.restore(resource));
        let read = handed.is_none();
        let mut current = match handed {
            Some(state) => Some(state),
            None => resource
                .read()
                .instrument(span.clone())
                .await
                .map_err(|e| {
                    if unknown {
                        // The read that was to settle our last write failed: it may have
                        // applied.
                        e.context(
                            "the last write may have been applied; the read to find out failed",
                        )
                        .with_sent(RequestSent::Maybe)
                    } else {
                        e
                    }
                })?,
        };
        // Did one of our earlier, failed-looking writes apply after all?
        if let Some(done) = run.proven(&mut current) {
            return Ok(done);
        }
        if unknown && !not_stored(current.as_ref(), &run.pending) {
            // The resource changed and nothing can tell whether our write is in it: its write-id
            // history is full (16 or more writes landed since), a writer that bypasses `update`
            // reset it, or it stores no write ids. Writing again could apply the change twice.
            return Err(run.unrecognisable(last_error.take()));
        }
        run.delete_pending = None;
        // The item's pace, as the writes before ours left it in the stored token: how long a
        // writer that loses a race on it steps aside (see `Pacer::pace_after`).
        let pace = current
            .as_ref()
            .and_then(|c| c.write_id.as_deref())
            .and_then(pace_in)
            .filter(|_| run.pacer.adaptive());
        // Whether the newest write came from an update that arrived afresh rather than from
        // a backlog (see `Pacer::window_bound`).
        run.pacer.newest_write_fresh(
            current
                .as_ref()
                .and_then(|c| c.write_id.as_deref())
                .is_some_and(|t| !from_backlog(t)),
        );
        if let Some(p) = probe.take() {
            let landed = p.landed(current.as_ref());
            // How long the writes that beat us took to land, when the history counted them.
            let window = (landed == Landed::Several { counted: true }).then(|| p.at.elapsed());
            // A history that cannot tell counts toward the item's contention, but this
            // conflict is retried at once, as a plain loop would.
            memory::record(key, landed != Landed::One, window);
            // Several writes landed since our read: step aside, then read again — with the
            // chance that the item is contended, as this process has seen it lately
            // (occasional contention is retried at once).
            let recall = memory::recall(key);
            if matches!(landed, Landed::Several { .. }) && rand::random::<f64>() < recall.share {
                turn = None;
                let Some(delay) = run.pacer.scaled_delay(recall.window, pace) else {
                    let err = last_error.take().unwrap_or_else(|| {
                        Error::new(crate::error::ErrorKind::RetriesExhausted, "out of time")
                    });
                    return run.settle(resource, err, Ending::Exhausted).await;
                };
                tracing::trace!(?delay, "update: the item is contended; stepping aside");
                tokio::time::sleep(delay).await;
                continue;
            }
        }
        let seen = Probe::of(current.as_ref());

        run.attempts += 1;
        let decision = decide(current.as_ref().map(|c| &c.value));
        let step = run.attempt(resource, decision, current);
        let err = match step.instrument(span).await {
            Step::Done(result) => {
                // Another update of the item waits in this process: hand it what we wrote.
                if let (Some(turn), Some(gate), Ok(done)) = (turn.as_mut(), &gate, &result) {
                    if gate.others_running() {
                        **turn = run.handoff(resource, done);
                    }
                }
                return result;
            }
            Step::Retry(err) => err,
        };
        if read {
            // A round trip is a read and a write.
            run.pacer.observe(attempt_started.elapsed());
        }
        let unanswered = err.request_sent() == RequestSent::Maybe;
        if !unanswered {
            // Our turn ends with the answer; after a write without one, the read that finds
            // out whether it applied comes first, before any other writer of this process.
            turn = None;
            // Read again at once and let the stored write ids say whether the conflict was a
            // lone one (write again) or the item is contended (step aside) — with the chance
            // that the item is not contended, as this process has seen it lately: under
            // sustained contention a conflict goes straight to the backoff.
            if run.pacer.adaptive() && rand::random::<f64>() >= memory::recall(key).share {
                if !run.pacer.immediate() {
                    return run.settle(resource, err, Ending::Exhausted).await;
                }
                probe = Some(seen);
                last_error = Some(err);
                continue;
            }
        }
        let window = run
            .pacer
            .adaptive()
            .then(|| memory::recall(key).window)
            .flatten();
        let Some(mut delay) = run.pacer.next_delay(window, pace) else {
            // Out of attempts or time. A last write of unknown outcome is settled first: the
            // caller must never be told "failed" about a write that applied.
            return run.settle(resource, err, Ending::Exhausted).await;
        };
        if unanswered {
            // Find out at once whether it applied: every write landing in between pushes our
            // id further down the stored history.
            delay = Duration::ZERO;
        }
        last_error = Some(err);
        tokio::time::sleep(delay).await;
    }
}

/// What the read before a conflicting write saw: the newest stored write id, or that the item
/// was absent.
struct Probe {
    head: Option<String>,
    absent: bool,
    /// When that read was answered.
    at: Instant,
}

impl Probe {
    fn of<T>(current: Option<&Current<T>>) -> Probe {
        Probe {
            head: current
                .and_then(|c| c.write_id.as_deref())
                .and_then(|t| ids(t).next())
                .map(str::to_owned),
            absent: current.is_none(),
            at: Instant::now(),
        }
    }

    /// How many writes `now` shows landed since the read this probe describes.
    fn landed<T>(&self, now: Option<&Current<T>>) -> Landed {
        let Some(now) = now else {
            // Deleted since: nothing to wait for.
            return Landed::One;
        };
        let Some(token) = now.write_id.as_deref() else {
            return Landed::Unknown;
        };
        let landed = match (&self.head, self.absent) {
            (Some(head), _) => position_in(token, head),
            // Created since our read found it absent: the ids stored since its creation.
            (None, true) => Some(ids(token).count()),
            (None, false) => return Landed::Unknown,
        };
        match landed {
            Some(0 | 1) => Landed::One,
            Some(_) => Landed::Several { counted: true },
            // So many that our read's id was pushed out of the history.
            None => Landed::Several { counted: false },
        }
    }
}

/// What a probe read found about the writes since the read that lost.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Landed {
    /// One (or the item was deleted since): a lone conflict.
    One,
    /// More than one: the item is contended. `counted`: the history still holds the id our
    /// read saw (else so many writes landed that it was pushed out).
    Several { counted: bool },
    /// The stored value carries no write ids, or the value we read had none (a writer that
    /// bypasses `update`).
    Unknown,
}

/// The state of one running [`update`].
struct Run<'p, T> {
    pacer: Pacer<'p>,
    /// Writes of ours that failed in a way that does not prove they were not applied.
    pending: Vec<Pending<T>>,
    /// After a failed delete: `Some(counted as a conflict)`.
    delete_pending: Option<bool>,
    attempts: u32,
    conflicts: u32,
    /// The write-id token of the write that committed, and how long that write took.
    written: Option<(String, Duration)>,
}

/// Where one attempt's decision led.
enum Step<T> {
    /// `update` ends with this.
    Done(Result<Outcome<T>>),
    /// Wait and try again after this error (a conflict, or a write without an answer).
    Retry(Error),
}

/// How an `update` that has to stop ends.
#[derive(Clone, Copy)]
enum Ending {
    /// The policy's attempts or time ran out: `RetriesExhausted`.
    Exhausted,
    /// A write failed with an error that is returned as it is (a 5xx).
    Failed,
}

impl<T> Run<'_, T> {
    /// An outcome with this run's counts.
    fn outcome(&self, value: Option<T>, etag: Option<ETag>, change: Change) -> Outcome<T> {
        Outcome {
            value,
            etag,
            change,
            attempts: self.attempts,
            conflicts: self.conflicts,
            recovered_ambiguous: 0,
        }
    }

    /// The state `done` stored, to hand to the next update of the item in this process (see
    /// [`Handoff`]): when this run's write committed it, and the adapter offers snapshots.
    fn handoff<R: Versioned<Value = T>>(&self, resource: &R, done: &Outcome<T>) -> Option<Handoff> {
        let (token, took) = self.written.as_ref()?;
        match (done.change, &done.value, &done.etag) {
            (Change::Replaced | Change::Created, Some(value), Some(etag)) => {
                Handoff::of(resource, value, etag, token, *took)
            }
            _ => None,
        }
    }

    /// The error for a write of unknown outcome on a resource that stores no write ids, once
    /// the stored state has changed: it may be ours.
    fn unrecognisable(&self, last: Option<Error>) -> Error {
        let message = format!(
            "the last write may have been applied: the resource changed and its stored write \
             ids cannot tell whether the change is ours (after {} attempt(s))",
            self.attempts
        );
        match last {
            Some(e) => e.context(message),
            None => Error::new(crate::error::ErrorKind::Timeout, message),
        }
        .with_sent(RequestSent::Maybe)
    }

    /// Whether a write or delete of ours has an unknown outcome.
    fn unknown(&self) -> bool {
        self.delete_pending == Some(false) || self.pending.iter().any(|p| p.unknown)
    }

    /// What `current` proves about an earlier write or delete of ours that looked failed: a
    /// write recognised by its id in the stored history, or a delete whose resource is gone.
    fn proven(&mut self, current: &mut Option<Current<T>>) -> Option<Outcome<T>> {
        if let Some((i, pos)) = recognise(current.as_ref(), &self.pending) {
            let p = self.pending.swap_remove(i);
            return Some(recovered(
                p,
                pos,
                current.take(),
                self.attempts,
                self.conflicts,
            ));
        }
        let counted = self.delete_pending.filter(|_| current.is_none())?;
        Some(Outcome {
            conflicts: self.conflicts - u32::from(counted),
            recovered_ambiguous: 1,
            ..self.outcome(None, None, Change::Deleted)
        })
    }

    /// Carries out `decision` about `current`.
    async fn attempt<R: Versioned<Value = T>>(
        &mut self,
        resource: &R,
        decision: Decision<T>,
        current: Option<Current<T>>,
    ) -> Step<T> {
        match (decision, current) {
            (Decision::Abort(e), _) => Step::Done(Err(e)),
            (Decision::NoChange | Decision::Delete, None) => {
                Step::Done(Ok(self.outcome(None, None, Change::Unchanged)))
            }
            (Decision::NoChange, Some(cur)) => Step::Done(Ok(self.outcome(
                Some(cur.value),
                Some(cur.etag),
                Change::Unchanged,
            ))),
            (Decision::Delete, Some(cur)) => self.delete(resource, &cur.etag).await,
            (Decision::Write(value), current) => self.write(resource, value, current).await,
        }
    }

    async fn delete<R: Versioned<Value = T>>(&mut self, resource: &R, etag: &ETag) -> Step<T> {
        let e = match resource.delete(etag).await {
            Ok(()) => return Step::Done(Ok(self.outcome(None, None, Change::Deleted))),
            Err(e) => e,
        };
        if e.is_not_found() && is_replace_conflict(&e) {
            // Gone already: deleted concurrently, or by our own earlier try whose response
            // was lost and that the pipeline repeated. Either way: deleted.
            Step::Done(Ok(self.outcome(None, None, Change::Deleted)))
        } else if e.request_sent() == RequestSent::Maybe {
            // Refused or unanswered: the pipeline may have repeated a delete whose response
            // was lost (the repeat then gets 412). If the next read finds the resource
            // absent, count it as our delete.
            self.delete_pending = Some(false);
            Step::Retry(e)
        } else if outcome_unknown(&e) {
            // A server error that may have been applied: find out, then answer.
            self.delete_pending = Some(false);
            Step::Done(self.settle(resource, e, Ending::Failed).await)
        } else if is_replace_conflict(&e) {
            telemetry::update_conflict(&e);
            self.conflicts += 1;
            self.pacer.conflicted();
            self.delete_pending = Some(true);
            Step::Retry(e)
        } else {
            Step::Done(Err(e))
        }
    }

    async fn write<R: Versioned<Value = T>>(
        &mut self,
        resource: &R,
        value: T,
        current: Option<Current<T>>,
    ) -> Step<T> {
        let id = new_write_id();
        let started = Instant::now();
        let (result, change, condition, token) = match current {
            Some(cur) => {
                let stored = cur.write_id.as_deref();
                let pace = self.pacer.pace_after(stored.and_then(pace_in));
                let token = write_token(&id, stored, pace, self.pacer.is_backlogged());
                let result = resource.replace(&value, &cur.etag, &token).await;
                (result, Change::Replaced, Some(cur.etag), token)
            }
            None => {
                let token = write_token(&id, None, None, false);
                let result = resource.create(&value, &token).await;
                (result, Change::Created, None, token)
            }
        };
        let e = match result {
            Ok(etag) => {
                self.written = Some((token, started.elapsed()));
                return Step::Done(Ok(self.outcome(Some(value), Some(etag), change)));
            }
            Err(e) => e,
        };
        let conflict = match change {
            Change::Created => is_create_conflict(&e),
            _ => is_replace_conflict(&e),
        };
        let unknown = !conflict && outcome_unknown(&e);
        if !conflict && !unknown {
            return Step::Done(Err(e));
        }
        if conflict {
            telemetry::update_conflict(&e);
            self.conflicts += 1;
            self.pacer.conflicted();
        }
        // A conflict may itself be caused by our write: a retrying layer below repeated a PUT
        // whose response was lost, and the repeat met our first.
        self.pending.push(Pending {
            id,
            value: Some(value),
            change,
            counted: conflict,
            unknown,
            condition,
        });
        if unknown && e.request_sent() != RequestSent::Maybe {
            // A server error that may have been applied: find out, then answer (retrying
            // would only meet the same failing server).
            return Step::Done(self.settle(resource, e, Ending::Failed).await);
        }
        Step::Retry(e)
    }

    /// Ends an `update` that stops with `err`. If a write of ours has an unknown outcome, one
    /// more read settles it first: a write recognised in the stored history is a success;
    /// otherwise the error says whether the write may be in the stored state
    /// (`RequestSent::Maybe`) or is certainly not (`RequestSent::Yes`).
    async fn settle<R: Versioned<Value = T>>(
        &mut self,
        resource: &R,
        err: Error,
        ending: Ending,
    ) -> Result<Outcome<T>> {
        let (attempts, conflicts, elapsed) = (self.attempts, self.conflicts, self.pacer.elapsed());
        let finish = |err: Error, sent: RequestSent, note: &str| -> Error {
            match ending {
                Ending::Exhausted => Error::retries_exhausted(
                    format!(
                        "gave up after {attempts} attempt(s) in {elapsed:?} ({conflicts} \
                         conflict(s)){note}; the last: {err}"
                    ),
                    err,
                )
                .with_sent(sent),
                Ending::Failed if note.is_empty() => err,
                Ending::Failed => err.context(note.trim_start_matches("; ")).with_sent(sent),
            }
        };
        if !self.unknown() {
            return Err(finish(err, RequestSent::Yes, ""));
        }
        let mut current = match resource.read().await {
            Ok(c) => c,
            Err(read_err) => {
                return Err(finish(
                    err,
                    RequestSent::Maybe,
                    &format!(
                        "; the last write may have been applied: the read to find out failed \
                         ({read_err})"
                    ),
                ));
            }
        };
        if self.delete_pending != Some(false) {
            // Only a delete of unknown outcome is proven by an absent resource here.
            self.delete_pending = None;
        }
        if let Some(done) = self.proven(&mut current) {
            return Ok(done);
        }
        if not_stored(current.as_ref(), &self.pending) {
            Err(finish(
                err,
                RequestSent::Yes,
                "; the last write was not applied",
            ))
        } else {
            Err(finish(
                err,
                RequestSent::Maybe,
                "; the last write may have been applied (the stored value no longer shows it)",
            ))
        }
    }
}

/// Creates `value` only if `resource` does not exist yet (the "designated create"):
/// If-None-Match `*` for a blob, Insert Entity for a table. Returns the new ETag, or the
/// service's error (409 `BlobAlreadyExists` / `EntityAlreadyExists`) when it exists.
///
/// A create whose response was lost (timeout, dropped connection) or whose pipeline retry met
/// itself is recognised by its write id: when the stored value is ours, this returns its ETag
/// instead of a false "already exists".
///
/// ```no_run
/// use azstore::update::{create_only};
/// use azstore::blob::{BlobJson};
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let config = BlobJson::<Vec<String>>::new(blob);
/// match create_only(&config, &vec!["eu-west".to_string()]).await {
///     Ok(etag) => println!("created, version {etag}"),
///     Err(e) if e.is_conflict() => println!("someone else created it first"),
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
pub async fn create_only<R: Versioned>(resource: &R, value: &R::Value) -> Result<ETag> {
    let id = new_write_id();
    match resource.create(value, &id).await {
        Ok(etag) => Ok(etag),
        Err(e) if is_create_conflict(&e) || outcome_unknown(&e) => match resource.read().await {
            Ok(Some(cur))
                if cur.write_id.as_deref().and_then(|t| position_in(t, &id)) == Some(0) =>
            {
                Ok(cur.etag)
            }
            Ok(_) => Err(e),
            // The read to settle an unanswered create failed: it may have applied.
            Err(_) if outcome_unknown(&e) => Err(e
                .context("the create may have been applied; the read to find out failed")
                .with_sent(RequestSent::Maybe)),
            Err(_) => Err(e),
        },
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::*;
    use crate::error::{ErrorCode, ErrorKind};
    use crate::http::Jitter;

    /// A resource another writer changes right after every read of ours, so every replace
    /// meets a 412: `update` can only run out of time.
    struct AlwaysContended {
        version: AtomicU64,
    }

    impl Versioned for AlwaysContended {
        type Value = u64;

        async fn read(&self) -> Result<Option<Current<u64>>> {
            let v = self.version.fetch_add(1, Ordering::SeqCst);
            Ok(Some(Current {
                value: v,
                etag: ETag::new(format!("\"{v}\"")),
                write_id: None,
            }))
        }

        async fn replace(&self, _: &u64, etag: &ETag, _: &str) -> Result<ETag> {
            let now = ETag::new(format!("\"{}\"", self.version.load(Ordering::SeqCst)));
            if *etag == now {
                return Ok(now);
            }
            let code = Some(ErrorCode::ConditionNotMet);
            Err(Error::from_response(412, code, "changed".into(), None).with_sent(RequestSent::Yes))
        }

        async fn create(&self, _: &u64, _: &str) -> Result<ETag> {
            unreachable!("the resource exists")
        }

        async fn delete(&self, _: &ETag) -> Result<()> {
            unreachable!("nothing is deleted")
        }

        fn identity(&self) -> String {
            "test:always-contended".into()
        }

        fn stores_write_ids(&self) -> bool {
            false
        }
    }

    /// `max_elapsed` runs on tokio's clock: with time paused the limit is reached after 30 s
    /// of (virtual) backoff without waiting for them.
    #[tokio::test(start_paused = true)]
    async fn time_limit_follows_paused_time() {
        let real = std::time::Instant::now();
        let started = Instant::now();
        let policy = UpdatePolicy::default()
            .max_attempts(10_000)
            .max_elapsed(Duration::from_secs(30))
            .fixed(Duration::from_millis(100), Jitter::None);
        let resource = AlwaysContended {
            version: AtomicU64::new(0),
        };
        let err = update(&resource, &policy, |v| {
            Decision::Write(v.copied().unwrap_or(0) + 1)
        })
        .await
        .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::RetriesExhausted, "{err}");
        assert_eq!(err.status(), Some(412));
        let virtual_time = started.elapsed();
        assert!(
            virtual_time > Duration::from_secs(28) && virtual_time <= Duration::from_secs(30),
            "{virtual_time:?}"
        );
        assert!(
            real.elapsed() < Duration::from_secs(5),
            "{:?}",
            real.elapsed()
        );
        // 100, 200, 400, 800 ms, then 1 s (the max delay) each: about 30 attempts, not 10 000.
        assert!((25..40).contains(&resource.version.load(Ordering::SeqCst)));
    }
}
