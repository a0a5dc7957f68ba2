//! [`CosmosItem`]: one Cosmos DB item holding a serde value, as a [`Versioned`] resource; and
//! the raw point operations the lease and the lock share.

use std::fmt;
use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::{CosmosContainer, PartitionKey, cosmos_error, json_body, validate_id};
use crate::conditions::{Conditions, ETag};
use crate::error::{Error, Result};
use crate::http::{Intent, Method, Request, Response};
use crate::update::{Current, Versioned};

/// The item field in which [`update`](crate::update::update) keeps the ids of its recent
/// writes (`"azstoreWriteId": "<16 hex>,<16 hex>,…"`), to recognise its own write after a lost
/// reply. It is removed from the value the closure sees; other readers see it as an ordinary
/// string field.
pub const WRITE_ID_FIELD: &str = "azstoreWriteId";

/// Properties Cosmos DB adds to every item; removed before the value is decoded.
const SYSTEM_PROPERTIES: [&str; 6] = ["_rid", "_self", "_etag", "_ts", "_attachments", "_lsn"];

/// The id and partition key of one item, and the requests on it.
#[derive(Clone)]
pub(crate) struct ItemRef {
    pub(crate) container: CosmosContainer,
    pub(crate) id: String,
    pub(crate) pk: PartitionKey,
}

/// A stored item: its JSON object (system properties still in) and `_etag`.
pub(crate) struct Stored {
    pub(crate) doc: Map<String, Value>,
    pub(crate) etag: ETag,
}

impl ItemRef {
    pub(crate) fn new(container: CosmosContainer, id: &str, pk: PartitionKey) -> Result<ItemRef> {
        validate_id("item", id)?;
        Ok(ItemRef {
            container,
            id: id.to_string(),
            pk,
        })
    }

    fn doc_path(&self) -> String {
        format!("{}/{}", self.container.docs_path(), self.id)
    }

    fn request(&self, method: Method, path: &str) -> Request {
        Request::new(method, path).header("x-ms-documentdb-partitionkey", self.pk.header_value())
    }

    /// The item's identity across clients: endpoint, database, container, partition key
    /// (JSON) and id.
    pub(crate) fn key(&self) -> String {
        format!(
            "cosmos:{}/{}/{}/{}/{}",
            self.container
                .client()
                .endpoint()
                .url()
                .trim_end_matches('/'),
            self.container.database_id(),
            self.container.id(),
            self.pk.as_json(),
            self.id
        )
    }

    pub(crate) fn describe(&self) -> String {
        format!(
            "Cosmos DB item {} (partition {}) in {}/{}",
            self.id,
            self.pk.as_json(),
            self.container.database_id(),
            self.container.id()
        )
    }

    fn stored(&self, resp: &Response, what: &str) -> Result<Stored> {
        let Value::Object(doc) = json_body(resp, what)? else {
            return Err(Error::decode(format!(
                "Cosmos DB answered {what} of {} with JSON that is not an object",
                self.describe()
            )));
        };
        let etag = resp
            .headers
            .etag()
            .or_else(|| {
                doc.get("_etag")
                    .and_then(Value::as_str)
                    .filter(|s| !s.trim().is_empty())
                    .map(ETag::new)
            })
            .ok_or_else(|| {
                Error::decode(format!(
                    "Cosmos DB answered {what} of {} without an _etag",
                    self.describe()
                ))
            })?;
        Ok(Stored { doc, etag })
    }

    /// Reads the item; `None` when it does not exist.
    ///
    /// Sends `x-ms-documentdb-query-enablecrosspartition: true`: Azure ignores it on a point
    /// read, and the local `@vercel/cosmosdb-server` needs it to answer a missing item with
    /// 404 instead of 500.
    pub(crate) async fn read(&self) -> Result<Option<Stored>> {
        let req = self
            .request(Method::Get, &self.doc_path())
            .header("x-ms-documentdb-query-enablecrosspartition", "true");
        match self.container.client().send(req).await {
            Ok(resp) => self.stored(&resp, "a read").map(Some),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(cosmos_error(e, false).context(self.describe())),
        }
    }

    /// Creates the item from `doc` (409 `ResourceAlreadyExists` when it exists). Never
    /// repeated after a lost reply.
    pub(crate) async fn create(&self, mut doc: Value) -> Result<Stored> {
        self.container.stamp(&mut doc, &self.id, &self.pk)?;
        let req = self
            .request(Method::Post, &self.container.docs_path())
            .intent(Intent::ConditionalWrite)
            .body(doc.to_string(), "application/json");
        match self.container.client().send(req).await {
            Ok(resp) => self.stored(&resp, "a create"),
            Err(e) => Err(cosmos_error(e, true).context(self.describe())),
        }
    }

