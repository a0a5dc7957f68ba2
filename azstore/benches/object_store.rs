//! `BlobStore` (azstore behind object_store's `ObjectStore`) side by side with object_store's
//! own `MicrosoftAzure` client, in one run against one Azurite, interleaved in 24 short rounds
//! (store A, store B, then B, A, ...: each store runs first in half the rounds of every
//! metric, after a pause of 50 ms that lets the server settle from the phase before). Printed
//! per metric: each store's median, the median of the rounds' ratios (BlobStore over
//! MicrosoftAzure in the same round) and their quartiles:
//!
//! * get and put of 1 KiB, 1 and 16 in flight (ops/s);
//! * get of 8 MiB (MiB/s);
//! * a list of 1,000 objects (lists/s);
//! * put of 8 MiB (MiB/s), last;
//! * a commit log as delta-style writers keep one: 8 writers × 25 commits, each commit a
//!   `PutMode::Create` of the next numbered entry (on `AlreadyExists`, the next number), through
//!   a fault proxy that loses 5 % and then 20 % of the commit PUTs' replies after Azurite
//!   applied them. Printed per store:
//!   `objstore: STORE commits 200 lost-replies D duplicates X false-already-exists F lost L`
//!   (duplicates: entries holding a commit already in the log; false-already-exists:
//!   `AlreadyExists` answers for an entry that holds the writer's own commit; lost: commits
//!   answered `Ok` that are not in the log).
//!
//! Run: `scripts/azurite run -- cargo bench -p azstore --features object_store --bench object_store`
//!
//! `object_store instr OP STORE COUNT` (OP `get-1k` or `put-1k`, 16 in flight, `get-8m`, one
//! at a time, or `list-1000`, a list of 1,000 objects; STORE
//! `BlobStore` or `MicrosoftAzure`) runs COUNT operations and nothing else:
//! `scripts/bench-instructions` counts its instructions under callgrind.
//!
//! `OBJSTORE_BENCH_SAME=BlobStore` (or `=MicrosoftAzure`) runs the same store in both columns:
//! a control for how far the ratios stray on this machine when the stores do not differ.
//!
//! `object_store delete ROUNDS` times `delete_stream` of 1,000 objects by each store (Blob
//! Batch requests on both sides), interleaved, and prints them beside each other.
//!
//! `object_store latency OP COUNT` (OP `get-1k`, `put-1k` or `get-8m`) alternates single
//! operations of the two stores, one in flight, and prints each one's latency percentiles:
//! the finest interleaving, where a busy machine slows both stores alike.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant};

use azstore::object_store::BlobStore;
use azstore::{Service, StorageAccount};
use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt};
use object_store::azure::MicrosoftAzureBuilder;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutMode};
use testkit::fault::{Fault, FaultProxy, Rule};

/// Even, so that each store runs first in as many rounds as the other. Many short rounds
/// rather than a few long ones: on a busy machine the load changes from one second to the
/// next, and a ratio of two neighbouring short phases sees the same load.
const ROUNDS: usize = 24;
/// The pause before each measured phase.
const SETTLE: Duration = Duration::from_millis(50);
const SMALL: usize = 1024;
const BIG: usize = 8 << 20;
const WRITERS: usize = 8;
const COMMITS: usize = 25;

type Store = Arc<dyn ObjectStore>;

/// `MicrosoftAzure` on the Azurite of `account` (its blob endpoint, or `endpoint` instead).
fn microsoft_azure(container: &str, endpoint: Option<String>) -> Store {
    let cs = std::env::var("AZURE_STORAGE_CONNECTION_STRING").expect("run under scripts/azurite");
    let field = |k: &str| {
        cs.split(';')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .map(str::to_string)
    };
    let account = field("AccountName").expect("AccountName");
    let endpoint = endpoint.unwrap_or_else(|| field("BlobEndpoint").expect("BlobEndpoint"));
    Arc::new(
        MicrosoftAzureBuilder::new()
            .with_account(account)
            .with_access_key(field("AccountKey").expect("AccountKey"))
            .with_endpoint(endpoint)
            .with_allow_http(true)
            .with_container_name(container)
            .build()
            .expect("MicrosoftAzure"),
    )
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[v.len() / 2]
}

