//! What the server keeps: shares, directories, files and their leases, all in memory.

use super::*;

#[derive(Default)]
pub(super) struct State {
    pub(super) shares: BTreeMap<String, Share>,
    pub(super) locks: HashMap<String, SmbLock>,
    pub(super) counter: u64,
    /// Shares deleted recently: until then, creating them again is 409 `ShareBeingDeleted`.
    pub(super) deleting: HashMap<String, Instant>,
    /// How long a deleted share stays "being deleted" (zero by default).
    pub(super) delete_delay: Duration,
    /// Share snapshots' properties by (share, snapshot id); their content is not kept.
    pub(super) snapshots: BTreeMap<(String, String), SnapshotProps>,
}

pub(super) struct SnapshotProps {
    pub(super) meta: BTreeMap<String, String>,
    pub(super) etag: String,
    pub(super) last_modified: String,
    pub(super) quota: u64,
    /// A share snapshot has a lease of its own (Lease Share with `sharesnapshot=`).
    pub(super) lease: Lease,
}

impl State {
    /// The share a directory or file operation acts on, with the ETag and time a write in it
    /// stamps (a new ETag is drawn even when the share is missing); 404 `ShareNotFound`.
    pub(super) fn write_in(&mut self, share: &str) -> Result<(&mut Share, String, String), Reply> {
        let now = http_now();
        let etag = self.next_etag();
        match self.shares.get_mut(share) {
            Some(s) => Ok((s, etag, now)),
            None => Err(not_found_share()),
        }
    }

    pub(super) fn next_etag(&mut self) -> String {
        self.counter += 1;
        format!("\"0x8DD{:011X}\"", self.counter)
    }
}

pub(super) struct Share {
    pub(super) meta: BTreeMap<String, String>,
    pub(super) etag: String,
    pub(super) last_modified: String,
    pub(super) quota: u64,
    pub(super) lease: Lease,
    pub(super) dirs: BTreeMap<String, Node>,
    pub(super) files: BTreeMap<String, FileNode>,
    /// Access tier, protocols, root squash and the share's permission store.
    pub(super) ext: smb::ShareExt,
}

pub(super) struct Node {
    pub(super) meta: BTreeMap<String, String>,
    pub(super) etag: String,
    pub(super) last_modified: String,
    pub(super) smb: smb::Smb,
}

/// Stamps a write: the new ETag and Last-Modified of a share or node, and the reply with
/// `status` that carries them.
fn stamp(version: (&mut String, &mut String), status: u16, etag: String, now: String) -> Reply {
    *version.0 = etag.clone();
    *version.1 = now.clone();
    Reply::new(status).h("etag", etag).h("last-modified", now)
}

impl Node {
    /// Stamps a write on this directory or file (see [`stamp`]).
    pub(super) fn written(&mut self, status: u16, etag: String, now: String) -> Reply {
        stamp((&mut self.etag, &mut self.last_modified), status, etag, now)
    }
}

impl Share {
    /// Stamps a write on the share itself (see [`stamp`]).
    pub(super) fn written(&mut self, status: u16, etag: String, now: String) -> Reply {
        stamp((&mut self.etag, &mut self.last_modified), status, etag, now)
    }
}

/// What a directory or file operation acts on: its share, with the ETag and time a write in
/// it stamps, the path below the share, and the request. An operation answers
/// `Result<Reply, Reply>`, the refusal as `Err`, so its checks read as `?`.
pub(super) struct Op<'a> {
    pub(super) share: &'a mut Share,
    pub(super) share_name: &'a str,
    pub(super) path: &'a str,
    pub(super) req: &'a HttpRequest,
    pub(super) etag: String,
    pub(super) now: String,
}

