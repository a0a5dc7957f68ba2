//! Read-modify-write against Azurite: contention, the create race, ambiguous writes through a
//! response-losing proxy, and every decision and limit of `update`.

use testkit as support;
use testkit::update as update_support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azstore::blob::{BlobBytes, BlobJson};
use azstore::http::ClientOptions;
use azstore::update::{Change, Current, Decision, UpdatePolicy, Versioned, create_only, update};
use azstore::{
    Conditions, ETag, Error, ErrorCode, ErrorKind, StorageAccount, blob::BlobClient,
    blob::PutOptions, http::Jitter, http::RetryPolicy,
};
use support::blob::blob_at;
use update_support::{Proxy, increment, read_u64};

async fn container(account: &StorageAccount) -> azstore::blob::ContainerClient {
    support::blob::container_at(account, "upd").await
}

fn no_transport_retry(account: &StorageAccount, container: &str, name: &str) -> BlobClient {
    let options = ClientOptions::default().retry(RetryPolicy::none());
    support::blob::blob_with(account, options, container, name)
}

/// A `Versioned` blob whose writes are repeated once after a lost response, as a retrying
/// layer below `update` would do (azstore's pipeline itself no longer repeats conditional
/// writes): the repeat meets our own first write as a 412 / 409.
struct PipelineRepeats(BlobClient);

impl PipelineRepeats {
    async fn put_repeating(&self, value: &u64, opts: &PutOptions) -> azstore::Result<ETag> {
        match self.0.put(value.to_string(), opts).await {
            Err(e) if e.request_sent() == azstore::RequestSent::Maybe => {
                Ok(self.0.put(value.to_string(), opts).await?.etag)
            }
            r => Ok(r?.etag),
        }
    }
}

impl Versioned for PipelineRepeats {
    type Value = u64;

