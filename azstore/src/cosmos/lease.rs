//! [`CosmosLease`]: a lease on a Cosmos DB lock item, for [`LeaseGuard`](crate::lease::LeaseGuard).

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use time::OffsetDateTime;
use tokio::time::Instant;

use super::item::{ItemRef, Stored};
use super::{CosmosContainer, PartitionKey};
use crate::conditions::{ETag, LeaseId};
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseDuration, LeaseReleased, LeaseResult};
use crate::lock::{LockOwner, next_fencing_token, wall_clock_ms};

/// The time to live of a lock item by default: collected a day after its last write.
pub(crate) const DEFAULT_ITEM_TTL: i64 = 24 * 3600;

/// The lock item, as stored (beside `id` and the partition key).
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub(crate) struct LockDoc {
    /// The lease id of the holder; `None` when free (released or broken).
    #[serde(default)]
    pub(crate) holder: Option<String>,
    /// A fresh random value in every write, so that a write whose reply was lost is
    /// recognised by the writer that sent it.
    #[serde(default)]
    pub(crate) renewal: Option<String>,
    /// The holder's lease duration in ms (-1: infinite): what contenders wait for.
    #[serde(rename = "durationMs", default)]
    pub(crate) duration_ms: i64,
    /// The fencing token of the latest acquisition.
    #[serde(default)]
    pub(crate) fence: u64,
    /// Who acquired it last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) owner: Option<OwnerDoc>,
    /// Cosmos DB time to live, in seconds after the last write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ttl: Option<i64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct OwnerDoc {
    pub(crate) host: String,
    #[serde(default)]
    pub(crate) pid: Option<u32>,
    #[serde(default)]
    pub(crate) label: Option<String>,
    #[serde(rename = "acquiredAt", default)]
    pub(crate) acquired_at: Option<String>,
}

impl OwnerDoc {
    pub(crate) fn from_owner(owner: &LockOwner) -> OwnerDoc {
        OwnerDoc {
            host: owner.host.clone(),
            pid: owner.pid,
            label: owner.label.clone(),
            acquired_at: owner.acquired_at.map(|_| owner.acquired_at_rfc3339()),
        }
    }

    pub(crate) fn to_owner(&self) -> LockOwner {
        LockOwner {
            host: self.host.clone(),
            pid: self.pid,
            label: self.label.clone(),
            acquired_at: self.acquired_at.as_deref().and_then(|t| {
                OffsetDateTime::parse(t, &time::format_description::well_known::Rfc3339).ok()
            }),
        }
    }
}

fn duration_ms(d: LeaseDuration) -> i64 {
    d.as_duration().map_or(-1, |d| d.as_millis() as i64)
}

fn nonce() -> String {
    format!("{:032x}", rand::random::<u128>())
}

/// The fencing token of an acquisition after `previous` (`None`: the item is created afresh):
/// the one formula of [`next_fencing_token`], with this host's wall clock.
fn next_fence(previous: Option<u64>) -> u64 {
    next_fencing_token(previous, wall_clock_ms())
}

/// The holder of a lock item being broken with a period: nobody's id, so the holder's renew is
/// refused at once, and contenders take it over once they saw it unchanged for the period.
pub(crate) const BREAKING: &str = "azstore:breaking";

pub(crate) fn lease_error(kind: ErrorKind, message: String) -> Error {
    Error::new(kind, message)
}

/// What this process knows about the lock item.
#[derive(Default)]
struct State {
    /// Our last successful write: its `_etag` and content (a renew replaces the whole item).
    ours: Option<(ETag, LockDoc)>,
    /// As a contender: the `_etag` of someone else's lock item and when (on our monotonic
    /// clock) a read first showed it.
    observed: Option<(ETag, Instant)>,
}

