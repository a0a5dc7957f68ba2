//! [`RedisConfig`]: where and how to connect to Redis (host, TLS, authentication, timeouts,
//! pool limits).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::credential::TokenProvider;
use crate::error::{Error, Result};

/// How a connection authenticates.
#[derive(Clone)]
pub(super) enum Auth {
    None,
    /// `AUTH [username] password`: an Azure access key is the password of the default user.
    Password {
        username: Option<String>,
        password: Arc<str>,
    },
    /// `AUTH username token` with a fresh Microsoft Entra ID token per connection.
    Token {
        username: String,
        provider: Arc<dyn TokenProvider>,
    },
}

impl fmt::Debug for Auth {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Auth::None => f.write_str("None"),
            Auth::Password { username, .. } => f
                .debug_struct("Password")
                .field("username", username)
                .field("password", &"<redacted>")
                .finish(),
            Auth::Token { username, .. } => f
                .debug_struct("EntraId")
                .field("username", username)
                .field("token", &"<from provider>")
                .finish(),
        }
    }
}

/// CA certificates in PEM form (not secret; `Debug` shows only their size).
#[derive(Clone)]
pub(super) struct PemRoots(pub(super) Arc<[u8]>);

impl fmt::Debug for PemRoots {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "PemRoots({} bytes)", self.0.len())
    }
}

impl PemRoots {
    /// The certificates as the `redis` crate takes them.
    pub(super) fn certificates(&self) -> ::redis::TlsCertificates {
        ::redis::TlsCertificates {
            client_tls: None,
            root_cert: Some(self.0.to_vec()),
        }
    }

    /// Parses them as a connection would (no I/O): malformed PEM or no certificate at all is
    /// `InvalidInput`.
    fn check(&self) -> Result<()> {
        let has_certificate =
            std::str::from_utf8(&self.0).is_ok_and(|s| s.contains("-----BEGIN CERTIFICATE-----"));
        let info = ::redis::ConnectionInfo {
            addr: ::redis::ConnectionAddr::TcpTls {
                host: "localhost".into(),
                port: 6380,
                insecure: false,
                tls_params: None,
            },
            redis: ::redis::RedisConnectionInfo::default(),
        };
        if !has_certificate || ::redis::Client::build_with_tls(info, self.certificates()).is_err() {
            return Err(Error::invalid_input(
                "the Redis TLS root certificates are not valid PEM certificates",
            ));
        }
        Ok(())
    }
}

/// Where and how to connect to Redis. Secrets (access keys, tokens) never appear in its
/// `Debug` output nor in any error.
///
/// ```
/// use std::time::Duration;
/// use azstore::redis::RedisConfig;
/// let config = RedisConfig::azure_cache("contoso.redis.cache.windows.net")
///     .access_key("not-a-real-key")
///     .operation_timeout(Duration::from_secs(2));
/// assert!(!format!("{config:?}").contains("not-a-real-key"));
/// assert_eq!(config.endpoint(), "contoso.redis.cache.windows.net:6380");
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
#[must_use]
pub struct RedisConfig {
    pub(super) host: String,
    pub(super) port: u16,
    pub(super) tls: bool,
    /// CA certificates (PEM) trusted instead of the usual roots, when set.
    pub(super) tls_roots: Option<PemRoots>,
    pub(super) database: i64,
    pub(super) auth: Auth,
    pub(super) connect_timeout: Duration,
    pub(super) operation_timeout: Duration,
    pub(super) max_idle: usize,
    pub(super) max_connection_age: Duration,
    /// Whether an Entra ID token may go over plain TCP to a loopback server.
    pub(super) token_without_tls_to_loopback: bool,
}

impl RedisConfig {
    /// A plain TCP connection to `host:port`, no authentication.
    ///
    /// ```
    /// let local = azstore::redis::RedisConfig::new("127.0.0.1", 6379);
    /// assert_eq!(local.endpoint(), "127.0.0.1:6379");
    /// ```
    pub fn new(host: impl Into<String>, port: u16) -> RedisConfig {
        RedisConfig {
            host: host.into(),
            port,
            tls: false,
            tls_roots: None,
            database: 0,
            auth: Auth::None,
            connect_timeout: Duration::from_secs(5),
            operation_timeout: Duration::from_secs(5),
            max_idle: 16,
            max_connection_age: Duration::from_secs(10 * 60),
            token_without_tls_to_loopback: false,
        }
    }

    /// Azure Cache for Redis at `host` (e.g. `contoso.redis.cache.windows.net`): TLS on port
    /// 6380, the only transport Azure accepts by default. Add [`access_key`](Self::access_key)
    /// or [`entra_id`](Self::entra_id).
    ///
    /// ```
    /// use azstore::redis::RedisConfig;
    /// let key = std::env::var("REDIS_KEY").unwrap_or_default();
    /// let config = RedisConfig::azure_cache("contoso.redis.cache.windows.net").access_key(key);
    /// # let _ = config;
    /// ```
    pub fn azure_cache(host: impl Into<String>) -> RedisConfig {
        RedisConfig::new(host, 6380).tls(true)
    }

