//! 1 KiB Put Blob and Get Blob against Azurite: azstore side by side with a minimal
//! hand-written reqwest loop that builds and signs the same requests (the floor an SDK can
//! approach). Prints ops/s and client CPU per op (process user+system time from getrusage;
//! Azurite runs in another process) for both, and the ratios.
//!
//! Run: `scripts/azurite run -- cargo bench --bench blob_ops`

use std::time::{Duration, Instant};

use azstore::{Conditions, Service, StorageAccount, blob::BlobClient, blob::BlobServiceClient};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use bytes::Bytes;
use hmac::{Hmac, KeyInit, Mac};
use time::macros::format_description;

const BODY: usize = 1024;
const ROUND: Duration = Duration::from_millis(1000);
const ROUNDS: usize = 6;

/// Process CPU time (user + system) so far.
fn cpu_time() -> Duration {
    // SAFETY: getrusage writes into the zeroed struct we pass; RUSAGE_SELF is always valid.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut ru) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, (t.tv_usec as u32) * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}

/// The SharedKey string-to-sign of a request without query parameters and without
/// `content-*` headers other than the type (all the baseline sends).
fn string_to_sign(
    account: &str,
    method: &str,
    path: &str,
    headers: &[(String, String)],
    len: u64,
) -> String {
    let header = |name: &str| {
        headers
            .iter()
            .find(|(k, _)| k == name)
            .map_or("", |(_, v)| v.as_str())
    };
    let len = if len == 0 {
        String::new()
    } else {
        len.to_string()
    };
    let mut sts = format!(
        "{method}\n\n\n{len}\n\n{}\n\n\n\n\n\n\n",
        header("content-type")
    );
    let mut ms: Vec<_> = headers
        .iter()
        .filter(|(k, _)| k.starts_with("x-ms-"))
        .collect();
    ms.sort();
    for (k, v) in ms {
        sts.push_str(&format!("{k}:{}\n", v.trim()));
    }
    sts.push_str(&format!("/{account}{path}"));
    sts
}

/// The hand-written baseline: reqwest + the same SharedKey string-to-sign.
struct Raw {
    http: reqwest::Client,
    account: String,
    key: Vec<u8>,
    origin: String,
    prefix: String,
}

impl Raw {
    fn new(conn: &str, account: &StorageAccount) -> Raw {
        let key = conn
            .split(';')
            .find_map(|p| p.strip_prefix("AccountKey="))
            .expect("AccountKey in the connection string");
        let ep = account.endpoint(Service::Blob).unwrap();
        Raw {
            // reqwest's `rustls-no-provider` (azstore's choice) needs a TLS configuration; this
            // loop speaks plain HTTP to Azurite, so no roots are needed.
            http: reqwest::Client::builder()
                .tls_backend_preconfigured(
                    rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
                        rustls::crypto::ring::default_provider(),
                    ))
                    .with_safe_default_protocol_versions()
                    .unwrap()
                    .with_root_certificates(rustls::RootCertStore::empty())
                    .with_no_client_auth(),
                )
                .tcp_nodelay(true)
                .build()
                .unwrap(),
            account: account.name().to_string(),
            key: STANDARD.decode(key).unwrap(),
            origin: ep.origin().to_string(),
            prefix: ep.path_prefix().to_string(),
        }
    }

    fn date() -> String {
        time::OffsetDateTime::now_utc()
            .format(format_description!(
                "[weekday repr:short], [day] [month repr:short] [year] [hour]:[minute]:[second] GMT"
            ))
            .unwrap()
    }

    fn signed(
        &self,
        method: &str,
        path: &str,
        mut headers: Vec<(String, String)>,
        len: u64,
    ) -> reqwest::RequestBuilder {
        headers.push(("x-ms-date".into(), Raw::date()));
        headers.push(("x-ms-version".into(), azstore::storage::API_VERSION.into()));
        let full = format!("{}/{}", self.prefix, path);
        let sts = string_to_sign(&self.account, method, &full, &headers, len);
        let mut mac = Hmac::<sha2::Sha256>::new_from_slice(&self.key).unwrap();
        mac.update(sts.as_bytes());
        let sig = STANDARD.encode(mac.finalize().into_bytes());
        let mut rb = self.http.request(
            reqwest::Method::from_bytes(method.as_bytes()).unwrap(),
            format!("{}{}", self.origin, full),
        );
        for (k, v) in headers {
            rb = rb.header(k, v);
        }
        rb.header("authorization", format!("SharedKey {}:{sig}", self.account))
    }

    async fn put(&self, path: &str, body: Bytes) {
        let h = vec![
            ("x-ms-blob-type".to_string(), "BlockBlob".to_string()),
            (
                "content-type".to_string(),
                "application/octet-stream".to_string(),
            ),
        ];
        let resp = self
            .signed("PUT", path, h, body.len() as u64)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 201);
        assert!(resp.headers().contains_key("etag"));
        resp.bytes().await.unwrap();
    }

    async fn get(&self, path: &str) -> Bytes {
        let resp = self
            .signed("GET", path, Vec::new(), 0)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 200);
        assert!(resp.headers().contains_key("etag"));
        resp.bytes().await.unwrap()
    }
}

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Put,
    Get,
}