    /// Replaces the item with `doc` if its `_etag` is still `etag` (else 412), or
    /// unconditionally when `etag` is `None`. A conditional replace is never repeated after a
    /// lost reply.
    pub(crate) async fn replace(&self, mut doc: Value, etag: Option<&ETag>) -> Result<Stored> {
        self.container.stamp(&mut doc, &self.id, &self.pk)?;
        let req = if_match(self.request(Method::Put, &self.doc_path()), etag)
            .body(doc.to_string(), "application/json");
        match self.container.client().send(req).await {
            Ok(resp) => self.stored(&resp, "a replace"),
            Err(e) => Err(cosmos_error(e, false).context(self.describe())),
        }
    }

    /// Creates or replaces the item, last writer wins.
    pub(crate) async fn upsert(&self, mut doc: Value) -> Result<Stored> {
        self.container.stamp(&mut doc, &self.id, &self.pk)?;
        let req = self
            .request(Method::Post, &self.container.docs_path())
            .header("x-ms-documentdb-is-upsert", "True")
            .intent(Intent::IdempotentWrite)
            .body(doc.to_string(), "application/json");
        match self.container.client().send(req).await {
            Ok(resp) => self.stored(&resp, "an upsert"),
            Err(e) => Err(cosmos_error(e, false).context(self.describe())),
        }
    }

    /// Deletes the item if its `_etag` is still `etag` (unconditionally when `None`).
    pub(crate) async fn delete(&self, etag: Option<&ETag>) -> Result<()> {
        let req = if_match(self.request(Method::Delete, &self.doc_path()), etag);
        match self.container.client().send(req).await {
            Ok(_) => Ok(()),
            Err(e) => Err(cosmos_error(e, false).context(self.describe())),
        }
    }
}

/// A Cosmos DB item holding one value of type `T` (serialized by serde as a JSON object), as a
/// [`Versioned`] resource for [`update`](crate::update::update) — the Cosmos counterpart of
/// [`BlobJson`](crate::blob::BlobJson) and [`RedisJson`](crate::redis::RedisJson).
///
/// The item is named by its id and partition key value, both explicit. Writes put them into
/// the stored object (`"id"`, and the container's partition key path); a value whose own
/// `id` or partition key field holds something else is refused before sending.
///
/// | [`Versioned`] | Cosmos DB |
/// |---|---|
/// | `read` | `GET …/docs/{id}`; 404 is `None` |
/// | `replace(etag)` | `PUT …/docs/{id}` with `If-Match: <_etag>`; 412 `ConditionNotMet` when someone wrote since |
/// | `create` | `POST …/docs`; 409 `ResourceAlreadyExists` when it exists (the create race) |
/// | `delete(etag)` | `DELETE …/docs/{id}` with `If-Match` |
///
/// The write ids of `update` live in [`WRITE_ID_FIELD`]; Cosmos DB's system properties
/// (`_etag`, `_ts`, …) and that field are removed before the value is decoded, so `T` need not
/// (and should not) declare them. `_etag` is opaque: real ETags are quoted, the local server's
/// are bare UUIDs; both are sent back exactly as received.
///
/// ```no_run
/// # async fn run(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
/// use azstore::cosmos::PartitionKey;
/// use azstore::update::{update, Decision, UpdatePolicy};
///
/// #[derive(serde::Serialize, serde::Deserialize, Clone, Default)]
/// struct Counter { hits: u64 }
///
/// let counter = container.item::<Counter>("visits", PartitionKey::from("visits"))?;
/// let done = update(&counter, &UpdatePolicy::default(), |current| {
///     let mut c = current.cloned().unwrap_or_default();
///     c.hits += 1;
///     Decision::Write(c)
/// })
/// .await?;
/// println!("{} hits after {} attempt(s)", done.value.map_or(0, |c| c.hits), done.attempts);
/// # Ok(()) }
/// ```
pub struct CosmosItem<T> {
    item: ItemRef,
    ttl: Option<i64>,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for CosmosItem<T> {
    fn clone(&self) -> Self {
        CosmosItem {
            item: self.item.clone(),
            ttl: self.ttl,
            _value: PhantomData,
        }
    }
}

impl<T> fmt::Debug for CosmosItem<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CosmosItem")
            .field("container", &self.item.container)
            .field("id", &self.item.id)
            .field("partition_key", &self.item.pk)
            .field("ttl", &self.ttl)
            .finish()
    }
}

impl<T> CosmosItem<T> {
    pub(crate) fn new(
        container: CosmosContainer,
        id: &str,
        pk: PartitionKey,
    ) -> Result<CosmosItem<T>> {
        Ok(CosmosItem {
            item: ItemRef::new(container, id, pk)?,
            ttl: None,
            _value: PhantomData,
        })
    }

