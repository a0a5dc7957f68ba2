//! The semaphore and reader-writer lock contract: what `azstore::lock::Semaphore<T>` and
//! `azstore::lock::RwLock<T>` guarantee on every backend. Each function takes a factory that
//! builds a new handle onto ONE semaphore (or RwLock), as separate processes would, over
//! locks with a fixed 15 s lease (the shortest a blob lease can be) renewed every 5 s.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::LeaseId;
use azstore::lease::{
    BreakPeriod, Leasable, LeaseBroken, LeaseCapabilities, LeaseDuration, LeaseLoss, LeaseReleased,
    LeaseResult, ReleaseOutcome,
};
use azstore::lock::{Attempt, LockClaim, LockStatus, LockTarget, Permit, Probe, RwLock, Semaphore};
use tokio::time::Instant;

use super::lock::CLOCK_TOKEN_FLOOR;

/// The permits of the semaphores the guarantees use.
pub const N: u32 = 3;

/// The options every guarantee uses: 15 s leases (the shortest a blob lease can be), renewed
/// every 5 s.
pub fn opts() -> azstore::lock::LockOptions {
    super::lock::opts()
}

/// A fresh semaphore name.
pub fn name() -> String {
    format!("azstore-test:{}", crate::unique("sem"))
}

/// (enter, exit, fencing token, slot or -1 for a writer, task).
type Section = (Instant, Instant, u64, i64, usize);

/// The largest number of `sections` that overlap at one moment.
fn max_overlap(sections: &[Section]) -> usize {
    let mut events: Vec<(Instant, i32)> = sections
        .iter()
        .flat_map(|s| [(s.0, 1), (s.1, -1)])
        .collect();
    // Exits before entries at the same instant: touching sections do not overlap.
    events.sort_by_key(|e| (e.0, e.1));
    let (mut now, mut most) = (0i32, 0i32);
    for (_, d) in events {
        now += d;
        most = most.max(now);
    }
    most as usize
}

/// Tokens follow grant order: a section that ended before another began has a smaller token.
fn tokens_follow_grant_order(what: &str, sections: &[Section]) {
    for a in sections {
        for b in sections {
            if a.1 <= b.0 {
                assert!(
                    a.2 < b.2,
                    "{what}: a permit granted after another ended must have a larger token: {a:?} then {b:?}"
                );
            }
        }
    }
}

/// 8 tasks x 3 rounds of `acquire_within` on a semaphore of `n` permits, each holding 150 ms:
/// never more than `n` hold at once, never two on one slot, everyone gets a permit every
/// round, more than one holds at once (it is not a mutex), and tokens follow grant order.
pub async fn at_most_n_holders<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let sem = make();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..3 {
                let permit = sem
                    .acquire_within(Duration::from_secs(120))
                    .await
                    .expect("at most N: the wait failed")
                    .expect("at most N: every contender eventually gets a permit");
                let enter = Instant::now();
                tokio::time::sleep(Duration::from_millis(150)).await;
                permit.check().expect("at most N: held during the section");
                let exit = Instant::now();
                log.lock().unwrap().push((
                    enter,
                    exit,
                    permit.fencing_token(),
                    i64::from(permit.slot()),
                    i,
                ));
                assert_eq!(
                    permit.release().await.expect("at most N: release"),
                    ReleaseOutcome::Released
                );
            }
        }));
    }
    for t in tasks {
        t.await.expect("at most N: a contender panicked");
    }
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 24);
    let most = max_overlap(&log);
    assert!(most <= n, "at most N: {most} permits held at once, N = {n}");
    assert!(
        most > 1,
        "at most N: never more than one holder: a semaphore of {n} admits several"
    );
    for slot in 0..n as i64 {
        let on: Vec<Section> = log.iter().filter(|s| s.3 == slot).copied().collect();
        assert!(
            max_overlap(&on) <= 1,
            "at most N: slot {slot} shared: {on:?}"
        );
    }
    for i in 0..8 {
        assert_eq!(log.iter().filter(|e| e.4 == i).count(), 3, "task {i}");
    }
    tokens_follow_grant_order("at most N", &log);
    let mut tokens: Vec<u64> = log.iter().map(|s| s.2).collect();
    tokens.sort_unstable();
    tokens.dedup();
    assert_eq!(
        tokens.len(),
        24,
        "at most N: every permit has its own token"
    );
    let status = make().status().await.expect("status");
    assert!(
        status.holders.is_empty(),
        "at most N: none held at the end: {status:?}"
    );
    assert_eq!(status.fencing_token, tokens.last().copied());
}

