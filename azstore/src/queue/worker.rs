//! [`process`] and [`process_until_empty`]: a queue worker with bounded concurrency,
//! visibility keep-alive, poison messages, graceful shutdown, and fatal errors returned to the
//! caller.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures_util::FutureExt;

use tokio::sync::{OnceCell, Semaphore, watch};
use tokio::task::{JoinHandle, JoinSet};
use tracing::Instrument;

use super::poison::{poison_record, record_poison};
use super::telemetry;
use super::worker_options::WorkerOptions;
use crate::error::{Error, ErrorKind, Result};
use crate::lease::GuardOptions;
use crate::queue::client::QueueClient;
use crate::queue::guard::{LostSignal, MessageGuard, message_plan};
use crate::queue::message::{
    MAX_MESSAGES_PER_CALL, MessageEncoding, PutMessageOptions, QueueMessage, ReceivedMessage,
    TimeToLive,
};

/// The error a worker's handler returns: any error. `?` converts azstore's [`Error`], any
/// `std::error::Error` and `anyhow::Error`; a message becomes one with `.into()`
/// (`Err(format!("bad order {id}").into())`). A plain `Ok(())` needs no annotation.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::{Delivery, WorkerOptions, process};
/// let worker = process(queue, |d: Delivery| async move {
///     let text = d.content_str()?; // azstore::Error converts
///     if text.is_empty() {
///         return Err("empty message".into()); // so does a message
///     }
///     Ok(())
/// }, WorkerOptions::default())?;
/// # worker.shutdown().await?;
/// # Ok(()) }
/// ```
pub type HandlerError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// One message handed to the handler.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::{Delivery, WorkerOptions, process};
/// let worker = process(queue, |d: Delivery| async move {
///     let id = d.message().id.clone();
///     let text = d.content_str()?.into_owned();
///     println!("{} (delivery #{}): {text}", id.as_str(), d.message().dequeue_count);
///     Ok(())
/// }, WorkerOptions::default())?;
/// # worker.shutdown().await?; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Delivery {
    message: QueueMessage,
    lost: LostSignal,
}

impl Delivery {
    /// The message (id, text, dequeue count, ...).
    ///
    /// ```no_run
    /// # fn demo(d: azstore::queue::Delivery) {
    /// if d.message().dequeue_count > 1 {
    ///     println!("redelivery: check whether the first attempt already did the work");
    /// }
    /// # }
    /// ```
    pub fn message(&self) -> &QueueMessage {
        &self.message
    }

    /// The decoded content (bytes; Base64 is decoded for a Base64 queue client).
    ///
    /// ```no_run
    /// # fn demo(d: azstore::queue::Delivery) -> azstore::Result<()> {
    /// let job: serde_json::Value = serde_json::from_slice(&d.content()?)
    ///     .map_err(|e| azstore::Error::invalid_input(format!("bad job: {e}")))?;
    /// # let _ = job; Ok(()) }
    /// ```
    pub fn content(&self) -> Result<bytes::Bytes> {
        self.message.content()
    }

    /// The decoded content as text.
    ///
    /// ```no_run
    /// # fn demo(d: azstore::queue::Delivery) -> azstore::Result<()> {
    /// println!("{}", d.content_str()?);
    /// # Ok(()) }
    /// ```
    pub fn content_str(&self) -> Result<std::borrow::Cow<'_, str>> {
        self.message.content_str()
    }

    /// Flips if the worker lost the message while the handler runs (another consumer may
    /// receive it): stop and do not commit irreversible effects.
    ///
    /// ```no_run
    /// # fn demo(d: azstore::queue::Delivery) -> azstore::Result<()> {
    /// let lost = d.lost_signal();
    /// // ... prepare ...
    /// if lost.is_lost() {
    ///     return Err(azstore::Error::invalid_input("message lost: not sending the e-mail"));
    /// }
    /// // ... send the e-mail ...
    /// # Ok(()) }
    /// ```
    pub fn lost_signal(&self) -> LostSignal {
        self.lost.clone()
    }
}

