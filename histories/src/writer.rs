//! The writer process: the crate's own binary re-executed by the campaign (`histories writer
//! ...`), so that SIGSTOP and SIGKILL hit a whole client. It talks to the services through the
//! campaign's fault proxies, records every operation on stdout (JSON lines, see
//! [`crate::history`]) and takes commands on stdin: `jump MS` moves its lease clock forward.

use std::collections::BTreeMap;
use std::io::BufRead;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::blob::BlobJson;
use azstore::blob::{BlobServiceClient, ContainerClient};
use azstore::clock::ManualClock;
use azstore::http::{ClientOptions, RetryPolicy};
use azstore::leader::{LockFactory, ShardEvent, ShardGroup, ShardOptions};
use azstore::lease::{GuardOptions, LeaseDuration};
use azstore::lock::{Lock, LockOptions, LockTarget, RwLock, Semaphore};
use azstore::queue::{Delivery, QueueServiceClient, WorkerOptions, process};
use azstore::update::{Current, Decision, UpdatePolicy, Versioned, update};
use azstore::{ETag, Error, ErrorKind, RequestSent, Result, Service, StorageAccount};
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::backend::{Backend, DEFAULT_SHARD_INTERVAL_MS, Register, Site};
use crate::history::{Kind, Recorder};
use crate::hold;
use crate::model::{Model, Variant};
use crate::rng::Rng;

/// What a writer process is told on its command line.
#[derive(Clone, Debug)]
pub struct WriterArgs {
    /// The model.
    pub model: Model,
    /// Correct client or a deliberately broken one.
    pub variant: Variant,
    /// This writer's number (unique within a history, also across restarts).
    pub child: u64,
    /// Seed of this writer's choices.
    pub seed: u64,
    /// Operations to run.
    pub ops: u64,
    /// Port of the proxy in front of Azurite's Blob service: the fenced resources and the
    /// queue worker's effects.
    pub blob_port: u16,
    /// Port of the proxy in front of Azurite's Queue service (queue model; 0: none).
    pub queue_port: u16,
    /// How the writer reaches its backend's data: what the backend's
    /// [`Prepared::address`](crate::backend::Prepared::address) said ("" without a backend).
    pub site: String,
    /// The resource names (container, table, queue or key prefix).
    pub resource: String,
    /// Shard models: the shards in the group.
    pub shards: usize,
    /// Shard models: the shard workers this writer process runs at once.
    pub workers: u64,
}

impl WriterArgs {
    /// As command-line arguments (after `writer`).
    pub fn to_args(&self) -> Vec<String> {
        vec![
            format!("--model={}", self.model.name()),
            format!("--variant={}", self.variant.name()),
            format!("--child={}", self.child),
            format!("--seed={}", self.seed),
            format!("--ops={}", self.ops),
            format!("--blob-port={}", self.blob_port),
            format!("--queue-port={}", self.queue_port),
            format!("--site={}", self.site),
            format!("--resource={}", self.resource),
            format!("--shards={}", self.shards),
            format!("--workers={}", self.workers),
        ]
    }

    /// Parses [`to_args`](Self::to_args)' output.
    pub fn parse(args: &[String]) -> std::result::Result<WriterArgs, String> {
        let mut m = BTreeMap::new();
        for a in args {
            let (k, v) = a
                .strip_prefix("--")
                .and_then(|a| a.split_once('='))
                .ok_or_else(|| format!("expected --key=value, got {a}"))?;
            m.insert(k.to_string(), v.to_string());
        }
        let get = |k: &str| m.get(k).cloned().ok_or_else(|| format!("missing --{k}"));
        let num = |k: &str| -> std::result::Result<u64, String> {
            get(k)?.parse().map_err(|e| format!("--{k}: {e}"))
        };
        Ok(WriterArgs {
            model: Model::parse(&get("model")?)?,
            variant: Variant::parse(&get("variant")?)?,
            child: num("child")?,
            seed: num("seed")?,
            ops: num("ops")?,
            blob_port: num("blob-port")? as u16,
            queue_port: num("queue-port")? as u16,
            site: get("site")?,
            resource: get("resource")?,
            shards: num("shards")? as usize,
            workers: num("workers")?.max(1),
        })
    }
}

