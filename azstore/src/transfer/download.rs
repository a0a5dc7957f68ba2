//! The download half of the engine: parallel ranged GETs pinned to the first response's ETag,
//! delivered into a file (positioned writes), into one buffer, or as an ordered stream.
//!
//! Memory is bounded by construction: at most `max_concurrency` ranges are in flight or
//! waiting to be consumed. The stream mode holds each in one buffer of `chunk_size` bytes;
//! the file mode writes each range in pieces of 256 KiB as its body arrives; the buffer mode
//! writes straight into the destination.

use std::future::Future;
use std::ops::Range;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, TryStreamExt, stream};
use tokio::task::{JoinHandle, JoinSet};

use crate::blob::OnChange;
use crate::conditions::ETag;
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::http::{Headers, StreamingResponse};
use crate::transfer::progress::Tracker;

/// Attempts per range when the body breaks off mid-way (the headers' own transient
/// failures are retried by the pipeline).
const BODY_ATTEMPTS: u32 = 3;

/// The version every range is pinned to.
#[derive(Debug, Clone)]
pub(crate) struct Version {
    pub(crate) etag: ETag,
    pub(crate) total: u64,
}

/// One service's ranged reads (Blob or File).
pub(crate) trait RangeSource: Clone + Send + Sync + 'static {
    /// What the first response tells about the object.
    type Props: Send + 'static;

    /// The first ranged GET of `0..len` with the caller's conditions (a plain GET when the
    /// object is empty: a range of an empty object is answered with 416). Its body holds bytes
    /// `0..min(len, total)`.
    fn open(
        &self,
        len: u64,
    ) -> impl Future<Output = Result<(Self::Props, Version, StreamingResponse)>> + Send;

    /// A later range, pinned to `version` where the service supports it (Blob: `If-Match`).
    fn range(
        &self,
        range: Range<u64>,
        version: &Version,
    ) -> impl Future<Output = Result<StreamingResponse>> + Send;

    /// Whether the service refused a pinned range because the object changed.
    fn is_change(&self, e: &Error) -> bool;

    /// The error that reports a change between two ranges (`cause`: the service's refusal).
    fn changed(&self, version: &Version, cause: Option<Error>) -> Error;

    /// Time allowed for reading one range's body.
    fn body_timeout(&self) -> Duration;
}

/// How a download runs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) chunk: u64,
    pub(crate) concurrency: usize,
    pub(crate) on_change: OnChange,
    pub(crate) tracker: Arc<Tracker>,
}

impl Plan {
    pub(crate) fn check(&self) -> Result<()> {
        if self.chunk == 0 {
            return Err(Error::invalid_input("chunk size must not be 0"));
        }
        if usize::try_from(self.chunk).is_err() {
            return Err(Error::invalid_input("chunk size does not fit in memory"));
        }
        if self.concurrency == 0 {
            return Err(Error::invalid_input("max_concurrency must be at least 1"));
        }
        Ok(())
    }

    /// Whether a change may restart the download (counting this restart).
    fn may_restart(&self, restarts: &mut u32) -> bool {
        match self.on_change {
            OnChange::Restart { max_restarts } if *restarts < max_restarts => {
                *restarts += 1;
                tracing::debug!(
                    restarts = *restarts,
                    "object changed during download; restarting"
                );
                true
            }
            _ => false,
        }
    }
}

/// A failed download: a change of the object (restartable) or anything else.
#[derive(Debug)]
pub(crate) enum Failure {
    Changed(Error),
    Other(Error),
}

impl From<Error> for Failure {
    fn from(e: Error) -> Failure {
        Failure::Other(e)
    }
}

impl Failure {
    fn into_error(self) -> Error {
        match self {
            Failure::Changed(e) | Failure::Other(e) => e,
        }
    }
}

/// Bytes `first..` of the object in ranges of `chunk`.
fn ranges(first: u64, total: u64, chunk: u64) -> impl Iterator<Item = Range<u64>> {
    (first..total)
        .step_by(chunk as usize)
        .map(move |s| s..total.min(s.saturating_add(chunk)))
}

fn total_of(headers: &Headers) -> Option<u64> {
    let range = headers.get("content-range")?;
    range.rsplit_once('/')?.1.trim().parse().ok()
}

