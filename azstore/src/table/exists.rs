//! `TableClient::exists`: Query Tables for one table by name.

use super::client::{ACCEPT, TableClient, raw_request};
use crate::error::Result;
use crate::http::Method;

impl TableClient {
    /// Whether the table exists (`GET Tables('name')`: 200 yes, 404 no).
    ///
    /// ```no_run
    /// # async fn f(table: azstore::table::TableClient) -> azstore::Result<()> {
    /// if !table.exists().await? {
    ///     table.create_if_not_exists().await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        let path = format!("Tables('{}')", self.name());
        let result = self
            .pipeline
            .send(raw_request(Method::Get, path).header("accept", ACCEPT))
            .await;
        crate::error::found(result)
    }
}