/// A lease on a Cosmos DB lock item. It plugs into [`LeaseGuard`](crate::lease::LeaseGuard)
/// like a blob does: renewed in the background, its loss signalled before anyone else can
/// take it.
///
/// | lease operation | Cosmos DB |
/// |---|---|
/// | acquire | create the lock item (409: someone holds it); or, when it is free, replace it with `If-Match` |
/// | renew | replace with `If-Match: <_etag of our last write>` (each renew changes `_etag`) |
/// | change | replace with `If-Match`, new holder id |
/// | release | replace with `If-Match`, no holder (the item stays: it keeps the fencing token) |
/// | break | replace with `If-Match`: no holder (at once), or a "breaking" holder that contenders take over after the break period of unchanged item (the holder's renew is refused at once) |
///
/// Refusals carry Azure's lease codes: `LeaseAlreadyPresent` (acquire),
/// `LeaseIdMismatchWithLeaseOperation` (another id holds it), `LeaseNotPresentWithLeaseOperation`
/// (the item is gone or free). Every write carries a fresh `renewal` value: a write whose reply
/// was lost is recognised by reading the item back, and acquiring again with the id that holds
/// the lease succeeds (it restarts the lease), so a retried acquire is safe.
///
/// # The takeover rule
/// Cosmos DB has no server-side lease: nothing expires an item at a chosen moment (item
/// time to live is coarse, and not every server implements it). Expiry is decided by the
/// contenders, as Kubernetes leader election decides it:
///
/// > A contender may take over a held lock item only after the item kept **the same
/// > `_etag` for the whole lease duration**, measured on the **contender's own monotonic
/// > clock from when a read first showed it that `_etag`**; the takeover is a replace with
/// > `If-Match` on that `_etag`.
///
/// Why no holder can still believe it holds the lock then, without synchronised clocks:
/// the holder's [`LeaseGuard`](crate::lease::LeaseGuard) reports the loss at *duration −
/// margin after its last successful renew was sent* (`S`). That renew's write produced the
/// `_etag` the contender watches; the write was applied after `S`, and the contender's read
/// that first showed it returned after it was applied — so the contender's count starts after
/// `S`, and its takeover comes at least a whole duration after `S`, a margin after the
/// holder's deadline. Only the *rate* of the two clocks matters (the margin, a sixth of the
/// duration by default, absorbs drift), never their readings. If the holder renewed in the
/// meantime, the `_etag` changed and the takeover's `If-Match` fails with 412: watching
/// starts over. A renew whose reply was lost counts only from when *that* renew was sent
/// (the holder re-reads and recognises its `renewal` value; a write of an earlier renew is
/// written over with a new one). The contender's clock is tokio's (`CLOCK_MONOTONIC`), which
/// does not count a suspend of the contender's machine: a suspend only makes it wait longer.
///
/// Lock items carry a Cosmos DB `ttl` (a day after their last write, by default) so that
/// abandoned ones are collected where the server supports it; nothing above depends on it (a
/// holder renews far more often than that, and a collected item is simply created again).
///
/// ```no_run
/// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
/// use azstore::cosmos::PartitionKey;
/// use azstore::lease::{LeaseDuration, LeaseGuard};
/// let lease = container.lease("jobs-nightly", PartitionKey::from("jobs-nightly"))?;
/// let guard = LeaseGuard::acquire(lease, LeaseDuration::seconds(15)?).await?;
/// tokio::select! {
///     loss = guard.lost() => eprintln!("stopping: {loss}"),
///     _ = async { /* long work */ } => {}
/// }
/// guard.release().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct CosmosLease {
    item: ItemRef,
    item_ttl: Option<i64>,
    state: Arc<Mutex<State>>,
}

impl fmt::Debug for CosmosLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CosmosLease")
            .field("item", &self.item.describe())
            .field("item_ttl", &self.item_ttl)
            .finish()
    }
}

/// What an acquire found and did.
pub(crate) enum Acquired {
    /// Ours, with this fencing token.
    Yes(u64),
    /// Someone else holds it.
    Busy,
}

