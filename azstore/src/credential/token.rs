//! Bearer tokens: the [`AccessToken`] value, the [`TokenProvider`] source, and the
//! [`TokenCache`] that sits between a source and the pipeline.
//!
//! How the cache behaves, for a token that lives `L` (Entra ID: 60–90 minutes):
//!
//! | time left on the cached token | what a request does |
//! |---|---|
//! | more than `min(5 min, L/2)` | uses it, no I/O |
//! | less than that, more than `min(2 min, L/4)` | one request refreshes (the others keep using the current token); if the refresh fails the current token is still used |
//! | less than `min(2 min, L/4)`, or no token | waits for a refresh; concurrent requests share **one** token request |
//!
//! So a request never starts with a token that expires within the next two minutes (longer than
//! one attempt's default timeout), and a cold start of many requests costs one token request.
//! Every token request is bounded by [`TokenCache::with_fetch_timeout`] (default 30 s); a
//! failure or timeout is an [`ErrorKind::Auth`] error with [`RequestSent::No`], given to every
//! request that waited for that attempt and to those that start within the next second, and
//! never retried in a loop: the first request after that second tries again.
//!
//! Tokens never appear in `Debug`, `Display`, errors or logs.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use time::OffsetDateTime;
use tokio::time::Instant;

use crate::error::{Error, ErrorKind, RequestSent, Result};

/// An OAuth access token and when it expires. `Debug` shows only the expiry.
///
/// ```
/// use azstore::credential::AccessToken;
/// let expires = azstore::OffsetDateTime::now_utc() + time::Duration::hours(1);
/// let token = AccessToken::new("eyJ0eXAi", expires);
/// assert_eq!(token.expires_on(), expires);
/// ```
#[derive(Clone)]
pub struct AccessToken {
    token: Arc<str>,
    expires_on: OffsetDateTime,
}

impl AccessToken {
    /// A token that expires at `expires_on`.
    ///
    /// ```
    /// use azstore::credential::AccessToken;
    /// let t = AccessToken::new("eyJ0eXAi", azstore::OffsetDateTime::now_utc());
    /// assert!(!format!("{t:?}").contains("eyJ0eXAi"));
    /// ```
    pub fn new(token: impl Into<String>, expires_on: OffsetDateTime) -> AccessToken {
        AccessToken {
            token: token.into().into(),
            expires_on,
        }
    }

    /// When the token expires.
    ///
    /// ```
    /// use azstore::credential::AccessToken;
    /// let t = AccessToken::new("eyJ0", azstore::OffsetDateTime::UNIX_EPOCH);
    /// assert!(t.expires_on() < azstore::OffsetDateTime::now_utc()); // long expired
    /// ```
    pub fn expires_on(&self) -> OffsetDateTime {
        self.expires_on
    }

    /// The raw token. Handle with care: it is a secret.
    ///
    /// ```
    /// let t = azstore::credential::AccessToken::new("eyJ0", azstore::OffsetDateTime::now_utc());
    /// let header = format!("Bearer {}", t.expose_secret());
    /// # let _ = header;
    /// ```
    pub fn expose_secret(&self) -> &str {
        &self.token
    }
}

impl fmt::Debug for AccessToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AccessToken")
            .field("token", &"<redacted>")
            .field("expires_on", &self.expires_on)
            .finish()
    }
}

/// A source of OAuth bearer tokens for `https://storage.azure.com/.default` (Microsoft Entra
/// ID). With the `identity` feature, any `azure_core` `TokenCredential` is one (see
/// module `credential::entra`); implement it to plug in anything else.
///
/// Use it through [`crate::credential::Credential::bearer`], which puts a [`TokenCache`] in front of it:
/// the pipeline asks for a token on every attempt, and the cache answers from memory.
///
/// ```
/// use azstore::credential::{AccessToken, TokenProvider};
/// use std::{future::Future, pin::Pin};
///
/// struct FromVault;
/// impl TokenProvider for FromVault {
///     fn token(&self) -> Pin<Box<dyn Future<Output = azstore::Result<AccessToken>> + Send + '_>> {
///         Box::pin(async {
///             let expires = azstore::OffsetDateTime::now_utc() + time::Duration::hours(1);
///             Ok(AccessToken::new("eyJ0eXAi...", expires))
///         })
///     }
/// }
/// let credential = azstore::credential::Credential::bearer(FromVault);
/// # let _ = credential;
/// ```
pub trait TokenProvider: Send + Sync {
    /// Fetches a new token. Called by the cache only when the cached one is due for refresh.
    ///
    /// ```no_run
    /// # async fn demo(provider: std::sync::Arc<dyn azstore::credential::TokenProvider>) -> azstore::Result<()> {
    /// let token = provider.token().await?;
    /// println!("valid until {}", token.expires_on());
    /// # Ok(()) }
    /// ```
    fn token(&self) -> Pin<Box<dyn Future<Output = Result<AccessToken>> + Send + '_>>;

