//! What a hostile caller value or a hostile server cannot do: a name never leaves its
//! container (checked at a capture server, where the request's path is what the caller named,
//! and against Azurite with an account SAS), a success body never takes more memory than its
//! operation's cap, no SAS or copy-source token goes over cleartext to another host, no
//! redirect is followed, a table batch cannot be made to carry a forged header, a service's
//! text cannot drive the terminal, and no key or SAS signature shows in `Debug` or `Display`.

use testkit as support;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use azstore::blob::{BlobServiceClient, CopyOptions, CopySource, SourceAuthorization};
use azstore::credential::{Credential, SharedKeyCredential};
use azstore::queue::{MessageId, PopReceipt, QueueServiceClient};
use azstore::sas::SasBuilder;
use azstore::table::{Batch, Entity, TableServiceClient};
use azstore::{Conditions, ETag, ErrorKind, RequestSent, Service, StorageAccount};
use support::blob::blob_at;
use support::scripted::{Reply, Scripted};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An account whose every storage endpoint is `base` (nothing listens there: a request that
/// reached the network would fail with a transport error, never with `InvalidInput`).
fn account_at(base: &str) -> StorageAccount {
    let mut a = StorageAccount::development();
    for s in [Service::Blob, Service::Queue, Service::Table, Service::File] {
        a = a.with_endpoint(s, base).unwrap();
    }
    a
}

fn assert_refused_before_sending(e: &azstore::Error, what: &str) {
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
    assert_eq!(e.request_sent(), RequestSent::No, "{what}: {e}");
}

#[tokio::test]
async fn blob_names_reach_the_server_exactly_as_named_and_never_leave_their_container() {
    let server = Scripted::start(vec![Reply::status(404)]).await;
    let container = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("app-uploads")
        .unwrap();
    for escape in [
        "../secrets/config.json",
        "..",
        ".",
        "a/../../secrets/x",
        "a/./b",
        "./a",
        "a/..",
        "..\\secrets\\x",
    ] {
        let e = container.blob(escape).unwrap_err();
        assert_refused_before_sending(&e, escape);
    }
    assert_eq!(server.count(), 0, "nothing was sent for a refused name");
    // Names with dots that are not `.`/`..` segments are names like any other: the path the
    // server receives is the container's, then the name (percent-encoded), unchanged.
    for (name, path) in [
        ("a..b", "a..b"),
        ("..a/b..c", "..a/b..c"),
        (".env", ".env"),
        ("v1/.../x", "v1/.../x"),
        ("%2e%2e/x", "%252e%252e/x"),
        ("a b/c", "a%20b/c"),
    ] {
        assert!(!container.blob(name).unwrap().exists().await.unwrap());
        let got = server.requests().last().unwrap().target.clone();
        assert_eq!(
            got,
            format!("/devstoreaccount1/app-uploads/{path}"),
            "{name}"
        );
    }
}

#[tokio::test]
async fn with_an_account_sas_a_dot_dot_name_cannot_read_or_overwrite_another_container() {
    let account = support::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("the test account uses a shared key")
    };
    let blobs = BlobServiceClient::new(&account).unwrap();
    let (uploads, secrets) = (support::unique("uploads"), support::unique("secrets"));
    blobs.container(&uploads).unwrap().create().await.unwrap();
    let secret = blobs.container(&secrets).unwrap();
    secret.create().await.unwrap();
    let config = secret.blob("config.json").unwrap();
    config
        .upload("the secret", &Conditions::none())
        .await
        .unwrap();

    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let sas = SasBuilder::new("rwdlc", expiry)
        .account(&key, "b", "sco")
        .unwrap();
    let user = BlobServiceClient::new(&account.clone().with_credential(Credential::Sas(sas)))
        .unwrap()
        .container(&uploads)
        .unwrap();
    let e = user.blob(&format!("../{secrets}/config.json")).unwrap_err();
    assert_refused_before_sending(&e, "blob");
    // The SAS itself works inside the container (the refusal is the name's, not the SAS's).
    user.blob("mine.txt")
        .unwrap()
        .upload("ok", &Conditions::none())
        .await
        .unwrap();
    assert_eq!(&config.download().await.unwrap().body[..], b"the secret");
    blobs
        .container(&uploads)
        .unwrap()
        .delete(&Conditions::none())
        .await
        .unwrap();
    secret.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn a_message_id_cannot_turn_a_delete_into_one_on_the_queue() {
    // At a capture server: nothing is sent for `..` or `.`; a real id goes to its own path.
    let server = Scripted::start(vec![Reply::status(204)]).await;
    let queue = QueueServiceClient::new(&server.account())
        .unwrap()
        .queue("jobs")
        .unwrap();
    let receipt = PopReceipt::new("AgAAAAMAAAAAAAAA");
    for bad in ["..", ".", "a/b", "a\\b"] {
        let e = queue
            .delete_message_with_receipt(&MessageId::new(bad), &receipt)
            .await
            .unwrap_err();
        assert_refused_before_sending(&e, bad);
    }
    assert_eq!(server.count(), 0);
    queue
        .delete_message_with_receipt(&MessageId::new("a..b"), &receipt)
        .await
        .unwrap();
    let sent = server.requests();
    assert_eq!(sent.len(), 1);
    assert!(
        sent[0]
            .target
            .starts_with("/devstoreaccount1/jobs/messages/a..b?popreceipt="),
        "{}",
        sent[0].target
    );

    // Against Azurite with an account SAS: the queue keeps its three messages.
    let account = support::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("the test account uses a shared key")
    };
    let real = support::queue::fresh_queue("dotdot").await;
    for i in 0..3 {
        real.put_message(format!("m{i}")).await.unwrap();
    }
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let sas = SasBuilder::new("rwdlacup", expiry)
        .account(&key, "q", "sco")
        .unwrap();
    let user = QueueServiceClient::new(&account.with_credential(Credential::Sas(sas)))
        .unwrap()
        .queue(real.name())
        .unwrap();
    let got = user
        .receive_messages(1, std::time::Duration::from_secs(1))
        .await
        .unwrap();
    let e = user
        .delete_message_with_receipt(&MessageId::new(".."), got[0].pop_receipt())
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "..");
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    assert_eq!(real.peek_messages(32).await.unwrap().len(), 3);
    real.delete().await.unwrap();
}

