//! Storage accounts: connection strings, endpoints and credentials.

use std::fmt;

use crate::credential::{Credential, SasToken, SharedKeyCredential};

mod endpoint;
pub mod env;

use crate::error::{Error, Result};
pub use endpoint::{EmulatorPorts, Endpoint, Service};

/// The well-known development storage account (Azurite).
pub const DEV_ACCOUNT: &str = "devstoreaccount1";
/// The well-known, public development storage key (Azurite). Not a secret.
pub const DEV_KEY: &str =
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==";

/// The environment variable [`StorageAccount::from_env`] reads.
pub const CONNECTION_STRING_ENV: &str = "AZURE_STORAGE_CONNECTION_STRING";

/// An account: its name, how to authorize, and where each service lives.
///
/// ```no_run
/// # async fn demo() -> azstore::Result<()> {
/// use azstore::StorageAccount;
/// // From AZURE_STORAGE_CONNECTION_STRING (or the other variables `from_env` reads).
/// let account = StorageAccount::from_env()?;
/// let blob = account.blob("reports", "q4.json")?;
/// let queue = account.queue("jobs")?;
/// # let _ = (blob, queue); Ok(()) }
/// ```
#[derive(Clone)]
pub struct StorageAccount {
    name: String,
    credential: Credential,
    blob: Option<Endpoint>,
    queue: Option<Endpoint>,
    table: Option<Endpoint>,
    file: Option<Endpoint>,
}

