//! Copy Blob (asynchronous, with status polling), Copy Blob From URL (synchronous) and Abort
//! Copy Blob. Both copies take conditions on the **source** (`x-ms-source-if-*`) and on the
//! **destination** (the usual conditional headers).

use std::time::Duration;

use time::OffsetDateTime;

use crate::blob::client::BlobClient;
use crate::blob::from_url::{CopyTags, check_tags_mode};
use crate::blob::lifecycle::RehydratePriority;
use crate::blob::limits::validate_source_url;
use crate::blob::models::BlobProperties;
use crate::blob::write_options::{BlobWriteOptions, WriteKind};
use crate::conditions::{Allowed, Conditions, ETag};
use crate::credential::Credential;
use crate::error::{Error, ErrorKind, Result};
use crate::http::{Method, Response};
pub use crate::status::CopyStatus;
use crate::storage::copy_source::{SourceAuthorization, check_source_checksum, source_checksum};
use crate::storage::sas::SasBuilder;
use crate::storage::{SourceConditions, StorageRequest};

impl BlobProperties {
    /// The state of the last copy into this blob, typed.
    ///
    /// ```no_run
    /// # async fn demo(dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::CopyStatus;
    /// let done = dest.get_properties().await?.copy_state() == Some(CopyStatus::Success);
    /// # let _ = done; Ok(()) }
    /// ```
    pub fn copy_state(&self) -> Option<CopyStatus> {
        self.copy_status.as_deref().map(CopyStatus::parse)
    }
}

/// Options of a copy.
///
/// ```no_run
/// # async fn demo(dest: azstore::blob::BlobClient, url: String, source_etag: azstore::ETag) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::CopyOptions;
/// // Copy only the version we looked at, and never over an existing destination.
/// let options = CopyOptions::new(Conditions::if_not_exists())
///     .source_conditions(Conditions::if_match(&source_etag))
///     .meta("copied-from", "reports");
/// dest.copy_from_url(&url, &options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct CopyOptions {
    /// Conditions on the source blob (sent as `x-ms-source-if-*`; no lease id).
    pub source_conditions: Conditions,
    /// Conditions on the destination blob (this client's blob), including its lease id.
    pub conditions: Conditions,
    /// Metadata (when empty the source's metadata is copied), tier, tags and encryption
    /// scope of the destination. HTTP headers are refused: a copy takes the source's.
    pub write: BlobWriteOptions,
    /// (Copy Blob From URL) The MD5 (base64) the source must have, checked by the service
    /// (`x-ms-source-content-md5`; 400 `Md5Mismatch` otherwise).
    pub source_content_md5: Option<String>,
    /// (Copy Blob From URL) The CRC-64 (base64, see
    /// [`crc64_base64`](crate::blob::crc64_base64)) the source must have, checked by the
    /// service (`x-ms-source-content-crc64`; 400 `Crc64Mismatch` otherwise). Not with an MD5.
    pub source_content_crc64: Option<String>,
    /// (Copy Blob From URL) Where the destination's index tags come from.
    pub tags: Option<CopyTags>,
    /// (Copy Blob From URL) A bearer token the service reads the source with.
    pub source_authorization: Option<SourceAuthorization>,
    /// (Copy Blob, append blobs) Seal the destination after the copy (`x-ms-seal-blob`).
    pub seal: bool,
    /// (Copy Blob from an archived source) How fast the destination is rehydrated.
    pub rehydrate_priority: Option<RehydratePriority>,
}

impl CopyOptions {
    /// Options for a copy whose destination (this client's blob) is written under
    /// `conditions` — a copy replaces what is there, so the choice is visible (there is no
    /// `Default`): `Conditions::if_not_exists()` creates only, `Conditions::if_match(&etag)`
    /// replaces only the version you read, `Conditions::none()` is last writer wins.
    ///
    /// ```
    /// use azstore::{Conditions, blob::CopyOptions};
    /// # fn demo(source_etag: azstore::ETag) {
    /// let opts = CopyOptions::new(Conditions::if_not_exists())
    ///     .source_conditions(Conditions::if_match(&source_etag));
    /// # let _ = opts; }
    /// ```
    pub fn new(conditions: Conditions) -> CopyOptions {
        CopyOptions {
            source_conditions: Conditions::none(),
            conditions,
            write: BlobWriteOptions::default(),
            source_content_md5: None,
            source_content_crc64: None,
            tags: None,
            source_authorization: None,
            seal: false,
            rehydrate_priority: None,
        }
    }

