//! The HTTP layer: a plain [`Request`] value that declares its [`Intent`], the [`Pipeline`]
//! that stamps, authorizes, sends, classifies and retries it, and the [`Response`] it
//! returns. Service clients are thin typed layers over this; it is public so that operations
//! azstore does not wrap can still be sent correctly signed.

mod body;
pub(crate) mod checks;
pub(crate) mod edge;
pub(crate) mod encode;
mod options;
pub(crate) mod pipeline;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod retry;
pub(crate) mod telemetry;
// The transport settings sit below the wire (accounts and credentials use them too); the old
// path `http::transport` still names them.
pub(crate) use crate::transport;

pub(crate) use encode::{encode_path, encode_query_value, range_from_header, range_header};
pub use options::ClientOptions;
pub use pipeline::{Pipeline, StreamingResponse};
pub use request::{Intent, Method, Request};
pub use response::{Headers, Response};
pub use retry::{Backoff, Jitter, RetryPolicy};
pub use transport::{TlsRoots, TransportOptions};
