//! Containers: properties, metadata, access policies, listing with paging (and with deleted
//! and system items), and name validation before sending.

use testkit as support;
use testkit::blob as blob_support;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use azstore::access_policy::SignedIdentifier;
use azstore::blob::{BlobListItem, ContainerAcl, ListOptions, PublicAccess};
use azstore::{Conditions, ErrorKind, OffsetDateTime, RequestSent};
use futures_util::TryStreamExt;
use testkit::scripted::{Reply, Scripted};

#[tokio::test]
async fn properties_metadata_and_etag() {
    let c = blob_support::container("cprops").await;
    let p = c.get_properties().await.unwrap();
    assert!(p.metadata.is_empty());
    assert_eq!(p.public_access, PublicAccess::None);
    assert_eq!(p.lease_state, Some(azstore::blob::LeaseState::Available));

    let meta = BTreeMap::from([
        ("owner".to_string(), "team-a".to_string()),
        ("Purpose".to_string(), "tests".to_string()),
    ]);
    let w = c.set_metadata(&meta, &Conditions::none()).await.unwrap();
    assert_ne!(w.etag, p.etag, "Set Container Metadata returns a new ETag");
    let (got, etag) = c.get_metadata().await.unwrap();
    assert_eq!(etag, w.etag);
    assert_eq!(got.get("owner").map(String::as_str), Some("team-a"));
    // Metadata names are case-insensitive on the service; values round-trip.
    assert_eq!(
        got.iter()
            .find(|(k, _)| k.eq_ignore_ascii_case("purpose"))
            .map(|(_, v)| v.as_str()),
        Some("tests")
    );
    assert_eq!(c.get_properties().await.unwrap().etag, w.etag);
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn access_policies_round_trip() {
    let c = blob_support::container("acl").await;
    let before = c.get_access_policy().await.unwrap();
    assert!(before.acl.identifiers.is_empty());

    let start = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let expiry = start + Duration::from_secs(3600);
    let mut acl = ContainerAcl::new(vec![
        SignedIdentifier::new("readers", "rl")
            .start(start)
            .expiry(expiry),
        SignedIdentifier::new("writers", "rw").expiry(expiry),
    ]);
    acl.public_access = PublicAccess::Blob;
    let w = c
        .set_access_policy(
            &acl,
            &Conditions::if_unmodified_since(start + Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_ne!(w.etag, before.etag, "Set Container ACL returns a new ETag");

    let got = c.get_access_policy().await.unwrap();
    assert_eq!(got.etag, w.etag);
    assert_eq!(got.acl.public_access, PublicAccess::Blob);
    assert_eq!(got.acl.identifiers.len(), 2);
    let readers = got
        .acl
        .identifiers
        .iter()
        .find(|i| i.id == "readers")
        .unwrap();
    assert_eq!(readers.permission.as_deref(), Some("rl"));
    assert_eq!(readers.start, Some(start));
    assert_eq!(readers.expiry, Some(expiry));

    // A stale date condition is refused and the ACL stays as it was.
    let e = c
        .set_access_policy(
            &ContainerAcl::default(),
            &Conditions::if_unmodified_since(start - Duration::from_secs(3600)),
        )
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert_eq!(
        c.get_access_policy().await.unwrap().acl.identifiers.len(),
        2
    );

    // More than five policies: refused before sending.
    let six = ContainerAcl::new(
        (0..6)
            .map(|i| SignedIdentifier::new(format!("p{i}"), "r"))
            .collect(),
    );
    let e = c
        .set_access_policy(&six, &Conditions::none())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn list_blobs_pages_return_every_item_exactly_once() {
    let c = blob_support::container("list").await;
    let mut names = BTreeSet::new();
    for i in 0..23 {
        let name = format!("logs/2026/{i:02} file ü#?.txt");
        c.blob(&name)
            .unwrap()
            .upload("x", &Conditions::none())
            .await
            .unwrap();
        names.insert(name);
    }
    for n in ["top-a", "top-b", "other/x"] {
        c.blob(n)
            .unwrap()
            .upload("y", &Conditions::none())
            .await
            .unwrap();
    }

    // Small pages: more items than one page, each returned exactly once.
    let listed: Vec<BlobListItem> = c
        .list_blobs(ListOptions::default().prefix("logs/").max_results(5))
        .try_collect()
        .await
        .unwrap();
    let listed_names: Vec<String> = listed.iter().map(|i| i.name().to_string()).collect();
    assert_eq!(listed_names.len(), 23, "{listed_names:?}");
    assert_eq!(listed_names.iter().cloned().collect::<BTreeSet<_>>(), names);

    // One page at a time: a marker until the end.
    let first = c
        .list_blobs_page(&ListOptions::default().max_results(5), None)
        .await
        .unwrap();
    assert_eq!(first.items.len(), 5);
    assert!(first.next_marker.is_some());

    // Delimiter: virtual directories.
    let top: Vec<BlobListItem> = c
        .list_blobs(ListOptions::default().delimiter("/").max_results(2))
        .try_collect()
        .await
        .unwrap();
    let prefixes: BTreeSet<&str> = top
        .iter()
        .filter_map(|i| match i {
            BlobListItem::Prefix(p) => Some(p.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(prefixes, BTreeSet::from(["logs/", "other/"]));
    let blobs: Vec<&str> = top
        .iter()
        .filter_map(|i| match i {
            BlobListItem::Blob(b) => Some(b.name.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(blobs, ["top-a", "top-b"]);
    if let Some(BlobListItem::Blob(b)) = top.iter().find(|i| i.name() == "top-a") {
        assert_eq!(b.content_length, Some(1));
        assert!(b.etag.is_some());
    }
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn list_containers_pages() {
    let svc = blob_support::service();
    let prefix = support::unique("lc");
    let mut made = BTreeSet::new();
    for i in 0..7 {
        let c = svc.container(&format!("{prefix}x{i}")).unwrap();
        c.create().await.unwrap();
        made.insert(c.name().to_string());
    }
    let listed: Vec<String> = svc
        .list_containers(ListOptions::default().prefix(&prefix).max_results(3))
        .map_ok(|c| c.name)
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed.len(), 7, "{listed:?}");
    assert_eq!(listed.into_iter().collect::<BTreeSet<_>>(), made);
    for n in made {
        svc.container(&n)
            .unwrap()
            .delete(&Conditions::none())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn names_are_validated_before_sending_and_odd_names_round_trip() {
    let svc = blob_support::service();
    for bad in ["ab", "Upper", "a--b", "-ab", "ab-", "a_b", &"a".repeat(64)] {
        let e = svc.container(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad}");
    }
    let c = blob_support::container("names").await;
    for bad in ["", "dir/", "end.", "a\u{0}b"] {
        let e = c.blob(bad).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{bad:?}");
    }
    assert_eq!(
        c.blob(&"x".repeat(1025)).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    let odd = [
        "with space",
        "ünïcödé/漢字",
        "hash#tag",
        "what?",
        "100%",
        "a+b&c=d",
    ];
    for n in odd {
        c.blob(n)
            .unwrap()
            .upload(n.to_string(), &Conditions::none())
            .await
            .unwrap();
    }
    let listed: BTreeSet<String> = c
        .list_blobs(ListOptions::default())
        .map_ok(|i| i.name().to_string())
        .try_collect()
        .await
        .unwrap();
    assert_eq!(listed, odd.iter().map(|s| s.to_string()).collect());
    for n in odd {
        let d = c.blob(n).unwrap().download().await.unwrap();
        assert_eq!(&d.body[..], n.as_bytes(), "{n}");
    }
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn create_with_metadata_and_public_access() {
    let c = blob_support::service()
        .container(&support::unique("cwith"))
        .unwrap();
    let options = azstore::blob::CreateContainerOptions::default()
        .metadata("owner", "ops")
        .public_access(PublicAccess::Blob);
    c.create_with(&options).await.unwrap();
    let p = c.get_properties().await.unwrap();
    assert_eq!(p.metadata.get("owner").map(String::as_str), Some("ops"));
    assert_eq!(p.public_access, PublicAccess::Blob);
    // A second create fails as Create Container does, and changes nothing.
    let e = c
        .create_with(&azstore::blob::CreateContainerOptions::default())
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists, "{e}");
    assert_eq!(c.get_properties().await.unwrap().etag, p.etag);
    // Bad metadata is refused before sending.
    let bad = azstore::blob::CreateContainerOptions::default().metadata("not a name", "v");
    let other = blob_support::service()
        .container(&support::unique("cbad"))
        .unwrap();
    let e = other.create_with(&bad).await.unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput, "{e}");
    assert!(!other.exists().await.unwrap());
}

/// List Containers with `include=deleted,system` (REST reference, 2025-11-05). Azurite
/// ignores both values (it has no container soft delete and no system containers), so the
/// answer is scripted as Azure shapes it.
#[tokio::test]
async fn list_containers_includes_deleted_and_system_containers() {
    use azstore::blob::{BlobServiceClient, ListInclude, ListOptions};
    use testkit::scripted::{Reply, Scripted};
    let body = "\u{feff}<?xml version=\"1.0\" encoding=\"utf-8\"?><EnumerationResults ServiceEndpoint=\"https://a.blob.core.windows.net/\"><Containers>\
<Container><Name>$logs</Name><Properties><Last-Modified>Wed, 19 Jan 2022 22:28:43 GMT</Last-Modified><Etag>\"0x8D9DB9C8B1C3E5A\"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>available</LeaseState><DefaultEncryptionScope>$account-encryption-key</DefaultEncryptionScope><DenyEncryptionScopeOverride>false</DenyEncryptionScopeOverride><HasImmutabilityPolicy>false</HasImmutabilityPolicy><HasLegalHold>false</HasLegalHold></Properties></Container>\
<Container><Name>reports</Name><Deleted>true</Deleted><Version>01D60F8BB59A4652</Version><Properties><Last-Modified>Wed, 19 Jan 2022 22:28:43 GMT</Last-Modified><Etag>\"0x8D9DB9C8B1C3E5B\"</Etag><LeaseStatus>unlocked</LeaseStatus><LeaseState>expired</LeaseState><PublicAccess>blob</PublicAccess><DefaultEncryptionScope>scope1</DefaultEncryptionScope><DenyEncryptionScopeOverride>true</DenyEncryptionScopeOverride><DeletedTime>Thu, 20 Jan 2022 08:00:00 GMT</DeletedTime><RemainingRetentionDays>6</RemainingRetentionDays></Properties></Container>\
</Containers><NextMarker /></EnumerationResults>";
    let server = Scripted::start(vec![Reply::with(
        200,
        &[("content-type", "application/xml")],
        body.as_bytes(),
    )])
    .await;
    let service = BlobServiceClient::new(&server.account()).unwrap();
    let options = ListOptions::default()
        .with_metadata()
        .with_deleted()
        .including(ListInclude::System);
    let page = service.list_containers_page(&options, None).await.unwrap();
    let target = &server.requests()[0].target;
    assert!(
        target.ends_with("?comp=list&include=metadata%2Cdeleted%2Csystem")
            || target.ends_with("?comp=list&include=metadata,deleted,system"),
        "{target}"
    );
    assert_eq!(page.items.len(), 2);
    let logs = &page.items[0];
    assert_eq!(logs.name, "$logs");
    assert!(!logs.deleted && logs.version.is_none());
    assert_eq!(
        logs.default_encryption_scope.as_deref(),
        Some("$account-encryption-key")
    );
    let gone = &page.items[1];
    assert!(gone.deleted);
    assert_eq!(gone.version.as_deref(), Some("01D60F8BB59A4652"));
    assert_eq!(gone.remaining_retention_days, Some(6));
    assert_eq!(gone.deleted_time.unwrap().unix_timestamp(), 1_642_665_600);
    assert_eq!(gone.default_encryption_scope.as_deref(), Some("scope1"));
    assert_eq!(gone.deny_encryption_scope_override, Some(true));
    assert_eq!(gone.public_access.as_deref(), Some("blob"));
    // Values for List Blobs only are refused before sending.
    let e = service
        .list_containers_page(&ListOptions::default().including(ListInclude::Tags), None)
        .await
        .unwrap_err();
    assert_eq!(e.kind(), azstore::ErrorKind::InvalidInput);
    assert_eq!(server.count(), 1);
}

#[tokio::test]
async fn list_blobs_with_deleted_sends_include_deleted() {
    // Azurite does not implement soft delete, but it accepts include=deleted and lists the
    // live blobs unmarked; the real service's answer (with <Deleted>true</Deleted>) is
    // checked against test_common_blob.test_soft_delete_with_leased_blob in the conformance
    // suite.
    let c = blob_support::container("listdel").await;
    c.blob("live")
        .unwrap()
        .upload("x", &Conditions::none())
        .await
        .unwrap();
    let page = c
        .list_blobs_page(&ListOptions::default().with_deleted(), None)
        .await
        .unwrap();
    assert_eq!(page.items.len(), 1);
    match &page.items[0] {
        azstore::blob::BlobListItem::Blob(b) => assert!(!b.deleted),
        other => panic!("{other:?}"),
    }
    // include=system is List Containers' only.
    let e = c
        .list_blobs_page(
            &ListOptions::default().including(azstore::blob::ListInclude::System),
            None,
        )
        .await
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidInput);
}

#[tokio::test]
async fn invalid_names_are_refused_before_sending() {
    let server = Scripted::start(vec![Reply::status(201)]).await;
    let blobs = azstore::blob::BlobServiceClient::new(&server.account()).unwrap();
    for bad in ["ab", "Upper", "a--b", "-ab", "has space"] {
        let err = blobs.container(bad).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::InvalidInput, "{bad}");
        assert_eq!(err.request_sent(), RequestSent::No);
    }
    let c = blobs.container("fine").unwrap();
    assert_eq!(c.blob("").unwrap_err().kind(), ErrorKind::InvalidInput);
    assert_eq!(
        c.blob(&"x".repeat(1025)).unwrap_err().kind(),
        ErrorKind::InvalidInput
    );
    // a condition Delete Container does not support
    let err = c
        .delete(&azstore::Conditions::if_match(&azstore::ETag::new("\"x\"")))
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::InvalidInput);
    assert_eq!(server.count(), 0, "nothing may be sent for invalid input");
}
