//! Request authorization in one step: `Authorizer::authorize` turns a stamped request into
//! what the credential requires (a SharedKey signature in the Blob/Queue/File or the Table
//! dialect, SAS query pairs, a bearer token, or nothing), or calls a backend's own [`Sign`]er
//! (Azure Cosmos DB signs with its master key). The pipeline stamps, authorizes, sends and
//! classifies; this module knows how each storage credential signs and no service module.
//! SAS generation lives in [`sas`].

pub mod sas;
mod shared_key;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use reqwest::header::HeaderValue;

use crate::account::Service;
use crate::credential::{AccessToken, Credential};
use crate::error::{Error, ErrorKind, RequestSent, Result};
use crate::http::{Method, TransportOptions};
use shared_key::SignableRequest;

/// Which SharedKey string-to-sign a service uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    /// Blob, Queue and File: the full string-to-sign.
    Storage,
    /// Table: the short one.
    Table,
}

/// One attempt's request as it will be sent, borrowed for authorization.
pub(crate) struct Unsigned<'a> {
    /// The method.
    pub method: Method,
    /// The URL path exactly as sent (percent-encoded), starting with `/`.
    pub path: &'a str,
    /// Query parameters, not percent-encoded.
    pub query: &'a [(String, String)],
    /// The stamped headers (lower-case names); authorization may add some.
    pub headers: &'a mut Vec<(String, String)>,
    /// Body length in bytes.
    pub content_length: u64,
}

/// What authorization adds to a request besides headers.
pub(crate) enum Authorization {
    /// Nothing (anonymous).
    None,
    /// The `Authorization` header (marked sensitive: never shown by `Debug`).
    Header(HeaderValue),
    /// A bearer token's `Authorization` header, and the token (to report it when refused).
    Bearer(HeaderValue, AccessToken),
    /// Query pairs (a SAS token).
    Query(Vec<(String, String)>),
}

/// A backend's own request signer, called for every attempt instead of the account's
/// credential (e.g. the Azure Cosmos DB master key or token). It reads the stamped request and
/// returns the `Authorization` header value (marked sensitive, see [`sensitive`]).
pub(crate) trait Sign: Send + Sync + 'static {
    /// The `Authorization` header of one attempt.
    fn sign<'a>(
        &'a self,
        req: &'a Unsigned<'_>,
    ) -> Pin<Box<dyn Future<Output = Result<HeaderValue>> + Send + 'a>>;
}

/// Authorizes the requests of one pipeline: its credential, account, dialect and whether a
/// bearer token may go to its endpoint.
pub(crate) struct Authorizer {
    credential: Credential,
    account: String,
    /// The storage service (it picks the SharedKey dialect); `None` with a custom signer.
    service: Option<Service>,
    /// Which secrets the endpoint may not receive (it is plain `http://`).
    cleartext: Cleartext,
    /// A backend's own signer, used instead of the credential.
    signer: Option<Arc<dyn Sign>>,
}

impl Authorizer {
    pub(crate) fn new(
        credential: Credential,
        account: &str,
        service: Service,
        origin: &reqwest::Url,
        transport: &TransportOptions,
    ) -> Authorizer {
        Authorizer {
            cleartext: Cleartext::of(origin, transport),
            credential,
            account: account.to_string(),
            service: Some(service),
            signer: None,
        }
    }

    /// Authorizes every request with `signer` (a backend's own scheme) instead of a storage
    /// credential.
    // Only the Cosmos DB backend has its own signer so far.
    #[cfg_attr(not(feature = "cosmos"), allow(dead_code))]
    pub(crate) fn with_signer(signer: Arc<dyn Sign>) -> Authorizer {
        Authorizer {
            credential: Credential::Anonymous,
            account: String::new(),
            service: None,
            cleartext: Cleartext::default(),
            signer: Some(signer),
        }
    }

    /// Authorizes the subrequests of a Blob Batch with `credential` of `account` (through
    /// [`authorize`](Self::authorize), once per subrequest): each subrequest is authorized on
    /// its own, a SharedKey signature over the subrequest's own method, path and `x-ms-*`
    /// headers, the same bearer token header, or the SAS query pairs for its URL. No plain-HTTP
    /// refusal here: the batch request that carries them goes through the pipeline's own
    /// authorizer, which refuses a SAS or a token the endpoint may not receive before anything
    /// is sent.
    pub(crate) fn for_subrequests(credential: &Credential, account: &str) -> Authorizer {
        Authorizer {
            credential: credential.clone(),
            account: account.to_string(),
            service: Some(Service::Blob),
            cleartext: Cleartext::default(),
            signer: None,
        }
    }

    pub(crate) fn credential(&self) -> &Credential {
        &self.credential
    }