    /// Parses a `redis://[user[:password]@]host[:port][/db]` or `rediss://…` (TLS) URL. The
    /// error never repeats the URL (it may hold a password).
    ///
    /// ```
    /// use azstore::redis::RedisConfig;
    /// let config = RedisConfig::from_url("rediss://:secret@contoso.redis.cache.windows.net:6380/0")?;
    /// assert_eq!(config.endpoint(), "contoso.redis.cache.windows.net:6380");
    /// assert!(RedisConfig::from_url("http://example.com").is_err());
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn from_url(url: &str) -> Result<RedisConfig> {
        use ::redis::{ConnectionAddr, IntoConnectionInfo};
        let invalid = || {
            Error::invalid_input(
                "invalid Redis URL (expected redis://[user[:password]@]host[:port][/db] or rediss://...)",
            )
        };
        if !(url.starts_with("redis://") || url.starts_with("rediss://")) {
            return Err(invalid());
        }
        let info = url.into_connection_info().map_err(|_| invalid())?;
        let (host, port, tls) = match info.addr {
            ConnectionAddr::Tcp(host, port) => (host, port, false),
            ConnectionAddr::TcpTls { host, port, .. } => (host, port, true),
            _ => return Err(invalid()),
        };
        let mut config = RedisConfig::new(host, port).tls(tls);
        config.database = info.redis.db;
        if let Some(password) = info.redis.password {
            config.auth = Auth::Password {
                username: info.redis.username,
                password: password.into(),
            };
        }
        Ok(config)
    }

    /// The port (default 6379, or 6380 for [`azure_cache`](Self::azure_cache); Azure Managed
    /// Redis uses 10000).
    ///
    /// ```
    /// let managed = azstore::redis::RedisConfig::azure_cache("contoso.eastus.redis.azure.net").port(10000);
    /// assert_eq!(managed.endpoint(), "contoso.eastus.redis.azure.net:10000");
    /// ```
    pub fn port(mut self, v: u16) -> Self {
        self.port = v;
        self
    }

    /// TLS on or off (server certificates are verified against the system's and the
    /// webpki roots).
    ///
    /// ```
    /// let config = azstore::redis::RedisConfig::new("redis.internal", 6380).tls(true);
    /// # let _ = config;
    /// ```
    pub fn tls(mut self, v: bool) -> Self {
        self.tls = v;
        self
    }

    /// Trusts only the CA certificates in `pem` for TLS connections (instead of the system's
    /// and the webpki roots): for a Redis server whose certificate comes from a private CA.
    /// Azure Cache for Redis needs no such setting. Malformed PEM fails with `InvalidInput`
    /// when the client is built, before any connection.
    ///
    /// ```no_run
    /// use azstore::redis::RedisConfig;
    /// let pem = std::fs::read("/etc/redis/ca.pem").unwrap_or_default();
    /// let config = RedisConfig::new("redis.internal", 6380).tls(true).tls_root_certificates_pem(&pem);
    /// # let _ = config;
    /// ```
    pub fn tls_root_certificates_pem(mut self, pem: &[u8]) -> RedisConfig {
        self.tls_roots = Some(PemRoots(pem.into()));
        self
    }

