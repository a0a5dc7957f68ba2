//! Messages against Azurite: put/receive/peek/update/delete, the pop receipt lifecycle,
//! visibility timeouts, TTL, encodings, and validation before sending.

use testkit::queue as queue_support;

use std::time::Duration;

use azstore::queue::{
    MAX_MESSAGE_SIZE, MAX_VISIBILITY_TIMEOUT, MessageEncoding, PutMessageOptions, TimeToLive,
};
use azstore::{ErrorCode, ErrorKind, RequestSent};
use queue_support::fresh_queue;

const SECS30: Duration = Duration::from_secs(30);

#[tokio::test]
async fn pop_receipt_lifecycle() {
    let q = fresh_queue("qpr").await;
    q.put_message("work item").await.unwrap();
    let mut msg = q.receive_message(SECS30).await.unwrap().expect("a message");
    assert_eq!(msg.dequeue_count, 1);
    assert_eq!(msg.content_str().unwrap(), "work item");
    let old = msg.pop_receipt().clone();
    let old_visible = msg.next_visible_on();

    q.update_message(&mut msg, Duration::from_secs(60), Some(b"work item v2"))
        .await
        .unwrap();
    assert_ne!(msg.pop_receipt(), &old, "update issues a new pop receipt");
    assert!(
        msg.next_visible_on() > old_visible,
        "and a later time-next-visible"
    );
    assert_eq!(msg.content_str().unwrap(), "work item v2");

    // The old receipt no longer works.
    let e = q
        .delete_message_with_receipt(&msg.id, &old)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(400));
    assert_eq!(e.error_code(), Some(&ErrorCode::PopReceiptMismatch));
    let e = q
        .update_message_with_receipt(&msg.id, &old, SECS30, None)
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::PopReceiptMismatch));

    // The new one does; deleting twice gives MessageNotFound.
    let (id, receipt) = (msg.id.clone(), msg.pop_receipt().clone());
    q.delete_message(msg).await.unwrap();
    let e = q
        .delete_message_with_receipt(&id, &receipt)
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(404));
    assert_eq!(e.error_code(), Some(&ErrorCode::MessageNotFound));
    assert!(e.is_not_found());
    assert!(q.peek_messages(1).await.unwrap().is_empty());
    q.delete().await.unwrap();
}

#[tokio::test]
async fn received_message_is_invisible_until_timeout_then_reappears() {
    let q = fresh_queue("qvis").await;
    let sent = q.put_message("once").await.unwrap();
    let first = q
        .receive_message(Duration::from_secs(2))
        .await
        .unwrap()
        .expect("first consumer gets it");
    assert_eq!(first.id, sent.id);
    assert_eq!(first.dequeue_count, 1);
    // A second consumer sees nothing while it is hidden; neither does peek.
    assert!(q.receive_message(SECS30).await.unwrap().is_none());
    assert!(q.peek_messages(32).await.unwrap().is_empty());
    tokio::time::sleep(Duration::from_millis(2600)).await;
    let peeked = q.peek_messages(32).await.unwrap();
    assert_eq!(peeked.len(), 1, "visible again after the timeout");
    assert_eq!(peeked[0].dequeue_count, 1, "peek does not dequeue");
    let second = q
        .receive_message(SECS30)
        .await
        .unwrap()
        .expect("reappeared");
    assert_eq!(second.id, sent.id);
    assert_eq!(second.dequeue_count, 2);
    // The first consumer's receipt is stale now.
    let e = q.delete_message(first).await.unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::PopReceiptMismatch));
    q.delete_message(second).await.unwrap();
    q.delete().await.unwrap();
}

#[tokio::test]
async fn update_visibility_zero_releases_now() {
    let q = fresh_queue("qrel").await;
    q.put_message("x").await.unwrap();
    let mut m = q.receive_message(SECS30).await.unwrap().unwrap();
    q.update_message(&mut m, Duration::ZERO, None)
        .await
        .unwrap();
    let again = q
        .receive_message(SECS30)
        .await
        .unwrap()
        .expect("visible at once");
    assert_eq!(again.id, m.id);
    assert_eq!(again.dequeue_count, 2);
    assert_eq!(
        again.content_str().unwrap(),
        "x",
        "content kept without a body"
    );
    q.delete().await.unwrap();
}

