//! `lease_holder`: a lock holder process for the pause tests (azstore/tests/it/pause.rs).
//!
//! ```text
//! lease_holder CONTAINER BLOB LOG MODE
//! ```
//!
//! Acquires the `BlobLock` CONTAINER/BLOB with a 15 s lease (connection string from
//! `AZURE_STORAGE_CONNECTION_STRING`), prints `ACQUIRED <fencing token>`, then appends
//! `A <n>` lines to LOG every 20 ms for as long as the lock says it is held, asking in one of
//! three ways (MODE):
//!
//! * `async-is-held` — `held.is_held()` in an async loop;
//! * `async-check` — `held.check()` in an async loop;
//! * `thread-is-held` — `held.is_held()` from a plain OS thread.
//!
//! When it sees the loss it prints `LOST <clock reading in ns>` (`azstore::clock::Clock::system`,
//! comparable across processes on Linux) and exits 0; a task waiting on `held.lost()` prints
//! `SIGNAL <ns>` when that wakes. Errors exit 1.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use azstore::blob::BlobLock;
use azstore::clock::Clock;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use azstore::{StorageAccount, blob::BlobServiceClient};

const PERIOD: Duration = Duration::from_millis(20);

fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [container, blob, log, mode] = args.as_slice() else {
        eprintln!(
            "usage: lease_holder CONTAINER BLOB LOG async-is-held|async-check|thread-is-held"
        );
        return std::process::ExitCode::from(2);
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    match rt.block_on(run(container, blob, log, mode)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("lease_holder: {e}");
            std::process::ExitCode::from(1)
        }
    }
}

fn say(line: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

async fn run(container: &str, blob: &str, log: &str, mode: &str) -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let container = BlobServiceClient::new(&account)?.container(container)?;
    let lock = BlobLock::with_options(
        container,
        blob,
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
    let clock = Clock::system();
    let signal = held.lost();
    let signal_clock = clock.clone();
    tokio::spawn(async move {
        let _ = signal.await;
        say(&format!("SIGNAL {}", signal_clock.now().as_nanos()));
    });
    say(&format!("ACQUIRED {}", held.fencing_token()));
    let mut n = 0u64;
    match mode {
        "async-is-held" | "async-check" => {
            let check = mode == "async-check";
            loop {
                let held_now = if check {
                    held.check().is_ok()
                } else {
                    held.is_held()
                };
                if !held_now {
                    break;
                }
                writeln!(file, "A {n}").expect("append");
                n += 1;
                tokio::time::sleep(PERIOD).await;
            }
        }
        "thread-is-held" => {
            let held = Arc::new(held);
            let h = held.clone();
            let writer = std::thread::spawn(move || {
                while h.is_held() {
                    writeln!(file, "A {n}").expect("append");
                    n += 1;
                    std::thread::sleep(PERIOD);
                }
            });
            writer.join().expect("writer thread");
            say(&format!("LOST {}", clock.now().as_nanos()));
            // Let the lost() task print, then exit without releasing (the lease is gone).
            tokio::time::sleep(Duration::from_millis(200)).await;
            return Ok(());
        }
        other => {
            return Err(azstore::Error::invalid_input(format!(
                "unknown mode {other}"
            )));
        }
    }
    say(&format!("LOST {}", clock.now().as_nanos()));
    tokio::time::sleep(Duration::from_millis(200)).await;
    let _ = held.release().await;
    Ok(())
}
