//! Lease operations on blobs and containers ([Lease Blob] and [Lease Container]), and their
//! [`Leasable`] contract. Both send through one private helper (`Target::send`) that checks
//! the conditions the operation accepts and builds the request with the lease module's `send`,
//! as shares and files do.
//!
//! [Lease Blob]: https://learn.microsoft.com/rest/api/storageservices/lease-blob
//! [Lease Container]: https://learn.microsoft.com/rest/api/storageservices/lease-container

use crate::blob::{BlobClient, ContainerClient};
use crate::conditions::{Allowed, Conditions, LeaseId};
use crate::error::{ErrorCode, Result};
use crate::http::{Method, Pipeline, Request};
use crate::lease::{BreakPeriod, Leasable, LeaseBroken, LeaseDuration, LeaseReleased, LeaseResult};
use crate::storage::{LeaseOp, LeaseReply, StorageRequest};

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

/// A blob's or container's lease requests: where they go and which conditions they accept.
struct Target<'a> {
    pipeline: &'a Pipeline,
    base: Request,
    operation: &'static str,
    allowed: Allowed,
}

impl Target<'_> {
    /// Sends `op` with `conditions` (checked first: a condition the operation does not accept
    /// is `InvalidInput` before anything is sent).
    async fn send<R: LeaseReply>(self, op: LeaseOp<'_>, conditions: &Conditions) -> Result<R> {
        conditions.check(self.allowed, self.operation)?;
        let operation = self.operation;
        crate::storage::send(self.pipeline, self.base.conditions(conditions), op)
            .await
            .map_err(|e| missing_target_hint(e, operation))
    }

    /// Acquire, proposing `proposed` or a random id.
    async fn acquire(
        self,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
        conditions: &Conditions,
    ) -> Result<LeaseResult> {
        let random = LeaseId::random();
        let proposed = proposed.unwrap_or(&random);
        self.send(LeaseOp::Acquire { duration, proposed }, conditions)
            .await
    }
}

/// A lease is taken on something that exists: a 404 for the blob (or its container) says so
/// and how to create it, since a lease request never creates anything.
fn missing_target_hint(e: crate::error::Error, operation: &str) -> crate::error::Error {
    match e.error_code() {
        Some(ErrorCode::BlobNotFound) => e.hint(
            "a lease needs an existing blob (leasing never creates it): create the blob \
             first, e.g. `blob.upload_if_not_exists(\"\")`, or use `BlobLock`, which creates \
             its lock blob",
        ),
        Some(ErrorCode::ContainerNotFound) if operation == "Lease Blob" => e.hint(
            "a lease needs an existing blob in an existing container: create the container \
             (`container.create_if_not_exists()`) and the blob first, or use `BlobLock`, \
             which creates both",
        ),
        Some(ErrorCode::ContainerNotFound) => e.hint(
            "a container lease needs an existing container: create it first \
             (`container.create_if_not_exists()`)",
        ),
        _ => e,
    }
}

impl BlobClient {
    /// A snapshot or version cannot be leased: refused before sending.
    fn lease(&self) -> Result<Target<'_>> {
        Ok(Target {
            pipeline: &self.pipeline,
            base: self.write_request(Method::Put, "Lease Blob")?,
            operation: "Lease Blob",
            allowed: BLOB_LEASE,
        })
    }
}

impl ContainerClient {
    fn lease(&self) -> Result<Target<'_>> {
        Ok(Target {
            pipeline: &self.pipeline,
            base: self.request(Method::Put),
            operation: "Lease Container",
            allowed: CONTAINER_LEASE,
        })
    }
}

