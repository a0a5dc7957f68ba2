//! Azure Cosmos DB support, against a real Cosmos DB server: the npm `@vercel/cosmosdb-server`
//! started by `scripts/cosmos run` (endpoint in `AZSTORE_COSMOS_ENDPOINT`). The same checks as
//! for blobs and Redis — the ETag contract of the point operations, contention loses nothing,
//! the create race, a lost reply recognised by its write id (through `testkit::fault`'s proxy
//! in front of the real server), the lease and the lock's takeover rule (what every lock
//! guarantees is checked by the lock contract suite, `contract_lock.rs`). Behaviour the local server cannot show (429 with `x-ms-retry-after-ms`,
//! authorization refusals, malformed answers, what is signed) is checked against
//! `testkit::scripted`.
//!
//! Where the local server differs from Azure: it answers a read of a missing item with 500
//! unless `x-ms-documentdb-query-enablecrosspartition: true` is sent (azstore always sends it;
//! Azure ignores it on point reads); its ETags are bare UUIDs (Azure's are quoted); it never
//! expires items by `ttl`; it does not check authorization.

use std::time::Duration;

use azstore::cosmos::{
    CosmosClient, CosmosContainer, CosmosItem, CosmosKey, CosmosLock, EMULATOR_KEY, HeldCosmosLock,
};
use azstore::http::ClientOptions;
use azstore::lease::{Leasable, LeaseDuration};
use azstore::lock::LockOptions;
use azstore::update::{Decision, UpdatePolicy, Versioned, update};
use azstore::{ErrorCode, ErrorKind, LeaseId, RequestSent};
use serde::{Deserialize, Serialize};
use testkit::fault::{Fault, FaultProxy, Rule};
use testkit::scripted::{Reply, Scripted};
use tokio::time::Instant;

fn endpoint() -> String {
    std::env::var("AZSTORE_COSMOS_ENDPOINT").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_COSMOS_ENDPOINT is not set: run the tests through `scripts/cosmos run -- \
             cargo test -p azstore --features cosmos --test it cosmos`"
        )
    })
}

fn client_at(endpoint: &str) -> CosmosClient {
    CosmosClient::new(endpoint, CosmosKey::new(EMULATOR_KEY).unwrap()).unwrap()
}

/// Item `a` (partition `p`) of container `c` in database `db`: the names a scripted server's
/// answers are written for.
fn scripted_item(client: &CosmosClient) -> CosmosItem<Counter> {
    let db = client.database("db").unwrap();
    db.container("c", "/pk").unwrap().item("a", "p").unwrap()
}

/// Waits (up to a minute) until `lock` is taken over; the lock held and how long it took.
async fn taken_over(lock: &CosmosLock) -> (HeldCosmosLock, Duration) {
    let started = Instant::now();
    let held = lock
        .acquire_within(Duration::from_secs(60))
        .await
        .unwrap()
        .expect("taken over");
    (held, started.elapsed())
}

/// A container in a database of its own (partition key path `/pk`).
async fn fresh_at(client: &CosmosClient, prefix: &str) -> CosmosContainer {
    let db = client.database(&testkit::unique(prefix)).unwrap();
    assert!(db.create_if_not_exists().await.unwrap());
    let c = db.container("items", "/pk").unwrap();
    assert!(c.create_if_not_exists().await.unwrap());
    assert!(
        !c.create_if_not_exists().await.unwrap(),
        "a second create finds it"
    );
    c
}

