//! Fleet harness for `azstore::leader::ShardGroup`: M workers as tasks spread over a few
//! processes, N shards, joins, graceful leaves and a kill (SIGKILL of one process, so every
//! worker in it dies at once), against the real servers. Prints one line per run:
//!
//! ```text
//! fleet: BACKEND shards N workers M requests/s total R per-worker r balanced-after K intervals reowned-p99 S s double-owned D
//! fleet-detail: ...  (renewals/s, each phase's balance time, transfers, steals)
//! ```
//!
//! `requests/s` counts what the workers send to balance (bulk status reads, acquires,
//! releases) over a steady window; the renewals of owned leases ((owned + 1) per renew
//! interval) are printed separately. `balanced-after` is the largest of: intervals from the
//! second half of the fleet joining, from a graceful leave of an eighth of it, and from the end
//! of the killed workers' lease. Run through `scripts/fleet` (or directly, under the
//! emulators):
//!
//! ```text
//! scripts/cosmos run -- scripts/azurite run --only azurite,redis -- \
//!   cargo run --release -p azstore-examples --features redis,cosmos --example shard_fleet -- blob 1024 64
//! ```
//!
//! Arguments: `BACKEND SHARDS WORKERS [PROCESSES]` (default 4 processes). Environment:
//! `FLEET_INTERVAL_SECS` (default 2), `FLEET_LEASE_SECS` (default 15), `FLEET_STEADY_SECS`
//! (default 30).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::process::Stdio;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use azstore::leader::{LockFactory, ShardEvent, ShardGroup, ShardOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

fn env_secs(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn now_us() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros())
}

struct Setup {
    shards: usize,
    slots: usize,
    interval: Duration,
    lease: u64,
}

impl Setup {
    fn from(args: &[String]) -> Res<Setup> {
        let shards: usize = args.first().ok_or("SHARDS")?.parse()?;
        let workers: usize = args.get(1).ok_or("WORKERS")?.parse()?;
        Ok(Setup {
            shards,
            slots: (workers + 8).min(1024),
            interval: Duration::from_secs(env_secs("FLEET_INTERVAL_SECS", 2)),
            lease: env_secs("FLEET_LEASE_SECS", 15),
        })
    }

    fn options(&self, label: &str) -> LockOptions {
        LockOptions::default()
            .duration(LeaseDuration::seconds(self.lease).expect("lease 15-60 s"))
            .label(label)
            .local_wakeup(false)
    }
}

// ---------------------------------------------------------------- child: a host of workers

/// Reads `join ID` / `leave ID` on stdin; prints `ACQ id shard epoch us`, `LOST id shard us`,
/// `REQ id n ms owned` (every interval) and `GONE id`.
async fn host<F: LockFactory>(make: impl Fn(&str) -> F, group: &str, setup: Setup) -> Res<()> {
    let (out_tx, mut out_rx) = mpsc::unbounded_channel::<String>();
    let printer = tokio::spawn(async move {
        let mut out = tokio::io::stdout();
        while let Some(line) = out_rx.recv().await {
            let mut buf = line;
            buf.push('\n');
            while let Ok(more) = out_rx.try_recv() {
                buf.push_str(&more);
                buf.push('\n');
            }
            if out.write_all(buf.as_bytes()).await.is_err() {
                return;
            }
            let _ = out.flush().await;
        }
    });
    let mut stops: HashMap<String, tokio::sync::oneshot::Sender<()>> = HashMap::new();
    let mut lines = BufReader::new(tokio::io::stdin()).lines();
    while let Some(line) = lines.next_line().await? {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["join", id] => {
                let g = ShardGroup::with_count(
                    make(id),
                    group,
                    setup.shards,
                    ShardOptions::default()
                        .interval(setup.interval)
                        .member_slots(setup.slots),
                )?;
                let mut w = g.join(id)?;
                let (stop_tx, mut stop_rx) = tokio::sync::oneshot::channel::<()>();
                stops.insert(id.to_string(), stop_tx);
                let out = out_tx.clone();
                let id = id.to_string();
                let every = setup.interval;
                tokio::spawn(async move {
                    let mut tick = tokio::time::interval(every);
                    let mut stopping = false;
                    loop {
                        tokio::select! {
                            e = w.recv() => match e {
                                Some(ShardEvent::Acquired { shard, epoch }) => {
                                    let _ = out.send(format!("ACQ {id} {shard} {epoch} {}", now_us()));
                                }
                                Some(ShardEvent::Lost { shard }) => {
                                    let _ = out.send(format!("LOST {id} {shard} {}", now_us()));
                                }
                                Some(_) => {}
                                None => break,
                            },
                            _ = tick.tick() => {
                                let (n, t) = w.requests();
                                let _ = out.send(format!("REQ {id} {n} {} {}", t.as_millis(), w.owned().len()));
                            }
                            _ = &mut stop_rx, if !stopping => {
                                stopping = true;
                                w.stop();
                            }
                        }
                    }
                    let _ = out.send(format!("GONE {id}"));
                });
            }
            ["leave", id] => {
                if let Some(s) = stops.remove(*id) {
                    let _ = s.send(());
                }
            }
            _ => {}
        }
    }
    drop(out_tx);
    let _ = printer.await;
    Ok(())
}