/// The five lease methods of a client with a `lease()` [`Target`], written once; each
/// method's documentation is given per client.
macro_rules! lease_methods {
    ($client:ty {
        $(#[$acquire:meta])* acquire;
        $(#[$renew:meta])* renew;
        $(#[$change:meta])* change;
        $(#[$release:meta])* release;
        $(#[$brk:meta])* break;
    }) => {
        impl $client {
            $(#[$acquire])*
            pub async fn acquire_lease(
                &self,
                duration: LeaseDuration,
                proposed: Option<&LeaseId>,
                conditions: &Conditions,
            ) -> Result<LeaseResult> {
                self.lease()?.acquire(duration, proposed, conditions).await
            }

            $(#[$renew])*
            pub async fn renew_lease(
                &self,
                id: &LeaseId,
                conditions: &Conditions,
            ) -> Result<LeaseResult> {
                self.lease()?.send(LeaseOp::Renew(id), conditions).await
            }

            $(#[$change])*
            pub async fn change_lease(
                &self,
                id: &LeaseId,
                proposed: &LeaseId,
                conditions: &Conditions,
            ) -> Result<LeaseResult> {
                let op = LeaseOp::Change { id, proposed };
                self.lease()?.send(op, conditions).await
            }

            $(#[$release])*
            pub async fn release_lease(
                &self,
                id: &LeaseId,
                conditions: &Conditions,
            ) -> Result<LeaseReleased> {
                self.lease()?.send(LeaseOp::Release(id), conditions).await
            }

            $(#[$brk])*
            pub async fn break_lease(
                &self,
                period: Option<BreakPeriod>,
                conditions: &Conditions,
            ) -> Result<LeaseBroken> {
                self.lease()?.send(LeaseOp::Break(period), conditions).await
            }
        }
    };
}

lease_methods!(BlobClient {
    /// Acquires a lease for `duration`. `proposed` sets the lease id (a random one is proposed
    /// otherwise, which makes a retried acquire safe). Fails with 409 `LeaseAlreadyPresent`
    /// when someone else holds a lease, 409 `LeaseIsBreakingAndCannotBeAcquired` while one is
    /// breaking. Conditions: If-Match, If-None-Match, If-(Un)Modified-Since, tags.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::LeaseDuration;
    /// let lease = blob
    ///     .acquire_lease(LeaseDuration::seconds(15)?, None, &Conditions::none())
    ///     .await?;
    /// blob.upload("new", &Conditions::lease(&lease.lease_id)).await?;
    /// blob.release_lease(&lease.lease_id, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    acquire;
    /// Renews the lease `id`, restarting its duration. A lease that expired can be renewed as
    /// long as nobody else leased or (on Azure) modified the blob in between. Refusals:
    /// 409 `LeaseIdMismatchWithLeaseOperation` (someone else's lease),
    /// `LeaseIsBrokenAndCannotBeRenewed`, `LeaseNotPresentWithLeaseOperation`.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// match blob.renew_lease(&id, &Conditions::none()).await {
    ///     Err(e) if e.lease_lost() => eprintln!("not ours any more: stop writing"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    renew;
    /// Changes the active lease id `id` into `proposed`.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::LeaseId;
    /// // Hand the lease to a process that was told `next` beforehand.
    /// let next = LeaseId::random();
    /// blob.change_lease(&id, &next, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    change;
    /// Releases the lease `id`, so another client can acquire one at once.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// blob.release_lease(&id, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    release;
    /// Breaks the active lease (no lease id needed). `period` is how long the lease keeps
    /// protecting the blob; `None` is the service default (the rest of a fixed lease, at once
    /// for an infinite one). Returns the time left until the lease is broken.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::BreakPeriod;
    /// let broken = blob.break_lease(Some(BreakPeriod::seconds(5)?), &Conditions::none()).await?;
    /// println!("free in {:?}", broken.remaining);
    /// # let _ = id;
    /// # Ok(()) }
    /// ```
    break;
});

lease_methods!(ContainerClient {
    /// Acquires a container lease (it guards only Delete Container). Conditions:
    /// If-Modified-Since and If-Unmodified-Since only; others are refused before sending.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::LeaseDuration;
    /// // Nobody can delete the container while we hold this (writes to blobs are not affected).
    /// let lease = container.acquire_lease(LeaseDuration::Infinite, None, &Conditions::none()).await?;
    /// # let _ = (lease, id);
    /// # Ok(()) }
    /// ```
    acquire;
    /// Renews the container lease `id`.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// container.renew_lease(&id, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    renew;
    /// Changes the container lease id `id` into `proposed`.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// container.change_lease(&id, &azstore::LeaseId::random(), &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    change;
    /// Releases the container lease `id`.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// container.release_lease(&id, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    release;
    /// Breaks the container lease; returns the time left until it is broken.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::lease::BreakPeriod;
    /// container.break_lease(Some(BreakPeriod::immediate()), &Conditions::none()).await?;
    /// # let _ = id;
    /// # Ok(()) }
    /// ```
    break;
});

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
