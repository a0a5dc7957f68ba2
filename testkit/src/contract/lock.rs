//! The lock contract: what `azstore::lock::Lock<T>` guarantees on every backend. Each
//! function takes a factory that builds a new handle onto ONE lock (each contender gets its
//! own, as separate processes would), with a fixed lease of 15 s (the shortest a blob lease
//! can be) and default renewals (every 5 s).
//!
//! Call every function once per backend, e.g.
//! `contract::lock::mutual_exclusion(|| BlobLock::with_options(c.clone(), "l", opts()).unwrap()).await`.

use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::sync::atomic::{AtomicUsize, Ordering};

use azstore::LeaseId;
use azstore::lease::{BreakPeriod, LeaseBroken, LeaseDuration, LeaseLoss, ReleaseOutcome};
use azstore::lock::{Attempt, Held, Lock, LockClaim, LockOptions, LockStatus, LockTarget, Probe};
use tokio::time::Instant;

/// The options every guarantee uses: 15 s leases (the shortest a blob lease can be).
pub fn opts() -> LockOptions {
    LockOptions::default()
        .duration(LeaseDuration::seconds(15).expect("15 s is a valid lease"))
        .label("contract")
}

/// Alternates contenders between the in-process wake-up and polling only (what separate
/// processes get), so mutual exclusion is checked under both.
pub fn alternating<T: LockTarget>(make: impl Fn(LockOptions) -> Lock<T>) -> impl Fn() -> Lock<T> {
    let n = Arc::new(AtomicUsize::new(0));
    move || make(opts().local_wakeup(n.fetch_add(1, Ordering::Relaxed) % 2 == 0))
}

/// Smallest fencing token that is a wall-clock value (2023-11-14): the first token of a fresh
/// lock is the clock in milliseconds, on every backend.
pub const CLOCK_TOKEN_FLOOR: u64 = 1_700_000_000_000;

/// (enter, exit, fencing token, task).
type Section = (Instant, Instant, u64, usize);

/// 8 contending tasks x 3 rounds of `acquire_within`: no two critical sections overlap, every
/// task gets the lock every round, fencing tokens grow in entry order, and the status
/// afterwards shows the lock free with the last token.
pub async fn mutual_exclusion<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let lock = make();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                let held = lock
                    .acquire_within(Duration::from_secs(120))
                    .await
                    .expect("mutual exclusion: the wait failed")
                    .expect("mutual exclusion: every contender eventually gets the lock");
                let enter = Instant::now();
                tokio::time::sleep(Duration::from_millis(20)).await;
                held.check()
                    .expect("mutual exclusion: held during the section");
                let exit = Instant::now();
                log.lock()
                    .unwrap()
                    .push((enter, exit, held.fencing_token(), i));
                assert_eq!(
                    held.release().await.expect("mutual exclusion: release"),
                    ReleaseOutcome::Released
                );
            }
        }));
    }
    for t in tasks {
        t.await.expect("mutual exclusion: a contender panicked");
    }
    let mut log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 24);
    log.sort_by_key(|e| e.0);
    for pair in log.windows(2) {
        assert!(
            pair[1].0 >= pair[0].1,
            "mutual exclusion: critical sections overlap: {pair:?}"
        );
        assert!(
            pair[1].2 > pair[0].2,
            "mutual exclusion: fencing tokens must grow in entry order: {pair:?}"
        );
    }
    for i in 0..8 {
        assert_eq!(log.iter().filter(|e| e.3 == i).count(), 3, "task {i}");
    }
    let status = make().status().await.expect("status");
    assert!(
        !status.locked,
        "mutual exclusion: free at the end: {status:?}"
    );
    assert_eq!(status.fencing_token, Some(log.last().unwrap().2));
}

