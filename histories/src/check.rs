//! The checkers: each decides one history and lists its anomalies (empty: the history is
//! explained by the model).
//!
//! * Register models: [`stateright`]'s `LinearizabilityTester` searches for a total order of
//!   the operations, consistent with real time, that the sequential [`CounterRegister`]
//!   specification explains. Increments with an unknown outcome (`info`) may take effect at
//!   any point after their invocation, or never; failed increments never.
//! * Lock models: fencing tokens unique and growing in real time, the fenced resource's
//!   accepted writes in non-decreasing token order with no two holders interleaved, every
//!   acknowledged write accepted and every refused one absent, and mutual exclusion as the
//!   holders saw it: no holder claims to hold the lock (its own `is_held()`) after another
//!   acquisition completed that began after its own.
//! * Queue model: every enqueued message's effect is present exactly once.
//! * Shard models: epochs unique per shard; no two workers able to write one shard at once
//!   (a worker can write a shard from its `acquired` until its `lost`, or its last write of
//!   that epoch if later, or its death); every shard's fenced resource accepted writes in
//!   non-decreasing epoch order, each from the worker that acquired that epoch; every
//!   acknowledged write accepted and every refused one absent. Only time both processes ran
//!   counts as overlap (a frozen process writes nothing), and an overlap is excused only
//!   where the library promises nothing but the epoch: the older owner was frozen (SIGSTOP)
//!   for at least the lease's safety margin before the newer one acquired, and saw its `lost`
//!   once resumed. Such overlaps are counted; the fencing is checked as always.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use crate::history::{Event, Kind, Operation, operations};
use crate::model::Model;
use crate::writer::Fenced;

/// The verdict on one history.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Client operations in the history (nemesis actions and the final read not counted).
    pub operations: usize,
    /// What the checker found (empty: none).
    pub anomalies: Vec<String>,
    /// Shard models: ownership transfers (an acquisition of a shard whose previous owner was
    /// another worker).
    pub transfers: u64,
    /// Shard models: overlaps excused because the older owner was frozen past its lease (the
    /// fenced resource alone protects those).
    pub fenced_overlaps: u64,
}

/// A counter register, the sequential specification of `update()`'s read-modify-write: an
/// increment makes the value `n + 1`, written by that increment, and returns it; a read
/// returns the value and its writer.
#[derive(Clone, Debug, Default, Hash, PartialEq, Eq)]
pub struct CounterRegister {
    /// The value.
    pub n: u64,
    /// The increment that wrote it.
    pub by: Option<u64>,
}

/// An operation on [`CounterRegister`].
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum RegOp {
    /// Increment, by the operation with this unique id.
    Incr(u64),
    /// Read.
    Read,
}

/// What an operation on [`CounterRegister`] returned.
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub enum RegRet {
    /// The new value.
    Incr(u64),
    /// The value and its writer.
    Read(u64, Option<u64>),
}

impl SequentialSpec for CounterRegister {
    type Op = RegOp;
    type Ret = RegRet;

    fn invoke(&mut self, op: &RegOp) -> RegRet {
        match op {
            RegOp::Incr(uid) => {
                self.n += 1;
                self.by = Some(*uid);
                RegRet::Incr(self.n)
            }
            RegOp::Read => RegRet::Read(self.n, self.by),
        }
    }
}

/// Decides a history of `model`.
pub fn check(model: Model, events: &[Event]) -> Verdict {
    let ops = operations(events);
    let client_ops = ops
        .iter()
        .filter(|o| o.p != 0 && o.f != "nemesis" && o.f != "final")
        .count();
    let (anomalies, transfers, fenced_overlaps) = match model {
        Model::Register(_) => (check_register(&ops), 0, 0),
        Model::Lock(_) => (check_lock(&ops), 0, 0),
        Model::Semaphore(_) => (check_semaphore(&ops), 0, 0),
        Model::RwLock(_) => (check_rwlock(&ops), 0, 0),
        Model::Queue => (check_queue(&ops), 0, 0),
        Model::Shards(_) => {
            let s = check_shards(&ops);
            (s.anomalies, s.transfers, s.fenced_overlaps)
        }
    };
    Verdict {
        operations: client_ops,
        anomalies,
        transfers,
        fenced_overlaps,
    }
}

fn short(o: &Operation) -> String {
    format!(
        "{} by process {} ({:?}, arg {}, returned {})",
        o.f, o.p, o.kind, o.arg, o.ret
    )
}

