//! Azure Storage's edge on the wire ([`Edge`]): what every Blob, Queue, File and Table
//! request carries (`x-ms-date`, `x-ms-version`, `x-ms-client-request-id`, Table's data
//! service version), how it is authorized (a SharedKey signature in the Blob/Queue/File or the
//! Table dialect, SAS query pairs, a bearer token, or nothing), what may not travel over plain
//! `http://`, how a refusal reads (`x-ms-error-code`, the XML or JSON error body, what to check
//! for the credential on a 401/403) and how calls are named.
//!
//! [`Pipeline::new`] (a storage account's pipeline) is defined here, as are the headers only
//! Storage sends ([`Headers::request_id`], [`Headers::metadata`]).

use std::any::Any;
use std::collections::BTreeMap;

use crate::account::{Service, StorageAccount};
use std::sync::Arc;

use crate::credential::{AccessToken, Credential, SasToken, SharedKeyCredential, TokenProvider};
use crate::error::{Error, Result};
use crate::http::edge::{Authorization, Authorizing, Edge, Labels, Unsigned, sensitive, stamp};
use crate::http::{ClientOptions, Headers, Pipeline, Request, TransportOptions};
use crate::storage::refusal::{error_from_parts, with_auth_hint};
use crate::storage::shared_key::{self, SignableRequest};

/// The `x-ms-version` azstore speaks (accepted by Azurite 3.37 without
/// `--skipApiVersionCheck`).
///
/// ```
/// assert!(azstore::storage::API_VERSION.starts_with("20"));
/// ```
pub const API_VERSION: &str = "2025-11-05";

/// The edge of one storage account's service: its credential, account, service and which
/// secrets its endpoint may not receive.
pub(crate) struct StorageEdge {
    credential: Credential,
    account: String,
    service: Service,
    /// Which secrets the endpoint may not receive (it is plain `http://`).
    cleartext: Cleartext,
}

impl std::fmt::Debug for StorageEdge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StorageEdge")
            .field("service", &self.service)
            .field("account", &self.account)
            .field("credential", &self.credential)
            .finish()
    }
}

impl Pipeline {
    /// A pipeline for `service` of `account`.
    ///
    /// ```no_run
    /// # fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
    /// use azstore::Service;
    /// use azstore::http::{ClientOptions, Pipeline};
    /// let pipeline = Pipeline::new(&account, Service::Blob, ClientOptions::default())?;
    /// # let _ = pipeline; Ok(()) }
    /// ```
    pub fn new(
        account: &StorageAccount,
        service: Service,
        options: ClientOptions,
    ) -> Result<Pipeline> {
        let endpoint = account.endpoint(service)?.clone();
        let origin = crate::http::pipeline::origin_url(&endpoint)?;
        let edge = StorageEdge {
            cleartext: Cleartext::of(&origin, &options.transport),
            credential: account.credential().clone(),
            account: account.name().to_string(),
            service,
        };
        Pipeline::with_edge(endpoint, std::sync::Arc::new(edge), options)
    }

    /// The storage service this pipeline talks to (`None` for a pipeline of another service,
    /// e.g. Azure Cosmos DB).
    ///
    /// ```no_run
    /// # fn demo(pipeline: azstore::http::Pipeline) {
    /// println!("{:?}", pipeline.service());
    /// # }
    /// ```
    pub fn service(&self) -> Option<Service> {
        self.storage().map(|e| e.service)
    }

    /// The storage account's name (empty for a pipeline of another service).
    ///
    /// ```no_run
    /// # fn demo(pipeline: azstore::http::Pipeline) {
    /// println!("{}", pipeline.account());
    /// # }
    /// ```
    pub fn account(&self) -> &str {
        self.storage().map_or("", |e| e.account.as_str())
    }

    fn storage(&self) -> Option<&StorageEdge> {
        self.edge().as_any().downcast_ref::<StorageEdge>()
    }
}

impl Headers {
    /// Azure Storage's id of the request (`x-ms-request-id`).
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("request {:?}", resp.headers.request_id());
    /// # Ok(()) }
    /// ```
    pub fn request_id(&self) -> Option<&str> {
        self.get("x-ms-request-id")
    }

