//! Recognising our own writes after an ambiguous failure: the write ids stored with each
//! value, the writes whose outcome is unknown, and which errors mean a conflict.

use std::time::Duration;

use super::{Change, Current, Outcome, WRITE_ID_HISTORY};
use crate::conditions::ETag;
use crate::error::{Error, ErrorKind, RequestSent};

/// A write of ours that failed in a way that does not prove it was not applied.
pub(super) struct Pending<T> {
    pub(super) id: String,
    pub(super) value: Option<T>,
    pub(super) change: Change,
    /// Whether its refusal was counted as a conflict.
    pub(super) counted: bool,
    /// Whether nothing says how it ended (no answer, or a server error that may have been
    /// applied), as opposed to a refusal that a retrying layer below us may have caused.
    pub(super) unknown: bool,
    /// The ETag a replace was conditioned on (`None` for a create).
    pub(super) condition: Option<ETag>,
}

/// Whether a write's error leaves its outcome unknown: no answer at all
/// ([`RequestSent::Maybe`]), or a server error that may have been applied — Azure documents
/// 500 `OperationTimedOut` as "may or may not have succeeded", and a 502/504 comes from a
/// gateway that may have passed the request on.
pub(super) fn outcome_unknown(e: &Error) -> bool {
    e.request_sent() == RequestSent::Maybe || matches!(e.status(), Some(500 | 502 | 504))
}

/// The pending write of ours that `current` shows applied: its index in `pending` and the
/// position of its id in the stored history (0: it produced the current value).
pub(super) fn recognise<T, V>(
    current: Option<&Current<V>>,
    pending: &[Pending<T>],
) -> Option<(usize, usize)> {
    let token = current?.write_id.as_deref()?;
    pending
        .iter()
        .enumerate()
        .find_map(|(i, p)| position_in(token, &p.id).map(|pos| (i, pos)))
}

/// The outcome of a recognised write of ours.
pub(super) fn recovered<T>(
    p: Pending<T>,
    pos: usize,
    current: Option<Current<T>>,
    attempts: u32,
    conflicts: u32,
) -> Outcome<T> {
    let (value, etag) = match (pos, current) {
        (0, Some(cur)) => (Some(cur.value), Some(cur.etag)),
        _ => (p.value, None),
    };
    Outcome {
        value,
        etag,
        change: p.change,
        attempts,
        conflicts: conflicts - u32::from(p.counted),
        recovered_ambiguous: 1,
    }
}

/// Whether `current` shows that none of our writes of unknown outcome is in the stored state:
/// the resource is absent, or still at the version the write was conditioned on, or carries
/// a write-id history that is not full (so ours would still be listed had it applied).
pub(super) fn not_stored<T, V>(current: Option<&Current<V>>, pending: &[Pending<T>]) -> bool {
    let Some(cur) = current else {
        return true;
    };
    pending.iter().filter(|p| p.unknown).all(|p| {
        p.condition.as_ref() == Some(&cur.etag)
            || cur
                .write_id
                .as_deref()
                .is_some_and(|t| ids(t).count() < WRITE_ID_HISTORY)
    })
}

pub(super) fn new_write_id() -> String {
    format!("{:016x}", rand::random::<u64>())
}

/// The token stored with a write: our id followed by the most recent earlier ids, the item's
/// pace when there is one (see [`pace_in`]), and the backlog mark when the write comes from an
/// update that is part of a backlog (see [`from_backlog`]).
pub(super) fn write_token(
    id: &str,
    previous: Option<&str>,
    pace: Option<Duration>,
    backlog: bool,
) -> String {
    let mut token = id.to_string();
    for earlier in previous
        .into_iter()
        .flat_map(ids)
        .take(WRITE_ID_HISTORY - 1)
    {
        token.push(',');
        token.push_str(earlier);
    }
    if let Some(pace) = pace {
        token.push_str(&format!(",{PACE}{}", pace.as_micros()));
    }
    if backlog {
        token.push(',');
        token.push_str(BACKLOG);
    }
    token
}

/// Whether the write that stored `token` came from an update that was part of a backlog —
/// one that started right behind another update of its process on the item — rather than
/// from one that arrived afresh (see [`Pacer::backlogged`]).
///
/// [`Pacer::backlogged`]: super::policy::Pacer::backlogged
pub(super) fn from_backlog(token: &str) -> bool {
    token.split(',').any(|s| s == BACKLOG)
}

