//! Set File Properties with everything it can change (size, stored HTTP headers, SMB
//! properties), and the SMB properties of directories on create and set.
//!
//! ```no_run
//! # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::{FileAttributes, SetFileProperties, SmbProperties};
//! use azstore::http_headers::HttpHeaders;
//! let change = SetFileProperties::default()
//!     .size(4096) // truncate or zero-extend
//!     .headers(HttpHeaders::default().content_type("text/csv"))
//!     .smb(SmbProperties::default().attributes(FileAttributes::READ_ONLY));
//! file.set_properties_with(&change, None).await?;
//! # Ok(()) }
//! ```

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::directory::DirectoryClient;
use crate::file::file_client::{FileClient, lease_header};
use crate::file::models::FileWrite;
use crate::file::options::CreateDirectoryOptions;
use crate::file::smb_properties::SmbProperties;
use crate::http::Method;
use crate::http_headers::HttpHeaders;
use crate::storage::StorageRequest;

/// What one Set File Properties changes. Everything left `None` / default is not sent;
/// note that when `headers` is given, Azure replaces **all** stored HTTP headers with it
/// (a header left `None` there is cleared).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::{FileAttributes, SetFileProperties, SmbProperties};
/// let change = SetFileProperties::default()
///     .size(0)
///     .smb(SmbProperties::default().attributes(FileAttributes::ARCHIVE));
/// file.set_properties_with(&change, None).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct SetFileProperties {
    /// New size in bytes (`x-ms-content-length`): truncates or zero-extends.
    pub size: Option<u64>,
    /// New stored HTTP headers (all of them).
    pub headers: Option<HttpHeaders>,
    /// SMB properties to change (unset fields are preserved).
    pub smb: SmbProperties,
}

impl SetFileProperties {
    /// Resizes the file.
    ///
    /// ```
    /// let change = azstore::file::SetFileProperties::default().size(0); // truncate
    /// # let _ = change;
    /// ```
    pub fn size(mut self, v: u64) -> Self {
        self.size = Some(v);
        self
    }

    /// Replaces the stored HTTP headers.
    ///
    /// ```
    /// use azstore::http_headers::HttpHeaders;
    /// let change = azstore::file::SetFileProperties::default()
    ///     .headers(HttpHeaders::default().content_type("text/csv"));
    /// # let _ = change;
    /// ```
    pub fn headers(mut self, v: HttpHeaders) -> Self {
        self.headers = Some(v);
        self
    }

    /// Changes SMB properties.
    ///
    /// ```
    /// use azstore::file::{FileAttributes, SetFileProperties, SmbProperties};
    /// let change = SetFileProperties::default().smb(SmbProperties::default().attributes(FileAttributes::READ_ONLY));
    /// # let _ = change;
    /// ```
    pub fn smb(mut self, v: SmbProperties) -> Self {
        self.smb = v;
        self
    }
}

impl FileClient {
    /// Set File Properties: size, stored HTTP headers and SMB properties in one call (see
    /// [`SetFileProperties`]). Last writer wins; a leased file needs the lease id.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::SetFileProperties;
    /// use azstore::http_headers::HttpHeaders;
    /// let change = SetFileProperties::default()
    ///     .size(1024)
    ///     .headers(HttpHeaders::default().content_type("application/octet-stream"));
    /// file.set_properties_with(&change, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_properties_with(
        &self,
        change: &SetFileProperties,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        change.smb.check(false)?;
        let mut req = self
            .request(Method::Put)
            .query("comp", "properties")
            .header_opt("x-ms-content-length", change.size.map(|s| s.to_string()));
        if let Some(h) = &change.headers {
            req = h.apply(req, crate::storage::http_headers::HeaderNames::File);
        }
        let req = lease_header(change.smb.apply(req), lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Set File Properties changing only SMB properties (size and HTTP headers kept).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::{FileAttributes, SmbProperties};
    /// let hidden = SmbProperties::default().attributes(FileAttributes::HIDDEN | FileAttributes::READ_ONLY);
    /// file.set_smb_properties(&hidden, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_smb_properties(
        &self,
        smb: &SmbProperties,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let change = SetFileProperties::default().smb(smb.clone());
        self.set_properties_with(&change, lease).await
    }

    /// Set File Properties changing only the size (`x-ms-content-length`): truncates or
    /// zero-extends; HTTP headers and SMB properties are kept.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// file.resize(10 << 20, None).await?; // 10 MiB, zero-extended
    /// # Ok(()) }
    /// ```
    pub async fn resize(&self, size: u64, lease: Option<&LeaseId>) -> Result<FileWrite> {
        let change = SetFileProperties::default().size(size);
        self.set_properties_with(&change, lease).await
    }
}

impl DirectoryClient {
    /// Create Directory with metadata and SMB properties (unset: Azure's defaults —
    /// attributes `Directory`, times `now`, permission `inherit`).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::{CreateDirectoryOptions, FilePermission, SmbProperties};
    /// let smb = SmbProperties::default().permission(FilePermission::Sddl("O:BAG:SYD:(A;;FA;;;BA)".into()));
    /// dir.create_with(&CreateDirectoryOptions::default().smb(smb)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with(&self, options: &CreateDirectoryOptions) -> Result<FileWrite> {
        if self.path.is_empty() {
            return Err(Error::invalid_input("the root directory always exists"));
        }
        options.smb.check(true)?;
        let req = options
            .smb
            .apply(self.request(Method::Put).metadata(&options.metadata));
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Set Directory Properties: changes SMB properties (unset fields are preserved).
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// use azstore::file::{FileAttributes, SmbProperties};
    /// dir.set_properties(&SmbProperties::default().attributes(FileAttributes::DIRECTORY | FileAttributes::HIDDEN)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_properties(&self, smb: &SmbProperties) -> Result<FileWrite> {
        smb.check(false)?;
        let req = smb.apply(self.request(Method::Put).query("comp", "properties"));
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }
}
