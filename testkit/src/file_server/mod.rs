//! An in-process Azure Files test server (Azurite has no File service).
//!
//! It runs on 127.0.0.1 with a random port and implements the subset azstore's `file` module
//! uses, following the File REST documentation:
//!
//! * SharedKey authorization, verified with its own implementation of the documented
//!   string-to-sign (it never calls azstore's signing code): a mismatch is 403
//!   `AuthenticationFailed`.
//! * OAuth bearer tokens checked as Azurite's `--oauth basic` checks them (issuer, audience,
//!   lifetime; no signature), and only with `x-ms-file-request-intent: backup` (400
//!   `MissingRequiredHeader` without it), as Azure Files requires. Unlike Azure it accepts them
//!   over plain HTTP (it is a loopback emulator).
//! * Shares: create (201), get properties (200), set metadata (200), delete (202), Lease Share
//!   (acquire 15–60 s or infinite / renew / change / release / break with a break period).
//! * Directories: create, get properties, set metadata, delete (`DirectoryNotEmpty`),
//!   List Directories and Files with `prefix`, `marker` and `maxresults` paging (XML) and
//!   extended info (`include=`, `x-ms-file-extended-info`).
//! * Files: create with `x-ms-content-length`, Put Range (`x-ms-write: update|clear`,
//!   at most 4 MiB), Get File whole or ranged (`x-ms-range`/`Range`, 206 + `Content-Range`),
//!   get/set properties and metadata, delete, List Ranges.
//! * File leases: infinite only (anything else: 400 `InvalidHeaderValue`), change, release,
//!   break (immediate). A write to a leased file without a lease id is 412 `LeaseIdMissing`,
//!   with another id 412 `LeaseIdMismatchWithFileOperation`; a lease id sent for a file without
//!   an active lease is 412 `LeaseNotPresentWithFileOperation`.
//! * SMB properties (attributes, creation / last-write / change times, permission and key) on
//!   create and Set File / Directory Properties, with Azure's defaults and `preserve`;
//!   Create / Get Share Permission; Set Share Properties (quota, access tier, root squash);
//!   Copy File within this server (always complete at once) and Abort Copy File; transactional
//!   `Content-MD5` / `x-ms-content-crc64` on Put Range (smb.rs, copy.rs).
//! * [`FileServer::lock`] makes every request on a path answer 409 `SharingViolation` (or
//!   `DeletePending`, `FileLockConflict`) as an SMB client's open handle would, until
//!   [`FileServer::unlock`].
//!
//! Everything is kept in memory and vanishes when the handle is dropped.
#![allow(dead_code)]

mod copy;
mod lease;
mod rename_handles;
mod smb;

use lease::lease_op;
use rename_handles::{handles_op, put_range_from_url, rename};

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use base64::Engine;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use http_body_util::{BodyExt, Full};
use sha2::Sha256;
use tokio::net::{TcpListener, TcpStream};

/// The development account the server accepts.
pub const ACCOUNT: &str = "devstoreaccount1";
/// Its well-known key (public, not a secret).
pub const KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

const MAX_RANGE: u64 = 4 * 1024 * 1024;
/// Files are kept in memory; larger sizes are refused (Azure allows 4 TiB).
const MAX_TEST_FILE: u64 = 1024 * 1024 * 1024;

/// What a simulated SMB handle makes the server answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SmbLock {
    /// 409 `SharingViolation`: the file is open with an incompatible sharing mode.
    SharingViolation,
    /// 409 `DeletePending`: an SMB client marked the file for deletion.
    DeletePending,
    /// 409 `FileLockConflict`: part of the file is byte-range locked.
    FileLockConflict,
}

impl SmbLock {
    fn code(self) -> &'static str {
        match self {
            SmbLock::SharingViolation => "SharingViolation",
            SmbLock::DeletePending => "DeletePending",
            SmbLock::FileLockConflict => "FileLockConflict",
        }
    }
}

/// A running server. Dropping it stops accepting connections.
pub struct FileServer {
    /// The port on 127.0.0.1.
    pub port: u16,
    state: Arc<Mutex<State>>,
    requests: Arc<AtomicU64>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for FileServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl FileServer {
    /// Starts a server on a random port of 127.0.0.1.
    pub async fn start() -> FileServer {
        Self::start_on(0).await.expect("bind 127.0.0.1")
    }

    /// Starts a server on `port` of 127.0.0.1 (0: a free port picked by the OS).
    pub async fn start_on(port: u16) -> std::io::Result<FileServer> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await?;
        let port = listener.local_addr()?.port();
        let state = Arc::new(Mutex::new(State::default()));
        let requests = Arc::new(AtomicU64::new(0));
        let (st, rq) = (state.clone(), requests.clone());
        let task = tokio::spawn(async move {
            loop {
                // An accept error (EMFILE, ECONNABORTED, ...) is transient: giving up here
                // would drop the listener and refuse every later connection.
                let sock = match listener.accept().await {
                    Ok((sock, _)) => sock,
                    Err(_) => {
                        tokio::time::sleep(Duration::from_millis(20)).await;
                        continue;
                    }
                };
                let (st, rq) = (st.clone(), rq.clone());
                tokio::spawn(serve_connection(sock, st, rq));
            }
        });
        Ok(FileServer {
            port,
            state,
            requests,
            task,
        })
    }

    /// The File endpoint, path style: `http://127.0.0.1:PORT/devstoreaccount1`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}/{ACCOUNT}", self.port)
    }

    /// A connection string with only a File endpoint (works for azstore and the official SDKs).
    pub fn connection_string(&self) -> String {
        format!(
            "DefaultEndpointsProtocol=http;AccountName={ACCOUNT};AccountKey={KEY};FileEndpoint={}",
            self.endpoint()
        )
    }

    /// The account for azstore.
    pub fn account(&self) -> azstore::StorageAccount {
        azstore::StorageAccount::from_connection_string(&self.connection_string())
            .expect("valid connection string")
    }

    /// A new, uniquely named share on this server.
    pub async fn fresh_share(&self, prefix: &str) -> azstore::file::ShareClient {
        let share = azstore::file::ShareServiceClient::new(&self.account())
            .expect("file service client")
            .share(&crate::unique(prefix))
            .expect("valid share name");
        share.create().await.expect("create share");
        share
    }

    /// From now on every request on `path` (`share/dir/file`, unencoded) answers 409 with the
    /// lock's error code, as if an SMB client held a conflicting handle.
    pub fn lock(&self, path: &str, lock: SmbLock) {
        self.state
            .lock()
            .unwrap()
            .locks
            .insert(path.trim_matches('/').to_string(), lock);
    }

    /// Closes the simulated SMB handle on `path`.
    pub fn unlock(&self, path: &str) {
        self.state
            .lock()
            .unwrap()
            .locks
            .remove(path.trim_matches('/'));
    }

    /// From now on a deleted share stays "being deleted" for `delay`, as on Azure (where it
    /// takes ~30 s): creating it again meanwhile is 409 `ShareBeingDeleted`.
    pub fn set_share_delete_delay(&self, delay: Duration) {
        self.state.lock().unwrap().delete_delay = delay;
    }

    /// Requests served so far (any status).
    pub fn request_count(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// The stored content of a file, if it exists (to check what really landed).
    pub fn file_content(&self, share: &str, path: &str) -> Option<Vec<u8>> {
        let st = self.state.lock().unwrap();
        st.shares
            .get(share)
            .and_then(|s| s.files.get(path.trim_matches('/')))
            .map(|f| f.data.clone())
    }
}

