//! Immutable storage (WORM): a blob's time-based immutability policy and legal hold, on
//! containers or accounts with version-level immutability enabled. While either holds, the
//! blob (or the version this client addresses) can be read but not changed or deleted.
//!
//! ```no_run
//! # async fn f(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
//! use azstore::blob::{ImmutabilityPolicy, ImmutabilityPolicyMode};
//! let until = time::OffsetDateTime::now_utc() + time::Duration::days(30);
//! // Unlocked: can still be shortened or removed; then locked for compliance.
//! let policy = ImmutabilityPolicy::new(until, ImmutabilityPolicyMode::Unlocked);
//! blob.set_immutability_policy(&policy, &azstore::Conditions::none()).await?;
//! blob.set_immutability_policy(&policy.locked(), &azstore::Conditions::none()).await?;
//! blob.set_legal_hold(true).await?;
//! # Ok(()) }
//! ```

use crate::blob::client::BlobClient;
use crate::blob::models::ImmutabilityPolicy;
use crate::conditions::Conditions;
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::StorageRequest;

impl BlobClient {
    /// Set Blob Immutability Policy (`comp=immutabilityPolicies`): sets, extends or (while
    /// unlocked) shortens the policy, or locks it with
    /// [`ImmutabilityPolicyMode::Locked`](crate::blob::ImmutabilityPolicyMode::Locked). Returns the policy the service now holds. Accepts
    /// only `If-Unmodified-Since`. Applies to the version or snapshot this client addresses.
    pub async fn set_immutability_policy(
        &self,
        policy: &ImmutabilityPolicy,
        conditions: &Conditions,
    ) -> Result<ImmutabilityPolicy> {
        let only_unmodified_since = Conditions {
            if_unmodified_since: conditions.if_unmodified_since,
            ..Conditions::none()
        };
        if *conditions != only_unmodified_since {
            return Err(Error::invalid_input(
                "Set Blob Immutability Policy accepts only If-Unmodified-Since",
            ));
        }
        if policy.expiry.unix_timestamp() <= 0 {
            return Err(Error::invalid_input(
                "an immutability policy expires after 1970",
            ));
        }
        let req = self
            .request(Method::Put)
            .query("comp", "immutabilityPolicies")
            .header(
                "x-ms-immutability-policy-until-date",
                crate::time_fmt::http_date(policy.expiry),
            )
            .header("x-ms-immutability-policy-mode", policy.mode.as_str())
            .conditions(conditions);
        let resp = self.pipeline.send(req).await?;
        ImmutabilityPolicy::from_headers(&resp.headers)?.ok_or_else(|| {
            Error::decode("Set Blob Immutability Policy response lacks the policy it set")
        })
    }

    /// Delete Blob Immutability Policy: removes an **unlocked** policy (a locked one cannot
    /// be removed; the service refuses).
    pub async fn delete_immutability_policy(&self) -> Result<()> {
        let req = self
            .request(Method::Delete)
            .query("comp", "immutabilityPolicies");
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Set Blob Legal Hold (`comp=legalhold`): while on, the blob cannot be changed or
    /// deleted, whatever its policy says. Returns the hold the service now holds.
    pub async fn set_legal_hold(&self, hold: bool) -> Result<bool> {
        let req = self
            .request(Method::Put)
            .query("comp", "legalhold")
            .header("x-ms-legal-hold", hold.to_string());
        let resp = self.pipeline.send(req).await?;
        match resp.headers.get("x-ms-legal-hold").map(str::trim) {
            Some(v) if v.eq_ignore_ascii_case("true") => Ok(true),
            Some(v) if v.eq_ignore_ascii_case("false") => Ok(false),
            _ => Err(Error::decode(
                "Set Blob Legal Hold response lacks a valid x-ms-legal-hold",
            )),
        }
    }
}
