//! Azure Cosmos DB with the same concurrency toolkit (cargo feature `cosmos`).
//!
//! The three strategies of Blob, Table and Redis, on Cosmos DB items:
//!
//! * **Optimistic** — [`CosmosItem`] is a [`Versioned`](crate::update::Versioned) resource, so
//!   [`update`](crate::update::update) runs its read-modify-write loop on an item exactly as
//!   on a blob: read (404 → absent), replace with `If-Match: <_etag>` (412 → re-read and
//!   retry), create (409 → the create race, retried as an update), delete with `If-Match`. The
//!   write ids that let `update` recognise its own write after a lost reply live in the item's
//!   [`WRITE_ID_FIELD`] and are stripped from what the closure sees.
//! * **Pessimistic** — [`CosmosLease`] is [`Leasable`](crate::lease::Leasable): a lock item
//!   created by its holder and renewed with `If-Match`; Cosmos DB has no server-side lease, so
//!   expiry is decided by contenders watching the item's `_etag` on their own clock (see
//!   [the takeover rule](CosmosLease#the-takeover-rule)).
//! * **A lock** — [`CosmosLock`] is the lock engine ([`Lock`](crate::lock::Lock)) over
//!   [`CosmosLockTarget`]: the lease plus a fencing token kept in the lock item and advanced
//!   in the same `If-Match` write as the acquire.
//!
//! # Connecting
//! [`CosmosClient`] holds the account endpoint and master key (or, with
//! [`CosmosClient::with_token_provider`], Microsoft Entra ID tokens for [`COSMOS_SCOPE`]);
//! databases, containers and items are cheap handles. The partition key is always explicit: an item is named by its id
//! *and* its partition key value, and a container handle knows its partition key path.
//!
//! ```no_run
//! # async fn demo() -> azstore::Result<()> {
//! use azstore::cosmos::{CosmosClient, CosmosKey, PartitionKey};
//! use azstore::update::{update, Decision, UpdatePolicy};
//!
//! let client = CosmosClient::new(
//!     "https://contoso.documents.azure.com:443/",
//!     CosmosKey::new("<primary key>")?,
//! )?;
//! let container = client.database("sports")?.container("schedules", "/season")?;
//! let schedule = container.item::<serde_json::Value>("2026", PartitionKey::from("2026"))?;
//! update(&schedule, &UpdatePolicy::default(), |current| {
//!     let mut doc = current.cloned().unwrap_or_else(|| serde_json::json!({}));
//!     doc["100m final"] = "Sunday 18:00".into();
//!     Decision::Write(doc)
//! })
//! .await?;
//! # Ok(()) }
//! ```
//!
//! # Errors and time
//! Answers map onto azstore's [`Error`]: 412 is [`ErrorKind::PreconditionFailed`], 409 on a
//! create [`ErrorKind::AlreadyExists`], 404 [`ErrorKind::NotFound`]; a lock item held by
//! someone else is [`ErrorKind::LeaseHeld`], one no longer ours [`ErrorKind::LeaseLost`]. 429 (request rate too large) is retried
//! by the pipeline after `x-ms-retry-after-ms`, within the call's time budget
//! ([`ClientOptions::total_timeout`]); so are 408, 449, 500, 502, 503 and 504 — except that a
//! conditional write whose reply was lost is never repeated: its error says
//! [`RequestSent::Maybe`](crate::RequestSent::Maybe) and `update` re-reads to find out. The
//! key never appears in `Debug`, `Display`, errors or logs.
//!
//! # Why not `azure_data_cosmos`
//! Microsoft's crate brings reqwest 0.13 (a second HTTP stack beside azstore's reqwest 0.12,
//! with its own pool and TLS roots) and discovers endpoints from the account, insisting on
//! `https://` — which a local server started without TLS does not offer. The handful of
//! point operations azstore needs are a few requests over its own pipeline: one pool, one
//! retry policy, one time budget, no added crate.

mod auth;
mod edge;
mod item;
mod lease;
mod lock;

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::account::Endpoint;
use crate::credential::{TokenCache, TokenProvider};
use crate::error::{Error, ErrorKind, Result, found};
use crate::http::{ClientOptions, Intent, Method, Pipeline, Request, Response};