/// Fencing tokens strictly increase across holders: the first is a clock value (ms since
/// the epoch); every later holder's is larger — also after `delete` removed the lock record
/// (what a time to live collecting it does), when the record is created afresh.
pub async fn fencing_tokens_increase<T, F, D, Fut>(make: F, delete: D)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
    D: Fn() -> Fut,
    Fut: Future<Output = ()>,
{
    let mut tokens = Vec::new();
    for round in 0..6 {
        if round == 3 {
            // A record collected by a time to live was untouched for at least that long; the
            // clock-based formula relies on it (the lock module's "Fencing tokens"). Three
            // acquisitions within one millisecond put the counter ahead of the clock by up to
            // two, so let the clock pass the last token first, as any time to live would.
            wait_for_clock_past(*tokens.last().unwrap()).await;
            delete().await;
            let status = make().status().await.expect("status after delete");
            assert!(
                !status.exists && status.fencing_token.is_none(),
                "fencing: the record was deleted: {status:?}"
            );
        }
        let held = acquire_free(&make(), "fencing: acquire", "fencing: the lock is free").await;
        tokens.push(held.fencing_token());
        held.release().await.expect("fencing: release");
    }
    assert!(
        tokens[0] >= CLOCK_TOKEN_FLOOR,
        "fencing: the first token of a fresh lock is a clock value: {tokens:?}"
    );
    assert!(
        tokens.windows(2).all(|w| w[1] > w[0]),
        "fencing: tokens must strictly increase across holders and across delete + recreate: {tokens:?}"
    );
}

/// Sleeps until this host's wall clock (in ms since the epoch) passes `token`, at most 2 s
/// (a server clock ahead of this one is not waited for beyond that).
async fn wait_for_clock_past(token: u64) {
    let deadline = Instant::now() + Duration::from_secs(2);
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    };
    while now_ms() <= token && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
}

/// `try_acquire` on a lock that must be free: panics with `acquire` (and the error) when the
/// attempt fails, with `free` when the lock is held.
async fn acquire_free<T: LockTarget>(lock: &Lock<T>, acquire: &str, free: &str) -> Held<T::Lease> {
    lock.try_acquire()
        .await
        .unwrap_or_else(|e| panic!("{acquire}: {e:?}"))
        .unwrap_or_else(|| panic!("{free}"))
}

/// `break_lock(None)` lets the holder notice (its next renew is refused) before anyone else
/// can acquire: the lock stays breaking meanwhile, and the next holder's token is larger.
pub async fn break_none_lets_the_holder_notice_first<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let lock = make();
    let held = acquire_free(&lock, "break(None): acquire", "break(None): free").await;
    let broke = Instant::now();
    let b: LeaseBroken = lock.break_lock(None).await.expect("break(None)");
    assert!(
        b.remaining >= Duration::from_secs(9),
        "break(None): the rest of the 15 s lease: {b:?}"
    );
    let status: LockStatus = lock.status().await.expect("status");
    assert!(
        status.locked && status.breaking,
        "break(None): breaking: {status:?}"
    );
    let contender = make();
    let acquired_at = tokio::spawn(async move {
        let next = contender
            .acquire_within(Duration::from_secs(40))
            .await
            .expect("break(None): the contender's wait")
            .expect("break(None): free once the break ends");
        (Instant::now(), next)
    });
    let loss = tokio::time::timeout(Duration::from_secs(8), held.lost())
        .await
        .expect("break(None): the holder notices at its next renew (5 s)");
    let noticed = Instant::now();
    assert!(
        matches!(loss, LeaseLoss::Refused { .. }),
        "break(None): {loss:?}"
    );
    assert!(held.check().is_err_and(|e| e.lease_lost()));
    let (acquired_at, next) = acquired_at.await.expect("contender");
    assert!(
        noticed < acquired_at,
        "break(None): the holder noticed {:?} after the break, the contender acquired {:?} after it",
        noticed - broke,
        acquired_at - broke
    );
    assert!(next.fencing_token() > held.fencing_token());
    next.release().await.expect("release");
    assert!(matches!(
        held.release().await.expect("release after loss"),
        ReleaseOutcome::AlreadyGone { .. }
    ));
}

