//! Checks azstore against a real account in one command: creates uniquely named temporary
//! resources in each of the four services, runs a short tour of the concurrency contract,
//! deletes what it created (also when a check fails), and prints a table with timings.
//!
//! ```text
//! # the same environment as StorageAccount::from_env(), e.g. Entra ID after `az login`:
//! AZURE_STORAGE_ACCOUNT=myaccount cargo run -p azstore-examples --features identity --example live_check
//! # or a connection string / key / SAS:
//! AZURE_STORAGE_CONNECTION_STRING='...' cargo run -p azstore-examples --example live_check
//! ```
//!
//! Network options come from `TransportOptions::from_env()` (`AZSTORE_CA_FILE`,
//! `AZSTORE_TLS_ROOTS`, `AZSTORE_ALLOW_BEARER_OVER_HTTP`) and the standard proxy variables.
//! Exit status 0 when every check passed, 1 otherwise. CI runs it against the HTTPS + OAuth
//! Azurite and the local File service (`scripts/live-check-local`).

use std::future::Future;
use std::time::{Duration, Instant};

use azstore::file::ShareServiceClient;
use azstore::http::TransportOptions;
use azstore::lease::{Leasable, LeaseDuration, LeaseGuard};
use azstore::{
    Conditions, ErrorCode, ErrorKind, LeaseId, Service, StorageAccount, blob::BlobServiceClient,
    http::ClientOptions, queue::QueueServiceClient, table::TableServiceClient,
};

/// One line of the report.
struct Check {
    service: &'static str,
    name: &'static str,
    outcome: Result<(), String>,
    took: Duration,
}

#[derive(Default)]
struct Report(Vec<Check>);

impl Report {
    /// Runs `f` as one check. Returns whether it passed.
    async fn run<F, Fut>(&mut self, service: &'static str, name: &'static str, f: F) -> bool
    where
        F: FnOnce() -> Fut,
        Fut: Future<Output = Result<(), String>>,
    {
        let start = Instant::now();
        let outcome = match tokio::time::timeout(Duration::from_secs(120), f()).await {
            Ok(r) => r,
            Err(_) => Err("no result within 120 s".to_string()),
        };
        let ok = outcome.is_ok();
        self.0.push(Check {
            service,
            name,
            outcome,
            took: start.elapsed(),
        });
        ok
    }

    fn print(&self) -> bool {
        println!("{:<6} {:<46} {:>8}  result", "svc", "check", "ms");
        let mut all = true;
        for c in &self.0 {
            let (mark, detail) = match &c.outcome {
                Ok(()) => ("pass", String::new()),
                Err(e) => {
                    all = false;
                    ("FAIL", format!("  {e}"))
                }
            };
            println!(
                "{:<6} {:<46} {:>8}  {mark}{detail}",
                c.service,
                c.name,
                c.took.as_millis()
            );
        }
        let failed = self.0.iter().filter(|c| c.outcome.is_err()).count();
        println!(
            "live check: {} of {} checks passed",
            self.0.len() - failed,
            self.0.len()
        );
        all
    }
}

/// `Ok` if `r` failed with `kind` (and `code`, when given).
fn expect_err<T>(
    r: azstore::Result<T>,
    kind: ErrorKind,
    code: Option<ErrorCode>,
) -> Result<(), String> {
    match r {
        Ok(_) => Err(format!("expected {kind:?}, the operation succeeded")),
        Err(e) if e.kind() == kind && code.as_ref().is_none_or(|c| e.error_code() == Some(c)) => {
            Ok(())
        }
        Err(e) => Err(format!("expected {kind:?} {code:?}, got {e}")),
    }
}

fn s(e: azstore::Error) -> String {
    e.to_string()
}

fn unique(prefix: &str) -> String {
    let id = uuid::Uuid::new_v4().simple().to_string();
    format!("{prefix}{}", &id[..20])
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run().await {
        Ok(true) => std::process::ExitCode::SUCCESS,
        Ok(false) => std::process::ExitCode::from(1),
        Err(e) => {
            eprintln!("live_check: {e}");
            std::process::ExitCode::from(2)
        }
    }
}

