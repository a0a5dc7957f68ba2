//! Creating an empty append or page blob: the options and the one request both create
//! methods send.

use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::limits::{MAX_SEQUENCE_NUMBER, check_aligned};
use crate::blob::write_options::WriteKind;
use crate::conditions::{Allowed, Conditions};
use crate::error::{Error, Result};
use crate::http::Method;
use crate::storage::StorageRequest;

/// Options of creating an append or page blob.
///
/// ```no_run
/// # async fn demo(log: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::CreateOptions;
/// let options = CreateOptions::new(Conditions::if_not_exists()).content_type("text/plain");
/// match log.create_append_blob(&options).await {
///     Err(e) if e.is_conflict() => {} // the log exists already: keep appending to it
///     other => { other?; }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[must_use]
#[non_exhaustive]
pub struct CreateOptions {
    /// Conditions; `Conditions::if_not_exists()` creates only if nothing is there.
    pub conditions: Conditions,
    /// HTTP headers, metadata, tags, encryption scope (and, for page blobs, a premium tier).
    pub write: crate::blob::BlobWriteOptions,
    /// (Page blobs) The initial sequence number (`x-ms-blob-sequence-number`, 0 to 2^63 - 1;
    /// the service starts at 0 without it). Refused for append blobs.
    pub sequence_number: Option<u64>,
}

impl CreateOptions {
    /// Options for a write under `conditions` — the one choice every write that replaces a
    /// blob (creating an append or page blob replaces one that exists) makes visibly (there is no `Default`):
    ///
    /// * [`Conditions::if_match(&etag)`](Conditions::if_match): replace only the version you
    ///   read (412 `ConditionNotMet` otherwise);
    /// * [`Conditions::if_not_exists()`](Conditions::if_not_exists): create only (409
    ///   `BlobAlreadyExists` when it exists);
    /// * [`Conditions::none()`](Conditions::none): last writer wins.
    pub fn new(conditions: Conditions) -> CreateOptions {
        CreateOptions {
            conditions,
            write: Default::default(),
            sequence_number: None,
        }
    }

    /// Replaces the conditions chosen in [`new`](Self::new) (`if_match`, `if_not_exists`
    /// or `none`, plus a lease id for a leased blob).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::CreateOptions;
    /// let lease = LeaseId::random();
    /// let options = CreateOptions::new(Conditions::if_not_exists()).conditions(Conditions::lease(&lease));
    /// assert_eq!(options.conditions.lease_id, Some(lease));
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// (Page blobs) The sequence number the new blob starts with, for writers that fence
    /// each other with sequence-number conditions from the first write. Default: 0.
    pub fn sequence_number(mut self, v: u64) -> Self {
        self.sequence_number = Some(v);
        self
    }
}

crate::blob::write_options::write_builders!(CreateOptions);

/// What [`BlobClient::create_empty`] creates.
#[derive(Debug, Clone, Copy)]
pub(crate) enum EmptyBlob {
    /// An append blob.
    Append,
    /// A page blob of `size` bytes (a multiple of 512), all zeros.
    Page { size: u64 },
}

impl BlobClient {
    /// Put Blob of an empty append or page blob: the one request both create methods send.
    pub(crate) async fn create_empty(
        &self,
        blob: EmptyBlob,
        options: &CreateOptions,
    ) -> Result<WriteResult> {
        let (kind, operation, blob_type, size) = match blob {
            EmptyBlob::Append => (
                WriteKind::CreateAppend,
                "Create Append Blob",
                "AppendBlob",
                None,
            ),
            EmptyBlob::Page { size } => (
                WriteKind::CreatePage,
                "Create Page Blob",
                "PageBlob",
                Some(size),
            ),
        };
        options.conditions.check(Allowed::ALL, kind.name())?;
        if let Some(size) = size {
            check_aligned("size", size)?;
        }
        match (options.sequence_number, size) {
            (Some(_), None) => {
                return Err(Error::invalid_input(
                    "only a page blob has a sequence number",
                ));
            }
            (Some(n), Some(_)) if n > MAX_SEQUENCE_NUMBER => {
                return Err(Error::invalid_input(
                    "a sequence number is at most 2^63 - 1",
                ));
            }
            _ => {}
        }
        let req = self
            .write_request(Method::Put, operation)?
            .header("x-ms-blob-type", blob_type)
            .header_opt("x-ms-blob-content-length", size.map(|s| s.to_string()))
            .header_opt(
                "x-ms-blob-sequence-number",
                options.sequence_number.map(|n| n.to_string()),
            )
            .conditions(&options.conditions);
        let req = options.write.apply(req, kind)?;
        let resp = self.pipeline.send(req).await?;
        WriteResult::from_response(&resp)
    }
}
