//! `update()` against a plain retry loop on ONE item (a counter), at every load, on every
//! backend `update()` serves, side by side in the same run:
//!
//! * `update()` — `update(&item, &UpdatePolicy::default(), |n| n + 1)`;
//! * `loop`     — read, If-Match write, on a conflict sleep with *full jitter* (uniform in
//!   `[0, ceiling]`, the ceiling 2 ms doubling up to 100 ms) and start over. It goes through
//!   the same `Versioned` reads and writes as `update()` (same requests, same bytes), so the
//!   two differ only in what they do between attempts.
//!
//! Backends: `blob` (a JSON counter blob, `BlobJson<u64>`), `table` (an entity through
//! `TableClient::versioned`), `redis` (`RedisJson<u64>`, feature `redis`) and `cosmos` (a
//! `CosmosItem`, feature `cosmos`). Modes: `tasks` — every writer is a task of this process
//! with a client of its own; `procs` — every writer is a child process of its own (this
//! binary, started again), which is how contention happens between the instances of a service
//! and where nothing in-process can help.
//!
//! Rows, per backend and mode:
//! * closed loops (`UPDATE_BENCH_WRITERS`, default `1,16,64`): every writer increments flat out.
//!   The 1-writer row is the noise floor: both sides do the same work there, so their
//!   difference is what the machine's noise alone makes.
//! * offered load (`UPDATE_BENCH_OFFERED`, default `10,25,50,90` percent): 16 writers
//!   (`UPDATE_BENCH_OFFERED_WRITERS`) each start one increment every `16/R` s (from a random
//!   phase; a late one starts at once), `R` being that share of the loop's median commits/s
//!   measured in the 16-writer closed row of the same run. Latency counts from when the
//!   increment was due to its commit.
//!
//! Each repetition runs one side for `UPDATE_BENCH_SECS` (default 2), the two sides
//! alternating and which goes first alternating too, for `UPDATE_BENCH_REPS` repetitions
//! (default 7). Writers finish the update they are in when the time is up, so the final
//! counter must equal the commits exactly (checked: a mismatch fails the run); the rate counts
//! the commits that ended within the time. Printed per row: commits/s, p50 and p99 (medians of
//! the repetitions, with [min–max]), wasted writes per commit (412/409/404 refusals), and the
//! server's CPU per commit (the emulator process found by its listening port; /proc):
//!
//! `contention: BACKEND WRITERS procs|tasks offered=R/s|closed update() C [lo–hi] commits/s W wasted p50 X [lo–hi] ms p99 Y [lo–hi] ms | loop … | ratio R | server-cpu/commit update() A us loop B us`
//!
//! Run: `scripts/cosmos run -- scripts/azurite run --only azurite,redis -- cargo bench -p azstore --all-features --bench update_contention`.
//! Narrow it with `UPDATE_BENCH_BACKENDS=blob,table,redis,cosmos`, `UPDATE_BENCH_MODES=tasks,procs`,
//! `UPDATE_BENCH_WRITERS`, `UPDATE_BENCH_OFFERED` (empty: no offered rows), `UPDATE_BENCH_REPS`,
//! `UPDATE_BENCH_SECS`; `UPDATE_BENCH_CAPACITY=N` fixes the capacity instead of measuring it;
//! `UPDATE_BENCH_POLICY=static` runs `update()` with `UpdatePolicy::default().adaptive(false)`;
//! `UPDATE_BENCH_RETRY_COLLISIONS=X` with `UpdatePolicy::default().retry_collisions(X)`;
//! `UPDATE_BENCH_SPLIT=1` adds one `split:` line per row: the share of the updates that started
//! more than 1 ms after they were due (behind the writer's previous one, or woken late) and the
//! p50 and p99 of the calls themselves, from when they started;
//! `UPDATE_BENCH_SHOW_PACE=1` samples the item's stored pace every 50 ms while `update()` runs
//! and prints one `pace:` line per repetition (how many samples carried one, p50, p90).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azstore::blob::BlobJson;
use azstore::blob::BlobServiceClient;
use azstore::table::{TableServiceClient, VersionedEntity};
use azstore::update::{Decision, UpdatePolicy, Versioned, update};
use azstore::{Conditions, StorageAccount};
use serde::{Deserialize, Serialize};
use testkit::contract::versioned::pace_in_token;
use tokio::time::Instant;

