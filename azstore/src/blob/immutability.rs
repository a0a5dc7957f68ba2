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

use time::OffsetDateTime;

use crate::blob::client::BlobClient;
use crate::conditions::Conditions;
use crate::error::{Error, Result};
use crate::http::{Headers, Method};

/// Whether an immutability policy may still be changed (`x-ms-immutability-policy-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ImmutabilityPolicyMode {
    /// The expiry may be shortened or extended and the policy deleted (`Unlocked`).
    Unlocked,
    /// The expiry may only be extended; the policy cannot be deleted (`Locked`).
    Locked,
}

impl ImmutabilityPolicyMode {
    fn as_str(self) -> &'static str {
        match self {
            ImmutabilityPolicyMode::Unlocked => "Unlocked",
            ImmutabilityPolicyMode::Locked => "Locked",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<ImmutabilityPolicyMode> {
        match s.trim() {
            v if v.eq_ignore_ascii_case("unlocked") => Some(ImmutabilityPolicyMode::Unlocked),
            v if v.eq_ignore_ascii_case("locked") => Some(ImmutabilityPolicyMode::Locked),
            _ => None,
        }
    }
}

/// A blob's time-based retention: no change or delete before `expiry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImmutabilityPolicy {
    /// Until when the blob is immutable (`x-ms-immutability-policy-until-date`; the service
    /// keeps whole seconds).
    pub expiry: OffsetDateTime,
    /// Unlocked or locked.
    pub mode: ImmutabilityPolicyMode,
}

impl ImmutabilityPolicy {
    /// A policy until `expiry` in `mode`.
    pub fn new(expiry: OffsetDateTime, mode: ImmutabilityPolicyMode) -> ImmutabilityPolicy {
        ImmutabilityPolicy { expiry, mode }
    }

    /// The same policy, locked.
    #[must_use]
    pub fn locked(self) -> ImmutabilityPolicy {
        ImmutabilityPolicy {
            mode: ImmutabilityPolicyMode::Locked,
            ..self
        }
    }

    /// The policy a response's headers describe, if they carry one.
    pub(crate) fn from_headers(h: &Headers) -> Result<Option<ImmutabilityPolicy>> {
        let Some(until) = h.get("x-ms-immutability-policy-until-date") else {
            return Ok(None);
        };
        let expiry = crate::time_fmt::parse_http_date(until).ok_or_else(|| {
            Error::decode("response header x-ms-immutability-policy-until-date is malformed")
        })?;
        let mode = h
            .get("x-ms-immutability-policy-mode")
            .and_then(ImmutabilityPolicyMode::parse)
            .ok_or_else(|| {
                Error::decode(
                    "response header x-ms-immutability-policy-mode is missing or malformed",
                )
            })?;
        Ok(Some(ImmutabilityPolicy { expiry, mode }))
    }
}

impl BlobClient {
    /// Set Blob Immutability Policy (`comp=immutabilityPolicies`): sets, extends or (while
    /// unlocked) shortens the policy, or locks it with
    /// [`ImmutabilityPolicyMode::Locked`]. Returns the policy the service now holds. Accepts
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
