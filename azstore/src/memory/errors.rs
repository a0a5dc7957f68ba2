//! Every error the in-memory backend returns, one function per situation, so that the words
//! they carry are chosen in one place. They carry what the engines match today: the
//! [`ErrorKind`] and, where the engines look at it, the same [`ErrorCode`] the Redis backend
//! uses for the same situation (`ResourceAlreadyExists`, `ConditionNotMet`,
//! `ResourceNotFound`, the lease codes of Azure Storage). No HTTP status: nothing was sent
//! over HTTP.

use super::Op;
use crate::error::{Error, ErrorCode, ErrorKind, RequestSent};

/// A create found the item there: someone else created it first.
pub(super) fn already_exists(name: &str) -> Error {
    Error::new(
        ErrorKind::Conflict,
        format!("memory item {name} already exists"),
    )
    .with_code(ErrorCode::ResourceAlreadyExists)
}

/// A replace or delete carried an ETag that is not the item's.
pub(super) fn precondition_failed(name: &str) -> Error {
    Error::new(
        ErrorKind::PreconditionFailed,
        format!("memory item {name} changed since the ETag given was read"),
    )
    .with_code(ErrorCode::ConditionNotMet)
}

/// A replace or delete of an item that does not exist.
pub(super) fn not_found(name: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("memory item {name} does not exist"),
    )
    .with_code(ErrorCode::ResourceNotFound)
}

/// The place that holds items is gone. A [`MemoryStore`](super::MemoryStore) always exists,
/// so nothing returns it yet; it is here so that the backend has one word for it when the
/// engines learn to tell it from [`not_found`].
#[allow(dead_code)]
pub(super) fn container_not_found(name: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("memory store of {name} is gone"),
    )
    .with_code(ErrorCode::ContainerNotFound)
}

/// An acquire found the lease held (or breaking) under another id.
pub(super) fn lease_held(name: &str) -> Error {
    Error::new(
        ErrorKind::Lease,
        format!("memory lease {name} is held by someone else"),
    )
    .with_code(ErrorCode::LeaseAlreadyPresent)
}

/// A renew, change, release or break found no lease: expired, released or broken.
pub(super) fn lease_not_present(name: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::Lease,
        format!("{what} refused: there is no lease on memory item {name}"),
    )
    .with_code(ErrorCode::LeaseNotPresentWithLeaseOperation)
}

/// A renew, change or release with an id that is not the lease's.
pub(super) fn lease_lost(name: &str, what: &str) -> Error {
    Error::new(
        ErrorKind::Lease,
        format!("{what} refused: another lease id holds memory item {name}"),
    )
    .with_code(ErrorCode::LeaseIdMismatchWithLeaseOperation)
}

/// A renew of a lease that is being broken.
pub(super) fn lease_breaking(name: &str) -> Error {
    Error::new(
        ErrorKind::Lease,
        format!("renew refused: the lease on memory item {name} is being broken"),
    )
    .with_code(ErrorCode::LeaseIsBrokenAndCannotBeRenewed)
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
