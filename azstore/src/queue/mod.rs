//! Queue storage: [`QueueServiceClient`] → [`QueueClient`] → messages.
//!
//! The queue service has neither ETags nor leases. A message you receive is *hidden* for a
//! visibility timeout and then reappears for someone else, and every receive or update issues
//! a new **pop receipt** that invalidates the previous one. Delivery is therefore
//! *at least once*: a slow or crashed consumer's message is delivered again, so processing
//! must be idempotent. azstore makes the safe loop the easy one:
//!
//! * [`ReceivedMessage`] owns its current pop receipt; [`QueueClient::update_message`]
//!   replaces it in place and [`QueueClient::delete_message`] consumes the message. A receipt
//!   that went stale anyway (someone else took the message over) surfaces as a matchable
//!   400 [`ErrorCode::PopReceiptMismatch`](crate::ErrorCode::PopReceiptMismatch) or 404
//!   [`ErrorCode::MessageNotFound`](crate::ErrorCode::MessageNotFound).
//! * [`MessageGuard`] keeps a message hidden while your handler runs (the queue analogue of a
//!   self-renewing lease), tells you if it lost the message, deletes it on success and lets it
//!   reappear on failure.
//! * [`process`] runs a handler over a queue with bounded concurrency, poison-message handling
//!   and graceful shutdown; a fatal error (queue missing, authorization refused) stops it and
//!   reaches the caller. [`process_until_empty`] works through a queue and returns.
//!
//! Queue metadata, the queue ACL (stored access policies, one
//! [`SignedIdentifier`](crate::access_policy::SignedIdentifier) type for every service) and
//! service properties are **last writer wins**.
//!
//! ```no_run
//! # async fn f() -> azstore::Result<()> {
//! use std::time::Duration;
//! use azstore::StorageAccount;
//! use azstore::queue::QueueServiceClient;
//!
//! let queue = QueueServiceClient::new(&StorageAccount::from_env()?)?.queue("orders")?;
//! queue.create_if_not_exists().await?;
//! queue.put_message("order 42").await?;
//! if let Some(mut msg) = queue.receive_message(Duration::from_secs(30)).await? {
//!     // Need more time? The update replaces the receipt inside `msg`.
//!     queue.update_message(&mut msg, Duration::from_secs(60), None).await?;
//!     println!("{}", msg.content_str()?);
//!     queue.delete_message(msg).await?;
//! }
//! # Ok(()) }
//! ```

mod acl;
mod client;
mod guard;
mod message;
mod metadata;
mod names;
mod poison;
mod service;
mod telemetry;
mod worker;
mod worker_options;
mod xml;

pub use client::QueueClient;
pub use guard::{LostSignal, MessageGuard};
pub use message::{
    MAX_MESSAGE_SIZE, MAX_MESSAGES_PER_CALL, MAX_VISIBILITY_TIMEOUT, MessageEncoding, MessageId,
    PopReceipt, PutMessageOptions, QueueMessage, ReceivedMessage, SentMessage, TimeToLive,
    UpdateReceipt,
};
pub use metadata::QueueProperties;
pub use names::validate_queue_name;
pub use poison::POISON_METADATA;
pub use service::{QueueItem, QueueServiceClient};
pub use worker::{Delivery, HandlerError, WorkerHandle, WorkerStats, process, process_until_empty};
pub use worker_options::WorkerOptions;
