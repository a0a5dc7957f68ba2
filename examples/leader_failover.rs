//! Failover and shard-ownership harness for `azstore::leader`: prints one line per backend and
//! scenario, for a script to read:
//!
//! ```text
//! failover: BACKEND lease L s kill p50 X s p99 Y s (N trials) graceful p50 X s p99 Y s (N trials)
//! ownership: BACKEND shards 32 workers 1->8->3 reowned p99 X s balanced after K intervals steady-changes C max-steals-per-interval S requests/worker/s R
//! ```
//!
//! Every campaigner and every worker is a child process (this binary re-executed); "kill" is
//! SIGKILL of the leader's (or worker's) process, so its lease simply runs out; "graceful" is
//! SIGTERM, on which the child resigns (or leaves the group). Run it under the emulators:
//!
//! ```text
//! scripts/cosmos run -- scripts/azurite run --only azurite,redis -- \
//!   cargo run -p azstore-examples --features redis,cosmos --example leader_failover -- blob redis cosmos
//! ```
//!
//! Environment: `LEADER_KILL_TRIALS` (default 3), `LEADER_GRACEFUL_TRIALS` (default 5),
//! `LEADER_STEADY_SECS` (default 20), `LEADER_SCENARIOS` (`failover,ownership`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use azstore::leader::{Election, ElectionOptions, ShardEvent, ShardGroup, ShardOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const LEASE: u64 = 15;
const SHARDS: usize = 32;
const INTERVAL: Duration = Duration::from_secs(2);
const SLOTS: usize = 10;

fn lock_options(label: &str) -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(LEASE).unwrap())
        .label(label)
}

fn env_num(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

// ---------------------------------------------------------------- children

/// Campaign, print `LEADING <epoch>`, lead until SIGTERM, then resign and exit.
async fn child_campaign<C: azstore::leader::Campaign>(lock: C) -> Res<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let election = Election::new(lock, ElectionOptions::default())?;
    let l = election.campaign().await?;
    say(&format!("LEADING {}", l.epoch()));
    tokio::select! {
        _ = term.recv() => { l.resign().await?; }
        loss = l.lost() => { say(&format!("LOST {loss}")); }
    }
    Ok(())
}

/// Join the group, print `ACQ shard epoch` / `LOST shard` and `REQ n ms owned` each interval;
/// leave on SIGTERM.
async fn child_worker<F: azstore::leader::LockFactory>(locks: F, group: &str, id: &str) -> Res<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let g = ShardGroup::with_count(
        locks,
        group,
        SHARDS,
        ShardOptions::default()
            .interval(INTERVAL)
            .member_slots(SLOTS),
    )?;
    let mut w = g.join(id)?;
    let mut tick = tokio::time::interval(INTERVAL);
    loop {
        tokio::select! {
            e = w.recv() => match e {
                Some(ShardEvent::Acquired { shard, epoch }) => say(&format!("ACQ {shard} {epoch}")),
                Some(ShardEvent::Lost { shard }) => say(&format!("LOST {shard}")),
                Some(_) => {}
                None => return Ok(()),
            },
            _ = tick.tick() => {
                let (n, t) = w.requests();
                say(&format!("REQ {n} {} {}", t.as_millis(), w.owned().len()));
            }
            _ = term.recv() => w.stop(),
        }
    }
}

async fn child(args: &[String]) -> Res<()> {
    let (kind, backend, name, id) = (&args[0], &args[1], &args[2], &args[3]);
    macro_rules! with_backend {
        ($lock:ident, $locks:ident, $body:expr) => {
            match backend.as_str() {
                "blob" => {
                    let c = azstore::blob::BlobServiceClient::new(
                        &azstore::StorageAccount::from_env()?,
                    )?
                    .container("leader-harness")?;
                    let $lock =
                        || azstore::blob::BlobLock::with_options(c.clone(), name, lock_options(id));
                    let $locks = || azstore::blob::BlobLocks::new(c.clone(), lock_options(id));
                    $body
                }
                "redis" => {
                    let r = azstore::redis::RedisClient::from_env()?;
                    let $lock = || {
                        azstore::redis::RedisLock::with_options(r.clone(), name, lock_options(id))
                    };
                    let $locks = || azstore::redis::RedisLocks::new(r.clone(), lock_options(id));
                    $body
                }
                _ => {
                    let c = cosmos_container().await?;
                    let $lock = || {
                        let item = name.replace('/', ":");
                        azstore::cosmos::CosmosLock::with_options(
                            c.clone(),
                            &item,
                            item.as_str(),
                            lock_options(id),
                        )
                    };
                    let $locks = || azstore::cosmos::CosmosLocks::new(c.clone(), lock_options(id));
                    $body
                }
            }
        };
    }
    if kind == "campaign" {
        with_backend!(lock, _locks, child_campaign(lock()?).await)
    } else {
        with_backend!(_lock, locks, child_worker(locks(), name, id).await)
    }
}