    /// Conditions on the source blob (`x-ms-source-if-*`: ETag and dates; no lease id).
    /// Default: none, so whatever version the service reads is copied.
    ///
    /// ```
    /// use azstore::{Conditions, ETag};
    /// use azstore::blob::CopyOptions;
    /// let seen = ETag::new("\"0x8DCB1\"");
    /// let options = CopyOptions::new(Conditions::if_not_exists()).source_conditions(Conditions::if_match(&seen));
    /// # let _ = options;
    /// ```
    pub fn source_conditions(mut self, v: Conditions) -> Self {
        self.source_conditions = v;
        self
    }

    /// Replaces the conditions on the destination blob chosen in [`CopyOptions::new`]
    /// (including its lease id).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::CopyOptions;
    /// let lease = LeaseId::random();
    /// let options = CopyOptions::new(Conditions::none()).conditions(Conditions::lease(&lease));
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// (Copy Blob From URL) The base64 MD5 the source must have; the service refuses the
    /// copy with 400 `Md5Mismatch` otherwise. Default: not checked.
    pub fn source_content_md5(mut self, v: impl Into<String>) -> Self {
        self.source_content_md5 = Some(v.into());
        self
    }

    /// (Copy Blob From URL) The base64 CRC-64 the source must have (see
    /// [`crc64_base64`](crate::blob::crc64_base64)); the service refuses the copy with 400
    /// `Crc64Mismatch` otherwise. Default: not checked.
    pub fn source_content_crc64(mut self, v: impl Into<String>) -> Self {
        self.source_content_crc64 = Some(v.into());
        self
    }

    /// (Copy Blob From URL) Where the destination's index tags come from:
    /// [`CopyTags::Replace`] (the tags in the write options, or none) or
    /// [`CopyTags::Copy`] (the source's). Default: not sent, which the service treats as
    /// `Replace`.
    pub fn tags_from(mut self, v: CopyTags) -> Self {
        self.tags = Some(v);
        self
    }

    /// (Copy Blob From URL) Has the service read the source with this bearer token
    /// (default: none; the source is public or carries a SAS).
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::{CopyOptions, SourceAuthorization};
    /// let options = CopyOptions::new(Conditions::none())
    ///     .source_authorization(SourceAuthorization::bearer("eyJ0eXAi")?);
    /// # let _ = options; Ok::<(), azstore::Error>(())
    /// ```
    pub fn source_authorization(mut self, v: SourceAuthorization) -> Self {
        self.source_authorization = Some(v);
        self
    }

    /// (Copy Blob, append blobs) Seals the destination after the copy: no further
    /// appends (default: not sealed).
    ///
    /// ```
    /// use azstore::Conditions;
    /// let options = azstore::blob::CopyOptions::new(Conditions::if_not_exists()).seal();
    /// assert!(options.seal);
    /// ```
    pub fn seal(mut self) -> Self {
        self.seal = true;
        self
    }

    /// (Copy Blob from an archived source) How fast the destination is rehydrated:
    /// [`RehydratePriority::Standard`] (up to 15 hours) or [`RehydratePriority::High`].
    /// Default: not sent (Standard).
    pub fn rehydrate_priority(mut self, v: RehydratePriority) -> Self {
        self.rehydrate_priority = Some(v);
        self
    }
}

crate::blob::write_options::write_builders!(CopyOptions);

/// What a copy returns.
///
/// ```no_run
/// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::Conditions;
/// use azstore::blob::{CopyOptions, CopyStatus};
/// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(3600))?;
/// let started = dest.start_copy_from_url(&url, &CopyOptions::new(Conditions::none())).await?;
/// if started.status == CopyStatus::Pending {
///     let done = dest.wait_for_copy(&started.copy_id, Duration::from_secs(2)).await?;
///     println!("copy ended: {done:?}");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CopyResult {
    /// The copy id (to poll or abort).
    pub copy_id: String,
    /// The status when the call returned (`Success` for a synchronous copy).
    pub status: CopyStatus,
    /// The destination's new ETag.
    pub etag: ETag,
    /// The destination's new Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The destination's new version, on an account with blob versioning (`x-ms-version-id`).
    pub version_id: Option<String>,
}

impl CopyResult {
    /// Reads a started or finished copy from the answer of Copy Blob, Copy Blob From URL or
    /// Incremental Copy Blob.
    fn from_response(resp: &Response) -> Result<CopyResult> {
        Ok(CopyResult {
            copy_id: resp.headers.require("x-ms-copy-id")?.to_string(),
            status: CopyStatus::parse(resp.headers.require("x-ms-copy-status")?),
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            version_id: crate::blob::client::version_id(resp),
        })
    }
}

