//! `StorageAccount::from_connection_string`: every connection-string form the official SDKs
//! accept.

use super::{DEV_ACCOUNT, Endpoint, Service, StorageAccount, validate_account_name};
use crate::credential::{Credential, SasToken, SharedKeyCredential};
use crate::error::{Error, Result};

impl StorageAccount {
    /// Parses an Azure Storage connection string.
    ///
    /// Supported keys: `DefaultEndpointsProtocol`, `AccountName`, `AccountKey`,
    /// `EndpointSuffix`, `BlobEndpoint`, `QueueEndpoint`, `TableEndpoint`, `FileEndpoint`,
    /// `SharedAccessSignature`, `UseDevelopmentStorage=true` (with optional
    /// `DevelopmentStorageProxyUri`). Errors name the offending key, never a value.
    ///
    /// The forms the official SDKs accept:
    ///
    /// * `AccountName` with `AccountKey` or `SharedAccessSignature` (or neither: anonymous),
    ///   optionally `DefaultEndpointsProtocol` and `EndpointSuffix` (default `https` and
    ///   `core.windows.net`) and explicit endpoints, which win over the derived ones;
    /// * explicit endpoints (one service or several) with a `SharedAccessSignature`, or with
    ///   no credential, and no `AccountName` — the form the Azure portal's SAS page and Storage
    ///   Explorer hand out. The account name is read off the endpoints
    ///   (`contoso.blob.core.windows.net`; the first path segment of a path-style endpoint on
    ///   an IP address, `localhost`, a one-label host or an emulator port); with a custom
    ///   domain it stays empty, which a SAS does not need. With `AccountKey` the name is
    ///   required: from `AccountName` or the endpoints;
    /// * `UseDevelopmentStorage=true`, optionally with `DevelopmentStorageProxyUri` (its
    ///   scheme and host, the emulator's ports).
    ///
    /// An endpoint with user information (`https://user:pass@host`) is refused. A real
    /// account reached over `http` is accepted with a warning (`tracing`, once per process):
    /// its requests and signatures are not encrypted.
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let a = StorageAccount::from_connection_string(
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
    /// ).unwrap();
    /// assert_eq!(a.endpoint(Service::Blob).unwrap().url(), "https://acct.blob.core.windows.net");
    /// let dev = StorageAccount::from_connection_string("UseDevelopmentStorage=true").unwrap();
    /// assert_eq!(dev.endpoint(Service::Queue).unwrap().url(), "http://127.0.0.1:10001/devstoreaccount1");
    /// // The portal's SAS connection string: no AccountName, one endpoint.
    /// let sas = StorageAccount::from_connection_string(
    ///     "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=2025-11-05&ss=b&sig=c2ln",
    /// ).unwrap();
    /// assert_eq!(sas.name(), "acct");
    /// assert!(sas.endpoint(Service::Queue).is_err());
    /// ```
    pub fn from_connection_string(cs: &str) -> Result<StorageAccount> {
        let mut protocol = None;
        let mut name = None;
        let mut key = None;
        let mut suffix = None;
        let mut sas = None;
        let mut dev = false;
        let mut proxy = None;
        let mut explicit: Vec<(Service, String)> = Vec::new();
        for (i, seg) in cs.split(';').enumerate() {
            let seg = seg.trim();
            if seg.is_empty() {
                continue;
            }
            let (k, v) = seg.split_once('=').ok_or_else(|| {
                Error::invalid_input(format!(
                    "connection string segment {} has no '=' (expected Key=Value)",
                    i + 1
                ))
            })?;
            let k = k.trim();
            let v = v.trim();
            // A key is echoed only when it is one we know or looks like a key name: a mistyped
            // segment such as `AccountKey:<key>==` splits at the key's own `=` padding, and its
            // "key" is then mostly the secret.
            let known = is_known_key(k);
            let named = if known || looks_like_key_name(k) {
                format!("key {k}")
            } else {
                format!("segment {}", i + 1)
            };
            let bad =
                |what: &str| Error::invalid_input(format!("connection string {named}: {what}"));
            if !known {
                return Err(bad(
                    "unknown key (expected Key=Value with a key such as AccountName, \
                     AccountKey or BlobEndpoint)",
                ));
            }
            if v.is_empty() {
                return Err(bad("empty value"));
            }
            match k.to_ascii_lowercase().as_str() {
                "defaultendpointsprotocol" => {
                    let p = v.to_ascii_lowercase();
                    if p != "http" && p != "https" {
                        return Err(bad("must be http or https"));
                    }
                    protocol = Some(p);
                }
                "accountname" => name = Some(v.to_string()),
                "accountkey" => key = Some(v.to_string()),
                "endpointsuffix" => suffix = Some(v.to_string()),
                "sharedaccesssignature" => {
                    sas = Some(SasToken::new(v).map_err(|_| bad("not a SAS token with sig="))?)
                }
                "usedevelopmentstorage" => {
                    if !v.eq_ignore_ascii_case("true") {
                        return Err(bad("only `true` is supported"));
                    }
                    dev = true;
                }
                "developmentstorageproxyuri" => proxy = Some(v.to_string()),
                "blobendpoint" => explicit.push((Service::Blob, v.to_string())),
                "queueendpoint" => explicit.push((Service::Queue, v.to_string())),
                "tableendpoint" => explicit.push((Service::Table, v.to_string())),
                "fileendpoint" => explicit.push((Service::File, v.to_string())),
                _ => {} // the *SecondaryEndpoint keys (see `is_known_key`)
            }
        }
        let explicit_name = name.is_some();
        let mut acct = if dev {
            let mut a = StorageAccount::development();
            if let Some(p) = proxy {
                // As the official SDKs: the proxy's scheme and host, the emulator's ports and
                // path-style account.
                let base = Endpoint::parse(&p).map_err(|_| {
                    Error::invalid_input(
                        "connection string key DevelopmentStorageProxyUri: not an http(s) URL",
                    )
                })?;
                let (scheme, host) = base.scheme_and_host();
                for (svc, port) in [
                    (Service::Blob, 10000),
                    (Service::Queue, 10001),
                    (Service::Table, 10002),
                    (Service::File, 10004),
                ] {
                    *a.slot(svc) = Some(Endpoint::parse(&format!(
                        "{scheme}://{host}:{port}/{DEV_ACCOUNT}"
                    ))?);
                }
            }
            a
        } else {
            // Every explicit endpoint is parsed first: the account name may come from them.
            let mut endpoints = Vec::with_capacity(explicit.len());
            for (svc, url) in explicit.drain(..) {
                endpoints.push((svc, parse_endpoint(svc, &url)?));
            }
            let name = match name {
                Some(n) => {
                    validate_account_name(&n).map_err(|_| {
                        Error::invalid_input(
                            "connection string key AccountName: invalid account name",
                        )
                    })?;
                    Some(n)
                }
                None => account_from_endpoints(&endpoints)?,
            };
            let credential = match (key, sas) {
                (Some(k), _) => {
                    let Some(name) = name.as_deref() else {
                        return Err(Error::invalid_input(
                            "connection string has an AccountKey but no AccountName, and its \
                             endpoints do not name the account: add AccountName=<account>",
                        ));
                    };
                    Credential::SharedKey(SharedKeyCredential::new(name, &k).map_err(|e| {
                        Error::invalid_input(format!(
                            "connection string key AccountKey: {}",
                            e.message()
                        ))
                    })?)
                }
                (None, Some(s)) => Credential::Sas(s),
                (None, None) => Credential::Anonymous,
            };
            let Some(name) = name else {
                // A SAS (or no credential) with explicit endpoints needs no account name.
                if endpoints.is_empty() {
                    return Err(Error::invalid_input(
                        "connection string names no account: it needs AccountName (with \
                         AccountKey or SharedAccessSignature) or at least one of BlobEndpoint, \
                         QueueEndpoint, TableEndpoint, FileEndpoint",
                    ));
                }
                let mut a = StorageAccount::bare("", credential);
                a.name_explicit = false;
                for (svc, ep) in endpoints {
                    *a.slot(svc) = Some(ep);
                }
                a.warn_if_cleartext();
                return Ok(a);
            };
            let mut a = StorageAccount::bare(&name, credential);
            a.name_explicit = explicit_name;
            // The emulator account lives only where its endpoints say, and an account named
            // only by its endpoints gets no guessed public host for a service it lacks.
            if (name != DEV_ACCOUNT && explicit_name) || endpoints.is_empty() {
                a.set_default_endpoints(
                    protocol.as_deref().unwrap_or("https"),
                    suffix.as_deref().unwrap_or("core.windows.net"),
                )?;
            }
            for (svc, ep) in endpoints {
                *a.slot(svc) = Some(ep);
            }
            a
        };
        for (svc, url) in explicit {
            // Explicit endpoints next to UseDevelopmentStorage=true.
            *acct.slot(svc) = Some(parse_endpoint(svc, &url)?);
        }
        acct.warn_if_cleartext();
        Ok(acct)
    }
}

/// The connection-string keys azstore reads (case-insensitive).
fn is_known_key(k: &str) -> bool {
    const KEYS: [&str; 11] = [
        "defaultendpointsprotocol",
        "accountname",
        "accountkey",
        "endpointsuffix",
        "sharedaccesssignature",
        "usedevelopmentstorage",
        "developmentstorageproxyuri",
        "blobendpoint",
        "queueendpoint",
        "tableendpoint",
        "fileendpoint",
    ];
    let k = k.to_ascii_lowercase();
    KEYS.contains(&k.as_str()) || (k.ends_with("secondaryendpoint") && looks_like_key_name(&k))
}

/// Whether an unknown key may be echoed in an error: a short run of ASCII letters, as key
/// names are — never something that could be part of a base64 key or a SAS signature.
fn looks_like_key_name(k: &str) -> bool {
    (1..=32).contains(&k.len()) && k.bytes().all(|b| b.is_ascii_alphabetic())
}

/// The connection-string key of a service's endpoint.
fn endpoint_key(svc: Service) -> &'static str {
    match svc {
        Service::Blob => "BlobEndpoint",
        Service::Queue => "QueueEndpoint",
        Service::Table => "TableEndpoint",
        Service::File => "FileEndpoint",
    }
}

