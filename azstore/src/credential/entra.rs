//! Microsoft Entra ID (feature `identity`): any `azure_core` [`TokenCredential`] from
//! Microsoft's `azure_identity` crate as an azstore bearer credential, behind the
//! [`TokenCache`](super::TokenCache) (refresh ahead of expiry, single flight, bounded time).
//!
//! ```no_run
//! # fn demo() -> azstore::Result<()> {
//! use azstore::{credential::Credential, StorageAccount};
//! use azstore::credential::entra;
//! use azstore::http::TransportOptions;
//!
//! // On an Azure VM, AKS, App Service, or with `az login` on a laptop:
//! let credential = entra::default_credential(&TransportOptions::default())?;
//! let account = StorageAccount::from_connection_string("AccountName=myaccount")?
//!     .with_credential(Credential::entra(credential));
//! # let _ = account; Ok(()) }
//! ```
//!
//! Token requests of the credentials built here ([`default_credential`], [`http_transport`])
//! go through azstore's own HTTP client, so the extra root certificates and the proxy of
//! your [`TransportOptions`] apply to them too. (azstore builds `azure_core` without its own
//! HTTP client: a credential you build yourself with default options needs
//! `azure_core`'s `reqwest` feature, or [`http_transport`] in its `client_options`.)

/// The most bytes of a token endpoint's answer read into memory.
const TOKEN_RESPONSE_LIMIT: u64 = 1 << 20;

use std::sync::Arc;
use std::time::Duration;

use azure_core::credentials::TokenCredential;
use azure_core::http::{
    AsyncRawResponse, ClientOptions as CoreClientOptions, HttpClient, Method, Request, StatusCode,
    Transport,
    headers::{HeaderName, HeaderValue, Headers},
    request::Body,
};

use super::{AccessToken, Credential, TokenProvider};
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::transport::TransportOptions;

/// Microsoft's crates, re-exported so that you build credentials with the versions azstore uses.
pub use {azure_core, azure_identity};

/// The scope of Azure Storage's data plane (Blob, Queue, Table, File).
pub const STORAGE_SCOPE: &str = "https://storage.azure.com/.default";

impl Credential {
    /// A bearer credential from an Entra ID [`TokenCredential`] (any `azure_identity`
    /// credential), asking for [`STORAGE_SCOPE`], behind a [`TokenCache`](super::TokenCache).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// use azstore::http::TransportOptions;
    /// use azstore::credential::entra;
    /// let transport = TransportOptions::default();
    /// let mi = azure_identity::ManagedIdentityCredential::new(Some(
    ///     azure_identity::ManagedIdentityCredentialOptions {
    ///         client_options: entra::client_options(&transport)?,
    ///         ..Default::default()
    ///     },
    /// ))
    /// .expect("managed identity");
    /// let account = azstore::StorageAccount::from_connection_string(
    ///     "AccountName=myaccount;DefaultEndpointsProtocol=https",
    /// )?
    /// .with_credential(azstore::credential::Credential::entra(mi));
    /// # let _ = account; Ok(()) }
    /// ```
    pub fn entra(credential: Arc<dyn TokenCredential>) -> Credential {
        Credential::bearer(EntraTokens(credential))
    }
}

/// A `TokenCredential` as an azstore [`TokenProvider`] for [`STORAGE_SCOPE`]: to put behind a
/// [`TokenCache`](super::TokenCache) with options of your own (e.g. another fetch timeout);
/// [`Credential::entra`] does it with the defaults.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use std::time::Duration;
/// use azstore::credential::entra::{self, EntraTokens};
/// use azstore::credential::{Credential, TokenCache};
/// use azstore::http::TransportOptions;
/// let source = EntraTokens(entra::default_credential(&TransportOptions::default())?);
/// let credential = Credential::bearer_cached(
///     TokenCache::new(source).with_fetch_timeout(Duration::from_secs(10)),
/// );
/// # let _ = credential; Ok(()) }
/// ```
pub struct EntraTokens(pub Arc<dyn TokenCredential>);

impl std::fmt::Debug for EntraTokens {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("EntraTokens").field(&self.0).finish()
    }
}

impl TokenProvider for EntraTokens {
    fn token(
        &self,
    ) -> std::pin::Pin<Box<dyn std::future::Future<Output = Result<AccessToken>> + Send + '_>> {
        Box::pin(async move {
            let t = self
                .0
                .get_token(&[STORAGE_SCOPE], None)
                .await
                .map_err(|e| {
                    Error::new(ErrorKind::Auth, format!("Microsoft Entra ID: {e}"))
                        .with_sent(RequestSent::No)
                })?;
            Ok(AccessToken::new(t.token.secret(), t.expires_on))
        })
    }
}

