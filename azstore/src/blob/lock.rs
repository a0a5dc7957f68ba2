//! [`BlobLock`]: the lock engine ([`Lock`]) on a blob lease — the blob backend's
//! [`LockTarget`].
//!
//! The lock is a (normally empty) blob; holding the lock means holding its lease. Every
//! acquisition writes the fencing token (see [Fencing tokens](crate::lock#fencing-tokens)) and
//! the owner into the blob's metadata, with the new lease id and `If-Match` on what it read,
//! so the token and the lease are one step.

use std::collections::{BTreeMap, HashMap, HashSet};

use tokio::time::Instant;

use super::{BlobClient, BlobListItem, ContainerClient, LeaseState, ListOptions};
use crate::conditions::{Conditions, LeaseId};
use crate::error::{Error, ErrorCode, Result};
use crate::lease::{BreakPeriod, LeaseBroken};
use crate::lock::{
    Attempt, Held, Lock, LockClaim, LockOptions, LockOwner, LockStatus, LockTarget, Probe,
    StatusMany, common_prefix, next_fencing_token, parse_rfc3339, status_each, wall_clock_ms,
};

/// Metadata key of the fencing token.
pub const META_FENCING_TOKEN: &str = "fencing_token";
/// Metadata key of the holder's host name.
pub const META_OWNER_HOST: &str = "owner_host";
/// Metadata key of the holder's process id.
pub const META_OWNER_PID: &str = "owner_pid";
/// Metadata key of the holder's label.
pub const META_OWNER_LABEL: &str = "owner_label";
/// Metadata key of the acquisition time (RFC 3339, UTC).
pub const META_ACQUIRED_AT: &str = "acquired_at";

/// A distributed lock on the lease of one blob: the lock engine over [`BlobLockTarget`].
/// Cheap to clone. Everything but construction is [`Lock`]'s.
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::blob::BlobLock;
///
/// let lock = BlobLock::new(account.container("locks")?, "jobs/reindex")?;
/// if let Some(held) = lock.acquire_within(Duration::from_secs(60)).await? {
///     println!("running the reindex under fencing token {}", held.fencing_token());
///     held.release().await?;
/// }
/// # Ok(()) }
/// ```
pub type BlobLock = Lock<BlobLockTarget>;

/// A held [`BlobLock`]: the renewed lease of the lock blob plus the fencing token of this
/// acquisition. Release it with [`release`](Held::release); dropping it releases in the
/// background.
///
/// ```no_run
/// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::blob::HeldBlobLock;
///
/// let held: HeldBlobLock = match lock.acquire_within(Duration::from_secs(10)).await? {
///     Some(held) => held,
///     None => return Ok(()), // someone else held it for the whole 10 s
/// };
/// for batch in 0..3 {
///     held.check()?; // stop at once if the lease can no longer be vouched for
///     println!("batch {batch} under token {}", held.fencing_token());
/// }
/// held.release().await?;
/// # Ok(()) }
/// ```
pub type HeldBlobLock = Held<BlobClient>;

/// The blob backend of the lock engine: an empty lock blob, its lease, the fencing token and
/// owner in its metadata. The probe is a HEAD (the lease state), so waiters attempt only when
/// the lease looks free. Use it through [`BlobLock`].
#[derive(Debug, Clone)]
pub struct BlobLockTarget {
    container: ContainerClient,
    blob: BlobClient,
}

impl BlobLockTarget {
    /// The target for the blob `name` in `container` (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let target = azstore::blob::BlobLockTarget::new(container, "locks/nightly")?;
    /// assert_eq!(target.blob().name(), "locks/nightly");
    /// # Ok(()) }
    /// ```
    pub fn new(container: ContainerClient, name: &str) -> Result<BlobLockTarget> {
        let blob = container.blob(name)?;
        Ok(BlobLockTarget { container, blob })
    }

    /// The lock blob.
    ///
    /// ```no_run
    /// # fn demo(target: azstore::blob::BlobLockTarget) {
    /// println!("{}", target.blob().url());
    /// # }
    /// ```
    pub fn blob(&self) -> &BlobClient {
        &self.blob
    }

