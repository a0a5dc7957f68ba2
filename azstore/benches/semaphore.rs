//! Semaphore and reader-writer lock under contention, per backend (Blob on Azurite, Redis,
//! Cosmos DB on the local server — each measured when its server is there).
//!
//! Semaphore: N = 4 permits, 16 contenders (separate handles, polling as separate processes
//! would), each taking a permit, holding it 200 ms and releasing it, 4 times. Printed: holds/s
//! against the ideal N / hold time (the baseline, 20/s), p50/p99 wait, the largest number of
//! later arrivals that got a permit before a waiter did (passed over; also counting only
//! arrivals at least 100 ms later), and requests sent per
//! held permit per second (every request of the run, waiters' included). Twice, interleaved:
//! with the waiting line `Semaphore::new` builds, and without one (the same slots by
//! `Semaphore::from_locks`: unordered waiting, the baseline for passed over).
//!
//! RwLock: 16 readers looping (hold 200 ms) and 2 writers (hold 200 ms, 300 ms apart, 4 writes
//! each): writer p50/p99 wait, reader holds/s.
//!
//! Run: `scripts/azurite run --only azurite,redis -- scripts/cosmos run -- cargo bench -p
//! azstore --all-features --bench semaphore`

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::lease::LeaseDuration;
use azstore::lock::{Lock, LockOptions, LockTarget, RwLock, Semaphore};
use tokio::time::Instant;
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

const PERMITS: u32 = 4;
const CONTENDERS: usize = 16;
const ROUNDS: usize = 4;
const HOLD: Duration = Duration::from_millis(200);
const READERS: usize = 16;
const WRITERS: usize = 2;
const WRITES: usize = 4;
/// Passed over is also counted by arrivals at least this much later only: a waiter's place in
/// the line is taken one look and one acquire after it arrives, and contenders arriving within
/// that window are not ordered.
const LATER: Duration = Duration::from_millis(100);

/// HTTP requests sent (one per attempt span), for Blob and Cosmos DB.
static HTTP_REQUESTS: AtomicU64 = AtomicU64::new(0);

struct CountRequests;

impl<S: tracing::Subscriber> Layer<S> for CountRequests {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        if attrs.metadata().name() == "azstore.attempt" {
            HTTP_REQUESTS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

fn opts() -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).unwrap())
        .local_wakeup(false)
}

type Count = Box<dyn Fn() -> Pin<Box<dyn Future<Output = u64>>>>;

fn pct(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 * p).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// (wait started, granted)
type Grant = (Instant, Instant);