/// `azure_core` client options whose transport is azstore's HTTP client built from
/// `transport` (roots, proxy, connect timeout), for constructing `azure_identity` credentials.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::credential::entra;
/// use azstore::http::TransportOptions;
/// use entra::azure_identity::{ManagedIdentityCredential, ManagedIdentityCredentialOptions};
/// // A managed identity whose token requests use the roots and proxy of `TransportOptions`.
/// let mi = ManagedIdentityCredential::new(Some(ManagedIdentityCredentialOptions {
///     client_options: entra::client_options(&TransportOptions::default())?,
///     ..Default::default()
/// }))
/// .expect("managed identity");
/// # let _ = mi; Ok(()) }
/// ```
pub fn client_options(transport: &TransportOptions) -> Result<CoreClientOptions> {
    Ok(CoreClientOptions {
        transport: Some(http_transport(transport)?),
        ..Default::default()
    })
}

/// An `azure_core` [`Transport`] over azstore's HTTP client built from `transport`.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::credential::entra;
/// use azstore::http::TransportOptions;
/// let transport = entra::http_transport(&TransportOptions::default())?;
/// let options = entra::azure_core::http::ClientOptions {
///     transport: Some(transport),
///     ..Default::default()
/// };
/// # let _ = options; Ok(()) }
/// ```
pub fn http_transport(transport: &TransportOptions) -> Result<Transport> {
    let client = transport.build(Duration::from_secs(4))?;
    Ok(Transport::new(Arc::new(ReqwestClient(client))))
}

/// The standard Entra ID credential chain, as the Azure SDKs' `DefaultAzureCredential` minus
/// interactive logins. It picks by environment:
///
/// 1. `AZURE_TENANT_ID` + `AZURE_CLIENT_ID` + `AZURE_CLIENT_SECRET`: a service principal
///    (`ClientSecretCredential`; `AZURE_AUTHORITY_HOST` selects another cloud).
/// 2. `AZURE_FEDERATED_TOKEN_FILE`: workload identity (AKS), with `AZURE_TENANT_ID` and
///    `AZURE_CLIENT_ID`.
/// 3. Otherwise: managed identity (App Service / Functions / Container Apps through
///    `IDENTITY_ENDPOINT`, else the VM / AKS instance metadata service; a user-assigned identity
///    by `AZURE_CLIENT_ID`), and if that gives no token, the developer tools (`az login`,
///    `azd auth login`). The first that answers is kept.
///
/// Token requests use azstore's HTTP client built from `transport`.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::StorageAccount;
/// use azstore::credential::{Credential, entra};
/// use azstore::http::TransportOptions;
/// let credential = entra::default_credential(&TransportOptions::default())?;
/// let account = StorageAccount::from_connection_string("AccountName=myaccount")?
///     .with_credential(Credential::entra(credential));
/// # let _ = account; Ok(()) }
/// ```
pub fn default_credential(transport: &TransportOptions) -> Result<Arc<dyn TokenCredential>> {
    let env = |k: &str| std::env::var(k).ok().filter(|v| !v.trim().is_empty());
    let core = || client_options(transport);
    let cfg_err = |what: &str, e: azure_core::Error| {
        Error::invalid_input(format!("Microsoft Entra ID ({what}): {e}"))
    };
    if let (Some(tenant), Some(client), Some(secret)) = (
        env("AZURE_TENANT_ID"),
        env("AZURE_CLIENT_ID"),
        env("AZURE_CLIENT_SECRET"),
    ) {
        let c = azure_identity::ClientSecretCredential::new(
            &tenant,
            client,
            secret.into(),
            Some(azure_identity::ClientSecretCredentialOptions {
                client_options: core()?,
            }),
        )
        .map_err(|e| cfg_err("AZURE_CLIENT_SECRET", e))?;
        return Ok(c);
    }
    if env("AZURE_FEDERATED_TOKEN_FILE").is_some() {
        let c = azure_identity::WorkloadIdentityCredential::new(Some(
            azure_identity::WorkloadIdentityCredentialOptions {
                credential_options: azure_identity::ClientAssertionCredentialOptions {
                    client_options: core()?,
                },
                ..Default::default()
            },
        ))
        .map_err(|e| cfg_err("AZURE_FEDERATED_TOKEN_FILE", e))?;
        return Ok(c);
    }
    let managed = azure_identity::ManagedIdentityCredential::new(Some(
        azure_identity::ManagedIdentityCredentialOptions {
            user_assigned_id: env("AZURE_CLIENT_ID").map(azure_identity::UserAssignedId::ClientId),
            client_options: core()?,
        },
    ))
    .map_err(|e| cfg_err("managed identity", e))?;
    let dev = azure_identity::DeveloperToolsCredential::new(None)
        .map_err(|e| cfg_err("developer tools", e))?;
    // Off Azure the metadata endpoint does not answer: give it a short first try there.
    let probe = if env("IDENTITY_ENDPOINT").is_some() {
        None
    } else {
        Some(Duration::from_secs(3))
    };
    Ok(Arc::new(Chain {
        sources: vec![(managed, probe), (dev, None)],
        chosen: std::sync::OnceLock::new(),
    }))
}

