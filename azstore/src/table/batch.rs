//! Entity group transactions: up to 100 operations on one partition, all or nothing.

use std::collections::HashSet;

use serde::Serialize;

use super::client::{ACCEPT, TableClient, entity_path, raw_request};
use super::codec::to_entity;
use super::edm::Entity;
use super::names::{validate_entity, validate_key};
use crate::conditions::{ETag, MatchCondition};
use crate::error::{Error, Result};
use crate::http::{Headers, Method};
use crate::storage::refusal::error_from_parts;

/// The most operations in one batch.
pub const MAX_OPERATIONS: usize = 100;
/// The most bytes a batch request body may have.
pub const MAX_BATCH_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Insert,
    Replace,
    Merge,
    Delete,
    InsertOrReplace,
    InsertOrMerge,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Insert => "insert",
            Kind::Replace => "replace",
            Kind::Merge => "merge",
            Kind::Delete => "delete",
            Kind::InsertOrReplace => "insert-or-replace",
            Kind::InsertOrMerge => "insert-or-merge",
        }
    }
}

#[derive(Debug, Clone)]
struct Op {
    kind: Kind,
    entity: Entity,
    if_match: Option<MatchCondition>,
}

/// A transaction (entity group transaction) under construction. Each operation carries its
/// own `If-Match` exactly as the single-entity operations do. Nothing is sent until
/// [`TableClient::submit`]; conversion errors are reported there, before sending.
///
/// ```
/// use azstore::MatchCondition;
/// use azstore::table::{Batch, Entity};
/// let batch = Batch::new()
///     .insert(&Entity::new("p", "1").with("N", 1))
///     .replace(&Entity::new("p", "2").with("N", 2), MatchCondition::Any)
///     .delete("p", "3", MatchCondition::Any);
/// assert_eq!(batch.len(), 3);
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
pub struct Batch {
    ops: Vec<Op>,
    /// The first conversion error (already prefixed with its operation index).
    error: Option<String>,
}

impl Batch {
    /// An empty batch.
    ///
    /// ```
    /// let batch = azstore::table::Batch::new();
    /// assert!(batch.is_empty());
    /// ```
    pub fn new() -> Batch {
        Batch::default()
    }

    /// The number of operations.
    ///
    /// ```
    /// use azstore::table::{Batch, Entity};
    /// let batch = Batch::new().insert(&Entity::new("p", "1")).insert(&Entity::new("p", "2"));
    /// assert_eq!(batch.len(), 2);
    /// ```
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    /// Whether the batch has no operations.
    ///
    /// ```
    /// assert!(azstore::table::Batch::new().is_empty());
    /// ```
    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    fn push<T: Serialize + ?Sized>(
        mut self,
        kind: Kind,
        v: &T,
        m: Option<MatchCondition>,
    ) -> Batch {
        match to_entity(v) {
            Ok(entity) => self.push_entity(kind, entity, m),
            Err(e) => {
                let index = self.ops.len();
                self.error
                    .get_or_insert(format!("batch operation {index}: {}", e.message()));
                // Keep the index positions stable for later operations.
                self.ops.push(Op {
                    kind,
                    entity: Entity::default(),
                    if_match: m,
                });
                self
            }
        }
    }

    fn push_entity(
        mut self,
        kind: Kind,
        entity: Entity,
        if_match: Option<MatchCondition>,
    ) -> Batch {
        self.ops.push(Op {
            kind,
            entity,
            if_match,
        });
        self
    }

    /// Inserts an entity (fails the batch with 409 `EntityAlreadyExists` if it exists).
    ///
    /// ```
    /// use azstore::table::{Batch, Entity};
    /// let batch = Batch::new().insert(&Entity::new("orders-2026", "A-17").with("Total", 20.0));
    /// # let _ = batch;
    /// ```
    pub fn insert<T: Serialize + ?Sized>(self, entity: &T) -> Batch {
        self.push(Kind::Insert, entity, None)
    }

