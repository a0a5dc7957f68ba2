//! `BlobStore` (azstore behind object_store's `ObjectStore`) side by side with object_store's
//! own `MicrosoftAzure` client, in one run against one Azurite, interleaved (store A, store
//! B, store A, ...), 3 repetitions, medians printed:
//!
//! * get and put of 1 KiB, 1 and 16 in flight (ops/s);
//! * put and get of 8 MiB (MiB/s);
//! * a list of 1,000 objects (lists/s);
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
//! `object_store instr OP STORE COUNT` (OP `get-1k` or `put-1k`, 16 in flight, or
//! `list-1000`, a list of 1,000 objects; STORE
//! `BlobStore` or `MicrosoftAzure`) runs COUNT operations and nothing else:
//! `scripts/bench-instructions` counts its instructions under callgrind.

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

const REPS: usize = 3;
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

async fn small_puts(s: &Store, flight: usize) -> f64 {
    let body = Bytes::from(vec![7u8; SMALL]);
    rate(200 * flight.min(4), flight, |i| {
        let (s, body) = (s.clone(), body.clone());
        async move {
            s.put(&Path::from(format!("small/{}", i % 64)), body.into())
                .await
                .unwrap();
        }
    })
    .await
}

async fn small_gets(s: &Store, flight: usize) -> f64 {
    rate(200 * flight.min(4), flight, |i| {
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

async fn big(s: &Store, put: bool) -> f64 {
    let body = Bytes::from(vec![3u8; BIG]);
    let n = 4;
    let t = Instant::now();
    for i in 0..n {
        let p = Path::from(format!("big/{i}"));
        if put {
            s.put(&p, body.clone().into()).await.unwrap();
        } else {
            assert_eq!(s.get(&p).await.unwrap().bytes().await.unwrap().len(), BIG);
        }
    }
    (n * BIG) as f64 / (1 << 20) as f64 / t.elapsed().as_secs_f64()
}

async fn lists(s: &Store) -> f64 {
    let n = 5;
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
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run());
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

async fn run() {
    let account = StorageAccount::from_env().expect("run under scripts/azurite");
    let container = testkit::blob::container("objbench").await;
    let name = container.name().to_string();
    let stores: Vec<(&str, Store)> = vec![
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
    // Fixtures: 64 small objects, 1,000 to list.
    for (_, s) in &stores {
        small_puts(s, 16).await;
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
        "put 8 MiB (MiB/s)",
        "get 8 MiB (MiB/s)",
        "list 1,000 (lists/s)",
    ];
    let mut results: HashMap<(&str, usize), Vec<f64>> = HashMap::new();
    for _ in 0..REPS {
        for (m, _) in metrics.iter().enumerate() {
            for (store, s) in &stores {
                let v = match m {
                    0 => small_puts(s, 1).await,
                    1 => small_gets(s, 1).await,
                    2 => small_puts(s, 16).await,
                    3 => small_gets(s, 16).await,
                    4 => big(s, true).await,
                    5 => big(s, false).await,
                    _ => lists(s).await,
                };
                results.entry((store, m)).or_default().push(v);
            }
        }
    }
    println!("objstore: medians of {REPS} interleaved repetitions, one Azurite");
    println!(
        "{:<34} {:>12} {:>15} {:>7}",
        "", "BlobStore", "MicrosoftAzure", "ratio"
    );
    for (m, label) in metrics.iter().enumerate() {
        let a = median(results[&("BlobStore", m)].clone());
        let b = median(results[&("MicrosoftAzure", m)].clone());
        println!("{label:<34} {a:>12.1} {b:>15.1} {:>7.2}", a / b);
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
    let _ = Duration::ZERO;
}
