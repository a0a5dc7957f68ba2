//! A fault-injecting HTTP/1.1 proxy for the hardening tests.
//!
//! [`FaultProxy`] sits between a client and a real service (Azurite, the local File server)
//! and forwards every request unchanged, unless a [`Rule`] matches it: then it plays one
//! [`Fault`] instead — a connection reset before or after the request reached the service, a
//! response lost after the service applied the write, stalled headers or body, a truncated
//! body, a wrong `Content-Length`, a 500/503 with or without `Retry-After`, a server that
//! never answers, an HTML page instead of XML/JSON, a huge error body.
//!
//! Requests from the client are parsed with `httparse`; forwarded requests go to the service
//! through a hyper HTTP/1.1 client connection (one per request); responses are written back
//! byte by byte by the proxy, so that a fault can cut, stall or falsify them at any point.
//! Resets use `SO_LINGER` 0, so the client sees a TCP RST, not a clean close.
//!
//! A [`FaultProxy::standalone`] proxy has no service behind it: every request must be answered
//! by a synthetic fault (unmatched requests get 502). It does no I/O beyond the loopback
//! connection to the client, so tests with paused tokio time can run schedules of minutes in
//! milliseconds.
//!
//! ```no_run
//! # async fn demo() {
//! use azstore::Service;
//! use testkit::fault::{Fault, FaultProxy, Rule};
//! let account = testkit::account();
//! let proxy = FaultProxy::start(&account, Service::Blob).await;
//! proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
//! let via_proxy = proxy.account(&account);
//! # let _ = via_proxy; }
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use azstore::{Service, StorageAccount};
use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// One fault, played instead of a plain forward.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Read the request, then reset the connection. Nothing reaches the service.
    ResetBeforeForward,
    /// Forward the request, wait for the service's answer, then reset the connection: the
    /// service applied the request, the client sees a reset.
    ResetAfterForward,
    /// Forward the request, wait for the service's answer, then close the connection cleanly
    /// without passing the answer on (a response lost after the write applied).
    LoseResponse,
    /// Read the request and never answer (nothing is forwarded; the connection stays open
    /// until the client gives up).
    NeverAnswer,
    /// Forward the request (the service applies it) and never send the response headers.
    StallHeaders,
    /// Forward, send the headers and the first `after` bytes of the body, then stall.
    StallBody {
        /// Body bytes sent before stalling.
        after: usize,
    },
    /// Forward, send the headers and the first `after` bytes of the body, then close.
    TruncateBody {
        /// Body bytes sent before closing.
        after: usize,
    },
    /// Forward, then send the whole body under a `Content-Length` of its length plus `delta`
    /// and close (a negative delta cuts the body short *inside* a well-formed message).
    WrongContentLength {
        /// Added to the true length.
        delta: i64,
    },
    /// Answer with `status` (and `Retry-After` when given) and an XML error body with `code`,
    /// without forwarding.
    Status {
        /// HTTP status.
        status: u16,
        /// The `Retry-After` header value, if any.
        retry_after: Option<String>,
        /// The error code (`x-ms-error-code` and `<Code>`).
        code: String,
    },
    /// Answer with `status`, this content type and body, without forwarding (an HTML page from
    /// a captive proxy, garbage).
    Body {
        /// HTTP status.
        status: u16,
        /// `Content-Type`.
        content_type: String,
        /// The body.
        body: Vec<u8>,
    },
    /// Answer with `status` and a body of `len` bytes, streamed in 64 KiB chunks (never held
    /// in memory), without forwarding. [`FaultProxy::streamed_bytes`] tells how much of it the
    /// client accepted.
    HugeBody {
        /// HTTP status.
        status: u16,
        /// Declared and offered body length.
        len: u64,
    },
}

impl Fault {
    /// `status` with an error code and no `Retry-After`.
    pub fn status(status: u16, code: &str) -> Fault {
        Fault::Status {
            status,
            retry_after: None,
            code: code.to_string(),
        }
    }

