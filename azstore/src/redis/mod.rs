//! Azure Cache for Redis with the same concurrency toolkit (cargo feature `redis`).
//!
//! Applications on Azure often keep hot state in Azure Cache for Redis next to Blob and Table.
//! The same three strategies work there:
//!
//! * **Optimistic** — [`RedisJson`] is a [`Versioned`](crate::update::Versioned) resource, so
//!   [`update`](crate::update::update) runs its read-modify-write loop on a Redis key exactly
//!   as on a blob: a conditional write is one compare-and-set script (`EVAL`, atomic on the
//!   server, one round trip), a stale etag is the conflict that `update` retries,
//!   create-if-absent is `SET NX`, and a write whose reply was lost is recognised by its write
//!   id instead of being applied twice.
//! * **Pessimistic** — [`RedisLease`] is [`Leasable`](crate::lease::Leasable): a key set with
//!   `SET key id NX PX ms`, renewed and released only by its holder (compare-and-set
//!   scripts), so the same [`LeaseGuard`](crate::lease::LeaseGuard) renews it and signals its
//!   loss *before* it can expire.
//! * **A lock** — [`RedisLock`] is the lock engine ([`Lock`](crate::lock::Lock)) over
//!   [`RedisLockTarget`]: a lease plus a fencing token (`max(previous + 1, TIME in ms)` on a
//!   companion key, in the same script as the acquire).
//!
//! # Connecting
//! [`RedisConfig`] describes the server; [`RedisClient`] is a cheap-to-clone handle with a
//! small pool of connections (each operation has a connection to itself while it runs).
//! Nothing is sent until the first operation.
//!
//! ```no_run
//! # async fn demo(token_provider: std::sync::Arc<dyn azstore::credential::TokenProvider>) -> azstore::Result<()> {
//! use azstore::redis::{RedisClient, RedisConfig};
//!
//! // Azure Cache for Redis: TLS on port 6380, authenticated with an access key ...
//! let with_key = RedisClient::new(
//!     RedisConfig::azure_cache("contoso.redis.cache.windows.net").access_key("<primary key>"),
//! )?;
//! // ... or with a Microsoft Entra ID token: the user name is the object id of the identity,
//! // the provider returns tokens for `https://redis.azure.com/.default`. Every new connection
//! // asks for a fresh token, and connections are recycled well before tokens expire.
//! let with_entra = RedisClient::new(
//!     RedisConfig::azure_cache("contoso.redis.cache.windows.net")
//!         .entra_id("<object id>", token_provider),
//! )?;
//! // A local server, or any URL (`redis://` or `rediss://`, user and password allowed).
//! let local = RedisClient::new(RedisConfig::from_url("redis://127.0.0.1:6379")?)?;
//! # let _ = (with_key, with_entra, local);
//! # Ok(()) }
//! ```
//!
//! Azure Managed Redis listens on port 10000: `RedisConfig::azure_cache(host).port(10000)`.
//!
//! # Errors
//! Redis answers are mapped onto azstore's [`Error`], in the toolkit's words: a refused
//! condition is [`ErrorKind::PreconditionFailed`], a create that finds the key is
//! [`ErrorKind::AlreadyExists`], a missing key is [`ErrorKind::NotFound`], a lease someone
//! else holds is [`ErrorKind::LeaseHeld`] and a lease id that no longer holds the key is
//! [`ErrorKind::LeaseLost`]. A Redis error reply is
//! [`ErrorKind::Service`] with the reply's code (e.g.
//! `WRONGTYPE`) as [`ErrorCode::Other`]; `LOADING`, `BUSY`,
//! `TRYAGAIN`, `MASTERDOWN`, `READONLY` and `CLUSTERDOWN` (a failover or restart in progress)
//! are transient and [retryable](Error::is_retryable), like dropped connections and
//! timeouts. These errors have no HTTP status. Every call is bounded by the configured
//! timeouts; a write whose reply did not arrive in time has
//! [`RequestSent::Maybe`].

mod config;
mod json;
mod lease;
mod lock;

use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ::redis::aio::MultiplexedConnection;
use tokio::time::Instant;

use crate::error::{Error, ErrorCode, ErrorKind, RequestSent, Result};

use config::Auth;
pub use config::RedisConfig;
pub use json::RedisJson;
pub use lease::RedisLease;
pub use lock::{BULK_STATUS_KEYS, HeldRedisLock, RedisLock, RedisLockTarget, RedisLocks};

/// The environment variable [`RedisClient::from_env`] reads: a `redis://` or `rediss://` URL.
pub const REDIS_URL_ENV: &str = "AZSTORE_REDIS_URL";

