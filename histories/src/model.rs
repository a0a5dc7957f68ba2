//! The models a campaign can run, and the client variants.

/// The backend a register or lock model runs on. Adding a backend to the campaigns is one
/// variant here plus one line in the writer's `register_on` / `lock_on` and in
/// [`Model::ALL`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    /// A blob on Azurite (`BlobJson`, `BlobLock`).
    Blob,
    /// A table entity on Azurite (`TableClient::versioned`).
    Table,
    /// A Redis key (`RedisJson`, `RedisLock`).
    Redis,
    /// A Cosmos DB item on the local Cosmos DB server (`CosmosItem`, `CosmosLock`).
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
}

impl Model {
    /// Every model, in campaign order.
    pub const ALL: [Model; 8] = [
        Model::Register(Backend::Blob),
        Model::Register(Backend::Table),
        Model::Register(Backend::Redis),
        Model::Register(Backend::Cosmos),
        Model::Lock(Backend::Blob),
        Model::Lock(Backend::Redis),
        Model::Lock(Backend::Cosmos),
        Model::Queue,
    ];

    /// Its name on the command line and in reports (`blob-register`, `cosmos-lock`, ...).
    pub fn name(self) -> String {
        match self {
            Model::Register(b) => format!("{}-register", b.name()),
            Model::Lock(b) => format!("{}-lock", b.name()),
            Model::Queue => "queue-worker".to_string(),
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

    /// The backend of a register or lock model.
    pub fn backend(self) -> Option<Backend> {
        match self {
            Model::Register(b) | Model::Lock(b) => Some(b),
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
    /// If-Match, a lock holder that ignores loss, a queue handler that is not idempotent.
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