/// `n` operations `op(i)`, `flight` at a time; returns ops/s.
async fn rate<F, Fut>(n: usize, flight: usize, op: F) -> f64
where
    F: Fn(usize) -> Fut,
    Fut: std::future::Future<Output = ()>,
{
    let t = Instant::now();
    futures_util::stream::iter(0..n)
        .map(op)
        .buffer_unordered(flight)
        .collect::<Vec<()>>()
        .await;
    n as f64 / t.elapsed().as_secs_f64()
}

/// `n` puts of 1 KiB, `flight` at a time, over the 64 small objects.
async fn small_puts(s: &Store, flight: usize, n: usize) -> f64 {
    let body = Bytes::from(vec![7u8; SMALL]);
    rate(n, flight, |i| {
        let (s, body) = (s.clone(), body.clone());
        async move {
            s.put(&Path::from(format!("small/{}", i % 64)), body.into())
                .await
                .unwrap();
        }
    })
    .await
}

/// `n` gets of 1 KiB, `flight` at a time.
async fn small_gets(s: &Store, flight: usize, n: usize) -> f64 {
    rate(n, flight, |i| {
        let s = s.clone();
        async move {
            let b = s
                .get(&Path::from(format!("small/{}", i % 64)))
                .await
                .unwrap()
                .bytes()
                .await
                .unwrap();
            assert_eq!(b.len(), SMALL);
        }
    })
    .await
}

/// `n` puts or gets of 8 MiB, one at a time, of the objects `first`, `first + 1`, ... (of 8).
async fn big(s: &Store, put: bool, first: usize, n: usize) -> f64 {
    let body = Bytes::from(vec![3u8; BIG]);
    let t = Instant::now();
    for i in first..first + n {
        let p = Path::from(format!("big/{}", i % 8));
        if put {
            s.put(&p, body.clone().into()).await.unwrap();
        } else {
            assert_eq!(s.get(&p).await.unwrap().bytes().await.unwrap().len(), BIG);
        }
    }
    (n * BIG) as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64()
}

/// `n` lists of the 1,000 objects.
async fn lists(s: &Store, n: usize) -> f64 {
    let t = Instant::now();
    for _ in 0..n {
        let c = s
            .list(Some(&Path::from("many")))
            .try_collect::<Vec<_>>()
            .await
            .unwrap();
        assert_eq!(c.len(), 1000);
    }
    n as f64 / t.elapsed().as_secs_f64()
}

/// What one commit-log run did.
#[derive(Default, Debug)]
struct Log {
    commits: usize,
    lost_replies: usize,
    duplicates: usize,
    false_exists: usize,
    lost: usize,
}

/// 8 writers × 25 commits of a numbered log under `dir` of `s`.
async fn commit_log(s: &Store, dir: &str) -> (usize, Vec<(usize, String)>, Vec<(usize, String)>) {
    let mut tasks = Vec::new();
    for w in 0..WRITERS {
        let s = s.clone();
        let dir = dir.to_string();
        tasks.push(tokio::spawn(async move {
            let mut next = 0usize;
            let mut acked = Vec::new();
            let mut refused = Vec::new();
            let mut errors = 0;
            for c in 0..COMMITS {
                let commit = format!("writer {w} commit {c}");
                loop {
                    let p = Path::from(format!("{dir}/{next:020}.json"));
                    match s
                        .put_opts(&p, commit.clone().into(), PutMode::Create.into())
                        .await
                    {
                        Ok(_) => {
                            acked.push((next, commit.clone()));
                            next += 1;
                            break;
                        }
                        Err(object_store::Error::AlreadyExists { .. }) => {
                            refused.push((next, commit.clone()));
                            next += 1;
                        }
                        // Outcome unknown to the writer: try the same number again.
                        Err(_) => errors += 1,
                    }
                }
            }
            (acked, refused, errors)
        }));
    }
    let (mut acked, mut refused, mut errors) = (Vec::new(), Vec::new(), 0);
    for t in tasks {
        let (a, r, e) = t.await.unwrap();
        acked.extend(a);
        refused.extend(r);
        errors += e;
    }
    (errors, acked, refused)
}

