//! User delegation keys (Get User Delegation Key) and the string-to-sign of a user delegation
//! SAS.

use super::SAS_VERSION;
use crate::error::{Error, Result};

/// A user delegation key: what Get User Delegation Key returns
/// ([`BlobServiceClient::user_delegation_key`](crate::blob::BlobServiceClient::user_delegation_key)),
/// used to sign user delegation SAS tokens with [`SasBuilder::user_delegation_blob`](super::SasBuilder::user_delegation_blob) and
/// [`SasBuilder::user_delegation_container`](super::SasBuilder::user_delegation_container). The key value is secret: it is not shown by
/// `Debug`.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// use time::{Duration, OffsetDateTime};
/// // Needs a bearer (Entra ID) credential on `blobs`.
/// let key = blobs.user_delegation_key(None, OffsetDateTime::now_utc() + Duration::hours(1)).await?;
/// println!("key of {} for {}, valid until {}", key.object_id(), key.account(), key.expiry());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct UserDelegationKey {
    pub(super) account: String,
    pub(super) signed: KeyFields,
    pub(super) mac: crate::credential::KeyedMac,
}

/// The fields of a Get User Delegation Key response, parsed once: those a user delegation
/// SAS carries and signs are kept exactly as the service wrote them; the key value is taken
/// out by [`UserDelegationKey::new`] (only its signer is kept).
#[derive(Clone, serde::Deserialize)]
pub(crate) struct KeyFields {
    #[serde(rename = "SignedOid")]
    pub(super) object_id: String,
    #[serde(rename = "SignedTid")]
    pub(super) tenant_id: String,
    #[serde(rename = "SignedStart")]
    pub(super) start: String,
    #[serde(rename = "SignedExpiry")]
    pub(super) expiry: String,
    #[serde(rename = "SignedService")]
    pub(super) service: String,
    #[serde(rename = "SignedVersion")]
    pub(super) version: String,
    /// The base64 key; empty once the key is built.
    #[serde(rename = "Value")]
    pub(super) value: String,
}

impl UserDelegationKey {
    /// Builds a key from the fields of a Get User Delegation Key response.
    pub(crate) fn new(account: &str, mut signed: KeyFields) -> Result<UserDelegationKey> {
        use base64::Engine;
        let value = std::mem::take(&mut signed.value);
        let key = base64::engine::general_purpose::STANDARD
            .decode(value.trim())
            .map_err(|_| Error::decode("the user delegation key value is not valid base64"))?;
        if key.is_empty() {
            return Err(Error::decode("the user delegation key value is empty"));
        }
        Ok(UserDelegationKey {
            account: account.to_string(),
            signed,
            mac: crate::credential::KeyedMac::new(&key),
        })
    }

    /// The account the key belongs to.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("{}", key.account());
    /// # Ok(()) }
    /// ```
    pub fn account(&self) -> &str {
        &self.account
    }

    /// `SignedOid`: the Microsoft Entra object id of the identity that asked for the key.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("issued to {}", key.object_id());
    /// # Ok(()) }
    /// ```
    pub fn object_id(&self) -> &str {
        &self.signed.object_id
    }

    /// `SignedTid`: the Microsoft Entra tenant id.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("tenant {}", key.tenant_id());
    /// # Ok(()) }
    /// ```
    pub fn tenant_id(&self) -> &str {
        &self.signed.tenant_id
    }

    /// `SignedStart`, as the service wrote it.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("valid from {}", key.start());
    /// # Ok(()) }
    /// ```
    pub fn start(&self) -> &str {
        &self.signed.start
    }

    /// `SignedExpiry`, as the service wrote it.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("valid until {}", key.expiry());
    /// # Ok(()) }
    /// ```
    pub fn expiry(&self) -> &str {
        &self.signed.expiry
    }

    /// `SignedService` (`b` for Blob).
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// assert_eq!(key.service(), "b");
    /// # Ok(()) }
    /// ```
    pub fn service(&self) -> &str {
        &self.signed.service
    }

    /// `SignedVersion`: the service version that issued the key.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let key = blobs.user_delegation_key(None, azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600)).await?;
    /// println!("issued by version {}", key.version());
    /// # Ok(()) }
    /// ```
    pub fn version(&self) -> &str {
        &self.signed.version
    }
}

impl std::fmt::Debug for UserDelegationKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("UserDelegationKey")
            .field("account", &self.account)
            .field("object_id", &self.signed.object_id)
            .field("tenant_id", &self.signed.tenant_id)
            .field("start", &self.signed.start)
            .field("expiry", &self.signed.expiry)
            .field("service", &self.signed.service)
            .field("version", &self.signed.version)
            .field("value", &"<redacted>")
            .finish()
    }
}

/// The string-to-sign of a Blob user delegation SAS for signed versions 2025-07-05 and later
/// (<https://learn.microsoft.com/rest/api/storageservices/create-user-delegation-sas>): the
/// optional fields azstore does not set (authorized/unauthorized object id, correlation id,
/// delegated user tenant and object id, snapshot time, encryption scope, response headers)
/// are empty lines.
#[allow(clippy::too_many_arguments)]
pub(super) fn user_delegation_string_to_sign(
    perms: &str,
    st: &str,
    se: &str,
    resource: &str,
    key: &UserDelegationKey,
    ip: &str,
    spr: &str,
    sr: &str,
) -> String {
    [
        perms,
        st,
        se,
        resource,
        &key.signed.object_id,
        &key.signed.tenant_id,
        &key.signed.start,
        &key.signed.expiry,
        &key.signed.service,
        &key.signed.version,
        "", // saoid: authorized user object id
        "", // suoid: unauthorized user object id
        "", // scid: correlation id
        "", // skdutid: delegated user tenant id
        "", // sduoid: delegated user object id
        ip,
        spr,
        SAS_VERSION,
        sr,
        "", // snapshot time
        "", // encryption scope
        "", // rscc
        "", // rscd
        "", // rsce
        "", // rscl
        "", // rsct
    ]
    .join("\n")
}
