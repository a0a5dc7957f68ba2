//! The contract of [`Versioned`] + [`update`]: one generic function per guarantee, called
//! once per backend (blob, table entity, Redis key, Cosmos DB item) from azstore's
//! `tests/it/contract_versioned.rs`.
//!
//! Each guarantee returns `Err(what went wrong)` instead of panicking, so that a test can
//! also show that a deliberately broken adapter fails it ([`FreshKeyEachCall`]). A backend
//! test calls it with `.expect(..)`.
//!
//! The item under test is a counter; [`Counter`] says how a backend's value type holds the
//! count (a table entity needs its keys in the value, a Cosmos DB item a JSON object).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use azstore::update::{Change, Current, Decision, Outcome, UpdatePolicy, Versioned, update};

/// How a backend's value type holds the counter the guarantees increment.
pub struct Counter<V> {
    /// The value holding count `n`.
    pub value: fn(u64) -> V,
    /// The count a value holds.
    pub count: fn(&V) -> u64,
}

impl<V> Clone for Counter<V> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<V> Copy for Counter<V> {}

impl Counter<u64> {
    /// The value is the count itself (a JSON number: blobs, Redis keys).
    pub const PLAIN: Counter<u64> = Counter {
        value: |n| n,
        count: |n| *n,
    };
}

impl<V> Counter<V> {
    fn increment(self) -> impl FnMut(Option<&V>) -> Decision<V> {
        move |cur| Decision::Write((self.value)(cur.map_or(0, self.count) + 1))
    }
}

/// Concurrent tasks of this many increments each.
pub const TASKS: usize = 8;
/// Increments per task.
pub const PER_TASK: usize = 25;

/// What a run of concurrent increments did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tally {
    /// Updates that returned `Ok`.
    pub commits: u64,
    /// `Outcome::conflicts` summed over every update: writes refused because of a
    /// concurrent change (each one a wasted request, request units on Cosmos DB).
    pub conflicts: u64,
    /// `Outcome::attempts` summed.
    pub attempts: u64,
    /// The count stored at the end.
    pub stored: u64,
    /// Every value an update reported as written (each must be unique).
    pub values: BTreeSet<u64>,
}

/// The policy of the guarantees: the default, with time to ride out a busy machine.
pub fn policy() -> UpdatePolicy {
    UpdatePolicy::default().max_elapsed(Duration::from_secs(120))
}

/// `tasks` tasks, each with its own item value from `new_item` (its own client, as a user
/// would make one per task), each running `update()` `per_task` times with `policy`.
/// Updates that fail are reported as `Err`. Used by the guarantees and by measurements.
pub async fn increments<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
    tasks: usize,
    per_task: usize,
    policy: UpdatePolicy,
) -> Result<Tally, String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    let mut handles = Vec::new();
    for _ in 0..tasks {
        let item = new_item();
        let policy = policy.clone();
        handles.push(tokio::spawn(async move {
            let mut outs = Vec::new();
            for _ in 0..per_task {
                let out = update(&item, &policy, counter.increment())
                    .await
                    .map_err(|e| format!("an update failed: {e}"))?;
                outs.push((
                    out.value.as_ref().map(counter.count),
                    out.conflicts,
                    out.attempts,
                ));
            }
            Ok::<_, String>(outs)
        }));
    }
    let mut tally = Tally::default();
    for h in handles {
        for (value, conflicts, attempts) in h.await.map_err(|e| format!("task: {e}"))?? {
            let value = value.ok_or("an update reported no value")?;
            tally.commits += 1;
            tally.conflicts += u64::from(conflicts);
            tally.attempts += u64::from(attempts);
            if !tally.values.insert(value) {
                return Err(format!("{value} was reported written twice"));
            }
        }
    }
    tally.stored = stored(&new_item(), counter).await?;
    Ok(tally)
}

async fn stored<R: Versioned>(item: &R, counter: Counter<R::Value>) -> Result<u64, String> {
    let cur: Option<Current<R::Value>> = item
        .read()
        .await
        .map_err(|e| format!("the final read failed: {e}"))?;
    Ok(cur.map_or(0, |c| (counter.count)(&c.value)))
}

fn all_landed(tally: &Tally, n: u64) -> Result<(), String> {
    if tally.stored != n || tally.values != (1..=n).collect::<BTreeSet<u64>>() {
        return Err(format!(
            "{n} increments: stored {}, values written {:?}",
            tally.stored, tally.values
        ));
    }
    Ok(())
}

