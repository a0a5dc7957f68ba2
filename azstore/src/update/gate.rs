//! In-process turns: the attempts of concurrent [`update`](super::update)s of one item made
//! in this process go one at a time, in arrival order, so they never conflict with each
//! other (writers in other processes still do, and are handled by the backoff).

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};

use tokio::sync::{Mutex as TurnLock, OwnedMutexGuard};

/// The turn locks of the items being updated in this process, by [`Versioned::key`]. Entries
/// whose lock no `update` holds any more are pruned when the map has doubled since the last
/// pruning, so it stays proportional to the items in use.
///
/// [`Versioned::key`]: super::Versioned::key
struct Registry {
    locks: HashMap<String, Weak<TurnLock<()>>>,
    prune_at: usize,
}

fn registry() -> &'static Mutex<Registry> {
    static REGISTRY: OnceLock<Mutex<Registry>> = OnceLock::new();
    REGISTRY.get_or_init(|| {
        Mutex::new(Registry {
            locks: HashMap::new(),
            prune_at: 64,
        })
    })
}

/// The turn lock of one item, shared by every `update` of that item in this process.
pub(super) struct Gate(Arc<TurnLock<()>>);

/// Holding one: it is this attempt's turn.
pub(super) type Turn = OwnedMutexGuard<()>;

impl Gate {
    pub(super) fn for_key(key: &str) -> Gate {
        let mut reg = registry().lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lock) = reg.locks.get(key).and_then(Weak::upgrade) {
            return Gate(lock);
        }
        if reg.locks.len() >= reg.prune_at {
            reg.locks.retain(|_, w| w.strong_count() > 0);
            reg.prune_at = (reg.locks.len() * 2).max(64);
        }
        let lock = Arc::new(TurnLock::new(()));
        reg.locks.insert(key.to_string(), Arc::downgrade(&lock));
        Gate(lock)
    }

    /// Waits for this item's turn (first come, first served).
    pub(super) async fn turn(&self) -> Turn {
        self.0.clone().lock_owned().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_turn_at_a_time_per_key_in_arrival_order() {
        let a = Gate::for_key("gate-test-a");
        let a2 = Gate::for_key("gate-test-a");
        let b = Gate::for_key("gate-test-b");
        let held = a.turn().await;
        // Another key is independent.
        let _b = b.turn().await;
        // The same key waits, and waiters are served in arrival order.
        let order = Arc::new(Mutex::new(Vec::new()));
        let mut waiters = Vec::new();
        for i in 0..3 {
            let g = Gate::for_key("gate-test-a");
            let order = order.clone();
            waiters.push(tokio::spawn(async move {
                let _t = g.turn().await;
                order.lock().unwrap().push(i);
            }));
            tokio::task::yield_now().await;
        }
        assert!(a2.0.try_lock().is_err(), "the turn is held");
        drop(held);
        for w in waiters {
            w.await.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), vec![0, 1, 2]);
    }

    #[test]
    fn unused_locks_are_pruned() {
        for i in 0..200 {
            let _ = Gate::for_key(&format!("gate-prune-{i}"));
        }
        let reg = registry().lock().unwrap();
        assert!(reg.locks.len() < 200, "{}", reg.locks.len());
    }
}
