//! The models a campaign can run, and the client variants.

/// What is checked.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Model {
    /// CAS register: `update()` on a blob (`BlobJson`).
    Blob,
    /// CAS register: `update()` on a table entity (`TableClient::versioned`).
    Table,
    /// CAS register: `update()` on a Redis key (`RedisJson`).
    Redis,
    /// Mutual exclusion and monotonic fencing of `BlobLock`.
    BlobLock,
    /// Mutual exclusion and monotonic fencing of `RedisLock`.
    RedisLock,
    /// Exactly-once effects of the queue worker (`queue::process`).
    Queue,
}

impl Model {
    /// Every model, in campaign order.
    pub const ALL: [Model; 6] = [
        Model::Blob,
        Model::Table,
        Model::Redis,
        Model::BlobLock,
        Model::RedisLock,
        Model::Queue,
    ];

    /// Its name on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Model::Blob => "blob-register",
            Model::Table => "table-register",
            Model::Redis => "redis-register",
            Model::BlobLock => "blob-lock",
            Model::RedisLock => "redis-lock",
            Model::Queue => "queue-worker",
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
        matches!(self, Model::Blob | Model::Table | Model::Redis)
    }

    /// Whether it is a lock model.
    pub fn is_lock(self) -> bool {
        matches!(self, Model::BlobLock | Model::RedisLock)
    }

    /// Whether its clients talk to Redis.
    pub fn uses_redis(self) -> bool {
        matches!(self, Model::Redis | Model::RedisLock)
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
