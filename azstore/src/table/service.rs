//! The Table service client: list tables, service properties and stats.

use serde_json::Value;

use super::client::{ACCEPT, Continuation, TableClient, json_values};
use super::names::validate_table_name;
use super::query::Query;
use crate::error::{Error, Result};
use crate::http::{Method, Pipeline, Request};
use crate::paging::{Page, ResultStream, every_page};

/// A table's entry in the table list.
///
/// ```no_run
/// # async fn demo(service: azstore::table::TableServiceClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::table::Query;
/// let names: Vec<String> = service
///     .list_tables(Query::all())
///     .map_ok(|t| t.name)
///     .try_collect()
///     .await?;
/// # let _ = names; Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TableItem {
    /// The table name.
    pub name: String,
}

/// The Table service of one account. Cheap to clone.
///
/// ```no_run
/// # fn demo() -> azstore::Result<()> {
/// use azstore::table::TableServiceClient;
/// let account = azstore::StorageAccount::from_env()?; // AZURE_STORAGE_CONNECTION_STRING
/// let service = TableServiceClient::new(&account)?;
/// let customers = service.table("customers")?;
/// # let _ = customers; Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct TableServiceClient {
    pipeline: Pipeline,
}

service_client!(TableServiceClient, Table =>
    /// A client for the table `name` (validated, no request sent).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// # let service = azstore::table::TableServiceClient::new(&azstore::StorageAccount::development())?;
    /// let customers = service.table("customers")?;
    /// assert!(service.table("1bad").is_err()); // table names start with a letter
    /// # let _ = customers;
    /// # Ok(()) }
    /// ```
    table: TableClient, validate_table_name);

impl TableServiceClient {
    /// Query Tables, one page. `query.filter` may use `TableName`; `$select` is ignored.
    ///
    /// ```no_run
    /// # async fn demo(service: azstore::table::TableServiceClient) -> azstore::Result<()> {
    /// use azstore::table::Query;
    /// let page = service.list_tables_page(&Query::all().top(10), None).await?;
    /// for table in &page.items {
    ///     println!("{}", table.name);
    /// }
    /// if page.next_marker.is_some() {
    ///     println!("... and more");
    /// }
    /// # Ok(()) }
    /// ```
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
    ///
    /// ```no_run
    /// # async fn demo(service: azstore::table::TableServiceClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use azstore::table::{Filter, Query};
    /// // Tables whose names start with "logs2026": TableName >= 'logs2026' and < 'logs2027'.
    /// let filter = Filter::ge("TableName", "logs2026")?.and(Filter::lt("TableName", "logs2027")?);
    /// let mut tables = service.list_tables(Query::filter(filter));
    /// while let Some(table) = tables.try_next().await? {
    ///     println!("{}", table.name);
    /// }
    /// # Ok(()) }
    /// ```
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

crate::service_properties::service_properties!(
    TableServiceClient,
    crate::service_properties::Sections {
        service: "Table",
        logging: true,
        blob_only: false
    }
);
crate::service_properties::service_stats!(
    TableServiceClient,
    "table",
    "azstore::table::TableServiceClient"
);
