//! What every step gets: clients pointed at the replay server, and state carried between
//! steps (continuation tokens).

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use azstore::table::Continuation;
use azstore::{
    Service, StorageAccount, blob::BlobServiceClient, file::ShareServiceClient,
    http::ClientOptions, http::RetryPolicy, queue::QueueServiceClient, table::TableServiceClient,
};
use testkit::replay::Interaction;

/// A fixed, made-up key: the recordings carry no signatures to check.
const KEY: &str =
    "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA==";

pub type StepFuture = Pin<Box<dyn Future<Output = Result<(), String>> + Send>>;
pub type StepFn = Box<dyn FnOnce(Arc<Cx>, Vec<Interaction>) -> StepFuture + Send>;

/// One azstore call covering `requests` consecutive interactions.
pub struct Plan {
    pub requests: usize,
    pub run: StepFn,
}

/// A plan for one interaction.
pub fn one<F, Fut>(f: F) -> Plan
where
    F: FnOnce(Arc<Cx>, Interaction) -> Fut + Send + 'static,
    Fut: Future<Output = Result<(), String>> + Send + 'static,
{
    Plan {
        requests: 1,
        run: Box::new(move |cx, mut its| Box::pin(f(cx, its.remove(0)))),
    }
}

pub struct Cx {
    pub blob: BlobServiceClient,
    pub queue: QueueServiceClient,
    pub table: TableServiceClient,
    pub file: ShareServiceClient,
    pub table_continuation: Mutex<Option<Continuation>>,
}

impl Cx {
    pub fn new(url: &str) -> Cx {
        let mut account = StorageAccount::new("storagename", KEY).expect("account");
        for s in [Service::Blob, Service::Queue, Service::Table, Service::File] {
            account = account.with_endpoint(s, url).expect("endpoint");
        }
        let options = ClientOptions::default()
            .retry(RetryPolicy::none())
            .timeout(Duration::from_secs(15));
        Cx {
            blob: BlobServiceClient::with_options(&account, options.clone()).expect("blob"),
            queue: QueueServiceClient::with_options(&account, options.clone()).expect("queue"),
            table: TableServiceClient::with_options(&account, options.clone()).expect("table"),
            file: ShareServiceClient::with_options(&account, options).expect("file"),
            table_continuation: Mutex::new(None),
        }
    }
}
