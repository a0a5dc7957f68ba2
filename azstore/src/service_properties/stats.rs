//! Get Service Stats: the geo-replication state of an RA-GRS account's secondary location.

use serde::Deserialize;

use crate::error::{Error, Result};

/// Geo-replication status of the secondary location (`GeoReplication/Status`).
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::blob::BlobServiceClient;
/// let stats = BlobServiceClient::new(&account.secondary()?)?.get_service_stats().await?;
/// use azstore::service_properties::GeoReplicationStatus;
/// if stats.status != GeoReplicationStatus::Live {
///     eprintln!("the secondary is not readable as a copy yet: {:?}", stats.status);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GeoReplicationStatus {
    /// The secondary is active and operational (`live`).
    Live,
    /// The initial synchronisation is in progress (`bootstrap`): the secondary is not yet
    /// readable as a copy of the primary.
    Bootstrap,
    /// The secondary location is temporarily unavailable (`unavailable`).
    Unavailable,
    /// A status this version of azstore does not know, as the service sent it.
    Other(String),
}

/// Get Service Stats: the replication state of the secondary location of an account with
/// read-access geo-redundant storage (RA-GRS / RA-GZRS).
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::blob::BlobServiceClient;
/// let stats = BlobServiceClient::new(&account.secondary()?)?.get_service_stats().await?;
/// println!("{:?}, everything written before {:?} is readable there", stats.status, stats.last_sync_time);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServiceStats {
    /// Replication status.
    pub status: GeoReplicationStatus,
    /// Every write to the primary before this time is readable on the secondary (writes
    /// after it may or may not be); `None` while bootstrapping or unavailable.
    pub last_sync_time: Option<time::OffsetDateTime>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawStats {
    geo_replication: RawGeo,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawGeo {
    status: String,
    #[serde(default)]
    last_sync_time: Option<String>,
}

impl ServiceStats {
    /// Parses a `<StorageServiceStats>` document (a leading BOM is accepted).
    pub(crate) fn from_xml(body: &[u8]) -> Result<ServiceStats> {
        const OP: &str = "Get Service Stats";
        crate::http::checks::expect_xml_root(body, "StorageServiceStats", OP)?;
        let raw: RawStats = crate::http::checks::from_xml(body, OP)?;
        let g = raw.geo_replication;
        let status = match g.status.trim() {
            "live" => GeoReplicationStatus::Live,
            "bootstrap" => GeoReplicationStatus::Bootstrap,
            "unavailable" => GeoReplicationStatus::Unavailable,
            other => GeoReplicationStatus::Other(other.to_string()),
        };
        let last_sync_time = match g.last_sync_time.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(t) => Some(crate::time_fmt::parse_http_date(t).ok_or_else(|| {
                Error::decode(format!(
                    "{OP} response is malformed: bad <LastSyncTime> {t:?}"
                ))
            })?),
        };
        Ok(ServiceStats {
            status,
            last_sync_time,
        })
    }
}
