//! Spans and metrics of locks: the wait of `acquire_within` (`azstore.lock.wait`) and the
//! hold of a lock (`azstore.lock.hold`, from acquisition to release or drop).

use std::future::Future;

use tracing::field::Empty;
use tracing::{Instrument, Span};

#[cfg(feature = "metrics")]
use crate::telemetry::{names, secs};

/// The lock kind of a held lock on a `T` lease, from its type: `blob`, `redis` or `cosmos`.
pub(crate) fn lock_kind<T>() -> &'static str {
    let name = std::any::type_name::<T>();
    if name.contains("::redis::") {
        "redis"
    } else if name.contains("::cosmos::") {
        "cosmos"
    } else {
        "blob"
    }
}

/// Runs the wait of `acquire_within` on lock `name` inside its span `azstore.lock.wait` and
/// records how long it took and how it ended (`acquired`, `timed_out`, `error`).
pub(crate) async fn lock_wait<H>(
    kind: &'static str,
    name: &str,
    fut: impl Future<Output = crate::error::Result<Option<H>>>,
) -> crate::error::Result<Option<H>> {
    let span = tracing::info_span!(
        "azstore.lock.wait",
        azstore.lock.kind = kind,
        azstore.lock.name = name,
        azstore.lock.outcome = Empty,
    );
    #[cfg(feature = "metrics")]
    let started = tokio::time::Instant::now();
    let result = fut.instrument(span.clone()).await;
    let outcome = match &result {
        Ok(Some(_)) => "acquired",
        Ok(None) => "timed_out",
        Err(_) => "error",
    };
    span.record("azstore.lock.outcome", outcome);
    #[cfg(feature = "metrics")]
    metrics::histogram!(names::LOCK_WAIT, "azstore.lock.kind" => kind,
        "azstore.lock.outcome" => outcome)
    .record(secs(started.elapsed()));
    result
}

/// The hold of a lock: its span `azstore.lock.hold` lasts from the acquisition to the release
/// (or drop) of the held lock, whose end records the hold time.
#[derive(Debug)]
#[must_use = "dropping a Hold ends the lock's hold span and records its hold time"]
pub(crate) struct Hold {
    span: Span,
    #[cfg(feature = "metrics")]
    kind: &'static str,
    #[cfg(feature = "metrics")]
    started: tokio::time::Instant,
}

impl Hold {
    /// A lock on the `T` lease `target` was acquired with `fencing_token`.
    pub(crate) fn start<T>(target: &str, fencing_token: u64) -> Hold {
        let span = tracing::info_span!(
            "azstore.lock.hold",
            azstore.lock.kind = lock_kind::<T>(),
            azstore.lock.name = target,
            azstore.lock.fencing_token = fencing_token,
        );
        tracing::info!(parent: &span, azstore.lock.fencing_token = fencing_token, "lock acquired");
        Hold {
            span,
            #[cfg(feature = "metrics")]
            kind: lock_kind::<T>(),
            #[cfg(feature = "metrics")]
            started: tokio::time::Instant::now(),
        }
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        tracing::debug!(parent: &self.span, "lock released");
        #[cfg(feature = "metrics")]
        metrics::histogram!(names::LOCK_HOLD, "azstore.lock.kind" => self.kind)
            .record(secs(self.started.elapsed()));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(lock_kind::<crate::blob::BlobClient>(), "blob");
    }
}
