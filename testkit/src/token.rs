//! A local token issuer for the bearer-token tests: JWTs that Azurite's `--oauth basic` accepts
//! (it checks `iss` against the Entra ID prefixes, `aud` against the storage audiences, and
//! `nbf`/`exp`/`iat`; it does not check signatures), a counting [`TokenProvider`], and an HTTPS
//! OAuth token endpoint that `azure_identity`'s `ClientSecretCredential` can be pointed at.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use azstore::{credential::AccessToken, credential::TokenProvider};
use base64::Engine;
use time::OffsetDateTime;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The audience of Azure Storage tokens.
pub const STORAGE_AUDIENCE: &str = "https://storage.azure.com";
/// An issuer Azurite accepts (Entra ID's v1 issuer with a made-up tenant).
pub const ISSUER: &str = "https://sts.windows.net/00000000-0000-0000-0000-00000000a2a2/";
/// The made-up tenant of [`ISSUER`].
pub const TENANT: &str = "00000000-0000-0000-0000-00000000a2a2";

/// An unsigned JWT (`alg: none` shape, with a dummy signature segment) for `audience`, expiring
/// `lifetime` from now (negative: already expired). Returns the token and its `exp`.
pub fn jwt(audience: &str, lifetime: time::Duration) -> (String, OffsetDateTime) {
    let now = OffsetDateTime::now_utc();
    let exp = now + lifetime;
    let b64 = |v: &serde_json::Value| {
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(v.to_string().as_bytes())
    };
    let header = serde_json::json!({"typ": "JWT", "alg": "RS256"});
    let claims = serde_json::json!({
        "aud": audience,
        "iss": ISSUER,
        "iat": now.unix_timestamp() - 60,
        "nbf": now.unix_timestamp() - 60,
        "exp": exp.unix_timestamp(),
        "oid": uuid::Uuid::new_v4().to_string(),
        "tid": TENANT,
    });
    let token = format!("{}.{}.c2lnbmF0dXJl", b64(&header), b64(&claims));
    (
        token,
        OffsetDateTime::from_unix_timestamp(exp.unix_timestamp()).expect("valid"),
    )
}

/// What [`CountingTokens`] does when asked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Issue a token for the storage audience.
    Issue,
    /// Issue a token for another audience (Azurite: 403 "Invalid token audience").
    WrongAudience,
    /// Fail with an authentication error.
    Fail,
    /// Never answer.
    Hang,
}

/// A [`TokenProvider`] that mints JWTs of a fixed lifetime and counts how often it was asked.
pub struct CountingTokens {
    lifetime: time::Duration,
    delay: Duration,
    behaviour: Behaviour,
    calls: Arc<AtomicU64>,
}

impl CountingTokens {
    /// Tokens valid for `lifetime`, issued at once.
    pub fn new(lifetime: Duration) -> CountingTokens {
        CountingTokens {
            lifetime: time::Duration::try_from(lifetime).expect("small duration"),
            delay: Duration::ZERO,
            behaviour: Behaviour::Issue,
            calls: Arc::new(AtomicU64::new(0)),
        }
    }

    /// Tokens that are already expired (`exp` in the past), as a stale cache elsewhere would give.
    pub fn expired() -> CountingTokens {
        let mut t = CountingTokens::new(Duration::ZERO);
        t.lifetime = time::Duration::seconds(-120);
        t
    }

    /// Takes `delay` to answer (so that concurrent cold requests overlap).
    pub fn with_delay(mut self, delay: Duration) -> CountingTokens {
        self.delay = delay;
        self
    }

    /// Behaves as `b`.
    pub fn behaving(mut self, b: Behaviour) -> CountingTokens {
        self.behaviour = b;
        self
    }

    /// A handle on the call counter.
    pub fn counter(&self) -> Arc<AtomicU64> {
        self.calls.clone()
    }
}

impl TokenProvider for CountingTokens {
    fn token(
        &self,
    ) -> std::pin::Pin<
        Box<dyn std::future::Future<Output = azstore::Result<AccessToken>> + Send + '_>,
    > {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            let audience = match self.behaviour {
                Behaviour::Issue => STORAGE_AUDIENCE,
                Behaviour::WrongAudience => "https://vault.azure.net",
                Behaviour::Fail => {
                    return Err(azstore::Error::new(
                        azstore::ErrorKind::Auth,
                        "the test token source refuses",
                    ));
                }
                Behaviour::Hang => std::future::pending().await,
            };
            let (token, exp) = jwt(audience, self.lifetime);
            Ok(AccessToken::new(token, exp))
        })
    }
}