/// **Concurrent `update()`s of one item in ONE process waste no write**: [`TASKS`] tasks ×
/// [`PER_TASK`] increments, each task with a client of its own, with the default policy
/// (turns on). The count ends at 200, every value 1..=200 is written once, and not one
/// write is refused (`Outcome::conflicts` summed is 0): the attempts of one process take
/// turns by [`Versioned::identity`].
pub async fn one_process_wastes_no_write<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
) -> Result<Tally, String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    let tally = increments(new_item, counter, TASKS, PER_TASK, policy()).await?;
    all_landed(&tally, (TASKS * PER_TASK) as u64)?;
    if tally.conflicts != 0 {
        return Err(format!(
            "{} of {} updates in one process were refused as conflicts: its attempts did not \
             take turns (is Versioned::identity the item's identity?)",
            tally.conflicts, tally.commits
        ));
    }
    Ok(tally)
}

/// **Turns hand over what was written**: as [`one_process_wastes_no_write`], through a
/// wrapper that counts reads. An adapter that offers snapshots ([`Versioned::snapshot`],
/// `offers`) lets the update that commits hand the state it wrote to the next one waiting,
/// which writes without reading: fewer reads than half the commits, no write refused, every
/// increment landed once, and a snapshot of the stored value restores to it. One that does
/// not (`!offers`: its reads carry fields the service sets) reads before every first write.
pub async fn turns_hand_over_what_was_written<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
    offers: bool,
) -> Result<Tally, String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    let probe = new_item();
    let snapshot = probe.snapshot(&(counter.value)(7));
    if snapshot.is_some() != offers {
        return Err(format!(
            "the adapter {} snapshots, the suite expects it {}",
            if snapshot.is_some() {
                "offers"
            } else {
                "offers no"
            },
            if offers { "to" } else { "not to" }
        ));
    }
    if let Some(bytes) = snapshot {
        let back = probe.restore(&bytes).ok_or("a snapshot did not restore")?;
        if (counter.count)(&back) != 7 {
            return Err(format!("7 restored as {}", (counter.count)(&back)));
        }
    }
    let reads = Arc::new(AtomicU64::new(0));
    let tally = one_process_wastes_no_write(
        || CountReads {
            item: new_item(),
            reads: reads.clone(),
        },
        counter,
    )
    .await?;
    // The final read of `increments` is counted too.
    let reads = reads.load(Ordering::Relaxed);
    if offers && reads * 2 >= tally.commits {
        return Err(format!(
            "{reads} reads for {} commits: the turns did not hand over what was written",
            tally.commits
        ));
    }
    if !offers && reads < tally.commits {
        return Err(format!(
            "{reads} reads for {} commits without snapshots: an update wrote unread",
            tally.commits
        ));
    }
    if offers {
        let stored = probe
            .read()
            .await
            .map_err(|e| format!("the final read failed: {e}"))?
            .ok_or("the item is gone")?;
        let bytes = probe.snapshot(&stored.value).ok_or("no snapshot")?;
        let back = probe
            .restore(&bytes)
            .ok_or("the snapshot did not restore")?;
        if (counter.count)(&back) != (counter.count)(&stored.value) {
            return Err("a snapshot of the stored value restores to another value".into());
        }
    }
    Ok(tally)
}

/// `R`, counting its reads; everything else (the turn key, snapshots) is `R`'s.
struct CountReads<R> {
    item: R,
    reads: Arc<AtomicU64>,
}

impl<R: Versioned> Versioned for CountReads<R> {
    type Value = R::Value;

    async fn read(&self) -> azstore::Result<Option<Current<R::Value>>> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.item.read().await
    }

    async fn replace(
        &self,
        value: &R::Value,
        etag: &azstore::ETag,
        write_id: &str,
    ) -> azstore::Result<azstore::ETag> {
        self.item.replace(value, etag, write_id).await
    }

    async fn create(&self, value: &R::Value, write_id: &str) -> azstore::Result<azstore::ETag> {
        self.item.create(value, write_id).await
    }

    async fn delete(&self, etag: &azstore::ETag) -> azstore::Result<()> {
        self.item.delete(etag).await
    }

    fn identity(&self) -> String {
        self.item.identity()
    }

    fn stores_write_ids(&self) -> bool {
        self.item.stores_write_ids()
    }

    fn snapshot(&self, value: &R::Value) -> Option<Vec<u8>> {
        self.item.snapshot(value)
    }

    fn restore(&self, snapshot: &[u8]) -> Option<R::Value> {
        self.item.restore(snapshot)
    }
}

