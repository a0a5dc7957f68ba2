//! The blob clients and their core operations.

use crate::body::IntoBody;
use std::sync::Arc;

use bytes::Bytes;
use time::OffsetDateTime;

use crate::blob::models::BlobProperties;
use crate::blob::names::{validate_blob_name, validate_container_name};
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::{ErrorCode, Result};
use crate::http::{Method, Pipeline, Request, Response};
use crate::storage::StorageRequest;

/// The Blob service of one account. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> azstore::Result<()> {
/// use azstore::blob::BlobServiceClient;
/// let account = azstore::StorageAccount::from_env()?; // AZURE_STORAGE_CONNECTION_STRING
/// let blobs = BlobServiceClient::new(&account)?;
/// let reports = blobs.container("reports")?;
/// reports.create_if_not_exists().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobServiceClient {
    pipeline: Pipeline,
}

service_client!(BlobServiceClient, Blob =>
    /// A client for the container `name` (validated, no request sent).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// # let service = azstore::blob::BlobServiceClient::new(&azstore::StorageAccount::development())?;
    /// let reports = service.container("reports")?;
    /// assert!(service.container("Reports").is_err()); // container names are lower case
    /// # let _ = reports;
    /// # Ok(()) }
    /// ```
    container: ContainerClient, validate_container_name);

/// One container. Cheap to clone.
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let container = account.container("invoices")?;
/// container.create_if_not_exists().await?;
/// container.blob("2026/11/0001.pdf")?.upload(&b"%PDF-1.7"[..], &Conditions::if_not_exists()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct ContainerClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
}

named_client!(ContainerClient, "container");

impl ContainerClient {
    /// A client for the blob `name` in this container (validated, no request sent).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let blob = container.blob("2026/11/summary.json")?;
    /// assert_eq!(blob.container_name(), container.name());
    /// assert!(container.blob("").is_err()); // refused before anything is sent
    /// # Ok(()) }
    /// ```
    pub fn blob(&self, name: &str) -> Result<BlobClient> {
        validate_blob_name(name)?;
        Ok(BlobClient {
            pipeline: self.pipeline.clone(),
            container: self.name.clone(),
            name: name.into(),
            at: None,
        })
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        Request::new(method, &self.name).query("restype", "container")
    }

    /// Create Container. Fails with 409 `ContainerAlreadyExists` when it exists.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// match container.create().await {
    ///     Ok(created) => println!("created, version {}", created.etag),
    ///     Err(e) if e.is_conflict() => println!("exists already"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self) -> Result<WriteResult> {
        let resp = self.pipeline.send(self.request(Method::Put)).await?;
        WriteResult::from_response(&resp)
    }

    /// Creates the container unless it exists. Returns `true` when this call created it.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// container.create_if_not_exists().await?; // safe at every start-up
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::created_unless(self.create().await, ErrorCode::ContainerAlreadyExists)
    }

    /// Delete Container. Accepts If-Modified-Since, If-Unmodified-Since and the lease id
    /// (If-Match / If-None-Match are refused: the service does not support them here).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match container.delete(&Conditions::none()).await {
    ///     Err(e) if e.is_not_found() => {} // already gone
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, conditions: &Conditions) -> Result<()> {
        conditions.check(
            Allowed {
                etag: false,
                tags: false,
                ..Allowed::ALL
            },
            "Delete Container",
        )?;
        self.pipeline
            .send(self.request(Method::Delete).conditions(conditions))
            .await?;
        Ok(())
    }

    /// Deletes the container if it exists. Returns `true` when this call deleted it, `false`
    /// when it did not exist; every other failure (a lease) is an error. Under conditions:
    /// [`ContainerClient::delete_if_exists_if`].
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// if container.delete_if_exists().await? {
    ///     println!("deleted {}", container.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        self.delete_if_exists_if(&Conditions::none()).await
    }

    /// Deletes the container if it exists, under `conditions` as [`delete`](Self::delete).
    /// Returns `true` when this call deleted it, `false` when it did not exist; every other
    /// failure (a lease, a condition not met) is an error.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, lease: azstore::LeaseId) -> azstore::Result<()> {
    /// container.delete_if_exists_if(&azstore::Conditions::lease(&lease)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists_if(&self, conditions: &Conditions) -> Result<bool> {
        crate::error::found(self.delete(conditions).await)
    }
}