    /// All `x-ms-meta-*` headers (a Storage resource's metadata), keyed by the name after the
    /// prefix.
    ///
    /// ```no_run
    /// # async fn demo(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", blob.container_name(), blob.name());
    /// let resp = blob.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.metadata());
    /// # Ok(()) }
    /// ```
    pub fn metadata(&self) -> BTreeMap<String, String> {
        self.iter()
            .filter_map(|(k, v)| {
                k.strip_prefix(METADATA_PREFIX)
                    .map(|n| (n.to_string(), v.to_string()))
            })
            .collect()
    }
}

/// The prefix of a metadata header.
const METADATA_PREFIX: &str = "x-ms-meta-";

/// Source conditions: an empty one would be ignored by the service, turning a conditional
/// copy into an unconditional one (`if-match` and `if-none-match` the wire checks itself).
const SOURCE_ETAG_CONDITIONS: [&str; 2] = ["x-ms-source-if-match", "x-ms-source-if-none-match"];

impl Edge for StorageEdge {
    fn labels(&self) -> Labels {
        Labels {
            namespace: "Microsoft.Storage",
            service: match self.service {
                Service::Blob => "blob",
                Service::Queue => "queue",
                Service::Table => "table",
                Service::File => "file",
            },
        }
    }

    /// `method[_restype][_comp][_lease action]` (`get`, `put_block`, `put_lease_renew`,
    /// `get_container_list`), plus `_messages` for a queue's messages and `_tables` for the
    /// table list.
    fn operation_name(&self, req: &Request) -> String {
        let mut name = req.method.as_str().to_ascii_lowercase();
        let query = |k: &str| {
            req.query
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let action = req
            .headers
            .iter()
            .find(|(k, _)| k == "x-ms-lease-action")
            .map(|(_, v)| v.as_str());
        for part in [query("restype"), query("comp"), action]
            .into_iter()
            .flatten()
        {
            name.push('_');
            name.push_str(part);
        }
        if req.path.ends_with("/messages") || req.path.contains("/messages/") {
            name.push_str("_messages");
        } else if req.path == "Tables" || req.path.starts_with("Tables(") {
            name.push_str("_tables");
        }
        name
    }

    /// Blank source conditions, and metadata over the service's 8 KiB.
    fn check(&self, req: &Request) -> Result<()> {
        let mut metadata = 0;
        for (name, value) in &req.headers {
            if let Some(key) = name.strip_prefix(METADATA_PREFIX) {
                metadata += key.len() + value.len();
            } else if SOURCE_ETAG_CONDITIONS.contains(&name.as_str()) && value.trim().is_empty() {
                return Err(Error::invalid_input(format!(
                    "{name}: an empty ETag cannot be sent (the service would ignore the \
                     condition and the request would be unconditional)"
                )));
            }
        }
        if metadata > crate::names::METADATA_MAX_BYTES {
            return Err(Error::invalid_input(format!(
                "the request's metadata is {metadata} bytes (names and values together); the \
                 service allows at most 8 KiB: keep larger data in the object itself"
            )));
        }
        Ok(())
    }

    fn stamp(&self, headers: &mut Vec<(String, String)>, client_request_id: &str) {
        stamp(headers, "x-ms-date", crate::time_fmt::http_date_now());
        stamp(headers, "x-ms-version", API_VERSION);
        stamp(headers, "x-ms-client-request-id", client_request_id);
        if self.service == Service::Table {
            stamp(headers, "dataserviceversion", "3.0");
            stamp(headers, "maxdataserviceversion", "3.0;NetFx");
        }
    }

    fn authorize<'a>(&'a self, req: Unsigned<'a>) -> Authorizing<'a> {
        if let Err(e) = self.cleartext.check_copy_source(req.headers) {
            return Authorizing::Ready(Err(e));
        }
        match &self.credential {
            Credential::SharedKey(key) => Authorizing::Ready(self.shared_key(key, &req)),
            Credential::Sas(sas) => Authorizing::Ready(self.sas(sas)),
            Credential::Bearer(provider) => {
                Authorizing::Later(Box::pin(self.bearer(provider, req)))
            }
            Credential::Anonymous => Authorizing::Ready(Ok(Authorization::None)),
        }
    }

    fn token_refused(&self, token: &AccessToken) -> bool {
        match &self.credential {
            Credential::Bearer(source) => source.token_rejected(token),
            _ => false,
        }
    }

    fn refusal(&self, status: u16, headers: &Headers, body: &[u8]) -> Error {
        let e = error_from_parts(status, headers, body);
        with_auth_hint(e, &self.credential, &self.account)
    }

    fn request_id<'h>(&self, headers: &'h Headers) -> Option<&'h str> {
        headers.request_id()
    }

    fn credential(&self) -> &Credential {
        &self.credential
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

impl StorageEdge {
    /// A SharedKey signature in the service's dialect.
    fn shared_key(&self, key: &SharedKeyCredential, req: &Unsigned<'_>) -> Result<Authorization> {
        let signable = SignableRequest {
            method: req.method.as_str(),
            path: req.path,
            query: req.query,
            headers: req.headers,
            content_length: req.content_length,
        };
        let sts = if self.service == Service::Table {
            shared_key::table_string_to_sign(&self.account, &signable)
        } else {
            shared_key::string_to_sign(&self.account, &signable)
        };
        let signature = key.sign(&sts);
        let mut value = String::with_capacity(11 + self.account.len() + signature.len());
        value.push_str("SharedKey ");
        value.push_str(&self.account);
        value.push(':');
        value.push_str(&signature);
        Ok(Authorization::Header(sensitive(value)?))
    }

    /// A SAS's query pairs, where the endpoint may receive them.
    fn sas(&self, sas: &SasToken) -> Result<Authorization> {
        if let Some(why) = &self.cleartext.sas {
            return Err(Error::invalid_input(why.clone()));
        }
        Ok(Authorization::Query(sas.pairs()))
    }

    /// A bearer token's authorization (fetched, or from the cache).
    async fn bearer(
        &self,
        provider: &Arc<dyn TokenProvider>,
        req: Unsigned<'_>,
    ) -> Result<Authorization> {
        if let Some(why) = &self.cleartext.bearer {
            return Err(Error::invalid_input(why.clone()));
        }
        if self.service == Service::File {
            // Azure Files answers OAuth requests without it with 400.
            stamp(req.headers, "x-ms-file-request-intent", "backup");
        }
        let token = provider.token().await?;
        let header = sensitive(format!("Bearer {}", token.expose_secret()))?;
        Ok(Authorization::Bearer(header, token))
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::Method;

    fn edge() -> StorageEdge {
        StorageEdge {
            credential: Credential::Anonymous,
            account: "acct".into(),
            service: Service::Blob,
            cleartext: Cleartext::default(),
        }
    }

    #[test]
    fn blank_source_conditions_and_large_metadata_are_refused() {
        let e = edge();
        for name in SOURCE_ETAG_CONDITIONS {
            for blank in ["", "  ", "\t"] {
                let err = e
                    .check(&Request::new(Method::Put, "c/b").header(name, blank))
                    .unwrap_err();
                assert!(err.message().contains("empty ETag"), "{err}");
            }
        }
        let big = "v".repeat(crate::names::METADATA_MAX_BYTES);
        let err = e
            .check(&Request::new(Method::Put, "c/b").header("x-ms-meta-a", &big))
            .unwrap_err();
        assert!(err.message().contains("8 KiB"), "{err}");
        assert!(
            e.check(&Request::new(Method::Put, "c/b").header("x-ms-meta-a", "v"))
                .is_ok()
        );
    }

    #[test]
    fn operations_are_named_by_method_restype_comp_and_lease_action() {
        let e = edge();
        let renew = Request::new(Method::Put, "c/b")
            .query("comp", "lease")
            .header("x-ms-lease-action", "renew");
        assert_eq!(e.operation_name(&renew), "put_lease_renew");
        let list = Request::new(Method::Get, "c")
            .query("restype", "container")
            .query("comp", "list");
        assert_eq!(e.operation_name(&list), "get_container_list");
        assert_eq!(
            e.operation_name(&Request::new(Method::Post, "q/messages")),
            "post_messages"
        );
        assert_eq!(
            e.operation_name(&Request::new(Method::Get, "Tables")),
            "get_tables"
        );
        // A request's own name wins.
        let named = Request::new(Method::Get, "c/b").operation("download");
        assert_eq!(
            crate::http::telemetry::operation_name(&e, &named),
            "download"
        );
    }
}
