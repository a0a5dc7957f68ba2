//! Share snapshots (create, read a snapshot's properties, delete one or all), metadata reads,
//! and `DirectoryClient::exists`.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::file::models::ShareProperties;
use crate::file::{DirectoryClient, FileClient, ShareClient};
use crate::http::{Method, Response};
use crate::snapshot::SnapshotId;
use crate::storage::StorageRequest;

/// What Snapshot Share returns.
///
/// ```no_run
/// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
/// let snap = share.create_snapshot(&Default::default()).await?;
/// println!("snapshot {} ({})", snap.snapshot, snap.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShareSnapshot {
    /// The snapshot's id (`x-ms-snapshot`), passed back as `sharesnapshot=`.
    pub snapshot: SnapshotId,
    /// The snapshot's ETag.
    pub etag: ETag,
    /// The snapshot's Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

pub(crate) fn check_snapshot_id(snapshot: &str) -> Result<()> {
    // A snapshot id is a timestamp like 2019-05-09T01:12:03.0000000Z.
    if snapshot.is_empty()
        || !snapshot
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | ':' | '.'))
    {
        return Err(Error::invalid_input(format!(
            "share snapshot id {snapshot:?} is not a snapshot timestamp"
        )));
    }
    Ok(())
}

fn metadata_of(resp: &Response) -> Result<(BTreeMap<String, String>, ETag)> {
    Ok((resp.headers.metadata(), resp.headers.require_etag()?))
}

impl ShareClient {
    /// Snapshot Share: a read-only copy of the share as it is now, with `metadata` (empty:
    /// the share's own metadata is copied).
    ///
    /// ```no_run
    /// # async fn f(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let snap = share.create_snapshot(&Default::default()).await?;
    /// let props = share.snapshot_properties(&snap.snapshot).await?;
    /// share.delete_snapshot(&snap.snapshot).await?;
    /// # let _ = props; Ok(()) }
    /// ```
    pub async fn create_snapshot(
        &self,
        metadata: &BTreeMap<String, String>,
    ) -> Result<ShareSnapshot> {
        crate::names::validate_metadata(metadata)?;
        let req = self
            .request(Method::Put)
            .query("comp", "snapshot")
            .metadata(metadata);
        let resp = self.pipeline.send(req).await?;
        Ok(ShareSnapshot {
            snapshot: SnapshotId::new(resp.headers.require("x-ms-snapshot")?),
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
        })
    }

    /// Get Share Properties of the snapshot `snapshot`.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let snap = share.create_snapshot(&Default::default()).await?;
    /// let props = share.snapshot_properties(&snap.snapshot).await?;
    /// println!("{:?}", props.metadata);
    /// # Ok(()) }
    /// ```
    pub async fn snapshot_properties(&self, snapshot: &SnapshotId) -> Result<ShareProperties> {
        let snapshot = snapshot.as_str();
        check_snapshot_id(snapshot)?;
        let req = self.request(Method::Get).query("sharesnapshot", snapshot);
        let resp = self.pipeline.send(req).await?;
        ShareProperties::from_headers(&resp.headers)
    }

    /// Delete Share of one snapshot, leaving the share and its other snapshots.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::file::SnapshotId;
    /// share.delete_snapshot(&SnapshotId::new("2026-11-24T00:00:00.0000000Z")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_snapshot(&self, snapshot: &SnapshotId) -> Result<()> {
        let snapshot = snapshot.as_str();
        check_snapshot_id(snapshot)?;
        let req = self
            .request(Method::Delete)
            .query("sharesnapshot", snapshot);
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Delete Share together with all its snapshots (`x-ms-delete-snapshots: include`). A
    /// plain [`ShareClient::delete`] of a share that has snapshots fails with 409
    /// `ShareHasSnapshots`.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// match share.delete(None).await {
    ///     Err(e) if e.is_conflict() => share.delete_with_snapshots().await?, // ShareHasSnapshots
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_with_snapshots(&self) -> Result<()> {
        let req = self
            .request(Method::Delete)
            .header("x-ms-delete-snapshots", "include");
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Get Share Metadata: the metadata and the share's ETag.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let (metadata, etag) = share.get_metadata().await?;
    /// println!("{metadata:?} at {etag}");
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        let req = self.request(Method::Get).query("comp", "metadata");
        metadata_of(&self.pipeline.send(req).await?)
    }
}

impl DirectoryClient {
    /// Whether the directory exists (Get Directory Properties; 404 means no).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// if !dir.exists().await? {
    ///     dir.create_if_not_exists().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        crate::error::found(self.get_properties().await)
    }

    /// Get Directory Metadata: the metadata and the directory's ETag.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let (metadata, _etag) = dir.get_metadata().await?;
    /// println!("{metadata:?}");
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        let req = self.request(Method::Get).query("comp", "metadata");
        metadata_of(&self.pipeline.send(req).await?)
    }
}

impl FileClient {
    /// Get File Metadata: the metadata and the file's ETag.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let (metadata, etag) = file.get_metadata().await?;
    /// println!("{metadata:?} at {etag}");
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        let req = self.request(Method::Get).query("comp", "metadata");
        metadata_of(&self.pipeline.send(req).await?)
    }
}
