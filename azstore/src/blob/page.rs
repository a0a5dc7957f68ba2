//! Page blobs: create, Put Page (write or clear 512-byte aligned ranges), Get Page Ranges.

use crate::body::IntoBody;
use std::ops::Range;

use time::OffsetDateTime;

use crate::blob::client::{BlobClient, WriteResult};
use crate::blob::create::{CreateOptions, EmptyBlob};
use crate::blob::limits::{MAX_SEQUENCE_NUMBER, check_aligned};
use crate::blob::xml;
use crate::conditions::{Allowed, Conditions, ETag};
use crate::error::{Error, Result};
use crate::http::{Method, Request};
use crate::storage::StorageRequest;

/// Largest Put Page body (4 MiB).
pub const MAX_PUT_PAGE: u64 = 4 * 1024 * 1024;

/// What Get Page Ranges returns.
///
/// ```no_run
/// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
/// let ranges = disk.get_page_ranges().await?;
/// let written: u64 = ranges.ranges.iter().map(|r| r.end - r.start).sum();
/// println!("{written} of {:?} bytes hold data", ranges.blob_content_length);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PageRanges {
    /// Written ranges, as half-open byte ranges.
    pub ranges: Vec<Range<u64>>,
    /// Cleared ranges (only reported by diff queries; usually empty).
    pub clear_ranges: Vec<Range<u64>>,
    /// The blob's ETag.
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The blob's size.
    pub blob_content_length: Option<u64>,
    /// Where the next call continues (`PageRangeOptions::marker`); `None` when complete.
    pub next_marker: Option<String>,
}

/// Options of [`BlobClient::get_page_ranges_with`].
///
/// ```no_run
/// # async fn demo(disk: azstore::blob::BlobClient, yesterday: azstore::blob::SnapshotId) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::PageRangeOptions;
/// // What changed since yesterday's snapshot (an incremental backup).
/// let diff = disk
///     .get_page_ranges_with(&PageRangeOptions::default().conditions(Conditions::none()).since_snapshot(&yesterday))
///     .await?;
/// println!("{} changed, {} cleared", diff.ranges.len(), diff.clear_ranges.len());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct PageRangeOptions {
    /// Conditions (every condition is accepted).
    pub conditions: Conditions,
    /// Only ranges within this half-open byte range (512-byte aligned).
    pub range: Option<Range<u64>>,
    /// The diff since this snapshot of the same blob (`prevsnapshot`).
    pub previous_snapshot: Option<crate::blob::SnapshotId>,
    /// The diff since a snapshot named by URL (`x-ms-previous-snapshot-url`; managed disks).
    pub previous_snapshot_url: Option<String>,
    /// At most this many ranges per answer (`maxresults`).
    pub max_results: Option<u32>,
    /// Continue where the previous answer stopped (`marker`).
    pub marker: Option<String>,
}

impl PageRangeOptions {
    /// Conditions of the read (every condition is accepted; default: none).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::PageRangeOptions;
    /// let options = PageRangeOptions::default().conditions(Conditions::lease(&LeaseId::random()));
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Only ranges within `range` (half-open, 512-byte aligned). Default: the whole blob.
    ///
    /// ```
    /// use azstore::Conditions;
    /// let first_mib = azstore::blob::PageRangeOptions::default().conditions(Conditions::none()).range(0..1 << 20);
    /// # let _ = first_mib;
    /// ```
    pub fn range(mut self, v: Range<u64>) -> Self {
        self.range = Some(v);
        self
    }

    /// The diff since `snapshot` (`prevsnapshot`): only pages changed or cleared since then.
    /// Default: all written ranges.
    ///
    /// ```
    /// use azstore::Conditions;
    /// use azstore::blob::{PageRangeOptions, SnapshotId};
    /// let since = SnapshotId::new("2026-11-24T00:00:00.0000000Z");
    /// let options = PageRangeOptions::default().conditions(Conditions::none()).since_snapshot(&since);
    /// # let _ = options;
    /// ```
    pub fn since_snapshot(mut self, snapshot: &crate::blob::SnapshotId) -> PageRangeOptions {
        self.previous_snapshot = Some(snapshot.clone());
        self
    }

