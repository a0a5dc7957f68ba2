//! File leases (infinite only: acquire, change, release, break) and share leases
//! (15–60 s or infinite: acquire, renew, change, release, break), and their [`Leasable`]
//! contract.
//!
//! A file lease is the File service's pessimistic lock for REST writers: while it is held,
//! every write and delete must carry the lease id; without it the service answers 412
//! (`LeaseIdMissing`), with another id 412 (`LeaseIdMismatchWithFileOperation`). Reads stay
//! open to everyone. File leases never expire, so there is nothing to renew: a
//! [`LeaseGuard<FileClient>`](crate::lease::LeaseGuard) just holds the id, hands it to writes,
//! and releases the lease when you call [`release`](crate::lease::LeaseGuard::release) — or,
//! best effort, when it is dropped. A [`LeaseGuard<ShareClient>`](crate::lease::LeaseGuard)
//! renews a fixed share lease in the background like a blob's.
//!
//! The requests are built and read by the lease module's `send`, as for blobs and containers.
//! Delete File and Delete Share, which a lease guards, are written here once for both.

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::file_client::{FileClient, lease_header};
use crate::file::share::ShareClient;
use crate::http::Method;
use crate::lease::{
    BreakPeriod, Leasable, LeaseBroken, LeaseCapabilities, LeaseDuration, LeaseReleased,
    LeaseResult,
};
use crate::snapshot::SnapshotId;
use crate::storage::{LeaseOp, LeaseReply};

impl FileClient {
    /// Lease File, break: ends whoever's lease at once (file leases have no break period).
    /// Needs no lease id — this is how an operator frees a file whose holder is gone.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// file.break_lease().await?;
    /// # Ok(()) }
    /// ```
    pub async fn break_lease(&self) -> Result<LeaseBroken> {
        self.send(LeaseOp::Break(None)).await
    }
}

