//! Snapshots and versions as addressable blobs, Get Page Ranges with ranges, paging and diffs,
//! Get Account Information, Find Blobs by Tags and Restore Container. Azurite serves snapshots,
//! ranged page listings, account information and tag queries; it has no blob versioning, no
//! page-range diffs or paging (it ignores `maxresults`) and no container restore, so those are
//! tested for the request sent and the parsing of Azure-shaped answers against a scripted
//! server.

use testkit::blob as blob_support;
use testkit::scripted::{Reply, Scripted};

use azstore::blob::{
    BlobListItem, CreateOptions, ListOptions, PageRangeOptions, PutOptions, SnapshotId, VersionId,
};
use azstore::{Conditions, ErrorCode, ErrorKind, blob::BlobServiceClient};
use futures_util::TryStreamExt;

#[tokio::test]
async fn a_snapshot_is_read_listed_and_deleted_like_a_blob() {
    let c = blob_support::container("snapaddr").await;
    let b = c.blob("doc").unwrap();
    b.upload("version one", &Conditions::none()).await.unwrap();
    let snap = b.snapshot(&Conditions::none()).await.unwrap();
    b.upload("version two!", &Conditions::none()).await.unwrap();

    let frozen = b.at_snapshot(&snap.snapshot);
    assert_eq!(frozen.snapshot_id(), Some(snap.snapshot.clone()));
    assert!(frozen.url().contains("?snapshot="), "{}", frozen.url());
    let old = frozen.download().await.unwrap();
    assert_eq!(&old.body[..], b"version one");
    let p = frozen.get_properties().await.unwrap();
    assert_eq!(p.content_length, 11);
    let part = frozen.download_range(8..11).await.unwrap();
    assert_eq!(&part.body[..], b"one");
    assert_eq!(
        &b.base().download().await.unwrap().body[..],
        b"version two!"
    );

    // Deleting the snapshot client deletes that snapshot only.
    frozen.delete(&Conditions::none()).await.unwrap();
    let listed: Vec<BlobListItem> = c
        .list_blobs(ListOptions::default().with_snapshots())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert!(frozen.download().await.unwrap_err().is_not_found());
    assert!(b.exists().await.unwrap());
}

