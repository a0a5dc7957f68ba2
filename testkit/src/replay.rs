//! Replay of recorded Azure Storage traffic (vcrpy cassettes, see
//! `../shared/azure-recordings/README.md`).
//!
//! [`Recording::load`] reads one cassette; [`ReplayServer`] is an in-process HTTP/1.1 server
//! on a loopback ephemeral port (hyper) that answers the requests it receives with the
//! recorded responses, in order — status, headers and body bytes exactly as recorded, with
//! `Transfer-Encoding` dropped and `Content-Length` recomputed — and captures every request
//! it received so a test can compare it with the recorded one.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use base64::Engine;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::TokioIo;
use serde_yaml::Value;
use tokio::net::TcpListener;
use tokio::sync::oneshot;

/// The environment variable that overrides where the recordings are.
pub const RECORDINGS_ENV: &str = "AZSTORE_RECORDINGS";

/// Where the corpus is: `$AZSTORE_RECORDINGS`, else `../shared/azure-recordings` beside the
/// repository root.
pub fn corpus_dir() -> PathBuf {
    if let Some(p) = std::env::var_os(RECORDINGS_ENV) {
        return PathBuf::from(p);
    }
    // testkit/ is one level below the repository root.
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("shared")
        .join("azure-recordings")
}

/// A header as recorded: the name keeps its recorded case.
pub type Header = (String, String);

/// One recorded request.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// `GET`, `PUT`, ...
    pub method: String,
    /// The full URI as recorded (`https://storagename.blob.core.windows.net/c/b?comp=lease`).
    pub uri: String,
    /// Headers in recorded order.
    pub headers: Vec<Header>,
    /// The body (`None` when the recording has `body: null`).
    pub body: Option<Vec<u8>>,
}

/// One recorded response.
#[derive(Debug, Clone)]
pub struct RecordedResponse {
    /// The status code.
    pub status: u16,
    /// Headers in recorded order.
    pub headers: Vec<Header>,
    /// Body bytes exactly as recorded.
    pub body: Vec<u8>,
}

/// A request/response pair.
#[derive(Debug, Clone)]
pub struct Interaction {
    /// What the recorded client sent.
    pub request: RecordedRequest,
    /// What the service answered.
    pub response: RecordedResponse,
}

/// One cassette.
#[derive(Debug, Clone)]
pub struct Recording {
    /// `folder/file.yaml`, e.g. `blob/test_container.test_create_container.yaml`.
    pub name: String,
    /// The interactions in recorded order.
    pub interactions: Vec<Interaction>,
}

fn header_get<'a>(headers: &'a [Header], name: &str) -> Option<&'a str> {
    headers
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}

impl RecordedRequest {
    /// A header, compared without regard to case.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_get(&self.headers, name)
    }

    /// The path after the host, still percent-encoded.
    pub fn raw_path(&self) -> &str {
        let after_scheme = self.uri.split_once("://").map_or(&*self.uri, |(_, r)| r);
        let path_q = after_scheme.find('/').map_or("/", |i| &after_scheme[i..]);
        path_q.split_once('?').map_or(path_q, |(p, _)| p)
    }

    /// The query string (without `?`), still encoded.
    pub fn raw_query(&self) -> &str {
        self.uri.split_once('?').map_or("", |(_, q)| q)
    }

    /// The host of the URI.
    pub fn host(&self) -> &str {
        let after_scheme = self.uri.split_once("://").map_or(&*self.uri, |(_, r)| r);
        after_scheme.split('/').next().unwrap_or_default()
    }
}

impl RecordedResponse {
    /// A header, compared without regard to case.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_get(&self.headers, name)
    }
}

/// Why a cassette could not be read.
#[derive(Debug)]
pub struct LoadError(pub String);

impl std::fmt::Display for LoadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for LoadError {}

fn bad(what: impl Into<String>) -> LoadError {
    LoadError(what.into())
}

/// A YAML string or a `!!binary` block (base64) as bytes.
fn body_bytes(v: &Value) -> Result<Option<Vec<u8>>, LoadError> {
    match v {
        Value::Null => Ok(None),
        Value::String(s) => Ok(Some(s.as_bytes().to_vec())),
        Value::Tagged(t) if t.tag == "binary" => {
            let Value::String(s) = &t.value else {
                return Err(bad("!!binary body is not a string"));
            };
            let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
            base64::engine::general_purpose::STANDARD
                .decode(compact)
                .map(Some)
                .map_err(|e| bad(format!("!!binary body: {e}")))
        }
        Value::Tagged(t) => Err(bad(format!("unexpected YAML tag {}", t.tag))),
        Value::Mapping(m) => match m.get("string") {
            Some(inner) => body_bytes(inner),
            None => Err(bad("body mapping without `string`")),
        },
        other => Err(bad(format!("unexpected body {other:?}"))),
    }
}