    async fn read(&self) -> azstore::Result<Option<Current<u64>>> {
        match self.0.download().await {
            Ok(d) => Ok(Some(Current {
                value: serde_json::from_slice(&d.body).unwrap(),
                write_id: d
                    .properties
                    .metadata
                    .get(azstore::blob::WRITE_ID_METADATA)
                    .cloned(),
                etag: d.properties.etag,
            })),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn replace(&self, value: &u64, etag: &ETag, write_id: &str) -> azstore::Result<ETag> {
        let opts = PutOptions::new(Conditions::if_match(etag))
            .meta(azstore::blob::WRITE_ID_METADATA, write_id);
        self.put_repeating(value, &opts).await
    }

    async fn create(&self, value: &u64, write_id: &str) -> azstore::Result<ETag> {
        let opts = PutOptions::new(Conditions::if_not_exists())
            .meta(azstore::blob::WRITE_ID_METADATA, write_id);
        self.put_repeating(value, &opts).await
    }

    async fn delete(&self, etag: &ETag) -> azstore::Result<()> {
        self.0.delete(&Conditions::if_match(etag)).await
    }

    fn identity(&self) -> String {
        self.0.url()
    }

    fn stores_write_ids(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn lost_response_then_pipeline_repeat_412_is_recognised_as_our_write() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("n").unwrap();
    direct.upload("41", &Conditions::none()).await.unwrap();
    let proxy = Proxy::start(&account).await;
    let counter = PipelineRepeats(blob_at(proxy.account(), c.name(), "n"));
    proxy.lose_next_response_to("PUT");
    let out = update(&counter, &UpdatePolicy::default(), increment)
        .await
        .expect("an ambiguous write that applied is a success");
    assert_eq!(proxy.lost(), 1);
    assert_eq!(proxy.count("PUT"), 2, "original + the pipeline's repeat");
    assert_eq!((out.value, out.recovered_ambiguous), (Some(42), 1));
    assert_eq!((out.conflicts, out.attempts), (0, 1));
    assert_eq!(read_u64(&direct).await, 42, "applied exactly once");
}

/// Same, with transport retries off too.
#[tokio::test]
async fn lost_response_without_pipeline_retry_is_resolved_by_reread() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("n").unwrap();
    direct.upload("7", &Conditions::none()).await.unwrap();
    let proxy = Proxy::start(&account).await;
    let counter = BlobJson::<u64>::new(no_transport_retry(proxy.account(), c.name(), "n"));
    proxy.lose_next_response_to("PUT");
    let out = update(&counter, &UpdatePolicy::default(), increment)
        .await
        .unwrap();
    assert_eq!(proxy.lost(), 1);
    assert_eq!((out.value, out.recovered_ambiguous), (Some(8), 1));
    assert_eq!(proxy.count("PUT"), 1);
    assert_eq!(read_u64(&direct).await, 8);
}

/// Our write applied but its response was lost, the pipeline's repeat got 412, and during
/// `update`'s backoff another writer updated on top of our write. The write-id history
/// still shows our write: no second apply.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lost_response_then_overwritten_by_another_writer_is_still_recognised() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("n").unwrap();
    direct.upload("0", &Conditions::none()).await.unwrap();
    let proxy = Arc::new(Proxy::start(&account).await);
    let ours = PipelineRepeats(blob_at(proxy.account(), c.name(), "n"));
    let other = BlobJson::<u64>::new(blob_at(&account, c.name(), "n"));
    let slow = UpdatePolicy::default().fixed(Duration::from_millis(800), Jitter::None);
    proxy.lose_next_response_to("PUT");
    let p = proxy.clone();
    let competitor = tokio::spawn(async move {
        // Wait until our write was repeated (and refused), then write on top of it.
        while p.count("PUT") < 2 {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        update(&other, &UpdatePolicy::default(), increment)
            .await
            .unwrap()
    });
    let out = update(&ours, &slow, increment).await.unwrap();
    let theirs = competitor.await.unwrap();
    assert_eq!(
        theirs.value,
        Some(2),
        "the competitor wrote on top of our 1"
    );
    assert_eq!(out.value, Some(1));
    assert_eq!(
        out.etag, None,
        "our version was superseded; its ETag is unknown"
    );
    assert_eq!(out.recovered_ambiguous, 1);
    assert_eq!(read_u64(&direct).await, 2, "each increment applied once");
}

/// `create_only` recognises its own create whose response was lost, and still refuses when
/// the blob exists because of someone else.
#[tokio::test]
async fn create_only_recognises_its_lost_create() {
    let account = support::account();
    let c = container(&account).await;
    let proxy = Proxy::start(&account).await;
    let other = BlobBytes::new(blob_at(proxy.account(), c.name(), "once"));
    proxy.lose_next_response_to("PUT");
    let etag = create_only(&other, &"v1".into()).await.unwrap();
    assert_eq!(proxy.lost(), 1);
    let props = c.blob("once").unwrap().get_properties().await.unwrap();
    assert_eq!(etag, props.etag);
    // ... and still refuses when the blob exists because of someone else.
    let err = create_only(&other, &"v2".into()).await.unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::BlobAlreadyExists));
    assert_eq!(err.status(), Some(409));
}

#[tokio::test]
async fn no_change_sends_no_write_and_abort_leaves_data_untouched() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("n").unwrap();
    let before = direct.upload("5", &Conditions::none()).await.unwrap();
    let proxy = Proxy::start(&account).await;
    let counter = BlobJson::<u64>::new(blob_at(proxy.account(), c.name(), "n"));

    let out = update(&counter, &UpdatePolicy::default(), |cur| {
        assert_eq!(cur, Some(&5));
        Decision::NoChange
    })
    .await
    .unwrap();
    assert_eq!(out.change, Change::Unchanged);
    assert_eq!(
        (out.value, out.etag.as_ref()),
        (Some(5), Some(&before.etag))
    );
    assert_eq!(proxy.count("GET"), 1);
    assert_eq!(
        proxy.requests().len(),
        1,
        "only the read: {:?}",
        proxy.requests()
    );

    proxy.reset_log();
    let err = update(&counter, &UpdatePolicy::default(), |_| {
        Decision::abort("not allowed")
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Aborted);
    assert!(err.message().contains("not allowed"));
    assert_eq!(proxy.count("PUT") + proxy.count("DELETE"), 0);
    let props = direct.get_properties().await.unwrap();
    assert_eq!(props.etag, before.etag, "untouched");
    assert_eq!(read_u64(&direct).await, 5);

    // NoChange / Delete on an absent blob send nothing either.
    proxy.reset_log();
    let missing = BlobJson::<u64>::new(blob_at(proxy.account(), c.name(), "missing"));
    let out = update(&missing, &UpdatePolicy::default(), |_| Decision::Delete)
        .await
        .unwrap();
    assert_eq!((out.change, out.value), (Change::Unchanged, None));
    assert_eq!(proxy.count("DELETE") + proxy.count("PUT"), 0);
}

