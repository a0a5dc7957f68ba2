//! What the pipeline makes of failures, against a scripted server: retries with fresh
//! signatures, giving up with the last error, answers (412, 409, 304, a lease refusal) never
//! retried, a refused connection and a dropped one by idempotency, malformed bodies as errors,
//! never panics.

use azstore::http::{Method, Pipeline, Request};
use azstore::{ErrorCode, ErrorKind, RequestSent, Service, StorageAccount};
use testkit::scripted::{Reply, Scripted};

#[tokio::test]
async fn scripted_503_503_200_is_retried_with_fresh_signatures() {
    let server = Scripted::start(vec![
        Reply::with(503, &[("x-ms-error-code", "ServerBusy")], b""),
        Reply::status(503),
        Reply::with(200, &[("x-ms-request-id", "r3")], b"ok"),
    ])
    .await;
    let p = Pipeline::new(&server.account(), Service::Blob, testkit::fast_retry(3)).unwrap();
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
            .all(|r| r.header("x-ms-version") == Some(azstore::storage::API_VERSION))
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
    let p = Pipeline::new(&server.account(), Service::Blob, testkit::fast_retry(3)).unwrap();
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
        let p = Pipeline::new(&server.account(), Service::Blob, testkit::fast_retry(3)).unwrap();
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
        let p = Pipeline::new(&server.account(), Service::Table, testkit::fast_retry(3)).unwrap();
        let err = p
            .send(Request::new(Method::Get, "Tables"))
            .await
            .unwrap_err();
        assert_eq!(err.status(), Some(400));
        assert_eq!(err.kind(), ErrorKind::Service);
    }
    // a success without the ETag the client needs is a decode error
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let b =
        azstore::blob::BlobServiceClient::with_options(&server.account(), testkit::fast_retry(3))
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
    let p = Pipeline::new(&account, Service::Blob, testkit::fast_retry(3)).unwrap();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport);
    assert_eq!(err.request_sent(), RequestSent::No);

    // a server that reads the request and hangs up: idempotent GET retried, POST not
    let server = Scripted::start(vec![Reply::Drop]).await;
    let p = Pipeline::new(&server.account(), Service::Queue, testkit::fast_retry(3)).unwrap();
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
