//! Listing containers and blobs: one page at a time, or every item as an async stream that
//! follows `NextMarker` until the listing is complete.

use std::collections::BTreeMap;

use time::OffsetDateTime;

use crate::blob::client::{BlobServiceClient, ContainerClient};
use crate::blob::models::{BlobType, LeaseState, LeaseStatus};
use crate::blob::xml;
use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::http::{Method, Request};

pub(crate) use crate::paging::{Page, ResultStream, every_page};

/// Options of List Containers and List Blobs.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::ListOptions;
/// use azstore::paging::collect_all;
/// let options = ListOptions::default().prefix("2026/").delimiter("/").with_metadata();
/// let top = collect_all(container.list_blobs(options)).await?;
/// # let _ = top;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct ListOptions {
    /// Only names starting with this prefix.
    pub prefix: Option<String>,
    /// (List Blobs) Group names at this delimiter into [`BlobListItem::Prefix`] entries,
    /// like directories.
    pub delimiter: Option<String>,
    /// Page size, 1–5000 (the service default is 5000).
    pub max_results: Option<u32>,
    /// The `include=` values, in the order added: for List Blobs metadata, snapshots,
    /// versions, deleted blobs, tags, uncommitted blobs, copy state, …; for List Containers
    /// metadata, deleted and system containers.
    pub include: Vec<ListInclude>,
}

/// A value of List Blobs' or List Containers' `include=`. List Containers takes `Metadata`,
/// `Deleted` and `System` only; List Blobs every one but `System`.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use azstore::blob::{ListInclude, ListOptions};
/// use azstore::paging::collect_all;
/// let with_history = ListOptions::default().including(ListInclude::Versions).including(ListInclude::Deleted);
/// let all = collect_all(container.list_blobs(with_history)).await?;
/// # let _ = all;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum ListInclude {
    /// Each item's user metadata (`metadata`), in [`BlobItem::metadata`] /
    /// [`ContainerItem::metadata`].
    Metadata,
    /// (List Blobs) Snapshots (`snapshots`), each with [`BlobItem::snapshot`] set.
    Snapshots,
    /// Previous versions (`versions`), with [`BlobItem::version_id`] set.
    Versions,
    /// Soft-deleted blobs (`deleted`), with [`BlobItem::deleted`] set; for List Containers
    /// soft-deleted containers, with [`ContainerItem::deleted`] and
    /// [`ContainerItem::version`] set (what
    /// [`restore_container`](crate::blob::BlobServiceClient::restore_container) takes).
    Deleted,
    /// Deleted blobs that still have versions (`deletedwithversions`), with
    /// [`BlobItem::has_versions_only`] set.
    DeletedWithVersions,
    /// Index tags (`tags`), in [`BlobItem::tags`].
    Tags,
    /// Blobs with staged but uncommitted blocks only (`uncommittedblobs`).
    UncommittedBlobs,
    /// Copy state (`copy`), in [`BlobItem::copy_id`] / [`BlobItem::copy_status`].
    Copy,
    /// Immutability policies (`immutabilitypolicy`).
    ImmutabilityPolicy,
    /// Legal holds (`legalhold`).
    LegalHold,
    /// Owner, group and permissions on accounts with a hierarchical namespace
    /// (`permissions`).
    Permissions,
    /// (List Containers) System containers too (`system`): `$logs`, `$web`, `$changefeed`, …
    System,
}

impl ListInclude {
    /// The value as sent in `include=`.
    pub fn as_str(self) -> &'static str {
        match self {
            ListInclude::Metadata => "metadata",
            ListInclude::Snapshots => "snapshots",
            ListInclude::Versions => "versions",
            ListInclude::Deleted => "deleted",
            ListInclude::DeletedWithVersions => "deletedwithversions",
            ListInclude::Tags => "tags",
            ListInclude::UncommittedBlobs => "uncommittedblobs",
            ListInclude::Copy => "copy",
            ListInclude::ImmutabilityPolicy => "immutabilitypolicy",
            ListInclude::LegalHold => "legalhold",
            ListInclude::Permissions => "permissions",
            ListInclude::System => "system",
        }
    }
}

