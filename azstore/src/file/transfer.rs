//! The File side of the transfer engine. The File REST API has no `If-Match`, so every range
//! response's ETag is compared with the first one's; uploads are Create File plus parallel
//! Put Range (last writer wins range by range: hold a lease if others may write).

use std::ops::Range;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt};

use crate::conditions::LeaseId;
use crate::error::{Error, ErrorKind, Result};
use crate::file::{
    FileClient, FileDownload, FileProperties, FileStream, FileWrite, TransferOptions,
};
use crate::http::range_header;
use crate::http::{Headers, Method, StreamingResponse};
use crate::storage::open_first;
use crate::transfer::download::{FirstProps, Plan, RangeSource, Version};
use crate::transfer::progress::Tracker;
use crate::transfer::upload::{
    BlockSink, Blocks, FileBlocks, ReaderBlocks, SliceBlocks, read_error, stage_all,
};

impl FirstProps for FileProperties {
    fn parse(headers: &Headers) -> Result<Self> {
        FileProperties::from_headers(headers)
    }

    fn version(&self) -> Version {
        Version {
            etag: self.etag.clone(),
            total: self.content_length,
        }
    }
}

impl RangeSource for FileClient {
    type Props = FileProperties;

    async fn open(&self, len: u64) -> Result<(FileProperties, Version, StreamingResponse)> {
        open_first(&self.pipeline, || self.request(Method::Get), len).await
    }

    async fn range(&self, range: Range<u64>, _version: &Version) -> Result<StreamingResponse> {
        let req = self
            .request(Method::Get)
            .header("x-ms-range", range_header(&range));
        self.pipeline.send_streaming(req).await
    }

    fn is_change(&self, _e: &Error) -> bool {
        // No If-Match on File: a change shows as a different ETag on a 206, never as a 412.
        false
    }

    fn changed(&self, version: &Version, _cause: Option<Error>) -> Error {
        Error::new(
            ErrorKind::Conflict,
            format!(
                "the file changed while it was being downloaded (its ETag changed between ranges; first {})",
                version.etag
            ),
        )
        .hint(
            "read it again, or have the download start over on the new version by itself: \
             TransferOptions::default().on_change(OnChange::Restart { max_restarts: 3 })",
        )
        .changed_during_read()
    }

    fn body_timeout(&self) -> Duration {
        self.pipeline.attempt_timeout()
    }
}

fn plan(options: &TransferOptions) -> Plan {
    Plan {
        chunk: options.range_size,
        concurrency: options.max_concurrency,
        on_change: options.on_change,
        tracker: Tracker::new(options.progress.as_ref()),
    }
}

/// Put Range for each block at its offset; remembers the last write.
#[derive(Clone)]
struct RangeStager {
    file: FileClient,
    lease: Option<LeaseId>,
    last: Arc<Mutex<Option<FileWrite>>>,
}

impl BlockSink for RangeStager {
    async fn stage(&self, _index: u64, offset: u64, data: Bytes) -> Result<()> {
        let w = self
            .file
            .put_range(offset, data, self.lease.as_ref())
            .await?;
        *self.last.lock().unwrap_or_else(|e| e.into_inner()) = Some(w);
        Ok(())
    }
}

impl FileClient {
    /// Downloads the whole file into memory (one buffer allocated at the file's size) with
    /// ranges of `options.range_size`, `options.max_concurrency` in flight. Every range must come
    /// from the version of the first: a change fails with [`ErrorKind::Conflict`] or starts
    /// over, as `options.on_change` says — never a torn mix of versions.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// let whole = file.download(&TransferOptions::default().max_concurrency(8)).await?;
    /// println!("{} bytes", whole.body.len());
    /// # Ok(()) }
    /// ```
    pub async fn download(&self, options: &TransferOptions) -> Result<FileDownload> {
        options.check()?;
        let (properties, body) = crate::transfer::to_vec(self, &plan(options)).await?;
        Ok(FileDownload {
            body: Bytes::from(body),
            properties,
        })
    }

    /// Downloads the whole file into the front of `buffer` (see [`FileClient::download`]);
    /// returns the properties of the version read (`content_length` bytes were written). A
    /// buffer smaller than the file is an `InvalidInput` error.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// let mut buffer = vec![0u8; 64 << 20]; // reused for many files
    /// let props = file.download_into(&mut buffer, &TransferOptions::default()).await?;
    /// let content = &buffer[..props.content_length as usize];
    /// # let _ = content;
    /// # Ok(()) }
    /// ```
    pub async fn download_into(
        &self,
        buffer: &mut [u8],
        options: &TransferOptions,
    ) -> Result<FileProperties> {
        options.check()?;
        let (props, _) = crate::transfer::into_slice(self, &plan(options), buffer).await?;
        Ok(props)
    }

    /// Downloads the whole file to `path` with parallel ranges written at their offsets
    /// (memory: about `max_concurrency × range_size`). The data goes to a new file beside `path`
    /// (`path` plus a random suffix and `.partial`, created only if no file or link is there)
    /// first and is renamed into place only when complete, so `path` never holds a torn or
    /// partial copy; a change of the file fails or starts over as `options.on_change` says.
    ///
    /// ```no_run
    /// # async fn f(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// let p = file.download_to_file("/tmp/q3.csv", &TransferOptions::default().max_concurrency(8)).await?;
    /// # let _ = p; Ok(()) }
    /// ```
    pub async fn download_to_file(
        &self,
        path: impl AsRef<Path>,
        options: &TransferOptions,
    ) -> Result<FileProperties> {
        options.check()?;
        crate::transfer::to_file(self, &plan(options), path.as_ref()).await
    }