async fn cosmos_container() -> Res<azstore::cosmos::CosmosContainer> {
    let client = azstore::cosmos::CosmosClient::from_env()?;
    let db = client.database("fleet-harness")?;
    db.create_if_not_exists().await?;
    let c = db.container("locks", "/pk")?;
    c.create_if_not_exists().await?;
    Ok(c)
}

async fn child(args: &[String]) -> Res<()> {
    let (backend, group) = (&args[0], &args[1]);
    let setup = Setup::from(&args[2..])?;
    match backend.as_str() {
        "blob" => {
            let c = azstore::blob::BlobServiceClient::new(&azstore::StorageAccount::from_env()?)?
                .container("fleet-harness")?;
            c.create_if_not_exists().await?;
            let make = |id: &str| azstore::blob::BlobLocks::new(c.clone(), setup.options(id));
            host(make, group, Setup::from(&args[2..])?).await
        }
        "redis" => {
            let r = azstore::redis::RedisClient::from_env()?;
            let make = |id: &str| azstore::redis::RedisLocks::new(r.clone(), setup.options(id));
            host(make, group, Setup::from(&args[2..])?).await
        }
        _ => {
            let c = cosmos_container().await?;
            let make = |id: &str| azstore::cosmos::CosmosLocks::new(c.clone(), setup.options(id));
            host(make, group, Setup::from(&args[2..])?).await
        }
    }
}

// ---------------------------------------------------------------- parent

struct Host {
    child: Child,
    stdin: ChildStdin,
}

/// One ownership: acquired at µs, let go at µs (`None`: still owned), by whom.
type Span<'a> = (u128, Option<u128>, &'a str);

#[derive(Default)]
struct State {
    /// shard -> (owner, epoch, acquired at µs).
    owner: HashMap<String, (String, u64, u128)>,
    /// shard -> (last owner, released at µs, released as surplus).
    last: HashMap<String, (String, u128, bool)>,
    epochs: HashMap<String, u64>,
    /// worker -> (requests, ms since join, owned).
    requests: HashMap<String, (u64, u64, usize)>,
    /// Every ownership seen, for the overlap check at the end: (shard, worker, acquired at µs,
    /// let go at µs — the `Lost`, or the kill of its process).
    spans: Vec<(String, String, u128, Option<u128>)>,
    /// (shard, worker) -> its open span in `spans`.
    open: HashMap<(String, String), usize>,
    stale_epochs: usize,
    transfers: usize,
    steals: HashMap<(String, u64), usize>,
    gone: BTreeSet<String>,
}

