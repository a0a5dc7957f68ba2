//! The queue clients: service → queue → messages.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::Stream;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

use crate::account::{Service, StorageAccount};
use crate::error::{Error, ErrorCode, Result};
use crate::http::{ClientOptions, Method, Pipeline, Request};
use crate::queue::message::{
    MessageEncoding, MessageId, PopReceipt, PutMessageOptions, QueueMessage, ReceivedMessage,
    SentMessage, UpdateReceipt, check_count, check_range,
};
use crate::queue::names::validate_queue_name;
use crate::queue::xml;

/// The Queue service of one account. Cheap to clone.
#[derive(Debug, Clone)]
pub struct QueueServiceClient {
    pipeline: Pipeline,
    encoding: MessageEncoding,
}

impl QueueServiceClient {
    /// A client with default options.
    pub fn new(account: &StorageAccount) -> Result<QueueServiceClient> {
        QueueServiceClient::with_options(account, ClientOptions::default())
    }

    /// A client with custom retry and timeout options.
    pub fn with_options(
        account: &StorageAccount,
        options: ClientOptions,
    ) -> Result<QueueServiceClient> {
        Ok(QueueServiceClient {
            pipeline: Pipeline::new(account, Service::Queue, options)?,
            encoding: MessageEncoding::default(),
        })
    }

    /// The message encoding given to the queue clients made from this one
    /// (default [`MessageEncoding::Raw`], like the official v12 SDKs).
    pub fn with_encoding(mut self, encoding: MessageEncoding) -> QueueServiceClient {
        self.encoding = encoding;
        self
    }

    /// A client for the queue `name` (validated, no request sent).
    pub fn queue(&self, name: &str) -> Result<QueueClient> {
        validate_queue_name(name)?;
        Ok(QueueClient {
            pipeline: self.pipeline.clone(),
            name: name.into(),
            encoding: self.encoding,
        })
    }

    /// The underlying pipeline (for operations azstore does not wrap).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// One page of List Queues. `marker` is the previous page's `next_marker`;
    /// `max_results` is 1–5000 (the service default is 5000). Metadata is included.
    pub async fn list_queues_page(
        &self,
        prefix: Option<&str>,
        marker: Option<&str>,
        max_results: Option<u32>,
    ) -> Result<QueuePage> {
        let mut req = Request::new(Method::Get, "")
            .query("comp", "list")
            .query("include", "metadata");
        if let Some(p) = prefix {
            req = req.query("prefix", p);
        }
        if let Some(m) = marker {
            req = req.query("marker", m);
        }
        if let Some(n) = max_results {
            if !(1..=5000).contains(&n) {
                return Err(Error::invalid_input(format!(
                    "List Queues returns 1-5000 queues per page, asked for {n}"
                )));
            }
            req = req.query("maxresults", n.to_string());
        }
        let resp = self.pipeline.send(req).await?;
        QueuePage::parse(&resp.body)
    }

    /// All queues whose name starts with `prefix`, following continuation markers lazily,
    /// `page_size` at a time (`None`: the service default).
    ///
    /// ```no_run
    /// # async fn f(svc: azstore::queue::QueueServiceClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let names: Vec<String> = svc
    ///     .list_queues(Some("orders-"), None)
    ///     .map_ok(|q| q.name)
    ///     .try_collect()
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn list_queues(
        &self,
        prefix: Option<&str>,
        page_size: Option<u32>,
    ) -> impl Stream<Item = Result<QueueItem>> + Send + 'static {
        struct State {
            client: QueueServiceClient,
            prefix: Option<String>,
            page_size: Option<u32>,
            marker: Option<String>,
            buffered: std::vec::IntoIter<QueueItem>,
            done: bool,
        }
        let state = State {
            client: self.clone(),
            prefix: prefix.map(str::to_string),
            page_size,
            marker: None,
            buffered: Vec::new().into_iter(),
            done: false,
        };
        futures_util::stream::try_unfold(state, |mut st| async move {
            loop {
                if let Some(item) = st.buffered.next() {
                    return Ok(Some((item, st)));
                }
                if st.done {
                    return Ok(None);
                }
                let page = st
                    .client
                    .list_queues_page(st.prefix.as_deref(), st.marker.as_deref(), st.page_size)
                    .await?;
                st.marker = page.next_marker;
                st.done = st.marker.is_none();
                st.buffered = page.queues.into_iter();
            }
        })
    }
}

