//! [`BlobStore`]: `object_store::ObjectStore` over a blob container.

use std::fmt;
use std::time::Duration;

use ::object_store::path::Path;
use ::object_store::{
    GetOptions, GetRange, GetResult, GetResultPayload, MultipartUpload, ObjectStore, PutMode,
    PutMultipartOptions, PutOptions as OsPutOptions, PutResult, Result as OsResult,
};
use bytes::Bytes;
use futures_util::stream::StreamExt;

use super::PUT_ID_METADATA;
use super::convert;
use super::errors::{Op, to_object_store};
use super::recognise::{Expect, Written, conditional, new_put_id};
use crate::StorageAccount;
use crate::blob::{BlobClient, ContainerClient, CopyOptions, CopyStatus, PutOptions, VersionId};
use crate::conditions::{Conditions, ETag, MatchCondition};
use crate::error::{Error, Result};

/// A blob container (with an optional prefix) as an `object_store::ObjectStore`. Cheap to
/// clone.
///
/// Every operation goes through azstore's own clients and pipeline (its retries within a time
/// budget, its typed errors, its traces and metrics), and conditional writes whose reply was
/// lost are recognised by a write id instead of being repeated blind (see the
/// [module docs](super)).
///
/// | `ObjectStore` | Azure Blob Storage |
/// |---|---|
/// | `get_opts` | Get Blob (ranged: `x-ms-range`; a suffix range reads the size first and the range under `If-Match`), Get Blob Properties for `head`; `version` reads that version id |
/// | `put_opts` | Put Blob; `Create`: `If-None-Match: *`, `Update`: `If-Match` |
/// | `put_multipart_opts`, `MultipartStore` | Put Block per part, Put Block List on completion (with the `PutMode` found in the options' extensions) |
/// | `delete`, `delete_stream` | Delete Blob (with its snapshots); `delete_stream`: Blob Batch, one request per up to 256 paths ready, 8 requests in flight |
/// | `list`, `list_with_offset`, `list_with_delimiter`, `PaginatedListStore` | List Blobs (with `delimiter=/`) |
/// | `copy`, `copy_if_not_exists` | Copy Blob (`If-None-Match: *`) |
/// | `rename`, `rename_if_not_exists` | Copy Blob, then Delete Blob under `If-Match` of the source version copied |
///
/// ```no_run
/// use std::sync::Arc;
/// use object_store::{ObjectStore, ObjectStoreExt, path::Path};
///
/// # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
/// let store: Arc<dyn ObjectStore> = Arc::new(azstore::object_store::BlobStore::from_env("lake")?);
/// store.put(&Path::from("raw/2026/11/28.csv"), "id,total\n1,10\n".into()).await?;
/// let bytes = store.get(&Path::from("raw/2026/11/28.csv")).await?.bytes().await?;
/// # let _ = bytes; Ok(()) }
/// ```
#[derive(Clone)]
pub struct BlobStore {
    pub(crate) container: ContainerClient,
    /// Blob-name prefix, without a trailing `/` (`None`: the container's root).
    prefix: Option<String>,
}

impl fmt::Debug for BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobStore")
            .field("container", &self.container.name())
            .field("prefix", &self.prefix)
            .finish()
    }
}

impl fmt::Display for BlobStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let url = self.container.pipeline.url_of(self.container.name());
        match &self.prefix {
            Some(p) => write!(f, "BlobStore({url}/{p})"),
            None => write!(f, "BlobStore({url})"),
        }
    }
}

impl BlobStore {
    /// The store of every blob in `container` (no request is sent).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::development();
    /// let store = azstore::object_store::BlobStore::new(account.container("lake")?);
    /// assert_eq!(store.to_string(), "BlobStore(http://127.0.0.1:10000/devstoreaccount1/lake)");
    /// # Ok(()) }
    /// ```
    pub fn new(container: ContainerClient) -> BlobStore {
        BlobStore {
            container,
            prefix: None,
        }
    }

