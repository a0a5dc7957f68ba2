//! The fault-injection suite: every fault class of `testkit::fault` against the contract that
//! matters to a caller — how long until the error (within the budget), how many attempts, was
//! a write applied exactly once (checked in the stored value), the error kind and
//! `RequestSent`.
//!
//! Schedules (budgets, Retry-After, lock deadlines) run in paused tokio time against a
//! standalone proxy, so minutes of virtual time take milliseconds; wire faults (resets, lost
//! responses, cut bodies) run in real time through a proxy in front of Azurite.

use testkit as support;

use std::collections::BTreeMap;
use std::time::Duration;

use azstore::blob::BlobJson;
use azstore::blob::BlobLock;
use azstore::http::{ClientOptions, Method, Pipeline, Request};
use azstore::lease::{LeaseDuration, LeaseGuard};
use azstore::update::{Change, UpdatePolicy, update};
use azstore::{
    Conditions, ETag, ErrorCode, ErrorKind, RequestSent, Service, StorageAccount, blob::BlobClient,
    blob::BlobServiceClient, blob::ContainerClient, http::Jitter, http::RetryPolicy,
    queue::QueueServiceClient, table::TableServiceClient,
};
use support::blob::blob_with;
use support::fault::{Fault, FaultProxy, Rule};
use support::update::{increment, read_u64};
use tokio::time::Instant;

/// Short timeouts and quick, deterministic retries for real-time wire tests.
fn quick(per_attempt: Duration, total: Duration) -> ClientOptions {
    ClientOptions::default()
        .retry(
            RetryPolicy::default()
                .max_retries(3)
                .initial_delay(Duration::from_millis(5))
                .jitter(Jitter::None),
        )
        .timeout(per_attempt)
        .total_timeout(total)
}

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// A fresh container on Azurite (direct, no proxy).
async fn container(account: &StorageAccount) -> ContainerClient {
    support::blob::container_at(account, "fault").await
}

/// A counter blob holding 5 (`direct`, on Azurite), a fresh fault proxy in front of Azurite,
/// and the counter as `BlobJson` through the proxy with `options`.
async fn counter_at_five(options: ClientOptions) -> (BlobClient, FaultProxy, BlobJson<u64>) {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("n").unwrap();
    direct.upload("5", &Conditions::none()).await.unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let counter = BlobJson::new(blob_with(&proxy.account(&account), options, c.name(), "n"));
    (direct, proxy, counter)
}

// ---------------------------------------------------------------------------------------------
// Connection resets before and after the request reached the service

#[tokio::test]
async fn reset_before_the_request_arrives_is_retried_for_reads_and_never_for_a_put_message() {
    let account = support::account();
    let c = container(&account).await;
    c.blob("b")
        .unwrap()
        .upload("data", &Conditions::none())
        .await
        .unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let via = proxy.account(&account);

    proxy.inject(Rule::new(Fault::ResetBeforeForward).method("GET"));
    let blob = blob_with(&via, quick(ms(2000), ms(5000)), c.name(), "b");
    let got = blob.download().await.unwrap();
    assert_eq!(&got.body[..], b"data");
    assert_eq!(proxy.count("GET"), 2, "a read is retried after a reset");
    assert_eq!(proxy.forwarded("GET"), 1);

    // Put Message is not idempotent: after a reset nothing says whether it arrived, so it is
    // not repeated, and the error says so.
    let qproxy = FaultProxy::start(&account, Service::Queue).await;
    let queues =
        QueueServiceClient::with_options(&qproxy.account(&account), quick(ms(2000), ms(5000)))
            .unwrap();
    let q = queues.queue(&support::unique("fq")).unwrap();
    q.create(&BTreeMap::new()).await.unwrap();
    qproxy.inject(Rule::new(Fault::ResetBeforeForward).method("POST"));
    let err = q.put_message("once").await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    assert_eq!(err.request_sent(), RequestSent::Maybe);
    assert_eq!(qproxy.count("POST"), 1, "never repeated");
    assert!(q.peek_messages(32).await.unwrap().is_empty(), "not applied");
}

