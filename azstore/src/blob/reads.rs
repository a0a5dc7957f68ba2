//! Plain reads: the common case needs no condition argument. Each has a conditional twin
//! (`*_if`) that takes [`Conditions`] — a conditional read stays one explicit call away.

use std::collections::BTreeMap;
use std::ops::Range;

use super::{
    AclResult, BlobClient, BlobProperties, BlobStream, BlockList, BlockListType, ContainerClient,
    ContainerProperties, Download, PageRanges, Tags,
};
use crate::conditions::{Conditions, ETag};
use crate::error::Result;

impl BlobClient {
    /// Get Blob: the whole content and the properties of the version read.
    /// For a conditional read (e.g. only if changed) use [`BlobClient::download_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let config: serde_json::Value = match blob.download().await {
    ///     Ok(d) => serde_json::from_slice(&d.body).unwrap_or_default(),
    ///     Err(e) if e.is_not_found() => serde_json::Value::Null,
    ///     Err(e) => return Err(e),
    /// };
    /// # let _ = config; Ok(()) }
    /// ```
    pub async fn download(&self) -> Result<Download> {
        self.download_if(&Conditions::none()).await
    }

    /// Get Blob Properties. Conditional form: [`BlobClient::get_properties_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let props = blob.get_properties().await?;
    /// println!(
    ///     "{} bytes, {:?}, version {}, metadata {:?}",
    ///     props.content_length, props.http_headers.content_type, props.etag, props.metadata
    /// );
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<BlobProperties> {
        self.get_properties_if(&Conditions::none()).await
    }

    /// Get Blob of the byte range `range` (half-open); the properties describe the whole
    /// blob. Conditional form: [`BlobClient::download_range_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let header = blob.download_range(0..512).await?; // the first 512 bytes
    /// println!("{} of {} bytes", header.body.len(), header.properties.content_length);
    /// # Ok(()) }
    /// ```
    pub async fn download_range(&self, range: Range<u64>) -> Result<Download> {
        self.download_range_if(range, &Conditions::none()).await
    }

    /// Streams the blob in chunks of `chunk_size` bytes, every range pinned to the first
    /// response's ETag. Conditional form: [`BlobClient::download_stream_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let mut chunks = blob.download_stream(4 << 20).await?;
    /// let mut total = 0;
    /// while let Some(chunk) = chunks.try_next().await? {
    ///     total += chunk.len(); // at most one 4 MiB chunk in memory
    /// }
    /// println!("{total} bytes");
    /// # Ok(()) }
    /// ```
    pub async fn download_stream(&self, chunk_size: u64) -> Result<BlobStream> {
        self.download_stream_if(&Conditions::none(), chunk_size)
            .await
    }

    /// Get Blob Metadata with the blob's ETag. Conditional form:
    /// [`BlobClient::get_metadata_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let (metadata, etag) = blob.get_metadata().await?;
    /// println!("owner {:?} at version {etag}", metadata.get("owner"));
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        self.get_metadata_if(&Conditions::none()).await
    }

    /// Get Blob Tags. Conditional form: [`BlobClient::get_tags_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let tags = blob.get_tags().await?;
    /// println!("project = {:?}", tags.get("project"));
    /// # Ok(()) }
    /// ```
    pub async fn get_tags(&self) -> Result<Tags> {
        self.get_tags_if(&Conditions::none()).await
    }

    /// Get Page Ranges of a page blob. Conditional form: [`BlobClient::get_page_ranges_if`].
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let ranges = disk.get_page_ranges().await?;
    /// println!("{:?}", ranges);
    /// # Ok(()) }
    /// ```
    pub async fn get_page_ranges(&self) -> Result<PageRanges> {
        self.get_page_ranges_if(&Conditions::none()).await
    }

    /// Get Block List. With a lease id: [`BlobClient::get_block_list_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::BlockListType;
    /// let list = blob.get_block_list(BlockListType::All).await?;
    /// println!("{} committed, {} staged", list.committed.len(), list.uncommitted.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_block_list(&self, which: BlockListType) -> Result<BlockList> {
        self.get_block_list_if(which, &Conditions::none()).await
    }
}

impl ContainerClient {
    /// Get Container Properties. With a lease id: [`ContainerClient::get_properties_if`].
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let props = container.get_properties().await?;
    /// println!("{:?}, public access {:?}", props.lease_state, props.public_access);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<ContainerProperties> {
        self.get_properties_if(&Conditions::none()).await
    }

    /// Get Container Metadata. With a lease id: [`ContainerClient::get_metadata_if`].
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let (metadata, etag) = container.get_metadata().await?;
    /// println!("{metadata:?} at {etag}");
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        self.get_metadata_if(&Conditions::none()).await
    }

    /// Get Container ACL. With a lease id: [`ContainerClient::get_access_policy_if`].
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let acl = container.get_access_policy().await?;
    /// println!("{:?} (version {})", acl.acl, acl.etag);
    /// # Ok(()) }
    /// ```
    pub async fn get_access_policy(&self) -> Result<AclResult> {
        self.get_access_policy_if(&Conditions::none()).await
    }
}