    /// The same container with every path under `prefix` (`a/b` stores `x` as the blob
    /// `a/b/x`; listings report `x`).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::development();
    /// let store = azstore::object_store::BlobStore::new(account.container("lake")?)
    ///     .with_prefix("tables/orders");
    /// assert!(store.to_string().ends_with("/lake/tables/orders)"));
    /// # Ok(()) }
    /// ```
    pub fn with_prefix(mut self, prefix: impl AsRef<str>) -> BlobStore {
        let p = prefix.as_ref().trim_matches('/');
        self.prefix = (!p.is_empty()).then(|| p.to_string());
        self
    }

    /// The store of the container `container_name` of the account from the environment
    /// ([`StorageAccount::from_env`]).
    ///
    /// ```no_run
    /// # fn main() -> azstore::Result<()> {
    /// // AZURE_STORAGE_CONNECTION_STRING=... or AZURE_STORAGE_ACCOUNT_NAME + a credential
    /// let store = azstore::object_store::BlobStore::from_env("lake")?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub fn from_env(container_name: &str) -> Result<BlobStore> {
        Ok(BlobStore::new(
            StorageAccount::from_env()?.container(container_name)?,
        ))
    }

    /// The container (and prefix) a URL names, in the forms `object_store::parse_url`
    /// accepts for Azure, with the account from the environment ([`StorageAccount::from_env`],
    /// whose name must be the URL's when the URL names one):
    ///
    /// * `az://<container>/<prefix>`, `azure://<container>/<prefix>`,
    /// * `abfs[s]://<container>@<account>.dfs.core.windows.net/<prefix>`,
    /// * `https://<account>.blob.core.windows.net/<container>/<prefix>` (also `.dfs.`),
    /// * the account's own blob endpoint followed by `/<container>/<prefix>` (e.g. Azurite's
    ///   `http://127.0.0.1:10000/devstoreaccount1/<container>`).
    ///
    /// ```no_run
    /// # fn main() -> azstore::Result<()> {
    /// let store = azstore::object_store::BlobStore::from_url("az://lake/tables/orders")?;
    /// # let _ = store; Ok(()) }
    /// ```
    pub fn from_url(url: &str) -> Result<BlobStore> {
        BlobStore::from_url_with(url, &StorageAccount::from_env()?)
    }

    /// [`from_url`](Self::from_url) with the given account.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::development();
    /// let store = azstore::object_store::BlobStore::from_url_with("az://lake/orders", &account)?;
    /// assert_eq!(store.container().name(), "lake");
    /// assert!(azstore::object_store::BlobStore::from_url_with("s3://lake", &account).is_err());
    /// # Ok(()) }
    /// ```
    pub fn from_url_with(url: &str, account: &StorageAccount) -> Result<BlobStore> {
        let parsed = super::url::parse(url, account)?;
        Ok(BlobStore::new(account.container(&parsed.container)?).with_prefix(parsed.prefix))
    }

    /// The container.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::development();
    /// let store = azstore::object_store::BlobStore::new(account.container("lake")?);
    /// assert_eq!(store.container().name(), "lake");
    /// # Ok(()) }
    /// ```
    pub fn container(&self) -> &ContainerClient {
        &self.container
    }

    /// The blob name of `location`.
    pub(crate) fn name(&self, location: &Path) -> String {
        match &self.prefix {
            Some(p) if location.as_ref().is_empty() => p.clone(),
            Some(p) => format!("{p}/{location}"),
            None => location.as_ref().to_string(),
        }
    }

    /// The blob client of `location` (the name checked before anything is sent).
    pub(crate) fn blob(&self, location: &Path) -> OsResult<BlobClient> {
        self.container
            .blob(&self.name(location))
            .map_err(|e| fail(e, location, Op::Plain))
    }

    /// The path of the blob `name` (which starts with the prefix).
    pub(crate) fn path_of(&self, name: &str) -> OsResult<Path> {
        let rel = match &self.prefix {
            Some(p) => name
                .strip_prefix(p.as_str())
                .and_then(|r| r.strip_prefix('/'))
                .unwrap_or(name),
            None => name,
        };
        Ok(Path::parse(rel)?)
    }

    /// The List Blobs prefix of the object_store prefix `prefix` (segment-wise: `a` lists
    /// `a/...`, never `ab`).
    pub(crate) fn list_prefix(&self, prefix: Option<&Path>) -> Option<String> {
        let p = prefix.map(|p| p.as_ref()).unwrap_or("");
        match (&self.prefix, p.is_empty()) {
            (None, true) => None,
            (None, false) => Some(format!("{p}/")),
            (Some(s), true) => Some(format!("{s}/")),
            (Some(s), false) => Some(format!("{s}/{p}/")),
        }
    }

    /// The List Blobs prefix of a raw key prefix (as `PaginatedListStore` gives it).
    pub(crate) fn raw_prefix(&self, prefix: Option<&str>) -> Option<String> {
        let p = prefix.unwrap_or("");
        match &self.prefix {
            None if p.is_empty() => None,
            None => Some(p.to_string()),
            Some(s) => Some(format!("{s}/{p}")),
        }
    }

    /// A multipart upload to `location` whose completion (Put Block List) is conditioned by
    /// `mode`: `Create` commits only if no blob exists there, `Update` only if the blob is at
    /// the given ETag. A completion whose reply was lost is recognised as a conditional put
    /// is. The same as `put_multipart_opts` with `mode` in the options' extensions.
    ///
    /// ```no_run
    /// use object_store::{PutMode, PutMultipartOptions, path::Path};
    /// # async fn demo(store: azstore::object_store::BlobStore) -> object_store::Result<()> {
    /// let mut upload = store
    ///     .put_multipart_mode(&Path::from("big/part-0.parquet"), PutMultipartOptions::default(), PutMode::Create)
    ///     .await?;
    /// upload.put_part(vec![0u8; 8 << 20].into()).await?;
    /// match upload.complete().await {
    ///     Err(object_store::Error::AlreadyExists { .. }) => println!("someone else wrote it first"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn put_multipart_mode(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
        mode: PutMode,
    ) -> OsResult<Box<dyn MultipartUpload>> {
        let mut opts = opts;
        opts.extensions.insert(mode);
        self.put_multipart_opts(location, opts).await
    }

    /// Put Blob of `body` under `mode`, settling a lost reply of a conditional one.
    pub(crate) async fn put_blob(
        &self,
        location: &Path,
        body: Bytes,
        opts: OsPutOptions,
    ) -> OsResult<PutResult> {
        let blob = self.blob(location)?;
        let mut write = convert::write_options(&opts.attributes, &opts.tags)
            .map_err(|e| fail(e, location, Op::Plain))?;
        let settled_above = opts
            .extensions
            .get::<super::versioned::SettledAbove>()
            .is_some();
        let written = match expect_of(&opts.mode, location)? {
            None => {
                let options = PutOptions::new(Conditions::none()).write_options(write);
                Written::from(
                    blob.put(body, &options)
                        .await
                        .map_err(|e| fail(e, location, Op::Plain))?,
                )
            }
            Some((expect, op)) => {
                let conditions = conditions_of(&expect);
                if settled_above {
                    let options = PutOptions::new(conditions).write_options(write);
                    Written::from(
                        blob.put(body, &options)
                            .await
                            .map_err(|e| fail(e, location, op))?,
                    )
                } else {
                    let id = new_put_id();
                    write.metadata.insert(PUT_ID_METADATA.into(), id.clone());
                    let options = PutOptions::new(conditions).write_options(write);
                    conditional(&blob, &id, &expect, || blob.put(body.clone(), &options))
                        .await
                        .map_err(|e| fail(e, location, op))?
                }
            }
        };
        Ok(put_result(written))
    }

    pub(crate) async fn get_blob(
        &self,
        location: &Path,
        options: GetOptions,
    ) -> Result<GetResult, Fail> {
        let mut blob = self.blob(location).map_err(Fail::Os)?;
        if let Some(v) = &options.version {
            blob = blob.at_version(&VersionId::new(v.clone()));
        }
        let conditions = read_conditions(&options)?;
        if options.head {
            let p = blob.get_properties_if(&conditions).await?;
            let meta = convert::meta(location.clone(), &p)?;
            return Ok(GetResult {
                payload: one_chunk(Bytes::new()),
                range: 0..meta.size,
                meta,
                attributes: convert::attributes(&p),
                extensions: Default::default(),
            });
        }
        let range = match &options.range {
            None => None,
            Some(GetRange::Bounded(r)) => {
                if r.start >= r.end {
                    return Err(Fail::Az(Error::invalid_input(format!(
                        "the range {}..{} is empty",
                        r.start, r.end
                    ))));
                }
                Some((r.start, Some(r.end)))
            }
            Some(GetRange::Offset(start)) => Some((*start, None)),
            Some(GetRange::Suffix(n)) => {
                // Azure takes no suffix range: read the size, then the range of exactly that
                // version.
                let p = blob.get_properties_if(&conditions).await?;
                let start = p.content_length.saturating_sub(*n);
                if start == p.content_length {
                    let meta = convert::meta(location.clone(), &p)?;
                    return Ok(GetResult {
                        payload: one_chunk(Bytes::new()),
                        range: start..start,
                        meta,
                        attributes: convert::attributes(&p),
                        extensions: Default::default(),
                    });
                }
                let pinned = Conditions::if_match(&p.etag);
                return self
                    .streamed(
                        &blob,
                        location,
                        Some((start, Some(p.content_length))),
                        &pinned,
                    )
                    .await;
            }
        };
        self.streamed(&blob, location, range, &conditions).await
    }

    /// One Get Blob of `range` whose body streams to the caller as it arrives.
    async fn streamed(
        &self,
        blob: &BlobClient,
        location: &Path,
        range: Option<(u64, Option<u64>)>,
        conditions: &Conditions,
    ) -> Result<GetResult, Fail> {
        let (p, resp) = blob.get_streaming(range, conditions).await?;
        let size = p.content_length;
        let (start, end) = match range {
            None => (0, size),
            Some((start, end)) => (start, end.unwrap_or(size).min(size)),
        };
        let meta = convert::meta(location.clone(), &p)?;
        let path = location.clone();
        let body = resp
            .into_stream()
            .map(move |chunk| chunk.map_err(|e| fail(e, &path, Op::Plain)))
            // Callers (object_store's collect_bytes) may poll again after the end.
            .fuse()
            .boxed();
        Ok(GetResult {
            range: start..end,
            meta,
            attributes: convert::attributes(&p),
            payload: GetResultPayload::Stream(body),
            extensions: Default::default(),
        })
    }

    /// Delete Blob of `location`, whoever wrote it last.
    pub(crate) async fn delete_one(&self, location: &Path) -> OsResult<()> {
        self.blob(location)?
            .delete(&Conditions::none())
            .await
            .map_err(|e| fail(e, location, Op::Plain))
    }

    /// Deletes `locations` (one chunk of a `delete_stream`, at most 256 items), one result per
    /// item in order, each error mapped as [`delete_one`](Self::delete_one)'s. Two or more
    /// valid paths go as one Blob Batch request; a single path as Delete Blob (a batch of one
    /// costs the same request plus the multipart envelope). A path whose subrequest was
    /// answered with a transient status (500, 503 `ServerBusy`, ...) is deleted again on its
    /// own through the pipeline's retries, as a single Delete Blob would have been; a batch
    /// request that failed as a whole was already retried by the pipeline, and each of its
    /// paths carries its error.
    pub(crate) async fn delete_batch(&self, locations: Vec<OsResult<Path>>) -> Vec<OsResult<Path>> {
        let mut out: Vec<Option<OsResult<Path>>> = Vec::with_capacity(locations.len());
        // (slot, path, blob name) of every path to delete.
        let mut todo = Vec::new();
        for item in locations {
            match item {
                Err(e) => out.push(Some(Err(e))),
                Ok(path) => {
                    let name = self.name(&path);
                    match crate::blob::validate_blob_name(&name) {
                        Err(e) => out.push(Some(Err(fail(e, &path, Op::Plain)))),
                        Ok(()) => {
                            todo.push((out.len(), path, name));
                            out.push(None);
                        }
                    }
                }
            }
        }
        match todo.as_slice() {
            [] => {}
            [(slot, path, _)] => {
                out[*slot] = Some(self.delete_one(path).await.map(|()| path.clone()));
            }
            _ => {
                let names: Vec<&str> = todo.iter().map(|(_, _, n)| n.as_str()).collect();
                match self.container.submit_delete_batch(&names).await {
                    Err(e) => {
                        for (slot, path, _) in &todo {
                            out[*slot] = Some(Err(fail(e.duplicate(), path, Op::Plain)));
                        }
                    }
                    Ok(results) => {
                        for ((slot, path, _), result) in todo.iter().zip(results) {
                            let result = match result {
                                Ok(()) => Ok(path.clone()),
                                Err(e) if e.is_retryable() => {
                                    self.delete_one(path).await.map(|()| path.clone())
                                }
                                Err(e) => Err(fail(e, path, Op::Plain)),
                            };
                            out[*slot] = Some(result);
                        }
                    }
                }
            }
        }
        out.into_iter()
            .map(|r| {
                r.unwrap_or_else(|| {
                    Err(::object_store::Error::Generic {
                        store: super::errors::STORE,
                        source: "the Blob Batch reply left a path without a result".into(),
                    })
                })
            })
            .collect()
    }

    /// Copy Blob from `from` to `to`. `create`: only if `to` does not exist, recognised after
    /// a lost reply. `source_etag`: copy only that version of the source. Returns the source
    /// version copied.
    pub(crate) async fn copy_blob(
        &self,
        from: &Path,
        to: &Path,
        create: bool,
        pin_source: bool,
    ) -> OsResult<Option<ETag>> {
        let src = self.blob(from)?;
        let dst = self.blob(to)?;
        let source_url = src.url();
        if !create && !pin_source {
            let result = dst
                .start_copy_from_url(&source_url, &CopyOptions::new(Conditions::none()))
                .await
                .map_err(|e| fail(e, from, Op::Plain))?;
            self.finish_copy(&dst, to, result.status, &result.copy_id)
                .await?;
            return Ok(None);
        }
        // The source's version and metadata: the copy is pinned to that version (so a rename
        // deletes exactly what it copied) and, for a create, carries its metadata and our
        // write id.
        let p = src
            .get_properties()
            .await
            .map_err(|e| fail(e, from, Op::Plain))?;
        let mut options = CopyOptions::new(if create {
            Conditions::if_not_exists()
        } else {
            Conditions::none()
        })
        .source_conditions(Conditions::if_match(&p.etag));
        if create {
            let id = new_put_id();
            let mut metadata = p.metadata.clone();
            metadata.insert(PUT_ID_METADATA.into(), id.clone());
            options.write.metadata = metadata;
            // The copy id and status of the last Copy Blob answered.
            let answered = std::sync::Mutex::new(None);
            conditional(&dst, &id, &Expect::Create, || async {
                let r = dst.start_copy_from_url(&source_url, &options).await?;
                *answered.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some((r.copy_id.clone(), r.status.clone()));
                Ok(crate::blob::WriteResult {
                    etag: r.etag,
                    last_modified: r.last_modified,
                    version_id: r.version_id,
                })
            })
            .await
            .map_err(|e| match e.status() {
                // A source that changed since it was read is as if it was not found at
                // that version.
                Some(412) if e.error_code() == Some(&crate::ErrorCode::SourceConditionNotMet) => {
                    fail(e, from, Op::Plain)
                }
                _ => fail(e, to, Op::Create),
            })?;
            let answered = answered.into_inner().unwrap_or_else(|p| p.into_inner());
            if let Some((copy_id, status)) = answered {
                self.finish_copy(&dst, to, status, &copy_id).await?;
            }
        } else {
            let r = dst
                .start_copy_from_url(&source_url, &options)
                .await
                .map_err(|e| fail(e, from, Op::Plain))?;
            self.finish_copy(&dst, to, r.status, &r.copy_id).await?;
        }
        Ok(Some(p.etag))
    }

    /// Waits for a copy the service did not finish at once (a copy within one account
    /// normally completes before the reply).
    async fn finish_copy(
        &self,
        dst: &BlobClient,
        to: &Path,
        status: CopyStatus,
        copy_id: &str,
    ) -> OsResult<()> {
        let status = match status {
            CopyStatus::Pending => dst
                .wait_for_copy(copy_id, Duration::from_millis(200))
                .await
                .map_err(|e| fail(e, to, Op::Plain))?,
            s => s,
        };
        match status {
            CopyStatus::Success => Ok(()),
            other => Err(fail(
                Error::decode(format!("the copy ended as {other:?}")),
                to,
                Op::Plain,
            )),
        }
    }
}