/// The register's value: a counter, the operation that wrote it, and the ids of every
/// increment applied so far, in order (as Jepsen's list-append workloads keep them): the
/// final value tells the checker which increments of unknown outcome took effect.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Reg {
    /// How many increments it holds.
    pub n: u64,
    /// The unique id of the increment that wrote it.
    pub by: Option<u64>,
    /// Ids of the increments applied, oldest first.
    #[serde(default)]
    pub applied: Vec<u64>,
}

/// The fenced resource behind the lock models: every accepted write with its token.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct Fenced {
    /// The largest token accepted.
    pub max: u64,
    /// Accepted writes in order: `[token, process, op]`.
    pub log: Vec<[u64; 3]>,
}

/// Client options of the writers: short timeouts, so stalls outlast them.
pub fn client_options() -> ClientOptions {
    ClientOptions::default()
        .timeout(Duration::from_millis(1500))
        .total_timeout(Duration::from_secs(4))
        .retry(
            RetryPolicy::default()
                .max_retries(2)
                .max_delay(Duration::from_millis(300)),
        )
}

/// The update policy of the writers.
pub fn update_policy() -> UpdatePolicy {
    UpdatePolicy::default().max_elapsed(Duration::from_secs(10))
}

/// The account with every endpoint of `account` that has a proxy port (not 0) pointed at it.
pub fn via_proxies(account: &StorageAccount, ports: &[(Service, u16)]) -> StorageAccount {
    let mut out = account.clone();
    for (svc, port) in ports.iter().filter(|(_, port)| *port != 0) {
        if let Ok(ep) = account.endpoint(*svc) {
            out = out
                .with_endpoint(
                    *svc,
                    &format!("http://127.0.0.1:{port}{}", ep.path_prefix()),
                )
                .expect("proxy endpoint");
        }
    }
    out
}

/// The logical process and operation numbering of one writer.
pub(crate) struct Ids {
    child: u64,
    generation: u64,
    op: u64,
}

impl Ids {
    pub(crate) fn p(&self) -> u64 {
        self.child * 1000 + self.generation
    }
    pub(crate) fn next_op(&mut self) -> u64 {
        self.op += 1;
        self.op
    }
    /// After an `info`, the operation may still be pending: continue as a new process.
    pub(crate) fn after_info(&mut self) {
        self.generation += 1;
    }
    /// A globally unique id for an operation.
    fn uid(&self, op: u64) -> u64 {
        (self.p() << 20) | op
    }
}

/// The writer's shared recorder.
pub(crate) type Rec = Arc<Mutex<Recorder<std::io::Stdout>>>;

pub(crate) fn record(
    rec: &Rec,
    p: u64,
    op: u64,
    kind: Kind,
    f: &str,
    value: Value,
    err: Option<String>,
) {
    rec.lock()
        .unwrap_or_else(|e| e.into_inner())
        .record(p, op, kind, f, value, err);
}

/// How the history classifies a failed call: `info` when it may have applied.
pub(crate) fn failure_kind(e: &Error) -> Kind {
    match e.request_sent() {
        RequestSent::Maybe => Kind::Info,
        _ => Kind::Fail,
    }
}

