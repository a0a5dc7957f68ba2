//! SMB conflicts seen from REST, and a retry helper that waits them out.
//!
//! Azure Files is shared with SMB clients (mounted drives). An SMB client that opens a file
//! without sharing write/delete access, locks a byte range, or marks the file for deletion
//! makes REST calls on that file fail with 409 while its handle is open:
//!
//! | code | meaning | clears when |
//! |---|---|---|
//! | `SharingViolation` | open with an incompatible sharing mode | the handle closes, or is force-closed |
//! | `FileLockConflict` | a byte range is locked | the lock is released, or its handle force-closed |
//! | `DeletePending` | marked for deletion | the last handle closes (then the file is gone) |
//!
//! These are ordinary [`Error`]s of kind [`ErrorKind::Conflict`](crate::ErrorKind::Conflict);
//! [`Error::smb_conflict`] names which one. They are not transient in the pipeline's sense
//! (an SMB handle can stay open for hours), so the pipeline never retries them;
//! [`retry_smb_conflicts`] does, under a policy you choose. A conflict that never clears (a
//! crashed VM, a forgotten mount) is ended by listing the handles with
//! [`FileClient::list_handles`](crate::file::FileClient::list_handles) and closing them with
//! [`FileClient::force_close_handles`](crate::file::FileClient::force_close_handles).

use std::future::Future;
use std::time::Duration;

use crate::error::{Error, ErrorCode, Result};
use crate::http::RetryPolicy;

/// Which SMB conflict a 409 reports.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::SmbConflict;
/// match file.delete(None).await {
///     Err(e) if e.smb_conflict() == Some(SmbConflict::DeletePending) => {} // going away anyway
///     other => other?,
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SmbConflict {
    /// `SharingViolation`: an SMB handle with an incompatible sharing mode is open.
    SharingViolation,
    /// `FileLockConflict`: part of the file is byte-range locked by an SMB client.
    FileLockConflict,
    /// `DeletePending`: an SMB client marked the file for deletion.
    DeletePending,
}

impl Error {
    /// Which SMB conflict this error reports, if any (409 `SharingViolation`,
    /// `FileLockConflict` or `DeletePending`).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::SmbConflict;
    /// if let Err(e) = file.delete(None).await {
    ///     match e.smb_conflict() {
    ///         Some(SmbConflict::SharingViolation) => println!("open in an SMB client: try later"),
    ///         Some(other) => println!("{other:?}"),
    ///         None => return Err(e),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn smb_conflict(&self) -> Option<SmbConflict> {
        match self.error_code()? {
            ErrorCode::SharingViolation => Some(SmbConflict::SharingViolation),
            ErrorCode::FileLockConflict => Some(SmbConflict::FileLockConflict),
            ErrorCode::DeletePending | ErrorCode::SMBDeletePending => {
                Some(SmbConflict::DeletePending)
            }
            _ => None,
        }
    }

    /// 409 `SharingViolation`: an SMB client holds the file open in a conflicting mode. It
    /// clears when that handle closes; when it does not, the open handles can be listed and
    /// force-closed (the service's List Handles / Force Close Handles).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::HandleSelector;
    /// if let Err(e) = file.delete(None).await {
    ///     if e.is_sharing_violation() {
    ///         file.force_close_handles(&HandleSelector::All).await?; // the SMB client loses its handle
    ///         file.delete(None).await?;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_sharing_violation(&self) -> bool {
        self.smb_conflict() == Some(SmbConflict::SharingViolation)
    }

    /// 409 `DeletePending` (the seed's `SMBDeletePending`): the file or directory is marked for
    /// deletion while an SMB client still has it open; it is gone once the last handle closes.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// match file.create(0, None).await {
    ///     Err(e) if e.is_delete_pending() => println!("wait for the old file to go"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_delete_pending(&self) -> bool {
        self.smb_conflict() == Some(SmbConflict::DeletePending)
    }

    /// 409 `ShareBeingDeleted`: the share is being deleted; creating it again succeeds only
    /// after the delete finished (typically ~30 s on Azure).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// match share.create().await {
    ///     Err(e) if e.is_share_being_deleted() => println!("deleted a moment ago: retry in 30 s"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_share_being_deleted(&self) -> bool {
        self.error_code() == Some(&ErrorCode::ShareBeingDeleted)
    }

    /// 412 on a file write because of its lease: the file is leased and no or another lease
    /// id was sent (`LeaseIdMissing`, `LeaseIdMismatchWithFileOperation`), or a lease id was
    /// sent but the file has no active lease (`LeaseNotPresentWithFileOperation`).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// match file.put_range(0, bytes::Bytes::from_static(b"x"), None).await {
    ///     Err(e) if e.is_file_lease_refusal() => println!("leased by someone: pass the lease id"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_file_lease_refusal(&self) -> bool {
        self.status() == Some(412)
            && matches!(
                self.error_code(),
                Some(
                    ErrorCode::LeaseIdMissing
                        | ErrorCode::LeaseIdMismatchWithFileOperation
                        | ErrorCode::LeaseNotPresentWithFileOperation
                )
            )
    }
}

