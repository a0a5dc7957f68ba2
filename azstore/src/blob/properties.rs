//! Blob properties, metadata, snapshots, deletion options and index tags.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::blob::client::{BlobClient, Download, Resource, WriteResult};
use crate::blob::tags::{TAGS_ONLY, Tags, validate_tags};
use crate::blob::xml;
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::Result;
use crate::http::Method;
use crate::http_headers::HttpHeaders;
use crate::snapshot::SnapshotId;
use crate::storage::StorageRequest;

/// What happens to snapshots when a blob is deleted (`x-ms-delete-snapshots`).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::DeleteSnapshots;
/// match blob.delete_with(DeleteSnapshots::Fail, &Conditions::none()).await {
///     Err(e) if e.is_conflict() => println!("it has snapshots: kept"),
///     other => other?,
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DeleteSnapshots {
    /// Delete the blob and all its snapshots.
    #[default]
    Include,
    /// Delete only the snapshots, keep the blob.
    Only,
    /// Send no option: the service refuses (409 `SnapshotsPresent`) if snapshots exist.
    Fail,
}

/// Options of [`BlobClient::set_metadata_with`].
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct SetMetadataOptions {
    /// Conditions (every kind is accepted).
    pub conditions: Conditions,
    /// The blob's encryption scope (`x-ms-encryption-scope`): the metadata is written with
    /// it, as the service requires for a blob in a scope other than the account's default.
    pub encryption_scope: Option<String>,
}

impl SetMetadataOptions {
    /// Conditions of the write (every kind is accepted; default: none, last writer wins).
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }
}

crate::blob::write_options::existing_scope_builder!(
    SetMetadataOptions,
    "SetMetadataOptions::default()"
);

/// What Snapshot Blob returns.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let snap = blob.snapshot(&azstore::Conditions::none()).await?;
/// println!("snapshot {} (version {})", snap.snapshot.as_str(), snap.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct SnapshotResult {
    /// The snapshot's id.
    pub snapshot: SnapshotId,
    /// The ETag of the snapshot (the base blob's ETag does not change).
    pub etag: ETag,
    /// Last-Modified of the snapshot.
    pub last_modified: Option<OffsetDateTime>,
}

impl BlobClient {
    /// Set Blob Properties: replaces the blob's HTTP headers (all of them; see
    /// [`HttpHeaders`]). Changes the ETag. Accepts every condition.
    pub async fn set_http_headers(
        &self,
        headers: &HttpHeaders,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(Allowed::ALL, "Set Blob Properties")?;
        let req = self
            .write_request(Method::Put, "Set Blob Properties")?
            .query("comp", "properties")
            .conditions(conditions);
        let req = headers.apply(req, crate::storage::http_headers::HeaderNames::Blob);
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }

    /// Get Blob Metadata: the metadata and the blob's ETag. Accepts every condition.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// # let cached = azstore::ETag::new("\"0x1\"");
    /// match blob.get_metadata_if(&Conditions::if_none_match(&cached)).await {
    ///     Ok((metadata, etag)) => println!("changed: {metadata:?} at {etag}"),
    ///     Err(e) if e.is_not_modified() => println!("unchanged"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata_if(
        &self,
        conditions: &Conditions,
    ) -> Result<(BTreeMap<String, String>, ETag)> {
        self.read_metadata(conditions, "Get Blob Metadata").await
    }

    /// Set Blob Metadata: replaces all metadata. Changes the ETag. Accepts every condition.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// // Add one pair without losing the others or a concurrent change.
    /// let (mut metadata, etag) = blob.get_metadata().await?;
    /// metadata.insert("reviewed".into(), "yes".into());
    /// blob.set_metadata(&metadata, &Conditions::if_match(&etag)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(
        &self,
        metadata: &BTreeMap<String, String>,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(Allowed::ALL, "Set Blob Metadata")?;
        let req = self.write_request(Method::Put, "Set Blob Metadata")?;
        crate::blob::client::set_metadata_with(&self.pipeline, req, metadata, conditions).await
    }

    /// Set Blob Metadata with options: conditions and the blob's encryption scope.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::SetMetadataOptions;
    /// let meta = [("owner".to_string(), "ops".to_string())].into();
    /// blob.set_metadata_with(&meta, &SetMetadataOptions::default().encryption_scope("scope1"))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata_with(
        &self,
        metadata: &BTreeMap<String, String>,
        options: &SetMetadataOptions,
    ) -> Result<WriteResult> {
        options
            .conditions
            .check(Allowed::ALL, "Set Blob Metadata")?;
        let req = self.write_request(Method::Put, "Set Blob Metadata")?;
        let req =
            crate::blob::write_options::scope_header(req, options.encryption_scope.as_deref())?;
        crate::blob::client::set_metadata_with(&self.pipeline, req, metadata, &options.conditions)
            .await
    }

    /// Snapshot Blob: a read-only copy of the blob as it is now. The base blob's ETag does
    /// not change. Conditions apply to the base blob.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let snap = blob.snapshot(&Conditions::none()).await?;
    /// println!("snapshot {} taken", snap.snapshot.as_str());
    /// // ... later: read it back, or delete it.
    /// let old = blob.download_snapshot(&snap.snapshot).await?;
    /// blob.delete_snapshot(&snap.snapshot).await?;
    /// # let _ = old;
    /// # Ok(()) }
    /// ```
    pub async fn snapshot(&self, conditions: &Conditions) -> Result<SnapshotResult> {
        conditions.check(Allowed::ALL, "Snapshot Blob")?;
        let resp = self
            .send_comp(
                self.write_request(Method::Put, "Snapshot Blob")?,
                "snapshot",
                conditions,
            )
            .await?;
        Ok(SnapshotResult {
            snapshot: SnapshotId::new(resp.headers.require("x-ms-snapshot")?),
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
        })
    }

    /// Get Blob of a snapshot.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::SnapshotId;
    /// let snapshot = SnapshotId::new("2026-11-25T06:00:00.0000000Z");
    /// let then = blob.download_snapshot(&snapshot).await?;
    /// println!("{} bytes then", then.body.len());
    /// # Ok(()) }
    /// ```
    pub async fn download_snapshot(&self, snapshot: &SnapshotId) -> Result<Download> {
        let resp = self
            .pipeline
            .send(
                self.request(Method::Get)
                    .query("snapshot", snapshot.as_str()),
            )
            .await?;
        Download::from_response(resp)
    }

    /// Delete Blob with an explicit snapshot option. Accepts every condition.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::DeleteSnapshots;
    /// // Drop the old snapshots, keep the blob.
    /// blob.delete_with(DeleteSnapshots::Only, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_with(
        &self,
        snapshots: DeleteSnapshots,
        conditions: &Conditions,
    ) -> Result<()> {
        conditions.check(Allowed::ALL, "Delete Blob")?;
        if let (Some((kind, id)), DeleteSnapshots::Include | DeleteSnapshots::Only) =
            (&self.at, snapshots)
        {
            // A snapshot or version is deleted alone; the service refuses the header there.
            return Err(crate::blob::client::read_only(
                "Delete Blob with x-ms-delete-snapshots",
                kind,
                id,
            ));
        }
        let value = match snapshots {
            DeleteSnapshots::Include => Some("include"),
            DeleteSnapshots::Only => Some("only"),
            DeleteSnapshots::Fail => None,
        };
        self.pipeline
            .send(
                self.request(Method::Delete)
                    .header_opt("x-ms-delete-snapshots", value)
                    .conditions(conditions),
            )
            .await?;
        Ok(())
    }

    /// Deletes one snapshot of this blob.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::SnapshotId;
    /// blob.delete_snapshot(&SnapshotId::new("2026-11-25T06:00:00.0000000Z")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_snapshot(&self, snapshot: &SnapshotId) -> Result<()> {
        self.pipeline
            .send(
                self.write_request(Method::Delete, "Delete Blob")?
                    .query("snapshot", snapshot.as_str()),
            )
            .await?;
        Ok(())
    }

    /// Get Blob Tags. Accepts `x-ms-if-tags` and a lease id only.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let tags = blob.get_tags_if(&Conditions::if_tags(r#""project" = 'apollo'"#)).await?;
    /// println!("{tags:?}");
    /// # Ok(()) }
    /// ```
    pub async fn get_tags_if(&self, conditions: &Conditions) -> Result<Tags> {
        conditions.check(TAGS_ONLY, "Get Blob Tags")?;
        let resp = self
            .send_comp(self.request(Method::Get), "tags", conditions)
            .await?;
        let raw: xml::RawTags = xml::parse(&resp.body, "Get Blob Tags")?;
        Ok(raw.into_tags())
    }

    /// Set Blob Tags, replacing all tags. Does not change the ETag. Accepts `x-ms-if-tags`
    /// and a lease id only; the tags are validated before sending. Works on the base blob
    /// and on a version (`at_version`); a snapshot's tags cannot be set (refused before
    /// sending: the service takes no `snapshot=` here).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let mut tags = blob.get_tags().await?;
    /// tags.insert("status".into(), "archived".into());
    /// blob.set_tags(&tags, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_tags(&self, tags: &Tags, conditions: &Conditions) -> Result<()> {
        conditions.check(TAGS_ONLY, "Set Blob Tags")?;
        if let Some(("snapshot", id)) = &self.at {
            return Err(crate::blob::client::read_only(
                "Set Blob Tags",
                "snapshot",
                id,
            ));
        }
        validate_tags(tags)?;
        let mut body = String::from(r#"<?xml version="1.0" encoding="utf-8"?><Tags><TagSet>"#);
        for (k, v) in tags {
            body.push_str(&format!(
                "<Tag><Key>{}</Key><Value>{}</Value></Tag>",
                xml::escape(k),
                xml::escape(v)
            ));
        }
        body.push_str("</TagSet></Tags>");
        self.pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "tags")
                    .conditions(conditions)
                    .body(body, "application/xml"),
            )
            .await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tag_rules() {
        let one = |k: &str, v: &str| Tags::from([(k.to_string(), v.to_string())]);
        assert!(validate_tags(&one("status", "done-2026/11:ok")).is_ok());
        assert!(validate_tags(&one("", "x")).is_err());
        assert!(validate_tags(&one("a", "x;y")).is_err());
        let many: Tags = (0..11)
            .map(|i| (format!("k{i}"), "v".to_string()))
            .collect();
        assert!(validate_tags(&many).is_err());
    }
}