#[cfg(feature = "cosmos")]
#[tokio::test]
async fn a_cosmos_id_cannot_name_the_collection_above_it() {
    use azstore::cosmos::{CosmosClient, CosmosKey, PartitionKey};
    let server = Scripted::start(vec![Reply::status(404)]).await;
    let client = CosmosClient::new(
        &format!("http://127.0.0.1:{}", server.port),
        CosmosKey::new("a2V5").unwrap(),
    )
    .unwrap();
    let container = client
        .database("db")
        .unwrap()
        .container("c", "/pk")
        .unwrap();
    for bad in ["..", "."] {
        let e = container
            .item::<u64>(bad, PartitionKey::from("p"))
            .unwrap_err();
        assert_refused_before_sending(&e, bad);
        assert_refused_before_sending(&client.database(bad).unwrap_err(), bad);
        assert_refused_before_sending(
            &client
                .database("db")
                .unwrap()
                .container(bad, "/pk")
                .unwrap_err(),
            bad,
        );
    }
    assert_eq!(server.count(), 0);
    let item = container
        .item::<u64>("..a.", PartitionKey::from("p"))
        .unwrap();
    let _ = item.read().await;
    let sent = server.requests();
    assert_eq!(sent[0].target, "/dbs/db/colls/c/docs/..a.");
}

/// A server that answers every request with 200 and a body that never ends (chunked, 64 KiB
/// chunks, at most `bound` bytes so the test ends by itself), or that declares `declared`
/// bytes. Counts the body bytes it managed to write before the client stopped reading.
async fn endless_server(declared: Option<u64>, bound: u64) -> (u16, Arc<AtomicU64>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let written = Arc::new(AtomicU64::new(0));
    let counter = written.clone();
    tokio::spawn(async move {
        while let Ok((mut sock, _)) = listener.accept().await {
            let counter = counter.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 8192];
                let mut head = Vec::new();
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match sock.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let framing = match declared {
                    Some(n) => format!("content-length: {n}"),
                    None => "transfer-encoding: chunked".to_string(),
                };
                let head = format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/xml\r\n{framing}\r\n\r\n"
                );
                if sock.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'<'; 64 * 1024];
                let mut sent = 0u64;
                while sent < bound {
                    let piece = if declared.is_some() {
                        sock.write_all(&chunk).await
                    } else {
                        let mut framed = format!("{:x}\r\n", chunk.len()).into_bytes();
                        framed.extend_from_slice(&chunk);
                        framed.extend_from_slice(b"\r\n");
                        sock.write_all(&framed).await
                    };
                    if piece.is_err() {
                        break;
                    }
                    sent += chunk.len() as u64;
                    counter.fetch_add(chunk.len() as u64, Ordering::Relaxed);
                }
            });
        }
    });
    (port, written)
}

