//! The pipeline: check, then per attempt stamp and authorize (through the backend's
//! [`Edge`], re-signing every attempt), send, classify. The only module that sends with
//! reqwest; it knows no service: what a request carries and how a refusal reads is the
//! edge's.
//!
//! Every call has a **total time budget** ([`ClientOptions::total_timeout`], default 60 s): all
//! attempts and the waits between them end by then, whatever the retry policy says. Each
//! attempt also has its own limit ([`ClientOptions::timeout`], default 30 s), cut short when
//! the budget ends first.
//!
//! What is retried (each attempt re-signed, delays from [`RetryPolicy`](crate::http::RetryPolicy)):
//!
//! | outcome | retried? |
//! |---|---|
//! | 408, 429, 500, 502, 503, 504 | yes (`Retry-After` honoured up to the policy's max delay) |
//! | connection could not be established | yes (nothing was sent) |
//! | timeout, connection dropped mid-request | only when the request's [`Intent`](crate::http::Intent) is a read or an idempotent write |
//! | 401 with a bearer token | once, at once, with a new token: the token's source is told ([`TokenProvider::token_rejected`](crate::credential::TokenProvider::token_rejected)) and the cache fetches another |
//! | 304, 409, 412 and every other status | never: they are answers, not failures |
//! | a header that cannot be sent (CR, LF, NUL, empty ETag condition) | never: `InvalidInput` before sending |

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use futures_util::{Stream, StreamExt};
use tokio::time::Instant;
use tracing::Instrument;

use crate::account::Endpoint;
use crate::credential::{AccessToken, Credential};
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::http::body::transport_error;
use crate::http::checks;
use crate::http::edge::{Authorization, Edge, Unsigned};
use crate::http::options::ClientOptions;
use crate::http::request::{Method, Request};
use crate::http::response::{Headers, Response};
use crate::http::telemetry::Call;

/// Sends requests to one service of one account. Cheap to clone (one `Arc`); clones share one
/// connection pool. Use a pipeline (and the clients built on it) within one tokio runtime.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// // Every client exposes its pipeline for operations azstore does not wrap.
/// let req = Request::new(Method::Get, container.name()).query("restype", "container").query("comp", "list");
/// let resp = container.pipeline().send(req).await?;
/// println!("{} bytes of listing XML", resp.body.len());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Pipeline {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// The endpoint's origin, parsed once; each request only sets path and query.
    origin_url: reqwest::Url,
    endpoint: Endpoint,
    /// The backend's protocol: stamps, authorization, refusals, names.
    edge: Arc<dyn Edge>,
    options: ClientOptions,
}

impl std::fmt::Debug for Pipeline {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pipeline")
            .field("endpoint", &self.inner.endpoint.to_string())
            .field("edge", &self.inner.edge)
            .finish()
    }
}

/// One connection pool per `Pipeline` (shared by its clones). Not a process-wide static: a
/// pooled connection belongs to the tokio runtime that opened it, and reusing it from another
/// runtime after that one shut down fails with "dispatch task is gone" (reqwest#1148) — a
/// transport error a non-idempotent request (Put Message) must not retry.
fn new_http(options: &ClientOptions) -> Result<reqwest::Client> {
    options.transport.build(options.pool_idle_timeout)
}

/// A response whose body has not been read yet (downloads).
///
/// ```no_run
/// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::http::{Method, Request};
/// let path = format!("{}/{}", blob.container_name(), blob.name());
/// let resp = blob.pipeline().send_streaming(Request::new(Method::Get, &path)).await?;
/// let body = resp.bytes().await?;
/// # let _ = body;
/// # Ok(()) }
/// ```
pub struct StreamingResponse {
    /// HTTP status.
    pub status: u16,
    /// Headers.
    pub headers: Headers,
    body: reqwest::Response,
    /// The longest wait for the next chunk of the body.
    idle: Duration,
}

impl std::fmt::Debug for StreamingResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "StreamingResponse {{ status: {}, .. }}", self.status)
    }
}

