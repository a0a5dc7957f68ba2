//! A campaign: histories of one model, each recorded from writer processes under a randomized
//! nemesis and decided by the checker.
//!
//! One history: fresh resources (a container, table, queue or key of its own), fault proxies
//! in front of the services, `writers` writer processes (this binary re-executed), and the
//! nemesis combining, at random moments from the history's seed, several of: proxy faults
//! (lost requests and replies, resets, stalls past the client timeout, 500 and 503 with
//! `Retry-After`, slow and cut bodies), Redis replies lost and connections stalled, SIGSTOP /
//! SIGCONT and SIGKILL of writer processes (a killed writer is replaced), and forward jumps of
//! a writer's lease clock. The history file is kept when the checker finds an anomaly.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::Service;
use azstore::blob::BlobJson;
use azstore::blob::BlobServiceClient;
use azstore::queue::QueueServiceClient;
use azstore::update::Versioned;
use serde_json::{Value, json};
use testkit::fault::{Fault, Rule};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use crate::backend::{Faults, HttpFaults, Prepared, Site};
use crate::check::Verdict;
use crate::history::{Event, Kind, Recorder, now_ns};
use crate::model::{Model, Variant};
use crate::rng::Rng;
use crate::writer::{EFFECT_SHARDS, Fenced, Reg, RegisterRun, WriterArgs};

/// How a campaign runs.
#[derive(Clone, Debug)]
pub struct Plan {
    /// The model.
    pub model: Model,
    /// The client variant.
    pub variant: Variant,
    /// Histories to record.
    pub histories: u64,
    /// Writer processes per history.
    pub writers: u64,
    /// Operations per writer.
    pub ops: u64,
    /// The campaign's seed (history `h` uses `seed + h`).
    pub seed: u64,
    /// Whether the nemesis plays.
    pub nemesis: bool,
    /// Checker-sanity runs: besides the random nemesis, the fault that exposes the broken
    /// variant is made certain, as far as the nemesis can: a lock holder caught right after
    /// its acquire is paused past its lease and on until another writer's later acquisition
    /// completed (at most 45 s in all), with no other fault in the way; every queue DELETE
    /// fails until 24 did (deletes and their retries), so handled messages come back.
    /// [`crate::sanity::exposed`] tells whether a history holds the failure.
    pub sanity: bool,
    /// Keep every history file, not only those with anomalies.
    pub keep_all: bool,
    /// Where failing histories are kept.
    pub keep_dir: PathBuf,
    /// The `histories` binary to re-execute for writers and the checker.
    pub exe: PathBuf,
    /// Shard models: the shards in the group ([`SHARDS`](crate::writer::SHARDS) by default).
    pub shards: usize,
    /// Shard models: the shard workers each writer process runs at once (1 by default).
    pub workers_per_writer: u64,
}

/// What a campaign found.
#[derive(Clone, Debug, Default)]
pub struct Report {
    /// Histories recorded.
    pub histories: u64,
    /// Client operations in them.
    pub operations: u64,
    /// Anomalies found.
    pub anomalies: u64,
    /// Shard models: ownership transfers in the histories.
    pub transfers: u64,
    /// Shard models: overlaps excused by a frozen older owner (the epoch alone protected).
    pub fenced_overlaps: u64,
    /// Kept history files (those with anomalies).
    pub kept: Vec<PathBuf>,
    /// The first anomalies, for the report.
    pub examples: Vec<String>,
}

impl Report {
    /// The campaign's summary line (shard models also count the ownership transfers):
    /// `campaign: MODEL, H histories, O operations[, T transfers], A anomalies, seed S`.
    pub fn line(&self, model: Model, seed: u64) -> String {
        let transfers = if model.is_shards() {
            format!("{} transfers, ", self.transfers)
        } else {
            String::new()
        };
        format!(
            "campaign: {}, {} histories, {} operations, {transfers}{} anomalies, seed {}",
            model.name(),
            self.histories,
            self.operations,
            self.anomalies,
            seed
        )
    }
}