/// Reads exactly `expect` bytes of `resp`'s body, handing each piece with its offset to `put`.
async fn read_body(
    resp: StreamingResponse,
    expect: usize,
    timeout: Duration,
    mut put: impl FnMut(usize, &[u8]),
) -> Result<()> {
    let read = async {
        let mut body = std::pin::pin!(resp.into_stream());
        let mut got = 0usize;
        while let Some(piece) = body.next().await {
            let piece = piece?;
            if piece.len() > expect - got {
                return Err(Error::decode(format!(
                    "a ranged GET of {expect} bytes returned more"
                )));
            }
            put(got, &piece);
            got += piece.len();
        }
        if got != expect {
            return Err(Error::decode(format!(
                "a ranged GET of {expect} bytes returned {got}"
            )));
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, read).await {
        Ok(r) => r,
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!("a range's body was not read within {timeout:?}"),
        )
        .with_sent(RequestSent::Yes)),
    }
}

fn retry_body(e: &Error, attempt: u32) -> bool {
    attempt < BODY_ATTEMPTS && matches!(e.kind(), ErrorKind::Transport | ErrorKind::Timeout)
}

/// Requests `range` pinned to `version` and checks that the answer is from that version.
async fn request_range<S: RangeSource>(
    src: &S,
    version: &Version,
    range: Range<u64>,
) -> Result<StreamingResponse, Failure> {
    let resp = match src.range(range, version).await {
        Ok(r) => r,
        Err(e) if src.is_change(&e) => {
            return Err(Failure::Changed(src.changed(version, Some(e))));
        }
        Err(e) => return Err(Failure::Other(e)),
    };
    let same_etag = resp.headers.get("etag") == Some(version.etag.as_str());
    if !same_etag || total_of(&resp.headers) != Some(version.total) {
        return Err(Failure::Changed(src.changed(version, None)));
    }
    Ok(resp)
}

/// Fetches `range` pinned to `version` into `put`, retrying a body that breaks off.
async fn fetch<S: RangeSource>(
    src: &S,
    version: &Version,
    range: Range<u64>,
    mut put: impl FnMut(usize, &[u8]),
) -> Result<(), Failure> {
    let len = (range.end - range.start) as usize;
    let mut attempt = 0;
    loop {
        attempt += 1;
        let resp = request_range(src, version, range.clone()).await?;
        match read_body(resp, len, src.body_timeout(), &mut put).await {
            Ok(()) => return Ok(()),
            Err(e) if retry_body(&e, attempt) => {
                tracing::debug!(error = %e, attempt, "range body broke off; fetching it again");
            }
            Err(e) => return Err(Failure::Other(e)),
        }
    }
}

/// Reads the first response's body (bytes `0..len`), fetching it again if it breaks off.
async fn read_first<S: RangeSource>(
    src: &S,
    version: &Version,
    first: StreamingResponse,
    len: usize,
    mut put: impl FnMut(usize, &[u8]),
) -> Result<(), Failure> {
    match read_body(first, len, src.body_timeout(), &mut put).await {
        Ok(()) => Ok(()),
        Err(e) if retry_body(&e, 1) && len > 0 => fetch(src, version, 0..len as u64, put).await,
        Err(e) => Err(Failure::Other(e)),
    }
}

fn first_len(plan: &Plan, version: &Version) -> usize {
    version.total.min(plan.chunk) as usize
}

fn too_large(total: u64) -> Error {
    Error::invalid_input(format!("{total} bytes do not fit in memory"))
}

/// Fills `dest` (exactly the object's size) with every range, `plan.concurrency` at a time.
async fn fill<S: RangeSource>(
    src: &S,
    plan: &Plan,
    version: &Version,
    first: StreamingResponse,
    dest: &mut [u8],
) -> Result<(), Failure> {
    let head_len = first_len(plan, version);
    let (head, rest) = dest.split_at_mut(head_len);
    read_first(src, version, first, head_len, |o, d| {
        head[o..o + d.len()].copy_from_slice(d)
    })
    .await?;
    plan.tracker.add(head_len as u64);
    let chunk = plan.chunk as usize;
    let parts = rest.chunks_mut(chunk).enumerate().map(|(i, part)| {
        let start = (head_len + i * chunk) as u64;
        async move {
            let range = start..start + part.len() as u64;
            let n = part.len() as u64;
            fetch(src, version, range, |o, d| {
                part[o..o + d.len()].copy_from_slice(d)
            })
            .await?;
            plan.tracker.add(n);
            Ok::<(), Failure>(())
        }
    });
    stream::iter(parts)
        .buffer_unordered(plan.concurrency)
        .try_collect::<()>()
        .await
}

