//! A write whose response was lost and on top of which more writes landed than the stored
//! write-id history keeps (16): `update()` cannot tell whether it applied, and must then stop
//! with `RequestSent::Maybe` — never write the change a second time. Found by the checked-
//! history campaigns (a writer paused, or its response stalled past the timeout, while 30 and
//! 70 increments landed); before the fix `update()` applied the increment twice and reported
//! success.

use testkit as support;

use std::sync::atomic::{AtomicBool, Ordering};

use azstore::blob::BlobJson;
use azstore::blob::{BlobClient, BlobServiceClient};
use azstore::update::{Current, Decision, UpdatePolicy, Versioned, update};
use azstore::{ETag, RequestSent, Result, Service};
use support::fault::{Fault, FaultProxy, Rule};

/// `mine` goes through the fault proxy; when one of its replaces ends with an unknown outcome,
/// `others` increments land before `update()` gets to re-read — what a writer paused right
/// after a lost response sees.
struct BuriedAfterLostResponse {
    mine: BlobJson<u64>,
    other: BlobJson<u64>,
    others: u64,
    fired: AtomicBool,
}

impl Versioned for BuriedAfterLostResponse {
    type Value = u64;
    async fn read(&self) -> Result<Option<Current<u64>>> {
        self.mine.read().await
    }
    async fn replace(&self, value: &u64, etag: &ETag, write_id: &str) -> Result<ETag> {
        let r = self.mine.replace(value, etag, write_id).await;
        if let Err(e) = &r {
            if e.request_sent() == RequestSent::Maybe && !self.fired.swap(true, Ordering::SeqCst) {
                for _ in 0..self.others {
                    update(&self.other, &UpdatePolicy::default(), |c| {
                        Decision::Write(c.copied().unwrap_or(0) + 1)
                    })
                    .await
                    .expect("another writer's increment");
                }
            }
        }
        r
    }
    async fn create(&self, value: &u64, write_id: &str) -> Result<ETag> {
        self.mine.create(value, write_id).await
    }
    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.mine.delete(etag).await
    }
    /// A key of its own: the "other" writer updates the same blob meanwhile, from inside
    /// this resource's write, and must not wait for this update's turn.
    fn identity(&self) -> String {
        format!("test:buried:{}", Versioned::identity(&self.mine))
    }
    fn stores_write_ids(&self) -> bool {
        true
    }
}

fn blob(account: &azstore::StorageAccount, container: &str) -> BlobClient {
    BlobServiceClient::new(account)
        .unwrap()
        .container(container)
        .unwrap()
        .blob("counter")
        .unwrap()
}

async fn increment_after_lost_response(
    others: u64,
) -> (Result<azstore::update::Outcome<u64>>, u64) {
    let account = support::account();
    let name = support::unique("buried");
    BlobServiceClient::new(&account)
        .unwrap()
        .container(&name)
        .unwrap()
        .create()
        .await
        .unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let other = BlobJson::<u64>::new(blob(&account, &name));
    update(&other, &UpdatePolicy::default(), |_| Decision::Write(0))
        .await
        .unwrap();
    let res = BuriedAfterLostResponse {
        mine: BlobJson::new(blob(&proxy.account(&account), &name)),
        other: BlobJson::new(blob(&account, &name)),
        others,
        fired: AtomicBool::new(false),
    };
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let result = update(&res, &UpdatePolicy::default(), |c| {
        Decision::Write(c.copied().unwrap_or(0) + 1)
    })
    .await;
    assert_eq!(proxy.count("PUT"), 1, "our increment was sent once");
    let stored = other.read().await.unwrap().unwrap().value;
    (result, stored)
}

/// Within the history (15 writes on top) the write is recognised: applied once, success.
#[tokio::test]
async fn lost_response_then_fifteen_writes_on_top_is_recognised() {
    let (result, stored) = increment_after_lost_response(15).await;
    let done = result.expect("recognised as applied");
    assert_eq!(done.recovered_ambiguous, 1);
    assert_eq!(stored, 16, "1 of ours + 15 others");
}

/// Past the history: never applied twice; the caller is told the write may have applied.
#[tokio::test]
async fn lost_response_then_twenty_writes_on_top_is_never_applied_twice() {
    let (result, stored) = increment_after_lost_response(20).await;
    let err = result.expect_err("update() cannot tell, so it must not report success");
    assert_eq!(err.request_sent(), RequestSent::Maybe, "{err}");
    assert_eq!(
        stored, 21,
        "1 of ours + 20 others; 22 would be ours applied twice"
    );
}
