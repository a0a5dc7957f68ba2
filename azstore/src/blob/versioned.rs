//! [`Versioned`] for blobs: raw bytes ([`BlobBytes`]) and serde JSON ([`BlobJson`]).
//!
//! The write id travels in the blob's metadata under [`WRITE_ID_METADATA`]. Put Blob replaces
//! a blob's metadata and HTTP headers as a whole, so every replace sends back what the version
//! it replaces had: the metadata (other than the write id) and the stored HTTP headers
//! (content type, encoding, language, cache control, disposition) of the version it read,
//! which the `If-Match` condition guarantees is still the stored one. What a replace does not
//! carry over: index tags, the access tier (the account default applies) and the stored
//! `Content-MD5` (the service computes it for the new content).

use crate::body::IntoBody;
use std::collections::{BTreeMap, VecDeque};
use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{BlobClient, BlobProperties, PutOptions};
use crate::conditions::{Conditions, ETag};
use crate::error::{Error, ErrorCode, Result};
use crate::http_headers::HttpHeaders;
use crate::update::{Current, Versioned};

/// The metadata name under which the write id is stored (`x-ms-meta-azstorewriteid`).
pub const WRITE_ID_METADATA: &str = "azstorewriteid";

/// How many recently read versions a blob wrapper remembers the metadata and headers of (for
/// concurrent `update` calls through one wrapper). A replace of a version it no longer
/// remembers reads them first with a conditional Get Blob Properties.
const KEPT_VERSIONS: usize = 8;

/// What a replace of one version carries over from it.
#[derive(Debug, Clone)]
struct Kept {
    etag: ETag,
    metadata: BTreeMap<String, String>,
    headers: HttpHeaders,
}

impl Kept {
    fn of(properties: &BlobProperties) -> Kept {
        let mut metadata = properties.metadata.clone();
        metadata.remove(WRITE_ID_METADATA);
        let headers = HttpHeaders {
            // The service computes the new content's MD5; the old one would be wrong.
            content_md5: None,
            ..properties.http_headers.clone()
        };
        Kept {
            etag: properties.etag.clone(),
            metadata,
            headers,
        }
    }
}

/// The blob behind [`BlobBytes`] and [`BlobJson`]: the client, the content type it writes,
/// and the recently read versions' metadata and headers.
#[derive(Clone)]
struct Target {
    blob: BlobClient,
    /// Set by the caller: written with every value, replacing the stored one.
    content_type: Option<String>,
    /// Written when creating, and when the stored version has no content type.
    default_content_type: &'static str,
    kept: Arc<Mutex<VecDeque<Kept>>>,
}

impl fmt::Debug for Target {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Blob")
            .field("blob", &self.blob)
            .field("content_type", &self.content_type)
            .finish()
    }
}

impl Target {
    fn new(blob: BlobClient, default_content_type: &'static str) -> Target {
        Target {
            blob,
            content_type: None,
            default_content_type,
            kept: Arc::default(),
        }
    }

    fn remember(&self, kept: Kept) {
        let mut list = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        list.retain(|k| k.etag != kept.etag);
        if list.len() == KEPT_VERSIONS {
            list.pop_back();
        }
        list.push_front(kept);
    }

    fn recall(&self, etag: &ETag) -> Option<Kept> {
        let list = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        list.iter().find(|k| &k.etag == etag).cloned()
    }

    async fn read(&self) -> Result<Option<Current<Bytes>>> {
        match self.blob.download().await {
            Ok(d) => {
                self.remember(Kept::of(&d.properties));
                Ok(Some(Current {
                    write_id: d.properties.metadata.get(WRITE_ID_METADATA).cloned(),
                    etag: d.properties.etag,
                    value: d.body,
                }))
            }
            // Only the blob being absent is "absent"; a missing container is an error.
            Err(e) if e.is_not_found() && e.error_code() != Some(&ErrorCode::ContainerNotFound) => {
                Ok(None)
            }
            Err(e) => Err(e),
        }
    }

    /// The metadata and headers of version `etag`: remembered from a read, or read now under
    /// `If-Match: etag` (a 412 there is the same conflict the replace would meet).
    async fn kept(&self, etag: &ETag) -> Result<Kept> {
        if let Some(kept) = self.recall(etag) {
            return Ok(kept);
        }
        let properties = self
            .blob
            .get_properties_if(&Conditions::if_match(etag))
            .await?;
        let kept = Kept::of(&properties);
        self.remember(kept.clone());
        Ok(kept)
    }

