//! Uploads of any size: one Put Blob when small, otherwise blocks staged in parallel (bounded
//! concurrency) and committed with one Put Block List that carries the caller's conditions —
//! so "replace only if unchanged" holds for a 1 GiB upload exactly as for 1 KiB. The staging
//! is done by the transfer engine ([`crate::transfer`]), which also uploads from files and
//! readers ([`BlobClient::upload_file`], [`BlobClient::upload_reader`]).

use crate::body::IntoBody;

use crate::blob::block::{CommitOptions, MAX_BLOCK_SIZE, MAX_BLOCKS};
use crate::blob::client::{BlobClient, PutOptions, WriteResult};
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::transfer::Progress;

/// Options of [`BlobClient::upload_with`] and [`BlobClient::upload_stream`].
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient, data: bytes::Bytes) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::UploadOptions;
/// let options = UploadOptions::new(Conditions::if_not_exists())
///     .block_size(16 << 20)
///     .max_concurrency(8)
///     .content_type("application/zip");
/// blob.upload_with(data, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct UploadOptions {
    /// Conditions, applied to the single Put Blob or to the final Put Block List.
    pub conditions: Conditions,
    /// HTTP headers, metadata, tier, tags and encryption scope of the new blob (content type
    /// `application/octet-stream` unless set).
    pub write: crate::blob::BlobWriteOptions,
    /// Transactional checksum of the single Put Blob or of every staged block.
    pub checksum: crate::blob::Checksum,
    /// Bodies up to this size go in one Put Blob (default 32 MiB).
    pub single_put_limit: usize,
    /// Block size of staged uploads (default 8 MiB; at most 4000 MiB).
    pub block_size: usize,
    /// Blocks staged at the same time (default 4).
    pub max_concurrency: usize,
    /// Before staging, check an `If-Match` ETag with a cheap HEAD so a stale upload fails
    /// before sending gigabytes (default true). The commit is still what decides.
    pub precheck: bool,
    /// Where progress is reported (none by default).
    pub progress: Option<Progress>,
}

impl UploadOptions {
    /// Options for a write under `conditions` — the one choice every write that replaces a
    /// blob makes visibly (there is no `Default`):
    ///
    /// * [`Conditions::if_match(&etag)`](Conditions::if_match): replace only the version you
    ///   read (412 `ConditionNotMet` otherwise);
    /// * [`Conditions::if_not_exists()`](Conditions::if_not_exists): create only (409
    ///   `BlobAlreadyExists` when it exists);
    /// * [`Conditions::none()`](Conditions::none): last writer wins.
    ///
    /// Defaults: one Put Blob up to 32 MiB, above that 8 MiB blocks, 4 at a time, an
    /// `If-Match` ETag checked before staging, no checksum, no progress callback.
    ///
    /// ```
    /// use azstore::{Conditions, blob::UploadOptions};
    /// let opts = UploadOptions::new(Conditions::none()).block_size(16 * 1024 * 1024);
    /// # let _ = opts;
    /// ```
    ///
    /// Write options have no default: an unconditional write is always spelled out.
    ///
    /// ```compile_fail
    /// let opts = azstore::blob::UploadOptions::new(Conditions::none()); // no Default: choose the conditions
    /// ```
    pub fn new(conditions: Conditions) -> Self {
        UploadOptions {
            conditions,
            write: crate::blob::BlobWriteOptions::default(),
            checksum: crate::blob::Checksum::None,
            single_put_limit: 32 * 1024 * 1024,
            block_size: 8 * 1024 * 1024,
            max_concurrency: 4,
            precheck: true,
            progress: None,
        }
    }
}

impl UploadOptions {
    /// Replaces the conditions chosen in [`new`](Self::new) (`if_match`, `if_not_exists`
    /// or `none`, plus a lease id for a leased blob).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::UploadOptions;
    /// let lease = LeaseId::random();
    /// let options = UploadOptions::new(Conditions::if_not_exists()).conditions(Conditions::lease(&lease));
    /// assert_eq!(options.conditions.lease_id, Some(lease));
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Bytes per staged block when the body is larger than the
    /// [single-put limit](Self::single_put_limit) (1 byte – 4000 MiB; default 8 MiB).
    /// Memory in flight is about `max_concurrency × block_size`.
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// let options = UploadOptions::new(Conditions::none()).block_size(16 << 20);
    /// assert_eq!(options.block_size, 16 << 20);
    /// ```
    pub fn block_size(mut self, v: usize) -> Self {
        self.block_size = v;
        self
    }

    /// Bodies up to this many bytes are written with one Put Blob; larger ones are staged
    /// as blocks and committed (default 32 MiB; 0: always stage blocks).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// let always_blocks = UploadOptions::new(Conditions::none()).single_put_limit(0);
    /// # let _ = always_blocks;
    /// ```
    pub fn single_put_limit(mut self, v: usize) -> Self {
        self.single_put_limit = v;
        self
    }

    /// Blocks staged at the same time (at least 1; default 4).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// let options = UploadOptions::new(Conditions::none()).max_concurrency(8);
    /// # let _ = options;
    /// ```
    pub fn max_concurrency(mut self, v: usize) -> Self {
        self.max_concurrency = v;
        self
    }