/// Runs a campaign and prints one line per history and the summary line.
pub async fn run(plan: &Plan) -> Report {
    let mut report = Report::default();
    std::fs::create_dir_all(&plan.keep_dir).expect("history directory");
    for h in 0..plan.histories {
        let seed = plan.seed.wrapping_add(h);
        let path = plan.keep_dir.join(format!(
            "{}-{}-seed{}.jsonl",
            plan.model.name(),
            plan.variant.name(),
            seed
        ));
        let verdict = history(plan, seed, &path).await;
        report.histories += 1;
        report.operations += verdict.operations as u64;
        report.anomalies += verdict.anomalies.len() as u64;
        report.transfers += verdict.transfers;
        report.fenced_overlaps += verdict.fenced_overlaps;
        let transfers = if plan.model.is_shards() {
            format!(
                ", {} transfers, {} overlaps of a frozen owner (fenced)",
                verdict.transfers, verdict.fenced_overlaps
            )
        } else {
            String::new()
        };
        eprintln!(
            "history {} of {}: {} seed {seed}: {} operations{transfers}, {} anomalies{}",
            h + 1,
            plan.histories,
            plan.model.name(),
            verdict.operations,
            verdict.anomalies.len(),
            if verdict.anomalies.is_empty() {
                String::new()
            } else {
                format!(" (kept {})", path.display())
            }
        );
        if verdict.anomalies.is_empty() && !plan.keep_all {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(path.with_extension("stderr"));
        } else {
            for a in verdict.anomalies.iter().take(3) {
                eprintln!("  anomaly: {a}");
            }
            report
                .examples
                .extend(verdict.anomalies.iter().take(3).cloned());
            report.kept.push(path);
        }
    }
    println!("{}", report.line(plan.model, plan.seed));
    report
}

/// The shared history file.
type Sink = Arc<Mutex<Recorder<std::io::BufWriter<std::fs::File>>>>;

fn note(sink: &Sink, f: &str, kind: Kind, value: Value) {
    sink.lock().unwrap().record(0, 0, kind, f, value, None);
}

/// Records a signal sent to writer `child` (`sigstop`, `sigcont`, `sigkill`): the shard
/// checker ends a killed worker's ownerships there and knows when a worker was frozen.
fn note_signal(sink: &Sink, f: &str, child: u64) {
    note(sink, f, Kind::Info, json!({ "child": child }));
}

/// A running writer process.
struct Writer {
    child: Child,
    stdin: Option<ChildStdin>,
    pid: i32,
    number: u64,
}

/// The writers, shared by the waiter and the nemesis.
type Writers = Arc<tokio::sync::Mutex<Vec<Writer>>>;

/// Who holds the lock, as the writers' own records tell (lock and shard models).
type Holder = Arc<Mutex<Holding>>;

/// The lock as the writers' records tell it.
#[derive(Debug, Default)]
struct Holding {
    /// The writer that last acquired the lock and has not begun to release it, and whether it
    /// has not yet checked its hold since (a fresh holder).
    now: Option<(u64, bool)>,
    /// Every acquisition completed so far: (writer, what it holds, invoked, completed),
    /// times of the history's clock. What it holds: `""` for a lock or a shard, `slot:K` for
    /// a permit, `read` or `write` for a reader-writer lock's holds.
    acquired: Vec<(u64, String, u64, u64)>,
}

impl Holding {
    /// Whether a writer other than `n` completed an acquisition that it began after `n`'s
    /// latest acquisition completed: `n` lost the lock to it, whatever `n` believes.
    fn taken_from(&self, n: u64) -> bool {
        let Some((what, mine)) = self
            .acquired
            .iter()
            .rev()
            .find(|a| a.0 == n)
            .map(|a| (&a.1, a.3))
        else {
            return false;
        };
        self.acquired
            .iter()
            .any(|a| a.0 != n && a.2 > mine && crate::sanity::excludes(what, &a.1))
    }
}

/// The DELETE requests the queue's checker-sanity run makes fail before it lets deletes
/// through again (see [`Plan::sanity`]).
const SANITY_FAILED_DELETES: usize = 24;

