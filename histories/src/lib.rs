//! Checked histories for azstore (test-only; nothing of it is in the library).
//!
//! Randomized fault campaigns record the *history* of every client operation — invoke, then
//! ok / fail / info (outcome unknown) — from writer processes that the nemesis pauses, kills,
//! cuts off and lies to, and an independent checker decides every history:
//!
//! * `update()` on a blob, a table entity and a Redis key against a counter register
//!   specification, with [`stateright`]'s linearizability tester;
//! * `BlobLock`, `RedisLock` and `CosmosLock`: unique, growing fencing tokens, a fenced resource whose
//!   accepted writes never go back in token order nor interleave two holders, and no holder
//!   that still believes it holds the lock after another acquired it;
//! * the queue worker `queue::process`: every message's effect applied exactly once.
//! * `ShardGroup` over `BlobLocks`, `RedisLocks` (and `CosmosLocks`), workers joining and
//!   leaving all along: no two workers able to write one shard at once, per-shard fenced
//!   resources that never accept a stale epoch nor a write from a worker not holding its
//!   epoch; ownership transfers counted.

//! * `Semaphore` (2 permits) and `RwLock` over the same lock factories: one holder per slot
//!   (so at most N at once) and tokens growing across all permits; a writer excluding
//!   everyone, readers and writers using one fenced resource with their tokens.
//!
//! Every backend is one [`backend::Backend`] impl in `backend/`, listed once in
//! [`backend::BACKENDS`]; the models, the campaign and the command line find it there.
//!
//! Run the short campaign with `scripts/azurite run -- cargo test -p histories`, the long one
//! with `scripts/campaign --histories 200`.

pub mod backend;
pub mod campaign;
pub mod check;
pub mod history;
pub mod hold;
pub mod model;
pub mod rng;
pub mod sanity;
pub mod writer;