async fn audit(
    direct: &Store,
    dir: &str,
    acked: &[(usize, String)],
    refused: &[(usize, String)],
) -> Log {
    let entries: Vec<_> = direct
        .list(Some(&Path::from(dir)))
        .try_collect()
        .await
        .unwrap();
    let mut log = BTreeMap::new();
    for m in entries {
        let body = direct
            .get(&m.location)
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap();
        let n: usize = m
            .location
            .filename()
            .unwrap()
            .trim_end_matches(".json")
            .parse()
            .unwrap();
        log.insert(n, String::from_utf8(body.to_vec()).unwrap());
    }
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for c in log.values() {
        *seen.entry(c).or_default() += 1;
    }
    Log {
        commits: acked.len(),
        lost_replies: 0,
        duplicates: seen.values().map(|n| n - 1).sum(),
        false_exists: refused
            .iter()
            .filter(|(n, c)| log.get(n) == Some(c))
            .count(),
        lost: acked.iter().filter(|(n, c)| log.get(n) != Some(c)).count(),
    }
}

fn main() {
    // MicrosoftAzure builds a reqwest client that looks for a process-wide rustls provider.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("instr") && args.len() == 5 {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(instr(&args[2], &args[3], args[4].parse().expect("COUNT")));
        return;
    }
    if args.get(1).map(String::as_str) == Some("latency") && args.len() == 4 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(latency(&args[2], args[3].parse().expect("COUNT")));
        return;
    }
    // `cargo bench -- delete N` passes `--bench` after the arguments.
    if args.get(1).map(String::as_str) == Some("delete") && args.len() >= 3 {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        rt.block_on(deletes(args[2].parse().expect("ROUNDS")));
        return;
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
}

/// `object_store delete ROUNDS`: in each round each store writes 1,000 objects (not timed),
/// then deletes them with one `delete_stream` (timed); the stores alternate going first.
/// Prints each store's median objects deleted per second and the quartiles of the rounds'
/// ratios.
async fn deletes(rounds: usize) {
    let container = testkit::blob::container("objdelete").await;
    let name = container.name().to_string();
    let stores: [(&str, Store); 2] = [
        (
            "BlobStore",
            Arc::new(BlobStore::new(container.clone()).with_prefix("blobstore")),
        ),
        (
            "MicrosoftAzure",
            Arc::new(object_store::prefix::PrefixStore::new(
                microsoft_azure(&name, None),
                "microsoftazure",
            )),
        ),
    ];
    // Third: BlobStore's paths deleted one Delete Blob each, 10 in flight (what its
    // delete_stream sent before Blob Batch), as a reference.
    let mut rates: [Vec<f64>; 3] = [Vec::new(), Vec::new(), Vec::new()];
    for round in 0..rounds {
        let order = match round % 3 {
            0 => [0, 1, 2],
            1 => [1, 2, 0],
            _ => [2, 0, 1],
        };
        for i in order {
            // 0 and 2: BlobStore; 1: MicrosoftAzure.
            let s = &stores[i % 2].1;
            let paths: Vec<Path> = (0..1000)
                .map(|n| Path::from(format!("del/{round}/{n:04}")))
                .collect();
            futures_util::stream::iter(&paths)
                .map(|p| {
                    let s = s.clone();
                    async move { s.put(p, "x".into()).await.unwrap() }
                })
                .buffer_unordered(32)
                .collect::<Vec<_>>()
                .await;
            tokio::time::sleep(SETTLE).await;
            let t = Instant::now();
            let done: Vec<Path> = if i == 2 {
                futures_util::stream::iter(paths.clone())
                    .map(|p| {
                        let s = s.clone();
                        async move { s.delete(&p).await.map(|()| p) }
                    })
                    .buffered(10)
                    .try_collect()
                    .await
                    .unwrap()
            } else {
                let input = futures_util::stream::iter(paths.clone().into_iter().map(Ok)).boxed();
                s.delete_stream(input).try_collect().await.unwrap()
            };
            rates[i].push(done.len() as f64 / t.elapsed().as_secs_f64());
            assert_eq!(done, paths);
        }
    }
    let mut ratios: Vec<f64> = rates[0].iter().zip(&rates[1]).map(|(a, b)| a / b).collect();
    ratios.sort_by(|x, y| x.total_cmp(y));
    let q = |p: usize| ratios[(ratios.len() - 1) * p / 4];
    println!(
        "objstore: delete_stream of 1,000 objects, {rounds} interleaved rounds, one Azurite \
         (objects/s, medians; ratio BlobStore / MicrosoftAzure, q1..q3)"
    );
    println!(
        "{:<34} {:>12.0} {:>15.0} {:>7.2}   {:.2}..{:.2}",
        "delete 1,000 (objects/s)",
        median(rates[0].clone()),
        median(rates[1].clone()),
        q(2),
        q(1),
        q(3)
    );
    println!(
        "{:<34} {:>12.0} {:>15}",
        "  BlobStore, Delete Blob ×10",
        median(rates[2].clone()),
        "-"
    );
    let _ = container.delete(&azstore::Conditions::none()).await;
}