impl ListOptions {
    /// Only names starting with `prefix` (default: every name).
    ///
    /// ```
    /// let options = azstore::blob::ListOptions::default().prefix("logs/2026-11-");
    /// # let _ = options;
    /// ```
    pub fn prefix(mut self, v: impl Into<String>) -> Self {
        self.prefix = Some(v.into());
        self
    }

    /// (List Blobs) Groups blob names at `delimiter` (usually `/`) into
    /// [`BlobListItem::Prefix`] entries, like directories. Default: a flat listing.
    ///
    /// ```
    /// // The "directories" directly under 2026/.
    /// let options = azstore::blob::ListOptions::default().prefix("2026/").delimiter("/");
    /// # let _ = options;
    /// ```
    pub fn delimiter(mut self, v: impl Into<String>) -> Self {
        self.delimiter = Some(v.into());
        self
    }

    /// Entries per page (1–5000; default: not sent, the service's 5000). The streams
    /// still list everything, one page per request.
    ///
    /// ```
    /// let options = azstore::blob::ListOptions::default().max_results(100);
    /// # let _ = options;
    /// ```
    pub fn max_results(mut self, v: u32) -> Self {
        self.max_results = Some(v);
        self
    }

    /// Lists each item's user metadata too (default: not included):
    /// `including(ListInclude::Metadata)`.
    ///
    /// ```
    /// use azstore::blob::{ListInclude, ListOptions};
    /// let options = ListOptions::default().with_metadata();
    /// assert_eq!(options.include, vec![ListInclude::Metadata]);
    /// ```
    pub fn with_metadata(self) -> ListOptions {
        self.including(ListInclude::Metadata)
    }

    /// (List Blobs) Lists snapshots too, each with [`BlobItem::snapshot`] set (default:
    /// base blobs only): `including(ListInclude::Snapshots)`.
    ///
    /// ```
    /// use azstore::blob::{ListInclude, ListOptions};
    /// let options = ListOptions::default().with_snapshots();
    /// assert_eq!(options.include, vec![ListInclude::Snapshots]);
    /// ```
    pub fn with_snapshots(self) -> ListOptions {
        self.including(ListInclude::Snapshots)
    }

    /// Include soft-deleted blobs or containers: `including(ListInclude::Deleted)`.
    ///
    /// ```
    /// use azstore::blob::{ListInclude, ListOptions};
    /// let options = ListOptions::default().with_deleted();
    /// assert_eq!(options.include, vec![ListInclude::Deleted]);
    /// ```
    pub fn with_deleted(self) -> ListOptions {
        self.including(ListInclude::Deleted)
    }

    /// Adds an `include=` value (List Blobs).
    ///
    /// ```
    /// use azstore::blob::{ListInclude, ListOptions};
    /// let options = ListOptions::default().including(ListInclude::Versions).including(ListInclude::Tags);
    /// assert_eq!(options.include.len(), 2);
    /// ```
    pub fn including(mut self, what: ListInclude) -> ListOptions {
        if !self.include.contains(&what) {
            self.include.push(what);
        }
        self
    }

