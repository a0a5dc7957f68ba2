//! The Azure Storage protocol that the blob, file, queue and table backends share, in one
//! floor: how [`Conditions`](crate::Conditions) and metadata are spelled on a request
//! ([`StorageRequest`]), how a lease operation is spelled (`x-ms-lease-action` and its
//! headers) and how its answer reads. The engines below know none of it; the backends above
//! speak it through this module.

pub(crate) mod checksum;
pub(crate) mod copy_source;
pub(crate) mod http_headers;
pub(crate) mod lease;
mod range;
mod request;

pub(crate) use lease::{LeaseOp, LeaseReply, send};
pub(crate) use range::open_first;
pub(crate) use request::SourceConditions;
pub use request::StorageRequest;