    /// The diff since a snapshot named by URL (`x-ms-previous-snapshot-url`; managed
    /// disks). Default: none.
    ///
    /// ```
    /// use azstore::Conditions;
    /// let options = azstore::blob::PageRangeOptions::default().conditions(Conditions::none())
    ///     .since_snapshot_url("https://acct.blob.core.windows.net/disks/d1.vhd?snapshot=2026-11-24T00:00:00.0000000Z");
    /// # let _ = options;
    /// ```
    pub fn since_snapshot_url(mut self, v: impl Into<String>) -> Self {
        self.previous_snapshot_url = Some(v.into());
        self
    }

    /// At most `n` ranges per answer (default: not sent, every range in one answer);
    /// continue with [`marker`](Self::marker).
    ///
    /// ```
    /// use azstore::Conditions;
    /// let options = azstore::blob::PageRangeOptions::default().conditions(Conditions::none()).max_results(1000);
    /// # let _ = options;
    /// ```
    pub fn max_results(mut self, v: u32) -> Self {
        self.max_results = Some(v);
        self
    }

    /// Continues where a previous answer stopped: its
    /// [`next_marker`](PageRanges::next_marker). Default: from the start.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::PageRangeOptions;
    /// let mut options = PageRangeOptions::default().conditions(Conditions::none()).max_results(1000);
    /// loop {
    ///     let page = disk.get_page_ranges_with(&options).await?;
    ///     println!("{} ranges", page.ranges.len());
    ///     match page.next_marker {
    ///         Some(m) => options = options.marker(m),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub fn marker(mut self, v: impl Into<String>) -> Self {
        self.marker = Some(v.into());
        self
    }
}

/// Options of page writes (Put Page, Clear Pages, Put Page From URL): the usual
/// conditions plus the page blob's sequence-number conditions, which fail with 412
/// `SequenceNumberConditionNotMet` when they do not hold.
///
/// ```no_run
/// # async fn f(disk: azstore::blob::BlobClient, seq: u64) -> azstore::Result<()> {
/// use azstore::blob::PageWriteOptions;
/// // Write only while the blob's sequence number is still ours (a fencing token).
/// let opts = PageWriteOptions::default().if_sequence_number_eq(seq);
/// disk.put_pages_with(0, vec![0u8; 512], &opts).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[must_use]
#[non_exhaustive]
pub struct PageWriteOptions {
    /// ETag, date, tags and lease conditions.
    pub conditions: Conditions,
    /// `x-ms-if-sequence-number-le`: only if the sequence number is at most this.
    pub if_sequence_number_le: Option<u64>,
    /// `x-ms-if-sequence-number-lt`: only if the sequence number is below this.
    pub if_sequence_number_lt: Option<u64>,
    /// `x-ms-if-sequence-number-eq`: only if the sequence number is exactly this.
    pub if_sequence_number_eq: Option<u64>,
    /// Transactional checksum of the pages written (Put Page only).
    pub checksum: crate::blob::Checksum,
}

impl PageWriteOptions {
    /// ETag, date, tags and lease conditions of the write (default: none; a leased blob
    /// needs its lease id).
    ///
    /// ```
    /// use azstore::{Conditions, LeaseId};
    /// use azstore::blob::PageWriteOptions;
    /// let options = PageWriteOptions::default().conditions(Conditions::lease(&LeaseId::random()));
    /// # let _ = options;
    /// ```
    pub fn conditions(mut self, v: Conditions) -> Self {
        self.conditions = v;
        self
    }

    /// Only if the sequence number is at most `n`.
    pub fn if_sequence_number_le(mut self, v: u64) -> Self {
        self.if_sequence_number_le = Some(v);
        self
    }

    /// Only if the sequence number is below `n`.
    pub fn if_sequence_number_lt(mut self, v: u64) -> Self {
        self.if_sequence_number_lt = Some(v);
        self
    }

    /// Only if the sequence number is exactly `n`.
    pub fn if_sequence_number_eq(mut self, v: u64) -> Self {
        self.if_sequence_number_eq = Some(v);
        self
    }

    /// Adds the conditions and sequence-number conditions to `req`.
    pub(crate) fn apply(&self, req: Request) -> Result<Request> {
        let sequence_conditions = [
            ("x-ms-if-sequence-number-le", self.if_sequence_number_le),
            ("x-ms-if-sequence-number-lt", self.if_sequence_number_lt),
            ("x-ms-if-sequence-number-eq", self.if_sequence_number_eq),
        ];
        for (_, n) in sequence_conditions {
            check_sequence_number(n)?;
        }
        Ok(sequence_conditions
            .into_iter()
            .fold(req.conditions(&self.conditions), |req, (name, n)| {
                req.header_opt(name, n.map(|n| n.to_string()))
            }))
    }
}

