//! A backend's edge on the wire: the one place where the pipeline meets a protocol.
//!
//! The pipeline checks, stamps, authorizes, sends, classifies and retries any request, and
//! knows no service: what every attempt carries (a date, a version, a request id), how it is
//! authorized, how a refusal reads, which header names the service's request id and how a
//! call is named in spans and metrics belong to the [`Edge`] of the backend that built the
//! pipeline: `storage/edge.rs` for Blob, Queue, File and Table, `cosmos/edge.rs` for Azure
//! Cosmos DB.

use std::any::Any;
use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use reqwest::header::HeaderValue;

use crate::credential::{AccessToken, Credential};
use crate::error::{Error, ErrorCode, ErrorKind, RequestSent, Result};
use crate::http::request::{Method, Request};
use crate::http::response::Headers;

/// How a pipeline's calls are labelled in spans and metrics: the Azure resource provider
/// namespace (`az.namespace`) and the service's short name in span and metric names, given by
/// the backend's [`Edge`] (Storage: `Microsoft.Storage` and `blob`, `queue`, `table`, `file`;
/// Cosmos DB: `Microsoft.DocumentDB`, `cosmos`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Labels {
    /// `az.namespace`.
    pub(crate) namespace: &'static str,
    /// The `<service>` of `azstore.<service>.<operation>`.
    pub(crate) service: &'static str,
}

/// One attempt's request as it will be sent, borrowed for authorization.
pub(crate) struct Unsigned<'a> {
    /// The method.
    pub method: Method,
    /// The URL path exactly as sent (percent-encoded), starting with `/`.
    pub path: &'a str,
    /// Query parameters, not percent-encoded.
    pub query: &'a [(String, String)],
    /// The stamped headers (lower-case names); authorization may add some.
    pub headers: &'a mut Vec<(String, String)>,
    /// Body length in bytes.
    pub content_length: u64,
}

impl Unsigned<'_> {
    /// The value of header `name` (lower-case), if stamped or set.
    // The Cosmos DB signer reads its date with it.
    #[cfg_attr(not(feature = "cosmos"), allow(dead_code))]
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// What authorization adds to a request besides headers.
pub(crate) enum Authorization {
    /// Nothing (anonymous).
    None,
    /// The `Authorization` header (marked sensitive: never shown by `Debug`).
    Header(HeaderValue),
    /// A bearer token's `Authorization` header, and the token (to report it when refused).
    Bearer(HeaderValue, AccessToken),
    /// Query pairs (a SAS token).
    Query(Vec<(String, String)>),
}

/// One attempt's authorization: at once (a signature, a SAS), or after an await (a token
/// that may have to be fetched). Signing needs no allocation for the future.
pub(crate) enum Authorizing<'a> {
    /// Decided already.
    Ready(Result<Authorization>),
    /// Decided when the future ends.
    Later(Pin<Box<dyn Future<Output = Result<Authorization>> + Send + 'a>>),
}

impl Authorizing<'_> {
    /// The authorization.
    pub(crate) async fn decided(self) -> Result<Authorization> {
        match self {
            Authorizing::Ready(r) => r,
            Authorizing::Later(f) => f.await,
        }
    }
}

/// A backend's protocol as the pipeline meets it. Object-safe: a pipeline holds one
/// `Arc<dyn Edge>`.
pub(crate) trait Edge: fmt::Debug + Send + Sync + 'static {
    /// How the pipeline's calls are named in spans and metrics.
    fn labels(&self) -> Labels;

    /// The operation name of a request that has none of its own
    /// ([`Request::operation`](crate::http::Request::operation)).
    fn operation_name(&self, req: &Request) -> String {
        req.method.as_str().to_ascii_lowercase()
    }

    /// Refuses, before anything is sent, what the protocol cannot carry beyond the wire's own
    /// checks (header syntax, dot segments, empty ETag conditions).
    fn check(&self, req: &Request) -> Result<()> {
        let _ = req;
        Ok(())
    }

    /// Adds the headers every attempt carries (a date, a version, `client_request_id`),
    /// unless the request set them itself.
    fn stamp(&self, headers: &mut Vec<(String, String)>, client_request_id: &str);

    /// Authorizes one attempt (called again for every attempt: signatures carry the date,
    /// tokens expire).
    fn authorize<'a>(&'a self, req: Unsigned<'a>) -> Authorizing<'a>;

    /// A bearer token `token` was refused with 401: whether its source has been told and a
    /// new token may be asked for once.
    fn token_refused(&self, token: &AccessToken) -> bool {
        let _ = token;
        false
    }

    /// The error a non-2xx answer stands for: `body` is a bounded prefix of the answer's body.
    fn refusal(&self, status: u16, headers: &Headers, body: &[u8]) -> Error;

    /// The delay a refusal asks for before the next attempt.
    fn retry_after(&self, headers: &Headers) -> Option<Duration> {
        crate::http::checks::retry_after(headers)
    }

    /// The service's id of one request, from the answer's headers.
    fn request_id<'h>(&self, headers: &'h Headers) -> Option<&'h str> {
        let _ = headers;
        None
    }

    /// The credential the pipeline authorizes with (shown, redacted, by `Debug`).
    fn credential(&self) -> &Credential {
        static ANONYMOUS: Credential = Credential::Anonymous;
        &ANONYMOUS
    }

    /// The edge itself, for the backend that built it to find its own type again.
    fn as_any(&self) -> &dyn Any;
}

/// The error of a refusal from what a backend read of it: the service's `code` and
/// `message` (redacted; a default by status when the answer had none) and its request id.
pub(crate) fn refusal(
    status: u16,
    code: Option<String>,
    message: Option<String>,
    request_id: Option<&str>,
) -> Error {
    let message = message
        .map(|m| crate::redact::redact(&m))
        .unwrap_or_else(|| default_message(status).to_string());
    Error::from_response(
        status,
        code.map(|c| ErrorCode::parse(&c)),
        message,
        request_id.map(str::to_string),
    )
}

fn default_message(status: u16) -> &'static str {
    match status {
        304 => "not modified",
        400 => "bad request",
        401 | 403 => "not authorized",
        404 => "not found",
        409 => "conflict",
        412 => "precondition failed",
        416 => "range not satisfiable",
        429 => "too many requests",
        500 => "internal server error",
        503 => "server busy",
        _ => "request failed",
    }
}

/// An `Authorization` header value, marked sensitive.
pub(crate) fn sensitive(value: String) -> Result<HeaderValue> {
    let mut value = HeaderValue::try_from(value).map_err(|_| {
        Error::new(ErrorKind::Auth, "the credential cannot be sent in a header")
            .with_sent(RequestSent::No)
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// Adds `name: value` to `headers` unless a header of that name is there.
pub(crate) fn stamp(headers: &mut Vec<(String, String)>, name: &str, value: impl Into<String>) {
    if !headers.iter().any(|(h, _)| h == name) {
        headers.push((name.to_string(), value.into()));
    }
}
