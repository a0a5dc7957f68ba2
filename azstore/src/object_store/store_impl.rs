//! The `ObjectStore` implementation of [`BlobStore`]: each method maps to the blob operations
//! of `store.rs`, `list.rs` and `multipart.rs`.

use ::object_store::path::Path;
use ::object_store::{
    CopyMode, CopyOptions as OsCopyOptions, GetOptions, GetResult, ListResult, MultipartUpload,
    ObjectMeta, ObjectStore, PutMultipartOptions, PutOptions as OsPutOptions, PutPayload,
    PutResult, RenameOptions, RenameTargetMode, Result as OsResult,
};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream, StreamExt};

use super::errors::Op;
use super::store::{BlobStore, Fail, fail};
use super::{list, multipart};
use crate::blob::MAX_BATCH_SUBREQUESTS;
use crate::conditions::Conditions;

/// The Blob Batch requests of one `delete_stream` in flight at once.
const BATCHES_IN_FLIGHT: usize = 8;

#[async_trait]
impl ObjectStore for BlobStore {
    async fn put_opts(
        &self,
        location: &Path,
        payload: PutPayload,
        opts: OsPutOptions,
    ) -> OsResult<PutResult> {
        self.put_blob(location, Bytes::from(payload), opts).await
    }

    async fn put_multipart_opts(
        &self,
        location: &Path,
        opts: PutMultipartOptions,
    ) -> OsResult<Box<dyn MultipartUpload>> {
        Ok(Box::new(multipart::Upload::start(self, location, &opts)?))
    }

    async fn get_opts(&self, location: &Path, options: GetOptions) -> OsResult<GetResult> {
        self.get_blob(location, options).await.map_err(|f| match f {
            Fail::Az(e) => fail(e, location, Op::Plain),
            Fail::Os(e) => e,
        })
    }

    /// Paths in chunks of what is ready (at most 256, never waiting for a full chunk), each
    /// chunk one Blob Batch request (a single path: Delete Blob), up to
    /// `BATCHES_IN_FLIGHT` at a time; one result per path, in order.
    fn delete_stream(
        &self,
        locations: BoxStream<'static, OsResult<Path>>,
    ) -> BoxStream<'static, OsResult<Path>> {
        let store = self.clone();
        locations
            .ready_chunks(MAX_BATCH_SUBREQUESTS)
            .map(move |chunk| {
                let store = store.clone();
                async move { stream::iter(store.delete_batch(chunk).await) }
            })
            .buffered(BATCHES_IN_FLIGHT)
            .flatten()
            .boxed()
    }

    fn list(&self, prefix: Option<&Path>) -> BoxStream<'static, OsResult<ObjectMeta>> {
        list::list(self, prefix)
    }

    async fn list_with_delimiter(&self, prefix: Option<&Path>) -> OsResult<ListResult> {
        list::list_with_delimiter(self, prefix).await
    }

    async fn copy_opts(&self, from: &Path, to: &Path, options: OsCopyOptions) -> OsResult<()> {
        self.copy_blob(from, to, options.mode == CopyMode::Create, false)
            .await
            .map(drop)
    }

    /// Copy Blob, then Delete Blob of the source under `If-Match` of the version copied: a
    /// source rewritten meanwhile is kept, and the call returns `Precondition`.
    async fn rename_opts(&self, from: &Path, to: &Path, options: RenameOptions) -> OsResult<()> {
        let create = options.target_mode == RenameTargetMode::Create;
        let copied = self
            .copy_blob(from, to, create, true)
            .await?
            .expect("a pinned copy reports the version it copied");
        let src = self.blob(from)?;
        match src.delete(&Conditions::if_match(&copied)).await {
            Ok(()) => Ok(()),
            // A delete whose reply was lost and that is then refused or finds nothing: ours
            // applied if the source is gone.
            Err(e) if e.is_not_found() => Ok(()),
            Err(e) => Err(fail(e, from, Op::Plain)),
        }
    }
}