async fn run() -> azstore::Result<bool> {
    let account = StorageAccount::from_env()?;
    let options = ClientOptions::default().transport(TransportOptions::from_env()?);
    println!(
        "account {} ({})",
        account.name(),
        match account.credential() {
            azstore::credential::Credential::SharedKey(_) => "shared key",
            azstore::credential::Credential::Sas(_) => "SAS",
            azstore::credential::Credential::Bearer(_) => "bearer token",
            _ => "anonymous",
        }
    );
    let mut report = Report::default();
    blob(&account, &options, &mut report).await;
    table(&account, &options, &mut report).await;
    queue(&account, &options, &mut report).await;
    file(&account, &options, &mut report).await;
    Ok(report.print())
}

fn endpoint(account: &StorageAccount, svc: Service) -> Result<(), String> {
    account.endpoint(svc).map(|_| ()).map_err(s)
}

async fn blob(account: &StorageAccount, options: &ClientOptions, r: &mut Report) {
    let container = match endpoint(account, Service::Blob)
        .and_then(|()| BlobServiceClient::with_options(account, options.clone()).map_err(s))
        .and_then(|c| c.container(&unique("livecheck")).map_err(s))
    {
        Ok(c) => c,
        Err(e) => {
            r.run("blob", "client", || async { Err(e) }).await;
            return;
        }
    };
    if !r
        .run("blob", "create container", || async {
            container.create().await.map(|_| ()).map_err(s)
        })
        .await
    {
        return;
    }
    let blob = container.blob("check.txt").expect("valid name");
    let mut etag = None;
    r.run(
        "blob",
        "create if not exists (If-None-Match: *)",
        || async {
            let w = blob
                .upload("v1", &Conditions::if_not_exists())
                .await
                .map_err(s)?;
            etag = Some(w.etag);
            Ok(())
        },
    )
    .await;
    r.run("blob", "create race loses with 409", || async {
        expect_err(
            blob.upload("v1b", &Conditions::if_not_exists()).await,
            ErrorKind::AlreadyExists,
            None,
        )
    })
    .await;
    if let Some(first) = etag.clone() {
        r.run("blob", "conditional write (If-Match)", || async {
            blob.upload("v2", &Conditions::if_match(&first))
                .await
                .map(|_| ())
                .map_err(s)
        })
        .await;
        r.run("blob", "stale If-Match refused with 412", || async {
            expect_err(
                blob.upload("v3", &Conditions::if_match(&first)).await,
                ErrorKind::PreconditionFailed,
                None,
            )
        })
        .await;
    }
    r.run("blob", "lease acquire / renew / release", || async {
        let id = LeaseId::random();
        let got = blob
            .lease_acquire(LeaseDuration::seconds(15).map_err(s)?, &id)
            .await
            .map_err(s)?;
        expect_err(
            blob.upload("no lease id", &Conditions::none()).await,
            ErrorKind::LeaseHeld,
            Some(ErrorCode::LeaseIdMissing),
        )?;
        blob.lease_renew(&got.lease_id).await.map_err(s)?;
        blob.lease_release(&got.lease_id).await.map_err(s)?;
        Ok(())
    })
    .await;
    r.run("blob", "cleanup", || async {
        container.delete(&Conditions::none()).await.map_err(s)
    })
    .await;
}

