//! Block blobs staged in blocks: Put Block, Put Block List (the commit, where the caller's
//! conditions go) and Get Block List.

use crate::body::IntoBody;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::xml;
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::StorageRequest;

/// A block id. On the wire it is base64; before encoding it must be at most 64 bytes, and all
/// ids of one blob must have the same length.
///
/// ```
/// use azstore::blob::BlockId;
/// let first = BlockId::numbered("upload-7", 0)?;
/// let second = BlockId::numbered("upload-7", 1)?;
/// assert_ne!(first, second);
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockId(String);

impl BlockId {
    /// A block id from raw bytes (at most 64).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let id = azstore::blob::BlockId::new(b"chunk-0001")?;
    /// assert_eq!(id.as_str(), "Y2h1bmstMDAwMQ==");
    /// # Ok(()) }
    /// ```
    pub fn new(raw: impl AsRef<[u8]>) -> Result<BlockId> {
        let raw = raw.as_ref();
        if raw.is_empty() || raw.len() > 64 {
            return Err(Error::invalid_input("a block id must be 1-64 bytes"));
        }
        Ok(BlockId(STANDARD.encode(raw)))
    }

    /// The `index`-th block id of an upload tagged `upload` (fixed width, so all ids of the
    /// upload have equal length).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// use azstore::blob::BlockId;
    /// let a = BlockId::numbered("nightly", 1)?;
    /// let b = BlockId::numbered("nightly", 10_000)?;
    /// assert_eq!(a.as_str().len(), b.as_str().len());
    /// # Ok(()) }
    /// ```
    pub fn numbered(upload: &str, index: u64) -> Result<BlockId> {
        BlockId::new(format!("{upload}-{index:010}"))
    }

    /// Wraps an id exactly as the service returned it (base64).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let id = azstore::blob::BlockId::from_base64("Y2h1bmstMDAwMQ==")?;
    /// assert_eq!(id, azstore::blob::BlockId::new(b"chunk-0001")?);
    /// # Ok(()) }
    /// ```
    pub fn from_base64(s: impl Into<String>) -> Result<BlockId> {
        let s = s.into();
        let raw = STANDARD
            .decode(&s)
            .map_err(|_| Error::invalid_input("block id is not valid base64"))?;
        if raw.is_empty() || raw.len() > 64 {
            return Err(Error::invalid_input("a block id must be 1-64 bytes"));
        }
        Ok(BlockId(s))
    }

    /// The base64 form sent on the wire.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Which list a block in Put Block List comes from.
///
/// ```
/// use azstore::blob::{BlockId, BlockRef};
/// // Keep the first committed block, append a newly staged one.
/// let list = vec![
///     BlockRef::Committed(BlockId::numbered("v1", 0)?),
///     BlockRef::Uncommitted(BlockId::numbered("v1", 1)?),
/// ];
/// # let _ = list; Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BlockRef {
    /// The newest version: uncommitted if staged, else committed (what uploads use).
    Latest(BlockId),
    /// A block already committed to the blob.
    Committed(BlockId),
    /// A staged, uncommitted block.
    Uncommitted(BlockId),
}

impl BlockRef {
    fn id(&self) -> &BlockId {
        match self {
            BlockRef::Latest(b) | BlockRef::Committed(b) | BlockRef::Uncommitted(b) => b,
        }
    }
}

/// Options of the commit (Put Block List).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{BlockId, BlockRef, CommitOptions};
/// let id = BlockId::numbered("u1", 0)?;
/// blob.put_block(&id, "all of it", &Conditions::none()).await?;
/// let options = CommitOptions::new(Conditions::if_not_exists()).content_type("text/plain");
/// blob.put_block_list(&[BlockRef::Latest(id)], &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct CommitOptions {
    /// Conditions on the blob being replaced: `if_match` for "replace only if unchanged",
    /// `if_not_exists` for "create only".
    pub conditions: Conditions,
    /// HTTP headers, metadata, tier, tags and encryption scope of the new blob.
    pub write: crate::blob::BlobWriteOptions,
}

impl CommitOptions {
    /// Options for a write under `conditions` — the one choice every write that replaces a
    /// blob makes visibly (there is no `Default`):
    ///
    /// * [`Conditions::if_match(&etag)`](Conditions::if_match): replace only the version you
    ///   read (412 `ConditionNotMet` otherwise);
    /// * [`Conditions::if_not_exists()`](Conditions::if_not_exists): create only (409
    ///   `BlobAlreadyExists` when it exists);
    /// * [`Conditions::none()`](Conditions::none): last writer wins.
    pub fn new(conditions: Conditions) -> CommitOptions {
        CommitOptions {
            conditions,
            write: Default::default(),
        }
    }

