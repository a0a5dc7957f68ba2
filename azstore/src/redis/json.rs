//! [`RedisJson`]: a Redis key holding a serde JSON value, as a [`Versioned`] resource.

use std::fmt;
use std::marker::PhantomData;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Idempotent, RedisClient, random_hex, validate_key};
use crate::conditions::ETag;
use crate::error::{Error, ErrorKind, Result};
use crate::update::{Current, Versioned};

/// What is stored at the key: one JSON document (a Redis string) holding the value with its
/// version and the write ids of [`update`](crate::update::update).
#[derive(Serialize)]
struct StoredRef<'a, T> {
    etag: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    wid: Option<&'a str>,
    value: &'a T,
}

#[derive(Deserialize)]
struct Stored<T> {
    etag: String,
    #[serde(default)]
    wid: Option<String>,
    value: T,
}

/// A Redis key holding a JSON value, as a [`Versioned`] resource for
/// [`update`](crate::update::update) — the Redis counterpart of
/// [`BlobJson`](crate::blob::BlobJson).
///
/// The key is a Redis string holding one JSON document,
/// `{"etag":"…","wid":"…","value":…}`: `value` is yours, `etag` a random version that
/// changes with every write, `wid` the write ids `update` uses to recognise its own writes
/// whose reply was lost (as blob metadata does for blobs). Read the value elsewhere with
/// `JSON.parse(GET key).value`.
///
/// | [`Versioned`] | Redis |
/// |---|---|
/// | `read` | `GET` |
/// | `replace(etag)` | one `EVAL` of a compare-and-set script: the stored etag must still be `etag` (else 412-like `PreconditionFailed`; absent: `NotFound`), then `SET key … KEEPTTL` — atomic on the server, one round trip |
/// | `create` | `SET key … NX`; nil (the key exists) is `Conflict` / `ResourceAlreadyExists`, the 409 create race of a blob |
/// | `delete(etag)` | the same script, with `DEL` |
///
/// Writes are never repeated after a lost reply; the error says
/// [`RequestSent::Maybe`](crate::RequestSent::Maybe) and `update` re-reads to find out.
/// A replace keeps the key's time to live (`KEEPTTL`, Redis 6.0+).
///
/// ```no_run
/// use azstore::redis::RedisClient;
/// use azstore::update::{update, Decision, UpdatePolicy};
/// # async fn run(redis: RedisClient) -> azstore::Result<()> {
/// let counter = redis.json::<u64>("counters/visits")?;
/// let done = update(&counter, &UpdatePolicy::default(), |current| {
///     Decision::Write(current.copied().unwrap_or(0) + 1)
/// })
/// .await?;
/// println!("now {:?} after {} attempt(s)", done.value, done.attempts);
/// # Ok(()) }
/// ```
pub struct RedisJson<T> {
    client: RedisClient,
    key: String,
    _value: PhantomData<fn() -> T>,
}

impl<T> Clone for RedisJson<T> {
    fn clone(&self) -> Self {
        RedisJson {
            client: self.client.clone(),
            key: self.key.clone(),
            _value: PhantomData,
        }
    }
}

impl<T> fmt::Debug for RedisJson<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RedisJson")
            .field("endpoint", &self.client.config().endpoint())
            .field("key", &self.key)
            .finish()
    }
}

impl<T> RedisJson<T> {
    /// The value at `key` (validated here: non-empty, at most 64 KiB).
    ///
    /// ```no_run
    /// # async fn demo(redis: azstore::redis::RedisClient) -> azstore::Result<()> {
    /// use std::collections::BTreeMap;
    /// let prefs = azstore::redis::RedisJson::<BTreeMap<String, String>>::new(redis, "prefs:user:42")?;
    /// # let _ = prefs; Ok(()) }
    /// ```
    pub fn new(client: RedisClient, key: &str) -> Result<RedisJson<T>> {
        validate_key(key)?;
        Ok(RedisJson {
            client,
            key: key.to_string(),
            _value: PhantomData,
        })
    }

    /// The key.
    ///
    /// ```no_run
    /// # fn demo(doc: azstore::redis::RedisJson<u64>) {
    /// println!("{}", doc.key());
    /// # }
    /// ```
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The client.
    ///
    /// ```no_run
    /// # async fn demo(doc: azstore::redis::RedisJson<u64>) -> azstore::Result<()> {
    /// doc.client().ping().await?;
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &RedisClient {
        &self.client
    }
}

fn encode<T: Serialize>(value: &T, etag: &str, wid: Option<&str>) -> Result<Vec<u8>> {
    serde_json::to_vec(&StoredRef { etag, wid, value })
        .map_err(|e| Error::invalid_input(format!("value cannot be serialized to JSON: {e}")))
}