#[tokio::test]
async fn page_ranges_of_a_snapshot_and_within_a_range() {
    let c = blob_support::container("pgrange").await;
    let disk = c.blob("disk").unwrap();
    disk.create_page_blob(8192, &CreateOptions::new(Conditions::none()))
        .await
        .unwrap();
    disk.put_pages(0, vec![1u8; 1024], &Conditions::none())
        .await
        .unwrap();
    let snap = disk.snapshot(&Conditions::none()).await.unwrap();
    disk.put_pages(4096, vec![2u8; 512], &Conditions::none())
        .await
        .unwrap();

    let now = disk.get_page_ranges().await.unwrap();
    assert_eq!(now.ranges, vec![0..1024, 4096..4608]);
    assert_eq!(now.next_marker, None);
    let then = disk
        .at_snapshot(&snap.snapshot)
        .get_page_ranges()
        .await
        .unwrap();
    assert_eq!(then.ranges, vec![0..1024]);
    let window = disk
        .get_page_ranges_with(&PageRangeOptions::default().range(512..8192))
        .await
        .unwrap();
    assert_eq!(window.ranges, vec![512..1024, 4096..4608]);
    let e = disk
        .get_page_ranges_with(&PageRangeOptions::default().range(100..8192))
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn account_information_and_find_blobs_by_tags() {
    let c = blob_support::container("findtags").await;
    let service = blob_support::service();
    let info = service.account_info().await.unwrap();
    assert!(
        !info.sku_name.is_empty() && !info.account_kind.is_empty(),
        "{info:?}"
    );

    // A tag value unique to this test, so parallel tests do not interfere.
    let run = testkit::unique("run");
    for (name, state) in [("a", "done"), ("b", "done"), ("c", "open")] {
        c.blob(name)
            .unwrap()
            .put(
                "x",
                &PutOptions::new(Conditions::none())
                    .tag("run", &run)
                    .tag("state", state),
            )
            .await
            .unwrap();
    }
    let expr = format!("\"run\" = '{run}' AND \"state\" = 'done'");
    let mut found: Vec<_> = c.find_blobs_by_tags(&expr).try_collect().await.unwrap();
    found.sort_by(|x, y| x.name.cmp(&y.name));
    assert_eq!(
        found.iter().map(|f| f.name.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    assert!(found.iter().all(|f| f.container == c.name()));
    let everywhere: Vec<_> = service
        .find_blobs_by_tags(&format!("\"run\" = '{run}'"))
        .try_collect()
        .await
        .unwrap();
    assert_eq!(everywhere.len(), 3);
    let e = c
        .find_blobs_by_tags_page(" ", None, None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

fn scripted_service(server: &Scripted) -> BlobServiceClient {
    BlobServiceClient::new(&server.account()).unwrap()
}

#[tokio::test]
async fn a_version_is_addressed_with_versionid_scripted() {
    let server = Scripted::start(vec![
        Reply::with(
            200,
            &[
                ("etag", "\"0x8D81019EC948CAB\""),
                ("content-length", "3"),
                ("x-ms-blob-type", "BlockBlob"),
                ("x-ms-version-id", "2020-06-14T04:18:00.2310315Z"),
                ("x-ms-is-current-version", "false"),
                ("x-ms-access-tier", "Cool"),
            ],
            b"old",
        ),
        Reply::with(202, &[], b""),
    ])
    .await;
    let b = scripted_service(&server)
        .container("scripted")
        .unwrap()
        .blob("doc")
        .unwrap();
    let v = b.at_version(&VersionId::new("2020-06-14T04:18:00.2310315Z"));
    assert_eq!(
        v.version_id().unwrap().as_str(),
        "2020-06-14T04:18:00.2310315Z"
    );
    let d = v.download().await.unwrap();
    assert_eq!(&d.body[..], b"old");
    assert_eq!(
        d.properties.version_id.as_deref(),
        Some("2020-06-14T04:18:00.2310315Z")
    );
    assert_eq!(d.properties.is_current_version, Some(false));
    assert_eq!(
        d.properties.access_tier,
        Some(azstore::blob::AccessTier::Cool)
    );
    v.delete(&Conditions::none()).await.unwrap();
    let sent = server.requests();
    assert!(
        sent[0]
            .target
            .contains("versionid=2020-06-14T04%3A18%3A00.2310315Z"),
        "{}",
        sent[0].target
    );
    assert_eq!(sent[1].method, "DELETE");
    assert!(sent[1].target.contains("versionid="), "{}", sent[1].target);
    assert_eq!(sent[1].header("x-ms-delete-snapshots"), None);
}

#[tokio::test]
async fn page_range_diff_and_paging_scripted() {
    // The first answer is Azure's own (a diff with a cleared range and an empty marker),
    // preceded by a page that continues.
    let server = Scripted::start(vec![
        Reply::with(
            200,
            &[("etag", "\"0x1\""), ("x-ms-blob-content-length", "1024"), ("content-type", "application/xml")],
            b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<PageList><PageRange><Start>0</Start><End>511</End></PageRange><NextMarker>2!12!MDAwMDA</NextMarker></PageList>",
        ),
        Reply::with(
            200,
            &[("etag", "\"0x1\""), ("x-ms-blob-content-length", "1024"), ("content-type", "application/xml")],
            b"<?xml version=\"1.0\" encoding=\"utf-8\"?>\n<PageList><ClearRange><Start>512</Start><End>1023</End></ClearRange><NextMarker/></PageList>",
        ),
    ])
    .await;
    let disk = scripted_service(&server)
        .container("scripted")
        .unwrap()
        .blob("disk")
        .unwrap();
    let snap = SnapshotId::new("2020-01-01T11:24:11.0707251Z");
    let mut opts = PageRangeOptions::default()
        .since_snapshot(&snap)
        .max_results(1);
    let first = disk.get_page_ranges_with(&opts).await.unwrap();
    assert_eq!(first.ranges, vec![0..512]);
    assert_eq!(first.next_marker.as_deref(), Some("2!12!MDAwMDA"));
    opts.marker = first.next_marker.clone();
    let second = disk.get_page_ranges_with(&opts).await.unwrap();
    assert_eq!(second.clear_ranges, vec![512..1024]);
    assert_eq!(second.next_marker, None);
    let sent = server.requests();
    assert!(
        sent[0]
            .target
            .contains("prevsnapshot=2020-01-01T11%3A24%3A11.0707251Z"),
        "{}",
        sent[0].target
    );
    assert!(sent[0].target.contains("maxresults=1"));
    assert!(
        sent[1].target.contains("marker=2%2112%21MDAwMDA"),
        "{}",
        sent[1].target
    );
}

#[tokio::test]
async fn restore_container_scripted() {
    let server = Scripted::start(vec![
        Reply::with(201, &[("etag", "\"0x2\"")], b""),
        Reply::with(
            409,
            &[("x-ms-error-code", "ContainerAlreadyExists")],
            b"\xef\xbb\xbf<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>ContainerAlreadyExists</Code><Message>The specified container already exists.</Message></Error>",
        ),
    ])
    .await;
    let service = scripted_service(&server);
    let c = service
        .restore_container("reports", "01D60F8BB59A4652")
        .await
        .unwrap();
    assert_eq!(c.name(), "reports");
    let r = &server.requests()[0];
    assert_eq!(r.method, "PUT");
    assert!(r.target.contains("restype=container") && r.target.contains("comp=undelete"));
    assert_eq!(r.header("x-ms-deleted-container-name"), Some("reports"));
    assert_eq!(
        r.header("x-ms-deleted-container-version"),
        Some("01D60F8BB59A4652")
    );
    let e = service
        .restore_container("reports", "01D60F8BB59A4652")
        .await
        .unwrap_err();
    assert_eq!(e.error_code(), Some(&ErrorCode::ContainerAlreadyExists));
    assert!(service.restore_container("Bad_Name", "1").await.is_err());
    assert_eq!(server.count(), 2);
}

#[tokio::test]
async fn listing_includes_tags_uncommitted_blobs_and_copy_state() {
    use azstore::blob::{BlockId, CopyOptions, ListInclude};
    let c = blob_support::container("listinc").await;
    let tagged = c.blob("tagged").unwrap();
    tagged
        .put(
            "x",
            &PutOptions::new(Conditions::none())
                .tag("k", "v")
                .tag("n", "2"),
        )
        .await
        .unwrap();
    c.blob("staged")
        .unwrap()
        .put_block(&BlockId::new("b").unwrap(), "y", &Conditions::none())
        .await
        .unwrap();
    let copy = c.blob("copy").unwrap();
    let r = copy
        .start_copy_from_url(&tagged.url(), &CopyOptions::new(Conditions::none()))
        .await
        .unwrap();
    copy.wait_for_copy(&r.copy_id, std::time::Duration::from_millis(50))
        .await
        .unwrap();

    let plain: Vec<BlobListItem> = c
        .list_blobs(ListOptions::default())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(
        plain.len(),
        2,
        "an uncommitted blob is listed only on request"
    );
    let all: Vec<BlobListItem> = c
        .list_blobs(
            ListOptions::default()
                .including(ListInclude::Tags)
                .including(ListInclude::UncommittedBlobs)
                .including(ListInclude::Copy),
        )
        .try_collect()
        .await
        .unwrap();
    let by_name = |n: &str| {
        all.iter()
            .find_map(|i| match i {
                BlobListItem::Blob(b) if b.name == n => Some(b.clone()),
                _ => None,
            })
            .unwrap_or_else(|| panic!("{n} not listed: {all:?}"))
    };
    assert_eq!(
        by_name("tagged").tags,
        [
            ("k".to_string(), "v".to_string()),
            ("n".to_string(), "2".to_string())
        ]
        .into()
    );
    assert!(by_name("staged").tags.is_empty());
    let copied = by_name("copy");
    assert_eq!(copied.copy_id.as_deref(), Some(r.copy_id.as_str()));
    assert_eq!(copied.copy_status.as_deref(), Some("success"));
    let e = blob_support::service()
        .list_containers_page(&ListOptions::default().including(ListInclude::Tags), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn listing_versions_and_deleted_blobs_scripted() {
    // Shaped as Azure answers include=versions,deleted,deletedwithversions,tags.
    let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"https://a.blob.core.windows.net/\" ContainerName=\"c\"><Blobs>\
<Blob><Name>doc</Name><VersionId>2020-06-14T04:18:00.2310315Z</VersionId><Properties><Etag>0x1</Etag><Content-Length>3</Content-Length><BlobType>BlockBlob</BlobType><AccessTier>Hot</AccessTier><TagCount>1</TagCount></Properties><Tags><TagSet><Tag><Key>a</Key><Value>b</Value></Tag></TagSet></Tags></Blob>\
<Blob><Name>doc</Name><VersionId>2020-06-15T00:00:00.0000000Z</VersionId><IsCurrentVersion>true</IsCurrentVersion><Properties><Etag>0x2</Etag><Content-Length>4</Content-Length><BlobType>BlockBlob</BlobType></Properties></Blob>\
<Blob><Name>gone</Name><Deleted>true</Deleted><Properties><Etag>0x3</Etag><BlobType>BlockBlob</BlobType></Properties></Blob>\
<Blob><Name>kept-versions</Name><HasVersionsOnly>true</HasVersionsOnly><Properties><Etag>0x4</Etag></Properties></Blob>\
</Blobs><NextMarker /></EnumerationResults>";
    let server = Scripted::start(vec![Reply::with(
        200,
        &[("content-type", "application/xml")],
        body.as_bytes(),
    )])
    .await;
    use azstore::blob::ListInclude;
    let c = scripted_service(&server).container("scripted").unwrap();
    let page = c
        .list_blobs_page(
            &ListOptions::default()
                .including(ListInclude::Versions)
                .including(ListInclude::Deleted)
                .including(ListInclude::DeletedWithVersions)
                .including(ListInclude::Tags),
            None,
        )
        .await
        .unwrap();
    let include = server.requests()[0].target.clone();
    assert!(
        include.contains("include=versions%2Cdeleted%2Cdeletedwithversions%2Ctags"),
        "{include}"
    );
    let blobs: Vec<_> = page
        .items
        .into_iter()
        .map(|i| match i {
            BlobListItem::Blob(b) => b,
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(blobs.len(), 4);
    assert_eq!(
        blobs[0].version_id.as_deref(),
        Some("2020-06-14T04:18:00.2310315Z")
    );
    assert_eq!(blobs[0].is_current_version, None);
    assert_eq!(blobs[0].tags.get("a").map(String::as_str), Some("b"));
    assert_eq!(blobs[0].tag_count, Some(1));
    assert_eq!(blobs[0].access_tier, Some(azstore::blob::AccessTier::Hot));
    assert_eq!(blobs[1].is_current_version, Some(true));
    assert!(blobs[2].deleted && !blobs[1].deleted);
    assert!(blobs[3].has_versions_only);
    assert_eq!(page.next_marker, None);
}