impl State {
    fn apply(&mut self, line: &str, alive: &BTreeSet<String>, shards: usize, bucket: u64) {
        let p: Vec<&str> = line.split_whitespace().collect();
        match p.as_slice() {
            ["ACQ", w, shard, epoch, at] => {
                let (epoch, at): (u64, u128) =
                    (epoch.parse().unwrap_or(0), at.parse().unwrap_or(0));
                self.open
                    .insert((shard.to_string(), w.to_string()), self.spans.len());
                self.spans
                    .push((shard.to_string(), w.to_string(), at, None));
                if let Some((o, _, surplus)) = self.last.get(*shard) {
                    if o != w && alive.contains(o) && !surplus {
                        *self.steals.entry((w.to_string(), bucket)).or_default() += 1;
                    }
                }
                if let Some(prev) = self.epochs.insert(shard.to_string(), epoch)
                    && epoch <= prev
                {
                    self.stale_epochs += 1;
                }
                self.owner
                    .insert(shard.to_string(), (w.to_string(), epoch, at));
                self.transfers += 1;
            }
            ["LOST", w, shard, at] => {
                if let Some(i) = self.open.remove(&(shard.to_string(), w.to_string())) {
                    self.spans[i].3 = Some(at.parse().unwrap_or(0));
                }
                let held = self.owner.values().filter(|(o, _, _)| o == w).count();
                let surplus = held > shards / alive.len().max(1);
                if self.owner.get(*shard).is_some_and(|(o, _, _)| o == w) {
                    self.owner.remove(*shard);
                }
                self.last.insert(
                    shard.to_string(),
                    (w.to_string(), at.parse().unwrap_or(0), surplus),
                );
            }
            ["REQ", w, n, ms, owned] => {
                self.requests.insert(
                    w.to_string(),
                    (
                        n.parse().unwrap_or(0),
                        ms.parse().unwrap_or(1),
                        owned.parse().unwrap_or(0),
                    ),
                );
            }
            ["GONE", w] => {
                self.gone.insert(w.to_string());
            }
            _ => {}
        }
    }

    /// The workers of a killed process stop at `at`: their open spans end there.
    fn killed(&mut self, workers: &[String], at: u128) {
        let ended: Vec<(String, String)> = self
            .open
            .keys()
            .filter(|(_, w)| workers.contains(w))
            .cloned()
            .collect();
        for k in ended {
            if let Some(i) = self.open.remove(&k) {
                self.spans[i].3 = Some(at);
            }
        }
    }

    /// Ownerships of one shard that overlap in time (by the workers' own timestamps: an
    /// `Acquired` is stamped after the acquire returned, a `Lost` before the release was sent,
    /// so an overlap is two workers believing they own the shard at once), and acquisitions
    /// whose epoch did not grow.
    fn double_owned(&self) -> usize {
        let mut by_shard: HashMap<&str, Vec<Span<'_>>> = HashMap::new();
        for (shard, w, from, to) in &self.spans {
            by_shard.entry(shard).or_default().push((*from, *to, w));
        }
        let mut double = 0;
        for (shard, mut spans) in by_shard {
            spans.sort();
            for pair in spans.windows(2) {
                let ((_, end, a), (start, _, b)) = (pair[0], pair[1]);
                if end.is_none_or(|e| e > start) {
                    eprintln!("double ownership: {shard} acquired by {b} while {a} owned it");
                    double += 1;
                }
            }
        }
        double + self.stale_epochs
    }

    fn balanced(&self, alive: &BTreeSet<String>, shards: usize) -> bool {
        let m = alive.len().max(1);
        let (lo, hi) = (shards / m, shards.div_ceil(m));
        let mut load: BTreeMap<&str, usize> = alive.iter().map(|w| (w.as_str(), 0)).collect();
        for (o, _, _) in self.owner.values() {
            match load.get_mut(o.as_str()) {
                Some(c) => *c += 1,
                None => return false,
            }
        }
        self.owner.len() == shards && load.values().all(|c| (lo..=hi).contains(c))
    }
}

struct Fleet {
    hosts: Vec<Host>,
    rx: mpsc::UnboundedReceiver<String>,
    st: State,
    alive: BTreeSet<String>,
    /// worker -> host index.
    at: BTreeMap<String, usize>,
    shards: usize,
    start: Instant,
    interval: Duration,
}

impl Fleet {
    async fn send(&mut self, host: usize, line: String) -> Res<()> {
        self.hosts[host]
            .stdin
            .write_all(format!("{line}\n").as_bytes())
            .await?;
        self.hosts[host].stdin.flush().await?;
        Ok(())
    }

    async fn join(&mut self, id: &str, host: usize) -> Res<()> {
        self.alive.insert(id.to_string());
        self.at.insert(id.to_string(), host);
        self.send(host, format!("join {id}")).await
    }

    fn pump(&mut self, line: &str) {
        let bucket = self.start.elapsed().as_millis() as u64 / self.interval.as_millis() as u64;
        self.st.apply(line, &self.alive, self.shards, bucket);
    }