/// **Writers that do not share turns lose no update**: [`TASKS`] writers × [`PER_TASK`]
/// increments, each with its own client and `take_turns(false)` (as separate processes
/// are). They conflict; every increment still lands exactly once.
pub async fn separate_writers_lose_no_update<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
) -> Result<Tally, String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    let tally = increments(
        new_item,
        counter,
        TASKS,
        PER_TASK,
        policy().take_turns(false),
    )
    .await?;
    all_landed(&tally, (TASKS * PER_TASK) as u64)?;
    Ok(tally)
}

/// **Create race: one create wins, every change lands**: [`TASKS`] writers without shared
/// turns each increment an absent item once. Exactly one reports [`Change::Created`], the
/// others [`Change::Replaced`], and the count ends at [`TASKS`].
pub async fn create_race_one_wins<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
) -> Result<(), String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    if stored(&new_item(), counter).await? != 0 {
        return Err("the item must be absent at the start".into());
    }
    let mut handles = Vec::new();
    for _ in 0..TASKS {
        let item = new_item();
        handles.push(tokio::spawn(async move {
            update(&item, &policy().take_turns(false), counter.increment())
                .await
                .map(|o| o.change)
                .map_err(|e| format!("an update failed: {e}"))
        }));
    }
    let mut created = 0;
    for h in handles {
        match h.await.map_err(|e| format!("task: {e}"))?? {
            Change::Created => created += 1,
            Change::Replaced => {}
            other => return Err(format!("unexpected change {other:?}")),
        }
    }
    let n = stored(&new_item(), counter).await?;
    if (created, n) != (1, TASKS as u64) {
        return Err(format!(
            "{created} creates won and the count is {n} (want 1 and {TASKS})"
        ));
    }
    Ok(())
}

/// Which write of an update a fault hits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// The conditional replace (If-Match, the Redis compare-and-set script, …).
    Replace,
    /// The create-if-absent.
    Create,
}

/// A fault proxy in front of a backend's server that can lose the reply of a write: the
/// write reaches the server and applies, its reply never reaches the client.
pub trait LoseReply {
    /// The next write of this kind applies, its reply is lost.
    fn lose_next(&self, write: Write);
    /// How many writes of this kind reached the proxy so far.
    fn sent(&self, write: Write) -> usize;
}

/// [`LoseReply`] over testkit's HTTP [`FaultProxy`](crate::fault::FaultProxy): a write is
/// recognised by its method and a piece of its target.
pub struct HttpWrites {
    /// The proxy the item's client goes through.
    pub proxy: crate::fault::FaultProxy,
    /// Method and target piece of a replace (e.g. `("PUT", "")`).
    pub replace: (&'static str, &'static str),
    /// Method and target piece of a create (e.g. `("POST", "/docs")`).
    pub create: (&'static str, &'static str),
}

impl HttpWrites {
    fn of(&self, write: Write) -> (&'static str, &'static str) {
        match write {
            Write::Replace => self.replace,
            Write::Create => self.create,
        }
    }
}

impl LoseReply for HttpWrites {
    fn lose_next(&self, write: Write) {
        use crate::fault::{Fault, Rule};
        let (method, piece) = self.of(write);
        self.proxy.inject(
            Rule::new(Fault::LoseResponse)
                .method(method)
                .target_contains(piece),
        );
    }

    fn sent(&self, write: Write) -> usize {
        let (method, piece) = self.of(write);
        self.proxy.count_matching(method, piece)
    }
}

/// Redis: a replace is one `EVAL` of the compare-and-set script, a create a `SET … NX`.
impl LoseReply for crate::redis::RedisProxy {
    fn lose_next(&self, write: Write) {
        self.lose_next_reply_to(redis_command(write));
    }

    fn sent(&self, write: Write) -> usize {
        self.count(redis_command(write))
    }
}

/// The Redis command that carries `write`.
fn redis_command(write: Write) -> &'static str {
    match write {
        Write::Replace => "EVAL",
        Write::Create => "SET",
    }
}

