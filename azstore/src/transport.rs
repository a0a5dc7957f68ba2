//! How requests reach the service: TLS roots, proxies, connect timeout, or your own
//! `reqwest::Client`; and the rule that a bearer token never travels over plain HTTP.
//!
//! Azure Storage speaks HTTP/1.1 over TLS (rustls with the ring crypto provider, TLS 1.2 and
//! 1.3). The defaults suit the public cloud: the bundled Mozilla roots (`webpki-roots`), the proxy named by the standard `HTTPS_PROXY` /
//! `HTTP_PROXY` / `ALL_PROXY` / `NO_PROXY` variables (upper or lower case) if any, a 10 s connect
//! timeout.
//!
//! ```
//! use azstore::http::{TlsRoots, TransportOptions};
//! # fn demo(corporate_ca_pem: &[u8]) -> azstore::Result<()> {
//! let transport = TransportOptions::default()
//!     .tls_roots(TlsRoots::Native)                 // the operating system's store
//!     .add_root_certificates_pem(corporate_ca_pem)? // plus a private CA
//!     .proxy("http://proxy.internal:3128")?;
//! let options = azstore::http::ClientOptions::default().transport(transport);
//! # let _ = options; Ok(()) }
//! ```

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject as _;

use crate::error::{Error, Result};

/// Which built-in root certificates to trust (certificates added with
/// [`TransportOptions::add_root_certificates_pem`] are trusted in every case).
///
/// ```
/// use azstore::http::{TlsRoots, TransportOptions};
/// // Behind a TLS-inspecting proxy whose CA is installed in the OS store.
/// let transport = TransportOptions::default().tls_roots(TlsRoots::BundledAndNative);
/// # let _ = transport;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum TlsRoots {
    /// The Mozilla root program, compiled in (`webpki-roots`). The default: the same on every
    /// machine.
    #[default]
    Bundled,
    /// The operating system's certificate store, read when a client is built (on Linux also
    /// `SSL_CERT_FILE` / `SSL_CERT_DIR`; `rustls-native-certs`): what a corporate TLS-inspecting proxy's CA is usually installed in.
    Native,
    /// Both of the above.
    BundledAndNative,
    /// None: only the certificates added explicitly.
    OnlyAdded,
}

/// A proxy choice.
#[derive(Clone, Default)]
enum ProxyChoice {
    /// The standard environment variables (reqwest's behaviour).
    #[default]
    FromEnvironment,
    /// No proxy, whatever the environment says.
    Disabled,
    /// This proxy for every request (the URL may carry credentials; never printed).
    Explicit(Box<reqwest::Proxy>),
}

/// Network options shared by the clients built from one [`crate::http::ClientOptions`].
///
/// ```
/// use std::time::Duration;
/// use azstore::http::{ClientOptions, TransportOptions};
/// let transport = TransportOptions::default().connect_timeout(Duration::from_secs(3)).no_proxy();
/// let options = ClientOptions::default().transport(transport);
/// # let _ = options;
/// ```
#[derive(Clone)]
#[non_exhaustive]
#[must_use]
pub struct TransportOptions {
    roots: TlsRoots,
    extra_roots: Vec<CertificateDer<'static>>,
    proxy: ProxyChoice,
    connect_timeout: Option<Duration>,
    client: Option<reqwest::Client>,
    bearer_over_http_to_loopback: bool,
    sas_over_http: bool,
}

impl Default for TransportOptions {
    fn default() -> Self {
        TransportOptions {
            roots: TlsRoots::default(),
            extra_roots: Vec::new(),
            proxy: ProxyChoice::default(),
            connect_timeout: Some(Duration::from_secs(10)),
            client: None,
            bearer_over_http_to_loopback: false,
            sas_over_http: false,
        }
    }
}

/// Environment variable naming a PEM file of extra root certificates ([`TransportOptions::from_env`]).
pub const CA_FILE_ENV: &str = "AZSTORE_CA_FILE";
/// Environment variable choosing the built-in roots: `bundled`, `native`, `both` or `none`.
pub const TLS_ROOTS_ENV: &str = "AZSTORE_TLS_ROOTS";
/// Environment variable that, set to `loopback`, allows bearer tokens over plain HTTP to
/// a loopback emulator ([`TransportOptions::allow_bearer_over_http_to_loopback`]).
pub const BEARER_OVER_HTTP_ENV: &str = "AZSTORE_ALLOW_BEARER_OVER_HTTP";
/// Environment variable that, set to `any`, allows SAS tokens over plain HTTP to hosts other
/// than this machine ([`TransportOptions::allow_sas_over_http`]).
pub const SAS_OVER_HTTP_ENV: &str = "AZSTORE_ALLOW_SAS_OVER_HTTP";

