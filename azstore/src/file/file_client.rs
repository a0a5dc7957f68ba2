//! [`FileClient`]: one file (create, ranges, read, properties, metadata, delete).

use crate::body::IntoBody;
use std::collections::BTreeMap;
use std::ops::Range;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use futures_util::Stream;

use crate::conditions::LeaseId;
use crate::error::{Error, Result};
use crate::file::models::{FileProperties, FileWrite, RangeList};
use crate::file::options::{CreateFileOptions, MAX_RANGE_SIZE};
use crate::http::{Method, Pipeline, Request};
use crate::storage::StorageRequest;
use crate::storage::checksum::Checksum;

/// One file. Cheap to clone.
///
/// # Concurrency: last writer wins, or a lease
///
/// The File REST API has **no `If-Match`**: a write replaces what is there, whoever wrote it
/// last wins, and an ETag you read cannot make a later write conditional. That is why no
/// method of this client takes [`Conditions`](crate::Conditions) — a condition the service
/// cannot honour is a compile error rather than a silent no-op:
///
/// ```compile_fail
/// # async fn demo(file: azstore::file::FileClient, etag: azstore::ETag) {
/// // Does not compile: File writes take a lease id, never Conditions.
/// file.put_range(0, bytes::Bytes::from_static(b"x"), &azstore::Conditions::if_match(&etag)).await;
/// # }
/// ```
///
/// For exclusive writes, take a file lease ([`FileClient::acquire_lease`]) and pass its id
/// to every write: other REST writers then get 412 until the lease is released or broken.
/// SMB clients lock files with open handles instead; those surface as 409
/// `SharingViolation` (see [`crate::file::retry_smb_conflicts`]).
#[derive(Debug, Clone)]
pub struct FileClient {
    pub(crate) pipeline: Pipeline,
    pub(crate) share: Arc<str>,
    pub(crate) path: Arc<str>,
}

/// A downloaded file (or range) and the properties of the version read.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// let got = file.download(&azstore::file::TransferOptions::default()).await?;
/// println!("{} bytes, version {}", got.body.len(), got.properties.etag);
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct FileDownload {
    /// The content.
    pub body: Bytes,
    /// Properties; `content_length` is the size of the whole file.
    pub properties: FileProperties,
}

/// A download whose body arrives as a stream of chunks.
///
/// ```no_run
/// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// let options = azstore::file::TransferOptions::default();
/// let mut stream = file.download_stream(&options).await?;
/// println!("{} bytes coming", stream.properties.content_length);
/// while let Some(chunk) = stream.body.try_next().await? {
///     println!("{} bytes", chunk.len());
/// }
/// # Ok(()) }
/// ```
#[non_exhaustive]
pub struct FileStream {
    /// Properties; `content_length` is the size of the whole file.
    pub properties: FileProperties,
    /// The content (or the requested range of it).
    pub body: Pin<Box<dyn Stream<Item = Result<Bytes>> + Send>>,
}

impl std::fmt::Debug for FileStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileStream")
            .field("properties", &self.properties)
            .finish_non_exhaustive()
    }
}

pub(crate) fn lease_header(req: Request, lease: Option<&LeaseId>) -> Request {
    req.header_opt("x-ms-lease-id", lease.map(|l| l.as_str().to_string()))
}

fn range_header(range: &Range<u64>) -> Result<String> {
    if range.start >= range.end {
        return Err(Error::invalid_input(format!(
            "empty or inverted byte range {}..{}",
            range.start, range.end
        )));
    }
    Ok(crate::http::range_header(range))
}

impl FileClient {
    /// The path below the share.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// println!("{}/{}", file.share_name(), file.path());
    /// # Ok(()) }
    /// ```
    pub fn path(&self) -> &str {
        &self.path
    }

    /// The share name.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// assert!(!file.share_name().is_empty());
    /// # Ok(()) }
    /// ```
    pub fn share_name(&self) -> &str {
        &self.share
    }

    /// The underlying pipeline.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::http::{Method, Request};
    /// let path = format!("{}/{}", file.share_name(), file.path());
    /// let resp = file.pipeline().send(Request::new(Method::Head, &path)).await?;
    /// println!("{:?}", resp.headers.get("x-ms-type"));
    /// # Ok(()) }
    /// ```
    pub fn pipeline(&self) -> &Pipeline {
        &self.pipeline
    }