/// Counters of a worker.
///
/// ```no_run
/// # async fn demo(worker: azstore::queue::WorkerHandle) -> azstore::Result<()> {
/// let stats = worker.shutdown().await?;
/// println!(
///     "{} done, {} failed, {} poisoned, {} lost, {} receive errors",
///     stats.completed, stats.failed, stats.poisoned, stats.lost, stats.receive_errors
/// );
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct WorkerStats {
    /// Handled successfully and deleted.
    pub completed: u64,
    /// Handler returned an error or panicked: the message is delivered again, or, after its
    /// last allowed attempt, moved to the poison queue (and counted in `poisoned` too).
    pub failed: u64,
    /// Moved to the poison queue.
    pub poisoned: u64,
    /// Handled successfully but the delete failed (the message was lost to another consumer
    /// and may be handled twice).
    pub lost: u64,
    /// Receive calls that failed transiently (connection, timeout, 5xx, throttling; retried
    /// after `idle_poll`). A fatal failure (the queue does not exist, authorization refused)
    /// stops the worker and is returned as an error instead.
    pub receive_errors: u64,
    /// [`process_until_empty`] only: messages this run failed that are still hidden and will
    /// be delivered again (not waited for because of
    /// [`retry_wait`](WorkerOptions::retry_wait)). 0 with the default options.
    pub reappearing: u64,
    /// [`process_until_empty`] only: when `reappearing` is not 0, the time (from the return)
    /// within which all of them are visible again — an upper bound computed from the
    /// visibility timeout or `retry_delay` they were left with.
    pub reappear_within: Option<Duration>,
}

#[derive(Debug, Default)]
struct Counters {
    completed: AtomicU64,
    failed: AtomicU64,
    poisoned: AtomicU64,
    lost: AtomicU64,
    receive_errors: AtomicU64,
}

impl Counters {
    fn snapshot(&self) -> WorkerStats {
        WorkerStats {
            completed: self.completed.load(Ordering::Relaxed),
            failed: self.failed.load(Ordering::Relaxed),
            poisoned: self.poisoned.load(Ordering::Relaxed),
            lost: self.lost.load(Ordering::Relaxed),
            receive_errors: self.receive_errors.load(Ordering::Relaxed),
            reappearing: 0,
            reappear_within: None,
        }
    }
}

/// The messages a run failed that will become visible again, by id, each with the moment by
/// which it is visible again (local clock: the visibility timeout or retry delay it was left
/// with, counted from after the answer, so never earlier than the service's own time).
#[derive(Debug, Default)]
struct Retries {
    due: HashMap<String, Instant>,
}

impl Retries {
    /// A message that reappears by `at` is not seen by an empty receive started `GRACE` after
    /// it: another consumer took it (or it was deleted). The service keeps whole seconds.
    const GRACE: Duration = Duration::from_secs(1);

    fn failed(&mut self, id: &str, at: Instant) {
        self.due.insert(id.to_string(), at);
    }

    fn received(&mut self, id: &str) {
        self.due.remove(id);
    }

    /// An empty receive started at `t`: forgets the messages that were visible by then.
    fn empty_receive(&mut self, t: Instant) {
        self.due.retain(|_, at| *at + Self::GRACE > t);
    }

    fn len(&self) -> usize {
        self.due.len()
    }

    fn earliest(&self) -> Option<Instant> {
        self.due.values().min().copied()
    }

    fn latest(&self) -> Option<Instant> {
        self.due.values().max().copied()
    }
}

/// A running worker (see [`process`]). [`shutdown`](Self::shutdown) stops it gracefully and
/// returns its counters, or the fatal error that stopped it; [`stopped`](Self::stopped)
/// completes when it stopped on its own. Dropping the handle shuts the worker down in the
/// background.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::{Delivery, WorkerOptions, process};
/// let worker = process(queue, |_d: Delivery| async { Ok(()) }, WorkerOptions::default())?;
/// tokio::signal::ctrl_c().await.ok();
/// println!("{:?}", worker.shutdown().await?);
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "dropping a WorkerHandle shuts the worker down at once; keep it while the worker should run"]
pub struct WorkerHandle {
    stop: watch::Sender<bool>,
    counters: Arc<Counters>,
    task: JoinHandle<Result<()>>,
    finished: watch::Receiver<bool>,
}

