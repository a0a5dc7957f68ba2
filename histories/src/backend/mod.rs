//! The backends the campaigns run on, each ONE impl of [`Backend`] in a file of its own, all
//! listed once in [`BACKENDS`] (the only place a backend is named: the models, the CLI, the
//! campaign and the tests find it there by [`Backend::name`]).
//!
//! A backend says which model families it joins ([`Family`]), prepares its part of a history
//! in the campaign process ([`Backend::prepare`]: resources, and optionally [`Faults`] the
//! nemesis may inject into its traffic), and, given the address its [`Prepared`] part handed
//! the writers, hands the model its register, lock or lock factory
//! ([`Backend::register`], [`Backend::lock`], [`Backend::locks`]: the shard, semaphore and
//! reader-writer lock models all run over the lock factory). Nothing here assumes a
//! network server: the address is the backend's own string, and a backend without a fault
//! proxy returns no [`Faults`] (the nemesis then pauses, kills and jumps the clocks of its
//! writers, and faults the fenced resources, only).
//!
//! Adding a backend: a file `backend/NAME.rs` with one `impl Backend`, and its line in the
//! `backends!` list below.
//!
//! The writers are processes of their own (SIGSTOP and SIGKILL must hit a whole client), so a
//! backend's data has to be reachable from another process by its address. A store that lives
//! in one process joins by serving it from the campaign process, as [`memory`] serves
//! `azstore::memory` (started by its `prepare`, its fault hooks offered as its [`Faults`]).

use std::future::Future;

use azstore::lock::LockOptions;
use azstore::update::Versioned;
use azstore::{ETag, Result};
use futures_util::future::{BoxFuture, LocalBoxFuture};

use crate::rng::Rng;
use crate::writer::{FactoryRun, LockRun, Reg, RegisterRun};

mod http;
pub use http::{HttpFaults, random_fault};

/// Declares the backend modules and the registry in one list: one line per backend.
macro_rules! backends {
    ($($(#[$doc:meta])* $module:ident :: $backend:ident),* $(,)?) => {
        $($(#[$doc])* pub mod $module;)*
        /// Every backend, in campaign order (the registry: models and the CLI find backends
        /// here by name).
        pub static BACKENDS: &[&dyn Backend] = &[$(&$module::$backend),*];
    };
}

backends! {
    /// A blob on Azurite.
    blob::Blob,
    /// A table entity on Azurite.
    table::Table,
    /// A Redis key on redis-server.
    redis::Redis,
    /// A Cosmos DB item on the local Cosmos DB server.
    cosmos::Cosmos,
    /// An `azstore::memory` store served from the campaign process.
    memory::Memory,
}

/// The backend named `name` in [`BACKENDS`].
pub fn by_name(name: &str) -> Option<&'static dyn Backend> {
    BACKENDS.iter().copied().find(|b| b.name() == name)
}

/// The model families a backend can join.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    /// `update()` on the backend's versioned item, checked for linearizability.
    Register,
    /// Mutual exclusion and monotonic fencing of the backend's `Lock<T>`.
    Lock,
    /// A `ShardGroup` over the backend's `LockFactory`.
    Shards,
    /// A `Semaphore` over the backend's `LockFactory`: at most N holders, fencing tokens that
    /// grow across all permits.
    Semaphore,
    /// An `RwLock` over the backend's `LockFactory`: a writer excludes everyone.
    RwLock,
}

impl Family {
    /// Every family: what a backend joins unless it says otherwise.
    pub const ALL: &'static [Family] = &[
        Family::Register,
        Family::Lock,
        Family::Shards,
        Family::Semaphore,
        Family::RwLock,
    ];

    /// Its suffix in model names (`blob-register`, `redis-lock`, `cosmos-shards`).
    pub fn suffix(self) -> &'static str {
        match self {
            Family::Register => "register",
            Family::Lock => "lock",
            Family::Shards => "shards",
            Family::Semaphore => "semaphore",
            Family::RwLock => "rwlock",
        }
    }
}

/// Where a model finds a backend's data of one history.
#[derive(Clone, Copy, Debug)]
pub struct Site<'a> {
    /// The history's unique resource name (a container, table, database or key prefix of
    /// its own).
    pub resource: &'a str,
    /// What the backend's [`Prepared::address`] (writers) or [`Prepared::direct`] (the final
    /// read) said.
    pub address: &'a str,
}