const CHILD_ENV: &str = "UPDATE_BENCH_CHILD";
const TABLE_PK: &str = "c";
const TABLE_RK: &str = "n";

/// A counter entity of the `table` backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Counter {
    partition_key: String,
    row_key: String,
    count: u64,
}

/// The counter document of the `cosmos` backend.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Doc {
    n: u64,
}

/// A counter value: the next one and its count.
trait Count: Sized {
    fn next(current: Option<&Self>) -> Self;
    fn count(&self) -> u64;
}

impl Count for u64 {
    fn next(current: Option<&u64>) -> u64 {
        current.copied().unwrap_or(0) + 1
    }
    fn count(&self) -> u64 {
        *self
    }
}

impl Count for Counter {
    fn next(current: Option<&Counter>) -> Counter {
        Counter {
            partition_key: TABLE_PK.into(),
            row_key: TABLE_RK.into(),
            count: current.map_or(0, |c| c.count) + 1,
        }
    }
    fn count(&self) -> u64 {
        self.count
    }
}

impl Count for Doc {
    fn next(current: Option<&Doc>) -> Doc {
        Doc {
            n: current.map_or(0, |c| c.n) + 1,
        }
    }
    fn count(&self) -> u64 {
        self.n
    }
}

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    Update,
    Loop,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Update => "update()",
            Side::Loop => "loop",
        }
    }
    fn parse(s: &str) -> Side {
        if s == "loop" {
            Side::Loop
        } else {
            Side::Update
        }
    }
}

/// What one writer did.
#[derive(Default)]
struct Stats {
    commits: u64,
    wasted: u64,
    /// Microseconds per increment, from when it was due.
    latencies: Vec<u64>,
    /// Microseconds per increment from when it started (after the writer's previous one,
    /// when that ended after this one was due, and after its timer woke it): the call itself.
    calls: Vec<u64>,
    /// Commits that ended within the measured window (the rate counts these; the updates
    /// in flight at its end are finished, and checked, but not counted).
    in_window: u64,
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        self.commits += o.commits;
        self.wasted += o.wasted;
        self.latencies.extend(o.latencies);
        self.calls.extend(o.calls);
        self.in_window += o.in_window;
    }

    fn line(&self) -> String {
        let list = |v: &[u64]| v.iter().map(u64::to_string).collect::<Vec<_>>().join(",");
        format!(
            "RESULT {} {} {} {} {}",
            self.commits,
            self.wasted,
            self.in_window,
            list(&self.latencies),
            list(&self.calls)
        )
    }

    fn parse(line: &str) -> Option<Stats> {
        let mut it = line.strip_prefix("RESULT ")?.split(' ');
        let commits = it.next()?.parse().ok()?;
        let wasted = it.next()?.parse().ok()?;
        let in_window = it.next()?.parse().ok()?;
        let mut list = || {
            it.next()
                .unwrap_or("")
                .split(',')
                .filter(|s| !s.is_empty())
                .map(|s| s.parse().ok())
                .collect::<Option<Vec<u64>>>()
        };
        let latencies = list()?;
        let calls = list()?;
        Some(Stats {
            commits,
            wasted,
            latencies,
            calls,
            in_window,
        })
    }
}

/// A refusal the loop retries: 412 (changed since the read), 409 (created meanwhile), 404
/// (deleted meanwhile), whatever the backend (Redis answers no HTTP status).
fn is_conflict(e: &azstore::Error) -> bool {
    e.is_precondition_failed() || e.is_conflict() || e.is_not_found()
}

