//! [`MessageGuard`]: keeps a received message hidden while a handler works on it.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;

use crate::clock::Clock;
use crate::error::{Error, ErrorCode, ErrorKind, Result};
use crate::lease::deadline::{CLOCK_POLL, Deadline};
use crate::queue::client::QueueClient;
use crate::queue::message::{QueueMessage, ReceivedMessage, check_range};

/// Options of a [`MessageGuard`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[must_use]
pub struct GuardOptions {
    /// The visibility timeout each extension sets (1 s – 7 days). Default 30 s.
    pub visibility: Duration,
    /// How often to extend; default a third of `visibility`, so two extensions can fail
    /// transiently before the message could reappear.
    pub extend_every: Option<Duration>,
}

impl Default for GuardOptions {
    fn default() -> Self {
        GuardOptions {
            visibility: Duration::from_secs(30),
            extend_every: None,
        }
    }
}

impl GuardOptions {
    /// Options with this visibility timeout.
    pub fn visibility(visibility: Duration) -> GuardOptions {
        GuardOptions {
            visibility,
            extend_every: None,
        }
    }

    /// Sets the extension interval (must be shorter than the visibility timeout).
    pub fn extend_every(mut self, every: Duration) -> GuardOptions {
        self.extend_every = Some(every);
        self
    }

    fn interval(&self) -> Duration {
        self.extend_every.unwrap_or(self.visibility / 3)
    }

    pub(crate) fn check(&self) -> Result<()> {
        check_range(self.visibility, 1, "guard visibility timeout")?;
        let every = self.interval();
        if every.is_zero() || every >= self.visibility {
            return Err(Error::invalid_input(format!(
                "the guard must extend more often than its visibility timeout ({every:?} >= {:?})",
                self.visibility
            )));
        }
        Ok(())
    }
}

/// A signal that flips once a [`MessageGuard`] can no longer be sure the message is still
/// hidden for its holder: an extension failed with `PopReceiptMismatch` / `MessageNotFound`
/// (another consumer got it, or it was deleted), or transient failures lasted as long as the
/// visibility timeout, or the message's invisibility ran out on the guard's clock (which
/// counts pauses and system suspend) without an extension. A handler that sees it should stop
/// and not commit side effects it cannot repeat. Cheap to clone.
#[derive(Debug, Clone)]
pub struct LostSignal {
    rx: watch::Receiver<bool>,
    tx: Arc<watch::Sender<bool>>,
    deadline: Arc<Deadline>,
}

impl LostSignal {
    /// Whether the message was lost. Compares the clock with the end of the message's
    /// invisibility itself (and publishes the loss when it has passed), so it is right at once
    /// after a pause, before the guard's task has run.
    pub fn is_lost(&self) -> bool {
        self.deadline.expire_if_due(|since| {
            tracing::warn!(since_last_extension = ?since,
                "message guard: the message's invisibility ran out without an extension");
            self.tx.send_replace(true);
        });
        *self.rx.borrow()
    }

