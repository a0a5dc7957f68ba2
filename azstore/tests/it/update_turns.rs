//! In-process turns of `update` beyond the contract suite (`contract_versioned`): an
//! unanswered write keeps its turn until settled; turn takers beside writers that take no
//! turns (standing in for other processes) lose nothing.

use testkit as support;

use std::collections::BTreeSet;

use azstore::blob::BlobJson;
use azstore::table::VersionedEntity;
use azstore::update::{Decision, UpdatePolicy, Versioned, update};
use serde::{Deserialize, Serialize};
use testkit::blob::blob_at;
use testkit::update::{Proxy, increment};

/// The response to one write is lost while 23 other writers of this process wait for their
/// turn: the writer keeps its turn for the read that settles it, so it finds its own write
/// at the top of the stored history instead of under 23 others (more than the history
/// keeps), and reports it applied.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn an_unanswered_write_keeps_its_turn_until_settled() {
    let account = support::account();
    let c = support::blob::container_at(&account, "turnlost").await;
    BlobJson::<u64>::new(c.blob("n").unwrap())
        .create(&0, "seed")
        .await
        .unwrap();
    let proxy = Proxy::start(&account).await;
    proxy.lose_next_response_to("PUT");
    let tasks: Vec<_> = (0..24)
        .map(|_| {
            let counter = BlobJson::<u64>::new(blob_at(proxy.account(), c.name(), "n"));
            tokio::spawn(async move {
                update(&counter, &UpdatePolicy::default(), increment)
                    .await
                    .expect("every update succeeds, the unanswered one included")
            })
        })
        .collect();
    let (mut recovered, mut values) = (0, BTreeSet::new());
    for t in tasks {
        let out = t.await.unwrap();
        assert_eq!(out.conflicts, 0);
        recovered += out.recovered_ambiguous;
        assert!(values.insert(out.value.expect("written")));
    }
    assert_eq!(proxy.lost(), 1);
    assert_eq!(recovered, 1, "the unanswered write was recognised");
    assert_eq!(values, (1..=24).collect::<BTreeSet<u64>>());
    assert_eq!(proxy.count("PUT"), 24, "no write was repeated");
}

/// Turn-taking writers beside writers that take none (as other processes would be): the
/// latter conflict with the former and with each other, every update lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn turn_takers_and_independent_writers_lose_nothing() {
    #[derive(Debug, Clone, Serialize, Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Counter {
        partition_key: String,
        row_key: String,
        count: u64,
    }
    let table = support::table::fresh_table("turns").await;
    let mut tasks = Vec::new();
    for i in 0..12 {
        let entity: VersionedEntity<Counter> = table.versioned("c", "n").unwrap();
        // Eight take turns; four behave as separate processes.
        let policy = UpdatePolicy::default().take_turns(i < 8);
        tasks.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..8 {
                let done = update(&entity, &policy, |cur: Option<&Counter>| {
                    Decision::Write(Counter {
                        partition_key: "c".into(),
                        row_key: "n".into(),
                        count: cur.map_or(0, |c| c.count) + 1,
                    })
                })
                .await
                .expect("update");
                conflicts += done.conflicts;
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for t in tasks {
        conflicts += t.await.unwrap();
    }
    let entity: VersionedEntity<Counter> = table.versioned("c", "n").unwrap();
    assert_eq!(entity.read().await.unwrap().unwrap().value.count, 96);
    assert!(conflicts > 0, "the independent writers must have collided");
}

/// Turn takers hand over what they wrote (a JSON blob offers snapshots) while writers that
/// take no turns (as other processes would be) write in between: a handed-over state that
/// another writer overtook is refused like a stale read (412), read again and retried, and
/// every update lands exactly once.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn handed_over_turns_beside_independent_writers_lose_nothing() {
    let account = support::account();
    let c = support::blob::container_at(&account, "handoff").await;
    let mut tasks = Vec::new();
    for i in 0..12 {
        let counter = BlobJson::<u64>::new(c.blob("n").unwrap());
        // Eight take turns; four behave as separate processes.
        let policy = UpdatePolicy::default().take_turns(i < 8);
        tasks.push(tokio::spawn(async move {
            let (mut conflicts, mut values) = (0, Vec::new());
            for _ in 0..8 {
                let done = update(&counter, &policy, increment).await.expect("update");
                conflicts += done.conflicts;
                values.push(done.value.expect("written"));
            }
            (i < 8, conflicts, values)
        }));
    }
    let (mut values, mut taker_conflicts) = (BTreeSet::new(), 0);
    for t in tasks {
        let (taker, conflicts, written) = t.await.unwrap();
        if taker {
            taker_conflicts += conflicts;
        }
        for v in written {
            assert!(values.insert(v), "{v} reported written twice");
        }
    }
    assert_eq!(values, (1..=96).collect::<BTreeSet<u64>>());
    let stored = BlobJson::<u64>::new(c.blob("n").unwrap())
        .read()
        .await
        .unwrap()
        .unwrap();
    assert_eq!(stored.value, 96);
    assert!(
        taker_conflicts > 0,
        "the independent writers must have overtaken the turn takers"
    );
}