    fn apply(&self, mut req: Request, marker: Option<&str>, blobs: bool) -> Result<Request> {
        if let Some(n) = self.max_results {
            if !(1..=5000).contains(&n) {
                return Err(Error::invalid_input("max_results must be 1-5000"));
            }
            req = req.query("maxresults", n.to_string());
        }
        if let Some(p) = &self.prefix {
            req = req.query("prefix", p.clone());
        }
        if let Some(d) = &self.delimiter {
            if !blobs {
                return Err(Error::invalid_input("List Containers has no delimiter"));
            }
            if d.is_empty() {
                return Err(Error::invalid_input("delimiter must not be empty"));
            }
            req = req.query("delimiter", d.clone());
        }
        if let Some(m) = marker {
            req = req.query("marker", m);
        }
        let mut include = Vec::new();
        for i in &self.include {
            let for_containers = matches!(
                i,
                ListInclude::Metadata | ListInclude::Deleted | ListInclude::System
            );
            let for_blobs = *i != ListInclude::System;
            if blobs && !for_blobs {
                return Err(Error::invalid_input(format!(
                    "include={} is for List Containers, not List Blobs",
                    i.as_str()
                )));
            }
            if !blobs && !for_containers {
                return Err(Error::invalid_input(format!(
                    "include={} is for List Blobs, not List Containers (which takes metadata, \
                     deleted and system)",
                    i.as_str()
                )));
            }
        }
        for i in &self.include {
            if !include.contains(&i.as_str()) {
                include.push(i.as_str());
            }
        }
        if !include.is_empty() {
            req = req.query("include", include.join(","));
        }
        Ok(req)
    }
}

/// A container as listed.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::blob::ListOptions;
/// let mut containers = blobs.list_containers(ListOptions::default().with_metadata());
/// while let Some(c) = containers.try_next().await? {
///     println!("{} {:?} {:?}", c.name, c.lease_state, c.metadata.get("owner"));
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ContainerItem {
    /// Name.
    pub name: String,
    /// ETag.
    pub etag: Option<ETag>,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// Lease state.
    pub lease_state: Option<LeaseState>,
    /// Lease status.
    pub lease_status: Option<LeaseStatus>,
    /// Metadata (when requested).
    pub metadata: BTreeMap<String, String>,
    /// Soft-deleted (with [`ListInclude::Deleted`]).
    pub deleted: bool,
    /// The deleted container's version, which Restore Container takes (with
    /// [`ListInclude::Deleted`]).
    pub version: Option<String>,
    /// When it was deleted (with [`ListInclude::Deleted`]).
    pub deleted_time: Option<OffsetDateTime>,
    /// Days until a deleted container is removed for good (with [`ListInclude::Deleted`]).
    pub remaining_retention_days: Option<u32>,
    /// The container's default encryption scope.
    pub default_encryption_scope: Option<String>,
    /// Whether blobs must use the default encryption scope.
    pub deny_encryption_scope_override: Option<bool>,
    /// Anonymous access level (`blob`, `container`); `None` when private.
    pub public_access: Option<String>,
}

/// A blob as listed.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::blob::{BlobListItem, ListOptions};
/// let mut entries = container.list_blobs(ListOptions::default());
/// while let Some(entry) = entries.try_next().await? {
///     if let BlobListItem::Blob(b) = entry {
///         println!("{}: {:?} bytes, {:?}", b.name, b.content_length, b.access_tier);
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct BlobItem {
    /// Name.
    pub name: String,
    /// Snapshot timestamp, for a snapshot.
    pub snapshot: Option<String>,
    /// ETag.
    pub etag: Option<ETag>,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// Size in bytes.
    pub content_length: Option<u64>,
    /// Content-Type.
    pub content_type: Option<String>,
    /// Blob type.
    pub blob_type: Option<BlobType>,
    /// Lease state.
    pub lease_state: Option<LeaseState>,
    /// Lease status.
    pub lease_status: Option<LeaseStatus>,
    /// Metadata (when requested).
    pub metadata: BTreeMap<String, String>,
    /// The version id (with [`ListInclude::Versions`]).
    pub version_id: Option<String>,
    /// Whether this is the current version (with [`ListInclude::Versions`]).
    pub is_current_version: Option<bool>,
    /// Soft-deleted (with [`ListInclude::Deleted`]).
    pub deleted: bool,
    /// Deleted, only versions left (with [`ListInclude::DeletedWithVersions`]).
    pub has_versions_only: bool,
    /// Index tags (with [`ListInclude::Tags`]).
    pub tags: crate::blob::Tags,
    /// Number of index tags.
    pub tag_count: Option<u64>,
    /// Access tier.
    pub access_tier: Option<crate::blob::AccessTier>,
    /// Id of the last copy into this blob (with [`ListInclude::Copy`]).
    pub copy_id: Option<String>,
    /// Status of that copy (with [`ListInclude::Copy`]).
    pub copy_status: Option<String>,
}

