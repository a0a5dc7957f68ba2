//! Who holds a lock: the owner identity recorded at acquisition (host name, pid, label, time)
//! and what [`Lock::status`](super::Lock::status) reports, on every backend.

use std::fmt;
use std::time::Duration;

use time::OffsetDateTime;

use crate::error::{Error, Result};

/// What [`Lock::status`](super::Lock::status) reports — the same on every backend (blob,
/// Redis, Cosmos DB, or a [`LockTarget`](super::LockTarget) of your own). Read it without
/// taking the lock.
///
/// ```no_run
/// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
/// let status = lock.status().await?;
/// println!(
///     "exists: {}, locked: {}, last token: {:?}, last owner: {:?}",
///     status.exists, status.is_locked(), status.fencing_token, status.owner
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LockStatus {
    /// Whether the lock record exists (a lock blob, a Redis fencing key, a Cosmos DB lock
    /// item). It is created on first acquire.
    pub exists: bool,
    /// Whether someone holds the lock now, or it is being broken. On Cosmos DB a holder may
    /// have stopped renewing: a waiter takes over after a lease duration of unchanged item.
    pub locked: bool,
    /// Whether the lock is being broken (nobody can acquire it until the break ends).
    pub breaking: bool,
    /// The fencing token of the latest acquisition (kept after a release).
    pub fencing_token: Option<u64>,
    /// The latest holder (who may have released it since: see `locked`).
    pub owner: Option<LockOwner>,
    /// Time left on the lease where the service keeps it (Redis); `None` when unknown,
    /// infinite or unlocked.
    pub remaining: Option<Duration>,
    /// A value that every renewal of the holder changes, on backends where the contenders
    /// decide when a silent holder's lease has run out (Cosmos DB: the lock item's `_etag`);
    /// `None` where the service expires leases itself (Blob, Redis). An observer that sees the
    /// same version for a whole lease duration may count the holder as gone.
    pub version: Option<String>,
}

impl LockStatus {
    /// A status with every field given; for [`LockTarget`](super::LockTarget) implementations
    /// outside azstore.
    ///
    /// ```
    /// let free = azstore::lock::LockStatus::new(true, false, false, Some(1_795_728_181_025), None, None);
    /// assert!(!free.is_locked());
    /// ```
    pub fn new(
        exists: bool,
        locked: bool,
        breaking: bool,
        fencing_token: Option<u64>,
        owner: Option<LockOwner>,
        remaining: Option<Duration>,
    ) -> LockStatus {
        LockStatus {
            exists,
            locked,
            breaking,
            fencing_token,
            owner,
            remaining,
            version: None,
        }
    }

    /// The status with its [`version`](Self::version) set (for backends whose contenders
    /// decide expiry).
    ///
    /// ```
    /// let status = azstore::lock::LockStatus::default().with_version("etag-1");
    /// assert_eq!(status.version.as_deref(), Some("etag-1"));
    /// ```
    pub fn with_version(mut self, version: impl Into<String>) -> LockStatus {
        self.version = Some(version.into());
        self
    }

    /// Whether someone holds the lock now (held or breaking): `self.locked`.
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
    /// if !lock.status().await?.is_locked() {
    ///     println!("free: an acquire should succeed at once");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_locked(&self) -> bool {
        self.locked
    }
}

/// Who acquired a lock, as recorded with the lock (blob metadata, a Redis hash, the Cosmos DB
/// lock item).
///
/// ```no_run
/// # async fn demo(lock: azstore::blob::BlobLock) -> azstore::Result<()> {
/// if let Some(owner) = lock.status().await?.owner {
///     println!("{} (pid {:?}, label {:?}) since {:?}", owner.host, owner.pid, owner.label, owner.acquired_at);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockOwner {
    /// Host name.
    pub host: String,
    /// Process id.
    pub pid: Option<u32>,
    /// The label passed in [`LockOptions::label`](super::LockOptions::label).
    pub label: Option<String>,
    /// When it was acquired.
    pub acquired_at: Option<OffsetDateTime>,
}

impl LockOwner {
    /// An owner record; for [`LockTarget`](super::LockTarget) implementations outside azstore
    /// that read one back.
    ///
    /// ```
    /// let owner = azstore::lock::LockOwner::new("build-7", Some(4242), Some("nightly".into()), None);
    /// assert_eq!(owner.to_string(), "host=build-7 pid=4242 label=\"nightly\"");
    /// ```
    pub fn new(
        host: impl Into<String>,
        pid: Option<u32>,
        label: Option<String>,
        acquired_at: Option<OffsetDateTime>,
    ) -> LockOwner {
        LockOwner {
            host: host.into(),
            pid,
            label,
            acquired_at,
        }
    }

    /// This process, now, with `label`.
    pub(crate) fn here(label: Option<String>) -> LockOwner {
        LockOwner {
            host: hostname(),
            pid: Some(std::process::id()),
            label,
            acquired_at: Some(OffsetDateTime::now_utc()),
        }
    }

