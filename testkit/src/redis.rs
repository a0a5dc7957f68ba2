//! Redis test support: the test server's URL, and a RESP-aware TCP proxy for fault injection.
//!
//! `scripts/azurite run` starts a private `redis-server` next to Azurite and exports its URL in
//! `AZSTORE_REDIS_URL`. [`RedisProxy`] sits between a client and that server, forwards every
//! byte unchanged, splits the client's byte stream into commands (RESP arrays) to count them,
//! and can:
//!
//! * **lose a reply** ([`RedisProxy::lose_next_reply_to`]): the next command with a given name
//!   (e.g. `EVAL`) is forwarded — so the server executes it — and as soon as the server
//!   answers, the client's connection is closed without the answer: an ambiguous write;
//! * **hold a command** ([`RedisProxy::hold_next`]): the next command with a given name waits
//!   in the proxy until released, so a test can change the data in between (e.g. between a
//!   read and the conditional write);
//! * **stall** ([`RedisProxy::stall`]): nothing passes in either direction, as when a network
//!   partition cuts a lease holder off.
#![allow(dead_code)]

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, watch};

/// The environment variable holding the test server's URL.
pub const REDIS_URL_ENV: &str = "AZSTORE_REDIS_URL";

/// The URL of the test Redis server. Panics with instructions when it is not configured or not
/// reachable: tests never skip silently.
pub fn redis_url() -> String {
    let url = std::env::var(REDIS_URL_ENV).unwrap_or_else(|_| {
        panic!(
            "{REDIS_URL_ENV} is not set: run the tests through `scripts/azurite run --only azurite,redis -- cargo test ...`, \
             which starts redis-server and exports it"
        )
    });
    let addr = host_port(&url);
    if std::net::TcpStream::connect_timeout(
        &addr
            .parse()
            .unwrap_or_else(|_| panic!("{REDIS_URL_ENV} must be redis://IP:PORT, got {url}")),
        std::time::Duration::from_secs(2),
    )
    .is_err()
    {
        panic!("the Redis server at {addr} ({REDIS_URL_ENV}) is not reachable");
    }
    url
}

/// `host:port` of a `redis://host:port[/db]` URL.
fn host_port(url: &str) -> String {
    let rest = url
        .strip_prefix("redis://")
        .unwrap_or_else(|| panic!("expected a redis:// URL, got {url}"));
    let rest = rest.rsplit('@').next().unwrap_or(rest);
    rest.split('/').next().unwrap_or(rest).to_string()
}

struct Hold {
    name: String,
    arrived: Arc<Notify>,
    release: Arc<Notify>,
}

#[derive(Default)]
struct State {
    /// Names (upper case) of every command forwarded.
    log: Mutex<Vec<String>>,
    /// Lose the reply to the next command with this name (and disarm).
    armed: Mutex<Option<String>>,
    /// Replies lost so far.
    dropped: Mutex<u32>,
    /// The next command with this name waits for a release.
    hold: Mutex<Option<Hold>>,
    /// The tasks relaying open connections (aborted by [`RedisProxy::kill`]).
    conns: Mutex<Vec<tokio::task::AbortHandle>>,
}

/// Handle of a held command (see [`RedisProxy::hold_next`]).
pub struct Held {
    arrived: Arc<Notify>,
    release: Arc<Notify>,
}

impl Held {
    /// Waits until the command reached the proxy (it is not forwarded yet).
    pub async fn arrived(&self) {
        self.arrived.notified().await;
    }

    /// Lets the command (and everything after it) through.
    pub fn release(&self) {
        self.release.notify_one();
    }
}

/// The proxy; stops accepting when dropped.
pub struct RedisProxy {
    state: Arc<State>,
    stalled: watch::Sender<bool>,
    port: u16,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for RedisProxy {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl RedisProxy {
    /// Starts a proxy in front of the server at `upstream` (a `redis://host:port` URL).
    pub async fn start(upstream: &str) -> RedisProxy {
        let upstream = host_port(upstream);
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind proxy");
        let port = listener.local_addr().expect("proxy address").port();
        let state = Arc::new(State::default());
        let (stalled, _) = watch::channel(false);
        let st = state.clone();
        let stall_rx = stalled.subscribe();
        let task = tokio::spawn(async move {
            while let Ok((client, _)) = listener.accept().await {
                let st = st.clone();
                let upstream = upstream.clone();
                let stall_rx = stall_rx.clone();
                let conns = st.clone();
                let conn = tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        let _ = client.set_nodelay(true);
                        let _ = server.set_nodelay(true);
                        relay(client, server, st, stall_rx).await;
                    }
                });
                conns.conns.lock().unwrap().push(conn.abort_handle());
            }
        });
        RedisProxy {
            state,
            stalled,
            port,
            task,
        }
    }

    /// Kills the proxy: stops accepting and closes every open connection (a server that died).
    pub fn kill(&self) {
        self.task.abort();
        for c in self.state.conns.lock().unwrap().drain(..) {
            c.abort();
        }
    }

    /// The URL to connect to instead of the server.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Loses the reply to the next command named `name` (e.g. `"EVAL"`), closing the client's
    /// connection once the server answered it.
    pub fn lose_next_reply_to(&self, name: &str) {
        *self.state.armed.lock().unwrap() = Some(name.to_ascii_uppercase());
    }

    /// Holds the next command named `name` in the proxy until [`Held::release`].
    pub fn hold_next(&self, name: &str) -> Held {
        let arrived = Arc::new(Notify::new());
        let release = Arc::new(Notify::new());
        *self.state.hold.lock().unwrap() = Some(Hold {
            name: name.to_ascii_uppercase(),
            arrived: arrived.clone(),
            release: release.clone(),
        });
        Held { arrived, release }
    }

    /// While stalled, no byte passes in either direction (connections stay open).
    pub fn stall(&self, on: bool) {
        self.stalled.send_replace(on);
    }

    /// How many replies were lost.
    pub fn lost(&self) -> u32 {
        *self.state.dropped.lock().unwrap()
    }

    /// Names of all commands forwarded so far (upper case).
    pub fn commands(&self) -> Vec<String> {
        self.state.log.lock().unwrap().clone()
    }

    /// How many commands named `name` were forwarded.
    pub fn count(&self, name: &str) -> usize {
        let name = name.to_ascii_uppercase();
        self.commands().iter().filter(|c| **c == name).count()
    }
}

