//! Blob test helpers: a fresh, uniquely named container per test.
#![allow(dead_code)]

use azstore::blob::{BlobClient, BlobServiceClient, ContainerClient};
use azstore::http::ClientOptions;
use azstore::{Conditions, StorageAccount};

/// The blob service of the Azurite account (panics loudly when Azurite is absent).
pub fn service() -> BlobServiceClient {
    BlobServiceClient::new(&crate::account()).expect("blob client")
}

/// Creates a new container named after `prefix`.
pub async fn container(prefix: &str) -> ContainerClient {
    container_at(&crate::account(), prefix).await
}

/// Creates a new container named after `prefix` in `account` (Azurite's, or a proxy's in
/// front of it).
pub async fn container_at(account: &StorageAccount, prefix: &str) -> ContainerClient {
    let c = BlobServiceClient::new(account)
        .expect("blob client")
        .container(&crate::unique(prefix))
        .expect("container name");
    // create_if_not_exists: a create retried after a lost response answers 409 although
    // this call created the (uniquely named) container.
    c.create_if_not_exists().await.expect("create container");
    c
}

/// A client for blob `name` in `container` of `account` (nothing is sent).
pub fn blob_at(account: &StorageAccount, container: &str, name: &str) -> BlobClient {
    blob_with(account, ClientOptions::default(), container, name)
}

/// [`blob_at`] with the client built with `options`.
pub fn blob_with(
    account: &StorageAccount,
    options: ClientOptions,
    container: &str,
    name: &str,
) -> BlobClient {
    BlobServiceClient::with_options(account, options)
        .expect("blob client")
        .container(container)
        .expect("container name")
        .blob(name)
        .expect("blob name")
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

/// A blob that keeps changing: uploads the first of `count` versions of `len` bytes (each a
/// [`pattern`], seeds from `seed`) to `blob`, then a task replaces it with each of the others
/// in turn, `every` apart. Returns the versions and the task (finished once the last one is
/// written), for reads that must return exactly one version.
pub async fn rewritten_over_time(
    blob: &BlobClient,
    count: u8,
    len: usize,
    seed: u8,
    every: std::time::Duration,
) -> (Vec<Vec<u8>>, tokio::task::JoinHandle<()>) {
    let versions: Vec<Vec<u8>> = (0..count).map(|i| pattern(len, seed + i)).collect();
    blob.upload(versions[0].clone(), &Conditions::none())
        .await
        .expect("upload the first version");
    let writer = {
        let blob = blob.clone();
        let versions = versions.clone();
        tokio::spawn(async move {
            for v in versions.iter().skip(1) {
                tokio::time::sleep(every).await;
                blob.upload(v.clone(), &Conditions::none())
                    .await
                    .expect("upload the next version");
            }
        })
    };
    (versions, writer)
}
