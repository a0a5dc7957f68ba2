//! Azure Cache for Redis support, against a real redis-server (started by `scripts/azurite run`,
//! URL in `AZSTORE_REDIS_URL`): the same tests as for blobs — contention loses nothing, a
//! lost reply to the compare-and-set script applies once, a write that lands between the read
//! and the script is a retried conflict, the create race; the
//! Redis lease under `LeaseGuard`; loss signalled before another client can acquire. What
//! every lock guarantees is checked by the lock contract suite (`contract_lock.rs`). Faults go through `testkit::redis::RedisProxy`,
//! a TCP proxy in front of the real server. Independent checks use the `redis` crate directly.

use testkit as support;
use testkit::redis::{RedisProxy, redis_url};

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ::redis::AsyncCommands;
use azstore::lease::{GuardState, LeaseGuard, LeaseLoss, ReleaseOutcome};
use azstore::lock::LockOptions;
use azstore::redis::{RedisClient, RedisConfig, RedisJson, RedisLease};
use azstore::update::{Change, Decision, UpdatePolicy, Versioned, update};
use azstore::{
    ErrorCode, ErrorKind, LeaseId, RequestSent, credential::TokenProvider, lease::Leasable,
    lease::LeaseDuration,
};
use tokio::time::Instant;

fn client_at(url: &str) -> RedisClient {
    RedisClient::new(RedisConfig::from_url(url).unwrap()).unwrap()
}

fn client() -> RedisClient {
    client_at(&redis_url())
}

fn key(prefix: &str) -> String {
    format!("azstore-test:{}", support::unique(prefix))
}

/// A raw connection through the `redis` crate, for checks independent of azstore.
async fn raw() -> ::redis::aio::MultiplexedConnection {
    ::redis::Client::open(redis_url())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap()
}

/// The value of an azstore JSON document at `key`, read without azstore.
async fn raw_value(key: &str) -> Option<serde_json::Value> {
    let s: Option<String> = raw().await.get(key).await.unwrap();
    s.map(|s| serde_json::from_str::<serde_json::Value>(&s).unwrap()["value"].clone())
}

fn policy() -> UpdatePolicy {
    UpdatePolicy::default().max_elapsed(Duration::from_secs(60))
}

fn increment(cur: Option<&u64>) -> Decision<u64> {
    Decision::Write(cur.copied().unwrap_or(0) + 1)
}

#[tokio::test]
async fn lost_compare_and_set_reply_then_another_write_on_top_is_still_recognised() {
    let k = key("lostover");
    client()
        .json::<u64>(&k)
        .unwrap()
        .overwrite(&0)
        .await
        .unwrap();
    let proxy = RedisProxy::start(&redis_url()).await;
    let ours = client_at(&proxy.url()).json::<u64>(&k).unwrap();
    proxy.lose_next_reply_to("EVAL");
    // Our update sends GET (read), EVAL (the compare-and-set script; reply lost), then GET
    // again (the re-read). Let the first GET pass, and hold the re-read until another writer
    // has written on top of our applied write.
    let read = proxy.hold_next("GET");
    let ours_task = tokio::spawn(async move { update(&ours, &policy(), increment).await.unwrap() });
    read.arrived().await;
    let held = proxy.hold_next("GET");
    read.release();
    held.arrived().await;
    assert_eq!(
        proxy.lost(),
        1,
        "the script's reply was lost before the re-read"
    );
    let other = client().json::<u64>(&k).unwrap();
    update(&other, &policy(), increment).await.unwrap();
    held.release();
    let done = ours_task.await.unwrap();
    assert_eq!(proxy.lost(), 1);
    assert_eq!(done.recovered_ambiguous, 1);
    assert_eq!(
        done.etag, None,
        "our write applied, but its version is no longer current"
    );
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(2)));
}

