//! # azstore — Azure Storage with concurrency you can trust
//!
//! azstore talks to Azure Storage (Blob, Table, Queue and File) over SharedKey-signed HTTP, and
//! makes the three concurrency strategies Azure offers easy to use and hard to get wrong.
//!
//! ## Optimistic concurrency
//! Every object has an [`ETag`]. A write that carries [`Conditions::if_match`] only succeeds
//! if nobody changed the object since you read it; otherwise it fails with
//! [`ErrorKind::PreconditionFailed`] (412) and the other writer's data survives.
//!
//! ## Pessimistic concurrency
//! Blob and container leases give one holder exclusive write access for 15–60 s (or
//! indefinitely). See the `lease` and `lock` modules.
//!
//! ## Last writer wins
//! Without a condition a write replaces whatever is there. azstore makes that explicit:
//! pass [`Conditions::none()`].
//!
//! ## Errors
//! One [`Error`] type with a [`ErrorKind`], the HTTP status, the service [`ErrorCode`], and
//! the request id. Bad input is refused before anything is sent.
#![warn(missing_docs)]

pub mod account;
pub mod auth;
pub mod conditions;
pub mod credential;
pub mod error;
pub mod http;
mod names;
mod time_fmt;

#[cfg(test)]
mod proptests;

pub use account::{Endpoint, Service, StorageAccount};
pub use auth::sas::SasBuilder;
pub use conditions::{Conditions, ETag, LeaseId, MatchCondition};
pub use credential::{Credential, SasToken, SharedKeyCredential, TokenProvider};
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

pub use lease::{BreakPeriod, Leasable, LeaseDuration, LeaseGuard};
pub use lock::{BlobLock, HeldLock, LockOptions};

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