async fn fresh(prefix: &str) -> CosmosContainer {
    fresh_at(&client_at(&endpoint()), prefix).await
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Counter {
    n: u64,
}

fn policy() -> UpdatePolicy {
    UpdatePolicy::default().max_elapsed(Duration::from_secs(120))
}

#[tokio::test]
async fn point_operations_follow_the_etag_contract() {
    let c = fresh("cosmospoint").await;
    let item = c.item::<Counter>("a", "p1").unwrap();
    assert_eq!(
        item.read().await.unwrap(),
        None,
        "absent is None, not an error"
    );
    let e1 = item.create(&Counter { n: 1 }, "").await.unwrap();
    let dup = item.create(&Counter { n: 9 }, "").await.unwrap_err();
    assert_eq!(dup.kind(), ErrorKind::AlreadyExists);
    assert_eq!(dup.status(), Some(409));
    assert_eq!(dup.request_sent(), RequestSent::Yes);
    let e2 = item.replace(&Counter { n: 2 }, &e1, "").await.unwrap();
    assert_ne!(e1, e2, "every write changes _etag");
    let stale = item.replace(&Counter { n: 3 }, &e1, "").await.unwrap_err();
    assert_eq!(stale.kind(), ErrorKind::PreconditionFailed);
    assert_eq!(stale.status(), Some(412));
    let cur = item.read().await.unwrap().unwrap();
    assert_eq!((cur.value.n, &cur.etag), (2, &e2));
    let del = Versioned::delete(&item, &e1).await.unwrap_err();
    assert!(del.is_precondition_failed(), "{del}");
    Versioned::delete(&item, &e2).await.unwrap();
    assert_eq!(item.read().await.unwrap(), None);
    let gone = item.replace(&Counter { n: 4 }, &e2, "").await.unwrap_err();
    assert_eq!(gone.kind(), ErrorKind::NotFound);
    // The same id in another partition is another item.
    let other = c.item::<Counter>("a", "p2").unwrap();
    other.create(&Counter { n: 7 }, "").await.unwrap();
    assert_eq!(other.read().await.unwrap().unwrap().value.n, 7);
    // Last writer wins, and removes the write id.
    other.overwrite(&Counter { n: 8 }).await.unwrap();
    assert_eq!(other.read().await.unwrap().unwrap().value.n, 8);
    assert!(other.delete_if_exists().await.unwrap());
    assert!(!other.delete_if_exists().await.unwrap());
    // A value whose id or partition key contradicts the item's is refused before sending.
    let raw = c.item::<serde_json::Value>("b", "p1").unwrap();
    let e = raw
        .create(&serde_json::json!({"id": "other"}), "")
        .await
        .unwrap_err();
    assert_eq!(
        (e.kind(), e.request_sent()),
        (ErrorKind::InvalidInput, RequestSent::No)
    );
    let e = raw
        .create(&serde_json::json!({"pk": "p9"}), "")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = raw
        .create(&serde_json::json!([1, 2]), "")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    c.client()
        .database(c.database_id())
        .unwrap()
        .delete()
        .await
        .unwrap();
}

/// The proxy in front of the real server, and a client through it.
async fn proxied(options: ClientOptions) -> (FaultProxy, CosmosClient) {
    let proxy = FaultProxy::to_host(
        endpoint()
            .trim_start_matches("http://")
            .trim_end_matches('/'),
    )
    .await;
    let client = CosmosClient::with_options(
        &format!("http://127.0.0.1:{}", proxy.port()),
        CosmosKey::new(EMULATOR_KEY).unwrap(),
        options,
    )
    .unwrap();
    (proxy, client)
}

#[tokio::test]
async fn a_server_that_never_answers_fails_in_bounded_time() {
    let options = ClientOptions::default()
        .timeout(Duration::from_millis(500))
        .total_timeout(Duration::from_secs(2));
    let (proxy, client) = proxied(options).await;
    let c = fresh_at(&client, "cosmosstall").await;
    let item = c.item::<Counter>("n", "k").unwrap();
    item.create(&Counter { n: 1 }, "").await.unwrap();
    let etag = item.read().await.unwrap().unwrap().etag;
    proxy.inject(Rule::new(Fault::NeverAnswer).always());
    let started = Instant::now();
    let e = item.read().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
    let e = item
        .replace(&Counter { n: 2 }, &etag, "")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout);
    assert_eq!(
        e.request_sent(),
        RequestSent::Maybe,
        "a lost conditional write is not repeated"
    );
    assert!(
        started.elapsed() < Duration::from_secs(6),
        "{:?}",
        started.elapsed()
    );
}

