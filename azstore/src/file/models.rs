//! Typed properties and listings of shares, directories and files.

use std::collections::BTreeMap;

use serde::Deserialize;
use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::file::smb_properties::SmbProperties;
use crate::http::{Headers, Request, Response};
use crate::http_headers::HttpHeaders;
use crate::status::{CopyStatus, LeaseDurationType, LeaseState, LeaseStatus};
use crate::storage::StorageRequest;

/// Lease information as sent in `x-ms-lease-*` headers.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let lease = file.get_properties().await?.lease;
/// if lease.is_locked() {
///     println!("leased ({:?})", lease.duration);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct LeaseInfo {
    /// `x-ms-lease-state`.
    pub state: Option<LeaseState>,
    /// `x-ms-lease-status`.
    pub status: Option<LeaseStatus>,
    /// `x-ms-lease-duration` (files: always infinite).
    pub duration: Option<LeaseDurationType>,
}

impl LeaseInfo {
    fn from_headers(h: &Headers) -> LeaseInfo {
        LeaseInfo {
            state: h.get("x-ms-lease-state").and_then(LeaseState::parse),
            status: match h.get("x-ms-lease-status") {
                Some("locked") => Some(LeaseStatus::Locked),
                Some("unlocked") => Some(LeaseStatus::Unlocked),
                _ => None,
            },
            duration: match h.get("x-ms-lease-duration") {
                Some("infinite") => Some(LeaseDurationType::Infinite),
                Some("fixed") => Some(LeaseDurationType::Fixed),
                _ => None,
            },
        }
    }

    /// Whether someone holds the lease (leased or breaking).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// if file.get_properties().await?.lease.is_locked() {
    ///     println!("writes need the lease id");
    /// }
    /// # Ok(()) }
    /// ```
    pub fn is_locked(&self) -> bool {
        self.status == Some(LeaseStatus::Locked)
    }
}

/// What a write returns: the new version. The File service never checks it on a later write
/// (there is no `If-Match` on File REST); it tells you what you wrote.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let written = file.create(0, None).await?;
/// println!("version {} at {:?}", written.etag, written.last_modified);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileWrite {
    /// The new ETag.
    pub etag: ETag,
    /// The new Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
}

impl FileWrite {
    /// Sends a write and reads the new version.
    pub(crate) async fn send(pipeline: &crate::http::Pipeline, req: Request) -> Result<FileWrite> {
        FileWrite::from_response(&pipeline.send(req).await?)
    }

    /// Set Metadata of the share, directory or file `req` (a PUT) addresses.
    pub(crate) async fn set_metadata(
        pipeline: &crate::http::Pipeline,
        req: Request,
        metadata: &BTreeMap<String, String>,
    ) -> Result<FileWrite> {
        FileWrite::send(pipeline, req.query("comp", "metadata").metadata(metadata)).await
    }

    pub(crate) fn from_response(resp: &Response) -> Result<FileWrite> {
        Ok(FileWrite {
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
        })
    }
}

/// Get Share Properties.
///
/// ```no_run
/// # async fn demo(share: azstore::file::ShareClient) -> azstore::Result<()> {
/// let props = share.get_properties().await?;
/// println!("quota {:?} GiB, protocols {:?}", props.quota_gib, props.enabled_protocols);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShareProperties {
    /// Version tag.
    pub etag: ETag,
    /// Last change of the share's properties or metadata.
    pub last_modified: Option<OffsetDateTime>,
    /// Quota in GiB.
    pub quota_gib: Option<u64>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// Share lease.
    pub lease: LeaseInfo,
    /// Access tier (`x-ms-access-tier`: `TransactionOptimized`, `Hot`, `Cool`, `Premium`).
    pub access_tier: Option<String>,
    /// Enabled protocols (`x-ms-enabled-protocols`: `SMB` or `NFS`).
    pub enabled_protocols: Option<String>,
    /// NFS root squash (`x-ms-root-squash`: `NoRootSquash`, `RootSquash`, `AllSquash`).
    pub root_squash: Option<String>,
}

