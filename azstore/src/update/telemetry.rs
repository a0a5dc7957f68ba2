//! Spans, events and metrics of `update()`: one span per call (`azstore.update`, with its
//! outcome), one per attempt, an event per conflict, per recognised write and per
//! `RequestSent::Maybe`.

use std::future::Future;

use tracing::field::Empty;
use tracing::{Instrument, Span};

use super::{Change, Outcome};
use crate::error::{Error, RequestSent};
use crate::http::telemetry::error_type;
#[cfg(feature = "metrics")]
use crate::telemetry::{names, secs};

/// Runs one `update()` call inside its span `azstore.update`, and records how it ended.
pub(crate) async fn update<T>(
    fut: impl Future<Output = crate::error::Result<Outcome<T>>>,
) -> crate::error::Result<Outcome<T>> {
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
                span.record("error.type", error_type(e).as_str());
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
        error.type = %error_type(e),
        "update: conflict, someone else wrote first; reading again"
    );
    #[cfg(feature = "metrics")]
    metrics::counter!(names::UPDATE_CONFLICTS).increment(1);
}