#[tokio::test]
async fn reset_after_the_write_applied_is_never_applied_twice() {
    let account = support::account();
    let c = container(&account).await;
    let direct = c.blob("w").unwrap();
    direct.upload("old", &Conditions::none()).await.unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let blob = blob_with(
        &proxy.account(&account),
        quick(ms(2000), ms(5000)),
        c.name(),
        "w",
    );

    // An unconditional PUT is idempotent: repeated, same result.
    proxy.inject(Rule::new(Fault::ResetAfterForward).method("PUT"));
    blob.upload("v1", &Conditions::none()).await.unwrap();
    assert_eq!(proxy.count("PUT"), 2);
    let d = direct.download().await.unwrap();
    assert_eq!(&d.body[..], b"v1");

    // A conditional PUT is not repeated: a repeat would meet our own write as a 412.
    proxy.inject(Rule::new(Fault::ResetAfterForward).method("PUT"));
    let err = blob
        .upload("v2", &Conditions::if_match(&d.properties.etag))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    assert_eq!(err.request_sent(), RequestSent::Maybe);
    assert_eq!(proxy.count("PUT"), 3, "one attempt");
    let now = direct.download().await.unwrap();
    assert_eq!(&now.body[..], b"v2", "applied exactly once");

    // Put Message: applied once, not repeated.
    let qproxy = FaultProxy::start(&account, Service::Queue).await;
    let q = QueueServiceClient::with_options(&qproxy.account(&account), quick(ms(2000), ms(5000)))
        .unwrap()
        .queue(&support::unique("fq"))
        .unwrap();
    q.create(&BTreeMap::new()).await.unwrap();
    for (i, fault) in [Fault::ResetAfterForward, Fault::LoseResponse]
        .into_iter()
        .enumerate()
    {
        qproxy.inject(Rule::new(fault.clone()).method("POST"));
        let err = q.put_message("once").await.unwrap_err();
        assert_eq!(err.request_sent(), RequestSent::Maybe, "{fault:?}");
        assert_eq!(qproxy.count("POST"), i + 1, "{fault:?}: not repeated");
        assert_eq!(
            qproxy.forwarded("POST"),
            i + 1,
            "{fault:?}: it reached the queue"
        );
        let stored = q.peek_messages(32).await.unwrap().len();
        assert_eq!(stored, i + 1, "{fault:?}: applied exactly once");
    }
}

// ---------------------------------------------------------------------------------------------
// update(): an ambiguous last write is settled before answering

#[tokio::test]
async fn update_with_one_attempt_and_a_lost_response_reports_the_applied_write() {
    let (direct, proxy, counter) = counter_at_five(quick(ms(2000), ms(5000))).await;
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let out = update(
        &counter,
        &UpdatePolicy::default().max_attempts(1),
        increment,
    )
    .await
    .expect("the write applied: success, not RetriesExhausted");
    assert_eq!(out.value, Some(6));
    assert_eq!(out.change, Change::Replaced);
    assert_eq!(out.recovered_ambiguous, 1);
    assert_eq!(proxy.count("PUT"), 1);
    assert_eq!(read_u64(&direct).await, 6, "5 -> 6 exactly once");
}

#[tokio::test]
async fn update_whose_write_answers_too_late_reports_the_applied_write() {
    let (direct, proxy, counter) = counter_at_five(quick(ms(500), ms(3000))).await;
    // The write applies, its answer never comes; by the time the attempt gives up, the
    // update's own time is over too.
    proxy.inject(Rule::new(Fault::StallHeaders).method("PUT"));
    let policy = UpdatePolicy::default().max_elapsed(ms(100));
    let out = update(&counter, &policy, increment).await.unwrap();
    assert_eq!((out.value, out.recovered_ambiguous), (Some(6), 1));
    assert_eq!(proxy.count("PUT"), 1);
    assert_eq!(read_u64(&direct).await, 6);
}

