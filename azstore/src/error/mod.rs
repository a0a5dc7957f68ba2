//! The one error type of azstore: [`Error`], whose documentation is the guide to inspecting it
//! (this module is private; everything in it is re-exported at the crate root).

use std::fmt;

mod code;
pub use code::ErrorCode;

/// Result alias used throughout azstore.
///
/// ```no_run
/// async fn latest_report(account: &azstore::StorageAccount) -> azstore::Result<bytes::Bytes> {
///     Ok(account.blob("reports", "latest.json")?.download().await?.body)
/// }
/// ```
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, in the terms a caller acts on.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::ErrorKind;
/// match blob.download().await {
///     Ok(d) => println!("{} bytes", d.body.len()),
///     Err(e) => match e.kind() {
///         ErrorKind::NotFound => println!("nothing there yet"),
///         ErrorKind::Auth => eprintln!("check the key, SAS or token: {e}"),
///         ErrorKind::Transport | ErrorKind::Timeout => eprintln!("network trouble: {e}"),
///         _ => return Err(e),
///     },
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// 412: a condition (`If-Match`, `If-Unmodified-Since`, append position, …) was not met.
    /// Someone else changed the object; re-read and decide again.
    PreconditionFailed,
    /// A create-only write found the object already there (409 `BlobAlreadyExists`,
    /// `EntityAlreadyExists`, `ContainerAlreadyExists`, `QueueAlreadyExists`, … on Azure
    /// Storage; 409 on a Cosmos DB create; an existing Redis key): someone created it first — or
    /// an earlier attempt of this very create applied and its reply was lost. [`Error::is_conflict`]
    /// is true of it too.
    AlreadyExists,
    /// 409: the operation conflicts with the resource's state (being deleted, SMB sharing
    /// violation, …). A create that found the object there is [`AlreadyExists`](Self::AlreadyExists).
    Conflict,
    /// 404: the resource does not exist.
    NotFound,
    /// 404: the container the resource lives in does not exist — the blob container, table,
    /// queue, file share (or the directory a file is created in), Cosmos DB database or
    /// container. Creating the resource will keep failing until the container is created.
    /// [`Error::is_not_found`] is true of it too.
    ContainerNotFound,
    /// 304: a read with `If-None-Match` / `If-Modified-Since` found nothing new.
    NotModified,
    /// Someone else holds the lease (or it is being broken), so this request can neither take
    /// it nor write without its id: Azure Storage's 409 `LeaseAlreadyPresent`,
    /// `LeaseIsBreakingAndCannotBeAcquired`, 412 `LeaseIdMissing`; the same refusals on Redis
    /// and Cosmos DB. Wait or break it; see [`Error::is_lease_error`].
    LeaseHeld,
    /// The lease this request named is no longer the caller's (expired and taken, broken,
    /// changed, released), or a lease guard can no longer vouch for it. A holder that sees this
    /// must stop acting as the owner; see [`Error::lease_lost`].
    LeaseLost,
    /// 401/403: the request was not authorized (wrong key, expired or insufficient SAS).
    Auth,
    /// The caller's input was invalid; it was caught before any request was sent.
    InvalidInput,
    /// The connection failed or broke (DNS, refused, reset, TLS).
    Transport,
    /// The request or the response body did not complete in time.
    Timeout,
    /// Any other answer from the service (400, 5xx, …), or a response azstore could not decode.
    Service,
    /// A retry loop (e.g. [`crate::update::update`]) gave up after its attempt or time limit.
    /// `status()`, `error_code()` and `source()` are those of the last conflict it saw.
    RetriesExhausted,
    /// The caller's own closure aborted a read-modify-write loop (see
    /// [`crate::update::Decision::abort`]); nothing was written.
    Aborted,
    /// Data failed a checksum: the service received other bytes than azstore sent (400
    /// `Md5Mismatch` / `Crc64Mismatch`), or a verified read received other bytes than the
    /// service sent. The error code says which checksum; retrying the transfer may succeed.
    Integrity,
    /// A success response's body was larger than the cap of its operation (a misbehaving
    /// server or proxy, or a page larger than the operation expects): it was not read further.
    /// The message names the cap; [`Request::response_limit`](crate::http::Request::response_limit)
    /// sets another for a request of your own. Not retried. For a write, the write applied.
    ResponseTooLarge,
}

