//! Downloads as an ordered stream: `max_concurrency` ranges read ahead in spawned tasks, each
//! into a buffer reused from chunk to chunk.

use std::pin::Pin;

use bytes::Bytes;
use futures_util::{Stream, StreamExt, stream};

use crate::error::Result;
use crate::transfer::download::{Failure, Pieces, Plan, RangeSource, Spawned, fetch};
use crate::transfer::pool::Pool;

/// One range gathered into one buffer.
struct Chunk {
    buf: Vec<u8>,
    start: u64,
}

impl Pieces for Chunk {
    async fn put(&mut self, at: u64, piece: Bytes) -> Result<()> {
        if at == self.start {
            // A range fetched again starts over.
            self.buf.clear();
        }
        self.buf.extend_from_slice(&piece);
        Ok(())
    }

    async fn end(&mut self) -> Result<()> {
        Ok(())
    }
}

/// An ordered stream of the object's ranges with `plan.concurrency` ranges read ahead in
/// spawned tasks (the first among them: its body is the first response's). Memory: the
/// ranges read ahead plus the chunks the consumer holds. A change of the object ends the
/// stream with the source's change error (bytes already delivered cannot be taken back, so
/// `OnChange::Restart` does not apply here).
pub(crate) async fn to_stream<S: RangeSource>(
    src: &S,
    plan: &Plan,
) -> Result<(S::Props, Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>)> {
    plan.check()?;
    let (props, version, first) = src.open(plan.chunk).await?;
    plan.tracker.start(Some(version.total));
    // Chunks come back when the consumer drops them: enough for the read-ahead and the one
    // being consumed.
    let pool = Pool::new(plan.concurrency + 1);
    let (src, tracker) = (src.clone(), plan.tracker.clone());
    let jobs = plan.jobs(&version, first);
    let chunks = stream::iter(jobs)
        .map(move |(range, first)| {
            let (src, version, tracker, pool) =
                (src.clone(), version.clone(), tracker.clone(), pool.clone());
            Spawned::spawn(async move {
                let mut chunk = Chunk {
                    buf: pool.take((range.end - range.start) as usize),
                    start: range.start,
                };
                fetch(&src, &version, range, first, &mut chunk).await?;
                tracker.add(chunk.buf.len() as u64);
                Ok(pool.bytes(chunk.buf))
            })
        })
        .buffered(plan.concurrency)
        .map(|r| r.map_err(Failure::into_error));
    let all = chunks.scan(false, |failed, item| {
        // The stream ends after its first error.
        let out = (!*failed).then_some(item);
        if matches!(out, Some(Err(_))) {
            *failed = true;
        }
        std::future::ready(out)
    });
    Ok((props, Box::pin(all)))
}