/// The register models.
pub fn check_register(ops: &[Operation]) -> Vec<String> {
    let mut anomalies = Vec::new();
    let mut by_value: HashMap<u64, &Operation> = HashMap::new();
    let mut kinds: HashMap<u64, Kind> = HashMap::new();
    for o in ops.iter().filter(|o| o.f == "incr") {
        if let Some(uid) = o.arg.as_u64() {
            kinds.insert(uid, o.kind);
        }
        if o.kind == Kind::Ok {
            match o.ret.as_u64() {
                Some(n) => {
                    if let Some(other) = by_value.insert(n, o) {
                        anomalies.push(format!(
                            "lost update: two increments both returned {n}: {} and {}",
                            short(other),
                            short(o)
                        ));
                    }
                }
                None => anomalies.push(format!(
                    "increment acknowledged without a value: {}",
                    short(o)
                )),
            }
        }
    }
    for o in ops.iter().filter(|o| o.f == "read" && o.kind == Kind::Ok) {
        if let Some(by) = o.ret.get(1).and_then(Value::as_u64) {
            match kinds.get(&by) {
                Some(Kind::Fail) => anomalies.push(format!(
                    "a read saw the value of an increment reported as failed: {}",
                    short(o)
                )),
                None => anomalies.push(format!(
                    "a read saw a value no increment wrote: {}",
                    short(o)
                )),
                _ => {}
            }
        }
    }
    // The final value lists every applied increment in order: it settles which increments
    // of unknown outcome took effect, and where.
    let resolved = match final_applied(ops) {
        Some((n, applied)) => {
            let mut pos: HashMap<u64, u64> = HashMap::new();
            for (i, uid) in applied.iter().enumerate() {
                if pos.insert(*uid, i as u64 + 1).is_some() {
                    anomalies.push(format!("increment {uid} applied twice"));
                }
                if !kinds.contains_key(uid) {
                    anomalies.push(format!(
                        "the final value holds an increment never invoked: {uid}"
                    ));
                }
            }
            if applied.len() as u64 != n {
                anomalies.push(format!(
                    "the final value is {n} but lists {} increments",
                    applied.len()
                ));
            }
            for o in ops.iter().filter(|o| o.f == "incr") {
                let Some(uid) = o.arg.as_u64() else { continue };
                match (o.kind, pos.get(&uid)) {
                    (Kind::Ok, None) => anomalies.push(format!(
                        "lost update: an acknowledged increment is not in the final value: {}",
                        short(o)
                    )),
                    (Kind::Ok, Some(at)) if o.ret.as_u64() != Some(*at) => anomalies.push(format!(
                        "an increment returned {} but is increment number {at} of the final value: {}",
                        o.ret,
                        short(o)
                    )),
                    (Kind::Fail, Some(at)) => anomalies.push(format!(
                        "an increment reported as failed took effect (number {at}): {}",
                        short(o)
                    )),
                    _ => {}
                }
            }
            Some(pos)
        }
        None => None,
    };
    if !anomalies.is_empty() {
        return anomalies;
    }
    match linearizable(ops, resolved.as_ref()) {
        Ok(true) => {}
        Ok(false) => anomalies.push(
            "not linearizable: no order of the operations consistent with real time is \
             explained by a counter register"
                .to_string(),
        ),
        Err(e) => anomalies.push(format!("malformed history: {e}")),
    }
    anomalies
}

/// The final read's value and list of applied increments (the campaign reads it directly,
/// as process 0, after every writer stopped).
fn final_applied(ops: &[Operation]) -> Option<(u64, Vec<u64>)> {
    let o = ops
        .iter()
        .rev()
        .find(|o| o.p == 0 && o.f == "read" && o.kind == Kind::Ok)?;
    let n = o.ret.get(0)?.as_u64()?;
    let applied = o
        .ret
        .get(2)?
        .as_array()?
        .iter()
        .filter_map(Value::as_u64)
        .collect();
    Some((n, applied))
}

/// Runs stateright's linearizability tester over the register operations. With `resolved`
/// (increment id → its position in the final value), an increment of unknown outcome that
/// took effect completes with that value at the end of the history (the weakest real-time
/// constraint, as for any unknown outcome), and one that did not is left out; without it,
/// such increments stay in flight (may or may not take effect).
fn linearizable(ops: &[Operation], resolved: Option<&HashMap<u64, u64>>) -> Result<bool, String> {
    // (time, 0 = invoke / 1 = return, index): invocations first on equal times (lenient).
    let mut points: Vec<(u64, u8, usize)> = Vec::new();
    let mut procs: Vec<u64> = Vec::new();
    let mut spec_ops: Vec<(RegOp, Option<RegRet>)> = Vec::new();
    for o in ops {
        let (op, ret) = match (o.f.as_str(), o.kind) {
            (_, Kind::Fail) | (_, Kind::Invoke) => continue,
            ("incr", kind) => {
                let uid = o.arg.as_u64().ok_or("increment without id")?;
                let ret = match (kind, resolved) {
                    (Kind::Ok, _) => Some(RegRet::Incr(o.ret.as_u64().ok_or("no value")?)),
                    (_, None) => None,
                    (_, Some(pos)) => match pos.get(&uid) {
                        Some(at) => Some(RegRet::Incr(*at)),
                        None => continue,
                    },
                };
                (RegOp::Incr(uid), ret)
            }
            ("read", Kind::Ok) => {
                let n = o
                    .ret
                    .get(0)
                    .and_then(Value::as_u64)
                    .ok_or("read without value")?;
                let by = o.ret.get(1).and_then(Value::as_u64);
                (RegOp::Read, Some(RegRet::Read(n, by)))
            }
            _ => continue,
        };
        let i = spec_ops.len();
        points.push((o.t_invoke, 0, i));
        if ret.is_some() {
            points.push((o.t_done, 1, i));
        }
        spec_ops.push((op, ret));
        procs.push(o.p);
    }
    points.sort();
    let mut tester = LinearizabilityTester::new(CounterRegister::default());
    for (_, what, i) in points {
        let p = procs[i];
        let (op, ret) = &spec_ops[i];
        if what == 0 {
            tester.on_invoke(p, op.clone())?;
        } else if let Some(ret) = ret {
            tester.on_return(p, ret.clone())?;
        }
    }
    Ok(tester.is_consistent())
}

/// The lock models.
pub fn check_lock(ops: &[Operation]) -> Vec<String> {
    let acquires: Vec<(&Operation, Value)> = ops
        .iter()
        .filter(|o| o.f == "acquire" && o.kind == Kind::Ok)
        .map(|a| (a, a.ret.clone()))
        .collect();
    let mut anomalies = Vec::new();
    let by_token = tokens(&acquires, &mut anomalies);
    // Mutual exclusion as the holders saw it.
    anomalies.extend(exclusion(ops, &by_token, |_, _| true));
    // The fenced resource.
    match final_fenced(ops, |v| v.clone()) {
        Ok(fenced) => anomalies.extend(fenced_anomalies(ops, &fenced, |_| true)),
        Err(e) => anomalies.push(e),
    }
    anomalies
}