    /// 503 `ServerBusy` with `Retry-After: <retry_after>`.
    pub fn busy_retry_after(retry_after: &str) -> Fault {
        Fault::Status {
            status: 503,
            retry_after: Some(retry_after.to_string()),
            code: "ServerBusy".to_string(),
        }
    }

    /// A 200 answer that is an HTML page.
    pub fn html_page() -> Fault {
        Fault::Body {
            status: 200,
            content_type: "text/html; charset=utf-8".to_string(),
            body: b"<html><head><title>Sign in</title></head><body><p>Please sign in to \
                    continue.</p></body></html>"
                .to_vec(),
        }
    }

    /// Whether the request is forwarded to the service before the fault plays.
    pub fn forwards(&self) -> bool {
        matches!(
            self,
            Fault::ResetAfterForward
                | Fault::LoseResponse
                | Fault::StallHeaders
                | Fault::StallBody { .. }
                | Fault::TruncateBody { .. }
                | Fault::WrongContentLength { .. }
        )
    }

    fn name(&self) -> &'static str {
        match self {
            Fault::ResetBeforeForward => "reset-before-forward",
            Fault::ResetAfterForward => "reset-after-forward",
            Fault::LoseResponse => "lose-response",
            Fault::NeverAnswer => "never-answer",
            Fault::StallHeaders => "stall-headers",
            Fault::StallBody { .. } => "stall-body",
            Fault::TruncateBody { .. } => "truncate-body",
            Fault::WrongContentLength { .. } => "wrong-content-length",
            Fault::Status { .. } => "status",
            Fault::Body { .. } => "body",
            Fault::HugeBody { .. } => "huge-body",
        }
    }
}

/// When to play a fault: requests matching the method and target filters, a number of times.
#[derive(Clone, Debug)]
#[must_use]
pub struct Rule {
    fault: Fault,
    method: Option<String>,
    contains: Option<String>,
    /// Matching requests to let through before the fault starts playing.
    skip: usize,
    remaining: usize,
    /// Of the matching requests, the share (per 10,000) the fault plays on; the others pass.
    per_10k: u32,
}

impl Rule {
    /// Plays `fault` on the next request (any method, any target), once.
    pub fn new(fault: Fault) -> Rule {
        Rule {
            fault,
            method: None,
            contains: None,
            skip: 0,
            remaining: 1,
            per_10k: 10_000,
        }
    }

    /// Only requests with this method (`"PUT"`, `"GET"`, …).
    pub fn method(mut self, method: &str) -> Rule {
        self.method = Some(method.to_ascii_uppercase());
        self
    }

    /// Only requests whose target (path and query) contains `s`, e.g. `"comp=lease"`.
    pub fn target_contains(mut self, s: &str) -> Rule {
        self.contains = Some(s.to_string());
        self
    }

    /// Lets the first `n` matching requests through unchanged; the fault plays from the
    /// next one on (e.g. "the read after the write").
    pub fn after(mut self, n: usize) -> Rule {
        self.skip = n;
        self
    }

    /// Plays `n` times (default once).
    pub fn times(mut self, n: usize) -> Rule {
        self.remaining = n;
        self
    }

    /// Plays on every matching request.
    pub fn always(self) -> Rule {
        self.times(usize::MAX)
    }

    /// Plays on each matching request with probability `p` (0.0-1.0), drawn independently;
    /// the others pass unchanged (e.g. `.always().chance(0.05)`: 5 % of replies lost).
    pub fn chance(mut self, p: f64) -> Rule {
        self.per_10k = (p.clamp(0.0, 1.0) * 10_000.0).round() as u32;
        self
    }

    fn matches(&self, method: &str, target: &str) -> bool {
        self.remaining > 0
            && self.method.as_deref().is_none_or(|m| m == method)
            && self.contains.as_deref().is_none_or(|c| target.contains(c))
    }
}