impl StorageAccount {
    /// An account with a SharedKey credential and the public-cloud endpoints
    /// (`https://{name}.{service}.core.windows.net`).
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let key = "c2VjcmV0LWtleQ=="; // in real code: from a secret store, never from source
    /// let account = StorageAccount::new("contoso", key)?;
    /// assert_eq!(account.endpoint(Service::Queue)?.url(), "https://contoso.queue.core.windows.net");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(name: &str, key_base64: &str) -> Result<StorageAccount> {
        validate_account_name(name)?;
        let cred = SharedKeyCredential::new(name, key_base64)?;
        let mut acct = StorageAccount::bare(name, Credential::SharedKey(cred));
        acct.set_default_endpoints("https", "core.windows.net")?;
        Ok(acct)
    }

    /// The local emulators on their default ports (`UseDevelopmentStorage=true`): Azurite's
    /// Blob 10000, Queue 10001 and Table 10002 and the local File service (testkit's
    /// `azstore-file-emulator`, started by `scripts/azurite`) on 10004, all on 127.0.0.1.
    ///
    /// When the emulators run elsewhere (e.g. `scripts/azurite` fell back to free ports), use
    /// [`StorageAccount::emulator`] or [`StorageAccount::from_env`] with the connection
    /// string the script exports.
    ///
    /// ```
    /// let account = azstore::StorageAccount::development();
    /// assert_eq!(account.name(), "devstoreaccount1");
    /// ```
    pub fn development() -> StorageAccount {
        StorageAccount::emulator("127.0.0.1", EmulatorPorts::default())
            .expect("the default emulator endpoints are valid")
    }

    /// The emulator account (`devstoreaccount1` and its well-known key) on `host` with the
    /// given ports, path-style endpoints (`http://HOST:PORT/devstoreaccount1`).
    ///
    /// ```
    /// use azstore::{EmulatorPorts, Service, StorageAccount};
    /// let ports = EmulatorPorts { blob: 41000, ..EmulatorPorts::default() };
    /// let a = StorageAccount::emulator("localhost", ports).unwrap();
    /// assert_eq!(a.endpoint(Service::Blob).unwrap().url(), "http://localhost:41000/devstoreaccount1");
    /// ```
    pub fn emulator(host: &str, ports: EmulatorPorts) -> Result<StorageAccount> {
        if host.is_empty() || host.contains(['/', '?', '#', '@', ' ']) {
            return Err(Error::invalid_input(
                "emulator host must be a bare host name or IP address",
            ));
        }
        let cred = SharedKeyCredential::new(DEV_ACCOUNT, DEV_KEY).expect("well-known key");
        let mut acct = StorageAccount::bare(DEV_ACCOUNT, Credential::SharedKey(cred));
        let ep = |port: u16| Endpoint::parse(&format!("http://{host}:{port}/{DEV_ACCOUNT}"));
        acct.blob = Some(ep(ports.blob)?);
        acct.queue = Some(ep(ports.queue)?);
        acct.table = Some(ep(ports.table)?);
        acct.file = ports.file.map(ep).transpose()?;
        Ok(acct)
    }

    fn bare(name: &str, credential: Credential) -> StorageAccount {
        StorageAccount {
            name: name.to_string(),
            credential,
            blob: None,
            queue: None,
            table: None,
            file: None,
        }
    }

    fn set_default_endpoints(&mut self, protocol: &str, suffix: &str) -> Result<()> {
        for svc in [Service::Blob, Service::Queue, Service::Table, Service::File] {
            let url = format!("{protocol}://{}.{}.{suffix}", self.name, svc.host_label());
            *self.slot(svc) = Some(Endpoint::parse(&url)?);
        }
        Ok(())
    }

    fn slot(&mut self, svc: Service) -> &mut Option<Endpoint> {
        match svc {
            Service::Blob => &mut self.blob,
            Service::Queue => &mut self.queue,
            Service::Table => &mut self.table,
            Service::File => &mut self.file,
        }
    }

    /// An account from the environment, with the conventions of the Azure CLI and object_store.
    /// The first that applies wins:
    ///
    /// 1. `AZURE_STORAGE_CONNECTION_STRING`. If it has no `AccountKey` or
    ///    `SharedAccessSignature`, its endpoints are used with the credential found as below.
    /// 2. An account name, `AZURE_STORAGE_ACCOUNT_NAME` or `AZURE_STORAGE_ACCOUNT`, with the
    ///    public-cloud endpoints `https://{name}.{service}.core.windows.net`, and
    /// 3. its credential, the first set of: a key (`AZURE_STORAGE_KEY`,
    ///    `AZURE_STORAGE_ACCOUNT_KEY`, `AZURE_STORAGE_ACCESS_KEY`); a SAS
    ///    (`AZURE_STORAGE_SAS_TOKEN`, `AZURE_STORAGE_SAS_KEY`); a bearer token
    ///    (`AZURE_STORAGE_TOKEN`); with the `identity` feature, Microsoft Entra ID through
    ///    `credential::entra::default_credential` (service principal, workload identity,
    ///    managed identity, Azure CLI).
    ///
    /// `AZURE_STORAGE_AUTH_MODE=login` selects Entra ID even when a key is set (as the Azure
    /// CLI's `--auth-mode login`); `=key` insists on a key. Token requests of the Entra ID
    /// credential use [`crate::http::TransportOptions::from_env`].
    ///
    /// When nothing fits, the error lists every variable it looked for (never a value).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// // AZURE_STORAGE_ACCOUNT_NAME=contoso AZURE_STORAGE_KEY=... my-app
    /// let account = azstore::StorageAccount::from_env()?;
    /// println!("using account {}", account.name());
    /// # Ok(()) }
    /// ```
    pub fn from_env() -> Result<StorageAccount> {
        env::resolve(&|k| std::env::var(k).ok())
    }

    /// Parses an Azure Storage connection string.
    ///
    /// Supported keys: `DefaultEndpointsProtocol`, `AccountName`, `AccountKey`,
    /// `EndpointSuffix`, `BlobEndpoint`, `QueueEndpoint`, `TableEndpoint`, `FileEndpoint`,
    /// `SharedAccessSignature`, `UseDevelopmentStorage=true` (with optional
    /// `DevelopmentStorageProxyUri`). Errors name the offending key, never a value.
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let a = StorageAccount::from_connection_string(
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
    /// ).unwrap();
    /// assert_eq!(a.endpoint(Service::Blob).unwrap().url(), "https://acct.blob.core.windows.net");
    /// let dev = StorageAccount::from_connection_string("UseDevelopmentStorage=true").unwrap();
    /// assert_eq!(dev.endpoint(Service::Queue).unwrap().url(), "http://127.0.0.1:10001/devstoreaccount1");
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
        let mut acct = if dev {
            let mut a = StorageAccount::development();
            if let Some(p) = proxy {
                let base = Endpoint::parse(&p).map_err(|_| {
                    Error::invalid_input(
                        "connection string key DevelopmentStorageProxyUri: not a URL",
                    )
                })?;
                let host = base
                    .origin()
                    .rsplit_once(':')
                    .map_or(base.origin(), |(h, _)| h);
                for (svc, port) in [
                    (Service::Blob, 10000),
                    (Service::Queue, 10001),
                    (Service::Table, 10002),
                    (Service::File, 10004),
                ] {
                    *a.slot(svc) = Some(Endpoint::parse(&format!("{host}:{port}/{DEV_ACCOUNT}"))?);
                }
            }
            a
        } else {
            let name = name
                .ok_or_else(|| Error::invalid_input("connection string is missing AccountName"))?;
            validate_account_name(&name).map_err(|_| {
                Error::invalid_input("connection string key AccountName: invalid account name")
            })?;
            let credential = match (key, sas) {
                (Some(k), _) => {
                    Credential::SharedKey(SharedKeyCredential::new(&name, &k).map_err(|e| {
                        Error::invalid_input(format!(
                            "connection string key AccountKey: {}",
                            e.message()
                        ))
                    })?)
                }
                (None, Some(s)) => Credential::Sas(s),
                (None, None) => Credential::Anonymous,
            };
            let mut a = StorageAccount::bare(&name, credential);
            // The emulator account lives only where its endpoints say: a service without an
            // explicit endpoint has none (never a guessed public host).
            if name != DEV_ACCOUNT || explicit.is_empty() {
                a.set_default_endpoints(
                    protocol.as_deref().unwrap_or("https"),
                    suffix.as_deref().unwrap_or("core.windows.net"),
                )?;
            }
            a
        };
        for (svc, url) in explicit {
            let ep = Endpoint::parse(&url).map_err(|e| {
                Error::invalid_input(format!(
                    "connection string key {}Endpoint: {}",
                    match svc {
                        Service::Blob => "Blob",
                        Service::Queue => "Queue",
                        Service::Table => "Table",
                        Service::File => "File",
                    },
                    e.message()
                ))
            })?;
            *acct.slot(svc) = Some(ep);
        }
        Ok(acct)
    }

    /// Replaces the credential (e.g. to use a SAS or a bearer token with the same endpoints).
    ///
    /// ```
    /// use azstore::StorageAccount;
    /// use azstore::credential::{Credential, SasToken};
    /// let account = StorageAccount::development()
    ///     .with_credential(Credential::Sas(SasToken::new("sv=2025-11-05&sp=r&sig=c2ln")?));
    /// assert!(matches!(account.credential(), Credential::Sas(_)));
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn with_credential(mut self, v: Credential) -> Self {
        self.credential = v;
        self
    }

    /// Sets or replaces one service's endpoint (parsed here; a query string is refused),
    /// e.g. a private endpoint or an emulator on another port. The other services keep
    /// theirs.
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let account = StorageAccount::development()
    ///     .with_endpoint(Service::Blob, "http://127.0.0.1:20000/devstoreaccount1")?;
    /// assert_eq!(account.endpoint(Service::Blob)?.url(), "http://127.0.0.1:20000/devstoreaccount1");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn with_endpoint(mut self, service: Service, url: &str) -> Result<StorageAccount> {
        *self.slot(service) = Some(Endpoint::parse(url)?);
        Ok(self)
    }

    /// The same account at its secondary location (read-access geo-redundant storage):
    /// every endpoint's `ACCOUNT.` host becomes `ACCOUNT-secondary.` (host style), or its
    /// `/ACCOUNT` path `/ACCOUNT-secondary` (path style, as Azurite serves it). The
    /// credential is the same. An endpoint that names the account in neither place (a custom
    /// domain) is an `InvalidInput` error: set that secondary endpoint with
    /// [`StorageAccount::with_endpoint`].
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let primary = StorageAccount::from_connection_string(
    ///     "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
    /// )?;
    /// let secondary = primary.secondary()?;
    /// assert_eq!(
    ///     secondary.endpoint(Service::Blob)?.url(),
    ///     "https://acct-secondary.blob.core.windows.net"
    /// );
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn secondary(&self) -> Result<StorageAccount> {
        let mut out = self.clone();
        let name = self.name.clone();
        for svc in [Service::Blob, Service::Queue, Service::Table, Service::File] {
            let Some(ep) = out.slot(svc).as_mut() else {
                continue;
            };
            if ep.prefix == format!("/{name}") {
                ep.prefix = format!("/{name}-secondary");
                continue;
            }
            let (scheme, host) = ep.origin.split_once("://").unwrap_or(("https", &ep.origin));
            match host.split_once('.') {
                Some((first, rest)) if ep.prefix.is_empty() && first == name => {
                    ep.origin = format!("{scheme}://{name}-secondary.{rest}");
                }
                _ => {
                    return Err(Error::invalid_input(format!(
                        "the {svc:?} endpoint {ep} does not name the account {name}: set its \
                         secondary endpoint with with_endpoint"
                    )));
                }
            }
        }
        Ok(out)
    }

    /// The account name.
    ///
    /// ```
    /// let account = azstore::StorageAccount::from_connection_string("AccountName=contoso")?;
    /// assert_eq!(account.name(), "contoso");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// How requests are authorized.
    ///
    /// ```
    /// use azstore::credential::Credential;
    /// let account = azstore::StorageAccount::development();
    /// assert!(matches!(account.credential(), Credential::SharedKey(_)));
    /// ```
    pub fn credential(&self) -> &Credential {
        &self.credential
    }

    /// The endpoint of `service`, or an `InvalidInput` error when the account has none.
    ///
    /// ```
    /// use azstore::{Service, StorageAccount};
    /// let account = StorageAccount::from_connection_string(
    ///     "AccountName=contoso;AccountKey=a2V5;BlobEndpoint=https://cdn.contoso.com",
    /// )?;
    /// assert_eq!(account.endpoint(Service::Blob)?.url(), "https://cdn.contoso.com");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn endpoint(&self, service: Service) -> Result<&Endpoint> {
        match service {
            Service::Blob => self.blob.as_ref(),
            Service::Queue => self.queue.as_ref(),
            Service::Table => self.table.as_ref(),
            Service::File => self.file.as_ref(),
        }
        .ok_or_else(|| {
            let hint = if self.name == DEV_ACCOUNT && matches!(service, Service::File) {
                " (Azurite serves Blob, Queue and Table only: for Files, point the connection \
                 string's FileEndpoint at a File service, or use a storage account)"
            } else {
                ""
            };
            Error::invalid_input(format!(
                "the account has no {service:?} endpoint (connection string key {service:?}Endpoint){hint}"
            ))
        })
    }
}

