//! The condition matrix (operation × condition × expected outcome) from the seed tables in
//! `managing-concurrency-in-azure-storage.md`, checked against Azurite, plus the seed's
//! optimistic-concurrency scenario.

use testkit as support;
use testkit::blob as blob_support;

use std::collections::BTreeMap;
use std::time::Duration;

use azstore::blob::{AppendOptions, BlockId, BlockRef, CommitOptions, CreateOptions, Tags};
use azstore::http_headers::HttpHeaders;
use azstore::{
    Conditions, ETag, ErrorKind, OffsetDateTime, blob::BlobClient, blob::ContainerClient,
};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    PutBlob,
    PutBlockList,
    SetMetadata,
    SetHttpHeaders,
    Snapshot,
    Delete,
    AppendBlock,
    PutPage,
    GetBlob,
    GetProperties,
    GetMetadata,
    GetPageRanges,
}

impl Op {
    fn is_read(self) -> bool {
        matches!(
            self,
            Op::GetBlob | Op::GetProperties | Op::GetMetadata | Op::GetPageRanges
        )
    }
    /// Writes after which the ETag must have changed on success.
    fn changes_etag(self) -> bool {
        !self.is_read() && !matches!(self, Op::Snapshot | Op::Delete)
    }
    fn creates(self) -> bool {
        matches!(self, Op::PutBlob | Op::PutBlockList)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cond {
    IfMatchCurrent,
    IfMatchStale,
    IfNoneMatchCurrent,
    IfNoneMatchAny,
    ModifiedSincePast,
    ModifiedSinceAfterWrite,
    UnmodifiedSincePast,
    UnmodifiedSinceAfterWrite,
    TagsMatch,
    TagsMismatch,
}

const CONDS: [Cond; 10] = [
    Cond::IfMatchCurrent,
    Cond::IfMatchStale,
    Cond::IfNoneMatchCurrent,
    Cond::IfNoneMatchAny,
    Cond::ModifiedSincePast,
    Cond::ModifiedSinceAfterWrite,
    Cond::UnmodifiedSincePast,
    Cond::UnmodifiedSinceAfterWrite,
    Cond::TagsMatch,
    Cond::TagsMismatch,
];

const OPS: [Op; 12] = [
    Op::PutBlob,
    Op::PutBlockList,
    Op::SetMetadata,
    Op::SetHttpHeaders,
    Op::Snapshot,
    Op::Delete,
    Op::AppendBlock,
    Op::PutPage,
    Op::GetBlob,
    Op::GetProperties,
    Op::GetMetadata,
    Op::GetPageRanges,
];

/// The expected outcome, from the seed table (every listed operation accepts conditions) and
/// the REST rules for conditional headers: writes answer 412 `ConditionNotMet` when a
/// condition fails, reads answer 304 for If-None-Match / If-Modified-Since and 412 for
/// If-Match / If-Unmodified-Since; `If-None-Match: *` on an existing blob makes a create
/// 409 `BlobAlreadyExists` and a read 304.
fn expected(op: Op, cond: Cond) -> &'static str {
    use Cond::*;
    let fail = |read_304: bool| {
        if op.is_read() && read_304 {
            "304"
        } else {
            "412 ConditionNotMet"
        }
    };
    match cond {
        IfMatchCurrent | ModifiedSincePast | UnmodifiedSinceAfterWrite | TagsMatch => "ok",
        IfMatchStale | UnmodifiedSincePast | TagsMismatch => fail(false),
        IfNoneMatchCurrent | ModifiedSinceAfterWrite => fail(true),
        IfNoneMatchAny if op.creates() => "409 BlobAlreadyExists",
        // No read can satisfy `If-None-Match: *` (the service answers 400
        // UnsatisfiableCondition): azstore refuses it before sending.
        IfNoneMatchAny => "InvalidInput",
    }
}

/// Whether the pair is part of the matrix. `If-None-Match: *` is the create-only condition;
/// it is checked on the creates and the reads (Azurite accepts it silently on other writes,
/// where Azure's behaviour is not documented).
fn in_matrix(op: Op, cond: Cond) -> bool {
    !(cond == Cond::IfNoneMatchAny && !op.creates() && !op.is_read())
}

struct Fixture {
    blob: BlobClient,
    stale: ETag,
    current: ETag,
    last_modified: OffsetDateTime,
}

async fn fixture(c: &ContainerClient, op: Op, cond: Cond) -> Fixture {
    let blob = c.blob(&format!("{op:?}/{cond:?}")).unwrap();
    let none = Conditions::none();
    let (stale, current) = match op {
        Op::AppendBlock => {
            let s = blob
                .create_append_blob(&CreateOptions::new(Conditions::none()))
                .await
                .unwrap()
                .etag;
            let cur = blob
                .append_block("a", &AppendOptions::default())
                .await
                .unwrap()
                .etag;
            (s, cur)
        }
        Op::PutPage | Op::GetPageRanges => {
            let s = blob
                .create_page_blob(4096, &CreateOptions::new(Conditions::none()))
                .await
                .unwrap()
                .etag;
            let cur = blob.put_pages(0, vec![1u8; 512], &none).await.unwrap().etag;
            (s, cur)
        }
        _ => {
            let s = blob.upload("v1", &none).await.unwrap().etag;
            let cur = blob.upload("v2", &none).await.unwrap().etag;
            (s, cur)
        }
    };
    let tags = Tags::from([("k".to_string(), "v".to_string())]);
    blob.set_tags(&tags, &none).await.unwrap();
    let p = blob.get_properties_if(&none).await.unwrap();
    assert_eq!(p.etag, current, "Set Blob Tags must not change the ETag");
    Fixture {
        blob,
        stale,
        current,
        last_modified: p.last_modified.expect("last-modified"),
    }
}

fn conditions(f: &Fixture, cond: Cond, after_write: OffsetDateTime) -> Conditions {
    match cond {
        Cond::IfMatchCurrent => Conditions::if_match(&f.current),
        Cond::IfMatchStale => Conditions::if_match(&f.stale),
        Cond::IfNoneMatchCurrent => Conditions::if_none_match(&f.current),
        Cond::IfNoneMatchAny => Conditions::if_not_exists(),
        Cond::ModifiedSincePast => {
            Conditions::if_modified_since(f.last_modified - Duration::from_secs(3600))
        }
        Cond::ModifiedSinceAfterWrite => Conditions::if_modified_since(after_write),
        Cond::UnmodifiedSincePast => {
            Conditions::if_unmodified_since(f.last_modified - Duration::from_secs(3600))
        }
        Cond::UnmodifiedSinceAfterWrite => Conditions::if_unmodified_since(after_write),
        Cond::TagsMatch => Conditions::if_tags("\"k\" = 'v'"),
        Cond::TagsMismatch => Conditions::if_tags("\"k\" = 'other'"),
    }
}

async fn run(op: Op, blob: &BlobClient, c: &Conditions) -> azstore::Result<()> {
    match op {
        Op::PutBlob => blob.upload("new", c).await.map(drop),
        Op::PutBlockList => {
            let id = BlockId::new("block-0").unwrap();
            blob.put_block(&id, "new", &Conditions::none()).await?;
            let opts = CommitOptions::new(c.clone());
            blob.put_block_list(&[BlockRef::Latest(id)], &opts)
                .await
                .map(drop)
        }
        Op::SetMetadata => {
            let m = BTreeMap::from([("k".to_string(), "v".to_string())]);
            blob.set_metadata(&m, c).await.map(drop)
        }
        Op::SetHttpHeaders => blob
            .set_http_headers(&HttpHeaders::default().content_type("text/plain"), c)
            .await
            .map(drop),
        Op::Snapshot => blob.snapshot(c).await.map(drop),
        Op::Delete => blob.delete(c).await,
        Op::AppendBlock => {
            let o = AppendOptions::default().conditions(c.clone());
            blob.append_block("b", &o).await.map(drop)
        }
        Op::PutPage => blob.put_pages(512, vec![2u8; 512], c).await.map(drop),
        Op::GetBlob => blob.download_if(c).await.map(drop),
        Op::GetProperties => blob.get_properties_if(c).await.map(drop),
        Op::GetMetadata => blob.get_metadata_if(c).await.map(drop),
        Op::GetPageRanges => blob.get_page_ranges_if(c).await.map(drop),
    }
}

/// Outcomes Azurite gives where Azure documents another one.
fn azurite_deviation(op: Op, cond: Cond) -> Option<&'static str> {
    match (op, cond) {
        // Azure's Snapshot Blob answers a failed condition with 412; Azurite 3.37 evaluates
        // Snapshot Blob's conditions with its read validator and answers 304.
        (Op::Snapshot, Cond::IfNoneMatchCurrent | Cond::ModifiedSinceAfterWrite) => Some("304"),
        _ => None,
    }
}