    /// Waits until balanced; the seconds it took.
    async fn settle(&mut self, limit: Duration) -> Res<f64> {
        let t0 = Instant::now();
        let mut said = Instant::now();
        while !self.st.balanced(&self.alive, self.shards) {
            if said.elapsed() > Duration::from_secs(10) {
                said = Instant::now();
                let mut load: BTreeMap<&str, usize> =
                    self.alive.iter().map(|w| (w.as_str(), 0)).collect();
                for (o, _, _) in self.st.owner.values() {
                    if let Some(c) = load.get_mut(o.as_str()) {
                        *c += 1;
                    }
                }
                eprintln!(
                    "  {:.0} s: {} of {} shards owned, {} workers holding {}..{}",
                    t0.elapsed().as_secs_f64(),
                    self.st.owner.len(),
                    self.shards,
                    load.len(),
                    load.values().min().unwrap_or(&0),
                    load.values().max().unwrap_or(&0)
                );
            }
            let left = limit.saturating_sub(t0.elapsed());
            let line = tokio::time::timeout(left, self.rx.recv())
                .await
                .map_err(|_| {
                    let m = self.alive.len();
                    format!(
                        "not balanced within {limit:?}: {} of {} shards owned over {m} workers",
                        self.st.owner.len(),
                        self.shards
                    )
                })?
                .ok_or("closed")?;
            self.pump(&line);
        }
        Ok(t0.elapsed().as_secs_f64())
    }

    /// Reads events for `d`.
    async fn run_for(&mut self, d: Duration) {
        let until = Instant::now() + d;
        while let Ok(Some(line)) = tokio::time::timeout_at(until, self.rx.recv()).await {
            self.pump(&line);
        }
    }

