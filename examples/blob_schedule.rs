//! The sports-event schedule from "ETags, Optimistic Concurrency and Azure": the whole
//! schedule is one JSON blob, and many update services change different competitions at the
//! same time. With `update`, none of their changes is lost — including the race to create
//! the blob when it does not exist yet.
//!
//! Run against the local emulator:
//!
//! ```text
//! scripts/azurite run -- cargo run --example blob_schedule
//! ```
//!
//! (or set `AZURE_STORAGE_CONNECTION_STRING` for a real account).

use std::collections::BTreeMap;
use std::time::Instant;

use azstore::blob::BlobJson;
use azstore::update::{Change, Decision, UpdatePolicy, update};
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};
use serde::{Deserialize, Serialize};

/// One competition's entry in the schedule.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Competition {
    venue: String,
    starts_at: String,
    /// How many times this entry was updated.
    revision: u32,
}

/// discipline -> competition -> entry
type Schedule = BTreeMap<String, BTreeMap<String, Competition>>;

const DISCIPLINES: [(&str, &[&str]); 4] = [
    ("athletics", &["100m", "200m", "marathon", "long jump"]),
    ("swimming", &["50m free", "200m medley", "4x100m relay"]),
    ("cycling", &["road race", "time trial", "keirin"]),
    ("rowing", &["single sculls", "eights"]),
];
const UPDATES_PER_COMPETITION: u32 = 5;

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let container = BlobServiceClient::new(&account)?.container("schedule-example")?;
    container.create_if_not_exists().await?;
    let blob = container.blob("event-schedule.json")?;
    // Start from nothing, so the first writers race to create the blob.
    match blob.delete(&Conditions::none()).await {
        Err(e) if !e.is_not_found() => return Err(e),
        _ => {}
    }

    let started = Instant::now();
    let mut tasks = Vec::new();
    for (discipline, competitions) in DISCIPLINES {
        for (i, competition) in competitions.iter().enumerate() {
            // Each update service is independent: its own client, as in its own process.
            let schedule = BlobJson::<Schedule>::new(
                BlobServiceClient::new(&account)?
                    .container(container.name())?
                    .blob(blob.name())?,
            );
            tasks.push(tokio::spawn(async move {
                let mut stats = (0u32, 0u32, false);
                for round in 1..=UPDATES_PER_COMPETITION {
                    let venue = format!("{discipline} venue {}", 1 + (i as u32 + round) % 3);
                    let starts_at = format!("2026-08-{:02}T{:02}:00", 1 + round, 9 + i);
                    // The closure may run several times: it only computes the new schedule.
                    let done = update(&schedule, &UpdatePolicy::default(), |current| {
                        let mut s = current.cloned().unwrap_or_default();
                        let entry = s
                            .entry(discipline.to_string())
                            .or_default()
                            .entry(competition.to_string())
                            .or_insert(Competition {
                                venue: String::new(),
                                starts_at: String::new(),
                                revision: 0,
                            });
                        if entry.revision >= round {
                            return Decision::NoChange; // already applied: send nothing
                        }
                        entry.venue = venue.clone();
                        entry.starts_at = starts_at.clone();
                        entry.revision = round;
                        Decision::Write(s)
                    })
                    .await?;
                    stats.0 += done.attempts;
                    stats.1 += done.conflicts;
                    stats.2 |= done.change == Change::Created;
                }
                Ok::<_, azstore::Error>(stats)
            }));
        }
    }

    let (mut attempts, mut conflicts, mut creators) = (0, 0, 0);
    for t in tasks {
        let (a, c, created) = t.await.expect("task panicked")?;
        attempts += a;
        conflicts += c;
        creators += u32::from(created);
    }
    let elapsed = started.elapsed();

    let final_schedule = azstore::update::Versioned::read(&BlobJson::<Schedule>::new(blob))
        .await?
        .expect("the schedule exists");
    let mut missing = Vec::new();
    for (discipline, competitions) in DISCIPLINES {
        for competition in competitions {
            let entry = final_schedule
                .value
                .get(discipline)
                .and_then(|d| d.get(*competition));
            if entry.map(|e| e.revision) != Some(UPDATES_PER_COMPETITION) {
                missing.push(format!("{discipline}/{competition}: {entry:?}"));
            }
        }
    }
    let writers: usize = DISCIPLINES.iter().map(|(_, c)| c.len()).sum();
    println!(
        "{writers} concurrent writers x {UPDATES_PER_COMPETITION} updates in {elapsed:.2?}: \
         {attempts} attempts, {conflicts} conflicts, {creators} created the blob"
    );
    println!(
        "{}",
        serde_json::to_string_pretty(&final_schedule.value).unwrap_or_default()
    );
    if !missing.is_empty() || creators != 1 {
        eprintln!("LOST UPDATES: {missing:?} (creators: {creators})");
        std::process::exit(1);
    }
    println!("every update is present; exactly one writer created the blob");
    Ok(())
}