// ---------------------------------------------------------------------------------------------
// State

#[derive(Default)]
struct State {
    shares: BTreeMap<String, Share>,
    locks: HashMap<String, SmbLock>,
    counter: u64,
    /// Shares deleted recently: until then, creating them again is 409 `ShareBeingDeleted`.
    deleting: HashMap<String, Instant>,
    /// How long a deleted share stays "being deleted" (zero by default).
    delete_delay: Duration,
    /// Share snapshots' properties by (share, snapshot id); their content is not kept.
    snapshots: BTreeMap<(String, String), SnapshotProps>,
}

struct SnapshotProps {
    meta: BTreeMap<String, String>,
    etag: String,
    last_modified: String,
    quota: u64,
    /// A share snapshot has a lease of its own (Lease Share with `sharesnapshot=`).
    lease: Lease,
}

impl State {
    fn next_etag(&mut self) -> String {
        self.counter += 1;
        format!("\"0x8DD{:011X}\"", self.counter)
    }
}

struct Share {
    meta: BTreeMap<String, String>,
    etag: String,
    last_modified: String,
    quota: u64,
    lease: Lease,
    dirs: BTreeMap<String, Node>,
    files: BTreeMap<String, FileNode>,
    /// Access tier, protocols, root squash and the share's permission store.
    ext: smb::ShareExt,
}

struct Node {
    meta: BTreeMap<String, String>,
    etag: String,
    last_modified: String,
    smb: smb::Smb,
}

struct FileNode {
    node: Node,
    data: Vec<u8>,
    /// Written (non-cleared) ranges, sorted, non-overlapping, end exclusive.
    ranges: Vec<(u64, u64)>,
    content_type: String,
    /// The other stored HTTP headers, keyed by the response header name
    /// (`content-encoding`, `content-language`, `cache-control`, `content-disposition`,
    /// `content-md5`).
    http: BTreeMap<String, String>,
    lease: Lease,
    /// The last Copy File into this file.
    copy: Option<copy::CopyInfo>,
}

/// Request header -> stored response header, for the HTTP properties of a file.
const FILE_HTTP_HEADERS: [(&str, &str); 5] = [
    ("x-ms-content-encoding", "content-encoding"),
    ("x-ms-content-language", "content-language"),
    ("x-ms-cache-control", "cache-control"),
    ("x-ms-content-disposition", "content-disposition"),
    ("x-ms-content-md5", "content-md5"),
];

fn file_http_headers(req: &HttpRequest) -> BTreeMap<String, String> {
    FILE_HTTP_HEADERS
        .iter()
        .filter_map(|(from, to)| req.header(from).map(|v| (to.to_string(), v.to_string())))
        .collect()
}

#[derive(Clone, Debug)]
enum Lease {
    Available,
    Leased {
        id: String,
        /// The fixed duration; `None`: infinite.
        span: Option<Duration>,
        expires: Option<Instant>,
    },
    Breaking {
        id: String,
        until: Instant,
    },
    Broken,
    Expired,
}

impl Lease {
    /// Advances time-based transitions.
    fn tick(&mut self) {
        let now = Instant::now();
        match self {
            Lease::Leased {
                expires: Some(t), ..
            } if *t <= now => *self = Lease::Expired,
            Lease::Breaking { until, .. } if *until <= now => *self = Lease::Broken,
            _ => {}
        }
    }

    fn active_id(&self) -> Option<&str> {
        match self {
            Lease::Leased { id, .. } | Lease::Breaking { id, .. } => Some(id),
            _ => None,
        }
    }

    fn state(&self) -> &'static str {
        match self {
            Lease::Available => "available",
            Lease::Leased { .. } => "leased",
            Lease::Breaking { .. } => "breaking",
            Lease::Broken => "broken",
            Lease::Expired => "expired",
        }
    }

    fn headers(&self, out: &mut Vec<(String, String)>) {
        let status = if self.active_id().is_some() {
            "locked"
        } else {
            "unlocked"
        };
        out.push(("x-ms-lease-state".into(), self.state().into()));
        out.push(("x-ms-lease-status".into(), status.into()));
        if let Lease::Leased { expires, .. } = self {
            let d = if expires.is_some() {
                "fixed"
            } else {
                "infinite"
            };
            out.push(("x-ms-lease-duration".into(), d.into()));
        }
    }

    /// The lease check for a write (or delete) on a leased resource.
    fn check_write(&self, sent: Option<&str>, what: &str) -> Result<(), Reply> {
        match (self.active_id(), sent) {
            (Some(_), None) => Err(Reply::error(
                412,
                "LeaseIdMissing",
                &format!(
                    "There is currently a lease on the {what} and no lease ID was specified in the request."
                ),
            )),
            (Some(id), Some(s)) if !id.eq_ignore_ascii_case(s) => Err(Reply::error(
                412,
                if what == "file" {
                    "LeaseIdMismatchWithFileOperation"
                } else {
                    "LeaseIdMismatchWithShareOperation"
                },
                &format!("The lease ID specified did not match the lease ID for the {what}."),
            )),
            (None, Some(_)) => Err(Reply::error(
                412,
                if what == "file" {
                    "LeaseNotPresentWithFileOperation"
                } else {
                    "LeaseNotPresentWithShareOperation"
                },
                &format!("There is currently no lease on the {what}."),
            )),
            _ => Ok(()),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// HTTP

struct HttpRequest {
    method: String,
    /// Raw (still percent-encoded) path.
    raw_path: String,
    /// Decoded query pairs.
    query: Vec<(String, String)>,
    /// Lower-case names.
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl HttpRequest {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    fn q(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn meta(&self) -> BTreeMap<String, String> {
        self.headers
            .iter()
            .filter_map(|(k, v)| k.strip_prefix("x-ms-meta-").map(|n| (n.into(), v.clone())))
            .collect()
    }
}

struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: Vec<u8>,
}

impl Reply {
    fn new(status: u16) -> Reply {
        Reply {
            status,
            headers: Vec::new(),
            body: Vec::new(),
        }
    }

    fn h(mut self, k: &str, v: impl Into<String>) -> Reply {
        self.headers.push((k.to_string(), v.into()));
        self
    }

    fn error(status: u16, code: &str, message: &str) -> Reply {
        let body = format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>{}\nRequestId:00000000-0000-0000-0000-000000000000\nTime:{}</Message></Error>",
            xml_escape(message),
            "2026-11-22T00:00:00.0000000Z"
        );
        Reply {
            status,
            headers: vec![
                ("x-ms-error-code".into(), code.into()),
                ("content-type".into(), "application/xml".into()),
            ],
            body: body.into_bytes(),
        }
    }

    fn xml(mut self, body: String) -> Reply {
        self.headers
            .push(("content-type".into(), "application/xml".into()));
        self.body = body.into_bytes();
        self
    }
}

/// One connection, served by hyper's HTTP/1.1 server (keep-alive, chunked bodies, 100-continue).
async fn serve_connection(sock: TcpStream, state: Arc<Mutex<State>>, requests: Arc<AtomicU64>) {
    let svc = hyper::service::service_fn(move |req: hyper::Request<hyper::body::Incoming>| {
        let (state, requests) = (state.clone(), requests.clone());
        async move { Ok::<_, std::convert::Infallible>(respond(req, &state, &requests).await) }
    });
    let io = hyper_util::rt::TokioIo::new(sock);
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(io, svc)
        .await;
}

async fn respond(
    req: hyper::Request<hyper::body::Incoming>,
    state: &Mutex<State>,
    requests: &AtomicU64,
) -> hyper::Response<Full<Bytes>> {
    let (parts, body) = req.into_parts();
    let Ok(body) = body.collect().await.map(|b| b.to_bytes().to_vec()) else {
        return plain(400, "request body could not be read");
    };
    requests.fetch_add(1, Ordering::SeqCst);
    let target = parts.uri.path_and_query().map_or("/", |pq| pq.as_str());
    let (raw_path, qs) = target.split_once('?').unwrap_or((target, ""));
    let query = qs
        .split('&')
        .filter(|s| !s.is_empty())
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap_or((kv, ""));
            (pct_decode(k), pct_decode(v))
        })
        .collect();
    let headers = parts
        .headers
        .iter()
        .map(|(k, v)| {
            let v = String::from_utf8_lossy(v.as_bytes()).trim().to_string();
            (k.as_str().to_string(), v)
        })
        .collect();
    let req = HttpRequest {
        method: parts.method.as_str().to_string(),
        raw_path: raw_path.to_string(),
        query,
        headers,
        body,
    };
    let is_head = req.method == "HEAD";
    let version = req
        .header("x-ms-version")
        .unwrap_or("2025-11-05")
        .to_string();
    let client_id = req.header("x-ms-client-request-id").map(str::to_string);
    let reply = {
        let mut st = state.lock().unwrap();
        handle(&mut st, &req)
    };
    let mut headers = reply.headers;
    headers.push(("x-ms-request-id".into(), uuid::Uuid::new_v4().to_string()));
    headers.push(("x-ms-version".into(), version));
    headers.push(("date".into(), http_now()));
    headers.push(("server".into(), "azstore-file-test-server".into()));
    if let Some(id) = client_id {
        headers.push(("x-ms-client-request-id".into(), id));
    }
    if !headers.iter().any(|(k, _)| k == "content-length") {
        headers.push(("content-length".into(), reply.body.len().to_string()));
    }
    let mut b = hyper::Response::builder().status(reply.status);
    for (k, v) in &headers {
        b = b.header(k.as_str(), v.as_str());
    }
    let body = if is_head { Vec::new() } else { reply.body };
    b.body(Full::new(Bytes::from(body)))
        .unwrap_or_else(|_| plain(500, "the server built an invalid response header"))
}

