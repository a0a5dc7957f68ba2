//! One line per backend and suite: each macro expands to one named `#[tokio::test]` per
//! guarantee of its suite, `contract_<suite>_<guarantee>_<backend>` (the semaphore suite:
//! `<backend>::contract_semaphore_<guarantee>`). The arguments say how the backend makes
//! what the guarantees need, each evaluated inside the test (an `.await` is allowed):
//!
//! * `place`: a fresh place for this test (a container, a key prefix, a store, ...);
//! * `lock`: `fn(&place, name, LockOptions) -> Lock<T>`; `locks`: `fn(&place, LockOptions)`
//!   to a [`LockFactory`](azstore::leader::LockFactory);
//! * the rest as each macro documents.

/// The [`versioned`](crate::contract::versioned) suite on one backend:
///
/// ```ignore
/// testkit::contract_versioned!(redis, place = key(), item = json, counter = Counter::PLAIN,
///     snapshots = true, faults = faults().await);
/// ```
///
/// `item(&place)` is a new client of the item under test; `faults` evaluates (once per
/// ambiguity guarantee) to `(item through the fault injector, the same item directly, an
/// impl LoseReply)` on a fresh item; `snapshots` whether the adapter offers them.
#[macro_export]
macro_rules! contract_versioned {
    ($backend:ident, place = $place:expr, item = $item:expr, counter = $counter:expr,
     snapshots = $snapshots:expr, faults = $faults:expr $(,)?) => {
        $crate::__paste::paste! {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn [<contract_versioned_one_process_wastes_no_write_and_hands_over_ $backend>]() {
                let place = $place;
                $crate::contract::versioned::turns_hand_over_what_was_written(
                    || $item(&place), $counter, $snapshots,
                ).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn [<contract_versioned_separate_writers_lose_no_update_ $backend>]() {
                let place = $place;
                $crate::contract::versioned::separate_writers_lose_no_update(
                    || $item(&place), $counter,
                ).await.unwrap();
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn [<contract_versioned_create_race_one_wins_ $backend>]() {
                let place = $place;
                $crate::contract::versioned::create_race_one_wins(|| $item(&place), $counter)
                    .await.unwrap();
            }

            #[tokio::test]
            async fn [<contract_versioned_the_pace_passes_between_writers_ $backend>]() {
                let place = $place;
                $crate::contract::versioned::the_pace_passes_between_writers(
                    || $item(&place), $counter,
                ).await.unwrap();
            }

            #[tokio::test]
            async fn [<contract_versioned_ambiguous_replace_is_applied_once_ $backend>]() {
                let (item, direct, faults) = $faults;
                $crate::contract::versioned::ambiguous_replace_is_applied_once(
                    &item, &direct, &faults, $counter,
                ).await.unwrap();
            }

            #[tokio::test]
            async fn [<contract_versioned_ambiguous_create_is_applied_once_ $backend>]() {
                let (item, direct, faults) = $faults;
                $crate::contract::versioned::ambiguous_create_is_applied_once(
                    &item, &direct, &faults, $counter,
                ).await.unwrap();
            }
        }
    };
}

/// The [`leasable`](crate::contract::leasable) suite on one backend: `pair` evaluates to two
/// clients of one fresh resource (the guard's and another party's), optionally followed by
/// anything that must live as long as the test (a local server). `infinite_only` (a file)
/// runs only the guarantees that do not need renewable fixed-duration leases.
///
/// ```ignore
/// testkit::contract_lease!(blob, blobs().await);
/// testkit::contract_lease!(file, files().await, infinite_only);
/// ```
#[macro_export]
macro_rules! contract_lease {
    ($backend:ident, $pair:expr) => {
        $crate::contract_lease!(@test $backend, $pair, held_lease_excludes_others);
        $crate::contract_lease!(@test $backend, $pair, guard_renews_past_several_periods);
        $crate::contract_lease!(@test $backend, $pair, guard_reports_loss_before_expiry);
        $crate::contract_lease!(@test $backend, $pair, guard_releases_on_drop);
    };
    ($backend:ident, $pair:expr, infinite_only) => {
        $crate::contract_lease!(@test $backend, $pair, held_lease_excludes_others);
        $crate::contract_lease!(@test $backend, $pair, guard_releases_on_drop);
    };
    (@test $backend:ident, $pair:expr, $guarantee:ident) => {
        $crate::__paste::paste! {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lease_ $guarantee _ $backend>]() {
                let fixture = $pair;
                $crate::contract::leasable::$guarantee(fixture.0, fixture.1).await.unwrap();
            }
        }
    };
}

/// The [`lock`](crate::contract::lock) suite on one backend:
///
/// ```ignore
/// testkit::contract_lock!(redis, place = prefix(), lock = lock, delete = delete,
///     unreachable = unreachable, dying = dying);
/// ```
///
/// `delete(&place, name)` (async) deletes the lock record as a time to live would;
/// `unreachable(LockOptions)` is a lock whose service refuses connections;
/// `dying(&place, name, LockOptions)` (async) is `(a factory of locks on name that go
/// through a path, a closure that kills the path)`.
#[macro_export]
macro_rules! contract_lock {
    ($backend:ident, place = $place:expr, lock = $lock:expr, delete = $delete:expr,
     unreachable = $unreachable:expr, dying = $dying:expr $(,)?) => {
        $crate::__paste::paste! {
            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn [<contract_lock_mutual_exclusion_ $backend>]() {
                let place = $place;
                $crate::contract::lock::mutual_exclusion($crate::contract::lock::alternating(
                    |o| $lock(&place, "lock", o),
                )).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_fencing_tokens_increase_ $backend>]() {
                let place = $place;
                $crate::contract::lock::fencing_tokens_increase(
                    || $lock(&place, "lock", $crate::contract::lock::opts()),
                    || $delete(&place, "lock"),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_break_none_lets_the_holder_notice_first_ $backend>]() {
                let place = $place;
                $crate::contract::lock::break_none_lets_the_holder_notice_first(
                    || $lock(&place, "lock", $crate::contract::lock::opts()),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_break_zero_frees_at_once_ $backend>]() {
                let place = $place;
                $crate::contract::lock::break_zero_frees_at_once(
                    || $lock(&place, "lock", $crate::contract::lock::opts()),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_status_many_matches_status_ $backend>]() {
                let place = $place;
                $crate::contract::lock::status_many_matches_status(
                    |name| $lock(&place, name, $crate::contract::lock::opts()),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_status_after_release_ $backend>]() {
                let place = $place;
                $crate::contract::lock::status_after_release(
                    || $lock(&place, "lock", $crate::contract::lock::opts()),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_wait_on_a_held_lock_is_none_ $backend>]() {
                let place = $place;
                $crate::contract::lock::wait_on_a_held_lock_is_none_by_the_deadline(
                    || $lock(&place, "lock", $crate::contract::lock::opts().local_wakeup(false)),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_wait_on_an_unreachable_service_is_an_error_ $backend>]() {
                $crate::contract::lock::wait_on_an_unreachable_service_is_an_error(
                    || $unreachable($crate::contract::lock::opts()),
                ).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn [<contract_lock_wait_on_a_dying_service_is_an_error_ $backend>]() {
                let place = $place;
                let (via, kill) = $dying(&place, "lock", $crate::contract::lock::opts()).await;
                $crate::contract::lock::wait_on_a_dying_service_is_an_error(
                    || $lock(&place, "lock", $crate::contract::lock::opts()),
                    via,
                    kill,
                ).await;
            }
        }
    };
}

/// The [`semaphore`](crate::contract::semaphore) suite (semaphores and reader-writer locks)
/// on one backend, as `mod <backend>` with one test per guarantee:
///
/// ```ignore
/// testkit::contract_semaphore!(redis, place = fresh(), locks = locks, unreachable = unreachable);
/// ```
///
/// `locks(&place, LockOptions)` is a lock factory at the place, `unreachable(LockOptions)`
/// one whose service refuses connections.
#[macro_export]
macro_rules! contract_semaphore {
    ($backend:ident, place = $place:expr, locks = $locks:expr, unreachable = $unreachable:expr $(,)?) => {
        mod $backend {
            use super::*;
            use azstore::lock::{RwLock, Semaphore};
            use std::sync::Arc;
            use std::sync::atomic::{AtomicUsize, Ordering};
            use $crate::contract::semaphore::{self as contract, N, name, opts};

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn contract_semaphore_at_most_n_holders() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                // Contenders alternate between the in-process wake-up and polling only.
                let k = Arc::new(AtomicUsize::new(0));
                contract::at_most_n_holders(
                    || {
                        if k.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                            Semaphore::new(&a, &name, N, "contract").unwrap()
                        } else {
                            Semaphore::new(&b, &name, N, "contract").unwrap()
                        }
                    },
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_fencing_tokens_increase_across_slots() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::fencing_tokens_increase_across_slots(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_loss_before_expiry() {
                let place = $place;
                let locks = $locks(&place, opts().local_wakeup(false));
                let name = name();
                contract::loss_before_expiry(
                    || Semaphore::new(&locks, &name, 2, "contract").unwrap(),
                    2,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_release_on_drop() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                contract::release_on_drop(
                    || Semaphore::new(&a, &name, N, "contract").unwrap(),
                    || Semaphore::new(&b, &name, N, "contract").unwrap(),
                    N as usize,
                    "contract",
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_wait_on_a_full_semaphore_is_none() {
                let place = $place;
                let locks = $locks(&place, opts().local_wakeup(false));
                let name = name();
                contract::wait_on_a_full_semaphore_is_none(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_fair_waiting_in_arrival_order() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::fair_waiting_in_arrival_order(
                    || Semaphore::new(&locks, &name, 2, "contract").unwrap(),
                    2,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_rwlock_writers_in_arrival_order() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::rwlock_writers_in_arrival_order(|| {
                    RwLock::new(&locks, &name, 2, "contract").unwrap()
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_wait_on_an_unreachable_service_is_an_error() {
                let locks = $unreachable(opts());
                contract::wait_on_an_unreachable_service_is_an_error(
                    || Semaphore::new(&locks, "sem", N, "contract").unwrap(),
                    || RwLock::new(&locks, "rw", 4, "contract").unwrap(),
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_semaphore_set_permits_drains_and_reopens() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::set_permits_drains_and_reopens(
                    || Semaphore::new(&locks, &name, N, "contract").unwrap(),
                    N as usize,
                )
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
            async fn contract_rwlock_exclusion() {
                let place = $place;
                let (a, b) = (
                    $locks(&place, opts()),
                    $locks(&place, opts().local_wakeup(false)),
                );
                let name = name();
                let k = Arc::new(AtomicUsize::new(0));
                contract::rwlock_exclusion(|| {
                    if k.fetch_add(1, Ordering::Relaxed) % 2 == 0 {
                        RwLock::new(&a, &name, 4, "contract").unwrap()
                    } else {
                        RwLock::new(&b, &name, 4, "contract").unwrap()
                    }
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_rwlock_writer_preference() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::rwlock_writer_preference(|| {
                    RwLock::new(&locks, &name, 4, "contract").unwrap()
                })
                .await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn contract_rwlock_write_loss() {
                let place = $place;
                let locks = $locks(&place, opts());
                let name = name();
                contract::rwlock_write_loss(|| RwLock::new(&locks, &name, 2, "contract").unwrap())
                    .await;
            }
        }
    };
}

/// The [`leader`](crate::contract::leader) suite (elections and shard groups) on one backend:
///
/// ```ignore
/// testkit::contract_leader!(redis, place = prefix(), lock = lock, locks = locks);
/// ```
#[macro_export]
macro_rules! contract_leader {
    ($backend:ident, place = $place:expr, lock = $lock:expr, locks = $locks:expr $(,)?) => {
        $crate::__paste::paste! {
            #[tokio::test]
            async fn [<contract_leader_one_at_a_time_ $backend>]() {
                let place = $place;
                $crate::contract::leader::one_leader_at_a_time(
                    |label| $lock(&place, "leader", $crate::contract::leader::lock_options(label)),
                ).await;
            }

            #[tokio::test]
            async fn [<contract_leader_resign_hands_over_and_observe_sees_it_ $backend>]() {
                let place = $place;
                $crate::contract::leader::resign_hands_over_and_observe_sees_it(
                    |label| $lock(&place, "leader", $crate::contract::leader::lock_options(label)),
                ).await;
            }

            #[tokio::test]
            async fn [<contract_leader_shards_balance_without_double_ownership_ $backend>]() {
                let place = $place;
                $crate::contract::leader::shards_balance_without_double_ownership(
                    $locks(&place, $crate::contract::leader::lock_options("unused")),
                ).await;
            }
        }
    };
}
