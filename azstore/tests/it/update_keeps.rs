//! What `update()` stores besides the value, and what it keeps: a blob's other metadata and
//! HTTP headers survive every replace; a table entity's write-id property can be left out, at
//! the documented cost (an ambiguous write ends as `RequestSent::Maybe`, never applied twice).

use testkit as support;
use testkit::update::increment;

use std::collections::BTreeMap;
use std::time::Duration;

use azstore::blob::PutOptions;
use azstore::blob::{BlobBytes, BlobJson, WRITE_ID_METADATA};
use azstore::http::{ClientOptions, RetryPolicy};
use azstore::table::{Entity, TableClient, TableServiceClient, WRITE_ID_PROPERTY};
use azstore::update::{Change, Decision, UpdatePolicy, update};
use azstore::{Conditions, RequestSent, Service};
use support::fault::{Fault, FaultProxy, Rule};

/// The `N` that entity (p, r) holds, read directly.
async fn stored_n(table: &TableClient) -> Option<i64> {
    let got = table.get::<Entity>("p", "r").await.unwrap();
    got.entity.get("N").and_then(|v| v.as_i64())
}

#[tokio::test]
async fn update_keeps_the_blobs_other_metadata_and_http_headers() {
    let account = support::account();
    let c = support::blob::container_at(&account, "keep").await;
    let blob = c.blob("counter.json").unwrap();
    let put = PutOptions::new(Conditions::if_not_exists())
        .content_type("application/vnd.counter+json")
        .cache_control("no-cache")
        .content_language("en")
        .meta("owner", "team-a");
    blob.put("41", &put).await.unwrap();

    let counter = BlobJson::<u64>::new(blob.clone());
    for _ in 0..3 {
        update(&counter, &UpdatePolicy::default(), increment)
            .await
            .unwrap();
    }
    let props = blob.get_properties().await.unwrap();
    assert_eq!(
        props.metadata.get("owner").map(String::as_str),
        Some("team-a")
    );
    assert!(props.metadata.contains_key(WRITE_ID_METADATA));
    assert_eq!(props.metadata.len(), 2, "{:?}", props.metadata);
    let h = &props.http_headers;
    assert_eq!(
        h.content_type.as_deref(),
        Some("application/vnd.counter+json")
    );
    assert_eq!(h.cache_control.as_deref(), Some("no-cache"));
    assert_eq!(h.content_language.as_deref(), Some("en"));
    assert_eq!(blob.download().await.unwrap().body, "44");

    // Metadata changed by someone else between two updates is kept too.
    let mut meta = props.metadata.clone();
    meta.insert("reviewed".into(), "yes".into());
    blob.set_metadata(&meta, &Conditions::if_match(&props.etag))
        .await
        .unwrap();
    update(&counter, &UpdatePolicy::default(), increment)
        .await
        .unwrap();
    let props = blob.get_properties().await.unwrap();
    assert_eq!(
        props.metadata.get("reviewed").map(String::as_str),
        Some("yes")
    );
    assert_eq!(
        props.metadata.get("owner").map(String::as_str),
        Some("team-a")
    );

    // A caller-chosen content type replaces the stored one; the rest stays.
    let raw = BlobBytes::new(c.blob("raw").unwrap()).with_content_type("text/plain");
    let mut first: BTreeMap<String, String> = BTreeMap::new();
    first.insert("k".into(), "v".into());
    raw.blob()
        .put("a", &PutOptions::new(Conditions::none()).meta("k", "v"))
        .await
        .unwrap();
    update(&raw, &UpdatePolicy::default(), |_| {
        Decision::Write("b".into())
    })
    .await
    .unwrap();
    let p = raw.blob().get_properties().await.unwrap();
    assert_eq!(p.http_headers.content_type.as_deref(), Some("text/plain"));
    assert_eq!(p.metadata.get("k"), first.get("k"));
}

#[tokio::test]
async fn concurrent_updates_through_one_wrapper_keep_the_metadata() {
    let account = support::account();
    let c = support::blob::container_at(&account, "keepc").await;
    let blob = c.blob("n").unwrap();
    blob.put(
        "0",
        &PutOptions::new(Conditions::none()).meta("owner", "team-a"),
    )
    .await
    .unwrap();
    let counter = std::sync::Arc::new(BlobJson::<u64>::new(blob.clone()));
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let counter = counter.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..5 {
                update(&*counter, &UpdatePolicy::default(), increment)
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let d = blob.download().await.unwrap();
    assert_eq!(d.body, "40");
    assert_eq!(
        d.properties.metadata.get("owner").map(String::as_str),
        Some("team-a")
    );
}

#[tokio::test]
async fn a_table_entity_without_write_ids_stores_no_property_and_never_applies_twice() {
    let account = support::account();
    let tables = TableServiceClient::new(&account).unwrap();
    let name = support::unique("nowid").replace('-', "");
    let table = tables.table(&name).unwrap();
    table.create().await.unwrap();

    let plain = table
        .versioned::<Entity>("p", "r")
        .unwrap()
        .without_write_id();
    let bump = |cur: Option<&Entity>| {
        let mut e = cur.cloned().unwrap_or_else(|| Entity::new("p", "r"));
        let n = e.get("N").and_then(|v| v.as_i64()).unwrap_or(0);
        e.set("N", n + 1);
        Decision::Write(e)
    };
    for _ in 0..2 {
        update(&plain, &UpdatePolicy::default(), bump)
            .await
            .unwrap();
    }
    let stored = table.get::<Entity>("p", "r").await.unwrap();
    assert!(
        !stored.entity.properties.contains_key(WRITE_ID_PROPERTY),
        "{:?}",
        stored.entity.properties.keys().collect::<Vec<_>>()
    );
    assert_eq!(stored.entity.get("N").and_then(|v| v.as_i64()), Some(2));

    // A lost response to the replace: the write applied, but nothing can tell it is ours.
    let proxy = FaultProxy::start(&account, Service::Table).await;
    let via = TableServiceClient::with_options(
        &proxy.account(&account),
        ClientOptions::default()
            .retry(RetryPolicy::none())
            .timeout(Duration::from_secs(2))
            .total_timeout(Duration::from_secs(5)),
    )
    .unwrap()
    .table(&name)
    .unwrap();
    let plain = via
        .versioned::<Entity>("p", "r")
        .unwrap()
        .without_write_id();
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let err = update(&plain, &UpdatePolicy::default(), bump)
        .await
        .unwrap_err();
    assert_eq!(err.request_sent(), RequestSent::Maybe, "{err}");
    assert_eq!(proxy.count("PUT"), 1, "never written a second time");
    let n = stored_n(&table).await;
    assert_eq!(n, Some(3), "applied once");

    // With write ids (the default) the same fault is recognised as our write.
    let tracked = via.versioned::<Entity>("p", "r").unwrap();
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let out = update(&tracked, &UpdatePolicy::default(), bump)
        .await
        .unwrap();
    assert_eq!(out.change, Change::Replaced);
    assert_eq!(out.recovered_ambiguous, 1);
    let n = stored_n(&table).await;
    assert_eq!(n, Some(4));
}
