//! Message values: encoding, pop receipts, received and peeked messages, put options.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD as B64;
use bytes::Bytes;
use time::OffsetDateTime;

use crate::error::{Error, Result};
use crate::queue::xml::Element;

/// Largest message the service accepts: 64 KiB of message text *as sent* (after encoding).
pub const MAX_MESSAGE_SIZE: usize = 64 * 1024;
/// Most messages one Get Messages / Peek Messages call can return.
pub const MAX_MESSAGES_PER_CALL: u8 = 32;
/// Longest visibility timeout (and longest visibility delay of a new message): 7 days.
pub const MAX_VISIBILITY_TIMEOUT: Duration = Duration::from_secs(7 * 24 * 3600);

/// How message content is written into the XML `<MessageText>` and read back.
///
/// The official v12 SDKs (Python `azure-storage-queue` 12.x with its default
/// `NoEncodePolicy`, .NET `Azure.Storage.Queues` 12.x with `QueueMessageEncoding.None`) send
/// the text as is, so [`MessageEncoding::Raw`] is the default here and messages interoperate
/// with them out of the box. Older SDKs (WindowsAzure.Storage, the v11 SDKs, Azure Functions
/// queue triggers) use Base64: choose [`MessageEncoding::Base64`] to talk to those, or to send
/// binary content (the Python SDK reads it with `TextBase64DecodePolicy` /
/// `BinaryBase64DecodePolicy`, .NET with `QueueMessageEncoding.Base64`).
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::queue::MessageEncoding;
/// // Binary payloads (and Azure Functions queue triggers) need Base64.
/// let binary = queue.with_encoding(MessageEncoding::Base64);
/// binary.put_message([0u8, 159, 146, 150]).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MessageEncoding {
    /// UTF-8 text sent verbatim (XML-escaped on the wire). Content must be valid UTF-8
    /// made of characters XML 1.0 allows (no control characters except tab, CR, LF).
    #[default]
    Raw,
    /// Standard Base64 (with padding) of the content bytes; any bytes allowed. Costs a third
    /// more of the 64 KiB limit.
    Base64,
}

impl MessageEncoding {
    /// Encodes content into message text, refusing what the service would reject.
    ///
    /// ```
    /// use azstore::queue::MessageEncoding;
    /// assert_eq!(MessageEncoding::Base64.encode(b"hi")?, "aGk=");
    /// assert_eq!(MessageEncoding::Raw.encode(b"hi")?, "hi");
    /// assert!(MessageEncoding::Raw.encode(&[0xff]).is_err()); // not UTF-8
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn encode(self, content: &[u8]) -> Result<String> {
        let text = match self {
            MessageEncoding::Raw => {
                let s = std::str::from_utf8(content).map_err(|_| {
                    Error::invalid_input(
                        "raw message content must be UTF-8 text; use MessageEncoding::Base64 \
                         for binary content",
                    )
                })?;
                if let Some(c) = s.chars().find(|c| !is_xml_char(*c)) {
                    return Err(Error::invalid_input(format!(
                        "raw message content contains {c:?}, which XML cannot carry; use \
                         MessageEncoding::Base64"
                    )));
                }
                s.to_string()
            }
            MessageEncoding::Base64 => B64.encode(content),
        };
        if text.len() > MAX_MESSAGE_SIZE {
            return Err(Error::invalid_input(format!(
                "message is {} bytes once encoded; the queue service accepts at most {} \
                 (64 KiB)",
                text.len(),
                MAX_MESSAGE_SIZE
            )));
        }
        Ok(text)
    }

    /// Decodes message text back into content.
    ///
    /// ```
    /// use azstore::queue::MessageEncoding;
    /// assert_eq!(&MessageEncoding::Base64.decode("aGk=")?[..], b"hi");
    /// assert!(MessageEncoding::Base64.decode("not base64!").is_err());
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn decode(self, text: &str) -> Result<Bytes> {
        match self {
            MessageEncoding::Raw => Ok(Bytes::copy_from_slice(text.as_bytes())),
            MessageEncoding::Base64 => B64
                .decode(text.trim())
                .map(Bytes::from)
                .map_err(|e| Error::decode(format!("message text is not valid Base64: {e}"))),
        }
    }
}

