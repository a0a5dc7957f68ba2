//! Interop with the official Python queue SDK (azure-storage-queue 12.x): messages written
//! by azstore are read correctly by the SDK with its default encoding (and Base64 with the
//! SDK's Base64 policies), and vice versa; a pop receipt issued to the SDK works in azstore.
//!
//! Needs `AZSTORE_PYTHON` (a python with the SDK: `scripts/pyenv` prints one, `scripts/test`
//! exports it). The SDK's default x-ms-version is newer than Azurite 3.37 accepts, so the
//! script pins `api_version="2025-11-05"` (see tests/python/queue_interop.py).

use testkit as support;
use testkit::queue as queue_support;

use std::time::Duration;

use azstore::queue::{MessageEncoding, QueueClient};
use queue_support::fresh_queue;
use serde_json::Value;

fn python() -> String {
    std::env::var("AZSTORE_PYTHON").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_PYTHON is not set. These interop tests run the official Python queue SDK.\n\
             Create the virtualenv with `scripts/pyenv` (it prints the python path) and run\n\
             `AZSTORE_PYTHON=$(scripts/pyenv) scripts/azurite run -- cargo test --test \
             queue_interop`, or run the whole suite with `scripts/test`."
        )
    })
}

fn connection_string() -> String {
    support::account(); // panics with instructions when Azurite is absent
    std::env::var(azstore::CONNECTION_STRING_ENV).expect("connection string")
}

async fn py(queue: &QueueClient, action: &str, arg: Option<Value>) -> Value {
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/queue_interop.py"
    ))
    .arg(connection_string())
    .arg(queue.name())
    .arg(action);
    if let Some(a) = arg {
        cmd.arg(a.to_string());
    }
    let out = cmd.output().await.expect("run python");
    assert!(
        out.status.success(),
        "queue_interop.py {action} failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("bad output {e}: {}", String::from_utf8_lossy(&out.stdout)))
}

const TEXTS: [&str; 5] = [
    "plain",
    "lines\r\nwith CR LF\n\ttab",
    "  <xml> & \"quotes\" 'apos' ",
    "unicode: ü € 😀 日本",
    "{\"json\": [1, 2, 3]}",
];

#[tokio::test]
async fn azstore_raw_is_read_by_python_default() {
    let q = fresh_queue("qipr").await;
    let mut ids = Vec::new();
    for t in TEXTS {
        ids.push(q.put_message(t).await.unwrap().id.to_string());
    }
    let got = py(&q, "read-default", None).await;
    let got = got.as_array().unwrap();
    let contents: Vec<&str> = got.iter().map(|m| m["content"].as_str().unwrap()).collect();
    assert_eq!(contents, TEXTS);
    let py_ids: Vec<&str> = got.iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(py_ids, ids);
    assert!(
        q.peek_messages(1).await.unwrap().is_empty(),
        "python deleted them"
    );
    q.delete().await.unwrap();
}

#[tokio::test]
async fn python_default_is_read_by_azstore_raw() {
    let q = fresh_queue("qipw").await;
    py(&q, "write-default", Some(serde_json::json!(TEXTS))).await;
    let got = q
        .receive_messages(32, Duration::from_secs(30))
        .await
        .unwrap();
    let contents: Vec<String> = got
        .iter()
        .map(|m| m.content_str().unwrap().into_owned())
        .collect();
    assert_eq!(contents, TEXTS);
    q.delete().await.unwrap();
}

#[tokio::test]
async fn base64_both_ways() {
    let q = fresh_queue("qipb").await;
    let b64 = q.clone().with_encoding(MessageEncoding::Base64);
    let payloads: Vec<Vec<u8>> = vec![(0..=255).collect(), b"hello".to_vec(), vec![0, 0, 0xff]];
    for p in &payloads {
        b64.put_message(p).await.unwrap();
    }
    let got = py(&q, "read-base64", None).await;
    let hex: Vec<String> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(hex, payloads.iter().map(|p| to_hex(p)).collect::<Vec<_>>());

    py(&q, "write-base64", Some(serde_json::json!(hex))).await;
    let got = b64
        .receive_messages(32, Duration::from_secs(30))
        .await
        .unwrap();
    let back: Vec<Vec<u8>> = got.iter().map(|m| m.content().unwrap().to_vec()).collect();
    assert_eq!(back, payloads);
    q.delete().await.unwrap();
}

#[tokio::test]
async fn python_update_receipt_and_content_seen_by_azstore() {
    let q = fresh_queue("qipu").await;
    let sent = q.put_message("v1").await.unwrap();
    let r = py(&q, "update", Some(serde_json::json!("v2 from python"))).await;
    assert_eq!(r["id"].as_str(), Some(sent.id.as_str()));
    // Python's update made it visible again with new content; the receipt it got back is
    // the current one, and azstore's receive issues yet another.
    let m = q
        .receive_message(Duration::from_secs(30))
        .await
        .unwrap()
        .unwrap();
    assert_eq!(m.content_str().unwrap(), "v2 from python");
    assert_eq!(m.dequeue_count, 2);
    let py_receipt = azstore::queue::PopReceipt::new(r["pop_receipt"].as_str().unwrap());
    let e = q
        .delete_message_with_receipt(&m.id, &py_receipt)
        .await
        .unwrap_err();
    assert_eq!(
        e.error_code(),
        Some(&azstore::ErrorCode::PopReceiptMismatch)
    );
    q.delete_message(m).await.unwrap();
    q.delete().await.unwrap();
}

fn to_hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}
