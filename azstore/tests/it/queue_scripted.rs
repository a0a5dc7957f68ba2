//! MessageGuard and message parsing against a scripted server: the guard tracks the newest
//! pop receipt across a transient failure, signals loss when extensions keep failing or the
//! receipt is rejected, and malformed responses are errors, never panics.

use testkit as support;

use std::time::{Duration, Instant};

use azstore::lease::GuardOptions;
use azstore::queue::{MessageGuard, QueueClient, QueueServiceClient, ReceivedMessage};
use azstore::{ErrorCode, http::ClientOptions, http::RetryPolicy};
use support::scripted::{Reply, Scripted};

const ONE_MESSAGE: &[u8] = br#"<?xml version="1.0" encoding="utf-8"?><QueueMessagesList><QueueMessage><MessageId>m1</MessageId><InsertionTime>Sun, 22 Nov 2026 00:00:00 GMT</InsertionTime><ExpirationTime>Sun, 29 Nov 2026 00:00:00 GMT</ExpirationTime><PopReceipt>r0</PopReceipt><TimeNextVisible>Sun, 22 Nov 2026 00:00:30 GMT</TimeNextVisible><DequeueCount>1</DequeueCount><MessageText>hello</MessageText></QueueMessage></QueueMessagesList>"#;

fn updated(receipt: &str) -> Reply {
    Reply::with(
        204,
        &[
            ("x-ms-popreceipt", receipt),
            ("x-ms-time-next-visible", "Sun, 22 Nov 2026 00:01:00 GMT"),
        ],
        b"",
    )
}

fn queue(server: &Scripted) -> QueueClient {
    // No pipeline retries: the guard itself must cope with failed extensions.
    let opts = ClientOptions::default().retry(RetryPolicy::default().max_retries(0));
    QueueServiceClient::with_options(&server.account(), opts)
        .unwrap()
        .queue("jobs")
        .unwrap()
}

/// The scripted queue and the message it hands out first, visible again after `visibility`.
async fn received(server: &Scripted, visibility: Duration) -> (QueueClient, ReceivedMessage) {
    let q = queue(server);
    let msg = q.receive_message(visibility).await.unwrap().unwrap();
    (q, msg)
}

fn receipt_of(target: &str) -> Option<&str> {
    target
        .split(['?', '&'])
        .find_map(|kv| kv.strip_prefix("popreceipt="))
}

#[tokio::test]
async fn guard_tracks_the_newest_receipt_through_a_transient_failure() {
    let server = Scripted::start(vec![
        Reply::with(200, &[], ONE_MESSAGE),
        updated("r1"),
        Reply::with(503, &[("x-ms-error-code", "ServerBusy")], b""),
        updated("r3"),
    ])
    .await;
    let (q, msg) = received(&server, Duration::from_secs(1)).await;
    assert_eq!(msg.pop_receipt().as_str(), "r0");
    let guard = MessageGuard::start(
        &q,
        msg,
        GuardOptions::default()
            .visibility(Duration::from_secs(1))
            .renew_every(Duration::from_millis(150)),
    )
    .unwrap();
    while server.count() < 5 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(!guard.is_lost(), "one transient failure is not a loss");
    guard.complete().await.unwrap();
    let reqs = server.requests();
    let updates: Vec<_> = reqs.iter().filter(|r| r.method == "PUT").collect();
    // Each extension uses the receipt of the last *successful* one.
    assert_eq!(receipt_of(&updates[0].target), Some("r0"));
    assert_eq!(receipt_of(&updates[1].target), Some("r1"));
    assert_eq!(
        receipt_of(&updates[2].target),
        Some("r1"),
        "503 changed nothing"
    );
    assert!(
        updates[3..]
            .iter()
            .all(|u| receipt_of(&u.target) == Some("r3"))
    );
    let last = reqs.last().unwrap();
    assert_eq!(last.method, "DELETE");
    assert!(
        last.target
            .starts_with("/devstoreaccount1/jobs/messages/m1?")
    );
    assert_eq!(
        receipt_of(&last.target),
        Some("r3"),
        "delete with the newest receipt"
    );
}

