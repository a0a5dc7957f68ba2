//! Typed blob properties.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::http::Headers;
use crate::http_headers::HttpHeaders;
pub(crate) use crate::status::{
    LeaseDurationType, LeaseState, LeaseStatus, parse_lease_duration, parse_lease_status,
};

/// `x-ms-blob-type`.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::blob::BlobType;
/// if blob.get_properties().await?.blob_type == Some(BlobType::AppendBlob) {
///     println!("append with append_block");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
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
    ///
    /// ```
    /// assert_eq!(azstore::blob::BlobType::PageBlob.as_str(), "PageBlob");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            BlobType::BlockBlob => "BlockBlob",
            BlobType::AppendBlob => "AppendBlob",
            BlobType::PageBlob => "PageBlob",
        }
    }
}

/// What Get Blob Properties (and Get Blob) return.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let p = blob.get_properties().await?;
/// println!("{} bytes, {:?}, version {}, {:?}", p.content_length, p.blob_type, p.etag, p.metadata);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlobProperties {
    /// The version tag.
    pub etag: ETag,
    /// When the blob was last written.
    pub last_modified: Option<OffsetDateTime>,
    /// Size of the whole blob in bytes.
    pub content_length: u64,
    /// The stored HTTP headers (`Content-Type`, `Content-Encoding`, `Content-Language`,
    /// `Cache-Control`, `Content-Disposition`, `Content-MD5`): change one and pass them to
    /// [`BlobClient::set_http_headers`](crate::blob::BlobClient::set_http_headers) to keep the
    /// rest. `content_md5` is always the whole blob's stored MD5, on a ranged read too (the
    /// service sends it there as `x-ms-blob-content-md5`).
    pub http_headers: HttpHeaders,
    /// The service's MD5 of exactly the bytes of a ranged read asked with
    /// `x-ms-range-get-content-md5` (its `Content-MD5`), kept apart from the stored MD5;
    /// `None` on other reads.
    pub range_content_md5: Option<String>,
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
    pub access_tier: Option<crate::blob::write_options::AccessTier>,
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
    /// The immutability policy (`x-ms-immutability-policy-until-date` and `-mode`).
    pub immutability_policy: Option<ImmutabilityPolicy>,
    /// Whether a legal hold is on (`x-ms-legal-hold`).
    pub legal_hold: Option<bool>,
}