fn headers_of(v: Option<&Value>) -> Result<Vec<Header>, LoadError> {
    let mut out = Vec::new();
    let Some(v) = v else { return Ok(out) };
    let Value::Mapping(m) = v else {
        return Err(bad("headers are not a mapping"));
    };
    for (k, vals) in m {
        let k = k
            .as_str()
            .ok_or_else(|| bad("header name is not a string"))?;
        let vals = match vals {
            Value::Sequence(s) => s.clone(),
            other => vec![other.clone()],
        };
        for val in vals {
            let val = match val {
                Value::String(s) => s,
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                other => return Err(bad(format!("header {k}: unexpected value {other:?}"))),
            };
            out.push((k.to_string(), val));
        }
    }
    Ok(out)
}

impl Recording {
    /// Reads `dir/name` (`name` like `blob/test_x.test_y.yaml`).
    pub fn load(dir: &Path, name: &str) -> Result<Recording, LoadError> {
        let text =
            std::fs::read_to_string(dir.join(name)).map_err(|e| bad(format!("{name}: {e}")))?;
        Recording::parse(name, &text)
    }

    /// Parses the text of a cassette.
    pub fn parse(name: &str, text: &str) -> Result<Recording, LoadError> {
        // serde_yaml resolves the core `!!binary` tag to a plain string (the base64 text);
        // a local tag keeps the marker so the body is decoded to the recorded bytes.
        let text = text.replace("!!binary", "!binary");
        let doc: Value = serde_yaml::from_str(&text).map_err(|e| bad(format!("{name}: {e}")))?;
        let list = doc
            .get("interactions")
            .and_then(Value::as_sequence)
            .ok_or_else(|| bad(format!("{name}: no interactions")))?;
        let mut interactions = Vec::with_capacity(list.len());
        for (i, it) in list.iter().enumerate() {
            let ctx = |m: &str| bad(format!("{name} #{i}: {m}"));
            let rq = it.get("request").ok_or_else(|| ctx("no request"))?;
            let rs = it.get("response").ok_or_else(|| ctx("no response"))?;
            let request = RecordedRequest {
                method: rq
                    .get("method")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ctx("no method"))?
                    .to_string(),
                uri: rq
                    .get("uri")
                    .and_then(Value::as_str)
                    .ok_or_else(|| ctx("no uri"))?
                    .to_string(),
                headers: headers_of(rq.get("headers")).map_err(|e| ctx(&e.0))?,
                body: body_bytes(rq.get("body").unwrap_or(&Value::Null)).map_err(|e| ctx(&e.0))?,
            };
            let status = rs
                .get("status")
                .and_then(|s| s.get("code"))
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .ok_or_else(|| ctx("no status code"))?;
            let response = RecordedResponse {
                status,
                headers: headers_of(rs.get("headers")).map_err(|e| ctx(&e.0))?,
                body: body_bytes(rs.get("body").unwrap_or(&Value::Null))
                    .map_err(|e| ctx(&e.0))?
                    .unwrap_or_default(),
            };
            interactions.push(Interaction { request, response });
        }
        Ok(Recording {
            name: name.to_string(),
            interactions,
        })
    }
}

/// A request as the replay server received it.
#[derive(Debug, Clone)]
pub struct CapturedRequest {
    /// The method.
    pub method: String,
    /// The path, still percent-encoded.
    pub path: String,
    /// The query string without `?`, still encoded ("" when absent).
    pub query: String,
    /// Headers, names lower-cased.
    pub headers: Vec<Header>,
    /// The body bytes.
    pub body: Bytes,
}

impl CapturedRequest {
    /// A header by lower-case name.
    pub fn header(&self, name: &str) -> Option<&str> {
        header_get(&self.headers, name)
    }
}

struct State {
    queue: VecDeque<RecordedResponse>,
    captured: Vec<CapturedRequest>,
    /// Requests that arrived after the recorded responses ran out.
    overflow: usize,
}

