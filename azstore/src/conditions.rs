//! Optimistic-concurrency conditions shared by every service.
//!
//! Azure Storage is last-writer-wins unless a request carries a condition. In azstore the
//! unconditional write is still available, but you ask for it by name: [`Conditions::none()`].
//!
//! ```
//! use azstore::{Conditions, ETag};
//! let etag = ETag::new("\"0x8DCB1\"");
//! let replace_if_unchanged = Conditions::if_match(&etag);
//! let create_only = Conditions::if_not_exists();
//! let last_writer_wins = Conditions::none();
//! # let _ = (replace_if_unchanged, create_only, last_writer_wins);
//! ```

use std::fmt;

use time::OffsetDateTime;

use crate::error::{Error, Result};

/// An entity tag: an opaque version identifier. Compare them, store them, send them back;
/// never parse them (Table ETags look like `W/"datetime'2026-11-22T00%3A04%3A18.08Z'"`).
///
/// An ETag is never empty on the wire: the service ignores an empty `If-Match`, which would
/// turn a conditional write into last-writer-wins. A request carrying an empty or blank ETag,
/// or one with CR, LF, NUL or another character that cannot go into a header, is refused
/// with [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before anything is sent.
/// [`ETag::parse`] checks the same at construction.
///
/// ```
/// use azstore::ETag;
/// assert!(ETag::parse("\"0x8DCB1\"").is_ok());
/// assert!(ETag::parse("").is_err());
/// assert!(ETag::parse("\"0x1\"\r\nx-ms-meta-evil: 1").is_err());
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct ETag(String);

impl ETag {
    /// Wraps an ETag exactly as the service returned it (quotes included). Not checked here:
    /// an invalid one is refused when a request would carry it (see the type docs).
    ///
    /// ```
    /// // An ETag kept from an earlier read, e.g. in a database row.
    /// let etag = azstore::ETag::new("\"0x8DCB1A2B3C4D5E6\"");
    /// assert_eq!(etag.as_str(), "\"0x8DCB1A2B3C4D5E6\"");
    /// ```
    pub fn new(s: impl Into<String>) -> ETag {
        ETag(s.into())
    }

    /// Wraps an ETag, refusing (with `InvalidInput`) one that is empty or blank or holds a
    /// character that cannot be sent in an HTTP header.
    ///
    /// ```
    /// use azstore::ETag;
    /// // An ETag from a web form or a message: check it before trusting it in If-Match.
    /// let etag = ETag::parse("\"0x8DCB1\"")?;
    /// assert!(ETag::parse("   ").is_err());
    /// # let _ = etag; Ok::<(), azstore::Error>(())
    /// ```
    pub fn parse(s: impl Into<String>) -> Result<ETag> {
        let s = s.into();
        if s.trim().is_empty() {
            return Err(Error::invalid_input(
                "an ETag cannot be empty (an empty If-Match would make a write unconditional)",
            ));
        }
        if http::HeaderValue::from_str(&s).is_err() {
            return Err(Error::invalid_input(
                "an ETag cannot contain CR, LF, NUL or other control characters",
            ));
        }
        Ok(ETag(s))
    }

    /// The ETag as sent on the wire.
    ///
    /// ```
    /// let etag = azstore::ETag::parse("W/\"datetime'2026-11-22T00%3A04%3A18.08Z'\"")?;
    /// assert!(etag.as_str().starts_with("W/"));
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ETag({})", self.0)
    }
}

impl fmt::Display for ETag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<&str> for ETag {
    fn from(s: &str) -> ETag {
        ETag(s.to_string())
    }
}

/// A lease id (a GUID string) proving the holder of a lease.
///
/// ```
/// use azstore::{Conditions, LeaseId};
/// let id = LeaseId::random();
/// let writes_as_holder = Conditions::lease(&id);
/// assert_eq!(writes_as_holder.lease_id, Some(id));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct LeaseId(String);