impl fmt::Debug for StorageAccount {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StorageAccount")
            .field("name", &self.name)
            .field("credential", &self.credential)
            .field("blob", &self.blob.as_ref().map(|e| e.to_string()))
            .field("queue", &self.queue.as_ref().map(|e| e.to_string()))
            .field("table", &self.table.as_ref().map(|e| e.to_string()))
            .field("file", &self.file.as_ref().map(|e| e.to_string()))
            .finish()
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

fn validate_account_name(name: &str) -> Result<()> {
    let ok = (3..=24).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if ok {
        Ok(())
    } else {
        Err(Error::invalid_input(
            "account name must be 3-24 lowercase letters or digits",
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_explicit_endpoints_and_names_bad_keys() {
        let a = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=a2V5;\
             BlobEndpoint=http://127.0.0.1:1234/devstoreaccount1/;",
        )
        .unwrap();
        let b = a.endpoint(Service::Blob).unwrap();
        assert_eq!(b.origin(), "http://127.0.0.1:1234");
        assert_eq!(b.path_prefix(), "/devstoreaccount1");
        // The emulator account never gets a guessed public host for a service it lacks.
        let e = a.endpoint(Service::File).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(e.message().contains("FileEndpoint"), "{e}");
        assert!(a.endpoint(Service::Table).is_err());
        // A real account does: the documented default host of each service.
        let r = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;\
             BlobEndpoint=http://127.0.0.1:1234/acct/;",
        )
        .unwrap();
        assert_eq!(
            r.endpoint(Service::Table).unwrap().url(),
            "http://acct.table.core.windows.net"
        );

        let e = StorageAccount::from_connection_string("AccountName=abc;AccountKey=%%%secret%%%")
            .unwrap_err();
        assert!(e.message().contains("AccountKey"), "{e}");
        assert!(!e.to_string().contains("secret"), "{e}");
        let e = StorageAccount::from_connection_string("AccountName=abc;Bogus=1").unwrap_err();
        assert!(e.message().contains("Bogus"));
        let e = StorageAccount::from_connection_string("AccountKey=a2V5").unwrap_err();
        assert!(e.message().contains("AccountName"));
        let e =
            StorageAccount::from_connection_string("AccountName=abc;mysecretvalue").unwrap_err();
        assert!(!e.to_string().contains("mysecretvalue"));
        // A colon instead of '=': the segment splits at the key's base64 padding.
        let key = "c2VjcmV0a2V5c2VjcmV0a2V5c2VjcmV0a2V5c2VjcmV0a2V5+/Q9PT09PQ==";
        for cs in [
            format!("AccountName=abc;AccountKey:{key}"),
            format!("AccountName=abc;AccountKey {key}"),
            format!("AccountName=abc;{key}"),
            format!("AccountName=abc;AccountKey:{key};BlobEndpoint=http://x"),
        ] {
            let e = StorageAccount::from_connection_string(&cs).unwrap_err();
            let shown = format!("{e} {e:?}");
            assert!(shown.contains("segment 2"), "{shown}");
            assert!(!shown.contains("c2VjcmV0a2V5"), "{shown}");
            assert!(!shown.contains("Q9PT09"), "{shown}");
        }
        let e = StorageAccount::from_connection_string("AccountName=abc;AccountKey=").unwrap_err();
        assert!(e.message().contains("key AccountKey"), "{e}");
        assert!(
            StorageAccount::from_connection_string(
                "AccountName=abc;AccountKey=a2V5;BlobSecondaryEndpoint=https://x"
            )
            .is_ok()
        );
    }

    #[test]
    fn sas_connection_string_and_debug_hides_secrets() {
        let a = StorageAccount::from_connection_string(
            "BlobEndpoint=https://acct.blob.core.windows.net;AccountName=acct;\
             SharedAccessSignature=sv=2025-11-05&ss=b&sig=TOPSECRET",
        )
        .unwrap();
        assert!(matches!(a.credential(), Credential::Sas(_)));
        let dbg = format!("{a:?}");
        assert!(!dbg.contains("TOPSECRET"), "{dbg}");
        let k = StorageAccount::new("acct", "c2VjcmV0a2V5").unwrap();
        assert!(!format!("{k:?}").contains("c2VjcmV0a2V5"));
    }

    #[test]
    fn secondary_endpoints() {
        let host = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net",
        )
        .unwrap()
        .secondary()
        .unwrap();
        assert_eq!(
            host.endpoint(Service::Queue).unwrap().url(),
            "https://acct-secondary.queue.core.windows.net"
        );
        let path = StorageAccount::development().secondary().unwrap();
        assert_eq!(
            path.endpoint(Service::Table).unwrap().url(),
            "http://127.0.0.1:10002/devstoreaccount1-secondary"
        );
        let custom = StorageAccount::from_connection_string(
            "AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://files.example.com",
        )
        .unwrap();
        assert!(custom.secondary().is_err());
    }
}
