//! azstore's runnable examples, one file each in this folder (see the table in the
//! repository's README). Run one against a private emulator with `scripts/demo NAME`, or
//! against your account with
//! `AZURE_STORAGE_CONNECTION_STRING=... cargo run -p azstore-examples --example NAME`
//! (adding the features an example names: `redis`, `cosmos`, `metrics`, `progress`,
//! `identity`).
//!
//! The examples are a package of their own so that building one compiles azstore and the few
//! crates the examples use, never azstore's test-only dependencies.
//!
//! With the feature `otel`, this package also compiles the Rust examples of
//! docs/observability.md (the OpenTelemetry export needs crates azstore does not depend on):
//! `cargo test -p azstore-examples --features otel --doc`.

// docs/observability.md's Rust examples, compiled by `cargo test --doc` like the API docs'.
#[cfg(all(doctest, feature = "otel"))]
#[doc = include_str!("../docs/observability.md")]
struct ObservabilityExamples;