fn decode<T: DeserializeOwned>(key: &str, raw: &[u8]) -> Result<Current<T>> {
    let stored: Stored<T> = serde_json::from_slice(raw).map_err(|e| {
        Error::new(
            ErrorKind::Service,
            format!(
                "Redis key {key} does not hold an azstore JSON value ({{\"etag\",\"wid\",\"value\"}}): {e}"
            ),
        )
    })?;
    if stored.etag.is_empty() {
        return Err(Error::new(
            ErrorKind::Service,
            format!("Redis key {key} holds an empty etag"),
        ));
    }
    Ok(Current {
        value: stored.value,
        etag: ETag::new(stored.etag),
        write_id: stored.wid,
    })
}

fn condition_not_met(key: &str, why: &str) -> Error {
    Error::new(
        ErrorKind::PreconditionFailed,
        format!("Redis key {key}: {why}"),
    )
}

fn not_found(key: &str) -> Error {
    Error::new(
        ErrorKind::NotFound,
        format!("Redis key {key} does not exist"),
    )
}

/// The conditional write, atomic on the server: compares the stored etag and, when it is the
/// expected one, sets or deletes the key, in one round trip.
///
/// `KEYS[1]`: the key. `ARGV[1]`: the expected etag; `ARGV[2]`: `SET` or `DEL`; `ARGV[3]`:
/// the new document (`SET`). Returns 1 when written, 0 when the key is absent, the stored
/// etag when it is another, and -1 when the stored value holds no readable etag. The etag of
/// a document azstore wrote (`{"etag":"…",` first) is read off its start; a document whose
/// fields another writer ordered differently is decoded (`cjson`).
const COMPARE_AND_WRITE: &str = r#"
local v = redis.call('GET', KEYS[1])
if not v then return 0 end
local found = string.match(v, '^{"etag":"([^"\\]*)",')
if not found then
  local ok, doc = pcall(cjson.decode, v)
  if ok and type(doc) == 'table' and type(doc.etag) == 'string' then found = doc.etag end
end
if not found or found == '' then return -1 end
if found ~= ARGV[1] then return found end
if ARGV[2] == 'DEL' then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], ARGV[3], 'KEEPTTL')
end
return 1
"#;

/// What [`COMPARE_AND_WRITE`] does after the comparison.
enum Then {
    Set(Vec<u8>),
    Delete,
}

impl<T> RedisJson<T> {
    /// Sets or deletes the key if its stored etag is still `etag`, atomically, in one
    /// round trip ([`COMPARE_AND_WRITE`]). Never repeated after a lost reply.
    async fn compare_and(&self, what: &str, etag: &ETag, then: Then) -> Result<()> {
        if etag.as_str().is_empty() {
            return Err(Error::invalid_input(format!(
                "Redis key {}: a conditional {what} needs a non-empty etag",
                self.key
            )));
        }
        let key = self.key.clone();
        let (op, body) = match then {
            Then::Set(body) => ("SET", body),
            Then::Delete => ("DEL", Vec::new()),
        };
        let args = [etag.as_str().as_bytes().to_vec(), op.into(), body];
        let reply: ::redis::Value = self
            .client
            .run(what, Idempotent::No, move |mut con| {
                let (key, args) = (key.clone(), args.clone());
                async move {
                    ::redis::cmd("EVAL")
                        .arg(COMPARE_AND_WRITE)
                        .arg(1)
                        .arg(key)
                        .arg(&args[..])
                        .query_async(&mut con)
                        .await
                }
            })
            .await?;
        match reply {
            ::redis::Value::Int(1) => Ok(()),
            ::redis::Value::Int(0) => Err(not_found(&self.key)),
            ::redis::Value::Int(-1) => Err(condition_not_met(
                &self.key,
                &format!(
                    "it holds no azstore JSON value with an etag, not etag {:?}",
                    etag.as_str()
                ),
            )),
            ::redis::Value::BulkString(found) => Err(condition_not_met(
                &self.key,
                &format!(
                    "etag is {:?}, not {:?}",
                    String::from_utf8_lossy(&found),
                    etag.as_str()
                ),
            )),
            other => Err(Error::new(
                ErrorKind::Service,
                format!(
                    "Redis key {}: unexpected reply to the conditional {what}: {}",
                    self.key,
                    reply_kind(&other)
                ),
            )),
        }
    }
}

/// A short name for a reply's kind, for errors (never its content).
fn reply_kind(v: &::redis::Value) -> &'static str {
    match v {
        ::redis::Value::Nil => "nil",
        ::redis::Value::Int(_) => "an integer",
        ::redis::Value::BulkString(_) | ::redis::Value::SimpleString(_) => "a string",
        ::redis::Value::Array(_) => "an array",
        _ => "another kind of reply",
    }
}

