//! Entity group transactions against Azurite: atomic commit, the failing operation named,
//! nothing applied on failure, and bad batches refused before sending.

use testkit as support;
use testkit::table as table_support;

use azstore::table::{Batch, EdmValue, Entity, Query, Stored, failed_operation_index};
use azstore::{ErrorCode, ErrorKind, MatchCondition, RequestSent};
use futures_util::TryStreamExt;
use table_support::{fresh_table, service};

fn row(pk: &str, rk: usize, n: i64) -> Entity {
    Entity::new(pk, format!("{rk:03}")).with("N", n)
}

async fn all(t: &azstore::table::TableClient) -> Vec<Stored<Entity>> {
    t.query(Query::all()).try_collect().await.unwrap()
}

#[tokio::test]
async fn a_100_operation_batch_commits_atomically() {
    let t = fresh_table("b100").await;
    let mut b = Batch::new();
    for i in 0..100 {
        b = b.insert(&row("p", i, i as i64));
    }
    let res = t.submit(&b).await.unwrap();
    assert_eq!(res.len(), 100);
    assert!(res.iter().all(|r| r.status == 204 && r.etag.is_some()));
    let stored = all(&t).await;
    assert_eq!(stored.len(), 100);
    for (i, s) in stored.iter().enumerate() {
        assert_eq!(s.entity.row_key, format!("{i:03}"));
        assert_eq!(s.entity.get("N"), Some(&EdmValue::Int64(i as i64)));
        assert_eq!(
            Some(&s.etag),
            res[i].etag.as_ref(),
            "batch returns each new ETag"
        );
    }
}

#[tokio::test]
async fn mixed_operations_each_with_their_own_if_match() {
    let t = fresh_table("bmix").await;
    let e1 = t.insert(&row("p", 1, 1)).await.unwrap();
    let e2 = t.insert(&row("p", 2, 2)).await.unwrap();
    let e3 = t.insert(&row("p", 3, 3)).await.unwrap();
    t.insert(&row("p", 4, 4)).await.unwrap();
    let b = Batch::new()
        .replace(&row("p", 1, 10), &e1)
        .merge(&Entity::new("p", "002").with("M", "merged"), &e2)
        .delete("p", "003", &e3)
        .replace(&row("p", 4, 40), MatchCondition::Any)
        .insert_or_replace(&row("p", 5, 50))
        .insert_or_merge(&row("p", 6, 60))
        .insert(&row("p", 7, 70));
    let res = t.submit(&b).await.unwrap();
    assert_eq!(res.len(), 7);
    assert!(res[2].etag.is_none(), "delete returns no ETag");
    let stored = all(&t).await;
    let n = |rk: &str| {
        stored
            .iter()
            .find(|s| s.entity.row_key == rk)
            .map(|s| s.entity.clone())
    };
    assert_eq!(n("001").unwrap().get("N"), Some(&EdmValue::Int64(10)));
    let two = n("002").unwrap();
    assert_eq!(two.get("N"), Some(&EdmValue::Int64(2)), "merge kept N");
    assert_eq!(two.get("M"), Some(&EdmValue::String("merged".into())));
    assert!(n("003").is_none());
    assert_eq!(n("004").unwrap().get("N"), Some(&EdmValue::Int64(40)));
    assert_eq!(stored.len(), 6);
}

#[tokio::test]
async fn one_stale_etag_fails_the_whole_batch_and_names_the_operation() {
    let t = fresh_table("bstale").await;
    let mut etags = Vec::new();
    for i in 0..4 {
        etags.push(t.insert(&row("p", i, 0)).await.unwrap());
    }
    // Someone else updates entity 2 after we read it.
    t.replace(&row("p", 2, 99), MatchCondition::Any)
        .await
        .unwrap();
    let before = all(&t).await;

    let mut b = Batch::new();
    for (i, etag) in etags.iter().enumerate() {
        b = b.replace(&row("p", i, 1), etag);
    }
    b = b.insert(&row("p", 9, 1));
    let e = t.submit(&b).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert_eq!(e.status(), Some(412));
    assert_eq!(
        e.error_code(),
        Some(&ErrorCode::UpdateConditionNotSatisfied)
    );
    assert_eq!(failed_operation_index(&e), Some(2), "{e}");
    assert!(e.message().contains("RowKey \"002\""), "{e}");

    let after = all(&t).await;
    assert_eq!(after, before, "nothing of the failed batch was applied");
    assert!(after.iter().all(|s| s.entity.row_key != "009"));
}

#[tokio::test]
async fn a_duplicate_insert_fails_the_batch_with_409() {
    let t = fresh_table("bdup").await;
    t.insert(&row("p", 3, 3)).await.unwrap();
    let b = Batch::new()
        .insert(&row("p", 1, 1))
        .insert(&row("p", 2, 2))
        .insert(&row("p", 3, 30));
    let e = t.submit(&b).await.unwrap_err();
    assert_eq!(e.status(), Some(409));
    assert_eq!(e.error_code(), Some(&ErrorCode::EntityAlreadyExists));
    assert_eq!(failed_operation_index(&e), Some(2), "{e}");
    let after = all(&t).await;
    assert_eq!(after.len(), 1, "inserts 0 and 1 were rolled back");
    assert_eq!(after[0].entity.get("N"), Some(&EdmValue::Int64(3)));
}

#[tokio::test]
async fn bad_batches_are_refused_before_sending() {
    // A table that does not exist: anything sent would come back 404, not InvalidInput.
    let t = service().table(&support::unique("nobatch")).unwrap();
    let check = |e: azstore::Error, what: &str| {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
        assert_eq!(e.request_sent(), RequestSent::No, "{what}");
    };
    let mut b = Batch::new();
    for i in 0..101 {
        b = b.insert(&row("p", i, 0));
    }
    check(t.submit(&b).await.unwrap_err(), "101 operations");
    let b = Batch::new().insert(&row("p", 1, 0)).insert(&row("q", 2, 0));
    let e = t.submit(&b).await.unwrap_err();
    assert_eq!(failed_operation_index(&e), Some(1));
    check(e, "two partition keys");
    let b = Batch::new()
        .insert(&row("p", 1, 0))
        .delete("p", "001", MatchCondition::Any);
    check(t.submit(&b).await.unwrap_err(), "duplicate row key");
    let b = Batch::new().insert(&Entity::new("p", "a/b"));
    check(t.submit(&b).await.unwrap_err(), "bad key");
    let b = Batch::new().delete("p", "a#b", MatchCondition::Any);
    check(t.submit(&b).await.unwrap_err(), "bad key in delete");
    check(t.submit(&Batch::new()).await.unwrap_err(), "empty");
    let big = "x".repeat(500 * 1024);
    let mut b = Batch::new();
    for i in 0..10 {
        b = b.insert(&Entity::new("p", i.to_string()).with("S", big.as_str()));
    }
    check(t.submit(&b).await.unwrap_err(), "over 4 MiB");
}
