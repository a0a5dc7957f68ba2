//! Table test helpers: a fresh, uniquely named table per test.
#![allow(dead_code)]

use azstore::table::{TableClient, TableServiceClient};

/// The Table service of the Azurite account.
pub fn service() -> TableServiceClient {
    TableServiceClient::new(&crate::account()).expect("table service client")
}

/// A new table with a unique name, created.
pub async fn fresh_table(prefix: &str) -> TableClient {
    let t = service()
        .table(&crate::unique(prefix))
        .expect("valid table name");
    t.create().await.expect("create table");
    t
}