impl StreamingResponse {
    /// The body as a stream of chunks. Errors mid-stream are `Transport`/`Timeout` errors; a
    /// body that stalls for longer than the per-attempt timeout ends with a `Timeout` error.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send_streaming(Request::new(Method::Get, &path)).await?;
    /// use futures_util::TryStreamExt;
    /// let mut body = std::pin::pin!(resp.into_stream()); // not Unpin: pin it to poll it
    /// while let Some(chunk) = body.try_next().await? {
    ///     println!("{} bytes", chunk.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub fn into_stream(self) -> impl Stream<Item = Result<Bytes>> + Send + 'static {
        crate::http::body::Body::new(self.body.bytes_stream(), self.idle)
    }

    /// Reads the whole body (each chunk within the per-attempt timeout).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send_streaming(Request::new(Method::Get, &path)).await?;
    /// let all = resp.bytes().await?;
    /// # let _ = all;
    /// # Ok(()) }
    /// ```
    pub async fn bytes(self) -> Result<Bytes> {
        let mut out = bytes::BytesMut::new();
        let mut stream = std::pin::pin!(self.into_stream());
        while let Some(chunk) = stream.next().await {
            out.extend_from_slice(&chunk?);
        }
        Ok(out.freeze())
    }
}

/// The endpoint's origin as a URL.
pub(crate) fn origin_url(endpoint: &Endpoint) -> Result<reqwest::Url> {
    reqwest::Url::parse(endpoint.origin())
        .map_err(|_| Error::invalid_input(format!("endpoint {endpoint} is not a valid URL")))
}

impl Pipeline {
    /// A pipeline to `endpoint` whose requests carry what `edge`, a backend's protocol, says
    /// (storage/edge.rs: [`Pipeline::new`]; the Cosmos DB client's own).
    pub(crate) fn with_edge(
        endpoint: Endpoint,
        edge: Arc<dyn Edge>,
        options: ClientOptions,
    ) -> Result<Pipeline> {
        Ok(Pipeline {
            inner: Arc::new(Inner {
                http: new_http(&options)?,
                origin_url: origin_url(&endpoint)?,
                endpoint,
                edge,
                options,
            }),
        })
    }

    /// The backend's edge.
    pub(crate) fn edge(&self) -> &dyn Edge {
        &*self.inner.edge
    }

    /// The service endpoint.
    ///
    /// ```no_run
    /// # fn demo(pipeline: azstore::http::Pipeline) {
    /// println!("{}", pipeline.endpoint().url());
    /// # }
    /// ```
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// The credential.
    ///
    /// ```no_run
    /// # fn demo(pipeline: azstore::http::Pipeline) {
    /// println!("{:?}", pipeline.credential()); // secrets redacted
    /// # }
    /// ```
    pub fn credential(&self) -> &Credential {
        self.inner.edge.credential()
    }

    /// The time allowed per attempt (a streamed range's body is read within it too).
    pub(crate) fn attempt_timeout(&self) -> Duration {
        self.inner.options.timeout
    }

    /// The URL of `path` (unencoded) without query, e.g. for a copy source.
    ///
    /// ```no_run
    /// # fn demo(pipeline: azstore::http::Pipeline) {
    /// println!("{}", pipeline.url_of("reports/q4 final.json")); // percent-encoded
    /// # }
    /// ```
    pub fn url_of(&self, path: &str) -> String {
        format!(
            "{}/{}",
            self.inner.endpoint.url(),
            crate::http::encode_path(path)
        )
    }

