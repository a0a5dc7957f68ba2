//! The download half of the engine: parallel ranged GETs pinned to the first response's ETag,
//! delivered into a file ([`to_file`]), into one buffer ([`to_vec`], [`into_slice`]) or as an
//! ordered stream ([`to_stream`]).
//!
//! This module holds what every mode shares: the ranges of a download (the first one's body
//! is the first response's, read concurrently with the others, never before them), the pinned
//! request of a range, and reading a body into a [`Pieces`] sink with retries.
//!
//! Memory is bounded by construction: at most `max_concurrency` ranges are in flight or
//! waiting to be consumed.

use std::future::Future;
use std::ops::Range;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::StreamExt;
use tokio::task::JoinHandle;

use crate::conditions::ETag;
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::http::{Headers, StreamingResponse};
use crate::transfer::OnChange;
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

/// The properties a download's first response carries (Blob or File): read from its headers,
/// with the ETag every later range is pinned to and the object's size.
pub(crate) trait FirstProps: Sized {
    /// Reads the properties from the first response's headers.
    fn parse(headers: &Headers) -> Result<Self>;
    /// The version the later ranges are pinned to.
    fn version(&self) -> Version;
}

/// How a download runs.
#[derive(Debug, Clone)]
pub(crate) struct Plan {
    pub(crate) chunk: u64,
    pub(crate) concurrency: usize,
    pub(crate) on_change: OnChange,
    pub(crate) tracker: std::sync::Arc<Tracker>,
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

    /// What one attempt of a download came to: `Some` result to return, or `None` to start
    /// over because the object changed and [`OnChange`] allows one more restart.
    pub(crate) fn settle<T>(
        &self,
        attempt: Result<T, Failure>,
        restarts: &mut u32,
    ) -> Option<Result<T>> {
        match (attempt, self.on_change) {
            (Ok(v), _) => Some(Ok(v)),
            (Err(Failure::Changed(_)), OnChange::Restart { max_restarts })
                if *restarts < max_restarts =>
            {
                *restarts += 1;
                tracing::debug!(
                    restarts = *restarts,
                    "object changed during download; restarting"
                );
                None
            }
            (Err(f), _) => Some(Err(f.into_error())),
        }
    }

    /// The ranges of the download of `version`, each with the response that already carries
    /// it: the first range (`0..min(chunk, total)`, skipped when empty) is `first`'s body.
    pub(crate) fn jobs(
        &self,
        version: &Version,
        first: StreamingResponse,
    ) -> impl Iterator<Item = (Range<u64>, Option<StreamingResponse>)> + Send + 'static {
        let head = version.total.min(self.chunk);
        (head > 0)
            .then_some((0..head, Some(first)))
            .into_iter()
            .chain(ranges(head, version.total, self.chunk).map(|r| (r, None)))
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
    pub(crate) fn into_error(self) -> Error {
        match self {
            Failure::Changed(e) | Failure::Other(e) => e,
        }
    }
}

/// Bytes `first..` of the object in ranges of `chunk`.
fn ranges(first: u64, total: u64, chunk: u64) -> impl Iterator<Item = Range<u64>> + Send {
    (first..total)
        .step_by(chunk as usize)
        .map(move |s| s..total.min(s.saturating_add(chunk)))
}

fn total_of(headers: &Headers) -> Option<u64> {
    let range = headers.get("content-range")?;
    range.rsplit_once('/')?.1.trim().parse().ok()
}

/// Where the body of one range goes, piece by piece as it arrives.
pub(crate) trait Pieces: Send {
    /// `piece` holds the object's bytes from offset `at`. A range fetched again after its body
    /// broke off starts over at its first byte.
    fn put(&mut self, at: u64, piece: Bytes) -> impl Future<Output = Result<()>> + Send;

    /// The whole range has arrived.
    fn end(&mut self) -> impl Future<Output = Result<()>> + Send;
}

/// Reads exactly the bytes of `range` from `resp`'s body into `sink`.
async fn read_body<P: Pieces>(
    resp: StreamingResponse,
    range: Range<u64>,
    timeout: Duration,
    sink: &mut P,
) -> Result<()> {
    let expect = range.end - range.start;
    let read = async {
        let mut body = std::pin::pin!(resp.into_stream());
        let mut got = 0u64;
        while let Some(piece) = body.next().await {
            let piece = piece?;
            if piece.len() as u64 > expect - got {
                return Err(Error::decode(format!(
                    "a ranged GET of {expect} bytes returned more"
                )));
            }
            let n = piece.len() as u64;
            sink.put(range.start + got, piece).await?;
            got += n;
        }
        if got != expect {
            return Err(Error::decode(format!(
                "a ranged GET of {expect} bytes returned {got}"
            )));
        }
        sink.end().await
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

/// Fetches `range` pinned to `version` into `sink` (from `first`, the response that already
/// carries it, if any), fetching it again when its body breaks off.
pub(crate) async fn fetch<S: RangeSource, P: Pieces>(
    src: &S,
    version: &Version,
    range: Range<u64>,
    mut first: Option<StreamingResponse>,
    sink: &mut P,
) -> Result<(), Failure> {
    let mut attempt = 0;
    loop {
        attempt += 1;
        let resp = match first.take() {
            Some(r) => r,
            None => request_range(src, version, range.clone()).await?,
        };
        match read_body(resp, range.clone(), src.body_timeout(), sink).await {
            Ok(()) => return Ok(()),
            Err(e)
                if attempt < BODY_ATTEMPTS
                    && matches!(e.kind(), ErrorKind::Transport | ErrorKind::Timeout) =>
            {
                tracing::debug!(error = %e, attempt, "range body broke off; fetching it again");
            }
            Err(e) => return Err(Failure::Other(e)),
        }
    }
}

/// A spawned range fetch, aborted when dropped (a dropped download stops its ranges).
#[must_use = "dropping a Spawned aborts its range task"]
pub(crate) struct Spawned<T>(JoinHandle<Result<T, Failure>>);

impl<T: Send + 'static> Spawned<T> {
    pub(crate) fn spawn(f: impl Future<Output = Result<T, Failure>> + Send + 'static) -> Self {
        Spawned(tokio::spawn(f))
    }
}

impl<T> Drop for Spawned<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl<T> Future for Spawned<T> {
    type Output = Result<T, Failure>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.0).poll(cx).map(|r| match r {
            Ok(r) => r,
            Err(e) => Err(Failure::Other(Error::new(
                ErrorKind::Service,
                format!("a range task failed: {e}"),
            ))),
        })
    }
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
        let partial = crate::transfer::to_file::partial_path(std::path::Path::new("/tmp/x.bin"));
        let name = partial.file_name().unwrap().to_str().unwrap();
        assert!(
            name.starts_with("x.bin.") && name.ends_with(".partial"),
            "{name}"
        );
        assert_eq!(name.len(), "x.bin.".len() + 16 + ".partial".len(), "{name}");
        assert_eq!(partial.parent(), Some(std::path::Path::new("/tmp")));
        assert_ne!(
            partial,
            crate::transfer::to_file::partial_path(std::path::Path::new("/tmp/x.bin"))
        );
    }
}