    /// Replaces an entity if `if_match` holds.
    ///
    /// ```
    /// use azstore::{ETag, MatchCondition};
    /// use azstore::table::{Batch, Entity};
    /// # let etag = ETag::new("W/\"datetime'2026-11-22T00%3A04%3A18.08Z'\"");
    /// let batch = Batch::new()
    ///     .replace(&Entity::new("p", "1").with("N", 1), &etag) // only this version
    ///     .replace(&Entity::new("p", "2").with("N", 2), MatchCondition::Any); // whatever is there
    /// # let _ = batch;
    /// ```
    pub fn replace<T: Serialize + ?Sized>(
        self,
        entity: &T,
        if_match: impl Into<MatchCondition>,
    ) -> Batch {
        self.push(Kind::Replace, entity, Some(if_match.into()))
    }

    /// Merges into an entity if `if_match` holds.
    ///
    /// ```
    /// use azstore::MatchCondition;
    /// use azstore::table::{Batch, Entity};
    /// let batch = Batch::new().merge(&Entity::new("p", "1").with("Seen", true), MatchCondition::Any);
    /// # let _ = batch;
    /// ```
    pub fn merge<T: Serialize + ?Sized>(
        self,
        entity: &T,
        if_match: impl Into<MatchCondition>,
    ) -> Batch {
        self.push(Kind::Merge, entity, Some(if_match.into()))
    }

    /// Inserts or replaces, last writer wins (no If-Match).
    ///
    /// ```
    /// use azstore::table::{Batch, Entity};
    /// let batch = Batch::new().insert_or_replace(&Entity::new("p", "1").with("N", 1));
    /// # let _ = batch;
    /// ```
    pub fn insert_or_replace<T: Serialize + ?Sized>(self, entity: &T) -> Batch {
        self.push(Kind::InsertOrReplace, entity, None)
    }

    /// Inserts or merges, last writer wins (no If-Match).
    ///
    /// ```
    /// use azstore::table::{Batch, Entity};
    /// let batch = Batch::new().insert_or_merge(&Entity::new("p", "1").with("N", 1));
    /// # let _ = batch;
    /// ```
    pub fn insert_or_merge<T: Serialize + ?Sized>(self, entity: &T) -> Batch {
        self.push(Kind::InsertOrMerge, entity, None)
    }

    /// Deletes an entity if `if_match` holds.
    ///
    /// ```
    /// use azstore::MatchCondition;
    /// use azstore::table::Batch;
    /// let batch = Batch::new().delete("p", "1", MatchCondition::Any);
    /// assert_eq!(batch.len(), 1);
    /// ```
    pub fn delete(
        self,
        partition_key: &str,
        row_key: &str,
        if_match: impl Into<MatchCondition>,
    ) -> Batch {
        let e = Entity::new(partition_key, row_key);
        self.push_entity(Kind::Delete, e, Some(if_match.into()))
    }

    /// Checks every rule the service enforces, so a bad batch is refused before sending.
    fn validate(&self) -> Result<()> {
        if let Some(e) = &self.error {
            return Err(Error::invalid_input(e.clone()));
        }
        if self.ops.is_empty() {
            return Err(Error::invalid_input("a batch needs at least one operation"));
        }
        if self.ops.len() > MAX_OPERATIONS {
            return Err(Error::invalid_input(format!(
                "a batch has at most {MAX_OPERATIONS} operations, not {}",
                self.ops.len()
            )));
        }
        let pk = &self.ops[0].entity.partition_key;
        let mut rows = HashSet::new();
        for (i, op) in self.ops.iter().enumerate() {
            let ctx = |e: Error| e.context(format!("batch operation {i}"));
            if let Some(m) = &op.if_match {
                // The sub-request's If-Match travels inside the body: the same checks as a
                // header of a single request (no CR/LF that would inject a line, no empty
                // ETag that would make the operation unconditional).
                crate::http::checks::validate_header("if-match", m.header_value()).map_err(ctx)?;
            }
            if op.kind == Kind::Delete {
                validate_key("PartitionKey", &op.entity.partition_key).map_err(ctx)?;
                validate_key("RowKey", &op.entity.row_key).map_err(ctx)?;
            } else {
                validate_entity(&op.entity).map_err(ctx)?;
            }
            if op.entity.partition_key != *pk {
                return Err(Error::invalid_input(format!(
                    "batch operation {i}: all operations must share one PartitionKey \
                     ({:?} differs from {pk:?})",
                    op.entity.partition_key
                )));
            }
            if !rows.insert(op.entity.row_key.as_str()) {
                return Err(Error::invalid_input(format!(
                    "batch operation {i}: RowKey {:?} appears twice; each entity may appear \
                     once per batch",
                    op.entity.row_key
                )));
            }
        }
        Ok(())
    }
}