fn is_xml_char(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\r' | '\u{20}'..='\u{D7FF}' | '\u{E000}'..='\u{FFFD}' | '\u{10000}'..)
}

/// `new` and `as_str` of an opaque string the service issues (message ids, pop receipts).
macro_rules! opaque_text {
    ($ty:ident, $what:literal) => {
        impl $ty {
            #[doc = concat!("Wraps ", $what, " (as returned by the service or the official SDKs).")]
            ///
            /// ```
            #[doc = concat!("let v = azstore::queue::", stringify!($ty), "::new(\"AgAAAAMAAAAAAAAA\");")]
            /// assert_eq!(v.as_str(), "AgAAAAMAAAAAAAAA");
            /// ```
            pub fn new(text: impl Into<String>) -> $ty {
                $ty(text.into())
            }

            #[doc = concat!("The ", $what, " as text.")]
            ///
            /// ```no_run
            /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
            /// let sent = queue.put_message("hello").await?;
            /// println!("id {} receipt {}", sent.id.as_str(), sent.pop_receipt.as_str());
            /// # Ok(()) }
            /// ```
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }
    };
}

/// The id the service gave a message.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// let sent = queue.put_message("hello").await?;
/// println!("queued as {}", sent.id);
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Debug)]
pub struct MessageId(String);

opaque_text!(MessageId, "a message id");

impl fmt::Display for MessageId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// A pop receipt: the proof of the latest dequeue or update of a message, needed to update or
/// delete it. Every Get Messages and every Update Message issues a new one and the previous
/// one stops working (400 `PopReceiptMismatch`).
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// let sent = queue.put_message("draft").await?;
/// // The first receipt works until someone receives the message.
/// queue.delete_message_with_receipt(&sent.id, &sent.pop_receipt).await?;
/// # Ok(()) }
/// ```
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PopReceipt(String);

opaque_text!(PopReceipt, "a pop receipt");

impl fmt::Debug for PopReceipt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PopReceipt({})", self.0)
    }
}

/// How long a new message lives.
///
/// ```
/// use std::time::Duration;
/// use azstore::queue::{PutMessageOptions, TimeToLive};
/// let a_day = PutMessageOptions::default().time_to_live(TimeToLive::After(Duration::from_secs(86_400)));
/// # let _ = a_day;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TimeToLive {
    /// Never expires (`messagettl=-1`).
    Never,
    /// Expires this long after insertion (at least 1 s; whole seconds).
    After(Duration),
}

/// Options of Put Message: `PutMessageOptions::default().time_to_live(TimeToLive::Never)`.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::queue::PutMessageOptions;
/// let later = PutMessageOptions::default().visibility_delay(Duration::from_secs(300));
/// queue.put_message_with("retry order 42", &later).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[must_use]
#[non_exhaustive]
pub struct PutMessageOptions {
    /// Hide the new message for this long (0 s – 7 days; must not exceed the TTL).
    pub visibility_delay: Option<Duration>,
    /// Time to live; the service default is 7 days.
    pub time_to_live: Option<TimeToLive>,
}

impl PutMessageOptions {
    /// Keeps the new message invisible for this long after it is put (0 s – 7 days, and
    /// not longer than the time to live; checked before sending). Default: visible at
    /// once.
    ///
    /// ```
    /// use std::time::Duration;
    /// let later = azstore::queue::PutMessageOptions::default()
    ///     .visibility_delay(Duration::from_secs(60));
    /// # let _ = later;
    /// ```
    pub fn visibility_delay(mut self, v: Duration) -> Self {
        self.visibility_delay = Some(v);
        self
    }

    /// How long the message lives before the service deletes it, delivered or not.
    /// Default: the service's 7 days.
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::queue::{PutMessageOptions, TimeToLive};
    /// let hour = PutMessageOptions::default().time_to_live(TimeToLive::After(Duration::from_secs(3600)));
    /// let forever = PutMessageOptions::default().time_to_live(TimeToLive::Never);
    /// # let _ = (hour, forever);
    /// ```
    pub fn time_to_live(mut self, v: TimeToLive) -> Self {
        self.time_to_live = Some(v);
        self
    }