/// An entry of List Blobs: a blob, or (with a delimiter) a virtual directory.
///
/// ```no_run
/// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// use azstore::blob::{BlobListItem, ListOptions};
/// let top: Vec<BlobListItem> = container
///     .list_blobs(ListOptions::default().delimiter("/"))
///     .try_collect()
///     .await?;
/// for entry in &top {
///     match entry {
///         BlobListItem::Prefix(dir) => println!("{dir}"),
///         BlobListItem::Blob(b) => println!("{}", b.name),
///     }
/// }
/// # Ok(()) }
/// ```
// Nearly every entry is a blob: boxing it would cost an allocation per item for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq)]
pub enum BlobListItem {
    /// A blob.
    Blob(BlobItem),
    /// A name prefix up to and including the delimiter.
    Prefix(String),
}

impl BlobListItem {
    /// The blob name or the prefix.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let names: Vec<String> = container
    ///     .list_blobs(azstore::blob::ListOptions::default().delimiter("/"))
    ///     .map_ok(|e| e.name().to_string())
    ///     .try_collect()
    ///     .await?;
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        match self {
            BlobListItem::Blob(b) => &b.name,
            BlobListItem::Prefix(p) => p,
        }
    }
}

fn non_empty(s: Option<String>) -> Option<String> {
    s.filter(|s| !s.is_empty())
}

pub(crate) use crate::conditions::listed_etag as etag;

fn date(s: Option<String>) -> Option<OffsetDateTime> {
    s.as_deref().and_then(crate::time_fmt::parse_http_date)
}

impl BlobServiceClient {
    /// List Containers: one page starting at `marker`.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// use azstore::blob::ListOptions;
    /// let options = ListOptions::default().max_results(100);
    /// let mut marker: Option<String> = None;
    /// loop {
    ///     let page = blobs.list_containers_page(&options, marker.as_deref()).await?;
    ///     for c in &page.items {
    ///         println!("{}", c.name);
    ///     }
    ///     marker = page.next_marker;
    ///     if marker.is_none() {
    ///         break;
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_containers_page(
        &self,
        options: &ListOptions,
        marker: Option<&str>,
    ) -> Result<Page<ContainerItem>> {
        let req = options.apply(
            Request::new(Method::Get, "").query("comp", "list"),
            marker,
            false,
        )?;
        let resp = self.pipeline().send(req).await?;
        let raw: xml::RawContainerList = xml::parse(&resp.body, "List Containers")?;
        Ok(Page {
            items: raw
                .containers
                .items
                .into_iter()
                .map(|c| ContainerItem {
                    name: c.name,
                    etag: etag(c.properties.etag),
                    last_modified: date(c.properties.last_modified),
                    lease_state: c
                        .properties
                        .lease_state
                        .as_deref()
                        .and_then(LeaseState::parse),
                    lease_status: crate::blob::models::parse_lease_status(
                        c.properties.lease_status.as_deref(),
                    ),
                    metadata: c.metadata.unwrap_or_default(),
                    deleted: c.deleted.unwrap_or(false),
                    version: non_empty(c.version),
                    deleted_time: date(c.properties.deleted_time),
                    remaining_retention_days: c.properties.remaining_retention_days,
                    default_encryption_scope: non_empty(c.properties.default_encryption_scope),
                    deny_encryption_scope_override: c.properties.deny_encryption_scope_override,
                    public_access: non_empty(c.properties.public_access),
                })
                .collect(),
            next_marker: non_empty(raw.next_marker),
        })
    }