impl WorkerHandle {
    /// The counters so far.
    ///
    /// ```no_run
    /// # async fn demo(worker: azstore::queue::WorkerHandle) {
    /// let mut ticks = tokio::time::interval(std::time::Duration::from_secs(60));
    /// for _ in 0..10 {
    ///     ticks.tick().await;
    ///     println!("{:?}", worker.stats());
    /// }
    /// # }
    /// ```
    pub fn stats(&self) -> WorkerStats {
        self.counters.snapshot()
    }

    /// Completes once the worker has stopped on its own, because of a fatal error (the queue
    /// does not exist, authorization refused) — its in-flight handlers finished. Then
    /// [`shutdown`](Self::shutdown) returns that error. Cancel-safe: wait on it beside a
    /// shutdown signal, as the [`process`] example does.
    ///
    /// ```no_run
    /// # async fn demo(mut worker: azstore::queue::WorkerHandle) -> azstore::Result<()> {
    /// tokio::select! {
    ///     _ = worker.stopped() => eprintln!("the worker stopped on its own"),
    ///     _ = tokio::signal::ctrl_c() => {}
    /// }
    /// let stats = worker.shutdown().await?; // the fatal error, if there was one
    /// # let _ = stats;
    /// # Ok(()) }
    /// ```
    pub async fn stopped(&mut self) {
        // An error means the task is gone (it panicked): stopped as well.
        let _ = self.finished.wait_for(|done| *done).await;
    }

    /// Graceful shutdown: stop receiving new messages, let the in-flight handlers finish
    /// (and their messages be deleted or released), then return the final counters — or,
    /// if the worker had stopped on a fatal error, that error.
    ///
    /// ```no_run
    /// # async fn demo(worker: azstore::queue::WorkerHandle) -> azstore::Result<()> {
    /// tokio::signal::ctrl_c().await.ok(); // SIGINT: finish what is in flight, then exit
    /// let stats = worker.shutdown().await?;
    /// println!("handled {} messages", stats.completed);
    /// # Ok(()) }
    /// ```
    pub async fn shutdown(self) -> Result<WorkerStats> {
        let _ = self.stop.send(true);
        self.task
            .await
            .map_err(|e| Error::new(ErrorKind::Service, format!("worker task failed: {e}")))??;
        Ok(self.counters.snapshot())
    }
}

struct Shared<H> {
    queue: QueueClient,
    handler: H,
    options: WorkerOptions,
    poison: QueueClient,
    poison_ready: OnceCell<()>,
    counters: Arc<Counters>,
    /// Return once a receive finds no visible message, no handler runs and no message this
    /// run failed is due back (within `retry_wait`).
    until_empty: bool,
    /// The messages this run failed that will reappear (kept by `process_until_empty` only).
    retries: Mutex<Retries>,
}

/// Runs `handler` over the messages of `queue` until shut down (or a fatal error).
///
/// * At most `options.concurrency` handlers run at once; messages are received in batches
///   of up to 32 only when there is room for them.
/// * While a handler runs, a [`MessageGuard`] keeps its message hidden. On `Ok` the message
///   is deleted; on `Err` (or a panic) it is left to reappear.
/// * A message dequeued `max_dequeue_count` times without success is copied to the poison
///   queue (`<queue>-poison` by default, created when the worker starts) and deleted from
///   `queue`.
/// * **Fatal errors reach the caller.** When a receive is refused in a way retrying cannot
///   fix — the queue does not exist (404), authorization refused (401/403, e.g. a wrong key
///   or an expired SAS), any other 4xx — the worker stops receiving, lets its in-flight
///   handlers finish, and stops: [`WorkerHandle::stopped`] completes and
///   [`WorkerHandle::shutdown`] returns the error. Transient receive failures (connection,
///   timeout, 5xx, throttling) are counted in [`WorkerStats::receive_errors`], logged, and
///   retried after `idle_poll`.
///
/// Delivery is at least once: make the handler idempotent (see `examples/queue_worker.rs`).
/// The handler returns `Result<(), `[`HandlerError`]`>`: `?` works on any error, and `Ok(())`
/// needs no annotation. Fails with `InvalidInput` (nothing started) on bad options or
/// outside a tokio runtime. To work through a queue and return, use
/// [`process_until_empty`].
///
/// ```no_run
/// # async fn f(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::{process, Delivery, WorkerOptions};
///
/// let mut worker = process(
///     queue,
///     |d: Delivery| async move {
///         println!("{}", d.content_str()?);
///         Ok(())
///     },
///     WorkerOptions::default().concurrency(4),
/// )?;
/// tokio::select! {
///     _ = tokio::signal::ctrl_c() => {}
///     // The queue was deleted, the key rotated, ...: shutdown() returns why.
///     _ = worker.stopped() => {}
/// }
/// let stats = worker.shutdown().await?;
/// println!("{stats:?}");
/// # Ok(()) }
/// ```
pub fn process<H, Fut>(
    queue: QueueClient,
    handler: H,
    options: WorkerOptions,
) -> Result<WorkerHandle>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
{
    let shared = prepare(queue, handler, options, false)?;
    let counters = shared.counters.clone();
    let (stop_tx, stop_rx) = watch::channel(false);
    let (finished_tx, finished) = watch::channel(false);
    let task = tokio::spawn(async move {
        let result = run(shared, stop_rx).await;
        let _ = finished_tx.send(true);
        result
    });
    Ok(WorkerHandle {
        stop: stop_tx,
        counters,
        task,
        finished,
    })
}