impl ShareProperties {
    pub(crate) fn from_headers(h: &Headers) -> Result<ShareProperties> {
        let text = |n: &str| h.get(n).map(str::to_string);
        Ok(ShareProperties {
            etag: h.require_etag()?,
            last_modified: h.last_modified(),
            quota_gib: h.parse("x-ms-share-quota")?,
            metadata: h.metadata(),
            lease: LeaseInfo::from_headers(h),
            access_tier: text("x-ms-access-tier"),
            enabled_protocols: text("x-ms-enabled-protocols"),
            root_squash: text("x-ms-root-squash"),
        })
    }
}

/// Get Directory Properties.
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// let props = dir.get_properties().await?;
/// println!("{:?} {:?}", props.smb.attributes, props.metadata);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DirectoryProperties {
    /// Version tag.
    pub etag: ETag,
    /// Last change.
    pub last_modified: Option<OffsetDateTime>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// SMB attributes, times, permission key and ids.
    pub smb: SmbProperties,
}

impl DirectoryProperties {
    pub(crate) fn from_headers(h: &Headers) -> Result<DirectoryProperties> {
        Ok(DirectoryProperties {
            etag: h.require_etag()?,
            last_modified: h.last_modified(),
            metadata: h.metadata(),
            smb: SmbProperties::from_headers(h)?,
        })
    }
}

/// Get File Properties (and the properties returned with Get File).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let p = file.get_properties().await?;
/// println!("{} bytes, {:?}, written {:?}", p.content_length, p.http_headers.content_type,
///     azstore::file::SmbProperties::time_of(p.smb.last_write_time));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileProperties {
    /// Version tag of exactly this content.
    pub etag: ETag,
    /// Last write.
    pub last_modified: Option<OffsetDateTime>,
    /// Size of the whole file in bytes.
    pub content_length: u64,
    /// The stored HTTP headers (`Content-Type`, `Content-Encoding`, `Content-Language`,
    /// `Cache-Control`, `Content-Disposition`, and `Content-MD5`): change one and pass them to
    /// [`FileClient::set_http_headers`](crate::file::FileClient::set_http_headers) to keep the
    /// rest. `content_md5` is always the whole file's stored MD5, on a ranged read too (the
    /// service sends it there as `x-ms-content-md5`).
    pub http_headers: HttpHeaders,
    /// The service's MD5 of exactly the bytes of a ranged read asked with
    /// `x-ms-range-get-content-md5` (its `Content-MD5`), kept apart from the stored MD5;
    /// `None` on other reads.
    pub range_content_md5: Option<String>,
    /// User metadata.
    pub metadata: BTreeMap<String, String>,
    /// File lease.
    pub lease: LeaseInfo,
    /// SMB attributes, times, permission key and ids.
    pub smb: SmbProperties,
    /// The last copy into this file (Copy File), if any.
    pub copy: Option<FileCopyInfo>,
}

/// The state of the last Copy File into a file (`x-ms-copy-*` headers).
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// if let Some(copy) = file.get_properties().await?.copy {
///     println!("copy {} from {:?}: {:?} ({:?})", copy.id, copy.source, copy.status, copy.progress);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FileCopyInfo {
    /// `x-ms-copy-id`: pass it to [`FileClient::abort_copy`](crate::file::FileClient::abort_copy).
    pub id: String,
    /// `x-ms-copy-status`.
    pub status: CopyStatus,
    /// `x-ms-copy-source`.
    pub source: Option<String>,
    /// `x-ms-copy-progress` (`copied/total` bytes).
    pub progress: Option<String>,
    /// `x-ms-copy-completion-time`.
    pub completion_time: Option<OffsetDateTime>,
    /// `x-ms-copy-status-description` (why a copy failed).
    pub status_description: Option<String>,
}

impl FileCopyInfo {
    pub(crate) fn from_headers(h: &Headers) -> Option<FileCopyInfo> {
        Some(FileCopyInfo {
            id: h.get("x-ms-copy-id")?.to_string(),
            status: CopyStatus::parse(h.get("x-ms-copy-status").unwrap_or("")),
            source: h.get("x-ms-copy-source").map(str::to_string),
            progress: h.get("x-ms-copy-progress").map(str::to_string),
            completion_time: h
                .get("x-ms-copy-completion-time")
                .and_then(crate::time_fmt::parse_http_date),
            status_description: h.get("x-ms-copy-status-description").map(str::to_string),
        })
    }
}