/// Downloads the whole object into one buffer allocated once at its size.
pub(crate) async fn to_vec<S: RangeSource>(src: &S, plan: &Plan) -> Result<(S::Props, Vec<u8>)> {
    plan.check()?;
    let mut restarts = 0;
    loop {
        let (props, version, first) = src.open(plan.chunk).await?;
        let size = usize::try_from(version.total).map_err(|_| too_large(version.total))?;
        plan.tracker.start(Some(version.total));
        // Zeroed pages come from the allocator without a memset (calloc / fresh mmap).
        let mut buf = vec![0u8; size];
        match fill(src, plan, &version, first, &mut buf).await {
            Ok(()) => return Ok((props, buf)),
            Err(Failure::Changed(e)) if !plan.may_restart(&mut restarts) => return Err(e),
            Err(Failure::Changed(_)) => {}
            Err(Failure::Other(e)) => return Err(e),
        }
    }
}

/// Downloads the whole object into the front of `dest`; returns its size. A `dest` smaller
/// than the object is an `InvalidInput` error (found after the first response, nothing
/// written).
pub(crate) async fn into_slice<S: RangeSource>(
    src: &S,
    plan: &Plan,
    dest: &mut [u8],
) -> Result<(S::Props, usize)> {
    plan.check()?;
    let mut restarts = 0;
    loop {
        let (props, version, first) = src.open(plan.chunk).await?;
        let size = usize::try_from(version.total)
            .ok()
            .filter(|&n| n <= dest.len())
            .ok_or_else(|| {
                Error::invalid_input(format!(
                    "a buffer of {} bytes is too small for {} bytes",
                    dest.len(),
                    version.total
                ))
            })?;
        plan.tracker.start(Some(version.total));
        match fill(src, plan, &version, first, &mut dest[..size]).await {
            Ok(()) => return Ok((props, size)),
            Err(Failure::Changed(e)) if !plan.may_restart(&mut restarts) => return Err(e),
            Err(Failure::Changed(_)) => {}
            Err(Failure::Other(e)) => return Err(e),
        }
    }
}

fn write_error(e: std::io::Error) -> Error {
    Error::new(ErrorKind::Service, "writing the download failed")
        .with_source(e)
        .with_sent(RequestSent::Yes)
}

/// Runs a blocking file operation off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> std::io::Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(write_error),
        Err(e) => Err(Error::new(
            ErrorKind::Service,
            format!("a file task failed: {e}"),
        )),
    }
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

/// Bytes gathered before one positioned write: small enough to be still in the CPU cache
/// when the kernel copies it (writing 8 MiB at once from a cold buffer cost three times the
/// CPU), large enough that the hand-offs to the blocking pool cost little.
const WRITE_PIECE: usize = 256 * 1024;

/// Buffers of one write piece each, reused from write to write.
type Pool = Arc<Mutex<Vec<Vec<u8>>>>;

fn take_buffer(pool: &Pool) -> Vec<u8> {
    let mut buf = pool
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .pop()
        .unwrap_or_default();
    buf.clear();
    buf.reserve(WRITE_PIECE);
    buf
}

/// The file being written.
type Target = Arc<std::fs::File>;

/// Writes `buf` at `offset` and returns it to the pool.
async fn write_piece(file: &Target, pool: &Pool, buf: Vec<u8>, offset: u64) -> Result<()> {
    let f = file.clone();
    let buf = blocking(move || write_at(&f, &buf, offset).map(|()| buf)).await?;
    pool.lock().unwrap_or_else(|e| e.into_inner()).push(buf);
    Ok(())
}

