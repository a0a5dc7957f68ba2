//! Get User Delegation Key: the key that signs a user delegation SAS
//! (<https://learn.microsoft.com/rest/api/storageservices/get-user-delegation-key>).

use time::{Duration, OffsetDateTime};

use crate::blob::client::BlobServiceClient;
use crate::blob::xml;
use crate::credential::Credential;
use crate::error::{Error, Result};
use crate::http::{Method, Request};
use crate::storage::sas::{KeyFields, UserDelegationKey, iso8601};

/// The longest validity the service grants a user delegation key.
const MAX_VALIDITY: Duration = Duration::days(7);

impl xml::Document for KeyFields {
    const ROOT: &'static str = "UserDelegationKey";
}

fn parse_key(account: &str, body: &[u8]) -> Result<UserDelegationKey> {
    UserDelegationKey::new(account, xml::parse(body, "Get User Delegation Key")?)
}

fn key_info(start: Option<OffsetDateTime>, expiry: OffsetDateTime) -> Result<String> {
    let now = OffsetDateTime::now_utc();
    let from = start.unwrap_or(now);
    if expiry <= from {
        return Err(Error::invalid_input(
            "a user delegation key must expire after it starts",
        ));
    }
    if expiry > now + MAX_VALIDITY {
        return Err(Error::invalid_input(
            "a user delegation key is valid for at most 7 days from now",
        ));
    }
    // Start is sent always: the service's schema requires it.
    Ok(format!(
        "<?xml version=\"1.0\" encoding=\"utf-8\"?><KeyInfo><Start>{}</Start><Expiry>{}</Expiry></KeyInfo>",
        iso8601(from)?,
        iso8601(expiry)?
    ))
}

impl BlobServiceClient {
    /// Get User Delegation Key: a key valid from `start` (now when `None`) until `expiry` (at
    /// most 7 days from now), to sign user delegation SAS tokens with
    /// [`SasBuilder::user_delegation_blob`](crate::sas::SasBuilder::user_delegation_blob) and
    /// [`SasBuilder::user_delegation_container`](crate::sas::SasBuilder::user_delegation_container).
    ///
    /// Only a bearer credential (Microsoft Entra ID) may ask for one: with any other
    /// credential, and for an expiry out of range, this fails with
    /// [`ErrorKind::InvalidInput`](crate::ErrorKind::InvalidInput) before sending.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// use time::{Duration, OffsetDateTime};
    /// use azstore::sas::SasBuilder;
    /// // `blobs` was built from an account with an Entra ID credential.
    /// let key = blobs.user_delegation_key(None, OffsetDateTime::now_utc() + Duration::hours(1)).await?;
    /// let sas = SasBuilder::new("r", OffsetDateTime::now_utc() + Duration::minutes(30))
    ///     .user_delegation_blob(&key, "reports", "q4.csv")?;
    /// # let _ = sas;
    /// # Ok(()) }
    /// ```
    pub async fn user_delegation_key(
        &self,
        start: Option<OffsetDateTime>,
        expiry: OffsetDateTime,
    ) -> Result<UserDelegationKey> {
        if !matches!(self.pipeline().credential(), Credential::Bearer(_)) {
            return Err(Error::invalid_input(
                "Get User Delegation Key needs a bearer (Microsoft Entra ID) credential",
            ));
        }
        let body = key_info(start, expiry)?;
        let req = Request::new(Method::Post, "")
            .query("restype", "service")
            .query("comp", "userdelegationkey")
            .body(body, "application/xml");
        let resp = self.pipeline().send(req).await?;
        parse_key(self.pipeline().account(), &resp.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::datetime;

    #[test]
    fn key_info_body_and_bounds() {
        let now = OffsetDateTime::now_utc();
        let body = key_info(
            Some(datetime!(2026-11-22 01:00 UTC)),
            now + Duration::hours(1),
        );
        assert!(
            body.unwrap()
                .contains("<KeyInfo><Start>2026-11-22T01:00:00Z</Start><Expiry>")
        );
        assert!(key_info(None, now + Duration::days(8)).is_err());
        assert!(key_info(Some(now), now - Duration::minutes(1)).is_err());
    }

    #[test]
    fn parses_the_documented_response_and_refuses_broken_ones() {
        let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><UserDelegationKey><SignedOid>oid</SignedOid><SignedTid>tid</SignedTid><SignedStart>2026-11-22T01:00:00Z</SignedStart><SignedExpiry>2026-11-22T02:00:00Z</SignedExpiry><SignedService>b</SignedService><SignedVersion>2025-11-05</SignedVersion><Value>a2V5</Value></UserDelegationKey>";
        let key = parse_key("acct", body.as_bytes()).unwrap();
        assert_eq!(
            (key.object_id(), key.tenant_id(), key.start(), key.service()),
            ("oid", "tid", "2026-11-22T01:00:00Z", "b")
        );
        assert!(!format!("{key:?}").contains("a2V5"));
        assert!(parse_key("acct", b"<UserDelegationKey><SignedOid>x</SignedOid>").is_err());
        let bad_value = body.replace("a2V5", "not base64!");
        assert!(parse_key("acct", bad_value.as_bytes()).is_err());
    }
}
