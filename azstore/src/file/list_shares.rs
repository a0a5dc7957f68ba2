//! List Shares.

use std::collections::BTreeMap;

use serde::Deserialize;
use time::OffsetDateTime;

use crate::conditions::ETag;
use crate::error::{Error, Result};
use crate::file::ShareServiceClient;
use crate::http::{Method, Request};

/// A share as listed.
///
/// ```no_run
/// # async fn demo(shares: azstore::file::ShareServiceClient) -> azstore::Result<()> {
/// use azstore::file::ListSharesOptions;
/// let page = shares.list_shares_page(&ListSharesOptions::default().with_metadata(), None).await?;
/// for share in &page.shares {
///     println!("{} {:?}", share.name, share.metadata);
/// }
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ShareItem {
    /// The share name.
    pub name: String,
    /// Set for a share snapshot (listed only when asked for).
    pub snapshot: Option<String>,
    /// The ETag, quoted like the `ETag` header (the listing sends it without quotes).
    pub etag: Option<ETag>,
    /// Last-Modified.
    pub last_modified: Option<OffsetDateTime>,
    /// The quota in GiB.
    pub quota_gib: Option<u64>,
    /// Metadata (when asked for).
    pub metadata: BTreeMap<String, String>,
    /// A soft-deleted share (listed only when asked for), restorable by its `version`.
    pub deleted: bool,
    /// The version of a deleted share.
    pub version: Option<String>,
    /// Access tier.
    pub access_tier: Option<String>,
}

/// One page of List Shares.
///
/// ```no_run
/// # async fn demo(shares: azstore::file::ShareServiceClient) -> azstore::Result<()> {
/// use azstore::file::ListSharesOptions;
/// let page = shares.list_shares_page(&ListSharesOptions::default(), None).await?;
/// println!("{} shares; more: {}", page.shares.len(), page.next_marker.is_some());
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SharePage {
    /// The shares of this page.
    pub shares: Vec<ShareItem>,
    /// The marker of the next page; `None` on the last page (Azure sends `<NextMarker />`).
    pub next_marker: Option<String>,
}

/// Options of List Shares.
///
/// ```no_run
/// # async fn demo(shares: azstore::file::ShareServiceClient) -> azstore::Result<()> {
/// use azstore::file::ListSharesOptions;
/// let options = ListSharesOptions::default().prefix("team-").with_metadata().with_snapshots();
/// let page = shares.list_shares_page(&options, None).await?;
/// # let _ = page;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
#[must_use]
pub struct ListSharesOptions {
    /// Only shares whose name starts with this.
    pub prefix: Option<String>,
    /// Page size, 1–5000.
    pub max_results: Option<u32>,
    /// Include each share's metadata (`include=metadata`).
    pub include_metadata: bool,
    /// Include share snapshots (`include=snapshots`; [`ShareItem::snapshot`] is set).
    pub include_snapshots: bool,
    /// Include soft-deleted shares (`include=deleted`; [`ShareItem::deleted`] is set).
    pub include_deleted: bool,
}

impl ListSharesOptions {
    /// Only shares whose name starts with `prefix`.
    ///
    /// ```
    /// let options = azstore::file::ListSharesOptions::default().prefix("team-");
    /// # let _ = options;
    /// ```
    pub fn prefix(mut self, v: impl Into<String>) -> Self {
        self.prefix = Some(v.into());
        self
    }

    /// At most this many shares per page (1–5000; default: not sent, the service's
    /// 5000). The stream still lists every share, one page at a time.
    ///
    /// ```
    /// let options = azstore::file::ListSharesOptions::default().max_results(100);
    /// # let _ = options;
    /// ```
    pub fn max_results(mut self, v: u32) -> Self {
        self.max_results = Some(v);
        self
    }

    /// Lists each share's metadata.
    ///
    /// ```
    /// let options = azstore::file::ListSharesOptions::default().with_metadata();
    /// assert!(options.include_metadata);
    /// ```
    pub fn with_metadata(mut self) -> Self {
        self.include_metadata = true;
        self
    }

    /// Lists share snapshots too.
    pub fn with_snapshots(mut self) -> Self {
        self.include_snapshots = true;
        self
    }

    /// Lists soft-deleted shares too.
    pub fn with_deleted(mut self) -> Self {
        self.include_deleted = true;
        self
    }