async fn semaphore<T: LockTarget>(backend: &str, make: impl Fn() -> Semaphore<T>, count: &Count) {
    let grants: Arc<Mutex<Vec<Grant>>> = Arc::default();
    let before = count().await;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..CONTENDERS {
        let sem = make();
        let grants = grants.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..ROUNDS {
                let asked = Instant::now();
                let permit = sem
                    .acquire_within(Duration::from_secs(120))
                    .await
                    .unwrap()
                    .expect("a permit within 2 minutes");
                grants.lock().unwrap().push((asked, Instant::now()));
                tokio::time::sleep(HOLD).await;
                permit.release().await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let elapsed = started.elapsed();
    let requests = count().await - before;
    let grants = grants.lock().unwrap().clone();
    let mut waits: Vec<Duration> = grants.iter().map(|g| g.1 - g.0).collect();
    waits.sort();
    let passed_over = |after: Duration| {
        grants
            .iter()
            .map(|a| {
                grants
                    .iter()
                    .filter(|b| b.0 > a.0 + after && b.1 < a.1)
                    .count()
            })
            .max()
            .unwrap_or(0)
    };
    let (passed_over, passed_over_later) = (passed_over(Duration::ZERO), passed_over(LATER));
    let holds = grants.len() as f64;
    let ideal = f64::from(PERMITS) / HOLD.as_secs_f64();
    println!(
        "{backend:<15} semaphore N={PERMITS}, {CONTENDERS} contenders x {ROUNDS}, hold {} ms: \
         {:.1} holds/s (ideal {ideal:.1}, {:.0}%), wait p50 {:.0} ms p99 {:.0} ms, \
         passed over at most {passed_over} ({passed_over_later} by arrivals {} ms later), \
         {:.1} requests per held permit per second",
        HOLD.as_millis(),
        holds / elapsed.as_secs_f64(),
        100.0 * holds / elapsed.as_secs_f64() / ideal,
        pct(&waits, 0.5).as_secs_f64() * 1e3,
        pct(&waits, 0.99).as_secs_f64() * 1e3,
        LATER.as_millis(),
        requests as f64 / elapsed.as_secs_f64() / f64::from(PERMITS),
    );
}

async fn rwlock<T: LockTarget>(backend: &str, make: impl Fn() -> RwLock<T>) {
    let stop = Arc::new(AtomicBool::new(false));
    let reads = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut readers = Vec::new();
    for _ in 0..READERS {
        let rw = make();
        let (stop, reads) = (stop.clone(), reads.clone());
        readers.push(tokio::spawn(async move {
            while !stop.load(Ordering::Relaxed) {
                if let Some(r) = rw.read_within(Duration::from_secs(2)).await.unwrap() {
                    tokio::time::sleep(HOLD).await;
                    r.release().await.unwrap();
                    reads.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let mut writers = Vec::new();
    for _ in 0..WRITERS {
        let rw = make();
        writers.push(tokio::spawn(async move {
            let mut waits = Vec::new();
            for _ in 0..WRITES {
                tokio::time::sleep(Duration::from_millis(300)).await;
                let asked = Instant::now();
                let w = rw
                    .write_within(Duration::from_secs(120))
                    .await
                    .unwrap()
                    .expect("the writer gets in");
                waits.push(asked.elapsed());
                tokio::time::sleep(HOLD).await;
                w.release().await.unwrap();
            }
            waits
        }));
    }
    let mut waits = Vec::new();
    for w in writers {
        waits.extend(w.await.unwrap());
    }
    stop.store(true, Ordering::Relaxed);
    let elapsed = started.elapsed();
    for r in readers {
        r.await.unwrap();
    }
    waits.sort();
    println!(
        "{backend:<7} rwlock {READERS} readers + {WRITERS} writers, hold {} ms: writer wait p50 \
         {:.0} ms p99 {:.0} ms ({} writes); readers {:.1} holds/s",
        HOLD.as_millis(),
        pct(&waits, 0.5).as_secs_f64() * 1e3,
        pct(&waits, 0.99).as_secs_f64() * 1e3,
        waits.len(),
        reads.load(Ordering::Relaxed) as f64 / elapsed.as_secs_f64(),
    );
}

async fn both<T, F>(backend: &str, locks: F, count: Count)
where
    T: LockTarget,
    F: azstore::leader::LockFactory<Lock = Lock<T>>,
{
    let sem = format!("bench-{}", std::process::id());
    // Interleaved and repeated: the semaphore with its waiting line (what `Semaphore::new`
    // builds), then the same slots without a line (unordered waiting, the baseline of fairness).
    for rep in 0..2 {
        let lined = format!("{sem}-sem{rep}");
        semaphore(
            &format!("{backend} line"),
            || Semaphore::new(&locks, &lined, PERMITS, "bench").unwrap(),
            &count,
        )
        .await;
        let unordered = format!("{sem}-free{rep}");
        semaphore(
            &format!("{backend} no line"),
            || {
                let slots = (0..PERMITS)
                    .map(|k| locks.make(&format!("{unordered}/permits/{k}"), "bench"))
                    .collect::<azstore::Result<Vec<_>>>()
                    .unwrap();
                let fence = locks.make(&format!("{unordered}/fence"), "bench").unwrap();
                Semaphore::from_locks(fence, slots).unwrap()
            },
            &count,
        )
        .await;
    }
    rwlock(backend, || {
        RwLock::new(&locks, &format!("{sem}-rw"), READERS as u32, "bench").unwrap()
    })
    .await;
}

fn http_count() -> Count {
    Box::new(|| Box::pin(async { HTTP_REQUESTS.load(Ordering::Relaxed) }))
}

#[tokio::main(flavor = "multi_thread", worker_threads = 4)]
async fn main() {
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(CountRequests))
        .unwrap();
    println!(
        "baseline: the ideal throughput of N = {PERMITS} permits held {} ms each is {:.0} holds/s",
        HOLD.as_millis(),
        f64::from(PERMITS) / HOLD.as_secs_f64()
    );

    match azstore::StorageAccount::from_env() {
        Ok(account) => {
            let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
            let c = blobs
                .container(&format!("benchsem{}", std::process::id()))
                .unwrap();
            c.create_if_not_exists().await.unwrap();
            both(
                "blob",
                azstore::blob::BlobLocks::new(c, opts()),
                http_count(),
            )
            .await;
        }
        Err(_) => println!("blob    not measured: run under scripts/azurite run"),
    }

    #[cfg(feature = "redis")]
    match std::env::var("AZSTORE_REDIS_URL") {
        Ok(url) => {
            use azstore::redis::{RedisClient, RedisConfig, RedisLocks};
            let client = RedisClient::new(RedisConfig::from_url(&url).unwrap()).unwrap();
            // Commands the server processed (INFO stats), less the INFO itself.
            let count: Count = Box::new(move || {
                let url = url.clone();
                Box::pin(async move {
                    let mut con = ::redis::Client::open(url)
                        .unwrap()
                        .get_multiplexed_async_connection()
                        .await
                        .unwrap();
                    let info: String = ::redis::cmd("INFO")
                        .arg("stats")
                        .query_async(&mut con)
                        .await
                        .unwrap();
                    info.lines()
                        .find_map(|l| l.strip_prefix("total_commands_processed:"))
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0)
                })
            });
            both("redis", RedisLocks::new(client, opts()), count).await;
        }
        Err(_) => {
            println!("redis   not measured: run under scripts/azurite run --only azurite,redis")
        }
    }

    #[cfg(feature = "cosmos")]
    match std::env::var("AZSTORE_COSMOS_ENDPOINT") {
        Ok(endpoint) => {
            use azstore::cosmos::{CosmosClient, CosmosKey, CosmosLocks, EMULATOR_KEY};
            let client =
                CosmosClient::new(&endpoint, CosmosKey::new(EMULATOR_KEY).unwrap()).unwrap();
            let db = client
                .database(&format!("benchsem{}", std::process::id()))
                .unwrap();
            db.create_if_not_exists().await.unwrap();
            let c = db.container("items", "/pk").unwrap();
            c.create_if_not_exists().await.unwrap();
            both("cosmos", CosmosLocks::new(c, opts()), http_count()).await;
        }
        Err(_) => println!("cosmos  not measured: run under scripts/cosmos run"),
    }
}