impl FileProperties {
    /// For a ranged GET the total size comes from `Content-Range`, and the stored MD5 from
    /// `x-ms-content-md5` (its `Content-MD5` is the range's own).
    pub(crate) fn from_headers(h: &Headers) -> Result<FileProperties> {
        let ranged = h.get("content-range").is_some();
        let mut http_headers = HttpHeaders::from_headers(h);
        let mut range_content_md5 = None;
        if ranged {
            range_content_md5 = http_headers.content_md5.take();
        }
        if let Some(stored) = h.get("x-ms-content-md5") {
            http_headers.content_md5 = Some(stored.to_string());
        }
        let from_range = h
            .get("content-range")
            .and_then(|r| r.rsplit_once('/'))
            .and_then(|(_, total)| total.trim().parse().ok());
        let content_length = match from_range {
            Some(n) => n,
            None => h.parse::<u64>("content-length")?.unwrap_or(0),
        };
        Ok(FileProperties {
            etag: h.require_etag()?,
            last_modified: h.last_modified(),
            content_length,
            http_headers,
            range_content_md5,
            metadata: h.metadata(),
            lease: LeaseInfo::from_headers(h),
            smb: SmbProperties::from_headers(h)?,
            copy: FileCopyInfo::from_headers(h),
        })
    }
}

/// One entry of a directory listing.
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// use azstore::file::ListItem;
/// for item in dir.list_all(None).await? {
///     match item {
///         ListItem::Directory { name, .. } => println!("{name}/"),
///         ListItem::File { name, size, .. } => println!("{name} ({size} bytes)"),
///     }
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ListItem {
    /// A subdirectory.
    Directory {
        /// Its name (not the full path).
        name: String,
    },
    /// A file.
    File {
        /// Its name (not the full path).
        name: String,
        /// Its size in bytes (may lag behind writes in progress on real Azure).
        size: u64,
    },
}

impl ListItem {
    /// The entry's name.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let names: Vec<String> = dir.list_all(None).await?.iter().map(|i| i.name().to_string()).collect();
    /// # let _ = names; Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        match self {
            ListItem::Directory { name } | ListItem::File { name, .. } => name,
        }
    }

    /// Whether this is a directory.
    ///
    /// ```no_run
    /// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
    /// let subdirs = dir.list_all(None).await?.into_iter().filter(|i| i.is_directory()).count();
    /// println!("{subdirs} subdirectories");
    /// # Ok(()) }
    /// ```
    pub fn is_directory(&self) -> bool {
        matches!(self, ListItem::Directory { .. })
    }
}

/// One entry of a directory listing with everything the listing carried: with
/// [`ListOptions::extended_info`](crate::file::ListOptions::extended_info) its file id,
/// timestamps, ETag, SMB attributes and permission key, without a request per entry.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ListEntry {
    /// Its name (not the full path).
    pub name: String,
    /// Whether it is a directory.
    pub is_directory: bool,
    /// A file's size in bytes (`None` for a directory).
    pub size: Option<u64>,
    /// The file or directory id (`FileId`, extended info).
    pub file_id: Option<String>,
    /// ETag (extended info).
    pub etag: Option<ETag>,
    /// Last-Modified (extended info).
    pub last_modified: Option<OffsetDateTime>,
    /// SMB creation time (extended info).
    pub creation_time: Option<OffsetDateTime>,
    /// SMB last access time (extended info).
    pub last_access_time: Option<OffsetDateTime>,
    /// SMB last write time (extended info).
    pub last_write_time: Option<OffsetDateTime>,
    /// SMB change time (extended info).
    pub change_time: Option<OffsetDateTime>,
    /// SMB attributes (extended info).
    pub attributes: Option<crate::file::FileAttributes>,
    /// The permission key (extended info).
    pub permission_key: Option<String>,
}

/// One page of List Directories and Files.
///
/// ```no_run
/// # async fn demo(dir: azstore::file::DirectoryClient) -> azstore::Result<()> {
/// let page = dir.list(&azstore::file::ListOptions::default()).await?;
/// println!("{} entries, more: {}", page.items.len(), page.next_marker.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct ListPage {
    /// Directories and files of this page, in the service's order.
    pub items: Vec<ListItem>,
    /// The same entries with everything the listing carried (see [`ListEntry`]).
    pub entries: Vec<ListEntry>,
    /// Pass this as the marker to get the next page; `None` on the last page.
    pub next_marker: Option<String>,
}

