//! The worker helper against Azurite: 500 messages, 3 concurrent workers, 10 % random
//! failures, always-failing poison messages; graceful shutdown; a missing queue and a refused
//! key returned to the caller; processing until the queue is empty (waiting for the messages a
//! run failed, or saying when they come back); the poison queue created at start.

use testkit::queue as queue_support;

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use azstore::credential::{Credential, SharedKeyCredential};
use azstore::queue::{
    Delivery, QueueClient, QueueServiceClient, WorkerOptions, process, process_until_empty,
};
use azstore::{ErrorCode, ErrorKind};
use futures_util::{StreamExt, TryStreamExt, stream};
use queue_support::fresh_queue;

const MAX_DEQUEUE: u32 = 3;

async fn put_all(q: &QueueClient, bodies: Vec<String>) {
    stream::iter(bodies)
        .map(|b| {
            let q = q.clone();
            async move { q.put_message(b).await.map(drop) }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<()>>()
        .await
        .unwrap();
}

async fn drain_texts(q: &QueueClient) -> Vec<String> {
    let mut out = Vec::new();
    loop {
        let batch = q
            .receive_messages(32, Duration::from_secs(60))
            .await
            .unwrap();
        if batch.is_empty() {
            return out;
        }
        out.extend(batch.iter().map(|m| m.text.clone()));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn five_hundred_messages_three_workers_random_failures_and_poison() {
    let q = fresh_queue("qw").await;
    let poison_q = q.sibling(&format!("{}-poison", q.name())).unwrap();
    let normal: Vec<String> = (0..500).map(|i| format!("ok-{i}")).collect();
    let poison: Vec<String> = (0..5).map(|i| format!("poison-{i}")).collect();
    put_all(&q, normal.iter().chain(&poison).cloned().collect()).await;

    let completed: Arc<Mutex<HashMap<String, u32>>> = Arc::default();
    let attempts = Arc::new(AtomicU32::new(0));
    let handler = {
        let completed = completed.clone();
        let attempts = attempts.clone();
        move |d: Delivery| {
            let completed = completed.clone();
            let attempts = attempts.clone();
            async move {
                attempts.fetch_add(1, Ordering::Relaxed);
                let body = d.content_str().map_err(|e| e.to_string())?.into_owned();
                tokio::time::sleep(Duration::from_millis(rand::random::<u64>() % 20)).await;
                if body.starts_with("poison") {
                    return Err(format!("{body} always fails").into());
                }
                // Transient failures, 10 % of the time; never on the last allowed attempt
                // so that only the poison messages can end in the poison queue.
                if d.message().dequeue_count < MAX_DEQUEUE && rand::random::<f64>() < 0.1 {
                    return Err(format!("{body}: transient failure").into());
                }
                *completed.lock().unwrap().entry(body).or_default() += 1;
                Ok(())
            }
        }
    };
    let opts = WorkerOptions::default()
        .concurrency(4)
        .visibility(Duration::from_secs(2))
        .max_dequeue_count(MAX_DEQUEUE)
        .idle_poll(Duration::from_millis(200));
    let workers: Vec<_> = (0..3)
        .map(|_| process(q.clone(), handler.clone(), opts.clone()).unwrap())
        .collect();

    let start = Instant::now();
    loop {
        let done = completed.lock().unwrap().len();
        let poisoned: u64 = workers.iter().map(|w| w.stats().poisoned).sum();
        if done == normal.len() && poisoned == poison.len() as u64 {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(150),
            "stuck: {done} completed, {poisoned} poisoned"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let mut total = azstore::queue::WorkerStats::default();
    for w in workers {
        let s = w.shutdown().await.unwrap();
        total.completed += s.completed;
        total.failed += s.failed;
        total.poisoned += s.poisoned;
        total.lost += s.lost;
    }

    // Every normal message completed at least once.
    let completed = completed.lock().unwrap().clone();
    let names: HashSet<_> = completed.keys().cloned().collect();
    assert_eq!(names, normal.iter().cloned().collect::<HashSet<_>>());
    assert!(total.completed >= 500, "{total:?}");
    // Poison messages: in the poison queue exactly once each, after MAX_DEQUEUE attempts.
    assert_eq!(total.poisoned, 5, "{total:?}");
    assert!(total.failed >= 5 * MAX_DEQUEUE as u64, "{total:?}");
    let mut in_poison = drain_texts(&poison_q).await;
    in_poison.sort();
    assert_eq!(in_poison, poison);
    // Nothing lost, nothing left behind.
    assert!(drain_texts(&q).await.is_empty(), "main queue is empty");
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        0
    );
    eprintln!(
        "{total:?}; {} handler calls; {:.1} s",
        attempts.load(Ordering::Relaxed),
        start.elapsed().as_secs_f64()
    );
    q.delete().await.unwrap();
    poison_q.delete().await.unwrap();
}

#[tokio::test]
async fn graceful_shutdown_finishes_in_flight_and_takes_no_more() {
    let q = fresh_queue("qws").await;
    put_all(&q, (0..6).map(|i| format!("m{i}")).collect()).await;
    let started = Arc::new(AtomicU32::new(0));
    let finished = Arc::new(AtomicU32::new(0));
    let handler = {
        let (started, finished) = (started.clone(), finished.clone());
        move |_d: Delivery| {
            let (started, finished) = (started.clone(), finished.clone());
            async move {
                started.fetch_add(1, Ordering::SeqCst);
                tokio::time::sleep(Duration::from_millis(1500)).await;
                finished.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        }
    };
    let worker = process(
        q.clone(),
        handler,
        WorkerOptions::default()
            .concurrency(2)
            .visibility(Duration::from_secs(30))
            .idle_poll(Duration::from_millis(100)),
    )
    .unwrap();
    while started.load(Ordering::SeqCst) < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let stats = worker.shutdown().await.unwrap();
    // The two in-flight handlers finished and their messages were deleted ...
    assert_eq!(started.load(Ordering::SeqCst), 2, "no new message taken");
    assert_eq!(finished.load(Ordering::SeqCst), 2);
    assert_eq!(stats.completed, 2);
    // ... and the other four are still there, visible, untouched.
    let rest = q.peek_messages(32).await.unwrap();
    assert_eq!(rest.len(), 4);
    assert!(rest.iter().all(|m| m.dequeue_count == 0));
    q.delete().await.unwrap();
    let _ = poison_of(&q).delete().await; // created when the worker started, if it did
}

#[tokio::test]
async fn a_panicking_handler_loses_nothing() {
    let q = fresh_queue("qwp").await;
    q.put_message("fragile").await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = {
        let calls = calls.clone();
        move |d: Delivery| {
            let calls = calls.clone();
            async move {
                calls.fetch_add(1, Ordering::SeqCst);
                if d.message().dequeue_count == 1 {
                    panic!("handler bug on first delivery (expected in this test)");
                }
                Ok(())
            }
        }
    };
    let worker = process(
        q.clone(),
        handler,
        WorkerOptions::default()
            .concurrency(1)
            .visibility(Duration::from_secs(1))
            .idle_poll(Duration::from_millis(100)),
    )
    .unwrap();
    let start = Instant::now();
    while worker.stats().completed < 1 {
        assert!(start.elapsed() < Duration::from_secs(20), "not redelivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let stats = worker.shutdown().await.unwrap();
    assert_eq!(stats.failed, 1, "{stats:?}");
    assert_eq!(stats.completed, 1);
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(q.peek_messages(1).await.unwrap().is_empty());
    q.delete().await.unwrap();
    poison_of(&q).delete().await.unwrap();
}

/// A handler that must never run (the tests below have no message to give it).
fn never_called(_d: Delivery) -> std::future::Ready<Result<(), azstore::queue::HandlerError>> {
    panic!("no message can reach the handler here")
}

#[tokio::test]
async fn a_missing_queue_stops_the_worker_and_reaches_the_caller() {
    // Never created.
    let q = queue_support::service()
        .queue(&testkit::unique("qwmissing"))
        .unwrap();
    let mut worker = process(
        q.clone(),
        never_called,
        WorkerOptions::default().idle_poll(Duration::from_millis(50)),
    )
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), worker.stopped())
        .await
        .expect("the worker stops on its own when the queue does not exist");
    assert_eq!(worker.stats().receive_errors, 0, "fatal, not retried");
    let err = worker.shutdown().await.unwrap_err();
    assert!(err.is_not_found(), "{err}");
    assert_eq!(err.error_code(), Some(&ErrorCode::QueueNotFound), "{err}");

    // The batch mode returns the same error.
    let err = tokio::time::timeout(
        Duration::from_secs(10),
        process_until_empty(q, never_called, WorkerOptions::default()),
    )
    .await
    .expect("returns at once")
    .unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::QueueNotFound), "{err}");
}

#[tokio::test]
async fn refused_authorization_stops_the_worker_and_reaches_the_caller() {
    let q = fresh_queue("qwauth").await;
    q.put_message("never handled").await.unwrap();
    // The same queue, signed with a wrong key: 403 (Azurite checks SharedKey signatures).
    let good = testkit::account();
    let bad = good.clone().with_credential(Credential::SharedKey(
        SharedKeyCredential::new(good.name(), "d3Jvbmcga2V5IHdyb25nIGtleQ==").unwrap(),
    ));
    let wrong = QueueServiceClient::new(&bad)
        .unwrap()
        .queue(q.name())
        .unwrap();
    let mut worker = process(
        wrong.clone(),
        never_called,
        WorkerOptions::default().idle_poll(Duration::from_millis(50)),
    )
    .unwrap();
    tokio::time::timeout(Duration::from_secs(10), worker.stopped())
        .await
        .expect("the worker stops on its own when authorization is refused");
    let err = worker.shutdown().await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    assert_eq!(err.status(), Some(403), "{err}");
    let err = process_until_empty(wrong, never_called, WorkerOptions::default())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");
    // The message is untouched.
    assert_eq!(q.peek_messages(32).await.unwrap().len(), 1);
    q.delete().await.unwrap();
    let _ = poison_of(&q).delete().await; // created when the worker started, if it did
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn process_until_empty_handles_every_message_then_returns() {
    let q = fresh_queue("qwempty").await;
    let poison_q = q.sibling(&format!("{}-poison", q.name())).unwrap();
    // An empty queue: returns at once.
    let stats = process_until_empty(q.clone(), never_called, WorkerOptions::default())
        .await
        .unwrap();
    assert_eq!(stats, azstore::queue::WorkerStats::default());

    put_all(&q, (0..40).map(|i| format!("m{i}")).collect()).await;
    q.put_message("always fails").await.unwrap();
    let handled: Arc<Mutex<HashSet<String>>> = Arc::default();
    let handler = {
        let handled = handled.clone();
        move |d: Delivery| {
            let handled = handled.clone();
            async move {
                let body = d.content_str()?.into_owned();
                if body == "always fails" {
                    return Err("this one always fails".into());
                }
                // Every fourth message fails its first delivery: retried in the same run.
                let n: u32 = body.trim_start_matches('m').parse()?;
                if n % 4 == 0 && d.message().dequeue_count == 1 {
                    return Err(format!("{body}: first delivery fails").into());
                }
                handled.lock().unwrap().insert(body);
                Ok(())
            }
        }
    };
    let t = Instant::now();
    let stats = tokio::time::timeout(
        Duration::from_secs(60),
        process_until_empty(
            q.clone(),
            handler,
            WorkerOptions::default()
                .concurrency(4)
                .max_dequeue_count(2)
                .retry_delay(Duration::ZERO)
                .idle_poll(Duration::from_millis(100)),
        ),
    )
    .await
    .expect("returns once the queue is empty")
    .unwrap();
    eprintln!("process_until_empty: {stats:?} in {:?}", t.elapsed());
    assert_eq!(handled.lock().unwrap().len(), 40);
    assert_eq!(stats.completed, 40, "{stats:?}");
    assert_eq!(stats.failed, 10 + 2, "{stats:?}");
    assert_eq!(stats.poisoned, 1, "{stats:?}");
    // Nothing left behind, visible or hidden.
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        0
    );
    assert_eq!(
        drain_texts(&poison_q).await,
        vec!["always fails".to_string()]
    );
    q.delete().await.unwrap();
    poison_q.delete().await.unwrap();
}

/// The poison queue of `q` (the default name).
fn poison_of(q: &QueueClient) -> QueueClient {
    q.sibling(&format!("{}-poison", q.name())).unwrap()
}

/// Default options but a 1 s visibility timeout (the default 30 s would make this test last
/// two minutes; the waits scale with it): a message whose handler always fails is delivered
/// `max_dequeue_count` (5) times, `process_until_empty` waits for each redelivery, and it
/// returns only once the message is in the poison queue — nothing left to reappear.
#[tokio::test]
async fn process_until_empty_with_default_options_ends_with_a_failing_message_poisoned() {
    let q = fresh_queue("qwdefault").await;
    q.put_message("always fails").await.unwrap();
    let calls = Arc::new(AtomicU32::new(0));
    let handler = {
        let calls = calls.clone();
        move |_d: Delivery| {
            calls.fetch_add(1, Ordering::SeqCst);
            async { Err::<(), _>("this one always fails".into()) }
        }
    };
    let defaults = WorkerOptions::default();
    assert_eq!(
        (
            defaults.max_dequeue_count,
            defaults.retry_delay,
            defaults.retry_wait
        ),
        (5, None, None)
    );
    // A guard against a hang, far above the documented bound (4 × (1 s + idle_poll 1 s)).
    let stats = tokio::time::timeout(
        Duration::from_secs(120),
        process_until_empty(
            q.clone(),
            handler,
            defaults.visibility(Duration::from_secs(1)),
        ),
    )
    .await
    .expect("process_until_empty returns")
    .unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 5, "{stats:?}");
    assert_eq!((stats.failed, stats.poisoned), (5, 1), "{stats:?}");
    assert_eq!((stats.reappearing, stats.reappear_within), (0, None));
    // Gone from the queue, visible or hidden; in the poison queue, unchanged.
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        0
    );
    let poison_q = poison_of(&q);
    assert_eq!(drain_texts(&poison_q).await, ["always fails"]);
    q.delete().await.unwrap();
    poison_q.delete().await.unwrap();
}

/// With `retry_wait(ZERO)` the run does not wait for a failed message: the result says how
/// many will reappear and by when, and the message is indeed visible again by then.
#[tokio::test]
async fn process_until_empty_says_how_many_will_reappear_and_when() {
    let q = fresh_queue("qwreappear").await;
    q.put_message("fails once").await.unwrap();
    let visibility = Duration::from_secs(3);
    let stats = process_until_empty(
        q.clone(),
        |_d: Delivery| async { Err("not yet".into()) },
        WorkerOptions::default()
            .visibility(visibility)
            .retry_wait(Duration::ZERO),
    )
    .await
    .unwrap();
    assert_eq!((stats.failed, stats.poisoned), (1, 0), "{stats:?}");
    assert_eq!(stats.reappearing, 1, "{stats:?}");
    let within = stats
        .reappear_within
        .expect("a time for the reappearing message");
    assert!(within <= visibility, "{stats:?}");
    // Hidden now (a failed message is left hidden: no retry_delay) ...
    assert!(q.peek_messages(32).await.unwrap().is_empty());
    // ... and visible again by the time the result gave (the service counts whole seconds).
    tokio::time::sleep(within + Duration::from_millis(1100)).await;
    let back = q.peek_messages(32).await.unwrap();
    assert_eq!(back.len(), 1, "visible again within {within:?}");
    assert_eq!(back[0].dequeue_count, 1);
    // A second run with a bounded wait that covers the visibility timeout handles it.
    let stats = process_until_empty(
        q.clone(),
        |_d: Delivery| async { Ok(()) },
        WorkerOptions::default().retry_wait(Duration::from_secs(60)),
    )
    .await
    .unwrap();
    assert_eq!((stats.completed, stats.reappearing), (1, 0), "{stats:?}");
    q.delete().await.unwrap();
    poison_of(&q).delete().await.unwrap();
}

/// A handler that fails on its first delivery and succeeds on its second: the run waits for
/// the redelivery (the visibility timeout) and completes it, rather than returning with the
/// message hidden.
#[tokio::test]
async fn process_until_empty_waits_for_a_failed_message_and_retries_it() {
    let q = fresh_queue("qwwait").await;
    q.put_message("flaky").await.unwrap();
    let stats = tokio::time::timeout(
        Duration::from_secs(60),
        process_until_empty(
            q.clone(),
            |d: Delivery| async move {
                if d.message().dequeue_count == 1 {
                    return Err("first delivery fails".into());
                }
                Ok(())
            },
            WorkerOptions::default()
                .visibility(Duration::from_secs(2))
                .idle_poll(Duration::from_millis(200)),
        ),
    )
    .await
    .expect("returns")
    .unwrap();
    assert_eq!(
        (
            stats.failed,
            stats.completed,
            stats.poisoned,
            stats.reappearing
        ),
        (1, 1, 0, 0),
        "{stats:?}"
    );
    assert_eq!(
        q.get_properties().await.unwrap().approximate_message_count,
        0
    );
    q.delete().await.unwrap();
    poison_of(&q).delete().await.unwrap();
}

/// The poison queue exists as soon as a worker has started on an existing queue, even when
/// nothing was poisoned: reading it after a first run never answers 404.
#[tokio::test]
async fn the_poison_queue_exists_from_the_first_run() {
    // process_until_empty on an empty queue.
    let q = fresh_queue("qwpq").await;
    let poison_q = poison_of(&q);
    let stats = process_until_empty(q.clone(), never_called, WorkerOptions::default())
        .await
        .unwrap();
    assert_eq!(stats, azstore::queue::WorkerStats::default());
    assert!(poison_q.peek_messages(32).await.unwrap().is_empty());

    // process: the poison queue (here a named one) appears without any message.
    let named = q.sibling(&testkit::unique("qwpqnamed")).unwrap();
    let worker = process(
        q.clone(),
        never_called,
        WorkerOptions::default()
            .poison_queue(named.name())
            .idle_poll(Duration::from_millis(50)),
    )
    .unwrap();
    let start = Instant::now();
    let props = loop {
        match named.get_properties().await {
            Ok(p) => break p,
            Err(e) if e.is_not_found() => {
                assert!(start.elapsed() < Duration::from_secs(20), "never created");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(e) => panic!("{e}"),
        }
    };
    assert_eq!(props.approximate_message_count, 0);
    assert_eq!(worker.shutdown().await.unwrap().completed, 0);
    // The missing-queue case creates no poison queue (see the test above it): the worker
    // creates it only once a receive has shown that the queue exists.
    let missing = queue_support::service()
        .queue(&testkit::unique("qwpqmissing"))
        .unwrap();
    process_until_empty(missing.clone(), never_called, WorkerOptions::default())
        .await
        .unwrap_err();
    let err = poison_of(&missing).get_properties().await.unwrap_err();
    assert_eq!(err.error_code(), Some(&ErrorCode::QueueNotFound), "{err}");
    for queue in [q, poison_q, named] {
        queue.delete().await.unwrap();
    }
}
