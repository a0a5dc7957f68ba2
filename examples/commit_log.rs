//! A commit log as delta-style table writers keep one, through `Arc<dyn ObjectStore>`: each
//! commit is a create-only put (`PutMode::Create`) of the next numbered entry of `_log/`; a
//! writer that meets `AlreadyExists` lost that number to another writer and tries the next.
//! The code only knows `ObjectStore`: handing it azstore's `BlobStore` is what makes a lost
//! reply to a commit come back as `Ok` (recognised by its write id) instead of a false
//! `AlreadyExists` that would commit the same change twice.
//!
//! Run: `scripts/azurite run -- cargo run -p azstore-examples --features object_store --example commit_log`

use std::sync::Arc;

use object_store::path::Path;
use object_store::{ObjectStore, PutMode};

/// Commits `change` as the next entry of the log under `table`, starting the search at
/// `next` (the writer's last known version + 1). Returns the version it was committed as.
async fn commit(
    store: &dyn ObjectStore,
    table: &Path,
    mut next: u64,
    change: &str,
) -> object_store::Result<u64> {
    loop {
        let entry = table.clone().join("_log").join(format!("{next:020}.json"));
        match store
            .put_opts(&entry, change.to_string().into(), PutMode::Create.into())
            .await
        {
            Ok(_) => return Ok(next),
            // Another writer committed this version first: move on to the next one.
            Err(object_store::Error::AlreadyExists { .. }) => next += 1,
            Err(e) => return Err(e),
        }
    }
}

/// Any code that takes an `Arc<dyn ObjectStore>`: four writers, five commits each.
async fn writers(store: Arc<dyn ObjectStore>, table: Path) -> object_store::Result<()> {
    let mut tasks = Vec::new();
    for w in 0..4 {
        let (store, table) = (store.clone(), table.clone());
        tasks.push(tokio::spawn(async move {
            let mut next = 0;
            for c in 0..5 {
                let version =
                    commit(&*store, &table, next, &format!("writer {w}, change {c}")).await?;
                next = version + 1;
            }
            Ok::<_, object_store::Error>(())
        }));
    }
    for t in tasks {
        t.await.expect("writer task")?;
    }
    let log = store
        .list_with_delimiter(Some(&table.clone().join("_log")))
        .await?;
    println!("{} commits in {table}/_log", log.objects.len());
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // AZURE_STORAGE_CONNECTION_STRING (scripts/azurite sets it), or an account name and key.
    let account = azstore::StorageAccount::from_env()?;
    let container = account.container("commit-log-example")?;
    container.create_if_not_exists().await?;
    let store: Arc<dyn ObjectStore> = Arc::new(azstore::object_store::BlobStore::new(container));
    let table = Path::from(format!("tables/orders-{}", std::process::id()));
    writers(store, table).await?;
    Ok(())
}
