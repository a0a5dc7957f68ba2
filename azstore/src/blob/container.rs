//! Container operations beyond create/delete: properties, metadata and access policies.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::access_policy::{self, PolicyRules, SignedIdentifier};
use crate::blob::client::{ContainerClient, Resource, WriteResult};
use crate::blob::models::{LeaseDurationType, LeaseState, LeaseStatus};
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::Result;
use crate::http::{Headers, Method};
use crate::storage::StorageRequest;

/// Anonymous (public) read access of a container (`x-ms-blob-public-access`).
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::PublicAccess;
/// if container.get_properties().await?.public_access != PublicAccess::None {
///     eprintln!("{} is readable without authorization", container.name());
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum PublicAccess {
    /// Private: every request must be authorized.
    #[default]
    None,
    /// Blobs can be read anonymously, but not listed.
    Blob,
    /// Blobs can be read and listed anonymously.
    Container,
}

impl PublicAccess {
    fn parse(s: Option<&str>) -> PublicAccess {
        match s {
            Some("blob") => PublicAccess::Blob,
            Some("container") => PublicAccess::Container,
            _ => PublicAccess::None,
        }
    }

    fn header(self) -> Option<&'static str> {
        match self {
            PublicAccess::None => None,
            PublicAccess::Blob => Some("blob"),
            PublicAccess::Container => Some("container"),
        }
    }
}

/// Options of Create Container: metadata and anonymous access level.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::{CreateContainerOptions, PublicAccess};
/// let options = CreateContainerOptions::default().metadata("team", "web").public_access(PublicAccess::Blob);
/// container.create_with(&options).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct CreateContainerOptions {
    /// User metadata (validated before sending).
    pub metadata: BTreeMap<String, String>,
    /// Anonymous access level; the default is none (private).
    pub public_access: PublicAccess,
    /// The encryption scope of every blob written without one
    /// (`x-ms-default-encryption-scope`).
    pub default_encryption_scope: Option<String>,
    /// With a default encryption scope: writes naming another scope are refused
    /// (`x-ms-deny-encryption-scope-override: true`).
    pub deny_encryption_scope_override: bool,
}

impl CreateContainerOptions {
    /// Adds one metadata pair to the new container (validated before sending; default:
    /// none). Call it again for more pairs.
    ///
    /// ```
    /// use azstore::blob::CreateContainerOptions;
    /// let options = CreateContainerOptions::default()
    ///     .metadata("team", "billing")
    ///     .metadata("retention", "90d");
    /// assert_eq!(options.metadata.len(), 2);
    /// ```
    pub fn metadata(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.metadata.insert(key.into(), value.into());
        self
    }

    /// Who may read without authorization (`x-ms-blob-public-access`). Default
    /// [`PublicAccess::None`]: private, every request must be authorized. Accounts that
    /// disallow public access refuse anything else.
    ///
    /// ```
    /// use azstore::blob::{CreateContainerOptions, PublicAccess};
    /// // Anyone with a blob's URL can read it; listing still needs authorization.
    /// let options = CreateContainerOptions::default().public_access(PublicAccess::Blob);
    /// # let _ = options;
    /// ```
    pub fn public_access(mut self, v: PublicAccess) -> Self {
        self.public_access = v;
        self
    }

    /// The encryption scope new blobs in the container get when a write names none
    /// (`x-ms-default-encryption-scope`). Default: the account's encryption.
    pub fn default_encryption_scope(mut self, v: impl Into<String>) -> Self {
        self.default_encryption_scope = Some(v.into());
        self
    }

    /// Refuses writes that name another encryption scope than the default.
    pub fn deny_encryption_scope_override(mut self) -> Self {
        self.deny_encryption_scope_override = true;
        self
    }
}

/// What Get Container Properties / Get Container Metadata return.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// let p = container.get_properties().await?;
/// println!("version {}, lease {:?}, metadata {:?}", p.etag, p.lease_state, p.metadata);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContainerProperties {
    /// The container's ETag (changes when metadata, ACL or properties change).
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// Lease state.
    pub lease_state: Option<LeaseState>,
    /// Lease status.
    pub lease_status: Option<LeaseStatus>,
    /// Lease duration kind, when leased.
    pub lease_duration: Option<LeaseDurationType>,
    /// Anonymous access level.
    pub public_access: PublicAccess,
    /// The default encryption scope (`x-ms-default-encryption-scope`).
    pub default_encryption_scope: Option<String>,
    /// Whether writes must use the default encryption scope
    /// (`x-ms-deny-encryption-scope-override`).
    pub deny_encryption_scope_override: Option<bool>,
}

