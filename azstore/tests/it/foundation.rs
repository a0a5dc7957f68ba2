//! Foundation: signing against Azurite on all three emulated services, typed auth errors,
//! connection strings, retries against a scripted server, and secrets never printed.

use testkit as support;

use std::time::Duration;

use azstore::http::{ClientOptions, Method, Pipeline, Request};
use azstore::{
    ErrorCode, ErrorKind, RequestSent, Service, StorageAccount, credential::Credential,
    credential::SharedKeyCredential, http::Jitter, http::RetryPolicy, sas::SasBuilder,
};
use support::scripted::{Reply, Scripted};

fn fast_retry() -> ClientOptions {
    ClientOptions::default().retry(
        RetryPolicy::default()
            .max_retries(3)
            .initial_delay(Duration::from_millis(5))
            .jitter(Jitter::None),
    )
}

fn list_request(service: Service) -> Request {
    match service {
        Service::Table => Request::new(Method::Get, "Tables")
            .header("accept", "application/json;odata=nometadata"),
        _ => Request::new(Method::Get, "").query("comp", "list"),
    }
}

#[tokio::test]
async fn shared_key_signing_works_on_blob_queue_and_table() {
    let account = support::account();
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&account, svc, ClientOptions::default()).unwrap();
        let resp = p
            .send(list_request(svc))
            .await
            .unwrap_or_else(|e| panic!("{svc:?}: {e}"));
        assert_eq!(resp.status, 200, "{svc:?}");
    }
}

#[tokio::test]
async fn signing_covers_paths_queries_and_headers_that_need_encoding() {
    let account = support::account();
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let c = blobs.container(&support::unique("sign")).unwrap();
    c.create().await.unwrap();
    for name in ["plain", "with space", "uni/ü€/漢字", "hash#q?p%25&amp=x+y"] {
        let b = c.blob(name).unwrap();
        b.put(
            "x",
            &azstore::blob::PutOptions::new(azstore::Conditions::none())
                .meta("note", "  two   spaces  "),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = b.download().await.unwrap();
        assert_eq!(&got.body[..], b"x", "{name}");
        assert_eq!(
            got.properties.metadata.get("note").map(String::as_str),
            Some("two   spaces"),
            "{name}: {:?}",
            got.properties
        );
    }
}

#[tokio::test]
async fn wrong_key_is_a_typed_403_on_every_service() {
    let good = support::account();
    let bad = good.clone().with_credential(Credential::SharedKey(
        SharedKeyCredential::new(good.name(), "d3Jvbmcga2V5IHdyb25nIGtleQ==").unwrap(),
    ));
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&bad, svc, fast_retry()).unwrap();
        let err = p.send(list_request(svc)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth, "{svc:?}: {err}");
        assert_eq!(err.status(), Some(403), "{svc:?}");
        assert!(!err.is_retryable());
        assert!(err.error_code().is_some(), "{svc:?} error code: {err:?}");
    }
}

