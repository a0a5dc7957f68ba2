//! Contention goodput of read-modify-write on ONE blob (a JSON counter), with 1, 4, 16 and
//! 64 concurrent writers, side by side:
//!
//! * `update`   — azstore's combinator with its default policy;
//! * `naive`    — the hand-written loop: read, If-Match write, on 412 start over at once;
//! * `lease`    — the same updates serialised through a blob lease (acquire, read, write
//!   with the lease id, release; a refused acquire is retried with full-jitter exponential
//!   backoff from 2 ms up to 100 ms);
//! * `combine`  — the in-process mode: all writers are tasks of ONE process sharing one
//!   `Combiner`, so concurrent updates share one read and one write.
//!
//! In the first three, every writer has its own client built from the account and no state
//! shared with the others, as separate processes would. Printed per row: committed updates per second,
//! wasted attempts per commit (412/409 write refusals; for `lease` refused acquires), p99
//! commit latency, and a check that the counter equals the commits (no lost update).
//!
//! Run: `scripts/azurite run -- cargo bench --bench update_contention`
//! (`UPDATE_BENCH_SECS` sets the seconds per row, default 2.5).

use std::time::Duration;

use azstore::http::{Method, Request};
use azstore::update::{BlobJson, Combiner, Decision, UpdatePolicy, update};
use azstore::{Conditions, StorageAccount, blob::BlobClient, blob::BlobServiceClient};
use tokio::time::Instant;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Mode {
    Update,
    Naive,
    Lease,
    Combine,
}

impl Mode {
    fn name(self) -> &'static str {
        match self {
            Mode::Update => "update",
            Mode::Naive => "naive",
            Mode::Lease => "lease",
            Mode::Combine => "combine",
        }
    }
}

#[derive(Default)]
struct WriterStats {
    commits: u64,
    wasted: u64,
    latencies: Vec<Duration>,
}

const ROUNDS: usize = 4;

struct Row {
    commits: u64,
    wasted: u64,
    latencies: Vec<Duration>,
    counter_ok: bool,
}

impl Row {
    fn merge(&mut self, other: Row) {
        self.commits += other.commits;
        self.wasted += other.wasted;
        self.latencies.extend(other.latencies);
        self.counter_ok &= other.counter_ok;
    }

    fn p99(&mut self) -> Duration {
        self.latencies.sort_unstable();
        let i = ((self.latencies.len() as f64) * 0.99) as usize;
        self.latencies
            .get(i)
            .or(self.latencies.last())
            .copied()
            .unwrap_or_default()
    }
}

fn writer_blob(account: &StorageAccount, container: &str, blob: &str) -> BlobClient {
    BlobServiceClient::new(account)
        .and_then(|s| s.container(container))
        .and_then(|c| c.blob(blob))
        .expect("blob client")
}

async fn read_counter(blob: &BlobClient) -> azstore::Result<Option<(u64, azstore::ETag)>> {
    match blob.download().await {
        Ok(d) => Ok(Some((
            serde_json::from_slice(&d.body).unwrap_or(0),
            d.properties.etag,
        ))),
        Err(e) if e.is_not_found() => Ok(None),
        Err(e) => Err(e),
    }
}

/// The hand-written loop most teams start with: no backoff at all.
async fn naive_increment(blob: &BlobClient, wasted: &mut u64) -> azstore::Result<()> {
    loop {
        let (cond, next) = match read_counter(blob).await? {
            Some((n, etag)) => (Conditions::if_match(&etag), n + 1),
            None => (Conditions::if_not_exists(), 1),
        };
        match blob.upload(next.to_string(), &cond).await {
            Ok(_) => return Ok(()),
            Err(e) if e.is_precondition_failed() || e.is_conflict() => *wasted += 1,
            Err(e) => return Err(e),
        }
    }
}

async fn lease_action(blob: &BlobClient, action: &str, id: &str) -> azstore::Result<()> {
    let path = format!("{}/{}", blob.container_name(), blob.name());
    let mut req = Request::new(Method::Put, &path)
        .query("comp", "lease")
        .header("x-ms-lease-action", action);
    req = if action == "acquire" {
        req.header("x-ms-lease-duration", "15")
            .header("x-ms-proposed-lease-id", id)
    } else {
        req.header("x-ms-lease-id", id)
    };
    blob.pipeline().send(req).await.map(|_| ())
}