async fn cosmos_container() -> Res<azstore::cosmos::CosmosContainer> {
    let client = azstore::cosmos::CosmosClient::from_env()?;
    let db = client.database("leader-harness")?;
    db.create_if_not_exists().await?;
    let c = db.container("locks", "/pk")?;
    c.create_if_not_exists().await?;
    Ok(c)
}

// ---------------------------------------------------------------- parent

struct Fleet {
    tx: mpsc::UnboundedSender<(String, String, Instant)>,
    rx: mpsc::UnboundedReceiver<(String, String, Instant)>,
    children: HashMap<String, Child>,
}

impl Fleet {
    fn new() -> Fleet {
        let (tx, rx) = mpsc::unbounded_channel();
        Fleet {
            tx,
            rx,
            children: HashMap::new(),
        }
    }

    fn spawn(&mut self, kind: &str, backend: &str, name: &str, id: &str) -> Res<()> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--child", kind, backend, name, id])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let tx = self.tx.clone();
        let who = id.to_string();
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = tx.send((who.clone(), l, Instant::now()));
            }
        });
        self.children.insert(id.to_string(), child);
        Ok(())
    }

    fn signal(&mut self, id: &str, sig: i32) {
        if let Some(pid) = self.children.get(id).and_then(Child::id) {
            // SAFETY: kill(2) to a child process this harness started.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
            }
        }
    }

    async fn reap(&mut self, id: &str) {
        if let Some(mut c) = self.children.remove(id) {
            let _ = c.wait().await;
        }
    }

    async fn next(&mut self, within: Duration) -> Res<(String, String, Instant)> {
        Ok(tokio::time::timeout(within, self.rx.recv())
            .await
            .map_err(|_| "no event in time")?
            .ok_or("closed")?)
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    if v.is_empty() {
        return f64::NAN;
    }
    v.sort_by(f64::total_cmp);
    let i = ((p / 100.0) * (v.len() - 1) as f64).round() as usize;
    v[i]
}

async fn failover(backend: &str) -> Res<()> {
    let kills = env_num("LEADER_KILL_TRIALS", 3);
    let gracefuls = env_num("LEADER_GRACEFUL_TRIALS", 5);
    let name = format!("failover/{}-{}", backend, std::process::id());
    let mut fleet = Fleet::new();
    let mut n = 0;
    let mut next_id = || {
        n += 1;
        format!("c{n}")
    };
    let (a, b) = (next_id(), next_id());
    fleet.spawn("campaign", backend, &name, &a)?;
    fleet.spawn("campaign", backend, &name, &b)?;
    let mut leader = loop {
        let (who, line, _) = fleet.next(Duration::from_secs(120)).await?;
        if line.starts_with("LEADING") {
            break who;
        }
    };
    let (mut kill_t, mut grace_t) = (Vec::new(), Vec::new());
    for trial in 0..kills + gracefuls {
        let graceful = trial >= kills;
        // Lead a while (a random point of the renew cycle), then kill or stop the leader.
        let hold = Duration::from_millis(1000 + rand::random::<u64>() % 5000);
        tokio::time::sleep(hold).await;
        let t0 = Instant::now();
        fleet.signal(
            &leader,
            if graceful {
                libc::SIGTERM
            } else {
                libc::SIGKILL
            },
        );
        let old = leader.clone();
        let next = loop {
            let (who, line, at) = fleet.next(Duration::from_secs(120)).await?;
            if line.starts_with("LEADING") && who != old {
                break (who, at);
            }
        };
        let secs = (next.1 - t0).as_secs_f64();
        eprintln!(
            "{backend}: {} trial {trial}: {secs:.2} s",
            if graceful { "graceful" } else { "kill" }
        );
        if graceful { &mut grace_t } else { &mut kill_t }.push(secs);
        fleet.reap(&old).await;
        leader = next.0;
        let id = next_id();
        fleet.spawn("campaign", backend, &name, &id)?;
    }
    println!(
        "failover: {backend} lease {LEASE} s kill p50 {:.2} s p99 {:.2} s ({} trials) graceful p50 {:.2} s p99 {:.2} s ({} trials)",
        pct(&mut kill_t.clone(), 50.0),
        pct(&mut kill_t, 99.0),
        kills,
        pct(&mut grace_t.clone(), 50.0),
        pct(&mut grace_t, 99.0),
        gracefuls
    );
    for id in fleet.children.keys().cloned().collect::<Vec<_>>() {
        fleet.signal(&id, libc::SIGTERM);
        fleet.reap(&id).await;
    }
    Ok(())
}