/// One page of List Queues.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QueuePage {
    /// The queues of this page.
    pub queues: Vec<QueueItem>,
    /// Marker of the next page; `None` on the last page.
    pub next_marker: Option<String>,
}

/// A queue in a listing.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueItem {
    /// Queue name.
    pub name: String,
    /// Queue metadata.
    pub metadata: BTreeMap<String, String>,
}

impl QueuePage {
    fn parse(body: &[u8]) -> Result<QueuePage> {
        let root = xml::parse_document(body, "EnumerationResults", "List Queues")?;
        let queues = match root.child("Queues") {
            None => Vec::new(),
            Some(qs) => qs
                .children_named("Queue")
                .map(|q| {
                    Ok(QueueItem {
                        name: q.require_text("Name")?.to_string(),
                        metadata: q
                            .child("Metadata")
                            .map(|m| {
                                m.children
                                    .iter()
                                    .map(|kv| (kv.name.clone(), kv.text.clone()))
                                    .collect()
                            })
                            .unwrap_or_default(),
                    })
                })
                .collect::<Result<Vec<_>>>()?,
        };
        let next_marker = root
            .child_text("NextMarker")
            .map(str::trim)
            .filter(|m| !m.is_empty())
            .map(str::to_string);
        Ok(QueuePage {
            queues,
            next_marker,
        })
    }
}

/// Get Queue Properties: the approximate message count and the metadata.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueProperties {
    /// Approximate number of messages (may lag; includes invisible ones).
    pub approximate_message_count: u64,
    /// Queue metadata.
    pub metadata: BTreeMap<String, String>,
}

/// A stored access policy (one entry of the queue ACL).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct SignedIdentifier {
    /// Policy id (1–64 characters), referenced by SAS tokens as `si=`.
    pub id: String,
    /// Start of validity.
    pub start: Option<OffsetDateTime>,
    /// End of validity.
    pub expiry: Option<OffsetDateTime>,
    /// Permissions, a subset of `raup` (read, add, update, process) in that order.
    pub permissions: String,
}

impl SignedIdentifier {
    /// A policy with an id and permissions (no start or expiry).
    pub fn new(id: impl Into<String>, permissions: impl Into<String>) -> SignedIdentifier {
        SignedIdentifier {
            id: id.into(),
            start: None,
            expiry: None,
            permissions: permissions.into(),
        }
    }

    /// Sets the start.
    #[must_use]
    pub fn start(mut self, t: OffsetDateTime) -> SignedIdentifier {
        self.start = Some(t);
        self
    }

    /// Sets the expiry.
    #[must_use]
    pub fn expiry(mut self, t: OffsetDateTime) -> SignedIdentifier {
        self.expiry = Some(t);
        self
    }
}

fn iso(t: OffsetDateTime) -> Result<String> {
    t.to_offset(time::UtcOffset::UTC)
        .replace_nanosecond(0)
        .map_err(|e| Error::invalid_input(e.to_string()))?
        .format(&Rfc3339)
        .map_err(|e| Error::invalid_input(format!("cannot format {t}: {e}")))
}

/// One queue. Cheap to clone.
///
/// Queue metadata, the ACL and service properties have no ETag: concurrent writers of those
/// are **last writer wins**. Messages have no ETag either; their concurrency control is the
/// pop receipt and the visibility timeout (see [`ReceivedMessage`] and
/// [`MessageGuard`](crate::queue::MessageGuard)).
#[derive(Debug, Clone)]
pub struct QueueClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
    pub(crate) encoding: MessageEncoding,
}

impl QueueClient {
    /// A client for `name` on `account` with default options.
    pub fn new(account: &StorageAccount, name: &str) -> Result<QueueClient> {
        QueueServiceClient::new(account)?.queue(name)
    }

    /// The queue name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The message encoding of this client.
    pub fn encoding(&self) -> MessageEncoding {
        self.encoding
    }

    /// The same queue with another message encoding.
    #[must_use]
    pub fn with_encoding(mut self, encoding: MessageEncoding) -> QueueClient {
        self.encoding = encoding;
        self
    }