/// The baseline: the plain loop with full-jitter exponential backoff.
async fn loop_increment<R>(item: &R, wasted: &mut u64) -> azstore::Result<()>
where
    R: Versioned,
    R::Value: Count,
{
    let mut ceiling_ms = 2.0f64;
    loop {
        let id = uuid::Uuid::new_v4().simple().to_string();
        let written = match item.read().await? {
            Some(cur) => {
                item.replace(&R::Value::next(Some(&cur.value)), &cur.etag, &id)
                    .await
            }
            None => item.create(&R::Value::next(None), &id).await,
        };
        match written {
            Ok(_) => return Ok(()),
            Err(e) if is_conflict(&e) => {
                *wasted += 1;
                let ms = ceiling_ms * rand::random::<f64>();
                ceiling_ms = (ceiling_ms * 2.0).min(100.0);
                tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
            }
            Err(e) => return Err(e),
        }
    }
}

/// One writer: from `start` until `secs` have passed, increments in a closed loop, or with
/// `rate` one increment every 1/rate s (from a random phase; late ones start at once), each
/// timed from when it was due.
async fn writer<R>(side: Side, item: R, start: Instant, secs: f64, rate: Option<f64>) -> Stats
where
    R: Versioned,
    R::Value: Count,
{
    let mut policy = match std::env::var("UPDATE_BENCH_POLICY").as_deref() {
        Ok("static") => UpdatePolicy::default().adaptive(false),
        _ => UpdatePolicy::default(),
    };
    if let Some(ms) = std::env::var("UPDATE_BENCH_MAX_DELAY_MS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        policy = policy.max_delay(Duration::from_millis(ms));
    }
    if let Some(x) = std::env::var("UPDATE_BENCH_RETRY_COLLISIONS")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        policy = policy.retry_collisions(x);
    }
    if let Some(scale) = std::env::var("UPDATE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        policy = policy.scale(scale);
    }
    let phase = rand::random::<f64>();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut stats = Stats::default();
    tokio::time::sleep_until(start).await;
    let mut due = 0u64;
    while Instant::now() < deadline {
        let t0 = match rate {
            None => Instant::now(),
            Some(rate) => {
                let at = start + Duration::from_secs_f64((phase + due as f64) / rate);
                due += 1;
                if at >= deadline {
                    break;
                }
                tokio::time::sleep_until(at).await;
                at
            }
        };
        let called = Instant::now();
        let wasted = match side {
            Side::Update => update(&item, &policy, |c| Decision::Write(R::Value::next(c)))
                .await
                .map(|o| u64::from(o.conflicts)),
            Side::Loop => {
                let mut w = 0;
                loop_increment(&item, &mut w).await.map(|()| w)
            }
        };
        let wasted = wasted.unwrap_or_else(|e| panic!("{} writer failed: {e}", side.name()));
        stats.commits += 1;
        stats.wasted += wasted;
        stats.latencies.push(t0.elapsed().as_micros() as u64);
        stats.calls.push(called.elapsed().as_micros() as u64);
        if Instant::now() <= deadline {
            stats.in_window += 1;
        }
    }
    stats
}

/// Where one counter lives.
#[derive(Clone)]
struct Target {
    backend: String,
    /// The container (blob), table, key prefix (redis) or database (cosmos).
    place: String,
    /// The blob name, key or item id (unused for table).
    name: String,
}

fn blob_item(account: &StorageAccount, t: &Target) -> BlobJson<u64> {
    let blob = BlobServiceClient::new(account)
        .and_then(|s| s.container(&t.place))
        .and_then(|c| c.blob(&t.name))
        .expect("blob client");
    BlobJson::new(blob)
}

fn table_item(account: &StorageAccount, t: &Target) -> VersionedEntity<Counter> {
    TableServiceClient::new(account)
        .and_then(|s| s.table(&t.place))
        .and_then(|t| t.versioned(TABLE_PK, TABLE_RK))
        .expect("table client")
}