impl ContainerProperties {
    pub(crate) fn from_headers(h: &Headers) -> Result<ContainerProperties> {
        Ok(ContainerProperties {
            etag: h.require_etag()?,
            last_modified: h.last_modified(),
            metadata: h.metadata(),
            lease_state: h.get("x-ms-lease-state").and_then(LeaseState::parse),
            lease_status: crate::blob::models::parse_lease_status(h.get("x-ms-lease-status")),
            lease_duration: crate::blob::models::parse_lease_duration(h.get("x-ms-lease-duration")),
            public_access: PublicAccess::parse(h.get("x-ms-blob-public-access")),
            default_encryption_scope: h
                .get("x-ms-default-encryption-scope")
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            deny_encryption_scope_override: match h.get("x-ms-deny-encryption-scope-override") {
                None => None,
                Some(v) if v.trim().eq_ignore_ascii_case("true") => Some(true),
                Some(v) if v.trim().eq_ignore_ascii_case("false") => Some(false),
                Some(_) => {
                    return Err(crate::error::Error::decode(
                        "response header x-ms-deny-encryption-scope-override is malformed",
                    ));
                }
            },
        })
    }
}

/// A container's access control list.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let mut acl = container.get_access_policy().await?.acl;
/// acl.identifiers.retain(|p| p.id != "contractors"); // revoke every SAS naming that policy
/// container.set_access_policy(&acl, &Conditions::none()).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ContainerAcl {
    /// Anonymous access level.
    pub public_access: PublicAccess,
    /// Stored access policies (at most 5).
    pub identifiers: Vec<SignedIdentifier>,
}

impl ContainerAcl {
    /// An ACL with these policies and private access.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// use azstore::access_policy::SignedIdentifier;
    /// use azstore::blob::{ContainerAcl, PublicAccess};
    /// let acl = ContainerAcl::new(vec![SignedIdentifier::new("readers", "r")]);
    /// assert_eq!(acl.public_access, PublicAccess::None);
    /// # Ok(()) }
    /// ```
    pub fn new(identifiers: Vec<SignedIdentifier>) -> ContainerAcl {
        ContainerAcl {
            public_access: PublicAccess::None,
            identifiers,
        }
    }

    fn to_xml(&self) -> Result<String> {
        access_policy::to_xml(&self.identifiers, CONTAINER_POLICIES)
    }
}

/// A container's policies: permission letters are left to the service to check.
const CONTAINER_POLICIES: PolicyRules = PolicyRules {
    resource: "a container",
    letters: None,
};

/// Get Container ACL's answer: the ACL and the container's version.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// let result = container.get_access_policy().await?;
/// println!("{:?} with {} policies (version {})", result.acl.public_access, result.acl.identifiers.len(), result.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct AclResult {
    /// The ACL.
    pub acl: ContainerAcl,
    /// The container's ETag.
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

/// Set Container Metadata accepts only If-Modified-Since and a lease id.
const SET_CONTAINER_METADATA: Allowed = Allowed {
    etag: false,
    dates: false,
    if_modified_since_only: true,
    tags: false,
    lease: true,
};

/// Set Container ACL accepts the two date conditions and a lease id.
const SET_CONTAINER_ACL: Allowed = Allowed {
    etag: false,
    dates: true,
    if_modified_since_only: false,
    tags: false,
    lease: true,
};

