//! Shard ownership: a fleet of worker processes shares 12 shards (one lock blob each). Three
//! workers start, two more join (each takes its share of the shards the others release as
//! surplus, at once), one leaves gracefully (its shards are free at once) and one is killed
//! with SIGKILL (its shards are taken once its 15 s lease ends). The balance is printed every two seconds.
//!
//! ```text
//! scripts/demo shard_workers
//! ```
//! (or `scripts/azurite run --only azurite -- cargo run -p azstore-examples --example shard_workers`).

use std::collections::BTreeMap;
use std::io::Write;
use std::process::Stdio;
use std::time::Duration;

use azstore::StorageAccount;
use azstore::blob::BlobLocks;
use azstore::blob::BlobServiceClient;
use azstore::leader::{ShardEvent, ShardGroup, ShardOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;
use tokio::time::Instant;

type Res<T> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

const SHARDS: usize = 12;

/// One worker process: joins, prints `+shard epoch` / `-shard`, leaves on SIGTERM.
async fn worker(container: &str, id: &str) -> Res<()> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let c = BlobServiceClient::new(&StorageAccount::from_env()?)?.container(container)?;
    let locks = BlobLocks::new(
        c,
        LockOptions::default().duration(LeaseDuration::seconds(15)?),
    );
    let group = ShardGroup::with_count(
        locks,
        "fleet",
        SHARDS,
        ShardOptions::default()
            .interval(Duration::from_secs(1))
            .member_slots(8),
    )?;
    let mut w = group.join(id)?;
    loop {
        let line = tokio::select! {
            e = w.recv() => match e {
                Some(ShardEvent::Acquired { shard, epoch }) => format!("+{shard} {epoch}"),
                Some(ShardEvent::Lost { shard }) => format!("-{shard}"),
                Some(_) => continue,
                None => return Ok(()),
            },
            _ = term.recv() => { w.stop(); continue; }
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{line}")?;
        out.flush()?;
    }
}

struct Fleet {
    container: String,
    tx: mpsc::UnboundedSender<(String, String)>,
    children: BTreeMap<String, Child>,
}

impl Fleet {
    fn start(&mut self, id: &str) -> Res<()> {
        let mut child = Command::new(std::env::current_exe()?)
            .args(["--worker", &self.container, id])
            .stdout(Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, who) = (self.tx.clone(), id.to_string());
        tokio::spawn(async move {
            let mut lines = BufReader::new(out).lines();
            while let Ok(Some(l)) = lines.next_line().await {
                let _ = tx.send((who.clone(), l));
            }
        });
        self.children.insert(id.to_string(), child);
        println!("-- {id} starts");
        Ok(())
    }

    fn signal(&mut self, id: &str, sig: i32, what: &str) {
        if let Some(pid) = self.children.get(id).and_then(Child::id) {
            // SAFETY: kill(2) to a child process this example started.
            unsafe {
                libc::kill(pid as libc::pid_t, sig);
            }
            println!("-- {id} {what}");
        }
        // Reaped in the background: it is no longer part of the fleet.
        if let Some(mut c) = self.children.remove(id) {
            tokio::spawn(async move {
                let _ = c.wait().await;
            });
        }
    }
}

#[tokio::main]
async fn main() -> Res<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        return worker(&args[1], &args[2]).await;
    }
    let container = format!("shards-demo-{}", std::process::id());
    let (tx, mut rx) = mpsc::unbounded_channel();
    let mut fleet = Fleet {
        container: container.clone(),
        tx,
        children: BTreeMap::new(),
    };
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let start = Instant::now();
    // The script: (second, action).
    let script: Vec<(u64, &str, &str)> = vec![
        (0, "start", "w1"),
        (0, "start", "w2"),
        (0, "start", "w3"),
        (8, "start", "w4"),
        (8, "start", "w5"),
        (18, "leave", "w2"),
        (24, "kill", "w3"),
    ];
    let mut step = 0;
    let mut print = tokio::time::interval(Duration::from_secs(2));
    while start.elapsed() < Duration::from_secs(50) {
        while step < script.len() && start.elapsed() >= Duration::from_secs(script[step].0) {
            let (_, action, id) = script[step];
            match action {
                "start" => fleet.start(id)?,
                "leave" => fleet.signal(id, libc::SIGTERM, "leaves (SIGTERM: releases at once)"),
                _ => {
                    fleet.signal(id, libc::SIGKILL, "is killed (SIGKILL: its leases run out)");
                    owner.retain(|_, o| o != id);
                }
            }
            step += 1;
        }
        tokio::select! {
            Some((who, line)) = rx.recv() => {
                if let Some(s) = line.strip_prefix('+') {
                    let shard = s.split(' ').next().unwrap_or_default().to_string();
                    owner.insert(shard, who);
                } else if let Some(s) = line.strip_prefix('-') {
                    if owner.get(s) == Some(&who) { owner.remove(s); }
                }
            }
            _ = print.tick() => {
                let mut load: BTreeMap<&str, usize> = BTreeMap::new();
                for o in owner.values() { *load.entry(o.as_str()).or_default() += 1; }
                let shown: Vec<String> = load.iter().map(|(w, n)| format!("{w}:{n}")).collect();
                println!(
                    "t={:>2}s  {}  unowned:{}",
                    start.elapsed().as_secs(),
                    shown.join(" "),
                    SHARDS - owner.len()
                );
            }
        }
    }
    let running: Vec<Child> = std::mem::take(&mut fleet.children).into_values().collect();
    for mut c in running {
        if let Some(pid) = c.id() {
            // SAFETY: kill(2) to a child process this example started.
            unsafe {
                libc::kill(pid as libc::pid_t, libc::SIGTERM);
            }
        }
        let _ = c.wait().await;
    }
    println!("-- the fleet stopped (each worker released its shards on SIGTERM)");
    let c = BlobServiceClient::new(&StorageAccount::from_env()?)?.container(&container)?;
    c.delete(&azstore::Conditions::none()).await?;
    Ok(())
}
