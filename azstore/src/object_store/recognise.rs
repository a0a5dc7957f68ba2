//! Settling a conditional write whose outcome is unknown, by the write id it stored.
//!
//! azstore's pipeline never repeats a conditional write on its own (it could meet its own
//! first try and report a false conflict): a write whose reply was lost comes back as an
//! error with [`RequestSent::Maybe`](crate::RequestSent). [`conditional`] then reads the
//! blob's properties and decides from what is stored, never by sending the write blind.

use std::future::Future;

use super::PUT_ID_METADATA;
use crate::blob::{BlobClient, WriteResult};
use crate::conditions::ETag;
use crate::error::{Error, ErrorCode, RequestSent, Result};

/// How many times one conditional write is sent at most (each send after the first follows
/// a read that showed the previous one did not apply).
const MAX_SENDS: usize = 4;

/// What a conditional write requires.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    /// The blob must not exist (`If-None-Match: *`).
    Create,
    /// The blob must be at this version (`If-Match`).
    Update(ETag),
}

/// A write that applied: its ETag and, when the service reported one, its version id.
#[derive(Debug, Clone)]
pub(crate) struct Written {
    pub(crate) etag: ETag,
    pub(crate) version: Option<String>,
}

impl From<WriteResult> for Written {
    fn from(w: WriteResult) -> Written {
        Written {
            etag: w.etag,
            version: w.version_id,
        }
    }
}

/// A fresh write id (16 hex digits of the thread-local generator).
pub(crate) fn new_put_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// Whether a write's error leaves its outcome unknown: no answer at all, or a server error
/// that may have been applied (Azure documents 500 `OperationTimedOut` as "may or may not have
/// succeeded"; a 502/504 comes from a gateway that may have passed the request on).
pub(crate) fn outcome_unknown(e: &Error) -> bool {
    e.request_sent() == RequestSent::Maybe || matches!(e.status(), Some(500 | 502 | 504))
}

/// Whether `e` is the refusal of a write requiring `expect`.
fn refused(e: &Error, expect: &Expect) -> bool {
    match expect {
        Expect::Create => e.is_already_exists() || e.status() == Some(412),
        Expect::Update(_) => e.is_precondition_failed() || e.status() == Some(404),
    }
}

/// The refusal to report when a read after an unknown outcome shows another writer's version.
fn rival(unknown: Error, expect: &Expect) -> Error {
    if refused(&unknown, expect) {
        return unknown;
    }
    let (status, code, what) = match expect {
        Expect::Create => (
            409,
            ErrorCode::BlobAlreadyExists,
            "the blob was created by another writer (the reply to this create was lost, and \
             the blob does not carry its write id)",
        ),
        Expect::Update(_) => (
            412,
            ErrorCode::ConditionNotMet,
            "the blob was changed by another writer (the reply to this write was lost, and the \
             blob carries neither its write id nor the version it was conditioned on)",
        ),
    };
    Error::from_response(status, Some(code), what.to_string(), None).with_source(unknown)
}

/// Sends the conditional write `send` (which stores `put_id` under [`PUT_ID_METADATA`]) and
/// settles an unknown outcome by reading `blob`:
///
/// * our write id is stored: the write applied; `Ok` with the blob's ETag;
/// * the blob is absent (create) or still at the ETag the update required: it did not
///   apply; it is sent again with the same id (a late first try then meets the second as a
///   refusal, which is settled the same way);
/// * another version: another writer won; the refusal is returned.
///
/// When the read itself fails, the error of unknown outcome is returned unchanged
/// ([`RequestSent::Maybe`]).
pub(crate) async fn conditional<F, Fut>(
    blob: &BlobClient,
    put_id: &str,
    expect: &Expect,
    mut send: F,
) -> Result<Written>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<WriteResult>>,
{
    let mut unsettled: Option<Error> = None;
    for _ in 0..MAX_SENDS {
        let e = match send().await {
            Ok(w) => return Ok(w.into()),
            Err(e) if outcome_unknown(&e) || (unsettled.is_some() && refused(&e, expect)) => e,
            Err(e) => return Err(e),
        };
        match blob.get_properties().await {
            Ok(p) if p.metadata.get(PUT_ID_METADATA).map(String::as_str) == Some(put_id) => {
                tracing::debug!(
                    blob = %blob.name(),
                    "a conditional write of unknown outcome applied: recognised by its write id"
                );
                return Ok(Written {
                    etag: p.etag,
                    version: p.version_id,
                });
            }
            Ok(p) => match expect {
                Expect::Update(etag) if &p.etag == etag => unsettled = Some(e),
                _ => return Err(rival(e, expect)),
            },
            Err(r) if r.kind() == crate::ErrorKind::NotFound => match expect {
                Expect::Create => unsettled = Some(e),
                Expect::Update(_) => return Err(rival(e, expect)),
            },
            Err(_) => return Err(unsettled.unwrap_or(e)),
        }
    }
    Err(unsettled.unwrap_or_else(|| Error::decode("a conditional write was never sent")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn what_is_settled() {
        let lost = Error::new(ErrorKind::Transport, "connection closed");
        assert!(outcome_unknown(&lost));
        let e500 = Error::from_response(500, Some(ErrorCode::OperationTimedOut), "".into(), None);
        assert!(outcome_unknown(&e500));
        let e503 = Error::from_response(503, Some(ErrorCode::ServerBusy), "".into(), None);
        assert!(!outcome_unknown(&e503), "503: not processed");
        let exists = Error::from_response(409, Some(ErrorCode::BlobAlreadyExists), "".into(), None);
        assert!(refused(&exists, &Expect::Create));
        assert!(!refused(&exists, &Expect::Update(ETag::new("\"1\""))));
        // A lost reply that turns out to be a rival's win becomes the refusal, with the lost
        // reply as its source.
        let r = rival(lost, &Expect::Create);
        assert_eq!(r.error_code(), Some(&ErrorCode::BlobAlreadyExists));
        assert!(std::error::Error::source(&r).is_some());
        let r = rival(
            Error::new(ErrorKind::Timeout, "no reply"),
            &Expect::Update(ETag::new("\"1\"")),
        );
        assert!(r.is_precondition_failed());
        assert_eq!(new_put_id().len(), 16);
    }
}