impl<T: Serialize> RedisJson<T> {
    /// `SET key body` (with `NX` when `only_if_absent`); whether it was set. Never repeated
    /// after a lost reply.
    async fn set(&self, what: &'static str, body: Vec<u8>, only_if_absent: bool) -> Result<bool> {
        let key = self.key.clone();
        let set: Option<String> = self
            .client
            .run(what, Idempotent::No, move |mut con| {
                let (key, body) = (key.clone(), body.clone());
                async move {
                    let mut cmd = ::redis::cmd("SET");
                    cmd.arg(key).arg(body);
                    if only_if_absent {
                        cmd.arg("NX");
                    }
                    cmd.query_async(&mut con).await
                }
            })
            .await?;
        Ok(set.is_some())
    }

    /// Last writer wins: `SET` without any condition (and without a write id). Returns the
    /// new ETag.
    ///
    /// ```no_run
    /// # async fn demo(counter: azstore::redis::RedisJson<u64>) -> azstore::Result<()> {
    /// let etag = counter.overwrite(&0).await?; // reset, whatever was there
    /// # let _ = etag; Ok(()) }
    /// ```
    pub async fn overwrite(&self, value: &T) -> Result<ETag> {
        let etag = random_hex();
        let body = encode(value, &etag, None)?;
        self.set("SET", body, false).await?;
        Ok(ETag::new(etag))
    }
}

impl<T> Versioned for RedisJson<T>
where
    T: Serialize + DeserializeOwned + Send + Sync,
{
    type Value = T;

    async fn read(&self) -> Result<Option<Current<T>>> {
        let key = self.key.clone();
        let raw: Option<Vec<u8>> = self
            .client
            .run("GET", Idempotent::Yes, move |mut con| {
                let key = key.clone();
                async move { ::redis::cmd("GET").arg(key).query_async(&mut con).await }
            })
            .await?;
        raw.map(|raw| decode(&self.key, &raw)).transpose()
    }

    fn identity(&self) -> String {
        let c = &self.client.inner.config;
        format!("redis://{}:{}/{}/{}", c.host, c.port, c.database, self.key)
    }

    fn stores_write_ids(&self) -> bool {
        true
    }

    async fn replace(&self, value: &T, etag: &ETag, write_id: &str) -> Result<ETag> {
        let new_etag = random_hex();
        let body = encode(value, &new_etag, Some(write_id))?;
        self.compare_and("replace", etag, Then::Set(body)).await?;
        Ok(ETag::new(new_etag))
    }

    async fn create(&self, value: &T, write_id: &str) -> Result<ETag> {
        let new_etag = random_hex();
        let body = encode(value, &new_etag, Some(write_id))?;
        let created = self.set("create", body, true).await?;
        match created {
            true => Ok(ETag::new(new_etag)),
            false => Err(Error::new(
                ErrorKind::AlreadyExists,
                format!("Redis key {} already exists", self.key),
            )),
        }
    }

    async fn delete(&self, etag: &ETag) -> Result<()> {
        self.compare_and("delete", etag, Then::Delete).await
    }

    /// The value's JSON: a read parses the stored document's `value` as written.
    fn snapshot(&self, value: &T) -> Option<Vec<u8>> {
        serde_json::to_vec(value).ok()
    }

    fn restore(&self, snapshot: &[u8]) -> Option<T> {
        serde_json::from_slice(snapshot).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_documents_round_trip_and_junk_is_an_error() {
        let raw = encode(&vec![1u32, 2], "e1", Some("aaaaaaaaaaaaaaaa")).unwrap();
        let cur: Current<Vec<u32>> = decode("k", &raw).unwrap();
        assert_eq!(cur.value, vec![1, 2]);
        assert_eq!(cur.etag.as_str(), "e1");
        assert_eq!(cur.write_id.as_deref(), Some("aaaaaaaaaaaaaaaa"));
        assert!(
            raw.starts_with(br#"{"etag":"e1","#),
            "the script reads the etag off the start"
        );
        let raw = encode(&"x", "e2", None).unwrap();
        assert_eq!(decode::<String>("k", &raw).unwrap().write_id, None);
        assert!(
            raw.starts_with(br#"{"etag":"e2","#),
            "the script reads the etag off the start"
        );
        for junk in [
            &b"not json"[..],
            b"{}",
            b"{\"etag\":\"\",\"value\":1}",
            b"\xff",
        ] {
            let e = decode::<u32>("k", junk).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Service, "{junk:?}");
        }
    }
}
