//! The writers of the models whose clients hold something and write a fenced resource under
//! it: a lock (`Lock<T>`), a permit of a `Semaphore<T>`, a read or write hold of an
//! `RwLock<T>`. One loop for all three (`hold_loop`); what differs is how a hold is taken
//! (`Acquire`) and which fenced resource it writes.

use std::time::Duration;

use azstore::ErrorKind;
use azstore::Result;
use azstore::blob::BlobJson;
use azstore::blob::ContainerClient;
use azstore::lease::Leasable;
use azstore::lock::{Held, Lock, LockTarget, Permit, RwLock, Semaphore, WriteGuard};
use azstore::update::{Decision, update};
use futures_util::future::LocalBoxFuture;
use serde_json::{Value, json};

use crate::history::Kind;
use crate::model::Variant;
use crate::rng::Rng;
use crate::writer::{Fenced, Ids, Rec, WriterArgs, failure_kind, record, think, update_policy};

/// Permits of the semaphore model's `Semaphore` (slots `0..PERMITS`, each slot's fenced
/// resource the blob `fenced-slot-<k>`).
pub const PERMITS: u32 = 2;

/// The most readers the reader-writer lock model's `RwLock` admits at once.
pub const MAX_READERS: u32 = 3;

/// How long a writer waits for a hold.
const WAIT: Duration = Duration::from_secs(20);

/// A hold as the loop sees it: its own check, and its release.
pub(crate) trait Guard {
    /// The hold's own answer to "do I still hold it?".
    fn is_held(&self) -> bool;
    /// Lets go.
    fn release(self: Box<Self>) -> LocalBoxFuture<'static, Result<()>>;
}

impl<L: Leasable> Guard for Held<L> {
    fn is_held(&self) -> bool {
        Held::is_held(self)
    }
    fn release(self: Box<Self>) -> LocalBoxFuture<'static, Result<()>> {
        Box::pin(async move { Held::release(*self).await.map(drop) })
    }
}

impl<L: Leasable> Guard for Permit<L> {
    fn is_held(&self) -> bool {
        Permit::is_held(self)
    }
    fn release(self: Box<Self>) -> LocalBoxFuture<'static, Result<()>> {
        Box::pin(async move { Permit::release(*self).await.map(drop) })
    }
}

impl<L: Leasable> Guard for WriteGuard<L> {
    fn is_held(&self) -> bool {
        WriteGuard::is_held(self)
    }
    fn release(self: Box<Self>) -> LocalBoxFuture<'static, Result<()>> {
        Box::pin(async move { WriteGuard::release(*self).await.map(drop) })
    }
}

/// A hold taken.
pub(crate) struct Hold {
    /// Its fencing token.
    token: u64,
    /// What the acquisition records as its result.
    ret: Value,
    /// The fenced resource it writes.
    fenced: BlobJson<Fenced>,
    /// The function its fenced writes are recorded as (`write`; a reader's: `observe`).
    f: &'static str,
    guard: Box<dyn Guard>,
}

/// How a model's writer takes a hold.
pub(crate) trait Acquire {
    /// The acquisition's argument (recorded with its invocation) and the attempt itself, a
    /// wait of at most 20 s.
    fn acquire(&self, rng: &mut Rng) -> (Value, LocalBoxFuture<'_, Result<Option<Hold>>>);
}

/// The lock model: the lock; its hold writes the blob `fenced`. Records the token.
pub(crate) fn lock<'a, T: LockTarget>(
    lock: &'a Lock<T>,
    fenced: &'a BlobJson<Fenced>,
) -> impl Acquire + 'a {
    struct A<'a, T: LockTarget>(&'a Lock<T>, &'a BlobJson<Fenced>);
    impl<T: LockTarget> Acquire for A<'_, T> {
        fn acquire(&self, _: &mut Rng) -> (Value, LocalBoxFuture<'_, Result<Option<Hold>>>) {
            let attempt = async move {
                Ok(self.0.acquire_within(WAIT).await?.map(|h| Hold {
                    token: h.fencing_token(),
                    ret: json!(h.fencing_token()),
                    fenced: self.1.clone(),
                    f: "write",
                    guard: Box::new(h),
                }))
            };
            (Value::Null, Box::pin(attempt))
        }
    }
    A(lock, fenced)
}

/// The semaphore model: a permit; it writes its slot's fenced resource, the blob
/// `fenced-slot-<k>`. Records `{"token", "slot"}`.
pub(crate) fn permit<'a, T: LockTarget>(
    sem: &'a Semaphore<T>,
    container: &'a ContainerClient,
) -> impl Acquire + 'a {
    struct A<'a, T: LockTarget>(&'a Semaphore<T>, &'a ContainerClient);
    impl<T: LockTarget> Acquire for A<'_, T> {
        fn acquire(&self, _: &mut Rng) -> (Value, LocalBoxFuture<'_, Result<Option<Hold>>>) {
            let attempt = async move {
                Ok(self.0.acquire_within(WAIT).await?.map(|p| {
                    let (token, slot) = (p.fencing_token(), p.slot());
                    let blob = self.1.blob(&format!("fenced-slot-{slot}"));
                    Hold {
                        token,
                        ret: json!({"token": token, "slot": slot}),
                        fenced: BlobJson::new(blob.expect("blob name")),
                        f: "write",
                        guard: Box::new(p),
                    }
                }))
            };
            (Value::Null, Box::pin(attempt))
        }
    }
    A(sem, container)
}

