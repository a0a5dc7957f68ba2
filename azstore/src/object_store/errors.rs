//! azstore's [`Error`] as `object_store::Error`, and back (for [`Object`](super::Object)).
//!
//! | azstore | object_store |
//! |---|---|
//! | `NotFound`, `ContainerNotFound` (404) | `NotFound` (a 404 of an `If-Match` write: `Precondition`) |
//! | `AlreadyExists` (409 `BlobAlreadyExists`); a 412 of a create (`If-None-Match: *`) | `AlreadyExists` |
//! | `PreconditionFailed` (412), a lease refusal answered 412; a 404 of an `If-Match` write | `Precondition` |
//! | `NotModified` (304) | `NotModified` |
//! | `Auth` 401 / 403 | `Unauthenticated` / `PermissionDenied` |
//! | everything else (bad input, transport, timeouts, 5xx, other 4xx) | `Generic` |
//!
//! The azstore error is always the `source`, so `status()`, `error_code()` and
//! `request_sent()` stay reachable by downcasting.

use ::object_store::Error as OsError;

use crate::error::{Error, ErrorKind};

/// The store name object_store errors carry.
pub(crate) const STORE: &str = "BlobStore";

/// What the failed operation was, for the variants that depend on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    /// A read, an unconditional write, a delete.
    Plain,
    /// A create-only write: a refused condition means "already exists".
    Create,
    /// A write conditioned on an ETag: an absent blob is a refused condition too.
    Update,
}

/// `e`, from an operation on `path`, as an object_store error.
pub(crate) fn to_object_store(e: Error, path: &str, op: Op) -> OsError {
    let path = path.to_string();
    let already_exists = e.is_already_exists() || (op == Op::Create && e.status() == Some(412));
    if already_exists {
        return OsError::AlreadyExists {
            path,
            source: Box::new(e),
        };
    }
    match (e.kind(), e.status()) {
        (ErrorKind::NotFound, _) if op == Op::Update => OsError::Precondition {
            path,
            source: Box::new(e),
        },
        (ErrorKind::NotFound | ErrorKind::ContainerNotFound, _) => OsError::NotFound {
            path,
            source: Box::new(e),
        },
        (ErrorKind::PreconditionFailed, _)
        | (ErrorKind::LeaseHeld | ErrorKind::LeaseLost, Some(412)) => OsError::Precondition {
            path,
            source: Box::new(e),
        },
        (ErrorKind::NotModified, _) => OsError::NotModified {
            path,
            source: Box::new(e),
        },
        (ErrorKind::Auth, Some(401)) => OsError::Unauthenticated {
            path,
            source: Box::new(e),
        },
        (ErrorKind::Auth, _) => OsError::PermissionDenied {
            path,
            source: Box::new(e),
        },
        _ => OsError::Generic {
            store: STORE,
            source: Box::new(e),
        },
    }
}

/// An object_store error as azstore's: the azstore error itself when it carries one (a
/// [`BlobStore`](super::BlobStore) error, with its status, code and `request_sent`), else one
/// of the kind the update engine matches. An error that says nothing about whether a write
/// reached the store (`Generic`, `JoinError`, ...) is [`RequestSent::Maybe`](crate::RequestSent):
/// the write may have applied.
pub(crate) fn from_object_store(e: OsError, write: bool) -> Error {
    let sourced =
        |source: Box<dyn std::error::Error + Send + Sync>| source.downcast::<Error>().map(|b| *b);
    match e {
        OsError::NotFound { path, source } => sourced(source).unwrap_or_else(|s| {
            Error::from_response(404, None, format!("{path}: not found"), None)
                .with_source(Boxed(s))
        }),
        OsError::AlreadyExists { path, source } => match sourced(source) {
            Ok(e) => e,
            Err(s) => Error::from_response(409, None, format!("{path}: already exists"), None)
                .with_kind(ErrorKind::AlreadyExists)
                .with_source(Boxed(s)),
        },
        OsError::Precondition { path, source } => sourced(source).unwrap_or_else(|s| {
            Error::from_response(412, None, format!("{path}: precondition failed"), None)
                .with_source(Boxed(s))
        }),
        OsError::NotModified { path, source } => sourced(source).unwrap_or_else(|s| {
            Error::from_response(304, None, format!("{path}: not modified"), None)
                .with_source(Boxed(s))
        }),
        OsError::PermissionDenied { path, source } => sourced(source).unwrap_or_else(|s| {
            Error::from_response(403, None, format!("{path}: permission denied"), None)
                .with_source(Boxed(s))
        }),
        OsError::Unauthenticated { path, source } => sourced(source).unwrap_or_else(|s| {
            Error::from_response(401, None, format!("{path}: not authenticated"), None)
                .with_source(Boxed(s))
        }),
        OsError::Generic { store, source } => sourced(source).unwrap_or_else(|s| {
            let e = Error::new(ErrorKind::Service, format!("{store}: {s}"));
            if write {
                e.with_sent(crate::RequestSent::Maybe)
            } else {
                e
            }
        }),
        OsError::NotImplemented {
            operation,
            implementer,
        } => Error::invalid_input(format!("{implementer} does not implement {operation}")),
        OsError::NotSupported { source } => {
            Error::invalid_input(format!("not supported: {source}"))
        }
        OsError::InvalidPath { source } => Error::invalid_input(format!("invalid path: {source}")),
        other => {
            let e = Error::new(ErrorKind::Service, other.to_string());
            if write {
                e.with_sent(crate::RequestSent::Maybe)
            } else {
                e
            }
        }
    }
}

