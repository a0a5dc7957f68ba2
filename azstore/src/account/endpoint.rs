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
        Ok(Endpoint {
            origin: format!("{}://{}", scheme.to_ascii_lowercase(), host),
            prefix: path.trim_end_matches('/').to_string(),
        })
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

impl fmt::Display for Endpoint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.origin, self.prefix)
    }
}