#[tokio::test]
async fn update_that_gives_up_says_whether_its_last_write_may_have_applied() {
    let (direct, proxy, counter) = counter_at_five(quick(ms(5000), ms(10000))).await;
    let once = UpdatePolicy::default().max_attempts(1);

    // Reset before the write arrived: the settling read shows the blob unchanged.
    proxy.inject(Rule::new(Fault::ResetBeforeForward).method("PUT"));
    let err = update(&counter, &once, increment).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetriesExhausted);
    assert_eq!(err.request_sent(), RequestSent::Yes, "{err}");
    assert!(err.message().contains("was not applied"), "{err}");
    assert_eq!(read_u64(&direct).await, 5, "not applied");

    // The write applies, its answer is lost, and the read that would settle it fails too
    // (every later read is reset): the error must say the write may have happened.
    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    proxy.inject(
        Rule::new(Fault::ResetBeforeForward)
            .method("GET")
            .after(1)
            .always(),
    );
    let err = update(&counter, &once, increment).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::RetriesExhausted);
    assert_eq!(err.request_sent(), RequestSent::Maybe, "{err}");
    assert!(err.message().contains("may have been applied"), "{err}");
    assert_eq!(
        read_u64(&direct).await,
        6,
        "it did apply: a blind retry would make 7"
    );
    proxy.clear();

    // A 500 on every try of the write: settled by a read, reported as not applied.
    proxy.inject(
        Rule::new(Fault::status(500, "OperationTimedOut"))
            .method("PUT")
            .always(),
    );
    let err = update(&counter, &UpdatePolicy::default(), increment)
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(500));
    assert_eq!(err.error_code(), Some(&ErrorCode::OperationTimedOut));
    assert_eq!(err.request_sent(), RequestSent::Yes, "{err}");
    assert_eq!(
        proxy.count_matching("PUT", direct.container_name()),
        2 + 4,
        "1 try + 3 retries"
    );
    assert_eq!(read_u64(&direct).await, 6);
}

// ---------------------------------------------------------------------------------------------
// Bounded time: stalled servers, Retry-After, the total budget (paused time)

#[tokio::test(start_paused = true)]
async fn a_server_that_never_answers_fails_a_read_within_the_default_budget() {
    let proxy = FaultProxy::standalone().await;
    proxy.inject(Rule::new(Fault::NeverAnswer).always());
    let p = Pipeline::new(
        &proxy.dev_account(),
        Service::Blob,
        ClientOptions::default(),
    )
    .unwrap();
    let started = Instant::now();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert_eq!(err.request_sent(), RequestSent::Maybe);
    assert!(err.message().contains("total time budget"), "{err}");
    assert!(took <= Duration::from_secs(60), "{took:?}");
    assert!(took >= Duration::from_secs(59), "{took:?}");
    assert_eq!(proxy.count("GET"), 2, "30 s per attempt, 60 s in all");

    // Not idempotent: one attempt, not repeated.
    let started = Instant::now();
    let err = p
        .send(Request::new(Method::Post, "q/messages"))
        .await
        .unwrap_err();
    assert_eq!(err.request_sent(), RequestSent::Maybe);
    assert_eq!(proxy.count("POST"), 1);
    assert!(started.elapsed() <= Duration::from_secs(30));
}

#[tokio::test(start_paused = true)]
async fn an_endless_503_with_retry_after_3600_is_capped_by_the_policy_and_the_budget() {
    let proxy = FaultProxy::standalone().await;
    proxy.inject(Rule::new(Fault::busy_retry_after("3600")).always());
    let account = proxy.dev_account();

    // Default policy: 3 retries, each delay raised to Retry-After but capped at 10 s.
    let p = Pipeline::new(&account, Service::Blob, ClientOptions::default()).unwrap();
    let started = Instant::now();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.status(), Some(503));
    assert_eq!(err.error_code(), Some(&ErrorCode::ServerBusy));
    assert_eq!(err.request_sent(), RequestSent::Yes);
    assert_eq!(proxy.count("GET"), 4);
    assert!(
        (Duration::from_secs(30)..Duration::from_secs(31)).contains(&took),
        "{took:?}"
    );

    // Many retries: the total budget (60 s) ends it, not Retry-After.
    let p = Pipeline::new(
        &account,
        Service::Blob,
        ClientOptions::default().retry(RetryPolicy::default().max_retries(1000)),
    )
    .unwrap();
    let before = proxy.count("GET");
    let started = Instant::now();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.status(), Some(503));
    assert!(err.message().contains("total time budget"), "{err}");
    assert!(took <= Duration::from_secs(60), "{took:?}");
    assert_eq!(
        proxy.count("GET") - before,
        6,
        "at 0, 10, 20, 30, 40 and 50 s"
    );
}

