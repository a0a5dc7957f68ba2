//! Downloads into a file: the ranges' bodies go, as they arrive and without a copy, to one
//! writer thread that writes each batch of pieces at its offset (positioned writes), so the
//! async threads never block on the disk and the hand-offs are one per batch, not one per
//! piece.

use std::ops::Range;
use std::path::{Path, PathBuf};

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};
use tokio::sync::mpsc;

use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::transfer::download::{Failure, Pieces, Plan, RangeSource, Spawned, fetch};
use crate::transfer::progress::Tracker;

/// Bytes of one range gathered before they go to the writer: few hand-offs, and the pieces
/// are still in the CPU cache when the kernel copies them.
const BATCH: usize = 256 * 1024;

/// Pieces to write from offset `at` on; `done`: the bytes of a range this batch completes.
struct Batch {
    at: u64,
    pieces: Vec<Bytes>,
    done: u64,
}

fn write_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Service, "writing the download failed")
        .with_source(e)
        .with_sent(RequestSent::Yes)
}

fn task_error(e: tokio::task::JoinError) -> Error {
    Error::new(ErrorKind::Service, format!("a file task failed: {e}"))
}

#[cfg(unix)]
fn write_at(file: &std::fs::File, data: &[u8], offset: u64) -> std::io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, data, offset)
}

#[cfg(windows)]
fn write_at(file: &std::fs::File, mut data: &[u8], mut offset: u64) -> std::io::Result<()> {
    while !data.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, data, offset)?;
        if n == 0 {
            return Err(std::io::ErrorKind::WriteZero.into());
        }
        data = &data[n..];
        offset += n as u64;
    }
    Ok(())
}

/// Writes `pieces` one after another from `offset` on, each at its own position.
fn write_pieces_at(file: &std::fs::File, pieces: &[Bytes], mut offset: u64) -> std::io::Result<()> {
    for piece in pieces {
        write_at(file, piece, offset)?;
        offset += piece.len() as u64;
    }
    Ok(())
}

/// Gives the new file its final size. On Linux the blocks are reserved up front
/// (`fallocate(2)`): a disk too small fails here, before anything is downloaded, and the
/// writes then only fill blocks already allocated (about a quarter less kernel time per byte
/// than filling a sparse file, measured on ext4). Where the file system cannot reserve
/// blocks, the file is extended sparse, as everywhere else.
fn reserve(file: &std::fs::File, len: u64) -> std::io::Result<()> {
    #[cfg(any(target_os = "linux", target_os = "android"))]
    if len > 0 {
        use std::os::fd::AsRawFd;
        let Ok(n) = libc::off_t::try_from(len) else {
            return Err(std::io::ErrorKind::FileTooLarge.into());
        };
        // SAFETY: the descriptor belongs to `file`, which outlives the call; mode 0 only
        // allocates blocks and extends the size.
        if unsafe { libc::fallocate(file.as_raw_fd(), 0, 0, n) } == 0 {
            return Ok(());
        }
        let e = std::io::Error::last_os_error();
        if !matches!(
            e.raw_os_error(),
            Some(libc::EOPNOTSUPP | libc::ENOSYS | libc::EINVAL)
        ) {
            return Err(e);
        }
    }
    file.set_len(len)
}

/// The writer thread: writes every batch until all senders are gone; reports each completed
/// range to `tracker` once it is written.
fn write_all(
    file: &std::fs::File,
    mut batches: mpsc::Receiver<Batch>,
    tracker: &Tracker,
) -> std::io::Result<()> {
    while let Some(batch) = batches.blocking_recv() {
        write_pieces_at(file, &batch.pieces, batch.at)?;
        if batch.done > 0 {
            tracker.add(batch.done);
        }
    }
    Ok(())
}

/// One range on its way to the writer.
struct ToWriter {
    batches: mpsc::Sender<Batch>,
    range: Range<u64>,
    /// Offset of the first piece in `pieces`.
    at: u64,
    pieces: Vec<Bytes>,
    len: usize,
}

impl ToWriter {
    async fn send(&mut self, done: u64) -> Result<()> {
        let batch = Batch {
            at: self.at,
            pieces: std::mem::take(&mut self.pieces),
            done,
        };
        self.at += self.len as u64;
        self.len = 0;
        self.batches.send(batch).await.map_err(|_| {
            // The writer stopped on an error; the download reports that error.
            Error::new(ErrorKind::Service, "the file writer stopped")
        })
    }
}

impl Pieces for ToWriter {
    async fn put(&mut self, at: u64, piece: Bytes) -> Result<()> {
        if at == self.range.start {
            // (Again) from the range's start: positioned writes make a rewrite harmless.
            self.pieces.clear();
            self.at = at;
            self.len = 0;
        }
        self.len += piece.len();
        self.pieces.push(piece);
        if self.len >= BATCH {
            self.send(0).await?;
        }
        Ok(())
    }

    async fn end(&mut self) -> Result<()> {
        let n = self.range.end - self.range.start;
        self.send(n).await
    }
}