fn plain(status: u16, text: &'static str) -> hyper::Response<Full<Bytes>> {
    let mut r = hyper::Response::new(Full::new(Bytes::from_static(text.as_bytes())));
    *r.status_mut() = hyper::StatusCode::from_u16(status).unwrap_or(hyper::StatusCode::BAD_REQUEST);
    r
}

fn pct_decode(s: &str) -> String {
    let s = s.replace('+', "%20");
    percent_encoding::percent_decode_str(&s)
        .decode_utf8_lossy()
        .into_owned()
}

fn http_now() -> String {
    let f = time::macros::format_description!(
        "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
    );
    time::OffsetDateTime::now_utc()
        .format(f)
        .unwrap_or_default()
}

fn iso_now() -> String {
    time::OffsetDateTime::now_utc()
        .format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_default()
}

fn xml_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

// ---------------------------------------------------------------------------------------------
// SharedKey, implemented from the documentation
// (https://learn.microsoft.com/rest/api/storageservices/authorize-with-shared-key).

/// The Blob/Queue/File string-to-sign of a received request.
fn expected_string_to_sign(req: &HttpRequest) -> String {
    let h = |n: &str| req.header(n).unwrap_or("").to_string();
    // Content-Length: empty when zero (version 2015-02-21 and later).
    let len = match req.header("content-length") {
        Some("0") | None => String::new(),
        Some(v) => v.to_string(),
    };
    let mut s = String::new();
    s.push_str(&req.method);
    s.push('\n');
    for v in [
        h("content-encoding"),
        h("content-language"),
        len,
        h("content-md5"),
        h("content-type"),
        h("date"),
        h("if-modified-since"),
        h("if-match"),
        h("if-none-match"),
        h("if-unmodified-since"),
        h("range"),
    ] {
        s.push_str(&v);
        s.push('\n');
    }
    // Canonicalized headers: x-ms-*, lower case, sorted, one per line.
    let mut ms: Vec<(&str, &str)> = req
        .headers
        .iter()
        .filter(|(k, _)| k.starts_with("x-ms-"))
        .map(|(k, v)| (k.as_str(), v.trim()))
        .collect();
    ms.sort();
    for (k, v) in ms {
        s.push_str(k);
        s.push(':');
        s.push_str(v);
        s.push('\n');
    }
    // Canonicalized resource: /account + encoded path, then query parameters by name.
    s.push('/');
    s.push_str(ACCOUNT);
    s.push_str(&req.raw_path);
    let mut names: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (k, v) in &req.query {
        names
            .entry(k.to_ascii_lowercase())
            .or_default()
            .push(v.clone());
    }
    for (k, mut vs) in names {
        vs.sort();
        s.push('\n');
        s.push_str(&k);
        s.push(':');
        s.push_str(&vs.join(","));
    }
    s
}

fn authorized(req: &HttpRequest) -> bool {
    let Some(auth) = req.header("authorization") else {
        return false;
    };
    let Some(rest) = auth.strip_prefix("SharedKey ") else {
        return false;
    };
    let Some((account, sig)) = rest.split_once(':') else {
        return false;
    };
    if account != ACCOUNT {
        return false;
    }
    if req.header("x-ms-date").is_none() && req.header("date").is_none() {
        return false;
    }
    let Ok(key) = base64::engine::general_purpose::STANDARD.decode(KEY) else {
        return false;
    };
    let Ok(mut mac) = Hmac::<Sha256>::new_from_slice(&key) else {
        return false;
    };
    mac.update(expected_string_to_sign(req).as_bytes());
    let expected = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    expected == sig.trim()
}

// ---------------------------------------------------------------------------------------------
// Routing and operations

