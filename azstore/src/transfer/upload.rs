//! The upload half of the engine: blocks read once into their own buffer and sent in
//! parallel. Memory is bounded by construction: the next block is read only when fewer than
//! `max_concurrency` blocks are in flight, so at most `max_concurrency` blocks are held.

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use futures_util::{Stream, StreamExt};
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::task::JoinSet;

use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::transfer::pool::Pool;
use crate::transfer::progress::Tracker;

/// Free block buffers an upload keeps for its next blocks (it never holds more than are in
/// flight at once).
const KEEP_FREE: usize = 16;

/// Where the blocks of an upload come from.
pub(crate) trait Blocks: Send {
    /// The next block (at most the block size; only the last may be shorter), or `None`.
    fn next_block(&mut self) -> impl Future<Output = Result<Option<Bytes>>> + Send;
}

/// Sends one block (Put Block, Put Range).
pub(crate) trait BlockSink: Clone + Send + Sync + 'static {
    /// Stages block number `index`, which starts at byte `offset`.
    fn stage(
        &self,
        index: u64,
        offset: u64,
        data: Bytes,
    ) -> impl Future<Output = Result<()>> + Send;
}

pub(crate) fn read_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Service, "reading the upload's source failed")
        .with_source(e)
        .with_sent(RequestSent::No)
}

/// Slices of one buffer (no copy).
pub(crate) struct SliceBlocks {
    pub(crate) body: Bytes,
    pub(crate) size: usize,
}

impl Blocks for SliceBlocks {
    async fn next_block(&mut self) -> Result<Option<Bytes>> {
        if self.body.is_empty() {
            return Ok(None);
        }
        let n = self.size.min(self.body.len());
        Ok(Some(self.body.split_to(n)))
    }
}

/// Blocks read from an `AsyncRead`, each into its own buffer.
pub(crate) struct ReaderBlocks<R> {
    pub(crate) reader: R,
    pub(crate) size: usize,
    pub(crate) ended: bool,
    pool: Arc<Pool>,
}

impl<R: AsyncRead + Unpin + Send> ReaderBlocks<R> {
    pub(crate) fn new(reader: R, size: usize) -> Self {
        ReaderBlocks {
            reader,
            size,
            ended: false,
            pool: Pool::new(KEEP_FREE),
        }
    }
}

impl<R: AsyncRead + Unpin + Send> Blocks for ReaderBlocks<R> {
    async fn next_block(&mut self) -> Result<Option<Bytes>> {
        if self.ended {
            return Ok(None);
        }
        let mut buf = self.pool.take_filled(self.size);
        let mut got = 0;
        while got < self.size {
            let n = self
                .reader
                .read(&mut buf[got..])
                .await
                .map_err(read_error)?;
            if n == 0 {
                self.ended = true;
                break;
            }
            got += n;
        }
        buf.truncate(got);
        Ok((got > 0).then(|| self.pool.bytes(buf)))
    }
}

/// Blocks re-cut from a stream of pieces: a piece at least one block long is sliced without
/// a copy; smaller pieces are gathered into one buffer per block.
pub(crate) struct StreamBlocks<S> {
    pub(crate) stream: S,
    pub(crate) size: usize,
    pending: Bytes,
    ended: bool,
}

impl<S> StreamBlocks<S> {
    pub(crate) fn new(stream: S, size: usize) -> Self {
        StreamBlocks {
            stream,
            size,
            pending: Bytes::new(),
            ended: false,
        }
    }
}

impl<S: Stream<Item = Result<Bytes>> + Send + Unpin> Blocks for StreamBlocks<S> {
    async fn next_block(&mut self) -> Result<Option<Bytes>> {
        let mut gathered: Option<BytesMut> = None;
        loop {
            while self.pending.is_empty() && !self.ended {
                match self.stream.next().await {
                    Some(piece) => self.pending = piece?,
                    None => self.ended = true,
                }
            }
            if self.pending.is_empty() {
                return Ok(gathered.filter(|b| !b.is_empty()).map(BytesMut::freeze));
            }
            let block = match &mut gathered {
                None if self.pending.len() >= self.size => {
                    return Ok(Some(self.pending.split_to(self.size)));
                }
                None => gathered.insert(BytesMut::with_capacity(self.size)),
                Some(b) => b,
            };
            let take = (self.size - block.len()).min(self.pending.len());
            block.extend_from_slice(&self.pending.split_to(take));
            if block.len() == self.size {
                return Ok(gathered.map(BytesMut::freeze));
            }
        }
    }
}

/// Blocks read from a file with positioned reads, each into its own buffer.
pub(crate) struct FileBlocks {
    file: Arc<std::fs::File>,
    offset: u64,
    /// The file's size.
    pub(crate) end: u64,
    /// The block size.
    pub(crate) size: usize,
    pool: Arc<Pool>,
}

fn task_error(e: tokio::task::JoinError) -> Error {
    Error::new(ErrorKind::Service, format!("a file task failed: {e}"))
}

