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
    pub async fn download(&self) -> Result<Download> {
        self.download_if(&Conditions::none()).await
    }

    /// Get Blob Properties. Conditional form: [`BlobClient::get_properties_if`].
    pub async fn get_properties(&self) -> Result<BlobProperties> {
        self.get_properties_if(&Conditions::none()).await
    }

    /// Get Blob of the byte range `range` (half-open); the properties describe the whole
    /// blob. Conditional form: [`BlobClient::download_range_if`].
    pub async fn download_range(&self, range: Range<u64>) -> Result<Download> {
        self.download_range_if(range, &Conditions::none()).await
    }

    /// Streams the blob in chunks of `chunk_size` bytes, every range pinned to the first
    /// response's ETag. Conditional form: [`BlobClient::download_stream_if`].
    pub async fn download_stream(&self, chunk_size: u64) -> Result<BlobStream> {
        self.download_stream_if(&Conditions::none(), chunk_size)
            .await
    }

    /// Get Blob Metadata with the blob's ETag. Conditional form:
    /// [`BlobClient::get_metadata_if`].
    pub async fn get_metadata(&self) -> Result<(BTreeMap<String, String>, ETag)> {
        self.get_metadata_if(&Conditions::none()).await
    }

    /// Get Blob Tags. Conditional form: [`BlobClient::get_tags_if`].
    pub async fn get_tags(&self) -> Result<Tags> {
        self.get_tags_if(&Conditions::none()).await
    }

    /// Get Page Ranges of a page blob. Conditional form: [`BlobClient::get_page_ranges_if`].
    pub async fn get_page_ranges(&self) -> Result<PageRanges> {
        self.get_page_ranges_if(&Conditions::none()).await
    }

    /// Get Block List. With a lease id: [`BlobClient::get_block_list_if`].
    pub async fn get_block_list(&self, which: BlockListType) -> Result<BlockList> {
        self.get_block_list_if(which, &Conditions::none()).await
    }
}

impl ContainerClient {
    /// Get Container Properties. With a lease id: [`ContainerClient::get_properties_if`].
    pub async fn get_properties(&self) -> Result<ContainerProperties> {
        self.get_properties_if(&Conditions::none()).await
    }

    /// Get Container Metadata. With a lease id: [`ContainerClient::get_metadata_if`].
    pub async fn get_metadata(&self) -> Result<ContainerProperties> {
        self.get_metadata_if(&Conditions::none()).await
    }

    /// Get Container ACL. With a lease id: [`ContainerClient::get_acl_if`].
    pub async fn get_acl(&self) -> Result<AclResult> {
        self.get_acl_if(&Conditions::none()).await
    }
}
