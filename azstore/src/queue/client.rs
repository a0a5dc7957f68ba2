//! The queue client: create and delete a queue, and its messages.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

use crate::account::{Service, StorageAccount};
use crate::error::{Error, ErrorCode, Result};
use crate::http::{ClientOptions, Method, Pipeline, Request};
use crate::queue::message::{
    MessageEncoding, MessageId, PopReceipt, PutMessageOptions, QueueMessage, ReceivedMessage,
    SentMessage, UpdateReceipt, check_count, check_range,
};
use crate::queue::names::validate_queue_name;
use crate::queue::xml;
use crate::storage::StorageRequest;

/// One queue. Cheap to clone.
///
/// Queue metadata, the ACL and service properties have no ETag: concurrent writers of those
/// are **last writer wins**. Messages have no ETag either; their concurrency control is the
/// pop receipt and the visibility timeout (see [`ReceivedMessage`] and
/// [`MessageGuard`](crate::queue::MessageGuard)).
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::queue::QueueClient;
/// let queue = QueueClient::new(&account, "thumbnails")?;
/// queue.create_if_not_exists().await?;
/// queue.put_message("images/cat.png").await?;
/// if let Some(msg) = queue.receive_message(Duration::from_secs(60)).await? {
///     println!("resize {}", msg.content_str()?);
///     queue.delete_message(msg).await?; // done: it will not be delivered again
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct QueueClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
    pub(crate) encoding: MessageEncoding,
}

named_client!(QueueClient, "queue");

impl QueueClient {
    /// A client for `name` on `account` with default options (name validated, no request
    /// sent; messages in [`MessageEncoding::Raw`]).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// let account = azstore::StorageAccount::from_env()?; // AZURE_STORAGE_CONNECTION_STRING
    /// let queue = azstore::queue::QueueClient::new(&account, "orders")?;
    /// # let _ = queue; Ok(()) }
    /// ```
    pub fn new(account: &StorageAccount, name: &str) -> Result<QueueClient> {
        let pipeline = Pipeline::new(account, Service::Queue, ClientOptions::default())?;
        QueueClient::on(&pipeline, name, MessageEncoding::default())
    }

    /// The message encoding of this client.
    ///
    /// ```no_run
    /// # fn demo(queue: azstore::queue::QueueClient) {
    /// use azstore::queue::MessageEncoding;
    /// assert_eq!(queue.encoding(), MessageEncoding::Raw); // the default
    /// # }
    /// ```
    pub fn encoding(&self) -> MessageEncoding {
        self.encoding
    }

    /// The same queue with another message encoding (default [`MessageEncoding::Raw`]).
    /// Choose [`MessageEncoding::Base64`] for binary content or to talk to consumers that
    /// expect Base64 (older SDKs, Azure Functions queue triggers).
    ///
    /// ```no_run
    /// # fn demo(queue: azstore::queue::QueueClient) {
    /// use azstore::queue::MessageEncoding;
    /// let for_functions = queue.with_encoding(MessageEncoding::Base64);
    /// # let _ = for_functions; }
    /// ```
    #[must_use]
    pub fn with_encoding(mut self, v: MessageEncoding) -> Self {
        self.encoding = v;
        self
    }

    /// A client for another queue of the same account (validated, no request sent), with
    /// this client's encoding.
    ///
    /// ```no_run
    /// # fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// let poison = queue.sibling(&format!("{}-poison", queue.name()))?;
    /// # let _ = poison; Ok(()) }
    /// ```
    pub fn sibling(&self, name: &str) -> Result<QueueClient> {
        QueueClient::on(&self.pipeline, name, self.encoding)
    }

    /// A client for the queue `name` (validated) on `pipeline`.
    pub(crate) fn on(
        pipeline: &Pipeline,
        name: &str,
        encoding: MessageEncoding,
    ) -> Result<QueueClient> {
        validate_queue_name(name)?;
        Ok(QueueClient {
            pipeline: pipeline.clone(),
            name: name.into(),
            encoding,
        })
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        Request::new(method, &self.name)
    }

    fn messages_path(&self) -> String {
        format!("{}/messages", self.name)
    }