    /// Replace: Put Blob under `If-Match: etag`, carrying over that version's metadata and
    /// headers. A conditioned put is a [`ConditionalWrite`](crate::http::Intent::ConditionalWrite):
    /// if the connection drops after the request went out, the pipeline does not repeat it (the
    /// repeat would meet our own write as a 412); the error reaches `update`, which re-reads at
    /// once and recognises the write by its id.
    async fn replace(&self, body: Bytes, etag: &ETag, write_id: &str) -> Result<ETag> {
        let kept = self.kept(etag).await?;
        let mut headers = kept.headers;
        if let Some(ct) = &self.content_type {
            headers.content_type = Some(ct.clone());
        } else if headers.content_type.is_none() {
            headers.content_type = Some(self.default_content_type.to_string());
        }
        let mut options = PutOptions::new(Conditions::if_match(etag)).http_headers(headers);
        options.write.metadata = kept.metadata;
        options
            .write
            .metadata
            .insert(WRITE_ID_METADATA.into(), write_id.into());
        Ok(self.blob.put(body, &options).await?.etag)
    }

    /// Create (`If-None-Match: *`) or, without a write id, overwrite (last writer wins).
    async fn put_new(
        &self,
        body: Bytes,
        conditions: Conditions,
        write_id: Option<&str>,
    ) -> Result<ETag> {
        let content_type = self
            .content_type
            .as_deref()
            .unwrap_or(self.default_content_type);
        let mut options = PutOptions::new(conditions).content_type(content_type);
        if let Some(id) = write_id {
            options = options.meta(WRITE_ID_METADATA, id);
        }
        Ok(self.blob.put(body, &options).await?.etag)
    }
}

/// A block blob holding raw bytes, as a [`Versioned`] resource.
///
/// ```no_run
/// use azstore::update::{update, Decision, UpdatePolicy};
/// use azstore::blob::{BlobBytes};
/// # async fn run(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let log = BlobBytes::new(blob);
/// update(&log, &UpdatePolicy::default(), |cur| {
///     let mut v = cur.map(|b| b.to_vec()).unwrap_or_default();
///     v.extend_from_slice(b"one more line\n");
///     Decision::Write(v.into())
/// })
/// .await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct BlobBytes {
    target: Target,
}

impl BlobBytes {
    /// Wraps a blob. A blob it creates gets the content type `application/octet-stream`; a
    /// replace keeps the stored one (see [`with_content_type`](Self::with_content_type)).
    ///
    /// ```no_run
    /// # fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let log = azstore::blob::BlobBytes::new(container.blob("audit.log")?);
    /// # let _ = log; Ok(()) }
    /// ```
    pub fn new(blob: BlobClient) -> BlobBytes {
        BlobBytes {
            target: Target::new(blob, "application/octet-stream"),
        }
    }

    /// Writes this content type with every value, replacing the stored one (by default a
    /// replace keeps the stored content type, and a create writes `application/octet-stream`).
    ///
    /// ```no_run
    /// # async fn run(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::update::{update, Decision, UpdatePolicy};
    /// use azstore::blob::{BlobBytes};
    /// let page = BlobBytes::new(blob).with_content_type("text/html");
    /// update(&page, &UpdatePolicy::default(), |_| Decision::Write("<h1>hi</h1>".into())).await?;
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> BlobBytes {
        self.target.content_type = Some(content_type.into());
        self
    }

    /// The blob.
    pub fn blob(&self) -> &BlobClient {
        &self.target.blob
    }

    /// Last writer wins: writes `value` with [`Conditions::none()`], replacing whatever is
    /// there, its metadata and HTTP headers included. Returns the new ETag.
    pub async fn overwrite(&self, value: impl IntoBody) -> Result<ETag> {
        self.target
            .put_new(value.into_body(), Conditions::none(), None)
            .await
    }
}

impl Versioned for BlobBytes {
    type Value = Bytes;

    async fn read(&self) -> Result<Option<Current<Bytes>>> {
        self.target.read().await
    }