/// 429 with `x-ms-retry-after-ms` (the local server never throttles): retried after the
/// given wait, within the time budget.
#[tokio::test]
async fn throttling_is_retried_after_the_servers_wait_and_requests_are_signed() {
    let doc =
        br#"{"id":"a","pk":"p","n":5,"_etag":"\"00000000-0000-0000-0000-000000000001\"","_ts":1}"#;
    let server = Scripted::start(vec![
        Reply::with(
            429,
            &[
                ("x-ms-retry-after-ms", "300"),
                ("content-type", "application/json"),
            ],
            br#"{"code":"TooManyRequests","message":"Request rate is large"}"#,
        ),
        Reply::with(
            200,
            &[
                ("etag", "\"00000000-0000-0000-0000-000000000001\""),
                ("content-type", "application/json"),
            ],
            doc,
        ),
    ])
    .await;
    let client = client_at(&format!("http://127.0.0.1:{}", server.port));
    let item = scripted_item(&client);
    let started = Instant::now();
    let cur = item.read().await.unwrap().unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(300),
        "waited as told"
    );
    assert_eq!(cur.value.n, 5);
    assert_eq!(
        cur.etag.as_str(),
        "\"00000000-0000-0000-0000-000000000001\"",
        "quoted ETags kept as they are"
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let r = &reqs[1];
    assert_eq!(r.target, "/dbs/db/colls/c/docs/a");
    assert_eq!(r.header("x-ms-documentdb-partitionkey"), Some(r#"["p"]"#));
    assert_eq!(r.header("x-ms-version"), Some("2018-12-31"));
    let auth = r.header("authorization").unwrap();
    assert!(
        auth.starts_with("type%3Dmaster%26ver%3D1.0%26sig%3D"),
        "{auth}"
    );
    assert!(r.header("x-ms-date").is_some());
}

/// Authorization refusal and malformed answers (the local server checks no key and always
/// answers JSON): typed errors, no panic, no key in the message.
#[tokio::test]
async fn refusals_and_malformed_answers_are_typed_errors() {
    let server = Scripted::start(vec![
        Reply::with(401, &[("content-type", "application/json")], br#"{"code":"Unauthorized","message":"The input authorization token can't serve the request."}"#),
        Reply::with(200, &[("etag", "e")], b"<html>not json</html>"),
        Reply::with(200, &[], br#"{"id":"a","pk":"p","n":1}"#),
        Reply::with(200, &[("etag", "e")], br#"{"id":"a","pk":"p","n":"not a number"}"#),
    ])
    .await;
    let client = client_at(&format!("http://127.0.0.1:{}", server.port));
    let item = scripted_item(&client);
    let e = item.read().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth);
    assert_eq!(
        e.error_code(),
        Some(&ErrorCode::Other("Unauthorized".into()))
    );
    let shown = format!("{e} {e:?}");
    assert!(
        !shown.contains("C2y6") && !shown.contains("sig%3D"),
        "{shown}"
    );
    for _ in 0..3 {
        let e = item.read().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Service, "{e}");
    }
}

fn lock_options() -> LockOptions {
    LockOptions::default().duration(LeaseDuration::seconds(15).unwrap())
}

/// A holder that stops renewing (its process died) is taken over only after the lock item
/// kept its `_etag` for the whole lease duration on the contender's clock; the old holder
/// can no longer renew, and the token grows.
#[tokio::test]
async fn an_abandoned_lock_is_taken_over_after_the_lease_duration() {
    let c = fresh("cosmostake").await;
    let abandoned = c.lease("l", "l").unwrap();
    let old_id = LeaseId::random();
    abandoned
        .lease_acquire(LeaseDuration::seconds(15).unwrap(), &old_id)
        .await
        .unwrap();
    let before = c.lock("l", "l").unwrap().status().await.unwrap();
    assert!(before.locked);
    let lock =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "l", "l", lock_options()).unwrap();
    assert!(lock.try_acquire().await.unwrap().is_none(), "held: not yet");
    let (held, waited) = taken_over(&lock).await;
    assert!(
        waited >= Duration::from_secs(15),
        "took over after only {waited:?}"
    );
    assert!(waited < Duration::from_secs(25), "took {waited:?}");
    assert!(held.fencing_token() > before.fencing_token.unwrap());
    let e = abandoned.lease_renew(&old_id).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost, "{e}");
    assert!(held.is_held());
    held.release().await.unwrap();
}

/// A holder that keeps renewing is never taken over, and a contender's acquire that found
/// it held starts over when the `_etag` changes.
#[tokio::test]
async fn a_renewing_holder_is_never_taken_over() {
    let c = fresh("cosmosrenew").await;
    let holder =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "l", "l", lock_options()).unwrap();
    let held = holder.try_acquire().await.unwrap().unwrap();
    let contender =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "l", "l", lock_options()).unwrap();
    assert!(
        contender
            .acquire_within(Duration::from_secs(22))
            .await
            .unwrap()
            .is_none()
    );
    assert!(held.is_held(), "renewed by its guard all along");
    let token = held.fencing_token();
    held.release().await.unwrap();
    let next = contender
        .try_acquire()
        .await
        .unwrap()
        .expect("free after release");
    assert!(next.fencing_token() > token);
    // Breaking: the holder learns it at its next check of the item, the token still grows.
    let broken = contender
        .break_lock(Some(azstore::lease::BreakPeriod::immediate()))
        .await
        .unwrap();
    assert_eq!(broken.remaining, Duration::ZERO);
    let again = holder
        .try_acquire()
        .await
        .unwrap()
        .expect("free after a break");
    assert!(again.fencing_token() > next.fencing_token());
    drop(next);
    again.release().await.unwrap();
}

