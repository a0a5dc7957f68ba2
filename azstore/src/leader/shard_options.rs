//! What a shard group reports ([`ShardEvent`]) and how it is tuned ([`ShardOptions`]).

use std::time::Duration;

#[cfg(doc)]
use super::{ShardGroup, ShardWorker};

/// What a [`ShardWorker`] reports.
///
/// ```no_run
/// # async fn demo(mut worker: azstore::leader::ShardWorker) {
/// use azstore::leader::ShardEvent;
/// while let Some(event) = worker.recv().await {
///     match event {
///         ShardEvent::Acquired { shard, epoch } => println!("start {shard} (epoch {epoch})"),
///         ShardEvent::Lost { shard } => println!("stop {shard}"),
///         _ => {}
///     }
/// }
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShardEvent {
    /// The worker now owns `shard`; pass `epoch` (the shard lock's fencing token) with every
    /// write for it.
    Acquired {
        /// The shard name.
        shard: String,
        /// The epoch of this ownership.
        epoch: u64,
    },
    /// The worker no longer owns `shard` (released to rebalance or on leaving — released only
    /// once [`recv`](super::ShardWorker::recv) returned this event, or one interval after it
    /// was sent when nobody calls `recv` — or the lease was lost — sent before it can expire).
    /// Stop acting on it.
    Lost {
        /// The shard name.
        shard: String,
    },
}

/// Options of a [`ShardGroup`].
///
/// ```
/// use std::time::Duration;
/// let options = azstore::leader::ShardOptions::default()
///     .interval(Duration::from_secs(2))
///     .member_slots(16);
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
#[must_use]
pub struct ShardOptions {
    pub(crate) interval: Duration,
    pub(crate) member_slots: usize,
}

impl Default for ShardOptions {
    /// A 5 s balancing interval and 32 member slots.
    fn default() -> Self {
        ShardOptions {
            interval: Duration::from_secs(5),
            member_slots: 32,
        }
    }
}

impl ShardOptions {
    /// How often each worker reads the group's state and rebalances (default 5 s; at least
    /// 100 ms). Every interval a worker reads every member slot and every shard lock once,
    /// in one bulk status read where the backend has one
    /// ([`LockTarget::status_many`](crate::lock::LockTarget::status_many)).
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::leader::ShardOptions::default().interval(Duration::from_secs(1));
    /// # let _ = options;
    /// ```
    pub fn interval(mut self, v: Duration) -> Self {
        self.interval = v;
        self
    }

    /// The most workers the group counts (default 32; 1–1024): each worker holds one member
    /// slot lock `<group>/members/<k>`. A worker that finds every slot taken waits for one.
    ///
    /// ```
    /// let options = azstore::leader::ShardOptions::default().member_slots(8);
    /// # let _ = options;
    /// ```
    pub fn member_slots(mut self, v: usize) -> Self {
        self.member_slots = v;
        self
    }
}