/// A request the proxy received, and what it did with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Seen {
    /// Method.
    pub method: String,
    /// Path and query.
    pub target: String,
    /// The fault played, if any (its name, e.g. `"lose-response"`).
    pub fault: Option<&'static str>,
    /// Whether the request reached the service (and its answer came back to the proxy).
    pub forwarded: bool,
}

#[derive(Default)]
struct State {
    /// `host:port` of the service, or `None` for a standalone proxy.
    upstream: Option<String>,
    rules: Mutex<Vec<Rule>>,
    log: Mutex<Vec<Seen>>,
    streamed: AtomicU64,
}

impl State {
    fn take_fault(&self, method: &str, target: &str) -> Option<Fault> {
        let mut rules = self.rules.lock().unwrap();
        let rule = rules.iter_mut().find(|r| r.matches(method, target))?;
        if rule.skip > 0 {
            rule.skip -= 1;
            return None;
        }
        if rule.per_10k < 10_000 && (uuid::Uuid::new_v4().as_u128() % 10_000) as u32 >= rule.per_10k
        {
            return None;
        }
        if rule.remaining != usize::MAX {
            rule.remaining -= 1;
        }
        Some(rule.fault.clone())
    }

    fn record(&self, method: &str, target: &str, fault: Option<&Fault>) -> usize {
        let mut log = self.log.lock().unwrap();
        log.push(Seen {
            method: method.to_string(),
            target: target.to_string(),
            fault: fault.map(Fault::name),
            forwarded: false,
        });
        log.len() - 1
    }

    fn mark_forwarded(&self, i: usize) {
        if let Some(s) = self.log.lock().unwrap().get_mut(i) {
            s.forwarded = true;
        }
    }
}

/// The proxy; it stops accepting connections when dropped (connections already open finish
/// their current request).
pub struct FaultProxy {
    state: Arc<State>,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FaultProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FaultProxy {
    /// A proxy in front of `service` of `account` (its endpoint's host and port).
    pub async fn start(account: &StorageAccount, service: Service) -> FaultProxy {
        let ep = account
            .endpoint(service)
            .unwrap_or_else(|e| panic!("the account has no {service:?} endpoint: {e}"));
        let hostport = ep
            .origin()
            .split_once("://")
            .map(|(_, h)| h.to_string())
            .expect("endpoint origin has a scheme");
        FaultProxy::spawn(Some(hostport)).await
    }

    /// A proxy in front of any HTTP/1.1 server at `host:port` (e.g. a local Cosmos DB
    /// server).
    pub async fn to_host(hostport: &str) -> FaultProxy {
        FaultProxy::spawn(Some(hostport.to_string())).await
    }

    /// A proxy with no service behind it: only faults answer (unmatched requests get 502).
    pub async fn standalone() -> FaultProxy {
        FaultProxy::spawn(None).await
    }

    async fn spawn(upstream: Option<String>) -> FaultProxy {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let state = Arc::new(State {
            upstream,
            ..State::default()
        });
        let st = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let _ = client.set_nodelay(true);
                tokio::spawn(serve(client, st.clone()));
            }
        });
        FaultProxy { state, port, task }
    }

    /// The proxy's port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `account` with every endpoint it has pointed at this proxy (path prefixes kept).
    pub fn account(&self, account: &StorageAccount) -> StorageAccount {
        let mut out = account.clone();
        for svc in [Service::Blob, Service::Queue, Service::Table, Service::File] {
            if let Ok(ep) = account.endpoint(svc) {
                out = out
                    .with_endpoint(
                        svc,
                        &format!("http://127.0.0.1:{}{}", self.port, ep.path_prefix()),
                    )
                    .expect("proxy endpoint");
            }
        }
        out
    }

    /// The development account with every endpoint at this proxy (for standalone proxies).
    pub fn dev_account(&self) -> StorageAccount {
        let mut a = StorageAccount::development();
        for svc in [Service::Blob, Service::Queue, Service::Table, Service::File] {
            a = a
                .with_endpoint(
                    svc,
                    &format!("http://127.0.0.1:{}/{}", self.port, azstore::DEV_ACCOUNT),
                )
                .expect("proxy endpoint");
        }
        a
    }

    /// Adds a rule (rules are tried in the order they were added).
    pub fn inject(&self, rule: Rule) {
        self.state.rules.lock().unwrap().push(rule);
    }

    /// Removes every rule: from now on requests are forwarded unchanged.
    pub fn clear(&self) {
        self.state.rules.lock().unwrap().clear();
    }

    /// Every request received so far, in order.
    pub fn requests(&self) -> Vec<Seen> {
        self.state.log.lock().unwrap().clone()
    }

    /// How many requests with `method` were received.
    pub fn count(&self, method: &str) -> usize {
        self.requests()
            .iter()
            .filter(|s| s.method == method)
            .count()
    }

    /// How many requests with `method` whose target contains `s` were received.
    pub fn count_matching(&self, method: &str, s: &str) -> usize {
        self.requests()
            .iter()
            .filter(|r| r.method == method && r.target.contains(s))
            .count()
    }

    /// How many requests with `method` reached the service.
    pub fn forwarded(&self, method: &str) -> usize {
        self.requests()
            .iter()
            .filter(|s| s.method == method && s.forwarded)
            .count()
    }

    /// Bytes of [`Fault::HugeBody`] bodies the client's socket accepted so far.
    pub fn streamed_bytes(&self) -> u64 {
        self.state.streamed.load(Ordering::SeqCst)
    }
}