/// Tries each source in order until one gives a token, then keeps that one.
struct Chain {
    /// A source and the time allowed for its first attempt.
    sources: Vec<(Arc<dyn TokenCredential>, Option<Duration>)>,
    chosen: std::sync::OnceLock<usize>,
}

impl std::fmt::Debug for Chain {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DefaultCredentialChain")
            .field("chosen", &self.chosen.get())
            .finish_non_exhaustive()
    }
}

#[async_trait::async_trait]
impl TokenCredential for Chain {
    async fn get_token(
        &self,
        scopes: &[&str],
        options: Option<azure_core::credentials::TokenRequestOptions<'_>>,
    ) -> azure_core::Result<azure_core::credentials::AccessToken> {
        if let Some(&i) = self.chosen.get() {
            return self.sources[i].0.get_token(scopes, options).await;
        }
        let mut failures = Vec::new();
        for (i, (source, first_try)) in self.sources.iter().enumerate() {
            let attempt = source.get_token(scopes, options.clone());
            let result = match first_try {
                Some(limit) => match tokio::time::timeout(*limit, attempt).await {
                    Ok(r) => r,
                    Err(_) => Err(azure_core::Error::with_message(
                        azure_core::error::ErrorKind::Credential,
                        format!("no answer within {limit:?}"),
                    )),
                },
                None => attempt.await,
            };
            match result {
                Ok(t) => {
                    let _ = self.chosen.set(i);
                    return Ok(t);
                }
                Err(e) => failures.push(format!(
                    "{}: {e}",
                    if i == 0 {
                        "managed identity"
                    } else {
                        "developer tools"
                    }
                )),
            }
        }
        Err(azure_core::Error::with_message(
            azure_core::error::ErrorKind::Credential,
            format!(
                "no credential in the chain gave a token ({})",
                failures.join("; ")
            ),
        ))
    }
}

/// azstore's reqwest client as an `azure_core` HTTP client (azure_core's own would be a second
/// reqwest version).
#[derive(Debug)]
struct ReqwestClient(reqwest::Client);

#[async_trait::async_trait]
impl HttpClient for ReqwestClient {
    async fn execute_request(&self, request: &Request) -> azure_core::Result<AsyncRawResponse> {
        use azure_core::error::ErrorKind as K;
        let method = match request.method() {
            Method::Get => reqwest::Method::GET,
            Method::Post => reqwest::Method::POST,
            Method::Put => reqwest::Method::PUT,
            Method::Delete => reqwest::Method::DELETE,
            Method::Head => reqwest::Method::HEAD,
            Method::Patch => reqwest::Method::PATCH,
            other => {
                return Err(azure_core::Error::with_message(
                    K::Other,
                    format!("unsupported method {other:?}"),
                ));
            }
        };
        let url = reqwest::Url::parse(request.url().as_str())
            .map_err(|e| azure_core::Error::with_message(K::DataConversion, e.to_string()))?;
        let mut rb = self.0.request(method, url);
        for (name, value) in request.headers().iter() {
            rb = rb.header(name.as_str(), value.as_str());
        }
        match request.body() {
            Body::Bytes(b) => rb = rb.body(b.clone()),
            #[allow(unreachable_patterns)]
            _ => {
                return Err(azure_core::Error::with_message(
                    K::Other,
                    "streamed request bodies are not supported by azstore's transport",
                ));
            }
        }
        let resp = rb.send().await.map_err(|e| {
            let kind = if e.is_connect() { K::Connection } else { K::Io };
            azure_core::Error::new(kind, e.without_url())
        })?;
        let status = StatusCode::from(resp.status().as_u16());
        let mut headers = Headers::new();
        for (k, v) in resp.headers() {
            if let Ok(v) = v.to_str() {
                headers.insert(
                    HeaderName::from(k.as_str().to_owned()),
                    HeaderValue::from(v.to_owned()),
                );
            }
        }
        // A token answer is a few KiB: a larger body (a misbehaving endpoint) is not read.
        let mut resp = resp;
        let body = match crate::transport::read_within(&mut resp, TOKEN_RESPONSE_LIMIT).await {
            Ok(Ok(body)) => body,
            Ok(Err(_)) => {
                return Err(azure_core::Error::with_message(
                    K::Io,
                    "the token endpoint's answer is larger than 1 MiB: not read",
                ));
            }
            Err(e) => return Err(azure_core::Error::new(K::Io, e.without_url())),
        };
        Ok(AsyncRawResponse::from_bytes(status, headers, body))
    }
}
