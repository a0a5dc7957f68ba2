//! Contention on ONE Cosmos DB item: 16 writers increment a counter item until 400 commits,
//! through azstore's `update()` and through the plain If-Match retry loop of the seed article
//! (read, change, replace with `If-Match`, on 412 start over at once), side by side in one
//! run. Reported per row: commits per second, wasted writes per commit (writes refused with
//! 412, or 409 for the create race), p50/p99 commit latency, and whether the stored counter
//! equals the commits (no lost update).
//!
//! Every writer has its own client (its own HTTP pool), as separate processes would; the
//! `update()` writers still take turns, being in one process (the item's `Versioned::key`). The two
//! loops alternate over several rounds (their order swapped each round) so that drift of the
//! shared machine affects both alike.
//!
//! Run: `scripts/cosmos run -- cargo bench -p azstore --features cosmos --bench cosmos_contention`
//! (`COSMOS_BENCH_COMMITS` sets the commits per row, default 400; `COSMOS_BENCH_ROUNDS` the
//! rounds, default 3). An untimed warm-up of 100 commits per loop runs first.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use azstore::cosmos::{CosmosClient, CosmosContainer, CosmosItem};
use azstore::update::{Decision, UpdatePolicy, update};
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

const WRITERS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq)]
enum Loop {
    Update,
    PlainIfMatch,
}

#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Counter {
    n: u64,
}

#[derive(Default)]
struct Row {
    commits: u64,
    wasted: u64,
    latencies: Vec<Duration>,
    secs: f64,
    counter: u64,
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

fn counter_in(database: &str, id: &str) -> CosmosItem<Counter> {
    CosmosClient::from_env()
        .and_then(|c| c.database(database))
        .and_then(|d| d.container("bench", "/id"))
        .and_then(|c| c.item(id, id))
        .expect("cosmos client")
}

/// One commit through the seed's loop; the writes refused on the way.
async fn plain_increment(item: &CosmosItem<Counter>) -> u64 {
    let mut wasted = 0;
    loop {
        let current = item.read().await.expect("read");
        let result = match current {
            None => item.create(&Counter { n: 1 }, "").await,
            Some(cur) => {
                item.replace(&Counter { n: cur.value.n + 1 }, &cur.etag, "")
                    .await
            }
        };
        match result {
            Ok(_) => return wasted,
            Err(e) if e.is_precondition_failed() || e.is_conflict() => wasted += 1,
            Err(e) => panic!("plain writer failed: {e}"),
        }
    }
}

async fn run(how: Loop, database: &str, id: &str, target: u64) -> Row {
    let committed = Arc::new(AtomicU64::new(0));
    let start = Instant::now() + Duration::from_millis(50);
    let mut tasks = Vec::new();
    for _ in 0..WRITERS {
        let item = counter_in(database, id);
        let committed = committed.clone();
        tasks.push(tokio::spawn(async move {
            let policy = UpdatePolicy::default();
            let mut row = Row::default();
            tokio::time::sleep_until(start).await;
            while committed.load(Ordering::SeqCst) < target {
                let t0 = Instant::now();
                let wasted = match how {
                    Loop::Update => {
                        let o = update(&item, &policy, |c: Option<&Counter>| {
                            Decision::Write(Counter {
                                n: c.map_or(0, |c| c.n) + 1,
                            })
                        })
                        .await
                        .unwrap_or_else(|e| panic!("update writer failed: {e}"));
                        u64::from(o.conflicts)
                    }
                    Loop::PlainIfMatch => plain_increment(&item).await,
                };
                committed.fetch_add(1, Ordering::SeqCst);
                row.commits += 1;
                row.wasted += wasted;
                row.latencies.push(t0.elapsed());
            }
            row
        }));
    }
    let mut all = Row::default();
    for t in tasks {
        let r = t.await.expect("writer task");
        all.commits += r.commits;
        all.wasted += r.wasted;
        all.latencies.extend(r.latencies);
    }
    all.secs = start.elapsed().as_secs_f64();
    all.counter = counter_in(database, id)
        .read()
        .await
        .expect("read counter")
        .map_or(0, |c| c.value.n);
    all
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let hint = "Run with: scripts/cosmos run -- cargo bench -p azstore --features cosmos --bench cosmos_contention";
        let client = CosmosClient::from_env().unwrap_or_else(|e| panic!("{e}\n{hint}"));
        let target: u64 = std::env::var("COSMOS_BENCH_COMMITS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(400);
        let rounds: usize = std::env::var("COSMOS_BENCH_ROUNDS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(3);
        let database = format!("cosmosbench{}", std::process::id());
        let db = client.database(&database).expect("database");
        db.create_if_not_exists()
            .await
            .unwrap_or_else(|e| panic!("the Cosmos DB server is not reachable: {e}\n{hint}"));
        let container: CosmosContainer = db.container("bench", "/id").expect("container");
        container.create_if_not_exists().await.expect("container");

        // Warm-up, not reported: the server's first requests and the pools' first
        // connections would otherwise land in whichever loop runs first.
        for how in [Loop::Update, Loop::PlainIfMatch] {
            run(how, &database, &format!("warm{how:?}"), 100).await;
        }
        println!(
            "{WRITERS} writers incrementing one Cosmos DB item to {target} commits; {rounds} rounds, order alternating"
        );
        println!(
            "{:<6} {:<16} {:>9} {:>10} {:>15} {:>9} {:>9} {:>8}",
            "round", "loop", "commits", "commits/s", "wasted/commit", "p50", "p99", "counter"
        );
        let mut totals = [(0u64, 0u64, 0f64), (0, 0, 0.0)];
        for round in 0..rounds {
            let order = if round % 2 == 0 {
                [Loop::Update, Loop::PlainIfMatch]
            } else {
                [Loop::PlainIfMatch, Loop::Update]
            };
            for how in order {
                let id = format!("c{round}{how:?}");
                let mut row = run(how, &database, &id, target).await;
                let (p50, p99) = (row.quantile(0.5), row.quantile(0.99));
                let ok = if row.counter == row.commits { "ok" } else { "LOST" };
                println!(
                    "{:<6} {:<16} {:>9} {:>10.1} {:>15.2} {:>9.1?} {:>9.1?} {:>5} {ok}",
                    round + 1,
                    format!("{how:?}"),
                    row.commits,
                    row.commits as f64 / row.secs,
                    row.wasted as f64 / row.commits.max(1) as f64,
                    p50,
                    p99,
                    row.counter,
                );
                assert_eq!(row.counter, row.commits, "{how:?} lost an update");
                let t = &mut totals[how as usize];
                t.0 += row.commits;
                t.1 += row.wasted;
                t.2 += row.secs;
            }
        }
        let rate = |t: (u64, u64, f64)| t.0 as f64 / t.2;
        let waste = |t: (u64, u64, f64)| t.1 as f64 / t.0.max(1) as f64;
        println!(
            "all rounds: update() {:.1} commits/s, {:.2} wasted/commit | plain If-Match loop {:.1} commits/s, {:.2} wasted/commit | ratio {:.2}x",
            rate(totals[0]),
            waste(totals[0]),
            rate(totals[1]),
            waste(totals[1]),
            rate(totals[0]) / rate(totals[1]),
        );
        db.delete().await.expect("delete database");
    });
}