#[tokio::test]
async fn put_options_batches_and_peek() {
    let q = fresh_queue("qput").await;
    // Delayed message: invisible at first.
    let delayed = q
        .put_message_with(
            "later",
            &PutMessageOptions::default().visibility_delay(Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert!(delayed.next_visible_on > delayed.inserted_on);
    // Never-expiring message.
    let forever = q
        .put_message_with(
            "forever",
            &PutMessageOptions::default().time_to_live(TimeToLive::Never),
        )
        .await
        .unwrap();
    let year = time::Duration::days(365);
    assert!(forever.expires_on.unwrap() - forever.inserted_on.unwrap() > year * 10);
    // Short TTL: expires.
    q.put_message_with(
        "short",
        &PutMessageOptions::default().time_to_live(TimeToLive::After(Duration::from_secs(1))),
    )
    .await
    .unwrap();
    for i in 0..40 {
        q.put_message(format!("n{i}")).await.unwrap();
    }
    let peeked = q.peek_messages(32).await.unwrap();
    assert_eq!(peeked.len(), 32, "peek returns at most 32");
    assert_eq!(peeked[0].content_str().unwrap(), "forever");
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let got = q.receive_messages(32, SECS30).await.unwrap();
    assert_eq!(got.len(), 32);
    let texts: Vec<_> = got.iter().map(|m| m.text.clone()).collect();
    assert!(
        !texts.contains(&"short".to_string()),
        "expired message gone"
    );
    assert!(
        !texts.contains(&"later".to_string()),
        "delayed message still hidden"
    );
    let rest = q.receive_messages(32, SECS30).await.unwrap();
    assert_eq!(
        got.len() + rest.len(),
        41,
        "forever + 40, not short, not later"
    );
    q.delete().await.unwrap();
}

#[tokio::test]
async fn encodings_round_trip_exactly() {
    let q = fresh_queue("qenc").await;
    let tricky = "  <a href=\"x\">&amp;</a> ü € 😀 \t\r\n trailing  ";
    q.put_message(tricky).await.unwrap();
    let m = q.receive_message(SECS30).await.unwrap().unwrap();
    assert_eq!(
        m.content_str().unwrap(),
        tricky,
        "raw text survives XML escaping"
    );

    let b64 = q.clone().with_encoding(MessageEncoding::Base64);
    let binary: Vec<u8> = (0..=255).collect();
    b64.put_message(&binary).await.unwrap();
    // On the wire it is Base64 text...
    let raw_view = q.peek_messages(1).await.unwrap();
    assert_eq!(raw_view[0].text, base64_of(&binary));
    // ...and a Base64 client gets the bytes back.
    let m = b64.receive_message(SECS30).await.unwrap().unwrap();
    assert_eq!(&m.content().unwrap()[..], &binary[..]);
    // A Base64 client reading non-Base64 text gets an error, not a panic.
    q.put_message("not base64 !").await.unwrap();
    let m = b64.receive_message(SECS30).await.unwrap().unwrap();
    assert!(m.content().is_err());
    assert_eq!(m.text, "not base64 !");
    q.delete().await.unwrap();
}

fn base64_of(b: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(b)
}

#[tokio::test]
async fn size_limit_matches_the_service() {
    let q = fresh_queue("qsz").await;
    // Exactly 64 KiB of text is accepted by the service.
    let max = "a".repeat(MAX_MESSAGE_SIZE);
    q.put_message(&max).await.unwrap();
    let m = q.receive_message(SECS30).await.unwrap().unwrap();
    assert_eq!(m.text.len(), MAX_MESSAGE_SIZE);
    // One byte more is refused locally.
    let e = q
        .put_message("a".repeat(MAX_MESSAGE_SIZE + 1))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(e.request_sent(), RequestSent::No);
    // And the same content in Base64 is over the limit once encoded.
    let b64 = q.clone().with_encoding(MessageEncoding::Base64);
    let e = b64.put_message(vec![0u8; 49_153]).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    // Update with oversized content is refused too, and the receipt stays usable.
    let mut m = m;
    let e = q
        .update_message(&mut m, SECS30, Some(max.as_bytes().repeat(2).as_slice()))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    q.delete_message(m).await.unwrap();
    q.delete().await.unwrap();
}

#[tokio::test]
async fn out_of_range_input_refused_before_sending() {
    let q = fresh_queue("qrange").await;
    q.put_message("keep").await.unwrap();
    let week_plus = MAX_VISIBILITY_TIMEOUT + Duration::from_secs(1);
    let errors = vec![
        q.receive_messages(33, SECS30).await.unwrap_err(),
        q.receive_messages(0, SECS30).await.unwrap_err(),
        q.receive_messages(1, Duration::ZERO).await.unwrap_err(),
        q.receive_messages(1, week_plus).await.unwrap_err(),
        q.peek_messages(33).await.unwrap_err(),
        q.put_message_with(
            "x",
            &PutMessageOptions::default().visibility_delay(week_plus),
        )
        .await
        .unwrap_err(),
        q.put_message_with(
            "x",
            &PutMessageOptions::default().time_to_live(TimeToLive::After(Duration::ZERO)),
        )
        .await
        .unwrap_err(),
        q.put_message("bell \u{7}").await.unwrap_err(),
        q.put_message(b"\xff\xfe").await.unwrap_err(),
    ];
    for e in errors {
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
        assert_eq!(e.request_sent(), RequestSent::No);
    }
    let mut m = q.receive_message(SECS30).await.unwrap().unwrap();
    let before = m.pop_receipt().clone();
    let e = q.update_message(&mut m, week_plus, None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    assert_eq!(m.pop_receipt(), &before, "failed update leaves the receipt");
    // Nothing was sent: the message is untouched and still ours.
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        1
    );
    q.delete_message(m).await.unwrap();
    q.delete().await.unwrap();
}
