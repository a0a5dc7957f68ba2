//! Get User Delegation Key and user delegation SAS against the HTTPS Azurite with
//! `--oauth basic` that `scripts/azurite run` starts: the key is asked for with a bearer token
//! (from testkit's local token issuer), the SAS signed with it, and Azurite checks the
//! signature with the string-to-sign of the version azstore sends (2025-07-05 layout), so a
//! field out of order fails here.

use std::time::Duration as StdDuration;

use azstore::blob::ListOptions;
use azstore::{
    Conditions, ErrorKind, blob::BlobServiceClient, credential::Credential, http::ClientOptions,
    sas::SasBuilder,
};
use futures_util::TryStreamExt;
use testkit::token::CountingTokens;
use time::{Duration, OffsetDateTime};

fn https_options() -> ClientOptions {
    ClientOptions::default().transport(testkit::tls::transport())
}

fn bearer_blobs() -> BlobServiceClient {
    let account = testkit::tls::https_account().with_credential(Credential::bearer(
        CountingTokens::new(StdDuration::from_secs(3600)),
    ));
    BlobServiceClient::with_options(&account, https_options()).unwrap()
}

fn sas_blobs(sas: azstore::credential::SasToken) -> BlobServiceClient {
    let account = testkit::tls::https_account().with_credential(Credential::Sas(sas));
    BlobServiceClient::with_options(&account, https_options()).unwrap()
}

#[tokio::test]
async fn a_user_delegation_sas_reads_the_blob_it_names_and_nothing_more() {
    let blobs = bearer_blobs();
    let container = blobs.container(&testkit::unique("udk")).unwrap();
    container.create().await.unwrap();
    let blob = container.blob("doc.txt").unwrap();
    blob.upload("delegated", &Conditions::none()).await.unwrap();
    container
        .blob("other.txt")
        .unwrap()
        .upload("other", &Conditions::none())
        .await
        .unwrap();

    let now = OffsetDateTime::now_utc();
    let key = blobs
        .user_delegation_key(Some(now - Duration::minutes(5)), now + Duration::hours(1))
        .await
        .unwrap();
    assert_eq!(key.service(), "b");
    assert!(!key.object_id().is_empty() && !key.tenant_id().is_empty());
    assert!(!key.version().is_empty());
    let expiry = now + Duration::minutes(30);

    // Read with a blob SAS.
    let sas = SasBuilder::new("r", expiry)
        .start(now - Duration::minutes(5))
        .user_delegation_blob(&key, container.name(), "doc.txt")
        .unwrap();
    assert!(
        sas.expose_secret().contains("skoid="),
        "{}",
        sas.expose_secret()
    );
    let via_sas = sas_blobs(sas.clone()).container(container.name()).unwrap();
    let read = via_sas.blob("doc.txt").unwrap().download().await.unwrap();
    assert_eq!(&read.body[..], b"delegated");

    // The same SAS neither writes nor reads another blob.
    let e = via_sas
        .blob("doc.txt")
        .unwrap()
        .upload("overwritten", &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    let e = via_sas
        .blob("other.txt")
        .unwrap()
        .download()
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    assert_eq!(&blob.download().await.unwrap().body[..], b"delegated");

    // A container SAS lists and reads every blob.
    let sas = SasBuilder::new("rl", expiry)
        .user_delegation_container(&key, container.name())
        .unwrap();
    let via_sas = sas_blobs(sas).container(container.name()).unwrap();
    let names: Vec<String> = via_sas
        .list_blobs(ListOptions::default())
        .map_ok(|b| b.name().to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(names, ["doc.txt", "other.txt"]);
    let read = via_sas.blob("other.txt").unwrap().download().await.unwrap();
    assert_eq!(&read.body[..], b"other");

    // A signature made for another container is refused.
    let elsewhere = SasBuilder::new("rl", expiry)
        .user_delegation_container(&key, "someothercontainer")
        .unwrap();
    let e = sas_blobs(elsewhere)
        .container(container.name())
        .unwrap()
        .blob("doc.txt")
        .unwrap()
        .download()
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
}

#[tokio::test]
async fn the_key_needs_a_bearer_credential_and_a_valid_window() {
    let now = OffsetDateTime::now_utc();
    // Shared key: refused before sending (the service would answer 403).
    let shared =
        BlobServiceClient::with_options(&testkit::tls::https_account(), https_options()).unwrap();
    let e = shared
        .user_delegation_key(None, now + Duration::hours(1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.request_sent(), azstore::RequestSent::No);

    let blobs = bearer_blobs();
    for (start, expiry) in [
        (None, now + Duration::days(8)),
        (Some(now), now - Duration::minutes(1)),
    ] {
        let e = blobs.user_delegation_key(start, expiry).await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.request_sent(), azstore::RequestSent::No);
    }
    // A stored access policy cannot be used with a user delegation SAS.
    let key = blobs
        .user_delegation_key(None, now + Duration::hours(1))
        .await
        .unwrap();
    let e = SasBuilder::new("r", now + Duration::minutes(5))
        .identifier("policy")
        .user_delegation_container(&key, "c")
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
}
