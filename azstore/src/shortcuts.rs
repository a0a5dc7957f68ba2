//! One-line clients from an account: `account.blob("container", "name")?`.
//!
//! Each call builds its own service client and so its own connection pool. To share one pool
//! among many clients, build the service client once (`BlobServiceClient::new(&account)?`) and
//! derive the others from it.

use crate::account::StorageAccount;
use crate::blob::{BlobClient, BlobServiceClient, ContainerClient};
use crate::error::Result;
use crate::file::{DirectoryClient, FileClient, ShareClient, ShareServiceClient};
use crate::queue::{QueueClient, QueueServiceClient};
use crate::table::{TableClient, TableServiceClient};

impl StorageAccount {
    /// A client for the blob `name` in `container`. Fails (before any request) only on an
    /// invalid name or an account without a Blob endpoint.
    ///
    /// ```no_run
    /// # async fn f() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::from_env()?;
    /// let text = account.blob("docs", "readme.md")?.download().await?.body;
    /// # let _ = text; Ok(()) }
    /// ```
    pub fn blob(&self, container: &str, name: &str) -> Result<BlobClient> {
        self.container(container)?.blob(name)
    }

    /// A client for the container `name` (validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// let uploads = account.container("uploads")?;
    /// uploads.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn container(&self, name: &str) -> Result<ContainerClient> {
        BlobServiceClient::new(self)?.container(name)
    }

    /// A client for the queue `name` (validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// account.queue("emails")?.put_message("welcome:42").await?;
    /// # Ok(()) }
    /// ```
    pub fn queue(&self, name: &str) -> Result<QueueClient> {
        QueueServiceClient::new(self)?.queue(name)
    }

    /// A client for the table `name` (validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// let visits = account.table("visits")?;
    /// visits.create_if_not_exists().await?;
    /// visits.insert_or_merge(&Entity::new("2026-11-25", "home").with("Count", 1_i64)).await?;
    /// # Ok(()) }
    /// ```
    pub fn table(&self, name: &str) -> Result<TableClient> {
        TableServiceClient::new(self)?.table(name)
    }

    /// A client for the file share `name` (validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// let share = account.share("team-docs")?;
    /// share.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn share(&self, name: &str) -> Result<ShareClient> {
        ShareServiceClient::new(self)?.share(name)
    }

    /// A client for the file at `path` (`dir/sub/file.txt`) in `share` (validated, no request
    /// sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// let report = account.file("team-docs", "2026/report.pdf")?;
    /// let bytes = report.download(&azstore::file::TransferOptions::default()).await?;
    /// # let _ = bytes; Ok(()) }
    /// ```
    pub fn file(&self, share: &str, path: &str) -> Result<FileClient> {
        self.share(share)?.file(path)
    }

    /// A client for the directory at `path` in `share` (validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// let dir = account.directory("team-docs", "2026")?;
    /// dir.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn directory(&self, share: &str, path: &str) -> Result<DirectoryClient> {
        self.share(share)?.directory(path)
    }
}