/// One backend of the campaigns. Object-safe: the registry holds `&dyn Backend`, and the
/// models hand the backend a runner ([`RegisterRun`], [`LockRun`], [`FactoryRun`]) that takes
/// its concrete register, lock or factory (`run.with(thing)`), so the models stay generic
/// over `Versioned`, `LockTarget` and `LockFactory` without a match on the backend.
pub trait Backend: Send + Sync + 'static {
    /// Its name in model names and on the command line (`blob`, `redis`, ...).
    fn name(&self) -> &'static str;

    /// The model families it joins (default: every one).
    fn families(&self) -> &'static [Family] {
        Family::ALL
    }

    /// Campaign process, before the writers start: creates what a history of `family` needs
    /// on the backend (named after `resource`) and starts its fault injection, if it has any.
    /// The Blob container `resource` on Azurite exists already (the fenced resources live
    /// there).
    fn prepare<'a>(&'a self, resource: &'a str, family: Family)
    -> BoxFuture<'a, Box<dyn Prepared>>;

    /// The register at `site`: `run.with(register)`.
    fn register<'a>(&'a self, site: Site<'a>, run: RegisterRun<'a>) -> LocalBoxFuture<'a, ()>;

    /// The lock at `site`, made with `options`: `run.with(lock)`. Only called when
    /// [`families`](Self::families) lists [`Family::Lock`].
    fn lock<'a>(
        &'a self,
        site: Site<'a>,
        options: LockOptions,
        run: LockRun<'a>,
    ) -> LocalBoxFuture<'a, ()> {
        let _ = (site, options, run);
        unreachable!("{} joins no lock model", self.name())
    }

    /// The lock factory at `site`, made with `options`: `run.with(factory)`. Only called when
    /// [`families`](Self::families) lists [`Family::Shards`], [`Family::Semaphore`] or
    /// [`Family::RwLock`] (each a model over a `LockFactory`).
    fn locks<'a>(
        &'a self,
        site: Site<'a>,
        options: LockOptions,
        run: FactoryRun<'a>,
    ) -> LocalBoxFuture<'a, ()> {
        let _ = (site, options, run);
        unreachable!("{} joins no model over a lock factory", self.name())
    }

    /// The shard group's balancing interval (ms) at the default group size: short, so that a
    /// history holds many ownership transfers.
    fn shard_interval_ms(&self) -> u64 {
        DEFAULT_SHARD_INTERVAL_MS
    }
}

/// [`Backend::shard_interval_ms`] unless a backend says otherwise.
pub const DEFAULT_SHARD_INTERVAL_MS: u64 = 250;

impl PartialEq for dyn Backend {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name()
    }
}

impl Eq for dyn Backend {}

impl std::fmt::Debug for dyn Backend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A backend's part of one history, in the campaign process.
pub trait Prepared: Send + Sync {
    /// How the writers reach the backend's data: through its fault injection when it has one.
    fn address(&self) -> String;

    /// How the campaign reads the final state: without faults.
    fn direct(&self) -> String;

    /// The faults the nemesis may inject into the backend's traffic (none: it has no fault
    /// injection).
    fn faults(&self) -> Vec<&dyn Faults> {
        Vec::new()
    }

    /// Deletes what [`Backend::prepare`] created.
    fn cleanup(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// Faults the nemesis can inject into some traffic.
pub trait Faults: Send + Sync {
    /// Injects one fault chosen with `rng` (on the next matching request or requests, or for
    /// a while), and describes it for the history.
    fn inject<'a>(&'a self, rng: &'a mut Rng) -> BoxFuture<'a, String>;

    /// Ends every fault still in force.
    fn clear(&self);
}

/// A backend's versioned item as the register model sees it: values made of and read into
/// [`Reg`], and an unconditional overwrite for the broken variant.
pub trait Register: Versioned<Value: Clone> {
    /// The stored value of `reg`.
    fn make(&self, reg: Reg) -> Self::Value;
    /// The register in the stored value `v`.
    fn get(&self, v: &Self::Value) -> Reg;
    /// Writes `value` with no condition (the broken variant's replace).
    fn overwrite_value(&self, value: &Self::Value) -> impl Future<Output = Result<ETag>> + Send;
}
