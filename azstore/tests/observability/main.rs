//! Traces and metrics, collected in-process (a `tracing` layer that keeps every span and event,
//! and `metrics-util`'s debugging recorder) while azstore talks to Azurite: a 412 conflict
//! in `update()` is counted and gives a second attempt span; a lost lease is reported with its
//! reason; a poisoned message is logged at WARN and counted, and its copy stays readable by
//! the official Python SDK; no span, event or metric holds a key or a SAS signature; a write
//! of `update()` whose response was lost is recorded when it is recognised as applied, and
//! when `update()` stops unable to tell (`RequestSent::Maybe`).
//!
//! Each test runs on tokio's current-thread runtime: the subscriber and the recorder are set
//! for the test's thread only. The tests take turns (one capture at a time, [`capture`]) and
//! are this binary's only tests: tracing caches each callsite's interest process-wide, and a
//! callsite first hit on another thread while a capture registers could be cached as
//! uninterested, losing the event the test looks for.
//! The poison test needs `AZSTORE_PYTHON` (`scripts/pyenv` prints one).

use testkit as support;

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::blob::BlobJson;
use azstore::credential::Credential;
use azstore::lease::BreakPeriod;
use azstore::lease::{GuardOptions, LeaseDuration, LeaseGuard, LeaseLoss};
use azstore::queue::{Delivery, WorkerOptions, process_until_empty};
use azstore::sas::SasBuilder;
use azstore::update::{Decision, UpdatePolicy, Versioned, update};
use azstore::{Conditions, DEV_KEY, RequestSent, Service};
use metrics_util::debugging::{DebugValue, DebuggingRecorder, Snapshotter};
use support::fault::{Fault, FaultProxy, Rule};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