/// Runs a writer process to its end.
pub fn main(args: WriterArgs) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("tokio runtime");
    // The lease clock: follows the system clock, plus the jumps the campaign asks for.
    let manual = ManualClock::new();
    {
        let manual = manual.clone();
        std::thread::spawn(move || {
            let clock = azstore::clock::Clock::system();
            let mut last = clock.now();
            manual.advance(last);
            loop {
                std::thread::sleep(Duration::from_millis(2));
                let now = clock.now();
                manual.advance(now.saturating_sub(last));
                last = now;
            }
        });
    }
    let stop = Arc::new(tokio::sync::Notify::new());
    {
        let manual = manual.clone();
        let stop = stop.clone();
        std::thread::spawn(move || {
            for line in std::io::stdin().lock().lines() {
                let Ok(line) = line else { break };
                let mut w = line.split_whitespace();
                match (w.next(), w.next().and_then(|n| n.parse::<u64>().ok())) {
                    (Some("jump"), Some(ms)) => manual.advance(Duration::from_millis(ms)),
                    (Some("stop"), _) => stop.notify_one(),
                    _ => {}
                }
            }
            stop.notify_one();
        });
    }
    let rec: Rec = Arc::new(Mutex::new(Recorder::new(std::io::stdout())));
    rt.block_on(async move {
        let account = testkit::account();
        let proxied = via_proxies(
            &account,
            &[
                (Service::Blob, args.blob_port),
                (Service::Queue, args.queue_port),
            ],
        );
        let mut rng = Rng::new(args.seed);
        let mut ids = Ids {
            child: args.child,
            generation: 0,
            op: 0,
        };
        let guard = GuardOptions::default().clock(manual.clock());
        let container = container_client(&proxied, &args.resource);
        let site = Site {
            resource: &args.resource,
            address: &args.site,
        };
        let args = &args;
        match args.model {
            Model::Register(backend) => {
                let run = RegisterRun(RegisterJob::Writer {
                    args,
                    rng: &mut rng,
                    ids: &mut ids,
                    rec: &rec,
                });
                backend.register(site, run).await
            }
            Model::Lock(backend) => {
                let run = LockRun {
                    fenced: BlobJson::new(container.blob("fenced").expect("blob name")),
                    args,
                    rng: &mut rng,
                    ids: &mut ids,
                    rec: &rec,
                };
                backend.lock(site, lock_options(args, guard), run).await
            }
            Model::Shards(backend) | Model::Semaphore(backend) | Model::RwLock(backend) => {
                let run = FactoryRun {
                    model: args.model,
                    interval: shard_interval_ms(backend, args.shards),
                    container: &container,
                    args,
                    rng: &mut rng,
                    ids: &mut ids,
                    rec: &rec,
                    stop,
                };
                backend.locks(site, lock_options(args, guard), run).await
            }
            Model::Queue => {
                let queue = QueueServiceClient::with_options(&proxied, client_options())
                    .expect("queue client")
                    .queue(&args.resource)
                    .expect("queue name");
                queue_worker(queue, container, args, rec, stop).await
            }
        }
    });
}

/// The history's container (the fenced resources, the queue worker's effects, and the
/// Blob backend's data) on `account`, with the writers' [`client_options`].
pub fn container_client(account: &StorageAccount, name: &str) -> ContainerClient {
    BlobServiceClient::with_options(account, client_options())
        .expect("blob client")
        .container(name)
        .expect("container name")
}

fn lock_options(args: &WriterArgs, guard: GuardOptions) -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).expect("15 s"))
        .label(format!("child-{}", args.child))
        .guard(guard)
        .poll_interval(Duration::from_millis(20), Duration::from_millis(200))
}

/// The register model's run, handed to [`Backend::register`]:
/// the writer's increments and reads, or the campaign's final read.
pub struct RegisterRun<'a>(RegisterJob<'a>);

enum RegisterJob<'a> {
    Writer {
        args: &'a WriterArgs,
        rng: &'a mut Rng,
        ids: &'a mut Ids,
        rec: &'a Rec,
    },
    Final(&'a mut Option<Reg>),
}

impl<'a> RegisterRun<'a> {
    /// The campaign's read of the final value into `out` (`None`: never written).
    pub fn final_read(out: &'a mut Option<Reg>) -> RegisterRun<'a> {
        RegisterRun(RegisterJob::Final(out))
    }

    /// Runs the model on `res`: the correct client, or the broken one (no If-Match).
    pub fn with<R: Register + 'a>(self, res: R) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            match self.0 {
                RegisterJob::Writer {
                    args,
                    rng,
                    ids,
                    rec,
                } => match args.variant {
                    Variant::Correct => register(&res, args, rng, ids, rec).await,
                    Variant::Broken => register(&Unconditional(res), args, rng, ids, rec).await,
                },
                RegisterJob::Final(out) => {
                    *out = res
                        .read()
                        .await
                        .expect("final read")
                        .map(|c| res.get(&c.value));
                }
            }
        })
    }
}

