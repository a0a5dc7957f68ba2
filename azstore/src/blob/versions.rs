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
use crate::snapshot::SnapshotId;

/// A blob version id (`x-ms-version-id`, e.g. `2026-11-23T10:00:00.1234567Z`), opaque.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::blob::{BlobListItem, ListInclude, ListOptions, VersionId};
/// let mut entries = container.list_blobs(ListOptions::default().prefix("config.json").including(ListInclude::Versions));
/// while let Some(BlobListItem::Blob(b)) = entries.try_next().await? {
///     if let Some(v) = b.version_id {
///         let old = container.blob(&b.name)?.at_version(&VersionId::new(v));
///         println!("{} bytes", old.get_properties().await?.content_length);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct VersionId(String);

impl VersionId {
    /// Wraps a version id (from `BlobProperties::version_id` or a listing).
    ///
    /// ```
    /// let v = azstore::blob::VersionId::new("2026-11-23T10:00:00.1234567Z");
    /// assert_eq!(v.as_str(), "2026-11-23T10:00:00.1234567Z");
    /// ```
    pub fn new(s: impl Into<String>) -> VersionId {
        VersionId(s.into())
    }

    /// The value as sent in `?versionid=`.
    ///
    /// ```
    /// let v = azstore::blob::VersionId::new("2026-11-23T10:00:00.1234567Z");
    /// println!("?versionid={}", v.as_str());
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl BlobClient {
    /// A client for the snapshot `snapshot` of this blob (no request sent). It reads
    /// (download, properties, metadata, tags, block list, page ranges), deletes, and sets the
    /// tier; every other write is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before sending.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let snap = blob.snapshot(&Conditions::none()).await?;
    /// let frozen = blob.at_snapshot(&snap.snapshot);
    /// let then = frozen.download().await?; // reads work
    /// assert!(frozen.upload("x", &Conditions::none()).await.is_err()); // writes are refused
    /// # let _ = then;
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::VersionId;
    /// let old = blob.at_version(&VersionId::new("2026-11-23T10:00:00.1234567Z"));
    /// let body = old.download().await?.body;
    /// # let _ = body;
    /// # Ok(()) }
    /// ```
    pub fn at_version(&self, version: &VersionId) -> BlobClient {
        BlobClient {
            at: Some(("versionid", Arc::from(version.as_str()))),
            ..self.clone()
        }
    }

    /// A client for the base (current) blob.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::SnapshotId;
    /// let snap = blob.at_snapshot(&SnapshotId::new("2026-11-24T00:00:00.0000000Z"));
    /// let current = snap.base();
    /// assert_eq!(current.snapshot_id(), None);
    /// # let _ = current;
    /// # Ok(()) }
    /// ```
    pub fn base(&self) -> BlobClient {
        BlobClient {
            at: None,
            ..self.clone()
        }
    }

    /// The snapshot this client addresses, if any.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::SnapshotId;
    /// let id = SnapshotId::new("2026-11-24T00:00:00.0000000Z");
    /// assert_eq!(blob.at_snapshot(&id).snapshot_id(), Some(id));
    /// # Ok(()) }
    /// ```
    pub fn snapshot_id(&self) -> Option<SnapshotId> {
        match &self.at {
            Some(("snapshot", s)) => Some(SnapshotId::new(s.to_string())),
            _ => None,
        }
    }

    /// The version this client addresses, if any.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// assert_eq!(blob.version_id(), None); // the base blob
    /// # Ok(()) }
    /// ```
    pub fn version_id(&self) -> Option<VersionId> {
        match &self.at {
            Some(("versionid", v)) => Some(VersionId::new(v.to_string())),
            _ => None,
        }
    }
}