pub(crate) use auth::CosmosAuth;
#[cfg(feature = "identity")]
pub use auth::CosmosEntraTokens;
pub use auth::{COSMOS_SCOPE, CosmosKey};
pub use item::{CosmosItem, WRITE_ID_FIELD};
pub use lease::CosmosLease;
pub use lock::{BULK_STATUS_ITEMS, CosmosLock, CosmosLockTarget, CosmosLocks, HeldCosmosLock};

/// The environment variable [`CosmosClient::from_env`] reads for the endpoint.
pub const COSMOS_ENDPOINT_ENV: &str = "AZSTORE_COSMOS_ENDPOINT";
/// The environment variable [`CosmosClient::from_env`] reads for the master key (base64).
pub const COSMOS_KEY_ENV: &str = "AZSTORE_COSMOS_KEY";

/// The REST API version azstore speaks to Cosmos DB.
pub const COSMOS_API_VERSION: &str = "2018-12-31";

/// The well-known key of the Azure Cosmos DB emulator. Not a secret; local servers that do not
/// check authorization accept it too.
pub const EMULATOR_KEY: &str =
    "C2y6yDjf5/R+ob0N8A7Cgv30VRDJIWEHLM+4QDU5DE2nQ9nDuVTqobD4b8mGGyPMbIZnqyMsEcaGQy67XIw/Jw==";

/// A partition key value: a string, a number or a boolean (sent as the JSON array
/// `x-ms-documentdb-partitionkey: ["value"]`).
///
/// ```
/// use azstore::cosmos::PartitionKey;
/// assert_eq!(PartitionKey::from("2026").header_value(), r#"["2026"]"#);
/// assert_eq!(PartitionKey::from(7).header_value(), "[7]");
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionKey(Value);

impl PartitionKey {
    /// The value as JSON.
    ///
    /// ```
    /// use azstore::cosmos::PartitionKey;
    /// assert_eq!(PartitionKey::from("2026").as_json(), &serde_json::json!("2026"));
    /// ```
    pub fn as_json(&self) -> &Value {
        &self.0
    }

    /// The `x-ms-documentdb-partitionkey` header: a JSON array, non-ASCII characters escaped
    /// (`\uXXXX`) so that the header is plain ASCII.
    ///
    /// ```
    /// use azstore::cosmos::PartitionKey;
    /// assert_eq!(PartitionKey::from("Zürich").header_value(), r#"["Z\u00fcrich"]"#);
    /// ```
    pub fn header_value(&self) -> String {
        let json = Value::Array(vec![self.0.clone()]).to_string();
        let mut out = String::with_capacity(json.len());
        for c in json.chars() {
            if c.is_ascii() {
                out.push(c);
            } else {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
        out
    }
}

impl From<&str> for PartitionKey {
    fn from(s: &str) -> Self {
        PartitionKey(Value::String(s.to_string()))
    }
}

impl From<String> for PartitionKey {
    fn from(s: String) -> Self {
        PartitionKey(Value::String(s))
    }
}

impl From<i64> for PartitionKey {
    fn from(n: i64) -> Self {
        PartitionKey(Value::from(n))
    }
}

impl From<bool> for PartitionKey {
    fn from(b: bool) -> Self {
        PartitionKey(Value::Bool(b))
    }
}

/// Checks a database, container or item id: 1–255 characters, none of `/ \ ? #`, no
/// control characters, no trailing space (what Cosmos DB refuses or mangles), not `.` or `..`
/// (a URL would resolve it to the resource above).
pub(crate) fn validate_id(what: &str, id: &str) -> Result<()> {
    if id.is_empty() {
        return Err(Error::invalid_input(format!(
            "a Cosmos DB {what} id must not be empty"
        )));
    }
    if id.chars().count() > 255 {
        return Err(Error::invalid_input(format!(
            "a Cosmos DB {what} id is at most 255 characters"
        )));
    }
    if id
        .chars()
        .any(|c| matches!(c, '/' | '\\' | '?' | '#') || c.is_control())
    {
        return Err(Error::invalid_input(format!(
            "a Cosmos DB {what} id must not contain '/', '\\', '?', '#' or control characters: {id:?}"
        )));
    }
    if id == "." || id == ".." {
        return Err(Error::invalid_input(format!(
            "a Cosmos DB {what} id must not be `.` or `..`: in a URL it would name another \
             resource (the collection or database above it)"
        )));
    }
    if id.ends_with(' ') {
        return Err(Error::invalid_input(format!(
            "a Cosmos DB {what} id must not end with a space: {id:?}"
        )));
    }
    Ok(())
}

struct Inner {
    pipeline: Pipeline,
    endpoint: Endpoint,
}

/// A Cosmos DB account: its endpoint and master key. Cheap to clone (one `Arc`); clones share
/// the connection pool. Nothing is sent until the first operation.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::cosmos::{CosmosClient, CosmosKey};
/// let client = CosmosClient::new("https://contoso.documents.azure.com:443/", CosmosKey::new("<key>")?)?;
/// // Or from AZSTORE_COSMOS_ENDPOINT and AZSTORE_COSMOS_KEY:
/// let local = CosmosClient::from_env()?;
/// # let _ = (client, local); Ok(()) }
/// ```
#[derive(Clone)]
pub struct CosmosClient {
    inner: Arc<Inner>,
}

impl fmt::Debug for CosmosClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CosmosClient")
            .field("endpoint", &self.inner.endpoint.to_string())
            .field("key", &"<redacted>")
            .finish()
    }
}

