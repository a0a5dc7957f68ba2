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
/// the current version (an `Edm.String`). It is removed before the entity is handed to you.
pub const WRITE_ID_PROPERTY: &str = "_azstore_write_id";

/// One entity (by keys) of a table, read and written as a `T` with ETag conditions:
/// `read` = Query Entity, `replace` = Update Entity with `If-Match: etag`, `create` = Insert
/// Entity (409 if it exists), `delete` = Delete Entity with `If-Match: etag`.
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
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for VersionedEntity<T> {
    fn clone(&self) -> Self {
        VersionedEntity {
            table: self.table.clone(),
            partition_key: self.partition_key.clone(),
            row_key: self.row_key.clone(),
            _value: PhantomData,
        }
    }
}

impl TableClient {
    /// The entity with these keys as a [`Versioned`] resource of type `T` (keys validated,
    /// no request sent). Values written through it must carry the same keys.
    pub fn versioned<T>(&self, partition_key: &str, row_key: &str) -> Result<VersionedEntity<T>> {
        validate_key("PartitionKey", partition_key)?;
        validate_key("RowKey", row_key)?;
        Ok(VersionedEntity {
            table: self.clone(),
            partition_key: partition_key.to_string(),
            row_key: row_key.to_string(),
            _value: PhantomData,
        })
    }
}

impl<T> VersionedEntity<T> {
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
        e.properties.insert(
            WRITE_ID_PROPERTY.to_string(),
            EdmValue::String(write_id.to_string()),
        );
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
            Some(EdmValue::String(s)) => Some(s),
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

    fn key(&self) -> Option<String> {
        let path = entity_path(&self.table.name, &self.partition_key, &self.row_key);
        Some(format!("{}{path}", self.table.pipeline.url_of("")))
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
}