/// Set Container Metadata / Set Blob Metadata: `req` addresses the container or blob; the
/// metadata is validated before sending.
pub(crate) async fn set_metadata_with(
    pipeline: &Pipeline,
    req: Request,
    metadata: &std::collections::BTreeMap<String, String>,
    conditions: &Conditions,
) -> Result<WriteResult> {
    crate::names::validate_metadata(metadata)?;
    let req = req
        .query("comp", "metadata")
        .conditions(conditions)
        .metadata(metadata);
    WriteResult::from_response(&pipeline.send(req).await?)
}

/// A container or blob client, for the shape most of their operations share.
pub(crate) trait Resource {
    /// The pipeline the client's requests go through.
    fn via(&self) -> &Pipeline;

    /// Sends `req` with `comp=` and the conditions.
    async fn send_comp(
        &self,
        req: Request,
        comp: &str,
        conditions: &Conditions,
    ) -> Result<Response> {
        self.via()
            .send(req.query("comp", comp).conditions(conditions))
            .await
    }

    /// A request addressed to the container or blob.
    fn address(&self, method: Method) -> Request;

    /// Refuses the conditions a read of the resource's properties or metadata does not take
    /// (before sending).
    fn check_read(conditions: &Conditions, operation: &str) -> Result<()>;

    /// Get Container Metadata / Get Blob Metadata (`operation`): the metadata and the ETag.
    async fn read_metadata(
        &self,
        conditions: &Conditions,
        operation: &str,
    ) -> Result<(std::collections::BTreeMap<String, String>, ETag)> {
        Self::check_read(conditions, operation)?;
        // GET (the REST API allows GET and HEAD): error answers then carry their body, and
        // it is what the official SDKs send to Azure.
        let req = self.address(Method::Get);
        let resp = self.send_comp(req, "metadata", conditions).await?;
        Ok((resp.headers.metadata(), resp.headers.require_etag()?))
    }
}

impl Resource for ContainerClient {
    fn via(&self) -> &Pipeline {
        &self.pipeline
    }

    fn address(&self, method: Method) -> Request {
        self.request(method)
    }

    /// A container's reads take a lease id only.
    fn check_read(conditions: &Conditions, operation: &str) -> Result<()> {
        conditions.check(Allowed::LEASE_ONLY, operation)
    }
}

impl Resource for BlobClient {
    fn via(&self) -> &Pipeline {
        &self.pipeline
    }

    fn address(&self, method: Method) -> Request {
        self.request(method)
    }

    fn check_read(conditions: &Conditions, operation: &str) -> Result<()> {
        check_read(conditions, operation)
    }
}

/// Checks the conditions of a blob read: everything is accepted except `If-None-Match: *`,
/// which no read can satisfy (the service answers 400 `UnsatisfiableCondition`).
pub(crate) fn check_read(conditions: &Conditions, operation: &str) -> Result<()> {
    conditions.check(Allowed::ALL, operation)?;
    if conditions.if_none_match == Some(crate::conditions::MatchCondition::Any) {
        return Err(crate::error::Error::invalid_input(format!(
            "{operation} with If-None-Match: * can never succeed (use exists() to test for a blob)"
        )));
    }
    Ok(())
}

/// [`check_read`] of a ranged Get Blob, which also refuses an empty `range`.
pub(crate) fn check_range_read(
    range: &std::ops::Range<u64>,
    conditions: &Conditions,
) -> Result<()> {
    check_read(conditions, "Get Blob")?;
    if range.start >= range.end {
        return Err(crate::error::Error::invalid_input(
            "download range must not be empty",
        ));
    }
    Ok(())
}