/// One span as recorded: name, parent's name and every field (including those recorded later).
#[derive(Debug, Clone)]
struct SpanRec {
    name: &'static str,
    parent: Option<&'static str>,
    fields: BTreeMap<String, String>,
    /// Each value recorded after the span was created, in order (`fields` keeps the last).
    records: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
struct EventRec {
    level: Level,
    /// The innermost span the event happened in.
    span: Option<&'static str>,
    fields: BTreeMap<String, String>,
}

#[derive(Default)]
struct Store {
    spans: Vec<SpanRec>,
    open: HashMap<u64, usize>,
    events: Vec<EventRec>,
}

#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Store>>);

#[derive(Default)]
struct Fields(BTreeMap<String, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_string(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().to_string(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let parent = ctx.span(id).and_then(|s| s.parent()).map(|p| p.name());
        let mut store = self.0.lock().unwrap();
        store.spans.push(SpanRec {
            name: attrs.metadata().name(),
            parent,
            fields: f.0,
            records: Vec::new(),
        });
        let at = store.spans.len() - 1;
        store.open.insert(id.into_u64(), at);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut f = Fields::default();
        values.record(&mut f);
        let mut store = self.0.lock().unwrap();
        if let Some(&at) = store.open.get(&id.into_u64()) {
            let span = &mut store.spans[at];
            span.records
                .extend(f.0.iter().map(|(k, v)| (k.clone(), v.clone())));
            span.fields.extend(f.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        let span = ctx.event_span(event).map(|s| s.name());
        self.0.lock().unwrap().events.push(EventRec {
            level: *event.metadata().level(),
            span,
            fields: f.0,
        });
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().unwrap().open.remove(&id.into_u64());
    }
}

impl Capture {
    fn spans(&self, name: &str) -> Vec<SpanRec> {
        let store = self.0.lock().unwrap();
        store
            .spans
            .iter()
            .filter(|s| s.name == name)
            .cloned()
            .collect()
    }

    fn events(&self) -> Vec<EventRec> {
        self.0.lock().unwrap().events.clone()
    }

    /// Everything recorded, as text: span names and fields, event fields.
    fn all_text(&self) -> String {
        let store = self.0.lock().unwrap();
        format!("{:?} {:?}", store.spans, store.events)
    }
}

/// Sets a capturing subscriber for this thread; returns the capture and the guard.
/// One capture at a time in this binary (see the module documentation).
static TURN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// What keeps a capture going: this test's turn and its subscriber.
struct Capturing {
    _subscriber: tracing::subscriber::DefaultGuard,
    _turn: tokio::sync::MutexGuard<'static, ()>,
}

/// Captures every span and event of this thread until the returned guard drops; `turn` is
/// this test's turn, taken before the test sent anything (a callsite first hit on another
/// test's thread while this subscriber registers could be cached as uninterested).
fn capture(turn: tokio::sync::MutexGuard<'static, ()>) -> (Capture, Capturing) {
    let cap = Capture::default();
    let subscriber = tracing_subscriber::registry().with(cap.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    // Callsites hit before this subscriber existed cached "no interest": ask them again.
    tracing::callsite::rebuild_interest_cache();
    (
        cap,
        Capturing {
            _subscriber: guard,
            _turn: turn,
        },
    )
}

/// The metrics recorded, as (name, labels, value).
fn metrics_of(snap: &Snapshotter) -> Vec<(String, BTreeMap<String, String>, DebugValue)> {
    snap.snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let labels = key
                .key()
                .labels()
                .map(|l| (l.key().to_string(), l.value().to_string()))
                .collect();
            (key.key().name().to_string(), labels, value)
        })
        .collect()
}

/// The values of the series named `name` whose labels include `with`.
fn series<'a>(
    metrics: &'a [(String, BTreeMap<String, String>, DebugValue)],
    name: &'a str,
    with: &'a [(&str, &str)],
) -> impl Iterator<Item = &'a DebugValue> {
    metrics
        .iter()
        .filter(move |(n, labels, _)| {
            n == name
                && with
                    .iter()
                    .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
        })
        .map(|(_, _, v)| v)
}

/// The sum of the counter `name` over the series whose labels include `with`.
fn counter(
    metrics: &[(String, BTreeMap<String, String>, DebugValue)],
    name: &str,
    with: &[(&str, &str)],
) -> u64 {
    series(metrics, name, with)
        .map(|v| match v {
            DebugValue::Counter(c) => *c,
            other => panic!("{name} is not a counter: {other:?}"),
        })
        .sum()
}

/// The values of the histogram `name` over the series whose labels include `with`.
fn histogram(
    metrics: &[(String, BTreeMap<String, String>, DebugValue)],
    name: &str,
    with: &[(&str, &str)],
) -> Vec<f64> {
    series(metrics, name, with)
        .flat_map(|v| match v {
            DebugValue::Histogram(h) => h.iter().map(|x| x.into_inner()).collect::<Vec<_>>(),
            other => panic!("{name} is not a histogram: {other:?}"),
        })
        .collect()
}

/// How many `update()` calls ended with `outcome`, by the duration histogram.
fn update_durations(
    metrics: &[(String, BTreeMap<String, String>, DebugValue)],
    outcome: &str,
) -> usize {
    histogram(
        metrics,
        "azstore.update.duration",
        &[("azstore.update.outcome", outcome)],
    )
    .len()
}

/// A 412 on the replace of an `update()` is one conflict: counted in the outcome, in the
/// event and the counter, and followed by a second attempt span; the refused HTTP attempt is
/// recorded with its status and error code.
#[tokio::test]
async fn a_conflict_is_counted_and_gives_a_second_attempt_span() {
    let turn = TURN.lock().await;
    let c = support::blob::container("obsconf").await;
    let blob = c.blob("counter.json").unwrap();
    blob.upload("1", &Conditions::none()).await.unwrap();
    let doc = BlobJson::<u64>::new(blob.clone());

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    let account = support::account();
    let (container, name) = (c.name().to_string(), blob.name().to_string());
    let mut first = true;
    let outcome = update(&doc, &UpdatePolicy::default(), |v| {
        if std::mem::take(&mut first) {
            // Another writer changes the blob between our read and our write. It runs on a
            // thread (and runtime) of its own, so the write is done when this returns and its
            // spans are not captured here.
            let (account, container, name) = (account.clone(), container.clone(), name.clone());
            std::thread::spawn(move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(async {
                    azstore::blob::BlobServiceClient::new(&account)
                        .unwrap()
                        .container(&container)
                        .unwrap()
                        .blob(&name)
                        .unwrap()
                        .upload("10", &Conditions::none())
                        .await
                        .unwrap();
                })
            })
            .join()
            .unwrap();
        }
        Decision::Write(v.copied().unwrap_or(0) + 1)
    })
    .await
    .unwrap();
    assert_eq!((outcome.attempts, outcome.conflicts), (2, 1), "{outcome:?}");
    assert_eq!(outcome.value, Some(11), "the other writer's 10 is not lost");