#[tokio::test]
async fn sas_tokens_authorize_and_a_tampered_one_is_refused() {
    let account = support::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("shared key")
    };
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let name = support::unique("sas");
    blobs.container(&name).unwrap().create().await.unwrap();

    // container SAS: write and read a blob
    let sas = SasBuilder::new("rcw", expiry)
        .container(&key, &name)
        .unwrap();
    let sas_account = account.clone().with_credential(Credential::Sas(sas));
    let b = azstore::blob::BlobServiceClient::new(&sas_account)
        .unwrap()
        .container(&name)
        .unwrap()
        .blob("f")
        .unwrap();
    b.upload("via sas", &azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(&b.download().await.unwrap().body[..], b"via sas");

    // read-only blob SAS cannot write
    let ro = SasBuilder::new("r", expiry).blob(&key, &name, "f").unwrap();
    let ro_blob = azstore::blob::BlobServiceClient::new(
        &account.clone().with_credential(Credential::Sas(ro)),
    )
    .unwrap()
    .container(&name)
    .unwrap()
    .blob("f")
    .unwrap();
    assert_eq!(&ro_blob.download().await.unwrap().body[..], b"via sas");
    let err = ro_blob
        .upload("no", &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");

    // account SAS on queue and table
    let acct_sas = SasBuilder::new("rl", expiry)
        .account(&key, "bqt", "sco")
        .unwrap();
    let sas_acct = account
        .clone()
        .with_credential(Credential::Sas(acct_sas.clone()));
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&sas_acct, svc, ClientOptions::default()).unwrap();
        p.send(list_request(svc))
            .await
            .unwrap_or_else(|e| panic!("{svc:?}: {e}"));
    }

    // tampered signature
    let raw = acct_sas.expose_secret().replace("sig=", "sig=AAAA");
    let tampered = account.with_credential(Credential::Sas(
        azstore::credential::SasToken::new(raw).unwrap(),
    ));
    let p = Pipeline::new(&tampered, Service::Blob, fast_retry()).unwrap();
    let err = p.send(list_request(Service::Blob)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert!(!format!("{err} {err:?}").contains("AAAA"));
}

#[tokio::test]
async fn scripted_503_503_200_is_retried_with_fresh_signatures() {
    let server = Scripted::start(vec![
        Reply::with(503, &[("x-ms-error-code", "ServerBusy")], b""),
        Reply::status(503),
        Reply::with(200, &[("x-ms-request-id", "r3")], b"ok"),
    ])
    .await;
    let p = Pipeline::new(&server.account(), Service::Blob, fast_retry()).unwrap();
    let resp = p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    assert_eq!(resp.status, 200);
    assert_eq!(&resp.body[..], b"ok");
    let reqs = server.requests();
    assert_eq!(reqs.len(), 3);
    // same client request id across attempts, each attempt signed
    let ids: Vec<_> = reqs
        .iter()
        .map(|r| r.header("x-ms-client-request-id").unwrap().to_string())
        .collect();
    assert!(ids.iter().all(|i| *i == ids[0]));
    assert!(reqs.iter().all(|r| {
        r.header("authorization")
            .unwrap()
            .starts_with("SharedKey devstoreaccount1:")
    }));
    assert!(
        reqs.iter()
            .all(|r| r.header("x-ms-version") == Some(azstore::http::API_VERSION))
    );
}

#[tokio::test]
async fn retries_give_up_with_the_last_error() {
    let server = Scripted::start(vec![Reply::with(
        500,
        &[("x-ms-request-id", "rid-9")],
        b"<?xml version=\"1.0\"?><Error><Code>InternalError</Code><Message>boom</Message></Error>",
    )])
    .await;
    let p = Pipeline::new(&server.account(), Service::Blob, fast_retry()).unwrap();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(server.count(), 4, "1 try + 3 retries");
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.error_code(), Some(&ErrorCode::InternalError));
    assert_eq!(err.message(), "boom");
    assert_eq!(err.request_id(), Some("rid-9"));
    assert!(err.is_retryable());
}

#[tokio::test]
async fn conditions_are_answers_not_retried() {
    for (status, code, kind) in [
        (412, "ConditionNotMet", ErrorKind::PreconditionFailed),
        (409, "BlobAlreadyExists", ErrorKind::AlreadyExists),
        (304, "", ErrorKind::NotModified),
        (412, "LeaseIdMissing", ErrorKind::LeaseHeld),
    ] {
        let headers: Vec<(&str, &str)> = if code.is_empty() {
            vec![]
        } else {
            vec![("x-ms-error-code", code)]
        };
        let server =
            Scripted::start(vec![Reply::with(status, &headers, b""), Reply::status(200)]).await;
        let p = Pipeline::new(&server.account(), Service::Blob, fast_retry()).unwrap();
        let err = p.send(Request::new(Method::Put, "c/b")).await.unwrap_err();
        assert_eq!(err.kind(), kind, "{status} {code}");
        assert_eq!(server.count(), 1, "{status} must not be retried");
    }
}