/// Writes the body of `resp` (exactly bytes `range`) to the file piece by piece.
async fn write_body(
    resp: StreamingResponse,
    range: Range<u64>,
    timeout: Duration,
    file: &Target,
    pool: &Pool,
) -> Result<()> {
    let expect = range.end - range.start;
    let write = async {
        let mut body = std::pin::pin!(resp.into_stream());
        let (mut got, mut flushed) = (0u64, 0u64);
        let mut buf = take_buffer(pool);
        while let Some(piece) = body.next().await {
            let piece = piece?;
            if piece.len() as u64 > expect - got {
                return Err(Error::decode(format!(
                    "a ranged GET of {expect} bytes returned more"
                )));
            }
            got += piece.len() as u64;
            buf.extend_from_slice(&piece);
            if buf.len() >= WRITE_PIECE {
                let full = std::mem::replace(&mut buf, take_buffer(pool));
                let n = full.len() as u64;
                write_piece(file, pool, full, range.start + flushed).await?;
                flushed += n;
            }
        }
        if got != expect {
            return Err(Error::decode(format!(
                "a ranged GET of {expect} bytes returned {got}"
            )));
        }
        if !buf.is_empty() {
            write_piece(file, pool, buf, range.start + flushed).await?;
        }
        Ok(())
    };
    match tokio::time::timeout(timeout, write).await {
        Ok(r) => r,
        Err(_) => Err(Error::new(
            ErrorKind::Timeout,
            format!("a range's body was not read within {timeout:?}"),
        )
        .with_sent(RequestSent::Yes)),
    }
}

/// Fetches `range` into the file, retrying a body that breaks off (a retry rewrites the
/// range from its start: positioned writes are idempotent). `first` is the response that
/// already carries the range, if any.
async fn fetch_to_file<S: RangeSource>(
    src: &S,
    version: &Version,
    range: Range<u64>,
    mut first: Option<StreamingResponse>,
    file: &Target,
    pool: &Pool,
) -> Result<(), Failure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let resp = match first.take() {
            Some(r) => r,
            None => request_range(src, version, range.clone()).await?,
        };
        match write_body(resp, range.clone(), src.body_timeout(), file, pool).await {
            Ok(()) => return Ok(()),
            Err(e) if retry_body(&e, attempt) => {
                tracing::debug!(error = %e, attempt, "range body broke off; fetching it again");
            }
            Err(e) => return Err(Failure::Other(e)),
        }
    }
}

/// One attempt of a download to `partial`: every range written at its offset as its body
/// arrives.
async fn file_attempt<S: RangeSource>(
    src: &S,
    plan: &Plan,
    partial: &Path,
) -> Result<S::Props, Failure> {
    let (props, version, first) = src.open(plan.chunk).await?;
    let total = version.total;
    let path = partial.to_path_buf();
    let file: Target = Arc::new(
        blocking(move || {
            let f = std::fs::File::create(&path)?;
            f.set_len(total)?;
            Ok(f)
        })
        .await?,
    );
    plan.tracker.start(Some(total));
    let pool: Pool = Arc::default();
    let head_len = first_len(plan, &version) as u64;
    fetch_to_file(src, &version, 0..head_len, Some(first), &file, &pool).await?;
    plan.tracker.add(head_len);
    let mut tasks: JoinSet<Result<(), Failure>> = JoinSet::new();
    for range in ranges(head_len, total, plan.chunk) {
        while tasks.len() >= plan.concurrency {
            join_one(&mut tasks).await?;
        }
        let (src, version, file, pool, tracker) = (
            src.clone(),
            version.clone(),
            file.clone(),
            pool.clone(),
            plan.tracker.clone(),
        );
        tasks.spawn(async move {
            let n = range.end - range.start;
            fetch_to_file(&src, &version, range, None, &file, &pool).await?;
            tracker.add(n);
            Ok(())
        });
    }
    while !tasks.is_empty() {
        join_one(&mut tasks).await?;
    }
    Ok(props)
}

async fn join_one(tasks: &mut JoinSet<Result<(), Failure>>) -> Result<(), Failure> {
    match tasks.join_next().await {
        None | Some(Ok(Ok(()))) => Ok(()),
        Some(Ok(Err(f))) => Err(f),
        Some(Err(e)) => Err(Failure::Other(Error::new(
            ErrorKind::Service,
            format!("a range task failed: {e}"),
        ))),
    }
}