impl BlobProperties {
    /// Reads properties from response headers in one pass over them (every Get Blob and Get
    /// Blob Properties pays for this). For a ranged GET, the total size comes from
    /// `Content-Range`.
    pub(crate) fn from_headers(h: &Headers) -> Result<BlobProperties> {
        let mut etag = None;
        let mut content_range_total = None;
        let mut content_length = None;
        // `Content-MD5` is the stored MD5 on a whole read and the range's own on a ranged one;
        // a ranged read carries the stored MD5 in `x-ms-blob-content-md5`.
        let mut content_md5 = None;
        let mut blob_content_md5 = None;
        let mut p = BlobProperties {
            etag: ETag::new(String::new()),
            last_modified: None,
            content_length: 0,
            http_headers: HttpHeaders::default(),
            range_content_md5: None,
            metadata: BTreeMap::new(),
            blob_type: None,
            lease_state: None,
            lease_status: None,
            lease_duration: None,
            committed_block_count: None,
            sequence_number: None,
            copy_status: None,
            copy_id: None,
            tag_count: None,
            access_tier: None,
            access_tier_inferred: None,
            archive_status: None,
            sealed: None,
            version_id: None,
            is_current_version: None,
            encryption_scope: None,
            immutability_policy: None,
            legal_hold: None,
        };
        let mut policy_until = None;
        let mut policy_mode = None;
        let flag = |name: &str, v: &str| -> Result<bool> {
            v.trim()
                .to_ascii_lowercase()
                .parse()
                .map_err(|_| Error::decode(format!("response header {name} is malformed")))
        };
        let number = |name: &str, v: &str| -> Result<u64> {
            v.trim()
                .parse()
                .map_err(|_| Error::decode(format!("response header {name} is malformed")))
        };
        // First value wins, as `Headers::get` does.
        macro_rules! first {
            ($field:expr, $value:expr) => {
                if $field.is_none() {
                    $field = $value;
                }
            };
        }
        for (name, v) in h.iter() {
            match name {
                "content-md5" => {
                    first!(content_md5, Some(v));
                    continue;
                }
                "x-ms-blob-content-md5" => {
                    first!(blob_content_md5, Some(v));
                    continue;
                }
                _ => {}
            }
            if p.http_headers.take_first(name, v) {
                continue;
            }
            match name {
                "etag" => first!(etag, Some(v)),
                "last-modified" => first!(p.last_modified, crate::time_fmt::parse_http_date(v)),
                "content-range" => first!(
                    content_range_total,
                    // The total of `bytes a-b/total`; `Some(None)` when it is `*`.
                    Some(v.rsplit_once('/').and_then(|(_, t)| t.trim().parse().ok()))
                ),
                "content-length" => first!(content_length, Some(v)),
                "x-ms-blob-type" => first!(p.blob_type, BlobType::parse(v)),
                "x-ms-access-tier" => first!(
                    p.access_tier,
                    crate::blob::write_options::AccessTier::parse(v)
                ),
                "x-ms-access-tier-inferred" => {
                    first!(p.access_tier_inferred, Some(flag(name, v)?))
                }
                "x-ms-archive-status" => first!(p.archive_status, Some(v.to_string())),
                "x-ms-blob-sealed" => first!(p.sealed, Some(flag(name, v)?)),
                "x-ms-version-id" => first!(p.version_id, Some(v.to_string())),
                "x-ms-is-current-version" => first!(p.is_current_version, Some(flag(name, v)?)),
                "x-ms-encryption-scope" => first!(p.encryption_scope, Some(v.to_string())),
                "x-ms-immutability-policy-until-date" => first!(policy_until, Some(v)),
                "x-ms-immutability-policy-mode" => first!(policy_mode, Some(v)),
                "x-ms-legal-hold" => first!(p.legal_hold, Some(flag(name, v)?)),
                "x-ms-lease-state" => first!(p.lease_state, LeaseState::parse(v)),
                "x-ms-lease-status" => first!(p.lease_status, parse_lease_status(Some(v))),
                "x-ms-lease-duration" => first!(p.lease_duration, parse_lease_duration(Some(v))),
                "x-ms-blob-committed-block-count" => {
                    first!(p.committed_block_count, Some(number(name, v)?))
                }
                "x-ms-blob-sequence-number" => first!(p.sequence_number, Some(number(name, v)?)),
                "x-ms-copy-status" => first!(p.copy_status, Some(v.to_string())),
                "x-ms-copy-id" => first!(p.copy_id, Some(v.to_string())),
                "x-ms-tag-count" => first!(p.tag_count, Some(number(name, v)?)),
                _ => {
                    if let Some(key) = name.strip_prefix("x-ms-meta-") {
                        p.metadata.insert(key.to_string(), v.to_string());
                    }
                }
            }
        }
        p.etag = etag
            .map(ETag::new)
            .ok_or_else(|| Error::decode("response is missing the etag header"))?;
        p.immutability_policy = match (policy_until, policy_mode) {
            (None, _) => None,
            (Some(until), mode) => Some(ImmutabilityPolicy::new(
                crate::time_fmt::parse_http_date(until).ok_or_else(|| {
                    Error::decode(
                        "response header x-ms-immutability-policy-until-date is malformed",
                    )
                })?,
                mode.and_then(ImmutabilityPolicyMode::parse)
                    .ok_or_else(|| {
                        Error::decode("response header x-ms-immutability-policy-mode is malformed")
                    })?,
            )),
        };
        let ranged = content_range_total.is_some();
        p.http_headers.content_md5 = match (blob_content_md5, ranged) {
            (Some(stored), _) => Some(stored.to_string()),
            (None, false) => content_md5.map(str::to_string),
            (None, true) => None,
        };
        if ranged {
            p.range_content_md5 = content_md5.map(str::to_string);
        }
        p.content_length = match (content_range_total.flatten(), content_length) {
            (Some(total), _) => total,
            (None, Some(v)) => number("content-length", v)?,
            (None, None) => 0,
        };
        Ok(p)
    }
}

/// Whether an immutability policy may still be changed (`x-ms-immutability-policy-mode`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ImmutabilityPolicyMode {
    /// The expiry may be shortened or extended and the policy deleted (`Unlocked`).
    Unlocked,
    /// The expiry may only be extended; the policy cannot be deleted (`Locked`).
    Locked,
}

impl ImmutabilityPolicyMode {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            ImmutabilityPolicyMode::Unlocked => "Unlocked",
            ImmutabilityPolicyMode::Locked => "Locked",
        }
    }

    pub(crate) fn parse(s: &str) -> Option<ImmutabilityPolicyMode> {
        match s.trim() {
            v if v.eq_ignore_ascii_case("unlocked") => Some(ImmutabilityPolicyMode::Unlocked),
            v if v.eq_ignore_ascii_case("locked") => Some(ImmutabilityPolicyMode::Locked),
            _ => None,
        }
    }
}

/// A blob's time-based retention: no change or delete before `expiry`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct ImmutabilityPolicy {
    /// Until when the blob is immutable (`x-ms-immutability-policy-until-date`; the service
    /// keeps whole seconds).
    pub expiry: OffsetDateTime,
    /// Unlocked or locked.
    pub mode: ImmutabilityPolicyMode,
}

