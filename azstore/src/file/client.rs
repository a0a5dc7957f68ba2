//! The File clients: [`ShareServiceClient`] → [`ShareClient`] → [`DirectoryClient`] →
//! [`FileClient`].

use std::collections::BTreeMap;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;

use crate::account::{Service, StorageAccount};
use crate::conditions::LeaseId;
use crate::error::{Error, ErrorCode, Result};
use crate::file::models::{
    DirectoryProperties, FileProperties, FileWrite, ListItem, ListPage, RangeList, ShareProperties,
};
use crate::file::names::{validate_name, validate_path, validate_share_name};
use crate::http::{ClientOptions, Method, Pipeline, Request};
use crate::transfer::{OnChange, Progress};

/// The largest range one Put Range may write: 4 MiB.
pub const MAX_RANGE_SIZE: u64 = 4 * 1024 * 1024;

/// The File service of one account. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> azstore::Result<()> {
/// use azstore::StorageAccount;
/// use azstore::file::ShareServiceClient;
/// let account = StorageAccount::from_env()?; // needs a FileEndpoint
/// let share = ShareServiceClient::new(&account)?.share("reports")?;
/// share.create_if_not_exists().await?;
/// let file = share.file("2026/q3.csv")?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ShareServiceClient {
    pipeline: Pipeline,
}

impl ShareServiceClient {
    /// A client with default options. Fails with `InvalidInput` when the account has no File
    /// endpoint (e.g. `UseDevelopmentStorage=true`: Azurite has no File service).
    pub fn new(account: &StorageAccount) -> Result<ShareServiceClient> {
        ShareServiceClient::with_options(account, ClientOptions::default())
    }

    /// A client with custom retry and timeout options.
    pub fn with_options(
        account: &StorageAccount,
        options: ClientOptions,
    ) -> Result<ShareServiceClient> {
        Ok(ShareServiceClient {
            pipeline: Pipeline::new(account, Service::File, options)?,
        })
    }

    /// A client for the share `name` (validated, no request sent).
    pub fn share(&self, name: &str) -> Result<ShareClient> {
        validate_share_name(name)?;
        Ok(ShareClient {
            pipeline: self.pipeline.clone(),
            name: name.into(),
        })
    }

    /// The underlying pipeline (for operations azstore does not wrap).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}

/// One file share. Cheap to clone.
#[derive(Debug, Clone)]
pub struct ShareClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
}

impl ShareClient {
    /// The share name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The underlying pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The share URL (without credentials).
    pub fn url(&self) -> String {
        self.pipeline.url_of(&self.name)
    }

    /// The root directory.
    pub fn root(&self) -> DirectoryClient {
        DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.name.clone(),
            path: "".into(),
        }
    }

    /// A client for the directory at `path` (`a/b`, validated, no request sent).
    pub fn directory(&self, path: &str) -> Result<DirectoryClient> {
        validate_path(path)?;
        Ok(DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.name.clone(),
            path: path.into(),
        })
    }

    /// A client for the file at `path` (`a/b/c.txt`, validated, no request sent).
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

    /// Create Share. Fails with 409 `ShareAlreadyExists` when it exists
    /// (`ShareBeingDeleted` while a delete is in progress).
    pub async fn create(&self) -> Result<FileWrite> {
        self.create_with(&BTreeMap::new(), None).await
    }

    /// Create Share with metadata and an optional quota in GiB.
    pub async fn create_with(
        &self,
        metadata: &BTreeMap<String, String>,
        quota_gib: Option<u32>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .metadata(metadata)
            .header_opt("x-ms-share-quota", quota_gib.map(|q| q.to_string()));
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Creates the share unless it exists. Returns `true` when this call created it.
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::succeeded_unless(self.create().await, |e| {
            e.error_code() == Some(&ErrorCode::ShareAlreadyExists)
        })
    }

    /// Get Share Properties (metadata, quota, lease state).
    pub async fn get_properties(&self) -> Result<ShareProperties> {
        // GET (the REST API allows GET and HEAD): error answers then carry their body, and it
        // is what the official SDKs send to Azure.
        let resp = self.pipeline.send(self.request(Method::Get)).await?;
        ShareProperties::from_headers(&resp.headers)
    }

    /// Set Share Metadata, replacing all metadata.
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "metadata")
            .metadata(metadata);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Delete Share. A leased share needs its lease id (412 otherwise).
    pub async fn delete(&self, lease: Option<&LeaseId>) -> Result<()> {
        let req = self
            .request(Method::Delete)
            .header_opt("x-ms-lease-id", lease.map(|l| l.as_str().to_string()));
        self.pipeline.send(req).await?;
        Ok(())
    }
}

