//! The short campaign (one history per model, 5 writer processes × 48 operations — shard
//! models: 30 fenced writes — under the randomized nemesis) and the checker-sanity runs (deliberately broken clients that MUST be
//! caught). Needs the emulators and the local Cosmos DB server:
//! `scripts/cosmos run -- scripts/azurite run -- cargo test -p histories`.
//!
//! The seed is printed; `HISTORIES_SEED=S` repeats a run. A history with an anomaly is kept
//! under `target/histories/` and can be re-checked with
//! `cargo run -p histories -- check FILE`.

use std::path::PathBuf;

use histories::backend::{BACKENDS, DEFAULT_SHARD_INTERVAL_MS};
use histories::campaign::{Plan, Report, run};
use histories::model::{Model, Variant};

fn seed() -> u64 {
    std::env::var("HISTORIES_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 % 1_000_000_000)
        })
}

fn plan(model: Model, variant: Variant, ops: u64) -> Plan {
    let seed = seed();
    eprintln!("{} ({}): seed {seed}", model.name(), variant.name());
    Plan {
        model,
        variant,
        histories: 1,
        writers: 5,
        ops,
        seed,
        nemesis: true,
        sanity: variant == Variant::Broken,
        keep_all: variant == Variant::Broken,
        keep_dir: PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("../histories"),
        exe: PathBuf::from(env!("CARGO_BIN_EXE_histories")),
        shards: histories::writer::SHARDS,
        workers_per_writer: 1,
    }
}

async fn campaign(model: Model) {
    // 48 planned per writer: writers SIGKILLed by the nemesis record fewer than planned (one
    // run recorded 190 of 200), and a history must still hold at least 200 operations.
    let plan = plan(model, Variant::Correct, 48);
    let report = run(&plan).await;
    assert_eq!(report.histories, 1);
    assert!(
        report.operations >= 200,
        "{}: only {} operations recorded",
        model.name(),
        report.operations
    );
    assert_eq!(
        report.anomalies,
        0,
        "{}\nkept: {:?}\nfirst anomalies: {:#?}",
        report.line(model, plan.seed),
        report.kept,
        report.examples
    );
}

/// A shard model's history: 5 writer processes × 30 fenced writes, joining and leaving the
/// group all along (about 20 s, longer when the nemesis freezes an owner past its lease).
async fn shards_campaign(model: Model) {
    let plan = plan(model, Variant::Correct, 30);
    let report = run(&plan).await;
    assert_eq!(report.histories, 1);
    // A backend with a longer balancing interval holds fewer transfers in a history of the
    // same writes: Cosmos DB's 1 s gives 17–33 on a quiet machine, 7 under the whole suite's
    // load (10 at the default 250 ms, 3 at 1 s).
    let interval = model.backend().expect("a shard model").shard_interval_ms();
    let least = (10 * DEFAULT_SHARD_INTERVAL_MS / interval).max(3);
    assert!(
        report.transfers >= least,
        "{}: only {} ownership transfers",
        model.name(),
        report.transfers
    );
    assert_eq!(
        report.anomalies,
        0,
        "{}\nkept: {:?}\nfirst anomalies: {:#?}",
        report.line(model, plan.seed),
        report.kept,
        report.examples
    );
}

/// Histories a sanity check may run before it must have caught the broken client. A broken
/// client is only caught in a history where the failure it mishandles (a holder paused past
/// its lease, a message redelivered) lands while it still has operations to run; under the
/// whole suite's load a history can end first (two checks of one suite run did, the queue
/// one with 5 s and no redelivery; its seed re-run alone was caught). A checker that misses
/// the broken client misses it in every history.
const SANITY_HISTORIES: u64 = 3;

