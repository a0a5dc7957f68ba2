//! Read-modify-write: optimistic updates that never lose a write.
//!
//! A [`Versioned`] resource can be read with its ETag, replaced conditioned on that ETag,
//! created conditioned on absence, and deleted conditioned on the ETag. [`update`] runs the
//! loop every team using ETags writes by hand — read, decide, write with `If-Match`, on a
//! conflict start over — once, with every edge handled:
//!
//! | the write got | `update` does |
//! |---|---|
//! | 412 on replace (someone wrote since our read) | re-read, run the closure again, retry |
//! | 409 `BlobAlreadyExists` / `EntityAlreadyExists` / `ResourceAlreadyExists`, or 412, on create | re-read (the other creator's value), retry |
//! | 404 on replace (someone deleted it) | re-read (absent), retry |
//! | 404 on delete, or 412 / timeout on delete and the re-read finds it absent | success: deleted (by us or someone else — the wanted state) |
//! | timeout / dropped connection ([`RequestSent::Maybe`]) | re-read at once; if our write id is there, our write applied: success; if the value is unchanged (or absent, for a create), retry; if it changed and its write-id history cannot tell (full, reset, or not stored), stop with `RequestSent::Maybe` — never write twice |
//! | 500 / 502 / 504 after the pipeline's retries (may have been applied) | one more read settles it: success if our write is there, else the error |
//! | attempts or time run out with a write of unknown outcome | one more read settles it: success if our write is there, else `RetriesExhausted` (see below) |
//! | any other error | returned unchanged |
//!
//! Retries wait according to the [`UpdatePolicy`] (by default decorrelated jitter scaled to
//! the observed round trip; or a fixed exponential schedule), bounded by attempts and
//! elapsed time. Running out gives an error of kind
//! [`ErrorKind::RetriesExhausted`] whose status, code and source are the last conflict's.
//!
//! # In one process
//! Concurrent `update`s of one item within one process take turns: each attempt (read,
//! decide, write) waits until the previous one of that process has its answer, first come
//! first served, so they never conflict with each other; a writer in another process still
//! can, and the policy's backoff handles that. The item is recognised by
//! [`Versioned::key`] (the blob's or entity's URL, the Redis key), whatever client value
//! addresses it. Taking turns changes no outcome guarantee: it only orders the attempts. A
//! turn is waited for at most until the policy's `max_elapsed`; after that the attempt goes
//! ahead without its turn.
//!
//! Measured (the `update_contention` benchmark, Azurite, writers in one process on one blob
//! or entity): no wasted writes at all, where a plain loop with full-jitter backoff wastes
//! 3–4 (16 writers) and 8–9 (64 writers) writes per commit and commits a fifth to a tenth as
//! often. The cost: one process commits at most at one writer's rate, while a few unordered
//! writers sometimes overlap one's read with another's write and do a little better. [`Combiner`] goes further (one read and
//! one write for all the updates waiting) but runs the closures on a task of its own.
//!
//! # Ambiguous writes
//! A conditional write whose response is lost may still have been applied; its retry then
//! sees 412 (or 409) caused by *our own* write. Every write `update` sends carries a fresh
//! random write id, stored with the value (blob metadata, an entity property). The stored
//! token keeps the ids of the last [`WRITE_ID_HISTORY`] writes, so after a failed or
//! ambiguous write the next read tells whether one of ours applied — even when another
//! writer has already written on top of it. Then `update` reports success instead of
//! applying the change twice or reporting a false conflict. Limits: the resource must still
//! exist at that read, and at most [`WRITE_ID_HISTORY`]` - 1` other writes may have landed
//! on top of ours; writers that bypass `update` (e.g. an unconditional overwrite) reset the
//! history. Past those limits `update` cannot tell, and it never guesses: it stops with
//! [`RequestSent::Maybe`] instead of writing the change again.
//!
//! # What `update` stores besides your value
//! The write id token (at most [`WRITE_ID_HISTORY`] ids of 16 hex digits, comma-separated) is
//! stored next to the value, visible to every other reader:
//!
//! | resource | where the token is | what else a replace keeps |
//! |---|---|---|
//! | blob ([`BlobJson`], [`BlobBytes`]) | metadata entry [`WRITE_ID_METADATA`] (`x-ms-meta-azstorewriteid`) | every other metadata entry and the stored HTTP headers (content type, encoding, language, cache control, disposition) of the version replaced; not index tags, the access tier or the stored MD5 |
//! | table entity ([`TableClient::versioned`]) | property [`WRITE_ID_PROPERTY`] (`_azstore_write_id`, an `Edm.String`), removed before your closure sees the entity | nothing else: Update Entity replaces the entity with your value's properties |
//! | Redis key (feature `redis`) | the JSON document at the key, `{"etag","wid","value"}` | — |
//!
//! A table entity can do without the property: [`VersionedEntity::without_write_id`]. The
//! cost: a write whose response was lost can then no longer be recognised, so `update` stops
//! with [`RequestSent::Maybe`] where it would have reported success or retried.
//!
//! [`TableClient::versioned`]: crate::table::TableClient::versioned
//! [`WRITE_ID_PROPERTY`]: crate::table::WRITE_ID_PROPERTY
//! [`VersionedEntity::without_write_id`]: crate::table::VersionedEntity::without_write_id
//!
//! # After an ambiguous failure
//! `update` never answers "failed" about a write that applied: when it has to stop (attempts
//! or time used up, a 5xx) while a write of its own has an unknown outcome, it first reads
//! once more. If the write is there, the result is `Ok`. Otherwise the error's
//! [`request_sent`](crate::Error::request_sent) tells the caller what it may do:
//!
//! * [`RequestSent::Yes`]: the stored state does not hold the write (the resource is absent,
//!   still at the version the write was conditioned on, or its write-id history would list
//!   it). Running the update again applies the change once.
//! * [`RequestSent::Maybe`]: the write may be in the stored state — the settling read failed,
//!   or the history can no longer tell (it is full, or a writer that bypasses `update` reset
//!   it). Running the update again may apply the change twice: read the value and decide.
//!
//! # Example
//! ```no_run
//! use azstore::update::{update, BlobJson, Decision, UpdatePolicy};
//! # async fn run(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! let counter = BlobJson::<u64>::new(blob);
//! let done = update(&counter, &UpdatePolicy::default(), |current| {
//!     Decision::Write(current.copied().unwrap_or(0) + 1)
//! })
//! .await?;
//! println!("now {:?} after {} attempt(s)", done.value, done.attempts);
//! # Ok(()) }
//! ```
//!
//! [`RequestSent::Maybe`]: crate::RequestSent::Maybe

