//! LeaseGuard: the renewal schedule and loss rules with paused tokio time (against a scripted
//! in-test `Leasable`, for the scheduling logic only), then the blob-specific cases against
//! Azurite in real time. Renewal, loss on a break and release on drop on every backend are
//! in the contract suite (`contract_lease`).

use testkit as support;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::lease::{
    BreakPeriod, GuardOptions, GuardState, Leasable, LeaseBroken, LeaseCapabilities, LeaseDuration,
    LeaseGuard, LeaseLoss, LeaseReleased, LeaseResult, ReleaseOutcome,
};
use azstore::{
    Conditions, Error, ErrorCode, ErrorKind, LeaseId, blob::BlobServiceClient,
    blob::ContainerClient,
};
use tokio::time::Instant;

// ---------------------------------------------------------------------------------------------
// Scheduling logic with paused time.

#[derive(Clone, Copy, Debug)]
enum Renew {
    Ok,
    Transient,
    Refuse,
    Hang,
}

#[derive(Clone)]
struct Scripted {
    start: Instant,
    script: Arc<Mutex<VecDeque<Renew>>>,
    /// Once the script is empty.
    then: Renew,
    calls: Arc<Mutex<Vec<(Duration, &'static str)>>>,
}

impl Scripted {
    fn new(script: &[Renew], then: Renew) -> Scripted {
        Scripted {
            start: Instant::now(),
            script: Arc::new(Mutex::new(script.iter().copied().collect())),
            then,
            calls: Arc::default(),
        }
    }
    fn log(&self, what: &'static str) {
        self.calls
            .lock()
            .unwrap()
            .push((self.start.elapsed(), what));
    }
    fn calls(&self, what: &str) -> Vec<Duration> {
        self.calls
            .lock()
            .unwrap()
            .iter()
            .filter(|(_, w)| *w == what)
            .map(|(t, _)| *t)
            .collect()
    }
}

impl Leasable for Scripted {
    fn lease_target(&self) -> String {
        "scripted".into()
    }
    fn lease_capabilities(&self) -> LeaseCapabilities {
        LeaseCapabilities::ALL
    }
    async fn lease_acquire(
        &self,
        _: LeaseDuration,
        proposed: &LeaseId,
    ) -> azstore::Result<LeaseResult> {
        self.log("acquire");
        Ok(LeaseResult::new(proposed.clone(), None))
    }
    async fn lease_renew(&self, id: &LeaseId) -> azstore::Result<LeaseResult> {
        self.log("renew");
        let next = self.script.lock().unwrap().pop_front().unwrap_or(self.then);
        match next {
            Renew::Ok => Ok(LeaseResult::new(id.clone(), None)),
            Renew::Transient => Err(Error::new(ErrorKind::Transport, "connection reset")),
            Renew::Refuse => Err(Error::new(ErrorKind::LeaseLost, "lease id mismatch")),
            Renew::Hang => std::future::pending().await,
        }
    }
    async fn lease_change(&self, _: &LeaseId, p: &LeaseId) -> azstore::Result<LeaseResult> {
        Ok(LeaseResult::new(p.clone(), None))
    }
    async fn lease_release(&self, _: &LeaseId) -> azstore::Result<LeaseReleased> {
        self.log("release");
        Ok(LeaseReleased::new(None))
    }
    async fn lease_break(&self, _: Option<BreakPeriod>) -> azstore::Result<LeaseBroken> {
        Ok(LeaseBroken::new(Duration::ZERO, None))
    }
}

fn s(x: f64) -> Duration {
    Duration::from_secs_f64(x)
}

fn secs(n: u64) -> LeaseDuration {
    LeaseDuration::seconds(n).unwrap()
}

#[tokio::test(start_paused = true)]
async fn renews_every_third_of_the_duration() {
    let fake = Scripted::new(&[], Renew::Ok);
    let guard = LeaseGuard::acquire(fake.clone(), secs(15)).await.unwrap();
    tokio::time::sleep(s(21.0)).await;
    assert_eq!(fake.calls("renew"), vec![s(5.0), s(10.0), s(15.0), s(20.0)]);
    assert!(guard.is_held());
    assert_eq!(guard.last_renewed() - fake.start, s(20.0));
    assert_eq!(guard.release().await.unwrap(), ReleaseOutcome::Released);
    tokio::time::sleep(s(30.0)).await;
    // No renew after the release.
    assert_eq!(fake.calls("renew").len(), 4);
    assert_eq!(fake.calls("release"), vec![s(21.0)]);
}

#[tokio::test(start_paused = true)]
async fn renew_fraction_is_configurable() {
    let fake = Scripted::new(&[], Renew::Ok);
    let _guard = LeaseGuard::acquire_with(
        fake.clone(),
        secs(60),
        GuardOptions::default().renew_fraction(0.5),
    )
    .await
    .unwrap();
    tokio::time::sleep(s(61.0)).await;
    assert_eq!(fake.calls("renew"), vec![s(30.0), s(60.0)]);
}

#[tokio::test(start_paused = true)]
async fn transient_failures_are_retried_quickly_and_not_reported() {
    let fake = Scripted::new(&[Renew::Transient, Renew::Transient], Renew::Ok);
    let guard = LeaseGuard::acquire(fake.clone(), secs(15)).await.unwrap();
    tokio::time::sleep(s(11.0)).await;
    // 5 s: fails; +0.25 s: fails; +0.5 s: succeeds; the next renew is 5 s after that one.
    assert_eq!(
        fake.calls("renew"),
        vec![s(5.0), s(5.25), s(5.75), s(10.75)]
    );
    assert!(guard.is_held());
    guard.check().unwrap();
}

#[tokio::test(start_paused = true)]
async fn persistent_failures_signal_loss_before_the_lease_can_expire() {
    let fake = Scripted::new(&[Renew::Ok], Renew::Transient);
    let guard = LeaseGuard::acquire(fake.clone(), secs(15)).await.unwrap();
    let mut rx = guard.subscribe();
    let loss = guard.lost().await;
    // Last success was sent at 5 s; the safe window is 15 - 15/6 = 12.5 s after it.
    assert_eq!(fake.start.elapsed(), s(17.5));
    assert_eq!(
        loss,
        LeaseLoss::Unconfirmed {
            since_last_renew: s(12.5)
        }
    );
    assert!(matches!(&*rx.borrow_and_update(), GuardState::Lost(_)));
    let err = guard.check().unwrap_err();
    assert!(err.lease_lost());
    assert_eq!(err.kind(), ErrorKind::LeaseLost);
    // Retries grew from 0.25 s but never past the renew interval, and stopped at the deadline.
    let renews = fake.calls("renew");
    assert!(renews.len() >= 6, "{renews:?}");
    assert!(renews.iter().all(|t| *t < s(17.5)));
}

#[tokio::test(start_paused = true)]
async fn a_hanging_renew_is_cut_off_at_the_deadline() {
    let fake = Scripted::new(&[], Renew::Hang);
    let guard = LeaseGuard::acquire(fake.clone(), secs(30)).await.unwrap();
    let loss = guard.lost().await;
    assert_eq!(fake.start.elapsed(), s(25.0));
    assert_eq!(
        loss,
        LeaseLoss::Unconfirmed {
            since_last_renew: s(25.0)
        }
    );
    assert_eq!(fake.calls("renew"), vec![s(10.0)]);
}

#[tokio::test(start_paused = true)]
async fn a_refused_renew_is_loss_at_once() {
    let fake = Scripted::new(&[Renew::Ok], Renew::Refuse);
    let guard = LeaseGuard::acquire(fake.clone(), secs(15)).await.unwrap();
    let loss = guard.lost().await;
    assert_eq!(fake.start.elapsed(), s(10.0));
    assert!(matches!(loss, LeaseLoss::Refused { .. }), "{loss:?}");
    tokio::time::sleep(s(30.0)).await;
    assert_eq!(fake.calls("renew").len(), 2, "no renew after a refusal");
}

#[tokio::test(start_paused = true)]
async fn drop_stops_renewing_and_releases_in_the_background() {
    let fake = Scripted::new(&[], Renew::Ok);
    let guard = LeaseGuard::acquire(fake.clone(), secs(15)).await.unwrap();
    tokio::time::sleep(s(6.0)).await;
    drop(guard);
    tokio::time::sleep(s(60.0)).await;
    assert_eq!(fake.calls("renew"), vec![s(5.0)]);
    assert_eq!(fake.calls("release"), vec![s(6.0)]);
}

#[tokio::test(start_paused = true)]
async fn infinite_leases_are_not_renewed() {
    let fake = Scripted::new(&[], Renew::Ok);
    let guard = LeaseGuard::acquire(fake.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    tokio::time::sleep(s(600.0)).await;
    assert!(fake.calls("renew").is_empty());
    assert!(guard.is_held());
}

#[tokio::test(start_paused = true)]
async fn invalid_options_are_refused_before_acquiring() {
    let fake = Scripted::new(&[], Renew::Ok);
    for opts in [
        GuardOptions::default().renew_fraction(0.0),
        GuardOptions::default().renew_fraction(1.0),
        GuardOptions::default().renew_fraction(f64::NAN),
        GuardOptions::default().safety_margin(s(10.0)), // 1/3 of 15 s = 5 s = 15 - 10
        GuardOptions::default().retry_delay(Duration::ZERO),
    ] {
        let err = LeaseGuard::acquire_with(fake.clone(), secs(15), opts.clone())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{opts:?}");
    }
    assert!(fake.calls("acquire").is_empty());
}

// ---------------------------------------------------------------------------------------------
// Against Azurite, real time.

async fn container(prefix: &str) -> ContainerClient {
    let blobs = BlobServiceClient::new(&support::account()).unwrap();
    let c = blobs.container(&support::unique(prefix)).unwrap();
    c.create().await.unwrap();
    c
}

#[tokio::test]
async fn container_guard_works_too() {
    let c = container("guardcnt").await;
    let guard = LeaseGuard::acquire(c.clone(), secs(15)).await.unwrap();
    let err = c.delete(&Conditions::none()).await.unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::LeaseIdMissing));
    c.delete(&guard.conditions()).await.unwrap();
    // The container is gone with its lease: releasing is not an error.
    assert!(matches!(
        guard.release().await.unwrap(),
        ReleaseOutcome::AlreadyGone { .. }
    ));
}