/// Marks a token written by an update that was part of a backlog.
const BACKLOG: &str = "b";

/// The write ids of a stored token, newest first (anything else in it is skipped).
pub(super) fn ids(token: &str) -> impl Iterator<Item = &str> {
    token.split(',').filter(|s| is_write_id(s))
}

/// Marks the pace entry of a token: `p` and microseconds.
const PACE: char = 'p';

/// The item's pace stored in a token: about how long a writer that lost a race on it steps
/// aside, as the writes before it set it (see [`Pacer::pace_after`]). `None` when the
/// token has none (a calm item) or it cannot be read; bounded to 60 s whatever is stored.
///
/// [`Pacer::pace_after`]: super::policy::Pacer::pace_after
pub(super) fn pace_in(token: &str) -> Option<Duration> {
    let micros = token.split(',').find_map(|s| s.strip_prefix(PACE))?;
    if micros.is_empty() || micros.len() > 12 || !micros.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let pace = Duration::from_micros(micros.parse().ok()?);
    (pace > Duration::ZERO).then(|| pace.min(Duration::from_secs(60)))
}

fn is_write_id(s: &str) -> bool {
    s.len() == 16 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// Position of `id` in a stored token (0 = the write that produced the current value).
pub(super) fn position_in(token: &str, id: &str) -> Option<usize> {
    ids(token).position(|s| s == id)
}

/// Whether a create's error means "someone else created it first".
pub(super) fn is_create_conflict(e: &Error) -> bool {
    e.is_precondition_failed() || e.is_already_exists()
}

/// Whether a replace's or delete's error means "someone else changed or deleted it" (a
/// missing container is not: nothing was there to change).
pub(super) fn is_replace_conflict(e: &Error) -> bool {
    e.is_precondition_failed() || e.kind() == ErrorKind::NotFound
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorCode;

    #[test]
    fn write_tokens_keep_a_bounded_history() {
        let mut token = write_token("0000000000000000", None, None, false);
        for i in 1..20u64 {
            token = write_token(&format!("{i:016x}"), Some(&token), None, false);
        }
        let ids: Vec<_> = token.split(',').collect();
        assert_eq!(ids.len(), WRITE_ID_HISTORY);
        assert_eq!(ids[0], format!("{:016x}", 19));
        assert_eq!(position_in(&token, &format!("{:016x}", 12)), Some(7));
        assert_eq!(position_in(&token, &format!("{:016x}", 4)), Some(15));
        assert_eq!(position_in(&token, &format!("{:016x}", 3)), None);
        assert!(token.len() <= 300);
        // Foreign junk in a stored token is dropped, never echoed.
        assert_eq!(
            write_token("aaaaaaaaaaaaaaaa", Some("x,,bbbbbbbbbbbbbbbb"), None, false),
            "aaaaaaaaaaaaaaaa,bbbbbbbbbbbbbbbb"
        );
        assert!(is_write_id(&new_write_id()));
    }

    #[test]
    fn a_token_carries_the_pace_after_its_ids() {
        let a = "00000000000000aa";
        let t = write_token(a, None, Some(Duration::from_micros(2500)), false);
        assert_eq!(t, "00000000000000aa,p2500");
        assert_eq!(pace_in(&t), Some(Duration::from_micros(2500)));
        // The next write keeps the ids, not the old pace: it states its own or none.
        let t2 = write_token("00000000000000bb", Some(&t), None, false);
        assert_eq!(t2, "00000000000000bb,00000000000000aa");
        assert_eq!(pace_in(&t2), None);
        // The backlog mark is the writer's own: the next write does not carry it on.
        let plain = write_token(
            "00000000000000cc",
            Some(&t2),
            Some(Duration::from_micros(7)),
            false,
        );
        assert!(!from_backlog(&plain));
        let t3 = write_token(
            "00000000000000cc",
            Some(&t2),
            Some(Duration::from_micros(7)),
            true,
        );
        assert_eq!(
            t3,
            "00000000000000cc,00000000000000bb,00000000000000aa,p7,b"
        );
        assert!(from_backlog(&t3));
        assert_eq!(pace_in(&t3), Some(Duration::from_micros(7)));
        assert_eq!(ids(&t3).count(), 3);
        let t4 = write_token("00000000000000dd", Some(&t3), None, false);
        assert_eq!(
            t4,
            "00000000000000dd,00000000000000cc,00000000000000bb,00000000000000aa"
        );
        assert!(!from_backlog(&t4));
        assert!(
            !from_backlog("00000000000000aa,bb,p5"),
            "only the mark itself counts"
        );
        assert_eq!(position_in(&t, a), Some(0));
        // Junk is no pace, and a stored pace is bounded.
        for junk in ["p", "px1", "p-3", "p0", "p1234567890123"] {
            assert_eq!(pace_in(&format!("{a},{junk}")), None, "{junk}");
        }
        assert_eq!(
            pace_in(&format!("{a},p999999999")),
            Some(Duration::from_secs(60))
        );
    }

    #[test]
    fn what_a_settling_read_proves() {
        let write = |id: &str, condition: Option<&str>| Pending {
            id: id.to_string(),
            value: Some(1u64),
            change: Change::Replaced,
            counted: false,
            unknown: true,
            condition: condition.map(ETag::new),
        };
        let cur = |etag: &str, token: Option<String>| Current {
            value: 0u64,
            etag: ETag::new(etag),
            write_id: token,
        };
        let ours = "00000000000000aa";
        let pending = [write(ours, Some("\"e1\""))];
        // Recognised: our id is in the stored history.
        let token = write_token(
            "00000000000000bb",
            Some(&write_token(ours, None, None, false)),
            None,
            false,
        );
        let c = cur("\"e3\"", Some(token));
        assert_eq!(recognise(Some(&c), &pending), Some((0, 1)));
        // Not stored: absent, unchanged since the condition, or a history with room for ours.
        assert!(not_stored::<u64, u64>(None, &pending));
        assert!(not_stored(Some(&cur("\"e1\"", None)), &pending));
        let short = write_token(
            "00000000000000cc",
            None,
            Some(Duration::from_millis(3)),
            false,
        );
        assert!(not_stored(Some(&cur("\"e2\"", Some(short))), &pending));
        // Unknown: another version without history, or a full history.
        assert!(!not_stored(Some(&cur("\"e2\"", None)), &pending));
        let mut full = write_token("0000000000000000", None, None, false);
        for i in 1..40u64 {
            full = write_token(
                &format!("{i:016x}"),
                Some(&full),
                Some(Duration::from_millis(i)),
                false,
            );
        }
        assert_eq!(ids(&full).count(), WRITE_ID_HISTORY);
        assert!(!not_stored(Some(&cur("\"e2\"", Some(full))), &pending));
        // Errors that leave a write's outcome unknown.
        let e500 = Error::from_response(500, Some(ErrorCode::OperationTimedOut), "".into(), None);
        let e503 = Error::from_response(503, Some(ErrorCode::ServerBusy), "".into(), None);
        let lost = Error::new(ErrorKind::Timeout, "no response");
        assert!(outcome_unknown(&e500) && outcome_unknown(&lost));
        assert!(!outcome_unknown(&e503), "503 ServerBusy: not processed");
    }

    #[test]
    fn conflict_classification() {
        let e412 = Error::from_response(412, None, "x".into(), None);
        let exists = Error::new(ErrorKind::AlreadyExists, "created by someone else");
        let busy = Error::new(ErrorKind::Conflict, "being deleted");
        let gone = Error::new(ErrorKind::NotFound, "deleted by someone else");
        let no_container = Error::new(ErrorKind::ContainerNotFound, "no container");
        let lease = Error::new(ErrorKind::LeaseHeld, "leased by someone else");
        assert!(is_create_conflict(&e412) && is_create_conflict(&exists));
        assert!(!is_create_conflict(&busy) && !is_create_conflict(&gone));
        assert!(is_replace_conflict(&e412) && is_replace_conflict(&gone));
        assert!(!is_replace_conflict(&no_container) && !is_replace_conflict(&lease));
        assert!(!is_replace_conflict(&exists));
        let ex = Error::retries_exhausted("gave up", e412);
        assert_eq!(ex.kind(), ErrorKind::RetriesExhausted);
        assert_eq!(ex.status(), Some(412));
        assert!(std::error::Error::source(&ex).is_some());
    }
}