/// `count` operations `op` through `store`, 16 in flight, after a warm-up of 32 (for
/// `scripts/bench-instructions`, which subtracts two runs of different counts).
async fn instr(op: &str, store: &str, count: usize) {
    let container = std::env::var("AZSTORE_INSTRUCTIONS_CONTAINER").unwrap_or("instrobj".into());
    let c = StorageAccount::from_env()
        .unwrap()
        .container(&container)
        .unwrap();
    c.create_if_not_exists().await.unwrap();
    let s: Store = match store {
        "BlobStore" => Arc::new(BlobStore::new(c)),
        "MicrosoftAzure" => microsoft_azure(&container, None),
        other => panic!("unknown store {other}"),
    };
    let body = Bytes::from(vec![7u8; SMALL]);
    if op == "get-8m" {
        // One 8 MiB object read whole, one at a time: the cost of a long body's chunks.
        let p = Path::from("instr/big");
        s.put(&p, Bytes::from(vec![3u8; BIG]).into()).await.unwrap();
        for _ in 0..2 + count {
            assert_eq!(s.get(&p).await.unwrap().bytes().await.unwrap().len(), BIG);
        }
        return;
    }
    let one = |i: usize| {
        let (s, body) = (s.clone(), body.clone());
        async move {
            let p = Path::from(format!("instr/{}", i % 16));
            if op == "put-1k" {
                s.put(&p, body.into()).await.unwrap();
            } else if op == "list-1000" {
                let n = s
                    .list(Some(&Path::from("many")))
                    .try_collect::<Vec<_>>()
                    .await
                    .unwrap();
                assert_eq!(n.len(), 1000);
            } else {
                s.get(&p).await.unwrap().bytes().await.unwrap();
            }
        }
    };
    for i in 0..16 {
        s.put(&Path::from(format!("instr/{i}")), body.clone().into())
            .await
            .unwrap();
    }
    let warm_up = if op == "list-1000" {
        futures_util::stream::iter(0..1000)
            .map(|i| {
                let s = s.clone();
                async move {
                    s.put(&Path::from(format!("many/{i:04}")), "x".into())
                        .await
                        .unwrap()
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await;
        1
    } else {
        32
    };
    for n in [warm_up, count] {
        futures_util::stream::iter(0..n)
            .map(one)
            .buffer_unordered(16)
            .collect::<Vec<()>>()
            .await;
    }
}

/// `count` single operations `op` (`get-1k`, `put-1k`, `get-8m`), one in flight, alternating
/// between the two stores operation by operation; prints each store's latency percentiles.
async fn latency(op: &str, count: usize) {
    let container = std::env::var("AZSTORE_INSTRUCTIONS_CONTAINER").unwrap_or("latobj".into());
    let c = StorageAccount::from_env()
        .unwrap()
        .container(&container)
        .unwrap();
    c.create_if_not_exists().await.unwrap();
    let stores: [(&str, Store); 2] = [
        ("BlobStore", Arc::new(BlobStore::new(c))),
        ("MicrosoftAzure", microsoft_azure(&container, None)),
    ];
    let size = if op == "get-8m" { BIG } else { SMALL };
    let body = Bytes::from(vec![7u8; size]);
    // Each store reads what it wrote itself (`LATENCY_READ=other`: what the other one wrote).
    let cross = std::env::var("LATENCY_READ").is_ok_and(|v| v == "other");
    for (k, (_, s)) in stores.iter().enumerate() {
        s.put(&Path::from(format!("lat/{k}")), body.clone().into())
            .await
            .unwrap();
    }
    let mut took: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    // 20 rounds of warm-up, then `count`; each store goes first in every other round.
    for i in 0..count + 20 {
        for k in if i % 2 == 0 { [0, 1] } else { [1, 0] } {
            let s = &stores[k].1;
            let t = Instant::now();
            if op == "put-1k" {
                s.put(&Path::from("lat/1"), body.clone().into())
                    .await
                    .unwrap();
            } else {
                let read = if cross { 1 - k } else { k };
                let b = s
                    .get(&Path::from(format!("lat/{read}")))
                    .await
                    .unwrap()
                    .bytes()
                    .await
                    .unwrap();
                assert_eq!(b.len(), size);
            }
            if i >= 20 {
                took[k].push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    for (k, (name, _)) in stores.iter().enumerate() {
        let mut v = took[k].clone();
        v.sort_by(|a, b| a.total_cmp(b));
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize];
        println!(
            "latency: {op} {name:<14} p10 {:>8.0} p50 {:>8.0} p90 {:>8.0} mean {:>8.0} us",
            q(0.1),
            q(0.5),
            q(0.9),
            v.iter().sum::<f64>() / v.len() as f64
        );
    }
}

async fn run() {
    let account = StorageAccount::from_env().expect("run under scripts/azurite");
    let container = testkit::blob::container("objbench").await;
    let name = container.name().to_string();
    let blob_store =
        |prefix: &str| -> Store { Arc::new(BlobStore::new(container.clone()).with_prefix(prefix)) };
    let azure = |prefix: &str| -> Store {
        Arc::new(object_store::prefix::PrefixStore::new(
            microsoft_azure(&name, None),
            prefix,
        ))
    };
    // `OBJSTORE_BENCH_SAME=BlobStore` or `=MicrosoftAzure`: the same store on both sides (in the
    // two columns' prefixes), a control that shows how far the ratios stray when nothing but
    // the machine and the server differs.
    let (a, b) = match std::env::var("OBJSTORE_BENCH_SAME").as_deref() {
        Ok("BlobStore") => (blob_store("blobstore"), blob_store("microsoftazure")),
        Ok("MicrosoftAzure") => (azure("blobstore"), azure("microsoftazure")),
        _ => (blob_store("blobstore"), azure("microsoftazure")),
    };
    if let Ok(same) = std::env::var("OBJSTORE_BENCH_SAME") {
        println!("objstore: control run, {same} in both columns");
    }
    let stores: Vec<(&str, Store)> = vec![("BlobStore", a), ("MicrosoftAzure", b)];
    // Fixtures: 64 small objects, 1,000 to list, the 8 MiB objects to read.
    for (_, s) in &stores {
        small_puts(s, 16, 200).await;
        big(s, true, 0, 8).await;
        futures_util::stream::iter(0..1000)
            .map(|i| {
                let s = s.clone();
                async move {
                    s.put(&Path::from(format!("many/{i:04}")), "x".into())
                        .await
                        .unwrap()
                }
            })
            .buffer_unordered(32)
            .collect::<Vec<_>>()
            .await;
    }
    let metrics = [
        "put 1 KiB, 1 in flight (ops/s)",
        "get 1 KiB, 1 in flight (ops/s)",
        "put 1 KiB, 16 in flight (ops/s)",
        "get 1 KiB, 16 in flight (ops/s)",
        "get 8 MiB (MiB/s)",
        "list 1,000 (lists/s)",
        // Last: the server is still writing 8 MiB objects out for a while after their puts,
        // which would slow whatever came next (a read of 8 MiB objects most of all).
        "put 8 MiB (MiB/s)",
    ];
    // results[(store, metric)]: one value per round, in round order.
    let mut results: HashMap<(&str, usize), Vec<f64>> = HashMap::new();
    for round in 0..ROUNDS {
        for (m, _) in metrics.iter().enumerate() {
            // Each store goes first in half the rounds of every metric: the store that runs
            // second meets the server still settling from the first one's phase.
            let order = if (round + m) % 2 == 0 { [0, 1] } else { [1, 0] };
            for (store, s) in order.map(|i| &stores[i]) {
                // Let the server settle from the phase before (writes flushed, garbage
                // collected) so that each phase starts from the same state.
                tokio::time::sleep(SETTLE).await;
                let v = match m {
                    0 => small_puts(s, 1, 50).await,
                    1 => small_gets(s, 1, 50).await,
                    2 => small_puts(s, 16, 200).await,
                    3 => small_gets(s, 16, 200).await,
                    4 => big(s, false, 2 * round, 2).await,
                    5 => lists(s, 1).await,
                    _ => big(s, true, 2 * round, 2).await,
                };
                results.entry((*store, m)).or_default().push(v);
            }
        }
    }
    println!(
        "objstore: {ROUNDS} interleaved rounds (each store first in half), one Azurite; \
         medians, and the quartiles of the rounds' ratios"
    );
    println!(
        "{:<34} {:>12} {:>15} {:>7}   ratio q1..q3",
        "", "BlobStore", "MicrosoftAzure", "ratio"
    );
    for (m, label) in metrics.iter().enumerate() {
        let a = &results[&("BlobStore", m)];
        let b = &results[&("MicrosoftAzure", m)];
        // Paired: BlobStore's value over MicrosoftAzure's of the same round.
        let mut ratios: Vec<f64> = a.iter().zip(b).map(|(x, y)| x / y).collect();
        ratios.sort_by(|x, y| x.total_cmp(y));
        let q = |p: usize| ratios[(ratios.len() - 1) * p / 4];
        let (a, b) = (median(a.clone()), median(b.clone()));
        println!(
            "{label:<34} {a:>12.1} {b:>15.1} {:>7.2}   {:.2}..{:.2}",
            q(2),
            q(1),
            q(3)
        );
    }

    // The commit log through a proxy that loses replies of commit PUTs.
    let direct: Store = Arc::new(BlobStore::new(container.clone()));
    for share in [0.05, 0.20] {
        for (store, prefix) in [
            ("BlobStore", "blobstore"),
            ("MicrosoftAzure", "microsoftazure"),
        ] {
            let proxy = FaultProxy::start(&account, Service::Blob).await;
            let via = proxy.account(&account);
            let s: Store = match store {
                "BlobStore" => {
                    Arc::new(BlobStore::new(via.container(&name).unwrap()).with_prefix(prefix))
                }
                _ => Arc::new(object_store::prefix::PrefixStore::new(
                    microsoft_azure(&name, Some(via.endpoint(Service::Blob).unwrap().url())),
                    prefix,
                )),
            };
            let dir = format!("log{}", (share * 100.0) as u32);
            proxy.inject(
                Rule::new(Fault::LoseResponse)
                    .method("PUT")
                    .target_contains(&format!("/{dir}/"))
                    .always()
                    .chance(share),
            );
            let t = Instant::now();
            let (errors, acked, refused) = commit_log(&s, &dir).await;
            let took = t.elapsed();
            let lost_replies = proxy
                .requests()
                .iter()
                .filter(|r| r.fault == Some("lose-response"))
                .count();
            let mut log = audit(&direct, &format!("{prefix}/{dir}"), &acked, &refused).await;
            log.lost_replies = lost_replies;
            println!(
                "objstore: {store} commits {} lost-replies {} duplicates {} false-already-exists {} lost {} \
                 ({:.0} % lost, {errors} errors retried, {:.1} s)",
                log.commits,
                log.lost_replies,
                log.duplicates,
                log.false_exists,
                log.lost,
                share * 100.0,
                took.as_secs_f64()
            );
        }
    }
    let _ = container.delete(&azstore::Conditions::none()).await;
}
