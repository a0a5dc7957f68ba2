//! `cosmos_holder`: a Cosmos DB lock holder process for azstore's `cosmos` pause tests
//! (azstore/tests/it/cosmos.rs; built by `scripts/cosmos`, or with
//! `cargo build -p testkit --features cosmos --bins`).
//!
//! ```text
//! cosmos_holder DATABASE CONTAINER ITEM LOG
//! ```
//!
//! Acquires the `CosmosLock` on ITEM (partition key = ITEM, container partition key path
//! `/pk`) with a 15 s lease (server from `AZSTORE_COSMOS_ENDPOINT` / `AZSTORE_COSMOS_KEY`),
//! prints `ACQUIRED <fencing token>`, then appends `A <n> <token>` lines to LOG every 20 ms for
//! as long as `held.is_held()` says it holds the lock. When it sees the loss it prints `LOST`
//! and exits 0. Errors exit 1.

use std::io::Write;
use std::time::Duration;

use azstore::cosmos::CosmosClient;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [db, container, item, log] = args.as_slice() else {
        eprintln!("usage: cosmos_holder DATABASE CONTAINER ITEM LOG");
        return std::process::ExitCode::from(2);
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(run(db, container, item, log)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("cosmos_holder: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

async fn run(db: &str, container: &str, item: &str, log: &str) -> azstore::Result<()> {
    let container = CosmosClient::from_env()?
        .database(db)?
        .container(container, "/pk")?;
    let lock = azstore::cosmos::CosmosLock::with_options(
        container,
        item,
        item,
        LockOptions::default().duration(LeaseDuration::seconds(15)?),
    )?;
    let held = lock
        .acquire_within(Duration::from_secs(30))
        .await?
        .ok_or_else(|| azstore::Error::invalid_input("lock busy"))?;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(log)
        .map_err(|e| azstore::Error::invalid_input(format!("{log}: {e}")))?;
    let token = held.fencing_token();
    say(&format!("ACQUIRED {token}"));
    let mut n = 0u64;
    while held.is_held() {
        writeln!(file, "A {n} {token}").expect("append");
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    say("LOST");
    let _ = held.release().await;
    Ok(())
}
