//! Lock hand-off: 8 contenders take turns holding one `BlobLock`. For each strategy prints the
//! median and p99 time from one holder's release (the moment it starts releasing) to the next
//! holder's acquisition (the held lock returned, fencing token written), and the request rate
//! the waiters generate while waiting (every request sent from inside an acquire call).
//!
//! Baseline, measured in the same run: the naive loop many lease-lock users write — try to
//! acquire every 100 ms and treat the 409 as "busy".
//!
//! Run: `scripts/azurite run -- cargo bench --bench lock_handoff`

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use azstore::blob::BlobLock;
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use azstore::{StorageAccount, blob::BlobServiceClient, blob::ContainerClient};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};

const CONTENDERS: usize = 8;
const HANDOFFS: usize = 60;
const HOLD: Duration = Duration::from_millis(50);
/// After releasing, a contender pauses before contending again, so that hand-offs go to the
/// waiters (a holder re-taking its own lock at once would measure nothing).
const THINK: Duration = Duration::from_millis(300);
/// Requests of one successful acquisition (acquire lease, read and write the fencing token):
/// not waiting traffic.
const ACQUISITION_REQUESTS: u64 = 3;

tokio::task_local! {
    /// Set while a contender is inside an acquire call: its requests count as waiting traffic.
    static WAITING: ();
}

static WAITER_REQUESTS: AtomicU64 = AtomicU64::new(0);

/// Counts the pipeline's per-attempt request spans sent by waiters.
struct CountRequests;

