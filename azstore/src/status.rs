//! States the services report on resources, shared by Blob and File: a lease's state, status
//! and duration, and the status of a copy.

/// `x-ms-lease-state`.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::LeaseState;
/// match blob.get_properties().await?.lease_state {
///     Some(LeaseState::Leased | LeaseState::Breaking) => println!("held by someone"),
///     _ => println!("free to acquire"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseState {
    /// No lease; can be acquired.
    Available,
    /// Leased.
    Leased,
    /// The lease expired; can be acquired.
    Expired,
    /// Being broken; cannot be acquired until the break period ends.
    Breaking,
    /// Broken; can be acquired.
    Broken,
}

impl LeaseState {
    pub(crate) fn parse(s: &str) -> Option<LeaseState> {
        Some(match s.to_ascii_lowercase().as_str() {
            "available" => LeaseState::Available,
            "leased" => LeaseState::Leased,
            "expired" => LeaseState::Expired,
            "breaking" => LeaseState::Breaking,
            "broken" => LeaseState::Broken,
            _ => return None,
        })
    }
}

/// `x-ms-lease-status`.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::LeaseStatus;
/// let locked = blob.get_properties().await?.lease_status == Some(LeaseStatus::Locked);
/// # let _ = locked;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseStatus {
    /// Leased.
    Locked,
    /// Not leased.
    Unlocked,
}

/// `x-ms-lease-duration` of a leased resource.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::LeaseDurationType;
/// if blob.get_properties().await?.lease_duration == Some(LeaseDurationType::Infinite) {
///     println!("leased until released or broken");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LeaseDurationType {
    /// Never expires.
    Infinite,
    /// 15–60 s.
    Fixed,
}

pub(crate) fn parse_lease_status(s: Option<&str>) -> Option<LeaseStatus> {
    match s {
        Some("locked") => Some(LeaseStatus::Locked),
        Some("unlocked") => Some(LeaseStatus::Unlocked),
        _ => None,
    }
}

pub(crate) fn parse_lease_duration(s: Option<&str>) -> Option<LeaseDurationType> {
    match s {
        Some("infinite") => Some(LeaseDurationType::Infinite),
        Some("fixed") => Some(LeaseDurationType::Fixed),
        _ => None,
    }
}

/// The state of a copy (`x-ms-copy-status`).
///
/// ```no_run
/// # async fn demo(dest: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::CopyStatus;
/// match dest.get_properties().await?.copy_state() {
///     Some(CopyStatus::Pending) => println!("still copying"),
///     Some(CopyStatus::Success) => println!("copied"),
///     Some(other) => println!("copy ended: {other:?}"),
///     None => println!("never a copy destination"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CopyStatus {
    /// Still copying.
    Pending,
    /// Done.
    Success,
    /// Aborted by Abort Copy Blob.
    Aborted,
    /// Failed (see the description in the blob's properties).
    Failed,
    /// A status azstore does not know.
    Other(String),
}

impl CopyStatus {
    pub(crate) fn parse(s: &str) -> CopyStatus {
        match s {
            "pending" => CopyStatus::Pending,
            "success" => CopyStatus::Success,
            "aborted" => CopyStatus::Aborted,
            "failed" => CopyStatus::Failed,
            other => CopyStatus::Other(other.to_string()),
        }
    }
}