    /// The database number (default 0; clustered caches have only 0).
    ///
    /// ```
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).database(2);
    /// # let _ = config;
    /// ```
    pub fn database(mut self, db: u32) -> RedisConfig {
        self.database = db.into();
        self
    }

    /// Authenticates with an Azure access key (primary or secondary): `AUTH key`.
    ///
    /// ```
    /// let key = std::env::var("REDIS_PRIMARY_KEY").unwrap_or_default();
    /// let config = azstore::redis::RedisConfig::azure_cache("contoso.redis.cache.windows.net").access_key(key);
    /// # let _ = config;
    /// ```
    pub fn access_key(mut self, key: impl AsRef<str>) -> RedisConfig {
        self.auth = Auth::Password {
            username: None,
            password: key.as_ref().into(),
        };
        self
    }

    /// Authenticates as the ACL user `username` with `password`.
    ///
    /// ```
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).user("app", "app-password");
    /// assert!(!format!("{config:?}").contains("app-password"));
    /// ```
    pub fn user(mut self, username: impl Into<String>, password: impl AsRef<str>) -> RedisConfig {
        self.auth = Auth::Password {
            username: Some(username.into()),
            password: password.as_ref().into(),
        };
        self
    }

    /// Authenticates with Microsoft Entra ID: `AUTH <object id> <token>`, the token from
    /// `provider` (scope `https://redis.azure.com/.default`), asked for each new connection.
    /// Connections are recycled after [`max_connection_age`](Self::max_connection_age)
    /// (default 10 minutes), well within a token's lifetime.
    ///
    /// ```no_run
    /// # fn demo(tokens: std::sync::Arc<dyn azstore::credential::TokenProvider>) {
    /// // `tokens` returns tokens for https://redis.azure.com/.default (e.g. a managed identity).
    /// let config = azstore::redis::RedisConfig::azure_cache("contoso.redis.cache.windows.net")
    ///     .entra_id("00000000-0000-0000-0000-000000000000", tokens);
    /// # let _ = config; }
    /// ```
    pub fn entra_id(
        mut self,
        object_id: impl Into<String>,
        provider: Arc<dyn TokenProvider>,
    ) -> RedisConfig {
        self.auth = Auth::Token {
            username: object_id.into(),
            provider,
        };
        self
    }

    /// Allows an Entra ID token ([`entra_id`](Self::entra_id)) over plain TCP when the server
    /// is on this machine (`127.0.0.0/8`, `::1`, `localhost`): for local test servers only.
    /// Without it (the default) a token goes only over TLS; to any other host, always.
    ///
    /// ```no_run
    /// # fn demo(tokens: std::sync::Arc<dyn azstore::credential::TokenProvider>) -> azstore::Result<()> {
    /// use azstore::redis::{RedisClient, RedisConfig};
    /// let local = RedisConfig::new("127.0.0.1", 6379)
    ///     .entra_id("00000000-0000-0000-0000-000000000000", tokens)
    ///     .allow_token_without_tls_to_loopback(true);
    /// let client = RedisClient::new(local)?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn allow_token_without_tls_to_loopback(mut self, v: bool) -> RedisConfig {
        self.token_without_tls_to_loopback = v;
        self
    }

    /// Time allowed to connect and authenticate (default 5 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).connect_timeout(Duration::from_secs(1));
    /// # let _ = config;
    /// ```
    pub fn connect_timeout(mut self, v: Duration) -> Self {
        self.connect_timeout = v;
        self
    }

    /// Time allowed for one operation's round trips once connected (default 5 s).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).operation_timeout(Duration::from_millis(500));
    /// # let _ = config;
    /// ```
    pub fn operation_timeout(mut self, v: Duration) -> Self {
        self.operation_timeout = v;
        self
    }

    /// How many idle connections are kept for reuse (default 16).
    ///
    /// ```
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).max_idle(4);
    /// # let _ = config;
    /// ```
    pub fn max_idle(mut self, v: usize) -> Self {
        self.max_idle = v;
        self
    }

    /// Connections older than this are closed instead of reused (default 10 minutes).
    ///
    /// ```
    /// use std::time::Duration;
    /// let config = azstore::redis::RedisConfig::new("127.0.0.1", 6379).max_connection_age(Duration::from_secs(300));
    /// # let _ = config;
    /// ```
    pub fn max_connection_age(mut self, v: Duration) -> Self {
        self.max_connection_age = v;
        self
    }

    /// `host:port` (for messages).
    ///
    /// ```
    /// assert_eq!(azstore::redis::RedisConfig::new("cache", 6379).endpoint(), "cache:6379");
    /// ```
    pub fn endpoint(&self) -> String {
        format!("{}:{}", self.host, self.port)
    }

    pub(super) fn validate(&self) -> Result<()> {
        if self.host.is_empty() || self.host.chars().any(|c| c.is_whitespace() || c == '/') {
            return Err(Error::invalid_input(
                "Redis host name is empty or malformed",
            ));
        }
        if self.port == 0 {
            return Err(Error::invalid_input("Redis port must not be 0"));
        }
        if self.connect_timeout.is_zero() || self.operation_timeout.is_zero() {
            return Err(Error::invalid_input("Redis timeouts must be positive"));
        }
        if let Some(roots) = &self.tls_roots {
            roots.check()?;
        }
        if let Auth::Token { username, .. } = &self.auth {
            if username.is_empty() {
                return Err(Error::invalid_input(
                    "Entra ID authentication needs the object id of the identity as user name",
                ));
            }
            let loopback = crate::http::transport::is_loopback_host(&self.host);
            if !(self.tls || (loopback && self.token_without_tls_to_loopback)) {
                return Err(Error::invalid_input(format!(
                    "refusing to send an Entra ID token to Redis at {} over plain TCP: turn TLS \
                     on (RedisConfig::tls(true), or a rediss:// URL){}",
                    self.endpoint(),
                    if loopback {
                        "; for a local server in tests: \
                         RedisConfig::allow_token_without_tls_to_loopback(true)"
                    } else {
                        ""
                    }
                )));
            }
        }
        Ok(())
    }
}
