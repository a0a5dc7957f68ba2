//! What travels between the writers' clients and the served store: one call per connection,
//! one JSON line each way. Every value the memory adapter hands back, and every error it
//! returns (kind, message, whether the call reached the store), goes over as it came.

use std::time::Duration;

use azstore::lease::{BreakPeriod, LeaseDuration};
use azstore::lock::{LockOwner, LockStatus};
use azstore::{Error, ErrorKind, OffsetDateTime, RequestSent, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One call of a memory adapter's method, by the name of the item, lease or lock it is on.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "call", rename_all = "snake_case")]
pub enum Call {
    /// `MemoryJson::read`.
    Read { item: String },
    /// `MemoryJson::create`.
    Create {
        item: String,
        value: Value,
        write_id: String,
    },
    /// `MemoryJson::replace`.
    Replace {
        item: String,
        value: Value,
        etag: String,
        write_id: String,
    },
    /// `MemoryJson::delete`.
    Delete { item: String, etag: String },
    /// The broken register's write without a condition: read, then replace at whatever
    /// ETag it found (create when absent), until one applies.
    Overwrite { item: String, value: Value },
    /// `MemoryLockTarget::try_lock`.
    TryLock {
        lock: String,
        proposed: String,
        duration: Option<u64>,
        owner: Owner,
    },
    /// `MemoryLockTarget::probe`.
    Probe { lock: String },
    /// `MemoryLockTarget::status`.
    Status { lock: String },
    /// `MemoryLockTarget::status_many`.
    StatusMany { locks: Vec<String> },
    /// `MemoryLockTarget::break_lease`.
    BreakLock { lock: String, period: Option<u8> },
    /// `MemoryLockTarget::abandon`.
    Abandon { lock: String, proposed: String },
    /// `MemoryLease::lease_acquire`.
    Acquire {
        lease: String,
        duration: Option<u64>,
        proposed: String,
    },
    /// `MemoryLease::lease_renew`.
    Renew { lease: String, id: String },
    /// `MemoryLease::lease_change`.
    Change {
        lease: String,
        id: String,
        proposed: String,
    },
    /// `MemoryLease::lease_release`.
    Release { lease: String, id: String },
    /// `MemoryLease::lease_break`.
    Break { lease: String, period: Option<u8> },
}

/// The answer to one call: the method's value, or its error.
#[derive(Debug, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Reply {
    Ok(Value),
    Err(WireError),
}

/// An `azstore::Error` of the store, in parts.
#[derive(Debug, Serialize, Deserialize)]
pub struct WireError {
    kind: String,
    message: String,
    sent: String,
}

/// Every kind the store may return (and then some); anything else comes back as `Service`.
const KINDS: &[ErrorKind] = &[
    ErrorKind::PreconditionFailed,
    ErrorKind::AlreadyExists,
    ErrorKind::Conflict,
    ErrorKind::NotFound,
    ErrorKind::ContainerNotFound,
    ErrorKind::NotModified,
    ErrorKind::LeaseHeld,
    ErrorKind::LeaseLost,
    ErrorKind::Auth,
    ErrorKind::InvalidInput,
    ErrorKind::Transport,
    ErrorKind::Timeout,
    ErrorKind::Service,
    ErrorKind::RetriesExhausted,
    ErrorKind::Aborted,
    ErrorKind::Integrity,
    ErrorKind::ResponseTooLarge,
];

const SENT: &[RequestSent] = &[RequestSent::No, RequestSent::Maybe, RequestSent::Yes];

impl WireError {
    pub fn from_error(e: &Error) -> WireError {
        WireError {
            kind: format!("{:?}", e.kind()),
            message: e.message().to_string(),
            sent: format!("{:?}", e.request_sent()),
        }
    }

    /// The store's error again: same kind, message and `RequestSent`.
    pub fn into_error(self) -> Error {
        let kind = KINDS
            .iter()
            .copied()
            .find(|k| format!("{k:?}") == self.kind)
            .unwrap_or(ErrorKind::Service);
        let sent = SENT
            .iter()
            .copied()
            .find(|s| format!("{s:?}") == self.sent)
            .unwrap_or(RequestSent::Maybe);
        Error::new(kind, self.message).with_sent(sent)
    }
}

/// A `LockOwner`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Owner {
    host: String,
    pid: Option<u32>,
    label: Option<String>,
    acquired_at_ns: Option<i64>,
}

impl From<&LockOwner> for Owner {
    fn from(o: &LockOwner) -> Owner {
        Owner {
            host: o.host.clone(),
            pid: o.pid,
            label: o.label.clone(),
            acquired_at_ns: o
                .acquired_at
                .and_then(|t| i64::try_from(t.unix_timestamp_nanos()).ok()),
        }
    }
}

impl From<Owner> for LockOwner {
    fn from(o: Owner) -> LockOwner {
        let at = o
            .acquired_at_ns
            .and_then(|ns| OffsetDateTime::from_unix_timestamp_nanos(ns.into()).ok());
        LockOwner::new(o.host, o.pid, o.label, at)
    }
}

/// A `LockStatus`.
#[derive(Debug, Serialize, Deserialize)]
pub struct Status {
    exists: bool,
    locked: bool,
    breaking: bool,
    fencing_token: Option<u64>,
    owner: Option<Owner>,
    remaining_ns: Option<u64>,
    version: Option<String>,
}

impl From<&LockStatus> for Status {
    fn from(s: &LockStatus) -> Status {
        Status {
            exists: s.exists,
            locked: s.locked,
            breaking: s.breaking,
            fencing_token: s.fencing_token,
            owner: s.owner.as_ref().map(Owner::from),
            remaining_ns: s.remaining.map(|d| d.as_nanos() as u64),
            version: s.version.clone(),
        }
    }
}

impl From<Status> for LockStatus {
    fn from(s: Status) -> LockStatus {
        let mut status = LockStatus::new(
            s.exists,
            s.locked,
            s.breaking,
            s.fencing_token,
            s.owner.map(LockOwner::from),
            s.remaining_ns.map(Duration::from_nanos),
        );
        status.version = s.version;
        status
    }
}

/// A lease duration in seconds (`None`: infinite).
pub fn duration_secs(d: LeaseDuration) -> Option<u64> {
    d.as_duration().map(|d| d.as_secs())
}

/// [`duration_secs`]' value back.
pub fn duration(secs: Option<u64>) -> Result<LeaseDuration> {
    secs.map_or(Ok(LeaseDuration::Infinite), LeaseDuration::seconds)
}

/// A break period back.
pub fn period(secs: Option<u8>) -> Result<Option<BreakPeriod>> {
    secs.map(|s| BreakPeriod::seconds(s.into())).transpose()
}

/// A value of the reply, or `Service` when it is not one (a malformed reply).
pub fn decode<T: serde::de::DeserializeOwned>(v: Value) -> Result<T> {
    serde_json::from_value(v)
        .map_err(|e| Error::new(ErrorKind::Service, format!("malformed memory reply: {e}")))
}

/// A value into the reply.
pub fn encode<T: Serialize>(v: &T) -> Value {
    serde_json::to_value(v).expect("serializable reply")
}
