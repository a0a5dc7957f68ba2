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

mod auth;
mod copy;
mod directory;
mod file;
mod http;
mod lease;
mod rename_handles;
mod share;
mod smb;
mod state;

use auth::{authorized, check_bearer};
use directory::{dir_op, parent_missing};
use file::{file_op, writable_file};
use http::*;
use lease::lease_op;
use rename_handles::{handles_op, put_range_from_url, rename};
use share::{list_shares, not_found_share, share_op};
use state::*;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use tokio::net::{TcpListener, TcpStream};

/// 404 `ResourceNotFound`: no directory or file at the path.
fn not_found() -> Reply {
    Reply::error(
        404,
        "ResourceNotFound",
        "The specified resource does not exist.",
    )
}

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
        return Op::run(st, share_name, &path, req, |op| {
            dir_op(op, m, comp.as_deref())
        });
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
        _ => Op::run(st, share_name, &path, req, |op| {
            file_op(op, m, comp.as_deref())
        }),
    }
}