    /// Sends `req`, retrying transient failures, and reads the body. A non-2xx answer is
    /// returned as an [`Error`].
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// match blob.pipeline().send(Request::new(Method::Head, &path)).await {
    ///     Ok(resp) => println!("{}", resp.status),
    ///     Err(e) if e.is_not_found() => println!("no such blob"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn send(&self, req: Request) -> Result<Response> {
        self.execute(req, true).await.map(|r| match r {
            Attempt::Read(r) => r,
            Attempt::Streaming(_) => unreachable!("read requested"),
        })
    }

    /// Sends `req` and returns as soon as the headers arrived; the body is streamed by the
    /// caller. Error responses are still read and classified.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send_streaming(Request::new(Method::Get, &path)).await?;
    /// println!("{} {:?}", resp.status, resp.headers.get("content-length"));
    /// # Ok(()) }
    /// ```
    pub async fn send_streaming(&self, req: Request) -> Result<StreamingResponse> {
        self.execute(req, false).await.map(|r| match r {
            Attempt::Streaming(r) => r,
            Attempt::Read(_) => unreachable!("streaming requested"),
        })
    }

    async fn execute(&self, req: Request, read_body: bool) -> Result<Attempt> {
        checks::validate_request(&req)?;
        self.inner.edge.check(&req)?;
        let call = Call::start(&*self.inner.edge, &req);
        let mut attempts = 0;
        let result = self
            .attempts(&req, read_body, &call, &mut attempts)
            .instrument(call.span().clone())
            .await;
        call.end(attempts, &result);
        result
    }

    /// The attempt loop of one call; `attempt` counts the attempts made.
    async fn attempts(
        &self,
        req: &Request,
        read_body: bool,
        call: &Call,
        attempt: &mut u32,
    ) -> Result<Attempt> {
        let options = &self.inner.options;
        let client_request_id = request_id();
        let mut backoff = options.retry.schedule();
        let deadline = Instant::now().checked_add(options.total_timeout);
        // A bearer token refused with 401 is reported to its source, and the request repeated
        // once with the next token (a 401 means the service did nothing).
        let mut token_renewed = false;
        loop {
            *attempt += 1;
            let attempt = *attempt;
            let span = call.attempt_span(
                attempt,
                req,
                &client_request_id,
                &self.inner.origin_url,
                || self.full_path(req),
            );
            let limit = match deadline {
                Some(d) => AttemptLimit::until(d, options.timeout),
                None => AttemptLimit::per_attempt(options.timeout),
            };
            let mut token = None;
            let result = self
                .attempt(req, &client_request_id, read_body, limit, &mut token)
                .instrument(span.clone())
                .await;
            let (err, retry_after) = match result {
                Ok(ok) => {
                    // Span fields cost a header lookup each: only when someone listens.
                    if !span.is_disabled() {
                        let id = self.inner.edge.request_id(ok.headers());
                        Call::answered(&span, ok.status(), id);
                    }
                    return Ok(ok);
                }
                Err((e, retry_after)) => (e, retry_after),
            };
            Call::failed(&span, &err);
            if err.status() == Some(401) && !token_renewed {
                if let Some(token) = &token {
                    if self.inner.edge.token_refused(token) {
                        token_renewed = true;
                        tracing::debug!(parent: &span, "bearer token refused (401); repeating with a new one");
                        continue;
                    }
                }
            }
            let retryable = match err.kind() {
                ErrorKind::Transport | ErrorKind::Timeout => {
                    err.request_sent() == RequestSent::No
                        || req.intent.repeatable_after_ambiguous_failure()
                }
                _ => err.is_retryable(),
            };
            if !retryable {
                return Err(err);
            }
            let Some(delay) = backoff.next_delay_after(retry_after) else {
                return Err(err);
            };
            if let Some(d) = deadline {
                // Waiting and then sending another attempt must fit in the budget.
                if Instant::now().checked_add(delay).is_none_or(|t| t >= d) {
                    return Err(err.context(format!(
                        "gave up after {attempt} attempt(s): the total time budget of {:?} \
                         leaves no room for another",
                        options.total_timeout
                    )));
                }
            }
            tracing::debug!(parent: &span, error = %err, ?delay, "transient failure, retrying");
            tokio::time::sleep(delay).await;
        }
    }

    async fn attempt(
        &self,
        req: &Request,
        client_request_id: &str,
        read_body: bool,
        limit: AttemptLimit,
        token: &mut Option<AccessToken>,
    ) -> std::result::Result<Attempt, (Error, Option<Duration>)> {
        let (built, used) = self
            .build(req, client_request_id)
            .await
            .map_err(|e| (e, None))?;
        *token = used;
        let resp = match tokio::time::timeout_at(limit.until, self.inner.http.execute(built)).await
        {
            Err(_) => return Err((limit.timed_out("no response"), None)),
            Ok(Err(e)) => return Err((transport_error(e, false), None)),
            Ok(Ok(r)) => r,
        };
        let mut resp = resp;
        let status = resp.status().as_u16();
        let headers = Headers::from_map(std::mem::take(resp.headers_mut()));
        if (200..300).contains(&status) {
            if !read_body {
                return Ok(Attempt::Streaming(StreamingResponse {
                    status,
                    headers,
                    body: resp,
                    idle: self.inner.options.timeout,
                }));
            }
            let cap = req.response_limit.cap(resp.content_length());
            let body = match tokio::time::timeout_at(
                limit.until,
                crate::transport::read_within(&mut resp, cap),
            )
            .await
            {
                Err(_) => return Err((limit.timed_out("response body not read"), None)),
                Ok(Err(e)) => return Err((transport_error(e, true), None)),
                Ok(Ok(Ok(b))) => b,
                Ok(Ok(Err(read))) => {
                    let e = Error::new(
                        ErrorKind::ResponseTooLarge,
                        format!(
                            "the {status} response's body is larger than this operation reads \
                             into memory ({}; {read} bytes read before stopping): a misbehaving \
                             server or proxy, or a larger page than expected",
                            crate::http::checks::describe_bytes(cap)
                        ),
                    );
                    return Err((e, None));
                }
            };
            return Ok(Attempt::Read(Response {
                status,
                headers,
                body,
            }));
        }
        let retry_after = self.inner.edge.retry_after(&headers);
        // Only a bounded prefix of an error body is read: enough for any service error, and a
        // runaway body (a proxy's page, a misbehaving server) cannot take memory or time.
        let body = tokio::time::timeout_at(
            limit.until,
            checks::read_capped(&mut resp, checks::ERROR_BODY_LIMIT),
        )
        .await
        .ok()
        .and_then(|r| r.ok())
        .map(|(body, _)| body)
        .unwrap_or_default();
        Err((
            self.inner.edge.refusal(status, &headers, &body),
            retry_after,
        ))
    }

    /// The request's path below the endpoint's origin (with the endpoint's path prefix).
    fn full_path(&self, req: &Request) -> String {
        // Pushed, not `format!`ed: this runs on every attempt of every request.
        let prefix = self.inner.endpoint.path_prefix();
        let mut full_path = String::with_capacity(prefix.len() + 1 + req.path.len());
        full_path.push_str(prefix);
        full_path.push('/');
        full_path.push_str(&req.path);
        full_path
    }

    /// Stamps, authorizes and builds the reqwest request for one attempt; with it, the bearer
    /// token it carries, if any.
    async fn build(
        &self,
        req: &Request,
        client_request_id: &str,
    ) -> Result<(reqwest::Request, Option<AccessToken>)> {
        let inner = &*self.inner;
        let mut headers = req.headers.clone();
        inner.edge.stamp(&mut headers, client_request_id);
        let full_path = self.full_path(req);
        let authorization = inner
            .edge
            .authorize(Unsigned {
                method: req.method,
                path: &full_path,
                query: &req.query,
                headers: &mut headers,
                content_length: req.body.len() as u64,
            })
            .decided()
            .await?;
        let (extra_query, authorization, token) = match authorization {
            Authorization::None => (Vec::new(), None, None),
            Authorization::Header(value) => (Vec::new(), Some(value), None),
            Authorization::Bearer(value, token) => (Vec::new(), Some(value), Some(token)),
            Authorization::Query(pairs) => (pairs, None, None),
        };
        let query = req.query_string(&extra_query);
        let mut url = inner.origin_url.clone();
        url.set_path(&full_path);
        url.set_query((!query.is_empty()).then_some(query.as_str()));
        let method = reqwest::Method::from_bytes(req.method.as_str().as_bytes())
            .map_err(|_| Error::invalid_input("invalid HTTP method"))?;
        // Straight into reqwest's header map: each value moves in without a copy, and no
        // builder re-parses name and value per call.
        let mut map = reqwest::header::HeaderMap::with_capacity(headers.len() + 1);
        for (k, v) in headers {
            let name = reqwest::header::HeaderName::from_bytes(k.as_bytes());
            let value = reqwest::header::HeaderValue::from_maybe_shared(Bytes::from(v));
            match (name, value) {
                (Ok(name), Ok(value)) => {
                    map.append(name, value);
                }
                _ => {
                    return Err(Error::invalid_input(format!(
                        "header {k} is not a valid HTTP header"
                    )));
                }
            }
        }
        if let Some(value) = authorization {
            map.insert(reqwest::header::AUTHORIZATION, value);
        }
        let mut built = reqwest::Request::new(method, url);
        if req.body.is_empty() {
            if matches!(
                req.method,
                Method::Put | Method::Post | Method::Merge | Method::Patch
            ) {
                map.insert(
                    reqwest::header::CONTENT_LENGTH,
                    reqwest::header::HeaderValue::from_static("0"),
                );
            }
        } else {
            *built.body_mut() = Some(req.body.clone().into());
        }
        *built.headers_mut() = map;
        Ok((built, token))
    }
}