/// Whether a failed request may have reached the server — the question that matters for an
/// ambiguous conditional write (did my `If-Match` write apply before the connection dropped?).
///
/// For a write, `Maybe` means: **the write may have been applied**. azstore never repeats
/// such a write on its own when repeating could apply it twice or turn its success into a
/// false conflict (a conditional write, a non-idempotent request such as Put Message or
/// Append Block). Before doing it again, find out — read the resource, or use
/// [`update`](crate::update::update), which recognises its own writes and settles an
/// ambiguous last write before it answers.
///
/// ```no_run
/// # async fn demo(queue: azstore::queue::QueueClient) -> azstore::Result<()> {
/// use azstore::RequestSent;
/// match queue.put_message("charge order 42").await {
///     Ok(_) => {}
///     Err(e) if e.request_sent() == RequestSent::No => {
///         queue.put_message("charge order 42").await?; // nothing was sent: safe to repeat
///     }
///     Err(e) if e.request_sent() == RequestSent::Maybe => {
///         eprintln!("may have been queued: the consumer must tolerate a duplicate if we resend");
///         return Err(e);
///     }
///     Err(e) => return Err(e),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum RequestSent {
    /// Nothing was sent: input validation, signing, or connecting failed. Safe to retry.
    No,
    /// The request may have been (partly or wholly) processed; the response was lost (a
    /// timeout, a connection reset after sending). For an `update` error: its last write may
    /// be in the stored state.
    Maybe,
    /// The server answered (for an `update` error: its writes are not in the stored state).
    Yes,
}

/// An azstore error. Cheap to move (one box).
///
/// Every failure — a refused condition, a lost lease, bad input caught before sending, a
/// dropped connection — is an `Error`. Ask it questions instead of matching strings:
///
/// | question | method |
/// |---|---|
/// | what kind of failure, in terms you act on | [`kind`](Error::kind) ([`ErrorKind`]) and the predicates [`is_precondition_failed`](Error::is_precondition_failed), [`is_conflict`](Error::is_conflict), [`is_not_found`](Error::is_not_found), [`is_lease_error`](Error::is_lease_error), … |
/// | what the service said | [`status`](Error::status), [`error_code`](Error::error_code) ([`ErrorCode`]), [`request_id`](Error::request_id) (for support requests) |
/// | may the request have been applied? | [`request_sent`](Error::request_sent) ([`RequestSent`]): `No` is safe to repeat, `Maybe` is not |
/// | may trying again later help? | [`is_retryable`](Error::is_retryable) (the pipeline already retried within its time budget) |
/// | is my lease gone? | [`lease_lost`](Error::lease_lost) |
/// | did a chunked read find the object rewritten (not my own stale If-Match)? | [`is_changed_during_read`](Error::is_changed_during_read) |
/// | the underlying cause (I/O, TLS, a nested conflict) | [`std::error::Error::source`] |
///
/// ```
/// # fn handle(err: azstore::Error) {
/// use azstore::{ErrorCode, ErrorKind};
/// if err.is_precondition_failed() {
///     // someone else changed the object since we read it: re-read and retry
/// } else if err.error_code() == Some(&ErrorCode::LeaseAlreadyPresent) {
///     // another holder owns the lease
/// } else if err.kind() == ErrorKind::InvalidInput {
///     // our own bug: nothing was sent
/// }
/// # }
/// ```
///
/// `Display` prints one line: the kind, the status and code, the message and what to do about
/// it (a refused Shared Key names the account name and key to check, a SAS its expiry and
/// permissions, a token its role assignment; a failed connection its operating-system cause),
/// and the request id. No error ever contains an account key, a SAS signature or a token:
/// messages built from caller input name the offending field, never its secret value, and URLs
/// are redacted before they are kept.
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::{Conditions, RequestSent};
/// if let Err(e) = blob.upload("x", &Conditions::if_not_exists()).await {
///     eprintln!(
///         "{e} (status {:?}, code {:?}, request id {:?}, sent: {:?}, retryable: {})",
///         e.status(), e.error_code(), e.request_id(), e.request_sent(), e.is_retryable()
///     );
///     if e.request_sent() == RequestSent::Maybe {
///         // the write may have applied: read before writing again
///     }
/// }
/// # Ok(()) }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: ErrorKind,
    status: Option<u16>,
    code: Option<ErrorCode>,
    message: String,
    request_id: Option<String>,
    sent: RequestSent,
    source: Option<Box<dyn std::error::Error + Send + Sync + 'static>>,
    /// A chunked read or download found the object changed between two ranges.
    changed_during_read: bool,
}

