//! Immutability policies and legal holds on blobs, against a scripted server.

/// Immutability policy and legal hold (REST reference: `comp=immutabilityPolicies`,
/// `comp=legalhold`): Azurite answers 501 to all three, so the answers are scripted,
/// including the 409 Azure gives for deleting a locked policy.
#[tokio::test]
async fn immutability_policy_and_legal_hold() {
    use azstore::blob::{BlobServiceClient, ImmutabilityPolicy, ImmutabilityPolicyMode};
    use testkit::scripted::{Reply, Scripted};
    let until = "Fri, 25 Dec 2026 00:00:00 GMT";
    let server = Scripted::start(vec![
        Reply::with(
            200,
            &[
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "unlocked"),
            ],
            b"",
        ),
        Reply::with(
            200,
            &[
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "locked"),
            ],
            b"",
        ),
        Reply::with(200, &[("x-ms-legal-hold", "true")], b""),
        Reply::with(
            200,
            &[
                ("etag", "\"0x8DA707C178DC7C6\""),
                ("content-length", "3"),
                ("x-ms-immutability-policy-until-date", until),
                ("x-ms-immutability-policy-mode", "locked"),
                ("x-ms-legal-hold", "true"),
            ],
            b"",
        ),
        Reply::azure_error(409, "ImmutabilityPolicyDeleteOnLockedPolicy"),
    ])
    .await;
    let blob = BlobServiceClient::new(&server.account())
        .unwrap()
        .container("worm")
        .unwrap()
        .blob("ledger")
        .unwrap();
    let expiry = time::macros::datetime!(2026-12-25 00:00:00 UTC);
    let policy = ImmutabilityPolicy::new(expiry, ImmutabilityPolicyMode::Unlocked);
    let since = time::macros::datetime!(2026-11-01 00:00:00 UTC);
    let held = blob
        .set_immutability_policy(
            &policy,
            &azstore::Conditions {
                if_unmodified_since: Some(since),
                ..azstore::Conditions::none()
            },
        )
        .await
        .unwrap();
    assert_eq!(held, policy);
    let locked = blob
        .set_immutability_policy(&policy.locked(), &azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(locked.mode, ImmutabilityPolicyMode::Locked);
    assert!(blob.set_legal_hold(true).await.unwrap());
    let p = blob.get_properties().await.unwrap();
    assert_eq!(p.immutability_policy, Some(policy.locked()));
    assert_eq!(p.legal_hold, Some(true));
    let e = blob.delete_immutability_policy().await.unwrap_err();
    assert_eq!(e.status(), Some(409));

    let sent = server.requests();
    assert!(
        sent[0]
            .target
            .ends_with("/worm/ledger?comp=immutabilityPolicies")
    );
    assert_eq!(sent[0].method, "PUT");
    assert_eq!(
        sent[0].header("x-ms-immutability-policy-until-date"),
        Some(until)
    );
    assert_eq!(
        sent[0].header("x-ms-immutability-policy-mode"),
        Some("Unlocked")
    );
    assert_eq!(
        sent[0].header("if-unmodified-since"),
        Some("Sun, 01 Nov 2026 00:00:00 GMT")
    );
    assert_eq!(
        sent[1].header("x-ms-immutability-policy-mode"),
        Some("Locked")
    );
    assert!(sent[2].target.ends_with("?comp=legalhold"));
    assert_eq!(sent[2].header("x-ms-legal-hold"), Some("true"));
    assert_eq!(sent[4].method, "DELETE");
    assert!(sent[4].target.ends_with("?comp=immutabilityPolicies"));
    // Only If-Unmodified-Since is accepted.
    let etag = azstore::ETag::new("\"1\"");
    let e = blob
        .set_immutability_policy(&policy, &azstore::Conditions::if_match(&etag))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 5);
}