    /// Resolves when the message is lost; never resolves if the guard ends normally.
    pub async fn lost(&mut self) {
        loop {
            if self.is_lost() {
                return;
            }
            if self.rx.changed().await.is_err() {
                std::future::pending::<()>().await;
            }
        }
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
/// use azstore::queue::{GuardOptions, MessageGuard};
///
/// if let Some(msg) = queue.receive_message(Duration::from_secs(30)).await? {
///     let guard = MessageGuard::start(&queue, msg, GuardOptions::visibility(Duration::from_secs(30)))?;
///     // ... long work on guard.message() ...
///     guard.complete().await?; // deleted with the newest receipt
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct MessageGuard {
    queue: QueueClient,
    message: QueueMessage,
    stop: watch::Sender<bool>,
    lost: LostSignal,
    extensions: Arc<AtomicU64>,
    task: Option<JoinHandle<ReceivedMessage>>,
}

impl MessageGuard {
    /// Starts guarding `message` (must run inside a tokio runtime). The first extension
    /// happens after `extend_every`, or sooner if the message's current timeout (as
    /// received) ends before. If extensions keep failing transiently, the loss is signalled
    /// once the message may have become visible again.
    pub fn start(
        queue: &QueueClient,
        message: ReceivedMessage,
        options: GuardOptions,
    ) -> Result<MessageGuard> {
        MessageGuard::start_with_clock(queue, message, options, Clock::system())
    }

    /// [`start`](Self::start), measuring the end of the message's invisibility on `clock`
    /// instead of [`Clock::system`] (extensions are still scheduled on tokio's clock): for
    /// tests, with a [`ManualClock`](crate::clock::ManualClock).
    pub fn start_with_clock(
        queue: &QueueClient,
        message: ReceivedMessage,
        options: GuardOptions,
        clock: Clock,
    ) -> Result<MessageGuard> {
        options.check()?;
        require_runtime("MessageGuard::start")?;
        let (stop_tx, stop_rx) = watch::channel(false);
        let (lost_tx, lost_rx) = watch::channel(false);
        let lost_tx = Arc::new(lost_tx);
        // The deadline on `clock`: when the request that last hid the message was sent, plus
        // the timeout it asked for. Unknown (a message built by hand): assume only one
        // interval of slack.
        let now = Instant::now();
        let clock_now = clock.now();
        let left = message
            .hidden_until
            .map_or(options.interval(), |h| h.saturating_duration_since(now));
        let deadline = Arc::new(Deadline::new(clock, clock_now, now, Some(left)));
        let extensions = Arc::new(AtomicU64::new(0));
        let snapshot = message.message.clone();
        let task = tokio::spawn(keep_hidden(
            queue.clone(),
            message,
            options,
            stop_rx,
            lost_tx.clone(),
            deadline.clone(),
            extensions.clone(),
        ));
        Ok(MessageGuard {
            queue: queue.clone(),
            message: snapshot,
            stop: stop_tx,
            lost: LostSignal {
                rx: lost_rx,
                tx: lost_tx,
                deadline,
            },
            extensions,
            task: Some(task),
        })
    }

    /// The guarded message (id, content, dequeue count).
    pub fn message(&self) -> &QueueMessage {
        &self.message
    }

    /// Whether the guard lost the message (see [`LostSignal::is_lost`]: decides from the
    /// clock as well, so it is right at once after a pause).
    pub fn is_lost(&self) -> bool {
        self.lost.is_lost()
    }

    /// A signal to hand to the handler; flips when the message is lost.
    pub fn lost_signal(&self) -> LostSignal {
        self.lost.clone()
    }

    /// How many extensions succeeded so far.
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
        self.lost.deadline.close(|| {});
        result
    }

    /// Stops extending and deletes the message with the newest receipt. Fails with
    /// `PopReceiptMismatch` / `MessageNotFound` if the message was lost meanwhile (another
    /// consumer may process it again: your handler must be idempotent).
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
    pub async fn abandon(mut self) -> Result<()> {
        self.stop().await.map(drop)
    }

    /// Stops extending and makes the message visible again after `delay` (0 = now).
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
        self.lost.deadline.close(|| {});
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

async fn keep_hidden(
    queue: QueueClient,
    mut msg: ReceivedMessage,
    options: GuardOptions,
    mut stop: watch::Receiver<bool>,
    lost: Arc<watch::Sender<bool>>,
    deadline: Arc<Deadline>,
    extensions: Arc<AtomicU64>,
) -> ReceivedMessage {
    let every = options.interval();
    let id = msg.id.clone();
    let ran_out = |since: Duration| {
        tracing::warn!(message_id = %id, since_last_extension = ?since,
            "message guard could not extend visibility in time; message may reappear");
        lost.send_replace(true);
    };
    // Extend early enough even if the message was received with a shorter timeout.
    let mut next = Instant::now() + every.min(deadline.remaining() / 2);
    loop {
        if *stop.borrow() {
            return msg;
        }
        // Wake for the next extension, at the deadline, and at least every CLOCK_POLL (time
        // spent suspended is not on tokio's clock).
        let wake = next.min(Instant::now() + deadline.remaining().min(CLOCK_POLL));
        tokio::select! {
            _ = stop.changed() => return msg,
            _ = tokio::time::sleep_until(wake) => {}
        }
        // Past the deadline (e.g. this process was paused) the message may have been received
        // by another consumer meanwhile: report the loss rather than extend.
        if deadline.expire_if_due(ran_out) {
            return msg;
        }
        if Instant::now() < next {
            continue;
        }
        let sent_at = deadline.now();
        let sent_tokio = Instant::now();
        match queue
            .update_message(&mut msg, options.visibility, None)
            .await
        {
            Ok(()) => {
                extensions.fetch_add(1, Ordering::Relaxed);
                if !deadline.confirm(sent_at, sent_tokio, options.visibility, ran_out) {
                    return msg;
                }
                next = sent_tokio + every;
            }
            Err(e) if is_definitive_loss(&e) => {
                deadline.close(|| {
                    tracing::warn!(message_id = %msg.id, error = %e, "message guard lost the message");
                    lost.send_replace(true);
                });
                return msg;
            }
            Err(e) => {
                if deadline.expire_if_due(ran_out) {
                    return msg;
                }
                tracing::debug!(message_id = %msg.id, error = %e, "visibility extension failed, retrying");
                next = Instant::now() + (every / 4).max(Duration::from_millis(50));
            }
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
        assert!(
            GuardOptions::visibility(Duration::from_secs(30))
                .check()
                .is_ok()
        );
        assert!(GuardOptions::visibility(Duration::ZERO).check().is_err());
        assert!(
            GuardOptions::visibility(Duration::from_secs(2))
                .extend_every(Duration::from_secs(2))
                .check()
                .is_err()
        );
        assert_eq!(
            GuardOptions::visibility(Duration::from_secs(3)).interval(),
            Duration::from_secs(1)
        );
    }
}
