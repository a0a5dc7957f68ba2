//! Queue test helpers: a freshly created, uniquely named queue on Azurite.
#![allow(dead_code)]

use azstore::queue::{QueueClient, QueueServiceClient};

/// The queue service of the Azurite account (panics if Azurite is absent).
pub fn service() -> QueueServiceClient {
    QueueServiceClient::new(&crate::account()).expect("queue service client")
}

/// A new, empty, uniquely named queue.
pub async fn fresh_queue(prefix: &str) -> QueueClient {
    let q = service()
        .queue(&crate::unique(prefix))
        .expect("valid queue name");
    assert!(q.create_if_not_exists().await.expect("create queue"));
    q
}