/// `pub fn name(&self) -> bool`: whether the error is of one of the listed [`ErrorKind`]s.
macro_rules! kind_predicates {
    ($($(#[$doc:meta])* $name:ident => $($kind:ident)|+),* $(,)?) => {$(
        $(#[$doc])*
        pub fn $name(&self) -> bool {
            matches!(self.inner.kind, $(ErrorKind::$kind)|+)
        }
    )*};
}

impl Error {
    /// A new error of `kind` with a message. Mostly for implementors of `Versioned` (see the `update` module) and
    /// for closures that abort a read-modify-write loop.
    ///
    /// ```
    /// use azstore::{Error, ErrorKind, RequestSent};
    /// let e = Error::new(ErrorKind::Aborted, "the order was cancelled meanwhile");
    /// assert_eq!(e.kind(), ErrorKind::Aborted);
    /// assert_eq!(e.request_sent(), RequestSent::No);
    /// ```
    pub fn new(kind: ErrorKind, message: impl Into<String>) -> Error {
        let sent = match kind {
            ErrorKind::InvalidInput | ErrorKind::Aborted => RequestSent::No,
            ErrorKind::Transport | ErrorKind::Timeout => RequestSent::Maybe,
            _ => RequestSent::Yes,
        };
        Error {
            inner: Box::new(Inner {
                kind,
                status: None,
                code: None,
                message: message.into(),
                request_id: None,
                sent,
                source: None,
                changed_during_read: false,
            }),
        }
    }

    /// Bad caller input, caught before anything was sent.
    ///
    /// ```
    /// let e = azstore::Error::invalid_input("quantity must be positive");
    /// assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    /// ```
    pub fn invalid_input(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::InvalidInput, message)
    }

    /// An error built from a service response.
    pub(crate) fn from_response(
        status: u16,
        code: Option<ErrorCode>,
        message: String,
        request_id: Option<String>,
    ) -> Error {
        let kind = classify(status, code.as_ref());
        let mut e = Error::new(kind, message);
        e.inner.status = Some(status);
        e.inner.code = code;
        e.inner.request_id = request_id;
        e.inner.sent = RequestSent::Yes;
        e
    }

    /// A verified read whose bytes do not match the checksum the service sent.
    pub(crate) fn local_mismatch(code: ErrorCode, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Integrity, message).with_code(code)
    }

    /// A response that could not be decoded (malformed XML/JSON, missing header).
    pub(crate) fn decode(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Service, message)
    }

    pub(crate) fn with_source(
        mut self,
        source: impl std::error::Error + Send + Sync + 'static,
    ) -> Error {
        self.inner.source = Some(Box::new(source));
        self
    }

    /// The same error, of another kind: a backend's edge saying what a status means for its
    /// operation (a Cosmos DB 409 on a create is [`ErrorKind::AlreadyExists`]).
    #[cfg_attr(
        not(any(feature = "cosmos", feature = "object_store")),
        allow(dead_code)
    )]
    pub(crate) fn with_kind(mut self, kind: ErrorKind) -> Error {
        self.inner.kind = kind;
        self
    }

    /// Attaches a service error code to an error azstore raises itself (e.g. `LeaseLost` when a
    /// lease guard can no longer vouch for its lease).
    pub(crate) fn with_code(mut self, code: ErrorCode) -> Error {
        self.inner.code = Some(code);
        self
    }

    /// A retry loop gave up: keeps the last conflict's status, code and request id, and the
    /// conflict itself as the source.
    pub(crate) fn retries_exhausted(message: impl Into<String>, last: Error) -> Error {
        let mut e = Error::new(ErrorKind::RetriesExhausted, message);
        e.inner.status = last.inner.status;
        e.inner.code = last.inner.code.clone();
        e.inner.request_id = last.inner.request_id.clone();
        e.inner.sent = RequestSent::Yes;
        e.inner.source = Some(Box::new(last));
        e
    }

    /// A copy for a second recipient (the source is kept only as text in the message).
    pub(crate) fn duplicate(&self) -> Error {
        let mut message = self.inner.message.clone();
        if let Some(s) = &self.inner.source {
            message = format!("{message}: {}", crate::redact::redact(&s.to_string()));
        }
        Error {
            inner: Box::new(Inner {
                kind: self.inner.kind,
                status: self.inner.status,
                code: self.inner.code.clone(),
                message,
                request_id: self.inner.request_id.clone(),
                sent: self.inner.sent,
                source: None,
                changed_during_read: self.inner.changed_during_read,
            }),
        }
    }

    /// Adds what to do about the error, on a line of its own after the message (`Display`
    /// prints it on the same line, after a dash).
    pub(crate) fn hint(mut self, hint: impl fmt::Display) -> Error {
        self.inner.message = format!("{}\n— {hint}", self.inner.message.trim_end());
        self
    }

    /// Marks the failure of a chunked read or download whose object changed between ranges
    /// (see [`Error::is_changed_during_read`]).
    pub(crate) fn changed_during_read(mut self) -> Error {
        self.inner.changed_during_read = true;
        self
    }

    /// The same error, saying whether its request reached the service: for an adapter of
    /// your own (a [`Versioned`](crate::update::Versioned) or
    /// [`LockTarget`](crate::lock::LockTarget)) whose transport knows better than the kind's
    /// default — a `Transport` error of a connection never made was not sent
    /// ([`RequestSent::No`]: safe to repeat), a write whose reply was lost maybe was
    /// ([`RequestSent::Maybe`]: `update()` then checks for its own write before repeating it).
    ///
    /// ```
    /// use azstore::{Error, ErrorKind, RequestSent};
    /// let e = Error::new(ErrorKind::Transport, "connection refused").with_sent(RequestSent::No);
    /// assert_eq!((e.kind(), e.request_sent()), (ErrorKind::Transport, RequestSent::No));
    /// ```
    pub fn with_sent(mut self, sent: RequestSent) -> Error {
        self.inner.sent = sent;
        self
    }

    /// Prefixes the message with context (e.g. which batch operation failed).
    pub(crate) fn context(mut self, prefix: impl fmt::Display) -> Error {
        self.inner.message = format!("{prefix}: {}", self.inner.message);
        self
    }

    /// What went wrong.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::ErrorKind;
    /// match blob.download().await {
    ///     Ok(d) => println!("{} bytes", d.body.len()),
    ///     Err(e) if e.kind() == ErrorKind::Auth => eprintln!("check the account key or token: {e}"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub fn kind(&self) -> ErrorKind {
        self.inner.kind
    }

    /// The HTTP status, when the service answered.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// if let Err(e) = blob.get_properties().await {
    ///     if e.status() == Some(403) {
    ///         eprintln!("not authorized: {e}");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn status(&self) -> Option<u16> {
        self.inner.status
    }

    /// The service error code, when the service sent one.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::ErrorCode;
    /// match blob.download().await {
    ///     Err(e) if e.error_code() == Some(&ErrorCode::ContainerNotFound) => {
    ///         eprintln!("the container is missing, not just the blob");
    ///     }
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn error_code(&self) -> Option<&ErrorCode> {
        self.inner.code.as_ref()
    }

    /// The human-readable message (without the status, code or request id that `Display`
    /// adds).
    ///
    /// ```
    /// let e = azstore::Error::invalid_input("bad name");
    /// assert_eq!(e.message(), "bad name");
    /// ```
    pub fn message(&self) -> &str {
        &self.inner.message
    }

    /// The service's `x-ms-request-id`, for support requests.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// if let Err(e) = blob.download().await {
    ///     tracing::error!(request_id = e.request_id(), "download failed: {e}");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        self.inner.request_id.as_deref()
    }

    /// Whether the request may have reached the server.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::{Conditions, RequestSent};
    /// let etag = blob.get_properties().await?.etag;
    /// if let Err(e) = blob.upload("v2", &Conditions::if_match(&etag)).await {
    ///     match e.request_sent() {
    ///         RequestSent::No => {}                     // safe to send again
    ///         RequestSent::Maybe => { /* may have applied: read before retrying */ }
    ///         _ => {}                                   // the service answered: see the error
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn request_sent(&self) -> RequestSent {
        self.inner.sent
    }

    kind_predicates! {
        /// 412 because a condition was not met (stale ETag, date condition, append position).
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient, etag: azstore::ETag) -> azstore::Result<()> {
        /// match blob.upload("v2", &azstore::Conditions::if_match(&etag)).await {
        ///     Err(e) if e.is_precondition_failed() => println!("stale: re-read and retry"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_precondition_failed => PreconditionFailed,
        /// 409 conflict: [`ErrorKind::Conflict`] or [`ErrorKind::AlreadyExists`] (being
        /// deleted, sharing violation, already exists, …). Lease refusals are
        /// [`is_lease_error`](Error::is_lease_error) instead.
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
        /// match blob.upload("v1", &azstore::Conditions::if_not_exists()).await {
        ///     Err(e) if e.is_conflict() => println!("already exists"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_conflict => Conflict | AlreadyExists,
        /// A create-only write found the object there ([`ErrorKind::AlreadyExists`]).
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
        /// match blob.upload("v1", &azstore::Conditions::if_not_exists()).await {
        ///     Err(e) if e.is_already_exists() => println!("someone created it first"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_already_exists => AlreadyExists,
        /// 404: the resource or its container does not exist ([`ErrorKind::NotFound`],
        /// [`ErrorKind::ContainerNotFound`]).
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
        /// let body = match blob.download().await {
        ///     Ok(d) => d.body,
        ///     Err(e) if e.is_not_found() => bytes::Bytes::new(), // treat as empty
        ///     Err(e) => return Err(e),
        /// };
        /// # let _ = body; Ok(()) }
        /// ```
        is_not_found => NotFound | ContainerNotFound,
        /// 304: a read with `If-None-Match` found the resource unchanged.
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient, cached: azstore::ETag) -> azstore::Result<()> {
        /// match blob.download_if(&azstore::Conditions::if_none_match(&cached)).await {
        ///     Err(e) if e.is_not_modified() => println!("cache is current"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_not_modified => NotModified,
        /// A checksum did not match, on the service's side or on a verified read
        /// ([`ErrorKind::Integrity`]).
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
        /// use azstore::blob::Checksum;
        /// match blob.download_range_verified(0..4096, Checksum::Crc64).await {
        ///     Err(e) if e.is_integrity_mismatch() => eprintln!("damaged in transit: read again"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_integrity_mismatch => Integrity,
        /// Any lease refusal: held by someone else ([`ErrorKind::LeaseHeld`]) or no longer
        /// ours ([`ErrorKind::LeaseLost`]).
        ///
        /// ```no_run
        /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
        /// match blob.upload("x", &azstore::Conditions::none()).await {
        ///     Err(e) if e.is_lease_error() => println!("leased by someone: {e}"),
        ///     other => { other?; }
        /// }
        /// # Ok(()) }
        /// ```
        is_lease_error => LeaseHeld | LeaseLost,
    }

    /// The lease the caller used is no longer valid (expired and taken, broken, changed,
    /// released). A holder that sees this must stop acting as the owner.
    ///
    /// ```no_run
    /// # async fn demo(guard: azstore::lease::LeaseGuard<azstore::blob::BlobClient>) -> azstore::Result<()> {
    /// if let Err(e) = guard.target().upload("v2", &guard.conditions()).await {
    ///     if e.lease_lost() {
    ///         eprintln!("no longer the holder: stop");
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lease_lost(&self) -> bool {
        self.inner.kind == ErrorKind::LeaseLost
    }

    /// A chunked read or parallel download failed because the blob or file changed between
    /// two of its ranges (azstore pins the first range's ETag; it never returns a mix of two
    /// versions). It is a 412 `ConditionNotMet` (for files: a `Conflict`) like the caller's own
    /// stale `If-Match`, and this tells the two apart: here nobody's condition was wrong, the
    /// object was being rewritten. Read again, or let the download start over by itself with
    /// [`OnChange::Restart`](crate::blob::OnChange::Restart).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::blob::{DownloadOptions, OnChange};
    /// match blob.download_chunked(&DownloadOptions::default()).await {
    ///     Err(e) if e.is_changed_during_read() => {
    ///         let again = DownloadOptions::default().on_change(OnChange::Restart { max_restarts: 3 });
    ///         blob.download_chunked(&again).await?;
    ///     }
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_changed_during_read(&self) -> bool {
        self.inner.changed_during_read
    }

    /// A queue message's pop receipt is stale (400 `PopReceiptMismatch`): the message became
    /// visible again and was received (or updated) by someone else, so this holder no longer
    /// owns it. Do not delete or update it; its next holder will process it.
    ///
    /// ```no_run
    /// # async fn demo(queue: azstore::queue::QueueClient, msg: azstore::queue::ReceivedMessage) -> azstore::Result<()> {
    /// match queue.delete_message(msg).await {
    ///     Err(e) if e.is_pop_receipt_stale() => println!("redelivered to someone else"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_pop_receipt_stale(&self) -> bool {
        self.inner.code == Some(ErrorCode::PopReceiptMismatch)
    }

    /// Whether retrying the same request later may succeed (throttling, server busy,
    /// connection failures, timeouts). Conditions (304/409/412) are answers and never retryable.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// // The pipeline already retried within its time budget; try twice more, a minute apart.
    /// let mut attempts = 0;
    /// let props = loop {
    ///     match blob.get_properties().await {
    ///         Err(e) if e.is_retryable() && attempts < 2 => {
    ///             attempts += 1;
    ///             tokio::time::sleep(std::time::Duration::from_secs(60)).await;
    ///         }
    ///         other => break other?,
    ///     }
    /// };
    /// # let _ = props; Ok(()) }
    /// ```
    pub fn is_retryable(&self) -> bool {
        match self.inner.kind {
            ErrorKind::Transport | ErrorKind::Timeout => true,
            _ => matches!(self.inner.status, Some(408 | 429 | 500 | 502 | 503 | 504)),
        }
    }
}