    // Spans: one update, two attempts under it, the 412 attempt recorded.
    let updates = cap.spans("azstore.update");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].fields["azstore.update.outcome"], "replaced");
    assert_eq!(updates[0].fields["azstore.update.conflicts"], "1");
    let attempts = cap.spans("azstore.update.attempt");
    assert_eq!(attempts.len(), 2, "{attempts:?}");
    assert!(attempts.iter().all(|a| a.parent == Some("azstore.update")));
    assert_eq!(attempts[1].fields["azstore.update.attempt"], "2");
    let refused: Vec<_> = cap
        .spans("azstore.attempt")
        .into_iter()
        .filter(|s| {
            s.fields
                .get("http.response.status_code")
                .map(String::as_str)
                == Some("412")
        })
        .collect();
    assert_eq!(
        refused.len(),
        1,
        "one refused HTTP attempt: {:?}",
        cap.spans("azstore.attempt")
    );
    let r = &refused[0].fields;
    assert_eq!(r["error.type"], "ConditionNotMet");
    assert_eq!(r["http.request.method"], "PUT");
    assert_eq!(r["otel.kind"], "client");
    assert_eq!(r["az.namespace"], "Microsoft.Storage");
    assert_eq!(r["http.request.resend_count"], "0");
    assert!(!r["az.client_request_id"].is_empty());
    assert!(!r["az.service_request.id"].is_empty());
    assert_eq!(r["server.address"], "127.0.0.1");
    assert!(
        r["url.full"].ends_with(&format!("/{}/counter.json", c.name())),
        "{r:?}"
    );
    // Its operation span names the operation.
    assert!(cap.spans("azstore.operation").iter().any(|s| {
        s.fields["otel.name"] == "azstore.blob.put" && s.fields.contains_key("error.type")
    }));
    let conflict_events: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.contains("conflict"))
        })
        .collect();
    assert_eq!(conflict_events.len(), 1, "{conflict_events:?}");
    assert_eq!(
        conflict_events[0].fields["http.response.status_code"],
        "412"
    );
    assert_eq!(conflict_events[0].span, Some("azstore.update.attempt"));

    // Metrics.
    let m = metrics_of(&snap);
    assert_eq!(counter(&m, "azstore.update.conflicts", &[]), 1, "{m:?}");
    assert_eq!(counter(&m, "azstore.update.attempts", &[]), 2, "{m:?}");
    assert_eq!(counter(&m, "azstore.update.maybe", &[]), 0);
    assert_eq!(update_durations(&m, "replaced"), 1);
    let put_calls = histogram(
        &m,
        "azstore.client.operation.duration",
        &[
            ("azstore.operation", "put"),
            ("error.type", "ConditionNotMet"),
        ],
    );
    assert_eq!(put_calls.len(), 1, "{m:?}");
    assert!(put_calls[0] > 0.0 && put_calls[0] < 30.0);
    let attempts_per_call = histogram(&m, "azstore.client.operation.attempts", &[]);
    assert!(
        attempts_per_call.iter().all(|a| *a == 1.0),
        "{attempts_per_call:?}"
    );
}

