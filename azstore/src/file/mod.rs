//! Azure Files: [`ShareServiceClient`] → [`ShareClient`] → [`DirectoryClient`] →
//! [`FileClient`], with file and share leases and SMB-conflict handling.
//!
//! # Concurrency on Azure Files
//!
//! * **Last writer wins.** The File REST API has no `If-Match`/`If-None-Match`: a write
//!   replaces what is there. azstore's file API therefore takes no
//!   [`Conditions`](crate::Conditions) at all — asking for a condition the service cannot
//!   honour does not compile (see [`FileClient`]), instead of being silently ignored.
//! * **File leases** are the lock for REST writers: infinite only, no renew
//!   ([`FileClient::acquire_lease`], or held by a
//!   [`LeaseGuard<FileClient>`](crate::lease::LeaseGuard)). While held, every write and delete
//!   must carry the lease id (`Option<&LeaseId>` on each write); others get 412.
//! * **Share leases** (15–60 s or infinite, renewable) guard deleting the share; a
//!   [`LeaseGuard<ShareClient>`](crate::lease::LeaseGuard) renews one in the background.
//! * **SMB handles** lock files for REST callers too: 409 `SharingViolation`,
//!   `FileLockConflict` or `DeletePending` ([`Error::smb_conflict`](crate::Error::smb_conflict)),
//!   waited out by [`retry_smb_conflicts`].
//!
//! ```no_run
//! # async fn demo() -> azstore::Result<()> {
//! use azstore::StorageAccount;
//! use azstore::file::{ShareServiceClient, TransferOptions};
//! use azstore::lease::{LeaseDuration, LeaseGuard};
//!
//! let share = ShareServiceClient::new(&StorageAccount::from_env()?)?.share("reports")?;
//! share.create_if_not_exists().await?;
//! let file = share.file("q3.csv")?;
//! let lease = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite).await?;
//! file.upload(bytes::Bytes::from_static(b"a,b\n1,2\n"), &TransferOptions::default(), Some(lease.lease_id())).await?;
//! lease.release().await?;
//! # Ok(()) }
//! ```

mod copy;
mod directory;
mod file_client;
mod handles;
pub(crate) mod http_headers;
mod lease;
mod list_shares;
mod models;
mod names;
mod options;
mod range_from_url;
mod rename;
mod service;
mod set_properties;
mod share;
mod share_properties;
mod smb;
mod smb_properties;
mod snapshots;
mod transfer;

pub use crate::snapshot::SnapshotId;
pub use crate::status::{CopyStatus, LeaseDurationType, LeaseState, LeaseStatus};
pub use crate::storage::checksum::Checksum;
pub use copy::{CopyFileOptions, FileCopy};
pub use directory::{DirectoryClient, ListOptions};
pub use file_client::{FileClient, FileDownload, FileStream};
pub use handles::{ClosedHandles, Handle, HandlePage, HandleSelector};
pub use list_shares::{ListSharesOptions, ShareItem, SharePage};
pub use models::{
    DirectoryProperties, FileCopyInfo, FileProperties, FileWrite, LeaseInfo, ListEntry, ListItem,
    ListPage, RangeList, ShareProperties,
};
pub use names::{
    MAX_DEPTH, MAX_NAME_CHARS, MAX_PATH_CHARS, validate_name, validate_path, validate_share_name,
};
pub use options::{CreateDirectoryOptions, CreateFileOptions, MAX_RANGE_SIZE, TransferOptions};
pub use range_from_url::{LastWriteTime, RangeFromUrlOptions};
pub use rename::RenameOptions;
pub use service::ShareServiceClient;
pub use set_properties::SetFileProperties;
pub use share::ShareClient;
pub use share_properties::ShareOptions;
pub use smb::{SmbConflict, SmbRetry, retry_smb_conflicts};
pub use smb_properties::{
    FileAttributes, FilePermission, MAX_INLINE_PERMISSION, SmbProperties, SmbTime,
};
pub use snapshots::ShareSnapshot;