    /// A client for another queue of the same account (validated, no request sent).
    pub fn sibling(&self, name: &str) -> Result<QueueClient> {
        validate_queue_name(name)?;
        Ok(QueueClient {
            pipeline: self.pipeline.clone(),
            name: name.into(),
            encoding: self.encoding,
        })
    }

    /// The underlying pipeline.
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The queue URL (without credentials).
    pub fn url(&self) -> String {
        self.pipeline.url_of(&self.name)
    }

    fn request(&self, method: Method) -> Request {
        Request::new(method, &self.name)
    }

    fn messages_path(&self) -> String {
        format!("{}/messages", self.name)
    }

    fn message_path(&self, id: &MessageId) -> Result<String> {
        if id.as_str().is_empty() || id.as_str().contains('/') {
            return Err(Error::invalid_input(format!(
                "invalid message id {:?}",
                id.as_str()
            )));
        }
        Ok(format!("{}/messages/{}", self.name, id.as_str()))
    }

    /// Create Queue with metadata. Returns `true` when this call created it and `false` when
    /// it already existed *with identical metadata* (the service answers 204). With different
    /// metadata it fails with 409 `QueueAlreadyExists`.
    pub async fn create(&self, metadata: &BTreeMap<String, String>) -> Result<bool> {
        let resp = self
            .pipeline
            .send(self.request(Method::Put).metadata(metadata))
            .await?;
        Ok(resp.status == 201)
    }

