//! The models a campaign can run, and the client variants.

/// The backend a register, lock or shard model runs on. Adding a backend to the campaigns is
/// one variant here plus one line in the writer's `register_on` / `lock_on` / `shards_on` and
/// in [`Model::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A blob on Azurite (`BlobJson`, `BlobLock`, `BlobLocks`).
    Blob,
    /// A table entity on Azurite (`TableClient::versioned`).
    Table,
    /// A Redis key (`RedisJson`, `RedisLock`, `RedisLocks`).
    Redis,
    /// A Cosmos DB item on the local Cosmos DB server (`CosmosItem`, `CosmosLock`,
    /// `CosmosLocks`).
    Cosmos,
}

impl Backend {
    /// Its name in model names.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Blob => "blob",
            Backend::Table => "table",
            Backend::Redis => "redis",
            Backend::Cosmos => "cosmos",
        }
    }
}

/// What is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// CAS register: `update()` on the backend's versioned item (checked for
    /// linearizability).
    Register(Backend),
    /// Mutual exclusion and monotonic fencing of the backend's lock.
    Lock(Backend),
    /// Exactly-once effects of the queue worker (`queue::process`).
    Queue,
    /// Shard ownership of a `ShardGroup` over the backend's locks: no two workers able to
    /// write one shard at once, and per-shard fenced resources that never accept a stale epoch.
    Shards(Backend),
}

impl Model {
    /// Every model, in campaign order.
    pub const ALL: [Model; 11] = [
        Model::Register(Backend::Blob),
        Model::Register(Backend::Table),
        Model::Register(Backend::Redis),
        Model::Register(Backend::Cosmos),
        Model::Lock(Backend::Blob),
        Model::Lock(Backend::Redis),
        Model::Lock(Backend::Cosmos),
        Model::Queue,
        Model::Shards(Backend::Blob),
        Model::Shards(Backend::Redis),
        Model::Shards(Backend::Cosmos),
    ];

    /// Its name on the command line and in reports (`blob-register`, `cosmos-lock`,
    /// `redis-shards`, ...).
    pub fn name(self) -> String {
        match self {
            Model::Register(b) => format!("{}-register", b.name()),
            Model::Lock(b) => format!("{}-lock", b.name()),
            Model::Queue => "queue-worker".to_string(),
            Model::Shards(b) => format!("{}-shards", b.name()),
        }
    }

    /// The model named `s`.
    pub fn parse(s: &str) -> Result<Model, String> {
        Model::ALL
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

    /// Whether it is a shard-ownership model.
    pub fn is_shards(self) -> bool {
        matches!(self, Model::Shards(_))
    }

    /// The backend of a register, lock or shard model.
    pub fn backend(self) -> Option<Backend> {
        match self {
            Model::Register(b) | Model::Lock(b) | Model::Shards(b) => Some(b),
            Model::Queue => None,
        }
    }

    /// Whether its clients talk to Redis.
    pub fn uses_redis(self) -> bool {
        self.backend() == Some(Backend::Redis)
    }

    /// Whether its clients talk to Cosmos DB.
    pub fn uses_cosmos(self) -> bool {
        self.backend() == Some(Backend::Cosmos)
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
