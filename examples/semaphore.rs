//! A distributed semaphore: 6 workers (tasks here; processes or hosts in real life) share a
//! rate-limited API that allows 2 concurrent callers. Each worker takes one of the 2 permits,
//! calls the "API" under the permit's fencing token, and releases it; the API refuses a token
//! smaller than the largest it has seen for the same slot — so a worker paused past its lease
//! cannot act on a slot that someone else has taken since.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run -p azstore-examples --example semaphore`
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use azstore::StorageAccount;
use azstore::blob::{BlobLocks, BlobServiceClient};
use azstore::lease::LeaseDuration;
use azstore::lock::{LockOptions, Semaphore};

/// Stands in for the protected service: counts concurrent callers and checks tokens per slot.
#[derive(Default)]
struct RateLimitedApi {
    in_flight: AtomicUsize,
    most: AtomicUsize,
    highest: Mutex<HashMap<u32, u64>>,
}

impl RateLimitedApi {
    async fn call(&self, slot: u32, token: u64, who: usize) -> Result<(), String> {
        {
            let mut highest = self.highest.lock().unwrap();
            let seen = highest.entry(slot).or_default();
            if token < *seen {
                return Err(format!("worker {who}: stale token {token} on slot {slot}"));
            }
            *seen = token;
        }
        let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        println!("worker {who} calls the API (slot {slot}, token {token}, {now} in flight)");
        tokio::time::sleep(Duration::from_millis(300)).await;
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let container = BlobServiceClient::new(&account)?.container("examples-semaphore")?;
    container.create_if_not_exists().await?;
    // A crashed worker holds its permit at most 15 s.
    let options = LockOptions::default().duration(LeaseDuration::seconds(15)?);
    let locks = BlobLocks::new(container, options);
    let api = std::sync::Arc::new(RateLimitedApi::default());

    let mut workers = Vec::new();
    for who in 0..6 {
        // Each worker builds its own handle, as a separate process would.
        let sem = Semaphore::new(&locks, "rate-limited-api", 2, &format!("worker-{who}"))?;
        let api = api.clone();
        workers.push(tokio::spawn(async move {
            let Some(permit) = sem.acquire_within(Duration::from_secs(60)).await? else {
                println!("worker {who}: no permit within a minute");
                return Ok::<(), azstore::Error>(());
            };
            let call = api.call(permit.slot(), permit.fencing_token(), who);
            tokio::select! {
                loss = permit.lost() => eprintln!("worker {who}: permit lost, stopping: {loss}"),
                r = call => if let Err(e) = r { eprintln!("{e}") },
            }
            permit.release().await?;
            Ok(())
        }));
    }
    for w in workers {
        w.await.expect("worker")?;
    }
    println!(
        "at most {} calls in flight at once (2 permits)",
        api.most.load(Ordering::SeqCst)
    );
    Ok(())
}
