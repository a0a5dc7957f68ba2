//! Pessimistic concurrency on a blob, as in Azure's concurrency guide: acquire a lease, write
//! with the lease id, see a write without it refused (412), release. Then the same with a
//! self-renewing `LeaseGuard`.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run --example blob_pessimistic`
use std::time::Duration;

use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::{Conditions, ErrorCode, StorageAccount, blob::BlobServiceClient};

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let blobs = BlobServiceClient::new(&account)?;
    let container = blobs.container(&format!("pessimistic-{}", std::process::id()))?;
    container.create_if_not_exists().await?;
    let blob = container.blob("report.txt")?;
    blob.upload("draft", &Conditions::none()).await?;

    // 1. Acquire a 15-second lease. Lease operations do not change the ETag.
    let lease = blob
        .acquire_lease(LeaseDuration::seconds(15)?, None, &Conditions::none())
        .await?;
    println!("acquired lease {}", lease.lease_id);

    // 2. The holder writes with the lease id.
    blob.upload("final", &Conditions::lease(&lease.lease_id))
        .await?;
    println!("wrote with the lease id");

    // 3. Anyone writing without it is refused with 412 LeaseIdMissing.
    match blob.upload("intruder", &Conditions::none()).await {
        Err(e) if e.error_code() == Some(&ErrorCode::LeaseIdMissing) => {
            println!("write without the lease id refused: {e}")
        }
        other => panic!("expected 412 LeaseIdMissing, got {other:?}"),
    }

    // 4. Release, so others can write (or lease) at once.
    blob.release_lease(&lease.lease_id, &Conditions::none())
        .await?;
    println!("released");

    // The same with a guard: it renews in the background and tells us if the lease is lost.
    let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15)?).await?;
    let work = async {
        for i in 0..3 {
            blob.upload(format!("step {i}"), &guard.conditions())
                .await?;
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        azstore::Result::Ok(())
    };
    tokio::select! {
        loss = guard.lost() => println!("lease lost, stopped: {loss}"),
        r = work => { r?; println!("work done under the guard's lease"); }
    }
    println!("release: {:?}", guard.release().await?);

    container.delete(&Conditions::none()).await?;
    Ok(())
}