impl<S: tracing::Subscriber> Layer<S> for CountRequests {
    fn on_new_span(
        &self,
        attrs: &tracing::span::Attributes<'_>,
        _: &tracing::span::Id,
        _: Context<'_, S>,
    ) {
        if attrs.metadata().name() == "azstore.attempt" && WAITING.try_with(|_| ()).is_ok() {
            WAITER_REQUESTS.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[derive(Clone, Copy)]
enum Strategy {
    /// try_acquire every 100 ms.
    NaiveRetry,
    /// BlobLock::acquire without the in-process wake-up: what separate processes get.
    Polling,
    /// BlobLock::acquire with the in-process wake-up.
    LocalWakeup,
}

impl Strategy {
    fn name(self) -> &'static str {
        match self {
            Strategy::NaiveRetry => "baseline: try every 100 ms",
            Strategy::Polling => "BlobLock::acquire (polling)",
            Strategy::LocalWakeup => "BlobLock::acquire (+ local wake-up)",
        }
    }
}

struct Stats {
    handoffs: Vec<Duration>,
    /// Every request sent from inside acquire calls, per second.
    acquire_rps: f64,
    /// The same minus the requests of the successful acquisitions: what waiting costs.
    waiting_rps: f64,
}

async fn run(container: &ContainerClient, strategy: Strategy) -> Stats {
    let blob = format!("handoff-{}", strategy as u8);
    let options = LockOptions::default()
        .duration(LeaseDuration::seconds(15).unwrap())
        .local_wakeup(matches!(strategy, Strategy::LocalWakeup));
    // Create the lock blob up front so the first acquisitions do not measure creation.
    let warm = BlobLock::with_options(container.clone(), &blob, options.clone()).unwrap();
    drop(warm.try_acquire().await.unwrap());
    tokio::time::sleep(Duration::from_millis(200)).await;

    let released_at: Arc<Mutex<Option<(Instant, usize)>>> = Arc::default();
    let acquisitions = Arc::new(AtomicU64::new(0));
    let handoffs: Arc<Mutex<Vec<Duration>>> = Arc::default();
    let before = WAITER_REQUESTS.load(Ordering::Relaxed);
    let start = Instant::now();
    let mut tasks = Vec::new();
    for me in 0..CONTENDERS {
        let lock = BlobLock::with_options(container.clone(), &blob, options.clone()).unwrap();
        let released_at = released_at.clone();
        let acquisitions = acquisitions.clone();
        let handoffs = handoffs.clone();
        tasks.push(tokio::spawn(async move {
            loop {
                if handoffs.lock().unwrap().len() >= HANDOFFS {
                    return;
                }
                let held = WAITING
                    .scope((), async {
                        match strategy {
                            Strategy::NaiveRetry => loop {
                                if let Some(h) = lock.try_acquire().await.unwrap() {
                                    break h;
                                }
                                tokio::time::sleep(Duration::from_millis(100)).await;
                            },
                            _ => lock
                                .acquire_within(Duration::from_secs(60))
                                .await
                                .unwrap()
                                .expect("acquired within 60 s"),
                        }
                    })
                    .await;
                let now = Instant::now();
                acquisitions.fetch_add(1, Ordering::Relaxed);
                if let Some((r, from)) = released_at.lock().unwrap().take() {
                    if from != me {
                        handoffs.lock().unwrap().push(now - r);
                    }
                }
                tokio::time::sleep(HOLD).await;
                *released_at.lock().unwrap() = Some((Instant::now(), me));
                held.release().await.unwrap();
                tokio::time::sleep(THINK).await;
            }
        }));
    }
    // Stop once enough hand-offs were measured; waiters still inside acquire are aborted.
    while handoffs.lock().unwrap().len() < HANDOFFS {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let elapsed = start.elapsed();
    let requests = WAITER_REQUESTS.load(Ordering::Relaxed) - before;
    let acquired = acquisitions.load(Ordering::Relaxed);
    for t in &tasks {
        t.abort();
    }
    for t in tasks {
        let _ = t.await;
    }
    let mut handoffs = handoffs.lock().unwrap().clone();
    handoffs.sort();
    Stats {
        handoffs,
        acquire_rps: requests as f64 / elapsed.as_secs_f64(),
        waiting_rps: requests.saturating_sub(acquired * ACQUISITION_REQUESTS) as f64
            / elapsed.as_secs_f64(),
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1000.0)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(CountRequests))
        .unwrap();
    let account = StorageAccount::from_env().unwrap_or_else(|e| {
        panic!("{e}\nRun with: scripts/azurite run -- cargo bench --bench lock_handoff")
    });
    let blobs = BlobServiceClient::new(&account).unwrap();
    let name = format!("bench-handoff-{}", std::process::id());
    let container = blobs.container(&name).unwrap();
    container.create_if_not_exists().await.unwrap();

    println!(
        "lock hand-off: {CONTENDERS} contenders, {HANDOFFS} hand-offs per strategy, {} ms \
         critical section, {} ms pause after each release",
        HOLD.as_millis(),
        THINK.as_millis()
    );
    println!(
        "{:<38} {:>10} {:>10} {:>14} {:>16}",
        "strategy", "median", "p99", "waiting req/s", "all acquire req/s"
    );
    let mut results = Vec::new();
    for strategy in [
        Strategy::NaiveRetry,
        Strategy::Polling,
        Strategy::LocalWakeup,
    ] {
        let s = run(&container, strategy).await;
        let (med, p99) = (percentile(&s.handoffs, 0.5), percentile(&s.handoffs, 0.99));
        println!(
            "{:<38} {:>10} {:>10} {:>14.1} {:>16.1}",
            strategy.name(),
            ms(med),
            ms(p99),
            s.waiting_rps,
            s.acquire_rps
        );
        results.push((med, s.waiting_rps));
    }
    let (base_med, base_rps) = results[0];
    for (i, (med, rps)) in results.iter().enumerate().skip(1) {
        println!(
            "{}: median {:.2}x the baseline's, {:.2}x its waiting request rate",
            [
                Strategy::NaiveRetry,
                Strategy::Polling,
                Strategy::LocalWakeup
            ][i]
                .name(),
            med.as_secs_f64() / base_med.as_secs_f64(),
            rps / base_rps
        );
    }
    println!("target: median < 100 ms while waiters send < 50 requests/s");
    let _ = container.delete(&azstore::Conditions::none()).await;
}
