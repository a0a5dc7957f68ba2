//! Typed blob properties.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::Result;
use crate::http::Headers;

/// `x-ms-lease-state`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
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
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseStatus {
    /// Leased.
    Locked,
    /// Not leased.
    Unlocked,
}

/// `x-ms-lease-duration` of a leased resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LeaseDurationType {
    /// Never expires.
    Infinite,
    /// 15–60 s.
    Fixed,
}

/// `x-ms-blob-type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BlobType {
    /// Block blob.
    BlockBlob,
    /// Append blob.
    AppendBlob,
    /// Page blob.
    PageBlob,
}

impl BlobType {
    pub(crate) fn parse(s: &str) -> Option<BlobType> {
        match s {
            "BlockBlob" => Some(BlobType::BlockBlob),
            "AppendBlob" => Some(BlobType::AppendBlob),
            "PageBlob" => Some(BlobType::PageBlob),
            _ => None,
        }
    }

    /// The header value.
    pub fn as_str(self) -> &'static str {
        match self {
            BlobType::BlockBlob => "BlockBlob",
            BlobType::AppendBlob => "AppendBlob",
            BlobType::PageBlob => "PageBlob",
        }
    }
}

/// What Get Blob Properties (and Get Blob) return.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlobProperties {
    /// The version tag.
    pub etag: ETag,
    /// When the blob was last written.
    pub last_modified: Option<OffsetDateTime>,
    /// Size of the whole blob in bytes.
    pub content_length: u64,
    /// `Content-Type`.
    pub content_type: Option<String>,
    /// `Content-Encoding`.
    pub content_encoding: Option<String>,
    /// `Content-Language`.
    pub content_language: Option<String>,
    /// `Cache-Control`.
    pub cache_control: Option<String>,
    /// `Content-Disposition`.
    pub content_disposition: Option<String>,
    /// `Content-MD5` (base64), when the service has one.
    pub content_md5: Option<String>,
    /// User metadata (`x-ms-meta-*`).
    pub metadata: BTreeMap<String, String>,
    /// Block, append or page blob.
    pub blob_type: Option<BlobType>,
    /// Lease state.
    pub lease_state: Option<LeaseState>,
    /// Lease status.
    pub lease_status: Option<LeaseStatus>,
    /// Lease duration kind, when leased.
    pub lease_duration: Option<LeaseDurationType>,
    /// Number of committed blocks (append blobs).
    pub committed_block_count: Option<u64>,
    /// Page blob sequence number.
    pub sequence_number: Option<u64>,
    /// Copy status of the last copy into this blob (`pending`, `success`, `aborted`, `failed`).
    pub copy_status: Option<String>,
    /// Copy id of the last copy into this blob.
    pub copy_id: Option<String>,
    /// Number of index tags on the blob.
    pub tag_count: Option<u64>,
    /// Access tier (`x-ms-access-tier`).
    pub access_tier: Option<crate::blob::AccessTier>,
    /// Whether the tier was inferred from the account default (`x-ms-access-tier-inferred`).
    pub access_tier_inferred: Option<bool>,
    /// Rehydration in progress, e.g. `rehydrate-pending-to-hot` (`x-ms-archive-status`).
    pub archive_status: Option<String>,
    /// Whether an append blob is sealed (`x-ms-blob-sealed`).
    pub sealed: Option<bool>,
    /// The version read, on accounts with versioning (`x-ms-version-id`).
    pub version_id: Option<String>,
    /// Whether that version is the current one (`x-ms-is-current-version`).
    pub is_current_version: Option<bool>,
    /// The encryption scope of the data (`x-ms-encryption-scope`).
    pub encryption_scope: Option<String>,
}

impl BlobProperties {
    /// Reads properties from response headers. For a ranged GET, the total size comes from
    /// `Content-Range`.
    pub(crate) fn from_headers(h: &Headers) -> Result<BlobProperties> {
        let content_length = match h.get("content-range").and_then(|r| r.rsplit_once('/')) {
            Some((_, total)) => total.trim().parse().ok(),
            None => None,
        };
        let content_length = match content_length {
            Some(n) => n,
            None => h.parse::<u64>("content-length")?.unwrap_or(0),
        };
        let s = |n: &str| h.get(n).map(str::to_string);
        Ok(BlobProperties {
            etag: h.require_etag()?,
            last_modified: h.last_modified(),
            content_length,
            content_type: s("content-type"),
            content_encoding: s("content-encoding"),
            content_language: s("content-language"),
            cache_control: s("cache-control"),
            content_disposition: s("content-disposition"),
            content_md5: s("content-md5"),
            metadata: h.metadata(),
            blob_type: h.get("x-ms-blob-type").and_then(BlobType::parse),
            lease_state: h.get("x-ms-lease-state").and_then(LeaseState::parse),
            lease_status: parse_lease_status(h.get("x-ms-lease-status")),
            lease_duration: parse_lease_duration(h.get("x-ms-lease-duration")),
            committed_block_count: h.parse("x-ms-blob-committed-block-count")?,
            sequence_number: h.parse("x-ms-blob-sequence-number")?,
            copy_status: s("x-ms-copy-status"),
            copy_id: s("x-ms-copy-id"),
            tag_count: h.parse("x-ms-tag-count")?,
            access_tier: h
                .get("x-ms-access-tier")
                .and_then(crate::blob::AccessTier::parse),
            access_tier_inferred: h.parse("x-ms-access-tier-inferred")?,
            archive_status: s("x-ms-archive-status"),
            sealed: h.parse("x-ms-blob-sealed")?,
            version_id: s("x-ms-version-id"),
            is_current_version: h.parse("x-ms-is-current-version")?,
            encryption_scope: s("x-ms-encryption-scope"),
        })
    }
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
