//! A local TCP proxy in front of Azurite's blob endpoint for the read-modify-write tests.
//!
//! It forwards every byte unchanged, counts the HTTP requests passing through (method and
//! path), and can be armed to *lose a response*: the next request with a given method is
//! forwarded to Azurite (so the write happens), and as soon as Azurite starts answering, the
//! client's connection is closed without passing the answer on. That is exactly an ambiguous
//! write: applied on the server, unknown to the client.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use azstore::blob::BlobClient;
use azstore::update::Decision;
use azstore::{Service, StorageAccount};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The update most tests make: one more than the stored count (0 when absent).
pub fn increment(cur: Option<&u64>) -> Decision<u64> {
    Decision::Write(cur.copied().unwrap_or(0) + 1)
}

/// The count a blob holds, read directly.
pub async fn read_u64(blob: &BlobClient) -> u64 {
    let d = blob.download().await.expect("download the count");
    serde_json::from_slice(&d.body).expect("the blob holds a number")
}

#[derive(Default)]
struct State {
    /// (method, path) of every complete request forwarded.
    log: Mutex<Vec<(String, String)>>,
    /// Lose the response of the next request with this method (and disarm).
    armed: Mutex<Option<String>>,
    /// Responses lost so far.
    dropped: Mutex<u32>,
}

/// The proxy; stops accepting when dropped.
pub struct Proxy {
    state: Arc<State>,
    account: StorageAccount,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Proxy {
    /// Starts a proxy in front of the blob endpoint of `account`.
    pub async fn start(account: &StorageAccount) -> Proxy {
        let ep = account.endpoint(Service::Blob).expect("blob endpoint");
        let upstream = ep
            .origin()
            .split("://")
            .nth(1)
            .expect("endpoint origin has a scheme")
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let proxied = account
            .clone()
            .with_endpoint(
                Service::Blob,
                &format!("http://127.0.0.1:{port}{}", ep.path_prefix()),
            )
            .expect("proxy endpoint");
        let state = Arc::new(State::default());
        let st = state.clone();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let st = st.clone();
                let upstream = upstream.clone();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        relay(client, server, st).await;
                    }
                });
            }
        });
        Proxy {
            state,
            account: proxied,
            task,
        }
    }

    /// The account whose blob endpoint is this proxy.
    pub fn account(&self) -> &StorageAccount {
        &self.account
    }

    /// Loses the response to the next request with `method` (e.g. `"PUT"`).
    pub fn lose_next_response_to(&self, method: &str) {
        *self.state.armed.lock().unwrap() = Some(method.to_string());
    }

    /// How many responses were lost.
    pub fn lost(&self) -> u32 {
        *self.state.dropped.lock().unwrap()
    }

    /// All requests forwarded so far: (method, path).
    pub fn requests(&self) -> Vec<(String, String)> {
        self.state.log.lock().unwrap().clone()
    }

    /// How many requests with `method` were forwarded.
    pub fn count(&self, method: &str) -> usize {
        self.requests().iter().filter(|(m, _)| m == method).count()
    }

    /// Forgets the request log.
    pub fn reset_log(&self) {
        self.state.log.lock().unwrap().clear();
    }
}

async fn relay(client: TcpStream, server: TcpStream, st: Arc<State>) {
    let (mut client_rd, client_wr) = client.into_split();
    let (server_rd, mut server_wr) = server.into_split();
    let lose = Arc::new(AtomicBool::new(false));
    let client_wr = Arc::new(tokio::sync::Mutex::new(client_wr));

    // Server -> client: pass bytes on, unless the current response is to be lost.
    let down = {
        let lose = lose.clone();
        let client_wr = client_wr.clone();
        let st = st.clone();
        tokio::spawn(async move {
            let mut server_rd = server_rd;
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match server_rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                if lose.load(Ordering::SeqCst) {
                    *st.dropped.lock().unwrap() += 1;
                    break;
                }
                if client_wr.lock().await.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            // Closing our half ends the client's connection (with or without an answer).
            let _ = client_wr.lock().await.shutdown().await;
        })
    };

    // Client -> server: forward, splitting the byte stream into requests to count them.
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    loop {
        let n = match client_rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some((len, method, path)) = complete_request(&pending) {
            {
                let mut armed = st.armed.lock().unwrap();
                if armed.as_deref() == Some(method.as_str()) {
                    *armed = None;
                    lose.store(true, Ordering::SeqCst);
                }
            }
            st.log.lock().unwrap().push((method, path));
            let req: Vec<u8> = pending.drain(..len).collect();
            if server_wr.write_all(&req).await.is_err() {
                break;
            }
        }
    }
    let _ = server_wr.shutdown().await;
    let _ = down.await;
}

/// If `buf` starts with a complete HTTP/1.1 request (headers + Content-Length body), its
/// length, method and path.
fn complete_request(buf: &[u8]) -> Option<(usize, String, String)> {
    let end = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let path = first.next()?.split('?').next()?.to_string();
    let body_len = lines
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.trim().eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (buf.len() >= end + body_len).then_some((end + body_len, method, path))
}