/// The endpoint `url` given for `svc`, its error naming the connection-string key.
fn parse_endpoint(svc: Service, url: &str) -> Result<Endpoint> {
    Endpoint::parse(url).map_err(|e| {
        Error::invalid_input(format!(
            "connection string key {}: {}",
            endpoint_key(svc),
            e.message()
        ))
    })
}

/// The account the explicit endpoints name, as the official SDKs read it: the first label of
/// a host-style endpoint (`contoso.blob.core.windows.net`), or the first path segment of a
/// path-style one (an IP address, `localhost`, a single-label host such as a container's
/// `azurite`, or an emulator port). `None` when no endpoint names one (a custom domain); an
/// error when two endpoints name different accounts.
fn account_from_endpoints(endpoints: &[(Service, Endpoint)]) -> Result<Option<String>> {
    let mut found: Option<(Service, String)> = None;
    for (svc, ep) in endpoints {
        let Some(name) = ep.account_name() else {
            continue;
        };
        match &found {
            Some((first, n)) if *n != name => {
                return Err(Error::invalid_input(format!(
                    "connection string keys {} and {} name different accounts: add \
                     AccountName=<account>",
                    endpoint_key(*first),
                    endpoint_key(*svc)
                )));
            }
            Some(_) => {}
            None => found = Some((*svc, name)),
        }
    }
    Ok(found.map(|(_, n)| n))
}
