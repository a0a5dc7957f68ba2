//! Queue properties and metadata (no ETag: **last writer wins**).

use std::collections::BTreeMap;

use crate::error::Result;
use crate::http::Method;
use crate::queue::client::QueueClient;
use crate::storage::StorageRequest;

/// Get Queue Properties: the approximate message count and the metadata.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// let p = queue.get_properties().await?;
/// println!("~{} messages, metadata {:?}", p.approximate_message_count, p.metadata);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueProperties {
    /// Approximate number of messages (may lag; includes invisible ones).
    pub approximate_message_count: u64,
    /// Queue metadata.
    pub metadata: BTreeMap<String, String>,
}

impl QueueClient {
    /// Get Queue Metadata: approximate message count and metadata.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// let props = queue.get_properties().await?;
    /// println!("about {} messages waiting", props.approximate_message_count);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<QueueProperties> {
        let resp = self
            .pipeline
            .send(self.request(Method::Get).query("comp", "metadata"))
            .await?;
        Ok(QueueProperties {
            approximate_message_count: resp
                .headers
                .parse("x-ms-approximate-messages-count")?
                .unwrap_or(0),
            metadata: resp.headers.metadata(),
        })
    }

    /// Whether the queue exists.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// if !queue.exists().await? {
    ///     eprintln!("queue {} is missing: run the set-up first", queue.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        crate::error::found(self.get_properties().await)
    }

    /// Set Queue Metadata, replacing all metadata. **Last writer wins**: there is no
    /// condition to make this safe against a concurrent writer.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// let mut metadata = queue.get_properties().await?.metadata;
    /// metadata.insert("owner".into(), "imaging".into());
    /// queue.set_metadata(&metadata).await?; // last writer wins
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<()> {
        self.pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "metadata")
                    .metadata(metadata),
            )
            .await?;
        Ok(())
    }
}
