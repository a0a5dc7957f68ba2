//! The sports-event schedule from "ETags, Optimistic Concurrency and Azure" — on Azure Cosmos
//! DB, where the article's DocumentDb schedule lives today. The whole schedule is one item;
//! eight update services change their own competition in it at the same time through
//! `update()` (read, change, replace with `If-Match: <_etag>`, on 412 start over; the first
//! writers race to create the item, and the losers' 409 is retried as an update). One of
//! them also runs a maintenance step under a `CosmosLock` — the lock item the article builds
//! by creating a pseudo-document, with a lifetime it chooses and a fencing token — and
//! records it in the schedule. At the end every update must be there.
//!
//! Run against the local Cosmos DB server the emulator script starts:
//!
//! ```text
//! scripts/cosmos run -- cargo run -p azstore-examples --features cosmos --example cosmos_schedule
//! ```
//!
//! (or set `AZSTORE_COSMOS_ENDPOINT` and `AZSTORE_COSMOS_KEY` for an Azure account).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use azstore::cosmos::{CosmosClient, CosmosLock, PartitionKey};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use azstore::update::{Change, Decision, UpdatePolicy, update};
use serde::{Deserialize, Serialize};

/// One competition's entry in the schedule.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Competition {
    venue: String,
    starts_at: String,
    /// How many times this entry was updated.
    revision: u32,
}

/// The schedule item.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Schedule {
    event: String,
    competitions: BTreeMap<String, Competition>,
    /// Maintenance steps run under the lock: "<what> (fencing token N)".
    maintenance: Vec<String>,
}

const COMPETITIONS: [&str; 8] = [
    "athletics/100m",
    "athletics/marathon",
    "swimming/50m free",
    "swimming/4x100m relay",
    "cycling/road race",
    "cycling/keirin",
    "rowing/single sculls",
    "rowing/eights",
];
const UPDATES_PER_COMPETITION: u32 = 5;

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let client = CosmosClient::from_env()?;
    let db = client.database("azstore-example")?;
    db.create_if_not_exists().await?;
    let container = db.container("schedules", "/event")?;
    container.create_if_not_exists().await?;
    let event = PartitionKey::from("summer-games-2026");
    // Start from nothing, so that the first writers race to create the item.
    let schedule = container.item::<Schedule>("schedule", event.clone())?;
    schedule.delete_if_exists().await?;

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (i, competition) in COMPETITIONS.into_iter().enumerate() {
        let schedule = container.item::<Schedule>("schedule", event.clone())?;
        let lock = CosmosLock::with_options(
            container.clone(),
            "schedule-maintenance",
            event.clone(),
            LockOptions::default().duration(LeaseDuration::seconds(15)?),
        )?;
        tasks.push(tokio::spawn(async move {
            let mut stats = (0u32, 0u32, false);
            for round in 1..=UPDATES_PER_COMPETITION {
                let venue = format!("venue {}", 1 + (i as u32 + round) % 3);
                let starts_at = format!("2026-08-{:02}T{:02}:00", 1 + round, 9 + i);
                // The closure may run several times: it only computes the new schedule.
                let done = update(&schedule, &UpdatePolicy::default(), |current| {
                    let mut s = current.cloned().unwrap_or_else(|| Schedule {
                        event: "summer-games-2026".into(),
                        ..Schedule::default()
                    });
                    let entry = s.competitions.entry(competition.to_string()).or_default();
                    if entry.revision >= round {
                        return Decision::NoChange; // already applied: send nothing
                    }
                    *entry = Competition {
                        venue: venue.clone(),
                        starts_at: starts_at.clone(),
                        revision: round,
                    };
                    Decision::Write(s)
                })
                .await?;
                stats.0 += done.attempts;
                stats.1 += done.conflicts;
                stats.2 |= done.change == Change::Created;

                // Writer 0 also runs a maintenance step, under the lock, in round 3.
                if i == 0 && round == 3 {
                    let held = lock
                        .acquire_within(Duration::from_secs(60))
                        .await?
                        .expect("nobody else takes the maintenance lock");
                    let token = held.fencing_token();
                    held.check()?; // still ours right before the write
                    update(&schedule, &UpdatePolicy::default(), |current| {
                        let mut s = current.cloned().unwrap_or_default();
                        s.maintenance
                            .push(format!("venues re-checked (fencing token {token})"));
                        Decision::Write(s)
                    })
                    .await?;
                    held.release().await?;
                }
            }
            Ok::<_, azstore::Error>(stats)
        }));
    }

    let (mut attempts, mut conflicts, mut creators) = (0, 0, 0);
    for t in tasks {
        let (a, c, created) = t.await.expect("task panicked")?;
        attempts += a;
        conflicts += c;
        creators += u32::from(created);
    }
    let elapsed = started.elapsed();

    let final_schedule = schedule.read().await?.expect("the schedule exists").value;
    let missing: Vec<_> = COMPETITIONS
        .iter()
        .filter(|c| {
            final_schedule.competitions.get(**c).map(|e| e.revision)
                != Some(UPDATES_PER_COMPETITION)
        })
        .collect();
    println!(
        "{} concurrent writers x {UPDATES_PER_COMPETITION} updates in {elapsed:.2?}: \
         {attempts} attempts, {conflicts} conflicts (412/409) retried, {creators} created the item",
        COMPETITIONS.len()
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&final_schedule).unwrap_or_default()
    );
    if !missing.is_empty() || creators != 1 || final_schedule.maintenance.len() != 1 {
        eprintln!(
            "LOST UPDATES: {missing:?} (creators: {creators}, maintenance: {:?})",
            final_schedule.maintenance
        );
        std::process::exit(1);
    }
    println!(
        "no update was lost: all {} updates and the maintenance step are present; exactly one \
         writer created the item",
        COMPETITIONS.len() as u32 * UPDATES_PER_COMPETITION
    );
    Ok(())
}