impl TransportOptions {
    /// The defaults, adjusted by the environment: `AZSTORE_CA_FILE` (a PEM file of extra roots),
    /// `AZSTORE_TLS_ROOTS` (`bundled` | `native` | `both` | `none`) and
    /// `AZSTORE_ALLOW_BEARER_OVER_HTTP=loopback`. Proxies come from the standard variables either
    /// way.
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// // AZSTORE_TLS_ROOTS=native AZSTORE_CA_FILE=/etc/ssl/corp-ca.pem my-app
    /// let transport = azstore::http::TransportOptions::from_env()?;
    /// let options = azstore::http::ClientOptions::default().transport(transport);
    /// # let _ = options; Ok(()) }
    /// ```
    pub fn from_env() -> Result<TransportOptions> {
        Self::from_lookup(&|k| std::env::var(k).ok())
    }

    pub(crate) fn from_lookup(get: &dyn Fn(&str) -> Option<String>) -> Result<TransportOptions> {
        let mut t = TransportOptions::default();
        if let Some(roots) = get(TLS_ROOTS_ENV) {
            t.roots = match roots.trim().to_ascii_lowercase().as_str() {
                "bundled" => TlsRoots::Bundled,
                "native" => TlsRoots::Native,
                "both" => TlsRoots::BundledAndNative,
                "none" => TlsRoots::OnlyAdded,
                _ => {
                    return Err(Error::invalid_input(format!(
                        "{TLS_ROOTS_ENV} must be bundled, native, both or none"
                    )));
                }
            };
        }
        if let Some(path) = get(CA_FILE_ENV).filter(|p| !p.trim().is_empty()) {
            let pem = std::fs::read(path.trim()).map_err(|e| {
                Error::invalid_input(format!("{CA_FILE_ENV}: cannot read {}: {e}", path.trim()))
            })?;
            t = t.add_root_certificates_pem(&pem).map_err(|e| {
                Error::invalid_input(format!("{CA_FILE_ENV} ({}): {}", path.trim(), e.message()))
            })?;
        }
        if let Some(v) = get(BEARER_OVER_HTTP_ENV) {
            match v.trim() {
                "loopback" => t.bearer_over_http_to_loopback = true,
                "" | "no" | "false" => {}
                _ => {
                    return Err(Error::invalid_input(format!(
                        "{BEARER_OVER_HTTP_ENV} accepts only `loopback`"
                    )));
                }
            }
        }
        if let Some(v) = get(SAS_OVER_HTTP_ENV) {
            match v.trim() {
                "any" => t.sas_over_http = true,
                "" | "no" | "false" => {}
                _ => {
                    return Err(Error::invalid_input(format!(
                        "{SAS_OVER_HTTP_ENV} accepts only `any`"
                    )));
                }
            }
        }
        Ok(t)
    }

    /// Which built-in roots to trust (default [`TlsRoots::Bundled`]).
    ///
    /// ```
    /// use azstore::http::{TlsRoots, TransportOptions};
    /// let transport = TransportOptions::default().tls_roots(TlsRoots::Native);
    /// # let _ = transport;
    /// ```
    pub fn tls_roots(mut self, v: TlsRoots) -> Self {
        self.roots = v;
        self
    }

    /// Also trusts every certificate in `pem` (one or more `-----BEGIN CERTIFICATE-----`
    /// blocks): a private CA, a TLS-inspecting proxy's CA, an emulator's test certificate.
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// let pem = std::fs::read("/etc/ssl/corp-ca.pem").unwrap_or_default();
    /// let transport = azstore::http::TransportOptions::default().add_root_certificates_pem(&pem)?;
    /// # let _ = transport; Ok(()) }
    /// ```
    pub fn add_root_certificates_pem(mut self, pem: &[u8]) -> Result<TransportOptions> {
        let certs = CertificateDer::pem_slice_iter(pem)
            .collect::<std::result::Result<Vec<_>, _>>()
            .map_err(|_| Error::invalid_input("root certificates: not valid PEM"))?;
        if certs.is_empty() {
            return Err(Error::invalid_input(
                "root certificates: no CERTIFICATE block in the PEM data",
            ));
        }
        // Checked here, so a bad certificate is an error of this call, not of the first request.
        let mut check = rustls::RootCertStore::empty();
        for c in &certs {
            check.add(c.clone()).map_err(|_| {
                Error::invalid_input(
                    "root certificates: a CERTIFICATE block is not a valid X.509 certificate",
                )
            })?;
        }
        self.extra_roots.extend(certs);
        Ok(self)
    }

