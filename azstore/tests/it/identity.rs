//! Bearer tokens (Microsoft Entra ID) end to end: over HTTPS against the Azurite that
//! `scripts/azurite run` starts with a test-time certificate and `--oauth basic` (which checks
//! each token's audience, issuer and expiry), against the local File service (which also
//! requires the File intent header), and the token cache's contract (one token request for a
//! cold burst, refresh ahead of expiry, typed errors in bounded time).
//!
//! Token sources: `testkit::token::CountingTokens` (a local issuer of short-lived JWTs that
//! counts how often it is asked) and, with the `identity` feature, `azure_identity`'s own
//! `ClientSecretCredential` pointed at `testkit::token::TokenIssuer`, an HTTPS OAuth token
//! endpoint on loopback.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use azstore::http::{Method, Pipeline, Request, TransportOptions};
use azstore::{
    Conditions, ErrorKind, RequestSent, Service, blob::BlobServiceClient, credential::Credential,
    credential::TokenCache, http::ClientOptions,
};
use testkit::scripted::{Reply, Scripted};
use testkit::token::{Behaviour, CountingTokens};

fn https_options() -> ClientOptions {
    ClientOptions::default().transport(testkit::tls::transport())
}

/// A blob round trip, a queue message and a table entity with `credential` on the HTTPS Azurite.
async fn tour(credential: Credential) -> azstore::Result<()> {
    let account = testkit::tls::https_account().with_credential(credential);
    let blobs = BlobServiceClient::with_options(&account, https_options())?;
    let container = blobs.container(&testkit::unique("tok"))?;
    container.create().await?;
    let blob = container.blob("b.txt")?;
    blob.upload("hello", &Conditions::none()).await?;
    assert_eq!(&blob.download().await?.body[..], b"hello");

    let queues = azstore::queue::QueueServiceClient::with_options(&account, https_options())?;
    let queue = queues.queue(&testkit::unique("tok"))?;
    queue.create_if_not_exists().await?;
    queue.put_message("m").await?;
    assert!(
        queue
            .receive_message(Duration::from_secs(30))
            .await?
            .is_some()
    );

    let tables = azstore::table::TableServiceClient::with_options(&account, https_options())?;
    let table = tables.table(&testkit::unique("tok"))?;
    table.create().await?;
    table
        .insert(&serde_json::json!({"PartitionKey": "p", "RowKey": "r", "n": 1}))
        .await?;
    Ok(())
}

#[tokio::test]
async fn valid_tokens_are_accepted_by_blob_queue_and_table_over_https() {
    let source = CountingTokens::new(Duration::from_secs(3600));
    let calls = source.counter();
    tour(Credential::bearer(source)).await.unwrap();
    assert_eq!(
        calls.load(Ordering::SeqCst),
        1,
        "one token for the whole tour"
    );
}

#[tokio::test]
async fn the_test_ca_is_needed_and_sufficient() {
    // Without the extra root the TLS handshake fails (the certificate is not in any store) ...
    let account = testkit::tls::https_account();
    let plain = BlobServiceClient::new(&account).unwrap();
    let err = plain
        .container(&testkit::unique("tls"))
        .unwrap()
        .create()
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Transport, "{err}");
    // ... and with it (only it: no built-in roots) the same request succeeds.
    let trusted = BlobServiceClient::with_options(&account, https_options()).unwrap();
    trusted
        .container(&testkit::unique("tls"))
        .unwrap()
        .create()
        .await
        .unwrap();
}

