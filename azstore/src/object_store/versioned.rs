//! [`Object`]: one path of any `ObjectStore` as a [`Versioned`] resource for `update()`.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use ::object_store::path::Path;
use ::object_store::{
    Attribute, Attributes, ObjectStore, ObjectStoreExt, PutMode, PutOptions, UpdateVersion,
};
use bytes::Bytes;

use super::errors::from_object_store;
use crate::blob::WRITE_ID_METADATA;
use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::update::{Current, Versioned};

/// Put in `PutOptions::extensions` by [`Object`]: `update()` above recognises its own
/// writes by the write-id token it stores, so a [`BlobStore`](super::BlobStore) below returns
/// a write of unknown outcome as such instead of settling it itself.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SettledAbove;

/// One path of any `object_store::ObjectStore` (S3, GCS, the local file system, `InMemory`,
/// [`BlobStore`](super::BlobStore), ...) as a [`Versioned`] resource holding bytes, so that
/// [`update()`](crate::update::update) — its turns, its backoff and its recognition of its own
/// ambiguous writes — works on every store object_store reaches.
///
/// | `Versioned` | `ObjectStore` |
/// |---|---|
/// | `read` | `get`: the bytes, the ETag, the write-id token from the metadata attribute `azstorewriteid` |
/// | `replace` | `put_opts` with `PutMode::Update` (the ETag read) and the token as metadata |
/// | `create` | `put_opts` with `PutMode::Create` and the token as metadata |
/// | `delete` | refused: `ObjectStore` 0.14 has no conditional delete, and an unconditional one could delete another writer's value |
///
/// The store must support `PutMode::Create` and `PutMode::Update` (InMemory, S3, GCS,
/// Azure, the local file system for `Create` only). A write stores the token and no other
/// attribute. Where the store keeps no attributes (it answers `NotImplemented`), writes go on
/// without the token and an ambiguous write ends as
/// [`RequestSent::Maybe`](crate::RequestSent) instead of being recognised; say so up front
/// with [`without_write_id`](Self::without_write_id).
///
/// Updates of one path through one `Arc` of the store take turns in this process (the turn
/// key is the store instance and the path): share one `Arc<dyn ObjectStore>` between tasks.
///
/// ```no_run
/// use std::sync::Arc;
/// use azstore::object_store::Object;
/// use azstore::update::{Decision, UpdatePolicy, update};
/// use object_store::{ObjectStore, memory::InMemory, path::Path};
///
/// # async fn demo() -> azstore::Result<()> {
/// let store: Arc<dyn ObjectStore> = Arc::new(InMemory::new());
/// let counter = Object::new(store, Path::from("counters/visits"));
/// let outcome = update(&counter, &UpdatePolicy::default(), |cur| {
///     let n: u64 = cur.map_or(0, |b| String::from_utf8_lossy(b).parse().unwrap_or(0));
///     Decision::Write((n + 1).to_string().into())
/// })
/// .await?;
/// println!("{:?} after {} attempt(s)", outcome.value, outcome.attempts);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Object {
    store: Arc<dyn ObjectStore>,
    path: Path,
    write_ids: Arc<AtomicBool>,
}

impl fmt::Debug for Object {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Object")
            .field("store", &self.store.to_string())
            .field("path", &self.path.as_ref())
            .finish()
    }
}

impl Object {
    /// The object at `path` of `store` (no request is sent).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use azstore::update::Versioned;
    /// use object_store::{memory::InMemory, path::Path};
    /// let counter = azstore::object_store::Object::new(Arc::new(InMemory::new()), Path::from("n"));
    /// assert!(counter.stores_write_ids());
    /// ```
    pub fn new(store: Arc<dyn ObjectStore>, path: Path) -> Object {
        Object {
            store,
            path,
            write_ids: Arc::new(AtomicBool::new(true)),
        }
    }

    /// Writes without the write-id token, for stores that keep no attributes: `update()`
    /// then cannot recognise its ambiguous writes and reports them as
    /// [`RequestSent::Maybe`](crate::RequestSent).
    ///
    /// ```
    /// use std::sync::Arc;
    /// use azstore::update::Versioned;
    /// use object_store::{memory::InMemory, path::Path};
    /// let plain = azstore::object_store::Object::new(Arc::new(InMemory::new()), Path::from("n"))
    ///     .without_write_id();
    /// assert!(!plain.stores_write_ids());
    /// ```
    pub fn without_write_id(self) -> Object {
        Object {
            write_ids: Arc::new(AtomicBool::new(false)),
            ..self
        }
    }

