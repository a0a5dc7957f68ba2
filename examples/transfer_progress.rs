//! Large transfers with a progress bar: a file uploaded in parallel blocks, downloaded back in
//! parallel ranges pinned to one version, both watched through `Progress` (a callback for the
//! upload, a `watch` channel for the download). The bar is drawn by `indicatif`, a
//! dependency of the example only (feature `progress`): the library reports numbers, the
//! caller draws.
//!
//! Run against the local emulator:
//! `scripts/azurite run -- cargo run -p azstore-examples --features progress --example transfer_progress [MiB]`
use std::time::Duration;

use azstore::blob::{DownloadOptions, OnChange, UploadOptions};
use azstore::transfer::Progress;
use azstore::{Conditions, StorageAccount, blob::BlobServiceClient};
use indicatif::{ProgressBar, ProgressStyle};

fn bar(len: u64, what: &str) -> ProgressBar {
    let bar = ProgressBar::new(len);
    bar.set_style(
        ProgressStyle::with_template(
            "{msg:>9} [{bar:40}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
        )
        .expect("template")
        .progress_chars("=> "),
    );
    bar.set_message(what.to_string());
    bar
}

#[tokio::main]
async fn main() -> azstore::Result<()> {
    let mib: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(64);
    let account = StorageAccount::from_env()?;
    let container = BlobServiceClient::new(&account)?
        .container(&format!("transfer-progress-{}", std::process::id()))?;
    container.create_if_not_exists().await?;
    let blob = container.blob("big.bin")?;

    let dir = std::env::temp_dir();
    let source = dir.join(format!("azstore-progress-{}.bin", std::process::id()));
    let target = dir.join(format!("azstore-progress-{}.copy", std::process::id()));
    let data: Vec<u8> = (0..mib * 1024 * 1024).map(|i| (i % 251) as u8).collect();
    std::fs::write(&source, &data).expect("write the source file");

    // Upload: a callback moves the bar.
    let up = bar(data.len() as u64, "upload");
    let progress = {
        let up = up.clone();
        Progress::callback(move |p| up.set_position(p.bytes))
    };
    let options = UploadOptions::new(Conditions::if_not_exists())
        .block_size(8 << 20)
        .max_concurrency(4)
        .progress(progress);
    let written = blob.upload_file(&source, &options).await?;
    up.finish();

    // Download: a watch channel, read by a task that draws the bar.
    let (progress, mut rx) = Progress::channel();
    let down = bar(data.len() as u64, "download");
    let drawer = {
        let down = down.clone();
        tokio::spawn(async move {
            while rx.changed().await.is_ok() {
                let p = *rx.borrow();
                if let Some(total) = p.total {
                    down.set_length(total);
                }
                down.set_position(p.bytes);
            }
        })
    };
    let options = DownloadOptions::default()
        .max_concurrency(8)
        .on_change(OnChange::Restart { max_restarts: 3 })
        .progress(progress);
    let props = blob.download_to_file(&target, &options).await?;
    down.finish();
    drop(options); // closes the channel: the drawer ends
    let _ = tokio::time::timeout(Duration::from_secs(1), drawer).await;

    assert_eq!(
        props.etag, written.etag,
        "downloaded the version we uploaded"
    );
    let same = std::fs::read(&target).expect("read the copy") == data;
    println!(
        "{} MiB up and down, etag {}, identical: {same}",
        mib, props.etag
    );
    let _ = std::fs::remove_file(&source);
    let _ = std::fs::remove_file(&target);
    container.delete(&Conditions::none()).await?;
    Ok(())
}