    /// Told that the service refused `token` with 401 (revoked, or expired earlier than its
    /// `expires_on` said). Returns whether asking [`token`](Self::token) again may give a
    /// different token, in which case the pipeline repeats the request once. The default
    /// keeps nothing and returns `false`; [`TokenCache`] forgets the token and returns `true`.
    ///
    /// ```
    /// use azstore::credential::{AccessToken, StaticToken, TokenProvider};
    /// let fixed = StaticToken::new("eyJ0")?;
    /// // A fixed token cannot be replaced: the request is not repeated.
    /// assert!(!fixed.token_rejected(&AccessToken::new("eyJ0", azstore::OffsetDateTime::now_utc())));
    /// # Ok::<(), azstore::Error>(())
    /// ```
    fn token_rejected(&self, token: &AccessToken) -> bool {
        let _ = token;
        false
    }
}

/// A fixed token (for example one obtained out of band, `AZURE_STORAGE_TOKEN`). When it is a
/// JWT its `exp` claim is used as the expiry; otherwise it is treated as never expiring.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::credential::{Credential, StaticToken};
/// // e.g. from `az account get-access-token --resource https://storage.azure.com`
/// let token = StaticToken::new(std::env::var("AZURE_STORAGE_TOKEN").unwrap_or_default())?;
/// let account = azstore::StorageAccount::from_connection_string("AccountName=contoso")?
///     .with_credential(Credential::bearer(token));
/// # let _ = account; Ok(()) }
/// ```
#[derive(Clone)]
pub struct StaticToken(AccessToken);

impl StaticToken {
    /// Wraps a token string; `InvalidInput` when it cannot go into a header.
    ///
    /// ```
    /// use azstore::credential::StaticToken;
    /// assert!(StaticToken::new("eyJ0eXAi").is_ok());
    /// assert!(StaticToken::new("bad\ntoken").is_err());
    /// ```
    pub fn new(token: impl Into<String>) -> Result<StaticToken> {
        let token = token.into();
        check_token_chars(&token)?;
        let expires_on = jwt_expiry(&token).unwrap_or(
            OffsetDateTime::from_unix_timestamp(
                // 9999-12-31: "does not expire"
                253_402_300_799,
            )
            .expect("valid timestamp"),
        );
        Ok(StaticToken(AccessToken::new(token, expires_on)))
    }
}

impl fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("StaticToken").field(&self.0).finish()
    }
}

impl TokenProvider for StaticToken {
    fn token(&self) -> Pin<Box<dyn Future<Output = Result<AccessToken>> + Send + '_>> {
        Box::pin(async move { Ok(self.0.clone()) })
    }
}

/// The `exp` claim of a JWT (`header.payload.signature`, base64url), if it is one.
fn jwt_expiry(token: &str) -> Option<OffsetDateTime> {
    use base64::Engine;
    let payload = token.split('.').nth(1)?;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(payload.trim_end_matches('='))
        .ok()?;
    let v: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    OffsetDateTime::from_unix_timestamp(v.get("exp")?.as_i64()?).ok()
}

/// A token goes into a header: refuse what cannot (without echoing it).
fn check_token_chars(token: &str) -> Result<()> {
    if token.is_empty() {
        return Err(
            Error::new(ErrorKind::Auth, "the access token is empty").with_sent(RequestSent::No)
        );
    }
    if !token.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(Error::new(
            ErrorKind::Auth,
            "the access token contains characters that cannot be sent in a header",
        )
        .with_sent(RequestSent::No));
    }
    Ok(())
}

/// Refresh when this much (or half the lifetime, if less) is left.
const REFRESH_AHEAD: Duration = Duration::from_secs(5 * 60);
/// Never hand out a token with less than this (or a quarter of its lifetime) left.
const MIN_REMAINING: Duration = Duration::from_secs(2 * 60);
/// After a failed token request, this long passes before the next one: meanwhile requests use
/// the current token if it is still usable, or get the same error.
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// A caching, single-flight front for a [`TokenProvider`] (see the module docs for the
/// schedule). Cheap to clone; clones share the cache.
///
/// ```
/// use std::time::Duration;
/// use azstore::credential::{Credential, StaticToken, TokenCache};
/// let cache = TokenCache::new(StaticToken::new("eyJ0")?).with_fetch_timeout(Duration::from_secs(10));
/// let credential = Credential::bearer_cached(cache);
/// # let _ = credential; Ok::<(), azstore::Error>(())
/// ```
#[derive(Clone)]
pub struct TokenCache {
    inner: Arc<CacheInner>,
    fetch_timeout: Duration,
}

