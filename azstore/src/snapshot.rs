//! The id of a blob or share snapshot.

/// A snapshot id: the timestamp Snapshot Blob and Snapshot Share return (`x-ms-snapshot`),
/// opaque. Blob and File name snapshots with it.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let snap = blob.snapshot(&Conditions::none()).await?;
/// let id = snap.snapshot.clone(); // keep it to read this version later
/// println!("{}", id.as_str());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SnapshotId(String);

impl SnapshotId {
    /// Wraps a snapshot timestamp (e.g. from a listing).
    pub fn new(s: impl Into<String>) -> SnapshotId {
        SnapshotId(s.into())
    }

    /// The value as sent in `?snapshot=`.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Display for SnapshotId {
    /// The timestamp as the service wrote it.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