    /// `acquired_at` as RFC 3339 (empty when unknown), as the backends record it.
    pub(crate) fn acquired_at_rfc3339(&self) -> String {
        self.acquired_at
            .and_then(|t| {
                t.format(&time::format_description::well_known::Rfc3339)
                    .ok()
            })
            .unwrap_or_default()
    }
}

/// Parses an RFC 3339 time as recorded by [`LockOwner::acquired_at_rfc3339`].
pub(crate) fn parse_rfc3339(t: &str) -> Option<OffsetDateTime> {
    OffsetDateTime::parse(t.trim(), &time::format_description::well_known::Rfc3339).ok()
}

impl fmt::Display for LockOwner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "host={}", self.host)?;
        if let Some(p) = self.pid {
            write!(f, " pid={p}")?;
        }
        if let Some(l) = &self.label {
            write!(f, " label={l:?}")?;
        }
        Ok(())
    }
}

pub(crate) fn validate_label(label: &str) -> Result<()> {
    if label.len() > 256 || !label.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(Error::invalid_input(
            "lock label must be at most 256 printable ASCII characters",
        ));
    }
    Ok(())
}

/// This host's name, printable ASCII (`unknown` when it cannot be read).
pub(crate) fn hostname() -> String {
    let raw = host_name_raw().unwrap_or_else(|| "unknown".to_string());
    let clean: String = raw
        .chars()
        .map(|c| if c.is_ascii_graphic() { c } else { '?' })
        .take(255)
        .collect();
    if clean.is_empty() {
        "unknown".to_string()
    } else {
        clean
    }
}

#[cfg(unix)]
fn host_name_raw() -> Option<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for `buf.len()` bytes; gethostname writes at most that many
    // and we stop at the first NUL (or the end).
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return None;
    }
    let end = buf.iter().position(|b| *b == 0).unwrap_or(buf.len());
    Some(String::from_utf8_lossy(&buf[..end]).into_owned())
}

#[cfg(not(unix))]
fn host_name_raw() -> Option<String> {
    std::env::var("COMPUTERNAME").ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn labels_and_hostnames() {
        assert!(validate_label("nightly job #3").is_ok());
        assert!(validate_label("bad\nlabel").is_err());
        assert!(validate_label("ü").is_err());
        assert!(validate_label(&"x".repeat(257)).is_err());
        let h = hostname();
        assert!(!h.is_empty() && h.chars().all(|c| c.is_ascii_graphic()));
    }
}

/// Decides, from successive status reads, whether a lock has a live holder: the backend's
/// word, except that a holder whose record `version` has not changed for a whole lease
/// duration (on this clock) counts as gone — the Cosmos DB takeover rule, seen from outside.
/// Used by a waiting line, elections and shard groups.
#[derive(Debug, Default)]
pub(crate) struct Liveness {
    last: Option<(String, tokio::time::Instant)>,
}

impl Liveness {
    /// Whether the holder is alive, given that the lock is `held` with record `version`
    /// (`None` where the service expires leases itself) and leases last `lease`.
    pub(crate) fn alive_parts(
        &mut self,
        held: bool,
        version: Option<&str>,
        lease: Duration,
    ) -> bool {
        if !held {
            self.last = None;
            return false;
        }
        let Some(v) = version else {
            return true;
        };
        let now = tokio::time::Instant::now();
        match &self.last {
            Some((old, since)) if old == v => now.duration_since(*since) < lease,
            _ => {
                self.last = Some((v.to_string(), now));
                true
            }
        }
    }

    /// Whether the holder in `status` is alive (see [`alive_parts`](Self::alive_parts)).
    pub(crate) fn alive_status(&mut self, status: &LockStatus, lease: Duration) -> bool {
        self.alive_parts(status.locked, status.version.as_deref(), lease)
    }

    /// When the holder seen last counts as gone if its record does not change before then
    /// (`None` for a record without a version, or none held).
    pub(crate) fn deadline(&self, lease: Duration) -> Option<tokio::time::Instant> {
        self.last.as_ref().map(|(_, since)| *since + lease)
    }
}

/// The owner label of a slot closed by
/// [`Semaphore::set_permits`](super::Semaphore::set_permits): such a slot is held with an
/// infinite lease that nobody renews, so it is never granted (a reserved label: do not use it
/// for a lock of your own).
pub const CLOSED_SLOT_LABEL: &str = "azstore:closed-slot";

/// Whether a slot's status says it was closed by
/// [`Semaphore::set_permits`](super::Semaphore::set_permits).
pub(crate) fn is_closed(s: &LockStatus) -> bool {
    s.locked
        && s.owner
            .as_ref()
            .is_some_and(|o| o.label.as_deref() == Some(CLOSED_SLOT_LABEL))
}
