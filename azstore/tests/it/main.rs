//! azstore's integration tests, compiled as one binary: each module is one area, run against
//! real servers (a private Azurite started by `scripts/azurite run`, the local File service of
//! `testkit`, the official Python SDKs). They fail loudly, never skip, when a server is missing.

/// The `.partial` files a download to a file left in `dir` (none, once it has ended).
pub fn partial_files(dir: &std::path::Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".partial"))
        .collect()
}

/// A bare reqwest client for the requests a test sends by hand (plain HTTP to a local server).
/// azstore builds reqwest with `rustls-no-provider` and hands every client it builds its own
/// ring-based TLS configuration; a client built outside azstore gets one the same way, since
/// `reqwest::Client::new()` would look for a process-wide crypto provider that nothing installs.
pub fn bare_http() -> reqwest::Client {
    let tls = rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(rustls::RootCertStore::empty())
    .with_no_client_auth();
    reqwest::Client::builder()
        .tls_backend_preconfigured(tls)
        .build()
        .unwrap()
}

mod access_policies;
mod account_clients;
mod authorization;
mod blob_batch;
mod blob_conditions;
mod blob_containers;
mod blob_from_url;
mod blob_from_url_scripted;
mod blob_immutability;
mod blob_integrity;
mod blob_kinds;
mod blob_read_only;
mod blob_sequence_lifecycle;
mod blob_transfer;
mod blob_user_delegation;
mod blob_versions_service;
mod blob_write_options;
mod connection_strings;
mod contract_lease;
mod contract_lock;
mod contract_semaphore;
mod contract_versioned;
#[cfg(feature = "cosmos")]
mod cosmos;
mod error_hints;
mod faults;
mod file_lease;
mod file_properties;
mod file_rename_handles;
mod file_rename_options;
mod file_sdk_crosscheck;
mod file_smb;
mod file_transfer;
mod identity;
mod if_exists;
mod leader;
mod lease_guard;
mod lease_ops;
mod lock_blob;
#[cfg(feature = "testing")]
mod memory;
#[cfg(feature = "object_store")]
mod object_store;
mod pause_clock;
mod pause_sigstop;
mod pipeline_failures;
mod queue_client;
mod queue_guard;
mod queue_interop;
mod queue_messages;
mod queue_scripted;
mod queue_worker;
#[cfg(feature = "redis")]
mod redis;
mod security;
mod service_properties;
mod table_batch;
mod table_concurrency;
mod table_entities;
mod table_query;
mod transfer;
mod update_blob;
mod update_combine;
mod update_keeps;
mod update_lost_response;
mod update_turns;