crate::blob::write_options::checksum_builder!(
    PageWriteOptions,
    "PageWriteOptions::default().conditions(Conditions::none())"
);

/// Refuses a sequence number (of a condition or a new value) above [`MAX_SEQUENCE_NUMBER`].
fn check_sequence_number(n: Option<u64>) -> Result<()> {
    if n.is_some_and(|n| n > MAX_SEQUENCE_NUMBER) {
        return Err(Error::invalid_input(
            "a sequence number is at most 2^63 - 1",
        ));
    }
    Ok(())
}

/// How Set Blob Properties changes a page blob's sequence number
/// (`x-ms-sequence-number-action`).
///
/// ```no_run
/// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// use azstore::blob::SequenceNumberAction;
/// let r = disk.set_sequence_number(SequenceNumberAction::Increment, &Conditions::none()).await?;
/// println!("now at sequence number {:?}", r.sequence_number);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SequenceNumberAction {
    /// Set it to the larger of its current value and this one (`max`).
    Max(u64),
    /// Set it to this value (`update`).
    Update(u64),
    /// Add one (`increment`).
    Increment,
}

/// What a page blob write returns: the new version and the sequence number.
///
/// ```no_run
/// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
/// use azstore::Conditions;
/// let resized = disk.resize(4 << 20, &Conditions::none()).await?;
/// println!("version {}, sequence number {:?}", resized.etag, resized.sequence_number);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct PageWriteResult {
    /// The new ETag.
    pub etag: ETag,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The blob's sequence number after the write (`x-ms-blob-sequence-number`).
    pub sequence_number: Option<u64>,
    /// The version the write made, on an account with blob versioning (`x-ms-version-id`).
    pub version_id: Option<String>,
}

impl PageWriteResult {
    pub(crate) fn from_response(resp: &crate::http::Response) -> Result<PageWriteResult> {
        Ok(PageWriteResult {
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            sequence_number: resp.headers.parse("x-ms-blob-sequence-number")?,
            version_id: crate::blob::client::version_id(resp),
        })
    }

    /// The new version alone (what the methods without sequence-number options return).
    fn into_write_result(self) -> WriteResult {
        WriteResult {
            etag: self.etag,
            last_modified: self.last_modified,
            version_id: self.version_id,
        }
    }
}

impl BlobClient {
    /// The request of a Put Page (`write` is `update` or `clear`) of the `len` bytes at
    /// `offset`.
    pub(crate) fn put_page_request(
        &self,
        operation: &str,
        write: &str,
        offset: u64,
        len: u64,
    ) -> Result<Request> {
        Ok(self
            .write_request(Method::Put, operation)?
            .query("comp", "page")
            .header("x-ms-page-write", write)
            .header(
                "x-ms-range",
                crate::http::range_header(&(offset..offset + len)),
            ))
    }

    /// Put Blob of a page blob of `size` bytes (a multiple of 512), all zeros.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::CreateOptions;
    /// disk.create_page_blob(1 << 30, &CreateOptions::new(Conditions::if_not_exists())).await?; // 1 GiB
    /// # Ok(()) }
    /// ```
    pub async fn create_page_blob(
        &self,
        size: u64,
        options: &CreateOptions,
    ) -> Result<WriteResult> {
        self.create_empty(EmptyBlob::Page { size }, options).await
    }