/// `break_lock(Some(immediate))` frees the lock at once (another handle acquires it with a
/// larger token), and the old holder's check fails from its next renew on.
pub async fn break_zero_frees_at_once<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let lock = make();
    let held = acquire_free(&lock, "break(0): acquire", "break(0): free").await;
    let b = lock
        .break_lock(Some(BreakPeriod::immediate()))
        .await
        .expect("break(0)");
    assert_eq!(b.remaining, Duration::ZERO, "break(0): {b:?}");
    let next = acquire_free(
        &make(),
        "break(0): acquire after the break",
        "break(0): free at once",
    )
    .await;
    assert!(next.fencing_token() > held.fencing_token());
    let loss = tokio::time::timeout(Duration::from_secs(8), held.lost())
        .await
        .expect("break(0): the old holder notices at its next renew (5 s)");
    assert!(
        matches!(loss, LeaseLoss::Refused { .. }),
        "break(0): {loss:?}"
    );
    assert!(
        held.check().is_err_and(|e| e.lease_lost()),
        "break(0): the old holder's check fails"
    );
    assert!(next.is_held());
    assert!(matches!(
        held.release().await.expect("release after loss"),
        ReleaseOutcome::AlreadyGone { .. }
    ));
    next.release().await.expect("release");
}

/// The status before the first acquire (no record), while held (locked, token, owner) and
/// after the release (not locked, token and last owner kept).
pub async fn status_after_release<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let lock = make();
    let before = lock.status().await.expect("status");
    assert!(
        !before.exists && !before.locked,
        "status: fresh: {before:?}"
    );
    assert_eq!(before.fencing_token, None);
    let held = acquire_free(&lock, "status: acquire", "status: free").await;
    let during = lock.status().await.expect("status");
    assert!(
        during.exists && during.locked && !during.breaking,
        "status: held: {during:?}"
    );
    assert_eq!(during.fencing_token, Some(held.fencing_token()));
    let owner = during.owner.expect("status: the owner is recorded");
    assert_eq!(owner.pid, Some(std::process::id()));
    assert!(!owner.host.is_empty() && owner.acquired_at.is_some());
    assert!(
        make().try_acquire().await.expect("acquire").is_none(),
        "status: held by someone else"
    );
    held.release().await.expect("release");
    let after = lock.status().await.expect("status");
    assert!(
        after.exists && !after.locked && !after.breaking,
        "status: released: {after:?}"
    );
    assert_eq!(after.fencing_token, during.fencing_token, "token kept");
    assert!(after.owner.is_some(), "last owner kept");
}

/// Someone holds the lock for the whole wait: `acquire_within` answers `Ok(None)`, by its
/// deadline.
pub async fn wait_on_a_held_lock_is_none_by_the_deadline<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let held = make().try_acquire().await.expect("acquire").expect("free");
    let waiter = make();
    let started = Instant::now();
    let got = waiter
        .acquire_within(Duration::from_millis(1500))
        .await
        .expect("held elsewhere: the wait is not an error");
    let took = started.elapsed();
    assert!(got.is_none(), "held elsewhere: None");
    assert!(
        (Duration::from_millis(1500)..Duration::from_millis(3500)).contains(&took),
        "held elsewhere: returned after {took:?}, not by its 1.5 s deadline"
    );
    held.release().await.expect("release");
}

