//! Leader election: three replicas campaign on one lock blob; the primary appends to a shared
//! log, every entry tagged with its epoch, and the log refuses an epoch older than the newest it
//! has seen (the fencing that keeps a paused old primary out). The first primary resigns (the
//! hand-over is immediate); a follower watches the changes with `observe()`.
//!
//! ```text
//! scripts/demo leader
//! ```
//! (or `scripts/azurite run --only azurite -- cargo run -p azstore-examples --example leader`).

use std::time::Duration;

use azstore::StorageAccount;
use azstore::blob::BlobJson;
use azstore::blob::BlobLock;
use azstore::blob::{BlobServiceClient, ContainerClient};
use azstore::leader::{Election, ElectionOptions};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use azstore::update::{Change, Decision, UpdatePolicy, Versioned, update};
use serde::{Deserialize, Serialize};

/// The replicated log: entries and the newest epoch it accepted.
#[derive(Debug, Default, Clone, Serialize, Deserialize)]
struct Log {
    epoch: u64,
    entries: Vec<String>,
}

/// Appends `entry` written in `epoch`, unless a newer primary has written already.
async fn append(log: &BlobJson<Log>, epoch: u64, entry: String) -> azstore::Result<bool> {
    let outcome = update(log, &UpdatePolicy::default(), |cur: Option<&Log>| {
        let mut l = cur.cloned().unwrap_or_default();
        if epoch < l.epoch {
            return Decision::NoChange; // a stale primary: refused
        }
        l.epoch = epoch;
        l.entries.push(entry.clone());
        Decision::Write(l)
    })
    .await?;
    Ok(!matches!(outcome.change, Change::Unchanged))
}

async fn replica(container: ContainerClient, name: &'static str) -> azstore::Result<()> {
    let lock = BlobLock::with_options(
        container.clone(),
        "leader/primary",
        LockOptions::default()
            .duration(LeaseDuration::seconds(15)?)
            .label(name),
    )?;
    let election = Election::new(lock, ElectionOptions::default())?;
    let log = BlobJson::<Log>::new(container.blob("leader/log.json")?);
    let leadership = election.campaign().await?;
    let epoch = leadership.epoch();
    println!("{name}: primary in epoch {epoch}");
    for i in 0..3 {
        leadership.check()?;
        let ok = append(&log, epoch, format!("{name} entry {i} (epoch {epoch})")).await?;
        println!(
            "{name}:   wrote entry {i} with epoch {epoch}: {}",
            if ok { "accepted" } else { "refused" }
        );
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    println!("{name}: resigning (the next replica takes over at once)");
    leadership.resign().await?;
    Ok(())
}

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let container = BlobServiceClient::new(&account)?
        .container(&format!("leader-demo-{}", std::process::id()))?;
    container.create_if_not_exists().await?;

    // A follower that never campaigns: it only watches who leads.
    let watcher = Election::new(
        BlobLock::with_options(
            container.clone(),
            "leader/primary",
            LockOptions::default().duration(LeaseDuration::seconds(15)?),
        )?,
        ElectionOptions::default().observe_every(Duration::from_millis(200)),
    )?;
    let mut leaders = watcher.observe();
    let follow = tokio::spawn(async move {
        while leaders.changed().await.is_ok() {
            match &*leaders.borrow() {
                Some(l) => println!("follower: leader is now {l}"),
                None => println!("follower: no leader"),
            }
        }
    });

    let started = std::time::Instant::now();
    let replicas: Vec<_> = ["replica-a", "replica-b", "replica-c"]
        .into_iter()
        .map(|n| tokio::spawn(replica(container.clone(), n)))
        .collect();
    for r in replicas {
        r.await.expect("replica task")?;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;

    // A stale primary (an old epoch) is refused by the log.
    let log = BlobJson::<Log>::new(container.blob("leader/log.json")?);
    let stale = append(&log, 1, "from a paused old primary".into()).await?;
    println!(
        "a write with the stale epoch 1: {}",
        if stale { "accepted (!)" } else { "refused" }
    );
    let l = log.read().await?.expect("the log exists").value;
    println!(
        "log: {} entries, newest epoch {}; three primaries in {:.1} s",
        l.entries.len(),
        l.epoch,
        started.elapsed().as_secs_f64()
    );
    follow.abort();
    container.delete(&azstore::Conditions::none()).await?;
    Ok(())
}
