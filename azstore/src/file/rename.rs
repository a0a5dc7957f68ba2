//! Rename File and Rename Directory: an atomic move within a share, with the options of the
//! REST API (replace an existing destination, ignore its read-only attribute, the lease ids
//! of a leased source or destination, and the SMB properties, metadata and content type the
//! renamed entry gets).
//!
//! ```no_run
//! # async fn f(share: azstore::file::ShareClient) -> azstore::Result<()> {
//! use azstore::file::RenameOptions;
//! let staged = share.file("incoming/report.csv.part")?;
//! // Publish atomically: readers see the old report or the new one, never a partial file.
//! let published = staged
//!     .rename("reports/report.csv", &RenameOptions::default().replace_if_exists(true))
//!     .await?;
//! # let _ = published; Ok(()) }
//! ```

use std::collections::BTreeMap;

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::models::FileWrite;
use crate::file::{DirectoryClient, FileClient};
use crate::http::{Method, Request};
use crate::storage::StorageRequest;

/// Options of [`FileClient::rename`] and [`DirectoryClient::rename`].
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::RenameOptions;
/// // Replace whatever is at the destination, read-only or not.
/// let options = RenameOptions::default().replace_if_exists(true).ignore_read_only(true);
/// file.rename("current/report.pdf", &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct RenameOptions {
    /// Replace an existing file at the destination (`x-ms-file-rename-replace-if-exists`);
    /// without it an existing destination fails with 409 `ResourceAlreadyExists`.
    pub replace_if_exists: bool,
    /// Replace the destination even if it is read-only
    /// (`x-ms-file-rename-ignore-readonly`; needs `replace_if_exists`).
    pub ignore_read_only: bool,
    /// The lease of a leased source file (`x-ms-source-lease-id`).
    pub source_lease: Option<LeaseId>,
    /// The lease of a leased destination file being replaced (`x-ms-destination-lease-id`).
    pub destination_lease: Option<LeaseId>,
    /// SMB properties the renamed file or directory gets (attributes, creation / last-write
    /// / change time, permission or permission key); what is left `None` is kept.
    pub smb: crate::file::SmbProperties,
    /// Metadata the renamed file or directory gets (`x-ms-meta-*`), replacing its own; empty:
    /// it keeps its own.
    pub metadata: BTreeMap<String, String>,
    /// The content type the renamed file gets (`x-ms-content-type`; files only); `None`: it
    /// keeps its own.
    pub content_type: Option<String>,
}

impl RenameOptions {
    /// Whether an existing file at the destination is replaced
    /// (`x-ms-file-rename-replace-if-exists`). Default false: an existing destination
    /// fails the rename with 409 `ResourceAlreadyExists`.
    ///
    /// ```
    /// let options = azstore::file::RenameOptions::default().replace_if_exists(true);
    /// # let _ = options;
    /// ```
    pub fn replace_if_exists(mut self, v: bool) -> Self {
        self.replace_if_exists = v;
        self
    }

    /// Whether a read-only destination is replaced too (`x-ms-file-rename-ignore-readonly`;
    /// needs [`replace_if_exists`](Self::replace_if_exists)). Default false: a read-only
    /// destination fails the rename.
    ///
    /// ```
    /// let options = azstore::file::RenameOptions::default()
    ///     .replace_if_exists(true)
    ///     .ignore_read_only(true);
    /// # let _ = options;
    /// ```
    pub fn ignore_read_only(mut self, v: bool) -> Self {
        self.ignore_read_only = v;
        self
    }

    /// The source's lease id, for a leased source file (default: none).
    ///
    /// ```
    /// let lease = azstore::LeaseId::random();
    /// let options = azstore::file::RenameOptions::default().source_lease(&lease);
    /// # let _ = options;
    /// ```
    pub fn source_lease(mut self, id: &crate::conditions::LeaseId) -> Self {
        self.source_lease = Some(id.clone());
        self
    }

    /// The lease id of a leased destination file being replaced (default: none).
    ///
    /// ```
    /// let lease = azstore::LeaseId::random();
    /// let options = azstore::file::RenameOptions::default().replace_if_exists(true).destination_lease(&lease);
    /// # let _ = options;
    /// ```
    pub fn destination_lease(mut self, id: &crate::conditions::LeaseId) -> Self {
        self.destination_lease = Some(id.clone());
        self
    }

    /// SMB properties (attributes, times, permission) the renamed entry gets in the same
    /// call. Default: none sent, so the entry keeps its own.
    pub fn smb(mut self, v: crate::file::SmbProperties) -> Self {
        self.smb = v;
        self
    }

    /// Metadata the renamed file or directory gets in the same call, replacing its own
    /// (validated before sending). Default: none sent, so it keeps its own.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let meta = BTreeMap::from([("state".to_string(), "published".to_string())]);
    /// let options = azstore::file::RenameOptions::default().metadata(meta);
    /// # let _ = options;
    /// ```
    pub fn metadata(mut self, v: BTreeMap<String, String>) -> Self {
        self.metadata = v;
        self
    }

