//! Traces and metrics: the names azstore emits, in one place (the table is in
//! docs/observability.md).
//!
//! Traces go through `tracing` (always on; nothing is recorded unless a subscriber listens, and
//! no field is computed then). Metrics go through the `metrics` facade with the `metrics`
//! feature; without it every metric call here is an empty function the compiler removes.
//!
//! Spans follow OpenTelemetry's conventions as Azure's own SDKs apply them: an operation span
//! per request sent through the pipeline (`otel.name` `azstore.<service>.<operation>`), an HTTP
//! client span per attempt (`otel.name` the method, `otel.kind` `client`) with `az.namespace`,
//! `az.client_request_id`, `az.service_request.id`, `http.request.method`,
//! `http.response.status_code`, `http.request.resend_count`, `server.address`, `server.port`,
//! `url.full` (SAS signatures redacted; the credential's own query never recorded) and
//! `error.type`. The engines (`update`, lease guards, locks, the queue worker) add spans and
//! events of their own.

/// Metric names (see docs/observability.md for units, labels and buckets).
pub(crate) mod names {
    /// Histogram, seconds: one public call (all attempts and the waits between them).
    pub const CALL_DURATION: &str = "azstore.client.operation.duration";
    /// Histogram, attempts: HTTP attempts one call took.
    pub const CALL_ATTEMPTS: &str = "azstore.client.operation.attempts";
    /// Counter: `update()` attempts (read, decide, write).
    pub const UPDATE_ATTEMPTS: &str = "azstore.update.attempts";
    /// Counter: `update()` writes refused because someone else wrote first (412, create 409).
    pub const UPDATE_CONFLICTS: &str = "azstore.update.conflicts";
    /// Counter: writes of unknown outcome that `update()` recognised as applied by their id.
    pub const UPDATE_RECOGNISED: &str = "azstore.update.recognised_writes";
    /// Counter: `update()` calls that ended with `RequestSent::Maybe`.
    pub const UPDATE_MAYBE: &str = "azstore.update.maybe";
    /// Histogram, seconds: one `update()` call, labelled with its outcome.
    pub const UPDATE_DURATION: &str = "azstore.update.duration";
    /// Histogram, seconds: one lease renew (or message visibility extension).
    pub const RENEW_DURATION: &str = "azstore.lease.renew.duration";
    /// Counter: leases (or message guards) lost, labelled with the reason.
    pub const LEASE_LOSSES: &str = "azstore.lease.losses";
    /// Histogram, seconds: time left before the guard's own deadline when the loss was
    /// signalled (negative: noticed late, e.g. after a pause).
    pub const LOSS_TIME_LEFT: &str = "azstore.lease.loss.time_left";
    /// Histogram, seconds: waiting for a lock (`acquire_within`).
    pub const LOCK_WAIT: &str = "azstore.lock.wait.duration";
    /// Histogram, seconds: holding a lock (acquired to released or dropped).
    pub const LOCK_HOLD: &str = "azstore.lock.hold.duration";
    /// Counter: queue messages handled by a worker, labelled with the outcome.
    pub const QUEUE_MESSAGES: &str = "azstore.queue.messages";
}

/// Explicit histogram bucket boundaries (seconds) suggested for the duration histograms, from
/// a fast local call (1 ms) to a call that used a whole default time budget (60 s). A recorder
/// takes them as it configures buckets (e.g. `PrometheusBuilder::set_buckets_for_metric`).
///
/// ```
/// assert_eq!(azstore::telemetry::DURATION_BUCKETS.first(), Some(&0.001));
/// ```
pub const DURATION_BUCKETS: &[f64] = &[
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The metric names azstore emits (with the `metrics` feature), for a recorder to describe
/// or configure them.
///
/// ```
/// assert!(azstore::telemetry::METRIC_NAMES.contains(&"azstore.update.conflicts"));
/// ```
pub const METRIC_NAMES: &[&str] = &[
    names::CALL_DURATION,
    names::CALL_ATTEMPTS,
    names::UPDATE_ATTEMPTS,
    names::UPDATE_CONFLICTS,
    names::UPDATE_RECOGNISED,
    names::UPDATE_MAYBE,
    names::UPDATE_DURATION,
    names::RENEW_DURATION,
    names::LEASE_LOSSES,
    names::LOSS_TIME_LEFT,
    names::LOCK_WAIT,
    names::LOCK_HOLD,
    names::QUEUE_MESSAGES,
];

/// Describes every metric (unit and one line of help) to the installed recorder; call once
/// after installing it. Only with the `metrics` feature.
///
/// ```no_run
/// // After installing a recorder (an exporter's builder does it):
/// azstore::telemetry::describe_metrics();
/// ```
#[cfg(feature = "metrics")]
pub fn describe_metrics() {
    use metrics::{Unit, describe_counter, describe_histogram};
    describe_histogram!(
        names::CALL_DURATION,
        Unit::Seconds,
        "one call: all attempts and waits"
    );
    describe_histogram!(names::CALL_ATTEMPTS, Unit::Count, "HTTP attempts per call");
    describe_counter!(names::UPDATE_ATTEMPTS, Unit::Count, "update() attempts");
    describe_counter!(
        names::UPDATE_CONFLICTS,
        Unit::Count,
        "update() write conflicts"
    );
    describe_counter!(
        names::UPDATE_RECOGNISED,
        Unit::Count,
        "ambiguous writes update() recognised as applied"
    );
    describe_counter!(
        names::UPDATE_MAYBE,
        Unit::Count,
        "update() ended with RequestSent::Maybe"
    );
    describe_histogram!(names::UPDATE_DURATION, Unit::Seconds, "one update() call");
    describe_histogram!(
        names::RENEW_DURATION,
        Unit::Seconds,
        "one lease renew / extension"
    );
    describe_counter!(
        names::LEASE_LOSSES,
        Unit::Count,
        "leases or message guards lost"
    );
    describe_histogram!(
        names::LOSS_TIME_LEFT,
        Unit::Seconds,
        "time left before the guard's deadline when the loss was signalled"
    );
    describe_histogram!(names::LOCK_WAIT, Unit::Seconds, "waiting for a lock");
    describe_histogram!(names::LOCK_HOLD, Unit::Seconds, "holding a lock");
    describe_counter!(
        names::QUEUE_MESSAGES,
        Unit::Count,
        "queue messages by outcome"
    );
}

/// Seconds as f64, for a histogram.
#[cfg(feature = "metrics")]
pub(crate) fn secs(d: std::time::Duration) -> f64 {
    d.as_secs_f64()
}
