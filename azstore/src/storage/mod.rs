//! The Azure Storage protocol that the blob, file, queue and table backends share, in one
//! floor: its edge on the wire (what every request carries, the SharedKey, SAS and bearer
//! authorization, how a refusal reads), how [`Conditions`](crate::Conditions) and metadata
//! are spelled on a request ([`StorageRequest`]), how a lease operation is spelled
//! (`x-ms-lease-action` and its headers) and how its answer reads, and SAS generation
//! ([`sas`], also at `azstore::sas`). The engines below know none of it; the backends above
//! speak it through this module.

pub(crate) mod checksum;
pub(crate) mod copy_source;
mod edge;
pub(crate) mod http_headers;
pub(crate) mod lease;
mod range;
pub(crate) mod refusal;
mod request;
pub mod sas;
pub(crate) mod shared_key;

pub use edge::API_VERSION;
pub(crate) use lease::{LeaseOp, LeaseReply, send};
pub(crate) use range::open_first;
pub(crate) use request::SourceConditions;
pub use request::StorageRequest;