    /// The `Content-Type` the renamed file gets in the same call (`x-ms-content-type`;
    /// Rename File only: a directory rename with it is refused before sending). Default:
    /// none sent, so the file keeps its own.
    ///
    /// ```
    /// let options = azstore::file::RenameOptions::default().content_type("text/csv");
    /// # let _ = options;
    /// ```
    pub fn content_type(mut self, v: impl Into<String>) -> Self {
        self.content_type = Some(v.into());
        self
    }

    fn apply(&self, req: Request, source_url: String, is_dir: bool) -> Result<Request> {
        if self.ignore_read_only && !self.replace_if_exists {
            return Err(Error::invalid_input(
                "ignore_read_only applies only together with replace_if_exists",
            ));
        }
        if is_dir && (self.source_lease.is_some() || self.destination_lease.is_some()) {
            return Err(Error::invalid_input("directories have no leases"));
        }
        if is_dir && self.content_type.is_some() {
            return Err(Error::invalid_input(
                "a content type applies to Rename File only (directories have none)",
            ));
        }
        self.smb.check(false)?;
        let req = self.smb.apply(req);
        Ok(req
            .metadata(&self.metadata)
            .header_opt("x-ms-content-type", self.content_type.clone())
            .query("comp", "rename")
            .header("x-ms-file-rename-source", source_url)
            .header(
                "x-ms-file-rename-replace-if-exists",
                self.replace_if_exists.to_string(),
            )
            .header_opt(
                "x-ms-file-rename-ignore-readonly",
                self.ignore_read_only.then_some("true"),
            )
            .header_opt(
                "x-ms-source-lease-id",
                self.source_lease.as_ref().map(|l| l.as_str().to_string()),
            )
            .header_opt(
                "x-ms-destination-lease-id",
                self.destination_lease
                    .as_ref()
                    .map(|l| l.as_str().to_string()),
            ))
    }
}

impl FileClient {
    /// Rename File: moves this file to `destination` (a path in the same share) and returns
    /// a client for it. The parent directory of the destination must exist (404
    /// `ParentNotFound`); an existing destination is replaced only with
    /// [`RenameOptions::replace_if_exists`]; a leased source or destination needs its lease id
    /// (412 otherwise).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::RenameOptions;
    /// let done = file.rename("archive/2026/report.pdf", &RenameOptions::default()).await?;
    /// println!("now at {}", done.path());
    /// # Ok(()) }
    /// ```
    pub async fn rename(&self, destination: &str, options: &RenameOptions) -> Result<FileClient> {
        let target = self.share_client().file(destination)?;
        if target.path() == self.path() {
            return Err(Error::invalid_input("a file cannot be renamed onto itself"));
        }
        let req = options.apply(target.request(Method::Put), self.url(), false)?;
        let resp = self.pipeline().send(req).await?;
        FileWrite::from_response(&resp)?;
        Ok(target)
    }
}

impl DirectoryClient {
    /// Rename Directory: moves this directory, with everything in it, to `destination` in the
    /// same share and returns a client for it.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::RenameOptions;
    /// let moved = dir.rename("archive/2026", &RenameOptions::default()).await?;
    /// println!("now at {}", moved.path());
    /// # Ok(()) }
    /// ```
    pub async fn rename(
        &self,
        destination: &str,
        options: &RenameOptions,
    ) -> Result<DirectoryClient> {
        if self.path().is_empty() {
            return Err(Error::invalid_input("the root directory cannot be renamed"));
        }
        let target = self.share_client().directory(destination)?;
        if target.path() == self.path() {
            return Err(Error::invalid_input(
                "a directory cannot be renamed onto itself",
            ));
        }
        let req = options.apply(target.request(Method::Put), self.url(), true)?;
        let resp = self.pipeline.send(req).await?;
        FileWrite::from_response(&resp)?;
        Ok(target)
    }
}

impl FileClient {
    fn share_client(&self) -> crate::file::ShareClient {
        crate::file::ShareClient {
            pipeline: self.pipeline.clone(),
            name: self.share.clone(),
        }
    }
}

impl DirectoryClient {
    fn share_client(&self) -> crate::file::ShareClient {
        crate::file::ShareClient {
            pipeline: self.pipeline.clone(),
            name: self.share.clone(),
        }
    }

    /// The directory URL (without credentials).
    ///
    /// ```no_run
    /// # fn demo(dir: azstore::file::DirectoryClient) {
    /// println!("{}", dir.url());
    /// # }
    /// ```
    pub fn url(&self) -> String {
        self.pipeline
            .url_of(&format!("{}/{}", self.share, self.path))
    }
}
