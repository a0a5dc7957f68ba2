//! The `_if_exists` / `_if_not_exists` pair on every resource that can be created and deleted:
//! `true` (or the new version) when this call acted, `false` (`None`) when the resource was
//! already in the wanted state, and every other failure an error — never swallowed.

use testkit as support;
use testkit::file_server::FileServer;

use std::time::Duration;

use azstore::blob::BlobServiceClient;
use azstore::file::ShareServiceClient;
use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::table::TableServiceClient;
use azstore::{Conditions, ErrorCode};

#[tokio::test]
async fn blobs_and_containers() {
    let account = support::account();
    let c = BlobServiceClient::new(&account)
        .unwrap()
        .container(&support::unique("ifx"))
        .unwrap();
    assert!(c.create_if_not_exists().await.unwrap());
    assert!(!c.create_if_not_exists().await.unwrap());

    let blob = c.blob("b").unwrap();
    let created = blob.upload_if_not_exists("one").await.unwrap();
    assert!(created.is_some());
    assert!(blob.upload_if_not_exists("two").await.unwrap().is_none());
    assert_eq!(
        blob.download().await.unwrap().body,
        "one",
        "the second did not write"
    );

    // A leased blob: the delete is refused, and the refusal is an error, not `false`.
    let guard = LeaseGuard::acquire(blob.clone(), LeaseDuration::seconds(15).unwrap())
        .await
        .unwrap();
    let refused = blob.delete_if_exists().await.unwrap_err();
    assert_eq!(refused.status(), Some(412), "{refused}");
    assert_eq!(refused.error_code(), Some(&ErrorCode::LeaseIdMissing));
    assert!(blob.delete_if_exists_if(&guard.conditions()).await.unwrap());
    drop(guard);
    assert!(!blob.delete_if_exists().await.unwrap());
    // A stale ETag is an error too.
    let w = blob.upload("three", &Conditions::none()).await.unwrap();
    blob.upload("four", &Conditions::if_match(&w.etag))
        .await
        .unwrap();
    let stale = blob
        .delete_if_exists_if(&Conditions::if_match(&w.etag))
        .await
        .unwrap_err();
    assert!(stale.is_precondition_failed(), "{stale}");
    assert!(blob.exists().await.unwrap());

    assert!(c.delete_if_exists().await.unwrap());
    // Azurite removes a deleted container at once; Azure answers 409 ContainerBeingDeleted
    // for a while, which delete_if_exists reports as the error it is.
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(!c.delete_if_exists().await.unwrap());
}

#[tokio::test]
async fn tables() {
    let account = support::account();
    let table = TableServiceClient::new(&account)
        .unwrap()
        .table(&support::unique("ifx").replace('-', ""))
        .unwrap();
    assert!(table.create_if_not_exists().await.unwrap());
    assert!(!table.create_if_not_exists().await.unwrap());
    assert!(table.delete_if_exists().await.unwrap());
    assert!(!table.delete_if_exists().await.unwrap());
}

#[tokio::test]
async fn shares_directories_and_files() {
    let server = FileServer::start().await;
    let share = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&support::unique("ifx"))
        .unwrap();
    assert!(share.create_if_not_exists().await.unwrap());
    assert!(!share.create_if_not_exists().await.unwrap());
    let dir = share.directory("d").unwrap();
    assert!(dir.create_if_not_exists().await.unwrap());
    let file = dir.file("f").unwrap();
    file.create(3, None).await.unwrap();

    // A non-empty directory: 409, an error.
    let busy = dir.delete_if_exists().await.unwrap_err();
    assert_eq!(
        busy.error_code(),
        Some(&ErrorCode::DirectoryNotEmpty),
        "{busy}"
    );
    assert!(file.delete_if_exists().await.unwrap());
    assert!(!file.delete_if_exists().await.unwrap());
    assert!(dir.delete_if_exists().await.unwrap());
    assert!(!dir.delete_if_exists().await.unwrap());
    assert!(share.delete_if_exists().await.unwrap());
    assert!(!share.delete_if_exists().await.unwrap());
}
