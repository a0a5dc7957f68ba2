//! Blob Batch deletes (`ContainerClient::delete_blobs`) against Azurite: many blobs in one
//! request per 256, each result on its own (a missing blob, a leased blob), names that need
//! encoding, every credential kind (SharedKey, SAS, bearer token on the HTTPS Azurite), and
//! bad input refused before anything is sent.

use std::time::Duration;

use azstore::blob::{BlobServiceClient, ContainerClient, ListOptions};
use azstore::credential::Credential;
use azstore::http::ClientOptions;
use azstore::lease::LeaseDuration;
use azstore::sas::SasBuilder;
use azstore::{Conditions, ErrorCode, ErrorKind};
use futures_util::{StreamExt, TryStreamExt};
use testkit::scripted::{Reply, Scripted};

async fn upload_all(container: &ContainerClient, names: &[String]) {
    futures_util::stream::iter(names)
        .map(|n| async move {
            container
                .blob(n)
                .unwrap()
                .upload(n.clone(), &Conditions::none())
                .await
                .unwrap()
        })
        .buffer_unordered(16)
        .collect::<Vec<_>>()
        .await;
}

async fn remaining(container: &ContainerClient) -> Vec<String> {
    container
        .list_blobs(ListOptions::default())
        .map_ok(|b| b.name().to_string())
        .try_collect()
        .await
        .unwrap()
}

