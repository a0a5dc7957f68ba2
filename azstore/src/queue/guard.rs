//! [`MessageGuard`]: keeps a received message hidden while a handler works on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::lease::GuardOptions;
use crate::lease::deadline::Deadline;
use crate::lease::keepalive::{self, Extend, Extended, Keeper, Kept, Plan};
use crate::queue::client::QueueClient;
use crate::queue::message::{QueueMessage, ReceivedMessage, check_range};

/// Checks `options` for a [`MessageGuard`] and returns its schedule: the visibility timeout
/// within 1 s – 7 days, extensions more often than it.
pub(crate) fn message_plan(options: &GuardOptions) -> Result<Plan> {
    check_range(options.visibility, 1, "guard visibility timeout")?;
    options.plan(options.visibility, Kept::Message)
}

/// A signal that flips once a [`MessageGuard`] can no longer be sure the message is still
/// hidden for its holder: an extension failed with `PopReceiptMismatch` / `MessageNotFound`
/// (another consumer got it, or it was deleted), or transient failures lasted as long as the
/// visibility timeout, or the message's invisibility ran out on the guard's clock (which
/// counts pauses and system suspend) without an extension. A handler that sees it should stop
/// and not commit side effects it cannot repeat. Cheap to clone.
///
/// ```no_run
/// # async fn demo(delivery: azstore::queue::Delivery) -> azstore::Result<()> {
/// let mut lost = delivery.lost_signal();
/// tokio::select! {
///     _ = lost.lost() => eprintln!("message lost: another consumer may have it; stopping"),
///     _ = async { /* handle delivery.content()? */ } => {}
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct LostSignal {
    keeper: Arc<Keeper>,
}

impl LostSignal {
    /// Whether the message was lost. Compares the clock with the end of the message's
    /// invisibility itself (and publishes the loss when it has passed), so it is right at once
    /// after a pause, before the guard's task has run.
    ///
    /// ```no_run
    /// # fn demo(delivery: azstore::queue::Delivery, rows: Vec<String>) {
    /// let lost = delivery.lost_signal();
    /// for row in rows {
    ///     if lost.is_lost() {
    ///         break; // someone else may be processing this message now
    ///     }
    ///     println!("import {row}");
    /// }
    /// # }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.keeper.is_lost()
    }

    /// Resolves when the message is lost; never resolves if the guard ends normally.
    ///
    /// ```no_run
    /// # async fn demo(delivery: azstore::queue::Delivery) {
    /// let mut lost = delivery.lost_signal();
    /// tokio::spawn(async move {
    ///     lost.lost().await;
    ///     eprintln!("lost the message");
    /// });
    /// # }
    /// ```
    pub async fn lost(&mut self) {
        self.keeper.lost().await;
    }
}

/// Keeps a received message invisible while a handler runs, by extending its visibility
/// timeout in a background task (Update Message, tracking the newest pop receipt each
/// returns), like a lease guard keeps a lease.
///
/// * [`MessageGuard::complete`] stops extending and deletes the message with the newest receipt.
/// * [`MessageGuard::abandon`] (or dropping the guard) stops extending; the message reappears
///   when its current timeout ends. [`MessageGuard::retry_after`] sets that moment.
/// * [`MessageGuard::lost_signal`] flips if an extension fails for good.
///
/// The task never aborts a request in flight: stopping waits for a running extension, so the
/// receipt used to delete is always the newest one.
///
/// ```no_run
/// # async fn f(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::lease::GuardOptions;
/// use azstore::queue::MessageGuard;
///
/// if let Some(msg) = queue.receive_message(Duration::from_secs(30)).await? {
///     let guard = MessageGuard::start(
///         &queue,
///         msg,
///         GuardOptions::default().visibility(Duration::from_secs(30)),
///     )?;
///     // ... long work on guard.message() ...
///     guard.complete().await?; // deleted with the newest receipt
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "dropping a MessageGuard stops extending the message's invisibility at once; keep it while the handler runs"]
pub struct MessageGuard {
    queue: QueueClient,
    message: QueueMessage,
    stop: watch::Sender<bool>,
    lost: LostSignal,
    extensions: Arc<AtomicU64>,
    task: Option<JoinHandle<ReceivedMessage>>,
}

