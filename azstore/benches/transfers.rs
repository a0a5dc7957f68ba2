//! Large transfers against Azurite: every azstore transfer mode beside a hand-written parallel
//! reqwest loop (the floor), in the same run. Each mode runs in a child process of its own so
//! that its peak RSS is its own; the repetitions interleave the modes (so a change of the
//! machine's load falls on all of them alike); the parent prints, per mode, the median of
//! `REPS` runs:
//!
//! ```text
//! transfer: MODE, X MB/s, Y cpu-s, Z MiB rss
//! ```
//!
//! MB/s is 10^6 bytes per wall-clock second; cpu-s is the child's user + system CPU time
//! (Azurite's own CPU is not counted); rss is the child's peak resident set.
//!
//! Run: `scripts/azurite run -- cargo bench -p azstore --bench transfers`
//! (`AZSTORE_TRANSFER_MIB=1024` for the 1 GiB memory check, `AZSTORE_TRANSFER_REPS=N`,
//! `AZSTORE_TRANSFER_ONLY=upload_file,download_to_file` for some modes only).

#[path = "floor/mod.rs"]
mod floor;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::Instant;

use azstore::blob::{DownloadOptions, UploadOptions};
use azstore::{Conditions, StorageAccount, blob::BlobClient, blob::BlobServiceClient};
use bytes::Bytes;
use floor::Floor;
use futures_util::{StreamExt, TryStreamExt};

const MIB: u64 = 1024 * 1024;
/// Downloads: 8 MiB ranges, 8 in flight, for azstore and the floor alike.
const DOWN_CHUNK: u64 = 8 * MIB;
const DOWN_CONCURRENCY: usize = 8;
/// Uploads: 8 MiB blocks, 4 in flight.
const UP_BLOCK: usize = 8 * MIB as usize;
const UP_CONCURRENCY: usize = 4;

const MODES: &[&str] = &[
    "floor download (8 MiB ranges x 8, positioned writes)",
    "download_to_file (8 MiB x 8)",
    "download_stream_with (8 MiB x 8)",
    "download_chunked (8 MiB x 8)",
    "download_into (8 MiB x 8)",
    "download_stream (sequential 8 MiB)",
    "floor upload (8 MiB blocks x 4, from memory)",
    "upload_file (8 MiB x 4)",
    "upload_reader (8 MiB x 4)",
    "upload_with (8 MiB x 4, from memory)",
];

struct Env {
    container: String,
    source: PathBuf,
    target: PathBuf,
    size: u64,
}

fn blob(env: &Env, name: &str) -> BlobClient {
    let account = StorageAccount::from_env().expect("connection string");
    BlobServiceClient::new(&account)
        .unwrap()
        .container(&env.container)
        .unwrap()
        .blob(name)
        .unwrap()
}

fn pattern(len: u64) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

