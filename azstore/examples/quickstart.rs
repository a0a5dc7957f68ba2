//! Quickstart: create a container, write a blob, and watch a stale write be refused.
//!
//! Run against the local emulator: `scripts/azurite run -- cargo run --example quickstart`
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let blobs = BlobServiceClient::new(&account)?;
    let container = blobs.container(&format!("quickstart-{}", std::process::id()))?;
    container.create_if_not_exists().await?;
    let blob = container.blob("greeting.txt")?;

    // Last writer wins, explicitly.
    let first = blob.upload("hello", &Conditions::none()).await?;
    println!("wrote v1, etag {}", first.etag);

    // Another writer replaces the blob behind our back.
    let theirs = blob
        .upload("hello from someone else", &Conditions::none())
        .await?;
    println!("another writer wrote v2, etag {}", theirs.etag);

    // Our update carries the ETag we read: the service refuses it.
    match blob
        .upload("hello, world", &Conditions::if_match(&first.etag))
        .await
    {
        Err(e) if e.is_precondition_failed() => {
            println!(
                "our stale write was refused: {} {}",
                e.status().unwrap_or(0),
                e.error_code().map(|c| c.as_str()).unwrap_or("")
            );
        }
        Err(e) => return Err(e),
        Ok(_) => panic!("a stale If-Match write must not succeed"),
    }

    // Re-read, re-apply, write with the fresh ETag: it succeeds and nothing was lost.
    let current = blob.download().await?;
    let merged = format!(
        "{} (and hello, world)",
        String::from_utf8_lossy(&current.body)
    );
    let done = blob
        .upload(
            merged.clone(),
            &Conditions::if_match(&current.properties.etag),
        )
        .await?;
    println!("re-read and wrote v3, etag {}: {merged:?}", done.etag);

    container.delete(&Conditions::none()).await?;
    Ok(())
}