#[tokio::test]
async fn malformed_bodies_become_errors_not_panics() {
    for body in [
        &b"<Error><Code>"[..],
        b"{not json",
        b"\xff\xfe\x00garbage",
        b"{\"odata.error\":5}",
    ] {
        let server = Scripted::start(vec![Reply::with(400, &[], body)]).await;
        let p = Pipeline::new(&server.account(), Service::Table, fast_retry()).unwrap();
        let err = p
            .send(Request::new(Method::Get, "Tables"))
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(400));
        assert_eq!(err.kind(), ErrorKind::Service);
    }
    // a success without the ETag the client needs is a decode error
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let b = azstore::blob::BlobServiceClient::with_options(&server.account(), fast_retry())
        .unwrap()
        .container("cont")
        .unwrap()
        .blob("b")
        .unwrap();
    let err = b
        .upload("x", &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    assert!(err.message().contains("etag"), "{err}");
}

#[tokio::test]
async fn connection_refused_is_not_sent_and_timeouts_respect_idempotency() {
    // nothing listens on this port
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let account = StorageAccount::development()
        .with_endpoint(
            Service::Blob,
            &format!("http://127.0.0.1:{port}/devstoreaccount1"),
        )
        .unwrap();
    let p = Pipeline::new(&account, Service::Blob, fast_retry()).unwrap();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert_eq!(err.request_sent(), RequestSent::No);

    // a server that reads the request and hangs up: idempotent GET retried, POST not
    let server = Scripted::start(vec![Reply::Drop]).await;
    let p = Pipeline::new(&server.account(), Service::Queue, fast_retry()).unwrap();
    let err = p
        .send(Request::new(Method::Post, "q/messages"))
        .await
        .unwrap_err();
    assert_eq!(err.request_sent(), RequestSent::Maybe);
    assert_eq!(
        server.count(),
        1,
        "non-idempotent request must not be repeated"
    );
    let err = p
        .send(Request::new(Method::Get, "q/messages"))
        .await
        .unwrap_err();
    assert!(err.is_retryable());
    assert_eq!(server.count(), 5, "idempotent GET: 1 try + 3 retries");
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

struct FixedToken(&'static str);

impl azstore::credential::TokenProvider for FixedToken {
    fn token(
        &self,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = azstore::Result<azstore::credential::AccessToken>>
                + Send
                + '_,
        >,
    > {
        let expires = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600);
        Box::pin(async move { Ok(azstore::credential::AccessToken::new(self.0, expires)) })
    }
}

#[tokio::test]
async fn bearer_token_hook_is_asked_on_every_attempt() {
    let server = Scripted::start(vec![Reply::status(503), Reply::status(200)]).await;
    let account = server
        .account()
        .with_credential(Credential::Bearer(std::sync::Arc::new(FixedToken(
            "tok-123",
        ))));
    // The scripted server speaks plain HTTP on loopback: tokens go there only on explicit opt-in.
    let options = fast_retry().transport(
        azstore::http::TransportOptions::default().allow_bearer_over_http_to_loopback(true),
    );
    let p = Pipeline::new(&account, Service::Blob, options).unwrap();
    p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for r in reqs {
        assert_eq!(r.header("authorization"), Some("Bearer tok-123"));
    }
    assert!(!format!("{account:?}").contains("tok-123"));
}

#[tokio::test]
async fn invalid_names_are_refused_before_sending() {
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let blobs = azstore::blob::BlobServiceClient::new(&server.account()).unwrap();
    for bad in ["ab", "Upper", "a--b", "-ab", "has space"] {
        let err = blobs.container(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
        assert_eq!(err.request_sent(), RequestSent::No);
    }
    let c = blobs.container("fine").unwrap();
    assert_eq!(c.blob("").unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(
        c.blob(&"x".repeat(1025)).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // a condition Delete Container does not support
    let err = c
        .delete(&azstore::Conditions::if_match(&azstore::ETag::new("\"x\"")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.count(), 0, "nothing may be sent for invalid input");
}
