//! Spans, events and metrics of the engines: `update()`, the keep-alive of lease and message
//! guards, locks and the queue worker. Each hook is one call at the place the decision is made.

use std::future::Future;
use std::time::Duration;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::error::{Error, RequestSent};
use crate::lease::LeaseLoss;
use crate::update::{Change, Outcome};

#[cfg(feature = "metrics")]
use crate::telemetry::{names, secs};

// ----- update() -----

/// Runs one `update()` call inside its span `azstore.update`, and records how it ended.
pub(crate) async fn update<T>(
    fut: impl Future<Output = crate::Result<Outcome<T>>>,
) -> crate::Result<Outcome<T>> {
    let span = tracing::info_span!(
        "azstore.update",
        azstore.update.outcome = Empty,
        azstore.update.attempts = Empty,
        azstore.update.conflicts = Empty,
        azstore.update.recognised_writes = Empty,
        error.type = Empty,
    );
    #[cfg(feature = "metrics")]
    let started = tokio::time::Instant::now();
    let result = fut.instrument(span.clone()).await;
    let outcome = match &result {
        Ok(o) => match o.change {
            Change::Created => "created",
            Change::Replaced => "replaced",
            Change::Deleted => "deleted",
            Change::Unchanged => "unchanged",
        },
        Err(e) if e.request_sent() == RequestSent::Maybe => "maybe",
        Err(e) if e.kind() == crate::ErrorKind::RetriesExhausted => "exhausted",
        Err(e) if e.kind() == crate::ErrorKind::Aborted => "aborted",
        Err(_) => "error",
    };
    if !span.is_disabled() {
        span.record("azstore.update.outcome", outcome);
        match &result {
            Ok(o) => {
                span.record("azstore.update.attempts", o.attempts);
                span.record("azstore.update.conflicts", o.conflicts);
                span.record("azstore.update.recognised_writes", o.recovered_ambiguous);
            }
            Err(e) => {
                span.record("error.type", crate::telemetry::http::error_type(e).as_str());
            }
        }
    }
    if let Ok(o) = &result {
        if o.recovered_ambiguous > 0 {
            tracing::info!(parent: &span, recognised_writes = o.recovered_ambiguous,
                "update: a write whose outcome was unknown was recognised as applied (by its write id)");
            #[cfg(feature = "metrics")]
            metrics::counter!(names::UPDATE_RECOGNISED).increment(u64::from(o.recovered_ambiguous));
        }
    }
    if let Err(e) = &result {
        if e.request_sent() == RequestSent::Maybe {
            tracing::warn!(parent: &span, error = %e,
                "update: stopped with a write that may have been applied (RequestSent::Maybe)");
            #[cfg(feature = "metrics")]
            metrics::counter!(names::UPDATE_MAYBE).increment(1);
        }
    }
    #[cfg(feature = "metrics")]
    metrics::histogram!(names::UPDATE_DURATION, "azstore.update.outcome" => outcome)
        .record(secs(started.elapsed()));
    result
}

/// The span of `update()` attempt number `attempt` (read, decide, write); counts it.
pub(crate) fn update_attempt(attempt: u32) -> Span {
    #[cfg(feature = "metrics")]
    metrics::counter!(names::UPDATE_ATTEMPTS).increment(1);
    tracing::info_span!("azstore.update.attempt", azstore.update.attempt = attempt)
}

/// A write (or delete) of `update()` refused because the resource changed: `e` is the refusal.
pub(crate) fn update_conflict(e: &Error) {
    tracing::debug!(
        http.response.status_code = e.status().unwrap_or_default(),
        error.type = %crate::telemetry::http::error_type(e),
        "update: conflict, someone else wrote first; reading again"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(names::UPDATE_CONFLICTS).increment(1);
}

// ----- keep-alive (lease guards, message guards) -----

/// What a keep-alive keeps: `lease` or `message` (from its name: message guards are named
/// `message <id>`).
fn guard_kind(name: &str) -> &'static str {
    if name.starts_with("message ") {
        "message"
    } else {
        "lease"
    }
}