/// A lease broken by another client: the renew is refused, and the loss is logged at WARN
/// with its reason and counted; the time left is recorded.
#[tokio::test]
async fn a_lost_lease_is_reported_with_its_reason() {
    let turn = TURN.lock().await;
    let c = support::blob::container("obslease").await;
    let blob = c.blob("held").unwrap();
    blob.upload("x", &Conditions::none()).await.unwrap();

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    let guard = LeaseGuard::acquire_with(
        blob.clone(),
        LeaseDuration::seconds(15).unwrap(),
        GuardOptions::default().renew_every(Duration::from_secs(1)),
    )
    .await
    .unwrap();
    // Let one renew succeed first.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    blob.break_lease(Some(BreakPeriod::immediate()), &Conditions::none())
        .await
        .unwrap();
    let loss = tokio::time::timeout(Duration::from_secs(5), guard.lost())
        .await
        .expect("loss signalled within a few renew intervals");
    assert!(
        matches!(
            loss,
            LeaseLoss::Refused {
                status: Some(409),
                ..
            }
        ),
        "{loss:?}"
    );

    let lost: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| e.fields.get("message").map(String::as_str) == Some("keep-alive lost"))
        .collect();
    assert_eq!(lost.len(), 1, "{lost:?}");
    let f = &lost[0].fields;
    assert_eq!(lost[0].level, Level::WARN);
    assert_eq!(f["azstore.lease.loss_reason"], "refused");
    assert_eq!(f["azstore.guard"], "lease");
    assert!(
        f["loss"].contains("LeaseIsBrokenAndCannotBeRenewed"),
        "{f:?}"
    );
    let left: f64 = f["azstore.lease.time_left_s"].parse().unwrap();
    assert!(
        left > 10.0 && left <= 15.0,
        "refused about 1 s after a renew: {left}"
    );

    let m = metrics_of(&snap);
    assert_eq!(
        counter(
            &m,
            "azstore.lease.losses",
            &[("azstore.lease.loss_reason", "refused")]
        ),
        1
    );
    assert_eq!(histogram(&m, "azstore.lease.loss.time_left", &[]).len(), 1);
    assert!(
        !histogram(
            &m,
            "azstore.lease.renew.duration",
            &[("azstore.lease.renew.outcome", "ok")]
        )
        .is_empty()
    );
    assert_eq!(
        histogram(
            &m,
            "azstore.lease.renew.duration",
            &[("azstore.lease.renew.outcome", "refused")]
        )
        .len(),
        1
    );
    drop(guard);
}

fn python() -> String {
    std::env::var("AZSTORE_PYTHON").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_PYTHON is not set. This test reads the poisoned message with the official \
             Python queue SDK: run it with `AZSTORE_PYTHON=$(scripts/pyenv) scripts/azurite run \
             -- cargo test ...`, or run `scripts/test`."
        )
    })
}

