//! Uploads of any size: one Put Blob when small, otherwise blocks staged in parallel (bounded
//! concurrency) and committed with one Put Block List that carries the caller's conditions —
//! so "replace only if unchanged" holds for a 1 GiB upload exactly as for 1 KiB.

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use tokio::task::JoinSet;

use crate::blob::block::{BlockId, BlockRef, CommitOptions, MAX_BLOCK_SIZE, MAX_BLOCKS};
use crate::blob::client::{BlobClient, PutOptions, WriteResult};
use crate::conditions::{Allowed, Conditions, MatchCondition};
use crate::error::{Error, Result};

/// Options of [`BlobClient::upload_with`] and [`BlobClient::upload_stream`].
#[derive(Debug, Clone)]
#[must_use]
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
}

impl Default for UploadOptions {
    fn default() -> Self {
        UploadOptions {
            conditions: Conditions::none(),
            write: crate::blob::BlobWriteOptions::default(),
            checksum: crate::blob::Checksum::None,
            single_put_limit: 32 * 1024 * 1024,
            block_size: 8 * 1024 * 1024,
            max_concurrency: 4,
            precheck: true,
        }
    }
}

impl UploadOptions {
    /// Default options with these conditions.
    pub fn conditions(conditions: Conditions) -> Self {
        UploadOptions {
            conditions,
            ..UploadOptions::default()
        }
    }

    /// Sets the block size.
    pub fn block_size(mut self, bytes: usize) -> Self {
        self.block_size = bytes;
        self
    }

    /// Sets the single-put limit (0: always stage blocks).
    pub fn single_put_limit(mut self, bytes: usize) -> Self {
        self.single_put_limit = bytes;
        self
    }

    /// Sets the number of blocks staged at once.
    pub fn max_concurrency(mut self, n: usize) -> Self {
        self.max_concurrency = n;
        self
    }

    /// Sets the transactional checksum of every request that carries data.
    pub fn checksum(mut self, checksum: crate::blob::Checksum) -> Self {
        self.checksum = checksum;
        self
    }

    fn validate(&self) -> Result<()> {
        self.conditions.check(Allowed::ALL, "upload")?;
        if self.block_size == 0 || self.block_size as u64 > MAX_BLOCK_SIZE {
            return Err(Error::invalid_input(
                "block size must be 1 byte to 4000 MiB",
            ));
        }
        if self.max_concurrency == 0 {
            return Err(Error::invalid_input("max_concurrency must be at least 1"));
        }
        crate::blob::names::validate_metadata(&self.write.metadata)
    }

    fn put_options(&self) -> PutOptions {
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
    /// # async fn f(blob: azstore::BlobClient, etag: azstore::ETag, data: bytes::Bytes) -> azstore::Result<()> {
    /// use azstore::blob::UploadOptions;
    /// use azstore::Conditions;
    /// let opts = UploadOptions::conditions(Conditions::if_match(&etag)).block_size(8 << 20);
    /// blob.upload_with(data, &opts).await?; // 412 if anyone wrote since we read `etag`
    /// # Ok(()) }
    /// ```
    pub async fn upload_with(
        &self,
        body: impl Into<Bytes>,
        options: &UploadOptions,
    ) -> Result<WriteResult> {
        options.validate()?;
        let body = body.into();
        if body.len() <= options.single_put_limit {
            return self.put(body, &options.put_options()).await;
        }
        let bs = options.block_size;
        let blocks = body.len().div_ceil(bs);
        if blocks > MAX_BLOCKS {
            return Err(Error::invalid_input(format!(
                "{} bytes in blocks of {bs} needs {blocks} blocks; the limit is 50,000",
                body.len()
            )));
        }
        let chunks =
            (0..blocks).map(move |i| Ok(body.slice(i * bs..((i + 1) * bs).min(body.len()))));
        self.stage_and_commit(futures_util::stream::iter(chunks), options)
            .await
    }

    /// Uploads a stream of any length, memory bounded by `single_put_limit` plus
    /// `max_concurrency` blocks: a short stream becomes one Put Blob, a long one is staged in
    /// blocks and committed with the caller's conditions.
    pub async fn upload_stream<S>(&self, body: S, options: &UploadOptions) -> Result<WriteResult>
    where
        S: Stream<Item = Result<Bytes>> + Send + Unpin,
    {
        options.validate()?;
        let mut body = body;
        let mut head = BytesMut::new();
        let mut ended = false;
        while head.len() <= options.single_put_limit {
            match body.next().await {
                Some(chunk) => head.extend_from_slice(&chunk?),
                None => {
                    ended = true;
                    break;
                }
            }
        }
        if ended {
            return self.put(head.freeze(), &options.put_options()).await;
        }
        let bs = options.block_size;
        // Re-chunk `head` followed by the rest of `body` into blocks of exactly `bs` bytes.
        let rechunked = futures_util::stream::try_unfold(
            (head, Some(body)),
            move |(mut buf, mut rest)| async move {
                while buf.len() < bs {
                    let Some(src) = rest.as_mut() else { break };
                    match src.next().await {
                        Some(chunk) => buf.extend_from_slice(&chunk?),
                        None => rest = None,
                    }
                }
                if buf.is_empty() {
                    return Ok(None);
                }
                let block = buf.split_to(bs.min(buf.len())).freeze();
                Ok(Some((block, (buf, rest))))
            },
        );
        self.stage_and_commit(Box::pin(rechunked), options).await
    }

    async fn stage_and_commit<S>(
        &self,
        mut blocks: S,
        options: &UploadOptions,
    ) -> Result<WriteResult>
    where
        S: Stream<Item = Result<Bytes>> + Send + Unpin,
    {
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
        let stage_conditions = match &options.conditions.lease_id {
            Some(l) => Conditions::lease(l),
            None => Conditions::none(),
        };
        let tag = uuid::Uuid::new_v4().simple().to_string();
        let tag = &tag[..12];
        let mut ids = Vec::new();
        let mut tasks: JoinSet<Result<()>> = JoinSet::new();
        while let Some(block) = blocks.next().await {
            let block = block?;
            if ids.len() >= MAX_BLOCKS {
                return Err(Error::invalid_input(
                    "upload exceeds 50,000 blocks; use a larger block size",
                ));
            }
            let id = BlockId::numbered(tag, ids.len() as u64)?;
            ids.push(BlockRef::Latest(id.clone()));
            let this = self.clone();
            let c = stage_conditions.clone();
            let opts = crate::blob::BlockOptions {
                conditions: c,
                checksum: options.checksum,
            };
            tasks.spawn(async move { this.put_block_with(&id, block, &opts).await });
            while tasks.len() >= options.max_concurrency {
                join_one(&mut tasks).await?;
            }
        }
        while !tasks.is_empty() {
            join_one(&mut tasks).await?;
        }
        let mut write = options.write.clone();
        write
            .headers
            .content_type
            .get_or_insert_with(|| "application/octet-stream".into());
        let commit = CommitOptions {
            conditions: options.conditions.clone(),
            write,
        };
        self.put_block_list(&ids, &commit).await
    }
}

async fn join_one(tasks: &mut JoinSet<Result<()>>) -> Result<()> {
    match tasks.join_next().await {
        None => Ok(()),
        Some(Ok(r)) => r,
        Some(Err(e)) => Err(Error::new(
            crate::error::ErrorKind::Service,
            format!("block upload task failed: {e}"),
        )),
    }
}