#[derive(Clone, Copy, PartialEq)]
enum Impl {
    Azstore,
    Raw,
}

#[derive(Default, Clone, Copy)]
struct Tally {
    ops: u64,
    wall: Duration,
    cpu: Duration,
}

impl Tally {
    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.wall.as_secs_f64()
    }
    fn cpu_us_per_op(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.ops as f64
    }
}

async fn one(which: Impl, op: Op, blob: &BlobClient, raw: &Raw, path: &str, body: &Bytes) {
    match (which, op) {
        (Impl::Azstore, Op::Put) => {
            blob.upload(body.clone(), &Conditions::none())
                .await
                .unwrap();
        }
        (Impl::Azstore, Op::Get) => {
            let d = blob.download().await.unwrap();
            assert_eq!(d.body.len(), BODY);
        }
        (Impl::Raw, Op::Put) => raw.put(path, body.clone()).await,
        (Impl::Raw, Op::Get) => assert_eq!(raw.get(path).await.len(), BODY),
    }
}

/// Runs `concurrency` loops of `op` for one round; returns ops, wall and CPU time.
async fn round(
    which: Impl,
    op: Op,
    concurrency: usize,
    blobs: &[BlobClient],
    raw: &std::sync::Arc<Raw>,
    body: &Bytes,
) -> Tally {
    let cpu0 = cpu_time();
    let start = Instant::now();
    let mut tasks = Vec::new();
    for b in blobs.iter().take(concurrency) {
        let b = b.clone();
        let raw = raw.clone();
        let body = body.clone();
        let path = format!("{}/{}", b.container_name(), b.name());
        tasks.push(tokio::spawn(async move {
            let mut n = 0u64;
            while start.elapsed() < ROUND {
                one(which, op, &b, &raw, &path, &body).await;
                n += 1;
            }
            n
        }));
    }
    let mut ops = 0;
    for t in tasks {
        ops += t.await.unwrap();
    }
    Tally {
        ops,
        wall: start.elapsed(),
        cpu: cpu_time() - cpu0,
    }
}

fn add(a: Tally, b: Tally) -> Tally {
    Tally {
        ops: a.ops + b.ops,
        wall: a.wall + b.wall,
        cpu: a.cpu + b.cpu,
    }
}

#[tokio::main]
async fn main() {
    let conn = std::env::var("AZURE_STORAGE_CONNECTION_STRING").unwrap_or_else(|_| {
        panic!("set AZURE_STORAGE_CONNECTION_STRING (run: scripts/azurite run -- cargo bench --bench blob_ops)")
    });
    let account = StorageAccount::from_connection_string(&conn).unwrap();
    let svc = BlobServiceClient::new(&account).unwrap();
    let container = svc
        .container(&format!("bench{}", std::process::id()))
        .unwrap();
    container.create_if_not_exists().await.unwrap();
    let body = Bytes::from(vec![0x5au8; BODY]);
    let blobs: Vec<BlobClient> = (0..8)
        .map(|i| container.blob(&format!("b{i}")).unwrap())
        .collect();
    for b in &blobs {
        b.upload(body.clone(), &Conditions::none()).await.unwrap();
    }
    let raw = std::sync::Arc::new(Raw::new(&conn, &account));

    // Warm up connections and code paths on both sides.
    for which in [Impl::Azstore, Impl::Raw] {
        for _ in 0..50 {
            let path = format!("{}/{}", container.name(), blobs[0].name());
            one(which, Op::Get, &blobs[0], &raw, &path, &body).await;
        }
    }

    println!(
        "blob_ops: 1 KiB blobs against Azurite, {ROUNDS} interleaved rounds of {ROUND:?} each"
    );
    println!(
        "{:<12} {:>4} {:>12} {:>12} {:>8} {:>14} {:>14} {:>8}",
        "op",
        "conc",
        "azstore/s",
        "reqwest/s",
        "ratio",
        "azstore cpu/op",
        "reqwest cpu/op",
        "ratio"
    );
    for (name, op) in [("put 1 KiB", Op::Put), ("get 1 KiB", Op::Get)] {
        for concurrency in [1usize, 8] {
            let mut az = Tally::default();
            let mut rw = Tally::default();
            for _ in 0..ROUNDS {
                az = add(
                    az,
                    round(Impl::Azstore, op, concurrency, &blobs, &raw, &body).await,
                );
                rw = add(
                    rw,
                    round(Impl::Raw, op, concurrency, &blobs, &raw, &body).await,
                );
            }
            println!(
                "{:<12} {:>4} {:>12.0} {:>12.0} {:>8.2} {:>12.1}us {:>12.1}us {:>8.2}",
                name,
                concurrency,
                az.ops_per_sec(),
                rw.ops_per_sec(),
                az.ops_per_sec() / rw.ops_per_sec(),
                az.cpu_us_per_op(),
                rw.cpu_us_per_op(),
                az.cpu_us_per_op() / rw.cpu_us_per_op(),
            );
        }
    }
    println!(
        "targets: throughput ratio >= 0.90, CPU ratio <= 1.50 (CPU is this process only; \
         Azurite's own CPU is not counted)"
    );
    container.delete(&Conditions::none()).await.unwrap();
}
