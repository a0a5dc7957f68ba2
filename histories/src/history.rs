//! The recorder: every client operation as invoke → ok / fail / info, one JSON object a line.
//!
//! A line is written and flushed *before* the operation is sent (invoke) and after it returned
//! (completion), each with a reading of the system-wide monotonic clock
//! ([`azstore::clock::Clock::system`]: `CLOCK_BOOTTIME` on Linux, comparable between the
//! writer processes of one machine). An operation with no completion line (its process was
//! killed) counts as `info`: its outcome is unknown.

use std::io::{BufRead, Write};
use std::path::Path;

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a line records.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// The operation is about to be sent.
    Invoke,
    /// It completed and its effect (if any) happened; `value` is what it returned.
    Ok,
    /// It completed and certainly had no effect.
    Fail,
    /// Its outcome is unknown (`RequestSent::Maybe`, a timeout): it may or may not have had an
    /// effect, at any time after its invocation.
    Info,
}

/// One line of a history.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Event {
    /// The logical process: unique per writer process and generation (a process that saw an
    /// `info` continues under a new number, as its earlier operation may still be pending).
    pub p: u64,
    /// The operation's number within its writer process (pairs invoke and completion).
    pub op: u64,
    /// Invoke or the completion's kind.
    #[serde(rename = "type")]
    pub kind: Kind,
    /// The function: `incr`, `read`, `acquire`, `held`, `write`, `release`, `apply`, `nemesis`.
    pub f: String,
    /// Argument (invoke) or result (ok).
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub value: Value,
    /// Monotonic time in nanoseconds.
    pub t: u64,
    /// Why it failed, for fail / info.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub err: Option<String>,
}

/// Nanoseconds on the system-wide monotonic clock.
pub fn now_ns() -> u64 {
    azstore::clock::Clock::system().now().as_nanos() as u64
}

/// Writes events as JSON lines, flushing each one.
pub struct Recorder<W: Write> {
    out: W,
}

impl<W: Write> Recorder<W> {
    /// A recorder writing to `out`.
    pub fn new(out: W) -> Recorder<W> {
        Recorder { out }
    }

    /// Records one event now.
    pub fn record(
        &mut self,
        p: u64,
        op: u64,
        kind: Kind,
        f: &str,
        value: Value,
        err: Option<String>,
    ) {
        let e = Event {
            p,
            op,
            kind,
            f: f.to_string(),
            value,
            t: now_ns(),
            err,
        };
        self.write(&e);
    }

    /// Writes a ready event.
    pub fn write(&mut self, e: &Event) {
        let mut line = serde_json::to_vec(e).expect("events serialize");
        line.push(b'\n');
        // A closed pipe means the campaign is over; nothing to do about it here.
        let _ = self.out.write_all(&line);
        let _ = self.out.flush();
    }

    /// Flushes the output.
    pub fn flush(&mut self) {
        let _ = self.out.flush();
    }
}

/// Reads a history file; lines that do not parse (a process killed mid-line) are skipped.
pub fn load(path: &Path) -> std::io::Result<Vec<Event>> {
    let f = std::fs::File::open(path)?;
    let mut out = Vec::new();
    for line in std::io::BufReader::new(f).lines() {
        if let Ok(e) = serde_json::from_str::<Event>(&line?) {
            out.push(e);
        }
    }
    out.sort_by_key(|e| e.t);
    Ok(out)
}

/// One operation: its invocation and completion (`None`: never completed = info).
#[derive(Clone, Debug)]
pub struct Operation {
    /// The logical process.
    pub p: u64,
    /// Its number within its writer process.
    pub op: u64,
    /// The function.
    pub f: String,
    /// Invocation argument.
    pub arg: Value,
    /// Invocation time.
    pub t_invoke: u64,
    /// Completion kind and time and result; `Info` with the end of the history when missing.
    pub kind: Kind,
    /// Completion time (`u64::MAX` for info).
    pub t_done: u64,
    /// The result of an `ok`.
    pub ret: Value,
}

/// Pairs invocations with their completions (the events must be sorted by time).
pub fn operations(events: &[Event]) -> Vec<Operation> {
    use std::collections::HashMap;
    let mut open: HashMap<(u64, u64), usize> = HashMap::new();
    let mut ops: Vec<Operation> = Vec::new();
    for e in events {
        match e.kind {
            Kind::Invoke => {
                open.insert((e.p, e.op), ops.len());
                ops.push(Operation {
                    p: e.p,
                    op: e.op,
                    f: e.f.clone(),
                    arg: e.value.clone(),
                    t_invoke: e.t,
                    kind: Kind::Info,
                    t_done: u64::MAX,
                    ret: Value::Null,
                });
            }
            kind => {
                if let Some(i) = open.remove(&(e.p, e.op)) {
                    let o = &mut ops[i];
                    o.kind = kind;
                    if kind != Kind::Info {
                        o.t_done = e.t;
                    }
                    o.ret = e.value.clone();
                } else if e.f != "nemesis" {
                    // A completion without invocation: keep it visible as its own operation
                    // (an instantaneous one) so that checkers still see its claim.
                    ops.push(Operation {
                        p: e.p,
                        op: e.op,
                        f: e.f.clone(),
                        arg: Value::Null,
                        t_invoke: e.t,
                        kind,
                        t_done: e.t,
                        ret: e.value.clone(),
                    });
                }
            }
        }
    }
    ops
}