/// The lock model's run, handed to [`Backend::lock`].
pub struct LockRun<'a> {
    fenced: BlobJson<Fenced>,
    args: &'a WriterArgs,
    rng: &'a mut Rng,
    ids: &'a mut Ids,
    rec: &'a Rec,
}

impl<'a> LockRun<'a> {
    /// Runs the model on `lock` (every lock is the one engine, `Lock<T: LockTarget>`); the
    /// fenced resource is a blob whatever the lock.
    pub fn with<T: LockTarget>(self, lock: Lock<T>) -> LocalBoxFuture<'a, ()> {
        Box::pin(async move {
            let acquire = hold::lock(&lock, &self.fenced);
            hold::hold_loop(acquire, self.args, self.rng, self.ids, self.rec).await
        })
    }
}

/// The run of a model over a lock factory (shards, semaphore, reader-writer lock), handed to
/// [`Backend::locks`].
pub struct FactoryRun<'a> {
    model: Model,
    interval: u64,
    container: &'a ContainerClient,
    args: &'a WriterArgs,
    rng: &'a mut Rng,
    ids: &'a mut Ids,
    rec: &'a Rec,
    stop: Arc<tokio::sync::Notify>,
}

impl<'a> FactoryRun<'a> {
    /// Runs the model over `factory` (every `LockFactory` makes one kind of `Lock<T>`): a
    /// shard group, a semaphore or a reader-writer lock made by it. The fenced resources are
    /// blobs whatever the locks.
    pub fn with<T, F>(self, factory: F) -> LocalBoxFuture<'a, ()>
    where
        T: LockTarget,
        F: LockFactory<Lock = Lock<T>>,
    {
        let label = format!("child-{}", self.args.child);
        match self.model {
            Model::Semaphore(_) => Box::pin(async move {
                let sem = Semaphore::new(&factory, "semaphore", hold::PERMITS, &label)
                    .expect("semaphore");
                let acquire = hold::permit(&sem, self.container);
                hold::hold_loop(acquire, self.args, self.rng, self.ids, self.rec).await
            }),
            Model::RwLock(_) => Box::pin(async move {
                let rw = RwLock::new(&factory, "rwlock", hold::MAX_READERS, &label)
                    .expect("reader-writer lock");
                let fenced = BlobJson::new(self.container.blob("fenced").expect("blob name"));
                let acquire = hold::read_or_write(&rw, &fenced);
                hold::hold_loop(acquire, self.args, self.rng, self.ids, self.rec).await
            }),
            _ => Box::pin(shard_loop(
                self.interval,
                factory,
                self.container,
                self.args,
                self.rng,
                self.rec,
                self.stop,
            )),
        }
    }
}

/// The broken client of the checker-sanity tests: its replace drops the If-Match (a plain
/// overwrite), so concurrent read-modify-writes lose updates.
struct Unconditional<R>(R);

impl<R: Register> Versioned for Unconditional<R> {
    type Value = R::Value;
    async fn read(&self) -> Result<Option<Current<R::Value>>> {
        self.0.read().await
    }
    async fn replace(&self, value: &R::Value, _etag: &ETag, _write_id: &str) -> Result<ETag> {
        self.0.overwrite_value(value).await
    }
    async fn create(&self, value: &R::Value, write_id: &str) -> Result<ETag> {
        self.0.create(value, write_id).await
    }
    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.0.delete(etag).await
    }
    fn identity(&self) -> String {
        Versioned::identity(&self.0)
    }
    fn stores_write_ids(&self) -> bool {
        self.0.stores_write_ids()
    }
}

impl<R: Register> Register for Unconditional<R> {
    fn make(&self, reg: Reg) -> R::Value {
        self.0.make(reg)
    }
    fn get(&self, v: &R::Value) -> Reg {
        self.0.get(v)
    }
    async fn overwrite_value(&self, value: &R::Value) -> Result<ETag> {
        self.0.overwrite_value(value).await
    }
}