#[tokio::test]
async fn batch_delete_of_300_blobs_removes_every_one() {
    let c = testkit::blob::container("batch300").await;
    let names: Vec<String> = (0..300).map(|i| format!("part/{i:04}.json")).collect();
    upload_all(&c, &names).await;
    assert_eq!(remaining(&c).await.len(), 300);

    let results = c.delete_blobs(&names).await.unwrap();
    assert_eq!(results.len(), 300);
    for (name, r) in names.iter().zip(&results) {
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    assert!(remaining(&c).await.is_empty());
}

#[tokio::test]
async fn batch_delete_reports_a_missing_and_a_leased_blob_on_their_own() {
    let c = testkit::blob::container("batchmix").await;
    let names: Vec<String> = ["a", "leased", "missing", "b", "dir/c"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let present: Vec<String> = names.iter().filter(|n| *n != "missing").cloned().collect();
    upload_all(&c, &present).await;
    let leased = c.blob("leased").unwrap();
    leased
        .acquire_lease(LeaseDuration::Infinite, None, &Conditions::none())
        .await
        .unwrap();

    let results = c.delete_blobs(&names).await.unwrap();
    assert_eq!(results.len(), 5);
    assert!(results[0].is_ok(), "{:?}", results[0]);
    assert!(results[3].is_ok(), "{:?}", results[3]);
    assert!(results[4].is_ok(), "{:?}", results[4]);
    let lease_err = results[1].as_ref().unwrap_err();
    assert_eq!(lease_err.kind(), ErrorKind::LeaseHeld, "{lease_err}");
    assert_eq!(lease_err.status(), Some(412));
    assert_eq!(lease_err.error_code(), Some(&ErrorCode::LeaseIdMissing));
    assert!(lease_err.message().contains("\"leased\""), "{lease_err}");
    let missing = results[2].as_ref().unwrap_err();
    assert!(missing.is_not_found(), "{missing}");
    assert_eq!(missing.error_code(), Some(&ErrorCode::BlobNotFound));

    // Only the leased blob is left.
    assert_eq!(remaining(&c).await, vec!["leased".to_string()]);
}

#[tokio::test]
async fn batch_delete_signs_names_that_need_encoding_and_takes_snapshots_along() {
    let c = testkit::blob::container("batchenc").await;
    let names: Vec<String> = [
        "I'm a < & weird path",
        "a/😀.file",
        "spaces and #hash ?query %percent",
        "ümlaut/ß+plus=eq",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    upload_all(&c, &names).await;
    // A blob with a snapshot is deleted with it (as BlobClient::delete does).
    c.blob(&names[0])
        .unwrap()
        .snapshot(&Conditions::none())
        .await
        .unwrap();

    let results = c.delete_blobs(&names).await.unwrap();
    for (name, r) in names.iter().zip(&results) {
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    let left: Vec<String> = c
        .list_blobs(ListOptions::default().with_snapshots())
        .map_ok(|b| b.name().to_string())
        .try_collect()
        .await
        .unwrap();
    assert!(left.is_empty(), "{left:?}");
}

#[tokio::test]
async fn batch_delete_refuses_bad_input_before_sending() {
    let server = Scripted::start(vec![]).await;
    let c = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("box")
        .unwrap();
    let none: [&str; 0] = [];
    let e = c.delete_blobs(&none).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    let e = c
        .delete_blobs(&["fine", "ends-with-dot."])
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert!(e.message().contains("blob name 1"), "{e}");
    let long = "x".repeat(1025);
    let e = c.delete_blobs(&["ok", "also-ok", &long]).await.unwrap_err();
    assert!(e.message().contains("blob name 2"), "{e}");
    assert_eq!(server.count(), 0, "nothing may be sent for refused input");
}

/// 300 names are two Blob Batch requests (256 and 44 subrequests); a batch refused as a whole
/// gives each of its names that error.
#[tokio::test]
async fn batch_delete_sends_one_request_per_256_names() {
    let server = Scripted::start(vec![
        Reply::azure_error(403, "AuthorizationFailure"),
        Reply::azure_error(403, "AuthorizationFailure"),
    ])
    .await;
    let c = BlobServiceClient::with_options(&server.account(), testkit::fast_retry(0))
        .unwrap()
        .container("box")
        .unwrap();
    let names: Vec<String> = (0..300).map(|i| format!("b{i}")).collect();
    let results = c.delete_blobs(&names).await.unwrap();
    assert_eq!(results.len(), 300);
    for r in &results {
        assert_eq!(r.as_ref().unwrap_err().status(), Some(403));
    }
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    let parts = |body: &[u8]| {
        String::from_utf8_lossy(body)
            .matches("Content-Type: application/http\r\n")
            .count()
    };
    assert_eq!(parts(&reqs[0].body), 256);
    assert_eq!(parts(&reqs[1].body), 44);
    for r in &reqs {
        assert_eq!(r.method, "POST");
        assert!(
            r.target.contains("restype=container&comp=batch"),
            "{}",
            r.target
        );
        let ct = r.header("content-type").unwrap();
        assert!(ct.starts_with("multipart/mixed; boundary=batch_"), "{ct}");
    }
    let first = String::from_utf8_lossy(&reqs[0].body);
    assert!(
        first.contains("DELETE /devstoreaccount1/box/b0 HTTP/1.1\r\n"),
        "{first}"
    );
    assert!(
        first.contains("Authorization: SharedKey devstoreaccount1:")
            || first.contains("authorization: SharedKey devstoreaccount1:")
    );
    assert!(
        !first.contains("x-ms-version"),
        "subrequests carry no version"
    );
}

#[tokio::test]
async fn batch_delete_with_a_container_sas() {
    let account = testkit::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("the Azurite account signs with its key")
    };
    let c = testkit::blob::container("batchsas").await;
    let names: Vec<String> = (0..5).map(|i| format!("s/{i}")).collect();
    upload_all(&c, &names).await;
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let sas = SasBuilder::new("rd", expiry)
        .container(&key, c.name())
        .unwrap();
    let via_sas = BlobServiceClient::new(&account.clone().with_credential(Credential::Sas(sas)))
        .unwrap()
        .container(c.name())
        .unwrap();
    let mut with_missing = names.clone();
    with_missing.push("s/none".into());
    let results = via_sas.delete_blobs(&with_missing).await.unwrap();
    for (name, r) in names.iter().zip(&results) {
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    assert!(results[5].as_ref().unwrap_err().is_not_found());
    assert!(remaining(&c).await.is_empty());

    // A SAS without the delete permission: each subrequest is refused on its own.
    upload_all(&c, &names).await;
    let ro = SasBuilder::new("r", expiry)
        .container(&key, c.name())
        .unwrap();
    let read_only = BlobServiceClient::new(&account.with_credential(Credential::Sas(ro)))
        .unwrap()
        .container(c.name())
        .unwrap();
    // Whether the service refuses the batch request itself or each subrequest, every name
    // carries an authorization error.
    for r in read_only.delete_blobs(&names).await.unwrap() {
        assert_eq!(r.unwrap_err().kind(), ErrorKind::Auth);
    }
    assert_eq!(remaining(&c).await.len(), 5);
}

#[tokio::test]
async fn batch_delete_with_a_bearer_token_on_https() {
    let account = testkit::tls::https_account();
    let options = ClientOptions::default().transport(testkit::tls::transport());
    let keyed = BlobServiceClient::with_options(&account, options.clone()).unwrap();
    let c = keyed.container(&testkit::unique("batchtok")).unwrap();
    c.create().await.unwrap();
    let names: Vec<String> = (0..3).map(|i| format!("t/{i}")).collect();
    upload_all(&c, &names).await;
    let bearer = account.with_credential(Credential::bearer(testkit::token::CountingTokens::new(
        Duration::from_secs(3600),
    )));
    let via_token = BlobServiceClient::with_options(&bearer, options)
        .unwrap()
        .container(c.name())
        .unwrap();
    let results = via_token.delete_blobs(&names).await.unwrap();
    for (name, r) in names.iter().zip(&results) {
        assert!(r.is_ok(), "{name}: {r:?}");
    }
    assert!(remaining(&c).await.is_empty());
}
