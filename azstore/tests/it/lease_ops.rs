//! Lease operations on blobs and containers against Azurite: the seed's pessimistic scenario,
//! every lease action, the error codes of refusals, conditions, and bad input refused before
//! sending.

use testkit as support;

use std::time::Duration;

use azstore::blob::{LeaseState, LeaseStatus};
use azstore::lease::{BreakPeriod, LeaseDuration};
use azstore::{
    Conditions, ErrorCode, ErrorKind, LeaseId, blob::BlobServiceClient, blob::ContainerClient,
};
use support::scripted::{Reply, Scripted};

async fn container(prefix: &str) -> ContainerClient {
    let blobs = BlobServiceClient::new(&support::account()).unwrap();
    let c = blobs.container(&support::unique(prefix)).unwrap();
    c.create().await.unwrap();
    c
}

fn secs(n: u64) -> LeaseDuration {
    LeaseDuration::seconds(n).unwrap()
}

#[tokio::test]
async fn seed_pessimistic_scenario() {
    let c = container("pess").await;
    let blob = c.blob("data.txt").unwrap();
    let written = blob.upload("v1", &Conditions::none()).await.unwrap();

    let lease = blob
        .acquire_lease(secs(15), None, &Conditions::none())
        .await
        .unwrap();
    // Lease operations do not change the ETag.
    assert_eq!(lease.etag.as_ref(), Some(&written.etag));
    let props = blob.get_properties().await.unwrap();
    assert_eq!(props.etag, written.etag);
    assert_eq!(props.lease_state, Some(LeaseState::Leased));
    assert_eq!(props.lease_status, Some(LeaseStatus::Locked));

    // Write with the lease id: accepted.
    let v2 = blob
        .upload("v2", &Conditions::lease(&lease.lease_id))
        .await
        .unwrap();
    assert_ne!(v2.etag, written.etag);
    // Write without it: 412 LeaseIdMissing, and the data is not replaced.
    let err = blob
        .upload("intruder", &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseIdMissing));
    assert_eq!(err.kind(), ErrorKind::LeaseHeld);
    let got = blob.download().await.unwrap();
    assert_eq!(&got.body[..], b"v2");

    let released = blob
        .release_lease(&lease.lease_id, &Conditions::none())
        .await
        .unwrap();
    assert_eq!(released.etag.as_ref(), Some(&v2.etag));
    let props = blob.get_properties().await.unwrap();
    assert_eq!(props.lease_state, Some(LeaseState::Available));
    // Free for everyone again.
    blob.upload("v3", &Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn acquire_renew_change_release_and_their_refusals() {
    let c = container("leaseops").await;
    let blob = c.blob("x").unwrap();
    blob.upload("x", &Conditions::none()).await.unwrap();

    let proposed = LeaseId::random();
    let lease = blob
        .acquire_lease(secs(20), Some(&proposed), &Conditions::none())
        .await
        .unwrap();
    assert_eq!(lease.lease_id, proposed);

    // Acquiring again with the same proposed id is accepted (what makes a retried acquire
    // safe); with another id it is refused.
    let again = blob
        .acquire_lease(secs(20), Some(&proposed), &Conditions::none())
        .await
        .unwrap();
    assert_eq!(again.lease_id, proposed);
    let err = blob
        .acquire_lease(secs(20), None, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseAlreadyPresent));
    assert!(err.is_lease_error());
    assert!(!err.lease_lost());

    let renewed = blob
        .renew_lease(&proposed, &Conditions::none())
        .await
        .unwrap();
    assert_eq!(renewed.lease_id, proposed);

    let stranger = LeaseId::random();
    let err = blob
        .renew_lease(&stranger, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithLeaseOperation)
    );
    assert!(err.lease_lost());

    let new_id = LeaseId::random();
    let changed = blob
        .change_lease(&proposed, &new_id, &Conditions::none())
        .await
        .unwrap();
    assert_eq!(changed.lease_id, new_id);
    // The old id no longer writes.
    let err = blob
        .upload("old", &Conditions::lease(&proposed))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithBlobOperation)
    );
    blob.upload("new", &Conditions::lease(&new_id))
        .await
        .unwrap();

    let err = blob
        .release_lease(&proposed, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIdMismatchWithLeaseOperation)
    );
    blob.release_lease(&new_id, &Conditions::none())
        .await
        .unwrap();
    let err = blob
        .renew_lease(&new_id, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
}

