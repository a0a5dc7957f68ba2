//! Regression tests built from histories the campaigns kept.
//!
//! The campaigns found that `update()` applied a write twice and reported success when the
//! write's response was lost and more than `WRITE_ID_HISTORY - 1` (15) other writes landed
//! before its re-read: the re-read no longer listed the write id (the stored history keeps 16),
//! and `update()` took the write as not applied and ran the closure again on a value that
//! already held its change. Found by the blob-register campaign (seed 20261126: increment
//! 5242880017 is entries 103 and 133 of the final value; its writer was SIGSTOPped 1.5 s after
//! a lost response while 30 increments landed) and the table-register campaign (seed
//! 20261135, no pause: the write's response headers stalled past the 1.5 s per-attempt
//! timeout while 70 increments landed). Both histories are in `kept/`. Fixed: `update()` now
//! stops with `RequestSent::Maybe` when the stored history cannot tell.

use std::sync::atomic::{AtomicBool, Ordering};

use azstore::blob::{BlobClient, BlobServiceClient};
use azstore::update::{BlobJson, Current, Decision, UpdatePolicy, Versioned, update};
use azstore::{ETag, RequestSent, Result, Service};
use testkit::fault::{Fault, FaultProxy, Rule};

/// `mine` (through the fault proxy); when one of its replaces ends with an unknown outcome,
/// `others` increments land before `update()` gets to re-read — what a writer paused right
/// after a lost response sees.
struct PausedAfterLostResponse {
    mine: BlobJson<u64>,
    other: BlobJson<u64>,
    others: u64,
    fired: AtomicBool,
}

impl Versioned for PausedAfterLostResponse {
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
    let account = testkit::account();
    let name = testkit::unique("regr");
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
    let res = PausedAfterLostResponse {
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
    let lost = proxy
        .requests()
        .iter()
        .filter(|r| r.fault == Some("lose-response"))
        .count();
    assert_eq!(lost, 1, "the fault played");
    let stored = other.read().await.unwrap().unwrap().value;
    (result, stored)
}

/// Within the documented bound (15 writes on top) the write is recognised: applied once.
#[tokio::test]
async fn lost_response_then_fifteen_writes_on_top_applies_once() {
    let (result, stored) = increment_after_lost_response(15).await;
    let done = result.expect("recognised as applied");
    assert_eq!(done.recovered_ambiguous, 1);
    assert_eq!(stored, 16, "1 of ours + 15 others");
}

/// Past the bound the write must still never be applied twice: either `update()` recognises
/// it, or it stops with `RequestSent::Maybe` (before the fix it applied it again and reported
/// success).
#[tokio::test]
async fn lost_response_then_twenty_writes_on_top_is_never_applied_twice() {
    let (result, stored) = increment_after_lost_response(20).await;
    match result {
        Ok(_) => {}
        Err(e) => assert_eq!(e.request_sent(), RequestSent::Maybe, "{e}"),
    }
    assert_eq!(
        stored, 21,
        "1 of ours + 20 others; 22 means our increment applied twice"
    );
}

/// The kept histories (recorded before the fix) still show the anomaly to the checker (and only that): the blob one
/// (writer paused 1.5 s after the lost response), and a table one where no pause was needed
/// (the write applied, its response headers stalled past the client's 1.5 s per-attempt
/// timeout while 70 increments landed: entries 31 and 102 of the final value).
#[test]
fn the_kept_histories_of_the_double_apply_are_still_anomalies() {
    for (model, file, uid) in [
        (
            histories::model::Model::Blob,
            "blob-register-correct-seed20261126.jsonl",
            5242880017u64,
        ),
        (
            histories::model::Model::Table,
            "table-register-correct-seed20261135.jsonl",
            5242880016,
        ),
    ] {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("kept")
            .join(file);
        let v = histories::check::check_file(model, &path).unwrap();
        assert!(v.operations >= 200, "{}", v.operations);
        assert_eq!(
            v.anomalies,
            vec![format!("increment {uid} applied twice")],
            "{file}: {:?}",
            v.anomalies
        );
    }
}