impl CosmosClient {
    /// A client for the account at `endpoint` (`https://<account>.documents.azure.com:443/`,
    /// or a local server's `http://127.0.0.1:PORT`) with default [`ClientOptions`].
    ///
    /// ```
    /// use azstore::cosmos::{CosmosClient, CosmosKey, EMULATOR_KEY};
    /// // The local emulator; nothing is sent until the first operation.
    /// let client = CosmosClient::new("http://127.0.0.1:8081", CosmosKey::new(EMULATOR_KEY)?)?;
    /// assert_eq!(client.endpoint().url(), "http://127.0.0.1:8081");
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn new(endpoint: &str, key: CosmosKey) -> Result<CosmosClient> {
        CosmosClient::with_options(endpoint, key, ClientOptions::default())
    }

    /// A client with custom options (timeouts, retry policy, transport).
    ///
    /// ```
    /// use std::time::Duration;
    /// use azstore::cosmos::{CosmosClient, CosmosKey, EMULATOR_KEY};
    /// use azstore::http::ClientOptions;
    /// let options = ClientOptions::default().total_timeout(Duration::from_secs(5));
    /// let client = CosmosClient::with_options("http://127.0.0.1:8081", CosmosKey::new(EMULATOR_KEY)?, options)?;
    /// # let _ = client;
    /// # Ok::<(), azstore::Error>(())
    /// ```
    pub fn with_options(
        endpoint: &str,
        key: CosmosKey,
        options: ClientOptions,
    ) -> Result<CosmosClient> {
        CosmosClient::build(endpoint, CosmosAuth::Key(key), options)
    }

    /// A client authorized with Microsoft Entra ID tokens (`type=aad`) from `provider`, put
    /// behind a [`TokenCache`]. The tokens must be for [`COSMOS_SCOPE`] (with the `identity`
    /// feature, `CosmosEntraTokens` asks an `azure_identity` credential for them), and the
    /// identity needs a Cosmos DB data-plane role. Tokens travel only over `https://`, or to a
    /// loopback server when [`TransportOptions::allow_bearer_over_http_to_loopback`] allows it.
    ///
    /// ```no_run
    /// # fn demo(provider: azstore::credential::StaticToken) -> azstore::Result<()> {
    /// use azstore::cosmos::CosmosClient;
    /// use azstore::http::ClientOptions;
    /// let client = CosmosClient::with_token_provider(
    ///     "https://contoso.documents.azure.com:443/",
    ///     provider,
    ///     ClientOptions::default(),
    /// )?;
    /// # let _ = client; Ok(()) }
    /// ```
    ///
    /// [`TransportOptions::allow_bearer_over_http_to_loopback`]: crate::http::TransportOptions::allow_bearer_over_http_to_loopback
    pub fn with_token_provider(
        endpoint: &str,
        provider: impl TokenProvider + 'static,
        options: ClientOptions,
    ) -> Result<CosmosClient> {
        let parsed = Endpoint::parse(endpoint)?;
        if !parsed.origin().starts_with("https://") {
            let url = reqwest::Url::parse(parsed.origin()).map_err(|_| {
                Error::invalid_input(format!("endpoint {parsed} is not a valid URL"))
            })?;
            let host = url.host_str().unwrap_or_default();
            let loopback = crate::http::transport::is_loopback_host(host);
            if !(loopback && options.transport.bearer_over_http_to_loopback_allowed()) {
                return Err(Error::invalid_input(format!(
                    "refusing to send Entra ID tokens over plain HTTP to {host}: use an https:// endpoint"
                )));
            }
        }
        let provider: Arc<dyn TokenProvider> = Arc::new(TokenCache::new(provider));
        CosmosClient::build(endpoint, CosmosAuth::Token(provider), options)
    }