impl CosmosLease {
    pub(crate) fn new(
        container: CosmosContainer,
        id: &str,
        pk: PartitionKey,
    ) -> Result<CosmosLease> {
        Ok(CosmosLease {
            item: ItemRef::new(container, id, pk)?,
            item_ttl: Some(DEFAULT_ITEM_TTL),
            state: Arc::new(Mutex::new(State::default())),
        })
    }

    /// The lock item's time to live in seconds after its last write (default: a day), or
    /// `None` for none. `InvalidInput` below 60 s: the item must outlive every lease on it.
    ///
    /// ```no_run
    /// # fn demo(lease: azstore::cosmos::CosmosLease) -> azstore::Result<()> {
    /// let lease = lease.with_item_ttl(Some(3600))?;
    /// assert!(azstore::cosmos::CosmosLease::with_item_ttl(lease.clone(), Some(10)).is_err()); // below 60 s
    /// # let _ = lease;
    /// # Ok(()) }
    /// ```
    pub fn with_item_ttl(mut self, seconds: Option<i64>) -> Result<CosmosLease> {
        if let Some(s) = seconds {
            if !(60..=i64::from(i32::MAX)).contains(&s) {
                return Err(Error::invalid_input(format!(
                    "a lock item's ttl is 60 to 2147483647 seconds (got {s})"
                )));
            }
        }
        self.item_ttl = seconds;
        Ok(self)
    }

