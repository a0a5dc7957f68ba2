//! MessageGuard against Azurite: keeps a message hidden for several visibility timeouts,
//! deletes with the newest receipt, lets the message reappear after failure or drop, and
//! signals when the message is lost.

use testkit::queue as queue_support;

use std::time::{Duration, Instant};

use azstore::ErrorCode;
use azstore::lease::GuardOptions;
use azstore::queue::{MessageGuard, QueueClient, ReceivedMessage};
use queue_support::fresh_queue;

const VIS: Duration = Duration::from_secs(2);

async fn one(q: &QueueClient, body: &str) -> ReceivedMessage {
    q.put_message(body).await.unwrap();
    q.receive_message(VIS).await.unwrap().expect("message")
}

/// Polls for `d`, asserting no other consumer can receive anything.
async fn assert_stays_hidden(q: &QueueClient, d: Duration) {
    let end = Instant::now() + d;
    while Instant::now() < end {
        let other = q.receive_message(Duration::from_secs(30)).await.unwrap();
        assert!(other.is_none(), "another consumer received {other:?}");
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

#[tokio::test]
async fn keeps_message_hidden_for_three_timeouts_then_deletes() {
    let q = fresh_queue("qgk").await;
    let msg = one(&q, "slow job").await;
    let guard = MessageGuard::start(&q, msg, GuardOptions::default().visibility(VIS)).unwrap();
    assert_eq!(guard.message().content_str().unwrap(), "slow job");
    // The handler "runs" for 3x the visibility timeout.
    assert_stays_hidden(&q, VIS * 3).await;
    assert!(!guard.is_lost());
    assert!(
        guard.extensions() >= 3,
        "extended {} times",
        guard.extensions()
    );
    // Deleting uses the newest receipt (the one from the receive is long stale).
    guard.complete().await.unwrap();
    assert!(q.peek_messages(32).await.unwrap().is_empty());
    tokio::time::sleep(VIS + Duration::from_millis(500)).await;
    assert!(
        q.receive_message(VIS).await.unwrap().is_none(),
        "deleted, never reappears"
    );
    q.delete().await.unwrap();
}

#[tokio::test]
async fn after_failure_the_message_reappears() {
    let q = fresh_queue("qgf").await;
    let msg = one(&q, "will fail").await;
    let id = msg.id.clone();
    let guard = MessageGuard::start(&q, msg, GuardOptions::default().visibility(VIS)).unwrap();
    assert_stays_hidden(&q, VIS + Duration::from_millis(500)).await;
    guard.abandon().await.unwrap();
    // Hidden for at most one more timeout, then back with dequeue count 2.
    let start = Instant::now();
    let again = loop {
        if let Some(m) = q.receive_message(Duration::from_secs(30)).await.unwrap() {
            break m;
        }
        assert!(start.elapsed() < VIS * 3, "message did not reappear");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(again.id, id);
    assert_eq!(again.dequeue_count, 2);
    assert_eq!(again.content_str().unwrap(), "will fail");
    q.delete().await.unwrap();
}

#[tokio::test]
async fn retry_after_zero_and_drop_release_the_message() {
    let q = fresh_queue("qgr").await;
    let msg = one(&q, "retry me").await;
    let guard = MessageGuard::start(&q, msg, GuardOptions::default().visibility(VIS)).unwrap();
    guard.retry_after(Duration::ZERO).await.unwrap();
    let again = q
        .receive_message(VIS)
        .await
        .unwrap()
        .expect("visible at once");
    assert_eq!(again.dequeue_count, 2);

    // Dropping the guard stops the extensions: the message reappears after its timeout.
    let guard = MessageGuard::start(&q, again, GuardOptions::default().visibility(VIS)).unwrap();
    drop(guard);
    let start = Instant::now();
    let third = loop {
        if let Some(m) = q.receive_message(Duration::from_secs(30)).await.unwrap() {
            break m;
        }
        assert!(
            start.elapsed() < VIS * 3,
            "message did not reappear after drop"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(third.dequeue_count, 3);
    q.delete().await.unwrap();
}

#[tokio::test]
async fn signals_when_the_message_is_lost() {
    let q = fresh_queue("qgl").await;
    let msg = one(&q, "gone soon").await;
    let guard = MessageGuard::start(&q, msg, GuardOptions::default().visibility(VIS)).unwrap();
    let mut lost = guard.lost_signal();
    assert!(!lost.is_lost());
    // Someone else removes it behind our back.
    q.clear_messages().await.unwrap();
    tokio::time::timeout(VIS * 2, lost.lost())
        .await
        .expect("lost signal within two timeouts");
    assert!(guard.is_lost());
    let e = guard.complete().await.unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::MessageNotFound));
    q.delete().await.unwrap();
}