fn outcome(r: &azstore::Result<()>) -> String {
    match r {
        Ok(()) => "ok".into(),
        Err(e) if e.kind() == ErrorKind::InvalidInput => "InvalidInput".into(),
        Err(e) if e.kind() == ErrorKind::NotModified => "304".into(),
        Err(e) => format!(
            "{} {}",
            e.status()
                .map(|s| s.to_string())
                .unwrap_or_else(|| format!("{:?}", e.kind())),
            e.error_code()
                .map(|c| c.as_str().to_string())
                .unwrap_or_default()
        ),
    }
}

#[tokio::test]
async fn condition_matrix_blob_operations() {
    let c = blob_support::container("matrix").await;
    let pairs: Vec<(Op, Cond)> = OPS
        .iter()
        .flat_map(|&op| CONDS.iter().map(move |&cond| (op, cond)))
        .filter(|&(op, cond)| in_matrix(op, cond))
        .collect();
    let mut fixtures = Vec::new();
    for &(op, cond) in &pairs {
        fixtures.push(fixture(&c, op, cond).await);
    }
    // A moment strictly after every fixture's last write, at HTTP-date (second) resolution,
    // and not in the future.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after_write = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();

    let mut mismatches = Vec::new();
    for ((op, cond), f) in pairs.iter().copied().zip(&fixtures) {
        let conds = conditions(f, cond, after_write);
        let r = run(op, &f.blob, &conds).await;
        let got = outcome(&r);
        let want = expected(op, cond);
        if got != want && Some(got.as_str()) != azurite_deviation(op, cond) {
            mismatches.push(format!("{op:?} × {cond:?}: expected {want}, got {got}"));
            continue;
        }
        // ETag changes exactly when the seed says it does.
        let after = f.blob.get_properties().await;
        match (op, r.is_ok()) {
            (Op::Delete, true) => {
                assert!(
                    after.unwrap_err().is_not_found(),
                    "{op:?} × {cond:?}: still there"
                )
            }
            (_, true) if op.changes_etag() => {
                let e = after.unwrap().etag;
                if e == f.current {
                    mismatches.push(format!("{op:?} × {cond:?}: ETag did not change"));
                }
            }
            _ => {
                let e = after.unwrap().etag;
                if e != f.current {
                    mismatches.push(format!(
                        "{op:?} × {cond:?}: ETag changed ({e} != {})",
                        f.current
                    ));
                }
            }
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cells differ:\n{}",
        mismatches.len(),
        pairs.len(),
        mismatches.join("\n")
    );
    c.delete(&Conditions::none()).await.unwrap();
}

#[tokio::test]
async fn refused_conditions_are_invalid_input_before_sending() {
    // Operations the seed lists without conditional headers refuse them; nothing is sent,
    // so even a container that does not exist gives InvalidInput rather than 404.
    let svc = blob_support::service();
    let c = svc.container(&support::unique("nothere")).unwrap();
    let b = c.blob("x").unwrap();
    let etag = ETag::new("\"0x1\"");
    let im = Conditions::if_match(&etag);
    let since = Conditions::if_unmodified_since(OffsetDateTime::now_utc());
    let checks: Vec<(&str, azstore::Result<()>)> = vec![
        (
            "get container properties",
            c.get_properties_if(&im).await.map(drop),
        ),
        (
            "get container metadata",
            c.get_metadata_if(&since).await.map(drop),
        ),
        (
            "set container metadata If-Match",
            c.set_metadata(&BTreeMap::new(), &im).await.map(drop),
        ),
        (
            "set container metadata If-Unmodified-Since",
            c.set_metadata(&BTreeMap::new(), &since).await.map(drop),
        ),
        (
            "get container acl",
            c.get_access_policy_if(&im).await.map(drop),
        ),
        (
            "set container acl If-Match",
            c.set_access_policy(&azstore::blob::ContainerAcl::default(), &im)
                .await
                .map(drop),
        ),
        ("delete container If-Match", c.delete(&im).await),
        (
            "put block",
            b.put_block(&BlockId::new("a").unwrap(), "x", &im).await,
        ),
        (
            "get block list",
            b.get_block_list_if(azstore::blob::BlockListType::All, &im)
                .await
                .map(drop),
        ),
        ("abort copy", b.abort_copy("id", &im).await),
        ("set tags If-Match", b.set_tags(&Tags::new(), &im).await),
        (
            "append unaligned page",
            b.put_pages(1, vec![0u8; 512], &Conditions::none())
                .await
                .map(drop),
        ),
        (
            "page length",
            b.put_pages(0, vec![0u8; 100], &Conditions::none())
                .await
                .map(drop),
        ),
        (
            "page blob size",
            b.create_page_blob(1000, &CreateOptions::new(Conditions::none()))
                .await
                .map(drop),
        ),
        (
            "unequal block ids",
            b.put_block_list(
                &[
                    BlockRef::Latest(BlockId::new("a").unwrap()),
                    BlockRef::Latest(BlockId::new("ccccc").unwrap()),
                ],
                &CommitOptions::new(Conditions::none()),
            )
            .await
            .map(drop),
        ),
        (
            "metadata name",
            b.set_metadata(
                &BTreeMap::from([("bad-name".into(), "v".into())]),
                &Conditions::none(),
            )
            .await
            .map(drop),
        ),
    ];
    for (what, r) in checks {
        let e = r.expect_err(what);
        assert_eq!(e.kind(), ErrorKind::InvalidInput, "{what}: {e}");
        assert_eq!(e.request_sent(), azstore::RequestSent::No, "{what}");
    }
}

#[tokio::test]
async fn container_conditions() {
    let c = blob_support::container("ccond").await;
    let p = c.get_properties().await.unwrap();
    let lm = p.last_modified.unwrap();
    tokio::time::sleep(Duration::from_millis(1100)).await;
    let after = OffsetDateTime::now_utc().replace_nanosecond(0).unwrap();
    let meta = BTreeMap::from([("owner".to_string(), "me".to_string())]);

    // Set Container Metadata with If-Modified-Since after the last change: 412, unchanged.
    let e = c
        .set_metadata(&meta, &Conditions::if_modified_since(after))
        .await
        .unwrap_err();
    assert_eq!(e.status(), Some(412), "{e}");
    assert_eq!(c.get_properties().await.unwrap().etag, p.etag);

    // ... and before it: applied, ETag changes, metadata visible.
    let w = c
        .set_metadata(
            &meta,
            &Conditions::if_modified_since(lm - Duration::from_secs(60)),
        )
        .await
        .unwrap();
    assert_ne!(w.etag, p.etag);
    let (got, etag) = c.get_metadata().await.unwrap();
    assert_eq!(got, meta);
    assert_eq!(etag, w.etag);

    // Delete Container with If-Unmodified-Since in the past: 412 and the container survives.
    let e = c
        .delete(&Conditions::if_unmodified_since(
            lm - Duration::from_secs(60),
        ))
        .await
        .unwrap_err();
    assert!(e.is_precondition_failed(), "{e}");
    assert!(c.exists().await.unwrap());
    c.delete(&Conditions::none()).await.unwrap();
    assert!(!c.exists().await.unwrap());
}

/// The seed's walkthrough: write, a third party overwrites, the stale If-Match write is
/// refused with 412 and the third party's content survives.
#[tokio::test]
async fn seed_optimistic_scenario() {
    let c = blob_support::container("seed").await;
    let blob = c.blob("hello.txt").unwrap();
    let original = blob
        .upload("Hello World", &Conditions::none())
        .await
        .unwrap();

    let third = blob
        .upload("Blob updated by a third party.", &Conditions::none())
        .await
        .unwrap();
    assert_ne!(third.etag, original.etag, "a write must produce a new ETag");

    let err = blob
        .upload("my update", &Conditions::if_match(&original.etag))
        .await
        .unwrap_err();
    assert!(err.is_precondition_failed(), "{err}");
    assert_eq!(err.status(), Some(412));
    assert_eq!(err.error_code(), Some(&azstore::ErrorCode::ConditionNotMet));

    let now = blob.download().await.unwrap();
    assert_eq!(&now.body[..], b"Blob updated by a third party.");
    assert_eq!(now.properties.etag, third.etag);

    // Re-reading and retrying with the current ETag succeeds.
    let mine = blob
        .upload("my update", &Conditions::if_match(&now.properties.etag))
        .await
        .unwrap();
    assert_ne!(mine.etag, third.etag);
    c.delete(&Conditions::none()).await.unwrap();
}
