//! The leader contract: what `azstore::leader` (elections and shard groups) guarantees on
//! every lock backend. `make(label)` builds a new handle onto ONE lock (each campaigner its
//! own, as separate processes would) with [`lock_options`]; a shard group gets a lock
//! factory. A backend joins with [`contract_leader!`](crate::contract_leader).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::leader::{
    Campaign, Election, ElectionOptions, LockFactory, ShardEvent, ShardGroup, ShardOptions,
};
use azstore::lease::LeaseDuration;
use azstore::lock::LockOptions;
use tokio::time::Instant;

/// The options of every campaigner: 15 s leases, `label`, and waiters that poll (no local
/// wake-up), as campaigners in other processes would.
pub fn lock_options(label: &str) -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).expect("15 s is a valid lease"))
        .label(label)
        .local_wakeup(false)
}

fn election<C: Campaign>(lock: C) -> Election<C> {
    Election::new(
        lock,
        ElectionOptions::default().observe_every(Duration::from_millis(200)),
    )
    .unwrap()
}

/// One term of leadership: start, end, leader, epoch.
type Term = (Instant, Instant, String, u64);

/// **One leader at a time**: four campaigners, three terms each: the recorded terms never overlap and their epochs
/// strictly increase in the order the terms began.
pub async fn one_leader_at_a_time<C: Campaign>(make: impl Fn(&str) -> C) {
    let terms: Arc<Mutex<Vec<Term>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..4 {
        let e = election(make(&format!("campaigner-{i}")));
        let terms = terms.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                let l = e.campaign().await.unwrap();
                let start = Instant::now();
                assert!(l.is_leader());
                tokio::time::sleep(Duration::from_millis(150)).await;
                l.check().unwrap();
                let end = Instant::now();
                let (who, epoch) = (l.identity().to_string(), l.epoch());
                l.resign().await.unwrap();
                terms.lock().unwrap().push((start, end, who, epoch));
            }
        }));
    }
    for t in tasks {
        tokio::time::timeout(Duration::from_secs(90), t)
            .await
            .expect("12 terms within 90 s")
            .unwrap();
    }
    let mut terms = terms.lock().unwrap().clone();
    assert_eq!(terms.len(), 12);
    terms.sort_by_key(|t| t.0);
    for w in terms.windows(2) {
        assert!(
            w[0].1 <= w[1].0,
            "two leaders at once: {} until {:?}, {} from {:?}",
            w[0].2,
            w[0].1,
            w[1].2,
            w[1].0
        );
        assert!(w[0].3 < w[1].3, "epochs must strictly increase: {terms:?}");
    }
}

/// **A resignation hands over, and an observer sees it**: a resignation hands over to a waiting campaigner (polling) at its next poll, well before
/// the lease could expire, and an observer
/// sees the change of leader with a larger epoch.
pub async fn resign_hands_over_and_observe_sees_it<C: Campaign>(make: impl Fn(&str) -> C) {
    let a = election(make("leader-a"));
    let b = election(make("leader-b"));
    let watcher = election(make("observer"));
    let mut seen = watcher.observe();
    let la = a.campaign().await.unwrap();
    let first = tokio::time::timeout(
        Duration::from_secs(5),
        seen.wait_for(|l| l.as_ref().is_some_and(|l| l.identity == "leader-a")),
    )
    .await
    .expect("the observer sees leader-a within 5 s")
    .unwrap()
    .clone()
    .unwrap();
    assert_eq!(first.epoch, la.epoch());
    assert_eq!(a.leader().await.unwrap(), Some(first.clone()));
    let waiting = tokio::spawn(async move {
        let l = b.campaign().await.unwrap();
        (Instant::now(), l)
    });
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert!(!waiting.is_finished(), "b must not lead while a does");
    let resigned = Instant::now();
    la.resign().await.unwrap();
    let (got, lb) = waiting.await.unwrap();
    let handover = got - resigned;
    // The resignation releases the lock: the waiter gets it at its next poll, long before the
    // 15 s lease could expire (how soon within that depends on the machine's load, so the
    // bound is half the lease: a hand-over that waited for expiry fails it).
    assert!(
        handover < Duration::from_millis(7500),
        "resign handed over in {handover:?}: it waited for the lease to expire"
    );
    assert!(lb.epoch() > first.epoch);
    let second = tokio::time::timeout(
        Duration::from_secs(5),
        seen.wait_for(|l| l.as_ref().is_some_and(|l| l.identity == "leader-b")),
    )
    .await
    .expect("the observer sees leader-b within 5 s")
    .unwrap()
    .clone()
    .unwrap();
    assert_eq!(second.epoch, lb.epoch());
    lb.resign().await.unwrap();
    tokio::time::timeout(Duration::from_secs(5), seen.wait_for(Option::is_none))
        .await
        .expect("the observer sees nobody lead within 5 s")
        .unwrap();
}

