//! The models a campaign can run, and the client variants.

use crate::backend::{BACKENDS, Backend, Family};

/// What is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// CAS register: `update()` on the backend's versioned item (checked for
    /// linearizability).
    Register(&'static dyn Backend),
    /// Mutual exclusion and monotonic fencing of the backend's lock.
    Lock(&'static dyn Backend),
    /// Exactly-once effects of the queue worker (`queue::process`).
    Queue,
    /// Shard ownership of a `ShardGroup` over the backend's locks: no two workers able to
    /// write one shard at once, and per-shard fenced resources that never accept a stale epoch.
    Shards(&'static dyn Backend),
    /// At most N holders of the backend's `Semaphore`, each slot's fenced resource never
    /// accepting a stale permit, fencing tokens growing across all permits.
    Semaphore(&'static dyn Backend),
    /// Mutual exclusion of a writer against everyone on the backend's `RwLock`, a fenced
    /// resource that readers and writers use with their tokens.
    RwLock(&'static dyn Backend),
}

impl Model {
    /// Every model, in campaign order: the registers, the locks, the queue worker, the shard
    /// groups, each family over the backends of [`BACKENDS`] that join it.
    pub fn all() -> Vec<Model> {
        let over = |family: Family| {
            BACKENDS
                .iter()
                .filter(move |b| b.families().contains(&family))
                .map(move |b| Model::of(family, *b))
        };
        over(Family::Register)
            .chain(over(Family::Lock))
            .chain([Model::Queue])
            .chain(over(Family::Shards))
            .chain(over(Family::Semaphore))
            .chain(over(Family::RwLock))
            .collect()
    }

    /// The model of `family` on `backend`.
    pub fn of(family: Family, backend: &'static dyn Backend) -> Model {
        match family {
            Family::Register => Model::Register(backend),
            Family::Lock => Model::Lock(backend),
            Family::Shards => Model::Shards(backend),
            Family::Semaphore => Model::Semaphore(backend),
            Family::RwLock => Model::RwLock(backend),
        }
    }

    /// Its name on the command line and in reports (`blob-register`, `cosmos-lock`,
    /// `redis-shards`, ...).
    pub fn name(self) -> String {
        match (self.family(), self.backend()) {
            (Some(f), Some(b)) => format!("{}-{}", b.name(), f.suffix()),
            _ => "queue-worker".to_string(),
        }
    }

    /// The model named `s`.
    pub fn parse(s: &str) -> Result<Model, String> {
        Model::all()
            .into_iter()
            .find(|m| m.name() == s)
            .ok_or_else(|| format!("unknown model {s:?}"))
    }

    /// Whether it is a register model (checked by the linearizability tester).
    pub fn is_register(self) -> bool {
        matches!(self, Model::Register(_))
    }

    /// Whether it is a lock model.
    pub fn is_lock(self) -> bool {
        matches!(self, Model::Lock(_))
    }

    /// Whether its writers hold locks, permits or read/write holds, check their hold before
    /// each fenced write and release (lock, semaphore and reader-writer lock models).
    pub fn is_lock_like(self) -> bool {
        matches!(
            self,
            Model::Lock(_) | Model::Semaphore(_) | Model::RwLock(_)
        )
    }

    /// Whether it is a shard-ownership model.
    pub fn is_shards(self) -> bool {
        matches!(self, Model::Shards(_))
    }

    /// The family of a register, lock or shard model.
    pub fn family(self) -> Option<Family> {
        match self {
            Model::Register(_) => Some(Family::Register),
            Model::Lock(_) => Some(Family::Lock),
            Model::Shards(_) => Some(Family::Shards),
            Model::Semaphore(_) => Some(Family::Semaphore),
            Model::RwLock(_) => Some(Family::RwLock),
            Model::Queue => None,
        }
    }

    /// The backend of a register, lock or shard model.
    pub fn backend(self) -> Option<&'static dyn Backend> {
        match self {
            Model::Register(b)
            | Model::Lock(b)
            | Model::Shards(b)
            | Model::Semaphore(b)
            | Model::RwLock(b) => Some(b),
            Model::Queue => None,
        }
    }
}
/// The client the writers run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// The library as it is.
    Correct,
    /// A deliberately broken client the checker must catch: a register write without
    /// If-Match, a lock holder that ignores loss, a queue handler that is not idempotent, a
    /// shard worker that keeps writing a shard after its `Lost`.
    Broken,
}

impl Variant {
    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Variant::Correct => "correct",
            Variant::Broken => "broken",
        }
    }

    /// The variant named `s`.
    pub fn parse(s: &str) -> Result<Variant, String> {
        match s {
            "correct" => Ok(Variant::Correct),
            "broken" => Ok(Variant::Broken),
            _ => Err(format!("unknown variant {s:?}")),
        }
    }
}