/// `path` with `.partial` appended.
pub(crate) fn partial_path(path: &Path) -> PathBuf {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    PathBuf::from(partial)
}

/// Downloads into `path` + `.partial` with positioned writes, renamed into place when
/// complete; on failure the partial file is removed, so `path` never holds a torn or partial
/// copy.
pub(crate) async fn to_file<S: RangeSource>(src: &S, plan: &Plan, path: &Path) -> Result<S::Props> {
    plan.check()?;
    let partial = partial_path(path);
    let mut restarts = 0;
    let result = loop {
        match file_attempt(src, plan, &partial).await {
            Ok(p) => break Ok(p),
            Err(Failure::Changed(e)) if !plan.may_restart(&mut restarts) => break Err(e),
            Err(Failure::Changed(_)) => {}
            Err(Failure::Other(e)) => break Err(e),
        }
    };
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

/// A spawned range fetch, aborted when dropped (a dropped stream stops its read-ahead).
struct Spawned(JoinHandle<Result<Bytes, Failure>>);

impl Drop for Spawned {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Future for Spawned {
    type Output = Result<Bytes>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| match r {
            Ok(Ok(b)) => Ok(b),
            Ok(Err(f)) => Err(f.into_error()),
            Err(e) => Err(Error::new(
                ErrorKind::Service,
                format!("a range task failed: {e}"),
            )),
        })
    }
}

/// An ordered stream of the object's ranges with `plan.concurrency` ranges read ahead in
/// spawned tasks. The first range is read before this returns. A change of the object ends
/// the stream with the source's change error (bytes already delivered cannot be taken back,
/// so `OnChange::Restart` does not apply here).
pub(crate) async fn to_stream<S: RangeSource>(
    src: &S,
    plan: &Plan,
) -> Result<(S::Props, Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>)> {
    plan.check()?;
    let (props, version, first) = src.open(plan.chunk).await?;
    let head_len = first_len(plan, &version);
    let mut head = Vec::with_capacity(head_len);
    read_first(src, &version, first, head_len, |o, d| {
        head.truncate(o);
        head.extend_from_slice(d);
    })
    .await
    .map_err(Failure::into_error)?;
    plan.tracker.start(Some(version.total));
    plan.tracker.add(head_len as u64);
    let (src, tracker) = (src.clone(), plan.tracker.clone());
    let rest = stream::iter(ranges(head_len as u64, version.total, plan.chunk))
        .map(move |range| {
            let (src, version, tracker) = (src.clone(), version.clone(), tracker.clone());
            Spawned(tokio::spawn(async move {
                let mut buf = Vec::with_capacity((range.end - range.start) as usize);
                fetch(&src, &version, range, |o, d| {
                    buf.truncate(o);
                    buf.extend_from_slice(d);
                })
                .await?;
                tracker.add(buf.len() as u64);
                Ok(Bytes::from(buf))
            }))
        })
        .buffered(plan.concurrency);
    let head = (head_len > 0).then(|| Ok(Bytes::from(head)));
    let all = stream::iter(head).chain(rest).scan(false, |failed, item| {
        // The stream ends after its first error.
        let out = (!*failed).then_some(item);
        if matches!(out, Some(Err(_))) {
            *failed = true;
        }
        std::future::ready(out)
    });
    Ok((props, Box::pin(all)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_cover_the_rest_once() {
        let r: Vec<_> = ranges(4, 10, 4).collect();
        assert_eq!(r, vec![4..8, 8..10]);
        assert_eq!(ranges(4, 4, 4).count(), 0);
        assert_eq!(ranges(0, 8, 4).collect::<Vec<_>>(), vec![0..4, 4..8]);
        let h = Headers::from_pairs(vec![("content-range".into(), "bytes 0-3/77".into())]);
        assert_eq!(total_of(&h), Some(77));
        assert_eq!(total_of(&Headers::default()), None);
        assert_eq!(
            partial_path(Path::new("/tmp/x.bin")),
            Path::new("/tmp/x.bin.partial")
        );
    }
}