    /// Writes carry a time to live: the item expires `seconds` after its last write (where
    /// the container has time to live switched on, as
    /// [`create_if_not_exists`](CosmosContainer::create_if_not_exists) does). `InvalidInput`
    /// unless 1 ≤ `seconds` ≤ 2³¹ − 1.
    ///
    /// ```no_run
    /// # fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// let session = item.with_ttl(3600)?; // gone an hour after its last write
    /// # let _ = session;
    /// # Ok(()) }
    /// ```
    pub fn with_ttl(mut self, seconds: i64) -> Result<CosmosItem<T>> {
        if !(1..=i64::from(i32::MAX)).contains(&seconds) {
            return Err(Error::invalid_input(format!(
                "a Cosmos DB ttl is 1 to 2147483647 seconds (got {seconds})"
            )));
        }
        self.ttl = Some(seconds);
        Ok(self)
    }

    /// The item id.
    ///
    /// ```no_run
    /// # fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// println!("{} in partition {:?}", item.id(), item.partition_key());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        &self.item.id
    }

    /// The partition key value.
    ///
    /// ```no_run
    /// # fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// println!("{}", item.partition_key().header_value());
    /// # Ok(()) }
    /// ```
    pub fn partition_key(&self) -> &PartitionKey {
        &self.item.pk
    }

    /// The container.
    ///
    /// ```no_run
    /// # fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// println!("in {}/{}", item.container().database_id(), item.container().id());
    /// # Ok(()) }
    /// ```
    pub fn container(&self) -> &CosmosContainer {
        &self.item.container
    }
}

impl<T: Serialize + DeserializeOwned> CosmosItem<T> {
    fn encode(&self, value: &T, write_id: Option<&str>) -> Result<Value> {
        let mut doc = serde_json::to_value(value).map_err(|e| {
            Error::invalid_input(format!("value cannot be serialized to JSON: {e}"))
        })?;
        let Value::Object(map) = &mut doc else {
            return Err(Error::invalid_input(
                "a Cosmos DB item value must serialize to a JSON object",
            ));
        };
        for p in SYSTEM_PROPERTIES {
            map.remove(p);
        }
        match write_id {
            Some(id) => map.insert(WRITE_ID_FIELD.into(), Value::String(id.to_string())),
            None => map.remove(WRITE_ID_FIELD),
        };
        if let Some(ttl) = self.ttl {
            map.insert("ttl".into(), Value::from(ttl));
        }
        Ok(doc)
    }

    fn decode(&self, stored: Stored) -> Result<Current<T>> {
        let mut doc = stored.doc;
        let write_id = match doc.remove(WRITE_ID_FIELD) {
            Some(Value::String(s)) => Some(s),
            _ => None,
        };
        for p in SYSTEM_PROPERTIES {
            doc.remove(p);
        }
        let value = serde_json::from_value(Value::Object(doc)).map_err(|e| {
            Error::decode(format!(
                "{} does not hold the expected value: {e}",
                self.item.describe()
            ))
        })?;
        Ok(Current {
            value,
            etag: stored.etag,
            write_id,
        })
    }

    /// Reads the item and its `_etag`; `Ok(None)` when it does not exist. The same as
    /// [`Versioned::read`], callable without importing the trait.
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// match item.read().await? {
    ///     Some(current) => println!("{} at {}", current.value, current.etag),
    ///     None => println!("not created yet"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn read(&self) -> Result<Option<Current<T>>> {
        match self.item.read().await? {
            Some(stored) => self.decode(stored).map(Some),
            None => Ok(None),
        }
    }

    /// Replaces the item only if its `_etag` is still `etag` (412 `ConditionNotMet`
    /// otherwise), storing `write_id` in [`WRITE_ID_FIELD`]. Returns the new `_etag`. The
    /// same as [`Versioned::replace`]: [`update`](crate::update::update) passes a fresh id; a
    /// hand-written retry loop may pass any short token of lower-case hex (or `""`).
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// if let Some(current) = item.read().await? {
    ///     let mut doc = current.value.clone();
    ///     doc["final"] = "Sunday".into();
    ///     match item.replace(&doc, &current.etag, "").await {
    ///         Err(e) if e.is_precondition_failed() => println!("changed since the read"),
    ///         other => { other?; }
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        let doc = self.encode(value, Some(write_id))?;
        Ok(self.item.replace(doc, Some(etag)).await?.etag)
    }

    /// Creates the item only if it does not exist (409 `ResourceAlreadyExists` otherwise),
    /// storing `write_id` in [`WRITE_ID_FIELD`]. Returns the new `_etag`. The same as
    /// [`Versioned::create`].
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// match item.create(&serde_json::json!({"id": "2026", "season": "2026"}), "").await {
    ///     Err(e) if e.is_conflict() => println!("exists already"),
    ///     other => { other?; }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        let doc = self.encode(value, Some(write_id))?;
        Ok(self.item.create(doc).await?.etag)
    }

    /// Deletes the item only if its `_etag` is still `etag` (412 otherwise, 404 when it is
    /// gone). The same as [`Versioned::delete`].
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// if let Some(current) = item.read().await? {
    ///     item.delete(&current.etag).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self, etag: &ETag) -> Result<()> {
        self.item.delete(Some(etag)).await
    }

    /// Last writer wins: creates or replaces the item whatever is there (an upsert).
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// let etag = item.overwrite(&serde_json::json!({"id": "2026", "season": "2026"})).await?;
    /// # let _ = etag;
    /// # Ok(()) }
    /// ```
    pub async fn overwrite(&self, value: &T) -> Result<ETag> {
        Ok(self.item.upsert(self.encode(value, None)?).await?.etag)
    }

    /// Deletes the item whatever its `_etag`; `Ok(false)` when it did not exist.
    ///
    /// ```no_run
    /// # async fn demo(item: azstore::cosmos::CosmosItem<serde_json::Value>) -> azstore::Result<()> {
    /// if !item.delete_if_exists().await? {
    ///     println!("nothing to delete");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        match self.item.delete(None).await {
            Ok(()) => Ok(true),
            Err(e) if e.is_not_found() => Ok(false),
            Err(e) => Err(e),
        }
    }
}

