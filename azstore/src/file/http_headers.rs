//! The standard HTTP headers stored with a file ([`HttpHeaders`]), on Create File and Set File
//! Properties.
//!
//! ```no_run
//! # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::http_headers::HttpHeaders;
//! let h = HttpHeaders::default()
//!     .content_type("text/csv")
//!     .cache_control("no-cache")
//!     .content_disposition("attachment; filename=report.csv");
//! file.set_http_headers(&h, None).await?; // replaces all of them
//! # Ok(()) }
//! ```

use crate::conditions::LeaseId;
use crate::error::Result;
use crate::file::file_client::FileClient;
use crate::file::models::FileWrite;
use crate::file::set_properties::SetFileProperties;
use crate::http_headers::HttpHeaders;

impl FileClient {
    /// Set File Properties: replaces the file's HTTP headers (all of them; see
    /// [`HttpHeaders`]). Last writer wins; a leased file needs the lease id.
    pub async fn set_http_headers(
        &self,
        headers: &HttpHeaders,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let change = SetFileProperties::default().headers(headers.clone());
        self.set_properties_with(&change, lease).await
    }
}
