//! Credentials: SharedKey, SAS token, bearer token, anonymous.
//!
//! Secrets never leave these types through `Debug` or `Display`: the account key prints as
//! `<redacted>`, a SAS token prints with its `sig=` value replaced.

use std::fmt;
use std::sync::Arc;

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;

use crate::error::{Error, Result};
use crate::redact::redact;

#[cfg(feature = "identity")]
#[cfg_attr(docsrs, doc(cfg(feature = "identity")))]
pub mod entra;
mod token;

pub use token::{AccessToken, StaticToken, TokenCache, TokenProvider};

/// An account name plus its base64 account key. `Debug` never shows the key.
///
/// Usually made for you by [`StorageAccount::new`](crate::StorageAccount::new) or a connection
/// string; build one yourself to put it in a [`Credential::SharedKey`].
///
/// ```
/// use azstore::credential::{Credential, SharedKeyCredential};
/// let key = SharedKeyCredential::new("myaccount", "c2VjcmV0LWtleQ==")?;
/// let credential = Credential::SharedKey(key);
/// assert!(!format!("{credential:?}").contains("c2VjcmV0"));
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone)]
pub struct SharedKeyCredential {
    account: String,
    /// HMAC-SHA256 already keyed with the account key (the key's inner and outer pads are
    /// hashed once here instead of on every request); cloned per signature.
    mac: Arc<KeyedMac>,
}

impl SharedKeyCredential {
    /// Builds a credential from the account name and the base64 key shown in the portal.
    ///
    /// ```
    /// let cred = azstore::credential::SharedKeyCredential::new("acct", "a2V5").unwrap();
    /// assert!(!format!("{cred:?}").contains("a2V5"));
    /// ```
    pub fn new(account: impl Into<String>, key_base64: &str) -> Result<Self> {
        let mac = KeyedMac::from_base64(key_base64, "AccountKey", Error::invalid_input)?;
        Ok(SharedKeyCredential {
            account: account.into(),
            mac: Arc::new(mac),
        })
    }

    /// The account name.
    ///
    /// ```
    /// let key = azstore::credential::SharedKeyCredential::new("myaccount", "a2V5")?;
    /// assert_eq!(key.account(), "myaccount");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn account(&self) -> &str {
        &self.account
    }

    /// HMAC-SHA256 of `data` with the account key, base64-encoded.
    pub(crate) fn sign(&self, data: &str) -> String {
        self.mac.sign_base64(data.as_bytes())
    }
}

impl fmt::Debug for SharedKeyCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SharedKeyCredential")
            .field("account", &self.account)
            .field("key", &"<redacted>")
            .finish()
    }
}

/// HMAC-SHA256 keyed once with an account key.
#[derive(Clone)]
pub(crate) struct KeyedMac(Hmac<Sha256>);

impl KeyedMac {
    pub(crate) fn new(key: &[u8]) -> KeyedMac {
        KeyedMac(Hmac::<Sha256>::new_from_slice(key).expect("HMAC accepts any key length"))
    }

    /// Keyed with a base64 key (surrounding white space ignored). A key that is not base64,
    /// or is empty, is the error `invalid` makes of a message naming the key `what`.
    pub(crate) fn from_base64(
        key_base64: &str,
        what: &str,
        invalid: fn(String) -> Error,
    ) -> Result<KeyedMac> {
        let key = base64::engine::general_purpose::STANDARD
            .decode(key_base64.trim())
            .map_err(|_| invalid(format!("{what} is not valid base64")))?;
        if key.is_empty() {
            return Err(invalid(format!("{what} is empty")));
        }
        Ok(KeyedMac::new(&key))
    }

    /// HMAC-SHA256 of `data`, base64 encoded.
    pub(crate) fn sign_base64(&self, data: &[u8]) -> String {
        let mut mac = self.0.clone();
        mac.update(data);
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    }
}

/// A shared access signature query string (without the leading `?`). `Debug` and `Display`
/// replace the signature.
///
/// ```
/// use azstore::credential::SasToken;
/// let sas = SasToken::new("?sv=2025-11-05&sp=r&se=2026-12-01&sr=c&sig=abc%2Fdef")?;
/// assert!(!sas.to_string().contains("abc"));
/// # Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone)]
pub struct SasToken(Arc<str>);

