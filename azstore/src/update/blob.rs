//! [`Versioned`] for blobs: raw bytes ([`BlobBytes`]) and serde JSON ([`BlobJson`]).
//!
//! The write id travels in the blob's metadata under [`WRITE_ID_METADATA`]. Put Blob
//! replaces all metadata, so other metadata on a blob managed this way is not kept.

use std::fmt;
use std::marker::PhantomData;

use bytes::Bytes;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{Current, Versioned};
use crate::blob::{BlobClient, PutOptions};
use crate::conditions::{Conditions, ETag};
use crate::error::{Error, ErrorCode, Result};

/// The metadata name under which the write id is stored (`x-ms-meta-azstorewriteid`).
pub const WRITE_ID_METADATA: &str = "azstorewriteid";

async fn read_raw(blob: &BlobClient) -> Result<Option<Current<Bytes>>> {
    match blob.download().await {
        Ok(d) => Ok(Some(Current {
            write_id: d.properties.metadata.get(WRITE_ID_METADATA).cloned(),
            etag: d.properties.etag,
            value: d.body,
        })),
        // Only the blob being absent is "absent"; a missing container is an error.
        Err(e) if e.is_not_found() && e.error_code() != Some(&ErrorCode::ContainerNotFound) => {
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// Put Blob through the blob client's normal put path, conditioned and carrying the write
/// id. A conditioned put is a [`ConditionalWrite`](crate::http::Intent::ConditionalWrite):
/// if the connection drops after the request went out, the pipeline does not repeat it (the
/// repeat would meet our own write as a 412); the error reaches `update`, which re-reads at
/// once and recognises the write by its id.
async fn put_raw(
    blob: &BlobClient,
    body: Bytes,
    conditions: Conditions,
    write_id: Option<&str>,
    content_type: &str,
) -> Result<ETag> {
    let mut options = PutOptions::conditions(conditions).content_type(content_type);
    if let Some(id) = write_id {
        options = options.meta(WRITE_ID_METADATA, id);
    }
    Ok(blob.put(body, &options).await?.etag)
}

/// A block blob holding raw bytes, as a [`Versioned`] resource.
///
/// ```no_run
/// use azstore::update::{update, BlobBytes, Decision, UpdatePolicy};
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
    blob: BlobClient,
    content_type: String,
}

impl BlobBytes {
    /// Wraps a blob; content type `application/octet-stream`.
    pub fn new(blob: BlobClient) -> BlobBytes {
        BlobBytes {
            blob,
            content_type: "application/octet-stream".into(),
        }
    }

    /// Sets the content type written with each value.
    #[must_use]
    pub fn with_content_type(mut self, content_type: impl Into<String>) -> BlobBytes {
        self.content_type = content_type.into();
        self
    }

    /// The blob.
    pub fn blob(&self) -> &BlobClient {
        &self.blob
    }

    /// Last writer wins: writes `value` with [`Conditions::none()`], replacing whatever is
    /// there. Returns the new ETag.
    pub async fn overwrite(&self, value: impl Into<Bytes>) -> Result<ETag> {
        put_raw(
            &self.blob,
            value.into(),
            Conditions::none(),
            None,
            &self.content_type,
        )
        .await
    }
}

impl Versioned for BlobBytes {
    type Value = Bytes;

    async fn read(&self) -> Result<Option<Current<Bytes>>> {
        read_raw(&self.blob).await
    }

    async fn replace(&self, value: &Bytes, etag: &ETag, write_id: &str) -> Result<ETag> {
        put_raw(
            &self.blob,
            value.clone(),
            Conditions::if_match(etag),
            Some(write_id),
            &self.content_type,
        )
        .await
    }

    fn key(&self) -> Option<String> {
        Some(self.blob.url())
    }

    async fn create(&self, value: &Bytes, write_id: &str) -> Result<ETag> {
        put_raw(
            &self.blob,
            value.clone(),
            Conditions::if_not_exists(),
            Some(write_id),
            &self.content_type,
        )
        .await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.blob.delete(&Conditions::if_match(etag)).await
    }
}

/// A block blob holding one JSON document of type `T`, as a [`Versioned`] resource.
///
/// A blob whose content is not valid JSON for `T` makes `read` fail with
/// [`ErrorKind::Service`](crate::ErrorKind::Service) (nothing is overwritten).
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use azstore::update::{update, BlobJson, Decision, UpdatePolicy};
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
    blob: BlobClient,
    _value: PhantomData<fn() -> T>,
}

impl<T> fmt::Debug for BlobJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlobJson")
            .field("blob", &self.blob)
            .finish()
    }
}

impl<T> Clone for BlobJson<T> {
    fn clone(&self) -> Self {
        BlobJson {
            blob: self.blob.clone(),
            _value: PhantomData,
        }
    }
}

impl<T: Serialize + DeserializeOwned + Send + Sync> BlobJson<T> {
    /// Wraps a blob.
    pub fn new(blob: BlobClient) -> BlobJson<T> {
        BlobJson {
            blob,
            _value: PhantomData,
        }
    }

    /// The blob.
    pub fn blob(&self) -> &BlobClient {
        &self.blob
    }

    /// Last writer wins: writes `value` with [`Conditions::none()`], replacing whatever is
    /// there. Returns the new ETag.
    pub async fn overwrite(&self, value: &T) -> Result<ETag> {
        put_raw(
            &self.blob,
            encode(value)?,
            Conditions::none(),
            None,
            "application/json",
        )
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
        let Some(raw) = read_raw(&self.blob).await? else {
            return Ok(None);
        };
        let value = serde_json::from_slice(&raw.value).map_err(|e| {
            Error::decode(format!(
                "blob {} does not hold the expected JSON: {e}",
                self.blob.name()
            ))
        })?;
        Ok(Some(Current {
            value,
            etag: raw.etag,
            write_id: raw.write_id,
        }))
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        put_raw(
            &self.blob,
            encode(value)?,
            Conditions::if_match(etag),
            Some(write_id),
            "application/json",
        )
        .await
    }

    fn key(&self) -> Option<String> {
        Some(self.blob.url())
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        put_raw(
            &self.blob,
            encode(value)?,
            Conditions::if_not_exists(),
            Some(write_id),
            "application/json",
        )
        .await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.blob.delete(&Conditions::if_match(etag)).await
    }
}
