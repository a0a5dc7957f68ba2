//! Multipart uploads: Put Block per part, Put Block List on completion.
//!
//! Block ids are the upload's random id and the part's index (`BlockId::numbered`), all of one
//! length, so a part sent twice (a retry) stages the same block, and two uploads to one blob
//! never mix their blocks: the first completion commits its own, and a later completion of the
//! other fails (its blocks were discarded with the commit), as on Azure for every client.
//!
//! The completion is conditioned by the `PutMode` found in the options' extensions
//! (`PutMultipartOptions::extensions.insert(PutMode::Create)`, or
//! [`BlobStore::put_multipart_mode`]): `Create` commits only if no blob exists, `Update` only
//! at the given ETag, recognised after a lost reply as a conditional put is.

use std::sync::{Arc, Mutex};

use ::object_store::multipart::{MultipartStore, PartId};
use ::object_store::path::Path;
use ::object_store::{
    Attribute, Attributes, MultipartId, MultipartUpload, PutMode, PutMultipartOptions, PutPayload,
    PutResult, Result as OsResult, TagSet, UpdateVersion, UploadPart,
};
use async_trait::async_trait;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use super::BlobStore;
use super::PUT_ID_METADATA;
use super::convert;
use super::errors::{Op, STORE};
use super::recognise::{Written, conditional, new_put_id};
use super::store::{conditions_of, expect_of, fail, put_result};
use crate::blob::{BlobClient, BlobWriteOptions, BlockId, BlockRef, CommitOptions};
use crate::conditions::Conditions;

/// The parts of an upload sent so far: their index and block (`None`: an empty part).
type Staged = Arc<Mutex<Vec<(usize, Option<BlockId>)>>>;

/// An upload started by `put_multipart_opts`.
#[derive(Debug)]
pub(crate) struct Upload {
    blob: BlobClient,
    location: Path,
    upload: String,
    next: usize,
    staged: Staged,
    write: BlobWriteOptions,
    mode: PutMode,
}

impl Upload {
    pub(crate) fn start(
        store: &BlobStore,
        location: &Path,
        opts: &PutMultipartOptions,
    ) -> OsResult<Upload> {
        let write = convert::write_options(&opts.attributes, &opts.tags)
            .map_err(|e| fail(e, location, Op::Plain))?;
        let mode = opts
            .extensions
            .get::<PutMode>()
            .cloned()
            .unwrap_or_default();
        if let PutMode::Update(_) | PutMode::Create = &mode {
            expect_of(&mode, location)?;
        }
        Ok(Upload {
            blob: store.blob(location)?,
            location: location.clone(),
            upload: new_put_id(),
            next: 0,
            staged: Arc::default(),
            write,
            mode,
        })
    }
}

/// Put Block of part `idx` of `upload` (nothing for an empty part).
async fn stage(
    blob: &BlobClient,
    location: &Path,
    upload: &str,
    idx: usize,
    data: PutPayload,
) -> OsResult<Option<BlockId>> {
    let body = Bytes::from(data);
    if body.is_empty() {
        return Ok(None);
    }
    let id = BlockId::numbered(upload, idx as u64).map_err(|e| fail(e, location, Op::Plain))?;
    blob.put_block(&id, body, &Conditions::none())
        .await
        .map_err(|e| fail(e, location, Op::Plain))?;
    Ok(Some(id))
}

/// Put Block List of `blocks` under `mode`, settling a lost reply of a conditional one.
async fn commit(
    blob: &BlobClient,
    location: &Path,
    blocks: Vec<BlockRef>,
    mut write: BlobWriteOptions,
    mode: &PutMode,
) -> OsResult<PutResult> {
    let Some((expect, op)) = expect_of(mode, location)? else {
        let options = CommitOptions::new(Conditions::none()).write_options(write);
        let w = blob
            .put_block_list(&blocks, &options)
            .await
            .map_err(|e| fail(e, location, Op::Plain))?;
        return Ok(put_result(Written::from(w)));
    };
    let id = new_put_id();
    write.metadata.insert(PUT_ID_METADATA.into(), id.clone());
    let options = CommitOptions::new(conditions_of(&expect)).write_options(write);
    let w = conditional(blob, &id, &expect, || {
        blob.put_block_list(&blocks, &options)
    })
    .await
    .map_err(|e| fail(e, location, op))?;
    Ok(put_result(w))
}

