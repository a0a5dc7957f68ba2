//! Contention goodput of read-modify-write on ONE item (a counter), `update()` with its
//! default policy side by side with the best plain loop, in the same run:
//!
//! * `azstore` — `update(&item, &UpdatePolicy::default(), |n| n + 1)`;
//! * `loop`    — read, If-Match write, on a conflict sleep with *full jitter* (uniform in
//!   `[0, ceiling]`, the ceiling 2 ms doubling up to 100 ms) and start over. It goes through
//!   the same `Versioned` reads and writes as `update()` (same requests, same bytes), so the
//!   two differ only in what they do between attempts.
//!
//! Backends: `blob` (a JSON counter blob, `BlobJson<u64>`) and `table` (an entity through
//! `TableClient::versioned`). Modes: `process` — every writer is a task of this process with a
//! client of its own; `processes` — every writer is a child process of its own (this binary,
//! started again), which is how contention happens between the instances of a service and
//! where nothing in-process can help. Writer counts 1, 4, 16 and 64.
//!
//! Each repetition runs one side for `UPDATE_BENCH_SECS` (default 1.5): every writer
//! increments in a closed loop until the time is up, finishing the update it is in, so the
//! final counter must equal the commits exactly (checked; a mismatch fails the run). The
//! rate counts the commits that ended within the time. The two
//! sides alternate, which goes first alternating too, for `UPDATE_BENCH_REPS` repetitions
//! (default 5); printed are the medians (commits/s, wasted writes per commit = 412/409/404
//! refusals, p99 latency of one increment, client CPU per commit: this process's, or in the
//! `processes` mode its children's) and one summary line per case:
//!
//! `contention: BACKEND WRITERS MODE, azstore X commits/s W wasted, loop Y commits/s V wasted, ratio R`
//!
//! Run: `scripts/azurite run -- cargo bench -p azstore --bench update_contention`.
//! Narrow it with `UPDATE_BENCH_BACKENDS=blob,table`, `UPDATE_BENCH_MODES=process,processes`,
//! `UPDATE_BENCH_WRITERS=1,4,16,64`; `UPDATE_BENCH_SCALE=S` runs `update()` with
//! `UpdatePolicy::default().scale(S)`; `UPDATE_BENCH_OFFERED=R` makes every writer offer R
//! updates per second instead of running flat out (the latency a user sees below saturation).

use std::io::Write as _;
use std::process::{Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azstore::blob::BlobServiceClient;
use azstore::table::{TableServiceClient, VersionedEntity};
use azstore::update::{BlobJson, Decision, UpdatePolicy, Versioned, update};
use azstore::{Conditions, StorageAccount};
use serde::{Deserialize, Serialize};
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

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    Azstore,
    Loop,
}

impl Side {
    fn name(self) -> &'static str {
        match self {
            Side::Azstore => "azstore",
            Side::Loop => "loop",
        }
    }
    fn parse(s: &str) -> Side {
        if s == "loop" {
            Side::Loop
        } else {
            Side::Azstore
        }
    }
}

/// What one writer did.
#[derive(Default)]
struct Stats {
    commits: u64,
    wasted: u64,
    /// Microseconds per increment.
    latencies: Vec<u64>,
    /// Commits that ended within the measured window (the rate counts these; the updates
    /// in flight at its end are finished, and checked, but not counted).
    in_window: u64,
}

impl Stats {
    fn merge(&mut self, o: Stats) {
        self.commits += o.commits;
        self.wasted += o.wasted;
        self.latencies.extend(o.latencies);
        self.in_window += o.in_window;
    }

    fn line(&self) -> String {
        let lat: Vec<String> = self.latencies.iter().map(u64::to_string).collect();
        format!(
            "RESULT {} {} {} {}",
            self.commits,
            self.wasted,
            self.in_window,
            lat.join(",")
        )
    }

    fn parse(line: &str) -> Option<Stats> {
        let mut it = line.strip_prefix("RESULT ")?.split(' ');
        let commits = it.next()?.parse().ok()?;
        let wasted = it.next()?.parse().ok()?;
        let in_window = it.next()?.parse().ok()?;
        let latencies = it
            .next()
            .unwrap_or("")
            .split(',')
            .filter(|s| !s.is_empty())
            .map(|s| s.parse().ok())
            .collect::<Option<Vec<u64>>>()?;
        Some(Stats {
            commits,
            wasted,
            latencies,
            in_window,
        })
    }
}

