//! [`MemoryJson`]: a JSON value in a [`MemoryStore`], [`Versioned`] for `update()`.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::{MemoryStore, Op, errors, validate_name};
use crate::conditions::ETag;
use crate::error::Result;
use crate::update::{Current, Versioned};

/// A JSON value named in a [`MemoryStore`]: one item, read and written with the same
/// conditions as a blob ([`Versioned`]). Cheap to clone; every clone (and every
/// `store.json(name)`) addresses the same item.
///
/// | `Versioned` | in memory |
/// |---|---|
/// | `read` | the value, its ETag and the write id stored with it; `None` when absent |
/// | `replace` | only at the ETag given: `PreconditionFailed` otherwise, `NotFound` when absent |
/// | `create` | only when absent: `Conflict` otherwise |
/// | `delete` | only at the ETag given |
///
/// Every write gives the item a new ETag. It offers snapshots: the value a read returns is
/// the value written.
///
/// ```
/// use azstore::update::{Decision, UpdatePolicy, Versioned, update};
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> azstore::Result<()> {
/// let stock = azstore::memory::MemoryStore::new().json::<u32>("stock")?;
/// stock.create(&10, "0000000000000001").await?;
/// update(&stock, &UpdatePolicy::default(), |n| Decision::Write(n.copied().unwrap_or(0) - 3)).await?;
/// assert_eq!(stock.read().await?.map(|c| c.value), Some(7));
/// # Ok(()) }
/// ```
pub struct MemoryJson<T> {
    store: MemoryStore,
    name: String,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for MemoryJson<T> {
    fn clone(&self) -> Self {
        MemoryJson {
            store: self.store.clone(),
            name: self.name.clone(),
            _value: PhantomData,
        }
    }
}

impl<T> fmt::Debug for MemoryJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MemoryJson")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

impl<T> MemoryJson<T> {
    /// The item `name` of `store` (validated here: 1 to 1024 bytes).
    ///
    /// ```
    /// use azstore::memory::{MemoryJson, MemoryStore};
    /// # fn main() -> azstore::Result<()> {
    /// let doc: MemoryJson<String> = MemoryJson::new(MemoryStore::new(), "greeting")?;
    /// assert_eq!(doc.name(), "greeting");
    /// # Ok(()) }
    /// ```
    pub fn new(store: MemoryStore, name: &str) -> Result<MemoryJson<T>> {
        validate_name(name)?;
        Ok(MemoryJson {
            store,
            name: name.to_string(),
            _value: PhantomData,
        })
    }

    /// The item's name.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let doc = azstore::memory::MemoryStore::new().json::<u64>("n")?;
    /// assert_eq!(doc.name(), "n");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The store.
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// let store = azstore::memory::MemoryStore::new();
    /// let doc = store.json::<u64>("n")?;
    /// doc.store().remove("n");
    /// # Ok(()) }
    /// ```
    pub fn store(&self) -> &MemoryStore {
        &self.store
    }
}

fn encode<T: Serialize>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value)
        .map_err(|e| errors::invalid_input(format!("value cannot be serialized to JSON: {e}")))
}

impl<T> Versioned for MemoryJson<T>
where
    T: Serialize + DeserializeOwned + Send + Sync,
{
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        let name = &self.name;
        let entry = self
            .store
            .call(Op::Read, |s, _| Ok(s.items.get(name).cloned()))
            .await?;
        entry
            .map(|e| {
                let value = serde_json::from_slice(&e.json)
                    .map_err(|err| errors::undecodable(name, &err))?;
                Ok(Current {
                    value,
                    etag: e.etag,
                    write_id: e.write_id,
                })
            })
            .transpose()
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        let json = encode(value)?;
        let name = &self.name;
        self.store
            .call(Op::Replace, |s, _| {
                match s.items.get(name) {
                    None => return Err(errors::not_found(name)),
                    Some(e) if &e.etag != etag => return Err(errors::precondition_failed(name)),
                    Some(_) => {}
                }
                Ok(s.write_item(name, json, write_id))
            })
            .await
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        let json = encode(value)?;
        let name = &self.name;
        self.store
            .call(Op::Create, |s, _| {
                if s.items.contains_key(name) {
                    return Err(errors::already_exists(name));
                }
                Ok(s.write_item(name, json, write_id))
            })
            .await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        let name = &self.name;
        self.store
            .call(Op::Delete, |s, _| match s.items.get(name) {
                None => Err(errors::not_found(name)),
                Some(e) if &e.etag != etag => Err(errors::precondition_failed(name)),
                Some(_) => {
                    s.items.remove(name);
                    Ok(())
                }
            })
            .await
    }

    fn stores_write_ids(&self) -> bool {
        true
    }

    fn identity(&self) -> String {
        self.store.key_of(&self.name)
    }

    fn snapshot(&self, value: &T) -> Option<Vec<u8>> {
        serde_json::to_vec(value).ok()
    }

    fn restore(&self, snapshot: &[u8]) -> Option<T> {
        serde_json::from_slice(snapshot).ok()
    }
}
