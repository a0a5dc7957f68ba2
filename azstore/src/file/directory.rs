//! [`DirectoryClient`]: one directory (create, properties, metadata, delete, list).

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::error::{Error, ErrorCode, Result};
use crate::file::file_client::FileClient;
use crate::file::models::{DirectoryProperties, FileWrite, ListItem, ListPage};
use crate::file::names::{validate_name, validate_path};
use crate::file::options::CreateDirectoryOptions;
use crate::http::{Method, Pipeline, Request};
use crate::paging::{Page, ResultStream, every_page};

/// One directory (the root directory has the empty path). Cheap to clone.
///
/// ```no_run
/// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
/// use azstore::file::ListItem;
/// let dir = share.directory("2026")?;
/// dir.create_if_not_exists().await?;
/// for item in dir.list_all(None).await? {
///     if let ListItem::File { name, size, .. } = item {
///         println!("{name}: {size} bytes");
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct DirectoryClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) share: Arc<str>,
    pub(crate) path: Arc<str>,
}

/// Which entries one List Directories and Files call returns.
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// use azstore::file::ListOptions;
/// let page = dir.list(&ListOptions::default().prefix("report-").max_results(50)).await?;
/// println!("{} entries, more: {}", page.items.len(), page.next_marker.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct ListOptions {
    /// Only names starting with this.
    pub prefix: Option<String>,
    /// Continue after a previous page ([`ListPage::next_marker`]).
    pub marker: Option<String>,
    /// At most this many entries (1–5000; the service default is 5000).
    pub max_results: Option<u32>,
    /// Ask for each entry's file id, timestamps, ETag, SMB attributes and permission key
    /// (`include=Timestamps,Etag,Attributes,PermissionKey`, `x-ms-file-extended-info: true`),
    /// in [`ListPage::entries`].
    pub extended_info: bool,
}

impl ListOptions {
    /// Lists only entries whose name starts with this (default: every entry).
    ///
    /// ```
    /// let options = azstore::file::ListOptions::default().prefix("2026-");
    /// # let _ = options;
    /// ```
    pub fn prefix(mut self, v: impl Into<String>) -> Self {
        self.prefix = Some(v.into());
        self
    }

    /// Continues a listing where the previous page ended: pass its
    /// [`ListPage::next_marker`] (default: start at the beginning).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::ListOptions;
    /// let first = dir.list(&ListOptions::default().max_results(100)).await?;
    /// if let Some(marker) = first.next_marker {
    ///     let second = dir.list(&ListOptions::default().max_results(100).marker(marker)).await?;
    ///     # let _ = second;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn marker(mut self, v: impl Into<String>) -> Self {
        self.marker = Some(v.into());
        self
    }

    /// At most this many entries per page (1–5000; default: not sent, the service's
    /// 5000).
    ///
    /// ```
    /// let options = azstore::file::ListOptions::default().max_results(500);
    /// # let _ = options;
    /// ```
    pub fn max_results(mut self, v: u32) -> Self {
        self.max_results = Some(v);
        self
    }

    /// Asks for extended info on every entry.
    pub fn extended_info(mut self) -> Self {
        self.extended_info = true;
        self
    }
}

impl DirectoryClient {
    /// The path below the share (empty for the root).
    ///
    /// ```no_run
    /// # fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// assert_eq!(share.directory("2026/11")?.path(), "2026/11");
    /// assert_eq!(share.root().path(), "");
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The share name.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// println!("{}:{}", dir.share_name(), dir.path());
    /// # Ok(()) }
    /// ```
    pub fn share_name(&self) -> &str {
        &self.share
    }

    fn child(&self, name: &str) -> Result<String> {
        validate_name(name)?;
        let full = if self.path.is_empty() {
            name.to_string()
        } else {
            format!("{}/{name}", self.path)
        };
        validate_path(&full)?;
        Ok(full)
    }