/// A boxed error as a concrete error type (for `Error::with_source`).
#[derive(Debug)]
struct Boxed(Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for Boxed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for Boxed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    fn status(status: u16, code: Option<ErrorCode>) -> Error {
        Error::from_response(status, code, "m".into(), None)
    }

    #[test]
    fn variants() {
        let cases: Vec<(Error, Op, &str)> = vec![
            (
                status(404, Some(ErrorCode::BlobNotFound)),
                Op::Plain,
                "NotFound",
            ),
            (
                status(409, Some(ErrorCode::BlobAlreadyExists)),
                Op::Create,
                "AlreadyExists",
            ),
            (
                status(412, Some(ErrorCode::ConditionNotMet)),
                Op::Create,
                "AlreadyExists",
            ),
            (
                status(412, Some(ErrorCode::ConditionNotMet)),
                Op::Plain,
                "Precondition",
            ),
            (
                status(412, Some(ErrorCode::LeaseIdMissing)),
                Op::Plain,
                "Precondition",
            ),
            (status(304, None), Op::Plain, "NotModified"),
            (
                status(404, Some(ErrorCode::BlobNotFound)),
                Op::Update,
                "Precondition",
            ),
            (
                status(404, Some(ErrorCode::ContainerNotFound)),
                Op::Update,
                "NotFound",
            ),
            (
                status(403, Some(ErrorCode::AuthenticationFailed)),
                Op::Plain,
                "PermissionDenied",
            ),
            (status(401, None), Op::Plain, "Unauthenticated"),
            (
                status(500, Some(ErrorCode::InternalError)),
                Op::Plain,
                "Generic",
            ),
            (Error::invalid_input("bad"), Op::Plain, "Generic"),
        ];
        for (e, op, want) in cases {
            let shown = format!("{e}");
            let got = to_object_store(e, "p", op);
            let name = format!("{got:?}");
            assert!(name.starts_with(want), "{shown} -> {name}");
            // The azstore error is the source, and comes back unchanged.
            let back = from_object_store(got, true);
            assert_eq!(format!("{back}"), shown);
        }
    }

    #[test]
    fn foreign_errors_take_the_kinds_the_update_engine_matches() {
        let e = from_object_store(
            OsError::AlreadyExists {
                path: "p".into(),
                source: "x".into(),
            },
            true,
        );
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        assert_eq!(e.error_code(), None, "no Storage code the store never sent");
        let e = from_object_store(
            OsError::Precondition {
                path: "p".into(),
                source: "x".into(),
            },
            true,
        );
        assert!(e.is_precondition_failed());
        let e = from_object_store(
            OsError::Generic {
                store: "S3",
                source: "connection reset".into(),
            },
            true,
        );
        assert_eq!(e.request_sent(), crate::RequestSent::Maybe);
        let e = from_object_store(
            OsError::NotFound {
                path: "p".into(),
                source: "x".into(),
            },
            false,
        );
        assert!(e.is_not_found());
    }
}