/// Runs `call` against an endless (or `declared`-length) body and returns the body bytes the
/// server managed to write before the client stopped reading, after checking the call failed
/// with `ResponseTooLarge` naming `cap` (when given).
async fn bytes_taken<F, Fut, T>(declared: Option<u64>, cap: Option<&str>, call: F) -> u64
where
    F: FnOnce(StorageAccount) -> Fut,
    Fut: std::future::Future<Output = azstore::Result<T>>,
    T: std::fmt::Debug,
{
    let (port, written) = endless_server(declared, 1 << 30).await;
    let account = account_at(&format!("http://127.0.0.1:{port}/devstoreaccount1"));
    let e = call(account).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::ResponseTooLarge, "{e}");
    if let Some(cap) = cap {
        assert!(e.to_string().contains(cap), "{e}");
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    written.load(Ordering::Relaxed)
}

#[tokio::test]
async fn an_endless_success_body_never_takes_more_than_the_operations_cap() {
    // The socket buffers on both sides hold a few MiB the client never read: the bound
    // allows 16 MiB for them.
    const SLACK: u64 = 16 << 20;
    let list = |account: StorageAccount| async move {
        BlobServiceClient::new(&account)
            .unwrap()
            .list_containers_page(&Default::default(), None)
            .await
    };
    // List Containers: the default cap, 64 MiB.
    let sent = bytes_taken(None, Some("64 MiB"), list).await;
    println!("list containers: the server wrote {sent} bytes before the client stopped");
    assert!(sent <= (64 << 20) + SLACK, "{sent}");
    // Get Messages: 8 MiB.
    let sent = bytes_taken(None, Some("8 MiB"), |account| async move {
        QueueServiceClient::new(&account)
            .unwrap()
            .queue("jobs")
            .unwrap()
            .receive_messages(32, std::time::Duration::from_secs(30))
            .await
    })
    .await;
    println!("get messages: the server wrote {sent} bytes before the client stopped");
    assert!(sent <= (8 << 20) + SLACK, "{sent}");
    // A declared 2 GiB document is refused before its body is read.
    let sent = bytes_taken(Some(2 << 30), None, list).await;
    assert!(sent <= SLACK, "{sent}");
}

#[tokio::test]
async fn a_sas_or_a_copy_source_token_never_goes_over_cleartext_to_another_host() {
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let key = azstore::credential::SharedKeyCredential::new("devstoreaccount1", "a2V5").unwrap();
    let sas = SasBuilder::new("r", expiry)
        .account(&key, "b", "sco")
        .unwrap();
    // `.invalid` never resolves: the refusal must come before any lookup.
    let remote = account_at("http://storage.azstore.invalid/devstoreaccount1");
    let blob = blob_at(
        &remote.clone().with_credential(Credential::Sas(sas.clone())),
        "ctr",
        "b",
    );
    let e = blob.download().await.unwrap_err();
    assert_refused_before_sending(&e, "SAS over http");
    assert!(e.to_string().contains("allow_sas_over_http"), "{e}");
    assert!(!e.to_string().contains(sas.expose_secret()), "{e}");

    // A copy source's SAS URL, with the account's own Shared Key (which is never sent).
    let dest = BlobServiceClient::new(&remote)
        .unwrap()
        .container("ctr")
        .unwrap()
        .blob("copy")
        .unwrap();
    let source = "https://src.blob.core.windows.net/c/b?sv=2025-01-05&sig=SECRETSIG";
    let e = dest
        .copy_from_url(source, &CopyOptions::new(Conditions::none()))
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "copy source SAS over http");
    assert!(!e.to_string().contains("SECRETSIG"), "{e}");

    // A copy source's bearer token over http, even to a loopback server, unless allowed.
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let local = blob_at(&server.account(), "ctr", "b");
    let from = CopySource::url("https://src.blob.core.windows.net/c/b")
        .unwrap()
        .bearer(SourceAuthorization::bearer("eyJ0-token").unwrap());
    let e = local
        .put_blob_from_url(
            &from,
            &azstore::blob::PutFromUrlOptions::new(Conditions::none()),
        )
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "copy source bearer over http");
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_redirect_is_never_followed_and_no_referer_is_sent() {
    let elsewhere = Scripted::start(vec![Reply::status(200)]).await;
    let location = format!("http://127.0.0.1:{}/stolen", elsewhere.port);
    let server = Scripted::start(vec![Reply::with(
        307,
        &[("location", location.as_str())],
        b"",
    )])
    .await;
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let key = azstore::credential::SharedKeyCredential::new("devstoreaccount1", "a2V5").unwrap();
    let sas = SasBuilder::new("r", expiry)
        .account(&key, "b", "sco")
        .unwrap();
    let blob = blob_at(
        &server.account().with_credential(Credential::Sas(sas)),
        "ctr",
        "b",
    );
    let e = blob.download().await.unwrap_err();
    assert_eq!(e.status(), Some(307), "{e}");
    assert_eq!(elsewhere.count(), 0, "the redirect was not followed");
    assert!(
        server
            .requests()
            .iter()
            .all(|r| r.header("referer").is_none())
    );
}