    /// Replaces the conditions chosen in [`new`](Self::new) (`if_match`, `if_not_exists`
    /// or `none`, plus a lease id for a leased blob).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::CommitOptions;
    /// let lease = LeaseId::random();
    /// let options = CommitOptions::new(Conditions::if_not_exists()).conditions(Conditions::lease(&lease));
    /// assert_eq!(options.conditions.lease_id, Some(lease));
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }
}

crate::blob::write_options::write_builders!(CommitOptions);

/// Options of staging a block ([`BlobClient::put_block_with`]).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{BlockId, BlockOptions, Checksum};
/// let options = BlockOptions::default().checksum(Checksum::Crc64);
/// blob.put_block_with(&BlockId::numbered("u2", 0)?, "checked block", &options).await?;
/// # let _ = Conditions::none();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct BlockOptions {
    /// Only a lease id is accepted (a leased blob needs it).
    pub conditions: Conditions,
    /// Transactional checksum of the block, checked by the service.
    pub checksum: crate::blob::Checksum,
}

impl BlockOptions {
    /// The lease id of a leased blob, the only condition Put Block takes (default: none).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::BlockOptions;
    /// let options = BlockOptions::default().conditions(Conditions::lease(&LeaseId::random()));
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }
}

crate::blob::write_options::checksum_builder!(
    BlockOptions,
    "BlockOptions::default().conditions(Conditions::none())"
);

/// One block as returned by Get Block List.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::BlockListType;
/// for b in blob.get_block_list(BlockListType::Committed).await?.committed {
///     println!("{} ({} bytes)", b.id.as_str(), b.size);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct BlockInfo {
    /// The id (base64).
    pub id: BlockId,
    /// Size in bytes.
    pub size: u64,
}

/// Which blocks Get Block List returns.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::BlockListType;
/// let staged = blob.get_block_list(BlockListType::Uncommitted).await?.uncommitted;
/// println!("{} blocks staged but not committed", staged.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlockListType {
    /// Committed blocks only.
    Committed,
    /// Uncommitted blocks only.
    Uncommitted,
    /// Both.
    All,
}

/// What Get Block List returns.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::BlockListType;
/// let list = blob.get_block_list(BlockListType::All).await?;
/// println!("{} committed ({:?} bytes), {} staged", list.committed.len(), list.content_length, list.uncommitted.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlockList {
    /// Blocks of the committed blob, in order.
    pub committed: Vec<BlockInfo>,
    /// Staged blocks not yet committed.
    pub uncommitted: Vec<BlockInfo>,
    /// The blob's ETag (absent when the blob has no committed version).
    pub etag: Option<ETag>,
    /// The committed blob's size.
    pub content_length: Option<u64>,
}

/// Largest block accepted by Put Block (4000 MiB).
pub const MAX_BLOCK_SIZE: u64 = 4000 * 1024 * 1024;
/// Most blocks a blob can have.
pub const MAX_BLOCKS: usize = 50_000;