/// The service cannot be reached (`unreachable` builds a lock whose service refuses
/// connections, or never answers): `acquire_within` rides the failures out until its deadline
/// and then answers an ERROR — never `Ok(None)`, which would claim someone holds the lock —
/// and returns by the deadline. `try_acquire` is an error too.
pub async fn wait_on_an_unreachable_service_is_an_error<T, F>(unreachable: F)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
{
    let lock = unreachable();
    let wait = Duration::from_secs(2);
    let started = Instant::now();
    let got = lock.acquire_within(wait).await;
    let took = started.elapsed();
    assert!(
        got.is_err(),
        "unreachable service: the wait must end with an error, got Ok({:?})",
        got.ok().map(|h| h.is_some())
    );
    assert!(
        took < wait + Duration::from_millis(1500),
        "unreachable service: returned after {took:?}, not by its {wait:?} deadline"
    );
    assert!(
        took >= wait - Duration::from_millis(100),
        "unreachable service: gave up after {took:?} instead of riding failures out until {wait:?}"
    );
    assert!(
        unreachable().try_acquire().await.is_err(),
        "unreachable service: one attempt is an error too"
    );
}

/// The service dies while a waiter waits for a held lock (`via` reaches the service through a
/// proxy; `kill` kills the proxy): the wait ends by its deadline with an error, not `Ok(None)`.
pub async fn wait_on_a_dying_service_is_an_error<T, F, V, K>(make: F, via: V, kill: K)
where
    T: LockTarget,
    F: Fn() -> Lock<T>,
    V: Fn() -> Lock<T>,
    K: FnOnce(),
{
    let held = make().try_acquire().await.expect("acquire").expect("free");
    let waiter = via();
    let wait = Duration::from_secs(4);
    let started = Instant::now();
    let waiting = tokio::spawn(async move { waiter.acquire_within(wait).await });
    tokio::time::sleep(Duration::from_millis(1000)).await;
    kill();
    let got = waiting.await.expect("waiter");
    let took = started.elapsed();
    assert!(
        got.is_err(),
        "dying service: the wait must end with an error, got Ok({:?})",
        got.ok().map(|h| h.is_some())
    );
    assert!(
        took < wait + Duration::from_millis(1500),
        "dying service: returned after {took:?}, not by its {wait:?} deadline"
    );
    held.release().await.expect("release");
}

/// A deliberately broken adapter: it forwards to `T` but swallows every error of an attempt
/// or probe into "busy" — the bug the wait loop must not have. The contract catches it
/// ([`wait_on_an_unreachable_service_is_an_error`] fails).
#[derive(Debug, Clone)]
pub struct SwallowsErrors<T>(pub T);

impl<T: LockTarget> LockTarget for SwallowsErrors<T> {
    type Lease = T::Lease;

    fn identity(&self) -> String {
        self.0.identity()
    }

    async fn try_lock(&self, claim: &LockClaim) -> azstore::Result<Attempt<T::Lease>> {
        Ok(self.0.try_lock(claim).await.unwrap_or(Attempt::Busy))
    }

    async fn probe(&self) -> azstore::Result<Probe> {
        Ok(self.0.probe().await.unwrap_or(Probe::Busy))
    }

    async fn status(&self) -> azstore::Result<LockStatus> {
        self.0.status().await
    }

    async fn break_lease(&self, period: Option<BreakPeriod>) -> azstore::Result<LeaseBroken> {
        self.0.break_lease(period).await
    }

    async fn abandon(&self, proposed: &LeaseId) {
        self.0.abandon(proposed).await
    }
}

/// The fields of a status a bulk read must reproduce (`remaining` is a countdown that differs
/// between two reads).
fn same_fields(s: &LockStatus) -> impl PartialEq + std::fmt::Debug + '_ {
    (
        s.exists,
        s.locked,
        s.breaking,
        s.fencing_token,
        s.owner.as_ref().map(|o| (&o.host, o.pid, &o.label)),
        s.version.as_deref(),
    )
}