/// Checks an OAuth bearer token the way Azurite's `--oauth basic` does (a JWT whose `iss` is
/// an Entra ID issuer, `aud` the storage or this account's File audience, `nbf`/`exp` around
/// now; the signature is not checked), and the header Azure Files requires on every OAuth
/// request: `x-ms-file-request-intent: backup` (without it Azure answers 400).
///
/// Deviation: Azure refuses bearer tokens over plain HTTP; this loopback emulator speaks only
/// HTTP, so it accepts them (azstore sends them only after an explicit opt-in for loopback).
fn check_bearer(req: &HttpRequest, token: &str) -> Option<Reply> {
    let denied = |why: &str| {
        Some(Reply::error(
            403,
            "AuthenticationFailed",
            &format!("Server failed to authenticate the request. {why}"),
        ))
    };
    let claims = token
        .split('.')
        .nth(1)
        .and_then(|p| {
            base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(p.trim_end_matches('='))
                .ok()
        })
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
    let Some(claims) = claims else {
        return denied("Authentication scheme Bearer is not supported.");
    };
    let num = |k: &str| claims.get(k).and_then(|v| v.as_i64());
    let now = time::OffsetDateTime::now_utc().unix_timestamp();
    match (num("nbf"), num("exp"), num("iat")) {
        (Some(nbf), Some(exp), Some(_)) => {
            if now < nbf || now > exp {
                return denied("Lifetime validation failed. The token is expired.");
            }
        }
        _ => return denied("Authentication scheme Bearer is not supported."),
    }
    let iss = claims.get("iss").and_then(|v| v.as_str()).unwrap_or("");
    if ![
        "https://sts.windows.net/",
        "https://sts.microsoftonline.de/",
        "https://sts.chinacloudapi.cn/",
        "https://sts.windows-ppe.net",
        "https://login.microsoftonline.com/",
    ]
    .iter()
    .any(|p| iss.starts_with(p))
    {
        return denied("Invalid token issuer.");
    }
    let aud = claims.get("aud").and_then(|v| v.as_str()).unwrap_or("");
    let aud = aud.trim_end_matches('/');
    let own = format!("https://{ACCOUNT}.file.core.windows.net");
    if aud != "https://storage.azure.com" && aud != own {
        return denied("Invalid token audience.");
    }
    if !req
        .header("x-ms-file-request-intent")
        .is_some_and(|v| v.eq_ignore_ascii_case("backup"))
    {
        return Some(Reply::error(
            400,
            "MissingRequiredHeader",
            "An HTTP header that's mandatory for this request is not specified. \
             (x-ms-file-request-intent is required with OAuth.)",
        ));
    }
    None
}

fn handle(st: &mut State, req: &HttpRequest) -> Reply {
    if let Some(token) = req
        .header("authorization")
        .and_then(|a| a.strip_prefix("Bearer "))
    {
        if let Some(refusal) = check_bearer(req, token.trim()) {
            return refusal;
        }
    } else if !authorized(req) {
        return Reply::error(
            403,
            "AuthenticationFailed",
            "Server failed to authenticate the request. Make sure the value of Authorization header is formed correctly including the signature.",
        );
    }
    let prefix = format!("/{ACCOUNT}");
    let Some(rest) = req.raw_path.strip_prefix(&prefix) else {
        return Reply::error(
            400,
            "InvalidUri",
            "The requested URI does not represent any resource on the server.",
        );
    };
    let segments: Vec<String> = rest
        .split('/')
        .filter(|s| !s.is_empty())
        .map(pct_decode)
        .collect();
    let full = segments.join("/");
    let comp = req.q("comp").map(str::to_ascii_lowercase);
    if matches!(comp.as_deref(), Some("listhandles" | "forceclosehandles")) {
        // Handles can be listed and closed while they block everything else.
        return handles_op(st, &full, req);
    }
    if let Some(lock) = st.locks.get(&full) {
        let msg = match lock {
            SmbLock::SharingViolation => {
                "The specified resource is open by an SMB client with an incompatible sharing mode."
            }
            SmbLock::DeletePending => {
                "The specified resource is marked for deletion by an SMB client."
            }
            SmbLock::FileLockConflict => {
                "A portion of the specified file is locked by an SMB client."
            }
        };
        return Reply::error(409, lock.code(), msg);
    }
    let Some((share_name, path)) = segments.split_first() else {
        if req.method == "GET" && req.q("comp") == Some("list") {
            return list_shares(st, req);
        }
        return Reply::error(
            400,
            "InvalidQueryParameterValue",
            "This test server does not implement service-level operations.",
        );
    };
    let path = path.join("/");
    let restype = req.q("restype").map(str::to_ascii_lowercase);
    let m = req.method.as_str();

    if path.is_empty() && restype.as_deref() == Some("share") {
        return share_op(st, share_name, m, comp.as_deref(), req);
    }
    if restype.as_deref() == Some("directory") {
        return dir_op(st, share_name, &path, m, comp.as_deref(), req);
    }
    if path.is_empty() {
        return Reply::error(
            400,
            "InvalidQueryParameterValue",
            "restype=share or restype=directory is required here.",
        );
    }
    match (m, comp.as_deref()) {
        ("PUT", None) if req.header("x-ms-copy-source").is_some() => {
            copy::copy_file(st, share_name, &path, req)
        }
        ("PUT", Some("copy")) => copy::abort_copy(st, share_name, &path, req),
        _ => file_op(st, share_name, &path, m, comp.as_deref(), req),
    }
}

/// A transactional `Content-MD5` / `x-ms-content-crc64` that does not match the body.
fn transactional_mismatch(req: &HttpRequest) -> Option<Reply> {
    if let Some(want) = req.header("content-md5") {
        if want != azstore::blob::md5_base64(&req.body) {
            return Some(Reply::error(
                400,
                "Md5Mismatch",
                "The MD5 value specified in the request did not match with the MD5 value calculated by the server.",
            ));
        }
    }
    if let Some(want) = req.header("x-ms-content-crc64") {
        if want != azstore::blob::crc64_base64(&req.body) {
            return Some(Reply::error(
                400,
                "Crc64Mismatch",
                "The CRC64 value specified in the request did not match with the CRC64 value calculated by the server.",
            ));
        }
    }
    None
}

/// The file at `path` for a write: 404 when it does not exist, 412 when its lease refuses
/// the request's lease id.
fn writable_file<'a>(
    share: &'a mut Share,
    path: &str,
    req: &HttpRequest,
) -> Result<&'a mut FileNode, Reply> {
    let Some(f) = share.files.get_mut(path) else {
        return Err(Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        ));
    };
    f.lease.tick();
    f.lease.check_write(req.header("x-ms-lease-id"), "file")?;
    Ok(f)
}

/// 404 `ParentNotFound` unless the directory holding `path` exists.
fn parent_missing(share: &Share, path: &str) -> Option<Reply> {
    let (parent, _) = path.rsplit_once('/')?;
    (!share.dirs.contains_key(parent)).then(|| {
        Reply::error(
            404,
            "ParentNotFound",
            "The specified parent path does not exist.",
        )
    })
}

fn not_found_share() -> Reply {
    Reply::error(404, "ShareNotFound", "The specified share does not exist.")
}

/// List Shares (prefix, marker, maxresults, include=metadata), as Azure answers it.
fn list_shares(st: &State, req: &HttpRequest) -> Reply {
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = req
        .q("maxresults")
        .and_then(|v| v.parse().ok())
        .filter(|n| (1..=5000).contains(n))
        .unwrap_or(5000);
    let with_meta = req.q("include").is_some_and(|i| i.contains("metadata"));
    let names: Vec<&String> = st
        .shares
        .keys()
        .filter(|n| n.starts_with(prefix) && n.as_str() >= marker)
        .collect();
    let mut body = format!(
        "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"http://127.0.0.1/{ACCOUNT}\"><Prefix>{}</Prefix><Shares>",
        xml_escape(prefix)
    );
    let with_snapshots = req.q("include").is_some_and(|i| i.contains("snapshots"));
    for name in names.iter().take(max) {
        let sh = &st.shares[*name];
        if with_snapshots {
            // Snapshots come before their share, oldest first, as on Azure.
            let own = st
                .snapshots
                .range(((*name).clone(), String::new())..)
                .take_while(|((s, _), _)| s == *name);
            for ((_, id), p) in own {
                body.push_str(&format!(
                    "<Share><Name>{}</Name><Snapshot>{id}</Snapshot><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota></Properties></Share>",
                    xml_escape(name),
                    p.last_modified,
                    p.etag,
                    p.quota
                ));
            }
        }
        body.push_str(&format!(
            "<Share><Name>{}</Name><Properties><Last-Modified>{}</Last-Modified><Etag>{}</Etag><Quota>{}</Quota><AccessTier>{}</AccessTier></Properties>",
            xml_escape(name),
            sh.last_modified,
            sh.etag,
            sh.quota,
            sh.ext.access_tier
        ));
        if with_meta {
            body.push_str("<Metadata>");
            for (k, v) in &sh.meta {
                body.push_str(&format!("<{k}>{}</{k}>", xml_escape(v)));
            }
            body.push_str("</Metadata>");
        }
        body.push_str("</Share>");
    }
    body.push_str("</Shares>");
    match names.get(max) {
        Some(next) => body.push_str(&format!("<NextMarker>{}</NextMarker>", xml_escape(next))),
        None => body.push_str("<NextMarker />"),
    }
    body.push_str("</EnumerationResults>");
    let mut r = Reply::new(200).h("content-type", "application/xml");
    r.body = body.into_bytes();
    r
}

