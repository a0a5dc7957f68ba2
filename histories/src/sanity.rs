//! What each deliberately broken client needs a history to hold before the checker can be
//! asked to catch it, found from the clients' own operations (not from the stored state the
//! checker decides by). A checker-sanity test runs histories until one holds it, then requires
//! the checker to report the broken client in that history: a history without it proves
//! nothing either way (the nemesis did not set the failure up, or the writers ran out of
//! operations first), and is never counted as the checker's miss.

use std::collections::{BTreeMap, HashMap};

use serde_json::Value;

use crate::check::covered;
use crate::history::{Event, Kind, Operation, operations};
use crate::model::Model;

/// Where the history holds the failure the broken client of `model` needs (`Ok`: a
/// description), or why it does not (`Err`):
///
/// * register (a replace without If-Match): two acknowledged increments of different writers
///   that returned the same value: both wrote over the same value, the later write dropping
///   the earlier increment (a race of two read-modify-writes, which concurrency alone brings
///   about; every broken history of 5 writers so far held 4 to 22 such values).
/// * lock (a holder that claims the lock without asking): a holder checking its hold after
///   another acquisition, begun after its own completed, has completed: the broken holder
///   claims the lock there, which is the two-holders anomaly. Only a holder frozen past its
///   lease (or cut off from the service) while another writer took over gets there.
/// * semaphore and reader-writer lock (a holder that claims its permit or hold without
///   asking): as for the lock, counting only the acquisitions that exclude the holder (the
///   same slot's; a writer's, or any for a writer, see [`excludes`]).
/// * queue worker (a handler that is not idempotent): one message whose effect was applied
///   (`apply` acknowledged) twice: a redelivery of a message already handled, which takes a
///   delete that never reached the service. The broken handler appends its id again.
/// * shards (a worker that keeps writing after its `Lost`): a write of a shard invoked after
///   the worker's own `lost` of that epoch and after another worker acquired the shard, with
///   the two writer processes not both frozen (SIGSTOP) all the time in between.
pub fn exposed(model: Model, events: &[Event]) -> Result<String, String> {
    let ops = operations(events);
    match model {
        Model::Register(_) => register(&ops),
        Model::Lock(_) | Model::Semaphore(_) | Model::RwLock(_) => lock(&ops),
        Model::Queue => queue(&ops),
        Model::Shards(_) => shards(&ops),
    }
}

fn ok<'a>(ops: &'a [Operation], f: &'a str) -> impl Iterator<Item = &'a Operation> {
    ops.iter().filter(move |o| o.f == f && o.kind == Kind::Ok)
}

fn register(ops: &[Operation]) -> Result<String, String> {
    let mut writers: BTreeMap<u64, Vec<u64>> = BTreeMap::new();
    for o in ok(ops, "incr").filter(|o| o.p != 0) {
        if let Some(n) = o.ret.as_u64() {
            writers.entry(n).or_default().push(o.p / 1000);
        }
    }
    let twice: Vec<u64> = writers
        .iter()
        .filter(|(_, w)| w.iter().any(|c| *c != w[0]))
        .map(|(n, _)| *n)
        .collect();
    if twice.is_empty() {
        Err(format!(
            "no two writers' increments returned the same value ({} values returned)",
            writers.len()
        ))
    } else {
        Ok(format!(
            "{} value(s) returned by increments of two writers, e.g. {:?}",
            twice.len(),
            &twice[..twice.len().min(5)]
        ))
    }
}

/// What an acquisition's result says is held: `""` for a lock (or a shard), `slot:K` for a
/// permit, `read` or `write` for a reader-writer lock's hold.
pub fn held_what(ret: &Value) -> String {
    if let Some(k) = ret["slot"].as_u64() {
        format!("slot:{k}")
    } else if let Some(mode) = ret["mode"].as_str() {
        mode.to_string()
    } else {
        String::new()
    }
}

/// Whether a hold of `b` (see [`held_what`]) excludes one of `a`: locks exclude each other,
/// permits those of their slot, a write hold everyone and everyone a write hold.
pub fn excludes(a: &str, b: &str) -> bool {
    match (a, b) {
        ("read", "read") => false,
        _ if a.starts_with("slot:") || b.starts_with("slot:") => a == b,
        _ => true,
    }
}

/// The token of an acquisition's result (a lock's is the result itself).
fn token_of(ret: &Value) -> Option<u64> {
    ret.as_u64().or_else(|| ret["token"].as_u64())
}