    /// The lock item id.
    ///
    /// ```no_run
    /// # fn demo(lease: azstore::cosmos::CosmosLease) -> azstore::Result<()> {
    /// println!("{} {:?}", lease.id(), lease.partition_key());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        &self.item.id
    }

    /// The lock item's partition key value.
    ///
    /// ```no_run
    /// # fn demo(lease: azstore::cosmos::CosmosLease) -> azstore::Result<()> {
    /// println!("{}", lease.partition_key().header_value());
    /// # Ok(()) }
    /// ```
    pub fn partition_key(&self) -> &PartitionKey {
        &self.item.pk
    }

    /// Endpoint, database and container, for the local wake-up registry.
    pub(crate) fn container_key(&self) -> String {
        let c = &self.item.container;
        format!("{}/{}/{}", c.client().endpoint(), c.database_id(), c.id())
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The container of the lock item.
    pub(crate) fn container(&self) -> &CosmosContainer {
        &self.item.container
    }

    /// A lock item as a query returned it: its `_etag` and content.
    pub(crate) fn doc_from_query(
        &self,
        doc: serde_json::Map<String, Value>,
    ) -> Result<(ETag, LockDoc)> {
        let etag = doc
            .get("_etag")
            .and_then(Value::as_str)
            .filter(|s| !s.trim().is_empty())
            .map(ETag::new)
            .ok_or_else(|| {
                Error::decode(format!(
                    "Cosmos DB listed {} without an _etag",
                    self.item.describe()
                ))
            })?;
        Ok((etag.clone(), self.decode(Stored { doc, etag })?))
    }

    /// Reads the lock item: its content and `_etag`, `None` when absent.
    pub(crate) async fn read_doc(&self) -> Result<Option<(ETag, LockDoc)>> {
        let Some(stored) = self.item.read().await? else {
            return Ok(None);
        };
        Ok(Some((stored.etag.clone(), self.decode(stored)?)))
    }

    fn decode(&self, stored: Stored) -> Result<LockDoc> {
        serde_json::from_value(Value::Object(stored.doc)).map_err(|e| {
            Error::decode(format!(
                "{} is not an azstore lock item: {e}",
                self.item.describe()
            ))
        })
    }

    fn encode(doc: &LockDoc) -> Result<Value> {
        serde_json::to_value(doc)
            .map_err(|e| Error::invalid_input(format!("lock item cannot be serialized: {e}")))
    }

    fn remember(&self, etag: ETag, doc: LockDoc) {
        self.state().ours = Some((etag, doc));
    }

    /// Creates the lock item (`Ok(None)`: it exists) or replaces it with `If-Match: etag`
    /// (`Ok(None)`: it changed since). A write whose reply was lost is settled by reading the
    /// item back: it applied when the item carries our `renewal`.
    async fn write(&self, doc: LockDoc, etag: Option<&ETag>) -> Result<Option<ETag>> {
        let body = Self::encode(&doc)?;
        let result = match etag {
            None => self.item.create(body).await,
            Some(e) => self.item.replace(body, Some(e)).await,
        };
        let err = match result {
            Ok(stored) => {
                self.remember(stored.etag.clone(), doc);
                return Ok(Some(stored.etag));
            }
            Err(e) => e,
        };
        let refused = err.is_conflict() || err.is_precondition_failed() || err.is_not_found();
        if !refused && err.request_sent() != RequestSent::Maybe {
            return Err(err);
        }
        // Refused, or no answer: did our write apply (a repeat below us met our own write, or
        // the reply was lost)?
        match self.read_doc().await {
            Ok(Some((now, found))) if found.renewal.is_some() && found.renewal == doc.renewal => {
                self.remember(now.clone(), doc);
                Ok(Some(now))
            }
            Ok(_) if refused => Ok(None),
            Ok(_) => Err(err
                .context("the lock write was not applied")
                .with_sent(RequestSent::Yes)),
            Err(_) => Err(err),
        }
    }

    /// One acquire attempt for `proposed`; the fencing token on success. `owner` is recorded.
    pub(crate) async fn try_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
        owner: Option<OwnerDoc>,
    ) -> Result<Acquired> {
        let ttl = match duration {
            LeaseDuration::Infinite => None,
            LeaseDuration::Fixed(_) => self.item_ttl,
        };
        let fresh = |fence: u64| LockDoc {
            holder: Some(proposed.as_str().to_string()),
            renewal: Some(nonce()),
            duration_ms: duration_ms(duration),
            fence,
            owner: owner.clone(),
            ttl,
        };
        let Some((etag, doc)) = self.read_doc().await? else {
            let doc = fresh(next_fence(None));
            let fence = doc.fence;
            return Ok(match self.write(doc, None).await? {
                Some(_) => Acquired::Yes(fence),
                None => Acquired::Busy,
            });
        };
        let seen_at = Instant::now();
        let (fence, takeover) = match doc.holder.as_deref() {
            // Our own acquire again (its reply was lost): restart the lease, same token.
            Some(h) if h == proposed.as_str() => (doc.fence, false),
            None => (next_fence(Some(doc.fence)), false),
            Some(_) => {
                if !self.expired(&etag, &doc, seen_at) {
                    return Ok(Acquired::Busy);
                }
                (next_fence(Some(doc.fence)), true)
            }
        };
        let doc = fresh(fence);
        match self.write(doc, Some(&etag)).await? {
            Some(_) => {
                if takeover {
                    tracing::debug!(item = %self.item.describe(), "took over an expired Cosmos DB lease");
                }
                self.state().observed = None;
                Ok(Acquired::Yes(fence))
            }
            None => Ok(Acquired::Busy),
        }
    }

    /// The takeover rule: whether `etag` (someone else's holding) has been unchanged for its
    /// whole lease duration since we first saw it. Starts watching a new `_etag`.
    /// Records what a status read saw, as a contender's observation for the takeover rule:
    /// a read is a read, whether an acquire or a status made it, so a waiter that watched the
    /// item through status reads takes over one lease duration after the first of them (not
    /// one lease after its first acquire attempt).
    pub(crate) fn observe(&self, etag: &ETag, doc: &LockDoc) {
        if doc.holder.is_some() {
            self.expired(etag, doc, Instant::now());
        }
    }

    fn expired(&self, etag: &ETag, doc: &LockDoc, seen_at: Instant) -> bool {
        let mut state = self.state();
        match &state.observed {
            Some((watched, since)) if watched == etag => {
                // An infinite (or unreadable) duration never expires.
                let Ok(ms) = u64::try_from(doc.duration_ms) else {
                    return false;
                };
                seen_at.saturating_duration_since(*since) >= Duration::from_millis(ms)
            }
            _ => {
                state.observed = Some((etag.clone(), seen_at));
                false
            }
        }
    }

    /// Our last write, or the item as it is now when we have none (a lease acquired by
    /// another `CosmosLease` value).
    async fn ours(&self) -> Result<Option<(ETag, LockDoc)>> {
        let known = self.state().ours.clone();
        match known {
            Some(k) => Ok(Some(k)),
            None => self.read_doc().await,
        }
    }

    /// Rewrites the lock item held by `id` with `change` applied (a renew, change, release or
    /// break), with `If-Match` on what we know; after a refusal re-reads, and goes on only
    /// while `id` still holds it. `id` = `None`: whoever holds it (break).
    async fn rewrite(
        &self,
        what: &str,
        id: Option<&LeaseId>,
        change: impl Fn(&mut LockDoc),
    ) -> Result<ETag> {
        let mut current = self.ours().await?;
        for _ in 0..4 {
            let Some((etag, doc)) = current else {
                return Err(lease_error(
                    ErrorKind::LeaseLost,
                    format!("{what} refused: {} does not exist", self.item.describe()),
                ));
            };
            match (id, doc.holder.as_deref()) {
                (_, None) => {
                    return Err(lease_error(
                        ErrorKind::LeaseLost,
                        format!("{what} refused: nobody holds {}", self.item.describe()),
                    ));
                }
                (Some(id), Some(h)) if h != id.as_str() => {
                    return Err(lease_error(
                        ErrorKind::LeaseLost,
                        format!(
                            "{what} refused: another lease id holds {}",
                            self.item.describe()
                        ),
                    ));
                }
                _ => {}
            }
            let mut next = doc.clone();
            change(&mut next);
            next.renewal = Some(nonce());
            if let Some(new) = self.write(next, Some(&etag)).await? {
                return Ok(new);
            }
            // Changed since our last write (by our own earlier write whose reply was lost, or
            // by someone else): look again.
            current = self.read_doc().await?;
        }
        Err(Error::new(
            ErrorKind::Service,
            format!("{what} of {}: the item kept changing", self.item.describe()),
        ))
    }
}