    fn build(endpoint: &str, auth: CosmosAuth, options: ClientOptions) -> Result<CosmosClient> {
        let endpoint = Endpoint::parse(endpoint)?;
        if !endpoint.path_prefix().is_empty() {
            return Err(Error::invalid_input(
                "a Cosmos DB endpoint has no path: https://<account>.documents.azure.com:443/",
            ));
        }
        let edge = Arc::new(edge::CosmosEdge(auth));
        let pipeline = Pipeline::with_edge(endpoint.clone(), edge, options)?;
        Ok(CosmosClient {
            inner: Arc::new(Inner { pipeline, endpoint }),
        })
    }

    /// A client for `AZSTORE_COSMOS_ENDPOINT` ([`COSMOS_ENDPOINT_ENV`]) with the key in
    /// `AZSTORE_COSMOS_KEY` ([`COSMOS_KEY_ENV`]).
    ///
    /// ```no_run
    /// # fn demo() -> azstore::Result<()> {
    /// // AZSTORE_COSMOS_ENDPOINT=https://contoso.documents.azure.com:443/ AZSTORE_COSMOS_KEY=... my-app
    /// let client = azstore::cosmos::CosmosClient::from_env()?;
    /// # let _ = client; Ok(()) }
    /// ```
    pub fn from_env() -> Result<CosmosClient> {
        let endpoint = std::env::var(COSMOS_ENDPOINT_ENV).map_err(|_| {
            Error::invalid_input(format!(
                "{COSMOS_ENDPOINT_ENV} is not set (a Cosmos DB endpoint URL)"
            ))
        })?;
        let key = std::env::var(COSMOS_KEY_ENV).map_err(|_| {
            Error::invalid_input(format!("{COSMOS_KEY_ENV} is not set (a Cosmos DB key)"))
        })?;
        CosmosClient::new(&endpoint, CosmosKey::new(&key)?)
    }

    /// The endpoint.
    ///
    /// ```no_run
    /// # fn demo(client: azstore::cosmos::CosmosClient) -> azstore::Result<()> {
    /// println!("talking to {}", client.endpoint().url());
    /// # Ok(()) }
    /// ```
    pub fn endpoint(&self) -> &Endpoint {
        &self.inner.endpoint
    }

    /// A database (validated here; nothing is sent).
    ///
    /// ```no_run
    /// # fn demo(client: azstore::cosmos::CosmosClient) -> azstore::Result<()> {
    /// let db = client.database("app")?;
    /// # let _ = db;
    /// # Ok(()) }
    /// ```
    pub fn database(&self, id: &str) -> Result<CosmosDatabase> {
        validate_id("database", id)?;
        Ok(CosmosDatabase {
            client: self.clone(),
            id: id.to_string(),
        })
    }

    /// Sends a Cosmos request, reading at most Cosmos DB's largest answer.
    pub(crate) async fn send(&self, req: Request) -> Result<Response> {
        self.inner
            .pipeline
            .send(req.response_limit(crate::http::request::ResponseLimit::COSMOS))
            .await
    }
}

/// A database of a [`CosmosClient`].
///
/// ```no_run
/// # async fn demo(client: azstore::cosmos::CosmosClient) -> azstore::Result<()> {
/// let db = client.database("app")?;
/// db.create_if_not_exists().await?;
/// let orders = db.container("orders", "/customerId")?;
/// orders.create_if_not_exists().await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct CosmosDatabase {
    client: CosmosClient,
    id: String,
}