/// Runs `handler` over the messages of `queue` until the queue is empty, then returns the
/// counters: for batch jobs and tests, without a polling loop of your own.
///
/// Works like [`process`] (concurrency, visibility keep-alive, poison queue) and returns once
/// a receive finds no visible message, none of its handlers runs, and no message that this run
/// failed is still to come back. A failed message stays hidden until its visibility timeout
/// ends (or for [`retry_delay`](WorkerOptions::retry_delay)): the run waits for it, receives it
/// again and retries it, until it succeeds or goes to the poison queue. So with the default
/// options a message whose handler always fails is poisoned before this returns: its
/// `max_dequeue_count` (5) deliveries are `visibility` (30 s) apart, about 2 minutes in all;
/// in general the wait is at most (`max_dequeue_count` − 1) × (`visibility` or `retry_delay`,
/// plus `idle_poll`) after its first failure. [`retry_wait`](WorkerOptions::retry_wait) bounds
/// the wait: a message due back later is left, and the result says how many
/// ([`WorkerStats::reappearing`]) and by when ([`WorkerStats::reappear_within`]).
///
/// Messages hidden for other reasons — received by another consumer, put with a delay — are
/// not waited for; nor is a failed message that another consumer received meanwhile.
///
/// Errors: `InvalidInput` on bad options (nothing sent); a fatal receive failure — the queue
/// does not exist, authorization refused, any other 4xx — after the in-flight handlers
/// finished. Transient receive failures are retried after `idle_poll` and counted. Dropping
/// the future stops the in-flight handlers; their messages reappear after their visibility
/// timeout.
///
/// ```no_run
/// # async fn f(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::{process_until_empty, Delivery, WorkerOptions};
///
/// let stats = process_until_empty(
///     queue,
///     |d: Delivery| async move {
///         let order = d.content_str()?;
///         if order.is_empty() {
///             return Err("empty order".into());
///         }
///         Ok(())
///     },
///     WorkerOptions::default().concurrency(4),
/// )
/// .await?;
/// println!("{} done, {} failed, {} poisoned", stats.completed, stats.failed, stats.poisoned);
/// # Ok(()) }
/// ```
pub async fn process_until_empty<H, Fut>(
    queue: QueueClient,
    handler: H,
    options: WorkerOptions,
) -> Result<WorkerStats>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
{
    let shared = prepare(queue, handler, options, true)?;
    // Never sent: this run ends when the queue is empty (or the future is dropped).
    let (_stop, stop_rx) = watch::channel(false);
    run(shared.clone(), stop_rx).await?;
    let mut stats = shared.counters.snapshot();
    let retries = shared.retries.lock().unwrap_or_else(|e| e.into_inner());
    stats.reappearing = retries.len() as u64;
    stats.reappear_within = retries
        .latest()
        .map(|at| at.saturating_duration_since(Instant::now()));
    Ok(stats)
}

