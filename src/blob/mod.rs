//! Blob storage: [`BlobServiceClient`] → [`ContainerClient`] → [`BlobClient`].
//!
//! Every write takes [`Conditions`](crate::Conditions): pass `Conditions::if_match(&etag)` for
//! an optimistic update, `Conditions::if_not_exists()` to create only, and
//! `Conditions::none()` when the last writer should win.

mod client;
mod models;
mod names;

pub use client::{
    BlobClient, BlobServiceClient, ContainerClient, Download, PutOptions, WriteResult,
};
pub use models::{BlobProperties, BlobType, LeaseDurationType, LeaseState, LeaseStatus};
pub use names::{validate_blob_name, validate_container_name};
