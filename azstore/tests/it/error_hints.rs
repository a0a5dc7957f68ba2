//! Errors that name the fix: a refused Shared Key or SAS says what to check, a refused
//! connection keeps the operating system's cause, and a chunked read that found the blob
//! rewritten says how to start over and is told apart from the caller's own stale If-Match.
//! Every error displays on one line (a transport error names the host), and the errors users
//! branch on are recognisable (a stale pop receipt, an SMB delete pending). Against Azurite and
//! the local File service.

use testkit as support;
use testkit::blob as blob_support;
use testkit::file_server::{FileServer, SmbLock};

use std::time::Duration;

use azstore::blob::{BlobServiceClient, DownloadOptions, OnChange};
use azstore::credential::{Credential, SharedKeyCredential};
use azstore::sas::SasBuilder;
use azstore::{Conditions, EmulatorPorts, ErrorKind, RequestSent, StorageAccount};
use futures_util::StreamExt;

#[tokio::test]
async fn a_wrong_key_is_named_as_the_cause() {
    let good = support::account();
    let c = blob_support::container("wrongkey").await;
    let bad = good.clone().with_credential(Credential::SharedKey(
        SharedKeyCredential::new(good.name(), "d3Jvbmcga2V5IHdyb25nIGtleQ==").unwrap(),
    ));
    let blob = BlobServiceClient::new(&bad)
        .unwrap()
        .container(c.name())
        .unwrap()
        .blob("b")
        .unwrap();
    // A write (the service sends an error body) and a HEAD (no body at all).
    let put = blob.upload("x", &Conditions::none()).await.unwrap_err();
    let head = blob.get_properties().await.unwrap_err();
    for e in [put, head] {
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert_eq!(e.status(), Some(403), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("check the account name and its key"),
            "{text}"
        );
        assert!(text.contains(good.name()), "{text}");
        assert!(
            !text.contains("d3Jvbmcga2V5"),
            "the key is never printed: {text}"
        );
    }
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn a_refused_sas_names_its_expiry_and_permissions() {
    let account = support::account();
    let c = blob_support::container("sashint").await;
    let key = match account.credential() {
        Credential::SharedKey(k) => k.clone(),
        other => panic!("the Azurite account has a key, not {other:?}"),
    };
    // Read-only: a write is refused for its permissions.
    let ro = SasBuilder::new(
        "r",
        azstore::OffsetDateTime::now_utc() + Duration::from_secs(600),
    )
    .container(&key, c.name())
    .unwrap();
    let blob = BlobServiceClient::new(&account.clone().with_credential(Credential::Sas(ro)))
        .unwrap()
        .container(c.name())
        .unwrap()
        .blob("b")
        .unwrap();
    let e = blob.upload("x", &Conditions::none()).await.unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("expiry") && text.contains("permissions"),
        "{text}"
    );
    assert!(!text.contains("sig="), "{text}");
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn a_refused_connection_keeps_the_os_cause() {
    // Port 1 on the loopback interface: nothing listens there.
    let account = StorageAccount::development()
        .with_endpoint(
            azstore::Service::Blob,
            "http://127.0.0.1:1/devstoreaccount1",
        )
        .unwrap();
    let blob = BlobServiceClient::with_options(&account, testkit::fast_retry(2))
        .unwrap()
        .container("refused")
        .unwrap()
        .blob("b")
        .unwrap();
    let e = blob.get_properties().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport, "{e}");
    assert_eq!(e.request_sent(), azstore::RequestSent::No);
    let text = e.to_string();
    assert!(text.contains("127.0.0.1:1"), "{text}");
    assert!(text.to_lowercase().contains("refused"), "{text}");
    // The source chain ends in the operating system's error.
    let mut cause: &dyn std::error::Error = &e;
    let mut io = None;
    while let Some(inner) = cause.source() {
        if let Some(x) = inner.downcast_ref::<std::io::Error>() {
            io = Some(x.kind());
        }
        cause = inner;
    }
    assert_eq!(io, Some(std::io::ErrorKind::ConnectionRefused), "{e:?}");
}

#[tokio::test]
async fn a_blob_changed_during_a_chunked_read_says_how_to_restart() {
    let c = blob_support::container("chgread").await;
    let b = c.blob("t").unwrap();
    let old = blob_support::pattern(3 * 4096, 3);
    let w = b.upload(old, &Conditions::none()).await.unwrap();

    let mut s = b.download_stream(4096).await.unwrap();
    s.next().await.unwrap().unwrap();
    b.upload(blob_support::pattern(3 * 4096, 4), &Conditions::none())
        .await
        .unwrap();
    let changed = s.next().await.unwrap().unwrap_err();
    assert!(changed.is_precondition_failed(), "{changed}");
    assert!(changed.is_changed_during_read(), "{changed}");
    assert!(
        changed.to_string().contains("OnChange::Restart"),
        "{changed}"
    );

    // The caller's own stale If-Match is a 412 too, but not a change during a read.
    let stale = b
        .upload("mine", &Conditions::if_match(&w.etag))
        .await
        .unwrap_err();
    assert!(stale.is_precondition_failed(), "{stale}");
    assert!(!stale.is_changed_during_read(), "{stale}");
    assert!(!stale.to_string().contains("OnChange"), "{stale}");

    // What the message advises works: the download starts over on the new version.
    let d = b
        .download_chunked(
            &DownloadOptions::default()
                .chunk_size(4096)
                .on_change(OnChange::Restart { max_restarts: 3 }),
        )
        .await
        .unwrap();
    assert_eq!(d.body.len(), 3 * 4096);
    c.delete(&Conditions::none()).await.unwrap();
}

