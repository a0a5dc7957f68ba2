//! Azure Cosmos DB authorization: the master key ([`CosmosKey`]) or Microsoft Entra ID tokens,
//! called by the Cosmos DB edge (`edge.rs`) for every attempt.
//!
//! <https://learn.microsoft.com/rest/api/cosmos-db/access-control-on-cosmosdb-resources>:
//! the string to sign is `verb\nresourceType\nresourceLink\ndate\n\n` (verb, type and date
//! lower-cased; the link is the resource's path with its ids as they are, not
//! percent-encoded), signed with HMAC-SHA256 under the base64-decoded key; the header is the
//! URL-encoded `type=master&ver=1.0&sig=<base64 signature>`.
//!
//! On error the request is left unchanged (nothing is added).

use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, percent_decode_str, utf8_percent_encode};
use reqwest::header::HeaderValue;

use std::fmt;
use std::sync::Arc;

use crate::credential::{KeyedMac, TokenProvider};
#[cfg(feature = "identity")]
use crate::error::ErrorKind;
use crate::error::{Error, RequestSent, Result};
use crate::http::edge::{Unsigned, sensitive};

/// A Cosmos DB account master key (primary or secondary, read-write or read-only). Never
/// shown by `Debug`.
///
/// ```
/// let key = azstore::cosmos::CosmosKey::new(azstore::cosmos::EMULATOR_KEY)?;
/// assert!(!format!("{key:?}").contains("C2y6"));
/// assert!(azstore::cosmos::CosmosKey::new("not base64!").is_err());
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone)]
pub struct CosmosKey(Arc<KeyedMac>);

impl CosmosKey {
    /// The key as the portal shows it (base64). `InvalidInput` when it is not base64 or empty
    /// (the message never repeats it).
    ///
    /// ```
    /// let key = std::env::var("COSMOS_KEY").unwrap_or_default();
    /// match azstore::cosmos::CosmosKey::new(&key) {
    ///     Ok(k) => println!("{k:?}"), // CosmosKey(<redacted>)
    ///     Err(e) => eprintln!("{e}"),  // never repeats the key
    /// }
    /// ```
    pub fn new(key_base64: &str) -> Result<CosmosKey> {
        KeyedMac::from_base64(key_base64, "the Cosmos DB key", Error::invalid_input)
            .map(|m| CosmosKey(Arc::new(m)))
    }

    pub(crate) fn sign(&self, data: &str) -> String {
        self.0.sign_base64(data.as_bytes())
    }
}

impl fmt::Debug for CosmosKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CosmosKey(<redacted>)")
    }
}

/// How a client authorizes: the master key, or Microsoft Entra ID tokens.
#[derive(Clone)]
pub(crate) enum CosmosAuth {
    Key(CosmosKey),
    Token(Arc<dyn TokenProvider>),
}

/// The scope of Cosmos DB's data plane, for Microsoft Entra ID tokens.
pub const COSMOS_SCOPE: &str = "https://cosmos.azure.com/.default";

/// An Entra ID `TokenCredential` (any `azure_identity` credential) as a [`TokenProvider`] for
/// [`COSMOS_SCOPE`], for [`CosmosClient::with_token_provider`](crate::cosmos::CosmosClient::with_token_provider) (feature `identity`).
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::cosmos::{CosmosClient, CosmosEntraTokens};
/// use azstore::credential::entra;
/// use azstore::http::{ClientOptions, TransportOptions};
/// let credential = entra::default_credential(&TransportOptions::default())?;
/// let client = CosmosClient::with_token_provider(
///     "https://contoso.documents.azure.com:443/",
///     CosmosEntraTokens(credential),
///     ClientOptions::default(),
/// )?;
/// # let _ = client; Ok(()) }
/// ```
#[cfg(feature = "identity")]
pub struct CosmosEntraTokens(pub Arc<dyn azure_core::credentials::TokenCredential>);

#[cfg(feature = "identity")]
impl fmt::Debug for CosmosEntraTokens {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("CosmosEntraTokens").field(&self.0).finish()
    }
}