/// The pessimistic baseline: take the blob's lease, read, write with it, release.
async fn leased_increment(blob: &BlobClient, wasted: &mut u64) -> azstore::Result<()> {
    let id = uuid::Uuid::new_v4().to_string();
    let mut ceiling_ms = 2.0f64;
    loop {
        match lease_action(blob, "acquire", &id).await {
            Ok(()) => break,
            Err(e) if e.is_lease_error() || e.is_conflict() => {
                *wasted += 1;
                // Exponential backoff with full jitter, 2 ms doubling up to 100 ms.
                let ms = ceiling_ms * rand::random::<f64>();
                ceiling_ms = (ceiling_ms * 2.0).min(100.0);
                tokio::time::sleep(Duration::from_secs_f64(ms / 1000.0)).await;
            }
            Err(e) => return Err(e),
        }
    }
    let lease = azstore::LeaseId::new(id.clone())?;
    let n = read_counter(blob).await?.map_or(0, |(n, _)| n);
    let put = blob
        .upload((n + 1).to_string(), &Conditions::lease(&lease))
        .await;
    lease_action(blob, "release", &id).await?;
    put.map(|_| ())
}

async fn writer(
    mode: Mode,
    account: StorageAccount,
    container: String,
    blob: String,
    start: Instant,
    deadline: Instant,
    combiner: Option<Combiner<BlobJson<u64>>>,
) -> WriterStats {
    let client = writer_blob(&account, &container, &blob);
    let counter = BlobJson::<u64>::new(client.clone());
    let policy = match std::env::var("UPDATE_BENCH_SCALE")
        .ok()
        .and_then(|s| s.parse().ok())
    {
        Some(scale) => UpdatePolicy::default().scale(scale),
        None => UpdatePolicy::default(),
    };
    let mut stats = WriterStats::default();
    tokio::time::sleep_until(start).await;
    while Instant::now() < deadline {
        let t0 = Instant::now();
        let mut wasted = 0;
        let done = tokio::time::timeout_at(deadline, async {
            match mode {
                Mode::Update => update(&counter, &policy, |c| {
                    Decision::Write(c.copied().unwrap_or(0) + 1)
                })
                .await
                .map(|o| wasted = u64::from(o.conflicts)),
                Mode::Naive => naive_increment(&client, &mut wasted).await,
                Mode::Lease => leased_increment(&client, &mut wasted).await,
                Mode::Combine => match &combiner {
                    Some(c) => c
                        .update(|c| Decision::Write(c.copied().unwrap_or(0) + 1))
                        .await
                        .map(|o| wasted = u64::from(o.conflicts)),
                    None => unreachable!("combine rows have a combiner"),
                },
            }
        })
        .await;
        match done {
            Err(_) => break, // the row's time is up
            Ok(Err(e)) => panic!("{} writer failed: {e}", mode.name()),
            Ok(Ok(())) => {
                stats.commits += 1;
                stats.wasted += wasted;
                stats.latencies.push(t0.elapsed());
            }
        }
    }
    stats
}