#[tokio::test]
async fn a_table_batch_refuses_an_etag_that_would_forge_a_header() {
    let server = Scripted::start(vec![Reply::status(202)]).await;
    let table = TableServiceClient::new(&server.account())
        .unwrap()
        .table("tbl")
        .unwrap();
    for bad in ["\"x\"\r\nIf-Match: *", "", "  ", "\"ü\""] {
        let batch = Batch::new().replace(&Entity::new("p", "r").with("N", 1_i64), ETag::new(bad));
        let e = table.submit(&batch).await.unwrap_err();
        assert_refused_before_sending(&e, bad);
    }
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn a_services_text_cannot_drive_the_terminal() {
    let server = Scripted::start(vec![Reply::with(
        400,
        &[("x-ms-error-code", "BadCode")],
        b"<?xml version=\"1.0\"?><Error><Code>X</Code><Message>owned\x1b[31m red\x07\rforged line</Message></Error>",
    )])
    .await;
    let blob = blob_at(&server.account(), "ctr", "b");
    let e = blob.download().await.unwrap_err();
    let shown = e.to_string();
    assert!(!shown.chars().any(char::is_control), "{shown:?}");
    assert!(shown.contains("\\u{1b}[31m"), "{shown}");
}

#[tokio::test]
async fn metadata_and_header_values_the_service_would_mangle_are_refused() {
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let blob = blob_at(&server.account(), "ctr", "b");
    let big = std::collections::BTreeMap::from([("note".to_string(), "x".repeat(1 << 20))]);
    let e = blob
        .set_metadata(&big, &Conditions::none())
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "1 MiB metadata");
    let accented = std::collections::BTreeMap::from([("name".to_string(), "Zoë".to_string())]);
    let e = blob
        .set_metadata(&accented, &Conditions::none())
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "non-ASCII metadata");
    let e = azstore::http::Pipeline::new(&server.account(), Service::Blob, Default::default())
        .unwrap()
        .send(
            azstore::http::Request::new(azstore::http::Method::Put, "ctr/b").header(
                "x-ms-blob-content-disposition",
                "attachment; filename=\"résumé.pdf\"",
            ),
        )
        .await
        .unwrap_err();
    assert_refused_before_sending(&e, "non-ASCII header");
    assert_eq!(server.count(), 0);
}

#[test]
fn secrets_never_appear_in_debug_or_display() {
    let key = "c2VjcmV0LWtleS1tYXRlcmlhbA==";
    let account = StorageAccount::from_connection_string(&format!(
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey={key}"
    ))
    .unwrap();
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let blob = blobs.container("c1c").unwrap().blob("b").unwrap();
    let sas = SasBuilder::new(
        "r",
        time::OffsetDateTime::now_utc() + time::Duration::hours(1),
    )
    .blob(&SharedKeyCredential::new("acct", key).unwrap(), "c1c", "b")
    .unwrap();
    let sig = sas
        .expose_secret()
        .split("sig=")
        .nth(1)
        .unwrap()
        .to_string();
    let sas_account = account
        .clone()
        .with_credential(Credential::Sas(sas.clone()));
    let texts = [
        format!("{account:?}"),
        format!("{:?}", account.credential()),
        format!("{blobs:?}"),
        format!("{blob:?}"),
        format!("{sas:?} {sas}"),
        format!("{sas_account:?}"),
        format!(
            "{:?}",
            azstore::blob::BlobServiceClient::new(&sas_account).unwrap()
        ),
    ];
    for t in texts {
        assert!(!t.contains(key), "key leaked: {t}");
        assert!(!t.contains(&sig), "sig leaked: {t}");
    }
}
