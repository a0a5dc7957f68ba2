//! XML bodies of the Blob service (quick-xml serde for responses, hand-written escaping for
//! the few request bodies). Every parser returns a decode error on malformed input.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::Result;

/// A response document, by its root element.
pub(crate) trait Document: for<'de> Deserialize<'de> {
    /// The root element's name.
    const ROOT: &'static str;
}

macro_rules! documents {
    ($($ty:ident => $root:literal),* $(,)?) => {
        $(impl Document for $ty {
            const ROOT: &'static str = $root;
        })*
    };
}

documents! {
    RawContainerList => "EnumerationResults",
    RawBlobList => "EnumerationResults",
    RawBlockList => "BlockList",
    RawPageList => "PageList",
    RawTags => "Tags",
}

/// Parses an XML response body, turning any failure into a decode error naming `what`. A
/// document with another root element (an HTML page from a proxy) is an error too, never an
/// empty result.
pub(crate) fn parse<T: Document>(body: &[u8], what: &str) -> Result<T> {
    crate::http::checks::expect_xml_root(body, T::ROOT, what)?;
    crate::http::checks::from_xml(body, what)
}

/// Escapes text for an XML element body.
pub(crate) fn escape(s: &str) -> String {
    quick_xml::escape::escape(s).into_owned()
}

/// `<Name Encoded="true">` (percent-encoded when the name has characters XML cannot carry).
#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawName {
    #[serde(rename = "@Encoded", default)]
    pub encoded: Option<String>,
    #[serde(rename = "$text", default)]
    pub text: String,
}

