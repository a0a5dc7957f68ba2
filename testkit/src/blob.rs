//! Blob test helpers: a fresh, uniquely named container per test.
#![allow(dead_code)]

use azstore::{blob::BlobServiceClient, blob::ContainerClient};

/// The blob service of the Azurite account (panics loudly when Azurite is absent).
pub fn service() -> BlobServiceClient {
    BlobServiceClient::new(&crate::account()).expect("blob client")
}

/// Creates a new container named after `prefix`.
pub async fn container(prefix: &str) -> ContainerClient {
    let c = service()
        .container(&crate::unique(prefix))
        .expect("container name");
    // create_if_not_exists: a create retried after a lost response answers 409 although
    // this call created the (uniquely named) container.
    c.create_if_not_exists().await.expect("create container");
    c
}

/// Deterministic pseudo-random bytes (so a mixed read would be detectable).
pub fn pattern(len: usize, seed: u8) -> Vec<u8> {
    let mut x = seed as u32 | 0x100;
    (0..len)
        .map(|_| {
            x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
            (x >> 16) as u8
        })
        .collect()
}