fn main() {
    if let Ok(mode) = std::env::var("AZSTORE_TRANSFER_MODE") {
        let env = Env {
            container: std::env::var("AZSTORE_TRANSFER_CONTAINER").unwrap(),
            source: std::env::var("AZSTORE_TRANSFER_SOURCE").unwrap().into(),
            target: std::env::var("AZSTORE_TRANSFER_TARGET").unwrap().into(),
            size: std::env::var("AZSTORE_TRANSFER_SIZE")
                .unwrap()
                .parse()
                .unwrap(),
        };
        child(&mode, &env);
        return;
    }
    let mib: u64 = std::env::var("AZSTORE_TRANSFER_MIB")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(256);
    let reps: usize = std::env::var("AZSTORE_TRANSFER_REPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3);
    let only = std::env::var("AZSTORE_TRANSFER_ONLY").ok();
    let size = mib * MIB;
    let dir = std::env::temp_dir().join(format!("azstore-transfers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let env = Env {
        container: format!("transfers{}", std::process::id()),
        source: dir.join("source.bin"),
        target: dir.join("target.bin"),
        size,
    };
    std::fs::write(&env.source, pattern(size)).unwrap();
    let rt = tokio::runtime::Runtime::new().unwrap();
    rt.block_on(async {
        let account = StorageAccount::from_env().expect("run under scripts/azurite run --");
        let c = BlobServiceClient::new(&account)
            .unwrap()
            .container(&env.container)
            .unwrap();
        c.create().await.unwrap();
        blob(&env, "source")
            .upload_file(&env.source, &UploadOptions::new(Conditions::none()))
            .await
            .unwrap();
    });
    println!(
        "transfers: {mib} MiB against Azurite, median of {reps} runs, each mode in its own process"
    );
    let modes: Vec<&str> = MODES
        .iter()
        .copied()
        .filter(|mode| {
            only.as_deref()
                .is_none_or(|o| o.split(',').any(|o| mode.contains(o)))
        })
        .collect();
    // Repetitions interleave the modes (rep 1 of every mode, then rep 2, ...), so a change of
    // the machine's load during the run falls on every mode alike.
    let mut runs: Vec<Vec<(f64, f64, f64)>> = vec![Vec::new(); modes.len()];
    for _ in 0..reps {
        for (mode, runs) in modes.iter().zip(&mut runs) {
            runs.push(run_child(mode, &env));
        }
    }
    for (mode, runs) in modes.iter().zip(&runs) {
        let median = |i: usize| {
            let mut v: Vec<f64> = runs.iter().map(|r| [r.0, r.1, r.2][i]).collect();
            v.sort_by(|a, b| a.total_cmp(b));
            v[v.len() / 2]
        };
        let (secs, cpu, rss) = (median(0), median(1), median(2));
        println!(
            "transfer: {mode}, {:.0} MB/s, {cpu:.2} cpu-s, {rss:.0} MiB rss",
            size as f64 / 1e6 / secs
        );
    }
    rt.block_on(async {
        let account = StorageAccount::from_env().unwrap();
        let c = BlobServiceClient::new(&account)
            .unwrap()
            .container(&env.container)
            .unwrap();
        c.delete(&Conditions::none()).await.unwrap();
    });
    std::fs::remove_dir_all(&dir).unwrap();
    println!(
        "targets: parallel download >= 90% of the floor's MB/s at the same concurrency; \
         download_to_file cpu <= 1.2x download_stream_with; 1 GiB file modes < 100 MiB rss"
    );
}

/// Runs one mode in a child process; returns (seconds, cpu seconds, peak RSS MiB).
fn run_child(mode: &str, env: &Env) -> (f64, f64, f64) {
    // Every mode starts without a target file (replacing one would add its release to the
    // mode's CPU time).
    let _ = std::fs::remove_file(&env.target);
    let out = Command::new(std::env::current_exe().unwrap())
        .env("AZSTORE_TRANSFER_MODE", mode)
        .env("AZSTORE_TRANSFER_CONTAINER", &env.container)
        .env("AZSTORE_TRANSFER_SOURCE", &env.source)
        .env("AZSTORE_TRANSFER_TARGET", &env.target)
        .env("AZSTORE_TRANSFER_SIZE", env.size.to_string())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    if std::env::var_os("AZSTORE_TRANSFER_VERBOSE").is_some() {
        eprint!("{}", String::from_utf8_lossy(&out.stderr));
    }
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT "))
        .unwrap_or_else(|| {
            panic!(
                "mode {mode} failed: {}\n{}",
                stdout,
                String::from_utf8_lossy(&out.stderr)
            )
        });
    let v: Vec<f64> = line.split(' ').map(|x| x.parse().unwrap()).collect();
    (v[0], v[1], v[2])
}

fn child(mode: &str, env: &Env) {
    let rt = tokio::runtime::Runtime::new().unwrap();
    let src = blob(env, "source");
    let floor = Arc::new(Floor::from_env());
    let path = format!("{}/source", env.container);
    // Connections are opened inside the measurement for every mode alike.
    let cpu0 = floor::cpu_seconds();
    let split0 = floor::cpu_split();
    let start = Instant::now();
    rt.block_on(async {
        let down = DownloadOptions::default()
            .chunk_size(DOWN_CHUNK)
            .max_concurrency(DOWN_CONCURRENCY);
        let up = UploadOptions::new(Conditions::none())
            .block_size(UP_BLOCK)
            .max_concurrency(UP_CONCURRENCY);
        let got = match mode.split(' ').next().unwrap() {
            "floor" if mode.contains("download") => {
                floor_download(&floor, &path, &env.target, env.size).await
            }
            "floor" => floor_upload(&floor, env).await,
            "download_to_file" => {
                src.download_to_file(&env.target, &down)
                    .await
                    .unwrap()
                    .content_length
            }
            "download_stream_with" => {
                let s = src.download_stream_with(&down).await.unwrap();
                s.try_fold(0u64, |n, c| async move { Ok(n + c.len() as u64) })
                    .await
                    .unwrap()
            }
            "download_chunked" => src.download_chunked(&down).await.unwrap().body.len() as u64,
            "download_into" => {
                let mut buf = vec![0u8; env.size as usize];
                src.download_into(&mut buf, &down)
                    .await
                    .unwrap()
                    .content_length
            }
            "download_stream" => {
                let s = src.download_stream(DOWN_CHUNK).await.unwrap();
                s.try_fold(0u64, |n, c| async move { Ok(n + c.len() as u64) })
                    .await
                    .unwrap()
            }
            "upload_file" => {
                blob(env, "up").upload_file(&env.source, &up).await.unwrap();
                env.size
            }
            "upload_reader" => {
                let f = tokio::fs::File::open(&env.source).await.unwrap();
                blob(env, "up").upload_reader(f, &up).await.unwrap();
                env.size
            }
            "upload_with" => {
                let data = Bytes::from(std::fs::read(&env.source).unwrap());
                blob(env, "up").upload_with(data, &up).await.unwrap();
                env.size
            }
            other => panic!("unknown mode {other}"),
        };
        assert_eq!(got, env.size, "{mode} moved the wrong number of bytes");
    });
    let secs = start.elapsed().as_secs_f64();
    let cpu = floor::cpu_seconds() - cpu0;
    if mode.contains("download") && (mode.contains("file") || mode.contains("floor")) {
        let on_disk = std::fs::metadata(&env.target).unwrap().len();
        assert_eq!(on_disk, env.size);
    }
    let split = floor::cpu_split();
    eprintln!(
        "{mode}: user {:.2} s, system {:.2} s",
        split.0 - split0.0,
        split.1 - split0.1
    );
    println!("RESULT {secs} {cpu} {}", floor::peak_rss_mib());
}

/// The floor's download: ranges of 8 MiB, 8 in flight, each response body written to the
/// file at its offset piece by piece as it arrives.
async fn floor_download(floor: &Floor, path: &str, target: &Path, size: u64) -> u64 {
    use std::os::unix::fs::FileExt;
    let file = Arc::new(std::fs::File::create(target).unwrap());
    file.set_len(size).unwrap();
    let ranges = (0..size)
        .step_by(DOWN_CHUNK as usize)
        .map(|s| (s, (s + DOWN_CHUNK).min(size)));
    futures_util::stream::iter(ranges)
        .map(|(start, end)| {
            let file = file.clone();
            async move {
                let mut resp = floor.get_range(path, start, end).send().await.unwrap();
                assert_eq!(resp.status().as_u16(), 206);
                let mut at = start;
                while let Some(piece) = resp.chunk().await.unwrap() {
                    file.write_all_at(&piece, at).unwrap();
                    at += piece.len() as u64;
                }
                assert_eq!(at, end);
                end - start
            }
        })
        .buffer_unordered(DOWN_CONCURRENCY)
        .fold(0u64, |n, m| async move { n + m })
        .await
}

/// The floor's upload: Put Block of 8 MiB slices of one buffer, 4 in flight, then Put Block
/// List.
async fn floor_upload(floor: &Floor, env: &Env) -> u64 {
    use base64::Engine;
    let data = Bytes::from(std::fs::read(&env.source).unwrap());
    let path = format!("{}/up", env.container);
    // 6 bytes encode to 8 base64 characters without padding, `+` or `/`.
    let id = |i: usize| base64::engine::general_purpose::STANDARD.encode(format!("b{i:05}"));
    let n = data.len().div_ceil(UP_BLOCK);
    futures_util::stream::iter(0..n)
        .map(|i| {
            let body = data.slice(i * UP_BLOCK..((i + 1) * UP_BLOCK).min(data.len()));
            let p = path.clone();
            async move {
                let resp = floor.put_block(&p, &id(i), body).send().await.unwrap();
                assert_eq!(resp.status().as_u16(), 201, "{:?}", resp.text().await);
            }
        })
        .buffer_unordered(UP_CONCURRENCY)
        .collect::<Vec<()>>()
        .await;
    let mut xml = String::from("<?xml version=\"1.0\" encoding=\"utf-8\"?><BlockList>");
    for i in 0..n {
        xml.push_str(&format!("<Latest>{}</Latest>", id(i)));
    }
    xml.push_str("</BlockList>");
    let resp = floor.put_block_list(&path, xml).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 201);
    data.len() as u64
}
