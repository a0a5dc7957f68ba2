//! What this process has learnt about how contended each item is: the share of its recent
//! conflicts after which the item turned out contended (more than one write landed since
//! the read that lost), by [`Versioned::key`]. It decides how a conflict is answered (see
//! [`UpdatePolicy::adaptive`]).
//!
//! [`Versioned::key`]: super::Versioned::key
//! [`UpdatePolicy::adaptive`]: super::UpdatePolicy::adaptive

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

/// Weight of the newest probe in the running share.
const WEIGHT: f64 = 0.25;
/// An item not probed for this long counts as uncontended again.
const FORGET_AFTER: Duration = Duration::from_secs(10);
/// The map is pruned of forgotten items when it grows past this.
const PRUNE_AT: usize = 1024;

struct Share {
    contended: f64,
    at: Instant,
}

fn shares() -> &'static Mutex<HashMap<String, Share>> {
    static SHARES: OnceLock<Mutex<HashMap<String, Share>>> = OnceLock::new();
    SHARES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// The share (0..=1) of this item's recent probes that found it contended (0 for an item
/// not probed in the last 10 s).
pub(super) fn contended_share(key: &str) -> f64 {
    let map = shares().lock().unwrap_or_else(|p| p.into_inner());
    map.get(key)
        .filter(|s| s.at.elapsed() < FORGET_AFTER)
        .map_or(0.0, |s| s.contended)
}

/// Records one probe of this item: whether it found the item contended.
pub(super) fn record(key: &str, contended: bool) {
    let mut map = shares().lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= PRUNE_AT && !map.contains_key(key) {
        map.retain(|_, s| s.at.elapsed() < FORGET_AFTER);
    }
    let now = Instant::now();
    let sample = if contended { 1.0 } else { 0.0 };
    let share = map.entry(key.to_string()).or_insert(Share {
        contended: sample,
        at: now,
    });
    let previous = if share.at.elapsed() < FORGET_AFTER {
        share.contended
    } else {
        sample
    };
    share.contended = previous * (1.0 - WEIGHT) + sample * WEIGHT;
    share.at = now;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_share_follows_the_probes() {
        let key = "memory-test-item";
        assert_eq!(contended_share(key), 0.0, "an unknown item is uncontended");
        for _ in 0..20 {
            record(key, true);
        }
        assert!(contended_share(key) > 0.95, "{}", contended_share(key));
        for _ in 0..20 {
            record(key, false);
        }
        assert!(contended_share(key) < 0.05, "{}", contended_share(key));
    }
}