#[cfg(feature = "identity")]
impl TokenProvider for CosmosEntraTokens {
    fn token(
        &self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = Result<crate::credential::AccessToken>> + Send + '_>,
    > {
        Box::pin(async move {
            let t = self.0.get_token(&[COSMOS_SCOPE], None).await.map_err(|e| {
                Error::new(ErrorKind::Auth, format!("Microsoft Entra ID: {e}"))
                    .with_sent(crate::error::RequestSent::No)
            })?;
            Ok(crate::credential::AccessToken::new(
                t.token.secret(),
                t.expires_on,
            ))
        })
    }
}

/// The resource type and resource link of a Cosmos REST path (`/dbs/a/colls/b/docs/c` →
/// (`docs`, `dbs/a/colls/b/docs/c`); `/dbs/a/colls` → (`colls`, `dbs/a`)). Path segments are
/// percent-decoded: the link names ids as they are.
pub(crate) fn resource_of(path: &str) -> Result<(String, String)> {
    let trimmed = path.trim_matches('/');
    if trimmed.is_empty() {
        return Ok((String::new(), String::new()));
    }
    let mut segments = Vec::new();
    for s in trimmed.split('/') {
        let decoded = percent_decode_str(s)
            .decode_utf8()
            .map_err(|_| Error::invalid_input("a Cosmos DB path segment is not UTF-8"))?;
        segments.push(decoded.into_owned());
    }
    let n = segments.len();
    if n % 2 == 1 {
        // A feed (`dbs/a/colls`): the type is the last segment, the link its parent.
        Ok((segments[n - 1].clone(), segments[..n - 1].join("/")))
    } else {
        Ok((segments[n - 2].clone(), segments.join("/")))
    }
}

/// The string to sign.
pub(crate) fn string_to_sign(verb: &str, resource_type: &str, link: &str, date: &str) -> String {
    format!(
        "{}\n{}\n{}\n{}\n\n",
        verb.to_ascii_lowercase(),
        resource_type.to_ascii_lowercase(),
        link,
        date.to_ascii_lowercase()
    )
}

/// What JavaScript's `encodeURIComponent` leaves alone (the SDKs encode the token with it).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// The `Authorization` header value for a signature.
pub(crate) fn header_value(signature: &str) -> String {
    let token = format!("type=master&ver=1.0&sig={signature}");
    utf8_percent_encode(&token, COMPONENT).to_string()
}

/// The `Authorization` header value for a Microsoft Entra ID token.
pub(crate) fn aad_header_value(token: &str) -> String {
    let token = format!("type=aad&ver=1.0&sig={token}");
    utf8_percent_encode(&token, COMPONENT).to_string()
}

/// Authorizes one attempt.
pub(crate) async fn authorize(auth: &CosmosAuth, req: &Unsigned<'_>) -> Result<HeaderValue> {
    match auth {
        CosmosAuth::Key(key) => sign(key, req),
        CosmosAuth::Token(provider) => {
            let token = provider.token().await?;
            sensitive(aad_header_value(token.expose_secret()))
        }
    }
}

/// Signs one attempt with the master key: reads its `x-ms-date` (stamped by the pipeline).
pub(crate) fn sign(key: &CosmosKey, req: &Unsigned<'_>) -> Result<HeaderValue> {
    let date = req.header("x-ms-date").ok_or_else(|| {
        Error::invalid_input("a Cosmos DB request needs x-ms-date").with_sent(RequestSent::No)
    })?;
    let (resource_type, link) = resource_of(req.path)?;
    let sts = string_to_sign(req.method.as_str(), &resource_type, &link, date);
    sensitive(header_value(&key.sign(&sts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_types_and_links() {
        let r = |p: &str| resource_of(p).unwrap();
        assert_eq!(r("/dbs"), ("dbs".into(), "".into()));
        assert_eq!(r("/dbs/db1"), ("dbs".into(), "dbs/db1".into()));
        assert_eq!(r("/dbs/db1/colls"), ("colls".into(), "dbs/db1".into()));
        assert_eq!(
            r("/dbs/db1/colls/c/docs"),
            ("docs".into(), "dbs/db1/colls/c".into())
        );
        assert_eq!(
            r("/dbs/db1/colls/c/docs/a%20b"),
            ("docs".into(), "dbs/db1/colls/c/docs/a b".into())
        );
        assert_eq!(r("/"), ("".into(), "".into()));
    }

    /// The worked example of the REST documentation ("Constructing the hashed token
    /// signature for a master token"): GET of database `ToDoList` at
    /// `Thu, 27 Apr 2017 00:51:12 GMT`, key `dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw==`.
    #[test]
    fn documented_example() {
        let key = CosmosKey::new(
            "dsZQi3KtZmCv1ljt3VNWNm7sQUF1y5rJfC6kv5JiwvW0EndXdDku/dkKBp8/ufDToSxLzR4y+O/0H/t4bQtVNw==",
        )
        .unwrap();
        let sts = string_to_sign(
            "GET",
            "dbs",
            "dbs/ToDoList",
            "Thu, 27 Apr 2017 00:51:12 GMT",
        );
        assert_eq!(
            sts,
            "get\ndbs\ndbs/ToDoList\nthu, 27 apr 2017 00:51:12 gmt\n\n"
        );
        assert_eq!(
            header_value(&key.sign(&sts)),
            "type%3Dmaster%26ver%3D1.0%26sig%3Dc09PEVJrgp2uQRkr934kFbTqhByc7TVr3OHyqlu%2Bc%2Bc%3D"
        );
    }
}