impl CosmosDatabase {
    /// The id.
    ///
    /// ```no_run
    /// # fn demo(db: azstore::cosmos::CosmosDatabase) -> azstore::Result<()> {
    /// println!("database {}", db.id());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        &self.id
    }

    /// Creates the database; `Ok(false)` when it exists already.
    ///
    /// ```no_run
    /// # async fn demo(db: azstore::cosmos::CosmosDatabase) -> azstore::Result<()> {
    /// if db.create_if_not_exists().await? {
    ///     println!("created {}", db.id());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        let body = serde_json::json!({ "id": self.id }).to_string();
        let req = Request::new(Method::Post, "dbs")
            .intent(Intent::IdempotentWrite)
            .body(body, "application/json");
        created(self.client.send(req).await)
    }

    /// Deletes the database and everything in it; a database that does not exist is an error
    /// ([`ErrorKind::NotFound`]).
    ///
    /// ```no_run
    /// # async fn demo(db: azstore::cosmos::CosmosDatabase) -> azstore::Result<()> {
    /// db.delete().await?; // every container and item in it too
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<()> {
        let req = Request::new(Method::Delete, &format!("dbs/{}", self.id));
        self.client.send(req).await.map(drop)
    }

    /// Deletes the database and everything in it; `Ok(false)` when it did not exist.
    ///
    /// ```no_run
    /// # async fn demo(db: azstore::cosmos::CosmosDatabase) -> azstore::Result<()> {
    /// if !db.delete_if_exists().await? {
    ///     println!("{} did not exist", db.id());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        found(self.delete().await)
    }

    /// A container whose partition key path is `partition_key_path` (e.g. `/season`; one
    /// level or nested, `/a/b`). Validated here; nothing is sent.
    ///
    /// ```no_run
    /// # async fn demo(db: azstore::cosmos::CosmosDatabase) -> azstore::Result<()> {
    /// let schedules = db.container("schedules", "/season")?;
    /// schedules.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub fn container(&self, id: &str, partition_key_path: &str) -> Result<CosmosContainer> {
        validate_id("container", id)?;
        let path = parse_pk_path(partition_key_path)?;
        Ok(CosmosContainer {
            inner: Arc::new(ContainerInner {
                client: self.client.clone(),
                database: self.id.clone(),
                id: id.to_string(),
                pk_path: partition_key_path.to_string(),
                pk_segments: path,
            }),
        })
    }
}

fn parse_pk_path(path: &str) -> Result<Vec<String>> {
    let bad = || {
        Error::invalid_input(format!(
            "a partition key path is /name or /a/b (got {path:?})"
        ))
    };
    let rest = path.strip_prefix('/').ok_or_else(bad)?;
    let segments: Vec<String> = rest.split('/').map(str::to_string).collect();
    if segments.iter().any(|s| {
        s.is_empty() || s.contains(['"', '\\', '[', ']', '*']) || s.chars().any(char::is_control)
    }) {
        return Err(bad());
    }
    Ok(segments)
}

fn created(result: Result<Response>) -> Result<bool> {
    match result {
        Ok(_) => Ok(true),
        Err(e) if e.is_conflict() => Ok(false),
        Err(e) => Err(e),
    }
}

pub(crate) struct ContainerInner {
    client: CosmosClient,
    database: String,
    id: String,
    pk_path: String,
    pk_segments: Vec<String>,
}

/// A container (collection) of a [`CosmosDatabase`], with its partition key path. Cheap to
/// clone.
///
/// ```no_run
/// # async fn demo(client: azstore::cosmos::CosmosClient) -> azstore::Result<()> {
/// use azstore::cosmos::PartitionKey;
/// let db = client.database("app")?;
/// db.create_if_not_exists().await?;
/// let locks = db.container("locks", "/id")?;
/// locks.create_if_not_exists().await?;
/// let lock = locks.lock("nightly-report", PartitionKey::from("nightly-report"))?;
/// # let _ = lock; Ok(()) }
/// ```
#[derive(Clone)]
pub struct CosmosContainer {
    inner: Arc<ContainerInner>,
}