    /// Sends every request through this HTTP(S) proxy (`http://host:port`, optionally with
    /// `user:password@`), instead of the one the environment names.
    ///
    /// ```
    /// let transport = azstore::http::TransportOptions::default().proxy("http://proxy.internal:3128")?;
    /// # let _ = transport;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn proxy(mut self, url: &str) -> Result<TransportOptions> {
        let proxy = reqwest::Proxy::all(url)
            .map_err(|_| Error::invalid_input("proxy: not a valid proxy URL"))?;
        self.proxy = ProxyChoice::Explicit(Box::new(proxy));
        Ok(self)
    }

    /// Uses no proxy, even if `HTTPS_PROXY` and friends are set.
    ///
    /// ```
    /// // Talk to a private endpoint directly even though the machine has a proxy configured.
    /// let transport = azstore::http::TransportOptions::default().no_proxy();
    /// # let _ = transport;
    /// ```
    pub fn no_proxy(mut self) -> TransportOptions {
        self.proxy = ProxyChoice::Disabled;
        self
    }

    /// Time allowed to establish a connection (TCP and TLS), default 10 s. A connection that
    /// could not be established was not sent, so it is retried like any transient failure.
    ///
    /// ```
    /// use std::time::Duration;
    /// let transport = azstore::http::TransportOptions::default().connect_timeout(Duration::from_secs(2));
    /// # let _ = transport;
    /// ```
    pub fn connect_timeout(mut self, v: Duration) -> Self {
        self.connect_timeout = Some(v);
        self
    }

    /// Uses this client as it is (its own roots, proxy, timeouts, pool): the escape hatch for
    /// whatever the options above do not cover. azstore builds reqwest with its
    /// `rustls-no-provider` feature, so a client built with reqwest's own TLS settings needs
    /// reqwest's `rustls` feature in your crate, a process-wide rustls crypto provider, or a
    /// configuration given to `tls_backend_preconfigured`. The other transport options are then ignored,
    /// except the bearer-over-HTTP rule. Keep its idle-connection timeout below the service's
    /// keep-alive (see [`crate::http::ClientOptions::pool_idle_timeout`]) and do not enable HTTP/2.
    ///
    /// ```no_run
    /// use std::time::Duration;
    /// let own = reqwest::Client::builder()
    ///     .pool_idle_timeout(Duration::from_secs(4))
    ///     .http1_only()
    ///     .build()
    ///     .expect("client");
    /// let transport = azstore::http::TransportOptions::default().client(own);
    /// # let _ = transport;
    /// ```
    pub fn client(mut self, v: reqwest::Client) -> Self {
        self.client = Some(v);
        self
    }

    /// Allows sending a bearer token over plain `http://` when the endpoint is on this machine
    /// (`127.0.0.0/8`, `::1`, `localhost`): for local emulators only. Without it (the default)
    /// a request that would put a token on an unencrypted connection is refused before
    /// sending. Tokens never go over plain HTTP to any other host.
    ///
    /// ```
    /// // Entra ID tokens against Azurite on http://127.0.0.1 in a test.
    /// let transport = azstore::http::TransportOptions::default().allow_bearer_over_http_to_loopback(true);
    /// # let _ = transport;
    /// ```
    pub fn allow_bearer_over_http_to_loopback(mut self, v: bool) -> Self {
        self.bearer_over_http_to_loopback = v;
        self
    }

    pub(crate) fn bearer_over_http_to_loopback_allowed(&self) -> bool {
        self.bearer_over_http_to_loopback
    }

    /// Allows sending a SAS token (the account's SAS credential, or a SAS in a copy source's
    /// URL) over plain `http://` to a host other than this machine — an emulator in another
    /// container of a test network, say. Without it (the default) such a request is refused
    /// before sending: whoever sees the connection could use the SAS until it expires. A SAS
    /// goes to a loopback endpoint (`127.0.0.0/8`, `::1`, `localhost`) over HTTP without it.
    /// The environment variable `AZSTORE_ALLOW_SAS_OVER_HTTP=any` sets it in
    /// [`from_env`](Self::from_env).
    ///
    /// ```
    /// // Azurite at http://azurite:10000 in a compose network, with a SAS.
    /// let transport = azstore::http::TransportOptions::default().allow_sas_over_http(true);
    /// # let _ = transport;
    /// ```
    pub fn allow_sas_over_http(mut self, v: bool) -> Self {
        self.sas_over_http = v;
        self
    }

    pub(crate) fn sas_over_http_allowed(&self) -> bool {
        self.sas_over_http
    }

    /// The reqwest client for one pipeline.
    pub(crate) fn build(&self, pool_idle_timeout: Duration) -> Result<reqwest::Client> {
        if let Some(c) = &self.client {
            return Ok(c.clone());
        }
        let mut b = reqwest::Client::builder()
            .pool_idle_timeout(pool_idle_timeout)
            .tcp_nodelay(true)
            .http1_only()
            // Azure Storage and Cosmos DB never redirect; following one would send the
            // request's SAS, bearer token or copy source to another host. Nor is a `Referer`
            // (the full URL, SAS signature included) ever sent.
            .redirect(reqwest::redirect::Policy::none())
            .referer(false)
            .tls_backend_preconfigured(self.tls_config()?);
        if let Some(t) = self.connect_timeout {
            b = b.connect_timeout(t);
        }
        b = match &self.proxy {
            ProxyChoice::FromEnvironment => b,
            ProxyChoice::Disabled => b.no_proxy(),
            ProxyChoice::Explicit(p) => b.proxy((**p).clone()),
        };
        b.build().map_err(|e| {
            Error::invalid_input("could not build the HTTP client (TLS roots or proxy settings)")
                .with_source(e.without_url())
        })
    }
}