fn lock(ops: &[Operation]) -> Result<String, String> {
    let acquires: Vec<&Operation> = ok(ops, "acquire").collect();
    let by_token: HashMap<u64, &Operation> = acquires
        .iter()
        .filter_map(|a| token_of(&a.ret).map(|t| (t, *a)))
        .collect();
    for c in ops.iter().filter(|o| o.f == "held") {
        let Some(token) = c.arg.as_u64() else {
            continue;
        };
        let Some(mine) = by_token.get(&token) else {
            continue;
        };
        let what = held_what(&mine.ret);
        if let Some(b) = acquires.iter().find(|b| {
            token_of(&b.ret) != Some(token)
                && b.t_invoke > mine.t_done
                && b.t_done < c.t_invoke
                && excludes(&what, &held_what(&b.ret))
        }) {
            return Ok(format!(
                "the holder of token {token} checked its hold {:.3} s after token {} was \
                 acquired by process {}",
                (c.t_invoke - b.t_done) as f64 / 1e9,
                b.ret,
                b.p
            ));
        }
    }
    Err(format!(
        "no holder checked its hold after another acquisition ({} acquisitions; was a holder \
         frozen past its lease while another took over, with checks still ahead?)",
        acquires.len()
    ))
}

fn queue(ops: &[Operation]) -> Result<String, String> {
    let mut applied: BTreeMap<u64, usize> = BTreeMap::new();
    for o in ok(ops, "apply") {
        if let Some(id) = o.arg.as_u64() {
            *applied.entry(id).or_default() += 1;
        }
    }
    let twice: Vec<u64> = applied
        .iter()
        .filter(|(_, n)| **n > 1)
        .map(|(id, _)| *id)
        .collect();
    if twice.is_empty() {
        Err(format!(
            "no message was handled twice ({} handled once; no delete was lost?)",
            applied.len()
        ))
    } else {
        Ok(format!(
            "{} message(s) handled twice, e.g. {:?}",
            twice.len(),
            &twice[..twice.len().min(5)]
        ))
    }
}

fn shard_epoch(v: &Value) -> Option<(String, u64)> {
    Some((v["shard"].as_str()?.to_string(), v["epoch"].as_u64()?))
}