#[cfg(feature = "redis")]
fn redis_item(t: &Target) -> azstore::redis::RedisJson<u64> {
    azstore::redis::RedisClient::from_env()
        .and_then(|c| c.json(&format!("{}:{}", t.place, t.name)))
        .expect("redis client (AZSTORE_REDIS_URL)")
}

#[cfg(feature = "cosmos")]
fn cosmos_item(t: &Target) -> azstore::cosmos::CosmosItem<Doc> {
    azstore::cosmos::CosmosClient::from_env()
        .and_then(|c| c.database(&t.place))
        .and_then(|d| d.container("bench", "/id"))
        .and_then(|c| c.item(&t.name, t.name.as_str()))
        .expect("cosmos client (AZSTORE_COSMOS_ENDPOINT)")
}

fn missing(backend: &str) -> ! {
    panic!("backend {backend}: build with --all-features (or the feature of that name)")
}

/// Runs `$body` with `$item` bound to the target's counter, whatever its backend.
macro_rules! with_item {
    ($account:expr, $t:expr, |$item:ident| $body:expr) => {
        match $t.backend.as_str() {
            "blob" => {
                let $item = blob_item($account, $t);
                $body
            }
            "table" => {
                let $item = table_item($account, $t);
                $body
            }
            #[cfg(feature = "redis")]
            "redis" => {
                let $item = redis_item($t);
                $body
            }
            #[cfg(feature = "cosmos")]
            "cosmos" => {
                let $item = cosmos_item($t);
                $body
            }
            other => missing(other),
        }
    };
}

async fn one_writer(
    account: StorageAccount,
    t: Target,
    side: Side,
    start: Instant,
    secs: f64,
    rate: Option<f64>,
) -> Stats {
    with_item!(&account, &t, |item| writer(side, item, start, secs, rate)
        .await)
}

async fn read_count(account: &StorageAccount, t: &Target) -> u64 {
    with_item!(account, t, |item| item
        .read()
        .await
        .expect("read")
        .map_or(0, |c| c.value.count()))
}

/// The item's stored write-id token.
async fn read_token(account: &StorageAccount, t: &Target) -> Option<String> {
    with_item!(account, t, |item| item
        .read()
        .await
        .ok()
        .flatten()
        .and_then(|c| c.write_id))
}

/// Creates the counter (and the table, for `table`).
async fn seed(account: &StorageAccount, t: &Target) {
    if t.backend == "table" {
        TableServiceClient::new(account)
            .and_then(|s| s.table(&t.place))
            .expect("table")
            .create()
            .await
            .expect("create table");
    }
    with_item!(account, t, |item| {
        item.create(&Count::next(None), "seed")
            .await
            .expect("seed the counter");
    });
}

async fn clean_up(account: &StorageAccount, t: &Target) {
    if t.backend == "table" {
        let _ = TableServiceClient::new(account)
            .and_then(|s| s.table(&t.place))
            .expect("table")
            .delete()
            .await;
    }
}

fn now_epoch_us() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64)
}

/// Child process: one writer, its stats as one line on stdout.
fn child() {
    let arg = |name: &str| std::env::var(name).unwrap_or_else(|_| panic!("{name} not set"));
    let t = Target {
        backend: arg("UPDATE_BENCH_BACKEND"),
        place: arg("UPDATE_BENCH_PLACE"),
        name: arg("UPDATE_BENCH_NAME"),
    };
    let side = Side::parse(&arg("UPDATE_BENCH_SIDE"));
    let start_epoch_us: u64 = arg("UPDATE_BENCH_START_US").parse().expect("start");
    let secs: f64 = arg("UPDATE_BENCH_RUN_SECS").parse().expect("secs");
    let rate: Option<f64> = arg("UPDATE_BENCH_RATE").parse().ok().filter(|r| *r > 0.0);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stats = rt.block_on(async {
        let account = StorageAccount::from_env().expect("account");
        let wait = Duration::from_micros(start_epoch_us.saturating_sub(now_epoch_us()));
        let start = Instant::now() + wait;
        one_writer(account, t, side, start, secs, rate).await
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", stats.line()).expect("stdout");
}

/// One row: where, how, how many, and at what rate per writer (`None`: flat out).
struct Case<'a> {
    account: &'a StorageAccount,
    backend: &'a str,
    place: &'a str,
    processes: bool,
    writers: usize,
    secs: f64,
    rate: Option<f64>,
    server: Option<u32>,
}

/// CPU time (user + system, µs) of a process from /proc (clock ticks of 10 ms).
fn process_cpu_us(pid: u32) -> u64 {
    let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
        return 0;
    };
    // Fields after the command (which may hold spaces) in parentheses: state is field 3.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the state.
    (ticks(11) + ticks(12)) * 10_000
}