/// One directory (the root directory has the empty path). Cheap to clone.
#[derive(Debug, Clone)]
pub struct DirectoryClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) share: Arc<str>,
    pub(crate) path: Arc<str>,
}

/// Which entries one List Directories and Files call returns.
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct ListOptions {
    /// Only names starting with this.
    pub prefix: Option<String>,
    /// Continue after a previous page ([`ListPage::next_marker`]).
    pub marker: Option<String>,
    /// At most this many entries (1–5000; the service default is 5000).
    pub max_results: Option<u32>,
}

impl ListOptions {
    /// Sets the prefix.
    pub fn prefix(mut self, p: impl Into<String>) -> ListOptions {
        self.prefix = Some(p.into());
        self
    }

    /// Sets the marker.
    pub fn marker(mut self, m: impl Into<String>) -> ListOptions {
        self.marker = Some(m.into());
        self
    }

    /// Sets the page size.
    pub fn max_results(mut self, n: u32) -> ListOptions {
        self.max_results = Some(n);
        self
    }
}

impl DirectoryClient {
    /// The path below the share (empty for the root).
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The share name.
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
    pub fn directory(&self, name: &str) -> Result<DirectoryClient> {
        Ok(DirectoryClient {
            pipeline: self.pipeline.clone(),
            share: self.share.clone(),
            path: self.child(name)?.into(),
        })
    }

    /// A client for the file `name` (one component) in this directory.
    pub fn file(&self, name: &str) -> Result<FileClient> {
        Ok(FileClient {
            pipeline: self.pipeline.clone(),
            share: self.share.clone(),
            path: self.child(name)?.into(),
        })
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        let p = if self.path.is_empty() {
            self.share.to_string()
        } else {
            format!("{}/{}", self.share, self.path)
        };
        Request::new(method, &p).query("restype", "directory")
    }

    /// Create Directory. 409 `ResourceAlreadyExists` when it exists, 404 `ParentNotFound`
    /// when the parent directory does not.
    pub async fn create(&self) -> Result<FileWrite> {
        self.create_with(&BTreeMap::new()).await
    }

    /// Create Directory with metadata.
    pub async fn create_with(&self, metadata: &BTreeMap<String, String>) -> Result<FileWrite> {
        if self.path.is_empty() {
            return Err(Error::invalid_input("the root directory always exists"));
        }
        let req = self.request(Method::Put).metadata(metadata);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Creates the directory unless it exists. Returns `true` when this call created it.
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::succeeded_unless(self.create().await, |e| {
            e.error_code() == Some(&ErrorCode::ResourceAlreadyExists)
        })
    }

    /// Get Directory Properties.
    pub async fn get_properties(&self) -> Result<DirectoryProperties> {
        // GET, as for shares.
        let resp = self.pipeline.send(self.request(Method::Get)).await?;
        DirectoryProperties::from_headers(&resp.headers)
    }

    /// Set Directory Metadata, replacing all metadata.
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "metadata")
            .metadata(metadata);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Delete Directory. Fails with 409 `DirectoryNotEmpty` unless it is empty.
    pub async fn delete(&self) -> Result<()> {
        if self.path.is_empty() {
            return Err(Error::invalid_input("the root directory cannot be deleted"));
        }
        self.pipeline.send(self.request(Method::Delete)).await?;
        Ok(())
    }

    /// One page of List Directories and Files (direct children only).
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
        let resp = self.pipeline.send(req).await?;
        ListPage::parse(&resp.body)
    }

    /// All direct children, following markers page by page.
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

/// One file. Cheap to clone.
///
/// # Concurrency: last writer wins, or a lease
///
/// The File REST API has **no `If-Match`**: a write replaces what is there, whoever wrote it
/// last wins, and an ETag you read cannot make a later write conditional. That is why no
/// method of this client takes [`Conditions`](crate::Conditions) — a condition the service
/// cannot honour is a compile error rather than a silent no-op:
///
/// ```compile_fail
/// # async fn demo(file: azstore::file::FileClient, etag: azstore::ETag) {
/// // Does not compile: File writes take a lease id, never Conditions.
/// file.put_range(0, bytes::Bytes::from_static(b"x"), &azstore::Conditions::if_match(&etag)).await;
/// # }
/// ```
///
/// For exclusive writes, take a file lease ([`FileClient::acquire_lease`]) and pass its id
/// to every write: other REST writers then get 412 until the lease is released or broken.
/// SMB clients lock files with open handles instead; those surface as 409
/// `SharingViolation` (see [`crate::file::retry_smb_conflicts`]).
#[derive(Debug, Clone)]
pub struct FileClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) share: Arc<str>,
    pub(crate) path: Arc<str>,
}