impl<'a> Op<'a> {
    /// Runs `op` in share `share_name` of `st` (404 `ShareNotFound` without it).
    pub(super) fn run(
        st: &'a mut State,
        share_name: &'a str,
        path: &'a str,
        req: &'a HttpRequest,
        op: impl FnOnce(Op<'a>) -> Result<Reply, Reply>,
    ) -> Reply {
        st.write_in(share_name)
            .and_then(|(share, etag, now)| {
                op(Op {
                    share,
                    share_name,
                    path,
                    req,
                    etag,
                    now,
                })
            })
            .unwrap_or_else(|refused| refused)
    }
}

pub(super) struct FileNode {
    pub(super) node: Node,
    pub(super) data: Vec<u8>,
    /// Written (non-cleared) ranges, sorted, non-overlapping, end exclusive.
    pub(super) ranges: Vec<(u64, u64)>,
    pub(super) content_type: String,
    /// The other stored HTTP headers, keyed by the response header name
    /// (`content-encoding`, `content-language`, `cache-control`, `content-disposition`,
    /// `content-md5`).
    pub(super) http: BTreeMap<String, String>,
    pub(super) lease: Lease,
    /// The last Copy File into this file.
    pub(super) copy: Option<copy::CopyInfo>,
}

/// Request header -> stored response header, for the HTTP properties of a file.
pub(super) const FILE_HTTP_HEADERS: [(&str, &str); 5] = [
    ("x-ms-content-encoding", "content-encoding"),
    ("x-ms-content-language", "content-language"),
    ("x-ms-cache-control", "cache-control"),
    ("x-ms-content-disposition", "content-disposition"),
    ("x-ms-content-md5", "content-md5"),
];

pub(super) fn file_http_headers(req: &HttpRequest) -> BTreeMap<String, String> {
    FILE_HTTP_HEADERS
        .iter()
        .filter_map(|(from, to)| req.header(from).map(|v| (to.to_string(), v.to_string())))
        .collect()
}

#[derive(Clone, Debug)]
pub(super) enum Lease {
    Available,
    Leased {
        id: String,
        /// The fixed duration; `None`: infinite.
        span: Option<Duration>,
        expires: Option<Instant>,
    },
    Breaking {
        id: String,
        until: Instant,
    },
    Broken,
    Expired,
}

impl Lease {
    /// Advances time-based transitions.
    pub(super) fn tick(&mut self) {
        let now = Instant::now();
        match self {
            Lease::Leased {
                expires: Some(t), ..
            } if *t <= now => *self = Lease::Expired,
            Lease::Breaking { until, .. } if *until <= now => *self = Lease::Broken,
            _ => {}
        }
    }

    pub(super) fn active_id(&self) -> Option<&str> {
        match self {
            Lease::Leased { id, .. } | Lease::Breaking { id, .. } => Some(id),
            _ => None,
        }
    }

    pub(super) fn state(&self) -> &'static str {
        match self {
            Lease::Available => "available",
            Lease::Leased { .. } => "leased",
            Lease::Breaking { .. } => "breaking",
            Lease::Broken => "broken",
            Lease::Expired => "expired",
        }
    }

    pub(super) fn headers(&self, out: &mut Vec<(String, String)>) {
        let status = if self.active_id().is_some() {
            "locked"
        } else {
            "unlocked"
        };
        out.push(("x-ms-lease-state".into(), self.state().into()));
        out.push(("x-ms-lease-status".into(), status.into()));
        if let Lease::Leased { expires, .. } = self {
            let d = if expires.is_some() {
                "fixed"
            } else {
                "infinite"
            };
            out.push(("x-ms-lease-duration".into(), d.into()));
        }
    }

    /// The lease check for a write (or delete) on a leased resource.
    pub(super) fn check_write(&self, sent: Option<&str>, what: &str) -> Result<(), Reply> {
        match (self.active_id(), sent) {
            (Some(_), None) => Err(Reply::error(
                412,
                "LeaseIdMissing",
                &format!(
                    "There is currently a lease on the {what} and no lease ID was specified in the request."
                ),
            )),
            (Some(id), Some(s)) if !id.eq_ignore_ascii_case(s) => Err(Reply::error(
                412,
                if what == "file" {
                    "LeaseIdMismatchWithFileOperation"
                } else {
                    "LeaseIdMismatchWithShareOperation"
                },
                &format!("The lease ID specified did not match the lease ID for the {what}."),
            )),
            (None, Some(_)) => Err(Reply::error(
                412,
                if what == "file" {
                    "LeaseNotPresentWithFileOperation"
                } else {
                    "LeaseNotPresentWithShareOperation"
                },
                &format!("There is currently no lease on the {what}."),
            )),
            _ => Ok(()),
        }
    }
}