/// The CAS-register model: increments through `update()` and plain reads.
async fn register<R: Register>(
    res: &R,
    args: &WriterArgs,
    rng: &mut Rng,
    ids: &mut Ids,
    rec: &Rec,
) {
    let policy = update_policy();
    for _ in 0..args.ops {
        think(rng).await;
        let op = ids.next_op();
        let p = ids.p();
        if rng.below(100) < 80 {
            let uid = ids.uid(op);
            record(rec, p, op, Kind::Invoke, "incr", json!(uid), None);
            let result = update(res, &policy, |cur| {
                let mut reg = cur.map_or(
                    Reg {
                        n: 0,
                        by: None,
                        applied: Vec::new(),
                    },
                    |v| res.get(v),
                );
                reg.n += 1;
                reg.by = Some(uid);
                reg.applied.push(uid);
                Decision::Write(res.make(reg))
            })
            .await;
            match result {
                Ok(done) => {
                    let reg = done.value.as_ref().map(|v| res.get(v));
                    match reg {
                        Some(r) if r.by == Some(uid) => {
                            record(rec, p, op, Kind::Ok, "incr", json!(r.n), None)
                        }
                        other => {
                            // update() said Ok but the value is not ours: record what it
                            // returned, the checker decides.
                            let v = other.map_or(json!(null), |r| json!(r.n));
                            record(
                                rec,
                                p,
                                op,
                                Kind::Ok,
                                "incr",
                                v,
                                Some("foreign value".into()),
                            )
                        }
                    }
                }
                Err(e) => {
                    let kind = failure_kind(&e);
                    record(rec, p, op, kind, "incr", Value::Null, Some(e.to_string()));
                    if kind == Kind::Info {
                        ids.after_info();
                    }
                }
            }
        } else {
            record(rec, p, op, Kind::Invoke, "read", Value::Null, None);
            match res.read().await {
                Ok(cur) => {
                    let r = cur.map(|c| res.get(&c.value)).unwrap_or(Reg {
                        n: 0,
                        by: None,
                        applied: Vec::new(),
                    });
                    record(rec, p, op, Kind::Ok, "read", json!([r.n, r.by]), None)
                }
                // A read has no effect: its failure constrains nothing.
                Err(e) => record(
                    rec,
                    p,
                    op,
                    Kind::Fail,
                    "read",
                    Value::Null,
                    Some(e.to_string()),
                ),
            }
        }
    }
}

/// A random pause between operations (0–40 ms), so that the writers interleave and the
/// nemesis meets operations in flight.
pub(crate) async fn think(rng: &mut Rng) {
    tokio::time::sleep(Duration::from_millis(rng.below(41))).await;
}

/// Number of effect blobs the queue model spreads its effects over.
pub const EFFECT_SHARDS: u64 = 8;