impl MessageGuard {
    /// Starts guarding `message` (must run inside a tokio runtime), extending it by the
    /// options' [`visibility`](GuardOptions::visibility) each time. The first extension
    /// happens after the renew interval, or sooner if the message's current timeout (as
    /// received) ends before. If extensions keep failing transiently, the loss is signalled
    /// once the message may have become visible again. The end of the message's invisibility
    /// is measured on the options' [`clock`](GuardOptions::clock) (extensions are still
    /// scheduled on tokio's clock).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// if let Some(msg) = queue.receive_message(Duration::from_secs(60)).await? {
    ///     // Extend by 60 s at a time for as long as the work takes.
    ///     let guard = MessageGuard::start(&queue, msg, GuardOptions::default().visibility(Duration::from_secs(60)))?;
    ///     // ... hours of work ...
    ///     guard.complete().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn start(
        queue: &QueueClient,
        message: ReceivedMessage,
        options: GuardOptions,
    ) -> Result<MessageGuard> {
        let plan = message_plan(&options)?;
        require_runtime("MessageGuard::start")?;
        let (stop_tx, stop_rx) = watch::channel(false);
        // The deadline on the clock: when the request that last hid the message was sent, plus
        // the timeout it asked for. Unknown (a message built by hand): assume only one
        // interval of slack.
        let now = Instant::now();
        let clock = options.clock_ref().clone();
        let clock_now = clock.now();
        let left = message
            .hidden_until
            .map_or(plan.interval, |h| h.saturating_duration_since(now));
        let deadline = Deadline::new(clock, clock_now, now, Some(left));
        let keeper = Keeper::new(
            format!("message {}", message.id),
            deadline,
            Some(options.visibility),
        );
        let extensions = Arc::new(AtomicU64::new(0));
        let snapshot = message.message.clone();
        // Extend early enough even if the message was received with a shorter timeout.
        let first = now + plan.interval.min(left / 2);
        let mut extend = Extension {
            queue: queue.clone(),
            msg: message,
            visibility: options.visibility,
            extensions: extensions.clone(),
        };
        let task_keeper = keeper.clone();
        let task = tokio::spawn(async move {
            keepalive::run(task_keeper, plan, first, stop_rx, &mut extend).await;
            extend.msg
        });
        Ok(MessageGuard {
            queue: queue.clone(),
            message: snapshot,
            stop: stop_tx,
            lost: LostSignal { keeper },
            extensions,
            task: Some(task),
        })
    }

    /// The guarded message (id, content, dequeue count).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// println!("{} (delivery #{})", guard.message().content_str()?, guard.message().dequeue_count);
    /// # guard.complete().await }
    /// ```
    pub fn message(&self) -> &QueueMessage {
        &self.message
    }

    /// Whether the guard lost the message (see [`LostSignal::is_lost`]: decides from the
    /// clock as well, so it is right at once after a pause).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// if guard.is_lost() {
    ///     return guard.abandon().await; // do not commit: another consumer may have it
    /// }
    /// # guard.complete().await }
    /// ```
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// A signal to hand to the handler; flips when the message is lost.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// let lost = guard.lost_signal();
    /// let work = tokio::spawn(async move { !lost.is_lost() /* ... check it between steps ... */ });
    /// let _finished = work.await;
    /// # guard.complete().await }
    /// ```
    pub fn lost_signal(&self) -> LostSignal {
        self.lost.clone()
    }

    /// How many extensions succeeded so far.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// println!("kept hidden through {} extensions", guard.extensions());
    /// # guard.complete().await }
    /// ```
    pub fn extensions(&self) -> u64 {
        self.extensions.load(Ordering::Relaxed)
    }

    async fn stop(&mut self) -> Result<ReceivedMessage> {
        let _ = self.stop.send(true);
        let task = self
            .task
            .take()
            .ok_or_else(|| Error::new(ErrorKind::Service, "message guard already stopped"))?;
        let result = task.await.map_err(|e| {
            Error::new(
                ErrorKind::Service,
                format!("message guard task failed: {e}"),
            )
        });
        // The guard's work is over: no loss is published after this.
        self.lost.keeper.close();
        result
    }

    /// Stops extending and deletes the message with the newest receipt. Fails with
    /// `PopReceiptMismatch` / `MessageNotFound` if the message was lost meanwhile (another
    /// consumer may process it again: your handler must be idempotent).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// match guard.complete().await {
    ///     Err(e) if e.is_pop_receipt_stale() || e.is_not_found() => eprintln!("lost before the delete: {e}"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn complete(mut self) -> Result<()> {
        let msg = self.stop().await?;
        self.queue.delete_message(msg).await
    }

    /// Stops extending and hands back the message with its newest receipt.
    pub(crate) async fn into_received(mut self) -> Result<ReceivedMessage> {
        self.stop().await
    }

    /// Stops extending; the message reappears when its current visibility timeout ends
    /// (at most the guard's visibility timeout from now). No request is sent.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// // Not ours to handle after all: let another consumer have it when the timeout ends.
    /// guard.abandon().await?;
    /// # Ok(()) }
    /// ```
    pub async fn abandon(mut self) -> Result<()> {
        self.stop().await.map(drop)
    }

    /// Stops extending and makes the message visible again after `delay` (0 = now).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// use azstore::lease::GuardOptions;
    /// use azstore::queue::MessageGuard;
    /// let guard = MessageGuard::start(&queue, msg, GuardOptions::default())?;
    /// use std::time::Duration;
    /// // A downstream service is down: try this message again in 5 minutes.
    /// guard.retry_after(Duration::from_secs(300)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn retry_after(mut self, delay: Duration) -> Result<()> {
        let mut msg = self.stop().await?;
        self.queue.update_message(&mut msg, delay, None).await
    }
}