impl ContainerClient {
    /// Create Container with metadata and an anonymous access level. Fails with 409
    /// `ContainerAlreadyExists` when it exists.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::blob::{CreateContainerOptions, PublicAccess};
    /// let options = CreateContainerOptions::default().metadata("team", "web").public_access(PublicAccess::Blob);
    /// container.create_with(&options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with(&self, options: &CreateContainerOptions) -> Result<WriteResult> {
        crate::names::validate_metadata(&options.metadata)?;
        match &options.default_encryption_scope {
            Some(scope) => crate::blob::write_options::check_scope(scope)?,
            None if options.deny_encryption_scope_override => {
                return Err(crate::error::Error::invalid_input(
                    "denying encryption scope overrides needs a default encryption scope",
                ));
            }
            None => {}
        }
        let req = self
            .request(Method::Put)
            .metadata(&options.metadata)
            .header_opt("x-ms-blob-public-access", options.public_access.header())
            .header_opt(
                "x-ms-default-encryption-scope",
                options.default_encryption_scope.clone(),
            )
            .header_opt(
                "x-ms-deny-encryption-scope-override",
                options
                    .default_encryption_scope
                    .as_ref()
                    .map(|_| options.deny_encryption_scope_override.to_string()),
            );
        WriteResult::from_response(&self.pipeline.send(req).await?)
    }

    /// Get Container Properties. Accepts only a lease id (no conditional headers).
    ///
    /// Sent as `GET` (the REST API allows GET and HEAD): a GET's error answers carry the
    /// error body, and it is what the official SDKs send to Azure.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// # let lease = azstore::LeaseId::random();
    /// let props = container.get_properties_if(&Conditions::lease(&lease)).await?;
    /// println!("{:?}", props.lease_state);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties_if(&self, conditions: &Conditions) -> Result<ContainerProperties> {
        conditions.check(Allowed::LEASE_ONLY, "Get Container Properties")?;
        let resp = self
            .pipeline
            .send(self.request(Method::Get).conditions(conditions))
            .await?;
        ContainerProperties::from_headers(&resp.headers)
    }

    /// Whether the container exists.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// if !container.exists().await? {
    ///     container.create_if_not_exists().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        crate::error::found(self.get_properties().await)
    }

    /// Get Container Metadata: the metadata and the container's ETag (the shape of every
    /// `get_metadata`). Accepts only a lease id.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// # let lease = azstore::LeaseId::random();
    /// let (metadata, etag) = container.get_metadata_if(&azstore::Conditions::lease(&lease)).await?;
    /// println!("{metadata:?} at {etag}");
    /// # Ok(()) }
    /// ```
    pub async fn get_metadata_if(
        &self,
        conditions: &Conditions,
    ) -> Result<(BTreeMap<String, String>, ETag)> {
        self.read_metadata(conditions, "Get Container Metadata")
            .await
    }

    /// Set Container Metadata, replacing all metadata. The service accepts only
    /// If-Modified-Since (and a lease id) here: If-Match, If-None-Match, If-Unmodified-Since
    /// and tags are refused with `InvalidInput` before sending.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let (mut metadata, _etag) = container.get_metadata().await?;
    /// metadata.insert("retention".into(), "90d".into());
    /// container.set_metadata(&metadata, &Conditions::none()).await?; // last writer wins
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(
        &self,
        metadata: &BTreeMap<String, String>,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(SET_CONTAINER_METADATA, "Set Container Metadata")?;
        let req = self.request(Method::Put);
        crate::blob::client::set_metadata_with(&self.pipeline, req, metadata, conditions).await
    }

    /// Get Container ACL: public access level and stored access policies. Accepts only a
    /// lease id.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// # let lease = azstore::LeaseId::random();
    /// let acl = container.get_access_policy_if(&azstore::Conditions::lease(&lease)).await?;
    /// println!("{} stored policies", acl.acl.identifiers.len());
    /// # Ok(()) }
    /// ```
    pub async fn get_access_policy_if(&self, conditions: &Conditions) -> Result<AclResult> {
        conditions.check(Allowed::LEASE_ONLY, "Get Container ACL")?;
        let resp = self
            .send_comp(self.request(Method::Get), "acl", conditions)
            .await?;
        let identifiers = access_policy::parse(&resp.body, "Get Container ACL")?;
        Ok(AclResult {
            acl: ContainerAcl {
                public_access: PublicAccess::parse(resp.headers.get("x-ms-blob-public-access")),
                identifiers,
            },
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
        })
    }

    /// Set Container ACL, replacing the public access level and all stored access policies.
    /// Accepts If-Modified-Since, If-Unmodified-Since and a lease id; If-Match/If-None-Match
    /// and tags are refused. Azure caches policies: changes can take up to 30 s to apply.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::access_policy::SignedIdentifier;
    /// use azstore::blob::ContainerAcl;
    /// let expiry = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(7 * 86400);
    /// let acl = ContainerAcl::new(vec![SignedIdentifier::new("readers", "rl").expiry(expiry)]);
    /// container.set_access_policy(&acl, &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_access_policy(
        &self,
        acl: &ContainerAcl,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        conditions.check(SET_CONTAINER_ACL, "Set Container ACL")?;
        let body = acl.to_xml()?;
        let req = self
            .request(Method::Put)
            .query("comp", "acl")
            .conditions(conditions)
            .header_opt("x-ms-blob-public-access", acl.public_access.header())
            .body(body, "application/xml");
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }
}

/// The names Get/Set Container ACL had before azstore named them as Table and Queue do.
impl ContainerClient {}