struct Setup {
    resource: String,
    /// The proxy in front of Azurite's Blob service: the fenced resources and the queue
    /// worker's effects.
    blob: HttpFaults,
    /// The proxy in front of Azurite's Queue service (queue model).
    queue: Option<HttpFaults>,
    /// The backend's part of the history (register, lock and shard models).
    backend: Option<Box<dyn Prepared>>,
    enqueued: Vec<u64>,
}

impl Setup {
    /// The faults that matter to `model`: the backend's own, the fenced resources' (lock and
    /// shard models), the queue's and the effects' (queue model).
    fn faults(&self, model: Model) -> Vec<&dyn Faults> {
        let mut all = self.backend.as_ref().map_or_else(Vec::new, |b| b.faults());
        match model {
            Model::Register(_) => {}
            Model::Lock(_) | Model::Shards(_) | Model::Semaphore(_) | Model::RwLock(_) => {
                all.push(&self.blob)
            }
            Model::Queue => all.extend(
                self.queue
                    .iter()
                    .map(|q| q as &dyn Faults)
                    .chain([&self.blob as &dyn Faults]),
            ),
        }
        all
    }
}

/// Records and decides one history.
async fn history(plan: &Plan, seed: u64, path: &Path) -> Verdict {
    let account = testkit::account();
    let resource = testkit::unique("hist");
    let mut enqueued = Vec::new();
    let blobs = BlobServiceClient::new(&account).expect("blob client");
    let container = blobs.container(&resource).expect("container name");
    container.create().await.expect("create container");
    let backend = match (plan.model.backend(), plan.model.family()) {
        (Some(b), Some(family)) => Some(b.prepare(&resource, family).await),
        _ => None,
    };
    let mut queue = None;
    if plan.model == Model::Queue {
        let q = QueueServiceClient::new(&account)
            .expect("queue client")
            .queue(&resource)
            .expect("queue name");
        q.create_if_not_exists().await.expect("create queue");
        let n = plan.writers * plan.ops;
        for id in 1..=n {
            q.put_message(id.to_string()).await.expect("enqueue");
            enqueued.push(id);
        }
        queue = Some(HttpFaults::start(&account, Service::Queue, QUEUE_METHODS).await);
    }
    // The fenced resources and the effects: `update()` sends GET and PUT (the queue model's
    // faults aim at the methods of both of its services, as they always have).
    let blob_methods: &[&str] = if plan.model == Model::Queue {
        QUEUE_METHODS
    } else {
        &["", "GET", "PUT"]
    };
    let setup = Setup {
        blob: HttpFaults::start(&account, Service::Blob, blob_methods).await,
        queue,
        backend,
        resource,
        enqueued,
    };
    if plan.sanity && plan.model == Model::Queue {
        lose_deletes(&setup);
    }
    let file = std::fs::File::create(path).expect("history file");
    let sink: Sink = Arc::new(Mutex::new(Recorder::new(std::io::BufWriter::new(file))));
    note(&sink, "model", Kind::Ok, json!(plan.model.name()));
    note(
        &sink,
        "seed",
        Kind::Ok,
        json!({"seed": seed, "variant": plan.variant.name(), "writers": plan.writers, "ops": plan.ops}),
    );
    let stderr_path = path.with_extension("stderr");
    let writers: Writers = Arc::new(tokio::sync::Mutex::new(Vec::new()));
    let next_number = Arc::new(std::sync::atomic::AtomicU64::new(1));
    let holder: Holder = Arc::default();
    for _ in 0..plan.writers {
        let n = next_number.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        let w = spawn(
            plan,
            &setup,
            seed,
            n,
            plan.ops,
            &sink,
            &stderr_path,
            &holder,
        );
        writers.lock().await.push(w);
    }
    let finished = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let setup = Arc::new(setup);
    let nemesis = if plan.nemesis {
        let ctx = NemesisCtx {
            plan: plan.clone(),
            setup: setup.clone(),
            writers: writers.clone(),
            sink: sink.clone(),
            next_number: next_number.clone(),
            stderr_path: stderr_path.clone(),
            finished: finished.clone(),
            seed,
            holder: holder.clone(),
        };
        Some(tokio::spawn(nemesis_loop(ctx)))
    } else {
        None
    };
    // Wait for the writers (the queue workers: for every message's effect).
    let deadline = tokio::time::Instant::now() + Duration::from_secs(240);
    if plan.model == Model::Queue {
        // Until every message is deleted from the queue (messages whose delete was lost come
        // back after their visibility timeout and are handled again).
        let queue = QueueServiceClient::new(&testkit::account())
            .expect("queue client")
            .queue(&setup.resource)
            .expect("queue name");
        loop {
            let left = queue
                .get_properties()
                .await
                .map_or(u64::MAX, |p| p.approximate_message_count);
            if left == 0 || tokio::time::Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(300)).await;
        }
    } else {
        loop {
            let all_done = {
                let mut ws = writers.lock().await;
                ws.iter_mut()
                    .all(|w| matches!(w.child.try_wait(), Ok(Some(_))))
            };
            if all_done || tokio::time::Instant::now() > deadline {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
    finished.store(true, std::sync::atomic::Ordering::SeqCst);
    if let Some(n) = nemesis {
        let _ = n.await;
    }
    // Stop what is left: resume paused writers, ask them to stop, then kill stragglers.
    {
        let mut ws = writers.lock().await;
        for w in ws.iter_mut() {
            unsafe_signal(w.pid, libc::SIGCONT);
            note_signal(&sink, "sigcont", w.number);
            if let Some(mut stdin) = w.stdin.take() {
                let _ = stdin.write_all(b"stop\n").await;
                let _ = stdin.flush().await;
                drop(stdin);
            }
        }
        for w in ws.iter_mut() {
            if tokio::time::timeout(Duration::from_secs(40), w.child.wait())
                .await
                .is_err()
            {
                let _ = w.child.kill().await;
            }
        }
    }
    for f in setup.faults(plan.model) {
        f.clear();
    }
    // Give the stdout readers a moment to drain.
    tokio::time::sleep(Duration::from_millis(200)).await;
    final_state(plan.model, plan.shards, &setup, &sink).await;
    sink.lock().unwrap().flush();
    cleanup(&setup).await;
    decide(plan, path).await
}

/// Reads the final state directly (no proxy) into the history.
async fn final_state(model: Model, shard_count: usize, setup: &Setup, sink: &Sink) {
    let account = testkit::account();
    let container = BlobServiceClient::new(&account)
        .expect("blob client")
        .container(&setup.resource)
        .expect("container");
    match model {
        Model::Register(backend) => {
            let t0 = now_ns();
            let mut reg: Option<Reg> = None;
            if let Some(prepared) = &setup.backend {
                let direct = prepared.direct();
                let site = Site {
                    resource: &setup.resource,
                    address: &direct,
                };
                backend
                    .register(site, RegisterRun::final_read(&mut reg))
                    .await;
            }
            let reg = reg.unwrap_or(Reg {
                n: 0,
                by: None,
                applied: Vec::new(),
            });
            let mut s = sink.lock().unwrap();
            s.write(&Event {
                p: 0,
                op: 1,
                kind: Kind::Invoke,
                f: "read".into(),
                value: Value::Null,
                t: t0,
                err: None,
            });
            s.record(
                0,
                1,
                Kind::Ok,
                "read",
                json!([reg.n, reg.by, reg.applied]),
                None,
            );
        }
        Model::Lock(_) | Model::RwLock(_) => {
            let fenced: Fenced = BlobJson::<Fenced>::new(container.blob("fenced").expect("blob"))
                .read()
                .await
                .expect("final read")
                .map(|c| c.value)
                .unwrap_or_default();
            note(
                sink,
                "final",
                Kind::Ok,
                serde_json::to_value(fenced).expect("json"),
            );
        }
        Model::Semaphore(_) => {
            let mut slots = serde_json::Map::new();
            for slot in 0..crate::hold::PERMITS {
                let blob = container
                    .blob(&format!("fenced-slot-{slot}"))
                    .expect("blob");
                let fenced: Fenced = BlobJson::<Fenced>::new(blob)
                    .read()
                    .await
                    .expect("final read")
                    .map(|c| c.value)
                    .unwrap_or_default();
                slots.insert(
                    slot.to_string(),
                    serde_json::to_value(fenced).expect("json"),
                );
            }
            note(sink, "final", Kind::Ok, json!({ "slots": slots }));
        }
        Model::Shards(_) => {
            let mut shards = serde_json::Map::new();
            for shard in 0..shard_count {
                let blob = container.blob(&format!("fenced-{shard}")).expect("blob");
                let fenced: Fenced = BlobJson::<Fenced>::new(blob)
                    .read()
                    .await
                    .expect("final read")
                    .map(|c| c.value)
                    .unwrap_or_default();
                shards.insert(
                    shard.to_string(),
                    serde_json::to_value(fenced).expect("json"),
                );
            }
            note(sink, "final", Kind::Ok, json!({ "shards": shards }));
        }
        Model::Queue => {
            let effects = effects(&setup.resource).await;
            note(
                sink,
                "final",
                Kind::Ok,
                json!({"enqueued": setup.enqueued, "effects": effects}),
            );
        }
    }
}

async fn effects(resource: &str) -> Vec<u64> {
    let container = BlobServiceClient::new(&testkit::account())
        .expect("blob client")
        .container(resource)
        .expect("container");
    let mut all = Vec::new();
    for shard in 0..EFFECT_SHARDS {
        let b =
            BlobJson::<Vec<u64>>::new(container.blob(&format!("effects-{shard}")).expect("blob"));
        if let Some(c) = b.read().await.expect("read effects") {
            all.extend(c.value);
        }
    }
    all
}

async fn cleanup(setup: &Setup) {
    let account = testkit::account();
    let blobs = BlobServiceClient::new(&account).expect("blob client");
    let _ = blobs
        .container(&setup.resource)
        .expect("container")
        .delete(&azstore::Conditions::none())
        .await;
    if let Some(b) = &setup.backend {
        b.cleanup().await;
    }
    if setup.queue.is_some() {
        let q = QueueServiceClient::new(&account).expect("queue client");
        let _ = q.queue(&setup.resource).expect("queue").delete().await;
    }
}

/// Runs the checker in its own process (bounded in time; a search that does not end in time
/// is reported as an anomaly to look at, never as a pass).
async fn decide(plan: &Plan, path: &Path) -> Verdict {
    let out = Command::new(&plan.exe)
        .arg("check")
        .arg(format!("--model={}", plan.model.name()))
        .arg(path)
        .stdin(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .output();
    match tokio::time::timeout(Duration::from_secs(180), out).await {
        Ok(Ok(out)) => {
            let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
                json!({"operations": 0, "anomalies": [format!("checker output unreadable: {e}")]})
            });
            Verdict {
                operations: v["operations"].as_u64().unwrap_or(0) as usize,
                transfers: v["transfers"].as_u64().unwrap_or(0),
                fenced_overlaps: v["fenced_overlaps"].as_u64().unwrap_or(0),
                anomalies: v["anomalies"]
                    .as_array()
                    .map(|a| {
                        a.iter()
                            .map(|s| s.as_str().unwrap_or("?").to_string())
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        }
        Ok(Err(e)) => Verdict {
            anomalies: vec![format!("checker could not run: {e}")],
            ..Verdict::default()
        },
        Err(_) => Verdict {
            anomalies: vec!["checker did not decide within 180 s".into()],
            ..Verdict::default()
        },
    }
}

// The writer's identity and where its output goes: one call site per reason to start one.
#[allow(clippy::too_many_arguments)]
fn spawn(
    plan: &Plan,
    setup: &Setup,
    seed: u64,
    number: u64,
    ops: u64,
    sink: &Sink,
    stderr_path: &Path,
    holder: &Holder,
) -> Writer {
    let args = WriterArgs {
        model: plan.model,
        variant: plan.variant,
        child: number,
        seed: seed.wrapping_mul(1000).wrapping_add(number),
        ops,
        blob_port: setup.blob.port(),
        queue_port: setup.queue.as_ref().map_or(0, HttpFaults::port),
        site: setup
            .backend
            .as_ref()
            .map_or_else(String::new, |b| b.address()),
        resource: setup.resource.clone(),
        shards: plan.shards,
        workers: plan.workers_per_writer,
    };
    let stderr = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(stderr_path)
        .expect("stderr file");
    let mut child = Command::new(&plan.exe)
        .arg("writer")
        .args(args.to_args())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::from(stderr))
        .kill_on_drop(true)
        .spawn()
        .expect("spawn writer");
    let pid = child.id().expect("writer pid") as i32;
    let stdout = child.stdout.take().expect("piped stdout");
    let stdin = child.stdin.take();
    let sink = sink.clone();
    let holder = holder.clone();
    tokio::spawn(async move {
        let mut lines = BufReader::new(stdout).lines();
        // Acquisitions in flight: (process, op) -> invoked.
        let mut invoked = std::collections::HashMap::new();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(e) = serde_json::from_str::<Event>(&line) {
                match (e.f.as_str(), e.kind) {
                    ("acquire", Kind::Invoke) => {
                        invoked.insert((e.p, e.op), e.t);
                    }
                    ("acquire" | "acquired", Kind::Ok) => {
                        let mut h = holder.lock().unwrap();
                        h.now = Some((number, true));
                        let began = invoked.remove(&(e.p, e.op)).unwrap_or(e.t);
                        let what = crate::sanity::held_what(&e.value);
                        h.acquired.push((number, what, began, e.t));
                    }
                    ("held", Kind::Invoke) => {
                        let mut h = holder.lock().unwrap();
                        if h.now == Some((number, true)) {
                            h.now = Some((number, false));
                        }
                    }
                    ("release", Kind::Invoke) => {
                        let mut h = holder.lock().unwrap();
                        if h.now.is_some_and(|(n, _)| n == number) {
                            h.now = None;
                        }
                    }
                    _ => {}
                }
                sink.lock().unwrap().write(&e);
            }
        }
    });
    Writer {
        child,
        stdin,
        pid,
        number,
    }
}

fn unsafe_signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a pid of a child this process spawned; no memory is involved.
    unsafe {
        libc::kill(pid, sig);
    }
}

/// The pids of the writers the nemesis froze and has not resumed yet.
type Stopped = Arc<Mutex<std::collections::HashSet<i32>>>;

/// Sends SIGCONT to its pid when dropped: once a writer is frozen, it is resumed whatever ends
/// the pause (its time is up, a panic unwinds past it, the pause's thread could not start).
struct Resume(i32);

impl Drop for Resume {
    fn drop(&mut self) {
        unsafe_signal(self.0, libc::SIGCONT);
    }
}

/// Freezes writer `n` (`pid`, already in `stopped`) for `ms` ms. The SIGCONT is sent by a
/// thread of its own, not by a task of the runtime: a busy, blocked or shut-down runtime, or a
/// nemesis that ends, is dropped or panics, cannot postpone it past the pause.
fn pause(pid: i32, n: u64, ms: u64, sink: &Sink, stopped: &Stopped) {
    pause_until(pid, n, ms, sink, stopped, None);
}

/// What ends a pause early or late: resume once it holds, but not after `max_ms`.
struct Until {
    holds: Box<dyn Fn() -> bool + Send>,
    max_ms: u64,
}

/// As [`pause`], and then, with `until`, on until `until.holds()` (checked every 10 ms), for
/// at most `until.max_ms` in all.
fn pause_until(pid: i32, n: u64, ms: u64, sink: &Sink, stopped: &Stopped, until: Option<Until>) {
    unsafe_signal(pid, libc::SIGSTOP);
    let resume = Resume(pid);
    note_signal(sink, "sigstop", n);
    let (sink2, stopped2) = (sink.clone(), stopped.clone());
    let thread = std::thread::Builder::new()
        .name(format!("pause-{pid}"))
        .spawn(move || {
            let began = std::time::Instant::now();
            std::thread::sleep(Duration::from_millis(ms));
            if let Some(u) = until {
                let max = Duration::from_millis(u.max_ms);
                while !(u.holds)() && began.elapsed() < max {
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
            drop(resume);
            note_signal(&sink2, "sigcont", n);
            stopped2
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&pid);
        });
    if thread.is_err() {
        // The closure, and `resume` with it, was dropped: the writer is already resumed.
        note_signal(sink, "sigcont", n);
        stopped
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&pid);
    }
}

struct NemesisCtx {
    plan: Plan,
    setup: Arc<Setup>,
    writers: Writers,
    sink: Sink,
    next_number: Arc<std::sync::atomic::AtomicU64>,
    stderr_path: PathBuf,
    finished: Arc<std::sync::atomic::AtomicBool>,
    seed: u64,
    holder: Holder,
}

/// The longest pause of a lock holder in a checker-sanity run (ms).
const SANITY_PAUSE_MAX_MS: u64 = 45_000;

/// The queue's checker-sanity fault: every DELETE reset before it reaches the service (all of
/// a delete's retries fail, so the message comes back after its visibility timeout and is
/// handled again), until the proxy has seen [`SANITY_FAILED_DELETES`] of them.
fn lose_deletes(setup: &Setup) {
    let queue = setup.queue.as_ref().expect("the queue model's proxy");
    if queue.proxy.count("DELETE") < SANITY_FAILED_DELETES {
        queue.proxy.inject(
            Rule::new(Fault::ResetBeforeForward)
                .method("DELETE")
                .always(),
        );
    }
}

/// The methods the queue model's faults aim at (`""`: any request).
const QUEUE_METHODS: &[&str] = &["", "GET", "PUT", "POST", "DELETE"];

/// The nemesis: from the history's seed, every 200–1000 ms one to three actions at once.
/// Proxy faults last until the next round (a rule that met no request by then is dropped);
/// a paused writer is not paused again before it resumes. Lock models get one pause of the
/// current holder past its 15 s lease; shard models, in some histories, one pause of the
/// latest shard acquirer past its lease. Signals to writers are also recorded as `sigstop`,
/// `sigcont` and `sigkill` with the writer's number (the shard checker reads them).
async fn nemesis_loop(ctx: NemesisCtx) {
    let mut rng = Rng::new(ctx.seed ^ 0x005e_ed0f_0e11);
    let mut kills = 0;
    let lock = ctx.plan.model.is_lock_like();
    let owner_pause = lock || ctx.plan.model.is_shards();
    let mut long_pause_done = false;
    let stopped: Stopped = Arc::default();
    while !ctx.finished.load(std::sync::atomic::Ordering::SeqCst) {
        tokio::time::sleep(Duration::from_millis(rng.between(200, 1000))).await;
        for f in ctx.setup.faults(ctx.plan.model) {
            f.clear();
        }
        if ctx.plan.sanity && ctx.plan.model == Model::Queue {
            lose_deletes(&ctx.setup);
        }
        let mut due = rng.chance(15);
        if ctx.plan.sanity && lock && !long_pause_done {
            // Catch a holder right after its acquire: it has its checks still ahead.
            let until = tokio::time::Instant::now() + Duration::from_secs(5);
            while !matches!(ctx.holder.lock().unwrap().now, Some((_, true)))
                && tokio::time::Instant::now() < until
            {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            due = true;
        }
        if owner_pause && !long_pause_done && due {
            let holder = ctx.holder.lock().unwrap().now.map(|(n, _)| n);
            let pid = {
                let ws = ctx.writers.lock().await;
                ws.iter().find(|w| Some(w.number) == holder).map(|w| w.pid)
            };
            if let (Some(pid), Some(n)) = (pid, holder) {
                if stopped.lock().unwrap().insert(pid) {
                    long_pause_done = true;
                    let ms = rng.between(16_000, 19_000);
                    let who = if lock { "lock holder" } else { "shard owner" };
                    let desc = if ctx.plan.sanity && lock {
                        // Until another writer took the lock over, so that the holder's
                        // checks still ahead come after that (bounded: the others may have
                        // run out of operations).
                        let holder = ctx.holder.clone();
                        let until = Until {
                            holds: Box::new(move || holder.lock().unwrap().taken_from(n)),
                            max_ms: SANITY_PAUSE_MAX_MS,
                        };
                        pause_until(pid, n, ms, &ctx.sink, &stopped, Some(until));
                        format!(
                            "SIGSTOP {who} {n} for {ms} ms (past its 15 s lease), then until \
                             another writer's later acquisition completed (at most \
                             {SANITY_PAUSE_MAX_MS} ms in all)"
                        )
                    } else {
                        pause(pid, n, ms, &ctx.sink, &stopped);
                        format!("SIGSTOP {who} {n} for {ms} ms (past its 15 s lease)")
                    };
                    note(&ctx.sink, "nemesis", Kind::Info, json!(desc));
                }
            }
        }
        if ctx.plan.sanity && lock {
            // The holder's pause is the decisive fault; random faults on the waiters could
            // keep them from taking over in time, and the run would prove nothing.
            continue;
        }
        let actions = rng.between(1, 3);
        for _ in 0..actions {
            let what = rng.below(100);
            let desc: Option<String> = if what < 45 {
                // A fault on the next matching request(s), or for a while.
                let faults = ctx.setup.faults(ctx.plan.model);
                if faults.is_empty() {
                    None
                } else {
                    let f = faults[rng.below(faults.len() as u64) as usize];
                    Some(f.inject(&mut rng).await)
                }
            } else if what < 70 {
                // Freeze a writer process — while another is still writing: once the others
                // are done, every pause would land on the last one, and the history would run
                // to its deadline with that writer stopped most of the time.
                let target = pick(&ctx.writers, &mut rng, 2).await;
                target.and_then(|(pid, n)| {
                    if !stopped.lock().unwrap().insert(pid) {
                        return None;
                    }
                    let ms = rng.between(100, 2000);
                    pause(pid, n, ms, &ctx.sink, &stopped);
                    Some(format!("SIGSTOP writer {n} for {ms} ms"))
                })
            } else if what < 85 {
                // Jump a writer's lease clock forward.
                let ms = rng.between(500, 20_000);
                let mut ws = ctx.writers.lock().await;
                let live: Vec<usize> = (0..ws.len()).filter(|i| ws[*i].stdin.is_some()).collect();
                if live.is_empty() {
                    None
                } else {
                    let i = live[rng.below(live.len() as u64) as usize];
                    let w = &mut ws[i];
                    let line = format!("jump {ms}\n");
                    if let Some(stdin) = w.stdin.as_mut() {
                        let _ = stdin.write_all(line.as_bytes()).await;
                        let _ = stdin.flush().await;
                    }
                    Some(format!(
                        "clock of writer {} jumps {ms} ms forward",
                        w.number
                    ))
                }
            } else if what < 90 && kills < 2 {
                // Kill a writer process and start a replacement.
                kills += 1;
                let target = pick(&ctx.writers, &mut rng, 1).await;
                match target {
                    Some((pid, n)) => {
                        unsafe_signal(pid, libc::SIGKILL);
                        note_signal(&ctx.sink, "sigkill", n);
                        let number = ctx
                            .next_number
                            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                        let w = spawn(
                            &ctx.plan,
                            &ctx.setup,
                            ctx.seed,
                            number,
                            (ctx.plan.ops / 2).max(1),
                            &ctx.sink,
                            &ctx.stderr_path,
                            &ctx.holder,
                        );
                        ctx.writers.lock().await.push(w);
                        Some(format!("SIGKILL writer {n}; writer {number} replaces it"))
                    }
                    None => None,
                }
            } else {
                None
            };
            if let Some(d) = desc {
                note(&ctx.sink, "nemesis", Kind::Info, json!(d));
            }
        }
    }
    for f in ctx.setup.faults(ctx.plan.model) {
        f.clear();
    }
}

/// A live writer at random, (pid, number), when at least `live_at_least` are live.
async fn pick(writers: &Writers, rng: &mut Rng, live_at_least: usize) -> Option<(i32, u64)> {
    let mut ws = writers.lock().await;
    let mut live: Vec<(i32, u64)> = Vec::new();
    for w in ws.iter_mut() {
        if matches!(w.child.try_wait(), Ok(None)) {
            live.push((w.pid, w.number));
        }
    }
    if live.is_empty() || live.len() < live_at_least {
        None
    } else {
        Some(live[rng.below(live.len() as u64) as usize])
    }
}
