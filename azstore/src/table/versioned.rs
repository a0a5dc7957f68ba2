//! [`Versioned`] for one table entity, so the read-modify-write combinator works on it.

use std::marker::PhantomData;

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::client::{TableClient, entity_path};
use super::codec::{from_entity, to_entity};
use super::edm::{EdmValue, Entity};
use super::names::validate_key;
use crate::conditions::{ETag, MatchCondition};
use crate::error::{Error, Result};
use crate::update::{Current, Versioned};

/// The property in which [`VersionedEntity`] stores the write id of the write that produced
/// the current version (an `Edm.String`). It is removed before the entity is handed to
/// `update`'s closure, but every other reader of the table (queries, other SDKs) sees it;
/// [`VersionedEntity::without_write_id`] leaves it out, at a cost described there.
pub const WRITE_ID_PROPERTY: &str = "_azstore_write_id";

/// One entity (by keys) of a table, read and written as a `T` with ETag conditions:
/// `read` = Query Entity, `replace` = Update Entity with `If-Match: etag`, `create` = Insert
/// Entity (409 if it exists), `delete` = Delete Entity with `If-Match: etag`.
///
/// Besides your value's properties, every write stores the property [`WRITE_ID_PROPERTY`]
/// (`_azstore_write_id`): the ids of the last few writes made through `update`, with which
/// `update` recognises its own write after a lost response. Readers that do not go through
/// this type see it as an ordinary string property; to leave it out, use
/// [`without_write_id`](VersionedEntity::without_write_id).
///
/// ```no_run
/// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
/// use azstore::update::Versioned;
/// use azstore::table::Entity;
/// let counter = table.versioned::<Entity>("counters", "visits")?;
/// if let Some(cur) = counter.read().await? {
///     let mut next = cur.value.clone();
///     let n = next.get("N").and_then(|v| v.as_i64()).unwrap_or(0);
///     next.set("N", n + 1);
///     counter.replace(&next, &cur.etag, "my-write-id").await?; // 412 if someone was faster
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct VersionedEntity<T> {
    table: TableClient,
    partition_key: String,
    row_key: String,
    store_write_id: bool,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for VersionedEntity<T> {
    fn clone(&self) -> Self {
        VersionedEntity {
            table: self.table.clone(),
            partition_key: self.partition_key.clone(),
            row_key: self.row_key.clone(),
            store_write_id: self.store_write_id,
            _value: PhantomData,
        }
    }
}

impl TableClient {
    /// The entity with these keys as a [`Versioned`] resource of type `T` (keys validated,
    /// no request sent). Values written through it must carry the same keys.
    ///
    /// Writes through it also store the property [`WRITE_ID_PROPERTY`]
    /// (`_azstore_write_id`), which other readers see; see [`VersionedEntity`] and
    /// [`VersionedEntity::without_write_id`].
    ///
    /// ```no_run
    /// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// use azstore::update::{update, Decision, UpdatePolicy};
    /// let visits = table.versioned::<Entity>("counters", "visits")?;
    /// update(&visits, &UpdatePolicy::default(), |cur| {
    ///     let mut e = cur.cloned().unwrap_or_else(|| Entity::new("counters", "visits"));
    ///     let n = e.get("N").and_then(|v| v.as_i64()).unwrap_or(0);
    ///     e.set("N", n + 1);
    ///     Decision::Write(e)
    /// })
    /// .await?;
    /// # Ok(()) }
    /// ```
    pub fn versioned<T>(&self, partition_key: &str, row_key: &str) -> Result<VersionedEntity<T>> {
        validate_key("PartitionKey", partition_key)?;
        validate_key("RowKey", row_key)?;
        Ok(VersionedEntity {
            table: self.clone(),
            partition_key: partition_key.to_string(),
            row_key: row_key.to_string(),
            store_write_id: true,
            _value: PhantomData,
        })
    }
}

impl<T> VersionedEntity<T> {
    /// Stores no write id with the entity: no `_azstore_write_id` property for other readers
    /// to see. The cost: `update` can no longer recognise its own write after an ambiguous
    /// failure (a timeout, a dropped connection, a 500/502/504 on the write). Where it would
    /// have recognised the write and reported success, it stops with an error whose
    /// [`request_sent`](crate::Error::request_sent) is
    /// [`RequestSent::Maybe`](crate::RequestSent::Maybe) as soon as the entity has changed
    /// since the read the write was based on — read it and decide. A property left by earlier
    /// writes is removed by the next write.
    ///
    /// ```no_run
    /// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// use azstore::update::{update, Decision, UpdatePolicy};
    /// let plain = table.versioned::<Entity>("counters", "visits")?.without_write_id();
    /// match update(&plain, &UpdatePolicy::default(), |cur| {
    ///     let mut e = cur.cloned().unwrap_or_else(|| Entity::new("counters", "visits"));
    ///     e.set("N", e.get("N").and_then(|v| v.as_i64()).unwrap_or(0) + 1);
    ///     Decision::Write(e)
    /// })
    /// .await
    /// {
    ///     Ok(_) => {}
    ///     Err(e) if e.request_sent() == azstore::RequestSent::Maybe => { /* read and decide */ }
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn without_write_id(mut self) -> Self {
        self.store_write_id = false;
        self
    }

    fn entity_with_write_id<V: Serialize + ?Sized>(
        &self,
        value: &V,
        write_id: &str,
    ) -> Result<Entity> {
        let mut e = to_entity(value)?;
        if e.partition_key != self.partition_key || e.row_key != self.row_key {
            return Err(Error::invalid_input(format!(
                "the value's keys ({:?}, {:?}) are not this entity's ({:?}, {:?})",
                e.partition_key, e.row_key, self.partition_key, self.row_key
            )));
        }
        if self.store_write_id {
            e.properties.insert(
                WRITE_ID_PROPERTY.to_string(),
                EdmValue::String(write_id.to_string()),
            );
        } else {
            e.properties.remove(WRITE_ID_PROPERTY);
        }
        Ok(e)
    }
}

impl<T> Versioned for VersionedEntity<T>
where
    T: Serialize + DeserializeOwned + Send + Sync,
{
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        let stored = match self
            .table
            .get_entity(&self.partition_key, &self.row_key)
            .await
        {
            Ok(s) => s,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(e) => return Err(e),
        };
        let mut entity = stored.entity;
        let write_id = match entity.properties.remove(WRITE_ID_PROPERTY) {
            Some(EdmValue::String(s)) if self.store_write_id => Some(s),
            _ => None,
        };
        Ok(Some(Current {
            value: from_entity(entity)?,
            etag: stored.etag,
            write_id,
        }))
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        let e = self.entity_with_write_id(value, write_id)?;
        self.table
            .replace_entity(&e, &MatchCondition::ETag(etag.clone()))
            .await
    }

    fn identity(&self) -> String {
        let path = entity_path(&self.table.name, &self.partition_key, &self.row_key);
        format!("{}{path}", self.table.pipeline.url_of(""))
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        let e = self.entity_with_write_id(value, write_id)?;
        self.table.insert_entity(&e).await
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.table
            .delete_entity(&self.partition_key, &self.row_key, etag)
            .await
    }

    fn stores_write_ids(&self) -> bool {
        self.store_write_id
    }
}