/// A message whose handler fails on its last delivery is moved to the poison queue: a WARN
/// names its id, dequeue count and the handler's error; the counter counts it; the poison
/// queue's metadata records the reason; the copy's text is unchanged and the official Python
/// SDK reads it.
#[tokio::test]
async fn a_poisoned_message_is_logged_counted_and_readable() {
    let turn = TURN.lock().await;
    let q = support::queue::fresh_queue("obspoison").await;
    let poison = q.sibling(&format!("{}-poison", q.name())).unwrap();
    let text = "order 7: {\"qty\": 3} ü";
    let sent = q.put_message(text).await.unwrap();

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    let stats = process_until_empty(
        q.clone(),
        |_: Delivery| async { Err("payment service said: card declined".into()) },
        WorkerOptions::default().max_dequeue_count(1),
    )
    .await
    .unwrap();
    assert_eq!((stats.failed, stats.poisoned), (1, 1));

    let warns: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| e.level == Level::WARN)
        .collect();
    assert_eq!(warns.len(), 1, "{warns:?}");
    let f = &warns[0].fields;
    assert_eq!(f["message"], "queue message moved to the poison queue");
    assert_eq!(f["messaging.message.id"], sent.id.as_str());
    assert_eq!(f["azstore.queue.dequeue_count"], "1");
    assert_eq!(f["error"], "payment service said: card declined");
    assert_eq!(f["azstore.queue.poison_queue"], poison.name());
    assert_eq!(warns[0].span, Some("azstore.queue.message"));
    // The message's span says what became of it, once: poisoned (not failed, then poisoned).
    let spans = cap.spans("azstore.queue.message");
    assert_eq!(spans.len(), 1, "{spans:?}");
    assert_eq!(
        spans[0].records,
        [("azstore.queue.outcome".to_string(), "poisoned".to_string())],
        "{spans:?}"
    );

    let m = metrics_of(&snap);
    let on_q = |outcome| {
        counter(
            &m,
            "azstore.queue.messages",
            &[
                ("messaging.destination.name", q.name()),
                ("azstore.queue.outcome", outcome),
            ],
        )
    };
    // One outcome per delivery, the span's: its last try failed and it was moved.
    assert_eq!(
        (on_q("poisoned"), on_q("failed"), on_q("completed")),
        (1, 0, 0)
    );

    // The side record in the poison queue's metadata.
    let record =
        poison.get_properties().await.unwrap().metadata[azstore::queue::POISON_METADATA].clone();
    assert!(
        record.starts_with(&format!("message={}; copy=", sent.id.as_str())),
        "{record}"
    );
    assert!(record.contains("dequeue_count=1;"), "{record}");
    assert!(
        record.ends_with("error=payment service said: card declined"),
        "{record}"
    );

    // The copy: text unchanged, read by the official SDK (its default policy: text as is).
    let conn = std::env::var(azstore::CONNECTION_STRING_ENV).unwrap();
    let out = tokio::process::Command::new(python())
        .arg(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/python/queue_interop.py"
        ))
        .arg(conn)
        .arg(poison.name())
        .arg("read-default")
        .output()
        .await
        .expect("run python");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let contents: Vec<&str> = got
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["content"].as_str().unwrap())
        .collect();
    assert_eq!(contents, [text]);
    q.delete().await.unwrap();
    poison.delete().await.unwrap();
}

/// A key and a SAS signature are used for real requests; no span field, event or metric label
/// holds either (nor the signature's decoded form), while `url.full` is recorded.
#[tokio::test]
async fn no_span_or_metric_holds_a_secret() {
    let turn = TURN.lock().await;
    let account = support::account();
    let Credential::SharedKey(key) = account.credential().clone() else {
        panic!("Azurite's account uses a shared key")
    };
    let c = support::blob::container("obssecret").await;
    let expiry = time::OffsetDateTime::now_utc() + time::Duration::hours(1);
    let sas = SasBuilder::new("rcw", expiry)
        .container(&key, c.name())
        .unwrap();
    let token = sas.expose_secret().to_string();
    let sig = token
        .split('&')
        .find_map(|p| p.strip_prefix("sig="))
        .expect("a signature")
        .to_string();
    let sig_decoded = percent_encoding::percent_decode_str(&sig)
        .decode_utf8()
        .unwrap()
        .to_string();
    assert!(sig_decoded.len() > 20);

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    // With the key.
    let keyed = c.blob("k").unwrap();
    keyed
        .upload("with the key", &Conditions::none())
        .await
        .unwrap();
    // With the SAS, including a refused request (the error path records more fields).
    let by_sas = azstore::blob::BlobServiceClient::new(
        &account.clone().with_credential(Credential::Sas(sas)),
    )
    .unwrap()
    .container(c.name())
    .unwrap()
    .blob("s")
    .unwrap();
    by_sas
        .upload("with a SAS", &Conditions::none())
        .await
        .unwrap();
    assert_eq!(&by_sas.download().await.unwrap().body[..], b"with a SAS");
    let err = by_sas
        .upload("again", &Conditions::if_not_exists())
        .await
        .unwrap_err();
    assert_eq!(err.status(), Some(409));

    let m = metrics_of(&snap);
    let text = format!("{} {:?}", cap.all_text(), m);
    for secret in [DEV_KEY, sig.as_str(), sig_decoded.as_str()] {
        assert!(!text.contains(secret), "a secret was recorded");
    }
    assert!(
        !text.contains("sig="),
        "no signature parameter is recorded at all"
    );
    let urls: Vec<String> = cap
        .spans("azstore.attempt")
        .iter()
        .map(|s| s.fields["url.full"].clone())
        .collect();
    assert!(urls.len() >= 4, "{urls:?}");
    assert!(
        urls.iter()
            .any(|u| u.ends_with(&format!("/{}/s", c.name()))),
        "{urls:?}"
    );
    assert!(!m.is_empty());
}

