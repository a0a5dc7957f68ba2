//! Listing: `list`, `list_with_delimiter` and `PaginatedListStore` over List Blobs.

use std::borrow::Cow;

use ::object_store::list::{PaginatedListOptions, PaginatedListResult, PaginatedListStore};
use ::object_store::path::Path;
use ::object_store::{ListResult, ObjectMeta, Result as OsResult};
use async_trait::async_trait;
use futures_util::stream::{BoxStream, StreamExt};

use super::BlobStore;
use super::convert::to_chrono;
use super::errors::{Op, to_object_store};
use crate::blob::{BlobItem, BlobListItem, ListOptions};

/// The `ObjectMeta` of a listed blob.
fn meta(store: &BlobStore, b: BlobItem) -> OsResult<ObjectMeta> {
    Ok(ObjectMeta {
        location: store.path_of(&b.name)?,
        last_modified: b.last_modified.map(to_chrono).unwrap_or_default(),
        size: b.content_length.unwrap_or(0),
        e_tag: b.etag.map(|e| e.as_str().to_string()),
        version: b.version_id,
    })
}

/// The path of a listed prefix (`a/b/` → `a/b`).
fn prefix_path(store: &BlobStore, name: &str, delimiter: &str) -> OsResult<Path> {
    store.path_of(name.strip_suffix(delimiter).unwrap_or(name))
}

fn options(prefix: Option<String>, delimiter: Option<&str>) -> ListOptions {
    ListOptions {
        prefix,
        delimiter: delimiter.map(str::to_string),
        ..ListOptions::default()
    }
}

fn listing_error(e: crate::Error, prefix: &Option<String>) -> ::object_store::Error {
    to_object_store(e, prefix.as_deref().unwrap_or(""), Op::Plain)
}

/// Every blob under `prefix` (segment-wise), page by page.
pub(super) fn list(
    store: &BlobStore,
    prefix: Option<&Path>,
) -> BoxStream<'static, OsResult<ObjectMeta>> {
    let blob_prefix = store.list_prefix(prefix);
    let store = store.clone();
    let shown = blob_prefix.clone();
    store
        .container
        .list_blobs(options(blob_prefix, None))
        .filter_map(move |item| {
            let r = match item {
                Ok(BlobListItem::Blob(b)) => Some(meta(&store, b)),
                Ok(BlobListItem::Prefix(_)) => None,
                Err(e) => Some(Err(listing_error(e, &shown))),
            };
            std::future::ready(r)
        })
        .boxed()
}

/// The blobs and prefixes one level under `prefix`.
pub(super) async fn list_with_delimiter(
    store: &BlobStore,
    prefix: Option<&Path>,
) -> OsResult<ListResult> {
    let blob_prefix = store.list_prefix(prefix);
    let opts = options(blob_prefix.clone(), Some("/"));
    let mut marker: Option<String> = None;
    let mut result = ListResult {
        common_prefixes: Vec::new(),
        objects: Vec::new(),
        extensions: Default::default(),
    };
    loop {
        let page = store
            .container
            .list_blobs_page(&opts, marker.as_deref())
            .await
            .map_err(|e| listing_error(e, &blob_prefix))?;
        for item in page.items {
            match item {
                BlobListItem::Blob(b) => result.objects.push(meta(store, b)?),
                BlobListItem::Prefix(p) => {
                    result.common_prefixes.push(prefix_path(store, &p, "/")?)
                }
            }
        }
        match page.next_marker {
            Some(m) => marker = Some(m),
            None => return Ok(result),
        }
    }
}

#[async_trait]
impl PaginatedListStore for BlobStore {
    /// One page of List Blobs: `prefix` is a raw key prefix (`fo` lists `foo/...` and
    /// `fob/...`), `max_keys` at most 5,000, `page_token` the service's marker. Azure has no
    /// exclusive start key: with `offset`, the keys up to and including it are dropped from
    /// the page (a page may then hold fewer keys than `max_keys`, or none, with a token).
    async fn list_paginated(
        &self,
        prefix: Option<&str>,
        opts: PaginatedListOptions,
    ) -> OsResult<PaginatedListResult> {
        let blob_prefix = self.raw_prefix(prefix);
        let delimiter = opts.delimiter.as_deref().map(Cow::Borrowed);
        let mut list = options(blob_prefix.clone(), delimiter.as_deref());
        if let Some(n) = opts.max_keys {
            list.max_results = Some(n.clamp(1, 5000) as u32);
        }
        let page = self
            .container
            .list_blobs_page(&list, opts.page_token.as_deref())
            .await
            .map_err(|e| listing_error(e, &blob_prefix))?;
        let mut result = ListResult {
            common_prefixes: Vec::new(),
            objects: Vec::new(),
            extensions: Default::default(),
        };
        for item in page.items {
            match item {
                BlobListItem::Blob(b) => {
                    let m = meta(self, b)?;
                    if opts
                        .offset
                        .as_deref()
                        .is_none_or(|o| m.location.as_ref() > o)
                    {
                        result.objects.push(m);
                    }
                }
                BlobListItem::Prefix(p) => {
                    let d = delimiter.as_deref().unwrap_or("/");
                    result.common_prefixes.push(prefix_path(self, &p, d)?)
                }
            }
        }
        Ok(PaginatedListResult {
            result,
            page_token: page.next_marker,
        })
    }
}
