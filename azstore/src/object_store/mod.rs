//! azstore behind the `object_store` crate's `ObjectStore` trait (cargo feature
//! `object_store`): the interface DataFusion, delta-rs, Lance, Polars and SlateDB write through.
//!
//! * [`BlobStore`]: `ObjectStore`, `MultipartStore` and `PaginatedListStore` over a blob
//!   container (with an optional prefix), through azstore's own clients, pipeline and errors.
//! * [`Object`]: one path of *any* `ObjectStore` as a [`Versioned`](crate::update::Versioned)
//!   resource, so that [`update()`](crate::update::update) runs on S3, GCS, the local file
//!   system or `InMemory` too.
//!
//! # Conditional writes whose reply was lost
//!
//! A commit protocol writes with `PutMode::Create` (`If-None-Match: *`) or `PutMode::Update`
//! (`If-Match`). When the connection drops after the service applied such a write, a client
//! that sends it again meets its own write and reports a false `AlreadyExists` or
//! `Precondition`: the caller then commits the same change a second time under the next
//! number. `BlobStore` never repeats a conditional write blind. Each conditional write
//! (`Create`, `Update`, a conditional multipart completion, `copy_if_not_exists`,
//! `rename_if_not_exists`) stores a fresh write id in the blob's metadata
//! ([`PUT_ID_METADATA`]); when its outcome is unknown (no reply, or a 500/502/504 that may
//! have been applied), `BlobStore` reads the blob's properties:
//!
//! | the blob shows | the call returns |
//! |---|---|
//! | our write id | `Ok` with the blob's real ETag: the write applied once |
//! | absent (`Create`), or still the ETag the `Update` was conditioned on | the write did not apply: it is sent again, with the same write id |
//! | another writer's version | the error stays: `AlreadyExists` / `Precondition` |
//!
//! What cannot be recognised: a `PutMode::Overwrite` (it has no condition, so repeating it is
//! harmless and it is simply retried), and an `Update` whose write applied but was itself
//! overwritten by another writer before the re-read (the call then returns `Precondition`:
//! the object no longer holds what the caller wrote). See `docs/object_store.md`.
//!
//! ```no_run
//! use std::sync::Arc;
//! use object_store::{ObjectStore, ObjectStoreExt, PutMode, path::Path};
//!
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! let account = azstore::StorageAccount::from_env()?;
//! let store: Arc<dyn ObjectStore> =
//!     Arc::new(azstore::object_store::BlobStore::new(account.container("lake")?));
//! let log = Path::from("table/_delta_log/00000000000000000007.json");
//! match store.put_opts(&log, "{}".into(), PutMode::Create.into()).await {
//!     Ok(put) => println!("committed version 7 as {:?}", put.e_tag),
//!     Err(object_store::Error::AlreadyExists { .. }) => println!("another writer has 7"),
//!     Err(e) => return Err(e.into()),
//! }
//! # Ok(()) }
//! ```

mod convert;
mod errors;
mod list;
mod multipart;
mod recognise;
mod store;
mod store_impl;
mod url;
mod versioned;

pub use store::BlobStore;
pub use versioned::Object;

/// The metadata name under which [`BlobStore`] stores the write id of a conditional write
/// (`x-ms-meta-azstoreputid`), to recognise it after a lost reply. It is not reported in
/// `GetResult::attributes`.
pub const PUT_ID_METADATA: &str = "azstoreputid";
