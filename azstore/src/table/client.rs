//! The table clients and their operations.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::codec::{from_entity, to_entity};
use super::edm::{DateTime, Entity};
use super::names::{validate_entity, validate_key};
use super::query::Query;
use crate::conditions::{ETag, MatchCondition};
use crate::error::{Error, ErrorCode, Result};
use crate::http::{Method, Pipeline, Request, Response, encode_query_value};
use crate::paging::{Page, ResultStream, every_page};

/// What reads ask for: JSON with type annotations for the types JSON cannot express.
pub(crate) const ACCEPT: &str = "application/json;odata=minimalmetadata";
const JSON: &str = "application/json";

/// An entity as stored: the value and the ETag of exactly this version.
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
/// use azstore::table::Entity;
/// let stored = table.get::<Entity>("smith", "john").await?;
/// println!("{:?} at {} (written {:?})", stored.entity.get("Email"), stored.etag, stored.timestamp);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Stored<T> {
    /// The entity.
    pub entity: T,
    /// Its ETag; pass it back in [`MatchCondition::ETag`] to update only this version.
    pub etag: ETag,
    /// The service's `Timestamp` of this version.
    pub timestamp: Option<DateTime>,
}

/// A continuation token of an entity or table query (opaque): where the next page starts.
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
/// use azstore::table::{Entity, Query};
/// let query = Query::all().top(100);
/// let first = table.query_page::<Entity>(&query, None).await?;
/// if let Some(next) = &first.next_marker {
///     let second = table.query_page::<Entity>(&query, Some(next)).await?;
///     # let _ = second;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation(pub(crate) Vec<(&'static str, String)>);

pub(crate) fn json_values(resp: &Response) -> Result<Vec<Value>> {
    let v: Value = serde_json::from_slice(&resp.body)
        .map_err(|e| Error::decode(format!("Query response is not JSON: {e}")))?;
    match v.get("value") {
        Some(Value::Array(a)) => Ok(a.clone()),
        _ => Err(Error::decode(
            "Query response is not what the operation returns: no \"value\" array",
        )),
    }
}

fn json_object(v: &Value) -> Result<&Map<String, Value>> {
    v.as_object()
        .ok_or_else(|| Error::decode("entity is not a JSON object"))
}

/// One table. Cheap to clone.
///
/// Writes follow the Table service's ETag contract:
///
/// | operation | returns ETag | If-Match |
/// |---|---|---|
/// | [`insert`](Self::insert) | yes | none (409 `EntityAlreadyExists` if it exists) |
/// | [`replace`](Self::replace), [`merge`](Self::merge) | yes | required: [`MatchCondition`] |
/// | [`delete_entity`](Self::delete_entity) | no | required: [`MatchCondition`] |
/// | [`insert_or_replace`](Self::insert_or_replace), [`insert_or_merge`](Self::insert_or_merge) | yes | never sent: last writer wins |
/// | [`get`](Self::get), [`query`](Self::query) | yes | — |
///
/// ```no_run
/// # async fn demo(account: azstore::StorageAccount) -> azstore::Result<()> {
/// use azstore::table::{Entity, TableServiceClient};
/// let table = TableServiceClient::new(&account)?.table("inventory")?;
/// table.create_if_not_exists().await?;
/// let etag = table.insert(&Entity::new("warehouse-1", "sku-42").with("Count", 7_i64)).await?;
/// // Only if nobody changed it since our insert:
/// table.merge(&Entity::new("warehouse-1", "sku-42").with("Count", 6_i64), &etag).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TableClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) name: Arc<str>,
}

/// A request whose path is already encoded (entity paths carry `(`, `'`, `=` literally).
pub(crate) fn raw_request(method: Method, encoded_path: String) -> Request {
    let mut r = Request::new(method, "");
    r.path = encoded_path;
    r
}

/// `Table(PartitionKey='pk',RowKey='rk')` with quotes doubled and values percent-encoded.
pub(crate) fn entity_path(table: &str, pk: &str, rk: &str) -> String {
    let enc = |s: &str| encode_query_value(&s.replace('\'', "''"));
    format!("{table}(PartitionKey='{}',RowKey='{}')", enc(pk), enc(rk))
}

named_client!(TableClient, "table");