#[tokio::test(start_paused = true)]
async fn server_errors_with_and_without_retry_after_are_retried_then_answered() {
    let proxy = FaultProxy::standalone().await;
    let account = proxy.dev_account();
    let p = Pipeline::new(&account, Service::Blob, ClientOptions::default()).unwrap();

    // 500 twice without Retry-After, then an answer (a synthetic 200 page for a blob read).
    proxy.inject(Rule::new(Fault::status(500, "InternalError")).times(2));
    proxy.inject(Rule::new(Fault::Body {
        status: 200,
        content_type: "application/octet-stream".into(),
        body: b"blob".to_vec(),
    }));
    let started = Instant::now();
    let resp = p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    assert_eq!(&resp.body[..], b"blob");
    assert_eq!(proxy.count("GET"), 3);
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "backoff 0.2 s, 0.4 s at most"
    );

    // A 503 asking for 7 s is waited out (7 s is below the 10 s max delay).
    proxy.inject(Rule::new(Fault::busy_retry_after("7")));
    proxy.inject(Rule::new(Fault::Body {
        status: 200,
        content_type: "application/octet-stream".into(),
        body: b"later".to_vec(),
    }));
    let started = Instant::now();
    let resp = p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    assert_eq!(&resp.body[..], b"later");
    let took = started.elapsed();
    assert!(
        (Duration::from_secs(7)..Duration::from_secs(8)).contains(&took),
        "{took:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Stalled, truncated and mis-framed bodies (real time, Azurite)

#[tokio::test]
async fn stalled_truncated_and_misframed_bodies_of_a_read_are_retried() {
    let account = support::account();
    let c = container(&account).await;
    let content = vec![b'z'; 100_000];
    c.blob("big")
        .unwrap()
        .upload(content.clone(), &Conditions::none())
        .await
        .unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let blob = blob_with(
        &proxy.account(&account),
        quick(ms(600), ms(5000)),
        c.name(),
        "big",
    );
    for fault in [
        Fault::StallBody { after: 1000 },
        Fault::TruncateBody { after: 1000 },
        Fault::WrongContentLength { delta: 10 },
    ] {
        let before = proxy.count("GET");
        proxy.inject(Rule::new(fault.clone()).method("GET"));
        let got = blob.download().await.unwrap();
        assert_eq!(got.body.len(), content.len(), "{fault:?}");
        assert_eq!(proxy.count("GET") - before, 2, "{fault:?}: retried once");
    }

    // A stalled body of a streamed read ends with a Timeout after the idle limit.
    let p = Pipeline::new(
        &proxy.account(&account),
        Service::Blob,
        quick(ms(600), ms(5000)),
    )
    .unwrap();
    proxy.inject(Rule::new(Fault::StallBody { after: 1000 }).method("GET"));
    let resp = p
        .send_streaming(Request::new(Method::Get, &format!("{}/big", c.name())))
        .await
        .unwrap();
    let err = resp.bytes().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.message().contains("stalled"), "{err}");
}

#[tokio::test]
async fn a_listing_cut_short_inside_its_content_length_is_a_decode_error() {
    let account = support::account();
    let c = container(&account).await;
    for i in 0..5 {
        c.blob(&format!("item-{i}"))
            .unwrap()
            .upload("x", &Conditions::none())
            .await
            .unwrap();
    }
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let listing =
        BlobServiceClient::with_options(&proxy.account(&account), quick(ms(2000), ms(5000)))
            .unwrap()
            .container(c.name())
            .unwrap();
    proxy.inject(Rule::new(Fault::WrongContentLength { delta: -40 }).target_contains("comp=list"));
    let err = listing
        .list_blobs_page(&Default::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service, "{err}");
    assert!(err.message().starts_with("List Blobs"), "{err}");
    let page = listing
        .list_blobs_page(&Default::default(), None)
        .await
        .unwrap();
    assert_eq!(
        page.items.len(),
        5,
        "the next, intact answer is read normally"
    );
}

// ---------------------------------------------------------------------------------------------
// HTML or garbage instead of XML/JSON