/// The semaphore model: the permits' tokens unique and growing in real time across all
/// permits, no slot beyond the [`PERMITS`](crate::hold::PERMITS), and each slot decided as a
/// lock (its holders' claims, its fenced resource `fenced-slot-<k>`): at most one holder per
/// slot, so at most N at once.
pub fn check_semaphore(ops: &[Operation]) -> Vec<String> {
    let acquires: Vec<(&Operation, Value)> = ops
        .iter()
        .filter(|o| o.f == "acquire" && o.kind == Kind::Ok)
        .map(|a| (a, a.ret["token"].clone()))
        .collect();
    let mut anomalies = Vec::new();
    let by_token = tokens(&acquires, &mut anomalies);
    let slot_of = |token: u64| by_token.get(&token).and_then(|a| a.ret["slot"].as_u64());
    for a in by_token.values() {
        if a.ret["slot"]
            .as_u64()
            .is_none_or(|k| k >= u64::from(crate::hold::PERMITS))
        {
            anomalies.push(format!(
                "a permit beyond the {} slots: {}",
                crate::hold::PERMITS,
                short(a)
            ));
        }
    }
    anomalies.extend(exclusion(ops, &by_token, |c, b| {
        slot_of(c) == b.ret["slot"].as_u64()
    }));
    for slot in 0..u64::from(crate::hold::PERMITS) {
        let mine: Vec<Operation> = ops
            .iter()
            .filter(|o| {
                o.f != "acquire" && o.f != "final" && o.arg.as_u64().and_then(slot_of) == Some(slot)
            })
            .cloned()
            .collect();
        match final_fenced(ops, |v| v["slots"][slot.to_string()].clone()) {
            Ok(fenced) => anomalies.extend(
                fenced_anomalies(&mine, &fenced, |_| true)
                    .into_iter()
                    .map(|a| format!("slot {slot}: {a}")),
            ),
            Err(e) => anomalies.push(e),
        }
    }
    anomalies
}

/// The reader-writer lock model: tokens unique and growing in real time across reads and
/// writes; a writer excludes everyone (no writer claims its hold after another acquisition
/// completed that began after its own, and no reader after a writer's); the fenced resource
/// accepted reads (`observe`) and writes in non-decreasing token order, one writer's writes
/// never interleaved with another's, every acknowledged one present and every refused one
/// absent.
pub fn check_rwlock(ops: &[Operation]) -> Vec<String> {
    let acquires: Vec<(&Operation, Value)> = ops
        .iter()
        .filter(|o| o.f == "acquire" && o.kind == Kind::Ok)
        .map(|a| (a, a.ret["token"].clone()))
        .collect();
    let mut anomalies = Vec::new();
    let by_token = tokens(&acquires, &mut anomalies);
    let writes = |token: u64| {
        by_token
            .get(&token)
            .is_some_and(|a| a.ret["mode"] == "write")
    };
    anomalies.extend(exclusion(ops, &by_token, |c, b| {
        writes(c) || b.ret["mode"] == "write"
    }));
    match final_fenced(ops, |v| v.clone()) {
        Ok(fenced) => anomalies.extend(fenced_anomalies(ops, &fenced, writes)),
        Err(e) => anomalies.push(e),
    }
    anomalies
}

/// The acquisitions by token (from `(acquisition, its token)`), with anomalies for a missing
/// or repeated token and for tokens that do not grow in real time.
fn tokens<'a>(
    acquires: &[(&'a Operation, Value)],
    anomalies: &mut Vec<String>,
) -> BTreeMap<u64, &'a Operation> {
    let mut by_token: BTreeMap<u64, &Operation> = BTreeMap::new();
    for (a, t) in acquires {
        let Some(t) = t.as_u64() else {
            anomalies.push(format!("acquire without a token: {}", short(a)));
            continue;
        };
        if let Some(other) = by_token.insert(t, a) {
            anomalies.push(format!(
                "fencing token {t} granted twice: {} and {}",
                short(other),
                short(a)
            ));
        }
    }
    // Tokens grow in real time.
    for (a, ta) in acquires {
        for (b, tb) in acquires {
            if a.t_done < b.t_invoke && ta.as_u64() >= tb.as_u64() {
                anomalies.push(format!(
                    "fencing token went backwards: {} completed before {} began",
                    short(a),
                    short(b)
                ));
            }
        }
    }
    by_token
}

/// Mutual exclusion as the holders saw it: no holder claims its hold (`held` ok) after an
/// acquisition that `excludes(its token, that acquisition)`, begun after its own completed,
/// has completed.
fn exclusion(
    ops: &[Operation],
    by_token: &BTreeMap<u64, &Operation>,
    excludes: impl Fn(u64, &Operation) -> bool,
) -> Vec<String> {
    let mut anomalies = Vec::new();
    for c in ops.iter().filter(|o| o.f == "held" && o.kind == Kind::Ok) {
        let Some(token) = c.arg.as_u64() else {
            continue;
        };
        let Some(mine) = by_token.get(&token) else {
            anomalies.push(format!(
                "a holder claims a token no acquire returned: {}",
                short(c)
            ));
            continue;
        };
        for (t, b) in by_token {
            if *t != token
                && b.t_invoke > mine.t_done
                && b.t_done < c.t_invoke
                && excludes(token, b)
            {
                anomalies.push(format!(
                    "two holders: {} claims the lock of token {token} after {} acquired it \
                     ({:.3} s after that acquire completed)",
                    short(c),
                    short(b),
                    (c.t_invoke - b.t_done) as f64 / 1e9
                ));
                break;
            }
        }
    }
    anomalies
}

/// The fenced resource's final state, picked by `pick` from the history's `final` value.
fn final_fenced(ops: &[Operation], pick: impl Fn(&Value) -> Value) -> Result<Fenced, String> {
    let Some(final_op) = ops.iter().find(|o| o.f == "final") else {
        return Err("the history has no final state of the fenced resource".into());
    };
    serde_json::from_value(pick(&final_op.ret)).map_err(|e| format!("final state unreadable: {e}"))
}