#[tokio::test]
async fn a_write_between_read_and_replace_is_a_conflict_and_update_retries_it() {
    let k = key("between");
    let direct = client().json::<u64>(&k).unwrap();
    direct.overwrite(&0).await.unwrap();
    let proxy = RedisProxy::start(&redis_url()).await;
    let via = client_at(&proxy.url()).json::<u64>(&k).unwrap();

    // A replace whose etag matched when read, but the key changes before the script runs.
    let etag = via.read().await.unwrap().unwrap().etag;
    let held = proxy.hold_next("EVAL");
    let replace = {
        let via = via.clone();
        let etag = etag.clone();
        tokio::spawn(async move { via.replace(&100, &etag, "aaaaaaaaaaaaaaaa").await })
    };
    held.arrived().await;
    direct.overwrite(&7).await.unwrap();
    held.release();
    let err = replace.await.unwrap().unwrap_err();
    assert!(err.is_precondition_failed(), "{err}");
    assert!(err.message().contains("etag is"), "{err}");
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(7)));

    // The same race inside update: counted as a conflict and retried.
    let held = proxy.hold_next("EVAL");
    let task = {
        let via = via.clone();
        tokio::spawn(async move { update(&via, &policy(), increment).await.unwrap() })
    };
    held.arrived().await;
    direct.overwrite(&20).await.unwrap();
    held.release();
    let done = task.await.unwrap();
    assert_eq!(done.conflicts, 1);
    assert_eq!(done.attempts, 2);
    assert_eq!(done.value, Some(21));
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(21)));
}

#[tokio::test]
async fn conditions_follow_the_blob_contract() {
    let k = key("cond");
    let json = client().json::<String>(&k).unwrap();
    assert!(json.read().await.unwrap().is_none());

    // Replace or delete of an absent key: 404-like.
    let e = json
        .replace(&"x".into(), &"nope".into(), "aaaaaaaaaaaaaaaa")
        .await
        .unwrap_err();
    assert!(e.is_not_found(), "{e}");
    assert!(
        json.delete(&"nope".into())
            .await
            .unwrap_err()
            .is_not_found()
    );

    let etag1 = json
        .create(&"one".into(), "aaaaaaaaaaaaaaaa")
        .await
        .unwrap();
    // Create of an existing key: the 409 create race.
    let e = json
        .create(&"two".into(), "bbbbbbbbbbbbbbbb")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");

    let cur = json.read().await.unwrap().unwrap();
    assert_eq!(cur.value, "one");
    assert_eq!(cur.etag, etag1);
    assert_eq!(cur.write_id.as_deref(), Some("aaaaaaaaaaaaaaaa"));

    let etag2 = json
        .replace(&"two".into(), &etag1, "cccccccccccccccc")
        .await
        .unwrap();
    assert_ne!(etag2, etag1, "every write changes the etag");
    // A stale etag is refused and changes nothing.
    let e = json
        .replace(&"three".into(), &etag1, "dddddddddddddddd")
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    let e = json.delete(&etag1).await.unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert_eq!(raw_value(&k).await, Some(serde_json::json!("two")));

    // A replace keeps a time to live set on the key.
    let _: () = raw().await.expire(&k, 600).await.unwrap();
    let etag3 = json
        .replace(&"four".into(), &etag2, "eeeeeeeeeeeeeeee")
        .await
        .unwrap();
    let ttl: i64 = raw().await.ttl(&k).await.unwrap();
    assert!(ttl > 0 && ttl <= 600, "ttl {ttl}");

    json.delete(&etag3).await.unwrap();
    assert!(json.read().await.unwrap().is_none());

    // update's Delete decision and NoChange.
    json.overwrite(&"x".into()).await.unwrap();
    let done = update(&json, &policy(), |_| Decision::Delete)
        .await
        .unwrap();
    assert_eq!(done.change, Change::Deleted);
    let done = update(&json, &policy(), |_| Decision::NoChange)
        .await
        .unwrap();
    assert_eq!(done.change, Change::Unchanged);
    assert!(raw_value(&k).await.is_none());
}