    fn snapshot(&self) -> HashMap<String, (u64, u64, usize)> {
        self.alive
            .iter()
            .filter_map(|w| self.st.requests.get(w).map(|r| (w.clone(), *r)))
            .collect()
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    v[((p / 100.0) * (v.len() - 1) as f64).round() as usize]
}

async fn parent(backend: &str, shards: usize, workers: usize, procs: usize) -> Res<()> {
    let group = format!(
        "fleet-{backend}-{}-{}",
        std::process::id(),
        now_us() % 1_000_000
    );
    let setup = Setup::from(&[shards.to_string(), workers.to_string()])?;
    let (tx, rx) = mpsc::unbounded_channel();
    let mut hosts = Vec::new();
    for _ in 0..procs {
        let mut child = Command::new(std::env::current_exe()?)
            .args([
                "--child",
                backend,
                &group,
                &shards.to_string(),
                &workers.to_string(),
            ])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let stdin = child.stdin.take().ok_or("no stdin")?;
        let tx = tx.clone();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = tx.send(l);
            }
        });
        hosts.push(Host { child, stdin });
    }
    let mut f = Fleet {
        hosts,
        rx,
        st: State::default(),
        alive: BTreeSet::new(),
        at: BTreeMap::new(),
        shards,
        start: Instant::now(),
        interval: setup.interval,
    };
    let iv = setup.interval.as_secs_f64();
    let limit = Duration::from_secs(600);
    // Worker i lives in process i mod P.
    let half = workers / 2;
    for i in 0..half {
        f.join(&format!("w{i}"), i % procs).await?;
    }
    let first = f.settle(limit).await?;
    eprintln!("{backend}: {half} workers balanced {shards} shards in {first:.1} s");
    // The rest join at once.
    for i in half..workers {
        f.join(&format!("w{i}"), i % procs).await?;
    }
    let join = f.settle(limit).await?;
    eprintln!("{backend}: {half} -> {workers} balanced in {join:.1} s");
    // Steady: the request rate.
    let steady = Duration::from_secs(env_secs("FLEET_STEADY_SECS", 30));
    f.run_for(setup.interval * 2).await;
    let before = f.snapshot();
    let transfers_before = f.st.transfers;
    f.run_for(steady).await;
    let after = f.snapshot();
    let steady_changes = f.st.transfers - transfers_before;
    let mut total = 0.0;
    let mut owned_total = 0usize;
    for (w, (n1, ms1, owned)) in &after {
        if let Some((n0, ms0, _)) = before.get(w)
            && ms1 > ms0
        {
            total += (n1 - n0) as f64 / ((ms1 - ms0) as f64 / 1000.0);
        }
        owned_total += owned;
    }
    let renew = setup.lease as f64 / 3.0;
    let renewals = (owned_total + after.len()) as f64 / renew;
    // A graceful leave of an eighth.
    let leavers: Vec<String> = (0..workers.div_ceil(8))
        .map(|i| format!("w{}", workers - 1 - i))
        .collect();
    for w in &leavers {
        let h = f.at[w];
        f.send(h, format!("leave {w}")).await?;
    }
    // The leavers count as members until their leave has been reported.
    while !leavers.iter().all(|w| f.st.gone.contains(w)) {
        let line = tokio::time::timeout(limit, f.rx.recv())
            .await
            .map_err(|_| "leave")?
            .ok_or("closed")?;
        f.pump(&line);
    }
    let t_leave = Instant::now();
    for w in &leavers {
        f.alive.remove(w);
    }
    f.settle(limit).await?;
    let leave = t_leave.elapsed().as_secs_f64();
    eprintln!(
        "{backend}: {} left gracefully; balanced in {leave:.1} s",
        leavers.len()
    );
    // Kill the last process: every worker in it dies at once.
    let victim = procs - 1;
    let killed: Vec<String> =
        f.at.iter()
            .filter(|(w, h)| **h == victim && f.alive.contains(*w))
            .map(|(w, _)| w.clone())
            .collect();
    let t_kill = Instant::now();
    f.st.killed(&killed, now_us());
    f.hosts[victim].child.start_kill()?;
    let _ = f.hosts[victim].child.wait().await;
    for w in &killed {
        f.alive.remove(w);
    }
    let orphaned: BTreeSet<String> =
        f.st.owner
            .iter()
            .filter(|(_, (o, _, _))| killed.contains(o))
            .map(|(s, _)| s.clone())
            .collect();
    f.st.owner.retain(|_, (o, _, _)| !killed.contains(o));
    let mut reowned = Vec::new();
    let t0 = Instant::now();
    while !f.st.balanced(&f.alive, shards) {
        let left = limit.saturating_sub(t0.elapsed());
        let line = tokio::time::timeout(left, f.rx.recv())
            .await
            .map_err(|_| "not balanced after the kill")?
            .ok_or("closed")?;
        if let ["ACQ", _, shard, ..] = line.split_whitespace().collect::<Vec<_>>().as_slice()
            && orphaned.contains(*shard)
            && !f.st.owner.contains_key(*shard)
        {
            reowned.push((Instant::now() - t_kill).as_secs_f64());
        }
        f.pump(&line);
    }
    let down = t_kill.elapsed().as_secs_f64();
    let after_kill = (down - setup.lease as f64).max(0.0);
    eprintln!(
        "{backend}: killed {} workers ({} shards); balanced {down:.1} s after the kill",
        killed.len(),
        orphaned.len()
    );
    let k = [join, leave, after_kill]
        .iter()
        .map(|s| (s / iv).ceil() as u64)
        .max()
        .unwrap_or(0);
    let per_worker = total / after.len().max(1) as f64;
    let max_steals = f.st.steals.values().copied().max().unwrap_or(0);
    println!(
        "fleet: {backend} shards {shards} workers {workers} requests/s total {total:.0} per-worker {per_worker:.2} balanced-after {k} intervals reowned-p99 {:.1} s double-owned {}",
        pct(&mut reowned, 99.0),
        f.st.double_owned()
    );
    println!(
        "fleet-detail: {backend} processes {procs} interval {iv} s lease {} s renewals/s {renewals:.0} join {:.0} leave {:.0} kill+lease {:.0} intervals ({join:.1} s, {leave:.1} s, {after_kill:.1} s) transfers {} steady-changes {steady_changes} max-steals-per-interval {max_steals}",
        setup.lease,
        (join / iv).ceil(),
        (leave / iv).ceil(),
        (after_kill / iv).ceil(),
        f.st.transfers,
    );
    for h in f.hosts.iter_mut() {
        let _ = h.child.start_kill();
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]).await;
    }
    let backend = args.first().cloned().unwrap_or_else(|| "blob".into());
    if !["blob", "redis", "cosmos"].contains(&backend.as_str()) {
        return Err(format!("unknown backend {backend}: blob, redis or cosmos").into());
    }
    let shards = args.get(1).map_or(Ok(1024), |s| s.parse())?;
    let workers = args.get(2).map_or(Ok(64), |s| s.parse())?;
    let procs = args.get(3).map_or(Ok(4), |s| s.parse())?;
    if procs < 2 || workers < procs {
        return Err("at least 2 processes and a worker per process".into());
    }
    let _ = std::io::stdout().flush();
    parent(&backend, shards, workers, procs).await
}