impl fmt::Debug for CosmosContainer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CosmosContainer")
            .field("endpoint", &self.inner.client.endpoint().to_string())
            .field("database", &self.inner.database)
            .field("id", &self.inner.id)
            .field("partition_key_path", &self.inner.pk_path)
            .finish()
    }
}

impl CosmosContainer {
    /// The container id.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// println!("{}/{} partitioned by {}", container.database_id(), container.id(), container.partition_key_path());
    /// # Ok(()) }
    /// ```
    pub fn id(&self) -> &str {
        &self.inner.id
    }

    /// The database id.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// println!("in database {}", container.database_id());
    /// # Ok(()) }
    /// ```
    pub fn database_id(&self) -> &str {
        &self.inner.database
    }

    /// The partition key path.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// assert!(container.partition_key_path().starts_with('/'));
    /// # Ok(()) }
    /// ```
    pub fn partition_key_path(&self) -> &str {
        &self.inner.pk_path
    }

    /// The client.
    ///
    /// ```no_run
    /// # fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// let other = container.client().database("archive")?;
    /// # let _ = other;
    /// # Ok(()) }
    /// ```
    pub fn client(&self) -> &CosmosClient {
        &self.inner.client
    }

    /// Creates the container with its partition key path and time to live switched on
    /// without a default (`defaultTtl: -1`: items expire only when they carry a `ttl`, as
    /// lock items do); `Ok(false)` when it exists already (its settings are left as they are).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// container.create_if_not_exists().await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_if_not_exists(&self) -> Result<bool> {
        let body = serde_json::json!({
            "id": self.inner.id,
            "partitionKey": { "paths": [self.inner.pk_path], "kind": "Hash", "version": 2 },
            "defaultTtl": -1,
        })
        .to_string();
        let req = Request::new(Method::Post, &format!("dbs/{}/colls", self.inner.database))
            .intent(Intent::IdempotentWrite)
            .body(body, "application/json");
        created(self.inner.client.send(req).await)
    }

    /// Deletes the container and its items; a container that does not exist is an error
    /// ([`ErrorKind::NotFound`]).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// container.delete().await?;
    /// # Ok(()) }
    /// ```
    pub async fn delete(&self) -> Result<()> {
        let req = Request::new(
            Method::Delete,
            &format!("dbs/{}/colls/{}", self.inner.database, self.inner.id),
        );
        self.inner.client.send(req).await.map(drop)
    }

    /// Deletes the container and its items; `Ok(false)` when it did not exist.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// if !container.delete_if_exists().await? {
    ///     println!("{} did not exist", container.id());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn delete_if_exists(&self) -> Result<bool> {
        found(self.delete().await)
    }

    /// The item `id` in partition `partition_key`, holding a `T` (validated here; nothing is
    /// sent).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use azstore::cosmos::PartitionKey;
    /// use azstore::update::{Decision, UpdatePolicy, update};
    /// let counter = container.item::<u64>("visits", PartitionKey::from("stats"))?;
    /// update(&counter, &UpdatePolicy::default(), |n| Decision::Write(n.copied().unwrap_or(0) + 1)).await?;
    /// # Ok(()) }
    /// ```
    pub fn item<T>(
        &self,
        id: &str,
        partition_key: impl Into<PartitionKey>,
    ) -> Result<CosmosItem<T>> {
        CosmosItem::new(self.clone(), id, partition_key.into())
    }

    /// A lease on the lock item `id` (see [`CosmosLease`]).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use azstore::cosmos::PartitionKey;
    /// use azstore::lease::{LeaseDuration, LeaseGuard};
    /// let lease = container.lease("leader", PartitionKey::from("leader"))?;
    /// let guard = LeaseGuard::acquire(lease, LeaseDuration::seconds(15)?).await?;
    /// guard.release().await?;
    /// # Ok(()) }
    /// ```
    pub fn lease(&self, id: &str, partition_key: impl Into<PartitionKey>) -> Result<CosmosLease> {
        CosmosLease::new(self.clone(), id, partition_key.into())
    }

    /// A lock on the lock item `id`, with default [`LockOptions`](crate::lock::LockOptions).
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::cosmos::CosmosContainer) -> azstore::Result<()> {
    /// use std::time::Duration;
    /// use azstore::cosmos::PartitionKey;
    /// let lock = container.lock("nightly-report", PartitionKey::from("nightly-report"))?;
    /// if let Some(held) = lock.acquire_within(Duration::from_secs(30)).await? {
    ///     println!("token {}", held.fencing_token());
    ///     held.release().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn lock(&self, id: &str, partition_key: impl Into<PartitionKey>) -> Result<CosmosLock> {
        CosmosLock::new(self.clone(), id, partition_key)
    }

    fn docs_path(&self) -> String {
        format!("dbs/{}/colls/{}/docs", self.inner.database, self.inner.id)
    }

    /// One page of a SQL query over every partition of the container (a simple query: filters
    /// and projections only, which the gateway runs across partitions itself): the items and
    /// the continuation of the next page, `None` when this was the last.
    pub(crate) async fn query_page(
        &self,
        query: &str,
        parameters: Value,
        max_items: u32,
        continuation: Option<&str>,
    ) -> Result<(Vec<serde_json::Map<String, Value>>, Option<String>)> {
        let body = serde_json::json!({ "query": query, "parameters": parameters }).to_string();
        let mut req = Request::new(Method::Post, &self.docs_path())
            .intent(Intent::Read)
            .header("x-ms-documentdb-isquery", "True")
            .header("x-ms-documentdb-query-enablecrosspartition", "True")
            .header("x-ms-max-item-count", max_items.to_string())
            .body(body, "application/query+json");
        if let Some(c) = continuation {
            req = req.header("x-ms-continuation", c.to_string());
        }
        let what = "a query";
        let resp =
            self.inner.client.send(req).await.map_err(|e| {
                cosmos_error(e, false).context(format!("querying {}", self.inner.id))
            })?;
        let next = resp
            .headers
            .get("x-ms-continuation")
            .filter(|c| !c.trim().is_empty())
            .map(str::to_string);
        let Value::Object(mut reply) = json_body(&resp, what)? else {
            return Err(Error::decode(
                "Cosmos DB answered a query with JSON that is not an object",
            ));
        };
        let Some(Value::Array(docs)) = reply.remove("Documents") else {
            return Err(Error::decode(
                "Cosmos DB answered a query without a Documents array",
            ));
        };
        let items = docs
            .into_iter()
            .map(|d| match d {
                Value::Object(m) => Ok(m),
                _ => Err(Error::decode(
                    "Cosmos DB answered a query with an item that is not an object",
                )),
            })
            .collect::<Result<Vec<_>>>()?;
        Ok((items, next))
    }

    /// The partition key value stored in `doc` (at the container's partition key path).
    pub(crate) fn partition_of<'a>(
        &self,
        doc: &'a serde_json::Map<String, Value>,
    ) -> Option<&'a Value> {
        let (last, parents) = self.inner.pk_segments.split_last()?;
        let mut at = doc;
        for seg in parents {
            at = at.get(seg)?.as_object()?;
        }
        at.get(last)
    }

    /// Puts `id` and the partition key value into a document body (an object), refusing a
    /// body that already holds other values there.
    pub(crate) fn stamp(&self, doc: &mut Value, id: &str, pk: &PartitionKey) -> Result<()> {
        let Value::Object(map) = doc else {
            return Err(Error::invalid_input(
                "a Cosmos DB item must serialize to a JSON object",
            ));
        };
        match map.get("id") {
            Some(Value::String(s)) if s == id => {}
            None => {
                map.insert("id".into(), Value::String(id.to_string()));
            }
            Some(other) => {
                return Err(Error::invalid_input(format!(
                    "the value's \"id\" field ({other}) is not the item's id {id:?}"
                )));
            }
        }
        let mut at = &mut *map;
        let (last, parents) = self
            .inner
            .pk_segments
            .split_last()
            .expect("a partition key path has a segment");
        for seg in parents {
            let next = at
                .entry(seg.clone())
                .or_insert_with(|| Value::Object(Default::default()));
            at = match next {
                Value::Object(m) => m,
                _ => {
                    return Err(Error::invalid_input(format!(
                        "the value's field {seg:?} must be an object to hold the partition key {}",
                        self.inner.pk_path
                    )));
                }
            };
        }
        match at.get(last) {
            None => {
                at.insert(last.clone(), pk.0.clone());
            }
            Some(v) if *v == pk.0 => {}
            Some(other) => {
                return Err(Error::invalid_input(format!(
                    "the value's partition key {} is {other}, not the item's {}",
                    self.inner.pk_path, pk.0
                )));
            }
        }
        Ok(())
    }
}

