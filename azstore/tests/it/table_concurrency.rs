//! Optimistic concurrency on one entity through the `Versioned` implementation: the
//! table-specific parts of the trait's contract (write-id property, key checks). Concurrent
//! `update()`s are in the contract suite (`contract_versioned`).

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
