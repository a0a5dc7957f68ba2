#![doc = include_str!("README.md")]
//!
//! The engine knows no backend: each backend implements [`Versioned`] in its own folder, beside
//! its adapters (`azstore::blob::BlobJson`, `azstore::redis::RedisJson`,
//! `azstore::cosmos::CosmosItem`, `azstore::table::TableClient`'s entities).

mod ambiguity;
mod combine;
mod gate;
mod memory;
mod policy;
mod run;
mod telemetry;

use std::future::Future;

pub use combine::Combiner;
pub use policy::UpdatePolicy;
pub use run::{create_only, update};

use crate::conditions::ETag;
use crate::error::{Error, ErrorKind, Result};
#[cfg(doc)]
use crate::{RequestSent, http::RetryPolicy};

/// How many recent write ids the stored token keeps (see the module docs).
pub const WRITE_ID_HISTORY: usize = 16;

/// The current state of a versioned resource, as [`Versioned::read`] returns it.
///
/// ```no_run
/// use azstore::update::{Versioned};
/// use azstore::blob::{BlobJson};
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let counter = BlobJson::<u64>::new(blob);
/// if let Some(current) = counter.read().await? {
///     println!("{} at version {}", current.value, current.etag);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Current<T> {
    /// The value.
    pub value: T,
    /// Its version.
    pub etag: ETag,
    /// The write id stored with the value by the write that produced it, if any (used to
    /// recognise our own write after an ambiguous failure).
    pub write_id: Option<String>,
}

/// A resource with optimistic concurrency: a blob, a table entity, ….
///
/// Implementations map each method to one conditional request and return the service's
/// errors unchanged (412 / 409 / 404 are how the combinator learns about conflicts).
///
/// The `write_id` passed to [`replace`](Versioned::replace) and [`create`](Versioned::create)
/// is an opaque ASCII token (lower-case hex and commas, at most 300 bytes) that must be stored
/// verbatim with the value and returned by [`read`](Versioned::read) in
/// [`Current::write_id`]; this is what lets [`update`] recognise its own ambiguous writes.
///
/// Send `replace` and `create` as conditional (or non-idempotent) writes
/// ([`Intent::ConditionalWrite`](crate::http::Intent::ConditionalWrite), which
/// [`StorageRequest::conditions`](crate::storage::StorageRequest::conditions) makes of an ETag or create-only
/// condition): then a write whose response was lost comes back as an error with
/// [`RequestSent::Maybe`] and `update` re-reads at once, instead of the pipeline repeating
/// the write, meeting our own first try as a 412, and `update` recognising it only after its
/// backoff (when, under heavy contention, more than [`WRITE_ID_HISTORY`]` - 1` other writes
/// may have landed on top).
///
/// Code generic over `Versioned` runs on blobs and table entities alike:
///
/// ```no_run
/// use azstore::update::{Decision, UpdatePolicy, Versioned, update};
///
/// /// Adds one to a counter stored in any versioned resource.
/// async fn increment<R: Versioned<Value = u64>>(counter: &R) -> azstore::Result<u64> {
///     let outcome = update(counter, &UpdatePolicy::default(), |n| {
///         Decision::Write(n.copied().unwrap_or(0) + 1)
///     })
///     .await?;
///     Ok(outcome.value.unwrap_or(0))
/// }
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let visits = increment(&azstore::blob::BlobJson::<u64>::new(blob)).await?;
/// # let _ = visits; Ok(()) }
/// ```
pub trait Versioned: Send + Sync {
    /// The value type.
    type Value: Send + Sync;

    /// Reads the current value and ETag; `Ok(None)` when the resource does not exist.
    ///
    /// ```no_run
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// match BlobJson::<Vec<String>>::new(blob).read().await? {
    ///     Some(current) => println!("{} names at {}", current.value.len(), current.etag),
    ///     None => println!("not created yet"),
    /// }
    /// # Ok(()) }
    /// ```
    fn read(&self) -> impl Future<Output = Result<Option<Current<Self::Value>>>> + Send;

    /// Replaces the value only if the current ETag is `etag` (If-Match), storing `write_id`
    /// with it. Returns the new ETag. [`update`] calls this with a fresh write id; called by
    /// hand, it is one optimistic write (412 when someone wrote since `etag`).
    ///
    /// ```no_run
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let doc = BlobJson::<u64>::new(blob);
    /// if let Some(current) = doc.read().await? {
    ///     match doc.replace(&(current.value * 2), &current.etag, "0a1b2c").await {
    ///         Err(e) if e.is_precondition_failed() => println!("changed since the read"),
    ///         other => { other?; }
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    fn replace(
        &self,
        value: &Self::Value,
        etag: &ETag,
        write_id: &str,
    ) -> impl Future<Output = Result<ETag>> + Send;