#[tokio::test]
async fn break_reports_remaining_time_and_blocks_acquire_while_breaking() {
    let c = container("leasebrk").await;
    let blob = c.blob("x").unwrap();
    blob.upload("x", &Conditions::none()).await.unwrap();

    let lease = blob
        .acquire_lease(secs(60), None, &Conditions::none())
        .await
        .unwrap();
    let broken = blob
        .break_lease(Some(BreakPeriod::seconds(20).unwrap()), &Conditions::none())
        .await
        .unwrap();
    assert!(
        (Duration::from_secs(19)..=Duration::from_secs(20)).contains(&broken.remaining),
        "{broken:?}"
    );
    let props = blob.get_properties().await.unwrap();
    assert_eq!(props.lease_state, Some(LeaseState::Breaking));
    // A stranger is refused with LeaseAlreadyPresent; the breaking lease's own holder (acquire
    // proposing the same id) with LeaseIsBreakingAndCannotBeAcquired.
    let err = blob
        .acquire_lease(secs(15), None, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseAlreadyPresent));
    let err = blob
        .acquire_lease(secs(15), Some(&lease.lease_id), &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIsBreakingAndCannotBeAcquired)
    );
    assert_eq!(err.kind(), ErrorKind::LeaseHeld);
    // While breaking the holder can still write.
    blob.upload("still mine", &Conditions::lease(&lease.lease_id))
        .await
        .unwrap();

    // Break at once: remaining time 0, the lease cannot be renewed, anyone can acquire.
    let now = blob
        .break_lease(Some(BreakPeriod::immediate()), &Conditions::none())
        .await
        .unwrap();
    assert_eq!(now.remaining, Duration::ZERO);
    let props = blob.get_properties().await.unwrap();
    assert_eq!(props.lease_state, Some(LeaseState::Broken));
    let err = blob
        .renew_lease(&lease.lease_id, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(
        err.error_code(),
        Some(&ErrorCode::LeaseIsBrokenAndCannotBeRenewed)
    );
    assert!(err.lease_lost());
    let next = blob
        .acquire_lease(LeaseDuration::Infinite, None, &Conditions::none())
        .await
        .unwrap();
    // An infinite lease breaks at once by default.
    let b = blob.break_lease(None, &Conditions::none()).await.unwrap();
    assert_eq!(b.remaining, Duration::ZERO);
    let err = blob
        .upload("stale", &Conditions::lease(&next.lease_id))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::LeaseLost, "{err}");
}

#[tokio::test]
async fn lease_operations_honour_conditions() {
    let c = container("leasecond").await;
    let blob = c.blob("x").unwrap();
    let v1 = blob.upload("1", &Conditions::none()).await.unwrap();
    let v2 = blob.upload("2", &Conditions::none()).await.unwrap();

    let err = blob
        .acquire_lease(secs(15), None, &Conditions::if_match(&v1.etag))
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.error_code(), Some(&ErrorCode::ConditionNotMet));
    let lease = blob
        .acquire_lease(secs(15), None, &Conditions::if_match(&v2.etag))
        .await
        .unwrap();
    assert_eq!(lease.etag.as_ref(), Some(&v2.etag));
    blob.release_lease(&lease.lease_id, &Conditions::none())
        .await
        .unwrap();

    // Lease Container takes only the date conditions, and a lease id is never a condition of
    // a lease operation: both refused before sending.
    let err = c
        .acquire_lease(secs(15), None, &Conditions::if_match(&v2.etag))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = blob
        .acquire_lease(secs(15), None, &Conditions::lease(&LeaseId::random()))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn container_lease_guards_delete() {
    let c = container("leasecnt").await;
    let lease = c
        .acquire_lease(secs(15), None, &Conditions::none())
        .await
        .unwrap();
    let err = c
        .acquire_lease(secs(15), None, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseAlreadyPresent));
    c.renew_lease(&lease.lease_id, &Conditions::none())
        .await
        .unwrap();
    // Other operations work without the lease id; delete does not.
    c.blob("b")
        .unwrap()
        .upload("x", &Conditions::none())
        .await
        .unwrap();
    let err = c.delete(&Conditions::none()).await.unwrap_err();
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseIdMissing));
    let id2 = LeaseId::random();
    c.change_lease(&lease.lease_id, &id2, &Conditions::none())
        .await
        .unwrap();
    let b = c
        .break_lease(Some(BreakPeriod::immediate()), &Conditions::none())
        .await
        .unwrap();
    assert_eq!(b.remaining, Duration::ZERO);
    let again = c
        .acquire_lease(secs(15), None, &Conditions::none())
        .await
        .unwrap();
    c.release_lease(&again.lease_id, &Conditions::none())
        .await
        .unwrap();
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn bad_input_is_refused_before_sending() {
    // Durations and break periods cannot even be built out of range.
    for s in [0, 14, 61, 3600] {
        let err = LeaseDuration::seconds(s).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput);
        assert!(err.message().contains("15-60"), "{err}");
    }
    assert_eq!(
        BreakPeriod::seconds(61).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert!(LeaseId::new("not-a-guid").is_err());

    // Refused conditions and guard options send nothing: a real server counts requests.
    let server = Scripted::start(vec![Reply::status(500)]).await;
    let blobs = BlobServiceClient::new(&server.account()).unwrap();
    let c = blobs.container("ctr").unwrap();
    let blob = c.blob("b").unwrap();
    let err = c
        .acquire_lease(secs(15), None, &Conditions::if_tags("\"a\" = 'b'"))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = azstore::lease::LeaseGuard::acquire_with(
        blob.clone(),
        secs(15),
        azstore::lease::GuardOptions::default().renew_fraction(0.9),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    let err = azstore::lease::LeaseGuard::acquire_with(
        blob,
        secs(15),
        azstore::lease::GuardOptions::default().safety_margin(Duration::from_secs(15)),
    )
    .await
    .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.count(), 0);
}
