//! The table ACL: stored access policies, referenced by a table SAS as `si=` (**last writer
//! wins**).

use crate::access_policy::{self, PolicyRules, SignedIdentifier};
use crate::error::Result;
use crate::http::{Method, Request};
use crate::table::client::TableClient;

/// A table's policies grant query, add, update and delete (`raud`).
const TABLE_POLICIES: PolicyRules = PolicyRules {
    resource: "a table",
    letters: Some("raud"),
};

impl TableClient {
    /// `{table}?comp=acl`.
    fn acl_request(&self, method: Method) -> Request {
        Request::new(method, &self.name).query("comp", "acl")
    }

    /// Get Table ACL: the stored access policies.
    ///
    /// ```no_run
    /// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// for policy in table.get_access_policy().await? {
    ///     println!("{}: {:?} until {:?}", policy.id, policy.permission, policy.expiry);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_access_policy(&self) -> Result<Vec<SignedIdentifier>> {
        let resp = self.pipeline.send(self.acl_request(Method::Get)).await?;
        access_policy::parse(&resp.body, "Get Table ACL")
    }

    /// Set Table ACL, replacing all stored access policies (at most 5; permissions a subset
    /// of `raud`, refused before sending otherwise). **Last writer wins**. A SAS that names
    /// a policy ([`SasBuilder::identifier`](crate::sas::SasBuilder::identifier)) takes its
    /// permissions and validity from it, so changing or removing the policy changes or
    /// revokes every such SAS at once.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::access_policy::SignedIdentifier;
    /// let until = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(30 * 86_400);
    /// table.set_access_policy(&[SignedIdentifier::new("readers", "r").expiry(until)]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_access_policy(&self, policies: &[SignedIdentifier]) -> Result<()> {
        let body = access_policy::to_xml(policies, TABLE_POLICIES)?;
        self.pipeline
            .send(self.acl_request(Method::Put).body(body, "application/xml"))
            .await?;
        Ok(())
    }
}