/// What file and share leases share, written once: sending an operation, acquire with a
/// proposed (or random) id, change and release.
macro_rules! common_lease_methods {
    (
        $client:ty, $what:literal,
        target: |$c:ident| $target:expr,
        capabilities: $caps:expr,
        renew: |$rid:ident| $renew:expr,
        break: |$period:ident| $brk:expr,
        $(#[$acquire_doc:meta])*
    ) => {
        impl $client {
            $(#[$acquire_doc])*
            pub async fn acquire_lease(
                &self,
                duration: LeaseDuration,
                proposed: Option<&LeaseId>,
            ) -> Result<LeaseResult> {
                self.lease_capabilities()
                    .check(&self.lease_target(), duration)?;
                let random = LeaseId::random();
                let proposed = proposed.unwrap_or(&random);
                self.send(LeaseOp::Acquire { duration, proposed }).await
            }

            async fn send<R: LeaseReply>(&self, op: LeaseOp<'_>) -> Result<R> {
                crate::storage::send(&self.pipeline, self.request(Method::Put), op).await
            }

            #[doc = concat!("Lease ", $what, ", change: replaces the id of the lease held with")]
            /// `current` by `proposed`.
            ///
            /// ```no_run
            /// # use azstore::file::*;
            #[doc = concat!("# async fn demo(client: ", stringify!($client), ", current: azstore::LeaseId) -> azstore::Result<()> {")]
            /// let next = azstore::LeaseId::random();
            /// client.change_lease(&current, &next).await?;
            /// # Ok(()) }
            /// ```
            pub async fn change_lease(
                &self,
                current: &LeaseId,
                proposed: &LeaseId,
            ) -> Result<LeaseResult> {
                self.send(LeaseOp::Change {
                    id: current,
                    proposed,
                })
                .await
            }

            #[doc = concat!("Lease ", $what, ", release: frees the lease held with `id` so")]
            /// anyone can acquire one at once.
            ///
            /// ```no_run
            /// # use azstore::file::*;
            #[doc = concat!("# async fn demo(client: ", stringify!($client), ", id: azstore::LeaseId) -> azstore::Result<()> {")]
            /// client.release_lease(&id).await?;
            /// # Ok(()) }
            /// ```
            pub async fn release_lease(&self, id: &LeaseId) -> Result<LeaseReleased> {
                self.send(LeaseOp::Release(id)).await
            }
        }

        impl Leasable for $client {
            fn lease_target(&self) -> String {
                let $c = self;
                $target
            }

            fn lease_capabilities(&self) -> LeaseCapabilities {
                $caps
            }

            async fn lease_acquire(
                &self,
                duration: LeaseDuration,
                proposed: &LeaseId,
            ) -> Result<LeaseResult> {
                self.acquire_lease(duration, Some(proposed)).await
            }

            async fn lease_renew(&self, $rid: &LeaseId) -> Result<LeaseResult> {
                let $c = self;
                $renew
            }

            async fn lease_change(&self, id: &LeaseId, proposed: &LeaseId) -> Result<LeaseResult> {
                self.change_lease(id, proposed).await
            }

            async fn lease_release(&self, id: &LeaseId) -> Result<LeaseReleased> {
                self.release_lease(id).await
            }

            async fn lease_break(&self, $period: Option<BreakPeriod>) -> Result<LeaseBroken> {
                let $c = self;
                $brk
            }
        }
    };
}

// A file: infinite leases only, no renew, immediate break.
common_lease_methods!(
    FileClient,
    "File",
    target: |c| format!("file {}/{}", c.share_name(), c.path()),
    capabilities: LeaseCapabilities::INFINITE_ONLY,
    renew: |_id| Err(Error::invalid_input(format!(
        "{} has an infinite lease, which cannot be renewed",
        c.lease_target()
    ))),
    break: |period| {
        LeaseCapabilities::INFINITE_ONLY.check_break(&c.lease_target(), period)?;
        c.break_lease().await
    },
    /// Lease File, acquire. File leases are infinite only: any other `duration` is
    /// `InvalidInput` before anything is sent. `proposed` picks the lease id (a random one
    /// otherwise). 409 `LeaseAlreadyPresent` when someone else holds it. To have the lease
    /// released when you are done (or drop it), hold it with a
    /// [`LeaseGuard`](crate::lease::LeaseGuard).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::lease::{LeaseDuration, LeaseGuard};
    /// let lease = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite).await?;
    /// file.put_range(0, bytes::Bytes::from_static(b"mine"), Some(lease.lease_id())).await?;
    /// lease.release().await?;
    /// # Ok(()) }
    /// ```
);

// A share: 15–60 s or infinite leases, renewable.
common_lease_methods!(
    ShareClient,
    "Share",
    target: |c| format!("share {}", c.name()),
    capabilities: LeaseCapabilities::ALL,
    renew: |id| c.renew_lease(id).await,
    break: |period| c.break_lease(period).await,
    /// Lease Share, acquire: 15–60 s or infinite ([`LeaseDuration`] cannot hold anything
    /// else). A share lease guards deleting the share. `proposed` picks the lease id (a random
    /// one otherwise). [`LeaseGuard<ShareClient>`](crate::lease::LeaseGuard) renews it in the
    /// background.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// // Nobody can delete the share while this lease is held.
    /// let lease = share.acquire_lease(LeaseDuration::Infinite, None).await?;
    /// # let _ = lease; Ok(()) }
    /// ```
);

/// Delete File and Delete Share, and their `_if_exists` forms, written once: a leased file or
/// share is deleted only with its lease id.
macro_rules! leased_delete_methods {
    ($client:ty, $what:literal, $var:literal, $(#[$if_exists_doc:meta])*) => {
        impl $client {
            #[doc = concat!("Delete ", $what, ". A leased ", $var, " needs its lease id (412 otherwise).")]
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(", $var, ": azstore::file::", stringify!($client), ") -> azstore::Result<()> {")]
            #[doc = concat!("match ", $var, ".delete(None).await {")]
            ///     Err(e) if e.is_not_found() => {} // already gone
            ///     other => other?,
            /// }
            /// # Ok(()) }
            /// ```
            pub async fn delete(&self, lease: Option<&LeaseId>) -> Result<()> {
                let req = lease_header(self.request(Method::Delete), lease);
                self.pipeline.send(req).await?;
                Ok(())
            }

            #[doc = concat!("Deletes the ", $var, " if it exists. Returns `true` when this call deleted it. A")]
            #[doc = concat!("leased ", $var, ": [`", stringify!($client), "::delete_if_exists_with_lease`].")]
            $(#[$if_exists_doc])*
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(", $var, ": azstore::file::", stringify!($client), ") -> azstore::Result<()> {")]
            #[doc = concat!($var, ".delete_if_exists().await?;")]
            /// # Ok(()) }
            /// ```
            pub async fn delete_if_exists(&self) -> Result<bool> {
                crate::error::found(self.delete(None).await)
            }

            #[doc = concat!("Deletes the leased ", $var, " if it exists, with its lease id. Returns `true` when")]
            /// this call deleted it.
            ///
            /// ```no_run
            #[doc = concat!("# async fn demo(", $var, ": azstore::file::", stringify!($client), ", lease: azstore::LeaseId) -> azstore::Result<()> {")]
            #[doc = concat!($var, ".delete_if_exists_with_lease(&lease).await?;")]
            /// # Ok(()) }
            /// ```
            pub async fn delete_if_exists_with_lease(&self, lease: &LeaseId) -> Result<bool> {
                crate::error::found(self.delete(Some(lease)).await)
            }
        }
    };
}

leased_delete_methods!(
    FileClient,
    "File",
    "file",
    ///
    /// There is no `create_if_not_exists` for files: Create File replaces an existing file,
    /// and Azure Files takes no `If-None-Match`, so "create unless it exists" cannot be one
    /// atomic request; take a lease or use [`exists`](Self::exists) knowing the race.
);
leased_delete_methods!(ShareClient, "Share", "share",);

impl ShareClient {
    /// Lease Share, renew: restarts the duration clock of the lease held with `id`.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient, id: azstore::LeaseId) -> azstore::Result<()> {
    /// share.renew_lease(&id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn renew_lease(&self, id: &LeaseId) -> Result<LeaseResult> {
        self.send(LeaseOp::Renew(id)).await
    }

    /// Lease Share, break. With `period` the lease ends after at most that long (an
    /// infinite lease then breaks after exactly `period`); without it a fixed lease runs
    /// out its remaining time and an infinite one breaks at once. Returns the time until
    /// the lease is broken.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::lease::BreakPeriod;
    /// let broken = share.break_lease(Some(BreakPeriod::seconds(10)?)).await?;
    /// println!("free in {:?}", broken.remaining);
    /// # Ok(()) }
    /// ```
    pub async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.send(LeaseOp::Break(period)).await
    }
}

/// Leases on a share snapshot (Lease Share with `sharesnapshot=`): a snapshot has a lease of
/// its own, independent of the share's, which guards deleting that snapshot (backup software
/// holds one on the snapshot it copies from).
impl ShareClient {
    async fn send_snapshot<R: LeaseReply>(
        &self,
        snapshot: &SnapshotId,
        op: LeaseOp<'_>,
    ) -> Result<R> {
        let snapshot = snapshot.as_str();
        crate::file::snapshots::check_snapshot_id(snapshot)?;
        let req = self.request(Method::Put).query("sharesnapshot", snapshot);
        crate::storage::send(&self.pipeline, req, op).await
    }

    /// Lease Share on the snapshot `snapshot`, acquire: 15–60 s or infinite. `proposed`
    /// picks the lease id (a random one otherwise). Deleting the snapshot then needs the
    /// lease id.
    ///
    /// ```no_run
    /// # async fn f(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// let snap = share.create_snapshot(&Default::default()).await?;
    /// let lease = share
    ///     .acquire_snapshot_lease(&snap.snapshot, LeaseDuration::Infinite, None)
    ///     .await?;
    /// // ... copy from the snapshot; nobody can delete it meanwhile ...
    /// share.release_snapshot_lease(&snap.snapshot, &lease.lease_id).await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_snapshot_lease(
        &self,
        snapshot: &SnapshotId,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
    ) -> Result<LeaseResult> {
        LeaseCapabilities::ALL.check(&format!("share snapshot {}", snapshot.as_str()), duration)?;
        let random = LeaseId::random();
        let proposed = proposed.unwrap_or(&random);
        self.send_snapshot(snapshot, LeaseOp::Acquire { duration, proposed })
            .await
    }

    /// Lease Share on a snapshot, renew.
    pub async fn renew_snapshot_lease(
        &self,
        snapshot: &SnapshotId,
        id: &LeaseId,
    ) -> Result<LeaseResult> {
        self.send_snapshot(snapshot, LeaseOp::Renew(id)).await
    }

    /// Lease Share on a snapshot, change: replaces the id of the lease held with `current`.
    pub async fn change_snapshot_lease(
        &self,
        snapshot: &SnapshotId,
        current: &LeaseId,
        proposed: &LeaseId,
    ) -> Result<LeaseResult> {
        self.send_snapshot(
            snapshot,
            LeaseOp::Change {
                id: current,
                proposed,
            },
        )
        .await
    }

    /// Lease Share on a snapshot, release.
    pub async fn release_snapshot_lease(
        &self,
        snapshot: &SnapshotId,
        id: &LeaseId,
    ) -> Result<LeaseReleased> {
        self.send_snapshot(snapshot, LeaseOp::Release(id)).await
    }

    /// Lease Share on a snapshot, break (see [`ShareClient::break_lease`]).
    pub async fn break_snapshot_lease(
        &self,
        snapshot: &SnapshotId,
        period: Option<BreakPeriod>,
    ) -> Result<LeaseBroken> {
        self.send_snapshot(snapshot, LeaseOp::Break(period)).await
    }
}
