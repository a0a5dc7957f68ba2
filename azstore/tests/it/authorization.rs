//! Every request authorized: Shared Key signing on Blob, Queue and Table (with paths, queries
//! and headers that need encoding), SAS tokens (a tampered one refused), a wrong key as a typed
//! 403, and a bearer-token source asked on every attempt. Against Azurite and a scripted server.

use azstore::http::{ClientOptions, Method, Pipeline, Request};
use azstore::{
    ErrorKind, Service, credential::Credential, credential::SharedKeyCredential, sas::SasBuilder,
};
use testkit as support;
use testkit::scripted::{Reply, Scripted};

fn list_request(service: Service) -> Request {
    match service {
        Service::Table => Request::new(Method::Get, "Tables")
            .header("accept", "application/json;odata=nometadata"),
        _ => Request::new(Method::Get, "").query("comp", "list"),
    }
}

#[tokio::test]
async fn shared_key_signing_works_on_blob_queue_and_table() {
    let account = support::account();
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&account, svc, ClientOptions::default()).unwrap();
        let resp = p
            .send(list_request(svc))
            .await
            .unwrap_or_else(|e| panic!("{svc:?}: {e}"));
        assert_eq!(resp.status, 200, "{svc:?}");
    }
}

#[tokio::test]
async fn signing_covers_paths_queries_and_headers_that_need_encoding() {
    let account = support::account();
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let c = blobs.container(&support::unique("sign")).unwrap();
    c.create().await.unwrap();
    for name in ["plain", "with space", "uni/ü€/漢字", "hash#q?p%25&amp=x+y"] {
        let b = c.blob(name).unwrap();
        b.put(
            "x",
            &azstore::blob::PutOptions::new(azstore::Conditions::none())
                .meta("note", "  two   spaces  "),
        )
        .await
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        let got = b.download().await.unwrap();
        assert_eq!(&got.body[..], b"x", "{name}");
        assert_eq!(
            got.properties.metadata.get("note").map(String::as_str),
            Some("two   spaces"),
            "{name}: {:?}",
            got.properties
        );
    }
}

#[tokio::test]
async fn wrong_key_is_a_typed_403_on_every_service() {
    let good = support::account();
    let bad = good.clone().with_credential(Credential::SharedKey(
        SharedKeyCredential::new(good.name(), "d3Jvbmcga2V5IHdyb25nIGtleQ==").unwrap(),
    ));
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&bad, svc, testkit::fast_retry(3)).unwrap();
        let err = p.send(list_request(svc)).await.unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Auth, "{svc:?}: {err}");
        assert_eq!(err.status(), Some(403), "{svc:?}");
        assert!(!err.is_retryable());
        assert!(err.error_code().is_some(), "{svc:?} error code: {err:?}");
    }
}

#[tokio::test]
async fn sas_tokens_authorize_and_a_tampered_one_is_refused() {
    let account = support::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("shared key")
    };
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let blobs = azstore::blob::BlobServiceClient::new(&account).unwrap();
    let name = support::unique("sas");
    blobs.container(&name).unwrap().create().await.unwrap();

    // container SAS: write and read a blob
    let sas = SasBuilder::new("rcw", expiry)
        .container(&key, &name)
        .unwrap();
    let sas_account = account.clone().with_credential(Credential::Sas(sas));
    let b = azstore::blob::BlobServiceClient::new(&sas_account)
        .unwrap()
        .container(&name)
        .unwrap()
        .blob("f")
        .unwrap();
    b.upload("via sas", &azstore::Conditions::none())
        .await
        .unwrap();
    assert_eq!(&b.download().await.unwrap().body[..], b"via sas");

    // read-only blob SAS cannot write
    let ro = SasBuilder::new("r", expiry).blob(&key, &name, "f").unwrap();
    let ro_blob = azstore::blob::BlobServiceClient::new(
        &account.clone().with_credential(Credential::Sas(ro)),
    )
    .unwrap()
    .container(&name)
    .unwrap()
    .blob("f")
    .unwrap();
    assert_eq!(&ro_blob.download().await.unwrap().body[..], b"via sas");
    let err = ro_blob
        .upload("no", &azstore::Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth, "{err}");

    // account SAS on queue and table
    let acct_sas = SasBuilder::new("rl", expiry)
        .account(&key, "bqt", "sco")
        .unwrap();
    let sas_acct = account
        .clone()
        .with_credential(Credential::Sas(acct_sas.clone()));
    for svc in [Service::Blob, Service::Queue, Service::Table] {
        let p = Pipeline::new(&sas_acct, svc, ClientOptions::default()).unwrap();
        p.send(list_request(svc))
            .await
            .unwrap_or_else(|e| panic!("{svc:?}: {e}"));
    }

    // tampered signature
    let raw = acct_sas.expose_secret().replace("sig=", "sig=AAAA");
    let tampered = account.with_credential(Credential::Sas(
        azstore::credential::SasToken::new(raw).unwrap(),
    ));
    let p = Pipeline::new(&tampered, Service::Blob, testkit::fast_retry(3)).unwrap();
    let err = p.send(list_request(Service::Blob)).await.unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Auth);
    assert!(!format!("{err} {err:?}").contains("AAAA"));
}

struct FixedToken(&'static str);

impl azstore::credential::TokenProvider for FixedToken {
    fn token(
        &self,
    ) -> std::pin::Pin<
        Box<
            dyn std::future::Future<Output = azstore::Result<azstore::credential::AccessToken>>
                + Send
                + '_,
        >,
    > {
        let expires = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600);
        Box::pin(async move { Ok(azstore::credential::AccessToken::new(self.0, expires)) })
    }
}

#[tokio::test]
async fn bearer_token_hook_is_asked_on_every_attempt() {
    let server = Scripted::start(vec![Reply::status(503), Reply::status(200)]).await;
    let account = server
        .account()
        .with_credential(Credential::Bearer(std::sync::Arc::new(FixedToken(
            "tok-123",
        ))));
    // The scripted server speaks plain HTTP on loopback: tokens go there only on explicit opt-in.
    let options = testkit::fast_retry(3).transport(
        azstore::http::TransportOptions::default().allow_bearer_over_http_to_loopback(true),
    );
    let p = Pipeline::new(&account, Service::Blob, options).unwrap();
    p.send(Request::new(Method::Get, "c/b")).await.unwrap();
    let reqs = server.requests();
    assert_eq!(reqs.len(), 2);
    for r in reqs {
        assert_eq!(r.header("authorization"), Some("Bearer tok-123"));
    }
    assert!(!format!("{account:?}").contains("tok-123"));
}
