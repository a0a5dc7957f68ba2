//! [`ShareServiceClient`]: the File service of one account.

use crate::file::names::validate_share_name;
use crate::file::share::ShareClient;
use crate::http::Pipeline;

/// The File service of one account. Cheap to clone.
///
/// ```no_run
/// # async fn demo() -> azstore::Result<()> {
/// use azstore::StorageAccount;
/// use azstore::file::ShareServiceClient;
/// let account = StorageAccount::from_env()?; // needs a FileEndpoint
/// let share = ShareServiceClient::new(&account)?.share("reports")?;
/// share.create_if_not_exists().await?;
/// let file = share.file("2026/q3.csv")?;
/// # Ok(()) }
/// ```
///
/// [`ShareServiceClient::new`] fails with `InvalidInput` when the account has no File endpoint
/// (e.g. `UseDevelopmentStorage=true`: Azurite has no File service).
#[derive(Debug, Clone)]
pub struct ShareServiceClient {
    pipeline: Pipeline,
}

service_client!(ShareServiceClient, File =>
    /// A client for the share `name` (validated, no request sent).
    ///
    /// ```
    /// # fn main() -> azstore::Result<()> {
    /// # let service = azstore::file::ShareServiceClient::new(&azstore::StorageAccount::development())?;
    /// let share = service.share("team-docs")?;
    /// assert!(service.share("Not_Valid").is_err()); // refused before sending
    /// # let _ = share;
    /// # Ok(()) }
    /// ```
    share: ShareClient, validate_share_name);

crate::service_properties::service_properties!(
    ShareServiceClient,
    crate::service_properties::Sections {
        service: "File",
        logging: false,
        blob_only: false
    }
);