/// A lock's wait and hold: a wait that times out and one that acquires after a release, each
/// a span and a timing; each hold a span with its fencing token and a timing.
#[tokio::test]
async fn lock_wait_and_hold_are_timed_with_the_fencing_token() {
    let turn = TURN.lock().await;
    let c = support::blob::container("obslock").await;
    let lock = azstore::blob::BlobLock::new(c.clone(), "l").unwrap();
    let waiter = azstore::blob::BlobLock::new(c.clone(), "l").unwrap();

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    let held = lock.try_acquire().await.unwrap().expect("free");
    let first = held.fencing_token();
    assert!(
        waiter
            .acquire_within(Duration::from_millis(600))
            .await
            .unwrap()
            .is_none()
    );
    held.release().await.unwrap();
    let next = waiter
        .acquire_within(Duration::from_secs(10))
        .await
        .unwrap()
        .expect("free after the release");
    // Fencing tokens are max(previous + 1, clock ms): the second holder's is larger.
    let second = next.fencing_token();
    assert!(second > first, "{first} then {second}");
    next.release().await.unwrap();

    let waits = cap.spans("azstore.lock.wait");
    let outcomes: Vec<&str> = waits
        .iter()
        .map(|s| s.fields["azstore.lock.outcome"].as_str())
        .collect();
    assert_eq!(outcomes, ["timed_out", "acquired"]);
    let holds = cap.spans("azstore.lock.hold");
    let tokens: Vec<&str> = holds
        .iter()
        .map(|s| s.fields["azstore.lock.fencing_token"].as_str())
        .collect();
    assert_eq!(tokens, [first.to_string(), second.to_string()]);
    assert!(
        holds
            .iter()
            .all(|s| s.fields["azstore.lock.kind"] == "blob")
    );
    assert_eq!(holds[1].parent, Some("azstore.lock.wait"));

    let m = metrics_of(&snap);
    let timed_out = histogram(
        &m,
        "azstore.lock.wait.duration",
        &[("azstore.lock.outcome", "timed_out")],
    );
    assert_eq!(timed_out.len(), 1);
    assert!(timed_out[0] >= 0.6, "{timed_out:?}");
    assert_eq!(
        histogram(
            &m,
            "azstore.lock.wait.duration",
            &[("azstore.lock.outcome", "acquired")]
        )
        .len(),
        1
    );
    assert_eq!(
        histogram(
            &m,
            "azstore.lock.hold.duration",
            &[("azstore.lock.kind", "blob")]
        )
        .len(),
        2
    );
}

/// A blob `BlobJson<u64>` holding `start`, and a client of it through a fault proxy.
async fn counter_behind_proxy(
    prefix: &str,
    start: u64,
) -> (BlobJson<u64>, BlobJson<u64>, FaultProxy) {
    let c = support::blob::container(prefix).await;
    let direct = c.blob("counter.json").unwrap();
    direct
        .upload(start.to_string(), &Conditions::none())
        .await
        .unwrap();
    let account = support::account();
    let proxy = FaultProxy::start(&account, Service::Blob).await;
    let proxied = azstore::blob::BlobServiceClient::new(&proxy.account(&account))
        .unwrap()
        .container(c.name())
        .unwrap()
        .blob(direct.name())
        .unwrap();
    (BlobJson::new(proxied), BlobJson::new(direct), proxy)
}

