//! The Blob side of the transfer engine: ranged reads pinned with `If-Match`, blocks staged
//! with Put Block and committed with one Put Block List.

use std::ops::Range;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use tokio::io::AsyncRead;

use crate::blob::{
    BlobClient, BlobProperties, BlobStream, BlockId, Download, DownloadOptions, MAX_BLOCKS,
    UploadOptions, WriteResult,
};
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::http::range_header;
use crate::http::{Headers, Method, StreamingResponse};
use crate::storage::StorageRequest;
use crate::storage::open_first;
use crate::transfer::download::{FirstProps, Plan, RangeSource, Version};
use crate::transfer::progress::Tracker;
use crate::transfer::upload::{
    BlockSink, Blocks, Chain, FileBlocks, ReaderBlocks, SliceBlocks, StreamBlocks,
};

impl FirstProps for BlobProperties {
    fn parse(headers: &Headers) -> Result<Self> {
        BlobProperties::from_headers(headers)
    }

    fn version(&self) -> Version {
        Version {
            etag: self.etag.clone(),
            total: self.content_length,
        }
    }
}

/// Ranged reads of one blob: the first with the caller's conditions, the rest pinned.
#[derive(Clone)]
pub(crate) struct BlobSource {
    blob: BlobClient,
    first: Conditions,
    lease: Option<LeaseId>,
}

impl BlobSource {
    pub(crate) fn new(blob: &BlobClient, conditions: &Conditions) -> Result<BlobSource> {
        super::client::check_read(conditions, "Get Blob")?;
        Ok(BlobSource {
            blob: blob.clone(),
            first: conditions.clone(),
            lease: conditions.lease_id.clone(),
        })
    }
}

impl RangeSource for BlobSource {
    type Props = BlobProperties;

    async fn open(&self, len: u64) -> Result<(BlobProperties, Version, StreamingResponse)> {
        open_first(
            &self.blob.pipeline,
            || self.blob.request(Method::Get).conditions(&self.first),
            len,
        )
        .await
    }

    async fn range(&self, range: Range<u64>, version: &Version) -> Result<StreamingResponse> {
        let mut pinned = Conditions::if_match(&version.etag);
        pinned.lease_id = self.lease.clone();
        let req = self
            .blob
            .request(Method::Get)
            .header("x-ms-range", range_header(&range))
            .conditions(&pinned);
        self.blob.pipeline.send_streaming(req).await
    }

    fn is_change(&self, e: &Error) -> bool {
        e.is_precondition_failed()
    }

    fn changed(&self, version: &Version, cause: Option<Error>) -> Error {
        let what = format!(
            "the blob changed during a chunked read (pinned ETag {})",
            version.etag
        );
        let e = match cause {
            Some(e) => e.context(what),
            None => Error::new(ErrorKind::PreconditionFailed, what)
                .with_code(ErrorCode::ConditionNotMet),
        };
        e.hint(
            "read it again, or have download_chunked / download_to_file start over on the new \
             version by themselves: DownloadOptions::default().on_change(OnChange::Restart { \
             max_restarts: 3 })",
        )
        .changed_during_read()
    }

    fn body_timeout(&self) -> Duration {
        self.blob.pipeline.attempt_timeout()
    }
}

pub(crate) fn plan(options: &DownloadOptions) -> Plan {
    Plan {
        chunk: options.chunk_size,
        concurrency: options.max_concurrency,
        on_change: options.on_change,
        tracker: Tracker::new(options.progress.as_ref()),
    }
}

/// Stages numbered blocks of one upload.
#[derive(Clone)]
struct BlockStager {
    blob: BlobClient,
    tag: Arc<str>,
    options: crate::blob::BlockOptions,
}

impl BlockSink for BlockStager {
    async fn stage(&self, index: u64, _offset: u64, data: Bytes) -> Result<()> {
        let id = BlockId::numbered(&self.tag, index)?;
        self.blob.put_block_with(&id, data, &self.options).await
    }
}

impl BlobClient {
    /// Downloads the blob into the file `path` with `options.max_concurrency` ranged GETs in
    /// flight, each range written at its offset (memory: about `max_concurrency ×
    /// chunk_size`), every range pinned to the first response's ETag. The data goes to a new file
    /// beside `path` first (`path` plus a random suffix and `.partial`, created only if no file
    /// or link is there, so none is followed) and is renamed into place only when complete, so
    /// `path` never holds a torn or partial copy. With [`OnChange::Restart`](crate::transfer::OnChange::Restart) a concurrent change
    /// starts the download over on the new version. Returns the properties of the version
    /// written.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::{DownloadOptions, OnChange};
    /// let options = DownloadOptions::default()
    ///     .max_concurrency(8)
    ///     .on_change(OnChange::Restart { max_restarts: 3 });
    /// let props = blob.download_to_file("/tmp/copy.bin", &options).await?;
    /// # let _ = props; Ok(()) }
    /// ```
    pub async fn download_to_file(
        &self,
        path: impl AsRef<std::path::Path>,
        options: &DownloadOptions,
    ) -> Result<BlobProperties> {
        let src = BlobSource::new(self, &options.conditions)?;
        crate::transfer::to_file(&src, &plan(options), path.as_ref()).await
    }