#[tokio::test]
async fn deleting_the_leased_blob_is_reported_as_loss() {
    let c = container("guarddel").await;
    let blob = c.blob("held").unwrap();
    blob.upload("0", &Conditions::none()).await.unwrap();
    let guard = LeaseGuard::acquire(blob.clone(), secs(15)).await.unwrap();
    blob.delete(&guard.conditions()).await.unwrap();
    let loss = tokio::time::timeout(Duration::from_secs(7), guard.lost())
        .await
        .expect("loss within one renew interval");
    match loss {
        LeaseLoss::Refused { status, .. } => assert_eq!(status, Some(404)),
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[tokio::test]
async fn transient_server_errors_on_renew_are_retried_not_reported() {
    use support::scripted::{Reply, Scripted};
    let id = LeaseId::random();
    let ok = Reply::with(
        200,
        &[("x-ms-lease-id", id.as_str()), ("etag", "\"0x1\"")],
        b"",
    );
    let busy = Reply::with(503, &[("x-ms-error-code", "ServerBusy")], b"");
    let mut script = vec![Reply::with(
        201,
        &[("x-ms-lease-id", id.as_str()), ("etag", "\"0x1\"")],
        b"",
    )];
    // The first renew sees 503s for longer than the pipeline's own retries last.
    script.extend(std::iter::repeat_n(busy, 6));
    script.push(ok);
    let server = Scripted::start(script).await;
    let options = azstore::http::ClientOptions::default().retry(
        azstore::http::RetryPolicy::default()
            .max_retries(1)
            .initial_delay(Duration::from_millis(10)),
    );
    let blob = BlobServiceClient::with_options(&server.account(), options)
        .unwrap()
        .container("c1c")
        .unwrap()
        .blob("b")
        .unwrap();
    let guard = LeaseGuard::acquire(blob, secs(15)).await.unwrap();
    assert_eq!(guard.lease_id(), &id);
    tokio::time::sleep(Duration::from_secs(8)).await;
    assert!(guard.is_held(), "{:?}", guard.state());
    let requests = server.requests();
    let renews: Vec<_> = requests
        .iter()
        .filter(|r| r.header("x-ms-lease-action") == Some("renew"))
        .collect();
    // 6 refused attempts (3 guard retries x 2 pipeline attempts), then success.
    assert_eq!(renews.len(), 7, "{renews:?}");
    assert!(
        renews
            .iter()
            .all(|r| r.header("x-ms-lease-id") == Some(id.as_str()))
    );
}