impl LeaseId {
    /// Wraps a lease id. It must be a GUID (`InvalidInput` otherwise).
    ///
    /// ```
    /// use azstore::LeaseId;
    /// // A lease id handed over by another process, e.g. in an environment variable.
    /// let id = LeaseId::new("6a1f9b2c-3d4e-4f50-8a6b-7c8d9e0f1a2b")?;
    /// assert!(LeaseId::new("not-a-guid").is_err());
    /// # let _ = id; Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(s: impl Into<String>) -> Result<LeaseId> {
        let s = s.into();
        uuid::Uuid::parse_str(&s).map_err(|_| Error::invalid_input("lease id must be a GUID"))?;
        Ok(LeaseId(s))
    }

    /// A new random lease id (for a proposed id on acquire or change).
    ///
    /// ```
    /// use azstore::LeaseId;
    /// assert_ne!(LeaseId::random(), LeaseId::random());
    /// ```
    pub fn random() -> LeaseId {
        LeaseId(uuid::Uuid::new_v4().to_string())
    }

    /// Wraps an id returned by the service without validation.
    pub(crate) fn from_service(s: String) -> LeaseId {
        LeaseId(s)
    }

    /// The id as sent on the wire.
    ///
    /// ```
    /// let id = azstore::LeaseId::random();
    /// assert_eq!(id.as_str().len(), 36);
    /// ```
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for LeaseId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What an `If-Match` / `If-None-Match` header holds: a specific ETag or `*`.
///
/// Where a condition is required (Table update, merge and delete), this is what you pass:
/// the ETag you read (`&etag` converts) for an optimistic write, or [`MatchCondition::Any`]
/// to force it, so an unconditional write is always a visible choice.
///
/// ```
/// use azstore::{ETag, MatchCondition};
/// let etag = ETag::new("W/\"datetime'2026-11-22T00%3A04%3A18.08Z'\"");
/// let only_this_version: MatchCondition = (&etag).into();
/// assert_eq!(only_this_version.header_value(), etag.as_str());
/// assert_eq!(MatchCondition::Any.header_value(), "*");
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MatchCondition {
    /// `*`: any existing version.
    Any,
    /// One specific version.
    ETag(ETag),
}

impl MatchCondition {
    /// The header value.
    ///
    /// ```
    /// assert_eq!(azstore::MatchCondition::Any.header_value(), "*");
    /// ```
    pub fn header_value(&self) -> &str {
        match self {
            MatchCondition::Any => "*",
            MatchCondition::ETag(e) => e.as_str(),
        }
    }
}

impl From<ETag> for MatchCondition {
    fn from(e: ETag) -> MatchCondition {
        MatchCondition::ETag(e)
    }
}

impl From<&ETag> for MatchCondition {
    fn from(e: &ETag) -> MatchCondition {
        MatchCondition::ETag(e.clone())
    }
}

/// The conditions of one request. [`Conditions::none()`] (also `Default`) means
/// *last writer wins*. Combine with the builder methods:
/// `Conditions::if_match(&etag).with_lease(&lease_id)`.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient, lease: azstore::LeaseId) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let current = blob.get_properties().await?;
/// // Our lease, and nobody changed the blob since the read.
/// let conditions = Conditions::if_match(&current.etag).with_lease(&lease);
/// blob.upload("next version", &conditions).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[must_use]
pub struct Conditions {
    /// `If-Match`.
    pub if_match: Option<MatchCondition>,
    /// `If-None-Match`.
    pub if_none_match: Option<MatchCondition>,
    /// `If-Modified-Since`.
    pub if_modified_since: Option<OffsetDateTime>,
    /// `If-Unmodified-Since`.
    pub if_unmodified_since: Option<OffsetDateTime>,
    /// `x-ms-if-tags`: a SQL-like expression over blob index tags, e.g. `"status" = 'done'`.
    pub if_tags: Option<String>,
    /// `x-ms-lease-id`: required to write a leased blob, container delete, file.
    pub lease_id: Option<LeaseId>,
}

/// Which conditions an operation accepts; used to refuse the others before sending.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Allowed {
    pub etag: bool,
    pub dates: bool,
    pub if_modified_since_only: bool,
    pub tags: bool,
    pub lease: bool,
}

impl Allowed {
    /// If-Match, If-None-Match, both dates, tags, lease (most blob operations).
    pub const ALL: Allowed = Allowed {
        etag: true,
        dates: true,
        if_modified_since_only: false,
        tags: true,
        lease: true,
    };
    /// Nothing but a lease id.
    pub const LEASE_ONLY: Allowed = Allowed {
        etag: false,
        dates: false,
        if_modified_since_only: false,
        tags: false,
        lease: true,
    };
}

impl Conditions {
    /// No condition: the write replaces whatever is there (last writer wins).
    ///
    /// ```
    /// assert!(azstore::Conditions::none().is_unconditional());
    /// ```
    pub fn none() -> Conditions {
        Conditions::default()
    }