    /// Streams the whole file in order with `options.max_concurrency` ranges read ahead (memory:
    /// about `max_concurrency + 1` ranges). A change of the file ends the stream with
    /// [`ErrorKind::Conflict`].
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// use azstore::file::TransferOptions;
    /// let mut stream = file.download_stream(&TransferOptions::default()).await?;
    /// while let Some(chunk) = stream.body.try_next().await? {
    ///     println!("{} bytes", chunk.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn download_stream(&self, options: &TransferOptions) -> Result<FileStream> {
        options.check()?;
        let (properties, body) = crate::transfer::to_stream(self, &plan(options)).await?;
        Ok(FileStream { properties, body })
    }

    /// Uploads `data` as the whole file: Create File with its size, then Put Range per
    /// `options.range_size` bytes with at most `options.max_concurrency` requests in flight.
    /// Any size works; a leased file needs the lease id. Last writer wins range by range:
    /// hold a lease if other writers may be active.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use bytes::Bytes;
    /// use azstore::file::TransferOptions;
    /// let data = Bytes::from(vec![7u8; 10 << 20]);
    /// file.upload(data, &TransferOptions::default().content_type("application/octet-stream"), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload(
        &self,
        data: Bytes,
        options: &TransferOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        options.check()?;
        let size = data.len() as u64;
        let blocks = SliceBlocks {
            body: data,
            size: options.range_size as usize,
        };
        self.upload_ranges(blocks, size, options, lease).await
    }

    /// Uploads the file at `path` (see [`FileClient::upload`]): ranges read with positioned
    /// reads, `options.max_concurrency` at a time (memory: about `max_concurrency × range_size`).
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// file.upload_file("/var/backups/db.dump", &TransferOptions::default(), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload_file(
        &self,
        path: impl AsRef<Path>,
        options: &TransferOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        options.check()?;
        let blocks = FileBlocks::open(path.as_ref(), options.range_size as usize).await?;
        let size = blocks.end;
        self.upload_ranges(blocks, size, options, lease).await
    }

    /// Uploads exactly `len` bytes from `reader` (see [`FileClient::upload`]; Create File
    /// needs the size first). Each range is read once into its own buffer (memory: about
    /// `max_concurrency × range_size`). A reader that ends early or has more than `len` bytes is
    /// an error after the ranges it gave were written.
    ///
    /// ```no_run
    /// # async fn demo(file: azstore::file::FileClient) -> azstore::Result<()> {
    /// use azstore::file::TransferOptions;
    /// let f = tokio::fs::File::open("/var/log/app.log").await.map_err(|e| azstore::Error::invalid_input(e.to_string()))?;
    /// let len = f.metadata().await.map_err(|e| azstore::Error::invalid_input(e.to_string()))?.len();
    /// file.upload_reader(f, len, &TransferOptions::default(), None).await?;
    /// # Ok(()) }
    /// ```
    pub async fn upload_reader<R>(
        &self,
        reader: R,
        len: u64,
        options: &TransferOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite>
    where
        R: AsyncRead + Send + Unpin,
    {
        options.check()?;
        let mut reader = reader;
        let blocks = ReaderBlocks::new((&mut reader).take(len), options.range_size as usize);
        let written = self.upload_ranges(blocks, len, options, lease).await?;
        let mut probe = [0u8; 1];
        if reader.read(&mut probe).await.map_err(read_error)? > 0 {
            return Err(Error::invalid_input(format!(
                "the reader has more than the {len} bytes announced"
            )));
        }
        Ok(written)
    }

    async fn upload_ranges<B: Blocks>(
        &self,
        mut blocks: B,
        size: u64,
        options: &TransferOptions,
        lease: Option<&LeaseId>,
    ) -> Result<FileWrite> {
        let mut create = options.create.clone().size(size);
        create.lease = lease.cloned();
        let created = self.create_with(&create).await?;
        let tracker = Tracker::new(options.progress.as_ref());
        tracker.start(Some(size));
        let stager = RangeStager {
            file: self.clone(),
            lease: lease.cloned(),
            last: Arc::default(),
        };
        let staged = stage_all(
            &mut blocks,
            &stager,
            options.max_concurrency,
            u64::MAX,
            &tracker,
        )
        .await?;
        if staged.bytes != size {
            return Err(Error::invalid_input(format!(
                "the source ended after {} of the {size} bytes announced",
                staged.bytes
            )));
        }
        let last = stager.last.lock().unwrap_or_else(|e| e.into_inner()).take();
        match last {
            None => Ok(created),
            Some(w) if staged.blocks == 1 || options.max_concurrency == 1 => Ok(w),
            Some(_) => {
                // Ranges completed in any order: ask which version the file ended up at.
                let p = self.get_properties().await?;
                Ok(FileWrite {
                    etag: p.etag,
                    last_modified: p.last_modified,
                })
            }
        }
    }
}