async fn table(account: &StorageAccount, options: &ClientOptions, r: &mut Report) {
    let table = match endpoint(account, Service::Table)
        .and_then(|()| TableServiceClient::with_options(account, options.clone()).map_err(s))
        .and_then(|c| c.table(&unique("livecheck")).map_err(s))
    {
        Ok(t) => t,
        Err(e) => {
            r.run("table", "client", || async { Err(e) }).await;
            return;
        }
    };
    if !r
        .run("table", "create table", || async {
            table.create().await.map_err(s)
        })
        .await
    {
        return;
    }
    let entity = |n: i32| serde_json::json!({"PartitionKey": "p", "RowKey": "r", "n": n});
    let mut etag = None;
    r.run("table", "insert entity", || async {
        etag = Some(table.insert(&entity(1)).await.map_err(s)?);
        Ok(())
    })
    .await;
    r.run("table", "duplicate insert refused with 409", || async {
        expect_err(
            table.insert(&entity(1)).await,
            ErrorKind::AlreadyExists,
            None,
        )
    })
    .await;
    if let Some(first) = etag.clone() {
        r.run("table", "update with If-Match", || async {
            table
                .replace(&entity(2), &first)
                .await
                .map(|_| ())
                .map_err(s)
        })
        .await;
        r.run("table", "stale If-Match refused with 412", || async {
            expect_err(
                table.replace(&entity(3), &first).await,
                ErrorKind::PreconditionFailed,
                None,
            )
        })
        .await;
    }
    r.run("table", "cleanup", || async {
        table.delete().await.map_err(s)
    })
    .await;
}

async fn queue(account: &StorageAccount, options: &ClientOptions, r: &mut Report) {
    let queue = match endpoint(account, Service::Queue)
        .and_then(|()| QueueServiceClient::with_options(account, options.clone()).map_err(s))
        .and_then(|c| c.queue(&unique("livecheck")).map_err(s))
    {
        Ok(q) => q,
        Err(e) => {
            r.run("queue", "client", || async { Err(e) }).await;
            return;
        }
    };
    if !r
        .run("queue", "create queue", || async {
            queue.create_if_not_exists().await.map(|_| ()).map_err(s)
        })
        .await
    {
        return;
    }
    r.run(
        "queue",
        "pop receipt: stale one refused, new one deletes",
        || async {
            queue.put_message("hello").await.map_err(s)?;
            let mut msg = queue
                .receive_message(Duration::from_secs(30))
                .await
                .map_err(s)?
                .ok_or_else(|| "no message received".to_string())?;
            let id = msg.message().id.clone();
            let old = msg.pop_receipt().clone();
            queue
                .update_message(&mut msg, Duration::from_secs(30), None)
                .await
                .map_err(s)?;
            expect_err(
                queue.delete_message_with_receipt(&id, &old).await,
                ErrorKind::Service,
                Some(ErrorCode::PopReceiptMismatch),
            )?;
            queue.delete_message(msg).await.map_err(s)
        },
    )
    .await;
    r.run("queue", "cleanup", || async {
        queue.delete().await.map_err(s)
    })
    .await;
}

async fn file(account: &StorageAccount, options: &ClientOptions, r: &mut Report) {
    let share = match endpoint(account, Service::File)
        .and_then(|()| ShareServiceClient::with_options(account, options.clone()).map_err(s))
        .and_then(|c| c.share(&unique("livecheck")).map_err(s))
    {
        Ok(sh) => sh,
        Err(e) => {
            r.run("file", "client", || async { Err(e) }).await;
            return;
        }
    };
    if !r
        .run("file", "create share", || async {
            share.create().await.map(|_| ()).map_err(s)
        })
        .await
    {
        return;
    }
    let file = share.file("check.bin").expect("valid name");
    r.run("file", "lease: writes need the lease id", || async {
        file.create(4, None).await.map_err(s)?;
        let lease = LeaseGuard::acquire(file.clone(), LeaseDuration::Infinite)
            .await
            .map_err(s)?;
        expect_err(
            file.put_range(0, bytes::Bytes::from_static(b"nope"), None)
                .await,
            ErrorKind::LeaseHeld,
            Some(ErrorCode::LeaseIdMissing),
        )?;
        file.put_range(
            0,
            bytes::Bytes::from_static(b"mine"),
            Some(lease.lease_id()),
        )
        .await
        .map_err(s)?;
        lease.release().await.map(drop).map_err(s)
    })
    .await;
    r.run("file", "cleanup", || async {
        share.delete(None).await.map_err(s)
    })
    .await;
}