/// Ownership from the event stream; panics on a shard owned twice.
#[derive(Default)]
struct Owners {
    owner: BTreeMap<String, String>,
    epochs: HashMap<String, u64>,
    changes: usize,
    /// (worker, interval bucket) -> steals: acquisitions of shards that a live worker had
    /// let go while holding no more than ⌊N/M⌋ (not a release of its surplus).
    steals: HashMap<(String, u64), usize>,
    /// Shards whose last release was of the releaser's surplus (it held more than ⌊N/M⌋).
    surplus: BTreeSet<String>,
    last_owner: HashMap<String, String>,
    requests: HashMap<String, (u64, u64, usize)>,
}

impl Owners {
    fn apply(&mut self, who: &str, line: &str, bucket: u64, alive: &BTreeSet<String>) {
        let parts: Vec<&str> = line.split_whitespace().collect();
        match parts.as_slice() {
            ["ACQ", shard, epoch] => {
                let epoch: u64 = epoch.parse().unwrap_or(0);
                if let Some(o) = self.owner.get(*shard) {
                    panic!("{shard} acquired by {who} while {o} owns it");
                }
                if let Some(prev) = self.epochs.insert(shard.to_string(), epoch) {
                    assert!(epoch > prev, "{shard}: epoch {epoch} after {prev}");
                }
                let surplus = self.surplus.remove(*shard);
                if let Some(prev) = self.last_owner.get(*shard)
                    && prev != who
                    && alive.contains(prev)
                    && !surplus
                {
                    *self.steals.entry((who.to_string(), bucket)).or_default() += 1;
                }
                self.owner.insert(shard.to_string(), who.to_string());
                self.last_owner.insert(shard.to_string(), who.to_string());
                self.changes += 1;
            }
            ["LOST", shard] => {
                let held = self.owner.values().filter(|o| o.as_str() == who).count();
                if held > SHARDS / alive.len().max(1) {
                    self.surplus.insert(shard.to_string());
                } else {
                    self.surplus.remove(*shard);
                }
                if self.owner.get(*shard).map(String::as_str) == Some(who) {
                    self.owner.remove(*shard);
                }
                self.changes += 1;
            }
            ["REQ", n, ms, owned] => {
                self.requests.insert(
                    who.to_string(),
                    (
                        n.parse().unwrap_or(0),
                        ms.parse().unwrap_or(1),
                        owned.parse().unwrap_or(0),
                    ),
                );
            }
            _ => {}
        }
    }

    fn balanced(&self, alive: &BTreeSet<String>) -> bool {
        let m = alive.len();
        let (lo, hi) = (SHARDS / m, SHARDS.div_ceil(m));
        let mut load: BTreeMap<&str, usize> = alive.iter().map(|w| (w.as_str(), 0)).collect();
        for o in self.owner.values() {
            match load.get_mut(o.as_str()) {
                Some(c) => *c += 1,
                None => return false,
            }
        }
        self.owner.len() == SHARDS && load.values().all(|c| (lo..=hi).contains(c))
    }
}

