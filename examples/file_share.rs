//! Upload a report to an Azure file share under a file lease, and show what another writer
//! sees meanwhile.
//!
//! Runs against the local emulators (`scripts/azurite` starts testkit's local Azure Files
//! service beside Azurite and exports its `FileEndpoint`) or a real storage account:
//!
//! ```text
//! scripts/azurite run --only file -- cargo run --example file_share
//! AZURE_STORAGE_CONNECTION_STRING='DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...;EndpointSuffix=core.windows.net' \
//!     cargo run --example file_share
//! ```

use azstore::file::{ShareServiceClient, SmbRetry, TransferOptions, retry_smb_conflicts};
use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::{Service, StorageAccount};
use bytes::Bytes;

#[tokio::main]
async fn main() -> azstore::Result<()> {
    // Fails with a clear error naming `FileEndpoint` when the connection string has none.
    let account = StorageAccount::from_env()?;
    account.endpoint(Service::File)?;
    let service = ShareServiceClient::new(&account)?;
    let share = service.share(&format!(
        "azstore-example-{}",
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    ))?;
    share.create().await?;
    println!("created share {}", share.name());
    let result = run(&share).await;
    share.delete(None).await?;
    println!("deleted share {}", share.name());
    result
}

async fn run(share: &azstore::file::ShareClient) -> azstore::Result<()> {
    share.directory("reports")?.create().await?;
    let report = share.file("reports/q3.csv")?;
    let other_writer = report.clone(); // same file, but this writer holds no lease

    // 1. Create the file and take its lease (file leases are infinite only). An SMB client
    //    holding the file open would answer 409 SharingViolation: wait that out.
    report.create(0, None).await?;
    let lease = retry_smb_conflicts(&SmbRetry::default(), || {
        LeaseGuard::acquire(report.clone(), LeaseDuration::Infinite)
    })
    .await?;
    println!("writer A holds lease {}", lease.lease_id());
    let body = Bytes::from(
        (1..=50_000)
            .map(|i| format!("{i},{}\n", i * 7))
            .collect::<String>(),
    );
    let written = report
        .upload(
            body.clone(),
            &TransferOptions::default(),
            Some(lease.lease_id()),
        )
        .await?;
    println!(
        "writer A uploaded {} bytes (ranges of up to 4 MiB), ETag {}",
        body.len(),
        written.etag
    );

    // 2. Writer B has no lease id: the service refuses its write with 412, A's data is safe.
    match other_writer
        .put_range(0, Bytes::from_static(b"overwritten!"), None)
        .await
    {
        Err(e) if e.is_file_lease_refusal() => println!(
            "writer B was refused: {} {} ({})",
            e.status().unwrap_or_default(),
            e.error_code().map(|c| c.as_str()).unwrap_or("?"),
            e.message().lines().next().unwrap_or_default()
        ),
        Err(e) => return Err(e),
        Ok(_) => println!("writer B's write went through (unexpected: the file is leased)"),
    }
    // Readers are never blocked by a file lease.
    let seen = other_writer.download_range(0..16).await?;
    println!(
        "writer B reads the first bytes: {:?}",
        String::from_utf8_lossy(&seen.body)
    );

    // 3. A releases; now B's write goes through — last writer wins, there is no If-Match
    //    on Azure Files.
    lease.release().await?;
    other_writer
        .put_range(0, Bytes::from_static(b"overwritten!"), None)
        .await?;
    let after = report.download_range(0..16).await?;
    println!(
        "after the release, writer B's write landed: {:?}",
        String::from_utf8_lossy(&after.body)
    );
    Ok(())
}