/// When one attempt must end: its own timeout, or the end of the call's budget if sooner.
#[derive(Clone, Copy)]
struct AttemptLimit {
    until: Instant,
    per_attempt: Duration,
    /// Whether `until` is the end of the call's budget (not the attempt's own timeout).
    budget: bool,
}

impl AttemptLimit {
    fn until(deadline: Instant, per_attempt: Duration) -> AttemptLimit {
        match Instant::now().checked_add(per_attempt) {
            Some(own) if own < deadline => AttemptLimit {
                until: own,
                per_attempt,
                budget: false,
            },
            _ => AttemptLimit {
                until: deadline,
                per_attempt,
                budget: true,
            },
        }
    }

    fn per_attempt(per_attempt: Duration) -> AttemptLimit {
        // A per-attempt timeout too large for the clock: about 30 years is "never".
        let never = Duration::from_secs(86_400 * 365 * 30);
        AttemptLimit {
            until: Instant::now() + per_attempt.min(never),
            per_attempt,
            budget: false,
        }
    }

    /// The error of an attempt that ran out of time: `what` did not happen within the limit.
    fn timed_out(&self, what: &str) -> Error {
        let limit = if self.budget {
            "the call's total time budget".to_string()
        } else {
            format!("the per-attempt timeout of {:?}", self.per_attempt)
        };
        Error::new(ErrorKind::Timeout, format!("{what} within {limit}"))
            .with_sent(RequestSent::Maybe)
    }
}

enum Attempt {
    Read(Response),
    Streaming(StreamingResponse),
}

impl Attempt {
    fn status(&self) -> u16 {
        match self {
            Attempt::Read(r) => r.status,
            Attempt::Streaming(r) => r.status,
        }
    }

    fn headers(&self) -> &Headers {
        match self {
            Attempt::Read(r) => &r.headers,
            Attempt::Streaming(r) => &r.headers,
        }
    }
}

/// A random (v4) UUID for the client's request id, drawn from the thread-local user-space
/// generator (ChaCha, seeded from the OS once and periodically after): no system call per
/// request, where `Uuid::new_v4` asks the OS every time.
fn request_id() -> String {
    let id = uuid::Builder::from_random_bytes(rand::random()).into_uuid();
    let mut buf = [0u8; uuid::fmt::Hyphenated::LENGTH];
    id.hyphenated().encode_lower(&mut buf).to_string()
}
