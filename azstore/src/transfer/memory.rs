//! Downloads into memory: every range copied straight into its place in one buffer.

use bytes::Bytes;
use futures_util::{StreamExt, TryStreamExt, stream};

use crate::error::{Error, Result};
use crate::http::StreamingResponse;
use crate::transfer::download::{Failure, Pieces, Plan, RangeSource, Version, fetch};

/// The part of the destination that holds one range (starting at object offset `base`).
struct Slice<'a> {
    dest: &'a mut [u8],
    base: u64,
}

impl Pieces for Slice<'_> {
    async fn put(&mut self, at: u64, piece: Bytes) -> Result<()> {
        // The body reader never passes more than the range.
        let o = (at - self.base) as usize;
        self.dest[o..o + piece.len()].copy_from_slice(&piece);
        Ok(())
    }

    async fn end(&mut self) -> Result<()> {
        Ok(())
    }
}

/// Fills `dest` (exactly the object's size) with every range, `plan.concurrency` at a time.
async fn fill<S: RangeSource>(
    src: &S,
    plan: &Plan,
    version: &Version,
    first: StreamingResponse,
    dest: &mut [u8],
) -> Result<(), Failure> {
    let mut rest = dest;
    let parts = plan.jobs(version, first).map(|(range, first)| {
        let n = range.end - range.start;
        let (part, tail) = std::mem::take(&mut rest).split_at_mut(n as usize);
        rest = tail;
        async move {
            let mut sink = Slice {
                dest: part,
                base: range.start,
            };
            fetch(src, version, range, first, &mut sink).await?;
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
        let size = usize::try_from(version.total).map_err(|_| {
            Error::invalid_input(format!("{} bytes do not fit in memory", version.total))
        })?;
        plan.tracker.start(Some(version.total));
        // Zeroed pages come from the allocator without a memset (calloc / fresh mmap).
        let mut buf = vec![0u8; size];
        let attempt = fill(src, plan, &version, first, &mut buf).await;
        if let Some(r) = plan.settle(attempt, &mut restarts) {
            return r.map(|()| (props, buf));
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
        let attempt = fill(src, plan, &version, first, &mut dest[..size]).await;
        if let Some(r) = plan.settle(attempt, &mut restarts) {
            return r.map(|()| (props, size));
        }
    }
}