impl BlobClient {
    fn copy_request(
        &self,
        source_url: &str,
        options: &CopyOptions,
        sync: bool,
    ) -> Result<crate::http::Request> {
        let op = if sync {
            "Copy Blob From URL"
        } else {
            "Copy Blob"
        };
        options.conditions.check(Allowed::ALL, op)?;
        if sync && options.source_conditions.if_tags.is_some() {
            return Err(Error::invalid_input(
                "Copy Blob From URL does not accept a tags condition on the source",
            ));
        }
        validate_source_url(source_url)?;
        let sync_only = [
            ("a source MD5", options.source_content_md5.is_some()),
            ("a source CRC-64", options.source_content_crc64.is_some()),
            ("a tags copy mode", options.tags.is_some()),
            (
                "a source authorization",
                options.source_authorization.is_some(),
            ),
        ];
        let async_only = [
            ("seal", options.seal),
            ("a rehydrate priority", options.rehydrate_priority.is_some()),
        ];
        let (refused, other) = if sync {
            (&async_only[..], "start_copy_from_url")
        } else {
            (&sync_only[..], "copy_from_url")
        };
        if let Some((what, _)) = refused.iter().find(|(_, set)| *set) {
            return Err(Error::invalid_input(format!(
                "{op} does not take {what}; {other} does"
            )));
        }
        let md5 = options.source_content_md5.as_deref();
        let crc64 = options.source_content_crc64.as_deref();
        check_source_checksum(md5, crc64)?;
        check_tags_mode(options.tags, &options.write)?;
        let kind = if sync {
            WriteKind::CopyFromUrl
        } else {
            WriteKind::CopyBlob
        };
        let mut req = self
            .write_request(Method::Put, "Copy Blob")?
            .header("x-ms-copy-source", source_url)
            .conditions(&options.conditions);
        req = options.write.apply(req, kind)?;
        req = req.source_conditions(&options.source_conditions)?;
        if sync {
            req = req.header("x-ms-requires-sync", "true");
        }
        Ok(source_checksum(req, md5, crc64)
            .header_opt(
                "x-ms-copy-source-tag-option",
                options.tags.map(CopyTags::header_value),
            )
            .header_opt(
                "x-ms-copy-source-authorization",
                options
                    .source_authorization
                    .as_ref()
                    .map(|a| a.header_value().to_string()),
            )
            .header_opt("x-ms-seal-blob", options.seal.then_some("true"))
            .header_opt(
                "x-ms-rehydrate-priority",
                options.rehydrate_priority.map(RehydratePriority::as_str),
            ))
    }

    /// Copy Blob (`sync` false) or Copy Blob From URL (`sync` true): sends the request and
    /// reads the copy's id and status.
    async fn copy(
        &self,
        source_url: &str,
        options: &CopyOptions,
        sync: bool,
    ) -> Result<CopyResult> {
        let req = self.copy_request(source_url, options, sync)?;
        CopyResult::from_response(&self.pipeline.send(req).await?)
    }