    /// List Containers: every container, following `NextMarker` page by page (one request
    /// per page, issued as the stream is polled).
    ///
    /// ```no_run
    /// # async fn f(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
    /// use azstore::blob::ListOptions;
    /// let names: Vec<String> = blobs
    ///     .list_containers(ListOptions::default().prefix("logs-"))
    ///     .map_ok(|c| c.name)
    ///     .try_collect()
    ///     .await?;
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn list_containers(&self, options: ListOptions) -> ResultStream<ContainerItem> {
        every_page(self, options, |this, options, marker| async move {
            this.list_containers_page(&options, marker.as_deref()).await
        })
    }
}

impl ContainerClient {
    /// List Blobs: one page starting at `marker`.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::blob::ListOptions;
    /// let page = container.list_blobs_page(&ListOptions::default().max_results(10), None).await?;
    /// println!("{} entries; more: {}", page.items.len(), page.next_marker.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn list_blobs_page(
        &self,
        options: &ListOptions,
        marker: Option<&str>,
    ) -> Result<Page<BlobListItem>> {
        let req = options.apply(
            self.request(Method::Get).query("comp", "list"),
            marker,
            true,
        )?;
        let resp = self.pipeline.send(req).await?;
        let raw: xml::RawBlobList = xml::parse(&resp.body, "List Blobs")?;
        let mut items = Vec::with_capacity(raw.blobs.items.len());
        for entry in raw.blobs.items {
            match entry {
                xml::RawBlobEntry::Blob(b) => {
                    let b = *b;
                    let p = b.properties;
                    items.push(BlobListItem::Blob(BlobItem {
                        name: b.name.decoded(),
                        snapshot: non_empty(b.snapshot),
                        etag: etag(p.etag),
                        last_modified: date(p.last_modified),
                        content_length: p.content_length,
                        content_type: non_empty(p.content_type),
                        blob_type: p.blob_type.as_deref().and_then(BlobType::parse),
                        lease_state: p.lease_state.as_deref().and_then(LeaseState::parse),
                        lease_status: crate::blob::models::parse_lease_status(
                            p.lease_status.as_deref(),
                        ),
                        metadata: b.metadata.unwrap_or_default(),
                        version_id: non_empty(b.version_id),
                        is_current_version: b.is_current_version,
                        deleted: b.deleted.unwrap_or(false),
                        has_versions_only: b.has_versions_only.unwrap_or(false),
                        tags: b.tags.map(xml::RawTags::into_tags).unwrap_or_default(),
                        tag_count: p.tag_count,
                        access_tier: p
                            .access_tier
                            .as_deref()
                            .and_then(crate::blob::AccessTier::parse),
                        copy_id: non_empty(p.copy_id),
                        copy_status: non_empty(p.copy_status),
                    }))
                }
                xml::RawBlobEntry::BlobPrefix(p) => {
                    items.push(BlobListItem::Prefix(p.name.decoded()))
                }
                xml::RawBlobEntry::Unknown => {}
            }
        }
        Ok(Page {
            items,
            next_marker: non_empty(raw.next_marker),
        })
    }

    /// List Blobs: every entry, following `NextMarker` page by page.
    ///
    /// ```no_run
    /// # async fn f(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
    /// use azstore::blob::{BlobListItem, ListOptions};
    /// let mut entries = container.list_blobs(ListOptions::default().prefix("2026/").delimiter("/"));
    /// while let Some(entry) = entries.try_next().await? {
    ///     match entry {
    ///         BlobListItem::Blob(b) => println!("{} ({:?} bytes)", b.name, b.content_length),
    ///         BlobListItem::Prefix(dir) => println!("{dir}"),
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn list_blobs(&self, options: ListOptions) -> ResultStream<BlobListItem> {
        every_page(self, options, |this, options, marker| async move {
            this.list_blobs_page(&options, marker.as_deref()).await
        })
    }
}