async fn must_catch(model: Model) -> Report {
    // Lock writers need operations left when their holder is paused past its lease. (A broken
    // shard writer is caught within its first sessions: 14 to 42 anomalies per history of 30
    // writes per writer in 16 of 16 histories.)
    let ops = if model.is_lock() { 40 } else { 20 };
    let mut plan = plan(model, Variant::Broken, ops);
    let mut missed = Vec::new();
    for _ in 0..SANITY_HISTORIES {
        let report = run(&plan).await;
        if report.anomalies > 0 {
            // The failing history is kept for re-checking.
            assert_eq!(report.kept.len(), 1);
            assert!(report.kept[0].exists());
            eprintln!("{}: kept {}", model.name(), report.kept[0].display());
            return report;
        }
        eprintln!(
            "{}: no anomaly in this history (the nemesis set up no failure it mishandles?): {}",
            model.name(),
            report.line(model, plan.seed)
        );
        missed.push(report.line(model, plan.seed));
        plan.seed = plan.seed.wrapping_add(1_000_003);
    }
    panic!(
        "the checker missed the broken {} client in {SANITY_HISTORIES} histories: {missed:#?} \
         (histories in {})",
        model.name(),
        plan.keep_dir.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_queue_worker() {
    campaign(Model::Queue).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sanity_queue_handler_that_is_not_idempotent_is_caught() {
    let r = must_catch(Model::Queue).await;
    assert!(
        r.examples.iter().any(|a| a.contains("more than once")),
        "{:?}",
        r.examples
    );
}

/// Shard ownership at scale, in one short history: 1,024 shards over 4 writer processes × 5
/// shard workers each (20 workers at a time) under the whole nemesis — every worker reads the
/// group in bulk and moves tens of shards per change. Redis: the backend whose server keeps up
/// with 20 workers' bulk reads on a shared CI machine (the longer Blob and Cosmos DB runs are
/// `scripts/campaign --model blob-shards --shards 1024 --workers-per-writer 5 --writers 4`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_redis_shards_at_scale() {
    let model = Model::parse("redis-shards").unwrap();
    let mut plan = plan(model, Variant::Correct, 20);
    plan.shards = 1024;
    plan.writers = 4;
    plan.workers_per_writer = 5;
    let report = run(&plan).await;
    assert_eq!(report.histories, 1);
    assert!(
        report.transfers >= 10,
        "{}: only {} ownership transfers",
        model.name(),
        report.transfers
    );
    assert_eq!(
        report.anomalies,
        0,
        "{}\nkept: {:?}\nfirst anomalies: {:#?}",
        report.line(model, plan.seed),
        report.kept,
        report.examples
    );
}

/// The model of `family` (`register`, `lock`, `shards`) on backend `backend`.
fn model(backend: &str, family: &str) -> Model {
    Model::parse(&format!("{backend}-{family}")).unwrap()
}

/// The campaign and the checker-sanity run of one family on one backend.
macro_rules! family {
    ($backend:ident, register) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn campaign_register() {
            campaign(model(stringify!($backend), "register")).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sanity_update_without_if_match_is_caught() {
            let r = must_catch(model(stringify!($backend), "register")).await;
            assert!(
                r.examples.iter().any(|a| a.contains("lost update")),
                "{:?}",
                r.examples
            );
        }
    };
    ($backend:ident, lock) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn campaign_lock() {
            campaign(model(stringify!($backend), "lock")).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sanity_lock_holder_ignoring_loss_is_caught() {
            let r = must_catch(model(stringify!($backend), "lock")).await;
            assert!(
                r.examples.iter().any(|a| a.contains("two holders")),
                "{:?}",
                r.examples
            );
        }
    };
    ($backend:ident, shards) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn campaign_shards() {
            shards_campaign(model(stringify!($backend), "shards")).await;
        }

        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn sanity_shard_worker_ignoring_lost_is_caught() {
            let r = must_catch(model(stringify!($backend), "shards")).await;
            assert!(
                r.examples.iter().any(|a| a.starts_with("two owners")),
                "{:?}",
                r.examples
            );
        }
    };
}

/// One line per backend: a module named after it with the campaign and the checker-sanity
/// run of every family it joins (`blob::campaign_lock`, `redis::sanity_update_without_if_match_is_caught`, ...).
macro_rules! backends {
    ($($backend:ident: $($family:ident),+;)+) => {
        $(mod $backend {
            use super::*;
            $(family!($backend, $family);)+
        })+

        /// Every backend of the registry has its line above, with the families it joins.
        #[test]
        fn every_backend_has_its_campaigns() {
            let listed: Vec<String> =
                vec![$(format!("{}: {}", stringify!($backend), [$(stringify!($family)),+].join(", "))),+];
            let registry: Vec<String> = BACKENDS
                .iter()
                .map(|b| {
                    let families: Vec<&str> = b.families().iter().map(|f| f.suffix()).collect();
                    format!("{}: {}", b.name(), families.join(", "))
                })
                .collect();
            assert_eq!(listed, registry);
        }
    };
}

backends! {
    blob: register, lock, shards;
    table: register;
    redis: register, lock, shards;
    cosmos: register, lock, shards;
}