/// One attempt of a download into `partial` (a file this download created; emptied first, so a
/// restart begins afresh).
async fn file_attempt<S: RangeSource>(
    src: &S,
    plan: &Plan,
    partial: &std::fs::File,
) -> Result<S::Props, Failure> {
    let (props, version, first) = src.open(plan.chunk).await?;
    let total = version.total;
    let partial = partial.try_clone().map_err(write_error)?;
    let file = tokio::task::spawn_blocking(move || {
        partial.set_len(0)?;
        reserve(&partial, total)?;
        Ok(partial)
    })
    .await
    .map_err(task_error)?
    .map_err(write_error)?;
    plan.tracker.start(Some(total));
    // Room for half of the ranges in flight: the network reads go on while the writer thread
    // waits for a core (memory stays within `concurrency × chunk`).
    let room = (plan.concurrency as u64 * plan.chunk / 2 / BATCH as u64) as usize;
    let (tx, rx) = mpsc::channel(room.max(2 * plan.concurrency));
    let tracker = plan.tracker.clone();
    let writer = tokio::task::spawn_blocking(move || write_all(&file, rx, &tracker));
    let fetched = stream::iter(plan.jobs(&version, first))
        .map(|(range, first)| {
            let (src, version) = (src.clone(), version.clone());
            let mut sink = ToWriter {
                batches: tx.clone(),
                at: range.start,
                range: range.clone(),
                pieces: Vec::new(),
                len: 0,
            };
            Spawned::spawn(async move { fetch(&src, &version, range, first, &mut sink).await })
        })
        .buffer_unordered(plan.concurrency)
        .try_collect::<()>()
        .await;
    // The writer ends when every sender is gone (those of aborted ranges go with them).
    drop(tx);
    writer.await.map_err(task_error)?.map_err(write_error)?;
    fetched.map(|()| props)
}

/// `path` with a random suffix and `.partial` appended: `report.pdf.1f3a…9c.partial`, beside
/// it in the same directory (so the final rename stays on one file system).
pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(format!(".{:016x}.partial", rand::random::<u64>()));
    PathBuf::from(partial)
}

/// Creates the partial file: a new file only (`O_CREAT | O_EXCL`), so an existing file or a
/// symbolic link planted at that name is never followed or overwritten. Its permissions are
/// those `File::create` gives (0666 less the umask on Unix), kept by the rename.
fn create_partial(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(path)
}

/// Downloads into a new partial file beside `path` with positioned writes, renamed into place
/// when complete; on failure the partial file is removed, so `path` never holds a torn or
/// partial copy.
pub(crate) async fn to_file<S: RangeSource>(src: &S, plan: &Plan, path: &Path) -> Result<S::Props> {
    plan.check()?;
    let partial = partial_path(path);
    let created = partial.clone();
    let file = tokio::task::spawn_blocking(move || create_partial(&created))
        .await
        .map_err(task_error)?
        .map_err(|e| {
            Error::new(
                ErrorKind::Service,
                format!(
                    "cannot create the download's partial file {}",
                    partial.display()
                ),
            )
            .with_source(e)
            .with_sent(RequestSent::No)
        })?;
    let mut restarts = 0;
    let result = loop {
        let attempt = file_attempt(src, plan, &file).await;
        if let Some(r) = plan.settle(attempt, &mut restarts) {
            break r;
        }
    };
    drop(file);
    match result {
        Ok(p) => {
            tokio::fs::rename(&partial, path)
                .await
                .map_err(write_error)?;
            Ok(p)
        }
        Err(e) => {
            let _ = tokio::fs::remove_file(&partial).await;
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_partial_file_is_always_new_and_never_follows_a_link() {
        let dir = std::env::temp_dir().join(format!("azstore-partial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let target = dir.join("target");
        std::fs::write(&target, b"precious").unwrap();
        let planted = dir.join("planted.partial");
        let _ = std::fs::remove_file(&planted);
        std::os::unix::fs::symlink(&target, &planted).unwrap();
        let e = create_partial(&planted).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(&target).unwrap(), b"precious");
        let fresh = dir.join("fresh.partial");
        let _ = std::fs::remove_file(&fresh);
        create_partial(&fresh).unwrap();
        assert!(create_partial(&fresh).is_err(), "never reopened");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn pieces_land_at_their_offsets() {
        let dir = std::env::temp_dir().join(format!("azstore-to-file-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("pieces");
        let file = std::fs::File::create(&path).unwrap();
        reserve(&file, 400).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 400);
        // Many pieces, empty ones among them.
        let pieces: Vec<Bytes> = (0..200u8)
            .map(|i| match i {
                // A long run of empty pieces.
                100..=180 => Bytes::new(),
                _ => Bytes::from(vec![i; usize::from(i % 3)]),
            })
            .collect();
        let total: usize = pieces.iter().map(Bytes::len).sum();
        write_pieces_at(&file, &pieces, 10).unwrap();
        write_pieces_at(&file, &[Bytes::from_static(b"head")], 0).unwrap();
        drop(file);
        let got = std::fs::read(&path).unwrap();
        let want: Vec<u8> = pieces.iter().flat_map(|p| p.to_vec()).collect();
        assert_eq!(&got[..4], b"head");
        assert_eq!(&got[4..10], &[0u8; 6]);
        assert_eq!(&got[10..10 + total], &want[..]);
        assert_eq!(got.len(), 400);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn an_empty_file_is_reserved() {
        let dir = std::env::temp_dir().join(format!("azstore-to-file-e-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = std::fs::File::create(dir.join("empty")).unwrap();
        reserve(&file, 0).unwrap();
        assert_eq!(file.metadata().unwrap().len(), 0);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