    async fn create_lock_blob(&self, cause: &Error) -> Result<()> {
        if cause.error_code() == Some(&ErrorCode::ContainerNotFound) {
            self.container.create_if_not_exists().await?;
        }
        match self.blob.upload("", &Conditions::if_not_exists()).await {
            Ok(_) => Ok(()),
            // Someone created it first (409), and may already lease it (412 LeaseIdMissing).
            Err(e) if e.is_conflict() || e.is_lease_error() => Ok(()),
            Err(e) if e.error_code() == Some(&ErrorCode::ContainerNotFound) => {
                self.container.create_if_not_exists().await?;
                match self.blob.upload("", &Conditions::if_not_exists()).await {
                    Ok(_) => Ok(()),
                    Err(e) if e.is_conflict() || e.is_lease_error() => Ok(()),
                    Err(e) => Err(e),
                }
            }
            Err(e) => Err(e),
        }
    }

    /// Writes the next fencing token and the owner, with the lease id and `If-Match` on what
    /// was read; the token. On failure the lease is released.
    async fn fence(&self, id: &LeaseId, owner: &LockOwner) -> Result<u64> {
        let result = async {
            let props = self.blob.get_properties_if(&Conditions::lease(id)).await?;
            let previous = match props.metadata.get(META_FENCING_TOKEN) {
                None => None,
                Some(v) => Some(v.trim().parse::<u64>().map_err(|_| {
                    Error::decode(format!(
                        "lock blob {} has a malformed {META_FENCING_TOKEN} metadata value",
                        self.blob.name()
                    ))
                })?),
            };
            let token = next_fencing_token(previous, wall_clock_ms());
            let mut meta = BTreeMap::new();
            meta.insert(META_FENCING_TOKEN.to_string(), token.to_string());
            meta.insert(META_OWNER_HOST.to_string(), owner.host.clone());
            if let Some(pid) = owner.pid {
                meta.insert(META_OWNER_PID.to_string(), pid.to_string());
            }
            if let Some(label) = &owner.label {
                meta.insert(META_OWNER_LABEL.to_string(), label.clone());
            }
            meta.insert(META_ACQUIRED_AT.to_string(), owner.acquired_at_rfc3339());
            self.blob
                .set_metadata(&meta, &Conditions::lease(id).and_if_match(&props.etag))
                .await?;
            Ok::<u64, Error>(token)
        }
        .await;
        if result.is_err() {
            let _ = self.blob.release_lease(id, &Conditions::none()).await;
        }
        result
    }
}

/// The status recorded in a lock blob's metadata.
pub(crate) fn status_from_metadata(
    lease_state: Option<LeaseState>,
    meta: &BTreeMap<String, String>,
) -> LockStatus {
    let fencing_token = meta
        .get(META_FENCING_TOKEN)
        .and_then(|v| v.trim().parse().ok());
    let owner = meta.get(META_OWNER_HOST).map(|host| {
        LockOwner::new(
            host.clone(),
            meta.get(META_OWNER_PID).and_then(|p| p.trim().parse().ok()),
            meta.get(META_OWNER_LABEL).cloned(),
            meta.get(META_ACQUIRED_AT).and_then(|t| parse_rfc3339(t)),
        )
    });
    let locked = matches!(lease_state, Some(LeaseState::Leased | LeaseState::Breaking));
    let breaking = lease_state == Some(LeaseState::Breaking);
    LockStatus::new(true, locked, breaking, fencing_token, owner, None)
}

impl LockTarget for BlobLockTarget {
    type Lease = BlobClient;

    fn identity(&self) -> String {
        self.blob.url()
    }

