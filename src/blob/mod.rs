//! Blob storage: [`BlobServiceClient`] → [`ContainerClient`] → [`BlobClient`].
//!
//! Every write takes [`Conditions`](crate::Conditions): pass `Conditions::if_match(&etag)` for
//! an optimistic update, `Conditions::if_not_exists()` to create only, and
//! `Conditions::none()` when the last writer should win. Operations refuse, with
//! [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) and before sending anything,
//! the conditions the service would reject or silently ignore for them (for example
//! If-Match on Set Container Metadata).

mod append;
mod block;
mod client;
mod container;
mod copy;
mod download;
mod list;
mod models;
mod names;
mod page;
mod properties;
mod upload;
mod xml;

pub use append::{AppendOptions, AppendResult, CreateOptions, MAX_APPEND_BLOCK};
pub use block::{
    BlockId, BlockInfo, BlockList, BlockListType, BlockRef, CommitOptions, MAX_BLOCK_SIZE,
    MAX_BLOCKS,
};
pub use client::{
    BlobClient, BlobServiceClient, ContainerClient, Download, PutOptions, WriteResult,
};
pub use container::{AclResult, ContainerAcl, ContainerProperties, PublicAccess, SignedIdentifier};
pub use copy::{CopyOptions, CopyResult, CopyStatus};
pub use download::{BlobStream, DEFAULT_CHUNK, DownloadOptions, OnChange};
pub use list::{BlobItem, BlobListItem, ContainerItem, ListOptions, Page, ResultStream};
pub use models::{BlobProperties, BlobType, LeaseDurationType, LeaseState, LeaseStatus};
pub use names::{validate_blob_name, validate_container_name, validate_metadata};
pub use page::{MAX_PUT_PAGE, PAGE_SIZE, PageRanges};
pub use properties::{BlobHttpHeaders, DeleteSnapshots, SnapshotId, SnapshotResult, Tags};
pub use upload::UploadOptions;
