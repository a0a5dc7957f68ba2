//! Every connection-string form the official SDKs accept, against Azurite: a SAS with one
//! service's endpoint and no AccountName (the Azure portal's and Storage Explorer's form), each
//! service alone, endpoints only with the key (and the account) from the variables, and the
//! full form. Each account writes and reads back, so a wrong account name (the Shared Key
//! signature covers it) or a wrong endpoint fails here.
//!
//! `UseDevelopmentStorage=true;DevelopmentStorageProxyUri=...` and `EndpointSuffix` name fixed
//! ports or a host-style DNS name that a private Azurite on free ports does not serve: their
//! parsing is checked in the unit tests of `account.rs`. A malformed connection string is
//! refused naming the key, never the value.

use testkit as support;

use std::time::Duration;

use azstore::credential::{Credential, SharedKeyCredential};
use azstore::sas::SasBuilder;
use azstore::{Conditions, ErrorKind, Service, StorageAccount};

/// Azurite's account, key and endpoints, from the connection string `scripts/azurite` exports.
struct Azurite {
    name: String,
    key: String,
    blob: String,
    queue: String,
    table: String,
}

fn azurite() -> Azurite {
    let account = support::account(); // fails loudly without Azurite
    let Credential::SharedKey(_) = account.credential() else {
        panic!("the Azurite connection string has a key");
    };
    let cs = std::env::var("AZURE_STORAGE_CONNECTION_STRING").unwrap();
    let get = |k: &str| {
        cs.split(';')
            .find_map(|kv| kv.strip_prefix(&format!("{k}=")))
            .unwrap_or_else(|| panic!("no {k} in the Azurite connection string"))
            .to_string()
    };
    Azurite {
        name: account.name().to_string(),
        key: get("AccountKey"),
        blob: account.endpoint(Service::Blob).unwrap().url(),
        queue: account.endpoint(Service::Queue).unwrap().url(),
        table: account.endpoint(Service::Table).unwrap().url(),
    }
}

/// An account SAS for every emulated service, every permission a round trip needs.
fn account_sas(a: &Azurite) -> String {
    SasBuilder::new(
        "racwdlup",
        azstore::OffsetDateTime::now_utc() + Duration::from_secs(3600),
    )
    .account(
        &SharedKeyCredential::new(&a.name, &a.key).unwrap(),
        "bqt",
        "sco",
    )
    .unwrap()
    .expose_secret()
    .to_string()
}

async fn blob_round_trip(account: &StorageAccount) {
    let c = support::unique("csblob");
    account.container(&c).unwrap().create().await.unwrap();
    let blob = account.blob(&c, "b").unwrap();
    blob.upload(&b"hello"[..], &Conditions::none())
        .await
        .unwrap();
    let got = blob.download().await.unwrap().body;
    assert_eq!(&got[..], b"hello");
}

async fn queue_round_trip(account: &StorageAccount) {
    let q = account.queue(&support::unique("csqueue")).unwrap();
    q.create_if_not_exists().await.unwrap();
    q.put_message("hello").await.unwrap();
    let m = q
        .receive_message(Duration::from_secs(30))
        .await
        .unwrap()
        .expect("the message is there");
    assert_eq!(&m.content().unwrap()[..], b"hello");
}

async fn table_round_trip(account: &StorageAccount) {
    #[derive(serde::Serialize, serde::Deserialize)]
    #[serde(rename_all = "PascalCase")]
    struct Row {
        partition_key: String,
        row_key: String,
        v: i32,
    }
    let t = account.table(&support::unique("cstable")).unwrap();
    t.create_if_not_exists().await.unwrap();
    t.insert(&Row {
        partition_key: "p".into(),
        row_key: "r".into(),
        v: 7,
    })
    .await
    .unwrap();
    assert_eq!(t.get::<Row>("p", "r").await.unwrap().entity.v, 7);
}

#[tokio::test]
async fn a_sas_with_one_service_endpoint_and_no_account_name() {
    let a = azurite();
    let sas = account_sas(&a);
    for (key, url, svc) in [
        ("BlobEndpoint", &a.blob, Service::Blob),
        ("QueueEndpoint", &a.queue, Service::Queue),
        ("TableEndpoint", &a.table, Service::Table),
    ] {
        let account = StorageAccount::from_connection_string(&format!(
            "{key}={url};SharedAccessSignature={sas}"
        ))
        .unwrap();
        assert_eq!(account.name(), a.name, "read off the path-style {key}");
        assert!(matches!(account.credential(), Credential::Sas(_)));
        // Only that service: never a guessed endpoint for the others.
        for other in [Service::Blob, Service::Queue, Service::Table] {
            assert_eq!(account.endpoint(other).is_ok(), other == svc, "{key}");
        }
        match svc {
            Service::Blob => blob_round_trip(&account).await,
            Service::Queue => queue_round_trip(&account).await,
            _ => table_round_trip(&account).await,
        }
    }
    // All three endpoints with the SAS (the portal's "all services" form), `?` included.
    let account = StorageAccount::from_connection_string(&format!(
        "BlobEndpoint={};QueueEndpoint={};TableEndpoint={};SharedAccessSignature=?{sas}",
        a.blob, a.queue, a.table
    ))
    .unwrap();
    blob_round_trip(&account).await;
    queue_round_trip(&account).await;
    table_round_trip(&account).await;
}