    /// Creates the value only if nothing exists (If-None-Match `*` or insert), storing
    /// `write_id` with it. Returns the new ETag.
    ///
    /// ```no_run
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let doc = BlobJson::<u64>::new(blob);
    /// match doc.create(&0, "0a1b2c").await {
    ///     Err(e) if e.is_conflict() => println!("it exists already"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    fn create(
        &self,
        value: &Self::Value,
        write_id: &str,
    ) -> impl Future<Output = Result<ETag>> + Send;

    /// Deletes the resource only if the current ETag is `etag`.
    ///
    /// ```no_run
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let doc = BlobJson::<u64>::new(blob);
    /// if let Some(current) = doc.read().await? {
    ///     if current.value == 0 {
    ///         doc.delete(&current.etag).await?; // 412 if it changed since the read
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    fn delete(&self, etag: &ETag) -> impl Future<Output = Result<()>> + Send;

    /// Whether this resource stores the `write_id` it is given. Required (no default): an
    /// adapter states it, instead of inheriting a claim that may be false for it. `update`
    /// itself never trusts this answer — it decides from the write id that
    /// [`read`](Versioned::read) returns — so a resource that does not store ids is still
    /// safe: after a write of unknown outcome that may have applied, `update` stops with
    /// [`RequestSent::Maybe`] instead of retrying it (which could apply the change twice).
    /// Callers (and the contract suite) use it to know which guarantees to expect.
    ///
    /// ```no_run
    /// # fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// use azstore::update::Versioned;
    /// let plain = table.versioned::<Entity>("counters", "visits")?.without_write_id();
    /// assert!(!plain.stores_write_ids());
    /// # Ok(()) }
    /// ```
    fn stores_write_ids(&self) -> bool;

    /// The identity of the stored item: the same string for every value that addresses that
    /// item in this process, whatever client it goes through, and different for different
    /// items — a URL-like name with the service's endpoint, say
    /// (`https://acct.blob.core.windows.net/c/b`, `redis://host:6379/0/key`,
    /// `cosmos:https://acct.documents.azure.com/db/container/["pk"]/id`). Concurrent
    /// [`update`]s of the item in this process take turns by it: one read + write at a
    /// time, first come first served, so they never conflict with each other and none waits
    /// in a backoff because of another one (see
    /// [In one process](crate::update#in-one-process)).
    ///
    /// Required: without it, updates of one item in one process would collide with each
    /// other and waste writes (request units, on Cosmos DB) — an identity that differs per call
    /// has the same effect, and the contract suite (`testkit::contract::versioned`) catches
    /// it.
    ///
    /// ```
    /// use azstore::update::Versioned;
    /// # fn f(blob: azstore::blob::BlobClient) {
    /// let counter = azstore::blob::BlobJson::<u64>::new(blob.clone());
    /// assert_eq!(counter.identity(), blob.url());
    /// # }
    /// ```
    fn identity(&self) -> String;

    /// `value` as bytes that [`restore`](Versioned::restore) turns back into the value
    /// [`read`](Versioned::read) returns right after `value` was written; `None` (the
    /// default) when the adapter cannot promise that.
    ///
    /// With it, an [`update`] that commits while another update of the item waits for its
    /// turn in this process hands it the state it wrote, and that one writes without reading
    /// first (see [In one process](crate::update#in-one-process)): one round trip per commit
    /// instead of two. An adapter whose reads return fields the service sets (the
    /// `Timestamp` of a table entity) must leave it at `None`. The contract suite checks it.
    ///
    /// ```
    /// use azstore::StorageAccount;
    /// use azstore::blob::BlobServiceClient;
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # fn main() -> azstore::Result<()> {
    /// let blobs = BlobServiceClient::new(&StorageAccount::development())?;
    /// let counter = BlobJson::<u64>::new(blobs.container("counters")?.blob("visits")?);
    /// let bytes = counter.snapshot(&7).expect("JSON blobs offer it");
    /// assert_eq!(counter.restore(&bytes), Some(7)); // nothing was sent
    /// # Ok(()) }
    /// ```
    fn snapshot(&self, value: &Self::Value) -> Option<Vec<u8>> {
        let _ = value;
        None
    }

    /// The value of a [`snapshot`](Versioned::snapshot); `None` (the default) when the
    /// adapter offers none, or the bytes are not one of its snapshots.
    ///
    /// ```
    /// use azstore::StorageAccount;
    /// use azstore::blob::BlobServiceClient;
    /// use azstore::update::{Versioned};
    /// use azstore::blob::{BlobJson};
    /// # fn main() -> azstore::Result<()> {
    /// let blobs = BlobServiceClient::new(&StorageAccount::development())?;
    /// let counter = BlobJson::<u64>::new(blobs.container("counters")?.blob("visits")?);
    /// assert_eq!(counter.restore(b"not JSON"), None);
    /// # Ok(()) }
    /// ```
    fn restore(&self, snapshot: &[u8]) -> Option<Self::Value> {
        let _ = snapshot;
        None
    }
}

