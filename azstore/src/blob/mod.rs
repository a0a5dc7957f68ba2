//! Blob storage: [`BlobServiceClient`] → [`ContainerClient`] → [`BlobClient`].
//!
//! Every write takes [`Conditions`](crate::Conditions): pass `Conditions::if_match(&etag)` for
//! an optimistic update, `Conditions::if_not_exists()` to create only, and
//! `Conditions::none()` when the last writer should win. Operations refuse, with
//! [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) and before sending anything,
//! the conditions the service would reject or silently ignore for them (for example
//! If-Match on Set Container Metadata).
//!
//! # Conditional writes
//!
//! | you want | pass | when it does not hold |
//! |---|---|---|
//! | replace only the version you read | `Conditions::if_match(&etag)` | 412 `ConditionNotMet` |
//! | create only, never overwrite | `Conditions::if_not_exists()` | 409 `BlobAlreadyExists` |
//! | read only if changed | `Conditions::if_none_match(&etag)` | 304 ([`ErrorKind::NotModified`](crate::ErrorKind::NotModified)) |
//! | write only if nobody wrote since `t` | `Conditions::if_unmodified_since(t)` | 412 |
//! | act only on blobs tagged so | `Conditions::if_tags("\"status\" = 'done'")` | 412 |
//! | last writer wins | `Conditions::none()` | — |
//!
//! ```no_run
//! use azstore::{blob::BlobServiceClient, Conditions, StorageAccount};
//!
//! # async fn run() -> azstore::Result<()> {
//! let blobs = BlobServiceClient::new(&StorageAccount::from_env()?)?;
//! let blob = blobs.container("docs")?.blob("page.md")?;
//! let read = blob.download().await?;
//! let edited = [&read.body[..], b"\nmore"].concat();
//! match blob.upload(edited, &Conditions::if_match(&read.properties.etag)).await {
//!     Ok(w) => println!("saved as {}", w.etag),
//!     Err(e) if e.is_precondition_failed() => println!("someone else saved first; re-read"),
//!     Err(e) => return Err(e),
//! }
//! # Ok(()) }
//! ```
//!
//! The same holds for every size: [`BlobClient::upload_with`] stages large bodies in blocks
//! and puts the condition on the final Put Block List, and [`BlobClient::download_stream`]
//! pins the first ETag so a multi-range read never mixes two versions.

mod append;
mod append_url;
mod batch;
mod block;
pub(crate) mod client;
mod container;
mod copy;
mod create;
mod download;
mod from_url;
mod immutability;
mod lease;
mod lifecycle;
mod limits;
pub(crate) mod list;
mod lock;
mod models;
mod names;
mod page;
mod properties;
mod reads;
mod service;
mod soft_delete;
mod tags;
mod transfer;
mod upload;
mod user_delegation;
mod verified;
mod versioned;
mod versions;
mod write_options;
mod xml;

pub use crate::names::validate_metadata;
pub use crate::snapshot::SnapshotId;
pub use crate::status::{LeaseDurationType, LeaseState, LeaseStatus};
pub use crate::storage::checksum::{Checksum, crc64, crc64_base64, md5_base64};
pub use crate::storage::copy_source::{CopySource, SourceAuthorization};
pub use append::{AppendOptions, AppendResult, MAX_APPEND_BLOCK};
pub use batch::MAX_BATCH_SUBREQUESTS;
pub use block::{
    BlockId, BlockInfo, BlockList, BlockListType, BlockOptions, BlockRef, CommitOptions,
    MAX_BLOCK_SIZE, MAX_BLOCKS,
};
pub use client::{
    BlobClient, BlobServiceClient, ContainerClient, Download, PutOptions, WriteResult,
};
pub use container::{
    AclResult, ContainerAcl, ContainerProperties, CreateContainerOptions, PublicAccess,
};
pub use copy::{CopyOptions, CopyResult, CopyStatus};
pub use create::CreateOptions;
pub use download::{BlobStream, DEFAULT_CHUNK, DEFAULT_CONCURRENCY, DownloadOptions, OnChange};
pub use from_url::{CopyTags, PutFromUrlOptions};
pub use lifecycle::{RehydratePriority, SetTierOptions, TierChange};
pub use limits::{MAX_SEQUENCE_NUMBER, PAGE_SIZE};
pub use list::{BlobItem, BlobListItem, ContainerItem, ListInclude, ListOptions};
pub use lock::{
    BULK_STATUS_MIN, BlobLock, BlobLockTarget, BlobLocks, HeldBlobLock, META_ACQUIRED_AT,
    META_FENCING_TOKEN, META_OWNER_HOST, META_OWNER_LABEL, META_OWNER_PID,
};
pub use models::{BlobProperties, BlobType, ImmutabilityPolicy, ImmutabilityPolicyMode};
pub use names::{validate_blob_name, validate_container_name};
pub use page::{
    MAX_PUT_PAGE, PageRangeOptions, PageRanges, PageWriteOptions, PageWriteResult,
    SequenceNumberAction,
};
pub use properties::{DeleteSnapshots, SetMetadataOptions, SnapshotResult};
pub use service::{AccountInfo, TaggedBlob};
pub use tags::Tags;
pub use upload::UploadOptions;
pub use verified::MAX_VERIFIED_RANGE;
pub use versioned::{BlobBytes, BlobJson, WRITE_ID_METADATA};
pub use versions::VersionId;
pub use write_options::{AccessTier, BlobWriteOptions};
