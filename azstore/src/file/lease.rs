//! File leases (infinite only: acquire, change, release, break) and share leases
//! (15–60 s or infinite: acquire, renew, change, release, break).
//!
//! A file lease is the File service's pessimistic lock for REST writers: while it is held,
//! every write and delete must carry the lease id; without it the service answers 412
//! (`LeaseIdMissing`), with another id 412 (`LeaseIdMismatchWithFileOperation`). Reads stay
//! open to everyone. File leases never expire, so there is nothing to renew:
//! [`FileLeaseGuard`] just remembers the id, hands it to writes, and releases the lease when
//! you call [`FileLeaseGuard::release`] — or, best effort, when it is dropped.

use std::time::Duration;

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::client::{FileClient, ShareClient};
use crate::http::{Method, Request, Response};
use crate::lease::{BreakPeriod, LeaseDuration};

fn lease_request(req: Request, action: &str) -> Request {
    req.query("comp", "lease")
        .header("x-ms-lease-action", action)
}

fn returned_id(resp: &Response) -> Result<LeaseId> {
    Ok(LeaseId::from_service(
        resp.headers.require("x-ms-lease-id")?.to_string(),
    ))
}

fn lease_time(resp: &Response) -> Result<Duration> {
    Ok(Duration::from_secs(
        resp.headers.parse::<u64>("x-ms-lease-time")?.unwrap_or(0),
    ))
}

impl FileClient {
    /// Lease File, acquire. File leases are infinite only: any other `duration` is
    /// `InvalidInput` before anything is sent. `proposed` picks the lease id (a random one
    /// otherwise). 409 `LeaseAlreadyPresent` when someone else holds it.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::lease::LeaseDuration;
    /// let lease = file.acquire_lease(LeaseDuration::Infinite, None).await?;
    /// file.put_range(0, bytes::Bytes::from_static(b"mine"), Some(lease.id())).await?;
    /// lease.release().await?;
    /// # Ok(()) }
    /// ```
    pub async fn acquire_lease(
        &self,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
    ) -> Result<FileLeaseGuard> {
        if duration != LeaseDuration::Infinite {
            return Err(Error::invalid_input(format!(
                "file leases are infinite only (got {duration:?}); use LeaseDuration::Infinite"
            )));
        }
        let proposed = proposed.cloned().unwrap_or_else(LeaseId::random);
        let req = lease_request(self.request(Method::Put), "acquire")
            .header("x-ms-lease-duration", "-1")
            .header("x-ms-proposed-lease-id", proposed.as_str());
        let resp = self.pipeline.send(req).await?;
        Ok(FileLeaseGuard {
            file: self.clone(),
            id: returned_id(&resp)?,
            active: true,
        })
    }

    /// Lease File, change: replaces the id of the lease held with `current` by `proposed`.
    pub async fn change_lease(&self, current: &LeaseId, proposed: &LeaseId) -> Result<LeaseId> {
        let req = lease_request(self.request(Method::Put), "change")
            .header("x-ms-lease-id", current.as_str())
            .header("x-ms-proposed-lease-id", proposed.as_str());
        returned_id(&self.pipeline.send(req).await?)
    }

    /// Lease File, release: frees the lease held with `id` so anyone can acquire it at once.
    pub async fn release_lease(&self, id: &LeaseId) -> Result<()> {
        let req = lease_request(self.request(Method::Put), "release")
            .header("x-ms-lease-id", id.as_str());
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Lease File, break: ends whoever's lease at once (file leases have no break period).
    /// Needs no lease id — this is how an operator frees a file whose holder is gone.
    pub async fn break_lease(&self) -> Result<()> {
        self.pipeline
            .send(lease_request(self.request(Method::Put), "break"))
            .await?;
        Ok(())
    }
}

/// A held file lease. Pass [`FileLeaseGuard::id`] to every write; call
/// [`FileLeaseGuard::release`] when done. Dropping the guard without releasing spawns a
/// best-effort release on the current Tokio runtime (if there is one): a file lease never
/// expires, so a forgotten one would block other REST writers until someone breaks it.
#[derive(Debug)]
#[must_use = "a file lease is held until released or broken"]
pub struct FileLeaseGuard {
    file: FileClient,
    id: LeaseId,
    active: bool,
}

impl FileLeaseGuard {
    /// The lease id to pass to writes.
    pub fn id(&self) -> &LeaseId {
        &self.id
    }