/// The error for a write to a snapshot or version (`kind` is the query key).
pub(crate) fn read_only(operation: &str, kind: &str, id: &str) -> crate::error::Error {
    let what = if kind == "snapshot" {
        "snapshot"
    } else {
        "version"
    };
    crate::error::Error::invalid_input(format!(
        "{operation} cannot act on the {what} {id}: snapshots and versions are read-only \
         (address the base blob with BlobClient::base)"
    ))
}

/// One blob. Cheap to clone.
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let blob = account.container("reports")?.blob("q4.json")?;
/// blob.upload(r#"{"revenue": 10}"#, &Conditions::none()).await?;
/// let read = blob.download().await?;
/// println!("{} bytes, version {}", read.body.len(), read.properties.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) container: Arc<str>,
    pub(crate) name: Arc<str>,
    /// A snapshot (`("snapshot", id)`) or version (`("versionid", id)`) this client addresses
    /// instead of the base blob (see `BlobClient::at_snapshot` / `at_version`).
    pub(crate) at: Option<(&'static str, Arc<str>)>,
}

/// Options of Put Blob.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::PutOptions;
/// let options = PutOptions::new(Conditions::if_not_exists())
///     .content_type("application/json")
///     .cache_control("max-age=60")
///     .meta("source", "exporter");
/// blob.put(r#"{"ok": true}"#, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct PutOptions {
    /// Conditions, chosen in [`PutOptions::new`].
    pub conditions: Conditions,
    /// HTTP headers, metadata, tier, tags and encryption scope of the new blob. Without a
    /// content type the blob is stored as `application/octet-stream`.
    pub write: crate::blob::BlobWriteOptions,
    /// Transactional checksum of the body, checked by the service.
    pub checksum: crate::blob::Checksum,
}

impl PutOptions {
    /// Options for a write under `conditions` — the one choice every write that replaces a
    /// blob makes visibly (there is no `Default`):
    ///
    /// * [`Conditions::if_match(&etag)`](Conditions::if_match): replace only the version you
    ///   read (412 `ConditionNotMet` otherwise);
    /// * [`Conditions::if_not_exists()`](Conditions::if_not_exists): create only (409
    ///   `BlobAlreadyExists` when it exists);
    /// * [`Conditions::none()`](Conditions::none): last writer wins.
    ///
    /// ```
    /// use azstore::{Conditions, blob::PutOptions};
    /// let create_only = PutOptions::new(Conditions::if_not_exists()).content_type("text/plain");
    /// # let _ = create_only;
    /// ```
    pub fn new(conditions: Conditions) -> PutOptions {
        PutOptions {
            conditions,
            write: Default::default(),
            checksum: Default::default(),
        }
    }

    /// Replaces the conditions chosen in [`new`](Self::new) (`if_match`, `if_not_exists`
    /// or `none`, plus a lease id for a leased blob).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::PutOptions;
    /// let lease = LeaseId::random();
    /// let options = PutOptions::new(Conditions::if_not_exists()).conditions(Conditions::lease(&lease));
    /// assert_eq!(options.conditions.lease_id, Some(lease));
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }
}

crate::blob::write_options::write_builders!(PutOptions);
crate::blob::write_options::checksum_builder!(
    PutOptions,
    "PutOptions::new(Conditions::if_not_exists())"
);

/// What a write returns: the new version.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let v1 = blob.upload("v1", &Conditions::none()).await?;
/// // The next write succeeds only if nobody wrote in between.
/// blob.upload("v2", &Conditions::if_match(&v1.etag)).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct WriteResult {
    /// The new ETag.
    pub etag: ETag,
    /// The new Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The version the write made, on an account with blob versioning (`x-ms-version-id`);
    /// `None` elsewhere (and on Azurite, which keeps no versions).
    pub version_id: Option<String>,
}

impl WriteResult {
    pub(crate) fn from_response(resp: &Response) -> Result<WriteResult> {
        Ok(WriteResult {
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            version_id: version_id(resp),
        })
    }
}

