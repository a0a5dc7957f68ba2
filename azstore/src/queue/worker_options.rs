//! [`WorkerOptions`]: how a queue worker ([`process`](super::process)) receives, keeps,
//! retries and poisons messages.

use std::time::Duration;

#[cfg(doc)]
use super::{MessageGuard, POISON_METADATA, WorkerStats, process, process_until_empty};

/// Options of [`process`] and [`process_until_empty`]:
/// `WorkerOptions::default().concurrency(4).poison_queue("orders-bad")`.
///
/// ```
/// use std::time::Duration;
/// use azstore::queue::WorkerOptions;
/// let options = WorkerOptions::default()
///     .concurrency(4)
///     .visibility(Duration::from_secs(60))
///     .max_dequeue_count(3)
///     .poison_queue("orders-failed");
/// # let _ = options;
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub struct WorkerOptions {
    /// Most messages handled at once (default 8).
    pub concurrency: usize,
    /// Visibility timeout of received messages, kept alive by a [`MessageGuard`] while the
    /// handler runs (default 30 s).
    pub visibility: Duration,
    /// A message is moved to the poison queue once it has been dequeued this many times
    /// without success (default 5): after a failure on the last attempt, or when it is
    /// received again past the threshold (a handler that crashed or lost it).
    pub max_dequeue_count: u32,
    /// Name of the poison queue; default `<queue>-poison`. Created when the worker starts
    /// (once its first receive shows that the queue exists). Poison
    /// messages are copied verbatim and never expire; each move is logged at WARN with the
    /// handler's last error, and the poison queue's metadata [`POISON_METADATA`] records the
    /// last one.
    pub poison_queue: Option<String>,
    /// Wait between polls when the queue is empty (default 1 s).
    pub idle_poll: Duration,
    /// After a handler failure, make the message visible again after this delay; `None`
    /// (default) leaves it hidden until its visibility timeout ends.
    pub retry_delay: Option<Duration>,
    /// How long [`process_until_empty`], once the queue looks empty, waits for a message this
    /// run failed to become visible again. `None` (default): as long as it takes — at most
    /// `visibility` (or `retry_delay`) per failed attempt — so every failed message is retried
    /// until it succeeds or is poisoned. A message due later than this is left and counted in
    /// [`WorkerStats::reappearing`].
    pub retry_wait: Option<Duration>,
}

impl Default for WorkerOptions {
    fn default() -> Self {
        WorkerOptions {
            concurrency: 8,
            visibility: Duration::from_secs(30),
            max_dequeue_count: 5,
            poison_queue: None,
            idle_poll: Duration::from_secs(1),
            retry_delay: None,
            retry_wait: None,
        }
    }
}

impl WorkerOptions {
    /// Most messages handled at once (default 8): the worker receives no more messages
    /// than it has free handler slots.
    ///
    /// ```
    /// let options = azstore::queue::WorkerOptions::default().concurrency(2);
    /// assert_eq!(options.concurrency, 2);
    /// ```
    pub fn concurrency(mut self, v: usize) -> Self {
        self.concurrency = v;
        self
    }

    /// The visibility timeout of received messages (default 30 s). A [`MessageGuard`]
    /// extends it while the handler runs, so it bounds how soon another consumer gets
    /// a message whose worker crashed, not how long a handler may take.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::queue::WorkerOptions::default().visibility(Duration::from_secs(60));
    /// # let _ = options;
    /// ```
    pub fn visibility(mut self, v: Duration) -> Self {
        self.visibility = v;
        self
    }

    /// How many deliveries a message gets before it is moved to the poison queue
    /// (default 5): after a failure on the last one, or when it is received again past
    /// the threshold.
    ///
    /// ```
    /// let options = azstore::queue::WorkerOptions::default().max_dequeue_count(3);
    /// # let _ = options;
    /// ```
    pub fn max_dequeue_count(mut self, v: u32) -> Self {
        self.max_dequeue_count = v;
        self
    }

    /// The queue that poison messages are moved to (default `<queue>-poison`; created when
    /// the worker starts). Messages are copied verbatim and never expire there.
    ///
    /// ```
    /// let options = azstore::queue::WorkerOptions::default().poison_queue("orders-failed");
    /// assert_eq!(options.poison_queue.as_deref(), Some("orders-failed"));
    /// ```
    pub fn poison_queue(mut self, v: impl Into<String>) -> Self {
        self.poison_queue = Some(v.into());
        self
    }

    /// How long the worker waits before polling again when the queue was empty or a
    /// receive failed transiently (default 1 s). Shorter picks new messages up sooner at the cost of more requests.
    ///
    /// ```
    /// use std::time::Duration;
    /// let options = azstore::queue::WorkerOptions::default().idle_poll(Duration::from_millis(200));
    /// # let _ = options;
    /// ```
    pub fn idle_poll(mut self, v: Duration) -> Self {
        self.idle_poll = v;
        self
    }

    /// After a handler failure, make the message visible again after this delay.
    /// Default: none, so it stays hidden until its visibility timeout ends.
    /// `Duration::ZERO` retries at once — with [`process_until_empty`], within the same
    /// run.
    ///
    /// ```
    /// use std::time::Duration;
    /// // Retry a failed message after 5 s instead of after the 30 s visibility timeout.
    /// let options = azstore::queue::WorkerOptions::default().retry_delay(Duration::from_secs(5));
    /// # let _ = options;
    /// ```
    pub fn retry_delay(mut self, v: Duration) -> Self {
        self.retry_delay = Some(v);
        self
    }

    /// How long [`process_until_empty`] waits, once the queue looks empty, for a message
    /// it failed to become visible again (default: no limit but the message's own
    /// visibility timeout or `retry_delay`, so a failing message is retried until it is
    /// poisoned). `Duration::ZERO` returns as soon as no message is visible; the result
    /// then says how many will reappear and when ([`WorkerStats::reappearing`],
    /// [`WorkerStats::reappear_within`]).
    ///
    /// ```
    /// use std::time::Duration;
    /// // Wait at most 10 s for a failed message to come back, then return.
    /// let options = azstore::queue::WorkerOptions::default().retry_wait(Duration::from_secs(10));
    /// assert_eq!(options.retry_wait, Some(Duration::from_secs(10)));
    /// ```
    pub fn retry_wait(mut self, v: Duration) -> Self {
        self.retry_wait = Some(v);
        self
    }
}
