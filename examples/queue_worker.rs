//! An idempotent queue worker.
//!
//! Queue delivery is *at least once*: a message whose handler crashed (or ran past its
//! visibility timeout) is delivered again. Here the handler's effect is a create-only blob
//! write keyed by the message id (`If-None-Match: *`): the first delivery creates it, a
//! redelivery gets 409 `BlobAlreadyExists` and knows the work is already done. The effect and
//! the "processed" record are one atomic write, so there is no window where one exists
//! without the other.
//!
//! To show it, every fifth message "crashes" after its write on the first delivery; the
//! redelivery is recognised and skipped.
//!
//! Run against the local emulator: `scripts/azurite run -- cargo run --example queue_worker`
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use azstore::queue::{Delivery, QueueServiceClient, WorkerOptions, process_until_empty};
use azstore::{Conditions, ErrorCode, StorageAccount, blob::BlobServiceClient};

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let suffix = std::process::id();
    let queue = QueueServiceClient::new(&account)?.queue(&format!("orders-{suffix}"))?;
    let results = BlobServiceClient::new(&account)?.container(&format!("results-{suffix}"))?;
    queue.create_if_not_exists().await?;
    results.create_if_not_exists().await?;

    for i in 1..=20 {
        queue.put_message(format!("order {i}")).await?;
    }

    let applied = Arc::new(AtomicU32::new(0));
    let skipped = Arc::new(AtomicU32::new(0));
    let handler = {
        let (results, applied, skipped) = (results.clone(), applied.clone(), skipped.clone());
        move |d: Delivery| {
            let (results, applied, skipped) = (results.clone(), applied.clone(), skipped.clone());
            async move {
                let order = d.content_str()?.into_owned();
                let id = d.message().id.clone();
                let blob = results.blob(&format!("applied/{id}"))?;
                let receipt = format!("{order}: shipped");
                match blob.upload(receipt, &Conditions::if_not_exists()).await {
                    Ok(_) => {
                        applied.fetch_add(1, Ordering::SeqCst);
                        println!("applied  {order} (delivery {})", d.message().dequeue_count);
                    }
                    Err(e) if e.error_code() == Some(&ErrorCode::BlobAlreadyExists) => {
                        skipped.fetch_add(1, Ordering::SeqCst);
                        println!(
                            "skipped  {order} (delivery {}): already applied",
                            d.message().dequeue_count
                        );
                        return Ok(());
                    }
                    Err(e) => return Err(e.into()),
                }
                let n: u32 = order.trim_start_matches("order ").parse().unwrap_or(0);
                if n % 5 == 0 && d.message().dequeue_count == 1 {
                    // The worker dies after the effect but before deleting the message.
                    return Err("simulated crash".into());
                }
                Ok(())
            }
        }
    };
    // Work through the queue and return once it is empty. A failed ("crashed") message is
    // waited for and retried within this run; `retry_delay(ZERO)` makes it visible again at
    // once instead of after its 5 s visibility timeout.
    let stats = process_until_empty(
        queue.clone(),
        handler,
        WorkerOptions::default()
            .concurrency(4)
            .visibility(Duration::from_secs(5))
            .retry_delay(Duration::ZERO)
            .idle_poll(Duration::from_millis(200)),
    )
    .await?;
    println!(
        "{} orders applied exactly once, {} redeliveries skipped; worker: {stats:?}",
        applied.load(Ordering::SeqCst),
        skipped.load(Ordering::SeqCst)
    );
    assert_eq!(applied.load(Ordering::SeqCst), 20);
    assert_eq!(stats.completed, 20);
    queue.delete().await?;
    // The worker created the poison queue when it started (nothing was poisoned).
    queue
        .sibling(&format!("{}-poison", queue.name()))?
        .delete()
        .await?;
    results.delete(&Conditions::none()).await?;
    Ok(())
}
