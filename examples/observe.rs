//! What azstore did, seen: the span tree and the metrics of one `update()` that meets a
//! conflict, one lease that is lost, and one queue message moved to the poison queue.
//!
//! A small `tracing` layer keeps each span (with its fields, some left out of the printout to
//! keep it short) and each of azstore's events, and prints them as a tree after each part; `metrics-util`'s debugging recorder collects the metrics, printed at
//! the end. In a service you would install `tracing-subscriber`'s fmt layer or an
//! OpenTelemetry layer and a metrics exporter instead (docs/observability.md).
//!
//! Run it against a private Azurite: `scripts/demo observe` (or, with your own emulator or
//! account, `AZURE_STORAGE_CONNECTION_STRING=... cargo run --example observe --features metrics`).
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::blob::BlobJson;
use azstore::lease::{BreakPeriod, GuardOptions, LeaseDuration, LeaseGuard};
use azstore::queue::{Delivery, QueueServiceClient, WorkerOptions, process_until_empty};
use azstore::update::{Decision, UpdatePolicy, update};
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};
use metrics_util::debugging::{DebugValue, DebuggingRecorder};
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

#[tokio::main(flavor = "current_thread")]
async fn main() -> azstore::Result<()> {
    let recorder = DebuggingRecorder::new();
    let snapshotter = recorder.snapshotter();
    recorder.install().expect("the only recorder");
    azstore::telemetry::describe_metrics();
    let tree = Tree::default();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(tree.clone()))
        .expect("the only subscriber");

    let account = StorageAccount::from_env()?;
    let container =
        BlobServiceClient::new(&account)?.container(&format!("observe-{}", std::process::id()))?;
    container.create_if_not_exists().await?;

    println!("\n== 1. update() meets a conflict ==");
    let blob = container.blob("counter.json")?;
    blob.upload("1", &Conditions::none()).await?;
    let counter = BlobJson::<u64>::new(blob.clone());
    let mut first = true;
    let outcome = update(&counter, &UpdatePolicy::default(), |v| {
        if std::mem::take(&mut first) {
            // Another writer, between our read and our write (on a thread and runtime of its
            // own, with a client of its own: a client belongs to one runtime).
            let (account, container, name) = (
                account.clone(),
                container.name().to_string(),
                blob.name().to_string(),
            );
            std::thread::spawn(move || {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .expect("runtime")
                    .block_on(async {
                        BlobServiceClient::new(&account)?
                            .container(&container)?
                            .blob(&name)?
                            .upload("10", &Conditions::none())
                            .await
                    })
            })
            .join()
            .expect("writer")
            .expect("the other write");
        }
        Decision::Write(v.copied().unwrap_or(0) + 1)
    })
    .await?;
    print_tree(&tree);
    println!(
        "-> {:?} after {} attempts, {} conflict",
        outcome.value, outcome.attempts, outcome.conflicts
    );

    println!("\n== 2. a lease is lost ==");
    let leased = container.blob("leased")?;
    leased.upload("x", &Conditions::none()).await?;
    let guard = LeaseGuard::acquire_with(
        leased.clone(),
        LeaseDuration::seconds(15)?,
        GuardOptions::default().renew_every(Duration::from_secs(1)),
    )
    .await?;
    leased
        .break_lease(Some(BreakPeriod::immediate()), &Conditions::none())
        .await?;
    let loss = guard.lost().await;
    drop(guard);
    tokio::time::sleep(Duration::from_millis(100)).await; // the background release
    print_tree(&tree);
    println!("-> {loss}");

    println!("\n== 3. a message is poisoned ==");
    let queue =
        QueueServiceClient::new(&account)?.queue(&format!("observe-{}", std::process::id()))?;
    queue.create_if_not_exists().await?;
    queue.put_message("order 7").await?;
    let stats = process_until_empty(
        queue.clone(),
        |_: Delivery| async { Err("payment service said: card declined".into()) },
        WorkerOptions::default().max_dequeue_count(1),
    )
    .await?;
    print_tree(&tree);
    println!("-> {} failed, {} poisoned", stats.failed, stats.poisoned);

    println!("\n== metrics ==");
    let mut lines = Vec::new();
    for (key, unit, _, value) in snapshotter.snapshot().into_vec() {
        let labels: Vec<String> = key
            .key()
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        let value = match value {
            DebugValue::Counter(n) => format!("{n}"),
            DebugValue::Gauge(g) => format!("{}", g.into_inner()),
            DebugValue::Histogram(h) => {
                let v: Vec<String> = h.iter().map(|x| format!("{:.4}", x.into_inner())).collect();
                format!("[{}]", v.join(", "))
            }
        };
        let unit = unit
            .map(|u| format!(" {}", u.as_canonical_label()))
            .unwrap_or_default();
        lines.push(format!(
            "{} {{{}}} = {value}{unit}",
            key.key().name(),
            labels.join(", ")
        ));
    }
    lines.sort();
    for l in lines {
        println!("{l}");
    }

    container.delete(&Conditions::none()).await?;
    queue.delete().await?;
    queue
        .sibling(&format!("{}-poison", queue.name()))?
        .delete()
        .await?;
    Ok(())
}

