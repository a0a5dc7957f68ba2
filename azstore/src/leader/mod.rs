//! Leader election and shard ownership on azstore's locks — Blob, Redis (feature `redis`) and
//! Cosmos DB (feature `cosmos`) alike.
//!
//! - [`Election`]: [`campaign`](Election::campaign) waits to lead and returns a
//!   [`Leadership`] with its **epoch** (the lock's fencing token: larger than every earlier
//!   leader's), a [`lost`](Leadership::lost) future that completes before the lease can
//!   expire, and [`resign`](Leadership::resign) to hand over at once;
//!   [`observe`](Election::observe) follows the leader without campaigning.
//! - [`ShardGroup`]: N named shards spread over M [`ShardWorker`]s, each shard one lock,
//!   balanced to ⌊N/M⌋..⌈N/M⌉ per worker, with [`ShardEvent::Acquired`] (and its epoch) and
//!   [`ShardEvent::Lost`].
//!
//! # What is guaranteed, and what only the epoch guarantees
//! The lock gives **at most one holder at a time as far as the storage service decides**: a
//! second campaigner cannot take the lock until the first released it or its lease ended. A
//! holder learns of a loss ([`Leadership::lost`], [`ShardEvent::Lost`]) a safety margin
//! *before* its lease can end — as long as its process runs. A process paused (GC, SIGSTOP, VM
//! migration) past its lease wakes up still believing it leads until its next check: between a
//! check and a write nothing but the **epoch** protects the resource. Pass the epoch with every
//! write and have the resource refuse an epoch smaller than the largest it has seen (a
//! conditional write on a record holding the epoch does it). Epochs strictly increase across
//! leaders and across owners of one shard.
//!
//! # Failover
//! A resignation (or [`ShardWorker::leave`], or a drop) releases the lock: the next campaigner
//! takes over within its poll interval (tens of milliseconds in the same process, up to the
//! lock's poll ceiling, 800 ms by default, elsewhere). A crashed leader is replaced once its
//! lease ends: on Blob and Redis the service ends it (the lease duration after the last
//! renewal, at least 15 s on Blob); on Cosmos DB a waiter takes over after seeing the lock
//! item unchanged for a whole lease duration. See `docs/leader.md` for measured figures.
//!
//! ```no_run
//! # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
//! use azstore::lease::LeaseDuration;
//! use azstore::leader::{Election, ElectionOptions};
//! use azstore::lock::{LockOptions};
//! use azstore::blob::{BlobLock};
//!
//! let lock = BlobLock::with_options(
//!     container,
//!     "primary",
//!     LockOptions::default().duration(LeaseDuration::seconds(15)?).label("replica-a"),
//! )?;
//! let election = Election::new(lock, ElectionOptions::default())?;
//! let leadership = election.campaign().await?;
//! let epoch = leadership.epoch();
//! tokio::select! {
//!     loss = leadership.lost() => eprintln!("lost the leadership: {loss}"),
//!     _ = async { /* act as the primary, writing with `epoch` */ } => {}
//! }
//! # let _ = epoch;
//! # Ok(()) }
//! ```

mod backends;
mod balance;
mod election;
mod shard_options;
mod shards;

pub use backends::{Campaign, LockFactory, Seen, Timing};
pub use election::{Election, ElectionOptions, Leader, Leadership};
pub use shard_options::{ShardEvent, ShardOptions};
pub use shards::{ShardGroup, ShardWorker};
