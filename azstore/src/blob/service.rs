//! Account- and container-level blob operations: Get Account Information, Find Blobs by Tags
//! (account and container), and restoring a deleted container.

use serde::Deserialize;

use crate::blob::client::{BlobServiceClient, ContainerClient};
use crate::blob::names::validate_container_name;
use crate::blob::tags::Tags;
use crate::blob::xml;
use crate::error::{Error, Result};
use crate::http::{Method, Request};
use crate::paging::{Page, ResultStream, every_page};

/// What Get Account Information returns.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// if blobs.account_info().await?.is_hns_enabled == Some(true) {
///     println!("a Data Lake Storage Gen2 account");
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct AccountInfo {
    /// `x-ms-sku-name`, e.g. `Standard_LRS`, `Premium_LRS`.
    pub sku_name: String,
    /// `x-ms-account-kind`, e.g. `StorageV2`, `BlobStorage`, `BlockBlobStorage`.
    pub account_kind: String,
    /// `x-ms-is-hns-enabled`: hierarchical namespace (Data Lake Storage Gen2).
    pub is_hns_enabled: Option<bool>,
}

/// A blob found by Find Blobs by Tags.
///
/// ```no_run
/// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
/// use futures_util::TryStreamExt;
/// let found: Vec<_> = blobs.find_blobs_by_tags(r#""project" = 'apollo'"#).try_collect().await?;
/// for b in found {
///     let client = blobs.container(&b.container)?.blob(&b.name)?;
///     println!("{} ({:?})", client.url(), b.tags);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaggedBlob {
    /// The blob name.
    pub name: String,
    /// Its container.
    pub container: String,
    /// The tags that matched (those the expression names).
    pub tags: Tags,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
struct RawFilterResults {
    #[serde(default)]
    blobs: RawFilterBlobs,
    #[serde(default)]
    next_marker: Option<String>,
}

impl xml::Document for RawFilterResults {
    const ROOT: &'static str = "EnumerationResults";
}

