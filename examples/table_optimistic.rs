//! The seed's customer walkthrough on Azure Tables, and the pessimistic alternative.
//!
//! 1. Optimistic (the Table service default): read a customer with its ETag, a third party
//!    updates it, our replace carrying the old ETag is refused with 412; we re-read and
//!    re-apply. Forcing the write with `MatchCondition::Any` (`*`) is possible but must be asked for.
//! 2. Last writer wins: insert-or-replace sends no ETag at all.
//! 3. Pessimistic: a designated blob's lease guards the table. Every writer takes the
//!    `BlobLock` first (the table itself knows nothing of it); a second taker is refused.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run --example table_optimistic`

use azstore::table::{Stored, TableClient, TableServiceClient};
use azstore::{
    Conditions, MatchCondition, StorageAccount, blob::BlobLock, blob::BlobServiceClient,
};
use serde::{Deserialize, Serialize};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct Customer {
    partition_key: String,
    row_key: String,
    email: String,
    phone_number: Option<String>,
}

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let account = StorageAccount::from_env()?;
    let tables = TableServiceClient::new(&account)?;
    let table = tables.table(&format!("customers{}", std::process::id()))?;
    table.create_if_not_exists().await?;

    optimistic(&table).await?;
    last_writer_wins(&table).await?;
    pessimistic(&account, &table).await?;

    table.delete().await?;
    Ok(())
}

async fn optimistic(table: &TableClient) -> azstore::Result<()> {
    println!("== optimistic concurrency ==");
    let customer = Customer {
        partition_key: "Harp".into(),
        row_key: "Walter".into(),
        email: "walter@contoso.com".into(),
        phone_number: Some("425-555-0101".into()),
    };
    let etag = table.insert(&customer).await?;
    println!("inserted customer, etag {etag}");

    // We read the customer...
    let mut ours: Stored<Customer> = table.get("Harp", "Walter").await?;
    // ...and meanwhile a third party changes the phone number.
    let mut theirs: Stored<Customer> = table.get("Harp", "Walter").await?;
    theirs.entity.phone_number = Some("425-555-0199".into());
    let their_etag = table.replace(&theirs.entity, &theirs.etag).await?;
    println!("third party updated the customer, etag {their_etag}");

    // Our replace carries the ETag we read: refused, their change survives.
    ours.entity.email = "updatedEmail@contoso.org".into();
    match table.replace(&ours.entity, &ours.etag).await {
        Err(e) if e.is_precondition_failed() => {
            println!(
                "optimistic concurrency violation - entity has changed since it was retrieved ({e})"
            )
        }
        other => panic!("expected 412, got {other:?}"),
    }

    // The right reaction: re-read, re-apply our change, try again with the fresh ETag.
    loop {
        let mut fresh: Stored<Customer> = table.get("Harp", "Walter").await?;
        fresh.entity.email = "updatedEmail@contoso.org".into();
        match table.replace(&fresh.entity, &fresh.etag).await {
            Ok(etag) => {
                println!(
                    "replace succeeded after re-reading: email {} and phone {:?} both kept, etag {etag}",
                    fresh.entity.email, fresh.entity.phone_number
                );
                break;
            }
            Err(e) if e.is_precondition_failed() => continue,
            Err(e) => return Err(e),
        }
    }

    // Explicitly disabling the check, as the seed's `customer.ETag = "*"` does.
    let forced = table.replace(&ours.entity, MatchCondition::Any).await?;
    println!("forced replace with If-Match: * (last writer wins), etag {forced}");
    Ok(())
}

async fn last_writer_wins(table: &TableClient) -> azstore::Result<()> {
    println!("== last writer wins ==");
    let c = Customer {
        partition_key: "Harp".into(),
        row_key: "Walter".into(),
        email: "lww@contoso.com".into(),
        phone_number: None,
    };
    // No ETag is sent: no concurrency check at all.
    let etag = table.insert_or_replace(&c).await?;
    println!("insert-or-replace overwrote whatever was there, etag {etag}");
    Ok(())
}

async fn pessimistic(account: &StorageAccount, table: &TableClient) -> azstore::Result<()> {
    println!("== pessimistic: a blob lock guards the table ==");
    let blobs = BlobServiceClient::new(account)?;
    let container = blobs.container(&format!("locks{}", std::process::id()))?;
    // The lock blob (and its container) are created on first use; every writer that follows
    // the protocol takes the lock before touching the table.
    let lock = BlobLock::new(container.clone(), &format!("table-{}", table.name()))?;
    let held = lock
        .try_acquire()
        .await?
        .expect("nobody else holds the lock yet");
    println!(
        "acquired the table lock, lease {}, fencing token {}",
        held.lease_id(),
        held.fencing_token()
    );

    // A second writer following the protocol cannot get in.
    let other = BlobLock::new(container.clone(), &format!("table-{}", table.name()))?;
    match other.try_acquire().await? {
        None => println!("second writer refused: the lock is held"),
        Some(_) => panic!("two holders of one lock"),
    }

    // While we hold it, read-modify-write without conflicts from protocol-following writers.
    let mut c: Stored<Customer> = table.get("Harp", "Walter").await?;
    c.entity.email = "locked-update@contoso.org".into();
    let etag = table.replace(&c.entity, &c.etag).await?;
    println!("updated under the lock, etag {etag}");

    held.release().await?;
    println!("released the lock");
    container.delete(&Conditions::none()).await?;
    Ok(())
}