/// `Ok(true)` when `result` succeeded, `Ok(false)` when it failed with an error the caller
/// expects (already exists, not found), the error otherwise: the shape of every
/// `create_if_not_exists` / `exists` / `delete_if_exists`.
pub(crate) fn succeeded_unless<T>(
    result: Result<T>,
    expected: impl FnOnce(&Error) -> bool,
) -> Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(e) if expected(&e) => Ok(false),
        Err(e) => Err(e),
    }
}

/// [`succeeded_unless`] for a create: `Ok(false)` when it failed with `already_exists` (the
/// service's code for "it exists", which differs by resource).
pub(crate) fn created_unless<T>(result: Result<T>, already_exists: ErrorCode) -> Result<bool> {
    succeeded_unless(result, |e| e.error_code() == Some(&already_exists))
}

/// [`succeeded_unless`] for an existence test (or a delete of what may be gone): `Ok(false)`
/// when it failed with not found.
pub(crate) fn found<T>(result: Result<T>) -> Result<bool> {
    succeeded_unless(result, Error::is_not_found)
}

fn classify(status: u16, code: Option<&ErrorCode>) -> ErrorKind {
    if let Some(kind) = code.and_then(|c| c.kind(status)) {
        return kind;
    }
    match status {
        304 => ErrorKind::NotModified,
        401 | 403 => ErrorKind::Auth,
        404 => ErrorKind::NotFound,
        409 => ErrorKind::Conflict,
        412 => ErrorKind::PreconditionFailed,
        _ => ErrorKind::Service,
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("Error");
        d.field("kind", &self.inner.kind);
        if let Some(s) = self.inner.status {
            d.field("status", &s);
        }
        if let Some(c) = &self.inner.code {
            d.field("code", &c.as_str());
        }
        d.field("message", &self.inner.message);
        if let Some(r) = &self.inner.request_id {
            d.field("request_id", r);
        }
        d.field("sent", &self.inner.sent);
        if let Some(s) = &self.inner.source {
            d.field("source", &crate::redact::redact(&s.to_string()));
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.inner.kind)?;
        if let Some(s) = self.inner.status {
            write!(f, " ({s}")?;
            if let Some(c) = &self.inner.code {
                f.write_str(" ")?;
                write_escaped(f, &c.to_string())?;
            }
            write!(f, ")")?;
        }
        f.write_str(": ")?;
        write_one_line(f, &self.inner.message, self.inner.request_id.as_deref())
    }
}