impl<T> Versioned for CosmosItem<T>
where
    T: Serialize + DeserializeOwned + Send + Sync,
{
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        CosmosItem::read(self).await
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        CosmosItem::replace(self, value, etag, write_id).await
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        CosmosItem::create(self, value, write_id).await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        CosmosItem::delete(self, etag).await
    }

    /// `cosmos:{endpoint}/{database}/{container}/{partition key as JSON}/{id}`.
    fn identity(&self) -> String {
        self.item.key()
    }

    fn stores_write_ids(&self) -> bool {
        true
    }

    /// The item as written (the value with its id and partition key stamped in, and the
    /// time to live): a read returns it with the system properties added, which it strips.
    fn snapshot(&self, value: &T) -> Option<Vec<u8>> {
        let mut doc = self.encode(value, None).ok()?;
        self.item
            .container
            .stamp(&mut doc, &self.item.id, &self.item.pk)
            .ok()?;
        serde_json::to_vec(&doc).ok()
    }

    fn restore(&self, snapshot: &[u8]) -> Option<T> {
        let doc = serde_json::from_slice(snapshot).ok()?;
        let stored = Stored {
            doc,
            etag: ETag::new(""),
        };
        self.decode(stored).ok().map(|c| c.value)
    }
}

/// `req` conditioned on the item's `_etag` being `etag` (HTTP `If-Match`), a conditional write
/// that is never repeated after a lost reply; unconditional when `etag` is `None`.
fn if_match(req: Request, etag: Option<&ETag>) -> Request {
    match etag {
        Some(etag) => req
            .guarded_by(&Conditions::if_match(etag))
            .header("if-match", etag.as_str()),
        None => req,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cosmos::{CosmosClient, CosmosKey, EMULATOR_KEY};

    fn item() -> CosmosItem<Value> {
        CosmosClient::new("http://127.0.0.1:1", CosmosKey::new(EMULATOR_KEY).unwrap())
            .unwrap()
            .database("d")
            .unwrap()
            .container("c", "/pk")
            .unwrap()
            .item("a", PartitionKey::from("p"))
            .unwrap()
    }

    #[test]
    fn write_ids_and_system_properties_are_stripped() {
        let it = item();
        let stored = Stored {
            doc: serde_json::json!({
                "id": "a", "pk": "p", "n": 1, "_etag": "e", "_ts": 5, "_rid": "r",
                "_self": "s", "_attachments": "t", WRITE_ID_FIELD: "00000000000000aa"
            })
            .as_object()
            .unwrap()
            .clone(),
            etag: ETag::new("e"),
        };
        let cur = it.decode(stored).unwrap();
        assert_eq!(cur.value, serde_json::json!({"id": "a", "pk": "p", "n": 1}));
        assert_eq!(cur.write_id.as_deref(), Some("00000000000000aa"));
        let doc = it
            .clone()
            .with_ttl(60)
            .unwrap()
            .encode(&serde_json::json!({"n": 2, "_etag": "old"}), Some("bb"))
            .unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"n": 2, WRITE_ID_FIELD: "bb", "ttl": 60})
        );
        assert!(it.encode(&serde_json::json!(3), None).is_err());
        assert!(it.clone().with_ttl(0).is_err());
        assert!(item().container().item::<Value>("a/b", "p").is_err());
        assert_eq!(
            Versioned::identity(&it),
            r#"cosmos:http://127.0.0.1:1/d/c/"p"/a"#
        );
    }
}
