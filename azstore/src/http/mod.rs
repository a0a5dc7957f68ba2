//! The HTTP layer: a plain [`Request`] value, the [`Pipeline`] that stamps, signs, sends and
//! retries it, and the [`Response`] it returns. Service clients are thin typed layers over
//! this; it is public so that operations azstore does not wrap can still be sent correctly
//! signed.

pub(crate) mod checks;
pub(crate) mod pipeline;
pub(crate) mod request;
pub(crate) mod response;
pub(crate) mod retry;
pub(crate) mod transport;

pub use pipeline::{API_VERSION, ClientOptions, Pipeline, StreamingResponse};
pub use request::{Method, Request, encode_path, encode_query_value};
pub use response::{Headers, Response};
pub use retry::{Backoff, Jitter, RetryPolicy};
pub use transport::{TlsRoots, TransportOptions};