impl BlobClient {
    /// Put Block: stages `body` under `id` (not visible until committed). Accepts only a
    /// lease id (a leased blob needs it). Does not change the ETag.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{BlockId, BlockRef, CommitOptions};
    /// let ids = [BlockId::numbered("upload-1", 0)?, BlockId::numbered("upload-1", 1)?];
    /// blob.put_block(&ids[0], "first half, ", &Conditions::none()).await?;
    /// blob.put_block(&ids[1], "second half", &Conditions::none()).await?;
    /// let blocks: Vec<BlockRef> = ids.into_iter().map(BlockRef::Uncommitted).collect();
    /// blob.put_block_list(&blocks, &CommitOptions::new(Conditions::if_not_exists())).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_block(
        &self,
        id: &BlockId,
        body: impl IntoBody,
        conditions: &Conditions,
    ) -> Result<()> {
        let options = BlockOptions {
            conditions: conditions.clone(),
            checksum: crate::blob::Checksum::None,
        };
        self.put_block_with(id, body, &options).await
    }

    /// Put Block with a transactional checksum: the service refuses the block with 400
    /// `Md5Mismatch` / `Crc64Mismatch` if it received other bytes than were sent.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{BlockId, BlockOptions, Checksum};
    /// let id = BlockId::numbered("upload-2", 0)?;
    /// let options = BlockOptions::default().conditions(Conditions::none()).checksum(Checksum::Md5);
    /// blob.put_block_with(&id, vec![0u8; 1 << 20], &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_block_with(
        &self,
        id: &BlockId,
        body: impl IntoBody,
        options: &BlockOptions,
    ) -> Result<()> {
        options.conditions.check(Allowed::LEASE_ONLY, "Put Block")?;
        let body = body.into_body();
        if body.is_empty() || body.len() as u64 > MAX_BLOCK_SIZE {
            return Err(Error::invalid_input("a block must be 1 byte to 4000 MiB"));
        }
        let req = self
            .write_request(Method::Put, "Put Block")?
            .query("comp", "block")
            .query("blockid", id.as_str())
            .conditions(&options.conditions);
        let req = options.checksum.body(req, body, "application/octet-stream");
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Put Block List: commits `blocks` in order as the blob's new content, under the
    /// caller's conditions. All block ids must have the same length (checked before sending).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{BlockListType, BlockRef, CommitOptions};
    /// // Re-commit the current blocks in reverse order, only if the blob did not change meanwhile.
    /// let list = blob.get_block_list(BlockListType::Committed).await?;
    /// let Some(etag) = list.etag.clone() else { return Ok(()) };
    /// let blocks: Vec<BlockRef> = list.committed.iter().rev().map(|b| BlockRef::Committed(b.id.clone())).collect();
    /// blob.put_block_list(&blocks, &CommitOptions::new(Conditions::if_match(&etag))).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_block_list(
        &self,
        blocks: &[BlockRef],
        options: &CommitOptions,
    ) -> Result<WriteResult> {
        options.conditions.check(Allowed::ALL, "Put Block List")?;
        if blocks.len() > MAX_BLOCKS {
            return Err(Error::invalid_input(
                "a blob can have at most 50,000 blocks",
            ));
        }
        if let Some(first) = blocks.first() {
            let len = first.id().as_str().len();
            if blocks.iter().any(|b| b.id().as_str().len() != len) {
                return Err(Error::invalid_input(
                    "all block ids of a blob must have the same length",
                ));
            }
        }
        let mut body = String::with_capacity(64 + blocks.len() * 40);
        body.push_str(r#"<?xml version="1.0" encoding="utf-8"?><BlockList>"#);
        for b in blocks {
            let (tag, id) = match b {
                BlockRef::Latest(id) => ("Latest", id),
                BlockRef::Committed(id) => ("Committed", id),
                BlockRef::Uncommitted(id) => ("Uncommitted", id),
            };
            body.push_str(&format!("<{tag}>{}</{tag}>", xml::escape(id.as_str())));
        }
        body.push_str("</BlockList>");
        let req = self
            .write_request(Method::Put, "Put Block List")?
            .query("comp", "blocklist")
            .conditions(&options.conditions);
        let req = options
            .write
            .apply(req, crate::blob::write_options::WriteKind::PutBlockList)?
            .body(body, "application/xml");
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }

    /// Get Block List. Accepts a lease id and `x-ms-if-tags` (412 `ConditionNotMet` when the
    /// blob's tags do not match); the service takes no ETag or date condition here.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::BlockListType;
    /// # let lease = azstore::LeaseId::random();
    /// let list = blob.get_block_list_if(BlockListType::All, &Conditions::lease(&lease)).await?;
    /// println!("{} staged blocks", list.uncommitted.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_block_list_if(
        &self,
        which: BlockListType,
        conditions: &Conditions,
    ) -> Result<BlockList> {
        conditions.check(crate::blob::tags::TAGS_ONLY, "Get Block List")?;
        let t = match which {
            BlockListType::Committed => "committed",
            BlockListType::Uncommitted => "uncommitted",
            BlockListType::All => "all",
        };
        let resp = self
            .pipeline
            .send(
                self.request(Method::Get)
                    .query("comp", "blocklist")
                    .query("blocklisttype", t)
                    .conditions(conditions),
            )
            .await?;
        let raw: xml::RawBlockList = xml::parse(&resp.body, "Get Block List")?;
        let conv = |v: Vec<xml::RawBlock>| -> Vec<BlockInfo> {
            v.into_iter()
                .map(|b| BlockInfo {
                    id: BlockId(b.name),
                    size: b.size,
                })
                .collect()
        };
        Ok(BlockList {
            committed: conv(raw.committed_blocks.items),
            uncommitted: conv(raw.uncommitted_blocks.items),
            etag: resp.headers.etag(),
            content_length: resp.headers.parse("x-ms-blob-content-length")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_ids() {
        let a = BlockId::numbered("u1", 0).unwrap();
        let b = BlockId::numbered("u1", 12345).unwrap();
        assert_eq!(a.as_str().len(), b.as_str().len());
        assert!(BlockId::new([0u8; 65]).is_err());
        assert!(BlockId::new([]).is_err());
        assert!(BlockId::from_base64("!!").is_err());
        assert_eq!(BlockId::from_base64(a.as_str()).unwrap(), a);
    }
}
