//! Lifecycle of a blob: Set Blob Tier (with rehydrate priority) and Seal Append Blob.

use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::write_options::AccessTier;
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::StorageRequest;

/// How fast an archived blob is brought back online (`x-ms-rehydrate-priority`).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{AccessTier, RehydratePriority, SetTierOptions};
/// let options = SetTierOptions::default().rehydrate_priority(RehydratePriority::Standard);
/// blob.set_tier(AccessTier::Cool, &options).await?;
/// # let _ = Conditions::none();
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum RehydratePriority {
    /// Up to 15 hours.
    Standard,
    /// Under an hour for objects below 10 GiB, at a higher price.
    High,
}

impl RehydratePriority {
    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            RehydratePriority::Standard => "Standard",
            RehydratePriority::High => "High",
        }
    }
}

/// What Set Blob Tier did.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::{AccessTier, SetTierOptions, TierChange};
/// match blob.set_tier(AccessTier::Cool, &SetTierOptions::default().conditions(Conditions::none())).await? {
///     TierChange::Done => println!("now Cool"),
///     TierChange::Pending => println!("in progress"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TierChange {
    /// The tier changed at once (200 OK).
    Done,
    /// The change was accepted and is in progress (202 Accepted): an archived blob is being
    /// rehydrated; Get Blob Properties shows its archive status meanwhile.
    Pending,
}

/// Options of [`BlobClient::set_tier`].
///
/// ```
/// use azstore::Conditions;
/// use azstore::blob::SetTierOptions;
/// let only_if_tagged = SetTierOptions::default().conditions(Conditions::if_tags(r#""retention" = 'short'"#));
/// # let _ = only_if_tagged;
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct SetTierOptions {
    /// A lease id and `x-ms-if-tags` are accepted (the service takes no ETag or date
    /// condition on Set Blob Tier).
    pub conditions: Conditions,
    /// Rehydrate priority when moving out of Archive.
    pub rehydrate_priority: Option<RehydratePriority>,
}

impl SetTierOptions {
    /// A lease id and `x-ms-if-tags` (the only conditions Set Blob Tier takes; default:
    /// none).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::SetTierOptions;
    /// let options = SetTierOptions::default().conditions(Conditions::lease(&LeaseId::random()));
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// How fast a blob leaving Archive is rehydrated: [`RehydratePriority::Standard`] (up
    /// to 15 hours) or [`RehydratePriority::High`] (under an hour below 10 GiB, at a
    /// higher price). Default: none sent, which the service treats as Standard.
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::{RehydratePriority, SetTierOptions};
    /// let urgent = SetTierOptions::default().conditions(Conditions::none()).rehydrate_priority(RehydratePriority::High);
    /// # let _ = urgent;
    /// ```
    pub fn rehydrate_priority(mut self, v: RehydratePriority) -> Self {
        self.rehydrate_priority = Some(v);
        self
    }
}

impl BlobClient {
    /// Set Blob Tier: moves a block blob between Hot, Cool, Cold and Archive (or a premium
    /// page blob between `P*` tiers). Does not change the ETag. Leaving Archive is
    /// asynchronous: the answer is then [`TierChange::Pending`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{AccessTier, RehydratePriority, SetTierOptions, TierChange};
    /// // Bring an archived blob back, fast.
    /// let options = SetTierOptions::default().conditions(Conditions::none()).rehydrate_priority(RehydratePriority::High);
    /// if blob.set_tier(AccessTier::Hot, &options).await? == TierChange::Pending {
    ///     println!("rehydrating: readable within the hour");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn set_tier(&self, tier: AccessTier, options: &SetTierOptions) -> Result<TierChange> {
        options
            .conditions
            .check(crate::blob::tags::TAGS_ONLY, "Set Blob Tier")?;
        tier.validate()?;
        let req = self
            .request(Method::Put)
            .query("comp", "tier")
            .header("x-ms-access-tier", tier.as_str())
            .header_opt(
                "x-ms-rehydrate-priority",
                options.rehydrate_priority.map(RehydratePriority::as_str),
            )
            .conditions(&options.conditions);
        let resp = self.pipeline.send(req).await?;
        match resp.status {
            200 => Ok(TierChange::Done),
            202 => Ok(TierChange::Pending),
            s => Err(Error::decode(format!(
                "Set Blob Tier answered {s}, expected 200 or 202"
            ))),
        }
    }

    /// Seal Append Blob: makes the append blob read-only (later appends fail with 409
    /// `BlobIsSealed`). Accepts ETag and date conditions and a lease id, and with
    /// `append_position` seals only if the blob is exactly that long (412
    /// `AppendPositionConditionNotMet`), so a writer can seal exactly what it wrote.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// // Seal the log at the length we wrote: nobody can append after that.
    /// let len = blob.get_properties().await?.content_length;
    /// blob.seal(&Conditions::none(), Some(len)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn seal(
        &self,
        conditions: &Conditions,
        append_position: Option<u64>,
    ) -> Result<WriteResult> {
        conditions.check(
            Allowed {
                tags: false,
                ..Allowed::ALL
            },
            "Seal Append Blob",
        )?;
        let req = self
            .write_request(Method::Put, "Seal Append Blob")?
            .query("comp", "seal")
            .conditions(conditions)
            .header_opt(
                "x-ms-blob-condition-appendpos",
                append_position.map(|p| p.to_string()),
            );
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }
}
