//! The table clients and their operations.

use std::sync::Arc;

use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use super::codec::{from_entity, to_entity};
use super::edm::{DateTime, Entity};
use super::names::{validate_entity, validate_key, validate_table_name};
use super::query::Query;
use crate::conditions::{ETag, MatchCondition};
use crate::error::{Error, ErrorCode, Result};
use crate::http::{Method, Pipeline, Request, Response, encode_query_value};
use crate::paging::{Page, ResultStream, every_page};

/// What reads ask for: JSON with type annotations for the types JSON cannot express.
pub(crate) const ACCEPT: &str = "application/json;odata=minimalmetadata";
const JSON: &str = "application/json";

/// An entity as stored: the value and the ETag of exactly this version.
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

/// A continuation token of an entity or table query (opaque).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Continuation(Vec<(&'static str, String)>);

/// A table's entry in the table list.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableItem {
    /// The table name.
    pub name: String,
}

/// The Table service of one account. Cheap to clone.
#[derive(Debug, Clone)]
pub struct TableServiceClient {
    pipeline: Pipeline,
}

service_client!(TableServiceClient, Table =>
    /// A client for the table `name` (validated, no request sent).
    table: TableClient, validate_table_name);

impl TableServiceClient {
    /// Query Tables, one page. `query.filter` may use `TableName`; `$select` is ignored.
    pub async fn list_tables_page(
        &self,
        query: &Query,
        continuation: Option<&Continuation>,
    ) -> Result<Page<TableItem, Continuation>> {
        query.validate()?;
        let mut req = Request::new(Method::Get, "Tables").header("accept", ACCEPT);
        for (k, v) in query.params() {
            if k != "$select" {
                req = req.query(k, v);
            }
        }
        if let Some(c) = continuation {
            for (k, v) in &c.0 {
                req = req.query(k, v.clone());
            }
        }
        let resp = self.pipeline.send(req).await?;
        let items = json_values(&resp)?
            .iter()
            .map(|v| {
                v.get("TableName")
                    .and_then(Value::as_str)
                    .map(|n| TableItem {
                        name: n.to_string(),
                    })
                    .ok_or_else(|| Error::decode("table list entry without TableName"))
            })
            .collect::<Result<Vec<_>>>()?;
        let continuation = resp
            .headers
            .get("x-ms-continuation-nexttablename")
            .map(|n| Continuation(vec![("NextTableName", n.to_string())]));
        Ok(Page::new(items, continuation))
    }

    /// Query Tables as a stream following continuation tokens: every table exactly once.
    pub fn list_tables(&self, query: Query) -> ResultStream<TableItem> {
        every_page(
            self,
            query,
            |this, query, c: Option<Continuation>| async move {
                this.list_tables_page(&query, c.as_ref()).await
            },
        )
    }
}

fn json_values(resp: &Response) -> Result<Vec<Value>> {
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
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        crate::error::created_unless(self.create().await, ErrorCode::TableAlreadyExists)
    }

    /// Delete Table (404 `ResourceNotFound`/`TableNotFound` if it does not exist).
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
    pub async fn insert_or_replace<T: Serialize + ?Sized>(&self, entity: &T) -> Result<ETag> {
        let e = to_entity(entity)?;
        validate_entity(&e)?;
        self.send_write(self.write_request(Method::Put, &e, None))
            .await
    }

    /// Insert Or Merge Entity: creates or merges **without any concurrency check** — no
    /// If-Match is ever sent, the last writer wins per property. Returns the new ETag.
    pub async fn insert_or_merge<T: Serialize + ?Sized>(&self, entity: &T) -> Result<ETag> {
        let e = to_entity(entity)?;
        validate_entity(&e)?;
        self.send_write(self.write_request(Method::Merge, &e, None))
            .await
    }

    /// Delete Entity. `if_match` is required (an ETag, or [`MatchCondition::Any`]).
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

    /// Query Entities, one page.
    pub async fn query_page<T: DeserializeOwned>(
        &self,
        query: &Query,
        continuation: Option<&Continuation>,
    ) -> Result<Page<Stored<T>, Continuation>> {
        query.validate()?;
        let mut req = raw_request(Method::Get, format!("{}()", self.name)).header("accept", ACCEPT);
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