/// Validates the options (nothing is sent) and builds the worker's shared state.
fn prepare<H, Fut>(
    queue: QueueClient,
    handler: H,
    options: WorkerOptions,
    until_empty: bool,
) -> Result<Arc<Shared<H>>>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
{
    if options.concurrency == 0 {
        return Err(Error::invalid_input(
            "worker concurrency must be at least 1",
        ));
    }
    if options.max_dequeue_count == 0 {
        return Err(Error::invalid_input("max_dequeue_count must be at least 1"));
    }
    message_plan(&GuardOptions::default().visibility(options.visibility))?;
    crate::queue::guard::require_runtime("queue::process")?;
    let poison_name = options
        .poison_queue
        .clone()
        .unwrap_or_else(|| format!("{}-poison", queue.name()));
    let poison = queue
        .sibling(&poison_name)?
        .with_encoding(MessageEncoding::Raw);
    Ok(Arc::new(Shared {
        queue,
        handler,
        options,
        poison,
        poison_ready: OnceCell::new(),
        counters: Arc::new(Counters::default()),
        until_empty,
        retries: Mutex::new(Retries::default()),
    }))
}

/// Whether a failed receive can never succeed by retrying: the service answered with a 4xx
/// other than 408 (timeout) and 429 (throttling) — the queue does not exist, authorization
/// was refused, the request is wrong.
fn is_fatal(e: &Error) -> bool {
    matches!(
        e.kind(),
        ErrorKind::NotFound | ErrorKind::Auth | ErrorKind::InvalidInput
    ) || (e.status().is_some_and(|s| (400..500).contains(&s)) && !e.is_retryable())
}

/// The worker loop; `Err` with a fatal receive failure, after the in-flight handlers finished.
async fn run<H, Fut>(shared: Arc<Shared<H>>, mut stop: watch::Receiver<bool>) -> Result<()>
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
{
    let opts = &shared.options;
    let semaphore = Arc::new(Semaphore::new(opts.concurrency));
    let batch = opts.concurrency.min(MAX_MESSAGES_PER_CALL as usize);
    let mut tasks = JoinSet::new();
    let mut fatal: Option<Error> = None;
    let mut poison_checked = false;
    'outer: loop {
        while let Some(done) = tasks.try_join_next() {
            record_join(&shared.counters, done);
        }
        if *stop.borrow() {
            break;
        }
        // Wait for room for at least one message (or for shutdown).
        let first = tokio::select! {
            p = semaphore.clone().acquire_owned() => match p {
                Ok(p) => p,
                Err(_) => break,
            },
            _ = stop.changed() => break,
        };
        let mut permits = vec![first];
        while permits.len() < batch {
            match semaphore.clone().try_acquire_owned() {
                Ok(p) => permits.push(p),
                Err(_) => break,
            }
        }
        // Not cancelled by shutdown: a receive cut short would hide messages for nothing.
        let receive_started = Instant::now();
        let received = shared
            .queue
            .receive_messages(permits.len() as u8, opts.visibility)
            .await;
        let messages = match received {
            Ok(m) => {
                if !std::mem::replace(&mut poison_checked, true) {
                    // The queue exists: make sure its poison queue does too, before any
                    // handler runs, so that readers of the poison queue never get a 404.
                    ensure_poison_queue(&shared).await;
                }
                m
            }
            Err(e) if is_fatal(&e) => {
                tracing::error!(queue = %shared.queue.name(), error = %e, "receive refused; the worker stops");
                fatal = Some(e);
                break 'outer;
            }
            Err(e) => {
                shared
                    .counters
                    .receive_errors
                    .fetch_add(1, Ordering::Relaxed);
                tracing::warn!(queue = %shared.queue.name(), error = %e, "receive failed");
                drop(permits);
                tokio::select! {
                    _ = tokio::time::sleep(opts.idle_poll) => continue 'outer,
                    _ = stop.changed() => break 'outer,
                }
            }
        };
        if messages.is_empty() {
            drop(permits);
            if shared.until_empty {
                if tasks.is_empty() {
                    // Empty, and nothing in flight: wait for the messages this run failed
                    // that will reappear (within retry_wait), else the run is over.
                    let next = {
                        let mut retries = shared.retries.lock().unwrap_or_else(|e| e.into_inner());
                        retries.empty_receive(receive_started);
                        let now = Instant::now();
                        let waited_for =
                            |at: &Instant| opts.retry_wait.is_none_or(|limit| *at <= now + limit);
                        if retries.due.values().any(waited_for) {
                            retries.earliest()
                        } else {
                            None
                        }
                    };
                    let Some(next) = next else { break 'outer };
                    // Until the earliest is due (polling no more often than idle_poll).
                    let pause = next
                        .saturating_duration_since(Instant::now())
                        .max(opts.idle_poll);
                    tracing::debug!(queue = %shared.queue.name(), wait_ms = pause.as_millis() as u64,
                        "queue empty; waiting for failed messages to reappear");
                    tokio::select! {
                        _ = tokio::time::sleep(pause) => continue 'outer,
                        _ = stop.changed() => break 'outer,
                    }
                }
                tokio::select! {
                    Some(done) = tasks.join_next() => {
                        record_join(&shared.counters, done);
                        continue 'outer;
                    }
                    _ = tokio::time::sleep(opts.idle_poll) => continue 'outer,
                    _ = stop.changed() => break 'outer,
                }
            }
            tokio::select! {
                _ = tokio::time::sleep(opts.idle_poll) => continue 'outer,
                _ = stop.changed() => break 'outer,
            }
        }
        if shared.until_empty {
            let mut retries = shared.retries.lock().unwrap_or_else(|e| e.into_inner());
            for msg in &messages {
                retries.received(msg.id.as_str());
            }
        }
        for (msg, permit) in messages.into_iter().zip(permits) {
            let shared = shared.clone();
            let span =
                telemetry::message_span(shared.queue.name(), msg.id.as_str(), msg.dequeue_count);
            tasks.spawn(async move {
                handle_one(&shared, msg).instrument(span).await;
                drop(permit);
            });
        }
    }
    // Graceful: every in-flight handler finishes and its message is settled.
    while let Some(done) = tasks.join_next().await {
        record_join(&shared.counters, done);
    }
    match fatal {
        None => Ok(()),
        Some(e) => Err(e),
    }
}