/// A resource whose every conditional write is preceded by a competitor's write, so each
/// attempt meets a real 412 from Azurite.
struct Contended {
    inner: BlobJson<u64>,
    competitor: BlobClient,
    competitor_writes: AtomicU32,
    /// Delete instead of overwrite (once), to produce a 404 on replace.
    delete_once: bool,
}

impl Versioned for Contended {
    type Value = u64;

    async fn read(&self) -> azstore::Result<Option<Current<u64>>> {
        self.inner.read().await
    }

    async fn replace(&self, value: &u64, etag: &ETag, write_id: &str) -> azstore::Result<ETag> {
        let n = self.competitor_writes.fetch_add(1, Ordering::SeqCst);
        if self.delete_once {
            if n == 0 {
                self.competitor.delete(&Conditions::none()).await?;
            }
        } else {
            self.competitor
                .upload(format!("{}", 1000 + n), &Conditions::none())
                .await?;
        }
        self.inner.replace(value, etag, write_id).await
    }

    async fn create(&self, value: &u64, write_id: &str) -> azstore::Result<ETag> {
        self.inner.create(value, write_id).await
    }

    async fn delete(&self, etag: &ETag) -> azstore::Result<()> {
        self.inner.delete(etag).await
    }

    fn identity(&self) -> String {
        Versioned::identity(&self.inner)
    }

    fn stores_write_ids(&self) -> bool {
        true
    }
}

#[tokio::test]
async fn attempt_limit_gives_a_typed_error_carrying_the_last_conflict() {
    let account = support::account();
    let c = container(&account).await;
    let blob = c.blob("hot").unwrap();
    blob.upload("1", &Conditions::none()).await.unwrap();
    let res = Contended {
        inner: BlobJson::new(blob.clone()),
        competitor: blob.clone(),
        competitor_writes: AtomicU32::new(0),
        delete_once: false,
    };
    let policy = UpdatePolicy::default()
        .max_attempts(3)
        .fixed(Duration::from_millis(1), Jitter::None);
    let runs = AtomicU32::new(0);
    let err = update(&res, &policy, |cur| {
        runs.fetch_add(1, Ordering::SeqCst);
        increment(cur)
    })
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetriesExhausted);
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.error_code(), Some(&ErrorCode::ConditionNotMet));
    let last = std::error::Error::source(&err)
        .and_then(|s| s.downcast_ref::<Error>())
        .expect("the last conflict is the source");
    assert!(last.is_precondition_failed());
    assert_eq!(runs.load(Ordering::SeqCst), 3);
    assert!(err.to_string().contains("3 attempt"), "{err}");
    // The competitor's last write survived: nothing of ours was applied.
    assert_eq!(read_u64(&blob).await, 1002);

    // The elapsed-time limit stops too.
    let policy = UpdatePolicy::default()
        .max_attempts(1000)
        .fixed(Duration::from_millis(40), Jitter::None)
        .max_elapsed(Duration::from_millis(150));
    let err = update(&res, &policy, increment).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetriesExhausted);
}

#[tokio::test]
async fn replace_of_a_concurrently_deleted_blob_retries_as_absent() {
    let account = support::account();
    let c = container(&account).await;
    let blob = c.blob("gone").unwrap();
    blob.upload("10", &Conditions::none()).await.unwrap();
    let res = Contended {
        inner: BlobJson::new(blob.clone()),
        competitor: blob.clone(),
        competitor_writes: AtomicU32::new(0),
        delete_once: true,
    };
    let mut seen = Vec::new();
    let out = update(&res, &UpdatePolicy::default(), |cur| {
        seen.push(cur.copied());
        increment(cur)
    })
    .await
    .unwrap();
    assert_eq!(seen, vec![Some(10), None], "second run sees it absent");
    assert_eq!(
        (out.change, out.value, out.conflicts),
        (Change::Created, Some(1), 1)
    );
    assert_eq!(read_u64(&blob).await, 1);
}