/// Snapshot Share and the operations on one snapshot (`sharesnapshot=`).
fn share_snapshot_op(st: &mut State, name: &str, m: &str, req: &HttpRequest) -> Option<Reply> {
    let snapshot = req.q("sharesnapshot").map(str::to_string);
    let comp = req.q("comp");
    let not_found = || {
        Reply::error(
            404,
            "ShareSnapshotNotFound",
            "The specified share snapshot does not exist.",
        )
    };
    match (m, comp, snapshot) {
        ("PUT", Some("snapshot"), None) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get(name) else {
                return Some(not_found_share());
            };
            let meta = if req.meta().is_empty() {
                share.meta.clone()
            } else {
                req.meta()
            };
            let (quota, last_modified) = (share.quota, share.last_modified.clone());
            let id = format!(
                "2026-11-22T00:00:{:02}.{:07}Z",
                st.counter / 10_000_000 % 60,
                st.counter % 10_000_000
            );
            st.snapshots.insert(
                (name.to_string(), id.clone()),
                SnapshotProps {
                    meta,
                    etag: etag.clone(),
                    last_modified: last_modified.clone(),
                    quota,
                    lease: Lease::Available,
                },
            );
            Some(
                Reply::new(201)
                    .h("x-ms-snapshot", id)
                    .h("etag", etag)
                    .h("last-modified", last_modified),
            )
        }
        ("GET" | "HEAD", None | Some("metadata"), Some(id)) => {
            let Some(p) = st.snapshots.get_mut(&(name.to_string(), id)) else {
                return Some(not_found());
            };
            p.lease.tick();
            let mut r = Reply::new(200)
                .h("etag", p.etag.clone())
                .h("last-modified", p.last_modified.clone())
                .h("x-ms-share-quota", p.quota.to_string());
            for (k, v) in &p.meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            p.lease.headers(&mut r.headers);
            Some(r)
        }
        ("PUT", Some("lease"), Some(id)) => {
            let Some(p) = st.snapshots.get_mut(&(name.to_string(), id)) else {
                return Some(not_found());
            };
            let r = lease_op(&mut p.lease, req, false);
            Some(if r.status < 300 {
                r.h("etag", p.etag.clone())
                    .h("last-modified", p.last_modified.clone())
            } else {
                r
            })
        }
        ("DELETE", None, Some(id)) => {
            let key = (name.to_string(), id);
            let Some(p) = st.snapshots.get_mut(&key) else {
                return Some(not_found());
            };
            // A leased snapshot is deleted only with its lease id.
            p.lease.tick();
            if let Err(r) = p.lease.check_write(req.header("x-ms-lease-id"), "share") {
                return Some(r);
            }
            st.snapshots.remove(&key);
            Some(Reply::new(202))
        }
        ("DELETE", None, None) => {
            let has = st.snapshots.keys().any(|(s, _)| s == name);
            let include = req.header("x-ms-delete-snapshots") == Some("include");
            if has && !include && st.shares.contains_key(name) {
                return Some(Reply::error(
                    409,
                    "ShareHasSnapshots",
                    "The share has snapshots and the operation requires no snapshots.",
                ));
            }
            if include {
                st.snapshots.retain(|(s, _), _| s != name);
            }
            None
        }
        _ => None,
    }
}

fn share_op(st: &mut State, name: &str, m: &str, comp: Option<&str>, req: &HttpRequest) -> Reply {
    let now = http_now();
    if let Some(r) = share_snapshot_op(st, name, m, req) {
        return r;
    }
    match (m, comp) {
        ("PUT", None) => {
            if st
                .deleting
                .get(name)
                .is_some_and(|until| *until > Instant::now())
            {
                return Reply::error(
                    409,
                    "ShareBeingDeleted",
                    "The specified share is being deleted. Try operation later.",
                );
            }
            if st.shares.contains_key(name) {
                return Reply::error(
                    409,
                    "ShareAlreadyExists",
                    "The specified share already exists.",
                );
            }
            let etag = st.next_etag();
            let quota = req
                .header("x-ms-share-quota")
                .and_then(|q| q.parse().ok())
                .unwrap_or(102_400);
            let mut ext = smb::ShareExt::default();
            if let Err(r) = smb::share_ext_headers(&mut ext, req, true) {
                return r;
            }
            st.shares.insert(
                name.to_string(),
                Share {
                    meta: req.meta(),
                    etag: etag.clone(),
                    last_modified: now.clone(),
                    quota,
                    lease: Lease::Available,
                    dirs: BTreeMap::new(),
                    files: BTreeMap::new(),
                    ext,
                },
            );
            Reply::new(201).h("etag", etag).h("last-modified", now)
        }
        ("GET" | "HEAD", None | Some("metadata")) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            let mut r = Reply::new(200)
                .h("etag", share.etag.clone())
                .h("last-modified", share.last_modified.clone())
                .h("x-ms-share-quota", share.quota.to_string());
            for (k, v) in &share.meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            share.lease.headers(&mut r.headers);
            smb::share_ext_reply(&share.ext, r)
        }
        ("PUT", Some("properties")) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            if req.header("x-ms-lease-id").is_some() {
                if let Err(r) = share
                    .lease
                    .check_write(req.header("x-ms-lease-id"), "share")
                {
                    return r;
                }
            }
            if let Err(r) = smb::set_share_properties(share, req) {
                return r;
            }
            share.etag = etag.clone();
            share.last_modified = now.clone();
            Reply::new(200).h("etag", etag).h("last-modified", now)
        }
        ("PUT" | "GET", Some("filepermission")) => match st.shares.get_mut(name) {
            Some(share) => smb::permission_op(share, m, req),
            None => not_found_share(),
        },
        ("PUT", Some("metadata")) => {
            let etag = st.next_etag();
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.meta = req.meta();
            share.etag = etag.clone();
            share.last_modified = now.clone();
            Reply::new(200).h("etag", etag).h("last-modified", now)
        }
        ("DELETE", None) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            share.lease.tick();
            if let Err(r) = share
                .lease
                .check_write(req.header("x-ms-lease-id"), "share")
            {
                return r;
            }
            st.shares.remove(name);
            if !st.delete_delay.is_zero() {
                let until = Instant::now() + st.delete_delay;
                st.deleting.insert(name.to_string(), until);
            }
            Reply::new(202)
        }
        ("PUT", Some("lease")) => {
            let Some(share) = st.shares.get_mut(name) else {
                return not_found_share();
            };
            let r = lease_op(&mut share.lease, req, false);
            if r.status < 300 {
                r.h("etag", share.etag.clone())
                    .h("last-modified", share.last_modified.clone())
            } else {
                r
            }
        }
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this share operation.",
        ),
    }
}

