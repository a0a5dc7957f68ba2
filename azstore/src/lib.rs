//! # azstore — Azure Storage with concurrency you can trust
//!
//! azstore talks to Azure Storage (Blob, Table, Queue and File) over HTTPS with SharedKey, SAS
//! or Microsoft Entra ID bearer tokens, to Azure and to the local emulators alike, and makes the
//! three concurrency strategies Azure offers easy to use and hard to get wrong.
//!
//! ## Entry points
//!
//! | start from | to |
//! |---|---|
//! | [`StorageAccount`] ([`from_env`](StorageAccount::from_env), [`from_connection_string`](StorageAccount::from_connection_string), [`new`](StorageAccount::new), [`development`](StorageAccount::development)) | an account, then a client in one line: [`container`](StorageAccount::container), [`blob`](StorageAccount::blob), [`table`](StorageAccount::table), [`queue`](StorageAccount::queue), [`share`](StorageAccount::share), [`file`](StorageAccount::file) |
//! | [`blob`], [`table`], [`queue`], [`file`](mod@file) | the four services' clients and options, one module each |
//! | [`update::update`] | read-modify-write that never loses an update, over [`blob::BlobJson`], [`table::TableClient::versioned`], `RedisJson`, `CosmosItem` |
//! | [`Conditions`] | one write at a time: `if_match`, `if_not_exists`, `none` |
//! | [`lease::LeaseGuard`] | a lease renewed in the background that reports its loss in time |
//! | [`blob::BlobLock`], `redis::RedisLock`, `cosmos::CosmosLock` | a distributed lock with a fencing token: one engine, [`lock::Lock`], on every backend (`BlobLock` is what `azlock` runs on) |
//! | [`leader::Election`], [`leader::ShardGroup`] | one leader among replicas, shards spread over a fleet, each with an epoch (fencing token), on any lock |
//! | [`queue::process`] | a queue worker: at-least-once delivery, visibility kept while the handler runs |
//! | [`transfer`] | parallel, checksummed uploads and downloads with progress |
//! | [`Error`] | one error type: how to inspect it is on its page |
//!
//! ## Features
//!
//! | cargo feature | adds |
//! |---|---|
//! | (none) | Blob, Table, Queue and File with SharedKey, SAS or a bearer token you supply |
//! | `identity` | Microsoft Entra ID (managed identity, workload identity, service principal, Azure CLI) through `azure_identity`; `from_env` uses it when no key, SAS or token is set. Rust 1.88 |
//! | `redis` | Azure Cache for Redis: `update()` on a key, `RedisLease`, `RedisLock` (module `redis`) |
//! | `cosmos` | Azure Cosmos DB: `update()` on an item, `CosmosLease`, `CosmosLock` (module `cosmos`); no extra crate |
//! | `object_store` | `object_store`'s `ObjectStore` over a blob container, with lost replies of conditional writes recognised (`object_store::BlobStore`), and `update()` over any `ObjectStore` (`object_store::Object`) |
//! | `metrics` | metrics of every call and of what the toolkit decides, through the `metrics` facade ([`telemetry`]; spans and events are always there through `tracing`) |
//!
//! A request's path: a typed client validates its input and builds a pure request (headers
//! from [`Conditions`], an [`http::Intent`]) → the pipeline stamps date and version,
//! authorizes, sends, and classifies the answer (304/409/412 are answers, never retried; an
//! ambiguous conditional write is never repeated) → a typed result or an [`Error`].
//! [`update::update`] sits above and owns re-reads, backoff and recognising its own ambiguous
//! writes.
//!
//! ```no_run
//! # async fn demo() -> azstore::Result<()> {
//! let account = azstore::StorageAccount::from_env()?; // AZURE_STORAGE_CONNECTION_STRING
//! let container = account.container("reports")?;
//! container.create_if_not_exists().await?;
//! let blob = container.blob("q4.json")?;
//! # let _ = blob; Ok(()) }
//! ```
//!
//! ## Naming
//!
//! The same concept has the same name and shape on every service:
//!
//! - **Operations are named after the REST operation**, in snake case: `get_properties`,
//!   `set_metadata`, `create_snapshot`. Get/Set ACL is `get_access_policy` /
//!   `set_access_policy` everywhere (containers, tables, queues), after what it holds.
//! - **Suffixes**: `_if` takes [`Conditions`] (`download_if`, `delete_if_exists_if`);
//!   `_with` takes an options struct alone (`upload_with`, `create_with(&CreateFileOptions)`);
//!   `_if_exists` / `_if_not_exists` answer `Ok(bool)` (`true`: this call did it) and take no
//!   argument beyond the plain operation's subject (`delete_if_exists()` on every client).
//! - **Content is read with `download*` and written with `upload*`** on Blob and File:
//!   `download_range`, `download_from`, `download_stream`, `download_to_file`,
//!   `download_into`; `get*` reads properties, metadata, tags and policies.
//! - **`get_metadata` returns `(metadata, ETag)`** on every resource that has an ETag
//!   (containers, blobs, shares, directories, files); a queue's metadata comes with
//!   `QueueClient::get_properties`.
//! - **Leases**: clients have `acquire_lease`, `renew_lease`, `change_lease`,
//!   `release_lease`, `break_lease`; the `lease_*` methods are [`lease::Leasable`]'s, the
//!   trait the engines ([`lease::LeaseGuard`], the locks) are generic over.
//! - **Options** types are `XOptions` with a setter per field (`self -> Self`) named as the
//!   field; writes that replace data have no `Default`, only `XOptions::new(conditions)`.
//!
//! `scripts/check-names` checks these shapes on every public method. CHANGELOG.md lists every
//! rename under the release that made it.
//!
//! ## Optimistic concurrency
//! Every object has an [`ETag`]. A write that carries [`Conditions::if_match`] only succeeds
//! if nobody changed the object since you read it; otherwise it fails with
//! [`ErrorKind::PreconditionFailed`] (412) and the other writer's data survives.
//! [`Conditions::if_not_exists`] creates only (409 when someone else created first).
//!
//! ```no_run
//! # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::Conditions;
//! let current = blob.download().await?;
//! match blob.upload("v2", &Conditions::if_match(&current.properties.etag)).await {
//!     Ok(written) => println!("new version {}", written.etag),
//!     Err(e) if e.is_precondition_failed() => println!("someone else won; re-read"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! [`update::update`] turns that into a loop that never loses an update: it re-reads and
//! re-applies your closure on every conflict, with backoff, and recognises its own write after
//! an ambiguous timeout. It works on anything [`update::Versioned`]: blobs
//! ([`blob::BlobJson`], [`blob::BlobBytes`]) and table entities
//! ([`table::TableClient::versioned`]).
//!
//! ```no_run
//! # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::update::{Decision, UpdatePolicy, update};
//! use azstore::blob::{BlobJson};
//! let counter = BlobJson::<u64>::new(blob);
//! let outcome = update(&counter, &UpdatePolicy::default(), |cur| {
//!     Decision::Write(cur.copied().unwrap_or(0) + 1)
//! })
//! .await?;
//! println!("now {:?} after {} attempt(s)", outcome.value, outcome.attempts);
//! # Ok(()) }
//! ```
//!
//! ## Pessimistic concurrency
//! Blob, container and share leases give one holder exclusive write access for 15–60 s (or
//! indefinitely; file leases are infinite only): see [`lease`]. A [`lease::LeaseGuard`] renews
//! in the background and signals loss before the lease can expire; [`blob::BlobLock`] is a
//! distributed lock with a fencing token on top, and the `azlock` binary runs a command under
//! it.
//!
//! ```no_run
//! # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
//! use std::time::Duration;
//! let lock = azstore::blob::BlobLock::new(container, "locks/nightly")?;
//! if let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? {
//!     let token = held.fencing_token();
//!     tokio::select! {
//!         _ = held.lost() => eprintln!("lease lost: stop acting as the owner"),
//!         _ = async { /* critical section, passing `token` along */ } => {}
//!     }
//!     held.release().await?;
//! }
//! # Ok(()) }
//! ```
//!
//! ## Last writer wins
//! Without a condition a write replaces whatever is there. azstore makes that explicit: pass
//! [`Conditions::none()`]. Table `insert_or_replace`/`insert_or_merge`, queue metadata and
//! Azure Files (which has no If-Match on REST) are last-writer-wins by nature and documented so.
//!
//! ## Errors
//! One [`Error`] type with an [`ErrorKind`], the HTTP status, the service [`ErrorCode`], the
//! request id and whether the request may have been sent ([`RequestSent`]). Bad input is
//! refused with [`ErrorKind::InvalidInput`] before anything is sent; keys and SAS signatures
//! never appear in `Debug`, `Display` or errors.
#![deny(missing_docs)]