    pub(crate) fn query(&self) -> Result<Vec<(&'static str, String)>> {
        let mut q = Vec::new();
        let ttl = match self.time_to_live {
            None => None,
            Some(TimeToLive::Never) => {
                q.push(("messagettl", "-1".to_string()));
                None
            }
            Some(TimeToLive::After(d)) => {
                let s = d.as_secs();
                if s < 1 || s > i32::MAX as u64 {
                    return Err(Error::invalid_input(format!(
                        "message time to live must be at least 1 s (or TimeToLive::Never), got \
                         {d:?}"
                    )));
                }
                q.push(("messagettl", s.to_string()));
                Some(s)
            }
        };
        if let Some(d) = self.visibility_delay {
            let s = check_range(d, 0, "visibility delay")?;
            if ttl.is_some_and(|t| s > t) {
                return Err(Error::invalid_input(format!(
                    "visibility delay {d:?} is longer than the message's time to live"
                )));
            }
            q.push(("visibilitytimeout", s.to_string()));
        }
        Ok(q)
    }
}

/// Checks a visibility duration against `min_secs ..= 7 days` and returns whole seconds.
pub(crate) fn check_range(d: Duration, min_secs: u64, what: &str) -> Result<u64> {
    let s = d.as_secs();
    if s < min_secs || d > MAX_VISIBILITY_TIMEOUT {
        return Err(Error::invalid_input(format!(
            "{what} must be between {min_secs} s and 7 days (whole seconds), got {d:?}"
        )));
    }
    Ok(s)
}

/// Checks a message count for Get/Peek Messages (1–32).
pub(crate) fn check_count(n: u8) -> Result<u8> {
    if n == 0 || n > MAX_MESSAGES_PER_CALL {
        return Err(Error::invalid_input(format!(
            "a queue call returns 1-32 messages, asked for {n}"
        )));
    }
    Ok(n)
}

/// What Put Message returns: the new message's id and its first pop receipt (usable to update
/// or delete it before anyone dequeues it).
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// let sent = queue.put_message("resize cat.png").await?;
/// println!("{} expires {:?}", sent.id, sent.expires_on);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SentMessage {
    /// Message id.
    pub id: MessageId,
    /// Insertion time.
    pub inserted_on: Option<OffsetDateTime>,
    /// Expiration time (far future for messages that never expire).
    pub expires_on: Option<OffsetDateTime>,
    /// The current pop receipt.
    pub pop_receipt: PopReceipt,
    /// When the message becomes visible.
    pub next_visible_on: Option<OffsetDateTime>,
}

/// A message as stored: what Peek returns, and the content part of a [`ReceivedMessage`].
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// for m in queue.peek_messages(10).await? {
///     println!("{}: {:?} (dequeued {} times, expires {:?})", m.id, m.content_str()?, m.dequeue_count, m.expires_on);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct QueueMessage {
    /// Message id.
    pub id: MessageId,
    /// Insertion time.
    pub inserted_on: Option<OffsetDateTime>,
    /// Expiration time.
    pub expires_on: Option<OffsetDateTime>,
    /// How many times the message was dequeued (1 on first delivery).
    pub dequeue_count: u32,
    /// The message text exactly as stored (still encoded).
    pub text: String,
    /// The encoding of the client that read it, used by [`QueueMessage::content`].
    pub encoding: MessageEncoding,
}

impl QueueMessage {
    /// The decoded content. Fails (without panicking) if Base64 text is malformed.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// let bytes = msg.content()?;
    /// println!("{} bytes", bytes.len());
    /// # Ok(()) }
    /// ```
    pub fn content(&self) -> Result<Bytes> {
        self.encoding.decode(&self.text)
    }