    /// Reads the whole blob into one buffer allocated at its size, with
    /// `options.max_concurrency` ranged GETs of `options.chunk_size` in flight, pinning the
    /// first ETag; on a concurrent change it fails or restarts as `options.on_change` says.
    /// The result is always one consistent version.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::DownloadOptions;
    /// let big = blob.download_chunked(&DownloadOptions::default().max_concurrency(8)).await?;
    /// println!("{} bytes of version {}", big.body.len(), big.properties.etag);
    /// # Ok(()) }
    /// ```
    pub async fn download_chunked(&self, options: &DownloadOptions) -> Result<Download> {
        let src = BlobSource::new(self, &options.conditions)?;
        let (properties, body) = crate::transfer::to_vec(&src, &plan(options)).await?;
        Ok(Download {
            body: Bytes::from(body),
            properties,
        })
    }
    /// Downloads the blob into the front of `buffer` with parallel ranged GETs (as
    /// [`BlobClient::download_chunked`], without allocating); returns the properties of the
    /// version read (its `content_length` is the number of bytes written). A buffer smaller
    /// than the blob is an `InvalidInput` error, found from the first response.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let mut buf = vec![0u8; 64 << 20];
    /// let p = blob.download_into(&mut buf, &Default::default()).await?;
    /// let content = &buf[..p.content_length as usize];
    /// # let _ = content; Ok(()) }
    /// ```
    pub async fn download_into(
        &self,
        buffer: &mut [u8],
        options: &DownloadOptions,
    ) -> Result<BlobProperties> {
        let src = BlobSource::new(self, &options.conditions)?;
        let (props, _) = crate::transfer::into_slice(&src, &plan(options), buffer).await?;
        Ok(props)
    }

    /// Streams the blob in order, `options.max_concurrency` ranges of `options.chunk_size`
    /// read ahead in parallel (memory: about `max_concurrency + 1` chunks), every range pinned
    /// to the first response's ETag. A change of the blob ends the stream with
    /// `PreconditionFailed` (bytes already delivered cannot be taken back, so
    /// `OnChange::Restart` does not apply to streams).
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::DownloadOptions;
    /// use azstore::paging::TryStreamExt;
    /// let mut s = blob.download_stream_with(&DownloadOptions::default().max_concurrency(8)).await?;
    /// while let Some(chunk) = s.try_next().await? {
    ///     let _ = chunk; // in order, one consistent version
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn download_stream_with(&self, options: &DownloadOptions) -> Result<BlobStream> {
        let src = BlobSource::new(self, &options.conditions)?;
        let (properties, inner) = crate::transfer::to_stream(&src, &plan(options)).await?;
        Ok(BlobStream { properties, inner })
    }

    /// Uploads the file at `path` as a block blob: one Put Blob up to
    /// `options.single_put_limit`, otherwise blocks read with positioned reads and staged
    /// `options.max_concurrency` at a time (memory: about `max_concurrency × block_size`),
    /// committed with the caller's conditions. The file must not change during the upload.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::UploadOptions;
    /// use azstore::Conditions;
    /// let w = blob
    ///     .upload_file("/var/backups/db.tar", &UploadOptions::new(Conditions::if_not_exists()))
    ///     .await?;
    /// # let _ = w; Ok(()) }
    /// ```
    pub async fn upload_file(
        &self,
        path: impl AsRef<Path>,
        options: &UploadOptions,
    ) -> Result<WriteResult> {
        options.validate()?;
        let mut blocks = FileBlocks::open(path.as_ref(), options.block_size).await?;
        let (size, bs) = (blocks.end, options.block_size);
        if size > options.single_put_limit as u64 && size.div_ceil(bs as u64) > MAX_BLOCKS as u64 {
            return Err(Error::invalid_input(format!(
                "{size} bytes in blocks of {bs} needs more than 50,000 blocks"
            )));
        }
        let tracker = Tracker::new(options.progress.as_ref());
        tracker.start(Some(size));
        if size <= options.single_put_limit as u64 {
            blocks.size = size.max(1) as usize;
            let body = blocks.next_block().await?.unwrap_or_default();
            let w = self.put(body, &options.put_options()).await?;
            tracker.add(size);
            return Ok(w);
        }
        self.stage_and_commit(&mut blocks, options, &tracker).await
    }