impl SasToken {
    /// Wraps a SAS token such as `sv=2025-11-05&ss=b&...&sig=...`; a leading `?` is removed.
    /// `InvalidInput` when it is empty or has no `sig=`.
    ///
    /// ```
    /// use azstore::credential::{Credential, SasToken};
    /// let credential = Credential::Sas(SasToken::new("sv=2025-11-05&sp=rl&sig=c2ln")?);
    /// assert!(SasToken::new("sv=2025-11-05&sp=rl").is_err()); // no signature
    /// # let _ = credential; Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(token: impl AsRef<str>) -> Result<Self> {
        let t = token.as_ref().trim().trim_start_matches('?');
        if t.is_empty() {
            return Err(Error::invalid_input("SAS token is empty"));
        }
        if !t.split('&').any(|p| p.starts_with("sig=")) {
            return Err(Error::invalid_input("SAS token has no sig= parameter"));
        }
        Ok(SasToken(t.into()))
    }

    /// The query pairs, percent-decoded.
    pub(crate) fn pairs(&self) -> Vec<(String, String)> {
        self.0
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|p| {
                let (k, v) = p.split_once('=').unwrap_or((p, ""));
                (decode(k), decode(v))
            })
            .collect()
    }

    /// The raw token. Handle with care: it contains the signature.
    ///
    /// ```
    /// let sas = azstore::credential::SasToken::new("?sp=r&sig=c2ln")?;
    /// assert_eq!(sas.expose_secret(), "sp=r&sig=c2ln");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn expose_secret(&self) -> &str {
        &self.0
    }
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}

impl fmt::Debug for SasToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SasToken({})", redact(&self.0))
    }
}

impl fmt::Display for SasToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&redact(&self.0))
    }
}

/// How requests are authorized.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::StorageAccount;
/// use azstore::credential::{Credential, SasToken};
/// // The same account endpoints, authorized with a SAS instead of the account key.
/// let sas = SasToken::new(std::env::var("MY_SAS").unwrap_or_default())?;
/// let account = StorageAccount::from_env()?.with_credential(Credential::Sas(sas));
/// # let _ = account; Ok(()) }
/// ```
#[derive(Clone, Default)]
#[non_exhaustive]
pub enum Credential {
    /// SharedKey signing with the account key (`Authorization: SharedKey acct:sig`).
    SharedKey(SharedKeyCredential),
    /// A SAS token appended to every request's query string.
    Sas(SasToken),
    /// An OAuth bearer token (Microsoft Entra ID) from a [`TokenProvider`], asked on every
    /// attempt. Build it with [`Credential::bearer`] (which puts a [`TokenCache`] in front of the
    /// source) or, with the `identity` feature, `Credential::entra`. Sent only over HTTPS
    /// (see [`crate::http::TransportOptions::allow_bearer_over_http_to_loopback`]); File
    /// requests also carry `x-ms-file-request-intent: backup`, as Azure Files requires.
    Bearer(Arc<dyn TokenProvider>),
    /// No authorization (public containers).
    #[default]
    Anonymous,
}

impl Credential {
    /// A bearer credential: `source` behind a [`TokenCache`] (refresh ahead of expiry, one
    /// token request at a time, bounded time; see the cache's docs).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// use azstore::credential::{Credential, StaticToken};
    /// // A token obtained out of band, e.g. `az account get-access-token --resource https://storage.azure.com`.
    /// let token = StaticToken::new(std::env::var("AZURE_STORAGE_TOKEN").unwrap_or_default())?;
    /// let account = azstore::StorageAccount::from_connection_string("AccountName=myaccount")?
    ///     .with_credential(Credential::bearer(token));
    /// # let _ = account; Ok(()) }
    /// ```
    pub fn bearer(source: impl TokenProvider + 'static) -> Credential {
        Credential::Bearer(Arc::new(TokenCache::new(source)))
    }

    /// A bearer credential from a configured cache (e.g. with another fetch timeout).
    ///
    /// ```no_run
    /// # fn demo(source: azstore::credential::StaticToken) {
    /// use std::time::Duration;
    /// use azstore::credential::{Credential, TokenCache};
    /// let cache = TokenCache::new(source).with_fetch_timeout(Duration::from_secs(5));
    /// let credential = Credential::bearer_cached(cache);
    /// # let _ = credential; }
    /// ```
    pub fn bearer_cached(cache: TokenCache) -> Credential {
        Credential::Bearer(Arc::new(cache))
    }
}

impl fmt::Debug for Credential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Credential::SharedKey(k) => k.fmt(f),
            Credential::Sas(s) => s.fmt(f),
            Credential::Bearer(_) => f.write_str("Bearer(<token provider>)"),
            Credential::Anonymous => f.write_str("Anonymous"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sas_redaction() {
        let t = SasToken::new("?sv=2025-11-05&sp=r&sig=abc%2Fdef%3D&se=x").unwrap();
        let shown = format!("{t:?} {t}");
        assert!(!shown.contains("abc"), "{shown}");
        assert!(shown.contains("sv=2025-11-05"));
        assert!(SasToken::new("sv=1").is_err());
    }

    #[test]
    fn key_redaction() {
        let k = SharedKeyCredential::new("a", "c2VjcmV0a2V5").unwrap();
        assert!(!format!("{k:?}").contains("c2VjcmV0a2V5"));
        assert!(SharedKeyCredential::new("a", "not base64!").is_err());
    }
}