/// Options of [`FileClient::create_with`].
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct CreateFileOptions {
    /// `x-ms-content-type` of the file (also settable in `headers`; not both).
    pub content_type: Option<String>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// The other stored HTTP headers (encoding, language, cache control, disposition, MD5).
    pub headers: crate::file::FileHttpHeaders,
}

/// Options of the parallel transfers ([`FileClient::upload`], [`FileClient::upload_file`],
/// [`FileClient::upload_reader`], [`FileClient::download`], [`FileClient::download_to_file`],
/// [`FileClient::download_into`], [`FileClient::download_stream`]).
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct TransferOptions {
    /// Bytes per range request (1 byte – 4 MiB; default 4 MiB).
    pub range_size: u64,
    /// Range requests in flight at once (default 4).
    pub parallelism: usize,
    /// Content type and metadata for the file an upload creates.
    pub create: CreateFileOptions,
    /// What a download does when the file changes between two ranges (default: fail with
    /// `Conflict`).
    pub on_change: OnChange,
    /// Where progress is reported (none by default).
    pub progress: Option<Progress>,
}

impl Default for TransferOptions {
    fn default() -> Self {
        TransferOptions {
            range_size: MAX_RANGE_SIZE,
            parallelism: 4,
            create: CreateFileOptions::default(),
            on_change: OnChange::Fail,
            progress: None,
        }
    }
}

impl TransferOptions {
    /// Sets the range size.
    pub fn range_size(mut self, n: u64) -> TransferOptions {
        self.range_size = n;
        self
    }

    /// Sets the parallelism.
    pub fn parallelism(mut self, n: usize) -> TransferOptions {
        self.parallelism = n;
        self
    }

    /// Sets the content type and metadata of the file an upload creates.
    pub fn create(mut self, create: CreateFileOptions) -> TransferOptions {
        self.create = create;
        self
    }

    /// Sets the content type of an uploaded file.
    pub fn content_type(mut self, ct: impl Into<String>) -> TransferOptions {
        self.create.content_type = Some(ct.into());
        self
    }

    /// Sets the behaviour of a download on a concurrent change.
    pub fn on_change(mut self, on_change: OnChange) -> TransferOptions {
        self.on_change = on_change;
        self
    }

    /// Reports progress to `progress`.
    pub fn progress(mut self, progress: Progress) -> TransferOptions {
        self.progress = Some(progress);
        self
    }

    pub(crate) fn check(&self) -> Result<()> {
        if self.range_size == 0 || self.range_size > MAX_RANGE_SIZE {
            return Err(Error::invalid_input(format!(
                "range_size must be 1 byte to 4 MiB (got {})",
                self.range_size
            )));
        }
        if self.parallelism == 0 {
            return Err(Error::invalid_input("parallelism must be at least 1"));
        }
        Ok(())
    }
}

/// A downloaded file (or range) and the properties of the version read.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FileDownload {
    /// The content.
    pub body: Bytes,
    /// Properties; `content_length` is the size of the whole file.
    pub properties: FileProperties,
}

/// A download whose body arrives as a stream of chunks.
#[non_exhaustive]
pub struct FileStream {
    /// Properties; `content_length` is the size of the whole file.
    pub properties: FileProperties,
    /// The content (or the requested range of it).
    pub body: Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>,
}

impl std::fmt::Debug for FileStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStream")
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

fn lease_header(req: Request, lease: Option<&LeaseId>) -> Request {
    req.header_opt("x-ms-lease-id", lease.map(|l| l.as_str().to_string()))
}

fn range_header(range: &Range<u64>) -> Result<String> {
    if range.start >= range.end {
        return Err(Error::invalid_input(format!(
            "empty or inverted byte range {}..{}",
            range.start, range.end
        )));
    }
    Ok(format!("bytes={}-{}", range.start, range.end - 1))
}

impl FileClient {
    /// The path below the share.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The share name.
    pub fn share_name(&self) -> &str {
        &self.share
    }

    /// The underlying pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The file URL (without credentials).
    pub fn url(&self) -> String {
        self.pipeline.url_of(&self.full_path())
    }

    fn full_path(&self) -> String {
        format!("{}/{}", self.share, self.path)
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        Request::new(method, &self.full_path())
    }

    /// Create File: a new file of `size` bytes (all zero), replacing any existing file
    /// (last writer wins). A leased file needs the lease id.
    pub async fn create(&self, size: u64, lease: Option<&LeaseId>) -> Result<FileWrite> {
        self.create_with(size, &CreateFileOptions::default(), lease)
            .await
    }