/// [`LockTarget::status_many`] answers, lock by lock and in order, what one
/// [`LockTarget::status`] per lock answers — absent, held, released, breaking, broken, and held
/// by a holder that stopped renewing, before and after its lease ran out — and counts as an
/// observation where contenders decide expiry: a handle whose only look at a silent holder was
/// the bulk read takes the lock over once the lease has passed. `make(name)` builds a new
/// handle onto the lock `name` (`/`-separated; all in one container, database or server).
pub async fn status_many_matches_status<T, F>(make: F)
where
    T: LockTarget,
    F: Fn(&str) -> Lock<T>,
{
    let names = [
        "many/absent",
        "many/held",
        "many/released",
        "many/breaking",
        "many/broken",
        "many/silent",
    ];
    let lock = |i: usize| make(names[i]);
    let held = acquire_free(&lock(1), "many: acquire", "many: free").await;
    acquire_free(&lock(2), "many: acquire", "many: free")
        .await
        .release()
        .await
        .expect("release");
    let breaking = acquire_free(&lock(3), "many: acquire", "many: free").await;
    lock(3)
        .break_lock(Some(BreakPeriod::seconds(50).expect("period")))
        .await
        .expect("break(50 s)");
    let broken = acquire_free(&lock(4), "many: acquire", "many: free").await;
    lock(4)
        .break_lock(Some(BreakPeriod::immediate()))
        .await
        .expect("break(0)");
    // A holder that stops renewing: one raw attempt, no guard.
    let silent = lock(5);
    let claim = LockClaim::new(
        LeaseId::random(),
        azstore::lease::LeaseDuration::seconds(15).expect("15 s"),
        azstore::lock::LockOwner::new("silent-host", Some(7), Some("silent".into()), None),
    );
    assert!(
        matches!(
            silent
                .target()
                .try_lock(&claim)
                .await
                .expect("many: raw attempt"),
            Attempt::Acquired { .. }
        ),
        "many: the raw attempt takes the free lock"
    );
    let silent_from = Instant::now();
    // Observers look only through the bulk read; readers only one lock at a time.
    let observers: Vec<Lock<T>> = (0..names.len()).map(lock).collect();
    let compare = |round: &'static str| {
        let observers = &observers;
        let lock = &lock;
        async move {
            let targets: Vec<&T> = observers.iter().map(Lock::target).collect();
            let many = T::status_many(&targets).await.expect("status_many");
            assert_eq!(
                many.statuses.len(),
                names.len(),
                "{round}: one status per lock"
            );
            assert!(many.requests >= 1, "{round}: requests counted");
            for (i, bulk) in many.statuses.iter().enumerate() {
                let one = lock(i).status().await.expect("status");
                assert_eq!(
                    same_fields(bulk),
                    same_fields(&one),
                    "{round}: {}: bulk {bulk:?} vs one {one:?}",
                    names[i]
                );
            }
            many.statuses
        }
    };
    let first = compare("while held").await;
    assert!(
        !first[0].exists && !first[0].locked,
        "absent: {:?}",
        first[0]
    );
    assert!(first[1].locked && first[1].fencing_token == Some(held.fencing_token()));
    assert!(
        first[2].exists && !first[2].locked,
        "released: {:?}",
        first[2]
    );
    assert!(
        first[3].locked && first[3].breaking,
        "breaking: {:?}",
        first[3]
    );
    assert!(!first[4].locked, "broken: {:?}", first[4]);
    assert!(first[5].locked, "silent, within its lease: {:?}", first[5]);
    assert_eq!(
        first[5].owner.as_ref().and_then(|o| o.label.as_deref()),
        Some("silent")
    );
    // Past the silent holder's lease (15 s from its attempt).
    tokio::time::sleep_until(silent_from + Duration::from_millis(16_000)).await;
    let targets: Vec<&T> = observers.iter().map(Lock::target).collect();
    T::status_many(&targets).await.expect("status_many");
    compare("after the silent holder's lease").await;
    let taken = observers[5]
        .try_acquire()
        .await
        .expect("many: acquire after the lease")
        .expect("many: the observer takes over the silent holder once its lease has passed");
    assert!(taken.fencing_token() > 0);
    taken.release().await.expect("release");
    held.release().await.expect("release");
    drop((breaking, broken));
}