    /// The decoded content as UTF-8 text.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// let order: serde_json::Value = serde_json::from_str(&msg.content_str()?)
    ///     .map_err(|e| azstore::Error::invalid_input(e.to_string()))?;
    /// # let _ = order;
    /// # Ok(()) }
    /// ```
    pub fn content_str(&self) -> Result<Cow<'_, str>> {
        match self.encoding {
            MessageEncoding::Raw => Ok(Cow::Borrowed(&self.text)),
            MessageEncoding::Base64 => {
                let bytes = self.content()?;
                String::from_utf8(bytes.to_vec())
                    .map(Cow::Owned)
                    .map_err(|_| Error::decode("message content is not UTF-8"))
            }
        }
    }

    pub(crate) fn from_xml(el: &Element, encoding: MessageEncoding) -> Result<QueueMessage> {
        let dequeue_count = match el.child_text("DequeueCount") {
            None => 0,
            Some(s) => s
                .trim()
                .parse()
                .map_err(|_| Error::decode("malformed response: bad <DequeueCount>"))?,
        };
        Ok(QueueMessage {
            id: MessageId(el.require_text("MessageId")?.to_string()),
            inserted_on: date(el, "InsertionTime"),
            expires_on: date(el, "ExpirationTime"),
            dequeue_count,
            text: el.child_text("MessageText").unwrap_or_default().to_string(),
            encoding,
        })
    }
}

fn date(el: &Element, name: &str) -> Option<OffsetDateTime> {
    el.child_text(name)
        .and_then(crate::time_fmt::parse_http_date)
}

/// A message taken from the queue with Get Messages. It owns its *current* pop receipt:
/// [`QueueClient::update_message`](crate::queue::QueueClient::update_message) replaces the
/// receipt in place and [`QueueClient::delete_message`](crate::queue::QueueClient::delete_message)
/// consumes the message, so the safe API cannot use a stale receipt by mistake.
///
/// Derefs to [`QueueMessage`] for the id, content and dequeue count. Deliberately not `Clone`:
/// one holder, one receipt.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// while let Some(msg) = queue.receive_message(Duration::from_secs(30)).await? {
///     println!("{}", msg.content_str()?); // QueueMessage's methods through Deref
///     queue.delete_message(msg).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct ReceivedMessage {
    pub(crate) message: QueueMessage,
    pub(crate) pop_receipt: PopReceipt,
    pub(crate) next_visible_on: Option<OffsetDateTime>,
    /// Local monotonic lower bound of the end of its invisibility: the moment the request
    /// that set it was sent plus the timeout it asked for (`None` if unknown).
    pub(crate) hidden_until: Option<tokio::time::Instant>,
}

impl ReceivedMessage {
    /// The current pop receipt (for the low-level `*_with_receipt` calls).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// queue.delete_message_with_receipt(&msg.id, msg.pop_receipt()).await?;
    /// # Ok(()) }
    /// ```
    pub fn pop_receipt(&self) -> &PopReceipt {
        &self.pop_receipt
    }

    /// When the message becomes visible again unless updated or deleted.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// println!("must finish before {:?}", msg.next_visible_on());
    /// # Ok(()) }
    /// ```
    pub fn next_visible_on(&self) -> Option<OffsetDateTime> {
        self.next_visible_on
    }

    /// The message part (id, content, dequeue count).
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// let copy: azstore::queue::QueueMessage = msg.message().clone();
    /// # let _ = copy;
    /// # Ok(()) }
    /// ```
    pub fn message(&self) -> &QueueMessage {
        &self.message
    }

    /// Splits into the message and its current receipt.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
    /// # let Some(msg) = queue.receive_message(std::time::Duration::from_secs(30)).await? else { return Ok(()) };
    /// let (message, receipt) = msg.into_parts();
    /// // e.g. hand the receipt to another task that deletes the message when done
    /// queue.delete_message_with_receipt(&message.id, &receipt).await?;
    /// # Ok(()) }
    /// ```
    pub fn into_parts(self) -> (QueueMessage, PopReceipt) {
        (self.message, self.pop_receipt)
    }

    pub(crate) fn from_xml(el: &Element, encoding: MessageEncoding) -> Result<ReceivedMessage> {
        Ok(ReceivedMessage {
            message: QueueMessage::from_xml(el, encoding)?,
            pop_receipt: PopReceipt(el.require_text("PopReceipt")?.to_string()),
            next_visible_on: date(el, "TimeNextVisible"),
            hidden_until: None,
        })
    }
}

