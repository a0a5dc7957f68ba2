//! Blob soft delete: restoring a deleted blob (Undelete Blob). Listing deleted blobs is
//! [`ListOptions::with_deleted`](crate::blob::ListOptions::with_deleted); turning soft delete
//! on is the Blob service's delete retention policy, see
//! [`BlobServiceClient::set_properties`](crate::blob::BlobServiceClient::set_properties).

use crate::blob::client::BlobClient;
use crate::error::Result;
use crate::http::Method;

impl BlobClient {
    /// Undelete Blob: restores this soft-deleted blob and its soft-deleted snapshots (a
    /// no-op for a blob that is not deleted). Works only while the service's delete
    /// retention policy keeps the deleted data.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// blob.delete(&azstore::Conditions::none()).await?;
    /// blob.undelete().await?; // back, with the same content and ETag
    /// # Ok(()) }
    /// ```
    pub async fn undelete(&self) -> Result<()> {
        self.pipeline
            .send(
                self.write_request(Method::Put, "Undelete Blob")?
                    .query("comp", "undelete"),
            )
            .await?;
        Ok(())
    }
}