mod ambiguity;
mod blob;
mod combine;
mod gate;
mod policy;
mod run;

use std::future::Future;

pub use blob::{BlobBytes, BlobJson, WRITE_ID_METADATA};
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
/// use azstore::update::{BlobJson, Versioned};
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
/// [`Request::conditions`](crate::http::Request::conditions) makes of an ETag or create-only
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
/// let visits = increment(&azstore::update::BlobJson::<u64>::new(blob)).await?;
/// # let _ = visits; Ok(()) }
/// ```
pub trait Versioned: Send + Sync {
    /// The value type.
    type Value: Send + Sync;

    /// Reads the current value and ETag; `Ok(None)` when the resource does not exist.
    ///
    /// ```no_run
    /// use azstore::update::{BlobJson, Versioned};
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
    /// use azstore::update::{BlobJson, Versioned};
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
    /// use azstore::update::{BlobJson, Versioned};
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
    /// use azstore::update::{BlobJson, Versioned};
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

    /// Whether this resource stores the `write_id` it is given (the default). A resource
    /// that does not cannot have its writes recognised after an ambiguous failure: `update`
    /// then stops with [`RequestSent::Maybe`] as soon as a write of unknown outcome may have
    /// applied, instead of retrying it (which could apply the change twice).
    ///
    /// ```no_run
    /// # fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// use azstore::update::Versioned;
    /// let plain = table.versioned::<Entity>("counters", "visits")?.without_write_id();
    /// assert!(!plain.stores_write_ids());
    /// # Ok(()) }
    /// ```
    fn stores_write_ids(&self) -> bool {
        true
    }

    /// A name of the stored item, the same for every value that addresses that item in this
    /// process (its URL, say), or `None`. With a key, concurrent [`update`]s of the item in
    /// this process take turns: one read + write at a time, first come first served, so they
    /// never conflict with each other and none waits in a backoff because of another one
    /// (see [In one process](self#in-one-process)). The default is `None`: no turns.
    ///
    /// ```
    /// use azstore::update::Versioned;
    /// # fn f(blob: azstore::blob::BlobClient) {
    /// let counter = azstore::update::BlobJson::<u64>::new(blob.clone());
    /// assert_eq!(counter.key(), Some(blob.url()));
    /// # }
    /// ```
    fn key(&self) -> Option<String> {
        None
    }
}

/// What the closure passed to [`update`] decided for the value it was shown.
///
/// ```no_run
/// use azstore::update::{BlobJson, Decision, UpdatePolicy, update};
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
/// use azstore::update::{BlobJson, Change, Decision, UpdatePolicy, update};
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
/// use azstore::update::{BlobJson, Decision, UpdatePolicy, update};
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
