//! Listings, one shape for every service: a [`Page`] at a time, or every item as a
//! [`ResultStream`] that follows the continuation to the end.
//!
//! Each listing has a `..._page` method that fetches one page (pass the previous page's
//! [`Page::next_marker`] to continue) and a method without the suffix that returns a stream
//! of every item, issuing one request per page as the stream is polled. The marker is a
//! `String` for the XML listings (blobs, containers, queues) and a
//! [`Continuation`](crate::table::Continuation) for the Table service.
//!
//! The stream traits are re-exported here ([`TryStreamExt`], [`StreamExt`], [`Stream`]), so
//! no dependency of your own is needed to walk a listing:
//!
//! ```no_run
//! # async fn f(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
//! use azstore::paging::TryStreamExt;
//! let mut all = queues.list_queues(Some("orders-"), None);
//! while let Some(queue) = all.try_next().await? {
//!     println!("{}", queue.name);
//! }
//! # Ok(()) }
//! ```
//!
//! or to gather it, with [`collect_all`]:
//!
//! ```no_run
//! # async fn f(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
//! let blobs = azstore::paging::collect_all(container.list_blobs(Default::default())).await?;
//! println!("{} blobs", blobs.len());
//! # Ok(()) }
//! ```

use std::future::Future;
use std::pin::Pin;

use futures_util::stream;
/// Re-exported from `futures-util` so that listings and streamed downloads can be walked
/// without adding it: `try_next`, `try_collect`, `next`, `map`, ….
pub use futures_util::{Stream, StreamExt, TryStreamExt};

use crate::error::Result;

/// A boxed, `Send` stream of results, as returned by the listing and download methods. Use
/// `futures_util::TryStreamExt` to consume it.
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::paging::ResultStream;
/// use azstore::table::{Entity, Query, Stored};
/// let stream: ResultStream<Stored<Entity>> = table.query(Query::all());
/// let count = stream.try_fold(0usize, |n, _| async move { Ok(n + 1) }).await?;
/// println!("{count} entities");
/// # Ok(()) }
/// ```
pub type ResultStream<T> = Pin<Box<dyn Stream<Item = Result<T>> + Send + 'static>>;

/// Every item of a listing (or every chunk of a streamed download), in order; the first error
/// ends it. For large listings prefer walking the stream with
/// [`try_next`](TryStreamExt::try_next), which holds one page at a time.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::ListOptions;
/// use azstore::paging::collect_all;
/// let everything = collect_all(container.list_blobs(ListOptions::default())).await?;
/// println!("{} entries", everything.len());
/// # Ok(()) }
/// ```
pub async fn collect_all<T>(stream: ResultStream<T>) -> Result<Vec<T>> {
    stream.try_collect().await
}

/// One page of a listing and where the next page starts.
///
/// ```no_run
/// # async fn demo(queues: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
/// let mut marker: Option<String> = None;
/// loop {
///     let page = queues.list_queues_page(None, marker.as_deref(), Some(100)).await?;
///     for queue in &page.items {
///         println!("{}", queue.name);
///     }
///     marker = page.next_marker;
///     if marker.is_none() {
///         break;
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Page<T, M = String> {
    /// Items of this page (possibly none even when more follow).
    pub items: Vec<T>,
    /// Pass to the next call to continue; `None` when the listing is complete.
    pub next_marker: Option<M>,
}

impl<T, M> Page<T, M> {
    pub(crate) fn new(items: Vec<T>, next_marker: Option<M>) -> Page<T, M> {
        Page { items, next_marker }
    }
}

/// Every item of `client`'s listing with `args`, following markers page by page: `page`
/// fetches one page with a clone of the client and of the arguments, at a marker (`None` for
/// the first page, then each page's `next_marker`); an error ends the stream.
pub(crate) fn every_page<C, A, T, M, F, Fut>(client: &C, args: A, page: F) -> ResultStream<T>
where
    C: Clone + Send + Sync + 'static,
    A: Clone + Send + Sync + 'static,
    T: Send + 'static,
    M: Send + 'static,
    F: Fn(C, A, Option<M>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Page<T, M>>> + Send + 'static,
{
    let client = client.clone();
    paged(move |marker| page(client.clone(), args.clone(), marker))
}

/// Turns a page fetcher into a stream of items that follows markers to the end. `fetch`
/// gets `None` for the first page, then each page's `next_marker`; an error ends the stream.
fn paged<T, M, F, Fut>(fetch: F) -> ResultStream<T>
where
    T: Send + 'static,
    M: Send + 'static,
    F: Fn(Option<M>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Page<T, M>>> + Send + 'static,
{
    // State: Some(marker) = fetch next with this marker (None marker = first page);
    // None = done.
    let pages = stream::try_unfold(Some(None::<M>), move |state| {
        let fut = state.map(&fetch);
        async move {
            let Some(fut) = fut else { return Ok(None) };
            let page = fut.await?;
            Ok(Some((page.items, page.next_marker.map(Some))))
        }
    });
    pages
        .map_ok(|items| stream::iter(items.into_iter().map(Ok)))
        .try_flatten()
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Error;

    #[tokio::test]
    async fn follows_markers_and_stops_at_an_error() {
        let all: Vec<u32> = paged(|m: Option<u32>| async move {
            let at = m.unwrap_or(0);
            Ok(Page::new(vec![at, at + 1], (at < 4).then_some(at + 2)))
        })
        .try_collect()
        .await
        .unwrap();
        assert_eq!(all, [0, 1, 2, 3, 4, 5]);

        let mut failing = paged(|m: Option<u32>| async move {
            match m {
                None => Ok(Page::new(vec![1], Some(1))),
                Some(_) => Err(Error::decode("page two is broken")),
            }
        });
        assert_eq!(failing.next().await.unwrap().unwrap(), 1);
        assert!(failing.next().await.unwrap().is_err());
        assert!(failing.next().await.is_none());
    }
}