/// The queue model: `queue::process` with a handler whose effect is recorded in a blob
/// (message id appended to a list). The correct handler is idempotent (skips an id already
/// there); the broken one appends again on a redelivery.
async fn queue_worker(
    queue: azstore::queue::QueueClient,
    container: ContainerClient,
    args: &WriterArgs,
    rec: Rec,
    stop: Arc<tokio::sync::Notify>,
) {
    let ops = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let child = args.child;
    let broken = args.variant == Variant::Broken;
    let handler = {
        let ops = ops.clone();
        move |d: Delivery| {
            let rec = rec.clone();
            let container = container.clone();
            let op = ops.fetch_add(1, std::sync::atomic::Ordering::Relaxed) + 1;
            async move {
                let id: u64 = d
                    .content_str()?
                    .parse()
                    .map_err(|_| Error::invalid_input("message is not a number"))?;
                // Each delivery is its own logical process (handlers run concurrently).
                let p = child * 1_000_000 + op;
                let shard = container
                    .blob(&format!("effects-{}", id % EFFECT_SHARDS))
                    .expect("blob name");
                let effects = BlobJson::<Vec<u64>>::new(shard);
                record(&rec, p, op, Kind::Invoke, "apply", json!(id), None);
                let result = update(&effects, &update_policy(), |cur| {
                    let mut v = cur.cloned().unwrap_or_default();
                    if !broken && v.contains(&id) {
                        return Decision::NoChange;
                    }
                    v.push(id);
                    Decision::Write(v)
                })
                .await;
                match result {
                    Ok(_) => {
                        record(&rec, p, op, Kind::Ok, "apply", json!(id), None);
                        Ok(())
                    }
                    Err(e) => {
                        let kind = failure_kind(&e);
                        record(&rec, p, op, kind, "apply", json!(id), Some(e.to_string()));
                        Err(e.into())
                    }
                }
            }
        }
    };
    let options = WorkerOptions::default()
        .concurrency(4)
        .visibility(Duration::from_secs(5))
        .max_dequeue_count(1000)
        .idle_poll(Duration::from_millis(100))
        .retry_delay(Duration::from_millis(200));
    let worker = process(queue, handler, options).expect("worker starts");
    stop.notified().await;
    let _ = tokio::time::timeout(Duration::from_secs(30), worker.shutdown()).await;
}

/// Shards of the shard models' group by default (`0` … `SHARDS - 1`), each with a fenced
/// resource, the blob `fenced-<shard>`; `--shards` sets another count.
pub const SHARDS: usize = 8;

/// The shard group's balancing interval in the shard models (ms): the backend's
/// ([`Backend::shard_interval_ms`]), four times as long for a group of more than 64 shards
/// (each worker then moves tens of shards per change).
pub fn shard_interval_ms(backend: &dyn Backend, shards: usize) -> u64 {
    let base = backend.shard_interval_ms();
    if shards > 64 { base * 4 } else { base }
}

/// The shard locks' lease in the shard models (the shortest the library allows).
pub const SHARD_LEASE_SECS: u64 = 15;

/// The shard model: the writer runs `--workers` shard workers at once (one by default), each
/// joining the group in sessions of 0.3–2 s (each a worker of its own identity, logical
/// process `child * 1000 + session`, sessions numbered across the writer's workers), leaving
/// at the end of each and staying away 0.2–1.2 s (both stretched as the interval is, see
/// [`shard_interval_ms`]), so that shards
/// change hands all the time (freed by a leave, and released to a joiner). While in a session
/// a worker records every `Acquired` (`acquired`, with shard and epoch) and `Lost` (`lost`)
/// the moment it receives them, and writes, every 40–120 ms, one shard it owns to that
/// shard's fenced resource with the shard's epoch (`write`): `update()` refuses (aborts) when
/// the resource holds a larger epoch, and otherwise appends `[epoch, process, op]`. The
/// broken variant ignores `Lost`: it keeps writing the shard as its owner (also for a moment
/// after it began to leave). The writer's `--ops` writes are split among its workers.
async fn shard_loop<F: LockFactory>(
    interval: u64,
    factory: F,
    container: &ContainerClient,
    args: &WriterArgs,
    rng: &mut Rng,
    rec: &Rec,
    stop: Arc<tokio::sync::Notify>,
) {
    use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
    // Room for every writer's workers (a history has at most 8 writers, restarts included).
    let slots = (args.workers as usize * 8 + 4).max(12);
    let options = ShardOptions::default()
        .interval(Duration::from_millis(interval))
        .member_slots(slots);
    let group =
        ShardGroup::with_count(factory, &args.resource, args.shards, options).expect("group");
    let stopping = Arc::new(AtomicBool::new(false));
    {
        let stopping = stopping.clone();
        tokio::spawn(async move {
            stop.notified().await;
            stopping.store(true, Ordering::SeqCst);
        });
    }
    let ops = Arc::new(AtomicU64::new(0));
    let next_op = {
        let ops = ops.clone();
        move || ops.fetch_add(1, Ordering::SeqCst) + 1
    };
    let sessions = AtomicU64::new(0);
    let each = args.ops.div_ceil(args.workers);
    let shared = Sessions {
        group: &group,
        stretch: interval / DEFAULT_SHARD_INTERVAL_MS,
        container,
        args,
        rec,
        stopping: &stopping,
        sessions: &sessions,
        policy: update_policy(),
    };
    let workers = (0..args.workers).map(|_| {
        let mut rng = Rng::new(rng.next_u64());
        let next_op = next_op.clone();
        let shared = &shared;
        async move { shared.run(each, &mut rng, &next_op).await }
    });
    futures_util::future::join_all(workers.collect::<Vec<_>>()).await;
}