fn applied_once<V>(
    out: &Outcome<V>,
    counter: Counter<V>,
    want: u64,
    change: Change,
) -> Result<(), String> {
    let value = out.value.as_ref().map(counter.count);
    if (out.change, value, out.recovered_ambiguous, out.conflicts) != (change, Some(want), 1, 0) {
        return Err(format!(
            "after a lost reply: {:?}, value {value:?}, {} recovered, {} conflicts (want \
             {change:?}, {want}, 1 recovered, 0 conflicts)",
            out.change, out.recovered_ambiguous, out.conflicts
        ));
    }
    Ok(())
}

/// Loses the reply of the next `write`, runs one increment through `item`, and checks that
/// `update()` reported it as `change` to `want`, applied once, and sent it once.
async fn increment_losing_reply<R: Versioned>(
    item: &R,
    faults: &impl LoseReply,
    counter: Counter<R::Value>,
    write: Write,
    want: u64,
    change: Change,
) -> Result<(), String> {
    let (what, which) = match write {
        Write::Replace => ("write", "replace"),
        Write::Create => ("create", "create"),
    };
    let before = faults.sent(write);
    faults.lose_next(write);
    let out = update(item, &policy(), counter.increment())
        .await
        .map_err(|e| format!("an applied {what} reported as failed: {e}"))?;
    applied_once(&out, counter, want, change)?;
    let sent = faults.sent(write) - before;
    if sent != 1 {
        return Err(format!("the ambiguous {which} was sent {sent} times"));
    }
    Ok(())
}

/// **An ambiguous replace is recognised and applied once**: the item holds 41; the reply of
/// the next replace is lost. `update()` succeeds with 42, counts one recovered ambiguous
/// write and no conflict, never sends the write again, and 42 is stored.
///
/// `item` goes through the proxy of `faults`; `direct` reaches the server without it.
pub async fn ambiguous_replace_is_applied_once<R: Versioned>(
    item: &R,
    direct: &R,
    faults: &impl LoseReply,
    counter: Counter<R::Value>,
) -> Result<(), String> {
    if !item.stores_write_ids() {
        return Err("the item must store write ids to recognise its writes".into());
    }
    let seed = update(direct, &policy(), |_| Decision::Write((counter.value)(41)))
        .await
        .map_err(|e| format!("seeding: {e}"))?;
    if seed.value.as_ref().map(counter.count) != Some(41) {
        return Err("seeding did not store 41".into());
    }
    increment_losing_reply(item, faults, counter, Write::Replace, 42, Change::Replaced).await?;
    match stored(direct, counter).await? {
        42 => Ok(()),
        n => Err(format!("stored {n} after one increment of 41")),
    }
}

/// **An ambiguous create is recognised and applied once**: the item is absent; the reply of
/// the create is lost. `update()` reports it created (1), recovered, sent once; 1 is stored.
pub async fn ambiguous_create_is_applied_once<R: Versioned>(
    item: &R,
    direct: &R,
    faults: &impl LoseReply,
    counter: Counter<R::Value>,
) -> Result<(), String> {
    if stored(direct, counter).await? != 0 {
        return Err("the item must be absent at the start".into());
    }
    increment_losing_reply(item, faults, counter, Write::Create, 1, Change::Created).await?;
    match stored(direct, counter).await? {
        1 => Ok(()),
        n => Err(format!("stored {n} after one create")),
    }
}

/// The pace an item's stored write-id token carries (`,p` and microseconds after the ids),
/// if any.
pub fn pace_in_token(token: &str) -> Option<Duration> {
    token
        .split(',')
        .find_map(|s| s.strip_prefix('p'))
        .and_then(|us| us.parse().ok())
        .map(Duration::from_micros)
}

/// `R` whose first `beaten` replaces each meet another writer's increment landed just
/// before them (so each is refused as a conflict), as a writer in another process would.
struct Beaten<R: Versioned> {
    mine: R,
    other: R,
    beaten: std::sync::atomic::AtomicU32,
    counter: Counter<R::Value>,
}

impl<R: Versioned> Versioned for Beaten<R> {
    type Value = R::Value;

    async fn read(&self) -> azstore::Result<Option<Current<R::Value>>> {
        self.mine.read().await
    }