/// Serves recorded responses in order and captures every request. Stops when dropped.
pub struct ReplayServer {
    addr: SocketAddr,
    state: Arc<Mutex<State>>,
    _stop: oneshot::Sender<()>,
}

/// The status sent when a request arrives after the last recorded response: not a status
/// Azure uses, so a client can never mistake it for a recorded answer.
pub const EXHAUSTED_STATUS: u16 = 599;

impl ReplayServer {
    /// Starts serving `responses` on 127.0.0.1 with an ephemeral port.
    pub async fn start(responses: Vec<RecordedResponse>) -> std::io::Result<ReplayServer> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let addr = listener.local_addr()?;
        let state = Arc::new(Mutex::new(State {
            queue: responses.into(),
            captured: Vec::new(),
            overflow: 0,
        }));
        let (stop, mut stopped) = oneshot::channel::<()>();
        let shared = state.clone();
        tokio::spawn(async move {
            loop {
                let accepted = tokio::select! {
                    _ = &mut stopped => return,
                    a = listener.accept() => a,
                };
                let Ok((stream, _)) = accepted else { continue };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| serve(state.clone(), req));
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        Ok(ReplayServer {
            addr,
            state,
            _stop: stop,
        })
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Takes the requests captured so far.
    pub fn take_captured(&self) -> Vec<CapturedRequest> {
        std::mem::take(&mut self.state.lock().unwrap().captured)
    }

    /// Recorded responses not yet served.
    pub fn remaining(&self) -> usize {
        self.state.lock().unwrap().queue.len()
    }

    /// Requests that arrived after the responses ran out (answered with
    /// [`EXHAUSTED_STATUS`]).
    pub fn overflow(&self) -> usize {
        self.state.lock().unwrap().overflow
    }
}

async fn serve(
    state: Arc<Mutex<State>>,
    req: hyper::Request<hyper::body::Incoming>,
) -> Result<hyper::Response<Full<Bytes>>, Infallible> {
    let (parts, body) = req.into_parts();
    let body = match body.collect().await {
        Ok(b) => b.to_bytes(),
        Err(_) => Bytes::new(),
    };
    let is_head = parts.method == hyper::Method::HEAD;
    let captured = CapturedRequest {
        method: parts.method.as_str().to_string(),
        path: parts.uri.path().to_string(),
        query: parts.uri.query().unwrap_or_default().to_string(),
        headers: parts
            .headers
            .iter()
            .map(|(k, v)| {
                (
                    k.as_str().to_string(),
                    String::from_utf8_lossy(v.as_bytes()).into_owned(),
                )
            })
            .collect(),
        body,
    };
    let next = {
        let mut st = state.lock().unwrap();
        st.captured.push(captured);
        let next = st.queue.pop_front();
        if next.is_none() {
            st.overflow += 1;
        }
        next
    };
    let Some(rec) = next else {
        let mut resp = hyper::Response::new(Full::new(Bytes::from_static(
            b"replay: no recorded response left",
        )));
        *resp.status_mut() = hyper::StatusCode::from_u16(EXHAUSTED_STATUS).unwrap();
        return Ok(resp);
    };
    Ok(build_response(rec, is_head))
}

fn build_response(rec: RecordedResponse, is_head: bool) -> hyper::Response<Full<Bytes>> {
    // A HEAD, 204 or 304 answer carries no body; its recorded Content-Length (the resource's
    // size) is kept. Every other answer gets the length of the body actually sent.
    let bodiless = is_head || rec.status == 204 || rec.status == 304;
    let mut builder = hyper::Response::builder().status(rec.status);
    for (k, v) in &rec.headers {
        if k.eq_ignore_ascii_case("transfer-encoding")
            || (!bodiless && k.eq_ignore_ascii_case("content-length"))
        {
            continue;
        }
        builder = builder.header(k.as_str(), v.as_str());
    }
    let body = if bodiless {
        Bytes::new()
    } else {
        builder = builder.header("content-length", rec.body.len().to_string());
        Bytes::from(rec.body)
    };
    builder.body(Full::new(body)).unwrap_or_else(|e| {
        let mut r = hyper::Response::new(Full::new(Bytes::from(format!(
            "replay: recorded response is not valid HTTP: {e}"
        ))));
        *r.status_mut() = hyper::StatusCode::from_u16(EXHAUSTED_STATUS).unwrap();
        r
    })
}
