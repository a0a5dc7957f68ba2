//! Share options on create, Set Share Properties, and Create / Get Share Permission (security
//! descriptors stored once per share and referenced by key).
//!
//! ```no_run
//! # async fn f(share: azstore::file::ShareClient, file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::{FilePermission, ShareOptions, SmbProperties};
//! share.set_properties(&ShareOptions::default().quota_gib(10).access_tier("Cool"), None).await?;
//! let key = share.create_permission("O:BAG:SYD:(A;;FA;;;BA)").await?;
//! let smb = SmbProperties::default().permission(FilePermission::Key(key.clone()));
//! file.set_smb_properties(&smb, None).await?;
//! assert!(share.get_permission(&key).await?.starts_with("O:"));
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::models::FileWrite;
use crate::file::share::ShareClient;
use crate::http::Method;
use crate::storage::StorageRequest;

/// Properties of a share on create ([`ShareClient::create_with`]) or Set Share
/// Properties ([`ShareClient::set_properties`]). Fields left `None` are not sent.
///
/// ```
/// use azstore::file::ShareOptions;
/// let options = ShareOptions::default().quota_gib(50).access_tier("Cool");
/// assert_eq!(options.quota_gib, Some(50));
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct ShareOptions {
    /// Metadata (create only; Set Share Metadata changes it later).
    pub metadata: BTreeMap<String, String>,
    /// Quota in GiB, 1–102400 (`x-ms-share-quota`).
    pub quota_gib: Option<u32>,
    /// Access tier (`x-ms-access-tier`: `TransactionOptimized`, `Hot`, `Cool`; `Premium`
    /// on premium accounts).
    pub access_tier: Option<String>,
    /// Enabled protocols, create only (`x-ms-enabled-protocols`: `SMB` or `NFS`).
    pub enabled_protocols: Option<String>,
    /// NFS root squash (`x-ms-root-squash`: `NoRootSquash`, `RootSquash`, `AllSquash`).
    pub root_squash: Option<String>,
}

impl ShareOptions {
    /// The metadata of a new share (create only; Set Share Metadata changes it later).
    /// Default: none.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let meta = BTreeMap::from([("team".to_string(), "finance".to_string())]);
    /// let options = azstore::file::ShareOptions::default().metadata(meta);
    /// # let _ = options;
    /// ```
    pub fn metadata(mut self, v: BTreeMap<String, String>) -> Self {
        self.metadata = v;
        self
    }

    /// The share's size limit in GiB, 1–102400 (`x-ms-share-quota`). Default: not sent,
    /// so the service's default (the largest size) on create and no change on set.
    ///
    /// ```
    /// let options = azstore::file::ShareOptions::default().quota_gib(100);
    /// assert_eq!(options.quota_gib, Some(100));
    /// ```
    pub fn quota_gib(mut self, v: u32) -> Self {
        self.quota_gib = Some(v);
        self
    }

    /// The access tier (`x-ms-access-tier`: `TransactionOptimized`, `Hot`, `Cool`;
    /// `Premium` on premium accounts). Default: not sent, so `TransactionOptimized` on
    /// create and no change on set.
    ///
    /// ```
    /// let options = azstore::file::ShareOptions::default().access_tier("Cool");
    /// # let _ = options;
    /// ```
    pub fn access_tier(mut self, v: impl Into<String>) -> Self {
        self.access_tier = Some(v.into());
        self
    }

    /// The protocol the share is mounted with, create only (`x-ms-enabled-protocols`:
    /// `SMB` or `NFS`; NFS needs a premium account). Default: SMB.
    ///
    /// ```
    /// let options = azstore::file::ShareOptions::default().enabled_protocols("NFS");
    /// # let _ = options;
    /// ```
    pub fn enabled_protocols(mut self, v: impl Into<String>) -> Self {
        self.enabled_protocols = Some(v.into());
        self
    }

    /// How an NFS share maps the root user (`x-ms-root-squash`: `NoRootSquash`,
    /// `RootSquash`, `AllSquash`). Default: not sent (`NoRootSquash` on create).
    ///
    /// ```
    /// let options = azstore::file::ShareOptions::default()
    ///     .enabled_protocols("NFS")
    ///     .root_squash("RootSquash");
    /// # let _ = options;
    /// ```
    pub fn root_squash(mut self, v: impl Into<String>) -> Self {
        self.root_squash = Some(v.into());
        self
    }

    fn check(&self) -> Result<()> {
        if let Some(q) = self.quota_gib {
            if !(1..=102_400).contains(&q) {
                return Err(Error::invalid_input(format!(
                    "a share quota is 1-102400 GiB (got {q})"
                )));
            }
        }
        let one_of = |what: &str, v: &Option<String>, allowed: &[&str]| match v {
            Some(v) if !allowed.iter().any(|a| a.eq_ignore_ascii_case(v)) => Err(
                Error::invalid_input(format!("{what} must be one of {allowed:?} (got {v:?})")),
            ),
            _ => Ok(()),
        };
        one_of(
            "access tier",
            &self.access_tier,
            &["TransactionOptimized", "Hot", "Cool", "Premium"],
        )?;
        one_of(
            "enabled protocols",
            &self.enabled_protocols,
            &["SMB", "NFS"],
        )?;
        one_of(
            "root squash",
            &self.root_squash,
            &["NoRootSquash", "RootSquash", "AllSquash"],
        )
    }
}