fn is_conflict(e: &azstore::Error) -> bool {
    matches!(e.status(), Some(404 | 409 | 412))
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

/// One writer: increments in a closed loop from `start` until `secs` have passed, or, with
/// `UPDATE_BENCH_OFFERED=R`, starts one increment every 1/R s (from a random phase; late
/// ones start at once) and times each from when it was due.
async fn writer<R>(side: Side, item: R, start: Instant, secs: f64) -> Stats
where
    R: Versioned,
    R::Value: Count,
{
    // `UPDATE_BENCH_SCALE` tries another contention scale than the default's.
    let policy = match std::env::var("UPDATE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(scale) => UpdatePolicy::default().scale(scale),
        None => UpdatePolicy::default(),
    };
    let offered: Option<f64> = std::env::var("UPDATE_BENCH_OFFERED")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|r: &f64| *r > 0.0);
    let phase = rand::random::<f64>();
    let deadline = start + Duration::from_secs_f64(secs);
    let mut stats = Stats::default();
    tokio::time::sleep_until(start).await;
    let mut due = 0u64;
    while Instant::now() < deadline {
        let t0 = match offered {
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
        let wasted = match side {
            Side::Azstore => update(&item, &policy, |c| Decision::Write(R::Value::next(c)))
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
        if Instant::now() <= deadline {
            stats.in_window += 1;
        }
    }
    stats
}

fn blob_item(account: &StorageAccount, container: &str, name: &str) -> BlobJson<u64> {
    let blob = BlobServiceClient::new(account)
        .and_then(|s| s.container(container))
        .and_then(|c| c.blob(name))
        .expect("blob client");
    BlobJson::new(blob)
}

fn table_item(account: &StorageAccount, table: &str) -> VersionedEntity<Counter> {
    TableServiceClient::new(account)
        .and_then(|s| s.table(table))
        .and_then(|t| t.versioned(TABLE_PK, TABLE_RK))
        .expect("table client")
}

/// Where one case's counter lives: a blob name in the bench container, or a table name.
#[derive(Clone)]
struct Target {
    backend: String,
    /// The container (blob) or table.
    place: String,
    /// The blob name (unused for table).
    name: String,
}

async fn one_writer(
    account: StorageAccount,
    t: Target,
    side: Side,
    start: Instant,
    secs: f64,
) -> Stats {
    if t.backend == "table" {
        writer(side, table_item(&account, &t.place), start, secs).await
    } else {
        writer(side, blob_item(&account, &t.place, &t.name), start, secs).await
    }
}

async fn read_count(account: &StorageAccount, t: &Target) -> u64 {
    if t.backend == "table" {
        let cur = table_item(account, &t.place).read().await.expect("read");
        cur.map_or(0, |c| c.value.count())
    } else {
        let cur = blob_item(account, &t.place, &t.name)
            .read()
            .await
            .expect("read");
        cur.map_or(0, |c| c.value.count())
    }
}

async fn seed(account: &StorageAccount, t: &Target) {
    if t.backend == "table" {
        let table = TableServiceClient::new(account)
            .and_then(|s| s.table(&t.place))
            .expect("table");
        table.create().await.expect("create table");
        table_item(account, &t.place)
            .create(&Counter::next(None), "seed")
            .await
            .expect("seed entity");
    } else {
        blob_item(account, &t.place, &t.name)
            .create(&0, "seed")
            .await
            .expect("seed blob");
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let stats = rt.block_on(async {
        let account = StorageAccount::from_env().expect("account");
        let wait = Duration::from_micros(start_epoch_us.saturating_sub(now_epoch_us()));
        let start = Instant::now() + wait;
        one_writer(account, t, side, start, secs).await
    });
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", stats.line()).expect("stdout");
}

/// One repetition of one side: `writers` writers on a fresh counter.
/// One case: where, how and how many.
struct Case<'a> {
    account: &'a StorageAccount,
    backend: &'a str,
    container: &'a str,
    processes: bool,
    writers: usize,
    secs: f64,
}

/// CPU time (user + system, µs) of this process, or of its finished children.
fn client_cpu_us(children: bool) -> u64 {
    let who = if children {
        libc::RUSAGE_CHILDREN
    } else {
        libc::RUSAGE_SELF
    };
    // SAFETY: getrusage only writes the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut u) } != 0 {
        return 0;
    }
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(u.ru_utime) + us(u.ru_stime)
}

/// One side of one case: its stats, commits/s and client CPU µs per commit.
async fn run_side(case: &Case<'_>, side: Side, tag: &str) -> (Stats, f64, f64) {
    let Case {
        account,
        backend,
        container,
        processes,
        writers,
        secs,
    } = *case;
    let t = if backend == "table" {
        Target {
            backend: backend.into(),
            place: format!("cnt{}{tag}", std::process::id()),
            name: String::new(),
        }
    } else {
        Target {
            backend: backend.into(),
            place: container.into(),
            name: format!("counter-{tag}"),
        }
    };
    seed(account, &t).await;
    let base = read_count(account, &t).await;
    let mut all = Stats::default();
    let cpu_before = client_cpu_us(processes);
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
            .map(|_| tokio::spawn(one_writer(account.clone(), t.clone(), side, start, secs)))
            .collect();
        for task in tasks {
            all.merge(task.await.expect("writer task"));
        }
    }
    let count = read_count(account, &t).await - base;
    assert_eq!(
        count,
        all.commits,
        "{backend} {} {writers}: the counter moved by {count}, the writers committed {}",
        side.name(),
        all.commits
    );
    if backend == "table" {
        let _ = TableServiceClient::new(account)
            .and_then(|s| s.table(&t.place))
            .expect("table")
            .delete()
            .await;
    }
    let rate = all.in_window as f64 / secs;
    let cpu = client_cpu_us(processes).saturating_sub(cpu_before);
    let cpu_per_commit = cpu as f64 / all.commits.max(1) as f64;
    (all, rate, cpu_per_commit)
}

