//! Read-modify-write: optimistic updates that never lose a write.
//!
//! A [`Versioned`] resource can be read with its ETag, replaced conditioned on that ETag,
//! created conditioned on absence, and deleted conditioned on the ETag. The `update`
//! combinator (built on this trait) retries on conflicts with backoff.

use std::future::Future;

use crate::conditions::ETag;
use crate::error::Result;

/// The current state of a versioned resource.
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
pub trait Versioned: Send + Sync {
    /// The value type.
    type Value: Send + Sync;

    /// Reads the current value and ETag; `Ok(None)` when the resource does not exist.
    fn read(&self) -> impl Future<Output = Result<Option<Current<Self::Value>>>> + Send;

    /// Replaces the value only if the current ETag is `etag` (If-Match), storing `write_id`
    /// with it. Returns the new ETag.
    fn replace(
        &self,
        value: &Self::Value,
        etag: &ETag,
        write_id: &str,
    ) -> impl Future<Output = Result<ETag>> + Send;

    /// Creates the value only if nothing exists (If-None-Match `*` or insert), storing
    /// `write_id` with it. Returns the new ETag.
    fn create(
        &self,
        value: &Self::Value,
        write_id: &str,
    ) -> impl Future<Output = Result<ETag>> + Send;

    /// Deletes the resource only if the current ETag is `etag`.
    fn delete(&self, etag: &ETag) -> impl Future<Output = Result<()>> + Send;
}