#[tokio::test]
async fn foreign_or_malformed_values_are_errors_not_panics() {
    let k = key("junk");
    let mut con = raw().await;
    let _: () = con.set(&k, "not json").await.unwrap();
    let json = client().json::<u64>(&k).unwrap();
    let e = json.read().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Service, "{e}");
    let e = update(&json, &policy(), increment).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Service, "{e}");
    let left: String = con.get(&k).await.unwrap();
    assert_eq!(left, "not json", "nothing was written");
    // A conditional write over it is refused, whatever the etag, and changes nothing.
    let e = json
        .replace(&1, &"x".into(), "aaaaaaaaaaaaaaaa")
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert!(e.message().contains("no azstore JSON value"), "{e}");
    let left: String = con.get(&k).await.unwrap();
    assert_eq!(left, "not json", "nothing was written");
    // An empty etag is refused before anything is sent.
    let e = json.delete(&"".into()).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.request_sent(), RequestSent::No);

    // A document that another writer wrote with its fields in another order is compared by
    // its etag all the same.
    let _: () = con.set(&k, r#"{"value":5,"etag":"e9"}"#).await.unwrap();
    let e = json
        .replace(&6, &"e8".into(), "aaaaaaaaaaaaaaaa")
        .await
        .unwrap_err();
    assert!(e.message().contains(r#"etag is "e9""#), "{e}");
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(5)));
    let cur = json.read().await.unwrap().unwrap();
    assert_eq!(cur.etag.as_str(), "e9");
    json.replace(&6, &cur.etag, "aaaaaaaaaaaaaaaa")
        .await
        .unwrap();
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(6)));

    // The right shape but the wrong value type.
    let _: () = con.set(&k, r#"{"etag":"e","value":"text"}"#).await.unwrap();
    assert_eq!(json.read().await.unwrap_err().kind(), ErrorKind::Service);

    // Another Redis type at the key: Redis's WRONGTYPE, as a service error with its code.
    let k2 = key("list");
    let _: () = con.lpush(&k2, "x").await.unwrap();
    let e = client().json::<u64>(&k2).unwrap().read().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Service, "{e}");
    assert_eq!(e.error_code(), Some(&ErrorCode::Other("WRONGTYPE".into())));
}

#[tokio::test]
async fn bad_input_is_refused_before_sending_and_unreachable_servers_fail_in_bounded_time() {
    assert_eq!(
        client().json::<u64>("").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        client().lease("").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        client().lock("a{}b").unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    assert_eq!(
        RedisConfig::from_url("http://localhost")
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidInput
    );
    // A value that cannot be serialized (a map with non-string keys) is refused before
    // anything is sent.
    let proxy = RedisProxy::start(&redis_url()).await;
    let maps = client_at(&proxy.url())
        .json::<std::collections::HashMap<(u8, u8), u8>>(&key("map"))
        .unwrap();
    let e = maps
        .create(&[((1, 2), 3)].into_iter().collect(), "aaaaaaaaaaaaaaaa")
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(e.request_sent(), RequestSent::No);
    assert!(proxy.commands().is_empty(), "{:?}", proxy.commands());

    // Nobody listens on this port: a transport error, nothing sent, in bounded time.
    let port = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let dead = RedisClient::new(
        RedisConfig::new("127.0.0.1", port).connect_timeout(Duration::from_secs(2)),
    )
    .unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(30),
        dead.json::<u64>("k").unwrap().read(),
    )
    .await
    .expect("bounded by the client's own timeouts")
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Transport, "{e}");
    assert_eq!(e.request_sent(), RequestSent::No);
    assert!(e.is_retryable());

    // A server that accepts but never answers: the operation timeout ends it.
    let proxy = RedisProxy::start(&redis_url()).await;
    proxy.stall(true);
    let stuck = RedisClient::new(
        RedisConfig::from_url(&proxy.url())
            .unwrap()
            .connect_timeout(Duration::from_secs(1))
            .operation_timeout(Duration::from_secs(1)),
    )
    .unwrap();
    let e = tokio::time::timeout(
        Duration::from_secs(30),
        stuck.json::<u64>("k").unwrap().read(),
    )
    .await
    .expect("bounded by the client's own timeouts")
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Timeout, "{e}");
}