    async fn try_lock(&self, claim: &LockClaim) -> Result<Attempt<BlobClient>> {
        let mut created = false;
        loop {
            let sent_at = Instant::now();
            match self
                .blob
                .acquire_lease(claim.duration, Some(&claim.proposed), &Conditions::none())
                .await
            {
                Ok(lease) => {
                    let fencing_token = self.fence(&lease.lease_id, &claim.owner).await?;
                    return Ok(Attempt::Acquired {
                        lease: self.blob.clone(),
                        fencing_token,
                        sent_at,
                    });
                }
                Err(e) if e.is_not_found() && !created => {
                    self.create_lock_blob(&e).await?;
                    created = true;
                }
                Err(e)
                    if matches!(
                        e.error_code(),
                        Some(
                            ErrorCode::LeaseAlreadyPresent
                                | ErrorCode::LeaseIsBreakingAndCannotBeAcquired
                        )
                    ) =>
                {
                    return Ok(Attempt::Busy);
                }
                Err(e) => return Err(e),
            }
        }
    }

    async fn probe(&self) -> Result<Probe> {
        match self.blob.get_properties().await {
            Ok(p) => Ok(match p.lease_state {
                Some(LeaseState::Leased | LeaseState::Breaking) => Probe::Busy,
                _ => Probe::Free,
            }),
            Err(e) if e.is_not_found() => Ok(Probe::Free),
            Err(e) => Err(e),
        }
    }

    async fn status(&self) -> Result<LockStatus> {
        match self.blob.get_properties().await {
            Ok(p) => Ok(status_from_metadata(p.lease_state, &p.metadata)),
            Err(e) if e.is_not_found() => Ok(LockStatus::default()),
            Err(e) => Err(e),
        }
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> Result<LeaseBroken> {
        self.blob.break_lease(period, &Conditions::none()).await
    }

    async fn abandon(&self, proposed: &LeaseId) {
        // Refused (409/412) when the cut-off acquire never took the lease.
        let _ = self.blob.release_lease(proposed, &Conditions::none()).await;
    }

    /// One List Blobs (`prefix` = the names' common prefix, `include=metadata`, 5,000 per page)
    /// instead of a HEAD per lock: the listing carries each blob's lease state and metadata,
    /// the same fields [`status`](LockTarget::status) reads, and the service computes the lease
    /// state at listing time as it does for Get Blob Properties (an ended lease lists as
    /// `expired`). Falls back to one status per lock for fewer than
    /// [`BULK_STATUS_MIN`] locks or locks in different containers.
    async fn status_many(targets: &[&Self]) -> Result<StatusMany> {
        let Some(first) = targets.first() else {
            return Ok(StatusMany::default());
        };
        let container = &first.container;
        let url = container.url();
        if targets.len() < BULK_STATUS_MIN || targets.iter().any(|t| t.container.url() != url) {
            return status_each(targets).await;
        }
        let names: Vec<&str> = targets.iter().map(|t| t.blob.name()).collect();
        let mut wanted: HashSet<&str> = names.iter().copied().collect();
        let options = ListOptions::default()
            .prefix(common_prefix(&names))
            .with_metadata();
        let mut found: HashMap<String, LockStatus> = HashMap::with_capacity(names.len());
        let mut marker: Option<String> = None;
        let mut requests = 0u64;
        loop {
            requests += 1;
            let page = match container.list_blobs_page(&options, marker.as_deref()).await {
                Ok(p) => p,
                // No container yet: no lock blob either (what each HEAD would say).
                Err(e) if e.error_code() == Some(&ErrorCode::ContainerNotFound) => break,
                Err(e) => return Err(e.context("reading the status of many blob locks")),
            };
            for item in page.items {
                if let BlobListItem::Blob(b) = item
                    && b.snapshot.is_none()
                    && !b.deleted
                    && wanted.remove(b.name.as_str())
                {
                    let status = status_from_metadata(b.lease_state, &b.metadata);
                    found.insert(b.name, status);
                }
            }
            marker = page.next_marker;
            // Done once the listing ends, or every lock blob was seen (the rest of the prefix
            // holds nothing asked for).
            if marker.is_none() || wanted.is_empty() {
                break;
            }
        }
        let statuses = names
            .iter()
            .map(|n| found.get(*n).cloned().unwrap_or_default())
            .collect();
        Ok(StatusMany::new(statuses, requests))
    }
}

/// The fewest locks [`BlobLockTarget::status_many`] lists rather than reads one by one.
pub const BULK_STATUS_MIN: usize = 3;

impl Lock<BlobLockTarget> {
    /// A lock on the blob `name` in `container`, with default options. The name is validated
    /// here (no request is sent); the container and the blob are created on first acquire.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let lock = azstore::blob::BlobLock::new(container, "locks/nightly")?;
    /// assert_eq!(lock.blob().name(), "locks/nightly");
    /// # Ok(()) }
    /// ```
    pub fn new(container: ContainerClient, name: &str) -> Result<BlobLock> {
        BlobLock::with_options(container, name, LockOptions::default())
    }

