//! Storage accounts: connection strings, endpoints and credentials.

use std::fmt;

use crate::credential::{Credential, SharedKeyCredential};

mod connection_string;
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
    /// Whether the name was given (`AccountName`, a constructor) rather than read off an
    /// endpoint or absent: `from_env` may then take it from `AZURE_STORAGE_ACCOUNT`.
    name_explicit: bool,
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
            name_explicit: true,
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

    /// As [`StorageAccount::from_env`], reading each variable through `lookup` instead of the
    /// process environment: to take the connection string from a file or a secret store while
    /// the rest comes from the environment, or to resolve a fixed set of values in a test.
    ///
    /// ```
    /// use azstore::StorageAccount;
    /// let from_file = "UseDevelopmentStorage=true".to_string(); // e.g. read from a file
    /// let account = StorageAccount::from_env_with(|var| match var {
    ///     "AZURE_STORAGE_CONNECTION_STRING" => Some(from_file.clone()),
    ///     other => std::env::var(other).ok(),
    /// })?;
    /// assert_eq!(account.name(), "devstoreaccount1");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn from_env_with(lookup: impl Fn(&str) -> Option<String>) -> Result<StorageAccount> {
        env::resolve(&lookup)
    }

    /// Warns (once per process) when a real account is reached over plain `http://`: its
    /// requests, and any SAS or key signature on them, travel unencrypted. The emulator
    /// account and loopback hosts are the usual, local exceptions.
    fn warn_if_cleartext(&self) {
        static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if let Some(ep) = self.cleartext_endpoint() {
            warn_cleartext_once(&WARNED, ep);
        }
    }

    /// The first `http://` endpoint of a real account on a host that is not loopback.
    fn cleartext_endpoint(&self) -> Option<&Endpoint> {
        if self.name == DEV_ACCOUNT {
            return None;
        }
        [&self.blob, &self.queue, &self.table, &self.file]
            .into_iter()
            .flatten()
            .find(|ep| ep.origin.starts_with("http://") && !ep.is_loopback())
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
        self.warn_if_cleartext();
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

    /// The account name: `AccountName`, or the account the endpoints name
    /// (`contoso.blob.core.windows.net`, or the first path segment of a path-style endpoint
    /// such as Azurite's). Empty when neither names one: a connection string with a SAS and
    /// endpoints on a custom domain needs no name.
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

/// The cleartext warning, at most once per `latch`.
fn warn_cleartext_once(latch: &std::sync::atomic::AtomicBool, ep: &Endpoint) {
    if !latch.swap(true, std::sync::atomic::Ordering::Relaxed) {
        tracing::warn!(
            endpoint = %ep,
            "a storage account is reached over plain http: its requests, and the signatures \
             or SAS on them, travel unencrypted; use https (DefaultEndpointsProtocol=https)"
        );
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
    #[test]
    fn every_sdk_form_without_account_name_reads_the_endpoints() {
        const SAS: &str = "sv=2025-11-05&ss=bqtf&srt=sco&sp=rl&sig=TOPSECRET";
        // Host style: the account is the first label.
        let a = StorageAccount::from_connection_string(&format!(
            "BlobEndpoint=https://contoso.blob.core.windows.net/;SharedAccessSignature={SAS}"
        ))
        .unwrap();
        assert_eq!(a.name(), "contoso");
        assert!(matches!(a.credential(), Credential::Sas(_)));
        assert_eq!(
            a.endpoint(Service::Blob).unwrap().url(),
            "https://contoso.blob.core.windows.net"
        );
        // Only the services the string names: never a guessed host.
        for svc in [Service::Queue, Service::Table, Service::File] {
            assert!(a.endpoint(svc).is_err(), "{svc:?}");
        }
        // Each service alone, host style and path style (an IP, localhost, a container name,
        // an emulator port on a dotted host).
        for (key, svc, url, name) in [
            (
                "QueueEndpoint",
                Service::Queue,
                "https://contoso.queue.core.windows.net",
                "contoso",
            ),
            (
                "TableEndpoint",
                Service::Table,
                "https://contoso.table.core.windows.net",
                "contoso",
            ),
            (
                "FileEndpoint",
                Service::File,
                "https://contoso.file.core.windows.net",
                "contoso",
            ),
            (
                "BlobEndpoint",
                Service::Blob,
                "https://contoso.z42.blob.storage.azure.net",
                "contoso",
            ),
            (
                "BlobEndpoint",
                Service::Blob,
                "http://127.0.0.1:10000/devstoreaccount1",
                DEV_ACCOUNT,
            ),
            (
                "QueueEndpoint",
                Service::Queue,
                "http://[::1]:41001/acct2",
                "acct2",
            ),
            (
                "TableEndpoint",
                Service::Table,
                "http://localhost:41002/acct3",
                "acct3",
            ),
            (
                "BlobEndpoint",
                Service::Blob,
                "http://azurite:10000/devstoreaccount1",
                DEV_ACCOUNT,
            ),
            (
                "BlobEndpoint",
                Service::Blob,
                "http://emu.internal:10000/acct4",
                "acct4",
            ),
        ] {
            let a = StorageAccount::from_connection_string(&format!(
                "{key}={url};SharedAccessSignature={SAS}"
            ))
            .unwrap();
            assert_eq!(a.name(), name, "{url}");
            assert_eq!(a.endpoint(svc).unwrap().url(), url);
        }
        // A custom domain names no account: fine for a SAS, not for a key.
        let a = StorageAccount::from_connection_string(&format!(
            "BlobEndpoint=https://files.example.com;SharedAccessSignature={SAS}"
        ))
        .unwrap();
        assert_eq!(a.name(), "");
        let e = StorageAccount::from_connection_string(
            "BlobEndpoint=https://files.example.com;AccountKey=a2V5",
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::InvalidInput);
        assert!(e.message().contains("AccountName"), "{e}");
        // A key with endpoints that name the account signs as that account.
        let a = StorageAccount::from_connection_string(
            "BlobEndpoint=http://127.0.0.1:1/devstoreaccount1;AccountKey=a2V5",
        )
        .unwrap();
        assert_eq!(a.name(), DEV_ACCOUNT);
        assert!(matches!(a.credential(), Credential::SharedKey(_)));
        // Endpoints only, no credential: anonymous (public containers).
        let a = StorageAccount::from_connection_string(
            "BlobEndpoint=https://contoso.blob.core.windows.net",
        )
        .unwrap();
        assert!(matches!(a.credential(), Credential::Anonymous));
        // Two endpoints naming different accounts.
        let e = StorageAccount::from_connection_string(&format!(
            "BlobEndpoint=https://one.blob.core.windows.net;QueueEndpoint=https://two.queue.core.windows.net;SharedAccessSignature={SAS}"
        ))
        .unwrap_err();
        assert!(e.message().contains("QueueEndpoint"), "{e}");
        // Nothing that names an account or a place.
        let e = StorageAccount::from_connection_string(&format!("SharedAccessSignature={SAS}"))
            .unwrap_err();
        assert!(e.message().contains("BlobEndpoint"), "{e}");
        assert!(!format!("{e} {e:?}").contains("TOPSECRET"));
    }

    #[test]
    fn endpoint_suffix_protocol_and_sas_with_a_name() {
        let a = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.chinacloudapi.cn",
        )
        .unwrap();
        assert_eq!(
            a.endpoint(Service::Table).unwrap().url(),
            "https://acct.table.core.chinacloudapi.cn"
        );
        let a = StorageAccount::from_connection_string(
            "AccountName=acct;SharedAccessSignature=sv=2025-11-05&sig=c2ln;EndpointSuffix=core.usgovcloudapi.net",
        )
        .unwrap();
        assert!(matches!(a.credential(), Credential::Sas(_)));
        assert_eq!(
            a.endpoint(Service::File).unwrap().url(),
            "https://acct.file.core.usgovcloudapi.net"
        );
    }

    #[test]
    fn development_storage_proxy_uri_keeps_scheme_and_host_and_uses_the_emulator_ports() {
        for (proxy, origin) in [
            ("http://ipv4.fiddler", "http://ipv4.fiddler"),
            ("http://127.0.0.1:8888/", "http://127.0.0.1"),
            ("http://[::1]", "http://[::1]"),
        ] {
            let a = StorageAccount::from_connection_string(&format!(
                "UseDevelopmentStorage=true;DevelopmentStorageProxyUri={proxy}"
            ))
            .unwrap();
            assert_eq!(a.name(), DEV_ACCOUNT);
            assert_eq!(
                a.endpoint(Service::Blob).unwrap().url(),
                format!("{origin}:10000/{DEV_ACCOUNT}")
            );
            assert_eq!(
                a.endpoint(Service::Table).unwrap().url(),
                format!("{origin}:10002/{DEV_ACCOUNT}")
            );
        }
        let e = StorageAccount::from_connection_string(
            "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=ftp://x",
        )
        .unwrap_err();
        assert!(e.message().contains("DevelopmentStorageProxyUri"), "{e}");
    }

    #[test]
    fn userinfo_in_an_endpoint_is_refused_and_never_shown() {
        for cs in [
            "AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://user:hunter2@acct.blob.core.windows.net",
            "BlobEndpoint=https://hunter2@acct.blob.core.windows.net;SharedAccessSignature=sv=1&sig=c2ln",
            "UseDevelopmentStorage=true;DevelopmentStorageProxyUri=http://u:hunter2@proxy",
        ] {
            let e = StorageAccount::from_connection_string(cs).unwrap_err();
            assert_eq!(e.kind(), crate::ErrorKind::InvalidInput, "{cs}");
            assert!(!format!("{e} {e:?}").contains("hunter2"), "{e:?}");
        }
        let e = Endpoint::parse("https://user:hunter2@acct.blob.core.windows.net").unwrap_err();
        assert!(e.message().contains("user information"), "{e}");
        assert!(!format!("{e:?}").contains("hunter2"));
        assert!(
            StorageAccount::development()
                .with_endpoint(Service::Blob, "http://a:hunter2@127.0.0.1:1/x")
                .is_err()
        );
    }

    #[test]
    fn cleartext_to_a_real_account_is_found_and_warned_about_once() {
        use std::sync::Arc;
        use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
        use tracing_subscriber::layer::SubscriberExt;

        let real = StorageAccount::from_connection_string(
            "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5",
        )
        .unwrap();
        assert_eq!(
            real.cleartext_endpoint().unwrap().url(),
            "http://acct.blob.core.windows.net"
        );
        let quiet = [
            "UseDevelopmentStorage=true",
            "AccountName=acct;AccountKey=a2V5;BlobEndpoint=https://acct.blob.core.windows.net",
            "AccountName=other;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:10000/other;QueueEndpoint=http://localhost:1/other;TableEndpoint=http://[::1]:2/other;FileEndpoint=http://127.0.0.2:3/other",
            "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5",
        ];
        for cs in quiet {
            let a = StorageAccount::from_connection_string(cs).unwrap();
            assert!(a.cleartext_endpoint().is_none(), "{cs}");
        }

        struct Warnings(Arc<AtomicUsize>);
        impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Warnings {
            fn on_event(
                &self,
                e: &tracing::Event<'_>,
                _: tracing_subscriber::layer::Context<'_, S>,
            ) {
                if *e.metadata().level() == tracing::Level::WARN {
                    self.0.fetch_add(1, Ordering::SeqCst);
                }
            }
        }
        let n = Arc::new(AtomicUsize::new(0));
        let latch = AtomicBool::new(false);
        let subscriber = tracing_subscriber::registry().with(Warnings(n.clone()));
        tracing::subscriber::with_default(subscriber, || {
            let ep = real.cleartext_endpoint().unwrap();
            for _ in 0..3 {
                warn_cleartext_once(&latch, ep);
            }
        });
        assert_eq!(n.load(Ordering::SeqCst), 1);
    }
}