/// A fenced resource's accepted writes in non-decreasing token order, those of an
/// `exclusive` token's holder never interleaved with another's, each token used by one writer
/// process, every acknowledged write (`write`, or a reader's `observe`) present and every
/// refused one absent.
fn fenced_anomalies(
    ops: &[Operation],
    fenced: &Fenced,
    exclusive: impl Fn(u64) -> bool,
) -> Vec<String> {
    let mut anomalies = Vec::new();
    let mut seen_tokens: BTreeSet<u64> = BTreeSet::new();
    let mut last: Option<u64> = None;
    let mut token_child: HashMap<u64, u64> = HashMap::new();
    for (i, [token, p, _op]) in fenced.log.iter().enumerate() {
        if let Some(l) = last {
            if *token < l {
                anomalies.push(format!(
                    "the resource accepted token {token} after token {l} (entry {i})"
                ));
            } else if *token != l && seen_tokens.contains(token) && exclusive(*token) {
                anomalies.push(format!(
                    "writes of token {token} interleaved with another holder's (entry {i})"
                ));
            }
        }
        if let Some(c) = token_child.insert(*token, p / 1000) {
            if c != p / 1000 {
                anomalies.push(format!(
                    "token {token} used by two writer processes ({c} and {})",
                    p / 1000
                ));
            }
        }
        seen_tokens.insert(*token);
        last = Some(*token);
    }
    let accepted: BTreeSet<(u64, u64, u64)> =
        fenced.log.iter().map(|[t, p, o]| (*t, *p, *o)).collect();
    for w in ops.iter().filter(|o| o.f == "write" || o.f == "observe") {
        let token = w.arg.as_u64().unwrap_or(0);
        let present = accepted.contains(&(token, w.p, w.op));
        match w.kind {
            Kind::Ok if !present => anomalies.push(format!(
                "an acknowledged write is not in the resource: {}",
                short(w)
            )),
            Kind::Fail if present => anomalies.push(format!(
                "a write reported as failed is in the resource: {}",
                short(w)
            )),
            _ => {}
        }
    }
    anomalies
}

/// The queue model.
pub fn check_queue(ops: &[Operation]) -> Vec<String> {
    let mut anomalies = Vec::new();
    let Some(final_op) = ops.iter().find(|o| o.f == "final") else {
        return vec!["the history has no final state of the effects".into()];
    };
    let enqueued: Vec<u64> = final_op.ret["enqueued"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let effects: Vec<u64> = final_op.ret["effects"]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let mut count: BTreeMap<u64, usize> = BTreeMap::new();
    for id in &effects {
        *count.entry(*id).or_default() += 1;
    }
    let wanted: BTreeSet<u64> = enqueued.iter().copied().collect();
    let lost: Vec<u64> = wanted
        .iter()
        .filter(|id| !count.contains_key(id))
        .copied()
        .collect();
    let doubled: Vec<(u64, usize)> = count
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(i, n)| (*i, *n))
        .collect();
    let phantom: Vec<u64> = count
        .keys()
        .filter(|id| !wanted.contains(id))
        .copied()
        .collect();
    if !lost.is_empty() {
        anomalies.push(format!(
            "{} message(s) never applied: {:?}",
            lost.len(),
            first(&lost)
        ));
    }
    if !doubled.is_empty() {
        anomalies.push(format!(
            "{} message(s) applied more than once (id, times): {:?}",
            doubled.len(),
            first(&doubled)
        ));
    }
    if !phantom.is_empty() {
        anomalies.push(format!(
            "effects of messages never enqueued: {:?}",
            first(&phantom)
        ));
    }
    for o in ops.iter().filter(|o| o.f == "apply" && o.kind == Kind::Ok) {
        if let Some(id) = o.arg.as_u64() {
            if !count.contains_key(&id) {
                anomalies.push(format!("an acknowledged effect is missing: {}", short(o)));
            }
        }
    }
    anomalies
}

/// The safety margin of the shard models' leases: the library reports a loss this long before
/// the lease can end (a sixth of the lease, the default).
pub const SHARD_MARGIN_NS: u64 = SHARD_LEASE_NS / 6;

/// The shard models' lease.
pub const SHARD_LEASE_NS: u64 = crate::writer::SHARD_LEASE_SECS * 1_000_000_000;

/// Whether the windows cover all of `[a, b)`.
pub(crate) fn covered(a: u64, b: u64, windows: &[(u64, u64)]) -> bool {
    let mut w: Vec<(u64, u64)> = windows
        .iter()
        .copied()
        .filter(|(s0, s1)| *s1 > a && *s0 < b)
        .collect();
    w.sort();
    let mut at = a;
    for (s0, s1) in w {
        if s0 > at {
            return false;
        }
        at = at.max(s1);
        if at >= b {
            return true;
        }
    }
    at >= b
}

/// One ownership of a shard: worker (logical process) `p` from `start` (its `acquired`) until
/// `end` (its `lost`, its last write of that epoch if later, its death, or the end of the
/// history).
#[derive(Clone, Debug)]
struct Ownership {
    shard: String,
    epoch: u64,
    p: u64,
    start: u64,
    end: u64,
    /// Whether `end` is a `lost` the worker saw (not a later write or a death).
    ended_by_lost: bool,
}

/// The shard model's findings.
#[derive(Clone, Debug, Default)]
pub struct ShardFindings {
    /// Anomalies.
    pub anomalies: Vec<String>,
    /// Ownership transfers.
    pub transfers: u64,
    /// Overlaps excused by a frozen older owner.
    pub fenced_overlaps: u64,
}

fn shard_epoch(v: &Value) -> Option<(String, u64)> {
    Some((v["shard"].as_str()?.to_string(), v["epoch"].as_u64()?))
}

fn secs(ns: u64) -> f64 {
    ns as f64 / 1e9
}