/// The result of one operation of a committed batch.
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient, batch: azstore::table::Batch) -> azstore::Result<()> {
/// for (i, r) in table.submit(&batch).await?.iter().enumerate() {
///     println!("operation {i}: {} {:?}", r.status, r.etag);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BatchResponse {
    /// The HTTP status of the operation (201/204).
    pub status: u16,
    /// The new ETag (every operation but delete).
    pub etag: Option<ETag>,
}

/// The index of the batch operation an error from [`TableClient::submit`] is about, if it
/// is about one (the message starts with `batch operation N`).
///
/// ```no_run
/// # async fn demo(table: azstore::table::TableClient, batch: azstore::table::Batch) -> azstore::Result<()> {
/// use azstore::table::failed_operation_index;
/// if let Err(e) = table.submit(&batch).await {
///     match failed_operation_index(&e) {
///         Some(i) => eprintln!("operation {i} failed, nothing applied: {e}"),
///         None => return Err(e),
///     }
/// }
/// # Ok(()) }
/// ```
pub fn failed_operation_index(err: &Error) -> Option<usize> {
    let rest = err.message().strip_prefix("batch operation ")?;
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

impl TableClient {
    /// Submits a batch as one entity group transaction: either every operation applies or
    /// none does. Returns one [`BatchResponse`] per operation, in order.
    ///
    /// Refused before sending (`InvalidInput`): an empty batch or more than 100 operations,
    /// two partition keys, a row key twice, invalid keys or entities, a body over 4 MiB.
    ///
    /// When an operation fails the whole batch fails with that operation's error (e.g. 412
    /// `UpdateConditionNotSatisfied`, 409 `EntityAlreadyExists`), its message starting with
    /// `batch operation N` (0-based; see [`failed_operation_index`]).
    ///
    /// ```no_run
    /// # async fn demo(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// use azstore::MatchCondition;
    /// use azstore::table::{Batch, Entity, failed_operation_index};
    /// // Move one unit of stock between two rows of the same partition, atomically.
    /// let from = table.get::<Entity>("warehouse-1", "sku-42").await?;
    /// let to = table.get::<Entity>("warehouse-1", "sku-43").await?;
    /// let count = |e: &Entity| e.get("Count").and_then(|v| v.as_i64()).unwrap_or(0);
    /// let batch = Batch::new()
    ///     .merge(&Entity::new("warehouse-1", "sku-42").with("Count", count(&from.entity) - 1), &from.etag)
    ///     .merge(&Entity::new("warehouse-1", "sku-43").with("Count", count(&to.entity) + 1), &to.etag);
    /// match table.submit(&batch).await {
    ///     Ok(responses) => println!("{} operations applied", responses.len()),
    ///     Err(e) if e.is_precondition_failed() => {
    ///         println!("operation {:?} met a concurrent change; nothing applied", failed_operation_index(&e));
    ///     }
    ///     Err(e) => return Err(e),
    /// }
    /// # let _ = MatchCondition::Any; Ok(()) }
    /// ```
    pub async fn submit(&self, batch: &Batch) -> Result<Vec<BatchResponse>> {
        batch.validate()?;
        let batch_id = format!("batch_{}", uuid::Uuid::new_v4());
        let cs_id = format!("changeset_{}", uuid::Uuid::new_v4());
        let base = self.pipeline.endpoint().url();
        let mut body = String::new();
        body.push_str(&format!(
            "--{batch_id}\r\nContent-Type: multipart/mixed; boundary={cs_id}\r\n\r\n"
        ));
        for (i, op) in batch.ops.iter().enumerate() {
            body.push_str(&format!(
                "--{cs_id}\r\nContent-Type: application/http\r\n\
                 Content-Transfer-Encoding: binary\r\n\r\n"
            ));
            let e = &op.entity;
            let (method, url) = match op.kind {
                Kind::Insert => ("POST", format!("{base}/{}", self.name)),
                Kind::Replace | Kind::InsertOrReplace => (
                    "PUT",
                    format!(
                        "{base}/{}",
                        entity_path(&self.name, &e.partition_key, &e.row_key)
                    ),
                ),
                Kind::Merge | Kind::InsertOrMerge => (
                    "MERGE",
                    format!(
                        "{base}/{}",
                        entity_path(&self.name, &e.partition_key, &e.row_key)
                    ),
                ),
                Kind::Delete => (
                    "DELETE",
                    format!(
                        "{base}/{}",
                        entity_path(&self.name, &e.partition_key, &e.row_key)
                    ),
                ),
            };
            body.push_str(&format!(
                "{method} {url} HTTP/1.1\r\nContent-ID: {}\r\nAccept: {ACCEPT}\r\n\
                 DataServiceVersion: 3.0;\r\n",
                i + 1
            ));
            if let Some(m) = &op.if_match {
                body.push_str(&format!("If-Match: {}\r\n", m.header_value()));
            }
            if op.kind == Kind::Delete {
                body.push_str("\r\n");
            } else {
                if op.kind == Kind::Insert {
                    body.push_str("Prefer: return-no-content\r\n");
                }
                let json = serde_json::Value::Object(e.to_json()).to_string();
                body.push_str(&format!("Content-Type: application/json\r\n\r\n{json}\r\n"));
            }
        }
        body.push_str(&format!("--{cs_id}--\r\n--{batch_id}--\r\n"));
        if body.len() > MAX_BATCH_BYTES {
            return Err(Error::invalid_input(format!(
                "the batch body is {} bytes; at most {MAX_BATCH_BYTES} are allowed",
                body.len()
            )));
        }
        let req = raw_request(Method::Post, "$batch".to_string())
            .header("accept", ACCEPT)
            .body(body, &format!("multipart/mixed; boundary={batch_id}"));
        let resp = self.pipeline.send(req).await?;
        let parts = parse_multipart(&String::from_utf8_lossy(&resp.body));
        if let Some((pos, part)) = parts.iter().enumerate().find(|(_, p)| p.status >= 300) {
            let err = error_from_parts(part.status, &part.headers, part.body.as_bytes());
            let index = index_from_message(err.message())
                .or_else(|| {
                    part.headers
                        .get("content-id")
                        .and_then(|c| c.trim().parse::<usize>().ok())
                        .and_then(|c| c.checked_sub(1))
                })
                .unwrap_or(pos);
            let what = batch
                .ops
                .get(index)
                .map(|op| format!(" ({} of RowKey {:?})", op.kind.name(), op.entity.row_key))
                .unwrap_or_default();
            return Err(err.context(format!(
                "batch operation {index}{what} failed; nothing in the batch was applied"
            )));
        }
        if parts.len() != batch.ops.len() {
            return Err(Error::decode(format!(
                "batch response has {} operation results for {} operations",
                parts.len(),
                batch.ops.len()
            )));
        }
        Ok(parts
            .into_iter()
            .map(|p| BatchResponse {
                status: p.status,
                etag: p.headers.etag(),
            })
            .collect())
    }
}

/// The service prefixes a failed operation's message with its 0-based index: `1:The ...`.
fn index_from_message(msg: &str) -> Option<usize> {
    let (n, _) = msg.split_once(':')?;
    n.trim().parse().ok()
}

struct Part {
    status: u16,
    headers: Headers,
    body: String,
}

/// A part being read: the header lines are collected, then turned into [`Headers`].
struct PartBuilder {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl PartBuilder {
    fn finish(self) -> Part {
        Part {
            status: self.status,
            headers: Headers::from_pairs(self.headers),
            body: self.body,
        }
    }
}

/// Extracts every embedded HTTP response of a (nested) multipart body, in order. Tolerates
/// `\r\n` or `\n` line endings; parts without a status line (the changeset header) are
/// skipped. Never panics.
fn parse_multipart(body: &str) -> Vec<Part> {
    let mut parts = Vec::new();
    let mut current: Option<PartBuilder> = None;
    let mut in_headers = false;
    for line in body.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with("--") {
            if let Some(p) = current.take() {
                parts.push(p.finish());
            }
            continue;
        }
        if let Some(rest) = line.strip_prefix("HTTP/1.1 ") {
            if let Some(p) = current.take() {
                parts.push(p.finish());
            }
            let status = rest
                .split_whitespace()
                .next()
                .and_then(|s| s.parse().ok())
                .unwrap_or(0);
            current = Some(PartBuilder {
                status,
                headers: Vec::new(),
                body: String::new(),
            });
            in_headers = true;
            continue;
        }
        let Some(p) = current.as_mut() else { continue };
        if in_headers {
            if line.is_empty() {
                in_headers = false;
            } else if let Some((k, v)) = line.split_once(':') {
                p.headers
                    .push((k.trim().to_ascii_lowercase(), v.trim().to_string()));
            }
        } else {
            if !p.body.is_empty() {
                p.body.push('\n');
            }
            p.body.push_str(line);
        }
    }
    if let Some(p) = current.take() {
        parts.push(p.finish());
    }
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_success_and_error_responses() {
        let ok = "--batchresponse_1\r\nContent-Type: multipart/mixed; boundary=changesetresponse_2\r\n\r\n\
                  --changesetresponse_2\r\nContent-Type: application/http\r\nContent-Transfer-Encoding: binary\r\n\r\n\
                  HTTP/1.1 204 No Content\r\nContent-ID: 1\r\nETag: W/\"datetime'x'\"\r\n\r\n\r\n\
                  --changesetresponse_2\r\nContent-Type: application/http\r\n\r\n\
                  HTTP/1.1 201 Created\r\nETag: W/\"y\"\r\nContent-Type: application/json\r\n\r\n{\"a\":1}\r\n\
                  --changesetresponse_2--\r\n--batchresponse_1--\r\n";
        let parts = parse_multipart(ok);
        assert_eq!(parts.len(), 2);
        assert_eq!(parts[0].status, 204);
        assert_eq!(
            parts[0].headers.etag().unwrap().as_str(),
            "W/\"datetime'x'\""
        );
        assert_eq!(parts[1].body.trim(), "{\"a\":1}");
        let bad = "--b\nHTTP/1.1 412 Precondition Failed\nContent-ID: 2\n\n\
                   {\"odata.error\":{\"code\":\"UpdateConditionNotSatisfied\",\"message\":{\"lang\":\"en-US\",\"value\":\"1:The update condition specified in the request was not satisfied.\"}}}\n--b--";
        let parts = parse_multipart(bad);
        assert_eq!(parts.len(), 1);
        let e = error_from_parts(412, &parts[0].headers, parts[0].body.as_bytes());
        assert_eq!(index_from_message(e.message()), Some(1));
        assert!(e.is_precondition_failed());
        assert!(parse_multipart("garbage\nHTTP/1.1 x\n").len() == 1);
    }

    #[test]
    fn invalid_batches_are_refused() {
        let e = |i: u32| Entity::new("p", i.to_string());
        let mut b = Batch::new();
        for i in 0..101 {
            b = b.insert(&e(i));
        }
        assert!(b.validate().unwrap_err().message().contains("at most 100"));
        let b = Batch::new().insert(&e(1)).insert(&Entity::new("q", "2"));
        assert!(b.validate().unwrap_err().message().contains("PartitionKey"));
        let b = Batch::new()
            .insert(&e(1))
            .delete("p", "1", MatchCondition::Any);
        let err = b.validate().unwrap_err();
        assert_eq!(failed_operation_index(&err), Some(1));
        assert!(Batch::new().validate().is_err());
        let b = Batch::new().insert(&e(1)).insert(&5);
        assert_eq!(failed_operation_index(&b.validate().unwrap_err()), Some(1));
    }
}