    /// Only if the current version is `etag` (optimistic update): 412 `ConditionNotMet`
    /// when someone wrote since.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let read = blob.download().await?;
    /// let mut text = String::from_utf8_lossy(&read.body).into_owned();
    /// text.push_str("\none more line");
    /// match blob.upload(text, &Conditions::if_match(&read.properties.etag)).await {
    ///     Err(e) if e.is_precondition_failed() => println!("changed since the read: start over"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn if_match(etag: &ETag) -> Conditions {
        Conditions::none().and_if_match(etag)
    }

    /// Only if the resource exists (`If-Match: *`): a write that must not create.
    ///
    /// ```
    /// use azstore::{Conditions, MatchCondition};
    /// assert_eq!(Conditions::if_exists().if_match, Some(MatchCondition::Any));
    /// ```
    pub fn if_exists() -> Conditions {
        Conditions {
            if_match: Some(MatchCondition::Any),
            ..Conditions::none()
        }
    }

    /// Only if the current version is not `etag` (reads: 304 when unchanged).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, cached: azstore::ETag) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match blob.download_if(&Conditions::if_none_match(&cached)).await {
    ///     Err(e) if e.is_not_modified() => println!("our copy is current"),
    ///     other => println!("new content: {} bytes", other?.body.len()),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn if_none_match(etag: &ETag) -> Conditions {
        Conditions {
            if_none_match: Some(etag.into()),
            ..Conditions::none()
        }
    }

    /// Only if nothing exists yet (`If-None-Match: *`): create-only, the "designated create".
    /// 409 `BlobAlreadyExists` when someone else created it first.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match blob.upload("initial", &Conditions::if_not_exists()).await {
    ///     Err(e) if e.is_conflict() => println!("already initialised"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn if_not_exists() -> Conditions {
        Conditions {
            if_none_match: Some(MatchCondition::Any),
            ..Conditions::default()
        }
    }

    /// Only if modified after `t`.
    ///
    /// ```
    /// use azstore::{Conditions, OffsetDateTime};
    /// let an_hour_ago = OffsetDateTime::now_utc() - time::Duration::hours(1);
    /// let fresh_only = Conditions::if_modified_since(an_hour_ago);
    /// # let _ = fresh_only;
    /// ```
    pub fn if_modified_since(t: OffsetDateTime) -> Conditions {
        Conditions::none().and_if_modified_since(t)
    }

    /// Only if not modified after `t`.
    ///
    /// ```
    /// use azstore::{Conditions, OffsetDateTime};
    /// let cutoff = time::macros::datetime!(2026-11-01 00:00:00 UTC);
    /// let untouched_since = Conditions::if_unmodified_since(cutoff);
    /// # let _ = (untouched_since, OffsetDateTime::now_utc());
    /// ```
    pub fn if_unmodified_since(t: OffsetDateTime) -> Conditions {
        Conditions::none().and_if_unmodified_since(t)
    }

    /// Only if the blob's index tags satisfy `expr` (`x-ms-if-tags`).
    ///
    /// ```
    /// let only_drafts = azstore::Conditions::if_tags(r#""status" = 'draft'"#);
    /// assert!(only_drafts.if_tags.is_some());
    /// ```
    pub fn if_tags(expr: impl Into<String>) -> Conditions {
        Conditions::none().and_if_tags(expr)
    }

    /// Only with this lease (write to a leased resource).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, lease: azstore::LeaseId) -> azstore::Result<()> {
    /// blob.upload("held", &azstore::Conditions::lease(&lease)).await?;
    /// # Ok(()) }
    /// ```
    pub fn lease(id: &LeaseId) -> Conditions {
        Conditions::none().with_lease(id)
    }

    /// Adds an `If-Match`.
    ///
    /// ```
    /// use azstore::{Conditions, ETag, LeaseId};
    /// let c = Conditions::lease(&LeaseId::random()).and_if_match(&ETag::new("\"0x1\""));
    /// assert!(c.if_match.is_some() && c.lease_id.is_some());
    /// ```
    pub fn and_if_match(mut self, etag: &ETag) -> Conditions {
        self.if_match = Some(etag.into());
        self
    }

    /// Adds a lease id to these conditions (required to write a leased resource).
    ///
    /// ```
    /// use azstore::{Conditions, ETag, LeaseId};
    /// let lease = LeaseId::random();
    /// let c = Conditions::if_match(&ETag::new("\"0x1\"")).with_lease(&lease);
    /// assert_eq!(c.lease_id, Some(lease));
    /// ```
    pub fn with_lease(mut self, id: &crate::conditions::LeaseId) -> Self {
        self.lease_id = Some(id.clone());
        self
    }

    /// Adds an `If-Modified-Since`.
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId, OffsetDateTime};
    /// let c = Conditions::lease(&LeaseId::random()).and_if_modified_since(OffsetDateTime::now_utc());
    /// assert!(c.if_modified_since.is_some());
    /// ```
    pub fn and_if_modified_since(mut self, v: OffsetDateTime) -> Self {
        self.if_modified_since = Some(v);
        self
    }

    /// Adds an `If-Unmodified-Since`.
    ///
    /// ```
    /// use azstore::{Conditions, OffsetDateTime};
    /// let c = Conditions::if_tags(r#""stage" = 'draft'"#).and_if_unmodified_since(OffsetDateTime::now_utc());
    /// assert!(c.if_unmodified_since.is_some());
    /// ```
    pub fn and_if_unmodified_since(mut self, v: OffsetDateTime) -> Self {
        self.if_unmodified_since = Some(v);
        self
    }

    /// Adds an `x-ms-if-tags` expression.
    ///
    /// ```
    /// use azstore::{Conditions, ETag};
    /// let c = Conditions::if_match(&ETag::new("\"0x1\"")).and_if_tags(r#""owner" = 'a'"#);
    /// assert!(c.if_tags.is_some());
    /// ```
    pub fn and_if_tags(mut self, v: impl Into<String>) -> Self {
        self.if_tags = Some(v.into());
        self
    }

    /// True when no condition is set (last writer wins).
    ///
    /// ```
    /// use azstore::{Conditions, ETag};
    /// assert!(Conditions::none().is_unconditional());
    /// assert!(!Conditions::if_match(&ETag::new("\"0x1\"")).is_unconditional());
    /// ```
    pub fn is_unconditional(&self) -> bool {
        *self == Conditions::default()
    }

    /// Refuses conditions an operation does not accept, naming them.
    pub(crate) fn check(&self, allowed: Allowed, operation: &str) -> Result<()> {
        let mut refused = Vec::new();
        if !allowed.etag {
            if self.if_match.is_some() {
                refused.push("If-Match");
            }
            if self.if_none_match.is_some() {
                refused.push("If-None-Match");
            }
        }
        if !allowed.dates && !allowed.if_modified_since_only && self.if_modified_since.is_some() {
            refused.push("If-Modified-Since");
        }
        if !allowed.dates && self.if_unmodified_since.is_some() {
            refused.push("If-Unmodified-Since");
        }
        if !allowed.tags && self.if_tags.is_some() {
            refused.push("the blob index tags condition (if tags)");
        }
        if !allowed.lease && self.lease_id.is_some() {
            refused.push("lease id");
        }
        if refused.is_empty() {
            Ok(())
        } else {
            Err(Error::invalid_input(format!(
                "{operation} does not accept {}",
                refused.join(", ")
            )))
        }
    }
}