async fn run_row(
    account: &StorageAccount,
    container: &str,
    mode: Mode,
    writers: usize,
    secs: f64,
    round: usize,
) -> Row {
    let blob = format!("{}-{writers}-{round}", mode.name());
    let setup = writer_blob(account, container, &blob);
    setup.upload("0", &Conditions::none()).await.expect("seed");
    let start = Instant::now() + Duration::from_millis(50);
    let deadline = start + Duration::from_secs_f64(secs);
    // Combining is the in-process mode: all writers of the row share one combiner (one
    // client), unlike every other row.
    let combiner = (mode == Mode::Combine).then(|| {
        Combiner::new(
            BlobJson::<u64>::new(writer_blob(account, container, &blob)),
            UpdatePolicy::default(),
        )
    });
    let mut tasks = Vec::new();
    for _ in 0..writers {
        tasks.push(tokio::spawn(writer(
            mode,
            account.clone(),
            container.to_string(),
            blob.clone(),
            start,
            deadline,
            combiner.clone(),
        )));
    }
    let mut all = WriterStats::default();
    for t in tasks {
        let s = t.await.expect("writer task");
        all.commits += s.commits;
        all.wasted += s.wasted;
        all.latencies.extend(s.latencies);
    }
    // A writer cut off at the deadline may have landed one last write: allow one per writer.
    tokio::time::sleep(Duration::from_millis(50)).await;
    let mut counter_ok = false;
    for _ in 0..40 {
        let v = read_counter(&setup)
            .await
            .ok()
            .flatten()
            .map_or(0, |(n, _)| n);
        counter_ok = v >= all.commits && v <= all.commits + writers as u64;
        if counter_ok {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Row {
        commits: all.commits,
        wasted: all.wasted,
        latencies: all.latencies,
        counter_ok,
    }
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let account = StorageAccount::from_env().unwrap_or_else(|e| {
            panic!("{e}\nRun with: scripts/azurite run -- cargo bench --bench update_contention")
        });
        let secs: f64 = std::env::var("UPDATE_BENCH_SECS")
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(2.5);
        let service = BlobServiceClient::new(&account).expect("client");
        let container = format!("updbench{}", std::process::id());
        service
            .container(&container)
            .expect("name")
            .create()
            .await
            .expect("create container");
        // Warm up connections and the emulator.
        let _ = run_row(&account, &container, Mode::Update, 4, 0.3, 99).await;

        println!(
            "{:<8} {:>7} {:>10} {:>10} {:>10} {:>10} {:>9}",
            "mode", "writers", "commits", "commits/s", "wasted/c", "p99 ms", "counter"
        );
        let mut single = std::collections::HashMap::new();
        let mut summary = Vec::new();
        let only = std::env::var("UPDATE_BENCH_ONLY").unwrap_or_default();
        let modes: Vec<Mode> = [Mode::Update, Mode::Naive, Mode::Lease, Mode::Combine]
            .into_iter()
            .filter(|m| only.is_empty() || only.split(',').any(|o| o == m.name()))
            .collect();
        for writers in [1usize, 4, 16, 64] {
            // Short rounds, modes interleaved, so background load hits every mode alike.
            let mut rows: Vec<Row> = Vec::new();
            for round in 0..ROUNDS {
                for (i, &mode) in modes.iter().enumerate() {
                    let r = run_row(
                        &account,
                        &container,
                        mode,
                        writers,
                        secs / ROUNDS as f64,
                        round,
                    )
                    .await;
                    match rows.get_mut(i) {
                        None => rows.push(r),
                        Some(acc) => acc.merge(r),
                    }
                }
            }
            for (mode, mut row) in modes.iter().zip(rows) {
                let p99 = row.p99();
                let rate = row.commits as f64 / secs;
                if writers == 1 {
                    single.insert(mode.name(), rate);
                }
                let wasted = row.wasted as f64 / row.commits.max(1) as f64;
                println!(
                    "{:<8} {:>7} {:>10} {:>10.1} {:>10.2} {:>10.1} {:>9}",
                    mode.name(),
                    writers,
                    row.commits,
                    rate,
                    wasted,
                    p99.as_secs_f64() * 1000.0,
                    if row.counter_ok { "ok" } else { "MISMATCH" }
                );
                if writers == 16 {
                    summary.push((mode.name(), rate, wasted));
                }
            }
        }
        println!();
        let naive1 = single.get("naive").copied().unwrap_or(f64::NAN);
        for (name, rate, wasted) in summary {
            let base = single.get(name).copied().unwrap_or(f64::NAN);
            println!(
                "16 writers, {name:<7}: {:>5.1}% of its own single-writer rate ({base:.1}/s), \
                 {:>5.1}% of the naive single-writer rate, {wasted:.2} wasted attempts per commit",
                100.0 * rate / base,
                100.0 * rate / naive1,
            );
        }
        let _ = service
            .container(&container)
            .expect("name")
            .delete(&Conditions::none())
            .await;
    });
}