/// A lease on a blob that does not exist is a 404 `BlobNotFound` that says a lease needs an
/// existing blob and how to make one (a lease request never creates the blob); in a missing
/// container, `ContainerNotFound` says to create both. The codes are unchanged.
#[tokio::test]
async fn a_lease_on_a_missing_blob_says_the_blob_must_exist() {
    use azstore::ErrorCode;
    use azstore::lease::{LeaseDuration, LeaseGuard};
    let fifteen = LeaseDuration::seconds(15).unwrap();
    let c = blob_support::container("leasemissing").await;
    let blob = c.blob("not-there").unwrap();
    let direct = blob
        .acquire_lease(fifteen, None, &Conditions::none())
        .await
        .unwrap_err();
    let guarded = LeaseGuard::acquire(blob.clone(), fifteen)
        .await
        .unwrap_err();
    for e in [direct, guarded] {
        assert!(e.is_not_found(), "{e}");
        assert_eq!(e.status(), Some(404), "{e}");
        assert_eq!(e.error_code(), Some(&ErrorCode::BlobNotFound), "{e}");
        let text = e.to_string();
        assert!(text.contains("a lease needs an existing blob"), "{text}");
        assert!(text.contains("upload_if_not_exists"), "{text}");
    }
    // Nothing was created by the attempts.
    assert!(blob.get_properties().await.unwrap_err().is_not_found());

    let in_missing_container = BlobServiceClient::new(&support::account())
        .unwrap()
        .container(&testkit::unique("nocontainer"))
        .unwrap()
        .blob("b")
        .unwrap();
    let e = in_missing_container
        .acquire_lease(fifteen, None, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::ContainerNotFound), "{e}");
    assert!(e.to_string().contains("create the container"), "{e}");
    // Once the blob exists, the same acquire succeeds.
    blob.upload_if_not_exists("").await.unwrap();
    let lease = blob
        .acquire_lease(fifteen, None, &Conditions::none())
        .await
        .unwrap();
    blob.release_lease(&lease.lease_id, &Conditions::none())
        .await
        .unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn transport_errors_name_the_host_on_one_line() {
    // A port nobody listens on: bind, note the port, close.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let ports = EmulatorPorts {
        blob: port,
        ..EmulatorPorts::default()
    };
    let account = StorageAccount::emulator("127.0.0.1", ports).unwrap();
    let options = azstore::http::ClientOptions::default().retry(azstore::http::RetryPolicy::none());
    let blob = azstore::blob::BlobServiceClient::with_options(&account, options)
        .unwrap()
        .container("nobody")
        .unwrap()
        .blob("b")
        .unwrap();
    let e = blob.download().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport);
    assert_eq!(e.request_sent(), RequestSent::No);
    let shown = e.to_string();
    assert!(shown.contains(&format!("127.0.0.1:{port}")), "{shown}");
    assert!(!shown.contains('\n'), "{shown:?}");
}

#[tokio::test]
async fn service_messages_display_on_one_line() {
    let account = support::account();
    let blob = account.blob(&support::unique("ergo"), "missing").unwrap();
    let e = blob.download().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ContainerNotFound);
    let shown = e.to_string();
    assert!(!shown.contains('\n'), "{shown:?}");
}

#[tokio::test]
async fn a_stale_pop_receipt_is_recognisable() {
    let account = support::account();
    let queue = account.queue(&support::unique("ergo")).unwrap();
    queue.create_if_not_exists().await.unwrap();
    queue.put_message("work").await.unwrap();
    let mut first = queue
        .receive_messages(1, Duration::from_secs(30))
        .await
        .unwrap();
    let msg = first.pop().expect("one message");
    let stale = msg.pop_receipt().clone();
    let id = msg.id.clone();
    // Updating the message issues a new receipt: the old one is now stale.
    let mut msg = msg;
    queue
        .update_message(&mut msg, Duration::from_secs(30), None)
        .await
        .unwrap();
    let e = queue
        .delete_message_with_receipt(&id, &stale)
        .await
        .unwrap_err();
    assert!(e.is_pop_receipt_stale(), "{e}");
    queue.delete_message(msg).await.unwrap();
    queue.delete().await.unwrap();
}

#[tokio::test]
async fn smb_delete_pending_is_recognisable() {
    let server = FileServer::start().await;
    let share = server.account().share(&support::unique("ergo")).unwrap();
    share.create().await.unwrap();
    let file = share.file("busy.txt").unwrap();
    file.create(1, None).await.unwrap();
    server.lock(
        &format!("{}/busy.txt", share.name()),
        SmbLock::DeletePending,
    );
    let e = file.get_properties().await.unwrap_err();
    assert!(e.is_delete_pending(), "{e}");
    assert!(!e.is_sharing_violation());
}