struct FixedToken {
    token: String,
    calls: AtomicU32,
}

impl TokenProvider for FixedToken {
    fn token(
        &self,
    ) -> Pin<Box<dyn Future<Output = azstore::Result<azstore::credential::AccessToken>> + Send + '_>>
    {
        self.calls.fetch_add(1, Ordering::SeqCst);
        let expires = azstore::OffsetDateTime::now_utc() + std::time::Duration::from_secs(3600);
        Box::pin(async move {
            Ok(azstore::credential::AccessToken::new(
                self.token.clone(),
                expires,
            ))
        })
    }
}

#[tokio::test]
async fn entra_token_and_password_auth_work_and_never_leak() {
    // Entra ID on Azure is `AUTH <object id> <token>`: the same as an ACL user whose password
    // is the token. Create such a user on the test server (Azure does it from the portal).
    let user = support::unique("entra");
    let token = format!("eyJ0eXAi{}", support::unique("tok"));
    let mut con = raw().await;
    let _: () = ::redis::cmd("ACL")
        .arg("SETUSER")
        .arg(&user)
        .arg("on")
        .arg(format!(">{token}"))
        .arg("~azstore-test:*")
        .arg("+@all")
        .query_async(&mut con)
        .await
        .unwrap();
    let provider = Arc::new(FixedToken {
        token: token.clone(),
        calls: AtomicU32::new(0),
    });
    let url = redis_url();
    let base = RedisConfig::from_url(&url).unwrap();
    // A token over plain TCP is refused unless the server is local and the test says so.
    let e = RedisClient::new(base.clone().entra_id(&user, provider.clone())).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(
        e.message().contains("allow_token_without_tls_to_loopback"),
        "{e}"
    );
    let e = RedisClient::new(
        RedisConfig::new("redis.example.com", 6379)
            .entra_id(&user, provider.clone())
            .allow_token_without_tls_to_loopback(true),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert_eq!(
        provider.calls.load(Ordering::SeqCst),
        0,
        "no token was asked for"
    );
    let base = base.allow_token_without_tls_to_loopback(true);
    let entra = RedisClient::new(base.clone().entra_id(&user, provider.clone())).unwrap();
    let counter = entra.json::<u64>(&key("entra")).unwrap();
    update(&counter, &policy(), increment).await.unwrap();
    assert!(provider.calls.load(Ordering::SeqCst) >= 1);
    // The ACL limits this user to azstore-test:* keys: the server enforces the identity.
    let e = entra
        .json::<u64>("outside")
        .unwrap()
        .read()
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(!format!("{entra:?}").contains(&token));

    // A wrong token or password: an Auth error that never shows the secret.
    let wrong = Arc::new(FixedToken {
        token: "wrong-token-S3CRET".into(),
        calls: AtomicU32::new(0),
    });
    let bad = RedisClient::new(base.clone().entra_id(&user, wrong)).unwrap();
    let e = bad.ping().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(!format!("{e} {e:?}").contains("S3CRET"));
    let bad = RedisClient::new(base.user(&user, "pw-S3CRET")).unwrap();
    let e = bad.ping().await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Auth, "{e}");
    assert!(!format!("{e} {e:?} {bad:?}").contains("S3CRET"));

    let _: () = ::redis::cmd("ACL")
        .arg("DELUSER")
        .arg(&user)
        .query_async(&mut con)
        .await
        .unwrap();
}