impl std::ops::Deref for ReceivedMessage {
    type Target = QueueMessage;
    fn deref(&self) -> &QueueMessage {
        &self.message
    }
}

impl SentMessage {
    pub(crate) fn from_xml(el: &Element) -> Result<SentMessage> {
        Ok(SentMessage {
            id: MessageId(el.require_text("MessageId")?.to_string()),
            inserted_on: date(el, "InsertionTime"),
            expires_on: date(el, "ExpirationTime"),
            pop_receipt: PopReceipt(el.require_text("PopReceipt")?.to_string()),
            next_visible_on: date(el, "TimeNextVisible"),
        })
    }
}

/// What Update Message returns: the new receipt and visibility, which replace the old ones.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use std::time::Duration;
/// let sent = queue.put_message("draft").await?;
/// let update = queue
///     .update_message_with_receipt(&sent.id, &sent.pop_receipt, Duration::from_secs(60), None)
///     .await?;
/// println!("hidden until {:?}", update.next_visible_on);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct UpdateReceipt {
    /// The new pop receipt; the previous one no longer works.
    pub pop_receipt: PopReceipt,
    /// When the message becomes visible.
    pub next_visible_on: Option<OffsetDateTime>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodings() {
        assert_eq!(MessageEncoding::Raw.encode(b"hi <x>").unwrap(), "hi <x>");
        assert_eq!(MessageEncoding::Base64.encode(b"hi").unwrap(), "aGk=");
        assert_eq!(&MessageEncoding::Base64.decode("aGk=").unwrap()[..], b"hi");
        assert!(MessageEncoding::Base64.decode("*not base64*").is_err());
        for bad in [&b"\xff"[..], b"a\x01b"] {
            let e = MessageEncoding::Raw.encode(bad).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        }
        assert!(MessageEncoding::Base64.encode(b"\x00\xff").is_ok());
    }

    #[test]
    fn size_limit_counts_encoded_bytes() {
        assert!(
            MessageEncoding::Raw
                .encode(&[b'a'; MAX_MESSAGE_SIZE])
                .is_ok()
        );
        assert!(
            MessageEncoding::Raw
                .encode(&[b'a'; MAX_MESSAGE_SIZE + 1])
                .is_err()
        );
        // 48 KiB + 1 of bytes is over 64 KiB once in Base64.
        assert!(MessageEncoding::Base64.encode(&[0u8; 48 * 1024]).is_ok());
        assert!(
            MessageEncoding::Base64
                .encode(&[0u8; 48 * 1024 + 1])
                .is_err()
        );
        // é is two bytes in UTF-8.
        let s = "é".repeat(MAX_MESSAGE_SIZE / 2 + 1);
        assert!(MessageEncoding::Raw.encode(s.as_bytes()).is_err());
    }

    #[test]
    fn put_options_validation() {
        let q = PutMessageOptions::default()
            .visibility_delay(Duration::from_secs(5))
            .time_to_live(TimeToLive::Never)
            .query()
            .unwrap();
        assert!(q.contains(&("messagettl", "-1".into())));
        assert!(q.contains(&("visibilitytimeout", "5".into())));
        for bad in [
            PutMessageOptions::default().visibility_delay(MAX_VISIBILITY_TIMEOUT * 2),
            PutMessageOptions::default().time_to_live(TimeToLive::After(Duration::ZERO)),
            PutMessageOptions::default()
                .visibility_delay(Duration::from_secs(60))
                .time_to_live(TimeToLive::After(Duration::from_secs(30))),
        ] {
            assert_eq!(
                bad.query().unwrap_err().kind(),
                crate::ErrorKind::InvalidInput
            );
        }
        assert!(check_range(Duration::ZERO, 1, "x").is_err());
        assert!(check_range(MAX_VISIBILITY_TIMEOUT, 1, "x").is_ok());
        assert!(check_count(0).is_err() && check_count(33).is_err() && check_count(32).is_ok());
    }
}