/// A get's failure: azstore's, or already object_store's.
pub(crate) enum Fail {
    Az(Error),
    Os(::object_store::Error),
}

impl From<Error> for Fail {
    fn from(e: Error) -> Fail {
        Fail::Az(e)
    }
}

/// `e` from an operation on `location` as an object_store error.
pub(crate) fn fail(e: Error, location: &Path, op: Op) -> ::object_store::Error {
    to_object_store(e, location.as_ref(), op)
}

/// The requirement of a conditional `mode` (`None` for an overwrite), and how its refusal is
/// reported.
pub(crate) fn expect_of(mode: &PutMode, location: &Path) -> OsResult<Option<(Expect, Op)>> {
    match mode {
        PutMode::Overwrite => Ok(None),
        PutMode::Create => Ok(Some((Expect::Create, Op::Create))),
        PutMode::Update(v) => match &v.e_tag {
            Some(etag) => Ok(Some((Expect::Update(ETag::new(etag.clone())), Op::Update))),
            None => Err(::object_store::Error::Generic {
                store: super::errors::STORE,
                source: format!(
                    "PutMode::Update of {location} needs an ETag (Azure conditions writes on \
                     ETags, not on version ids)"
                )
                .into(),
            }),
        },
    }
}

/// The conditions that state `expect`.
pub(crate) fn conditions_of(expect: &Expect) -> Conditions {
    match expect {
        Expect::Create => Conditions::if_not_exists(),
        Expect::Update(etag) => Conditions::if_match(etag),
    }
}

pub(crate) fn put_result(w: Written) -> PutResult {
    PutResult {
        e_tag: Some(w.etag.as_str().to_string()),
        version: w.version,
        extensions: Default::default(),
    }
}

fn one_chunk(body: Bytes) -> GetResultPayload {
    GetResultPayload::Stream(futures_util::stream::once(async move { Ok(body) }).boxed())
}

/// The conditions of a get.
fn read_conditions(options: &GetOptions) -> Result<Conditions> {
    let matching = |s: &String| {
        if s.trim() == "*" {
            MatchCondition::Any
        } else {
            MatchCondition::ETag(ETag::new(s.clone()))
        }
    };
    let mut c = Conditions::none();
    c.if_match = options.if_match.as_ref().map(matching);
    c.if_none_match = options.if_none_match.as_ref().map(matching);
    c.if_modified_since = options
        .if_modified_since
        .map(convert::to_time)
        .transpose()?;
    c.if_unmodified_since = options
        .if_unmodified_since
        .map(convert::to_time)
        .transpose()?;
    Ok(c)
}
