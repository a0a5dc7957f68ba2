//! A distributed lock: several workers (tasks here; processes or hosts in real life) share one
//! `BlobLock`. Each holder gets a fencing token larger than every earlier holder's and passes it
//! to the resource it protects, which refuses smaller ones — so a holder that was paused past
//! its lease cannot overwrite newer work when it wakes up.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run --example blob_lock`
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use azstore::blob::BlobLock;
use azstore::lock::LockOptions;
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};

/// Stands in for a resource that checks fencing tokens (a database row, a file server...).
#[derive(Default)]
struct FencedResource {
    highest_token: AtomicU64,
}

impl FencedResource {
    fn write(&self, token: u64, who: usize) -> Result<(), String> {
        let prev = self.highest_token.fetch_max(token, Ordering::SeqCst);
        if token < prev {
            return Err(format!(
                "worker {who}: token {token} is stale (seen {prev})"
            ));
        }
        println!("worker {who} wrote with fencing token {token}");
        Ok(())
    }
}

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let container =
        BlobServiceClient::new(&account)?.container(&format!("distlock-{}", std::process::id()))?;
    let resource = Arc::new(FencedResource::default());

    let mut workers = Vec::new();
    for who in 0..4 {
        // Created on first use: the container and the lock blob.
        let lock = BlobLock::with_options(
            container.clone(),
            "locks/nightly",
            LockOptions::default().label(format!("worker {who}")),
        )?;
        let resource = resource.clone();
        workers.push(tokio::spawn(async move {
            let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? else {
                println!("worker {who}: gave up waiting");
                return azstore::Result::Ok(());
            };
            let status = lock.status().await?;
            println!(
                "worker {who} holds the lock (token {}, recorded owner: {})",
                held.fencing_token(),
                status.owner.map(|o| o.to_string()).unwrap_or_default()
            );
            tokio::select! {
                loss = held.lost() => println!("worker {who}: lock lost, stopping: {loss}"),
                _ = tokio::time::sleep(Duration::from_millis(300)) => {
                    if let Err(e) = resource.write(held.fencing_token(), who) {
                        println!("{e}");
                    }
                }
            }
            held.release().await?;
            Ok(())
        }));
    }
    for w in workers {
        w.await.expect("worker panicked")?;
    }
    container.delete(&Conditions::none()).await?;
    Ok(())
}
