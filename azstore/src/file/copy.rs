//! Copy File (server-side copy of a file or blob into this file, possibly asynchronous) and
//! Abort Copy File.
//!
//! ```no_run
//! # async fn f(src: azstore::file::FileClient, dst: azstore::file::FileClient) -> azstore::Result<()> {
//! use azstore::file::CopyFileOptions;
//! let options = CopyFileOptions::default()
//!     .permission_from_source()
//!     .attributes_from_source()
//!     .ignore_read_only(true);
//! let copy = dst.start_copy(&src.url(), &options).await?;
//! if copy.status == azstore::blob::CopyStatus::Pending {
//!     dst.abort_copy(&copy.id, None).await?;
//! }
//! # Ok(()) }
//! ```

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::conditions::{ETag, LeaseId};
use crate::error::{Error, Result};
use crate::file::file_client::{FileClient, lease_header};
use crate::file::smb_properties::{FilePermission, SmbProperties};
use crate::http::Method;
use crate::status::CopyStatus;
use crate::storage::StorageRequest;

/// Options of [`FileClient::start_copy`]. By default the destination gets Azure's defaults
/// for a new file (permission inherited from its directory, attributes and times new), no
/// metadata of its own (the source's metadata is copied when `metadata` is empty).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use azstore::file::CopyFileOptions;
/// # let source_url = String::new();
/// let exact = CopyFileOptions::default().permission_from_source().attributes_from_source().times_from_source();
/// file.start_copy(&source_url, &exact).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct CopyFileOptions {
    /// Metadata of the destination (empty: the source's metadata is copied).
    pub metadata: BTreeMap<String, String>,
    /// Explicit SMB values for the destination (`x-ms-file-permission-copy-mode: override`
    /// when a permission is given). `preserve` values are refused.
    pub smb: SmbProperties,
    /// Copy the source's security descriptor (`x-ms-file-permission-copy-mode: source`).
    pub permission_from_source: bool,
    /// Copy the source's attributes (`x-ms-file-attributes: source`).
    pub attributes_from_source: bool,
    /// Copy the source's creation time (`x-ms-file-creation-time: source`).
    pub creation_time_from_source: bool,
    /// Copy the source's last-write time (`x-ms-file-last-write-time: source`).
    pub last_write_time_from_source: bool,
    /// Copy the source's change time (`x-ms-file-change-time: source`).
    pub change_time_from_source: bool,
    /// Overwrite a read-only destination (`x-ms-file-copy-ignore-readonly`).
    pub ignore_read_only: bool,
    /// Set the destination's `Archive` attribute (`x-ms-file-copy-set-archive`).
    pub set_archive: bool,
    /// The lease of a leased destination.
    pub lease: Option<LeaseId>,
}

impl CopyFileOptions {
    /// The destination's metadata. Default: empty, and the source's metadata is copied.
    ///
    /// ```
    /// use std::collections::BTreeMap;
    /// let meta = BTreeMap::from([("copied-by".to_string(), "nightly".to_string())]);
    /// let options = azstore::file::CopyFileOptions::default().metadata(meta);
    /// # let _ = options;
    /// ```
    pub fn metadata(mut self, v: BTreeMap<String, String>) -> Self {
        self.metadata = v;
        self
    }

    /// Explicit SMB values for the destination (a permission given here is sent with
    /// `x-ms-file-permission-copy-mode: override`; `preserve` values are refused before
    /// sending). Default: those of a new file (permission inherited from the directory,
    /// attributes and times new).
    ///
    /// ```
    /// use azstore::file::{CopyFileOptions, FileAttributes, SmbProperties};
    /// let options = CopyFileOptions::default()
    ///     .smb(SmbProperties::default().attributes(FileAttributes::READ_ONLY));
    /// # let _ = options;
    /// ```
    pub fn smb(mut self, v: SmbProperties) -> Self {
        self.smb = v;
        self
    }

    /// Copies the source's permission.
    ///
    /// ```
    /// let options = azstore::file::CopyFileOptions::default().permission_from_source();
    /// assert!(options.permission_from_source);
    /// ```
    pub fn permission_from_source(mut self) -> Self {
        self.permission_from_source = true;
        self
    }

    /// Copies the source's attributes.
    ///
    /// ```
    /// let options = azstore::file::CopyFileOptions::default().attributes_from_source();
    /// assert!(options.attributes_from_source);
    /// ```
    pub fn attributes_from_source(mut self) -> Self {
        self.attributes_from_source = true;
        self
    }

    /// Copies the source's creation, last-write and change times.
    ///
    /// ```
    /// // An exact copy: the source's security descriptor, attributes and times.
    /// let options = azstore::file::CopyFileOptions::default()
    ///     .permission_from_source()
    ///     .attributes_from_source()
    ///     .times_from_source();
    /// # let _ = options;
    /// ```
    pub fn times_from_source(mut self) -> Self {
        self.creation_time_from_source = true;
        self.last_write_time_from_source = true;
        self.change_time_from_source = true;
        self
    }

    /// Whether a read-only destination is overwritten (`x-ms-file-copy-ignore-readonly`).
    /// Default false: the copy onto a read-only file fails.
    ///
    /// ```
    /// let options = azstore::file::CopyFileOptions::default().ignore_read_only(true);
    /// # let _ = options;
    /// ```
    pub fn ignore_read_only(mut self, v: bool) -> Self {
        self.ignore_read_only = v;
        self
    }

    /// Whether the destination gets the `Archive` attribute (`x-ms-file-copy-set-archive`),
    /// as Windows marks a file that backup software should pick up. Default false.
    ///
    /// ```
    /// let options = azstore::file::CopyFileOptions::default().set_archive(true);
    /// # let _ = options;
    /// ```
    pub fn set_archive(mut self, v: bool) -> Self {
        self.set_archive = v;
        self
    }