struct CacheInner {
    source: Arc<dyn TokenProvider>,
    /// The cached token and the outcome of the last fetch. Held only for a few instructions,
    /// never across an `.await`.
    state: Mutex<State>,
    /// Held by the one task that is fetching: the single-flight gate.
    fetching: tokio::sync::Mutex<()>,
}

#[derive(Default)]
struct State {
    token: Option<Cached>,
    /// Incremented by every completed fetch, so a task that waited at the gate knows whether
    /// a fetch happened while it waited.
    generation: u64,
    /// The error of the last fetch, if it failed (cleared by a success).
    last_error: Option<Error>,
    failed_at: Option<Instant>,
}

#[derive(Clone)]
struct Cached {
    token: AccessToken,
    refresh_at: Instant,
    usable_until: Instant,
}

impl TokenCache {
    /// A cache in front of `source`, with a 30 s bound on every token request.
    ///
    /// ```
    /// let cache = azstore::credential::TokenCache::new(azstore::credential::StaticToken::new("eyJ0")?);
    /// # let _ = cache; Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(source: impl TokenProvider + 'static) -> TokenCache {
        TokenCache::from_arc(Arc::new(source))
    }

    /// Like [`TokenCache::new`] for a shared source.
    ///
    /// ```
    /// use std::sync::Arc;
    /// use azstore::credential::{StaticToken, TokenCache, TokenProvider};
    /// let shared: Arc<dyn TokenProvider> = Arc::new(StaticToken::new("eyJ0")?);
    /// let cache = TokenCache::from_arc(shared.clone());
    /// # let _ = cache; Ok::<(), azstore::Error>(())
    /// ```
    pub fn from_arc(source: Arc<dyn TokenProvider>) -> TokenCache {
        TokenCache {
            inner: Arc::new(CacheInner {
                source,
                state: Mutex::new(State::default()),
                fetching: tokio::sync::Mutex::new(()),
            }),
            fetch_timeout: Duration::from_secs(30),
        }
    }

    /// Replaces the time allowed for one token request (default 30 s). A request that takes
    /// longer fails with [`ErrorKind::Auth`].
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::credential::{StaticToken, TokenCache};
    /// let quick = TokenCache::new(StaticToken::new("eyJ0")?).with_fetch_timeout(Duration::from_secs(5));
    /// # let _ = quick; Ok::<(), azstore::Error>(())
    /// ```
    #[must_use]
    pub fn with_fetch_timeout(mut self, v: Duration) -> Self {
        self.fetch_timeout = v;
        self
    }

    /// A token with enough time left for a request, from memory when possible.
    ///
    /// ```no_run
    /// # async fn demo(source: azstore::credential::StaticToken) -> azstore::Result<()> {
    /// let cache = azstore::credential::TokenCache::new(source);
    /// let token = cache.get().await?; // later calls answer from memory until refresh is due
    /// # let _ = token; Ok(()) }
    /// ```
    pub async fn get(&self) -> Result<AccessToken> {
        let inner = &*self.inner;
        let now = Instant::now();
        let (seen_generation, cached, recent_failure) = {
            let st = inner.state.lock().unwrap_or_else(|p| p.into_inner());
            let recent_failure = st
                .failed_at
                .filter(|t| now < *t + RETRY_AFTER_FAILURE)
                .and_then(|_| st.last_error.as_ref().map(Error::duplicate));
            (st.generation, st.token.clone(), recent_failure)
        };
        if let Some(c) = &cached {
            if now < c.refresh_at {
                return Ok(c.token.clone());
            }
            if now < c.usable_until {
                // Refresh ahead: one task fetches, everyone else keeps the current token.
                if recent_failure.is_some() {
                    return Ok(c.token.clone());
                }
                if let Ok(_gate) = inner.fetching.try_lock() {
                    return match self.fetch().await {
                        Ok(t) => Ok(t),
                        Err(e) => {
                            tracing::warn!(error = %e, "access token refresh failed; the current token is still valid");
                            Ok(c.token.clone())
                        }
                    };
                }
                return Ok(c.token.clone());
            }
        }
        // No usable token. Right after a failed token request, share its error instead of
        // asking again (a burst of requests must not become a burst of token requests).
        if let Some(e) = recent_failure {
            return Err(e);
        }
        // Wait at the gate; whoever gets there first fetches for everyone.
        let _gate = inner.fetching.lock().await;
        {
            let st = inner.state.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(c) = &st.token {
                if Instant::now() < c.usable_until {
                    return Ok(c.token.clone());
                }
            }
            if st.generation != seen_generation {
                if let Some(e) = &st.last_error {
                    // The fetch we waited for failed: share its error instead of asking again.
                    return Err(e.duplicate());
                }
            }
        }
        self.fetch().await
    }

    /// One bounded token request; stores the outcome. Called with the gate held.
    async fn fetch(&self) -> Result<AccessToken> {
        let inner = &*self.inner;
        let timeout = self.fetch_timeout;
        let outcome = match tokio::time::timeout(timeout, inner.source.token()).await {
            Err(_) => Err(auth_error(format!(
                "no access token within {timeout:?} (token request timed out)"
            ))),
            Ok(Err(e)) => Err(auth_error(format!(
                "could not get an access token: {}",
                e.message()
            ))
            .with_source(e)),
            Ok(Ok(token)) => check_token_chars(token.expose_secret()).and_then(|()| {
                let left = token.expires_on() - OffsetDateTime::now_utc();
                if left <= time::Duration::ZERO {
                    return Err(auth_error("the token source returned an expired token"));
                }
                Ok(token)
            }),
        };
        let now = Instant::now();
        let mut st = inner.state.lock().unwrap_or_else(|p| p.into_inner());
        st.generation += 1;
        match outcome {
            Ok(token) => {
                let left: Duration = (token.expires_on() - OffsetDateTime::now_utc())
                    .try_into()
                    .unwrap_or_default();
                let ahead = REFRESH_AHEAD.min(left / 2);
                let margin = MIN_REMAINING.min(left / 4);
                st.token = Some(Cached {
                    token: token.clone(),
                    refresh_at: now + (left - ahead),
                    usable_until: now + (left - margin),
                });
                st.last_error = None;
                st.failed_at = None;
                tracing::debug!(expires_on = %token.expires_on(), "access token refreshed");
                Ok(token)
            }
            Err(e) => {
                st.last_error = Some(e.duplicate());
                st.failed_at = Some(now);
                Err(e)
            }
        }
    }
}