/// Permits held at the same time, on different slots, from different handles: each token is
/// larger than every token before it (the first one a clock value); `try_acquire` on a full
/// semaphore is `None`; a permit taken after releases is larger still.
pub async fn fencing_tokens_increase_across_slots<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    let mut held: Vec<Permit<T::Lease>> = Vec::new();
    let mut tokens = Vec::new();
    for _ in 0..n {
        let p = make()
            .try_acquire()
            .await
            .expect("fencing: acquire")
            .expect("fencing: a slot is free");
        tokens.push(p.fencing_token());
        held.push(p);
    }
    let mut slots: Vec<u32> = held.iter().map(Permit::slot).collect();
    slots.sort_unstable();
    assert_eq!(
        slots,
        (0..n as u32).collect::<Vec<_>>(),
        "fencing: n permits take the n slots"
    );
    assert!(
        make().try_acquire().await.expect("try_acquire").is_none(),
        "fencing: a full semaphore admits nobody"
    );
    held.remove(0).release().await.expect("release");
    let p = make()
        .try_acquire()
        .await
        .expect("acquire")
        .expect("a slot was freed");
    tokens.push(p.fencing_token());
    held.push(p);
    assert!(
        tokens[0] >= CLOCK_TOKEN_FLOOR,
        "fencing: the first token is a clock value: {tokens:?}"
    );
    assert!(
        tokens.windows(2).all(|w| w[1] > w[0]),
        "fencing: tokens must strictly increase across the permits of the semaphore: {tokens:?}"
    );
    for p in held {
        p.release().await.expect("release");
    }
}

/// The semaphore is full; `break_permit(slot, None)` on one holder: the holder's permit
/// reports the loss (at its next renew, 5 s) before the waiting contender gets that slot, and
/// the contender's token is larger. A permit that ignores the loss fails here.
pub async fn loss_before_expiry<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    let admin = make();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(
            admin
                .try_acquire()
                .await
                .expect("loss: acquire")
                .expect("loss: free"),
        );
    }
    let victim = held.remove(0);
    let broke = Instant::now();
    let b = admin
        .break_permit(victim.slot(), None)
        .await
        .expect("break_permit(None)");
    assert!(
        b.remaining >= Duration::from_secs(9),
        "loss: break(None) lets the rest of the 15 s lease run: {b:?}"
    );
    let contender = make();
    let acquired = tokio::spawn(async move {
        let p = contender
            .acquire_within(Duration::from_secs(40))
            .await
            .expect("loss: the contender's wait")
            .expect("loss: the broken slot frees once the break ends");
        (Instant::now(), p)
    });
    let loss = tokio::time::timeout(Duration::from_secs(8), victim.lost())
        .await
        .expect("loss before expiry: the holder must notice the broken permit at its next renew");
    let noticed = Instant::now();
    assert!(matches!(loss, LeaseLoss::Refused { .. }), "loss: {loss:?}");
    assert!(victim.check().is_err_and(|e| e.lease_lost()));
    let (acquired_at, next) = acquired.await.expect("contender");
    assert!(
        noticed < acquired_at,
        "loss before expiry: the holder noticed {:?} after the break, the contender acquired {:?} after it",
        noticed - broke,
        acquired_at - broke
    );
    assert_eq!(
        next.slot(),
        victim.slot(),
        "the broken slot was the free one"
    );
    assert!(next.fencing_token() > victim.fencing_token());
    next.release().await.expect("release");
    for p in held {
        p.release().await.expect("release");
    }
}

