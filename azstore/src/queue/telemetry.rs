//! Spans, events and metrics of the queue worker: one span per message handled
//! (`azstore.queue.message`), its outcome, and moves to the poison queue.

use tracing::Span;
use tracing::field::Empty;

#[cfg(feature = "metrics")]
use crate::telemetry::names;

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