    /// The file URL (without credentials).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// println!("{}", file.url()); // e.g. https://acct.file.core.windows.net/share/dir/a.txt
    /// # Ok(()) }
    /// ```
    pub fn url(&self) -> String {
        self.pipeline.url_of(&self.full_path())
    }

    fn full_path(&self) -> String {
        format!("{}/{}", self.share, self.path)
    }

    pub(crate) fn request(&self, method: Method) -> Request {
        Request::new(method, &self.full_path())
    }

    /// Create File: a new file of `size` bytes (all zero), replacing any existing file
    /// (last writer wins). A leased file needs the lease id.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use bytes::Bytes;
    /// // A 1 KiB file, then its first bytes.
    /// file.create(1024, None).await?;
    /// file.put_range(0, Bytes::from_static(b"header"), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create(&self, size: u64, lease: Option<&LeaseId>) -> Result<FileWrite> {
        let mut options = CreateFileOptions::default().size(size);
        options.lease = lease.cloned();
        self.create_with(&options).await
    }

    /// Create File with content type, metadata, stored HTTP headers and SMB properties.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::CreateFileOptions;
    /// let options = CreateFileOptions::default().size(0).content_type("text/csv");
    /// file.create_with(&options).await?;
    /// # Ok(()) }
    /// ```
    pub async fn create_with(&self, options: &CreateFileOptions) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .header("x-ms-type", "file")
            .header("x-ms-content-length", options.size.to_string())
            .header_opt("x-ms-content-type", options.content_type.clone())
            .metadata(&options.metadata);
        if options.content_type.is_some() && options.headers.content_type.is_some() {
            return Err(Error::invalid_input(
                "give the content type in CreateFileOptions::content_type or in headers, not both",
            ));
        }
        options.smb.check(true)?;
        let req = options.smb.apply(
            options
                .headers
                .apply(req, crate::storage::http_headers::HeaderNames::File),
        );
        let req = lease_header(req, options.lease.as_ref());
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Put Range (`x-ms-write: update`): writes `data` at `offset`. `data` must be 1 byte to
    /// 4 MiB (else `InvalidInput`, nothing sent; [`FileClient::upload`] splits larger data)
    /// and lie within the file's size.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use bytes::Bytes;
    /// // Overwrite bytes 512..516 of an existing file of at least 516 bytes.
    /// file.put_range(512, Bytes::from_static(b"DONE"), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_range(
        &self,
        offset: u64,
        data: impl IntoBody,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        self.put_range_with(offset, data, Checksum::None, lease)
            .await
    }

    /// Put Range with a transactional checksum computed by azstore: `Checksum::Md5` sends
    /// `Content-MD5`, `Checksum::Crc64` sends `x-ms-content-crc64`. The service refuses
    /// bytes that do not match with 400 `Md5Mismatch` / `Crc64Mismatch`
    /// ([`ErrorKind::Integrity`](crate::ErrorKind::Integrity)) and writes nothing.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use bytes::Bytes;
    /// use azstore::blob::Checksum;
    /// file.put_range_with(0, Bytes::from_static(b"checked"), Checksum::Crc64, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn put_range_with(
        &self,
        offset: u64,
        data: impl IntoBody,
        checksum: Checksum,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let data = data.into_body();
        let len = data.len() as u64;
        if len == 0 || len > MAX_RANGE_SIZE {
            return Err(Error::invalid_input(format!(
                "a range must be 1 byte to 4 MiB (got {len} bytes); use upload() to split larger data"
            )));
        }
        let end = offset
            .checked_add(len)
            .ok_or_else(|| Error::invalid_input("range end overflows"))?;
        let req = self
            .request(Method::Put)
            .query("comp", "range")
            .header("x-ms-range", range_header(&(offset..end))?)
            .header("x-ms-write", "update");
        let req = match checksum.header(&data) {
            Some((name, value)) => req.header(name, value),
            None => req,
        };
        let req = req.body(data, "application/octet-stream");
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Put Range with `x-ms-write: clear`: zeroes `range` and frees its storage.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// file.clear_range(0..4096, None).await?; // the first 4 KiB read as zeros now
    /// # Ok(()) }
    /// ```
    pub async fn clear_range(
        &self,
        range: Range<u64>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "range")
            .header("x-ms-range", range_header(&range)?)
            .header("x-ms-write", "clear");
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Get File for one byte range (206). The range may extend past the end of the file; the
    /// service returns what exists. A range starting at or past the end is a 416 error.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let head = file.download_range(0..100).await?;
    /// println!("first {} of {} bytes", head.body.len(), head.properties.content_length);
    /// # Ok(()) }
    /// ```
    pub async fn download_range(&self, range: Range<u64>) -> Result<FileDownload> {
        let req = self
            .request(Method::Get)
            .header("x-ms-range", range_header(&range)?)
            .content_read();
        let resp = self.pipeline.send(req).await?;
        Ok(FileDownload {
            properties: FileProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }

    /// Get File from byte `start` to the end, whatever the size is then (`x-ms-range:
    /// bytes=start-`). The properties describe the whole file. A `start` at or past the end is
    /// answered 416 `InvalidRange`.
    ///
    /// ```no_run
    /// # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let tail = file.download_from(1024).await?;
    /// # let _ = tail; Ok(()) }
    /// ```
    pub async fn download_from(&self, start: u64) -> Result<FileDownload> {
        let req = self
            .request(Method::Get)
            .header("x-ms-range", crate::http::range_from_header(start))
            .content_read();
        let resp = self.pipeline.send(req).await?;
        Ok(FileDownload {
            properties: FileProperties::from_headers(&resp.headers)?,
            body: resp.body,
        })
    }

    /// Get File for one byte range as a stream: the properties arrive first, the body is
    /// read as the caller polls it. For the whole file: [`FileClient::download_stream`].
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let stream = file.download_range_stream(0..1 << 20).await?; // the first MiB
    /// let bytes: Vec<bytes::Bytes> = stream.body.try_collect().await?;
    /// # let _ = bytes;
    /// # Ok(()) }
    /// ```
    pub async fn download_range_stream(&self, range: Range<u64>) -> Result<FileStream> {
        self.stream_get(Some(range)).await
    }

    /// One streaming Get File of the whole file or `range`.
    async fn stream_get(&self, range: Option<Range<u64>>) -> Result<FileStream> {
        let mut req = self.request(Method::Get);
        if let Some(r) = &range {
            req = req.header("x-ms-range", range_header(r)?);
        }
        let resp = self.pipeline.send_streaming(req).await?;
        let properties = FileProperties::from_headers(&resp.headers)?;
        Ok(FileStream {
            properties,
            body: Box::pin(resp.into_stream()),
        })
    }

    /// Get File Properties.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let props = file.get_properties().await?;
    /// println!("{} bytes, {:?}, {:?}", props.content_length, props.http_headers.content_type, props.smb.attributes);
    /// # Ok(()) }
    /// ```
    pub async fn get_properties(&self) -> Result<FileProperties> {
        let resp = self.pipeline.send(self.request(Method::Head)).await?;
        FileProperties::from_headers(&resp.headers)
    }

    /// Whether the file exists.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// if !file.exists().await? {
    ///     file.create(0, None).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn exists(&self) -> Result<bool> {
        crate::error::found(self.get_properties().await)
    }

    /// Set File Properties: resize to `size` (truncating or zero-extending) and/or set the
    /// content type.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// file.set_properties(Some(0), Some("text/plain"), None).await?; // truncate to empty
    /// # Ok(()) }
    /// ```
    pub async fn set_properties(
        &self,
        size: Option<u64>,
        content_type: Option<&str>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = self
            .request(Method::Put)
            .query("comp", "properties")
            .header_opt("x-ms-content-length", size.map(|s| s.to_string()))
            .header_opt("x-ms-content-type", content_type);
        let req = lease_header(req, lease);
        FileWrite::from_response(&self.pipeline.send(req).await?)
    }

    /// Set File Metadata, replacing all metadata (last writer wins: files have no If-Match).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use std::collections::BTreeMap;
    /// let mut metadata = file.get_properties().await?.metadata;
    /// metadata.insert("reviewed".into(), "yes".into());
    /// file.set_metadata(&metadata, None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_metadata(
        &self,
        metadata: &BTreeMap<String, String>,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let req = lease_header(self.request(Method::Put), lease);
        FileWrite::set_metadata(&self.pipeline, req, metadata).await
    }

    /// List Ranges: the written ranges of the whole file, or within `range`.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// let written = file.list_ranges(None).await?;
    /// for r in &written.ranges {
    ///     println!("data in {r:?}");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_ranges(&self, range: Option<Range<u64>>) -> Result<RangeList> {
        let mut req = self.request(Method::Get).query("comp", "rangelist");
        if let Some(r) = &range {
            req = req.header("x-ms-range", range_header(r)?);
        }
        RangeList::parse(&self.pipeline.send(req).await?)
    }
}
