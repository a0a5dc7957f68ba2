//! Who holds a lock: the owner identity recorded at acquisition (host name, pid, label, time)
//! and what [`BlobLock::status`](super::BlobLock::status) reports.

use std::collections::BTreeMap;
use std::fmt;

use time::OffsetDateTime;

use crate::blob::LeaseState;
use crate::error::{Error, Result};
use crate::lock::{
    META_ACQUIRED_AT, META_FENCING_TOKEN, META_OWNER_HOST, META_OWNER_LABEL, META_OWNER_PID,
};

/// What [`BlobLock::status`](super::BlobLock::status) reports.
///
/// ```no_run
/// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
/// let status = lock.status().await?;
/// println!(
///     "exists: {}, locked: {}, last token: {:?}, last owner: {:?}",
///     status.exists, status.is_locked(), status.fencing_token, status.owner
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct LockStatus {
    /// Whether the lock blob exists (it is created on first acquire).
    pub exists: bool,
    /// The lease state of the lock blob.
    pub lease_state: Option<LeaseState>,
    /// The fencing token of the latest acquisition.
    pub fencing_token: Option<u64>,
    /// The latest holder (who may have released it since: see `lease_state`).
    pub owner: Option<LockOwner>,
}

impl LockStatus {
    pub(crate) fn from_metadata(
        lease_state: Option<LeaseState>,
        meta: &BTreeMap<String, String>,
    ) -> Result<LockStatus> {
        let fencing_token = meta
            .get(META_FENCING_TOKEN)
            .and_then(|v| v.trim().parse().ok());
        let owner = meta.get(META_OWNER_HOST).map(|host| LockOwner {
            host: host.clone(),
            pid: meta.get(META_OWNER_PID).and_then(|p| p.trim().parse().ok()),
            label: meta.get(META_OWNER_LABEL).cloned(),
            acquired_at: meta.get(META_ACQUIRED_AT).and_then(|t| {
                OffsetDateTime::parse(t.trim(), &time::format_description::well_known::Rfc3339).ok()
            }),
        });
        Ok(LockStatus {
            exists: true,
            lease_state,
            fencing_token,
            owner,
        })
    }

    /// Whether someone holds the lock now (leased or breaking).
    ///
    /// ```no_run
    /// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
    /// if !lock.status().await?.is_locked() {
    ///     println!("free: an acquire should succeed at once");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_locked(&self) -> bool {
        matches!(
            self.lease_state,
            Some(LeaseState::Leased | LeaseState::Breaking)
        )
    }
}

/// Who acquired a lock, as recorded in the lock blob's metadata.
///
/// ```no_run
/// # async fn demo(lock: azstore::lock::BlobLock) -> azstore::Result<()> {
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

    #[test]
    fn status_from_metadata() {
        let mut m = BTreeMap::new();
        m.insert(META_FENCING_TOKEN.into(), "7".into());
        m.insert(META_OWNER_HOST.into(), "h".into());
        m.insert(META_OWNER_PID.into(), "42".into());
        m.insert(META_ACQUIRED_AT.into(), "2026-11-22T00:00:00Z".into());
        let s = LockStatus::from_metadata(Some(LeaseState::Leased), &m).unwrap();
        assert!(s.is_locked());
        assert_eq!(s.fencing_token, Some(7));
        let o = s.owner.unwrap();
        assert_eq!(o.pid, Some(42));
        assert!(o.acquired_at.is_some());
        assert_eq!(o.to_string(), "host=h pid=42");
        // Garbage never panics.
        m.insert(META_FENCING_TOKEN.into(), "x".into());
        m.insert(META_OWNER_PID.into(), "-".into());
        let s = LockStatus::from_metadata(None, &m).unwrap();
        assert_eq!(s.fencing_token, None);
    }
}