#[derive(Serialize, Deserialize)]
struct PermissionBody {
    permission: String,
}

impl ShareClient {
    /// Create Share. Fails with 409 `ShareAlreadyExists` when it exists
    /// (`ShareBeingDeleted` while a delete is in progress).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// match share.create().await {
    ///     Err(e) if e.is_conflict() => println!("exists (or is being deleted)"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self) -> Result<FileWrite> {
        self.create_with(&ShareOptions::default()).await
    }

    /// Create Share with quota, access tier, protocols, root squash and metadata.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use std::collections::BTreeMap;
    /// use azstore::file::ShareOptions;
    /// let metadata = BTreeMap::from([("team".to_string(), "finance".to_string())]);
    /// share.create_with(&ShareOptions::default().quota_gib(100).metadata(metadata)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with(&self, options: &ShareOptions) -> Result<FileWrite> {
        options.check()?;
        crate::names::validate_metadata(&options.metadata)?;
        let req = self
            .request(Method::Put)
            .metadata(&options.metadata)
            .header_opt("x-ms-share-quota", options.quota_gib.map(|q| q.to_string()))
            .header_opt("x-ms-access-tier", options.access_tier.clone())
            .header_opt("x-ms-enabled-protocols", options.enabled_protocols.clone())
            .header_opt("x-ms-root-squash", options.root_squash.clone());
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Set Share Properties: quota, access tier and root squash (metadata and protocols
    /// cannot change here: `InvalidInput`). A leased share accepts the lease id.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// use azstore::file::ShareOptions;
    /// share.set_properties(&ShareOptions::default().quota_gib(500), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_properties(
        &self,
        options: &ShareOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        options.check()?;
        if !options.metadata.is_empty() || options.enabled_protocols.is_some() {
            return Err(Error::invalid_input(
                "Set Share Properties changes quota, access tier and root squash; metadata has set_metadata and protocols are fixed at create",
            ));
        }
        let req = self
            .request(Method::Put)
            .query("comp", "properties")
            .header_opt("x-ms-share-quota", options.quota_gib.map(|q| q.to_string()))
            .header_opt("x-ms-access-tier", options.access_tier.clone())
            .header_opt("x-ms-root-squash", options.root_squash.clone())
            .header_opt("x-ms-lease-id", lease.map(|l| l.as_str().to_string()));
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Create Share Permission: stores a security descriptor (SDDL, up to 8 KiB as JSON
    /// body) at the share level and returns its key (`x-ms-file-permission-key`), to pass
    /// as [`FilePermission::Key`](crate::file::FilePermission::Key).
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// let key = share.create_permission("O:BAG:SYD:(A;;FA;;;BA)").await?;
    /// println!("stored under {key}");
    /// # Ok(()) }
    /// ```
    pub async fn create_permission(&self, sddl: &str) -> Result<String> {
        if sddl.is_empty() || sddl.len() > crate::file::MAX_INLINE_PERMISSION {
            return Err(Error::invalid_input(format!(
                "a share permission is 1 byte to 8 KiB of SDDL (got {} bytes)",
                sddl.len()
            )));
        }
        let body = serde_json::to_vec(&PermissionBody {
            permission: sddl.to_string(),
        })
        .map_err(|e| Error::invalid_input(format!("permission: {e}")))?;
        let req = self
            .request(Method::Put)
            .query("comp", "filepermission")
            .body(body, "application/json");
        let resp = self.pipeline.send(req).await?;
        Ok(resp
            .headers
            .require("x-ms-file-permission-key")?
            .to_string())
    }

    /// Get Share Permission: the SDDL stored under `key`.
    ///
    /// ```no_run
    /// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
    /// # let key = String::new();
    /// let sddl = share.get_permission(&key).await?;
    /// println!("{sddl}");
    /// # Ok(()) }
    /// ```
    pub async fn get_permission(&self, key: &str) -> Result<String> {
        if key.is_empty() || key.chars().any(char::is_control) {
            return Err(Error::invalid_input(
                "a permission key must be non-empty text",
            ));
        }
        let req = self
            .request(Method::Get)
            .query("comp", "filepermission")
            .header("x-ms-file-permission-key", key);
        let resp = self.pipeline.send(req).await?;
        let body: PermissionBody = serde_json::from_slice(&resp.body)
            .map_err(|e| Error::decode(format!("Get Share Permission answer is malformed: {e}")))?;
        Ok(body.permission)
    }
}