struct Idle {
    con: MultiplexedConnection,
    born: Instant,
}

struct Inner {
    config: RedisConfig,
    /// Connections not in use. A connection is taken out for the whole of one operation
    /// (so that its commands are not interleaved with anyone else's) and put
    /// back only when the operation succeeded or failed cleanly; a connection that saw a
    /// transport error or a timeout is dropped, since its state is unknown.
    idle: Mutex<Vec<Idle>>,
}

/// A connection to one Redis server (or Azure cache). Cheap to clone; clones share the pool.
///
/// ```no_run
/// # async fn demo() -> azstore::Result<()> {
/// use azstore::redis::{RedisClient, RedisConfig};
/// let redis = RedisClient::new(RedisConfig::from_url("redis://127.0.0.1:6379")?)?;
/// redis.ping().await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct RedisClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for RedisClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisClient")
            .field("config", &self.inner.config)
            .finish()
    }
}

/// Whether an operation may be repeated after a transport failure or timeout.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Idempotent {
    /// Reads, and writes whose repeat is harmless (renewing a lease with its id).
    Yes,
    /// Conditional writes: a lost reply is reported as [`RequestSent::Maybe`], never repeated.
    No,
}

impl RedisClient {
    /// A client for `config` (validated here; nothing is sent until the first operation).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// use azstore::redis::{RedisClient, RedisConfig};
    /// let key = std::env::var("REDIS_ACCESS_KEY").unwrap_or_default();
    /// let cache = RedisClient::new(
    ///     RedisConfig::azure_cache("contoso.redis.cache.windows.net").access_key(key),
    /// )?;
    /// # let _ = cache; Ok(()) }
    /// ```
    pub fn new(config: RedisConfig) -> Result<RedisClient> {
        config.validate()?;
        Ok(RedisClient {
            inner: Arc::new(Inner {
                config,
                idle: Mutex::new(Vec::new()),
            }),
        })
    }

    /// A client for the URL in `AZSTORE_REDIS_URL` ([`REDIS_URL_ENV`]); `InvalidInput` when
    /// it is not set.
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// // AZSTORE_REDIS_URL=rediss://:<key>@contoso.redis.cache.windows.net:6380
    /// let redis = azstore::redis::RedisClient::from_env()?;
    /// # let _ = redis; Ok(()) }
    /// ```
    pub fn from_env() -> Result<RedisClient> {
        let url = std::env::var(REDIS_URL_ENV).map_err(|_| {
            Error::invalid_input(format!("{REDIS_URL_ENV} is not set (a redis:// URL)"))
        })?;
        RedisClient::new(RedisConfig::from_url(&url)?)
    }

    /// The configuration (its `Debug` never shows keys or passwords).
    ///
    /// ```no_run
    /// # fn demo(redis: azstore::redis::RedisClient) {
    /// println!("connected to {}", redis.config().endpoint());
    /// # }
    /// ```
    pub fn config(&self) -> &RedisConfig {
        &self.inner.config
    }