    /// Whether an `If-Match` ETag is checked with a cheap HEAD before any block is
    /// staged, so that a stale upload fails before sending gigabytes (default true; see
    /// [`UploadOptions::precheck`](#structfield.precheck)). The commit decides either way.
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// let options = UploadOptions::new(Conditions::none()).precheck(false);
    /// # let _ = options;
    /// ```
    pub fn precheck(mut self, v: bool) -> Self {
        self.precheck = v;
        self
    }

    /// The transactional checksum of every request that carries data (the Put Blob, or
    /// each staged block); the service refuses damaged bytes. Default
    /// [`Checksum::None`](crate::blob::Checksum::None).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::{Checksum, UploadOptions};
    /// let options = UploadOptions::new(Conditions::none()).checksum(Checksum::Crc64);
    /// # let _ = options;
    /// ```
    pub fn checksum(mut self, v: crate::blob::Checksum) -> Self {
        self.checksum = v;
        self
    }

    /// Reports progress to `progress` (default: no reports).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// use azstore::transfer::Progress;
    /// let (progress, rx) = Progress::channel();
    /// let options = UploadOptions::new(Conditions::none()).progress(progress);
    /// # let _ = (options, rx);
    /// ```
    pub fn progress(mut self, v: Progress) -> Self {
        self.progress = Some(v);
        self
    }

    pub(crate) fn validate(&self) -> Result<()> {
        self.conditions.check(Allowed::ALL, "upload")?;
        if self.block_size == 0 || self.block_size as u64 > MAX_BLOCK_SIZE {
            return Err(Error::invalid_input(
                "block size must be 1 byte to 4000 MiB",
            ));
        }
        if self.max_concurrency == 0 {
            return Err(Error::invalid_input("max_concurrency must be at least 1"));
        }
        crate::names::validate_metadata(&self.write.metadata)
    }

    pub(crate) fn commit_options(&self) -> CommitOptions {
        let mut write = self.write.clone();
        write
            .headers
            .content_type
            .get_or_insert_with(|| "application/octet-stream".into());
        CommitOptions {
            conditions: self.conditions.clone(),
            write,
        }
    }

    pub(crate) fn put_options(&self) -> PutOptions {
        PutOptions {
            conditions: self.conditions.clone(),
            write: self.write.clone(),
            checksum: self.checksum,
        }
    }
}

crate::blob::write_options::write_builders!(UploadOptions);

impl BlobClient {
    /// Uploads `body` of any size: one Put Blob up to `single_put_limit`, otherwise blocks of
    /// `block_size` staged `max_concurrency` at a time and committed with the caller's
    /// conditions. A stale `If-Match` leaves the old content intact (the staged blocks are
    /// discarded by the service).
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient, etag: azstore::ETag, data: bytes::Bytes) -> azstore::Result<()> {
    /// use azstore::blob::UploadOptions;
    /// use azstore::Conditions;
    /// let opts = UploadOptions::new(Conditions::if_match(&etag)).block_size(8 << 20);
    /// blob.upload_with(data, &opts).await?; // 412 if anyone wrote since we read `etag`
    /// # Ok(()) }
    /// ```
    pub async fn upload_with(
        &self,
        body: impl IntoBody,
        options: &UploadOptions,
    ) -> Result<WriteResult> {
        options.validate()?;
        let body = body.into_body();
        if body.len() <= options.single_put_limit {
            let tracker = crate::transfer::progress::Tracker::new(options.progress.as_ref());
            let n = body.len() as u64;
            tracker.start(Some(n));
            let w = self.put(body, &options.put_options()).await?;
            tracker.add(n);
            return Ok(w);
        }
        let bs = options.block_size;
        let blocks = body.len().div_ceil(bs);
        if blocks > MAX_BLOCKS {
            return Err(Error::invalid_input(format!(
                "{} bytes in blocks of {bs} needs {blocks} blocks; the limit is 50,000",
                body.len()
            )));
        }
        self.upload_slices(body, options).await
    }
}

impl BlobClient {
    /// Uploads a block blob from bytes with the given conditions: one Put Blob up to 32 MiB,
    /// above that blocks staged in parallel and committed with the conditions (see
    /// [`BlobClient::upload_with`](crate::blob::BlobClient::upload_with) to tune this).
    ///
    /// * `Conditions::none()`: last writer wins.
    /// * `Conditions::if_match(&etag)`: 412 `ConditionNotMet` if someone wrote since.
    /// * `Conditions::if_not_exists()`: 409 `BlobAlreadyExists` if it exists.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match blob.upload("first!", &Conditions::if_not_exists()).await {
    ///     Ok(written) => println!("created at {}", written.etag),
    ///     Err(e) if e.is_conflict() => println!("someone else created it"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn upload(
        &self,
        body: impl IntoBody,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        let body = body.into_body();
        let options = UploadOptions::new(conditions.clone());
        if body.len() <= options.single_put_limit {
            return self.put(body, &PutOptions::new(options.conditions)).await;
        }
        self.upload_with(body, &options).await
    }
}