/// The reader-writer lock model: a read hold (70 %) or a write hold (30 %), recorded with
/// the invocation as `"read"` / `"write"`; both use the blob `fenced`, readers as `observe`
/// (a fenced read: refused below the largest token seen, and it raises that), writers as
/// `write`. Records `{"token", "mode"}`.
pub(crate) fn read_or_write<'a, T: LockTarget>(
    rw: &'a RwLock<T>,
    fenced: &'a BlobJson<Fenced>,
) -> impl Acquire + 'a {
    struct A<'a, T: LockTarget>(&'a RwLock<T>, &'a BlobJson<Fenced>);
    impl<T: LockTarget> Acquire for A<'_, T> {
        fn acquire(&self, rng: &mut Rng) -> (Value, LocalBoxFuture<'_, Result<Option<Hold>>>) {
            let read = rng.below(100) < 70;
            let mode = if read { "read" } else { "write" };
            let hold = move |token: u64, guard: Box<dyn Guard>| Hold {
                token,
                ret: json!({"token": token, "mode": mode}),
                fenced: self.1.clone(),
                f: if read { "observe" } else { "write" },
                guard,
            };
            let attempt = async move {
                Ok(if read {
                    let p = self.0.read_within(WAIT).await?;
                    p.map(|p| hold(p.fencing_token(), Box::new(p)))
                } else {
                    let w = self.0.write_within(WAIT).await?;
                    w.map(|w| hold(w.fencing_token(), Box::new(w)))
                })
            };
            (json!(mode), Box::pin(attempt))
        }
    }
    A(rw, fenced)
}

/// The model: acquire, then 1–3 fenced writes each preceded by the holder's own check that it
/// still holds (recorded as `held`), then one last check and the release. A fenced write is
/// refused (aborted) when the resource holds a larger token, and otherwise appends
/// `[token, process, op]`. The broken variant ignores loss: it claims to hold without asking.
pub(crate) async fn hold_loop<A: Acquire>(
    acq: A,
    args: &WriterArgs,
    rng: &mut Rng,
    ids: &mut Ids,
    rec: &Rec,
) {
    let policy = update_policy();
    let mut done = 0;
    while done < args.ops {
        think(rng).await;
        let op = ids.next_op();
        let p = ids.p();
        let (arg, attempt) = acq.acquire(rng);
        record(rec, p, op, Kind::Invoke, "acquire", arg, None);
        done += 1;
        let hold = match attempt.await {
            Ok(Some(h)) => {
                record(rec, p, op, Kind::Ok, "acquire", h.ret.clone(), None);
                h
            }
            Ok(None) => {
                let err = Some("timed out".into());
                record(rec, p, op, Kind::Fail, "acquire", Value::Null, err);
                continue;
            }
            Err(e) => {
                let kind = failure_kind(&e);
                let err = Some(e.to_string());
                record(rec, p, op, kind, "acquire", Value::Null, err);
                if kind == Kind::Info {
                    ids.after_info();
                }
                continue;
            }
        };
        let token = hold.token;
        let writes = 1 + rng.below(3);
        for _ in 0..writes {
            if done >= args.ops {
                break;
            }
            think(rng).await;
            let p = ids.p();
            if !claim(&*hold.guard, token, args.variant, ids, rec) {
                break;
            }
            let op = ids.next_op();
            record(rec, p, op, Kind::Invoke, hold.f, json!(token), None);
            done += 1;
            let result = update(&hold.fenced, &policy, |cur| {
                let mut f = cur.cloned().unwrap_or_default();
                if token < f.max {
                    return Decision::abort(format!("fenced: token {token} < {}", f.max));
                }
                f.max = token;
                f.log.push([token, p, op]);
                Decision::Write(f)
            })
            .await;
            match result {
                Ok(_) => record(rec, p, op, Kind::Ok, hold.f, json!(token), None),
                Err(e) => {
                    let kind = if e.kind() == ErrorKind::Aborted {
                        Kind::Fail
                    } else {
                        failure_kind(&e)
                    };
                    record(rec, p, op, kind, hold.f, json!(token), Some(e.to_string()));
                    if kind == Kind::Info {
                        ids.after_info();
                    }
                    if e.kind() == ErrorKind::Aborted {
                        break;
                    }
                }
            }
        }
        // The holder's last check before letting go: a holder paused past its lease must
        // see the loss here.
        think(rng).await;
        claim(&*hold.guard, token, args.variant, ids, rec);
        let op = ids.next_op();
        let p = ids.p();
        record(rec, p, op, Kind::Invoke, "release", json!(token), None);
        match hold.guard.release().await {
            Ok(()) => record(rec, p, op, Kind::Ok, "release", json!(token), None),
            Err(e) => {
                let kind = failure_kind(&e);
                let err = Some(e.to_string());
                record(rec, p, op, kind, "release", json!(token), err);
                if kind == Kind::Info {
                    ids.after_info();
                }
            }
        }
    }
}

/// The holder asks itself whether it still holds (recorded as `held`, ok or fail); the broken
/// variant claims it without asking.
fn claim(guard: &dyn Guard, token: u64, variant: Variant, ids: &mut Ids, rec: &Rec) -> bool {
    let op = ids.next_op();
    let p = ids.p();
    record(rec, p, op, Kind::Invoke, "held", json!(token), None);
    let still = variant == Variant::Broken || guard.is_held();
    let kind = if still { Kind::Ok } else { Kind::Fail };
    record(rec, p, op, kind, "held", json!(token), None);
    still
}