#[macro_use]
mod macros;

// The core every service shares. These modules are private: their items are re-exported at the
// crate root, the one path to them.
mod account;
mod body;
mod conditions;
mod error;

pub use account::{
    CONNECTION_STRING_ENV, DEV_ACCOUNT, DEV_KEY, EmulatorPorts, Endpoint, Service, StorageAccount,
    env,
};
pub use body::IntoBody;
pub use conditions::{Conditions, ETag, LeaseId, MatchCondition};
pub use error::{Error, ErrorCode, ErrorKind, RequestSent, Result};

/// The `time` crate's timestamp (every date azstore reads or writes), re-exported so callers
/// can name it without adding the crate themselves; its own documentation is the `time`
/// crate's.
#[doc(no_inline)]
pub use time::OffsetDateTime;

// How requests are authorized and sent.
pub mod credential;
pub mod http;
pub use storage::sas;

// Types more than one service uses.
pub mod access_policy;
pub mod http_headers;
pub mod paging;
pub mod service_properties;

// The four services, one folder each, split by sub-resource.
pub mod blob;
pub mod file;
pub mod queue;
pub mod table;

// Concurrency and transfers on top of the services.
pub mod clock;
#[cfg(feature = "cosmos")]
pub mod cosmos;
pub mod leader;
pub mod lease;
pub mod lock;
#[cfg(feature = "testing")]
pub mod memory;
#[cfg(feature = "redis")]
pub mod redis;
pub mod transfer;
// The Azure Storage protocol the four Storage backends share.
pub mod storage;
// A face over the blob backend and the update engine: object_store's ObjectStore.
#[cfg(feature = "object_store")]
pub mod object_store;
pub mod update;

// What azstore did and decided: traces and metrics (docs/observability.md).
pub mod telemetry;

// Internals.
mod names;
mod redact;
mod shortcuts;
mod snapshot;
mod status;
mod time_fmt;
mod transport;

#[cfg(test)]
mod proptests;

// The README's and docs/' Rust examples, compiled by `cargo test --doc` like the API docs'.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/pauses-and-fencing.md")]
struct PausesAndFencingExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/failures.md")]
struct FailuresExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/connecting.md")]
struct ConnectingExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/leader.md")]
struct LeaderExamples;
#[cfg(doctest)]
#[doc = include_str!("../../docs/locks.md")]
struct LocksExamples;
// docs/observability.md's examples need the OpenTelemetry crates: the examples package compiles
// them (examples/lib.rs, feature `otel`).