    /// A client for the subdirectory `name` (one component).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// dir.directory("archive")?.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn directory(&self, name: &str) -> Result<DirectoryClient> {
        Ok(DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.share.clone(),
            path: self.child(name)?.into(),
        })
    }

    /// A client for the file `name` (one component) in this directory.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let readme = dir.file("README.txt")?;
    /// # let _ = readme;
    /// # Ok(()) }
    /// ```
    pub fn file(&self, name: &str) -> Result<FileClient> {
        Ok(FileClient {
            pipeline: self.pipeline.clone(),
            share: self.share.clone(),
            path: self.child(name)?.into(),
        })
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        self.path_request(method).query("restype", "directory")
    }

    /// A request on the directory's path without `restype` (List Handles and Force Close
    /// Handles take none: `<share>/<dir>?comp=listhandles`).
    pub(crate) fn path_request(&self, method: Method) -> Request {
        let p = if self.path.is_empty() {
            self.share.to_string()
        } else {
            format!("{}/{}", self.share, self.path)
        };
        Request::new(method, &p)
    }

    /// Create Directory. 409 `ResourceAlreadyExists` when it exists, 404 `ParentNotFound`
    /// when the parent directory does not.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// match dir.create().await {
    ///     Err(e) if e.is_not_found() => println!("create the parent first"),
    ///     Err(e) if e.is_conflict() => println!("exists already"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self) -> Result<FileWrite> {
        self.create_with(&CreateDirectoryOptions::default()).await
    }

    /// Creates the directory unless it exists. Returns `true` when this call created it.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// dir.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::created_unless(self.create().await, ErrorCode::ResourceAlreadyExists)
    }

    /// Get Directory Properties.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let props = dir.get_properties().await?;
    /// println!("{:?}", props.metadata);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<DirectoryProperties> {
        // GET, as for shares.
        let resp = self.pipeline.send(self.request(Method::Get)).await?;
        DirectoryProperties::from_headers(&resp.headers)
    }

    /// Set Directory Metadata, replacing all metadata.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use std::collections::BTreeMap;
    /// dir.set_metadata(&BTreeMap::from([("archived".to_string(), "yes".to_string())])).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<FileWrite> {
        FileWrite::set_metadata(&self.pipeline, self.request(Method::Put), metadata).await
    }

    /// Delete Directory. Fails with 409 `DirectoryNotEmpty` unless it is empty.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// match dir.delete().await {
    ///     Err(e) if e.is_conflict() => println!("not empty"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<()> {
        if self.path.is_empty() {
            return Err(Error::invalid_input("the root directory cannot be deleted"));
        }
        self.pipeline.send(self.request(Method::Delete)).await?;
        Ok(())
    }

    /// Deletes the directory if it exists (it must be empty: 409 `DirectoryNotEmpty`
    /// otherwise). Returns `true` when this call deleted it.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// dir.delete_if_exists().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        crate::error::found(self.delete().await)
    }

    /// One page of List Directories and Files (direct children only).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::ListOptions;
    /// let page = dir.list(&ListOptions::default()).await?;
    /// println!("{} entries; more: {}", page.items.len(), page.next_marker.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn list(&self, options: &ListOptions) -> Result<ListPage> {
        if let Some(n) = options.max_results {
            if !(1..=5000).contains(&n) {
                return Err(Error::invalid_input(format!(
                    "max_results must be 1-5000 (got {n})"
                )));
            }
        }
        let mut req = self.request(Method::Get).query("comp", "list");
        if let Some(p) = &options.prefix {
            req = req.query("prefix", p.clone());
        }
        if let Some(m) = &options.marker {
            req = req.query("marker", m.clone());
        }
        if let Some(n) = options.max_results {
            req = req.query("maxresults", n.to_string());
        }
        if options.extended_info {
            req = req
                .query("include", "Timestamps,Etag,Attributes,PermissionKey")
                .header("x-ms-file-extended-info", "true");
        }
        let resp = self.pipeline.send(req).await?;
        ListPage::parse(&resp.body)
    }

    /// List Directories and Files as a stream of entries (direct children), following
    /// markers page by page as the caller polls.
    ///
    /// ```no_run
    /// # async fn f(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
    /// use azstore::file::ListOptions;
    /// let mut entries = dir.list_stream(ListOptions::default().prefix("2026-"));
    /// while let Some(entry) = entries.try_next().await? {
    ///     println!("{}", entry.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_stream(&self, options: ListOptions) -> ResultStream<ListItem> {
        every_page(self, options, |this, mut options, marker| async move {
            if marker.is_some() {
                options.marker = marker;
            }
            let page = this.list(&options).await?;
            Ok(Page {
                items: page.items,
                next_marker: page.next_marker,
            })
        })
    }

    /// All direct children, following markers page by page.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// for item in dir.list_all(Some("2026-")).await? {
    ///     println!("{item:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_all(&self, prefix: Option<&str>) -> Result<Vec<ListItem>> {
        let mut options = ListOptions {
            prefix: prefix.map(str::to_string),
            ..ListOptions::default()
        };
        let mut out = Vec::new();
        loop {
            let page = self.list(&options).await?;
            out.extend(page.items);
            match page.next_marker {
                Some(m) if options.marker.as_deref() != Some(m.as_str()) => {
                    options.marker = Some(m)
                }
                Some(_) => return Err(Error::decode("the service repeated a list marker")),
                None => return Ok(out),
            }
        }
    }
}