    async fn replace(&self, value: &Bytes, etag: &ETag, write_id: &str) -> Result<ETag> {
        self.target.replace(value.clone(), etag, write_id).await
    }

    fn identity(&self) -> String {
        self.target.blob.url()
    }

    fn stores_write_ids(&self) -> bool {
        true
    }

    async fn create(&self, value: &Bytes, write_id: &str) -> Result<ETag> {
        self.target
            .put_new(value.clone(), Conditions::if_not_exists(), Some(write_id))
            .await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.target.blob.delete(&Conditions::if_match(etag)).await
    }

    /// The bytes themselves: a read returns the blob's content as written.
    fn snapshot(&self, value: &Bytes) -> Option<Vec<u8>> {
        Some(value.to_vec())
    }

    fn restore(&self, snapshot: &[u8]) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(snapshot))
    }
}

/// A block blob holding one JSON document of type `T`, as a [`Versioned`] resource.
///
/// A blob whose content is not valid JSON for `T` makes `read` fail with
/// [`ErrorKind::Service`](crate::ErrorKind::Service) (nothing is overwritten). What is stored
/// besides the document: the write id in the metadata entry [`WRITE_ID_METADATA`]; every
/// other metadata entry and the stored HTTP headers are kept from the version replaced (see
/// the [module docs](crate::update#what-update-stores-besides-your-value)). A blob it creates gets the
/// content type `application/json`.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use azstore::update::{update, Decision, UpdatePolicy};
/// use azstore::blob::{BlobJson};
/// # async fn run(blob: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let schedule = BlobJson::<BTreeMap<String, String>>::new(blob);
/// update(&schedule, &UpdatePolicy::default(), |cur| {
///     let mut s = cur.cloned().unwrap_or_default();
///     s.insert("100m final".into(), "Sunday 18:00".into());
///     Decision::Write(s)
/// })
/// .await?;
/// # Ok(()) }
/// ```
pub struct BlobJson<T> {
    target: Target,
    _value: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for BlobJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobJson")
            .field("blob", &self.target.blob)
            .finish()
    }
}

impl<T> Clone for BlobJson<T> {
    fn clone(&self) -> Self {
        BlobJson {
            target: self.target.clone(),
            _value: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync> BlobJson<T> {
    /// Wraps a blob.
    pub fn new(blob: BlobClient) -> BlobJson<T> {
        BlobJson {
            target: Target::new(blob, "application/json"),
            _value: PhantomData,
        }
    }

    /// The blob.
    pub fn blob(&self) -> &BlobClient {
        &self.target.blob
    }

    /// Last writer wins: writes `value` with [`Conditions::none()`], replacing whatever is
    /// there, its metadata and HTTP headers included. Returns the new ETag.
    pub async fn overwrite(&self, value: &T) -> Result<ETag> {
        self.target
            .put_new(encode(value)?, Conditions::none(), None)
            .await
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Bytes> {
    serde_json::to_vec(value)
        .map(Bytes::from)
        .map_err(|e| Error::invalid_input(format!("value cannot be serialized as JSON: {e}")))
}

impl<T: Serialize + DeserializeOwned + Send + Sync> Versioned for BlobJson<T> {
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        let Some(raw) = self.target.read().await? else {
            return Ok(None);
        };
        let value = serde_json::from_slice(&raw.value).map_err(|e| {
            Error::decode(format!(
                "blob {} does not hold the expected JSON: {e}",
                self.target.blob.name()
            ))
        })?;
        Ok(Some(Current {
            value,
            etag: raw.etag,
            write_id: raw.write_id,
        }))
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        self.target.replace(encode(value)?, etag, write_id).await
    }

    fn identity(&self) -> String {
        self.target.blob.url()
    }

    fn stores_write_ids(&self) -> bool {
        true
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        self.target
            .put_new(encode(value)?, Conditions::if_not_exists(), Some(write_id))
            .await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.target.blob.delete(&Conditions::if_match(etag)).await
    }

    /// The JSON the blob holds: a read parses the content as written.
    fn snapshot(&self, value: &T) -> Option<Vec<u8>> {
        serde_json::to_vec(value).ok()
    }

    fn restore(&self, snapshot: &[u8]) -> Option<T> {
        serde_json::from_slice(snapshot).ok()
    }
}