#[async_trait]
impl MultipartUpload for Upload {
    fn put_part(&mut self, data: PutPayload) -> UploadPart {
        let idx = self.next;
        self.next += 1;
        let blob = self.blob.clone();
        let location = self.location.clone();
        let upload = self.upload.clone();
        let staged = self.staged.clone();
        Box::pin(async move {
            let block = stage(&blob, &location, &upload, idx, data).await?;
            staged
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .push((idx, block));
            Ok(())
        })
    }

    async fn complete(&mut self) -> OsResult<PutResult> {
        let mut staged =
            std::mem::take(&mut *self.staged.lock().unwrap_or_else(|p| p.into_inner()));
        if staged.len() != self.next {
            return Err(::object_store::Error::Generic {
                store: STORE,
                source: format!(
                    "{} of {} parts were uploaded: await every put_part before complete",
                    staged.len(),
                    self.next
                )
                .into(),
            });
        }
        staged.sort_by_key(|(idx, _)| *idx);
        let blocks = staged
            .into_iter()
            .filter_map(|(_, b)| b.map(BlockRef::Latest))
            .collect();
        commit(
            &self.blob,
            &self.location,
            blocks,
            self.write.clone(),
            &self.mode,
        )
        .await
    }

    /// Nothing to send: Azure has no request that discards staged blocks; the service drops
    /// uncommitted blocks after a week, or with the next commit to the blob.
    async fn abort(&mut self) -> OsResult<()> {
        Ok(())
    }
}

/// What a `MultipartId` of [`BlobStore`] carries besides the upload's id: the attributes,
/// tags and mode of its completion (as JSON; a plain upload's id is just its id).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Spec {
    /// The upload's id (the stem of its block ids).
    u: String,
    /// Attributes: `cc`, `cd`, `ce`, `cl`, `ct` or `m:<metadata name>`, and the value.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    a: Vec<(String, String)>,
    /// Tags, form-encoded.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    t: String,
    /// `*`: create only; `=<etag>`: only at that ETag; absent: overwrite.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    m: Option<String>,
}

impl Spec {
    fn of(opts: &PutMultipartOptions) -> Spec {
        let mut spec = Spec {
            u: new_put_id(),
            t: opts.tags.encoded().to_string(),
            ..Spec::default()
        };
        for (attr, v) in &opts.attributes {
            let name = match attr {
                Attribute::CacheControl => "cc".to_string(),
                Attribute::ContentDisposition => "cd".to_string(),
                Attribute::ContentEncoding => "ce".to_string(),
                Attribute::ContentLanguage => "cl".to_string(),
                Attribute::ContentType => "ct".to_string(),
                Attribute::Metadata(k) => format!("m:{k}"),
                other => format!("?{other:?}"),
            };
            spec.a.push((name, v.as_ref().to_string()));
        }
        spec.m = match opts.extensions.get::<PutMode>() {
            Some(PutMode::Create) => Some("*".into()),
            Some(PutMode::Update(v)) => Some(format!("={}", v.e_tag.clone().unwrap_or_default())),
            _ => None,
        };
        spec
    }

    fn is_plain(&self) -> bool {
        self.a.is_empty() && self.t.is_empty() && self.m.is_none()
    }

    fn encode(&self) -> MultipartId {
        if self.is_plain() {
            self.u.clone()
        } else {
            serde_json::to_string(self).unwrap_or_else(|_| self.u.clone())
        }
    }

    fn decode(id: &MultipartId) -> OsResult<Spec> {
        if !id.starts_with('{') {
            return Ok(Spec {
                u: id.clone(),
                ..Spec::default()
            });
        }
        serde_json::from_str(id).map_err(|e| ::object_store::Error::Generic {
            store: STORE,
            source: format!("not a multipart id of BlobStore: {e}").into(),
        })
    }

