//! Queries against Azurite: paging through continuation tokens, filters that cannot be
//! broken out of, projections.

use testkit::table as table_support;

use std::collections::BTreeMap;

use azstore::table::{Batch, EdmValue, Entity, Filter, Query, Stored};
use futures_util::{StreamExt, TryStreamExt};
use serde::Deserialize;
use table_support::fresh_table;

#[tokio::test]
async fn paging_returns_every_entity_exactly_once() {
    let t = fresh_table("page").await;
    // 3 partitions x 40 rows, so pages end inside and at the edges of partitions.
    for p in 0..3 {
        let mut b = Batch::new();
        for r in 0..40 {
            b = b.insert(&Entity::new(format!("p{p}"), format!("r{r:02}")).with("V", p * 100 + r));
        }
        t.submit(&b).await.unwrap();
    }
    let first = t
        .query_page::<Entity>(&Query::all().top(7), None)
        .await
        .unwrap();
    assert_eq!(first.items.len(), 7);
    assert!(first.next_marker.is_some(), "120 entities, pages of 7");

    let got: Vec<Stored<Entity>> = t.query(Query::all().top(7)).try_collect().await.unwrap();
    let mut seen = BTreeMap::new();
    for s in &got {
        *seen
            .entry((s.entity.partition_key.clone(), s.entity.row_key.clone()))
            .or_insert(0) += 1;
    }
    assert_eq!(got.len(), 120);
    assert_eq!(seen.len(), 120);
    assert!(seen.values().all(|&n| n == 1));

    // Filtered paging.
    let q = Query::filter(Filter::eq("PartitionKey", "p1").unwrap()).top(9);
    let vals: Vec<i32> = t
        .query::<Entity>(q)
        .map_ok(|s| match s.entity.get("V") {
            Some(EdmValue::Int32(v)) => *v,
            other => panic!("{other:?}"),
        })
        .try_collect()
        .await
        .unwrap();
    assert_eq!(vals, (100..140).collect::<Vec<_>>());

    // The stream is lazy: taking 10 stops after two pages' worth.
    let ten: Vec<_> = t
        .query::<Entity>(Query::all().top(7))
        .take(10)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(ten.len(), 10);
}

#[tokio::test]
async fn filter_values_cannot_break_out_of_their_quotes() {
    let t = fresh_table("inj").await;
    let names = [
        "O'Brien",
        "x' or 'a' eq 'a",
        "plain",
        "''",
        "' or true or '",
    ];
    for (i, n) in names.iter().enumerate() {
        t.insert(&Entity::new("p", i.to_string()).with("Name", *n))
            .await
            .unwrap();
    }
    for (i, n) in names.iter().enumerate() {
        let got: Vec<Stored<Entity>> = t
            .query(Query::filter(Filter::eq("Name", *n).unwrap()))
            .try_collect()
            .await
            .unwrap();
        assert_eq!(got.len(), 1, "{n}: exactly its own entity");
        assert_eq!(got[0].entity.row_key, i.to_string());
    }
    let none: Vec<Stored<Entity>> = t
        .query(Query::filter(
            Filter::eq("Name", "nobody' or Name ne '").unwrap(),
        ))
        .try_collect()
        .await
        .unwrap();
    assert!(none.is_empty());
}

#[tokio::test]
async fn typed_filters_and_select() {
    let t = fresh_table("sel").await;
    for i in 0..10i64 {
        t.insert(
            &Entity::new("p", format!("{i}"))
                .with("Big", i * 1_000_000_000_000)
                .with("Even", i % 2 == 0)
                .with("Extra", "x"),
        )
        .await
        .unwrap();
    }
    #[derive(Debug, Deserialize)]
    struct Slim {
        #[serde(rename = "RowKey")]
        row_key: String,
        #[serde(rename = "Big")]
        big: i64,
    }
    let f = Filter::ge("Big", 5_000_000_000_000i64)
        .unwrap()
        .and(Filter::eq("Even", true).unwrap());
    let got: Vec<Stored<Slim>> = t
        .query(Query::filter(f).select(["RowKey", "Big"]))
        .try_collect()
        .await
        .unwrap();
    let keys: Vec<_> = got.iter().map(|s| s.entity.row_key.as_str()).collect();
    assert_eq!(keys, ["6", "8"]);
    assert_eq!(got[1].entity.big, 8_000_000_000_000);
    let raw: Vec<Stored<Entity>> = t
        .query(Query::all().select(["Even"]).top(1))
        .take(1)
        .try_collect()
        .await
        .unwrap();
    assert!(raw[0].entity.get("Extra").is_none(), "$select projected");
}