async fn unstalled(rx: &mut watch::Receiver<bool>) {
    let _ = rx.wait_for(|stalled| !*stalled).await;
}

async fn relay(client: TcpStream, server: TcpStream, st: Arc<State>, stall: watch::Receiver<bool>) {
    let (mut client_rd, mut client_wr) = client.into_split();
    let (mut server_rd, mut server_wr) = server.into_split();
    let lose = Arc::new(AtomicBool::new(false));

    // Server -> client: pass bytes on, unless the current reply is to be lost.
    let down = {
        let lose = lose.clone();
        let st = st.clone();
        let mut stall = stall.clone();
        tokio::spawn(async move {
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                let n = match server_rd.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => n,
                };
                unstalled(&mut stall).await;
                if lose.load(Ordering::SeqCst) {
                    *st.dropped.lock().unwrap() += 1;
                    break;
                }
                if client_wr.write_all(&buf[..n]).await.is_err() {
                    break;
                }
            }
            let _ = client_wr.shutdown().await;
        })
    };
    st.conns.lock().unwrap().push(down.abort_handle());

    // Client -> server: forward command by command.
    let mut stall = stall;
    let mut pending: Vec<u8> = Vec::new();
    let mut buf = vec![0u8; 64 * 1024];
    'outer: loop {
        let n = match client_rd.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&buf[..n]);
        while let Some((len, name)) = complete_command(&pending) {
            let hold = {
                let mut h = st.hold.lock().unwrap();
                if h.as_ref().is_some_and(|h| h.name == name) {
                    h.take()
                } else {
                    None
                }
            };
            if let Some(h) = hold {
                h.arrived.notify_one();
                h.release.notified().await;
            }
            unstalled(&mut stall).await;
            {
                let mut armed = st.armed.lock().unwrap();
                if armed.as_deref() == Some(name.as_str()) {
                    *armed = None;
                    lose.store(true, Ordering::SeqCst);
                }
            }
            st.log.lock().unwrap().push(name);
            let cmd: Vec<u8> = pending.drain(..len).collect();
            if server_wr.write_all(&cmd).await.is_err() {
                break 'outer;
            }
        }
    }
    let _ = server_wr.shutdown().await;
    let _ = down.await;
}

/// If `buf` starts with a complete command (a RESP array of bulk strings, or an inline
/// command line), its length and upper-case name.
fn complete_command(buf: &[u8]) -> Option<(usize, String)> {
    fn line(buf: &[u8], from: usize) -> Option<(&[u8], usize)> {
        let end = buf[from..].windows(2).position(|w| w == b"\r\n")? + from;
        Some((&buf[from..end], end + 2))
    }
    if buf.first() != Some(&b'*') {
        let (l, next) = line(buf, 0)?;
        let name = std::str::from_utf8(l).ok()?.split_whitespace().next()?;
        return Some((next, name.to_ascii_uppercase()));
    }
    let (count, mut at) = line(buf, 1)?;
    let count: usize = std::str::from_utf8(count).ok()?.parse().ok()?;
    let mut name = String::new();
    for i in 0..count {
        if buf.get(at) != Some(&b'$') {
            return None;
        }
        let (len, next) = line(buf, at + 1)?;
        let len: usize = std::str::from_utf8(len).ok()?.parse().ok()?;
        let end = next + len + 2;
        if buf.len() < end {
            return None;
        }
        if i == 0 {
            name = String::from_utf8_lossy(&buf[next..next + len]).to_ascii_uppercase();
        }
        at = end;
    }
    Some((at, name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_commands() {
        let cmd = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n*1\r\n$4\r\nEXEC\r\n";
        assert_eq!(complete_command(cmd), Some((20, "GET".to_string())));
        assert_eq!(complete_command(&cmd[20..]), Some((14, "EXEC".to_string())));
        assert_eq!(complete_command(&cmd[..19]), None);
        assert_eq!(complete_command(b"PING\r\n"), Some((6, "PING".to_string())));
        assert_eq!(host_port("redis://127.0.0.1:6379/0"), "127.0.0.1:6379");
        assert_eq!(host_port("redis://u:p@127.0.0.1:1"), "127.0.0.1:1");
    }
}