fn record_join(counters: &Counters, done: std::result::Result<(), tokio::task::JoinError>) {
    if let Err(e) = done {
        // A panicking handler: its guard was dropped, so the message reappears.
        tracing::error!(error = %e, "queue handler panicked");
        counters.failed.fetch_add(1, Ordering::Relaxed);
    }
}

async fn handle_one<H, Fut>(shared: &Shared<H>, msg: ReceivedMessage)
where
    H: Fn(Delivery) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = std::result::Result<(), HandlerError>> + Send + 'static,
{
    let opts = &shared.options;
    let counters = &shared.counters;
    let id = msg.id.as_str().to_string();
    if msg.dequeue_count > opts.max_dequeue_count {
        let reason = format!(
            "received {} times, more than max_dequeue_count {}: earlier handlers crashed or lost it",
            msg.dequeue_count, opts.max_dequeue_count
        );
        if !poison(shared, msg, &reason).await {
            will_reappear(shared, &id, opts.visibility);
        }
        return;
    }
    let guard = match MessageGuard::start(
        &shared.queue,
        msg,
        GuardOptions::default().visibility(opts.visibility),
    ) {
        Ok(g) => g,
        Err(e) => {
            tracing::error!(error = %e, "cannot guard message");
            counters.failed.fetch_add(1, Ordering::Relaxed);
            telemetry::queue_outcome(shared.queue.name(), "failed");
            will_reappear(shared, &id, opts.visibility);
            return;
        }
    };
    let delivery = Delivery {
        message: guard.message().clone(),
        lost: guard.lost_signal(),
    };
    let dequeue_count = delivery.message.dequeue_count;
    // A panicking handler is a failed attempt like an error: the guard still settles the
    // message (released, or poisoned on the last attempt).
    let outcome =
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (shared.handler)(delivery)))
        {
            Ok(fut) => std::panic::AssertUnwindSafe(fut).catch_unwind().await,
            Err(panic) => Err(panic),
        }
        .unwrap_or_else(|panic| {
            let what = panic
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| panic.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "a non-text panic payload".to_string());
            tracing::error!(panic = %what, dequeue_count, "queue handler panicked");
            Err(format!("handler panicked: {what}").into())
        });
    match outcome {
        Ok(()) => match guard.complete().await {
            Ok(()) => {
                counters.completed.fetch_add(1, Ordering::Relaxed);
                telemetry::queue_outcome(shared.queue.name(), "completed");
            }
            Err(e) => {
                tracing::warn!(error = %e, "handled message could not be deleted (lost to another consumer?)");
                counters.lost.fetch_add(1, Ordering::Relaxed);
                telemetry::queue_outcome(shared.queue.name(), "lost");
            }
        },
        Err(e) => {
            counters.failed.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(error = %e, dequeue_count, "handler failed");
            if dequeue_count >= opts.max_dequeue_count {
                // The last attempt failed: move it now rather than after another timeout
                // (poison() deletes it with the newest receipt the guard holds). Its outcome
                // is `poisoned`, or `failed` when the move did not happen (it reappears).
                let moved = match guard.into_received().await {
                    Ok(msg) => poison(shared, msg, &e.to_string()).await,
                    Err(e) => {
                        tracing::warn!(error = %e, "could not stop message guard");
                        false
                    }
                };
                if !moved {
                    telemetry::queue_outcome(shared.queue.name(), "failed");
                    will_reappear(shared, &id, opts.visibility);
                }
                return;
            }
            telemetry::queue_outcome(shared.queue.name(), "failed");
            let (settled, hidden_for) = match opts.retry_delay {
                Some(d) => (guard.retry_after(d).await, d),
                None => (guard.abandon().await, opts.visibility),
            };
            if let Err(e) = &settled {
                tracing::debug!(error = %e, "could not release failed message");
            }
            will_reappear(
                shared,
                &id,
                if settled.is_ok() {
                    hidden_for
                } else {
                    opts.visibility
                },
            );
        }
    }
}