    /// Uploads everything `reader` yields as a block blob, each block read once into its own
    /// buffer and staged `options.max_concurrency` at a time (memory: about
    /// `max_concurrency × block_size`), committed with the caller's conditions. Data that
    /// ends within the first block (and within `single_put_limit`) is one Put Blob.
    ///
    /// ```no_run
    /// # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let stdin = tokio::io::stdin();
    /// blob.upload_reader(stdin, &azstore::blob::UploadOptions::new(azstore::Conditions::none())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload_reader<R>(&self, reader: R, options: &UploadOptions) -> Result<WriteResult>
    where
        R: AsyncRead + Send + Unpin,
    {
        options.validate()?;
        self.upload_blocks(ReaderBlocks::new(reader, options.block_size), options)
            .await
    }

    /// [`BlobClient::upload_stream`] and [`BlobClient::upload_reader`]: one Put Blob when the
    /// data ends within the first block, otherwise staged blocks.
    pub(crate) async fn upload_blocks<B: Blocks>(
        &self,
        mut blocks: B,
        options: &UploadOptions,
    ) -> Result<WriteResult> {
        let tracker = Tracker::new(options.progress.as_ref());
        tracker.start(None);
        let first = blocks.next_block().await?.unwrap_or_default();
        if first.len() < options.block_size && first.len() <= options.single_put_limit {
            let n = first.len() as u64;
            tracker.finish(n);
            let w = self.put(first, &options.put_options()).await?;
            tracker.add(n);
            return Ok(w);
        }
        let mut chained = Chain {
            first: Some(first),
            rest: blocks,
        };
        self.stage_and_commit(&mut chained, options, &tracker).await
    }

    /// [`BlobClient::upload_with`] above the single-put limit.
    pub(crate) async fn upload_slices(
        &self,
        body: Bytes,
        options: &UploadOptions,
    ) -> Result<WriteResult> {
        let tracker = Tracker::new(options.progress.as_ref());
        tracker.start(Some(body.len() as u64));
        let mut blocks = SliceBlocks {
            body,
            size: options.block_size,
        };
        self.stage_and_commit(&mut blocks, options, &tracker).await
    }

    /// Stages every block in parallel, then commits them with the caller's conditions.
    pub(crate) async fn stage_and_commit<B: Blocks>(
        &self,
        blocks: &mut B,
        options: &UploadOptions,
        tracker: &Arc<Tracker>,
    ) -> Result<WriteResult> {
        use crate::conditions::MatchCondition;
        if options.precheck {
            if let Some(MatchCondition::ETag(etag)) = &options.conditions.if_match {
                let mut c = Conditions::if_match(etag);
                c.lease_id = options.conditions.lease_id.clone();
                if let Err(e) = self.get_properties_if(&c).await {
                    if e.is_precondition_failed() {
                        return Err(e.context("upload refused before staging"));
                    }
                }
            }
        }
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let stager = BlockStager {
            blob: self.clone(),
            tag: tag[..12].into(),
            options: crate::blob::BlockOptions {
                conditions: match &options.conditions.lease_id {
                    Some(l) => Conditions::lease(l),
                    None => Conditions::none(),
                },
                checksum: options.checksum,
            },
        };
        let staged = crate::transfer::upload::stage_all(
            blocks,
            &stager,
            options.max_concurrency,
            MAX_BLOCKS as u64,
            tracker,
        )
        .await?;
        tracker.finish(staged.bytes);
        let ids = (0..staged.blocks)
            .map(|i| BlockId::numbered(&stager.tag, i).map(crate::blob::BlockRef::Latest))
            .collect::<Result<Vec<_>>>()?;
        self.put_block_list(&ids, &options.commit_options()).await
    }

    /// Uploads a stream of byte pieces of any length (see [`BlobClient::upload_reader`]):
    /// pieces at least one block long are sliced without a copy, smaller ones gathered into
    /// one buffer per block.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use futures_util::stream;
    /// use azstore::Conditions;
    /// use azstore::blob::UploadOptions;
    /// let pieces = vec![Ok(bytes::Bytes::from("part 1, ")), Ok(bytes::Bytes::from("part 2"))];
    /// blob.upload_stream(stream::iter(pieces), &UploadOptions::new(Conditions::none())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload_stream<S>(&self, body: S, options: &UploadOptions) -> Result<WriteResult>
    where
        S: Stream<Item = Result<Bytes>> + Send + Unpin,
    {
        options.validate()?;
        self.upload_blocks(StreamBlocks::new(body, options.block_size), options)
            .await
    }
}