    /// Copy Blob: starts a server-side copy of `source_url` into this blob and returns at
    /// once (the status may be `Pending`; see [`BlobClient::wait_for_copy`]). The source
    /// must be readable with this account's credential or carry a SAS.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::Conditions;
    /// use azstore::blob::{CopyOptions, CopyStatus};
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(3600))?;
    /// let started = dest.start_copy_from_url(&url, &CopyOptions::new(Conditions::none())).await?;
    /// if started.status == CopyStatus::Pending {
    ///     let done = dest.wait_for_copy(&started.copy_id, Duration::from_secs(2)).await?;
    ///     println!("copy ended: {done:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn start_copy_from_url(
        &self,
        source_url: &str,
        options: &CopyOptions,
    ) -> Result<CopyResult> {
        self.copy(source_url, options, false).await
    }

    /// Copy Blob From URL: copies synchronously (sources up to 256 MiB); returns when the
    /// copy is complete. A source outside public access needs a SAS in the URL.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::Conditions;
    /// use azstore::blob::CopyOptions;
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(600))?;
    /// let copied = dest.copy_from_url(&url, &CopyOptions::new(Conditions::none())).await?;
    /// println!("{:?}", copied.status);
    /// # Ok(()) }
    /// ```
    pub async fn copy_from_url(
        &self,
        source_url: &str,
        options: &CopyOptions,
    ) -> Result<CopyResult> {
        self.copy(source_url, options, true).await
    }

    /// Incremental Copy Blob: starts copying the page-blob snapshot `source_snapshot_url`
    /// into this blob (`comp=incrementalcopy`). The first copy transfers the whole snapshot;
    /// each later one only the pages changed since the snapshot copied last, so a backup of a
    /// disk follows it cheaply. The destination is a page blob readable only through its
    /// snapshots. The source URL names a snapshot (`?snapshot=`) and is readable with a SAS
    /// or publicly; the copy usually ends `Pending` here (see [`BlobClient::wait_for_copy`]).
    /// Accepts ETag, date and tags conditions on the destination (no lease id: the service
    /// takes none here).
    ///
    /// ```no_run
    /// # async fn f(disk: azstore::blob::BlobClient, backup: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// let snap = disk.snapshot(&azstore::Conditions::none()).await?;
    /// let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    /// let source = format!("{}&snapshot={}", disk.sas_url("r", expiry)?, snap.snapshot.as_str());
    /// let copy = backup.start_incremental_copy(&source, &azstore::Conditions::none()).await?;
    /// backup.wait_for_copy(&copy.copy_id, std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn start_incremental_copy(
        &self,
        source_snapshot_url: &str,
        conditions: &Conditions,
    ) -> Result<CopyResult> {
        const INCREMENTAL: Allowed = Allowed {
            etag: true,
            dates: true,
            if_modified_since_only: false,
            tags: true,
            lease: false,
        };
        conditions.check(INCREMENTAL, "Incremental Copy Blob")?;
        validate_source_url(source_snapshot_url)?;
        let names_snapshot = source_snapshot_url
            .split_once('?')
            .is_some_and(|(_, q)| q.split('&').any(|p| p.starts_with("snapshot=")));
        if !names_snapshot {
            return Err(Error::invalid_input(
                "Incremental Copy Blob copies a page blob snapshot: the source URL needs ?snapshot=",
            ));
        }
        let req = self
            .write_request(Method::Put, "Incremental Copy Blob")?
            .query("comp", "incrementalcopy")
            .header("x-ms-copy-source", source_snapshot_url)
            .conditions(conditions);
        CopyResult::from_response(&self.pipeline.send(req).await?)
    }

    /// Polls Get Blob Properties until the copy `copy_id` is no longer pending, returning its
    /// final status. Fails if another copy replaced it.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// # let copy_id = String::new(); let _ = source;
    /// let status = dest.wait_for_copy(&copy_id, Duration::from_secs(5)).await?;
    /// println!("{status:?}");
    /// # Ok(()) }
    /// ```
    pub async fn wait_for_copy(&self, copy_id: &str, poll_every: Duration) -> Result<CopyStatus> {
        loop {
            let p = self.get_properties().await?;
            if p.copy_id.as_deref() != Some(copy_id) {
                return Err(Error::new(
                    ErrorKind::Conflict,
                    format!("copy {copy_id} is no longer the blob's latest copy"),
                ));
            }
            let status = p
                .copy_status
                .as_deref()
                .map(CopyStatus::parse)
                .ok_or_else(|| Error::decode("blob properties lack x-ms-copy-status"))?;
            if status != CopyStatus::Pending {
                return Ok(status);
            }
            tokio::time::sleep(poll_every).await;
        }
    }

    /// This blob's URL with a service SAS granting `permissions` (e.g. `"r"`) until
    /// `expiry`: the usual source for [`BlobClient::copy_from_url`], which Azure only reads
    /// with the source's own authorization. With a SAS credential the client's token is
    /// appended instead. The result contains a signature: treat it as a secret.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// // A read link valid for 10 minutes (do not log it: it holds a signature).
    /// let url = source.sas_url("r", azstore::OffsetDateTime::now_utc() + Duration::from_secs(600))?;
    /// # let _ = (url, dest);
    /// # Ok(()) }
    /// ```
    pub fn sas_url(&self, permissions: &str, expiry: OffsetDateTime) -> Result<String> {
        let token = match self.pipeline.credential() {
            Credential::SharedKey(key) => {
                SasBuilder::new(permissions, expiry).blob(key, &self.container, &self.name)?
            }
            Credential::Sas(t) => t.clone(),
            _ => {
                return Err(Error::invalid_input(
                    "a SAS URL needs a SharedKey or SAS credential",
                ));
            }
        };
        Ok(format!("{}?{}", self.url(), token.expose_secret()))
    }

    /// Abort Copy Blob: stops a pending copy, leaving an empty destination. Accepts only a
    /// lease id. A finished copy gives 409 `NoPendingCopyOperation`.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::blob::BlobClient, dest: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// # let copy_id = String::new(); let _ = source;
    /// match dest.abort_copy(&copy_id, &Conditions::none()).await {
    ///     Err(e) if e.is_conflict() => println!("already finished"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn abort_copy(&self, copy_id: &str, conditions: &Conditions) -> Result<()> {
        conditions.check(Allowed::LEASE_ONLY, "Abort Copy Blob")?;
        if copy_id.is_empty() {
            return Err(Error::invalid_input("copy id must not be empty"));
        }
        self.pipeline
            .send(
                self.write_request(Method::Put, "Abort Copy Blob")?
                    .query("comp", "copy")
                    .query("copyid", copy_id)
                    .header("x-ms-copy-action", "abort")
                    .conditions(conditions),
            )
            .await?;
        Ok(())
    }
}