    /// Creates the queue unless it exists (whatever its metadata). Returns `true` when this
    /// call created it.
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        match self.create(&BTreeMap::new()).await {
            Ok(created) => Ok(created),
            Err(e) if e.error_code() == Some(&ErrorCode::QueueAlreadyExists) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Delete Queue (and all its messages). 404 `QueueNotFound` if absent.
    pub async fn delete(&self) -> Result<()> {
        self.pipeline.send(self.request(Method::Delete)).await?;
        Ok(())
    }

    /// Deletes the queue if it exists. Returns `true` when this call deleted it.
    pub async fn delete_if_exists(&self) -> Result<bool> {
        crate::error::succeeded_unless(self.delete().await, |e| e.is_not_found())
    }

    /// Get Queue Metadata: approximate message count and metadata.
    pub async fn get_properties(&self) -> Result<QueueProperties> {
        let resp = self
            .pipeline
            .send(self.request(Method::Get).query("comp", "metadata"))
            .await?;
        Ok(QueueProperties {
            approximate_message_count: resp
                .headers
                .parse("x-ms-approximate-messages-count")?
                .unwrap_or(0),
            metadata: resp.headers.metadata(),
        })
    }

    /// Whether the queue exists.
    pub async fn exists(&self) -> Result<bool> {
        crate::error::succeeded_unless(self.get_properties().await, |e| e.is_not_found())
    }

    /// Set Queue Metadata, replacing all metadata. **Last writer wins**: there is no
    /// condition to make this safe against a concurrent writer.
    pub async fn set_metadata(&self, metadata: &BTreeMap<String, String>) -> Result<()> {
        self.pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "metadata")
                    .metadata(metadata),
            )
            .await?;
        Ok(())
    }

    /// Get Queue ACL: the stored access policies.
    pub async fn get_access_policy(&self) -> Result<Vec<SignedIdentifier>> {
        let resp = self
            .pipeline
            .send(self.request(Method::Get).query("comp", "acl"))
            .await?;
        if resp.body.iter().all(u8::is_ascii_whitespace) {
            return Ok(Vec::new());
        }
        let root = xml::parse_document(&resp.body, "SignedIdentifiers", "Get Queue ACL")?;
        root.children_named("SignedIdentifier")
            .map(|si| {
                let policy = si.child("AccessPolicy");
                let date = |name: &str| -> Result<Option<OffsetDateTime>> {
                    match policy.and_then(|p| p.child_text(name)).map(str::trim) {
                        None | Some("") => Ok(None),
                        Some(s) => crate::time_fmt::parse_iso8601(s).map(Some).ok_or_else(|| {
                            Error::decode(format!("malformed response: bad <{name}> {s:?}"))
                        }),
                    }
                };
                Ok(SignedIdentifier {
                    id: si.require_text("Id")?.to_string(),
                    start: date("Start")?,
                    expiry: date("Expiry")?,
                    permissions: policy
                        .and_then(|p| p.child_text("Permission"))
                        .unwrap_or_default()
                        .to_string(),
                })
            })
            .collect()
    }

    /// Set Queue ACL, replacing all stored access policies (at most 5). **Last writer
    /// wins**.
    pub async fn set_access_policy(&self, policies: &[SignedIdentifier]) -> Result<()> {
        if policies.len() > 5 {
            return Err(Error::invalid_input(format!(
                "a queue has at most 5 stored access policies, got {}",
                policies.len()
            )));
        }
        let mut body =
            String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><SignedIdentifiers>");
        for p in policies {
            if p.id.is_empty() || p.id.chars().count() > 64 {
                return Err(Error::invalid_input(
                    "a stored access policy id has 1-64 characters",
                ));
            }
            if let Some(c) = p.permissions.chars().find(|c| !"raup".contains(*c)) {
                return Err(Error::invalid_input(format!(
                    "queue permission {c:?} is not one of r, a, u, p"
                )));
            }
            body.push_str("<SignedIdentifier><Id>");
            body.push_str(&xml::escape(&p.id));
            body.push_str("</Id><AccessPolicy>");
            if let Some(t) = p.start {
                body.push_str(&format!("<Start>{}</Start>", iso(t)?));
            }
            if let Some(t) = p.expiry {
                body.push_str(&format!("<Expiry>{}</Expiry>", iso(t)?));
            }
            // No permissions: no element (as Azure itself answers such a policy).
            if !p.permissions.is_empty() {
                body.push_str(&format!("<Permission>{}</Permission>", p.permissions));
            }
            body.push_str("</AccessPolicy></SignedIdentifier>");
        }
        body.push_str("</SignedIdentifiers>");
        self.pipeline
            .send(
                self.request(Method::Put)
                    .query("comp", "acl")
                    .body(body, "application/xml"),
            )
            .await?;
        Ok(())
    }

    /// Clear Messages: deletes every message of the queue.
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
    pub async fn put_message(&self, content: impl AsRef<[u8]>) -> Result<SentMessage> {
        self.put_message_with(content, &PutMessageOptions::default())
            .await
    }

    /// Put Message with a visibility delay and/or a time to live.
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
            .intent(crate::http::Intent::NonIdempotent);
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
    pub async fn receive_message(&self, visibility: Duration) -> Result<Option<ReceivedMessage>> {
        Ok(self
            .receive_messages(1, visibility)
            .await?
            .into_iter()
            .next())
    }

    /// Peek Messages: up to `count` (1–32) visible messages, without hiding them or changing
    /// their dequeue count. No pop receipt: peeked messages cannot be updated or deleted.
    pub async fn peek_messages(&self, count: u8) -> Result<Vec<QueueMessage>> {
        let count = check_count(count)?;
        let req = Request::new(Method::Get, &self.messages_path())
            .query("peekonly", "true")
            .query("numofmessages", count.to_string());
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
    pub async fn delete_message(&self, message: ReceivedMessage) -> Result<()> {
        self.delete_message_with_receipt(&message.message.id, &message.pop_receipt)
            .await
    }

    /// Delete Message by id and receipt (the low-level form). Not retried on an ambiguous
    /// failure, so a `MessageNotFound` always means someone else deleted it.
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
    pub fn decode(&self, message: &QueueMessage) -> Result<Bytes> {
        self.encoding.decode(&message.text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_page_parsing() {
        let body = br#"<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="x"><Prefix>q</Prefix><MaxResults>2</MaxResults><Queues><Queue><Name>q1</Name><Metadata><a>1</a><b>two</b></Metadata></Queue><Queue><Name>q2</Name></Queue></Queues><NextMarker>/acc/q3</NextMarker></EnumerationResults>"#;
        let page = QueuePage::parse(body).unwrap();
        assert_eq!(page.queues.len(), 2);
        assert_eq!(
            page.queues[0].metadata.get("b").map(String::as_str),
            Some("two")
        );
        assert_eq!(page.next_marker.as_deref(), Some("/acc/q3"));
        let last =
            QueuePage::parse(b"<EnumerationResults><Queues/><NextMarker/></EnumerationResults>")
                .unwrap();
        assert!(last.queues.is_empty() && last.next_marker.is_none());
        assert!(
            QueuePage::parse(
                b"<EnumerationResults><Queues><Queue></Queue></Queues></EnumerationResults>"
            )
            .is_err()
        );
    }
}