    /// A lock with custom options (validated here, before any request).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::lock::{LockOptions};
    /// use azstore::blob::{BlobLock};
    /// let options = LockOptions::default().label("deploy");
    /// let lock = BlobLock::with_options(container, "locks/deploy", options)?;
    /// # let _ = lock; Ok(()) }
    /// ```
    pub fn with_options(
        container: ContainerClient,
        name: &str,
        options: LockOptions,
    ) -> Result<BlobLock> {
        Lock::from_target(BlobLockTarget::new(container, name)?, options)
    }

    /// The lock blob (an empty blob whose metadata holds the fencing token and owner).
    ///
    /// ```no_run
    /// # fn demo(lock: azstore::blob::BlobLock) {
    /// println!("lock blob: {}", lock.blob().url());
    /// # }
    /// ```
    pub fn blob(&self) -> &BlobClient {
        self.target().blob()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_from_metadata_never_panics() {
        let mut m = BTreeMap::new();
        m.insert(META_FENCING_TOKEN.into(), "7".into());
        m.insert(META_OWNER_HOST.into(), "h".into());
        m.insert(META_OWNER_PID.into(), "42".into());
        m.insert(META_ACQUIRED_AT.into(), "2026-11-22T00:00:00Z".into());
        let s = status_from_metadata(Some(LeaseState::Leased), &m);
        assert!(s.is_locked() && !s.breaking && s.exists);
        assert_eq!(s.fencing_token, Some(7));
        let o = s.owner.unwrap();
        assert_eq!(o.pid, Some(42));
        assert!(o.acquired_at.is_some());
        assert_eq!(o.to_string(), "host=h pid=42");
        let s = status_from_metadata(Some(LeaseState::Breaking), &m);
        assert!(s.is_locked() && s.breaking);
        // Garbage never panics.
        m.insert(META_FENCING_TOKEN.into(), "x".into());
        m.insert(META_OWNER_PID.into(), "-".into());
        let s = status_from_metadata(None, &m);
        assert_eq!(s.fencing_token, None);
        assert!(!s.is_locked());
    }
}

/// Makes [`BlobLock`]s in one container for a [`ShardGroup`](crate::leader::ShardGroup): the
/// lock named `group/shards/7` is the blob of that name.
///
/// ```no_run
/// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::BlobLocks;
/// use azstore::leader::{ShardGroup, ShardOptions};
/// use azstore::lock::LockOptions;
/// let group = ShardGroup::with_count(
///     BlobLocks::new(container, LockOptions::default()),
///     "ingest",
///     32,
///     ShardOptions::default(),
/// )?;
/// # let _ = group; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobLocks {
    container: ContainerClient,
    options: LockOptions,
}

impl BlobLocks {
    /// Locks in `container` with `options` (the label is replaced by each worker's id).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) {
    /// let locks = azstore::blob::BlobLocks::new(container, azstore::lock::LockOptions::default());
    /// # let _ = locks;
    /// # }
    /// ```
    pub fn new(container: ContainerClient, options: LockOptions) -> BlobLocks {
        BlobLocks { container, options }
    }
}

impl crate::leader::LockFactory for BlobLocks {
    type Lock = BlobLock;

    fn make(&self, name: &str, label: &str) -> Result<BlobLock> {
        BlobLock::with_options(
            self.container.clone(),
            name,
            self.options.clone().label(label),
        )
    }
}