fn median(v: &mut [f64]) -> f64 {
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

fn p99_ms(lat: &mut [u64]) -> f64 {
    lat.sort_unstable();
    let i = ((lat.len() as f64) * 0.99) as usize;
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

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split(' ').take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    if std::env::var_os(CHILD_ENV).is_some() {
        child();
        return;
    }
    let secs: f64 = std::env::var("UPDATE_BENCH_SECS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1.5);
    let reps: usize = std::env::var("UPDATE_BENCH_REPS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5);
    let backends = list("UPDATE_BENCH_BACKENDS", "blob,table");
    let modes = list("UPDATE_BENCH_MODES", "process,processes");
    let writer_counts: Vec<usize> = list("UPDATE_BENCH_WRITERS", "1,4,16,64")
        .iter()
        .map(|s| s.parse().expect("writer count"))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let account = StorageAccount::from_env().unwrap_or_else(|e| {
            panic!(
                "{e}\nRun with: scripts/azurite run -- cargo bench -p azstore --bench update_contention"
            )
        });
        let service = BlobServiceClient::new(&account).expect("client");
        let container = format!("updbench{}", std::process::id());
        service
            .container(&container)
            .expect("name")
            .create()
            .await
            .expect("create container");
        println!(
            "update contention: {reps} reps of {secs} s per side, sides interleaved; load average {}",
            load_average()
        );
        println!(
            "{:<6} {:>3} {:<9} {:<8} {:>10} {:>9} {:>8} {:>9}   per rep commits/s",
            "item", "n", "mode", "side", "commits/s", "wasted/c", "p99 ms", "cpu us/c"
        );
        let mut case = 0;
        for backend in &backends {
            for mode in &modes {
                let processes = mode == "processes";
                for &writers in &writer_counts {
                    let mut rates = [Vec::new(), Vec::new()];
                    let mut wasted = [Vec::new(), Vec::new()];
                    let mut lat: [Vec<u64>; 2] = [Vec::new(), Vec::new()];
                    let mut cpu = [Vec::new(), Vec::new()];
                    for rep in 0..reps {
                        let order = if rep % 2 == 0 {
                            [Side::Azstore, Side::Loop]
                        } else {
                            [Side::Loop, Side::Azstore]
                        };
                        for side in order {
                            case += 1;
                            let tag = format!("{case}");
                            let case = Case {
                                account: &account,
                                backend,
                                container: &container,
                                processes,
                                writers,
                                secs,
                            };
                            let (s, rate, cpu_per_commit) = run_side(&case, side, &tag).await;
                            let i = side as usize;
                            rates[i].push(rate);
                            wasted[i].push(s.wasted as f64 / s.commits.max(1) as f64);
                            lat[i].extend(s.latencies);
                            cpu[i].push(cpu_per_commit);
                        }
                    }
                    let mut med = [0.0; 2];
                    let mut wmed = [0.0; 2];
                    for side in [Side::Azstore, Side::Loop] {
                        let i = side as usize;
                        let each: Vec<String> =
                            rates[i].iter().map(|r| format!("{r:.0}")).collect();
                        med[i] = median(&mut rates[i].clone());
                        wmed[i] = median(&mut wasted[i]);
                        println!(
                            "{backend:<6} {writers:>3} {mode:<9} {:<8} {:>10.0} {:>9.2} {:>8.1} {:>9.0}   {}",
                            side.name(),
                            med[i],
                            wmed[i],
                            p99_ms(&mut lat[i]),
                            median(&mut cpu[i]),
                            each.join(" ")
                        );
                    }
                    println!(
                        "contention: {backend} {writers} {mode}, azstore {:.0} commits/s {:.2} wasted, loop {:.0} commits/s {:.2} wasted, ratio {:.2}",
                        med[0],
                        wmed[0],
                        med[1],
                        wmed[1],
                        med[0] / med[1]
                    );
                }
            }
        }
        println!("load average at the end: {}", load_average());
        let _ = service
            .container(&container)
            .expect("name")
            .delete(&Conditions::none())
            .await;
    });
}
