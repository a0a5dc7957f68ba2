//! Lease operations on blobs and containers ([Lease Blob] and [Lease Container]).
//!
//! [Lease Blob]: https://learn.microsoft.com/rest/api/storageservices/lease-blob
//! [Lease Container]: https://learn.microsoft.com/rest/api/storageservices/lease-container

use crate::blob::{BlobClient, ContainerClient};
use crate::conditions::{Allowed, Conditions, LeaseId};
use crate::error::Result;
use crate::http::{Method, Request};
use crate::lease::{
    BreakPeriod, Leasable, LeaseBroken, LeaseDuration, LeaseOp, LeaseReleased, LeaseResult,
};

/// Lease Blob accepts If-Match, If-None-Match, both dates and tags; the lease id is a
/// parameter of the operation, not a condition.
const BLOB_LEASE: Allowed = Allowed {
    lease: false,
    ..Allowed::ALL
};

/// Lease Container accepts only the date conditions.
const CONTAINER_LEASE: Allowed = Allowed {
    etag: false,
    dates: true,
    if_modified_since_only: false,
    tags: false,
    lease: false,
};

/// Sends one lease operation built by `request` and parses the answer with `parse`: the
/// shared body of every blob and container lease method.
async fn send_lease<T>(
    pipeline: &crate::http::Pipeline,
    request: Result<Request>,
    parse: impl FnOnce(&crate::http::Response) -> Result<T>,
) -> Result<T> {
    let resp = pipeline.send(request?).await?;
    parse(&resp)
}

impl BlobClient {
    fn lease_request(&self, op: &LeaseOp<'_>, conditions: &Conditions) -> Result<Request> {
        conditions.check(BLOB_LEASE, "Lease Blob")?;
        Ok(op.apply(self.request(Method::Put).conditions(conditions)))
    }

    /// Acquires a lease for `duration`. `proposed` sets the lease id (a random one is proposed
    /// otherwise, which makes a retried acquire safe). Fails with 409 `LeaseAlreadyPresent`
    /// when someone else holds a lease, 409 `LeaseIsBreakingAndCannotBeAcquired` while one is
    /// breaking. Conditions: If-Match, If-None-Match, If-(Un)Modified-Since, tags.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::LeaseDuration;
    /// let lease = blob
    ///     .acquire_lease(LeaseDuration::seconds(15)?, None, &Conditions::none())
    ///     .await?;
    /// blob.upload("new", &Conditions::lease(&lease.lease_id)).await?;
    /// blob.release_lease(&lease.lease_id, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_lease(
        &self,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
        conditions: &Conditions,
    ) -> Result<LeaseResult> {
        let random = LeaseId::random();
        let proposed = proposed.unwrap_or(&random);
        let req = self.lease_request(&LeaseOp::Acquire { duration, proposed }, conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(proposed))
        })
        .await
    }

    /// Renews the lease `id`, restarting its duration. A lease that expired can be renewed as
    /// long as nobody else leased or (on Azure) modified the blob in between. Refusals:
    /// 409 `LeaseIdMismatchWithLeaseOperation` (someone else's lease),
    /// `LeaseIsBrokenAndCannotBeRenewed`, `LeaseNotPresentWithLeaseOperation`.
    pub async fn renew_lease(&self, id: &LeaseId, conditions: &Conditions) -> Result<LeaseResult> {
        let req = self.lease_request(&LeaseOp::Renew(id), conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(id))
        })
        .await
    }

    /// Changes the active lease id `id` into `proposed`.
    pub async fn change_lease(
        &self,
        id: &LeaseId,
        proposed: &LeaseId,
        conditions: &Conditions,
    ) -> Result<LeaseResult> {
        let req = self.lease_request(&LeaseOp::Change { id, proposed }, conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(proposed))
        })
        .await
    }

    /// Releases the lease `id`, so another client can acquire one at once.
    pub async fn release_lease(
        &self,
        id: &LeaseId,
        conditions: &Conditions,
    ) -> Result<LeaseReleased> {
        let req = self.lease_request(&LeaseOp::Release(id), conditions);
        send_lease(&self.pipeline, req, |r| Ok(LeaseReleased::from_response(r))).await
    }

    /// Breaks the active lease (no lease id needed). `period` is how long the lease keeps
    /// protecting the blob; `None` is the service default (the rest of a fixed lease, at once
    /// for an infinite one). Returns the time left until the lease is broken.
    pub async fn break_lease(
        &self,
        period: Option<BreakPeriod>,
        conditions: &Conditions,
    ) -> Result<LeaseBroken> {
        let req = self.lease_request(&LeaseOp::Break(period), conditions);
        send_lease(&self.pipeline, req, LeaseBroken::from_response).await
    }
}