/// A listed ETag. Azure sends the XML `<Etag>` without quotes (`0x8D6D41718FC160C`) but the
/// `ETag` header with them (`"0x8D6D41718FC160C"`), as the recordings of live Azure traffic
/// show; azstore quotes the listed one so that it equals the header ETag of the same version
/// and an `If-Match` built from a listing is sent quoted. Already quoted or weak values are
/// kept as they are.
pub(crate) fn listed_etag(s: Option<String>) -> Option<ETag> {
    s.filter(|s| !s.is_empty())
        .map(|s| ETag::new(quote_etag(s.trim())))
}

pub(crate) fn quote_etag(s: &str) -> String {
    if s.starts_with('"') || s.starts_with("W/") || s == "*" {
        s.to_string()
    } else {
        format!("\"{s}\"")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checks() {
        let e = ETag::new("\"0x1\"");
        let l = LeaseId::random();
        let c = Conditions::if_match(&e).with_lease(&l);
        assert!(Conditions::none().is_unconditional());
        let err = c
            .check(Allowed::LEASE_ONLY, "Get Container Properties")
            .unwrap_err();
        assert!(err.message().contains("If-Match"));
        assert!(c.check(Allowed::ALL, "Put Blob").is_ok());
        assert!(LeaseId::new("nope").is_err());
        assert_eq!(MatchCondition::Any.header_value(), "*");
        assert_eq!(MatchCondition::from(&e), MatchCondition::ETag(e.clone()));
    }
}