impl TransportOptions {
    /// The TLS configuration: ring as the crypto provider (no process-wide default needed or
    /// installed), TLS 1.2 and 1.3, the chosen roots, ALPN `http/1.1` only.
    fn tls_config(&self) -> Result<rustls::ClientConfig> {
        let roots = self.root_store()?;
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let mut config = rustls::ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()
            .map_err(|e| Error::invalid_input("could not configure TLS").with_source(e))?
            .with_root_certificates(roots)
            .with_no_client_auth();
        config.alpn_protocols = vec![b"http/1.1".to_vec()];
        Ok(config)
    }

    /// The trusted roots: the built-in ones [`TlsRoots`] chooses, plus the added ones.
    fn root_store(&self) -> Result<rustls::RootCertStore> {
        let (bundled, native) = match self.roots {
            TlsRoots::Bundled => (true, false),
            TlsRoots::Native => (false, true),
            TlsRoots::BundledAndNative => (true, true),
            TlsRoots::OnlyAdded => (false, false),
        };
        let mut roots = rustls::RootCertStore::empty();
        if bundled {
            roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
        }
        if native {
            // Unreadable or unparsable entries are skipped (as reqwest 0.12 did); a store with
            // no usable certificate at all is an error unless other roots remain.
            let found = rustls_native_certs::load_native_certs();
            let (added, _skipped) = roots.add_parsable_certificates(found.certs);
            if added == 0 && !bundled && self.extra_roots.is_empty() {
                return Err(Error::invalid_input(
                    "TLS roots: the operating system's certificate store has no usable \
                     certificate (set SSL_CERT_FILE, or choose TlsRoots::Bundled)",
                ));
            }
        }
        for c in &self.extra_roots {
            roots.add(c.clone()).map_err(|_| {
                Error::invalid_input("root certificates: not a valid X.509 certificate")
            })?;
        }
        Ok(roots)
    }
}

impl fmt::Debug for TransportOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let proxy = match &self.proxy {
            ProxyChoice::FromEnvironment => "from environment",
            ProxyChoice::Disabled => "disabled",
            ProxyChoice::Explicit(_) => "explicit (<redacted>)",
        };
        f.debug_struct("TransportOptions")
            .field("roots", &self.roots)
            .field("extra_roots", &self.extra_roots.len())
            .field("proxy", &proxy)
            .field("connect_timeout", &self.connect_timeout)
            .field("custom_client", &self.client.is_some())
            .field(
                "bearer_over_http_to_loopback",
                &self.bearer_over_http_to_loopback,
            )
            .field("sas_over_http", &self.sas_over_http)
            .finish()
    }
}

