//! [`ShareClient`]: one file share (create, properties, metadata, delete) and the clients of
//! its directories and files.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::file::directory::DirectoryClient;
use crate::file::file_client::FileClient;
use crate::file::models::{FileWrite, ShareProperties};
use crate::file::names::validate_path;
use crate::http::{Method, Pipeline, Request};

/// One file share. Cheap to clone.
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::file::TransferOptions;
/// let share = account.share("team-docs")?;
/// share.create_if_not_exists().await?;
/// share.directory("2026")?.create_if_not_exists().await?;
/// share.file("2026/notes.txt")?.upload("hello".into(), &TransferOptions::default(), None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ShareClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
}

named_client!(ShareClient, "share");

impl ShareClient {
    /// The root directory.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let top = share.root().list_all(None).await?;
    /// println!("{} entries at the top", top.len());
    /// # Ok(()) }
    /// ```
    pub fn root(&self) -> DirectoryClient {
        DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.name.clone(),
            path: "".into(),
        }
    }

    /// A client for the directory at `path` (`a/b`, validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// share.directory("2026/11")?.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn directory(&self, path: &str) -> Result<DirectoryClient> {
        validate_path(path)?;
        Ok(DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.name.clone(),
            path: path.into(),
        })
    }

    /// A client for the file at `path` (`a/b/c.txt`, validated, no request sent).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// let text = share.file("2026/notes.txt")?.download(&TransferOptions::default()).await?.body;
    /// # let _ = text;
    /// # Ok(()) }
    /// ```
    pub fn file(&self, path: &str) -> Result<FileClient> {
        if path.is_empty() {
            return Err(Error::invalid_input("a file path must not be empty"));
        }
        validate_path(path)?;
        Ok(FileClient {
            pipeline: self.pipeline.clone(),
            share: self.name.clone(),
            path: path.into(),
        })
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        Request::new(method, &self.name).query("restype", "share")
    }

    /// Creates the share unless it exists. Returns `true` when this call created it.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// share.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::created_unless(self.create().await, ErrorCode::ShareAlreadyExists)
    }

    /// Get Share Properties (metadata, quota, lease state).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let props = share.get_properties().await?;
    /// println!("quota {:?} GiB, tier {:?}", props.quota_gib, props.access_tier);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<ShareProperties> {
        // GET (the REST API allows GET and HEAD): error answers then carry their body, and it
        // is what the official SDKs send to Azure.
        let resp = self.pipeline.send(self.request(Method::Get)).await?;
        ShareProperties::from_headers(&resp.headers)
    }

    /// Set Share Metadata, replacing all metadata (last writer wins).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let mut metadata = share.get_properties().await?.metadata;
    /// metadata.insert("owner".into(), "finance".into());
    /// share.set_metadata(&metadata).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<FileWrite> {
        FileWrite::set_metadata(&self.pipeline, self.request(Method::Put), metadata).await
    }
}
