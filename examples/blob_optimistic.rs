//! Optimistic concurrency on a blob, as in Azure's "Managing concurrency" walkthrough:
//! read the ETag, let a third party overwrite the blob, watch the stale `If-Match` write be
//! refused with 412 while the third party's content survives, then re-read and retry.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run --example blob_optimistic`
use azstore::blob::UploadOptions;
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let blobs = BlobServiceClient::new(&account)?;
    let container = blobs.container(&format!("optimistic-{}", std::process::id()))?;
    container.create_if_not_exists().await?;
    let blob = container.blob("hello.txt")?;

    // 1. Create the blob only if it does not exist yet (If-None-Match: *).
    let original = blob
        .upload("Hello World", &Conditions::if_not_exists())
        .await?;
    println!("created, ETag = {}", original.etag);

    // 2. A third party overwrites it without any condition: last writer wins for them.
    let third = blob
        .upload("Blob updated by a third party.", &Conditions::none())
        .await?;
    println!("updated by a third party, ETag = {}", third.etag);

    // 3. Our update carries the original ETag in If-Match: the service refuses it.
    match blob
        .upload("my update", &Conditions::if_match(&original.etag))
        .await
    {
        Err(e) if e.is_precondition_failed() => {
            println!("precondition failure as expected ({e}); the blob's ETag no longer matches")
        }
        Err(e) => return Err(e),
        Ok(_) => panic!("a stale If-Match write must not succeed"),
    }
    let current = blob.download().await?;
    println!(
        "content is still the third party's: {:?}",
        String::from_utf8_lossy(&current.body)
    );

    // 4. Re-read, decide again, and write with the ETag we just read. The same condition
    //    works for uploads of any size: large bodies are staged in blocks and the If-Match
    //    goes on the final commit.
    let merged = format!("{} + my update", String::from_utf8_lossy(&current.body));
    let mine = blob
        .upload_with(
            merged,
            &UploadOptions::new(Conditions::if_match(&current.properties.etag)),
        )
        .await?;
    println!("our update applied, ETag = {}", mine.etag);

    container.delete(&Conditions::none()).await?;
    Ok(())
}