/// Dropping a permit releases it: with the semaphore full, a waiter polling like another
/// process would gets the dropped permit's slot; the status names the holders with their
/// label while held and none once all were dropped.
pub async fn release_on_drop<T, F, P>(make: F, polling: P, n: usize, label: &str)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
    P: Fn() -> Semaphore<T>,
{
    let sem = make();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(sem.try_acquire().await.expect("acquire").expect("free"));
    }
    let status = sem.status().await.expect("status");
    assert_eq!(status.holders.len(), n, "drop: n holders: {status:?}");
    assert!(
        status
            .holders
            .iter()
            .all(|h| h.owner.as_ref().is_some_and(
                |o| o.label.as_deref() == Some(label) && o.pid == Some(std::process::id())
            )),
        "drop: the holders are named with their label: {status:?}"
    );
    let dropped = held.pop().unwrap();
    let slot = dropped.slot();
    drop(dropped);
    let next = polling()
        .acquire_within(Duration::from_secs(20))
        .await
        .expect("drop: the wait")
        .expect("drop: a dropped permit is released");
    assert_eq!(next.slot(), slot);
    held.push(next);
    drop(held);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let s = sem.status().await.expect("status");
        if s.holders.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "drop: dropped permits are released: {s:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until `count()` answers `want` (the waiters holding a place in the line), bounded at