fn dir_op(
    st: &mut State,
    share_name: &str,
    path: &str,
    m: &str,
    comp: Option<&str>,
    req: &HttpRequest,
) -> Reply {
    let now = http_now();
    let etag = st.next_etag();
    let Some(share) = st.shares.get_mut(share_name) else {
        return not_found_share();
    };
    let parent_exists = |share: &Share, p: &str| match p.rsplit_once('/') {
        None => true,
        Some((parent, _)) => share.dirs.contains_key(parent),
    };
    let not_found = || {
        Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        )
    };
    match (m, comp) {
        ("PUT", None) => {
            if path.is_empty() || share.dirs.contains_key(path) || share.files.contains_key(path) {
                return Reply::error(
                    409,
                    "ResourceAlreadyExists",
                    "The specified resource already exists.",
                );
            }
            if !parent_exists(share, path) {
                return Reply::error(
                    404,
                    "ParentNotFound",
                    "The specified parent path does not exist.",
                );
            }
            let smb = match smb::Smb::create(req, true, &mut share.ext) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let r = smb.headers(
                Reply::new(201)
                    .h("etag", etag.clone())
                    .h("last-modified", now.clone())
                    .h("x-ms-request-server-encrypted", "true"),
            );
            share.dirs.insert(
                path.to_string(),
                Node {
                    meta: req.meta(),
                    etag,
                    last_modified: now,
                    smb,
                },
            );
            r
        }
        ("PUT", Some("properties")) => {
            let Some(d) = share.dirs.get_mut(path) else {
                return not_found();
            };
            if let Err(r) = d.smb.set(req, true, &mut share.ext) {
                return r;
            }
            d.etag = etag.clone();
            d.last_modified = now.clone();
            d.smb.headers(
                Reply::new(200)
                    .h("etag", etag)
                    .h("last-modified", now)
                    .h("x-ms-request-server-encrypted", "true"),
            )
        }
        ("GET" | "HEAD", None | Some("metadata")) => {
            let (meta, etag, lm, smb) = if path.is_empty() {
                (
                    &BTreeMap::new(),
                    share.etag.clone(),
                    share.last_modified.clone(),
                    None,
                )
            } else {
                match share.dirs.get(path) {
                    Some(d) => (
                        &d.meta,
                        d.etag.clone(),
                        d.last_modified.clone(),
                        Some(&d.smb),
                    ),
                    None => return not_found(),
                }
            };
            let mut r = Reply::new(200)
                .h("etag", etag)
                .h("last-modified", lm)
                .h("x-ms-server-encrypted", "true");
            r = match smb {
                Some(smb) => smb.headers(r),
                None => r.h("x-ms-file-attributes", "Directory"),
            };
            for (k, v) in meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            r
        }
        ("PUT", Some("metadata")) => match share.dirs.get_mut(path) {
            Some(d) => {
                d.meta = req.meta();
                d.etag = etag.clone();
                d.last_modified = now.clone();
                Reply::new(200).h("etag", etag).h("last-modified", now)
            }
            None => not_found(),
        },
        ("DELETE", None) => {
            if !share.dirs.contains_key(path) {
                return not_found();
            }
            let child = format!("{path}/");
            if share.dirs.keys().any(|k| k.starts_with(&child))
                || share.files.keys().any(|k| k.starts_with(&child))
            {
                return Reply::error(
                    409,
                    "DirectoryNotEmpty",
                    "The specified directory is not empty.",
                );
            }
            share.dirs.remove(path);
            Reply::new(202)
        }
        ("GET", Some("list")) => {
            if !path.is_empty() && !share.dirs.contains_key(path) {
                return not_found();
            }
            list(share, share_name, path, req)
        }
        ("PUT", Some("rename")) => rename(share, share_name, path, true, req, etag, now),
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this directory operation.",
        ),
    }
}

fn list(share: &Share, share_name: &str, path: &str, req: &HttpRequest) -> Reply {
    let prefix = req.q("prefix").unwrap_or("");
    let marker = req.q("marker").unwrap_or("");
    let max: usize = match req.q("maxresults") {
        None => 5000,
        Some(v) => match v.parse::<usize>() {
            Ok(n) if (1..=5000).contains(&n) => n,
            _ => {
                return Reply::error(
                    400,
                    "OutOfRangeQueryParameterValue",
                    "maxresults must be 1-5000.",
                );
            }
        },
    };
    let base = if path.is_empty() {
        String::new()
    } else {
        format!("{path}/")
    };
    // include=Timestamps,Etag,Attributes,PermissionKey and x-ms-file-extended-info: true
    // (REST reference, List Directories and Files, 2020-04-08 and later).
    let include: Vec<String> = req
        .q("include")
        .map(|v| {
            v.split(',')
                .map(|i| i.trim().to_ascii_lowercase())
                .collect()
        })
        .unwrap_or_default();
    for i in &include {
        if !["timestamps", "etag", "attributes", "permissionkey"].contains(&i.as_str()) {
            return Reply::error(
                400,
                "InvalidQueryParameterValue",
                "include must name Timestamps, ETag, Attributes or PermissionKey.",
            );
        }
    }
    let extended = req
        .header("x-ms-file-extended-info")
        .is_some_and(|v| v.eq_ignore_ascii_case("true"));
    let wants = |what: &str| include.iter().any(|i| i == what);
    // Direct children, sorted by name: (name, is_dir, size, node).
    let mut items: Vec<(String, bool, u64, &Node)> = Vec::new();
    for (k, d) in &share.dirs {
        if let Some(n) = k.strip_prefix(&base) {
            if !n.contains('/') {
                items.push((n.to_string(), true, 0, d));
            }
        }
    }
    for (k, f) in &share.files {
        if let Some(n) = k.strip_prefix(&base) {
            if !n.contains('/') {
                items.push((n.to_string(), false, f.data.len() as u64, &f.node));
            }
        }
    }
    items.sort_by(|a, b| a.0.cmp(&b.0));
    let selected: Vec<&(String, bool, u64, &Node)> = items
        .iter()
        .filter(|(n, ..)| n.starts_with(prefix) && n.as_str() >= marker)
        .collect();
    let page = &selected[..selected.len().min(max)];
    let next = selected
        .get(max)
        .map(|(n, ..)| n.clone())
        .unwrap_or_default();
    let mut x = String::from("\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?>");
    x.push_str(&format!(
        "<EnumerationResults ServiceEndpoint=\"http://127.0.0.1/{ACCOUNT}/\" ShareName=\"{}\" DirectoryPath=\"{}\">",
        xml_escape(share_name),
        xml_escape(path)
    ));
    if !prefix.is_empty() {
        x.push_str(&format!("<Prefix>{}</Prefix>", xml_escape(prefix)));
    }
    if !marker.is_empty() {
        x.push_str(&format!("<Marker>{}</Marker>", xml_escape(marker)));
    }
    if req.q("maxresults").is_some() {
        x.push_str(&format!("<MaxResults>{max}</MaxResults>"));
    }
    x.push_str("<Entries>");
    for (name, is_dir, size, node) in page {
        let tag = if *is_dir { "Directory" } else { "File" };
        x.push_str(&format!("<{tag}><Name>{}</Name>", xml_escape(name)));
        if extended {
            x.push_str("<FileId>13835128424026341376</FileId>");
        }
        x.push_str("<Properties>");
        if !*is_dir {
            x.push_str(&format!("<Content-Length>{size}</Content-Length>"));
        }
        if wants("timestamps") {
            x.push_str(&format!(
                "<CreationTime>{}</CreationTime><LastAccessTime>{}</LastAccessTime><LastWriteTime>{}</LastWriteTime><ChangeTime>{}</ChangeTime><Last-Modified>{}</Last-Modified>",
                node.smb.creation, node.smb.last_write, node.smb.last_write, node.smb.change, node.last_modified
            ));
        }
        if wants("etag") {
            x.push_str(&format!("<Etag>{}</Etag>", xml_escape(&node.etag)));
        }
        x.push_str("</Properties>");
        if wants("attributes") {
            x.push_str(&format!(
                "<Attributes>{}</Attributes>",
                node.smb.attributes.replace('|', " | ")
            ));
        }
        if wants("permissionkey") {
            x.push_str(&format!(
                "<PermissionKey>{}</PermissionKey>",
                xml_escape(&node.smb.permission_key)
            ));
        }
        x.push_str(&format!("</{tag}>"));
    }
    x.push_str("</Entries>");
    x.push_str(&format!("<NextMarker>{}</NextMarker>", xml_escape(&next)));
    x.push_str("</EnumerationResults>");
    Reply::new(200).xml(x)
}

