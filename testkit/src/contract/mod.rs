//! Contract suites: one generic test function per guarantee of an azstore engine, called once
//! per backend from azstore's integration tests (in the style of object_store's
//! `integration.rs`). A backend passes when every function returns; a function panics with
//! the guarantee's name and what was seen when a backend breaks it. Adding a backend is one
//! call per guarantee.
//!
//! * [`versioned`]: `update()` over any `Versioned` (turns, no lost update, ambiguous writes).
//! * [`leasable`]: `LeaseGuard` over any `Leasable` (renewal, loss before expiry, release).
//! * [`lock`]: the distributed lock (`azstore::lock::Lock<T>` over any `LockTarget`).
//! * [`semaphore`]: the semaphore and the reader-writer lock (`azstore::lock::Semaphore<T>`,
//!   `azstore::lock::RwLock<T>`) over any `LockTarget`.
//! * [`leader`]: leader election and shard groups (`azstore::leader`) over any lock.
//!
//! A backend joins a suite with one line: [`contract_versioned!`](crate::contract_versioned),
//! [`contract_lease!`](crate::contract_lease), [`contract_lock!`](crate::contract_lock),
//! [`contract_semaphore!`](crate::contract_semaphore), [`contract_leader!`](crate::contract_leader)
//! expand to one named test per guarantee.

pub mod leader;
pub mod leasable;
pub mod lock;
mod macros;
pub mod semaphore;
pub mod versioned;
