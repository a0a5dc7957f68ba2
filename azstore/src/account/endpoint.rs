//! Where a service lives: [`Service`], [`Endpoint`] (origin and path prefix) and the
//! emulator's [`EmulatorPorts`].

use std::fmt;

use crate::error::{Error, Result};

/// One of the four storage services.
///
/// ```
/// use azstore::{Service, StorageAccount};
/// let account = StorageAccount::development();
/// assert_eq!(account.endpoint(Service::Table)?.url(), "http://127.0.0.1:10002/devstoreaccount1");
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Service {
    /// Blob storage (containers and blobs).
    Blob,
    /// Queue storage.
    Queue,
    /// Table storage.
    Table,
    /// Azure Files (shares, directories, files).
    File,
}

impl Service {
    pub(crate) fn host_label(self) -> &'static str {
        match self {
            Service::Blob => "blob",
            Service::Queue => "queue",
            Service::Table => "table",
            Service::File => "file",
        }
    }
}

/// Ports of the local emulators, for [`StorageAccount::emulator`](crate::StorageAccount::emulator).
///
/// ```
/// use azstore::EmulatorPorts;
/// // Azurite started with other ports, no File service.
/// let ports = EmulatorPorts { blob: 20000, queue: 20001, table: 20002, file: None };
/// # let _ = ports;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EmulatorPorts {
    /// Azurite's Blob service (default 10000).
    pub blob: u16,
    /// Azurite's Queue service (default 10001).
    pub queue: u16,
    /// Azurite's Table service (default 10002).
    pub table: u16,
    /// The local File service (default 10004); `None`: the account has no File endpoint.
    pub file: Option<u16>,
}

impl Default for EmulatorPorts {
    fn default() -> Self {
        EmulatorPorts {
            blob: 10000,
            queue: 10001,
            table: 10002,
            file: Some(10004),
        }
    }
}

/// A service endpoint: `https://acct.blob.core.windows.net` (host style) or
/// `http://127.0.0.1:10000/devstoreaccount1` (path style, as Azurite uses).
///
/// ```
/// use azstore::Endpoint;
/// let e = Endpoint::parse("http://127.0.0.1:10000/devstoreaccount1/")?;
/// assert_eq!(e.origin(), "http://127.0.0.1:10000");
/// assert_eq!(e.path_prefix(), "/devstoreaccount1");
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `scheme://host[:port]`
    pub(crate) origin: String,
    /// Path prefix without trailing slash ("" or "/devstoreaccount1").
    pub(crate) prefix: String,
}

