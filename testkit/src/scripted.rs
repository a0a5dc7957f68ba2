//! A tiny HTTP/1.1 server on 127.0.0.1 that answers each request with the next scripted
//! response, and records what it received. For retry and error-parsing tests.

use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// One scripted answer.
#[derive(Clone, Debug)]
pub enum Reply {
    /// Status, headers, body.
    Http(u16, Vec<(String, String)>, Vec<u8>),
    /// Close the connection after reading the request, without answering.
    Drop,
}

impl Reply {
    pub fn status(code: u16) -> Reply {
        Reply::Http(code, Vec::new(), Vec::new())
    }
    pub fn with(code: u16, headers: &[(&str, &str)], body: &[u8]) -> Reply {
        Reply::Http(
            code,
            headers
                .iter()
                .map(|(a, b)| (a.to_string(), b.to_string()))
                .collect(),
            body.to_vec(),
        )
    }
    /// An error answer shaped as Azure sends it: `x-ms-error-code`, and an XML body with a
    /// byte-order mark whose message spans two lines.
    pub fn azure_error(status: u16, code: &str) -> Reply {
        let body = format!(
            "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>{code}</Code><Message>scripted\nRequestId:1</Message></Error>"
        );
        Reply::with(
            status,
            &[
                ("x-ms-error-code", code),
                ("content-type", "application/xml"),
            ],
            body.as_bytes(),
        )
    }
}

/// A received request: method, path with query, lower-cased headers, body.
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub target: String,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Received {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

pub struct Scripted {
    pub port: u16,
    pub received: Arc<Mutex<Vec<Received>>>,
}

impl Scripted {
    /// Starts serving `replies` in order; after the last one it repeats it.
    pub async fn start(replies: Vec<Reply>) -> Scripted {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let received = Arc::new(Mutex::new(Vec::new()));
        let rec = received.clone();
        let replies = Arc::new(Mutex::new((replies, 0usize)));
        tokio::spawn(async move {
            loop {
                let Ok((mut sock, _)) = listener.accept().await else {
                    return;
                };
                let rec = rec.clone();
                let replies = replies.clone();
                tokio::spawn(async move {
                    loop {
                        let Some(req) = read_request(&mut sock).await else {
                            return;
                        };
                        rec.lock().unwrap().push(req);
                        let reply = {
                            let mut g = replies.lock().unwrap();
                            let i = g.1.min(g.0.len() - 1);
                            g.1 += 1;
                            g.0[i].clone()
                        };
                        match reply {
                            Reply::Drop => return,
                            Reply::Http(code, headers, body) => {
                                let mut out = format!("HTTP/1.1 {code} Scripted\r\n");
                                for (k, v) in headers {
                                    out.push_str(&format!("{k}: {v}\r\n"));
                                }
                                out.push_str(&format!("content-length: {}\r\n\r\n", body.len()));
                                let mut bytes = out.into_bytes();
                                bytes.extend_from_slice(&body);
                                if sock.write_all(&bytes).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
        });
        Scripted { port, received }
    }

    pub fn count(&self) -> usize {
        self.received.lock().unwrap().len()
    }

    pub fn requests(&self) -> Vec<Received> {
        self.received.lock().unwrap().clone()
    }

    /// An account whose blob, queue and table endpoints all point here (path style).
    pub fn account(&self) -> azstore::StorageAccount {
        let base = format!("http://127.0.0.1:{}/devstoreaccount1", self.port);
        azstore::StorageAccount::development()
            .with_endpoint(azstore::Service::Blob, &base)
            .unwrap()
            .with_endpoint(azstore::Service::Queue, &base)
            .unwrap()
            .with_endpoint(azstore::Service::Table, &base)
            .unwrap()
            .with_endpoint(azstore::Service::File, &base)
            .unwrap()
    }
}

async fn read_request(sock: &mut tokio::net::TcpStream) -> Option<Received> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i;
        }
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let mut first = lines.next()?.split(' ');
    let method = first.next()?.to_string();
    let target = first.next()?.to_string();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let len: usize = headers
        .iter()
        .find(|(k, _)| k == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = buf[head_end + 4..].to_vec();
    while body.len() < len {
        let n = sock.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        body.extend_from_slice(&chunk[..n]);
    }
    body.truncate(len);
    Some(Received {
        method,
        target,
        headers,
        body,
    })
}