/// One parsed client request.
struct ClientRequest {
    method: String,
    target: String,
    headers: Vec<(String, Vec<u8>)>,
    body: Bytes,
}

/// Serves one client connection: request after request until it closes or a fault ends it.
async fn serve(mut client: TcpStream, st: Arc<State>) {
    let mut buf = Vec::new();
    loop {
        let req = match read_request(&mut client, &mut buf).await {
            Ok(Some(r)) => r,
            Ok(None) => return,
            Err(()) => {
                let _ = write_simple(&mut client, 501, "text/plain", b"unsupported request").await;
                return;
            }
        };
        let fault = st.take_fault(&req.method, &req.target);
        let index = st.record(&req.method, &req.target, fault.as_ref());
        let head_only = req.method == "HEAD";
        let forwarded = match &fault {
            Some(f) if !f.forwards() => None,
            _ => match &st.upstream {
                None => None,
                Some(up) => match forward(up, &req).await {
                    Ok(resp) => {
                        st.mark_forwarded(index);
                        Some(resp)
                    }
                    Err(e) => {
                        let msg = format!("proxy could not reach the service: {e}");
                        let _ = write_simple(&mut client, 502, "text/plain", msg.as_bytes()).await;
                        return;
                    }
                },
            },
        };
        match (fault, forwarded) {
            (None, Some(resp)) => {
                if write_response(&mut client, &resp, head_only, None)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            (None, None) => {
                let _ = write_simple(&mut client, 502, "text/plain", b"no rule, no upstream").await;
                return;
            }
            (Some(Fault::ResetBeforeForward), _) | (Some(Fault::ResetAfterForward), _) => {
                reset(client);
                return;
            }
            (Some(Fault::LoseResponse), _) => {
                let _ = client.shutdown().await;
                return;
            }
            (Some(Fault::NeverAnswer | Fault::StallHeaders), _) => {
                hold(client).await;
                return;
            }
            (Some(Fault::StallBody { after }), Some(resp)) => {
                if write_response(&mut client, &resp, head_only, Some(Cut::After(after)))
                    .await
                    .is_ok()
                {
                    hold(client).await;
                }
                return;
            }
            (Some(Fault::TruncateBody { after }), Some(resp)) => {
                let _ =
                    write_response(&mut client, &resp, head_only, Some(Cut::After(after))).await;
                let _ = client.shutdown().await;
                return;
            }
            (Some(Fault::WrongContentLength { delta }), Some(resp)) => {
                let _ =
                    write_response(&mut client, &resp, head_only, Some(Cut::Declare(delta))).await;
                let _ = client.shutdown().await;
                return;
            }
            (
                Some(Fault::Status {
                    status,
                    retry_after,
                    code,
                }),
                _,
            ) => {
                let body = format!(
                    "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code>\
                     <Message>Injected by the fault proxy.</Message></Error>"
                );
                let mut head = format!(
                    "HTTP/1.1 {status} Injected\r\ncontent-type: application/xml\r\n\
                     x-ms-error-code: {code}\r\nx-ms-request-id: fault-{index}\r\n\
                     content-length: {}\r\n",
                    body.len()
                );
                if let Some(ra) = retry_after {
                    head.push_str(&format!("retry-after: {ra}\r\n"));
                }
                head.push_str("\r\n");
                let mut out = head.into_bytes();
                if !head_only {
                    out.extend_from_slice(body.as_bytes());
                }
                if client.write_all(&out).await.is_err() {
                    return;
                }
            }
            (
                Some(Fault::Body {
                    status,
                    content_type,
                    body,
                }),
                _,
            ) => {
                if write_simple(&mut client, status, &content_type, &body)
                    .await
                    .is_err()
                {
                    return;
                }
            }
            (Some(Fault::HugeBody { status, len }), _) => {
                let head = format!(
                    "HTTP/1.1 {status} Injected\r\ncontent-type: application/xml\r\n\
                     content-length: {len}\r\n\r\n"
                );
                if client.write_all(head.as_bytes()).await.is_err() {
                    return;
                }
                let chunk = vec![b'x'; 64 * 1024];
                let mut left = len;
                while left > 0 {
                    let n = left.min(chunk.len() as u64) as usize;
                    if client.write_all(&chunk[..n]).await.is_err() {
                        return;
                    }
                    st.streamed.fetch_add(n as u64, Ordering::SeqCst);
                    left -= n as u64;
                }
            }
            // A forwarding fault without a service behind the proxy: nothing to cut.
            (Some(_), None) => {
                let _ = write_simple(&mut client, 502, "text/plain", b"no upstream").await;
                return;
            }
        }
    }
}

/// Reads one request (head and `Content-Length` body). `Ok(None)`: the client closed;
/// `Err`: a request this proxy does not handle (chunked bodies, malformed heads).
async fn read_request(
    client: &mut TcpStream,
    buf: &mut Vec<u8>,
) -> Result<Option<ClientRequest>, ()> {
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let mut headers = [httparse::EMPTY_HEADER; 96];
        let mut parsed = httparse::Request::new(&mut headers);
        match parsed.parse(buf) {
            Ok(httparse::Status::Complete(head_len)) => {
                let method = parsed.method.ok_or(())?.to_string();
                let target = parsed.path.ok_or(())?.to_string();
                let headers: Vec<(String, Vec<u8>)> = parsed
                    .headers
                    .iter()
                    .map(|h| (h.name.to_ascii_lowercase(), h.value.to_vec()))
                    .collect();
                if headers
                    .iter()
                    .any(|(k, v)| k == "transfer-encoding" && !v.eq_ignore_ascii_case(b"identity"))
                {
                    return Err(());
                }
                let body_len: usize = headers
                    .iter()
                    .find(|(k, _)| k == "content-length")
                    .map(|(_, v)| {
                        std::str::from_utf8(v)
                            .ok()
                            .and_then(|s| s.trim().parse().ok())
                            .ok_or(())
                    })
                    .transpose()?
                    .unwrap_or(0);
                while buf.len() < head_len + body_len {
                    let n = client.read(&mut chunk).await.map_err(|_| ())?;
                    if n == 0 {
                        return Ok(None);
                    }
                    buf.extend_from_slice(&chunk[..n]);
                }
                let body = Bytes::copy_from_slice(&buf[head_len..head_len + body_len]);
                buf.drain(..head_len + body_len);
                return Ok(Some(ClientRequest {
                    method,
                    target,
                    headers,
                    body,
                }));
            }
            Ok(httparse::Status::Partial) => {
                let n = match client.read(&mut chunk).await {
                    Ok(n) => n,
                    Err(_) => return Ok(None),
                };
                if n == 0 {
                    return Ok(None);
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            Err(_) => return Err(()),
        }
    }
}

/// The service's answer to a forwarded request.
struct Upstream {
    status: u16,
    headers: Vec<(String, Vec<u8>)>,
    body: Bytes,
}

/// Sends `req` to the service over a fresh hyper HTTP/1.1 connection and reads the answer.
async fn forward(upstream: &str, req: &ClientRequest) -> Result<Upstream, String> {
    let tcp = TcpStream::connect(upstream)
        .await
        .map_err(|e| e.to_string())?;
    let _ = tcp.set_nodelay(true);
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(tcp))
            .await
            .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut builder = http::Request::builder()
        .method(req.method.as_str())
        .uri(req.target.as_str());
    for (k, v) in &req.headers {
        if k == "connection" || k == "keep-alive" {
            continue;
        }
        builder = builder.header(k.as_str(), v.as_slice());
    }
    let request = builder
        .body(Full::new(req.body.clone()))
        .map_err(|e| e.to_string())?;
    let resp = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    let (parts, body) = resp.into_parts();
    let body = body.collect().await.map_err(|e| e.to_string())?.to_bytes();
    Ok(Upstream {
        status: parts.status.as_u16(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| (k.as_str().to_string(), v.as_bytes().to_vec()))
            .collect(),
        body,
    })
}

/// How a forwarded response is falsified.
#[derive(Clone, Copy)]
enum Cut {
    /// Send only this many body bytes (under the true `Content-Length`).
    After(usize),
    /// Send the whole body under a `Content-Length` off by this much.
    Declare(i64),
}

/// Writes the service's answer: its status and headers (framing headers replaced by our own
/// `Content-Length`) and body, falsified as `cut` says.
async fn write_response(
    client: &mut TcpStream,
    resp: &Upstream,
    head_only: bool,
    cut: Option<Cut>,
) -> std::io::Result<()> {
    let no_body = head_only || resp.status == 204 || resp.status == 304 || resp.status < 200;
    let mut out = format!("HTTP/1.1 {} Proxied\r\n", resp.status).into_bytes();
    for (k, v) in &resp.headers {
        let framing = matches!(
            k.as_str(),
            "transfer-encoding" | "connection" | "keep-alive" | "content-length"
        );
        if framing && !(no_body && k == "content-length") {
            continue;
        }
        out.extend_from_slice(k.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(v);
        out.extend_from_slice(b"\r\n");
    }
    let body: &[u8] = if no_body { &[] } else { &resp.body };
    let (declared, sent) = match cut {
        None => (body.len() as i64, body.len()),
        Some(Cut::After(n)) => (body.len() as i64, n.min(body.len())),
        Some(Cut::Declare(delta)) => ((body.len() as i64 + delta).max(0), body.len()),
    };
    if !no_body {
        out.extend_from_slice(format!("content-length: {declared}\r\n").as_bytes());
    }
    out.extend_from_slice(b"\r\n");
    out.extend_from_slice(&body[..sent]);
    client.write_all(&out).await?;
    client.flush().await
}

async fn write_simple(
    client: &mut TcpStream,
    status: u16,
    content_type: &str,
    body: &[u8],
) -> std::io::Result<()> {
    let mut out = format!(
        "HTTP/1.1 {status} Injected\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(body);
    client.write_all(&out).await?;
    client.flush().await
}

/// Closes with a TCP RST.
fn reset(client: TcpStream) {
    let _ = client.set_zero_linger();
    drop(client);
}

/// Keeps the connection open, answering nothing, until the client closes it.
async fn hold(mut client: TcpStream) {
    let mut sink = [0u8; 4096];
    loop {
        match client.read(&mut sink).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}