/// Keeps every span (with the fields recorded on it later) and azstore's events, as a tree;
/// [`print_tree`] prints and forgets what it holds.
#[derive(Clone, Default)]
struct Tree(Arc<Mutex<Nodes>>);

#[derive(Default)]
struct Nodes {
    all: Vec<Node>,
    roots: Vec<usize>,
    open: HashMap<u64, usize>,
}

struct Node {
    line: String,
    fields: Fields,
    children: Vec<usize>,
}

#[derive(Default)]
struct Fields(BTreeMap<&'static str, String>);

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name(), value.to_string());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0.insert(field.name(), format!("{value:?}"));
    }
}

/// Fields left out of the printout to keep it short (they are recorded all the same).
const QUIET: &[&str] = &[
    "message",
    "otel.name",
    "otel.kind",
    "az.namespace",
    "az.client_request_id",
    "az.service_request.id",
    "server.address",
    "server.port",
    "http.request.method",
    "azstore.operation",
];

impl Fields {
    fn line(&self) -> String {
        self.0
            .iter()
            .filter(|(k, _)| !QUIET.contains(k))
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

impl Nodes {
    fn add(&mut self, parent: Option<u64>, node: Node) -> usize {
        self.all.push(node);
        let at = self.all.len() - 1;
        match parent.and_then(|p| self.open.get(&p)) {
            Some(&p) => self.all[p].children.push(at),
            None => self.roots.push(at),
        }
        at
    }

    fn print(&self, at: usize, depth: usize) {
        let n = &self.all[at];
        println!("{}{} {}", "  ".repeat(depth), n.line, n.fields.line());
        for &c in &n.children {
            self.print(c, depth + 1);
        }
    }
}

/// Prints the spans and events collected since the last call, as a tree.
fn print_tree(tree: &Tree) {
    let mut nodes = tree.0.lock().unwrap();
    for &r in &nodes.roots {
        nodes.print(r, 0);
    }
    // Spans still open (none here) would lose their children: fine for a demo.
    *nodes = Nodes::default();
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Tree {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let mut f = Fields::default();
        attrs.record(&mut f);
        let line = match f.0.get("otel.name") {
            Some(n) if attrs.metadata().name() == "azstore.operation" => n.clone(),
            Some(n) => format!("{} ({n})", attrs.metadata().name()),
            None => attrs.metadata().name().to_string(),
        };
        let parent = ctx
            .span(id)
            .and_then(|s| s.parent())
            .map(|p| p.id().into_u64());
        let mut nodes = self.0.lock().unwrap();
        let at = nodes.add(
            parent,
            Node {
                line,
                fields: f,
                children: Vec::new(),
            },
        );
        nodes.open.insert(id.into_u64(), at);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, _: Context<'_, S>) {
        let mut f = Fields::default();
        values.record(&mut f);
        let mut nodes = self.0.lock().unwrap();
        if let Some(&at) = nodes.open.get(&id.into_u64()) {
            nodes.all[at].fields.0.extend(f.0);
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        // azstore's own events (not those of the HTTP stack below it).
        if !event.metadata().target().starts_with("azstore") {
            return;
        }
        let mut f = Fields::default();
        event.record(&mut f);
        let line = format!(
            "! {} {}:",
            event.metadata().level(),
            f.0.get("message").map_or("", String::as_str)
        );
        let parent = ctx.event_span(event).map(|s| s.id().into_u64());
        self.0.lock().unwrap().add(
            parent,
            Node {
                line,
                fields: f,
                children: Vec::new(),
            },
        );
    }

    fn on_close(&self, id: Id, _: Context<'_, S>) {
        self.0.lock().unwrap().open.remove(&id.into_u64());
    }
}
