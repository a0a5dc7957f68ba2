//! In-process turns: the attempts of concurrent [`update`](super::update)s of one item made
//! in this process go one at a time, in arrival order, so they never conflict with each
//! other (writers in other processes still do, and are handled by the backoff). An update
//! that commits while another of the item waits hands it the state it wrote with the turn
//! ([`Handoff`]), so the next one writes without reading first.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::Duration;

use tokio::sync::{Mutex as TurnLock, OwnedMutexGuard};
use tokio::time::Instant;

use super::{Current, Versioned};
use crate::conditions::ETag;

/// The state an update of this process wrote, left with the turn for the next update of the
/// item: what a read right after the write would have returned, as the adapter's
/// [`Versioned::snapshot`] bytes.
pub(super) struct Handoff {
    /// `std::any::type_name` of the adapter that wrote it: only the same adapter restores it.
    adapter: &'static str,
    bytes: Vec<u8>,
    etag: ETag,
    token: String,
    /// Past this instant the state is not handed over: another process may have written since.
    fresh_until: Instant,
}

impl Handoff {
    /// The state `resource` wrote: `value` stored with `etag` and the write-id `token`, by a
    /// write that took `took`. `None` when the adapter offers no snapshot.
    pub(super) fn of<R: Versioned>(
        resource: &R,
        value: &R::Value,
        etag: &ETag,
        token: &str,
        took: Duration,
    ) -> Option<Handoff> {
        Some(Handoff {
            adapter: std::any::type_name::<R>(),
            bytes: resource.snapshot(value)?,
            etag: etag.clone(),
            token: token.to_string(),
            fresh_until: Instant::now() + took,
        })
    }

    /// The state as `resource` would have read it, if it wrote it and it is still fresh: no
    /// older than the write that made it took (a read followed by a write leaves another
    /// process the same time to write in between).
    pub(super) fn restore<R: Versioned>(self, resource: &R) -> Option<Current<R::Value>> {
        if self.adapter != std::any::type_name::<R>() || Instant::now() > self.fresh_until {
            return None;
        }
        Some(Current {
            value: resource.restore(&self.bytes)?,
            etag: self.etag,
            // As a read returns it: an adapter that stores no write ids returns none.
            write_id: resource.stores_write_ids().then_some(self.token),
        })
    }
}

/// What a turn holds: the state the update before handed over, if any.
type Slot = Option<Handoff>;

/// The turn locks of the items being updated in this process, by [`Versioned::identity`]. Entries
/// whose lock no `update` holds any more are pruned when the map has doubled since the last
/// pruning, so it stays proportional to the items in use.
///
/// [`Versioned::identity`]: super::Versioned::identity
struct Registry {
    locks: HashMap<String, Weak<TurnLock<Slot>>>,
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
pub(super) struct Gate(Arc<TurnLock<Slot>>);

/// Holding one: it is this attempt's turn, with what the update before left in it.
pub(super) type Turn = OwnedMutexGuard<Slot>;

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
        let lock = Arc::new(TurnLock::new(None));
        reg.locks.insert(key.to_string(), Arc::downgrade(&lock));
        Gate(lock)
    }

    /// Waits for this item's turn (first come, first served).
    pub(super) async fn turn(&self) -> Turn {
        self.0.clone().lock_owned().await
    }

    /// Whether another update of the item is running in this process besides the one holding
    /// the turn (waiting for it, or stepping aside): every running update holds its gate, and
    /// the turn holds one more reference.
    pub(super) fn others_running(&self) -> bool {
        Arc::strong_count(&self.0) > 2
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

    /// An adapter that offers snapshots (decimal text) and sends nothing.
    struct Decimal;
    /// The same item through an adapter of another type.
    struct Other;

    macro_rules! offline_adapter {
        ($t:ty) => {
            impl Versioned for $t {
                type Value = u64;
                async fn read(&self) -> crate::Result<Option<Current<u64>>> {
                    Ok(None)
                }
                async fn replace(&self, _: &u64, _: &ETag, _: &str) -> crate::Result<ETag> {
                    Ok(ETag::new("e"))
                }
                async fn create(&self, _: &u64, _: &str) -> crate::Result<ETag> {
                    Ok(ETag::new("e"))
                }
                async fn delete(&self, _: &ETag) -> crate::Result<()> {
                    Ok(())
                }
                fn stores_write_ids(&self) -> bool {
                    true
                }
                fn identity(&self) -> String {
                    "gate-test-handoff".into()
                }
                fn snapshot(&self, value: &u64) -> Option<Vec<u8>> {
                    Some(value.to_string().into_bytes())
                }
                fn restore(&self, snapshot: &[u8]) -> Option<u64> {
                    std::str::from_utf8(snapshot).ok()?.parse().ok()
                }
            }
        };
    }
    offline_adapter!(Decimal);
    offline_adapter!(Other);

    #[tokio::test(start_paused = true)]
    async fn a_handoff_is_restored_fresh_by_the_adapter_that_wrote_it() {
        let took = Duration::from_millis(3);
        let handoff = || Handoff::of(&Decimal, &42, &ETag::new("v7"), "id1,id0", took).unwrap();
        // Fresh, the same adapter: what a read would have returned.
        tokio::time::advance(Duration::from_millis(2)).await;
        let restored = handoff().restore(&Decimal).expect("fresh");
        assert_eq!(restored.value, 42);
        assert_eq!(restored.etag, ETag::new("v7"));
        assert_eq!(restored.write_id.as_deref(), Some("id1,id0"));
        // Another adapter type on the same item: read instead.
        assert!(handoff().restore(&Other).is_none());
        // Older than the write took: another process may have written since.
        let h = handoff();
        tokio::time::advance(Duration::from_millis(4)).await;
        assert!(h.restore(&Decimal).is_none());
    }

    #[tokio::test]
    async fn others_running_counts_the_updates_beside_the_turn_holder() {
        let a = Gate::for_key("gate-test-others");
        let held = a.turn().await;
        assert!(!a.others_running(), "only the holder");
        let b = Gate::for_key("gate-test-others");
        assert!(a.others_running(), "another update holds the gate");
        drop(b);
        assert!(!a.others_running());
        drop(held);
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