/// How [`retry_smb_conflicts`] waits for SMB handles to close. The default: up to 10
/// retries, 100 ms doubling to at most 5 s, at most 60 s in all, on `SharingViolation` and
/// `FileLockConflict` (not `DeletePending`).
///
/// ```
/// let retry = azstore::file::SmbRetry::default().delete_pending(true);
/// # let _ = retry;
/// ```
#[derive(Debug, Clone)]
#[must_use]
pub struct SmbRetry {
    policy: RetryPolicy,
    delete_pending: bool,
}

impl Default for SmbRetry {
    /// Up to 10 retries, 100 ms doubling to at most 5 s, full jitter, at most 60 s in all;
    /// retries `SharingViolation` and `FileLockConflict` but not `DeletePending`.
    fn default() -> Self {
        SmbRetry {
            policy: RetryPolicy::default()
                .max_retries(10)
                .initial_delay(Duration::from_millis(100))
                .max_delay(Duration::from_secs(5))
                .max_elapsed(Some(Duration::from_secs(60))),
            delete_pending: false,
        }
    }
}

impl SmbRetry {
    /// Replaces the delay schedule.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::file::SmbRetry;
    /// use azstore::http::RetryPolicy;
    /// let patient = SmbRetry::default().policy(RetryPolicy::default().max_retries(30).max_elapsed(Some(Duration::from_secs(300))));
    /// # let _ = patient;
    /// ```
    pub fn policy(mut self, v: RetryPolicy) -> Self {
        self.policy = v;
        self
    }

    /// Also wait out `DeletePending` (useful before re-creating a file an SMB client is
    /// deleting; a write to it would only find the file gone afterwards).
    ///
    /// ```
    /// let retry = azstore::file::SmbRetry::default().delete_pending(true);
    /// # let _ = retry;
    /// ```
    pub fn delete_pending(mut self, v: bool) -> Self {
        self.delete_pending = v;
        self
    }

    fn retries(&self, e: &Error) -> bool {
        match e.smb_conflict() {
            Some(SmbConflict::SharingViolation | SmbConflict::FileLockConflict) => true,
            Some(SmbConflict::DeletePending) => self.delete_pending,
            None => false,
        }
    }
}

/// Runs `op` and, while it fails with an SMB conflict (see [`SmbRetry`]), waits and runs it
/// again until it succeeds, fails otherwise, or the policy gives up (then the last
/// conflict error is returned).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::{retry_smb_conflicts, SmbRetry};
/// let data = bytes::Bytes::from_static(b"report");
/// retry_smb_conflicts(&SmbRetry::default(), || file.put_range(0, data.clone(), None)).await?;
/// # Ok(()) }
/// ```
pub async fn retry_smb_conflicts<T, F, Fut>(retry: &SmbRetry, mut op: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut schedule = retry.policy.schedule();
    loop {
        match op().await {
            Err(e) if retry.retries(&e) => match schedule.next_delay() {
                Some(d) => {
                    tracing::debug!(error = %e, delay = ?d, "SMB conflict, waiting for the handle to close");
                    tokio::time::sleep(d).await;
                }
                None => {
                    return Err(e.context(
                        "an SMB handle stayed open; see who holds it with list_handles() and \
                         close it with force_close_handles()",
                    ));
                }
            },
            other => return other,
        }
    }
}