/// The `cosmos_holder` process (testkit, feature `cosmos`).
#[cfg(unix)]
fn holder_binary() -> std::path::PathBuf {
    // target/debug/deps/it-<hash> -> target/debug/cosmos_holder
    let exe = std::env::current_exe().unwrap();
    let bin = exe
        .parent()
        .and_then(std::path::Path::parent)
        .unwrap()
        .join(format!("cosmos_holder{}", std::env::consts::EXE_SUFFIX));
    assert!(
        bin.exists(),
        "{} is missing: build it with `cargo build -p testkit --features cosmos --bins` \
         (scripts/test does)",
        bin.display()
    );
    bin
}

/// A holder process; SIGKILLed if the test ends early.
#[cfg(unix)]
struct HolderProcess {
    child: std::process::Child,
    lines: std::sync::mpsc::Receiver<String>,
}

#[cfg(unix)]
impl HolderProcess {
    fn start(c: &CosmosContainer, item: &str, log: &std::path::Path) -> HolderProcess {
        use std::io::BufRead;
        let mut child = std::process::Command::new(holder_binary())
            .args([c.database_id(), c.id(), item])
            .arg(log)
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
                let _ = tx.send(line);
            }
        });
        HolderProcess { child, lines }
    }

    fn expect(&self, prefix: &str, within: Duration) -> String {
        let end = std::time::Instant::now() + within;
        loop {
            let left = end.saturating_duration_since(std::time::Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.starts_with(prefix) => {
                    return line[prefix.len()..].trim().to_string();
                }
                Ok(_) => {}
                Err(e) => panic!("holder did not print {prefix:?} within {within:?}: {e}"),
            }
        }
    }

    fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on a child we spawned and have not reaped.
        assert_eq!(
            unsafe { libc::kill(self.child.id() as libc::pid_t, sig) },
            0
        );
    }
}

#[cfg(unix)]
impl Drop for HolderProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A holder process killed with SIGKILL (no release, no more renewals) is taken over by a
/// contender after the lease duration — not before.
#[cfg(unix)]
#[tokio::test]
async fn a_sigkilled_holder_is_taken_over_after_the_lease_duration() {
    let c = fresh("cosmoskill").await;
    let log = std::env::temp_dir().join(testkit::unique("cosmoskill"));
    let holder = HolderProcess::start(&c, "k", &log);
    let token: u64 = holder
        .expect("ACQUIRED", Duration::from_secs(30))
        .parse()
        .unwrap();
    holder.signal(libc::SIGKILL);
    let lock =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "k", "k", lock_options()).unwrap();
    let (held, waited) = taken_over(&lock).await;
    assert!(
        waited >= Duration::from_secs(15),
        "took over a dead holder's lock after only {waited:?}"
    );
    assert!(held.fencing_token() > token);
    held.release().await.unwrap();
    let _ = std::fs::remove_file(&log);
}

/// A holder process frozen (SIGSTOP) past its lease while a contender takes over, then
/// resumed: `is_held()` is false at its first check, so it writes nothing after the new
/// holder's first record.
#[cfg(unix)]
#[tokio::test]
async fn a_holder_frozen_past_its_lease_sees_the_loss_before_it_writes() {
    use std::io::Write;
    let c = fresh("cosmosstop").await;
    let log = std::env::temp_dir().join(testkit::unique("cosmosstop"));
    let holder = HolderProcess::start(&c, "s", &log);
    let token: u64 = holder
        .expect("ACQUIRED", Duration::from_secs(30))
        .parse()
        .unwrap();
    let wait_for_record = std::time::Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&log).unwrap_or_default().is_empty() {
        assert!(
            std::time::Instant::now() < wait_for_record,
            "the holder wrote nothing"
        );
        std::thread::sleep(Duration::from_millis(5));
    }
    holder.signal(libc::SIGSTOP);
    let lock =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "s", "s", lock_options()).unwrap();
    let held = lock
        .acquire_within(Duration::from_secs(60))
        .await
        .unwrap()
        .expect("taken over");
    assert!(held.fencing_token() > token);
    {
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        writeln!(f, "B 0 {}", held.fencing_token()).unwrap();
    }
    holder.signal(libc::SIGCONT);
    holder.expect("LOST", Duration::from_secs(30));
    let records = std::fs::read_to_string(&log).unwrap();
    let lines: Vec<&str> = records.lines().collect();
    let b = lines.iter().position(|l| l.starts_with("B ")).unwrap();
    assert!(b > 0, "the holder wrote before it was frozen");
    assert!(
        lines[b + 1..].iter().all(|l| !l.starts_with("A ")),
        "the frozen holder wrote after the new holder: {:?}",
        &lines[b.saturating_sub(2)..]
    );
    held.release().await.unwrap();
    let _ = std::fs::remove_file(&log);
}