    /// The leased file.
    pub fn file(&self) -> &FileClient {
        &self.file
    }

    /// Changes the lease id (Lease File, change); the guard keeps the new one.
    pub async fn change(&mut self, proposed: &LeaseId) -> Result<()> {
        self.id = self.file.change_lease(&self.id, proposed).await?;
        Ok(())
    }

    /// Releases the lease. On error the lease may still be held (e.g. the connection broke):
    /// [`FileClient::break_lease`] frees it for certain.
    pub async fn release(mut self) -> Result<()> {
        self.active = false;
        self.file.release_lease(&self.id).await
    }

    /// Forgets the lease without releasing it (it stays held until someone releases it
    /// with the id, or breaks it). Returns the id.
    pub fn detach(mut self) -> LeaseId {
        self.active = false;
        self.id.clone()
    }
}

impl Drop for FileLeaseGuard {
    fn drop(&mut self) {
        if !self.active {
            return;
        }
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            let file = self.file.clone();
            let id = self.id.clone();
            handle.spawn(async move {
                if let Err(e) = file.release_lease(&id).await {
                    tracing::warn!(error = %e, file = file.path(), "releasing a dropped file lease failed");
                }
            });
        } else {
            tracing::warn!(
                file = self.file.path(),
                "file lease guard dropped outside a Tokio runtime: the lease stays held"
            );
        }
    }
}

impl ShareClient {
    fn lease_req(&self, action: &str) -> Request {
        lease_request(self.request(Method::Put), action)
    }

    /// Lease Share, acquire: 15–60 s or infinite ([`LeaseDuration`] cannot hold anything
    /// else). A share lease guards deleting the share. Returns the lease id.
    pub async fn acquire_lease(
        &self,
        duration: LeaseDuration,
        proposed: Option<&LeaseId>,
    ) -> Result<LeaseId> {
        let proposed = proposed.cloned().unwrap_or_else(LeaseId::random);
        let req = self
            .lease_req("acquire")
            .header("x-ms-lease-duration", duration.header_value())
            .header("x-ms-proposed-lease-id", proposed.as_str());
        returned_id(&self.pipeline.send(req).await?)
    }

    /// Lease Share, renew: restarts the duration clock of the lease held with `id`.
    pub async fn renew_lease(&self, id: &LeaseId) -> Result<()> {
        let req = self.lease_req("renew").header("x-ms-lease-id", id.as_str());
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Lease Share, change.
    pub async fn change_lease(&self, current: &LeaseId, proposed: &LeaseId) -> Result<LeaseId> {
        let req = self
            .lease_req("change")
            .header("x-ms-lease-id", current.as_str())
            .header("x-ms-proposed-lease-id", proposed.as_str());
        returned_id(&self.pipeline.send(req).await?)
    }

    /// Lease Share, release.
    pub async fn release_lease(&self, id: &LeaseId) -> Result<()> {
        let req = self
            .lease_req("release")
            .header("x-ms-lease-id", id.as_str());
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Lease Share, break. With `period` the lease ends after at most that long (an
    /// infinite lease then breaks after exactly `period`); without it a fixed lease runs
    /// out its remaining time and an infinite one breaks at once. Returns the time until
    /// the lease is broken.
    pub async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<Duration> {
        let req = self.lease_req("break").header_opt(
            "x-ms-lease-break-period",
            period.map(|p| p.as_secs().to_string()),
        );
        lease_time(&self.pipeline.send(req).await?)
    }
}