#[tokio::test]
async fn endpoints_only_with_the_key_and_account_from_the_variables() {
    let a = azurite();
    let endpoints = format!(
        "BlobEndpoint={};QueueEndpoint={};TableEndpoint={}",
        a.blob, a.queue, a.table
    );
    // The account from the endpoints, the key from its variable.
    let env = |vars: Vec<(&'static str, String)>| {
        move |k: &str| vars.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    };
    for key_var in [
        "AZURE_STORAGE_KEY",
        "AZURE_STORAGE_ACCOUNT_KEY",
        "AZURE_STORAGE_ACCESS_KEY",
    ] {
        let account = StorageAccount::from_env_with(env(vec![
            ("AZURE_STORAGE_CONNECTION_STRING", endpoints.clone()),
            (key_var, a.key.clone()),
        ]))
        .unwrap();
        assert_eq!(account.name(), a.name);
        assert!(matches!(account.credential(), Credential::SharedKey(_)));
        blob_round_trip(&account).await;
    }
    // ... with the account variable too (it must agree with the endpoints).
    let account = StorageAccount::from_env_with(env(vec![
        ("AZURE_STORAGE_CONNECTION_STRING", endpoints.clone()),
        ("AZURE_STORAGE_ACCOUNT", a.name.clone()),
        ("AZURE_STORAGE_KEY", a.key.clone()),
    ]))
    .unwrap();
    queue_round_trip(&account).await;
    table_round_trip(&account).await;
    let e = StorageAccount::from_env_with(env(vec![
        ("AZURE_STORAGE_CONNECTION_STRING", endpoints.clone()),
        ("AZURE_STORAGE_ACCOUNT", "someoneelse".into()),
        ("AZURE_STORAGE_KEY", a.key.clone()),
    ]))
    .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    // A SAS from its variable, no account name anywhere but the endpoint.
    let account = StorageAccount::from_env_with(env(vec![
        (
            "AZURE_STORAGE_CONNECTION_STRING",
            format!("BlobEndpoint={}", a.blob),
        ),
        ("AZURE_STORAGE_SAS_TOKEN", account_sas(&a)),
    ]))
    .unwrap();
    assert!(matches!(account.credential(), Credential::Sas(_)));
    blob_round_trip(&account).await;
}

#[tokio::test]
async fn a_key_with_endpoints_and_no_account_name_signs_as_the_endpoints_account() {
    let a = azurite();
    let account = StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountKey={};BlobEndpoint={};QueueEndpoint={};TableEndpoint={}",
        a.key, a.blob, a.queue, a.table
    ))
    .unwrap();
    assert_eq!(account.name(), a.name);
    blob_round_trip(&account).await;
    queue_round_trip(&account).await;
    table_round_trip(&account).await;
    // The full form, as the portal's Access keys page gives it (with explicit endpoints).
    let full = StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=http;AccountName={};AccountKey={};BlobEndpoint={};QueueEndpoint={};TableEndpoint={};",
        a.name, a.key, a.blob, a.queue, a.table
    ))
    .unwrap();
    blob_round_trip(&full).await;
}

#[test]
fn malformed_connection_strings_name_the_key_not_the_value() {
    for (cs, key) in [
        ("AccountName=acct;AccountKey=notbase64!!", "AccountKey"),
        (
            "AccountName=acct;AccountKey=a2V5;BlobEndpoint=ftp://x",
            "BlobEndpoint",
        ),
        (
            "AccountName=acct;DefaultEndpointsProtocol=gopher",
            "DefaultEndpointsProtocol",
        ),
        ("AccountName=ACCT!;AccountKey=a2V5", "AccountName"),
        ("AccountName=acct;Typo=1", "Typo"),
        ("UseDevelopmentStorage=yes", "UseDevelopmentStorage"),
    ] {
        let err = StorageAccount::from_connection_string(cs).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.message().contains(key), "{cs}: {err}");
        assert!(!err.to_string().contains("notbase64"));
    }
}