    /// The write options and mode of the completion.
    fn completion(&self, location: &Path) -> OsResult<(BlobWriteOptions, PutMode)> {
        let mut attributes = Attributes::new();
        for (name, v) in &self.a {
            let attr = match name.as_str() {
                "cc" => Attribute::CacheControl,
                "cd" => Attribute::ContentDisposition,
                "ce" => Attribute::ContentEncoding,
                "cl" => Attribute::ContentLanguage,
                "ct" => Attribute::ContentType,
                m => match m.strip_prefix("m:") {
                    Some(k) => Attribute::Metadata(k.to_string().into()),
                    None => {
                        return Err(::object_store::Error::Generic {
                            store: STORE,
                            source: format!("attribute {m} is not supported by Azure Blob Storage")
                                .into(),
                        });
                    }
                },
            };
            attributes.insert(attr, v.clone().into());
        }
        let mut tags = TagSet::default();
        if !self.t.is_empty() {
            for (k, v) in convert::parse_tags(&self.t).map_err(|e| fail(e, location, Op::Plain))? {
                tags.push(&k, &v);
            }
        }
        let write =
            convert::write_options(&attributes, &tags).map_err(|e| fail(e, location, Op::Plain))?;
        let mode = match self.m.as_deref() {
            None => PutMode::Overwrite,
            Some("*") => PutMode::Create,
            Some(m) => PutMode::Update(UpdateVersion {
                e_tag: Some(m.trim_start_matches('=').to_string()),
                version: None,
            }),
        };
        Ok((write, mode))
    }
}

#[async_trait]
impl MultipartStore for BlobStore {
    /// A new upload's id (no request is sent: Azure stages blocks on the blob itself).
    async fn create_multipart(&self, path: &Path) -> OsResult<MultipartId> {
        self.blob(path)?;
        Ok(new_put_id())
    }

    /// As `create_multipart`; the attributes, tags and `PutMode` (from the extensions) are
    /// carried in the id and applied by `complete_multipart`.
    async fn create_multipart_opts(
        &self,
        path: &Path,
        opts: PutMultipartOptions,
    ) -> OsResult<MultipartId> {
        self.blob(path)?;
        let spec = Spec::of(&opts);
        let (_write, _mode) = spec.completion(path)?;
        Ok(spec.encode())
    }

    async fn put_part(
        &self,
        path: &Path,
        id: &MultipartId,
        part_idx: usize,
        data: PutPayload,
    ) -> OsResult<PartId> {
        let spec = Spec::decode(id)?;
        let block = stage(&self.blob(path)?, path, &spec.u, part_idx, data).await?;
        Ok(PartId {
            content_id: block.map(|b| b.as_str().to_string()).unwrap_or_default(),
        })
    }

    async fn complete_multipart(
        &self,
        path: &Path,
        id: &MultipartId,
        parts: Vec<PartId>,
    ) -> OsResult<PutResult> {
        let spec = Spec::decode(id)?;
        let (write, mode) = spec.completion(path)?;
        let mut blocks = Vec::with_capacity(parts.len());
        for p in parts.into_iter().filter(|p| !p.content_id.is_empty()) {
            let id = BlockId::from_base64(p.content_id).map_err(|e| fail(e, path, Op::Plain))?;
            blocks.push(BlockRef::Latest(id));
        }
        commit(&self.blob(path)?, path, blocks, write, &mode).await
    }

    /// Nothing to send (see [`MultipartUpload::abort`] of `put_multipart_opts`' uploads).
    async fn abort_multipart(&self, path: &Path, _id: &MultipartId) -> OsResult<()> {
        self.blob(path)?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_carry_the_completion() {
        let mut opts = PutMultipartOptions::default();
        let plain = Spec::of(&opts).encode();
        assert_eq!(plain.len(), 16);
        assert!(Spec::decode(&plain).unwrap().is_plain());
        opts.attributes
            .insert(Attribute::ContentType, "text/csv".into());
        opts.attributes
            .insert(Attribute::Metadata("k".into()), "v".into());
        opts.tags.push("t", "a b");
        opts.extensions.insert(PutMode::Update(UpdateVersion {
            e_tag: Some("\"0x1\"".into()),
            version: None,
        }));
        let id = Spec::of(&opts).encode();
        let (write, mode) = Spec::decode(&id)
            .unwrap()
            .completion(&Path::from("x"))
            .unwrap();
        assert_eq!(write.headers.content_type.as_deref(), Some("text/csv"));
        assert_eq!(write.metadata.get("k").map(String::as_str), Some("v"));
        assert_eq!(
            write.tags.unwrap().get("t").map(String::as_str),
            Some("a b")
        );
        assert!(matches!(mode, PutMode::Update(v) if v.e_tag.as_deref() == Some("\"0x1\"")));
    }
}
