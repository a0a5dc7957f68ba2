//! The guards decide from their deadline, not only from what the background task published:
//! with a [`ManualClock`] the deadline passes while the renew task cannot run (a current-thread
//! runtime and no `.await` in between), which is what a GC pause, SIGSTOP or a VM freeze does
//! to a real process. Against Azurite, so the lease and the message are real.

use testkit::blob as blob_support;
use testkit::queue as queue_support;

use std::time::Duration;

use azstore::blob::BlobLock;
use azstore::clock::ManualClock;
use azstore::lease::{
    GuardOptions, GuardState, LeaseDuration, LeaseGuard, LeaseLoss, ReleaseOutcome,
};
use azstore::lock::LockOptions;
use azstore::queue::MessageGuard;
use azstore::{Conditions, blob::BlobClient, blob::LeaseState};
use futures_util::FutureExt;

const WINDOW: Duration = Duration::from_millis(12_500); // 15 s minus the default margin (1/6)
const TICK: Duration = Duration::from_millis(1);

/// A blob to lease, in a fresh container named after `prefix`.
async fn leased_blob(prefix: &str) -> BlobClient {
    let c = blob_support::container(prefix).await;
    let blob = c.blob("leased").unwrap();
    blob.upload("x", &Conditions::none()).await.unwrap();
    blob
}

#[tokio::test]
async fn lease_guard_reports_a_passed_deadline_before_its_renew_task_runs() {
    let blob = leased_blob("pauseclk").await;
    let manual = ManualClock::new();
    let guard = LeaseGuard::acquire_with(
        blob.clone(),
        LeaseDuration::seconds(15).unwrap(),
        GuardOptions::default().clock(manual.clock()),
    )
    .await
    .unwrap();
    // The acquire was sent at clock reading 0 (the manual clock has not moved).
    assert_eq!(guard.deadline(), Some(WINDOW));
    let mut rx = guard.subscribe();
    rx.borrow_and_update();
    let lost = guard.lost();
    tokio::pin!(lost);

    // From here on no `.await` until the checks: the renew task cannot run.
    manual.advance(WINDOW - TICK);
    assert!(guard.is_held());
    assert!(guard.check().is_ok());
    assert_eq!(guard.state(), GuardState::Held);
    assert!(!rx.has_changed().unwrap());
    manual.advance(TICK);
    assert!(!guard.is_held(), "the deadline passed: no longer held");
    assert_eq!(
        guard.state(),
        GuardState::Lost(LeaseLoss::Unconfirmed {
            since_last_renew: WINDOW
        })
    );
    let err = guard.check().unwrap_err();
    assert!(err.lease_lost(), "{err}");
    assert!(err.to_string().contains("12.5 s"), "{err}");
    // Published: subscribers and lost() wake at once.
    assert!(rx.has_changed().unwrap());
    assert!(matches!(
        (&mut lost).now_or_never(),
        Some(LeaseLoss::Unconfirmed { .. })
    ));

    // The service still has the lease: the guard decided from its clock alone.
    let props = blob.get_properties().await.unwrap();
    assert_eq!(props.lease_state, Some(LeaseState::Leased));
    // The loss is final: once the renew task runs it sees the deadline passed and stops
    // without renewing.
    tokio::time::sleep(Duration::from_millis(1200)).await;
    assert!(!guard.is_held());
    assert!(matches!(guard.state(), GuardState::Lost(_)));
    assert_eq!(guard.release().await.unwrap(), ReleaseOutcome::Released);
}

#[tokio::test]
async fn a_successful_renew_moves_the_deadline_on_the_guards_clock() {
    let blob = leased_blob("pauseren").await;
    let manual = ManualClock::new();
    let guard = LeaseGuard::acquire_with(
        blob.clone(),
        LeaseDuration::seconds(15).unwrap(),
        // Renew every 1.5 s (of tokio's clock), so the test need not wait 5 s.
        GuardOptions::default()
            .renew_fraction(0.1)
            .clock(manual.clock()),
    )
    .await
    .unwrap();
    let first = guard.last_renewed();
    manual.advance(Duration::from_secs(10));
    let t = std::time::Instant::now();
    while guard.last_renewed() == first {
        assert!(t.elapsed() < Duration::from_secs(10), "no renew");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Sent at clock reading 10 s: the deadline is 10 s + the window.
    let renewed_deadline = Duration::from_secs(10) + WINDOW;
    assert_eq!(guard.deadline(), Some(renewed_deadline));
    manual.advance(WINDOW - TICK);
    assert!(guard.is_held());
    manual.advance(TICK);
    assert!(!guard.is_held());
    assert!(guard.check().unwrap_err().lease_lost());
    assert_eq!(guard.release().await.unwrap(), ReleaseOutcome::Released);
}

#[tokio::test]
async fn held_lock_reports_a_passed_deadline_before_its_renew_task_runs() {
    let c = blob_support::container("pauselck").await;
    let manual = ManualClock::new();
    let lock = BlobLock::with_options(
        c,
        "locks/l",
        LockOptions::default()
            .duration(LeaseDuration::seconds(15).unwrap())
            .guard(GuardOptions::default().clock(manual.clock())),
    )
    .unwrap();
    let held = lock.try_acquire().await.unwrap().expect("free lock");
    let lost = held.lost();
    tokio::pin!(lost);
    assert!(held.is_held());
    manual.advance(Duration::from_secs(40));
    assert!(!held.is_held());
    assert!(held.check().unwrap_err().lease_lost());
    assert!(matches!(
        held.state(),
        GuardState::Lost(LeaseLoss::Unconfirmed { since_last_renew }) if since_last_renew >= Duration::from_secs(40)
    ));
    assert!((&mut lost).now_or_never().is_some());
    held.release().await.unwrap();
}

#[tokio::test]
async fn message_guard_reports_a_passed_deadline_before_its_task_runs() {
    let q = queue_support::fresh_queue("pausemsg").await;
    q.put_message("job").await.unwrap();
    let vis = Duration::from_secs(30);
    let msg = q.receive_message(vis).await.unwrap().expect("message");
    let manual = ManualClock::new();
    let guard = MessageGuard::start(
        &q,
        msg,
        GuardOptions::default()
            .visibility(vis)
            .clock(manual.clock()),
    )
    .unwrap();
    let mut signal = guard.lost_signal();
    // The message was hidden for 30 s from when the receive was sent (a little before now).
    manual.advance(vis - Duration::from_secs(1));
    assert!(!guard.is_lost());
    assert!(!signal.is_lost());
    manual.advance(Duration::from_secs(1));
    assert!(
        signal.is_lost(),
        "its invisibility ran out: another consumer may have it"
    );
    assert!(guard.is_lost());
    assert!(Box::pin(signal.lost()).now_or_never().is_some());
    // Ending the guard is still clean; the message reappears when its timeout ends.
    guard.abandon().await.unwrap();
}