#[derive(Debug, Deserialize, Default)]
struct RawFilterBlobs {
    #[serde(rename = "Blob", default)]
    items: Vec<RawFilterBlob>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawFilterBlob {
    name: xml::RawName,
    #[serde(default)]
    container_name: String,
    #[serde(default)]
    tags: Option<xml::RawTags>,
}

fn check_where(expr: &str) -> Result<()> {
    if expr.trim().is_empty() {
        return Err(Error::invalid_input(
            "a tag filter must not be empty, e.g. \"status\" = 'done'",
        ));
    }
    if expr.len() > 4096 {
        return Err(Error::invalid_input(
            "a tag filter is at most 4096 characters",
        ));
    }
    Ok(())
}

fn filter_request(
    req: Request,
    expr: &str,
    max_results: Option<u32>,
    marker: Option<&str>,
) -> Result<Request> {
    check_where(expr)?;
    let mut req = req.query("comp", "blobs").query("where", expr);
    if let Some(n) = max_results {
        if !(1..=5000).contains(&n) {
            return Err(Error::invalid_input("max_results must be 1-5000"));
        }
        req = req.query("maxresults", n.to_string());
    }
    if let Some(m) = marker {
        req = req.query("marker", m);
    }
    Ok(req)
}

fn filter_page(body: &[u8]) -> Result<Page<TaggedBlob>> {
    let raw: RawFilterResults = xml::parse(body, "Find Blobs by Tags")?;
    Ok(Page {
        items: raw
            .blobs
            .items
            .into_iter()
            .map(|b| TaggedBlob {
                name: b.name.decoded(),
                container: b.container_name,
                tags: b.tags.map(xml::RawTags::into_tags).unwrap_or_default(),
            })
            .collect(),
        next_marker: raw.next_marker.filter(|m| !m.is_empty()),
    })
}

/// The account or a container: where Find Blobs by Tags searches.
trait TagScope {
    /// The request a search starts from.
    fn tag_search(&self) -> Request;
}

impl TagScope for BlobServiceClient {
    fn tag_search(&self) -> Request {
        Request::new(Method::Get, "")
    }
}

impl TagScope for ContainerClient {
    fn tag_search(&self) -> Request {
        self.request(Method::Get)
    }
}

/// `find_blobs_by_tags_page` and `find_blobs_by_tags` of a [`TagScope`], written once; each
/// method's documentation is given per client.
macro_rules! find_blobs_by_tags {
    ($ty:ty { $(#[$page:meta])* page; $(#[$all:meta])* all; }) => {
        impl $ty {
            $(#[$page])*
            pub async fn find_blobs_by_tags_page(
                &self,
                expr: &str,
                max_results: Option<u32>,
                marker: Option<&str>,
            ) -> Result<Page<TaggedBlob>> {
                let req = filter_request(self.tag_search(), expr, max_results, marker)?;
                let resp = self.pipeline().send(req).await?;
                filter_page(&resp.body)
            }

            $(#[$all])*
            pub fn find_blobs_by_tags(&self, expr: &str) -> ResultStream<TaggedBlob> {
                every_page(self, expr.to_string(), |scope, expr, marker| async move {
                    scope
                        .find_blobs_by_tags_page(&expr, None, marker.as_deref())
                        .await
                })
            }
        }
    };
}

find_blobs_by_tags!(BlobServiceClient {
    /// Find Blobs by Tags across all containers: one page of blobs whose index tags satisfy
    /// `expr` (e.g. `"status" = 'done' AND "year" >= '2026'`).
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// let page = blobs.find_blobs_by_tags_page(r#""status" = 'done'"#, Some(100), None).await?;
    /// for b in &page.items {
    ///     println!("{}/{}", b.container, b.name);
    /// }
    /// # Ok(()) }
    /// ```
    page;
    /// Find Blobs by Tags across all containers, following `NextMarker` to the end.
    ///
    /// ```no_run
    /// # async fn f(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// use azstore::paging::TryStreamExt;
    /// let done: Vec<_> = blobs.find_blobs_by_tags("\"status\" = 'done'").try_collect().await?;
    /// # let _ = done; Ok(()) }
    /// ```
    all;
});

find_blobs_by_tags!(ContainerClient {
    /// Find Blobs by Tags within this container: one page.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// let page = container.find_blobs_by_tags_page(r#""year" >= '2026'"#, None, None).await?;
    /// println!("{} found, more: {}", page.items.len(), page.next_marker.is_some());
    /// # Ok(()) }
    /// ```
    page;
    /// Find Blobs by Tags within this container, following `NextMarker` to the end.
    ///
    /// ```no_run
    /// # async fn demo(container: azstore::blob::ContainerClient) -> azstore::Result<()> {
    /// use futures_util::TryStreamExt;
    /// let mut found = container.find_blobs_by_tags(r#""status" = 'failed'"#);
    /// while let Some(b) = found.try_next().await? {
    ///     println!("{} {:?}", b.name, b.tags);
    /// }
    /// # Ok(()) }
    /// ```
    all;
});

impl BlobServiceClient {
    /// Get Account Information: SKU and account kind.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// let info = blobs.account_info().await?;
    /// println!("{} {} (HNS: {:?})", info.sku_name, info.account_kind, info.is_hns_enabled);
    /// # Ok(()) }
    /// ```
    pub async fn account_info(&self) -> Result<AccountInfo> {
        let resp = self
            .pipeline()
            .send(
                Request::new(Method::Get, "")
                    .query("restype", "account")
                    .query("comp", "properties"),
            )
            .await?;
        Ok(AccountInfo {
            sku_name: resp.headers.require("x-ms-sku-name")?.to_string(),
            account_kind: resp.headers.require("x-ms-account-kind")?.to_string(),
            is_hns_enabled: resp.headers.parse("x-ms-is-hns-enabled")?,
        })
    }

    /// Restore Container (Undelete): brings back the soft-deleted container `deleted_name`
    /// in the version `deleted_version` (from a listing of deleted containers) under the same
    /// name. Fails with 409 `ContainerAlreadyExists` when a container of that name exists.
    ///
    /// ```no_run
    /// # async fn demo(blobs: azstore::blob::BlobServiceClient) -> azstore::Result<()> {
    /// # let version = String::new();
    /// // `version` comes from a listing of deleted containers.
    /// let restored = blobs.restore_container("reports", &version).await?;
    /// println!("{} is back", restored.name());
    /// # Ok(()) }
    /// ```
    pub async fn restore_container(
        &self,
        deleted_name: &str,
        deleted_version: &str,
    ) -> Result<ContainerClient> {
        validate_container_name(deleted_name)?;
        if deleted_version.is_empty() {
            return Err(Error::invalid_input(
                "the deleted container version is required",
            ));
        }
        let req = Request::new(Method::Put, deleted_name)
            .query("restype", "container")
            .query("comp", "undelete")
            .header("x-ms-deleted-container-name", deleted_name)
            .header("x-ms-deleted-container-version", deleted_version);
        self.pipeline().send(req).await?;
        self.container(deleted_name)
    }
}

crate::service_properties::service_properties!(
    BlobServiceClient,
    crate::service_properties::Sections {
        service: "Blob",
        logging: true,
        blob_only: true
    }
);
crate::service_properties::service_stats!(
    BlobServiceClient,
    "blob",
    "azstore::blob::BlobServiceClient"
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_results() {
        let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"https://a.blob.core.windows.net/\"><Where>\"a\" = 'b'</Where><Blobs><Blob><Name>x/1</Name><ContainerName>c1</ContainerName><Tags><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tags></Blob><Blob><Name>y</Name><ContainerName>c2</ContainerName></Blob></Blobs><NextMarker>m1</NextMarker></EnumerationResults>";
        let p = filter_page(body.as_bytes()).unwrap();
        assert_eq!(p.items.len(), 2);
        assert_eq!(p.items[0].container, "c1");
        assert_eq!(p.items[0].tags.get("a").map(String::as_str), Some("b"));
        assert!(p.items[1].tags.is_empty());
        assert_eq!(p.next_marker.as_deref(), Some("m1"));
        let last =
            filter_page(b"<EnumerationResults><Blobs/><NextMarker/></EnumerationResults>").unwrap();
        assert!(last.items.is_empty() && last.next_marker.is_none());
        assert!(filter_page(b"<EnumerationResults><Blobs><Blob>").is_err());
    }
}