impl TableClient {
    /// Create Table. Fails with 409 `TableAlreadyExists` when it exists.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// match table.create().await {
    ///     Err(e) if e.is_conflict() => println!("{} exists already", table.name()),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create(&self) -> Result<()> {
        let body = serde_json::json!({ "TableName": &*self.name }).to_string();
        let req = Request::new(Method::Post, "Tables")
            .header("accept", ACCEPT)
            .header("prefer", "return-no-content")
            .body(body, JSON);
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Creates the table unless it exists. Returns `true` when this call created it.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// if table.create_if_not_exists().await? {
    ///     println!("created {}", table.name());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::created_unless(self.create().await, ErrorCode::TableAlreadyExists)
    }

    /// Delete Table (404 `ResourceNotFound`/`TableNotFound` if it does not exist). The
    /// service keeps the name reserved for a while (409 `TableBeingDeleted` on a create).
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// match table.delete().await {
    ///     Err(e) if e.is_not_found() => {} // already gone
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<()> {
        let path = format!("Tables('{}')", self.name);
        self.pipeline
            .send(raw_request(Method::Delete, path).header("accept", ACCEPT))
            .await?;
        Ok(())
    }

    /// Deletes the table if it exists. Returns `true` when this call deleted it.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// let deleted = table.delete_if_exists().await?;
    /// # let _ = deleted; Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        crate::error::found(self.delete().await)
    }

    fn write_request(
        &self,
        method: Method,
        e: &Entity,
        if_match: Option<&MatchCondition>,
    ) -> Request {
        let body = Value::Object(e.to_json()).to_string();
        let path = entity_path(&self.name, &e.partition_key, &e.row_key);
        let req = raw_request(method, path)
            .header("accept", ACCEPT)
            .header_opt("if-match", if_match.map(|m| m.header_value().to_string()))
            .body(body, JSON);
        if let Some(MatchCondition::ETag(_)) = if_match {
            req.intent(crate::http::Intent::ConditionalWrite)
        } else {
            req
        }
    }

    async fn send_write(&self, req: Request) -> Result<ETag> {
        let resp = self.pipeline.send(req).await?;
        resp.headers.require_etag()
    }

    /// Insert Entity: creates the entity, failing with 409 `EntityAlreadyExists` if one
    /// with the same keys exists. Returns the new ETag.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize)]
    /// # #[serde(rename_all = "PascalCase")]
    /// # struct Customer { partition_key: String, row_key: String, email: String }
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// let john = Customer { partition_key: "smith".into(), row_key: "john".into(), email: "j@contoso.org".into() };
    /// match table.insert(&john).await {
    ///     Ok(etag) => println!("inserted at {etag}"),
    ///     Err(e) if e.is_conflict() => println!("john smith exists already"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn insert<T: Serialize + ?Sized>(&self, entity: &T) -> Result<ETag> {
        self.insert_entity(&to_entity(entity)?).await
    }

    /// [`insert`](Self::insert) for an [`Entity`] already converted.
    pub(crate) async fn insert_entity(&self, e: &Entity) -> Result<ETag> {
        validate_entity(e)?;
        let body = Value::Object(e.to_json()).to_string();
        let req = Request::new(Method::Post, &self.name)
            .header("accept", ACCEPT)
            .header("prefer", "return-no-content")
            .body(body, JSON);
        self.send_write(req).await
    }

    /// Update Entity: replaces the whole entity (properties not in `entity` are removed).
    /// `if_match` is required: an ETag for an optimistic update (412
    /// `UpdateConditionNotSatisfied` if it changed), or [`MatchCondition::Any`] to force it.
    /// Fails with 404 if the entity does not exist.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize)]
    /// # #[serde(rename_all = "PascalCase")]
    /// # struct Customer { partition_key: String, row_key: String, email: String }
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// let mut c = table.get::<Customer>("smith", "john").await?;
    /// c.entity.email = "john@contoso.org".into();
    /// match table.replace(&c.entity, &c.etag).await {
    ///     Ok(_) => println!("updated"),
    ///     Err(e) if e.is_precondition_failed() => println!("changed since the read: re-read"),
    ///     Err(e) => return Err(e),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn replace<T: Serialize + ?Sized>(
        &self,
        entity: &T,
        if_match: impl Into<MatchCondition>,
    ) -> Result<ETag> {
        self.replace_entity(&to_entity(entity)?, &if_match.into())
            .await
    }

    pub(crate) async fn replace_entity(
        &self,
        e: &Entity,
        if_match: &MatchCondition,
    ) -> Result<ETag> {
        validate_entity(e)?;
        self.send_write(self.write_request(Method::Put, e, Some(if_match)))
            .await
    }

    /// Merge Entity: updates the given properties and keeps the others (a `None` field is
    /// omitted, so the stored property is kept). `if_match` as for [`replace`](Self::replace).
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::MatchCondition;
    /// use azstore::table::Entity;
    /// // Set one property whatever the current version (the others are kept).
    /// let patch = Entity::new("smith", "john").with("Newsletter", true);
    /// table.merge(&patch, MatchCondition::Any).await?;
    /// # Ok(()) }
    /// ```
    pub async fn merge<T: Serialize + ?Sized>(
        &self,
        entity: &T,
        if_match: impl Into<MatchCondition>,
    ) -> Result<ETag> {
        let e = to_entity(entity)?;
        validate_entity(&e)?;
        self.send_write(self.write_request(Method::Merge, &e, Some(&if_match.into())))
            .await
    }

    /// Insert Or Replace Entity: creates or replaces **without any concurrency check** —
    /// no If-Match is ever sent, the last writer wins. Returns the new ETag.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// // A heartbeat row: each write simply replaces the previous one.
    /// let beat = Entity::new("workers", "worker-7").with("Seen", azstore::table::DateTime::now());
    /// table.insert_or_replace(&beat).await?;
    /// # Ok(()) }
    /// ```
    pub async fn insert_or_replace<T: Serialize + ?Sized>(&self, entity: &T) -> Result<ETag> {
        let e = to_entity(entity)?;
        validate_entity(&e)?;
        self.send_write(self.write_request(Method::Put, &e, None))
            .await
    }

    /// Insert Or Merge Entity: creates or merges **without any concurrency check** — no
    /// If-Match is ever sent, the last writer wins per property. Returns the new ETag.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// // Creates the row, or sets only `LastLogin` on the existing one.
    /// table.insert_or_merge(&Entity::new("smith", "john").with("LastLogin", "2026-11-25")).await?;
    /// # Ok(()) }
    /// ```
    pub async fn insert_or_merge<T: Serialize + ?Sized>(&self, entity: &T) -> Result<ETag> {
        let e = to_entity(entity)?;
        validate_entity(&e)?;
        self.send_write(self.write_request(Method::Merge, &e, None))
            .await
    }

    /// Delete Entity. `if_match` is required (an ETag, or [`MatchCondition::Any`]). 404
    /// `ResourceNotFound` if the entity does not exist.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// let stored = table.get::<Entity>("smith", "john").await?;
    /// // Deletes only the version we read (412 if someone changed it since).
    /// table.delete_entity("smith", "john", &stored.etag).await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete_entity(
        &self,
        partition_key: &str,
        row_key: &str,
        if_match: impl Into<MatchCondition>,
    ) -> Result<()> {
        validate_key("PartitionKey", partition_key)?;
        validate_key("RowKey", row_key)?;
        let path = entity_path(&self.name, partition_key, row_key);
        let if_match = if_match.into();
        let req = raw_request(Method::Delete, path)
            .header("accept", ACCEPT)
            .header("if-match", if_match.header_value().to_string());
        let req = if let MatchCondition::ETag(_) = if_match {
            req.intent(crate::http::Intent::ConditionalWrite)
        } else {
            req
        };
        self.pipeline.send(req).await?;
        Ok(())
    }

    /// Query Entity by keys: the entity and its ETag. 404 `ResourceNotFound` if absent.
    ///
    /// ```no_run
    /// # #[derive(serde::Serialize, serde::Deserialize)]
    /// # #[serde(rename_all = "PascalCase")]
    /// # struct Customer { partition_key: String, row_key: String, email: String }
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// let john = table.get::<Customer>("smith", "john").await?;
    /// println!("{} (version {})", john.entity.email, john.etag);
    /// # Ok(()) }
    /// ```
    pub async fn get<T: DeserializeOwned>(
        &self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Stored<T>> {
        let s = self.get_entity(partition_key, row_key).await?;
        Ok(Stored {
            entity: from_entity(s.entity)?,
            etag: s.etag,
            timestamp: s.timestamp,
        })
    }

    /// Like [`get`](Self::get), but `Ok(None)` when the entity does not exist.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::Entity;
    /// match table.try_get::<Entity>("smith", "john").await? {
    ///     Some(stored) => println!("found, version {}", stored.etag),
    ///     None => println!("no such customer"),
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn try_get<T: DeserializeOwned>(
        &self,
        partition_key: &str,
        row_key: &str,
    ) -> Result<Option<Stored<T>>> {
        match self.get(partition_key, row_key).await {
            Ok(s) => Ok(Some(s)),
            Err(e) if e.is_not_found() => Ok(None),
            Err(e) => Err(e),
        }
    }

    pub(crate) async fn get_entity(&self, pk: &str, rk: &str) -> Result<Stored<Entity>> {
        validate_key("PartitionKey", pk)?;
        validate_key("RowKey", rk)?;
        let path = entity_path(&self.name, pk, rk);
        let resp = self
            .pipeline
            .send(raw_request(Method::Get, path).header("accept", ACCEPT))
            .await?;
        let v: Value = serde_json::from_slice(&resp.body)
            .map_err(|e| Error::decode(format!("Get Entity response is not JSON: {e}")))?;
        let (entity, body_etag) = Entity::from_json(json_object(&v)?)?;
        let etag = resp
            .headers
            .etag()
            .or(body_etag)
            .ok_or_else(|| Error::decode("entity response has no ETag"))?;
        Ok(Stored {
            timestamp: entity.timestamp,
            entity,
            etag,
        })
    }

    /// Query Entities, one page (at most [`Query::top`] entities, 1000 by the service's
    /// default), and the continuation of the next page, if any. A page may be empty while a
    /// continuation follows.
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::{Entity, Filter, Query};
    /// let query = Query::filter(Filter::eq("PartitionKey", "smith")?).top(50);
    /// let mut next = None;
    /// loop {
    ///     let page = table.query_page::<Entity>(&query, next.as_ref()).await?;
    ///     println!("{} entities", page.items.len());
    ///     next = page.next_marker;
    ///     if next.is_none() {
    ///         break;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn query_page<T: DeserializeOwned>(
        &self,
        query: &Query,
        continuation: Option<&Continuation>,
    ) -> Result<Page<Stored<T>, Continuation>> {
        query.validate()?;
        let mut req = raw_request(Method::Get, format!("{}()", self.name))
            .header("accept", ACCEPT)
            .response_limit(crate::http::request::ResponseLimit::TABLE_PAGE);
        for (k, v) in query.params() {
            req = req.query(k, v);
        }
        if let Some(c) = continuation {
            for (k, v) in &c.0 {
                req = req.query(k, v.clone());
            }
        }
        let resp = self.pipeline.send(req).await?;
        let mut items = Vec::new();
        for v in json_values(&resp)? {
            let (entity, etag) = Entity::from_json(json_object(&v)?)?;
            let etag = etag.ok_or_else(|| Error::decode("entity in query without odata.etag"))?;
            items.push(Stored {
                timestamp: entity.timestamp,
                entity: from_entity(entity)?,
                etag,
            });
        }
        let pk = resp.headers.get("x-ms-continuation-nextpartitionkey");
        let rk = resp.headers.get("x-ms-continuation-nextrowkey");
        let continuation = match (pk, rk) {
            (None, None) => None,
            (pk, rk) => {
                let mut c = Vec::new();
                if let Some(pk) = pk {
                    c.push(("NextPartitionKey", pk.to_string()));
                }
                if let Some(rk) = rk {
                    c.push(("NextRowKey", rk.to_string()));
                }
                Some(Continuation(c))
            }
        };
        Ok(Page::new(items, continuation))
    }

    /// Query Entities as a stream that follows continuation tokens, yielding every matching
    /// entity exactly once with its ETag.
    ///
    /// ```no_run
    /// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::table::{Entity, Filter, Query};
    /// use azstore::paging::TryStreamExt;
    /// let q = Query::filter(Filter::eq("PartitionKey", "customers")?).top(100);
    /// let all: Vec<_> = table.query::<Entity>(q).try_collect().await?;
    /// # Ok(()) }
    /// ```
    pub fn query<T: DeserializeOwned + Send + 'static>(
        &self,
        query: Query,
    ) -> ResultStream<Stored<T>> {
        every_page(
            self,
            query,
            |this, query, c: Option<Continuation>| async move {
                this.query_page::<T>(&query, c.as_ref()).await
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entity_paths_escape_quotes_and_encode() {
        assert_eq!(
            entity_path("t", "a'b", "c d&"),
            "t(PartitionKey='a%27%27b',RowKey='c%20d%26')"
        );
    }
}
