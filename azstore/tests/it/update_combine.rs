//! In-process combining against Azurite: concurrent updates in one process share reads and
//! writes, while writers in "other processes" still never lose an update.

use testkit as support;
use testkit::update as update_support;
use testkit::update::increment;

use azstore::blob::BlobJson;
use azstore::update::{Change, Combiner, Decision, UpdatePolicy, update};
use azstore::{Conditions, ErrorKind, StorageAccount};
use update_support::Proxy;

fn counter(account: &StorageAccount, container: &str) -> BlobJson<u64> {
    BlobJson::new(support::blob::blob_at(account, container, "counter"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn combined_and_independent_writers_never_lose_an_update() {
    let account = support::account();
    let c = support::blob::container_at(&account, "comb").await;
    let proxy = Proxy::start(&account).await;
    // One process: 40 tasks x 5 increments through one combiner (via the counting proxy).
    let combiner = Combiner::new(counter(proxy.account(), c.name()), UpdatePolicy::default());
    let mut tasks = Vec::new();
    for _ in 0..40 {
        let comb = combiner.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                let out = comb.update(increment).await.expect("combined update");
                assert!(matches!(out.change, Change::Created | Change::Replaced));
            }
        }));
    }
    // "Other processes": 4 independent writers x 25 increments on the same blob.
    for _ in 0..4 {
        let other = counter(&account, c.name());
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                update(&other, &UpdatePolicy::default(), increment)
                    .await
                    .expect("update");
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let d = c.blob("counter").unwrap().download().await.unwrap();
    let n: u64 = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(n, 200 + 100);
    let puts = proxy.count("PUT");
    println!("200 combined increments took {puts} writes");
    assert!(
        puts < 200,
        "combining must share writes ({puts} PUTs for 200 updates)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_aborting_closure_fails_alone() {
    let account = support::account();
    let c = support::blob::container_at(&account, "comb").await;
    c.blob("counter")
        .unwrap()
        .upload("10", &Conditions::none())
        .await
        .unwrap();
    let combiner = Combiner::new(counter(&account, c.name()), UpdatePolicy::default());
    let mut tasks = Vec::new();
    for i in 0..20u64 {
        let comb = combiner.clone();
        tasks.push(tokio::spawn(async move {
            let r = comb
                .update(move |cur| {
                    if i % 5 == 0 {
                        Decision::abort("multiples of five refuse")
                    } else {
                        increment(cur)
                    }
                })
                .await;
            (i, r)
        }));
    }
    for t in tasks {
        let (i, r) = t.await.unwrap();
        match r {
            Err(e) => {
                assert_eq!(i % 5, 0);
                assert_eq!(e.kind(), ErrorKind::Aborted);
            }
            Ok(o) => {
                assert_ne!(i % 5, 0);
                assert!(o.value.is_some_and(|v| v > 10));
            }
        }
    }
    let d = c.blob("counter").unwrap().download().await.unwrap();
    let n: u64 = serde_json::from_slice(&d.body).unwrap();
    assert_eq!(n, 10 + 16, "16 increments applied, 4 aborted");
}