#[tokio::test]
async fn an_html_page_instead_of_xml_or_json_is_an_error_naming_the_operation() {
    let proxy = FaultProxy::standalone().await;
    proxy.inject(Rule::new(Fault::html_page()).always());
    let account = proxy.dev_account();
    let opts = || quick(ms(2000), ms(5000));
    let blobs = BlobServiceClient::with_options(&account, opts()).unwrap();
    let err = blobs
        .container("cont")
        .unwrap()
        .list_blobs_page(&Default::default(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    assert!(err.message().starts_with("List Blobs"), "{err}");
    assert!(err.message().contains("<html>"), "{err}");
    let err = blobs
        .list_containers_page(&Default::default(), None)
        .await
        .unwrap_err();
    assert!(err.message().starts_with("List Containers"), "{err}");

    let queues = QueueServiceClient::with_options(&account, opts()).unwrap();
    let q = queues.queue("que").unwrap();
    let err = q
        .receive_messages(5, Duration::from_secs(30))
        .await
        .unwrap_err();
    assert!(err.message().starts_with("Get Messages"), "{err}");
    let err = q.peek_messages(5).await.unwrap_err();
    assert!(err.message().starts_with("Peek Messages"), "{err}");
    let err = queues.list_queues_page(None, None, None).await.unwrap_err();
    assert!(err.message().starts_with("List Queues"), "{err}");

    let tables = TableServiceClient::with_options(&account, opts()).unwrap();
    let err = tables
        .table("tab")
        .unwrap()
        .query_page::<serde_json::Value>(&azstore::table::Query::all(), None)
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    assert!(err.message().starts_with("Query"), "{err}");

    // Garbage that is not even markup.
    proxy.clear();
    proxy.inject(
        Rule::new(Fault::Body {
            status: 200,
            content_type: "application/xml".into(),
            body: b"\x00\x01garbage".to_vec(),
        })
        .always(),
    );
    let err = q.peek_messages(5).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Service);
    assert!(err.message().starts_with("Peek Messages"), "{err}");
}

// ---------------------------------------------------------------------------------------------
// Huge error bodies

#[tokio::test]
async fn a_huge_error_body_is_read_only_up_to_a_small_bound() {
    let proxy = FaultProxy::standalone().await;
    const OFFERED: u64 = 256 * 1024 * 1024;
    proxy.inject(
        Rule::new(Fault::HugeBody {
            status: 400,
            len: OFFERED,
        })
        .always(),
    );
    let p = Pipeline::new(
        &proxy.dev_account(),
        Service::Blob,
        quick(ms(2000), ms(5000)),
    )
    .unwrap();
    let err = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(err.status(), Some(400));
    assert_eq!(proxy.count("GET"), 1, "a 400 is an answer");
    assert!(err.message().len() < 1024, "{}", err.message().len());
    // What left the proxy: the bounded read plus what the sockets buffered, not 256 MiB.
    tokio::time::sleep(ms(50)).await;
    let streamed = proxy.streamed_bytes();
    assert!(streamed < 16 * 1024 * 1024, "{streamed} bytes streamed");
}

// ---------------------------------------------------------------------------------------------
// Input that cannot be sent is refused before anything goes out

#[tokio::test]
async fn header_values_that_cannot_be_sent_are_refused_before_sending() {
    let proxy = FaultProxy::standalone().await;
    let blob = blob_with(&proxy.dev_account(), quick(ms(500), ms(1000)), "cont", "b");
    let attempts: Vec<(&str, azstore::Result<azstore::blob::WriteResult>)> = vec![
        (
            "empty ETag",
            blob.upload("x", &Conditions::if_match(&ETag::new("")))
                .await,
        ),
        (
            "blank ETag",
            blob.upload("x", &Conditions::if_match(&ETag::new("  ")))
                .await,
        ),
        (
            "ETag with CRLF",
            blob.upload(
                "x",
                &Conditions::if_match(&ETag::new("\"0x1\"\r\nx-ms-meta-evil: 1")),
            )
            .await,
        ),
        (
            "If-None-Match with NUL",
            blob.upload("x", &Conditions::if_none_match(&ETag::new("\"a\0\"")))
                .await,
        ),
        (
            "metadata value with LF",
            blob.put(
                "x",
                &azstore::blob::PutOptions::new(Conditions::none()).meta("note", "two\nlines"),
            )
            .await,
        ),
        (
            "content type with CR",
            blob.put(
                "x",
                &azstore::blob::PutOptions::new(Conditions::none()).content_type("text/plain\r"),
            )
            .await,
        ),
    ];
    for (what, result) in attempts {
        let err = result.expect_err(what);
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{what}: {err}");
        assert_eq!(err.request_sent(), RequestSent::No, "{what}");
        assert!(!err.is_retryable(), "{what}");
    }
    assert!(proxy.requests().is_empty(), "nothing was sent");
    assert!(ETag::parse("").is_err() && ETag::parse("\"ok\"").is_ok());
}

#[tokio::test]
async fn an_empty_etag_never_turns_a_conditional_write_into_last_writer_wins() {
    let account = support::account();
    let c = container(&account).await;
    let b = c.blob("keep").unwrap();
    b.upload("original", &Conditions::none()).await.unwrap();
    let err = b
        .upload("overwritten", &Conditions::if_match(&ETag::new("")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let d = b.download().await.unwrap();
    assert_eq!(&d.body[..], b"original");
}

// ---------------------------------------------------------------------------------------------
// BlobLock::acquire(timeout) and LeaseGuard::release()

#[tokio::test]
async fn lock_acquire_rides_out_a_reset_on_its_first_attempt() {
    let account = support::account();
    let c = container(&account).await;
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let via = BlobServiceClient::with_options(&proxy.account(&account), quick(ms(1000), ms(3000)))
        .unwrap()
        .container(c.name())
        .unwrap();
    let lock = BlobLock::new(via, "locks/reset").unwrap();
    // The lock blob exists; the first lease request is reset before it arrives.
    c.blob("locks/reset")
        .unwrap()
        .upload("", &Conditions::none())
        .await
        .unwrap();
    proxy.inject(
        Rule::new(Fault::ResetBeforeForward)
            .method("PUT")
            .target_contains("comp=lease")
            .times(4),
    );
    let started = Instant::now();
    let held = lock
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap()
        .expect("acquired after the resets");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert!(proxy.count_matching("PUT", "comp=lease") >= 5);
    held.release().await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn lock_acquire_returns_by_its_timeout_against_a_stalled_service() {
    let proxy = FaultProxy::standalone().await;
    proxy.inject(Rule::new(Fault::NeverAnswer).always());
    let container = BlobServiceClient::new(&proxy.dev_account())
        .unwrap()
        .container("locks")
        .unwrap();
    let lock = BlobLock::new(container, "stalled").unwrap();
    let started = Instant::now();
    let err = lock
        .acquire_within(Duration::from_secs(5))
        .await
        .unwrap_err();
    let took = started.elapsed();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(
        (Duration::from_secs(5)..Duration::from_millis(5100)).contains(&took),
        "{took:?}, not 60 s per request"
    );
}

#[tokio::test]
async fn a_lease_taken_by_an_acquire_cut_off_at_its_deadline_is_released() {
    let account = support::account();
    let c = container(&account).await;
    c.blob("locks/cut")
        .unwrap()
        .upload("", &Conditions::none())
        .await
        .unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let via = BlobServiceClient::with_options(&proxy.account(&account), quick(ms(2000), ms(5000)))
        .unwrap()
        .container(c.name())
        .unwrap();
    let lock = BlobLock::new(via, "locks/cut").unwrap();
    // The acquire reaches Azurite (the lease is taken), its answer never comes back.
    proxy.inject(
        Rule::new(Fault::StallHeaders)
            .method("PUT")
            .target_contains("comp=lease"),
    );
    let err = lock.acquire_within(ms(500)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    // The orphaned lease is released in the background: another client gets the lock at once.
    let direct = BlobLock::new(c.clone(), "locks/cut").unwrap();
    let held = direct
        .acquire_within(Duration::from_secs(3))
        .await
        .unwrap()
        .expect("no lease left behind");
    held.release().await.unwrap();
}

#[tokio::test]
async fn lease_guard_release_is_bounded_by_the_budget() {
    let account = support::account();
    let c = container(&account).await;
    c.blob("leased")
        .unwrap()
        .upload("", &Conditions::none())
        .await
        .unwrap();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let blob = blob_with(
        &proxy.account(&account),
        quick(ms(500), ms(1200)),
        c.name(),
        "leased",
    );
    let guard = LeaseGuard::acquire(blob, LeaseDuration::seconds(15).unwrap())
        .await
        .unwrap();
    proxy.inject(
        Rule::new(Fault::NeverAnswer)
            .target_contains("comp=lease")
            .always(),
    );
    let started = Instant::now();
    let err = guard.release().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
    assert!(err.message().contains("total time budget"), "{err}");
    // Within the 1.2 s budget (plus scheduling slack), not 4 attempts x 60 s.
    assert!(started.elapsed() < ms(2200), "{:?}", started.elapsed());
}
