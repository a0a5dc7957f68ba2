//! Azure Table storage: [`TableServiceClient`] → [`TableClient`], typed entities through
//! serde, ETag concurrency, queries with continuation, and entity group transactions.
//!
//! # Entities
//! Any `Serialize`/`Deserialize` struct with `PartitionKey` and `RowKey` fields is an entity;
//! Rust types map to EDM types as the [`codec`] table says (`i64` is `Edm.Int64`, `f64` is
//! `Edm.Double` even when whole, `Vec<u8>` is `Edm.Binary`, [`DateTime`] and [`Guid`] are the
//! wrapper types for `Edm.DateTime` and `Edm.Guid`). For schemaless use there is the dynamic
//! [`Entity`], a map of typed [`EdmValue`]s; both round-trip every EDM type exactly.
//!
//! # Concurrency
//! The Table service makes optimistic concurrency the default: [`TableClient::replace`],
//! [`TableClient::merge`] and [`TableClient::delete_entity`] take a required
//! [`MatchCondition`](crate::MatchCondition) — the ETag you read, or an explicit
//! [`MatchCondition::Any`](crate::MatchCondition::Any) to force the write. Only
//! [`TableClient::insert_or_replace`] and [`TableClient::insert_or_merge`] are last writer
//! wins, and they never send an `If-Match`.
//!
//! ```no_run
//! # async fn demo() -> azstore::Result<()> {
//! use azstore::table::TableServiceClient;
//! #[derive(serde::Serialize, serde::Deserialize)]
//! #[serde(rename_all = "PascalCase")]
//! struct Customer { partition_key: String, row_key: String, email: String }
//!
//! let account = azstore::StorageAccount::from_env()?;
//! let table = TableServiceClient::new(&account)?.table("customers")?;
//! table.create_if_not_exists().await?;
//! let mut c = table.get::<Customer>("smith", "john").await?;
//! c.entity.email = "john@contoso.org".into();
//! match table.replace(&c.entity, &c.etag).await {
//!     Ok(_) => println!("updated"),
//!     Err(e) if e.is_precondition_failed() => println!("someone else changed it; re-read"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! # Transactions
//! A [`Batch`] of up to 100 operations on one partition commits atomically; see
//! [`TableClient::submit`].

mod acl;
mod batch;
mod client;
pub mod codec;
mod edm;
mod exists;
mod names;
mod query;
mod service;
mod versioned;

pub use batch::{Batch, BatchResponse, failed_operation_index};
pub use client::{Continuation, Stored, TableClient};
pub use codec::{from_entity, to_entity};
pub use edm::{DateTime, EdmValue, Entity, Guid};
pub use names::{
    MAX_ENTITY_BYTES, MAX_KEY_BYTES, MAX_PROPERTIES, validate_key, validate_property_name,
    validate_table_name,
};
pub use query::{Filter, Query, quote};
pub use service::{TableItem, TableServiceClient};
pub use versioned::{VersionedEntity, WRITE_ID_PROPERTY};