#[derive(Deserialize)]
struct EnumerationResults {
    #[serde(rename = "Entries", default)]
    entries: Entries,
    #[serde(rename = "NextMarker", default)]
    next_marker: Option<String>,
}

#[derive(Deserialize, Default)]
struct Entries {
    #[serde(rename = "$value", default)]
    items: Vec<Entry>,
}

#[derive(Deserialize)]
enum Entry {
    Directory(DirEntry),
    File(FileEntry),
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct DirEntry {
    #[serde(rename = "Name")]
    name: String,
    #[serde(rename = "FileId", default)]
    file_id: Option<String>,
    #[serde(rename = "Properties", default)]
    properties: FileEntryProps,
    #[serde(rename = "Attributes", default)]
    attributes: Option<String>,
    #[serde(rename = "PermissionKey", default)]
    permission_key: Option<String>,
}

type FileEntry = DirEntry;

#[derive(Deserialize, Default)]
struct FileEntryProps {
    #[serde(rename = "Content-Length", default)]
    content_length: Option<u64>,
    #[serde(rename = "CreationTime", default)]
    creation_time: Option<String>,
    #[serde(rename = "LastAccessTime", default)]
    last_access_time: Option<String>,
    #[serde(rename = "LastWriteTime", default)]
    last_write_time: Option<String>,
    #[serde(rename = "ChangeTime", default)]
    change_time: Option<String>,
    #[serde(rename = "Last-Modified", default)]
    last_modified: Option<String>,
    #[serde(rename = "Etag", default)]
    etag: Option<String>,
}

impl DirEntry {
    fn entry(self, is_directory: bool) -> Result<ListEntry> {
        let iso = |what: &str, v: Option<String>| -> Result<Option<OffsetDateTime>> {
            match v.as_deref().map(str::trim) {
                None | Some("") => Ok(None),
                Some(t) => crate::time_fmt::parse_iso8601(t).map(Some).ok_or_else(|| {
                    Error::decode(format!("malformed directory listing: bad <{what}> {t:?}"))
                }),
            }
        };
        let p = self.properties;
        let attributes = match self.attributes.as_deref().map(str::trim) {
            None | Some("") => None,
            Some(a) => Some(crate::file::FileAttributes::parse(a).map_err(|_| {
                Error::decode(format!(
                    "malformed directory listing: bad <Attributes> {a:?}"
                ))
            })?),
        };
        Ok(ListEntry {
            name: self.name,
            is_directory,
            size: if is_directory {
                None
            } else {
                Some(p.content_length.unwrap_or(0))
            },
            file_id: self.file_id.filter(|s| !s.is_empty()),
            etag: crate::conditions::listed_etag(p.etag),
            last_modified: p
                .last_modified
                .as_deref()
                .and_then(crate::time_fmt::parse_http_date),
            creation_time: iso("CreationTime", p.creation_time)?,
            last_access_time: iso("LastAccessTime", p.last_access_time)?,
            last_write_time: iso("LastWriteTime", p.last_write_time)?,
            change_time: iso("ChangeTime", p.change_time)?,
            attributes,
            permission_key: self.permission_key.filter(|s| !s.is_empty()),
        })
    }
}

fn strip_bom(body: &[u8]) -> Result<&str> {
    let text =
        std::str::from_utf8(body).map_err(|_| Error::decode("response body is not UTF-8"))?;
    Ok(text.trim_start_matches('\u{feff}'))
}

impl ListPage {
    pub(crate) fn parse(body: &[u8]) -> Result<ListPage> {
        crate::http::checks::expect_xml_root(
            body,
            "EnumerationResults",
            "List Directories and Files",
        )?;
        let text = strip_bom(body)?;
        let r: EnumerationResults = quick_xml::de::from_str(text)
            .map_err(|e| Error::decode(format!("malformed directory listing: {e}")))?;
        let entries = r
            .entries
            .items
            .into_iter()
            .filter_map(|e| match e {
                Entry::Directory(d) => Some(d.entry(true)),
                Entry::File(f) => Some(f.entry(false)),
                Entry::Unknown => None,
            })
            .collect::<Result<Vec<ListEntry>>>()?;
        let items = entries
            .iter()
            .map(|e| match e.size {
                None => ListItem::Directory {
                    name: e.name.clone(),
                },
                Some(size) => ListItem::File {
                    name: e.name.clone(),
                    size,
                },
            })
            .collect();
        Ok(ListPage {
            items,
            entries,
            next_marker: r.next_marker.filter(|m| !m.is_empty()),
        })
    }
}

/// List Ranges: which byte ranges of a file hold written data.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let list = file.list_ranges(None).await?;
/// let stored: u64 = list.ranges.iter().map(|r| r.end - r.start).sum();
/// println!("{stored} of {:?} bytes hold data", list.file_size);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct RangeList {
    /// Written ranges, end exclusive, ascending.
    pub ranges: Vec<std::ops::Range<u64>>,
    /// The file size (`x-ms-content-length`), when the service sent it.
    pub file_size: Option<u64>,
}