#[tokio::test]
async fn every_built_in_root_choice_adds_the_extra_ca_and_alone_refuses_the_test_server() {
    // The test CA is in no built-in store: with each choice the handshake fails until the CA is
    // added, and then succeeds (the added roots are merged with the built-in ones).
    let account = testkit::tls::https_account();
    for roots in [
        azstore::http::TlsRoots::Bundled,
        azstore::http::TlsRoots::Native,
        azstore::http::TlsRoots::BundledAndNative,
    ] {
        let create = |transport: TransportOptions| {
            let account = account.clone();
            async move {
                BlobServiceClient::with_options(
                    &account,
                    ClientOptions::default().transport(transport),
                )
                .unwrap()
                .container(&testkit::unique("roots"))
                .unwrap()
                .create()
                .await
            }
        };
        let alone = TransportOptions::default().tls_roots(roots);
        let err = create(alone.clone()).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Transport, "{roots:?}: {err}");
        let with_ca = alone
            .add_root_certificates_pem(&testkit::tls::ca_pem())
            .unwrap();
        create(with_ca)
            .await
            .unwrap_or_else(|e| panic!("{roots:?} with the test CA: {e}"));
    }
}

/// Raw bearer credentials (no cache) so the service, not azstore, judges the token.
fn uncached(source: CountingTokens) -> Credential {
    Credential::Bearer(Arc::new(source))
}

#[tokio::test]
async fn expired_and_wrong_audience_tokens_are_typed_auth_errors_on_every_service() {
    for (what, source) in [
        ("expired", CountingTokens::expired()),
        (
            "wrong audience",
            CountingTokens::new(Duration::from_secs(3600)).behaving(Behaviour::WrongAudience),
        ),
    ] {
        let account = testkit::tls::https_account().with_credential(uncached(source));
        let container = BlobServiceClient::with_options(&account, https_options())
            .unwrap()
            .container(&testkit::unique("bad"))
            .unwrap();
        let queue = azstore::queue::QueueServiceClient::with_options(&account, https_options())
            .unwrap()
            .queue(&testkit::unique("bad"))
            .unwrap();
        let table = azstore::table::TableServiceClient::with_options(&account, https_options())
            .unwrap()
            .table(&testkit::unique("bad"))
            .unwrap();
        let errors = [
            ("blob", container.create().await.map(|_| ())),
            ("queue", queue.create_if_not_exists().await.map(|_| ())),
            ("table", table.create().await),
        ];
        for (svc, r) in errors {
            let e = r.expect_err(&format!("{what} token accepted by {svc}"));
            assert_eq!(e.kind(), ErrorKind::Auth, "{what}/{svc}: {e}");
            assert_eq!(e.status(), Some(403), "{what}/{svc}: {e}");
            assert_eq!(e.request_sent(), RequestSent::Yes);
            assert!(!e.to_string().contains("eyJ"), "token in error: {e}");
        }
    }
}

#[tokio::test]
async fn the_cache_refuses_an_expired_token_before_sending() {
    let server = Scripted::start(vec![Reply::status(200)]).await;
    let account = server
        .account()
        .with_credential(Credential::bearer(CountingTokens::expired()));
    let options = ClientOptions::default()
        .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true));
    let p = Pipeline::new(&account, Service::Blob, options).unwrap();
    let e = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert_eq!(e.request_sent(), RequestSent::No);
    assert_eq!(server.count(), 0);
}

#[tokio::test]
async fn bearer_tokens_never_go_over_plain_http_unless_to_loopback_on_opt_in() {
    let server = Scripted::start(vec![Reply::status(200)]).await;
    let source = CountingTokens::new(Duration::from_secs(3600));
    let calls = source.counter();
    let account = server.account().with_credential(Credential::bearer(source));

    // Default: refused before sending, before even asking for a token.
    let p = Pipeline::new(&account, Service::Blob, ClientOptions::default()).unwrap();
    let e = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.request_sent(), RequestSent::No);
    assert!(e.message().contains("plain HTTP"), "{e}");
    assert_eq!(server.count(), 0);
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // The opt-in does not cover other hosts.
    let remote = account
        .clone()
        .with_endpoint(Service::Blob, "http://storage.example.invalid/acct")
        .unwrap();
    let allow = ClientOptions::default()
        .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true));
    let p = Pipeline::new(&remote, Service::Blob, allow.clone()).unwrap();
    let e = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    // Loopback with the opt-in: sent, with the token.
    let p = Pipeline::new(&account, Service::Blob, allow).unwrap();
    p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    assert_eq!(server.count(), 1);
    let auth = server.requests()[0]
        .header("authorization")
        .unwrap()
        .to_string();
    assert!(auth.starts_with("Bearer eyJ"), "{auth}");
}