/// An HTTPS OAuth 2.0 token endpoint (client-credentials grant) on 127.0.0.1, using the test
/// certificate: `POST /{tenant}/oauth2/v2.0/token` answers
/// `{"token_type":"Bearer","expires_in":N,"access_token":JWT}` for the scope it was asked.
pub struct TokenIssuer {
    /// Its port on 127.0.0.1.
    pub port: u16,
    requests: Arc<AtomicU64>,
    scopes: Arc<std::sync::Mutex<Vec<String>>>,
    task: tokio::task::JoinHandle<()>,
}

impl Drop for TokenIssuer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl TokenIssuer {
    /// Starts an issuer whose tokens live `lifetime` (Entra ID reports whole seconds).
    pub async fn start(lifetime: Duration) -> TokenIssuer {
        let listener = TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let acceptor = tokio_rustls::TlsAcceptor::from(crate::tls::server_config());
        let requests = Arc::new(AtomicU64::new(0));
        let scopes = Arc::new(std::sync::Mutex::new(Vec::new()));
        let (rq, sc) = (requests.clone(), scopes.clone());
        let task = tokio::spawn(async move {
            loop {
                let Ok((sock, _)) = listener.accept().await else {
                    return;
                };
                let (acceptor, rq, sc) = (acceptor.clone(), rq.clone(), sc.clone());
                tokio::spawn(async move {
                    let Ok(mut tls) = acceptor.accept(sock).await else {
                        return;
                    };
                    let Some((head, body)) = read_request(&mut tls).await else {
                        return;
                    };
                    rq.fetch_add(1, Ordering::SeqCst);
                    let form: Vec<(String, String)> = body
                        .split('&')
                        .filter_map(|p| p.split_once('='))
                        .map(|(k, v)| (decode(k), decode(v)))
                        .collect();
                    let field = |n: &str| {
                        form.iter()
                            .find(|(k, _)| k == n)
                            .map(|(_, v)| v.clone())
                            .unwrap_or_default()
                    };
                    let ok = head.starts_with("POST ")
                        && head.contains("/oauth2/v2.0/token")
                        && field("grant_type") == "client_credentials"
                        && !field("client_secret").is_empty();
                    let scope = field("scope");
                    sc.lock().unwrap().push(scope.clone());
                    let (status, json) = if ok {
                        let audience = scope.trim_end_matches("/.default").to_string();
                        let secs = lifetime.as_secs() as i64;
                        let (token, _) = jwt(&audience, time::Duration::seconds(secs));
                        (
                            "200 OK",
                            serde_json::json!({
                                "token_type": "Bearer",
                                "expires_in": secs,
                                "ext_expires_in": secs,
                                "access_token": token,
                            }),
                        )
                    } else {
                        (
                            "400 Bad Request",
                            serde_json::json!({
                                "error": "invalid_request",
                                "error_description": "test issuer: not a client-credentials request",
                                "error_codes": [900144],
                            }),
                        )
                    };
                    let body = json.to_string();
                    let resp = format!(
                        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                        body.len()
                    );
                    let _ = tls.write_all(resp.as_bytes()).await;
                    let _ = tls.shutdown().await;
                });
            }
        });
        TokenIssuer {
            port,
            requests,
            scopes,
            task,
        }
    }

    /// `https://127.0.0.1:PORT`: the authority host for `azure_identity`.
    pub fn authority_host(&self) -> String {
        format!("https://127.0.0.1:{}", self.port)
    }

    /// How many token requests it answered.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    /// The scopes it was asked for, in order.
    pub fn scopes(&self) -> Vec<String> {
        self.scopes.lock().unwrap().clone()
    }
}

async fn read_request<S: tokio::io::AsyncRead + Unpin>(s: &mut S) -> Option<(String, String)> {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        if buf.len() > 64 * 1024 {
            return None;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse::<usize>().ok())?
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let n = s.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = String::from_utf8_lossy(&buf[head_end..head_end + len]).to_string();
    Some((head, body))
}

fn decode(s: &str) -> String {
    percent_encoding::percent_decode_str(&s.replace('+', " "))
        .decode_utf8_lossy()
        .into_owned()
}