/// The shard models.
pub fn check_shards(ops: &[Operation]) -> ShardFindings {
    let mut out = ShardFindings::default();
    let history_end = ops
        .iter()
        .map(|o| {
            if o.t_done == u64::MAX {
                o.t_invoke
            } else {
                o.t_done
            }
        })
        .max()
        .unwrap_or(0);
    // The nemesis' signals, by writer process (child).
    let child = |v: &Value| v["child"].as_u64();
    let mut kills: HashMap<u64, u64> = HashMap::new();
    let mut stops: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for o in ops.iter().filter(|o| o.p == 0) {
        match o.f.as_str() {
            "sigkill" => {
                if let Some(c) = child(&o.ret) {
                    kills.entry(c).or_insert(o.t_invoke);
                }
            }
            "sigstop" => {
                if let Some(c) = child(&o.ret) {
                    stops.entry(c).or_default().push((o.t_invoke, history_end));
                }
            }
            "sigcont" => {
                if let Some(c) = child(&o.ret) {
                    if let Some(w) = stops
                        .get_mut(&c)
                        .and_then(|v| v.iter_mut().rev().find(|w| w.0 <= o.t_invoke))
                    {
                        w.1 = w.1.min(o.t_invoke);
                    }
                }
            }
            _ => {}
        }
    }
    // Ownerships.
    let mut owned: Vec<Ownership> = Vec::new();
    let mut by_epoch: HashMap<(String, u64), usize> = HashMap::new();
    for a in ops
        .iter()
        .filter(|o| o.f == "acquired" && o.kind == Kind::Ok)
    {
        let Some((shard, epoch)) = shard_epoch(&a.ret) else {
            out.anomalies
                .push(format!("acquired without shard and epoch: {}", short(a)));
            continue;
        };
        if let Some(&i) = by_epoch.get(&(shard.clone(), epoch)) {
            out.anomalies.push(format!(
                "shard {shard}: epoch {epoch} granted twice, to process {} and {}",
                owned[i].p, a.p
            ));
            continue;
        }
        let start = a.t_invoke;
        let lost = ops
            .iter()
            .filter(|l| l.f == "lost" && l.p == a.p && l.t_invoke >= start)
            .filter(|l| shard_epoch(&l.ret).is_some_and(|(s, e)| s == shard && e == epoch))
            .map(|l| l.t_invoke)
            .min();
        let death = kills.get(&(a.p / 1000)).copied().filter(|k| *k >= start);
        let (end, ended_by_lost) = match (lost, death) {
            (Some(l), _) => (l, true),
            (None, Some(k)) => (k, false),
            (None, None) => (history_end, false),
        };
        by_epoch.insert((shard.clone(), epoch), owned.len());
        owned.push(Ownership {
            shard,
            epoch,
            p: a.p,
            start,
            end,
            ended_by_lost,
        });
    }
    // Writes: each of an epoch its worker acquired; the last one extends the ownership.
    let writes: Vec<(&Operation, String, u64)> = ops
        .iter()
        .filter(|o| o.f == "write")
        .filter_map(|o| shard_epoch(&o.arg).map(|(s, e)| (o, s, e)))
        .collect();
    for (w, shard, epoch) in &writes {
        match by_epoch.get(&(shard.clone(), *epoch)) {
            Some(&i) if owned[i].p == w.p => {
                let o = &mut owned[i];
                if w.t_invoke > o.end {
                    o.end = w.t_invoke;
                    o.ended_by_lost = false;
                }
            }
            Some(&i) => out.anomalies.push(format!(
                "shard {shard}: {} wrote with epoch {epoch}, which process {} acquired",
                short(w),
                owned[i].p
            )),
            None => out.anomalies.push(format!(
                "shard {shard}: {} wrote with epoch {epoch}, which no worker acquired",
                short(w)
            )),
        }
    }
    // Per shard, in epoch order: transfers, and no two owners able to write at once.
    let mut shards: BTreeMap<&str, Vec<&Ownership>> = BTreeMap::new();
    for o in &owned {
        shards.entry(o.shard.as_str()).or_default().push(o);
    }
    for (shard, list) in shards.iter_mut() {
        list.sort_by_key(|o| o.epoch);
        out.transfers += list.windows(2).filter(|w| w[0].p != w[1].p).count() as u64;
        for (i, older) in list.iter().enumerate() {
            for newer in &list[i + 1..] {
                if newer.p == older.p || newer.start >= older.end {
                    continue;
                }
                // While a process is frozen it writes nothing: only time both ran counts.
                let (a, b) = (newer.start, older.end.min(newer.end));
                let frozen_windows: Vec<(u64, u64)> = [older.p / 1000, newer.p / 1000]
                    .iter()
                    .flat_map(|c| stops.get(c).into_iter().flatten().copied())
                    .collect();
                let both_ran = b > a && !covered(a, b, &frozen_windows);
                // Frozen for at least the margin after it acquired and before the newer owner
                // did (and not a whole lease before: a renewal after it would have counted
                // anew), and it saw the loss once resumed: the library promises nothing but the
                // epoch there (a process cannot act on a loss while frozen, nor know of one
                // before its next check).
                let frozen_past_lease = older.ended_by_lost
                    && stops.get(&(older.p / 1000)).is_some_and(|ws| {
                        ws.iter().any(|(s0, s1)| {
                            s1 - s0 >= SHARD_MARGIN_NS
                                && *s0 < newer.start
                                && *s1 > older.start
                                && s1 + SHARD_LEASE_NS > newer.start
                        })
                    });
                if !both_ran || frozen_past_lease {
                    out.fenced_overlaps += 1;
                    continue;
                }
                out.anomalies.push(format!(
                    "two owners of shard {shard}: process {} (epoch {}) could write it until \
                     {:.3} s, process {} acquired it (epoch {}) at {:.3} s: {:.3} s of overlap{}",
                    older.p,
                    older.epoch,
                    secs(older.end),
                    newer.p,
                    newer.epoch,
                    secs(newer.start),
                    secs(older.end - newer.start),
                    if older.ended_by_lost {
                        ""
                    } else {
                        " (writing after its loss, or it never saw one)"
                    }
                ));
            }
        }
    }
    // The fenced resources.
    let Some(final_op) = ops.iter().find(|o| o.f == "final") else {
        out.anomalies
            .push("the history has no final state of the fenced resources".into());
        return out;
    };
    let mut accepted: BTreeSet<(String, u64, u64, u64)> = BTreeSet::new();
    let finals = final_op.ret["shards"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    for (shard, v) in &finals {
        let fenced: Fenced = match serde_json::from_value(v.clone()) {
            Ok(f) => f,
            Err(e) => {
                out.anomalies
                    .push(format!("shard {shard}: final state unreadable: {e}"));
                continue;
            }
        };
        let mut max: Option<u64> = None;
        for (i, [epoch, p, op]) in fenced.log.iter().enumerate() {
            if let Some(m) = max
                && *epoch < m
            {
                out.anomalies.push(format!(
                    "shard {shard}: the fenced resource accepted a stale epoch {epoch} (from \
                     process {p}) after epoch {m} (entry {i})"
                ));
            }
            max = Some(max.map_or(*epoch, |m| m.max(*epoch)));
            match by_epoch.get(&(shard.clone(), *epoch)) {
                Some(&k) if owned[k].p == *p => {}
                Some(&k) => out.anomalies.push(format!(
                    "shard {shard}: the fenced resource accepted a write of epoch {epoch} from \
                     process {p}, but process {} held that epoch (entry {i})",
                    owned[k].p
                )),
                None => out.anomalies.push(format!(
                    "shard {shard}: the fenced resource accepted a write of epoch {epoch} that \
                     no worker acquired (entry {i})"
                )),
            }
            accepted.insert((shard.clone(), *epoch, *p, *op));
        }
    }
    for (w, shard, epoch) in &writes {
        let present = accepted.contains(&(shard.clone(), *epoch, w.p, w.op));
        match w.kind {
            Kind::Ok if !present => out.anomalies.push(format!(
                "shard {shard}: an acknowledged write is not in the fenced resource: {}",
                short(w)
            )),
            Kind::Fail if present => out.anomalies.push(format!(
                "shard {shard}: a write reported as refused is in the fenced resource: {}",
                short(w)
            )),
            _ => {}
        }
    }
    out
}

fn first<T: Clone>(v: &[T]) -> Vec<T> {
    v.iter().take(10).cloned().collect()
}

/// Loads `path` and decides it (for `histories check`).
pub fn check_file(model: Model, path: &std::path::Path) -> std::io::Result<Verdict> {
    let events = crate::history::load(path)?;
    Ok(check(model, &events))
}

/// The model a history file was recorded for (its first line names it).
pub fn model_of(events: &[Event]) -> Option<Model> {
    events
        .iter()
        .find(|e| e.f == "model")
        .and_then(|e| e.value.as_str())
        .and_then(|s| Model::parse(s).ok())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn model(name: &str) -> Model {
        Model::parse(name).unwrap()
    }

    /// Builds events: (process, op, kind, f, value, time).
    fn ev(p: u64, op: u64, kind: Kind, f: &str, value: Value, t: u64) -> Event {
        Event {
            p,
            op,
            kind,
            f: f.to_string(),
            value,
            t,
            err: None,
        }
    }

    fn incr(p: u64, op: u64, uid: u64, from: u64, to: u64, ret: Option<u64>) -> Vec<Event> {
        let mut v = vec![ev(p, op, Kind::Invoke, "incr", json!(uid), from)];
        if let Some(n) = ret {
            v.push(ev(p, op, Kind::Ok, "incr", json!(n), to));
        }
        v
    }

    fn read(p: u64, op: u64, n: u64, by: Option<u64>, from: u64, to: u64) -> Vec<Event> {
        vec![
            ev(p, op, Kind::Invoke, "read", Value::Null, from),
            ev(p, op, Kind::Ok, "read", json!([n, by]), to),
        ]
    }

    fn sorted(mut v: Vec<Event>) -> Vec<Event> {
        v.sort_by_key(|e| e.t);
        v
    }

    #[test]
    fn concurrent_increments_and_reads_in_some_order_are_linearizable() {
        let mut h = Vec::new();
        h.extend(incr(1000, 1, 11, 10, 50, Some(2)));
        h.extend(incr(2000, 1, 21, 20, 40, Some(1)));
        h.extend(read(3000, 1, 1, Some(21), 30, 45));
        h.extend(read(3000, 2, 2, Some(11), 60, 70));
        let v = check(model("blob-register"), &sorted(h));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        assert_eq!(v.operations, 4);
    }

    #[test]
    fn a_stale_read_after_an_acknowledged_increment_is_not_linearizable() {
        // Values are unique and each read's writer exists: only the real-time order is wrong,
        // so only the linearizability search can find it.
        let mut h = Vec::new();
        h.extend(incr(1000, 1, 11, 10, 20, Some(1)));
        h.extend(incr(1000, 2, 12, 30, 40, Some(2)));
        h.extend(read(2000, 1, 1, Some(11), 50, 60));
        let v = check(model("blob-register"), &sorted(h));
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
        assert!(
            v.anomalies[0].starts_with("not linearizable"),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn an_increment_of_unknown_outcome_may_take_effect_late_or_never() {
        let mut h = Vec::new();
        // Process 1000's increment never completes; it shows up after 2000's.
        h.extend(incr(1000, 1, 11, 10, 0, None));
        h.extend(incr(2000, 1, 21, 20, 30, Some(1)));
        h.extend(read(3000, 1, 2, Some(11), 40, 50));
        // Another unknown one that never took effect.
        h.extend(incr(4000, 1, 41, 15, 0, None));
        let v = check(model("blob-register"), &sorted(h.clone()));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        // With the final value listing the applied increments.
        h.push(ev(0, 1, Kind::Invoke, "read", Value::Null, 60));
        h.push(ev(0, 1, Kind::Ok, "read", json!([2, 11, [21, 11]]), 70));
        let v = check(model("blob-register"), &sorted(h));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    }

    #[test]
    fn a_failed_increment_that_took_effect_is_an_anomaly() {
        let mut h = Vec::new();
        h.extend(incr(1000, 1, 11, 10, 0, None));
        h.push(ev(1000, 1, Kind::Fail, "incr", Value::Null, 20));
        h.extend(read(2000, 1, 1, Some(11), 30, 40));
        let v = check(model("blob-register"), &sorted(h));
        assert!(
            v.anomalies[0].contains("reported as failed"),
            "{:?}",
            v.anomalies
        );
    }

    fn lock_history(claim_at: u64) -> Vec<Event> {
        let mut h = vec![
            ev(1000, 1, Kind::Invoke, "acquire", Value::Null, 10),
            ev(1000, 1, Kind::Ok, "acquire", json!(1), 20),
            ev(2000, 1, Kind::Invoke, "acquire", Value::Null, 30),
            ev(2000, 1, Kind::Ok, "acquire", json!(2), 40),
            ev(1000, 2, Kind::Invoke, "held", json!(1), claim_at),
            ev(1000, 2, Kind::Ok, "held", json!(1), claim_at + 1),
        ];
        h.push(ev(
            0,
            0,
            Kind::Ok,
            "final",
            json!({"max": 2, "log": [[1, 1000, 3], [2, 2000, 2]]}),
            100,
        ));
        h.push(ev(1000, 3, Kind::Invoke, "write", json!(1), 25));
        h.push(ev(1000, 3, Kind::Ok, "write", json!(1), 26));
        h.push(ev(2000, 2, Kind::Invoke, "write", json!(2), 45));
        h.push(ev(2000, 2, Kind::Ok, "write", json!(2), 46));
        sorted(h)
    }

    #[test]
    fn a_holder_claiming_the_lock_after_another_acquired_it_is_caught() {
        let ok = check(model("blob-lock"), &lock_history(25));
        assert!(ok.anomalies.is_empty(), "{:?}", ok.anomalies);
        let bad = check(model("blob-lock"), &lock_history(50));
        assert!(
            bad.anomalies[0].starts_with("two holders"),
            "{:?}",
            bad.anomalies
        );
    }

    /// Two holds: process 1000 takes token 1 (`first`), process 2000 token 2 (`second`)
    /// after it, and process 1000 claims token 1 after that; each writes its fenced resource.
    fn two_holds(first: Value, second: Value, final_state: Value) -> Vec<Event> {
        sorted(vec![
            ev(1000, 1, Kind::Invoke, "acquire", Value::Null, 10),
            ev(1000, 1, Kind::Ok, "acquire", first, 20),
            ev(2000, 1, Kind::Invoke, "acquire", Value::Null, 30),
            ev(2000, 1, Kind::Ok, "acquire", second, 40),
            ev(1000, 2, Kind::Invoke, "held", json!(1), 50),
            ev(1000, 2, Kind::Ok, "held", json!(1), 51),
            ev(1000, 3, Kind::Invoke, "write", json!(1), 25),
            ev(1000, 3, Kind::Ok, "write", json!(1), 26),
            ev(2000, 2, Kind::Invoke, "write", json!(2), 45),
            ev(2000, 2, Kind::Ok, "write", json!(2), 46),
            ev(0, 0, Kind::Ok, "final", final_state, 100),
        ])
    }

    #[test]
    fn two_permits_of_one_slot_at_once_are_caught_and_of_two_slots_are_not() {
        let permit = |token: u64, slot: u64| json!({"token": token, "slot": slot});
        let fenced = |a: Value, b: Value| json!({"slots": {"0": a, "1": b}});
        let one = json!({"max": 2, "log": [[1, 1000, 3], [2, 2000, 2]]});
        let empty = json!({"max": 0, "log": []});
        let same = two_holds(permit(1, 0), permit(2, 0), fenced(one, empty.clone()));
        let v = check(model("redis-semaphore"), &same);
        assert!(
            v.anomalies.iter().any(|a| a.starts_with("two holders")),
            "{:?}",
            v.anomalies
        );
        let a = json!({"max": 1, "log": [[1, 1000, 3]]});
        let b = json!({"max": 2, "log": [[2, 2000, 2]]});
        let two = two_holds(permit(1, 0), permit(2, 1), fenced(a.clone(), b.clone()));
        let v = check(model("redis-semaphore"), &two);
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        let beyond = two_holds(permit(1, 0), permit(2, 2), fenced(a, b));
        let v = check(model("blob-semaphore"), &beyond);
        assert!(
            v.anomalies.iter().any(|a| a.starts_with("a permit beyond")),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn a_reader_claiming_after_a_writer_acquired_is_caught_but_not_after_a_reader() {
        let hold = |token: u64, mode: &str| json!({"token": token, "mode": mode});
        let log = json!({"max": 2, "log": [[1, 1000, 3], [2, 2000, 2]]});
        let readers = two_holds(hold(1, "read"), hold(2, "read"), log.clone());
        let v = check(model("redis-rwlock"), &readers);
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        let writer = two_holds(hold(1, "read"), hold(2, "write"), log.clone());
        let v = check(model("redis-rwlock"), &writer);
        assert!(
            v.anomalies.iter().any(|a| a.starts_with("two holders")),
            "{:?}",
            v.anomalies
        );
        let after_reader = two_holds(hold(1, "write"), hold(2, "read"), log);
        let v = check(model("cosmos-rwlock"), &after_reader);
        assert!(
            v.anomalies.iter().any(|a| a.starts_with("two holders")),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn fenced_writes_going_back_in_token_order_are_caught() {
        let mut h = lock_history(25);
        h.retain(|e| e.f != "final");
        h.push(ev(
            0,
            0,
            Kind::Ok,
            "final",
            json!({"max": 2, "log": [[2, 2000, 2], [1, 1000, 3]]}),
            100,
        ));
        let v = check(model("blob-lock"), &h);
        assert!(
            v.anomalies
                .iter()
                .any(|a| a.contains("accepted token 1 after token 2")),
            "{:?}",
            v.anomalies
        );
    }

    const S: u64 = 1_000_000_000;

    fn se(shard: &str, epoch: u64) -> Value {
        json!({"shard": shard, "epoch": epoch})
    }

    /// Shard 0 goes from process 1001 (epoch 1, acquired at 1 s, lost at `lost_at`) to
    /// process 2001 (epoch 2, acquired at `acquire_at`); each writes once while owning.
    fn shard_history(lost_at: u64, acquire_at: u64, log: Value) -> Vec<Event> {
        let mut h = vec![
            ev(1001, 1, Kind::Ok, "acquired", se("0", 1), S),
            ev(1001, 2, Kind::Invoke, "write", se("0", 1), 2 * S),
            ev(1001, 2, Kind::Ok, "write", se("0", 1), 2 * S + 10),
            ev(1001, 3, Kind::Ok, "lost", se("0", 1), lost_at),
            ev(2001, 1, Kind::Ok, "acquired", se("0", 2), acquire_at),
            ev(2001, 2, Kind::Invoke, "write", se("0", 2), acquire_at + S),
            ev(2001, 2, Kind::Ok, "write", se("0", 2), acquire_at + S + 10),
            ev(2001, 3, Kind::Ok, "lost", se("0", 2), acquire_at + 2 * S),
        ];
        h.push(ev(
            0,
            0,
            Kind::Ok,
            "final",
            json!({"shards": {"0": {"max": 2, "log": log}}}),
            100 * S,
        ));
        sorted(h)
    }

    fn good_log() -> Value {
        json!([[1, 1001, 2], [2, 2001, 2]])
    }

    #[test]
    fn a_clean_shard_handover_passes_and_counts_one_transfer() {
        let v = check(
            model("redis-shards"),
            &shard_history(3 * S, 4 * S, good_log()),
        );
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        assert_eq!(v.transfers, 1);
        assert_eq!(v.fenced_overlaps, 0);
    }

    #[test]
    fn two_owners_able_to_write_one_shard_at_once_are_caught() {
        // 2001 acquires at 3 s; 1001 sees its loss only at 4 s.
        let v = check(
            model("blob-shards"),
            &shard_history(4 * S, 3 * S, good_log()),
        );
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
        assert!(
            v.anomalies[0].starts_with("two owners of shard 0"),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn a_worker_writing_after_its_loss_is_caught() {
        // 1001 hears its loss at 3 s but writes again at 5.5 s, while 2001 owns the shard
        // (the fence refuses it: 2001 wrote epoch 2 at 5 s).
        let mut h = shard_history(3 * S, 4 * S, good_log());
        h.push(ev(
            1001,
            4,
            Kind::Invoke,
            "write",
            se("0", 1),
            5 * S + S / 2,
        ));
        h.push(ev(
            1001,
            4,
            Kind::Fail,
            "write",
            se("0", 1),
            5 * S + S / 2 + 10,
        ));
        let v = check(model("blob-shards"), &sorted(h));
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
        assert!(
            v.anomalies[0].contains("writing after its loss"),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn a_stale_epoch_accepted_by_the_fenced_resource_is_caught() {
        let v = check(
            model("redis-shards"),
            &shard_history(3 * S, 4 * S, json!([[2, 2001, 2], [1, 1001, 2]])),
        );
        assert!(
            v.anomalies
                .iter()
                .any(|a| a.contains("accepted a stale epoch 1 (from process 1001) after epoch 2")),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn an_accepted_write_from_a_worker_not_holding_its_epoch_is_caught() {
        let v = check(
            model("redis-shards"),
            &shard_history(3 * S, 4 * S, json!([[1, 1001, 2], [2, 1001, 2]])),
        );
        assert!(
            v.anomalies
                .iter()
                .any(|a| a.contains("but process 2001 held that epoch")),
            "{:?}",
            v.anomalies
        );
    }

    #[test]
    fn an_owner_frozen_past_its_lease_is_left_to_the_fence() {
        // 1001 is frozen from 1.5 s to 20 s; 2001 acquires at 18 s; 1001 sees its loss at
        // 20.5 s, once resumed.
        let mut h = shard_history(20 * S + S / 2, 18 * S, good_log());
        h.push(ev(
            0,
            0,
            Kind::Info,
            "sigstop",
            json!({"child": 1}),
            3 * S / 2,
        ));
        h.push(ev(0, 0, Kind::Info, "sigcont", json!({"child": 1}), 20 * S));
        let v = check(model("blob-shards"), &sorted(h));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        assert_eq!(v.fenced_overlaps, 1);
        // A short freeze (under the lease's safety margin) excuses nothing.
        let mut h = shard_history(4 * S, 3 * S, good_log());
        h.push(ev(0, 0, Kind::Info, "sigstop", json!({"child": 1}), 2 * S));
        h.push(ev(
            0,
            0,
            Kind::Info,
            "sigcont",
            json!({"child": 1}),
            3 * S + S / 2,
        ));
        let v = check(model("blob-shards"), &sorted(h));
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
    }

    #[test]
    fn a_killed_owner_owns_nothing_after_its_death() {
        // 1001 never sees a loss: it is killed at 3 s; 2001 acquires at 20 s.
        let mut h = shard_history(3 * S, 20 * S, good_log());
        h.retain(|e| !(e.p == 1001 && e.f == "lost"));
        h.push(ev(0, 0, Kind::Info, "sigkill", json!({"child": 1}), 3 * S));
        let v = check(model("blob-shards"), &sorted(h.clone()));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        // Without the kill it would own the shard to the end of the history.
        h.retain(|e| e.f != "sigkill");
        let v = check(model("blob-shards"), &sorted(h));
        assert_eq!(v.anomalies.len(), 1, "{:?}", v.anomalies);
    }

    #[test]
    fn queue_effects_lost_or_doubled_are_caught() {
        let h = vec![ev(
            0,
            0,
            Kind::Ok,
            "final",
            json!({"enqueued": [1, 2, 3], "effects": [1, 3, 3]}),
            1,
        )];
        let v = check(Model::Queue, &h);
        assert_eq!(v.anomalies.len(), 2, "{:?}", v.anomalies);
        assert!(v.anomalies[0].contains("never applied: [2]"));
        assert!(v.anomalies[1].contains("(3, 2)"));
    }
}