/// What the shard workers of one writer process share.
struct Sessions<'a, F: LockFactory> {
    group: &'a ShardGroup<F>,
    stretch: u64,
    container: &'a ContainerClient,
    args: &'a WriterArgs,
    rec: &'a Rec,
    stopping: &'a std::sync::atomic::AtomicBool,
    sessions: &'a std::sync::atomic::AtomicU64,
    policy: UpdatePolicy,
}

impl<F: LockFactory> Sessions<'_, F> {
    /// One worker's sessions, until it made `ops` writes or the history stops.
    async fn run<N: Fn() -> u64 + Clone + Send + 'static>(
        &self,
        ops: u64,
        rng: &mut Rng,
        next_op: &N,
    ) {
        use std::sync::atomic::Ordering;
        let (args, rec, stretch) = (self.args, self.rec, self.stretch);
        let broken = args.variant == Variant::Broken;
        let mut writes = 0;
        while writes < ops && !self.stopping.load(Ordering::SeqCst) {
            let session = self.sessions.fetch_add(1, Ordering::SeqCst) + 1;
            if session >= 1000 {
                break; // logical processes are child * 1000 + session
            }
            let p = args.child * 1000 + session;
            let identity = format!("c{}s{session}", args.child);
            let op = next_op();
            record(rec, p, op, Kind::Invoke, "join", json!(identity), None);
            let mut worker = match self.group.join(&identity) {
                Ok(w) => w,
                Err(e) => {
                    record(
                        rec,
                        p,
                        op,
                        Kind::Fail,
                        "join",
                        Value::Null,
                        Some(e.to_string()),
                    );
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            record(rec, p, op, Kind::Ok, "join", json!(identity), None);
            // Shard -> epoch of what this worker believes it owns.
            let owned: Arc<Mutex<BTreeMap<String, u64>>> = Arc::default();
            let (leave_tx, mut leave_rx) = tokio::sync::oneshot::channel::<()>();
            let events = {
                let owned = owned.clone();
                let rec = rec.clone();
                let next_op = next_op.clone();
                tokio::spawn(async move {
                    let mut leaving = false;
                    loop {
                        tokio::select! {
                            biased;
                            e = worker.recv() => match e {
                                Some(ShardEvent::Acquired { shard, epoch }) => {
                                    let mut o = owned.lock().unwrap_or_else(|e| e.into_inner());
                                    o.insert(shard.clone(), epoch);
                                    let v = json!({"shard": shard, "epoch": epoch});
                                    record(&rec, p, next_op(), Kind::Ok, "acquired", v, None);
                                }
                                Some(ShardEvent::Lost { shard }) => {
                                    let mut o = owned.lock().unwrap_or_else(|e| e.into_inner());
                                    // The broken worker hears the loss and keeps the shard.
                                    let epoch = if broken {
                                        o.get(&shard).copied()
                                    } else {
                                        o.remove(&shard)
                                    };
                                    let v = json!({"shard": shard, "epoch": epoch});
                                    record(&rec, p, next_op(), Kind::Ok, "lost", v, None);
                                }
                                Some(_) => {}
                                None => break,
                            },
                            _ = &mut leave_rx, if !leaving => {
                                leaving = true;
                                worker.stop();
                            }
                        }
                    }
                })
            };
            // Sessions (and the time away) last the same number of balancing intervals on
            // every backend: 0.3–2 s at a 250 ms interval.
            let session_end = tokio::time::Instant::now()
                + Duration::from_millis(rng.between(300, 2000) * stretch);
            let w = ShardWriter {
                owned: &owned,
                container: self.container,
                policy: &self.policy,
                rec,
                p,
                next_op,
            };
            while writes < ops
                && tokio::time::Instant::now() < session_end
                && !self.stopping.load(Ordering::SeqCst)
            {
                tokio::time::sleep(Duration::from_millis(rng.between(40, 120))).await;
                if w.write_one(rng).await {
                    writes += 1;
                }
            }
            // Leave: the `Lost` of every shard arrive (and are recorded) before the releases.
            let op = next_op();
            record(rec, p, op, Kind::Invoke, "leave", json!(identity), None);
            let _ = leave_tx.send(());
            if broken {
                // Ignoring those `Lost` too: it goes on writing its shards for a moment,
                // stretched as the interval is (on Cosmos DB a released shard's next owner
                // takes it about a second later: 300–600 ms ended before it in 2 of 3
                // histories under the whole suite's load).
                let ms = rng.between(300, 600) * stretch;
                let until = tokio::time::Instant::now() + Duration::from_millis(ms);
                while tokio::time::Instant::now() < until && !self.stopping.load(Ordering::SeqCst) {
                    tokio::time::sleep(Duration::from_millis(rng.between(40, 120))).await;
                    w.write_one(rng).await;
                }
            }
            let _ = events.await;
            record(rec, p, op, Kind::Ok, "leave", json!(identity), None);
            // Away for a while: the others absorb the freed shards, so that the next join
            // takes shards from live owners (a release with `Lost`, then an acquisition).
            if writes < ops {
                tokio::time::sleep(Duration::from_millis(rng.between(200, 1200) * stretch)).await;
            }
        }
    }
}

/// What a shard writer needs for one fenced write.
struct ShardWriter<'a, N: Fn() -> u64> {
    owned: &'a Mutex<BTreeMap<String, u64>>,
    container: &'a ContainerClient,
    policy: &'a UpdatePolicy,
    rec: &'a Rec,
    p: u64,
    next_op: &'a N,
}

