//! `BlobStore` (feature `object_store`) on Azurite: object_store's own reusable suite
//! (`object_store::integration`), one test per function that applies to Azure Blob Storage,
//! each in a container of its own; lost replies of conditional writes recognised through the
//! fault proxy; and `update()` over `Object` joining the versioned contract suite, backed by
//! `InMemory` and by `BlobStore`.
//!
//! Not run here (see docs/object_store.md): none of the suite's public functions is left out.

use std::sync::Arc;
use std::time::Duration;

use azstore::object_store::{BlobStore, Object};
use azstore::{Service, StorageAccount};
use bytes::Bytes;
use object_store::integration;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::throttle::{ThrottleConfig, ThrottledStore};
use object_store::{
    CopyMode, CopyOptions, ObjectStore, ObjectStoreExt, PutMode, PutMultipartOptions, UpdateVersion,
};
use testkit::contract::versioned::{self as contract, Counter, HttpWrites};
use testkit::fault::{Fault, FaultProxy, Rule};

/// A store over a fresh container of the Azurite account.
async fn store() -> BlobStore {
    BlobStore::new(testkit::blob::container("objstore").await)
}

macro_rules! suite {
    ($($name:ident => |$s:ident| $call:expr;)*) => {$(
        #[tokio::test]
        async fn $name() {
            let $s = store().await;
            $call.await;
        }
    )*};
}

suite! {
    object_store_suite_put_get_delete_list => |s| integration::put_get_delete_list(&s);
    object_store_suite_put_get_attributes => |s| integration::put_get_attributes(&s);
    object_store_suite_get_opts => |s| integration::get_opts(&s);
    object_store_suite_put_opts => |s| integration::put_opts(&s, true);
    object_store_suite_stream_get => |s| integration::stream_get(&s);
    object_store_suite_list_uses_directories_correctly => |s| integration::list_uses_directories_correctly(&s);
    object_store_suite_list_with_delimiter => |s| integration::list_with_delimiter(&s);
    object_store_suite_rename_and_copy => |s| integration::rename_and_copy(&s);
    object_store_suite_copy_if_not_exists => |s| integration::copy_if_not_exists(&s);
    object_store_suite_copy_rename_nonexistent_object => |s| integration::copy_rename_nonexistent_object(&s);
    object_store_suite_multipart => |s| integration::multipart(&s, &s);
    object_store_suite_multipart_with_opts => |s| integration::multipart_with_opts(&s, &s);
    object_store_suite_multipart_put_part_out_of_order => |s| integration::multipart_put_part_out_of_order(&s, &s);
    // Two uploads to one blob: the first completion commits its blocks and discards the
    // other's, whose completion then fails (Put Block List 400 InvalidBlockList).
    object_store_suite_multipart_race_condition => |s| integration::multipart_race_condition(&s, false);
    object_store_suite_multipart_out_of_order => |s| integration::multipart_out_of_order(&s);
    object_store_suite_list_paginated => |s| integration::list_paginated(&s, &s);
    object_store_suite_list_with_offset_exclusivity => |s| integration::list_with_offset_exclusivity(&s);
}