    /// A JSON value at `key`, for [`update`](crate::update::update).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::update::{Decision, UpdatePolicy, update};
    /// let visits = redis.json::<u64>("stats:visits")?;
    /// update(&visits, &UpdatePolicy::default(), |n| Decision::Write(n.copied().unwrap_or(0) + 1))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn json<T>(&self, key: &str) -> Result<RedisJson<T>> {
        RedisJson::new(self.clone(), key)
    }

    /// A lease on `key`, for [`LeaseGuard`](crate::lease::LeaseGuard).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use azstore::lease::{LeaseDuration, LeaseGuard};
    /// let guard = LeaseGuard::acquire(redis.lease("leader:billing")?, LeaseDuration::seconds(15)?).await?;
    /// // ... act as the leader while guard.is_held() ...
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lease(&self, key: &str) -> Result<RedisLease> {
        RedisLease::new(self.clone(), key)
    }

    /// A lock on `key` with a fencing token (default [`LockOptions`](crate::lock::LockOptions)).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// let lock = redis.lock("locks:nightly")?;
    /// if let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? {
    ///     println!("token {}", held.fencing_token());
    ///     held.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lock(&self, key: &str) -> Result<RedisLock> {
        RedisLock::new(self.clone(), key)
    }

    /// Sends `PING`: checks that the server is reachable and accepts our credentials.
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) {
    /// if let Err(e) = redis.ping().await {
    ///     eprintln!("Redis not usable: {e}");
    /// }
    /// # }
    /// ```
    pub async fn ping(&self) -> Result<()> {
        self.run("PING", Idempotent::Yes, |mut con| async move {
            ::redis::cmd("PING").query_async::<String>(&mut con).await
        })
        .await
        .map(|_| ())
    }

    async fn connect(&self) -> Result<MultiplexedConnection> {
        let cfg = &self.inner.config;
        let addr = if cfg.tls {
            ::redis::ConnectionAddr::TcpTls {
                host: cfg.host.clone(),
                port: cfg.port,
                insecure: false,
                tls_params: None,
            }
        } else {
            ::redis::ConnectionAddr::Tcp(cfg.host.clone(), cfg.port)
        };
        let (username, password) = match &cfg.auth {
            Auth::None => (None, None),
            Auth::Password { username, password } => (username.clone(), Some(password.to_string())),
            Auth::Token { username, provider } => {
                let token = tokio::time::timeout(cfg.connect_timeout, provider.token())
                    .await
                    .map_err(|_| {
                        Error::new(
                            ErrorKind::Timeout,
                            format!(
                                "the token provider gave no Entra ID token for Redis within {:?}",
                                cfg.connect_timeout
                            ),
                        )
                        .with_sent(RequestSent::No)
                    })??;
                (
                    Some(username.clone()),
                    Some(token.expose_secret().to_string()),
                )
            }
        };
        let info = ::redis::ConnectionInfo {
            addr,
            redis: ::redis::RedisConnectionInfo {
                db: cfg.database,
                username,
                password,
                ..Default::default()
            },
        };
        let client = match (&cfg.tls_roots, cfg.tls) {
            (Some(roots), true) => ::redis::Client::build_with_tls(info, roots.certificates()),
            _ => ::redis::Client::open(info),
        }
        .map_err(|e| self.map_error("connect", e))?;
        let options = ::redis::AsyncConnectionConfig::new()
            .set_connection_timeout(cfg.connect_timeout)
            .set_response_timeout(cfg.operation_timeout);
        match tokio::time::timeout(
            cfg.connect_timeout,
            client.get_multiplexed_async_connection_with_config(&options),
        )
        .await
        {
            Ok(Ok(con)) => Ok(con),
            Ok(Err(e)) => Err(self.map_error("connect", e).with_sent(RequestSent::No)),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "could not connect to Redis at {} within {:?}",
                    cfg.endpoint(),
                    cfg.connect_timeout
                ),
            )
            .with_sent(RequestSent::No)),
        }
    }

    fn checkout(&self) -> Option<Idle> {
        let max_age = self.inner.config.max_connection_age;
        let mut idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        while let Some(c) = idle.pop() {
            if c.born.elapsed() < max_age {
                return Some(c);
            }
        }
        None
    }

    fn checkin(&self, c: Idle) {
        let mut idle = self
            .inner
            .idle
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if idle.len() < self.inner.config.max_idle {
            idle.push(c);
        }
    }

    /// Runs one operation on a connection of its own, bounded by the operation timeout.
    /// `op` gets a handle to the connection (cheap clone) and must finish using it. An
    /// idempotent operation is tried up to three times through transport failures and
    /// timeouts; a non-idempotent one once.
    pub(crate) async fn run<T, F, Fut>(&self, what: &str, idem: Idempotent, mut op: F) -> Result<T>
    where
        F: FnMut(MultiplexedConnection) -> Fut,
        Fut: Future<Output = ::redis::RedisResult<T>>,
    {
        let attempts = if idem == Idempotent::Yes { 3 } else { 1 };
        let mut delay = Duration::from_millis(50);
        let mut attempt = 1;
        loop {
            let result = self.run_once(what, &mut op).await;
            match result {
                Err(e) if e.is_retryable() && attempt < attempts => {
                    tracing::debug!(%what, error = %e, "transient Redis failure, retrying");
                    tokio::time::sleep(delay).await;
                    delay *= 4;
                    attempt += 1;
                }
                other => return other,
            }
        }
    }

    async fn run_once<T, F, Fut>(&self, what: &str, op: &mut F) -> Result<T>
    where
        F: FnMut(MultiplexedConnection) -> Fut,
        Fut: Future<Output = ::redis::RedisResult<T>>,
    {
        let conn = match self.checkout() {
            Some(c) => c,
            None => Idle {
                con: self.connect().await?,
                born: Instant::now(),
            },
        };
        let timeout = self.inner.config.operation_timeout;
        match tokio::time::timeout(timeout, op(conn.con.clone())).await {
            Ok(Ok(v)) => {
                self.checkin(conn);
                Ok(v)
            }
            // An error reply leaves the connection usable, but an operation that failed
            // midway may have left state on it: close it rather than hand that on.
            Ok(Err(e)) => Err(self.map_error(what, e)),
            Err(_) => Err(Error::new(
                ErrorKind::Timeout,
                format!(
                    "Redis {what} at {} got no reply within {timeout:?}",
                    self.inner.config.endpoint()
                ),
            )),
        }
    }

    /// A Redis client error as an azstore error. Never includes the URL or credentials.
    fn map_error(&self, what: &str, e: ::redis::RedisError) -> Error {
        use ::redis::ErrorKind as K;
        let endpoint = self.inner.config.endpoint();
        let code = e.code().map(str::to_string);
        let detail = e.detail().unwrap_or_default().to_string();
        if e.is_timeout() {
            return Error::new(
                ErrorKind::Timeout,
                format!("Redis {what} at {endpoint} timed out"),
            );
        }
        if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() {
            let sent = if e.is_connection_refusal() {
                RequestSent::No
            } else {
                RequestSent::Maybe
            };
            return Error::new(
                ErrorKind::Transport,
                format!(
                    "Redis {what} at {endpoint}: connection failed: {}",
                    e.category()
                ),
            )
            .with_sent(sent);
        }
        let message = |category: &str| {
            let mut m = format!("Redis {what} at {endpoint}: {category}");
            if let Some(c) = &code {
                m.push_str(&format!(" {c}"));
            }
            if !detail.is_empty() {
                m.push_str(&format!(": {detail}"));
            }
            m
        };
        let kind = match e.kind() {
            K::AuthenticationFailed => ErrorKind::Auth,
            K::BusyLoadingError | K::TryAgain | K::ClusterDown | K::MasterDown | K::ReadOnly => {
                ErrorKind::Transport
            }
            K::InvalidClientConfig => ErrorKind::InvalidInput,
            _ if matches!(code.as_deref(), Some("NOPERM" | "WRONGPASS" | "NOAUTH")) => {
                ErrorKind::Auth
            }
            _ if code.as_deref() == Some("BUSY") => ErrorKind::Transport,
            _ => ErrorKind::Service,
        };
        let mut err = Error::new(kind, message(e.category())).with_sent(RequestSent::Yes);
        if kind == ErrorKind::InvalidInput {
            err = err.with_sent(RequestSent::No);
        }
        if let Some(c) = code {
            err = err.with_code(ErrorCode::Other(c));
        }
        err
    }
}