    /// Authorizes one attempt (called again for every attempt: signatures carry the date,
    /// tokens expire).
    pub(crate) async fn authorize(&self, req: Unsigned<'_>) -> Result<Authorization> {
        self.cleartext.check_copy_source(req.headers)?;
        if let Some(signer) = &self.signer {
            return signer.sign(&req).await.map(Authorization::Header);
        }
        match &self.credential {
            Credential::SharedKey(key) => {
                let signable = SignableRequest {
                    method: req.method.as_str(),
                    path: req.path,
                    query: req.query,
                    headers: req.headers,
                    content_length: req.content_length,
                };
                let sts = match Dialect::of(self.service) {
                    Dialect::Table => shared_key::table_string_to_sign(&self.account, &signable),
                    Dialect::Storage => shared_key::string_to_sign(&self.account, &signable),
                };
                let signature = key.sign(&sts);
                let mut value = String::with_capacity(11 + self.account.len() + signature.len());
                value.push_str("SharedKey ");
                value.push_str(&self.account);
                value.push(':');
                value.push_str(&signature);
                Ok(Authorization::Header(sensitive(value)?))
            }
            Credential::Sas(sas) => {
                if let Some(why) = &self.cleartext.sas {
                    return Err(Error::invalid_input(why.clone()));
                }
                Ok(Authorization::Query(sas.pairs()))
            }
            Credential::Bearer(provider) => {
                if let Some(why) = &self.cleartext.bearer {
                    return Err(Error::invalid_input(why.clone()));
                }
                if self.service == Some(Service::File)
                    && !req
                        .headers
                        .iter()
                        .any(|(k, _)| k == "x-ms-file-request-intent")
                {
                    // Azure Files answers OAuth requests without it with 400.
                    req.headers
                        .push(("x-ms-file-request-intent".into(), "backup".into()));
                }
                let token = provider.token().await?;
                let header = sensitive(format!("Bearer {}", token.expose_secret()))?;
                Ok(Authorization::Bearer(header, token))
            }
            Credential::Anonymous => Ok(Authorization::None),
        }
    }
}

impl Dialect {
    fn of(service: Option<Service>) -> Dialect {
        if service == Some(Service::Table) {
            Dialect::Table
        } else {
            Dialect::Storage
        }
    }
}

/// An `Authorization` header value, marked sensitive.
pub(crate) fn sensitive(value: String) -> Result<HeaderValue> {
    let mut value = HeaderValue::try_from(value).map_err(|_| {
        Error::new(ErrorKind::Auth, "the credential cannot be sent in a header")
            .with_sent(RequestSent::No)
    })?;
    value.set_sensitive(true);
    Ok(value)
}

/// What may not travel to an endpoint over plain `http://`, and why: set only for an `http://`
/// origin. A bearer token goes only over TLS, except to a loopback emulator when the caller
/// allowed it; a SAS goes over TLS or to a loopback host, or anywhere when the caller allowed
/// it. The same rules hold for the copy source's token and SAS a request carries.
#[derive(Default)]
struct Cleartext {
    bearer: Option<String>,
    sas: Option<String>,
}

/// The request headers that carry a source URL (which may hold a SAS).
const SOURCE_URL_HEADERS: [&str; 2] = ["x-ms-copy-source", "x-ms-previous-snapshot-url"];

impl Cleartext {
    fn of(origin: &reqwest::Url, t: &TransportOptions) -> Cleartext {
        use crate::http::transport::is_loopback_host;
        if origin.scheme() == "https" {
            return Cleartext::default();
        }
        let host = origin.host_str().unwrap_or_default();
        let loopback = is_loopback_host(host);
        let bearer = (!(loopback && t.bearer_over_http_to_loopback_allowed())).then(|| {
            format!(
                "refusing to send a bearer token over plain HTTP to {host}: use an https:// \
                 endpoint{}",
                if loopback {
                    " (for a local emulator: TransportOptions::allow_bearer_over_http_to_loopback)"
                } else {
                    ""
                }
            )
        });
        let sas = (!(loopback || t.sas_over_http_allowed())).then(|| {
            format!(
                "refusing to send a SAS over plain HTTP to {host}: anyone who sees the \
                 connection could use it until it expires. Use an https:// endpoint, or \
                 TransportOptions::allow_sas_over_http(true) for a test network"
            )
        });
        Cleartext { bearer, sas }
    }

    /// Refuses a request that would carry a copy source's bearer token or SAS over a
    /// connection that may not carry it.
    fn check_copy_source(&self, headers: &[(String, String)]) -> Result<()> {
        if self.bearer.is_none() && self.sas.is_none() {
            return Ok(());
        }
        for (name, value) in headers {
            let refusal = if name == "x-ms-copy-source-authorization" {
                self.bearer.as_ref()
            } else if SOURCE_URL_HEADERS.contains(&name.as_str()) && carries_sas(value) {
                self.sas.as_ref()
            } else {
                None
            };
            if let Some(why) = refusal {
                return Err(Error::invalid_input(format!("{name}: {why}")));
            }
        }
        Ok(())
    }
}

/// Whether a URL's query holds a SAS signature.
fn carries_sas(url: &str) -> bool {
    let Some((_, query)) = url.split_once('?') else {
        return false;
    };
    query
        .split('&')
        .any(|pair| pair.len() > 4 && pair[..4].eq_ignore_ascii_case("sig="))
}