#[tokio::test]
async fn lease_operations_follow_the_azure_contract() {
    let k = key("lease");
    let redis = client();
    let lease = redis.lease(&k).unwrap();
    let other = redis.lease(&k).unwrap();
    let fifteen = LeaseDuration::seconds(15).unwrap();
    let id = LeaseId::random();
    lease.lease_acquire(fifteen, &id).await.unwrap();
    assert_eq!(lease.holder().await.unwrap(), Some(id.clone()));
    let ttl = lease.remaining().await.unwrap().unwrap().unwrap();
    assert!(ttl > Duration::from_secs(10) && ttl <= Duration::from_secs(15));

    // Someone else cannot acquire; the holder re-acquiring with its id is fine.
    let e = other
        .lease_acquire(fifteen, &LeaseId::random())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseHeld);
    lease.lease_acquire(fifteen, &id).await.unwrap();
    lease.lease_renew(&id).await.unwrap();

    // Only the holder renews, changes, releases.
    let stranger = LeaseId::random();
    let e = lease.lease_renew(&stranger).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost, "{e}");
    assert!(lease.lease_release(&stranger).await.is_err());
    let new_id = LeaseId::random();
    lease.lease_change(&id, &new_id).await.unwrap();
    assert!(lease.lease_renew(&id).await.unwrap_err().lease_lost());
    lease.lease_release(&new_id).await.unwrap();
    let e = lease.lease_release(&new_id).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost, "{e}");
    assert!(lease.holder().await.unwrap().is_none());

    // Infinite: no expiry; the default break ends it at once.
    lease
        .lease_acquire(LeaseDuration::Infinite, &id)
        .await
        .unwrap();
    assert_eq!(lease.remaining().await.unwrap(), Some(None));
    let broken = lease.lease_break(None).await.unwrap();
    assert_eq!(broken.remaining, Duration::ZERO);
    assert!(lease.holder().await.unwrap().is_none());
    let e = lease.lease_break(None).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::LeaseLost);

    // A break with a period: the holder is refused at once, nobody acquires until it ends.
    lease.lease_acquire(fifteen, &id).await.unwrap();
    let broken = lease
        .lease_break(Some(azstore::lease::BreakPeriod::seconds(10).unwrap()))
        .await
        .unwrap();
    assert_eq!(broken.remaining, Duration::from_secs(10));
    assert!(lease.lease_renew(&id).await.unwrap_err().lease_lost());
    assert!(
        other
            .lease_acquire(fifteen, &LeaseId::random())
            .await
            .is_err()
    );
}

#[tokio::test]
async fn a_holder_that_stops_renewing_learns_it_before_another_acquires() {
    let k = key("partition");
    let proxy = RedisProxy::start(&redis_url()).await;
    let fifteen = LockOptions::default().duration(LeaseDuration::seconds(15).unwrap());
    let holder_lock =
        azstore::redis::RedisLock::with_options(client_at(&proxy.url()), &k, fifteen.clone())
            .unwrap();
    let t0 = Instant::now();
    let held = holder_lock.try_acquire().await.unwrap().expect("free");
    let first_token = held.fencing_token();
    // The holder is cut off from Redis: its renews never arrive.
    proxy.stall(true);

    let contender = azstore::redis::RedisLock::with_options(client(), &k, fifteen).unwrap();
    let contender_task = tokio::spawn(async move {
        let held = contender
            .acquire_within(Duration::from_secs(40))
            .await
            .unwrap()
            .expect("acquired once the lease expired");
        (Instant::now(), held)
    });
    let loss = held.lost().await;
    let lost_at = Instant::now();
    assert!(
        matches!(loss, LeaseLoss::Unconfirmed { .. }),
        "cut off: {loss:?}"
    );
    assert!(matches!(held.lease().state(), GuardState::Lost(_)));
    let (acquired_at, next) = contender_task.await.unwrap();
    assert!(
        lost_at < acquired_at,
        "the holder learned of the loss ({:?}) before the contender acquired ({:?})",
        lost_at - t0,
        acquired_at - t0
    );
    assert!(
        acquired_at >= t0 + Duration::from_secs(15),
        "nobody acquires before the lease expired"
    );
    assert!(next.fencing_token() > first_token);
    proxy.stall(false);
    assert!(matches!(
        held.release().await.unwrap(),
        ReleaseOutcome::AlreadyGone { .. }
    ));
    next.release().await.unwrap();
}