/// Notes (for `process_until_empty`) that the message `id` failed in this run and is visible
/// again within `hidden_for` from now.
fn will_reappear<H>(shared: &Shared<H>, id: &str, hidden_for: Duration) {
    if shared.until_empty {
        shared
            .retries
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .failed(id, Instant::now() + hidden_for);
    }
}

/// Creates the poison queue if it does not exist (once per worker). A failure is logged and
/// not fatal: the worker can still handle messages, and the first move to the poison queue
/// tries again.
async fn ensure_poison_queue<H>(shared: &Shared<H>) {
    let created = shared
        .poison_ready
        .get_or_try_init(|| async { shared.poison.create_if_not_exists().await.map(drop) })
        .await;
    if let Err(e) = created {
        tracing::warn!(poison_queue = %shared.poison.name(), error = %e,
            "could not create the poison queue; trying again at the first poison message");
    }
}

/// Copies the message verbatim to the poison queue, then deletes it (in that order: a
/// failure in between leaves a duplicate, never a loss). The move is logged at WARN with
/// `reason` (the handler's last error), and recorded in the poison queue's metadata
/// ([`POISON_METADATA`](super::POISON_METADATA)). Returns whether the message was moved.
async fn poison<H>(shared: &Shared<H>, msg: ReceivedMessage, reason: &str) -> bool {
    let id = msg.id.as_str().to_string();
    let dequeue_count = msg.dequeue_count;
    let result: Result<String> = async {
        shared
            .poison_ready
            .get_or_try_init(|| async { shared.poison.create_if_not_exists().await.map(drop) })
            .await?;
        let copy = shared
            .poison
            .put_message_with(
                msg.text.as_bytes(),
                &PutMessageOptions::default().time_to_live(TimeToLive::Never),
            )
            .await?;
        shared.queue.delete_message(msg).await?;
        Ok(copy.id.as_str().to_string())
    }
    .await;
    match result {
        Ok(copy_id) => {
            shared.counters.poisoned.fetch_add(1, Ordering::Relaxed);
            telemetry::poisoned(
                shared.queue.name(),
                shared.poison.name(),
                &id,
                &copy_id,
                dequeue_count,
                reason,
            );
            let record = poison_record(&id, &copy_id, dequeue_count, reason);
            if let Err(e) = record_poison(&shared.poison, record).await {
                tracing::warn!(error = %e, "could not record the poison reason in the poison queue's metadata");
            }
            true
        }
        Err(e) => {
            tracing::warn!(error = %e, "could not move poison message");
            false
        }
    }
}