impl RawName {
    pub fn decoded(self) -> String {
        if self.encoded.as_deref() == Some("true") {
            percent_encoding::percent_decode_str(&self.text)
                .decode_utf8_lossy()
                .into_owned()
        } else {
            self.text
        }
    }
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawContainerList {
    #[serde(default)]
    pub containers: RawContainers,
    #[serde(default)]
    pub next_marker: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawContainers {
    #[serde(rename = "Container", default)]
    pub items: Vec<RawContainer>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawContainer {
    pub name: String,
    #[serde(default)]
    pub deleted: Option<bool>,
    #[serde(default)]
    pub version: Option<String>,
    pub properties: RawProperties,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
}

/// The `<Properties>` of a listed container or blob (only what azstore exposes).
#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawProperties {
    #[serde(rename = "Last-Modified", default)]
    pub last_modified: Option<String>,
    #[serde(rename = "Etag", default)]
    pub etag: Option<String>,
    #[serde(rename = "Content-Length", default)]
    pub content_length: Option<u64>,
    #[serde(rename = "Content-Type", default)]
    pub content_type: Option<String>,
    #[serde(rename = "BlobType", default)]
    pub blob_type: Option<String>,
    #[serde(rename = "LeaseStatus", default)]
    pub lease_status: Option<String>,
    #[serde(rename = "LeaseState", default)]
    pub lease_state: Option<String>,
    #[serde(rename = "AccessTier", default)]
    pub access_tier: Option<String>,
    #[serde(rename = "CopyId", default)]
    pub copy_id: Option<String>,
    #[serde(rename = "CopyStatus", default)]
    pub copy_status: Option<String>,
    #[serde(rename = "TagCount", default)]
    pub tag_count: Option<u64>,
    // Containers only.
    #[serde(rename = "DeletedTime", default)]
    pub deleted_time: Option<String>,
    #[serde(rename = "RemainingRetentionDays", default)]
    pub remaining_retention_days: Option<u32>,
    #[serde(rename = "DefaultEncryptionScope", default)]
    pub default_encryption_scope: Option<String>,
    #[serde(rename = "DenyEncryptionScopeOverride", default)]
    pub deny_encryption_scope_override: Option<bool>,
    #[serde(rename = "PublicAccess", default)]
    pub public_access: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawBlobList {
    #[serde(default)]
    pub blobs: RawBlobs,
    #[serde(default)]
    pub next_marker: Option<String>,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawBlobs {
    #[serde(rename = "$value", default)]
    pub items: Vec<RawBlobEntry>,
}

#[derive(Debug, Deserialize)]
pub(crate) enum RawBlobEntry {
    Blob(Box<RawBlob>),
    BlobPrefix(RawPrefix),
    #[serde(other)]
    Unknown,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawBlob {
    pub name: RawName,
    #[serde(default)]
    pub snapshot: Option<String>,
    #[serde(default)]
    pub version_id: Option<String>,
    #[serde(default)]
    pub is_current_version: Option<bool>,
    #[serde(default)]
    pub deleted: Option<bool>,
    #[serde(default)]
    pub has_versions_only: Option<bool>,
    #[serde(default)]
    pub properties: RawProperties,
    #[serde(default)]
    pub metadata: Option<BTreeMap<String, String>>,
    #[serde(default)]
    pub tags: Option<RawTags>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawPrefix {
    pub name: RawName,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawBlockList {
    #[serde(default)]
    pub committed_blocks: RawBlocks,
    #[serde(default)]
    pub uncommitted_blocks: RawBlocks,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawBlocks {
    #[serde(rename = "Block", default)]
    pub items: Vec<RawBlock>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawBlock {
    pub name: String,
    pub size: u64,
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawPageList {
    #[serde(rename = "$value", default)]
    pub items: Vec<RawPageEntry>,
}

#[derive(Debug, Deserialize)]
pub(crate) enum RawPageEntry {
    PageRange(RawRange),
    ClearRange(RawRange),
    NextMarker(RawMarker),
    #[serde(other)]
    Unknown,
}

/// `<NextMarker>m</NextMarker>` or the empty `<NextMarker />` of a last page.
#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawMarker {
    #[serde(rename = "$text", default)]
    pub text: String,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawRange {
    pub start: u64,
    pub end: u64,
}

#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawTags {
    #[serde(default)]
    pub tag_set: RawTagSet,
}

impl RawTags {
    /// The tags as a map.
    pub(crate) fn into_tags(self) -> crate::blob::tags::Tags {
        self.tag_set
            .items
            .into_iter()
            .map(|t| (t.key, t.value))
            .collect()
    }
}

#[derive(Debug, Deserialize, Default)]
pub(crate) struct RawTagSet {
    #[serde(rename = "Tag", default)]
    pub items: Vec<RawTag>,
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub(crate) struct RawTag {
    pub key: String,
    #[serde(default)]
    pub value: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_blobs_with_prefixes_and_metadata() {
        let xml = br#"<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://x/" ContainerName="c"><Prefix>a/</Prefix><MaxResults>2</MaxResults><Delimiter>/</Delimiter><Blobs><Blob><Name>a/1 &amp; b</Name><Properties><Last-Modified>Sun, 22 Nov 2026 00:13:20 GMT</Last-Modified><Etag>"0x1"</Etag><Content-Length>5</Content-Length><BlobType>BlockBlob</BlobType></Properties><Metadata><k>v</k></Metadata></Blob><BlobPrefix><Name>a/d/</Name></BlobPrefix><Blob><Name Encoded="true">a%2Fx</Name><Properties/></Blob></Blobs><NextMarker>m2</NextMarker></EnumerationResults>"#;
        let l: RawBlobList = parse(xml, "List Blobs").unwrap();
        assert_eq!(l.next_marker.as_deref(), Some("m2"));
        assert_eq!(l.blobs.items.len(), 3);
        match &l.blobs.items[0] {
            RawBlobEntry::Blob(b) => {
                assert_eq!(b.name.text, "a/1 & b");
                assert_eq!(b.properties.content_length, Some(5));
                assert_eq!(
                    b.metadata
                        .as_ref()
                        .and_then(|m| m.get("k"))
                        .map(String::as_str),
                    Some("v")
                );
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&l.blobs.items[1], RawBlobEntry::BlobPrefix(p) if p.name.text == "a/d/"));
        let empty: RawBlobList = parse(
            b"<EnumerationResults><Blobs /><NextMarker /></EnumerationResults>",
            "x",
        )
        .unwrap();
        assert!(empty.blobs.items.is_empty());
        assert!(parse::<RawBlobList>(b"<EnumerationResults><Blobs>", "x").is_err());
    }

    #[test]
    fn page_list_and_tags() {
        let p: RawPageList = parse(
            b"<PageList><PageRange><Start>0</Start><End>511</End></PageRange><ClearRange><Start>512</Start><End>1023</End></ClearRange></PageList>",
            "x",
        )
        .unwrap();
        assert_eq!(p.items.len(), 2);
        // A page of a paged (or diff) listing, as Azure answered it.
        for (xml, marker) in [
            (&b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<PageList><PageRange><Start>0</Start><End>511</End></PageRange><ClearRange><Start>512</Start><End>1023</End></ClearRange><NextMarker/></PageList>"[..], ""),
            (&b"<PageList><PageRange><Start>0</Start><End>511</End></PageRange><NextMarker>2!12!MDAwMDA</NextMarker></PageList>"[..], "2!12!MDAwMDA"),
        ] {
            let p: RawPageList = parse(xml, "x").unwrap();
            let m = p.items.iter().find_map(|i| match i {
                RawPageEntry::NextMarker(m) => Some(m.text.as_str()),
                _ => None,
            });
            assert_eq!(m, Some(marker));
        }
        let t: RawTags = parse(
            b"<Tags><TagSet><Tag><Key>a</Key><Value>1</Value></Tag><Tag><Key>b</Key><Value/></Tag></TagSet></Tags>",
            "x",
        )
        .unwrap();
        assert_eq!(t.tag_set.items.len(), 2);
    }
}