    fn include(&self) -> Option<String> {
        let parts: Vec<&str> = [
            (self.include_snapshots, "snapshots"),
            (self.include_metadata, "metadata"),
            (self.include_deleted, "deleted"),
        ]
        .iter()
        .filter(|(on, _)| *on)
        .map(|(_, n)| *n)
        .collect();
        (!parts.is_empty()).then(|| parts.join(","))
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawList {
    #[serde(default)]
    shares: RawShares,
    #[serde(default)]
    next_marker: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawShares {
    #[serde(rename = "Share", default)]
    items: Vec<RawShare>,
}

#[derive(Deserialize)]
#[serde(rename_all = "PascalCase")]
struct RawShare {
    name: String,
    #[serde(default)]
    snapshot: Option<String>,
    #[serde(default)]
    properties: RawShareProperties,
    #[serde(default)]
    metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deleted: Option<bool>,
    #[serde(default)]
    version: Option<String>,
}

#[derive(Deserialize, Default)]
struct RawShareProperties {
    #[serde(rename = "Last-Modified", default)]
    last_modified: Option<String>,
    #[serde(rename = "Etag", default)]
    etag: Option<String>,
    #[serde(rename = "Quota", default)]
    quota: Option<u64>,
    #[serde(rename = "AccessTier", default)]
    access_tier: Option<String>,
}

impl SharePage {
    pub(crate) fn parse(body: &[u8]) -> Result<SharePage> {
        let raw: RawList = crate::http::checks::from_xml(body, "List Shares")?;
        Ok(SharePage {
            shares: raw
                .shares
                .items
                .into_iter()
                .map(|s| ShareItem {
                    name: s.name,
                    snapshot: s.snapshot.filter(|v| !v.is_empty()),
                    etag: crate::conditions::listed_etag(s.properties.etag),
                    last_modified: s
                        .properties
                        .last_modified
                        .as_deref()
                        .and_then(crate::time_fmt::parse_http_date),
                    quota_gib: s.properties.quota,
                    metadata: s.metadata.unwrap_or_default(),
                    deleted: s.deleted.unwrap_or(false),
                    version: s.version.filter(|v| !v.is_empty()),
                    access_tier: s.properties.access_tier,
                })
                .collect(),
            next_marker: raw.next_marker.filter(|m| !m.is_empty()),
        })
    }
}

impl ShareServiceClient {
    /// List Shares: one page starting at `marker` (the previous page's `next_marker`).
    ///
    /// ```no_run
    /// # async fn f(files: azstore::file::ShareServiceClient) -> azstore::Result<()> {
    /// use azstore::file::ListSharesOptions;
    /// let options = ListSharesOptions::default().prefix("logs");
    /// let mut marker = None;
    /// loop {
    ///     let page = files.list_shares_page(&options, marker.as_deref()).await?;
    ///     for s in &page.shares {
    ///         println!("{}", s.name);
    ///     }
    ///     match page.next_marker {
    ///         Some(m) => marker = Some(m),
    ///         None => break,
    ///     }
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn list_shares_page(
        &self,
        options: &ListSharesOptions,
        marker: Option<&str>,
    ) -> Result<SharePage> {
        let mut req = Request::new(Method::Get, "").query("comp", "list");
        if let Some(p) = &options.prefix {
            req = req.query("prefix", p.clone());
        }
        if let Some(m) = marker {
            req = req.query("marker", m);
        }
        if let Some(n) = options.max_results {
            if !(1..=5000).contains(&n) {
                return Err(Error::invalid_input(format!(
                    "List Shares returns 1-5000 shares per page, asked for {n}"
                )));
            }
            req = req.query("maxresults", n.to_string());
        }
        if let Some(include) = options.include() {
            req = req.query("include", include);
        }
        let resp = self.pipeline().send(req).await?;
        SharePage::parse(&resp.body)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_a_listing_with_bom_unquoted_etags_and_an_empty_marker() {
        let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults><Shares><Share><Name>s1</Name><Properties><Last-Modified>Thu, 09 May 2019 01:07:31 GMT</Last-Modified><Etag>\"0x8D6D41AB96E2B6E\"</Etag><Quota>5120</Quota></Properties><Metadata><a>1</a></Metadata></Share></Shares><NextMarker /></EnumerationResults>";
        let page = SharePage::parse(body.as_bytes()).unwrap();
        assert_eq!(
            page.shares[0].etag.as_ref().unwrap().as_str(),
            "\"0x8D6D41AB96E2B6E\""
        );
        assert_eq!(page.shares[0].quota_gib, Some(5120));
        assert_eq!(
            page.shares[0].metadata.get("a").map(String::as_str),
            Some("1")
        );
        assert!(page.next_marker.is_none());
    }
}