impl Endpoint {
    /// Parses an endpoint URL. A query string is not allowed (put a SAS in the credential).
    ///
    /// ```
    /// use azstore::Endpoint;
    /// assert!(Endpoint::parse("https://acct.blob.core.windows.net").is_ok());
    /// assert!(Endpoint::parse("https://acct.blob.core.windows.net/?sv=2025-11-05").is_err());
    /// ```
    pub fn parse(url: &str) -> Result<Endpoint> {
        let url = url.trim();
        let (scheme, rest) = url
            .split_once("://")
            .ok_or_else(|| Error::invalid_input("endpoint must start with http:// or https://"))?;
        if !scheme.eq_ignore_ascii_case("http") && !scheme.eq_ignore_ascii_case("https") {
            return Err(Error::invalid_input(
                "endpoint must start with http:// or https://",
            ));
        }
        if rest.contains('?') || rest.contains('#') {
            return Err(Error::invalid_input(
                "endpoint must not contain a query or fragment",
            ));
        }
        let (host, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, ""),
        };
        if host.is_empty() {
            return Err(Error::invalid_input("endpoint has no host"));
        }
        // `user:password@host`: credentials in a URL would be sent to the host and shown
        // wherever the endpoint is (Debug, logs). The error does not repeat them.
        if host.contains('@') {
            return Err(Error::invalid_input(
                "endpoint must not contain user information (`user:password@`): give the \
                 credential as AccountKey, SharedAccessSignature or a token instead",
            ));
        }
        Ok(Endpoint {
            origin: format!("{}://{}", scheme.to_ascii_lowercase(), host),
            prefix: path.trim_end_matches('/').to_string(),
        })
    }

    /// The scheme (lowercase) and the host without its port (an IPv6 address keeps its
    /// brackets).
    pub(crate) fn scheme_and_host(&self) -> (&str, &str) {
        let (scheme, authority) = self
            .origin
            .split_once("://")
            .unwrap_or(("https", &self.origin));
        (scheme, host_of(authority))
    }

    /// The port, when the endpoint names one.
    fn port(&self) -> Option<u16> {
        let authority = self.origin.split_once("://").map_or("", |(_, a)| a);
        let after_host = &authority[host_of(authority).len()..];
        after_host.strip_prefix(':')?.parse().ok()
    }

    /// Whether the host is a loopback address or `localhost`.
    pub(crate) fn is_loopback(&self) -> bool {
        let host = self.scheme_and_host().1;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        host.eq_ignore_ascii_case("localhost")
            || host.to_ascii_lowercase().ends_with(".localhost")
            || bare
                .parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
    }

    /// Whether the account is the first path segment (path style), as the official SDKs
    /// decide: an IP address, `localhost`, a host name of one label (a container's
    /// `azurite`) or a port the storage emulators use.
    fn is_path_style(&self) -> bool {
        let host = self.scheme_and_host().1;
        let bare = host.trim_start_matches('[').trim_end_matches(']');
        bare.parse::<std::net::IpAddr>().is_ok()
            || !host.contains('.')
            || self.port().is_some_and(|p| {
                (10000..=10009).contains(&p)
                    || (11000..=11009).contains(&p)
                    || (11100..=11109).contains(&p)
            })
    }

    /// The account this endpoint names, if it names one: the first path segment of a
    /// path-style endpoint, or the first label of a host-style one whose following labels
    /// include the service (`contoso.blob.core.windows.net`,
    /// `contoso.z12.blob.storage.azure.net`). `None` for a custom domain.
    pub(crate) fn account_name(&self) -> Option<String> {
        let valid = |n: &str| {
            (3..=24).contains(&n.len())
                && n.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        };
        let name = if self.is_path_style() {
            self.prefix
                .trim_start_matches('/')
                .split('/')
                .next()?
                .to_string()
        } else {
            let host = self.scheme_and_host().1.to_ascii_lowercase();
            let mut labels = host.split('.');
            let first = labels.next()?.to_string();
            let services = ["blob", "queue", "table", "file", "dfs"];
            if !labels.any(|l| services.contains(&l)) {
                return None;
            }
            first
        };
        valid(&name).then_some(name)
    }

    /// `scheme://host[:port]`
    ///
    /// ```
    /// let e = azstore::Endpoint::parse("https://acct.blob.core.windows.net")?;
    /// assert_eq!(e.origin(), "https://acct.blob.core.windows.net");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// The path prefix: empty for host-style endpoints, `/account` for path-style ones.
    ///
    /// ```
    /// let e = azstore::Endpoint::parse("https://acct.blob.core.windows.net")?;
    /// assert_eq!(e.path_prefix(), "");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn path_prefix(&self) -> &str {
        &self.prefix
    }

    /// The endpoint as a URL without trailing slash.
    ///
    /// ```
    /// let e = azstore::Endpoint::parse("http://127.0.0.1:10000/devstoreaccount1/")?;
    /// assert_eq!(e.url(), "http://127.0.0.1:10000/devstoreaccount1");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn url(&self) -> String {
        format!("{}{}", self.origin, self.prefix)
    }
}

/// The host of `host[:port]` (`[v6]` keeps its brackets).
fn host_of(authority: &str) -> &str {
    if authority.starts_with('[') {
        return authority.find(']').map_or(authority, |i| &authority[..=i]);
    }
    authority.rsplit_once(':').map_or(authority, |(h, _)| h)
}

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin, self.prefix)
    }
}