    /// Create File with content type and metadata.
    pub async fn create_with(
        &self,
        size: u64,
        options: &CreateFileOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .header("x-ms-type", "file")
            .header("x-ms-content-length", size.to_string())
            .header_opt("x-ms-content-type", options.content_type.clone())
            .metadata(&options.metadata);
        if options.content_type.is_some() && options.headers.content_type.is_some() {
            return Err(Error::invalid_input(
                "give the content type in CreateFileOptions::content_type or in headers, not both",
            ));
        }
        let req = options.headers.apply(req);
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Put Range (`x-ms-write: update`): writes `data` at `offset`. `data` must be 1 byte to
    /// 4 MiB (else `InvalidInput`, nothing sent; [`FileClient::upload`] splits larger data)
    /// and lie within the file's size.
    pub async fn put_range(
        &self,
        offset: u64,
        data: Bytes,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let len = data.len() as u64;
        if len == 0 || len > MAX_RANGE_SIZE {
            return Err(Error::invalid_input(format!(
                "a range must be 1 byte to 4 MiB (got {len} bytes); use upload() to split larger data"
            )));
        }
        let end = offset
            .checked_add(len)
            .ok_or_else(|| Error::invalid_input("range end overflows"))?;
        let req = self
            .request(Method::Put)
            .query("comp", "range")
            .header("x-ms-range", range_header(&(offset..end))?)
            .header("x-ms-write", "update")
            .body(data, "application/octet-stream");
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Put Range with `x-ms-write: clear`: zeroes `range` and frees its storage.
    pub async fn clear_range(
        &self,
        range: Range<u64>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "range")
            .header("x-ms-range", range_header(&range)?)
            .header("x-ms-write", "clear");
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Get File, whole, in one request. See [`FileClient::download`] for large files.
    pub async fn get(&self) -> Result<FileDownload> {
        let resp = self.pipeline.send(self.request(Method::Get)).await?;
        Ok(FileDownload {
            properties: FileProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }

    /// Get File for one byte range (206). The range may extend past the end of the file; the
    /// service returns what exists. A range starting at or past the end is a 416 error.
    pub async fn get_range(&self, range: Range<u64>) -> Result<FileDownload> {
        let req = self
            .request(Method::Get)
            .header("x-ms-range", range_header(&range)?);
        let resp = self.pipeline.send(req).await?;
        Ok(FileDownload {
            properties: FileProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }

    /// Get File as a stream (whole file, or `range`): the properties arrive first, the body
    /// is read as the caller polls it.
    pub async fn get_stream(&self, range: Option<Range<u64>>) -> Result<FileStream> {
        let mut req = self.request(Method::Get);
        if let Some(r) = &range {
            req = req.header("x-ms-range", range_header(r)?);
        }
        let resp = self.pipeline.send_streaming(req).await?;
        let properties = FileProperties::from_headers(&resp.headers)?;
        Ok(FileStream {
            properties,
            body: Box::pin(resp.into_stream()),
        })
    }

    /// Get File Properties.
    pub async fn get_properties(&self) -> Result<FileProperties> {
        let resp = self.pipeline.send(self.request(Method::Head)).await?;
        FileProperties::from_headers(&resp.headers)
    }

    /// Whether the file exists.
    pub async fn exists(&self) -> Result<bool> {
        crate::error::succeeded_unless(self.get_properties().await, |e| e.is_not_found())
    }

    /// Set File Properties: resize to `size` (truncating or zero-extending) and/or set the
    /// content type.
    pub async fn set_properties(
        &self,
        size: Option<u64>,
        content_type: Option<&str>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "properties")
            .header_opt("x-ms-content-length", size.map(|s| s.to_string()))
            .header_opt("x-ms-content-type", content_type);
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Set File Metadata, replacing all metadata.
    pub async fn set_metadata(
        &self,
        metadata: &BTreeMap<String, String>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "metadata")
            .metadata(metadata);
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Delete File. A leased file needs the lease id.
    pub async fn delete(&self, lease: Option<&LeaseId>) -> Result<()> {
        let req = lease_header(self.request(Method::Delete), lease);
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// List Ranges: the written ranges of the whole file, or within `range`.
    pub async fn list_ranges(&self, range: Option<Range<u64>>) -> Result<RangeList> {
        let mut req = self.request(Method::Get).query("comp", "rangelist");
        if let Some(r) = &range {
            req = req.header("x-ms-range", range_header(r)?);
        }
        RangeList::parse(&self.pipeline.send(req).await?)
    }
}
