//! `update` contention on ONE Redis key vs ONE blob (a JSON counter), 1 and 16 concurrent
//! writers, side by side in one run: committed updates per second, wasted attempts per commit
//! (write refusals: a stale etag at WATCH, a nil EXEC, a 412 or a create race), p50/p99
//! commit latency, and a check that the counter equals the commits (no lost update).
//!
//! Every writer has its own client (its own Redis connection pool, its own HTTP pool), as
//! separate processes would; all use `UpdatePolicy::default()`. The rows are interleaved over
//! several rounds so that drift of the shared machine affects both stores alike.
//!
//! Run: `scripts/azurite run --only azurite,redis -- cargo bench -p azstore --features redis --bench redis_contention`
//! (`UPDATE_BENCH_SECS` sets the seconds per row, default 2.5; `UPDATE_BENCH_ROUNDS` the
//! rounds, default 3).

use std::time::Duration;

use azstore::redis::{RedisClient, RedisJson};
use azstore::update::{BlobJson, Decision, UpdatePolicy, Versioned, update};
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};
use tokio::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Store {
    Blob,
    Redis,
}

#[derive(Default)]
struct Row {
    commits: u64,
    wasted: u64,
    latencies: Vec<Duration>,
    secs: f64,
    counter_ok: bool,
}

impl Row {
    fn quantile(&mut self, q: f64) -> Duration {
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() as f64) * q) as usize;
        self.latencies
            .get(i)
            .or(self.latencies.last())
            .copied()
            .unwrap_or_default()
    }
}

struct Env {
    account: StorageAccount,
    container: String,
    redis_url_key: String,
}

fn blob_counter(env: &Env, name: &str) -> BlobJson<u64> {
    let blob = BlobServiceClient::new(&env.account)
        .and_then(|s| s.container(&env.container))
        .and_then(|c| c.blob(name))
        .expect("blob client");
    BlobJson::new(blob)
}

fn redis_counter(env: &Env, name: &str) -> RedisJson<u64> {
    RedisClient::from_env()
        .and_then(|c| c.json(&format!("{}:{name}", env.redis_url_key)))
        .expect("redis client")
}

/// Runs `writers` tasks incrementing the counter until the deadline.
async fn run<R>(make: impl Fn() -> R, writers: usize, secs: f64) -> Row
where
    R: Versioned<Value = u64> + Send + Sync + 'static,
{
    let start = Instant::now() + Duration::from_millis(50);
    let deadline = start + Duration::from_secs_f64(secs);
    let mut tasks = Vec::new();
    for _ in 0..writers {
        let counter = make();
        tasks.push(tokio::spawn(async move {
            let policy = UpdatePolicy::default();
            let mut row = Row::default();
            tokio::time::sleep_until(start).await;
            while Instant::now() < deadline {
                let t0 = Instant::now();
                let done = tokio::time::timeout_at(
                    deadline,
                    update(&counter, &policy, |c| {
                        Decision::Write(c.copied().unwrap_or(0) + 1)
                    }),
                )
                .await;
                match done {
                    Err(_) => break,
                    Ok(Err(e)) => panic!("writer failed: {e}"),
                    Ok(Ok(o)) => {
                        row.commits += 1;
                        row.wasted += u64::from(o.conflicts);
                        row.latencies.push(t0.elapsed());
                    }
                }
            }
            row
        }));
    }
    let mut all = Row {
        secs,
        ..Row::default()
    };
    for t in tasks {
        let r = t.await.expect("writer task");
        all.commits += r.commits;
        all.wasted += r.wasted;
        all.latencies.extend(r.latencies);
    }
    // A writer cut off at the deadline may still have landed its write: allow one per writer.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let counter = make();
    let value = counter
        .read()
        .await
        .expect("read counter")
        .map_or(0, |c| c.value);
    all.counter_ok = value >= all.commits && value <= all.commits + writers as u64;
    all
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let hint = "Run with: scripts/azurite run --only azurite,redis -- cargo bench -p azstore --features redis --bench redis_contention";
        let account = StorageAccount::from_env().unwrap_or_else(|e| panic!("{e}\n{hint}"));
        RedisClient::from_env()
            .unwrap_or_else(|e| panic!("{e}\n{hint}"))
            .ping()
            .await
            .unwrap_or_else(|e| panic!("Redis is not reachable: {e}\n{hint}"));
        let secs: f64 = std::env::var("UPDATE_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.5);
        let rounds: usize = std::env::var("UPDATE_BENCH_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3);
        let container = format!("redisbench{}", std::process::id());
        BlobServiceClient::new(&account)
            .expect("client")
            .container(&container)
            .expect("container")
            .create_if_not_exists()
            .await
            .expect("create container");
        let env = Env {
            account,
            container,
            redis_url_key: format!("azstore-bench:{}", std::process::id()),
        };

        let cases = [
            (Store::Blob, 1),
            (Store::Redis, 1),
            (Store::Blob, 16),
            (Store::Redis, 16),
        ];
        let mut totals: Vec<Row> = cases.iter().map(|_| Row::default()).collect();
        for round in 0..rounds {
            for (i, (store, writers)) in cases.iter().enumerate() {
                let name = format!("counter-{writers}-{round}");
                let row = match store {
                    Store::Blob => {
                        let seed = blob_counter(&env, &name);
                        seed.blob()
                            .upload("0", &Conditions::none())
                            .await
                            .expect("seed blob");
                        run(|| blob_counter(&env, &name), *writers, secs).await
                    }
                    Store::Redis => {
                        redis_counter(&env, &name).overwrite(&0).await.expect("seed key");
                        run(|| redis_counter(&env, &name), *writers, secs).await
                    }
                };
                let t = &mut totals[i];
                t.commits += row.commits;
                t.wasted += row.wasted;
                t.latencies.extend(row.latencies);
                t.secs += row.secs;
                t.counter_ok = if round == 0 {
                    row.counter_ok
                } else {
                    t.counter_ok && row.counter_ok
                };
            }
        }

        println!(
            "update() contention on one key: {rounds} round(s) x {secs} s per row, default UpdatePolicy"
        );
        println!(
            "{:<7} {:>7} {:>11} {:>16} {:>9} {:>9} {:>10}",
            "store", "writers", "commits/s", "wasted/commit", "p50 ms", "p99 ms", "no loss"
        );
        for ((store, writers), row) in cases.iter().zip(totals.iter_mut()) {
            let rate = row.commits as f64 / row.secs.max(f64::EPSILON);
            let wasted = row.wasted as f64 / (row.commits.max(1) as f64);
            let p50 = row.quantile(0.5).as_secs_f64() * 1e3;
            let p99 = row.quantile(0.99).as_secs_f64() * 1e3;
            println!(
                "{:<7} {:>7} {:>11.0} {:>16.2} {:>9.2} {:>9.2} {:>10}",
                format!("{store:?}").to_lowercase(),
                writers,
                rate,
                wasted,
                p50,
                p99,
                if row.counter_ok { "ok" } else { "LOST" }
            );
        }
        if totals.iter().any(|r| !r.counter_ok) {
            eprintln!("an update was lost: the counter does not match the commits");
            std::process::exit(1);
        }
    });
}