#[derive(Deserialize)]
struct Ranges {
    #[serde(rename = "Range", default)]
    ranges: Vec<RangeXml>,
}

#[derive(Deserialize)]
struct RangeXml {
    #[serde(rename = "Start")]
    start: u64,
    #[serde(rename = "End")]
    end: u64,
}

impl RangeList {
    pub(crate) fn parse(resp: &Response) -> Result<RangeList> {
        crate::http::checks::expect_xml_root(&resp.body, "Ranges", "List Ranges")?;
        let text = strip_bom(&resp.body)?;
        let r: Ranges = quick_xml::de::from_str(text)
            .map_err(|e| Error::decode(format!("malformed range list: {e}")))?;
        let mut ranges = Vec::with_capacity(r.ranges.len());
        for x in r.ranges {
            let end = x
                .end
                .checked_add(1)
                .filter(|e| *e > x.start)
                .ok_or_else(|| Error::decode("range list has an end before its start"))?;
            ranges.push(x.start..end);
        }
        Ok(RangeList {
            ranges,
            file_size: resp.headers.parse("x-ms-content-length")?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn listing() {
        let xml = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"x\" ShareName=\"s\" DirectoryPath=\"d\"><Prefix>a</Prefix><MaxResults>2</MaxResults><Entries><Directory><Name>a1</Name><FileId>1</FileId><Properties /></Directory><File><Name>a&amp;2</Name><Properties><Content-Length>12</Content-Length></Properties></File></Entries><NextMarker>a3</NextMarker></EnumerationResults>";
        let p = ListPage::parse(xml.as_bytes()).unwrap();
        assert_eq!(
            p.items,
            vec![
                ListItem::Directory { name: "a1".into() },
                ListItem::File {
                    name: "a&2".into(),
                    size: 12
                }
            ]
        );
        assert_eq!(p.next_marker.as_deref(), Some("a3"));
        let last =
            ListPage::parse(b"<EnumerationResults><Entries /><NextMarker /></EnumerationResults>")
                .unwrap();
        assert!(last.items.is_empty() && last.next_marker.is_none());
        assert!(ListPage::parse(b"<EnumerationResults><Entries>").is_err());
        assert!(ListPage::parse(b"\xff\xfe").is_err());
    }

    #[test]
    fn ranges() {
        let resp = Response {
            status: 200,
            headers: Headers::from_pairs(vec![("x-ms-content-length".into(), "100".into())]),
            body: bytes::Bytes::from_static(
                b"<Ranges><Range><Start>0</Start><End>9</End></Range><Range><Start>50</Start><End>50</End></Range></Ranges>",
            ),
        };
        let r = RangeList::parse(&resp).unwrap();
        assert_eq!(r.ranges, vec![0..10, 50..51]);
        assert_eq!(r.file_size, Some(100));
        let bad = Response {
            body: bytes::Bytes::from_static(
                b"<Ranges><Range><Start>9</Start><End>0</End></Range></Ranges>",
            ),
            ..resp
        };
        assert!(RangeList::parse(&bad).is_err());
    }
}