async fn ownership(backend: &str) -> Res<()> {
    let group = format!("own-{backend}-{}", std::process::id());
    let mut fleet = Fleet::new();
    let mut st = Owners::default();
    let mut alive: BTreeSet<String> = BTreeSet::new();
    let start = Instant::now();
    let bucket = |at: Instant| (at - start).as_millis() as u64 / INTERVAL.as_millis() as u64;
    // Waits until balanced; returns the seconds it took.
    async fn settle(
        fleet: &mut Fleet,
        st: &mut Owners,
        alive: &BTreeSet<String>,
        bucket: &impl Fn(Instant) -> u64,
        limit: Duration,
    ) -> Res<f64> {
        let t0 = Instant::now();
        while !st.balanced(alive) {
            let left = limit.saturating_sub(t0.elapsed());
            let (who, line, at) = fleet.next(left).await.map_err(|_| "not balanced in time")?;
            st.apply(&who, &line, bucket(at), alive);
        }
        Ok(t0.elapsed().as_secs_f64())
    }
    fleet.spawn("worker", backend, &group, "w1")?;
    alive.insert("w1".into());
    settle(
        &mut fleet,
        &mut st,
        &alive,
        &bucket,
        Duration::from_secs(120),
    )
    .await?;
    for i in 2..=8 {
        let id = format!("w{i}");
        fleet.spawn("worker", backend, &group, &id)?;
        alive.insert(id);
    }
    let up = settle(
        &mut fleet,
        &mut st,
        &alive,
        &bucket,
        Duration::from_secs(180),
    )
    .await?;
    // Kill five: their shards are unowned from the kill on.
    let killed: Vec<String> = (4..=8).map(|i| format!("w{i}")).collect();
    let t_kill = Instant::now();
    for id in &killed {
        fleet.signal(id, libc::SIGKILL);
        alive.remove(id);
    }
    for id in &killed {
        fleet.reap(id).await;
    }
    let orphaned: BTreeSet<String> = st
        .owner
        .iter()
        .filter(|(_, o)| killed.contains(o))
        .map(|(s, _)| s.clone())
        .collect();
    st.owner.retain(|_, o| !killed.contains(o));
    let mut reowned = Vec::new();
    let t0 = Instant::now();
    while !st.balanced(&alive) {
        let left = Duration::from_secs(180).saturating_sub(t0.elapsed());
        let (who, line, at) = fleet
            .next(left)
            .await
            .map_err(|_| "not balanced after the kill")?;
        if killed.contains(&who) {
            continue;
        }
        if let ["ACQ", shard, _] = line.split_whitespace().collect::<Vec<_>>().as_slice()
            && orphaned.contains(*shard)
            && !st.owner.contains_key(*shard)
        {
            reowned.push((at - t_kill).as_secs_f64());
        }
        st.apply(&who, &line, bucket(at), &alive);
    }
    let down = t0.elapsed().as_secs_f64();
    // Steady state.
    let steady = Duration::from_secs(env_num("LEADER_STEADY_SECS", 20) as u64);
    let changes_before = st.changes;
    let t1 = Instant::now();
    while t1.elapsed() < steady {
        match fleet.next(steady.saturating_sub(t1.elapsed())).await {
            Ok((who, line, at)) => st.apply(&who, &line, bucket(at), &alive),
            Err(_) => break,
        }
    }
    let steady_changes = st.changes - changes_before;
    let max_steals = st.steals.values().copied().max().unwrap_or(0);
    let renew = LEASE as f64 / 3.0;
    let rates: Vec<f64> = alive
        .iter()
        .filter_map(|w| st.requests.get(w))
        .map(|(n, ms, owned)| *n as f64 / (*ms as f64 / 1000.0) + (*owned as f64 + 1.0) / renew)
        .collect();
    let rate = rates.iter().sum::<f64>() / rates.len().max(1) as f64;
    // Intervals to balance after the last change the workers could see: the joins, and the
    // end of the killed workers' leases (before it their shards are not free).
    let after_kill = (down - LEASE as f64).max(0.0);
    let k = (up.max(after_kill) / INTERVAL.as_secs_f64()).ceil();
    eprintln!(
        "{backend}: 1->8 balanced in {up:.1} s, 8->3 in {down:.1} s after the kill ({} shards orphaned)",
        orphaned.len()
    );
    println!(
        "ownership: {backend} shards {SHARDS} workers 1->8->3 reowned p99 {:.1} s balanced after {k} intervals steady-changes {steady_changes} max-steals-per-interval {max_steals} requests/worker/s {rate:.1}",
        pct(&mut reowned, 99.0)
    );
    for id in alive.iter() {
        fleet.signal(id, libc::SIGTERM);
    }
    for id in alive.iter() {
        fleet.reap(id).await;
    }
    Ok(())
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        return child(&args[1..]).await;
    }
    let backends: Vec<String> = if args.is_empty() {
        vec!["blob".into()]
    } else {
        args
    };
    let scenarios = std::env::var("LEADER_SCENARIOS").unwrap_or("failover,ownership".into());
    for b in &backends {
        if !["blob", "redis", "cosmos"].contains(&b.as_str()) {
            return Err(format!("unknown backend {b}: blob, redis or cosmos").into());
        }
        if scenarios.contains("failover") {
            failover(b).await?;
        }
        if scenarios.contains("ownership") {
            ownership(b).await?;
        }
    }
    Ok(())
}
