//! What this process has learnt about how contended each item is: the share of its recent
//! conflicts after which the item turned out contended (more than one write landed since
//! the read that lost), and how long the contending writes took to land, by
//! [`Versioned::identity`]; and when its last update of each item ended, so that an update right
//! behind it counts as part of a backlog. It decides how a conflict is answered (see
//! [`UpdatePolicy::adaptive`]).
//!
//! [`Versioned::identity`]: super::Versioned::identity
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
    /// Running mean of the time from a read that lost to the read after it, over the probes
    /// that counted the writes landed in between.
    window: Option<Duration>,
    at: Instant,
}

/// What the process remembers of one item.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct Recall {
    /// The share (0..=1) of recent probes that found the item contended.
    pub(super) share: f64,
    /// How long the writes that beat a recent update took to land (see [`record`]).
    pub(super) window: Option<Duration>,
}

fn shares() -> &'static Mutex<HashMap<String, Share>> {
    static SHARES: OnceLock<Mutex<HashMap<String, Share>>> = OnceLock::new();
    SHARES.get_or_init(|| Mutex::new(HashMap::new()))
}

/// What the process remembers of this item (share 0 and no window for an item not probed in
/// the last 10 s).
pub(super) fn recall(key: &str) -> Recall {
    let map = shares().lock().unwrap_or_else(|p| p.into_inner());
    map.get(key)
        .filter(|s| s.at.elapsed() < FORGET_AFTER)
        .map_or(
            Recall {
                share: 0.0,
                window: None,
            },
            |s| Recall {
                share: s.contended,
                window: s.window,
            },
        )
}

/// Records one probe of this item: whether it found the item contended, and, when it counted
/// the writes that landed since the read that lost, the time from that read to the probe
/// (`window`: the time those writes took to land).
pub(super) fn record(key: &str, contended: bool, window: Option<Duration>) {
    let mut map = shares().lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= PRUNE_AT && !map.contains_key(key) {
        map.retain(|_, s| s.at.elapsed() < FORGET_AFTER);
    }
    let now = Instant::now();
    let sample = if contended { 1.0 } else { 0.0 };
    let share = map.entry(key.to_string()).or_insert(Share {
        contended: sample,
        window,
        at: now,
    });
    let fresh = share.at.elapsed() < FORGET_AFTER;
    let previous = if fresh { share.contended } else { sample };
    share.contended = previous * (1.0 - WEIGHT) + sample * WEIGHT;
    if let Some(w) = window {
        share.window = Some(match share.window.filter(|_| fresh) {
            Some(old) => old.mul_f64(1.0 - WEIGHT) + w.mul_f64(WEIGHT),
            None => w,
        });
    } else if !fresh {
        share.window = None;
    }
    share.at = now;
}

/// When the last update of each item in this process ended.
fn ends() -> &'static Mutex<HashMap<String, Instant>> {
    static ENDS: OnceLock<Mutex<HashMap<String, Instant>>> = OnceLock::new();
    ENDS.get_or_init(|| Mutex::new(HashMap::new()))
}

/// An update that starts within this long of the end of the previous update of the same
/// item in this process is part of a backlog: it was due before that one ended (a closed
/// loop, or updates due faster than they commit). An update that was due later starts after
/// a gap: the process's own work between two updates takes longer than this.
const BACKLOG_GAP: Duration = Duration::from_millis(1);

/// Whether an update of this item starting now follows right behind the previous one of this
/// process (see [`ended`]).
pub(super) fn backlogged(key: &str) -> bool {
    ended_within(key, BACKLOG_GAP)
}

/// Whether the last update of this item in this process ended less than `gap` ago.
fn ended_within(key: &str, gap: Duration) -> bool {
    let map = ends().lock().unwrap_or_else(|p| p.into_inner());
    map.get(key).is_some_and(|at| at.elapsed() < gap)
}

/// Records that an update of this item ended now.
pub(super) fn ended(key: String) {
    let mut map = ends().lock().unwrap_or_else(|p| p.into_inner());
    if map.len() >= PRUNE_AT && !map.contains_key(&key) {
        map.retain(|_, at| at.elapsed() < BACKLOG_GAP);
    }
    map.insert(key, Instant::now());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_update_right_behind_another_is_part_of_a_backlog() {
        let key = "memory-test-backlog";
        let hour = Duration::from_secs(3600);
        assert!(!ended_within(key, hour), "no update of it has ended");
        ended(key.to_string());
        assert!(ended_within(key, hour), "started right behind the last one");
        assert!(!ended_within(key, Duration::ZERO), "started after a gap");
    }

    #[test]
    fn the_share_follows_the_probes() {
        let key = "memory-test-item";
        let unknown = recall(key);
        assert_eq!(unknown.share, 0.0, "an unknown item is uncontended");
        assert_eq!(unknown.window, None);
        for _ in 0..20 {
            record(key, true, Some(Duration::from_millis(40)));
        }
        let hot = recall(key);
        assert!(hot.share > 0.95, "{hot:?}");
        assert_eq!(hot.window, Some(Duration::from_millis(40)));
        for _ in 0..20 {
            record(key, false, None);
        }
        let cool = recall(key);
        assert!(cool.share < 0.05, "{cool:?}");
        assert_eq!(
            cool.window,
            Some(Duration::from_millis(40)),
            "kept while fresh"
        );
        record(key, true, Some(Duration::from_millis(80)));
        let w = recall(key).window.unwrap();
        assert_eq!(
            w,
            Duration::from_millis(50),
            "a running mean, weight 1/4: {w:?}"
        );
    }
}