#[tokio::test]
async fn delete_decision_and_other_errors_unchanged() {
    let account = support::account();
    let c = container(&account).await;
    let blob = c.blob("d").unwrap();
    blob.upload("3", &Conditions::none()).await.unwrap();
    let doc = BlobJson::<u64>::new(blob.clone());
    let out = update(&doc, &UpdatePolicy::default(), |cur| match cur {
        Some(3) => Decision::Delete,
        _ => Decision::abort("unexpected"),
    })
    .await
    .unwrap();
    assert_eq!(
        (out.change, out.value, out.etag),
        (Change::Deleted, None, None)
    );
    assert!(!blob.exists().await.unwrap());

    // A missing container is not "absent": the 404 comes back unchanged, nothing retried.
    let nowhere = BlobJson::<u64>::new(blob_at(&account, &support::unique("none"), "x"));
    let err = update(&nowhere, &UpdatePolicy::default(), increment)
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::ContainerNotFound));

    // Content that is not the expected JSON is an error, and is not overwritten.
    blob.upload("not json", &Conditions::none()).await.unwrap();
    let err = update(&doc, &UpdatePolicy::default(), increment)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    let d = blob.download().await.unwrap();
    assert_eq!(&d.body[..], b"not json");
}

#[tokio::test]
async fn last_writer_wins_and_create_only_are_explicit() {
    let account = support::account();
    let c = container(&account).await;
    let blob = c.blob("lww").unwrap();
    let doc = BlobJson::<String>::new(blob.clone());
    let e1 = create_only(&doc, &"first".to_string()).await.unwrap();
    let err = create_only(&doc, &"second".to_string()).await.unwrap_err();
    assert!(err.is_conflict());
    assert_eq!(err.error_code(), Some(&ErrorCode::BlobAlreadyExists));
    // Last writer wins: no condition, replaces whatever is there.
    let e2 = doc.overwrite(&"third".to_string()).await.unwrap();
    assert_ne!(e1, e2);
    let cur = doc.read().await.unwrap().unwrap();
    assert_eq!(cur.value, "third");
    assert_eq!(
        cur.write_id, None,
        "an unconditional overwrite carries no write id"
    );
    assert_eq!(cur.etag, e2);

    let raw = BlobBytes::new(c.blob("raw").unwrap()).with_content_type("text/plain");
    raw.overwrite("a").await.unwrap();
    let out = update(&raw, &UpdatePolicy::default(), |cur| {
        let mut v = cur.map(|b| b.to_vec()).unwrap_or_default();
        v.extend_from_slice(b"b");
        Decision::Write(v.into())
    })
    .await
    .unwrap();
    assert_eq!(out.value.as_deref(), Some(&b"ab"[..]));
    let props = c.blob("raw").unwrap().get_properties().await.unwrap();
    assert_eq!(
        props.http_headers.content_type.as_deref(),
        Some("text/plain")
    );
    assert!(
        props
            .metadata
            .contains_key(azstore::blob::WRITE_ID_METADATA)
    );
}

/// The response to our conditional DELETE is lost. The pipeline does not repeat a conditional
/// write; `update` re-reads, finds the blob gone, and reports a successful delete.
#[tokio::test]
async fn lost_response_to_a_delete_is_a_successful_delete() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("d").unwrap();
    direct.upload("1", &Conditions::none()).await.unwrap();
    let proxy = Proxy::start(&account).await;
    let doc = BlobJson::<u64>::new(blob_at(proxy.account(), c.name(), "d"));
    proxy.lose_next_response_to("DELETE");
    let out = update(&doc, &UpdatePolicy::default(), |_| Decision::Delete)
        .await
        .unwrap();
    assert_eq!(proxy.lost(), 1);
    assert_eq!(
        proxy.count("DELETE"),
        1,
        "a conditional delete is not repeated by the pipeline"
    );
    assert_eq!(
        (out.change, out.value, out.attempts),
        (Change::Deleted, None, 1)
    );
    assert!(!direct.exists().await.unwrap());

    // With transport retries off, `update` sees the lost response itself and re-reads.
    direct.upload("2", &Conditions::none()).await.unwrap();
    let doc = BlobJson::<u64>::new(no_transport_retry(proxy.account(), c.name(), "d"));
    proxy.lose_next_response_to("DELETE");
    let out = update(&doc, &UpdatePolicy::default(), |_| Decision::Delete)
        .await
        .unwrap();
    assert_eq!(proxy.lost(), 2);
    assert_eq!((out.change, out.recovered_ambiguous), (Change::Deleted, 1));
    assert!(!direct.exists().await.unwrap());
}