/// Parses `bytes=a-b` (or `bytes=a-`), end inclusive.
fn parse_range(v: &str) -> Option<(u64, Option<u64>)> {
    let r = v.trim().strip_prefix("bytes=")?;
    let (a, b) = r.split_once('-')?;
    let a = a.trim().parse().ok()?;
    let b = if b.trim().is_empty() {
        None
    } else {
        Some(b.trim().parse().ok()?)
    };
    if let Some(b) = b {
        if b < a {
            return None;
        }
    }
    Some((a, b))
}

fn add_range(ranges: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    remove_range(ranges, s, e);
    ranges.push((s, e));
    ranges.sort();
    let mut merged: Vec<(u64, u64)> = Vec::new();
    for (a, b) in ranges.drain(..) {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    *ranges = merged;
}

fn remove_range(ranges: &mut Vec<(u64, u64)>, s: u64, e: u64) {
    let mut out = Vec::new();
    for &(a, b) in ranges.iter() {
        if b <= s || a >= e {
            out.push((a, b));
            continue;
        }
        if a < s {
            out.push((a, s));
        }
        if b > e {
            out.push((e, b));
        }
    }
    *ranges = out;
}

fn file_op(
    st: &mut State,
    share_name: &str,
    path: &str,
    m: &str,
    comp: Option<&str>,
    req: &HttpRequest,
) -> Reply {
    let now = http_now();
    let etag = st.next_etag();
    let Some(share) = st.shares.get_mut(share_name) else {
        return not_found_share();
    };
    let not_found = || {
        Reply::error(
            404,
            "ResourceNotFound",
            "The specified resource does not exist.",
        )
    };
    let lease_id = req.header("x-ms-lease-id");
    if let Some(f) = share.files.get_mut(path) {
        f.lease.tick();
    }
    match (m, comp) {
        ("PUT", None) => {
            if req
                .header("x-ms-type")
                .is_none_or(|t| !t.eq_ignore_ascii_case("file"))
            {
                return Reply::error(400, "MissingRequiredHeader", "x-ms-type: file is required.");
            }
            let Some(size) = req
                .header("x-ms-content-length")
                .and_then(|v| v.parse::<u64>().ok())
            else {
                return Reply::error(
                    400,
                    "MissingRequiredHeader",
                    "x-ms-content-length is required.",
                );
            };
            if size > 4 * 1024 * 1024 * 1024 * 1024 {
                return Reply::error(400, "OutOfRangeInput", "The file size exceeds 4 TiB.");
            }
            if size > MAX_TEST_FILE {
                // Not an Azure limit: the test server keeps files in memory.
                return Reply::error(
                    400,
                    "OutOfRangeInput",
                    "The test server keeps files in memory: at most 1 GiB.",
                );
            }
            if share.dirs.contains_key(path) {
                return Reply::error(
                    409,
                    "ResourceTypeMismatch",
                    "The specified resource type does not match.",
                );
            }
            if let Some(r) = parent_missing(share, path) {
                return r;
            }
            let lease = match share.files.get(path) {
                Some(f) => {
                    if let Err(r) = f.lease.check_write(lease_id, "file") {
                        return r;
                    }
                    f.lease.clone()
                }
                None => {
                    if lease_id.is_some() {
                        return Reply::error(
                            412,
                            "LeaseNotPresentWithFileOperation",
                            "There is currently no lease on the file.",
                        );
                    }
                    Lease::Available
                }
            };
            let smb = match smb::Smb::create(req, false, &mut share.ext) {
                Ok(s) => s,
                Err(r) => return r,
            };
            let smb_reply = smb.headers(Reply::new(201));
            share.files.insert(
                path.to_string(),
                FileNode {
                    node: Node {
                        meta: req.meta(),
                        etag: etag.clone(),
                        last_modified: now.clone(),
                        smb,
                    },
                    data: vec![0; size as usize],
                    ranges: Vec::new(),
                    content_type: req
                        .header("x-ms-content-type")
                        .unwrap_or("application/octet-stream")
                        .to_string(),
                    http: file_http_headers(req),
                    lease,
                    copy: None,
                },
            );
            let mut r = smb_reply
                .h("etag", etag)
                .h("last-modified", now)
                .h("x-ms-request-server-encrypted", "true");
            r.status = 201;
            r
        }
        ("GET" | "HEAD", None | Some("metadata")) => {
            let Some(f) = share.files.get(path) else {
                return not_found();
            };
            // Get File Metadata: the headers of Get File Properties, no body.
            let metadata_only = comp.is_some();
            if let Some(id) = lease_id {
                // Reads accept a lease id; it must match when given.
                if f.lease.active_id().is_some() {
                    if let Err(r) = f.lease.check_write(Some(id), "file") {
                        return r;
                    }
                } else {
                    return Reply::error(
                        412,
                        "LeaseNotPresentWithFileOperation",
                        "There is currently no lease on the file.",
                    );
                }
            }
            let total = f.data.len() as u64;
            let range = req.header("x-ms-range").or(req.header("range"));
            let mut r;
            if metadata_only {
                r = Reply::new(200);
            } else if m == "GET" && range.is_some() {
                let Some((a, b)) = range.and_then(parse_range) else {
                    return Reply::error(400, "InvalidRange", "The range specified is invalid.");
                };
                if a >= total {
                    return Reply::error(
                        416,
                        "InvalidRange",
                        "The range specified is invalid for the current size of the resource.",
                    )
                    .h("content-range", format!("bytes */{total}"));
                }
                let end = b.unwrap_or(total - 1).min(total - 1);
                r = Reply::new(206).h("content-range", format!("bytes {a}-{end}/{total}"));
                r.body = f.data[a as usize..=end as usize].to_vec();
            } else {
                r = Reply::new(200);
                if m == "GET" {
                    r.body = f.data.clone();
                } else {
                    r = r.h("content-length", total.to_string());
                }
            }
            r = r
                .h("etag", f.node.etag.clone())
                .h("last-modified", f.node.last_modified.clone())
                .h("content-type", f.content_type.clone())
                .h("accept-ranges", "bytes")
                .h("x-ms-type", "File")
                .h("x-ms-server-encrypted", "true");
            r = f.node.smb.headers(r);
            if let Some(c) = &f.copy {
                r = c.headers(r);
            }
            for (k, v) in &f.node.meta {
                r = r.h(&format!("x-ms-meta-{k}"), v.clone());
            }
            for (k, v) in &f.http {
                // A ranged read reports the range's MD5 only when asked; the whole file's
                // stored one comes as `x-ms-content-md5` (Get File, REST reference).
                if k == "content-md5" && r.status == 206 {
                    r = r.h("x-ms-content-md5", v.clone());
                    continue;
                }
                r = r.h(k, v.clone());
            }
            f.lease.headers(&mut r.headers);
            r
        }
        ("PUT", Some("range")) if req.header("x-ms-copy-source").is_some() => {
            put_range_from_url(share, share_name, path, req, etag, now)
        }
        ("PUT", Some("range")) => {
            let Some(f) = share.files.get_mut(path) else {
                return not_found();
            };
            if let Err(r) = f.lease.check_write(lease_id, "file") {
                return r;
            }
            let Some((a, Some(b))) = req
                .header("x-ms-range")
                .or(req.header("range"))
                .and_then(parse_range)
            else {
                return Reply::error(400, "InvalidRange", "x-ms-range must be bytes=start-end.");
            };
            let len = b - a + 1;
            let write = req.header("x-ms-write").unwrap_or("").to_ascii_lowercase();
            if b >= f.data.len() as u64 {
                return Reply::error(
                    416,
                    "InvalidRange",
                    "The range specified is invalid for the current size of the resource.",
                );
            }
            match write.as_str() {
                "update" => {
                    if len > MAX_RANGE {
                        return Reply::error(
                            413,
                            "RequestBodyTooLarge",
                            "The request body is too large and exceeds the maximum permissible limit (4 MiB).",
                        );
                    }
                    if req.body.len() as u64 != len {
                        return Reply::error(
                            400,
                            "InvalidHeaderValue",
                            "Content-Length does not match the size of x-ms-range.",
                        );
                    }
                    if let Some(r) = transactional_mismatch(req) {
                        return r;
                    }
                    f.data[a as usize..=b as usize].copy_from_slice(&req.body);
                    add_range(&mut f.ranges, a, b + 1);
                }
                "clear" => {
                    if !req.body.is_empty() {
                        return Reply::error(
                            400,
                            "InvalidHeaderValue",
                            "Content-Length must be 0 for x-ms-write: clear.",
                        );
                    }
                    f.data[a as usize..=b as usize].fill(0);
                    remove_range(&mut f.ranges, a, b + 1);
                }
                _ => {
                    return Reply::error(
                        400,
                        "InvalidHeaderValue",
                        "x-ms-write must be update or clear.",
                    );
                }
            }
            f.node.etag = etag.clone();
            f.node.last_modified = now.clone();
            let mut r = Reply::new(201)
                .h("etag", etag)
                .h("last-modified", now)
                .h("x-ms-request-server-encrypted", "true")
                .h("x-ms-file-last-write-time", iso_now());
            if write == "update" {
                r = r.h("content-md5", azstore::blob::md5_base64(&req.body));
            }
            r
        }
        ("PUT", Some("properties")) => {
            let Some(f) = share.files.get_mut(path) else {
                return not_found();
            };
            if let Err(r) = f.lease.check_write(lease_id, "file") {
                return r;
            }
            let mut smb = f.node.smb.clone();
            if let Err(r) = smb.set(req, false, &mut share.ext) {
                return r;
            }
            f.node.smb = smb;
            if let Some(size) = req.header("x-ms-content-length") {
                let Ok(size) = size.parse::<u64>() else {
                    return Reply::error(
                        400,
                        "InvalidHeaderValue",
                        "x-ms-content-length is invalid.",
                    );
                };
                if size > MAX_TEST_FILE {
                    return Reply::error(
                        400,
                        "OutOfRangeInput",
                        "The test server keeps files in memory: at most 1 GiB.",
                    );
                }
                f.data.resize(size as usize, 0);
                remove_range(&mut f.ranges, size, u64::MAX);
            }
            // Setting any HTTP property replaces all of them, as on Azure (absent ones are
            // cleared). A call that sets none (a plain resize) keeps them: this server's
            // simplification, which azstore's own resize relies on.
            let http = file_http_headers(req);
            let sets_http = !http.is_empty() || req.header("x-ms-content-type").is_some();
            if sets_http {
                f.content_type = req
                    .header("x-ms-content-type")
                    .unwrap_or("application/octet-stream")
                    .to_string();
                f.http = http;
            }
            f.node.etag = etag.clone();
            f.node.last_modified = now.clone();
            f.node
                .smb
                .headers(Reply::new(200).h("etag", etag).h("last-modified", now))
        }
        ("PUT", Some("metadata")) => {
            let Some(f) = share.files.get_mut(path) else {
                return not_found();
            };
            if let Err(r) = f.lease.check_write(lease_id, "file") {
                return r;
            }
            f.node.meta = req.meta();
            f.node.etag = etag.clone();
            f.node.last_modified = now.clone();
            Reply::new(200).h("etag", etag).h("last-modified", now)
        }
        ("DELETE", None) => {
            let Some(f) = share.files.get(path) else {
                return not_found();
            };
            if let Err(r) = f.lease.check_write(lease_id, "file") {
                return r;
            }
            share.files.remove(path);
            Reply::new(202)
        }
        ("PUT", Some("lease")) => {
            let Some(f) = share.files.get_mut(path) else {
                return not_found();
            };
            let r = lease_op(&mut f.lease, req, true);
            if r.status < 300 {
                r.h("etag", f.node.etag.clone())
                    .h("last-modified", f.node.last_modified.clone())
            } else {
                r
            }
        }
        ("PUT", Some("rename")) => rename(share, share_name, path, false, req, etag, now),
        ("GET", Some("rangelist")) => {
            let Some(f) = share.files.get(path) else {
                return not_found();
            };
            let total = f.data.len() as u64;
            let (lo, hi) = match req
                .header("x-ms-range")
                .or(req.header("range"))
                .map(parse_range)
            {
                None => (0, total),
                Some(Some((a, b))) => (a, b.map(|b| b + 1).unwrap_or(total).min(total)),
                Some(None) => {
                    return Reply::error(400, "InvalidRange", "The range specified is invalid.");
                }
            };
            let mut x = String::from("\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Ranges>");
            for &(a, b) in &f.ranges {
                let (a, b) = (a.max(lo), b.min(hi));
                if a < b {
                    x.push_str(&format!(
                        "<Range><Start>{a}</Start><End>{}</End></Range>",
                        b - 1
                    ));
                }
            }
            x.push_str("</Ranges>");
            Reply::new(200)
                .h("etag", f.node.etag.clone())
                .h("last-modified", f.node.last_modified.clone())
                .h("x-ms-content-length", total.to_string())
                .xml(x)
        }
        _ => Reply::error(
            400,
            "UnsupportedHttpVerb",
            "This test server does not implement this file operation.",
        ),
    }
}