/// What the closure passed to [`update`] decided for the value it was shown.
///
/// ```no_run
/// use azstore::update::{Decision, UpdatePolicy, update};
/// use azstore::blob::{BlobJson};
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// // A stock level: take 3 items, delete the record when it reaches zero.
/// let stock = BlobJson::<u32>::new(blob);
/// update(&stock, &UpdatePolicy::default(), |left| match left.copied() {
///     None => Decision::abort("no such item"),
///     Some(n) if n < 3 => Decision::abort(format!("only {n} left")),
///     Some(3) => Decision::Delete,
///     Some(n) => Decision::Write(n - 3),
/// })
/// .await?;
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum Decision<T> {
    /// Write this value (replace if the resource exists, create if it is absent).
    Write(T),
    /// Leave the resource as it is: no write is sent.
    NoChange,
    /// Delete the resource (nothing is sent when it is already absent).
    Delete,
    /// Stop: `update` returns this error and writes nothing.
    Abort(Error),
}

impl<T> Decision<T> {
    /// `Decision::Abort` with an error of kind [`ErrorKind::Aborted`].
    ///
    /// ```
    /// use azstore::update::Decision;
    /// let d: Decision<u32> = Decision::abort("the balance would go negative");
    /// assert!(matches!(d, Decision::Abort(e) if e.kind() == azstore::ErrorKind::Aborted));
    /// ```
    pub fn abort(message: impl Into<String>) -> Decision<T> {
        Decision::Abort(Error::new(ErrorKind::Aborted, message))
    }
}

/// What the successful write (or non-write) of an [`update`] did.
///
/// ```no_run
/// use azstore::update::{Change, Decision, UpdatePolicy, update};
/// use azstore::blob::{BlobJson};
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let flag = BlobJson::<bool>::new(blob);
/// let outcome = update(&flag, &UpdatePolicy::default(), |on| match on {
///     Some(true) => Decision::NoChange,
///     _ => Decision::Write(true),
/// })
/// .await?;
/// match outcome.change {
///     Change::Created | Change::Replaced => println!("switched on"),
///     Change::Unchanged => println!("was already on"),
///     Change::Deleted => unreachable!("the closure never deletes"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Change {
    /// The resource did not exist; our value created it.
    Created,
    /// Our value replaced the previous one.
    Replaced,
    /// The resource was deleted.
    Deleted,
    /// Nothing was written ([`Decision::NoChange`], or [`Decision::Delete`] of an absent
    /// resource).
    Unchanged,
}

/// The result of a successful [`update`].
///
/// ```no_run
/// use azstore::update::{Decision, UpdatePolicy, update};
/// use azstore::blob::{BlobJson};
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let counter = BlobJson::<u64>::new(blob);
/// let outcome = update(&counter, &UpdatePolicy::default(), |n| {
///     Decision::Write(n.copied().unwrap_or(0) + 1)
/// })
/// .await?;
/// println!(
///     "{:?} ({:?}) after {} attempt(s), {} conflict(s), {} recovered ambiguous write(s)",
///     outcome.value, outcome.change, outcome.attempts, outcome.conflicts,
///     outcome.recovered_ambiguous
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Outcome<T> {
    /// The value now stored by this update (`None` when absent or deleted). For
    /// [`Change::Unchanged`] it is the value the closure saw.
    pub value: Option<T>,
    /// The ETag of `value`. `None` when absent or deleted, and in the rare case where an
    /// ambiguous write of ours was recognised after another writer had already written on
    /// top of it (our write applied, but its ETag is no longer known).
    pub etag: Option<ETag>,
    /// What happened.
    pub change: Change,
    /// How many times the closure ran (= reads).
    pub attempts: u32,
    /// Writes refused because of a concurrent change (412, create-race 409, 404).
    pub conflicts: u32,
    /// Writes whose outcome was unknown (timeout, dropped connection) or whose refusal might
    /// have been caused by our own earlier attempt, and that turned out to have applied.
    pub recovered_ambiguous: u32,
}