/// A Cosmos DB refusal in the toolkit's words: a 409 on a create is
/// [`ErrorKind::AlreadyExists`] (the pipeline's kind, from the status, says the rest: 412
/// `PreconditionFailed`, 404 `NotFound`).
pub(crate) fn cosmos_error(e: Error, create: bool) -> Error {
    if create && e.status() == Some(409) {
        e.with_kind(ErrorKind::AlreadyExists)
    } else {
        e
    }
}

/// A response whose body must be JSON: malformed bodies are a `Service` error, never a panic.
pub(crate) fn json_body(resp: &Response, what: &str) -> Result<Value> {
    serde_json::from_slice(&resp.body).map_err(|e| {
        Error::new(
            ErrorKind::Service,
            format!("Cosmos DB answered {what} with a body that is not JSON: {e}"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_and_paths_are_checked_before_sending() {
        assert!(validate_id("item", "").is_err());
        assert!(validate_id("item", "a/b").is_err());
        assert!(validate_id("item", "a#").is_err());
        assert!(validate_id("item", "a\n").is_err());
        assert!(validate_id("item", "x ").is_err());
        assert!(validate_id("item", &"x".repeat(256)).is_err());
        assert!(validate_id("item", "schedule 2026 ü").is_ok());
        assert!(parse_pk_path("pk").is_err());
        assert!(parse_pk_path("/").is_err());
        assert!(parse_pk_path("/a//b").is_err());
        assert_eq!(parse_pk_path("/a/b").unwrap(), vec!["a", "b"]);
        assert!(
            CosmosClient::new(
                "http://127.0.0.1:1/x",
                CosmosKey::new(EMULATOR_KEY).unwrap()
            )
            .is_err()
        );
        assert!(CosmosClient::new("ftp://h", CosmosKey::new(EMULATOR_KEY).unwrap()).is_err());
    }

    #[test]
    fn partition_key_headers_are_ascii() {
        assert_eq!(PartitionKey::from("ü").header_value(), r#"["\u00fc"]"#);
        assert_eq!(
            PartitionKey::from("😀").header_value(),
            r#"["\ud83d\ude00"]"#
        );
        assert_eq!(PartitionKey::from(true).header_value(), "[true]");
        let back: Vec<String> =
            serde_json::from_str(&PartitionKey::from("😀").header_value()).unwrap();
        assert_eq!(back, vec!["😀".to_string()]);
    }

    #[test]
    fn stamping_ids_and_partition_keys() {
        let c = CosmosClient::new("http://127.0.0.1:1", CosmosKey::new(EMULATOR_KEY).unwrap())
            .unwrap()
            .database("d")
            .unwrap()
            .container("c", "/meta/season")
            .unwrap();
        let pk = PartitionKey::from("2026");
        let mut doc = serde_json::json!({"a": 1});
        c.stamp(&mut doc, "x", &pk).unwrap();
        assert_eq!(
            doc,
            serde_json::json!({"a": 1, "id": "x", "meta": {"season": "2026"}})
        );
        c.stamp(&mut doc, "x", &pk).unwrap();
        assert!(c.stamp(&mut doc, "y", &pk).is_err());
        assert!(c.stamp(&mut doc, "x", &PartitionKey::from("2027")).is_err());
        assert!(c.stamp(&mut serde_json::json!([1]), "x", &pk).is_err());
        assert!(
            c.stamp(&mut serde_json::json!({"meta": 3}), "x", &pk)
                .is_err()
        );
    }

    #[test]
    fn keys_never_show() {
        let c =
            CosmosClient::new("http://127.0.0.1:1", CosmosKey::new(EMULATOR_KEY).unwrap()).unwrap();
        let shown = format!("{c:?}");
        assert!(
            !shown.contains("C2y6") && shown.contains("redacted"),
            "{shown}"
        );
        let e = CosmosKey::new("c2VjcmV0!!").unwrap_err();
        assert!(!format!("{e} {e:?}").contains("c2VjcmV0"));
    }
}