fn python() -> String {
    std::env::var("AZSTORE_PYTHON").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_PYTHON is not set. The interop test runs the official Python Cosmos DB SDK.\n\
             Create the virtualenv with `scripts/pyenv` (it prints the python path) and run\n\
             `AZSTORE_PYTHON=$(scripts/pyenv) scripts/cosmos run -- cargo test -p azstore \
             --features cosmos --test it cosmos`."
        )
    })
}

/// The official Python SDK (azure-cosmos, tests/python/cosmos_interop.py) runs If-Match
/// increments on the same item concurrently with azstore's `update()` writers: every
/// increment of both sides lands. The item exists before the writers start: the local
/// server answers the SDK's read of a missing item with 500 (the SDK does not send
/// `x-ms-documentdb-query-enablecrosspartition`).
#[tokio::test]
async fn python_sdk_and_update_writers_lose_no_increment_of_each_other() {
    #[derive(Debug, Clone, Default, Serialize, Deserialize)]
    struct Doc {
        n: u64,
    }
    let c = fresh("cosmospy").await;
    let item = c.item::<Doc>("shared", "shared").unwrap();
    item.create(&Doc { n: 0 }, "").await.unwrap();
    const PY_PROCS: u64 = 2;
    const PY_INCREMENTS: u64 = 20;
    const RUST_TASKS: u64 = 4;
    const RUST_INCREMENTS: u64 = 20;
    let mut py = Vec::new();
    for _ in 0..PY_PROCS {
        let mut cmd = tokio::process::Command::new(python());
        cmd.arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/cosmos_interop.py"
        ))
        .arg(endpoint())
        .arg(EMULATOR_KEY)
        .arg(c.database_id())
        .arg(c.id())
        .arg("shared")
        .arg(PY_INCREMENTS.to_string());
        py.push(tokio::spawn(async move {
            cmd.output().await.expect("run python")
        }));
    }
    let mut rust = Vec::new();
    for _ in 0..RUST_TASKS {
        let item = item.clone();
        rust.push(tokio::spawn(async move {
            for _ in 0..RUST_INCREMENTS {
                update(&item, &policy(), |d: Option<&Doc>| {
                    Decision::Write(Doc {
                        n: d.map_or(0, |d| d.n) + 1,
                    })
                })
                .await
                .unwrap();
            }
        }));
    }
    for t in rust {
        t.await.unwrap();
    }
    let mut py_conflicts = 0;
    for p in py {
        let out = p.await.unwrap();
        assert!(
            out.status.success(),
            "cosmos_interop.py failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["increments"], PY_INCREMENTS);
        py_conflicts += v["conflicts"].as_u64().unwrap();
    }
    let n = item.read().await.unwrap().unwrap().value.n;
    assert_eq!(
        n,
        PY_PROCS * PY_INCREMENTS + RUST_TASKS * RUST_INCREMENTS,
        "no lost update on either side (the Python writers retried {py_conflicts} 412s)"
    );
}

