//! Events and metrics of the keep-alive of lease and message guards: each renew (or
//! extension) and each loss. Takes plain values, so the keep-alive calls it without it
//! knowing the keep-alive's types.

use std::fmt::Display;
use std::time::Duration;

#[cfg(feature = "metrics")]
use crate::telemetry::{names, secs};

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

/// The loss of `name` was signalled for `reason` (`refused` or `unconfirmed`), `since` after the
/// last confirmed renew; `lasts` is how long one renew keeps it (`None`: infinite). Logged at
/// WARN with the reason and the loss itself.
pub(crate) fn lost(
    name: &str,
    reason: &'static str,
    loss: &impl Display,
    since: Duration,
    lasts: Option<Duration>,
) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds() {
        assert_eq!(guard_kind("message 42"), "message");
        assert_eq!(guard_kind("blob c/b"), "lease");
    }
}