fn shards(ops: &[Operation]) -> Result<String, String> {
    let end = ops.iter().map(|o| o.t_invoke).max().unwrap_or(0);
    // SIGSTOP windows by writer process.
    let mut stops: HashMap<u64, Vec<(u64, u64)>> = HashMap::new();
    for o in ops.iter().filter(|o| o.p == 0) {
        let Some(c) = o.ret["child"].as_u64() else {
            continue;
        };
        match o.f.as_str() {
            "sigstop" => stops.entry(c).or_default().push((o.t_invoke, end)),
            "sigcont" => {
                if let Some(w) = stops
                    .get_mut(&c)
                    .and_then(|v| v.iter_mut().rev().find(|w| w.0 <= o.t_invoke))
                {
                    w.1 = w.1.min(o.t_invoke);
                }
            }
            _ => {}
        }
    }
    let lost: Vec<(&Operation, String, u64)> = ok(ops, "lost")
        .filter_map(|o| shard_epoch(&o.ret).map(|(s, e)| (o, s, e)))
        .collect();
    let acquired: Vec<(&Operation, String, u64)> = ok(ops, "acquired")
        .filter_map(|o| shard_epoch(&o.ret).map(|(s, e)| (o, s, e)))
        .collect();
    for w in ops.iter().filter(|o| o.f == "write") {
        let Some((shard, epoch)) = shard_epoch(&w.arg) else {
            continue;
        };
        let after_loss = lost
            .iter()
            .any(|(l, s, e)| l.p == w.p && *s == shard && *e == epoch && l.t_invoke < w.t_invoke);
        if !after_loss {
            continue;
        }
        let taken = acquired.iter().find(|(a, s, e)| {
            a.p != w.p && *s == shard && *e > epoch && a.t_invoke < w.t_invoke && {
                let frozen: Vec<(u64, u64)> = [w.p / 1000, a.p / 1000]
                    .iter()
                    .flat_map(|c| stops.get(c).into_iter().flatten().copied())
                    .collect();
                !covered(a.t_invoke, w.t_invoke, &frozen)
            }
        });
        if let Some((a, _, e)) = taken {
            return Ok(format!(
                "process {} wrote shard {shard} with epoch {epoch} after its loss and after \
                 process {} acquired epoch {e}",
                w.p, a.p
            ));
        }
    }
    Err(format!(
        "no worker wrote a shard after its loss and another's acquisition ({} losses, {} \
         acquisitions)",
        lost.len(),
        acquired.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ev(p: u64, op: u64, kind: Kind, f: &str, value: Value, t: u64) -> Event {
        Event {
            p,
            op,
            kind,
            f: f.into(),
            value,
            t,
            err: None,
        }
    }

    fn model(name: &str) -> Model {
        Model::parse(name).unwrap()
    }

    fn sorted(mut v: Vec<Event>) -> Vec<Event> {
        v.sort_by_key(|e| e.t);
        v
    }

    #[test]
    fn a_holder_checking_after_a_later_acquisition_exposes_the_broken_lock() {
        let h = |claim_at: u64, kind: Kind| {
            sorted(vec![
                ev(1000, 1, Kind::Invoke, "acquire", Value::Null, 10),
                ev(1000, 1, Kind::Ok, "acquire", json!(1), 20),
                ev(2000, 1, Kind::Invoke, "acquire", Value::Null, 30),
                ev(2000, 1, Kind::Ok, "acquire", json!(2), 40),
                ev(1000, 2, Kind::Invoke, "held", json!(1), claim_at),
                ev(1000, 2, kind, "held", json!(1), claim_at + 1),
            ])
        };
        assert!(exposed(model("blob-lock"), &h(25, Kind::Ok)).is_err());
        // Whatever the check answered: the correct holder says no, the broken one yes.
        assert!(exposed(model("redis-lock"), &h(50, Kind::Fail)).is_ok());
        assert!(exposed(model("cosmos-lock"), &h(50, Kind::Ok)).is_ok());
        // An acquisition begun before the holder's own completed does not count.
        let mut early = h(50, Kind::Ok);
        early.retain(|e| !(e.p == 2000 && e.kind == Kind::Invoke));
        early.push(ev(2000, 1, Kind::Invoke, "acquire", Value::Null, 15));
        assert!(exposed(model("blob-lock"), &sorted(early)).is_err());
    }

    #[test]
    fn a_message_handled_twice_exposes_the_broken_queue_handler() {
        let apply = |p: u64, t: u64, kind: Kind| {
            vec![
                ev(p, 1, Kind::Invoke, "apply", json!(7), t),
                ev(p, 1, kind, "apply", json!(7), t + 1),
            ]
        };
        let once = [apply(1, 10, Kind::Ok), apply(2, 20, Kind::Fail)].concat();
        assert!(exposed(Model::Queue, &sorted(once)).is_err());
        let twice = [apply(1, 10, Kind::Ok), apply(2, 20, Kind::Ok)].concat();
        assert!(exposed(Model::Queue, &sorted(twice)).is_ok());
    }

    #[test]
    fn two_writers_returning_one_value_expose_the_unconditional_register() {
        let incr = |p: u64, op: u64, t: u64, n: u64| {
            vec![
                ev(p, op, Kind::Invoke, "incr", json!(op), t),
                ev(p, op, Kind::Ok, "incr", json!(n), t + 5),
            ]
        };
        let h = [
            incr(1000, 1, 0, 1),
            incr(2000, 2, 10, 2),
            incr(1001, 3, 20, 2),
        ]
        .concat();
        // One writer (two generations of its process) returning a value twice is no race.
        let one = [
            incr(1000, 1, 0, 1),
            incr(1000, 2, 10, 2),
            incr(1001, 3, 20, 2),
        ]
        .concat();
        assert!(exposed(model("blob-register"), &sorted(h)).is_ok());
        assert!(exposed(model("table-register"), &sorted(one)).is_err());
    }

    #[test]
    fn a_write_after_loss_and_takeover_exposes_the_broken_shard_worker() {
        let se = |s: &str, e: u64| json!({"shard": s, "epoch": e});
        let h = |write_at: u64, stop: Option<(u64, u64)>| {
            let mut h = vec![
                ev(1001, 1, Kind::Ok, "acquired", se("0", 1), 10),
                ev(1001, 2, Kind::Ok, "lost", se("0", 1), 20),
                ev(2001, 1, Kind::Ok, "acquired", se("0", 2), 30),
                ev(1001, 3, Kind::Invoke, "write", se("0", 1), write_at),
                ev(1001, 3, Kind::Ok, "write", se("0", 1), write_at + 1),
            ];
            if let Some((s0, s1)) = stop {
                h.push(ev(0, 0, Kind::Info, "sigstop", json!({"child": 1}), s0));
                h.push(ev(0, 0, Kind::Info, "sigcont", json!({"child": 1}), s1));
            }
            sorted(h)
        };
        assert!(exposed(model("blob-shards"), &h(25, None)).is_err());
        assert!(exposed(model("redis-shards"), &h(40, None)).is_ok());
        assert!(exposed(model("redis-shards"), &h(40, Some((25, 45)))).is_err());
    }
}