/// 10 s.
async fn until_waiting<C, Fut>(what: &str, want: u32, count: C)
where
    C: Fn() -> Fut,
    Fut: std::future::Future<Output = u32>,
{
    let until = Instant::now() + Duration::from_secs(10);
    loop {
        let now = count().await;
        if now == want {
            return;
        }
        assert!(
            Instant::now() < until,
            "{what}: {now} waiters in line after 10 s, not {want}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Fair waiting: on a full semaphore of `n` permits, four waiters arrive one after another
/// (each once the one before holds its place in the line); then the holders release one at a
/// time, each asking again at once. The four get permits in the order they arrived (each passed
/// over by at most `n - 1` later arrivals, when `n` permits free at once), all before any
/// holder that asked again (a holder asking again joins the line at its end).
pub async fn fair_waiting_in_arrival_order<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    let sem = make();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(sem.try_acquire().await.expect("acquire").expect("free"));
    }
    let grants: Arc<Mutex<Vec<String>>> = Arc::default();
    let mut tasks = Vec::new();
    let waiting = || async { sem.status().await.expect("fair: status").waiting };
    for w in 0..4u32 {
        let (s, grants) = (make(), grants.clone());
        tasks.push(tokio::spawn(async move {
            let p = s
                .acquire_within(Duration::from_secs(60))
                .await
                .expect("fair: wait")
                .expect("fair: every waiter gets a permit");
            grants.lock().unwrap().push(format!("waiter {w}"));
            tokio::time::sleep(Duration::from_millis(500)).await;
            p.release().await.expect("fair: release");
        }));
        until_waiting("fair", w + 1, waiting).await;
    }
    // Each holder releases and asks again at once: it must queue behind the four. The next
    // holder releases once the first in line took the freed permit (two permits freed at
    // once would let the first two in line race for them, both in their turn).
    for (h, p) in held.into_iter().enumerate() {
        let (s, grants) = (make(), grants.clone());
        p.release().await.expect("fair: release");
        let until = Instant::now() + Duration::from_secs(10);
        while grants.lock().unwrap().len() <= h {
            assert!(
                Instant::now() < until,
                "fair: the first in line took no freed permit within 10 s"
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tasks.push(tokio::spawn(async move {
            let p = s
                .acquire_within(Duration::from_secs(60))
                .await
                .expect("fair: wait again")
                .expect("fair: a holder asking again gets a permit");
            grants.lock().unwrap().push(format!("again {h}"));
            p.release().await.expect("fair: release");
        }));
    }
    for t in tasks {
        t.await.expect("fair: a contender panicked");
    }
    let grants = grants.lock().unwrap().clone();
    // The first k in line share k permits freed at once (here by a waiter's release and the
    // hand-over before it, close together), so a waiter may be passed over by at most n - 1
    // later arrivals — never by a holder asking again.
    for (i, g) in grants.iter().enumerate() {
        if let Some(w) = g.strip_prefix("waiter ") {
            let w: usize = w.parse().unwrap();
            assert!(
                i < 4 && i < w + n && w < i + n,
                "fair: waiter {w} granted {i}th: waiters are granted in arrival order, each \
                 passed over by at most {} later arrivals and none asking again: {grants:?}",
                n - 1
            );
        }
    }
}

/// Fair waiting among writers: while a reader holds the lock, three writers arrive one after
/// another (each once the one before holds its place in the writers' line, or the writer
/// lock); they write in the order they arrived.
pub async fn rwlock_writers_in_arrival_order<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> RwLock<T>,
{
    let rw = make();
    let read = rw
        .read_within(Duration::from_secs(10))
        .await
        .expect("writers: read")
        .expect("writers: free");
    let grants: Arc<Mutex<Vec<u32>>> = Arc::default();
    let mut tasks = Vec::new();
    for w in 0..3u32 {
        let (l, grants) = (make(), grants.clone());
        tasks.push(tokio::spawn(async move {
            let g = l
                .write_within(Duration::from_secs(60))
                .await
                .expect("writers: wait")
                .expect("writers: every writer gets in");
            grants.lock().unwrap().push(w);
            tokio::time::sleep(Duration::from_millis(100)).await;
            g.release().await.expect("writers: release");
        }));
        // The first writer takes the writer lock and waits for the reader; each later one
        // waits in the writers' line.
        let until = Instant::now() + Duration::from_secs(10);
        loop {
            let s = rw.status().await.expect("writers: status");
            let in_line = s.writers_waiting;
            if s.writer.locked && in_line == w {
                break;
            }
            assert!(
                Instant::now() < until,
                "writers: writer {w} not in line after 10 s ({in_line} waiting)"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    read.release().await.expect("writers: release the read");
    for t in tasks {
        t.await.expect("writers: a writer panicked");
    }
    assert_eq!(
        *grants.lock().unwrap(),
        vec![0, 1, 2],
        "writers: in arrival order"
    );
}

/// Every permit held for the whole wait: `acquire_within` answers `Ok(None)` by its deadline.
pub async fn wait_on_a_full_semaphore_is_none<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    let sem = make();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(sem.try_acquire().await.expect("acquire").expect("free"));
    }
    let started = Instant::now();
    let got = make()
        .acquire_within(Duration::from_millis(1500))
        .await
        .expect("full: the wait is not an error");
    let took = started.elapsed();
    assert!(got.is_none(), "full: None");
    assert!(
        (Duration::from_millis(1500)..Duration::from_millis(4000)).contains(&took),
        "full: returned after {took:?}, not by its 1.5 s deadline"
    );
    for p in held {
        p.release().await.expect("release");
    }
}

/// The service refuses connections: `acquire_within` ends by its deadline with an error
/// (never `Ok(None)`), and so do `try_acquire`, `read_within` and `write_within`.
pub async fn wait_on_an_unreachable_service_is_an_error<T, F, R>(unreachable: F, rw: R)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
    R: Fn() -> RwLock<T>,
{
    let wait = Duration::from_secs(2);
    for what in ["acquire_within", "read_within", "write_within"] {
        let started = Instant::now();
        let got = match what {
            "acquire_within" => unreachable()
                .acquire_within(wait)
                .await
                .map(|p| p.is_some()),
            "read_within" => rw().read_within(wait).await.map(|p| p.is_some()),
            _ => rw().write_within(wait).await.map(|p| p.is_some()),
        };
        let took = started.elapsed();
        assert!(
            got.is_err(),
            "unreachable service: {what} must end with an error, got {got:?}"
        );
        assert!(
            took < wait + Duration::from_millis(1500),
            "unreachable service: {what} returned after {took:?}, not by its {wait:?} deadline"
        );
    }
    assert!(
        unreachable().try_acquire().await.is_err(),
        "unreachable service: one attempt is an error too"
    );
}

/// Lowering N closes the slots above it once their holders leave (nobody new gets them);
/// raising it opens them again.
pub async fn set_permits_drains_and_reopens<T, F>(make: F, n: usize)
where
    T: LockTarget,
    F: Fn() -> Semaphore<T>,
{
    assert!(n >= 2);
    let admin = make();
    let mut held = Vec::new();
    for _ in 0..n {
        held.push(admin.try_acquire().await.expect("acquire").expect("free"));
    }
    assert!(
        !admin
            .set_permits(1, Duration::from_millis(500))
            .await
            .expect("set_permits while full"),
        "set_permits: holders above the new N keep their slots until they leave"
    );
    for p in held {
        p.release().await.expect("release");
    }
    assert!(
        admin
            .set_permits(1, Duration::from_secs(10))
            .await
            .expect("set_permits"),
        "set_permits: the slots drained"
    );
    let status = admin.status().await.expect("status");
    assert_eq!(status.permits, 1, "{status:?}");
    assert_eq!(status.closed, (1..n as u32).collect::<Vec<_>>());
    let only = make()
        .try_acquire()
        .await
        .expect("acquire")
        .expect("one permit left");
    assert_eq!(only.slot(), 0);
    assert!(
        make().try_acquire().await.expect("acquire").is_none(),
        "set_permits: never more than the new N"
    );
    only.release().await.expect("release");
    assert!(
        admin
            .set_permits(n as u32, Duration::ZERO)
            .await
            .expect("reopen")
    );
    let mut again = Vec::new();
    for _ in 0..n {
        again.push(
            make()
                .try_acquire()
                .await
                .expect("acquire")
                .expect("set_permits: reopened"),
        );
    }
    for p in again {
        p.release().await.expect("release");
    }
}

/// 6 readers x 3 rounds and 2 writers x 2 rounds, each holding 100 ms: a writer never
/// overlaps anyone, readers do overlap, everyone gets in, and tokens follow grant order (a
/// writer's is larger than every read or write hold that ended before it began).
pub async fn rwlock_exclusion<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> RwLock<T>,
{
    let log: Arc<Mutex<Vec<Section>>> = Arc::default();
    let mut tasks = Vec::new();
    for i in 0..8 {
        let rw = make();
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            let writer = i >= 6;
            for _ in 0..if writer { 2 } else { 3 } {
                let wait = Duration::from_secs(120);
                let (token, slot, guard): (u64, i64, Box<dyn std::any::Any + Send>) = if writer {
                    let w = rw
                        .write_within(wait)
                        .await
                        .expect("rwlock: write wait")
                        .expect("rwlock: every writer gets in");
                    (w.fencing_token(), -1, Box::new(w))
                } else {
                    let r = rw
                        .read_within(wait)
                        .await
                        .expect("rwlock: read wait")
                        .expect("rwlock: every reader gets in");
                    (r.fencing_token(), i64::from(r.slot()), Box::new(r))
                };
                let enter = Instant::now();
                tokio::time::sleep(Duration::from_millis(100)).await;
                let exit = Instant::now();
                log.lock().unwrap().push((enter, exit, token, slot, i));
                drop(guard);
                // Dropped guards release in the background: give the release a moment so
                // the next round's entry is not logged before it.
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }));
    }
    for t in tasks {
        t.await.expect("rwlock: a contender panicked");
    }
    let log = log.lock().unwrap().clone();
    assert_eq!(log.len(), 6 * 3 + 2 * 2);
    let writes: Vec<&Section> = log.iter().filter(|s| s.3 < 0).collect();
    for w in &writes {
        for o in &log {
            if std::ptr::eq(*w, o) {
                continue;
            }
            assert!(
                o.1 <= w.0 || w.1 <= o.0,
                "rwlock: a writer overlaps another hold: {w:?} and {o:?}"
            );
        }
    }
    let reads: Vec<Section> = log.iter().filter(|s| s.3 >= 0).copied().collect();
    assert!(
        max_overlap(&reads) > 1,
        "rwlock: readers never overlapped: readers share the lock"
    );
    tokens_follow_grant_order("rwlock", &log);
}

/// A reader holds; a writer waits (it holds the writer lock); a new reader is then NOT
/// admitted (writer preference); the writer gets in when the first reader leaves, with a
/// larger token; after the writer, readers are admitted again.
pub async fn rwlock_writer_preference<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> RwLock<T>,
{
    let rw = make();
    let first = rw
        .read_within(Duration::from_secs(10))
        .await
        .expect("read")
        .expect("free");
    let writer = make();
    let writing = tokio::spawn(async move { writer.write_within(Duration::from_secs(60)).await });
    // The writer takes the writer lock, then every free slot. A slot it is taking can show
    // leased before its owner is written (the blob lock writes the owner under the new
    // lease), and such a slot cannot be told from a reader's; once the writer holds its
    // slots, exactly the one reader remains.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let status = rw.status().await.expect("status");
        if status.writer.locked && status.readers.len() == 1 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the writer takes the writer lock and every free slot, the one reader stays: {status:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let late = make()
        .read_within(Duration::from_millis(1500))
        .await
        .expect("late reader's wait");
    assert!(
        late.is_none(),
        "writer preference: a waiting writer stops new readers"
    );
    let first_token = first.fencing_token();
    first.release().await.expect("release");
    let w = writing
        .await
        .expect("writer")
        .expect("write wait")
        .expect("the writer gets in once the reader left");
    assert!(w.fencing_token() > first_token);
    assert!(
        make()
            .read_within(Duration::from_millis(500))
            .await
            .expect("read wait")
            .is_none(),
        "no reader while the writer writes"
    );
    let w_token = w.fencing_token();
    w.release().await.expect("release");
    let after = make()
        .read_within(Duration::from_secs(10))
        .await
        .expect("read")
        .expect("readers are admitted after the writer");
    assert!(after.fencing_token() > w_token);
    after.release().await.expect("release");
}

/// The writer lock broken at once: the write hold reports the loss at its next renew.
pub async fn rwlock_write_loss<T, F>(make: F)
where
    T: LockTarget,
    F: Fn() -> RwLock<T>,
{
    let rw = make();
    let w = rw
        .write_within(Duration::from_secs(10))
        .await
        .expect("write")
        .expect("free");
    assert!(w.is_held());
    rw.writer_lock()
        .break_lock(Some(BreakPeriod::immediate()))
        .await
        .expect("break");
    let loss = tokio::time::timeout(Duration::from_secs(8), w.lost())
        .await
        .expect("write loss: noticed at the next renew");
    assert!(matches!(loss, LeaseLoss::Refused { .. }), "{loss:?}");
    assert!(w.check().is_err_and(|e| e.lease_lost()));
}

/// A deliberately broken adapter: its leases' renewals always "succeed", so a holder never
/// learns that its lease was broken — a permit that ignores loss.
/// [`loss_before_expiry`] catches it.
#[derive(Debug, Clone)]
pub struct IgnoresLoss<T>(pub T);

/// The lease of [`IgnoresLoss`]: a refused renewal is reported as a success.
#[derive(Debug, Clone)]
pub struct IgnoringLease<L>(pub L);

impl<L: Leasable> Leasable for IgnoringLease<L> {
    fn lease_target(&self) -> String {
        self.0.lease_target()
    }
    fn lease_capabilities(&self) -> LeaseCapabilities {
        self.0.lease_capabilities()
    }
    async fn lease_acquire(&self, d: LeaseDuration, id: &LeaseId) -> azstore::Result<LeaseResult> {
        self.0.lease_acquire(d, id).await
    }
    async fn lease_renew(&self, id: &LeaseId) -> azstore::Result<LeaseResult> {
        Ok(self
            .0
            .lease_renew(id)
            .await
            .unwrap_or_else(|_| LeaseResult::new(id.clone(), None)))
    }
    async fn lease_change(&self, id: &LeaseId, to: &LeaseId) -> azstore::Result<LeaseResult> {
        self.0.lease_change(id, to).await
    }
    async fn lease_release(&self, id: &LeaseId) -> azstore::Result<LeaseReleased> {
        self.0.lease_release(id).await
    }
    async fn lease_break(&self, p: Option<BreakPeriod>) -> azstore::Result<LeaseBroken> {
        self.0.lease_break(p).await
    }
}

impl<T: LockTarget> LockTarget for IgnoresLoss<T> {
    type Lease = IgnoringLease<T::Lease>;

    fn identity(&self) -> String {
        self.0.identity()
    }

    async fn try_lock(&self, claim: &LockClaim) -> azstore::Result<Attempt<Self::Lease>> {
        Ok(match self.0.try_lock(claim).await? {
            Attempt::Acquired {
                lease,
                fencing_token,
                sent_at,
            } => Attempt::Acquired {
                lease: IgnoringLease(lease),
                fencing_token,
                sent_at,
            },
            Attempt::Busy => Attempt::Busy,
        })
    }

    async fn probe(&self) -> azstore::Result<Probe> {
        self.0.probe().await
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