/// The `x-ms-version-id` a write answered with, if any.
pub(crate) fn version_id(resp: &Response) -> Option<String> {
    resp.headers
        .get("x-ms-version-id")
        .filter(|v| !v.is_empty())
        .map(str::to_string)
}

/// A downloaded blob: its content and the properties of the version read.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let download = blob.download().await?;
/// let text = String::from_utf8_lossy(&download.body);
/// println!("{text} (type {:?})", download.properties.http_headers.content_type);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Download {
    /// The content.
    pub body: Bytes,
    /// Properties, including the ETag of exactly this content.
    pub properties: BlobProperties,
}

impl Download {
    /// The body of a Get Blob answer and the properties its headers describe.
    pub(crate) fn from_response(resp: Response) -> Result<Download> {
        Ok(Download {
            properties: BlobProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }
}

impl BlobClient {
    /// The blob name.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// assert_eq!(container.blob("a/b.txt")?.name(), "a/b.txt");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container name.
    ///
    /// ```no_run
    /// # fn demo(blob: azstore::blob::BlobClient) {
    /// println!("{}/{}", blob.container_name(), blob.name());
    /// # }
    /// ```
    pub fn container_name(&self) -> &str {
        &self.container
    }

    /// The underlying pipeline (for operations azstore does not wrap).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.get("x-ms-blob-type"));
    /// # Ok(()) }
    /// ```
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The blob URL (without credentials; with `?snapshot=` or `?versionid=` when this
    /// client addresses a snapshot or version).
    ///
    /// ```no_run
    /// # fn demo(blob: azstore::blob::BlobClient) {
    /// println!("{}", blob.url()); // e.g. https://acct.blob.core.windows.net/reports/q4.json
    /// # }
    /// ```
    pub fn url(&self) -> String {
        let url = self.pipeline.url_of(&self.path());
        match &self.at {
            Some((k, v)) => format!("{url}?{k}={}", crate::http::request::encode_query_value(v)),
            None => url,
        }
    }

    pub(crate) fn path(&self) -> String {
        format!("{}/{}", self.container, self.name)
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        let req = Request::new(method, &self.path());
        match &self.at {
            Some((k, v)) => req.query(k, v.to_string()),
            None => req,
        }
    }

    /// A request that writes to the base blob. Snapshots and versions are read-only: when
    /// this client addresses one, the write is refused with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before sending. (Delete Blob,
    /// Set Blob Tier and, for versions, Set Blob Tags act on a snapshot or version and use
    /// [`BlobClient::request`] instead.)
    pub(crate) fn write_request(&self, method: Method, operation: &str) -> Result<Request> {
        match &self.at {
            None => Ok(Request::new(method, &self.path())),
            Some((kind, id)) => Err(read_only(operation, kind, id)),
        }
    }

    /// Put Blob with all options: one request, whatever the size (up to 5000 MiB; use
    /// [`upload_with`](Self::upload_with) for larger bodies or parallel blocks).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, etag: azstore::ETag) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::PutOptions;
    /// let options = PutOptions::new(Conditions::if_match(&etag)).content_type("text/csv");
    /// let written = blob.put("id,total\n1,10\n", &options).await?;
    /// # let _ = written; Ok(()) }
    /// ```
    pub async fn put(&self, body: impl IntoBody, options: &PutOptions) -> Result<WriteResult> {
        options.conditions.check(Allowed::ALL, "Put Blob")?;
        let body: Bytes = body.into_body();
        let content_type = options
            .write
            .headers
            .content_type
            .clone()
            .unwrap_or_else(|| "application/octet-stream".into());
        let req = self
            .write_request(Method::Put, "Put Blob")?
            .header("x-ms-blob-type", "BlockBlob")
            .conditions(&options.conditions);
        let req = options
            .write
            .apply(req, crate::blob::write_options::WriteKind::PutBlob)?;
        let req = options.checksum.body(req, body, &content_type);
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }

    /// Get Blob: the whole content and the properties of the version read. With
    /// `Conditions::if_none_match(&etag)` an unchanged blob gives [`crate::ErrorKind::NotModified`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, cached: azstore::ETag) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match blob.download_if(&Conditions::if_none_match(&cached)).await {
    ///     Ok(fresh) => println!("changed: {} new bytes", fresh.body.len()),
    ///     Err(e) if e.is_not_modified() => println!("cache still valid"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn download_if(&self, conditions: &Conditions) -> Result<Download> {
        let resp = self.send_read(Method::Get, "Get Blob", conditions).await?;
        Download::from_response(resp)
    }

    /// Get Blob Properties under conditions (e.g. with the lease id of a leased blob).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, lease: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let props = blob.get_properties_if(&Conditions::lease(&lease)).await?;
    /// println!("{} bytes, {:?}", props.content_length, props.lease_state);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties_if(&self, conditions: &Conditions) -> Result<BlobProperties> {
        let resp = self
            .send_read(Method::Head, "Get Blob Properties", conditions)
            .await?;
        BlobProperties::from_headers(&resp.headers)
    }

    /// Sends a whole-blob read (`operation`) under `conditions`, checked as every read is.
    async fn send_read(
        &self,
        method: Method,
        operation: &str,
        conditions: &Conditions,
    ) -> Result<Response> {
        check_read(conditions, operation)?;
        self.pipeline
            .send(self.request(method).conditions(conditions).content_read())
            .await
    }

    /// Whether the blob exists (one HEAD request; a missing container is `false` too).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// if !blob.exists().await? {
    ///     println!("nothing at {}", blob.url());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        crate::error::found(self.get_properties().await)
    }