    /// Put Page (update): writes `body` at `offset`. Offset and length must be multiples of
    /// 512 and the body at most 4 MiB (checked before sending). Changes the ETag.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// // Write the second 4 KiB page run.
    /// disk.put_pages(4096, vec![0xAB; 4096], &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_pages(
        &self,
        offset: u64,
        body: impl IntoBody,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        let options = PageWriteOptions::default().conditions(conditions.clone());
        let r = self.put_pages_with(offset, body, &options).await?;
        Ok(r.into_write_result())
    }

    /// Put Page (update) with sequence-number conditions and a transactional checksum.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::{Checksum, PageWriteOptions};
    /// // Only while the sequence number is still 7 (our generation), checked end to end.
    /// let options = PageWriteOptions::default().conditions(Conditions::none()).if_sequence_number_eq(7).checksum(Checksum::Crc64);
    /// disk.put_pages_with(0, vec![0u8; 512], &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_pages_with(
        &self,
        offset: u64,
        body: impl IntoBody,
        options: &PageWriteOptions,
    ) -> Result<PageWriteResult> {
        options.conditions.check(Allowed::ALL, "Put Page")?;
        let body = body.into_body();
        let len = body.len() as u64;
        check_aligned("offset", offset)?;
        check_aligned("write length", len)?;
        if len == 0 || len > MAX_PUT_PAGE {
            return Err(Error::invalid_input("Put Page writes 512 bytes to 4 MiB"));
        }
        let req = self.put_page_request("Put Page", "update", offset, len)?;
        let req = options
            .checksum
            .body(options.apply(req)?, body, "application/octet-stream");
        let resp = self.pipeline.send(req).await?;
        PageWriteResult::from_response(&resp)
    }

    /// Put Page (clear): zeroes `len` bytes at `offset` (both multiples of 512).
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// disk.clear_pages(0, 1 << 20, &Conditions::none()).await?; // the first MiB reads as zeros
    /// # Ok(()) }
    /// ```
    pub async fn clear_pages(
        &self,
        offset: u64,
        len: u64,
        conditions: &Conditions,
    ) -> Result<WriteResult> {
        let options = PageWriteOptions::default().conditions(conditions.clone());
        let r = self.clear_pages_with(offset, len, &options).await?;
        Ok(r.into_write_result())
    }

    /// Put Page (clear) with sequence-number conditions.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::PageWriteOptions;
    /// let options = PageWriteOptions::default().conditions(Conditions::none()).if_sequence_number_le(7);
    /// disk.clear_pages_with(0, 512, &options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn clear_pages_with(
        &self,
        offset: u64,
        len: u64,
        options: &PageWriteOptions,
    ) -> Result<PageWriteResult> {
        options.conditions.check(Allowed::ALL, "Put Page (clear)")?;
        if options.checksum != crate::blob::Checksum::None {
            return Err(Error::invalid_input(
                "Clear Pages sends no body to checksum",
            ));
        }
        check_aligned("offset", offset)?;
        check_aligned("clear length", len)?;
        if len == 0 {
            return Err(Error::invalid_input("clear length must not be 0"));
        }
        let req = self.put_page_request("Clear Pages", "clear", offset, len)?;
        let resp = self.pipeline.send(options.apply(req)?).await?;
        PageWriteResult::from_response(&resp)
    }

    /// Set Blob Properties with `x-ms-sequence-number-action`: changes the page blob's
    /// sequence number and nothing else. Accepts every condition. The returned
    /// `sequence_number` is the new value.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// use azstore::blob::SequenceNumberAction;
    /// disk.set_sequence_number(SequenceNumberAction::Update(8), &Conditions::none()).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_sequence_number(
        &self,
        action: SequenceNumberAction,
        conditions: &Conditions,
    ) -> Result<PageWriteResult> {
        conditions.check(Allowed::ALL, "Set Blob Properties (sequence number)")?;
        let (name, value) = match action {
            SequenceNumberAction::Max(n) => ("max", Some(n)),
            SequenceNumberAction::Update(n) => ("update", Some(n)),
            SequenceNumberAction::Increment => ("increment", None),
        };
        check_sequence_number(value)?;
        let req = self
            .write_request(Method::Put, "Set Blob Properties")?
            .query("comp", "properties")
            .header("x-ms-sequence-number-action", name)
            .header_opt("x-ms-blob-sequence-number", value.map(|n| n.to_string()))
            .conditions(conditions);
        let resp = self.pipeline.send(req).await?;
        PageWriteResult::from_response(&resp)
    }

    /// Set Blob Properties with `x-ms-blob-content-length`: resizes the page blob to `size`
    /// bytes (a multiple of 512; pages beyond a smaller size are discarded). Nothing else
    /// changes. Accepts every condition.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// let props = disk.get_properties().await?;
    /// disk.resize(2 << 30, &Conditions::if_match(&props.etag)).await?; // grow to 2 GiB
    /// # Ok(()) }
    /// ```
    pub async fn resize(&self, size: u64, conditions: &Conditions) -> Result<PageWriteResult> {
        conditions.check(Allowed::ALL, "Set Blob Properties (resize)")?;
        check_aligned("size", size)?;
        let req = self
            .write_request(Method::Put, "Set Blob Properties")?
            .query("comp", "properties")
            .header("x-ms-blob-content-length", size.to_string())
            .conditions(conditions);
        let resp = self.pipeline.send(req).await?;
        PageWriteResult::from_response(&resp)
    }

    /// Get Page Ranges: the written ranges of a page blob (every page, one request; see
    /// [`BlobClient::get_page_ranges_with`] for paging, sub-ranges and diffs). Accepts every
    /// condition.
    ///
    /// ```no_run
    /// # async fn demo(disk: azstore::blob::BlobClient) -> azstore::Result<()> {
    /// use azstore::Conditions;
    /// # let lease = azstore::LeaseId::random();
    /// let ranges = disk.get_page_ranges_if(&Conditions::lease(&lease)).await?;
    /// # let _ = ranges;
    /// # Ok(()) }
    /// ```
    pub async fn get_page_ranges_if(&self, conditions: &Conditions) -> Result<PageRanges> {
        self.get_page_ranges_with(&PageRangeOptions::default().conditions(conditions.clone()))
            .await
    }

    /// Get Page Ranges with options: only within `range`, at most `max_results` ranges per
    /// call continuing at `marker` (`next_marker` of the previous answer), or — with
    /// `previous_snapshot` / `previous_snapshot_url` — the diff since that snapshot: pages
    /// written since in `ranges`, pages cleared since in `clear_ranges`.
    ///
    /// ```no_run
    /// # async fn f(disk: azstore::blob::BlobClient, snap: azstore::blob::SnapshotId) -> azstore::Result<()> {
    /// use azstore::blob::PageRangeOptions;
    /// let mut opts = PageRangeOptions::default().since_snapshot(&snap).max_results(1000);
    /// loop {
    ///     let page = disk.get_page_ranges_with(&opts).await?;
    ///     // copy page.ranges to the backup, zero page.clear_ranges there ...
    ///     match page.next_marker {
    ///         Some(m) => opts.marker = Some(m),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn get_page_ranges_with(&self, options: &PageRangeOptions) -> Result<PageRanges> {
        crate::blob::client::check_read(&options.conditions, "Get Page Ranges")?;
        if options.previous_snapshot.is_some() && options.previous_snapshot_url.is_some() {
            return Err(Error::invalid_input(
                "give a previous snapshot or a previous snapshot URL, not both",
            ));
        }
        let mut req = self
            .request(Method::Get)
            .query("comp", "pagelist")
            .conditions(&options.conditions);
        if let Some(s) = &options.previous_snapshot {
            req = req.query("prevsnapshot", s.as_str());
        }
        if let Some(url) = &options.previous_snapshot_url {
            crate::blob::limits::validate_source_url(url)?;
            req = req.header("x-ms-previous-snapshot-url", url.clone());
        }
        if let Some(r) = &options.range {
            check_aligned("range start", r.start)?;
            check_aligned("range end", r.end)?;
            if r.start >= r.end {
                return Err(Error::invalid_input("page range must not be empty"));
            }
            req = req.header("x-ms-range", crate::http::range_header(r));
        }
        if let Some(n) = options.max_results {
            if n == 0 {
                return Err(Error::invalid_input("max_results must be at least 1"));
            }
            req = req.query("maxresults", n.to_string());
        }
        if let Some(m) = &options.marker {
            req = req.query("marker", m.clone());
        }
        let resp = self.pipeline.send(req).await?;
        let raw: xml::RawPageList = xml::parse(&resp.body, "Get Page Ranges")?;
        let mut ranges = Vec::new();
        let mut clear_ranges = Vec::new();
        let mut next_marker = None;
        for item in raw.items {
            let (list, r) = match item {
                xml::RawPageEntry::PageRange(r) => (&mut ranges, r),
                xml::RawPageEntry::ClearRange(r) => (&mut clear_ranges, r),
                xml::RawPageEntry::NextMarker(m) => {
                    next_marker = Some(m.text).filter(|m| !m.is_empty());
                    continue;
                }
                xml::RawPageEntry::Unknown => continue,
            };
            if r.end < r.start {
                return Err(Error::decode("Get Page Ranges returned an inverted range"));
            }
            list.push(r.start..r.end + 1);
        }
        Ok(PageRanges {
            ranges,
            clear_ranges,
            etag: resp.headers.require_etag()?,
            last_modified: resp.headers.last_modified(),
            blob_content_length: resp.headers.parse("x-ms-blob-content-length")?,
            next_marker,
        })
    }
}