impl Drop for MessageGuard {
    fn drop(&mut self) {
        // The task sees this at its next wait and ends; the message then reappears when its
        // current visibility timeout runs out.
        let _ = self.stop.send(true);
        self.lost.keeper.close();
    }
}

/// Refuses (instead of panicking in `tokio::spawn`) when called outside a tokio runtime.
pub(crate) fn require_runtime(what: &str) -> Result<()> {
    tokio::runtime::Handle::try_current()
        .map(drop)
        .map_err(|_| Error::invalid_input(format!("{what} must be called inside a tokio runtime")))
}

fn is_definitive_loss(e: &Error) -> bool {
    matches!(
        e.error_code(),
        Some(ErrorCode::PopReceiptMismatch | ErrorCode::MessageNotFound | ErrorCode::QueueNotFound)
    ) || matches!(
        e.kind(),
        ErrorKind::NotFound | ErrorKind::Auth | ErrorKind::InvalidInput
    ) || e.status() == Some(400)
}

/// A message's extension (Update Message), as the keep-alive core repeats it; keeps the
/// newest pop receipt.
struct Extension {
    queue: QueueClient,
    msg: ReceivedMessage,
    visibility: Duration,
    extensions: Arc<AtomicU64>,
}

impl Extend for Extension {
    const INTERRUPTIBLE: bool = false;

    async fn extend(&mut self) -> Extended {
        match self
            .queue
            .update_message(&mut self.msg, self.visibility, None)
            .await
        {
            Ok(()) => {
                self.extensions.fetch_add(1, Ordering::Relaxed);
                Extended::Done
            }
            Err(e) if is_definitive_loss(&e) => Extended::Refused(e),
            Err(e) => Extended::Transient(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_runtime_is_an_error_not_a_panic() {
        let e = require_runtime("x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
    }

    #[test]
    fn options_are_checked() {
        let vis = |secs| GuardOptions::default().visibility(Duration::from_secs(secs));
        assert!(message_plan(&vis(30)).is_ok());
        assert!(message_plan(&vis(0)).is_err());
        assert!(message_plan(&vis(2).renew_every(Duration::from_secs(2))).is_err());
        assert_eq!(
            message_plan(&vis(3)).unwrap().interval,
            Duration::from_secs(1)
        );
    }
}