/// One renew (or extension) of `name` that took `took` and ended as `outcome` (`ok`,
/// `transient`, `refused` or `timeout`).
pub(crate) fn renewed(name: &str, took: Duration, outcome: &'static str) {
    tracing::debug!(
        azstore.lease.target = name,
        azstore.guard = guard_kind(name),
        azstore.lease.renew.outcome = outcome,
        duration_ms = took.as_secs_f64() * 1000.0,
        "keep-alive: renew"
    );
    #[cfg(feature = "metrics")]
    metrics::histogram!(names::RENEW_DURATION, "azstore.guard" => guard_kind(name),
        "azstore.lease.renew.outcome" => outcome)
    .record(secs(took));
}

/// The loss of `name` was signalled, `since` after the last confirmed renew; `lasts` is how
/// long one renew keeps it (`None`: infinite). Logged at WARN with the reason.
pub(crate) fn lost(name: &str, loss: &LeaseLoss, since: Duration, lasts: Option<Duration>) {
    let reason = match loss {
        LeaseLoss::Refused { .. } => "refused",
        _ => "unconfirmed",
    };
    // Signed: negative when the loss was noticed after the lease would have expired.
    let time_left = lasts.map(|l| l.as_secs_f64() - since.as_secs_f64());
    tracing::warn!(
        azstore.lease.target = name,
        azstore.guard = guard_kind(name),
        azstore.lease.loss_reason = reason,
        azstore.lease.time_left_s = time_left,
        since_last_renew_s = since.as_secs_f64(),
        %loss,
        "keep-alive lost"
    );
    #[cfg(feature = "metrics")]
    {
        metrics::counter!(names::LEASE_LOSSES, "azstore.guard" => guard_kind(name),
            "azstore.lease.loss_reason" => reason)
        .increment(1);
        if let Some(left) = time_left {
            metrics::histogram!(names::LOSS_TIME_LEFT, "azstore.guard" => guard_kind(name),
                "azstore.lease.loss_reason" => reason)
            .record(left);
        }
    }
}

// ----- locks -----

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
    fut: impl Future<Output = crate::Result<Option<H>>>,
) -> crate::Result<Option<H>> {
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

// ----- queue worker -----

/// The span of one message handled by a worker of `queue`.
pub(crate) fn message_span(queue: &str, id: &str, dequeue_count: u32) -> Span {
    tracing::info_span!(
        "azstore.queue.message",
        messaging.destination.name = queue,
        messaging.message.id = id,
        azstore.queue.dequeue_count = dequeue_count,
        azstore.queue.outcome = Empty,
    )
}

/// A worker of `queue` settled a message as `outcome` (`completed`, `failed`, `lost`,
/// `poisoned`).
pub(crate) fn queue_outcome(queue: &str, outcome: &'static str) {
    Span::current().record("azstore.queue.outcome", outcome);
    #[cfg(feature = "metrics")]
    metrics::counter!(names::QUEUE_MESSAGES, "messaging.destination.name" => queue.to_string(),
        "azstore.queue.outcome" => outcome)
    .increment(1);
    #[cfg(not(feature = "metrics"))]
    let _ = queue;
}

/// A message of `queue` was moved to `poison_queue` (as `copy_id`) after `dequeue_count`
/// deliveries: logged at WARN with the reason.
pub(crate) fn poisoned(
    queue: &str,
    poison_queue: &str,
    id: &str,
    copy_id: &str,
    dequeue_count: u32,
    reason: &str,
) {
    tracing::warn!(
        messaging.destination.name = queue,
        messaging.message.id = id,
        azstore.queue.dequeue_count = dequeue_count,
        azstore.queue.poison_queue = poison_queue,
        azstore.queue.poison_copy_id = copy_id,
        error = reason,
        "queue message moved to the poison queue"
    );
    queue_outcome(queue, "poisoned");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(guard_kind("message 42"), "message");
        assert_eq!(guard_kind("blob c/b"), "lease");
        assert_eq!(lock_kind::<crate::blob::BlobClient>(), "blob");
    }
}