    fn message_path(&self, id: &MessageId) -> Result<String> {
        if id.as_str().is_empty() || id.as_str().contains(['/', '\\']) {
            return Err(Error::invalid_input(format!(
                "invalid message id {}: a message id is one path segment",
                crate::redact::quoted(id.as_str(), 256)
            )));
        }
        crate::names::refuse_dot_segments("message id", id.as_str())?;
        Ok(format!("{}/messages/{}", self.name, id.as_str()))
    }

    /// Create Queue with metadata. Returns `true` when this call created it and `false` when
    /// it already existed *with identical metadata* (the service answers 204). With different
    /// metadata it fails with 409 `QueueAlreadyExists`.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::collections::BTreeMap;
    /// let metadata = BTreeMap::from([("team".to_string(), "imaging".to_string())]);
    /// if queue.create(&metadata).await? {
    ///     println!("created {}", queue.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, metadata: &BTreeMap<String, String>) -> Result<bool> {
        let resp = self
            .pipeline
            .send(self.request(Method::Put).metadata(metadata))
            .await?;
        Ok(resp.status == 201)
    }

    /// Creates the queue unless it exists (whatever its metadata). Returns `true` when this
    /// call created it.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// queue.create_if_not_exists().await?; // safe to run at every start-up
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        match self.create(&BTreeMap::new()).await {
            Ok(created) => Ok(created),
            Err(e) if e.error_code() == Some(&ErrorCode::QueueAlreadyExists) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Delete Queue (and all its messages). 404 `QueueNotFound` if absent.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// queue.delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<()> {
        self.pipeline.send(self.request(Method::Delete)).await?;
        Ok(())
    }

    /// Deletes the queue if it exists. Returns `true` when this call deleted it.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// if !queue.delete_if_exists().await? {
    ///     println!("{} did not exist", queue.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        crate::error::found(self.delete().await)
    }

    /// Clear Messages: deletes every message of the queue (including hidden ones); the
    /// queue itself stays.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// queue.clear_messages().await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear_messages(&self) -> Result<()> {
        self.pipeline
            .send(Request::new(Method::Delete, &self.messages_path()))
            .await?;
        Ok(())
    }

    fn message_body(&self, content: &[u8]) -> Result<String> {
        let text = self.encoding.encode(content)?;
        Ok(format!(
            "<?xml version=\"1.0\" encoding=\"utf-8\"?><QueueMessage><MessageText>{}</MessageText></QueueMessage>",
            xml::escape(&text)
        ))
    }

    /// Put Message with default options (visible now, the service's default 7-day TTL).
    ///
    /// Content is encoded with this client's [`MessageEncoding`]; more than 64 KiB once
    /// encoded is refused with `InvalidInput` before sending. Not retried on an ambiguous
    /// failure (it would enqueue a duplicate).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// let job = serde_json::json!({ "image": "cat.png", "width": 128 });
    /// let sent = queue.put_message(job.to_string()).await?;
    /// println!("queued as {}", sent.id.as_str());
    /// # Ok(()) }
    /// ```
    pub async fn put_message(&self, content: impl AsRef<[u8]>) -> Result<SentMessage> {
        self.put_message_with(content, &PutMessageOptions::default())
            .await
    }

    /// Put Message with a visibility delay and/or a time to live.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::queue::{PutMessageOptions, TimeToLive};
    /// // A reminder that appears in 15 minutes and never expires.
    /// let options = PutMessageOptions::default()
    ///     .visibility_delay(Duration::from_secs(15 * 60))
    ///     .time_to_live(TimeToLive::Never);
    /// queue.put_message_with("send reminder 7", &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_message_with(
        &self,
        content: impl AsRef<[u8]>,
        options: &PutMessageOptions,
    ) -> Result<SentMessage> {
        let query = options.query()?;
        let body = self.message_body(content.as_ref())?;
        let mut req = Request::new(Method::Post, &self.messages_path());
        for (k, v) in query {
            req = req.query(k, v);
        }
        let resp = self
            .pipeline
            .send(
                req.body(body, "application/xml")
                    .intent(crate::http::Intent::NonIdempotent),
            )
            .await?;
        let root = xml::parse_document(&resp.body, "QueueMessagesList", "Put Message")?;
        let msg = root
            .child("QueueMessage")
            .ok_or_else(|| Error::decode("malformed response: no <QueueMessage>"))?;
        SentMessage::from_xml(msg)
    }

    /// Get Messages: dequeues up to `count` (1–32) messages and hides them for `visibility`
    /// (1 s – 7 days). Each comes with a fresh pop receipt and an incremented dequeue count.
    ///
    /// Not retried on an ambiguous failure: a lost response leaves its messages hidden until
    /// their timeout (they are not lost).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// for msg in queue.receive_messages(32, Duration::from_secs(120)).await? {
    ///     if msg.dequeue_count > 5 {
    ///         eprintln!("{} keeps failing; dropping it", msg.id.as_str());
    ///     } else {
    ///         println!("handling {}", msg.content_str()?);
    ///     }
    ///     queue.delete_message(msg).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn receive_messages(
        &self,
        count: u8,
        visibility: Duration,
    ) -> Result<Vec<ReceivedMessage>> {
        let count = check_count(count)?;
        let vis = check_range(visibility, 1, "visibility timeout")?;
        let req = Request::new(Method::Get, &self.messages_path())
            .query("numofmessages", count.to_string())
            .query("visibilitytimeout", vis.to_string())
            .intent(crate::http::Intent::NonIdempotent)
            .response_limit(crate::http::request::ResponseLimit::QUEUE_BATCH);
        let sent_at = tokio::time::Instant::now();
        let resp = self.pipeline.send(req).await?;
        let root = xml::parse_document(&resp.body, "QueueMessagesList", "Get Messages")?;
        root.children_named("QueueMessage")
            .map(|m| {
                let mut msg = ReceivedMessage::from_xml(m, self.encoding)?;
                msg.hidden_until = Some(sent_at + Duration::from_secs(vis));
                Ok(msg)
            })
            .collect()
    }

    /// Get Messages for a single message; `None` when none is visible.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// match queue.receive_message(Duration::from_secs(30)).await? {
    ///     Some(msg) => {
    ///         println!("{}", msg.content_str()?);
    ///         queue.delete_message(msg).await?;
    ///     }
    ///     None => tokio::time::sleep(Duration::from_secs(1)).await, // empty: poll later
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn receive_message(&self, visibility: Duration) -> Result<Option<ReceivedMessage>> {
        Ok(self
            .receive_messages(1, visibility)
            .await?
            .into_iter()
            .next())
    }

    /// Peek Messages: up to `count` (1–32) visible messages, without hiding them or changing
    /// their dequeue count. No pop receipt: peeked messages cannot be updated or deleted.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// for msg in queue.peek_messages(5).await? {
    ///     println!("next up: {} (delivered {} times)", msg.content_str()?, msg.dequeue_count);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn peek_messages(&self, count: u8) -> Result<Vec<QueueMessage>> {
        let count = check_count(count)?;
        let req = Request::new(Method::Get, &self.messages_path())
            .query("peekonly", "true")
            .query("numofmessages", count.to_string())
            .response_limit(crate::http::request::ResponseLimit::QUEUE_BATCH);
        let resp = self.pipeline.send(req).await?;
        let root = xml::parse_document(&resp.body, "QueueMessagesList", "Peek Messages")?;
        root.children_named("QueueMessage")
            .map(|m| QueueMessage::from_xml(m, self.encoding))
            .collect()
    }

    /// Update Message: sets a new visibility timeout (0 s – 7 days from now) and, with
    /// `content`, new content. On success the message's pop receipt and time-next-visible
    /// are **replaced** by the new ones (the old receipt no longer works). On failure they
    /// are left unchanged; a 400 `PopReceiptMismatch` or 404 `MessageNotFound` means
    /// someone else dequeued or deleted the message.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// if let Some(mut msg) = queue.receive_message(Duration::from_secs(30)).await? {
    ///     // Record progress in the message and keep it hidden for 5 more minutes.
    ///     queue.update_message(&mut msg, Duration::from_secs(300), Some(b"step 2 of 3")).await?;
    ///     // `msg` now carries the new receipt: deleting it works.
    ///     queue.delete_message(msg).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn update_message(
        &self,
        message: &mut ReceivedMessage,
        visibility: Duration,
        content: Option<&[u8]>,
    ) -> Result<()> {
        let sent_at = tokio::time::Instant::now();
        let receipt = self
            .update_message_with_receipt(
                &message.message.id,
                &message.pop_receipt,
                visibility,
                content,
            )
            .await?;
        if let Some(c) = content {
            message.message.text = self.encoding.encode(c)?;
        }
        message.pop_receipt = receipt.pop_receipt;
        message.next_visible_on = receipt.next_visible_on;
        message.hidden_until = Some(sent_at + Duration::from_secs(visibility.as_secs()));
        Ok(())
    }

    /// Update Message by id and receipt (the low-level form of
    /// [`QueueClient::update_message`]). Returns the new receipt, which replaces `receipt`.
    ///
    /// Not retried on an ambiguous failure: the first attempt may have changed the receipt,
    /// and a retry with the old one would fail with `PopReceiptMismatch`.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// let sent = queue.put_message("draft").await?;
    /// // Replace the content of a message nobody has received yet.
    /// let receipt = queue
    ///     .update_message_with_receipt(&sent.id, &sent.pop_receipt, Duration::ZERO, Some(b"final"))
    ///     .await?;
    /// queue.delete_message_with_receipt(&sent.id, &receipt.pop_receipt).await?;
    /// # Ok(()) }
    /// ```
    pub async fn update_message_with_receipt(
        &self,
        id: &MessageId,
        receipt: &PopReceipt,
        visibility: Duration,
        content: Option<&[u8]>,
    ) -> Result<UpdateReceipt> {
        let vis = check_range(visibility, 0, "visibility timeout")?;
        let mut req = Request::new(Method::Put, &self.message_path(id)?)
            .query("popreceipt", receipt.as_str())
            .query("visibilitytimeout", vis.to_string())
            .intent(crate::http::Intent::NonIdempotent);
        if let Some(c) = content {
            req = req.body(self.message_body(c)?, "application/xml");
        }
        let resp = self.pipeline.send(req).await?;
        Ok(UpdateReceipt {
            pop_receipt: PopReceipt::new(resp.headers.require("x-ms-popreceipt")?),
            next_visible_on: resp.headers.date("x-ms-time-next-visible"),
        })
    }

    /// Delete Message with the message's current receipt, consuming it. 400
    /// `PopReceiptMismatch` / 404 `MessageNotFound` mean another consumer took it over or
    /// it is already gone.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// if let Some(msg) = queue.receive_message(Duration::from_secs(30)).await? {
    ///     match queue.delete_message(msg).await {
    ///         Err(e) if e.is_pop_receipt_stale() => eprintln!("took too long: redelivered to another consumer"),
    ///         other => other?,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_message(&self, message: ReceivedMessage) -> Result<()> {
        self.delete_message_with_receipt(&message.message.id, &message.pop_receipt)
            .await
    }

    /// Delete Message by id and receipt (the low-level form). Not retried on an ambiguous
    /// failure, so a `MessageNotFound` always means someone else deleted it.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// // Take back a message just sent (its first receipt works until someone receives it).
    /// let sent = queue.put_message("oops").await?;
    /// queue.delete_message_with_receipt(&sent.id, &sent.pop_receipt).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_message_with_receipt(
        &self,
        id: &MessageId,
        receipt: &PopReceipt,
    ) -> Result<()> {
        let req = Request::new(Method::Delete, &self.message_path(id)?)
            .query("popreceipt", receipt.as_str())
            .intent(crate::http::Intent::NonIdempotent);
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Content bytes of a message, decoded with this client's encoding (convenience for
    /// handlers).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// for msg in queue.peek_messages(1).await? {
    ///     let bytes = queue.decode(&msg)?;
    ///     println!("{} bytes", bytes.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn decode(&self, message: &QueueMessage) -> Result<Bytes> {
        self.encoding.decode(&message.text)
    }
}
