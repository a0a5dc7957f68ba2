//! Snapshots and versions as addressable blobs: a [`BlobClient`] for one snapshot
//! (`?snapshot=`) or one version (`?versionid=`) reads, lists ranges, reads and sets tags,
//! changes the tier and deletes exactly that snapshot or version, with the same methods as the
//! base blob. The service refuses content writes to them (400).
//!
//! ```no_run
//! # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::Conditions;
//! let snap = blob.snapshot(&Conditions::none()).await?;
//! let frozen = blob.at_snapshot(&snap.snapshot);
//! let old = frozen.download().await?; // what the blob held then
//! frozen.delete(&Conditions::none()).await?; // deletes the snapshot only
//! # let _ = old; Ok(()) }
//! ```

use std::sync::Arc;

use crate::blob::client::BlobClient;
use crate::blob::properties::SnapshotId;

/// A blob version id (`x-ms-version-id`, e.g. `2026-11-23T10:00:00.1234567Z`), opaque.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionId(String);

impl VersionId {
    /// Wraps a version id (from `BlobProperties::version_id` or a listing).
    pub fn new(s: impl Into<String>) -> VersionId {
        VersionId(s.into())
    }

    /// The value as sent in `?versionid=`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl BlobClient {
    /// A client for the snapshot `snapshot` of this blob (no request sent). It reads
    /// (download, properties, metadata, tags, block list, page ranges), deletes, and sets the
    /// tier; every other write is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before sending.
    pub fn at_snapshot(&self, snapshot: &SnapshotId) -> BlobClient {
        BlobClient {
            at: Some(("snapshot", Arc::from(snapshot.as_str()))),
            ..self.clone()
        }
    }

    /// A client for the version `version` of this blob (accounts with versioning; no
    /// request sent). Like a snapshot client it reads, deletes and sets the tier, and it can
    /// also set the version's tags; every other write is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before sending.
    pub fn at_version(&self, version: &VersionId) -> BlobClient {
        BlobClient {
            at: Some(("versionid", Arc::from(version.as_str()))),
            ..self.clone()
        }
    }

    /// A client for the base (current) blob.
    pub fn base(&self) -> BlobClient {
        BlobClient {
            at: None,
            ..self.clone()
        }
    }

    /// The snapshot this client addresses, if any.
    pub fn snapshot_id(&self) -> Option<SnapshotId> {
        match &self.at {
            Some(("snapshot", s)) => Some(SnapshotId::new(s.to_string())),
            _ => None,
        }
    }

    /// The version this client addresses, if any.
    pub fn version_id(&self) -> Option<VersionId> {
        match &self.at {
            Some(("versionid", v)) => Some(VersionId::new(v.to_string())),
            _ => None,
        }
    }
}