/// Microsoft Entra ID authorization (`type=aad&ver=1.0&sig=<token>`), checked on the scripted
/// server (the local Cosmos DB server checks no authorization): the header is sent, the token
/// never shows in `Debug`, and plain HTTP is refused unless to loopback and allowed.
#[tokio::test]
async fn entra_id_tokens_are_sent_as_aad_authorization_and_never_shown() {
    use azstore::credential::StaticToken;
    use azstore::http::TransportOptions;
    let server = Scripted::start(vec![Reply::with(
        200,
        &[("etag", "\"e1\"")],
        br#"{"id":"a","pk":"p","n":3,"_etag":"\"e1\""}"#,
    )])
    .await;
    let token = "eyJhbGciOi.secret-part.sig";
    let refused = CosmosClient::with_token_provider(
        &format!("http://127.0.0.1:{}", server.port),
        StaticToken::new(token).unwrap(),
        ClientOptions::default(),
    )
    .unwrap_err();
    assert_eq!(refused.kind(), ErrorKind::InvalidInput);
    let remote = CosmosClient::with_token_provider(
        "http://cosmos.example.com",
        StaticToken::new(token).unwrap(),
        ClientOptions::default()
            .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true)),
    )
    .unwrap_err();
    assert_eq!(
        remote.kind(),
        ErrorKind::InvalidInput,
        "never over plain HTTP to another host"
    );
    let client = CosmosClient::with_token_provider(
        &format!("http://127.0.0.1:{}", server.port),
        StaticToken::new(token).unwrap(),
        ClientOptions::default()
            .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true)),
    )
    .unwrap();
    assert!(!format!("{client:?}").contains("secret-part"));
    let item = scripted_item(&client);
    assert_eq!(item.read().await.unwrap().unwrap().value.n, 3);
    let reqs = server.requests();
    assert_eq!(
        reqs[0].header("authorization"),
        Some("type%3Daad%26ver%3D1.0%26sig%3DeyJhbGciOi.secret-part.sig")
    );
}

/// The guarantee the takeover rule exists for: a holder whose renewals stop reaching the
/// server (every renew hangs in the fault proxy) is told of the loss *before* a contender
/// takes the lock over.
#[tokio::test]
async fn a_holder_cut_off_learns_of_the_loss_before_the_takeover() {
    let options = ClientOptions::default()
        .timeout(Duration::from_secs(2))
        .total_timeout(Duration::from_secs(4));
    let (proxy, via_proxy) = proxied(options).await;
    let c = fresh_at(&via_proxy, "cosmoscut").await;
    let holder_lock =
        azstore::cosmos::CosmosLock::with_options(c.clone(), "cut", "cut", lock_options()).unwrap();
    let held = holder_lock.try_acquire().await.unwrap().expect("free");
    let lost = held.lost();
    let lost_at = tokio::spawn(async move {
        lost.await;
        Instant::now()
    });
    proxy.inject(Rule::new(Fault::NeverAnswer).always());
    let direct = client_at(&endpoint())
        .database(c.database_id())
        .unwrap()
        .container("items", "/pk")
        .unwrap();
    let contender =
        azstore::cosmos::CosmosLock::with_options(direct, "cut", "cut", lock_options()).unwrap();
    let next = contender
        .acquire_within(Duration::from_secs(60))
        .await
        .unwrap()
        .expect("taken over");
    let taken_at = Instant::now();
    let lost_at = tokio::time::timeout(Duration::from_secs(1), lost_at)
        .await
        .expect("the holder was told before the takeover")
        .unwrap();
    assert!(
        lost_at < taken_at,
        "loss {lost_at:?} must come before the takeover {taken_at:?}"
    );
    assert!(!held.is_held());
    assert!(next.fencing_token() > held.fencing_token());
    drop(held);
    next.release().await.unwrap();
}

/// Throttled for longer than the call's time budget: the 429 comes back as the error (status
/// 429, retryable, nothing applied), within the budget — never an endless wait.
#[tokio::test]
async fn throttling_beyond_the_time_budget_ends_with_the_429() {
    let server = Scripted::start(vec![Reply::with(
        429,
        &[
            ("x-ms-retry-after-ms", "400"),
            ("content-type", "application/json"),
        ],
        br#"{"code":"TooManyRequests","message":"Request rate is large"}"#,
    )])
    .await;
    let client = CosmosClient::with_options(
        &format!("http://127.0.0.1:{}", server.port),
        CosmosKey::new(EMULATOR_KEY).unwrap(),
        ClientOptions::default().total_timeout(Duration::from_millis(1500)),
    )
    .unwrap();
    let item = scripted_item(&client);
    let started = Instant::now();
    let e = item.create(&Counter { n: 1 }, "").await.unwrap_err();
    assert_eq!(e.status(), Some(429), "{e}");
    assert!(e.is_retryable());
    assert_eq!(
        e.request_sent(),
        RequestSent::Yes,
        "a 429 is an answer: nothing applied"
    );
    assert!(
        started.elapsed() < Duration::from_millis(2500),
        "{:?}",
        started.elapsed()
    );
    assert!(server.count() >= 2, "retried while the budget allowed");
}
