//! Queue throughput end to end (put + get + delete) against Azurite, with 1 and 8 workers,
//! next to a baseline measured in the same run: one plain request round trip (Get Queue
//! Metadata), the floor for any single operation. Also the `process()` helper consuming
//! with concurrency 8 while 8 producers put. Client CPU per message comes from getrusage
//! (user + system time of this process only; Azurite runs in its own process).
//!
//! Run: `scripts/azurite run -- cargo bench --bench queue_throughput`
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use azstore::StorageAccount;
use azstore::queue::{Delivery, QueueClient, QueueServiceClient, WorkerOptions, process};

const VIS: Duration = Duration::from_secs(30);

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass; no other invariants.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(u.ru_utime) + tv(u.ru_stime)
}

struct Row {
    name: &'static str,
    ops: u64,
    wall: Duration,
    cpu: Duration,
}

async fn measure<F, Fut>(name: &'static str, ops: u64, f: F) -> Row
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (c0, t0) = (cpu_time(), Instant::now());
    f().await;
    Row {
        name,
        ops,
        wall: t0.elapsed(),
        cpu: cpu_time() - c0,
    }
}

/// `workers` tasks, each looping put -> receive 1 -> delete until `total` messages are done.
async fn end_to_end(q: &QueueClient, workers: u64, total: u64) {
    let done = Arc::new(AtomicU64::new(0));
    let mut tasks = Vec::new();
    for w in 0..workers {
        let (q, done) = (q.clone(), done.clone());
        tasks.push(tokio::spawn(async move {
            let mut i = 0u64;
            while done.load(Ordering::Relaxed) < total {
                q.put_message(format!("w{w}-m{i}")).await.expect("put");
                i += 1;
                // The message received may be another worker's: that is fine, each loop
                // still moves one message through put, get and delete.
                if let Some(m) = q.receive_message(VIS).await.expect("get") {
                    q.delete_message(m).await.expect("delete");
                    done.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("worker task");
    }
}

#[tokio::main]
async fn main() {
    let account = StorageAccount::from_env().unwrap_or_else(|e| {
        panic!("{e}\nRun with `scripts/azurite run -- cargo bench --bench queue_throughput`")
    });
    let svc = QueueServiceClient::new(&account).expect("client");
    let q = svc
        .queue(&format!("bench-{}", std::process::id()))
        .expect("name");
    q.create_if_not_exists().await.expect("create queue");
    // Warm up connections.
    for _ in 0..20 {
        q.get_properties().await.expect("warm up");
    }

    let mut rows = Vec::new();
    let n_base = 500;
    rows.push(
        measure("baseline: 1 round trip (Get Metadata)", n_base, || async {
            for _ in 0..n_base {
                q.get_properties().await.expect("get properties");
            }
        })
        .await,
    );
    let n1 = 300;
    rows.push(measure("1 worker: put+get+delete", n1, || end_to_end(&q, 1, n1)).await);
    let n8 = 1000;
    rows.push(measure("8 workers: put+get+delete", n8, || end_to_end(&q, 8, n8)).await);

    let n_proc = 1000u64;
    let consumer_q = q.clone();
    rows.push(
        measure(
            "process(), concurrency 8 (+8 producers)",
            n_proc,
            || async move {
                let worker = process(
                    consumer_q.clone(),
                    |_d: Delivery| async { Ok(()) },
                    WorkerOptions::default()
                        .concurrency(8)
                        .visibility(VIS)
                        .idle_poll(Duration::from_millis(20)),
                )
                .expect("worker");
                let mut producers = Vec::new();
                for p in 0..8 {
                    let q = consumer_q.clone();
                    producers.push(tokio::spawn(async move {
                        for i in 0..n_proc / 8 {
                            q.put_message(format!("p{p}-{i}")).await.expect("put");
                        }
                    }));
                }
                for p in producers {
                    p.await.expect("producer");
                }
                while worker.stats().completed < n_proc {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                worker.shutdown().await.expect("shutdown");
            },
        )
        .await,
    );
    q.delete().await.expect("delete queue");

    let base = &rows[0];
    let base_rate = base.ops as f64 / base.wall.as_secs_f64();
    println!(
        "queue_throughput against Azurite ({} cores shown to tokio)",
        num_threads()
    );
    println!(
        "{:<42} {:>6} {:>8} {:>10} {:>14} {:>16}",
        "scenario", "items", "secs", "items/s", "CPU µs/item", "items/s vs base"
    );
    for r in &rows {
        let rate = r.ops as f64 / r.wall.as_secs_f64();
        println!(
            "{:<42} {:>6} {:>8.2} {:>10.0} {:>14.0} {:>15.2}x",
            r.name,
            r.ops,
            r.wall.as_secs_f64(),
            rate,
            r.cpu.as_secs_f64() * 1e6 / r.ops as f64,
            rate / base_rate
        );
    }
    let one = rows[1].ops as f64 / rows[1].wall.as_secs_f64();
    let eight = rows[2].ops as f64 / rows[2].wall.as_secs_f64();
    println!("8 workers vs 1 worker: {:.2}x messages/s", eight / one);
    println!(
        "(a put+get+delete message is 3 round trips; the baseline row is 1 round trip per item)"
    );
}

fn num_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}