impl ImmutabilityPolicy {
    /// A policy until `expiry` in `mode`.
    pub fn new(expiry: OffsetDateTime, mode: ImmutabilityPolicyMode) -> ImmutabilityPolicy {
        ImmutabilityPolicy { expiry, mode }
    }

    /// The same policy, locked.
    #[must_use]
    pub fn locked(self) -> ImmutabilityPolicy {
        ImmutabilityPolicy {
            mode: ImmutabilityPolicyMode::Locked,
            ..self
        }
    }

    /// The policy a response's headers describe, if they carry one.
    pub(crate) fn from_headers(h: &Headers) -> Result<Option<ImmutabilityPolicy>> {
        let Some(until) = h.get("x-ms-immutability-policy-until-date") else {
            return Ok(None);
        };
        let expiry = crate::time_fmt::parse_http_date(until).ok_or_else(|| {
            Error::decode("response header x-ms-immutability-policy-until-date is malformed")
        })?;
        let mode = h
            .get("x-ms-immutability-policy-mode")
            .and_then(ImmutabilityPolicyMode::parse)
            .ok_or_else(|| {
                Error::decode(
                    "response header x-ms-immutability-policy-mode is missing or malformed",
                )
            })?;
        Ok(Some(ImmutabilityPolicy { expiry, mode }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_in_one_pass() {
        let h = Headers::from_pairs(
            [
                ("etag", "\"0x8D\""),
                ("last-modified", "Sun, 22 Nov 2026 00:13:20 GMT"),
                ("content-length", "5"),
                ("content-range", "bytes 0-4/77"),
                ("content-type", "text/plain"),
                ("x-ms-blob-type", "BlockBlob"),
                ("x-ms-lease-state", "leased"),
                ("x-ms-lease-status", "locked"),
                ("x-ms-lease-duration", "infinite"),
                ("x-ms-meta-owner", "a"),
                ("x-ms-meta-team", "b"),
                ("x-ms-tag-count", "2"),
            ]
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        );
        let p = BlobProperties::from_headers(&h).unwrap();
        assert_eq!(p.etag.as_str(), "\"0x8D\"");
        assert_eq!(p.content_length, 77, "the total of a ranged GET");
        assert_eq!(p.last_modified.unwrap().unix_timestamp(), 1_795_306_400);
        assert_eq!(p.http_headers.content_type.as_deref(), Some("text/plain"));
        assert_eq!(p.blob_type, Some(BlobType::BlockBlob));
        assert_eq!(p.lease_state, Some(LeaseState::Leased));
        assert_eq!(p.lease_status, Some(LeaseStatus::Locked));
        assert_eq!(p.lease_duration, Some(LeaseDurationType::Infinite));
        assert_eq!(p.metadata.len(), 2);
        assert_eq!(p.metadata["team"], "b");
        assert_eq!(p.tag_count, Some(2));
        assert_eq!(p.copy_status, None);
        assert_eq!(p.http_headers.content_md5, None);
        assert_eq!(p.range_content_md5, None);
        let missing = Headers::from_pairs(vec![("content-length".into(), "1".into())]);
        assert!(BlobProperties::from_headers(&missing).is_err());
        let bad = Headers::from_pairs(vec![
            ("etag".into(), "\"1\"".into()),
            ("content-length".into(), "x".into()),
        ]);
        assert!(BlobProperties::from_headers(&bad).is_err());
    }

    #[test]
    fn the_stored_md5_of_a_ranged_read_is_x_ms_blob_content_md5() {
        let headers = |pairs: &[(&str, &str)]| {
            Headers::from_pairs(
                pairs
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
            )
        };
        // As Azure answered a ranged read asked with x-ms-range-get-content-md5.
        let ranged = headers(&[
            ("etag", "\"1\""),
            ("content-range", "bytes 0-10/11"),
            ("content-md5", "range=="),
            ("x-ms-blob-content-md5", "XrY7u+Ae7tCTyyK7j1rNww=="),
        ]);
        let p = BlobProperties::from_headers(&ranged).unwrap();
        assert_eq!(
            p.http_headers.content_md5.as_deref(),
            Some("XrY7u+Ae7tCTyyK7j1rNww==")
        );
        assert_eq!(p.range_content_md5.as_deref(), Some("range=="));
        // A ranged read of a blob without a stored MD5: the range's is not the blob's.
        let bare = headers(&[
            ("etag", "\"1\""),
            ("content-range", "bytes 0-10/11"),
            ("content-md5", "range=="),
        ]);
        let p = BlobProperties::from_headers(&bare).unwrap();
        assert_eq!(p.http_headers.content_md5, None);
        // A whole read: Content-MD5 is the stored one.
        let whole = headers(&[("etag", "\"1\""), ("content-md5", "whole==")]);
        let p = BlobProperties::from_headers(&whole).unwrap();
        assert_eq!(p.http_headers.content_md5.as_deref(), Some("whole=="));
        assert_eq!(p.range_content_md5, None);
    }
}
