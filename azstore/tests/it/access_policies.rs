//! Stored access policies (Set / Get ACL) on containers, queues and tables, against Azurite.

use testkit::blob as blob_support;

/// Set ACL keeps the caller's sub-second start and expiry (the service keeps 7 fractional
/// digits and returns them from Get ACL). Azurite keeps milliseconds (it stores JavaScript
/// dates), so the times here have millisecond fractions; the 100 ns digits Azure keeps are
/// pinned in `access_policy`'s unit tests.
#[tokio::test]
async fn stored_access_policy_times_keep_their_fraction() {
    use azstore::access_policy::SignedIdentifier;
    use azstore::blob::ContainerAcl;
    let start = time::macros::datetime!(2026-01-02 03:04:05.250 UTC);
    let expiry = time::macros::datetime!(2026-01-03 03:04:05.999 UTC);
    let policy = SignedIdentifier::new("p1", "r").start(start).expiry(expiry);

    let c = blob_support::container("aclfrac").await;
    c.set_access_policy(
        &ContainerAcl::new(vec![policy.clone()]),
        &azstore::Conditions::none(),
    )
    .await
    .unwrap();
    let got = c
        .get_access_policy_if(&azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(got.acl.identifiers, vec![policy.clone()], "container");

    let q = testkit::queue::fresh_queue("aclfrac").await;
    q.set_access_policy(std::slice::from_ref(&policy))
        .await
        .unwrap();
    assert_eq!(
        q.get_access_policy().await.unwrap(),
        vec![policy.clone()],
        "queue"
    );

    let t = testkit::table::fresh_table("aclfrac").await;
    t.set_access_policy(std::slice::from_ref(&policy))
        .await
        .unwrap();
    assert_eq!(t.get_access_policy().await.unwrap(), vec![policy], "table");
}
