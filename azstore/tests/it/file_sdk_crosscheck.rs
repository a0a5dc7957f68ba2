//! Keeps the File test server honest: the official Python SDK (`azure-storage-file-share`)
//! runs the same operations against it (tests/python/file_sdk_check.py). If the official SDK
//! fails here, the server is wrong.

use testkit::file_server;

use azstore::file::{ShareServiceClient, TransferOptions};
use azstore::lease::{LeaseDuration, LeaseGuard};
use file_server::FileServer;
use sha2::Digest;

fn python() -> String {
    std::env::var("AZSTORE_PYTHON").unwrap_or_else(|_| {
        panic!(
            "AZSTORE_PYTHON is not set. This test runs the official Python SDK against the File \
             test server. Create the virtualenv with `scripts/pyenv` (it prints the python path) \
             and run `AZSTORE_PYTHON=$(scripts/pyenv) cargo test --test file_sdk_crosscheck`, \
             or run the whole suite with `scripts/test`."
        )
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn official_python_sdk_passes_against_the_test_server() {
    let python = python();
    let server = FileServer::start().await;
    let script = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/python/file_sdk_check.py"
    );
    let share = format!("py{}", uuid::Uuid::new_v4().simple());

    // azstore writes a multi-range file under a lease; the official SDK must read the same
    // bytes, see the lease, and be refused a write without its id.
    let interop = ShareServiceClient::new(&server.account())
        .unwrap()
        .share(&format!("rs{}", uuid::Uuid::new_v4().simple()))
        .unwrap();
    interop.create().await.unwrap();
    let data: Vec<u8> = (0..9 * 1024 * 1024 + 77u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 11) as u8)
        .collect();
    let sha: String = sha2::Sha256::digest(&data)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let file = interop.file("from-rust.bin").unwrap();
    file.create(0, None).await.unwrap();
    let lease = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite)
        .await
        .unwrap();
    file.upload(
        data.into(),
        &TransferOptions::default(),
        Some(lease.lease_id()),
    )
    .await
    .unwrap();

    let out = tokio::process::Command::new(&python)
        .arg(script)
        .arg(server.connection_string())
        .arg(&share)
        .arg(interop.name())
        .arg(&sha)
        .output()
        .await
        .unwrap_or_else(|e| panic!("could not run {python}: {e}"));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the official SDK failed against the test server:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("python file-share SDK check: OK"),
        "{stdout}"
    );
    // And azstore reads what the official SDK uploaded.
    let back = interop
        .file("from-python.txt")
        .unwrap()
        .download(&Default::default())
        .await
        .unwrap();
    assert_eq!(&back.body[..], b"written by azure-storage-file-share");
    lease.release().await.unwrap();
    // The script really talked to this server (uploads, downloads, leases, listing).
    assert!(server.request_count() > 20, "{}", server.request_count());
}