    /// The destination's lease id.
    pub fn lease(mut self, id: &crate::conditions::LeaseId) -> Self {
        self.lease = Some(id.clone());
        self
    }

    fn check(&self) -> Result<()> {
        self.smb.check(true)?;
        let explicit_permission = matches!(
            self.smb.permission,
            Some(FilePermission::Sddl(_) | FilePermission::Key(_))
        );
        // (copied from the source, given explicitly, what): at most one of the two.
        let choices = [
            (
                self.permission_from_source,
                explicit_permission,
                "permission",
            ),
            (
                self.attributes_from_source,
                self.smb.attributes.is_some(),
                "attributes",
            ),
            (
                self.creation_time_from_source,
                self.smb.creation_time.is_some(),
                "creation time",
            ),
            (
                self.last_write_time_from_source,
                self.smb.last_write_time.is_some(),
                "last-write time",
            ),
            (
                self.change_time_from_source,
                self.smb.change_time.is_some(),
                "change time",
            ),
        ];
        match choices
            .iter()
            .find(|(from_source, explicit, _)| *from_source && *explicit)
        {
            Some((_, _, what)) => Err(Error::invalid_input(format!(
                "copy the {what} from the source or give it, not both"
            ))),
            None => Ok(()),
        }
    }
}

/// What Copy File returns.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient, source_url: String) -> azstore::Result<()> {
/// use azstore::file::CopyFileOptions;
/// let copy = file.start_copy(&source_url, &CopyFileOptions::default()).await?;
/// if copy.status == azstore::blob::CopyStatus::Pending {
///     println!("poll get_properties().copy for {}", copy.id);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileCopy {
    /// `x-ms-copy-id`, for [`FileClient::abort_copy`].
    pub id: String,
    /// `success` when the service copied synchronously, else `pending` (poll
    /// [`FileProperties::copy`](crate::file::FileProperties::copy)).
    pub status: CopyStatus,
    /// The destination's ETag.
    pub etag: ETag,
    /// The destination's Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

fn check_source_url(url: &str) -> Result<()> {
    let scheme_ok = url.starts_with("https://") || url.starts_with("http://");
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(Error::invalid_input(
            "a copy source is an http(s) URL of a file or blob (with a SAS when it needs one)",
        ));
    }
    Ok(())
}

impl FileClient {
    /// Copy File: the service copies `source_url` (a file, or a blob, readable with the SAS
    /// in the URL or within the same account) into this file, replacing it. Small copies
    /// complete at once (`success`); others continue in the background (`pending`).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::CopyFileOptions;
    /// # let source_url = String::new();
    /// let copy = file.start_copy(&source_url, &CopyFileOptions::default()).await?;
    /// println!("copy {} is {:?}", copy.id, copy.status);
    /// # Ok(()) }
    /// ```
    pub async fn start_copy(
        &self,
        source_url: &str,
        options: &CopyFileOptions,
    ) -> Result<FileCopy> {
        check_source_url(source_url)?;
        options.check()?;
        crate::names::validate_metadata(&options.metadata)?;
        let mut smb = options.smb.clone();
        let copy_mode = if options.permission_from_source {
            Some("source")
        } else if matches!(
            smb.permission,
            Some(FilePermission::Sddl(_) | FilePermission::Key(_))
        ) {
            Some("override")
        } else {
            // `inherit` is what Copy File does without a copy mode.
            smb.permission = None;
            None
        };
        let source = |yes: bool| yes.then_some("source");
        let req = smb
            .apply(
                self.request(Method::Put)
                    .header("x-ms-copy-source", source_url)
                    .metadata(&options.metadata),
            )
            .header_opt("x-ms-file-permission-copy-mode", copy_mode)
            .header_opt(
                "x-ms-file-attributes",
                source(options.attributes_from_source),
            )
            .header_opt(
                "x-ms-file-creation-time",
                source(options.creation_time_from_source),
            )
            .header_opt(
                "x-ms-file-last-write-time",
                source(options.last_write_time_from_source),
            )
            .header_opt(
                "x-ms-file-change-time",
                source(options.change_time_from_source),
            )
            .header_opt(
                "x-ms-file-copy-ignore-readonly",
                options.ignore_read_only.then_some("true"),
            )
            .header_opt(
                "x-ms-file-copy-set-archive",
                options.set_archive.then_some("true"),
            );
        let req = lease_header(req, options.lease.as_ref());
        let resp = self.pipeline.send(req).await?;
        Ok(FileCopy {
            id: resp.headers.require("x-ms-copy-id")?.to_string(),
            status: CopyStatus::parse(resp.headers.require("x-ms-copy-status")?),
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
        })
    }

    /// Abort Copy File: stops a pending copy, leaving the destination empty with its full
    /// size. A copy that is no longer pending fails with 409 `NoPendingCopyOperation`.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// # let copy_id = String::new();
    /// match file.abort_copy(&copy_id, None).await {
    ///     Err(e) if e.is_conflict() => println!("already finished"),
    ///     other => other?,
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn abort_copy(&self, copy_id: &str, lease: Option<&LeaseId>) -> Result<()> {
        if copy_id.is_empty()
            || !copy_id
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '-')
        {
            return Err(Error::invalid_input(format!(
                "{copy_id:?} is not a copy id (x-ms-copy-id)"
            )));
        }
        let req = self
            .request(Method::Put)
            .query("comp", "copy")
            .query("copyid", copy_id)
            .header("x-ms-copy-action", "abort");
        self.pipeline.send(lease_header(req, lease)).await?;
        Ok(())
    }
}
