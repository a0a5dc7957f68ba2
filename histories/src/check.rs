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

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;
use stateright::semantics::{ConsistencyTester, LinearizabilityTester, SequentialSpec};

use crate::history::{Event, Kind, Operation, operations};
#[cfg(test)]
use crate::model::Backend;
use crate::model::Model;
use crate::writer::Fenced;

/// The verdict on one history.
#[derive(Clone, Debug, Default)]
pub struct Verdict {
    /// Client operations in the history (nemesis actions and the final read not counted).
    pub operations: usize,
    /// What the checker found (empty: none).
    pub anomalies: Vec<String>,
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
    let anomalies = match model {
        Model::Register(_) => check_register(&ops),
        Model::Lock(_) => check_lock(&ops),
        Model::Queue => check_queue(&ops),
    };
    Verdict {
        operations: client_ops,
        anomalies,
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
    let mut anomalies = Vec::new();
    let acquires: Vec<&Operation> = ops
        .iter()
        .filter(|o| o.f == "acquire" && o.kind == Kind::Ok)
        .collect();
    let mut by_token: BTreeMap<u64, &Operation> = BTreeMap::new();
    for a in &acquires {
        let Some(t) = a.ret.as_u64() else {
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
    for a in &acquires {
        for b in &acquires {
            if a.t_done < b.t_invoke && a.ret.as_u64() >= b.ret.as_u64() {
                anomalies.push(format!(
                    "fencing token went backwards: {} completed before {} began",
                    short(a),
                    short(b)
                ));
            }
        }
    }
    // Mutual exclusion as the holders saw it.
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
        for b in &acquires {
            if b.ret.as_u64() != Some(token) && b.t_invoke > mine.t_done && b.t_done < c.t_invoke {
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
    // The fenced resource.
    let Some(final_op) = ops.iter().find(|o| o.f == "final") else {
        anomalies.push("the history has no final state of the fenced resource".into());
        return anomalies;
    };
    let fenced: Fenced = match serde_json::from_value(final_op.ret.clone()) {
        Ok(f) => f,
        Err(e) => {
            anomalies.push(format!("final state unreadable: {e}"));
            return anomalies;
        }
    };
    let mut seen_tokens: BTreeSet<u64> = BTreeSet::new();
    let mut last: Option<u64> = None;
    let mut token_child: HashMap<u64, u64> = HashMap::new();
    for (i, [token, p, _op]) in fenced.log.iter().enumerate() {
        if let Some(l) = last {
            if *token < l {
                anomalies.push(format!(
                    "the resource accepted token {token} after token {l} (entry {i})"
                ));
            } else if *token != l && seen_tokens.contains(token) {
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
    for w in ops.iter().filter(|o| o.f == "write") {
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
        let v = check(Model::Register(Backend::Blob), &sorted(h));
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
        let v = check(Model::Register(Backend::Blob), &sorted(h));
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
        let v = check(Model::Register(Backend::Blob), &sorted(h.clone()));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
        // With the final value listing the applied increments.
        h.push(ev(0, 1, Kind::Invoke, "read", Value::Null, 60));
        h.push(ev(0, 1, Kind::Ok, "read", json!([2, 11, [21, 11]]), 70));
        let v = check(Model::Register(Backend::Blob), &sorted(h));
        assert!(v.anomalies.is_empty(), "{:?}", v.anomalies);
    }

    #[test]
    fn a_failed_increment_that_took_effect_is_an_anomaly() {
        let mut h = Vec::new();
        h.extend(incr(1000, 1, 11, 10, 0, None));
        h.push(ev(1000, 1, Kind::Fail, "incr", Value::Null, 20));
        h.extend(read(2000, 1, 1, Some(11), 30, 40));
        let v = check(Model::Register(Backend::Blob), &sorted(h));
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
        let ok = check(Model::Lock(Backend::Blob), &lock_history(25));
        assert!(ok.anomalies.is_empty(), "{:?}", ok.anomalies);
        let bad = check(Model::Lock(Backend::Blob), &lock_history(50));
        assert!(
            bad.anomalies[0].starts_with("two holders"),
            "{:?}",
            bad.anomalies
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
        let v = check(Model::Lock(Backend::Blob), &h);
        assert!(
            v.anomalies
                .iter()
                .any(|a| a.contains("accepted token 1 after token 2")),
            "{:?}",
            v.anomalies
        );
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