/// The process listening on 127.0.0.1:`port` (the emulator), found through /proc.
fn listener_pid(port: u16) -> Option<u32> {
    let tcp = std::fs::read_to_string("/proc/net/tcp").ok()?;
    let inode = tcp.lines().skip(1).find_map(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        let local_port = u16::from_str_radix(f.get(1)?.rsplit(':').next()?, 16).ok()?;
        (local_port == port && f.get(3) == Some(&"0A")).then(|| f.get(9).map(|s| s.to_string()))?
    })?;
    let wanted = format!("socket:[{inode}]");
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(fds) = std::fs::read_dir(entry.path().join("fd")) else {
            continue;
        };
        for fd in fds.flatten() {
            if std::fs::read_link(fd.path()).is_ok_and(|l| l.to_string_lossy() == wanted) {
                return Some(pid);
            }
        }
    }
    None
}

fn port_of(url: &str) -> Option<u16> {
    let after = url.split("://").nth(1)?;
    let host_port = after.split('/').next()?;
    host_port.rsplit_once(':')?.1.parse().ok()
}

/// The emulator process serving `backend`.
fn server_pid(account: &StorageAccount, backend: &str) -> Option<u32> {
    let url = match backend {
        // Azurite serves Blob and Table from one process.
        "blob" | "table" => blob_item(
            account,
            &Target {
                backend: backend.into(),
                place: "portprobe".into(),
                name: "x".into(),
            },
        )
        .blob()
        .url(),
        "redis" => std::env::var("AZSTORE_REDIS_URL").ok()?,
        "cosmos" => std::env::var("AZSTORE_COSMOS_ENDPOINT").ok()?,
        _ => return None,
    };
    listener_pid(port_of(&url)?)
}

