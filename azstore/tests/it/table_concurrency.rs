//! Optimistic concurrency on one entity through the `Versioned` implementation: the trait's
//! contract, and 16 concurrent incrementers losing no update.
//!
//! The increment loop below is written directly against `Versioned` (read → replace with
//! If-Match → on 412 re-read and retry). When the `update()` combinator of the
//! read-modify-write issue lands, this is the loop it replaces.

use testkit::table as table_support;

use azstore::table::{Entity, Stored, VersionedEntity, WRITE_ID_PROPERTY};
use azstore::{ErrorCode, update::Versioned};
use serde::{Deserialize, Serialize};
use table_support::fresh_table;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Counter {
    partition_key: String,
    row_key: String,
    count: i64,
}

#[tokio::test]
async fn versioned_contract() {
    let t = fresh_table("ver").await;
    let v: VersionedEntity<Counter> = t.versioned("c", "hits").unwrap();
    assert!(v.read().await.unwrap().is_none());
    let c = Counter {
        partition_key: "c".into(),
        row_key: "hits".into(),
        count: 1,
    };
    let e1 = v.create(&c, "w1").await.unwrap();
    let dup = v.create(&c, "w1b").await.unwrap_err();
    assert_eq!(dup.error_code(), Some(&ErrorCode::EntityAlreadyExists));
    let cur = v.read().await.unwrap().unwrap();
    assert_eq!(cur.value, c);
    assert_eq!(cur.etag, e1);
    assert_eq!(cur.write_id.as_deref(), Some("w1"));
    // The write id is stored as a property, hidden from the typed value.
    let raw: Stored<Entity> = t.get("c", "hits").await.unwrap();
    assert!(raw.entity.get(WRITE_ID_PROPERTY).is_some());

    let c2 = Counter {
        count: 2,
        ..c.clone()
    };
    let e2 = v.replace(&c2, &e1, "w2").await.unwrap();
    assert!(
        v.replace(&c2, &e1, "w3")
            .await
            .unwrap_err()
            .is_precondition_failed()
    );
    assert!(v.delete(&e1).await.unwrap_err().is_precondition_failed());
    let cur = v.read().await.unwrap().unwrap();
    assert_eq!((cur.value.count, cur.write_id.as_deref()), (2, Some("w2")));
    // A value with other keys is refused before sending.
    let other = Counter {
        row_key: "x".into(),
        ..c2.clone()
    };
    let e = v.replace(&other, &e2, "w4").await.unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    v.delete(&e2).await.unwrap();
    assert!(v.read().await.unwrap().is_none());
}

/// One increment: read, add one, replace with If-Match; on 412 (or a lost create race)
/// re-read and retry with a little jittered backoff.
/// One increment through the read-modify-write combinator; returns its conflict count.
async fn increment(v: &VersionedEntity<Counter>) -> u32 {
    // No in-process turns: the 16 tasks behave as 16 processes and really collide.
    let policy = azstore::update::UpdatePolicy::default().take_turns(false);
    let outcome = azstore::update::update(v, &policy, |cur| {
        azstore::update::Decision::Write(match cur {
            Some(c) => Counter {
                count: c.count + 1,
                ..c.clone()
            },
            None => Counter {
                partition_key: "c".into(),
                row_key: "n".into(),
                count: 1,
            },
        })
    })
    .await
    .unwrap_or_else(|e| panic!("{e}"));
    outcome.conflicts
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sixteen_concurrent_incrementers_lose_nothing() {
    let t = fresh_table("inc").await;
    let v: VersionedEntity<Counter> = t.versioned("c", "n").unwrap();
    const TASKS: usize = 16;
    const EACH: usize = 5;
    let mut handles = Vec::new();
    for _ in 0..TASKS {
        let v = v.clone();
        handles.push(tokio::spawn(async move {
            let mut conflicts = 0;
            for _ in 0..EACH {
                conflicts += increment(&v).await;
            }
            conflicts
        }));
    }
    let mut conflicts = 0;
    for h in handles {
        conflicts += h.await.unwrap();
    }
    let cur = v.read().await.unwrap().unwrap();
    assert_eq!(
        cur.value.count,
        (TASKS * EACH) as i64,
        "no increment was lost"
    );
    assert!(
        conflicts > 0,
        "16 concurrent writers must have collided at least once"
    );
}