/// The response of the replace is lost after the write applied: `update()` reads again, finds
/// its write id in the stored history and reports success without writing twice. The
/// recognised write is an INFO event under the `azstore.update` span, a field of that span
/// and the `azstore.update.recognised_writes` counter; it is not a `Maybe`.
#[tokio::test]
async fn a_recognised_ambiguous_write_is_logged_and_counted() {
    let turn = TURN.lock().await;
    let (doc, direct, proxy) = counter_behind_proxy("obsrecog", 1).await;

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    let outcome = update(&doc, &UpdatePolicy::default(), |v| {
        Decision::Write(v.copied().unwrap_or(0) + 1)
    })
    .await
    .expect("the lost write is recognised as applied");
    assert_eq!(outcome.recovered_ambiguous, 1);
    assert_eq!(outcome.value, Some(2));
    assert_eq!(proxy.count("PUT"), 1, "never written a second time");
    assert_eq!(
        direct.read().await.unwrap().unwrap().value,
        2,
        "applied once"
    );

    let updates = cap.spans("azstore.update");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].fields["azstore.update.outcome"], "replaced");
    assert_eq!(updates[0].fields["azstore.update.recognised_writes"], "1");
    let recognised: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.contains("recognised as applied"))
        })
        .collect();
    assert_eq!(recognised.len(), 1, "{recognised:?}");
    assert_eq!(recognised[0].level, Level::INFO);
    assert_eq!(recognised[0].span, Some("azstore.update"));
    assert_eq!(recognised[0].fields["recognised_writes"], "1");
    assert!(
        !cap.events().iter().any(|e| e
            .fields
            .get("message")
            .is_some_and(|m| m.contains("RequestSent::Maybe"))),
        "a recognised write is not reported as a Maybe"
    );

    let m = metrics_of(&snap);
    assert_eq!(counter(&m, "azstore.update.recognised_writes", &[]), 1);
    assert_eq!(counter(&m, "azstore.update.maybe", &[]), 0);
    assert_eq!(update_durations(&m, "replaced"), 1);
}

/// The response of the replace is lost, and every read after it is refused (403), so the
/// read that would settle the write fails: `update()` stops with `RequestSent::Maybe` (the
/// write did apply). That is a WARN event under the `azstore.update` span, the span's outcome
/// `maybe` and the `azstore.update.maybe` counter; nothing counts as recognised.
#[tokio::test]
async fn a_maybe_outcome_is_logged_and_counted() {
    let turn = TURN.lock().await;
    let (doc, direct, proxy) = counter_behind_proxy("obsmaybe", 1).await;

    let recorder = DebuggingRecorder::new();
    let snap = recorder.snapshotter();
    let _metrics = metrics::set_default_local_recorder(&recorder);
    let (cap, _guard) = capture(turn);

    proxy.inject(Rule::new(Fault::LoseResponse).method("PUT"));
    // The first read (before the write) goes through; every later one is refused, with a
    // status that is not retried.
    proxy.inject(
        Rule::new(Fault::status(403, "AuthorizationFailure"))
            .method("GET")
            .after(1)
            .always(),
    );
    let err = update(&doc, &UpdatePolicy::default(), |v| {
        Decision::Write(v.copied().unwrap_or(0) + 1)
    })
    .await
    .expect_err("update() cannot tell whether its write applied");
    assert_eq!(err.request_sent(), RequestSent::Maybe, "{err}");
    assert_eq!(proxy.count("PUT"), 1, "never written a second time");
    assert_eq!(
        direct.read().await.unwrap().unwrap().value,
        2,
        "the write did apply, once: Maybe is the truthful answer"
    );

    let updates = cap.spans("azstore.update");
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0].fields["azstore.update.outcome"], "maybe");
    assert!(updates[0].fields.contains_key("error.type"), "{updates:?}");
    let maybe: Vec<_> = cap
        .events()
        .into_iter()
        .filter(|e| {
            e.fields
                .get("message")
                .is_some_and(|m| m.contains("RequestSent::Maybe"))
        })
        .collect();
    assert_eq!(maybe.len(), 1, "{maybe:?}");
    assert_eq!(maybe[0].level, Level::WARN);
    assert_eq!(maybe[0].span, Some("azstore.update"));
    assert!(maybe[0].fields.contains_key("error"), "{maybe:?}");

    let m = metrics_of(&snap);
    assert_eq!(counter(&m, "azstore.update.maybe", &[]), 1);
    assert_eq!(counter(&m, "azstore.update.recognised_writes", &[]), 0);
    assert_eq!(update_durations(&m, "maybe"), 1);
}