#[tokio::test]
async fn object_store_suite_get_nonexistent_object() {
    let s = store().await;
    let err = integration::get_nonexistent_object(&s, None)
        .await
        .unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

/// The same suite under a prefix: every path lives under it, and listings report paths
/// relative to it.
#[tokio::test]
async fn object_store_suite_put_get_delete_list_under_a_prefix() {
    let container = testkit::blob::container("objstore").await;
    let s = BlobStore::new(container.clone()).with_prefix("tenant/a");
    integration::put_get_delete_list(&s).await;
    s.put(&Path::from("x/y"), "z".into()).await.unwrap();
    assert!(
        container
            .blob("tenant/a/x/y")
            .unwrap()
            .exists()
            .await
            .unwrap()
    );
}

// ---------------------------------------------------------------------------------------------
// Lost replies of conditional writes, through the fault proxy.

/// A store through a fault proxy, the same container reached directly, and the proxy.
async fn proxied() -> (BlobStore, BlobStore, FaultProxy) {
    let direct = store().await;
    let account = testkit::account();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let via = proxy
        .account(&account)
        .container(direct.container().name())
        .unwrap();
    (BlobStore::new(via), direct, proxy)
}

fn etag_of(put: &object_store::PutResult) -> String {
    put.e_tag.clone().expect("an ETag")
}

#[tokio::test]
async fn object_store_lost_reply_of_a_create_is_recognised() {
    let (store, direct, proxy) = proxied().await;
    let path = Path::from("log/00000000000000000001.json");
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let put = store
        .put_opts(&path, "commit 1".into(), PutMode::Create.into())
        .await
        .expect("an applied create whose reply was lost is Ok, not AlreadyExists");
    assert_eq!(proxy.count("PUT"), 1, "the create was sent once");
    let head = direct.head(&path).await.unwrap();
    assert_eq!(head.e_tag.as_deref(), Some(etag_of(&put).as_str()));
    // A second writer's create of the same number stays refused.
    let err = store
        .put_opts(&path, "commit 1 again".into(), PutMode::Create.into())
        .await
        .unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn object_store_lost_reply_of_an_update_is_recognised() {
    let (store, direct, proxy) = proxied().await;
    let path = Path::from("_last_checkpoint");
    let v1 = direct.put(&path, "v1".into()).await.unwrap();
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let v2 = store
        .put_opts(
            &path,
            "v2".into(),
            PutMode::Update(v1.clone().into()).into(),
        )
        .await
        .expect("an applied update whose reply was lost is Ok, not Precondition");
    assert_eq!(proxy.count("PUT"), 1);
    let got = direct.get(&path).await.unwrap();
    assert_eq!(got.meta.e_tag.as_deref(), Some(etag_of(&v2).as_str()));
    assert_ne!(v1.e_tag, v2.e_tag);
    assert_eq!(got.bytes().await.unwrap(), Bytes::from("v2"));
}

#[tokio::test]
async fn object_store_lost_reply_of_a_multipart_completion_is_recognised() {
    let (store, direct, proxy) = proxied().await;
    let path = Path::from("big/part-00000.parquet");
    let mut upload = store
        .put_multipart_mode(&path, PutMultipartOptions::default(), PutMode::Create)
        .await
        .unwrap();
    upload.put_part(vec![1u8; 1024].into()).await.unwrap();
    upload.put_part(vec![2u8; 512].into()).await.unwrap();
    proxy.inject(
        Rule::new(Fault::LoseResponse)
            .method("PUT")
            .target_contains("comp=blocklist"),
    );
    let put = upload
        .complete()
        .await
        .expect("an applied completion whose reply was lost is Ok");
    assert_eq!(proxy.count_matching("PUT", "comp=blocklist"), 1);
    let got = direct.get(&path).await.unwrap();
    assert_eq!(got.meta.e_tag.as_deref(), Some(etag_of(&put).as_str()));
    assert_eq!(got.meta.size, 1536);
    // The same conditional completion through MultipartStore, against an existing blob:
    // refused, whatever happens to its reply.
    let mut opts = PutMultipartOptions::default();
    opts.extensions.insert(PutMode::Create);
    let mut again = store.put_multipart_opts(&path, opts).await.unwrap();
    again.put_part(vec![3u8; 10].into()).await.unwrap();
    let err = again.complete().await.unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn object_store_lost_reply_of_copy_if_not_exists_is_recognised() {
    let (store, direct, proxy) = proxied().await;
    let (from, to) = (Path::from("staging/a"), Path::from("final/a"));
    direct
        .put_opts(
            &from,
            "data".into(),
            object_store::Attributes::from_iter([(
                object_store::Attribute::Metadata("origin".into()),
                "import",
            )])
            .into(),
        )
        .await
        .unwrap();
    proxy.inject(
        Rule::new(Fault::LoseResponse)
            .method("PUT")
            .target_contains("final/a"),
    );
    store
        .copy_opts(&from, &to, CopyOptions::new().with_mode(CopyMode::Create))
        .await
        .expect("an applied copy whose reply was lost is Ok, not AlreadyExists");
    assert_eq!(proxy.count_matching("PUT", "final/a"), 1);
    let got = direct.get(&to).await.unwrap();
    // The copy keeps the source's metadata; the write id is not reported.
    assert_eq!(
        got.attributes
            .get(&object_store::Attribute::Metadata("origin".into()))
            .map(|v| v.as_ref()),
        Some("import")
    );
    assert_eq!(got.attributes.len(), 2, "{:?}", got.attributes); // + the content type
    assert_eq!(got.bytes().await.unwrap(), Bytes::from("data"));
    let err = store.copy_if_not_exists(&from, &to).await.unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
}

/// A create whose outcome is unknown (a 500 `OperationTimedOut`, which the proxy answers
/// without forwarding) while another writer's object is there: the refusal stays.
#[tokio::test]
async fn object_store_unknown_outcome_with_a_rival_keeps_the_refusal() {
    let (store, direct, proxy) = proxied().await;
    let path = Path::from("log/7.json");
    direct
        .put_opts(&path, "theirs".into(), PutMode::Create.into())
        .await
        .unwrap();
    proxy.inject(Rule::new(Fault::status(500, "OperationTimedOut")).method("PUT"));
    let err = store
        .put_opts(&path, "ours".into(), PutMode::Create.into())
        .await
        .unwrap_err();
    assert!(
        matches!(err, object_store::Error::AlreadyExists { .. }),
        "{err}"
    );
    assert_eq!(
        direct.get(&path).await.unwrap().bytes().await.unwrap(),
        Bytes::from("theirs")
    );
    // An update conditioned on a stale version, outcome unknown: Precondition.
    let stale = UpdateVersion {
        e_tag: Some("\"0x1\"".into()),
        version: None,
    };
    proxy.inject(Rule::new(Fault::status(500, "OperationTimedOut")).method("PUT"));
    let err = store
        .put_opts(&path, "ours".into(), PutMode::Update(stale).into())
        .await
        .unwrap_err();
    assert!(
        matches!(err, object_store::Error::Precondition { .. }),
        "{err}"
    );
}

/// A create whose outcome is unknown and that did not apply (the 500 was answered without
/// forwarding): the read shows nothing, the create is sent again with the same write id.
#[tokio::test]
async fn object_store_rename_keeps_a_source_rewritten_between_its_copy_and_its_delete() {
    let (store, direct, proxy) = proxied().await;
    let (from, to) = (Path::from("staging/part-0"), Path::from("final/part-0"));
    direct.put(&from, "version 1".into()).await.unwrap();
    // The rename's Delete Blob is answered 503 with `Retry-After: 3` (not forwarded): the
    // store sends it again 3 s later, and in between another writer rewrites the source.
    proxy.inject(Rule::new(Fault::busy_retry_after("3")).method("DELETE"));
    let rename = tokio::spawn({
        let (store, from, to) = (store.clone(), from.clone(), to.clone());
        async move { store.rename(&from, &to).await }
    });
    while proxy.count("DELETE") == 0 && !rename.is_finished() {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    direct.put(&from, "version 2".into()).await.unwrap();
    let err = rename.await.unwrap().unwrap_err();
    assert!(
        matches!(err, object_store::Error::Precondition { .. }),
        "a rename whose source changed after the copy: {err}"
    );
    assert_eq!(
        proxy.count("DELETE"),
        2,
        "the delete was sent again after the 503"
    );
    assert_eq!(proxy.forwarded("DELETE"), 1);
    // The destination holds the version copied; the rewritten source is not deleted.
    let read = |p: Path| {
        let direct = direct.clone();
        async move { direct.get(&p).await.unwrap().bytes().await.unwrap() }
    };
    assert_eq!(read(to).await, "version 1");
    assert_eq!(read(from).await, "version 2");
}

#[tokio::test]
async fn object_store_unknown_outcome_not_applied_is_sent_again() {
    let (store, direct, proxy) = proxied().await;
    let path = Path::from("log/8.json");
    proxy.inject(Rule::new(Fault::status(500, "OperationTimedOut")).method("PUT"));
    store
        .put_opts(&path, "ours".into(), PutMode::Create.into())
        .await
        .unwrap();
    assert_eq!(
        proxy.count("PUT"),
        2,
        "refused once without applying, then sent again"
    );
    assert_eq!(proxy.forwarded("PUT"), 1);
    assert_eq!(
        direct.get(&path).await.unwrap().bytes().await.unwrap(),
        Bytes::from("ours")
    );
}

// ---------------------------------------------------------------------------------------------
// update() over Object: the versioned contract, backed by InMemory and by BlobStore.

fn counter_bytes() -> Counter<Bytes> {
    Counter {
        value: |n| Bytes::from(n.to_string()),
        count: |b| std::str::from_utf8(b).unwrap().parse().unwrap(),
    }
}

/// `InMemory` behind object_store's `ThrottledStore`, 1 ms per get and put: InMemory answers
/// without ever yielding, so concurrent updates in one process would almost never queue for
/// their turn (and turns would have nothing to hand over); with the delay of a round trip they
/// meet as they do on a real store.
fn in_memory() -> Arc<dyn ObjectStore> {
    let config = ThrottleConfig {
        wait_get_per_call: Duration::from_millis(1),
        wait_put_per_call: Duration::from_millis(1),
        ..ThrottleConfig::default()
    };
    Arc::new(ThrottledStore::new(InMemory::new(), config))
}

async fn blob_store() -> Arc<dyn ObjectStore> {
    Arc::new(store().await)
}

fn item(store: &Arc<dyn ObjectStore>) -> Object {
    Object::new(store.clone(), Path::from("counter"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_one_process_wastes_no_write_and_hands_over_object_in_memory() {
    let s = in_memory();
    contract::turns_hand_over_what_was_written(|| item(&s), counter_bytes(), true)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_separate_writers_lose_no_update_object_in_memory() {
    let s = in_memory();
    contract::separate_writers_lose_no_update(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_create_race_one_wins_object_in_memory() {
    let s = in_memory();
    contract::create_race_one_wins(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

#[tokio::test]
async fn contract_versioned_the_pace_passes_between_writers_object_in_memory() {
    let s = in_memory();
    contract::the_pace_passes_between_writers(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_one_process_wastes_no_write_and_hands_over_object_blob_store() {
    let s = blob_store().await;
    contract::turns_hand_over_what_was_written(|| item(&s), counter_bytes(), true)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_separate_writers_lose_no_update_object_blob_store() {
    let s = blob_store().await;
    contract::separate_writers_lose_no_update(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn contract_versioned_create_race_one_wins_object_blob_store() {
    let s = blob_store().await;
    contract::create_race_one_wins(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

#[tokio::test]
async fn contract_versioned_the_pace_passes_between_writers_object_blob_store() {
    let s = blob_store().await;
    contract::the_pace_passes_between_writers(|| item(&s), counter_bytes())
        .await
        .unwrap();
}

/// The counter through a proxied `BlobStore`, the same counter reached directly, the proxy.
async fn object_faults() -> (Object, Object, HttpWrites) {
    let (via, direct, proxy) = proxied().await;
    let faults = HttpWrites {
        proxy,
        replace: ("PUT", "/counter"),
        create: ("PUT", "/counter"),
    };
    let via: Arc<dyn ObjectStore> = Arc::new(via);
    let direct: Arc<dyn ObjectStore> = Arc::new(direct);
    (item(&via), item(&direct), faults)
}

#[tokio::test]
async fn contract_versioned_ambiguous_replace_is_applied_once_object_blob_store() {
    let (item, direct, faults) = object_faults().await;
    contract::ambiguous_replace_is_applied_once(&item, &direct, &faults, counter_bytes())
        .await
        .unwrap();
}

#[tokio::test]
async fn contract_versioned_ambiguous_create_is_applied_once_object_blob_store() {
    let (item, direct, faults) = object_faults().await;
    contract::ambiguous_create_is_applied_once(&item, &direct, &faults, counter_bytes())
        .await
        .unwrap();
}

/// Constructors: from the environment and from URLs in object_store's forms.
#[tokio::test]
async fn object_store_from_env_and_urls_reach_the_container() {
    let container = testkit::blob::container("objstore").await;
    let account = testkit::account();
    let by_env = BlobStore::from_env(container.name()).unwrap();
    by_env.put(&Path::from("k"), "v".into()).await.unwrap();
    let url = format!(
        "{}/{}/sub",
        account.endpoint(Service::Blob).unwrap().url(),
        container.name()
    );
    let by_url = BlobStore::from_url(&url).unwrap();
    by_url.put(&Path::from("k"), "w".into()).await.unwrap();
    assert!(container.blob("sub/k").unwrap().exists().await.unwrap());
    let az = BlobStore::from_url_with(&format!("az://{}", container.name()), &account).unwrap();
    assert_eq!(
        az.get(&Path::from("k"))
            .await
            .unwrap()
            .bytes()
            .await
            .unwrap(),
        Bytes::from("v")
    );
    let other = StorageAccount::new("someoneelse", "a2V5").unwrap();
    assert!(BlobStore::from_url_with(&url, &other).is_err());
}

/// Tags and attributes reach the blob: index tags from `PutOptions::tags` (put and multipart),
/// HTTP headers and metadata from the attributes, and the write id stays out of the
/// attributes a get reports.
#[tokio::test]
async fn object_store_tags_and_attributes_are_stored() {
    let container = testkit::blob::container("objstore").await;
    let s = BlobStore::new(container.clone());
    let mut tags = object_store::TagSet::default();
    tags.push("project", "apollo 11");
    let attributes = object_store::Attributes::from_iter([
        (object_store::Attribute::ContentType, "text/csv"),
        (object_store::Attribute::Metadata("owner".into()), "team-a"),
    ]);
    let opts = object_store::PutOptions {
        mode: PutMode::Create,
        tags: tags.clone(),
        attributes: attributes.clone(),
        ..Default::default()
    };
    s.put_opts(&Path::from("t/a.csv"), "id\n1\n".into(), opts)
        .await
        .unwrap();
    let blob = container.blob("t/a.csv").unwrap();
    let stored = blob.get_tags().await.unwrap();
    assert_eq!(stored.get("project").map(String::as_str), Some("apollo 11"));
    let got = s.get(&Path::from("t/a.csv")).await.unwrap();
    assert_eq!(
        got.attributes, attributes,
        "no write id among the attributes"
    );
    assert!(
        blob.get_properties()
            .await
            .unwrap()
            .metadata
            .contains_key(azstore::object_store::PUT_ID_METADATA),
        "the create stored its write id"
    );
    let mut upload = s
        .put_multipart_opts(
            &Path::from("t/b.csv"),
            PutMultipartOptions {
                tags,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    upload.put_part("id\n2\n".into()).await.unwrap();
    upload.complete().await.unwrap();
    let stored = container.blob("t/b.csv").unwrap().get_tags().await.unwrap();
    assert_eq!(stored.get("project").map(String::as_str), Some("apollo 11"));
}

// ---------------------------------------------------------------------------------------------
// delete_stream through Blob Batch.

/// 300 objects, a missing path and an error of the input stream: one result per path in
/// order, the missing one `NotFound` (as `delete` reports it), the input error passed through,
/// every object gone.
#[tokio::test]
async fn object_store_delete_stream_batches_and_reports_per_path() {
    use futures_util::{StreamExt, TryStreamExt};
    let s = store().await.with_prefix("p");
    let paths: Vec<Path> = (0..300)
        .map(|i| Path::from(format!("t/{i:04} weird & ü.parquet")))
        .collect();
    futures_util::stream::iter(&paths)
        .map(|p| {
            let s = s.clone();
            async move { s.put(p, "x".into()).await.unwrap() }
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
    let mut input: Vec<object_store::Result<Path>> = paths.iter().cloned().map(Ok).collect();
    input.insert(150, Ok(Path::from("t/missing")));
    input.insert(
        10,
        Err(object_store::Error::Generic {
            store: "input",
            source: "a listing failed".into(),
        }),
    );
    let out: Vec<object_store::Result<Path>> = s
        .delete_stream(futures_util::stream::iter(input).boxed())
        .collect()
        .await;
    assert_eq!(out.len(), 302);
    assert!(
        matches!(
            &out[10],
            Err(object_store::Error::Generic { store: "input", .. })
        ),
        "{:?}",
        out[10]
    );
    match &out[151] {
        Err(object_store::Error::NotFound { path, .. }) => assert!(path.ends_with("t/missing")),
        other => panic!("{other:?}"),
    }
    let deleted: Vec<&Path> = out
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 10 && *i != 151)
        .map(|(_, r)| r.as_ref().unwrap())
        .collect();
    assert_eq!(deleted, paths.iter().collect::<Vec<_>>(), "in input order");
    let left: Vec<_> = s.list(None).try_collect().await.unwrap();
    assert!(left.is_empty(), "{left:?}");
    // `delete` of a missing object is NotFound too.
    let err = s.delete(&Path::from("t/missing")).await.unwrap_err();
    assert!(matches!(err, object_store::Error::NotFound { .. }), "{err}");
}

/// A leased object is refused alone, with the variant `delete` gives it; the others go.
#[tokio::test]
async fn object_store_delete_stream_refuses_a_leased_object_alone() {
    use futures_util::StreamExt;
    let s = store().await;
    for p in ["a", "held", "b"] {
        s.put(&Path::from(p), "x".into()).await.unwrap();
    }
    s.container()
        .blob("held")
        .unwrap()
        .acquire_lease(
            azstore::lease::LeaseDuration::Infinite,
            None,
            &azstore::Conditions::none(),
        )
        .await
        .unwrap();
    let input = ["a", "held", "b"].map(|p| Ok(Path::from(p)));
    let out: Vec<_> = s
        .delete_stream(futures_util::stream::iter(input).boxed())
        .collect()
        .await;
    assert_eq!(out[0].as_ref().unwrap(), &Path::from("a"));
    assert_eq!(out[2].as_ref().unwrap(), &Path::from("b"));
    let batch_err = out[1].as_ref().unwrap_err();
    assert!(
        matches!(batch_err, object_store::Error::Precondition { .. }),
        "{batch_err}"
    );
    let single = s.delete(&Path::from("held")).await.unwrap_err();
    assert!(
        matches!(single, object_store::Error::Precondition { .. }),
        "{single}"
    );
    assert!(s.head(&Path::from("held")).await.is_ok());
    assert!(matches!(
        s.head(&Path::from("a")).await,
        Err(object_store::Error::NotFound { .. })
    ));
}

/// Paths are deleted as they come: three paths from a stream that then waits are answered
/// without waiting for a full batch of 256.
#[tokio::test]
async fn object_store_delete_stream_does_not_wait_for_a_full_batch() {
    use futures_util::StreamExt;
    let s = store().await;
    for p in ["x/1", "x/2", "x/3"] {
        s.put(&Path::from(p), "x".into()).await.unwrap();
    }
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    for p in ["x/1", "x/2", "x/3"] {
        tx.send(Ok(Path::from(p))).unwrap();
    }
    // `tx` stays open: the input stream has more to come, later.
    let input = futures_util::stream::unfold(rx, |mut rx| async move {
        rx.recv().await.map(|item| (item, rx))
    })
    .boxed();
    let out = s.delete_stream(input).take(3).collect::<Vec<_>>();
    // A hang guard, not a timing assertion: waiting for a full batch would never end.
    let out = tokio::time::timeout(Duration::from_secs(60), out)
        .await
        .expect("three results without a full batch");
    for r in out {
        r.unwrap();
    }
    drop(tx);
}

/// A subrequest answered with a transient status (503 `ServerBusy`) is deleted again on its
/// own through the pipeline (as a single delete would have been retried); the others are
/// not sent twice. Against a scripted server: Azurite does not answer a subrequest with 503.
#[tokio::test]
async fn object_store_delete_stream_resends_a_busy_subrequest_alone() {
    use futures_util::StreamExt;
    let reply = "--r\r\nContent-Type: application/http\r\nContent-ID: 0\r\n\r\n\
                 HTTP/1.1 202 Accepted\r\nx-ms-delete-type-permanent: false\r\n\r\n\
                 --r\r\nContent-Type: application/http\r\nContent-ID: 1\r\n\r\n\
                 HTTP/1.1 503 The server is busy.\r\nx-ms-error-code: ServerBusy\r\n\r\n\
                 --r\r\nContent-Type: application/http\r\nContent-ID: 2\r\n\r\n\
                 HTTP/1.1 404 The specified blob does not exist.\r\nx-ms-error-code: BlobNotFound\r\n\r\n\
                 --r--\r\n";
    let server = testkit::scripted::Scripted::start(vec![
        testkit::scripted::Reply::with(
            202,
            &[("content-type", "multipart/mixed; boundary=r")],
            reply.as_bytes(),
        ),
        testkit::scripted::Reply::status(202),
    ])
    .await;
    let container =
        azstore::blob::BlobServiceClient::with_options(&server.account(), testkit::fast_retry(0))
            .unwrap()
            .container("box")
            .unwrap();
    let s = BlobStore::new(container);
    let input = ["a", "busy", "gone"].map(|p| Ok(Path::from(p)));
    let out: Vec<_> = s
        .delete_stream(futures_util::stream::iter(input).boxed())
        .collect()
        .await;
    assert_eq!(out[0].as_ref().unwrap(), &Path::from("a"));
    assert_eq!(out[1].as_ref().unwrap(), &Path::from("busy"));
    assert!(
        matches!(&out[2], Err(object_store::Error::NotFound { .. })),
        "{:?}",
        out[2]
    );
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    assert_eq!(reqs[0].method, "POST");
    assert_eq!(reqs[1].method, "DELETE");
    assert!(reqs[1].target.ends_with("/box/busy"), "{}", reqs[1].target);
}

/// On an account with blob versioning, Azure answers every write with the version it made
/// (`x-ms-version-id`) and `PutResult::version` carries it, for a plain and a create-only put.
/// Azurite keeps no versions: a scripted server answers as such an account does.
#[tokio::test]
async fn put_result_carries_the_version_the_write_made() {
    use testkit::scripted::{Reply, Scripted};
    let made = |v: &'static str| {
        Reply::with(
            201,
            &[
                ("etag", "\"0x8DE1\""),
                ("last-modified", "Sun, 29 Nov 2026 03:00:00 GMT"),
                ("x-ms-version-id", v),
            ],
            b"",
        )
    };
    let server = Scripted::start(vec![
        made("2026-11-29T03:00:00.1000000Z"),
        made("2026-11-29T03:00:01.2000000Z"),
    ])
    .await;
    let container = azstore::blob::BlobServiceClient::new(&server.account())
        .unwrap()
        .container("versioned")
        .unwrap();
    let store = BlobStore::new(container);
    let plain = store
        .put(&Path::from("a"), Bytes::from_static(b"x").into())
        .await
        .unwrap();
    assert_eq!(plain.e_tag.as_deref(), Some("\"0x8DE1\""));
    assert_eq!(
        plain.version.as_deref(),
        Some("2026-11-29T03:00:00.1000000Z")
    );
    let created = store
        .put_opts(
            &Path::from("b"),
            Bytes::from_static(b"y").into(),
            PutMode::Create.into(),
        )
        .await
        .unwrap();
    assert_eq!(
        created.version.as_deref(),
        Some("2026-11-29T03:00:01.2000000Z")
    );
    assert_eq!(server.count(), 2, "one Put Blob each");
}