// Every lease capability (the default): renew, change, and break with a period (the item is
// marked breaking).
impl Leasable for CosmosLease {
    fn lease_target(&self) -> String {
        format!("cosmos item {}", self.item.id)
    }

    async fn lease_acquire(
        &self,
        duration: LeaseDuration,
        proposed: &LeaseId,
    ) -> Result<LeaseResult> {
        match self.try_acquire(duration, proposed, None).await? {
            Acquired::Yes(_) => {
                let etag = self.state().ours.as_ref().map(|(e, _)| e.clone());
                Ok(LeaseResult::new(proposed.clone(), etag))
            }
            Acquired::Busy => Err(lease_error(
                ErrorKind::LeaseHeld,
                format!("{} is held by someone else", self.item.describe()),
            )),
        }
    }

    async fn lease_renew(&self, id: &LeaseId) -> Result<LeaseResult> {
        let etag = self.rewrite("renew", Some(id), |_| {}).await?;
        Ok(LeaseResult::new(id.clone(), Some(etag)))
    }

    async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
        let new = proposed.as_str().to_string();
        let etag = self
            .rewrite("change", Some(id), |d| d.holder = Some(new.clone()))
            .await?;
        Ok(LeaseResult::new(proposed.clone(), Some(etag)))
    }

    async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
        let etag = self
            .rewrite("release", Some(id), |d| d.holder = None)
            .await?;
        self.state().ours = None;
        Ok(LeaseReleased::new(Some(etag)))
    }

    /// Breaks the lease. `None`: the rest of a fixed lease (at once for an infinite one);
    /// `Some(period)`: after the period, or the lease duration if that is shorter. A break
    /// with time left leaves the item with a "breaking" holder: the holder's renew is refused
    /// at once, and contenders take it over once they saw it unchanged for that time (the
    /// takeover rule, on their clocks). The fencing token is kept.
    async fn lease_break(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.state().ours = None;
        let current = self.read_doc().await?;
        let lease_ms = current
            .as_ref()
            .and_then(|(_, d)| u64::try_from(d.duration_ms).ok());
        let period_ms = match (period, lease_ms) {
            (None, None) => 0,
            (None, Some(l)) => l,
            (Some(p), l) => {
                let p = u64::from(p.as_secs()) * 1000;
                l.map_or(p, |l| p.min(l))
            }
        };
        self.state().ours = current;
        let etag = self
            .rewrite("break", None, |d| {
                if period_ms == 0 {
                    d.holder = None;
                } else {
                    d.holder = Some(BREAKING.to_string());
                    d.duration_ms = period_ms as i64;
                }
            })
            .await?;
        self.state().ours = None;
        Ok(LeaseBroken::new(
            Duration::from_millis(period_ms),
            Some(etag),
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The takeover rule on the contender's clock: expired only once the same `_etag` was
    /// seen for the holder's whole duration since it was first seen; a new `_etag` restarts
    /// the count; an infinite lease never expires.
    #[test]
    fn takeover_rule() {
        let lease = crate::cosmos::CosmosClient::new(
            "http://127.0.0.1:1",
            crate::cosmos::CosmosKey::new(crate::cosmos::EMULATOR_KEY).unwrap(),
        )
        .unwrap()
        .database("d")
        .unwrap()
        .container("c", "/id")
        .unwrap()
        .lease("l", "l")
        .unwrap();
        let doc = LockDoc {
            holder: Some("h".into()),
            duration_ms: 15_000,
            ..LockDoc::default()
        };
        let (e1, e2) = (ETag::new("e1"), ETag::new("e2"));
        let t0 = Instant::now();
        let at = |ms: u64| t0 + Duration::from_millis(ms);
        assert!(
            !lease.expired(&e1, &doc, at(0)),
            "first sight starts the count"
        );
        assert!(!lease.expired(&e1, &doc, at(14_999)));
        assert!(lease.expired(&e1, &doc, at(15_000)));
        assert!(
            !lease.expired(&e2, &doc, at(20_000)),
            "renewed: count again"
        );
        assert!(!lease.expired(&e2, &doc, at(34_999)));
        assert!(lease.expired(&e2, &doc, at(35_000)));
        let infinite = LockDoc {
            duration_ms: -1,
            ..doc
        };
        assert!(!lease.expired(&e1, &infinite, at(40_000)));
        assert!(!lease.expired(&e1, &infinite, at(4_000_000)));
    }

    #[test]
    fn lock_documents_round_trip() {
        let doc = LockDoc {
            holder: Some("h".into()),
            renewal: Some(nonce()),
            duration_ms: 15_000,
            fence: 7,
            owner: Some(OwnerDoc::from_owner(&LockOwner::here(Some("x".into())))),
            ttl: Some(60),
        };
        let v = serde_json::to_value(&doc).unwrap();
        assert_eq!(v["durationMs"], 15_000);
        let back: LockDoc = serde_json::from_value(v).unwrap();
        assert_eq!(back.fence, 7);
        assert_eq!(back.owner.unwrap().to_owner().label.as_deref(), Some("x"));
        let empty: LockDoc = serde_json::from_value(serde_json::json!({"id": "x"})).unwrap();
        assert!(empty.holder.is_none() && empty.fence == 0);
        assert!(next_fence(None) > 1_700_000_000_000);
        assert_eq!(next_fence(Some(u64::MAX - 1)), u64::MAX);
        assert_eq!(duration_ms(LeaseDuration::Infinite), -1);
    }
}