/// `message` on one line — the service's messages carry `"\nRequestId:...\nTime:..."` tails,
/// which are dropped — then ` [request id …]` when there is one: the shape of every error
/// message azstore prints.
pub(crate) fn write_one_line(
    f: &mut fmt::Formatter<'_>,
    message: &str,
    request_id: Option<&str>,
) -> fmt::Result {
    let mut lines = message.lines().map(str::trim).filter(|l| !l.is_empty());
    if let Some(first) = lines.next() {
        write_escaped(f, first)?;
    }
    for l in lines {
        if !l.starts_with("RequestId:") && !l.starts_with("Time:") {
            f.write_str(" ")?;
            write_escaped(f, l)?;
        }
    }
    if let Some(r) = request_id {
        f.write_str(" [request id ")?;
        write_escaped(f, r)?;
        f.write_str("]")?;
    }
    Ok(())
}

/// Writes `s` with its control characters escaped (`\u{1b}`, `\t`): a service's text (or a
/// hostile server's) can never move a terminal's cursor, change its colours or forge a line.
fn write_escaped(f: &mut fmt::Formatter<'_>, s: &str) -> fmt::Result {
    if !s.chars().any(char::is_control) {
        return f.write_str(s);
    }
    f.write_str(&crate::redact::printable_cut(s, usize::MAX))
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|s| s.as_ref() as &(dyn std::error::Error + 'static))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classification() {
        let e = Error::from_response(412, Some(ErrorCode::ConditionNotMet), "x".into(), None);
        assert!(e.is_precondition_failed());
        assert!(!e.is_retryable());
        let e = Error::from_response(412, Some(ErrorCode::LeaseIdMissing), "x".into(), None);
        assert_eq!(e.kind(), ErrorKind::LeaseHeld);
        assert!(!e.lease_lost() && e.is_lease_error());
        let e = Error::from_response(409, Some(ErrorCode::LeaseAlreadyPresent), "x".into(), None);
        assert_eq!(e.kind(), ErrorKind::LeaseHeld);
        let e = Error::from_response(409, Some(ErrorCode::BlobAlreadyExists), "x".into(), None);
        assert_eq!(e.kind(), ErrorKind::AlreadyExists);
        assert!(e.is_conflict() && e.is_already_exists());
        let e = Error::from_response(
            409,
            Some(ErrorCode::ContainerBeingDeleted),
            "x".into(),
            None,
        );
        assert_eq!(e.kind(), ErrorKind::Conflict);
        assert!(!e.is_already_exists());
        let e = Error::from_response(404, Some(ErrorCode::TableNotFound), "x".into(), None);
        assert_eq!(e.kind(), ErrorKind::ContainerNotFound);
        assert!(e.is_not_found());
        let e = Error::from_response(404, Some(ErrorCode::BlobNotFound), "x".into(), None);
        assert_eq!(e.kind(), ErrorKind::NotFound);
        let e = Error::from_response(
            409,
            Some(ErrorCode::LeaseIdMismatchWithLeaseOperation),
            "x".into(),
            None,
        );
        assert!(e.lease_lost());
        let e = Error::from_response(503, Some(ErrorCode::ServerBusy), "x".into(), None);
        assert!(e.is_retryable());
        assert_eq!(e.request_sent(), RequestSent::Yes);
        assert_eq!(ErrorCode::parse("Nope"), ErrorCode::Other("Nope".into()));
        assert_eq!(
            ErrorCode::parse("SharingViolation").as_str(),
            "SharingViolation"
        );
    }
}
