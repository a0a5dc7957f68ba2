//! The queue ACL: stored access policies (**last writer wins**).

use crate::access_policy::{self, PolicyRules, SignedIdentifier};
use crate::error::Result;
use crate::http::Method;
use crate::queue::client::QueueClient;

/// A queue's policies grant read, add, update and process (`raup`).
const QUEUE_POLICIES: PolicyRules = PolicyRules {
    resource: "a queue",
    letters: Some("raup"),
};

impl QueueClient {
    /// Get Queue ACL: the stored access policies.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// for policy in queue.get_access_policy().await? {
    ///     println!("{}: {:?} until {:?}", policy.id, policy.permission, policy.expiry);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_access_policy(&self) -> Result<Vec<SignedIdentifier>> {
        let resp = self
            .pipeline
            .send(self.request(Method::Get).query("comp", "acl"))
            .await?;
        access_policy::parse(&resp.body, "Get Queue ACL")
    }

    /// Set Queue ACL, replacing all stored access policies (at most 5; permissions a subset
    /// of `raup`, refused before sending otherwise). **Last writer wins**.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use azstore::access_policy::SignedIdentifier;
    /// // Revoke every SAS that names a policy: store none.
    /// queue.set_access_policy(&[]).await?;
    /// # let _ = SignedIdentifier::new("x", "r");
    /// # Ok(()) }
    /// ```
    pub async fn set_access_policy(&self, policies: &[SignedIdentifier]) -> Result<()> {
        let body = access_policy::to_xml(policies, QUEUE_POLICIES)?;
        self.pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "acl")
                    .body(body, "application/xml"),
            )
            .await?;
        Ok(())
    }
}
