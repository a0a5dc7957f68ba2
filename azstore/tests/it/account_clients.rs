//! Clients from a `StorageAccount`: one-line clients and plain reads, the emulator helper, and
//! the File endpoint `scripts/azurite` exports (Azurite has no File service; testkit's
//! emulator answers it).

use azstore::{Conditions, EmulatorPorts, ErrorKind, RequestSent, Service, StorageAccount};
use testkit as support;

#[tokio::test]
async fn one_line_clients_and_plain_reads() {
    let account = support::account();
    let container = account.container(&support::unique("ergo")).unwrap();
    container.create().await.unwrap();
    let blob = account.blob(container.name(), "a.txt").unwrap();
    let w = blob.upload("one", &Conditions::none()).await.unwrap();
    let read = blob.download().await.unwrap();
    assert_eq!(&read.body[..], b"one");
    assert_eq!(read.properties.etag, w.etag);
    assert_eq!(blob.get_properties().await.unwrap().etag, w.etag);
    // The conditional twin stays one call away: an unchanged blob is NotModified.
    let e = blob
        .download_if(&Conditions::if_none_match(&w.etag))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotModified);
    container.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn the_script_starts_a_local_file_service() {
    // testkit::account() is the connection string scripts/azurite exported: it must name a
    // File endpoint that answers (Azurite has no File service; testkit's emulator does).
    let account = support::account();
    let ep = account
        .endpoint(Service::File)
        .expect("FileEndpoint exported");
    assert!(ep.origin().starts_with("http://127.0.0.1:"), "{ep}");
    let share = account.share(&support::unique("ergo")).unwrap();
    share.create().await.unwrap();
    let file = account.file(share.name(), "hello.txt").unwrap();
    file.create(5, None).await.unwrap();
    file.put_range(0, bytes::Bytes::from_static(b"hello"), None)
        .await
        .unwrap();
    assert_eq!(
        &file.download(&Default::default()).await.unwrap().body[..],
        b"hello"
    );
}

#[test]
fn emulator_account_without_file_endpoint_names_the_missing_key() {
    // A connection string for the emulator account that lists only Azurite's three services
    // (what `scripts/azurite` exported before the File service existed).
    let a = StorageAccount::from_connection_string(
        "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;\
         AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;\
         BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;",
    )
    .unwrap();
    let e = a.share("docs").unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(e.request_sent(), RequestSent::No);
    assert!(e.to_string().contains("FileEndpoint"), "{e}");
    assert!(!e.to_string().contains("core.windows.net"), "{e}");
}

#[test]
fn emulator_helper_takes_host_and_ports() {
    let ports = EmulatorPorts {
        blob: 41000,
        queue: 41001,
        table: 41002,
        file: None,
    };
    let a = StorageAccount::emulator("localhost", ports).unwrap();
    assert_eq!(
        a.endpoint(Service::Table).unwrap().url(),
        "http://localhost:41002/devstoreaccount1"
    );
    assert!(a.endpoint(Service::File).is_err());
    assert_eq!(
        StorageAccount::development()
            .endpoint(Service::File)
            .unwrap()
            .url(),
        "http://127.0.0.1:10004/devstoreaccount1"
    );
    assert!(StorageAccount::emulator("bad/host", EmulatorPorts::default()).is_err());
}
