//! Quickstart: Azure's three concurrency strategies on one blob container.
//!
//! 1. Optimistic: a stale If-Match write is refused (412); `update()` turns that into a loop
//!    that never loses an update, here with 8 concurrent writers.
//! 2. Pessimistic: a lease kept alive by `LeaseGuard`; writes without its id are refused.
//! 3. Last writer wins: only with an explicit `Conditions::none()`.
//!
//! Run it against a private Azurite: `scripts/demo` (or, with your own emulator or account,
//! `AZURE_STORAGE_CONNECTION_STRING=... cargo run --example quickstart`).
use azstore::blob::BlobJson;
use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::update::{Decision, UpdatePolicy, Versioned, update};
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let blobs = BlobServiceClient::new(&account)?;
    let container = blobs.container(&format!("quickstart-{}", std::process::id()))?;
    container.create_if_not_exists().await?;
    println!("created container {}", container.name());

    // 1. Optimistic concurrency.
    let blob = container.blob("greeting.txt")?;
    let first = blob.upload("hello", &Conditions::if_not_exists()).await?;
    println!(
        "\n1. optimistic\n   created greeting.txt, etag {}",
        first.etag
    );
    blob.upload(
        "hello from someone else",
        &Conditions::if_match(&first.etag),
    )
    .await?;
    println!("   another writer replaced it (If-Match on the etag it read)");
    match blob
        .upload("hello, world", &Conditions::if_match(&first.etag))
        .await
    {
        Err(e) if e.is_precondition_failed() => println!(
            "   our write with the old etag was refused: {} {}",
            e.status().unwrap_or(0),
            e.error_code().map(|c| c.as_str()).unwrap_or("")
        ),
        Err(e) => return Err(e),
        Ok(_) => panic!("a stale If-Match write must not succeed"),
    }

    // update() runs read -> change -> write with If-Match -> on 412 re-read and retry.
    let counter = container.blob("counter.json")?;
    let mut writers = Vec::new();
    for _ in 0..8 {
        let counter = BlobJson::<u64>::new(counter.clone());
        writers.push(tokio::spawn(async move {
            for _ in 0..5 {
                update(&counter, &UpdatePolicy::default(), |n| {
                    Decision::Write(n.copied().unwrap_or(0) + 1)
                })
                .await?;
            }
            Ok::<(), azstore::Error>(())
        }));
    }
    for w in writers {
        w.await.expect("writer task")?;
    }
    let total = BlobJson::<u64>::new(counter)
        .read()
        .await?
        .map_or(0, |c| c.value);
    println!("   8 writers x 5 increments through update(): counter = {total} (no update lost)");
    assert_eq!(total, 40);

    // 2. Pessimistic concurrency: a 15 s lease, renewed in the background while held.
    let report = container.blob("report.txt")?;
    report.upload("draft", &Conditions::if_not_exists()).await?;
    let guard = LeaseGuard::acquire(report.clone(), LeaseDuration::seconds(15)?).await?;
    println!("\n2. pessimistic\n   leased report.txt for 15 s (LeaseGuard renews it)");
    match report.upload("sneaky edit", &Conditions::none()).await {
        Err(e) if e.status() == Some(412) => println!(
            "   a write without the lease id was refused: 412 {}",
            e.error_code().map(|c| c.as_str()).unwrap_or("")
        ),
        Err(e) => return Err(e),
        Ok(_) => panic!("a write without the lease id must be refused"),
    }
    report.upload("final", &guard.conditions()).await?;
    println!("   the holder wrote with its lease id");
    guard.release().await?;
    println!("   released the lease");

    // 3. Last writer wins: a visible choice.
    report.upload("overwritten", &Conditions::none()).await?;
    println!("\n3. last writer wins\n   Conditions::none() replaced report.txt unconditionally");

    container.delete(&Conditions::none()).await?;
    println!("\ndeleted container {}", container.name());
    Ok(())
}