    fn options(&self, mode: PutMode, write_id: &str) -> PutOptions {
        let mut options = PutOptions::from(mode);
        if self.write_ids.load(Ordering::Relaxed) {
            options.attributes = Attributes::from_iter([(
                Attribute::Metadata(Cow::Borrowed(WRITE_ID_METADATA)),
                write_id.to_string(),
            )]);
        }
        options.extensions.insert(SettledAbove);
        options
    }

    async fn put(&self, value: &Bytes, mode: PutMode, write_id: &str) -> Result<ETag> {
        let mut options = self.options(mode.clone(), write_id);
        let put = match self
            .store
            .put_opts(&self.path, value.clone().into(), options.clone())
            .await
        {
            Err(::object_store::Error::NotImplemented { .. }) if !options.attributes.is_empty() => {
                // The store keeps no attributes: go on without the token.
                self.write_ids.store(false, Ordering::Relaxed);
                options.attributes = Attributes::new();
                self.store
                    .put_opts(&self.path, value.clone().into(), options)
                    .await
            }
            other => other,
        }
        .map_err(|e| from_object_store(e, true))?;
        put.e_tag.map(ETag::new).ok_or_else(|| {
            Error::decode(format!(
                "{} reported no ETag for {}: update() needs one",
                self.store, self.path
            ))
        })
    }
}

impl Versioned for Object {
    type Value = Bytes;

    async fn read(&self) -> Result<Option<Current<Bytes>>> {
        let got = match self.store.get(&self.path).await {
            Ok(g) => g,
            Err(::object_store::Error::NotFound { source, .. })
                if !is_missing_container(source.as_ref()) =>
            {
                return Ok(None);
            }
            Err(e) => return Err(from_object_store(e, false)),
        };
        let etag = got.meta.e_tag.clone().map(ETag::new).ok_or_else(|| {
            Error::decode(format!(
                "{} reported no ETag for {}: update() needs one",
                self.store, self.path
            ))
        })?;
        let write_id = got
            .attributes
            .get(&Attribute::Metadata(Cow::Borrowed(WRITE_ID_METADATA)))
            .map(|v| v.as_ref().to_string());
        let value = got.bytes().await.map_err(|e| from_object_store(e, false))?;
        Ok(Some(Current {
            value,
            etag,
            write_id,
        }))
    }

    async fn replace(&self, value: &Bytes, etag: &ETag, write_id: &str) -> Result<ETag> {
        let mode = PutMode::Update(UpdateVersion {
            e_tag: Some(etag.as_str().to_string()),
            version: None,
        });
        self.put(value, mode, write_id).await
    }

    async fn create(&self, value: &Bytes, write_id: &str) -> Result<ETag> {
        self.put(value, PutMode::Create, write_id).await
    }

    async fn delete(&self, _etag: &ETag) -> Result<()> {
        Err(Error::invalid_input(format!(
            "{} at {}: object_store 0.14 has no conditional delete, so update() cannot delete \
             through Object (an unconditional delete could remove another writer's value)",
            self.store, self.path
        )))
    }

    fn stores_write_ids(&self) -> bool {
        self.write_ids.load(Ordering::Relaxed)
    }

    fn identity(&self) -> String {
        let instance = Arc::as_ptr(&self.store) as *const () as usize;
        format!("object_store:{}#{instance:x}/{}", self.store, self.path)
    }

    fn snapshot(&self, value: &Bytes) -> Option<Vec<u8>> {
        Some(value.to_vec())
    }

    fn restore(&self, snapshot: &[u8]) -> Option<Bytes> {
        Some(Bytes::copy_from_slice(snapshot))
    }
}

/// Whether a not-found error is a missing container (an error, not an absent object).
fn is_missing_container(source: &(dyn std::error::Error + Send + Sync + 'static)) -> bool {
    source
        .downcast_ref::<Error>()
        .is_some_and(|e| e.kind() == crate::ErrorKind::ContainerNotFound)
}