/// Azure answers a revoked token, or one that expired before its `exp` said, with 401
/// `InvalidAuthenticationInfo` and a `WWW-Authenticate` challenge. Azurite answers such tokens
/// with 403 (see the test above), so the scripted server plays the service here.
#[tokio::test]
async fn a_token_refused_with_401_is_fetched_again_and_the_request_repeated_once() {
    let refused = Reply::with(
        401,
        &[
            ("x-ms-error-code", "InvalidAuthenticationInfo"),
            (
                "www-authenticate",
                "Bearer authorization_uri=https://login.microsoftonline.com/t/oauth2/authorize \
                 resource_id=https://storage.azure.com",
            ),
        ],
        b"",
    );
    let server = Scripted::start(vec![
        refused.clone(),
        Reply::status(200),
        refused.clone(),
        refused,
        Reply::status(403),
    ])
    .await;
    let source = CountingTokens::new(Duration::from_secs(3600));
    let calls = source.counter();
    let account = server.account().with_credential(Credential::bearer(source));
    let options = ClientOptions::default()
        .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true));
    let p = Pipeline::new(&account, Service::Blob, options).unwrap();

    // Refused, forgotten, fetched again, repeated at once: the caller sees the 200.
    p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    assert_eq!(server.count(), 2);
    assert_eq!(
        calls.load(Ordering::SeqCst),
        2,
        "the refused token was kept"
    );

    // Refused twice: repeated once only, then the 401 is the caller's answer.
    let e = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(e.status(), Some(401), "{e}");
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert_eq!(
        e.error_code().map(|c| c.as_str()),
        Some("InvalidAuthenticationInfo")
    );
    assert_eq!(server.count(), 4);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
    assert!(!e.to_string().contains("eyJ"), "token in error: {e}");

    // A 403 (no permission) is an answer about the request, not the token: no new token.
    let e = p.send(Request::new(Method::Get, "c/b")).await.unwrap_err();
    assert_eq!(e.status(), Some(403), "{e}");
    assert_eq!(server.count(), 5);
    assert_eq!(calls.load(Ordering::SeqCst), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixty_four_cold_requests_cause_one_token_request() {
    let setup = testkit::tls::https_account();
    let container = BlobServiceClient::with_options(&setup, https_options())
        .unwrap()
        .container(&testkit::unique("cold"))
        .unwrap();
    container.create().await.unwrap();
    container
        .blob("b")
        .unwrap()
        .upload("x", &Conditions::none())
        .await
        .unwrap();

    // The source takes 200 ms, so all 64 requests find the cache cold.
    let source =
        CountingTokens::new(Duration::from_secs(3600)).with_delay(Duration::from_millis(200));
    let calls = source.counter();
    let account = setup.with_credential(Credential::bearer(source));
    let blob = BlobServiceClient::with_options(&account, https_options())
        .unwrap()
        .container(container.name())
        .unwrap()
        .blob("b")
        .unwrap();
    let tasks: Vec<_> = (0..64)
        .map(|_| {
            let blob = blob.clone();
            tokio::spawn(async move { blob.get_properties().await })
        })
        .collect();
    for t in tasks {
        t.await.unwrap().unwrap();
    }
    assert_eq!(calls.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn short_lived_tokens_are_refreshed_before_they_expire() {
    // 4 s tokens: refreshed with 2 s left, never used with less than 1 s left. Azurite rejects
    // an expired token, so every request succeeding over 5 s shows no request saw one.
    let source = CountingTokens::new(Duration::from_secs(4));
    let calls = source.counter();
    let account = testkit::tls::https_account().with_credential(Credential::bearer(source));
    let container = BlobServiceClient::with_options(&account, https_options())
        .unwrap()
        .container(&testkit::unique("short"))
        .unwrap();
    container.create().await.unwrap();
    let start = std::time::Instant::now();
    let mut requests = 0;
    while start.elapsed() < Duration::from_secs(5) {
        container
            .get_properties()
            .await
            .unwrap_or_else(|e| panic!("request {requests} failed: {e}"));
        requests += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let fetched = calls.load(Ordering::SeqCst);
    assert!(
        (2..=4).contains(&fetched),
        "{fetched} token requests for {requests} requests over 5 s"
    );
}

#[tokio::test(start_paused = true)]
async fn refresh_happens_in_the_last_five_minutes_not_before() {
    let source = CountingTokens::new(Duration::from_secs(3600));
    let calls = source.counter();
    let cache = TokenCache::new(source);
    let first = cache.get().await.unwrap();
    // 54 minutes later (6 minutes left): still the same token, no request.
    tokio::time::advance(Duration::from_secs(54 * 60)).await;
    let again = cache.get().await.unwrap();
    assert_eq!(again.expose_secret(), first.expose_secret());
    assert_eq!(calls.load(Ordering::SeqCst), 1);
    // 4 min 59 s left: refreshed.
    tokio::time::advance(Duration::from_secs(61)).await;
    cache.get().await.unwrap();
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    assert!(!format!("{cache:?}").contains(first.expose_secret()));
}

#[tokio::test(start_paused = true)]
async fn a_failing_or_silent_token_source_is_a_typed_error_within_the_fetch_timeout() {
    let server = Scripted::start(vec![Reply::status(200)]).await;
    let allow = ClientOptions::default()
        .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true));
    for behaviour in [Behaviour::Fail, Behaviour::Hang] {
        let source = CountingTokens::new(Duration::from_secs(3600)).behaving(behaviour);
        let calls = source.counter();
        let cache = TokenCache::new(source).with_fetch_timeout(Duration::from_millis(500));
        let account = server
            .account()
            .with_credential(Credential::bearer_cached(cache));
        let p = Pipeline::new(&account, Service::Blob, allow.clone()).unwrap();
        let start = tokio::time::Instant::now();
        let tasks: Vec<_> = (0..64)
            .map(|_| {
                let p = p.clone();
                tokio::spawn(async move { p.send(Request::new(Method::Get, "c/b")).await })
            })
            .collect();
        for t in tasks {
            let e = t.await.unwrap().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Auth, "{behaviour:?}: {e}");
            assert_eq!(e.request_sent(), RequestSent::No);
        }
        // One token request for the whole burst, not one per request, and not retried.
        assert_eq!(calls.load(Ordering::SeqCst), 1, "{behaviour:?}");
        assert!(
            start.elapsed() <= Duration::from_millis(500),
            "{behaviour:?}: {:?}",
            start.elapsed()
        );
        assert_eq!(server.count(), 0);
    }
}

#[tokio::test]
async fn file_requests_with_a_token_carry_the_intent_header() {
    let server = testkit::file_server::FileServer::start().await;
    let source = CountingTokens::new(Duration::from_secs(3600));
    let account = server.account().with_credential(Credential::bearer(source));
    let options = ClientOptions::default()
        .transport(TransportOptions::default().allow_bearer_over_http_to_loopback(true));
    let share = azstore::file::ShareServiceClient::with_options(&account, options)
        .unwrap()
        .share(&testkit::unique("tok"))
        .unwrap();
    share.create().await.unwrap();
    let file = share.file("f.txt").unwrap();
    file.create(3, None).await.unwrap();
    assert_eq!(server.file_content(share.name(), "f.txt").unwrap().len(), 3);

    // The server insists on the header, as Azure does: the same token without it is refused.
    let (token, _) =
        testkit::token::jwt(testkit::token::STORAGE_AUDIENCE, time::Duration::hours(1));
    let url = format!("{}/{}?restype=share", server.endpoint(), share.name());
    let bare = crate::bare_http()
        .get(&url)
        .header("authorization", format!("Bearer {token}"))
        .header("x-ms-version", azstore::storage::API_VERSION)
        .send()
        .await
        .unwrap();
    assert_eq!(bare.status().as_u16(), 400);
    let with = crate::bare_http()
        .get(&url)
        .header("authorization", format!("Bearer {token}"))
        .header("x-ms-version", azstore::storage::API_VERSION)
        .header("x-ms-file-request-intent", "backup")
        .send()
        .await
        .unwrap();
    assert_eq!(with.status().as_u16(), 200);
}

#[tokio::test]
async fn an_explicit_proxy_carries_the_requests() {
    // The scripted server plays the proxy: a plain-HTTP request through a proxy is sent in
    // absolute form to the proxy, whatever host the endpoint names.
    let proxy = Scripted::start(vec![Reply::status(200)]).await;
    let account = proxy
        .account()
        .with_endpoint(Service::Blob, "http://acct.blob.example.invalid")
        .unwrap();
    let options = ClientOptions::default().transport(
        TransportOptions::default()
            .proxy(&format!("http://user:pw@127.0.0.1:{}", proxy.port))
            .unwrap(),
    );
    assert!(!format!("{options:?}").contains("pw@"), "{options:?}");
    let p = Pipeline::new(&account, Service::Blob, options).unwrap();
    p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    let r = &proxy.requests()[0];
    assert!(
        r.target.starts_with("http://acct.blob.example.invalid/c/b"),
        "{}",
        r.target
    );
    assert!(r.header("proxy-authorization").is_some());
}

#[cfg(feature = "identity")]
mod entra {
    use super::*;
    use azstore::credential::entra::{self, azure_core, azure_identity};
    use testkit::token::TokenIssuer;

    /// Client options for `azure_identity` whose token requests go to `authority` through
    /// azstore's transport trusting the test CA.
    fn pointed_at(authority: String) -> azure_core::http::ClientOptions {
        let mut options = entra::client_options(&testkit::tls::transport()).unwrap();
        let mut cloud = azure_core::cloud::CustomConfiguration::default();
        cloud.authority_host = authority;
        options.cloud = Some(Arc::new(cloud.into()));
        options
    }

    /// A client-secret credential of the test tenant whose token requests go by `client_options`.
    fn client_secret(
        client_options: azure_core::http::ClientOptions,
    ) -> Arc<azure_identity::ClientSecretCredential> {
        azure_identity::ClientSecretCredential::new(
            testkit::token::TENANT,
            "00000000-0000-0000-0000-0000000c11e7".to_string(),
            "test-client-secret".to_string().into(),
            Some(azure_identity::ClientSecretCredentialOptions { client_options }),
        )
        .unwrap()
    }

    #[tokio::test]
    async fn azure_identity_client_secret_credential_against_a_local_token_endpoint() {
        let issuer = TokenIssuer::start(Duration::from_secs(3600)).await;
        let client_options = pointed_at(issuer.authority_host());
        let credential = client_secret(client_options);
        tour(Credential::entra(credential)).await.unwrap();
        assert_eq!(
            issuer.requests(),
            1,
            "the cache asked once for the whole tour"
        );
        assert_eq!(issuer.scopes(), vec!["https://storage.azure.com/.default"]);
    }

    #[tokio::test]
    async fn a_token_endpoint_that_refuses_is_a_typed_auth_error() {
        // Nothing listens at the authority (port 9): the credential cannot get a token.
        let client_options = pointed_at("https://127.0.0.1:9".to_string());
        let credential = client_secret(client_options);
        // A short fetch timeout: azure_core retries a refused connection with backoff.
        let cache = TokenCache::new(entra::EntraTokens(credential))
            .with_fetch_timeout(Duration::from_secs(2));
        let account =
            testkit::tls::https_account().with_credential(Credential::bearer_cached(cache));
        let e = BlobServiceClient::with_options(&account, https_options())
            .unwrap()
            .container(&testkit::unique("refused"))
            .unwrap()
            .create()
            .await
            .unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
        assert_eq!(e.request_sent(), RequestSent::No);
        assert!(!e.to_string().contains("test-client-secret"), "{e}");
    }
}
