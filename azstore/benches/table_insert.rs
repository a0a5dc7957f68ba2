//! Entities inserted per second against Azurite: single Insert Entity requests vs 100-operation
//! entity group transactions, with the client's CPU time per entity (getrusage of this
//! process; Azurite runs in its own process). Printed side by side; single inserts are the
//! baseline.
//!
//! Run: `scripts/azurite run -- cargo bench --bench table_insert`

use std::time::{Duration, Instant};

use azstore::StorageAccount;
use azstore::table::{Batch, Entity, TableClient, TableServiceClient};

const SINGLE: usize = 1_000;
const BATCHES: usize = 30;
const CONCURRENT: usize = 8;

fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass; no other invariants.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    if rc != 0 {
        return Duration::ZERO;
    }
    let tv = |t: libc::timeval| {
        Duration::from_secs(t.tv_sec as u64) + Duration::from_micros(t.tv_usec as u64)
    };
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

fn entity(pk: &str, i: usize) -> Entity {
    Entity::new(pk, format!("{i:06}"))
        .with("Name", format!("customer {i}"))
        .with("Email", format!("c{i}@contoso.com"))
        .with("Visits", i as i64)
        .with("Score", i as f64 / 3.0)
        .with("Active", i % 2 == 0)
}

struct Measured {
    label: &'static str,
    entities: usize,
    wall: Duration,
    cpu: Duration,
}

impl Measured {
    fn per_sec(&self) -> f64 {
        self.entities as f64 / self.wall.as_secs_f64()
    }
    fn cpu_us_per_entity(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.entities as f64
    }
}

async fn measure<F, Fut>(label: &'static str, entities: usize, f: F) -> Measured
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let (w0, c0) = (Instant::now(), cpu_time());
    f().await;
    Measured {
        label,
        entities,
        wall: w0.elapsed(),
        cpu: cpu_time() - c0,
    }
}

async fn fresh(svc: &TableServiceClient, tag: &str) -> TableClient {
    let t = svc
        .table(&format!("bench{tag}{}", std::process::id()))
        .expect("table name");
    t.create_if_not_exists().await.expect("create table");
    t
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let account = StorageAccount::from_env().unwrap_or_else(|e| {
        panic!("{e}\nRun with: scripts/azurite run -- cargo bench --bench table_insert")
    });
    let svc = TableServiceClient::new(&account).expect("client");

    // Warm up the connection pool and Azurite's JIT.
    let warm = fresh(&svc, "warm").await;
    for i in 0..50 {
        warm.insert(&entity("w", i)).await.expect("warm-up insert");
    }

    let t1 = fresh(&svc, "single").await;
    let single = measure("single inserts (sequential)", SINGLE, || async {
        for i in 0..SINGLE {
            t1.insert(&entity("p", i)).await.expect("insert");
        }
    })
    .await;

    let t2 = fresh(&svc, "conc").await;
    let concurrent = measure("single inserts (8 in flight)", SINGLE, || async {
        let mut tasks = Vec::new();
        for w in 0..CONCURRENT {
            let t = t2.clone();
            tasks.push(tokio::spawn(async move {
                for i in (w..SINGLE).step_by(CONCURRENT) {
                    t.insert(&entity("p", i)).await.expect("insert");
                }
            }));
        }
        for task in tasks {
            task.await.expect("task");
        }
    })
    .await;

    let t3 = fresh(&svc, "batch").await;
    let batched = measure("100-op batches (sequential)", BATCHES * 100, || async {
        for b in 0..BATCHES {
            let mut batch = Batch::new();
            for i in 0..100 {
                batch = batch.insert(&entity(&format!("p{b}"), i));
            }
            let res = t3.submit(&batch).await.expect("batch");
            assert_eq!(res.len(), 100);
        }
    })
    .await;

    let base = single.per_sec();
    println!();
    println!(
        "{:<30} {:>9} {:>10} {:>12} {:>10} {:>14}",
        "mode", "entities", "wall s", "entities/s", "vs single", "client CPU/ent"
    );
    for m in [&single, &concurrent, &batched] {
        println!(
            "{:<30} {:>9} {:>10.2} {:>12.0} {:>9.1}x {:>11.1} µs",
            m.label,
            m.entities,
            m.wall.as_secs_f64(),
            m.per_sec(),
            m.per_sec() / base,
            m.cpu_us_per_entity()
        );
    }

    for t in [warm, t1, t2, t3] {
        t.delete().await.expect("delete table");
    }
}
