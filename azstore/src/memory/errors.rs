//! Every error the in-memory backend returns, one function per situation, in the toolkit's
//! words: the [`ErrorKind`] the engines match (`AlreadyExists`, `PreconditionFailed`,
//! `NotFound`, `ContainerNotFound`, `LeaseHeld`, `LeaseLost`, …), no service code and no
//! HTTP status (nothing was sent over HTTP).

use super::Op;
use crate::error::{Error, ErrorKind, RequestSent};

/// A create found the item there: someone else created it first.
pub(super) fn already_exists(name: &str) -> Error {
    Error::new(
        ErrorKind::AlreadyExists,
        format!("memory item {name} already exists"),
    )
}

/// A replace or delete carried an ETag that is not the item's.
pub(super) fn precondition_failed(name: &str) -> Error {
    Error::new(
        ErrorKind::PreconditionFailed,
        format!("memory item {name} changed since the ETag given was read"),
    )
}

/// A replace or delete of an item that does not exist.
pub(super) fn not_found(name: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("memory item {name} does not exist"),
    )
}

/// The place that holds items is gone. A [`MemoryStore`](super::MemoryStore) always exists,
/// so nothing returns it yet; it is the backend's one word for it.
#[allow(dead_code)]
pub(super) fn container_not_found(name: &str) -> Error {
    Error::new(
        ErrorKind::ContainerNotFound,
        format!("memory store of {name} is gone"),
    )
}

/// An acquire found the lease held (or breaking) under another id.
pub(super) fn lease_held(name: &str) -> Error {
    Error::new(
        ErrorKind::LeaseHeld,
        format!("memory lease {name} is held by someone else"),
    )
}

/// A renew, change, release or break found no lease: expired, released or broken.
pub(super) fn lease_not_present(name: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::LeaseLost,
        format!("{what} refused: there is no lease on memory item {name}"),
    )
}

/// A renew, change or release with an id that is not the lease's.
pub(super) fn lease_lost(name: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::LeaseLost,
        format!("{what} refused: another lease id holds memory item {name}"),
    )
}

/// A renew of a lease that is being broken.
pub(super) fn lease_breaking(name: &str) -> Error {
    Error::new(
        ErrorKind::LeaseLost,
        format!("renew refused: the lease on memory item {name} is being broken"),
    )
}

/// The stored bytes are not a value of the item's type.
pub(super) fn undecodable(name: &str, e: &serde_json::Error) -> Error {
    Error::new(
        ErrorKind::Service,
        format!("memory item {name} does not hold a value of this type: {e}"),
    )
}

/// A value that cannot be stored (serialization failed) or a name that cannot be used.
pub(super) fn invalid_input(message: String) -> Error {
    Error::invalid_input(message)
}

/// The "lose the next reply" hook: the operation applied, its answer never arrived.
pub(super) fn lost_reply(op: Op) -> Error {
    Error::new(
        ErrorKind::Timeout,
        format!("memory {op:?}: the reply was lost (fault hook); the operation may have applied"),
    )
    .with_sent(RequestSent::Maybe)
}

/// The "fail the next call" hook: nothing was applied.
pub(super) fn failed_call(op: Op) -> Error {
    Error::new(
        ErrorKind::Transport,
        format!("memory {op:?}: the call failed before it reached the store (fault hook)"),
    )
    .with_sent(RequestSent::No)
}

/// The store is switched off ([`MemoryStore::set_reachable`](super::MemoryStore::set_reachable)):
/// every call is refused, as by a server that is down.
pub(super) fn unreachable(op: Op) -> Error {
    Error::new(
        ErrorKind::Transport,
        format!("memory {op:?}: the store is unreachable (connection refused)"),
    )
    .with_sent(RequestSent::No)
}