/// Reads a success body whole, at most `limit` bytes of it: `Ok(Err(read))` when the body is
/// longer (it declares more, or more arrives; `read` is what had been read by then, the rest is
/// never read). Memory stays within `limit` plus one chunk. A body of one chunk is returned
/// without a copy.
pub(crate) async fn read_within(
    resp: &mut reqwest::Response,
    limit: u64,
) -> std::result::Result<std::result::Result<bytes::Bytes, u64>, reqwest::Error> {
    let declared = resp.content_length();
    if declared.is_some_and(|n| n > limit) {
        return Ok(Err(0));
    }
    let Some(first) = resp.chunk().await? else {
        return Ok(Ok(bytes::Bytes::new()));
    };
    let mut read = first.len() as u64;
    if read > limit {
        return Ok(Err(read));
    }
    let Some(second) = resp.chunk().await? else {
        return Ok(Ok(first));
    };
    read += second.len() as u64;
    if read > limit {
        return Ok(Err(read));
    }
    let capacity = declared.unwrap_or(read).clamp(read, limit);
    let mut out = bytes::BytesMut::with_capacity(usize::try_from(capacity).unwrap_or(usize::MAX));
    out.extend_from_slice(&first);
    out.extend_from_slice(&second);
    while let Some(chunk) = resp.chunk().await? {
        read += chunk.len() as u64;
        if read > limit {
            return Ok(Err(read));
        }
        out.extend_from_slice(&chunk);
    }
    Ok(Ok(out.freeze()))
}

/// Whether `host` (a URL's host, IPv6 in brackets) names this machine.
pub(crate) fn is_loopback_host(host: &str) -> bool {
    let h = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = h.parse::<std::net::IpAddr>() {
        return ip.is_loopback();
    }
    let d = h.trim_end_matches('.').to_ascii_lowercase();
    d == "localhost" || d.ends_with(".localhost")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn roots(choice: TlsRoots) -> usize {
        TransportOptions::default()
            .tls_roots(choice)
            .root_store()
            .unwrap()
            .len()
    }

    #[test]
    fn each_root_choice_trusts_what_it_names() {
        let bundled = webpki_roots::TLS_SERVER_ROOTS.len();
        assert!(bundled > 100, "the Mozilla set has {bundled} roots");
        assert_eq!(roots(TlsRoots::Bundled), bundled);
        assert_eq!(roots(TlsRoots::OnlyAdded), 0);
        // The machine's store (ca-certificates on the test machines) is read, not the bundle.
        let native = roots(TlsRoots::Native);
        assert!(native > 0, "the operating system's store is empty");
        assert_eq!(roots(TlsRoots::BundledAndNative), bundled + native);
        // Every choice builds a client (TLS configuration handed to reqwest).
        for choice in [
            TlsRoots::Bundled,
            TlsRoots::Native,
            TlsRoots::BundledAndNative,
            TlsRoots::OnlyAdded,
        ] {
            let t = TransportOptions::default().tls_roots(choice);
            t.build(Duration::from_secs(4)).unwrap();
            assert_eq!(
                t.tls_config().unwrap().alpn_protocols,
                [b"http/1.1".to_vec()],
                "HTTP/1.1 only"
            );
        }
    }

    #[test]
    fn bad_root_certificates_are_typed_errors_of_the_call_that_adds_them() {
        let cases: [(&[u8], &str); 3] = [
            (b"", "no CERTIFICATE block"),
            (
                b"-----BEGIN CERTIFICATE-----\n%%%\n-----END CERTIFICATE-----\n",
                "not valid PEM",
            ),
            // Valid PEM and base64, but the bytes are no X.509 certificate.
            (
                b"-----BEGIN CERTIFICATE-----\naGVsbG8gd29ybGQ=\n-----END CERTIFICATE-----\n",
                "not a valid X.509 certificate",
            ),
        ];
        for (pem, expected) in cases {
            let err = TransportOptions::default()
                .add_root_certificates_pem(pem)
                .unwrap_err();
            assert_eq!(err.kind(), ErrorKind::InvalidInput, "{err}");
            assert!(err.to_string().contains(expected), "{err}");
        }
    }
}