    async fn replace(
        &self,
        value: &R::Value,
        etag: &azstore::ETag,
        write_id: &str,
    ) -> azstore::Result<azstore::ETag> {
        use std::sync::atomic::Ordering;
        let left = self.beaten.load(Ordering::SeqCst);
        if left > 0 {
            self.beaten.store(left - 1, Ordering::SeqCst);
            update(&self.other, &policy(), self.counter.increment()).await?;
        }
        self.mine.replace(value, etag, write_id).await
    }

    async fn create(&self, value: &R::Value, write_id: &str) -> azstore::Result<azstore::ETag> {
        self.mine.create(value, write_id).await
    }

    async fn delete(&self, etag: &azstore::ETag) -> azstore::Result<()> {
        self.mine.delete(etag).await
    }

    /// A key of its own: the other writer updates the same item from inside this one's
    /// write, and must not wait for this update's turn.
    fn identity(&self) -> String {
        format!("contract:beaten:{}", self.mine.identity())
    }

    fn stores_write_ids(&self) -> bool {
        self.mine.stores_write_ids()
    }
}

/// **The item's pace passes from writer to writer through the stored token**: an update
/// that lost three times before it committed (another writer's increment landing before
/// each of its first three writes) stores a pace with its write; the next update, which
/// meets no conflict, reads that pace and stores a shorter one (or none); every increment
/// lands once.
pub async fn the_pace_passes_between_writers<R, F>(
    new_item: F,
    counter: Counter<R::Value>,
) -> Result<(), String>
where
    R: Versioned + 'static,
    R::Value: 'static,
    F: Fn() -> R,
{
    let token = |cur: Option<Current<R::Value>>| cur.and_then(|c| c.write_id);
    update(&new_item(), &policy(), counter.increment())
        .await
        .map_err(|e| format!("the first increment: {e}"))?;
    let beaten = Beaten {
        mine: new_item(),
        other: new_item(),
        beaten: 3.into(),
        counter,
    };
    let outcome = update(&beaten, &policy(), counter.increment())
        .await
        .map_err(|e| format!("the beaten update: {e}"))?;
    if outcome.conflicts != 3 {
        return Err(format!(
            "3 conflicts expected, the outcome counts {} in {} attempts",
            outcome.conflicts, outcome.attempts
        ));
    }
    let after_losses = token(new_item().read().await.map_err(|e| e.to_string())?)
        .ok_or("no write-id token stored")?;
    let Some(pace) = pace_in_token(&after_losses) else {
        return Err(format!(
            "no pace stored after 3 conflicts: {after_losses:?}"
        ));
    };
    update(&new_item(), &policy(), counter.increment())
        .await
        .map_err(|e| format!("the last increment: {e}"))?;
    let calm = token(new_item().read().await.map_err(|e| e.to_string())?)
        .ok_or("no write-id token stored")?;
    if pace_in_token(&calm).is_some_and(|p| p >= pace) {
        return Err(format!(
            "an update without conflict kept or lengthened the pace: {after_losses:?} then {calm:?}"
        ));
    }
    // 1 + 3 others + the beaten one + the last.
    let n = stored(&new_item(), counter).await?;
    if n != 6 {
        return Err(format!("the count is {n}, want 6"));
    }
    Ok(())
}

/// A deliberately broken adapter: `R` with a [`Versioned::identity`] that is fresh on every call,
/// so no two updates ever share a turn. [`one_process_wastes_no_write`] must fail on it.
pub struct FreshKeyEachCall<R>(pub R);

impl<R: Versioned> Versioned for FreshKeyEachCall<R> {
    type Value = R::Value;

    async fn read(&self) -> azstore::Result<Option<Current<R::Value>>> {
        self.0.read().await
    }

    async fn replace(
        &self,
        value: &R::Value,
        etag: &azstore::ETag,
        write_id: &str,
    ) -> azstore::Result<azstore::ETag> {
        self.0.replace(value, etag, write_id).await
    }

    async fn create(&self, value: &R::Value, write_id: &str) -> azstore::Result<azstore::ETag> {
        self.0.create(value, write_id).await
    }

    async fn delete(&self, etag: &azstore::ETag) -> azstore::Result<()> {
        self.0.delete(etag).await
    }

    fn identity(&self) -> String {
        format!("broken:{}", uuid::Uuid::new_v4())
    }

    fn stores_write_ids(&self) -> bool {
        self.0.stores_write_ids()
    }
}