type Log = Arc<Mutex<Vec<(Instant, String, ShardEvent)>>>;

/// Records `w`'s events with their arrival time; the returned sender makes it leave (its
/// `Lost` events are recorded as they come, before the releases).
fn record(
    log: &Log,
    mut w: azstore::leader::ShardWorker,
) -> (
    tokio::task::JoinHandle<()>,
    tokio::sync::oneshot::Sender<()>,
) {
    let log = log.clone();
    let (tx, mut rx) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(async move {
        let me = w.identity().to_string();
        let mut leaving = false;
        loop {
            tokio::select! {
                e = w.recv() => match e {
                    Some(e) => log.lock().unwrap().push((Instant::now(), me.clone(), e)),
                    None => return,
                },
                _ = &mut rx, if !leaving => {
                    leaving = true;
                    w.stop();
                }
            }
        }
    });
    (task, tx)
}

/// Owners per shard from the events, checking that no shard ever has two owners.
fn replay(log: &Log) -> BTreeMap<String, String> {
    let mut owner: BTreeMap<String, String> = BTreeMap::new();
    let mut epochs: HashMap<String, u64> = HashMap::new();
    let events = log.lock().unwrap().clone();
    for (t, w, e) in events {
        match e {
            ShardEvent::Acquired { shard, epoch } => {
                if let Some(other) = owner.get(&shard) {
                    panic!("{shard} acquired by {w} at {t:?} while {other} owns it");
                }
                if let Some(prev) = epochs.insert(shard.clone(), epoch) {
                    assert!(epoch > prev, "{shard}: epoch {epoch} after {prev}");
                }
                owner.insert(shard, w);
            }
            ShardEvent::Lost { shard } => {
                assert_eq!(owner.remove(&shard).as_deref(), Some(w.as_str()), "{shard}");
            }
            _ => unreachable!(),
        }
    }
    owner
}

fn loads(owner: &BTreeMap<String, String>) -> BTreeMap<String, usize> {
    let mut l = BTreeMap::new();
    for w in owner.values() {
        *l.entry(w.clone()).or_insert(0) += 1;
    }
    l
}

async fn wait_balanced(log: &Log, workers: usize, shards: usize) -> BTreeMap<String, usize> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let owner = replay(log);
        let l = loads(&owner);
        let (lo, hi) = (shards / workers, shards.div_ceil(workers));
        if owner.len() == shards && l.len() == workers && l.values().all(|c| (lo..=hi).contains(c))
        {
            return l;
        }
        assert!(
            Instant::now() < deadline,
            "not balanced over {workers} workers within 30 s: {l:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// **Shards balance without double ownership**: 8 shards over 1 -> 3 -> 2 workers (the third leaves gracefully): every step ends
/// balanced, no shard is ever owned twice, and each shard's epochs increase.
pub async fn shards_balance_without_double_ownership<F: LockFactory>(locks: F) {
    let group = ShardGroup::with_count(
        locks,
        &crate::unique("grp"),
        8,
        ShardOptions::default()
            .interval(Duration::from_millis(500))
            .member_slots(4),
    )
    .unwrap();
    let log: Log = Arc::default();
    let (w1, _s1) = record(&log, group.join("w1").unwrap());
    assert_eq!(wait_balanced(&log, 1, 8).await["w1"], 8);
    let (w2, _s2) = record(&log, group.join("w2").unwrap());
    let (w3, s3) = record(&log, group.join("w3").unwrap());
    let three = wait_balanced(&log, 3, 8).await;
    assert_eq!(three.values().sum::<usize>(), 8);
    s3.send(()).unwrap();
    w3.await.unwrap();
    let two = wait_balanced(&log, 2, 8).await;
    assert_eq!(two.values().copied().collect::<Vec<_>>(), vec![4, 4]);
    // Steady: no change over a few more intervals.
    let before = log.lock().unwrap().len();
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(
        log.lock().unwrap().len(),
        before,
        "changes in a steady group"
    );
    replay(&log);
    drop((_s1, _s2));
    w1.await.unwrap();
    w2.await.unwrap();
    assert!(replay(&log).is_empty(), "every shard released on leaving");
}