impl<N: Fn() -> u64> ShardWriter<'_, N> {
    /// Writes one shard the worker owns (as far as it knows) to its fenced resource with the
    /// shard's epoch; `false` when it owns none.
    async fn write_one(&self, rng: &mut Rng) -> bool {
        let (rec, p) = (self.rec, self.p);
        // Pick an owned shard and record the write's invocation under the same lock as the
        // events: a write is invoked either before a `lost` or after it.
        let picked = {
            let o = self.owned.lock().unwrap_or_else(|e| e.into_inner());
            if o.is_empty() {
                None
            } else {
                let i = rng.below(o.len() as u64) as usize;
                let (shard, epoch) = o.iter().nth(i).map(|(s, e)| (s.clone(), *e)).unwrap();
                let op = (self.next_op)();
                let v = json!({"shard": shard, "epoch": epoch});
                record(rec, p, op, Kind::Invoke, "write", v, None);
                Some((shard, epoch, op))
            }
        };
        let Some((shard, epoch, op)) = picked else {
            return false;
        };
        let fenced = BlobJson::<Fenced>::new(
            self.container
                .blob(&format!("fenced-{shard}"))
                .expect("blob name"),
        );
        let result = update(&fenced, self.policy, |cur| {
            let mut f = cur.cloned().unwrap_or_default();
            if epoch < f.max {
                return Decision::abort(format!("fenced: epoch {epoch} < {}", f.max));
            }
            f.max = epoch;
            f.log.push([epoch, p, op]);
            Decision::Write(f)
        })
        .await;
        let v = json!({"shard": shard, "epoch": epoch});
        match result {
            Ok(_) => record(rec, p, op, Kind::Ok, "write", v, None),
            Err(e) => {
                let kind = if e.kind() == ErrorKind::Aborted {
                    Kind::Fail
                } else {
                    failure_kind(&e)
                };
                record(rec, p, op, kind, "write", v, Some(e.to_string()));
            }
        }
        true
    }
}
