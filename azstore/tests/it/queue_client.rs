//! Queue management against Azurite: create / if-not-exists, delete, metadata, properties,
//! listing with paging, ACL, clear; invalid input refused before sending.

use testkit as support;
use testkit::queue as queue_support;

use std::collections::BTreeMap;
use std::time::Duration;

use azstore::access_policy::SignedIdentifier;
use azstore::{ErrorCode, ErrorKind, RequestSent};
use futures_util::TryStreamExt;
use queue_support::{fresh_queue, service};

fn meta(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[tokio::test]
async fn create_exists_and_delete() {
    let q = service().queue(&support::unique("qc")).unwrap();
    assert!(!q.exists().await.unwrap());
    assert!(
        q.create(&meta(&[("owner", "a")])).await.unwrap(),
        "201 created"
    );
    // Same metadata again: the service answers 204 (exists, identical) -> false.
    assert!(!q.create(&meta(&[("owner", "a")])).await.unwrap());
    // Different metadata: 409 QueueAlreadyExists.
    let e = q.create(&meta(&[("owner", "b")])).await.unwrap_err();
    assert_eq!(e.status(), Some(409));
    assert_eq!(e.error_code(), Some(&ErrorCode::QueueAlreadyExists));
    assert!(e.is_conflict());
    assert!(!q.create_if_not_exists().await.unwrap());
    assert!(q.exists().await.unwrap());
    q.delete().await.unwrap();
    let e = q.delete().await.unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::QueueNotFound));
    assert!(!q.delete_if_exists().await.unwrap());
    let e = q.get_properties().await.unwrap_err();
    assert!(e.is_not_found());
}

#[tokio::test]
async fn metadata_and_message_count() {
    let q = fresh_queue("qm").await;
    let p = q.get_properties().await.unwrap();
    assert_eq!(p.approximate_message_count, 0);
    assert!(p.metadata.is_empty());
    q.set_metadata(&meta(&[("color", "blue"), ("n", "1")]))
        .await
        .unwrap();
    // Last writer wins: a second writer replaces the whole set.
    q.set_metadata(&meta(&[("color", "red")])).await.unwrap();
    for i in 0..3 {
        q.put_message(format!("m{i}")).await.unwrap();
    }
    let p = q.get_properties().await.unwrap();
    assert_eq!(p.metadata, meta(&[("color", "red")]));
    assert_eq!(p.approximate_message_count, 3);
    q.clear_messages().await.unwrap();
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        0
    );
    assert!(q.peek_messages(32).await.unwrap().is_empty());
    q.delete().await.unwrap();
}

#[tokio::test]
async fn list_queues_pages_through_everything() {
    let svc = service();
    let prefix = support::unique("ql");
    let mut names = Vec::new();
    for i in 0..7 {
        let q = svc.queue(&format!("{prefix}-{i}")).unwrap();
        q.create(&meta(&[("i", &i.to_string())])).await.unwrap();
        names.push(q.name().to_string());
    }
    let page = svc
        .list_queues_page(Some(&prefix), None, Some(3))
        .await
        .unwrap();
    assert_eq!(page.items.len(), 3);
    assert!(
        page.next_marker.is_some(),
        "7 queues do not fit in a page of 3"
    );
    let all: Vec<_> = svc
        .list_queues(Some(&prefix), Some(3))
        .try_collect()
        .await
        .unwrap();
    let listed: Vec<String> = all.iter().map(|q| q.name.clone()).collect();
    assert_eq!(listed, names, "every queue once, in name order");
    assert_eq!(all[4].metadata, meta(&[("i", "4")]));
    let e = svc.list_queues_page(None, None, Some(0)).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    for n in names {
        svc.queue(&n).unwrap().delete().await.unwrap();
    }
}

#[tokio::test]
async fn access_policy_round_trip() {
    let q = fresh_queue("qa").await;
    assert!(q.get_access_policy().await.unwrap().is_empty());
    let start = time::macros::datetime!(2026-01-01 00:00:00 UTC);
    let policies = vec![
        SignedIdentifier::new("readers", "rp")
            .start(start)
            .expiry(start + Duration::from_secs(86400)),
        SignedIdentifier::new("writers", "au"),
    ];
    q.set_access_policy(&policies).await.unwrap();
    assert_eq!(q.get_access_policy().await.unwrap(), policies);
    q.set_access_policy(&[]).await.unwrap();
    assert!(q.get_access_policy().await.unwrap().is_empty());

    let six: Vec<_> = (0..6)
        .map(|i| SignedIdentifier::new(format!("p{i}"), "r"))
        .collect();
    for bad in [
        six,
        vec![SignedIdentifier::new("x", "rwd")],
        vec![SignedIdentifier::new("", "r")],
    ] {
        let e = q.set_access_policy(&bad).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert_eq!(e.request_sent(), RequestSent::No);
    }
    q.delete().await.unwrap();
}

#[tokio::test]
async fn invalid_names_refused_before_sending() {
    let svc = service();
    for bad in ["ab", "UPPER", "a--b", "-ab", "ab-", "a_b", &"a".repeat(64)] {
        let e = svc.queue(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
        assert_eq!(e.request_sent(), RequestSent::No);
    }
    // The default poison queue name must also be valid.
    let long = svc.queue(&"a".repeat(60)).unwrap();
    let e = azstore::queue::process(long, |_d| async { Ok(()) }, Default::default()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}