fn auth_error(message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Auth, message).with_sent(RequestSent::No)
}

impl fmt::Debug for TokenCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let st = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        f.debug_struct("TokenCache")
            .field(
                "expires_on",
                &st.token.as_ref().map(|c| c.token.expires_on()),
            )
            .field("fetch_timeout", &self.fetch_timeout)
            .finish_non_exhaustive()
    }
}

impl TokenProvider for TokenCache {
    fn token(&self) -> Pin<Box<dyn Future<Output = Result<AccessToken>> + Send + '_>> {
        Box::pin(self.get())
    }

    /// Forgets `token` if it is the cached one, so the next request fetches a new token (one
    /// fetch for all the requests that were refused at once: they meet at the single-flight
    /// gate). A token cached since then is kept.
    fn token_rejected(&self, token: &AccessToken) -> bool {
        let mut st = self.inner.state.lock().unwrap_or_else(|p| p.into_inner());
        if st
            .token
            .as_ref()
            .is_some_and(|c| Arc::ptr_eq(&c.token.token, &token.token))
        {
            st.token = None;
            tracing::debug!("access token refused by the service; it will be fetched again");
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &str = "eyJhbGciOiJub25lIn0.eyJleHAiOjQxMDI0NDQ4MDB9.c2VjcmV0";

    #[test]
    fn static_tokens_read_the_jwt_expiry_and_hide_the_token() {
        let t = StaticToken::new(SECRET).unwrap();
        assert_eq!(t.0.expires_on().unix_timestamp(), 4_102_444_800);
        let opaque = StaticToken::new("opaque-token").unwrap();
        assert!(opaque.0.expires_on().year() == 9999);
        assert!(StaticToken::new("").is_err());
        assert!(StaticToken::new("two words").is_err());
        let cred = crate::credential::Credential::bearer(t.clone());
        for shown in [format!("{t:?}"), format!("{:?}", t.0), format!("{cred:?}")] {
            assert!(!shown.contains("c2VjcmV0"), "{shown}");
        }
    }

    #[tokio::test]
    async fn the_cache_hides_the_token_and_refuses_unsendable_ones() {
        let cache = TokenCache::new(StaticToken(AccessToken::new(
            SECRET,
            OffsetDateTime::now_utc() + time::Duration::hours(1),
        )));
        assert_eq!(cache.get().await.unwrap().expose_secret(), SECRET);
        assert!(!format!("{cache:?}").contains("c2VjcmV0"));

        let bad = TokenCache::new(StaticToken(AccessToken::new(
            "line\nbreak",
            OffsetDateTime::now_utc() + time::Duration::hours(1),
        )));
        let e = bad.get().await.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth);
        assert_eq!(e.request_sent(), RequestSent::No);
        assert!(!e.to_string().contains("break"), "{e}");
    }
}