/// One repetition of one side: its stats, commits/s, and server CPU µs per commit.
async fn run_side(case: &Case<'_>, side: Side, tag: &str) -> (Stats, f64, f64) {
    let Case {
        account,
        backend,
        place,
        processes,
        writers,
        secs,
        rate,
        server,
    } = *case;
    let t = match backend {
        "table" => Target {
            backend: backend.into(),
            place: format!("cnt{}{tag}", std::process::id()),
            name: String::new(),
        },
        _ => Target {
            backend: backend.into(),
            place: place.into(),
            name: format!("counter-{tag}"),
        },
    };
    seed(account, &t).await;
    let base = read_count(account, &t).await;
    let mut all = Stats::default();
    let server_before = server.map_or(0, process_cpu_us);
    // `UPDATE_BENCH_SHOW_PACE=1`: sample the item's stored pace every 50 ms while `update()`
    // runs, and print what it was.
    let pace_sampler =
        (side == Side::Update && std::env::var_os("UPDATE_BENCH_SHOW_PACE").is_some()).then(|| {
            let (account, t) = (account.clone(), t.clone());
            let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
            let flag = stop.clone();
            let task = tokio::spawn(async move {
                let mut samples = Vec::new();
                while !flag.load(std::sync::atomic::Ordering::Relaxed) {
                    let token = read_token(&account, &t).await;
                    samples.push(token.as_deref().and_then(pace_in_token));
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                samples
            });
            (stop, task)
        });
    if processes {
        // Children need a moment to start: the start is set far enough ahead for all.
        let lead = Duration::from_millis(300 + 15 * writers as u64);
        let start_us = now_epoch_us() + lead.as_micros() as u64;
        let exe = std::env::current_exe().expect("current exe");
        let children: Vec<_> = (0..writers)
            .map(|_| {
                Command::new(&exe)
                    .env(CHILD_ENV, "1")
                    .env("UPDATE_BENCH_BACKEND", &t.backend)
                    .env("UPDATE_BENCH_PLACE", &t.place)
                    .env("UPDATE_BENCH_NAME", &t.name)
                    .env("UPDATE_BENCH_SIDE", side.name())
                    .env("UPDATE_BENCH_START_US", start_us.to_string())
                    .env("UPDATE_BENCH_RUN_SECS", secs.to_string())
                    .env("UPDATE_BENCH_RATE", rate.unwrap_or(0.0).to_string())
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("start a writer process")
            })
            .collect();
        let outputs = tokio::task::spawn_blocking(move || {
            children
                .into_iter()
                .map(|c| c.wait_with_output().expect("writer process"))
                .collect::<Vec<_>>()
        })
        .await
        .expect("join");
        for o in outputs {
            assert!(
                o.status.success(),
                "a writer process failed: {:?}",
                o.status
            );
            let text = String::from_utf8_lossy(&o.stdout);
            let s = text
                .lines()
                .find_map(Stats::parse)
                .unwrap_or_else(|| panic!("no result from a writer process: {text}"));
            all.merge(s);
        }
    } else {
        let start = Instant::now() + Duration::from_millis(50);
        let tasks: Vec<_> = (0..writers)
            .map(|_| {
                tokio::spawn(one_writer(
                    account.clone(),
                    t.clone(),
                    side,
                    start,
                    secs,
                    rate,
                ))
            })
            .collect();
        for task in tasks {
            all.merge(task.await.expect("writer task"));
        }
    }
    let server_cpu = server
        .map_or(0, process_cpu_us)
        .saturating_sub(server_before);
    if let Some((stop, task)) = pace_sampler {
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let samples = task.await.expect("pace sampler");
        let mut paced: Vec<u64> = samples
            .iter()
            .flatten()
            .map(|p| p.as_micros() as u64)
            .collect();
        println!(
            "pace: {backend} {writers} {} rate={rate:?}: {} of {} samples with a pace, p50 {:.1} ms, p90 {:.1} ms",
            if processes { "procs" } else { "tasks" },
            paced.len(),
            samples.len(),
            quantile_ms(&mut paced, 0.5),
            quantile_ms(&mut paced, 0.9)
        );
    }
    let count = read_count(account, &t).await - base;
    assert_eq!(
        count,
        all.commits,
        "{backend} {} {writers}: the counter moved by {count}, the writers committed {}",
        side.name(),
        all.commits
    );
    clean_up(account, &t).await;
    let rate = all.in_window as f64 / secs;
    let per_commit = server_cpu as f64 / all.commits.max(1) as f64;
    (all, rate, per_commit)
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n == 0 {
        f64::NAN
    } else if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// `median [min–max]` with `digits` decimals.
fn spread(v: &[f64], digits: usize) -> String {
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "{:.*} [{:.*}–{:.*}]",
        digits,
        median(v),
        digits,
        lo,
        digits,
        hi
    )
}

/// The `q` quantile of latencies in µs, as ms.
fn quantile_ms(lat: &mut [u64], q: f64) -> f64 {
    lat.sort_unstable();
    let i = ((lat.len() as f64) * q) as usize;
    lat.get(i.min(lat.len().saturating_sub(1)))
        .map_or(0.0, |&us| us as f64 / 1000.0)
}

fn list(name: &str, default: &str) -> Vec<String> {
    std::env::var(name)
        .unwrap_or_else(|_| default.into())
        .split(',')
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
        .collect()
}

fn env_num(name: &str, default: f64) -> f64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// Per side, per repetition: commits/s, wasted per commit, p50 and p99 ms, server µs/commit.
#[derive(Default)]
struct Reps {
    rate: Vec<f64>,
    wasted: Vec<f64>,
    p50: Vec<f64>,
    p99: Vec<f64>,
    server: Vec<f64>,
    /// Share of the updates that started more than 1 ms after they were due (behind the
    /// writer's previous one, or woken late), and the p50 and p99 of the calls themselves.
    late: Vec<f64>,
    call_p50: Vec<f64>,
    call_p99: Vec<f64>,
}

/// Runs one row (both sides, interleaved), prints its line; returns the loop's median rate.
async fn row(case: &Case<'_>, reps: usize, label: &str, counter: &mut usize) -> f64 {
    let mut sides = [Reps::default(), Reps::default()];
    for rep in 0..reps {
        let order = if rep % 2 == 0 {
            [Side::Update, Side::Loop]
        } else {
            [Side::Loop, Side::Update]
        };
        for side in order {
            *counter += 1;
            let (mut s, rate, server) = run_side(case, side, &counter.to_string()).await;
            let r = &mut sides[side as usize];
            r.rate.push(rate);
            r.wasted.push(s.wasted as f64 / s.commits.max(1) as f64);
            // Before the quantiles sort them: the latencies and calls pair up by update.
            let late = s
                .latencies
                .iter()
                .zip(&s.calls)
                .filter(|(lat, call)| lat.saturating_sub(**call) > 1000)
                .count();
            r.late
                .push(100.0 * late as f64 / s.calls.len().max(1) as f64);
            r.p50.push(quantile_ms(&mut s.latencies, 0.50));
            r.p99.push(quantile_ms(&mut s.latencies, 0.99));
            r.server.push(server);
            r.call_p50.push(quantile_ms(&mut s.calls, 0.50));
            r.call_p99.push(quantile_ms(&mut s.calls, 0.99));
        }
    }
    let show = |r: &Reps| {
        format!(
            "{} commits/s {:.2} wasted p50 {} ms p99 {} ms",
            spread(&r.rate, 0),
            median(&r.wasted),
            spread(&r.p50, 1),
            spread(&r.p99, 1)
        )
    };
    let [u, l] = &sides;
    let server = |r: &Reps| {
        if case.server.is_some() {
            format!("{:.0}", median(&r.server))
        } else {
            "?".into()
        }
    };
    println!(
        "contention: {} {} {} {label} update() {} | loop {} | ratio {:.2} | server-cpu/commit update() {} us loop {} us",
        case.backend,
        case.writers,
        if case.processes { "procs" } else { "tasks" },
        show(u),
        show(l),
        median(&u.rate) / median(&l.rate),
        server(u),
        server(l),
    );
    if std::env::var_os("UPDATE_BENCH_SPLIT").is_some() {
        let split = |r: &Reps| {
            format!(
                "late {} % call p50 {} ms p99 {} ms",
                spread(&r.late, 0),
                spread(&r.call_p50, 1),
                spread(&r.call_p99, 1)
            )
        };
        println!(
            "split: {} {} {} {label} update() {} | loop {}",
            case.backend,
            case.writers,
            if case.processes { "procs" } else { "tasks" },
            split(u),
            split(l),
        );
    }
    let _ = std::io::stdout().flush();
    median(&l.rate)
}

fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child();
        return;
    }
    let secs = env_num("UPDATE_BENCH_SECS", 2.0);
    let reps = env_num("UPDATE_BENCH_REPS", 7.0) as usize;
    let backends = list("UPDATE_BENCH_BACKENDS", "blob,table,redis,cosmos");
    let modes = list("UPDATE_BENCH_MODES", "tasks,procs");
    let closed: Vec<usize> = list("UPDATE_BENCH_WRITERS", "1,16,64")
        .iter()
        .map(|s| s.parse().expect("writer count"))
        .collect();
    let offered: Vec<f64> = list("UPDATE_BENCH_OFFERED", "10,25,50,90")
        .iter()
        .map(|s| s.parse().expect("offered percent"))
        .collect();
    let offered_writers = env_num("UPDATE_BENCH_OFFERED_WRITERS", 16.0) as usize;
    let fixed_capacity = std::env::var("UPDATE_BENCH_CAPACITY")
        .ok()
        .and_then(|s| s.parse::<f64>().ok());
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let hint = "Run with: scripts/cosmos run -- scripts/azurite run --only azurite,redis -- \
                    cargo bench -p azstore --all-features --bench update_contention";
        let account = StorageAccount::from_env().unwrap_or_else(|e| panic!("{e}\n{hint}"));
        let service = BlobServiceClient::new(&account).expect("client");
        let container = format!("updbench{}", std::process::id());
        let database = format!("updbench{}", std::process::id());
        let redis_prefix = format!("updbench{}", std::process::id());
        if backends.iter().any(|b| b == "blob") {
            service
                .container(&container)
                .expect("name")
                .create()
                .await
                .unwrap_or_else(|e| panic!("{e}\n{hint}"));
        }
        #[cfg(feature = "cosmos")]
        if backends.iter().any(|b| b == "cosmos") {
            let client = azstore::cosmos::CosmosClient::from_env()
                .unwrap_or_else(|e| panic!("{e}\n{hint}"));
            let db = client.database(&database).expect("database");
            db.create_if_not_exists()
                .await
                .unwrap_or_else(|e| panic!("the Cosmos DB server is not reachable: {e}\n{hint}"));
            db.container("bench", "/id")
                .expect("container")
                .create_if_not_exists()
                .await
                .expect("container");
        }
        println!(
            "update contention: {reps} reps of {secs} s per side, sides interleaved; load average {}",
            load_average()
        );
        let mut counter = 0;
        for backend in &backends {
            let place = match backend.as_str() {
                "blob" => container.as_str(),
                "redis" => redis_prefix.as_str(),
                "cosmos" => database.as_str(),
                _ => "",
            };
            let server = server_pid(&account, backend);
            for mode in &modes {
                let processes = mode == "procs" || mode == "processes";
                let mut capacity = fixed_capacity;
                let case = |writers: usize, rate: Option<f64>| Case {
                    account: &account,
                    backend,
                    place,
                    processes,
                    writers,
                    secs,
                    rate,
                    server,
                };
                for &writers in &closed {
                    let loop_rate = row(&case(writers, None), reps, "closed", &mut counter).await;
                    if writers == offered_writers && capacity.is_none() {
                        capacity = Some(loop_rate);
                    }
                }
                if offered.is_empty() {
                    continue;
                }
                let capacity = match capacity {
                    Some(c) => c,
                    None => {
                        // Measure the loop's capacity at the offered rows' writer count.
                        row(&case(offered_writers, None), reps, "closed", &mut counter).await
                    }
                };
                for &percent in &offered {
                    let total = capacity * percent / 100.0;
                    let rate = Some(total / offered_writers as f64);
                    let label = format!("offered={total:.0}/s");
                    row(&case(offered_writers, rate), reps, &label, &mut counter).await;
                }
            }
        }
        println!("load average at the end: {}", load_average());
        if backends.iter().any(|b| b == "blob") {
            let _ = service
                .container(&container)
                .expect("name")
                .delete(&Conditions::none())
                .await;
        }
        #[cfg(feature = "cosmos")]
        if backends.iter().any(|b| b == "cosmos") {
            if let Ok(db) =
                azstore::cosmos::CosmosClient::from_env().and_then(|c| c.database(&database))
            {
                let _ = db.delete_if_exists().await;
            }
        }
    });
}
