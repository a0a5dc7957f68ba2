//! Test support for azstore (a dev-dependency of the workspace's crates, never of the library): the Azurite account (failing loudly when it is absent), unique
//! resource names, and a scripted HTTP server for retry/error tests without Azure.
#![allow(dead_code)]

pub mod blob;
#[doc(hidden)]
pub use paste as __paste;
pub mod contract;
pub mod fault;
pub mod file_server;
pub mod queue;
pub mod redis;
pub mod replay;
pub mod scripted;
pub mod table;
pub mod tls;
pub mod token;
pub mod update;

use std::sync::atomic::{AtomicU32, Ordering};

use azstore::{Service, StorageAccount};

/// The account of the Azurite instance started by `scripts/azurite run`. Panics with
/// instructions when the connection string is missing or the emulator is unreachable:
/// integration tests never skip.
pub fn account() -> StorageAccount {
    let account = StorageAccount::from_env().unwrap_or_else(|e| {
        panic!(
            "{e}\n\nThese tests need Azurite. Run the suite with `scripts/test`, or wrap a \
             command in `scripts/azurite run --only azurite,file,tls,redis -- cargo test`."
        )
    });
    for svc in [Service::Blob, Service::Queue, Service::Table, Service::File] {
        if let Ok(ep) = account.endpoint(svc) {
            let hostport = ep
                .origin()
                .split("://")
                .nth(1)
                .unwrap_or_default()
                .to_string();
            if std::net::TcpStream::connect(&hostport).is_err() {
                panic!(
                    "Azurite is not reachable at {hostport} ({svc:?}). Start it with \
                     `scripts/azurite run --only azurite,file,tls,redis -- cargo test` (or run `scripts/test`)."
                );
            }
        }
    }
    account
}

/// Client options that retry `max_retries` times after 5 ms, without jitter: a retry test's
/// whole schedule takes milliseconds and the attempt count is exact.
pub fn fast_retry(max_retries: u32) -> azstore::http::ClientOptions {
    azstore::http::ClientOptions::default().retry(
        azstore::http::RetryPolicy::default()
            .max_retries(max_retries)
            .initial_delay(std::time::Duration::from_millis(5))
            .jitter(azstore::http::Jitter::None),
    )
}

/// A name unique to this process and call, usable as a container, queue or table name
/// (lowercase letters and digits, starts with a letter).
pub fn unique(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let rand = uuid::Uuid::new_v4().simple().to_string();
    let mut s = format!("{prefix}{}{n}{}", std::process::id(), &rand[..8]);
    s.retain(|c| c.is_ascii_alphanumeric());
    s.make_ascii_lowercase();
    s.truncate(40);
    s
}
