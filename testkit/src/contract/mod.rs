//! Contract suites: one generic function per guarantee of an engine, called once per
//! backend by azstore's integration tests (in the style of object_store's `integration.rs`).
//! Adding a backend is one call per guarantee.

pub mod leasable;
pub mod versioned;
