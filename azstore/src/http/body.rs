//! A streamed response body: chunks as they arrive, each wait for one bounded in time.

use std::future::Future as _;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, RequestSent, Result};

/// A streamed response body whose every wait for the next chunk ends after `idle`.
///
/// One timer per body, not one per chunk: a chunk already buffered is returned without looking
/// at the clock; a wait starts its deadline (`idle` from the first poll that found no chunk);
/// the timer, armed at the first wait, is moved later only when it fires before the current
/// wait's deadline (at most once per `idle`), instead of being registered and cancelled for
/// every chunk of a long download.
pub(crate) struct Body<S> {
    /// `None` once the body ended, failed or timed out (the connection is let go at once).
    chunks: Option<S>,
    idle: Duration,
    /// When the current wait for a chunk ends (`None`: not waiting yet).
    deadline: Option<Instant>,
    /// Fires at or before `deadline`; created at the first wait.
    timer: Option<Pin<Box<tokio::time::Sleep>>>,
}

impl<S> Body<S> {
    /// The chunks of `chunks`, each waited for at most `idle`.
    pub(crate) fn new(chunks: S, idle: Duration) -> Body<S> {
        Body {
            chunks: Some(chunks),
            idle,
            deadline: None,
            timer: None,
        }
    }
}

impl<S> Stream for Body<S>
where
    S: Stream<Item = reqwest::Result<Bytes>> + Unpin,
{
    type Item = Result<Bytes>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Bytes>>> {
        let this = self.get_mut();
        let Some(chunks) = &mut this.chunks else {
            return Poll::Ready(None);
        };
        match chunks.poll_next_unpin(cx) {
            Poll::Ready(Some(Ok(chunk))) => {
                this.deadline = None;
                return Poll::Ready(Some(Ok(chunk)));
            }
            Poll::Ready(Some(Err(e))) => {
                this.chunks = None;
                return Poll::Ready(Some(Err(transport_error(e, true))));
            }
            Poll::Ready(None) => {
                this.chunks = None;
                this.timer = None;
                return Poll::Ready(None);
            }
            Poll::Pending => {}
        }
        let idle = this.idle;
        let deadline = *this.deadline.get_or_insert_with(|| {
            // An idle limit too large for the clock: about 30 years is "never".
            Instant::now() + idle.min(Duration::from_secs(86_400 * 365 * 30))
        });
        let timer = this
            .timer
            .get_or_insert_with(|| Box::pin(tokio::time::sleep_until(deadline)));
        loop {
            if timer.as_mut().poll(cx).is_pending() {
                return Poll::Pending;
            }
            if timer.deadline() >= deadline {
                this.chunks = None;
                this.timer = None;
                return Poll::Ready(Some(Err(Error::new(
                    ErrorKind::Timeout,
                    format!("the response body stalled for {idle:?}"),
                )
                .with_sent(RequestSent::Maybe))));
            }
            // Armed for an earlier wait, which a chunk ended: now this wait's deadline.
            timer.as_mut().reset(deadline);
        }
    }
}

/// Converts a reqwest error, dropping the URL (it may carry a SAS signature).
pub(super) fn transport_error(e: reqwest::Error, during_body: bool) -> Error {
    // Name the host (never the path or query: a SAS signature lives there).
    let host = e.url().and_then(|u| {
        let h = u.host_str()?;
        Some(match u.port_or_known_default() {
            Some(p) => format!(" ({h}:{p})"),
            None => format!(" ({h})"),
        })
    });
    let e = e.without_url();
    if e.is_builder() {
        // The request could not even be built (the headers are checked before sending, so
        // this is a last line of defence): nothing was sent, and retrying cannot help.
        return Error::invalid_input("the request could not be built")
            .with_sent(RequestSent::No)
            .with_source(e);
    }
    let (kind, sent) = if e.is_timeout() {
        (ErrorKind::Timeout, RequestSent::Maybe)
    } else if e.is_connect() && !during_body {
        (ErrorKind::Transport, RequestSent::No)
    } else {
        (ErrorKind::Transport, RequestSent::Maybe)
    };
    let what = if during_body {
        "reading the response body failed"
    } else if sent == RequestSent::No {
        "could not connect"
    } else {
        "the connection failed"
    };
    // The innermost cause is the one a user acts on ("Connection refused (os error 111)", a
    // DNS or TLS failure); it goes into the message, and the whole chain stays the source.
    let mut cause: &dyn std::error::Error = &e;
    while let Some(inner) = cause.source() {
        cause = inner;
    }
    let cause = crate::redact::redact(&cause.to_string());
    let what = format!("{what}{}: {cause}", host.unwrap_or_default());
    Error::new(kind, what).with_sent(sent).with_source(e)
}

#[cfg(test)]
mod tests {
    use super::*;

    type Chunks = Pin<Box<dyn Stream<Item = reqwest::Result<Bytes>> + Send>>;

    /// A body whose chunk `i` arrives `gaps[i]` after the previous one was taken.
    fn trickle(gaps: &'static [u64]) -> Chunks {
        Box::pin(futures_util::stream::unfold(0, move |i| async move {
            let gap = *gaps.get(i)?;
            tokio::time::sleep(Duration::from_millis(gap)).await;
            Some((Ok(Bytes::from(vec![b'x'; 10])), i + 1))
        }))
    }

    const IDLE: Duration = Duration::from_millis(600);

    #[tokio::test(start_paused = true)]
    async fn each_wait_has_its_own_limit_however_long_the_body() {
        // Eight waits of 500 ms (4 s in all, more than six times the limit): no timeout, the
        // timer armed for the first wait is moved on for each later one.
        let body = Body::new(trickle(&[500; 8]), IDLE);
        let chunks: Vec<Bytes> = body.map(|c| c.unwrap()).collect().await;
        assert_eq!(chunks.len(), 8);
    }

    #[tokio::test(start_paused = true)]
    async fn a_wait_longer_than_the_limit_ends_the_body_with_a_timeout() {
        let mut body = Body::new(trickle(&[100, 500, 700, 100]), IDLE);
        assert!(body.next().await.unwrap().is_ok());
        assert!(body.next().await.unwrap().is_ok());
        let start = Instant::now();
        let err = body.next().await.unwrap().unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Timeout, "{err}");
        assert!(err.message().contains("stalled for 600ms"), "{err}");
        // Paused clock: the timeout came exactly at the limit of that wait.
        assert_eq!(start.elapsed(), IDLE);
        assert!(body.next().await.is_none(), "nothing after the error");
    }

    #[tokio::test(start_paused = true)]
    async fn a_slow_reader_is_not_a_stalled_body() {
        // The reader takes 2 s over each chunk; the body never makes it wait.
        let mut body = Body::new(trickle(&[0, 0, 0]), IDLE);
        let mut n = 0;
        while let Some(chunk) = body.next().await {
            chunk.unwrap();
            n += 1;
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
        assert_eq!(n, 3);
        // A wait that starts after a slow read has the whole limit again.
        let mut body = Body::new(trickle(&[100, 500, 500]), IDLE);
        while let Some(chunk) = body.next().await {
            chunk.unwrap();
            tokio::time::sleep(Duration::from_secs(1)).await;
        }
    }
}
