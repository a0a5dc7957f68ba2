//! [`ShareServiceClient`]: the File service of one account.

use crate::account::{Service, StorageAccount};
use crate::error::Result;
use crate::file::names::validate_share_name;
use crate::file::share::ShareClient;
use crate::http::{ClientOptions, Pipeline};

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
#[derive(Debug, Clone)]
pub struct ShareServiceClient {
    pipeline: Pipeline,
}

impl ShareServiceClient {
    /// A client with default options. Fails with `InvalidInput` when the account has no File
    /// endpoint (e.g. `UseDevelopmentStorage=true`: Azurite has no File service).
    pub fn new(account: &StorageAccount) -> Result<ShareServiceClient> {
        ShareServiceClient::with_options(account, ClientOptions::default())
    }

    /// A client with custom retry and timeout options.
    pub fn with_options(
        account: &StorageAccount,
        options: ClientOptions,
    ) -> Result<ShareServiceClient> {
        Ok(ShareServiceClient {
            pipeline: Pipeline::new(account, Service::File, options)?,
        })
    }

    /// A client for the share `name` (validated, no request sent).
    pub fn share(&self, name: &str) -> Result<ShareClient> {
        validate_share_name(name)?;
        Ok(ShareClient {
            pipeline: self.pipeline.clone(),
            name: name.into(),
        })
    }

    /// The underlying pipeline (for operations azstore does not wrap).
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }
}