#[tokio::test]
async fn a_lease_can_be_handed_to_a_guard_elsewhere() {
    let k = key("adopt");
    let first: RedisLease = client().lease(&k).unwrap();
    let id = LeaseId::random();
    let fifteen = LeaseDuration::seconds(15).unwrap();
    let sent_at = Instant::now();
    first.lease_acquire(fifteen, &id).await.unwrap();
    // Another value for the same key does not know the duration until told.
    let second = client().lease(&k).unwrap();
    assert_eq!(
        second.lease_renew(&id).await.unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let guard = LeaseGuard::adopt(
        second.with_duration(fifteen),
        id.clone(),
        fifteen,
        sent_at,
        Default::default(),
    )
    .unwrap();
    guard.target().lease_renew(&id).await.unwrap();
    assert_eq!(guard.release().await.unwrap(), ReleaseOutcome::Released);
    assert!(first.holder().await.unwrap().is_none());
}

#[tokio::test]
async fn json_values_of_any_serde_type() {
    #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
    struct Doc {
        names: Vec<String>,
        score: f64,
    }
    let k = key("doc");
    let doc: RedisJson<Doc> = client().json(&k).unwrap();
    for name in ["a", "b", "c"] {
        update(&doc, &policy(), |cur| {
            let mut d = cur.cloned().unwrap_or(Doc {
                names: vec![],
                score: 0.0,
            });
            d.names.push(name.into());
            d.score += 0.5;
            Decision::Write(d)
        })
        .await
        .unwrap();
    }
    let cur = doc.read().await.unwrap().unwrap();
    assert_eq!(cur.value.names, ["a", "b", "c"]);
    assert_eq!(cur.value.score, 1.5);
}

/// The TLS port of the test redis-server (`scripts/azurite run` serves it with the test
/// certificate, as Azure Cache for Redis serves TLS on 6380).
fn redis_tls_url() -> String {
    std::env::var("AZSTORE_REDIS_TLS_URL").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_REDIS_TLS_URL is not set: run the tests through `scripts/azurite run -- \
             cargo test ...`, which starts redis-server with a TLS port and exports it"
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn over_tls_with_a_private_ca_increments_lose_nothing() {
    let url = redis_tls_url();
    assert!(url.starts_with("rediss://"), "{url}");
    let config = RedisConfig::from_url(&url)
        .unwrap()
        .tls_root_certificates_pem(&testkit::tls::ca_pem());
    let tls = RedisClient::new(config).unwrap();
    tls.ping().await.unwrap();
    let k = key("tls");
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let counter = tls.json::<u64>(&k).unwrap();
        tasks.push(tokio::spawn(async move {
            for _ in 0..10 {
                update(&counter, &policy(), increment).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // The same server seen through its plain port, without azstore.
    assert_eq!(raw_value(&k).await, Some(serde_json::json!(40)));
}

#[tokio::test]
async fn over_tls_the_server_certificate_is_verified() {
    // The system's and the webpki roots do not know the test CA: the handshake fails, as a
    // typed error, before any command is sent.
    let untrusting = client_at(&redis_tls_url());
    let e = untrusting.ping().await.unwrap_err();
    assert_eq!(e.request_sent(), RequestSent::No, "{e}");
    assert_ne!(e.kind(), ErrorKind::InvalidInput, "{e}");

    // Malformed roots are refused when the client is built, before any connection.
    for pem in [&b"not a certificate"[..], b""] {
        let config = RedisConfig::from_url(&redis_tls_url())
            .unwrap()
            .tls_root_certificates_pem(pem);
        let e = RedisClient::new(config).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    }
}