/// Checks a key: non-empty, at most 64 KiB (Redis allows more, but a key that long is a bug).
fn validate_key(key: &str) -> Result<()> {
    if key.is_empty() {
        return Err(Error::invalid_input("Redis key must not be empty"));
    }
    if key.len() > 64 * 1024 {
        return Err(Error::invalid_input("Redis key is longer than 64 KiB"));
    }
    Ok(())
}

/// A random 128-bit hex token (ETags, lease ids).
fn random_hex() -> String {
    format!("{:032x}", rand::random::<u128>())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_parse_and_never_echo_secrets() {
        let c = RedisConfig::from_url("rediss://me:s3cret@cache.example:6380/2").unwrap();
        assert!(c.tls);
        assert_eq!(c.endpoint(), "cache.example:6380");
        assert_eq!(c.database, 2);
        let shown = format!("{c:?}");
        assert!(!shown.contains("s3cret"), "{shown}");
        assert!(shown.contains("me"), "{shown}");
        let e = RedisConfig::from_url("http://me:s3cret@x").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput);
        assert!(!format!("{e} {e:?}").contains("s3cret"));
        let e = RedisConfig::from_url("redis://me:s3cret@[::1").unwrap_err();
        assert!(!format!("{e} {e:?}").contains("s3cret"));
        let c = RedisConfig::azure_cache("c.redis.cache.windows.net").access_key("KEY123");
        assert!(c.tls && c.port == 6380);
        assert!(!format!("{c:?}").contains("KEY123"));
    }

    #[test]
    fn bad_config_is_refused_before_connecting() {
        assert!(RedisClient::new(RedisConfig::new("", 6379)).is_err());
        assert!(RedisClient::new(RedisConfig::new("h", 0)).is_err());
        assert!(
            RedisClient::new(RedisConfig::new("h", 1).operation_timeout(Duration::ZERO)).is_err()
        );
        assert!(validate_key("").is_err());
        assert!(validate_key(&"k".repeat(64 * 1024 + 1)).is_err());
        assert!(validate_key("a").is_ok());
    }
}
