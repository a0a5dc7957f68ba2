//! # azstore — Azure Storage with concurrency you can trust
//!
//! azstore talks to Azure Storage (Blob, Table, Queue and File) over SharedKey-signed HTTP (or
//! SAS, or a bearer token), to Azure and to the Azurite emulator alike, and makes the three
//! concurrency strategies Azure offers easy to use and hard to get wrong.
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
//! ## Optimistic concurrency
//! Every object has an [`ETag`]. A write that carries [`Conditions::if_match`] only succeeds
//! if nobody changed the object since you read it; otherwise it fails with
//! [`ErrorKind::PreconditionFailed`] (412) and the other writer's data survives.
//! [`Conditions::if_not_exists`] creates only (409 when someone else created first).
//!
//! ```no_run
//! # async fn demo(blob: azstore::BlobClient) -> azstore::Result<()> {
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
//! [`update()`] turns that into a loop that never loses an update: it re-reads and re-applies
//! your closure on every conflict, with backoff, and recognises its own write after an
//! ambiguous timeout. It works on anything [`Versioned`]: blobs ([`BlobJson`], [`BlobBytes`])
//! and table entities ([`TableClient::versioned`]).
//!
//! ```no_run
//! # async fn demo(blob: azstore::BlobClient) -> azstore::Result<()> {
//! use azstore::{BlobJson, Decision, UpdatePolicy, update};
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
//! Blob and container leases give one holder exclusive write access for 15–60 s (or
//! indefinitely): see [`lease`]. A [`LeaseGuard`] renews in the background and signals loss
//! before the lease can expire; [`BlobLock`] is a distributed lock with a fencing token on top,
//! and the `azlock` binary runs a command under it.
//!
//! ```no_run
//! # async fn demo(container: azstore::ContainerClient) -> azstore::Result<()> {
//! use std::time::Duration;
//! let lock = azstore::BlobLock::new(container, "locks/nightly")?;
//! if let Some(held) = lock.acquire(Duration::from_secs(30)).await? {
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
//! ## Layout
//!
//! | module | what lives there |
//! |---|---|
//! | [`account`] | [`StorageAccount`]: connection strings, the emulators, endpoints; one-line clients (`account.blob(..)`) |
//! | [`credential`], [`auth`] | SharedKey (redacted), SAS, bearer tokens; request signing and [`SasBuilder`] |
//! | [`http`] | the pipeline every request goes through: stamp, sign, send, classify, retry ([`ClientOptions`], [`RetryPolicy`]) |
//! | [`error`] | one [`Error`]: kind, status, [`ErrorCode`], request id, [`RequestSent`] |
//! | [`conditions`] | [`ETag`], [`Conditions`], [`MatchCondition`], [`LeaseId`]: shared by every service |
//! | [`blob`] | containers and blobs, one file per sub-resource (block, append, page, copy, list, download, upload, ...) |
//! | [`table`], [`queue`], [`mod@file`] | the other three services |
//! | [`paging`] | one [`Page`](paging::Page) / [`ResultStream`](paging::ResultStream) shape for every listing |
//! | [`access_policy`] | one [`SignedIdentifier`](access_policy::SignedIdentifier) for the stored access policies of containers, queues and tables |
//! | [`service_properties`] | Get/Set Service Properties of all four services: logging, metrics, CORS, soft delete |
//! | [`lease`] | lease operations, the [`Leasable`] contract and the self-renewing [`LeaseGuard`]; the loss-deadline core it shares with the queue's `MessageGuard` |
//! | [`clock`] | the clock loss deadlines are measured on (counts suspend on Linux); a manual clock for tests |
//! | [`lock`] | [`BlobLock`]: a distributed lock with a fencing token (what `azlock` runs on) |
//! | [`mod@update`] | [`update()`]: read-modify-write over anything [`Versioned`] |
//! | `redis` (feature `redis`) | Azure Cache for Redis: `RedisJson` (a [`Versioned`] key), `RedisLease` (a [`Leasable`] key), `RedisLock` |
//!
//! A request's path: a typed client validates its input and builds a pure request (headers
//! from [`Conditions`]) → the pipeline stamps date and version, signs, sends, and classifies the
//! answer (304/409/412 are answers, never retried; an ambiguous conditional write is never
//! repeated) → a typed result or an [`Error`]. [`update()`] sits above and owns re-reads,
//! backoff and recognising its own ambiguous writes.
//!
//! ## Errors
//! One [`Error`] type with an [`ErrorKind`], the HTTP status, the service [`ErrorCode`], the
//! request id and whether the request may have been sent ([`RequestSent`]). Bad input is
//! refused with [`ErrorKind::InvalidInput`] before anything is sent; keys and SAS signatures
//! never appear in `Debug`, `Display` or errors.
#![warn(missing_docs)]

pub mod access_policy;
pub mod account;
pub mod auth;
pub mod clock;
pub mod conditions;
pub mod credential;
pub mod error;
pub mod http;
pub mod http_headers;
mod names;
pub mod paging;
mod redact;
pub mod service_properties;
mod shortcuts;
mod time_fmt;

#[cfg(test)]
mod proptests;

pub use account::{EmulatorPorts, Endpoint, Service, StorageAccount};
pub use auth::sas::SasBuilder;
pub use conditions::{Conditions, ETag, LeaseId, MatchCondition};
pub use credential::{
    AccessToken, Credential, SasToken, SharedKeyCredential, TokenCache, TokenProvider,
};
pub use error::{Error, ErrorCode, ErrorKind, RequestSent, Result};
pub use http::{ClientOptions, Jitter, RetryPolicy};

/// Re-exported so callers can name timestamps without adding the crate themselves.
pub use time::OffsetDateTime;

// ---- service modules (each owned by one line of work; keep these blocks separate) ----

pub mod blob;

pub use blob::{BlobClient, BlobServiceClient, ContainerClient};

// -- lease, lock, azlock (issue 4) --
pub mod lease;

pub mod lock;

pub use lease::{BreakPeriod, Leasable, LeaseDuration, LeaseGuard, LeaseSeconds};
pub use lock::{BlobLock, HeldLock, LockOptions};

// -- Azure Cache for Redis (issue 17) --
#[cfg(feature = "redis")]
pub mod redis;

// -- read-modify-write (issue 5) --
pub mod update;

pub use update::{
    BlobBytes, BlobJson, Change, Combiner, Current, Decision, Outcome, UpdatePolicy, Versioned,
    create_only, update,
};

// -- table (issue 6) --
pub mod table;

pub use table::{TableClient, TableServiceClient};

// -- queue (issue 7) --
pub mod queue;

pub use queue::{QueueClient, QueueServiceClient};

// -- file (issue 8) --
pub mod file;

pub use file::{DirectoryClient, FileClient, ShareClient, ShareServiceClient};

// -- transfers: parallel downloads and uploads, progress (issue 19) --
pub mod transfer;