impl ContainerClient {
    fn lease_request(&self, op: &LeaseOp<'_>, conditions: &Conditions) -> Result<Request> {
        conditions.check(CONTAINER_LEASE, "Lease Container")?;
        Ok(op.apply(self.request(Method::Put).conditions(conditions)))
    }

    /// Acquires a container lease (it guards only Delete Container). Conditions:
    /// If-Modified-Since and If-Unmodified-Since only; others are refused before sending.
    pub async fn acquire_lease(
        &self,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
        conditions: &Conditions,
    ) -> Result<LeaseResult> {
        let random = LeaseId::random();
        let proposed = proposed.unwrap_or(&random);
        let req = self.lease_request(&LeaseOp::Acquire { duration, proposed }, conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(proposed))
        })
        .await
    }

    /// Renews the container lease `id`.
    pub async fn renew_lease(&self, id: &LeaseId, conditions: &Conditions) -> Result<LeaseResult> {
        let req = self.lease_request(&LeaseOp::Renew(id), conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(id))
        })
        .await
    }

    /// Changes the container lease id `id` into `proposed`.
    pub async fn change_lease(
        &self,
        id: &LeaseId,
        proposed: &LeaseId,
        conditions: &Conditions,
    ) -> Result<LeaseResult> {
        let req = self.lease_request(&LeaseOp::Change { id, proposed }, conditions);
        send_lease(&self.pipeline, req, |r| {
            LeaseResult::from_response(r, Some(proposed))
        })
        .await
    }

    /// Releases the container lease `id`.
    pub async fn release_lease(
        &self,
        id: &LeaseId,
        conditions: &Conditions,
    ) -> Result<LeaseReleased> {
        let req = self.lease_request(&LeaseOp::Release(id), conditions);
        send_lease(&self.pipeline, req, |r| Ok(LeaseReleased::from_response(r))).await
    }

    /// Breaks the container lease; returns the time left until it is broken.
    pub async fn break_lease(
        &self,
        period: Option<BreakPeriod>,
        conditions: &Conditions,
    ) -> Result<LeaseBroken> {
        let req = self.lease_request(&LeaseOp::Break(period), conditions);
        send_lease(&self.pipeline, req, LeaseBroken::from_response).await
    }
}

/// `Leasable` for a client whose inherent lease methods take `Conditions`: the trait's
/// operations are those methods without conditions.
macro_rules! leasable_without_conditions {
    ($client:ty, |$c:ident| $target:expr) => {
        impl Leasable for $client {
            fn lease_target(&self) -> String {
                let $c = self;
                $target
            }

            async fn lease_acquire(
                &self,
                duration: LeaseDuration,
                proposed: &LeaseId,
            ) -> Result<LeaseResult> {
                self.acquire_lease(duration, Some(proposed), &Conditions::none())
                    .await
            }

            async fn lease_renew(&self, id: &LeaseId) -> Result<LeaseResult> {
                self.renew_lease(id, &Conditions::none()).await
            }

            async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
                self.change_lease(id, proposed, &Conditions::none()).await
            }

            async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
                self.release_lease(id, &Conditions::none()).await
            }

            async fn lease_break(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
                self.break_lease(period, &Conditions::none()).await
            }
        }
    };
}

leasable_without_conditions!(BlobClient, |c| format!("blob {}/{}", c.container, c.name));
leasable_without_conditions!(ContainerClient, |c| format!("container {}", c.name));
