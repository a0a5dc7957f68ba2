//! Instructions per request, azstore beside the floor (a hand-signed reqwest loop, see
//! `floor/mod.rs`): `scripts/bench-instructions` runs this binary under
//! `valgrind --tool=callgrind` twice per operation and side, with two operation counts, and
//! divides the difference by the difference of the counts, so start-up, connection set-up and
//! warm-up cancel out. Instruction counts are deterministic where CPU time on a shared machine
//! is not.
//!
//! Usage (normally through the script): `instructions OP SIDE COUNT` with OP one of
//! `get-1k-16` (1 KiB Get Blob, 16 in flight), `put-1k` (1 KiB Put Blob),
//! `get-properties` (Get Blob Properties) and SIDE `azstore`, `floor` or `observed` (azstore
//! with a subscriber: tracing-subscriber's registry and fmt layer at INFO writing to a sink,
//! and, when built with the `metrics` feature, `metrics-util`'s debugging recorder).

#[path = "floor/mod.rs"]
mod floor;

use azstore::{Conditions, StorageAccount, blob::BlobClient, blob::BlobServiceClient};
use bytes::Bytes;
use floor::Floor;

const IN_FLIGHT: usize = 16;
const WARM_UP: usize = 32;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 || args.iter().any(|a| a == "--bench") {
        // `cargo bench` runs every bench target with `--bench`: nothing to do without the
        // script's arguments.
        eprintln!("usage: instructions OP SIDE COUNT (see scripts/bench-instructions)");
        return;
    }
    let (op, mut side, count) = (
        args[1].as_str(),
        args[2].as_str(),
        args[3].parse::<usize>().expect("COUNT"),
    );
    if side == "observed" {
        observe();
        side = "azstore";
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(run(op, side, count));
}

/// Installs a subscriber that records azstore's INFO spans (formatting its events into a
/// sink) and, with the `metrics` feature, a recorder that keeps every metric.
fn observe() {
    use tracing_subscriber::layer::SubscriberExt;
    let subscriber = tracing_subscriber::registry()
        .with(tracing_subscriber::filter::LevelFilter::INFO)
        .with(tracing_subscriber::fmt::layer().with_writer(std::io::sink));
    tracing::subscriber::set_global_default(subscriber).expect("one subscriber");
    #[cfg(feature = "metrics")]
    metrics_util::debugging::DebuggingRecorder::new()
        .install()
        .expect("one recorder");
}

async fn run(op: &str, side: &str, count: usize) {
    let container = std::env::var("AZSTORE_INSTRUCTIONS_CONTAINER").unwrap_or_else(|_| {
        panic!("set AZSTORE_INSTRUCTIONS_CONTAINER (scripts/bench-instructions does)")
    });
    let account = StorageAccount::from_env().expect("connection string");
    let c = BlobServiceClient::new(&account)
        .unwrap()
        .container(&container)
        .unwrap();
    c.create_if_not_exists().await.unwrap();
    let blobs: Vec<BlobClient> = (0..IN_FLIGHT)
        .map(|i| c.blob(&format!("b{i}")).unwrap())
        .collect();
    let body = Bytes::from(vec![0x5au8; 1024]);
    for b in &blobs {
        b.upload(body.clone(), &Conditions::none()).await.unwrap();
    }
    let floor = std::rc::Rc::new(Floor::from_env());
    let one = |i: usize| {
        let (b, floor, body) = (blobs[i % IN_FLIGHT].clone(), floor.clone(), body.clone());
        let path = format!("{container}/{}", b.name());
        async move {
            match (op, side) {
                ("get-1k-16", "azstore") => {
                    let d = b.download().await.unwrap();
                    assert_eq!(d.body.len(), 1024);
                }
                ("get-1k-16", "floor") => {
                    let resp = floor
                        .request(reqwest::Method::GET, &path, &[], Vec::new(), 0, "")
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status().as_u16(), 200);
                    assert!(resp.headers().contains_key("etag"));
                    assert_eq!(resp.bytes().await.unwrap().len(), 1024);
                }
                ("put-1k", "azstore") => {
                    b.upload(body, &Conditions::none()).await.unwrap();
                }
                ("put-1k", "floor") => {
                    let resp = floor
                        .request(
                            reqwest::Method::PUT,
                            &path,
                            &[],
                            vec![("x-ms-blob-type", "BlockBlob".to_string())],
                            body.len() as u64,
                            "application/octet-stream",
                        )
                        .body(body)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status().as_u16(), 201);
                    assert!(resp.headers().contains_key("etag"));
                    resp.bytes().await.unwrap();
                }
                ("get-properties", "azstore") => {
                    let p = b.get_properties().await.unwrap();
                    assert_eq!(p.content_length, 1024);
                }
                ("get-properties", "floor") => {
                    let resp = floor
                        .request(reqwest::Method::HEAD, &path, &[], Vec::new(), 0, "")
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(resp.status().as_u16(), 200);
                    assert!(resp.headers().contains_key("etag"));
                    resp.bytes().await.unwrap();
                }
                other => panic!("unknown operation/side {other:?}"),
            }
        }
    };
    let in_flight = if op == "get-1k-16" { IN_FLIGHT } else { 1 };
    for n in [WARM_UP, count] {
        use futures_util::StreamExt;
        futures_util::stream::iter(0..n)
            .map(one)
            .buffer_unordered(in_flight)
            .collect::<Vec<()>>()
            .await;
    }
}