    /// Delete Blob (with its snapshots) under the given conditions.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let props = blob.get_properties().await?;
    /// // Delete only the version we looked at.
    /// match blob.delete(&Conditions::if_match(&props.etag)).await {
    ///     Err(e) if e.is_precondition_failed() => println!("changed meanwhile: kept"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, conditions: &Conditions) -> Result<()> {
        conditions.check(Allowed::ALL, "Delete Blob")?;
        self.pipeline
            .send(
                self.request(Method::Delete)
                    // A snapshot or version is deleted alone (the service refuses the
                    // header there).
                    .header_opt(
                        "x-ms-delete-snapshots",
                        self.at.is_none().then_some("include"),
                    )
                    .conditions(conditions),
            )
            .await?;
        Ok(())
    }

    /// Creates the blob with `body` unless it exists (`If-None-Match: *`). Returns the new
    /// version when this call created it, `None` when the blob already existed (nothing was
    /// written); every other failure is an error.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// match blob.upload_if_not_exists("first!").await? {
    ///     Some(created) => println!("created, etag {}", created.etag),
    ///     None => println!("someone else created it first"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn upload_if_not_exists(&self, body: impl IntoBody) -> Result<Option<WriteResult>> {
        match self.upload(body, &Conditions::if_not_exists()).await {
            Ok(w) => Ok(Some(w)),
            Err(e) if e.error_code() == Some(&ErrorCode::BlobAlreadyExists) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Deletes the blob (with its snapshots) if it exists, whoever wrote it last. Returns
    /// `true` when this call deleted it, `false` when the blob (or its container) did not
    /// exist; every other failure (a lease held by someone else) is an error. Under
    /// conditions: [`BlobClient::delete_if_exists_if`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// blob.delete_if_exists().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        self.delete_if_exists_if(&Conditions::none()).await
    }

    /// Deletes the blob (with its snapshots) if it exists, under `conditions` as
    /// [`delete`](Self::delete). Returns `true` when this call deleted it, `false` when the
    /// blob (or its container) did not exist; every other failure — a lease held by someone
    /// else, an ETag that no longer matches — is an error, never swallowed.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, etag: azstore::ETag) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// blob.delete_if_exists_if(&Conditions::if_match(&etag)).await?; // only the version we read
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists_if(&self, conditions: &Conditions) -> Result<bool> {
        crate::error::found(self.delete(conditions).await)
    }
}