#[tokio::test]
async fn guard_signals_loss_when_extensions_keep_failing() {
    let server = Scripted::start(vec![
        Reply::with(200, &[], ONE_MESSAGE),
        Reply::with(503, &[("x-ms-error-code", "ServerBusy")], b""),
    ])
    .await;
    let (q, msg) = received(&server, Duration::from_secs(1)).await;
    let start = Instant::now();
    let guard = MessageGuard::start(
        &q,
        msg,
        GuardOptions::default().visibility(Duration::from_secs(1)),
    )
    .unwrap();
    let mut lost = guard.lost_signal();
    tokio::time::timeout(Duration::from_secs(5), lost.lost())
        .await
        .expect("loss signalled");
    // It kept trying until the message could have reappeared, not just once.
    assert!(start.elapsed() >= Duration::from_millis(300));
    let attempts = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT")
        .count();
    assert!(attempts >= 2, "{attempts} extension attempts");
    assert!(guard.is_lost());
    guard.abandon().await.unwrap();
}

#[tokio::test]
async fn guard_signals_loss_at_once_on_a_rejected_receipt() {
    let server = Scripted::start(vec![
        Reply::with(200, &[], ONE_MESSAGE),
        Reply::with(400, &[("x-ms-error-code", "PopReceiptMismatch")], b""),
    ])
    .await;
    let (q, msg) = received(&server, Duration::from_secs(30)).await;
    let guard = MessageGuard::start(
        &q,
        msg,
        GuardOptions::default()
            .visibility(Duration::from_secs(30))
            .renew_every(Duration::from_millis(50)),
    )
    .unwrap();
    let mut lost = guard.lost_signal();
    tokio::time::timeout(Duration::from_secs(5), lost.lost())
        .await
        .expect("loss signalled");
    tokio::time::sleep(Duration::from_millis(200)).await;
    let puts = server
        .requests()
        .iter()
        .filter(|r| r.method == "PUT")
        .count();
    assert_eq!(puts, 1, "no retry after a definitive rejection");
    let e = guard.complete().await.unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::PopReceiptMismatch));
}

#[tokio::test]
async fn malformed_responses_are_errors_not_panics() {
    let no_id = br#"<QueueMessagesList><QueueMessage><PopReceipt>r</PopReceipt><MessageText>x</MessageText></QueueMessage></QueueMessagesList>"#;
    let bad_count = br#"<QueueMessagesList><QueueMessage><MessageId>m</MessageId><PopReceipt>r</PopReceipt><DequeueCount>many</DequeueCount></QueueMessage></QueueMessagesList>"#;
    let no_receipt = br#"<QueueMessagesList><QueueMessage><MessageId>m</MessageId></QueueMessage></QueueMessagesList>"#;
    for body in [
        &no_id[..],
        bad_count,
        no_receipt,
        b"<QueueMessagesList><Queue",
        b"\xff\xfe",
    ] {
        let server = Scripted::start(vec![Reply::with(200, &[], body)]).await;
        let q = queue(&server);
        let e = q
            .receive_messages(1, Duration::from_secs(30))
            .await
            .unwrap_err();
        assert_eq!(e.kind(), azstore::ErrorKind::Service, "{e}");
    }
    // Put Message answered without a message; Update without a receipt header.
    let server = Scripted::start(vec![
        Reply::with(201, &[], b"<QueueMessagesList/>"),
        Reply::status(204),
    ])
    .await;
    let q = queue(&server);
    assert!(q.put_message("x").await.is_err());
    let e = q
        .update_message_with_receipt(
            &azstore::queue::MessageId::new("m"),
            &azstore::queue::PopReceipt::new("r"),
            Duration::from_secs(1),
            None,
        )
        .await
        .unwrap_err();
    assert!(e.message().contains("x-ms-popreceipt"), "{e}");
}