impl FileBlocks {
    /// Opens the file at `path` to read it in blocks of `size` bytes.
    pub(crate) async fn open(path: &Path, size: usize) -> Result<FileBlocks> {
        let path = path.to_path_buf();
        let (file, end) = tokio::task::spawn_blocking(move || {
            let f = std::fs::File::open(path)?;
            let size = f.metadata()?.len();
            Ok::<_, std::io::Error>((f, size))
        })
        .await
        .map_err(task_error)?
        .map_err(read_error)?;
        Ok(FileBlocks {
            file: Arc::new(file),
            offset: 0,
            end,
            size,
            pool: Pool::new(KEEP_FREE),
        })
    }
}

#[cfg(unix)]
fn read_at(file: &std::fs::File, buf: &mut [u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn read_at(file: &std::fs::File, mut buf: &mut [u8], mut offset: u64) -> std::io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}

impl Blocks for FileBlocks {
    async fn next_block(&mut self) -> Result<Option<Bytes>> {
        if self.offset >= self.end {
            return Ok(None);
        }
        let len = (self.end - self.offset).min(self.size as u64) as usize;
        let (file, offset) = (self.file.clone(), self.offset);
        let mut buf = self.pool.take_filled(len);
        let block =
            tokio::task::spawn_blocking(move || read_at(&file, &mut buf, offset).map(|()| buf))
                .await
                .map_err(task_error)?
                .map_err(read_error)?;
        self.offset += len as u64;
        Ok(Some(self.pool.bytes(block)))
    }
}

/// The first block, then the rest.
pub(crate) struct Chain<B> {
    pub(crate) first: Option<Bytes>,
    pub(crate) rest: B,
}

impl<B: Blocks> Blocks for Chain<B> {
    async fn next_block(&mut self) -> Result<Option<Bytes>> {
        match self.first.take() {
            Some(b) => Ok(Some(b)),
            None => self.rest.next_block().await,
        }
    }
}

/// What [`stage_all`] sent.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Staged {
    pub(crate) blocks: u64,
    pub(crate) bytes: u64,
}

/// Sends every block of `blocks` through `sink`, at most `concurrency` at a time, stopping at
/// the first error (the other blocks in flight are cancelled). Fails before reading a block
/// beyond `max_blocks`.
pub(crate) async fn stage_all<B: Blocks, S: BlockSink>(
    blocks: &mut B,
    sink: &S,
    concurrency: usize,
    max_blocks: u64,
    tracker: &Arc<Tracker>,
) -> Result<Staged> {
    let mut tasks: JoinSet<Result<()>> = JoinSet::new();
    let mut staged = Staged {
        blocks: 0,
        bytes: 0,
    };
    loop {
        while tasks.len() >= concurrency {
            join_one(&mut tasks).await?;
        }
        let Some(block) = blocks.next_block().await? else {
            break;
        };
        if staged.blocks >= max_blocks {
            return Err(Error::invalid_input(format!(
                "the upload needs more than {max_blocks} blocks; use a larger block size"
            )));
        }
        let (sink, tracker) = (sink.clone(), tracker.clone());
        let (index, offset, len) = (staged.blocks, staged.bytes, block.len() as u64);
        tasks.spawn(async move {
            sink.stage(index, offset, block).await?;
            tracker.add(len);
            Ok(())
        });
        staged.blocks += 1;
        staged.bytes += len;
    }
    while !tasks.is_empty() {
        join_one(&mut tasks).await?;
    }
    Ok(staged)
}

async fn join_one(tasks: &mut JoinSet<Result<()>>) -> Result<()> {
    match tasks.join_next().await {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(e))) => Err(e),
        Some(Err(e)) => Err(Error::new(
            ErrorKind::Service,
            format!("a block upload task failed: {e}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn all(mut b: impl Blocks) -> Vec<Bytes> {
        let mut out = Vec::new();
        while let Some(x) = b.next_block().await.unwrap() {
            out.push(x);
        }
        out
    }

    #[tokio::test]
    async fn blocks_are_cut_at_the_block_size() {
        let data: Vec<u8> = (0..1000u32).map(|i| i as u8).collect();
        let pieces = |n: usize| {
            futures_util::stream::iter(
                data.chunks(n)
                    .map(|c| Ok(Bytes::copy_from_slice(c)))
                    .chain([Ok(Bytes::new())])
                    .collect::<Vec<Result<Bytes>>>(),
            )
        };
        for piece in [1, 7, 64, 100, 333, 1000] {
            let blocks = all(StreamBlocks::new(pieces(piece), 100)).await;
            assert_eq!(blocks.len(), 10, "pieces of {piece}");
            assert!(blocks.iter().all(|b| b.len() == 100));
            assert_eq!(blocks.concat(), data);
            let read = all(ReaderBlocks::new(&data[..], 300)).await;
            assert_eq!(
                read.iter().map(Bytes::len).collect::<Vec<_>>(),
                [300, 300, 300, 100]
            );
            assert_eq!(read.concat(), data);
        }
        let sliced = all(SliceBlocks {
            body: Bytes::from(data.clone()),
            size: 256,
        })
        .await;
        assert_eq!(sliced.len(), 4);
        assert_eq!(sliced.concat(), data);
        assert!(all(ReaderBlocks::new(&b""[..], 8)).await.is_empty());
        let failing = futures_util::stream::iter(vec![
            Ok(Bytes::from_static(b"ab")),
            Err(Error::invalid_input("source broke")),
        ]);
        let mut s = StreamBlocks::new(failing, 8);
        assert!(s.next_block().await.is_err());
    }
}
